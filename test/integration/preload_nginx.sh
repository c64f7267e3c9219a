#!/usr/bin/env bash
# nginx (Debian's, unmodified) under libdpsock_preload.so: a master and 2
# worker processes (the listener is opened by the master and inherited
# across fork), listening on dpsockd's address; wrk and curl in the Linux
# peer's namespace are the clients.
#
#   - curl: a 64-byte page and a 256 KiB file (sendfile on) arrive whole
#     (sha256 checked), status 200;
#   - wrk -t2 -c32 -d3s (keep-alive): requests > 0, no non-2xx response,
#     no socket error; nginx's own access log has a 200 for every request
#     wrk counted and no other status;
#   - `nginx -s reload` in the middle of a wrk run with "Connection: close"
#     (every request a new connection, so connections are accepted by the
#     old workers, then by the new ones): the workers were replaced (new
#     pids), and still no socket error, no non-2xx, every request logged 200;
#   - offload, not a kernel fallback: dpsockd's workers accepted at least as
#     many connections as wrk made (tcp_accepted) and sent the file's bytes
#     (tcp_tx_bytes); namespace A's kernel has no address at all, so a
#     fallback could not have served anything;
#   - nginx stops on SIGQUIT (graceful) with status 0; dpsockd then stops
#     cleanly (status 0, every mbuf back).
# The workers run as nginx's default unprivileged user (nobody): a forked
# child that dropped privileges joins its group by token, without a uid
# check, over a control connection its parent opened for it at fork: the
# control socket is made root-only (0600) here, so a worker that had to
# connect to it itself would fail (epoll_ctl: Permission denied) and die.
# The test's directory is made reachable (0755) for nginx's files.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip nginx wrk curl sha256sum
require_preload
name=$TEST_NAME
test_topo_up 100
preload_daemon_start "$name"
chmod 600 "$TEST_TMP/$name.sock"
port=8080
base=http://$TOPO_ADDR_A:$port

# ---- nginx's private prefix: config, pid, logs, temp dirs, files ----------
pfx=$TEST_TMP/nginx
chmod 755 "$TEST_TMP" # the workers (nobody) reach the control socket and www/ here
mkdir -p "$pfx/www"
printf 'dpsock preload nginx test page, 64 bytes long: 0123456789ab\n' >"$pfx/www/index.html"
head -c $((256 * 1024)) /dev/urandom >"$pfx/www/big.bin"
big_sum=$(sha256sum <"$pfx/www/big.bin" | cut -d' ' -f1)
small_sum=$(sha256sum <"$pfx/www/index.html" | cut -d' ' -f1)
nginx_conf "$pfx" 2 <<EOF
log_format st '\$status \$pid';
access_log $pfx/logs/access.log st;
sendfile on;
keepalive_requests 100000;
server {
	listen $TOPO_ADDR_A:$port;
	root $pfx/www;
}
EOF
ngx=(nginx -p "$pfx" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log")
preload_start nginx "${ngx[@]}"
master=$PRELOAD_PID
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" "$port" 20
workers_of() { pgrep -P "$master" | sort | paste -sd' '; }
wait_until 10 test "$(pgrep -P "$master" | wc -l)" -eq 2
workers1=$(workers_of)
ok "nginx up under the shim: master $master, workers $workers1"
acc0=$(preload_stat tcp_accepted)

# access_count STATUS: lines of the access log with that status.
access_count() { awk -v s="$1" '$1 == s { n++ } END { print n + 0 }' "$pfx/logs/access.log"; }
access_other() { awk '$1 != 200 { n++ } END { print n + 0 }' "$pfx/logs/access.log"; }

# ---- curl: whole files ----------------------------------------------------
for f in index.html big.bin; do
	code=$(in_b curl -sS --max-time 10 -o "$TEST_TMP/got-$f" -w '%{http_code}' "$base/$f") ||
		fail "curl $base/$f failed (status $code)"
	[ "$code" = 200 ] || fail "curl $base/$f: HTTP $code"
done
[ "$(sha256sum <"$TEST_TMP/got-big.bin" | cut -d' ' -f1)" = "$big_sum" ] ||
	fail "big.bin: sha256 differs ($(stat -c %s "$TEST_TMP/got-big.bin") bytes received)"
[ "$(sha256sum <"$TEST_TMP/got-index.html" | cut -d' ' -f1)" = "$small_sum" ] ||
	fail "index.html: content differs"
ok "curl: 200 and the exact bytes for a 64-byte page and a 256 KiB file (sendfile)"
preload_offload_ge "$name" tcp_tx_bytes $((256 * 1024)) 5

# wrk_run LABEL WRK_ARGS...: run wrk from B (bounded), check its report,
# set WRK_REQ (requests completed).
wrk_run() {
	local label=$1 out rc=0
	shift
	out=$(timeout 60 ip netns exec "$TOPO_NS_B" wrk "$@" 2>&1) || rc=$?
	printf '%s\n' "$out" >"$TEST_TMP/wrk-$label.out"
	[ "$rc" -eq 0 ] || fail "wrk $label: status $rc: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
	WRK_REQ=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' <<<"$out")
	[ -n "$WRK_REQ" ] && [ "$WRK_REQ" -gt 0 ] || fail "wrk $label: no request completed: $(tr '\n' ' ' <<<"$out")"
	if grep -q 'Non-2xx' <<<"$out"; then
		fail "wrk $label: $(grep 'Non-2xx' <<<"$out")"
	fi
	if grep -q 'Socket errors' <<<"$out"; then
		fail "wrk $label: $(grep 'Socket errors' <<<"$out")"
	fi
	note "wrk $label: $WRK_REQ requests, $(sed -n 's/^Requests\/sec: *//p' <<<"$out") req/s"
}

# ---- wrk, keep-alive --------------------------------------------------------
logged0=$(access_count 200)
wrk_run keepalive -t2 -c32 -d3s "$base/"
wait_until 5 test "$(access_count 200)" -ge $((logged0 + WRK_REQ))
[ "$(access_other)" -eq 0 ] || fail "access log has $(access_other) responses other than 200"
ok "wrk keep-alive: $WRK_REQ requests, all 200, no socket error; access log agrees"
preload_offload_ge "$name" tcp_accepted $((acc0 + 32)) 5
ok "dpsockd accepted the connections (tcp_accepted $STAT_VALUE)"
preload_show_clients

# ---- reload during load -------------------------------------------------------
logged0=$(access_count 200)
acc0=$(preload_stat tcp_accepted)
(sleep 1; "${ngx[@]}" -s reload) >"$TEST_TMP/reload.out" 2>&1 &
reloader=$!
wrk_run reload -t1 -c4 -d3s -H 'Connection: close' "$base/"
wait "$reloader" || fail "nginx -s reload failed: $(cat "$TEST_TMP/reload.out")"
wait_until 10 test "$(pgrep -P "$master" | wc -l)" -eq 2
workers2=$(workers_of)
for w in $workers2; do
	case " $workers1 " in *" $w "*) fail "worker $w survived the reload (before: $workers1, after: $workers2)" ;; esac
