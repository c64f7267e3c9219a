#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/same_host.sh — two programs of one host talking to each other:
# both preloaded, through the address dpsockd serves (its worker's lwIP
# loops the handshake back and pairs the two ends, whose bytes then go from
# one's tx FIFO into the other's rx FIFO: docs/design.md decisions 15 and
# 16), against the same two
# programs on the kernel's loopback (127.0.0.1), in one run, round by round:
#   sockperf   `sockperf sr` (CPU 1) and `sockperf pp -m 64` (CPU 0): the
#              half round trip's p50, UDP and TCP
#   rr16       test/perf/kernel_echo (epoll, CPU 1) driven by
#              test/perf/kernel_load -m rr -s 64 -c 16 (CPU 0): transactions/s
#   bulk       kernel_load -m bulk -c 1 into kernel_echo: Gbit/s sent
#   loopback   the same, both preloaded with DPSOCK_LOOPBACK=1 over
#              127.0.0.1 (TCP rows only)
# dpsockd: one worker, on CPU 1 with the server (EAL -l 1), a port on a veth
# that carries none of this traffic (net_af_packet). Two CPUs for three
# busy parties: the worker shares CPU 1 with the server, and every byte is
# copied three times (program into its tx FIFO, worker FIFO to FIFO, FIFO
# into the other program) where the kernel's loopback copies twice, each
# side's stack on that side's own CPU.
#
#   test/perf/same_host.sh [--quick] [--rounds N] [--time S] [--out FILE] [--build DIR]
#
# Writes a markdown report (default docs/perf/same_host.md, --quick: the
# build dir) and prints it. Exit 0 when every measurement ran, 1 when one
# failed, 77 without root. Ratios of runs made side by side, never asserted.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=perf_args.sh
. "$SELF_DIR/perf_args.sh"
perf_args same_host.md 2 4 "$@"

TEST_NAME=shperf-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd taskset sockperf
require_tools dpsockd dpsock-stat
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the client on CPU 0, the server and dpsockd on CPU 1)"
require_preload
ECHO=$build/test/perf/kernel_echo
LOAD=$build/test/perf/kernel_load
[ -x "$ECHO" ] && [ -x "$LOAD" ] || skip "kernel_echo / kernel_load are not built in $build"
RES=$TEST_TMP/res.tsv # target round metric value
: >"$RES"
FAILED=0
failed() { note "FAILED: $*"; FAILED=1; echo "$*" >>"$TEST_TMP/failures"; }

test_topo_up 204
PRE=(env "LD_PRELOAD=$PRELOAD_LIB" "DPSOCK_RUNTIME_DIR=$TEST_TMP" "DPSOCK_NAME=$TEST_NAME"
	"DPSOCK_LOG_FILE=$TEST_TMP/shim-%d.log")
printf 'name = "%s";\nruntime_dir = "%s";\ninterfaces = ( { port = "net_af_packet0"; address = "%s/24"; } );\n' \
	"$TEST_NAME" "$TEST_TMP" "$TOPO_ADDR_A" >"$TEST_TMP/d.conf"
# shellcheck disable=SC2046
ip netns exec "$TOPO_NS_A" taskset -c 1 "$(dpsock_tool dpsockd)" -l 1 --no-pci \
	--file-prefix "$TEST_NAME" --log-level=lib.eal:error \
	"--vdev=net_af_packet0,iface=$TOPO_IF_A,qpairs=1" $(eal_mem_args) \
	-- -f "$TEST_TMP/d.conf" >"$TEST_TMP/dpsockd.log" 2>&1 </dev/null &
DPID=$!
on_exit "kill -TERM $DPID 2>/dev/null; poll_until 15 _lib_dead $DPID || kill -KILL $DPID 2>/dev/null; true"
poll_until 30 test -S "$TEST_TMP/$TEST_NAME.sock" || fail "dpsockd did not start: $(tail -n 3 "$TEST_TMP/dpsockd.log")"

# on TARGET CPU CMD...: CMD in namespace A on CPU, preloaded for "preload"
on() {
	local target=$1 cpu=$2
	shift 2
	if [ "$target" = preload ]; then
		ip netns exec "$TOPO_NS_A" taskset -c "$cpu" "${PRE[@]}" "$@"
	elif [ "$target" = loopback ]; then
		ip netns exec "$TOPO_NS_A" taskset -c "$cpu" "${PRE[@]}" DPSOCK_LOOPBACK=1 "$@"
	else
		ip netns exec "$TOPO_NS_A" taskset -c "$cpu" "$@"
	fi
}
addr_of() { [ "$1" = preload ] && echo "$TOPO_ADDR_A" || echo 127.0.0.1; }

