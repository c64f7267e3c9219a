#!/usr/bin/env bash
# dpsockd on DPDK's net_tap PMD, unchanged: two workers on a tap with two
# queue pairs, the Linux stack on the kernel side of the tap (in the same
# namespace) as the peer. Unlike af_packet, tap offers RX and TX checksum
# offloads, so this also covers the offload paths: the echo replies leave
# with their IPv4 checksum computed by the PMD.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools dpsockd dpsock-stat
[ -c /dev/net/tun ] || skip "no /dev/net/tun: the tap PMD cannot run here"

name=$TEST_NAME
ns=dps-$name
tap=dpt$$
tap=${tap:0:15}
addr_a=198.18.51.1
ip netns add "$ns" || fail "cannot create namespace $ns"
on_exit ip netns del "$ns"
ip -n "$ns" link set lo up

conf=$TEST_TMP/$name.conf
printf 'name = "%s";\nworkers = [ 0, 1 ];\ninterfaces = ( { port = "net_tap0"; address = "%s/24"; } );\n' \
	"$name" "$addr_a" >"$conf"
# dpsockd_start runs in TOPO_NS_A; here that is the tap's namespace.
TOPO_NS_A=$ns
# shellcheck disable=SC2046
dpsockd_start "$name" "$conf" -l 0-1 --no-pci --vdev="net_tap0,iface=$tap" $(eal_mem_args)

grep -q 'tx cksum ip yes' "$DPSOCKD_LOG" ||
	note "this tap offers no TX IPv4 checksum offload; the software path is used"
# The kernel side of the tap is the Linux peer.
ip -n "$ns" link set "$tap" up
ip -n "$ns" addr add 198.18.51.2/24 dev "$tap"
sent=0
for i in $(seq 1 16); do
	src=198.18.51.$((10 + i))
	ip -n "$ns" addr add "$src/24" dev "$tap"
	out=$(ip netns exec "$ns" "$PINGN" -c 10 -i 0.005 -I "$src" "$addr_a") ||
		fail "pings from $src lost: $out"
	sent=$((sent + 10))
done
wait_counter_ge "$name" icmp_echo "$sent" 5
got=$(stat_sum "$name" icmp_echo)
[ "$got" -eq "$sent" ] || fail "sent $sent echo requests, workers counted $got"
w0=$(stat_get "$name" worker.0.icmp_echo)
w1=$(stat_get "$name" worker.1.icmp_echo)
[ "$w0" -gt 0 ] && [ "$w1" -gt 0 ] || fail "pings not spread over both workers: $w0 / $w1"
ok "$sent pings over tap answered; worker 0 saw $w0, worker 1 saw $w1"

dpsockd_stop_clean
pass "net_tap: two workers answered the kernel peer; clean stop"
