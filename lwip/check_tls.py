#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Fail the build if the lwIP library still holds writable shared data.

    check_tls.py --readelf <readelf> --stamp <out> [--allow member:symbol ...] <lib.a|obj.o>...

Every lwIP worker thread must run a private instance, so no object of the
library may live in writable, non-thread-local memory (.data/.bss and
friends). Read-only-after-relocation sections (.data.rel.ro*) and the
constructor arrays are fine. Exceptions are named one by one with
--allow <member prefix>:<symbol> (e.g. "isn.c:isn_key") and must exist:
a stale exception is an error too.
"""

import argparse
import re
import subprocess
import sys

RELRO_OK = ('.data.rel.ro', '.init_array', '.fini_array', '.ctors', '.dtors')


def parse(readelf, path):
    """Yield (member, sections{idx: (name, flags, size)}, symbols[(name, type, ndx, size)])."""
    out = subprocess.run([readelf, '-W', '-S', '-s', path], check=True,
                         capture_output=True, text=True).stdout
    member, sections, symbols = path, {}, []
    state = None
    for line in out.splitlines():
        m = re.match(r'^File: (.*)$', line)
        if m:
            if sections:
                yield member, sections, symbols
            # "lib.a(member.o)" or "lib.a[dir/member.o]" depending on binutils
            fm = re.match(r'.*[(\[](.*)[)\]]$', m.group(1))
            member = (fm.group(1) if fm else m.group(1)).rsplit('/', 1)[-1]
            sections, symbols, state = {}, [], None
            continue
        if line.startswith('Section Headers:'):
            state = 'sec'
            continue
        if line.startswith('Symbol table'):
            state = 'sym'
            continue
        if state == 'sec':
            m = re.match(r'^\s*\[\s*(\d+)\]\s+(.*)$', line)
            if not m:
                continue
            tok = m.group(2).split()
            if len(tok) < 9 or tok[0] == 'Name':
                continue
            idx = int(m.group(1))
            flags = tok[6] if len(tok) == 10 else ''
            sections[idx] = (tok[0], flags, int(tok[4], 16))
        elif state == 'sym':
            tok = line.split()
            if len(tok) < 7 or not tok[0].endswith(':') or tok[0] == 'Num:':
                continue
            name = tok[7] if len(tok) > 7 else ''
            symbols.append((name, tok[3], tok[6], int(tok[2], 0) if tok[2].isdigit() else 0))
    if sections or symbols:
        yield member, sections, symbols


def writable_shared(sec):
    name, flags, _size = sec
    return 'W' in flags and 'T' not in flags and not name.startswith(RELRO_OK)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--readelf', default='readelf')
    ap.add_argument('--stamp', required=True)
    ap.add_argument('--allow', action='append', default=[])
    ap.add_argument('inputs', nargs='+')
    a = ap.parse_args()

    allow = {}
    for spec in a.allow:
        member, _, sym = spec.partition(':')
        if not member or not sym:
            sys.exit('check_tls.py: bad --allow "%s" (want member:symbol)' % spec)
        allow[(member, sym)] = False

    errors = []
    for path in a.inputs:
        for member, sections, symbols in parse(a.readelf, path):
            with_syms = set()
            for name, typ, ndx, _size in symbols:
                if ndx == 'COM':
                    sec = ('COMMON', 'WA', 0)
                elif ndx.isdigit() and int(ndx) in sections:
                    sec = sections[int(ndx)]
                else:
                    continue
                if not writable_shared(sec):
                    continue
                if typ == 'SECTION':
                    continue
                with_syms.add(sec[0])
                key = next((k for k in allow if member.startswith(k[0]) and k[1] == name), None)
                if key is not None:
                    allow[key] = True
                    continue
                errors.append('%s: %s "%s" in %s is writable and not thread-local'
                              % (member, typ, name, sec[0]))
            for _idx, sec in sections.items():
                if writable_shared(sec) and sec[2] > 0 and sec[0] not in with_syms:
                    errors.append('%s: section %s holds %d bytes of writable shared data '
                                  'without a symbol' % (member, sec[0], sec[2]))
    for (member, sym), seen in allow.items():
        if not seen:
            errors.append('exception %s:%s matches nothing: remove it' % (member, sym))
    if errors:
        sys.stderr.write('lwip/check_tls.py: lwIP instances would share state:\n  '
                         + '\n  '.join(errors) + '\n')
        return 1
    with open(a.stamp, 'w') as f:
        f.write('ok\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
