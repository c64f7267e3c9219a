#!/usr/bin/env bash
# Connections between two programs of one host, both preloaded, through the
# address dpsockd serves (docs/design.md, "Connections to this host's own
# addresses"): the worker's lwIP loops such handshakes back to itself and
# pairs the two preloaded ends, whose bytes then go FIFO to FIFO
# (preload.cut_through; DPSOCK_TEST_CUT=0 runs it all with the option off,
# every byte as looped segments). Nothing reaches the wire. All in
# namespace A:
#   1. socat echo: 20 echoes of 1 MiB each come back whole (sha256), and
#      64 MiB one way and back (sha256); dpsockd accepted and connected
#      them (tcp_accepted, tcp_connected), paired them (cut_pairs) and moved
#      their bytes (cut_bytes), or looped them (loop_packets, the option
#      off); A's veth sent no TCP frame; dpsock-stat shows such a
#      connection; the TCP calls of both ends (half-close, close with
#      unread data, SO_LINGER 0, back-pressure, poll and epoll events)
#      answer as on Linux's loopback (test/tools/samehost_calls.py);
#   2. a slow reader: the writer blocks (8 MiB into a reader that sleeps),
#      then finishes, every byte received in order; both directions at
#      once (test/tools/bp.py: 64 MiB echoed under back-pressure);
#   3. UDP to the own address: 100 datagrams echoed;
#   4. redis-server and redis-benchmark, both preloaded: no error;
#   5. nginx with proxy_pass to an upstream server block of its own on the
#      same address, under wrk from the Linux peer: no error;
#   6. kill -9 of either end: the other, blocked in recv, returns at once
#      with ECONNRESET or end of file (what Linux's loopback gives depends
#      on unread data: both are a peer's death);
#   7. 127.0.0.1 with DPSOCK_LOOPBACK=1: a listener there is dpsockd's and
#      the kernel's; socat through dpsockd (paired), through its kernel
#      half, and to a kernel-only listener; the calls as on Linux;
#      redis-server in protected mode under redis-benchmark;
#   8. dpsockd stops under a paired connection: both ends' recv returns
#      ECONNRESET, as any offloaded socket's;
# PRELOAD_KERNEL=1 runs the same on A's kernel (the self-check).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip socat redis-server redis-benchmark nginx wrk python3 sha256sum
require_preload
name=$TEST_NAME
test_topo_up 124
CUT=${DPSOCK_TEST_CUT:-1}
if [ "$CUT" = 0 ]; then
	preload_daemon_start "$name" 'preload = { cut_through = false; };'
else
	preload_daemon_start "$name"
fi
chmod 755 "$TEST_TMP" # nginx's workers (nobody) reach the control socket
A=$TOPO_ADDR_A
tx_frames() { in_a cat "/sys/class/net/$TOPO_IF_A/statistics/tx_packets"; }

# ---- 1. socat echo -----------------------------------------------------------------------
# -b 4096: socat's PIPE is read and written by the same process; with its
# default 8 KiB blocks, a write into a pipe with less room than that blocks
# the process that alone could drain it (on any stack: on the kernel's
# loopback it stalls within the first 64 MiB). PIPE_BUF-sized blocks are
# written whole once select says the pipe is writable.
preload_start echo socat -b 4096 -t 60 TCP-LISTEN:7200,bind="$A",reuseaddr,fork PIPE
wait_tcp_port "$TOPO_NS_B" "$A" 7200 15 || fail "socat does not listen: $(tail -n 3 "$TEST_TMP/echo.log")"
head -c $((1 << 20)) /dev/urandom >"$TEST_TMP/1m.bin"
head -c $((64 << 20)) /dev/urandom >"$TEST_TMP/64m.bin"
acc0=$(preload_stat tcp_accepted)
con0=$(preload_stat tcp_connected)
lp0=$(preload_stat loop_packets)
cp0=$(preload_stat cut_pairs)
cb0=$(preload_stat cut_bytes)
f0=$(tx_frames)
# round FILE: one connection echoes FILE back whole
round() {
	preload_run socat -b 4096 -t 60 -T 60 - "TCP:$A:7200" <"$1" >"$TEST_TMP/back.bin" 2>>"$TEST_TMP/socat-client.log" ||
		fail "the socat client failed: $(tail -n 3 "$TEST_TMP/socat-client.log")"
	cmp -s "$1" "$TEST_TMP/back.bin" ||
		fail "echo of $(basename "$1") came back as $(stat -c %s "$TEST_TMP/back.bin") different bytes"
}
for i in $(seq 20); do
	round "$TEST_TMP/1m.bin"
