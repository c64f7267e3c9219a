#!/usr/bin/env bash
# dpsock-stat and the stats segment against a known exchange with the Linux
# stack: dpsock-echo --raw (two workers) on the test port in namespace A,
# ping / python sockets in namespace B.
#
#   1. N pings: icmp_echo and lwip_icmp_xmit rise by exactly N; the port's
#      rx/tx packets rise by what the workers took/sent (N + ARP, counted).
#   2. The tables (-v basic) carry the numbers of the plain lines and of
#      --json (which python3 -m json.tool parses).
#   3. -d 2 -i 2 -c 2: K pings sent between the two samples show as
#      K / interval per second (table and JSON).
#   4. Sockets: both workers list their LISTEN socket; a Linux client's
#      connection is listed ESTABLISHED with its addresses and byte counts,
#      disappears once closed, and its summary is in DPSOCK_STATS_FILE.
#   5. -z zeroes every counter (then counting resumes from 0).
#   6. --log-level worker=debug is acknowledged (an unknown module is
#      refused with exit 1); the worker's debug line appears at stop.
#   7. DPDK telemetry: /dpsock/workers has the icmp_echo dpsock-stat shows.
#   8. AF_XDP's socket counters (XDP_STATISTICS): with the instance stopped
#      (SIGSTOP), a burst of datagrams from B overruns the socket's rings;
#      after SIGCONT the port shows the frames the kernel dropped for want
#      of an RX ring slot or a fill-ring buffer, and no refused TX
#      descriptor. On af_packet the five counters stay 0.
#   9. -p PID finds the instance; mc view; an unknown name exits 1; an
#      instance that stops while `-i 1 -c 100` cycles ends it with status 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip ping python3
require_tools dpsock-echo dpsock-stat
name=$TEST_NAME
test_topo_up 80
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
# shellcheck disable=SC2207
eal=($(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name"))
sockfile=$TEST_TMP/sockets.txt
export DPSOCK_STATS_FILE=$sockfile
app_start "$name" "$conf" dpsock-echo "${eal[@]}" -- --raw --tcp-only -p 7
unset DPSOCK_STATS_FILE
echo_pid=$APP_PID
stat() { "$DPSOCK_STAT" -n "$name" "$@"; }
grep -q 'DPSOCK_STATS_FILE = ' "$APP_LOG" || fail "DPSOCK_STATS_FILE not logged as a setting"

# sum_json FILE SCOPE COUNTER: sum of a counter over ports or workers in a JSON sample.
sum_json() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(b[sys.argv[3]] for b in d[sys.argv[2]]))' "$@"
}

# table_sum FILE FIRST_TITLE TITLE: sum of the column TITLE of the table whose
# header starts with FIRST_TITLE (cells are right-aligned under their title,
# at least two spaces apart; units such as "B" or "%" are dropped).
table_sum() {
	python3 - "$@" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
first, title = sys.argv[2], sys.argv[3]
total, inside, end = 0.0, False, None
for l in lines:
    if l.startswith(first + " "):
        m = re.search(r"(^|  )" + re.escape(title) + r"(  |$)", l)
        end = m.start() + len(m.group(1)) + len(title) if m else None
        inside = end is not None
        continue
    if inside:
        if not l.strip():
            inside = False
            continue
        cell = re.split(r"\s{2,}", l[:end].rstrip())[-1]
        total += float(cell.split()[0])
print("%g" % total)
EOF
}

# ---- 1. exact counts ----------------------------------------------------------
out=$(in_b ping -q -c 3 -i 0.05 -W 2 "$TOPO_ADDR_A") || fail "no ping reply: $out"
sleep 0.3 # the port block is refreshed every 100 ms
e0=$(stat_sum "$name" icmp_echo)
x0=$(stat_sum "$name" lwip_icmp_xmit)
wr0=$(stat_sum "$name" rx_packets)
wt0=$(stat_sum "$name" tx_packets)
pr0=$(stat_get "$name" port.0.rx_packets)
pt0=$(stat_get "$name" port.0.tx_packets)
arp0=$(stat_sum "$name" arp_in)
# Every request that reaches dpsock is counted once and answered once.
# When the machine is loaded a ping may still be lost on the way (the
# kernel's veth side): then the counts must lie between what came
# back and what was sent, and equal each other.
N=50
out=$(in_b ping -q -c $N -i 0.02 -W 2 "$TOPO_ADDR_A") || true
got=$(echo "$out" | sed -n 's/.* \([0-9]*\) received.*/\1/p')
[ "${got:-0}" -gt 0 ] || fail "no ping answered: $out"
wait_counter_ge "$name" lwip_icmp_xmit $((x0 + got)) 5
sleep 0.3
e1=$(stat_sum "$name" icmp_echo)
x1=$(stat_sum "$name" lwip_icmp_xmit)
wr1=$(stat_sum "$name" rx_packets)
wt1=$(stat_sum "$name" tx_packets)
pr1=$(stat_get "$name" port.0.rx_packets)
pt1=$(stat_get "$name" port.0.tx_packets)
arp1=$(stat_sum "$name" arp_in)
if [ "$got" -ne $N ]; then
	note "$((N - got)) of $N pings lost outside dpsock (loaded machine?): checking $got..$N"
