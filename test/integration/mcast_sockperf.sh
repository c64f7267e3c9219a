#!/usr/bin/env bash
# sockperf with a multicast address, sockperf's own multicast mode: the
# client (namespace B, Linux) joins the group and sends to it; the server
# joins it and answers to the group at the client's port.
#   1. an unmodified sockperf server under the preload (sockperf sr --ip
#      GROUP): ping-pong (observations, latency) and throughput from B; the
#      requests and answers went through dpsockd (mc_rx, udp_tx);
#   2. the native dpsock-echo --join GROUP as the server: ping-pong.
# Latencies are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip sockperf
require_preload
require_tools dpsock-echo dpsock-stat
name=$TEST_NAME
test_topo_up 99
mcast_route
G=239.10.10.10
P=11111
sp=(--ip "$G" -p "$P" --mc-tx-if "$TOPO_ADDR_B" --mc-rx-if "$TOPO_ADDR_B" -t 2)

# 1. sockperf under the preload
preload_daemon_start "$name"
mcast_kernel_route
preload_start srv sockperf sr --ip "$G" -p "$P"
preload_offload_ge "$name" igmp_tx_report_v3 1 10
rx0=$(preload_stat mc_rx)
tx0=$(preload_stat udp_tx)
pingpong preload-pp "$TOPO_NS_B" "${sp[@]}" -m 64
if [ "$PRELOAD_KERNEL" != 1 ]; then
	preload_offload_ge "$name" mc_rx $((rx0 + PP_RECV)) 5
	preload_offload_ge "$name" udp_tx $((tx0 + PP_RECV)) 5
	ok "the requests and answers went through dpsockd (mc_rx, udp_tx >= $PP_RECV)"
fi
rx0=$(preload_stat mc_rx)
throughput preload-tp "$TOPO_NS_B" "${sp[@]}" -m 64
[ "$PRELOAD_KERNEL" = 1 ] || preload_offload_ge "$name" mc_rx $((rx0 + 1000)) 5
preload_stop srv || true
preload_daemon_stop
ok "sockperf sr --ip $G under the preload: ping-pong and throughput"

# 2. the native app as the server
if [ "$PRELOAD_KERNEL" != 1 ]; then
	conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
	# shellcheck disable=SC2207
	eal=($(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name"))
	app_start "$name" "$conf" dpsock-echo "${eal[@]}" -- --udp-only -p "$P" --join "$G"
	wait_counter_ge "$name" igmp_tx_report_v3 1 10
	pingpong native-pp "$TOPO_NS_B" "${sp[@]}" -m 64
	app_stop "$name" || fail "dpsock-echo did not stop cleanly"
	ok "dpsock-echo --join $G: ping-pong"
fi
pass "sockperf with a multicast address: preloaded and native servers"
