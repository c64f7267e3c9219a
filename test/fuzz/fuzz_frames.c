/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness: frames into a worker (stack/worker.c's validation, then
 * lwIP's Ethernet, ARP, IPv4 with options and fragments, ICMP, IGMP, UDP
 * and TCP input; IPv6 with extension headers and fragments, neighbour
 * discovery, ICMPv6, UDP and TCP over IPv6; and the native socket layer above
 * them, stack/sock/sock.c).
 *
 * The stack runs as in dpsockd (fuzz_stack.h): one worker, one port whose
 * RX ring the harness fills, 198.18.0.1/24 and fd00:198:18::1/64. An app on
 * the worker listens on TCP 80 (answers every read with a short response)
 * and 7 (echo) and binds UDP 7 (echo) and 9 (discard), each over IPv4 and
 * IPv6, and opens or acts on connections when the input says so.
 * Every frame the stack sends is checked; after each input all connections
 * are aborted and every mbuf must be back in its pool.
 *
 * Input: records, until the input ends.
 *   0 flags mode len_lo len_hi FRAME[len]   one frame (fuzz_stack.h:
 *                     fuzz_stack_frame_record)
 *   1 n               lwIP's clock moves (n % 64 + 1) * (n & 128 ? 8 : 1)
 *                     timer periods of 25 ms (timers fire as they fall due;
 *                     4096 periods per input at most)
 *   2 port_hi port_lo the app connects to 198.18.0.2:port (16 per input)
 *   3 op arg          the app acts on its socket arg: op % 8 = send arg * 97
 *                     bytes, shut down writing, close, abort, TCP_NODELAY,
 *                     keepalive; 6 and 7: a multicast membership operation
 *                     on UDP 7 (IPv4, IPv6): operation arg >> 4 (mod 6),
 *                     group 239.0.0.(arg & 7) / ff15::(arg & 7), source
 *                     the peer or another (arg & 8); every group is left
 *                     at the input's end
 *   4 port_hi port_lo len_hi len_lo  the app sends a UDP datagram from
 *                     port 7 to 198.18.0.2:port, of len % 4096 bytes, or
 *                     65280 + len % 512 for len >= 0xfe00 (the 65507 limit)
 *   5 n               (n % 8) + 1 more loop iterations
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_stack.h"

#define MAX_SOCKS 16
#define MAX_CONNECTS 16 /* active opens per input (each pcb slows every timer tick) */

int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct dpsock_sock *socks[MAX_SOCKS];
static unsigned int n_socks;
static uint8_t payload[65536];

static void
sock_add(struct dpsock_sock *s)
{
	if (n_socks < MAX_SOCKS)
		socks[n_socks++] = s;
}

static void
sock_del(struct dpsock_sock *s)
{
	unsigned int i;

	for (i = 0; i < n_socks; i++)
		if (socks[i] == s) {
			socks[i] = socks[--n_socks];
			return;
		}
}

/* ---- the app ------------------------------------------------------------ */

static const char http_reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

static int
app_accepted(struct dpsock_sock *l, struct dpsock_sock *c)
{
	sock_add(c);
	return 0;
}

static void
app_connected(struct dpsock_sock *s, int err)
{
	if (err == 0)
		sock_add(s);
}

static void
app_readable(struct dpsock_sock *s, struct dpsock_rx *rx)
{
	union dpsock_sockaddr local; /* sin_port and sin6_port share their place */
	size_t len = dpsock_rx_len(rx), n;
	uint8_t buf[4096];
	struct iovec iov[8];

	FUZZ_CHECK(dpsock_rx_iov(rx, iov, 8) >= 1, "readable with no segment");
	dpsock_sock_local(s, &local);
	if (ntohs(local.in.sin_port) == 80) {
		dpsock_send(s, http_reply, sizeof(http_reply) - 1, 0);
		return;
	}
	/* echo what fits */
	n = dpsock_rx_copy(rx, buf, sizeof(buf), 0);
	FUZZ_CHECK(n == (len < sizeof(buf) ? len : sizeof(buf)), "rx_copy %zu of %zu", n, len);
	dpsock_send(s, buf, n, 0);
}

static void
app_datagram(struct dpsock_sock *s, const union dpsock_sockaddr *from, struct dpsock_rx *rx)
{
	union dpsock_sockaddr local;
	size_t len = dpsock_rx_len(rx), n;

	dpsock_sock_local(s, &local);
	if (ntohs(local.in.sin_port) != 7)
		return;
	n = dpsock_rx_copy(rx, payload, sizeof(payload), 0);
	FUZZ_CHECK(n == len, "rx_copy %zu of %zu", n, len);
	dpsock_udp_sendto(s, payload, n, from);
}

static void
app_closed(struct dpsock_sock *s, int reason)
{
	sock_del(s);
	if (reason == 0)
		dpsock_close(s);
}

