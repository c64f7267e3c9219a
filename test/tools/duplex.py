#!/usr/bin/env python3
"""Both directions of one TCP connection at once, within one host.

Usage: duplex.py ADDR PORT MIB

A listener on ADDR:PORT and a client in the same program; each end sends
MIB MiB of its own pseudo-random bytes from one thread while another thread
reads what the other end sends, so both directions are full and blocked at
the same time. Prints "ok SHA_A SHA_B" when each end received exactly what
the other sent, else "bad ..." and exits 1.
"""
import hashlib
import random
import socket
import sys
import threading

addr, port, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
total = mib << 20

lsn = socket.socket()
lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsn.bind((addr, port))
lsn.listen(1)
cli = socket.create_connection((addr, port), timeout=60)
srv, _ = lsn.accept()
srv.settimeout(60)
sent, got = {}, {}


def send(name, s, seed):
    rnd, h, left = random.Random(seed), hashlib.sha256(), total
    while left:
        chunk = rnd.randbytes(min(left, 1 << 16))
        s.sendall(chunk)
        h.update(chunk)
        left -= len(chunk)
    s.shutdown(socket.SHUT_WR)
    sent[name] = h.hexdigest()


def recv(name, s):
    h, n = hashlib.sha256(), 0
    while True:
        d = s.recv(1 << 16)
        if not d:
            break
        h.update(d)
        n += len(d)
    got[name] = (n, h.hexdigest())


threads = [threading.Thread(target=send, args=("c", cli, 1)),
           threading.Thread(target=send, args=("s", srv, 2)),
           threading.Thread(target=recv, args=("s", srv)),
           threading.Thread(target=recv, args=("c", cli))]
for t in threads:
    t.start()
for t in threads:
    t.join(120)
ok = (not any(t.is_alive() for t in threads) and got.get("s") == (total, sent.get("c")) and
      got.get("c") == (total, sent.get("s")))
print("ok" if ok else "bad", sent, got, flush=True)
sys.exit(0 if ok else 1)
