#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/handoff.sh — the preload hand-off against the native stack, over
# memif (no kernel on the path): the same dpsock-loadgen (memif client, EAL
# -l 0, taskset -c 0) drives
#   native    dpsock-echo --raw (memif server, EAL -l 1, taskset -c 1)
#   preload   dpsockd (memif server, EAL -l 1, taskset -c 1) serving an
#             unmodified program under LD_PRELOAD=libdpsock_preload.so:
#               echo-epoll   test/perf/kernel_echo --wait epoll
#               echo-select  test/perf/kernel_echo --wait select
#               sockperf     sockperf server --tcp (loadgen --proto sockperf)
#               nginx        nginx, 1 worker, a 64-byte page (loadgen --proto http)
#             in two layouts: the program on the worker's CPU (1), and on
#             the other CPU (0, which it shares with the load generator,
#             which polls between replies and, told worker.yield = always,
#             yields to the program on every idle pass: this machine has
#             two CPUs, so no layout gives the program a core of its own).
# 64-byte request/response, 1 connection (p50, p99, p99.9, rate) and 16
# connections (rate); the median of ROUNDS runs, preload/native ratios, and
# the wake-ups each request cost (dpsockd's eventfd writes to the program,
# the program's to dpsockd's worker, per transaction).
#
#   test/perf/handoff.sh [--quick] [--rounds N] [--time S] [--out FILE]
#                        [--build DIR] [--only LIST] [--base-build DIR]
#
# --only: native, echo-epoll, echo-select, sockperf, nginx, syscalls
# (comma-separated).
# syscalls: the system calls each request costs, on the worker's CPU with
# one connection, in the program and in dpsockd apart (strace -c -f on
# both while dpsock-loadgen makes a fixed number of requests; counts per
# request, by call). --base-build DIR (another build, e.g. an earlier
# commit's from test/perf/ab.sh's build-ab/) adds its counts as "before".
# Writes a markdown report (default docs/perf/handoff.md, --quick: the build
# dir) and prints it. Exit 0 when every measurement ran, 1 when one failed
# (its row says so), 77 without root.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
only=,native,echo-epoll,echo-select,sockperf,nginx,syscalls, base_build=
perf_opt() {
	case "$1" in
	--only) only=,${2-},; PERF_TOOK=2 ;;
	--base-build) base_build=${2-}; PERF_TOOK=2 ;;
	*) return 1 ;;
	esac
}
# shellcheck source=perf_args.sh
. "$SELF_DIR/perf_args.sh"
perf_args handoff.md 3 4 "$@"
WARMUP=1.3 # loadgen loses its first second or so (ARP over a fresh memif link)

TEST_NAME=handoff-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd taskset python3
require_tools dpsockd dpsock-stat dpsock-echo dpsock-loadgen kernel_echo
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the load generator on CPU 0, the worker on CPU 1)"
require_preload
ECHO=$(dpsock_tool dpsock-echo)
LOADGEN=$(dpsock_tool dpsock-loadgen)
KECHO=$(dpsock_tool kernel_echo)
# shellcheck disable=SC2207
EAL=(--no-pci --log-level=lib.eal:error $(eal_mem_args))
SOCK=$TEST_TMP/memif.sock
SRV=${TEST_NAME}s
CLI=${TEST_NAME}c
ADDR=198.18.202.1
want() { [[ $only == *,$1,* ]]; }
RES=$TEST_TMP/res.tsv # target layout conns round rate p50 p99 p999 wake_per_tx
: >"$RES"
FAILED=0
failed() { note "FAILED: $*"; FAILED=1; echo "$*" >>"$TEST_TMP/failures"; }

printf 'name = "%s";\nruntime_dir = "%s";\ninterfaces = ( { port = "net_memif0"; address = "%s/24"; } );\n' \
	"$SRV" "$TEST_TMP" "$ADDR" >"$TEST_TMP/srv.conf"
