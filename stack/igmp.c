/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The IGMP host of each port (RFC 3376, IGMPv3, with the RFC 2236 / 1112
 * compatibility modes of its section 7), run by one worker
 * (DPSOCK_IGMP_WORKER) for the whole stack: a link needs one host per
 * address, whatever the number of workers and of their lwIP instances.
 * lwIP's own IGMP is off (lwipopts.h): it speaks v2 only, per instance.
 *
 * What it follows: the registry's interface state of each (port, group)
 * (mcast.c), which moves when a socket of any worker or process joins,
 * leaves or changes its source filter. What it says on the link:
 *
 *  - a state change (5.1): at once, a Version 3 report with the records of
 *    the change (TO_IN / TO_EX when the filter mode changed, else ALLOW /
 *    BLOCK of the sources that came and went), then [Robustness - 1] more
 *    times at random delays up to the Unsolicited Report Interval (1 s).
 *    A change while some are pending restarts them with the records from
 *    the state before the first pending change to the state now, so a
 *    join and a leave within one second still end in a leave;
 *  - answers to queries (5.2): a general query schedules one report of
 *    every group's current state (IS_IN / IS_EX) at a random delay up to
 *    the Max Response Time; a group-specific or group-and-source-specific
 *    query schedules that group's, merged with one already pending by the
 *    rules of 5.2;
 *  - compatibility (7.2.1): a v1 or v2 query puts the port in that mode
 *    until Robustness * Query Interval + Query Response Interval pass
 *    without another; a mode change cancels what was pending. In v2 mode a
 *    join is a v2 report (repeated), a leave a v2 leave to 224.0.0.2 when
 *    this host sent the last report, answers are v2 reports and another
 *    host's report for the group suppresses ours; source lists are not
 *    said (INCLUDE {} is not a member, anything else is). v1 likewise,
 *    without leaves.
 *
 * Frames: IPv4 with the Router Alert option, TTL 1, TOS 0xc0, from the
 * port's address; v3 reports to 224.0.0.22, v1/v2 reports to the group.
 * Queries reach any worker (the port's RSS or fanout decides): they are
 * handed to DPSOCK_IGMP_WORKER over its steering ring. Timers are lwIP
 * timeouts of that worker, so that its sleeps end in time.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "lwip_compat_priv.h"

#include "lwip/timeouts.h"

#include "stack_priv.h"
#include "log_priv.h"
#include "mcast_priv.h"

#define IGMP_QUERY 0x11
#define IGMP_V1_REPORT 0x12
#define IGMP_V2_REPORT 0x16
#define IGMP_V2_LEAVE 0x17
#define IGMP_V3_REPORT 0x22

#define REC_IS_IN 1
#define REC_IS_EX 2
#define REC_TO_IN 3
#define REC_TO_EX 4
#define REC_ALLOW 5
#define REC_BLOCK 6

#define ALL_SYSTEMS RTE_BE32(0xe0000001)   /* 224.0.0.1 */
#define ALL_ROUTERS RTE_BE32(0xe0000002)   /* 224.0.0.2 */
#define V3_ROUTERS RTE_BE32(0xe0000016)    /* 224.0.0.22 */

#define QRV_DEFAULT 2               /* Robustness Variable */
#define QI_DEFAULT_S 125            /* Query Interval */
#define V1_MRT_MS 10000             /* a v1 query's implied Max Response Time */
#define V3_URI_MS 1000              /* Unsolicited Report Interval, v3 */
#define V2_URI_MS 10000             /* ... v1 and v2 (RFC 2236) */

#define IP_HLEN_RA 24               /* IPv4 header + Router Alert option */

struct ig_group {
	struct ig_group *next;
	uint32_t addr;
	uint16_t port;
	bool in_registry;           /* seen in the last sync */
	bool reporter;              /* v1/v2: ours was the last report on the link */
	bool mode_changed;          /* the mode moved in the pending window */
	bool resp_sources;          /* the pending answer is for q_src only */
	uint8_t rtx_left;           /* state-change transmissions to come */
	uint64_t rtx_due;           /* ms, 0: none */
	uint64_t resp_due;          /* ms, 0: none */
	struct dpsock_mc_ifstate cur;   /* the interface state now */
	struct dpsock_mc_ifstate start; /* ... before the pending changes */
	uint16_t q_nsrc;
	uint32_t q_src[DPSOCK_MC_IF_MAX_SRC];
};

struct ig_port {
	uint8_t version;            /* compatibility mode: 3, 2, 1 */
	uint8_t qrv;                /* the querier's robustness */
	uint32_t qi_s;              /* ... and query interval */
	uint64_t v1_until, v2_until; /* ms: an older querier is present until then */
	uint64_t gq_due;            /* ms: answer to a general query (v3), 0: none */
	uint32_t querier;
	uint64_t query_ns;
	uint16_t ip_id;
};

struct dpsock_igmp {
	struct dpsock_worker *w;
	uint32_t gen;               /* registry generation followed */
	struct ig_group *groups;
	struct ig_port ports[DPSOCK_MAX_PORTS];
	bool armed;                 /* an lwIP timeout is set */
};

/* A report being built for one port. */
struct ig_pkt {
	struct dpsock_igmp *ig;
	unsigned int port;
	struct rte_mbuf *m;
	uint8_t *igmp;              /* start of the IGMP message */
	uint16_t len;               /* its bytes so far */
	uint16_t nrec;
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 + 1; /* never 0 */
}

static uint64_t
rand_ms(uint32_t max)
{
	return max == 0 ? 0 : dpsock_lwip_rand() % (max + 1);
}

/* RFC 3376 4.1.1 / 4.1.7: Max Resp Code and QQIC, 8-bit floats */
static uint32_t
code_decode(uint8_t c)
{
	return c < 128 ? c : (uint32_t)((c & 0x0f) | 0x10) << (((c >> 4) & 0x07) + 3);
}

static bool
is_member(const struct dpsock_mc_ifstate *st)
{
	return !(st->mode == DPSOCK_MC_INCLUDE && st->nsrc == 0);
}

static bool
has(const uint32_t *l, unsigned int n, uint32_t a)
{
	for (unsigned int i = 0; i < n; i++)
		if (l[i] == a)
			return true;
	return false;
}

/* out = a - b; returns its length */
static unsigned int
minus(uint32_t *out, const uint32_t *a, unsigned int na, const uint32_t *b, unsigned int nb)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < na; i++)
		if (!has(b, nb, a[i]))
			out[n++] = a[i];
	return n;
}

