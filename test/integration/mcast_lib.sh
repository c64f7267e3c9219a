# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034
#
# test/integration/mcast_lib.sh — what the multicast tests share, on top of
# lib.sh (source lib.sh first, then this, then test_topo_up).
#
#   mcast_bridge_up    a second veth pair, MC_IF_A2 (namespace A, for a
#                      native app) <-> MC_IF_B2, and a Linux bridge MC_BR in B
#                      holding both B ends and B's address: one datagram B
#                      sends to a group reaches both A ends, as through a
#                      switch. The bridge snoops IGMP (multicast_snooping, on
#                      by default): once a group has a member, it forwards
#                      the group only to the ports that reported it.
#   mcast_route        the route B's senders take to 224.0.0.0/4 (MC_PEER_IF)
#   mcast_peer_addr2   a second source address on B (MC_SRC2)
#   mcast_kernel_route the kernel self-check's route for groups in A
#   MCTOOL             test/tools/mctool

MCTOOL=$(dpsock_tool mctool) || MCTOOL=
MC_PEER_IF=

# mcast_route: B's senders reach 224.0.0.0/4 through MC_PEER_IF (TOPO_IF_B,
# or the bridge once mcast_bridge_up ran).
mcast_route() {
	MC_PEER_IF=${MC_PEER_IF:-$TOPO_IF_B}
	ip -n "$TOPO_NS_B" route replace 224.0.0.0/4 dev "$MC_PEER_IF"
}

mcast_bridge_up() {
	MC_IF_A2=m${TOPO_IDX}a$$
	MC_IF_B2=m${TOPO_IDX}b$$
	MC_BR=m${TOPO_IDX}br$$
	MC_ADDR_A2=198.18.$TOPO_IDX.3
	ip -n "$TOPO_NS_A" link add "$MC_IF_A2" mtu "$TOPO_MTU" type veth \
		peer name "$MC_IF_B2" netns "$TOPO_NS_B" mtu "$TOPO_MTU" ||
		fail "could not create the second veth pair"
	ip -n "$TOPO_NS_B" link add "$MC_BR" type bridge || fail "could not create a bridge in B"
	# finished checksums on the wire, as topo.sh does for B's own end
	_topo_ethtool "$TOPO_NS_B" "$MC_IF_B2" tx off rx off tso off gso off gro off
	_topo_ethtool "$TOPO_NS_B" "$MC_BR" tx off tso off gso off
	_topo_ethtool "$TOPO_NS_A" "$MC_IF_A2" gro off lro off rx-gro-list off
	ip -n "$TOPO_NS_B" addr del "$TOPO_ADDR_B/$TOPO_PLEN" dev "$TOPO_IF_B"
	ip -n "$TOPO_NS_B" link set dev "$TOPO_IF_B" master "$MC_BR"
	ip -n "$TOPO_NS_B" link set dev "$MC_IF_B2" master "$MC_BR"
	ip -n "$TOPO_NS_B" addr add "$TOPO_ADDR_B/$TOPO_PLEN" dev "$MC_BR"
	ip -n "$TOPO_NS_B" link set dev "$MC_IF_B2" up
	ip -n "$TOPO_NS_B" link set dev "$MC_BR" up
	ip -n "$TOPO_NS_A" link set dev "$MC_IF_A2" up
	MC_PEER_IF=$MC_BR
	mcast_route
}

# mcast_kernel_route: in the kernel self-check (DPSOCK_PRELOAD_KERNEL=1),
# A's kernel owns the address and needs a route for groups (dpsockd does not).
mcast_kernel_route() {
	[ "$PRELOAD_KERNEL" != 1 ] || ip -n "$TOPO_NS_A" route replace 224.0.0.0/4 dev "$TOPO_IF_A"
}

# mcast_peer_addr2: a second address on B's side (the second source).
mcast_peer_addr2() {
	MC_SRC2=$(topo_peer_addr 1)
	ip -n "$TOPO_NS_B" addr add "$MC_SRC2/$TOPO_PLEN" dev "${MC_PEER_IF:-$TOPO_IF_B}"
}

# mcast_result LABEL KEY: a key=value of the RESULT line in LABEL's log.
mcast_result() {
	sed -n "s/^RESULT .*\\b$2=\\([^ ]*\\).*/\\1/p" "$TEST_TMP/$1.log" | tail -n 1
}

# mcast_source LABEL ADDR: datagrams LABEL got from ADDR (0 if none).
mcast_source() {
	local n
	n=$(sed -n "s/^SOURCE $2:[0-9]* id=[0-9]* datagrams=\\([0-9]*\\)$/\\1/p" "$TEST_TMP/$1.log" |
		awk '{ s += $1 } END { print s + 0 }')
	echo "${n:-0}"
}
