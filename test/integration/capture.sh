#!/usr/bin/env bash
# dpsock-dump: a tcpdump for the frames dpsockd's workers receive and send,
# which the kernel's tcpdump never sees (the port is AF_XDP or af_packet
# under dpsockd). Namespace A's kernel has no address: everything below is
# offloaded traffic of preloaded programs, against Linux in namespace B.
#
#   - a capture to pcapng (-w) with the filter "tcp port 8000", while a
#     preloaded curl fetches a file from python's http.server in B and a
#     preloaded UDP client talks to B's echo on 9000: tcpdump reads the
#     file; it holds the SYN (out), the SYN-ACK (in), the request, the
#     whole response (payload bytes >= the file), a FIN each way, no UDP;
#     each packet says its direction (epb_flags) on its port's interface
#     (pcapng_blocks.py); the summary's count is the file's;
#   - a second capture at the same time, "udp port 9000" with -c 4: it
#     stops by itself after 4 frames, 2 in and 2 out;
#   - without -w tcpdump shows the frames: ICMP echo requests and replies
#     of a ping from B; -Q in -w -: pcapng on stdout (tcpdump -r reads
#     it), the requests alone;
#   - --pid: the frames of one preloaded program's sockets, not those of
#     another one talking at the same time;
#   - a frame the worker drops (bad IPv4 header checksum) is in the file
#     with a comment naming its counter, rx_drop_ip_cksum;
#   - refusals with a clear message: a filter libpcap cannot parse (exit 2),
#     an instance that does not run (1), a user who is not root (1), every
#     session taken (1); a capture killed with SIGKILL gives its session
#     back;
#   - dpsockd stopping ends a running capture with a whole file, and the
#     capture segment goes with dpsockd;
#   - DPDK's dpdk-dumpcap attaches to a dpsockd started with --proc-type
#     primary (hugepages, EAL's multi-process channel) and captures a
#     ping's requests and replies (not run, and said so, without
#     dpdk-dumpcap or free hugepages).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip curl python3 tcpdump setpriv ping
require_preload
[ "$PRELOAD_KERNEL" != 1 ] || skip "dpsock-dump captures dpsockd's frames: no dpsockd in the kernel self-check"
require_tools dpsockd dpsock-stat dpsock-dump badframes
DUMP=$(dpsock_tool dpsock-dump)
BLOCKS=$DPSOCK_SRC/test/tools/pcapng_blocks.py
name=$TEST_NAME
test_topo_up 132
preload_daemon_start "$name"

declare -A DUMP_PID
# dump_try LABEL ARGS...: dpsock-dump -n NAME ARGS in the background
# (stdout LABEL.out, stderr LABEL.err); returns 0 once it captures (the
# workers run its filter: it says so), 1 when it ended instead.
dump_try() {
	local label=$1 pid
	shift
	"$DUMP" -n "$name" "$@" >"$TEST_TMP/$label.out" 2>"$TEST_TMP/$label.err" </dev/null &
	pid=$!
	DUMP_PID[$label]=$pid
	on_exit "kill -KILL $pid 2>/dev/null; true"
	poll_until 10 bash -c "grep -q '^dpsock-dump: capturing on' '$TEST_TMP/$label.err' || ! kill -0 $pid" ||
		fail "dpsock-dump $label neither captures nor ends after 10 s: $(cat "$TEST_TMP/$label.err")"
	grep -q '^dpsock-dump: capturing on' "$TEST_TMP/$label.err" && return 0
	wait "$pid" 2>/dev/null || true
	return 1
}
dump_start() { dump_try "$@" || fail "dpsock-dump $1 ended: $(cat "$TEST_TMP/$1.err")"; }
# dump_end LABEL [SIGNAL]: signal it (INT; "" waits for it to end by
# itself) and fail unless it exits 0 within 10 s.
dump_end() {
	local pid=${DUMP_PID[$1]} rc=0
	[ -z "${2-INT}" ] || kill -"${2-INT}" "$pid" 2>/dev/null || true
	poll_until 10 _lib_dead "$pid" || fail "dpsock-dump $1 still runs after 10 s: $(cat "$TEST_TMP/$1.err")"
	wait "$pid" || rc=$?
	[ "$rc" = 0 ] || fail "dpsock-dump $1 exited $rc: $(cat "$TEST_TMP/$1.err")"
}
# count LABEL: the frames its summary says it captured
count() { sed -n 's/^\([0-9]*\) packets captured$/\1/p' "$TEST_TMP/$1.err"; }
# td FILE [FILTER]: tcpdump's lines of FILE (fails the test if tcpdump cannot read it)
td() {
	local f=$1
	shift
	tcpdump -nn -r "$f" "$@" 2>"$TEST_TMP/td.err" || fail "tcpdump cannot read $f: $(cat "$TEST_TMP/td.err")"
}
blocks() { python3 "$BLOCKS" "$1" || fail "$1 is not a well-formed pcapng file"; }