/* out = a ∩ b */
static unsigned int
both(uint32_t *out, const uint32_t *a, unsigned int na, const uint32_t *b, unsigned int nb)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < na; i++)
		if (has(b, nb, a[i]))
			out[n++] = a[i];
	return n;
}

static bool
state_equal(const struct dpsock_mc_ifstate *a, const struct dpsock_mc_ifstate *b)
{
	if (a->mode != b->mode || a->nsrc != b->nsrc)
		return false;
	for (unsigned int i = 0; i < a->nsrc; i++)
		if (!has(b->src, b->nsrc, a->src[i]))
			return false;
	return true;
}

/* ---- frames ----------------------------------------------------------------- */

static void
tx(struct dpsock_igmp *ig, unsigned int port, struct rte_mbuf *m)
{
	dpsock_netif_send_raw(&ig->w->ports[port], m);
}

/* An mbuf with Ethernet and IPv4 (Router Alert) headers for dst; the IGMP
 * message goes at the returned pointer. */
static uint8_t *
frame_new(struct dpsock_igmp *ig, unsigned int port, uint32_t dst, struct rte_mbuf **mp)
{
	const struct dpsock_stack *d = ig->w->d;
	const struct dpsock_port *p = &d->ports[port];
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	uint32_t h = rte_be_to_cpu_32(dst);
	uint8_t *o;

	*mp = m;
	if (m == NULL) {
		dpsock_stat_add(&ig->w->stats->tx_nombuf, 1);
		return NULL;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	/* 01:00:5e + the group's low 23 bits (RFC 1112 6.4) */
	eth->dst_addr.addr_bytes[0] = 0x01;
	eth->dst_addr.addr_bytes[1] = 0x00;
	eth->dst_addr.addr_bytes[2] = 0x5e;
	eth->dst_addr.addr_bytes[3] = (h >> 16) & 0x7f;
	eth->dst_addr.addr_bytes[4] = (h >> 8) & 0xff;
	eth->dst_addr.addr_bytes[5] = h & 0xff;
	rte_ether_addr_copy(&p->mac, &eth->src_addr);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	memset(ip, 0, IP_HLEN_RA);
	ip->version_ihl = 0x40 | (IP_HLEN_RA / 4);
	ip->type_of_service = 0xc0;  /* internetwork control, as Linux sends IGMP */
	ip->packet_id = rte_cpu_to_be_16(ig->ports[port].ip_id++);
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 1;
	ip->next_proto_id = IPPROTO_IGMP;
	ip->src_addr = d->conf.ifaces[port].addr;
	ip->dst_addr = dst;
	o = (uint8_t *)(ip + 1);
	o[0] = 0x94;                 /* Router Alert (RFC 2113): copied, option 20 */
	o[1] = 4;
	return (uint8_t *)ip + IP_HLEN_RA;
}

/* Lengths and checksums, then out. */
static void
frame_send(struct dpsock_igmp *ig, unsigned int port, struct rte_mbuf *m, uint16_t igmp_len)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
							  RTE_ETHER_HDR_LEN);
	uint8_t *igmp = (uint8_t *)ip + IP_HLEN_RA;
	uint16_t ck;

	igmp[2] = igmp[3] = 0;
	ck = (uint16_t)~rte_raw_cksum(igmp, igmp_len);
	memcpy(igmp + 2, &ck, 2);
	ip->total_length = rte_cpu_to_be_16(IP_HLEN_RA + igmp_len);
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	m->data_len = m->pkt_len = RTE_ETHER_HDR_LEN + IP_HLEN_RA + igmp_len;
	tx(ig, port, m);
}

