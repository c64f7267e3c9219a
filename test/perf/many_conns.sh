#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/many_conns.sh — thousands of connections under the preload,
# against the same programs on the kernel, in one run, round by round:
#
#   nginx    Debian's nginx (ceil(N / 12500) worker processes, 20000
#            descriptors each), wrk -t1 from ceil(N / 12500) processes with
#            N connections in all, keep-alive, a 64-byte page: requests/s
#            (their sum), p99 (the largest of the processes'), errors
#            (socket errors and non-2xx responses)
#   redis    redis-server (ceil(N / 12500) instances, one port each: a
#            process holds at most 20000 descriptors here) and as many
#            redis-benchmark -t get, N clients in all: requests/s, p99,
#            errors
#   for N = 100, 1000, 10000 and 50000 (--quick: 100 and 10000), each
#   with, during the load:
#     memory per connection: the rise, from before the clients connected,
#       of the kernel's slab (both ends' sockets; preloaded: the client's
#       and the server's kernel socket, the identity of each offloaded
#       one), the server processes' anonymous memory, and for dpsock
#       dpsockd's anonymous memory, its group segments' pages
#       (test/tools/pl_segmap.py) and lwIP's allocator (lwip_mem_bytes),
#       divided by N
#     worker CPU: dpsockd's CPU time over the run, in % of one CPU
#   idle     N_IDLE = 50000 connections (--quick: 10000) held open and
#            idle by test/perf/kernel_load -m idle (several processes)
#            against dpsock-echo (native), kernel_echo preloaded (one
#            server process per 12500 connections) and kernel_echo on the
#            kernel: the server's CPU over 10 s (dpsock: the worker's) and
#            the p99 of a 64-byte request/response on one more connection
#            (kernel_load -m rr -c 1) against the same with none held
#
# dpsockd: one worker on CPU 1 with the server (EAL -l 1), the port on
# AF_XDP (af_packet where AF_XDP cannot run), its default configuration;
# the clients in namespace B on CPU 0. The kernel's side runs over its own
# veth pair, side by side. It also writes the plot of rate against N
# (perf/many_conns.png beside the report).
#
#   test/perf/many_conns.sh [--quick] [--rounds N] [--time S] [--out FILE] [--build DIR]
#                           [--ns LIST] [--no-idle]
#
# --ns 100,50000 measures those N only; --no-idle leaves the idle rows out.
#
# Writes a markdown report (default docs/perf/many_conns.md, --quick: the
# build dir) and prints it. Exit 0 when every measurement ran, 1 when one
# failed, 77 without root. Ratios of runs made side by side, never asserted.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=perf_args.sh
. "$SELF_DIR/perf_args.sh"
ns_opt='' idle=1
perf_opt() {
	case "$1" in
	--ns) ns_opt=${2-}; PERF_TOOK=2 ;;
	--no-idle) idle=0 ;;
	*) return 1 ;;
	esac
}
perf_args many_conns.md 4 8 "$@"

TEST_NAME=mcperf-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd taskset nginx wrk redis-server redis-benchmark python3
require_tools dpsockd dpsock-stat dpsock-echo
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (the clients on CPU 0, the server and dpsockd on CPU 1)"
require_preload
ECHO=$build/test/perf/kernel_echo
LOAD=$build/test/perf/kernel_load
SEGMAP=$SRC/test/tools/pl_segmap.py
[ -x "$ECHO" ] && [ -x "$LOAD" ] || skip "kernel_echo / kernel_load are not built in $build"
ulimit -n 20000 2>/dev/null || true
[ "$(ulimit -n)" -ge 16000 ] || skip "the descriptor limit ($(ulimit -n)) is below 16000"
if [ "$quick" = 1 ]; then
	NS=(100 10000)
	N_IDLE=10000
else
	NS=(100 1000 10000 50000)
	N_IDLE=50000
fi
[ -z "$ns_opt" ] || IFS=, read -r -a NS <<<"$ns_opt"
PER_PROC=12500 # connections per process (20000 descriptors at most here)
RES=$TEST_TMP/res.tsv # side round metric n value
: >"$RES"
FAILED=0
failed() { note "FAILED: $*"; FAILED=1; echo "$*" >>"$TEST_TMP/failures"; }
procs_for() { echo $((($1 + PER_PROC - 1) / PER_PROC)); }

