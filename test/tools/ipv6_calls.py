#!/usr/bin/env python3
"""TCP and UDP over IPv6 under the preload: this end of each case here, the
other a program in the peer namespace (test/integration/preload_ipv6.sh).

Usage: ipv6_calls.py A4 A6 B4 B6 PORT PEER_CMD...

A4, A6: this host's addresses (dpsockd's address and address6); B4, B6:
the peer's. PORT, PORT+1, ... are listened on here, one per case; the peer
runs TCP and UDP echo servers on PORT+20 (IPv6 and IPv4). PEER_CMD ADDR
PORT tcp|udp runs a client in the peer (without LD_PRELOAD and DPSOCK_*):
tcp connects, sends "hello", prints "sent" (or the errno's name) and
closes; udp sends a "hello" datagram and prints the reply ("got ...").

Each line printed is what a program sees, written as Linux answers it:
families, addresses, equalities, errno names, digests. The test compares
the lines with what Linux gives (the expected transcript is in the test).
"""
import errno
import hashlib
import os
import select
import socket
import subprocess
import sys
import threading

a4, a6, b4, b6, port0 = sys.argv[1:5] + [int(sys.argv[5])]
peer_cmd = sys.argv[6:]
case_no = 0


def say(*a):
    print(*a, flush=True)


def name(n):
    """An address as the test writes it: A4/A6/B4/B6, mapped ones with ::ffff:."""
    table = {a4: "A4", a6: "A6", b4: "B4", b6: "B6", "::": "::"}
    if n.startswith("::ffff:") and n[7:] in table:
        return "::ffff:" + table[n[7:]]
    return table.get(n, n)


def peer_env():
    return {k: v for k, v in os.environ.items()
            if k != "LD_PRELOAD" and not k.startswith("DPSOCK_")}


def peer(addr, port, proto="tcp"):
    r = subprocess.run(peer_cmd + [addr, str(port), proto], capture_output=True, text=True,
                       timeout=30, env=peer_env())
    return r.stdout.strip() or "exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])


def errname(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def bound(kind, addr, v6only):
    """A socket of the next case's port on addr: a listener (SOCK_STREAM)
    or a UDP socket with IPV6_RECVPKTINFO; prints its name."""
    global case_no
    port = port0 + case_no
    case_no += 1
    s = socket.socket(socket.AF_INET6, kind)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1 if v6only else 0)
    if kind == socket.SOCK_DGRAM:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
    s.bind((addr, port))
    if kind == socket.SOCK_STREAM:
        s.listen(8)
    s.settimeout(20)
    n = s.getsockname()
    say("listener" if kind == socket.SOCK_STREAM else "udp bound", name(n[0]), "port",
        n[1] == port)
    return s, port


def listener(addr, v6only):
    return bound(socket.SOCK_STREAM, addr, v6only)


def accept_from(s, to, port):
    """The peer connects to to:port and says hello: what accept saw."""
    r = peer(to, port)
    c, a = s.accept()
    d = b""
    while len(d) < 5:
        x = c.recv(5 - len(d))
        if not x:
            break
        d += x
    ln, pn = c.getsockname(), c.getpeername()
    say(" to", name(to), "peer:", r, "| accepted", c.family.name, "from", name(a[0]),
        "to", name(ln[0]), "port", ln[1] == port, "peername", name(pn[0]), "read", d.decode())
    c.close()


# -- a listener of IPv6 alone on "::" (nginx's `listen [::]:80`)
s, port = listener("::", True)
accept_from(s, a6, port)
say(" to A4 peer:", peer(a4, port))
s.close()

# -- the same on dpsockd's address6
s, port = listener(a6, True)
accept_from(s, a6, port)
s.close()

# -- a listener of both families on "::" (Node.js, Java, `ipv6only=off`)
s, port = listener("::", False)
accept_from(s, a6, port)
accept_from(s, a4, port)
s.close()

