#!/usr/bin/env bash
# dpsockd goes away under preloaded programs blocked in every kind of wait:
# each call returns at once with the error docs/preload.md names, and no
# program spins afterwards. Once with SIGTERM (a clean stop), once with
# SIGKILL (only the control socket's hang-up tells), and once killed
# (SIGKILL) in the middle of a takeover: its control thread frozen for the
# hand-over, before the image went (DPSOCK_TAKEOVER_FAULT=holder-stall-frozen
# keeps it there), the new dpsockd waiting for it; the new one then exits 1 saying
# the running instance went away, and the programs get what SIGKILL gives.
#
# The programs are test/tools/pl_block (one process per call, under the
# shim in namespace A), each blocked in its call when dpsockd stops:
#   UDP bound on A:  recvfrom, recvmsg, recvmmsg, read, poll, select, epoll
#                    — and then called again, as sockperf's server loop does
#   TCP listener:    accept, epoll — called again, as nginx does
#   TCP connection to the Linux peer in B (which never writes): recv, poll,
#                    select, epoll; one blocked in send (the peer never
#                    reads); one blocked in connect (B drops its SYNs)
# and unmodified `sockperf sr` (UDP), blocked in recvfrom.
# Checked for each: the first outcome after the stop is the documented error
# (or the wait's readiness), within 1 s; afterwards the process uses < 10 %
# of a CPU (utime + stime over 2 s, /proc/PID/stat): a call that kept
# failing at once, a wait that kept waking, would show as ~100 %. Then A's
# kernel takes the address: the UDP socket blocked in recvfrom receives a
# datagram from B and the program blocked in accept() gets B's connection,
# through the kernel (the sockets fell back to their kernel sockets).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip nft python3
require_preload
require_tools pl_block
PLB=$(dpsock_tool pl_block)
test_topo_up 112
hz=$(getconf CLK_TCK)

# the peer: a TCP server that accepts and holds (never reads or writes), and
# a port whose SYNs B drops (a connect that stays in progress)
peer_start holdsrv python3 "$DPSOCK_SRC/test/tools/hold_server.py" "$TOPO_ADDR_B" 9100 4096
wait_until 10 grep -q listening "$TEST_TMP/holdsrv.log"
in_b nft -f - <<EOF
table ip plgone {
	chain in {
		type filter hook input priority 0;
		tcp dport 9101 drop
	}
}
EOF

# cpu_ticks PID: utime + stime so far
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo gone; }

# the expected first outcome after the stop, per mode (a readiness wait
# reports the socket ready: its error comes with the read that follows)
declare -A want=(
	[udp-recvfrom]=ECONNRESET [udp-recvmsg]=ECONNRESET [udp-recvmmsg]=ECONNRESET [udp-read]=ECONNRESET
	[udp-poll]=returned [udp-select]=returned [udp-epoll]=returned
	[tcp-accept]=ECONNABORTED [tcp-accept-epoll]=returned
	[tcp-recv]=ECONNRESET [tcp-poll]=ECONNRESET [tcp-select]=ECONNRESET [tcp-epoll]=ECONNRESET
	[tcp-send]=EPIPE [tcp-connect]=ECONNREFUSED
)
modes=(udp-recvfrom udp-recvmsg udp-recvmmsg udp-read udp-poll udp-select udp-epoll
	tcp-accept tcp-accept-epoll tcp-recv tcp-poll tcp-select tcp-epoll tcp-send tcp-connect)

