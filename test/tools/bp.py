#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""bp.py — full-duplex TCP echo under back-pressure, one readiness mechanism
at a time, for the preload tests (test/integration/preload_backpressure.sh).

    bp.py server MECH ADDR PORT          echo every byte back, forever
    bp.py client MECH ADDR PORT NBYTES [CONNS]
                                          send NBYTES (per connection) while
                                          reading the echo at the same time;
                                          exit 0 when every byte came back
                                          equal, 1 otherwise

MECH is how the program waits: select, poll, epoll-lt, epoll-et,
epoll-oneshot (non-blocking sockets, Python's select module: select(2),
poll(2), epoll(7)), or threads (blocking sockets, one thread per direction
or connection). The server holds at most HIGH bytes it could not send yet:
beyond that it stops reading, so a slow reader pushes back all the way to
the writer, in both directions at once. The client sends a deterministic
pattern and checks the echo byte for byte; it prints one line:
"ok MECH conns=N bytes=B seconds=S MiB/s=R" or "FAIL ...".
"""
import errno
import os
import select
import socket
import sys
import threading
import time

HIGH = 256 * 1024
CHUNK = 64 * 1024
STALL_S = 20   # no progress for this long: fail (a stall is the bug)


_BASE = bytes((i * 7 + 13) & 0xFF for i in range(256)) * (CHUNK // 256 + 2)


def pattern(off, n):
    """n bytes of the stream at offset off (a cheap, position-keyed pattern)."""
    base = _BASE
    o = off % 256
    out = bytearray()
    while len(out) < n:
        take = min(n - len(out), len(base) - o)
        out += base[o:o + take]
        o = 0
    return bytes(out)


class Conn:
    def fileno(self):
        return self.s.fileno()

    def __init__(self, sock, nbytes=0):
        self.s = sock
        self.out = bytearray()     # server: echo still to send
        self.sent = 0              # client: pattern bytes sent
        self.got = 0               # client: echo bytes checked
        self.n = nbytes
        self.closed = False
        self.bad = None


# ---- the readiness mechanisms ------------------------------------------------

class Select:
    def __init__(self):
        self.r, self.w = set(), set()

    def want(self, c, rd, wr):
        (self.r.add if rd else self.r.discard)(c)
        (self.w.add if wr else self.w.discard)(c)

    def drop(self, c):
        self.r.discard(c)
        self.w.discard(c)

    def wait(self, t):
        r, w, _ = select.select(list(self.r), list(self.w), [], t)
        ev = {}
        for c in r:
            ev[c] = ev.get(c, 0) | 1
        for c in w:
            ev[c] = ev.get(c, 0) | 2
        return ev.items()


class Poll:
    def __init__(self):
        self.p, self.by = select.poll(), {}

    def want(self, c, rd, wr):
        m = (select.POLLIN if rd else 0) | (select.POLLOUT if wr else 0)
        if c.s.fileno() in self.by:
            self.p.modify(c.s, m)
        else:
            self.p.register(c.s, m)
        self.by[c.s.fileno()] = c

    def drop(self, c):
        if self.by.pop(c.s.fileno(), None) is not None:
            self.p.unregister(c.s)

    def wait(self, t):
        out = []
        for fd, m in self.p.poll(t * 1000):
            e = (1 if m & (select.POLLIN | select.POLLHUP | select.POLLERR) else 0) | \
                (2 if m & (select.POLLOUT | select.POLLERR) else 0)
            out.append((self.by[fd], e))
        return out


class Epoll:
    """level, edge or one-shot: edge and one-shot callers must drain to
    EAGAIN (edge) or re-arm after each event (one-shot)."""

    def __init__(self, kind):
        self.e, self.by, self.kind = select.epoll(), {}, kind
        self.flags = {'lt': 0, 'et': select.EPOLLET, 'oneshot': select.EPOLLONESHOT}[kind]
        self.mask = {}

    def want(self, c, rd, wr):
        m = (select.EPOLLIN if rd else 0) | (select.EPOLLOUT if wr else 0)
        if self.kind == 'et':
            # edge-triggered: register both once; readiness edges drive us
            m = select.EPOLLIN | select.EPOLLOUT
        fd = c.s.fileno()
        if fd in self.by:
            if self.kind == 'et':
                return
            if self.kind == 'lt' and self.mask.get(fd) == m:
                return
            self.e.modify(fd, m | self.flags)
        else:
            self.e.register(fd, m | self.flags)
        self.by[fd] = c
        self.mask[fd] = m

    def drop(self, c):
        fd = c.s.fileno()
        if self.by.pop(fd, None) is not None:
            self.e.unregister(fd)
            self.mask.pop(fd, None)

    def wait(self, t):
        out = []
        for fd, m in self.e.poll(t):
            e = (1 if m & (select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR) else 0) | \
                (2 if m & (select.EPOLLOUT | select.EPOLLERR) else 0)
            if self.kind == 'oneshot':
                self.mask[fd] = None   # disarmed: the next want() re-arms
            out.append((self.by[fd], e))
        return out


def make_mux(mech):
    if mech == 'select':
        return Select()
    if mech == 'poll':
        return Poll()
    if mech.startswith('epoll-'):
        return Epoll(mech[6:])
    raise SystemExit('bp.py: unknown mechanism ' + mech)


# ---- one step of I/O on a non-blocking connection ------------------------------

def try_recv(c, cap):
    try:
        d = c.s.recv(cap)
    except (BlockingIOError, InterruptedError):
        return None
    return d


def try_send(c, data):
    try:
        return c.s.send(data)
    except (BlockingIOError, InterruptedError):
        return 0


def server_io(c, ev, edge):
    """Echo what came. Level-triggered: one read and one write per event.
    Edge-triggered: until neither a read nor a write makes progress (an
    edge comes once; input left unread while the buffer was full would
    otherwise wait for an edge that never comes)."""
    while True:
        progress = False
        while ev & 1 and len(c.out) < HIGH and not c.closed:
            d = try_recv(c, min(CHUNK, HIGH - len(c.out) + 1))
            if d is None:
                break
            if not d:
                c.closed = True
            c.out += d
            progress = True
            if not edge:
                break
        while c.out:
            n = try_send(c, bytes(c.out[:CHUNK]))
            if n == 0:
                break
            del c.out[:n]
            progress = True
            if not edge:
                break
        if not edge or not progress:
            break
    return not (c.closed and not c.out)


def client_io(c, ev, edge):
    while ev & 2 and c.sent < c.n:
        n = try_send(c, pattern(c.sent, min(CHUNK, c.n - c.sent)))
        if n == 0:
            break
        c.sent += n
        if c.sent == c.n:
            c.s.shutdown(socket.SHUT_WR)
        if not edge:
            break
    while ev & 1:
        d = try_recv(c, CHUNK)
        if d is None:
            break
        if not d:
            c.closed = True
            break
        if d != pattern(c.got, len(d)):
            c.bad = 'echo differs at byte %d' % c.got
            return False
        c.got += len(d)
        if not edge:
            break
    return not c.closed


def run_mux(mech, conns, io, want, is_server, listener=None):
    mux = make_mux(mech)
    edge = mech in ('epoll-et',)
    last = time.monotonic()
    live = list(conns)
    lc = None
    if listener is not None:
        lc = Conn(listener)
        mux.want(lc, True, False)
    for c in live:
        mux.want(c, *want(c))
    while live or is_server:
        evs = mux.wait(1.0)
        if not evs and time.monotonic() - last > STALL_S and live and not is_server:
            return 'stalled %ds: %s' % (STALL_S, ', '.join(
                'sent %d got %d of %d' % (c.sent, c.got, c.n) for c in live))
        for c, e in evs:
            last = time.monotonic()
            if c is lc:
                while True:   # every pending connection (an edge comes once)
                    try:
                        s, _ = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    s.setblocking(False)
                    n = Conn(s)
                    live.append(n)
                    mux.want(n, *want(n))
                if mech == 'epoll-oneshot':
                    mux.want(lc, True, False)
                continue
            # edge and one-shot: do all we can now (an edge comes once)
            if io(c, e if not edge else 3, edge or mech == 'epoll-oneshot'):
                mux.want(c, *want(c))
            else:
                mux.drop(c)
                live.remove(c)
                if c.bad:
                    return c.bad
                c.s.close()
    return None


# ---- server and client -----------------------------------------------------------

def serve_threads(listener):
    def echo(s):
        with s:
            while True:
                d = s.recv(CHUNK)
                if not d:
                    return
                s.sendall(d)
    while True:
        s, _ = listener.accept()
        threading.Thread(target=echo, args=(s,), daemon=True).start()


def server(mech, addr, port):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind((addr, port))
    l.listen(64)
    print('listening', mech, flush=True)
    if mech == 'threads':
        serve_threads(l)
        return 0
    l.setblocking(False)
    err = run_mux(mech, [], server_io,
                  lambda c: (len(c.out) < HIGH and not c.closed, bool(c.out)), True, l)
    print('FAIL', err, flush=True)
    return 1


def client_threads(conns):
    errs = []

    def writer(c):
        while c.sent < c.n:
            d = pattern(c.sent, min(CHUNK, c.n - c.sent))
            c.s.sendall(d)
            c.sent += len(d)
        c.s.shutdown(socket.SHUT_WR)

    def reader(c):
        while True:
            d = c.s.recv(CHUNK)
            if not d:
                break
            if d != pattern(c.got, len(d)):
                errs.append('echo differs at byte %d' % c.got)
                return
            c.got += len(d)

    ts = []
    for c in conns:
        c.s.settimeout(STALL_S)
        ts += [threading.Thread(target=writer, args=(c,)), threading.Thread(target=reader, args=(c,))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errs[0] if errs else None


def client(mech, addr, port, nbytes, nconns):
    conns = []
    for _ in range(nconns):
        s = socket.create_connection((addr, port), timeout=10)
        if mech != 'threads':
            s.setblocking(False)
        conns.append(Conn(s, nbytes))
    t0 = time.monotonic()
    try:
        if mech == 'threads':
            err = client_threads(conns)
        else:
            err = run_mux(mech, conns, client_io,
                          lambda c: (True, c.sent < c.n), False)
    except (OSError, socket.timeout) as e:
        err = '%s (%s)' % (e, errno.errorcode.get(getattr(e, 'errno', 0) or 0, '?'))
    dt = time.monotonic() - t0
    total = sum(c.got for c in conns)
    if err is None and total != nbytes * nconns:
        err = 'echoed %d of %d bytes' % (total, nbytes * nconns)
    if err:
        print('FAIL %s: %s' % (mech, err), flush=True)
        return 1
    print('ok %s conns=%d bytes=%d seconds=%.2f MiB/s=%.1f' %
          (mech, nconns, total, dt, total / dt / 1048576), flush=True)
    return 0


def main(argv):
    if len(argv) >= 5 and argv[1] == 'server':
        return server(argv[2], argv[3], int(argv[4]))
    if len(argv) >= 6 and argv[1] == 'client':
        return client(argv[2], argv[3], int(argv[4]), int(argv[5]),
                      int(argv[6]) if len(argv) > 6 else 1)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
