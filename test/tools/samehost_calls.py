#!/usr/bin/env python3
"""TCP calls on both ends of connections within one host, one answer per
line, for comparing the shim's answers with Linux's loopback
(test/integration/preload_same_host.sh).

Usage: samehost_calls.py ADDR PORT

ADDR: an address of this host (under the preload, one dpsockd serves, so
both ends are its sockets and their bytes go FIFO to FIFO). PORT, PORT+1,
... are listened on, one per case. Addresses and the ports the stack
chooses are not printed; what is printed is what a program sees: name
equalities, poll and epoll events, errno names, byte counts that do not
depend on buffer sizes, and digests.
"""
import errno
import hashlib
import select
import socket
import struct
import sys
import threading
import time

addr, port0 = sys.argv[1], int(sys.argv[2])
case_no = 0

POLL_BITS = [(select.POLLIN, "IN"), (select.POLLOUT, "OUT"), (select.POLLERR, "ERR"),
             (select.POLLHUP, "HUP"), (select.POLLRDHUP, "RDHUP")]
EPOLL_BITS = [(select.EPOLLIN, "IN"), (select.EPOLLOUT, "OUT"), (select.EPOLLERR, "ERR"),
              (select.EPOLLHUP, "HUP"), (select.EPOLLRDHUP, "RDHUP")]


def say(*what):
    print(*what, flush=True)


def bits(mask, table):
    return "|".join(n for b, n in table if mask & b) or "-"


def poll_ev(sock, events, timeout_ms):
    p = select.poll()
    p.register(sock, events)
    r = p.poll(timeout_ms)
    return bits(r[0][1] if r else 0, POLL_BITS)


def epoll_ev(ep, timeout_s):
    return ",".join(bits(e, EPOLL_BITS) for _, e in ep.poll(timeout_s)) or "none"


def errname(f):
    try:
        r = f()
        return "ok" if r is None else repr(r)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def recv_all(s, n):
    buf = b""
    while len(buf) < n:
        d = s.recv(n - len(buf))
        if not d:
            break
        buf += d
    return buf


def pair():
    """a listener, a connected client and the accepted server end"""
    global case_no
    port = port0 + case_no
    case_no += 1
    lsn = socket.socket()
    lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsn.bind((addr, port))
    lsn.listen(8)
    cli = socket.create_connection((addr, port), timeout=10)
    say("listener before accept:", poll_ev(lsn, select.POLLIN, 5000))
    srv, _ = lsn.accept()
    srv.settimeout(10)
    return lsn, cli, srv


def case_names_and_data():
    lsn, cli, srv = pair()
    say("names: srv.peer == cli.name", srv.getpeername() == cli.getsockname(),
        "cli.peer == srv.name", cli.getpeername() == srv.getsockname(),
        "srv.name port", srv.getsockname()[1] - port0)
    say("srv idle:", poll_ev(srv, select.POLLIN | select.POLLOUT | select.POLLRDHUP, 0))
    data = bytes(range(256)) * 400  # 100 KiB
    cli.sendall(data)
    say("srv with data:", poll_ev(srv, select.POLLIN | select.POLLRDHUP, 5000))
    got = recv_all(srv, len(data))
    say("srv read", len(got), "intact", got == data)
    say("srv drained:", poll_ev(srv, select.POLLIN, 0))
    srv.sendall(b"pong")
    say("cli read", recv_all(cli, 4))
    for s in (cli, srv, lsn):
        s.close()


def case_half_close():
    lsn, cli, srv = pair()
    cli.sendall(b"request")
    cli.shutdown(socket.SHUT_WR)
    say("srv read", recv_all(srv, 100))
    say("srv after peer FIN:", poll_ev(srv, select.POLLIN | select.POLLOUT | select.POLLRDHUP, 5000))
    say("srv recv at end", srv.recv(10))
    say("cli send after SHUT_WR", errname(lambda: cli.send(b"x")))
    srv.sendall(b"answer" * 1000)
    say("cli read", len(recv_all(cli, 6000)))
    srv.close()
    time.sleep(0.1)
    say("cli after both ends:", poll_ev(cli, select.POLLIN | select.POLLOUT | select.POLLRDHUP, 5000))
    say("cli recv at end", cli.recv(10))
    cli.close()
    lsn.close()


