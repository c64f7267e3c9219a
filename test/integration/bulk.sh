#!/usr/bin/env bash
# Bulk TCP through dpsock-echo --raw (one worker on the test port): one
# connection from the Linux peer streams pseudo-random data in and reads
# the echo back at the same time; what comes back must be what went out.
#
# Part 1, a plain veth (A <-> B): 1 GiB each way (a 64 MiB file from
# /dev/urandom sent 16 times). Checks: the client sent exactly 1 GiB whose
# sha256 is the file's 16-fold concatenation's, received exactly 1 GiB with
# the same sha256, within the time bound, never more than 10 s without
# progress; the app and stack counted the bytes both ways; received
# segments were merged before lwIP (rx_gro_merged grew: tcp.gro is on by
# default, so in part 2 the merging sees the loss, reordering and
# duplication and the echo must still be exact); clean stop.
#
# Part 2, the same through an impaired path: A <-veth-> M <-veth-> B, where
# test/tools/impair relays frames in namespace M with 1 % loss, 1 %
# reordering, 1 % duplication and 5 ms delay in each direction (the kernel
# here has no tc netem). Same checks, with a smaller stream (BULK_IMPAIRED_MB,
# default 64 MiB: a fresh 64 MiB file once), bounded by 240 s. With 10 ms of
# RTT and 1 % loss each way, a loss-based congestion control (dpsock's
# CUBIC, in its Reno-friendly region at this RTT) holds about 1.2/sqrt(0.01)
# segments per RTT: ~1.7 MB/s echoed; measured on a 2-core machine: 1.7 MiB/s each
# way with SACK recovery (0.8 MiB/s when lwIP recovered one loss per RTT or
# by timeout). The relay must have really lost, duplicated and reordered
# frames both ways (its counters), and the echo must still be exact with no
# stall beyond 10 s (a retransmission timeout, even backed off several
# times, stays below that). tcp_loss.sh checks the recovery itself.
#
# Part 3, the same relay with dpsock sending super-segments
# (tcp.segmentation = "gso", BULK_GSO_MB, default 16 MiB): the same checks,
# and segments were joined and cut by GSO.
#
# Throughputs are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 sha256sum ethtool
require_tools dpsock-echo dpsock-stat impair
name=$TEST_NAME
file_mb=${BULK_FILE_MB:-64}
repeat=${BULK_REPEAT:-16}
impaired_mb=${BULK_IMPAIRED_MB:-64}
gso_mb=${BULK_GSO_MB:-16}
stall_s=10

BULK_CLIENT=$DPSOCK_SRC/test/tools/bulk_client.py

# kv KEY LINE: the value of KEY=... in LINE.
kv() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" <<<"$2" | head -n 1; }

# make_stream MB: write $TEST_TMP/data.bin (MB MiB from /dev/urandom).
make_stream() {
	head -c $(($1 << 20)) /dev/urandom >"$TEST_TMP/data.bin" ||
		fail "could not write $1 MiB to $TEST_TMP/data.bin"
}

# expected_sha REPEAT: sha256 of data.bin concatenated REPEAT times.
expected_sha() {
	local _
	for _ in $(seq 1 "$1"); do cat "$TEST_TMP/data.bin"; done | sha256sum | cut -d' ' -f1
}

# run_bulk LABEL APPNAME REPEAT LIMIT_S: run the client from B against the
# echo on A, check everything, print the throughput.
run_bulk() {
	local label=$1 app=$2 rep=$3 limit=$4 out rc=0 want bytes rx0 tx0 rx1 tx1 mbs gro0 gro1
	want=$(expected_sha "$rep")
	bytes=$(($(stat -c %s "$TEST_TMP/data.bin") * rep))
	rx0=$(stat_sum "$app" tcp_rx_bytes)
	tx0=$(stat_sum "$app" tcp_tx_bytes)
	gro0=$(stat_sum "$app" rx_gro_merged)
	out=$(timeout $((limit + 30)) ip netns exec "$TOPO_NS_B" python3 "$BULK_CLIENT" \
		"$TOPO_ADDR_A" 7 "$TEST_TMP/data.bin" "$rep" "$limit" "$stall_s" \
		"$TEST_TMP/progress-$label.txt" 2>&1) || rc=$?
	note "$label: $out"
	if [ "$rc" -ne 0 ]; then
		echo "---- last progress samples (seconds, bytes received) ----" >&2
		tail -n 8 "$TEST_TMP/progress-$label.txt" >&2 || true
		fail "$label: client status $rc: $(grep -m1 '^error:' <<<"$out" || tail -n 3 <<<"$out")"
	fi
	[ "$(kv tx_bytes "$out")" = "$bytes" ] || fail "$label: sent $(kv tx_bytes "$out") bytes, expected $bytes"
	[ "$(kv tx_sha256 "$out")" = "$want" ] ||
		fail "$label: the client's sent stream hashes to $(kv tx_sha256 "$out"), the file x$rep to $want"
	[ "$(kv rx_bytes "$out")" = "$bytes" ] || fail "$label: $(kv rx_bytes "$out") bytes came back, $bytes went out"
	[ "$(kv rx_sha256 "$out")" = "$want" ] ||
		fail "$label: the echoed stream differs (sha256 $(kv rx_sha256 "$out"), sent $want)"
	wait_counter_ge "$app" tcp_rx_bytes $((rx0 + bytes)) 5
	rx1=$STAT_VALUE
	wait_counter_ge "$app" tcp_tx_bytes $((tx0 + bytes)) 5
	tx1=$STAT_VALUE
	mbs=$(awk -v b="$bytes" -v t="$(kv elapsed_s "$out")" 'BEGIN { printf "%.1f", b / 1048576 / t }')
	# the exact echo above went through receive coalescing (tcp.gro):
	# segments of a burst were merged before lwIP
	gro1=$(stat_sum "$app" rx_gro_merged)
	[ "$gro1" -gt "$gro0" ] || fail "$label: no received segment was merged (rx_gro_merged $gro0 -> $gro1)"
	ok "$label: $((bytes >> 20)) MiB each way, sha256 equal ($want), $(kv elapsed_s "$out") s = $mbs MiB/s each way, longest gap without progress $(kv max_gap_s "$out") s; stack counted rx $((rx1 - rx0)) tx $((tx1 - tx0)) bytes; $((gro1 - gro0)) segments merged on receive"
}

