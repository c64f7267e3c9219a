#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# offload.rules (libvma.conf's grammar) decide which sockets dpsock serves.
#
# dpsockd serves TOPO_ADDR_A (.1); namespace A's kernel gets .3 on the same
# veth, so a socket the rules leave to the kernel is reachable there. The
# config says:
#     application-id rulesapp      (DPSOCK_APPLICATION_ID=rulesapp)
#     use os tcp_server *:7001
#     use offload udp_receiver *:7100-7199
#     application-id *
#     use os tcp_server *:7003
# One preloaded python3 server listens on 0.0.0.0:7001, :7002, :7003 and
# binds UDP 0.0.0.0:7150, and answers each connection / datagram with its
# port. From the Linux peer:
#   - as rulesapp: 7001 answers on the kernel (.3) and is refused on .1;
#     7002 (no rule: a served address, offloaded) answers on .1, and on .3
#     through its kernel half (an offloaded listener on 0.0.0.0 listens in
#     the kernel too); 7003 (the "*" block) answers on .3 only; UDP 7150
#     (offload rule) echoes on .1;
#   - as another application: the rulesapp block does not apply, so 7001 is
#     offloaded (answers on .1, and on .3 through its kernel half), and 7003
#     still goes to the kernel;
#   - dpsockd's tcp_accepted counts exactly the offloaded connections.
set -euo pipefail
# A's kernel shares the veth with dpsockd (bifurcated): af_packet, which
# hands dpsockd a copy of each frame and leaves the kernel its own. AF_XDP
# cannot run this test: its XDP program redirects every frame of the queues
# dpsockd reads to dpsockd, so A's kernel sockets would hear nothing
# (docs/running.md, AF_XDP).
DPSOCK_TEST_PMD=af_packet
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_preload
[ "$PRELOAD_KERNEL" != 1 ] || skip "nothing to self-check: this test is about the shim's decisions"
name=$TEST_NAME
test_topo_up 109
preload_daemon_start "$name" 'offload = { rules = [ "application-id rulesapp", "use os tcp_server *:7001",
	"use offload udp_receiver *:7100-7199", "application-id *", "use os tcp_server *:7003" ]; };'
addr3=198.18.$TOPO_IDX.3
ip -n "$TOPO_NS_A" addr add "$addr3/$TOPO_PLEN" dev "$TOPO_IF_A"

cat >"$TEST_TMP/srv.py" <<'PYEOF'
import selectors, socket, sys
sel = selectors.DefaultSelector()
for port in (7001, 7002, 7003):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    sel.register(s, selectors.EVENT_READ, ("tcp", port))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("0.0.0.0", 7150))
sel.register(u, selectors.EVENT_READ, ("udp", 7150))
print("ready", flush=True)
while True:
    for key, _ in sel.select():
        kind, port = key.data
        if kind == "tcp":
            c, _ = key.fileobj.accept()
            c.sendall(b"port %d\n" % port)
            c.close()
        else:
            data, src = key.fileobj.recvfrom(2048)
            key.fileobj.sendto(b"udp %d " % port + data, src)
PYEOF

# probe ADDR PORT: what the server says over TCP, or "refused"/"timeout".
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
uprobe() {
	in_b python3 - "$1" "$2" <<'PYEOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for _ in range(3):
    s.sendto(b"hi", (sys.argv[1], int(sys.argv[2])))
    try:
        print(s.recv(64).decode()); break
    except socket.timeout:
        pass
else:
    print("timeout")
PYEOF
}
expect() { # expect WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3' (shim log: $(cat "$TEST_TMP"/shim-*.log 2>/dev/null | tail -n 3 | tr '\n' ' '))"
}

run_case() { # run_case APP_ID
	PRELOAD_ENV=(DPSOCK_APPLICATION_ID="$1" DPSOCK_LOG_LEVEL=info)
	preload_start "srv-$1" python3 "$TEST_TMP/srv.py"
	wait_until 20 grep -q ready "$TEST_TMP/srv-$1.log"
	wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 7002 20
}

# ---- as rulesapp -------------------------------------------------------------
acc0=$(preload_stat tcp_accepted)
run_case rulesapp
expect "rulesapp 7001 on the kernel address" "$(probe "$addr3" 7001)" "port 7001"
expect "rulesapp 7001 on dpsock's address" "$(probe "$TOPO_ADDR_A" 7001)" "refused"
expect "rulesapp 7002 on dpsock's address" "$(probe "$TOPO_ADDR_A" 7002)" "port 7002"
# offloaded on 0.0.0.0, it also listens in the kernel (its kernel half, as
# Linux's wildcard listener hears every address: docs/preload.md)
expect "rulesapp 7002 on the kernel address" "$(probe "$addr3" 7002)" "port 7002"
expect "rulesapp 7003 on the kernel address" "$(probe "$addr3" 7003)" "port 7003"
expect "rulesapp 7003 on dpsock's address" "$(probe "$TOPO_ADDR_A" 7003)" "refused"
expect "rulesapp UDP 7150 on dpsock's address" "$(uprobe "$TOPO_ADDR_A" 7150)" "udp 7150 hi"
preload_stop srv-rulesapp KILL || true
ok "rulesapp: 7001 and 7003 kernel (use os), 7002 dpsock (served address), UDP 7150 dpsock (use offload)"

# ---- as another application --------------------------------------------------
run_case other
expect "other 7001 on dpsock's address" "$(probe "$TOPO_ADDR_A" 7001)" "port 7001"
expect "other 7001 on the kernel address" "$(probe "$addr3" 7001)" "port 7001"
expect "other 7003 on the kernel address" "$(probe "$addr3" 7003)" "port 7003"
preload_stop srv-other KILL || true
ok "another application id: the rulesapp block does not apply (7001 offloaded), the * block does (7003 kernel)"

# 7002 twice (waits included) + 7002 + 7001: the offloaded connections only
preload_offload_ge "$name" tcp_accepted $((acc0 + 4)) 5
acc=$STAT_VALUE
[ "$acc" -le $((acc0 + 6)) ] || fail "tcp_accepted rose by $((acc - acc0)): kernel-bound connections counted?"
ok "dpsockd accepted $((acc - acc0)) connections, the offloaded ones"
dpsockd_stop || fail "dpsockd exited with status $?"
pass "offload.rules: application-id blocks, use os / use offload per role and port range"
