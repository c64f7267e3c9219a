#!/usr/bin/env bash
# A known loss pattern, checked packet by packet. dpsock-echo --raw (one
# worker, af_packet on A) echoes a 512 KiB stream from the Linux peer in B
# through test/tools/impair (A <-veth-> M <-veth-> B), which drops dpsock's
# data segments number k, k+2 and k+5 (k = 40) among those carrying new data
# (--drop-new: retransmissions never count, however the segments are
# spaced): three holes in one flight, each dropped once. tcpdump in M, on
# the relay's A side, sees every frame dpsock sent, dropped ones included.
#
# Checks: the echo is exact; the relay dropped exactly the three segments;
# each of them went out exactly twice (the original and one retransmission:
# every hole resent, none twice), counted both by the relay and in the
# capture (no capture loss, checked; tcpdump may lag behind on a busy
# machine, so the test waits until the capture holds the copies before it
# stops it); the retransmissions came from the SACK scoreboard
# (tcp_rexmit_sack moved by 3 or more) and before any retransmission timeout
# (tcp_rto did not move). The delay of each retransmission after its
# original is printed (microseconds), never asserted. DPSOCK_TEST_LCORE
# picks the worker's lcore (0).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 tcpdump sha256sum ethtool
require_tools dpsock-echo dpsock-stat impair
BULK_CLIENT=$DPSOCK_SRC/test/tools/bulk_client.py
k=40
holes="$k,$((k + 2)),$((k + 5))"

n=$(unique_name p)
impair_topo_up "$n" 69
impair_start pattern --drop-new "$holes"
# one worker on lcore DPSOCK_TEST_LCORE (0)
lc=${DPSOCK_TEST_LCORE:-0}
conf=$(dpsock_conf "$n" "workers = [ $lc ];")
# shellcheck disable=SC2046
app_start "$n" "$conf" dpsock-echo $(DPSOCK_TEST_LCORES=$lc DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$n") \
	-- --raw --tcp-only -p 7
# the neighbours know each other before the stream starts (ARP through the relay)
wait_until 30 in_b ping -c 1 -W 1 "$TOPO_ADDR_A"
head -c $((512 << 10)) /dev/urandom >"$TEST_TMP/data.bin"
want=$(sha256sum "$TEST_TMP/data.bin" | cut -d' ' -f1)

cap=$TEST_TMP/pattern.pcap
ip netns exec "$IMPAIR_NS" tcpdump -i "$IMPAIR_IF_A" -n -s 128 -B 32768 -U -w "$cap" \
	"src host $TOPO_ADDR_A and tcp src port 7 and ip[2:2] > 100" 2>"$TEST_TMP/tcpdump.err" &
cap_pid=$!
on_exit "kill $cap_pid 2>/dev/null || true"
wait_until 10 grep -q 'listening on' "$TEST_TMP/tcpdump.err"

rto0=$(stat_sum "$n" tcp_rto)
sack0=$(stat_sum "$n" tcp_rexmit_sack)
out=$(timeout 120 ip netns exec "$TOPO_NS_B" python3 "$BULK_CLIENT" "$TOPO_ADDR_A" 7 \
	"$TEST_TMP/data.bin" 1 60 10 "$TEST_TMP/progress.txt" 2>&1) || {
	"$DPSOCK_STAT" -n "$n" -v sockets 2>&1 >&2 || true
	fail "client: $out"
}
note "client: $out"
grep -q "rx_sha256=$want" <<<"$out" && grep -q "tx_sha256=$want" <<<"$out" ||
	fail "the echoed stream differs from what went out"
rto1=$(stat_sum "$n" tcp_rto)
sack1=$(stat_sum "$n" tcp_rexmit_sack)

impair_stop
seqs=$(sed -n 's/^impair: a>b dropped new segment [0-9]* seq \([0-9]*\) .*/\1/p' "$IMPAIR_LOG")
[ "$(wc -w <<<"$seqs")" = 3 ] || fail "the relay dropped $(wc -w <<<"$seqs") segments, not 3: $(grep dropped "$IMPAIR_LOG")"
# the relay's own count of the later copies of each hole (every frame
# dpsock sent went through it before the echo could complete)
while read -r l; do
	note "$l"
	[ "$(sed -n 's/.* copies \([0-9]*\) .*/\1/p' <<<"$l")" = 1 ] || fail "relay: a hole was not resent exactly once: $l"
done < <(grep '^impair: a>b hole seq' "$IMPAIR_LOG")

# Every copy of each hole in the capture, with its time. tcpdump may lag
# behind on a busy machine: wait until it has written both copies of each
# (or fail after 30 s), then stop it and require no capture loss.
parse_capture() {
	python3 - "$cap" $seqs <<'PYEOF'
import struct, sys
path, want = sys.argv[1], [int(s) for s in sys.argv[2:]]
data = open(path, "rb").read()
if len(data) < 24:
    sys.exit(2)
magic = struct.unpack("<I", data[:4])[0]
endian = "<" if magic in (0xa1b2c3d4, 0xa1b23c4d) else ">"
tsdiv = 1e9 if magic in (0xa1b23c4d, 0x4d3cb2a1) else 1e6
off, seen = 24, {}
while off + 16 <= len(data):
    sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[off:off + 16])
    pkt = data[off + 16:off + 16 + incl]
    if len(pkt) < incl:
        break
    off += 16 + incl
    ip = pkt[14:]
    tcp = ip[(ip[0] & 15) * 4:]
    seen.setdefault(struct.unpack(">I", tcp[4:8])[0], []).append(sec + frac / tsdiv)
short = 0
for s in want:
    times = seen.get(s, [])
    print(f"capture: seq {s} sent {len(times)} times, again after "
          f"{[round((t - times[0]) * 1e6) for t in times[1:]]} us")
    short += len(times) < 2
sys.exit(3 if short else 0)
PYEOF
}
poll_until 30 parse_capture >/dev/null || true
# (a background job ignores SIGINT; tcpdump prints its statistics on TERM too)
kill -TERM "$cap_pid"
wait "$cap_pid" 2>/dev/null || true
grep -q '^0 packets dropped by kernel' "$TEST_TMP/tcpdump.err" ||
	fail "the capture lost frames: $(grep 'dropped' "$TEST_TMP/tcpdump.err" | tr '\n' ' ')"
report=$(parse_capture) || fail "capture: a hole was not sent twice: $(tr '\n' ';' <<<"$report")"
while read -r l; do
	note "$l"
	grep -q ' sent 2 times' <<<"$l" || fail "capture: a hole was not resent exactly once: $l"
done <<<"$report"
[ $((sack1 - sack0)) -ge 3 ] || fail "tcp_rexmit_sack moved by $((sack1 - sack0)), not at least 3"
[ "$rto1" = "$rto0" ] || fail "a retransmission timeout fired ($((rto1 - rto0)))"

rc=0
app_stop "$n" || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-echo exited with status $rc (3 = mbuf leak)"
pass "segments $holes of one flight dropped: each hole resent once, from the SACK scoreboard, before any timeout"
