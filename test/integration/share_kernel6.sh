#!/usr/bin/env bash
# IPv6 on a port dpsockd shares with the kernel (share_kernel.sh's
# topology and configuration: net_af_xdp, an interface without address):
# namespace A's kernel has IPv4 and IPv6 on the veth, and dpsockd follows
# both. From the Linux peer in B:
#   1. dpsock-stat's port line lists the kernel's IPv6 addresses (the
#      global and the link-local one); the kernel keeps neighbour
#      discovery and ping6 (B's neighbour entry for A's address is the
#      veth's MAC, learned from the kernel's answer);
#   2. a kernel TCP server on IPv6 (an SSH stand-in) answers;
#   3. a preloaded Node.js server with its default listen (an AF_INET6
#      dual-stack socket) is dpsockd's for both families: curl over IPv6
#      and over IPv4 reach it, dpsockd accepts both connections, A's kernel
#      sends no TCP reset;
#   4. 8 MiB each way over IPv6 through a preloaded echo server, byte for
#      byte, while the kernel's IPv6 server keeps answering;
#   5. an active open over IPv6: preloaded curl fetches a file from a Linux
#      HTTP server in B, A's kernel having forgotten B's IPv6 neighbour
#      first (dpsockd asks the kernel to resolve it: no neighbour
#      solicitation of dpsock's own); then from B's address beyond the /64
#      through the kernel's IPv6 default route, which dpsockd follows;
#   6. UDP over IPv6: a preloaded echo on [::] answers datagrams of 64 and
#      8000 bytes (fragments both ways), a kernel echo on another port too;
#   7. multicast over IPv6: a preloaded subscriber joins ff0e::/16 group on
#      the shared port; A's kernel holds the membership (/proc/net/igmp6,
#      so it speaks MLD for the host) and the subscriber gets B's feed;
#   8. `ip -6 addr add` of a second address: an offloaded server bound to
#      it answers within 2 s.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip curl python3 sha256sum node
require_preload
[ "$TEST_PMD" = af_xdp ] || skip "sharing the port with the kernel needs net_af_xdp: ${TEST_PMD_WHY:-DPSOCK_TEST_PMD=$TEST_PMD}"
name=$TEST_NAME
test_topo_up 123
test_topo_ipv6
A6=$TOPO_ADDR6_A
B6=$TOPO_ADDR6_B
# A's kernel: IPv4 and IPv6 (no duplicate address detection: nothing else
# on this link claims them, and a tentative address would not be served)
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.accept_dad=0"
in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=0"
in_a ip addr add "$A6/64" dev "$TOPO_IF_A" nodad
wait_until 5 bash -c "ip -n $TOPO_NS_A -6 addr show dev $TOPO_IF_A scope link | grep -q fe80" ||
	fail "A's kernel has no link-local address: $(in_a ip -6 addr show dev "$TOPO_IF_A")"
share_dpsockd_start "$name"
stat_line() { "$DPSOCK_STAT" -n "$name" -v basic 2>/dev/null | grep '^port 0 '; }
socks() { "$DPSOCK_STAT" -n "$name" -v sockets 2>/dev/null; }
tcp_rsts() { in_a awk '/^Tcp:/ && ++n == 2 { print $15 }' /proc/net/snmp; }

# ---- 1. the kernel's IPv6 followed; ND and ping6 stay the kernel's ----------------------
wait_until 5 bash -c "\"$DPSOCK_STAT\" -n $name -v basic 2>/dev/null | grep '^port 0 ' | grep -q 'fe80::'" ||
	fail "dpsock-stat's port line has no link-local address: $(stat_line)"
line=$(stat_line)
grep -q "shared with the kernel's $TOPO_IF_A" <<<"$line" && grep -q "$A6/64" <<<"$line" ||
	fail "dpsock-stat does not show the port shared with $TOPO_IF_A and its IPv6 address: $line"
