#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run_ring_bench.sh [path/to/ring_bench] [-- bench options]
# Runs the SPSC ring benchmark on lcores 0-1 without hugepages or PCI
# devices and prints its markdown table. Options after `--` go to the bench
# (-r ROUNDS -t SECONDS -s SLOTS -e SIZES -b BURSTS; see ring_bench -h).
# Results depend on the machine: run it on an idle one, with the two lcores
# on different physical cores, and report the CPU with the numbers.
set -eu
bench=${1:-build/test/perf/ring_bench}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
if [ ! -x "$bench" ]; then
	echo "run_ring_bench.sh: $bench not built (ninja -C build test/perf/ring_bench)" >&2
	exit 1
fi
lcores=${RING_BENCH_LCORES:-0-1}
echo "# $(uname -n), $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$bench" --no-huge --no-pci --no-shconf --file-prefix=ringbench$$ -l "$lcores" --no-telemetry --log-level=lib.eal:error -- "$@"
