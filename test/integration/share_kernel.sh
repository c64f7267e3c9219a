#!/usr/bin/env bash
# dpsockd on a port it shares with the kernel (docs/design.md, decision 9):
# namespace A's kernel owns the address on the veth; dpsockd runs on the
# same veth through net_af_xdp with an interface that has no address, so
# it follows the kernel's netdev, and its XDP program sends it only the
# flows it serves. From the Linux peer in B:
#   1. dpsockd follows the kernel: dpsock-stat's port line says "shared"
#      and lists the kernel's address; the kernel keeps ARP (B's neighbour
#      entry for A is the veth's MAC, learned from the kernel's answer);
#   2. a kernel TCP server (an SSH stand-in) answers, and ping too;
#   3. preloaded nginx serves port 80 on the same address, offloaded (its
#      listener in dpsock-stat's socket view, tcp_accepted moves, A's
#      kernel sends no TCP reset), and while wrk loads it for 3 s
#      every ping and every round trip to the kernel server still answers;
#   4. a Node.js server with its default listen (an AF_INET6 dual-stack
#      socket) is offloaded and reachable; a program whose sockets a `use os`
#      rule keeps in the kernel is reachable through the kernel;
#   5. an active open: preloaded curl fetches a file from a Linux HTTP
#      server in B (sha256), through dpsock (tcp_connected moves, its local
#      port in dpsock's ephemeral range, reserved in A's kernel);
#   6. UDP: a preloaded echo on a port dpsock serves, a kernel echo on
#      another: both answer B;
#   6b. a connection outlives its listener: preloaded socat -u closes its
#      listener once it accepted; 4 MiB from B arrive whole and A's kernel
#      sends no reset (the connection holds its listener's filter entry);
#   7. multicast: a preloaded subscriber joins a group on the shared port:
#      A's kernel holds the membership (/proc/net/igmp: it speaks IGMP for
#      the host), and the subscriber receives B's datagrams through dpsock;
#   8. `ip addr add` of a second address: a preloaded server bound to it
#      answers within 2 s, offloaded;
#   9. kill -9 of dpsockd: within 1 s the interface has no XDP program, the
#      kernel server answers, a new kernel socket on a port dpsock had used
#      answers, and nginx (whose listener fell back to its kernel socket,
#      docs/preload.md) serves port 80 through the kernel.
#  10. the range stays reserved after the kill -9; a new dpsockd of the same
#      name and its clean stop put back the kernel's value from before.
# af_packet cannot share a port (it cannot hide frames from the kernel):
# dpsockd refuses such a configuration with a message saying what to do.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip nginx wrk curl python3 sha256sum
require_preload
require_tools mctool
[ "$TEST_PMD" = af_xdp ] || skip "sharing the port with the kernel needs net_af_xdp: ${TEST_PMD_WHY:-DPSOCK_TEST_PMD=$TEST_PMD}"
MCTOOL=$(dpsock_tool mctool)
name=$TEST_NAME
test_topo_up 122
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
res0=$(in_a cat /proc/sys/net/ipv4/ip_local_reserved_ports)
share_dpsockd_start "$name"
chmod 755 "$TEST_TMP" # nginx's workers (nobody) reach the control socket
stat_line() { "$DPSOCK_STAT" -n "$name" -v basic 2>/dev/null | grep '^port 0 '; }
socks() { "$DPSOCK_STAT" -n "$name" -v sockets 2>/dev/null; }

# ---- 1. following the kernel -----------------------------------------------------
line=$(stat_line)
grep -q "shared with the kernel's $TOPO_IF_A" <<<"$line" && grep -q "$TOPO_ADDR_A/$TOPO_PLEN" <<<"$line" ||
	fail "dpsock-stat does not show the port shared with $TOPO_IF_A and its address: $line"
in_b "$PINGN" -c 1 -W 2 "$TOPO_ADDR_A" >/dev/null || fail "no ping reply from A's kernel"
a_mac=$(in_a cat "/sys/class/net/$TOPO_IF_A/address")
b_neigh=$(in_b ip neigh show "$TOPO_ADDR_A" dev "$TOPO_IF_B")
grep -qi "$a_mac" <<<"$b_neigh" || fail "B's neighbour entry for A is not the veth's MAC: $b_neigh"
ok "the port follows $TOPO_IF_A ($line); the kernel answers ARP and ping"

# ---- 2. a kernel service -----------------------------------------------------------
# the kernel's TCP (2222) and UDP (5454) echo, SSH's stand-in
in_a python3 "$DPSOCK_SRC/test/tools/echo6.py" 2222 5454 >"$TEST_TMP/kecho.log" 2>&1 &
kecho=$!
on_exit "kill $kecho 2>/dev/null; true"
wait_until 10 grep -q listening "$TEST_TMP/kecho.log"
ROUNDS=$DPSOCK_SRC/test/tools/tcp_rounds.py
in_b python3 "$ROUNDS" "$TOPO_ADDR_A" 2222 3 >/dev/null || fail "the kernel TCP server does not answer"
ok "a kernel TCP server answers beside dpsockd"