passed0=$(stat_read "$name" port.0.filter_passed)
out=$(in_b "$PINGN" -c 20 -i 0.01 "$A6") || fail "ping6 lost: $out"
a_mac=$(in_a cat "/sys/class/net/$TOPO_IF_A/address")
neigh=$(in_b ip -6 neigh show "$A6" dev "$TOPO_IF_B")
grep -qi "lladdr $a_mac" <<<"$neigh" || fail "B's neighbour entry for $A6 is not the veth's MAC: $neigh"
[ "$(stat_sum "$name" icmp6_echo)" = 0 ] || fail "dpsockd answered echo requests of the kernel's address"
wait_counter_ge "$name" port.0.filter_passed $((passed0 + 20)) 5
ok "the port follows $TOPO_IF_A's IPv6 ($line); the kernel answers neighbour discovery and ping6 ($((STAT_VALUE - passed0)) frames passed to it)"

# ---- 2. a kernel service over IPv6 --------------------------------------------------------
# the kernel's TCP (2222) and UDP (5454) echo, SSH's stand-in
TOOLS=$DPSOCK_SRC/test/tools
in_a python3 "$TOOLS/echo6.py" 2222 5454 >"$TEST_TMP/kecho.log" 2>&1 &
kecho=$!
on_exit "kill $kecho 2>/dev/null; true"
wait_until 10 grep -q listening "$TEST_TMP/kecho.log"
in_b python3 "$TOOLS/tcp_rounds.py" "$A6" 2222 3 >/dev/null || fail "the kernel's IPv6 TCP server does not answer"
ok "a kernel TCP server answers over IPv6 beside dpsockd"

# ---- 3. Node.js's dual-stack listener: both families dpsockd's ---------------------------
preload_start node node "$DPSOCK_SRC/test/tools/hello_server.js" 3000 "node says hi"
wait_until 20 grep -q listening "$TEST_TMP/node.log" || fail "node did not start: $(tail -n 3 "$TEST_TMP/node.log")"
grep -q ':3000 .*LISTEN' <<<"$(socks)" || fail "node's listener is not dpsockd's: $(socks)"
acc0=$(stat_sum "$name" tcp_accepted)
rst0=$(tcp_rsts)
body=$(in_b curl -s --max-time 5 "http://[$A6]:3000/") || fail "node's server not reachable over IPv6"
[ "$body" = "node says hi" ] || fail "node answered '$body' over IPv6"
body=$(in_b curl -s --max-time 5 "http://$TOPO_ADDR_A:3000/") || fail "node's server not reachable over IPv4"
[ "$body" = "node says hi" ] || fail "node answered '$body' over IPv4"
acc1=$(stat_sum "$name" tcp_accepted)
[ $((acc1 - acc0)) -eq 2 ] || fail "dpsockd accepted $((acc1 - acc0)) connections of curl's 2 (IPv6, IPv4)"
[ "$(tcp_rsts)" = "$rst0" ] || fail "A's kernel sent TCP resets: node's flows reached the kernel"
ok "Node.js's default listen: curl over IPv6 and IPv4 both accepted by dpsockd, no reset from the kernel"

# ---- 4. 8 MiB each way over IPv6, the kernel server answering meanwhile ---------------------
head -c $((8 << 20)) /dev/urandom >"$TEST_TMP/bulk.bin"
sum=$(sha256sum <"$TEST_TMP/bulk.bin" | cut -d' ' -f1)
# the preloaded echo: TCP 7000 here, its UDP 5353 in step 6
preload_start echo6 python3 "$TOOLS/echo6.py" 7000 5353
wait_until 10 grep -q listening "$TEST_TMP/echo6.log"
grep -q ':7000 .*LISTEN' <<<"$(socks)" || fail "the preloaded echo server is not dpsockd's: $(socks)"
in_b python3 "$TOOLS/tcp_rounds.py" "$A6" 2222 20 0.1 >"$TEST_TMP/kping.log" 2>&1 &
kpingp=$!
acc0=$(stat_sum "$name" tcp_accepted)
got=$(in_b python3 "$TOOLS/bulk_client.py" "$A6" 7000 "$TEST_TMP/bulk.bin" 1 60 10 \
	"$TEST_TMP/bulk.progress") || fail "8 MiB over IPv6 through the preloaded echo failed: $got"
