#!/usr/bin/env bash
# IPv6 on the stack: dpsockd with address6 on the test port (lib.sh:
# net_af_xdp, else net_af_packet; ipv6_af_packet: always af_packet), two
# workers on two queues, the Linux stack in namespace B as the peer with
# fd00:198:18:IDX::2/64.
#
# Shows: ping6 answered with none lost, B's neighbour entry for dpsockd's
# IPv6 address carries the port's MAC (NDP), pings from many sources spread
# over both workers; dpsock-echo's listener (dpsock_tcp_listen: both
# families) takes TCP over IPv6 and IPv4 at once: 8 MiB each way over IPv6
# byte for byte (received segments merged by GRO; on af_packet, sent ones
# joined by lwIP and cut by the netif, tcp.segmentation = gso), IPv4 beside it; UDP over IPv6 (datagrams of 64 and 8000
# bytes, fragmented both ways) echoed; dpsock-stat lists the IPv6 connection
# with its addresses; each kind of malformed IPv6 frame is counted under its
# own drop counter and the stack keeps answering; SIGTERM stops it with
# every mbuf back. dpsock-echo --join ff0e::7:7 answers requests to that
# group to the group. dpsock-loadgen's active opens over IPv6 reach B on
# the link, and an address of B's outside the /64 through gateway6.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 sha256sum
require_tools dpsock-echo dpsock-stat badframes
name=$TEST_NAME
test_topo_up 46
test_topo_ipv6
TEST_IFACE_KEYS="address6 = \"$TOPO_ADDR6_A/64\";"
# tcp.segmentation = gso: where the port takes mbuf chains (af_packet, not
# AF_XDP), lwIP's IPv6 super-segments are cut by the netif (step 4)
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];' 'tcp = { segmentation = "gso"; };')
# shellcheck disable=SC2046
app_start "$name" "$conf" dpsock-echo $(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name") -- --raw -p 7 \
	--join ff0e::7:7

# 1. ping6: every echo request answered (the first one waits for NDP).
out=$(in_b "$PINGN" -c 200 -i 0.005 "$TOPO_ADDR6_A") || fail "ping6 lost: $out"
ok "ping6 $TOPO_ADDR6_A: $out"

# 2. NDP: B's neighbour entry for the address carries the port's MAC.
neigh=$(ip -n "$TOPO_NS_B" -6 neigh show "$TOPO_ADDR6_A" dev "$TOPO_IF_B")
grep -qi "lladdr $TOPO_MAC_A " <<<"$neigh" || fail "neighbour entry '$neigh' does not carry $TOPO_MAC_A"
grep -qE 'REACHABLE|STALE|DELAY|PROBE' <<<"$neigh" || fail "neighbour entry not valid: $neigh"
ok "neighbour entry: $neigh"
# the link-local address (from the MAC) answers too
ll=$(python3 -c 'import sys
m = [int(x, 16) for x in sys.argv[1].split(":")]
m[0] ^= 2
print("fe80::%02x%02x:%02xff:fe%02x:%02x%02x" % tuple(m))' "$TOPO_MAC_A")
out=$(in_b "$PINGN" -c 10 -i 0.01 "$ll%$TOPO_IF_B") || fail "ping6 $ll lost: $out"
ok "link-local $ll answers"

# 3. Many sources: every echo request counted once, both workers answer.
before=$(stat_sum "$name" icmp6_echo)
for i in $(seq 10 25); do
	ip -n "$TOPO_NS_B" addr add "fd00:198:18:$TOPO_IDX::$i/64" dev "$TOPO_IF_B" nodad
done
sent=0
for i in $(seq 10 25); do
	out=$(in_b "$PINGN" -c 10 -i 0.002 -I "fd00:198:18:$TOPO_IDX::$i" "$TOPO_ADDR6_A") ||
		fail "ping6 from ::$i lost: $out"
	sent=$((sent + 10))
done
wait_counter_ge "$name" icmp6_echo $((before + sent)) 5
after=$(stat_sum "$name" icmp6_echo)
[ $((after - before)) -eq $sent ] || fail "icmp6_echo rose by $((after - before)), sent $sent"
w0=$(stat_get "$name" worker.0.icmp6_echo)
w1=$(stat_get "$name" worker.1.icmp6_echo)
[ "$w0" -gt 0 ] && [ "$w1" -gt 0 ] || fail "ping6 not spread over both workers: $w0 / $w1"
ok "$sent pings from 16 sources; worker 0 saw $w0, worker 1 saw $w1 echo requests in all"

# 4. TCP over IPv6, both ways, byte for byte; IPv4 on the same listener.
head -c $((8 << 20)) /dev/urandom >"$TEST_TMP/up"
want=$(sha256sum <"$TEST_TMP/up" | cut -d' ' -f1)
gro0=$(stat_sum "$name" rx_gro_merged)
gso0=$(stat_sum "$name" tx_gso_frames)
# one connection: send 8 MiB and read the echo back at once
in_b timeout 60 python3 - "$TOPO_ADDR6_A" "$TEST_TMP/up" "$TEST_TMP/down" <<'EOP' || fail "IPv6 echo transfer failed"
import socket, sys, threading
host, up, down = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(up, "rb").read()
s = socket.create_connection((host, 7), timeout=30)
assert s.family == socket.AF_INET6
def send():
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
t = threading.Thread(target=send)
t.start()
out = bytearray()
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    out += b
t.join()
open(down, "wb").write(out)
EOP
echoed=$(sha256sum <"$TEST_TMP/down" | cut -d' ' -f1)
[ "$echoed" = "$want" ] || fail "IPv6: 8 MiB sent, $(stat -c %s "$TEST_TMP/down") bytes echoed, sha256 differs"
# the echo went through receive coalescing (tcp.gro, on by default): IPv6
# segments of a burst were merged before lwIP
gro1=$(stat_sum "$name" rx_gro_merged)
[ "$gro1" -gt "$gro0" ] || fail "IPv6: no received segment was merged (rx_gro_merged $gro0 -> $gro1)"
gso=""
if grep -q 'TCP segmentation by the netif (software GSO)' "$APP_LOG"; then
	gso1=$(stat_sum "$name" tx_gso_frames)
	[ "$gso1" -gt "$gso0" ] || fail "IPv6: the netif cut no super-segment (tx_gso_frames $gso0 -> $gso1)"
	gso="; $((gso1 - gso0)) super-segments cut into $(stat_sum "$name" tx_gso_segs) frames by the netif"
fi
ok "TCP over IPv6: 8 MiB each way echoed byte for byte; $((gro1 - gro0)) segments merged on receive$gso"
out=$(in_b timeout 20 python3 -c 'import socket, sys
s = socket.create_connection((sys.argv[1], 7), timeout=10)
s.sendall(b"four"); print(s.recv(16).decode())' "$TOPO_ADDR_A") || fail "IPv4 beside IPv6: $out"
[ "$out" = four ] || fail "IPv4 echo: '$out'"
ok "IPv4 on the same listener: echoed"

# 4b. UDP over IPv6 on dpsock-echo's socket (dpsock_udp_bind: both
# families): 200 datagrams of 64 bytes and 50 of 8000 (fragmented both
# ways: Linux's request, lwIP's echo), each echoed whole; IPv4 beside it.
out=$(in_b timeout 60 python3 - "$TOPO_ADDR6_A" "$TOPO_ADDR_A" <<'EOP'
import os, socket, sys
def run(fam, host, size, n):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(3)
    got = 0
    for i in range(n):
        msg = i.to_bytes(4, "big") + os.urandom(size - 4)
        s.sendto(msg, (host, 7))
        while True:
            try:
                b, a = s.recvfrom(65536)
            except socket.timeout:
                break
            if b[:4] == msg[:4]:
                got += b == msg
                break
    return got
r = [run(socket.AF_INET6, sys.argv[1], 64, 200), run(socket.AF_INET6, sys.argv[1], 8000, 50),
     run(socket.AF_INET, sys.argv[2], 64, 50)]
print(" ".join(map(str, r)))
EOP
) || fail "UDP over IPv6: $out"
[ "$out" = "200 50 50" ] || fail "UDP echoes (IPv6 64 B of 200, IPv6 8000 B of 50, IPv4 of 50): $out"
ok "UDP over IPv6: 200 datagrams of 64 B and 50 of 8000 B (fragments both ways) echoed whole; IPv4 beside it"

# 4c. The native app's IPv6 group (dpsock-echo --join ff0e::7:7): B's
# socket, joined too, sends to the group and gets each echo from the group
# (dpsock-echo answers a group's request to the group, at the sender's port).
ifb=$(in_b cat "/sys/class/net/$TOPO_IF_B/ifindex")
out=$(in_b timeout 30 python3 - "$ifb" <<'EOP'
import socket, struct, sys
ifi = int(sys.argv[1])
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::", 7007))
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP,
             socket.inet_pton(socket.AF_INET6, "ff0e::7:7") + struct.pack("@I", ifi))
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, ifi)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 0)
s.settimeout(2)
got = 0
for i in range(50):
    msg = b"group-%d" % i
    s.sendto(msg, ("ff0e::7:7", 7))
    try:
        b, a = s.recvfrom(2048)
        got += b == msg
    except socket.timeout:
        pass
print(got)
EOP
) || fail "the IPv6 group echo failed: $out"
[ "$out" = 50 ] || fail "dpsock-echo --join ff0e::7:7 answered $out of 50 requests to the group"
ok "dpsock-echo --join ff0e::7:7 (an IPv6 group of the native API): 50 of 50 requests to the group answered to the group"

