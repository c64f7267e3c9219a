#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""limits_calls.py — what a program sees at the limits of many connections,
printed as a transcript that must read the same on Linux and under the
preload (test/integration/preload_conn_limits.sh).

  limits_calls.py accept-emfile ADDR PORT N READY_FILE
      listen on ADDR:PORT, create READY_FILE, wait until N connections are
      queued (the client's), then lower RLIMIT_NOFILE so that only 2 more
      descriptors fit: accept twice, then accept fails with EMFILE while
      the others wait; close one, accept one more; raise the limit and
      accept the rest. Each accepted connection gets its client's id echoed
      back. Prints one line per step ("accept ok", "accept EMFILE", ...).
  limits_calls.py clients ADDR PORT N [HOLD_S]
      open N connections one by one, send an id on each, wait for it to come
      back (10 s); print per connection "ok", "refused" (ECONNREFUSED or a
      reset), or "timeout"; then "summary ok=A refused=R timeout=T". With
      HOLD_S, keep the answered ones open that long (or until stdin closes).
  limits_calls.py queue ADDR PORT N QUEUED_FILE
      open N connections and send an id on each without waiting, create
      QUEUED_FILE, then wait (30 s) for every id to come back; print
      "summary ok=A refused=R timeout=T".
  limits_calls.py connects ADDR PORT N
      open N connections one after the other and keep them (5 s each at
      most); print "connect I: ok" or "connect I: ERRNAME" for each.
"""
import errno
import os
import resource
import select
import socket
import sys
import time


def accept_emfile(addr, port, n, ready):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(64)
    open(ready, "w").close()
    # wait until the client's connections are queued: the listener is
    # readable as soon as one is; the client says how many with a file
    deadline = time.monotonic() + 30
    while not os.path.exists(ready + ".queued") and time.monotonic() < deadline:
        time.sleep(0.02)
    if not os.path.exists(ready + ".queued"):
        print("client never queued its connections")
        return 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # a limit above what is open, every free descriptor below it taken by
    # fillers, then two of them given back: exactly two more fit
    top = max(int(x) for x in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (top + 8, hard))
    fillers = []
    while True:
        try:
            fillers.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as e:
            if e.errno != errno.EMFILE:
                raise
            break
    os.close(fillers.pop())
    os.close(fillers.pop())
    ls.settimeout(10)
    conns = []

    def take(label):
        try:
            c, _ = ls.accept()
        except OSError as e:
            print(f"{label}: accept {errno.errorcode.get(e.errno, e.errno)}", flush=True)
            return False
        cid = c.recv(16)
        c.sendall(cid)
        conns.append(c)
        print(f"{label}: accept ok", flush=True)
        return True

    take("limit+1")
    take("limit+2")
    take("limit+3")            # EMFILE: the connection stays queued
    conns.pop(0).close()
    take("after a close")      # the one that waited
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    for fd in fillers:
        os.close(fd)
    for i in range(n - 3):
        take(f"limit raised {i + 1}")
    print(f"accepted {len(conns) + 1} of {n}", flush=True)
    for c in conns:
        c.close()
    return 0


def clients(addr, port, n, hold):
    socks, res = [], []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        cid = b"%08d" % i
        try:
            s.connect((addr, port))
            s.sendall(cid)
            got = b""
            while len(got) < len(cid):
                d = s.recv(len(cid) - len(got))
                if not d:
                    raise ConnectionResetError()
                got += d
            res.append("ok" if got == cid else "wrong")
            socks.append(s)
        except (ConnectionRefusedError, ConnectionResetError):
            res.append("refused")
            s.close()
        except socket.timeout:
            res.append("timeout")
            s.close()
        print(f"conn {i}: {res[-1]}", flush=True)
    print(f"summary ok={res.count('ok')} refused={res.count('refused')} "
          f"timeout={res.count('timeout')} wrong={res.count('wrong')}", flush=True)
    if hold > 0:
        select.select([sys.stdin], [], [], hold)
    for s in socks:
        s.close()
    return 0


def queue(addr, port, n, queued):
    socks = []
    for i in range(n):
        s = socket.create_connection((addr, port), timeout=10)
        s.sendall(b"%08d" % i)
        socks.append(s)
    open(queued, "w").close()
    res = []
    deadline = time.monotonic() + 30
    for i, s in enumerate(socks):
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            got = s.recv(8)
            res.append("ok" if got == b"%08d" % i else "refused")
        except socket.timeout:
            res.append("timeout")
        except OSError:
            res.append("refused")
        s.close()
    print(f"summary ok={res.count('ok')} refused={res.count('refused')} "
          f"timeout={res.count('timeout')}", flush=True)
    return 0


def connects(addr, port, n):
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect((addr, port))
            print(f"connect {i}: ok", flush=True)
            socks.append(s)
        except OSError as e:
            name = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else "timeout"
            print(f"connect {i}: {name}", flush=True)
            s.close()
    for s in socks:
        s.close()
    return 0


def main():
    a = sys.argv[1:]
    if len(a) >= 5 and a[0] == "accept-emfile":
        return accept_emfile(a[1], int(a[2]), int(a[3]), a[4])
    if len(a) >= 4 and a[0] == "clients":
        return clients(a[1], int(a[2]), int(a[3]), float(a[4]) if len(a) > 4 else 0)
    if len(a) == 5 and a[0] == "queue":
        return queue(a[1], int(a[2]), int(a[3]), a[4])
    if len(a) == 4 and a[0] == "connects":
        return connects(a[1], int(a[2]), int(a[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
