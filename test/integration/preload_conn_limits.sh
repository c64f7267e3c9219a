#!/usr/bin/env bash
# The limits a preloaded server meets with many connections are the
# kernel's kind, and each says so (test/tools/limits_calls.py):
#
#   - the process's descriptor limit at accept: a Python server with 5
#     connections queued lowers RLIMIT_NOFILE so that 2 more descriptors
#     fit; accept succeeds twice, then fails with EMFILE while the third
#     connection waits; after a close that one is accepted, and once the
#     limit is raised the rest: every client gets its id echoed, nothing
#     is reset. The transcript is compared line by line with the same
#     program on Linux alone;
#   - preload.slots (its minimum, 16, one worker: the listener holds one):
#     20 connections, one after the other, from the Linux peer to a
#     preloaded echo server: the first 15 are served, the 5 beyond are
#     reset at once (ECONNREFUSED; none hangs), pl_slots_exhausted counts
#     them, dpsockd logs the limit once, naming preload.slots; once the 15
#     close, new connections are served again; and a preloaded client
#     opening 20 connections out gets 16 and then ENOBUFS for each of the
#     others (slots are per process group: this is another group).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_preload
name=$TEST_NAME
CALLS=$DPSOCK_SRC/test/tools/limits_calls.py
[ -r "$CALLS" ] || fail "missing $CALLS"

# emfile LOG RUN...: the descriptor-limit transcript, the server run by RUN
# (in_a, or preload_run) on TOPO_ADDR_A:7100, the client from B
emfile() {
	local log=$TEST_TMP/$1 ready=$TEST_TMP/ready-$1 cl
	shift
	rm -f "$ready" "$ready.queued"
	"$@" python3 "$CALLS" accept-emfile "$TOPO_ADDR_A" 7100 5 "$ready" >"$log" 2>&1 &
	local srv=$!
	wait_until 20 test -e "$ready"
	cl=$(in_b python3 "$CALLS" queue "$TOPO_ADDR_A" 7100 5 "$ready.queued" 2>&1) ||
		fail "$log: client: $cl"
	wait "$srv" || fail "$log: the server failed: $(cat "$log")"
	echo "client: $cl" >>"$log"
}

# ---- Linux alone ----------------------------------------------------------
test_topo_up 130 "${name}k"
in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
emfile emfile-linux.log in_a
grep -q 'limit+3: accept EMFILE' "$TEST_TMP/emfile-linux.log" ||
	fail "Linux did not give EMFILE: $(cat "$TEST_TMP/emfile-linux.log")"

# ---- preloaded ------------------------------------------------------------
test_topo_up 131
conf=$(dpsock_conf "$name" 'workers = [ 0 ];' "runtime_dir = \"$TEST_TMP\";" \
	'preload = { slots = 16; };')
# shellcheck disable=SC2046
dpsockd_start "$name" "$conf" $(DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$name")
wait_until 10 test -S "$TEST_TMP/$name.sock"
PRELOAD_NAME=$name
emfile emfile-preload.log preload_run
diff -u "$TEST_TMP/emfile-linux.log" "$TEST_TMP/emfile-preload.log" >"$TEST_TMP/emfile.diff" ||
	fail "accept at the descriptor limit differs from Linux's: $(cat "$TEST_TMP/emfile.diff")"
grep -q 'summary ok=5 refused=0 timeout=0' "$TEST_TMP/emfile-preload.log" ||
	fail "not every queued connection was served: $(cat "$TEST_TMP/emfile-preload.log")"
ok "accept at RLIMIT_NOFILE: EMFILE, the connection kept queued and accepted later, as on Linux ($(grep -c 'accept ok' "$TEST_TMP/emfile-preload.log") accepts)"

# the slots: an echo server (kernel_echo-like, in Python: socat forks, and a
# forked child would take its own slots) holding what it accepted
cat >"$TEST_TMP/echo.py" <<'EOF'
import selectors, socket, sys
sel = selectors.DefaultSelector()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((sys.argv[1], int(sys.argv[2])))
ls.listen(128)
ls.setblocking(False)
sel.register(ls, selectors.EVENT_READ)
print("listening", flush=True)
while True:
    for key, _ in sel.select():
        if key.fileobj is ls:
            try:
                c, _ = ls.accept()
            except BlockingIOError:
                continue
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
            continue
        try:
            d = key.fileobj.recv(4096)
        except ConnectionError:
            d = b""
        if d:
            key.fileobj.send(d)
        else:
            sel.unregister(key.fileobj)
            key.fileobj.close()
EOF
preload_start echo python3 "$TEST_TMP/echo.py" "$TOPO_ADDR_A" 7200
wait_until 20 grep -q listening "$TEST_TMP/echo.log"
ex0=$(stat_sum "$name" pl_slots_exhausted)
# 15 served and held, 5 beyond: a connection after another, each answered
# (or not) before the next
coproc HOLD { in_b python3 "$CALLS" clients "$TOPO_ADDR_A" 7200 20 60; }
hold_pid=$HOLD_PID
on_exit "kill $hold_pid 2>/dev/null; true"
summary=
while IFS= read -r -t 60 line <&"${HOLD[0]}"; do
	echo "$line" >>"$TEST_TMP/clients.log"
	case "$line" in summary*) summary=$line; break ;; esac
