#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""shim/'s parts call one way (docs/architecture.md, "The shim's folders").

usage: shim_layers.py NM HOOKS_DEF ARCHIVE LAYER...

The layers are shim/'s parts from the bottom up: a folder ('link') or a
file at shim/'s top ('env.c'). Every call (an undefined symbol of one
member that another member defines) must go to the caller's own layer or
to one below it. ARCHIVE holds libdpsock_preload.so's objects, named after
their sources (shim_link_attach.c.o, shim_calls.c.o); members from outside
shim/ (abi/) are not counted. A call to a name of HOOKS_DEF is a call to
libc, which the dynamic linker binds to the shim's own hook at run time
(link/slot.c's futex goes through syscall()): not counted either. A member
of a folder or a top file the list does not name is an error: a new one
gets its place in shim/meson.build's shim_layers.
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


def layer_of(member, layers):
    """The member's layer; '' for a member from outside shim/, None for one
    the list does not name."""
    if not member.startswith('shim_') or not member.endswith('.c.o'):
        return ''
    stem = member[len('shim_'):-len('.c.o')]
    for layer in layers:
        if not layer.endswith('.c') and stem.startswith(layer + '_'):
            return layer
    return stem + '.c' if stem + '.c' in layers else None


def main():
    nm, hooks_def, lib, layers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    rank = {layer: i for i, layer in enumerate(layers)}
    with open(hooks_def) as f:
        hooks = set(re.findall(r'^DPSOCK_HOOK\(\s*[^,]+,\s*(\w+)\s*,', f.read(), re.M))
    if not hooks:
        sys.exit(f'shim_layers: no DPSOCK_HOOK in {hooks_def}')
    where = {}
    seen = set()
    bad = []
    for member, kind, name in members(nm, lib, ['--defined-only']):
        layer = layer_of(member, layers)
        if layer == '':
            continue
        if layer is None:
            if member not in seen:
                bad.append(f'{member}: in no layer of shim_layers (a new folder or top file '
                           'needs its place there)')
            seen.add(member)
            continue
        seen.add(member)
        if kind in 'TDBRVW' and name not in hooks:
            where[name] = (layer, member)
    for member, _, name in members(nm, lib, ['-u']):
        layer = layer_of(member, layers)
        if not layer or name not in where:
            continue
        to, to_member = where[name]
        if to != layer and rank[to] > rank[layer]:
            bad.append(f'{member} ({layer}) calls {name} of {to_member} ({to}), a layer above it')
    if not seen:
        sys.exit(f'shim_layers: no shim/ member in {lib}')
    for b in bad:
        print(b)
    print(f'{len(seen)} members, {len(where)} symbols, {len(hooks)} hooks, layers '
          f'{" < ".join(layers)}: {len(bad)} errors')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