# the load generator polls between replies and never sleeps in a run; in
# the "other" layout a program shares its CPU, of which its worker knows
# nothing: worker.yield = always has it yield on every idle pass (a native
# app never yields on its own: docs/preload.md)
for y in auto always; do
	printf 'name = "%s";\nworker = { idle_poll_us = 100000; yield = "%s"; };\ntcp = { ephemeral_min = 1024; ephemeral_max = 65535; };\ninterfaces = ( { port = "net_memif0"; address = "198.18.202.2/24"; } );\n' \
		"$CLI" "$y" >"$TEST_TMP/cli-$y.conf"
done
cp "$TEST_TMP/cli-auto.conf" "$TEST_TMP/cli.conf"

declare -A BG=()
bg_stop() { local p=${BG[$1]:-}; [ -n "$p" ] || return 0; kill -TERM "$p" 2>/dev/null
	poll_until 10 _lib_dead "$p" || kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; unset "BG[$1]"; }
bg_all() { local n; for n in "${!BG[@]}"; do bg_stop "$n"; done; }
on_exit bg_all
# stat_of [BUILD]: the dpsock-stat that reads BUILD's stats layout;
# stat_up NAME [BUILD]: it reads NAME's segment
stat_of() { if [ -n "${1:-}" ]; then echo "$1/dpsock-stat"; else echo "$DPSOCK_STAT"; fi; }
stat_up() { "$(stat_of "${2:-}")" -n "$1" >/dev/null 2>&1; }
wakes() { # dpsockd's wake-ups both ways so far
	local a b
	a=$(stat_read "$SRV" pl_wakeups 2>/dev/null || echo 0)
	b=$(stat_read "$SRV" wakeups 2>/dev/null || echo 0)
	echo $((a + b))
}

# server_start native|preload [BUILD]: the memif server on CPU 1, up when its
# stats answer (BUILD: another build's dpsockd)
server_start() {
	local bin=$ECHO extra=(--raw)
	[ "$1" = preload ] && { bin=${2:+$2/dpsockd}; bin=${bin:-$(dpsock_tool dpsockd)}; extra=(); }
	taskset -c 1 "$bin" -l 1 --file-prefix "$SRV" "${EAL[@]}" \
		"--vdev=net_memif0,role=server,socket=$SOCK,socket-abstract=no" \
		-- -f "$TEST_TMP/srv.conf" "${extra[@]}" >"$TEST_TMP/srv.log" 2>&1 </dev/null &
	BG[srv]=$!
	poll_until 30 stat_up "$SRV" "${2:-}" || { failed "$1 server did not start: $(tail -n 3 "$TEST_TMP/srv.log")"; return 1; }
}

# program_start NAME CPU [BUILD]: the unmodified program under the shim on
# CPU (BUILD: another build's shim and echo program)
program_start() {
	local name=$1 cpu=$2 lib=${3:+$3/libdpsock_preload.so} kecho=${3:+$3/test/perf/kernel_echo}
	local pre=(env "LD_PRELOAD=${lib:-$PRELOAD_LIB}" "DPSOCK_RUNTIME_DIR=$TEST_TMP"
		"DPSOCK_NAME=$SRV" "DPSOCK_LOG_FILE=$TEST_TMP/shim-%d.log")
	case "$name" in
	echo-epoll | echo-select)
		taskset -c "$cpu" "${pre[@]}" "${kecho:-$KECHO}" -p 11111 -a "$ADDR" --tcp-only \
			--wait "${name#echo-}" >"$TEST_TMP/prog.log" 2>&1 </dev/null & ;;
	sockperf)
		taskset -c "$cpu" "${pre[@]}" sockperf server --tcp -i "$ADDR" -p 11111 \
			>"$TEST_TMP/prog.log" 2>&1 </dev/null & ;;
	nginx)
		mkdir -p "$TEST_TMP/ngx/www" "$TEST_TMP/ngx/logs" "$TEST_TMP/ngx/tmp"
		head -c 64 /dev/zero | tr '\0' x >"$TEST_TMP/ngx/www/p64"
		cat >"$TEST_TMP/ngx/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1; user root;
