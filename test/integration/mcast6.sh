#!/usr/bin/env bash
# UDP multicast over IPv6 under the preload (docs/preload.md "Multicast over
# IPv6"): dpsockd owns the test port with address6; the Linux stack in
# namespace B is the peer, test/tools/mc6.py the program on both sides.
#   1. The options (mc6.py api: IPV6_JOIN_GROUP / _LEAVE_GROUP, the MCAST_*
#      forms with sources, memberships made before bind, IPv4 memberships
#      on the same dual-stack socket, IPV6_MULTICAST_HOPS / _LOOP / _ALL /
#      _IF, their errors): run first on Linux alone (a topology of its
#      own, A's kernel with the addresses), then preloaded against
#      dpsockd: the transcripts are equal.
#      dpsockd reports the solicited-node group of its address6 (MLDv2).
#   2. A feed: a publisher in B sends 3000 datagrams to the group; three
#      preloaded subscriber processes in A: any source (IPV6_JOIN_GROUP,
#      IPV6_PKTINFO checked), source-specific from B's address
#      (MCAST_JOIN_SOURCE_GROUP), source-specific from another address
#      (gets none). Each of the first two gets every datagram once, from
#      B's IPv6 address. dpsockd's MLD host said so on the wire: MLDv2
#      reports for the group (to ff02::16, hop limit 1, from its
#      link-local address), and dpsock-stat -v mc lists the group.
#   3. The other way: a preloaded publisher in A sends 500 datagrams to a
#      second group; a Linux subscriber in B gets them all (dpsock's IPv6
#      multicast on the wire), and so does a preloaded subscriber in A
#      (IPV6_MULTICAST_LOOP, within dpsockd).
#   4. The MLD host answers queries: an MLDv2 general query from B gets
#      an IS_EX report of the group; an MLDv1 query puts the port in MLDv1
#      mode (dpsock-stat -v mc) and gets an MLDv1 report; the group's last
#      subscriber leaving then sends an MLDv1 done.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip python3 tcpdump diff
require_preload
require_tools dpsock-stat
[ "$PRELOAD_KERNEL" != 1 ] || skip "IPv6 multicast under the preload needs dpsockd (address6): no kernel self-check"
name=$TEST_NAME
MC6=$DPSOCK_SRC/test/tools/mc6.py
G=ff15::7:7
G2=ff15::7:8
P=5300

# ---- 1. the options, Linux first ------------------------------------------------------
test_topo_up 129 "${name}k"
test_topo_ipv6
in_a sysctl -qw net.ipv6.conf.all.disable_ipv6=0 "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=0"
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
in_a ip -6 addr add "$TOPO_ADDR6_A/64" dev "$TOPO_IF_A" nodad
in_a timeout 60 python3 "$MC6" api -I "$TOPO_IF_A" -p 7300 -4 "$TOPO_ADDR_A" \
	>"$TEST_TMP/kernel.txt" 2>"$TEST_TMP/kernel.err" ||
	fail "mc6.py api on Linux failed: $(tail -n 5 "$TEST_TMP/kernel.err")"
grep -qx done "$TEST_TMP/kernel.txt" || fail "mc6.py api on Linux did not finish"

test_topo_up 128
test_topo_ipv6
A6=$TOPO_ADDR6_A
B6=$TOPO_ADDR6_B
# A's kernel: IPv6 off on the port dpsockd owns
in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=1"
TEST_IFACE_KEYS="address6 = \"$A6/64\";"
cap=$TEST_TMP/mld.pcap
# (MLD is ICMPv6 behind a hop-by-hop header: "icmp6" alone misses it)
in_b tcpdump -i "$TOPO_IF_B" -nn -U -w "$cap" ip6 protochain 58 >/dev/null 2>&1 &
tcpdump_pid=$!
on_exit "kill $tcpdump_pid 2>/dev/null; true"
wait_until 5 test -s "$cap"
preload_daemon_start "$name"
rc=0
preload_run timeout 60 python3 "$MC6" api -I "$TOPO_IF_A" -p 7300 -4 "$TOPO_ADDR_A" \
	>"$TEST_TMP/shim.txt" 2>"$TEST_TMP/shim.err" || rc=$?
if ! diff -u "$TEST_TMP/kernel.txt" "$TEST_TMP/shim.txt" >"$TEST_TMP/api.diff"; then
	cat "$TEST_TMP/api.diff" "$TEST_TMP/shim.err"
	fail "the IPv6 multicast options answer otherwise than Linux's (mc6.py exit $rc)"
