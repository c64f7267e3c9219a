#!/usr/bin/env bash
# dpsockd against raw preload clients (test/tools/pl_hostile, no shim): a
# hostile client cannot hurt the daemon or another client, and a client that
# dies leaves no connection behind.
#
#   1. A well-behaved client echoes TCP for a Linux peer (namespace B).
#   2. A hostile client sends unknown ops, out-of-range, foreign, stale and
#      free slot numbers and bogus waiter ids (each rejection checked), a
#      burst of random commands, then corrupts a command ring index: dpsockd
#      hangs up on it, counts it dropped (pl_clients_dropped), stays up, and
#      the first client's echo still works.
#   3. dpsock-stat -v clients lists the attached client.
#   4. A client killed with SIGKILL while it holds a connection: the Linux
#      peer sees RST.
#   5. A busy daemon: dpsockd stopped (SIGSTOP) and its control socket's
#      backlog filled; a preloaded program taking SIGALRM every 5 ms (a
#      handler without SA_RESTART, as Python's) makes its first socket:
#      the shim's connect to dpsockd blocks and is interrupted again and
#      again; once dpsockd runs (SIGCONT) the program attaches and its TCP
#      connection to a Linux peer is offloaded (tcp_connected +1).
#   6. SIGTERM: the remaining client sees the segment STOPPED and exits.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools dpsockd dpsock-stat pl_hostile
PLH=$(dpsock_tool pl_hostile)
name=$TEST_NAME
test_topo_up 90
preload_daemon_start "$name" 'preload = { slots = 64; rx_fifo_kb = 64; tx_fifo_kb = 64; max_groups = 8; max_threads = 8; };'
sock=$TEST_TMP/$name.sock

# echo_check PORT BYTES: a Linux client in B sends BYTES and must get them back.
echo_check() {
	in_b python3 - "$TOPO_ADDR_A" "$1" "$2" <<'PY'
import os, socket, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = os.urandom(n)
s = socket.create_connection((host, port), timeout=10)
s.settimeout(10)
got = bytearray()
sent = 0
while len(got) < n:
    if sent < n:
        sent += s.send(data[sent:sent + 65536])
    try:
        b = s.recv(65536)
    except socket.timeout:
        sys.exit("timeout: sent %d, got %d" % (sent, len(got)))
    if not b:
        sys.exit("EOF after %d bytes" % len(got))
    got += b
s.close()
sys.exit(0 if bytes(got) == data else "echoed data differs")
PY
}

# ---- 1. a well-behaved client ---------------------------------------------
# (the raw clients run through peer_start, in namespace B: the control socket
# is a file and the segment is shared memory, so the namespace does not matter)
peer_start good "$PLH" "$sock" echo 7000
good_pid=$PEER_PID
wait_until 10 grep -q '^listening' "$TEST_TMP/good.log"
echo_check 7000 300000 || fail "echo through the raw client failed"
ok "raw client echoes 300000 bytes for a Linux peer"

# ---- 2. a hostile one -------------------------------------------------------
rej0=$(stat_sum "$name" pl_rejected)
peer_start bad "$PLH" "$sock" hostile 7100
bad_pid=$PEER_PID
wait_until 10 grep -q 'waiting for a connection' "$TEST_TMP/bad.log"
in_b timeout 5 bash -c "exec 3<>/dev/tcp/$TOPO_ADDR_A/7100" 2>/dev/null || true
preload_wait bad 30 || fail "hostile client: $(tail -n 3 "$TEST_TMP/bad.log" | tr '\n' ' ')"
grep -q 'disconnected by dpsockd' "$TEST_TMP/bad.log" || fail "hostile client was not disconnected"
n=$(grep -c 'rejected as expected' "$TEST_TMP/bad.log")
[ "$n" -ge 9 ] || fail "only $n rejections checked"
kill -0 "$DPSOCKD_PID" 2>/dev/null || fail "dpsockd died"
wait_counter_ge "$name" pl_clients_dropped 1
r=$(stat_sum "$name" pl_rejected)
[ "$r" -ge $((rej0 + 5)) ] || fail "pl_rejected $rej0 -> $r"
ok "hostile client: $n rejections, dropped on a corrupt ring (pl_rejected $rej0 -> $r)"
echo_check 7000 100000 || fail "echo failed after the hostile client"
ok "the well-behaved client still echoes"

# ---- 3. dpsock-stat clients view ---------------------------------------------
out=$("$DPSOCK_STAT" -n "$name" -v clients) || fail "dpsock-stat -v clients: $out"
grep -q "$good_pid" <<<"$out" || fail "clients view lacks pid $good_pid: $out"
grep -q "$bad_pid" <<<"$out" && fail "clients view still lists the dropped client: $out"
ok "dpsock-stat -v clients lists the attached client"

