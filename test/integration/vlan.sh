#!/usr/bin/env bash
# 802.1Q: dpsockd's interface on VLAN 100 with priority 5 (interfaces[0].vlan,
# vlan_priority); the Linux peer's veth is an access link of VLAN 100 (B
# tags what it sends and untags what it receives: see vlan_topo).
#
# Shows, with dpsockd on the test port and preloaded programs:
#   1. 200 pings over the VLAN, all answered (ARP and ICMP tagged both ways);
#   2. sockperf under the preload answers UDP and TCP ping-pong from B;
#   3. 8 MiB from a preloaded TCP sender reach B exact (sha256);
#   4. a preloaded subscriber joins a group: dpsockd's IGMPv3 report reaches
#      B's VLAN device, and the 300 datagrams B sends to the group arrive;
#   5. every frame dpsockd sent (captured on B's veth, below the VLAN device)
#      carries VLAN 100 and priority 5: none left untagged;
#   6. UDP datagrams to dpsockd's address sent untagged, and tagged for VLAN
#      200, are dropped and counted (rx_drop_vlan, exactly), never answered;
#   7. SIGTERM: clean stop;
# and with dpsock-echo (native) on af_packet, tcp.segmentation = "gso":
#   8. 16 MiB echoed exact both ways: lwIP's super-segments are cut by the netif
#      (software GSO) with the tag inside every frame's 18-byte link header.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip tc tcpdump sockperf python3 ethtool clang
require_preload
require_tools dpsockd dpsock-stat dpsock-echo mctool
[ "$PRELOAD_KERNEL" != 1 ] || skip "tests dpsockd's VLAN tagging (no kernel self-check)"
name=$TEST_NAME
VID=100
PRIO=5
G=239.7.7.7
P=5300
BULK_CLIENT=$(dirname "$0")/../tools/bulk_client.py

# vlan_topo: B's veth becomes an access link of VLAN $VID: this kernel has
# no VLAN devices (CONFIG_VLAN_8021Q) and no VLAN-filtering bridge, so two
# tc programs (test/tools/vlan_tc.bpf.c) tag what B sends and untag what it
# receives on VLAN $VID, as a VLAN device would; frames of other VLANs are
# left tagged and B's kernel drops them. txvlan off: B's kernel then writes
# each tag into the frame instead of handing it to the veth beside the
# frame (an XDP program on A's end would not see it).
vlan_topo() {
	if [ ! -f "$TEST_TMP/vlan_tc.o" ]; then
		clang -O2 -g -target bpf -DVID="$VID" -I"/usr/include/$(gcc -print-multiarch)" -c "$(dirname "$0")/../tools/vlan_tc.bpf.c" \
			-o "$TEST_TMP/vlan_tc.o" 2>"$TEST_TMP/clang.log" ||
			fail "could not build the tc VLAN program: $(head -n 5 "$TEST_TMP/clang.log")"
	fi
	ip netns exec "$TOPO_NS_B" ethtool -K "$TOPO_IF_B" txvlan off >/dev/null ||
		fail "ethtool -K $TOPO_IF_B txvlan off failed"
	tc -n "$TOPO_NS_B" qdisc add dev "$TOPO_IF_B" clsact || fail "tc: no clsact qdisc"
	tc -n "$TOPO_NS_B" filter add dev "$TOPO_IF_B" egress bpf da obj "$TEST_TMP/vlan_tc.o" \
		sec tc_egress || fail "tc: could not attach the egress VLAN program"
	tc -n "$TOPO_NS_B" filter add dev "$TOPO_IF_B" ingress bpf da obj "$TEST_TMP/vlan_tc.o" \
		sec tc_ingress || fail "tc: could not attach the ingress VLAN program"
	MC_PEER_IF=$TOPO_IF_B
	mcast_route
}

