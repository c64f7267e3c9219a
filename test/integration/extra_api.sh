#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The rest of the extra API under the preload (test/tools/xapi.c), against
# Linux peers in namespace B:
#   - TCP zero-copy: 3 MB of a known pattern from the peer, read by
#     recvfrom_zcopy (chunks held, freed out of order, a double free
#     refused) mixed with plain recv; every byte checked; send_dummy before
#     the reply must not reach the peer (it reads exactly "ok 3000000");
#     EOF through recvfrom_zcopy; dump_fd_stats writes the socket's line
#     and the worker's counters, listed under the program's pid and fd;
#   - completion polling: a listener joins the thread's set by itself, 4
#     connections are accepted through completions, their 200 kB each
#     arrive as packet completions (checked), and their FINs as EPOLLRDHUP;
#   - add_conf_rule ("use os", "use vma", application-id blocks, bad rules)
#     and thread_offload decide what the next sockets are;
#   - a receive callback that drops all but the last of 2000 queued
#     datagrams: poll runs it over all of them and wakes for the kept one;
#   - dpsock-stat shows the preloaded sockets with their program's pid and
#     fd (-v sockets, -S), counts their poll hits and misses (select, epoll);
#     takes vma_stats' options (-p of a preloaded program: its sockets
#     only, -v 1..5, -V, -c 0 until dpsockd stops); the pools are back at
#     their start levels when the programs are gone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_preload
require_tools xapi
[ "$PRELOAD_KERNEL" != 1 ] || skip "the extra API exists only under the shim"
XAPI=$(dpsock_tool xapi)
name=$TEST_NAME

test_topo_up 114
preload_daemon_start "$name"
# the pool's level at rest: a baseline, not exact (an AF_XDP port's fill
# ring and TX completions move it by a frame or two as stray frames come
# and go); the exact check is dpsockd's own at the stop: every mbuf back
pool0=$(stat_settled "$name" port.0.mbufs_free) || note "port.0.mbufs_free still moving after 10 s: baseline $pool0"
lwip0=$(stat_sum "$name" lwip_mem_bytes)

