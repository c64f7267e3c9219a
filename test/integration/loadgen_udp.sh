#!/usr/bin/env bash
# dpsock-loadgen -m udp (request/reply in datagrams, one out per socket)
# against real echo servers.
#
#   a) native to native over net_memif: dpsock-loadgen (memif client, one
#      worker) against dpsock-echo (memif server, one worker), first --raw
#      with --proto echo, then in its sockperf mode with --proto sockperf,
#      both --verify. Each run: exit 0, transactions > 0, errors = 0, every
#      socket answered (connected = -c); the server's datagram count
#      (udp_dgrams) lies between the transactions and the requests sent, and
#      the requests sent are the transactions plus the lost ones plus at most
#      one per socket still out at the end.
#   b) the test port (lib.sh: AF_XDP, or af_packet) on the veth, two workers,
#      16 sockets, against test/perf/kernel_echo (a Linux UDP echo) in
#      namespace B: the same checks, per worker too, with err_steer = 0, at
#      most 5 % lost, and steer_out > 0: replies the port put on the other
#      worker's queue were handed to the worker that owns the socket's port
#      (DPSOCK_UDP_OWNED) instead of being dropped there. Were they dropped,
#      the sockets whose replies land on the wrong queue would never be
#      answered (connected < conns; their requests lost, 5 a second each).
#   c) sockperf's own server (UDP) in namespace B, when sockperf is
#      installed: --proto sockperf --verify, two workers, the same checks
#      (its counters are not read).
# Runs are 2-3 s each; latencies are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip ss
require_tools dpsock-echo dpsock-loadgen dpsock-stat kernel_echo
grep -q 'librte_net_memif\.so' <<<"$(ldconfig -p 2>/dev/null)" ||
	skip "DPDK's net_memif PMD is not installed (apt-get install librte-net-memif23)"
ECHO=$(dpsock_tool dpsock-echo)
LOADGEN=$(dpsock_tool dpsock-loadgen)
KECHO=$(dpsock_tool kernel_echo)
SIZE=64

name=$TEST_NAME
test_topo_up 77

kv() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# check_line WHAT LINE CONNS: a loadgen line (a worker's or the total) for
# CONNS sockets: every socket answered, transactions, no error, the
# requests sent accounted for. Sets SENT (requests sent).
check_line() {
	local what=$1 line=$2 conns=$3 tr lost
	[ -n "$line" ] || fail "$what: no loadgen line"
	tr=$(kv transactions "$line") lost=$(kv lost "$line")
	[ -n "$lost" ] || fail "$what: no lost= key: $line"
	[ "$(kv conns "$line")" -eq "$conns" ] || fail "$what: conns=$(kv conns "$line"), expected $conns"
	[ "$(kv errors "$line")" -eq 0 ] || fail "$what: errors=$(kv errors "$line"): $line"
	[ "$(kv err_steer "$line")" -eq 0 ] || fail "$what: err_steer=$(kv err_steer "$line")"
	[ "$tr" -gt 0 ] || fail "$what: no transaction: $line"
	[ "$(kv connected "$line")" -eq "$conns" ] ||
		fail "$what: $(kv connected "$line") of $conns sockets got a reply (lost=$lost)"
	SENT=$(($(kv bytes_tx "$line") / SIZE))
	if [ "$SENT" -lt $((tr + lost)) ] || [ "$SENT" -gt $((tr + lost + conns)) ]; then
		fail "$what: $SENT requests sent, but $tr answered + $lost lost (+ at most $conns out)"
	fi
	[ $((lost * 20)) -le "$tr" ] || fail "$what: $lost requests lost for $tr answered (over 5 %)"
}

# check_run WHAT LOG RC CONNS [SERVER_DGRAMS]: the loadgen run's status and
# total line; the server's datagram count, when given, between the
# transactions and the requests sent.
check_run() {
	local what=$1 log=$2 rc=$3 conns=$4 dgrams=${5:-} tot
	grep '^loadgen:' "$log" || true
	[ "$rc" -eq 0 ] || { tail -n 20 "$log" >&2; fail "$what: dpsock-loadgen exited with status $rc"; }
	grep -q 'all [0-9]* mbufs back in the pool' "$log" || fail "$what: loadgen: no 'mbufs back' line"
	tot=$(grep '^loadgen: total mode=udp ' "$log") || fail "$what: no 'loadgen: total mode=udp' line"
	check_line "$what" "$tot" "$conns"
	if [ -n "$dgrams" ]; then
		if [ "$dgrams" -lt "$(kv transactions "$tot")" ] || [ "$dgrams" -gt "$SENT" ]; then
			fail "$what: the server counted $dgrams datagrams; loadgen sent $SENT, $(kv transactions "$tot") answered"
		fi
	fi
	TOTAL=$tot
}

# wait_exit PID: wait for a program that stops by itself (loadgen, -t).
wait_exit() {
	poll_until 30 _lib_dead "$1" || fail "dpsock-loadgen still running 30 s after its start"
}

# ---- a) native to native over memif ---------------------------------------------
sock=$TEST_TMP/memif.sock
srv=$(unique_name s) cli=$(unique_name c)
printf 'name = "%s";\ninterfaces = ( { port = "net_memif0"; address = "198.18.78.1/24"; } );\n' \
	"$srv" >"$TEST_TMP/srv.conf"
printf 'name = "%s";\ninterfaces = ( { port = "net_memif0"; address = "198.18.78.2/24"; } );\n' \
	"$cli" >"$TEST_TMP/cli.conf"

