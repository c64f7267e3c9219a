#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tcp_rounds.py HOST PORT N [PAUSE_S]

N round trips to a TCP echo server (test/tools/echo6.py), each on a new
connection: connect, send "ssh-I", expect it back, close; PAUSE_S between
them. HOST of either family. Prints "ok K of N" (and each error); exit 0
only when all N came back. The sharing tests' stand-in for SSH: a kernel
service that must keep answering beside dpsockd.
"""
import socket
import sys
import time

host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pause = float(sys.argv[4]) if len(sys.argv) > 4 else 0
ok = 0
for i in range(n):
    try:
        s = socket.create_connection((host, port), timeout=2)
        s.sendall(b"ssh-%d" % i)
        if s.recv(100) == b"ssh-%d" % i:
            ok += 1
        s.close()
    except OSError as e:
        print("error", e, flush=True)
    time.sleep(pause)
print("ok %d of %d" % (ok, n), flush=True)
sys.exit(0 if ok == n else 1)