# send PORT BYTES [CONNS]: connect CONNS (1) times from B, send BYTES of the
# pattern on each, half-close, print what comes back on each.
cat >"$TEST_TMP/send.py" <<'PYEOF'
import socket, sys, threading
host, port, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
conns = int(sys.argv[4]) if len(sys.argv) > 4 else 1
data = bytes(((i * 7 + i // 251) & 0xff) for i in range(total))
out = [None] * conns
def one(k):
    s = socket.create_connection((host, port), timeout=30)
    for o in range(0, total, 65536):
        s.sendall(data[o:o + 65536])
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
    out[k] = got.decode(errors="replace").strip()
    s.close()
ts = [threading.Thread(target=one, args=(k,)) for k in range(conns)]
for t in ts: t.start()
for t in ts: t.join()
print("|".join(out))
PYEOF

# ---- TCP zero-copy ---------------------------------------------------------
preload_start xtcp "$XAPI" tcp 7300 3000000
wait_until 10 grep -q "xapi: listening" "$TEST_TMP/xtcp.log"
got=$(in_b python3 "$TEST_TMP/send.py" "$TOPO_ADDR_A" 7300 3000000)
[ "$got" = "ok 3000000" ] || fail "tcp: the peer read '$got' (send_dummy must send nothing)"
preload_wait xtcp 30 || fail "tcp: $(tail -n 2 "$TEST_TMP/xtcp.log" | tr '\n' ' ')"
line=$(grep '^xapi: ok tcp' "$TEST_TMP/xtcp.log") || fail "tcp: no result"
ok "$line"
pid=$(sed -n 's/^dpsock.shim xapi\[\([0-9]*\)\].*fd [0-9]*: TCP connection.*/\1/p' "$TEST_TMP"/shim-*.log | head -n 1)
[ -n "$pid" ] || fail "dump_fd_stats: no 'TCP connection' line in the shim's log"
grep -q "xapi\[$pid\].*fd [0-9]* worker [0-9]*: rx_bytes=3000000 " "$TEST_TMP/shim-$pid.log" ||
	fail "dump_fd_stats: no worker counters with rx_bytes=3000000 ($(grep -c worker "$TEST_TMP/shim-$pid.log") lines)"
ok "dump_fd_stats: the shim's view and the worker's counters (rx_bytes=3000000)"

# ---- completion polling ----------------------------------------------------
preload_start xcomp "$XAPI" comp 7310 4 200000
wait_until 10 grep -q "xapi: listening" "$TEST_TMP/xcomp.log"
got=$(in_b python3 "$TEST_TMP/send.py" "$TOPO_ADDR_A" 7310 200000 4)
[ "$got" = "ok 200000|ok 200000|ok 200000|ok 200000" ] || fail "comp: the peers read '$got'"
preload_wait xcomp 30 || fail "comp: $(tail -n 2 "$TEST_TMP/xcomp.log" | tr '\n' ' ')"
line=$(grep '^xapi: ok comp' "$TEST_TMP/xcomp.log") || fail "comp: no result"
ok "$line"

# ---- rules and thread offload ----------------------------------------------
preload_run "$XAPI" rules 7320 >"$TEST_TMP/xrules.log" 2>&1 || fail "rules: $(tail -n 2 "$TEST_TMP/xrules.log" | tr '\n' ' ')"
ok "$(grep '^xapi: ok rules' "$TEST_TMP/xrules.log")"

# ---- a receive callback over a queue longer than one pass ------------------
# 2000 datagrams wait in the FIFO; the callback drops all but the last: poll
# (no spinning: one look, arm, one look, sleep) must run it over all of them
# and wake for the one it kept
PRELOAD_ENV=(DPSOCK_SELECT_POLL=0)
preload_start xcb "$XAPI" cbfilter 7340 2000
PRELOAD_ENV=()
wait_until 10 grep -q "^xapi: ready fd" "$TEST_TMP/xcb.log"
cfd=$(sed -n 's/^xapi: ready fd //p' "$TEST_TMP/xcb.log")
in_b python3 - "$TOPO_ADDR_A" <<'PYEOF' || fail "cbfilter: the peer could not send"
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(2000):
    s.sendto(b"%d" % i, (sys.argv[1], 7340))
    if i % 20 == 19:
        time.sleep(0.001)
PYEOF
_arrived() {
	"$DPSOCK_STAT" -n "$name" -S "$PRELOAD_PID:$cfd" -j 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)["fds"]
n = d[0]["rx_packets"] if d else 0
print(n)
sys.exit(0 if n == 2000 else 1)'
}
poll_until 10 _arrived || fail "cbfilter: the socket got ${POLL_OUTPUT:-no} datagrams of 2000"
kill -USR1 "$PRELOAD_PID"
preload_wait xcb 30 || fail "cbfilter: $(tail -n 2 "$TEST_TMP/xcb.log" | tr '\n' ' ')"
ok "$(grep '^xapi: ok cbfilter' "$TEST_TMP/xcb.log")"

# ---- dpsock-stat: pid and fd of preloaded sockets, poll counters -----------
cat >"$TEST_TMP/srv.py" <<'PYEOF'
import select, socket, sys, time
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", 7330))
e = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
e.bind(("0.0.0.0", 7331))
ep = select.epoll()
ep.register(e.fileno(), select.EPOLLIN)
print("fd %d %d" % (u.fileno(), e.fileno()), flush=True)
n = m = 0
while n < 20 or m < 20:
    r, _, _ = select.select([u], [], [], 0.01)    # hits and misses
    if r:
        d, a = u.recvfrom(2048)
        u.sendto(d, a)
        n += 1
    for _ in ep.poll(0.01):                     # level-triggered: a look after each echo
        d, a = e.recvfrom(2048)
        e.sendto(d, a)
        m += 1
time.sleep(30)
PYEOF
preload_start xsrv python3 "$TEST_TMP/srv.py"
wait_until 10 grep -q "^fd " "$TEST_TMP/xsrv.log"
read -r sfd efd < <(sed -n 's/^fd //p' "$TEST_TMP/xsrv.log")
in_b python3 - "$TOPO_ADDR_A" <<'PYEOF' || fail "udp echo from the python server"
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
for i in range(20):
    for port in (7330, 7331):
        s.sendto(b"x%d" % i, (sys.argv[1], port))
        s.recvfrom(100)
    time.sleep(0.02)
PYEOF
_listed() {
	"$DPSOCK_STAT" -n "$name" -v sockets 2>/dev/null | grep -q "python3\[$PRELOAD_PID\] fd $sfd"
}
wait_until 5 _listed
ok "dpsock-stat -v sockets: $("$DPSOCK_STAT" -n "$name" -v sockets | grep -m1 "python3\[$PRELOAD_PID\]" | tr -s ' ')"
# _polled PID:FD MIN_HITS MIN_MISSES
_polled() {
	local j
	j=$("$DPSOCK_STAT" -n "$name" -S "$1" -j 2>/dev/null) || return 1
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
s = d["fds"][0]
print(s["poll_hits"], s["poll_misses"])
sys.exit(0 if s["poll_hits"] >= int(sys.argv[2]) and s["poll_misses"] >= int(sys.argv[3]) else 1)' "$j" "$2" "$3"
}
poll_until 5 _polled "$PRELOAD_PID:$sfd" 20 20 || fail "select: poll hits/misses not counted: ${POLL_OUTPUT:-nothing}"
ok "dpsock-stat -S $PRELOAD_PID:$sfd (select): poll hits and misses $POLL_OUTPUT"
# epoll: a hit per datagram; a miss when the level-triggered socket is looked
# at again after its datagram was read (at least once: the peer's next one
# may come first when this machine is busy)
poll_until 5 _polled "$PRELOAD_PID:$efd" 20 1 || fail "epoll: poll hits/misses not counted: ${POLL_OUTPUT:-nothing}"
ok "dpsock-stat -S $PRELOAD_PID:$efd (epoll): poll hits and misses $POLL_OUTPUT"

# ---- dpsock-stat: vma_stats' options ----------------------------------------
# -p of a preloaded program: the instance it is attached to, its sockets
# only (another program's socket is in the table too)
srv_pid=$PRELOAD_PID
preload_start xother python3 -c '
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 7335))
print("bound", flush=True)
time.sleep(60)'
wait_until 10 grep -q "^bound" "$TEST_TMP/xother.log"
_other_listed() { "$DPSOCK_STAT" -n "$name" -v sockets -s port=7335 | grep -q ':7335 '; }
wait_until 5 _other_listed
PRELOAD_PID=$srv_pid
"$DPSOCK_STAT" -p "$PRELOAD_PID" -v 5 -j >"$TEST_TMP/p.json" || fail "dpsock-stat -p $PRELOAD_PID failed"
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
own = sorted({(s["owner_pid"], s["fd"]) for s in d["sockets"]})
print(d["name"], d["view"], " ".join("%d:%d" % o for o in own))' "$TEST_TMP/p.json" "$PRELOAD_PID")
[ "$got" = "$name sockets $PRELOAD_PID:$sfd $PRELOAD_PID:$efd" ] ||
	fail "dpsock-stat -p $PRELOAD_PID -v 5: '$got' (expected its two sockets only)"
