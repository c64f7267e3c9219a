#!/usr/bin/env bash
# dpsockd on the test port (lib.sh: net_af_xdp, else net_af_packet) with two
# queues over a veth in namespace A, two workers
# (the main lcore is one of them); the Linux stack in namespace B is the peer.
#
# Shows: 1000 pings answered with none lost; B's ARP entry for dpsockd's
# address carries the port's MAC; pings from many source addresses land on
# both workers and every echo request is counted exactly once; each kind of
# malformed frame is counted under its own drop counter, and dpsockd keeps
# answering; SIGTERM stops it with every mbuf back and no shared memory left.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3
require_tools dpsockd dpsock-stat badframes
name=$TEST_NAME
test_topo_up 41
conf=$(dpsock_conf "$name" 'workers = [ 0, 1 ];')
# Two workers on two lcores: the main lcore is worker 0 (its control tasks
# in between), lcore 1 is worker 1; the flows spread over the 2 queues by a
# hash (the veth's TX queue choice under AF_XDP, af_packet's fanout).
# shellcheck disable=SC2046
dpsockd_start "$name" "$conf" $(DPSOCK_TEST_LCORES=0-1 DPSOCK_TEST_QPAIRS=2 dpsockd_eal_args "$name")

nw=$(stat_get "$name" daemon.0.workers)
[ "$nw" = 2 ] || fail "expected 2 workers, dpsock-stat shows $nw"

# 1. 1000 pings, none lost (PINGN: see lib.sh, in_b).
# what the stack saw, for a failure: echo requests, ARP drops, port drops
counters() {
	"$DPSOCK_STAT" -n "$name" 2>/dev/null | grep -E 'icmp_echo|etharp|rx_missed|rx_nombuf|tx_drop|tx_errors|steer' |
		grep -v ' 0$' | tr '\n' ' '
}
out=$(in_b "$PINGN" -c 1000 -i 0.002 "$TOPO_ADDR_A") || fail "pings lost: $out; $(counters)"
ok "1000 pings, 1000 answered"

# 2. B's ARP entry for dpsockd's address is the port's MAC.
neigh=$(ip -n "$TOPO_NS_B" neigh show "$TOPO_ADDR_A" dev "$TOPO_IF_B")
echo "$neigh" | grep -qi "lladdr $TOPO_MAC_A " || fail "ARP entry '$neigh' does not carry $TOPO_MAC_A"
echo "$neigh" | grep -qE 'REACHABLE|STALE|DELAY|PROBE' || fail "ARP entry not valid: $neigh"
ok "ARP entry: $neigh"

# 3. Several flows: every echo request counted once, both workers answer.
echo_before=$(stat_sum "$name" icmp_echo)
sent=0
for i in $(seq 1 16); do
	topo_add_peer_addr "$i"
done
for i in $(seq 1 16); do
	src=$(topo_peer_addr "$i")
	out=$(in_b "$PINGN" -c 20 -i 0.005 -I "$src" "$TOPO_ADDR_A") ||
		fail "pings from $src lost: $out"
	sent=$((sent + 20))
done
wait_counter_ge "$name" icmp_echo $((echo_before + sent)) 5
echo_after=$(stat_sum "$name" icmp_echo)
[ $((echo_after - echo_before)) -eq "$sent" ] ||
	fail "sent $sent echo requests, workers counted $((echo_after - echo_before))"
w0=$(stat_get "$name" worker.0.icmp_echo)
w1=$(stat_get "$name" worker.1.icmp_echo)
[ "$w0" -gt 0 ] && [ "$w1" -gt 0 ] || fail "pings not spread over both workers: $w0 / $w1"
wait_counter_ge "$name" lwip_icmp_xmit "$echo_after" 5
ok "$sent pings from 16 sources; worker 0 saw $w0, worker 1 saw $w1 echo requests in all"

# 4. Malformed frames: each is counted under its name and dropped.
n=5
while read -r case counter _; do
	before=$(stat_sum "$name" "$counter")
	badframes_send "$n" "$case" >/dev/null
	wait_counter_ge "$name" "$counter" $((before + n)) 5
	after=$(stat_sum "$name" "$counter")
	[ $((after - before)) -eq "$n" ] ||
		fail "$case: $counter rose by $((after - before)), expected $n"
	ok "$case: $n frames counted in $counter"
done < <("$BADFRAMES" --list)
out=$(in_b "$PINGN" -c 20 -i 0.01 "$TOPO_ADDR_A") ||
	fail "pings lost after malformed frames: $out"
ok "still answering after malformed frames"

# 5. SIGTERM: clean stop, nothing leaked, nothing left behind.
dpsockd_stop_clean
leftover=$(find /dev/hugepages /var/run/dpdk -maxdepth 1 -name "$name*" 2>/dev/null || true)
[ -z "$leftover" ] || fail "EAL files left behind: $leftover"
pass "SIGTERM: clean stop, no leak, no shared memory left"
