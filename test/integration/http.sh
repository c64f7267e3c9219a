#!/usr/bin/env bash
# dpsock-http (native app, two workers) on the test port over a veth in
# namespace A; curl, wrk and raw sockets in namespace B are the clients.
#
# Shows, for a 64-byte body (the default) and then a 1000-byte and a
# 300 KiB one (the latter does not fit the send buffer: the writable path):
#   - 20 GETs on ONE keep-alive connection (curl URL globbing reuses it:
#     num_connects is 1 for the first transfer, 0 for the 19 others), each
#     answered 200 with exactly the body ("dpsock\n" repeated, cut to size);
# and for the 64-byte server:
#   - HEAD answers the headers (Content-Length of the GET body) and no body:
#     a HEAD pipelined before a GET on one connection is followed directly
#     by the GET's status line;
#   - HTTP/1.0 closes after the response (the server closes, the client
#     does not), HTTP/1.0 with "Connection: keep-alive" keeps it;
#   - a malformed request gets 400 and the server closes; DELETE gets 405;
#   - wrk -t1 -c32 -d3s: requests done, no non-2xx response, no socket
#     error; afterwards both workers have accepted connections (dpsock-stat
#     tcp_accepted: the flow hash spreads the passive opens over the queues);
#   - SIGTERM: exit 0, every mbuf back in the pool, and the app's own
#     counters agree (ok >= the 200s seen, errors = the error responses
#     provoked, aborts = 0).
# Speeds are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip curl wrk python3
require_tools dpsock-http dpsock-stat
name=$TEST_NAME
test_topo_up 60
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
# shellcheck disable=SC2207
eal=($(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name"))
base=http://$TOPO_ADDR_A

# expected_body SIZE: the body dpsock-http serves ("dpsock\n" repeated, cut).
expected_body() {
	python3 -c 'import sys; n = int(sys.argv[1]); sys.stdout.write(("dpsock\n" * (n // 7 + 1))[:n])' "$1"
}

# raw_http MODE REQUEST [TIMEOUT_S]: one TCP connection from B; send REQUEST (printf
# escapes), then MODE "shut" shuts our sending side down (the server sees
# EOF) while "open" keeps it open, so only the server can end the
# connection. Reads until EOF (TIMEOUT_S, default 5, at most) and prints one line per
# response: "<status> clen=<Content-Length> conn=<Connection or -> body=<n>
# bodyok=<0|1>", and a last line "end=eof|timeout trailing=<bytes left
# over>" (end=reset: the server answered RST). HEAD requests (in order) expect no body; the body is compared
# with expected_body.
cat >"$TEST_TMP/raw_http.py" <<'EOF'
import socket, sys, time
host, port, mode, req, size, tmo = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])
req = req.encode().decode("unicode_escape").encode("latin-1")
methods = [l.split(b" ", 1)[0] for l in req.split(b"\r\n") if l[:4] in (b"GET ", b"HEAD")]
unit = b"dpsock\n"
expected = (unit * (size // len(unit) + 1))[:size]
s = socket.create_connection((host, port), timeout=5)
s.sendall(req)
if mode == "shut":
    s.shutdown(socket.SHUT_WR)
data, end, deadline = b"", "timeout", time.time() + tmo
while time.time() < deadline:
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    except ConnectionResetError:
        end = "reset"
        break
    if not b:
        end = "eof"
        break
    data += b
i = 0
while True:
    h = data.find(b"\r\n\r\n", i)
    if not data.startswith(b"HTTP/", i) or h < 0:
        break
    lines = data[i:h].split(b"\r\n")
    status = lines[0].split(b" ")[1].decode()
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(b":")
        hdrs[k.strip().lower()] = v.strip().decode()
    clen = int(hdrs.get(b"content-length", "0"))
    head = bool(methods) and methods.pop(0) == b"HEAD"
    blen = 0 if head else clen
    body = data[h + 4:h + 4 + blen]
    ok = int(status != "200" or body == (b"" if head else expected))
    print(f"{status} clen={clen} conn={hdrs.get(b'connection', '-')} body={len(body)} bodyok={ok}")
    i = h + 4 + blen
print(f"end={end} trailing={len(data) - i}")
EOF
raw_http() {
	in_b python3 "$TEST_TMP/raw_http.py" "$TOPO_ADDR_A" 80 "$1" "$2" "$size" "${3:-5}"
}

# keepalive_20 URL: 20 GETs on one connection, bodies checked.
keepalive_20() {
	local url=$1 out n lines conns codes f bad=0
	rm -f "$TEST_TMP"/body_*
	expected_body "$size" >"$TEST_TMP/expected"
	out=$(in_b curl -sS --max-time 20 -o "$TEST_TMP/body_#1" \
		-w '%{num_connects} %{http_code} %{size_download}\n' "$url/[1-20]") ||
		fail "curl (20 keep-alive GETs, size $size) failed: $out"
	lines=$(wc -l <<<"$out")
	[ "$lines" -eq 20 ] || fail "curl reported $lines transfers, expected 20: $out"
	conns=$(awk '{ s += $1 } END { print s }' <<<"$out")
	[ "$conns" -eq 1 ] || fail "20 GETs used $conns connections, expected 1 (keep-alive): $out"
	codes=$(awk -v n="$size" '$2 != 200 || $3 != n' <<<"$out")
	[ -z "$codes" ] || fail "not every GET got 200 with $size bytes: $codes"
	for n in $(seq 1 20); do
		f=$TEST_TMP/body_$n
		cmp -s "$f" "$TEST_TMP/expected" || bad=$((bad + 1))
	done
	[ "$bad" -eq 0 ] || fail "$bad of 20 bodies differ from the expected $size bytes (e.g. $(head -c 80 "$TEST_TMP/body_1" | od -c | head -3))"
	ok "size $size: 20 GETs on one keep-alive connection, every body exact"
}

# ---- 64-byte body (default), all the protocol checks, wrk ------------------
size=64
app_start "$name" "$conf" dpsock-http "${eal[@]}" -- -p 80
log=$APP_LOG
nw=$(stat_get "$name" daemon.0.workers)
[ "$nw" = 2 ] || fail "expected 2 workers, dpsock-stat shows $nw"
n_ok=0
n_err=0
# The protocol checks below are independent: a failed one is reported
# (soft_fail) and the others still run; the test fails at the end.
failures=()
soft_fail() {
	local first=${1%%$'\n'*}
	echo "FAIL: $*" >&2
	failures+=("[${first:0:60}]")
}

keepalive_20 "$base"
n_ok=$((n_ok + 20))

# HEAD: headers, no body. Pipelined HEAD, GET, HEAD on one connection, then
# our EOF: the server answers all three in order and closes.
out=$(raw_http shut 'HEAD / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\nHEAD /x HTTP/1.1\r\nHost: a\r\n\r\n')
expect="200 clen=64 conn=- body=0 bodyok=1
200 clen=64 conn=- body=64 bodyok=1
200 clen=64 conn=- body=0 bodyok=1
end=eof trailing=0"
[ "$out" = "$expect" ] || fail "pipelined HEAD, GET, HEAD: got
$out
expected
$expect"
n_ok=$((n_ok + 3))
n_ok=$((n_ok + 4)) # the 4 HTTP/1.0 GETs below: ok counts them even if the response is lost
out=$(in_b curl -sS --max-time 5 -I "$base/") || fail "curl -I failed: $out"
grep -q '^HTTP/1.1 200 OK' <<<"$out" && grep -qi '^Content-Length: 64' <<<"$out" ||
	fail "curl -I: no 200 / Content-Length: 64 in: $out"
n_ok=$((n_ok + 1))
ok "HEAD: 200 with Content-Length: 64 and no body (pipelined HEAD, GET, HEAD answered in order)"

# HTTP/1.0: the server closes after the response (we keep our side open).
out=$(raw_http open 'GET / HTTP/1.0\r\n\r\n')
expect="200 clen=64 conn=close body=64 bodyok=1
end=eof trailing=0"
h10=ok
[ "$out" = "$expect" ] || { h10=; soft_fail "HTTP/1.0 GET: got
$out
expected
$expect"; }
out=$(in_b curl -sS --max-time 5 --http1.0 -o /dev/null -o /dev/null \
	-w '%{num_connects} %{http_code} %{size_download} ' "$base/" "$base/" 2>&1) || true
[ "$out" = "1 200 64 1 200 64 " ] || { h10=; soft_fail "curl --http1.0, two GETs: got '$out', expected '1 200 64 1 200 64 ' (a new connection each)"; }
# HTTP/1.0 with keep-alive: kept open (the server does not close: timeout).
out=$(raw_http open 'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n' 1.5)
expect="200 clen=64 conn=keep-alive body=64 bodyok=1
end=timeout trailing=0"
[ "$out" = "$expect" ] || { h10=; soft_fail "HTTP/1.0 keep-alive GET: got
$out
expected
$expect"; }
[ -z "$h10" ] || ok "HTTP/1.0 closes (Connection: close, server-side close); with Connection: keep-alive it stays open"

# Bad requests: 400 and the server closes; 405 for other methods.
bad=ok
n_err=$((n_err + 5))
for req in 'GARBAGE\r\n\r\n' 'get / HTTP/1.1\r\n\r\n' 'GET / HTTP/1.1\r\nno colon here\r\n\r\n' \
	'GET /a b HTTP/1.1\r\n\r\n'; do
	out=$(raw_http open "$req")
	if [ "$(head -n 1 <<<"$out" | cut -d' ' -f1,3)" != "400 conn=close" ] ||
		[ "$(tail -n 1 <<<"$out")" != "end=eof trailing=0" ]; then
		bad=
		soft_fail "bad request '$req': expected 400, Connection: close and a server close; got: ${out//$'\n'/ }"
	fi
done
code=$(in_b curl -s --max-time 5 -o /dev/null -w '%{http_code}' -X DELETE "$base/") || true
[ "$code" = 405 ] || { bad=; soft_fail "DELETE: expected 405, got '$code'"; }
[ -z "$bad" ] || ok "malformed requests get 400 and a close; DELETE gets 405"

# wrk, bounded: 3 s, 32 connections.
acc_before=$(stat_sum "$name" tcp_accepted)
out=$(in_b timeout 30 wrk -t1 -c32 -d3s --timeout 2s "$base/" 2>&1) || fail "wrk failed: $out"
echo "$out" | sed 's/^/   wrk: /'
! grep -q 'Non-2xx or 3xx responses' <<<"$out" || fail "wrk saw non-2xx responses"
! grep -q 'Socket errors' <<<"$out" || fail "wrk saw socket errors"
wrk_req=$(awk '/requests in/ { print $1 }' <<<"$out")
[ -n "$wrk_req" ] && [ "$wrk_req" -gt 0 ] || fail "wrk did no request: $out"
n_ok=$((n_ok + wrk_req))
acc0=$(stat_get "$name" worker.0.tcp_accepted)
acc1=$(stat_get "$name" worker.1.tcp_accepted)
acc_after=$(stat_sum "$name" tcp_accepted)
[ $((acc_after - acc_before)) -ge 32 ] || fail "wrk's 32 connections: tcp_accepted rose by $((acc_after - acc_before))"
[ "$acc0" -gt 0 ] && [ "$acc1" -gt 0 ] ||
	fail "passive opens not spread over both workers: tcp_accepted $acc0 / $acc1"
ok "wrk: $wrk_req requests, all 2xx, no socket error; tcp_accepted worker 0: $acc0, worker 1: $acc1"

rc=0
app_stop "$name" || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-http exited with status $rc (3 = mbuf leak)"
grep -q 'all [0-9]* mbufs back in the pool' "$log" || fail "no 'mbufs back' line in the log: $(tail -5 "$log")"
total=$(grep '^http: total' "$log") || fail "no 'http: total' line in the log"
note "$total"
get() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$total"; }
[ "$(get ok)" -ge "$n_ok" ] || fail "the app counted $(get ok) 200s, the clients got at least $n_ok"
[ "$(get errors)" -eq "$n_err" ] || soft_fail "the app counted $(get errors) error responses, $n_err were provoked"
[ "$(get aborts)" -eq 0 ] || fail "the app aborted $(get aborts) connections"
ok "clean stop: exit 0, all mbufs back; app counted ok=$(get ok) (>= $n_ok) errors=$(get errors) aborts=0"

# ---- 1000-byte and 300 KiB bodies -------------------------------------------
for size in 1000 307200; do
	n2=$(unique_name "s$size")
	conf2=$(dpsock_conf "$n2" 'workers = [ 0, 1 ];')
	# shellcheck disable=SC2207
	eal2=($(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$n2"))
	app_start "$n2" "$conf2" dpsock-http "${eal2[@]}" -- -p 80 -s "$size"
	keepalive_20 "$base"
	out=$(raw_http shut 'HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n')
	expect="200 clen=$size conn=- body=0 bodyok=1
200 clen=$size conn=- body=$size bodyok=1
end=eof trailing=0"
	[ "$out" = "$expect" ] || fail "size $size, pipelined HEAD, GET: got
$out
expected
$expect"
	rc=0
	app_stop "$n2" || rc=$?
	[ "$rc" -eq 0 ] || fail "dpsock-http -s $size exited with status $rc (3 = mbuf leak)"
	grep -q 'all [0-9]* mbufs back in the pool' "$APP_LOG" || fail "-s $size: no 'mbufs back' line in the log"
	ok "size $size: HEAD/GET pipelined exact; clean stop"
done

[ ${#failures[@]} -eq 0 ] || fail "${#failures[@]} check(s) failed: ${failures[*]}"
pass "dpsock-http: keep-alive, HEAD, HTTP/1.0, errors, wrk over two workers, 64/1000/300K bodies, clean stops"