/* A v1 or v2 report, or a v2 leave. */
static void
send_old(struct dpsock_igmp *ig, unsigned int port, uint8_t type, uint32_t group)
{
	struct dpsock_worker_stats *st = ig->w->stats;
	struct rte_mbuf *m;
	uint8_t *b = frame_new(ig, port, type == IGMP_V2_LEAVE ? ALL_ROUTERS : group, &m);

	if (b == NULL)
		return;
	b[0] = type;
	b[1] = 0;
	memcpy(b + 4, &group, 4);
	frame_send(ig, port, m, 8);
	dpsock_stat_add(type == IGMP_V2_LEAVE ? &st->igmp_tx_leave :
			type == IGMP_V2_REPORT ? &st->igmp_tx_report_v2 : &st->igmp_tx_report_v1, 1);
}

static void
pkt_flush(struct ig_pkt *k)
{
	uint16_t n = rte_cpu_to_be_16(k->nrec);

	if (k->m == NULL)
		return;
	memcpy(k->igmp + 6, &n, 2);
	frame_send(k->ig, k->port, k->m, k->len);
	dpsock_stat_add(&k->ig->w->stats->igmp_tx_report_v3, 1);
	k->m = NULL;
}

/* Append one group record to a v3 report (a new frame when it would pass
 * the port's MTU). */
static void
pkt_record(struct ig_pkt *k, uint8_t type, uint32_t group, const uint32_t *src, unsigned int n)
{
	unsigned int mtu = k->ig->w->d->ports[k->port].mtu, need = 8 + 4 * n;
	uint8_t *r;
	uint16_t ns = rte_cpu_to_be_16((uint16_t)n);

	if (k->m != NULL && IP_HLEN_RA + k->len + need > mtu)
		pkt_flush(k);
	if (k->m == NULL) {
		k->igmp = frame_new(k->ig, k->port, V3_ROUTERS, &k->m);
		if (k->igmp == NULL)
			return;
		memset(k->igmp, 0, 8);
		k->igmp[0] = IGMP_V3_REPORT;
		k->len = 8;
		k->nrec = 0;
	}
	r = k->igmp + k->len;
	r[0] = type;
	r[1] = 0;                    /* no auxiliary data */
	memcpy(r + 2, &ns, 2);
	memcpy(r + 4, &group, 4);
	memcpy(r + 8, src, 4 * n);
	k->len += need;
	k->nrec++;
}

/* ---- state changes (RFC 3376 5.1) --------------------------------------------- */

