#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pingn.py - send exactly N ICMP echo requests and wait for every reply
(stdlib only, root: a raw socket). An IPv6 DST is pinged with ICMPv6.

  pingn.py -c N [-i SECS] [-W SECS] [-I SRC] [-s BYTES] DST

Sends N echo requests, one every -i seconds (0.01), from SRC when given,
then waits until every reply is in, at most -W seconds (5) after the last
request. Prints "pingn: N transmitted, M received, max_rtt_ms=X" and exits
0 when all N replies came, 1 otherwise.

Why not ping: with -c and some replies in, iputils' ping stops waiting two
round trips after the last request, whatever -W says, so a reply that is
late but sure to come (a worker kept off its CPU for tens of ms on a loaded
machine) counts as lost; with -w it sends more requests than -c while it
waits, which breaks exact counts of the requests the stack saw.
"""
import argparse
import os
import select
import socket
import struct
import sys
import time

ICMP_ECHO, ICMP_REPLY = 8, 0
ICMP6_ECHO, ICMP6_REPLY = 128, 129


def cksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-c", type=int, required=True)
    ap.add_argument("-i", type=float, default=0.01)
    ap.add_argument("-W", type=float, default=5.0)
    ap.add_argument("-I", dest="src")
    ap.add_argument("-s", type=int, default=56)
    ap.add_argument("dst")
    a = ap.parse_args()

    v6 = ":" in a.dst
    if v6:
        # the kernel computes an ICMPv6 checksum and strips the IPv6 header
        sk = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        echo, reply = ICMP6_ECHO, ICMP6_REPLY
        dst = socket.inet_pton(socket.AF_INET6, a.dst.split("%")[0])
    else:
        sk = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        echo, reply = ICMP_ECHO, ICMP_REPLY
    # room for every reply while this process waits for a CPU (root: FORCE)
    sk.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
    if a.src:
        sk.bind((a.src, 0))
    ident = os.getpid() & 0xFFFF
    payload = bytes(i & 0xFF for i in range(a.s))
    sent_at = {}
    got = set()
    max_rtt = 0.0

    def receive(until):
        nonlocal max_rtt
        while len(got) < len(sent_at):
            left = until - time.monotonic()
            if left <= 0 or not select.select([sk], [], [], left)[0]:
                return
            pkt, src = sk.recvfrom(65536)
            if v6:
                ihl, same = 0, socket.inet_pton(socket.AF_INET6, src[0].split("%")[0]) == dst
            else:
                ihl, same = (pkt[0] & 0xF) * 4, src[0] == a.dst
            if not same or len(pkt) < ihl + 8:
                continue
            typ, _code, _ck, pid, seq = struct.unpack("!BBHHH", pkt[ihl:ihl + 8])
            if typ == reply and pid == ident and seq in sent_at and seq not in got:
                got.add(seq)
                max_rtt = max(max_rtt, time.monotonic() - sent_at[seq])

    for seq in range(1, a.c + 1):
        hdr = struct.pack("!BBHHH", echo, 0, 0, ident, seq)
        msg = struct.pack("!BBHHH", echo, 0, 0 if v6 else cksum(hdr + payload), ident,
                          seq) + payload
        sent_at[seq] = time.monotonic()
        sk.sendto(msg, (a.dst, 0))
        receive(sent_at[seq] + a.i)
        left = sent_at[seq] + a.i - time.monotonic()
        if left > 0:
            time.sleep(left)
    receive(time.monotonic() + a.W)
    print("pingn: %d transmitted, %d received, max_rtt_ms=%.3f" % (a.c, len(got), max_rtt * 1000))
    return 0 if len(got) == a.c else 1


if __name__ == "__main__":
    sys.exit(main())
