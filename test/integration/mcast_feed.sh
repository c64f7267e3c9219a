#!/usr/bin/env bash
# A feed: Linux publishers in namespace B -> subscribers on dpsock, as a
# market-data feed handler has them. B reaches two dpsock instances through
# a Linux bridge that snoops IGMP (mcast_lib.sh): dpsockd on A's first veth
# (A's kernel has no address: only dpsockd can receive) with five preloaded
# subscribers, each its own process, all on one port (SO_REUSEADDR), and a
# native app (dpsock-echo --join) on the second veth. Two sources send to
# the group: S1 (B's address) and S2 (B's second address).
#   sub1  any source, recvmsg with IP_PKTINFO and SO_TIMESTAMPNS checked
#   sub2  any source, recvmmsg, joined with ip_mreqn by interface index,
#         IP_PKTINFO and SO_TIMESTAMPING (software receive stamps) checked
#   sub3  source-specific: S2 only (IP_ADD_SOURCE_MEMBERSHIP)
#   sub4  any source but S2 (MCAST_JOIN_GROUP + MCAST_BLOCK_SOURCE),
#         IP_PKTINFO and SO_TIMESTAMP checked
#   sub5  IP_MULTICAST_ALL 0, leaves after the first phase
# Phase 1: S1 sends 2000 datagrams, S2 1000; every subscriber gets its
# share, each datagram once, none lost (rx FIFOs of 1 MiB: no loss even if
# a subscriber is descheduled); the native app too; dpsock-stat -v mc lists
# the subscribers with the datagrams each got. sub5 then leaves.
# Phase 2: S1 sends 500 more: sub5 gets none (it left and does not take
# others' groups), the others get them.
# dpsockd's counters show the datagrams came through it (mc_rx) and were
# delivered once per subscriber and per worker socket (mc_deliveries).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip ethtool
require_preload
require_tools mctool dpsock-echo dpsock-stat
name=$TEST_NAME
test_topo_up 96
mcast_bridge_up
mcast_peer_addr2
G=239.7.7.7
P=5000

preload_daemon_start "$name" 'preload = { rx_fifo_kb = 1024; };'
napp=$(unique_name n)
nconf=$TEST_TMP/$napp.conf
cat >"$nconf" <<CONF
name = "$napp";
interfaces = ( { port = "net_af_packet0"; address = "$MC_ADDR_A2/$TOPO_PLEN"; } );
CONF
# shellcheck disable=SC2046
app_start "$napp" "$nconf" dpsock-echo -l 1 --no-pci --file-prefix "$napp" \
	"--vdev=net_af_packet0,iface=$MC_IF_A2,qpairs=1,framecnt=4096" $(eal_mem_args) \
	-- --udp-only -p "$P" --join "$G"

ifx=$(ip -n "$TOPO_NS_A" -o link show dev "$TOPO_IF_A" | cut -d: -f1)
sub=(sub -g "$G" -p "$P" -r -t 20)
declare -A pid=()
preload_start sub1 "$MCTOOL" "${sub[@]}" -n 3500 -c
pid[sub1]=$PRELOAD_PID
preload_start sub2 "$MCTOOL" "${sub[@]}" -n 3500 -m -F mreqn -I "$ifx" -c -C ing
pid[sub2]=$PRELOAD_PID
preload_start sub3 "$MCTOOL" "${sub[@]}" -n 1000 -s "$MC_SRC2"
pid[sub3]=$PRELOAD_PID
preload_start sub4 "$MCTOOL" "${sub[@]}" -n 2500 -F mcast -I "$ifx" -x "$MC_SRC2" -c -C us
pid[sub4]=$PRELOAD_PID
preload_start sub5 "$MCTOOL" "${sub[@]}" -t 6 -A 0 -L 3000
pid[sub5]=$PRELOAD_PID
for s in sub1 sub2 sub3 sub4 sub5; do
	wait_until 15 grep -q READY "$TEST_TMP/$s.log"
done
# the native app joined on start; the bridge learned both ports' reports
wait_counter_ge "$napp" igmp_tx_report_v3 1 10
wait_counter_ge "$name" igmp_tx_report_v3 1 10
ok "five preloaded subscribers and a native one joined $G"
"$DPSOCK_STAT" -n "$name" -v mc >"$TEST_TMP/mc0.txt"

