#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the seed corpora of the structured harnesses (frames, preload) into
test/fuzz/corpus/: conversations a real peer or client would have, in each
harness's input format (see the comment at the top of fuzz_frames.c and
fuzz_preload.c). Rerun after changing a format:

    test/fuzz/make_seeds.py            # rewrites the gen-* seeds
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

LOCAL = bytes([198, 18, 0, 1])
PEER = bytes([198, 18, 0, 2])
PEER_MAC = bytes([2, 0, 0, 0, 0, 2])
BCAST = b'\xff' * 6
LOCAL6 = bytes.fromhex('fd000198001800000000000000000001')  # fd00:198:18::1
PEER6 = bytes.fromhex('fd000198001800000000000000000002')   # fd00:198:18::2
SNODE6 = bytes.fromhex('ff0200000000000000000001ff000001')  # LOCAL6's solicited-node group
SNODE6_MAC = bytes([0x33, 0x33, 0xff, 0, 0, 1])


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack(f'!{len(b) // 2}H', b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def eth(payload, ethertype=0x0800, dst=BCAST, src=PEER_MAC):
    return dst + src + struct.pack('!H', ethertype) + payload


def ipv4(proto, payload, src=PEER, dst=LOCAL, ident=1, frag=0, ttl=64, options=b''):
    ihl = 5 + len(options) // 4
    hdr = struct.pack('!BBHHHBBH4s4s', 0x40 | ihl, 0, 4 * ihl + len(payload), ident, frag,
                      ttl, proto, 0, src, dst) + options
    hdr = hdr[:10] + struct.pack('!H', csum(hdr)) + hdr[12:]
    return hdr + payload


def pseudo(src, dst, proto, length):
    """The pseudo-header of a TCP, UDP or ICMPv6 checksum: IPv4 or IPv6 by
    the addresses' length."""
    if len(src) == 16:
        return src + dst + struct.pack('!IxxxB', length, proto)
    return src + dst + struct.pack('!BBH', 0, proto, length)


def tcp(sport, dport, seq, ack, flags, data=b'', window=65535, options=b'', src=PEER, dst=LOCAL):
    off = (20 + len(options)) // 4
    hdr = struct.pack('!HHIIBBHHH', sport, dport, seq, ack, off << 4, flags, window, 0, 0)
    seg = hdr + options + data
    ph = pseudo(src, dst, 6, len(seg))
    c = csum(ph + seg)
    return seg[:16] + struct.pack('!H', c) + seg[18:]


def ipv6(nh, payload, src=PEER6, dst=LOCAL6, hlim=64):
    """An IPv6 packet; payload begins with header nh (an extension header
    or the upper layer)."""
    return struct.pack('!IHBB16s16s', 6 << 28, len(payload), nh, hlim, src, dst) + payload


def tcp6(sport, dport, seq, ack, flags, data=b'', window=65535, options=b''):
    return tcp(sport, dport, seq, ack, flags, data, window, options, src=PEER6, dst=LOCAL6)


def icmp6(mtype, code, body, src=PEER6, dst=LOCAL6):
    m = struct.pack('!BBH', mtype, code, 0) + body
    return m[:2] + struct.pack('!H', csum(pseudo(src, dst, 58, len(m)) + m)) + m[4:]


def icmp6_echo(ident, seq, data=b'ping', src=PEER6, dst=LOCAL6):
    return icmp6(128, 0, struct.pack('!HH', ident, seq) + data, src, dst)


def udp(sport, dport, data, src=PEER, dst=LOCAL):
    seg = struct.pack('!HHHH', sport, dport, 8 + len(data), 0) + data
    ph = pseudo(src, dst, 17, len(seg))
    c = csum(ph + seg) or 0xffff
    return seg[:6] + struct.pack('!H', c) + seg[8:]


def icmp_echo(ident, seq, data=b'ping'):
    m = struct.pack('!BBHHH', 8, 0, 0, ident, seq) + data
    return m[:2] + struct.pack('!H', csum(m)) + m[4:]


def arp(op, sha, spa, tha, tpa):
    return struct.pack('!HHBBH', 1, 0x0800, 6, 4, op) + sha + spa + tha + tpa


FIN, SYN, RST, PSH, ACK, URG = 1, 2, 4, 8, 16, 32
MSS = b'\x02\x04\x05\xb4'
WS = b'\x03\x03\x07\x01'
SACKOK = b'\x04\x02'
TS = b'\x08\x0a\x00\x00\x00\x01\x00\x00\x00\x00'
NOP = b'\x01'


# ---- fuzz_frames records ----------------------------------------------------

def frame(f, flags=0, mode=0):
    return bytes([0, flags, mode]) + struct.pack('<H', len(f)) + f


def rel_ack(f, mode=0):
    """A TCP frame whose ack is relative to what the stack sent last:
    checksums fixed by the harness after the ack is set (flag 2, the IPv4
    header checksum, does nothing to IPv6)."""
    return frame(f, flags=8 | 4 | 2, mode=mode)


def timers(n):
    return bytes([1, n])


def connect(port):
    return bytes([2]) + struct.pack('!H', port)


def app(op, arg):
    return bytes([3, op, arg])


def udp_send(port, n):
    return bytes([4]) + struct.pack('!HH', port, n)


def poll(n):
    return bytes([5, n])


def handshake(port, isn=1000, options=MSS):
    syn = eth(ipv4(6, tcp(40000, port, isn, 0, SYN, options=options)))
    ack = eth(ipv4(6, tcp(40000, port, isn + 1, 0, ACK)))
    return frame(syn) + rel_ack(ack)


def frames_seeds():
    s = {}
    s['arp_request'] = frame(eth(arp(1, PEER_MAC, PEER, b'\0' * 6, LOCAL), 0x0806))
    s['arp_reply'] = frame(eth(arp(2, PEER_MAC, PEER, b'\0' * 6, LOCAL), 0x0806))
    s['arp_gratuitous'] = frame(eth(arp(1, PEER_MAC, bytes([198, 18, 0, 9]), b'\0' * 6,
                                        bytes([198, 18, 0, 9])), 0x0806))
    s['ping'] = frame(eth(ipv4(1, icmp_echo(1, 1))))
    s['ping_big'] = frame(eth(ipv4(1, icmp_echo(1, 2, bytes(range(256)) * 5))))
    s['ping_options'] = frame(eth(ipv4(1, icmp_echo(2, 1), options=b'\x07\x07\x04\0\0\0\0\x00')))
    s['ping_broadcast'] = frame(eth(ipv4(1, icmp_echo(3, 1), dst=bytes([198, 18, 0, 255]))))
    # a datagram in three fragments, out of order, one overlapping
    payload = udp(5000, 7, bytes(range(200)) * 12)
    p1, p2, p3 = payload[:800], payload[800:1600], payload[1600:]
    s['udp_fragments'] = (frame(eth(ipv4(17, p2, ident=7, frag=0x2000 | 100)))
                          + frame(eth(ipv4(17, p3, ident=7, frag=200)))
                          + frame(eth(ipv4(17, p1, ident=7, frag=0x2000))))
    s['udp_fragment_overlap'] = (frame(eth(ipv4(17, payload[:808], ident=8, frag=0x2000)))
                                 + frame(eth(ipv4(17, payload[800:], ident=8, frag=100)))
                                 + timers(3))
    s['udp_echo'] = frame(eth(ipv4(17, udp(5000, 7, b'hello'))))
    s['udp_discard'] = frame(eth(ipv4(17, udp(5000, 9, b'x' * 100))))
    s['udp_closed_port'] = frame(eth(ipv4(17, udp(5000, 1234, b'?'))))
    s['udp_short_len'] = frame(eth(ipv4(17, udp(5000, 7, b'abcdef')[:4] + b'\x00\x09\0\0abcdef')))
    s['udp_send_frag'] = udp_send(5000, 4000) + poll(2)
    s['igmp_query'] = frame(eth(ipv4(2, b'\x11\x64\x00\x00\x00\x00\x00\x00',
                                     dst=bytes([224, 0, 0, 1]), options=b'\x94\x04\x00\x00')),
                            flags=4)
    s['tcp_syn'] = frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN, options=MSS + WS + SACKOK + TS + NOP + NOP))))
    s['tcp_syn_closed'] = frame(eth(ipv4(6, tcp(40000, 81, 1000, 0, SYN))))
    s['tcp_http'] = (handshake(80)
                     + rel_ack(eth(ipv4(6, tcp(40000, 80, 1001, 0, PSH | ACK, b'GET / HTTP/1.1\r\n\r\n'))))
                     + rel_ack(eth(ipv4(6, tcp(40000, 80, 1020, 0, FIN | ACK))))
                     + poll(2))
    s['tcp_echo_window'] = (handshake(7)
                            + rel_ack(eth(ipv4(6, tcp(40000, 7, 1001, 0, ACK, b'a' * 1000, window=100))))
                            + timers(8)
                            + rel_ack(eth(ipv4(6, tcp(40000, 7, 2001, 0, ACK, window=0))))
                            + timers(0xff) + timers(0xff))
    s['tcp_out_of_order'] = (handshake(7)
                             + rel_ack(eth(ipv4(6, tcp(40000, 7, 1501, 0, ACK, b'b' * 500))))
                             + rel_ack(eth(ipv4(6, tcp(40000, 7, 2501, 0, ACK, b'c' * 500))))
                             + rel_ack(eth(ipv4(6, tcp(40000, 7, 1001, 0, ACK, b'a' * 500)))))
    s['tcp_rst'] = handshake(7) + frame(eth(ipv4(6, tcp(40000, 7, 1001, 0, RST))))
    s['tcp_urgent'] = (handshake(7)
                       + rel_ack(eth(ipv4(6, tcp(40000, 7, 1001, 0, ACK | URG | PSH, b'urgent')[:18] + b'\x00\x03' + b'urgent'))))
    s['tcp_app_close'] = handshake(80) + app(2, 0) + timers(4) + rel_ack(eth(ipv4(6, tcp(40000, 80, 1001, 0, FIN | ACK)))) + timers(2)
    s['tcp_app_send'] = handshake(7) + app(0, 200) + app(4, 1) + app(5, 1) + timers(10) + app(1, 0) + app(3, 0)
    s['tcp_connect'] = (connect(8080)
                        + frame(eth(ipv4(6, tcp(8080, 0, 5000, 0, SYN | ACK, options=MSS))), flags=8 | 4 | 2, mode=32)
                        + app(0, 10)
                        + frame(eth(ipv4(6, tcp(8080, 0, 5001, 0, ACK | FIN))), flags=8 | 4 | 2, mode=32))
    s['tcp_connect_refused'] = connect(8081) + frame(eth(ipv4(6, tcp(8081, 0, 0, 1, RST | ACK))), flags=8 | 4 | 2, mode=32)
    s['tcp_connect_timeout'] = connect(8082) + timers(0xff) * 6
    s['tcp_chained_mbufs'] = frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN, options=MSS))), mode=3)
    s['tcp_nic_checksums'] = frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN))), flags=0x10 | 0x40)
    s['tcp_syn_fin'] = frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN | FIN))))
    s['burst'] = b''.join(frame(eth(ipv4(1, icmp_echo(9, i))), mode=4) for i in range(8)) + poll(1)
    # 802.1Q (mode 64: the frame tagged for VLAN 100; 128: the port goes on
    # VLAN 100 first): on the VLAN, a ping, ARP, an HTTP exchange and the
    # app's UDP; an untagged frame there and a tagged one on an untagged
    # port are dropped
    VLAN, VLAN_ON = 64, 128
    s['vlan_ping_arp'] = (frame(eth(ipv4(1, icmp_echo(4, 1))), mode=VLAN | VLAN_ON)
                          + frame(eth(arp(1, PEER_MAC, PEER, b'\0' * 6, LOCAL), 0x0806), mode=VLAN))
    s['vlan_tcp_http'] = (frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN, options=MSS))), mode=VLAN | VLAN_ON)
                          + frame(eth(ipv4(6, tcp(40000, 80, 1001, 0, ACK))), flags=8 | 4 | 2, mode=VLAN)
                          + frame(eth(ipv4(6, tcp(40000, 80, 1001, 0, PSH | ACK, b'GET / HTTP/1.1\r\n\r\n'))),
                                  flags=8 | 4 | 2, mode=VLAN)
                          + udp_send(5000, 3000) + poll(2))
    s['vlan_untagged_dropped'] = frame(eth(ipv4(1, icmp_echo(5, 1))), mode=VLAN_ON) + poll(1)
    s['vlan_tagged_on_untagged'] = frame(eth(ipv4(17, udp(5000, 7, b'tagged'))), mode=VLAN)
    # IPv6 (fd00:198:18::/64; the harness taught the stack the peer's
    # neighbour entry). Unicast frames carry the port's MAC (mode 8).
    PORT, IP6 = 8, 0x86dd
    s['ip6_ping'] = frame(eth(ipv6(58, icmp6_echo(1, 1)), IP6), mode=PORT)
    s['ip6_neighbour_solicit'] = frame(eth(ipv6(58, icmp6(135, 0, b'\0' * 4 + LOCAL6 + b'\x01\x01' + PEER_MAC,
                                                          dst=SNODE6), dst=SNODE6, hlim=255),
                                           IP6, dst=SNODE6_MAC))
    get = b'GET / HTTP/1.1\r\n\r\n'
    s['ip6_tcp_http'] = (frame(eth(ipv6(6, tcp6(40000, 80, 1000, 0, SYN, options=MSS)), IP6), mode=PORT)
                         + rel_ack(eth(ipv6(6, tcp6(40000, 80, 1001, 0, ACK)), IP6), mode=PORT)
                         + rel_ack(eth(ipv6(6, tcp6(40000, 80, 1001, 0, PSH | ACK, get)), IP6), mode=PORT)
                         + rel_ack(eth(ipv6(6, tcp6(40000, 80, 1001 + len(get), 0, FIN | ACK)), IP6), mode=PORT)
                         + poll(2))
    # an echo request of 2008 bytes in two fragments (fragment header 44:
    # next header, reserved, offset << 3 | M, identification); the reply
    # does not fit in 1500 bytes either: the stack fragments it
    echo = icmp6_echo(2, 1, bytes(range(250)) * 8)
    s['ip6_ping_fragments'] = (frame(eth(ipv6(44, struct.pack('!BBHI', 58, 0, 0 << 3 | 1, 9) + echo[:1232]),
                                         IP6), mode=PORT)
                               + frame(eth(ipv6(44, struct.pack('!BBHI', 58, 0, (1232 // 8) << 3 | 0, 9) + echo[1232:]),
                                           IP6), mode=PORT))
    s['ip6_udp_echo'] = frame(eth(ipv6(17, udp(5000, 7, b'hello6', src=PEER6, dst=LOCAL6)), IP6), mode=PORT)
    # a datagram of 3000 bytes in two fragments; the echo goes back in two
    dgram = udp(5000, 7, bytes(range(200)) * 15, src=PEER6, dst=LOCAL6)
    s['ip6_udp_fragments'] = (frame(eth(ipv6(44, struct.pack('!BBHI', 17, 0, 0 << 3 | 1, 10) + dgram[:1448]),
                                        IP6), mode=PORT)
                              + frame(eth(ipv6(44, struct.pack('!BBHI', 17, 0, (1448 // 8) << 3 | 0, 10)
                                               + dgram[1448:]), IP6), mode=PORT))
    # a hop-by-hop options header (next header, length 0, PadN of 4) before
    # an echo request
    s['ip6_hop_by_hop'] = frame(eth(ipv6(0, bytes([58, 0, 1, 4, 0, 0, 0, 0]) + icmp6_echo(3, 1)), IP6),
                                mode=PORT)
    s.update(mld_seeds(IP6))
    return s


PEER_LL = bytes.fromhex('fe800000000000000000000000000002')  # fe80::2
ALL_NODES = bytes.fromhex('ff020000000000000000000000000001')
G6 = bytes.fromhex('ff150000000000000000000000000001')      # ff15::1
G6B = bytes.fromhex('ff150000000000000000000000000002')     # ff15::2


def mld(mtype, body, dst, src=PEER_LL, hlim=1):
    """An MLD message as a querier or another host sends it: behind a
    hop-by-hop header with Router Alert, hop limit 1, link-local source."""
    hbh = bytes([58, 0, 5, 2, 0, 0, 1, 0])
    return eth(ipv6(0, hbh + icmp6(mtype, 0, body, src, dst), src=src, dst=dst, hlim=hlim), 0x86dd,
               dst=b'\x33\x33' + dst[12:])


def mld_query(mrd, group=bytes(16), sources=(), v1=False, **kw):
    body = struct.pack('!HH', mrd, 0) + group
    if not v1:
        body += struct.pack('!BBH', 2, 125, len(sources)) + b''.join(sources)
    return mld(130, body, group if group != bytes(16) else ALL_NODES, **kw)


def mld_seeds(IP6):
    """The MLD host (stack/mcast/mchost.c) and IPv6 multicast delivery: joins on
    UDP 7 (records 3 with op 6 / 7), queries of both versions, other
    hosts' reports, malformed queries, a datagram for a joined group."""
    s = {}
    # ff15::1 any source, 239.0.0.1 any source, ff15::2 from the peer
    joins = app(7, 0x01) + app(6, 0x01) + app(7, 0x22) + poll(2)
    dgram = frame(eth(ipv6(17, udp(5000, 7, b'mc6', src=PEER6, dst=G6), dst=G6), IP6,
                      dst=b'\x33\x33\0\0\0\x01'))
    s['mld_join_datagram'] = joins + dgram + poll(2)
    s['mld_query_v2'] = (joins + frame(mld_query(1000)) + timers(45)
                         + frame(mld_query(500, G6B, (PEER6, LOCAL6))) + timers(25))
    s['mld_query_v1_done'] = (joins + frame(mld_query(1000, v1=True)) + timers(45)
                              + app(7, 0x11) + poll(2) + timers(4))
    s['mld_other_hosts'] = (joins + frame(mld_query(1000, v1=True))
                            + frame(mld(131, struct.pack('!HH', 0, 0) + G6, G6))
                            + frame(mld(132, struct.pack('!HH', 0, 0) + G6,
                                        bytes.fromhex('ff020000000000000000000000000002')))
                            + frame(mld(143, struct.pack('!HH', 0, 1) + bytes([4, 0, 0, 0]) + G6,
                                        bytes.fromhex('ff020000000000000000000000000016')))
                            + timers(45))
    s['mld_bad'] = (joins + frame(mld_query(1000, hlim=255))
                    + frame(mld_query(1000, src=PEER6))
                    + frame(mld_query(1000)[:-4])
                    + frame(mld(130, struct.pack('!HH', 1000, 0) + bytes(16) + struct.pack('!BBH', 2, 125, 5),
                                ALL_NODES))
                    + timers(10))
    return s


# ---- fuzz_preload records ---------------------------------------------------

HELLO, WELCOME, WAITER_ADD, WAITER_DEL, CHANNEL_ADD, CHANNEL_DEL, REPLY, EXEC = range(1, 9)
OP_LISTEN, OP_UDP_BIND, OP_CONNECT, OP_TX_KICK, OP_RX_KICK, OP_SHUTDOWN, OP_CLOSE, OP_SETOPT = range(1, 9)


def ctl(mtype, mode=1 | 2, fds=0, body=b''):
    """A control message: body overlays the message from offset 8 (after
    magic, version, type) when mode has 1."""
    return bytes([2, mode, mtype, fds, len(body)]) + body


def hello_body(name=b'fuzzprog', token=0):
    # status id arg n_fds token seg_size wake_size n_workers pad text
    return struct.pack('<iIIIQQQII', 0, 0, 0, 0, token, 0, 0, 0, 0) + name.ljust(64, b'\0')


def attach():
    """HELLO, a waiter (eventfd), a channel replying to it."""
    return (ctl(HELLO, body=hello_body()) + ctl(WAITER_ADD, fds=1)
            + ctl(CHANNEL_ADD, mode=1 | 2 | 4))


def cmd(op, slot=0, gen=0, addr=0, port=0, args=(), chan=0, flags=0):
    a = list(args) + [0] * (8 - len(args))
    c = struct.pack('<HHIIIIHH8i2I', op, 0, 0, slot, gen, addr, port, 0, *a, 0, 0)
    assert len(c) == 64
    return bytes([3, chan, flags]) + c


def be16(v):
    return struct.unpack('<H', struct.pack('!H', v))[0]


def be32(b):
    return struct.unpack('<I', b)[0]


def ring_index(what, which, value):
    return bytes([4, which * 5 + what]) + struct.pack('<I', value)


def slot_word(slot, field, value):
    return bytes([5, slot, field]) + struct.pack('<I', value)


def tx(slot, data, mode=2):
    return bytes([6, slot, mode, len(data)]) + data


def rx(slot, n=16):
    return bytes([7, slot, n])


def ppoll(n):
    return bytes([8, n])


def preload_seeds():
    """Each input starts attached (a HELLO, waiter 0, a channel): most seeds
    go straight to commands; the attach* ones send their own."""
    s = {}
    s['attach'] = attach()
    s['attach_exec'] = attach() + ctl(EXEC, body=hello_body(b'newimage')) + attach()[len(ctl(HELLO, body=hello_body())):]
    s['join_token'] = ctl(HELLO, body=hello_body()) + bytes([9]) + ctl(HELLO, mode=1 | 2 | 8, body=hello_body(b'child'))
    s['tcp_listen_accept'] = (cmd(OP_LISTEN, port=be16(80), args=[16])
                              + frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN, options=MSS))))
                              + rel_ack(eth(ipv4(6, tcp(40000, 80, 1001, 0, ACK))))
                              + rel_ack(eth(ipv4(6, tcp(40000, 80, 1001, 0, PSH | ACK, b'hello dpsockd'))))
                              + rx(0) + rx(1) + tx(1, b'reply from the client')
                              + cmd(OP_SETOPT, args=[6, 1, 1], flags=1)
                              + cmd(OP_SHUTDOWN, args=[1], flags=1)
                              + rel_ack(eth(ipv4(6, tcp(40000, 80, 1014, 0, FIN | ACK))))
                              + cmd(OP_CLOSE, flags=1) + ppoll(3))
    s['udp_bind_echo'] = (cmd(OP_UDP_BIND, port=be16(7))
                          + frame(eth(ipv4(17, udp(5000, 7, b'datagram in'))))
                          + rx(0) + tx(0, b'datagram out', mode=1 | 2)
                          + cmd(OP_CLOSE, flags=1))
    s['tcp_connect'] = (cmd(OP_CONNECT, addr=be32(PEER), port=be16(8080))
                        + frame(eth(ipv4(6, tcp(8080, 0, 5000, 0, SYN | ACK, options=MSS))), flags=8 | 4 | 2, mode=32)
                        + tx(0, b'GET / HTTP/1.0\r\n\r\n')
                        + frame(eth(ipv4(6, tcp(8080, 0, 5001, 0, ACK | PSH, b'HTTP/1.0 200 OK\r\n\r\n'))), flags=8 | 4 | 2, mode=32)
                        + rx(0) + cmd(OP_CLOSE, args=[1], flags=1))
    s['hostile_messages'] = (ctl(WAITER_ADD, fds=1) + ctl(HELLO, mode=0, body=b'junk')
                             + ctl(HELLO, mode=1, body=hello_body()[:20])
                             + ctl(HELLO, body=hello_body(token=0x1234))
                             + ctl(HELLO, body=hello_body()) + ctl(HELLO, body=hello_body())
                             + ctl(WAITER_ADD, fds=2) + ctl(WAITER_ADD, fds=5) + ctl(WAITER_ADD, fds=0)
                             + ctl(CHANNEL_ADD, body=struct.pack('<iII', 0, 0, 99))
                             + ctl(CHANNEL_DEL, body=struct.pack('<iI', 0, 7))
                             + ctl(WAITER_DEL, body=struct.pack('<iI', 0, 99))
                             + ctl(42) + ctl(REPLY))
    s['wrong_version'] = bytes([2, 2, 0, 0, 8]) + struct.pack('<IHH', 0x4b535044, 99, HELLO)
    s['hostile_commands'] = (cmd(OP_LISTEN, port=be16(80))
                             + cmd(0) + cmd(99) + cmd(OP_CLOSE, slot=999, gen=1)
                             + cmd(OP_TX_KICK, slot=0, gen=77) + cmd(OP_LISTEN, port=0)
                             + cmd(OP_LISTEN, addr=be32(bytes([10, 0, 0, 1])), port=be16(81))
                             + cmd(OP_CONNECT, addr=be32(PEER), port=be16(1), args=[5])
                             + cmd(OP_SETOPT, args=[6, 4, 0], flags=1)
                             + slot_word(0, 0, 0xffffffff) + slot_word(0, 1, 1) + slot_word(0, 4, 1)
                             + slot_word(0, 11, 0x02000007)
                             + frame(eth(ipv4(6, tcp(40000, 80, 1000, 0, SYN))))
                             + ring_index(0, 0, 0x7fffffff))
    s['lying_datagram'] = (cmd(OP_UDP_BIND, port=be16(7))
                           + tx(0, struct.pack('<IIHHI', 60000, be32(PEER), be16(9), 0, 0) + b'x' * 8)
                           + ppoll(2))
    s['fifo_indices'] = (cmd(OP_UDP_BIND, port=be16(7))
                         + ring_index(2, 0, 0xfffffff0) + cmd(OP_TX_KICK, flags=1)
                         + frame(eth(ipv4(17, udp(5000, 7, b'y' * 600))))
                         + ring_index(3, 0, 0x80000000) + frame(eth(ipv4(17, udp(5000, 7, b'z'))))
                         + ring_index(1, 0, 12345) + cmd(OP_SETOPT, args=[1, 9, 1], flags=1)
                         + slot_word(0, 0, 1) + slot_word(0, 12, 1) + ring_index(4, 0, 0xdead)
                         + frame(eth(ipv4(17, udp(5000, 7, b'w')))))
    s['rx_full'] = (cmd(OP_LISTEN, port=be16(7), args=[4])
                    + frame(eth(ipv4(6, tcp(40000, 7, 1000, 0, SYN, options=MSS))))
                    + rel_ack(eth(ipv4(6, tcp(40000, 7, 1001, 0, ACK))))
                    + rx(0)
                    + b''.join(rel_ack(eth(ipv4(6, tcp(40000, 7, 1001 + i * 1400, 0, ACK, bytes([i]) * 1400))))
                               for i in range(5))
                    + rx(1, 255) + rx(1, 255) + ppoll(2) + timers(40))
    return s


def write_seeds(name, seeds):
    """Replace the gen-* seeds of corpus/<name>/ (crash-* seeds stay)."""
    out = os.path.join(HERE, 'corpus', name)
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.startswith('gen-'):
            os.unlink(os.path.join(out, f))
    for seed, data in seeds.items():
        with open(os.path.join(out, 'gen-' + seed), 'wb') as f:
            f.write(data)
    print(f'{len(seeds)} {name} seeds in {out}')


def main():
    write_seeds('frames', frames_seeds())
    write_seeds('preload', preload_seeds())
    return 0


if __name__ == '__main__':
    sys.exit(main())