# ---- the two topologies -------------------------------------------------------
# the kernel's: A's kernel has the address
test_topo_up 206 "${TEST_NAME}k"
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
K_NS_A=$TOPO_NS_A K_NS_B=$TOPO_NS_B K_ADDR=$TOPO_ADDR_A
# dpsock's: dpsockd owns the address
test_topo_up 207
D_NS_A=$TOPO_NS_A D_NS_B=$TOPO_NS_B D_ADDR=$TOPO_ADDR_A
in_a_bpffs # AF_XDP's programs want a BPF filesystem in A's view
for ns in "$K_NS_A" "$K_NS_B" "$D_NS_A" "$D_NS_B"; do
	# 50000 connections from one address to one port, and their SYNs at once
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_local_port_range="1024 65000" \
		net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535 2>/dev/null || true
done
printf 'name = "%s";\nruntime_dir = "%s";\nworkers = [ 1 ];\ninterfaces = ( { port = "%s"; address = "%s/24"; } );\n' \
	"$TEST_NAME" "$TEST_TMP" "$TEST_PORT" "$D_ADDR" >"$TEST_TMP/d.conf"
# shellcheck disable=SC2046
"${IN_A_BPFFS[@]}" taskset -c 1 "$(dpsock_tool dpsockd)" -l 1 --no-pci \
	--file-prefix "$TEST_NAME" --log-level=lib.eal:error \
	$(DPSOCK_TEST_LCORES=1 DPSOCK_TEST_QPAIRS=1 test_vdevs 1) $(eal_mem_args) \
	-- -f "$TEST_TMP/d.conf" >"$TEST_TMP/dpsockd.log" 2>&1 </dev/null &
DPID=$!
on_exit "kill -TERM $DPID 2>/dev/null; poll_until 20 _lib_dead $DPID || kill -KILL $DPID 2>/dev/null; true"
poll_until 30 test -S "$TEST_TMP/$TEST_NAME.sock" ||
	fail "dpsockd did not start: $(tail -n 5 "$TEST_TMP/dpsockd.log")"
PRE=(env "LD_PRELOAD=$PRELOAD_LIB" "DPSOCK_RUNTIME_DIR=$TEST_TMP" "DPSOCK_NAME=$TEST_NAME"
	"DPSOCK_LOG_FILE=$TEST_TMP/shim-%d.log")
chmod 755 "$TEST_TMP"

ns_a() { [ "$1" = kernel ] && echo "$K_NS_A" || echo "$D_NS_A"; }
ns_b() { [ "$1" = kernel ] && echo "$K_NS_B" || echo "$D_NS_B"; }
addr() { [ "$1" = kernel ] && echo "$K_ADDR" || echo "$D_ADDR"; }
# server SIDE CMD...: CMD in SIDE's namespace A on CPU 1, preloaded for
# dpsock. server and client exec the program, so that `server ... &` leaves
# its own pid in $! (to signal it, not a subshell that would leave it
# running): call them with & or in a subshell of their own.
server() {
	local side=$1
	shift
	if [ "$side" = kernel ]; then
		exec ip netns exec "$K_NS_A" taskset -c 1 "$@"
	else
		exec ip netns exec "$D_NS_A" taskset -c 1 "${PRE[@]}" "$@"
	fi
}
client() { local side=$1; shift; exec ip netns exec "$(ns_b "$side")" taskset -c 0 "$@"; }