/* The records of the pending change: TO_IN / TO_EX of the state now when
 * the mode moved, else what was allowed and blocked since it began. */
static void
change_records(struct ig_pkt *k, const struct ig_group *g)
{
	const struct dpsock_mc_ifstate *c = &g->cur, *s = &g->start;
	uint32_t tmp[DPSOCK_MC_IF_MAX_SRC];
	unsigned int n;
	bool inc = c->mode == DPSOCK_MC_INCLUDE;

	if (g->mode_changed) {
		pkt_record(k, inc ? REC_TO_IN : REC_TO_EX, g->addr, c->src, c->nsrc);
		return;
	}
	/* INCLUDE: allow new sources, block old ones; EXCLUDE the reverse */
	n = inc ? minus(tmp, c->src, c->nsrc, s->src, s->nsrc) :
		  minus(tmp, s->src, s->nsrc, c->src, c->nsrc);
	if (n > 0)
		pkt_record(k, REC_ALLOW, g->addr, tmp, n);
	n = inc ? minus(tmp, s->src, s->nsrc, c->src, c->nsrc) :
		  minus(tmp, c->src, c->nsrc, s->src, s->nsrc);
	if (n > 0)
		pkt_record(k, REC_BLOCK, g->addr, tmp, n);
}

/* One transmission of a group's pending state change. */
static void
change_send(struct dpsock_igmp *ig, struct ig_group *g, uint64_t now)
{
	const struct ig_port *p = &ig->ports[g->port];

	if (p->version == 3) {
		struct ig_pkt k = { .ig = ig, .port = g->port };

		change_records(&k, g);
		pkt_flush(&k);
	} else if (is_member(&g->cur)) {
		send_old(ig, g->port, p->version == 2 ? IGMP_V2_REPORT : IGMP_V1_REPORT, g->addr);
		g->reporter = true;
	}
	if (g->rtx_left > 0)
		g->rtx_left--;
	if (g->rtx_left > 0) {
		g->rtx_due = now + rand_ms(p->version == 3 ? V3_URI_MS : V2_URI_MS);
	} else {
		g->rtx_due = 0;
		g->start = g->cur;     /* the window closes */
		g->mode_changed = false;
	}
}

/* The registry says the group's interface state is now st. */
static void
change(struct dpsock_igmp *ig, struct ig_group *g, const struct dpsock_mc_ifstate *st,
       uint64_t now)
{
	const struct ig_port *p = &ig->ports[g->port];
	bool was = is_member(&g->cur), is = is_member(st);

	if (p->version == 3) {
		if (g->rtx_left == 0) {
			g->start = g->cur;
			g->mode_changed = false;
		}
		g->mode_changed |= st->mode != g->cur.mode;
		g->cur = *st;
		g->rtx_left = p->qrv;
		change_send(ig, g, now);
		return;
	}
	g->cur = *st;
	g->start = *st;
	if (!was && is) {
		g->rtx_left = p->qrv;
		change_send(ig, g, now);
	} else if (was && !is) {
		if (p->version == 2 && g->reporter)
			send_old(ig, g->port, IGMP_V2_LEAVE, g->addr);
		g->rtx_left = 0;
		g->rtx_due = 0;
		g->resp_due = 0;
		g->reporter = false;
	}
}

/* ---- answers (RFC 3376 5.2, RFC 2236 3) ---------------------------------------- */

static void
current_record(struct ig_pkt *k, const struct ig_group *g)
{
	const struct dpsock_mc_ifstate *c = &g->cur;
	uint32_t tmp[DPSOCK_MC_IF_MAX_SRC];
	unsigned int n;

	if (!is_member(c))
		return;
	if (!g->resp_sources) {
		pkt_record(k, c->mode == DPSOCK_MC_INCLUDE ? REC_IS_IN : REC_IS_EX, g->addr, c->src,
			   c->nsrc);
		return;
	}
	/* group-and-source query: which of the asked sources we want */
	n = c->mode == DPSOCK_MC_INCLUDE ? both(tmp, g->q_src, g->q_nsrc, c->src, c->nsrc) :
					   minus(tmp, g->q_src, g->q_nsrc, c->src, c->nsrc);
	if (n > 0)
		pkt_record(k, REC_IS_IN, g->addr, tmp, n);
}

