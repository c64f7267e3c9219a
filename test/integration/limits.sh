#!/usr/bin/env bash
# Admission limits. dpsock-echo --raw, one worker, tcp.max_connections = 50:
#
#   - 60 connections from Linux, opened one after the other: exactly 50
#     connect and each echoes two distinct messages (before and after the
#     refusals), 10 get ECONNREFUSED (RST to their SYN); dpsock-stat
#     tcp_refused == 10, tcp_conns == 50 while they are open;
#   - once the 50 are closed, 50 new connections are accepted again, and a
#     51st is refused again (tcp_refused == 11).
#
# Not covered: memory.lwip_mb admission (refuse past 90 % of the lwIP
# memory). Its smallest value is 16 MiB and a connection holding unread data
# costs its pbufs' headers only (the data stays in mbufs, zero-copy), so
# reaching 14.4 MiB takes tens of thousands of connections or depends on
# exactly how much each peer manages to push before the window closes; no
# deterministic count of refusals follows. The max_connections path shares
# the refusal code (RST + tcp_refused) with it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools dpsock-echo dpsock-stat
ECHO=$(dpsock_tool dpsock-echo)
TCPPEER=$DPSOCK_SRC/test/tools/tcppeer.py
[ -r "$TCPPEER" ] || fail "missing $TCPPEER"
MAX=50
EXTRA=10

name=$TEST_NAME
test_topo_up 73
conf=$(dpsock_conf "$name" 'workers = [ 0 ];' "tcp = { max_connections = $MAX; };")

# shellcheck disable=SC2046
app_start "$name" "$conf" "$ECHO" $(DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$name") \
	-- --raw --tcp-only -p 7
log=$APP_LOG
grep -q 'max_connections = 50' "$log" || note "the banner does not show max_connections = 50"

# round N_EXPECT_OK N_EXPECT_REFUSED TOTAL: open TOTAL one at a time (batch
# 1: each connect completes before the next), hold them until go.
round() {
	local ok_n=$1 ref_n=$2 total=$3 tag=$4 rc=0 conns
	rm -f "$TEST_TMP/peak" "$TEST_TMP/go"
	in_b python3 "$TCPPEER" conc -d "$TOPO_ADDR_A" -p 7 -n "$total" --batch 1 --size 100 \
		--expect-ok "$ok_n" --expect-refused "$ref_n" --peak "$TEST_TMP/peak" \
		--go "$TEST_TMP/go" --timeout 60 >"$TEST_TMP/$tag.out" 2>&1 &
	local pid=$!
	poll_until 90 test -s "$TEST_TMP/peak" || { cat "$TEST_TMP/$tag.out" >&2; fail "$tag: clients did not reach the peak"; }
	poll_until 3 eval '[ "$(stat_sum "$name" tcp_conns)" -eq '"$ok_n"' ]' || true
	conns=$(stat_sum "$name" tcp_conns)
	touch "$TEST_TMP/go"
	wait "$pid" || rc=$?
	cat "$TEST_TMP/$tag.out"
	[ "$rc" -eq 0 ] || fail "$tag: $(tail -n 1 "$TEST_TMP/$tag.out")"
	[ "$conns" -eq "$ok_n" ] || fail "$tag: tcp_conns=$conns while $ok_n were open"
	PEAK_CONNS=$conns
}

round $MAX $EXTRA $((MAX + EXTRA)) first
wait_counter_ge "$name" tcp_refused $EXTRA 5
refused=$(stat_sum "$name" tcp_refused)
[ "$refused" -eq $EXTRA ] || fail "tcp_refused=$refused, expected $EXTRA"
ok "$((MAX + EXTRA)) connections: $MAX accepted and usable (tcp_conns=$PEAK_CONNS), $EXTRA refused with RST, tcp_refused=$refused"

# the 50 are closed: dpsock-echo closes when the client does (no TIME_WAIT
# on its side), so the count goes back to 0
wait_until 15 eval '[ "$(stat_sum "$name" tcp_conns)" -eq 0 ]'
round $MAX 1 $((MAX + 1)) second
wait_counter_ge "$name" tcp_refused $((EXTRA + 1)) 5
refused=$(stat_sum "$name" tcp_refused)
[ "$refused" -eq $((EXTRA + 1)) ] || fail "tcp_refused=$refused, expected $((EXTRA + 1))"
accepted=$(stat_sum "$name" tcp_accepted)
[ "$accepted" -eq $((2 * MAX)) ] || fail "tcp_accepted=$accepted, expected $((2 * MAX))"
ok "after closing them: $MAX new connections accepted again, the $((MAX + 1))th refused (tcp_refused=$refused, tcp_accepted=$accepted)"

rc=0
app_stop || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-echo exited with status $rc (3 = mbuf leak, 134 = abort)"
grep -q 'all [0-9]* mbufs back in the pool' "$log" || fail "no 'mbufs back' line"
note "memory.lwip_mb admission not tested: no deterministic setup (see the header)"
pass "max_connections = $MAX enforced with RST and counted; connections accepted again once closed"
