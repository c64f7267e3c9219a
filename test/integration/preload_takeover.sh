#!/usr/bin/env bash
# shellcheck disable=SC2119 # preload_daemon_takeover's CONF is optional
# Takeover: a second dpsockd started with the running one's configuration
# and --takeover (lib.sh: dpsockd_takeover) takes every preloaded
# program's sockets and control connections over while they run, and the
# old one exits 0; the programs see no error. Everything runs under the
# shim against dpsockd (preload_daemon_start), the peers in namespace B
# on Linux:
#
#   - test/tools/pace_pingpong.py: a TCP and a UDP echo server preloaded,
#     their clients in B sending a 16-byte record every 1 ms for the whole
#     test: over TCP every record comes back, in order and unchanged (no
#     reset, no loss), over UDP the loss stays bounded; each takeover's
#     gap between echoes (its blackout as the peer sees it) is reported;
#   - test/tools/httpd11.py preloaded: after each takeover curl from B gets
#     its page over a new connection (the listener goes on accepting);
#   - a preloaded ping-pong client connected to the preloaded TCP server,
#     a connection within the host (a pair, decision 16): every record
#     back through the takeovers;
#   - a preloaded multicast subscriber (test/tools/mctool) joined to a
#     group before the takeovers gets every datagram B publishes to it
#     after them (the membership went over: the new dpsockd joined the
#     group on the link again);
#   - a preloaded socat receives a 64 MiB stream from socat in B, paced
#     to last about 12 s so that it is in flight during the takeovers,
#     into a file whose sha256 is the one sent;
#   - a handshake in progress goes over: a client in B connects to the
#     preloaded httpd from a fixed port whose handshake ACK B's nftables
#     drops (so dpsockd holds the connection half-open, SYN_RCVD), then
#     the first takeover (the new dpsockd says it carried one peer
#     handshake), then the rule goes and the client sends its request:
#     the new dpsockd completes the handshake, the httpd accepts it and
#     the page comes back;
#   - a connect() in flight goes over: a preloaded ping-pong client
#     connects to a server in B whose SYNs B's nftables drops, so its
#     connect is in progress (SYN_SENT in dpsock-stat) at the first
#     takeover; after it the new dpsockd shows the socket, the rule goes,
#     its SYN sent again reaches B and the client's echoes flow;
#   - 3 takeovers in a row while all this runs: the old dpsockd exits 0
#     and says "handed over to pid NEW", the new one "took over from pid
#     OLD" (and its blackout); dpsock-stat of the last one shows the
#     programs' listeners, the TCP connection and the UDP socket, and
#     tcp_accepted did not go back;
#   - refused: a takeover with another workers list exits 1 with
#     "dpsockd: takeover refused:", and the running dpsockd (same pid)
#     goes on serving (the ping-pong goes on, a new one answers, curl);
#     so does one whose hello speaks the next format version
#     (DPSOCK_TAKEOVER_FAULT=next-version), told both versions;
#   - a fault: DPSOCK_TAKEOVER_FAULT=die-after-image makes the new
#     dpsockd _exit(9) once it has the state; the old one (same pid)
#     resumes with every connection (the ping-pong goes on, a new one
#     answers, curl); then die-before-done, the latest point (the new
#     process bound the ports, made its segments, restored every socket
#     and runs): the same, and the holder's stats still answer, nothing of
#     the dead one's left in /dev/shm; a takeover after that succeeds;
#   - the preloaded servers end without an error; dpsockd stops cleanly.
#
# With PRELOAD_SHARED=1 (the test preload_takeover_shared) the port is
# shared with A's kernel, which has the address (net_af_xdp: dpsockd's XDP
# program sends dpsock's flows to its sockets, the rest to the kernel); the
# program and its maps are handed over with everything else, attached all
# along. Then also:
#   - a TCP ping-pong with a server on A's kernel, not preloaded: every
#     record back through the takeovers (the kernel's traffic never
#     stopped), its gaps reported;
#   - the XDP program on A's interface is the same one (its id) before and
#     after every takeover and fault: it was never detached or replaced;
#   - A's kernel sent no TCP reset during the takeovers (TcpOutRsts): no
#     segment of an offloaded connection reached it while no dpsockd
#     had the queues.
#
# With DPSOCK_PRELOAD_KERNEL=1 (lib.sh's self-check) the same script runs
# on A's kernel, without dpsockd, and leaves the takeovers out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/mcast_lib.sh"

