#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Line coverage of the product code by a fuzz corpus.

    test/fuzz/coverage.py NAME [CORPUS_DIR...]

Builds build/fuzz-cov/fuzz_NAME with clang's source-based coverage instead
of the sanitizers (the same sources and flags as the suite's target: its
command is read from build.ninja), runs every input of the corpora once
(default: the seeds in test/fuzz/corpus/NAME and the campaign corpus in
build/fuzz-campaign/NAME/corpus), and prints llvm-cov's report for the
product files the harness drives.
"""
import os
import re
import shlex
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BUILD = os.environ.get('DPSOCK_BUILD', os.path.join(TOP, 'build'))
OUT = os.path.join(BUILD, 'fuzz-cov')
SAN = '--cflag=-fsanitize=fuzzer-no-link,address,undefined'
COV = ['--cflag=-fsanitize=fuzzer-no-link', '--cflag=-fprofile-instr-generate',
       '--cflag=-fcoverage-mapping']


def ninja_command(ninja, output):
    m = re.search(r'^build ' + re.escape(output) + r'[ :].*?\n COMMAND = (.*?)\n', ninja,
                  re.S | re.M)
    if m is None:
        sys.exit(f'coverage: no target {output} in build.ninja (scripts/build first)')
    return shlex.split(m.group(1))


def retarget(cmd, name):
    """The same compile with coverage in place of the sanitizers, into OUT."""
    out = []
    it = iter(cmd)
    for a in it:
        if a == SAN:
            out += COV
        elif a.startswith('--cflag=-fno-sanitize-recover'):
            continue
        elif a == '--ldflag=-fsanitize=fuzzer,address,undefined':
            out += ['--ldflag=-fsanitize=fuzzer', '--ldflag=-fprofile-instr-generate']
        elif a in ('--objdir', '--out', '--depfile'):
            v = next(it)
            if a == '--objdir':
                out += [a, os.path.join(OUT, 'obj-' + name)]
            elif a == '--out':
                out += [a, os.path.join(OUT, os.path.basename(v))]
        elif a.endswith('libfuzz_stack.a'):
            out.append(os.path.join(OUT, 'libfuzz_stack.a'))
        else:
            out.append(a)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    name = sys.argv[1]
    corpora = sys.argv[2:] or [os.path.join(TOP, 'test', 'fuzz', 'corpus', name),
                               os.path.join(BUILD, 'fuzz-campaign', name, 'corpus')]
    ninja = open(os.path.join(BUILD, 'build.ninja')).read()
    os.makedirs(OUT, exist_ok=True)
    cmds = []
    if name in ('frames', 'preload'):
        cmds.append(retarget(ninja_command(ninja, 'test/fuzz/libfuzz_stack.a'), 'stack'))
    cmds.append(retarget(ninja_command(ninja, 'test/fuzz/fuzz_' + name), name))
    for c in cmds:
        r = subprocess.run(c, cwd=BUILD, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit('coverage: build failed:\n' + r.stdout + r.stderr[-3000:])
    exe = os.path.join(OUT, 'fuzz_' + name)
    prof = os.path.join(OUT, name + '.profraw')
    env = dict(os.environ, LLVM_PROFILE_FILE=prof)
    dirs = [d for d in corpora if os.path.isdir(d)]
    subprocess.run([exe, '-runs=0', '-detect_leaks=0'] + dirs, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = os.path.join(OUT, name + '.profdata')
    subprocess.run(['llvm-profdata', 'merge', '-sparse', prof, '-o', data], check=True)
    # the product's files: not the harness, its stubs or libFuzzer
    r = subprocess.run(['llvm-cov', 'report', exe, '-instr-profile=' + data,
                        '-ignore-filename-regex=(test/fuzz/|/usr/)'],
                       capture_output=True, text=True, check=True)
    sys.stdout.write(r.stdout)
    return 0


if __name__ == '__main__':
    sys.exit(main())
