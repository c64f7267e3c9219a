#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/ipv6.sh — IPv6 beside IPv4, dpsock beside the kernel, in one
# run, round by round, over one veth (scripts/topo.sh): the server in
# namespace A on CPU 1, the client in namespace B on CPU 0, each
# measurement over IPv4 (198.18.205.1) and over IPv6 (fd00:198:18:205::1):
#   rr1        test/perf/kernel_load -m rr -s 64 -c 1 against
#              `dpsock-echo --raw` or test/perf/kernel_echo: the round
#              trip's p50 (sockperf, which run-all uses for latency, takes
#              IPv6 addresses from 3.8 on; Debian 12 has 3.7)
#   rr16       the same with -c 16: transactions/s
#   bulk       kernel_load -m bulk -c 1 into the same echo servers (echoed
#              back): Gbit/s sent
#   udp1       kernel_load -m udp -s 64 -c 1 (one datagram outstanding)
#              against the same servers' UDP sockets: the round trip's p50
# kernel_load counts from 1.3 s into each run (--warmup), as run-all does.
# dpsock: dpsock-echo with one lcore (EAL -l 1, taskset -c 1) on
# net_af_xdp, one vdev with one queue, where AF_XDP can run, else on
# net_af_packet (lib.sh's TEST_PMD: DPSOCK_TEST_PMD=af_packet asks for it);
# its interface has address and address6, A's kernel no address. preload:
# dpsockd the same way (one lcore on CPU 1, the same interface), and
# test/perf/kernel_echo under LD_PRELOAD on CPU 1 too (the worker and the
# program share it, as in ab.sh's handoff rows). kernel:
# A's kernel has both addresses (IPv6 turned on for its end of the veth),
# its servers bound to the address measured. B has 198.18.205.2/24 and
# fd00:198:18:205::2/64 throughout.
#
#   test/perf/ipv6.sh [--quick] [--rounds N] [--time S] [--out FILE] [--build DIR]
#
# Writes a markdown report (default docs/perf/ipv6.md, --quick: the build
# dir) and prints it. Exit 0 when every measurement ran, 1 when one failed
# (its cell says so), 77 without root or a needed tool. Ratios of runs made
# side by side, never asserted.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=perf_args.sh
. "$SELF_DIR/perf_args.sh"
perf_args ipv6.md 3 4 "$@"
[ "$secs" -ge 3 ] 2>/dev/null || { echo "ipv6.sh: --time must be at least 3 (1.3 s of warm-up)" >&2; exit 2; }
WARMUP=1.3 # seconds before kernel_load's window, as run-all's
PORT=11111 # dpsock-echo's default

TEST_NAME=ip6perf-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd taskset timeout python3
require_tools dpsock-echo dpsockd dpsock-stat kernel_echo kernel_load
[ -n "$PRELOAD_LIB" ] || skip "libdpsock_preload.so not built"
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the client on CPU 0, the server on CPU 1)"
ECHO=$(dpsock_tool dpsock-echo)
KECHO=$(dpsock_tool kernel_echo)
KLOAD=$(dpsock_tool kernel_load)
RES=$TEST_TMP/res.tsv # side family metric round value|failed
: >"$RES"
FAILED=0
failed() { note "FAILED: $*"; FAILED=1; echo "$*" >>"$TEST_TMP/failures"; }
test_topo_up 205
test_topo_ipv6
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

# Background programs of this run, stopped at exit.
declare -A BG_PID=()
bg_stop() { # bg_stop NAME [SIGNAL]: stop, wait, return its status
	local name=$1 pid=${BG_PID[$1]:-} rc=0
	[ -n "$pid" ] || return 0
	kill -"${2:-TERM}" "$pid" 2>/dev/null
	poll_until 10 _lib_dead "$pid" || { kill -KILL "$pid" 2>/dev/null; sleep 0.2; }
	wait "$pid" 2>/dev/null || rc=$?
	unset 'BG_PID[$name]'
	_lib_daemon_leftovers "$name"
	return $rc
}
# shellcheck disable=SC2317 # run by on_exit
bg_stop_all() {
	local n
	for n in "${!BG_PID[@]}"; do bg_stop "$n" KILL; done
}
on_exit bg_stop_all

