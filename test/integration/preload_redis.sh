#!/usr/bin/env bash
# redis-server (Debian's, unmodified) under libdpsock_preload.so on
# dpsockd's address; redis-benchmark and redis-cli in the Linux peer's
# namespace are the clients. Bounded by request counts (-n).
#
#   - redis-benchmark -t set,get,lpush,lpop -n 20000 -c 20: every test
#     reports a rate, exit 0, no error line;
#   - the same with 16-deep pipelining (-P 16), the many-requests-per-read
#     path;
#   - counts match: redis-benchmark -t incr -n 20000 -c 20 on one key (no
#     -r: every INCR hits counter:__rand_int__) leaves exactly 20000 in it,
#     and the server's total_commands_processed rose by at least every
#     request made; rejected_connections stays 0;
#   - a 1 MiB value SET from B comes back byte for byte (large write/read);
#   - offload, not a kernel fallback: dpsockd's workers accepted the
#     benchmark's connections (tcp_accepted) and received its bytes;
#   - redis-server exits 0 on SIGTERM; dpsockd stops cleanly.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip redis-server redis-benchmark redis-cli python3
require_preload
name=$TEST_NAME
test_topo_up 101
preload_daemon_start "$name"
port=6379
n=20000

preload_start redis redis-server --bind "$TOPO_ADDR_A" --port "$port" \
	--protected-mode no --save '' --appendonly no --daemonize no \
	--dir "$TEST_TMP" --logfile '' --io-threads 1
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" "$port" 20
cli() { timeout 20 ip netns exec "$TOPO_NS_B" redis-cli -h "$TOPO_ADDR_A" -p "$port" "$@"; }
[ "$(cli PING)" = PONG ] || fail "redis-cli PING from B: no PONG"
ok "redis-server up under the shim, PING answered"
acc0=$(preload_stat tcp_accepted)
info_stat() { cli INFO stats | tr -d '\r' | awk -F: -v k="$1" '$1 == k { print $2 }'; }
cmds0=$(info_stat total_commands_processed)

# bench LABEL ARGS...: redis-benchmark from B (--csv), fail on an error or
# a test with no rate.
bench() {
	local label=$1 out rc=0
	shift
	out=$(timeout 120 ip netns exec "$TOPO_NS_B" redis-benchmark -h "$TOPO_ADDR_A" -p "$port" \
		--csv "$@" 2>&1) || rc=$?
	printf '%s\n' "$out" >"$TEST_TMP/bench-$label.out"
	[ "$rc" -eq 0 ] || fail "redis-benchmark $label: status $rc: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
	if grep -qiE 'error|refused|reset' <<<"$out"; then
		fail "redis-benchmark $label: $(grep -m1 -iE 'error|refused|reset' <<<"$out")"
	fi
	# "test","rps",...: every data line needs a rate > 0
	awk -F'"' 'NR > 1 && $2 != "" { n++; if ($4 + 0 <= 0) bad = bad " " $2 }
		END { if (n == 0) { print "no result line"; exit 1 } if (bad != "") { print "no rate:" bad; exit 1 } }' \
		<<<"$out" >"$TEST_TMP/bench-$label.check" ||
		fail "redis-benchmark $label: $(cat "$TEST_TMP/bench-$label.check")"
	note "redis-benchmark $label: $(awk -F'"' 'NR > 1 { printf "%s %s/s  ", $2, $4 }' <<<"$out")"
}

bench plain -t set,get,lpush,lpop -n "$n" -c 20
ok "redis-benchmark set/get/lpush/lpop x $n, 20 connections: no error"
bench pipelined -t set,get -n "$n" -c 8 -P 16
ok "redis-benchmark set/get x $n, pipelined 16 deep: no error"

cli DEL counter:__rand_int__ >/dev/null
bench incr -t incr -n "$n" -c 20
v=$(cli GET counter:__rand_int__)
[ "$v" = "$n" ] || fail "after $n INCRs the counter is '$v'"
cmds=$(info_stat total_commands_processed)
# 4 x n + 2 x n + n requests, plus the few redis-cli commands
[ "$cmds" -ge $((cmds0 + 7 * n)) ] ||
	fail "total_commands_processed rose by $((cmds - cmds0)), expected at least $((7 * n))"
[ "$(info_stat rejected_connections)" = 0 ] || fail "rejected_connections = $(info_stat rejected_connections)"
ok "counts match: INCR x $n -> $v; commands processed +$((cmds - cmds0)); no rejected connection"

# A 1 MiB value through redis-cli -x (stdin), read back and compared.
head -c $((1024 * 1024)) /dev/urandom | base64 -w 0 >"$TEST_TMP/big.val"
cli -x SET bigkey <"$TEST_TMP/big.val" >/dev/null || fail "SET of a 1 MiB value failed"
cli --raw GET bigkey | head -c "$(stat -c %s "$TEST_TMP/big.val")" >"$TEST_TMP/big.got"
cmp -s "$TEST_TMP/big.val" "$TEST_TMP/big.got" ||
	fail "the 1 MiB value came back different ($(stat -c %s "$TEST_TMP/big.got") bytes)"
ok "a $(stat -c %s "$TEST_TMP/big.val")-byte value SET and GET back unchanged"

preload_offload_ge "$name" tcp_accepted $((acc0 + 20)) 5
acc=$STAT_VALUE
preload_offload_ge "$name" tcp_rx_bytes $((1024 * 1024)) 5
[ "$PRELOAD_KERNEL" = 1 ] || ok "through dpsockd: tcp_accepted +$((acc - acc0)), tcp_rx_bytes $STAT_VALUE"
preload_show_clients

rc=0
preload_stop redis TERM || rc=$?
[ "$rc" -eq 0 ] || fail "redis-server exited with status $rc: $(tail -n 5 "$TEST_TMP/redis.log" | tr '\n' ' ')"
preload_daemon_stop
pass "redis-server under the shim: redis-benchmark (plain, pipelined, incr) without error, counts match"
