# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
#
# test/perf/run-programs.sh — section 5 of run-all (sourced by it, uses its
# helpers): unmodified Debian programs as servers, under LD_PRELOAD with
# dpsockd and on the kernel, driven by their usual clients from netns B.
#
#   server side, netns A, CPU 1: dpsockd (one queue on each port of PMDS in
#       turn: net_af_xdp, net_af_packet; EAL -l 1) and the preloaded
#       program, or the program alone on the kernel
#   client side, netns B, CPU 0: sockperf pp/tp, wrk, redis-benchmark,
#       pgbench
#
# All dpsock rounds run first, port by port, then dpsockd stops and A's
# kernel takes the address for the kernel rounds: an af_packet port sees
# every frame on its veth and AF_XDP's program (an owned port's) takes them
# all, so neither may be up while the kernel serves the address. On AF_XDP
# each round runs twice, the port owned (dpsockd has the address), then
# shared with the kernel (A's kernel has it, dpsockd follows; side
# af_xdp_shared: sockperf and nginx), dpsockd restarted for each.

PL_LIB=$(find "$build" -maxdepth 1 -name libdpsock_preload.so 2>/dev/null | head -n 1)
PL_NAME=${TEST_NAME}p
PL_PORT=11111

# pl_skip REASON: every program row says why it was not measured.
pl_skip() {
	note "5. programs: skipped: $1"
	meta programs_skip "$1"
}

# pl_server SIDE LABEL CMD...: start a server program in netns A on CPU
# PL_APP_CPU (1; 0 for the "split" rows), preloaded when SIDE is dpsock.
pl_server() {
	local side=$1 label=$2 log=$TEST_TMP/pl-$2-$1.log
	shift 2
	if [ "$side" != kernel ]; then
		ip netns exec "$TOPO_NS_A" taskset -c "${PL_APP_CPU:-1}" env LD_PRELOAD="$PL_LIB" \
			DPSOCK_RUNTIME_DIR="$TEST_TMP" DPSOCK_NAME="$PL_NAME" "$@" >"$log" 2>&1 </dev/null &
	else
		ip netns exec "$TOPO_NS_A" taskset -c "${PL_APP_CPU:-1}" "$@" >"$log" 2>&1 </dev/null &
	fi
	BG_PID[pl_$label]=$!
}

# pl_wait_tcp PORT: a TCP connect from B succeeds.
pl_tcp_up() { ip netns exec "$TOPO_NS_B" bash -c "exec 3<>/dev/tcp/$TOPO_ADDR_A/$1" 2>/dev/null; }

