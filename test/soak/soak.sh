#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/soak/soak.sh — a bounded soak of one dpsockd under mixed load (not in
# CI: it runs for half an hour by default).
#
#   test/soak/soak.sh [--minutes N] [--warmup N] [--out FILE] [--build DIR]
#
# One dpsockd (two workers, the tests' port on a veth: AF_XDP where the
# machine has it, else af_packet) serves, in namespace A whose kernel has no
# address, unmodified programs under the preload:
#   nginx (master + 2 workers)   wrk keep-alive, and wrk with
#                                "Connection: close" (connection churn)
#   redis-server                 redis-benchmark, pipelined and not
#   memcached                    memcslap set/get
#   sockperf server (UDP)        sockperf ping-pong and throughput over UDP
# all driven from the Linux peer in namespace B, in rounds, for the whole
# run; and a preloaded client in A (curl, downloading from a Linux web
# server in B) killed with -9 every minute and started again. dpsock-stat
# polls the stats segment every second throughout.
#
# Sampled every 30 s: dpsockd's RSS, each port's free mbufs, each worker's
# lwIP memory, open TCP connections and attached clients. At the end:
#   - every pool back to its level before any server started, once the
#     servers stopped (mbufs, lwIP bytes and objects, connections), and no
#     client left attached;
#   - dpsockd's private memory (RssAnon) after the warm-up (--warmup
#     minutes, default 3) does not grow (last sample within 2 % or 4 MiB of
#     the first after it); the clients' segment pages it maps (RssShmem)
#     are reported beside it;
#   - no client error but the killed curl's: wrk socket errors and non-2xx,
#     redis-benchmark and memcslap failures, sockperf errors;
#   - dpsockd stops with status 0, every mbuf back.
# A report (default docs/soak.md) gives the command, the load, the figures
# and the verdicts. Exit 0 when every check held, 1 otherwise, 77 without
# root or a program.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$SELF_DIR/../.." && pwd)
minutes=30 warmup=3 out=$SRC/docs/soak.md build=${DPSOCK_BUILD:-$SRC/build}
cmdline="test/soak/soak.sh $*"
while [ $# -gt 0 ]; do
	case "$1" in
	--minutes) minutes=$2; shift ;;
	--warmup) warmup=$2; shift ;;
	--out) out=$2; shift ;;
	--build) build=$2; shift ;;
	-h | --help) sed -n '3,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "soak.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
	esac
	shift
done
[ "$minutes" -ge 2 ] 2>/dev/null || { echo "soak.sh: --minutes must be at least 2" >&2; exit 2; }
[ "$warmup" -lt "$minutes" ] 2>/dev/null || { echo "soak.sh: --warmup must be below --minutes" >&2; exit 2; }
export DPSOCK_BUILD=$build

TEST_NAME=soak-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd ip nginx redis-server redis-benchmark memcached memcslap wrk sockperf curl python3
require_preload
name=$TEST_NAME
test_topo_up 121
preload_daemon_start "$name"
chmod 755 "$TEST_TMP"
DPID=$DPSOCKD_PID
A=$TOPO_ADDR_A
B=$TOPO_ADDR_B
end=$(($(date +%s) + minutes * 60))
SAMPLES=$TEST_TMP/samples.tsv   # t_s rss_kb anon_kb shmem_kb mbufs_free lwip_bytes lwip_objs tcp_conns clients
ERRS=$TEST_TMP/errors.txt
: >"$ERRS"
err() { echo "$(date +%T) $*" >>"$ERRS"; note "client error: $*"; }

# ---- samples ----------------------------------------------------------------
sample() {
	local t rss anon shm stats mb lb lo tc cl
	t=$(( $(date +%s) - start ))
	read -r rss anon shm < <(awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } /^RssShmem:/ { s = $2 }
		END { print r + 0, a + 0, s + 0 }' "/proc/$DPID/status" 2>/dev/null)
	stats=$("$DPSOCK_STAT" -n "$name" 2>/dev/null)
	sum() { awk -v re="$1" '$1 ~ re { s += $2 } END { printf "%.0f", s }' <<<"$stats"; }
	mb=$(sum '^port\.[0-9]+\.mbufs_free$')
	lb=$(sum '^worker\.[0-9]+\.lwip_mem_bytes$')
	lo=$(sum '^worker\.[0-9]+\.lwip_mem_objs$')
	tc=$(sum '^worker\.[0-9]+\.tcp_conns$')
	cl=$("$DPSOCK_STAT" -n "$name" -v clients -j 2>/dev/null |
		python3 -c 'import json, sys; print(len(json.load(sys.stdin)["clients"]))' 2>/dev/null)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "${rss:-0}" "${anon:-0}" "${shm:-0}" "$mb" "$lb" "$lo" \
		"$tc" "${cl:-0}" >>"$SAMPLES"
}
start=$(date +%s)
: >"$SAMPLES"
sample
BASE=$(tail -n 1 "$SAMPLES")   # before any server: no pcb, no client

