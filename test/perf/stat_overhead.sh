#!/usr/bin/env bash
# Does watching a loaded instance with dpsock-stat cost throughput?
#
# dpsock-http (two workers) on net_af_packet in namespace A, wrk in
# namespace B. ROUNDS rounds (default 5), each: wrk for SECONDS (default 5)
# alone, then wrk again while dpsock-stat polls every 0.1 s in a loop
# (alternately -v extra -d 2 and -v sockets, the views that read the most).
# Prints requests/s of every run and the ratio of the medians (with / without).
# Speeds are printed, never asserted: run it on a quiet machine, and read
# the ratio against the spread between rounds (the noise).
#
#   meson test -C build --suite perf stat_overhead --verbose
#   ROUNDS=10 SECONDS_PER_RUN=10 test/perf/stat_overhead.sh
set -euo pipefail
. "$(dirname "$0")/../integration/lib.sh"

require_root
require_cmd ip wrk python3
require_tools dpsock-http dpsock-stat
rounds=${ROUNDS:-5}
secs=${SECONDS_PER_RUN:-5}
name=$TEST_NAME
test_topo_up 89
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
# shellcheck disable=SC2207
eal=($(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name"))
app_start "$name" "$conf" dpsock-http "${eal[@]}" -- -p 80 -s 64
url=http://$TOPO_ADDR_A/

# run_wrk: one wrk run; prints requests/s.
run_wrk() {
	in_b wrk -t1 -c32 -d"${secs}s" "$url" | awk '/^Requests\/sec:/ { print $2 }'
}

watcher() {
	local i=0
	while :; do
		if [ $((i % 2)) -eq 0 ]; then
			"$DPSOCK_STAT" -n "$name" -v extra -d 2 -i 0.1 -c 10 >/dev/null 2>&1 || true
		else
			"$DPSOCK_STAT" -n "$name" -v sockets -i 0.1 -c 10 >/dev/null 2>&1 || true
		fi
		i=$((i + 1))
	done
}

run_wrk >/dev/null # warm-up: ARP, caches
without=()
with=()
for r in $(seq 1 "$rounds"); do
	a=$(run_wrk)
	watcher &
	wpid=$!
	b=$(run_wrk)
	kill "$wpid" 2>/dev/null || true
	wait "$wpid" 2>/dev/null || true
	without+=("$a")
	with+=("$b")
	note "round $r: without dpsock-stat $a req/s, with dpsock-stat -i 0.1 $b req/s"
done
app_stop "$name" || fail "dpsock-http exited with status $?"
python3 - "${without[*]}" "${with[*]}" <<'EOF'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
spread = (max(a) - min(a)) / ma if ma else 0
print("| | median req/s | min | max |")
print("|---|---|---|---|")
print("| without dpsock-stat | %.0f | %.0f | %.0f |" % (ma, min(a), max(a)))
print("| with dpsock-stat -i 0.1 | %.0f | %.0f | %.0f |" % (mb, min(b), max(b)))
print("ratio with/without: %.3f (spread of the runs without: %.1f %%)" % (mb / ma if ma else 0, spread * 100))
EOF
pass "stat_overhead: $rounds rounds of ${secs}s"
