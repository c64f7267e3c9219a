#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# What does a running dpsock-dump cost the worker it captures from?
#
# dpsock-echo --raw (native, one worker on CPU 1) on the test port in
# namespace A; test/perf/kernel_load in namespace B on CPU 0 keeps one
# 64-byte request/response outstanding on one connection (a flow of
# 2 frames per transaction each way with the ACKs); dpsock-dump on CPU 0
# too. Each round runs the flow for SECONDS four times, in turn:
#   none       no capture
#   miss       a capture whose filter keeps nothing ("udp port 9"): the
#              filter runs on every frame, nothing is copied
#   flow       a capture of that flow ("tcp port 7000"), pcapng to /dev/null
#   file       the same into a file on /tmp (then removed)
# and reports the transaction rate and p99 of each, the ratio of each
# median rate to none's, and the spread of the rounds. Ratios of runs made
# side by side, never asserted.
#
#   test/perf/capture.sh [--quick] [--rounds N] [--time S] [--out FILE] [--build DIR]
#
# Writes a markdown report (default docs/perf/capture.md; --quick: in the
# build dir) and prints it. Exit 0, 1 when a run failed, 77 without root.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=perf_args.sh
. "$SELF_DIR/perf_args.sh"
perf_args capture.md 3 8 "$@"
[ "$quick" = 1 ] || rounds=${rounds:-5}

TEST_NAME=capperf-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd ip taskset
require_tools dpsock-echo dpsock-dump
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the client and dpsock-dump on CPU 0, the worker on CPU 1)"
LOAD=$build/test/perf/kernel_load
[ -x "$LOAD" ] || skip "kernel_load is not built in $build"
DUMP=$(dpsock_tool dpsock-dump)
name=$TEST_NAME
test_topo_up 133
conf=$(dpsock_conf "$name" 'workers = [ 1 ];')
# shellcheck disable=SC2207
eal=($(DPSOCK_TEST_LCORES=1 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$name"))
app_start "$name" "$conf" dpsock-echo "${eal[@]}" -- --raw --tcp-only -p 7000
RES=$TEST_TMP/res.tsv
: >"$RES"
FAILED=0

# run MODE ROUND: one run of the flow under MODE; appends "mode round rate p99_us"
run() {
	local mode=$1 round=$2 dpid='' log=$TEST_TMP/load.log rps p99
	case "$mode" in
	miss) taskset -c 0 "$DUMP" -n "$name" -w /dev/null udp port 9 2>"$TEST_TMP/dump.err" & dpid=$! ;;
	flow) taskset -c 0 "$DUMP" -n "$name" -w /dev/null tcp port 7000 2>"$TEST_TMP/dump.err" & dpid=$! ;;
	file) taskset -c 0 "$DUMP" -n "$name" -w "$TEST_TMP/cap.pcapng" tcp port 7000 2>"$TEST_TMP/dump.err" & dpid=$! ;;
	esac
	# the capture runs once the tool says so (every worker runs its filter)
	if [ -n "$dpid" ]; then
		poll_until 10 bash -c "grep -q 'capturing on' '$TEST_TMP/dump.err' || ! kill -0 $dpid" || true
		grep -q 'capturing on' "$TEST_TMP/dump.err" ||
			{ note "FAILED: $mode: the capture did not start: $(cat "$TEST_TMP/dump.err")"; FAILED=1; }
	fi
	in_b taskset -c 0 "$LOAD" -d "$TOPO_ADDR_A" -p 7000 -m rr -c 1 -s 64 -t "$secs" --warmup 1 >"$log" 2>&1
	[ -z "$dpid" ] || { kill -INT "$dpid"; wait "$dpid" || { note "FAILED: dpsock-dump ($mode) exited $?: $(cat "$TEST_TMP/dump.err")"; FAILED=1; }; }
	[ -z "$dpid" ] || note "  $(grep 'packets captured\|dropped by' "$TEST_TMP/dump.err" | tr '\n' ' ')"
	rm -f "$TEST_TMP/cap.pcapng"
	rps=$(sed -n 's/^loadgen: total .* rate=\([0-9.]*\).*/\1/p' "$log")
	p99=$(sed -n 's/^loadgen: total .* p99_us=\([0-9.]*\).*/\1/p' "$log")
	if [ -z "$rps" ]; then
		note "FAILED: kernel_load ($mode): $(tail -n 3 "$log")"
		FAILED=1
		return
	fi
	printf '%s\t%s\t%s\t%s\n' "$mode" "$round" "$rps" "${p99:-0}" >>"$RES"
	note "round $round: $mode: $rps transactions/s, p99 ${p99:-?} us"
}

in_b "$LOAD" -d "$TOPO_ADDR_A" -p 7000 -m rr -c 1 -s 64 -t 1 >/dev/null 2>&1 # warm-up: ARP, caches
for r in $(seq 1 "$rounds"); do
	for mode in none miss flow file; do
		run "$mode" "$r"
	done
done
app_stop "$name" || { note "FAILED: dpsock-echo exited with status $?"; FAILED=1; }

mkdir -p "$(dirname "$out")"
python3 - "$RES" "$rounds" "$secs" "$TEST_PMD" >"$out" <<'PYEOF'
import statistics, sys
res, rounds, secs, pmd = sys.argv[1:5]
rows = {}
for line in open(res):
    mode, rnd, rps, p99 = line.split()
    rows.setdefault(mode, []).append((float(rps), float(p99)))
label = {
    "none": "no capture",
    "miss": "capture, filter keeps nothing (`udp port 9`)",
    "flow": "capture of the flow (`tcp port 7000`), `-w /dev/null`",
    "file": "capture of the flow, `-w` a file on /tmp",
}
print("# What a running capture costs: dpsock-dump against a loaded worker\n")
print("`test/perf/capture.sh`, %s round(s) of %s s, the modes in turn within each "
      "round; medians. dpsock-echo --raw (native, one worker on CPU 1, port %s), "
      "kernel_load -m rr -c 1 -s 64 (one 64-byte request/response outstanding) from the "
      "peer namespace on CPU 0, dpsock-dump on CPU 0 as well. Spread: (max - min) / "
      "median of the rounds.\n" % (rounds, secs, pmd))
print("| mode | transactions/s | / none | spread | p99 µs |")
print("|---|---|---|---|---|")
base = statistics.median(r for r, _ in rows.get("none", [(0, 0)]))
for mode in ("none", "miss", "flow", "file"):
    if mode not in rows:
        print("| %s | failed | | | |" % label[mode])
        continue
    rps = [r for r, _ in rows[mode]]
    m = statistics.median(rps)
    print("| %s | %.0f | %.2f× | %.0f %% | %.1f |" % (
        label[mode], m, m / base if base else 0, (max(rps) - min(rps)) / m * 100 if m else 0,
        statistics.median(p for _, p in rows[mode])))
PYEOF
cat "$out"
[ "$FAILED" = 0 ] || exit 1
pass "capture cost: $rounds round(s), report in $out"