grep -q "tx_sha256=$sum rx_bytes=$((8 << 20)) rx_sha256=$sum " <<<"$got" ||
	fail "8 MiB over IPv6 did not come back whole: $got (sent $sum)"
wait "$kpingp" || fail "the kernel's server missed round trips meanwhile: $(cat "$TEST_TMP/kping.log")"
[ $(($(stat_sum "$name" tcp_accepted) - acc0)) -eq 1 ] || fail "the 8 MiB connection was not dpsockd's"
ok "8 MiB each way over IPv6 through the preloaded echo, byte for byte; 20 kernel round trips answered meanwhile"

# ---- 5. an active open over IPv6, the neighbour resolved by the kernel -----------------------
mkdir -p "$TEST_TMP/bweb"
head -c 300000 /dev/urandom >"$TEST_TMP/bweb/file.bin"
fsum=$(sha256sum <"$TEST_TMP/bweb/file.bin" | cut -d' ' -f1)
peer_start bweb python3 -m http.server 8000 --bind :: --directory "$TEST_TMP/bweb"
wait_until 10 grep -q Serving "$TEST_TMP/bweb.log"
in_a ip -6 neigh flush dev "$TOPO_IF_A"
con0=$(stat_sum "$name" tcp_connected)
miss0=$(stat_sum "$name" neigh_missing)
got=$(preload_run curl -s --max-time 10 "http://[$B6]:8000/file.bin" | sha256sum | cut -d' ' -f1)
[ "$got" = "$fsum" ] || fail "preloaded curl's download from [$B6] is wrong or missing"
con1=$(stat_sum "$name" tcp_connected)
[ $((con1 - con0)) -ge 1 ] || fail "the preloaded curl's IPv6 connection was not dpsockd's"
miss1=$(stat_sum "$name" neigh_missing)
[ "$miss1" -gt "$miss0" ] || fail "dpsockd never waited for B's neighbour entry (neigh_missing $miss0 -> $miss1)"
in_a ip -6 neigh show "$B6" dev "$TOPO_IF_A" | grep -q lladdr ||
	fail "A's kernel did not resolve $B6: $(in_a ip -6 neigh show dev "$TOPO_IF_A")"
ok "preloaded curl's active open over IPv6 went through dpsock; the kernel resolved B's neighbour for it"
# beyond the /64: B's address fd00:beef:IDX::1 through the kernel's IPv6
# default route, which dpsockd follows (and tells the preload: a client's
# destination beyond every prefix is offloaded where a default route is)
far=fd00:beef:$TOPO_IDX::1
ip -n "$TOPO_NS_B" addr add "$far/128" dev "$TOPO_IF_B" nodad
in_a ip -6 route add default via "$B6" dev "$TOPO_IF_A"
wait_until 3 grep -q "route ::/0 via $B6 (kernel)" "$DPSOCKD_LOG" ||
	fail "dpsockd did not follow the kernel's IPv6 default route"
con0=$(stat_sum "$name" tcp_connected)
got=$(preload_run curl -s --max-time 10 "http://[$far]:8000/file.bin" | sha256sum | cut -d' ' -f1)
[ "$got" = "$fsum" ] || fail "preloaded curl's download from [$far] (through the default route) is wrong or missing"
[ $(($(stat_sum "$name" tcp_connected) - con0)) -ge 1 ] ||
	fail "the preloaded curl's connection to [$far] was not dpsockd's"
ok "an active open beyond the /64, to [$far] through the kernel's IPv6 default route, went through dpsock"

# ---- 6. UDP over IPv6, offloaded and kernel ---------------------------------------------------
udp0=$(stat_sum "$name" udp_rx)
frag0=$(stat_read "$name" port.0.filter_frags)
in_b python3 "$TOOLS/udp_rounds.py" "$A6" 5353 20 64 8000 >/dev/null ||
	fail "the preloaded IPv6 UDP echo did not answer 20 of 20"
in_b python3 "$TOOLS/udp_rounds.py" "$A6" 5454 20 64 8000 >/dev/null ||
	fail "the kernel's IPv6 UDP echo did not answer 20 of 20"
