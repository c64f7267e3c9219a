#!/usr/bin/env bash
# Thousands of connections under the preload, side by side with the kernel:
# Debian's unmodified nginx and redis-server, first on the kernel (one
# topology), then under libdpsock_preload.so with dpsockd on its default
# configuration (another topology), the same clients from the Linux peer.
#
#   - nginx, one worker process (worker_connections 19000): 3000
#     keep-alive connections, all established first, then 5 rounds in step
#     (test/tools/conn_steps.py: each round sends one request on every
#     connection and waits for every answer): all 15000 requests answered,
#     on the kernel and preloaded. This is the load that left 620-1300
#     connections without their second answer (a slot whose wait-ring
#     entry did not fit stayed marked queued and was never named again),
#     and that hit the 1024-slot cap with the old defaults;
#   - redis-server, redis-benchmark -c 2000 -t set,get: no error, every
#     request processed (INFO's total_commands_processed), both sides;
#   - dpsockd's counters: no wait ring overflowed (pl_wait_overflows), no
#     slot was missing (pl_slots_exhausted), no connection refused;
#   - memory follows the bytes queued: while the 3000 nginx connections
#     stay open and idle after their rounds, the group segment's FIFO data
#     pages go back (pl_fifo_reclaims rises; test/tools/pl_segmap.py: the
#     data area holds less than 512 bytes per connection, against 5 x 2 KiB
#     responses that went through each) and the slots' lines are 1280 bytes
#     each;
#   - nginx and redis stop on their signal, dpsockd stops cleanly.
# The times and rates are printed, not asserted (test/perf has the
# benchmark).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip nginx redis-server redis-benchmark redis-cli python3
require_preload
name=$TEST_NAME
STEPS=$DPSOCK_SRC/test/tools/conn_steps.py
SEGMAP=$DPSOCK_SRC/test/tools/pl_segmap.py
CONNS=3000
ROUNDS=5
CLIENTS=2000
REQS=40000
[ "$(ulimit -n)" -ge $((CONNS + 100)) ] || ulimit -n $((CONNS + 1000)) 2>/dev/null ||
	skip "the descriptor limit ($(ulimit -n)) is below $CONNS connections"

# nginx_many SIDE: nginx's prefix for SIDE, one worker process, a 2 KiB
# page; started with preload_start (under the shim unless PRELOAD_KERNEL).
nginx_many() {
	local pfx=$TEST_TMP/nginx-$1
	mkdir -p "$pfx/www"
	head -c 2048 /dev/zero | tr '\0' x >"$pfx/www/index.html"
	nginx_conf "$pfx" 1 'worker_rlimit_nofile 20000;' <<EOF
access_log off;
keepalive_requests 100000;
keepalive_timeout 300s;
server {
	listen $TOPO_ADDR_A:8080 backlog=4096;
	root $pfx/www;
}
EOF
	sed -i 's/worker_connections 1024;/worker_connections 19000;/' "$pfx/nginx.conf"
	preload_start "nginx-$1" nginx -p "$pfx" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log"
	wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 8080 20
}

# steps SIDE [HOLD]: conn_steps.py from B against nginx; fail unless every
# request of every round was answered. With HOLD, the connections stay
# open HOLD seconds after the rounds (in the background: STEPS_PID).
steps() {
	local side=$1 hold=${2:-0} out=$TEST_TMP/steps-$1.out
	if [ "$hold" = 0 ]; then
		in_b python3 "$STEPS" "$TOPO_ADDR_A" 8080 -n "$CONNS" -r "$ROUNDS" --timeout 60 >"$out" 2>&1 ||
			fail "$side: not every request answered: $(tr '\n' ' ' <"$out")"
		note "$side nginx: $(grep -E '^round' "$out" | awk '{ printf "%s %s %s s; ", $2, $4, $6 }')"
		grep -q "^total: answered $((CONNS * ROUNDS))/$((CONNS * ROUNDS)), failed 0" "$out" ||
			fail "$side: $(tail -n 1 "$out")"
		return
	fi
	in_b python3 "$STEPS" "$TOPO_ADDR_A" 8080 -n "$CONNS" -r "$ROUNDS" --timeout 60 \
		--hold "$hold" --ready-file "$TEST_TMP/steps-$side.done" >"$out" 2>&1 &
	STEPS_PID=$!
	on_exit "kill $STEPS_PID 2>/dev/null; true"
}

