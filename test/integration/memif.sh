#!/usr/bin/env bash
# dpsockd on DPDK's net_memif PMD, unchanged. memif joins two DPDK
# processes, so DPDK's own testpmd bridges the veth to the memif:
#
#   Linux (ns B) ─veth─► testpmd: af_packet ⇄ memif (server, io forwarding)
#                                        ⇅ shared memory
#                               dpsockd: memif (client), lwIP
#
# The Linux peer pings dpsockd's address and resolves it over ARP through
# that path; dpsockd stops cleanly afterwards. testpmd polls one core for
# the few seconds the test runs.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 dpdk-testpmd timeout
require_tools dpsockd dpsock-stat
name=$TEST_NAME
test_topo_up 50
sock=$TEST_TMP/memif.sock

# testpmd: lcore 0 for its command loop, lcore 1 forwards; bounded by timeout.
ip netns exec "$TOPO_NS_A" timeout 120 dpdk-testpmd -l 0-1 --no-pci --in-memory \
	--file-prefix "${name}p" $(eal_mem_args) \
	--vdev="net_af_packet0,iface=$TOPO_IF_A" \
	--vdev="net_memif0,role=server,socket=$sock,socket-abstract=no" \
	-- --forward-mode=io --auto-start --stats-period 60 --no-mlockall \
	>"$TEST_TMP/testpmd.log" 2>&1 </dev/null &
testpmd=$!
# (EAL leaves testpmd's empty runtime directory behind when it is killed)
on_exit "kill $testpmd 2>/dev/null; wait $testpmd 2>/dev/null; rm -rf /var/run/dpdk/${name}p; true"
# The server's socket file exists from testpmd's probe on, but its memif
# port takes a client only once started (before that, DPDK 22.11 answers
# the client's INIT with a disconnect, and a client never tries again):
# wait until testpmd started its ports, which it logs before checking links.
wait_until 20 grep -q 'Checking link statuses' "$TEST_TMP/testpmd.log"
test -S "$sock" || fail "testpmd started its ports but $sock is not a socket"

conf=$(printf 'name = "%s";\ninterfaces = ( { port = "net_memif0"; address = "%s/24"; } );\n' \
	"$name" "$TOPO_ADDR_A" >"$TEST_TMP/$name.conf"; echo "$TEST_TMP/$name.conf")
# shellcheck disable=SC2046
dpsockd_start "$name" "$conf" -l 0 --no-pci \
	--vdev="net_memif0,role=client,socket=$sock,socket-abstract=no" $(eal_mem_args)

# memif connects after start-up: wait for the link before talking.
wait_counter_ge "$name" port.0.link_up 1 20
out=$(in_b "$PINGN" -c 50 -i 0.01 "$TOPO_ADDR_A") || fail "pings lost through memif: $out"
wait_counter_ge "$name" icmp_echo 50 5
neigh=$(ip -n "$TOPO_NS_B" neigh show "$TOPO_ADDR_A" dev "$TOPO_IF_B")
echo "$neigh" | grep -qi "lladdr " || fail "no ARP entry for $TOPO_ADDR_A: $neigh"
ok "50 pings through testpmd and memif answered; ARP: $neigh"

dpsockd_stop_clean
pass "net_memif: dpsockd answered the Linux peer through memif; clean stop"