# ---- 3. preloaded nginx on port 80, offloaded, under load -------------------------------
pfx=$TEST_TMP/nginx
nginx_preload "$pfx" 2 'dpsock shares the NIC with the kernel' <<EOF
access_log off;
server { listen $TOPO_ADDR_A:80; root $pfx/www; }
EOF
wait_until 20 bash -c "\"$DPSOCK_STAT\" -n $name -v sockets 2>/dev/null | grep -q ':80 .*LISTEN'" ||
	fail "nginx's listener is not dpsockd's: $(socks) $(tail -n 3 "$pfx/logs/error.log")"
acc0=$(stat_sum "$name" tcp_accepted)
# the kernel's TCP resets: it would answer nginx's flows with RST had they reached it
rst0=$(a_tcp_out_rsts)
body=$(in_b curl -s --max-time 5 "http://$TOPO_ADDR_A/index.html") || fail "curl to nginx failed"
[ "$body" = "dpsock shares the NIC with the kernel" ] || fail "nginx answered '$body'"
in_b "$PINGN" -c 20 -i 0.1 -W 2 "$TOPO_ADDR_A" >"$TEST_TMP/ping.log" 2>&1 &
pingp=$!
in_b python3 "$ROUNDS" "$TOPO_ADDR_A" 2222 20 0.1 >"$TEST_TMP/kping.log" 2>&1 &
kpingp=$!
wrk_check nginx -t 1 -c 16 -d 3s "http://$TOPO_ADDR_A/index.html"
wait "$pingp" || fail "ping lost replies while nginx was loaded: $(tail -n 2 "$TEST_TMP/ping.log")"
wait "$kpingp" || fail "the kernel server missed round trips while nginx was loaded: $(cat "$TEST_TMP/kping.log")"
reqs=$WRK_REQS
acc1=$(stat_sum "$name" tcp_accepted)
[ $((acc1 - acc0)) -ge 16 ] || fail "dpsockd accepted $((acc1 - acc0)) connections for curl and wrk's 16"
rst1=$(a_tcp_out_rsts)
[ "$rst1" = "$rst0" ] || fail "A's kernel sent $((rst1 - rst0)) TCP resets: nginx's flows reached the kernel"
red=$(stat_read "$name" port.0.filter_redirected)
ok "nginx offloaded ($reqs requests, $((acc1 - acc0)) connections accepted by dpsockd, $red frames redirected); 20 pings and 20 kernel round trips answered meanwhile"

# ---- 4. what stays in the kernel is reachable ----------------------------------------
if command -v node >/dev/null; then
	preload_start node node "$DPSOCK_SRC/test/tools/hello_server.js" 3000 "node says hi"
	wait_until 20 grep -q listening "$TEST_TMP/node.log" || fail "node did not start: $(tail -n 3 "$TEST_TMP/node.log")"
	body=$(in_b curl -s --max-time 5 "http://$TOPO_ADDR_A:3000/") || fail "node's server not reachable"
	[ "$body" = "node says hi" ] || fail "node answered '$body'"
	grep -q ':3000 .*LISTEN' <<<"$(socks)" || fail "node's AF_INET6 dual-stack listener is not dpsockd's: $(socks)"
	ok "Node.js with its default listen (AF_INET6 dual-stack) is offloaded and reachable"
else
	fail "node is not installed (scripts/setup installs nodejs)"
fi
printf 'use os tcp_server *:9090\n' >"$TEST_TMP/os.rules"
PRELOAD_ENV=("DPSOCK_RULES_FILE=$TEST_TMP/os.rules")
preload_start osrule python3 -m http.server 9090 --bind 0.0.0.0 --directory "$pfx/www"
PRELOAD_ENV=()
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 9090 15 || fail "the use-os server is not reachable"
body=$(in_b curl -s --max-time 5 "http://$TOPO_ADDR_A:9090/index.html")
[ "$body" = "dpsock shares the NIC with the kernel" ] || fail "the use-os server answered '$body'"
! socks | grep -q ':9090 ' || fail "the use-os server's socket is dpsockd's"
ok "a program kept in the kernel by a 'use os' rule is reachable"

