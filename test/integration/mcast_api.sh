#!/usr/bin/env bash
# The multicast socket options as Linux has them: test/tools/mctool api runs
# the membership options (IP_ADD/DROP_MEMBERSHIP, the source-specific ones,
# IP_BLOCK/UNBLOCK_SOURCE, the MCAST_* forms by interface index, ip_mreqn,
# memberships made before bind, the 20-membership and 10-source limits, bad
# lengths, families, groups and interfaces) and the sending options
# (IP_MULTICAST_IF/TTL/ALL, IP_TTL, IP_TOS) and prints each call's errno:
#   1. on Linux's own sockets (A's kernel holds the address);
#   2. under libdpsock_preload.so against dpsockd (A's kernel has no
#      address: every answer about dpsockd's interface comes from the shim
#      and the workers).
# The transcripts must be identical, and dpsock-stat must have seen the
# memberships come and go (the last of them gone at the end).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip diff
require_preload
require_tools mctool
MCTOOL=$(dpsock_tool mctool)
name=$TEST_NAME
test_topo_up 94
port=7200

# 1. Linux
ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
in_a timeout 60 "$MCTOOL" api -a "$TOPO_ADDR_A" -I "$TOPO_IF_A" -p "$port" \
	>"$TEST_TMP/kernel.txt" 2>"$TEST_TMP/kernel.err" ||
	fail "mctool api on kernel sockets failed: $(tail -n 5 "$TEST_TMP/kernel.err")"
grep -qx done "$TEST_TMP/kernel.txt" || fail "mctool api on kernel sockets did not finish"
ok "kernel transcript: $(wc -l <"$TEST_TMP/kernel.txt") lines"
ip -n "$TOPO_NS_A" addr flush dev "$TOPO_IF_A"

# 2. under the shim
preload_daemon_start "$name"
rc=0
preload_run timeout 60 "$MCTOOL" api -a "$TOPO_ADDR_A" -I "$TOPO_IF_A" -p "$port" \
	>"$TEST_TMP/shim.txt" 2>"$TEST_TMP/shim.err" || rc=$?
if ! diff -u "$TEST_TMP/kernel.txt" "$TEST_TMP/shim.txt" >"$TEST_TMP/diff.txt"; then
	cat "$TEST_TMP/diff.txt"
	preload_logs | tail -n 30
	fail "transcripts differ (mctool exit $rc)"
fi
[ "$rc" = 0 ] || fail "mctool api under the shim exited $rc"
ok "transcripts identical ($(wc -l <"$TEST_TMP/shim.txt") lines)"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	# the IGMP host reported the joins (state changes) on the link
	preload_offload_ge "$name" igmp_tx_report_v3 4 5
	ok "IGMPv3 reports sent: $STAT_VALUE"
	out=$("$DPSOCK_STAT" -n "$name" -v mc)
	grep -q "^none" <<<"$(sed -n '/^Groups joined/,/^$/p' <<<"$out" | tail -n +2)" ||
		fail "groups still joined after the socket closed: $out"
	ok "no group left joined once the socket closed"
fi
preload_daemon_stop
pass "membership and multicast options answer as Linux's"
