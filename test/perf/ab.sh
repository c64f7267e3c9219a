#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/ab.sh — the hot path of two builds, side by side in one run:
# BASE (any git ref, built in a worktree beside the tree) against the
# working tree's build, interleaved round by round, so that the noise of
# this shared machine hits both alike. Use it on every change to the worker
# loop, lwIP, the netif or the shim's data path, and quote its table.
#
#   test/perf/ab.sh BASE [--rounds N] [--time S] [--only LIST] [--build DIR]
#                        [--out FILE] [--keep]
#
# What it measures (2 CPUs: CPU 0 the client, CPU 1 the server, always):
#   native   dpsock-echo --raw (memif server, EAL -l 1, taskset -c 1) driven
#            by dpsock-loadgen (memif client, EAL -l 0, taskset -c 0), both
#            polling while loaded (worker.idle_poll_us = 100 ms): 64 B
#            request/response with 1 connection (p50, rate) and 16 (rate),
#            connection churn (16 at a time, rate), single-stream bulk
#            (Gbit/s), and UDP request/response with 1 socket (p50, rate)
#            where both builds' loadgen has `-m udp`.
#   sockperf unmodified `sockperf sr` under LD_PRELOAD with dpsockd on
#            net_af_xdp (one queue), both on CPU 1 in namespace A; `sockperf
#            pp -m 64` from namespace B on CPU 0: p50, UDP and TCP; and the
#            same sockperf on A's kernel in the same run (kernel column).
#   handoff  dpsockd (memif server, CPU 1) with an unmodified epoll echo
#            (test/perf/kernel_echo --wait epoll) preloaded on the worker's
#            CPU, driven by dpsock-loadgen: 1 connection (p50, rate), 16
#            (rate), and each build's handoff rate over its own native rate.
# --only: native, sockperf, handoff (comma-separated; default all).
# --listen ADDR: the handoff rows' preloaded echo listens on ADDR (default:
# dpsockd's address; 0.0.0.0 gives the listener its kernel half).
#
# Each figure is the median of the rounds; the ratio is the working tree's
# median over BASE's, with "better" saying which way is good. Where a
# metric's rounds (both sides pooled) fall in two modes, more than 15 %
# apart (some hosts of this VM have them), the table also counts each side's rounds in the
# fast mode and gives the ratio within each mode. The table goes to stdout
# and to --out (default BUILD/ab/<base>-vs-<head>.md).
#
# BASE's worktree is BUILD_AB/<sha> (default <source>/build-ab/<sha>: beside
# the tree, ignored by git), built once with meson; the lwIP source comes
# from the tree's .deps. --keep leaves nothing behind but the build-ab folder
# either way (the worktree is kept to save the next build; remove it with
# `git worktree remove`).
#
# Exit 0 when every measurement ran, 1 when one failed (its row says so), 2
# on bad options, 77 without root.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$SELF_DIR/../.." && pwd)
base_ref= rounds=5 secs=4 only=,native,sockperf,handoff, out= build=${DPSOCK_BUILD:-} listen=
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--time) secs=$2; shift ;;
	--only) only=,$2,; shift ;;
	--listen) listen=$2; shift ;;
	--build) build=$2; shift ;;
	--out) out=$2; shift ;;
	--keep) ;;
	-h | --help) sed -n '3,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "ab.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
	*) [ -z "$base_ref" ] || { echo "ab.sh: one BASE only" >&2; exit 2; }; base_ref=$1 ;;
	esac
	shift
done
[ -n "$base_ref" ] || { echo "ab.sh: which BASE? (a git ref; try --help)" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "ab.sh: --rounds wants a positive number" >&2; exit 2; }
[[ $secs =~ ^[1-9][0-9]*$ ]] && [ "$secs" -ge 3 ] || { echo "ab.sh: --time wants 3 s or more" >&2; exit 2; }
[ -n "$build" ] || build=$SRC/build
base_sha=$(git -C "$SRC" rev-parse --verify -q "$base_ref^{commit}") ||
	{ echo "ab.sh: '$base_ref' is not a commit of $SRC" >&2; exit 2; }