fi
E=$((e1 - e0))
[ "$E" -ge "$got" ] && [ "$E" -le $N ] || fail "icmp_echo rose by $E; sent $N, $got answered"
[ $((x1 - x0)) -eq "$E" ] || fail "lwip_icmp_xmit rose by $((x1 - x0)), icmp_echo by $E"
[ $((wr1 - wr0)) -eq $((E + arp1 - arp0)) ] ||
	fail "workers took $((wr1 - wr0)) frames: $E echo requests + $((arp1 - arp0)) ARP expected"
[ $((pr1 - pr0)) -eq $((wr1 - wr0)) ] ||
	fail "port rx_packets rose by $((pr1 - pr0)), the workers took $((wr1 - wr0))"
[ $((pt1 - pt0)) -eq $((wt1 - wt0)) ] ||
	fail "port tx_packets rose by $((pt1 - pt0)), the workers sent $((wt1 - wt0))"
[ $((wt1 - wt0)) -ge "$E" ] && [ $((wt1 - wt0)) -le $((E + 2)) ] ||
	fail "workers sent $((wt1 - wt0)) frames for $E echo replies"
ok "$N pings ($got answered): icmp_echo +$E, replies +$E, port rx +$((pr1 - pr0)) (ARP $((arp1 - arp0))), tx +$((pt1 - pt0))"

# ---- 2. tables, plain lines and JSON agree ----------------------------------------
stat -v basic >"$TEST_TMP/basic.txt" || fail "dpsock-stat -v basic failed"
stat -v basic --json >"$TEST_TMP/basic.json" || fail "dpsock-stat -v basic --json failed"
python3 -m json.tool "$TEST_TMP/basic.json" >/dev/null || fail "--json does not parse: $(head -c 300 "$TEST_TMP/basic.json")"
cat "$TEST_TMP/basic.txt"
tab_echo=$(table_sum "$TEST_TMP/basic.txt" Worker "ICMP echo")
json_echo=$(sum_json "$TEST_TMP/basic.json" workers icmp_echo)
[ "$tab_echo" = "$e1" ] && [ "$json_echo" = "$e1" ] ||
	fail "icmp_echo: plain $e1, table $tab_echo, json $json_echo"
json_prx=$(sum_json "$TEST_TMP/basic.json" ports rx_packets)
tab_prx=$(table_sum "$TEST_TMP/basic.txt" Port "RX pkt")
[ "$json_prx" = "$pr1" ] && [ "$tab_prx" = "$pr1" ] ||
	fail "port rx_packets: plain $pr1, table $tab_prx, json $json_prx"
stat -v extra >/dev/null || fail "-v extra failed"
stat -v full >"$TEST_TMP/full.txt" || fail "-v full failed"
grep -q '^icmp_echo ' "$TEST_TMP/full.txt" || fail "-v full lacks icmp_echo"
ok "tables, plain lines and --json agree (icmp_echo $e1)"

