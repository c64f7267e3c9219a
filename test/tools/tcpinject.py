#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tcpinject.py - inject hand-made TCP segments into a live connection (stdlib only).

  tcpinject.py -i IFACE -d IP -p PORT [CASE...]

Run as root in the Linux peer's namespace. Opens an ordinary TCP connection
to an echo server at IP:PORT (dpsock-echo --raw), watches it with an
AF_PACKET socket on IFACE, and for each CASE injects one segment into that
4-tuple through a raw IP socket, with sequence numbers taken from the
capture (the server's RCV.NXT = the last ACK it sent, its SND.NXT = the end
of the last segment it sent). After each case the connection must still
echo a fresh message correctly and the server must not have sent a RST.
Cases (default: all, in this order):

  rst_oow       RST with SEQ far outside the receive window: silently
                dropped (RFC 5961 3.2), no answer expected
  rst_inwin     RST with SEQ = RCV.NXT + 1000 (in window, not exact):
                challenge ACK expected (RFC 5961 3.2)
  syn_estab     SYN on the established connection: challenge ACK
                expected (RFC 5961 4.2)
  data_oow      32 bytes of data at RCV.NXT + 2^30: dropped, answered with
                an ACK of RCV.NXT (RFC 9293 3.10.7.4)

The challenge ACK must be a pure ACK from the server with SEQ = its SND.NXT
and ACK = its RCV.NXT, within 1 s of the injection. Prints one line per case
("case NAME: ok ..." or "case NAME: FAILED ...") and exits 0 if all passed.
"""
import argparse
import os
import select
import socket
import struct
import sys
import time

ETH_P_IP = 0x0800


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


class Seg:
    __slots__ = ("t", "src", "dst", "sport", "dport", "seq", "ack", "flags", "win", "dlen")

    def __str__(self):
        f = "".join(c for c, b in zip("FSRPAU", (1, 2, 4, 8, 16, 32)) if self.flags & b)
        return "%s:%d>%s:%d [%s] seq=%d ack=%d win=%d len=%d" % (
            self.src, self.sport, self.dst, self.dport, f, self.seq, self.ack, self.win, self.dlen)


def parse(frame):
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 15) * 4
    if ip[9] != 6:
        return None
    tot = struct.unpack("!H", ip[2:4])[0]
    tcp = ip[ihl:tot]
    if len(tcp) < 20:
        return None
    s = Seg()
    s.t = time.monotonic()
    s.src = socket.inet_ntoa(ip[12:16])
    s.dst = socket.inet_ntoa(ip[16:20])
    s.sport, s.dport, s.seq, s.ack = struct.unpack("!HHII", tcp[:12])
    doff = (tcp[12] >> 4) * 4
    s.flags = tcp[13]
    s.win = struct.unpack("!H", tcp[14:16])[0]
    s.dlen = len(tcp) - doff
    return s


class Conn:
    def __init__(self, iface, dst, port):
        self.dst, self.port = dst, port
        self.cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
        self.cap.bind((iface, 0))
        self.cap.setblocking(False)
        self.raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.s = socket.create_connection((dst, port), timeout=5)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.src, self.sport = self.s.getsockname()
        self.segs = []          # every segment of the 4-tuple seen, both ways
        self.srv_nxt = None     # server's SND.NXT (end of its last segment)
        self.srv_ack = None     # server's RCV.NXT (its last ACK)
        self.srv_win = None
        self.cli_win = 502
        self.n = 0

    def pump(self, secs):
        """Read the capture for secs seconds; return the new segments."""
        new = []
        end = time.monotonic() + secs
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([self.cap], [], [], left)
            if not r:
                continue
            while True:
                try:
                    frame, addr = self.cap.recvfrom(65535)
                except BlockingIOError:
                    break
                seg = parse(frame)
                if seg is None:
                    continue
                fwd = (seg.src, seg.sport, seg.dst, seg.dport) == (self.src, self.sport, self.dst, self.port)
                rev = (seg.src, seg.sport, seg.dst, seg.dport) == (self.dst, self.port, self.src, self.sport)
                if not (fwd or rev):
                    continue
                new.append((fwd, seg))
                if rev:
                    end_seq = seg.seq + seg.dlen + (1 if seg.flags & 3 else 0)
                    self.srv_nxt = end_seq & 0xFFFFFFFF
                    if seg.flags & 16:
                        self.srv_ack = seg.ack
                    self.srv_win = seg.win
                else:
                    self.cli_win = seg.win
        self.segs += new
        return new

    def echo(self, tag):
        """Send a fresh message, read it back; then let the line go quiet."""
        self.n += 1
        msg = ("%s-%d-" % (tag, self.n)).encode() + os.urandom(8).hex().encode()
        self.s.sendall(msg)
        got = b""
        self.s.settimeout(5)
        while len(got) < len(msg):
            d = self.s.recv(4096)
            if not d:
                raise ConnectionError("EOF from the server")
            got += d
        if got != msg:
            raise ValueError("echo differs: %r != %r" % (got, msg))
        self.pump(0.3)  # delayed ACKs, then quiet

    def inject(self, seq, ack, flags, data=b"", win=None):
        tcp = struct.pack("!HHIIBBHHH", self.sport, self.port, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                          5 << 4, flags, self.cli_win if win is None else win, 0, 0) + data
        ph = socket.inet_aton(self.src) + socket.inet_aton(self.dst) + struct.pack("!BBH", 0, 6, len(tcp))
        c = csum(ph + tcp)
        tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0x4242, 0x4000, 64, 6, 0,
                         socket.inet_aton(self.src), socket.inet_aton(self.dst))
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        self.raw.sendto(ip + tcp, (self.dst, 0))


def run_case(c, name):
    c.echo("before-" + name)
    rcv_nxt, snd_nxt = c.srv_ack, c.srv_nxt
    if rcv_nxt is None or snd_nxt is None:
        return False, "no server segment captured"
    expect_ack = True
    if name == "rst_oow":
        seq, flags, data = rcv_nxt + 0x40000000, 0x04, b""
        expect_ack = False
    elif name == "rst_inwin":
        seq, flags, data = rcv_nxt + 1000, 0x04, b""
    elif name == "syn_estab":
        seq, flags, data = rcv_nxt + 5000, 0x02, b""
    elif name == "data_oow":
        seq, flags, data = rcv_nxt + 0x40000000, 0x18, b"x" * 32
    else:
        return False, "unknown case"
    ackf = 0x10 if flags != 0x02 and flags != 0x04 else 0
    c.inject(seq, snd_nxt, flags | ackf, data)
    new = c.pump(1.0)
    from_srv = [s for fwd, s in new if not fwd]
    challenge = [s for s in from_srv if s.flags & 0x10 and not s.flags & 0x07 and s.dlen == 0
                 and s.seq == snd_nxt and s.ack == rcv_nxt]
    rsts = [s for s in from_srv if s.flags & 0x04]
    desc = "injected seq=RCV.NXT+%d ack=SND.NXT flags=0x%02x len=%d; server sent %d segment(s)%s" % (
        (seq - rcv_nxt) & 0xFFFFFFFF, flags | ackf, len(data), len(from_srv),
        "".join("\n      " + str(s) for s in from_srv))
    if rsts:
        return False, "server answered with RST: " + desc
    if expect_ack and not challenge:
        return False, "no challenge ACK (SEQ=%d ACK=%d) within 1 s: %s" % (snd_nxt, rcv_nxt, desc)
    if not expect_ack and from_srv:
        return False, "expected silence (RFC 5961 3.2), got an answer: " + desc
    try:
        c.echo("after-" + name)
    except (OSError, ValueError, ConnectionError) as e:
        return False, "connection broken afterwards (%s): %s" % (e, desc)
    return True, ("challenge ACK seen, " if expect_ack else "no answer, ") + "still echoes; " + desc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-i", "--iface", required=True)
    ap.add_argument("-d", "--dst", required=True)
    ap.add_argument("-p", "--port", type=int, required=True)
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    cases = a.cases or ["rst_oow", "rst_inwin", "syn_estab", "data_oow"]
    c = Conn(a.iface, a.dst, a.port)
    c.pump(0.2)
    bad = 0
    for name in cases:
        try:
            good, why = run_case(c, name)
        except (OSError, ValueError, ConnectionError) as e:
            good, why = False, "exception: %s" % e
        print("case %s: %s %s" % (name, "ok" if good else "FAILED", why), flush=True)
        bad += not good
    c.s.close()
    print("tcpinject: %d of %d cases passed" % (len(cases) - bad, len(cases)), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
