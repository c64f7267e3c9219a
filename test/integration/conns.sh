#!/usr/bin/env bash
# Many connections, no leaks. dpsock-echo --raw (2 workers, the test port
# with 2 queues) against Linux clients in namespace B, then dpsock-loadgen
# churning against a Linux echo server.
#
#   a) 1000 concurrent connections from Linux: each echoes its own message
#      while all 1000 are open; dpsock-stat tcp_conns == 1000 at the peak;
#      each echoes a second message after the peak; all closed.
#   b) 10000 sequential connect/send/recv/close cycles; then tcp_conns
#      back to 0, port.0.mbufs_free back to its value before the test
#      (rte_mempool_avail_count counts the per-lcore caches: exact), and
#      lwip_mem_objs / lwip_mem_bytes of every worker back to the values
#      measured before any connection.
#   c) dpsock-loadgen -m churn: 3000 active opens (4 x 750) against a Linux
#      echo server: every one completes, errors=0, err_steer=0, no port claim
#      failed (TIME_WAIT keeps ports taken on dpsock's side), every mbuf back
#      at exit.
#   d) the same churn with a local port range of 128 ports and 400
#      connections: ports run out while TIME_WAIT (10 s) holds them, and the
#      stack frees its oldest TIME_WAIT connections of 1 s or more to reuse
#      their ports (tcp_tw_reused, in the last sample of the counters before
#      loadgen exits, at least 400 - 2 x 128: the sample may miss the last
#      round of 128); every
#      connection completes and is verified. A connect may find no port for
#      a moment (EADDRNOTAVAIL, err_connect: loadgen retries 1 ms later),
#      no other error.
#
# Knobs: CONNS_N (1000), CONNS_CYCLES (10000), CONNS_CHURN_PER_CONN (750).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools dpsock-echo dpsock-loadgen dpsock-stat
ECHO=$(dpsock_tool dpsock-echo)
LOADGEN=$(dpsock_tool dpsock-loadgen)
TCPPEER=$DPSOCK_SRC/test/tools/tcppeer.py
[ -r "$TCPPEER" ] || fail "missing $TCPPEER"
N=${CONNS_N:-1000}
CYCLES=${CONNS_CYCLES:-10000}
PER_CONN=${CONNS_CHURN_PER_CONN:-750}

name=$TEST_NAME
test_topo_up 72
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')

# stop_clean [NAME]: lib.sh's app_stop; status 0 and every mbuf back.
# shellcheck disable=SC2120
stop_clean() {
	local rc=0 log=$APP_LOG
	app_stop "$@" || rc=$?
	[ "$rc" -eq 0 ] || { tail -n 30 "$log" >&2; fail "$(basename "$log" .log) exited with status $rc (3 = mbuf leak, 134 = abort)"; }
	grep -q 'all [0-9]* mbufs back in the pool' "$log" || fail "no 'mbufs back' line in $log"
}
# worker values of COUNTER, "w0 w1"
per_worker() { echo "$(stat_get "$name" "worker.0.$1") $(stat_get "$name" "worker.1.$1")"; }

app_start "$name" "$conf" "$ECHO" -- --raw --tcp-only -p 7
echo_log=$APP_LOG
wait_until 10 grep -q 'ready: 2 worker' "$echo_log"
sleep 0.5 # stats settle (published every 100 ms)
mbufs0=$(stat_get "$name" port.0.mbufs_free)
mbufs_total=$(stat_get "$name" port.0.mbufs_total)
objs0=$(per_worker lwip_mem_objs)
bytes0=$(per_worker lwip_mem_bytes)
note "before: mbufs_free=$mbufs0 of $mbufs_total, lwip_mem_objs=($objs0) lwip_mem_bytes=($bytes0)"

# Failures that do not stop the test (the later parts still run); the
# test fails at the end when there is any.
FAILED=()
soft_fail() {
	echo "FAIL (continuing): $*" >&2
	FAILED+=("$*")
}

