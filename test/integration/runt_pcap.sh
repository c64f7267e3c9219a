#!/usr/bin/env bash
# Runt frames (shorter than an Ethernet header) through DPDK's net_pcap PMD.
# A veth cannot carry them (Linux refuses AF_PACKET frames under 14 bytes and
# veth pulls 14 bytes), so dpsockd reads a pcap file instead of a wire:
# --vdev=net_pcap0,rx_pcap=IN,tx_pcap=OUT, one lcore, one worker.
#
# IN holds, in this order: 4 runts, an ARP request from the sender for
# dpsockd's address (so lwIP learns the sender's MAC), 2 frames of an unknown
# ethertype, 3 echo requests with a bad IPv4 header checksum, 3 more runts,
# and one valid minimal echo request padded to 60 bytes.
#
# Shows: each runt is counted in rx_drop_runt (exactly 7) and freed, the
# other bad frames under their own counters (exactly), nothing else is
# dropped, dpsockd keeps working: the valid echo request (and only it) is
# answered, to the sender's MAC and address, in OUT; the ARP request is
# answered too. SIGTERM then stops dpsockd with exit 0 and every mbuf back.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 tcpdump
require_tools dpsockd dpsock-stat badframes
[[ $(ldconfig -p 2>/dev/null) == *librte_net_pcap.so* ]] ||
	skip "DPDK's net_pcap PMD is not installed (Debian: librte-net-pcap23)"

name=$TEST_NAME
# The namespaces only give dpsockd_start a place to run dpsockd (and keep it
# off the host's network); its port is the pcap vdev, not the veth.
test_topo_up 45
dp_addr=$TOPO_ADDR_A
peer_addr=$TOPO_ADDR_B
peer_mac=02:00:00:00:00:02
# net_pcap on files has no hardware address; DPDK 22.11 gives the first
# device 02:70:63:61:70:00 ("pcap"). Checked against dpsockd's log below.
dp_mac=02:70:63:61:70:00

in=$TEST_TMP/in.pcap
out=$TEST_TMP/out.pcap

# badframes_pcap FILE COUNT CASE: write COUNT frames of CASE from the peer to
# dpsockd into FILE.
badframes_pcap() {
	"$BADFRAMES" -w "$1" -S "$peer_mac" -m "$dp_mac" -s "$peer_addr" -d "$dp_addr" \
		-n "$2" "$3" || fail "badframes -w $1 -n $2 $3 failed"
}

# arp_request_pcap FILE: a pcap holding one ARP request, broadcast, from the
# peer (peer_mac, peer_addr) for dp_addr. Same pcap format as badframes
# writes (classic, host byte order, LINKTYPE_ETHERNET).
arp_request_pcap() {
	python3 - "$1" "$peer_mac" "$peer_addr" "$dp_addr" <<'EOF'
import socket, struct, sys, time
path, smac, sip, tip = sys.argv[1:]
mac = bytes.fromhex(smac.replace(":", ""))
frame = (b"\xff" * 6 + mac + struct.pack("!H", 0x0806) +
         struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) +
         mac + socket.inet_aton(sip) + b"\x00" * 6 + socket.inet_aton(tip))
