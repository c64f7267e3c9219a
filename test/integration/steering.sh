#!/usr/bin/env bash
# Flow steering with two workers.
#
#   a) active opens, software backend (the test port, AF_XDP or af_packet
#      with 2 queues, has neither a RETA nor rte_flow): dpsock-loadgen -m rr
#      -c 16 against a Linux echo server in namespace B. Every worker
#      connects its share (8), err_steer=0, errors=0, transactions on
#      both workers; dpsock-stat shows segments
#      handed between workers (steer_out > 0: the software backend ran) and
#      tcp_connected on both workers.
#   b) passive opens: 16 Linux connections to dpsock-echo --raw; both
#      workers accept some (tcp_accepted), every echo is right.
#   c) rte_flow backend on net_tap (2 queues, the kernel side of the tap is
#      the peer): dpsock-loadgen with tcp.steering = "rte_flow" against a
#      Linux echo server: every connection works, errors=0; the log says
#      which backend ran and whether rules were installed (printed).
#   The toeplitz backend needs a PMD that exposes its RSS key and RETA; none
#   that runs here does (AF_XDP, af_packet, tap, memif): it is covered by unit tests.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools dpsock-echo dpsock-loadgen dpsock-stat
ECHO=$(dpsock_tool dpsock-echo)
LOADGEN=$(dpsock_tool dpsock-loadgen)
TCPPEER=$DPSOCK_SRC/test/tools/tcppeer.py
[ -r "$TCPPEER" ] || fail "missing $TCPPEER"
NC=16

name=$TEST_NAME
test_topo_up 70
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')

# watch_stats PID: until PID exits, keep the last dpsock-stat output in
# LAST_STATS (the segment goes away with the app).
watch_stats() {
	local s
	LAST_STATS=
	while kill -0 "$1" 2>/dev/null; do
		s=$("$DPSOCK_STAT" -n "$name" 2>/dev/null) && LAST_STATS=$s
		sleep 0.1
	done
}
# from_last KEY: a counter from LAST_STATS
from_last() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print "none" }' <<<"$LAST_STATS"; }
kv() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# check_loadgen LOG RC: per worker: connected == conns, err_steer 0,
# errors 0, transactions > 0.
check_loadgen() {
	local log=$1 rc=$2 line k
	grep '^loadgen:' "$log" || true
	[ "$rc" -eq 0 ] || { tail -n 20 "$log" >&2; fail "dpsock-loadgen exited with status $rc"; }
	for k in 0 1; do
		line=$(grep "^loadgen: worker $k " "$log") || fail "no line for worker $k"
		[ "$(kv connected "$line")" = "$(kv conns "$line")" ] ||
			fail "worker $k connected $(kv connected "$line") of its $(kv conns "$line")"
		[ "$(kv conns "$line")" -eq $((NC / 2)) ] || fail "worker $k share is $(kv conns "$line"), expected $((NC / 2))"
		[ "$(kv err_steer "$line")" -eq 0 ] || fail "worker $k: err_steer=$(kv err_steer "$line")"
		[ "$(kv errors "$line")" -eq 0 ] || fail "worker $k: errors=$(kv errors "$line")"
		[ "$(kv transactions "$line")" -gt 0 ] || fail "worker $k did no transaction"
	done
}

# ---- a) active opens, software steering ---------------------------------------
in_b python3 "$TCPPEER" echo-server -a "$TOPO_ADDR_B" -p 7001 --ready "$TEST_TMP/srv.ready" \
	>"$TEST_TMP/server.out" 2>&1 &
srv_pid=$!
on_exit "kill $srv_pid 2>/dev/null || true"
poll_until 10 test -e "$TEST_TMP/srv.ready" || fail "Linux echo server did not start"

app_start "$name" "$conf" "$LOADGEN" -- -d "$TOPO_ADDR_B" -p 7001 -c "$NC" -m rr -s 64 -t 3 --verify
lg_log=$APP_LOG
watch_stats "$APP_PID"
rc=0
app_stop || rc=$?
grep -q 'active-open steering: software' "$lg_log" ||
	fail "expected the software backend on $TEST_PMD: $(grep 'active-open steering' "$lg_log")"
check_loadgen "$lg_log" "$rc"
so=$(( $(from_last worker.0.steer_out) + $(from_last worker.1.steer_out) ))
si=$(( $(from_last worker.0.steer_in) + $(from_last worker.1.steer_in) ))
c0=$(from_last worker.0.tcp_connected) c1=$(from_last worker.1.tcp_connected)
[ "$so" -gt 0 ] || fail "steer_out=0: no segment was handed between workers"
[ "$c0" -gt 0 ] && [ "$c1" -gt 0 ] || fail "tcp_connected per worker: $c0 / $c1"
grep -q 'all [0-9]* mbufs back in the pool' "$lg_log" || fail "loadgen: no 'mbufs back' line"
ok "a) software steering: $NC active opens, 8 per worker, err_steer=0, errors=0; steer_out=$so steer_in=$si, tcp_connected $c0 / $c1 (last sample)"