# sp TARGET ROUND PROTO: sockperf ping-pong p50
sp() {
	local target=$1 round=$2 proto=$3 a flag=() srv p50
	a=$(addr_of "$target")
	[ "$proto" = tcp ] && flag=(--tcp)
	on "$target" 1 sockperf sr "${flag[@]}" -i "$a" -p 11111 >"$TEST_TMP/sr.log" 2>&1 </dev/null &
	srv=$!
	sleep 1
	on "$target" 0 timeout $((secs + 20)) sockperf pp "${flag[@]}" -i "$a" -p 11111 -m 64 -t "$secs" \
		>"$TEST_TMP/pp.log" 2>&1
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	p50=$(sed 's/\x1b\[[0-9;]*m//g' "$TEST_TMP/pp.log" | sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' | head -n 1)
	[ -n "$p50" ] || { failed "$target sockperf $proto round $round: $(tail -n 3 "$TEST_TMP/pp.log")"; return; }
	printf '%s\t%s\tsp_%s_p50\t%s\n' "$target" "$round" "$proto" "$p50" >>"$RES"
}

# load TARGET ROUND MODE CONNS METRIC: kernel_echo and kernel_load
load() {
	local target=$1 round=$2 mode=$3 conns=$4 metric=$5 a srv v
	a=$(addr_of "$target")
	on "$target" 1 "$ECHO" -a "$a" -p 7000 --tcp-only >"$TEST_TMP/echo.log" 2>&1 </dev/null &
	srv=$!
	sleep 1
	on "$target" 0 "$LOAD" -d "$a" -p 7000 -m "$mode" -c "$conns" -s 64 -t "$secs" --warmup 1 \
		>"$TEST_TMP/load-$target-$metric-$round.log" 2>&1
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	if [ "$mode" = bulk ]; then
		v=$(sed -n 's/^loadgen: total .* tx_mbit_s=\([0-9.]*\).*/\1/p' "$TEST_TMP/load-$target-$metric-$round.log")
		[ -z "$v" ] || v=$(awk -v m="$v" 'BEGIN { printf "%.3f", m / 1000 }')
	else
		v=$(sed -n 's/^loadgen: total .* rate=\([0-9.]*\)\/s.*/\1/p' "$TEST_TMP/load-$target-$metric-$round.log")
	fi
	[ -n "$v" ] || { failed "$target $metric round $round: $(tail -n 3 "$TEST_TMP/load-$target-$metric-$round.log")"; return; }
	printf '%s\t%s\t%s\t%s\n' "$target" "$round" "$metric" "$v" >>"$RES"
}

for r in $(seq 1 "$rounds"); do
	for target in preload loopback kernel; do
		note "round $r: $target"
		# DPSOCK_LOOPBACK carries TCP only: its UDP is the kernel's
		[ "$target" = loopback ] || sp "$target" "$r" udp
		sp "$target" "$r" tcp
		load "$target" "$r" rr 16 rr16_rate
		load "$target" "$r" bulk 1 bulk_gbps
	done
done

mkdir -p "$(dirname "$out")"
python3 - "$RES" "$rounds" "$secs" >"$out" <<'PYEOF_SH'
import statistics, sys
res, rounds, secs = sys.argv[1], sys.argv[2], sys.argv[3]
v = {}
for line in open(res):
    t, r, m, x = line.split("\t")
    v.setdefault((t, m), []).append(float(x))
rows = [("sp_udp_p50", "sockperf UDP ping-pong p50 (µs, lower is better)", True),
        ("sp_tcp_p50", "sockperf TCP ping-pong p50 (µs, lower is better)", True),
        ("rr16_rate", "64 B request/response, 16 connections (transactions/s)", False),
        ("bulk_gbps", "single-stream bulk (Gbit/s)", False)]
print("# Two programs of one host: dpsock against the kernel's loopback\n")
print("`test/perf/same_host.sh`, %s round(s) of %s s; medians; both programs preloaded" % (rounds, secs))
print("and connected through dpsockd's address (paired by the worker, bytes FIFO to FIFO), against")
print("the same programs over 127.0.0.1 on the kernel; \"127.0.0.1\": both preloaded with")
print("DPSOCK_LOOPBACK=1 over 127.0.0.1 (TCP only). Client on CPU 0, server and")
print("dpsockd's one worker on CPU 1.\n")
print("| measure | dpsock | 127.0.0.1 (DPSOCK_LOOPBACK) | kernel | dpsock / kernel | 127.0.0.1 / kernel |")
print("|---|---|---|---|---|---|")
med = lambda t, m: statistics.median(v[(t, m)]) if v.get((t, m)) else None
for m, label, lower in rows:
    d, lo, k = med("preload", m), med("loopback", m), med("kernel", m)
    cell = lambda x: "%.2f" % x if x is not None else "—"
    ratio = lambda x: "%.2f×" % (x / k) if x is not None and k else "—"
    print("| %s | %s | %s | %s | %s | %s |" % (label, cell(d), cell(lo), cell(k), ratio(d), ratio(lo)))
print("\nWhere two CPUs limit it: dpsockd's one worker moves every byte from the sender's")
print("tx FIFO into the receiver's rx FIFO (one copy, no segments: docs/design.md decision")
print("16) on the CPU it shares with the server, and polls there; the kernel's loopback runs")
print("each end's stack in that end's own system calls, on its own CPU, with one copy less.")
print("With `preload.cut_through = false` the bytes go as segments through lwIP's loop (two")
print("more copies, both ends' TCP on the worker): bulk was 0.29-0.33x the kernel's then.")
print("\nEach round's figures: " + "; ".join(
    "%s %s: %s" % (t, m, ", ".join("%g" % x for x in xs)) for (t, m), xs in sorted(v.items())))
PYEOF_SH
cat "$out"
[ "$FAILED" = 0 ] || exit 1