static void
answer_group(struct dpsock_igmp *ig, struct ig_group *g)
{
	const struct ig_port *p = &ig->ports[g->port];

	if (p->version == 3) {
		struct ig_pkt k = { .ig = ig, .port = g->port };

		current_record(&k, g);
		pkt_flush(&k);
	} else if (is_member(&g->cur)) {
		send_old(ig, g->port, p->version == 2 ? IGMP_V2_REPORT : IGMP_V1_REPORT, g->addr);
		g->reporter = true;
	}
	g->resp_due = 0;
	g->resp_sources = false;
	g->q_nsrc = 0;
}

/* v3 answer to a general query: every group of the port. */
static void
answer_general(struct dpsock_igmp *ig, unsigned int port)
{
	struct ig_pkt k = { .ig = ig, .port = port };
	struct ig_group *g;

	for (g = ig->groups; g != NULL; g = g->next) {
		bool src = g->resp_sources;

		if (g->port != port)
			continue;
		g->resp_sources = false; /* the whole state */
		current_record(&k, g);
		g->resp_sources = src;
	}
	pkt_flush(&k);
	ig->ports[port].gq_due = 0;
}

/* ---- timers ---------------------------------------------------------------------- */

static void ig_timer(void *arg);

static uint64_t
next_due(const struct dpsock_igmp *ig, unsigned int n_ports)
{
	const struct ig_group *g;
	uint64_t due = 0;
	unsigned int i;

#define EARLIER(t) do { if ((t) != 0 && (due == 0 || (t) < due)) due = (t); } while (0)
	for (i = 0; i < n_ports; i++) {
		const struct ig_port *p = &ig->ports[i];

		EARLIER(p->gq_due);
		if (p->version < 3) /* the older querier's time-out */
			EARLIER(p->version == 1 ? p->v1_until : p->v2_until);
	}
	for (g = ig->groups; g != NULL; g = g->next) {
		EARLIER(g->rtx_due);
		EARLIER(g->resp_due);
	}
#undef EARLIER
	return due;
}

static void
rearm(struct dpsock_igmp *ig)
{
	uint64_t due = next_due(ig, ig->w->n_ports), now = now_ms();

	if (ig->armed) {
		sys_untimeout(ig_timer, ig);
		ig->armed = false;
	}
	if (due == 0)
		return;
	sys_timeout((u32_t)(due > now ? RTE_MIN(due - now, (uint64_t)UINT32_MAX) : 1), ig_timer, ig);
	ig->armed = true;
}

static void
publish_port(struct dpsock_igmp *ig, unsigned int port, uint64_t now)
{
	const struct ig_port *p = &ig->ports[port];
	struct dpsock_mc_port_row row = {
		.version = p->version,
		.robustness = p->qrv,
		.querier = p->querier,
		.query_ns = p->query_ns,
	};
	uint64_t until = RTE_MAX(p->v1_until, p->v2_until);
	struct timespec ts;

	if (until > now) {
		clock_gettime(CLOCK_REALTIME, &ts);
		row.older_until_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
				     (until - now) * 1000000ull;
	}
	dpsock_mcast_publish_port(ig->w->d, port, &row);
}

/* The port's mode from its older-querier timers; a change cancels every
 * pending answer and retransmission (RFC 3376 7.2.1). */
static void
update_version(struct dpsock_igmp *ig, unsigned int port, uint64_t now)
{
	struct ig_port *p = &ig->ports[port];
	uint8_t v = p->v1_until > now ? 1 : p->v2_until > now ? 2 : 3;
	struct ig_group *g;

	if (v == p->version)
		return;
	DPSOCK_LOG(INFO, main, "port %s: IGMP compatibility mode v%u -> v%u",
		   ig->w->d->ports[port].name, p->version, v);
	dpsock_stat_add(&ig->w->stats->igmp_version_changes, 1);
	p->version = v;
	p->gq_due = 0;
	for (g = ig->groups; g != NULL; g = g->next) {
		if (g->port != port)
			continue;
		g->rtx_left = 0;
		g->rtx_due = 0;
		g->resp_due = 0;
		g->resp_sources = false;
		g->start = g->cur;
		g->mode_changed = false;
	}
	publish_port(ig, port, now);
}