# ---- b) passive opens -----------------------------------------------------------
app_start "$name" "$conf" "$ECHO" -- --raw --tcp-only -p 7
rc=0
out=$(in_b python3 "$TCPPEER" conc -d "$TOPO_ADDR_A" -p 7 -n "$NC" --batch "$NC" --size 200 --timeout 30 2>&1) || rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "passive: $out"
a0=$(stat_get "$name" worker.0.tcp_accepted)
a1=$(stat_get "$name" worker.1.tcp_accepted)
[ $((a0 + a1)) -eq "$NC" ] || fail "tcp_accepted $a0 + $a1, expected $NC"
[ "$a0" -gt 0 ] && [ "$a1" -gt 0 ] || fail "passive opens not spread over both workers: $a0 / $a1"
rc=0
app_stop || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-echo exited with status $rc (3 = mbuf leak, 134 = abort)"
ok "b) $NC passive opens, every echo right; tcp_accepted $a0 / $a1"

# ---- c) rte_flow on net_tap ------------------------------------------------------
if [ ! -c /dev/net/tun ]; then
	note "c) skipped: no /dev/net/tun, net_tap cannot run here"
else
	ns=dps-${name}-t
	tap=dpt$$
	tap=${tap:0:15}
	ip netns add "$ns" || fail "cannot create namespace $ns"
	on_exit ip netns del "$ns"
	ip -n "$ns" link set lo up
	tconf=$TEST_TMP/tap.conf
	printf 'name = "%s";\nworkers = [ 0, 1 ];\ntcp = { steering = "rte_flow"; };\ninterfaces = ( { port = "net_tap0"; address = "198.18.74.1/24"; } );\n' \
		"$name" >"$tconf"
	# The kernel side of the tap, which owns the server's address, exists
	# only once the PMD created it, but loadgen connects at once (a refused
	# SYN is an error, not retried): the server listens first, on an
	# address not yet local (ip_nonlocal_bind), and the address goes on the
	# tap as soon as it appears. app_start runs in TOPO_NS_A: the tap's
	# namespace.
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_nonlocal_bind=1
	ip netns exec "$ns" python3 "$TCPPEER" echo-server -a 198.18.74.2 -p 7001 \
		--ready "$TEST_TMP/tsrv.ready" >"$TEST_TMP/tserver.out" 2>&1 &
	tsrv_pid=$!
	on_exit "kill $tsrv_pid 2>/dev/null || true"
	wait_until 10 test -e "$TEST_TMP/tsrv.ready"
	# shellcheck disable=SC2034 # read by app_start
	TOPO_NS_A=$ns
	# shellcheck disable=SC2046
	app_start "$name" "$tconf" "$LOADGEN" -l 0-1 --no-pci "--vdev=net_tap0,iface=$tap" $(eal_mem_args) \
		-- -d 198.18.74.2 -p 7001 -c "$NC" -m rr -s 64 -t 5 --verify
	tlog=$APP_LOG
	wait_until 10 ip -n "$ns" link show "$tap"
	ip -n "$ns" addr add 198.18.74.2/24 dev "$tap"
	ip -n "$ns" link set "$tap" up
	watch_stats "$APP_PID"
	rc=0
	app_stop || rc=$?
	# The backend chosen at start; then, if rule creation keeps failing
	# (net_tap validates rules but this kernel lacks the flower
	# classifier), one line saying it fell back to software steering.
	backend=$(grep -o 'active-open steering: [a-z_]*' "$tlog" | head -n 1 | sed 's/.*: //')
	fellback=$(grep -c 'rte_flow rules cannot be installed' "$tlog" || true)
	grep -o 'port net_tap0 (id 0).*rte_flow 5-tuple [a-z]*' "$tlog" || true
	grep -m 1 'rte_flow rules cannot be installed' "$tlog" || true
	note "c) backend at start: ${backend:-none logged}; fell back to software: $fellback"
	check_loadgen "$tlog" "$rc"
	case "$backend/$fellback" in
	rte_flow/0) ok "c) rte_flow backend on net_tap, rules installed: $NC connections, 8 per worker, errors=0, err_steer=0" ;;
	rte_flow/1) ok "c) rte_flow backend on net_tap could not install rules and fell back to software steering once (logged above): $NC connections, errors=0, err_steer=0" ;;
	*) fail "c) unexpected steering log: backend '$backend', fallbacks $fellback" ;;
	esac
	so=$(( $(from_last worker.0.steer_out) + $(from_last worker.1.steer_out) ))
	note "c) steer_out=$so (last sample): segments the rules did not steer"
fi
note "toeplitz backend: not run here (no PMD available exposes an RSS key and RETA); unit-tested separately"
pass "software steering (active and passive); backend '${backend:-not run}' on net_tap"
