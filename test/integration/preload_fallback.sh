#!/usr/bin/env bash
# When the shim must leave a socket to the kernel, the program still works,
# on kernel sockets, and the shim says why in one log line.
#
# Namespace A's kernel gets a second address, TOPO_ADDR_A's neighbour .3
# (dpsockd serves only .1), so that kernel sockets in A can reach the Linux
# peer in B (python3's http.server on B:8000 serving a file of known sha256).
#   1. DPSOCK_OFFLOAD=0, dpsockd running: curl under the shim fetches the
#      file (sha256 right) and dpsockd's tcp_connected does not move;
#   2. an address dpsockd does not serve, dpsockd running: a preloaded
#      python3 server listening on .3 answers the peer, and dpsockd's
#      tcp_accepted does not move;
#   3. the control case, dpsockd running: the same curl without
#      DPSOCK_OFFLOAD=0 is offloaded (tcp_connected +1) — so 1 and 2 were
#      real decisions, not a shim that never offloads;
#   4. no daemon (dpsockd stopped, its socket gone): curl under the shim
#      fetches the file on the kernel;
# and in 1, 2 and 4 the shim logged at least one line, and no more than a
# handful, that names the reason (offload off / address not served / no
# daemon): one line per decision, not one per call. (The not-served line is
# at level info, so that run sets DPSOCK_LOG_LEVEL=info.)
set -euo pipefail
# A's kernel shares the veth with dpsockd (bifurcated): af_packet, which
# hands dpsockd a copy of each frame and leaves the kernel its own. AF_XDP
# cannot run this test: its XDP program redirects every frame of the queues
# dpsockd reads to dpsockd, so A's kernel sockets would hear nothing
# (docs/running.md, AF_XDP).
DPSOCK_TEST_PMD=af_packet
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip curl python3 sha256sum
require_preload
[ "$PRELOAD_KERNEL" != 1 ] || skip "nothing to self-check: this test is about the shim's decisions"
name=$TEST_NAME
test_topo_up 108
preload_daemon_start "$name"
addr3=198.18.$TOPO_IDX.3
ip -n "$TOPO_NS_A" addr add "$addr3/$TOPO_PLEN" dev "$TOPO_IF_A"

www=$TEST_TMP/www
mkdir -p "$www"
head -c 300000 /dev/urandom >"$www/f.bin"
want=$(sha256sum <"$www/f.bin" | cut -d' ' -f1)
peer_start httpd python3 -m http.server 8000 --bind "$TOPO_ADDR_B" --directory "$www"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" 8000 20
url=http://$TOPO_ADDR_B:8000/f.bin

# fetch LABEL [VAR=VALUE...]: curl under the shim (with the extra
# environment), sha256 checked; its shim log lines in $TEST_TMP/LABEL.shim.
fetch() {
	local label=$1 out
	shift
	rm -f "$TEST_TMP"/shim-*.log
	PRELOAD_ENV=("$@")
	out=$(preload_run curl -sS --max-time 15 -o "$TEST_TMP/got-$label" -w '%{http_code}' "$url" 2>"$TEST_TMP/$label.err") ||
		fail "$label: curl failed: $out $(cat "$TEST_TMP/$label.err")"
	PRELOAD_ENV=()
	[ "$out" = 200 ] || fail "$label: HTTP $out"
	[ "$(sha256sum <"$TEST_TMP/got-$label" | cut -d' ' -f1)" = "$want" ] || fail "$label: sha256 differs"
	cat "$TEST_TMP"/shim-*.log "$TEST_TMP/$label.err" 2>/dev/null >"$TEST_TMP/$label.shim" || true
}

# said_why LABEL REGEX: the shim's log for LABEL has 1-3 lines matching
# REGEX (case-insensitive).
said_why() {
	local n
	n=$(grep -ciE "$2" "$TEST_TMP/$1.shim" || true)
	[ "$n" -ge 1 ] || fail "$1: the shim logged no line matching /$2/; its log: $(tr '\n' '|' <"$TEST_TMP/$1.shim")"
	[ "$n" -le 3 ] || fail "$1: the shim logged the reason $n times (one line per decision expected)"
	note "$1: shim said: $(grep -m1 -iE "$2" "$TEST_TMP/$1.shim")"
}

# 1. DPSOCK_OFFLOAD=0
con0=$(preload_stat tcp_connected)
fetch offload-off DPSOCK_OFFLOAD=0
sleep 0.2
[ "$(preload_stat tcp_connected)" -eq "$con0" ] || fail "DPSOCK_OFFLOAD=0, yet dpsockd made a connection"
said_why offload-off 'offload|DPSOCK_OFFLOAD|disabled|kernel'
ok "DPSOCK_OFFLOAD=0: curl worked on the kernel, dpsockd untouched"

# 2. an address dpsockd does not serve
acc0=$(preload_stat tcp_accepted)
rm -f "$TEST_TMP"/shim-*.log
cat >"$TEST_TMP/srv.py" <<'PY'
import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(4)
print("listening", flush=True)
c, _ = l.accept()
c.sendall(c.recv(100)[::-1])
c.close()
PY
# The shim logs this decision at level info (default: notice).
PRELOAD_ENV=(DPSOCK_LOG_LEVEL=info)
preload_start srv python3 "$TEST_TMP/srv.py" "$addr3" 9300
PRELOAD_ENV=()
wait_until 20 grep -q listening "$TEST_TMP/srv.log"
got=$(in_b timeout 10 python3 -c '
import socket, sys
c = socket.create_connection((sys.argv[1], 9300), timeout=5)
c.sendall(b"abcdef")
print(c.recv(100).decode())' "$addr3") || fail "not-served address: the peer's connection failed"
[ "$got" = fedcba ] || fail "not-served address: the peer got '$got'"
preload_wait srv 10 || fail "the preloaded server on $addr3 failed: $(tail -n 3 "$TEST_TMP/srv.log" | tr '\n' ' ')"
[ "$(preload_stat tcp_accepted)" -eq "$acc0" ] || fail "a listener on $addr3 (not dpsockd's) was offloaded"
cat "$TEST_TMP"/shim-*.log "$TEST_TMP/srv.log" >"$TEST_TMP/not-served.shim" 2>/dev/null || true
said_why not-served "not served|not offload|kernel|route|$addr3"
ok "address not served by dpsockd ($addr3): the preloaded server worked on the kernel"

# 3. control: offloaded when allowed
con0=$(preload_stat tcp_connected)
fetch offloaded
preload_offload_ge "$name" tcp_connected $((con0 + 1)) 5
ok "control: the same curl without DPSOCK_OFFLOAD=0 went through dpsockd"

# 4. no daemon
rc=0
dpsockd_stop || rc=$?
[ "$rc" -eq 0 ] || fail "dpsockd exited with status $rc"
[ ! -e "$TEST_TMP/$name.sock" ] || fail "dpsockd left its control socket behind"
fetch no-daemon
said_why no-daemon 'daemon|dpsockd|not running|ENOENT|ECONNREFUSED|No such file|refused|kernel'
ok "no daemon: curl worked on the kernel"
pass "DPSOCK_OFFLOAD=0, an address not served, no daemon: kernel sockets, one log line why"
