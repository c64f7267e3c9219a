#!/usr/bin/env bash
# UDP socket options feed handlers use, under the preload against Linux
# peers (A's kernel has no address):
#   1. SO_REUSEPORT: two preloaded processes bound to one port; 32 Linux
#      senders (32 flows) send 20 datagrams each: every datagram reaches
#      exactly one socket, every flow always the same one (a hash of the
#      source), both sockets get flows (udp_reuseport_picks);
#   2. SO_RCVBUF: a socket asking 4096 bytes (the kernel reports 8192) that
#      reads only after 1000 datagrams arrived keeps about 8 KiB of them and
#      drops the rest, counted (pl_rx_dropped, the socket's rx_drops), and
#      so does one asking SO_RCVBUFFORCE 4096; the same without SO_RCVBUF
#      keeps all 1000 (its FIFO is 128 KiB);
#   3. IP_TTL and IP_TOS: a preloaded UDP sender and a preloaded TCP client
#      (socat, ttl= and tos=) put them on the wire (tcpdump in B);
#   4. the largest datagram (65507 bytes) from a preloaded sender reaches a
#      Linux receiver whole (and dpsockd, which copies a whole datagram
#      record out of the tx FIFO, stops cleanly after it);
#   5. SO_SNDBUF: with dpsockd stopped (SIGSTOP), so that nothing drains
#      the tx FIFOs, a non-blocking sender asking SO_SNDBUF 4096 (the kernel
#      reports 8192) queues 7 datagrams of 1000 bytes (40-byte record header
#      each: 7 x 1040 <= 8192) and then gets EAGAIN; one without SO_SNDBUF
#      queues all 300 it sends (its FIFO holds 1 MiB); after SIGCONT every
#      queued datagram reaches the Linux receiver.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip tcpdump socat
require_preload
require_tools mctool dpsock-stat
name=$TEST_NAME
test_topo_up 100
P=5300
preload_daemon_start "$name"

# 1. SO_REUSEPORT
preload_start rp1 "$MCTOOL" sub -g "$TOPO_ADDR_A" -p "$P" -N -R -t 3
preload_start rp2 "$MCTOOL" sub -g "$TOPO_ADDR_A" -p "$P" -N -R -t 3
wait_until 10 grep -q READY "$TEST_TMP/rp1.log"
wait_until 10 grep -q READY "$TEST_TMP/rp2.log"
for i in $(seq 1 32); do
	in_b "$MCTOOL" pub -g "$TOPO_ADDR_A" -p "$P" -n 20 -r 2000 -S "$i" >/dev/null
done
preload_wait rp1 30 || fail "rp1 failed"
preload_wait rp2 30 || fail "rp2 failed"
r1=$(mcast_result rp1 received)
r2=$(mcast_result rp2 received)
[ $((r1 + r2)) = 640 ] || fail "SO_REUSEPORT: $r1 + $r2 datagrams, want 640 (each once)"
[ "$r1" -gt 0 ] && [ "$r2" -gt 0 ] || fail "SO_REUSEPORT: one socket got every flow ($r1, $r2)"
split=$(cat "$TEST_TMP/rp1.log" "$TEST_TMP/rp2.log" | sed -n 's/^SOURCE .* id=\([0-9]*\) datagrams=20$/\1/p' |
	sort | uniq -d | wc -l)
flows=$(cat "$TEST_TMP/rp1.log" "$TEST_TMP/rp2.log" | grep -c '^SOURCE .* datagrams=20$' || true)
[ "$split" = 0 ] && [ "$flows" = 32 ] ||
	fail "SO_REUSEPORT: $flows whole flows, $split seen by both sockets (want 32 and 0)"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	preload_offload_ge "$name" udp_reuseport_picks 640 5
fi
ok "SO_REUSEPORT: 640 datagrams, each once; 32 flows, each to one socket ($r1 / $r2)"