# stop_echo NAME: SIGTERM, exit 0, all mbufs back, the app saw no error.
stop_echo() {
	local n=$1 rc=0 log=${_LIB_DAEMON_LOG[$1]} total
	app_stop "$n" || rc=$?
	[ "$rc" -eq 0 ] || fail "dpsock-echo $n exited with status $rc (3 = mbuf leak)"
	grep -q 'all [0-9]* mbufs back in the pool' "$log" || fail "$n: no 'mbufs back' line in the log"
	total=$(grep '^echo: total' "$log") || fail "$n: no 'echo: total' line"
	note "$total"
	for k in resets backlog_aborts send_errors; do
		[ "$(kv "$k" "$total")" = 0 ] || fail "$n: the echo app counted $k=$(kv "$k" "$total")"
	done
}

one_worker_eal() {
	DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$1"
}

make_stream "$file_mb"

# ---- part 1: plain veth, 1 GiB each way ---------------------------------------
test_topo_up 66
conf=$(dpsock_conf "$name" 'workers = [ 0 ];')
# shellcheck disable=SC2046
app_start "$name" "$conf" dpsock-echo $(one_worker_eal "$name") -- --raw --tcp-only -p 7
run_bulk plain "$name" "$repeat" 240
stop_echo "$name"
topo_down "$name"

# ---- part 2: impaired path ------------------------------------------------------
n2=$(unique_name i)
impair_topo_up "$n2" 67
impair_start bulk --loss 1 --reorder 1 --dup 1 --delay 5 --seed 42
conf2=$(dpsock_conf "$n2" 'workers = [ 0 ];')
# shellcheck disable=SC2046
app_start "$n2" "$conf2" dpsock-echo $(one_worker_eal "$n2") -- --raw --tcp-only -p 7
out=$(in_b ping -q -c 20 -i 0.05 -W 2 "$TOPO_ADDR_A" 2>&1) || fail "no ping through the relay: $out"
note "ping through the relay: $(grep -E 'rtt|packet loss' <<<"$out" | tr '\n' ' ')"

make_stream "$impaired_mb"
run_bulk impaired "$n2" 1 "${BULK_IMPAIRED_LIMIT:-240}"
stop_echo "$n2"

# Part 3: the same relay, dpsock sending TCP super-segments (tcp.segmentation
# = gso: lwIP joins segments of up to 64 KiB, the netif cuts them in software):
# a lost frame is part of a super-segment; tcp_rec.c resends in place only
# what was lost (it cuts the super-segment where the peer's SACK blocks and
# ACKs end inside it), the peer SACKs and acknowledges parts of them; the
# echo must stay exact, with no stall. GSO hands the port mbuf chains: on
# af_packet whatever the test's port (AF_XDP takes one segment per frame,
# and dpsock then segments in lwIP).
n3=${n2}g
conf3=$(TEST_PORT=net_af_packet0 dpsock_conf "$n3" 'workers = [ 0 ];' 'tcp = { segmentation = "gso"; };')
# shellcheck disable=SC2046
app_start "$n3" "$conf3" dpsock-echo $(TEST_PMD=af_packet one_worker_eal "$n3") -- --raw --tcp-only -p 7
grep -q 'TCP segmentation by the netif (software GSO)' "$APP_LOG" ||
	fail "gso-impaired: the port does not segment by GSO: $(grep -m1 'TCP segmentation by' "$APP_LOG")"
make_stream "$gso_mb"
j0=$(stat_sum "$n3" tcp_tso_joined)
run_bulk gso-impaired "$n3" 1 "${BULK_IMPAIRED_LIMIT:-240}"
# lwIP's counters reach the stats block every 100 ms
wait_counter_ge "$n3" tcp_tso_joined $((j0 + 1)) 5
j1=$STAT_VALUE
g1=$(stat_sum "$n3" tx_gso_frames)
[ "$g1" -gt 0 ] || fail "gso-impaired: no super-segment was cut by GSO (tx_gso_frames $g1)"
ok "gso-impaired: $((j1 - j0)) segments joined into super-segments, $g1 cut by GSO, $(stat_sum "$n3" tcp_unsent_acked) acknowledged ones dropped from the unsent queue"
stop_echo "$n3"

impair_stop
note "$IMPAIR_A2B"
note "$IMPAIR_B2A"
for line in "$IMPAIR_A2B" "$IMPAIR_B2A"; do
	d=$(awk '{ print $2 }' <<<"$line")
	for k in lost dup reordered; do
		[ "$(kv "$k" "$line")" -gt 0 ] || fail "impair $d: $k=$(kv "$k" "$line"): the path was not impaired"
	done
	[ "$(kv too_big "$line")" = 0 ] || fail "impair $d: $(kv too_big "$line") frames too big (GRO/TSO on a veth?)"
done
pass "1 GiB each way through dpsock-echo exact; $impaired_mb MiB exact through 1% loss/reorder/dup + 5 ms each way, and $gso_mb MiB with super-segments, no stall"