/* Forget groups that are no member and have nothing left to say. */
static void
prune(struct dpsock_igmp *ig)
{
	struct ig_group **gp = &ig->groups;

	while (*gp != NULL) {
		struct ig_group *g = *gp;

		if (!g->in_registry && !is_member(&g->cur) && g->rtx_due == 0 && g->resp_due == 0) {
			*gp = g->next;
			free(g);
		} else {
			gp = &g->next;
		}
	}
}

static void
run_due(struct dpsock_igmp *ig, uint64_t now)
{
	struct ig_group *g;
	unsigned int i;

	for (i = 0; i < ig->w->n_ports; i++) {
		update_version(ig, i, now);
		if (ig->ports[i].gq_due != 0 && ig->ports[i].gq_due <= now)
			answer_general(ig, i);
	}
	for (g = ig->groups; g != NULL; g = g->next) {
		if (g->resp_due != 0 && g->resp_due <= now)
			answer_group(ig, g);
		if (g->rtx_due != 0 && g->rtx_due <= now)
			change_send(ig, g, now);
	}
	prune(ig);
}

static void
ig_timer(void *arg)
{
	struct dpsock_igmp *ig = arg;

	ig->armed = false;
	run_due(ig, now_ms());
	rearm(ig);
}

/* ---- following the registry -------------------------------------------------------- */

static struct ig_group *
group_find(struct dpsock_igmp *ig, uint32_t addr, uint16_t port, bool create)
{
	struct ig_group *g;

	for (g = ig->groups; g != NULL; g = g->next)
		if (g->addr == addr && g->port == port)
			return g;
	if (!create || (g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	g->addr = addr;
	g->port = port;
	g->cur.mode = g->start.mode = DPSOCK_MC_INCLUDE; /* not a member yet */
	g->next = ig->groups;
	ig->groups = g;
	return g;
}

static struct dpsock_igmp *
engine(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;
	unsigned int i;

	if (mc->igmp != NULL)
		return mc->igmp;
	mc->igmp = calloc(1, sizeof(*mc->igmp));
	if (mc->igmp == NULL)
		return NULL;
	mc->igmp->w = w;
	mc->igmp->gen = UINT32_MAX;
	for (i = 0; i < DPSOCK_MAX_PORTS; i++) {
		mc->igmp->ports[i].version = 3;
		mc->igmp->ports[i].qrv = QRV_DEFAULT;
		mc->igmp->ports[i].qi_s = QI_DEFAULT_S;
	}
	return mc->igmp;
}

/* Copy the registry's (port, group, state) out under its lock, then act. */
static void
sync_registry(struct dpsock_igmp *ig)
{
	struct dpsock_mcast *mc = ig->w->d->mc;
	struct snap { uint32_t addr; uint16_t port; struct dpsock_mc_ifstate st; } *v = NULL;
	const struct dpsock_mc_group *rg;
	const struct dpsock_mc_ifstate none = { .mode = DPSOCK_MC_INCLUDE };
	struct ig_group *g;
	uint64_t now = now_ms();
	uint32_t n = 0, i;

	rte_spinlock_lock(&mc->lock);
	if (mc->n_groups > 0 && (v = malloc(mc->n_groups * sizeof(*v))) == NULL) {
		rte_spinlock_unlock(&mc->lock);
		return; /* retried at the next poll: gen is not taken */
	}
	for (rg = mc->groups; rg != NULL; rg = rg->next, n++) {
		v[n].addr = rg->addr;
		v[n].port = rg->port;
		v[n].st = rg->st;
	}
	ig->gen = mc->gen;
	rte_spinlock_unlock(&mc->lock);

	for (g = ig->groups; g != NULL; g = g->next)
		g->in_registry = false;
	for (i = 0; i < n; i++) {
		/* a port shared with the kernel: the kernel is the host there
		 * (mcast_kernel.c) */
		if (v[i].port < ig->w->d->n_ports && ig->w->d->ports[v[i].port].shared)
			continue;
		g = group_find(ig, v[i].addr, v[i].port, true);
		if (g == NULL)
			continue;
		g->in_registry = true;
		if (!state_equal(&g->cur, &v[i].st))
			change(ig, g, &v[i].st, now);
	}
	for (g = ig->groups; g != NULL; g = g->next)
		if (!g->in_registry && !state_equal(&g->cur, &none))
			change(ig, g, &none, now);
	free(v);
	prune(ig);
	rearm(ig);
}

unsigned int
dpsock_igmp_poll(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;
	struct dpsock_igmp *ig;

	if (mc == NULL || w->idx != DPSOCK_IGMP_WORKER)
		return 0;
	/* acquire: pairs with the registry's release of gen */
	if (mc->igmp != NULL && __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE) == mc->igmp->gen)
		return 0;
	ig = engine(w);
	if (ig == NULL)
		return 0;
	sync_registry(ig);
	return 1;
}

bool
dpsock_igmp_pending(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;

	return mc != NULL && w->idx == DPSOCK_IGMP_WORKER &&
	       __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE) !=
	       (mc->igmp != NULL ? mc->igmp->gen : UINT32_MAX);
}