# dp_up NAME PID: dpsock-stat answers for NAME, or PID is gone.
# shellcheck disable=SC2317 # run by poll_until
dp_up() { kill -0 "$2" 2>/dev/null || { echo exited; return 0; }; "$DPSOCK_STAT" -n "$1" >/dev/null 2>&1; }
# kv LINE KEY: value of KEY=... in a loadgen line
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | sed 's,/s$,,'; }
# addr FAMILY: A's address of that family (4 or 6)
addr() {
	if [ "$1" = 6 ]; then echo "$TOPO_ADDR6_A"; else echo "$TOPO_ADDR_A"; fi
}
# cell SIDE FAMILY METRIC ROUND VALUE: one figure, or "failed"
cell() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RES"; }
cell_failed() { # SIDE FAMILY METRIC ROUND WHY
	cell "$1" "$2" "$3" "$4" failed
	failed "$1 IPv$2 $3 round $4: $5"
}

# dpsock's port: lib.sh's choice (net_af_xdp where it can run), one queue
# (test_vdevs also gives the veth one queue for af_xdp: no flow may reach a
# queue without a socket), one lcore on CPU 1.
DP=${TEST_NAME}a
# shellcheck disable=SC2207
EAL=(-l 1 --file-prefix "$DP" --no-pci --log-level=lib.eal:error $(eal_mem_args) $(test_vdevs 1))
printf 'name = "%s";\nworker = { idle_poll_us = 100000; };\ninterfaces = ( { port = "%s"; address = "%s/%s"; address6 = "%s/64"; } );\n' \
	"$DP" "$TEST_PORT" "$TOPO_ADDR_A" "$TOPO_PLEN" "$TOPO_ADDR6_A" >"$TEST_TMP/dp.conf"
# dpsockd for the preload side: the same, with its control socket here
{ cat "$TEST_TMP/dp.conf"; printf 'runtime_dir = "%s";\n' "$TEST_TMP"; } >"$TEST_TMP/pl.conf"

# echo_start SIDE: dpsock-echo --raw (dpsock) or dpsockd (preload) in
# namespace A on CPU 1; returns 1 (after failed) when it does not come up.
echo_start() {
	local log=$TEST_TMP/echo.log prog=$ECHO conf=$TEST_TMP/dp.conf args=(--raw)
	if [ "$1" = preload ]; then
		prog=$DPSOCKD conf=$TEST_TMP/pl.conf args=()
	fi
	in_a_bpffs
	echo "+ $prog ${EAL[*]} -- -f $conf ${args[*]}" >"$log"
	"${IN_A_BPFFS[@]}" taskset -c 1 "$prog" "${EAL[@]}" -- -f "$conf" "${args[@]}" \
		>>"$log" 2>&1 </dev/null &
	BG_PID[$DP]=$!
	if poll_until 30 dp_up "$DP" "${BG_PID[$DP]}" && [ "$POLL_OUTPUT" != exited ]; then
		return 0
	fi
	failed "$(basename "$prog") on $TEST_PORT did not start: $(tail -n 3 "$log" | tr '\n' ' ')"
	bg_stop "$DP"
	return 1
}
echo_stop() { # SIDE
	local rc=0
	bg_stop "$DP" || rc=$?
	[ "$rc" = 0 ] || failed "$1: its daemon exited with status $rc (3 = mbuf leak)"
}

# kernel_up: A's kernel takes both addresses; IPv6 is turned on for its end
# of the veth only now (topo.sh turns it off: dpsock owns the port
# otherwise). kernel_down: off again, which drops the IPv6 addresses, and
# the IPv4 one flushed.
kernel_up() {
	ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A" &&
		in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=0" &&
		ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR6_A/64" dev "$TOPO_IF_A" nodad
}
kernel_down() {
	in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=1"
	ip -n "$TOPO_NS_A" addr flush dev "$TOPO_IF_A"
}

