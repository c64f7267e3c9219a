#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A paced ping-pong that measures blackouts: a client sends a 16-byte
record (sequence number, send time in ns; network order) every INTERVAL
over one TCP connection (or UDP datagrams with --udp) to a server that
echoes whatever it gets; the client checks that every record comes back,
in order and unchanged, and measures the gaps between consecutive echoes
arriving (a server or daemon that stops answering for a while shows as
one large gap) and the round trips.

    pace_pingpong.py server --port P [--host ADDR] [--udp]
    pace_pingpong.py client --host ADDR --port P [--udp] [--interval-ms 1]
                            [--duration S] [--drain S] [--mark FILE]
                            [--status-interval S] [--connect-timeout S]

server: echoes every connection (TCP; several at a time) or every datagram
(UDP) until SIGTERM/SIGINT; prints "listening on ADDR:PORT (tcp|udp)" once
ready, and at the end one JSON line {"connections", "bytes", "datagrams",
"errors"}; exit 0 only when no connection ended with an error (reset, or
any error but an orderly close by the client).

client: runs until SIGTERM/SIGINT or --duration seconds, then stops sending,
waits up to --drain seconds (2) for the echoes still due, and prints one
JSON line:

    {"proto", "sent", "received", "lost", "max_gap_ms", "max_rtt_ms",
     "max_send_gap_ms", "p50_rtt_ms", "p99_rtt_ms",
     "gaps_over_ms": {"10": n, "50": n, "100": n},
     "windows": [{"mark", "start_s", "sent", "received", "lost",
                  "max_gap_ms", "max_rtt_ms", "max_send_gap_ms"}, ...],
     "errors": [...], ...}

max_send_gap_ms, the largest gap between two sends, is the client's own
stall (kept off the CPU): a gap between echoes no larger than it is the
client's, not the server's.

Exit 0 only when "errors" is empty. Errors: a connection refused, reset or
closed by the server, a record out of order, a record changed (its send
time is not the one sent under its sequence number), and, over TCP, a
record that never came back. Over UDP lost, reordered and duplicated
datagrams are counted ("lost", "reordered", "duplicates"), not errors; an
ICMP port unreachable (ECONNREFUSED: the port was closed at some moment)
is one.

--mark FILE: FILE is read every 5 ms; each time its content (stripped; an
empty read is ignored) changes, a new window starts, labelled with it. A
window counts the records sent in it (and, at the end, those of them lost),
and the largest gap between echoes and round trip of the echoes that
arrived in it: a test writes a takeover's number into FILE (atomically:
write another file and rename it) just before starting it, and the
window's max_gap_ms is that takeover's blackout. The first window's mark
is the content at start (null when FILE is missing or empty).

