#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test/fuzz/run.sh NAME FUZZER SEEDS [libFuzzer options...]
#
# One bounded libFuzzer run (the meson suite 'fuzz'): FUZZER starts from the
# seed corpus SEEDS (test/fuzz/corpus/NAME, read only) and runs for
# FUZZ_SECONDS (default 15) with ASan and UBSan; any crash, leak, UB report,
# broken harness check or timeout fails the test. New inputs it finds go to
# a scratch directory; a crashing input is kept in
# $FUZZ_ARTIFACTS (default <build>/fuzz-artifacts/NAME/) with the command
# that replays it.
#
# FUZZ_SECONDS=0 replays the seeds once and stops (a regression run).
set -euo pipefail

name=$1 fuzzer=$2 seeds=$3
shift 3
secs=${FUZZ_SECONDS:-15}
build=$(cd "$(dirname "$fuzzer")/../.." && pwd)
artifacts=${FUZZ_ARTIFACTS:-$build/fuzz-artifacts/$name}

if [ ! -x "$fuzzer" ]; then
	echo "skip: $fuzzer was not built"
	exit 77
fi
case "$secs" in
''|*[!0-9]*) echo "FUZZ_SECONDS=$secs: a whole number of seconds" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/dpsock-fuzz-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"

# ASan: leaks too; UBSan: every report is fatal (the harnesses are built
# with -fno-sanitize-recover=all), with a stack. libFuzzer's own default
# exit code for a crash is 77, which meson reads as "skipped": use 1.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(dirname "$0")/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
opts=(-error_exitcode=1 -timeout_exitcode=1 -timeout=30 -rss_limit_mb=4096
      -artifact_prefix="$artifacts/" -print_final_stats=1)
if [ "$secs" = 0 ]; then
	opts+=(-runs=0)
else
	opts+=(-max_total_time="$secs")
fi

echo "fuzz $name: ${secs}s from $(find "$seeds" -type f | wc -l) seeds ($seeds)"
rc=0
# timeout: a harness that hangs in its set-up (before libFuzzer's own
# -timeout applies) still ends
timeout --kill-after=10 $((secs + 120)) "$fuzzer" "${opts[@]}" "$@" "$work" "$seeds" || rc=$?
if [ "$rc" != 0 ]; then
	echo "fuzz $name: FAILED (exit $rc); inputs that broke it:"
	ls -l "$artifacts" 2>/dev/null || true
	echo "replay one: $fuzzer $* $artifacts/<file>"
	exit 1
fi
echo "fuzz $name: no crash in ${secs}s"
