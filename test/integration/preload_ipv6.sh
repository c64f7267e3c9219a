#!/usr/bin/env bash
# TCP and UDP over IPv6 under the preload (docs/preload.md "IPv6"): dpsockd owns the
# test port with address6 (fd00:198:18:126::1/64); the Linux stack in
# namespace B is the peer over IPv6 and IPv4.
#   1. The calls (test/tools/ipv6_calls.py), preloaded in A, against a
#      client and an echo server in B: a v6only listener on "::" and one on
#      the address6 take IPv6 connections and refuse IPv4 (as Linux: the
#      listener does not hear it); a listener of both families on "::"
#      takes both (an IPv4 peer named ::ffff:B4); an unbound v6only
#      listener listens on "::"; a client connects to B's IPv6 echo server
#      (blocking and non-blocking) and moves 8 MiB each way; a closed port
#      refuses; UDP sockets bound for IPv6 alone ("::", the address6) and
#      for both families take a datagram and answer it (IPV6_PKTINFO names
#      the destination), an unbound one sends to B's IPv6 echo server
#      (64 and 8000 bytes: fragments both ways), a connected one too.
#      The same script runs first between two namespaces of Linux
#      alone (the same addresses, on their kernels): every line (names,
#      families, errnos) is equal. dpsockd's counters say it accepted and
#      made the connections.
#   2. nginx with `listen [::]:80` (IPV6_V6ONLY, nginx's default) beside
#      `listen 80`, and `listen [::]:81 ipv6only=off`: their listeners are
#      dpsockd's, curl over IPv6 and IPv4 gets the page, wrk over IPv6 makes
#      requests without an error, every connection accepted by dpsockd.
#   3. Node.js's default listen(port) and Java's HttpServer on a wildcard
#      address (dual-stack sockets): reached over IPv6 and IPv4, both
#      offloaded, wrk over IPv6 without an error.
#   4. An offload rule with an IPv6 endpoint keeps that IPv6 listener in
#      the kernel, and neither IPv4's on the same port nor another port's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 nginx curl wrk
require_preload
[ "$PRELOAD_KERNEL" != 1 ] || skip "IPv6 under the preload needs dpsockd (address6): no kernel self-check"
name=$TEST_NAME

# ---- 1. the calls ------------------------------------------------------------------------
# the peer's client: it says hello (TCP), or sends hello and prints the
# reply (UDP); its echo servers are test/tools/echo6.py
cat >"$TEST_TMP/hello.py" <<'PY'
import errno, socket, sys
addr, port = sys.argv[1], int(sys.argv[2])
try:
    if sys.argv[3] == "udp":
        u = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(10)
        u.sendto(b"hello", (addr, port))
        print("got", u.recv(100).decode())
    else:
        c = socket.create_connection((addr, port), timeout=10)
        c.sendall(b"hello")
        c.close()
        print("sent")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
PY
# calls LOG CMD...: the calls under CMD (env, or the shim) in A, against
# the peer's echo server and client in B
calls() {
	local log=$1
	shift
	peer_start echo python3 "$DPSOCK_SRC/test/tools/echo6.py" 7620
	# (B's loopback has no IPv6: B cannot probe its own IPv6 address)
	wait_until 10 grep -q listening "$TEST_TMP/echo.log"
	"$@" timeout 120 python3 "$DPSOCK_SRC/test/tools/ipv6_calls.py" "$TOPO_ADDR_A" "$A6" \
		"$TOPO_ADDR_B" "$B6" 7600 ip netns exec "$TOPO_NS_B" python3 "$TEST_TMP/hello.py" \
		>"$TEST_TMP/$log" 2>&1 || fail "the calls ($log) failed: $(tail -n 8 "$TEST_TMP/$log")"
	preload_stop echo || true
}