done
[ "$summary" = "summary ok=15 refused=5 timeout=0 wrong=0" ] ||
	fail "with 16 slots (one the listener's): $summary ($(tr '\n' ' ' <"$TEST_TMP/clients.log"))"
ex1=$(stat_sum "$name" pl_slots_exhausted)
[ "$ex1" -ge $((ex0 + 5)) ] || fail "pl_slots_exhausted rose by $((ex1 - ex0)) for 5 refusals"
n_lines=$(grep -c 'socket slots in use (preload.slots)' "$DPSOCKD_LOG" || true)
[ "$n_lines" -eq 1 ] || fail "dpsockd logged the slot limit $n_lines times: $(grep 'preload.slots' "$DPSOCKD_LOG")"
ok "16 slots: 15 connections served, 5 reset at once (pl_slots_exhausted +$((ex1 - ex0))), one log line: $(grep -o 'group [0-9]*, worker [0-9]*: all [0-9]* socket slots in use.*' "$DPSOCKD_LOG")"

# the 15 go: the slots come back
kill "$hold_pid" 2>/dev/null || true
wait "$hold_pid" 2>/dev/null || true
wait_until 20 bash -c "[ \"\$(\"$DPSOCK_STAT\" -n $name -v sockets -s state=ESTABLISHED 2>/dev/null | grep -c ':7200 ')\" -eq 0 ]"
out=$(in_b python3 "$CALLS" clients "$TOPO_ADDR_A" 7200 10 | tail -n 1)
[ "$out" = "summary ok=10 refused=0 timeout=0 wrong=0" ] || fail "after the 15 closed: $out"
ok "once the connections closed, new ones are served again"
preload_stop echo TERM || true

# a preloaded client: 16 connections out, then ENOBUFS
in_b python3 -c 'import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("0.0.0.0", 7300)); s.listen(64); print("up", flush=True); time.sleep(60)' \
	>"$TEST_TMP/peer.log" 2>&1 &
peer=$!
on_exit "kill $peer 2>/dev/null; true"
wait_until 10 grep -q up "$TEST_TMP/peer.log"
preload_run python3 "$CALLS" connects "$TOPO_ADDR_B" 7300 20 >"$TEST_TMP/connects.log" 2>&1 ||
	fail "the preloaded client failed: $(tail -n 3 "$TEST_TMP/connects.log")"
n_ok=$(grep -c ': ok$' "$TEST_TMP/connects.log" || true)
n_nobufs=$(grep -c ': ENOBUFS$' "$TEST_TMP/connects.log" || true)
[ "$n_ok" -eq 16 ] && [ "$n_nobufs" -eq 4 ] ||
	fail "20 connects with 16 slots: $n_ok ok, $n_nobufs ENOBUFS ($(tr '\n' ' ' <"$TEST_TMP/connects.log"))"
ok "a preloaded client past its group's slots: 16 connects, then ENOBUFS ($n_nobufs)"
kill "$peer" 2>/dev/null || true
dpsockd_stop_clean
pass "at the descriptor limit accept gives EMFILE and keeps the connection; past preload.slots connections are reset and connects get ENOBUFS, counted and logged once"