pid $TEST_TMP/ngx/nginx.pid; error_log $TEST_TMP/ngx/logs/error.log;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $TEST_TMP/ngx/tmp/b; proxy_temp_path $TEST_TMP/ngx/tmp/p;
  fastcgi_temp_path $TEST_TMP/ngx/tmp/f; uwsgi_temp_path $TEST_TMP/ngx/tmp/u; scgi_temp_path $TEST_TMP/ngx/tmp/s;
  keepalive_requests 10000000; tcp_nodelay on;
  server { listen $ADDR:11111; root $TEST_TMP/ngx/www; } }
EOF
		taskset -c "$cpu" "${pre[@]}" nginx -p "$TEST_TMP/ngx" -c "$TEST_TMP/ngx/nginx.conf" \
			>"$TEST_TMP/prog.log" 2>&1 </dev/null & ;;
	esac
	BG[prog]=$!
	# listening through dpsockd: its listener shows in the socket view
	poll_until 20 bash -c "\"$(stat_of "${3:-}")\" -n $SRV -v sockets 2>/dev/null | grep -q '*:11111 .*LISTEN'" ||
		{ failed "$name did not listen: $(tail -n 3 "$TEST_TMP/prog.log")"; return 1; }
}

# run TARGET LAYOUT CONNS ROUND PROTO: one loadgen run; a result row
run() {
	local target=$1 layout=$2 conns=$3 round=$4 proto=$5 log=$TEST_TMP/lg.log line w0 w1 tx
	w0=$(wakes)
	taskset -c 0 "$LOADGEN" -l 0 --file-prefix "$CLI" "${EAL[@]}" \
		"--vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no" \
		-- -f "$TEST_TMP/cli.conf" -d "$ADDR" -p 11111 -m rr -c "$conns" -s 64 \
		--proto "$proto" --path /p64 -t "$secs" >"$log" 2>&1 </dev/null
	w1=$(wakes)
	line=$(grep '^loadgen: total' "$log")
	tx=$(sed -n 's/.* transactions=\([0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$line" ] || [ "${tx:-0}" = 0 ] || ! grep -q ' errors=0 ' <<<"$line"; then
		failed "$target $layout c=$conns round $round: $(tail -n 2 "$log" | tr '\n' ' ')"
		return
	fi
	kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line" | sed 's,/s$,,'; }
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$layout" "$conns" "$round" \
		"$(kv rate)" "$(kv p50_us)" "$(kv p99_us)" "$(kv p999_us)" \
		"$(awk -v a="$w0" -v b="$w1" -v t="$tx" 'BEGIN { printf "%.2f", (b - a) / t }')" >>"$RES"
	note "$target $layout c=$conns round $round: rate $(kv rate)/s p50 $(kv p50_us) us, wake-ups/tx $(tail -n 1 "$RES" | cut -f9)"
}

note "handoff: $rounds round(s), ${secs}s per run, report $out"
for r in $(seq 1 "$rounds"); do
	if want native && server_start native; then
		for c in 1 16; do run native - "$c" "$r" echo; done
		bg_stop srv
	fi
	for prog in echo-epoll echo-select sockperf nginx; do
		want "$prog" || continue
		case "$prog" in sockperf) command -v sockperf >/dev/null || { failed "sockperf not installed"; continue; } ;;
		nginx) command -v nginx >/dev/null || { failed "nginx not installed"; continue; } ;; esac
		proto=echo
		[ "$prog" = sockperf ] && proto=sockperf
		[ "$prog" = nginx ] && proto=http
		for layout in same other; do
			cpu=1
			[ "$layout" = other ] && cpu=0
			server_start preload || continue
			if program_start "$prog" "$cpu"; then
				y=auto
				[ "$layout" = other ] && y=always
				cp "$TEST_TMP/cli-$y.conf" "$TEST_TMP/cli.conf"
				for c in 1 16; do run "$prog" "$layout" "$c" "$r" "$proto"; done
				cp "$TEST_TMP/cli-auto.conf" "$TEST_TMP/cli.conf"
			fi
			bg_stop prog
			bg_stop srv
		done
	done
done

