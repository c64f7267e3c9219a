#!/usr/bin/env bash
# AF_INET6 dual-stack sockets under the preload (docs/preload.md "AF_INET6
# dual-stack sockets"): their IPv4 traffic is offloaded; their IPv6 traffic
# is dpsockd's where it serves IPv6, else it stays with the kernel on the
# same descriptor. Namespace A has an IPv6 address in its kernel (and, on
# AF_XDP, its IPv4 address: dpsockd shares the port and follows both
# families, so IPv6 is offloaded too; on af_packet dpsockd owns the IPv4
# address and IPv6 stays the kernel's: the kernel half). From the Linux
# peer B:
#   1. the socket calls, run in A once under the shim and, where A's kernel
#      has the IPv4 address (sharing), once on Linux alone: the transcripts
#      (addresses, IPv4-mapped names, IPV6_PKTINFO, errno of IPV6_V6ONLY
#      cases, accept over IPv4 and IPv6 on one listener) are equal, and the
#      IPv4 connections were dpsockd's (tcp_connected, tcp_accepted moved);
#   2. Node.js with its default listen(port): offloaded (its listener in
#      dpsock-stat), curl over IPv4 and over IPv6 get its page, wrk over IPv4
#      makes requests without an error, accepted by dpsockd;
#   3. Java's HttpServer on a wildcard address (new InetSocketAddress(port)):
#      the same;
#   4. nginx `listen [::]:80 ipv6only=off`: offloaded, wrk over IPv4 and
#      over IPv6 without errors (the IPv6 connections dpsockd's when
#      sharing, the kernel half's on af_packet); nginx `listen 81; listen
#      [::]:81;` (the IPv6 one is IPV6_V6ONLY, nginx's default): both
#      answer.
#   5. Python's asyncio.start_server(host=None) (an AF_INET socket and a
#      v6only AF_INET6 one): offloaded for IPv4, both answer; a `use os`
#      rule for the port keeps Node's dual-stack listener in the kernel (the
#      rule matches it by its IPv4 address and port), where both answer
#      (IPv6 only on af_packet, where dpsockd owns the IPv4 address).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip nginx wrk curl python3
require_preload
name=$TEST_NAME
test_topo_up 123
A6=fd00:198:18:123::1
B6=fd00:198:18:123::2
for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.default.disable_ipv6=0
done
in_a sysctl -qw "net.ipv6.conf.$TOPO_IF_A.disable_ipv6=0"
in_b sysctl -qw "net.ipv6.conf.$TOPO_IF_B.disable_ipv6=0"
in_a ip -6 addr add "$A6/64" dev "$TOPO_IF_A" nodad
in_b ip -6 addr add "$B6/64" dev "$TOPO_IF_B" nodad
sharing=0
if [ "$TEST_PMD" = af_xdp ]; then
	# the kernel owns the IPv4 address too; dpsockd follows it
	sharing=1
	in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
	share_dpsockd_start "$name"
else
	preload_daemon_start "$name"
fi
chmod 755 "$TEST_TMP" # nginx's workers (nobody) reach the control socket

# ---- 1. the calls, against Linux's answers -----------------------------------------
cat >"$TEST_TMP/hello.py" <<'PY'
import socket, sys
c = socket.create_connection((sys.argv[1] if sys.argv[3] == "4" else sys.argv[2], 7100), timeout=5)
c.sendall(b"hello")
c.close()
PY
peer_start echo python3 "$DPSOCK_SRC/test/tools/echo6.py" 7000 7001
wait_until 10 grep -q listening "$TEST_TMP/echo.log"
calls=(python3 "$DPSOCK_SRC/test/tools/dualstack_calls.py" "$TOPO_ADDR_B" "$B6" 7000 7001 7100
	ip netns exec "$TOPO_NS_B" python3 "$TEST_TMP/hello.py" "$TOPO_ADDR_A" "$A6")
