/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-socket table of the stats segment, on the owning worker: slots
 * from a private free list, entries refreshed from lwIP's pcbs, and the
 * DPSOCK_STATS_FILE summary written when a socket goes. See stats_segment.h
 * for the layout and the reader's side.
 */

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/lwip_compat_priv.h"

#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"

#include "core/stack_priv.h"
#include "sock_priv.h"
#include "core/log_priv.h"


int
dpsock_sockstat_worker_init(struct dpsock_worker *w)
{
	uint32_t n = w->d->stats->sock_slots, i;

	w->n_sock_free = 0;
	if (n == 0)
		return 0;
	w->sock_free_slots = malloc(n * sizeof(*w->sock_free_slots));
	if (w->sock_free_slots == NULL)
		return -ENOMEM;
	/* lowest slot on top: the table fills from its start */
	for (i = 0; i < n; i++)
		w->sock_free_slots[i] = n - 1 - i;
	w->n_sock_free = n;
	return 0;
}

void
dpsock_sockstat_worker_fini(struct dpsock_worker *w)
{
	free(w->sock_free_slots);
	w->sock_free_slots = NULL;
	w->n_sock_free = 0;
}

struct dpsock_sock_stats *
dpsock_sockstat_open(struct dpsock_worker *w, uint8_t proto)
{
	struct dpsock_stats_segment *seg = w->d->stats;
	struct dpsock_sock_stats *e;
	uint32_t gen;

	if (w->n_sock_free == 0) {
		dpsock_stat_add(&w->stats->sock_unlisted, 1);
		return NULL;
	}
	e = dpsock_stats_socks(seg, w->idx) + w->sock_free_slots[--w->n_sock_free];
	dpsock_sockstat_write_begin(e);
	gen = e->gen;
	memset(e, 0, sizeof(*e));
	e->gen = gen;
	e->proto = proto;
	e->state = proto == IPPROTO_UDP ? DPSOCK_SOCK_STATE_UDP : CLOSED;
	e->offloaded = 1;
	e->owner_pid = seg->pid;
	e->fd = -1;
	e->client = -1;
	e->worker = (uint16_t)w->idx;
	e->serial = ++w->sock_serial;
	e->in_use = 1;
	dpsock_sockstat_write_end(e);
	dpsock_stat_add(&w->stats->sock_listed, 1);
	dpsock_stat_set(&w->stats->sockets, seg->sock_slots - w->n_sock_free);
	return e;
}

/* An entry's addresses from a pcb's (remote NULL: a listener's, none):
 * IPv4 in laddr/raddr, IPv6 in laddr6/raddr6 with DPSOCK_SOCK_F_IPV6; a
 * pcb of both families (IPADDR_TYPE_ANY) shows as IPv4's any. */
static void
sockstat_addrs(struct dpsock_sock_stats *e, const ip_addr_t *local, const ip_addr_t *remote)
{
	bool v6 = IP_IS_V6(local);
	uint16_t flags = (uint16_t)((e->flags & ~DPSOCK_SOCK_F_IPV6) | (v6 ? DPSOCK_SOCK_F_IPV6 : 0));

	__atomic_store_n(&e->flags, flags, __ATOMIC_RELAXED);
	e->laddr = !v6 && IP_IS_V4(local) ? ip4_addr_get_u32(ip_2_ip4(local)) : 0;
	e->raddr = !v6 && remote != NULL ? ip4_addr_get_u32(ip_2_ip4(remote)) : 0;
	memset(e->laddr6, 0, sizeof(e->laddr6));
	memset(e->raddr6, 0, sizeof(e->raddr6));
	if (v6) {
		memcpy(e->laddr6, ip_2_ip6(local)->addr, 16);
		if (remote != NULL)
			memcpy(e->raddr6, ip_2_ip6(remote)->addr, 16);
	}
}

