#!/usr/bin/env bash
# TCP segmentation offload on net_tap (the one PMD here that offers TSO):
# dpsock-echo on a tap, the Linux stack on the kernel side of the tap as the
# peer. A Linux client streams 64 MiB of random data in and reads the echo
# back, so dpsock sends 64 MiB.
#
# Checks: the echo is exact (sha256 both ways); the port does the
# segmentation (the log says so, tx_tso_frames > 0); lwIP joined its MSS
# segments into super-segments (tcp_tso_joined > 0) and the worker handed
# the port fewer frames than went on the wire (tx_tso_segs >
# 2 x tx_tso_frames: the TSO frames carried more than two segments each on
# average); and on the wire (tcpdump on the tap's kernel side), every TCP
# frame from dpsock is an Ethernet frame of at most 1514 bytes whose payload
# is at most the MSS the connection agreed (1448 with timestamps). Then
# the same with tcp.segmentation = "lwip": no TSO frame at all (the switch
# works both ways). Then TSO again through 1 % random loss (nftables drops
# in the peer's input hook): the peer SACKs the frames the port cut, so
# SACK blocks end inside dpsock's sent super-segments, which it must cut
# (tcp_sack_cuts > 0) to resend only what was lost: from the capture (both
# directions), the data dpsock sent again that the peer's SACK blocks
# already held stays under 16 MSS (0 measured; 550 KB when the cuts were
# made at pbuf boundaries only, which the tap's 1434-byte frames do not
# match). Then both TSO rounds over IPv6 (fd00:198:18:53::/64): net_tap's
# TSO is DPDK's GSO library, which cuts IPv4 alone, so the netif cuts the
# IPv6 super-segments in software (tx_gso_frames, no tx_tso_frames), with
# the same checks on the wire (payload at most 1428 = 1500 - 40 - 20 - 12).
# Clean stop, every mbuf back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 tcpdump sha256sum nft
require_tools dpsock-echo dpsock-stat
[ -c /dev/net/tun ] || skip "no /dev/net/tun: the tap PMD cannot run here"

name=$TEST_NAME
ns=dps-$name
tap=dpo$$
tap=${tap:0:15}
addr_a=198.18.53.1
addr_b=198.18.53.2
addr6_a=fd00:198:18:53::1
addr6_b=fd00:198:18:53::2
mss6=1428 # 1500 - 40 (IPv6) - 20 (TCP) - 12 (timestamps)
mss=1448 # 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps)
mb=${TSO_MB:-64}
ip netns add "$ns" || fail "cannot create namespace $ns"
on_exit ip netns del "$ns"
ip -n "$ns" link set lo up
# app_start runs the program in TOPO_NS_A: here the tap's namespace
TOPO_NS_A=$ns

head -c $((mb << 20)) /dev/urandom >"$TEST_TMP/data.bin" || fail "cannot write the data file"
want=$(sha256sum <"$TEST_TMP/data.bin" | cut -d' ' -f1)

cat >"$TEST_TMP/client.py" <<'EOF'
import hashlib, socket, sys, threading
host, path = sys.argv[1], sys.argv[2]
s = socket.create_connection((host, 7), timeout=60)
data = open(path, "rb").read()
def send():
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
t = threading.Thread(target=send)
t.start()
h, n = hashlib.sha256(), 0
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
t.join()
print(f"rx_bytes={n} rx_sha256={h.hexdigest()}")
EOF

# wire.py PCAP DPSOCK_ADDR: of dpsock's frames, the largest frame and TCP
# payload; the payload bytes dpsock sent again (below the highest sent),
# and of those, the ones inside a SACK block the peer had sent before
# (above its cumulative ACK: what dpsock knew the peer had, give or take
# the ACKs on their way).
cat >"$TEST_TMP/wire.py" <<'EOF'
import socket, struct, sys
f = open(sys.argv[1], "rb")
v6 = ":" in sys.argv[2]
me = socket.inet_pton(socket.AF_INET6 if v6 else socket.AF_INET, sys.argv[2])
if len(f.read(24)) < 24:
    sys.exit("no capture header")
