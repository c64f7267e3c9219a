#!/usr/bin/env bash
# dpsockd's IGMP host on the wire, captured by tcpdump in namespace B (the
# Linux peer acts as the querier with test/tools/mctool query):
#   1. a preloaded any-source join of G1 and a source-specific join of G2:
#      IGMPv3 state-change reports (G1 TO_EX {}, G2 ALLOW {S}) from
#      dpsockd's address, TTL 1, Router Alert, each repeated once;
#   2. a v3 general query: one current-state report with G1 IS_EX and G2
#      IS_IN within the Max Response Time; a group-specific query for G1: a
#      report for G1; a group-and-source-specific query for G2 asking S and
#      another source: IS_IN with S alone;
#   3. the G1 subscriber killed with SIGKILL: its process group ends, its
#      socket closes, the port leaves G1 (TO_IN {}, repeated);
#   4. a v2 query: the port falls back to IGMPv2 (dpsock-stat -v mc says
#      so) and answers with a v2 report for G2; a new join of G3 is a v2
#      report, its end a v2 leave to 224.0.0.2;
#   5. a v1 query: IGMPv1, answered with a v1 report.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip tcpdump
require_preload
require_tools mctool dpsock-stat
[ "$PRELOAD_KERNEL" != 1 ] || skip "tests dpsockd's IGMP host (no kernel self-check)"
name=$TEST_NAME
test_topo_up 98
G1=239.9.9.1
G2=232.9.9.2
G3=239.9.9.3
S=$TOPO_ADDR_B
X=198.18.98.77
P=5200

cap=$TEST_TMP/igmp.pcap
in_b tcpdump -i "$TOPO_IF_B" -nn -U -w "$cap" igmp >/dev/null 2>&1 &
tcpdump_pid=$!
on_exit "kill $tcpdump_pid 2>/dev/null; true"
wait_until 5 test -s "$cap"
preload_daemon_start "$name"

# seen PATTERN: lines of dpsockd's IGMP in the capture matching PATTERN
seen() {
	tcpdump -nn -v -r "$cap" "igmp and src host $TOPO_ADDR_A" 2>/dev/null | grep -c -- "$1" || true
}
# wait_seen PATTERN N [T]: until N lines match
seen_ge() { [ "$(seen "$1")" -ge "$2" ]; }
wait_seen() {
	poll_until "${3:-8}" seen_ge "$1" "$2" ||
		fail "no '$1' (x$2) from dpsockd in the capture; dpsockd's IGMP so far:
$(tcpdump -nn -v -r "$cap" igmp 2>/dev/null | tail -n 20)"
}
query() {
	in_b "$MCTOOL" query -i "$TOPO_ADDR_B" "$@" >/dev/null || fail "mctool query $* failed"
}

# 1. joins
preload_start subA "$MCTOOL" sub -g "$G1" -p "$P" -r -t 600
preload_start subB "$MCTOOL" sub -g "$G2" -p "$P" -r -t 600 -s "$S"
wait_until 10 grep -q READY "$TEST_TMP/subA.log"
wait_until 10 grep -q READY "$TEST_TMP/subB.log"
# each state change sent Robustness (2) times (RFC 3376 5.1), the repeat
# within the Unsolicited Report Interval (1 s)
wait_seen "gaddr $G1 to_ex, 0 source" 2
wait_seen "gaddr $G2 allow, 1 source" 2
[ "$(seen 'ttl 1, .*options (RA)')" -ge 2 ] ||
	fail "reports without TTL 1 and Router Alert: $(tcpdump -nn -v -r "$cap" igmp 2>/dev/null | head)"
ok "IGMPv3 state changes: $G1 TO_EX {}, $G2 ALLOW {$S}, each sent twice, from $TOPO_ADDR_A with TTL 1 and Router Alert"

# 2. queries
q0=$(stat_read "$name" igmp_rx_query_v3)
query -v 3 -m 10
wait_seen "gaddr $G1 is_ex, 0 source" 1 5
wait_seen "gaddr $G2 is_in, 1 source" 1 5
wait_counter_ge "$name" igmp_rx_query_v3 $((q0 + 1)) 5
ok "v3 general query: answered with $G1 IS_EX {} and $G2 IS_IN {$S}"
n=$(seen "gaddr $G1 is_ex")
query -v 3 -m 10 -g "$G1"
wait_seen "gaddr $G1 is_ex" $((n + 1)) 5
ok "v3 group-specific query for $G1: answered"
n=$(seen "gaddr $G2 is_in, 1 source")
query -v 3 -m 10 -g "$G2" -s "$S" -s "$X"
wait_seen "gaddr $G2 is_in, 1 source" $((n + 1)) 5
ok "v3 group-and-source query for $G2 {$S, $X}: IS_IN with one source"

# 3. a killed subscriber
preload_stop subA KILL || true
wait_seen "gaddr $G1 to_in, 0 source" 2 8
ok "subscriber of $G1 killed (SIGKILL): the port left $G1 (TO_IN {}, twice)"

# 4. IGMPv2 compatibility
query -v 2 -m 10
wait_seen "v2 report $G2" 1 5
# read the whole output first: grep -q stops early and, under pipefail,
# dpsock-stat's SIGPIPE would fail the pipeline
mc=$("$DPSOCK_STAT" -n "$name" -v mc)
grep -q "IGMPv2 host" <<<"$mc" || fail "dpsock-stat -v mc does not show the v2 mode: $(head -3 <<<"$mc")"
ok "v2 query: IGMPv2 mode (dpsock-stat -v mc), $G2 reported with a v2 report"
preload_start subC "$MCTOOL" sub -g "$G3" -p "$P" -r -t 600
wait_until 10 grep -q READY "$TEST_TMP/subC.log"
wait_seen "v2 report $G3" 1 5
preload_stop subC || true
wait_seen "leave $G3" 1 8
ok "v2 mode: $G3 joined with a v2 report, left with a v2 leave"

# 5. IGMPv1
n=$(seen "v1 report $G2")
query -v 1
wait_seen "v1 report $G2" $((n + 1)) 12
mc=$("$DPSOCK_STAT" -n "$name" -v mc)
grep -q "IGMPv1 host" <<<"$mc" || fail "dpsock-stat -v mc does not show v1: $(head -3 <<<"$mc")"
ok "v1 query: IGMPv1 mode, $G2 reported with a v1 report"
preload_stop subB || true
preload_daemon_stop
tcpdump -nn -v -r "$cap" igmp 2>/dev/null | grep -c . | sed 's/^/-- frames captured: /'
pass "IGMPv3 reports, answers to v3/v2/v1 queries, leaves (a killed subscriber's too)"
