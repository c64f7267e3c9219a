#!/usr/bin/env bash
# Static routes (routes = [ "DEST/LEN via GATEWAY" ]) on a dpsockd with two
# interfaces: the test port on the usual veth (198.18.IDX.0/24, default
# gateway B's .2) and an af_packet port on a second veth pair
# (198.18.IDX+1.0/24). The Linux peer B owns three "remote" addresses on
# its loopback, one per route:
#   198.19.7.1  route 198.19.7.0/24 via B's address on the second link
#   198.19.9.1  route 198.19.9.0/24 via 198.18.IDX.5 (a second address of B
#               on the first link: not the interface's default gateway)
#   198.19.8.1  no route: the first interface's default gateway
# Shows, with preloaded Python clients (TCP and UDP) against servers in B:
#   1. each destination is reached, and from the address of the interface
#      its route leaves through (what B's servers see as the peer);
#   2. dpsockd asked ARP for each route's gateway on that route's link
#      (tcpdump in B), and its second port carried the 198.19.7.0/24 traffic
#      (dpsock-stat);
#   3. dpsockd names the routes at start, and stops cleanly;
#   4. without any default gateway, a preloaded client to 198.19.7.1 is
#      still offloaded (the shim knows the routes too) and answered.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip tcpdump python3
require_preload
require_tools dpsockd dpsock-stat
[ "$PRELOAD_KERNEL" != 1 ] || skip "tests dpsockd's routes (no kernel self-check)"
name=$TEST_NAME
test_topo_up 57
NET2=198.18.58
IF_A2=r${TOPO_IDX}a$$
IF_B2=r${TOPO_IDX}b$$
GW1=198.18.$TOPO_IDX.5

# the second link, and B's remote addresses
ip -n "$TOPO_NS_A" link add "$IF_A2" mtu "$TOPO_MTU" type veth peer name "$IF_B2" \
	netns "$TOPO_NS_B" mtu "$TOPO_MTU" || fail "could not create the second veth pair"
# finished checksums from B (as topo.sh does for its own end), nothing
# coalesced on A's end
_topo_ethtool "$TOPO_NS_B" "$IF_B2" tx off rx off tso off gso off gro off
_topo_ethtool "$TOPO_NS_A" "$IF_A2" gro off lro off rx-gro-list off
ip -n "$TOPO_NS_B" addr add "$NET2.2/24" dev "$IF_B2"
ip -n "$TOPO_NS_B" link set dev "$IF_B2" up
ip -n "$TOPO_NS_A" link set dev "$IF_A2" up
ip -n "$TOPO_NS_B" addr add "$GW1/$TOPO_PLEN" dev "$TOPO_IF_B"
for a in 198.19.7.1 198.19.8.1 198.19.9.1; do
	ip -n "$TOPO_NS_B" addr add "$a/32" dev lo
done

# (--immediate-mode: libpcap would otherwise hand frames over a block at a
# time, and the frames of a block not yet full when tcpdump is stopped
# would be missing from the capture)
cap1=$TEST_TMP/arp1.pcap
cap2=$TEST_TMP/arp2.pcap
ip netns exec "$TOPO_NS_B" tcpdump -i "$TOPO_IF_B" -nn -U --immediate-mode -w "$cap1" arp >/dev/null 2>&1 &
cap1_pid=$!
ip netns exec "$TOPO_NS_B" tcpdump -i "$IF_B2" -nn -U --immediate-mode -w "$cap2" arp >/dev/null 2>&1 &
cap2_pid=$!
on_exit "kill $cap1_pid $cap2_pid 2>/dev/null; true"
wait_until 5 test -s "$cap1"
wait_until 5 test -s "$cap2"

# routes_daemon NAME GATEWAY_KEY: dpsockd with one worker (one queue on
# each port), both interfaces (GATEWAY_KEY in the first) and the two routes
routes_daemon() {
	local n=$1 conf=$TEST_TMP/$1.conf
	cat >"$conf" <<EOF
name = "$n";
runtime_dir = "$TEST_TMP";
workers = [ 0 ];
interfaces = (
	{ port = "$TEST_PORT"; address = "$TOPO_ADDR_A/$TOPO_PLEN"; $2 },
	{ port = "net_af_packet9"; address = "$NET2.1/24"; }
);
routes = [ "198.19.7.0/24 via $NET2.2", "198.19.9.0/24 via $GW1" ];
EOF
	PRELOAD_NAME=$n
	# shellcheck disable=SC2046
	dpsockd_start "$n" "$conf" $(DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$n") \
		"--vdev=net_af_packet9,iface=$IF_A2,qpairs=1"
	wait_until 10 test -S "$TEST_TMP/$n.sock"
}
routes_daemon "$name" "gateway = \"$TOPO_ADDR_B\";"
for r in "198.19.7.0/24 via $NET2.2 on net_af_packet9" "198.19.9.0/24 via $GW1 on $TEST_PORT"; do
	grep -q "route $r" "$DPSOCKD_LOG" || fail "dpsockd's log does not name 'route $r'"
done
ok "dpsockd names its routes: 198.19.7.0/24 via $NET2.2 (net_af_packet9), 198.19.9.0/24 via $GW1"

# servers in B: TCP echo that prints each peer, UDP echo that prints each peer
cat >"$TEST_TMP/srv.py" <<'PY'
import socket, sys, threading
kind, port = sys.argv[1], int(sys.argv[2])
if kind == "tcp":
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("0.0.0.0", port))
    l.listen(8)
    print("listening", flush=True)
    while True:
        c, a = l.accept()
        d = c.recv(100)
        print("TCP %s -> %s %s" % (a[0], c.getsockname()[0], d.decode()), flush=True)
        c.sendall(d)
        c.close()
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    print("listening", flush=True)
    while True:
        d, a = s.recvfrom(100)
        print("UDP %s %s" % (a[0], d.decode()), flush=True)
        s.sendto(d, a)