frames = max_frame = max_payload = resent = resent_sacked = 0
high = None
ack = None
sacked = []  # disjoint [l, r) above ack (sequence numbers as offsets from the first)
base = None
def rel(x):
    return (x - base) & 0xffffffff
while True:
    h = f.read(16)
    if len(h) < 16:
        break
    _, _, incl, orig = struct.unpack("<IIII", h)
    d = f.read(incl)
    ip = d[14:]
    if v6:  # lwIP puts no extension header before TCP
        tot, ihl, src = 40 + struct.unpack(">H", ip[4:6])[0], 40, ip[8:24]
    else:
        tot, ihl, src = struct.unpack(">H", ip[2:4])[0], (ip[0] & 15) * 4, ip[12:16]
    tcp = ip[ihl:]
    doff = (tcp[12] >> 4) * 4
    if src != me:
        # the peer's ACK: its cumulative ACK and SACK blocks
        if base is None or not tcp[13] & 0x10:
            continue
        ack = rel(struct.unpack(">I", tcp[8:12])[0])
        o, opts = 20, []
        while o < min(doff, len(tcp)) and tcp[o] != 0:
            if tcp[o] == 1:
                o += 1
                continue
            if o + 1 >= len(tcp) or tcp[o + 1] < 2:
                break
            if tcp[o] == 5:
                for j in range(o + 2, o + tcp[o + 1], 8):
                    l, r = struct.unpack(">II", tcp[j:j + 8])
                    opts.append((rel(l), rel(r)))
            o += tcp[o + 1]
        for l, r in opts:
            if r > ack and l < r:
                sacked.append((max(l, ack), r))
        # one disjoint set: every ACK repeats the blocks it still has, and
        # a resent byte counts once however many ACKs SACKed it
        merged = []
        for l, r in sorted((max(l, ack), r) for l, r in sacked if r > ack):
            if merged and l <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], r))
            else:
                merged.append((l, r))
        sacked = merged
        continue
    payload = tot - ihl - doff
    frames += 1
    max_frame = max(max_frame, orig)
    max_payload = max(max_payload, payload)
    if payload == 0:
        continue
    seq = struct.unpack(">I", tcp[4:8])[0]
    if base is None:
        base = seq
    s, e = rel(seq), rel(seq) + payload
    if high is not None and s < high:
        resent += min(e, high) - s
        for l, r in sacked:
            resent_sacked += max(0, min(e, r) - max(s, l))
    high = e if high is None else max(high, e)
print(f"frames={frames} max_frame={max_frame} max_payload={max_payload} "
      f"resent={resent} resent_sacked={resent_sacked}")
EOF