# -- without a bind, IPV6_V6ONLY on: "::" of IPv6 alone
c6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
c6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
c6.listen(4)
c6.settimeout(20)
n = c6.getsockname()
say("unbound v6only listener", name(n[0]))
accept_from(c6, a6, n[1])
c6.close()

# -- a client to the peer's IPv6 echo server: 8 MiB each way
echo = port0 + 20
c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
c.settimeout(30)
say("connect", errname(lambda: c.connect((b6, echo))))
ln, pn = c.getsockname(), c.getpeername()
say(" name", name(ln[0]), "peer", name(pn[0]), "port", pn[1] == echo, "flowinfo", ln[2], pn[2])
data = os.urandom(8 << 20)
h = hashlib.sha256(data).hexdigest()
t = threading.Thread(target=lambda: (c.sendall(data), c.shutdown(socket.SHUT_WR)))
t.start()
g = hashlib.sha256()
got = 0
while True:
    d = c.recv(1 << 16)
    if not d:
        break
    g.update(d)
    got += len(d)
t.join()
say(" echoed", got == len(data), "digest equal", g.hexdigest() == h)
c.close()

# -- a non-blocking connect, then poll for its end
c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
c.setblocking(False)
say("connect nb", errname(lambda: c.connect((b6, echo))))
p = select.poll()
p.register(c, select.POLLOUT)
say(" poll", bool(p.poll(10000)), "SO_ERROR", c.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
c.setblocking(True)
c.sendall(b"ping")
say(" echo", c.recv(4))
c.close()

# -- refused: nobody listens on the peer's port
c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
c.settimeout(10)
say("connect closed port", errname(lambda: c.connect((b6, echo + 1))))
c.close()

# -- an AF_INET6 socket bound to dpsockd's IPv6 address, its port chosen
c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
c.bind((a6, 0))
n = c.getsockname()
say("bound", name(n[0]), "port chosen", n[1] != 0)
c.close()


# ---- UDP
def udp_sock(addr, v6only):
    return bound(socket.SOCK_DGRAM, addr, v6only)


def udp_serve_one(u, to, port):
    """The peer sends a datagram to to:port; answer it; print both ends."""
    env = peer_env()
    p = subprocess.Popen(peer_cmd + [to, str(port), "udp"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    d, anc, fl, a = u.recvmsg(2048, socket.CMSG_SPACE(20))
    dst = "-"
    for level, typ, data in anc:
        if level == socket.IPPROTO_IPV6 and typ == socket.IPV6_PKTINFO:
            dst = name(socket.inet_ntop(socket.AF_INET6, data[:16]))
    u.sendto(b"re:" + d, a)
    out, err = p.communicate(timeout=20)
    say(" to", name(to), "recvmsg", d.decode(), "from", name(a[0]), "pktinfo", dst,
        "| peer:", out.strip() or err.strip()[-200:])


u, port = udp_sock("::", True)
udp_serve_one(u, a6, port)
u.close()
u, port = udp_sock(a6, True)
udp_serve_one(u, a6, port)
u.close()
u, port = udp_sock("::", False)
udp_serve_one(u, a6, port)
udp_serve_one(u, a4, port)
u.close()

# an unbound socket's first datagram to the peer's IPv6 echo server; one
# of 8000 bytes (fragments both ways)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.settimeout(10)
for size in (64, 8000):
    data = os.urandom(size)
    u.sendto(data, (b6, echo))
    d, a = u.recvfrom(65536)
    say("udp client", size, "echoed", d == data, "from", name(a[0]), "port", a[1] == echo)
say(" name", name(u.getsockname()[0]))
u.close()

# connected to the peer's IPv6 echo server
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.settimeout(10)
say("udp connect", errname(lambda: u.connect((b6, echo))))
p = u.getpeername()
say(" peername", name(p[0]), "port", p[1] == echo)
u.send(b"ping6")
say(" echo", u.recv(100))
u.close()
say("-- done")