# 5. dpsock-stat lists an IPv6 connection with its addresses.
in_b python3 -c 'import socket, sys, time
s = socket.create_connection((sys.argv[1], 7), timeout=10)
s.sendall(b"x"); s.recv(1); time.sleep(3)' "$TOPO_ADDR6_A" &
held=$!
v6conn() {
	# (B's source: any of its addresses of the prefix, step 3 added some)
	grep -m1 "\[$TOPO_ADDR6_A\]:7 .*\[fd00:198:18:$TOPO_IDX::[0-9a-f]*\]:[0-9]* .*ESTABLISHED" \
		<<<"$("$DPSOCK_STAT" -n "$name" -v sockets 2>&1)"
}
poll_until 5 v6conn || fail "dpsock-stat -v sockets shows no IPv6 connection: $("$DPSOCK_STAT" -n "$name" -v sockets 2>&1)"
line=$POLL_OUTPUT
wait "$held" || true
ok "dpsock-stat -v sockets: $line"

# 6. Malformed IPv6 frames: each counted under its name and dropped.
n=5
while read -r case counter _; do
	[ "$counter" != - ] || continue
	before=$(stat_sum "$name" "$counter")
	badframes_send "$n" -6 "$TOPO_ADDR6_B" -D "$TOPO_ADDR6_A" "$case" >/dev/null
	wait_counter_ge "$name" "$counter" $((before + n)) 5
	after=$(stat_sum "$name" "$counter")
	[ $((after - before)) -eq "$n" ] ||
		fail "$case: $counter rose by $((after - before)), expected $n"
	ok "$case: $n frames counted in $counter"
