#!/usr/bin/env bash
# test/tools/mixpoll under libdpsock_preload.so: one process with a pipe, a
# kernel UDP socket (127.0.0.1 in its own namespace: not dpsockd's, so it
# stays a kernel socket) and offloaded UDP and TCP sockets (dpsockd's
# address, talking to echo servers on the Linux peer in namespace B) in one
# epoll set (level- and edge-triggered), in poll and in select. mixpoll
# checks (see its header) that every event arrives, once per arrival in edge
# mode, none after the data is read, writability, timeouts (300 ms waits
# return 0 after 280-1500 ms), one fd in two epoll sets, and EPOLLRDHUP.
# This script checks mixpoll's verdict (exit 0, "all checks passed") and
# that the UDP and TCP traffic went through dpsockd (udp_rx, udp_tx and
# tcp_connected, tcp_rx_bytes moved): not a kernel fallback.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools mixpoll
require_preload
MIXPOLL=$(dpsock_tool mixpoll)
name=$TEST_NAME
test_topo_up 106
preload_daemon_start "$name"

# Echo servers on the Linux side: TCP (each byte back; 'q' closes) and UDP.
cat >"$TEST_TMP/echo.py" <<'PY'
import socket, sys, threading
addr, tport, uport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind((addr, uport))
def udp():
    while True:
        d, a = u.recvfrom(65536)
        u.sendto(d, a)
threading.Thread(target=udp, daemon=True).start()
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, tport))
l.listen(8)
print("listening", flush=True)
while True:
    c, _ = l.accept()
    while True:
        d = c.recv(65536)
        if not d or b"q" in d:
            c.close()
            break
        c.sendall(d)
PY
peer_start echo python3 "$TEST_TMP/echo.py" "$TOPO_ADDR_B" 7001 7002
wait_until 10 grep -q listening "$TEST_TMP/echo.log"

urx0=$(preload_stat udp_rx)
utx0=$(preload_stat udp_tx)
con0=$(preload_stat tcp_connected)
rc=0
preload_run timeout 60 "$MIXPOLL" "$TOPO_ADDR_A" "$TOPO_ADDR_B" 7001 7002 7003 \
	>"$TEST_TMP/mixpoll.out" 2>&1 || rc=$?
sed 's/^/   /' "$TEST_TMP/mixpoll.out"
[ "$rc" -eq 0 ] || fail "mixpoll: status $rc: $(grep -m1 -E 'FAIL|mixpoll:' "$TEST_TMP/mixpoll.out" || tail -n 1 "$TEST_TMP/mixpoll.out")"
grep -q '^ok: all checks passed' "$TEST_TMP/mixpoll.out" || fail "mixpoll exited 0 without 'all checks passed'"
# 4 mechanisms x (1 or 2 rounds) + the two-set check: 6 datagrams each way
preload_offload_ge "$name" udp_tx $((utx0 + 6)) 5
preload_offload_ge "$name" udp_rx $((urx0 + 6)) 5
preload_offload_ge "$name" tcp_connected $((con0 + 1)) 5
[ "$PRELOAD_KERNEL" = 1 ] ||
	ok "through dpsockd: udp_tx +$(($(preload_stat udp_tx) - utx0)), udp_rx +$(($(preload_stat udp_rx) - urx0)), tcp_connected +1"

preload_daemon_stop
pass "pipe, kernel UDP and offloaded UDP/TCP in one set: epoll LT/ET, poll, select all right"
