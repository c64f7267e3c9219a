#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test/fuzz/campaign.sh NAME EXECUTIONS [libFuzzer options...]
#
# A long run of one harness (the numbers in test/fuzz/README.md come from
# it): chunks of at most 2 million executions, each resuming from the corpus
# the previous ones grew in $FUZZ_CAMPAIGN_DIR/NAME (default
# build/fuzz-campaign/NAME; seeds from test/fuzz/corpus/NAME), until
# EXECUTIONS are done or an input breaks the harness (kept in
# build/fuzz-artifacts/NAME/). Runs under nice -n 19: the machine is shared.
# Prints each chunk's executions, coverage (cov:) and features (ft:), and
# the totals; the log of every chunk is in the campaign directory.
# Chunks keep the memory of a leaking library (config: libconfig) bounded.
#
#   test/fuzz/campaign.sh frames 10000000
set -euo pipefail

name=$1 target=$2
shift 2
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${DPSOCK_BUILD:-$top/build}
fuzzer=$build/test/fuzz/fuzz_$name
dir=${FUZZ_CAMPAIGN_DIR:-$build/fuzz-campaign}/$name
artifacts=$build/fuzz-artifacts/$name
chunk=${FUZZ_CHUNK:-2000000}

[ -x "$fuzzer" ] || { echo "campaign: $fuzzer not built (scripts/build)" >&2; exit 1; }
mkdir -p "$dir/corpus" "$artifacts"
# the harness's own options, as the suite runs it (meson.build)
opts=()
case "$name" in
config) opts+=(-detect_leaks=0) ;;
esac
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/test/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

total=0 n=0 start=$(date +%s)
while [ "$total" -lt "$target" ]; do
	n=$((n + 1))
	left=$((target - total))
	runs=$((left < chunk ? left : chunk))
	log=$dir/chunk-$n.log
	rc=0
	nice -n 19 "$fuzzer" -error_exitcode=1 -timeout_exitcode=1 -timeout=30 -rss_limit_mb=4096 \
		-artifact_prefix="$artifacts/" -print_final_stats=1 -runs="$runs" \
		"${opts[@]}" "$@" "$dir/corpus" "$top/test/fuzz/corpus/$name" >"$log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -n1)
	total=$((total + ${execs:-0}))
	echo "chunk $n: ${execs:-0} executions (total $total, $(( $(date +%s) - start )) s): $last"
	if [ "$rc" != 0 ]; then
		echo "campaign $name: the harness failed (exit $rc), see $log and $artifacts"
		exit 1
	fi
done
echo "campaign $name: $total executions in $(( $(date +%s) - start )) s, no crash;" \
	"corpus $(ls "$dir/corpus" | wc -l) inputs"