# ---- 3. per-second deltas ------------------------------------------------------
K=20 # the counts, not the pings answered: a ping lost on the way is not counted
e_before=$(stat_sum "$name" icmp_echo)
"$DPSOCK_STAT" -n "$name" -d 2 -i 2 -c 2 --json >"$TEST_TMP/d2.json" &
d2=$!
"$DPSOCK_STAT" -n "$name" -d 2 -i 2 -c 2 >"$TEST_TMP/d2.txt" &
d2t=$!
# Ping once both took their first sample, i.e. sleep until the second (a
# fixed pause lost the race on a loaded machine: one echo was counted
# before the second sampler's first sample).
sleeping() { [ "$(cat "/proc/$1/wchan" 2>/dev/null)" = hrtimer_nanosleep ]; }
wait_until 10 sleeping "$d2"
wait_until 10 sleeping "$d2t"
# (pingn waits for the replies: ping -c may end before the stack counted
# the last requests, see lib.sh)
out=$(in_b "$PINGN" -c $K -i 0.02 -W 1 "$TOPO_ADDR_A") || true
K=$(($(stat_sum "$name" icmp_echo) - e_before))
wait "$d2" || fail "dpsock-stat -d 2 --json failed"
wait "$d2t" || fail "dpsock-stat -d 2 failed"
python3 -m json.tool "$TEST_TMP/d2.json" >/dev/null || fail "-d 2 --json does not parse"
got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = sum(w["icmp_echo"] for w in d["workers"])
print("%.2f %.3f" % (r * d["interval_s"], r))' "$TEST_TMP/d2.json")
read -r count rate <<<"$got"
awk -v c="$count" -v k=$K 'BEGIN { exit !(c > k - 0.05 && c < k + 0.05) }' ||
	fail "-d 2: icmp_echo $rate/s over the interval = $count, sent $K"
cat "$TEST_TMP/d2.txt"
tab_rate=$(table_sum "$TEST_TMP/d2.txt" Worker "ICMP echo/s")
awk -v r="$tab_rate" -v k=$K 'BEGIN { exit !(r * 2 > k - 0.5 && r * 2 < k + 0.5) }' ||
	fail "-d 2 table: ICMP echo/s $tab_rate over 2 s, sent $K"
ok "-d 2: $K pings between samples = $rate/s (json), $tab_rate/s (table)"

# ---- 4. sockets ------------------------------------------------------------------
listen=$(stat -v sockets -s state=LISTEN | awk '$1 == "tcp" && $6 == "LISTEN" && $4 == "*:7" { print $7 }' | sort | tr '\n' ' ')
[ "$listen" = "0 1 " ] || fail "LISTEN *:7 on workers '$listen', expected 0 and 1: $(stat -v sockets)"
ok "LISTEN *:7 listed on both workers"

cat >"$TEST_TMP/client.py" <<'EOF'
import socket, sys, time
s = socket.create_connection((sys.argv[1], 7), timeout=5)
s.sendall(b"hello stats")
got = b""
while len(got) < 11:
    got += s.recv(100)
print(s.getsockname()[1], flush=True)
while True:
    try:
        open(sys.argv[2]).close()
        break
    except OSError:
        time.sleep(0.05)
s.close()
time.sleep(0.5)
EOF
go=$TEST_TMP/client.go
in_b python3 "$TEST_TMP/client.py" "$TOPO_ADDR_A" "$go" >"$TEST_TMP/client.out" &
client=$!
on_exit "kill $client 2>/dev/null || true"
wait_until 5 grep -q . "$TEST_TMP/client.out"
cport=$(head -n 1 "$TEST_TMP/client.out")
peer="$TOPO_ADDR_B:$cport"
established() { stat -v sockets -s "state=ESTABLISHED,port=$cport" | grep -F " $peer "; }
wait_until 3 established
line=$(established)
note "$line"
read -r f_proto _ _ f_local f_peer f_state _ <<<"$line"
[ "$f_proto $f_local $f_peer $f_state" = "tcp $TOPO_ADDR_A:7 $peer ESTABLISHED" ] ||
	fail "socket line: $line"
stat -v sockets --json -s "port=$cport" >"$TEST_TMP/socks.json"
python3 -m json.tool "$TEST_TMP/socks.json" >/dev/null || fail "sockets --json does not parse"
python3 - "$TEST_TMP/socks.json" "$TOPO_ADDR_A:7" "$peer" <<'EOF' || fail "sockets --json: $(cat "$TEST_TMP/socks.json")"
import json, sys
d = json.load(open(sys.argv[1]))
s = [x for x in d["sockets"] if x["remote"] == sys.argv[3]]
assert len(s) == 1, s
s = s[0]
assert s["local"] == sys.argv[2] and s["state"] == "ESTABLISHED", s
assert s["rx_bytes"] == 11 and s["tx_bytes"] == 11, s
assert s["offloaded"] == 1 and s["fd"] == -1 and s["proto"] == "tcp", s
EOF
n_all=$(stat -v sockets | awk '$1 == "tcp"' | wc -l)
[ "$n_all" -eq 3 ] || fail "expected 3 sockets (2 LISTEN + 1 connection), listed $n_all"
ok "connection listed: ESTABLISHED $TOPO_ADDR_A:7 <- $peer, 11 B each way"