in_b "$MCTOOL" pub -g "$G" -p "$P" -n 2000 -r 8000 -S 1 >"$TEST_TMP/pub1.log"
in_b "$MCTOOL" pub -g "$G" -p "$P" -n 1000 -r 8000 -S 2 -b "$MC_SRC2" >"$TEST_TMP/pub2.log"
grep -q "SENT 2000 errors=0" "$TEST_TMP/pub1.log" || fail "S1: $(cat "$TEST_TMP/pub1.log")"
grep -q "SENT 1000 errors=0" "$TEST_TMP/pub2.log" || fail "S2: $(cat "$TEST_TMP/pub2.log")"
wait_until 20 grep -q LEFT "$TEST_TMP/sub5.log"
ok "phase 1 sent (S1 2000, S2 1000); sub5 left"
"$DPSOCK_STAT" -n "$name" -v mc >"$TEST_TMP/mc.txt"
in_b "$MCTOOL" pub -g "$G" -p "$P" -n 500 -r 8000 -S 3 >"$TEST_TMP/pub3.log"
grep -q "SENT 500 errors=0" "$TEST_TMP/pub3.log" || fail "S1 phase 2: $(cat "$TEST_TMP/pub3.log")"

for s in sub1 sub2 sub3 sub4 sub5; do
	preload_wait "$s" 40 || fail "$s exited non-zero: $(tail -n 3 "$TEST_TMP/$s.log")"
done
S1=$TOPO_ADDR_B
S2=$MC_SRC2
check() { # label, from S1, from S2, received
	local l=$1 a b
	a=$(mcast_source "$l" "$S1")
	b=$(mcast_source "$l" "$S2")
	[ "$a" = "$2" ] && [ "$b" = "$3" ] && [ "$(mcast_result "$l" received)" = "$4" ] &&
		[ "$(mcast_result "$l" lost)" = 0 ] && [ "$(mcast_result "$l" dup)" = 0 ] ||
		fail "$l: from S1 $a (want $2), from S2 $b (want $3): $(grep RESULT "$TEST_TMP/$l.log")"
	ok "$l: $a from S1, $b from S2, none lost or twice"
}
cmsgs() { # label, the timestamp option
	[ "$(mcast_result "$1" pktinfo)" = ok ] && [ "$(mcast_result "$1" ts)" = ok ] ||
		fail "$1: control messages: $(grep RESULT "$TEST_TMP/$1.log")"
	ok "$1: IP_PKTINFO named the group and an interface, $2 within 10 s (alone), every datagram"
}
check sub1 2500 1000 3500
cmsgs sub1 SO_TIMESTAMPNS
check sub2 2500 1000 3500
cmsgs sub2 "SO_TIMESTAMPING (software, by recvmmsg)"
check sub3 0 1000 1000
check sub4 2500 0 2500
cmsgs sub4 SO_TIMESTAMP
check sub5 2000 1000 3000
[ "$(mcast_result sub5 after_leave)" = 0 ] || fail "sub5 got datagrams after it left"
ok "sub5: nothing after it left (IP_MULTICAST_ALL 0)"

# dpsock-stat's view: before phase 1 (all five subscribed), and after it
# (sub3 had its 1000 and exited; sub5 had left)
mc_rows() { awk -v g="$G" '$1 == g && NF >= 11' "$1"; }
[ "$(mc_rows "$TEST_TMP/mc0.txt" | wc -l)" = 5 ] ||
	fail "dpsock-stat -v mc does not list 5 subscribers of $G: $(cat "$TEST_TMP/mc0.txt")"
grep -q "INCLUDE  {$S2}" <<<"$(mc_rows "$TEST_TMP/mc0.txt")" || fail "sub3's INCLUDE {$S2} not shown"
grep -q "EXCLUDE  {$S2}" <<<"$(mc_rows "$TEST_TMP/mc0.txt")" || fail "sub4's EXCLUDE {$S2} not shown"
for s in sub1 sub2; do
	[ -n "$(mc_rows "$TEST_TMP/mc.txt" | awk -v p="${pid[$s]}" '$3 == p && $9 == 3000')" ] ||
		fail "$s (pid ${pid[$s]}): no row with 3000 datagrams after phase 1: $(cat "$TEST_TMP/mc.txt")"
done
ok "dpsock-stat -v mc: the group, its 5 subscribers (pid, fd, filter), then the datagrams each got"
sed 's/^/   /' "$TEST_TMP/mc.txt"

# through dpsockd: every datagram of phase 1 and 2 (3500) entered the port
# filter; sub1..4 got 3500+3500+1000+2500, sub5 3000 in 2 sockets x workers
preload_offload_ge "$name" mc_rx 3500 5
ok "dpsockd took $STAT_VALUE multicast datagrams (A's kernel has no address)"
preload_offload_ge "$name" mc_deliveries $((3500 + 3500 + 1000 + 2500 + 3000)) 5
ok "dpsockd delivered $STAT_VALUE (one per subscriber)"
[ "$(preload_stat pl_rx_dropped)" = 0 ] || fail "rx FIFO drops: $(preload_stat pl_rx_dropped)"
wait_counter_ge "$napp" udp_rx 3500 10
ok "the native subscriber got $STAT_VALUE"
app_stop "$napp" || fail "dpsock-echo did not stop cleanly"
preload_daemon_stop
pass "a Linux feed reached 5 preloaded subscribers in 5 processes and a native app, filters honoured"
