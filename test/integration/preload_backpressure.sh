#!/usr/bin/env bash
# Sustained back-pressure in both directions at once, through every way a
# program waits on an offloaded TCP socket, against the Linux stack in
# namespace B (namespace A's kernel has no address: only dpsockd carries
# these connections).
#
#   1. test/tools/bp.py as the server under the shim, once per mechanism:
#      select, poll, epoll level-triggered, edge-triggered and one-shot
#      (non-blocking sockets, EAGAIN), and blocking threads; a Linux
#      client pushes 16 MiB on each of 2 connections while reading the echo
#      (the server stops reading while 256 KiB wait to be sent, so each
#      side's slow reader pushes back on the other's writer);
#   2. the same with the client under the shim (offloaded connects) and the
#      server on Linux;
#   3. socat (Debian's, unmodified; select/pselect on non-blocking sockets)
#      as a client sending 32 MiB to a Linux receiver: the sha256 matches;
#   4. socat as a full-duplex echo server (TCP-LISTEN,fork PIPE) under the
#      shim: 32 MiB pushed through it both ways at once;
#   5. dpsockd's counters: the bytes went through it (not a kernel
#      fallback), and it stops cleanly.
# A stall (no progress for 20 s) fails the run, with what each side had.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 socat sha256sum timeout
require_preload
name=$TEST_NAME
test_topo_up 110
preload_daemon_start "$name"
BP=$DPSOCK_SRC/test/tools/bp.py
MB=$((1024 * 1024))
N=$((16 * MB))
mechs="select poll epoll-lt epoll-et epoll-oneshot threads"

rx0=$(preload_stat tcp_rx_bytes)
tx0=$(preload_stat tcp_tx_bytes)

# 1. servers under the shim
port=7100
for mech in $mechs; do
	port=$((port + 1))
	preload_start "srv-$mech" python3 "$BP" server "$mech" "$TOPO_ADDR_A" "$port"
	wait_until 15 grep -q "^listening $mech" "$TEST_TMP/srv-$mech.log"
	out=$(in_b timeout 120 python3 "$BP" client threads "$TOPO_ADDR_A" "$port" "$N" 2 2>&1) ||
		fail "server under the shim ($mech): $out; server log: $(tail -n 3 "$TEST_TMP/srv-$mech.log")"
	ok "server under the shim, $mech: $out"
	preload_stop "srv-$mech" || true
done

# 2. clients under the shim
peer_start srv python3 "$BP" server epoll-lt "$TOPO_ADDR_B" 7200
wait_until 15 grep -q '^listening' "$TEST_TMP/srv.log"
for mech in $mechs; do
	out=$(preload_run timeout 120 python3 "$BP" client "$mech" "$TOPO_ADDR_B" 7200 "$N" 2 2>&1) ||
		fail "client under the shim ($mech): $out"
	ok "client under the shim, $mech: $out"
done

# 3. socat as a client, one way: what arrives is what was sent
head -c $((32 * MB)) /dev/urandom >"$TEST_TMP/in.bin"
want=$(sha256sum <"$TEST_TMP/in.bin" | cut -d' ' -f1)
cat >"$TEST_TMP/sink.py" <<'EOF'
import hashlib, socket, sys
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((sys.argv[1], int(sys.argv[2])))
l.listen(1)
print("listening", flush=True)
c, _ = l.accept()
h, n = hashlib.sha256(), 0
while True:
    d = c.recv(1 << 16)
    if not d:
        break
    h.update(d)
    n += len(d)
print(n, h.hexdigest(), flush=True)
EOF
peer_start sink python3 "$TEST_TMP/sink.py" "$TOPO_ADDR_B" 7300
wait_until 15 grep -q '^listening' "$TEST_TMP/sink.log"
out=$(preload_run timeout 120 socat -u - "TCP:$TOPO_ADDR_B:7300" <"$TEST_TMP/in.bin" 2>&1) ||
	fail "socat client under the shim: status $?: $out"
wait_until 20 grep -qE '^[0-9]+ [0-9a-f]{64}$' "$TEST_TMP/sink.log"
read -r got sum < <(tail -n 1 "$TEST_TMP/sink.log")
[ "$got" -eq $((32 * MB)) ] && [ "$sum" = "$want" ] ||
	fail "socat client: Linux received $got bytes, sha256 $sum (sent $((32 * MB)), $want)"
ok "socat client under the shim: 32 MiB to Linux, sha256 right"

# 4. socat as a full-duplex echo server
preload_start socat-echo socat "TCP-LISTEN:7400,fork,reuseaddr,bind=$TOPO_ADDR_A" PIPE
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 7400 15
out=$(in_b timeout 120 python3 "$BP" client threads "$TOPO_ADDR_A" 7400 $((32 * MB)) 1 2>&1) ||
	fail "socat echo server under the shim: $out"
ok "socat echo server under the shim (TCP-LISTEN,fork PIPE): $out"
preload_stop socat-echo || true

# 5. through dpsockd: in 1 and 2, 6 mechanisms x 2 connections x N each
#    way; 3 sent 32 MiB; 4 received and sent 32 MiB
preload_offload_ge "$name" tcp_rx_bytes $((rx0 + 24 * N + 32 * MB)) 10
preload_offload_ge "$name" tcp_tx_bytes $((tx0 + 24 * N + 64 * MB)) 10
[ "$PRELOAD_KERNEL" = 1 ] ||
	ok "through dpsockd: tcp_rx_bytes +$(($(preload_stat tcp_rx_bytes) - rx0)), tcp_tx_bytes +$(($(preload_stat tcp_tx_bytes) - tx0))"
preload_daemon_stop
pass "back-pressure both ways: select, poll, epoll LT/ET/ONESHOT, blocking; socat client and echo server"
