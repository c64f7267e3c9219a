#!/usr/bin/env bash
# Malformed and hostile TCP/UDP against dpsock-echo --raw (port 7, TCP and
# UDP, one worker so that every frame meets the same lwIP instance).
#
# Stateless (badframes --list-l4, 3 frames per case, from namespace B; every
# answer captured with tcpdump in B):
#   tcp_doff_short, tcp_doff_long, tcp_trunc, tcp_synfin, tcp_synrst,
#   udp_len_long, udp_len_short: dropped, the named counter rises by exactly
#   3, and nothing is sent back;
#   tcp_opt_zero, tcp_opt_overrun: answered with a SYN-ACK without window
#   scaling or SACK (option parsing stops at the malformed option, as Linux
#   does); tcp_opt_mss_cut: SYN-ACK with them (parsed before the cut
#   option); tcp_opt_ok (control): SYN-ACK with them. B's kernel resets
#   these half-open connections (it has no socket for them);
#   udp_len_pad (control): echoed with exactly the 12 bytes the length
#   field covers.
# Stateful (tcpinject.py, on a live connection from B's Linux stack):
#   out-of-window RST (silently dropped), in-window RST (challenge ACK), SYN
#   (challenge ACK), far out-of-window data (ACK): the connection echoes
#   after each, no RST from dpsock, challenge ACKs checked in the capture.
# Then dpsock still answers TCP, UDP and ping, and stops with every mbuf
# back. Every check runs; the test fails at the end if any failed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

require_root
require_cmd ip python3 tcpdump socat
require_tools dpsock-echo dpsock-stat badframes
ECHO=$(dpsock_tool dpsock-echo)
TCPINJECT=$DPSOCK_SRC/test/tools/tcpinject.py
[ -r "$TCPINJECT" ] || fail "missing $TCPINJECT"
N=3
PORT=7

name=$TEST_NAME
test_topo_up 75
conf=$(dpsock_conf "$name" 'workers = [ 0 ];')

# shellcheck disable=SC2046
app_start "$name" "$conf" "$ECHO" $(DPSOCK_TEST_LCORES=0 DPSOCK_TEST_QPAIRS=1 dpsockd_eal_args "$name") \
	-- --raw -p "$PORT"
log=$APP_LOG

FAILED=()
soft_fail() {
	echo "FAIL (continuing): $*" >&2
	FAILED+=("$*")
}
tcp_echo_ok() {
	local m="probe-$RANDOM-$1" got
	got=$(printf '%s' "$m" | in_b timeout 5 socat -t 1 - "TCP:$TOPO_ADDR_A:$PORT" 2>&1) || true
	[ "$got" = "$m" ]
}
udp_echo_ok() {
	local m="udp-$RANDOM-$1" got
	got=$(printf '%s' "$m" | in_b timeout 5 socat -t 1 - "UDP:$TOPO_ADDR_A:$PORT" 2>&1) || true
	[ "$got" = "$m" ]
}
tcp_echo_ok start || fail "dpsock-echo does not echo over TCP at the start"
udp_echo_ok start || fail "dpsock-echo does not echo over UDP at the start"

# ---- stateless -----------------------------------------------------------------
pcap=$TEST_TMP/stateless.pcap
in_b tcpdump -i "$TOPO_IF_B" -nn -U -w "$pcap" "src host $TOPO_ADDR_A and (tcp or udp or icmp)" \
	>"$TEST_TMP/tcpdump.out" 2>&1 &
td_pid=$!
on_exit "kill $td_pid 2>/dev/null || true"
poll_until 10 grep -q 'listening on' "$TEST_TMP/tcpdump.out" || fail "tcpdump did not start"

# sport_base CASE: badframes' first source port for an L4 case: 41000 +
# 100 * its index in the case table (--list-all, then --list-l4, in order)
sport_base() {
	local idx
	idx=$({ "$BADFRAMES" --list-all; "$BADFRAMES" --list-l4; } |
		awk -v c="$1" '$1 == c { print NR - 1; exit }')
	echo $((41000 + 100 * idx))
}
declare -A BASE=()
while read -r case counter _; do
	BASE[$case]=$(sport_base "$case")
	before=$( [ "$counter" = - ] || stat_sum "$name" "$counter")
	badframes_send "$N" -p "$PORT" "$case" >/dev/null
	if [ "$counter" = - ]; then
		sleep 0.3
		note "$case: sent $N (answer checked below)"
		continue
	fi
	poll_until 2 eval '[ "$(stat_sum "$name" '"$counter"')" -ge '"$((before + N))"' ]' || true
	sleep 0.2 # anything more than N?
	after=$(stat_sum "$name" "$counter")
	if [ $((after - before)) -eq "$N" ]; then
		ok "$case: $counter rose by $N"
	else
		soft_fail "$case: $counter rose by $((after - before)), expected $N"
	fi
done < <("$BADFRAMES" --list-l4)
sleep 1 # SYN-ACK retransmissions would show up within the 1 s RTO
kill "$td_pid" 2>/dev/null || true
wait "$td_pid" 2>/dev/null || true
answers=$(tcpdump -nn -v -r "$pcap" 2>/dev/null | paste -d ' ' - - || true)