# listening FAMILY: a TCP connection from B to A's address of FAMILY, port
# PORT, is accepted (and closed): the server is up on that family.
listening() { poll_until 20 _lib_tcp_probe "$TOPO_NS_B" "$(addr "$1")" "$PORT"; }
# server_said SIDE LOG: the last line of the kernel side's server LOG, for a
# failure (dpsock-echo's own log is given when it does not start)
server_said() {
	[ "$1" = kernel ] || return 0
	printf ' (%s)' "$(tail -n 1 "$TEST_TMP/$2.log" 2>/dev/null)"
}

# load SIDE FAMILY ROUND MODE CONNS METRIC: kernel_load from B against
# dpsock-echo --raw (up already), kernel_echo on A's kernel or kernel_echo
# under the preload (started here); the p50 round trip (us) for METRIC
# rr1_p50, transactions/s for rr, Gbit/s sent for bulk (tx_mbit_s / 1000,
# as run-all's kernel figures)
load() {
	local side=$1 fam=$2 r=$3 mode=$4 conns=$5 metric=$6 a log line v rc=0 pre=()
	a=$(addr "$fam")
	log=$TEST_TMP/load-$side-$fam-$metric-$r.log
	[ "$side" != preload ] || pre=(env "LD_PRELOAD=$PRELOAD_LIB" "DPSOCK_RUNTIME_DIR=$TEST_TMP"
		"DPSOCK_NAME=$DP" "DPSOCK_LOG_FILE=$TEST_TMP/shim-%d.log")
	if [ "$side" != dpsock ]; then
		ip netns exec "$TOPO_NS_A" taskset -c 1 "${pre[@]}" "$KECHO" -a "$a" -p "$PORT" \
			>"$TEST_TMP/kecho-$fam.log" 2>&1 </dev/null &
		BG_PID[kecho]=$!
	fi
	if ! listening "$fam"; then
		bg_stop kecho
		cell_failed "$side" "$fam" "$metric" "$r" "nothing listens on $a port $PORT$(server_said "$side" "kecho-$fam")"
		return
	fi
	timeout $((secs + 30)) ip netns exec "$TOPO_NS_B" taskset -c 0 "$KLOAD" -d "$a" -p "$PORT" \
		-m "$mode" -c "$conns" -s 64 -t "$secs" --warmup "$WARMUP" >"$log" 2>&1 </dev/null || rc=$?
	bg_stop kecho
	line=$(grep '^loadgen: total' "$log")
	if [ "$rc" != 0 ] || [ -z "$line" ]; then
		cell_failed "$side" "$fam" "$metric" "$r" "kernel_load exited $rc: $(tail -n 2 "$log" | tr '\n' ' ' | head -c 300)"
		return
	fi
	if [ "$mode" = bulk ]; then v=$(awk -v m="$(kv "$line" tx_mbit_s)" 'BEGIN { printf "%.3f", m / 1000 }')
	elif [ "$metric" = rr1_p50 ] || [ "$metric" = udp1_p50 ]; then v=$(kv "$line" p50_us)
	else v=$(kv "$line" rate); fi
	[ -n "$v" ] || { cell_failed "$side" "$fam" "$metric" "$r" "no figure in: $line"; return; }
	cell "$side" "$fam" "$metric" "$r" "$v"
	note "$side IPv$fam $metric round $r: $v (p50 $(kv "$line" p50_us) us)"
}