# ---- system calls per request ------------------------------------------------
# syscalls_of LABEL BUILD PROG PROTO: strace -c -f on the program and on
# dpsockd (both on CPU 1) while loadgen makes SC_N requests on one
# connection; rows "LABEL PROG program|dpsockd CALL PER_REQUEST" in SYS
SC_N=20000
SYS=$TEST_TMP/sys.tsv
: >"$SYS"
syscalls_of() {
	local label=$1 b=$2 prog=$3 proto=$4 s1 s2 side
	server_start preload "$b" || return
	if program_start "$prog" 1 "$b"; then
		strace -c -f -q -o "$TEST_TMP/st-program" -p "${BG[prog]}" 2>/dev/null & s1=$!
		strace -c -f -q -o "$TEST_TMP/st-dpsockd" -p "${BG[srv]}" 2>/dev/null & s2=$!
		sleep 1 # attached (strace stops and resumes every thread)
		if taskset -c 0 "$LOADGEN" -l 0 --file-prefix "$CLI" "${EAL[@]}" \
			"--vdev=net_memif0,role=client,socket=$SOCK,socket-abstract=no" \
			-- -f "$TEST_TMP/cli.conf" -d "$ADDR" -p 11111 -m rr -c 1 -s 64 --proto "$proto" \
			--path /p64 -n "$SC_N" -t 120 >"$TEST_TMP/lg-sys.log" 2>&1 </dev/null; then
			kill -INT "$s1" "$s2" 2>/dev/null
			wait "$s1" "$s2" 2>/dev/null
			for side in program dpsockd; do
				# strace -c: "% time seconds usecs/call calls [errors] syscall"
				awk -v l="$label" -v p="$prog" -v s="$side" -v n="$SC_N" \
					'$NF ~ /^[a-z_0-9]+$/ && $NF != "total" && $4 ~ /^[0-9]+$/ {
						printf "%s\t%s\t%s\t%s\t%.2f\n", l, p, s, $NF, $4 / n }' \
					"$TEST_TMP/st-$side" >>"$SYS"
			done
		else
			kill -INT "$s1" "$s2" 2>/dev/null
			wait "$s1" "$s2" 2>/dev/null
			failed "syscalls $label $prog: $(tail -n 2 "$TEST_TMP/lg-sys.log" | tr '\n' ' ')"
		fi
	fi
	bg_stop prog
	bg_stop srv
}
if want syscalls && command -v strace >/dev/null; then
	for prog in echo-epoll echo-select sockperf nginx; do
		proto=echo
		[ "$prog" = sockperf ] && proto=sockperf
		[ "$prog" = nginx ] && proto=http
		command -v "${prog#echo-*}" >/dev/null 2>&1 || [ "${prog%%-*}" = echo ] || continue
		[ -z "$base_build" ] || syscalls_of before "$base_build" "$prog" "$proto"
		syscalls_of now "" "$prog" "$proto"
	done
elif want syscalls; then
	failed "strace is not installed: no system call counts"
fi

# the builds by commit, never by the path they sit at on this machine
build_commit() {
	local src
	src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
		"$1/meson-info/meson-info.json" 2>/dev/null) &&
		git -C "$src" describe --always --dirty --abbrev=12 2>/dev/null || echo "a build of unknown commit"
}
base_desc=
[ -z "$base_build" ] || base_desc="commit $(build_commit "$base_build"), now commit $(build_commit "$build")"
mkdir -p "$(dirname "$out")"
python3 - "$RES" "$out" "$rounds" "$secs" "$(cut -d' ' -f1-3 /proc/loadavg)" "$TEST_TMP/failures" \
	"$SYS" "$SC_N" "$base_desc" <<'PY'
import statistics, sys, os
res, out, rounds, secs, load, fails, sysf, scn, base = sys.argv[1:10]
rows = {}
for l in open(res):
    t, lay, c, r, rate, p50, p99, p999, wk = l.rstrip('\n').split('\t')
    rows.setdefault((t, lay, int(c)), []).append(
        dict(rate=float(rate), p50=float(p50), p99=float(p99), p999=float(p999), wk=float(wk)))
def med(k, key):
    v = [x[key] for x in rows.get(k, [])]
    return statistics.median(v) if v else None
def f(v, fmt='%.1f'):
    return '—' if v is None else fmt % v