# 2. SO_RCVBUF
d0=$(preload_stat pl_rx_dropped)
preload_start small "$MCTOOL" sub -g "$TOPO_ADDR_A" -p $((P + 1)) -N -B 4096 -D 2000 -t 1
preload_start big "$MCTOOL" sub -g "$TOPO_ADDR_A" -p $((P + 2)) -N -D 2000 -t 1
preload_start force "$MCTOOL" sub -g "$TOPO_ADDR_A" -p $((P + 6)) -N -K 4096 -D 2000 -t 1
wait_until 10 grep -q READY "$TEST_TMP/small.log"
wait_until 10 grep -q READY "$TEST_TMP/big.log"
wait_until 10 grep -q READY "$TEST_TMP/force.log"
in_b "$MCTOOL" pub -g "$TOPO_ADDR_A" -p $((P + 1)) -n 1000 -r 20000 >/dev/null
in_b "$MCTOOL" pub -g "$TOPO_ADDR_A" -p $((P + 2)) -n 1000 -r 20000 >/dev/null
in_b "$MCTOOL" pub -g "$TOPO_ADDR_A" -p $((P + 6)) -n 1000 -r 20000 >/dev/null
preload_wait small 30 || fail "small failed"
preload_wait big 30 || fail "big failed"
preload_wait force 30 || fail "force failed"
small=$(mcast_result small received)
big=$(mcast_result big received)
force=$(mcast_result force received)
[ "$small" -gt 0 ] && [ "$small" -le 100 ] && [ "$big" -gt "$small" ] ||
	fail "SO_RCVBUF 4096: $small of 1000 kept (want 1..100), without: $big"
# SO_RCVBUFFORCE sizes the same buffer (past rmem_max; 4096 is below it)
[ "$force" -gt 0 ] && [ "$force" -le 100 ] || fail "SO_RCVBUFFORCE 4096: $force of 1000 kept (want 1..100)"
# dpsock's default rx FIFO (128 KiB of 104-byte records) holds all of them;
# Linux's default buffer fewer (each datagram costs it a whole skb)
# (on failure: frames the port missed, the ring before dpsockd, tell a
# worker descheduled on a loaded machine from the FIFO dropping them)
[ "$PRELOAD_KERNEL" = 1 ] || [ "$big" = 1000 ] ||
	fail "without SO_RCVBUF: $big of 1000 kept (port rx_missed $(stat_get "$name" port.0.rx_missed), pl_rx_dropped $(($(preload_stat pl_rx_dropped) - d0)))"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	preload_offload_ge "$name" pl_rx_dropped $((d0 + 2000 - small - force)) 5
fi
ok "SO_RCVBUF 4096: $small of 1000 kept while the reader slept, the rest dropped and counted (SO_RCVBUFFORCE 4096: $force); without it $big"

# 3. IP_TTL, IP_TOS on the wire
cap=$TEST_TMP/ttl.pcap
in_b tcpdump -i "$TOPO_IF_B" -nn -U -w "$cap" "src host $TOPO_ADDR_A and (udp port $((P + 3)) or tcp port $((P + 4)))" \
	>/dev/null 2>&1 &
tcpdump_pid=$!
on_exit "kill $tcpdump_pid 2>/dev/null; true"
wait_until 5 test -s "$cap"
peer_start sink socat -u "TCP-LISTEN:$((P + 4)),bind=$TOPO_ADDR_B,reuseaddr,fork" OPEN:/dev/null
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" $((P + 4))
preload_run "$MCTOOL" pub -g "$TOPO_ADDR_B" -p $((P + 3)) -n 5 -u 7 -Q 0xb8 >/dev/null ||
	fail "preloaded UDP sender failed"
echo hello | preload_run socat -u - "TCP:$TOPO_ADDR_B:$((P + 4)),tos=0x28,ttl=9" ||
	fail "preloaded socat with tos/ttl failed"
seen() { tcpdump -nn -v -r "$cap" "$1" 2>/dev/null | grep -c -- "$2" || true; }
seen_ge() { [ "$(seen "$1" "$2")" -ge "$3" ]; }
poll_until 5 seen_ge udp 'tos 0xb8, ttl 7,' 5 ||
	fail "UDP with IP_TTL 7 / IP_TOS 0xb8 not on the wire: $(tcpdump -nn -v -r "$cap" udp 2>/dev/null | head -4)"
poll_until 5 seen_ge tcp 'tos 0x28, ttl 9,' 1 ||
	fail "TCP with IP_TTL 9 / IP_TOS 0x28 not on the wire: $(tcpdump -nn -v -r "$cap" tcp 2>/dev/null | head -4)"
ok "IP_TTL and IP_TOS on the wire: UDP ttl 7 tos 0xb8, TCP ttl 9 tos 0x28"

