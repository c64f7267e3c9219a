#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The extra API's UDP receive under the preload, against a Linux sender
# (include/dpsock/extra.h; apps/udp_recv.c, test/tools/udp_blast.c):
#   - dpsock_get_api() is NULL without the preload, a version-1 table with
#     every capability under it;
#   - dpsock-udp-recv receives N numbered, patterned datagrams from
#     udp_blast in the peer namespace, windowed by its acknowledgements (no
#     loss by overrun), in each mode: recvfrom, zcopy (recvfrom_zcopy +
#     free_packets), callback (a receive callback dropping a third, holding
#     a third and freeing them later, keeping the rest for zcopy) and comp
#     (completion polling, sleeping on comp_fds); at 1400 bytes (the
#     256 KiB FIFO wraps, so datagrams in two segments come up) and 64;
#     the window (64) and the acknowledgements (every 16) keep what is in
#     flight, plus what the callback holds, under the FIFO's size;
#   - every datagram is accounted for (received + dropped + held = N, no
#     sequence number missing, every byte checked), bytes = received x size;
#   - held datagrams come back: a FIFO whose space was not given back
#     would stall the windowed sender or make dpsockd drop (its UDP drop
#     counter must not move); after the programs exit, the port's pool and
#     lwIP's memory are back at their start levels, no client is left, and
#     dpsockd stops with every mbuf back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_preload
require_tools dpsock-udp-recv udp_blast
[ "$PRELOAD_KERNEL" != 1 ] || skip "the extra API exists only under the shim"
RECV=$(dpsock_tool dpsock-udp-recv)
BLAST=$(dpsock_tool udp_blast)
name=$TEST_NAME
N=${EXTRA_ZCOPY_N:-6000}

# get_api without the preload: NULL
out=$("$RECV" --probe)
[ "$out" = "udp_recv: extra API: none" ] || fail "without the preload: '$out'"
ok "dpsock_get_api() is NULL without the preload"

test_topo_up 113
preload_daemon_start "$name" "preload = { rx_fifo_kb = 256; };"
out=$(preload_run "$RECV" --probe)
[ "$out" = "udp_recv: extra API: version 1 size 104 caps 0xff" ] || fail "under the preload: '$out'"
ok "under the preload: $out"

# the pool's level at rest: a baseline, not exact (an AF_XDP port's fill
# ring and TX completions move it by a frame or two as stray frames come
# and go); the exact check is dpsockd's own at the stop: every mbuf back
pool0=$(stat_settled "$name" port.0.mbufs_free) || note "port.0.mbufs_free still moving after 10 s: baseline $pool0"
lwip0=$(stat_sum "$name" lwip_mem_bytes)
drop0=$(stat_sum "$name" pl_rx_dropped)
port=9400

# run MODE SIZE [RECV_ARGS...]: N datagrams of SIZE from the peer, checked.
run() {
	local mode=$1 size=$2 line msgs dropped held missing bad bytes
	shift 2
	port=$((port + 1))
	preload_start "recv-$mode-$size" "$RECV" -p "$port" -m "$mode" -n "$N" -t 10 --ack --verify "$@"
	wait_until 10 grep -q "udp_recv: ready" "$TEST_TMP/recv-$mode-$size.log"
	peer_start "blast-$mode-$size" "$BLAST" -d "$TOPO_ADDR_A" -p "$port" -s "$size" -n "$N" -w 64 -t 60
	preload_wait "recv-$mode-$size" 90 || fail "$mode/$size: receiver failed: $(tail -n 3 "$TEST_TMP/recv-$mode-$size.log" | tr '\n' ' ')"
	preload_wait "blast-$mode-$size" 30 || fail "$mode/$size: sender failed: $(tail -n 2 "$TEST_TMP/blast-$mode-$size.log" | tr '\n' ' ')"
	line=$(grep '^udp_recv: mode=' "$TEST_TMP/recv-$mode-$size.log") || fail "$mode/$size: no result line"
	field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$line"; }
	msgs=$(field msgs) dropped=$(field dropped_cb) held=$(field held_cb)
	missing=$(field missing) bad=$(field bad) bytes=$(field bytes)
	[ "$bad" = 0 ] || fail "$mode/$size: $bad datagrams with wrong bytes ($line)"
	[ "$missing" = 0 ] || fail "$mode/$size: $missing sequence numbers missing ($line)"
	[ $((msgs + dropped + held)) = "$N" ] ||
		fail "$mode/$size: $msgs + $dropped + $held accounted for, sent $N ($line)"
	[ "$bytes" = $((msgs * size)) ] || fail "$mode/$size: $bytes bytes for $msgs datagrams ($line)"
	case "$*" in
	*mix*) [ "$dropped" -gt 0 ] && [ "$held" -gt 0 ] && [ "$msgs" -gt 0 ] ||
		fail "$mode/$size: the callback's three verdicts did not all happen ($line)" ;;
	esac
	ok "$mode/$size: $N datagrams: $msgs received, $dropped dropped, $held held by the callback"
}

for size in 1400 64; do
	run recvfrom "$size"
	run zcopy "$size" -b 32
	run callback "$size" --cb mix
	run comp "$size" -b 64
done
run callback 1400 --cb drop

# nothing lost on the way in (a full FIFO would have dropped and counted)
drop1=$(stat_sum "$name" pl_rx_dropped)
[ "$drop1" = "$drop0" ] || fail "dpsockd dropped $((drop1 - drop0)) datagrams for full FIFOs"
ok "no datagram dropped by dpsockd"

# the programs are gone: no client, pool and lwIP memory at their start levels
_clients_gone() {
	[ "$("$DPSOCK_STAT" -n "$name" -v clients -j 2>/dev/null |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)["clients"]))')" = 0 ]
}
wait_until 10 _clients_gone
_levels_back() {
	[ "$(stat_get "$name" port.0.mbufs_free)" -ge "$pool0" ] &&
		[ "$(stat_sum "$name" lwip_mem_bytes)" = "$lwip0" ]
}
poll_until 10 _levels_back ||
	fail "levels not back: mbufs_free $(stat_get "$name" port.0.mbufs_free) (start $pool0), lwip_mem_bytes $(stat_sum "$name" lwip_mem_bytes) (start $lwip0)"
ok "pool ($pool0 free) and lwIP memory ($lwip0 B) back at their start levels"
preload_daemon_stop
pass "zero-copy receive, callbacks and completions: every datagram and byte accounted for, buffers returned"