head_desc=$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo tree)
[ -n "$out" ] || out=$build/ab/${base_sha:0:12}-vs-$head_desc.md

TEST_NAME=ab-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd taskset python3 git meson ninja
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the client on CPU 0, the server on CPU 1)"

# ---- the two builds ----------------------------------------------------------

ab_dir=${BUILD_AB:-$SRC/build-ab}/$base_sha
if [ ! -f "$ab_dir/build/build.ninja" ]; then
	note "building BASE ${base_sha:0:12} in $ab_dir"
	mkdir -p "$(dirname "$ab_dir")"
	[ -d "$ab_dir/.git" ] || [ -f "$ab_dir/.git" ] ||
		git -C "$SRC" worktree add --detach "$ab_dir" "$base_sha" >/dev/null 2>&1 ||
		fail "git worktree add $ab_dir $base_sha failed"
	[ -e "$ab_dir/.deps" ] || ln -s "$SRC/.deps" "$ab_dir/.deps"
	meson setup "$ab_dir/build" "$ab_dir" >"$TEST_TMP/base-setup.log" 2>&1 ||
		fail "meson setup of BASE failed: $(tail -n 5 "$TEST_TMP/base-setup.log")"
fi
ninja -C "$ab_dir/build" >"$TEST_TMP/base-build.log" 2>&1 ||
	fail "building BASE failed: $(tail -n 5 "$TEST_TMP/base-build.log")"
ninja -C "$build" >"$TEST_TMP/head-build.log" 2>&1 ||
	fail "building the working tree failed: $(tail -n 5 "$TEST_TMP/head-build.log")"

# tool SIDE NAME: a built program of one side (base or head).
tool() {
	local b=$build f
	[ "$1" = base ] && b=$ab_dir/build
	for f in "$b/$2" "$b/test/perf/$2" "$b/test/tools/$2"; do
		[ -x "$f" ] && { echo "$f"; return 0; }
	done
	f=$(find "$b" -maxdepth 3 -type f -name "$2" 2>/dev/null | head -n 1)
	[ -n "$f" ] && { echo "$f"; return 0; }
	return 1
}
for side in base head; do
	for t in dpsockd dpsock-echo dpsock-loadgen dpsock-stat libdpsock_preload.so kernel_echo; do
		tool "$side" "$t" >/dev/null || fail "$side build has no $t"
	done
done

# shellcheck disable=SC2207
EAL=(--no-pci --log-level=lib.eal:error $(eal_mem_args))
RES=$TEST_TMP/res.tsv # metric side round value
: >"$RES"
FAILED=0
failed() { note "FAILED: $*"; FAILED=1; echo "$*" >>"$TEST_TMP/failures"; }
want() { [[ $only == *,$1,* ]]; }
result() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RES"; }
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1" | sed 's,/s$,,'; }

declare -A BG=()
bg_stop() { local p=${BG[$1]:-}; [ -n "$p" ] || return 0; kill -TERM "$p" 2>/dev/null
	poll_until 10 _lib_dead "$p" || kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; unset "BG[$1]"; }
bg_all() { local n; for n in "${!BG[@]}"; do bg_stop "$n"; done; }
on_exit bg_all
# stat_up SIDE NAME: that side's dpsock-stat reads NAME's segment (each
# build reads its own stats layout)
stat_up() { "$(tool "$1" dpsock-stat)" -n "$2" >/dev/null 2>&1; }

SOCK=$TEST_TMP/memif.sock
SRV=${TEST_NAME}s
CLI=${TEST_NAME}c
MADDR=198.18.204.1
printf 'name = "%s";\nruntime_dir = "%s";\nworker = { idle_poll_us = 100000; };\ninterfaces = ( { port = "net_memif0"; address = "%s/24"; } );\n' \
	"$SRV" "$TEST_TMP" "$MADDR" >"$TEST_TMP/srv-native.conf"
printf 'name = "%s";\nruntime_dir = "%s";\ninterfaces = ( { port = "net_memif0"; address = "%s/24"; } );\n' \
	"$SRV" "$TEST_TMP" "$MADDR" >"$TEST_TMP/srv-daemon.conf"
