#!/usr/bin/env bash
# Socket-API semantics under the shim: test/tools/plapi runs its battery of
# checks (blocking / non-blocking connect and accept, ECONNREFUSED, EAGAIN,
# partial writes into a full buffer, MSG_PEEK, MSG_WAITALL, SHUT_WR -> peer
# EOF, reset -> ECONNRESET / EPIPE / SIGPIPE vs MSG_NOSIGNAL, SO_ERROR,
# FIONREAD, dup + close of one copy, epoll level / edge / oneshot, poll and
# select time-outs, EINTR from a signal, UDP with MSG_TRUNC, a connection
# shared across fork, threads sharing a socket or a listener...) against a
# Linux peer in namespace B three times:
#   1. on Linux's own sockets (A's kernel holds the address), no shim;
#   2. under libdpsock_preload.so against dpsockd (A's kernel has no
#      address: only dpsockd can carry the traffic);
#   3. the same with DPSOCK_RX_POLL=-1 DPSOCK_SELECT_POLL=-1: every wait
#      spins and never enters the kernel, so only the shim can tell that a
#      signal handler ran (EINTR, or a restart under SA_RESTART).
# The transcripts must be identical, and dpsockd's counters must show that
# the shim's runs went through it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip diff
require_preload
require_tools plapi
PLAPI=$(dpsock_tool plapi)
name=$TEST_NAME
test_topo_up 93
base=7100

peer_start peer "$PLAPI" peer "$TOPO_ADDR_B" "$base"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" "$base" 20

# 1. Linux on both sides
ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
wait_tcp_port "$TOPO_NS_A" "$TOPO_ADDR_B" "$base" 20
in_a timeout 120 "$PLAPI" app "$TOPO_ADDR_B" "$base" >"$TEST_TMP/kernel.txt" 2>"$TEST_TMP/kernel.err" ||
	fail "plapi on kernel sockets failed: $(tail -n 5 "$TEST_TMP/kernel.err" "$TEST_TMP/kernel.txt")"
grep -qx done "$TEST_TMP/kernel.txt" || fail "plapi on kernel sockets did not finish"
[ -z "${PLAPI_SHOW:-}" ] || sed "s/^/   /" "$TEST_TMP/kernel.txt"
ok "kernel transcript: $(wc -l <"$TEST_TMP/kernel.txt") lines"
ip -n "$TOPO_NS_A" addr flush dev "$TOPO_IF_A"
# let the peer forget A's kernel (its neighbour entry points at the same MAC
# as dpsockd's port on the same veth, so nothing to flush there)

# 2. the same program under the shim, against dpsockd
preload_daemon_start "$name"
con0=$(preload_stat tcp_connected)
acc0=$(preload_stat tcp_accepted)
udp0=$(preload_stat udp_tx)
rc=0
preload_run timeout 120 "$PLAPI" app "$TOPO_ADDR_B" "$base" >"$TEST_TMP/shim.txt" \
	2>"$TEST_TMP/shim.err" || rc=$?
if ! diff -u "$TEST_TMP/kernel.txt" "$TEST_TMP/shim.txt" >"$TEST_TMP/diff.txt"; then
	cat "$TEST_TMP/diff.txt"
	echo "--- shim log:"
	preload_logs | tail -n 40
	fail "transcripts differ (plapi exit $rc): see the diff above"
fi
[ "$rc" = 0 ] || fail "plapi under the shim exited $rc"
ok "transcripts identical ($(wc -l <"$TEST_TMP/shim.txt") lines)"

# 3. spinning forever: signals must still interrupt (or restart) the waits
if [ "$PRELOAD_KERNEL" != 1 ]; then
	rc=0
	PRELOAD_ENV=(DPSOCK_RX_POLL=-1 DPSOCK_SELECT_POLL=-1)
	preload_run timeout 180 "$PLAPI" app "$TOPO_ADDR_B" "$base" >"$TEST_TMP/spin.txt" \
		2>"$TEST_TMP/spin.err" || rc=$?
	PRELOAD_ENV=()
	if ! diff -u "$TEST_TMP/kernel.txt" "$TEST_TMP/spin.txt" >"$TEST_TMP/diff-spin.txt"; then
		cat "$TEST_TMP/diff-spin.txt"
		fail "transcripts differ when every wait spins (plapi exit $rc): see the diff above"
	fi
	[ "$rc" = 0 ] || fail "plapi spinning under the shim exited $rc"
	ok "transcript identical with every wait spinning (DPSOCK_RX_POLL=-1 DPSOCK_SELECT_POLL=-1)"
fi
# plapi makes 12 connections that succeed, accepts 4 and sends 3 datagrams
preload_offload_ge "$name" tcp_connected $((con0 + 12)) 5
con1=$STAT_VALUE
preload_offload_ge "$name" tcp_accepted $((acc0 + 4)) 5
acc1=$STAT_VALUE
preload_offload_ge "$name" udp_tx $((udp0 + 3)) 5
[ "$PRELOAD_KERNEL" = 1 ] ||
	ok "through dpsockd: tcp_connected +$((con1 - con0)), tcp_accepted +$((acc1 - acc0)), udp_tx +$((STAT_VALUE - udp0))"
pass "the socket API behaves the same on Linux and under the shim"