done
if [ "$PRELOAD_KERNEL" != 1 ]; then
	# while a connection is up, dpsock-stat names its peer as this host
	preload_start hold socat -b 4096 -T 20 "TCP:$A:7200" EXEC:'sleep 20'
	# (and, paired, says "cut" where a connection's RTT goes)
	pat='host:7200 *ESTABLISHED'
	[ "$CUT" = 0 ] || pat="$pat .* cut "
	wait_until 10 bash -c "grep -q '$pat' <<<\"\$(\"$DPSOCK_STAT\" -n $name -v sockets 2>/dev/null)\"" ||
		fail "dpsock-stat does not show the connection within the host: $("$DPSOCK_STAT" -n "$name" -v sockets 2>&1)"
	preload_stop hold || true
fi
round "$TEST_TMP/64m.bin"
acc1=$(preload_stat tcp_accepted)
con1=$(preload_stat tcp_connected)
lp1=$(preload_stat loop_packets)
cp1=$(preload_stat cut_pairs)
cb1=$(preload_stat cut_bytes)
f1=$(tx_frames)
if [ "$PRELOAD_KERNEL" != 1 ]; then
	[ $((acc1 - acc0)) -ge 21 ] && [ $((con1 - con0)) -ge 21 ] ||
		fail "dpsockd accepted $((acc1 - acc0)) and connected $((con1 - con0)) of the 21 connections"
	# ARP, IGMP and the like may go out meanwhile; 85 MiB of TCP would be
	# tens of thousands of frames
	[ $((f1 - f0)) -lt 100 ] || fail "A's veth sent $((f1 - f0)) frames during the echoes: they went to the wire"
	if [ "$CUT" = 0 ]; then
		# 2 x 84 MiB of data in segments of at most 64 KiB
		[ $((lp1 - lp0)) -ge 2688 ] || fail "dpsockd looped $((lp1 - lp0)) packets back for 2 x 84 MiB"
		[ $((cp1 - cp0)) -eq 0 ] || fail "cut_through off, yet $((cp1 - cp0)) connections were paired"
	else
		# every byte of every connection went FIFO to FIFO; only the
		# handshakes and ends looped through lwIP (about 8 packets each)
		[ $((cp1 - cp0)) -ge 21 ] || fail "dpsockd paired $((cp1 - cp0)) of the 21 connections"
		[ $((cb1 - cb0)) -ge $((2 * 84 << 20)) ] || fail "dpsockd cut through $((cb1 - cb0)) bytes of 2 x 84 MiB"
		[ $((lp1 - lp0)) -lt $((21 * 16)) ] || fail "dpsockd looped $((lp1 - lp0)) packets for 21 paired connections: data went through lwIP"
	fi
fi
ok "socat: 20 x 1 MiB and 64 MiB echoed whole ($((acc1 - acc0)) accepted, $((con1 - con0)) connected by dpsockd, $((cp1 - cp0)) paired, $((cb1 - cb0)) bytes cut through, $((lp1 - lp0)) packets looped back, $((f1 - f0)) frames on the wire)"
preload_stop echo || true

# the calls of both ends, against Linux's loopback (the same script in B,
# on B's own address)
calls="$DPSOCK_SRC/test/tools/samehost_calls.py"
in_b timeout 120 python3 "$calls" "$TOPO_ADDR_B" 7600 >"$TEST_TMP/calls-linux.log" 2>&1 ||
	fail "the calls on Linux's loopback failed: $(tail -n 5 "$TEST_TMP/calls-linux.log")"