con0=$(stat_sum "$name" tcp_connected)
acc0=$(stat_sum "$name" tcp_accepted)
preload_start calls "${calls[@]}"
wait "$PRELOAD_PID" || fail "the calls under the shim failed: $(tail -n 8 "$TEST_TMP/calls.log")"
grep -q '^done' "$TEST_TMP/calls.log" || fail "the calls under the shim stopped early: $(tail -n 5 "$TEST_TMP/calls.log")"
con1=$(stat_sum "$name" tcp_connected)
acc1=$(stat_sum "$name" tcp_accepted)
[ $((con1 - con0)) -ge 1 ] && [ $((acc1 - acc0)) -ge 1 ] ||
	fail "dpsockd made $((con1 - con0)) connections and accepted $((acc1 - acc0)): the IPv4 traffic was not offloaded"
grep -q '^accept6.addr fd00:198:18:123::2 ' "$TEST_TMP/calls.log" ||
	fail "the listener's IPv6 connection (its kernel half) was not accepted: $(grep accept6 "$TEST_TMP/calls.log")"
grep -q '^accept4.addr ::ffff:198.18.123.2 ' "$TEST_TMP/calls.log" ||
	fail "the IPv4 connection's address is not IPv4-mapped: $(grep accept4 "$TEST_TMP/calls.log")"
if [ "$sharing" = 1 ]; then
	in_a env "${calls[@]}" >"$TEST_TMP/calls-linux.log" 2>&1 ||
		fail "the calls on Linux failed: $(tail -n 5 "$TEST_TMP/calls-linux.log")"
	grep -v '^+ ' "$TEST_TMP/calls.log" >"$TEST_TMP/calls-shim.log"
	diff -u "$TEST_TMP/calls-linux.log" "$TEST_TMP/calls-shim.log" >"$TEST_TMP/calls.diff" ||
		fail "the shim's answers differ from Linux's: $(cat "$TEST_TMP/calls.diff")"
	ok "$(grep -c . "$TEST_TMP/calls-shim.log") dual-stack call answers equal Linux's; IPv4 connections offloaded ($((con1 - con0)) made, $((acc1 - acc0)) accepted)"
else
	note "A's kernel does not have $TOPO_ADDR_A on af_packet (dpsockd owns the port): no Linux transcript to compare"
	ok "dual-stack calls under the shim: IPv4-mapped names, IPv6 through the kernel half, IPv4 offloaded"
fi

# ---- 2, 3. Node.js's default listen, Java's HttpServer on a wildcard address ------------
serve_check "$A6" node 3000 "node says hi" "http://$TOPO_ADDR_A:3000/" node \
	"$DPSOCK_SRC/test/tools/hello_server.js" 3000 "node says hi"
ok "Node.js listen(3000): offloaded, IPv4 and IPv6 answered, wrk $WRK_REQS requests"
serve_check "$A6" java 3100 "java says hi" "http://$TOPO_ADDR_A:3100/" java \
	"$DPSOCK_SRC/test/tools/HelloServer.java" 3100 "java says hi"
ok "Java HttpServer(new InetSocketAddress(3100)): offloaded, IPv4 and IPv6 answered, wrk $WRK_REQS requests"

# ---- 4. nginx on [::] ----------------------------------------------------------------------
pfx=$TEST_TMP/nginx
nginx_preload "$pfx" 2 'nginx dual' <<EOF
access_log off;
server { listen [::]:80 ipv6only=off; root $pfx/www; }
server { listen 81; listen [::]:81; root $pfx/www; }
EOF
preload_listener 80 nginx "$pfx/logs/error.log"
preload_listener 81 nginx "$pfx/logs/error.log"
curl_both "$A6" 80 "nginx dual"
curl_both "$A6" 81 "nginx dual"
acc0=$(stat_sum "$name" tcp_accepted)
wrk_check nginx4 -t 1 -c 8 -d 2s "http://$TOPO_ADDR_A/"
r4=$WRK_REQS
acc1=$(stat_sum "$name" tcp_accepted)
wrk_check nginx6 -t 1 -c 8 -d 2s "http://[$A6]/"
r6=$WRK_REQS
acc2=$(stat_sum "$name" tcp_accepted)
[ $((acc1 - acc0)) -ge 8 ] || fail "dpsockd accepted $((acc1 - acc0)) of wrk's 8 IPv4 connections to nginx"
if [ "$sharing" = 1 ]; then
	# the shared netdev's IPv6 is followed: dpsockd serves it too
	[ $((acc2 - acc1)) -ge 8 ] || fail "dpsockd accepted $((acc2 - acc1)) of wrk's 8 IPv6 connections"
	how6="offloaded: the shared port follows the kernel's IPv6"