printf 'name = "%s";\nworker = { idle_poll_us = 100000; };\ntcp = { ephemeral_min = 1024; ephemeral_max = 65535; };\ninterfaces = ( { port = "net_memif0"; address = "198.18.204.2/24"; } );\n' \
	"$CLI" >"$TEST_TMP/cli.conf"

# memif_server SIDE native|daemon: dpsock-echo --raw or dpsockd on CPU 1
memif_server() {
	local bin extra=() conf=$TEST_TMP/srv-$2.conf
	if [ "$2" = native ]; then bin=$(tool "$1" dpsock-echo); extra=(--raw); else bin=$(tool "$1" dpsockd); fi
	rm -f "$SOCK"
	taskset -c 1 "$bin" -l 1 --file-prefix "$SRV" "${EAL[@]}" \
		"--vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no" \
		-- -f "$conf" "${extra[@]}" >"$TEST_TMP/srv.log" 2>&1 </dev/null &
	BG[srv]=$!
	poll_until 30 stat_up "$1" "$SRV" || { failed "$1 $2 server did not start: $(tail -n 3 "$TEST_TMP/srv.log")"; bg_stop srv; return 1; }
}

# loadgen SIDE MODE CONNS: one run against the memif server; the total line
loadgen() {
	local log=$TEST_TMP/lg.log
	taskset -c 0 "$(tool "$1" dpsock-loadgen)" -l 0 --file-prefix "$CLI" "${EAL[@]}" \
		"--vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no" \
		-- -f "$TEST_TMP/cli.conf" -d "$MADDR" -p 11111 -m "$2" -c "$3" -s 64 -t "$secs" \
		>"$log" 2>&1 </dev/null
	grep '^loadgen: total' "$log" || { tail -n 2 "$log" | tr '\n' ' ' >&2; return 1; }
}

# lg_row SIDE ROUND METRIC_PREFIX MODE CONNS WHAT...: one loadgen run whose
# fields WHAT (rate, p50, gbps) become rows METRIC_PREFIX_WHAT
lg_row() {
	local side=$1 r=$2 m=$3 mode=$4 c=$5 line w
	shift 5
	line=$(loadgen "$side" "$mode" "$c" 2>"$TEST_TMP/lg.err")
	# churn's connects may fail under TIME_WAIT pressure and UDP may lose
	# a datagram: counted in the note, not a failed run (as run-all)
	local strict=0
	case "$mode" in rr | bulk) strict=1 ;; esac
	if [ -z "$line" ] || [ "$(kv "$line" transactions)$(kv "$line" bytes_tx)" = 00 ] ||
		{ [ "$strict" = 1 ] && [ "$(kv "$line" errors)" != 0 ]; }; then
		failed "$side $m round $r: ${line:-$(cat "$TEST_TMP/lg.err")}"
		return 1
	fi
	for w in "$@"; do
		case "$w" in
		rate) result "${m}_rate" "$side" "$r" "$(kv "$line" rate)" ;;
		p50) result "${m}_p50" "$side" "$r" "$(kv "$line" p50_us)" ;;
		gbps) result "${m}_gbps" "$side" "$r" "$(awk -v m="$(kv "$line" tx_mbit_s)" 'BEGIN { printf "%.3f", m / 1000 }')" ;;
		esac
	done
	note "$side $m round $r: rate $(kv "$line" rate)/s p50 $(kv "$line" p50_us) us errors $(kv "$line" errors)"
}

has_udp_mode() { "$(tool "$1" dpsock-loadgen)" -- --help 2>&1 | grep -q 'udp'; }

# native_row SIDE ROUND lg_row's arguments: one loadgen run against a
# dpsock-echo started for it (DPDK 22.11's memif server can crash in
# rx_burst when a client goes away: docs/running.md)
native_row() {
	memif_server "$1" native || return
	lg_row "$@"
	bg_stop srv
}