# side_round SIDE ROUND FAMILY...: the three rows, over each family in turn
side_round() {
	local side=$1 r=$2 fam m
	shift 2
	if [ "$side" = kernel ] && ! kernel_up; then
		kernel_down
		for fam in "$@"; do
			for m in rr1_p50 rr16_rate bulk_gbps udp1_p50; do
				cell_failed kernel "$fam" "$m" "$r" "could not give A's kernel the addresses"
			done
		done
		return
	fi
	if [ "$side" = kernel ] || echo_start "$side"; then
		for fam in "$@"; do load "$side" "$fam" "$r" rr 1 rr1_p50; done
		for fam in "$@"; do load "$side" "$fam" "$r" rr 16 rr16_rate; done
		for fam in "$@"; do load "$side" "$fam" "$r" bulk 1 bulk_gbps; done
		for fam in "$@"; do load "$side" "$fam" "$r" udp 1 udp1_p50; done
		[ "$side" = kernel ] || echo_stop "$side"
	else
		for fam in "$@"; do
			for m in rr1_p50 rr16_rate bulk_gbps udp1_p50; do cell "$side" "$fam" "$m" "$r" failed; done
		done
	fi
	[ "$side" != kernel ] || kernel_down
}

test_pmd_note
note "ipv6: $rounds round(s) of ${secs}s runs, dpsock on $TEST_PORT and the kernel, report $out"
for r in $(seq 1 "$rounds"); do
	# which side, and which family, goes first alternates from round to
	# round, so that a drift of the machine within a round falls on both
	if [ $((r % 2)) = 1 ]; then
		note "round $r: dpsock, the preload, then the kernel; IPv4 first"
		side_round dpsock "$r" 4 6
		side_round preload "$r" 4 6
		side_round kernel "$r" 4 6
	else
		note "round $r: the kernel, the preload, then dpsock; IPv6 first"
		side_round kernel "$r" 6 4
		side_round preload "$r" 6 4
		side_round dpsock "$r" 6 4
	fi
done

mkdir -p "$(dirname "$out")"
python3 - "$RES" "$rounds" "$secs" "$TEST_PORT" "${TEST_PMD_WHY:-}" "$WARMUP" \
	"$TOPO_ADDR_A/$TOPO_PLEN" "$TOPO_ADDR6_A/64" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)" \
	"$TEST_TMP/failures" >"$out" <<'PYEOF_IP6'
import os, statistics, sys
res, rounds, secs, port, why, warmup, a4, a6, load0, load1, fails = sys.argv[1:12]
v, bad = {}, {}
for line in open(res):
    s, f, m, r, x = line.rstrip("\n").split("\t")
    if x == "failed":
        bad[(s, f, m)] = bad.get((s, f, m), 0) + 1
    else:
        v.setdefault((s, f, m), []).append(float(x))
# metric, label, lower is better, cell format
rows = [("rr1_p50", "TCP request/response, 64 B, 1 connection: p50 round trip (µs, lower is better)", True, "%.1f"),
        ("rr16_rate", "TCP request/response, 64 B, 16 connections (transactions/s)", False, "%.0f"),
        ("bulk_gbps", "single-stream TCP bulk, echoed back (Gbit/s sent)", False, "%.2f"),
        ("udp1_p50", "UDP request/response, 64 B, 1 socket: p50 round trip (µs, lower is better)", True, "%.1f")]
cols = [("dpsock", "4"), ("dpsock", "6"), ("preload", "4"), ("preload", "6"),
        ("kernel", "4"), ("kernel", "6")]
med = lambda k: statistics.median(v[k]) if v.get(k) else None
def cell(k, fmt):
    if v.get(k):
        c = fmt % med(k)
        if len(v[k]) > 1:
            c += " (" + fmt % min(v[k]) + "–" + fmt % max(v[k]) + ")"
        return c + (", %d failed" % bad[k] if k in bad else "")
    return "failed" if k in bad else "—"
def ratio(a, b):
    return "%.2f×" % (a / b) if a is not None and b else "—"
pmd = "net_af_xdp (one vdev, one queue)" if port.startswith("net_af_xdp") else \
    "net_af_packet (qpairs=1" + ("; AF_XDP cannot run here: " + why if why else "") + ")"
