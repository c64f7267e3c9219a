# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash disable=SC2034,SC2153
# (SC2034/SC2153: variables here are set for, or by, the sourcing test.)
#
# test/integration/lib.sh — helpers for integration tests (bash). Source it
# first thing:
#
#   . "$(dirname "$0")/lib.sh"
#   require_root
#   require_tools dpsockd dpsock-stat badframes
#   test_topo_up 7                    # namespaces + veth, torn down on exit
#   dpsockd_start "$TEST_NAME" "$(dpsock_conf "$TEST_NAME")"
#   in_b ping -c 1 -W 1 "$TOPO_ADDR_A" >/dev/null || fail "no ping reply"
#   wait_counter_ge "$TEST_NAME" icmp_echo 1 5
#   dpsockd_stop_clean                # status 0, every mbuf back
#   pass "ping answered"
#
# Exit codes follow meson/automake: 0 pass, 1 fail, 77 skip. Nothing here
# changes the caller's shell options; the helpers work with and without
# `set -eu`.
#
# Environment:
#   DPSOCK_BUILD           build dir holding dpsockd, dpsock-stat and
#                          test/tools/badframes (default: <source>/build,
#                          then ./build)
#   DPSOCK_EAL_MEM         EAL memory arguments, overriding eal_mem_args
#   DPSOCK_MIN_HUGE_MB     free hugepage memory needed to use hugepages (256)
#   DPSOCK_TEST_LCORES     EAL -l for dpsockd_eal_args (0-1)
#   DPSOCK_TEST_QPAIRS     queue pairs for dpsockd_eal_args (2): af_packet
#                          qpairs, or AF_XDP vdevs (one per veth queue)
#   DPSOCK_TEST_PMD        the port dpsockd_eal_args and dpsock_conf give:
#                          af_xdp, af_packet, or auto (default: af_xdp when
#                          this machine can run it, else af_packet; see
#                          test_pmd)
#   DPSOCKD_START_TIMEOUT  seconds app_start/dpsockd_start wait (30)
#   DPSOCKD_STOP_TIMEOUT   seconds app_stop/dpsockd_stop wait after the signal (10)
#   DPSOCK_KEEP_TMP=1      keep the test's temp dir even when it passes
#
# Functions (see each one's comment):
#   outcome   fail MSG, pass MSG, ok MSG, skip MSG, note MSG
#   checks    require_root, require_cmd CMD..., require_tools TOOL...
#   cleanup   on_exit CMD... (LIFO; runs on EXIT/INT/TERM)
#   names     TEST_NAME, TEST_TMP, unique_name [SUFFIX]
#   waiting   wait_until TIMEOUT_S CMD..., poll_until TIMEOUT_S CMD...
#   stats     stat_get NAME SCOPE.IDX.COUNTER, stat_sum NAME COUNTER,
#             stat_read NAME COUNTER|KEY, wait_counter_ge NAME COUNTER VALUE [T]
#   topology  test_topo_up [IDX] [NAME], in_a CMD..., in_b CMD...,
#             in_a_bpffs (sets IN_A_BPFFS)
#             (and everything in scripts/topo.sh)
#   daemon    test_pmd, eal_mem_args, dpsockd_eal_args NAME, dpsock_conf NAME [LINE...],
#             dpsockd_start NAME CONF [EAL_ARGS...], dpsockd_stop [NAME] [SIGNAL],
#             dpsockd_takeover NAME [CONF [EAL_ARGS...]],
#             dpsockd_takeover_fails NAME [CONF [EAL_ARGS...]]
#   apps      app_start NAME CONF PROGRAM [EAL_ARGS...] [-- APP_ARGS...],
#             app_stop [NAME] [SIGNAL] (dpsock-echo, dpsock-http, dpsock-loadgen...)
#   frames    badframes_send COUNT CASE..., badframes_counter CASE
#   sockperf  sp_run LABEL WHERE ARGS..., sp_field REGEX,
#             pingpong LABEL WHERE ARGS..., throughput LABEL WHERE ARGS...

DPSOCK_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/topo.sh
. "$DPSOCK_SRC/scripts/topo.sh"

# ---- outcome ---------------------------------------------------------------

# fail MSG: print "FAIL: MSG" and exit 1 (cleanup runs).
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# pass MSG: print "PASS: MSG" and exit 0 (cleanup runs).
pass() {
	echo "PASS: $*"
	exit 0
}

# ok MSG: one check of several passed; print "ok: MSG" and go on.
ok() {
	echo "ok: $*"
}

# skip MSG: print "SKIP: MSG" and exit 77 (cleanup runs).
skip() {
	echo "SKIP: $*"
	exit 77
}

# note MSG: progress line, does not end the test.
note() {
	echo "-- $*"
}

# ---- checks ----------------------------------------------------------------

# require_root: skip unless root and `ip netns` works.
require_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, AF_PACKET, hugepages)"
	command -v ip >/dev/null 2>&1 || skip "needs 'ip' (apt-get install iproute2)"
	ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"
}