# round SEGMENTATION [LOSS_PCT [FAMILY]]: one echo of the file over IPv4
# (FAMILY 4, the default) or IPv6 (6), LOSS_PCT % of dpsock's TCP frames
# dropped on the peer's input; sets TOT (the stats) and WIRE.
round() {
	local seg=$1 loss=${2:-0} fam=${3:-4} conf out cap tcpd dst=$addr_a nfam=ip
	[ "$fam" = 4 ] || { dst=$addr6_a; nfam=ip6; }
	conf=$TEST_TMP/$name-$seg.conf
	printf 'name = "%s";\ntcp = { segmentation = "%s"; };\ninterfaces = ( { port = "net_tap0"; address = "%s/24"; address6 = "%s/64"; } );\n' \
		"$name" "$seg" "$addr_a" "$addr6_a" >"$conf"
	# shellcheck disable=SC2046
	app_start "$name" "$conf" dpsock-echo -l 0 --no-pci --file-prefix "$name" \
		"--vdev=net_tap0,iface=$tap" $(eal_mem_args) -- --raw --tcp-only -p 7
	ip -n "$ns" link set "$tap" up
	ip -n "$ns" addr replace "$addr_b/24" dev "$tap"
	if [ "$fam" = 6 ]; then
		ip -n "$ns" addr replace "$addr6_b/64" dev "$tap" nodad
		# dpsock's address is usable once its duplicate address detection passed
		poll_until 10 ip netns exec "$ns" ping -6 -c 1 -W 1 "$addr6_a" >/dev/null ||
			fail "$seg: [$addr6_a] does not answer ping6"
	fi
	ip netns exec "$ns" nft delete table inet dpsloss 2>/dev/null || true
	if [ "$loss" != 0 ]; then
		ip netns exec "$ns" nft -f - <<-NFT || fail "nft could not load the drop rule"
			table inet dpsloss {
				chain in { type filter hook input priority 0; $nfam saddr $dst meta l4proto tcp numgen random mod 100 < $loss counter drop; }
			}
		NFT
	fi
	cap=$TEST_TMP/$seg-$loss-$fam.pcap
	ip netns exec "$ns" tcpdump -i "$tap" -s 128 -U -w "$cap" -nn "tcp and host $dst" \
		>"$TEST_TMP/tcpdump-$seg.log" 2>&1 &
	tcpd=$!
	poll_until 10 grep -q 'listening on' "$TEST_TMP/tcpdump-$seg.log" || fail "tcpdump did not start"
	out=$(timeout 240 ip netns exec "$ns" python3 "$TEST_TMP/client.py" "$dst" "$TEST_TMP/data.bin" 2>&1) ||
		fail "$seg: client failed: $out"
	[ "$(sed -n 's/.*rx_bytes=\([0-9]*\).*/\1/p' <<<"$out")" = $((mb << 20)) ] ||
		fail "$seg: $out (expected $((mb << 20)) bytes)"
	[ "$(sed -n 's/.*rx_sha256=\([0-9a-f]*\).*/\1/p' <<<"$out")" = "$want" ] ||
		fail "$seg: the echo differs from what was sent ($out; sent $want)"
	wait_counter_ge "$name" tcp_tx_bytes $((mb << 20)) 10
	TOT=$("$DPSOCK_STAT" -n "$name")
	kill -INT "$tcpd"
	wait "$tcpd" || true
	WIRE=$(python3 "$TEST_TMP/wire.py" "$cap" "$dst") || fail "$seg: cannot read the capture: $WIRE"
	DROPS=$(ip netns exec "$ns" nft list table inet dpsloss 2>/dev/null | sed -n 's/.*packets \([0-9]*\).*/\1/p') || true
	ip netns exec "$ns" nft delete table inet dpsloss 2>/dev/null || true
	local rc=0
	app_stop "$name" || rc=$?
	[ "$rc" -eq 0 ] || fail "$seg: dpsock-echo exited with status $rc (3 = mbuf leak)"
	grep -q 'all [0-9]* mbufs back in the pool' "$APP_LOG" || fail "$seg: no 'mbufs back' line"
	note "$seg, $loss % loss, IPv$fam: $out; wire: $WIRE${DROPS:+; dropped $DROPS}"
}
ctr() { awk -v k="worker.0.$1" '$1 == k { print $2 }' <<<"$TOT"; }
wire() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$WIRE"; }

round auto
grep -q "TCP segmentation by the port's TSO" "$APP_LOG" ||
	fail "the tap offers TSO but dpsock did not use it: $(grep -m1 'tso' "$APP_LOG")"
frames=$(ctr tx_tso_frames) segs=$(ctr tx_tso_segs) joined=$(ctr tcp_tso_joined)
[ "$frames" -gt 0 ] || fail "no TSO frame went to the port (tx_tso_frames=$frames)"
[ "$joined" -gt 0 ] || fail "lwIP joined no segment (tcp_tso_joined=$joined)"
[ "$segs" -gt $((2 * frames)) ] ||
	fail "TSO frames carried $segs segments in $frames frames: not larger than two MSS on average"
[ "$(wire frames)" -gt 0 ] || fail "nothing captured from dpsock on the tap"
[ "$(wire max_frame)" -le 1514 ] || fail "a frame of $(wire max_frame) bytes on the wire (MTU 1500)"
[ "$(wire max_payload)" -le "$mss" ] || fail "a TCP payload of $(wire max_payload) bytes on the wire (MSS $mss)"
ok "TSO: $mb MiB echoed exactly; $segs wire segments handed to the port as $frames TSO frames ($joined lwIP segments joined); on the wire $(wire frames) frames, at most $(wire max_frame) bytes, payload at most $(wire max_payload)"

