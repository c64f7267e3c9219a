#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A libvma.conf-style rules file, read as it is, decides which sockets
# dpsock serves (abi/offload_rules.c; the table of lines and decisions is
# test/unit/rules_test.c, this is the same grammar applied to real sockets):
#   - dpsock.conf's offload.rules_file names the file; it uses VMA's words
#     ("application-id * *", "use vma", "use os", the client form
#     remote:port:local:port, a "log" line):
#         use os  tcp_server *:7401
#         use vma tcp_server *:7402
#         use os  tcp_client <peer>/32:7404:*:*
#   - a preloaded python server listens on 7401, 7402 and 7403 (no rule: a
#     served address, offloaded); from the peer, a kernel one answers on
#     A's kernel address .3 only, an offloaded one on dpsock's .1 (and on
#     .3 through its kernel half: a listener on 0.0.0.0 hears every
#     address, as on Linux);
#   - a preloaded client connects to the peer's 7404 (kernel: the peer sees
#     source .3) and 7405 (offloaded: source .1);
#   - DPSOCK_RULES_FILE gives one program rules of its own, before
#     dpsockd's: "use os tcp_server *:7403" moves 7403 to the kernel;
#   - a malformed rules file stops dpsockd at start with file:line.
set -euo pipefail
# A's kernel answers on .3 on the veth dpsockd reads: af_packet, which hands
# dpsockd a copy of each frame and leaves the kernel its own (AF_XDP's XDP
# program would take every frame of its queues from the kernel, as
# preload_rules.sh explains).
DPSOCK_TEST_PMD=af_packet
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 timeout
require_preload
[ "$PRELOAD_KERNEL" != 1 ] || skip "nothing to self-check: this test is about the shim's decisions"
name=$TEST_NAME
test_topo_up 115
addr3=198.18.$TOPO_IDX.3

# ---- a malformed file stops dpsockd, naming the line ---------------------------
printf 'application-id * *\nuse vma tcp_serverr *:1\n' >"$TEST_TMP/bad_libvma.conf"
conf=$(dpsock_conf "$name" "offload = { rules_file = \"$TEST_TMP/bad_libvma.conf\"; };")
rc=0
out=$(timeout 60 ip netns exec "$TOPO_NS_A" "$DPSOCKD" -l 0 --no-huge -m 256 --no-pci \
	--file-prefix "$name" --log-level=lib.eal:error \
	"--vdev=net_af_packet0,iface=$TOPO_IF_A,qpairs=1" -- -f "$conf" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "a bad rules file: dpsockd exited $rc ($out)"
grep -qF "offload.rules_file: $TEST_TMP/bad_libvma.conf:2: 'tcp_serverr': role must be" <<<"$out" ||
	fail "a bad rules file: the message does not name the line: $out"
ok "a malformed rules file stops dpsockd: $(grep -o "bad_libvma.conf:2: .*" <<<"$out" | head -n 1)"

# ---- the file, as a VMA user has it ------------------------------------------------
cat >"$TEST_TMP/libvma.conf" <<EOF2
# libvma.conf, unchanged for dpsock
log min-level 4
application-id * *
use os  tcp_server *:7401
use vma tcp_server *:7402
use os  tcp_client $TOPO_ADDR_B/32:7404:*:*
EOF2
preload_daemon_start "$name" "offload = { rules_file = \"$TEST_TMP/libvma.conf\"; };"
ip -n "$TOPO_NS_A" addr add "$addr3/$TOPO_PLEN" dev "$TOPO_IF_A"

cat >"$TEST_TMP/srv.py" <<'PYEOF'
import selectors, socket
sel = selectors.DefaultSelector()
for port in (7401, 7402, 7403):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    sel.register(s, selectors.EVENT_READ, port)
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        c, _ = key.fileobj.accept()
        c.sendall(b"port %d\n" % key.data)
        c.close()
PYEOF
# the peer's servers say who connected
cat >"$TEST_TMP/peer.py" <<'PYEOF'
import selectors, socket
sel = selectors.DefaultSelector()
for port in (7404, 7405):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    sel.register(s, selectors.EVENT_READ, port)
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        c, a = key.fileobj.accept()
        c.sendall(b"from %s\n" % a[0].encode())
        c.close()
PYEOF
cat >"$TEST_TMP/cli.py" <<'PYEOF'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
print(s.recv(64).decode().strip())
PYEOF
probe() {
	in_b python3 - "$1" "$2" <<'PYEOF'
import socket, sys
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    print(s.recv(64).decode().strip() or "eof")
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print("error %s" % e)
PYEOF
}
expect() { # expect WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3' (shim log: $(cat "$TEST_TMP"/shim-*.log 2>/dev/null | tail -n 3 | tr '\n' ' '))"
}

peer_start peer python3 "$TEST_TMP/peer.py"
wait_until 10 grep -q ready "$TEST_TMP/peer.log"
PRELOAD_ENV=(DPSOCK_LOG_LEVEL=info)
preload_start srv python3 "$TEST_TMP/srv.py"
wait_until 20 grep -q ready "$TEST_TMP/srv.log"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 7402 20
expect "7401 (use os) on the kernel address" "$(probe "$addr3" 7401)" "port 7401"
expect "7401 (use os) on dpsock's address" "$(probe "$TOPO_ADDR_A" 7401)" "refused"
expect "7402 (use vma) on dpsock's address" "$(probe "$TOPO_ADDR_A" 7402)" "port 7402"
# offloaded on 0.0.0.0, it also listens in the kernel (its kernel half, as
# Linux's wildcard listener hears every address: docs/preload.md)
expect "7402 (use vma) on the kernel address" "$(probe "$addr3" 7402)" "port 7402"
expect "7403 (no rule) on dpsock's address" "$(probe "$TOPO_ADDR_A" 7403)" "port 7403"
preload_stop srv KILL || true
ok "servers: 'use os' in the kernel, 'use vma' and no rule offloaded"
expect "client to 7404 (use os, client form)" "$(preload_run python3 "$TEST_TMP/cli.py" "$TOPO_ADDR_B" 7404)" "from $addr3"
expect "client to 7405 (no rule)" "$(preload_run python3 "$TEST_TMP/cli.py" "$TOPO_ADDR_B" 7405)" "from $TOPO_ADDR_A"
ok "clients: the remote:port:local:port rule keeps 7404 in the kernel, 7405 is offloaded"

# ---- a program's own rules first -------------------------------------------------
printf 'application-id python3 *\nuse os tcp_server *:7403\n' >"$TEST_TMP/own.conf"
PRELOAD_ENV=(DPSOCK_LOG_LEVEL=info "DPSOCK_RULES_FILE=$TEST_TMP/own.conf")
preload_start srv2 python3 "$TEST_TMP/srv.py"
wait_until 20 grep -q ready "$TEST_TMP/srv2.log"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 7402 20
expect "7403 (DPSOCK_RULES_FILE: use os) on the kernel address" "$(probe "$addr3" 7403)" "port 7403"
expect "7403 (DPSOCK_RULES_FILE: use os) on dpsock's address" "$(probe "$TOPO_ADDR_A" 7403)" "refused"
expect "7402 (dpsockd's use vma) still on dpsock's address" "$(probe "$TOPO_ADDR_A" 7402)" "port 7402"
preload_stop srv2 KILL || true
ok "DPSOCK_RULES_FILE: the program's rules come before dpsockd's"
preload_daemon_stop
pass "libvma.conf-style rules: use vma/os, client form, application-id, rules_file and DPSOCK_RULES_FILE"