print("# IPv6 beside IPv4: dpsock against the kernel\n")
print("`test/perf/ipv6.sh`, %s round(s) of %s s runs; medians, min–max in brackets. Over one veth"
      " (MTU 1500): the server in namespace A on CPU 1, the client in namespace B on CPU 0. dpsock:"
      " dpsock-echo, one lcore (EAL -l 1) polling on CPU 1, on %s, its interface with `address ="
      " \"%s\"` and `address6 = \"%s\"`, A's kernel without an address; kernel: A's kernel with both"
      " addresses, test/perf/kernel_echo (epoll) bound to the address measured; preload: dpsockd"
      " the same way (one lcore on CPU 1) and kernel_echo under LD_PRELOAD on CPU 1 as well (the"
      " worker and the program share the CPU). 64-byte messages:"
      " test/perf/kernel_load -m rr -s 64 -c 1 (its p50 round trip) and -c 16 (transactions/s)"
      " against `dpsock-echo --raw` or kernel_echo; bulk: kernel_load -m bulk -c 1 (64 KiB"
      " sends, echoed back), the bytes its send() took as Gbit/s; UDP: kernel_load -m udp -s 64 -c 1"
      " (one datagram outstanding) against the same servers. kernel_load counts from %s s into"
      " each run. Each round runs both sides, the order of the sides and of the families alternating"
      " from round to round. Load average: %s at the start, %s at the end.\n"
      % (rounds, secs, pmd, a4, a6, warmup, load0, load1))
print("| measure | dpsock IPv4 | dpsock IPv6 | preload IPv4 | preload IPv6 | kernel IPv4 | kernel IPv6 |")
print("|---|---|---|---|---|---|---|")
for m, label, lower, fmt in rows:
    print("| %s | %s |" % (label, " | ".join(cell((s, f, m), fmt) for s, f in cols)))
print("\nRatios of the medians. For the latency row a ratio below 1× means the numerator (IPv6;"
      " dpsock) is faster, lower being better; for the rates a ratio above 1× does. The goal: dpsock over IPv6 within"
      " 10 % of dpsock over IPv4 (latency at most 1.10×, rates at least 0.90×).\n")
def within(a, b, lower):
    if not b or a is None:
        return "—"
    return "yes" if (a / b <= 1.10 if lower else a / b >= 0.90) else "no"
print("| measure | dpsock IPv6 / IPv4 | within 10 % | preload IPv6 / IPv4 | within 10 % | kernel IPv6 / IPv4 | dpsock / kernel, IPv4 | dpsock / kernel, IPv6 | preload / kernel, IPv4 | preload / kernel, IPv6 |")
print("|---|---|---|---|---|---|---|---|---|---|")
for m, label, lower, fmt in rows:
    d4, d6, p4, p6, k4, k6 = (med((s, f, m)) for s, f in cols)
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        label, ratio(d6, d4), within(d6, d4, lower), ratio(p6, p4), within(p6, p4, lower),
        ratio(k6, k4), ratio(d4, k4), ratio(d6, k6), ratio(p4, k4), ratio(p6, k6)))
print("\nOn this AF_XDP port, without TSO or multi-segment mbufs, dpsock sends one MSS per frame")
print("for both families (tcp.segmentation = auto), and")
print("its GRO merges IPv4 and IPv6 segments alike (docs/running.md); an IPv6 header is 20")
print("bytes longer, a 1500-byte frame carries 1440 bytes of TCP payload against 1460. B's end")
print("of the veth has tx checksumming, TSO, GSO and GRO off (scripts/topo.sh: af_packet must")
print("see finished checksums) for both sides alike.")
if os.path.exists(fails) and os.path.getsize(fails):
    print("\nFailed: " + "; ".join(x.strip() for x in open(fails)))
print("\nEach round's figures: " + "; ".join(
    "%s IPv%s %s: %s" % (s, f, m, ", ".join("%g" % x for x in xs)) for (s, f, m), xs in sorted(v.items())))
PYEOF_IP6
cat "$out"
[ "$FAILED" = 0 ] || exit 1
exit 0