# ---- the servers under the shim -------------------------------------------
pfx=$TEST_TMP/nginx
mkdir -p "$pfx/www" "$pfx/logs" "$pfx/tmp"
head -c 4096 /dev/urandom >"$pfx/www/4k.bin"
cat >"$pfx/nginx.conf" <<EOF
daemon off;
worker_processes 2;
pid $pfx/nginx.pid;
error_log $pfx/logs/error.log warn;
events { worker_connections 4096; }
http {
	access_log off;
	client_body_temp_path $pfx/tmp/body; proxy_temp_path $pfx/tmp/proxy;
	fastcgi_temp_path $pfx/tmp/fastcgi; uwsgi_temp_path $pfx/tmp/uwsgi; scgi_temp_path $pfx/tmp/scgi;
	keepalive_requests 1000000;
	server { listen $A:8080; root $pfx/www; }
}
EOF
preload_start nginx nginx -p "$pfx" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log"
preload_start redis redis-server --bind "$A" --port 6379 --save "" --appendonly no \
	--protected-mode no --dir "$TEST_TMP"
preload_start memcached memcached -u root -l "$A" -p 11211 -U 0 -m 64 -c 4096
preload_start sockperf sockperf server -i "$A" -p 11111
wait_tcp_port "$TOPO_NS_B" "$A" 8080 20
wait_tcp_port "$TOPO_NS_B" "$A" 6379 20
wait_tcp_port "$TOPO_NS_B" "$A" 11211 20

# the killed client's server: a Linux web server in B
mkdir -p "$TEST_TMP/www"
head -c $((64 * 1024 * 1024)) /dev/urandom >"$TEST_TMP/www/64m.bin"
peer_start httpd python3 -m http.server --bind "$B" --directory "$TEST_TMP/www" 8000
wait_tcp_port "$TOPO_NS_B" "$B" 8000 20


# dpsock-stat polling, the whole run
( while [ "$(date +%s)" -lt "$end" ]; do "$DPSOCK_STAT" -n "$name" -i 1 -c 5 >/dev/null 2>&1 ||
	echo "dpsock-stat failed" >>"$TEST_TMP/stat.err"; done ) &
STAT_LOOP=$!
on_exit "kill $STAT_LOOP 2>/dev/null"

# ---- the load, in rounds until the end --------------------------------------
load_round() {
	local out
	out=$(in_b wrk -t2 -c32 -d20s "http://$A:8080/4k.bin" 2>&1)
	grep -qE 'Socket errors|Non-2xx' <<<"$out" && err "wrk keep-alive: $(grep -E 'Socket errors|Non-2xx' <<<"$out" | tr '\n' ' ')"
	grep -q 'Requests/sec' <<<"$out" || err "wrk keep-alive: no result: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
	echo "wrk-ka $(awk '/Requests\/sec/ { print $2 }' <<<"$out")" >>"$TEST_TMP/rates.txt"
	out=$(in_b wrk -t2 -c16 -d10s -H 'Connection: close' "http://$A:8080/4k.bin" 2>&1)
	grep -qE 'Non-2xx' <<<"$out" && err "wrk churn: $(grep -E 'Non-2xx' <<<"$out")"
	# connect errors under churn would be refusals: none expected
	grep -qE 'Socket errors: connect [1-9]|read [1-9]|write [1-9]|timeout [1-9]' <<<"$out" &&
		err "wrk churn: $(grep 'Socket errors' <<<"$out")"
	echo "wrk-churn $(awk '/Requests\/sec/ { print $2 }' <<<"$out")" >>"$TEST_TMP/rates.txt"
	out=$(in_b timeout 120 redis-benchmark -h "$A" -p 6379 -q -n 50000 -c 20 -P 8 -t set,get,incr 2>&1) ||
		err "redis-benchmark -P 8: status $?: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
	grep -qiE 'error|refused|reset' <<<"$out" && err "redis-benchmark: $(grep -iE 'error|refused|reset' <<<"$out" | head -n 2 | tr '\n' ' ')"
	out=$(in_b timeout 120 redis-benchmark -h "$A" -p 6379 -q -n 20000 -c 50 -t ping 2>&1) ||
		err "redis-benchmark ping: status $?"
	for t in set get; do
		out=$(in_b timeout 120 memcslap --servers="$A:11211" --test=$t --concurrency=4 \
			--execute-number=5000 2>&1) || err "memcslap $t: status $?: $(tail -n 2 <<<"$out" | tr '\n' ' ')"
	done
	out=$(in_b timeout 30 sockperf ping-pong -i "$A" -p 11111 -t 5 -m 64 2>&1)
	grep -q 'ERROR' <<<"$out" && err "sockperf pp: $(grep -m1 ERROR <<<"$out")"
	out=$(in_b timeout 30 sockperf throughput -i "$A" -p 11111 -t 5 -m 1024 2>&1)
	grep -q 'ERROR' <<<"$out" && err "sockperf tp: $(grep -m1 ERROR <<<"$out")"
}

