#!/usr/bin/env bash
# dpsockd refuses bad start-up conditions with a clear message and a
# non-zero exit, and leaves nothing behind: a bad config (file:line:key), an
# unknown port (the ports that exist are listed), a worker lcore EAL does not
# have, more workers than the port has queues, an interface without address
# (shared with the kernel) on a port that cannot share (af_packet, memif),
# no hugepages (what to run);
# on AF_XDP (where it can run): no BPF filesystem, more workers than AF_XDP
# queues, a vdev on a queue the interface lacks, two vdevs on one queue;
# a second start of a running instance's name (on the tests' port, AF_XDP
# where it runs): refused before EAL with the holder's pid, and the
# running instance still answers; a clean stop leaves no lock file.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip unshare timeout
require_tools dpsockd
name=$TEST_NAME
test_topo_up 42
dir=$TEST_TMP
dpsockd=$DPSOCKD

# expect_fail DESCRIPTION EXPECTED_SUBSTRING COMMAND...
expect_fail() {
	local what=$1 want=$2 out rc=0
	shift 2
	out=$(timeout 60 "$@" 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "$what: dpsockd exited 0; output: $out"
	[ "$rc" -ne 124 ] || fail "$what: dpsockd hung (timeout)"
	echo "$out" | grep -qF -- "$want" || fail "$what: message lacks '$want'; output: $out"
	[ ! -e "/dev/shm/dpsock.$name.stats" ] || fail "$what: stats segment left behind"
	[ ! -e "/var/run/dpdk/$name" ] || fail "$what: EAL runtime directory left behind"
	ok "$what: exit $rc, '$want'"
}

eal=(--no-huge -m 256 --no-pci --file-prefix "$name" --log-level=lib.eal:error)
vdev="--vdev=net_af_packet0,iface=$TOPO_IF_A,qpairs=1"

printf 'name = "%s";\nworker = { rx_burst = 5000; };\ninterfaces = ( { port = "net_af_packet0"; address = "%s/24"; } );\n' \
	"$name" "$TOPO_ADDR_A" >"$dir/bad.conf"
expect_fail "bad config" "$dir/bad.conf:2: worker.rx_burst" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" "$vdev" -- -f "$dir/bad.conf"

expect_fail "missing config" "$dir/none.conf" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" "$vdev" -- -f "$dir/none.conf"

printf 'name = "%s";\ninterfaces = ( { port = "net_nosuch0"; address = "%s/24"; } );\n' \
	"$name" "$TOPO_ADDR_A" >"$dir/port.conf"
expect_fail "unknown port" "ports that exist: net_af_packet0" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" "$vdev" -- -f "$dir/port.conf"

printf 'name = "%s";\nworkers = [ 7 ];\ninterfaces = ( { port = "net_af_packet0"; address = "%s/24"; } );\n' \
	"$name" "$TOPO_ADDR_A" >"$dir/lcore.conf"
expect_fail "lcore not in EAL's list" "lcore 7 is not one of EAL's lcores" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" "$vdev" -- -f "$dir/lcore.conf"

printf 'name = "%s";\nworkers = [ 0, 1 ];\ninterfaces = ( { port = "net_af_packet0"; address = "%s/24"; } );\n' \
	"$name" "$TOPO_ADDR_A" >"$dir/queues.conf"
printf 'name = "%s";\ninterfaces = ( { port = "net_af_packet0"; address = "%s/24"; } );\n' \
	"$name" "$TOPO_ADDR_A" >"$dir/lcore.conf.ok"
expect_fail "more workers than queues" "2 workers need one pair each" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0-1 "${eal[@]}" "$vdev" -- -f "$dir/queues.conf"

# an interface without address shares its netdev with the kernel, which
# af_packet cannot (the kernel sees every frame it sees): refused, with what
# to do instead; and a port with no netdev at all (memif) cannot follow one
printf 'name = "%s";\ninterfaces = ( { port = "net_af_packet0"; } );\n' "$name" >"$dir/share.conf"
expect_fail "af_packet shared with the kernel" "give the interface an address to own the port alone" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" "$vdev" -- -f "$dir/share.conf"
printf 'name = "%s";\ninterfaces = ( { port = "net_memif0"; } );\n' "$name" >"$dir/share-memif.conf"
expect_fail "memif shared with the kernel" "give the interface an address" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" \
	"--vdev=net_memif0,role=server,socket=$dir/memif.sock,socket-abstract=no" -- -f "$dir/share-memif.conf"

# af_packet fans packets out over all its qpairs: fewer workers would lose
# the flows hashed to the unread queues.
expect_fail "fewer workers than af_packet queues" "would leave some unread" \
	ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" \
	"--vdev=net_af_packet0,iface=$TOPO_IF_A,qpairs=2" -- -f "$dir/lcore.conf.ok"

# No hugepages: a private mount namespace where hugetlbfs is not mounted.
expect_fail "no hugepages" "add --no-huge to the EAL options" \
	unshare -m sh -c "umount -l /dev/hugepages 2>/dev/null; \
		exec ip netns exec $TOPO_NS_A $dpsockd -l 0 --no-pci --file-prefix $name $vdev -- -f $dir/queues.conf"

# AF_XDP: what the kernel side lacks is said before any queue exists.
if [ -n "$TEST_PMD_WHY" ]; then
	note "AF_XDP cases not run: $TEST_PMD_WHY"
else
	xdp0="--vdev=net_af_xdp0,iface=$TOPO_IF_A,start_queue=0,queue_count=1"
	xdp1="--vdev=net_af_xdp1,iface=$TOPO_IF_A,start_queue=1,queue_count=1"
	printf 'name = "%s";\ninterfaces = ( { port = "net_af_xdp0"; address = "%s/24"; } );\n' \
		"$name" "$TOPO_ADDR_A" >"$dir/xdp.conf"
	printf 'name = "%s";\nworkers = [ 0, 1 ];\ninterfaces = ( { port = "net_af_xdp0"; address = "%s/24"; } );\n' \
		"$name" "$TOPO_ADDR_A" >"$dir/xdp2.conf"
	# `ip netns exec` mounts a fresh /sys: no bpffs at /sys/fs/bpf there
	expect_fail "AF_XDP without a BPF filesystem" "no BPF filesystem at /sys/fs/bpf" \
		ip netns exec "$TOPO_NS_A" "$dpsockd" -l 0 "${eal[@]}" "$xdp0" -- -f "$dir/xdp.conf"
	# in namespace A with a bpffs mounted (as app_start does)
	# shellcheck disable=SC2016 # expanded by the inner sh
	in_bpffs=(ip netns exec "$TOPO_NS_A" sh -c 'mount -t bpf bpf /sys/fs/bpf && exec "$0" "$@"')
	expect_fail "AF_XDP: more workers than queues" "2 workers need one pair each (AF_XDP" \
		"${in_bpffs[@]}" "$dpsockd" -l 0-1 "${eal[@]}" "$xdp0" -- -f "$dir/xdp2.conf"
	topo_queues 1
	expect_fail "AF_XDP: a vdev on a queue the interface lacks" "net_af_xdp1 reads queues 1-1 of $TOPO_IF_A, which has 1 RX queue(s)" \
		"${in_bpffs[@]}" "$dpsockd" -l 0-1 "${eal[@]}" "$xdp0" "$xdp1" -- -f "$dir/xdp2.conf"
	topo_queues 2
	expect_fail "AF_XDP: two vdevs on one queue" "starts at queue 0 of $TOPO_IF_A, which the vdev before it already reads" \
		"${in_bpffs[@]}" "$dpsockd" -l 0-1 "${eal[@]}" "$xdp0" "${xdp1/start_queue=1/start_queue=0}" -- -f "$dir/xdp2.conf"
fi

# ---- a second start of a running instance's name ------------------------------
conf=$(dpsock_conf "$name" "runtime_dir = \"$TEST_TMP\";")
# shellcheck disable=SC2207
args=($(DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$name"))
dpsockd_start "$name" "$conf" "${args[@]}"
wait_until 10 test -S "$TEST_TMP/$name.sock"
in_b ping -c 2 -i 0.2 -W 2 "$TOPO_ADDR_A" >/dev/null || fail "the first instance does not answer ping"
rc=0
out=$(timeout 60 ip netns exec "$TOPO_NS_A" "$dpsockd" "${args[@]}" -- -f "$conf" 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "a second start of '$name': exit $rc: $out"
grep -qF "an instance named '$name' is running (pid $DPSOCKD_PID, dpsockd" <<<"$out" ||
	fail "a second start does not name the running instance: $out"
! grep -q '^EAL:' <<<"$out" || fail "a second start ran EAL (it probed the ports): $out"
in_b ping -c 2 -i 0.2 -W 2 "$TOPO_ADDR_A" >/dev/null ||
	fail "the running instance stopped answering after a second start of its name"
dpsockd_stop_clean
ok "a second start of the name: exit 1 before EAL, naming pid $DPSOCKD_PID; the running instance still answers"

out=$("$dpsockd" -- --version) || fail "--version failed"
echo "$out" | grep -q '^dpsockd ' || fail "--version printed '$out'"
# whole outputs first: grep -q stops reading at its match, and a writer with
# more than one buffer left then dies of SIGPIPE (pipefail: a false failure)
out=$("$dpsockd" -- --help) || fail "--help failed"
grep -q 'Usage: ' <<<"$out" || fail "--help printed no usage"
out=$("$dpsockd" -- --help-config) || fail "--help-config failed"
grep -q 'memory.mbufs' <<<"$out" || fail "--help-config lacks memory.mbufs"
pass "--version, --help, --help-config work without EAL"