# first LINES: the first line of LINES, shortened
first() { head -n 1 <<<"$1" | sed -E 's/  +/ /g; s/^[0-9:.]+ IP \(.*, length [0-9]+\) //' | cut -c 1-200; }
# answers_to CASE: the lines of dpsock's answers to that case's source ports
answers_to() {
	local b=${BASE[$1]} p out=
	for ((p = b; p < b + N; p++)); do
		out+=$(grep -E "\\.$PORT > $TOPO_ADDR_B\\.$p: " <<<"$answers" || true)
		out+=$'\n'
	done
	# ICMP errors quote the offending datagram ("... .PORT_B > ... .7")
	for ((p = b; p < b + N; p++)); do
		out+=$(grep -E "ICMP.*$TOPO_ADDR_B\\.$p > $TOPO_ADDR_A\\.$PORT" <<<"$answers" || true)
		out+=$'\n'
	done
	grep -v '^$' <<<"$out" || true
}
while read -r case counter _; do
	a=$(answers_to "$case")
	na=$(grep -c . <<<"$a" || true)
	case $case in
	tcp_opt_zero | tcp_opt_overrun)
		syn_acks=$(grep -c 'Flags \[S\.\]' <<<"$a" || true)
		if [ "$syn_acks" -lt "$N" ]; then
			soft_fail "$case: $syn_acks SYN-ACKs for $N SYNs: $(first "$a")"
		elif grep -q 'wscale\|sackOK' <<<"$a"; then
			soft_fail "$case: the SYN-ACK carries options that followed the malformed one: $(first "$a")"
		else
			ok "$case: answered with SYN-ACKs without wscale/sackOK (options after the malformed one ignored)"
		fi
		;;
	tcp_opt_mss_cut | tcp_opt_ok)
		syn_acks=$(grep -c 'Flags \[S\.\]' <<<"$a" || true)
		if [ "$syn_acks" -lt "$N" ] || ! grep -q 'wscale 7' <<<"$a" || ! grep -q sackOK <<<"$a"; then
			soft_fail "$case: expected $N SYN-ACKs with wscale and sackOK, got $na answer(s): $(first "${a:-none}")"
		else
			ok "$case: answered with SYN-ACKs with wscale and sackOK"
		fi
		;;
	udp_len_pad)
		if [ "$(grep -c 'UDP, length 12$' <<<"$a" || true)" -eq "$N" ] && [ "$na" -eq "$N" ]; then
			ok "$case: echoed with the 12 bytes the UDP length covers"
		else
			soft_fail "$case: expected $N UDP echoes of 12 bytes, got $na answer(s): $(first "${a:-none}")"
		fi
		;;
	*)
		if [ "$na" -eq 0 ]; then
			ok "$case: no answer"
		else
			soft_fail "$case: dropped frames must not be answered; dpsock sent $na answer(s): $(first "$a")"
		fi
		;;
	esac
done < <("$BADFRAMES" --list-l4)
# B's kernel resets the half-open connections; none may stay behind
wait_until 10 eval '[ "$(stat_sum "$name" tcp_conns)" -eq 0 ]'
tcp_echo_ok stateless || soft_fail "no TCP echo after the stateless frames"
udp_echo_ok stateless || soft_fail "no UDP echo after the stateless frames"

# ---- stateful --------------------------------------------------------------------
pcap2=$TEST_TMP/stateful.pcap
in_b tcpdump -i "$TOPO_IF_B" -nn -U -w "$pcap2" "tcp port $PORT" >"$TEST_TMP/tcpdump2.out" 2>&1 &
td2_pid=$!
on_exit "kill $td2_pid 2>/dev/null || true"
poll_until 10 grep -q 'listening on' "$TEST_TMP/tcpdump2.out" || fail "tcpdump did not start"
reset0=$(stat_sum "$name" tcp_reset)
rc=0
out=$(in_b python3 "$TCPINJECT" -i "$TOPO_IF_B" -d "$TOPO_ADDR_A" -p "$PORT" 2>&1) || rc=$?
echo "$out"
sleep 0.3
kill "$td2_pid" 2>/dev/null || true
wait "$td2_pid" 2>/dev/null || true
[ "$rc" -eq 0 ] || soft_fail "stateful injection: $(grep -c FAILED <<<"$out") case(s) failed"
# independent look at the capture: dpsock never reset the connection
rst=$(tcpdump -nn -r "$pcap2" 2>/dev/null | grep -E "^.* $TOPO_ADDR_A\\.$PORT > .*Flags \[R" || true)
[ -z "$rst" ] || soft_fail "dpsock sent RST on the injected connection: $rst"
reset1=$(stat_sum "$name" tcp_reset)
[ "$reset1" -eq "$reset0" ] || soft_fail "tcp_reset rose by $((reset1 - reset0)): a connection was reset"
acks=$(tcpdump -nn -r "$pcap2" 2>/dev/null | grep -cE " $TOPO_ADDR_A\\.$PORT > .*Flags \[\.\], ack [0-9]+, win [0-9]+, .*length 0" || true)
note "capture: $acks pure ACKs from dpsock on port $PORT (echo ACKs included)"

# ---- still alive -------------------------------------------------------------------
tcp_echo_ok end || soft_fail "no TCP echo at the end"
udp_echo_ok end || soft_fail "no UDP echo at the end"
out=$(in_b ping -q -c 5 -i 0.05 -W 2 "$TOPO_ADDR_A") || soft_fail "no ping reply at the end: $out"
rc=0
app_stop || rc=$?
[ "$rc" -eq 0 ] || soft_fail "dpsock-echo exited with status $rc (3 = mbuf leak, 134 = abort)"
grep -q 'all [0-9]* mbufs back in the pool' "$log" || soft_fail "no 'mbufs back' line in the log"

[ ${#FAILED[@]} -eq 0 ] || fail "${#FAILED[@]} check(s) failed:$(printf '\n  - %s' "${FAILED[@]}")"
pass "malformed TCP/UDP dropped and counted or answered like Linux; injected RST/SYN/data handled per RFC 5961; still serving"
