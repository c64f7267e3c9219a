#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# shellcheck disable=SC2034 # TOPO_* are set for the caller
#
# scripts/topo.sh — test topologies: two network namespaces joined by a veth.
#
#   namespace dps-NAME-a                 namespace dps-NAME-b
#   ┌─────────────────────────┐          ┌──────────────────────────┐
#   │ TOPO_IF_A (no IPv4)     │── veth ──│ TOPO_IF_B 198.18.IDX.2/24│
#   │ dpsockd owns            │          │ Linux peer (+ .11, .12…  │
#   │ 198.18.IDX.1 via        │          │ from topo_add_peer_addr) │
#   │ net_af_packet           │          │                          │
#   └─────────────────────────┘          └──────────────────────────┘
#
# Sourced (integration tests, demo):
#   . scripts/topo.sh
#   topo_up NAME [IDX]       create; sets TOPO_* (below); returns non-zero on error
#   topo_add_peer_addr N     add 198.18.IDX.(10+N)/24 on B (N = 1..200)
#   topo_queues N            use N queues on both veth ends (1..TOPO_MAX_QUEUES)
#   topo_peer_addr N         print that address (no side effect)
#   topo_down NAME           remove both namespaces; idempotent and quiet
#   topo_vars                print the TOPO_* variables as shell assignments
# Run:
#   scripts/topo.sh up NAME [IDX]    create, print the TOPO_* assignments
#                                    (eval "$(scripts/topo.sh up demo 7)")
#   scripts/topo.sh down NAME        remove
#   scripts/topo.sh vars NAME [IDX]  print the assignments without creating
#
# Variables set by topo_up:
#   TOPO_NAME TOPO_IDX TOPO_NS_A TOPO_NS_B TOPO_IF_A TOPO_IF_B
#   TOPO_MAC_A TOPO_MAC_B TOPO_ADDR_A (198.18.IDX.1, not configured: dpsockd's)
#   TOPO_ADDR_B (198.18.IDX.2) TOPO_PLEN (24) TOPO_NET (198.18.IDX.0/24)
#   TOPO_MTU TOPO_PEER_ADDRS (array, grows with topo_add_peer_addr)
#   TOPO_QUEUES (queues in use on each end, see topo_queues)
#
# Knobs (environment): TOPO_MTU (default 1500) for both veth ends;
# TOPO_MAX_QUEUES (default 8) queues each veth end is created with, of which
# TOPO_QUEUES (default 1) are in use at first.
#
# NAME: 1-40 characters from [A-Za-z0-9_.-], unique per test run (use $$).
# IDX: 0-255, the third octet. Namespaces isolate topologies, so two tests may
# use the same IDX at the same time; distinct IDX values only help reading
# captures.
#
# What topo_up does to keep the wire honest and quiet:
#   - both veth ends are created directly inside their namespaces (never seen
#     in the root namespace), so names cannot collide with the host's;
#   - IPv6 is disabled in both namespaces before the veths exist: no
#     link-local address, no DAD / router solicitation / MLD frames;
#   - A gets no IPv4 address: dpsockd owns TOPO_ADDR_A and answers ARP itself;
#     A's kernel drops what it sees (no address, forwarding off);
#   - B: tx checksum offload OFF (ethtool). A locally generated TCP/UDP packet
#     on a veth with tx-checksumming on leaves B with CHECKSUM_PARTIAL and only
#     the pseudo-header sum in the checksum field; veth hands the skb to A as
#     is and AF_PACKET (so net_af_packet) reads the unfinished checksum, which
#     lwIP rightly rejects. Turning tx checksumming off makes B compute full
#     checksums in software, as a real NIC would put them on the wire; it
#     also turns TSO off (it depends on tx checksumming), so B never hands A
#     a 64 KiB GSO super-frame that would not fit an af_packet ring slot.
#     (Checked on kernel 6.x: with tx on, af_packet on A reports
#     TP_STATUS_CSUMNOTREADY and the TCP/UDP checksum field is wrong; with tx
#     off, the checksum is right and the status is plain TP_STATUS_USER.)
#   - B: rx checksum offload off as well, belt and braces: since 2016 ("veth:
#     don't modify ip_summed") veth no longer marks what it receives
#     CHECKSUM_UNNECESSARY, and B's kernel was checked to count bad UDP/TCP
#     checksums from A (UdpInCsumErrors/TcpInCsumErrors) with rx on or off;
#     older kernels trusted the veth and would hide a dpsockd checksum bug;
#   - A: GRO/LRO off, so af_packet sees frames exactly as they were sent;
#   - rp_filter off in both namespaces (B may own several addresses on the
#     same subnet); arp_announce=2 on B so its ARP requests carry the source
#     address the IP packet will use.
#   - queues: a veth hands each frame to the peer's RX queue numbered like
#     the TX queue the sender picked, and B picks one by a hash of the flow
#     (no XPS on a veth): several queues in use on both ends make the veth
#     spread flows like a NIC's RSS, which an AF_XDP port (one socket per
#     queue) needs to feed several workers; af_packet sees every queue
#     anyway. B's net.core.txrehash is 0: Linux otherwise draws a new flow
#     hash after a retransmission timeout, which moves the flow to another
#     queue (a NIC's RSS hash of the 4-tuple never changes). The counts are
#     set with topo_queues; the XDP program needs A's RX queues >= B's TX.