# the killed client: every minute a fresh preloaded curl, killed with -9
killer() {
	local n=0
	while [ "$(date +%s)" -lt $((end - 30)) ]; do
		preload_start "victim" curl -s --limit-rate 5M -o /dev/null "http://$B:8000/64m.bin"
		sleep 60
		kill -KILL "$PRELOAD_PID" 2>/dev/null
		wait "$PRELOAD_PID" 2>/dev/null
		n=$((n + 1))
		echo "$n" >"$TEST_TMP/kills"
	done
}
killer &
KILLER=$!
on_exit "kill $KILLER 2>/dev/null"

rounds=0
next_sample=$(($(date +%s) + 30))
while [ "$(date +%s)" -lt "$end" ]; do
	load_round
	rounds=$((rounds + 1))
	if [ "$(date +%s)" -ge "$next_sample" ]; then
		sample
		next_sample=$(($(date +%s) + 30))
	fi
done
wait "$KILLER" 2>/dev/null
kill "$STAT_LOOP" 2>/dev/null
wait "$STAT_LOOP" 2>/dev/null

# ---- the end: quiet, then the pools ------------------------------------------
for l in nginx redis memcached sockperf; do preload_stop "$l" || true; done
# every connection gone (lwIP's TIME_WAIT is 10 s)
poll_until 60 bash -c "[ \"\$(\"$DPSOCK_STAT\" -n $name 2>/dev/null | awk '\$1 ~ /tcp_conns\$/ { s += \$2 } END { print s + 0 }')\" = 0 ]" || true
sleep 12
sample
FINAL=$(tail -n 1 "$SAMPLES")
rc=0
dpsockd_stop || rc=$?
mbufs_back=$(grep -c 'mbufs back in the pool' "$DPSOCKD_LOG")
kills=$(cat "$TEST_TMP/kills" 2>/dev/null || echo 0)
stat_fails=$(wc -l <"$TEST_TMP/stat.err" 2>/dev/null || echo 0)

mkdir -p "$(dirname "$out")"
python3 - "$SAMPLES" "$BASE" "$FINAL" "$warmup" "$ERRS" "$rc" "$mbufs_back" "$kills" "$stat_fails" \
	"$rounds" "$minutes" "$cmdline" "$TEST_TMP/rates.txt" "$out" "$TEST_PORT" <<'PY'
import statistics, sys
(samples, base, final, warmup, errs, rc, mbufs_back, kills, stat_fails, rounds, minutes, cmd,
 rates, out, port) = sys.argv[1:16]
cols = ['t', 'rss_kb', 'anon_kb', 'shmem_kb', 'mbufs_free', 'lwip_bytes', 'lwip_objs', 'tcp_conns',
        'clients']
rows = [dict(zip(cols, map(float, l.split()))) for l in open(samples) if l.strip()]
b = dict(zip(cols, map(float, base.split())))
f = dict(zip(cols, map(float, final.split())))
after = [r for r in rows[:-1] if r['t'] >= float(warmup) * 60]
errors = [l.strip() for l in open(errs) if l.strip()]
verdicts = []
def check(name, ok, detail):
    verdicts.append((name, ok, detail))
# at least the start level: a frame in flight when the first sample was
# taken (an ARP, a probe) leaves one mbuf fewer free there
check('mbufs back to the start level', f['mbufs_free'] >= b['mbufs_free'],
      '%d free at the start, %d at the end' % (b['mbufs_free'], f['mbufs_free']))