PY
peer_start tsrv python3 "$TEST_TMP/srv.py" tcp 9000
peer_start usrv python3 "$TEST_TMP/srv.py" udp 9001
wait_until 10 grep -q listening "$TEST_TMP/tsrv.log"
wait_until 10 grep -q listening "$TEST_TMP/usrv.log"

cat >"$TEST_TMP/cli.py" <<'PY'
import socket, sys
dst, tag = sys.argv[1], sys.argv[2]
c = socket.create_connection((dst, 9000), timeout=10)
c.sendall(tag.encode())
assert c.recv(100) == tag.encode(), "TCP echo"
c.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5)
u.sendto(tag.encode(), (dst, 9001))
assert u.recvfrom(100)[0] == tag.encode(), "UDP echo"
print("ok", flush=True)
PY

# 1. each destination, and the source address its route gives
tx1_0=$(stat_get "$name" port.1.tx_packets)
for case in "198.19.7.1 $NET2.1" "198.19.9.1 $TOPO_ADDR_A" "198.19.8.1 $TOPO_ADDR_A"; do
	read -r dst src <<<"$case"
	out=$(preload_run timeout 30 python3 "$TEST_TMP/cli.py" "$dst" "to-$dst" 2>&1) ||
		fail "preloaded client to $dst: $out"
	wait_until 5 grep -q "TCP .* -> $dst to-$dst" "$TEST_TMP/tsrv.log"
	wait_until 5 grep -q "UDP .* to-$dst" "$TEST_TMP/usrv.log"
	tsrc=$(sed -n "s/^TCP \\([0-9.]*\\) -> $dst to-$dst\$/\\1/p" "$TEST_TMP/tsrv.log")
	usrc=$(sed -n "s/^UDP \\([0-9.]*\\) to-$dst\$/\\1/p" "$TEST_TMP/usrv.log")
	[ "$tsrc" = "$src" ] && [ "$usrc" = "$src" ] ||
		fail "to $dst: B saw TCP from '$tsrc' and UDP from '$usrc', expected $src"
	ok "TCP and UDP to $dst answered, from $src"
done
preload_offload_ge "$name" tcp_connected 3 5

# 2. the next hops on the wire, and the second port's traffic
# the 198.19.7.1 exchange's frames
wait_counter_ge "$name" port.1.tx_packets $((tx1_0 + 4)) 5
tx1=$STAT_VALUE
kill "$cap1_pid" "$cap2_pid" 2>/dev/null || true
wait "$cap1_pid" "$cap2_pid" 2>/dev/null || true
asked() { tcpdump -nn -r "$1" "arp and src host $2" 2>/dev/null | grep -c "who-has $3 tell $2" || true; }
[ "$(asked "$cap2" "$NET2.1" "$NET2.2")" -ge 1 ] ||
	fail "no ARP request for $NET2.2 on the second link: $(tcpdump -nn -r "$cap2" 2>/dev/null | head -n 5)"
[ "$(asked "$cap1" "$TOPO_ADDR_A" "$GW1")" -ge 1 ] ||
	fail "no ARP request for $GW1 on the first link: $(tcpdump -nn -r "$cap1" 2>/dev/null | head -n 5)"
[ "$(asked "$cap1" "$TOPO_ADDR_A" "$TOPO_ADDR_B")" -ge 1 ] ||
	fail "no ARP request for the default gateway $TOPO_ADDR_B: $(tcpdump -nn -r "$cap1" 2>/dev/null | head -n 5)"
[ "$(asked "$cap1" "$TOPO_ADDR_A" "$NET2.2")" -eq 0 ] && [ "$(asked "$cap2" "$NET2.1" "$GW1")" -eq 0 ] ||
	fail "an ARP request for a gateway on the wrong link"
ok "next hops: ARP for $NET2.2 on the second link, for $GW1 and $TOPO_ADDR_B on the first; port 1 sent $((tx1 - tx1_0)) packets"

# 3. clean stop
dpsockd_stop_clean

# 4. no default gateway: only the route leads to 198.19.7.1
n2=$(unique_name n)
routes_daemon "$n2" ""
out=$(preload_run timeout 30 python3 "$TEST_TMP/cli.py" 198.19.7.1 "again" 2>&1) ||
	fail "without a default gateway, the preloaded client to 198.19.7.1: $out"
preload_offload_ge "$n2" tcp_connected 1 5
grep -q "TCP $NET2.1 -> 198.19.7.1 again" "$TEST_TMP/tsrv.log" ||
	fail "B did not see the second connection from $NET2.1: $(tail -n 2 "$TEST_TMP/tsrv.log")"
ok "no default gateway: a preloaded client to 198.19.7.1 offloaded (tcp_connected $STAT_VALUE) and answered by its route"
dpsockd_stop_clean
pass "static routes: each destination through its route's interface and gateway, the rest through the default gateway"