# drained: no connection left, every mbuf back in the pool
drained() {
	local c m
	c=$(stat_sum "$name" tcp_conns) || return 1
	m=$(stat_get "$name" port.0.mbufs_free) || return 1
	echo "tcp_conns=$c mbufs_free=$m (start $mbufs0)"
	[ "$c" = 0 ] && [ "$m" = "$mbufs0" ]
}
# lwip_mem_back OBJS BYTES ("w0 w1" each): lwIP memory back at those values
lwip_mem_back() {
	local o b
	o=$(per_worker lwip_mem_objs) || return 1
	b=$(per_worker lwip_mem_bytes) || return 1
	echo "lwip_mem_objs=($o) (before: $1) lwip_mem_bytes=($b) (before: $2)"
	[ "$o" = "$1" ] && [ "$b" = "$2" ]
}
# check_back WHAT OBJS BYTES CONNS: wait for drained (fail if not), then
# for lwIP memory back (soft failure, with the objects left per connection)
check_back() {
	local what=$1 objs=$2 bytes=$3 conns=$4 t0 d
	t0=$(_lib_now_ms)
	poll_until 25 drained || fail "$what: not drained: $POLL_OUTPUT"
	d=$POLL_OUTPUT
	# lwIP's counters are mirrored every 100 ms; TIME_WAIT lasts 10 s
	if poll_until 15 lwip_mem_back "$objs" "$bytes"; then
		ok "$what: drained $(( ($(_lib_now_ms) - t0) / 1000 )) s later: $d $POLL_OUTPUT"
	else
		local o left
		o=$(per_worker lwip_mem_objs)
		left=$(( ($(echo "$o" | tr ' ' '+')) - ($(echo "$objs" | tr ' ' '+')) ))
		soft_fail "$what: lwIP memory not back after $conns connections closed ($left objects left, $(awk -v l="$left" -v n="$conns" 'BEGIN { printf "%.2f", l / n }') per connection): $POLL_OUTPUT"
	fi
}

# ---- a) 1000 concurrent ------------------------------------------------------
peak=$TEST_TMP/peak go=$TEST_TMP/go
in_b python3 "$TCPPEER" conc -d "$TOPO_ADDR_A" -p 7 -n "$N" --batch 100 --size 64 \
	--peak "$peak" --go "$go" --timeout 120 >"$TEST_TMP/conc.out" 2>&1 &
conc_pid=$!
on_exit "kill $conc_pid 2>/dev/null || true"
poll_until 150 test -s "$peak" || { cat "$TEST_TMP/conc.out" >&2; fail "the $N connections did not all open"; }
# tcp_conns is published by the workers as it changes
poll_until 5 eval '[ "$(stat_sum "$name" tcp_conns)" -eq '"$N"' ]' || true
conns_peak=$(stat_sum "$name" tcp_conns)
w_conns=$(per_worker tcp_conns)
touch "$go"
rc=0
wait "$conc_pid" || rc=$?
cat "$TEST_TMP/conc.out"
[ "$rc" -eq 0 ] || fail "concurrent connections: $(tail -n 1 "$TEST_TMP/conc.out")"
[ "$(cat "$peak")" -eq "$N" ] || fail "only $(cat "$peak") of $N connections open and echoing at the peak"
[ "$conns_peak" -eq "$N" ] || fail "dpsock-stat tcp_conns at the peak: $conns_peak, expected $N (workers: $w_conns)"
ok "a) $N concurrent connections, each echoed two distinct messages; tcp_conns at the peak $conns_peak (workers: $w_conns)"
check_back "a) after the $N connections closed" "$objs0" "$bytes0" "$N"
acc=$(per_worker tcp_accepted)
note "tcp_accepted per worker: $acc"

# ---- b) open/close cycles ------------------------------------------------------
acc_before=$(stat_sum "$name" tcp_accepted)
objs1=$(per_worker lwip_mem_objs)
bytes1=$(per_worker lwip_mem_bytes)
rc=0
out=$(in_b python3 "$TCPPEER" cycles -d "$TOPO_ADDR_A" -p 7 -n "$CYCLES" --time 240 2>&1) || rc=$?
echo "$out"
[ "$rc" -eq 0 ] || fail "open/close cycles: $out"
acc_after=$(stat_sum "$name" tcp_accepted)
[ $((acc_after - acc_before)) -eq "$CYCLES" ] ||
	fail "tcp_accepted rose by $((acc_after - acc_before)), expected $CYCLES"
# dpsock closes passively (no TIME_WAIT on its side); check_back waits
# out 2*TCP_MSL = 10 s anyway in case a close crossed.
check_back "b) after $CYCLES cycles" "$objs1" "$bytes1" "$CYCLES"
reset=$(stat_sum "$name" tcp_reset)
[ "$reset" -eq 0 ] || fail "tcp_reset=$reset after clean closes"
stop_clean
ok "dpsock-echo stopped cleanly, every mbuf back"

# ---- c) active churn --------------------------------------------------------------
srv_ready=$TEST_TMP/srv.ready
in_b python3 "$TCPPEER" echo-server -a "$TOPO_ADDR_B" -p 7001 --ready "$srv_ready" \
	>"$TEST_TMP/server.out" 2>&1 &