cp0=$(preload_stat cut_pairs)
preload_run timeout 120 python3 "$calls" "$A" 7600 >"$TEST_TMP/calls-shim.log" 2>&1 ||
	fail "the calls under the shim failed: $(tail -n 5 "$TEST_TMP/calls-shim.log")"
diff -u "$TEST_TMP/calls-linux.log" "$TEST_TMP/calls-shim.log" >"$TEST_TMP/calls.diff" ||
	fail "the shim's answers differ from Linux's loopback: $(cat "$TEST_TMP/calls.diff")"
cp1=$(preload_stat cut_pairs)
if [ "$PRELOAD_KERNEL" != 1 ] && [ "$CUT" != 0 ]; then
	[ $((cp1 - cp0)) -ge 6 ] || fail "dpsockd paired $((cp1 - cp0)) of the calls' 6 connections"
fi
ok "the calls of both ends answer as on Linux's loopback ($(grep -c . "$TEST_TMP/calls-linux.log") lines; $((cp1 - cp0)) paired)"

# ---- 2. a slow reader ----------------------------------------------------------------------
# pair.py ADDR PORT server|client ACTION: one end of one connection (the
# server accepts it, the client makes it), then ACTION:
#   slow   server: read to the end, slowly for the first MiB (the writer
#          fills up and blocks), print "got BYTES SHA256"; client: send
#          8 MiB, shut down, wait for the close, print "sent BYTES SHA256"
#   hold   print "up" and sleep (the end to be killed)
#   wait   print "up", wait in recv, print "recv eof|data|ERRNO"
#   idle   as wait, but nothing is left unread on either side
# (hold, wait and idle: the client sends "hello", which the server reads;
# to a server that holds, a waiting client also sends bytes that stay
# unread)
cat >"$TEST_TMP/pair.py" <<'PY'
import errno, hashlib, socket, sys, time
addr, port, role, action = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
if role == "server":
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((addr, port))
    l.listen(1)
    print("listening", flush=True)
    c, _ = l.accept()
else:
    c = socket.create_connection((addr, port), timeout=30)
if action == "slow" and role == "server":
    h, n = hashlib.sha256(), 0
    while True:
        d = c.recv(16384)
        if not d:
            break
        h.update(d)
        n += len(d)
        if n < (1 << 20):
            time.sleep(0.002)
    print("got", n, h.hexdigest(), flush=True)
    sys.exit(0)
if action == "slow":
    data = bytes(range(256)) * (8 << 12)   # 8 MiB
    t0 = time.monotonic()
    c.sendall(data)
    c.shutdown(socket.SHUT_WR)
    c.recv(1)
    print("sent", len(data), hashlib.sha256(data).hexdigest(), "in %.2f s" % (time.monotonic() - t0), flush=True)
    sys.exit(0)
if role == "server":
    c.recv(5)
else:
    c.sendall(b"hello")
    if action == "wait":
        c.sendall(b"unread")   # the server, which holds, never reads it
print("up", flush=True)
if action == "hold":
    time.sleep(300)
t0 = time.monotonic()
c.settimeout(30)
try:
    d = c.recv(100)
    what = "eof" if d == b"" else "data"
except OSError as e:
    what = errno.errorcode.get(e.errno, str(e.errno))
print("recv", what, "after %.2f s" % (time.monotonic() - t0), flush=True)
PY
preload_start reader python3 "$TEST_TMP/pair.py" "$A" 7300 server slow
wait_until 10 grep -q listening "$TEST_TMP/reader.log"
preload_run python3 "$TEST_TMP/pair.py" "$A" 7300 client slow >"$TEST_TMP/writer.log" 2>&1 ||
	fail "the writer failed: $(tail -n 3 "$TEST_TMP/writer.log")"