touch "$go"
gone() { ! grep -qF " $peer " <<<"$(stat -v sockets -s "port=$cport")"; }
wait_until 5 gone
wait "$client" || true
grep -F " $peer " "$sockfile" | grep -q '11 B' ||
	fail "DPSOCK_STATS_FILE has no summary of $peer: $(cat "$sockfile")"
ok "closed: the entry is gone; DPSOCK_STATS_FILE: $(grep -F " $peer " "$sockfile" | tr -s ' ')"

# ---- 5. zero ----------------------------------------------------------------------
out=$(stat -z) || fail "dpsock-stat -z failed: $out"
note "$out"
[ "$(stat_sum "$name" icmp_echo)" -eq 0 ] || fail "icmp_echo not zeroed"
[ "$(stat_sum "$name" tcp_accepted)" -eq 0 ] || fail "tcp_accepted not zeroed"
[ "$(stat_get "$name" port.0.rx_packets)" -le 2 ] || fail "port rx_packets not zeroed"
[ "$(stat_get "$name" port.0.mbufs_total)" -gt 0 ] || fail "-z zeroed a gauge (mbufs_total)"
out=$(in_b ping -q -c 5 -i 0.02 -W 2 "$TOPO_ADDR_A") || fail "ping failed: $out"
wait_counter_ge "$name" icmp_echo 5 5
[ "$(stat_sum "$name" icmp_echo)" -eq 5 ] || fail "after -z and 5 pings icmp_echo is $(stat_sum "$name" icmp_echo)"
ok "-z: counters zeroed, gauges kept, counting resumes (icmp_echo 5)"

# ---- 6. log levels at run time --------------------------------------------------
if stat --log-level nosuchmodule=debug >"$TEST_TMP/ll.out" 2>&1; then
	fail "--log-level accepted an unknown module"
fi
grep -q "unknown log module 'nosuchmodule'" "$TEST_TMP/ll.out" || fail "no message: $(cat "$TEST_TMP/ll.out")"
grep -q 'lwIP holds' "$APP_LOG" && fail "debug line logged before the level was raised"
out=$(stat --log-level worker=debug) || fail "--log-level worker=debug: $out"
echo "$out" | grep -q 'dpsock.worker=debug' || fail "--log-level answer: $out"
grep -q 'log level of dpsock.worker set to debug' "$APP_LOG" || fail "the instance did not log the change"
ok "--log-level: unknown module refused, worker=debug applied ($out)"

# ---- 7. telemetry -----------------------------------------------------------------
tsock=/var/run/dpdk/$name/dpdk_telemetry.v2
if [ -S "$tsock" ]; then
	cat >"$TEST_TMP/tel.py" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
info = json.loads(s.recv(16384).decode())
for cmd in sys.argv[2:]:
    s.send(cmd.encode())
    print(json.dumps(json.loads(s.recv(65536).decode())))