native_round() { # SIDE ROUND
	native_row "$1" "$2" rr1 rr 1 p50 rate
	native_row "$1" "$2" rr16 rr 16 rate
	native_row "$1" "$2" churn16 churn 16 rate
	native_row "$1" "$2" bulk bulk 1 gbps
	if has_udp_mode base && has_udp_mode head; then
		native_row "$1" "$2" udp1 udp 1 p50 rate
	fi
}

handoff_round() { # SIDE ROUND
	memif_server "$1" daemon || return
	taskset -c 1 env "LD_PRELOAD=$(tool "$1" libdpsock_preload.so)" "DPSOCK_RUNTIME_DIR=$TEST_TMP" \
		"DPSOCK_NAME=$SRV" "$(tool "$1" kernel_echo)" -p 11111 -a "${listen:-$MADDR}" --tcp-only --wait epoll \
		>"$TEST_TMP/prog.log" 2>&1 </dev/null &
	BG[prog]=$!
	if poll_until 20 bash -c "\"$(tool "$1" dpsock-stat)\" -n $SRV -v sockets 2>/dev/null | grep -q '*:11111 .*LISTEN'"; then
		lg_row "$1" "$2" handoff1 rr 1 p50 rate
		lg_row "$1" "$2" handoff16 rr 16 rate
	else
		failed "$1 handoff: the preloaded echo did not listen: $(tail -n 3 "$TEST_TMP/prog.log")"
	fi
	bg_stop prog
	bg_stop srv
}

# ---- sockperf under the preload on AF_XDP ---------------------------------------

sp_pp() { # SIDE ROUND PROTO: sockperf pp from B; row sp_PROTO_p50
	local tcp=() out p50
	[ "$3" = tcp ] && tcp=(--tcp)
	out=$(timeout $((secs + 30)) ip netns exec "$TOPO_NS_B" taskset -c 0 sockperf pp -i "$TOPO_ADDR_A" \
		-p 11111 "${tcp[@]}" -m 64 -t "$secs" 2>&1)
	p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' <<<"$out")
	[ -n "$p50" ] || { failed "$1 sockperf pp $3 round $2: $(grep -m1 -i 'error\|summary' <<<"$out")"; return; }
	result "sp_$3_p50" "$1" "$2" "$p50"
	note "$1 sockperf pp $3 round $2: p50 $p50 us"
}

sp_server() { # SIDE PROTO: sockperf sr in A on CPU 1, preloaded unless SIDE is kernel
	local tcp=() pre=()
	[ "$2" = tcp ] && tcp=(--tcp)
	[ "$1" = kernel ] || pre=(env "LD_PRELOAD=$(tool "$1" libdpsock_preload.so)" "DPSOCK_RUNTIME_DIR=$TEST_TMP" "DPSOCK_NAME=$SP")
	ip netns exec "$TOPO_NS_A" taskset -c 1 "${pre[@]}" sockperf sr -i 0.0.0.0 -p 11111 "${tcp[@]}" \
		>"$TEST_TMP/sp-$1.log" 2>&1 </dev/null &
	BG[sp]=$!
	if [ "$2" = tcp ]; then
		poll_until 20 ip netns exec "$TOPO_NS_B" bash -c "exec 3<>/dev/tcp/$TOPO_ADDR_A/11111" 2>/dev/null
	else
		sleep 1
	fi
}

sockperf_round() { # SIDE ROUND
	local proto
	if [ "$1" = kernel ]; then
		ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/24" dev "$TOPO_IF_A"
	else
		in_a_bpffs
		# shellcheck disable=SC2046
		"${IN_A_BPFFS[@]}" taskset -c 1 "$(tool "$1" dpsockd)" -l 1 --file-prefix "$SP" "${EAL[@]}" \
			$(TEST_PMD=af_xdp test_vdevs 1) -- -f "$TEST_TMP/sp.conf" >"$TEST_TMP/sp-d.log" 2>&1 </dev/null &
		BG[spd]=$!
		poll_until 30 stat_up "$1" "$SP" || { failed "$1 dpsockd on af_xdp did not start: $(tail -n 3 "$TEST_TMP/sp-d.log")"; bg_stop spd; return; }
	fi
	for proto in udp tcp; do
		sp_server "$1" "$proto"
		sp_pp "$1" "$2" "$proto"
		bg_stop sp
	done
	if [ "$1" = kernel ]; then
		ip -n "$TOPO_NS_A" addr del "$TOPO_ADDR_A/24" dev "$TOPO_IF_A"
		ip -n "$TOPO_NS_B" neigh flush dev "$TOPO_IF_B" 2>/dev/null
	else
		bg_stop spd
	fi
}

