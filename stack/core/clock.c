/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.c — a worker's clock for what it receives: CLOCK_REALTIME from the
 * TSC (a base refreshed on the worker's 100 ms tick, so a receive
 * timestamp costs no system call), and the NIC's own RX stamp where the
 * PMD offers one (the mbuf dynamic field RTE_ETH_RX_OFFLOAD_TIMESTAMP
 * registers). SO_TIMESTAMP*, multicast datagrams and captured frames take
 * their times from here. Before dpsock_clock_init and after
 * dpsock_clock_fini the TSC is not used: the time is read from the kernel.
 */
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_mbuf_dyn.h>

#include "stack_priv.h"

static uint64_t
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void
dpsock_clock_init(struct dpsock_worker *w)
{
	struct dpsock_clock *c = &w->clock;
	int off, bit;

	memset(c, 0, sizeof(*c));
	c->ns_per_tsc = 1e9 / (double)w->d->tsc_hz;
	/* registered by a PMD that offers RX timestamps once it is enabled */
	off = rte_mbuf_dynfield_lookup(RTE_MBUF_DYNFIELD_TIMESTAMP_NAME, NULL);
	bit = rte_mbuf_dynflag_lookup(RTE_MBUF_DYNFLAG_RX_TIMESTAMP_NAME, NULL);
	if (off >= 0 && bit >= 0) {
		c->ts_off = off;
		c->ts_flag = 1ull << bit;
	}
	dpsock_clock_tick(w);
}

void
dpsock_clock_fini(struct dpsock_worker *w)
{
	memset(&w->clock, 0, sizeof(w->clock));
}

void
dpsock_clock_tick(struct dpsock_worker *w)
{
	struct dpsock_clock *c = &w->clock;

	if (c->ns_per_tsc == 0)
		return;
	c->base_tsc = rte_rdtsc();
	c->base_ns = realtime_ns();
}

uint64_t
dpsock_clock_tsc_ns(const struct dpsock_worker *w, uint64_t tsc)
{
	const struct dpsock_clock *c = &w->clock;

	if (c->ns_per_tsc == 0)
		return realtime_ns();
	return c->base_ns + (uint64_t)((double)(int64_t)(tsc - c->base_tsc) * c->ns_per_tsc);
}

uint64_t
dpsock_clock_rx_ns(const struct dpsock_worker *w)
{
	return dpsock_clock_tsc_ns(w, w->rx_tsc);
}

uint64_t
dpsock_clock_hw_ns(const struct dpsock_worker *w, const struct rte_mbuf *m)
{
	const struct dpsock_clock *c = &w->clock;

	if (c->ts_flag == 0 || !(m->ol_flags & c->ts_flag))
		return 0;
	return *RTE_MBUF_DYNFIELD(m, c->ts_off, const rte_mbuf_timestamp_t *);
}