# ---- 4. a client killed while it holds a connection ---------------------------
peer_start hold "$PLH" "$sock" hold 7200
hold_pid=$PEER_PID
wait_until 10 grep -q '^listening' "$TEST_TMP/hold.log"
in_b python3 - "$TOPO_ADDR_A" 7200 >"$TEST_TMP/rst.log" 2>&1 <<'PY' &
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.settimeout(15)
print("connected", flush=True)
try:
    b = s.recv(100)
    print("EOF" if not b else "data", flush=True)
except ConnectionResetError:
    print("RST", flush=True)
except socket.timeout:
    print("timeout", flush=True)
PY
rst_pid=$!
on_exit "kill $rst_pid 2>/dev/null; true"
wait_until 10 grep -q '^accepted' "$TEST_TMP/hold.log"
kill -KILL "$hold_pid"
wait "$rst_pid" || true
grep -q '^RST' "$TEST_TMP/rst.log" || fail "the peer did not see RST: $(cat "$TEST_TMP/rst.log")"
ok "SIGKILLed client: its connection was reset"
echo_check 7000 10000 || fail "echo failed after the killed client"

# ---- 5. a busy daemon, a program taking signals --------------------------------
if [ -n "$PRELOAD_LIB" ] && [ "$PRELOAD_KERNEL" != 1 ]; then
	peer_start lst python3 -c 'import socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("", 7300)); l.listen(1)
print("listening", flush=True)
c, _ = l.accept(); c.settimeout(10)
print("got", c.recv(100).decode(), flush=True)'
	wait_until 10 grep -q '^listening' "$TEST_TMP/lst.log"
	conn0=$(stat_sum "$name" tcp_connected)
	kill -STOP "$DPSOCKD_PID"
	on_exit "kill -CONT $DPSOCKD_PID 2>/dev/null; true"
	# fill the backlog (the hog holds its connections until told to go)
	python3 - "$sock" >"$TEST_TMP/hog.log" 2>&1 <<'PY' &
import socket, sys, time
held = []
while True:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
    except BlockingIOError:
        break
    held.append(s)
print("held", len(held), flush=True)
time.sleep(120)
PY
	hog_pid=$!
	on_exit "kill $hog_pid 2>/dev/null; true"
	wait_until 10 grep -q '^held' "$TEST_TMP/hog.log"
	# (Python runs its handler once for signals that came while C code ran;
	# its C handler writes a byte per signal to the wakeup fd: the count)
	preload_start sig python3 -c 'import os, signal, socket, sys
r, w = os.pipe()
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
signal.signal(signal.SIGALRM, lambda sig, frame: None)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
s = socket.create_connection((sys.argv[1], 7300), timeout=20)
s.sendall(b"hello")
signal.setitimer(signal.ITIMER_REAL, 0)
os.set_blocking(r, False)
print("signals", len(os.read(r, 65536)), flush=True)' "$TOPO_ADDR_B"
	sig_pid=$PRELOAD_PID
	# the program waits for room in the backlog (the shim's connect to dpsockd)
	in_connect() { kill -0 "$sig_pid" 2>/dev/null && [ "$(cat "/proc/$sig_pid/wchan")" = unix_wait_for_peer ]; }
	poll_until 10 in_connect ||
		fail "the program did not wait for the stopped daemon in connect: $(tail -n 5 "$TEST_TMP/sig.log")"
	sleep 0.2
	kill "$hog_pid"
	kill -CONT "$DPSOCKD_PID"
	preload_wait sig 15 || fail "the program taking signals failed: $(tail -n 5 "$TEST_TMP/sig.log")"
	wait_until 10 grep -q '^got hello' "$TEST_TMP/lst.log"
	nsig=$(sed -n 's/^signals //p' "$TEST_TMP/sig.log")
	[ "${nsig:-0}" -ge 5 ] || fail "only ${nsig:-no} signals while the program waited: not the case under test"
	wait_counter_ge "$name" tcp_connected $((conn0 + 1)) 5
	ok "busy daemon: $(cat "$TEST_TMP/hog.log") pending connections; the program took $nsig signals while it waited, then attached and was offloaded (tcp_connected +1)"
else
	note "part 5 (a busy daemon) needs the preload library"
fi

# ---- 6. daemon stop ---------------------------------------------------------------
dpsockd_stop "$name" || fail "dpsockd did not stop cleanly"
preload_wait good 10 || fail "raw client exit status after the stop"
grep -q 'dpsockd stopped' "$TEST_TMP/good.log" || fail "client did not see STOPPED: $(tail -n 2 "$TEST_TMP/good.log")"
ok "SIGTERM: the client saw the segment STOPPED"
pass "hostile client dropped alone, other client unaffected; killed client reset to the peer; STOPPED seen at SIGTERM"