/* ---- what others say --------------------------------------------------------------- */

static void
on_query(struct dpsock_igmp *ig, unsigned int port, uint32_t src, const uint8_t *q,
	 unsigned int len)
{
	struct dpsock_worker_stats *st = ig->w->stats;
	struct ig_port *p = &ig->ports[port];
	uint32_t group, mrt, nsrc = 0;
	uint64_t now = now_ms(), delay;
	unsigned int ver;
	struct ig_group *g;
	struct timespec ts;

	memcpy(&group, q + 4, 4);
	if (len == 8) {
		ver = q[1] == 0 ? 1 : 2;
	} else if (len >= 12) {
		uint16_t ns;

		memcpy(&ns, q + 10, 2);
		nsrc = rte_be_to_cpu_16(ns);
		if (len < 12 + 4 * nsrc) {
			dpsock_stat_add(&st->igmp_rx_bad, 1);
			return;
		}
		ver = 3;
	} else {
		dpsock_stat_add(&st->igmp_rx_bad, 1); /* 9..11 bytes: no version has it */
		return;
	}
	if (group != 0 && !dpsock_mc_is_group(group)) {
		dpsock_stat_add(&st->igmp_rx_bad, 1);
		return;
	}
	dpsock_stat_add(ver == 1 ? &st->igmp_rx_query_v1 : ver == 2 ? &st->igmp_rx_query_v2 :
				   &st->igmp_rx_query_v3, 1);
	p->querier = src;
	clock_gettime(CLOCK_REALTIME, &ts);
	p->query_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (ver == 1) {
		mrt = V1_MRT_MS;
		/* Older Version Querier Present Timeout (8.12) */
		p->v1_until = now + (uint64_t)p->qrv * p->qi_s * 1000 + mrt;
	} else if (ver == 2) {
		mrt = q[1] * 100u;
		p->v2_until = now + (uint64_t)p->qrv * p->qi_s * 1000 + mrt;
	} else {
		mrt = code_decode(q[1]) * 100u;
		if ((q[8] & 7) != 0)
			p->qrv = q[8] & 7;
		if (code_decode(q[9]) != 0)
			p->qi_s = code_decode(q[9]);
	}
	update_version(ig, port, now);
	delay = now + rand_ms(mrt);
	if (p->version == 3 && ver == 3) {
		if (group == 0) {
			/* 5.2 rules 1 and 2: one answer, at the earlier time */
			if (p->gq_due == 0 || p->gq_due > delay)
				p->gq_due = delay;
		} else if ((g = group_find(ig, group, (uint16_t)port, false)) != NULL &&
			   is_member(&g->cur)) {
			const uint32_t *qs = (const uint32_t *)(const void *)(q + 12);

			if (g->resp_due == 0) {           /* rule 3 */
				g->resp_sources = nsrc > 0;
				g->q_nsrc = 0;
			} else if (nsrc == 0 || !g->resp_sources) { /* rule 4 */
				g->resp_sources = false;
				g->q_nsrc = 0;
			}
			if (g->resp_sources)              /* rules 3 and 5 */
				for (uint32_t i = 0; i < nsrc; i++) {
					uint32_t a;

					memcpy(&a, &qs[i], 4);
					if (has(g->q_src, g->q_nsrc, a))
						continue;
					if (g->q_nsrc == DPSOCK_MC_IF_MAX_SRC) {
						g->resp_sources = false; /* answer for all */
						break;
					}
					g->q_src[g->q_nsrc++] = a;
				}
			if (g->resp_due == 0 || g->resp_due > delay)
				g->resp_due = delay;
		}
	} else if (p->version < 3) {
		/* v1/v2: each group its own delay, unless an earlier one runs */
		for (g = ig->groups; g != NULL; g = g->next) {
			if (g->port != port || !is_member(&g->cur) || (group != 0 && g->addr != group))
				continue;
			delay = now + rand_ms(mrt);
			if (g->resp_due == 0 || g->resp_due > delay)
				g->resp_due = delay;
			g->resp_sources = false;
		}
	}
	publish_port(ig, port, now);
}