# memif_run LABEL ECHO_ARGS -- LOADGEN_ARGS: dpsock-echo (memif server, lcore
# 1) and dpsock-loadgen (memif client, lcore 0) against it, 4 sockets, 2 s;
# the echo stopped after; checked as in a).
memif_run() {
	local label=$1 rc=0 echo_log lg_log lg_pid etot dgrams
	local -a eargs=()
	shift
	while [ "$1" != -- ]; do
		eargs+=("$1")
		shift
	done
	shift
	rm -f "$sock"
	app_start "$srv" "$TEST_TMP/srv.conf" "$ECHO" -l 1 \
		"--vdev=net_memif0,role=server,socket=$sock,socket-abstract=no" -- --udp-only "${eargs[@]}"
	echo_log=$APP_LOG
	app_start "$cli" "$TEST_TMP/cli.conf" "$LOADGEN" -l 0 \
		"--vdev=net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
		-d 198.18.78.1 -p 11111 -m udp -c 4 -s "$SIZE" -t 2 --verify "$@"
	lg_log=$APP_LOG lg_pid=$APP_PID
	wait_exit "$lg_pid"
	app_stop "$cli" || rc=$?
	local erc=0
	app_stop "$srv" || erc=$?
	[ "$erc" -eq 0 ] || fail "a) $label: dpsock-echo exited with status $erc (3 = mbuf leak)"
	etot=$(grep '^echo: total ' "$echo_log") || fail "a) $label: no 'echo: total' line"
	echo "$etot"
	dgrams=$(kv udp_dgrams "$etot")
	check_run "a) $label" "$lg_log" "$rc" 4 "$dgrams"
	ok "a) memif, $label: $(kv transactions "$TOTAL") transactions at $(kv rate "$TOTAL")/s, p50 $(kv p50_us "$TOTAL") us, p99 $(kv p99_us "$TOTAL") us; lost=$(kv lost "$TOTAL") stale=$(kv stale "$TOTAL"); the server counted $dgrams datagrams of $SENT sent"
}

memif_run "echo --raw, --proto echo" --raw --
# without --raw dpsock-echo answers sockperf's pong requests only: the
# sockperf framing must be right for any reply to come back
memif_run "echo (sockperf mode), --proto sockperf" -- --proto sockperf

# ---- b) the test port, two workers, a Linux echo server --------------------------
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
kport=7001
peer_start kecho "$KECHO" -a "$TOPO_ADDR_B" -p "$kport" --udp-only
kecho_pid=$PEER_PID
wait_until 10 grep -q 'kernel_echo: ready' "$TEST_TMP/kecho.log"

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
stat_of() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' <<<"$LAST_STATS"; }

NC=16
app_start "$name" "$conf" "$LOADGEN" -- -d "$TOPO_ADDR_B" -p "$kport" -m udp -c "$NC" -s "$SIZE" \
	-t 3 --verify
lg_log=$APP_LOG
watch_stats "$APP_PID"
rc=0
app_stop || rc=$?
kill -TERM "$kecho_pid"
poll_until 10 _lib_dead "$kecho_pid" || fail "kernel_echo did not stop on SIGTERM"
ktot=$(grep '^echo: total ' "$TEST_TMP/kecho.log") || fail "b) no counters from kernel_echo"
echo "kernel_echo: $ktot"
check_run "b) veth, kernel_echo" "$lg_log" "$rc" "$NC" "$(kv udp_dgrams "$ktot")"
for k in 0 1; do
	line=$(grep "^loadgen: worker $k " "$lg_log") || fail "b) no line for worker $k"
	check_line "b) worker $k" "$line" $((NC / 2))
done
so=$(($(stat_of worker.0.steer_out) + $(stat_of worker.1.steer_out)))
si=$(($(stat_of worker.0.steer_in) + $(stat_of worker.1.steer_in)))
[ -n "$LAST_STATS" ] || fail "b) no dpsock-stat sample of the loadgen"
[ "$so" -gt 0 ] || fail "b) steer_out=0: no reply reached the other worker's queue, or none was handed over"
ok "b) $TEST_PMD, 2 workers, $NC sockets against kernel_echo: $(kv transactions "$TOTAL") transactions at $(kv rate "$TOTAL")/s, p50 $(kv p50_us "$TOTAL") us; lost=$(kv lost "$TOTAL"); steer_out=$so steer_in=$si (last sample)"

# ---- c) sockperf's server ----------------------------------------------------------
if ! command -v sockperf >/dev/null 2>&1; then
	note "c) skipped: sockperf is not installed"
	pass "dpsock-loadgen -m udp: memif native to native (echo, sockperf framing) and $TEST_PMD against kernel_echo"
fi
sport=11111
peer_start sperf sockperf server -i "$TOPO_ADDR_B" -p "$sport"
sperf_pid=$PEER_PID
wait_until 10 bash -c "ip netns exec $TOPO_NS_B ss -Hlun 'sport = :$sport' | grep -q ."
app_start "$name" "$conf" "$LOADGEN" -- -d "$TOPO_ADDR_B" -p "$sport" -m udp -c 4 -s "$SIZE" \
	-t 2 --verify --proto sockperf
lg_log=$APP_LOG
wait_exit "$APP_PID"
rc=0
app_stop || rc=$?
kill -TERM "$sperf_pid" 2>/dev/null || true
check_run "c) sockperf server" "$lg_log" "$rc" 4
ok "c) $TEST_PMD against sockperf server (UDP): $(kv transactions "$TOTAL") transactions at $(kv rate "$TOTAL")/s, p50 $(kv p50_us "$TOTAL") us; lost=$(kv lost "$TOTAL")"
pass "dpsock-loadgen -m udp: memif native to native (echo, sockperf framing), $TEST_PMD against kernel_echo and sockperf's server"