done
grep -q 'reconfiguring' "$pfx/logs/error.log" || fail "nginx's error log does not show the reload"
wait_until 5 test "$(access_count 200)" -ge $((logged0 + WRK_REQ))
[ "$(access_other)" -eq 0 ] || fail "access log has $(access_other) responses other than 200"
served_by=$(awk -v w="$workers2" 'BEGIN { n = split(w, a, " "); for (i = 1; i <= n; i++) new[a[i]] = 1 }
	$1 == 200 && ($2 in new) { c++ } END { print c + 0 }' "$pfx/logs/access.log")
[ "$served_by" -gt 0 ] || fail "no request was served by the new workers ($workers2) after the reload"
ok "reload during wrk (Connection: close): workers $workers1 -> $workers2, $WRK_REQ requests, no error, $served_by served by the new workers"
preload_offload_ge "$name" tcp_accepted $((acc0 + WRK_REQ)) 5
ok "every connection of that run went through dpsockd (tcp_accepted +$((STAT_VALUE - acc0)))"

# ---- stop ---------------------------------------------------------------------
rc=0
preload_stop nginx QUIT || rc=$?
[ "$rc" -eq 0 ] || fail "nginx exited with status $rc on SIGQUIT: $(tail -n 5 "$pfx/logs/error.log" | tr '\n' ' ')"
if grep -E '\[(alert|emerg|crit)\]' "$pfx/logs/error.log"; then
	fail "nginx logged alerts (above)"
fi

# ---- daemon on, master_process off: fork, the parent exits at once ----------
# The parent opened (offloaded) the listening socket; the daemonised child
# attaches at its first offloaded call (epoll), after the parent is gone:
# it must join the group before it lets go of the parent's control
# connection, or dpsockd would end the group (and reset the listener).
port2=8081
sed -e 's/^daemon off;/daemon on;/' -e 's/^master_process on;/master_process off;/' \
	-e "s/:$port;/:$port2;/" -e "s,$pfx/nginx.pid,$pfx/nginx2.pid," \
	"$pfx/nginx.conf" >"$pfx/nginx2.conf"
preload_run nginx -p "$pfx" -c "$pfx/nginx2.conf" -e "$pfx/logs/error.log" ||
	fail "nginx (daemon on) did not start: $(tail -n 3 "$pfx/logs/error.log" | tr '\n' ' ')"
wait_until 10 test -s "$pfx/nginx2.pid"
master2=$(cat "$pfx/nginx2.pid")
on_exit "kill -KILL $master2 2>/dev/null; true"
got=0
for i in $(seq 1 20); do
	code=$(in_b curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "http://$TOPO_ADDR_A:$port2/index.html") || true
	[ "$code" = 200 ] && got=$((got + 1))
done
[ "$got" -eq 20 ] || fail "nginx with daemon on: $got of 20 requests answered 200"
kill -QUIT "$master2"
wait_until 10 _lib_dead "$master2"
ok "nginx with 'daemon on' (pid $master2 forked, its parent exited): 20 of 20 requests 200"

preload_daemon_stop
pass "nginx with 2 workers under the shim: curl, wrk and a reload under load, all 200, no socket error; daemon on"
