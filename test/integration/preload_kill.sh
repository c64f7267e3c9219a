#!/usr/bin/env bash
# Failures around preloaded programs: a client killed with open connections,
# and dpsockd going away under blocked calls. The programs are python3
# scripts (unmodified CPython) under libdpsock_preload.so in namespace A;
# the Linux peer is python3 in namespace B.
#
# Part 1, kill -9 of a preloaded server holding 4 connections:
#   - the peer, blocked in recv() on each, gets ConnectionResetError (RST)
#     on all 4, within 5 s of the kill;
#   - dpsockd stays up and drops the group's connections (tcp_conns back to
#     0) and its listener: the same port can be listened on again at once,
#     and the next preloaded server serves the next client (echo, then a
#     clean close: the peer reads EOF).
# Part 1b, a preloaded sender that writes 8 MiB, close()s and exits at once
# (its tx FIFO still holding data), to a Linux peer that pauses after 7 MiB:
# the peer reads all of it (sha256), then EOF, not RST; the same for a
# sender that exit()s without closing (the kernel closes a process's
# sockets in order at exit), and 500 UDP datagrams sent just before exit()
# all arrive.
# Part 2, dpsockd stopped under blocked preloaded calls, once with SIGTERM
# (clean stop: dpsockd exits 0) and once with SIGKILL:
#   - a preloaded process blocked in accept() gets ECONNABORTED, one blocked
#     in recv() on a connection to the peer gets ECONNRESET
#     (docs/preload.md, "Errors the application sees"), within 5 s; neither
#     hangs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_preload
name=$TEST_NAME
test_topo_up 107
preload_daemon_start "$name"
port=9000

# srv.py hold|echo ADDR PORT: hold: accept 4 connections, answer each
# "hello", print "held 4", then sleep (never reads again); echo: accept 1,
# echo what it reads once, close, exit 0.
cat >"$TEST_TMP/srv.py" <<'PY'
import socket, sys, time
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, port))
l.listen(16)
print("listening", flush=True)
if mode == "hold":
    held = []
    for _ in range(4):
        c, _ = l.accept()
        if c.recv(5) != b"hello":
            sys.exit("bad hello")
        c.sendall(b"hello")
        held.append(c)
    print("held 4", flush=True)
    time.sleep(600)
else:
    c, _ = l.accept()
    c.sendall(c.recv(100))
    c.close()
    print("echoed", flush=True)
PY
# cli.py hold|echo ADDR PORT (in B): hold: open 4 connections, hello each,
# then send bytes the server never reads and wait in recv() (10 s) on each:
# prints "connected", then "reset N eof N timeout N ms MS" (MS: from the
# first recv to the last outcome). echo: one round trip, then EOF expected.
cat >"$TEST_TMP/cli.py" <<'PY'
import socket, sys, time
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "echo":
    c = socket.create_connection((addr, port), timeout=10)
    c.sendall(b"ping-after-kill")
    got = b""
    while len(got) < 15:
        d = c.recv(100)
        if not d:
            break
        got += d
    if got != b"ping-after-kill":
        sys.exit("FAIL: echo got %r" % got)
    if c.recv(100) != b"":
        sys.exit("FAIL: no EOF after the echo")
    print("echo ok, eof")
    sys.exit(0)
cs = []
for _ in range(4):
    c = socket.create_connection((addr, port), timeout=10)
    c.sendall(b"hello")
    if c.recv(5) != b"hello":
        sys.exit("FAIL: no hello back")
    c.sendall(b"unread")
    cs.append(c)
print("connected", flush=True)
res = {"reset": 0, "eof": 0, "timeout": 0}
t0 = time.monotonic()
for c in cs:
    try:
        d = c.recv(100)
        res["eof" if not d else "data"] = res.get("eof" if not d else "data", 0) + 1
    except ConnectionResetError:
        res["reset"] += 1
    except socket.timeout:
        res["timeout"] += 1
print("reset %d eof %d timeout %d ms %d" % (res["reset"], res["eof"], res["timeout"],
      (time.monotonic() - t0) * 1000), flush=True)
PY

# ---- part 1: kill -9 of a preloaded server ----------------------------------
preload_start srv1 python3 "$TEST_TMP/srv.py" hold "$TOPO_ADDR_A" "$port"
srv=$PRELOAD_PID
wait_until 20 grep -q listening "$TEST_TMP/srv1.log"
peer_start cli1 python3 "$TEST_TMP/cli.py" hold "$TOPO_ADDR_A" "$port"
wait_until 20 grep -q 'held 4' "$TEST_TMP/srv1.log"
wait_until 10 grep -q connected "$TEST_TMP/cli1.log"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	conns=$(preload_stat tcp_conns)
	[ "$conns" -ge 4 ] || fail "4 connections held, dpsockd shows tcp_conns $conns: not offloaded?"
	preload_show_clients
