#!/usr/bin/env bash
# iperf3 (Debian's, unmodified) under libdpsock_preload.so, both roles, both
# directions, TCP, -t 2 each (bounded).
#
#   - server under the shim on dpsockd's address, client in the Linux
#     peer's namespace: forward (peer sends) and -R (the server under the
#     shim sends): iperf3 -J reports no error and bytes > 0 received; the
#     bytes went through dpsockd (tcp_rx_bytes, resp. tcp_tx_bytes, rose by
#     at least what iperf3 counted as received);
#   - client under the shim (namespace A: its kernel has no address), server
#     on the kernel in namespace B: forward and -R, the same checks;
#   - the server under the shim stops on SIGTERM; dpsockd stops cleanly.
# Rates are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip iperf3 python3
require_preload
name=$TEST_NAME
test_topo_up 104
preload_daemon_start "$name"

# ip3_check LABEL FILE: parse iperf3 -J output; no "error", bytes received
# > 0; prints "SENT RECEIVED BITS_PER_SECOND".
ip3_check() {
	python3 - "$2" <<'EOF' || fail "iperf3 $1: $(tail -n 5 "$2" | tr '\n' ' ')"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("not JSON (%s)" % e)
if j.get("error"):
    sys.exit("error: " + j["error"])
e = j["end"]
sent, rcvd = e["sum_sent"]["bytes"], e["sum_received"]["bytes"]
if rcvd <= 0:
    sys.exit("received 0 bytes")
print(sent, rcvd, int(e["sum_received"]["bits_per_second"]))
EOF
}

# ip3 LABEL WHERE(b|preload) IPERF3_CLIENT_ARGS...: run a client, check it;
# IP3_SENT, IP3_RCVD (bytes).
ip3() {
	local label=$1 where=$2 out=$TEST_TMP/iperf3-$1.json rc=0 r
	shift 2
	if [ "$where" = preload ]; then
		preload_run timeout 30 iperf3 -J -t 2 "$@" >"$out" 2>&1 || rc=$?
	else
		timeout 30 ip netns exec "$TOPO_NS_B" iperf3 -J -t 2 "$@" >"$out" 2>&1 || rc=$?
	fi
	r=$(ip3_check "$label" "$out")
	[ "$rc" -eq 0 ] || fail "iperf3 $label: status $rc"
	read -r IP3_SENT IP3_RCVD bps <<<"$r"
	note "$label: sent $IP3_SENT B, received $IP3_RCVD B, $((bps / 1000000)) Mbit/s"
}

# ---- server under the shim ----------------------------------------------------
preload_start srv iperf3 -s --forceflush -B "$TOPO_ADDR_A" -p 5201
wait_until 20 grep -q 'Server listening' "$TEST_TMP/srv.log"

before=$(preload_stat tcp_rx_bytes)
ip3 srv-fwd b -c "$TOPO_ADDR_A" -p 5201
preload_offload_ge "$name" tcp_rx_bytes $((before + IP3_RCVD)) 10
ok "server under the shim, peer sends: $IP3_RCVD bytes; tcp_rx_bytes +$((STAT_VALUE - before))"

# iperf3's server closes its listening socket after a test and opens a new
# one, saying "Server listening" again: a client that comes in between is
# refused. Wait for the second listener.
# listening LOG N: the server has said it listens N times.
listening() { [ "$(grep -c 'Server listening' "$TEST_TMP/$1.log")" -ge "$2" ]; }
wait_until 20 listening srv 2
before=$(preload_stat tcp_tx_bytes)
ip3 srv-rev b -c "$TOPO_ADDR_A" -p 5201 -R
preload_offload_ge "$name" tcp_tx_bytes $((before + IP3_RCVD)) 10
ok "server under the shim sends (-R): $IP3_RCVD bytes; tcp_tx_bytes +$((STAT_VALUE - before))"

rc=0
preload_stop srv TERM || rc=$?
# iperf3 ends with status 1 on SIGTERM ("interrupt - the server has terminated")
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "iperf3 server: status $rc: $(tail -n 3 "$TEST_TMP/srv.log" | tr '\n' ' ')"
if grep -q 'iperf3: error' "$TEST_TMP/srv.log"; then
	fail "iperf3 server: $(grep -m1 'iperf3: error' "$TEST_TMP/srv.log")"
fi

# ---- client under the shim, kernel server in B ----------------------------------
peer_start ksrv iperf3 -s --forceflush -B "$TOPO_ADDR_B" -p 5202
wait_until 20 grep -q 'Server listening' "$TEST_TMP/ksrv.log"

before=$(preload_stat tcp_tx_bytes)
ip3 cli-fwd preload -c "$TOPO_ADDR_B" -p 5202
preload_offload_ge "$name" tcp_tx_bytes $((before + IP3_RCVD)) 10
ok "client under the shim sends: $IP3_RCVD bytes; tcp_tx_bytes +$((STAT_VALUE - before))"

wait_until 20 listening ksrv 2
before=$(preload_stat tcp_rx_bytes)
ip3 cli-rev preload -c "$TOPO_ADDR_B" -p 5202 -R
preload_offload_ge "$name" tcp_rx_bytes $((before + IP3_RCVD)) 10
ok "client under the shim receives (-R): $IP3_RCVD bytes; tcp_rx_bytes +$((STAT_VALUE - before))"
preload_show_clients

preload_daemon_stop
pass "iperf3 under the shim: server and client, both directions, bytes > 0, no error"