# ---- what a measurement reads ---------------------------------------------------
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
anon_kb() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '/^Anonymous:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
seg_bytes() {
	python3 "$SEGMAP" "$DPID" 2>/dev/null | awk '/^total/ {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "segments" && kv[1] != "reserved") s += kv[2] }
		print s + 0 }' | grep . || echo 0
}
lwip_bytes() { stat_sum "$TEST_NAME" lwip_mem_bytes 2>/dev/null || echo 0; }
# mem_sample SIDE PIDS...: "slab_kb anon_kb dpsockd_anon_kb seg_bytes lwip_bytes"
mem_sample() {
	local side=$1
	shift
	if [ "$side" = kernel ]; then
		echo "$(slab_kb) $(anon_kb "$@") 0 0 0"
	else
		echo "$(slab_kb) $(anon_kb "$@") $(anon_kb "$DPID") $(seg_bytes) $(lwip_bytes)"
	fi
}
# mem_per_conn BEFORE AFTER N: bytes per connection, all of it
mem_per_conn() {
	awk -v n="$3" -v b="$1" -v a="$2" 'BEGIN {
		split(b, x, " "); split(a, y, " ")
		kb = (y[1] - x[1]) + (y[2] - x[2]) + (y[3] - x[3])
		printf "%.0f", (kb * 1024 + (y[4] - x[4]) + (y[5] - x[5])) / n }'
}
put() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$RES"; }

# put_run PROG SIDE ROUND N RATE P99 ERRORS MEM_PER_CONN WORKER_TICKS ELAPSED_MS:
# one run's figures (the worker's CPU only where dpsock serves)
put_run() {
	local prog=$1 side=$2 round=$3 n=$4
	put "$side" "$round" "${prog}_rate" "$n" "$5"
	put "$side" "$round" "${prog}_p99" "$n" "$6"
	put "$side" "$round" "${prog}_err" "$n" "$7"
	put "$side" "$round" "${prog}_mem" "$n" "$8"
	[ "$side" = kernel ] || put "$side" "$round" "${prog}_cpu" "$n" \
		"$(awk -v d="$9" -v t="${10}" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", d / hz * 100000 / t }')"
}

# ---- nginx ---------------------------------------------------------------------
nginx_round() {
	local side=$1 round=$2 n=$3 k pfx log i pids=() m0 m1 t0 t1 d0 d1 per rate p99 errs
	k=$(procs_for "$n")
	pfx=$TEST_TMP/nginx-$side
	mkdir -p "$pfx/www"
	printf 'dpsock many connections benchmark page, 64 bytes: 0123456789\n' >"$pfx/www/index.html"
	nginx_conf "$pfx" "$k" 'worker_rlimit_nofile 20000;' <<EOF
access_log off;
keepalive_requests 1000000;
keepalive_timeout 300s;
server {
$(for ((i = 0; i < k; i++)); do printf '\tlisten %s:%u backlog=65535;\n' "$(addr "$side")" $((8080 + i)); done)
	root $pfx/www;
}
EOF
	sed -i 's/worker_connections 1024;/worker_connections 19000;/' "$pfx/nginx.conf"
	server "$side" nginx -p "$pfx" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log" >"$pfx/out.log" 2>&1 </dev/null &
	local master=$!
	if ! poll_until 20 _lib_tcp_probe "$(ns_b "$side")" "$(addr "$side")" 8080; then
		failed "$side nginx did not start: $(tail -n 3 "$pfx/logs/error.log")"
		kill -QUIT "$master" 2>/dev/null
		wait "$master" 2>/dev/null
		return
	fi
	poll_until 10 test "$(pgrep -P "$master" | wc -l)" -ge "$k" || true
	m0=$(mem_sample "$side" "$master" $(pgrep -P "$master"))
	d0=$(cpu_ticks "$DPID")
	t0=$(_lib_now_ms)
	for ((i = 0; i < k; i++)); do
		# a port per process: 12500 connections of one client address
		# to one port leave the kernel's ephemeral port search room
		client "$side" wrk -t1 -c $((n / k)) -d "${secs}s" --timeout 10s --latency \
			"http://$(addr "$side"):$((8080 + i))/" >"$TEST_TMP/wrk-$side-$n-$i.log" 2>&1 &
		pids+=($!)
	done
	sleep "$(awk -v s="$secs" 'BEGIN { print s * 0.7 }')"
	m1=$(mem_sample "$side" "$master" $(pgrep -P "$master"))
	for i in "${pids[@]}"; do wait "$i"; done
	t1=$(_lib_now_ms)
	d1=$(cpu_ticks "$DPID")
	kill -QUIT "$master" 2>/dev/null
	poll_until 20 _lib_dead "$master" || kill -KILL "$master" 2>/dev/null
	wait "$master" 2>/dev/null
	rate=$(cat "$TEST_TMP"/wrk-"$side"-"$n"-*.log | awk '/^Requests\/sec/ { s += $2 } END { printf "%.0f", s }')
	# p99: "99%  12.34ms" (us, ms or s), the largest of the processes'
	p99=$(cat "$TEST_TMP"/wrk-"$side"-"$n"-*.log | awk '$1 == "99%" {
		v = $2; u = v; sub(/[0-9.]+/, "", u); x = v + 0
		ms = u == "us" ? x / 1000 : (u == "s" ? x * 1000 : x)
		if (ms > m) m = ms } END { printf "%.2f", m }')
	errs=$(cat "$TEST_TMP"/wrk-"$side"-"$n"-*.log | awk '
		/Socket errors/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) e += $i }
		/Non-2xx/ { e += $NF } END { print e + 0 }')
	[ "${rate:-0}" -gt 0 ] || { failed "$side nginx N=$n round $round: $(tail -n 3 "$TEST_TMP/wrk-$side-$n-0.log")"; rm -f "$TEST_TMP"/wrk-"$side"-"$n"-*.log; return; }
	per=$(mem_per_conn "$m0" "$m1" "$n")
	put_run nginx "$side" "$round" "$n" "$rate" "$p99" "$errs" "$per" $((d1 - d0)) $((t1 - t0))
	rm -f "$TEST_TMP"/wrk-"$side"-"$n"-*.log
}

