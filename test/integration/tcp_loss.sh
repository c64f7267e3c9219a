#!/usr/bin/env bash
# Loss recovery of dpsock's TCP sender (lwip/tcp_rec.c) against Linux,
# through test/tools/impair: A (dpsock-echo --raw, one worker, af_packet)
# <-veth-> M (the relay) <-veth-> B (Linux). The Linux client in B streams
# pseudo-random data and reads the echo back at the same time, so dpsock
# both receives and sends through the impaired path. Profiles, each its own
# relay run, 1 ms of delay each way:
#
#   reorder    no loss, 2 % reordering, 2 % duplication each way
#   late       no random impairment; three of dpsock's segments (numbers
#              200, 4000, 8000) held 20 ms (--late-new): long enough to be
#              deemed lost, far enough apart for their recoveries not to
#              overlap (a new episode drops the previous one's undo
#              evidence, as Linux does)
#   loss0.1    0.1 % loss, 1 % reordering, 1 % duplication each way
#   loss1      1 % loss, 1 % reordering, 1 % duplication each way
#   loss3      3 % loss, 1 % reordering, 1 % duplication each way
#   spurious-rto  no impairment but one 350 ms blackout of the return path
#              (--stall: B's frames held from the first ACK after the
#              3000th that leaves dpsock's data in flight): dpsock's RTO
#              fires though nothing was lost. lwIP counts the RTO in 50 ms
#              ticks: the first fires 150-200 ms into the blackout, the
#              backed-off second 400 ms after it; 350 ms keeps the end of
#              the blackout (and the held ACKs' trip back) well clear of
#              both (500 ms left 50-100 ms before the second, which a busy
#              machine sometimes used up: a false "timed out twice")
#
# Checks, every profile: the echo is exact (length and sha256); the relay
# really impaired both directions (its counters); no stall longer than one
# RTO on dpsock's side: no segment timed out twice (tcp_rto_repeat did not
# move; the longest time without progress, sampled every 50 ms, is printed:
# on a shared machine it measures the scheduler as much as TCP, so only a
# 10 s stall fails the client). The worker's recovery counters
# (dpsock-stat) move as the impairment says:
#   - duplication: the peer D-SACKs data it got twice (tcp_dsacks > 0);
#   - reordering: segments delivered below a later one (tcp_reorder_seen);
#   - reorder, late: reordering and duplication cost no window: no
#     timeout, and every recovery was undone (tcp_recoveries = tcp_undo);
#     late: the three late segments were resent and proven so by D-SACK
#     (tcp_spurious_rtx >= 3);
#   - spurious-rto: the timeout fires (tcp_rto), F-RTO or the echoed
#     timestamp finds it spurious (tcp_spurious_rto) and the reduction is
#     undone (tcp_undo);
#   - loss: SACK blocks arrive, RACK marks holes lost and they are resent
#     from the scoreboard (tcp_sack_blocks, tcp_rack_lost, tcp_rexmit_sack
#     > 0), and at least 9 of 10 retransmissions are SACK/RACK ones (not
#     after a timeout).
# Rates are printed, never asserted.
# DPSOCK_TEST_FAMILY=6 (the suite's tcp_loss_ipv6): every profile over
# IPv6 (dpsock's address6, B's fd00:198:18:IDX::2): IPv6 gets the same
# recovery as IPv4.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 sha256sum ethtool
require_tools dpsock-echo dpsock-stat impair
BULK_CLIENT=$DPSOCK_SRC/test/tools/bulk_client.py
name=$TEST_NAME
CTRS="tcp_rexmit tcp_rexmit_sack tcp_rexmit_rto tcp_rto tcp_rto_repeat tcp_recoveries tcp_rack_lost
tcp_tlp_probes tcp_sack_blocks tcp_dsacks tcp_reorder_seen tcp_spurious_rtx tcp_undo
tcp_spurious_rto"

kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2" | head -n 1; }

n=$(unique_name l)
impair_topo_up "$n" 68
family=${DPSOCK_TEST_FAMILY:-4}
DST=$TOPO_ADDR_A
if [ "$family" = 6 ]; then
	DST=fd00:198:18:$TOPO_IDX::1
	in_b sysctl -qw "net.ipv6.conf.$TOPO_IF_B.disable_ipv6=0"
	ip -n "$TOPO_NS_B" addr add "fd00:198:18:$TOPO_IDX::2/64" dev "$TOPO_IF_B" nodad ||
		fail "could not give $TOPO_IF_B an IPv6 address"
	TEST_IFACE_KEYS="address6 = \"$DST/64\";"
