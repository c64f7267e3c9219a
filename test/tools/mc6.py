#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""mc6.py -- UDP multicast over IPv6 from the socket API's side, for
test/integration/mcast6.sh (mctool's IPv6 counterpart; the same payload and
the same RESULT / SOURCE lines, so mcast_lib.sh reads both). Plain Python
sockets: it runs on Linux's and, unchanged, under libdpsock_preload.so.

  mc6.py sub -g GROUP -p PORT [-I IFINDEX] [-s SRC]... [-x SRC] [-c] [-n N]
             [-t SEC] [-w SEC] [-A 0|1]
      an AF_INET6 socket bound to [::]:PORT (SO_REUSEADDR) joins GROUP:
      IPV6_JOIN_GROUP, or MCAST_JOIN_SOURCE_GROUP per -s, or
      MCAST_JOIN_GROUP then MCAST_BLOCK_SOURCE with -x; -c asks
      IPV6_RECVPKTINFO and checks each datagram's destination and
      interface. Prints READY once joined, then
        RESULT received=N lost=L dup=D foreign=F pktinfo=ok|bad|- from6=ok|bad
        SOURCE addr:port id=ID datagrams=N
  mc6.py pub -g GROUP -p PORT [-I IFINDEX] [-n N] [-r RATE] [-S ID] [-H HOPS]
             [-o 0|1] [-l SIZE]
      numbered datagrams (IPV6_MULTICAST_IF / _HOPS / _LOOP as given);
      prints SENT n errors=e
  mc6.py query -i IFNAME [-v 1|2] [-g GROUP] [-s SRC]... [-m MRD_MS]
      an MLD query (MLDv2, or MLDv1 with -v 1) from IFNAME's link-local
      address, as a querier sends it: hop limit 1, Router Alert (AF_PACKET)
  mc6.py api -I IFNAME -p PORT -4 ADDR4
      the IPv6 membership and multicast options' answers (errno names and
      values read back), one line per call, as a transcript to compare
      between Linux and the preload