/* Another host's v1/v2 report: in those modes it answers for the group,
 * so ours is not needed (RFC 2236 3: suppression). */
static void
on_report(struct dpsock_igmp *ig, unsigned int port, const uint8_t *r)
{
	struct ig_group *g;
	uint32_t group;

	memcpy(&group, r + 4, 4);
	dpsock_stat_add(&ig->w->stats->igmp_rx_report, 1);
	if (ig->ports[port].version == 3 || (g = group_find(ig, group, (uint16_t)port, false)) == NULL)
		return;
	g->resp_due = 0;
	g->reporter = false;
}

void
dpsock_igmp_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	struct dpsock_worker_stats *st = w->stats;
	const struct rte_ipv4_hdr *ip;
	struct dpsock_igmp *ig;
	const uint8_t *q;
	unsigned int hlen, tot, len;

	if (w->idx != DPSOCK_IGMP_WORKER) {
		/* one host per link: worker 0's */
		dpsock_worker_steer(w, &w->d->workers[DPSOCK_IGMP_WORKER], m);
		return;
	}
	ig = w->d->mc != NULL ? engine(w) : NULL;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	hlen = rte_ipv4_hdr_len(ip);
	tot = rte_be_to_cpu_16(ip->total_length);
	len = tot - hlen; /* the worker checked hlen <= tot <= the frame */
	q = (const uint8_t *)ip + hlen;
	if (ig == NULL || m->data_len < RTE_ETHER_HDR_LEN + tot || len < 8 ||
	    (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) ||
	    rte_raw_cksum(q, len) != 0xffff) {
		dpsock_stat_add(&st->igmp_rx_bad, 1);
		rte_pktmbuf_free(m);
		return;
	}
	switch (q[0]) {
	case IGMP_QUERY:
		on_query(ig, wp->port_idx, ip->src_addr, q, len);
		break;
	case IGMP_V1_REPORT:
	case IGMP_V2_REPORT:
		on_report(ig, wp->port_idx, q);
		break;
	case IGMP_V2_LEAVE:
	case IGMP_V3_REPORT:
		dpsock_stat_add(&st->igmp_rx_report, 1);
		break;
	default:
		dpsock_stat_add(&st->igmp_rx_bad, 1);
		break;
	}
	rte_pktmbuf_free(m);
	rearm(ig);
}

void
dpsock_igmp_fini(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;
	struct dpsock_igmp *ig = mc != NULL ? mc->igmp : NULL;
	struct ig_group *g;
	unsigned int i;

	if (ig == NULL || w->idx != DPSOCK_IGMP_WORKER)
		return;
	if (ig->armed)
		sys_untimeout(ig_timer, ig);
	/* leave every group on the link (once: the stack stops) */
	for (i = 0; i < w->n_ports; i++) {
		struct ig_pkt k = { .ig = ig, .port = i };

		for (g = ig->groups; g != NULL; g = g->next) {
			if (g->port != i || !is_member(&g->cur))
				continue;
			if (ig->ports[i].version == 3)
				pkt_record(&k, REC_TO_IN, g->addr, NULL, 0);
			else if (ig->ports[i].version == 2 && g->reporter)
				send_old(ig, i, IGMP_V2_LEAVE, g->addr);
		}
		pkt_flush(&k);
	}
	dpsock_worker_flush(w);
	while (ig->groups != NULL) {
		g = ig->groups;
		ig->groups = g->next;
		free(g);
	}
	free(ig);
	mc->igmp = NULL;
}
