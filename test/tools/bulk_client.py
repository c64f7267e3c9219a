#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bulk_client.py HOST PORT FILE REPEAT LIMIT_S STALL_S PROGRESS [SAMPLE_S]

One TCP connection to an echo server: a thread sends FILE REPEAT times then
shuts its side down, the main thread reads the echo until EOF. Every
SAMPLE_S seconds (default 0.5) the received byte count is sampled (appended
to PROGRESS as "seconds bytes"); no progress for STALL_S seconds, or
LIMIT_S in all, ends the run with an error. Prints "tx_bytes=.. tx_sha256=..
rx_bytes=.. rx_sha256=.. elapsed_s=.. max_gap_s=.." (max_gap_s: the longest
time without progress, to SAMPLE_S). Used by test/integration/bulk.sh and
tcp_loss.sh.
"""
import hashlib, mmap, select, socket, sys, threading, time
host, port, path, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
limit, stall, progress = float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
sample = float(sys.argv[8]) if len(sys.argv) > 8 else 0.5
with open(path, "rb") as f:
    data = memoryview(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ))
s = socket.create_connection((host, port), timeout=10)
s.settimeout(None)
tx = {"bytes": 0, "hash": hashlib.sha256(), "err": None}

def sender():
    try:
        for _ in range(repeat):
            for off in range(0, len(data), 1 << 20):
                chunk = data[off:off + (1 << 20)]
                s.sendall(chunk)
                tx["hash"].update(chunk)
                tx["bytes"] += len(chunk)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        tx["err"] = e

t = threading.Thread(target=sender, daemon=True)
start = time.monotonic()
t.start()
# The socket stays blocking (a timeout would apply to the sender's sendall
# too); the receiver waits in poll, one sample period at most.
pl = select.poll()
pl.register(s, select.POLLIN)
rx_hash, rx_bytes, buf = hashlib.sha256(), 0, bytearray(1 << 20)
last_bytes, last_change, next_sample, max_gap = 0, start, start + sample, 0.0
err = None
with open(progress, "w") as prog:
    while True:
        try:
            if pl.poll(int(sample * 1000)):
                n = s.recv_into(buf)
                if n == 0:
                    break
                rx_hash.update(memoryview(buf)[:n])
                rx_bytes += n
        except OSError as e:
            err = f"receive failed: {e}"
            break
        now = time.monotonic()
        if now >= next_sample:
            next_sample = now + sample
            prog.write(f"{now - start:.1f} {rx_bytes}\n")
            prog.flush()
            if rx_bytes != last_bytes:
                last_bytes, last_change = rx_bytes, now
            max_gap = max(max_gap, now - last_change)
            if now - last_change > stall:
                err = f"no progress for {now - last_change:.1f} s at {rx_bytes} bytes received"
                break
            if now - start > limit:
                err = f"time limit {limit:.0f} s reached at {rx_bytes} bytes received"
                break
elapsed = time.monotonic() - start
t.join(timeout=1)
if tx["err"] is not None:
    err = f"send failed: {tx['err']}" + (f"; {err}" if err else "")
print(f"tx_bytes={tx['bytes']} tx_sha256={tx['hash'].hexdigest()} rx_bytes={rx_bytes} "
      f"rx_sha256={rx_hash.hexdigest()} elapsed_s={elapsed:.2f} max_gap_s={max_gap:.2f}")
if err:
    print(f"error: {err}")
    sys.exit(1)
