#!/usr/bin/env bash
# memcached (Debian's, unmodified, 2 threads) under libdpsock_preload.so on
# dpsockd's address; memcping, memcslap (libmemcached-tools) and a python3
# client speaking the text protocol in the Linux peer's namespace.
#
#   - memcping answers;
#   - python3, 4 connections: 400 SETs of random values (1 B .. 200 KiB,
#     sha256 kept), then a GET of each and one multi-GET of 50 keys: every
#     value comes back byte for byte; a missing key misses; DELETE and a
#     GET after it; memcached's own counters agree (cmd_set +400,
#     get_hits = the hits made, get_misses = the misses made);
#   - memcslap -t set then -t get, 4 threads x 2000: exit 0, no error
#     line;
#   - offload, not a kernel fallback: dpsockd's workers accepted the
#     connections and received at least the bytes set (tcp_rx_bytes);
#   - memcached exits on SIGTERM; dpsockd stops cleanly.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip memcached python3
require_preload
name=$TEST_NAME
test_topo_up 102
preload_daemon_start "$name"
port=11211

preload_start memcached memcached -u root -l "$TOPO_ADDR_A" -p "$port" -U 0 -t 2 -m 256 -c 512 -v
wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" "$port" 20
acc0=$(preload_stat tcp_accepted)
rx0=$(preload_stat tcp_rx_bytes)

if command -v memcping >/dev/null 2>&1; then
	in_b timeout 10 memcping --servers="$TOPO_ADDR_A:$port" ||
		fail "memcping $TOPO_ADDR_A:$port failed"
	ok "memcping answered"
fi

cat >"$TEST_TMP/mc.py" <<'EOF'
import hashlib, os, random, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
random.seed(4)

class Conn:
    def __init__(self):
        self.s = socket.create_connection((host, port), timeout=10)
        self.buf = b""
    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise RuntimeError("connection closed by the server")
            self.buf += d
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l
    def exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise RuntimeError("connection closed in a value")
            self.buf += d
        v, self.buf = self.buf[:n], self.buf[n:]
        return v
    def cmd(self, data):
        self.s.sendall(data)
    def stats(self):
        self.cmd(b"stats\r\n")
        st = {}
        while True:
            l = self.line()
            if l == b"END":
                return st
            _, k, v = l.split(b" ", 2)
            st[k.decode()] = v.decode()
    def get(self, keys):
        self.cmd(b"get " + b" ".join(keys) + b"\r\n")
        out = {}
        while True:
            l = self.line()
            if l == b"END":
                return out
            f = l.split(b" ")
            if f[0] != b"VALUE":
                raise RuntimeError("unexpected line %r" % l)
            out[f[1]] = self.exact(int(f[3]))
            if self.exact(2) != b"\r\n":
                raise RuntimeError("value not followed by CRLF")

conns = [Conn() for _ in range(4)]
st0 = conns[0].stats()
want = {}
total = 0
for i in range(400):
    k = b"k%d" % i
    n = random.choice([1, 10, 100, 1000, 1400, 4096, 20000, 65536, 100000, 200 * 1024])
    v = os.urandom(n)
    c = conns[i % 4]
    c.cmd(b"set %s %d 0 %d\r\n" % (k, i, n) + v + b"\r\n")
    r = c.line()
    if r != b"STORED":
        sys.exit("FAIL: set %s (%d bytes): %r" % (k.decode(), n, r))
    want[k] = hashlib.sha256(v).digest()
    total += n
hits = misses = 0
for i, k in enumerate(want):
    got = conns[(i + 1) % 4].get([k])
    if k not in got or hashlib.sha256(got[k]).digest() != want[k]:
        sys.exit("FAIL: get %s: wrong or missing value (%d bytes)" % (k.decode(), len(got.get(k, b""))))
    hits += 1
keys = random.sample(sorted(want), 50) + [b"nosuchkey"]
got = conns[2].get(keys)
misses += 1
hits += 50
if len(got) != 50 or any(hashlib.sha256(got[k]).digest() != want[k] for k in keys[:50]):
    sys.exit("FAIL: multi-get of 50 keys: %d values, some wrong or missing" % len(got))
conns[3].cmd(b"delete k7\r\n")
if conns[3].line() != b"DELETED":
    sys.exit("FAIL: delete k7")
if conns[1].get([b"k7"]):
    sys.exit("FAIL: k7 still there after delete")
misses += 1
st = conns[0].stats()
d = lambda key: int(st[key]) - int(st0[key])
if d("cmd_set") != 400 or d("get_hits") != hits or d("get_misses") != misses:
    sys.exit("FAIL: memcached counters: cmd_set +%d (400), get_hits +%d (%d), get_misses +%d (%d)"
             % (d("cmd_set"), d("get_hits"), hits, d("get_misses"), misses))
print("ok %d values verified, %d hits, %d misses, %d bytes set" % (len(want), hits, misses, total))
EOF
out=$(timeout 120 ip netns exec "$TOPO_NS_B" python3 "$TEST_TMP/mc.py" "$TOPO_ADDR_A" "$port" 2>&1) ||
	fail "python client: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
ok "python3 client: ${out#ok }; memcached's counters agree"

if command -v memcslap >/dev/null 2>&1; then
	for t in set get; do
		out=$(timeout 120 ip netns exec "$TOPO_NS_B" memcslap --servers="$TOPO_ADDR_A:$port" \
			--test=$t --concurrency=4 --execute-number=2000 2>&1) ||
			fail "memcslap --test=$t: status $?: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
		if grep -qiE 'error|fail' <<<"$out"; then
			fail "memcslap --test=$t: $(grep -m1 -iE 'error|fail' <<<"$out")"
		fi
		note "memcslap $t x 8000: $(grep -o "Time total: [0-9.]* seconds" <<<"$out")"
	done
	ok "memcslap set and get, 4 threads x 2000: no error"
fi

preload_offload_ge "$name" tcp_accepted $((acc0 + 4)) 5
acc=$STAT_VALUE
preload_offload_ge "$name" tcp_rx_bytes $((rx0 + 4 * 1024 * 1024)) 5
[ "$PRELOAD_KERNEL" = 1 ] || ok "through dpsockd: tcp_accepted +$((acc - acc0)), tcp_rx_bytes +$((STAT_VALUE - rx0))"
preload_show_clients

rc=0
preload_stop memcached TERM || rc=$?
# memcached exits 0 on SIGTERM (since 1.5.x: "Signal handled: Terminated")
[ "$rc" -eq 0 ] || fail "memcached exited with status $rc: $(tail -n 5 "$TEST_TMP/memcached.log" | tr '\n' ' ')"
preload_daemon_stop
pass "memcached under the shim: 400 values verified byte for byte, counters agree, memcslap clean"