# Linux alone: A's kernel has the addresses (a topology of its own)
test_topo_up 127 "${name}k"
test_topo_ipv6
A6=$TOPO_ADDR6_A
B6=$TOPO_ADDR6_B
in_a sysctl -qw net.ipv6.conf.all.disable_ipv6=0 "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=0"
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
in_a ip -6 addr add "$A6/64" dev "$TOPO_IF_A" nodad
calls calls-linux.log in_a env
grep -q '^-- done' "$TEST_TMP/calls-linux.log" || fail "the calls on Linux stopped early"

test_topo_up 126
test_topo_ipv6
A6=$TOPO_ADDR6_A
B6=$TOPO_ADDR6_B
# A's kernel: IPv6 on its loopback (::1), as on any host, and still off on
# the port dpsockd owns (the JVM takes a host without any IPv6 address
# for one without IPv6, and then makes AF_INET sockets only)
in_a sysctl -qw net.ipv6.conf.all.disable_ipv6=0
in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=1"
TEST_IFACE_KEYS="address6 = \"$A6/64\";"
preload_daemon_start "$name"
chmod 755 "$TEST_TMP" # nginx's workers (nobody) reach the control socket
acc0=$(stat_sum "$name" tcp_accepted)
con0=$(stat_sum "$name" tcp_connected)
urx0=$(stat_sum "$name" udp_rx)
utx0=$(stat_sum "$name" udp_tx)
calls calls.log preload_run
diff -u "$TEST_TMP/calls-linux.log" "$TEST_TMP/calls.log" >"$TEST_TMP/calls.diff" ||
	fail "the calls' answers differ from Linux's: $(cat "$TEST_TMP/calls.diff")"
acc1=$(stat_sum "$name" tcp_accepted)
con1=$(stat_sum "$name" tcp_connected)
urx1=$(stat_sum "$name" udp_rx)
utx1=$(stat_sum "$name" udp_tx)
# 5 accepted (4 IPv6, 1 IPv4), 2 connections made (the refused one is not
# counted); 7 datagrams each way (4 to servers, 3 to the peer's echo)
[ $((acc1 - acc0)) -eq 5 ] || fail "dpsockd accepted $((acc1 - acc0)) of the calls' 5 connections"
[ $((con1 - con0)) -ge 2 ] || fail "dpsockd made $((con1 - con0)) of the calls' 2 connections"
[ $((urx1 - urx0)) -eq 7 ] && [ $((utx1 - utx0)) -eq 7 ] ||
	fail "dpsockd received $((urx1 - urx0)) and sent $((utx1 - utx0)) of the calls' 7 datagrams each way"
ok "$(grep -c . "$TEST_TMP/calls.log") call answers equal Linux's; dpsockd accepted $((acc1 - acc0)), connected $((con1 - con0)), 7 datagrams each way"

# ---- 2. nginx on [::] -------------------------------------------------------------------
pfx=$TEST_TMP/nginx
nginx_preload "$pfx" 2 'nginx six' <<NGX
access_log off;
server { listen 80; listen [::]:80; root $pfx/www; }
server { listen [::]:81 ipv6only=off; root $pfx/www; }
NGX
preload_listener 80 nginx "$pfx/logs/error.log"
preload_listener 81 nginx "$pfx/logs/error.log"
n80=$("$DPSOCK_STAT" -n "$name" -v sockets 2>/dev/null | grep -c ':80 .*LISTEN' || true)
curl_both "$A6" 80 "nginx six"
curl_both "$A6" 81 "nginx six"
acc0=$(stat_sum "$name" tcp_accepted)
wrk_check nginx6 -t 1 -c 8 -d 2s "http://[$A6]/"
r6=$WRK_REQS
acc1=$(stat_sum "$name" tcp_accepted)
wrk_check nginx81 -t 1 -c 8 -d 2s "http://[$A6]:81/"
r81=$WRK_REQS
acc2=$(stat_sum "$name" tcp_accepted)
[ $((acc1 - acc0)) -ge 8 ] || fail "dpsockd accepted $((acc1 - acc0)) of wrk's 8 IPv6 connections to [::]:80"
[ $((acc2 - acc1)) -ge 8 ] || fail "dpsockd accepted $((acc2 - acc1)) of wrk's 8 IPv6 connections to [::]:81"
ok "nginx listen 80 + [::]:80 ($n80 listener slots of dpsockd's on :80) and [::]:81 ipv6only=off: curl over both families; wrk over IPv6 $r6 and $r81 requests, all offloaded"
preload_stop nginx QUIT || true