else
	[ $((acc2 - acc1)) -eq 0 ] || fail "dpsockd accepted $((acc2 - acc1)) connections during the IPv6 run"
	how6="the kernel half"
fi
ok "nginx [::]:80 ipv6only=off: wrk $r4 requests over IPv4 (offloaded), $r6 over IPv6 ($how6); [::]:81 beside 81 answers both"
preload_stop nginx QUIT || true

# ---- 5. Python asyncio on every address; an offload rule on a dual-stack socket ------
# asyncio.start_server(host=None) opens one socket per address family that
# getaddrinfo gives: 0.0.0.0 (AF_INET, offloaded) and "::" with
# IPV6_V6ONLY (asyncio sets it when it opens both: the kernel's)
cat >"$TEST_TMP/aio.py" <<'PY'
import asyncio, sys
async def serve(r, w):
    await r.readline()
    w.write(b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nasyncio hi")
    await w.drain()
    w.close()
async def main():
    s = await asyncio.start_server(serve, host=None, port=int(sys.argv[1]))
    print("listening", " ".join(str(x.family) for x in s.sockets), flush=True)
    await s.serve_forever()
asyncio.run(main())
PY
preload_start aio python3 "$TEST_TMP/aio.py" 3200
wait_until 20 grep -q listening "$TEST_TMP/aio.log" || fail "the asyncio server did not start: $(tail -n 3 "$TEST_TMP/aio.log")"
preload_listener 3200 asyncio "$TEST_TMP/aio.log"
curl_both "$A6" 3200 "asyncio hi"
ok "asyncio.start_server(host=None): its AF_INET socket offloaded, IPv4 and IPv6 answered ($(grep listening "$TEST_TMP/aio.log"))"
preload_stop aio || true
# a `use os` rule names the dual-stack socket by its IPv4 address and port
printf 'use os tcp_server *:3300\n' >"$TEST_TMP/os.rules"
PRELOAD_ENV=("DPSOCK_RULES_FILE=$TEST_TMP/os.rules")
preload_start noderule node "$DPSOCK_SRC/test/tools/hello_server.js" 3300 "node in the kernel"
PRELOAD_ENV=()
wait_until 20 grep -q listening "$TEST_TMP/noderule.log" || fail "node did not start: $(tail -n 3 "$TEST_TMP/noderule.log")"
if [ "$sharing" = 1 ]; then
	curl_both "$A6" 3300 "node in the kernel"
else
	# dpsockd owns the port's IPv4 address: the kernel can answer IPv6 only
	body=$(in_b curl -s --max-time 5 "http://[$A6]:3300/") || fail "curl over IPv6 to port 3300 failed"
	[ "$body" = "node in the kernel" ] || fail "port 3300 answered '$body' over IPv6"
fi
! "$DPSOCK_STAT" -n "$name" -v sockets 2>/dev/null | grep -q ':3300 ' ||
	fail "a 'use os' rule did not keep node's dual-stack listener in the kernel: $("$DPSOCK_STAT" -n "$name" -v sockets 2>&1)"
ok "a 'use os tcp_server *:3300' rule keeps Node's dual-stack listener in the kernel, where it answers$([ "$sharing" = 1 ] && echo ' IPv4 and') IPv6"
preload_stop noderule || true