round=0
for sig in TERM KILL TKO; do
	round=$((round + 1))
	case "$sig" in TKO) label="SIGKILL mid-takeover" ;; *) label=SIG$sig ;; esac
	if [ "$sig" = TKO ]; then
		DPSOCK_TAKEOVER_FAULT=holder-stall-frozen preload_daemon_start "$(unique_name "$round")"
	else
		preload_daemon_start "$(unique_name "$round")"
	fi
	declare -A pid=()
	port=9300
	for m in "${modes[@]}"; do
		port=$((port + 1))
		case "$m" in
		udp-* | tcp-accept*) args=("$TOPO_ADDR_A" "$port") ;;
		tcp-connect) args=("$TOPO_ADDR_B" 9101) ;;
		*) args=("$TOPO_ADDR_B" 9100) ;;
		esac
		preload_start "$m-$sig" "$PLB" "$m" "${args[@]}"
		pid[$m]=$PRELOAD_PID
	done
	preload_start "sockperf-$sig" sockperf sr -i "$TOPO_ADDR_A" -p 9399
	pid[sockperf]=$PRELOAD_PID
	for m in "${modes[@]}"; do
		wait_until 20 grep -q '^ready' "$TEST_TMP/$m-$sig.log" ||
			fail "$m never got ready: $(tail -n 3 "$TEST_TMP/$m-$sig.log" | tr '\n' ' ')"
	done
	wait_until 20 grep -qi 'warmup\|waiting\|listen' "$TEST_TMP/sockperf-$sig.log" ||
		fail "sockperf sr did not start: $(tail -n 3 "$TEST_TMP/sockperf-$sig.log" | tr '\n' ' ')"
	# offloaded, every one: their sockets are dpsockd's
	wait_until 10 bash -c "[ \$(\"$DPSOCK_STAT\" -n $PRELOAD_NAME -v sockets 2>/dev/null | grep -c ':93[0-9][0-9] ') -ge 9 ]" ||
		fail "the bound UDP sockets and listeners are not all in dpsockd's socket view"
	sleep 0.5 # past every spin budget: asleep in their calls
	for m in "${modes[@]}"; do
		# a program blocked in its call has made no new outcome line
		[ "$(grep -c '^\(error\|returned\)' "$TEST_TMP/$m-$sig.log")" = 0 ] ||
			fail "$m was not blocked before the stop: $(tail -n 2 "$TEST_TMP/$m-$sig.log" | tr '\n' ' ')"
	done

	rc=0
	if [ "$sig" = TKO ]; then
		holder_log=$DPSOCKD_LOG
		_lib_takeover_spawn "$PRELOAD_NAME" "$PRELOAD_CONF" "${PRELOAD_EAL[@]}"
		wait_until 30 grep -q 'DPSOCK_TAKEOVER_FAULT=holder-stall-frozen: stalled' "$holder_log" ||
			fail "the holder never froze for the takeover: $(tail -n 3 "$holder_log" | tr '\n' ' ')"
		dpsockd_stop "$PRELOAD_NAME" KILL || true
		poll_until 15 _lib_dead "$TAKEOVER_PID" ||
			fail "the new dpsockd (pid $TAKEOVER_PID) still runs 15 s after its holder was killed"
		wait "$TAKEOVER_PID" 2>/dev/null || rc=$?
		unset '_LIB_DAEMON_PID[$TAKEOVER_KEY]'
		[ "$rc" -eq 1 ] && grep -q 'went away\|takeover refused' "$TAKEOVER_LOG" ||
			fail "the new dpsockd, its holder killed mid-takeover: status $rc, $(grep -m1 'dpsockd:' "$TAKEOVER_LOG" || tail -n 1 "$TAKEOVER_LOG")"
		ok "killed frozen for a takeover: the new dpsockd exited 1: $(grep -m1 'went away\|takeover refused' "$TAKEOVER_LOG")"
	else
		dpsockd_stop "$PRELOAD_NAME" "$sig" || rc=$?
	fi
	[ "$sig" != TERM ] || [ "$rc" -eq 0 ] || fail "dpsockd (SIGTERM, programs blocked) exited with status $rc"
	sleep 1
	for m in "${modes[@]}"; do
		line=$(grep -m1 '^\(error\|returned\)' "$TEST_TMP/$m-$sig.log") ||
			fail "$label: $m is still blocked 1 s after dpsockd stopped"
		read -r kind what ms <<<"$line"
		case "${want[$m]}" in
		returned) [ "$kind" = returned ] || fail "$label: $m: the wait failed ($line); it should report the socket" ;;
		*) [ "$kind" = error ] && [ "$what" = "${want[$m]}" ] ||
			fail "$label: $m: first outcome '$line'; docs/preload.md says ${want[$m]}" ;;
		esac
	done
	declare -A t0=()
	for m in "${modes[@]}" sockperf; do t0[$m]=$(cpu_ticks "${pid[$m]}"); done
	sleep 2
	for m in "${modes[@]}" sockperf; do
		t1=$(cpu_ticks "${pid[$m]}")
		[ "$t1" != gone ] && [ "${t0[$m]}" != gone ] || continue # it ended: no CPU at all
		used=$((t1 - t0[$m]))
		[ $((used * 100)) -lt $((2 * hz * 10)) ] ||
			fail "$label: $m used $used of $((2 * hz)) ticks in the 2 s after dpsockd stopped (log: $(tail -n 2 "$TEST_TMP/$m-$sig.log" | tr '\n' ' '))"
	done
	ok "$label: ${#modes[@]} blocked calls and sockperf sr: the documented outcome at once, then < 10 % CPU each"
	# the UDP sockets and listeners are kernel sockets now, on the address
	# the program bound: once A's kernel has it, the kernel serves them
	ip -n "$TOPO_NS_A" addr add "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
	ip -n "$TOPO_NS_B" neigh flush dev "$TOPO_IF_B" 2>/dev/null || true
	in_b python3 -c 'import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x" * 5, (sys.argv[1], 9301))' "$TOPO_ADDR_A"
	wait_until 5 grep -q '^returned 5 ' "$TEST_TMP/udp-recvfrom-$sig.log" ||
		fail "$label: after dpsockd's end, the UDP socket (now the kernel's) did not receive a datagram: $(tail -n 2 "$TEST_TMP/udp-recvfrom-$sig.log" | tr '\n' ' ')"
	wait_tcp_port "$TOPO_NS_B" "$TOPO_ADDR_A" 9308 5 ||
		fail "$label: after dpsockd's end, the listener (now the kernel's) did not accept"
	wait_until 5 grep -q '^returned [0-9]' "$TEST_TMP/tcp-accept-$sig.log" ||
		fail "$label: the program blocked in accept() did not get the kernel's connection: $(tail -n 2 "$TEST_TMP/tcp-accept-$sig.log" | tr '\n' ' ')"
	ok "$label: the UDP socket and the listener carry on as kernel sockets on the address they bound"
	ip -n "$TOPO_NS_A" addr del "$TOPO_ADDR_A/$TOPO_PLEN" dev "$TOPO_IF_A"
	ip -n "$TOPO_NS_B" neigh flush dev "$TOPO_IF_B" 2>/dev/null || true
	for m in "${modes[@]}" sockperf; do kill -KILL "${pid[$m]}" 2>/dev/null || true; done

	unset pid t0
done
pass "dpsockd stopped (SIGTERM), killed (SIGKILL), or killed frozen in a takeover, under 15 kinds of blocked call and sockperf: each returned at once, none spins, UDP sockets and listeners carry on in the kernel"