static const struct dpsock_sock_ops ops = {
	.accepted = app_accepted,
	.connected = app_connected,
	.readable = app_readable,
	.datagram = app_datagram,
	.closed = app_closed,
};

static struct dpsock_sock *udp7;

static int
app_worker_init(struct dpsock_worker *w, void *arg)
{
	if (dpsock_tcp_listen(w, 80, 16, &ops, NULL) == NULL ||
	    dpsock_tcp_listen(w, 7, 16, &ops, NULL) == NULL ||
	    (udp7 = dpsock_udp_bind(w, 7, &ops, NULL)) == NULL ||
	    dpsock_udp_bind(w, 9, &ops, NULL) == NULL)
		return -1;
	return 0;
}

static const struct dpsock_app app = {
	.name = "fuzz_frames",
	.worker_init = app_worker_init,
};

/* A membership operation on UDP 7: IPv4's (v6 false) or IPv6's. */
static void
mcast_op(bool v6, uint8_t arg)
{
	int op = DPSOCK_MCAST_JOIN + (arg >> 4) % 6;
	uint32_t src = htonl(arg & 8 ? FUZZ_PEER_IP + 1 : FUZZ_PEER_IP);
	struct in6_addr g6 = { .s6_addr = { 0xff, 0x15, [15] = (uint8_t)(arg & 7) } };
	struct in6_addr s6 = { .s6_addr = { 0xfd, 0x00, 0x01, 0x98, 0x00, 0x18,
					    [15] = (uint8_t)(arg & 8 ? 3 : 2) } };

	if (v6)
		dpsock_udp_mcast6(udp7, op, &g6, 0, &s6);
	else
		dpsock_udp_mcast(udp7, op, htonl(0xef000000u | (arg & 7)), 0, src);
}

/* Leave every group mcast_op may have joined. */
static void
mcast_leave_all(void)
{
	for (uint8_t g = 0; g < 8; g++) {
		mcast_op(false, (uint8_t)(1 << 4 | g));
		mcast_op(true, (uint8_t)(1 << 4 | g));
	}
}

static void
app_op(uint8_t op, uint8_t arg)
{
	struct dpsock_sock *s;

	if (op % 8 >= 6) {
		mcast_op(op % 8 == 7, arg);
		return;
	}
	if (n_socks == 0)
		return;
	s = socks[arg % n_socks];
	switch (op % 8) {
	case 0:
		dpsock_send(s, payload, (size_t)arg * 97, 0);
		break;
	case 1:
		dpsock_shutdown_write(s);
		break;
	case 2:
		sock_del(s);
		dpsock_close(s);
		break;
	case 3:
		sock_del(s);
		dpsock_abort(s);
		break;
	case 4:
		dpsock_set_nodelay(s, arg & 1);
		break;
	default:
		dpsock_set_keepalive(s, arg & 1, 1 + arg % 3, 1, 1 + arg % 2);
		break;
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	unsigned int i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	fuzz_stack_init(NULL, &app);
	fuzz_stack_reset();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t n = size, used;
	unsigned int connects = 0;

	while (n > 0) {
		uint8_t t = p[0] % 6;

		p++;
		n--;
		used = 0;
		switch (t) {
		case 0:
			used = fuzz_stack_frame_record(p, n);
			break;
		case 1:
			if (n >= 1) {
				fuzz_stack_timers((p[0] % 64 + 1u) * (p[0] & 128 ? 8 : 1));
				used = 1;
			}
			break;
		case 2:
			if (n >= 2) {
				/* the socket is listed by app_connected */
				if (connects++ < MAX_CONNECTS)
					dpsock_tcp_connect(fuzz_worker(), htonl(FUZZ_PEER_IP),
							   (uint16_t)(p[0] << 8 | p[1]), &ops, NULL);
				fuzz_stack_poll(1);
				used = 2;
			}
			break;
		case 3:
			if (n >= 2) {
				app_op(p[0], p[1]);
				fuzz_stack_poll(1);
				used = 2;
			}
			break;
		case 4:
			if (n >= 4) {
				union dpsock_sockaddr to = { .in = {
					.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(FUZZ_PEER_IP),
					.sin_port = htons((uint16_t)(p[0] << 8 | p[1])),
				} };

				unsigned int len = (unsigned int)(p[2] << 8 | p[3]);

				/* mostly up to a few fragments; the top values
				 * go around the 65507-byte limit */
				len = len < 0xfe00 ? len % 4096 : 65280 + (len & 0x1ff);
				dpsock_udp_sendto(udp7, payload, len, &to);
				fuzz_stack_poll(1);
				used = 4;
			}
			break;
		default:
			if (n >= 1) {
				fuzz_stack_poll(p[0] % 8 + 1u);
				used = 1;
			}
			break;
		}
		if (used == 0)
			break;
		p += used;
		n -= used;
	}
	mcast_leave_all();
	fuzz_stack_poll(2);
	fuzz_stack_reset();
	return 0;
}