# ---- 3. Node.js's default listen(port), Java's HttpServer on a wildcard address ---------
# (lib.sh's serve_check: wrk over IPv6; curl's two connections both
# accepted by dpsockd)
serve_check "$A6" node 3000 "node says hi" "http://[$A6]:3000/" node \
	"$DPSOCK_SRC/test/tools/hello_server.js" 3000 "node says hi"
[ "$SERVE_CURL_ACC" = 2 ] || fail "dpsockd accepted $SERVE_CURL_ACC of curl's 2 connections (IPv4, IPv6) to node"
ok "Node.js listen(3000): IPv4 and IPv6 offloaded; wrk over IPv6 $WRK_REQS requests"
serve_check "$A6" java 3100 "java says hi" "http://[$A6]:3100/" java \
	"$DPSOCK_SRC/test/tools/HelloServer.java" 3100 "java says hi"
[ "$SERVE_CURL_ACC" = 2 ] || fail "dpsockd accepted $SERVE_CURL_ACC of curl's 2 connections (IPv4, IPv6) to java"
ok "Java HttpServer(new InetSocketAddress(3100)): IPv4 and IPv6 offloaded; wrk over IPv6 $WRK_REQS requests"

# ---- 4. an offload rule with an IPv6 endpoint ------------------------------------------
# `use os tcp_server [::/0]:3400` (every IPv6 address, IPv6 alone): a v6only
# listener on "::" port 3400 stays in the kernel (not in dpsock-stat), one
# on 3401 does not; an AF_INET listener on 3400 is dpsockd's (the rule's
# address is IPv6's). Prefixes are matched in test/unit/rules_test.c.
printf 'use os tcp_server [::/0]:3400\n' >"$TEST_TMP/os6.rules"
cat >"$TEST_TMP/three.py" <<'PY'
import socket, sys, time
ls = []
for fam, addr, port in ((socket.AF_INET6, "::", 3400), (socket.AF_INET6, "::", 3401),
                        (socket.AF_INET, sys.argv[1], 3400)):
    s = socket.socket(fam, socket.SOCK_STREAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind((addr, port))
    s.listen(4)
    ls.append(s)
print("listening", flush=True)
time.sleep(60)
PY
PRELOAD_ENV=("DPSOCK_RULES_FILE=$TEST_TMP/os6.rules")
preload_start rule6 python3 "$TEST_TMP/three.py" "$TOPO_ADDR_A"
PRELOAD_ENV=()
wait_until 20 grep -q listening "$TEST_TMP/rule6.log" || fail "three.py did not start: $(tail -n 3 "$TEST_TMP/rule6.log")"
preload_listener 3401 "three.py" "$TEST_TMP/rule6.log"
socks=$("$DPSOCK_STAT" -n "$name" -v sockets 2>/dev/null)
! grep -q '\[::\]:3400 ' <<<"$socks" ||
	fail "'use os tcp_server [::/0]:3400' did not keep the IPv6 listener in the kernel: $socks"
grep -q "$TOPO_ADDR_A:3400 .*LISTEN\|\*:3400 .*LISTEN" <<<"$socks" ||
	fail "the AF_INET listener on 3400 is not dpsockd's: $socks"
ok "'use os tcp_server [::/0]:3400' keeps the IPv6 listener on 3400 in the kernel; IPv4's on 3400 and IPv6's on 3401 are dpsockd's"
preload_stop rule6 || true

preload_daemon_stop
