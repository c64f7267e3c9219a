#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pl_segmap.py — the memory a running dpsockd's preload group segments hold.

    pl_segmap.py PID

For every group segment (a memfd named "dpsock-group") PID holds open, read
its layout from the segment header (abi/preload_wire.h, struct
dpsock_pl_seg) and walk the file's allocated extents (lseek SEEK_DATA /
SEEK_HOLE: a memfd's pages exist only where they were touched or not given
back). Prints one line per segment and a total:

    segment fd=N version=V workers=W slots_per_worker=S reserved=R header=B channels=B waiters=B slots=B data=B
    total segments=N reserved=R header=B channels=B waiters=B slots=B data=B

(bytes). Exit 1 when no segment is found or a header is not a segment's.
"""
import os
import struct
import sys

SEG_MAGIC = 0x47455350  # "PSEG"
# struct dpsock_pl_seg: magic, version (u32), seg_size, token (u64), state,
# group, then 9 u32 (n_workers, max_channels, max_waiters,
# slots_per_worker, cmd_count, reply_count, wait_count, rx_fifo_size,
# tx_fifo_size), then u64s from off_channels on
HEAD = struct.Struct("<IIQQII9I")
OFFS = ("off_channels chan_stride cmd_ring_size reply_ring_size off_waiters waiter_stride "
        "wait_ring_size off_slots slot_stride rx_fifo_off tx_fifo_off off_data data_stride "
        "rx_data_off tx_data_off").split()


def segment(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        raw = os.pread(fd, 4096, 0)
        f = HEAD.unpack_from(raw, 0)
        magic, version, seg_size = f[0], f[1], f[2]
        n_workers, slots = f[6], f[9]
        if magic != SEG_MAGIC:
            raise ValueError(f"{path}: not a preload segment (magic {magic:#x})")
        off = (HEAD.size + 7) // 8 * 8
        g = dict(zip(OFFS, struct.unpack_from(f"<{len(OFFS)}Q", raw, off)))
        regions = [("header", 0, g["off_channels"]),
                   ("channels", g["off_channels"], g["off_waiters"]),
                   ("waiters", g["off_waiters"], g["off_slots"]),
                   ("slots", g["off_slots"], g["off_data"]),
                   ("data", g["off_data"], seg_size)]
        held = {name: 0 for name, _, _ in regions}
        pos = 0
        while pos < seg_size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break  # ENXIO: no data past pos
            end = os.lseek(fd, start, os.SEEK_HOLE)
            for name, lo, hi in regions:
                a, b = max(lo, start), min(hi, end)
                if b > a:
                    held[name] += b - a
            pos = end
        return {"version": version, "workers": n_workers, "slots_per_worker": slots,
                "reserved": seg_size, **held}
    finally:
        os.close(fd)


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    fddir = f"/proc/{sys.argv[1]}/fd"
    total = {}
    n = 0
    for name in sorted(os.listdir(fddir), key=int):
        path = os.path.join(fddir, name)
        try:
            target = os.readlink(path)
        except OSError:
            continue
        if "dpsock-group" not in target:
            continue
        s = segment(path)
        n += 1
        print(f"segment fd={name} " + " ".join(f"{k}={v}" for k, v in s.items()))
        for k in ("reserved", "header", "channels", "waiters", "slots", "data"):
            total[k] = total.get(k, 0) + s[k]
    if n == 0:
        print(f"no preload group segment in {fddir}", file=sys.stderr)
        return 1
    print(f"total segments={n} " + " ".join(f"{k}={v}" for k, v in total.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
