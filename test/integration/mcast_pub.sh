#!/usr/bin/env bash
# A publisher under the preload: an unmodified program (test/tools/mctool)
# sends to a group through dpsockd, to Linux subscribers in namespace B and
# to a preloaded subscriber on the same dpsockd (A's kernel has no address,
# no route and no membership: every datagram goes through dpsockd).
#   1. defaults: the datagrams leave with TTL 1 (Linux's default, seen by
#      tcpdump in B), the Linux subscriber gets all 1000 and the preloaded
#      one gets all 1000 too, looped back inside dpsockd
#      (IP_MULTICAST_LOOP on by default: counter mc_loop);
#   2. IP_MULTICAST_TTL 4 and IP_MULTICAST_LOOP 0: TTL 4 on the wire, the
#      Linux subscriber gets them, the preloaded one none;
#   3. IP_MULTICAST_IF naming dpsockd's address, and a publisher bound to
#      the group's port: the same as 1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip tcpdump
require_preload
require_tools mctool dpsock-stat
name=$TEST_NAME
test_topo_up 97
G1=239.8.8.1
G2=239.8.8.2
P=5100
N=1000

cap=$TEST_TMP/udp.pcap
in_b tcpdump -i "$TOPO_IF_B" -nn -U -v -w "$cap" "udp and dst net 224.0.0.0/4" >/dev/null 2>&1 &
tcpdump_pid=$!
on_exit "kill $tcpdump_pid 2>/dev/null; true"
preload_daemon_start "$name"
mcast_kernel_route

# ttl_seen GROUP: the TTLs tcpdump saw on datagrams to GROUP (distinct)
ttl_seen() {
	tcpdump -nn -v -r "$cap" "dst host $1" 2>/dev/null | sed -n 's/.* ttl \([0-9]*\),.*/\1/p' | sort -u
}
# pcap_has GROUP N: the capture holds N datagrams to GROUP (or more)
pcap_has() {
	[ "$(tcpdump -nn -r "$cap" "dst host $1" 2>/dev/null | wc -l)" -ge "$2" ]
}

round() { # label group mctool-pub-options...
	local label=$1 g=$2 lsub psub
	shift 2
	lsub=lsub-$label
	psub=psub-$label
	peer_start "$lsub" "$MCTOOL" sub -g "$g" -p "$P" -i "$TOPO_ADDR_B" -n "$N" -t 4 -K 8388608
	preload_start "$psub" "$MCTOOL" sub -g "$g" -p "$P" -r -n "$N" -t 4
	wait_until 10 grep -q READY "$TEST_TMP/$lsub.log"
	wait_until 10 grep -q READY "$TEST_TMP/$psub.log"
	preload_run "$MCTOOL" pub -g "$g" -p "$P" -n "$N" -r 4000 "$@" >"$TEST_TMP/pub-$label.log" ||
		fail "$label: the preloaded publisher failed: $(cat "$TEST_TMP/pub-$label.log")"
	grep -q "SENT $N errors=0" "$TEST_TMP/pub-$label.log" ||
		fail "$label: $(cat "$TEST_TMP/pub-$label.log")"
	preload_wait "$lsub" 30 || fail "$label: Linux subscriber failed: $(tail -n 3 "$TEST_TMP/$lsub.log")"
	preload_wait "$psub" 30 || fail "$label: preloaded subscriber failed: $(tail -n 3 "$TEST_TMP/$psub.log")"
	LGOT=$(mcast_result "$lsub" received)
	PGOT=$(mcast_result "$psub" received)
	[ "$(mcast_result "$lsub" lost)" = 0 ] || fail "$label: Linux subscriber lost some: $(grep RESULT "$TEST_TMP/$lsub.log")"
}

# 1. defaults
mc0=$(preload_stat mc_loop)
round default "$G1"
[ "$LGOT" = "$N" ] || fail "default: the Linux subscriber got $LGOT of $N"
[ "$PGOT" = "$N" ] || fail "default: the preloaded subscriber got $PGOT of $N (loopback)"
wait_until 5 pcap_has "$G1" "$N"
[ "$(ttl_seen "$G1")" = 1 ] || fail "default TTL on the wire: $(ttl_seen "$G1" | tr '\n' ' '), want 1"
preload_offload_ge "$name" mc_loop $((mc0 + N)) 5
ok "defaults: TTL 1 on the wire; Linux subscriber $LGOT/$N; preloaded subscriber $PGOT/$N through the loopback (mc_loop $STAT_VALUE)"

# 2. TTL 4, no loopback
mc0=$(preload_stat mc_loop)
round noloop "$G2" -T 4 -o 0
[ "$LGOT" = "$N" ] || fail "noloop: the Linux subscriber got $LGOT of $N"
[ "$PGOT" = 0 ] || fail "noloop: the preloaded subscriber got $PGOT with IP_MULTICAST_LOOP 0"
wait_until 5 pcap_has "$G2" "$N"
[ "$(ttl_seen "$G2")" = 4 ] || fail "IP_MULTICAST_TTL 4 on the wire: $(ttl_seen "$G2" | tr '\n' ' ')"
[ "$(preload_stat mc_loop)" = "$mc0" ] || fail "mc_loop moved with IP_MULTICAST_LOOP 0"
ok "IP_MULTICAST_TTL 4: TTL 4 on the wire; IP_MULTICAST_LOOP 0: Linux $LGOT/$N, preloaded none"

# 3. IP_MULTICAST_IF by dpsockd's address, the publisher bound to the port
round ifaddr "$G1" -i "$TOPO_ADDR_A" -b "0.0.0.0:$((P + 1))"
[ "$LGOT" = "$N" ] && [ "$PGOT" = "$N" ] ||
	fail "IP_MULTICAST_IF $TOPO_ADDR_A: Linux got $LGOT, preloaded $PGOT, of $N"
grep -q "SOURCE $TOPO_ADDR_A:$((P + 1)) " "$TEST_TMP/lsub-ifaddr.log" ||
	fail "the Linux subscriber did not see $TOPO_ADDR_A:$((P + 1)) as the source: $(cat "$TEST_TMP/lsub-ifaddr.log")"
ok "IP_MULTICAST_IF $TOPO_ADDR_A, bound publisher: both got $N, from $TOPO_ADDR_A:$((P + 1))"
preload_daemon_stop
pass "a preloaded publisher reached Linux and same-dpsockd subscribers; TTL and loopback as Linux"