# ---- redis -----------------------------------------------------------------------
redis_round() {
	local side=$1 round=$2 n=$3 k i srv=() ben=() m0 m1 t0 t1 d0 d1 per rate p99 errs reqs
	k=$(procs_for "$n")
	reqs=$((n * 10 / k > 100000 ? n * 10 / k : 100000))
	for ((i = 0; i < k; i++)); do
		server "$side" redis-server --bind "$(addr "$side")" --port $((6379 + i)) --protected-mode no \
			--save '' --appendonly no --daemonize no --dir "$TEST_TMP" --logfile '' \
			--io-threads 1 --maxclients 19000 >"$TEST_TMP/redis-$side-$i.log" 2>&1 </dev/null &
		srv+=($!)
	done
	for ((i = 0; i < k; i++)); do
		poll_until 20 _lib_tcp_probe "$(ns_b "$side")" "$(addr "$side")" $((6379 + i)) ||
			{ failed "$side redis $i did not start"; kill "${srv[@]}" 2>/dev/null; wait 2>/dev/null; return; }
	done
	m0=$(mem_sample "$side" "${srv[@]}")
	d0=$(cpu_ticks "$DPID")
	t0=$(_lib_now_ms)
	for ((i = 0; i < k; i++)); do
		client "$side" timeout 300 redis-benchmark -h "$(addr "$side")" -p $((6379 + i)) \
			-c $((n / k)) -n "$reqs" -t get --csv >"$TEST_TMP/rb-$side-$n-$i.log" 2>&1 &
		ben+=($!)
	done
	# memory once the clients are connected and busy: a quarter of the way
	poll_until 60 bash -c "ss -Htn -N $(ns_b "$side") state established 2>/dev/null | wc -l | awk '{ exit !(\$1 >= $n) }'" || true
	m1=$(mem_sample "$side" "${srv[@]}")
	for i in "${ben[@]}"; do wait "$i"; done
	t1=$(_lib_now_ms)
	d1=$(cpu_ticks "$DPID")
	kill -TERM "${srv[@]}" 2>/dev/null
	for i in "${srv[@]}"; do poll_until 20 _lib_dead "$i" || kill -KILL "$i" 2>/dev/null; done
	wait "${srv[@]}" 2>/dev/null
	rate=$(cat "$TEST_TMP"/rb-"$side"-"$n"-*.log | awk -F'"' '$2 == "GET" { s += $4 } END { printf "%.0f", s }')
	p99=$(cat "$TEST_TMP"/rb-"$side"-"$n"-*.log | awk -F'"' '$2 == "GET" && $14 + 0 > m { m = $14 + 0 } END { printf "%.2f", m }')
	errs=$(cat "$TEST_TMP"/rb-"$side"-"$n"-*.log | grep -ciE 'error|refused|reset' || true)
	local got
	got=$(cat "$TEST_TMP"/rb-"$side"-"$n"-*.log | awk -F'"' '$2 == "GET"' | wc -l)
	[ "$got" -eq "$k" ] || errs=$((errs + k - got))
	[ "${rate:-0}" -gt 0 ] || { failed "$side redis N=$n round $round: $(tail -n 3 "$TEST_TMP/rb-$side-$n-0.log")"; rm -f "$TEST_TMP"/rb-"$side"-"$n"-*.log; return; }
	per=$(mem_per_conn "$m0" "$m1" "$n")
	put_run redis "$side" "$round" "$n" "$rate" "$p99" "$errs" "$per" $((d1 - d0)) $((t1 - t0))
	rm -f "$TEST_TMP"/rb-"$side"-"$n"-*.log
}

