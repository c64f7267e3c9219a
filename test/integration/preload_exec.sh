#!/usr/bin/env bash
# exec() of a preloaded program keeps its offloaded sockets (docs/preload.md
# "exec", docs/design.md, decision 6).
#
# Part 1, test/tools/plexec under the shim, the Linux peer is python3 in B:
#   - the peer opens two connections; plexec echoes a line on one (KEEP),
#     makes the other (DROP) close-on-exec and exec()s itself; the new image
#     finds the listener and KEEP again (plexec checks getsockname,
#     getpeername, O_NONBLOCK, and that DROP is gone);
#   - the peer streams 1 MiB of random data over KEEP, part of it written
#     while the exec happens: the echo is byte-exact;
#   - DROP, which the new image does not have, is closed for the peer with a
#     FIN (EOF), not a reset;
#   - a new connection accepted by the new image on the inherited listener
#     echoes byte-exact; both connections end with a clean FIN both ways
#     (no ConnectionResetError anywhere), plexec exits 0;
#   - dpsockd accepted the 3 connections (tcp_accepted): A's kernel has no
#     address, a kernel fallback could not have served them.
# Part 2, nginx's binary upgrade under the shim: `kill -USR2` makes the
# master fork and exec a new master that inherits the listening socket
# (NGINX environment variable); `kill -QUIT` ends the old master. A curl
# loop from B runs throughout and after: every request answers 200; the new
# master and its workers serve through dpsockd (tcp_accepted goes on).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 nginx curl
require_preload
PLEXEC=$(dpsock_tool plexec) || skip "plexec not built"
name=$TEST_NAME
test_topo_up 120
preload_daemon_start "$name"
port=9300

# ---- part 1: plexec -----------------------------------------------------------
cat >"$TEST_TMP/peer.py" <<'PY'
import os, socket, sys, threading, time
addr, port = sys.argv[1], int(sys.argv[2])
def conn():
    c = socket.create_connection((addr, port), timeout=20)
    return c
def echo(c, data, label):
    got = bytearray()
    def reader():
        while len(got) < len(data):
            b = c.recv(65536)
            if not b:
                break
            got.extend(b)
    t = threading.Thread(target=reader)
    t.start()
    for i in range(0, len(data), 4096):
        c.sendall(data[i:i + 4096])
    t.join(30)
    if bytes(got) != data:
        sys.exit("FAIL: %s: echo differs (%d of %d bytes back)" % (label, len(got), len(data)))
keep = conn()
drop = conn()
keep.sendall(b"hello before exec\n")
line = b""
while not line.endswith(b"\n"):
    b = keep.recv(100)
    if not b:
        sys.exit("FAIL: EOF before the first echo")
    line += b
if line != b"hello before exec\n":
    sys.exit("FAIL: first echo %r" % line)
print("first line echoed", flush=True)
# at once, while plexec exec()s: the data waits in dpsockd for the new image
echo(keep, os.urandom(1 << 20), "KEEP across exec")
print("KEEP: 1 MiB echoed exactly across exec", flush=True)
drop.settimeout(10)
try:
    if drop.recv(100) != b"":
        sys.exit("FAIL: data on DROP")
except ConnectionResetError:
    sys.exit("FAIL: DROP was reset, not closed")
except socket.timeout:
    sys.exit("FAIL: DROP still open 10 s after exec")
drop.close()
print("DROP: EOF (FIN) after exec", flush=True)
new = conn()
echo(new, os.urandom(256 * 1024), "new connection on the inherited listener")
print("NEW: 256 KiB echoed exactly", flush=True)
for c, label in ((new, "NEW"), (keep, "KEEP")):
    c.shutdown(socket.SHUT_WR)
    try:
        if c.recv(100) != b"":
            sys.exit("FAIL: %s: data after shutdown" % label)
    except ConnectionResetError:
        sys.exit("FAIL: %s: reset instead of a clean close" % label)
    c.close()
print("clean close, no reset", flush=True)
PY

acc0=$(preload_stat tcp_accepted)
PRELOAD_ENV=(DPSOCK_LOG_LEVEL=info)
preload_start plexec "$PLEXEC" "$TOPO_ADDR_A" "$port"
PRELOAD_ENV=()
wait_until 10 grep -q listening "$TEST_TMP/plexec.log"
rc=0
in_b timeout 60 python3 "$TEST_TMP/peer.py" "$TOPO_ADDR_A" "$port" >"$TEST_TMP/peer.out" 2>&1 || rc=$?
sed 's/^/   peer: /' "$TEST_TMP/peer.out"
sed 's/^/   plexec: /' "$TEST_TMP/plexec.log"
[ "$rc" -eq 0 ] || fail "the peer failed (status $rc)"
rc=0
preload_wait plexec 15 || rc=$?
[ "$rc" -eq 0 ] || fail "plexec exited with status $rc"
grep -q "^exec'd" "$TEST_TMP/plexec.log" || fail "plexec's new image did not run"
preload_offload_ge "$name" tcp_accepted $((acc0 + 3)) 5
ok "plexec exec()ed itself: listener and connection kept, 1 MiB exact across exec, the close-on-exec one got a FIN, a new connection served; dpsockd accepted them (tcp_accepted $STAT_VALUE)"
if [ "$PRELOAD_KERNEL" != 1 ]; then
	grep -h "exec: 2 inherited offloaded socket(s) found again, 1 left behind released" \
		"$TEST_TMP"/shim-*.log ||
		fail "the shim's log does not show 2 sockets adopted and 1 released after exec"