check('lwIP memory back to the start level',
      f['lwip_bytes'] == b['lwip_bytes'] and f['lwip_objs'] == b['lwip_objs'],
      '%d B / %d objects at the start, %d B / %d objects at the end' %
      (b['lwip_bytes'], b['lwip_objs'], f['lwip_bytes'], f['lwip_objs']))
check('no connection left', f['tcp_conns'] == 0, '%d TCP connections at the end' % f['tcp_conns'])
check('no client left attached', f['clients'] == 0,
      '%d attached at the end (the killed ones and the stopped servers detached)' % f['clients'])
# dpsockd's own memory is RssAnon (a leak grows it). RssShmem counts the
# pages of the clients' segments (memfd, shared with the programs) that
# their sockets' slots and FIFOs touched: it follows which slots the
# programs' connections used, bounded by the segments, and goes with the
# group; it is reported, not judged.
if len(after) >= 2:
    r0, r1 = after[0]['anon_kb'], after[-1]['anon_kb']
    grow = r1 - r0
    check('dpsockd private memory (RssAnon) flat after the warm-up', grow <= max(0.02 * r0, 4096),
          '%.1f MiB after %s min, %.1f MiB at %.0f min (%+.1f MiB); segments touched (RssShmem) '
          '%.1f -> %.1f MiB' % (r0 / 1024, warmup, r1 / 1024, after[-1]['t'] / 60, grow / 1024,
                                after[0]['shmem_kb'] / 1024, after[-1]['shmem_kb'] / 1024))
else:
    check('dpsockd private memory (RssAnon) flat after the warm-up', False,
          'not enough samples after the warm-up')
check('no client error but the killed ones', not errors,
      'none' if not errors else '%d: %s' % (len(errors), '; '.join(errors[:5])))
check('dpsock-stat answered throughout', stat_fails == '0', '%s failed polls' % stat_fails)
check('dpsockd stopped cleanly, every mbuf back', rc == '0' and int(mbufs_back) > 0,
      'status %s' % rc)
rt = {}
for l in open(rates) if __import__('os').path.exists(rates) else []:
    k, _, v = l.partition(' ')
    try:
        rt.setdefault(k, []).append(float(v))
    except ValueError:
        pass
L = ['# Soak: one dpsockd under mixed load', '',
     'Repeat with `%s` (as root, after `scripts/build`).' % cmd.strip(), '',
     '%s minutes, %s load rounds: preloaded nginx (wrk keep-alive 32 connections, and 16 '
     'connections with `Connection: close`), redis-server (redis-benchmark set/get/incr pipelined '
     'by 8, ping with 50 clients), memcached (memcslap set/get, 4 threads), a UDP sockperf server '
     '(ping-pong and throughput), all driven from the Linux peer; a preloaded curl killed with -9 '
     'every minute (%s kills); dpsock-stat polling every second. Two workers, %s on a '
     'veth, 2 vCPUs shared by everything.' % (minutes, rounds, kills, port), '']
if rt:
    L.append('Median rates per round: ' + ', '.join('%s %.0f req/s' % (k, statistics.median(v))
                                                  for k, v in sorted(rt.items())) + '.')
    L.append('')
L += ['| check | result | figures |', '|---|---|---|']
for n, ok, d in verdicts:
    L.append('| %s | %s | %s |' % (n, 'pass' if ok else '**FAIL**', d))
L += ['', '| minute | dpsockd RSS MiB | of which private (RssAnon) | of which segments (RssShmem) '
      '| free mbufs | lwIP bytes | lwIP objects | TCP connections | clients |',
      '|---|---|---|---|---|---|---|---|---|']
for r in rows:
    L.append('| %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %d | %d |' % (
             r['t'] / 60, r['rss_kb'] / 1024, r['anon_kb'] / 1024, r['shmem_kb'] / 1024,
             r['mbufs_free'], r['lwip_bytes'], r['lwip_objs'], r['tcp_conns'], r['clients']))
open(out, 'w').write('\n'.join(L) + '\n')
print('\n'.join(L))
sys.exit(0 if all(ok for _, ok, _ in verdicts) else 1)
PY
verdict=$?
[ "$verdict" = 0 ] && pass "soak of $minutes min: every pool back, private memory flat, no client error" ||
	fail "soak: some checks failed (see $out)"
