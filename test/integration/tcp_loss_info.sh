#!/usr/bin/env bash
# TCP_INFO and TCP_CONGESTION of an offloaded connection, under the shim,
# through 1 % random loss each way (nftables in the peer's namespace). A
# preloaded Python client in A (dpsockd, 2 workers) sends 8 MiB to a sink
# on B's kernel and reads getsockopt(IPPROTO_TCP, TCP_INFO) as it goes
# (Linux's struct tcp_info layout, as ss and iperf3 read it).
#
# Checks:
#   - the handshake's RTT, read before any data: a connection whose first
#     SYN the peer drops (nftables quota) counts that one retransmission and
#     still has an RTT (the SYN-ACK echoes the second SYN's timestamp); the
#     next connection, without loss, counts no retransmission;
#   - TCP_CONGESTION: "cubic" by default; "reno" once set; a name the kernel
#     knows but dpsock does not ("bbr") leaves "reno" in force, and says so;
#   - TCP_INFO during the transfer: state ESTABLISHED, the SACK and
#     timestamp options, an RTT in microseconds (0 < rtt < 1 s: lwIP's
#     tick estimate read 0 or multiples of 50 ms), cwnd and MSS set;
#     at the end: retransmissions counted (total_retrans > 0: loss was
#     repaired), bytes_acked = what was sent, a delivery rate;
#   - dpsock-stat's socket view of the connection, taken while it is open,
#     shows an RTT in microseconds and its retransmissions.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 nft socat
require_preload
[ "$PRELOAD_KERNEL" != 1 ] && [ -x "$DPSOCK_STAT" ] || skip "dpsock's TCP_INFO: nothing to check on the kernel"
name=$TEST_NAME
test_topo_up 70
preload_daemon_start "$name"
port=9123
peer_start sink socat -u "TCP-LISTEN:$port,reuseaddr,fork" OPEN:/dev/null
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_B" "$port"

# ---- the handshake's RTT --------------------------------------------------
# the first SYN from A is dropped (nft's quota: matched while under 100
# bytes, one 60-byte SYN; wait_tcp_port's own SYNs came over lo)
in_b nft -f - <<-NFT || fail "nft could not load the SYN rule"
	table inet dpssyn {
		chain in {
			type filter hook input priority 0;
			iifname "$TOPO_IF_B" tcp flags & (syn|ack) == syn quota until 100 bytes drop
		}
	}
NFT
cat >"$TEST_TMP/syn_client.py" <<'PYEOF'
import socket, struct, sys
host, port = sys.argv[1], int(sys.argv[2])
for _ in range(2):
    s = socket.create_connection((host, port), timeout=30)
    s.settimeout(None)
    # tcpi_rtt (offset 68), tcpi_total_retrans (offset 100)
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    print("rtt %d total_retrans %d" % (struct.unpack_from("<I", b, 68)[0],
                                       struct.unpack_from("<I", b, 100)[0]))
    s.close()
PYEOF
syn=$(preload_run timeout 60 python3 "$TEST_TMP/syn_client.py" "$TOPO_ADDR_B" "$port") ||
	fail "handshake client failed: $syn"
dropped=$(in_b nft list table inet dpssyn | grep -o 'quota until 100 bytes used [0-9]* bytes' || true)
in_b nft delete table inet dpssyn
read -r _ rtt1 _ re1 _ rtt2 _ re2 <<<"$(echo $syn)"
[ "$re1" = 1 ] && [ "$rtt1" -gt 0 ] ||
	fail "first SYN dropped ($dropped): rtt $rtt1 us, total_retrans $re1 (want > 0 and 1)"
[ "$re2" = 0 ] && [ "$rtt2" -gt 0 ] ||
	fail "handshake without loss: rtt $rtt2 us, total_retrans $re2 (want > 0 and 0)"
ok "handshake RTT: $rtt1 us after a dropped SYN (1 retransmission), $rtt2 us without loss"

# ---- TCP_INFO and TCP_CONGESTION through 1 % loss ---------------------------
in_b nft -f - <<-NFT || fail "nft could not load the loss rules"
	table inet dpsloss {
		chain in { type filter hook input priority 0; meta l4proto tcp numgen random mod 1000 < 10 drop; }
		chain out { type filter hook output priority 0; meta l4proto tcp numgen random mod 1000 < 10 drop; }
	}
NFT

# The client writes its findings to RESULT (JSON) and keeps the connection
# open until RESULT.done exists (the test reads the socket view meanwhile).
cat >"$TEST_TMP/info_client.py" <<'PYEOF'
import json, os, socket, struct, sys, time
host, port, total, result = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
# struct tcp_info (linux/tcp.h), up to tcpi_snd_wnd
FMT = "<8B24I4Q6I4Q2I2Q4I"
NAMES = ("state ca_state retransmits probes backoff options wscale app_limited "
         "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets last_data_sent "
         "last_ack_sent last_data_recv last_ack_recv pmtu rcv_ssthresh rtt rttvar "
         "snd_ssthresh snd_cwnd advmss reordering rcv_rtt rcv_space total_retrans "
         "pacing_rate max_pacing_rate bytes_acked bytes_received segs_out segs_in "
         "notsent_bytes min_rtt data_segs_in data_segs_out delivery_rate busy_time "
         "rwnd_limited sndbuf_limited delivered delivered_ce bytes_sent bytes_retrans "
         "dsack_dups reord_seen rcv_ooopack snd_wnd").split()