def case_close_unread():
    """close with unread data sends RST (RFC 2525 2.17, as Linux)"""
    lsn, cli, srv = pair()
    srv.sendall(b"x" * 1000)
    say("cli readable:", poll_ev(cli, select.POLLIN, 5000))
    cli.close()
    say("srv after RST:", poll_ev(srv, select.POLLIN | select.POLLRDHUP, 5000))
    say("srv recv", errname(lambda: srv.recv(10)))
    say("srv send", errname(lambda: srv.send(b"y")))
    srv.close()
    lsn.close()


def case_linger0():
    lsn, cli, srv = pair()
    cli.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    cli.sendall(b"bye")
    say("srv read", recv_all(srv, 3))
    cli.close()
    say("srv after abort:", poll_ev(srv, select.POLLIN, 5000))
    say("srv recv", errname(lambda: srv.recv(10)))
    srv.close()
    lsn.close()


def case_backpressure():
    lsn, cli, srv = pair()
    cli.setblocking(False)
    chunk = bytes(range(256)) * 256  # 64 KiB
    h = hashlib.sha256()
    sent = 0
    ev = "OUT"
    # Fill until a send would block and the writer then stays blocked for
    # 200 ms. On Linux's loopback the send that fails found everything
    # downstream full: the first poll already waits in vain. Under the
    # shim a send fills a FIFO that dpsockd empties behind it, so the
    # send that fails may have outrun dpsockd while the reader's window
    # still had room: the writer gets room back and fills again, until
    # the reader's buffers are full too. A writer that never stays
    # blocked ends at 256 MiB with "False then OUT".
    while ev != "-" and sent <= (256 << 20):
        while sent <= (256 << 20):
            try:
                n = cli.send(chunk)
            except BlockingIOError:
                break
            h.update(chunk[:n])
            sent += n
        ev = poll_ev(cli, select.POLLOUT, 200)
    say("cli filled up:", sent <= (256 << 20), "then", ev)
    # read what was sent; the writer gets room back
    g = hashlib.sha256()
    got = 0
    while got < sent:
        d = srv.recv(min(65536, sent - got))
        g.update(d)
        got += len(d)
    say("cli writable again:", poll_ev(cli, select.POLLOUT, 5000))
    # a second round, blocking, then the end
    cli.setblocking(True)
    more = b"z" * (3 << 20)
    h.update(more)
    t = threading.Thread(target=lambda: (cli.sendall(more), cli.shutdown(socket.SHUT_WR)))
    t.start()
    while True:
        d = srv.recv(65536)
        if not d:
            break
        g.update(d)
        got += len(d)
    t.join()
    say("srv got all", got == sent + len(more), "digest equal", g.digest() == h.digest())
    for s in (cli, srv, lsn):
        s.close()


def case_epoll():
    lsn, cli, srv = pair()
    ep = select.epoll()
    ep.register(srv, select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET)
    say("epoll idle:", epoll_ev(ep, 0))
    cli.send(b"a")
    say("epoll data:", epoll_ev(ep, 5))
    say("epoll again (ET):", epoll_ev(ep, 0.1))
    cli.send(b"b")
    say("epoll more data:", epoll_ev(ep, 5))
    say("srv read", recv_all(srv, 2))
    cli.shutdown(socket.SHUT_WR)
    say("epoll peer FIN:", epoll_ev(ep, 5))
    ep.modify(srv, select.EPOLLOUT)
    say("epoll out:", epoll_ev(ep, 5))
    ep.close()
    for s in (cli, srv, lsn):
        s.close()


def case_refused():
    global case_no
    port = port0 + case_no
    case_no += 1
    s = socket.socket()
    s.settimeout(10)
    say("connect to a closed port", errname(lambda: s.connect((addr, port))))
    s.close()


for case in (case_names_and_data, case_half_close, case_close_unread, case_linger0,
             case_backpressure, case_epoll, case_refused):
    say("--", case.__name__[5:])
    case()
say("-- done")