# redis_many SIDE: redis-server, then redis-benchmark -c CLIENTS from B;
# fail on an error line or a command count short of the requests.
redis_many() {
	local side=$1 out=$TEST_TMP/bench-$1.out rc=0 c0 c1
	preload_start "redis-$side" redis-server --bind "$TOPO_ADDR_A" --port 6379 \
		--protected-mode no --save '' --appendonly no --daemonize no --dir "$TEST_TMP" \
		--logfile '' --io-threads 1 --maxclients $((CLIENTS + 1000))
	wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 6379 20
	c0=$(in_b redis-cli -h "$TOPO_ADDR_A" INFO stats | tr -d '\r' |
		awk -F: '$1 == "total_commands_processed" { print $2 }')
	timeout 300 ip netns exec "$TOPO_NS_B" redis-benchmark -h "$TOPO_ADDR_A" -p 6379 \
		-c "$CLIENTS" -n "$REQS" -t set,get --csv >"$out" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || fail "$side redis-benchmark: status $rc: $(tail -n 3 "$out" | tr '\n' ' ')"
	! grep -qiE 'error|refused|reset' "$out" ||
		fail "$side redis-benchmark: $(grep -m1 -iE 'error|refused|reset' "$out")"
	c1=$(in_b redis-cli -h "$TOPO_ADDR_A" INFO stats | tr -d '\r' |
		awk -F: '$1 == "total_commands_processed" { print $2 }')
	[ "$((c1 - c0))" -ge $((2 * REQS)) ] ||
		fail "$side redis: $((c1 - c0)) commands processed for $((2 * REQS)) requests"
	note "$side redis -c $CLIENTS: $(awk -F'"' 'NR > 1 { printf "%s %s/s p99 %s ms  ", $2, $4, $14 }' "$out")"
	rc=0
	preload_stop "redis-$side" TERM || rc=$?
	[ "$rc" -eq 0 ] || fail "$side redis-server exited with status $rc"
}

# ---- on the kernel ---------------------------------------------------------
test_topo_up 128 "${name}k"
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
saved_kernel=${PRELOAD_KERNEL:-0}
PRELOAD_KERNEL=1
nginx_many kernel
steps kernel
preload_stop nginx-kernel QUIT || fail "nginx on the kernel did not stop cleanly"
redis_many kernel
ok "on the kernel: $CONNS connections x $ROUNDS requests, redis -c $CLIENTS"

# ---- under the preload -----------------------------------------------------
PRELOAD_KERNEL=$saved_kernel
test_topo_up 129
preload_daemon_start "$name"
chmod 755 "$TEST_TMP" # nginx's worker (nobody) reaches the control socket
nginx_many dpsock
steps dpsock
ok "preloaded nginx: every one of $((CONNS * ROUNDS)) requests on $CONNS keep-alive connections answered"

# the same again, the connections kept open and idle after their rounds
rec0=$(stat_sum "$name" pl_fifo_reclaims)
steps dpsock-idle 60
wait_until 90 test -e "$TEST_TMP/steps-dpsock-idle.done" ||
	fail "the idle run's connections did not all finish their rounds: $(cat "$TEST_TMP/steps-dpsock-idle.out")"
dpid=$(pgrep -f "dpsockd.*-f $TEST_TMP/$name.conf" | head -n 1)
[ -n "$dpid" ] || fail "dpsockd's pid not found"
# The FIFOs give their pages back once they idled a second: wait (20 s at
# most) for the data area to drop below what is checked next.
data_low() {
	python3 "$SEGMAP" "$dpid" | awk -v n="$CONNS" '/^total/ {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "data") d = kv[2] }
		exit !(d / n < 512) }'
}
poll_until 20 data_low || true
seg=$(python3 "$SEGMAP" "$dpid" | grep '^total')
note "group segments with $CONNS idle connections: $seg"
data=$(sed -n 's/.* data=\([0-9]*\).*/\1/p' <<<"$seg")
slots=$(sed -n 's/.* slots=\([0-9]*\).*/\1/p' <<<"$seg")
[ "$((data / CONNS))" -lt 512 ] ||
	fail "idle connections still hold $((data / CONNS)) bytes of FIFO data each ($seg)"
# 1280 bytes of slot lines per socket: the slots each worker ever used
# (the two runs split their connections over the two workers a little
# differently: 10 % for that) and the listener's, rounded up to pages
[ "$slots" -le $(((CONNS * 11 / 10 + 16) * 1280 + 2 * 4096)) ] ||
	fail "the slots' lines hold $slots bytes for $CONNS connections ($seg)"
rec1=$(stat_sum "$name" pl_fifo_reclaims)
[ "$rec1" -ge $((rec0 + CONNS)) ] ||
	fail "pl_fifo_reclaims rose by $((rec1 - rec0)) for $CONNS idle connections"
ok "idle after their rounds, $CONNS connections hold $((data / CONNS)) bytes of FIFO data each, $((slots / CONNS)) of slot lines (pl_fifo_reclaims +$((rec1 - rec0)))"
grep -q "^total: answered $((CONNS * ROUNDS))/$((CONNS * ROUNDS)), failed 0" "$TEST_TMP/steps-dpsock-idle.out" ||
	fail "the idle run: $(tail -n 2 "$TEST_TMP/steps-dpsock-idle.out" | tr '\n' ' ')"
# its client processes hold the connections: let them go
pkill -TERM -f "conn_steps.py.*steps-dpsock-idle.done" || true
wait "$STEPS_PID" 2>/dev/null || true
rc=0
preload_stop nginx-dpsock QUIT || rc=$?
[ "$rc" -eq 0 ] || fail "preloaded nginx exited with status $rc"

redis_many dpsock
ok "preloaded redis-server: redis-benchmark -c $CLIENTS without error, every request processed"

for c in pl_wait_overflows pl_slots_exhausted pl_accept_refused tcp_refused; do
	v=$(stat_sum "$name" "$c")
	[ "$v" -eq 0 ] || fail "dpsockd counted $c = $v"
done
ok "no wait ring overflowed, no slot missing, no connection refused"
preload_daemon_stop
pass "thousands of connections under the preload: nginx ($CONNS x $ROUNDS in step) and redis (-c $CLIENTS) answered everything, as on the kernel; idle connections gave their FIFO pages back"