fi
[ "$rc" = 0 ] || fail "mc6.py api under the preload exited $rc"
ok "$(grep -c . "$TEST_TMP/shim.txt") answers of the IPv6 multicast options equal Linux's"

# seen PATTERN: dpsockd's MLD (from A's MAC: B's kernel speaks MLD too,
# hop limit 1, a link-local source) in the capture, lines matching PATTERN
mac_a=$(in_a cat "/sys/class/net/$TOPO_IF_A/address")
seen() {
	tcpdump -nn -v -r "$cap" "ether src $mac_a and ip6[7] == 1 and ip6 src net fe80::/10" \
		2>/dev/null | grep -c -- "$1" || true
}
seen_ge() { [ "$(seen "$1")" -ge "$2" ]; }
wait_seen() {
	poll_until "${3:-8}" seen_ge "$1" "$2" ||
		fail "no '$1' (x$2) from dpsockd in the capture; its MLD so far:
$(tcpdump -nn -v -r "$cap" 2>/dev/null | tail -n 20)
dpsockd's MLD counters: $("$DPSOCK_STAT" -n "$name" 2>/dev/null | grep mld_ | tr '\n' ' ')"
}

# the solicited-node groups of dpsockd's addresses (address6 ends in ::1)
wait_seen "gaddr ff02::1:ff00:1 to_ex" 1
ok "MLDv2: dpsockd reported the solicited-node group of its address6, as Linux does"

# ---- 2. a feed from B -----------------------------------------------------------------
ifa=$(in_a cat "/sys/class/net/$TOPO_IF_A/ifindex")
ifb=$(in_b cat "/sys/class/net/$TOPO_IF_B/ifindex")
preload_start sub1 python3 "$MC6" sub -g "$G" -p "$P" -I "$ifa" -c -n 3000 -t 10 -w 30
preload_start sub2 python3 "$MC6" sub -g "$G" -p "$P" -s "$B6" -n 3000 -t 10 -w 30
preload_start sub3 python3 "$MC6" sub -g "$G" -p "$P" -s fd00:198:18:128::99 -t 3 -w 20
for s in sub1 sub2 sub3; do
	wait_until 15 grep -q READY "$TEST_TMP/$s.log"
done
wait_seen "ff02::16: .*gaddr $G" 1
ok "MLDv2 report(s) for $G to ff02::16 from dpsockd's link-local address, hop limit 1"
mc=$("$DPSOCK_STAT" -n "$name" -v mc)
grep -q "^$G " <<<"$(sed -n '/^Groups joined/,/^$/p' <<<"$mc")" ||
	fail "dpsock-stat -v mc does not list $G: $mc"
rx0=$(stat_sum "$name" mc_rx)
in_b timeout 60 python3 "$MC6" pub -g "$G" -p "$P" -I "$ifb" -n 3000 -r 20000 -S 1 \
	>"$TEST_TMP/pub.log" 2>&1 || fail "the publisher in B failed: $(cat "$TEST_TMP/pub.log")"
grep -q "SENT 3000 errors=0" "$TEST_TMP/pub.log" || fail "publisher: $(cat "$TEST_TMP/pub.log")"
for s in sub1 sub2 sub3; do
	preload_wait "$s" 40 || fail "$s exited with an error: $(tail -n 3 "$TEST_TMP/$s.log")"
done
for s in sub1 sub2; do
	grep -q "^RESULT received=3000 lost=0 dup=0 foreign=0 pktinfo=[-ok]* from6=ok" "$TEST_TMP/$s.log" ||
		fail "$s: $(grep RESULT "$TEST_TMP/$s.log")"
	[ "$(mcast_source "$s" "$B6")" = 3000 ] || fail "$s: not all from $B6: $(grep SOURCE "$TEST_TMP/$s.log")"
done
grep -q "pktinfo=ok" "$TEST_TMP/sub1.log" || fail "sub1: IPV6_PKTINFO: $(grep RESULT "$TEST_TMP/sub1.log")"
grep -q "^RESULT received=0 " "$TEST_TMP/sub3.log" ||
	fail "sub3 (another source only) got datagrams: $(grep RESULT "$TEST_TMP/sub3.log")"
rx1=$(stat_sum "$name" mc_rx)
[ $((rx1 - rx0)) -ge 3000 ] || fail "dpsockd's mc_rx moved by $((rx1 - rx0)), not 3000"
ok "3000 datagrams from $B6 to two subscriber processes, each once (any-source with IPV6_PKTINFO, source-specific); a third (another source) got none; mc_rx +$((rx1 - rx0))"