fi
sleep 0.3 # the peer is in recv()
kill -KILL "$srv"
rc=0
preload_wait cli1 15 || rc=$?
res=$(grep '^reset' "$TEST_TMP/cli1.log") || fail "peer client: $(tail -n 2 "$TEST_TMP/cli1.log" | tr '\n' ' ')"
read -r _ nreset _ _ _ _ _ ms <<<"$res"
[ "$nreset" = 4 ] || fail "after kill -9 the peer saw: $res (want 4 resets)"
[ "$ms" -lt 5000 ] || fail "the resets took $ms ms"
ok "kill -9 of the preloaded server: the peer got RST on all 4 connections within $ms ms"
preload_wait srv1 5 || true

if [ "$PRELOAD_KERNEL" != 1 ]; then
	kill -0 "$DPSOCKD_PID" 2>/dev/null || fail "dpsockd died with its client"
	wait_until 10 test "$(preload_stat tcp_conns)" -eq 0
	ok "dpsockd up, the dead client's connections are gone (tcp_conns 0)"
fi
acc0=$(preload_stat tcp_accepted)
preload_start srv2 python3 "$TEST_TMP/srv.py" echo "$TOPO_ADDR_A" "$port"
wait_until 20 grep -q listening "$TEST_TMP/srv2.log"
out=$(timeout 20 ip netns exec "$TOPO_NS_B" python3 "$TEST_TMP/cli.py" echo "$TOPO_ADDR_A" "$port" 2>&1) ||
	fail "next client: $out"
rc=0
preload_wait srv2 10 || rc=$?
[ "$rc" -eq 0 ] || fail "the next preloaded server exited with $rc: $(tail -n 3 "$TEST_TMP/srv2.log" | tr '\n' ' ')"
preload_offload_ge "$name" tcp_accepted $((acc0 + 1)) 5
ok "the same port listened on again; the next preloaded server served the next client ($out)"

# A preloaded sender that writes 8 MiB, closes and exits at once, to a peer
# that pauses for 1.5 s after 7 MiB: what its tx FIFO still held when it
# exited must reach the peer, then a FIN (the kernel sends what a program
# wrote before close() and exit; its sockets closing at exit are orderly).
cat >"$TEST_TMP/sink.py" <<'PY'
import hashlib, socket, sys, time
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
# a small window: while this peer pauses, the sender's last MiB waits in
# dpsockd (its tx FIFO), not in this kernel's buffer
l.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(1)
print("listening", flush=True)
c, _ = l.accept()
h, n = hashlib.sha256(), 0
try:
    while True:
        if n == 7 << 20:
            time.sleep(1.5) # the sender closes and exits meanwhile
        d = c.recv(min(65536, (7 << 20) - n) if n < 7 << 20 else 65536)
        if not d:
            break
        h.update(d)
        n += len(d)
    print("eof %d %s" % (n, h.hexdigest()), flush=True)
except ConnectionResetError:
    print("reset after %d" % n, flush=True)
PY
# send.py close|exit ADDR PORT: close() then exit, or exit() without
# closing: libc's exit() straight from ctypes, so that Python closes
# nothing itself (a C program that exits with its sockets open); the kernel
# closes them in order either way.
cat >"$TEST_TMP/send.py" <<'PY'
import ctypes, socket, sys
c = socket.create_connection((sys.argv[2], int(sys.argv[3])), timeout=30)
chunk = bytes(range(256)) * 4096
for _ in range(8):
    c.sendall(chunk)
print("sent", flush=True)
if sys.argv[1] == "close":
    c.close()
else:
    ctypes.CDLL(None).exit(0)
PY
want=$(python3 -c 'import hashlib; print("eof %d %s" % (8 << 20, hashlib.sha256(bytes(range(256)) * 4096 * 8).hexdigest()))')
for mode in close exit; do
	peer_start sink python3 "$TEST_TMP/sink.py" "$TOPO_ADDR_B" 9101
	wait_until 10 grep -q listening "$TEST_TMP/sink.log"
	preload_start send python3 "$TEST_TMP/send.py" "$mode" "$TOPO_ADDR_B" 9101
	rc=0
	preload_wait send 30 || rc=$?
	[ "$rc" -eq 0 ] || fail "the preloaded sender ($mode) exited with $rc: $(tail -n 3 "$TEST_TMP/send.log" | tr '\n' ' ')"
	preload_wait sink 30 || fail "the peer: $(tail -n 2 "$TEST_TMP/sink.log" | tr '\n' ' ')"
	got=$(grep -E '^(eof|reset)' "$TEST_TMP/sink.log") || fail "the peer printed no outcome"
	[ "$got" = "$want" ] || fail "$mode: the peer got '$got', want '$want'"
	if [ "$PRELOAD_KERNEL" != 1 ]; then
		wait_until 10 test "$(preload_stat tcp_conns)" -eq 0
	fi
	case $mode in
	close) ok "a preloaded sender that closed and exited at once: the peer read all 8 MiB (sha256 equal), then EOF" ;;
	exit) ok "a preloaded sender that exited without closing: the peer read all 8 MiB (sha256 equal), then EOF, as from the kernel" ;;
	esac
