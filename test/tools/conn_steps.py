#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""conn_steps.py — many keep-alive connections, requests in step.

Opens N TCP connections to HOST:PORT (in batches, every one established
before the first request), then plays R rounds: in each round every
connection sends one request and the round ends when every connection has
its whole answer (or the round's time-out passes). The answer is an HTTP
response (Content-Length) or, with --redis, one RESP reply to a PING.

Prints one line per round, "round R: answered A/N in S s", and a last line
"total: answered A/T, failed F, unanswered U" where failed counts
connections that were refused, reset or closed. Exit status 0 only when
every request of every round was answered.

    conn_steps.py HOST PORT -n 3000 -r 5 [--path /] [--timeout 30]
                  [--procs P] [--size-hdr] [--redis]

--procs P splits the connections over P processes (a process may hold at
most RLIMIT_NOFILE descriptors); their counts are summed.
"""
import argparse
import errno
import os
import selectors
import signal
import socket
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("-n", "--conns", type=int, default=1000)
    p.add_argument("-r", "--rounds", type=int, default=5)
    p.add_argument("--path", default="/")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds each round (and the connecting) may take")
    p.add_argument("--procs", type=int, default=1)
    p.add_argument("--redis", action="store_true",
                   help="send PING and expect +PONG (redis-server)")
    p.add_argument("--hold", type=float, default=0.0,
                   help="after the rounds, keep the connections open this long")
    p.add_argument("--ready-file", default="",
                   help="create this file once every round is played (before --hold)")
    return p.parse_args()


class Conn:
    __slots__ = ("sock", "buf", "need", "done", "dead", "out")

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.need = None
        self.done = False
        self.dead = False
        self.out = b""


def http_complete(buf):
    """Bytes of the first whole HTTP response in buf, or 0."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return 0
    length = 0
    for line in buf[:end].split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    total = end + 4 + length
    return total if len(buf) >= total else 0


def redis_complete(buf):
    end = buf.find(b"\r\n")
    return end + 2 if end >= 0 else 0


def connect_all(a, n, sel):
    conns = []
    deadline = time.monotonic() + a.timeout
    pending = set()
    batch = 256
    i = 0
    failed = 0
    while (i < n or pending) and time.monotonic() < deadline:
        while i < n and len(pending) < batch:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            rc = s.connect_ex((a.host, a.port))
            c = Conn(s)
            conns.append(c)
            i += 1
            if rc in (0,):
                continue
            if rc != errno.EINPROGRESS:
                c.dead = True
                failed += 1
                s.close()
                continue
            pending.add(c)
            sel.register(s, selectors.EVENT_WRITE, c)
        for key, _ in sel.select(timeout=0.5):
            c = key.data
            sel.unregister(c.sock)
            pending.discard(c)
            err = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                c.dead = True
                failed += 1
                c.sock.close()
    for c in pending:
        sel.unregister(c.sock)
        c.dead = True
        failed += 1
        c.sock.close()
    return conns, failed


def play_round(a, conns, sel, req, complete):
    live = [c for c in conns if not c.dead]
    for c in live:
        c.buf = b""
        c.done = False
        c.out = req
    deadline = time.monotonic() + a.timeout
    waiting = 0
    for c in live:
        try:
            sent = c.sock.send(c.out)
            c.out = c.out[sent:]
        except BlockingIOError:
            pass
        except OSError:
            c.dead = True
            continue
        ev = selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0)
        sel.register(c.sock, ev, c)
        waiting += 1
    answered = 0
    while waiting and time.monotonic() < deadline:
        for key, ev in sel.select(timeout=0.2):
            c = key.data
            if ev & selectors.EVENT_WRITE and c.out:
                try:
                    sent = c.sock.send(c.out)
                    c.out = c.out[sent:]
                except BlockingIOError:
                    pass
                except OSError:
                    c.dead = True
                if not c.out and not c.dead:
                    sel.modify(c.sock, selectors.EVENT_READ, c)
            if ev & selectors.EVENT_READ and not c.dead:
                try:
                    data = c.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    c.dead = True
                else:
                    c.buf += data
                    if complete(c.buf):
                        c.done = True
                        answered += 1
            if c.done or c.dead:
                sel.unregister(c.sock)
                waiting -= 1
    for c in live:
        if not c.done and not c.dead:
            sel.unregister(c.sock)
    return answered, len(live)


def worker(a, n, wfd):
    sel = selectors.DefaultSelector()
    t0 = time.monotonic()
    conns, failed = connect_all(a, n, sel)
    lines = [f"connect: {n - failed}/{n} in {time.monotonic() - t0:.2f} s"]
    if a.redis:
        req, complete = b"PING\r\n", redis_complete
    else:
        req = (f"GET {a.path} HTTP/1.1\r\nHost: {a.host}\r\n\r\n").encode()
        complete = http_complete
    rounds = []
    for r in range(a.rounds):
        t0 = time.monotonic()
        ans, live = play_round(a, conns, sel, req, complete)
        rounds.append((ans, time.monotonic() - t0))
    dead = sum(1 for c in conns if c.dead)
    os.write(wfd, repr((n, failed, dead, rounds)).encode() + b"\n")
    if a.hold > 0:
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        time.sleep(a.hold)
    for c in conns:
        if not c.dead:
            c.sock.close()


def main():
    a = parse_args()
    per = [a.conns // a.procs + (1 if i < a.conns % a.procs else 0) for i in range(a.procs)]
    rfd, wfd = os.pipe()
    pids = []
    for n in per:
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            try:
                worker(a, n, wfd)
            finally:
                os._exit(0)
        pids.append(pid)
    os.close(wfd)

    def stop(signum, frame):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
    signal.signal(signal.SIGTERM, stop)
    # one line per process once it played its rounds (then it holds its
    # connections for --hold seconds)
    data = b""
    while data.count(b"\n") < len(per):
        chunk = os.read(rfd, 65536)
        if not chunk:
            break
        data += chunk
    results = [eval(line) for line in data.decode().splitlines() if line]  # noqa: S307 (our own repr)
    ok = len(results) == len(per)
    if not ok:
        print(f"only {len(results)} of {len(per)} client processes reported", file=sys.stderr)
    total_n = sum(r[0] for r in results)
    failed = sum(r[1] for r in results)
    dead = sum(r[2] for r in results)
    ok = ok and failed == 0
    total_ans = 0
    for i in range(a.rounds):
        ans = sum(r[3][i][0] for r in results)
        secs = max((r[3][i][1] for r in results), default=0)
        total_ans += ans
        print(f"round {i + 1}: answered {ans}/{total_n} in {secs:.2f} s")
        ok = ok and ans == total_n
    print(f"total: answered {total_ans}/{total_n * a.rounds}, failed {failed + dead}, "
          f"unanswered {total_n * a.rounds - total_ans}", flush=True)
    if a.ready_file:
        open(a.ready_file, "w").close()
    for pid in pids:
        while True:
            try:
                os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