EOF
	python3 "$TEST_TMP/tel.py" "$tsock" /dpsock/workers /dpsock/info /dpsock/sockets >"$TEST_TMP/tel.out" ||
		fail "telemetry client failed"
	tel_echo=$(python3 -c 'import json, sys
d = json.loads(open(sys.argv[1]).readline())["/dpsock/workers"]
print(sum(w["icmp_echo"] for w in d.values()))' "$TEST_TMP/tel.out")
	[ "$tel_echo" = "$(stat_sum "$name" icmp_echo)" ] ||
		fail "telemetry icmp_echo $tel_echo, dpsock-stat $(stat_sum "$name" icmp_echo)"
	sed -n 2p "$TEST_TMP/tel.out" | grep -q '"log_worker": "debug"' ||
		fail "/dpsock/info does not show worker=debug: $(sed -n 2p "$TEST_TMP/tel.out")"
	sed -n 3p "$TEST_TMP/tel.out" | grep -q '"state": "LISTEN"' ||
		fail "/dpsock/sockets lists no LISTEN socket: $(sed -n 3p "$TEST_TMP/tel.out" | head -c 300)"
	ok "telemetry: /dpsock/workers icmp_echo $tel_echo as dpsock-stat; /dpsock/info, /dpsock/sockets"
else
	note "no telemetry socket at $tsock (EAL telemetry off?): telemetry not checked"
fi

# ---- 8. AF_XDP socket counters --------------------------------------------------
test_pmd
xdp_keys="xdp_rx_ring_full xdp_fill_empty xdp_rx_invalid xdp_tx_invalid xdp_tx_ring_empty"
if [ "$TEST_PMD" = af_xdp ]; then
	xdp_dropped() { echo $(($(stat_get "$name" port.0.xdp_rx_ring_full) + $(stat_get "$name" port.0.xdp_fill_empty))); }
	xdp_dropped_gt() { local v; v=$(xdp_dropped) || return 1; echo "$v"; [ "$v" -gt "$1" ]; }
	d0=$(xdp_dropped) f0=$(stat_get "$name" port.0.xdp_fill_empty) m0=$(stat_get "$name" port.0.rx_missed)
	burst=$((3 * $(stat_get "$name" port.0.mbufs_total)))
	kill -STOP "$echo_pid"
	in_b python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(int(sys.argv[2])):
    s.sendto(b"x" * 32, (sys.argv[1], 9))' "$TOPO_ADDR_A" "$burst" || { kill -CONT "$echo_pid"; fail "the burst's sender failed"; }
	kill -CONT "$echo_pid"
	# the kernel counted the drops before SIGCONT: the first refresh after it has them all
	poll_until 5 xdp_dropped_gt "$d0" ||
		fail "a burst of $burst datagrams at a stopped instance: no AF_XDP drop counted (last: ${POLL_OUTPUT:-none}, before: $d0)"
	d1=$(xdp_dropped) f1=$(stat_get "$name" port.0.xdp_fill_empty) m1=$(stat_get "$name" port.0.rx_missed)
	# the PMD's rx_missed is the kernel's rx_dropped, which counts the fill-ring drops
	[ "$((m1 - m0))" -ge "$((f1 - f0))" ] ||
		fail "rx_missed rose by $((m1 - m0)), less than the fill-ring drops ($((f1 - f0)))"
	[ "$(stat_get "$name" port.0.xdp_tx_invalid)" -eq 0 ] ||
		fail "the kernel refused $(stat_get "$name" port.0.xdp_tx_invalid) TX descriptors"
	grep -q 'XDP no fill' <<<"$(stat -v extra)" || fail "-v extra: no AF_XDP column"
	ok "AF_XDP: a burst of $burst datagrams at a stopped instance: the kernel dropped $((d1 - d0)) (RX ring full +$((d1 - d0 - f1 + f0)), fill ring empty +$((f1 - f0))), rx_missed +$((m1 - m0)), TX refused 0"
else
	for k in $xdp_keys; do
		[ "$(stat_get "$name" "port.0.$k")" -eq 0 ] || fail "$TEST_PMD port: $k is $(stat_get "$name" "port.0.$k")"
	done
	ok "$TEST_PMD port: the AF_XDP counters are 0"
fi

# ---- 9. -p, mc, not found, stop while cycling --------------------------------------
# (no pipe into grep -q: it exits at the match, and with pipefail the
# writer's SIGPIPE on its next write failed the check)
grep -qx "daemon.0.pid $echo_pid" <<<"$("$DPSOCK_STAT" -p "$echo_pid")" || fail "-p $echo_pid did not find the instance"
grep -q '^Worker ' <<<"$(stat -v mc)" || fail "-v mc: no table"
rc=0
"$DPSOCK_STAT" -n "$name-nosuch" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "an unknown instance gave exit status $rc, expected 1"
stat -v basic -i 1 -c 100 >"$TEST_TMP/cycle.txt" 2>&1 &
cyc=$!
sleep 1.5
rc=0
app_stop "$name" || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-echo exited with status $rc"
rc=0
for _ in $(seq 1 50); do
	kill -0 "$cyc" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$cyc" 2>/dev/null && fail "dpsock-stat -i 1 still runs after the instance stopped"
wait "$cyc" || rc=$?
[ "$rc" -eq 0 ] || fail "dpsock-stat -i 1 -c 100 exited with $rc when the instance stopped"
grep -q "stopped" "$TEST_TMP/cycle.txt" || fail "no message when the instance stopped: $(tail -2 "$TEST_TMP/cycle.txt")"
grep -q 'worker [01]: lwIP holds' "$APP_LOG" || fail "worker=debug: no debug line at stop"
ok "-p, -v mc, unknown name (exit 1), stop while cycling (exit 0: $(tail -1 "$TEST_TMP/cycle.txt"))"
pass "dpsock-stat: exact counters, views, deltas, sockets, -z, log levels, telemetry"
