#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""stack/'s folders call one way (docs/architecture.md, "The stack's folders").

usage: stack_layers.py NM LIBDPSOCK_STACK.a LAYER...

The layers are stack/'s folders from the bottom up ('.' is stack/ itself,
the top). Every call (an undefined symbol of one member that another member
defines) must go to the caller's own folder or to a folder below it. The
archive's members are named after their sources (stack_frame_netif.c.o);
members from outside stack/ (abi/, generated code) are not counted. A
member of a folder the list does not name is an error too: a new folder
gets its place in stack/meson.build's stack_layers.
"""
import subprocess
import sys


def members(nm, lib, flags):
    out = subprocess.run([nm, '-A'] + flags + [lib], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        # lib.a:member.o: [value] type name
        head, _, rest = line.rpartition(':')
        member = head.split(':')[-1]
        f = rest.split()
        if f:
            yield member, f[-2] if len(f) >= 2 else 'U', f[-1]


def folder_of(member, layers):
    if not member.startswith('stack_') or not member.endswith('.c.o'):
        return None
    stem = member[len('stack_'):-len('.c.o')]
    for layer in layers:
        if layer != '.' and stem.startswith(layer + '_'):
            return layer
    return '.'


def main():
    nm, lib, layers = sys.argv[1], sys.argv[2], sys.argv[3:]
    rank = {layer: i for i, layer in enumerate(layers)}
    if '.' not in rank:
        sys.exit("stack_layers: the list needs '.' (stack/ itself)")
    where = {}
    seen = set()
    for member, kind, name in members(nm, lib, ['--defined-only']):
        folder = folder_of(member, layers)
        if folder is None:
            continue
        seen.add(member)
        if kind in 'TDBRVW':
            where[name] = (folder, member)
    bad = []
    for member, _, name in members(nm, lib, ['-u']):
        folder = folder_of(member, layers)
        if folder is None or name not in where:
            continue
        to, to_member = where[name]
        if to != folder and rank[to] > rank[folder]:
            bad.append(f'{member} ({folder}/) calls {name} of {to_member} ({to}/), a folder above it')
    unknown = sorted(m for m in seen
                     if folder_of(m, layers) == '.' and
                     m[len('stack_'):-len('.c.o')] not in ('stack', 'stats', 'worker'))
    for m in unknown:
        bad.append(f'{m}: a file at the top of stack/ that is not stack.c, stats.c or worker.c '
                   '(a new folder needs its place in stack_layers)')
    if not seen:
        sys.exit(f'stack_layers: no stack/ member in {lib}')
    for b in bad:
        print(b)
    print(f'{len(seen)} members, {len(where)} symbols, layers {" < ".join(layers)}: '
          f'{len(bad)} upward calls')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
