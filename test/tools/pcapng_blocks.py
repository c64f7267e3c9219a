#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pcapng_blocks.py FILE: what a pcapng file holds, one line per block, for
tests to read with awk (tcpdump prints neither a packet's direction flags
nor its comments).

  shb app=<shb_userappl>
  idb <n> link=<linktype> name=<if_name> tsresol=<if_tsresol>
  epb if=<n> dir=in|out|- caplen=<n> len=<n> ts_ns=<n> [comment=<text>]

Checks each block's framing (the trailing length equals the leading one,
lengths multiples of 4, options end) and exits 1 on the first malformed
block (saying where), 0 otherwise. Little-endian sections only (what
dpsock-dump writes).
"""
import struct
import sys


def options(buf, where):
    out = {}
    off = 0
    while off + 4 <= len(buf):
        code, length = struct.unpack_from("<HH", buf, off)
        off += 4
        if code == 0:
            return out
        if off + length > len(buf):
            raise ValueError("%s: option %d runs past its block" % (where, code))
        out.setdefault(code, buf[off:off + length])
        off += (length + 3) & ~3
    if off != len(buf):
        raise ValueError("%s: options end mid-way" % where)
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    off = 0
    tsresol = []
    while off < len(data):
        if off + 12 > len(data):
            raise ValueError("offset %d: a block cut short" % off)
        btype, blen = struct.unpack_from("<II", data, off)
        if blen < 12 or blen % 4 or off + blen > len(data):
            raise ValueError("offset %d: block length %d" % (off, blen))
        if struct.unpack_from("<I", data, off + blen - 4)[0] != blen:
            raise ValueError("offset %d: trailing length differs" % off)
        body = data[off + 8:off + blen - 4]
        where = "offset %d" % off
        if btype == 0x0A0D0D0A:
            magic, = struct.unpack_from("<I", body, 0)
            if magic != 0x1A2B3C4D:
                raise ValueError("%s: not a little-endian section" % where)
            o = options(body[16:], where)
            print("shb app=%s" % o.get(4, b"").decode(errors="replace"))
        elif btype == 1:
            link, _, _snap = struct.unpack_from("<HHI", body, 0)
            o = options(body[8:], where)
            res = o.get(9, b"\x06")[0]
            tsresol.append(res)
            print("idb %d link=%d name=%s tsresol=%d" %
                  (len(tsresol) - 1, link, o.get(2, b"").decode(errors="replace"), res))
        elif btype == 6:
            ifid, hi, lo, caplen, wirelen = struct.unpack_from("<IIIII", body, 0)
            if ifid >= len(tsresol):
                raise ValueError("%s: packet of undeclared interface %d" % (where, ifid))
            if 20 + caplen > len(body) or caplen > wirelen:
                raise ValueError("%s: caplen %d, len %d" % (where, caplen, wirelen))
            o = options(body[20 + ((caplen + 3) & ~3):], where)
            flags = struct.unpack("<I", o[2])[0] if 2 in o else 0
            direction = {1: "in", 2: "out"}.get(flags & 3, "-")
            ts = (hi << 32 | lo) * 10 ** (9 - tsresol[ifid])
            line = "epb if=%d dir=%s caplen=%d len=%d ts_ns=%d" % (ifid, direction, caplen,
                                                                 wirelen, ts)
            if 1 in o:
                line += " comment=" + o[1].decode(errors="replace")
            print(line)
        off += blen
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ValueError, struct.error, IndexError) as e:
        print("pcapng_blocks: %s: %s" % (sys.argv[1], e), file=sys.stderr)
        sys.exit(1)