nat1, nat16 = med(('native', '-', 1), 'rate'), med(('native', '-', 16), 'rate')
natp50 = med(('native', '-', 1), 'p50')
L = []
L.append('# The preload hand-off against the native stack (memif)\n')
L.append('`test/perf/handoff.sh`: dpsock-loadgen (memif client, CPU 0) sends 64-byte requests; '
         'the server is dpsock-echo (native) or dpsockd (worker on CPU 1) with an unmodified program '
         'under the preload, on the worker\'s CPU (**same**) or on CPU 0 with the load generator '
         '(**other**). Median of %s run(s) of %s s; load average at the end: %s.\n' % (rounds, secs, load))
L.append('| server | program on | 1 conn p50 µs | p99 µs | p99.9 µs | 1 conn rate /s | 16 conns rate /s | '
         'p50 − native p50 | 1 conn rate / native | 16 conns rate / native | wake-ups per request (1 conn) |')
L.append('|---|---|---|---|---|---|---|---|---|---|---|')
order = [('native', '-')] + [(t, l) for t in ('echo-epoll', 'echo-select', 'sockperf', 'nginx')
                             for l in ('same', 'other')]
for t, lay in order:
    k1, k16 = (t, lay, 1), (t, lay, 16)
    if k1 not in rows and k16 not in rows:
        continue
    p50, r1, r16 = med(k1, 'p50'), med(k1, 'rate'), med(k16, 'rate')
    L.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
        'dpsock-echo (native)' if t == 'native' else t, '—' if lay == '-' else lay,
        f(p50, '%.2f'), f(med(k1, 'p99'), '%.2f'), f(med(k1, 'p999'), '%.2f'), f(r1, '%.0f'),
        f(r16, '%.0f'),
        '—' if t == 'native' or p50 is None or natp50 is None else '%+.2f' % (p50 - natp50),
        '—' if t == 'native' or r1 is None or not nat1 else '%.2f×' % (r1 / nat1),
        '—' if t == 'native' or r16 is None or not nat16 else '%.2f×' % (r16 / nat16),
        f(med(k1, 'wk'), '%.2f')))
L.append('')
if os.path.exists(fails) and os.path.getsize(fails):
    L.append('Not measured: ' + '; '.join(x.strip() for x in open(fails)) + '\n')
L.append('sockperf and nginx speak other protocols than the echo programs (a sockperf message, an HTTP '
         'request and its ~250-byte response): compare their rows with each other across layouts, and the '
         'echo rows with the native echo.')
sysrows = {}
for l in open(sysf):
    lab, prog, side, call, per = l.rstrip('\n').split('\t')
    sysrows.setdefault((prog, side), {}).setdefault(lab, {})[call] = float(per)
if sysrows:
    L.append('\n## System calls per request\n')
    L.append('The program on the worker\'s CPU, one connection: `strace -c -f` on the program and on '
             'dpsockd while dpsock-loadgen makes %s requests (strace slows both: the counts, not the '
             'rates, are what this measures).%s Calls under 0.01 per request are left out.\n' % (
                 scn, ' **before**: %s.' % base if base else ''))
    labs = ['before', 'now'] if base else ['now']
    L.append('| program | process | ' + ' | '.join('%s: calls per request' % x for x in labs) +
             ' | ' + ' | '.join('%s: total' % x for x in labs) + ' |')
    L.append('|---|---|' + '---|' * (2 * len(labs)))
    for prog in ('echo-epoll', 'echo-select', 'sockperf', 'nginx'):
        for side in ('program', 'dpsockd'):
            d = sysrows.get((prog, side))
            if not d:
                continue
            cells = []
            for x in labs:
                calls = d.get(x, {})
                cells.append(', '.join('%s %.2f' % (c, v) for c, v in sorted(calls.items(), key=lambda i: -i[1])
                                       if v >= 0.01) or '—')
            tot = ['%.2f' % sum(v for v in d.get(x, {}).values() if v >= 0.01) if x in d else '—' for x in labs]
            L.append('| %s | %s | %s | %s |' % (prog, side, ' | '.join(cells), ' | '.join(tot)))
open(out, 'w').write('\n'.join(L) + '\n')
print('\n'.join(L))
PY
[ "$FAILED" = 0 ] || exit 1
exit 0
