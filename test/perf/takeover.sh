#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/takeover.sh — what a takeover costs the programs under the
# preload: N takeovers in a row (lib.sh's dpsockd_takeover: a second dpsockd
# with the same configuration and --takeover takes the running one's
# programs over, the old one exits 0) while these run through dpsockd
# (2 workers, lcores 0-1, the port on AF_XDP, else af_packet; not pinned:
# dpsockd's two lcores are the machine's two CPUs) from namespace B:
#
#   ping-pong   test/tools/pace_pingpong.py, preloaded server, a client in
#               B sending a 16-byte record every 1 ms over one TCP
#               connection and reading the echoes; before each takeover the
#               script writes the takeover's number into the client's mark
#               file, so the largest gap between echoes in that window is
#               the takeover's blackout as the peer sees it (with the
#               scheduling noise of a loaded machine: the window before the
#               first takeover gives that baseline). No record may be lost,
#               reordered or changed, and the connection never reset.
#   UDP         the same tool over UDP, a record every 0.5 ms, echoed:
#               datagrams lost per takeover window, against the blackout
#               (lost x 0.5 ms is the time the feed went unanswered)
#   nginx       Debian's nginx (1 worker process) preloaded, wrk -t1 -c16
#               keep-alive from B through all the takeovers (stopped with
#               SIGINT): requests, errors (socket errors and non-2xx: must
#               be 0)
#   redis       redis-server preloaded, redis-benchmark -t set,get -c 8
#               -n 20000 from B in a loop through all the takeovers: runs,
#               requests, errors (failed runs and error lines: must be 0)
#   stream      1 GiB from socat in B (random bytes, paced so that it spans
#               the takeovers, then at full speed) to a preloaded socat that
#               hashes it: sha256 equal
#   counters    dpsockd's worker counters (dpsock-stat) before the first
#               takeover and after the last, side by side
#
# Per takeover: dpsockd's own "blackout N ms" figure, the ping-pong's gap,
# the UDP loss, the time from the new process's start to the old one's
# exit; min, median, p90 and max over the N takeovers.
#
#   test/perf/takeover.sh [--quick] [--takeovers N] [--time S] [--out FILE]
#                         [--build DIR] [--write-docs] [--shared]
#
# --shared: the port is shared with A's kernel, which has the address
# (net_af_xdp; dpsockd's XDP program goes over with the rest).
# --takeovers N (default 20, --quick 5); --time S: seconds of load between
# two takeovers (default 3, --quick 2); --rounds is taken and ignored (one
# run of N takeovers). The markdown report goes to --out FILE, or with
# --write-docs to docs/perf/takeover.md, else to BUILD/perf/takeover.md
# (--quick: BUILD/perf-quick/takeover.md), and is printed. About 2.5 min
# with the defaults. Exit 0 when every takeover happened and every load ran
# without an error, 1 otherwise (the report says which), 77 without root.
set -uo pipefail

SELF_DIR=$(cd "$(dirname "$0")" && pwd)
takeovers='' write_docs=0 out_given=0 shared=0
for a in "$@"; do [ "$a" != --out ] || out_given=1; done
perf_opt() {
	case "$1" in
	--takeovers) takeovers=${2-}; PERF_TOOK=2 ;;
	--write-docs) write_docs=1 ;;
	--shared) shared=1 ;;
	*) return 1 ;;
	esac
}
# shellcheck source=perf_args.sh
. "$SELF_DIR/perf_args.sh"
perf_args takeover.md 2 3 "$@"
if [ "$quick" = 1 ]; then takeovers=${takeovers:-5}; else takeovers=${takeovers:-20}; fi
[ "$takeovers" -ge 1 ] 2>/dev/null || { echo "takeover.sh: --takeovers must be a number >= 1" >&2; exit 2; }
if [ "$out_given" = 0 ]; then
	if [ "$write_docs" = 1 ]; then
		out=$SRC/docs/perf/takeover.md
	elif [ "$quick" = 0 ]; then
		out=$build/perf/takeover.md
	fi