# ---- idle connections ------------------------------------------------------------
# rr_p99 SIDE PORT: p99 (us) of a 64-byte request/response on one connection
rr_p99() {
	(client "$1" "$LOAD" -d "$(addr "$1")" -p "$2" -m rr -c 1 -s 64 -t "$secs" --warmup 1) \
		>"$TEST_TMP/rr.log" 2>&1
	sed -n 's/^loadgen: total .* p99_us=\([0-9.]*\).*/\1/p' "$TEST_TMP/rr.log"
}

# idle_round SIDE ROUND: SIDE is native (dpsock-echo), dpsock (kernel_echo
# preloaded) or kernel (kernel_echo)
idle_round() {
	local side=$1 round=$2 k i srv=() ld=() c0 c1 t0 t1 p0 p1 cpu pid_cpu net=$1 n=$N_IDLE
	[ "$side" = native ] && net=dpsock
	k=$(procs_for "$n")
	if [ "$side" = native ]; then
		# the native echo server replaces dpsockd on the port for this run
		kill -TERM "$DPID" 2>/dev/null
		poll_until 20 _lib_dead "$DPID" || kill -KILL "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		# shellcheck disable=SC2046
		"${IN_A_BPFFS[@]}" taskset -c 1 "$(dpsock_tool dpsock-echo)" -l 1 --no-pci \
			--file-prefix "${TEST_NAME}e" --log-level=lib.eal:error \
			$(DPSOCK_TEST_LCORES=1 DPSOCK_TEST_QPAIRS=1 test_vdevs 1) $(eal_mem_args) \
			-- -f "$TEST_TMP/d.conf" --raw --tcp-only -p 7000 >"$TEST_TMP/echo-native.log" 2>&1 </dev/null &
		srv=($!)
		pid_cpu=${srv[0]}
		poll_until 30 _lib_tcp_probe "$D_NS_B" "$D_ADDR" 7000 ||
			{ failed "dpsock-echo did not start: $(tail -n 3 "$TEST_TMP/echo-native.log")"; return; }
	else
		for ((i = 0; i < k; i++)); do
			server "$side" "$ECHO" -a "$(addr "$side")" -p $((7000 + i)) --tcp-only \
				>"$TEST_TMP/echo-$side-$i.log" 2>&1 </dev/null &
			srv+=($!)
		done
		for ((i = 0; i < k; i++)); do
			poll_until 20 _lib_tcp_probe "$(ns_b "$net")" "$(addr "$net")" $((7000 + i)) ||
				{ failed "$side kernel_echo $i did not start"; kill "${srv[@]}" 2>/dev/null; return; }
		done
		pid_cpu=$DPID
	fi
	p0=$(rr_p99 "$net" 7000)
	for ((i = 0; i < k; i++)); do
		local port=$((7000 + i))
		[ "$side" != native ] || port=7000 # one server holds them all
		client "$net" "$LOAD" -d "$(addr "$net")" -p "$port" -m idle \
			-c $((n / k)) -t 300 >"$TEST_TMP/idle-$i.log" 2>&1 &
		ld+=($!)
	done
	for ((i = 0; i < k; i++)); do
		poll_until 120 grep -q 'idle connected=' "$TEST_TMP/idle-$i.log" ||
			failed "$side idle: loader $i: $(tail -n 2 "$TEST_TMP/idle-$i.log")"
	done
	sleep 2 # what the connections' set-up left behind (delayed ACKs, the first timers) settles
	[ "$side" = kernel ] && pid_cpu=${srv[0]}
	if [ "$side" = kernel ]; then c0=$(($(for p in "${srv[@]}"; do cpu_ticks "$p"; done | paste -sd+))); else c0=$(cpu_ticks "$pid_cpu"); fi
	t0=$(_lib_now_ms)
	sleep 10
	if [ "$side" = kernel ]; then c1=$(($(for p in "${srv[@]}"; do cpu_ticks "$p"; done | paste -sd+))); else c1=$(cpu_ticks "$pid_cpu"); fi
	t1=$(_lib_now_ms)
	cpu=$(awk -v d=$((c1 - c0)) -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", d / hz * 100000 / t }')
	p1=$(rr_p99 "$net" 7000)
	kill -TERM "${ld[@]}" 2>/dev/null
	wait "${ld[@]}" 2>/dev/null
	kill -TERM "${srv[@]}" 2>/dev/null
	for i in "${srv[@]}"; do poll_until 30 _lib_dead "$i" || kill -KILL "$i" 2>/dev/null; done
	wait "${srv[@]}" 2>/dev/null
	[ -n "$p0" ] && [ -n "$p1" ] || { failed "$side idle round $round: no p99 ($(tail -n 2 "$TEST_TMP/rr.log"))"; }
	put "$side" "$round" idle_cpu "$n" "$cpu"
	put "$side" "$round" idle_p99_none "$n" "${p0:-0}"
	put "$side" "$round" idle_p99_held "$n" "${p1:-0}"
	if [ "$side" = native ]; then
		# dpsockd back for the next rounds (its old control socket goes
		# first: the new one's is the sign it is up)
		rm -f "$TEST_TMP/$TEST_NAME.sock"
		# shellcheck disable=SC2046
		"${IN_A_BPFFS[@]}" taskset -c 1 "$(dpsock_tool dpsockd)" -l 1 --no-pci \
			--file-prefix "$TEST_NAME" --log-level=lib.eal:error \
			$(DPSOCK_TEST_LCORES=1 DPSOCK_TEST_QPAIRS=1 test_vdevs 1) $(eal_mem_args) \
			-- -f "$TEST_TMP/d.conf" >>"$TEST_TMP/dpsockd.log" 2>&1 </dev/null &
		DPID=$!
		poll_until 30 test -S "$TEST_TMP/$TEST_NAME.sock" || fail "dpsockd did not start again"
	fi
}

for r in $(seq 1 "$rounds"); do
	for n in "${NS[@]}"; do
		for side in kernel dpsock; do
			note "round $r: nginx N=$n on $side"
			nginx_round "$side" "$r" "$n"
			note "round $r: redis N=$n on $side"
			redis_round "$side" "$r" "$n"
		done
	done
	[ "$idle" = 1 ] || continue
	for side in kernel dpsock native; do
		note "round $r: $N_IDLE idle connections, $side"
		idle_round "$side" "$r"
	done
done

mkdir -p "$(dirname "$out")/perf"
python3 - "$RES" "$rounds" "$secs" "$N_IDLE" "$(dirname "$out")/perf" "$TEST_PMD" >"$out" <<'PYEOF'
import statistics, subprocess, sys, os
res, rounds, secs, n_idle, plotdir, pmd = sys.argv[1:7]
v = {}
for line in open(res):
    side, r, m, n, x = line.rstrip("\n").split("\t")
    v.setdefault((side, m, int(n)), []).append(float(x))
med = lambda s, m, n: statistics.median(v[(s, m, n)]) if v.get((s, m, n)) else None
ns = sorted({n for (_, m, n) in v if m.startswith("nginx") or m.startswith("redis")})
def cell(x, f="%.0f"):
    return f % x if x is not None else "—"
def ratio(a, b):
    return "%.2f×" % (a / b) if a is not None and b else "—"
print("# Thousands of connections: dpsock under the preload against the kernel\n")
print("`test/perf/many_conns.sh`, %s round(s) of %s s; medians. Server on CPU 1 (preloaded: with"
      " dpsockd's one worker, port %s), clients in the peer namespace on CPU 0; a process holds"
      " 12500 connections at most (ceil(N / 12500) nginx workers, redis-servers, wrk and"
      " redis-benchmark processes). Memory per connection: the rise of the kernel's slab (both"
      " ends), the servers' anonymous memory and, preloaded, dpsockd's anonymous memory, its group"
      " segments' pages and lwIP's allocator, from before the clients connected to the middle of"
      " the load, over N. Worker CPU: dpsockd's CPU time over the run.\n" % (rounds, secs, pmd))
for prog, label in (("nginx", "nginx, wrk keep-alive, 64-byte page"), ("redis", "redis-server, redis-benchmark -t get")):
    print("## %s\n" % label)
    print("| N | kernel req/s | dpsock req/s | dpsock / kernel | kernel p99 ms | dpsock p99 ms | errors kernel / dpsock | memory per conn kernel / dpsock (bytes) | worker CPU % |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        k, d = med("kernel", prog + "_rate", n), med("dpsock", prog + "_rate", n)
        print("| %d | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s |" % (
            n, cell(k), cell(d), ratio(d, k),
            cell(med("kernel", prog + "_p99", n), "%.2f"), cell(med("dpsock", prog + "_p99", n), "%.2f"),
            cell(med("kernel", prog + "_err", n)), cell(med("dpsock", prog + "_err", n)),
            cell(med("kernel", prog + "_mem", n)), cell(med("dpsock", prog + "_mem", n)),
            cell(med("dpsock", prog + "_cpu", n), "%.1f")))
    print()
ni = int(n_idle)
print("## %d idle connections\n" % ni)
print("kernel_load -m idle holds them (one more connection measures a 64-byte request/response"
      " before and while they are held); the server's CPU over 10 s (dpsock: the process that runs"
      " the worker: dpsockd, or dpsock-echo).\n")
print("| server | CPU % with them held | p99 µs, none held | p99 µs, held | held / none |")
print("|---|---|---|---|---|")
for side, label in (("kernel", "kernel_echo on the kernel"), ("dpsock", "kernel_echo preloaded (dpsockd)"),
                    ("native", "dpsock-echo (native)")):
    a, b = med(side, "idle_p99_none", ni), med(side, "idle_p99_held", ni)
    print("| %s | %s | %s | %s | %s |" % (label, cell(med(side, "idle_cpu", ni), "%.2f"),
                                         cell(a, "%.1f"), cell(b, "%.1f"), ratio(b, a)))
# the plot: rate against N, both programs, both sides
dat = os.path.join(plotdir, "many_conns.dat")
with open(dat, "w") as f:
    f.write("# N nginx_kernel nginx_dpsock redis_kernel redis_dpsock\n")
    for n in ns:
        f.write("%d %s\n" % (n, " ".join(cell(med(s, p + "_rate", n)).replace("—", "?")
                                        for p in ("nginx", "redis") for s in ("kernel", "dpsock"))))
png = os.path.join(plotdir, "many_conns.png")
gp = ("set terminal png size 800,480; set output '%s'; set logscale x; set xlabel 'connections';"
      " set ylabel 'requests/s'; set key bottom left; set yrange [0:*];"
      " plot '%s' using 1:2 with linespoints title 'nginx, kernel', '' using 1:3 with linespoints title 'nginx, dpsock',"
      " '' using 1:4 with linespoints title 'redis, kernel', '' using 1:5 with linespoints title 'redis, dpsock'" % (png, dat))
try:
    subprocess.run(["gnuplot", "-e", gp], check=True, capture_output=True)
    print("\n![rate against connections](perf/many_conns.png)")
except Exception as e:
    print("\n(no plot: %s)" % e)
print("\nEach round's figures: " + "; ".join(
    "%s %s N=%d: %s" % (s, m, n, ", ".join("%g" % x for x in xs)) for (s, m, n), xs in sorted(v.items())))
PYEOF
cat "$out"
[ "$FAILED" = 0 ] || exit 1