frame += b"\x00" * (60 - len(frame))  # Ethernet minimum, as a NIC pads
now = time.time()
with open(path, "wb") as f:
    f.write(struct.pack("=IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    f.write(struct.pack("=IIII", int(now), int(now % 1 * 1e6), len(frame), len(frame)))
    f.write(frame)
EOF
}

# pcap_count FILE [FILTER]: number of frames in FILE (matching FILTER).
pcap_count() {
	local f=$1 n
	shift
	n=$(tcpdump -r "$f" -nn --count "$@" 2>/dev/null | awk '$2 ~ /^packets?$/ { print $1 }')
	[ -n "$n" ] || fail "tcpdump could not read $f${1:+ with filter: $1}"
	echo "$n"
}

# Build IN: the header of the first file, then every file's records.
parts=()
add_part() { parts+=("$TEST_TMP/part${#parts[@]}.pcap"); }
add_part; badframes_pcap "${parts[-1]}" 4 runt
add_part; arp_request_pcap "${parts[-1]}" || fail "could not write the ARP request pcap"
add_part; badframes_pcap "${parts[-1]}" 2 ethertype
add_part; badframes_pcap "${parts[-1]}" 3 ip_cksum
add_part; badframes_pcap "${parts[-1]}" 3 runt
add_part; badframes_pcap "${parts[-1]}" 1 icmp_padded
{
	cat "${parts[0]}"
	for p in "${parts[@]:1}"; do
		tail -c +25 "$p"
	done
} >"$in"
total=14 # 4 + 1 + 2 + 3 + 3 + 1
n=$(pcap_count "$in")
[ "$n" -eq "$total" ] || fail "input pcap holds $n frames, expected $total"
runts=$(pcap_count "$in" 'len < 14')
[ "$runts" -eq 7 ] || fail "input pcap holds $runts frames under 14 bytes, expected 7"
ok "input pcap: $total frames, 7 of them runts (10 bytes)"

conf=$TEST_TMP/$name.conf
printf 'name = "%s";\ninterfaces = ( { port = "net_pcap0"; address = "%s/%s"; } );\n' \
	"$name" "$dp_addr" "$TOPO_PLEN" >"$conf"
dpsockd_start "$name" "$conf" -l 0 "--vdev=net_pcap0,rx_pcap=$in,tx_pcap=$out"
grep -qi "port net_pcap0 (id [0-9]*), mac $dp_mac," "$DPSOCKD_LOG" ||
	fail "net_pcap0's MAC is not $dp_mac (the frames were addressed to it): $(grep -i 'port net_pcap0' "$DPSOCKD_LOG")"
nw=$(stat_get "$name" daemon.0.workers)
[ "$nw" = 1 ] || fail "expected 1 worker, dpsock-stat shows $nw"

# Every frame read, counted, and the echo reply sent (lwIP's counters are
# mirrored every 100 ms, hence the wait on lwip_icmp_xmit).
wait_counter_ge "$name" rx_drop_runt 7 10
wait_counter_ge "$name" rx_packets "$total" 10
wait_counter_ge "$name" lwip_icmp_xmit 1 5
wait_counter_ge "$name" port.0.rx_packets "$total" 5
while read -r counter want; do
	got=$(stat_read "$name" "$counter")
	[ "$got" -eq "$want" ] || fail "$counter is $got, expected $want"
done <<EOF
port.0.rx_packets $total
rx_packets $total
rx_drop_runt 7
rx_drop_ethertype 2
rx_drop_ip_cksum 3
rx_drop_arp 0
rx_drop_ip_hdr 0
rx_drop_ip_len 0
rx_drop_l4_cksum 0
rx_nomem 0
arp_in 1
ip_in 1
icmp_echo 1
lwip_icmp_xmit 1
EOF
ok "rx_drop_runt 7, rx_drop_ethertype 2, rx_drop_ip_cksum 3, no other drop; 1 ARP and 1 echo request to lwIP"

# SIGTERM: clean stop; the pcap PMD closes OUT at the latest when the port
# closes.
rc=0
dpsockd_stop "$name" || rc=$?
[ "$rc" -eq 0 ] || fail "dpsockd exited with status $rc (3 = mbuf leak)"
grep -q 'all [0-9]* mbufs back in the pool' "$DPSOCKD_LOG" ||
	fail "no 'mbufs back' line in the log: $(tail -5 "$DPSOCKD_LOG")"
[ ! -e "/dev/shm/dpsock.$name.stats" ] || fail "stats segment left in /dev/shm"
[ ! -e "/var/run/dpdk/$name" ] || fail "EAL runtime dir /var/run/dpdk/$name left"
ok "SIGTERM: exit 0, all mbufs back"

# What dpsockd sent: the ARP reply and exactly one echo reply, to the peer.
[ -s "$out" ] || fail "tx pcap $out missing or empty"
note "tx pcap:"
tcpdump -r "$out" -nn -e 2>/dev/null | sed 's/^/   /'
arp_replies=$(pcap_count "$out" \
	"arp[6:2] == 2 and ether src $dp_mac and ether dst $peer_mac and arp src $dp_addr and arp dst $peer_addr")
[ "$arp_replies" -eq 1 ] || fail "expected 1 ARP reply to $peer_addr in the tx pcap, found $arp_replies"
echo_replies=$(pcap_count "$out" 'icmp[icmptype] == icmp-echoreply')
ours=$(pcap_count "$out" \
	"ether src $dp_mac and ether dst $peer_mac and src host $dp_addr and dst host $peer_addr and icmp[icmptype] == icmp-echoreply and icmp[4:2] == 0xbf01 and icmp[6:2] == 0")
if [ "$ours" -ne 1 ] || [ "$echo_replies" -ne 1 ]; then
	fail "expected exactly 1 echo reply (id 0xbf01 seq 0, $dp_mac > $peer_mac, $dp_addr > $peer_addr) in the tx pcap; found $ours such, $echo_replies in all"
fi
pass "7 runts and 5 other bad frames counted and dropped; ARP and the padded echo request answered; clean stop"