fi

# ---- part 2: nginx binary upgrade ------------------------------------------------
# count200: requests of the curl loop answered 200 so far.
count200() { grep -c '^200$' "$TEST_TMP/curlloop.log" || true; }
count200_ge() { [ "$(count200)" -ge "$1" ]; }
# children_eq PID N: PID has N child processes (not counting EXCEPT, the 3rd argument).
children_eq() { [ "$(pgrep -P "$1" | grep -cvx "${3:-0}" || true)" -eq "$2" ]; }
port=8080
base=http://$TOPO_ADDR_A:$port
pfx=$TEST_TMP/nginx
mkdir -p "$pfx/www"
printf 'dpsock exec test page\n' >"$pfx/www/index.html"
# nginx hands only the variables named by `env` to the binary it exec()s
# on USR2: the shim's own must be among them, or the new master would not
# be preloaded.
nginx_conf "$pfx" 2 "user root;
env LD_PRELOAD;
env DPSOCK_RUNTIME_DIR;
env DPSOCK_NAME;
env DPSOCK_LOG_FILE;" <<EOF
access_log off;
server {
	listen $TOPO_ADDR_A:$port;
	root $pfx/www;
}
EOF
# nginx ignores USR2 while its master still has the parent it started
# with (the old binary of an upgrade in progress): start it from a shell
# that then goes away, as `daemon on` would (whose fork-and-exit the test
# does not need).
# (an absolute path: the master exec()s its argv[0] on USR2)
preload_start nginxwrap bash -c '"$1" -p "$0" -c "$0/nginx.conf" -e "$0/logs/error.log" &
echo $! >"$0/master.pid"; wait' "$pfx" "$(command -v nginx)"
wait_until 10 test -s "$pfx/master.pid"
old=$(cat "$pfx/master.pid")
on_exit "kill -KILL $old 2>/dev/null; true"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" "$port" 20
wait_until 10 children_eq "$old" 2
preload_stop nginxwrap TERM || true
ok "nginx up under the shim: master $old (its first parent gone)"


# curl loop in B: one request at a time until $TEST_TMP/stop exists; each
# status on its own line (000 = no answer).
cat >"$TEST_TMP/curlloop.sh" <<'SH'
while [ ! -e "$1/stop" ]; do
	curl -s -o /dev/null --max-time 5 -w '%{http_code}\n' "$2/" || true
done
SH
peer_start curlloop bash "$TEST_TMP/curlloop.sh" "$TEST_TMP" "$base"
loop=$PEER_PID
wait_until 10 count200_ge 20

acc0=$(preload_stat tcp_accepted)
kill -USR2 "$old"
wait_until 15 test -s "$pfx/nginx.pid.oldbin"
wait_until 15 test -s "$pfx/nginx.pid"
new=$(cat "$pfx/nginx.pid")
[ "$new" != "$old" ] || fail "no new master after USR2"
on_exit "kill -KILL $new 2>/dev/null; true"
wait_until 10 children_eq "$new" 2
ok "USR2: new master $new (exec()ed by a child of $old) with its workers $(pgrep -P "$new" | paste -sd' ')"
n0=$(count200)
wait_until 15 count200_ge $((n0 + 20))
ok "old and new workers serve side by side"
# QUIT: the old master and its workers finish and leave (WINCH, which would
# stop the old workers first, works only with `daemon on`)
kill -QUIT "$old"
poll_until 15 _lib_dead "$old" || fail "the old master did not stop on QUIT"
children_eq "$new" 2 || fail "the new master lost workers when the old one left"
ok "the old master and its workers are gone"
n0=$(count200)
wait_until 15 count200_ge $((n0 + 20))
touch "$TEST_TMP/stop"
wait "$loop" 2>/dev/null || true
good=$(count200)
bad=$(grep -v '^200$' "$TEST_TMP/curlloop.log" | grep -v '^+ ' | sort | uniq -c | tr '\n' ' ' || true)
[ -z "$bad" ] || fail "curl loop: answers other than 200: $bad(and $good 200s)"
preload_offload_ge "$name" tcp_accepted $((acc0 + 40)) 5
ok "binary upgrade: $good requests, all 200, before, during and after; through dpsockd (tcp_accepted +$((STAT_VALUE - acc0)))"
kill -QUIT "$new"
poll_until 10 _lib_dead "$new" || fail "the new master did not stop on QUIT"
if grep -E '\[(alert|emerg|crit)\]' "$pfx/logs/error.log"; then
	fail "nginx logged alerts (above)"
fi
preload_daemon_stop
pass "exec keeps offloaded sockets: plexec across its own exec, nginx binary upgrade with only 200s"
