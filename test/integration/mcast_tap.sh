#!/usr/bin/env bash
# UDP multicast on DPDK's net_tap PMD, a port that takes a multicast MAC list
# (af_packet, which the other multicast tests use, has no filter at all):
# dpsockd serves the tap (two workers), the kernel side of the tap in the
# same namespace is the Linux publisher, preloaded subscribers run there
# too (their sockets are offloaded: dpsockd owns the groups).
#   1. at start dpsockd probed the port's filter: dpsock-stat -v mc shows a
#      MAC list of 0 MACs;
#   2. subscribers of G1, G2 and G3, where G3 maps to G1's MAC (the low 23
#      bits agree): the list holds 2 MACs;
#   3. 500 datagrams to each group from the kernel side: each subscriber
#      gets its group's 500, none lost (through a PMD with checksum
#      offloads);
#   4. the subscribers of G1 and G2 exit: the list holds G3's MAC alone;
#      the last one exits: 0 MACs, and dpsockd stops cleanly.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip
require_preload
require_tools dpsockd dpsock-stat mctool
[ -c /dev/net/tun ] || skip "no /dev/net/tun: the tap PMD cannot run here"
[ "$PRELOAD_KERNEL" != 1 ] || skip "tests dpsockd's port filter (no kernel self-check)"

name=$TEST_NAME
ns=dps-$name
tap=dpm$$
tap=${tap:0:15}
addr_a=198.18.52.1
addr_k=198.18.52.2
G1=239.1.1.1
G2=239.1.1.2
G3=224.1.1.1 # 01:00:5e:01:01:01, as G1
P=5600
ip netns add "$ns" || fail "cannot create namespace $ns"
on_exit ip netns del "$ns"
ip -n "$ns" link set lo up

conf=$TEST_TMP/$name.conf
printf 'name = "%s";\nworkers = [ 0, 1 ];\nruntime_dir = "%s";\ninterfaces = ( { port = "net_tap0"; address = "%s/24"; } );\n' \
	"$name" "$TEST_TMP" "$addr_a" >"$conf"
# dpsockd_start and preload_start run in TOPO_NS_A: here the tap's namespace
TOPO_NS_A=$ns
PRELOAD_NAME=$name
# shellcheck disable=SC2046
dpsockd_start "$name" "$conf" -l 0-1 --no-pci --vdev="net_tap0,iface=$tap" $(eal_mem_args)
wait_until 10 test -S "$TEST_TMP/$name.sock"
ip -n "$ns" link set "$tap" up
ip -n "$ns" addr add "$addr_k/24" dev "$tap"
ip -n "$ns" route replace 224.0.0.0/4 dev "$tap"

# macs N: dpsock-stat -v mc shows the port's MAC list with N MACs
macs() {
	local out
	out=$("$DPSOCK_STAT" -n "$name" -v mc)
	grep -q "multicast filter: MAC list ($1 MACs)" <<<"$out"
}
wait_macs() {
	poll_until 5 macs "$1" ||
		fail "dpsock-stat -v mc: no MAC list of $1: $("$DPSOCK_STAT" -n "$name" -v mc | head -n 3)"
}

# 1. the probe
wait_macs 0
ok "net_tap: dpsockd programs a multicast MAC list (0 MACs before any join)"

# 2. joins
for g in 1 2 3; do
	eval "grp=\$G$g"
	# shellcheck disable=SC2154
	# a port each: with IP_MULTICAST_ALL (on) a socket on a shared port
	# would also get the other groups, as on Linux
	preload_start "sub$g" "$MCTOOL" sub -g "$grp" -p $((P + g)) -n 500 -t 600
done
for g in 1 2 3; do wait_until 10 grep -q READY "$TEST_TMP/sub$g.log"; done
wait_macs 2
ok "$G1, $G2 and $G3 joined: 2 MACs in the list ($G3 shares $G1's)"

# 3. datagrams from the kernel side
for g in 1 2 3; do
	eval "grp=\$G$g"
	out=$(ip netns exec "$ns" "$MCTOOL" pub -g "$grp" -p $((P + g)) -n 500 -r 5000 -i "$addr_k" -S "$g")
	grep -q "SENT 500 errors=0" <<<"$out" || fail "publisher to $grp: $out"
done
# sub1 and sub2 stop after their 500; sub3 too
for g in 1 2 3; do
	preload_wait "sub$g" 20 || fail "sub$g: $(tail -n 3 "$TEST_TMP/sub$g.log")"
	[ "$(mcast_result "sub$g" received)" = 500 ] && [ "$(mcast_result "sub$g" lost)" = 0 ] &&
		[ "$(mcast_result "sub$g" foreign)" = 0 ] ||
		fail "sub$g: $(grep RESULT "$TEST_TMP/sub$g.log")"
done
ok "each subscriber got its group's 500 datagrams over the tap, none lost, none of another group"

# 4. the list follows the leaves (all three ended with their 500); a new
# subscriber of G3 alone: 1 MAC
wait_macs 0
preload_start sub4 "$MCTOOL" sub -g "$G3" -p "$P" -t 600
wait_until 10 grep -q READY "$TEST_TMP/sub4.log"
wait_macs 1
preload_stop sub4 || true
wait_macs 0
ok "the list follows the memberships: 0 after the leaves, 1 for $G3 alone, 0 again"

dpsockd_stop_clean
pass "net_tap: the multicast MAC list, delivery of three groups, the list after leaves"
