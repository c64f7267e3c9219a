# SPDX-License-Identifier: BSD-3-Clause
#
# test/perf/perf_args.sh — the options every report-writing benchmark of
# test/perf takes, sourced by handoff.sh, udp_recv.sh, mcast.sh and
# same_host.sh:
#
#   --quick        one short round, the report in the build dir
#   --rounds N     rounds (quick 1, full 3)
#   --time S       seconds per run (the script's own defaults)
#   --out FILE     the report (full: docs/perf/REPORT, quick: BUILD/perf-quick/REPORT)
#   --build DIR    the build (default DPSOCK_BUILD, else <source>/build)
#   -h, --help     the script's header comment
#
# perf_args REPORT QUICK_SECS FULL_SECS "$@" sets quick, rounds, secs, out,
# build (exported as DPSOCK_BUILD) and SRC. An option it does not know is
# offered to the script's perf_opt function, when the script has one:
# `perf_opt OPTION [VALUE]` sets PERF_TOOK to the words it used (1 or 2)
# and returns 0, or returns 1 for an option it does not know either.

perf_args() {
	local report=$1 qsecs=$2 fsecs=$3 me
	shift 3
	me=$(basename "$0")
	SRC=$(cd "$(dirname "$0")/../.." && pwd)
	quick=0 rounds='' secs='' out='' build=${DPSOCK_BUILD:-}
	while [ $# -gt 0 ]; do
		PERF_TOOK=1
		case "$1" in
		--quick) quick=1 ;;
		--rounds) rounds=${2-}; PERF_TOOK=2 ;;
		--time) secs=${2-}; PERF_TOOK=2 ;;
		--out) out=${2-}; PERF_TOOK=2 ;;
		--build) build=${2-}; PERF_TOOK=2 ;;
		-h | --help) sed -n '3,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
		*)
			if ! declare -F perf_opt >/dev/null || ! perf_opt "$@"; then
				echo "$me: unknown option '$1' (try --help)" >&2
				exit 2
			fi
			;;
		esac
		if [ "$PERF_TOOK" -gt $# ]; then
			echo "$me: $1 needs a value" >&2
			exit 2
		fi
		shift "$PERF_TOOK"
	done
	[ -n "$build" ] || build=$SRC/build
	export DPSOCK_BUILD=$build
	if [ "$quick" = 1 ]; then
		rounds=${rounds:-1} secs=${secs:-$qsecs} out=${out:-$build/perf-quick/$report}
	else
		rounds=${rounds:-3} secs=${secs:-$fsecs} out=${out:-$SRC/docs/perf/$report}
	fi
}