SP=${TEST_NAME}x
if want sockperf; then
	if ! command -v sockperf >/dev/null; then
		failed "sockperf is not installed (scripts/setup installs it)"
		only=${only//,sockperf,/,}
	elif [ -n "$(_lib_af_xdp_why)" ]; then
		failed "sockperf rows need net_af_xdp: $(_lib_af_xdp_why)"
		only=${only//,sockperf,/,}
	else
		test_topo_up 204 "$TEST_NAME"
		printf 'name = "%s";\nruntime_dir = "%s";\ninterfaces = ( { port = "net_af_xdp0"; address = "%s/24"; } );\n' \
			"$SP" "$TEST_TMP" "$TOPO_ADDR_A" >"$TEST_TMP/sp.conf"
	fi
fi

note "ab: BASE ${base_sha:0:12} ($base_ref) against the working tree ($head_desc), $rounds round(s) of ${secs}s runs"
for r in $(seq 1 "$rounds"); do
	# alternate which build goes first, so that a drift of the machine
	# within a round does not always favour the same side
	order=(base head)
	[ $((r % 2)) = 0 ] && order=(head base)
	for s in "${order[@]}"; do
		want native && native_round "$s" "$r"
		want handoff && handoff_round "$s" "$r"
		want sockperf && sockperf_round "$s" "$r"
	done
	want sockperf && sockperf_round kernel "$r"
done

mkdir -p "$(dirname "$out")"
python3 - "$RES" "$out" "$base_ref" "${base_sha:0:12}" "$head_desc" "$rounds" "$secs" \
	"$(cut -d' ' -f1-3 /proc/loadavg)" "$TEST_TMP/failures" "${listen:-}" <<'PY'
import os, statistics, sys
res, out, ref, sha, head, rounds, secs, load, fails, listen = sys.argv[1:11]
vals = {}
for line in open(res):
    m, side, r, v = line.rstrip('\n').split('\t')
    try:
        vals.setdefault(m, {}).setdefault(side, []).append(float(v))
    except ValueError:
        pass
rows = [  # metric, label, unit, higher is better
    ('rr1_p50', 'native rr 64 B, 1 conn, p50', 'µs', False),
    ('rr1_rate', 'native rr 64 B, 1 conn, rate', '/s', True),
    ('rr16_rate', 'native rr 64 B, 16 conns, rate', '/s', True),
    ('churn16_rate', 'native churn, 16 at a time, conns/s', '/s', True),
    ('bulk_gbps', 'native bulk, 1 stream', 'Gbit/s', True),
    ('udp1_p50', 'native UDP rr 64 B, 1 socket, p50', 'µs', False),
    ('udp1_rate', 'native UDP rr 64 B, 1 socket, rate', '/s', True),
    ('handoff1_p50', 'handoff echo-epoll (same CPU), 1 conn, p50', 'µs', False),
    ('handoff1_rate', 'handoff echo-epoll (same CPU), 1 conn, rate', '/s', True),
    ('handoff16_rate', 'handoff echo-epoll (same CPU), 16 conns, rate', '/s', True),
    ('sp_udp_p50', 'preloaded sockperf pp UDP 64 B (AF_XDP, same CPU), p50', 'µs', False),
    ('sp_tcp_p50', 'preloaded sockperf pp TCP 64 B (AF_XDP, same CPU), p50', 'µs', False),
]
def med(m, s):
    v = vals.get(m, {}).get(s)
    return statistics.median(v) if v else None
def fmt(x):
    if x is None: return '—'
    return f'{x:,.0f}'.replace(',', ' ') if x >= 1000 else f'{x:.3g}' if x < 10 else f'{x:.1f}'
def spread(m, s):
    v = vals.get(m, {}).get(s)
    return f' ({fmt(min(v))}–{fmt(max(v))})' if v and len(v) > 1 else ''
# Modes. On a shared VM a run can land in one of two machine states (one
# CPU steal pattern or the other) for base and head alike, and the median
# of a few rounds then follows how many rounds each side drew in the fast
# one. Pool both sides' values of a metric, cut at the widest gap between
# neighbours when it exceeds MODE_GAP, and compare like with like: the
# working tree's median over BASE's within the fast mode (and within the
# slow one). When one side never reaches the other's mode, the split is the
# change itself, not the machine: the plain ratio stands.
MODE_GAP = 1.15
def modes(m, hib):
    b, h = vals.get(m, {}).get('base', []), vals.get(m, {}).get('head', [])
    pool = sorted(v for v in b + h if v > 0)
    if len(pool) < 4:
        return None
    gap, cut = max((pool[i + 1] / pool[i], (pool[i + 1] * pool[i]) ** 0.5) for i in range(len(pool) - 1))
    if gap <= MODE_GAP:
        return None
    fast = (lambda v: v > cut) if hib else (lambda v: v < cut)
    fb, fh = [v for v in b if fast(v)], [v for v in h if fast(v)]
    sb, sh = [v for v in b if not fast(v)], [v for v in h if not fast(v)]
    r = lambda x, y: f'{statistics.median(y) / statistics.median(x):.2f}×' if x and y else '—'
    return f'{len(fb)}/{len(b)}, {len(fh)}/{len(h)}', r(fb, fh), r(sb, sh)
L = []
L.append(f'# ab.sh: {head} against {ref} ({sha})\n')
L.append(f'{rounds} round(s) of {secs} s runs, interleaved; medians (min–max); load average at the end {load}. '
         'ratio = working tree / BASE; "better" says which way is good.' +
         (f' The handoff echo listens on {listen} (--listen).' if listen else '') + '\n')
L.append('| metric | BASE | working tree | ratio | better | fast-mode rounds (BASE, tree) | ratio in fast mode | in slow mode | kernel (same run) |')
L.append('|---|---|---|---|---|---|---|---|---|')
split = []
for m, label, unit, hib in rows:
    b, h = med(m, 'base'), med(m, 'head')
    if b is None and h is None:
        continue
    ratio = f'{h / b:.2f}×' if b and h else '—'
    k = med(m, 'kernel')
    md = modes(m, hib)
    if md:
        split.append(label)
    L.append(f'| {label} ({unit}) | {fmt(b)}{spread(m, "base")} | {fmt(h)}{spread(m, "head")} | {ratio} | '
             f'{"higher" if hib else "lower"} | {" | ".join(md) if md else "one mode | — | —"} | '
             f'{fmt(k) + spread(m, "kernel") if k is not None else "—"} |')
if split:
    L.append(f'\nTwo modes (a gap of more than {round((MODE_GAP - 1) * 100)} % between the pooled rounds) in: '
             + '; '.join(split) + '. Where both sides reach a mode, read the ratio within it; '
             'where one side never does, the modes are the change and the plain ratio stands.')
for s in ('base', 'head'):
    for m in ('handoff1_rate', 'handoff16_rate'):
        n, x = med(m.replace('handoff', 'rr'), s), med(m, s)
        if n and x:
            L.append(f'\n{"BASE" if s == "base" else "working tree"}: {m} / native = {x / n:.2f}×')
for s in ('base', 'head'):
    for p in ('udp', 'tcp'):
        x, k = med(f'sp_{p}_p50', s), med(f'sp_{p}_p50', 'kernel')
        if x and k:
            L.append(f'\n{"BASE" if s == "base" else "working tree"}: sockperf {p} p50 / kernel = {x / k:.2f}×')
if os.path.exists(fails):
    L.append('\nFailed measurements:\n')
    L += ['- ' + l.strip() for l in open(fails)]
text = '\n'.join(L) + '\n'
open(out, 'w').write(text)
print(text)
PY
note "report: $out"
exit "$FAILED"