[ $(($(stat_sum "$name" udp_rx) - udp0)) -ge 20 ] || fail "the preloaded UDP echo's datagrams were not dpsockd's"
# 10 datagrams of 8000 bytes: at least 60 fragments through the XDP program
wait_counter_ge "$name" port.0.filter_frags $((frag0 + 60)) 5
ok "UDP over IPv6: the preloaded echo (dpsock; 8000-byte datagrams as fragments) and a kernel echo both answer"

# ---- 7. multicast over IPv6 through the kernel's membership -------------------------------------
MC6=$TOOLS/mc6.py
G=ff0e::1:123
ifa=$(in_a cat "/sys/class/net/$TOPO_IF_A/ifindex")
ifb=$(in_b cat "/sys/class/net/$TOPO_IF_B/ifindex")
preload_start mcsub python3 "$MC6" sub -g "$G" -p 5600 -I "$ifa" -n 200 -t 5 -w 20
wait_until 10 grep -q READY "$TEST_TMP/mcsub.log" || fail "the subscriber did not join: $(tail -n 2 "$TEST_TMP/mcsub.log")"
hexg=ff0e0000000000000000000000010123
wait_until 3 bash -c "ip netns exec $TOPO_NS_A cat /proc/net/igmp6 | grep -q $hexg" ||
	fail "A's kernel did not join $G for dpsock: $(in_a cat /proc/net/igmp6)"
rx0=$(stat_sum "$name" mc_rx)
in_b python3 "$MC6" pub -g "$G" -p 5600 -I "$ifb" -n 200 -r 2000 -S 1 >"$TEST_TMP/pub.log" 2>&1 ||
	fail "the publisher in B failed: $(cat "$TEST_TMP/pub.log")"
preload_wait mcsub 30 || fail "the subscriber failed: $(tail -n 3 "$TEST_TMP/mcsub.log")"
grep -q "^RESULT received=200 lost=0 dup=0" "$TEST_TMP/mcsub.log" ||
	fail "multicast over IPv6: $(grep RESULT "$TEST_TMP/mcsub.log")"
[ $(($(stat_sum "$name" mc_rx) - rx0)) -ge 200 ] || fail "the group's datagrams were not dpsockd's"
ok "multicast over IPv6 on the shared port: the kernel holds the membership of $G, the preloaded subscriber got 200 of 200"

# ---- 8. a second IPv6 address ---------------------------------------------------------------------
addr2=${A6%::1}::7
t0=$(date +%s%N)
in_a ip addr add "$addr2/64" dev "$TOPO_IF_A" nodad
wait_until 2 bash -c "\"$DPSOCK_STAT\" -n $name -v basic 2>/dev/null | grep '^port 0 ' | grep -q '$addr2/'" ||
	fail "dpsockd did not take $addr2 within 2 s: $(stat_line)"
preload_start srv2 python3 "$TOOLS/banner_server.py" "$addr2" 7070 "second address"
got=$(in_b timeout 3 python3 -c '
import socket, sys, time
while True:
    try:
        s = socket.create_connection((sys.argv[1], 7070), timeout=1)
        print(s.recv(100).decode().strip()); break
    except OSError:
        time.sleep(0.05)' "$addr2" 2>/dev/null) || true
t1=$(date +%s%N)
[ "$got" = "second address" ] || fail "the server on $addr2 did not answer: '$got'"
grep -q ':7070 .*LISTEN' <<<"$(socks)" || fail "the server on $addr2 is not dpsockd's: $(socks)"
ms=$(((t1 - t0) / 1000000))
[ "$ms" -le 2000 ] || fail "the server on $addr2 answered $ms ms after ip addr add (2 s at most)"
ok "ip -6 addr add $addr2: an offloaded server there answered $ms ms after"
preload_stop srv2 || true
dpsockd_stop_clean
pass "IPv6 on a port shared with the kernel: the kernel keeps neighbour discovery, ping6 and its own sockets; dpsock serves its TCP, UDP and multicast over IPv6 and follows the kernel's IPv6 addresses"
