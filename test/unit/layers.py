#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A component's parts call one way (docs/architecture.md: "The stack's
folders", "The shim's folders").

usage: layers.py NM DIR ARCHIVE [--hooks HOOKS_DEF] LAYER...

The layers are DIR's parts from the bottom up: a folder ('core'), a file at
DIR's top ('env.c'), or '.' for every file at DIR's top not named on its
own. Every call (an undefined symbol of one member that another member
defines) must go to the caller's own layer or to one below it. ARCHIVE
holds the component's objects, named after their sources
(stack_frame_netif.c.o, shim_calls.c.o); members from outside DIR (abi/,
generated code) are not counted. With --hooks, a call to a name of
HOOKS_DEF's DPSOCK_HOOK entries is a call to libc, which the dynamic
linker binds to the shim's own hook at run time: not counted either. A
member the list gives no layer is an error: a new folder or top file gets
its place in DIR/meson.build's list.
"""
import os
import re
import subprocess
import sys


def members(nm, lib, flags):
    out = subprocess.run([nm, '-A'] + flags + [lib], check=True, capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        # lib.a:member.o: [value] type name (a thin archive's member is a
        # path: its name is the last part)
        head, _, rest = line.rpartition(':')
        member = os.path.basename(head.split(':')[-1])
        f = rest.split()
        if f:
            yield member, f[-2] if len(f) >= 2 else 'U', f[-1]


def layer_of(member, prefix, layers):
    """The member's layer; '' for a member from outside DIR, None for one
    the list gives no layer."""
    if not member.startswith(prefix + '_') or not member.endswith('.c.o'):
        return ''
    stem = member[len(prefix) + 1:-len('.c.o')]
    for layer in layers:
        if layer != '.' and not layer.endswith('.c') and stem.startswith(layer + '_'):
            return layer
    if stem + '.c' in layers:
        return stem + '.c'
    return '.' if '.' in layers else None


def main():
    args = sys.argv[1:]
    if len(args) < 4:
        sys.exit(__doc__)
    nm, prefix, lib = args[0], args[1], args[2]
    hooks = set()
    rest = args[3:]
    if rest[0] == '--hooks':
        with open(rest[1]) as f:
            hooks = set(re.findall(r'^DPSOCK_HOOK\(\s*[^,]+,\s*(\w+)\s*,', f.read(), re.M))
        if not hooks:
            sys.exit(f'layers: no DPSOCK_HOOK in {rest[1]}')
        rest = rest[2:]
    layers = rest
    rank = {layer: i for i, layer in enumerate(layers)}
    where = {}
    seen = set()
    bad = []
    for member, kind, name in members(nm, lib, ['--defined-only']):
        layer = layer_of(member, prefix, layers)
        if layer == '':
            continue
        if layer is None:
            if member not in seen:
                bad.append(f'{member}: in no layer of the list (a new folder or top file '
                           'needs its place there)')
            seen.add(member)
            continue
        seen.add(member)
        if kind in 'TDBRVW' and name not in hooks:
            where[name] = (layer, member)
    for member, _, name in members(nm, lib, ['-u']):
        layer = layer_of(member, prefix, layers)
        if not layer or name not in where:
            continue
        to, to_member = where[name]
        if to != layer and rank[to] > rank[layer]:
            bad.append(f'{member} ({layer}) calls {name} of {to_member} ({to}), a layer above it')
    if not seen:
        sys.exit(f'layers: no {prefix}/ member in {lib}')
    for b in bad:
        print(b)
    print(f'{prefix}/: {len(seen)} members, {len(where)} symbols'
          f'{", %d hooks" % len(hooks) if hooks else ""}, layers {" < ".join(layers)}: '
          f'{len(bad)} errors')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