require_root
require_cmd ip python3 socat curl sha256sum timeout ss nft
require_preload
require_tools mctool
PP=$DPSOCK_SRC/test/tools/pace_pingpong.py
HTTPD=$DPSOCK_SRC/test/tools/httpd11.py
if [ ! -r "$PP" ] || [ ! -r "$HTTPD" ]; then
	skip "test/tools/pace_pingpong.py or httpd11.py missing"
fi
name=$TEST_NAME
test_topo_up 134
preload_daemon_start "$name"
chmod 755 "$TEST_TMP"
A=$TOPO_ADDR_A
P_TCP=7100 P_UDP=7101 P_HTTP=8080 P_XFER=7200 P_MC=7300 P_KTCP=7400
SHARED=0
[ "${PRELOAD_SHARED:-0}" != 1 ] || [ "$PRELOAD_KERNEL" = 1 ] || SHARED=1
MC_G=239.7.7.1 MC_N=400
XFER_MB=${TAKEOVER_XFER_MB:-64}
XFER_SECS=${TAKEOVER_XFER_SECS:-12}
MARK=$TEST_TMP/mark
# UDP datagrams a takeover (or a failed one) may lose: one second's worth
UDP_LOSS_PER=${TAKEOVER_UDP_LOSS_PER:-1000}
attempts=0

# mark VALUE: start a new window of the ping-pong clients (atomically)
mark() {
	printf '%s\n' "$1" >"$MARK.tmp"
	mv "$MARK.tmp" "$MARK"
	sleep 0.05 # the clients read it every 5 ms
}
# pp_received LABEL: the last "received=" of a ping-pong client's status lines
pp_received() {
	sed -n 's/^status .* received=\([0-9]*\) .*/\1/p' "$TEST_TMP/$1.log" | tail -n 1
}
# shellcheck disable=SC2317 # called through poll_until
_pp_more() {
	local r
	r=$(pp_received "$1")
	echo "received=${r:-none}"
	[ "${r:-0}" -ge "$2" ]
}
# pp_alive LABEL WHAT: LABEL's echoes still arrive (200 more within 10 s)
pp_alive() {
	local r0
	r0=$(pp_received "$1")
	poll_until 10 _pp_more "$1" $((${r0:-0} + 200)) ||
		fail "$2: the $1 ping-pong stopped getting echoes (from received=${r0:-0}: $POLL_OUTPUT): $(tail -n 2 "$TEST_TMP/$1.log" | tr '\n' ' ')"
	kill -0 "${_LIB_PRELOAD_PID[$1]}" 2>/dev/null || fail "$2: the $1 ping-pong client exited: $(tail -n 2 "$TEST_TMP/$1.log")"
}
# pp_fresh WHAT: a new TCP and a new UDP ping-pong (1 s each) from B, no error
pp_fresh() {
	local out
	out=$(in_b timeout 20 python3 "$PP" client --host "$A" --port "$P_TCP" --duration 1 --status-interval 0 2>&1) ||
		fail "$1: a new TCP ping-pong failed: $out"
	out=$(in_b timeout 20 python3 "$PP" client --udp --host "$A" --port "$P_UDP" --duration 1 --status-interval 0 2>&1) ||
		fail "$1: a new UDP ping-pong failed: $out"
	python3 -c 'import json, sys; r = json.loads(sys.argv[1]); sys.exit(r["received"] < r["sent"] * 0.9)' "$out" ||
		fail "$1: a new UDP ping-pong got few echoes: $out"
}
# page_ok WHAT: curl from B gets the page (a new connection)
page_ok() {
	local got
	got=$(in_b curl -sS --max-time 5 "http://$A:$P_HTTP/index.html" 2>&1) ||
		fail "$1: curl http://$A:$P_HTTP/index.html: $got"
	[ "$got" = "$PAGE" ] || fail "$1: curl got '$got', not the page"
}
# tcp_listening PORT LABEL: the preloaded LABEL listens on PORT (dpsock-stat;
# in the self-check, A's kernel)
tcp_listening() {
	if [ "$PRELOAD_KERNEL" = 1 ]; then
		wait_until 20 bash -c "ip netns exec $TOPO_NS_A ss -Hltn 'sport = :$1' | grep -q ."
	else
		preload_listener "$1" "$2" "$TEST_TMP/$2.log"
	fi
}

