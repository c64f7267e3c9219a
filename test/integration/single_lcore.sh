#!/usr/bin/env bash
# dpsockd on one lcore (-l 0, the test port with one queue, no `workers`
# key): the main lcore is the only worker and does its control tasks in
# between. Then, for comparison, the two-worker shape (-l 0-1, workers =
# [0, 1], two queues).
#
# Shows: one lcore gives one worker, which answers 200 pings with none lost;
# once traffic stops that worker really sleeps (its `sleeps` counter rises)
# and the whole process uses well under a core (< 30% of one CPU over 3 s; a
# worker that spins would be ~100%); SIGINT stops it with exit status 0,
# every mbuf back and no shared memory or EAL runtime dir left. The
# two-worker daemon is idle in the same sense: both workers sleep and the
# process as a whole stays under 30% of one CPU.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 getconf nproc
require_tools dpsockd dpsock-stat

# Idle budget: CPU time of the whole process (every thread) over the
# window, as a share of one CPU.
IDLE_WINDOW_S=3
IDLE_MAX_PCT=30
CLK_TCK=$(getconf CLK_TCK)
[ "$CLK_TCK" -gt 0 ] 2>/dev/null || skip "getconf CLK_TCK gave '$CLK_TCK'"

# cpu_ticks PID: utime + stime of the whole process, in clock ticks. The
# command name (field 2) may hold spaces or parentheses: cut after the last
# ')'; utime and stime are then the 12th and 13th fields.
cpu_ticks() {
	local stat
	stat=$(cat "/proc/$1/stat") || return 1
	stat=${stat##*) }
	awk '{ print $12 + $13 }' <<<"$stat"
}

# sleeps_of NAME: "worker.0.sleeps=N worker.1.sleeps=M ..." for every worker.
sleeps_of() {
	"$DPSOCK_STAT" -n "$1" | awk '$1 ~ /^worker\.[0-9]+\.sleeps$/ { printf "%s=%s ", $1, $2 }'
}

# idle_check NAME PID: with no traffic, over IDLE_WINDOW_S seconds, fail
# unless every worker's sleeps counter rose and the process used less than
# IDLE_MAX_PCT% of one CPU.
idle_check() {
	local name=$1 pid=$2 t0 t1 w0 w1 s0 s1 ms pct k nw
	nw=$(stat_get "$name" daemon.0.workers)
	s0=$(sleeps_of "$name")
	w0=${EPOCHREALTIME/./}
	t0=$(cpu_ticks "$pid") || fail "cannot read /proc/$pid/stat"
	sleep "$IDLE_WINDOW_S" # the measurement window, not a wait for an event
	t1=$(cpu_ticks "$pid") || fail "cannot read /proc/$pid/stat (did dpsockd die?)"
	w1=${EPOCHREALTIME/./}
	s1=$(sleeps_of "$name")
	ms=$(((w1 - w0) / 1000))
	# CPU ms / wall ms, in percent of one CPU, one decimal.
	pct=$(awk -v t=$((t1 - t0)) -v hz="$CLK_TCK" -v ms="$ms" \
		'BEGIN { printf "%.1f", t * 100000 / hz / ms }')
	for ((k = 0; k < nw; k++)); do
		local b a
		b=$(sed -n "s/.*worker\.$k\.sleeps=\([0-9]*\).*/\1/p" <<<"$s0")
		a=$(sed -n "s/.*worker\.$k\.sleeps=\([0-9]*\).*/\1/p" <<<"$s1")
		if [ -z "$b" ] || [ -z "$a" ]; then
			fail "no worker.$k.sleeps counter ($s1)"
		fi
		[ "$a" -gt "$b" ] ||
			fail "$name: worker $k did not sleep while idle (sleeps $b -> $a)"
		note "$name: worker $k slept $((a - b)) times in ${ms} ms"
	done
	awk -v p="$pct" -v max="$IDLE_MAX_PCT" 'BEGIN { exit !(p < max) }' ||
		fail "$name: idle dpsockd ($nw worker(s)) used $pct% of one CPU over ${ms} ms" \
			"($((t1 - t0)) ticks at $CLK_TCK/s); limit $IDLE_MAX_PCT%"
	IDLE_PCT=$pct
}

# clean_stop_check NAME SIGNAL: stop with SIGNAL; fail unless dpsockd exits 0
# with every mbuf back and leaves neither its stats segment nor an EAL
# runtime dir behind.
clean_stop_check() {
	local name=$1 sig=$2 rc=0 log=$DPSOCKD_LOG
	dpsockd_stop "$name" "$sig" || rc=$?
	[ "$rc" -eq 0 ] || fail "$name: SIG$sig: dpsockd exited with status $rc (3 = mbuf leak)"
	grep -q 'all [0-9]* mbufs back in the pool' "$log" ||
		fail "$name: no 'mbufs back in the pool' line in the log: $(tail -5 "$log")"
	[ ! -e "/dev/shm/dpsock.$name.stats" ] || fail "$name: stats segment left in /dev/shm"
	[ ! -e "/var/run/dpdk/$name" ] || fail "$name: EAL runtime dir /var/run/dpdk/$name left"
}

name=$TEST_NAME
test_topo_up 44

# 1. One lcore, no `workers` key: the main lcore is the one worker.
conf=$(dpsock_conf "$name")
# shellcheck disable=SC2046
dpsockd_start "$name" "$conf" $(DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$name")
pid=$DPSOCKD_PID
nw=$(stat_get "$name" daemon.0.workers)
[ "$nw" = 1 ] || fail "one lcore: expected 1 worker, dpsock-stat shows $nw"
grep -q 'worker 0 on lcore 0, queue 0 (main lcore)' "$DPSOCKD_LOG" ||
	fail "log does not show worker 0 on the main lcore"
ok "one lcore: 1 worker, on the main lcore"

# 2. 200 pings, none lost, each counted.
out=$(in_b "$PINGN" -c 200 -i 0.005 "$TOPO_ADDR_A") || fail "pings lost: $out"
wait_counter_ge "$name" icmp_echo 200 5
[ "$STAT_VALUE" -eq 200 ] || fail "200 echo requests sent, worker counted $STAT_VALUE"
ok "200 pings, 200 answered"

# 3. Idle: the worker sleeps and the process uses well under a core.
idle_check "$name" "$pid"
ok "one lcore idle: $IDLE_PCT% of one CPU over ${IDLE_WINDOW_S}s, worker sleeping"

# 4. SIGINT: clean stop (dpsockd_stop signals dpsockd's own pid and collects
# its exit status).
clean_stop_check "$name" INT
ok "SIGINT: exit 0, all mbufs back, no stats segment or EAL runtime dir left"

# 5. Two workers on two lcores (main lcore = worker 0): idle as well.
[ "$(nproc)" -ge 2 ] ||
	skip "the one-lcore checks passed, but the two-worker check needs 2 CPUs (nproc: $(nproc))"
name2=$(unique_name b)
conf2=$(dpsock_conf "$name2" 'workers = [ 0, 1 ];')
# shellcheck disable=SC2046
dpsockd_start "$name2" "$conf2" $(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name2")
pid2=$DPSOCKD_PID
nw=$(stat_get "$name2" daemon.0.workers)
[ "$nw" = 2 ] || fail "two lcores: expected 2 workers, dpsock-stat shows $nw"
out=$(in_b "$PINGN" -c 20 -i 0.005 "$TOPO_ADDR_A") || fail "pings lost (2 workers): $out"
idle_check "$name2" "$pid2"
ok "two workers idle: $IDLE_PCT% of one CPU in all over ${IDLE_WINDOW_S}s, both sleeping"
clean_stop_check "$name2" TERM
pass "one lcore: 200 pings answered, idle and sleeping, clean SIGINT stop; two workers idle too"