--status-interval S (1): every S seconds, a line "status t=.. sent=..
received=.. max_gap_ms=.. last_echo_ms_ago=.." on stderr, so that a test
can see the echoes still arriving.
"""
import argparse
import bisect
import errno
import json
import select
import selectors
import signal
import socket
import struct
import sys
import time

REC = struct.Struct("!QQ")  # sequence number, send time (CLOCK_MONOTONIC ns)
MAX_ERRORS = 50
STOP = False


def on_signal(signum, frame):
    global STOP
    STOP = True


def now_ns():
    return time.monotonic_ns()


# ---- server ---------------------------------------------------------------


def server(args):
    fam = socket.getaddrinfo(args.host, args.port)[0][0]
    sel = selectors.DefaultSelector()
    stats = {"connections": 0, "bytes": 0, "datagrams": 0, "errors": []}
    if args.udp:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((args.host, args.port))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, "udp")
    else:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((args.host, args.port))
        s.listen(128)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, "listen")
    print("listening on %s:%d (%s)" % (args.host, args.port, "udp" if args.udp else "tcp"), flush=True)
    out = {}  # conn -> bytes not yet sent back
    peers = {}  # conn -> the client's address

    def drop(c, why=None):
        if why:
            if len(stats["errors"]) < MAX_ERRORS:
                stats["errors"].append(why)
        try:
            sel.unregister(c)
        except (KeyError, ValueError):
            pass
        out.pop(c, None)
        peers.pop(c, None)
        c.close()

    def want(c):
        sel.modify(c, selectors.EVENT_READ | (selectors.EVENT_WRITE if out.get(c) else 0), "conn")

    while not STOP:
        for key, ev in sel.select(0.2):
            c = key.fileobj
            if key.data == "udp":
                for _ in range(64):
                    try:
                        d, peer = c.recvfrom(65536)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError as e:  # an ICMP error from an earlier reply
                        if len(stats["errors"]) < MAX_ERRORS:
                            stats["errors"].append("recvfrom: %s" % e)
                        break
                    stats["datagrams"] += 1
                    stats["bytes"] += len(d)
                    try:
                        c.sendto(d, peer)
                    except (BlockingIOError, InterruptedError):
                        pass  # a datagram dropped: the client counts it
                    except OSError as e:
                        if len(stats["errors"]) < MAX_ERRORS:
                            stats["errors"].append("sendto %s: %s" % (peer, e))
                continue
            if key.data == "listen":
                while True:
                    try:
                        n, peer = c.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    n.setblocking(False)
                    n.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    stats["connections"] += 1
                    out[n] = b""
                    peers[n] = "%s:%d" % peer[:2]
                    sel.register(n, selectors.EVENT_READ, "conn")
                continue
            if ev & selectors.EVENT_READ:
                try:
                    d = c.recv(65536)
                except (BlockingIOError, InterruptedError):
                    d = None
                except OSError as e:
                    drop(c, "connection from %s: recv: %s" % (peers.get(c, "?"), e))
                    continue
                if d == b"":
                    drop(c)  # orderly close by the client
                    continue
                if d:
                    stats["bytes"] += len(d)
                    out[c] = out.get(c, b"") + d
            if out.get(c):
                try:
                    k = c.send(out[c])
                    out[c] = out[c][k:]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as e:
                    drop(c, "connection from %s: send: %s" % (peers.get(c, "?"), e))
                    continue
            want(c)
    print(json.dumps(stats), flush=True)
    return 0 if not stats["errors"] else 1


# ---- client ---------------------------------------------------------------


class Window:
    def __init__(self, mark, start_s, first_seq):
        self.mark = mark
        self.start_s = start_s
        self.first_seq = first_seq
        self.sent = 0
        self.received = 0
        self.lost = 0
        self.max_gap_ns = 0
        self.max_rtt_ns = 0
        self.max_send_gap_ns = 0

    def as_dict(self):
        return {"mark": self.mark, "start_s": round(self.start_s, 3), "sent": self.sent,
                "received": self.received, "lost": self.lost,
                "max_gap_ms": round(self.max_gap_ns / 1e6, 3), "max_rtt_ms": round(self.max_rtt_ns / 1e6, 3),
                "max_send_gap_ms": round(self.max_send_gap_ns / 1e6, 3)}


def read_mark(path):
    try:
        with open(path) as f:
            v = f.read().strip()
    except OSError:
        return None
    return v or None


def client(args):
    t0 = now_ns()
    errs = {}  # message -> times seen (in order of first sight)
    nerrors = 0

    def error(msg):
        nonlocal nerrors
        nerrors += 1
        if msg in errs or len(errs) < MAX_ERRORS:
            errs[msg] = errs.get(msg, 0) + 1

    def error_list():
        return [m if n == 1 else "%s (x%d)" % (m, n) for m, n in errs.items()]

    interval = int(args.interval_ms * 1e6)
    fam = socket.getaddrinfo(args.host, args.port)[0][0]
    s = socket.socket(fam, socket.SOCK_DGRAM if args.udp else socket.SOCK_STREAM)
    s.settimeout(args.connect_timeout)
    try:
        s.connect((args.host, args.port))
    except OSError as e:
        error("connect to %s:%d: %s" % (args.host, args.port, e))
        print(json.dumps({"proto": "udp" if args.udp else "tcp", "sent": 0, "received": 0, "lost": 0,
                          "max_gap_ms": 0, "max_rtt_ms": 0, "max_send_gap_ms": 0, "p50_rtt_ms": 0, "p99_rtt_ms": 0,
                          "gaps_over_ms": {"10": 0, "50": 0, "100": 0}, "windows": [], "errors": error_list()}),
              flush=True)
        return 1
    if not args.udp:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.setblocking(False)

    sent_t = []  # seq -> send time (ns); seq i at index i
    got = bytearray()  # seq -> received (UDP)
    received = 0
    reordered = duplicates = send_dropped = 0
    next_seq_tcp = 0  # the next sequence expected back (TCP)
    highest = -1  # the highest sequence back so far (UDP)
    rtts = []
    gaps_over = {10: 0, 50: 0, 100: 0}
    max_gap = max_rtt = max_send_gap = 0
    last_arrival = None
    last_send = None
    inbuf = b""
    outbuf = b""
    closed = False

    mark_path = args.mark
    win = [Window(read_mark(mark_path) if mark_path else None, 0.0, 0)]
    win_first = [0]  # first seq of each window, for bisect
    last_mark_check = t0

    deadline = t0 + int(args.duration * 1e9) if args.duration else None
    status_every = int(args.status_interval * 1e9) if args.status_interval > 0 else 0
    next_status = t0 + status_every
    next_send = t0
    sending = True
    drain_until = None

    def arrival(seq, t_sent, now):
        nonlocal received, max_gap, max_rtt, last_arrival, next_seq_tcp, highest, reordered, duplicates
        if seq >= len(sent_t) or sent_t[seq] != t_sent:
            error("corrupted record: seq %d, time %d (%s)" % (
                seq, t_sent, "never sent" if seq >= len(sent_t) else "sent at %d" % sent_t[seq]))
            return
        if args.udp:
            if got[seq]:
                duplicates += 1
                return
            got[seq] = 1
            if seq < highest:
                reordered += 1
            highest = max(highest, seq)
        else:
            if seq != next_seq_tcp:
                error("out of order: expected seq %d, got %d" % (next_seq_tcp, seq))
            next_seq_tcp = seq + 1
        received += 1
        w = win[-1]
        w.received += 1
        rtt = now - t_sent
        rtts.append(rtt)
        max_rtt = max(max_rtt, rtt)
        w.max_rtt_ns = max(w.max_rtt_ns, rtt)
        if last_arrival is not None:
            gap = now - last_arrival
            max_gap = max(max_gap, gap)
            w.max_gap_ns = max(w.max_gap_ns, gap)
            for k in gaps_over:
                if gap > k * 1000000:
                    gaps_over[k] += 1
        last_arrival = now

    def outstanding():
        return len(sent_t) - received

    while True:
        now = now_ns()
        if sending and (STOP or (deadline is not None and now >= deadline) or closed):
            sending = False
            drain_until = now + int(args.drain * 1e9)
        if not sending and (outstanding() == 0 or now >= drain_until or closed):
            break
        if mark_path and now - last_mark_check >= 5000000:
            last_mark_check = now
            m = read_mark(mark_path)
            if m is not None and m != win[-1].mark:
                win.append(Window(m, (now - t0) / 1e9, len(sent_t)))
                win_first.append(len(sent_t))
        if status_every and now >= next_status:
            next_status += status_every
            print("status t=%.1f sent=%d received=%d max_gap_ms=%.1f last_echo_ms_ago=%.1f errors=%d" % (
                (now - t0) / 1e9, len(sent_t), received, max_gap / 1e6,
                (now - last_arrival) / 1e6 if last_arrival else -1, nerrors), file=sys.stderr, flush=True)
        # send what is due (a process kept off the CPU sends the records it
        # owes at once: the pace stays INTERVAL on average)
        if sending and now >= next_send:
            burst = 0
            while now >= next_send and burst < 100:
                seq = len(sent_t)
                t = now_ns()
                sent_t.append(t)
                win[-1].sent += 1
                if last_send is not None:
                    max_send_gap = max(max_send_gap, t - last_send)
                    win[-1].max_send_gap_ns = max(win[-1].max_send_gap_ns, t - last_send)
                last_send = t
                rec = REC.pack(seq, t)
                if args.udp:
                    got.append(0)
                    try:
                        s.send(rec)
                    except (BlockingIOError, InterruptedError):
                        send_dropped += 1
                    except ConnectionRefusedError:
                        error("ECONNREFUSED (ICMP port unreachable)")
                    except OSError as e:
                        error("send: %s" % e)
                else:
                    outbuf += rec
                next_send += interval
                burst += 1
            if now >= next_send:  # more than 100 behind: give up on those
                next_send = now + interval
        if outbuf and not closed:
            try:
                k = s.send(outbuf)
                outbuf = outbuf[k:]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError as e:
                error("send: %s" % e)
                closed = True
        # wait for an echo until the next thing to do
        now = now_ns()
        wake = next_send if sending else drain_until
        if mark_path:
            wake = min(wake, last_mark_check + 5000000)
        if status_every:
            wake = min(wake, next_status)
        if deadline is not None and sending:
            wake = min(wake, deadline)
        timeout = max(0, wake - now) / 1e9
        if closed:
            continue
        try:
            r, _, _ = select.select([s], [s] if outbuf else [], [], timeout)
        except InterruptedError:
            continue
        if not r:
            continue
        for _ in range(64):
            try:
                d = s.recv(65536)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                error("ECONNREFUSED (%s)" % ("ICMP port unreachable" if args.udp else "connection refused"))
                if not args.udp:
                    closed = True
                break
            except OSError as e:
                error("recv: %s (%s)" % (e, errno.errorcode.get(e.errno, "?")))
                closed = True
                break
            t = now_ns()
            if args.udp:
                if len(d) != REC.size:
                    error("datagram of %d bytes, not %d" % (len(d), REC.size))
                    continue
                arrival(*REC.unpack(d), t)
                continue
            if d == b"":
                if sending or outstanding():
                    error("the server closed the connection (%d records outstanding)" % outstanding())
                closed = True
                break
            inbuf += d
            n = len(inbuf) // REC.size
            for i in range(n):
                arrival(*REC.unpack_from(inbuf, i * REC.size), t)
            inbuf = inbuf[n * REC.size:]
            if len(d) < 65536:
                break

    end = now_ns()
    lost_seqs = []
    if args.udp:
        lost_seqs = [i for i in range(len(sent_t)) if not got[i]]
    else:
        lost_seqs = list(range(next_seq_tcp, len(sent_t)))
        if inbuf:
            error("%d bytes of a partial record left" % len(inbuf))
    for q in lost_seqs:
        win[bisect.bisect_right(win_first, q) - 1].lost += 1
    lost = len(lost_seqs)
    if lost and not args.udp:
        error("%d records never came back (seq %d..%d)" % (lost, lost_seqs[0], lost_seqs[-1]))
    if not args.udp and not closed:
        try:
            s.setblocking(True)
            s.settimeout(1)
            s.shutdown(socket.SHUT_WR)
            while s.recv(65536):
                pass
        except OSError:
            pass
    s.close()
    rtts.sort()

    def pct(p):
        if not rtts:
            return 0
        return round(rtts[min(len(rtts) - 1, int(len(rtts) * p))] / 1e6, 3)

    res = {
        "proto": "udp" if args.udp else "tcp",
        "interval_ms": args.interval_ms,
        "duration_s": round((end - t0) / 1e9, 3),
        "sent": len(sent_t),
        "received": received,
        "lost": lost,
        "max_gap_ms": round(max_gap / 1e6, 3),
        "max_rtt_ms": round(max_rtt / 1e6, 3),
        "max_send_gap_ms": round(max_send_gap / 1e6, 3),
        "p50_rtt_ms": pct(0.50),
        "p99_rtt_ms": pct(0.99),
        "gaps_over_ms": {str(k): v for k, v in gaps_over.items()},
        "windows": [w.as_dict() for w in win],
        "errors": error_list(),
    }
    if args.udp:
        res.update({"reordered": reordered, "duplicates": duplicates, "send_dropped": send_dropped})
    if nerrors:
        res["errors_total"] = nerrors
    print(json.dumps(res), flush=True)
    return 0 if nerrors == 0 else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("server", "client"))
    p.add_argument("--host", default=None, help="server: address to bind (0.0.0.0); client: server's address")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--udp", action="store_true", help="UDP datagrams instead of one TCP connection")
    p.add_argument("--interval-ms", type=float, default=1.0, help="client: one record every this many ms (1)")
    p.add_argument("--duration", type=float, default=0, help="client: seconds to run (0: until SIGTERM/SIGINT)")
    p.add_argument("--drain", type=float, default=2.0, help="client: seconds to wait for the last echoes (2)")
    p.add_argument("--mark", default=None, help="client: a file whose content changes start new windows")
    p.add_argument("--status-interval", type=float, default=1.0, help="client: seconds between status lines (0: none)")
    p.add_argument("--connect-timeout", type=float, default=5.0, help="client: seconds (5)")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.mode == "server":
        args.host = args.host or "0.0.0.0"
        return server(args)
    if not args.host:
        p.error("client needs --host")
    return client(args)


if __name__ == "__main__":
    sys.exit(main())