"""
import argparse
import errno
import os
import select
import socket
import struct
import sys
import time

MAGIC = 0x4D43544F  # "MCTO", as mctool's payload
HDR = struct.Struct("=IIQQ")  # magic, sender, seq, send time (ns)
MCAST_JOIN_GROUP, MCAST_BLOCK_SOURCE, MCAST_UNBLOCK_SOURCE = 42, 43, 44
MCAST_LEAVE_GROUP, MCAST_JOIN_SOURCE_GROUP, MCAST_LEAVE_SOURCE_GROUP = 45, 46, 47
IPV6_MULTICAST_ALL = 29
IPV6_RECVPKTINFO, IPV6_PKTINFO = 49, 50


def a6(addr):
    return socket.inet_pton(socket.AF_INET6, addr)


def ss6(addr):
    """A sockaddr_storage holding sockaddr_in6 (addr, port 0)."""
    sin6 = struct.pack("=H", socket.AF_INET6) + b"\0\0" + b"\0" * 4 + a6(addr) + b"\0" * 4
    return sin6 + b"\0" * (128 - len(sin6))


def ss4(addr):
    sin = struct.pack("=H", socket.AF_INET) + b"\0\0" + socket.inet_aton(addr)
    return sin + b"\0" * (128 - len(sin))


def group_req(ifindex, group, fam6=True):
    # struct group_req: uint32 interface, 4 bytes of padding, a storage
    return struct.pack("=I4x", ifindex) + (ss6(group) if fam6 else ss4(group))


def group_source_req(ifindex, group, source):
    return struct.pack("=I4x", ifindex) + ss6(group) + ss6(source)


def mreq6(group, ifindex):
    return a6(group) + struct.pack("=I", ifindex)


# ---- sub --------------------------------------------------------------------------------

def cmd_sub(o):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", o.port))
    if o.all is not None:
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_MULTICAST_ALL, o.all)
    if o.source:
        for src in o.source:
            s.setsockopt(socket.IPPROTO_IPV6, MCAST_JOIN_SOURCE_GROUP,
                         group_source_req(o.ifindex, o.group, src))
    elif o.block:
        s.setsockopt(socket.IPPROTO_IPV6, MCAST_JOIN_GROUP, group_req(o.ifindex, o.group))
        s.setsockopt(socket.IPPROTO_IPV6, MCAST_BLOCK_SOURCE,
                     group_source_req(o.ifindex, o.group, o.block))
    else:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq6(o.group, o.ifindex))
    if o.check:
        s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVPKTINFO, 1)
    print("READY", flush=True)
    want = a6(o.group)
    senders = {}
    received = dup = foreign = lost = 0
    pktinfo = "-" if not o.check else "ok"
    from6 = "ok"
    first = True
    while o.count == 0 or received < o.count:
        r, _, _ = select.select([s], [], [], o.wait if first else o.timeout)
        if not r:
            break
        first = False
        data, anc, _, frm = s.recvmsg(65536, 256)
        if len(frm) != 4 or ":" not in frm[0] or frm[0].startswith("::ffff:"):
            from6 = "bad"
        if o.check:
            pi = [d for lvl, typ, d in anc if lvl == socket.IPPROTO_IPV6 and typ == IPV6_PKTINFO]
            if len(pi) != 1 or pi[0][:16] != want or \
                    (o.ifindex and struct.unpack("=I", pi[0][16:20])[0] != o.ifindex):
                pktinfo = "bad"
        if len(data) < HDR.size or HDR.unpack_from(data)[0] != MAGIC:
            foreign += 1
            continue
        _, sender, seq, _ = HDR.unpack_from(data)
        key = (frm[0], frm[1], sender)
        st = senders.setdefault(key, {"n": 0, "seen": set()})
        if seq in st["seen"]:
            dup += 1
            continue
        st["seen"].add(seq)
        st["n"] += 1
        received += 1
    for st in senders.values():
        lost += max(st["seen"]) + 1 - len(st["seen"])
    print(f"RESULT received={received} lost={lost} dup={dup} foreign={foreign} "
          f"pktinfo={pktinfo} from6={from6}")
    for (addr, port, sender), st in sorted(senders.items()):
        print(f"SOURCE {addr}:{port} id={sender} datagrams={st['n']}")


# ---- pub --------------------------------------------------------------------------------

def cmd_pub(o):
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    if o.ifindex:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, o.ifindex)
    if o.hops is not None:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, o.hops)
    if o.loop is not None:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, o.loop)
    pad = b"x" * max(0, o.size - HDR.size)
    sent = errors = 0
    t0 = time.monotonic()
    for seq in range(o.count):
        if o.rate:
            delay = t0 + seq / o.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        try:
            s.sendto(HDR.pack(MAGIC, o.sender, seq, time.time_ns()) + pad, (o.group, o.port))
            sent += 1
        except OSError:
            errors += 1
    print(f"SENT {sent} errors={errors}", flush=True)


# ---- query ------------------------------------------------------------------------------

def csum(b):
    if len(b) % 2:
        b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while t >> 16:
        t = (t & 0xFFFF) + (t >> 16)
    return ~t & 0xFFFF


def linklocal(ifname):
    with open("/proc/net/if_inet6") as f:
        for line in f:
            hexa, _, _, scope, _, name = line.split()
            if name == ifname and scope == "20":
                return bytes.fromhex(hexa)
    sys.exit(f"mc6.py query: {ifname} has no link-local address")


def cmd_query(o):
    src = linklocal(o.ifname)
    with open(f"/sys/class/net/{o.ifname}/address") as f:
        mac = bytes.fromhex(f.read().strip().replace(":", ""))
    group = a6(o.group) if o.group else bytes(16)
    dst = group if o.group else a6("ff02::1")
    if o.version == 1:
        msg = struct.pack("!BBHHH", 130, 0, 0, o.mrd, 0) + group
    else:
        srcs = [a6(x) for x in o.source or []]
        # S=0, QRV 2; QQIC 125 s; MRC: ms below 32768
        msg = struct.pack("!BBHHH", 130, 0, 0, o.mrd, 0) + group + \
            struct.pack("!BBH", 2, 125, len(srcs)) + b"".join(srcs)
    hbh = bytes([58, 0, 5, 2, 0, 0, 1, 0])  # Router Alert (MLD), PadN
    plen = len(hbh) + len(msg)
    pseudo = src + dst + struct.pack("!IxxxB", len(msg), 58)
    msg = msg[:2] + struct.pack("!H", csum(pseudo + msg)) + msg[4:]
    ip6 = struct.pack("!IHBB", 6 << 28, plen, 0, 1) + src + dst
    eth = b"\x33\x33" + dst[12:] + mac + struct.pack("!H", 0x86DD)
    p = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    p.bind((o.ifname, 0))
    p.send(eth + ip6 + hbh + msg)
    print("QUERY sent")


# ---- api --------------------------------------------------------------------------------

def cmd_api(o):
    ifx = socket.if_nametoindex(o.ifname)
    G, G2 = "ff15::1:7", "ff15::1:8"
    S1, S2 = "fd00:198:18::51", "fd00:198:18::52"
    out = []

    def call(what, fn):
        try:
            r = fn()
            out.append(f"{what}: ok" + ("" if r is None else f" {r}"))
        except OSError as e:
            out.append(f"{what}: {errno.errorcode.get(e.errno, e.errno)}")

    def so(s, name, val):
        return lambda: s.setsockopt(socket.IPPROTO_IPV6, name, val)

    def geti(s, name):
        return lambda: s.getsockopt(socket.IPPROTO_IPV6, name)

    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # before bind: kept, then made on the socket bind decides
    call("join before bind", so(s, socket.IPV6_JOIN_GROUP, mreq6(G2, ifx)))
    call("bind [::]", lambda: s.bind(("::", o.port)))
    call("join before bind, again", so(s, socket.IPV6_JOIN_GROUP, mreq6(G2, ifx)))
    call("IPV6_JOIN_GROUP", so(s, socket.IPV6_JOIN_GROUP, mreq6(G, ifx)))
    call("IPV6_JOIN_GROUP again", so(s, socket.IPV6_JOIN_GROUP, mreq6(G, ifx)))
    call("IPV6_JOIN_GROUP again, ifindex 0", so(s, socket.IPV6_JOIN_GROUP, mreq6(G, 0)))
    call("IPV6_LEAVE_GROUP", so(s, socket.IPV6_LEAVE_GROUP, mreq6(G, ifx)))
    call("IPV6_LEAVE_GROUP again", so(s, socket.IPV6_LEAVE_GROUP, mreq6(G, ifx)))
    call("join, ifindex 0 (the route's)", so(s, socket.IPV6_JOIN_GROUP, mreq6(G, 0)))
    call("leave, ifindex 0", so(s, socket.IPV6_LEAVE_GROUP, mreq6(G, 0)))
    call("join a unicast address", so(s, socket.IPV6_JOIN_GROUP, mreq6("fd00::1", ifx)))
    call("join a mapped group", so(s, socket.IPV6_JOIN_GROUP, mreq6("::ffff:239.1.2.3", ifx)))
    call("join, no such interface", so(s, socket.IPV6_JOIN_GROUP, mreq6(G, 9999)))
    call("join, short", so(s, socket.IPV6_JOIN_GROUP, mreq6(G, ifx)[:16]))
    call("MCAST_JOIN_GROUP", so(s, MCAST_JOIN_GROUP, group_req(ifx, G)))
    call("MCAST_JOIN_GROUP again", so(s, MCAST_JOIN_GROUP, group_req(ifx, G)))
    call("MCAST_BLOCK_SOURCE S1", so(s, MCAST_BLOCK_SOURCE, group_source_req(ifx, G, S1)))
    call("MCAST_BLOCK_SOURCE S1 again", so(s, MCAST_BLOCK_SOURCE, group_source_req(ifx, G, S1)))
    call("MCAST_JOIN_SOURCE_GROUP on EXCLUDE", so(s, MCAST_JOIN_SOURCE_GROUP,
                                                  group_source_req(ifx, G, S2)))
    call("MCAST_UNBLOCK_SOURCE S1", so(s, MCAST_UNBLOCK_SOURCE, group_source_req(ifx, G, S1)))
    call("MCAST_UNBLOCK_SOURCE S1 again", so(s, MCAST_UNBLOCK_SOURCE,
                                             group_source_req(ifx, G, S1)))
    call("MCAST_LEAVE_GROUP", so(s, MCAST_LEAVE_GROUP, group_req(ifx, G)))
    call("MCAST_LEAVE_GROUP again", so(s, MCAST_LEAVE_GROUP, group_req(ifx, G)))
    call("MCAST_JOIN_SOURCE_GROUP S1", so(s, MCAST_JOIN_SOURCE_GROUP,
                                          group_source_req(ifx, G, S1)))
    call("MCAST_JOIN_SOURCE_GROUP S1 again", so(s, MCAST_JOIN_SOURCE_GROUP,
                                                group_source_req(ifx, G, S1)))
    call("MCAST_JOIN_SOURCE_GROUP S2", so(s, MCAST_JOIN_SOURCE_GROUP,
                                          group_source_req(ifx, G, S2)))
    call("MCAST_BLOCK_SOURCE on INCLUDE", so(s, MCAST_BLOCK_SOURCE,
                                             group_source_req(ifx, G, S1)))
    call("MCAST_LEAVE_SOURCE_GROUP S1", so(s, MCAST_LEAVE_SOURCE_GROUP,
                                           group_source_req(ifx, G, S1)))
    call("MCAST_LEAVE_SOURCE_GROUP S1 again", so(s, MCAST_LEAVE_SOURCE_GROUP,
                                                 group_source_req(ifx, G, S1)))
    call("MCAST_LEAVE_SOURCE_GROUP S2 (the last)", so(s, MCAST_LEAVE_SOURCE_GROUP,
                                                      group_source_req(ifx, G, S2)))
    call("MCAST_LEAVE_GROUP after the last source", so(s, MCAST_LEAVE_GROUP, group_req(ifx, G)))
    call("MCAST_JOIN_GROUP, an AF_INET group", so(s, MCAST_JOIN_GROUP,
                                                  group_req(ifx, "239.1.2.3", False)))
    call("MCAST_JOIN_GROUP, short", so(s, MCAST_JOIN_GROUP, group_req(ifx, G)[:100]))
    call("MCAST_JOIN_SOURCE_GROUP, long", so(s, MCAST_JOIN_SOURCE_GROUP,
                                             group_source_req(ifx, G, S1) + b"\0"))
    # the IPv4 options on the same (dual-stack) socket
    call("IP_ADD_MEMBERSHIP on the AF_INET6 socket",
         lambda: s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                              socket.inet_aton("239.1.2.3") + socket.inet_aton(o.addr4)))
    call("IP_DROP_MEMBERSHIP on the AF_INET6 socket",
         lambda: s.setsockopt(socket.IPPROTO_IP, socket.IP_DROP_MEMBERSHIP,
                              socket.inet_aton("239.1.2.3") + socket.inet_aton(o.addr4)))
    call("leave before bind's group", so(s, socket.IPV6_LEAVE_GROUP, mreq6(G2, ifx)))
    # the sending options, read back
    call("IPV6_MULTICAST_HOPS default", geti(s, socket.IPV6_MULTICAST_HOPS))
    call("IPV6_MULTICAST_HOPS 5", so(s, socket.IPV6_MULTICAST_HOPS, 5))
    call("IPV6_MULTICAST_HOPS read", geti(s, socket.IPV6_MULTICAST_HOPS))
    call("IPV6_MULTICAST_HOPS 256", so(s, socket.IPV6_MULTICAST_HOPS, 256))
    call("IPV6_MULTICAST_HOPS -1", so(s, socket.IPV6_MULTICAST_HOPS, -1))
    call("IPV6_MULTICAST_HOPS read", geti(s, socket.IPV6_MULTICAST_HOPS))
    call("IPV6_MULTICAST_LOOP 0", so(s, socket.IPV6_MULTICAST_LOOP, 0))
    call("IPV6_MULTICAST_LOOP read", geti(s, socket.IPV6_MULTICAST_LOOP))
    call("IPV6_MULTICAST_LOOP 2", so(s, socket.IPV6_MULTICAST_LOOP, 2))
    call("IPV6_MULTICAST_ALL 0", so(s, IPV6_MULTICAST_ALL, 0))
    call("IPV6_MULTICAST_IF", so(s, socket.IPV6_MULTICAST_IF, ifx))
    call("IPV6_MULTICAST_IF read is the index", lambda: s.getsockopt(
        socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF) == ifx)
    call("IPV6_MULTICAST_IF no such interface", so(s, socket.IPV6_MULTICAST_IF, 9999))
    call("IPV6_MULTICAST_IF 0", so(s, socket.IPV6_MULTICAST_IF, 0))
    s.close()
    # an AF_INET socket has no IPv6 options
    s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s4.bind(("0.0.0.0", o.port + 1))
    call("IPV6_JOIN_GROUP on an AF_INET socket", so(s4, socket.IPV6_JOIN_GROUP, mreq6(G, ifx)))
    call("MCAST_JOIN_GROUP (IPPROTO_IPV6) on an AF_INET socket",
         so(s4, MCAST_JOIN_GROUP, group_req(ifx, G)))
    s4.close()
    print("\n".join(out))
    print("done")


def main():
    ap = argparse.ArgumentParser(prog="mc6.py")
    sp = ap.add_subparsers(dest="cmd", required=True)
    s = sp.add_parser("sub")
    s.add_argument("-g", dest="group", required=True)
    s.add_argument("-p", dest="port", type=int, required=True)
    s.add_argument("-I", dest="ifindex", type=int, default=0)
    s.add_argument("-s", dest="source", action="append")
    s.add_argument("-x", dest="block")
    s.add_argument("-c", dest="check", action="store_true")
    s.add_argument("-n", dest="count", type=int, default=0)
    s.add_argument("-t", dest="timeout", type=float, default=5)
    s.add_argument("-w", dest="wait", type=float, default=None)
    s.add_argument("-A", dest="all", type=int, default=None)
    p = sp.add_parser("pub")
    p.add_argument("-g", dest="group", required=True)
    p.add_argument("-p", dest="port", type=int, required=True)
    p.add_argument("-I", dest="ifindex", type=int, default=0)
    p.add_argument("-n", dest="count", type=int, default=1000)
    p.add_argument("-r", dest="rate", type=float, default=0)
    p.add_argument("-S", dest="sender", type=int, default=os.getpid() & 0xFFFF)
    p.add_argument("-H", dest="hops", type=int, default=None)
    p.add_argument("-o", dest="loop", type=int, default=None)
    p.add_argument("-l", dest="size", type=int, default=64)
    q = sp.add_parser("query")
    q.add_argument("-i", dest="ifname", required=True)
    q.add_argument("-v", dest="version", type=int, default=2, choices=(1, 2))
    q.add_argument("-g", dest="group")
    q.add_argument("-s", dest="source", action="append")
    q.add_argument("-m", dest="mrd", type=int, default=1000)
    a = sp.add_parser("api")
    a.add_argument("-I", dest="ifname", required=True)
    a.add_argument("-p", dest="port", type=int, required=True)
    a.add_argument("-4", dest="addr4", required=True)
    o = ap.parse_args()
    if o.cmd == "sub" and o.wait is None:
        o.wait = o.timeout
    {"sub": cmd_sub, "pub": cmd_pub, "query": cmd_query, "api": cmd_api}[o.cmd](o)


if __name__ == "__main__":
    main()