# xdp_prog_id: the id of the XDP program on A's interface (empty: none)
xdp_prog_id() {
	in_a ip -d link show dev "$TOPO_IF_A" | sed -n 's/.*prog\/xdp id \([0-9]*\).*/\1/p' | head -n 1
}
# xdp_same WHAT: the XDP program on A's interface is still XDP_ID
xdp_same() {
	local id
	id=$(xdp_prog_id)
	[ "$id" = "$XDP_ID" ] ||
		fail "$1: the XDP program on $TOPO_IF_A is '${id:-none}', not $XDP_ID: it was detached or replaced"
}

# ---- (a)-(c): the programs ------------------------------------------------------
preload_start pp-srv python3 "$PP" server --host "$A" --port "$P_TCP"
preload_start pp-usrv python3 "$PP" server --udp --host "$A" --port "$P_UDP"
mkdir -p "$TEST_TMP/www"
PAGE="dpsock takeover test page $$"
printf '%s\n' "$PAGE" >"$TEST_TMP/www/index.html"
preload_start httpd python3 "$HTTPD" "$A" "$P_HTTP" "$TEST_TMP/www"
preload_start sink socat -u "TCP-LISTEN:$P_XFER,bind=$A,reuseaddr" "CREATE:$TEST_TMP/recv.bin"
# a subscriber that stops after MC_N datagrams, and waits for them through
# every takeover
preload_start mcsub "$MCTOOL" sub -g "$MC_G" -p "$P_MC" -n "$MC_N" -t 120 -w 120
wait_until 20 grep -q READY "$TEST_TMP/mcsub.log"
wait_until 20 grep -q listening "$TEST_TMP/pp-srv.log"
wait_until 20 grep -q listening "$TEST_TMP/pp-usrv.log"
wait_tcp_port "$TOPO_NS_B" "$A" "$P_HTTP" 20
tcp_listening "$P_TCP" pp-srv
tcp_listening "$P_XFER" sink
page_ok "before any takeover"
ok "preloaded: ping-pong servers (TCP $P_TCP, UDP $P_UDP), httpd11 ($P_HTTP), socat receiver ($P_XFER)"

rm -f "$MARK"
mark 0
peer_start pp-cli python3 "$PP" client --host "$A" --port "$P_TCP" --mark "$MARK"
# a connection within the host: both ends preloaded on the same dpsockd
# (a pair whose bytes go FIFO to FIFO, docs/design.md decision 16)
preload_start pp-self python3 "$PP" client --host "$A" --port "$P_TCP"
peer_start pp-ucli python3 "$PP" client --udp --host "$A" --port "$P_UDP" --mark "$MARK"
if [ "$SHARED" = 1 ]; then
	# beside dpsockd on the shared port: a server on A's kernel
	ns_start "$TOPO_NS_A" kpp-srv python3 "$PP" server --host "$A" --port "$P_KTCP"
	wait_until 20 grep -q listening "$TEST_TMP/kpp-srv.log"
	peer_start kpp-cli python3 "$PP" client --host "$A" --port "$P_KTCP" --mark "$MARK"
	XDP_ID=$(xdp_prog_id)
	[ -n "$XDP_ID" ] || fail "no XDP program on $TOPO_IF_A, shared with the kernel"
	ok "shared with A's kernel: dpsockd's XDP program (id $XDP_ID) on $TOPO_IF_A; a kernel TCP ping-pong on $P_KTCP beside the preloaded programs"
fi
sleep 1
pp_alive pp-cli "before any takeover"
pp_alive pp-ucli "before any takeover"
[ "$SHARED" = 0 ] || pp_alive kpp-cli "before any takeover"
acc0=$(preload_stat tcp_accepted)