# Functions return non-zero with a "topo: ..." message on stderr; they
# never exit and never change the caller's shell options (tests that source
# this file choose their own).

_topo_msg() { printf 'topo: %s\n' "$*" >&2; }

# Stable short hash of a string (hex, 8 digits) for interface names.
_topo_hash() {
	printf '%s' "$1" | cksum | awk '{ printf "%08x", $1 }'
}

_topo_check_name() {
	local name=${1:-}
	if [ -z "$name" ]; then
		_topo_msg "missing NAME"
		return 2
	fi
	if [ ${#name} -gt 40 ] || [[ ! $name =~ ^[A-Za-z0-9_.-]+$ ]]; then
		_topo_msg "bad NAME '$name': use 1-40 characters from [A-Za-z0-9_.-]"
		return 2
	fi
}

# _topo_names NAME IDX: set the TOPO_* names and addresses (no side effect).
_topo_names() {
	local name=$1 idx=$2 base
	TOPO_NAME=$name
	TOPO_IDX=$idx
	TOPO_NS_A=dps-$name-a
	TOPO_NS_B=dps-$name-b
	# Interface names: at most 15 characters (IFNAMSIZ - 1). "dps" + NAME +
	# a/b when that fits; otherwise "dps" + 4 characters of NAME + 7 hex
	# digits of a hash of the whole NAME + a/b (15 characters).
	base=${name//./_}
	if [ ${#base} -gt 11 ]; then
		base=${base:0:4}$(_topo_hash "$name")
		base=${base:0:11}
	fi
	TOPO_IF_A=dps${base}a
	TOPO_IF_B=dps${base}b
	TOPO_PLEN=24
	TOPO_NET=198.18.$idx.0/24
	TOPO_ADDR_A=198.18.$idx.1
	TOPO_ADDR_B=198.18.$idx.2
	TOPO_MTU=${TOPO_MTU:-1500}
	TOPO_MAX_QUEUES=${TOPO_MAX_QUEUES:-8}
	TOPO_QUEUES=${TOPO_QUEUES:-1}
}

# topo_queues N: N RX and N TX queues in use on both veth ends (ethtool -L).
topo_queues() {
	local n=${1:-} ns dev
	if [[ ! $n =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt "${TOPO_MAX_QUEUES:-8}" ]; then
		_topo_msg "topo_queues: N must be 1-${TOPO_MAX_QUEUES:-8}, got '$n'"
		return 2
	fi
	for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
		dev=$TOPO_IF_A
		[ "$ns" = "$TOPO_NS_B" ] && dev=$TOPO_IF_B
		ip netns exec "$ns" ethtool -L "$dev" rx "$n" tx "$n" >/dev/null 2>&1 || {
			_topo_msg "could not set $n queues on $dev in $ns (ethtool -L $dev rx $n tx $n)"
			return 1
		}
	done
	TOPO_QUEUES=$n
}

# topo_peer_addr N: the Nth extra peer address on B (198.18.IDX.(10+N)).
topo_peer_addr() {
	local n=${1:-}
	if [[ ! $n =~ ^[0-9]+$ ]] || [ "$n" -lt 1 ] || [ "$n" -gt 200 ]; then
		_topo_msg "topo_peer_addr: N must be 1-200, got '$n'"
		return 2
	fi
	if [ -z "${TOPO_IDX:-}" ]; then
		_topo_msg "topo_peer_addr: no topology (call topo_up first)"
		return 2
	fi
	printf '198.18.%s.%s\n' "$TOPO_IDX" $((10 + n))
}

# _topo_sysctl NS KEY VALUE: set a sysctl inside NS when the key exists.
_topo_sysctl() {
	local ns=$1 key=$2 val=$3
	# shellcheck disable=SC2016 # expanded by the inner sh
	ip netns exec "$ns" sh -c \
		'f=/proc/sys/$(echo "$1" | tr . /); [ ! -e "$f" ] || echo "$2" >"$f"' \
		_ "$key" "$val"
}

# _topo_mac NS IF: print the interface's MAC address.
_topo_mac() {
	ip -n "$1" -o link show dev "$2" |
		sed -n 's/.*link\/ether \([0-9a-f:]\{17\}\).*/\1/p'
}

# _topo_ethtool NS IF FEATURE on|off...: best effort, per feature (a feature
# the driver lacks must not stop the others).
_topo_ethtool() {
	local ns=$1 dev=$2
	shift 2
	while [ $# -ge 2 ]; do
		ip netns exec "$ns" ethtool -K "$dev" "$1" "$2" >/dev/null 2>&1 || true
		shift 2
	done
}

# topo_up NAME [IDX]
topo_up() {
	local name=${1:-} idx=${2:-1} ns
	_topo_check_name "$name" || return
	if [[ ! $idx =~ ^[0-9]+$ ]] || [ "$idx" -gt 255 ]; then
		_topo_msg "bad IDX '$idx': use 0-255"
		return 2
	fi
	if ! command -v ip >/dev/null 2>&1; then
		_topo_msg "'ip' (iproute2) not found"
		return 1
	fi
	if ! command -v ethtool >/dev/null 2>&1; then
		_topo_msg "ethtool not found (apt-get install ethtool): the peer's" \
			"TCP/UDP checksums would reach af_packet unfinished"
		return 1
	fi
	_topo_names "$name" "$idx"
	TOPO_PEER_ADDRS=()

	for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
		if ip netns list | awk '{print $1}' | grep -qxF "$ns"; then
			_topo_msg "namespace $ns already exists (NAME not unique?" \
				"remove it with: $(_topo_self) down $name)"
			return 1
		fi
	done

	if ! _topo_up_steps; then
		_topo_msg "topo_up $name failed; removing what was created"
		topo_down "$name"
		return 1
	fi
}

_topo_self() {
	local self=${BASH_SOURCE[0]}
	printf '%s' "${self:-scripts/topo.sh}"
}

_topo_up_steps() {
	local ns
	ip netns add "$TOPO_NS_A" || return
	ip netns add "$TOPO_NS_B" || return
	for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
		# Before any interface exists, so nothing ever gets an IPv6 address.
		_topo_sysctl "$ns" net.ipv6.conf.all.disable_ipv6 1 || return
		_topo_sysctl "$ns" net.ipv6.conf.default.disable_ipv6 1 || return
		_topo_sysctl "$ns" net.ipv4.conf.all.rp_filter 0 || return
		_topo_sysctl "$ns" net.ipv4.conf.default.rp_filter 0 || return
		ip -n "$ns" link set dev lo up || return
	done
	_topo_sysctl "$TOPO_NS_B" net.ipv4.conf.all.arp_announce 2 || return
	_topo_sysctl "$TOPO_NS_B" net.core.txrehash 0 || return

	ip -n "$TOPO_NS_A" link add "$TOPO_IF_A" mtu "$TOPO_MTU" \
		numtxqueues "$TOPO_MAX_QUEUES" numrxqueues "$TOPO_MAX_QUEUES" type veth \
		peer name "$TOPO_IF_B" netns "$TOPO_NS_B" mtu "$TOPO_MTU" \
		numtxqueues "$TOPO_MAX_QUEUES" numrxqueues "$TOPO_MAX_QUEUES" || return

	for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
		local dev=$TOPO_IF_A
		[ "$ns" = "$TOPO_NS_B" ] && dev=$TOPO_IF_B
		_topo_sysctl "$ns" "net.ipv6.conf.$dev.disable_ipv6" 1 || return
		_topo_sysctl "$ns" "net.ipv4.conf.$dev.rp_filter" 0 || return
	done

	# See the header: the peer must put finished checksums on the wire.
	_topo_ethtool "$TOPO_NS_B" "$TOPO_IF_B" tx off rx off tso off gso off gro off
	_topo_ethtool "$TOPO_NS_A" "$TOPO_IF_A" gro off lro off rx-gro-list off
	if ip netns exec "$TOPO_NS_B" ethtool -k "$TOPO_IF_B" 2>/dev/null |
		grep -q '^tx-checksumming: on'; then
		_topo_msg "could not turn tx checksumming off on $TOPO_IF_B"
		return 1
	fi

	topo_queues "$TOPO_QUEUES" || return
	ip -n "$TOPO_NS_B" addr add "$TOPO_ADDR_B/$TOPO_PLEN" dev "$TOPO_IF_B" || return
	ip -n "$TOPO_NS_A" link set dev "$TOPO_IF_A" up || return
	ip -n "$TOPO_NS_B" link set dev "$TOPO_IF_B" up || return

	TOPO_MAC_A=$(_topo_mac "$TOPO_NS_A" "$TOPO_IF_A")
	TOPO_MAC_B=$(_topo_mac "$TOPO_NS_B" "$TOPO_IF_B")
	if [ -z "$TOPO_MAC_A" ] || [ -z "$TOPO_MAC_B" ]; then
		_topo_msg "could not read the veth MAC addresses"
		return 1
	fi
}

# topo_add_peer_addr N: add 198.18.IDX.(10+N)/24 on B.
topo_add_peer_addr() {
	local addr
	addr=$(topo_peer_addr "${1:-}") || return
	ip -n "$TOPO_NS_B" addr add "$addr/$TOPO_PLEN" dev "$TOPO_IF_B" || {
		_topo_msg "could not add $addr to $TOPO_IF_B in $TOPO_NS_B"
		return 1
	}
	TOPO_PEER_ADDRS+=("$addr")
}

# topo_down NAME: remove both namespaces; quiet and idempotent. Processes
# still running inside them (a test's daemon or peer programs) are ended
# first — TERM, then KILL after 2 s — or the namespaces, and the veth, would
# outlive their names.
topo_down() {
	local name=${1:-} ns pids
	_topo_check_name "$name" || return
	for ns in "dps-$name-a" "dps-$name-b"; do
		[ -e "/run/netns/$ns" ] || [ -e "/var/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null)
		if [ -n "$pids" ]; then
			# shellcheck disable=SC2086
			kill -TERM $pids 2>/dev/null || true # (one may have just exited)
			for _ in $(seq 1 40); do
				pids=$(ip netns pids "$ns" 2>/dev/null)
				[ -z "$pids" ] && break
				sleep 0.05
			done
			# shellcheck disable=SC2086
			[ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
		fi
		ip netns del "$ns" 2>/dev/null || true
	done
	return 0
}

topo_vars() {
	local v
	for v in TOPO_NAME TOPO_IDX TOPO_NS_A TOPO_NS_B TOPO_IF_A TOPO_IF_B \
		TOPO_MAC_A TOPO_MAC_B TOPO_ADDR_A TOPO_ADDR_B TOPO_PLEN TOPO_NET \
		TOPO_MTU TOPO_MAX_QUEUES TOPO_QUEUES; do
		printf '%s=%q\n' "$v" "${!v:-}"
	done
}

_topo_main() {
	local cmd=${1:-}
	case "$cmd" in
	up)
		if [ $# -lt 2 ] || [ $# -gt 3 ]; then _topo_usage; return 2; fi
		topo_up "$2" "${3:-1}" || return
		topo_vars
		;;
	down)
		if [ $# -ne 2 ]; then _topo_usage; return 2; fi
		topo_down "$2"
		;;
	vars)
		if [ $# -lt 2 ] || [ $# -gt 3 ]; then _topo_usage; return 2; fi
		_topo_check_name "$2" || return
		_topo_names "$2" "${3:-1}"
		topo_vars
		;;
	-h | --help | help)
		sed -n '/^# scripts\/topo.sh/,/^# Knobs/p' "${BASH_SOURCE[0]}" |
			sed 's/^# \{0,1\}//'
		;;
	*)
		_topo_usage
		return 2
		;;
	esac
}

_topo_usage() {
	echo "usage: $(_topo_self) up NAME [IDX] | down NAME | vars NAME [IDX] | --help" >&2
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	if [ "$(id -u)" -ne 0 ] && [ "${1:-}" != vars ] && [ "${1:-}" != --help ] &&
		[ "${1:-}" != -h ] && [ "${1:-}" != help ]; then
		echo "topo: needs root (network namespaces)" >&2
		exit 1
	fi
	_topo_main "$@"
	exit
fi