preload_wait reader 30 || fail "the reader failed: $(tail -n 3 "$TEST_TMP/reader.log")"
sent=$(awk '/^sent/ { print $2, $3 }' "$TEST_TMP/writer.log")
got=$(awk '/^got/ { print $2, $3 }' "$TEST_TMP/reader.log")
[ -n "$sent" ] && [ "$sent" = "$got" ] || fail "the writer sent '$sent', the reader got '$got'"
ok "slow reader: 8 MiB through a blocked writer, in order ($(awk '/^sent/ { print $5, $6 }' "$TEST_TMP/writer.log"))"

# both directions at once: test/tools/bp.py's client sends 64 MiB from one
# thread and reads the echo from another, its server (epoll, bounded) echoes
# back, so both FIFO pairs fill and block together
BP=$DPSOCK_SRC/test/tools/bp.py
preload_start bp python3 "$BP" server epoll-et "$A" 7350
wait_until 15 grep -q '^listening' "$TEST_TMP/bp.log"
out=$(preload_run timeout 120 python3 "$BP" client threads "$A" 7350 $((64 << 20)) 1 2>&1) ||
	fail "both directions at once: $out; server: $(tail -n 3 "$TEST_TMP/bp.log")"
ok "both directions at once: 64 MiB echoed through a bounded server, byte for byte ($out)"
preload_stop bp || true

# ---- 3. UDP to the own address ---------------------------------------------------------------
cat >"$TEST_TMP/udp.py" <<'PY'
import socket, sys
addr, mode = sys.argv[1], sys.argv[2]
if mode == "echo":
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((addr, 7400))
    print("bound", flush=True)
    while True:
        d, a = u.recvfrom(65536)
        u.sendto(d, a)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5)
for i in range(100):
    u.sendto(b"dgram-%d" % i * 10, (addr, 7400))
    d, a = u.recvfrom(65536)
    assert d == b"dgram-%d" % i * 10 and a == (addr, 7400), (d[:20], a)
print("echoed 100", flush=True)
PY
preload_start udpecho python3 "$TEST_TMP/udp.py" "$A" echo
wait_until 10 grep -q bound "$TEST_TMP/udpecho.log"
preload_run python3 "$TEST_TMP/udp.py" "$A" client >"$TEST_TMP/udpclient.log" 2>&1 ||
	fail "UDP to the own address: $(tail -n 3 "$TEST_TMP/udpclient.log")"
ok "UDP: 100 datagrams to the own address echoed"
preload_stop udpecho || true

# ---- 4. redis -------------------------------------------------------------------------------
preload_start redis redis-server --bind "$A" --port 6390 --protected-mode no --save '' --appendonly no
wait_until 10 grep -q 'Ready to accept' "$TEST_TMP/redis.log"
preload_run redis-benchmark -h "$A" -p 6390 -n 20000 -c 16 -q -t set,get >"$TEST_TMP/bench.log" 2>&1 ||
	fail "redis-benchmark failed: $(tail -n 5 "$TEST_TMP/bench.log")"
grep -qi 'error' "$TEST_TMP/bench.log" && fail "redis-benchmark: $(grep -i error "$TEST_TMP/bench.log" | head -n 3)"
[ "$(grep -c 'requests per second' "$TEST_TMP/bench.log")" -eq 2 ] ||
	fail "redis-benchmark did not finish SET and GET: $(tr '\r' '\n' <"$TEST_TMP/bench.log" | tail -n 4)"
ok "redis-benchmark against redis-server on the same host: $(tr '\r' '\n' <"$TEST_TMP/bench.log" | grep 'requests per second' | tr '\n' ' ')"
preload_stop redis || true

