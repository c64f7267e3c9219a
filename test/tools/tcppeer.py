#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tcppeer.py - the Linux side of dpsock's TCP integration tests (stdlib only).

  tcppeer.py echo-server -a ADDR -p PORT [--ready FILE]
        asyncio echo server (runs until killed); writes FILE once listening.
  tcppeer.py conc -d IP -p PORT -n N [--batch B] [--size S] [--peak FILE]
                  [--go FILE] [--hold SECS] [--expect-ok K] [--expect-refused R]
                  [--timeout SECS]
        open N connections (B at a time, non-blocking), each sends its own
        message of S bytes and must read exactly that back while every
        connection stays open; then write FILE (--peak), wait for --go FILE
        (or --hold SECS), check every connection once more (a second distinct
        message), and close them all. Refused connections (RST to the SYN)
        are counted; with --expect-ok/--expect-refused the counts must match.
  tcppeer.py cycles -d IP -p PORT -n N [--time SECS] [--size S]
        N sequential cycles of connect, send, read the echo, close.

Every mode prints one summary line "MODE: key=value ..." and exits 0 when
all went as expected, 1 otherwise (the line says why).
"""
import argparse
import asyncio
import errno
import os
import resource
import selectors
import socket
import sys
import time


def log(msg):
    print(msg, flush=True)


# ---- echo server ----------------------------------------------------------

async def _echo(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def _serve(args):
    srv = await asyncio.start_server(_echo, args.addr, args.port, backlog=4096,
                                     reuse_address=True)
    if args.ready:
        with open(args.ready, "w") as f:
            f.write("ready\n")
    async with srv:
        await srv.serve_forever()


def echo_server(args):
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        pass
    return 0


# ---- concurrent connections ------------------------------------------------

def message(i, rnd, size):
    head = ("c%06d-r%d-" % (i, rnd)).encode()
    body = bytes((i * 7 + rnd * 13 + k) % 251 for k in range(max(0, size - len(head))))
    return (head + body)[:max(size, len(head))]


class Conn:
    __slots__ = ("i", "sock", "state", "out", "want", "got", "err")

    def __init__(self, i):
        self.i = i
        self.sock = None
        self.state = "new"
        self.out = b""
        self.want = b""
        self.got = b""
        self.err = None


def _exchange(sel, conns, rnd, size, deadline):
    """Send message(i, rnd) on every conn, read it back. Returns failures."""
    pending = 0
    for c in conns:
        c.out = c.want = message(c.i, rnd, size)
        c.got = b""
        c.state = "xchg"
        sel.modify(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
        pending += 1
    bad = 0
    while pending and time.monotonic() < deadline:
        for key, ev in sel.select(0.2):
            c = key.data
            if c.state != "xchg":
                continue
            try:
                if ev & selectors.EVENT_WRITE and c.out:
                    n = c.sock.send(c.out)
                    c.out = c.out[n:]
                    if not c.out:
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                if ev & selectors.EVENT_READ:
                    d = c.sock.recv(65536)
                    if not d:
                        raise ConnectionError("EOF from the server")
                    c.got += d
                    if len(c.got) >= len(c.want):
                        if c.got != c.want:
                            raise ValueError("echo differs: sent %r... got %r..."
                                             % (c.want[:24], c.got[:24]))
                        c.state = "open"
                        sel.modify(c.sock, selectors.EVENT_READ, c)
                        pending -= 1
            except (OSError, ValueError, ConnectionError) as e:
                c.err = "%s" % e
                c.state = "failed"
                sel.unregister(c.sock)
                pending -= 1
                bad += 1
    for c in conns:
        if c.state == "xchg":
            c.err = "no complete echo before the deadline (%d of %d bytes)" % (len(c.got), len(c.want))
            c.state = "failed"
            sel.unregister(c.sock)
            bad += 1
    return bad


def _connect_batch(sel, batch, dst, port, deadline):
    """Non-blocking connects; returns (ok list, refused count, other errors)."""
    ok, refused, errs = [], 0, []
    waiting = {}
    for c in batch:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        rc = s.connect_ex((dst, port))
        if rc not in (0, errno.EINPROGRESS):
            errs.append("connect %d: %s" % (c.i, os.strerror(rc)))
            s.close()
            continue
        c.sock = s
        waiting[s.fileno()] = c
        sel.register(s, selectors.EVENT_WRITE, c)
    while waiting and time.monotonic() < deadline:
        for key, _ in sel.select(0.2):
            c = key.data
            if c.sock.fileno() not in waiting:
                continue
            del waiting[c.sock.fileno()]
            rc = c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if rc == 0:
                c.state = "open"
                sel.modify(c.sock, selectors.EVENT_READ, c)
                ok.append(c)
            else:
                sel.unregister(c.sock)
                c.sock.close()
                c.sock = None
                if rc == errno.ECONNREFUSED:
                    refused += 1
                else:
                    errs.append("connect %d: %s" % (c.i, os.strerror(rc)))
    for c in waiting.values():
        sel.unregister(c.sock)
        c.sock.close()
        errs.append("connect %d: not done before the deadline" % c.i)
    return ok, refused, errs


def conc(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(args.n + 64, soft)), hard))
    deadline = time.monotonic() + args.timeout
    sel = selectors.DefaultSelector()
    opened, refused, errs, bad = [], 0, [], 0
    t0 = time.monotonic()
    for start in range(0, args.n, args.batch):
        batch = [Conn(i) for i in range(start, min(args.n, start + args.batch))]
        ok, r, e = _connect_batch(sel, batch, args.dst, args.port, deadline)
        refused += r
        errs += e
        # every new connection echoes its own message while all the
        # earlier ones stay open
        bad += _exchange(sel, ok, 0, args.size, deadline)
        opened += ok
    t_open = time.monotonic() - t0
    alive = [c for c in opened if c.state == "open"]
    summary = "opened=%d refused=%d connect_errors=%d echo_failures=%d open_s=%.2f" % (
        len(opened), refused, len(errs), bad, t_open)
    log("conc: peak %s" % summary)
    if args.peak:
        with open(args.peak, "w") as f:
            f.write("%d\n" % len(alive))
    if args.go:
        end = time.monotonic() + args.timeout
        while not os.path.exists(args.go) and time.monotonic() < end:
            time.sleep(0.05)
    elif args.hold:
        time.sleep(args.hold)
    # everything still usable after the peak: a second, different message
    bad2 = _exchange(sel, alive, 1, args.size, time.monotonic() + args.timeout)
    for c in opened:
        if c.sock is not None:
            try:
                sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
            c.sock.close()
    fails = [c for c in opened if c.state == "failed"]
    for c in fails[:5]:
        log("conc: connection %d: %s" % (c.i, c.err))
    for e in errs[:5]:
        log("conc: %s" % e)
    good = True
    if args.expect_ok is not None and len(opened) != args.expect_ok:
        good = False
    if args.expect_ok is None and len(opened) != args.n:
        good = False
    if args.expect_refused is not None and refused != args.expect_refused:
        good = False
    if errs or bad or bad2:
        good = False
    log("conc: %s %s second_round_failures=%d" % ("ok" if good else "FAILED", summary, bad2))
    return 0 if good else 1


# ---- open/close cycles ----------------------------------------------------------

def cycles(args):
    t0 = time.monotonic()
    end = t0 + args.time
    done = fails = 0
    first_err = ""
    for i in range(args.n):
        if time.monotonic() > end:
            break
        msg = message(i, 2, args.size)
        try:
            with socket.create_connection((args.dst, args.port), timeout=5) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.sendall(msg)
                got = b""
                while len(got) < len(msg):
                    d = s.recv(65536)
                    if not d:
                        raise ConnectionError("EOF after %d bytes" % len(got))
                    got += d
                if got != msg:
                    raise ValueError("echo differs")
            done += 1
        except (OSError, ValueError, ConnectionError) as e:
            fails += 1
            if not first_err:
                first_err = "cycle %d: %s" % (i, e)
    el = time.monotonic() - t0
    good = done == args.n and fails == 0
    log("cycles: %s done=%d of=%d failures=%d elapsed_s=%.1f rate=%.0f/s%s" % (
        "ok" if good else "FAILED", done, args.n, fails, el, done / el if el else 0,
        (" first_error=" + first_err) if first_err else ""))
    return 0 if good else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("echo-server")
    p.add_argument("-a", "--addr", default="0.0.0.0")
    p.add_argument("-p", "--port", type=int, required=True)
    p.add_argument("--ready")
    p = sub.add_parser("conc")
    p.add_argument("-d", "--dst", required=True)
    p.add_argument("-p", "--port", type=int, required=True)
    p.add_argument("-n", type=int, required=True)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--peak")
    p.add_argument("--go")
    p.add_argument("--hold", type=float, default=0)
    p.add_argument("--expect-ok", type=int)
    p.add_argument("--expect-refused", type=int)
    p.add_argument("--timeout", type=float, default=60)
    p = sub.add_parser("cycles")
    p.add_argument("-d", "--dst", required=True)
    p.add_argument("-p", "--port", type=int, required=True)
    p.add_argument("-n", type=int, required=True)
    p.add_argument("--time", type=float, default=120)
    p.add_argument("--size", type=int, default=32)
    args = ap.parse_args()
    return {"echo-server": echo_server, "conc": conc, "cycles": cycles}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