done < <("$BADFRAMES" --list-ip6)
out=$(in_b "$PINGN" -c 20 -i 0.01 "$TOPO_ADDR6_A") || fail "ping6 lost after malformed frames: $out"
ok "still answering after malformed frames"

# 7. SIGTERM: clean stop, every mbuf back.
app_stop "$name"
ok "dpsock-echo stopped cleanly, every mbuf back"

# 8. Active opens over IPv6 (dpsock_tcp_connect6): dpsock-loadgen, two
# workers, 8 connections to a Linux echo server in B, every reply byte
# checked; the replies of a connection that lands on the other worker's
# queue are handed over by the software redirect.
ready=$TEST_TMP/echo6.ready
in_b python3 -c 'import socket, socketserver, sys
class H(socketserver.BaseRequestHandler):
    def handle(self):
        try:
            while True:
                b = self.request.recv(65536)
                if not b:
                    return
                self.request.sendall(b)
        except OSError:
            return  # the client reset it (dpsock-loadgen aborts at the end)
class S(socketserver.ThreadingTCPServer):
    address_family = socket.AF_INET6
    allow_reuse_address = True
    daemon_threads = True
srv = S(("::", 7000), H)
open(sys.argv[1], "w").close()
srv.serve_forever()' "$ready" &
echo_pid=$!
on_exit "kill $echo_pid 2>/dev/null || true"
# (B cannot probe its own IPv6 address: its lo has IPv6 off, topo.sh)
poll_until 10 test -e "$ready" || fail "Linux echo server on [::]:7000 did not start"
kv() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" <<<"$2"; }
# loadgen DEST CONNS: dpsock-loadgen (the configuration of TEST_IFACE_KEYS)
# to DEST:7000, every reply verified; sets tot to its total line
loadgen() {
	local conf rc=0 lg_log lg_pid
	conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
	# shellcheck disable=SC2046
	app_start "$name" "$conf" dpsock-loadgen $(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name") -- \
		-d "$1" -p 7000 -m rr -c "$2" -s 256 -t 3 --verify
	lg_log=$APP_LOG lg_pid=$APP_PID
	wait_until 60 _lib_dead "$lg_pid"
	app_stop || rc=$?
	[ "$rc" -eq 0 ] || { tail -n 20 "$lg_log" >&2; fail "dpsock-loadgen to [$1] exited with status $rc"; }
	tot=$(grep '^loadgen: total' "$lg_log") || fail "no total line from dpsock-loadgen"
	[ "$(kv errors "$tot")" -eq 0 ] || fail "dpsock-loadgen to [$1]: $tot"
	[ "$(kv connected "$tot")" -eq "$2" ] ||
		fail "dpsock-loadgen to [$1]: connected=$(kv connected "$tot"), expected $2"
	[ "$(kv transactions "$tot")" -gt 0 ] || fail "dpsock-loadgen to [$1]: no transaction: $tot"
}
loadgen "$TOPO_ADDR6_B" 8
ok "dpsock-loadgen to [$TOPO_ADDR6_B]:7000: 8 connections, $(kv transactions "$tot") transactions verified, no error"

# 9. gateway6: B's address outside the /64 (fd00:beef:IDX::1) is reached
# through B as the IPv6 default gateway (lwIP's neighbour discovery asks
# the net view for the next hop); without gateway6 nothing routes there.
far=fd00:beef:$TOPO_IDX::1
ip -n "$TOPO_NS_B" addr add "$far/128" dev "$TOPO_IF_B" nodad
TEST_IFACE_KEYS="address6 = \"$TOPO_ADDR6_A/64\"; gateway6 = \"$TOPO_ADDR6_B\";"
loadgen "$far" 4
ok "gateway6 $TOPO_ADDR6_B: dpsock-loadgen to [$far]:7000 through it, $(kv transactions "$tot") transactions verified"
pass "IPv6: NDP, ping6, TCP over IPv6 both ways beside IPv4, malformed frames counted, gateway6; clean stops"