# ---- 5. nginx proxy_pass to itself -------------------------------------------------------------
pfx=$TEST_TMP/nginx
nginx_preload "$pfx" 2 'upstream on the same host' <<EOF
access_log off;
server { listen $A:8082; root $pfx/www; }
server { listen $A:8081; location / { proxy_pass http://$A:8082; } }
EOF
wait_tcp_port "$TOPO_NS_B" "$A" 8081 15 || fail "nginx does not listen: $(tail -n 3 "$pfx/logs/error.log")"
body=$(in_b curl -s --max-time 5 "http://$A:8081/") || fail "curl through the proxy failed"
[ "$body" = "upstream on the same host" ] || fail "the proxy answered '$body'"
wrk_check proxy -t 1 -c 8 -d 2s "http://$A:8081/"
ok "nginx proxy_pass to an upstream on the same host: $WRK_REQS requests under wrk, no error"
preload_stop nginx QUIT || true

# ---- 6. kill -9 of either end --------------------------------------------------------------------
# killed VICTIM PORT: the server and the client connect, one holds, the other
# waits in recv; kill -9 of the one holding; the other's recv returns at once
# with ECONNRESET or end of file (what Linux's loopback gives depends on
# what was left unread: both are the peer's death)
killed() {
	local victim=$1 port=$2 waiter s_then c_then
	if [ "$victim" = srv ]; then
		waiter=cli s_then=hold c_then=wait
	else
		waiter=srv s_then=wait c_then=hold
	fi
	preload_start "srv$port" python3 "$TEST_TMP/pair.py" "$A" "$port" server "$s_then"
	wait_until 10 grep -q listening "$TEST_TMP/srv$port.log"
	preload_start "cli$port" python3 "$TEST_TMP/pair.py" "$A" "$port" client "$c_then"
	wait_until 10 grep -q up "$TEST_TMP/srv$port.log"
	wait_until 10 grep -q up "$TEST_TMP/cli$port.log"
	sleep 0.5
	kill -KILL "${_LIB_PRELOAD_PID[$victim$port]}"
	preload_wait "$waiter$port" 10 || fail "the $waiter end failed: $(tail -n 3 "$TEST_TMP/$waiter$port.log")"
	grep -Eq '^recv (ECONNRESET|eof) ' "$TEST_TMP/$waiter$port.log" ||
		fail "after kill -9 of the $victim end, the other saw: $(grep '^recv' "$TEST_TMP/$waiter$port.log")"
	KILLED_SAW=$(grep '^recv' "$TEST_TMP/$waiter$port.log" | cut -d' ' -f2-)
}
killed srv 7500
saw_srv=$KILLED_SAW
killed cli 7501
ok "kill -9 of the server: the client's recv returned $saw_srv; of the client: the server's returned $KILLED_SAW"

# ---- 7. 127.0.0.1 with DPSOCK_LOOPBACK=1 -----------------------------------------------------
# A listener on 127.0.0.1 listens in dpsockd and in the kernel; a preloaded
# client with the option connects through dpsockd (paired), every other
# client (the kernel's, a preloaded one without the option) through the
# kernel half; to a port only the kernel listens on, the option's connect
# goes on in the kernel.
if [ "$PRELOAD_KERNEL" != 1 ]; then
	LB=(env DPSOCK_LOOPBACK=1)
	preload_start lecho "${LB[@]}" socat -b 4096 -t 60 TCP-LISTEN:7700,bind=127.0.0.1,reuseaddr,fork PIPE
	wait_until 10 bash -c "grep -q '127.0.0.1:7700 .*LISTEN' <<<\"\$(\"$DPSOCK_STAT\" -n $name -v sockets 2>/dev/null)\"" ||
		fail "the listener on 127.0.0.1 is not dpsockd's: $(tail -n 3 "$TEST_TMP/lecho.log")"
	in_a socat -b 4096 -t 60 TCP-LISTEN:7701,bind=127.0.0.1,reuseaddr PIPE >"$TEST_TMP/kecho.log" 2>&1 &
	kecho=$!
	on_exit "kill $kecho 2>/dev/null; true"
	wait_until 10 in_a bash -c "ss -Hltn 'sport = :7701' | grep -q ."
	# lround LABEL PORT CMD...: one 1 MiB echo through 127.0.0.1:PORT
	lround() {
		local label=$1 port=$2
		shift 2
		"$@" socat -b 4096 -t 60 -T 60 - "TCP:127.0.0.1:$port" <"$TEST_TMP/1m.bin" \
			>"$TEST_TMP/lback.bin" 2>>"$TEST_TMP/lclient.log" ||
			fail "$label: the client failed: $(tail -n 3 "$TEST_TMP/lclient.log")"
		cmp -s "$TEST_TMP/1m.bin" "$TEST_TMP/lback.bin" ||
			fail "$label: the echo came back as $(stat -c %s "$TEST_TMP/lback.bin") different bytes"
	}
	# lcount LABEL WANT_PAIRS WANT_CONNECTS CMD...: the echo, and what dpsockd did for it
	lcount() {
		local label=$1 wp=$2 wc=$3 p0 c0 p1 c1
		shift 3
		p0=$(preload_stat cut_pairs)
		c0=$(preload_stat tcp_connected)
		lround "$label" "$@"
		p1=$(preload_stat cut_pairs)
		c1=$(preload_stat tcp_connected)
		[ $((p1 - p0)) -eq "$wp" ] && [ $((c1 - c0)) -eq "$wc" ] ||
			fail "$label: dpsockd paired $((p1 - p0)) and connected $((c1 - c0)) (expected $wp and $wc)"
	}
	lcount "preloaded with DPSOCK_LOOPBACK=1" $((CUT != 0)) 1 7700 preload_run "${LB[@]}"
	lcount "the kernel's client" 0 0 7700 in_a
	lcount "preloaded without the option" 0 0 7700 preload_run
	lcount "to a kernel listener, with the option" 0 0 7701 preload_run "${LB[@]}"
	ok "127.0.0.1 with DPSOCK_LOOPBACK=1: 1 MiB echoed through dpsockd (paired) for a client with the option, through the kernel half for the kernel's and a preloaded client without it, and through the kernel to a kernel listener"
	# a listener on 0.0.0.0 of a program without the option: dpsockd's
	# for its addresses (from B), the kernel's for 127.0.0.1, dpsockd's
	# for a client with the option
	preload_start wecho socat -b 4096 -t 60 TCP-LISTEN:7702,reuseaddr,fork PIPE
	wait_tcp_port "$TOPO_NS_B" "$A" 7702 15 || fail "socat on 0.0.0.0 does not listen: $(tail -n 3 "$TEST_TMP/wecho.log")"
	a0=$(preload_stat tcp_accepted)
	in_b socat -b 4096 -t 60 -T 60 - "TCP:$A:7702" <"$TEST_TMP/1m.bin" >"$TEST_TMP/lback.bin" ||
		fail "from B to the listener on 0.0.0.0: the client failed"
	cmp -s "$TEST_TMP/1m.bin" "$TEST_TMP/lback.bin" || fail "from B to the listener on 0.0.0.0: the echo differs"
	[ $(($(preload_stat tcp_accepted) - a0)) -eq 1 ] || fail "dpsockd did not accept B's connection to the listener on 0.0.0.0"
	lcount "the kernel's client, to 127.0.0.1 of a listener on 0.0.0.0" 0 0 7702 in_a
	lcount "preloaded with the option, to 127.0.0.1 of a listener on 0.0.0.0" $((CUT != 0)) 1 7702 preload_run "${LB[@]}"
	ok "a preloaded listener on 0.0.0.0: B's connection accepted by dpsockd, the kernel's 127.0.0.1 client served by its kernel half, a client with DPSOCK_LOOPBACK=1 paired"
	preload_stop wecho || true
	# the same calls as on Linux's loopback
	cp0=$(preload_stat cut_pairs)
	preload_run "${LB[@]}" timeout 120 python3 "$calls" 127.0.0.1 7800 >"$TEST_TMP/calls-lo.log" 2>&1 ||
		fail "the calls on 127.0.0.1 under the shim failed: $(tail -n 5 "$TEST_TMP/calls-lo.log")"
	diff -u "$TEST_TMP/calls-linux.log" "$TEST_TMP/calls-lo.log" >"$TEST_TMP/calls-lo.diff" ||
		fail "on 127.0.0.1, the shim's answers differ from Linux's loopback: $(cat "$TEST_TMP/calls-lo.diff")"
	cp1=$(preload_stat cut_pairs)
	[ "$CUT" = 0 ] || [ $((cp1 - cp0)) -ge 6 ] ||
		fail "dpsockd paired $((cp1 - cp0)) of the calls' 6 connections on 127.0.0.1"
	ok "127.0.0.1: the calls of both ends answer as on Linux's loopback ($((cp1 - cp0)) paired)"
	# redis in protected mode takes clients from 127.0.0.1 only: dpsockd's
	# connections must come from there
	preload_start lredis "${LB[@]}" redis-server --bind 127.0.0.1 --port 6391 --save '' --appendonly no
	wait_until 10 grep -q 'Ready to accept' "$TEST_TMP/lredis.log"
	cp0=$(preload_stat cut_pairs)
	preload_run "${LB[@]}" redis-benchmark -h 127.0.0.1 -p 6391 -n 20000 -c 16 -q -t set,get \
		>"$TEST_TMP/lbench.log" 2>&1 || fail "redis-benchmark on 127.0.0.1 failed: $(tail -n 5 "$TEST_TMP/lbench.log")"
	grep -qi 'error\|DENIED' "$TEST_TMP/lbench.log" &&
		fail "redis-benchmark on 127.0.0.1: $(grep -i 'error\|DENIED' "$TEST_TMP/lbench.log" | head -n 3)"
	[ "$(grep -c 'requests per second' "$TEST_TMP/lbench.log")" -eq 2 ] ||
		fail "redis-benchmark on 127.0.0.1 did not finish: $(tr '\r' '\n' <"$TEST_TMP/lbench.log" | tail -n 4)"
	cp1=$(preload_stat cut_pairs)
	[ "$CUT" = 0 ] || [ $((cp1 - cp0)) -ge 16 ] ||
		fail "dpsockd paired $((cp1 - cp0)) of redis-benchmark's connections on 127.0.0.1"
	ok "redis-server (protected mode) and redis-benchmark on 127.0.0.1 with DPSOCK_LOOPBACK=1: $((cp1 - cp0)) connections paired, $(tr '\r' '\n' <"$TEST_TMP/lbench.log" | grep 'requests per second' | tr '\n' ' ')"
	preload_stop lredis || true
	preload_stop lecho || true
fi

# ---- 8. dpsockd stops under a paired connection --------------------------------------------------
# both ends wait in recv; each gets what any offloaded socket gets when
# dpsockd goes away (docs/preload.md; preload_daemon_gone: ECONNRESET)
if [ "$PRELOAD_KERNEL" != 1 ]; then
	preload_start srv7900 python3 "$TEST_TMP/pair.py" "$A" 7900 server idle
	wait_until 10 grep -q listening "$TEST_TMP/srv7900.log"
	preload_start cli7900 python3 "$TEST_TMP/pair.py" "$A" 7900 client idle
	wait_until 10 grep -q up "$TEST_TMP/srv7900.log"
	wait_until 10 grep -q up "$TEST_TMP/cli7900.log"
	sleep 0.5
	preload_daemon_stop
	for e in srv cli; do
		preload_wait "${e}7900" 10 || fail "the $e end failed after dpsockd stopped: $(tail -n 3 "$TEST_TMP/${e}7900.log")"
		grep -Eq '^recv ECONNRESET ' "$TEST_TMP/${e}7900.log" ||
			fail "after dpsockd stopped, the $e end saw: $(grep '^recv' "$TEST_TMP/${e}7900.log")"
	done
	ok "dpsockd stopped under a connection within the host: both ends' recv returned ECONNRESET, as any offloaded socket's"
else
	preload_daemon_stop
fi