# ---- 5. an active open through dpsock ---------------------------------------------------
mkdir -p "$TEST_TMP/bweb"
head -c 300000 /dev/urandom >"$TEST_TMP/bweb/file.bin"
sum=$(sha256sum <"$TEST_TMP/bweb/file.bin" | cut -d' ' -f1)
peer_start bweb python3 -m http.server 8000 --bind "$TOPO_ADDR_B" --directory "$TEST_TMP/bweb"
wait_until 10 grep -q Serving "$TEST_TMP/bweb.log"
con0=$(stat_sum "$name" tcp_connected)
got=$(preload_run curl -s --max-time 10 "http://$TOPO_ADDR_B:8000/file.bin" | sha256sum | cut -d' ' -f1)
[ "$got" = "$sum" ] || fail "preloaded curl's download from B is wrong or missing"
con1=$(stat_sum "$name" tcp_connected)
[ $((con1 - con0)) -ge 1 ] || fail "the preloaded curl's connection was not dpsockd's"
grep -q '49152-60999' <<<"$(in_a cat /proc/sys/net/ipv4/ip_local_reserved_ports)" ||
	fail "dpsock's ephemeral range is not reserved in A's kernel: $(in_a cat /proc/sys/net/ipv4/ip_local_reserved_ports)"
ok "preloaded curl's active open went through dpsock (ephemeral ports 49152-60999 reserved in the kernel)"

# ---- 6. UDP, offloaded and kernel -------------------------------------------------------
cat >"$TEST_TMP/uecho.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", int(sys.argv[1])))
print("bound", flush=True)
while True:
    d, a = s.recvfrom(2048)
    s.sendto(d, a)
PY
preload_start uecho python3 "$TEST_TMP/uecho.py" 5353
wait_until 10 grep -q bound "$TEST_TMP/uecho.log"
udp0=$(stat_sum "$name" udp_rx)
in_b python3 "$DPSOCK_SRC/test/tools/udp_rounds.py" "$TOPO_ADDR_A" 5353 10 >/dev/null || fail "the preloaded UDP echo did not answer 10 of 10"
in_b python3 "$DPSOCK_SRC/test/tools/udp_rounds.py" "$TOPO_ADDR_A" 5454 10 >/dev/null || fail "the kernel UDP echo did not answer 10 of 10"
[ $(($(stat_sum "$name" udp_rx) - udp0)) -ge 10 ] || fail "the preloaded UDP echo's datagrams were not dpsockd's"
ok "UDP: the preloaded echo (dpsock) and a kernel echo both answer"

# ---- 6b. a listener that closes once it accepted ---------------------------------------------
# socat -u TCP-LISTEN closes its listener after the accept: the connection
# must stay dpsock's (it holds its listener's filter entry), never the
# kernel's, which would reset it.
head -c $((4 * 1024 * 1024)) /dev/urandom >"$TEST_TMP/one.bin"
preload_start one socat -u "TCP-LISTEN:7300,bind=$TOPO_ADDR_A,reuseaddr" "CREATE:$TEST_TMP/one.out"
preload_listener 7300 one "$TEST_TMP/one.log"
rsts0=$(a_tcp_out_rsts)
in_b timeout 30 socat -u "OPEN:$TEST_TMP/one.bin" "TCP:$TOPO_ADDR_A:7300" ||
	fail "B's socat could not send 4 MiB to the preloaded socat whose listener closed after its accept"
preload_wait one 20 || fail "the preloaded socat -u did not end: $(tail -n 2 "$TEST_TMP/one.log")"
rsts1=$(a_tcp_out_rsts)
cmp -s "$TEST_TMP/one.bin" "$TEST_TMP/one.out" ||
	fail "the stream to the preloaded socat -u arrived different ($(stat -c %s "$TEST_TMP/one.out") of 4194304 bytes)"
[ "$rsts1" = "$rsts0" ] || fail "A's kernel sent $((rsts1 - rsts0)) TCP reset(s) on a connection whose listener had closed"
ok "a connection outlives its listener (socat -u): 4 MiB whole, no reset from A's kernel"

# ---- 7. multicast through the kernel's membership ----------------------------------------
group=239.1.22.7
preload_start mcsub "$MCTOOL" sub -g "$group" -p 5600 -n 50 -t 5 -w 10
wait_until 10 grep -q READY "$TEST_TMP/mcsub.log" || fail "the subscriber did not join: $(tail -n 2 "$TEST_TMP/mcsub.log")"
hexg=$(printf '%02X%02X%02X%02X' 7 22 1 239)
wait_until 3 bash -c "ip netns exec $TOPO_NS_A cat /proc/net/igmp | grep -q $hexg" ||
	fail "A's kernel did not join $group for dpsock: $(in_a cat /proc/net/igmp)"
in_b "$MCTOOL" pub -g "$group" -p 5600 -n 50 -r 500 -i "$TOPO_ADDR_B" >/dev/null
preload_wait mcsub 20 || true
res=$(grep '^RESULT' "$TEST_TMP/mcsub.log") || fail "the subscriber printed no result: $(tail -n 3 "$TEST_TMP/mcsub.log")"
[ "$(sed -n 's/.*received=\([0-9]*\).*/\1/p' <<<"$res")" = 50 ] || fail "multicast: $res"
ok "multicast on the shared port: the kernel holds the membership, the preloaded subscriber got 50 of 50"