A=$TOPO_ADDR_A B=$TOPO_ADDR_B

# ---- peers in B: http.server on 8000, UDP and TCP echo on 9000-9002 ----------------
www=$TEST_TMP/www
mkdir -p "$www"
head -c 300000 /dev/urandom >"$www/f.bin"
cat >"$TEST_TMP/echo.py" <<'EOF'
import socket, socketserver, sys, threading
addr = sys.argv[1]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((addr, 9000))
def udp():
    while True:
        d, a = u.recvfrom(2048)
        u.sendto(d, a)
threading.Thread(target=udp, daemon=True).start()
class E(socketserver.BaseRequestHandler):
    def handle(self):
        while True:
            d = self.request.recv(4096)
            if not d:
                return
            self.request.sendall(d)
class S(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
for port in (9001, 9002):
    threading.Thread(target=S((addr, port), E).serve_forever, daemon=True).start()
threading.Event().wait()
EOF
peer_start httpd python3 "$DPSOCK_SRC/test/tools/httpd11.py" "$B" 8000 "$www"
peer_start echo python3 "$TEST_TMP/echo.py" "$B"
wait_tcp_port "$TOPO_NS_B" "$B" 8000 20
wait_tcp_port "$TOPO_NS_B" "$B" 9001 20
# udp_talk N: a preloaded program sends N datagrams to B:9000 and reads each echo
udp_talk() {
	preload_run python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
for i in range(int(sys.argv[2])):
    s.sendto(b"dpsock-dump %d" % i, (sys.argv[1], 9000))
    assert s.recv(100) == b"dpsock-dump %d" % i
' "$B" "$1" || fail "the preloaded UDP client got no echo"
}

# ---- two captures at once: TCP to a file, UDP with -c ------------------------------
dump_start tcp -w "$TEST_TMP/tcp.pcapng" tcp port 8000
dump_start udp -w "$TEST_TMP/udp.pcapng" -c 4 udp port 9000
udp_talk 3 &
talk=$!
out=$(preload_run curl -sS --max-time 30 -o "$TEST_TMP/got.bin" -w '%{http_code}' "http://$B:8000/f.bin" 2>&1) ||
	fail "curl under the preload: $out"
[ "$out" = 200 ] && cmp -s "$TEST_TMP/got.bin" "$www/f.bin" || fail "curl: HTTP $out, or the file differs"
wait "$talk" || fail "the UDP exchange failed"
dump_end udp "" # -c 4: it ends by itself
# the FIN exchange of curl's close is in the file once both FINs are answered
sleep 0.5
dump_end tcp

td "$TEST_TMP/tcp.pcapng" >"$TEST_TMP/tcp.txt"
n=$(wc -l <"$TEST_TMP/tcp.txt")
[ "$n" = "$(count tcp)" ] || fail "dpsock-dump said $(count tcp) packets captured, the file holds $n"
grep -q "IP $A\.[0-9]* > $B\.8000: Flags \[S\]," "$TEST_TMP/tcp.txt" || fail "no SYN from A: $(head -n 5 "$TEST_TMP/tcp.txt")"
grep -q "IP $B\.8000 > $A\.[0-9]*: Flags \[S\.\]," "$TEST_TMP/tcp.txt" || fail "no SYN-ACK from B"
grep -q "IP $A\.[0-9]* > $B\.8000: Flags \[[FP.]*F[P.]*\]," "$TEST_TMP/tcp.txt" || fail "no FIN from A"
grep -q "IP $B\.8000 > $A\.[0-9]*: Flags \[[FP.]*F[P.]*\]," "$TEST_TMP/tcp.txt" || fail "no FIN from B"
grep -q "IP $A\.[0-9]* > $B\.8000: Flags \[P\.\].*length [1-9]" "$TEST_TMP/tcp.txt" || fail "no request from A"
! grep -qv ' > .*\.8000: \| [0-9.]*\.8000 > ' "$TEST_TMP/tcp.txt" || fail "the filter let other frames in: $(grep -v '8000' "$TEST_TMP/tcp.txt" | head -n 3)"
resp=$(awk -v b="$B.8000" '$3 == b { for (i = 1; i < NF; i++) if ($i == "length") s += $(i + 1) } END { print s + 0 }' "$TEST_TMP/tcp.txt")
[ "$resp" -ge 300000 ] || fail "the response's payload in the capture is $resp bytes, the file 300000"
blocks "$TEST_TMP/tcp.pcapng" >"$TEST_TMP/tcp.blocks"
# the SYN is out and the SYN-ACK in, on port 0's tx and rx interfaces
idb_rx=$(awk '$1 == "idb" && $4 ~ /\/rx$/ { print $2; exit }' "$TEST_TMP/tcp.blocks")
idb_tx=$(awk '$1 == "idb" && $4 ~ /\/tx$/ { print $2; exit }' "$TEST_TMP/tcp.blocks")
[ -n "$idb_rx" ] && [ -n "$idb_tx" ] || fail "no rx/tx interfaces in the file: $(grep idb "$TEST_TMP/tcp.blocks")"
paste <(grep '^epb' "$TEST_TMP/tcp.blocks") "$TEST_TMP/tcp.txt" >"$TEST_TMP/tcp.both"
awk -v rx="if=$idb_rx" -v tx="if=$idb_tx" -v a="$A" '
	{ out = index($0, "IP " a ".") > 0 }
	out && !($2 == tx && $3 == "dir=out") { print "from A but " $2 " " $3; bad = 1 }
	!out && !($2 == rx && $3 == "dir=in") { print "to A but " $2 " " $3; bad = 1 }
	END { exit bad }' "$TEST_TMP/tcp.both" || fail "a packet's interface or direction is wrong"
ok "capture to pcapng: tcp port 8000, $n packets: SYN out, SYN-ACK in, request, $resp response bytes, FIN both ways; directions right; no UDP"

td "$TEST_TMP/udp.pcapng" >"$TEST_TMP/udp.txt"
[ "$(wc -l <"$TEST_TMP/udp.txt")" = 4 ] && [ "$(count udp)" = 4 ] ||
	fail "-c 4: the file holds $(wc -l <"$TEST_TMP/udp.txt") frames, the tool says $(count udp): $(cat "$TEST_TMP/udp.txt")"
[ "$(grep -c "IP $A\.[0-9]* > $B\.9000: UDP" "$TEST_TMP/udp.txt")" = 2 ] &&
	[ "$(grep -c "IP $B\.9000 > $A\.[0-9]*: UDP" "$TEST_TMP/udp.txt")" = 2 ] ||
	fail "-c 4 udp port 9000: want 2 datagrams each way: $(cat "$TEST_TMP/udp.txt")"
ok "a second capture at the same time: udp port 9000 -c 4 ended by itself with 2 datagrams each way"

# ---- shown by tcpdump; -Q in ------------------------------------------------------
dump_start show -c 4 icmp
in_b ping -c 2 -i 0.2 -W 2 "$A" >/dev/null || fail "ping from B unanswered"
dump_end show ""
[ "$(grep -c "IP $B > $A: ICMP echo request" "$TEST_TMP/show.out")" = 2 ] &&
	[ "$(grep -c "IP $A > $B: ICMP echo reply" "$TEST_TMP/show.out")" = 2 ] ||
	fail "tcpdump's lines: $(cat "$TEST_TMP/show.out")"
dump_start in -Q in -c 2 -w - icmp
in_b ping -c 2 -i 0.2 -W 2 "$A" >/dev/null || fail "ping from B unanswered"
dump_end in ""
td "$TEST_TMP/in.out" >"$TEST_TMP/in.txt"
[ "$(grep -c "ICMP echo request" "$TEST_TMP/in.txt")" = 2 ] && ! grep -q "echo reply" "$TEST_TMP/in.txt" ||
	fail "-Q in -w -: $(cat "$TEST_TMP/in.txt")"
ok "without -w tcpdump shows the frames (echo request and reply each way); -Q in -w - writes pcapng of the requests alone to stdout"

# ---- --pid: one program's sockets ----------------------------------------------
# two preloaded programs, each with a connection to an echo port, talking
# once a second until told to stop
talker() {
	preload_start "talk$1" python3 -c '
import os, socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
while not os.path.exists(sys.argv[3]):
    s.sendall(b"x" * 100)
    got = 0
    while got < 100:
        got += len(s.recv(100 - got))
    time.sleep(0.2)
' "$B" "$1" "$TEST_TMP/talk.stop"
}
talker 9001
p1=$PRELOAD_PID
talker 9002
# both programs' connections are in dpsockd's socket table before the capture
for port in 9001 9002; do
	poll_until 10 bash -c "'$DPSOCK_STAT' -n '$name' -v sockets -s port=$port 2>/dev/null | grep -q ESTABLISHED" ||
		fail "the talker's connection to $port is not listed: $("$DPSOCK_STAT" -n "$name" -v sockets 2>&1 | tail -n 5)"
done
dump_start pid -w "$TEST_TMP/pid.pcapng" --pid "$p1"
sleep 1.5
dump_end pid
touch "$TEST_TMP/talk.stop"
preload_wait talk9001 10 || fail "talker 9001 failed: $(cat "$TEST_TMP/talk9001.log")"
preload_wait talk9002 10 || fail "talker 9002 failed: $(cat "$TEST_TMP/talk9002.log")"
td "$TEST_TMP/pid.pcapng" >"$TEST_TMP/pid.txt"
grep -q "$B\.9001 > $A\.[0-9]*: Flags \[P\.\]" "$TEST_TMP/pid.txt" || fail "--pid $p1: no data of its connection: $(head -n 5 "$TEST_TMP/pid.txt")"
! grep -q '9002' "$TEST_TMP/pid.txt" || fail "--pid $p1: the other program's frames are in: $(grep 9002 "$TEST_TMP/pid.txt" | head -n 3)"
ok "--pid: $(wc -l <"$TEST_TMP/pid.txt") frames of that program's connection, none of the other's"

# ---- a frame the worker drops carries its counter -----------------------------
dump_start drops -w "$TEST_TMP/drops.pcapng" -Q in icmp
badframes_send 3 ip_cksum
wait_counter_ge "$name" rx_drop_ip_cksum 3 10
sleep 0.2
dump_end drops
blocks "$TEST_TMP/drops.pcapng" >"$TEST_TMP/drops.blocks"
nd=$(grep -c 'comment=dropped by worker [0-9]*: rx_drop_ip_cksum' "$TEST_TMP/drops.blocks" || true)
[ "$nd" -ge 3 ] || fail "want 3 frames commented rx_drop_ip_cksum: $(cat "$TEST_TMP/drops.blocks")"
ok "frames the worker dropped are captured with the counter that counted them ($nd × rx_drop_ip_cksum)"

# ---- refusals --------------------------------------------------------------------
rc=0
out=$("$DUMP" -n "$name" 'tcp port' 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -q "can't parse filter expression" <<<"$out" || fail "bad filter: exit $rc: $out"
rc=0
out=$("$DUMP" -n "no-such-$$" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "no dpsock instance called 'no-such-$$'" <<<"$out" || fail "no instance: exit $rc: $out"
rc=0
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$DUMP" -n "$name" 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "capturing is root's" <<<"$out" || fail "as nobody: exit $rc: $out"
for i in 1 2 3 4; do dump_start "full$i" -w /dev/null; done
rc=0
out=$("$DUMP" -n "$name" -w /dev/null 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "all 4 capture sessions of the instance are taken" <<<"$out" || fail "a fifth capture: exit $rc: $out"
kill -KILL "${DUMP_PID[full1]}"
wait "${DUMP_PID[full1]}" 2>/dev/null || true
# the instance sees the owner gone at its next control round (100 ms)
back=0
for t in 1 2 3 4 5 6 7 8 9 10; do
	if dump_try back -w /dev/null; then
		back=$t
		dump_end back
		break
	fi
	sleep 0.2
done
[ "$back" != 0 ] || fail "the session of a killed capture was not given back: $(cat "$TEST_TMP/back.err")"
for i in 2 3 4; do dump_end "full$i"; done
ok "refused with a message: a bad filter (2), no instance (1), not root (1), a fifth session (1); a killed capture's session comes back"

# ---- dpsockd stops under a capture ---------------------------------------------
dump_start last -w "$TEST_TMP/last.pcapng"
in_b ping -c 1 -W 2 "$A" >/dev/null || fail "ping from B unanswered"
preload_daemon_stop
dump_end last ""
[ ! -e "/dev/shm/dpsock.$name.capture" ] || fail "the capture segment outlived dpsockd"
blocks "$TEST_TMP/last.pcapng" >/dev/null
td "$TEST_TMP/last.pcapng" >"$TEST_TMP/last.txt"
grep -q "ICMP echo reply" "$TEST_TMP/last.txt" || fail "the capture cut by dpsockd's stop lost its frames: $(cat "$TEST_TMP/last.txt")"
ok "dpsockd's stop ends a capture with a whole file ($(wc -l <"$TEST_TMP/last.txt") frames); its segment is gone"

# ---- DPDK's dpdk-dumpcap, beside it -----------------------------------------------
free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
if ! command -v dpdk-dumpcap >/dev/null; then
	note "dpdk-dumpcap part not run: no dpdk-dumpcap (Debian's dpdk-dev)"
elif [ "${free:-0}" -lt 256 ]; then
	note "dpdk-dumpcap part not run: ${free:-0} free hugepages (a multi-process EAL needs them)"
else
	conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];' "runtime_dir = \"$TEST_TMP\";")
	# shellcheck disable=SC2046
	dpsockd_start "$name" "$conf" --proc-type primary \
		$(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name")
	wait_until 10 test -S "$TEST_TMP/$name.sock"
	grep -q "dpdk-dumpcap may attach too" "$DPSOCKD_LOG" ||
		fail "dpsockd --proc-type primary does not offer dpdk-dumpcap: $(grep capture "$DPSOCKD_LOG")"
	in_b ping -i 0.2 -c 50 "$A" >/dev/null 2>&1 &
	pingpid=$!
	on_exit "kill $pingpid 2>/dev/null; true"
	rc=0
	timeout 30 dpdk-dumpcap --file-prefix "$name" -i 0 -c 4 -w "$TEST_TMP/dumpcap.pcapng" \
		>"$TEST_TMP/dumpcap.log" 2>&1 || rc=$?
	kill "$pingpid" 2>/dev/null || true
	[ "$rc" = 0 ] || fail "dpdk-dumpcap exited $rc: $(tail -n 5 "$TEST_TMP/dumpcap.log")"
	td "$TEST_TMP/dumpcap.pcapng" >"$TEST_TMP/dumpcap.txt"
	grep -q "ICMP echo request" "$TEST_TMP/dumpcap.txt" && grep -q "ICMP echo reply" "$TEST_TMP/dumpcap.txt" ||
		fail "dpdk-dumpcap's file lacks the ping: $(cat "$TEST_TMP/dumpcap.txt")"
	dpsockd_stop_clean
	ok "dpdk-dumpcap attaches to dpsockd --proc-type primary: $(wc -l <"$TEST_TMP/dumpcap.txt") frames, requests and replies"
fi
pass