# require_cmd CMD...: skip unless every CMD is on PATH.
require_cmd() {
	local c missing=()
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || missing+=("$c")
	done
	[ ${#missing[@]} -eq 0 ] || skip "needs command(s) not found: ${missing[*]}"
}

# ---- build products --------------------------------------------------------

# _lib_build_dirs: candidate build dirs, best first.
_lib_build_dirs() {
	if [ -n "${DPSOCK_BUILD:-}" ]; then
		echo "$DPSOCK_BUILD"
		return
	fi
	echo "$DPSOCK_SRC/build"
	echo "$PWD/build"
}

# dpsock_tool NAME: print the path of a built program (dpsockd, dpsock-stat,
# badframes...) or return 1.
dpsock_tool() {
	local name=$1 b sub f
	while read -r b; do
		[ -d "$b" ] || continue
		for sub in "" src tools apps test/tools; do
			f=$b/${sub:+$sub/}$name
			if [ -f "$f" ] && [ -x "$f" ]; then
				echo "$f"
				return 0
			fi
		done
		f=$(find "$b" -maxdepth 3 -type f -name "$name" -perm -u+x 2>/dev/null | head -n 1)
		if [ -n "$f" ]; then
			echo "$f"
			return 0
		fi
	done < <(_lib_build_dirs)
	return 1
}

DPSOCKD=$(dpsock_tool dpsockd) || DPSOCKD=
PINGN=$DPSOCK_SRC/test/tools/pingn.py
DPSOCK_STAT=$(dpsock_tool dpsock-stat) || DPSOCK_STAT=
BADFRAMES=$(dpsock_tool badframes) || BADFRAMES=

# require_tools TOOL...: skip unless each built program is found.
require_tools() {
	local t missing=()
	for t in "$@"; do
		dpsock_tool "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} -eq 0 ] ||
		skip "not built: ${missing[*]} (looked in: $(_lib_build_dirs | tr '\n' ' ')— set DPSOCK_BUILD)"
}

# ---- names and temp dir ----------------------------------------------------

# TEST_NAME: short and unique per run, usable as a topology, daemon and
# EAL file-prefix name: up to 8 characters of the script's name + pid.
_lib_base=$(basename "${0%.sh}" | tr -cd 'A-Za-z0-9')
[ -n "$_lib_base" ] || _lib_base=t
TEST_NAME=${TEST_NAME:-${_lib_base:0:8}-$$}
unset _lib_base

# unique_name [SUFFIX]: TEST_NAME plus a suffix, for a second daemon or
# topology in the same test (unique_name b → "<test>-<pid>b").
unique_name() {
	printf '%s%s\n' "$TEST_NAME" "${1:-}"
}

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dpsock-$TEST_NAME.XXXXXX") ||
	{ echo "FAIL: mktemp failed" >&2; exit 1; }

# ---- cleanup ---------------------------------------------------------------

_LIB_ON_EXIT=()
declare -A _LIB_DAEMON_PID=()
declare -A _LIB_DAEMON_LOG=()
declare -A _LIB_DAEMON_PROG=()
declare -A _LIB_DAEMON_EAL=()  # NAME -> its EAL options (printf %q words)
declare -A _LIB_DAEMON_CONF=() # NAME -> its configuration file
declare -A _LIB_TAKEOVER_LOG=() # NAME -> the log of the process that took it over last
_LIB_TAKEOVER_N=0
_LIB_CLEANED=0

# on_exit CMD...: at exit, after the daemons are stopped, in reverse order
# of registration, run CMD: one argument is a shell command string
# (on_exit 'rm -f "$f"; echo done'); several are one command and its
# arguments, kept as words (on_exit topo_down "$name").
on_exit() {
	if [ $# -eq 1 ]; then
		_LIB_ON_EXIT+=("$1")
	else
		_LIB_ON_EXIT+=("$(printf '%q ' "$@")")
	fi
}

_lib_cleanup() {
	local rc=$1 i name
	[ "$_LIB_CLEANED" = 1 ] && return
	_LIB_CLEANED=1
	trap - INT TERM
	set +e
	for name in "${!_LIB_DAEMON_PID[@]}"; do
		_lib_daemon_kill "$name" 5
	done
	for name in "${!_LIB_DAEMON_LOG[@]}"; do
		if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
			_lib_show_log "$name"
		fi
		_lib_daemon_leftovers "$name"
	done
	for ((i = ${#_LIB_ON_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${_LIB_ON_EXIT[i]}" || true
	done
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ]; then
		[ "${DPSOCK_KEEP_TMP:-0}" = 1 ] || rm -rf "$TEST_TMP"
	else
		echo "logs kept in $TEST_TMP" >&2
	fi
}

trap '_lib_cleanup $?' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- waiting ---------------------------------------------------------------

_lib_now_ms() {
	local t=${EPOCHREALTIME/./}
	echo $((t / 1000))
}

# poll_until TIMEOUT_S CMD...: run CMD (quietly) every 50 ms until it
# succeeds (return 0) or TIMEOUT_S seconds (may be fractional) pass
# (return 1). CMD may be a function. Its last output is in POLL_OUTPUT.
poll_until() {
	local timeout=$1 deadline
	shift
	deadline=$(($(_lib_now_ms) + $(awk -v t="$timeout" 'BEGIN { printf "%d", t * 1000 }')))
	while :; do
		if POLL_OUTPUT=$("$@" 2>&1); then
			return 0
		fi
		[ "$(_lib_now_ms)" -lt "$deadline" ] || return 1
		sleep 0.05
	done
}

# wait_until TIMEOUT_S CMD...: poll_until, but fail the test on timeout,
# naming the command and showing its last output.
wait_until() {
	local timeout=$1
	shift
	poll_until "$timeout" "$@" && return 0
	fail "timed out after ${timeout}s waiting for: $*${POLL_OUTPUT:+ (last output: $POLL_OUTPUT)}"
}

# ---- counters --------------------------------------------------------------

_lib_stat_dump() {
	local name=$1 out
	if [ -z "$DPSOCK_STAT" ]; then
		echo "dpsock-stat not built (set DPSOCK_BUILD)" >&2
		return 1
	fi
	if ! out=$("$DPSOCK_STAT" -n "$name" 2>&1); then
		echo "dpsock-stat -n $name failed: $out" >&2
		return 1
	fi
	printf '%s\n' "$out"
}

# stat_get NAME SCOPE.IDX.COUNTER: print one counter (e.g. port.0.rx_packets).
# Returns 1 with a message when the daemon or the counter does not exist.
stat_get() {
	local name=$1 key=$2 out
	out=$(_lib_stat_dump "$name") || return 1
	awk -v k="$key" '$1 == k { print $2; found = 1; exit } END { exit !found }' \
		<<<"$out" && return 0
	echo "stat_get: no counter '$key' in dpsock-stat -n $name" >&2
	return 1
}

# stat_settled NAME KEY: print KEY (as stat_read: a full key, or a worker
# counter summed over the workers) once three readings in a
# row, 100 ms apart, agree (the stats are published every 100 ms, and an
# AF_XDP port takes back the mbufs of its last frames only when it sends
# again or its idle worker flushes); gives up after 10 s (status 1).
stat_settled() {
	local name=$1 key=$2 v last= same=0 deadline
	deadline=$(($(_lib_now_ms) + 10000))
	while :; do
		v=$(stat_read "$name" "$key") || return 1
		if [ "$v" = "$last" ]; then
			same=$((same + 1))
			[ "$same" -lt 2 ] || { echo "$v"; return 0; }
		else
			same=0
		fi
		last=$v
		[ "$(_lib_now_ms)" -lt "$deadline" ] || { echo "$v"; return 1; }
		sleep 0.1
	done
}

# stat_sum NAME COUNTER: sum of worker.*.COUNTER. Returns 1 when no worker
# has that counter (a misspelt name must not read as 0).
stat_sum() {
	local name=$1 counter=$2 out
	out=$(_lib_stat_dump "$name") || return 1
	# %.0f, not %d: mawk's %d stops at 2^31-1, which byte counters pass
	awk -v c="$counter" '
		{ n = split($1, p, ".") }
		n == 3 && p[1] == "worker" && p[3] == c { s += $2; found = 1 }
		END { if (found) printf "%.0f\n", s; exit !found }' <<<"$out" && return 0
	echo "stat_sum: no worker counter '$counter' in dpsock-stat -n $name" >&2
	return 1
}

# stat_read NAME COUNTER|SCOPE.IDX.COUNTER: stat_sum for a bare worker
# counter name, stat_get for a full key.
stat_read() {
	case "$2" in
	*.*) stat_get "$1" "$2" ;;
	*) stat_sum "$1" "$2" ;;
	esac
}

_lib_counter_ge() {
	local v
	v=$(stat_read "$1" "$2") || return 1
	echo "$v"
	[ "$v" -ge "$3" ]
}

# wait_counter_ge NAME COUNTER VALUE [TIMEOUT_S=10]: wait until the counter
# (summed over workers, or a full SCOPE.IDX.COUNTER key) is >= VALUE; fail
# the test on timeout, with the last value. The value is left in STAT_VALUE.
# Port counters (port.N.*) reach the stats segment every 100 ms (the main
# lcore's control tasks): after traffic, wait for them with this, never
# read them once.
wait_counter_ge() {
	local name=$1 counter=$2 value=$3 timeout=${4:-10}
	if poll_until "$timeout" _lib_counter_ge "$name" "$counter" "$value"; then
		STAT_VALUE=$POLL_OUTPUT
		return 0
	fi
	fail "timed out after ${timeout}s waiting for $name $counter >= $value (last: ${POLL_OUTPUT:-none})"
}

# ---- topology --------------------------------------------------------------

# test_topo_up [IDX] [NAME]: topo_up NAME (default TEST_NAME) and register
# its removal; fail the test if it cannot be built.
test_topo_up() {
	local idx=${1:-1} name=${2:-$TEST_NAME}
	on_exit topo_down "$name"
	topo_up "$name" "$idx" || fail "could not build topology $name"
}

# share_conf NAME [LINE...]: write the configuration of dpsockd NAME with two
# workers on the test port, whose interface has no address (shared with
# A's kernel), and LINEs; print its path.
share_conf() {
	local name=$1 f
	shift
	f=$TEST_TMP/$name.conf
	on_exit "rm -f /dev/shm/dpsock.$name.ports"
	{
		printf 'name = "%s";\nruntime_dir = "%s";\nworkers = [ 0, 1 ];\n' "$name" "$TEST_TMP"
		printf 'interfaces = ( { port = "%s"; } );\n' "$TEST_PORT"
		[ $# -eq 0 ] || printf '%s\n' "$@"
	} >"$f"
	echo "$f"
}

# share_dpsockd_start NAME: dpsockd NAME, two workers on two queue pairs of
# the test port, whose interface has no address: the port is shared with
# A's kernel (docs/running.md). Its configuration is in SHARE_CONF (the
# same dpsockd can be started again from it); preloads attach to NAME.
share_dpsockd_start() {
	local name=$1
	SHARE_CONF=$(share_conf "$name")
	# shellcheck disable=SC2046
	dpsockd_start "$name" "$SHARE_CONF" $(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name")
	wait_until 10 test -S "$TEST_TMP/$name.sock"
	PRELOAD_NAME=$name
}

# test_topo_ipv6: IPv6 on B's end of the veth, TOPO_ADDR6_B/64 (no DAD),
# for a dpsockd given address6 = "$TOPO_ADDR6_A/64" (dpsock_conf with
# TEST_IFACE_KEYS); A's kernel keeps IPv6 off (topo.sh).
test_topo_ipv6() {
	TOPO_ADDR6_A=fd00:198:18:$TOPO_IDX::1
	TOPO_ADDR6_B=fd00:198:18:$TOPO_IDX::2
	in_b sysctl -qw "net.ipv6.conf.$TOPO_IF_B.disable_ipv6=0" ||
		fail "could not turn IPv6 on for $TOPO_IF_B"
	ip -n "$TOPO_NS_B" addr add "$TOPO_ADDR6_B/64" dev "$TOPO_IF_B" nodad ||
		fail "could not give $TOPO_IF_B $TOPO_ADDR6_B"
}

# a_tcp_out_rsts: the TCP resets A's kernel sent so far (TcpOutRsts)
a_tcp_out_rsts() {
	in_a awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["OutRsts"] }' /proc/net/snmp
}

# in_a CMD... / in_b CMD...: run in namespace A / B of the last topology.
#
# Counting echo replies: `in_b "$PINGN" -c N [-i S] [-W S] [-I SRC] DST`
# (test/tools/pingn.py) sends exactly N requests and waits for every reply,
# -W seconds at most after the last; exit 0 only when all N came back.
# iputils' ping -c stops waiting two round trips after the last request
# whatever -W says, so on a loaded machine a worker kept off its CPU for
# 60 ms "loses" echoes it answered late; with -w it sends more than -c.
in_a() { ip netns exec "$TOPO_NS_A" "$@"; }
in_b() { ip netns exec "$TOPO_NS_B" "$@"; }

# in_a_bpffs: set IN_A_BPFFS, the command words that run what follows them
# in namespace A with a BPF filesystem at /sys/fs/bpf, which AF_XDP wants
# (libxdp's dispatcher): `ip netns exec` mounts a fresh /sys without one, so
# one is mounted in that view (private to the program, gone with it;
# dpsockd says what is missing when that fails). The program is exec'ed, so
# `"${IN_A_BPFFS[@]}" PROG ARGS &` leaves PROG's own pid in $! (a shell
# function run with & would leave its subshell's).
in_a_bpffs() {
	# shellcheck disable=SC2016 # expanded by the inner sh
	IN_A_BPFFS=(ip netns exec "$TOPO_NS_A" sh -c
		'mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf 2>/dev/null; exec "$0" "$@"')
}

# ---- dpsockd ---------------------------------------------------------------

# eal_mem_args: EAL memory options. Hugepages (EAL's default; dpsockd runs
# EAL --in-memory by default, so no hugepage file outlives it) when a
# hugetlbfs is mounted with at least DPSOCK_MIN_HUGE_MB MiB free, else
# "--no-huge -m 512". DPSOCK_EAL_MEM overrides the choice.
eal_mem_args() {
	if [ -n "${DPSOCK_EAL_MEM+set}" ]; then
		echo "$DPSOCK_EAL_MEM"
		return
	fi
	local free_kb
	free_kb=$(awk '/^HugePages_Free:/ { f = $2 } /^Hugepagesize:/ { s = $2 }
		END { printf "%.0f", f * s }' /proc/meminfo 2>/dev/null)
	if awk '$3 == "hugetlbfs" { found = 1 } END { exit !found }' /proc/mounts &&
		[ "${free_kb:-0}" -ge $((${DPSOCK_MIN_HUGE_MB:-256} * 1024)) ]; then
		echo ""
	else
		echo "--no-huge -m 512"
	fi
}

# ---- the port: AF_XDP, or af_packet -----------------------------------------

# _lib_af_xdp_why: why net_af_xdp cannot run here ("" when it can): DPDK's
# PMD (librte-net-af-xdp), the kernel's AF_XDP sockets, a BPF filesystem.
_lib_af_xdp_why() {
	# (no pipe into grep -q: with pipefail, ldconfig's SIGPIPE fails it)
	if ! grep -q 'librte_net_af_xdp\.so' <<<"$(ldconfig -p 2>/dev/null)"; then
		echo "DPDK's net_af_xdp PMD is not installed (apt-get install librte-net-af-xdp23)"
	elif ! python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null; then
		echo "the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)"
	elif ! grep -qw bpf /proc/filesystems; then
		echo "the kernel has no BPF filesystem (CONFIG_BPF_SYSCALL)"
	fi
}

# test_pmd: set TEST_PMD, the PMD the tests use (af_xdp or af_packet), and
# TEST_PORT, its first port's name, from DPSOCK_TEST_PMD: af_xdp (fails the
# test when it cannot run here), af_packet, or auto/unset (af_xdp when it
# can run here, else af_packet). TEST_PMD_WHY says why AF_XDP cannot run.
test_pmd() {
	TEST_PMD_WHY=$(_lib_af_xdp_why)
	case "${DPSOCK_TEST_PMD:-auto}" in
	af_packet) TEST_PMD=af_packet ;;
	af_xdp)
		[ -z "$TEST_PMD_WHY" ] || fail "DPSOCK_TEST_PMD=af_xdp, but $TEST_PMD_WHY"
		TEST_PMD=af_xdp
		;;
	auto) TEST_PMD=af_xdp && [ -z "$TEST_PMD_WHY" ] || TEST_PMD=af_packet ;;
	*) fail "DPSOCK_TEST_PMD=$DPSOCK_TEST_PMD: use af_xdp, af_packet or auto" ;;
	esac
	TEST_PORT=net_${TEST_PMD}0
}
test_pmd

# test_pmd_note: one line saying which port dpsockd runs on, and why.
test_pmd_note() {
	case "$TEST_PMD" in
	af_xdp) note "port: net_af_xdp (AF_XDP, one socket per queue on $TOPO_IF_A); DPSOCK_TEST_PMD=af_packet for the fallback" ;;
	*) note "port: net_af_packet (AF_PACKET on $TOPO_IF_A)${TEST_PMD_WHY:+: AF_XDP cannot run here, $TEST_PMD_WHY}" ;;
	esac
}