done

# UDP: 500 datagrams, then exit() without closing: every one reaches the
# peer (the kernel sends a datagram before sendto returns; dpsockd's tx
# FIFO must not lose the last ones when the program's group ends).
cat >"$TEST_TMP/udp_recv.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
s.bind((sys.argv[1], int(sys.argv[2])))
print("listening", flush=True)
s.settimeout(3)
n = 0
try:
    while True:
        s.recv(2048)
        n += 1
except socket.timeout:
    pass
print("got %d" % n, flush=True)
PY
cat >"$TEST_TMP/udp_send.py" <<'PY'
import ctypes, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(500):
    s.sendto(b"%04d" % i + bytes(996), (sys.argv[1], int(sys.argv[2])))
ctypes.CDLL(None).exit(0)
PY
peer_start urecv python3 "$TEST_TMP/udp_recv.py" "$TOPO_ADDR_B" 9102
wait_until 10 grep -q listening "$TEST_TMP/urecv.log"
preload_run python3 "$TEST_TMP/udp_send.py" "$TOPO_ADDR_B" 9102 || fail "the preloaded UDP sender failed"
preload_wait urecv 30 || fail "the UDP peer: $(tail -n 2 "$TEST_TMP/urecv.log" | tr '\n' ' ')"
got=$(grep '^got' "$TEST_TMP/urecv.log")
[ "$got" = "got 500" ] || fail "UDP, exit() without closing: the peer $got of 500 datagrams"
ok "a preloaded UDP sender that exited without closing: all 500 datagrams reached the peer"

if [ "$PRELOAD_KERNEL" = 1 ]; then
	pass "kernel self-check of part 1 (part 2 needs dpsockd)"
fi

# ---- part 2: dpsockd goes away under blocked calls ------------------------------
# blk.py accept|recv ADDR PORT: prints "ready", blocks, then prints the
# outcome: "error ERRNO_NAME MS" or "returned ..." (MS: from "ready").
cat >"$TEST_TMP/blk.py" <<'PY'
import errno, socket, sys, time
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "accept":
    s = socket.socket()
    s.bind((addr, port))
    s.listen(4)
else:
    s = socket.create_connection((addr, port), timeout=None)
print("ready", flush=True)
t0 = time.monotonic()
try:
    r = s.accept() if mode == "accept" else s.recv(100)
    print("returned %r" % (r,), flush=True)
except OSError as e:
    print("error %s %d" % (errno.errorcode.get(e.errno, str(e.errno)),
          (time.monotonic() - t0) * 1000), flush=True)
PY
peer_start holdsrv python3 "$DPSOCK_SRC/test/tools/hold_server.py" "$TOPO_ADDR_B" 9100
wait_until 10 grep -q listening "$TEST_TMP/holdsrv.log"

for sig in TERM KILL; do
	if [ "$sig" = KILL ]; then
		preload_daemon_start "$(unique_name k)"
	fi
	preload_start "acc-$sig" python3 "$TEST_TMP/blk.py" accept "$TOPO_ADDR_A" 9200
	preload_start "rcv-$sig" python3 "$TEST_TMP/blk.py" recv "$TOPO_ADDR_B" 9100
	wait_until 20 grep -q ready "$TEST_TMP/acc-$sig.log"
	wait_until 20 grep -q ready "$TEST_TMP/rcv-$sig.log"
	sleep 0.5 # past the spin budget: asleep in the blocking call
	rc=0
	dpsockd_stop "$PRELOAD_NAME" "$sig" || rc=$?
	if [ "$sig" = TERM ]; then
		[ "$rc" -eq 0 ] || fail "dpsockd (SIGTERM, clients blocked) exited with status $rc"
	fi
	for p in acc rcv; do
		preload_wait "$p-$sig" 5 >/dev/null ||
			true # the program's own status does not matter: its output does
		line=$(grep -E '^(error|returned)' "$TEST_TMP/$p-$sig.log") ||
			fail "SIG$sig: blocked $p printed no outcome: $(tail -n 3 "$TEST_TMP/$p-$sig.log" | tr '\n' ' ')"
		want=ECONNRESET what=recv
		[ "$p" = acc ] && want=ECONNABORTED what=accept
		read -r kind err ms <<<"$line"
		[ "$kind" = error ] || fail "dpsockd SIG$sig: the blocked $what returned instead of failing: $line"
		[ "$err" = "$want" ] || fail "dpsockd SIG$sig: the blocked $what failed with $err; docs/preload.md says $want"
		ok "dpsockd SIG$sig: the blocked $what failed with $err after $ms ms"
	done
done
pass "kill -9 of a client: RST to the peer, dpsockd serves the next one; dpsockd stopped or killed: blocked calls fail, never hang"
