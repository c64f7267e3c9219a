#!/usr/bin/env python3
"""AF_INET6 dual-stack socket calls, one answer per line, for comparing the
shim's answers with Linux's (test/integration/preload_dualstack.sh).

Usage: dualstack_calls.py PEER4 PEER6 TCP_PORT UDP_PORT LISTEN_PORT PEER_CMD...

PEER4/PEER6: the peer's IPv4 and IPv6 addresses, where a TCP echo server
listens on TCP_PORT and a UDP echo on UDP_PORT (both on "::", dual-stack).
LISTEN_PORT: the port this script listens on ("::"); PEER_CMD is run (with
LD_PRELOAD and DPSOCK_* removed from its environment) with two more
arguments, "4" or "6", and must connect to it once over that family and
send "hello".

Ports that the kernel or dpsockd choose are printed as "P"; everything
else is printed as the calls returned it: addresses, control messages,
errno names.
"""
import errno
import os
import socket
import struct
import subprocess
import sys

peer4, peer6 = sys.argv[1], sys.argv[2]
tcp_port, udp_port, listen_port = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
peer_cmd = sys.argv[6:]
mapped = "::ffff:" + peer4


def say(what, value):
    print("%s %s" % (what, value), flush=True)


def name(addr, fixed=()):
    """host and port, the port masked unless it is one of ours"""
    host, port = addr[0], addr[1]
    return "%s %s" % (host, port if port in fixed else "P")


def err(fn):
    try:
        fn()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def peer(family):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("DPSOCK_")}
    return subprocess.Popen(peer_cmd + [family], env=env)


fixed = (tcp_port, udp_port, listen_port)

# ---- options and refusals -----------------------------------------------------
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
say("v6only.default", s.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY))
s.close()
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
say("v6only.bind_mapped", err(lambda: s.bind((mapped, 0))))
say("v6only.connect_mapped", err(lambda: s.connect((mapped, tcp_port))))
s.close()
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.bind(("::", 0))
say("v6only.after_bind", err(lambda: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)))
s.close()

# ---- TCP active opens: IPv4-mapped (dpsock) and IPv6 (the kernel) --------------
for label, dst in (("tcp4", mapped), ("tcp6", peer6)):
    c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    c.settimeout(5)
    c.connect((dst, tcp_port))
    say(label + ".peer", name(c.getpeername(), fixed))
    say(label + ".name", name(c.getsockname(), fixed))
    c.sendall(b"x" * 1000)
    got = b""
    while len(got) < 1000:
        d = c.recv(1000 - len(got))
        if not d:
            break
        got += d
    say(label + ".echo", len(got))
    say(label + ".domain", c.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN))
    c.close()
c = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
say("tcp4.getpeername_unconnected", err(c.getpeername))
c.close()

# ---- a dual-stack listener on "::": IPv4 and IPv6 connections, one descriptor -----
ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("::", listen_port))
ls.listen(8)
say("listen.name", name(ls.getsockname(), fixed))
ls.settimeout(10)
for fam in ("4", "6"):
    p = peer(fam)
    a, addr = ls.accept()
    say("accept%s.addr" % fam, name(addr, fixed))
    say("accept%s.name" % fam, name(a.getsockname(), fixed))
    say("accept%s.peer" % fam, name(a.getpeername(), fixed))
    a.settimeout(5)
    say("accept%s.data" % fam, a.recv(100).decode())
    say("accept%s.domain" % fam, a.getsockopt(socket.SOL_SOCKET, socket.SO_DOMAIN))
    a.close()
    say("peer%s.exit" % fam, p.wait(timeout=10))
ls.close()

# ---- UDP on "::" -----------------------------------------------------------------
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.bind(("::", 0))
u.settimeout(5)
say("udp.name", name(u.getsockname(), fixed))
u.sendto(b"ping4", (mapped, udp_port))
d, a = u.recvfrom(100)
say("udp4.recvfrom", "%s %s" % (d.decode(), name(a, fixed)))
u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 1)
u.sendto(b"info4", (mapped, udp_port))
d, anc, fl, a = u.recvmsg(100, 256)
for lvl, typ, data in anc:
    if lvl == socket.IPPROTO_IPV6 and typ == socket.IPV6_PKTINFO:
        say("udp4.pktinfo", socket.inet_ntop(socket.AF_INET6, data[:16]))
    else:
        say("udp4.cmsg", "%d %d" % (lvl, typ))
say("udp4.recvmsg", "%s %s flags %d" % (d.decode(), name(a, fixed), fl))
u.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVPKTINFO, 0)
u.sendto(b"ping6", (peer6, udp_port))
d, a = u.recvfrom(100)
say("udp6.recvfrom", "%s %s" % (d.decode(), name(a, fixed)))
u.connect((mapped, udp_port))
say("udp4.connected_peer", name(u.getpeername(), fixed))
u.send(b"conn4")
say("udp4.connected_recv", u.recv(100).decode())
u.close()
# unbound: the first datagram decides
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
u.settimeout(5)
u.sendto(b"first4", (mapped, udp_port))
d, a = u.recvfrom(100)
say("udp4.unbound", "%s %s" % (d.decode(), name(a, fixed)))
say("udp4.unbound_name", name(u.getsockname(), fixed))
say("udp.sendto_port0", err(lambda: u.sendto(b"x", (mapped, 0))))
u.close()
say("done", "")