# ---- dpsockd on the VLAN, preloaded programs ---------------------------------
test_topo_up 47
vlan_topo
cap=$TEST_TMP/vlan.pcap
# (ip netns exec execs tcpdump: $! is tcpdump's pid, to stop it before reading;
# --immediate-mode: every frame reaches the file at once, none is left in a
# block of libpcap's ring when tcpdump stops)
ip netns exec "$TOPO_NS_B" tcpdump -i "$TOPO_IF_B" -nn -U --immediate-mode -w "$cap" ether src "$TOPO_MAC_A" >/dev/null 2>&1 &
tcpdump_pid=$!
on_exit "kill $tcpdump_pid 2>/dev/null; true"
wait_until 5 test -s "$cap"
TEST_IFACE_KEYS="vlan = $VID; vlan_priority = $PRIO;" preload_daemon_start "$name"
grep -q "VLAN $VID, priority $PRIO" "$DPSOCKD_LOG" ||
	fail "dpsockd does not say it runs on VLAN $VID: $(grep -m2 'port ' "$DPSOCKD_LOG")"

# 1. pings
out=$(in_b "$PINGN" -c 200 -i 0.002 "$TOPO_ADDR_A") || fail "pings over VLAN $VID lost: $out"
neigh=$(ip -n "$TOPO_NS_B" neigh show "$TOPO_ADDR_A" dev "$TOPO_IF_B")
grep -qi "lladdr $TOPO_MAC_A " <<<"$neigh" || fail "B's ARP entry: '$neigh'"
ok "200 pings over VLAN $VID answered; B's ARP entry: $neigh"

# 2. sockperf ping-pong, UDP and TCP
preload_start sp-udp sockperf server -i "$TOPO_ADDR_A" -p 11111
preload_start sp-tcp sockperf server -i "$TOPO_ADDR_A" -p 11112 --tcp
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 11112 20
wait_until 20 grep -q 'using' "$TEST_TMP/sp-udp.log"
pingpong udp "$TOPO_NS_B" -i "$TOPO_ADDR_A" -p 11111 -t 2 -m 64
[ "$PP_RECV" -gt 100 ] || fail "UDP ping-pong: only $PP_RECV replies"
pingpong tcp "$TOPO_NS_B" -i "$TOPO_ADDR_A" -p 11112 --tcp -t 2 -m 64
[ "$PP_RECV" -gt 100 ] || fail "TCP ping-pong: only $PP_RECV replies"
ok "sockperf under the preload: UDP and TCP ping-pong over VLAN $VID"
preload_stop sp-udp INT || true
preload_stop sp-tcp INT || true

# 3. 8 MiB from a preloaded sender to a Linux receiver
head -c $((8 << 20)) /dev/urandom >"$TEST_TMP/data.bin"
want=$(sha256sum <"$TEST_TMP/data.bin" | cut -d' ' -f1)
cat >"$TEST_TMP/recv.py" <<'EOF'
import hashlib, socket, sys
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((sys.argv[1], int(sys.argv[2])))
ls.listen(1)
print("READY", flush=True)
ls.settimeout(30)
c, _ = ls.accept()
c.settimeout(30)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    h.update(b)
    n += len(b)
print(f"bytes={n} sha256={h.hexdigest()}", flush=True)
EOF
peer_start recv python3 "$TEST_TMP/recv.py" "$TOPO_ADDR_B" 9000
wait_until 10 grep -q READY "$TEST_TMP/recv.log"
preload_run python3 -c '
import socket, sys
s = socket.create_connection((sys.argv[1], 9000), timeout=30)
with open(sys.argv[2], "rb") as f:
    s.sendall(f.read())
s.close()' "$TOPO_ADDR_B" "$TEST_TMP/data.bin" || fail "the preloaded sender failed"
preload_wait recv 30 || fail "the receiver in B failed: $(tail -n 3 "$TEST_TMP/recv.log")"
got=$(sed -n 's/^bytes=\([0-9]*\) sha256=\([0-9a-f]*\)$/\1 \2/p' "$TEST_TMP/recv.log")
[ "$got" = "$((8 << 20)) $want" ] || fail "B received '$got', sent $((8 << 20)) $want"
ok "8 MiB from a preloaded sender reached B over VLAN $VID exact (sha256)"

