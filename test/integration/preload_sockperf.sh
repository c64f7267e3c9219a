#!/usr/bin/env bash
# sockperf (Debian's, unmodified) under libdpsock_preload.so, both roles.
#
# Part 1: sockperf servers under the shim on dpsockd's address (one UDP on
# port 11111, one TCP on 11112); sockperf clients in the Linux peer's
# namespace, -t 2 each:
#   - ping-pong UDP 64 B, TCP 64 B and TCP 8000 B: a latency summary, >0
#     observations, no ERROR, exit 0; dpsockd sent at least one reply per
#     reply sockperf received (udp_tx, resp. tcp_tx_bytes);
#   - throughput UDP and TCP, 1400 B: a message rate > 0; for TCP every byte
#     sockperf sent reached dpsockd (tcp_rx_bytes).
# Part 2: sockperf servers on the kernel in namespace B; sockperf clients
# under the shim in namespace A (whose kernel has no address: only dpsockd
# can carry them):
#   - ping-pong UDP 64 B and TCP 64 B: latency summary, observations > 0;
#     dpsockd's udp_tx / tcp_connected moved;
#   - throughput TCP 1400 B: rate > 0, the bytes left through dpsockd.
# Both servers under the shim stop on SIGINT; dpsockd stops cleanly.
# Latencies are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip sockperf
require_preload
name=$TEST_NAME
test_topo_up 103
preload_daemon_start "$name"


# ---- part 1: servers under the shim ------------------------------------------
preload_start sp-udp sockperf server -i "$TOPO_ADDR_A" -p 11111
preload_start sp-tcp sockperf server -i "$TOPO_ADDR_A" -p 11112 --tcp
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 11112 20
# UDP has no handshake: wait for the server's "waiting" line.
wait_until 20 grep -q 'using' "$TEST_TMP/sp-udp.log"
u=(-i "$TOPO_ADDR_A" -p 11111 -t 2)
t=(-i "$TOPO_ADDR_A" -p 11112 -t 2 --tcp)

before=$(preload_stat udp_tx)
pingpong srv-udp-pp-64 "$TOPO_NS_B" "${u[@]}" -m 64
preload_offload_ge "$name" udp_tx $((before + PP_RECV)) 5
ok "server under the shim, UDP ping-pong 64 B: $PP_OBS observations; udp_tx +$((STAT_VALUE - before))"

for m in 64 8000; do
	before=$(preload_stat tcp_tx_bytes)
	pingpong "srv-tcp-pp-$m" "$TOPO_NS_B" "${t[@]}" -m "$m"
	preload_offload_ge "$name" tcp_tx_bytes $((before + PP_RECV * m)) 5
	ok "server under the shim, TCP ping-pong $m B: $PP_OBS observations; tcp_tx_bytes +$((STAT_VALUE - before))"
done

before=$(preload_stat udp_rx)
throughput srv-udp-tp-1400 "$TOPO_NS_B" "${u[@]}" -m 1400
preload_offload_ge "$name" udp_rx $((before + 1)) 5
ok "server under the shim, UDP throughput 1400 B: rate > 0; dpsockd received $((STAT_VALUE - before)) of $TP_SENT datagrams"

before=$(preload_stat tcp_rx_bytes)
throughput srv-tcp-tp-1400 "$TOPO_NS_B" "${t[@]}" -m 1400
preload_offload_ge "$name" tcp_rx_bytes $((before + TP_SENT * 1400)) 10
ok "server under the shim, TCP throughput 1400 B: all $TP_SENT messages reached dpsockd"

for s in sp-udp sp-tcp; do
	rc=0
	preload_stop "$s" INT || rc=$?
	[ "$rc" -eq 0 ] || fail "sockperf server $s exited with status $rc on SIGINT: $(tail -n 3 "$TEST_TMP/$s.log" | tr '\n' ' ')"
done

# ---- part 2: clients under the shim, kernel servers in B ----------------------
peer_start kern-udp sockperf server -i "$TOPO_ADDR_B" -p 11121
peer_start kern-tcp sockperf server -i "$TOPO_ADDR_B" -p 11122 --tcp
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" 11122 20
wait_until 20 grep -q 'using' "$TEST_TMP/kern-udp.log"

before=$(preload_stat udp_tx)
pingpong cli-udp-pp-64 preload -i "$TOPO_ADDR_B" -p 11121 -t 2 -m 64
preload_offload_ge "$name" udp_tx $((before + PP_SENT)) 5
ok "client under the shim, UDP ping-pong 64 B: $PP_OBS observations; udp_tx +$((STAT_VALUE - before))"

before=$(preload_stat tcp_connected)
pingpong cli-tcp-pp-64 preload -i "$TOPO_ADDR_B" -p 11122 -t 2 -m 64 --tcp
preload_offload_ge "$name" tcp_connected $((before + 1)) 5
ok "client under the shim, TCP ping-pong 64 B: $PP_OBS observations; tcp_connected +$((STAT_VALUE - before))"

before=$(preload_stat tcp_tx_bytes)
throughput cli-tcp-tp-1400 preload -i "$TOPO_ADDR_B" -p 11122 -t 2 -m 1400 --tcp
# sockperf counts one message it did not send when the alarm that ends the
# run interrupts a send blocked on a full buffer: it takes the message's
# sequence number before the send, and keeps it when the send fails with
# EINTR (nothing sent, as Linux's send on a blocking socket). What left
# through dpsockd is then TP_SENT or TP_SENT - 1 whole messages, nothing else.
preload_offload_ge "$name" tcp_tx_bytes $((before + (TP_SENT - 1) * 1400)) 10
if [ "$PRELOAD_KERNEL" != 1 ]; then
	sent=$(($(stat_settled "$name" tcp_tx_bytes) - before))
	[ "$sent" -eq $((TP_SENT * 1400)) ] || [ "$sent" -eq $(((TP_SENT - 1) * 1400)) ] ||
		fail "client under the shim, TCP throughput: $sent bytes left through dpsockd, sockperf counted $TP_SENT messages of 1400 B"
	ok "client under the shim, TCP throughput 1400 B: $((sent / 1400)) whole messages left through dpsockd (sockperf counted $TP_SENT)"
fi
preload_show_clients

preload_daemon_stop
pass "sockperf under the shim: server (UDP/TCP ping-pong and throughput) and client (UDP/TCP) against Linux"
