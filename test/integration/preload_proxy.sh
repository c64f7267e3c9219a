#!/usr/bin/env bash
# An epoll-based proxy under the shim: Debian's nginx as an HTTP reverse
# proxy in namespace A (whose kernel has no address), between a Linux
# client (curl) and a Linux backend (python3's http.server), both in
# namespace B. Both of nginx's connections are offloaded: it accepts the
# client's through dpsockd and connects to the backend through it.
#
#   - a 50 MB download relayed with nginx's proxy buffering on (nginx reads
#     the backend ahead of the client, spilling to its temp files) and off
#     (it relays as the client reads: back-pressure from curl to the
#     backend through nginx's edge-triggered epoll);
#   - curl is throttled (--limit-rate) in one of them, so that nginx's
#     writes to it stall again and again;
#   - the sha256 of what curl got equals the file's, HTTP 200, and dpsockd
#     carried it (tcp_rx_bytes and tcp_tx_bytes each grew by the size).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip nginx curl python3 sha256sum
require_preload
name=$TEST_NAME
test_topo_up 111
preload_daemon_start "$name"
MB=$((1024 * 1024))

www=$TEST_TMP/www
mkdir -p "$www"
head -c $((50 * MB)) /dev/urandom >"$www/big.bin"
want=$(sha256sum <"$www/big.bin" | cut -d' ' -f1)
peer_start backend python3 "$DPSOCK_SRC/test/tools/httpd11.py" "$TOPO_ADDR_B" 8000 "$www"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" 8000 20

pfx=$TEST_TMP/nginx
nginx_conf "$pfx" 1 "user root;" <<EOF
access_log $pfx/logs/access.log;
proxy_http_version 1.1;
server {
	listen $TOPO_ADDR_A:8080;
	location /buffered/ { proxy_pass http://$TOPO_ADDR_B:8000/; }
	location /direct/ { proxy_pass http://$TOPO_ADDR_B:8000/; proxy_buffering off; }
}
EOF
preload_start nginx nginx -p "$pfx" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log"
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 8080 20

rx0=$(preload_stat tcp_rx_bytes)
tx0=$(preload_stat tcp_tx_bytes)
fetch() { # fetch LABEL PATH [CURL OPTIONS]: through the proxy, checked
	local label=$1 path=$2 out code size
	shift 2
	out=$(in_b curl -sS --max-time 150 "$@" -o "$TEST_TMP/got-$label" \
		-w '%{http_code} %{size_download} %{speed_download}' "http://$TOPO_ADDR_A:8080$path" 2>&1) ||
		fail "$label: curl through the proxy: $out; nginx: $(tail -n 3 "$pfx/logs/error.log")"
	read -r code size speed <<<"$out"
	[ "$code" = 200 ] || fail "$label: HTTP $code"
	[ "$(sha256sum <"$TEST_TMP/got-$label" | cut -d' ' -f1)" = "$want" ] ||
		fail "$label: sha256 differs ($size of $((50 * MB)) bytes)"
	ok "$label: 50 MB through nginx under the shim, sha256 right (${speed%.*} B/s)"
}
fetch buffered /buffered/big.bin
fetch direct /direct/big.bin
fetch direct-throttled /direct/big.bin --limit-rate 20M

# three downloads: dpsockd received them from the backend and sent them on
preload_offload_ge "$name" tcp_rx_bytes $((rx0 + 150 * MB)) 10
preload_offload_ge "$name" tcp_tx_bytes $((tx0 + 150 * MB)) 10
[ "$PRELOAD_KERNEL" = 1 ] ||
	ok "through dpsockd: tcp_rx_bytes +$(($(preload_stat tcp_rx_bytes) - rx0)), tcp_tx_bytes +$(($(preload_stat tcp_tx_bytes) - tx0))"
preload_stop nginx QUIT || fail "nginx did not stop cleanly"
preload_daemon_stop
pass "nginx as a reverse proxy under the shim: 3 x 50 MB intact, buffered, direct and throttled"