# 4. multicast: the IGMP report and a feed (IGMP is dpsockd's own frame, not
# lwIP's: tagged by dpsock_netif_send_raw)
igmp=$TEST_TMP/igmp.pcap
ip netns exec "$TOPO_NS_B" tcpdump -i "$TOPO_IF_B" -nn -U --immediate-mode -w "$igmp" "vlan $VID and igmp" >/dev/null 2>&1 &
igmp_pid=$!
on_exit "kill $igmp_pid 2>/dev/null; true"
wait_until 5 test -s "$igmp"
preload_start sub "$MCTOOL" sub -g "$G" -p "$P" -n 300 -t 10
wait_until 10 grep -q READY "$TEST_TMP/sub.log"
reported() {
	tcpdump -nn -v -r "$igmp" "vlan $VID and igmp and src host $TOPO_ADDR_A" 2>/dev/null | grep -q "gaddr $G to_ex"
}
wait_until 8 reported
ok "dpsockd's IGMPv3 report for $G reached B on VLAN $VID"
in_b "$MCTOOL" pub -g "$G" -p "$P" -n 300 -r 2000 -i "$TOPO_ADDR_B" >/dev/null ||
	fail "mctool pub in B failed"
preload_wait sub 20 || fail "subscriber failed: $(tail -n 3 "$TEST_TMP/sub.log")"
[ "$(mcast_result sub received)" = 300 ] ||
	fail "subscriber received $(mcast_result sub received) of 300: $(tail -n 2 "$TEST_TMP/sub.log")"
ok "300 datagrams B sent to $G over VLAN $VID reached the preloaded subscriber"

# 5. the tags on the wire (one reading of the capture for every count)
kill "$tcpdump_pid" 2>/dev/null || true
wait "$tcpdump_pid" 2>/dev/null || true
dump=$(tcpdump -e -nn -r "$cap" 2>/dev/null)
frames=$(grep -c . <<<"$dump" || true)
tagged=$(grep -c "vlan $VID, p $PRIO, " <<<"$dump" || true)
[ "$frames" -gt 0 ] || fail "no frame from dpsockd captured on $TOPO_IF_B"
[ "$tagged" -eq "$frames" ] ||
	fail "$((frames - tagged)) of $frames frames from dpsockd not tagged vlan $VID, p $PRIO: $(grep -v "vlan $VID, p $PRIO, " <<<"$dump" | head -n 3)"
kinds=$(grep -oE 'ethertype (ARP|IPv4)' <<<"$dump" | sort -u | tr '\n' ' ')
ok "all $frames frames dpsockd sent carry VLAN $VID, priority $PRIO (inside: $kinds)"

# 6. other VLANs and untagged frames: dropped, counted, not answered
cat >"$TEST_TMP/inject.py" <<'EOF'
import socket, struct, sys
ifname, dmac, smac, saddr, daddr, vid, n = sys.argv[1:8]
vid, n = int(vid), int(n)
def mac(s): return bytes(int(x, 16) for x in s.split(":"))
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16)
    return ~(s + (s >> 16)) & 0xffff
payload = b"not for this VLAN"
udp = struct.pack("!HHHH", 40000, 7, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                 socket.inet_aton(saddr), socket.inet_aton(daddr))
ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
eth = mac(dmac) + mac(smac)
if vid >= 0:
    eth += struct.pack("!HH", 0x8100, vid)
frame = eth + struct.pack("!H", 0x0800) + ip + udp
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS: past B's tc VLAN program
s.bind((ifname, 0))
for _ in range(n):
    s.send(frame)
EOF
preload_start echo python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 7))
print("READY", flush=True)
while True:
    d, a = s.recvfrom(2048)
    print("GOT", a, flush=True)
    s.sendto(d, a)' "$TOPO_ADDR_A"