fi
# one worker on lcore DPSOCK_TEST_LCORE (0)
lc=${DPSOCK_TEST_LCORE:-0}
conf=$(dpsock_conf "$n" "workers = [ $lc ];")
# shellcheck disable=SC2046
app_start "$n" "$conf" dpsock-echo $(DPSOCK_TEST_LCORES=$lc DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$n") \
	-- --raw --tcp-only -p 7
head -c $((1 << 20)) /dev/urandom >"$TEST_TMP/data.bin"

# delta BEFORE AFTER COUNTER: AFTER's value minus BEFORE's ("k=v ..." lines)
delta() { echo $(($(kv "$3" "$2") - $(kv "$3" "$1"))); }
snapshot() {
	local c out=
	for c in $CTRS; do out="$out $c=$(stat_sum "$n" "$c")"; done
	echo "$out"
}

# profile LABEL MIB LOSS REORDER DUP [IMPAIR_ARGS...]: one relay run, one
# stream, the checks.
profile() {
	local label=$1 mib=$2 loss=$3 reorder=$4 dup=$5 s0 s1 out rc=0 want d line c
	shift 5
	impair_start "$label" --loss "$loss" --reorder "$reorder" --dup "$dup" --delay 1 --seed 7 "$@"
	# the neighbours know each other before the stream starts
	wait_until 30 in_b ping -c 1 -W 1 "$DST"
	s0=$(snapshot)
	want=$(for _ in $(seq 1 "$mib"); do cat "$TEST_TMP/data.bin"; done | sha256sum | cut -d' ' -f1)
	out=$(timeout 300 ip netns exec "$TOPO_NS_B" python3 "$BULK_CLIENT" "$DST" 7 \
		"$TEST_TMP/data.bin" "$mib" 240 10 "$TEST_TMP/progress-$label.txt" 0.05 2>&1) || rc=$?
	note "$label: $out"
	[ "$rc" -eq 0 ] || fail "$label: client status $rc: $(grep -m1 '^error:' <<<"$out" || tail -n 2 <<<"$out")"
	[ "$(kv rx_bytes "$out")" = $((mib << 20)) ] || fail "$label: $(kv rx_bytes "$out") bytes came back, $((mib << 20)) went out"
	[ "$(kv tx_sha256 "$out")" = "$want" ] && [ "$(kv rx_sha256 "$out")" = "$want" ] ||
		fail "$label: the echoed stream differs (sent $(kv tx_sha256 "$out"), received $(kv rx_sha256 "$out"), file x$mib $want)"
	# the echo came back whole: every retransmission of it is counted
	# (the worker writes the recovery counters as it works)
	s1=$(snapshot)
	impair_stop
	note "$label: $IMPAIR_A2B"
	note "$label: $IMPAIR_B2A"
	for line in "$IMPAIR_A2B" "$IMPAIR_B2A"; do
		for c in $([ "$dup" = 0 ] || echo dup) $([ "$reorder" = 0 ] || echo reordered) \
			$([ "$loss" = 0 ] || echo lost); do
			[ "$(kv "$c" "$line")" -gt 0 ] || fail "$label: impair $(awk '{ print $2 }' <<<"$line"): $c=0: the path was not impaired"
		done
		[ "$(kv too_big "$line")" = 0 ] || fail "$label: impair: frames too big (GRO/TSO on a veth?)"
	done
	d=""
	for c in $CTRS; do d="$d ${c#tcp_}=$(delta "$s0" "$s1" "$c")"; done
	note "$label: dpsock sender:$d"
	[ "$(delta "$s0" "$s1" tcp_rto_repeat)" = 0 ] ||
		fail "$label: a segment timed out twice: a stall of more than one RTO"
	[ "$dup" = 0 ] || [ "$(delta "$s0" "$s1" tcp_dsacks)" -gt 0 ] || fail "$label: no D-SACK for duplicated data"
	[ "$reorder" = 0 ] || [ "$(delta "$s0" "$s1" tcp_reorder_seen)" -gt 0 ] || fail "$label: reordering not seen"
	if [ "$label" = spurious-rto ]; then
		for c in tcp_rto tcp_spurious_rto tcp_undo; do
			[ "$(delta "$s0" "$s1" "$c")" -gt 0 ] || fail "$label: $c did not move"
		done
	elif [ "$loss" = 0 ]; then
		[ "$(delta "$s0" "$s1" tcp_rto)" = 0 ] || fail "$label: retransmission timeouts without loss"
		[ "$label" != late ] || [ "$(delta "$s0" "$s1" tcp_spurious_rtx)" -ge 3 ] ||
			fail "$label: the late segments' retransmissions were not proven unnecessary"
		[ "$(delta "$s0" "$s1" tcp_recoveries)" = "$(delta "$s0" "$s1" tcp_undo)" ] ||
			fail "$label: reordering cost a window: $(delta "$s0" "$s1" tcp_recoveries) recoveries, $(delta "$s0" "$s1" tcp_undo) undone"
	else
		for c in tcp_sack_blocks tcp_rack_lost tcp_rexmit_sack; do
			[ "$(delta "$s0" "$s1" "$c")" -gt 0 ] || fail "$label: $c did not move"
		done
		[ "$(delta "$s0" "$s1" tcp_rexmit_sack)" -ge $((9 * $(delta "$s0" "$s1" tcp_rexmit_rto))) ] ||
			fail "$label: timeouts repaired too much: $(delta "$s0" "$s1" tcp_rexmit_rto) retransmissions after RTO, $(delta "$s0" "$s1" tcp_rexmit_sack) from SACK/RACK"
	fi
	ok "$label: $mib MiB echoed exact in $(kv elapsed_s "$out") s, longest stall $(kv max_gap_s "$out") s;$d"
}

profile reorder 16 0 2 2
profile late 16 0 0 0 --late-new 200,4000,8000 --hold-ms 20
profile loss0.1 16 0.1 1 1
profile loss1 8 1 1 1
profile loss3 4 3 1 1
profile spurious-rto 16 0 0 0 --stall 3000,350

rc=0
app_stop "$n" || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-echo exited with status $rc (3 = mbuf leak)"
pass "$([ "$family" = 6 ] && echo 'over IPv6: ')echo exact through reordering, duplication, late segments, a return-path blackout and 0.1/1/3 % loss each way; SACK/RACK recovery, spurious recoveries and timeouts undone, no stall beyond one RTO"