# ---- 3. from A: onto the wire and looped back ------------------------------------------
peer_start bsub python3 "$MC6" sub -g "$G2" -p "$((P + 1))" -I "$ifb" -n 500 -t 10 -w 30
wait_until 15 grep -q READY "$TEST_TMP/bsub.log"
preload_start sub4 python3 "$MC6" sub -g "$G2" -p "$((P + 1))" -n 500 -t 10 -w 30
wait_until 15 grep -q READY "$TEST_TMP/sub4.log"
tx0=$(stat_sum "$name" udp_tx)
# where datagrams go missing, should they: B's kernel counts a full socket
# buffer, dpsockd its port's transmit drops
b_rcvbuf() { in_b awk '$1 == "Udp6RcvbufErrors" { print $2 }' /proc/net/snmp6; }
bdrop0=$(b_rcvbuf)
preload_run timeout 60 python3 "$MC6" pub -g "$G2" -p "$((P + 1))" -I "$ifa" -H 1 -n 500 -r 5000 \
	-S 2 >"$TEST_TMP/apub.log" 2>&1 || fail "the publisher in A failed: $(cat "$TEST_TMP/apub.log")"
grep -q "SENT 500 errors=0" "$TEST_TMP/apub.log" || fail "publisher in A: $(cat "$TEST_TMP/apub.log")"
preload_wait bsub 40 || fail "B's subscriber: $(tail -n 3 "$TEST_TMP/bsub.log")"
preload_wait sub4 40 || fail "sub4: $(tail -n 3 "$TEST_TMP/sub4.log")"
for s in bsub sub4; do
	grep -q "^RESULT received=500 lost=0 dup=0 foreign=0 .*from6=ok" "$TEST_TMP/$s.log" ||
		fail "$s: $(grep RESULT "$TEST_TMP/$s.log"); B's Udp6RcvbufErrors +$(($(b_rcvbuf) - ${bdrop0:-0})), dpsockd's tx_drops $(stat_sum "$name" tx_drops || echo ?), udp_tx +$(($(stat_sum "$name" udp_tx) - tx0))"
done
[ "$(mcast_source bsub "$A6")" = 500 ] || fail "B's subscriber: not from $A6: $(grep SOURCE "$TEST_TMP/bsub.log")"
tx1=$(stat_sum "$name" udp_tx)
[ $((tx1 - tx0)) -ge 500 ] || fail "dpsockd sent $((tx1 - tx0)) datagrams, not 500"
ok "500 datagrams from a preloaded publisher to $G2: Linux's subscriber in B got them from $A6, a preloaded one in A too (IPV6_MULTICAST_LOOP)"

# ---- 4. queries ---------------------------------------------------------------------------
preload_start sub5 python3 "$MC6" sub -g "$G" -p "$P" -t 600
wait_until 15 grep -q READY "$TEST_TMP/sub5.log"
q0=$(stat_sum "$name" mld_rx_query_v2)
n=$(seen "gaddr $G is_ex")
in_b python3 "$MC6" query -i "$TOPO_IF_B" -v 2 -m 1000 >/dev/null || fail "mc6.py query failed"
wait_counter_ge "$name" mld_rx_query_v2 $((q0 + 1)) 5
wait_seen "gaddr $G is_ex" $((n + 1)) 5
ok "MLDv2 general query: answered with $G IS_EX"
in_b python3 "$MC6" query -i "$TOPO_IF_B" -v 1 -m 1000 >/dev/null || fail "mc6.py query -v 1 failed"
wait_seen "multicast listener reportmax resp delay: 0 addr: $G" 1 5
mc=$("$DPSOCK_STAT" -n "$name" -v mc)
grep -q "MLDv1 host" <<<"$mc" || fail "dpsock-stat -v mc does not show MLDv1: $(head -4 <<<"$mc")"
ok "MLDv1 query: MLDv1 mode (dpsock-stat -v mc), $G reported with an MLDv1 report"
preload_stop sub5 || true
wait_seen "multicast listener done.*addr: $G" 1 8
ok "MLDv1 mode: the last subscriber of $G gone, an MLDv1 done"
preload_daemon_stop
pass "IPv6 multicast: options as Linux's, a feed to two processes, sends on the wire and looped back, MLDv2 and MLDv1"
