#!/usr/bin/env bash
# UDP datagrams larger than the MTU over net_af_packet: the kernel
# reassembles their fragments before af_packet sees them (its fanout asks
# PACKET_FANOUT_FLAG_DEFRAG) and hands over one frame per datagram, as large
# as af_packet's ring slot (framesz) allows. dpsock sizes its mbufs from the
# port's framesz (af_packet cannot start otherwise), so with framesz=16384
# an 8000-byte datagram arrives whole, goes up as one IP packet, and its
# echo leaves in fragments of the 1500-byte MTU.
#   - sockperf ping-pong UDP 8000 B from Linux against dpsock-echo (two
#     workers): observations, one reply per request (udp_tx);
#   - no frame cut short (rx_drop_ip_len stays 0), at least 6 frames per
#     echo on the port (8028-byte datagrams in 1500-byte fragments).
set -euo pipefail
# af_packet's own limit (its ring slot) is what this tests
DPSOCK_TEST_PMD=af_packet
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip sockperf
require_tools dpsock-echo dpsock-stat
name=$TEST_NAME
test_topo_up 101
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
# shellcheck disable=SC2046
app_start "$name" "$conf" dpsock-echo -l 0-1 --no-pci --file-prefix "$name" \
	"--vdev=net_af_packet0,iface=$TOPO_IF_A,qpairs=2,framecnt=1024,framesz=16384,blocksz=16384" \
	$(eal_mem_args) -- --udp-only
tx0=$(stat_sum "$name" udp_tx)
ptx0=$(stat_get "$name" port.0.tx_packets)
pingpong jumbo "$TOPO_NS_B" -i "$TOPO_ADDR_A" -p 11111 -t 2 -m 8000
wait_counter_ge "$name" udp_tx $((tx0 + PP_RECV)) 5
drops=$(stat_sum "$name" rx_drop_ip_len)
[ "$drops" = 0 ] || fail "$drops frames cut short (rx_drop_ip_len)"
# the port's counters are refreshed every 100 ms
wait_counter_ge "$name" port.0.tx_packets $((ptx0 + 6 * PP_RECV)) 5
frames=$((STAT_VALUE - ptx0))
ok "8000-byte datagrams over af_packet (framesz 16384): $PP_RECV echoed, $frames frames sent, none cut short"
app_stop "$name" || fail "dpsock-echo did not stop cleanly"
pass "UDP larger than the MTU over net_af_packet"