def info(s):
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, struct.calcsize(FMT))
    return dict(zip(NAMES, struct.unpack(FMT, b.ljust(struct.calcsize(FMT), b"\0"))))
def cc(s):
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
s = socket.create_connection((host, port), timeout=30)
# blocking: a socket with a timeout is non-blocking underneath, and the
# shim's poll(POLLOUT) wake-up is not what this test is about
s.settimeout(None)
out = {"cc_default": cc(s)}
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
out["cc_set"] = cc(s)
try:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"bbr")
    out["bbr_accepted"] = 1
except OSError:
    out["bbr_accepted"] = 0
out["cc_after_bbr"] = cc(s)
chunk, sent, during = b"\x5a" * 65536, 0, []
while sent < total:
    s.sendall(chunk)
    sent += len(chunk)
    if sent % (1 << 20) == 0:
        during.append(info(s))
# everything acknowledged (or 30 s): the counters of the whole transfer
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    end = info(s)
    if end["bytes_acked"] >= total:
        break
    time.sleep(0.05)
out["during"], out["end"], out["sent"] = during, end, sent
with open(result + ".tmp", "w") as f:
    json.dump(out, f)
os.rename(result + ".tmp", result)
deadline = time.monotonic() + 30
while not os.path.exists(result + ".done") and time.monotonic() < deadline:
    time.sleep(0.05)
s.close()
PYEOF

result=$TEST_TMP/info.json
preload_start client timeout 120 python3 "$TEST_TMP/info_client.py" "$TOPO_ADDR_B" "$port" \
	$((8 << 20)) "$result"
poll_until 120 test -e "$result" || true
"$DPSOCK_STAT" -n "$name" -v sockets -j >"$TEST_TMP/sockets.json" 2>&1 || true
touch "$result.done"
rc=0
preload_wait client 60 || rc=$?
[ "$rc" -eq 0 ] && [ -e "$result" ] ||
	fail "client status $rc: $(tail -n 5 "$TEST_TMP/client.log" | tr '\n' ' ')"

python3 - "$result" <<'PYEOF' || fail "TCP_INFO / TCP_CONGESTION: see above"
import json, sys
o = json.load(open(sys.argv[1]))
bad = []
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        bad.append(what)
check(o["cc_default"] == "cubic", f"TCP_CONGESTION by default: {o['cc_default']!r}")
check(o["cc_set"] == "reno", f"TCP_CONGESTION after setting reno: {o['cc_set']!r}")
check(o["cc_after_bbr"] == "reno",
      f"after setting bbr (kernel accepted: {o['bbr_accepted']}): {o['cc_after_bbr']!r} still in force")
for i, d in enumerate(o["during"]):
    check(d["state"] == 1 and d["options"] & 3 == 3 and 0 < d["rtt"] < 1000000 and
          d["snd_cwnd"] > 0 and d["snd_mss"] > 0 and d["ca_state"] in (0, 1, 3, 4),
          f"TCP_INFO at {i + 1} MiB: state {d['state']} options {d['options']} rtt {d['rtt']} us "
          f"rttvar {d['rttvar']} cwnd {d['snd_cwnd']} ssthresh {d['snd_ssthresh']} "
          f"ca_state {d['ca_state']} unacked {d['unacked']} sacked {d['sacked']} lost {d['lost']} "
          f"retrans {d['retrans']} total_retrans {d['total_retrans']}")
e = o["end"]
check(e["total_retrans"] > 0 and e["bytes_acked"] >= o["sent"] and e["delivery_rate"] > 0 and
      e["bytes_retrans"] > 0 and e["min_rtt"] > 0,
      f"TCP_INFO at the end: total_retrans {e['total_retrans']} bytes_retrans {e['bytes_retrans']} "
      f"bytes_acked {e['bytes_acked']} of {o['sent']} delivery_rate {e['delivery_rate']} B/s "
      f"min_rtt {e['min_rtt']} us dsack_dups {e['dsack_dups']}")
sys.exit(1 if bad else 0)
PYEOF
ok "TCP_CONGESTION and TCP_INFO as Linux tools read them"

python3 - "$port" "$TEST_TMP/sockets.json" <<'PYEOF' ||
import json, sys
port = sys.argv[1]
v = json.load(open(sys.argv[2]))
conns = [s for s in v["sockets"] if s["proto"] == "tcp" and s["remote"].endswith(":" + port)]
if not conns:
    print("FAIL: the connection to the sink is not in the socket view")
    sys.exit(1)
c = conns[0]
ok = 0 < c["rtt_us"] < 1000000 and c["retrans"] > 0
print(("ok: " if ok else "FAIL: ") + f"socket view: rtt_us {c['rtt_us']} rttvar_us {c['rttvar_us']} "
      f"cwnd {c['cwnd']} ssthresh {c['ssthresh']} ca_state {c['ca_state']} retrans {c['retrans']}")
sys.exit(0 if ok else 1)
PYEOF
	fail "dpsock-stat's socket view: $(head -c 400 "$TEST_TMP/sockets.json")"

preload_stop sink KILL || true
preload_daemon_stop
pass "TCP_INFO and TCP_CONGESTION answered by dpsock for an offloaded connection through 1% loss"