# test_vdevs QUEUES: the EAL --vdev options for TEST_PMD on TOPO_IF_A with
# QUEUES queue pairs. af_xdp: one vdev per veth queue (DPDK 22.11's PMD
# refuses queue_count > 1 on a veth, which counts no combined channels;
# dpsockd joins them into one port), and the veth gets exactly QUEUES
# queues on both ends (topo_queues), so that no flow reaches a queue
# without a socket (it would go to A's kernel).
test_vdevs() {
	local q=$1 k
	case "$TEST_PMD" in
	af_xdp)
		topo_queues "$q" >&2 || fail "could not give $TOPO_IF_A $q queues"
		for ((k = 0; k < q; k++)); do
			printf -- '--vdev=net_af_xdp%u,iface=%s,start_queue=%u,queue_count=1 ' \
				"$k" "$TOPO_IF_A" "$k"
		done
		echo
		;;
	*) echo "--vdev=net_af_packet0,iface=$TOPO_IF_A,qpairs=$q,framecnt=${DPSOCK_TEST_FRAMECNT:-4096}" ;;
	esac
}

# dpsockd_eal_args NAME: print the standard EAL options for the current
# topology, space-separated (no word contains a space): lcores, no PCI, a
# file prefix named after the daemon, the port on TOPO_IF_A (test_vdevs,
# DPSOCK_TEST_QPAIRS queue pairs), eal_mem_args.
dpsockd_eal_args() {
	local name=$1
	# shellcheck disable=SC2046
	echo -l "${DPSOCK_TEST_LCORES:-0-1}" --no-pci --file-prefix "$name" \
		$(test_vdevs "${DPSOCK_TEST_QPAIRS:-2}") $(eal_mem_args)
}

# dpsock_conf NAME [LINE...]: write a dpsock.conf for the current topology
# (name, one port, TEST_PORT, owning TOPO_ADDR_A, and the interface keys in
# TEST_IFACE_KEYS, e.g. 'vlan = 100;') plus any extra LINEs into TEST_TMP
# and print its path.
dpsock_conf() {
	local name=$1 f
	shift
	f=$TEST_TMP/$name.conf
	{
		printf 'name = "%s";\n' "$name"
		printf 'interfaces = ( { port = "%s"; address = "%s/%s"; %s} );\n' \
			"$TEST_PORT" "$TOPO_ADDR_A" "$TOPO_PLEN" "${TEST_IFACE_KEYS:+$TEST_IFACE_KEYS }"
		[ $# -eq 0 ] || printf '%s\n' "$@"
	} >"$f"
	echo "$f"
}

_lib_has_opt() {
	# _lib_has_opt "OPT1 OPT2..." ARGS...: any ARG equal to an OPT or
	# starting with "OPT=".
	local opts=$1 a o
	shift
	for a in "$@"; do
		for o in $opts; do
			[ "$a" = "$o" ] && return 0
			case "$a" in "$o"=*) return 0 ;; esac
		done
	done
	return 1
}

_lib_show_log() {
	local log=${_LIB_DAEMON_LOG[$1]:-}
	[ -n "$log" ] && [ -s "$log" ] || return 0
	echo "---- ${_LIB_DAEMON_PROG[$1]:-dpsockd} $1 log ($log), last 60 lines ----" >&2
	tail -n 60 "$log" >&2
	echo "---- end of log ----" >&2
}

# _lib_daemon_kill NAME GRACE_S: TERM, wait GRACE_S, then KILL.
_lib_daemon_kill() {
	local name=$1 grace=$2 pid
	pid=${_LIB_DAEMON_PID[$name]:-}
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		poll_until "$grace" _lib_dead "$pid" ||
			{ kill -KILL "$pid" 2>/dev/null; poll_until 5 _lib_dead "$pid"; }
	fi
	[ -n "$pid" ] && wait "$pid" 2>/dev/null
	unset '_LIB_DAEMON_PID[$name]'
	return 0
}

# _lib_daemon_leftovers NAME: remove what an EAL process named NAME (file
# prefix) may leave: hugepage files, runtime dir, stats segment. Only
# called once that daemon is gone.
_lib_daemon_leftovers() {
	local name=$1 mnt
	while read -r mnt; do
		rm -f "$mnt/${name}map_"* 2>/dev/null
	done < <(awk '$3 == "hugetlbfs" { print $2 }' /proc/mounts)
	rm -rf "/var/run/dpdk/$name" 2>/dev/null
	rm -f "/dev/shm/dpsock.$name.stats" "/dev/shm/dpsock.$name.capture" "/dev/shm/dpsock.$name.lock" 2>/dev/null
	return 0
}

_lib_dead() {
	# A child that has exited is reaped by bash (SIGCHLD), so kill -0 fails.
	! kill -0 "$1" 2>/dev/null
}

# _lib_daemon_up NAME PID: done when dpsock-stat answers or PID is gone.
_lib_daemon_up() {
	if ! kill -0 "$2" 2>/dev/null; then
		echo "exited"
		return 0
	fi
	"$DPSOCK_STAT" -n "$1" >/dev/null 2>&1
}

