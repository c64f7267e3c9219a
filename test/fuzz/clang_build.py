#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compile C sources with clang for the fuzz harnesses, outside meson's gcc.

The project's compiler is gcc; libFuzzer comes with clang. Meson cannot mix
two C compilers in one build, so test/fuzz/meson.build runs this script from
custom targets. It compiles each source into its own object under --objdir,
again only when the source, one of the headers it included (its clang -MD
list) or the flags changed, then makes a static archive (--archive) or links
an executable. It writes one depfile for ninja with every header and source
the output was built from.

  clang_build.py --cc clang --objdir DIR --out OUT [--archive] [--depfile F]
                 [--cflag=X ...] [--pkg NAME ...] [--ldflag=X ...] SOURCE|ARCHIVE...
"""
import argparse
import concurrent.futures
import hashlib
import os
import shlex
import subprocess
import sys


def pkg_config(what, names):
    if not names:
        return []
    out = subprocess.run(['pkg-config', what] + names, check=True,
                         capture_output=True, text=True).stdout
    flags = shlex.split(out)
    # DPDK's .pc says -march=corei7 for gcc; clang takes it too, keep it
    return flags


def read_deps(dfile):
    """The prerequisites listed in a make-style depfile."""
    try:
        text = open(dfile).read()
    except OSError:
        return None
    text = text.replace('\\\n', ' ')
    _, _, rest = text.partition(':')
    deps, cur, i = [], '', 0
    while i < len(rest):
        ch = rest[i]
        if ch == '\\' and i + 1 < len(rest) and rest[i + 1] == ' ':
            cur += ' '
            i += 2
            continue
        if ch.isspace():
            if cur:
                deps.append(cur)
            cur = ''
        else:
            cur += ch
        i += 1
    if cur:
        deps.append(cur)
    return deps


def stale(obj, dfile):
    if not os.path.exists(obj):
        return True
    deps = read_deps(dfile)
    if deps is None:
        return True
    t = os.path.getmtime(obj)
    for d in deps:
        try:
            if os.path.getmtime(d) > t:
                return True
        except OSError:
            return True
    return False


def obj_name(src):
    base = os.path.basename(src)
    tag = hashlib.sha1(os.path.abspath(src).encode()).hexdigest()[:8]
    return f'{base}.{tag}.o'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cc', required=True)
    ap.add_argument('--ar', default='ar')
    ap.add_argument('--objdir', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--depfile')
    ap.add_argument('--archive', action='store_true')
    ap.add_argument('--cflag', action='append', default=[])
    ap.add_argument('--ldflag', action='append', default=[])
    ap.add_argument('--pkg', action='append', default=[])
    ap.add_argument('inputs', nargs='+')
    a = ap.parse_args()

    sources = [s for s in a.inputs if s.endswith('.c')]
    archives = [s for s in a.inputs if s.endswith('.a')]  # other inputs: order only
    cflags = a.cflag + pkg_config('--cflags', a.pkg)
    os.makedirs(a.objdir, exist_ok=True)

    # Different flags: every object is stale.
    stamp = os.path.join(a.objdir, 'flags')
    flag_text = '\n'.join([a.cc] + cflags) + '\n'
    try:
        same_flags = open(stamp).read() == flag_text
    except OSError:
        same_flags = False
    if not same_flags:
        for f in os.listdir(a.objdir):
            if f.endswith('.o'):
                os.unlink(os.path.join(a.objdir, f))
        with open(stamp, 'w') as f:
            f.write(flag_text)

    jobs = []
    objs = []
    for src in sources:
        obj = os.path.join(a.objdir, obj_name(src))
        dfile = obj + '.d'
        objs.append((obj, dfile))
        if stale(obj, dfile):
            jobs.append([a.cc] + cflags + ['-MD', '-MF', dfile, '-c', src, '-o', obj])

    def run(cmd):
        r = subprocess.run(cmd, capture_output=True, text=True)
        return cmd, r

    failed = False
    if jobs:
        n = max(1, min(len(jobs), os.cpu_count() or 1))
        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            for cmd, r in ex.map(run, jobs):
                if r.stdout or r.stderr:
                    sys.stderr.write(r.stdout + r.stderr)
                if r.returncode != 0:
                    sys.stderr.write('clang_build: failed: ' + shlex.join(cmd) + '\n')
                    # a half-written object must not look up to date
                    out = cmd[cmd.index('-o') + 1]
                    if os.path.exists(out):
                        os.unlink(out)
                    failed = True
    if failed:
        return 1

    tmp = a.out + '.tmp'
    if a.archive:
        if os.path.exists(tmp):
            os.unlink(tmp)
        subprocess.run([a.ar, 'rcs', tmp] + [o for o, _ in objs], check=True)
    else:
        cmd = ([a.cc] + [o for o, _ in objs] + archives + ['-o', tmp] + a.ldflag +
               pkg_config('--libs', a.pkg))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout + r.stderr)
            sys.stderr.write('clang_build: link failed: ' + shlex.join(cmd) + '\n')
            return 1
    os.replace(tmp, a.out)

    if a.depfile:
        deps = set(archives)
        for _, dfile in objs:
            deps.update(read_deps(dfile) or [])
        with open(a.depfile, 'w') as f:
            f.write(a.out.replace(' ', '\\ ') + ': ' +
                    ' '.join(sorted(d.replace(' ', '\\ ') for d in deps)) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