# the 64 MiB stream: socat in B, paced by a reader with sleeps (no pv here)
head -c $((XFER_MB * 1024 * 1024)) /dev/urandom >"$TEST_TMP/xfer.bin"
xfer_sum=$(sha256sum <"$TEST_TMP/xfer.bin" | cut -d' ' -f1)
# shellcheck disable=SC2016 # expanded by the inner bash and python
peer_start xfer bash -c 'set -o pipefail; python3 -c "
import sys, time
path, rate = sys.argv[1], float(sys.argv[2])
out, n, t0 = sys.stdout.buffer, 0, time.monotonic()
with open(path, \"rb\") as f:
    while True:
        b = f.read(65536)
        if not b:
            break
        out.write(b)
        out.flush()
        n += len(b)
        d = n / rate - (time.monotonic() - t0)
        if d > 0:
            time.sleep(d)
" "$1" "$2" | socat -u - "TCP:$3:$4"' xfer "$TEST_TMP/xfer.bin" \
	$((XFER_MB * 1024 * 1024 / XFER_SECS)) "$A" "$P_XFER"
xfer_pid=$PEER_PID
wait_until 10 test -s "$TEST_TMP/recv.bin"
ok "a ${XFER_MB} MiB stream from B to the preloaded socat is under way (~${XFER_SECS} s)"

# ---- a handshake in progress (SYN_RCVD) at the first takeover -------------------
HS_PORT=40123 P_CONN=7500
if [ "$PRELOAD_KERNEL" != 1 ]; then
	peer_start conn-srv python3 "$PP" server --host "$TOPO_ADDR_B" --port "$P_CONN"
	wait_until 20 grep -q listening "$TEST_TMP/conn-srv.log"
	in_b nft -f - <<EOF
table inet tkoconn {
	chain in {
		type filter hook input priority 0;
		tcp dport $P_CONN tcp flags & (syn | ack) == syn drop
	}
}
EOF
	on_exit "ip netns exec $TOPO_NS_B nft delete table inet tkoconn 2>/dev/null; true"
	preload_start conn python3 "$PP" client --host "$TOPO_ADDR_B" --port "$P_CONN"
	wait_until 20 bash -c "\"$DPSOCK_STAT\" -n $PRELOAD_NAME -v sockets 2>/dev/null | grep -qE '$TOPO_ADDR_B:$P_CONN +SYN_SENT'" ||
		fail "the preloaded client's connect is not in progress on dpsockd: $("$DPSOCK_STAT" -n "$PRELOAD_NAME" -v sockets 2>&1 | tail -n 5)"
	in_b nft -f - <<EOF
table inet tkohs {
	chain out {
		type filter hook output priority 0;
		tcp sport $HS_PORT tcp dport $P_HTTP tcp flags == ack ip length < 80 drop
	}
}
EOF
	on_exit "ip netns exec $TOPO_NS_B nft delete table inet tkohs 2>/dev/null; true"
	# shellcheck disable=SC2016 # the python program's own text
	peer_start hs python3 -c '
import socket, sys, time, os
host, port, sport, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", sport))
s.settimeout(60)
s.connect((host, port))
print("connected", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
s.sendall(b"GET /index.html HTTP/1.0\r\nHost: a\r\n\r\n")
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.decode(errors="replace"), flush=True)
' "$A" "$P_HTTP" "$HS_PORT" "$TEST_TMP/hs.go"
	wait_until 10 grep -q connected "$TEST_TMP/hs.log"
fi

# ---- (d): 3 takeovers under load ------------------------------------------------
in_flight=0
blackouts=()
[ "$SHARED" = 0 ] || rsts0=$(a_tcp_out_rsts)
for i in 1 2 3; do
	mark "$i"
	preload_daemon_takeover
	attempts=$((attempts + 1))
	blackouts+=("${TAKEOVER_BLACKOUT_MS:-?}")
	if kill -0 "$xfer_pid" 2>/dev/null; then
		in_flight=$((in_flight + 1))
	elif [ "$i" = 1 ]; then
		fail "the stream had ended before the first takeover was done: raise TAKEOVER_XFER_SECS"
	fi
	if [ "$i" = 1 ] && [ "$PRELOAD_KERNEL" != 1 ]; then
		grep -q 'takeover: worker [0-9]*: 1 peer handshake(s) in progress carried' "$DPSOCKD_LOG" ||
			fail "the new dpsockd carried no peer handshake: $(grep 'takeover: worker' "$DPSOCKD_LOG" | tr '\n' ' ')"
		in_b nft delete table inet tkohs
		touch "$TEST_TMP/hs.go"
		rc=0
		preload_wait hs 20 || rc=$?
		[ "$rc" -eq 0 ] && grep -qF "$PAGE" "$TEST_TMP/hs.log" ||
			fail "the connection half open at the takeover (status $rc): $(tail -n 4 "$TEST_TMP/hs.log" | tr '\n' ' ')"
		ok "a handshake in progress (SYN_RCVD) at takeover 1 went over: completed on the new dpsockd, the httpd answered it"
		"$DPSOCK_STAT" -n "$PRELOAD_NAME" -v sockets 2>/dev/null | grep -qE "$TOPO_ADDR_B:$P_CONN +SYN_SENT" ||
			fail "the connect in flight is not the new dpsockd's: $("$DPSOCK_STAT" -n "$PRELOAD_NAME" -v sockets 2>&1 | grep ":$P_CONN" | tr '\n' ' ')"
		in_b nft delete table inet tkoconn
		# its SYN goes again when lwIP's backed-off timer says (seconds)
		poll_until 30 _pp_more conn 200 ||
			fail "the connect in flight at takeover 1: no echoes 30 s after B let its SYN in ($POLL_OUTPUT): $(tail -n 2 "$TEST_TMP/conn.log" | tr '\n' ' ')"
		ok "a connect() in flight (SYN_SENT) at takeover 1 went over: it completed on the new dpsockd, its echoes flow"
	fi
	page_ok "after takeover $i"
	pp_alive pp-cli "after takeover $i"
	pp_alive pp-ucli "after takeover $i"
	if [ "$SHARED" = 1 ]; then
		pp_alive kpp-cli "after takeover $i"
		xdp_same "takeover $i"
	fi
	[ "$PRELOAD_KERNEL" = 1 ] ||
		ok "takeover $i: the old dpsockd exited 0, pid $DPSOCKD_PID took over (blackout ${TAKEOVER_BLACKOUT_MS:-?} ms, ${TAKEOVER_TOOK_MS} ms in all); curl and both ping-pongs answer"
done
[ "$PRELOAD_KERNEL" = 1 ] ||
	ok "3 takeovers in a row, the stream in flight during $in_flight of them; blackouts (dpsockd's figures): ${blackouts[*]} ms"
if [ "$SHARED" = 1 ]; then
	rsts1=$(a_tcp_out_rsts)
	[ "$rsts1" = "$rsts0" ] ||
		fail "A's kernel sent $((rsts1 - rsts0)) TCP reset(s) during the takeovers: segments of offloaded connections reached it"
	ok "shared: the XDP program (id $XDP_ID) stayed attached through the 3 takeovers, and A's kernel sent no TCP reset"
fi

# ---- the multicast membership went over ------------------------------------------
mcast_kernel_route
in_b "$MCTOOL" pub -g "$MC_G" -p "$P_MC" -n "$MC_N" -r 2000 -i "$TOPO_ADDR_B" >"$TEST_TMP/mcpub.log" ||
	fail "the publisher in B failed: $(cat "$TEST_TMP/mcpub.log")"
rc=0
preload_wait mcsub 30 || rc=$?
[ "$rc" -eq 0 ] || fail "the preloaded multicast subscriber (joined before the takeovers) failed (status $rc): $(tail -n 3 "$TEST_TMP/mcsub.log" | tr '\n' ' ')"
mc_got=$(mcast_result mcsub received)
[ "${mc_got:-0}" -eq "$MC_N" ] ||
	fail "the multicast subscriber got ${mc_got:-0} of the $MC_N datagrams published after the takeovers"
ok "the multicast membership made before the takeovers went over: all $MC_N datagrams to $MC_G arrived"

# ---- (e), part: what the last dpsockd holds ---------------------------------------
rc=0
preload_wait xfer 120 || rc=$?
[ "$rc" -eq 0 ] || fail "the sender in B (socat) exited with status $rc: $(tail -n 3 "$TEST_TMP/xfer.log" | tr '\n' ' ')"
rc=0
preload_wait sink 60 || rc=$?
[ "$rc" -eq 0 ] || fail "the preloaded socat receiver exited with status $rc: $(tail -n 3 "$TEST_TMP/sink.log" | tr '\n' ' ')"
got_sum=$(sha256sum <"$TEST_TMP/recv.bin" | cut -d' ' -f1)
[ "$got_sum" = "$xfer_sum" ] ||
	fail "the stream arrived different: $(stat -c %s "$TEST_TMP/recv.bin") bytes of $((XFER_MB * 1024 * 1024)), sha256 $got_sum, sent $xfer_sum"
ok "the ${XFER_MB} MiB stream arrived whole through the takeovers (sha256 equal)"

if [ "$PRELOAD_KERNEL" != 1 ]; then
	socks=$("$DPSOCK_STAT" -n "$name" -v sockets 2>&1) || fail "dpsock-stat -n $name -v sockets: $socks"
	printf '%s\n' "$socks" >"$TEST_TMP/sockets-after.txt"
	for pat in "^tcp .*:$P_TCP .*LISTEN" "^tcp .*:$P_HTTP .*LISTEN" "^udp .*:$P_UDP " \
		"^tcp .*$A:$P_TCP +$TOPO_ADDR_B:[0-9]+ +ESTABLISHED"; do
		grep -qE "$pat" <<<"$socks" ||
			fail "dpsock-stat of the new dpsockd (pid $DPSOCKD_PID) has no socket matching '$pat': $socks"
	done
	ok "dpsock-stat of the new dpsockd shows the programs' sockets: listeners $P_TCP and $P_HTTP, UDP $P_UDP, the ping-pong's connection"
	acc1=$(preload_stat tcp_accepted)
	[ "$acc1" -ge "$acc0" ] || fail "tcp_accepted went back through the takeovers: $acc0 before, $acc1 after"
	ok "tcp_accepted $acc0 before the takeovers, $acc1 after"
	preload_show_clients
fi

# ---- (f): a takeover refused --------------------------------------------------------
if [ "$PRELOAD_KERNEL" != 1 ]; then
	conf1=$TEST_TMP/$name-1worker.conf
	sed 's/^workers = \[ 0, 1 \];$/workers = [ 0 ];/' "$PRELOAD_CONF" >"$conf1"
	grep -q '^workers = \[ 0 \];$' "$conf1" || fail "could not write a one-worker configuration from $PRELOAD_CONF"
	mark refused
	pid0=$DPSOCKD_PID
	preload_daemon_takeover_fails "$conf1"
	attempts=$((attempts + 1))
	[ "$TAKEOVER_RC" = 1 ] ||
		fail "a takeover with another workers list exited with status $TAKEOVER_RC, not 1: $(tail -n 5 "$TAKEOVER_LOG" | tr '\n' ' ')"
	grep -q '^dpsockd: takeover refused:' "$TAKEOVER_LOG" ||
		fail "a takeover with another workers list: no 'dpsockd: takeover refused:' line: $(tail -n 5 "$TAKEOVER_LOG" | tr '\n' ' ')"
	if [ "$DPSOCKD_PID" != "$pid0" ] || ! kill -0 "$pid0" 2>/dev/null; then
		fail "the running dpsockd (pid $pid0) is gone after a refused takeover"
	fi
	pp_alive pp-cli "after a refused takeover"
	pp_alive pp-ucli "after a refused takeover"
	pp_fresh "after a refused takeover"
	page_ok "after a refused takeover"
	ok "refused: $(grep -m1 '^dpsockd: takeover refused:' "$TAKEOVER_LOG"); pid $pid0 goes on serving"
	# a build of another hand-over format (the hello of the next version)
	DPSOCK_TAKEOVER_FAULT=next-version preload_daemon_takeover_fails
	[ "$TAKEOVER_RC" = 1 ] ||
		fail "a takeover of another format version exited with status $TAKEOVER_RC, not 1: $(tail -n 5 "$TAKEOVER_LOG" | tr '\n' ' ')"
	grep -q '^dpsockd: takeover refused: .*hand-over format version' "$TAKEOVER_LOG" ||
		fail "a takeover of another format version: no refusal naming the versions: $(tail -n 5 "$TAKEOVER_LOG" | tr '\n' ' ')"
	if [ "$DPSOCKD_PID" != "$pid0" ] || ! kill -0 "$pid0" 2>/dev/null; then
		fail "the running dpsockd (pid $pid0) is gone after a takeover of another format was refused"
	fi
	pp_fresh "after a takeover of another format was refused"
	ok "refused: $(grep -m1 '^dpsockd: takeover refused:' "$TAKEOVER_LOG")"

	# ---- (g): the new process dies once it has the state ------------------------
	mark fault
	DPSOCK_TAKEOVER_FAULT=die-after-image preload_daemon_takeover_fails
	attempts=$((attempts + 1))
	[ "$TAKEOVER_RC" != 0 ] || fail "DPSOCK_TAKEOVER_FAULT=die-after-image: the new dpsockd exited 0"
	if grep -q 'took over from pid' "$TAKEOVER_LOG"; then
		fail "DPSOCK_TAKEOVER_FAULT=die-after-image: the new dpsockd said it took over: $(grep 'took over' "$TAKEOVER_LOG")"
	fi
	if [ "$DPSOCKD_PID" != "$pid0" ] || ! kill -0 "$pid0" 2>/dev/null; then
		fail "the old dpsockd (pid $pid0) is gone after the new one died"
	fi
	pp_alive pp-cli "after the new dpsockd died"
	pp_alive pp-ucli "after the new dpsockd died"
	pp_fresh "after the new dpsockd died"
	page_ok "after the new dpsockd died"
	[ "$SHARED" = 0 ] || xdp_same "after the new dpsockd died"
	ok "fault: the new dpsockd died with status $TAKEOVER_RC after the image; pid $pid0 resumed with every connection"
	# the latest fault: everything restored and running in the new
	# process (ports bound, segments made, connections restored), the
	# holder not told yet
	DPSOCK_TAKEOVER_FAULT=die-before-done preload_daemon_takeover_fails
	attempts=$((attempts + 1))
	[ "$TAKEOVER_RC" != 0 ] || fail "DPSOCK_TAKEOVER_FAULT=die-before-done: the new dpsockd exited 0"
	if [ "$DPSOCKD_PID" != "$pid0" ] || ! kill -0 "$pid0" 2>/dev/null; then
		fail "the old dpsockd (pid $pid0) is gone after the new one died before it was done"
	fi
	pp_alive pp-cli "after the new dpsockd died before it was done"
	pp_alive pp-ucli "after the new dpsockd died before it was done"
	pp_fresh "after the new dpsockd died before it was done"
	page_ok "after the new dpsockd died before it was done"
	# its stats are the holder's still (dpsock-stat answers for the name),
	# and nothing the dead one made is left in /dev/shm
	acc2=$(preload_stat tcp_accepted)
	[ "${acc2:-0}" -ge "$acc1" ] ||
		fail "after the late fault, tcp_accepted reads ${acc2:-nothing} (was $acc1): the holder's stats segment"
	for f in "/dev/shm/dpsock.$name.stats.tko" "/dev/shm/dpsock.$name.capture.tko"; do
		[ ! -e "$f" ] || fail "the dead new dpsockd's $f is left"
	done
	[ "$SHARED" = 0 ] || xdp_same "after the new dpsockd died before it was done"
	ok "fault: the new dpsockd died just before saying done; pid $pid0 resumed with every connection and its stats"
	mark 4
	preload_daemon_takeover
	attempts=$((attempts + 1))
	page_ok "after the takeover that followed the fault"
	pp_alive pp-cli "after the takeover that followed the fault"
	[ "$SHARED" = 0 ] || xdp_same "the takeover that followed the fault"
	ok "a takeover after the fault: pid $DPSOCKD_PID took over (blackout ${TAKEOVER_BLACKOUT_MS:-?} ms)"
fi

# ---- (e): the ping-pongs' verdicts --------------------------------------------------
# result LABEL: the client's JSON line (after SIGTERM)
result() { grep '^{' "$TEST_TMP/$1.log" | tail -n 1; }
# jget JSON EXPR: a Python expression on the JSON object r
jget() { python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
windows() {
	jget "$1" '"; ".join("%s: gap %s ms, lost %s of %s" % (w["mark"], w["max_gap_ms"], w["lost"], w["sent"]) for w in r["windows"])'
}
rc=0
preload_stop pp-cli TERM || rc=$?
res=$(result pp-cli)
[ -n "$res" ] || fail "the TCP ping-pong client printed no result: $(tail -n 3 "$TEST_TMP/pp-cli.log")"
[ "$rc" -eq 0 ] || fail "the TCP ping-pong client saw errors (status $rc): $(jget "$res" 'r["errors"]')"
[ "$(jget "$res" 'r["lost"]')" = 0 ] || fail "TCP ping-pong: records lost: $res"
note "TCP ping-pong: $(jget "$res" '"%d records, max gap %s ms, max rtt %s ms, p99 rtt %s ms, gaps over 10/50/100 ms: %s" % (r["received"], r["max_gap_ms"], r["max_rtt_ms"], r["p99_rtt_ms"], "/".join(str(r["gaps_over_ms"][k]) for k in ("10", "50", "100")))')"
note "TCP ping-pong per window: $(windows "$res")"
ok "TCP ping-pong: every record back, in order and unchanged, no reset (max gap $(jget "$res" 'r["max_gap_ms"]') ms)"

if [ "$SHARED" = 1 ]; then
	rc=0
	preload_stop kpp-cli TERM || rc=$?
	res=$(result kpp-cli)
	[ -n "$res" ] || fail "the kernel TCP ping-pong client printed no result: $(tail -n 3 "$TEST_TMP/kpp-cli.log")"
	[ "$rc" -eq 0 ] || fail "the kernel TCP ping-pong saw errors (status $rc): $(jget "$res" 'r["errors"]')"
	[ "$(jget "$res" 'r["lost"]')" = 0 ] || fail "the kernel TCP ping-pong: records lost: $res"
	note "kernel TCP ping-pong per window: $(windows "$res")"
	ok "the kernel's own TCP ping-pong on the shared port: $(jget "$res" 'r["received"]') records, every one back (max gap $(jget "$res" 'r["max_gap_ms"]') ms)"
	preload_stop kpp-srv TERM || true
fi

rc=0
preload_stop pp-self TERM || rc=$?
res=$(result pp-self)
[ -n "$res" ] || fail "the preloaded ping-pong client within the host printed no result: $(tail -n 3 "$TEST_TMP/pp-self.log")"
[ "$rc" -eq 0 ] || fail "the ping-pong within the host saw errors (status $rc): $(jget "$res" 'r["errors"]')"
[ "$(jget "$res" 'r["lost"]')" = 0 ] || fail "the ping-pong within the host: records lost: $res"
ok "a connection within the host (both ends preloaded): $(jget "$res" 'r["received"]') records, every one back through the takeovers (max gap $(jget "$res" 'r["max_gap_ms"]') ms)"

rc=0
preload_stop pp-ucli TERM || rc=$?
res=$(result pp-ucli)
[ -n "$res" ] || fail "the UDP ping-pong client printed no result: $(tail -n 3 "$TEST_TMP/pp-ucli.log")"
[ "$rc" -eq 0 ] || fail "the UDP ping-pong client saw errors (status $rc): $(jget "$res" 'r["errors"]')"
lost=$(jget "$res" 'r["lost"]')
note "UDP ping-pong: $(jget "$res" '"%d of %d echoed, lost %d, reordered %d, max gap %s ms" % (r["received"], r["sent"], r["lost"], r["reordered"], r["max_gap_ms"])')"
note "UDP ping-pong per window: $(windows "$res")"
[ "$lost" -le $((UDP_LOSS_PER * (attempts > 0 ? attempts : 1))) ] ||
	fail "UDP ping-pong: $lost datagrams lost, more than $UDP_LOSS_PER for each of $attempts takeover attempts"
ok "UDP ping-pong: $lost datagrams lost over $attempts takeover attempts (bound $((UDP_LOSS_PER * (attempts > 0 ? attempts : 1))))"

# ---- the preloaded programs end without an error -------------------------------------
for s in pp-srv pp-usrv; do
	rc=0
	preload_stop "$s" TERM || rc=$?
	[ "$rc" -eq 0 ] || fail "the preloaded $s exited with status $rc: $(tail -n 2 "$TEST_TMP/$s.log" | tr '\n' ' ')"
done
ok "the preloaded ping-pong servers saw no error: $(grep '^{' "$TEST_TMP/pp-srv.log" | tail -n 1)"
preload_stop httpd TERM || true
preload_daemon_stop
[ "$PRELOAD_KERNEL" != 1 ] || pass "kernel self-check: the script's own logic, no takeover"
pass "4 takeovers (one after a fault) and a refusal under TCP, UDP, HTTP and a ${XFER_MB} MiB stream: no error, no TCP loss, the stream whole"