# sockperf: SIDE ROUND PROTO(udp|tcp) [SUFFIX]: ping-pong, then (without a
# suffix) throughput. SUFFIX names the metric variant (_split: the server
# program on CPU 0 with the client, dpsockd alone on CPU 1).
pl_sockperf() {
	local side=$1 r=$2 proto=$3 sfx=${4:-} out tcp=() lat p50 p99 p999 rate
	[ "$proto" = tcp ] && tcp=(--tcp)
	pl_server "$side" "sockperf" sockperf sr -i 0.0.0.0 -p "$PL_PORT" "${tcp[@]}"
	if [ "$proto" = tcp ]; then
		poll_until 20 pl_tcp_up "$PL_PORT" || { failed "$side sockperf server ($proto) did not come up"; bg_stop pl_sockperf; return; }
	else
		sleep 1
	fi
	out=$(timeout $((secs + 30)) ip netns exec "$TOPO_NS_B" taskset -c 0 sockperf pp -i "$TOPO_ADDR_A" \
		-p "$PL_PORT" "${tcp[@]}" -m 64 -t "$secs" 2>&1)
	lat=$(sed -n 's/.*Summary: Latency is \([0-9.]*\) usec.*/\1/p' <<<"$out")
	p50=$(sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' <<<"$out")
	p99=$(sed -n 's/.*percentile 99.000 = *\([0-9.]*\).*/\1/p' <<<"$out")
	p999=$(sed -n 's/.*percentile 99.900 = *\([0-9.]*\).*/\1/p' <<<"$out")
	if [ -n "$lat" ] && [ -n "$p50" ]; then
		result "pl_sockperf_${proto}_lat$sfx" "$side" "$r" "$p50" "p50=$p50 p99=$p99 p999=$p999 avg=$lat"
		note "$side sockperf pp $proto$sfx round $r: p50 $p50 us, p99 $p99 us, p99.9 $p999 us"
	else
		failed "$side sockperf pp $proto$sfx round $r: $(grep -m1 -i 'error\|summary' <<<"$out")"
	fi
	if [ -n "$sfx" ]; then
		bg_stop pl_sockperf || true
		return
	fi
	out=$(timeout $((secs + 30)) ip netns exec "$TOPO_NS_B" taskset -c 0 sockperf tp -i "$TOPO_ADDR_A" \
		-p "$PL_PORT" "${tcp[@]}" -m 64 -t "$secs" 2>&1)
	rate=$(sed -n 's/.*Summary: Message Rate is \([0-9]*\) .*/\1/p' <<<"$out")
	if [ -n "$rate" ]; then
		result "pl_sockperf_${proto}_tp" "$side" "$r" "$rate"
		note "$side sockperf tp $proto round $r: $rate msg/s"
	else
		failed "$side sockperf tp $proto round $r: $(grep -m1 -i 'error\|summary' <<<"$out")"
	fi
	bg_stop pl_sockperf || true
}

# nginx (one worker process, a 200 "hello" from memory) + wrk -c 64.
pl_nginx() {
	local side=$1 r=$2 d=$TEST_TMP/nginx-$1 out rps p50 p99
	mkdir -p "$d/logs"
	cat >"$d/nginx.conf" <<-NGXEOF
		worker_processes 1;
		daemon off;
		pid $d/nginx.pid;
		error_log stderr warn;
		events { worker_connections 4096; }
		http {
			access_log off;
			client_body_temp_path $d/body;
			proxy_temp_path $d/proxy;
			fastcgi_temp_path $d/fastcgi;
			uwsgi_temp_path $d/uwsgi;
			scgi_temp_path $d/scgi;
			keepalive_requests 1000000;
			server {
				listen $PL_PORT;
				location / { return 200 "hello\n"; }
			}
		}
	NGXEOF
	pl_server "$side" nginx nginx -p "$d" -e stderr -c "$d/nginx.conf"
	poll_until 20 pl_tcp_up "$PL_PORT" || { failed "$side nginx did not come up: $(tail -n 3 "$TEST_TMP/pl-nginx-$side.log")"; bg_stop pl_nginx; return; }
	out=$(timeout $((secs + 30)) ip netns exec "$TOPO_NS_B" taskset -c 0 wrk -t 1 -c 64 -d "${secs}s" --latency \
		"http://$TOPO_ADDR_A:$PL_PORT/" 2>&1)
	rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
	p50=$(awk '$1 == "50%" { print $2 }' <<<"$out")
	p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
	if [ -n "$rps" ] && ! grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
		result pl_nginx "$side" "$r" "$rps" "p50=$p50 p99=$p99"
		note "$side nginx+wrk round $r: $rps req/s (p50 $p50, p99 $p99)"
	else
		failed "$side nginx+wrk round $r: $(grep -m2 'Requests/sec\|Non-2xx\|Socket errors\|unable' <<<"$out" | tr '\n' ' ')"
	fi
	bg_stop pl_nginx || true
}

# redis-server (no persistence) + redis-benchmark -c 50 SET/GET.
pl_redis() {
	local side=$1 r=$2 out n=$((secs * 40000)) set get
	pl_server "$side" redis redis-server --port "$PL_PORT" --bind 0.0.0.0 --protected-mode no \
		--save '' --appendonly no --daemonize no --logfile ''
	poll_until 20 pl_tcp_up "$PL_PORT" || { failed "$side redis-server did not come up"; bg_stop pl_redis; return; }
	out=$(timeout $((secs * 4 + 60)) ip netns exec "$TOPO_NS_B" taskset -c 0 redis-benchmark -h "$TOPO_ADDR_A" \
		-p "$PL_PORT" -c 50 -n "$n" -t set,get -q 2>&1 | tr '\r' '\n')
	set=$(sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' <<<"$out" | tail -n 1)
	get=$(sed -n 's/^GET: \([0-9.]*\) requests per second.*/\1/p' <<<"$out" | tail -n 1)
	if [ -n "$set" ] && [ -n "$get" ]; then
		result pl_redis_set "$side" "$r" "$set"
		result pl_redis_get "$side" "$r" "$get"
		note "$side redis-benchmark round $r: SET $set/s GET $get/s"
	else
		failed "$side redis-benchmark round $r: $(grep -m2 -i 'error\|refused\|requests per second' <<<"$out" | tr '\n' ' ')"
	fi
	bg_stop pl_redis || true
}

# PostgreSQL 15 as the postgres user (a forked backend per connection) +
# pgbench -S (select only) with 8 clients; the database (initdb, pgbench -i
# -s 1) is made once, on the kernel's side, before the first round.
PL_PG=/usr/lib/postgresql/15/bin
pl_postgres() {
	local side=$1 r=$2 out tps d=$TEST_TMP/pg
	[ -d "$d/data" ] || { failed "$side postgres: no database (see pl_postgres_init)"; return; }
	pl_server "$side" postgres setpriv --reuid=postgres --regid=postgres --init-groups -- \
		"$PL_PG/postgres" -D "$d/data" -p "$PL_PORT"
	poll_until 30 pl_tcp_up "$PL_PORT" || { failed "$side postgres did not come up: $(tail -n 3 "$TEST_TMP/pl-postgres-$side.log")"; bg_stop pl_postgres; return; }
	out=$(timeout $((secs + 60)) ip netns exec "$TOPO_NS_B" taskset -c 0 "$PL_PG/pgbench" -h "$TOPO_ADDR_A" \
		-p "$PL_PORT" -U postgres -S -c 8 -j 1 -T "$secs" postgres 2>&1)
	tps=$(awk '/^tps/ { print $3 }' <<<"$out")
	if [ -n "$tps" ] && grep -q 'number of failed transactions: 0 ' <<<"$out"; then
		result pl_postgres "$side" "$r" "$tps"
		note "$side postgres+pgbench -S round $r: $tps tps"
	else
		failed "$side postgres+pgbench round $r: $(grep -m2 -i 'error\|failed\|tps' <<<"$out" | tr '\n' ' ')"
	fi
	bg_stop pl_postgres || true
}
# pl_postgres_init: a database for pl_postgres, loaded by pgbench -i through
# a postgres of A's kernel on the loopback
pl_postgres_init() {
	local d=$TEST_TMP/pg
	mkdir -p "$d"
	chown postgres: "$d"
	setpriv --reuid=postgres --regid=postgres --init-groups -- "$PL_PG/initdb" -D "$d/data" -A trust \
		-U postgres >"$TEST_TMP/pl-initdb.log" 2>&1 || { failed "initdb: $(tail -n 3 "$TEST_TMP/pl-initdb.log")"; return; }
	printf "listen_addresses = '*'\nunix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\nmax_connections = 32\n" \
		"$d" >>"$d/data/postgresql.conf"
	printf 'host all all 0.0.0.0/0 trust\n' >>"$d/data/pg_hba.conf"
	ip netns exec "$TOPO_NS_A" setpriv --reuid=postgres --regid=postgres --init-groups -- \
		"$PL_PG/pg_ctl" -D "$d/data" -o "-p $PL_PORT" -w start >"$TEST_TMP/pl-pginit.log" 2>&1 &&
		ip netns exec "$TOPO_NS_A" "$PL_PG/pgbench" -h 127.0.0.1 -p "$PL_PORT" -U postgres -i -s 1 postgres \
			>>"$TEST_TMP/pl-pginit.log" 2>&1 ||
		failed "pgbench -i: $(tail -n 3 "$TEST_TMP/pl-pginit.log")"
	ip netns exec "$TOPO_NS_A" setpriv --reuid=postgres --regid=postgres --init-groups -- \
		"$PL_PG/pg_ctl" -D "$d/data" -m fast -w stop >>"$TEST_TMP/pl-pginit.log" 2>&1
}

pl_round_all() { # SIDE ROUND
	if command -v sockperf >/dev/null; then
		pl_sockperf "$1" "$2" udp
		pl_sockperf "$1" "$2" tcp
		PL_APP_CPU=0 pl_sockperf "$1" "$2" udp _split
		PL_APP_CPU=0 pl_sockperf "$1" "$2" tcp _split
	fi
	if command -v nginx >/dev/null && command -v wrk >/dev/null; then pl_nginx "$1" "$2"; fi
	if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then pl_redis "$1" "$2"; fi
	if [ -x "$PL_PG/postgres" ] && [ -x "$PL_PG/pgbench" ] && id postgres >/dev/null 2>&1; then
		pl_postgres "$1" "$2"
	fi
}

# pl_dpsockd PMD CONF [LABEL] / pl_dpsockd_stop LABEL: dpsockd for the
# programs.
pl_dpsockd() {
	pmd_start "$PL_NAME" "$1" "$TEST_TMP/dpsockd-pl-${3:-$1}.log" "$DPSOCKD" -- -f "$2"
}
pl_dpsockd_stop() {
	local rc=0
	bg_stop "$PL_NAME" || rc=$?
	[ "$rc" = 0 ] || failed "dpsockd (programs, $1) exited with status $rc (3 = mbuf leak)"
	# the next run may be the kernel's, or dpsockd's with the same MAC
	ip -n "$TOPO_NS_B" neigh flush dev "$TOPO_IF_B" 2>/dev/null
	return 0
}

# pl_share_round ROUND: the port shared with the kernel (docs/running.md):
# A's kernel has the address, dpsockd's interface has none and its XDP
# program passes the kernel every frame of a flow it does not serve; the
# same sockperf and nginx rounds as side af_xdp_shared.
pl_share_round() {
	local out name pmd_ns dp_ns
	# what the look-ups cost per frame, BPF_PROG_TEST_RUN on the program
	# alone (test/unit/xdp_filter_test.c --bench): the PMD's program as side
	# af_xdp, dpsock's as af_xdp_shared
	out=$("$build/test/unit/xdp_filter_test" --bench 2>&1)
	grep -q '^bench ' <<<"$out" || failed "xdp_filter_test --bench: $(tail -n 1 <<<"$out")"
	while read -r _ name pmd_ns dp_ns; do
		result "xdp_${name}_ns" af_xdp "$1" "${pmd_ns#pmd_ns=}"
		result "xdp_${name}_ns" af_xdp_shared "$1" "${dp_ns#dpsock_ns=}"
	done < <(grep '^bench ' <<<"$out")
	ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/24" dev "$TOPO_IF_A"
	printf 'name = "%s";\nruntime_dir = "%s";\ninterfaces = ( { port = "net_af_xdp0"; } );\n' \
		"$PL_NAME" "$TEST_TMP" >"$TEST_TMP/pl-shared.conf"
	if pl_dpsockd af_xdp "$TEST_TMP/pl-shared.conf" af_xdp_shared; then
		if command -v sockperf >/dev/null; then
			pl_sockperf af_xdp_shared "$1" udp
			pl_sockperf af_xdp_shared "$1" tcp
		fi
		if command -v nginx >/dev/null && command -v wrk >/dev/null; then pl_nginx af_xdp_shared "$1"; fi
		pl_dpsockd_stop af_xdp_shared
	fi
	ip -n "$TOPO_NS_A" addr del "$TOPO_ADDR_A/24" dev "$TOPO_IF_A"
}

note "5. unmodified programs: server in netns A on CPU 1 (preloaded + dpsockd, or kernel), client in netns B on CPU 0"
if [ -z "$PL_LIB" ]; then
	pl_skip "libdpsock_preload.so is not built in $build"
else
	missing=
	for p in sockperf nginx wrk redis-server redis-benchmark; do
		command -v "$p" >/dev/null || missing="$missing $p"
	done
	[ -z "$missing" ] || note "5. programs: not installed:$missing (scripts/setup installs them); their rows stay empty"
	meta programs_missing "${missing# }"
	test_topo_up 203 "${TEST_NAME}q"
	# nginx's workers (nobody) and postgres reach the control socket here
	chmod 1777 "$TEST_TMP"
	[ ! -x "$PL_PG/initdb" ] || ! id postgres >/dev/null 2>&1 || pl_postgres_init
	for pmd in "${PMDS[@]}"; do
		printf 'name = "%s";\nruntime_dir = "%s";\npreload = { allowed_uids = [ %s ]; };\ninterfaces = ( { port = "net_%s0"; address = "%s/24"; } );\n' \
			"$PL_NAME" "$TEST_TMP" "$(id -u postgres 2>/dev/null || echo 0)" "$pmd" "$TOPO_ADDR_A" >"$TEST_TMP/pl.conf"
		if [ "$pmd" = af_xdp ]; then
			# each round owned, then shared with the kernel, so that the
			# shared ÷ owned ratio compares runs minutes apart at most
			for r in $(seq 1 "$rounds"); do
				if pl_dpsockd "$pmd" "$TEST_TMP/pl.conf"; then
					pl_round_all "$pmd" "$r"
					pl_dpsockd_stop "$pmd"
				fi
				pl_share_round "$r"
			done
			continue
		fi
		pl_dpsockd "$pmd" "$TEST_TMP/pl.conf" || continue
		for r in $(seq 1 "$rounds"); do pl_round_all "$pmd" "$r"; done
		pl_dpsockd_stop "$pmd"
	done
	ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/24" dev "$TOPO_IF_A"
	for r in $(seq 1 "$rounds"); do pl_round_all kernel "$r"; done
fi