# app_start NAME CONF PROGRAM [EAL_ARGS...] [-- APP_ARGS...]: start a dpsock
# EAL program (dpsockd, or a native app: dpsock-echo, dpsock-http,
# dpsock-loadgen; a built tool's name or a path) in namespace A in the
# background as `PROGRAM EAL_ARGS -- -f CONF APP_ARGS`, log in
# $TEST_TMP/<program>-NAME.log, and wait (30 s) until `dpsock-stat -n NAME`
# answers (CONF must say name = "NAME"). Without EAL_ARGS, dpsockd_eal_args
# NAME is used; otherwise --file-prefix NAME, --no-pci and eal_mem_args are
# added when EAL_ARGS does not say otherwise. Sets APP_PID, APP_LOG,
# APP_NAME. Fails the test if the program exits or does not come up; the
# exit trap then prints the log. Call it in the test's own shell, not in
# $(...), so that app_stop can collect the exit status. A program that ends
# by itself (dpsock-loadgen) may be collected with app_stop NAME too (the
# signal then finds it gone).
app_start() {
	local name=${1:-} conf=${2:-} prog=${3:-} path log pid timeout=${DPSOCKD_START_TIMEOUT:-30}
	local -a eal=() args=()
	if [ -z "$name" ] || [ -z "$conf" ] || [ -z "$prog" ]; then
		fail "usage: app_start NAME CONF PROGRAM [EAL_ARGS...] [-- APP_ARGS...]"
	fi
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		eal+=("$1")
		shift
	done
	[ $# -eq 0 ] || shift
	args=("$@")
	case "$prog" in
	*/*) path=$prog ;;
	*) path=$(dpsock_tool "$prog") || path= ;;
	esac
	if [ -z "$path" ] || [ ! -x "$path" ]; then
		fail "$prog not built (set DPSOCK_BUILD)"
	fi
	prog=$(basename "$path")
	[ -n "$DPSOCK_STAT" ] || fail "dpsock-stat not built (set DPSOCK_BUILD)"
	[ -n "${TOPO_NS_A:-}" ] || fail "app_start $prog: no topology (call test_topo_up first)"
	[ -r "$conf" ] || fail "app_start $prog: cannot read config $conf"
	[ -z "${_LIB_DAEMON_PID[$name]:-}" ] || fail "app_start $prog: $name already started"

	if [ ${#eal[@]} -eq 0 ]; then
		# shellcheck disable=SC2207
		eal=($(dpsockd_eal_args "$name"))
	else
		_lib_has_opt "--file-prefix" "${eal[@]}" || eal+=(--file-prefix "$name")
		_lib_has_opt "--no-pci -a --allow -b --block --pci-whitelist --pci-blacklist" \
			"${eal[@]}" || eal+=(--no-pci)
		# shellcheck disable=SC2207
		_lib_has_opt "--no-huge -m --socket-mem --in-memory" "${eal[@]}" ||
			eal+=($(eal_mem_args))
	fi

	log=$TEST_TMP/$prog-$name.log
	case " ${eal[*]}" in
	*" --vdev=net_af_xdp"* | *" --vdev=net_af_packet"*) test_pmd_note ;;
	esac
	echo "+ ip netns exec $TOPO_NS_A $path ${eal[*]} -- -f $conf ${args[*]}" >"$log"
	in_a_bpffs
	"${IN_A_BPFFS[@]}" "$path" "${eal[@]}" -- -f "$conf" "${args[@]}" >>"$log" 2>&1 </dev/null &
	pid=$!
	_LIB_DAEMON_PID[$name]=$pid
	_LIB_DAEMON_LOG[$name]=$log
	_LIB_DAEMON_PROG[$name]=$prog
	_LIB_DAEMON_EAL[$name]=$(printf '%q ' "${eal[@]}")
	_LIB_DAEMON_CONF[$name]=$conf
	unset '_LIB_TAKEOVER_LOG[$name]'
	APP_PID=$pid
	APP_LOG=$log
	APP_NAME=$name

	# On failure the exit trap stops the program and prints its log.
	if ! poll_until "$timeout" _lib_daemon_up "$name" "$pid"; then
		fail "$prog $name did not come up within ${timeout}s (dpsock-stat -n $name never answered)"
	fi
	if [ "$POLL_OUTPUT" = exited ]; then
		local rc=0
		wait "$pid" 2>/dev/null || rc=$?
		fail "$prog $name exited with status $rc while starting"
	fi
}

# app_stop [NAME] [SIGNAL]: send SIGNAL (default TERM; e.g. INT) to the
# program app_start started as NAME (default: the last one started; ""
# also means that one), wait up to DPSOCKD_STOP_TIMEOUT (10) seconds, and
# return its exit status. If it does not stop it is killed (SIGKILL), a
# message says so, and the status is non-zero (137).
app_stop() {
	local name=${1:-${APP_NAME:-}} sig=${2:-TERM} pid rc=0 prog timeout=${DPSOCKD_STOP_TIMEOUT:-10}
	pid=${_LIB_DAEMON_PID[$name]:-}
	prog=${_LIB_DAEMON_PROG[$name]:-dpsockd}
	if [ -z "$pid" ]; then
		echo "app_stop: no running program '$name' started by this test" >&2
		return 1
	fi
	sig=${sig#SIG}
	if ! kill -"$sig" "$pid" 2>/dev/null && kill -0 "$pid" 2>/dev/null; then
		echo "app_stop: cannot send SIG$sig to $prog $name (pid $pid)" >&2
	fi
	if ! poll_until "$timeout" _lib_dead "$pid"; then
		echo "app_stop: $prog $name (pid $pid) still running ${timeout}s after SIG$sig; killing it" >&2
		kill -KILL "$pid" 2>/dev/null
		poll_until 5 _lib_dead "$pid"
	fi
	wait "$pid" 2>/dev/null || rc=$?
	unset '_LIB_DAEMON_PID[$name]'
	return "$rc"
}

# dpsockd_start NAME CONF [EAL_ARGS...]: app_start NAME CONF dpsockd
# EAL_ARGS...; also sets DPSOCKD_PID, DPSOCKD_LOG ($TEST_TMP/dpsockd-NAME.log)
# and DPSOCKD_NAME.
dpsockd_start() {
	if [ -z "${1:-}" ] || [ -z "${2:-}" ]; then
		fail "usage: dpsockd_start NAME CONF [EAL_ARGS...]"
	fi
	[ -n "$DPSOCKD" ] || fail "dpsockd not built (set DPSOCK_BUILD)"
	local name=$1 conf=$2
	shift 2
	app_start "$name" "$conf" "$DPSOCKD" "$@"
	DPSOCKD_PID=$APP_PID
	DPSOCKD_LOG=$APP_LOG
	DPSOCKD_NAME=$APP_NAME
}

# dpsockd_stop [NAME] [SIGNAL]: app_stop, NAME defaulting to the last
# dpsockd started.
dpsockd_stop() {
	app_stop "${1:-${DPSOCKD_NAME:-}}" "${2:-TERM}"
}

# dpsockd_stop_clean: stop the last dpsockd started (SIGTERM) and fail the
# test unless it exited 0 with every mbuf back in its pool and its stats
# segment removed: the end of every test that starts one.
dpsockd_stop_clean() {
	local rc=0 name=${DPSOCKD_NAME:-}
	dpsockd_stop || rc=$?
	[ "$rc" -eq 0 ] || fail "dpsockd exited with status $rc (3 = mbuf leak)"
	grep -q 'all [0-9]* mbufs back in the pool' "$DPSOCKD_LOG" ||
		fail "no 'mbufs back' line in dpsockd's log: $(tail -n 5 "$DPSOCKD_LOG")"
	[ ! -e "/dev/shm/dpsock.$name.stats" ] || fail "stats segment left in /dev/shm"
	[ ! -e "/dev/shm/dpsock.$name.capture" ] || fail "capture segment left in /dev/shm"
	[ ! -e "/dev/shm/dpsock.$name.lock" ] || fail "instance lock file left in /dev/shm"
}

# ---- takeover: a second dpsockd takes a running one's programs over -------
#
#   dpsockd_takeover NAME [CONF [EAL_ARGS...]]
#   dpsockd_takeover_fails NAME [CONF [EAL_ARGS...]]
#
# Both start, in namespace A as app_start starts dpsockd (the same
# in_a_bpffs wrapper), `dpsockd EAL_ARGS -- -f CONF --takeover`: it
# connects to the running instance NAME (the one dpsockd_start or an
# earlier takeover started) and takes its preloaded programs' sockets and
# control connections over; the old one then exits 0. CONF defaults to the
# configuration NAME was started with; EAL_ARGS to the EAL options NAME
# was started with (not dpsockd_eal_args again: with AF_XDP that sets the
# veth's queues, under the running instance's feet), and EAL_ARGS given
# are completed as app_start does (--no-pci, eal_mem_args). Two DPDK
# processes run at once, so the file prefix is the running one's with
# "-tkN" appended (N counts this test's takeover attempts). Log:
# $TEST_TMP/dpsockd-NAME.takeoverN.log (TAKEOVER_LOG); the new pid in
# TAKEOVER_PID, the old in TAKEOVER_OLD_PID. Environment set for the call
# reaches the new dpsockd (DPSOCK_TAKEOVER_FAULT=die-after-image
# dpsockd_takeover_fails NAME).
#
# dpsockd_takeover waits (DPSOCKD_TAKEOVER_TIMEOUT, 30 s) until the old
# process has exited and the new one logged "took over from pid OLD"; it
# fails the test, the exit trap showing both logs, when the new one exits
# first, the old one's status is not 0, or the old one did not log
# "handed over to pid NEW". Then NAME is the new process: dpsockd_stop_clean
# (DPSOCKD_PID, DPSOCKD_LOG) stops it. Its "blackout N ms" figure is
# printed (note) and left in TAKEOVER_BLACKOUT_MS ("" when not logged);
# TAKEOVER_TOOK_MS: from the start of the new process to the end.
#
# dpsockd_takeover_fails is for a takeover that must not happen (refused,
# or a fault injected): it waits (same timeout) for the new process to
# exit and leaves its status in TAKEOVER_RC (the caller checks it and the
# log); it fails the test when the new one is still running at the
# timeout (killed) or the old one is no longer running.

# _lib_tk_prefix PREFIX: PREFIX (less the -tkN of an earlier takeover)
# with -tkN for this one.
_lib_tk_prefix() {
	local p=$1
	[[ $p =~ ^(.+)-tk[0-9]+$ ]] && p=${BASH_REMATCH[1]}
	echo "$p-tk$_LIB_TAKEOVER_N"
}

# _lib_takeover_spawn NAME [CONF [EAL_ARGS...]]: start the new dpsockd.
_lib_takeover_spawn() {
	local name=${1:-} conf=${2:-} key prefix i log
	local -a eal=()
	[ -n "$name" ] || fail "usage: dpsockd_takeover NAME [CONF [EAL_ARGS...]]"
	TAKEOVER_OLD_PID=${_LIB_DAEMON_PID[$name]:-}
	if [ -z "$TAKEOVER_OLD_PID" ] || ! kill -0 "$TAKEOVER_OLD_PID" 2>/dev/null; then
		fail "takeover of $name: no running dpsockd $name started by this test"
	fi
	[ -n "$conf" ] || conf=${_LIB_DAEMON_CONF[$name]:-}
	[ -r "$conf" ] || fail "takeover of $name: cannot read config '$conf'"
	[ -n "$DPSOCKD" ] || fail "dpsockd not built (set DPSOCK_BUILD)"
	shift $(($# < 2 ? $# : 2))
	eal=("$@")
	if [ ${#eal[@]} -eq 0 ]; then
		eval "eal=(${_LIB_DAEMON_EAL[$name]:-})"
		[ ${#eal[@]} -gt 0 ] || fail "takeover of $name: its EAL options are unknown (give them)"
	else
		_lib_has_opt "--no-pci -a --allow -b --block --pci-whitelist --pci-blacklist" \
			"${eal[@]}" || eal+=(--no-pci)
		# shellcheck disable=SC2207
		_lib_has_opt "--no-huge -m --socket-mem --in-memory" "${eal[@]}" ||
			eal+=($(eal_mem_args))
	fi
	_LIB_TAKEOVER_N=$((_LIB_TAKEOVER_N + 1))
	# the file prefix: the running one's, plus -tkN
	prefix=
	for ((i = 0; i < ${#eal[@]}; i++)); do
		case "${eal[i]}" in
		--file-prefix)
			prefix=$(_lib_tk_prefix "${eal[i + 1]:-$name}")
			eal[i + 1]=$prefix
			;;
		--file-prefix=*)
			prefix=$(_lib_tk_prefix "${eal[i]#--file-prefix=}")
			eal[i]=--file-prefix=$prefix
			;;
		esac
	done
	if [ -z "$prefix" ]; then
		prefix=$name-tk$_LIB_TAKEOVER_N
		eal+=(--file-prefix "$prefix")
	fi
	key=$prefix
	log=$TEST_TMP/dpsockd-$name.takeover$_LIB_TAKEOVER_N.log
	echo "+ ip netns exec $TOPO_NS_A $DPSOCKD ${eal[*]} -- -f $conf --takeover" >"$log"
	in_a_bpffs
	TAKEOVER_T0=$(_lib_now_ms)
	"${IN_A_BPFFS[@]}" "$DPSOCKD" "${eal[@]}" -- -f "$conf" --takeover >>"$log" 2>&1 </dev/null &
	TAKEOVER_PID=$!
	TAKEOVER_LOG=$log
	TAKEOVER_KEY=$key
	TAKEOVER_CONF=$conf
	TAKEOVER_EAL=$(printf '%q ' "${eal[@]}")
	# killed, and its log shown on failure, by the exit trap
	_LIB_DAEMON_PID[$key]=$TAKEOVER_PID
	_LIB_DAEMON_LOG[$key]=$log
	_LIB_DAEMON_PROG[$key]="dpsockd --takeover"
	note "takeover $_LIB_TAKEOVER_N of $name: dpsockd --takeover (pid $TAKEOVER_PID) against pid $TAKEOVER_OLD_PID, log $log"
}

# _lib_takeover_state OLD NEW LOG: "new-exited" when NEW is gone, "done"
# when OLD is gone and LOG says "took over from pid OLD"; else status 1.
_lib_takeover_state() {
	if ! kill -0 "$2" 2>/dev/null; then
		echo new-exited
		return 0
	fi
	if ! kill -0 "$1" 2>/dev/null && grep -qE "took over from pid $1([^0-9]|\$)" "$3"; then
		echo "done"
		return 0
	fi
	echo "old pid $1 $(kill -0 "$1" 2>/dev/null && echo running || echo exited)," \
		"$(grep -qE "took over from pid $1([^0-9]|\$)" "$3" && echo "'took over' logged" || echo "no 'took over' line yet")"
	return 1
}

dpsockd_takeover() {
	local name=${1:-} old new rc=0 timeout=${DPSOCKD_TAKEOVER_TIMEOUT:-30} oldlog
	_lib_takeover_spawn "$@"
	old=$TAKEOVER_OLD_PID
	new=$TAKEOVER_PID
	oldlog=${_LIB_TAKEOVER_LOG[$name]:-${_LIB_DAEMON_LOG[$name]:-}}
	if ! poll_until "$timeout" _lib_takeover_state "$old" "$new" "$TAKEOVER_LOG"; then
		fail "takeover of $name: not done after ${timeout}s ($POLL_OUTPUT); logs: $oldlog, $TAKEOVER_LOG"
	fi
	if [ "$POLL_OUTPUT" = new-exited ]; then
		wait "$new" 2>/dev/null || rc=$?
		unset '_LIB_DAEMON_PID[$TAKEOVER_KEY]'
		fail "takeover of $name: the new dpsockd (pid $new) exited with status $rc;" \
			"the old one (pid $old) is $(kill -0 "$old" 2>/dev/null && echo still running || echo gone):" \
			"$(grep -m1 'dpsockd:' "$TAKEOVER_LOG" || tail -n 1 "$TAKEOVER_LOG")"
	fi
	TAKEOVER_TOOK_MS=$(($(_lib_now_ms) - TAKEOVER_T0))
	wait "$old" 2>/dev/null || rc=$?
	[ "$rc" -eq 0 ] || fail "takeover of $name: the old dpsockd (pid $old) exited with status $rc (logs: $oldlog, $TAKEOVER_LOG)"
	# the old one is gone: the new one is NAME from now on
	_LIB_DAEMON_PID[$name]=$new
	unset '_LIB_DAEMON_PID[$TAKEOVER_KEY]'
	_LIB_DAEMON_PROG[$name]=dpsockd
	_LIB_DAEMON_CONF[$name]=$TAKEOVER_CONF
	_LIB_DAEMON_EAL[$name]=$TAKEOVER_EAL
	_LIB_TAKEOVER_LOG[$name]=$TAKEOVER_LOG
	DPSOCKD_PID=$new
	DPSOCKD_LOG=$TAKEOVER_LOG
	DPSOCKD_NAME=$name
	APP_PID=$new
	APP_LOG=$TAKEOVER_LOG
	APP_NAME=$name
	grep -qE "handed over to pid $new([^0-9]|\$)" "$oldlog" ||
		fail "takeover of $name: the old dpsockd (pid $old) exited 0 but did not log 'handed over to pid $new': $(tail -n 3 "$oldlog" | tr '\n' ' ')"
	TAKEOVER_BLACKOUT_MS=$(grep -oE 'blackout [0-9.]+ ms' "$TAKEOVER_LOG" | tail -n 1 | awk '{ print $2 }')
	note "takeover $_LIB_TAKEOVER_N of $name: pid $old -> $new in ${TAKEOVER_TOOK_MS} ms; $(grep -m1 -oE 'took over from pid.*' "$TAKEOVER_LOG")"
	[ -n "$TAKEOVER_BLACKOUT_MS" ] || note "takeover $_LIB_TAKEOVER_N of $name: no 'blackout N ms' figure in $TAKEOVER_LOG"
}

dpsockd_takeover_fails() {
	local name=${1:-} old new timeout=${DPSOCKD_TAKEOVER_TIMEOUT:-30}
	_lib_takeover_spawn "$@"
	old=$TAKEOVER_OLD_PID
	new=$TAKEOVER_PID
	if ! poll_until "$timeout" _lib_dead "$new"; then
		kill -KILL "$new" 2>/dev/null
		fail "takeover of $name that must fail: the new dpsockd (pid $new) still runs after ${timeout}s: $(tail -n 3 "$TAKEOVER_LOG" | tr '\n' ' ')"
	fi
	TAKEOVER_RC=0
	wait "$new" 2>/dev/null || TAKEOVER_RC=$?
	TAKEOVER_TOOK_MS=$(($(_lib_now_ms) - TAKEOVER_T0))
	unset '_LIB_DAEMON_PID[$TAKEOVER_KEY]'
	kill -0 "$old" 2>/dev/null ||
		fail "takeover of $name that must fail (the new one exited $TAKEOVER_RC): the old dpsockd (pid $old) is gone too"
	note "takeover $_LIB_TAKEOVER_N of $name: the new dpsockd exited with status $TAKEOVER_RC after ${TAKEOVER_TOOK_MS} ms; pid $old still runs"
}

# ---- impaired path (test/tools/impair) ------------------------------------

# impair_topo_up NAME IDX: A <-veth-> M <-veth-> B, three namespaces named
# after NAME, torn down at exit; sets TOPO_* (for app_start, in_a, in_b;
# B owns TOPO_ADDR_B) and IMPAIR_NS, IMPAIR_IF_A, IMPAIR_IF_B (M's ends).
# No offload anywhere on the path: B's stack puts finished checksums on the
# wire, impair relays frames as read, nobody coalesces, so every frame fits
# an af_packet slot and is impaired on its own.
impair_topo_up() {
	local name=$1 ns dev l
	TOPO_IDX=$2
	TOPO_NS_A=dps-$name-a
	TOPO_NS_B=dps-$name-b
	IMPAIR_NS=dps-$name-m
	TOPO_IF_A=dpi$$$TOPO_IDX
	IMPAIR_IF_A=dpi$$${TOPO_IDX}ma
	IMPAIR_IF_B=dpi$$${TOPO_IDX}mb
	TOPO_IF_B=dpi$$${TOPO_IDX}b
	TOPO_PLEN=24
	TOPO_ADDR_A=198.18.$TOPO_IDX.1
	TOPO_ADDR_B=198.18.$TOPO_IDX.2
	on_exit topo_down "$name"
	on_exit 'pids=$(ip netns pids "'"$IMPAIR_NS"'" 2>/dev/null); [ -z "$pids" ] || kill -KILL $pids 2>/dev/null; ip netns del "'"$IMPAIR_NS"'" 2>/dev/null || true'
	for ns in "$TOPO_NS_A" "$IMPAIR_NS" "$TOPO_NS_B"; do
		ip netns add "$ns" || fail "cannot create namespace $ns"
		_topo_sysctl "$ns" net.ipv6.conf.all.disable_ipv6 1
		_topo_sysctl "$ns" net.ipv6.conf.default.disable_ipv6 1
		_topo_sysctl "$ns" net.ipv4.conf.all.rp_filter 0
		_topo_sysctl "$ns" net.ipv4.conf.default.rp_filter 0
		ip -n "$ns" link set lo up
	done
	ip -n "$TOPO_NS_A" link add "$TOPO_IF_A" type veth peer name "$IMPAIR_IF_A" netns "$IMPAIR_NS" ||
		fail "cannot create veth A-M"
	ip -n "$TOPO_NS_B" link add "$TOPO_IF_B" type veth peer name "$IMPAIR_IF_B" netns "$IMPAIR_NS" ||
		fail "cannot create veth B-M"
	_topo_ethtool "$TOPO_NS_B" "$TOPO_IF_B" tx off rx off tso off gso off gro off
	for dev in "$IMPAIR_IF_A" "$IMPAIR_IF_B"; do
		_topo_ethtool "$IMPAIR_NS" "$dev" tx off rx off tso off gso off gro off lro off
	done
	_topo_ethtool "$TOPO_NS_A" "$TOPO_IF_A" tx off gro off lro off rx-gro-list off
	if ip netns exec "$TOPO_NS_B" ethtool -k "$TOPO_IF_B" | grep -q '^tx-checksumming: on'; then
		fail "could not turn tx checksumming off on $TOPO_IF_B"
	fi
	ip -n "$TOPO_NS_B" addr add "$TOPO_ADDR_B/$TOPO_PLEN" dev "$TOPO_IF_B"
	for l in "$TOPO_NS_A $TOPO_IF_A" "$IMPAIR_NS $IMPAIR_IF_A" "$IMPAIR_NS $IMPAIR_IF_B" \
		"$TOPO_NS_B $TOPO_IF_B"; do
		# shellcheck disable=SC2086
		ip -n ${l% *} link set dev ${l#* } up
	done
}

# impair_start LABEL IMPAIR_ARGS...: run test/tools/impair in M between
# A and B (log $TEST_TMP/impair-LABEL.log, IMPAIR_PID), wait for it.
impair_start() {
	local label=$1 tool
	shift
	tool=$(dpsock_tool impair) || fail "impair not built"
	IMPAIR_LOG=$TEST_TMP/impair-$label.log
	ip netns exec "$IMPAIR_NS" "$tool" -a "$IMPAIR_IF_A" -b "$IMPAIR_IF_B" "$@" \
		>"$IMPAIR_LOG" 2>&1 &
	IMPAIR_PID=$!
	on_exit "kill $IMPAIR_PID 2>/dev/null || true"
	wait_until 5 grep -q 'impair: ready' "$IMPAIR_LOG"
}

# impair_stop: SIGTERM the relay, which must exit 0; its two counter lines
# ("impair: a>b ..." and "impair: b>a ...") in IMPAIR_A2B and IMPAIR_B2A.
impair_stop() {
	local rc=0
	kill -TERM "$IMPAIR_PID"
	wait "$IMPAIR_PID" || rc=$?
	[ "$rc" -eq 0 ] || fail "impair exited with status $rc: $(tail -3 "$IMPAIR_LOG")"
	IMPAIR_A2B=$(grep '^impair: a>b rx=' "$IMPAIR_LOG") || fail "no a>b counters from impair"
	IMPAIR_B2A=$(grep '^impair: b>a rx=' "$IMPAIR_LOG") || fail "no b>a counters from impair"
}

# ---- bad frames ------------------------------------------------------------

# badframes_send COUNT CASE...: send COUNT frames of each CASE from B to
# dpsockd's address and MAC on A. Fails the test if badframes fails.
badframes_send() {
	local count=$1
	shift
	[ -n "$BADFRAMES" ] || fail "badframes not built (set DPSOCK_BUILD)"
	in_b "$BADFRAMES" -i "$TOPO_IF_B" -m "$TOPO_MAC_A" -s "$TOPO_ADDR_B" \
		-d "$TOPO_ADDR_A" -n "$count" "$@" ||
		fail "badframes -n $count $* failed"
}

# badframes_counter CASE: print the worker counter CASE is expected to bump.
badframes_counter() {
	[ -n "$BADFRAMES" ] || fail "badframes not built (set DPSOCK_BUILD)"
	"$BADFRAMES" --list-all | awk -v c="$1" '$1 == c { print $2; found = 1 }
		END { exit !found }' || fail "badframes has no case '$1'"
}

# ---- sockperf (a client run, its checks and its figures) --------------------

# sp_run LABEL WHERE SOCKPERF_ARGS...: run a sockperf client (bounded) in
# network namespace WHERE, or under the shim in namespace A when WHERE is
# "preload"; output (colours stripped) in SP_OUT and
# $TEST_TMP/sockperf-LABEL.out. Fails the test on a non-zero status or an
# ERROR line, after calling the test's sp_on_fail function if it has one
# (extra diagnostics).
sp_run() {
	local label=$1 where=$2 rc=0
	shift 2
	if [ "$where" = preload ]; then
		SP_OUT=$(preload_run timeout 60 sockperf "$@" 2>&1) || rc=$?
	else
		SP_OUT=$(timeout 60 ip netns exec "$where" sockperf "$@" 2>&1) || rc=$?
	fi
	SP_OUT=$(sed 's/\x1b\[[0-9;]*m//g' <<<"$SP_OUT")
	printf '%s\n' "$SP_OUT" >"$TEST_TMP/sockperf-$label.out"
	if [ "$rc" -ne 0 ] || grep -q 'ERROR' <<<"$SP_OUT"; then
		echo "---- sockperf $* (status $rc) ----" >&2
		tail -n 20 <<<"$SP_OUT" >&2
		! declare -F sp_on_fail >/dev/null || sp_on_fail
		fail "sockperf $label: status $rc$(grep -m1 ERROR <<<"$SP_OUT" | sed 's/^/, /')"
	fi
}

# sp_field REGEX: the first capture group of a sed regex in SP_OUT.
sp_field() {
	sed -n "s/$1/\1/p" <<<"$SP_OUT" | head -n 1
}

# pingpong LABEL WHERE SOCKPERF_ARGS...: run ping-pong, check it, set
# PP_SENT / PP_RECV (whole run, warm-up included) and PP_OBS.
pingpong() {
	local label=$1 where=$2 lat p50 p99
	shift 2
	sp_run "$label" "$where" ping-pong "$@"
	lat=$(sp_field '.*Summary: Latency is \([0-9.]*\) usec.*')
	PP_OBS=$(sp_field '.*Total \([0-9]*\) observations.*')
	PP_SENT=$(sp_field '.*\[Total Run\].*SentMessages=\([0-9]*\);.*')
	PP_RECV=$(sp_field '.*\[Total Run\].*ReceivedMessages=\([0-9]*\).*')
	p50=$(sp_field '.*percentile 50.000 = *\([0-9.]*\).*')
	p99=$(sp_field '.*percentile 99.000 = *\([0-9.]*\).*')
	if [ -z "$lat" ]; then
		echo "---- sockperf $label (no latency summary) ----" >&2
		tail -n 8 <<<"$SP_OUT" >&2
		! declare -F sp_on_fail >/dev/null || sp_on_fail
		fail "sockperf $label: no 'Summary: Latency' line (output in $TEST_TMP/sockperf-$label.out)"
	fi
	[ -n "$PP_OBS" ] && [ "$PP_OBS" -gt 0 ] || fail "sockperf $label: no observations: $(grep -m1 -i 'observ\|no messages' <<<"$SP_OUT")"
	[ -n "$PP_SENT" ] && [ -n "$PP_RECV" ] || fail "sockperf $label: no [Total Run] line"
	note "$label: $PP_OBS observations ($PP_RECV of $PP_SENT replies in the whole run); latency avg $lat us, p50 ${p50:-?} us, p99 ${p99:-?} us"
}

# throughput LABEL WHERE SOCKPERF_ARGS...: run throughput, check the rate,
# set TP_SENT (messages sent).
throughput() {
	local label=$1 where=$2 rate bw
	shift 2
	sp_run "$label" "$where" throughput "$@"
	rate=$(sp_field '.*Summary: Message Rate is \([0-9]*\) .*')
	bw=$(sp_field '.*Summary: BandWidth is \([0-9.]* MBps\).*')
	TP_SENT=$(sp_field '.*Total of \([0-9]*\) messages sent.*')
	[ -n "$rate" ] && [ "$rate" -gt 0 ] || fail "sockperf $label: no message rate > 0: $(grep -m1 Summary <<<"$SP_OUT")"
	[ -n "$TP_SENT" ] || fail "sockperf $label: no 'Total of N messages sent' line"
	note "$label: $rate msg/s, ${bw:-? MBps} ($TP_SENT messages)"
}

# ---- preloaded programs (libdpsock_preload.so) ------------------------------
#
#   require_preload                 skip (77) unless the shim is built
#   preload_daemon_start NAME [LINE...]
#                                   dpsockd (2 workers) serving TOPO_ADDR_A, with
#                                   runtime_dir = TEST_TMP (conf LINEs added)
#                                   (PRELOAD_SHARED=1: the port shared with
#                                   A's kernel, which has TOPO_ADDR_A)
#   preload_daemon_stop             dpsockd_stop_clean (nothing in the
#                                   kernel self-check)
#   preload_daemon_takeover [CONF]  dpsockd_takeover of that dpsockd, with
#                                   its conf (PRELOAD_CONF) and EAL options
#                                   (PRELOAD_EAL); ..._fails: one that must
#                                   not happen (dpsockd_takeover_fails)
#   preload_run CMD...              run CMD in namespace A under the shim
#   preload_start LABEL CMD...      the same in the background; PRELOAD_PID,
#                                   log $TEST_TMP/LABEL.log; killed at exit
#   preload_stop LABEL [SIGNAL]     stop it (TERM), return its exit status
#   peer_start LABEL CMD...         a Linux program in namespace B, background,
#                                   log $TEST_TMP/LABEL.log; killed at exit
#   wait_tcp_port NS ADDR PORT [T]  wait until a TCP connect from NS succeeds
#   preload_offload_ge NAME COUNTER VALUE [T]
#                                   wait_counter_ge, proving the traffic went
#                                   through dpsockd (not a kernel fallback)
#   preload_logs                    every shim/program log of the test, cat
#
# The shim finds dpsockd through DPSOCK_RUNTIME_DIR (= TEST_TMP) and
# DPSOCK_NAME; its log goes to $TEST_TMP/shim-<pid>.log (DPSOCK_LOG_FILE)
# and, if it logs to stderr, to the program's log. PRELOAD_ENV (array) holds
# extra VAR=VALUE words for the next preload_run/preload_start.
#
# Self-check of the test scripts (not a test of dpsock): with
# DPSOCK_PRELOAD_KERNEL=1, preload_daemon_start puts TOPO_ADDR_A on A's kernel
# instead of starting dpsockd, programs run without the shim, and the offload
# checks are skipped: the scripts' own logic runs against Linux on both sides.

_lib_find_preload() {
	local b
	while read -r b; do
		if [ -f "$b/libdpsock_preload.so" ]; then
			echo "$b/libdpsock_preload.so"
			return 0
		fi
	done < <(_lib_build_dirs)
	return 1
}
PRELOAD_LIB=$(_lib_find_preload) || PRELOAD_LIB=
PRELOAD_KERNEL=${DPSOCK_PRELOAD_KERNEL:-0}
PRELOAD_NAME=
PRELOAD_CONF=
PRELOAD_EAL=()
PRELOAD_ENV=()
declare -A _LIB_PRELOAD_PID=()

# require_preload: skip unless libdpsock_preload.so is built (and, unless
# in the kernel self-check, dpsockd and dpsock-stat).
require_preload() {
	[ "$PRELOAD_KERNEL" = 1 ] && return 0
	[ -n "$PRELOAD_LIB" ] ||
		skip "libdpsock_preload.so not built (looked in: $(_lib_build_dirs | tr '\n' ' ')— set DPSOCK_BUILD)"
	require_tools dpsockd dpsock-stat
}

# preload_daemon_start NAME [LINE...]: start dpsockd NAME on the current
# topology with two workers (lcores 0-1, the test port with 2 queue pairs) and
# runtime_dir = TEST_TMP, for preloaded programs (sets PRELOAD_NAME).
# PRELOAD_SHARED=1: the port is shared with A's kernel, which gets
# TOPO_ADDR_A (share_conf; net_af_xdp only, the test is skipped otherwise).
preload_daemon_start() {
	local name=$1 conf
	shift
	PRELOAD_NAME=$name
	if [ "$PRELOAD_KERNEL" = 1 ]; then
		ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A" 2>/dev/null || true
		note "kernel self-check: $TOPO_ADDR_A is on A's kernel, no dpsockd, no shim"
		return 0
	fi
	if [ "${PRELOAD_SHARED:-0}" = 1 ]; then
		# the port shared with A's kernel, which has the address
		[ "$TEST_PMD" = af_xdp ] ||
			skip "sharing the port with the kernel needs net_af_xdp: ${TEST_PMD_WHY:-DPSOCK_TEST_PMD=$TEST_PMD}"
		in_a ip addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A" ||
			fail "could not give A's kernel $TOPO_ADDR_A"
		conf=$(share_conf "$name" "$@")
	else
		conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];' "runtime_dir = \"$TEST_TMP\";" "$@")
	fi
	PRELOAD_CONF=$conf
	# shellcheck disable=SC2207
	PRELOAD_EAL=($(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name"))
	dpsockd_start "$name" "$conf" "${PRELOAD_EAL[@]}"
	wait_until 10 test -S "$TEST_TMP/$name.sock"
}

# preload_daemon_stop: the end of a preload test, dpsockd_stop_clean.
preload_daemon_stop() {
	[ "$PRELOAD_KERNEL" = 1 ] || dpsockd_stop_clean
}

# preload_daemon_takeover [CONF]: dpsockd_takeover of PRELOAD_NAME with
# CONF (default PRELOAD_CONF, the one preload_daemon_start wrote) and the
# EAL options preload_daemon_start gave (PRELOAD_EAL; the file prefix gets
# -tkN). In the kernel self-check: a note, TAKEOVER_BLACKOUT_MS empty.
preload_daemon_takeover() {
	if [ "$PRELOAD_KERNEL" = 1 ]; then
		TAKEOVER_BLACKOUT_MS='' TAKEOVER_TOOK_MS=0
		note "kernel self-check: no dpsockd, no takeover"
		return 0
	fi
	dpsockd_takeover "$PRELOAD_NAME" "${1:-$PRELOAD_CONF}" "${PRELOAD_EAL[@]}"
}

# preload_daemon_takeover_fails [CONF]: dpsockd_takeover_fails the same
# way (TAKEOVER_RC, TAKEOVER_LOG). In the kernel self-check: a note,
# TAKEOVER_RC empty.
preload_daemon_takeover_fails() {
	if [ "$PRELOAD_KERNEL" = 1 ]; then
		TAKEOVER_RC='' TAKEOVER_LOG=/dev/null
		note "kernel self-check: no dpsockd, no takeover"
		return 0
	fi
	dpsockd_takeover_fails "$PRELOAD_NAME" "${1:-$PRELOAD_CONF}" "${PRELOAD_EAL[@]}"
}

# _lib_preload_argv CMD...: PRELOAD_ARGV = env ... CMD for namespace A.
_lib_preload_argv() {
	PRELOAD_ARGV=(env)
	if [ "$PRELOAD_KERNEL" != 1 ]; then
		PRELOAD_ARGV+=("LD_PRELOAD=$PRELOAD_LIB" "DPSOCK_RUNTIME_DIR=$TEST_TMP"
			"DPSOCK_NAME=${PRELOAD_NAME:-$TEST_NAME}"
			"DPSOCK_LOG_FILE=$TEST_TMP/shim-%d.log")
	fi
	PRELOAD_ARGV+=("${PRELOAD_ENV[@]}" "$@")
}

# preload_run CMD...: run CMD in namespace A under the shim, in the
# foreground; its status is returned.
preload_run() {
	_lib_preload_argv "$@"
	ip netns exec "$TOPO_NS_A" "${PRELOAD_ARGV[@]}"
}

# wrk_check LABEL WRK_ARGS...: wrk from namespace B, output in
# $TEST_TMP/wrk-LABEL.log; fail unless it ran, made requests, and saw no
# non-2xx response and no socket error. WRK_REQS: the requests it made.
wrk_check() {
	local label=$1 log
	shift
	log=$TEST_TMP/wrk-$label.log
	in_b wrk "$@" >"$log" 2>&1 || fail "wrk ($label) failed: $(tail -n 3 "$log")"
	! grep -q 'Non-2xx\|Socket errors' "$log" || fail "wrk ($label) saw errors: $(cat "$log")"
	WRK_REQS=$(awk '/requests in/ { print $1 }' "$log")
	[ "${WRK_REQS:-0}" -gt 0 ] || fail "wrk ($label) made no request: $(cat "$log")"
}

# nginx_conf DIR WORKERS [MAIN]: write DIR/nginx.conf (DIR/logs and DIR/tmp
# made) for `nginx -p DIR -c DIR/nginx.conf -e DIR/logs/error.log`: in the
# foreground with a master and WORKERS worker processes, pid and error log
# (info) in DIR, the temp paths in DIR/tmp, MAIN's directives (user, env)
# at the top level, and stdin as the body of the http block (servers, logs).
nginx_conf() {
	local d=$1 workers=$2 main=${3:-}
	mkdir -p "$d/logs" "$d/tmp"
	{
		printf 'daemon off;\nmaster_process on;\nworker_processes %s;\n' "$workers"
		printf 'pid %s/nginx.pid;\nerror_log %s/logs/error.log info;\n' "$d" "$d"
		[ -z "$main" ] || printf '%s\n' "$main"
		printf 'events { worker_connections 1024; }\nhttp {\n'
		for t in client_body proxy fastcgi uwsgi scgi; do
			printf '\t%s_temp_path %s/tmp/%s;\n' "$t" "$d" "$t"
		done
		sed 's/^/\t/'
		printf '}\n'
	} >"$d/nginx.conf"
}

# nginx_preload DIR WORKERS PAGE: DIR/www/index.html holding PAGE, DIR/nginx.conf
# (nginx_conf DIR WORKERS, the http block's body on stdin, where $DIR/www is
# the root to use), and nginx started on it under the shim (preload_start
# label nginx).
nginx_preload() {
	local d=$1 workers=$2
	mkdir -p "$d/www"
	printf '%s\n' "$3" >"$d/www/index.html"
	nginx_conf "$d" "$workers"
	preload_start nginx nginx -p "$d" -c "$d/nginx.conf" -e "$d/logs/error.log"
}

# preload_start LABEL CMD...: run CMD in namespace A under the shim in the
# background, output in $TEST_TMP/LABEL.log; sets PRELOAD_PID (the program's
# own pid: ip netns exec and env exec it). Killed (KILL) at exit if still up.
preload_start() {
	local label=$1
	shift
	_lib_preload_argv "$@"
	echo "+ ${PRELOAD_ARGV[*]}" >"$TEST_TMP/$label.log"
	ip netns exec "$TOPO_NS_A" "${PRELOAD_ARGV[@]}" >>"$TEST_TMP/$label.log" 2>&1 </dev/null &
	PRELOAD_PID=$!
	_LIB_PRELOAD_PID[$label]=$PRELOAD_PID
	on_exit "{ kill -KILL $PRELOAD_PID && wait $PRELOAD_PID; } 2>/dev/null; true"
}

# peer_start LABEL CMD...: run CMD in namespace B in the background, output
# in $TEST_TMP/LABEL.log; sets PEER_PID. Killed (KILL) at exit if still up.
peer_start() {
	ns_start "$TOPO_NS_B" "$@"
}

# ns_start NS LABEL CMD...: peer_start in namespace NS (A: a program on A's
# kernel, not preloaded, beside dpsockd on a shared port).
ns_start() {
	local ns=$1 label=$2
	shift 2
	echo "+ $*" >"$TEST_TMP/$label.log"
	ip netns exec "$ns" "$@" >>"$TEST_TMP/$label.log" 2>&1 </dev/null &
	PEER_PID=$!
	_LIB_PRELOAD_PID[$label]=$PEER_PID
	on_exit "{ kill -KILL $PEER_PID && wait $PEER_PID; } 2>/dev/null; true"
}

# preload_stop LABEL [SIGNAL]: send SIGNAL (TERM) to what preload_start or
# peer_start started as LABEL, wait up to 10 s (then KILL), return its
# exit status (128+signal when a signal ended it).
preload_stop() {
	local label=$1 sig=${2:-TERM} pid rc=0
	pid=${_LIB_PRELOAD_PID[$label]:-}
	[ -n "$pid" ] || { echo "preload_stop: nothing started as '$label'" >&2; return 1; }
	kill -"${sig#SIG}" "$pid" 2>/dev/null
	if ! poll_until 10 _lib_dead "$pid"; then
		echo "preload_stop: $label (pid $pid) still running 10 s after SIG${sig#SIG}; killing it" >&2
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null || rc=$?
	unset '_LIB_PRELOAD_PID[$label]'
	return "$rc"
}

# preload_wait LABEL [TIMEOUT_S=30]: wait for LABEL to end by itself and
# return its status; fail the test if it is still running after TIMEOUT_S.
preload_wait() {
	local label=$1 timeout=${2:-30} pid rc=0
	pid=${_LIB_PRELOAD_PID[$label]:-}
	[ -n "$pid" ] || { echo "preload_wait: nothing started as '$label'" >&2; return 1; }
	poll_until "$timeout" _lib_dead "$pid" ||
		fail "$label still running after ${timeout}s (log: $(tail -n 3 "$TEST_TMP/$label.log" | tr '\n' ' '))"
	wait "$pid" 2>/dev/null || rc=$?
	unset '_LIB_PRELOAD_PID[$label]'
	return "$rc"
}

_lib_tcp_probe() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	ip netns exec "$1" timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" 2>&1
}

# wait_tcp_port NS ADDR PORT [TIMEOUT_S=15]: wait until a TCP connection
# from namespace NS to ADDR:PORT is accepted (it is closed at once).
wait_tcp_port() {
	wait_until "${4:-15}" _lib_tcp_probe "$1" "$2" "$3"
}

# preload_offload_ge NAME COUNTER VALUE [TIMEOUT_S]: wait_counter_ge, except
# in the kernel self-check (no dpsockd: prints 0 and returns).
preload_offload_ge() {
	if [ "$PRELOAD_KERNEL" = 1 ]; then
		STAT_VALUE=0
		return 0
	fi
	wait_counter_ge "$@"
}

# preload_stat COUNTER: stat_read on PRELOAD_NAME (0 in the kernel self-check).
preload_stat() {
	if [ "$PRELOAD_KERNEL" = 1 ]; then
		echo 0
		return 0
	fi
	stat_read "$PRELOAD_NAME" "$1"
}

# preload_listener PORT WHAT LOG: wait until PRELOAD_NAME's dpsockd has a
# listener on PORT (dpsock-stat), else fail naming WHAT and LOG's tail.
preload_listener() {
	wait_until 30 bash -c "\"$DPSOCK_STAT\" -n $PRELOAD_NAME -v sockets 2>/dev/null | grep -q ':$1 .*LISTEN'" ||
		fail "$2's listener on $1 is not dpsockd's: $("$DPSOCK_STAT" -n "$PRELOAD_NAME" -v sockets 2>&1) $(tail -n 5 "$3")"
}

# curl_both ADDR6 PORT BODY: curl from B over IPv4 (TOPO_ADDR_A) and over
# IPv6 (ADDR6) both get BODY from PORT.
curl_both() {
	local b4 b6
	b4=$(in_b curl -s --max-time 5 "http://$TOPO_ADDR_A:$2/") || fail "curl over IPv4 to port $2 failed"
	b6=$(in_b curl -s --max-time 5 "http://[$1]:$2/") ||
		fail "curl over IPv6 to port $2 failed; A's kernel listeners: $(in_a ss -ltn | tr '\n' ';')"
	[ "$b4" = "$3" ] && [ "$b6" = "$3" ] || fail "port $2 answered '$b4' over IPv4 and '$b6' over IPv6, not '$3'"
}

# serve_check ADDR6 LABEL PORT BODY URL CMD...: CMD, preloaded
# (preload_start LABEL), prints "listening" and serves BODY on PORT; its
# listener is dpsockd's, curl from B over IPv4 and over IPv6 (ADDR6) gets
# BODY, wrk -c 8 on URL makes requests without an error, and dpsockd
# accepted its 8 connections; then CMD is stopped. SERVE_CURL_ACC: how
# many of curl's two connections dpsockd accepted; WRK_REQS: wrk's count.
serve_check() {
	local a6=$1 label=$2 port=$3 body=$4 url=$5 acc0 acc1 acc2
	shift 5
	command -v "$1" >/dev/null || fail "$1 is not installed (scripts/setup installs it)"
	preload_start "$label" "$@"
	wait_until 60 grep -q listening "$TEST_TMP/$label.log" ||
		fail "$label did not start: $(tail -n 5 "$TEST_TMP/$label.log")"
	preload_listener "$port" "$label" "$TEST_TMP/$label.log"
	acc0=$(stat_sum "$PRELOAD_NAME" tcp_accepted)
	curl_both "$a6" "$port" "$body"
	acc1=$(stat_sum "$PRELOAD_NAME" tcp_accepted)
	wrk_check "$label" -t 1 -c 8 -d 2s "$url"
	acc2=$(stat_sum "$PRELOAD_NAME" tcp_accepted)
	[ $((acc2 - acc1)) -ge 8 ] || fail "dpsockd accepted $((acc2 - acc1)) of wrk's 8 connections to $label"
	SERVE_CURL_ACC=$((acc1 - acc0))
	preload_stop "$label" || true
}

# preload_logs: the shim's log files and the programs' logs, for greps.
preload_logs() {
	cat "$TEST_TMP"/*.log 2>/dev/null
}

# preload_show_clients: dpsock-stat's view of attached clients, if it has one.
preload_show_clients() {
	[ "$PRELOAD_KERNEL" = 1 ] && return 0
	"$DPSOCK_STAT" -n "$PRELOAD_NAME" -v clients 2>/dev/null | sed 's/^/   /' || true
}
