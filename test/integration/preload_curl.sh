#!/usr/bin/env bash
# curl (Debian's, unmodified) under libdpsock_preload.so in namespace A,
# whose kernel has no address: only dpsockd can carry its connections.
# The server is python3's http.server (HTTP/1.1) on the kernel in the Linux peer's
# namespace B.
#
#   - one 4 MiB file of random bytes: HTTP 200, the sha256 of what curl
#     wrote equals the file's;
#   - three files on one curl command line (one keep-alive connection,
#     curl's num_connects 1 then 0): each sha256 right;
#   - a missing file: HTTP 404 (the error path of a real response);
#   - a closed port: curl fails with "Couldn't connect" (exit 7, connection
#     refused), quickly;
#   - offload: dpsockd's tcp_connected rose by one per connection and
#     tcp_rx_bytes by at least the bytes fetched.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip curl python3 sha256sum
require_preload
name=$TEST_NAME
test_topo_up 105
preload_daemon_start "$name"

www=$TEST_TMP/www
mkdir -p "$www"
head -c $((4 * 1024 * 1024)) /dev/urandom >"$www/big.bin"
for i in 1 2 3; do head -c $((i * 100000 + 7)) /dev/urandom >"$www/f$i.bin"; done
peer_start httpd python3 "$DPSOCK_SRC/test/tools/httpd11.py" "$TOPO_ADDR_B" 8000 "$www"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" 8000 20
base=http://$TOPO_ADDR_B:8000
sum() { sha256sum <"$1" | cut -d' ' -f1; }

con0=$(preload_stat tcp_connected)
rx0=$(preload_stat tcp_rx_bytes)
out=$(preload_run curl -sS --max-time 30 -o "$TEST_TMP/got-big.bin" \
	-w '%{http_code} %{size_download} %{speed_download}' "$base/big.bin" 2>&1) ||
	fail "curl under the shim: $out"
read -r code size speed <<<"$out"
[ "$code" = 200 ] || fail "curl big.bin: HTTP $code"
[ "$(sum "$TEST_TMP/got-big.bin")" = "$(sum "$www/big.bin")" ] ||
	fail "big.bin: sha256 differs ($size bytes received)"
ok "curl under the shim: 4 MiB file, HTTP 200, sha256 right (${speed%.*} B/s)"
preload_offload_ge "$name" tcp_connected $((con0 + 1)) 5
preload_offload_ge "$name" tcp_rx_bytes $((rx0 + 4 * 1024 * 1024)) 5
[ "$PRELOAD_KERNEL" = 1 ] || ok "through dpsockd: tcp_connected +1, tcp_rx_bytes +$((STAT_VALUE - rx0))"

con0=$(preload_stat tcp_connected)
out=$(preload_run curl -sS --max-time 30 -w '%{http_code} %{num_connects}\n' \
	-o "$TEST_TMP/got-f1.bin" "$base/f1.bin" -o "$TEST_TMP/got-f2.bin" "$base/f2.bin" \
	-o "$TEST_TMP/got-f3.bin" "$base/f3.bin" 2>&1) || fail "curl of 3 files: $out"
[ "$(tr '\n' ' ' <<<"$out")" = "200 1 200 0 200 0 " ] ||
	fail "3 files on one connection: curl says '$(tr '\n' ' ' <<<"$out")' (want 200 1 200 0 200 0)"
for i in 1 2 3; do
	[ "$(sum "$TEST_TMP/got-f$i.bin")" = "$(sum "$www/f$i.bin")" ] || fail "f$i.bin: sha256 differs"
done
preload_offload_ge "$name" tcp_connected $((con0 + 1)) 5
ok "three files on one keep-alive connection, each sha256 right"

code=$(preload_run curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$base/missing") || true
[ "$code" = 404 ] || fail "missing file: HTTP '$code', want 404"
ok "missing file: 404"

t0=$(_lib_now_ms)
rc=0
out=$(preload_run curl -sS --max-time 10 -o /dev/null "http://$TOPO_ADDR_B:8001/" 2>&1) || rc=$?
dt=$(($(_lib_now_ms) - t0))
[ "$rc" = 7 ] || fail "closed port: curl exit $rc ($out), want 7 (connection refused)"
[ "$dt" -lt 5000 ] || fail "closed port: refusal took $dt ms"
ok "closed port: connection refused in $dt ms ($out)"

preload_daemon_stop
pass "curl under the shim fetched files from Linux with the right sha256, keep-alive, 404 and refusal"