wait_until 10 grep -q READY "$TEST_TMP/echo.log"
mac_b=$(ip -n "$TOPO_NS_B" -br link show "$TOPO_IF_B" | awk '{ print $3 }')
for vid in -1 200; do
	before=$(stat_sum "$name" rx_drop_vlan)
	in_b python3 "$TEST_TMP/inject.py" "$TOPO_IF_B" "$TOPO_MAC_A" "$mac_b" "$TOPO_ADDR_B" \
		"$TOPO_ADDR_A" "$vid" 20 || fail "could not inject frames (vid $vid)"
	wait_counter_ge "$name" rx_drop_vlan $((before + 20)) 5
	after=$(stat_sum "$name" rx_drop_vlan)
	[ $((after - before)) -eq 20 ] || fail "vid $vid: rx_drop_vlan rose by $((after - before)), expected 20"
	label=$([ "$vid" -lt 0 ] && echo untagged || echo "tagged for VLAN $vid")
	ok "20 UDP datagrams $label: counted in rx_drop_vlan, dropped"
done
# the same datagram on the right VLAN is answered, the others never were
in_b python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(b"on the VLAN", (sys.argv[1], 7))
print(s.recvfrom(64)[0].decode())' "$TOPO_ADDR_A" | grep -q "on the VLAN" ||
	fail "the UDP echo did not answer on VLAN $VID"
got=$(grep -c '^GOT' "$TEST_TMP/echo.log" || true)
[ "$got" -eq 1 ] || fail "the preloaded UDP echo got $got datagrams, expected the 1 sent on VLAN $VID"
ok "the preloaded UDP echo saw only the datagram sent on VLAN $VID"
preload_stop echo || true

# 7. clean stop
preload_daemon_stop
ok "SIGTERM: clean stop, every mbuf back"
kill "$igmp_pid" 2>/dev/null || true
wait "$igmp_pid" 2>/dev/null || true
topo_down "$name"

# ---- 8. native echo on af_packet, super-segments cut by GSO --------------------
n2=${name}g
test_topo_up 48 "$n2"
vlan_topo
conf=$(TEST_PORT=net_af_packet0 TEST_IFACE_KEYS="vlan = $VID;" dpsock_conf "$n2" 'workers = [ 0 ];' \
	'tcp = { segmentation = "gso"; };')
# shellcheck disable=SC2046
TEST_PMD=af_packet app_start "$n2" "$conf" dpsock-echo $(TEST_PMD=af_packet DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 \
	dpsockd_eal_args "$n2") -- --raw --tcp-only -p 7
grep -q 'TCP segmentation by the netif (software GSO)' "$APP_LOG" ||
	fail "the port does not segment by GSO: $(grep -m1 'TCP segmentation by' "$APP_LOG")"
head -c $((16 << 20)) /dev/urandom >"$TEST_TMP/data.bin"
want=$(sha256sum <"$TEST_TMP/data.bin" | cut -d' ' -f1)
out=$(timeout 150 ip netns exec "$TOPO_NS_B" python3 "$BULK_CLIENT" "$TOPO_ADDR_A" 7 \
	"$TEST_TMP/data.bin" 1 120 30 "$TEST_TMP/progress.txt") || fail "bulk echo over VLAN $VID: $out"
note "bulk: $out"
grep -q "tx_sha256=$want rx_bytes=$((16 << 20)) rx_sha256=$want " <<<"$out" ||
	fail "the echo of 16 MiB differs: $out"
g=$(stat_sum "$n2" tx_gso_frames)
[ "$g" -gt 0 ] || fail "no super-segment was cut by GSO (tx_gso_frames $g)"
ok "16 MiB echoed exact over VLAN $VID on af_packet; $g super-segments cut by GSO"
app_stop "$n2" || fail "dpsock-echo did not stop cleanly: $(tail -n 5 "$APP_LOG")"
pass "VLAN $VID (priority $PRIO): ping, sockperf, TCP bulk, IGMP and a multicast feed over the VLAN, every frame tagged, other VLANs and untagged frames dropped and counted; GSO over the VLAN"