fi

TEST_NAME=tkperf-$$
# shellcheck source=../integration/lib.sh
. "$SRC/test/integration/lib.sh"
require_root
require_cmd ip python3 nginx wrk redis-server redis-benchmark socat
require_tools dpsockd dpsock-stat
[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs (dpsockd's two workers)"
require_preload
[ "$PRELOAD_KERNEL" != 1 ] || skip "a takeover needs dpsockd (DPSOCK_PRELOAD_KERNEL=1 is set)"
PP=$SRC/test/tools/pace_pingpong.py
FAILED=0
failed() { note "FAILED: $*"; FAILED=1; echo "$*" >>"$TEST_TMP/failures"; }
: >"$TEST_TMP/failures"
XFER_BYTES=$((1024 * 1024 * 1024))
UDP_MS=0.5
COUNTERS=(tcp_accepted tcp_closed tcp_reset tcp_refused tcp_rx_bytes tcp_tx_bytes udp_rx udp_tx
	tcp_rexmit tcp_rto rx_packets tx_packets tx_drops)

test_topo_up 208
PRELOAD_SHARED=$shared preload_daemon_start "$TEST_NAME"
chmod 755 "$TEST_TMP" # nginx's worker (nobody) reaches the control socket and its files
A=$TOPO_ADDR_A
MARK=$TEST_TMP/mark
STOP=$TEST_TMP/stop
FAST=$TEST_TMP/fast
mark() {
	printf '%s\n' "$1" >"$MARK.tmp"
	mv "$MARK.tmp" "$MARK"
	sleep 0.05
}

# ---- the servers, preloaded ------------------------------------------------------
preload_start pp-srv python3 "$PP" server --host "$A" --port 7100
preload_start pp-usrv python3 "$PP" server --udp --host "$A" --port 7101
pfx=$TEST_TMP/nginx
mkdir -p "$pfx/www"
printf 'dpsock takeover benchmark page, 64 bytes long: 0123456789abcdef\n' >"$pfx/www/index.html"
nginx_conf "$pfx" 1 <<EOF
access_log off;
keepalive_requests 1000000;
keepalive_timeout 300s;
server {
	listen $A:8080;
	root $pfx/www;
}
EOF
preload_start nginx nginx -p "$pfx" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log"
preload_start redis redis-server --bind "$A" --port 6379 --protected-mode no --save '' \
	--appendonly no --daemonize no --dir "$TEST_TMP" --logfile '' --io-threads 1
# the stream's receiver: socat, its bytes hashed (no GiB file on disk)
# shellcheck disable=SC2016 # expanded by the inner bash
preload_start sink bash -c 'set -o pipefail; socat -u "TCP-LISTEN:7200,bind=$1,reuseaddr" STDOUT | python3 -c "
import hashlib, sys
h, n = hashlib.sha256(), 0
while True:
    b = sys.stdin.buffer.read(1 << 20)
    if not b:
        break
    h.update(b)
    n += len(b)
print(n, h.hexdigest())
" >"$2"' sink "$A" "$TEST_TMP/sink.sum"
wait_until 20 grep -q listening "$TEST_TMP/pp-srv.log"
wait_until 20 grep -q listening "$TEST_TMP/pp-usrv.log"
wait_tcp_port "$TOPO_NS_B" "$A" 8080 20
wait_tcp_port "$TOPO_NS_B" "$A" 6379 20
preload_listener 7200 sink "$TEST_TMP/sink.log"
note "preloaded: ping-pong servers (TCP 7100, UDP 7101), nginx (8080), redis-server (6379), socat (7200)"

# ---- the load, from B ------------------------------------------------------------
rm -f "$MARK" "$STOP" "$FAST"
mark 0
peer_start pp-cli python3 "$PP" client --host "$A" --port 7100 --mark "$MARK"
peer_start pp-ucli python3 "$PP" client --udp --host "$A" --port 7101 --interval-ms "$UDP_MS" --mark "$MARK"
peer_start wrk wrk -t1 -c16 -d 3600s --timeout 5s "http://$A:8080/"
# shellcheck disable=SC2016 # expanded by the inner bash
peer_start rb bash -c 'while [ ! -e "$1" ]; do
	redis-benchmark -h "$2" -p 6379 -c 8 -n 20000 -t set,get --csv 2>&1
	echo "rb-exit=$?"
done' rb "$STOP" "$A"
# 1 GiB, paced to last about as long as the takeovers (then, once FAST
# exists, at full speed); the sender hashes what it sends
plan_s=$(awk -v n="$takeovers" -v s="$secs" 'BEGIN { printf "%d", n * (s + 1.5) }')
# shellcheck disable=SC2016 # expanded by the inner bash and python
peer_start xfer bash -c 'set -o pipefail; python3 -c "
import hashlib, os, sys, time
total, rate, fast, sumf = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
out, h, n, t0 = sys.stdout.buffer, hashlib.sha256(), 0, time.monotonic()
while n < total:
    b = os.urandom(min(65536, total - n))
    h.update(b)
    out.write(b)
    n += len(b)
    if not os.path.exists(fast):
        d = n / rate - (time.monotonic() - t0)
        if d > 0:
            time.sleep(d)
out.flush()
open(sumf, \"w\").write(\"%d %s\n\" % (n, h.hexdigest()))
" "$1" "$2" "$3" "$4" | socat -u - "TCP:$5:7200"' xfer "$XFER_BYTES" \
	$((XFER_BYTES / (plan_s > 0 ? plan_s : 1))) "$FAST" "$TEST_TMP/xfer.sum" "$A"
xfer_pid=$PEER_PID
sleep 3
for l in pp-cli pp-ucli wrk rb xfer; do
	kill -0 "${_LIB_PRELOAD_PID[$l]}" 2>/dev/null || fail "$l ended before the first takeover: $(tail -n 3 "$TEST_TMP/$l.log")"
done
grep -q '^status .* received=[1-9]' "$TEST_TMP/pp-cli.log" || fail "the ping-pong gets no echo: $(tail -n 2 "$TEST_TMP/pp-cli.log")"
counters() { local c; for c in "${COUNTERS[@]}"; do printf '%s %s\n' "$c" "$(preload_stat "$c" 2>/dev/null || echo '?')"; done; }
counters >"$TEST_TMP/counters.before"
note "load running: ping-pong 1 ms, UDP every $UDP_MS ms, wrk -c16, redis-benchmark loop, 1 GiB stream over ~${plan_s}s"

# ---- N takeovers -------------------------------------------------------------------
TK=$TEST_TMP/takeovers.tsv # i old new blackout_ms took_ms stream_in_flight
: >"$TK"
t_start=$(_lib_now_ms)
for ((i = 1; i <= takeovers; i++)); do
	mark "$i"
	# shellcheck disable=SC2119 # its CONF is optional
	preload_daemon_takeover
	fl=0
	kill -0 "$xfer_pid" 2>/dev/null && fl=1
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$TAKEOVER_OLD_PID" "$DPSOCKD_PID" "${TAKEOVER_BLACKOUT_MS:-}" \
		"$TAKEOVER_TOOK_MS" "$fl" >>"$TK"
	sleep "$secs"
done
mark end
t_end=$(_lib_now_ms)
note "$takeovers takeovers in $(((t_end - t_start) / 1000)) s"

# ---- the load's verdicts ----------------------------------------------------------
touch "$FAST"
rc=0
preload_stop wrk INT || rc=$?
[ "$rc" -eq 0 ] || failed "wrk exited with status $rc"
touch "$STOP"
preload_wait rb 120 || true
rc=0
preload_wait xfer 300 || rc=$?
[ "$rc" -eq 0 ] || failed "the stream's sender (socat in B) exited with status $rc: $(tail -n 2 "$TEST_TMP/xfer.log" | tr '\n' ' ')"
rc=0
preload_wait sink 60 || rc=$?
[ "$rc" -eq 0 ] || failed "the preloaded socat receiver exited with status $rc: $(tail -n 2 "$TEST_TMP/sink.log" | tr '\n' ' ')"
rc=0
preload_stop pp-cli TERM || rc=$?
[ "$rc" -eq 0 ] || failed "the TCP ping-pong saw errors (status $rc): $(grep '^{' "$TEST_TMP/pp-cli.log" | tail -n 1 | head -c 600)"
preload_stop pp-ucli TERM || true
sleep 0.5
counters >"$TEST_TMP/counters.after"
for s in pp-srv pp-usrv; do
	rc=0
	preload_stop "$s" TERM || rc=$?
	[ "$rc" -eq 0 ] || failed "the preloaded $s exited with status $rc: $(tail -n 1 "$TEST_TMP/$s.log")"
done
rc=0
preload_stop nginx QUIT || rc=$?
[ "$rc" -eq 0 ] || failed "nginx exited with status $rc on SIGQUIT"
rc=0
preload_stop redis TERM || rc=$?
[ "$rc" -eq 0 ] || failed "redis-server exited with status $rc"
rc=0
# shellcheck disable=SC2119 # the last dpsockd
dpsockd_stop || rc=$?
clean=yes
if [ "$rc" -ne 0 ] || ! grep -q 'all [0-9]* mbufs back in the pool' "$DPSOCKD_LOG"; then
	clean="no (status $rc)"
	failed "the last dpsockd did not stop cleanly (status $rc; $DPSOCKD_LOG)"
fi

# ---- the report ------------------------------------------------------------------------
mkdir -p "$(dirname "$out")"
python3 - "$TEST_TMP" "$takeovers" "$secs" "$UDP_MS" \
	"$TEST_PMD$([ "$shared" = 0 ] || echo ', shared with the kernel')" "$clean" \
	"$(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)" \
	"$(uname -n), $(nproc) CPUs, kernel $(uname -r)" $(((t_end - t_start) / 1000)) >"$out" <<'PYEOF' ||
import json, os, re, statistics, sys
tmp, n, secs, udp_ms, pmd, clean, version, host, elapsed = sys.argv[1:10]
n, udp_ms = int(n), float(udp_ms)
P = lambda f: os.path.join(tmp, f)
failures = []

def last_json(label):
    try:
        lines = [l for l in open(P(label + ".log")) if l.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except OSError:
        return None

def stats(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return ["—"] * 4
    p90 = xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]
    f = lambda v: "%.1f" % v
    return [f(xs[0]), f(statistics.median(xs)), f(p90), f(xs[-1])]

tk = []
for line in open(P("takeovers.tsv")):
    i, old, new, bo, took, fl = line.rstrip("\n").split("\t")
    tk.append({"i": i, "old": old, "new": new, "bo": float(bo) if bo else None,
               "took": float(took), "fl": fl == "1"})
tcp, udp = last_json("pp-cli"), last_json("pp-ucli")
win = lambda r, m: next((w for w in (r or {}).get("windows", []) if w["mark"] == m), None)
for t in tk:
    w, u = win(tcp, t["i"]), win(udp, t["i"])
    t["gap"] = w["max_gap_ms"] if w else None
    t["stall"] = w.get("max_send_gap_ms") if w else None
    t["ulost"] = u["lost"] if u else None
    t["ugap"] = u["max_gap_ms"] if u else None
base = win(tcp, "0")
ubase = win(udp, "0")

print("# Takeover under load\n")
print("`test/perf/takeover.sh`: %d takeovers in a row, %s s of load between two, over %s s"
      " (dpsock %s, %s; port %s). Each takeover: a second dpsockd with the same configuration"
      " and `--takeover` takes the running one's preloaded programs over (listeners, connections"
      " with their data in flight, UDP sockets, the programs' control connections), the old one"
      " exits 0. dpsockd: 2 workers on lcores 0-1 (the machine's two CPUs, shared with the"
      " programs and the clients: nothing is pinned). The peers in namespace B: a TCP ping-pong"
      " (a 16-byte record every 1 ms, echoed), a UDP one (every %g ms), wrk against nginx,"
      " redis-benchmark against redis-server, a 1 GiB stream into socat.\n"
      % (n, secs, elapsed, version, host, pmd, udp_ms))
print("## Blackout per takeover\n")
print("| figure | min | median | p90 | max |")
print("|---|---|---|---|---|")
print("| dpsockd's own `blackout N ms` (ms) | %s |" % " | ".join(stats(t["bo"] for t in tk)))
print("| TCP ping-pong: largest gap between echoes in the takeover's window (ms) | %s |"
      % " | ".join(stats(t["gap"] for t in tk)))
print("| UDP ping-pong: largest gap (ms) | %s |" % " | ".join(stats(t["ugap"] for t in tk)))
print("| UDP ping-pong: datagrams lost in the window (x %g ms) | %s |" % (udp_ms, " | ".join(stats(t["ulost"] for t in tk))))
print("| whole takeover: the new process's start to the old one's exit (ms) | %s |"
      % " | ".join(stats(t["took"] for t in tk)))
print()
print("Baseline, the window before the first takeover (the machine's own noise): TCP largest gap"
      " %s ms (the client's own largest stall %s ms), UDP largest gap %s ms, UDP lost %s of %s.\n" % (
          base["max_gap_ms"] if base else "—", base.get("max_send_gap_ms", "—") if base else "—",
          ubase["max_gap_ms"] if ubase else "—",
          ubase["lost"] if ubase else "—", ubase["sent"] if ubase else "—"))
print("## Each takeover\n")
print("TCP client stall: the largest gap between two of the TCP client's own sends in the window"
      " (the client kept off the CPU; a TCP gap no larger than it is the client's, not dpsock's).\n")
print("| # | pid old → new | dpsockd blackout ms | TCP gap ms | TCP client stall ms | UDP gap ms | UDP lost | UDP lost × %g ms | whole ms | stream in flight |" % udp_ms)
print("|---|---|---|---|---|---|---|---|---|---|")
fmt = lambda v, f="%.1f": "—" if v is None else f % v
for t in tk:
    print("| %s | %s → %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        t["i"], t["old"], t["new"], fmt(t["bo"]), fmt(t["gap"]), fmt(t["stall"]), fmt(t["ugap"]), fmt(t["ulost"], "%d"),
        fmt(None if t["ulost"] is None else t["ulost"] * udp_ms), fmt(t["took"], "%.0f"),
        "yes" if t["fl"] else "no"))
print()

# ---- the loads
print("## The load through the takeovers\n")
print("| load | result | errors |")
print("|---|---|---|")
if tcp:
    e = tcp.get("errors", [])
    print("| TCP ping-pong, 1 ms | %d records sent, %d echoed, %d lost; max gap %s ms, p99 rtt %s ms |"
          " %s |" % (tcp["sent"], tcp["received"], tcp["lost"], tcp["max_gap_ms"], tcp["p99_rtt_ms"],
                     "; ".join(e)[:300] if e else "0"))
    if e or tcp["lost"]:
        failures.append("TCP ping-pong errors")
else:
    print("| TCP ping-pong | no result | — |")
    failures.append("TCP ping-pong: no result")
if udp:
    inw = sum(w["lost"] for w in udp["windows"] if w["mark"] not in ("0", "end", None))
    print("| UDP ping-pong, %g ms | %d sent, %d echoed, %d lost (%.3f %%): %d in takeover windows,"
          " %d outside; reordered %d | %s |" % (
              udp_ms, udp["sent"], udp["received"], udp["lost"],
              100.0 * udp["lost"] / max(1, udp["sent"]), inw, udp["lost"] - inw, udp.get("reordered", 0),
              "; ".join(udp.get("errors", []))[:300] or "0"))
else:
    print("| UDP ping-pong | no result | — |")
try:
    w = open(P("wrk.log")).read()
    reqs = re.search(r"(\d+) requests in ([\d.]+)(\w+)", w)
    rps = re.search(r"Requests/sec:\s*([\d.]+)", w)
    se = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", w)
    nx = re.search(r"Non-2xx or 3xx responses: (\d+)", w)
    errs = (sum(int(x) for x in se.groups()) if se else 0) + (int(nx.group(1)) if nx else 0)
    print("| nginx, wrk -t1 -c16 keep-alive | %s requests, %s req/s | %d%s |" % (
        reqs.group(1) if reqs else "?", rps.group(1) if rps else "?", errs,
        (" (%s)" % ", ".join(x for x in (se.group(0) if se else "", nx.group(0) if nx else "") if x)) if errs else ""))
    if errs or not reqs:
        failures.append("wrk: %d errors" % errs)
except OSError:
    print("| nginx, wrk | no result | — |")
    failures.append("wrk: no result")
try:
    # one run: its output lines, then "rb-exit=STATUS"; a run failed when
    # its status is not 0 or it printed an error
    runs, cur, bad = [], [], []
    for l in open(P("rb.log")).read().splitlines():
        if l.startswith("rb-exit="):
            err = [x for x in cur if re.search(r"error|reset|refused", x, re.I)]
            runs.append((int(l.split("=")[1]), err, cur))
            if int(l.split("=")[1]) != 0 or err:
                bad.append((err or ["status %s" % l.split("=")[1]])[0])
            cur = []
        else:
            cur.append(l)
    rates = [float(x.split('"')[3]) for _, _, c in runs for x in c if x.startswith(('"SET"', '"GET"'))]
    ok_runs = len(runs) - len(bad)
    print("| redis-server, redis-benchmark -c 8 -t set,get -n 20000, in a loop | %d runs (%d requests in"
          " the %d without error), median %s req/s | %d failed run(s)%s |" % (
              len(runs), ok_runs * 40000, ok_runs, "%.0f" % statistics.median(rates) if rates else "?",
              len(bad), (" (%s)" % "; ".join(sorted(set(bad)))[:200]) if bad else ""))
    if bad or not runs:
        failures.append("redis-benchmark: %d failed run(s)" % len(bad))
except OSError:
    print("| redis | no result | — |")
try:
    sent = open(P("xfer.sum")).read().split()
    got = open(P("sink.sum")).read().split()
    same = sent == got
    print("| 1 GiB stream, socat B → preloaded socat | %s bytes sent, %s received, in flight during %d of %d"
          " takeovers | %s |" % (sent[0], got[0], sum(t["fl"] for t in tk), n, "0 (sha256 equal)" if same else "sha256 differs"))
    if not same:
        failures.append("stream: sha256 differs")
except (OSError, IndexError):
    print("| 1 GiB stream | no result | — |")
    failures.append("stream: no result")
print("| dpsockd's clean stop after the last takeover | %s | — |" % clean)
print()

print("## dpsockd's counters (dpsock-stat, summed over the workers)\n")
print("Before the first takeover and after the last (the last process's view: the counters travel"
      " with the takeover).\n")
print("| counter | before | after |")
print("|---|---|---|")
b = dict(l.split() for l in open(P("counters.before")) if len(l.split()) == 2)
a = dict(l.split() for l in open(P("counters.after")) if len(l.split()) == 2)
for k in b:
    print("| %s | %s | %s |" % (k, b[k], a.get(k, "—")))
fl = open(P("failures")).read().strip()
if fl or failures:
    print("\n**Failures:** " + "; ".join([x for x in fl.splitlines() if x] + failures))
sys.exit(1 if failures else 0)
PYEOF
	failed "the report says a load saw errors (see $out)"
cat "$out"
[ "$FAILED" = 0 ] || exit 1