ok "dpsock-stat -p of a preloaded program: $got"
preload_stop xother || true
# -v 1..5 are vma_stats' levels: the views basic .. sockets
for v in 1:basic 2:extra 3:full 4:mc 5:sockets; do
	got=$("$DPSOCK_STAT" -n "$name" -v "${v%%:*}" -j |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["view"])') ||
		fail "dpsock-stat -v ${v%%:*} failed"
	[ "$got" = "${v#*:}" ] || fail "dpsock-stat -v ${v%%:*}: view '$got', expected ${v#*:}"
done
rc=0
"$DPSOCK_STAT" -n "$name" -v 6 >/dev/null 2>"$TEST_TMP/v6.err" || rc=$?
[ "$rc" = 2 ] && grep -q '1..5' "$TEST_TMP/v6.err" || fail "dpsock-stat -v 6: exit $rc, $(cat "$TEST_TMP/v6.err")"
# -V: the tool's version and the segment layout it reads
ver=$(sed -n "s/^ *version: '\([^']*\)',/\1/p" "$DPSOCK_SRC/meson.build" | head -n 1)
out=$("$DPSOCK_STAT" -V)
grep -qxE "dpsock-stat ${ver//./\\.} \(stats segment version [0-9]+\)" <<<"$out" ||
	fail "dpsock-stat -V: '$out' (project version '$ver')"
ok "dpsock-stat -v 1..5 = basic, extra, full, mc, sockets; -v 6 refused; -V: $out"
preload_stop xsrv || true

_levels_back() {
	[ "$(stat_get "$name" port.0.mbufs_free)" -ge "$pool0" ] &&
		[ "$(stat_sum "$name" lwip_mem_bytes)" = "$lwip0" ]
}
poll_until 10 _levels_back ||
	fail "levels not back: mbufs_free $(stat_get "$name" port.0.mbufs_free) (start $pool0), lwip_mem_bytes $(stat_sum "$name" lwip_mem_bytes) (start $lwip0)"
ok "pool and lwIP memory back at their start levels"

# -c 0: samples until interrupted, here until dpsockd stops (then exit 0)
"$DPSOCK_STAT" -n "$name" -v 1 -j -c 0 -i 0.1 >"$TEST_TMP/c0.out" 2>&1 &
c0=$!
_samples() { [ "$(grep -c '"view": "basic"' "$TEST_TMP/c0.out")" -ge 5 ]; }
wait_until 10 _samples
preload_daemon_stop
rc=0
wait "$c0" || rc=$?
[ "$rc" = 0 ] && tail -n 1 "$TEST_TMP/c0.out" | grep -q "stopped" ||
	fail "dpsock-stat -c 0: exit $rc when dpsockd stopped: $(tail -n 1 "$TEST_TMP/c0.out")"
ok "dpsock-stat -c 0: $(grep -c '"view": "basic"' "$TEST_TMP/c0.out") samples until dpsockd stopped"
pass "extra API: TCP zero-copy, completions, rules, thread offload, fd stats, dummy send"