# ---- 8. a second address -------------------------------------------------------------------
addr2=${TOPO_ADDR_A%.*}.7
t0=$(date +%s%N)
in_a ip addr add "$addr2/$TOPO_PLEN" dev "$TOPO_IF_A"
wait_until 2 bash -c "\"$DPSOCK_STAT\" -n $name -v basic 2>/dev/null | grep '^port 0 ' | grep -q '$addr2/'" ||
	fail "dpsockd did not take $addr2 within 2 s: $(stat_line)"
preload_start srv2 python3 "$DPSOCK_SRC/test/tools/banner_server.py" "$addr2" 7070 "second address"
got=$(in_b timeout 3 bash -c "until exec 3<>/dev/tcp/$addr2/7070; do sleep 0.05; done; cat <&3" 2>/dev/null) || true
t1=$(date +%s%N)
[ "$got" = "second address" ] || fail "the server on $addr2 did not answer: '$got'"
grep -q ':7070 .*LISTEN' <<<"$(socks)" || fail "the server on $addr2 is not dpsockd's: $(socks)"
ms=$(((t1 - t0) / 1000000))
[ "$ms" -le 2000 ] || fail "the server on $addr2 answered $ms ms after ip addr add (2 s at most)"
ok "ip addr add $addr2: an offloaded server there answered $ms ms after"

# ---- 9. kill -9 of dpsockd: the kernel gets the interface back -------------------------------
preload_stop srv2 KILL || true
t0=$(date +%s%N)
dpsockd_stop "$name" KILL || true
wait_until 1 bash -c "! ip -n $TOPO_NS_A link show $TOPO_IF_A | grep -q xdp" ||
	fail "1 s after kill -9, $TOPO_IF_A still has an XDP program: $(in_a ip link show "$TOPO_IF_A")"
in_b python3 "$ROUNDS" "$TOPO_ADDR_A" 2222 1 >/dev/null || fail "the kernel server does not answer after kill -9"
# a new kernel socket on the port dpsock served for the killed server
in_a python3 "$DPSOCK_SRC/test/tools/banner_server.py" "$addr2" 7070 "second address" >"$TEST_TMP/ksrv2.log" 2>&1 &
ksrv2=$!
on_exit "kill $ksrv2 2>/dev/null; true"
got=$(in_b timeout 2 bash -c "until exec 3<>/dev/tcp/$addr2/7070; do sleep 0.05; done; cat <&3" 2>/dev/null) || true
[ "$got" = "second address" ] || fail "a new kernel socket on $addr2:7070 did not answer after kill -9"
body=$(in_b curl -s --max-time 2 "http://$TOPO_ADDR_A/index.html") || true
t1=$(date +%s%N)
[ "$body" = "dpsock shares the NIC with the kernel" ] ||
	fail "nginx (its listener now a kernel socket) did not answer after kill -9: '$body'"
ok "kill -9 of dpsockd: no XDP program left, the kernel server, a new kernel socket on dpsock's port and nginx (fallen back) answer within $(((t1 - t0) / 1000000)) ms"
preload_stop nginx QUIT || true

# ---- 10. the next dpsockd puts back the host's reserved ports ------------------------------
res=$(in_a cat /proc/sys/net/ipv4/ip_local_reserved_ports)
grep -q '49152-60999' <<<"$res" || fail "the kill -9 took dpsock's range out of the kernel's reserved ports: '$res'"
[ -s "/dev/shm/dpsock.$name.ports" ] || [ -z "$res0" ] || fail "the host's reserved ports before dpsockd ('$res0') were not kept"
# shellcheck disable=SC2046
dpsockd_start "$name" "$SHARE_CONF" $(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name")
wait_until 10 test -S "$TEST_TMP/$name.sock"
grep -q 'did not stop cleanly' "$DPSOCKD_LOG" || fail "the restarted dpsockd did not take the kept value: $(grep -i reserved "$DPSOCKD_LOG")"
dpsockd_stop_clean
res=$(in_a cat /proc/sys/net/ipv4/ip_local_reserved_ports)
[ "$res" = "$res0" ] || fail "after kill -9, restart and stop, the kernel's reserved ports are '$res', not the host's '$res0'"
[ ! -e "/dev/shm/dpsock.$name.ports" ] || fail "/dev/shm/dpsock.$name.ports left after a clean stop"
ok "after kill -9 the range stays reserved; the next dpsockd's clean stop puts back the host's value ('$res0')"
pass "a port shared with the kernel: kernel services answer all along, dpsock serves its own flows, follows the kernel's addresses, and gives the interface back when killed"