void
dpsock_sockstat_tcp(struct dpsock_sock_stats *e, const struct tcp_pcb *pcb, uint32_t *last_retrans)
{
	if (e == NULL)
		return;
	dpsock_sockstat_write_begin(e);
	if (pcb == NULL) {
		e->state = CLOSED;
		e->tx_queue = 0;
		e->rx_refused = 0;
		dpsock_sockstat_write_end(e);
		return;
	}
	e->state = (uint8_t)pcb->state;
	sockstat_addrs(e, &pcb->local_ip, NULL);
	e->lport = pcb->local_port;
	if (pcb->state == LISTEN) {
		/* a tcp_pcb_listen has no more than the common fields */
		dpsock_sockstat_write_end(e);
		return;
	}
	sockstat_addrs(e, &pcb->local_ip, &pcb->remote_ip);
	e->rport = pcb->remote_port;
	/* snd_buf itself: tcp_sndbuf() clamps to 16 bits */
	e->tx_queue = pcb->snd_buf <= TCP_SND_BUF ? TCP_SND_BUF - pcb->snd_buf : 0;
	e->rx_refused = pcb->refused_data != NULL ? pcb->refused_data->tot_len : 0;
	if (pcb->rec.total_retrans != *last_retrans)
		dpsock_stat_add(&e->retrans, pcb->rec.total_retrans - *last_retrans);
	*last_retrans = pcb->rec.total_retrans;
	e->nrtx = pcb->nrtx;
	e->cwnd = pcb->cwnd;
	e->ssthresh = pcb->ssthresh;
	e->snd_wnd = pcb->snd_wnd;
	e->mss = pcb->mss;
	/* microseconds, from the connection's own send times (lwip/tcp_rec.c) */
	e->rtt_us = pcb->rec.srtt_us;
	e->rttvar_us = pcb->rec.rttvar_us;
	e->min_rtt_us = pcb->rec.min_rtt_us;
	e->rto_ms = pcb->rto > 0 ? (uint64_t)pcb->rto * TCP_SLOW_INTERVAL : 0;
	e->ca_state = pcb->rec.ca_state;
	e->sacked = pcb->rec.sacked_out;
	e->lost = pcb->rec.lost_out;
	e->delivery_rate = pcb->rec.delivery_rate;
	dpsock_sockstat_write_end(e);
}

void
dpsock_sockstat_udp(struct dpsock_sock_stats *e, const struct udp_pcb *pcb)
{
	if (e == NULL || pcb == NULL)
		return;
	dpsock_sockstat_write_begin(e);
	sockstat_addrs(e, &pcb->local_ip, &pcb->remote_ip);
	e->lport = pcb->local_port;
	e->rport = pcb->remote_port;
	dpsock_sockstat_write_end(e);
}

void
dpsock_sockstat_close(struct dpsock_worker *w, struct dpsock_sock_stats *e)
{
	struct dpsock_stack *d = w->d;
	struct dpsock_stats_segment *seg = d->stats;

	if (e == NULL)
		return;
	if (d->stats_file != NULL) {
		char owner[64], line[512];

		snprintf(owner, sizeof(owner), "%s[%d]", seg->app, (int)seg->pid);
		dpsock_sock_format(e, owner, line, sizeof(line));
		/* one call per line: stdio's lock keeps workers' lines whole */
		fprintf(d->stats_file, "%s\n", line);
	}
	dpsock_sockstat_write_begin(e);
	e->in_use = 0;
	dpsock_sockstat_write_end(e);
	w->sock_free_slots[w->n_sock_free++] = (uint32_t)(e - dpsock_stats_socks(seg, w->idx));
	dpsock_stat_set(&w->stats->sockets, seg->sock_slots - w->n_sock_free);
}

void
dpsock_sockstat_zero(struct dpsock_worker *w)
{
	struct dpsock_stats_segment *seg = w->d->stats;
	struct dpsock_sock_stats *e = dpsock_stats_socks(seg, w->idx);
	uint32_t i;

	for (i = 0; i < seg->sock_slots; i++, e++) {
		if (!e->in_use)
			continue;
		dpsock_sockstat_write_begin(e);
		dpsock_stats_zero_block(e, dpsock_sock_stat_desc, dpsock_sock_stat_count);
		dpsock_sockstat_write_end(e);
	}
}
