#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""udp_rounds.py HOST PORT N [SIZE...]

N datagrams to a UDP echo server (test/tools/echo6.py), one at a time, each
waited for (2 s) and compared whole; the sizes cycle through SIZE (default
64 bytes). HOST of either family. Prints "ok K of N"; exit 0 only when all
N came back.
"""
import socket
import sys

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sizes = [int(x) for x in sys.argv[4:]] or [64]
fam = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0][0]
s = socket.socket(fam, socket.SOCK_DGRAM)
s.settimeout(2)
ok = 0
for i in range(n):
    m = (b"u%d-" % i).ljust(sizes[i % len(sizes)], b"x")
    s.sendto(m, (host, port))
    try:
        if s.recvfrom(65536)[0] == m:
            ok += 1
    except OSError:
        pass
print("ok %d of %d" % (ok, n), flush=True)
sys.exit(0 if ok == n else 1)