srv_pid=$!
on_exit "kill $srv_pid 2>/dev/null || true"
poll_until 10 test -e "$srv_ready" || fail "Linux echo server did not start"
total=$((4 * PER_CONN))
app_start "$name" "$conf" "$LOADGEN" -- \
	-d "$TOPO_ADDR_B" -p 7001 -c 4 -m churn -s 64 -n "$PER_CONN" -t 120 --verify
lg_log=$APP_LOG lg_pid=$APP_PID
# sample the counters while it runs: the segment goes when it exits
last=
while kill -0 "$lg_pid" 2>/dev/null; do
	s=$("$DPSOCK_STAT" -n "$name" 2>/dev/null) && last=$s
	sleep 0.2
done
rc=0
app_stop || rc=$?
grep '^loadgen:' "$lg_log" || true
[ "$rc" -eq 0 ] || { tail -n 20 "$lg_log" >&2; fail "dpsock-loadgen churn exited with status $rc"; }
grep -q 'active-open steering: software' "$lg_log" || fail "loadgen did not use software steering"
tot=$(grep '^loadgen: total' "$lg_log")
kv() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
[ "$(kv connected "$tot")" -eq "$total" ] || fail "churn: connected=$(kv connected "$tot"), expected $total"
[ "$(kv errors "$tot")" -eq 0 ] || fail "churn: $tot"
[ "$(kv err_steer "$tot")" -eq 0 ] || fail "churn: err_steer=$(kv err_steer "$tot")"
[ "$(kv err_connect "$tot")" -eq 0 ] || fail "churn: err_connect=$(kv err_connect "$tot") (no local port?)"
grep -q 'all [0-9]* mbufs back in the pool' "$lg_log" || fail "churn: no 'mbufs back' line"
if [ -n "$last" ]; then
	pcf=$(awk '$1 ~ /^worker\.[0-9]+\.port_claim_failed$/ { s += $2 } END { print s + 0 }' <<<"$last")
	so=$(awk '$1 ~ /^worker\.[0-9]+\.steer_out$/ { s += $2 } END { print s + 0 }' <<<"$last")
	[ "$pcf" -eq 0 ] || fail "churn: port_claim_failed=$pcf"
	note "last sample before exit: port_claim_failed=$pcf steer_out=$so"
fi

# ---- d) more connections than local ports: TIME_WAIT reuse -------------------------
ports=128 tw_total=400
conf_tw=$(dpsock_conf "${name}t" 'workers = [ 0, 1 ];' \
	"tcp = { ephemeral_min = 40000; ephemeral_max = $((40000 + ports - 1)); };")
app_start "${name}t" "$conf_tw" "$LOADGEN" -- \
	-d "$TOPO_ADDR_B" -p 7001 -c 2 -m churn -s 64 -n $((tw_total / 2)) -t 120 --verify
lg_log=$APP_LOG lg_pid=$APP_PID
last=
while kill -0 "$lg_pid" 2>/dev/null; do
	s=$("$DPSOCK_STAT" -n "${name}t" 2>/dev/null) && last=$s
	sleep 0.2
done
rc=0
app_stop "${name}t" || rc=$?
grep '^loadgen: total' "$lg_log" || true
tot=$(grep '^loadgen: total' "$lg_log") || fail "TIME_WAIT reuse: no loadgen total line"
[ "$(kv connected "$tot")" -eq "$tw_total" ] || fail "TIME_WAIT reuse: connected=$(kv connected "$tot"), expected $tw_total"
# only a momentary lack of ports (err_connect) may count as an error
[ "$(kv errors "$tot")" -eq "$(kv err_connect "$tot")" ] || fail "TIME_WAIT reuse: $tot"
[ "$rc" -eq 0 ] || [ "$(kv err_connect "$tot")" -gt 0 ] || fail "dpsock-loadgen exited with status $rc"
grep -q 'all [0-9]* mbufs back in the pool' "$lg_log" || fail "TIME_WAIT reuse: no 'mbufs back' line"
reused=$(awk '$1 ~ /^worker\.[0-9]+\.tcp_tw_reused$/ { s += $2 } END { print s + 0 }' <<<"$last")
[ "$reused" -ge $((tw_total - 2 * ports)) ] ||
	fail "TIME_WAIT reuse: tcp_tw_reused=$reused, expected at least $((tw_total - 2 * ports)) (last sample)"
ok "d) $tw_total connections over $ports local ports: $reused TIME_WAIT ports reused, err_connect=$(kv err_connect "$tot")"

[ ${#FAILED[@]} -eq 0 ] || fail "${#FAILED[@]} check(s) failed: $(printf '%s; ' "${FAILED[@]}")"
pass "$N concurrent, $CYCLES cycles, $total active churn connections and $tw_total over $ports ports; no leak"