# 4. 65507 bytes
peer_start big65k "$MCTOOL" sub -g "$TOPO_ADDR_B" -b "$TOPO_ADDR_B" -p $((P + 5)) -N -K 4194304 -n 3 -t 5
wait_until 10 grep -q READY "$TEST_TMP/big65k.log"
preload_run "$MCTOOL" pub -g "$TOPO_ADDR_B" -p $((P + 5)) -n 3 -r 100 -l 65507 >/dev/null ||
	fail "preloaded sender of 65507-byte datagrams failed"
preload_wait big65k 20 || fail "the Linux receiver of 65507-byte datagrams failed"
[ "$(mcast_result big65k received)" = 3 ] && [ "$(mcast_result big65k bytes)" = $((3 * 65507)) ] ||
	fail "65507-byte datagrams: $(grep RESULT "$TEST_TMP/big65k.log")"
ok "three 65507-byte datagrams from a preloaded sender reached Linux whole"
# 5. SO_SNDBUF
cat >"$TEST_TMP/sndbuf.py" <<'PY'
import os, socket, sys, time
dst, port, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = []
for buf in (4096, None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if buf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buf)
    s.connect((dst, port))
    s.setblocking(False)
    socks.append(s)
print("READY sndbuf=%d" % socks[0].getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), flush=True)
while not os.path.exists(go + "1"):
    time.sleep(0.01)
counts = []
for s in socks:
    n = 0
    while n < 300:
        try:
            s.send(b"x" * 1000)
        except BlockingIOError:
            break
        n += 1
    counts.append(n)
print("QUEUED %d %d" % tuple(counts), flush=True)
while not os.path.exists(go + "2"):
    time.sleep(0.01)
for s in socks:
    s.close()
PY
cat >"$TEST_TMP/count.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE: the burst fits
s.bind(("0.0.0.0", int(sys.argv[1])))
print("READY", flush=True)
n = 0
s.settimeout(30)
try:
    while True:
        s.recv(2048)
        n += 1
        s.settimeout(2)
except socket.timeout:
    pass
print("RECEIVED %d" % n, flush=True)
PY
peer_start count python3 "$TEST_TMP/count.py" $((P + 7))
wait_until 10 grep -q READY "$TEST_TMP/count.log"
preload_start sndbuf python3 "$TEST_TMP/sndbuf.py" "$TOPO_ADDR_B" $((P + 7)) "$TEST_TMP/go"
wait_until 10 grep -q READY "$TEST_TMP/sndbuf.log"
grep -q 'READY sndbuf=8192' "$TEST_TMP/sndbuf.log" || fail "SO_SNDBUF 4096 reads back as: $(grep READY "$TEST_TMP/sndbuf.log")"
kill -STOP "$DPSOCKD_PID"
touch "$TEST_TMP/go1"
poll_until 10 grep -q QUEUED "$TEST_TMP/sndbuf.log" || { kill -CONT "$DPSOCKD_PID"; fail "the sender did not finish: $(tail -n 3 "$TEST_TMP/sndbuf.log")"; }
kill -CONT "$DPSOCKD_PID"
read -r _ small big < <(grep QUEUED "$TEST_TMP/sndbuf.log")
touch "$TEST_TMP/go2"
preload_wait sndbuf 30 || fail "the SO_SNDBUF sender failed: $(tail -n 3 "$TEST_TMP/sndbuf.log")"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	[ "$small" = 7 ] || fail "SO_SNDBUF 4096 (8192): $small datagrams of 1000 B queued before EAGAIN, want 7"
	[ "$big" = 300 ] || fail "without SO_SNDBUF: EAGAIN after $big datagrams of 1000 B, want none in 300 (preload.tx_fifo_kb: 1 MiB)"
fi
preload_wait count 40 || fail "the Linux receiver failed: $(tail -n 3 "$TEST_TMP/count.log")"
got=$(sed -n 's/^RECEIVED //p' "$TEST_TMP/count.log")
[ "$got" = $((small + big)) ] || fail "the Linux receiver got $got datagrams of the $small + $big queued"
ok "SO_SNDBUF 4096 (8192): $small datagrams queued with dpsockd stopped, then EAGAIN; without: $big; all $got reached Linux after SIGCONT"

preload_daemon_stop
pass "SO_REUSEPORT, SO_RCVBUF, SO_SNDBUF, IP_TTL, IP_TOS and the largest datagram as the kernel has them"