round lwip
grep -q "TCP segmentation by lwIP" "$APP_LOG" || fail "tcp.segmentation = lwip not applied"
[ "$(ctr tx_tso_frames)" = 0 ] && [ "$(ctr tcp_tso_joined)" = 0 ] ||
	fail "tcp.segmentation = lwip still made TSO frames ($(ctr tx_tso_frames)) or joined segments ($(ctr tcp_tso_joined))"
[ "$(wire max_payload)" -le "$mss" ] || fail "lwip: a TCP payload of $(wire max_payload) bytes on the wire"
ok "lwip: $mb MiB echoed exactly with no TSO frame"

# loss_checks WHAT MSS COUNTER: a round through loss (round SEG 1) echoed
# exactly, the port got super-segments (COUNTER: tx_tso_frames when the
# port cuts them, tx_gso_frames when the netif does), the holes were resent
# from the scoreboard cutting sent super-segments, and little the peer had
# SACKed was sent again
loss_checks() {
	local what=$1 m=$2 counter=$3 cuts rexmit
	cuts=$(ctr tcp_sack_cuts) rexmit=$(ctr tcp_rexmit_sack)
	[ "${DROPS:-0}" -gt 0 ] || fail "$what: nftables dropped nothing"
	[ "$(ctr "$counter")" -gt 0 ] || fail "$what: no super-segment went out ($counter=0)"
	[ "$rexmit" -gt 0 ] || fail "$what: no hole resent from the scoreboard (tcp_rexmit_sack=0)"
	[ "$cuts" -gt 0 ] || fail "$what: no sent super-segment was cut (tcp_sack_cuts=0)"
	[ "$(wire resent_sacked)" -le $((16 * m)) ] ||
		fail "$what: dpsock resent $(wire resent_sacked) bytes the peer had SACKed ($(wire resent) resent, $DROPS frames dropped)"
	[ "$(wire max_payload)" -le "$m" ] || fail "$what: a TCP payload of $(wire max_payload) bytes on the wire"
	ok "$what: $mb MiB echoed exactly; $DROPS frames dropped, $rexmit holes resent, $cuts super-segment cuts; $(wire resent) bytes resent, $(wire resent_sacked) of them SACKed before"
}
round auto 1
loss_checks "TSO through 1 % loss" "$mss" tx_tso_frames

# IPv6: net_tap's TSO (DPDK's GSO library) cuts TCP over IPv4 alone, so
# the netif cuts IPv6 super-segments itself (tcp_cut): lwIP still joins
# segments, the port gets MSS frames (tx_gso_*), none as a TSO frame.
round auto 0 6
frames=$(ctr tx_gso_frames) segs=$(ctr tx_gso_segs) joined=$(ctr tcp_tso_joined)
grep -q "TCP segmentation by the port's TSO" "$APP_LOG" || fail "IPv6: the port's TSO not chosen"
[ "$joined" -gt 0 ] || fail "IPv6: lwIP joined no segment (tcp_tso_joined=$joined)"
[ "$frames" -gt 0 ] || fail "IPv6: no super-segment was cut in software (tx_gso_frames=$frames)"
[ "$(ctr tx_tso_frames)" = 0 ] || fail "IPv6: $(ctr tx_tso_frames) super-segments went to net_tap's IPv4-only TSO"
[ "$segs" -gt $((2 * frames)) ] ||
	fail "IPv6: $segs frames cut from $frames super-segments: not larger than two MSS on average"
[ "$(wire max_frame)" -le 1514 ] || fail "IPv6: a frame of $(wire max_frame) bytes on the wire (MTU 1500)"
[ "$(wire max_payload)" -le "$mss6" ] || fail "IPv6: a TCP payload of $(wire max_payload) bytes on the wire (MSS $mss6)"
ok "IPv6: $mb MiB echoed exactly; $joined lwIP segments joined, $frames super-segments cut into $segs frames in software; on the wire $(wire frames) frames, at most $(wire max_frame) bytes, payload at most $(wire max_payload)"

round auto 1 6
loss_checks "IPv6 through 1 % loss" "$mss6" tx_gso_frames
pass "net_tap TSO: super-segments cut by the port (IPv4) or the netif (IPv6), frames on the wire within the MSS, data exact; through loss only what was lost is resent"
