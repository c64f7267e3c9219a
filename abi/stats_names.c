/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tables and formatting shared by the stack (telemetry, DPSOCK_STATS_FILE)
 * and dpsock-stat: plain C, no DPDK. See stats_segment.h.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "stats_segment.h"

#define PORT_C(n, h) { #n, h, offsetof(struct dpsock_port_stats, n), false },
#define PORT_G(n, h) { #n, h, offsetof(struct dpsock_port_stats, n), true },
const struct dpsock_stat_desc dpsock_port_stat_desc[] = {
	DPSOCK_PORT_COUNTERS(PORT_C)
	DPSOCK_PORT_GAUGES(PORT_G)
};
const unsigned int dpsock_port_stat_count =
	sizeof(dpsock_port_stat_desc) / sizeof(dpsock_port_stat_desc[0]);

#define WORKER_C(n, h) { #n, h, offsetof(struct dpsock_worker_stats, n), false },
#define WORKER_G(n, h) { #n, h, offsetof(struct dpsock_worker_stats, n), true },
const struct dpsock_stat_desc dpsock_worker_stat_desc[] = {
	DPSOCK_WORKER_COUNTERS(WORKER_C)
	DPSOCK_WORKER_GAUGES(WORKER_G)
};
const unsigned int dpsock_worker_stat_count =
	sizeof(dpsock_worker_stat_desc) / sizeof(dpsock_worker_stat_desc[0]);

#define SOCK_C(n, h) { #n, h, offsetof(struct dpsock_sock_stats, n), false },
#define SOCK_G(n, h) { #n, h, offsetof(struct dpsock_sock_stats, n), true },
const struct dpsock_stat_desc dpsock_sock_stat_desc[] = {
	DPSOCK_SOCK_COUNTERS(SOCK_C)
	DPSOCK_SOCK_GAUGES(SOCK_G)
};
const unsigned int dpsock_sock_stat_count =
	sizeof(dpsock_sock_stat_desc) / sizeof(dpsock_sock_stat_desc[0]);

/* The hot path indexes the RX burst histogram from rx_burst_1. */
_Static_assert(offsetof(struct dpsock_worker_stats, rx_burst_64_up) -
	       offsetof(struct dpsock_worker_stats, rx_burst_1) == 6 * sizeof(uint64_t),
	       "rx_burst_* counters must be consecutive");
_Static_assert(sizeof(struct dpsock_worker_stats) % 64 == 0, "worker block: whole cache lines");
_Static_assert(sizeof(struct dpsock_sock_stats) % 64 == 0, "socket entry: whole cache lines");
_Static_assert(offsetof(struct dpsock_stats_segment, hdr_size) == 328,
	       "the version 1 header must keep its place");

#define STATE_NAME(s) #s,
static const char *const state_names[] = { DPSOCK_SOCK_STATES(STATE_NAME) };

const char *
dpsock_sock_state_name(uint8_t state)
{
	if (state == DPSOCK_SOCK_STATE_UDP)
		return "UNCONN";
	if (state < sizeof(state_names) / sizeof(state_names[0]))
		return state_names[state];
	return "?";
}

void
dpsock_stats_zero_block(void *blk, const struct dpsock_stat_desc *desc, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!desc[i].gauge)
			__atomic_store_n((uint64_t *)((char *)blk + desc[i].off), 0, __ATOMIC_RELAXED);
}

char *
dpsock_fmt_bytes(char *buf, size_t len, double v)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	unsigned int u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%.0f B", v);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

char *
dpsock_fmt_usec(char *buf, size_t len, double us)
{
	if (us < 1000)
		snprintf(buf, len, "%.0f us", us);
	else if (us < 1000000)
		snprintf(buf, len, "%.1f ms", us / 1000);
	else
		snprintf(buf, len, "%.2f s", us / 1000000);
	return buf;
}

#define SOCK_LINE_FMT "%-5s %8s %8s %-21s %-21s %-11s %3s %-20s %10s %10s %9s %10s %7s"

void
dpsock_sock_format_header(char *buf, size_t len)
{
	snprintf(buf, len, SOCK_LINE_FMT, "Proto", "Recv-Q", "Send-Q", "Local Address:Port",
		 "Peer Address:Port", "State", "W", "Owner", "RX", "TX", "RTT", "CWND", "Retrans");
}

char *
dpsock_fmt_addr(char *buf, size_t len, uint32_t addr, uint16_t port)
{
	char a[INET_ADDRSTRLEN];
	struct in_addr in = { .s_addr = addr };

	inet_ntop(AF_INET, &in, a, sizeof(a));
	snprintf(buf, len, "%s:%u", addr ? a : "*", port);
	return buf;
}

char *
dpsock_sock_fmt_end(char *buf, size_t len, const struct dpsock_sock_stats *e, bool peer)
{
	static const uint8_t any6[16];
	const uint8_t *a6 = peer ? e->raddr6 : e->laddr6;
	uint16_t port = peer ? e->rport : e->lport;
	char a[INET6_ADDRSTRLEN];

	if (!(e->flags & DPSOCK_SOCK_F_IPV6))
		return dpsock_fmt_addr(buf, len, peer ? e->raddr : e->laddr, port);
	if (memcmp(a6, any6, 16) == 0)
		snprintf(buf, len, "*:%u", port);
	else
		snprintf(buf, len, "[%s]:%u", inet_ntop(AF_INET6, a6, a, sizeof(a)), port);
	return buf;
}

void
dpsock_sock_format(const struct dpsock_sock_stats *e, const char *owner, char *buf, size_t len)
{
	char rq[24], sq[24], local[56], peer[56], w[8], rx[24], tx[24], rtt[24], cwnd[24], rt[24];
	bool tcp = e->proto == IPPROTO_TCP;
	bool conn = tcp && e->state != 1 /* LISTEN */;

	snprintf(rq, sizeof(rq), "%llu", (unsigned long long)(e->rx_held + e->rx_refused));
	snprintf(sq, sizeof(sq), "%llu", (unsigned long long)e->tx_queue);
	dpsock_sock_fmt_end(local, sizeof(local), e, false);
	if (e->raddr == 0 && e->rport == 0 && !(e->flags & DPSOCK_SOCK_F_IPV6))
		snprintf(peer, sizeof(peer), "*:*");
	else if (e->flags & DPSOCK_SOCK_F_LOOP)
		/* a connection within the host (docs/design.md decisions 15
		 * and 16): the other end is a socket of the same instance */
		snprintf(peer, sizeof(peer), "host:%u", e->rport);
	else
		dpsock_sock_fmt_end(peer, sizeof(peer), e, true);
	snprintf(w, sizeof(w), "%u", e->worker);
	dpsock_fmt_bytes(rx, sizeof(rx), (double)e->rx_bytes);
	dpsock_fmt_bytes(tx, sizeof(tx), (double)e->tx_bytes);
	if (conn && (e->flags & DPSOCK_SOCK_F_CUT)) {
		/* FIFO to FIFO: no segments, so no RTT, window or retransmission */
		snprintf(rtt, sizeof(rtt), "cut");
		snprintf(cwnd, sizeof(cwnd), "-");
		snprintf(rt, sizeof(rt), "-");
	} else if (conn) {
		dpsock_fmt_usec(rtt, sizeof(rtt), (double)e->rtt_us);
		dpsock_fmt_bytes(cwnd, sizeof(cwnd), (double)e->cwnd);
		snprintf(rt, sizeof(rt), "%llu", (unsigned long long)e->retrans);
	} else {
		snprintf(rtt, sizeof(rtt), "-");
		snprintf(cwnd, sizeof(cwnd), "-");
		snprintf(rt, sizeof(rt), "-");
	}
	snprintf(buf, len, SOCK_LINE_FMT, tcp ? "tcp" : "udp", rq, sq, local, peer,
		 dpsock_sock_state_name(e->state), w, owner, rx, tx, rtt, cwnd, rt);
}
