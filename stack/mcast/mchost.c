/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The multicast hosts of each port: IGMP for IPv4 (RFC 3376, IGMPv3, with
 * the RFC 2236 / 1112 compatibility modes of its section 7) and MLD for
 * IPv6 (RFC 3810, MLDv2, with the MLDv1 mode of RFC 2710 as its section 8
 * says), run by one worker (DPSOCK_IGMP_WORKER) for the whole stack: a link
 * needs one host per address, whatever the number of workers and of their
 * lwIP instances. lwIP's own IGMP and MLD are off (lwipopts.h): they speak
 * IGMPv2 and MLDv1 only, per instance.
 *
 * MLDv2 is IGMPv3 with 16-byte addresses (its records, its rules 5.1 and
 * 5.2 are those of RFC 3376), so one state machine serves both; a dialect
 * (struct dialect) says what differs: message types and layouts, the
 * frames (MLD: ICMPv6 behind a hop-by-hop header with Router Alert, hop
 * limit 1, from the port's link-local address), the Max Response Code's
 * encoding, the counters. Internally a port's mode is IGMP's number: 3
 * with source lists, 2 reports and leaves (MLDv1: reports and dones), 1
 * reports alone (IGMPv1; MLD has none); MLD publishes it less one.
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
 * MLD: IPv6 with a hop-by-hop header (Router Alert), hop limit 1, from the
 * port's link-local address; v2 reports to ff02::16, v1 reports to the
 * group, dones to ff02::2. A query from a source that is not link-local,
 * or with another hop limit, is dropped (RFC 3810 5.1.14). The MLD host
 * also reports the solicited-node groups of the port's own addresses.
 * Queries reach any worker (the port's RSS or fanout decides): they are
 * handed to DPSOCK_IGMP_WORKER over its steering ring. Timers are lwIP
 * timeouts of that worker, so that its sleeps end in time.
 */

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "core/lwip_compat_priv.h"

#include "lwip/netif.h"
#include "lwip/timeouts.h"

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "core/log_priv.h"
#include "mcast_priv.h"

#define IGMP_QUERY 0x11
#define IGMP_V1_REPORT 0x12
#define IGMP_V2_REPORT 0x16
#define IGMP_V2_LEAVE 0x17
#define IGMP_V3_REPORT 0x22

#define MLD_QUERY 130
#define MLD_V1_REPORT 131
#define MLD_V1_DONE 132
#define MLD_V2_REPORT 143

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
#define IP6_HLEN_RA 48              /* IPv6 header + hop-by-hop header with Router Alert */

#define STAT(ig, field) ((uint64_t *)(void *)((char *)(ig)->w->stats + (ig)->dl->field))
#define OFF(name) offsetof(struct dpsock_worker_stats, name)

/* What IGMP and MLD do differently. */
struct dialect {
	const char *name;           /* "IGMP", "MLD" */
	bool v6;
	uint8_t alen;               /* address bytes: 4, 16 */
	uint8_t hlen;               /* IP header bytes before the message */
	uint8_t old_len;            /* a v1/v2 report or leave (IGMP), v1 report or done (MLD) */
	uint8_t old_group;          /* ... the group's offset there */
	uint8_t t_query, t_old_report, t_leave, t_new_report;
	/* queries: the old form's length, the new form's minimum, offsets */
	uint8_t q_old_len, q_new_len, q_group, q_qrv, q_qqic, q_nsrc, q_src;
	uint8_t version_less;       /* published version = mode - version_less */
	struct dpsock_mc_addr new_dst;  /* where the new reports go */
	struct dpsock_mc_addr leave_dst;
	size_t rx_query[4], rx_report, rx_bad, tx_new, tx_old[3], tx_leave, version_changes;
};

static const struct dialect igmp = {
	.name = "IGMP", .v6 = false, .alen = 4, .hlen = IP_HLEN_RA,
	.old_len = 8, .old_group = 4,
	.t_query = IGMP_QUERY, .t_old_report = IGMP_V2_REPORT, .t_leave = IGMP_V2_LEAVE,
	.t_new_report = IGMP_V3_REPORT,
	.q_old_len = 8, .q_new_len = 12, .q_group = 4, .q_qrv = 8, .q_qqic = 9, .q_nsrc = 10,
	.q_src = 12, .version_less = 0,
	.new_dst = { { 0, 0, DPSOCK_MC_V4MAPPED, V3_ROUTERS } },
	.leave_dst = { { 0, 0, DPSOCK_MC_V4MAPPED, ALL_ROUTERS } },
	.rx_query = { 0, OFF(igmp_rx_query_v1), OFF(igmp_rx_query_v2), OFF(igmp_rx_query_v3) },
	.rx_report = OFF(igmp_rx_report), .rx_bad = OFF(igmp_rx_bad),
	.tx_new = OFF(igmp_tx_report_v3),
	.tx_old = { 0, OFF(igmp_tx_report_v1), OFF(igmp_tx_report_v2) },
	.tx_leave = OFF(igmp_tx_leave), .version_changes = OFF(igmp_version_changes),
};

/* ff02::16 (all MLDv2-capable routers), ff02::2 (all routers) */
#define FF02 RTE_BE32(0xff020000)
static const struct dialect mld = {
	.name = "MLD", .v6 = true, .alen = 16, .hlen = IP6_HLEN_RA,
	.old_len = 24, .old_group = 8,
	.t_query = MLD_QUERY, .t_old_report = MLD_V1_REPORT, .t_leave = MLD_V1_DONE,
	.t_new_report = MLD_V2_REPORT,
	.q_old_len = 24, .q_new_len = 28, .q_group = 8, .q_qrv = 24, .q_qqic = 25, .q_nsrc = 26,
	.q_src = 28, .version_less = 1,
	.new_dst = { { FF02, 0, 0, RTE_BE32(0x16) } },
	.leave_dst = { { FF02, 0, 0, RTE_BE32(2) } },
	/* MLDv1 is mode 2, MLDv2 mode 3 */
	.rx_query = { 0, 0, OFF(mld_rx_query_v1), OFF(mld_rx_query_v2) },
	.rx_report = OFF(mld_rx_report), .rx_bad = OFF(mld_rx_bad),
	.tx_new = OFF(mld_tx_report_v2),
	.tx_old = { 0, 0, OFF(mld_tx_report_v1) },
	.tx_leave = OFF(mld_tx_done), .version_changes = OFF(mld_version_changes),
};

struct ig_group {
	struct ig_group *next;
	struct dpsock_mc_addr addr;
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
	struct dpsock_mc_addr q_src[DPSOCK_MC_IF_MAX_SRC];
};

struct ig_port {
	uint8_t version;            /* compatibility mode: 3, 2, 1 */
	uint8_t qrv;                /* the querier's robustness */
	uint32_t qi_s;              /* ... and query interval */
	uint64_t v1_until, v2_until; /* ms: an older querier is present until then */
	uint64_t gq_due;            /* ms: answer to a general query (v3), 0: none */
	struct dpsock_mc_addr querier;
	uint64_t query_ns;
	uint16_t ip_id;
};

struct dpsock_mc_host {
	const struct dialect *dl;
	struct dpsock_worker *w;
	uint32_t gen;               /* registry generation followed */
	struct ig_group *groups;
	struct ig_port ports[DPSOCK_MAX_PORTS];
	bool armed;                 /* an lwIP timeout is set */
};

/* A report being built for one port. */
struct ig_pkt {
	struct dpsock_mc_host *ig;
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

/* MLDv2's Max Response Code (RFC 3810 5.1.3): ms, a 16-bit float */
static uint32_t
code16_decode(uint16_t c)
{
	return c < 32768 ? c : (uint32_t)((c & 0x0fff) | 0x1000) << (((c >> 12) & 0x07) + 3);
}

static bool
has(const struct dpsock_mc_addr *l, unsigned int n, struct dpsock_mc_addr a)
{
	for (unsigned int i = 0; i < n; i++)
		if (dpsock_mc_addr_eq(l[i], a))
			return true;
	return false;
}

/* out = a - b; returns its length */
static unsigned int
minus(struct dpsock_mc_addr *out, const struct dpsock_mc_addr *a, unsigned int na,
      const struct dpsock_mc_addr *b, unsigned int nb)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < na; i++)
		if (!has(b, nb, a[i]))
			out[n++] = a[i];
	return n;
}

/* out = a ∩ b */
static unsigned int
both(struct dpsock_mc_addr *out, const struct dpsock_mc_addr *a, unsigned int na,
     const struct dpsock_mc_addr *b, unsigned int nb)
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
tx(struct dpsock_mc_host *ig, unsigned int port, struct rte_mbuf *m)
{
	dpsock_netif_send_raw(&ig->w->ports[port], m);
}

/* An IPv6 header with a hop-by-hop header carrying Router Alert (MLD,
 * RFC 2711), hop limit 1, from the port's link-local address (RFC 3810
 * 5: a report's source is link-local). */
static uint8_t *
frame_ip6(struct dpsock_mc_host *ig, unsigned int port, struct dpsock_mc_addr dst,
	  struct rte_ether_hdr *eth)
{
	struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(eth + 1);
	uint8_t *hbh = (uint8_t *)(ip6 + 1);

	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
	memset(ip6, 0, IP6_HLEN_RA);
	ip6->vtc_flow = RTE_BE32(6u << 28);
	ip6->proto = IPPROTO_HOPOPTS;
	ip6->hop_limits = 1;
	memcpy(ip6->src_addr, netif_ip6_addr(&ig->w->ports[port].netif, 0)->addr, 16);
	memcpy(ip6->dst_addr, dst.w, 16);
	hbh[0] = IPPROTO_ICMPV6;
	hbh[1] = 0;                  /* 8 bytes */
	hbh[2] = 5;                  /* Router Alert, value 0: MLD */
	hbh[3] = 2;
	hbh[6] = 1;                  /* PadN of 2 */
	return (uint8_t *)ip6 + IP6_HLEN_RA;
}

/* An mbuf with Ethernet and IP (Router Alert) headers for dst; the IGMP
 * or MLD message goes at the returned pointer. */
static uint8_t *
frame_new(struct dpsock_mc_host *ig, unsigned int port, struct dpsock_mc_addr dst,
	  struct rte_mbuf **mp)
{
	const struct dpsock_stack *d = ig->w->d;
	const struct dpsock_port *p = &d->ports[port];
	struct rte_mbuf *m = rte_pktmbuf_alloc(p->pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	const uint8_t *b = (const uint8_t *)dst.w;
	uint8_t *o;

	*mp = m;
	if (m == NULL) {
		dpsock_stat_add(&ig->w->stats->tx_nombuf, 1);
		return NULL;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	/* 01:00:5e + an IPv4 group's low 23 bits (RFC 1112 6.4), 33:33 + an
	 * IPv6 group's low 32 bits (RFC 2464 7) */
	eth->dst_addr.addr_bytes[0] = ig->dl->v6 ? 0x33 : 0x01;
	eth->dst_addr.addr_bytes[1] = ig->dl->v6 ? 0x33 : 0x00;
	eth->dst_addr.addr_bytes[2] = ig->dl->v6 ? b[12] : 0x5e;
	eth->dst_addr.addr_bytes[3] = ig->dl->v6 ? b[13] : b[13] & 0x7f;
	eth->dst_addr.addr_bytes[4] = b[14];
	eth->dst_addr.addr_bytes[5] = b[15];
	rte_ether_addr_copy(&p->mac, &eth->src_addr);
	if (ig->dl->v6)
		return frame_ip6(ig, port, dst, eth);
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
	ip->dst_addr = dst.w[3];
	o = (uint8_t *)(ip + 1);
	o[0] = 0x94;                 /* Router Alert (RFC 2113): copied, option 20 */
	o[1] = 4;
	return (uint8_t *)ip + IP_HLEN_RA;
}

/* ICMPv6's checksum of an MLD message (RFC 4443 2.3: over the pseudo
 * header of RFC 8200 8.1). */
static uint16_t
icmp6_cksum(const struct rte_ipv6_hdr *ip6, const uint8_t *msg, uint16_t len)
{
	uint32_t ph[2] = { rte_cpu_to_be_32(len), rte_cpu_to_be_32(IPPROTO_ICMPV6) };
	uint32_t sum = rte_raw_cksum(ip6->src_addr, 32) + rte_raw_cksum(ph, sizeof(ph)) +
		       rte_raw_cksum(msg, len);

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Lengths and checksums, then out. */
static void
frame_send(struct dpsock_mc_host *ig, unsigned int port, struct rte_mbuf *m, uint16_t msg_len)
{
	uint8_t *l3 = rte_pktmbuf_mtod_offset(m, uint8_t *, RTE_ETHER_HDR_LEN);
	uint8_t *msg = l3 + ig->dl->hlen;
	uint16_t ck;

	msg[2] = msg[3] = 0;
	if (ig->dl->v6) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)l3;

		ip6->payload_len = rte_cpu_to_be_16(IP6_HLEN_RA - sizeof(*ip6) + msg_len);
		ck = icmp6_cksum(ip6, msg, msg_len);
	} else {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		ck = (uint16_t)~rte_raw_cksum(msg, msg_len);
		ip->total_length = rte_cpu_to_be_16(IP_HLEN_RA + msg_len);
		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	memcpy(msg + 2, &ck, 2);
	m->data_len = m->pkt_len = RTE_ETHER_HDR_LEN + ig->dl->hlen + msg_len;
	tx(ig, port, m);
}

/* An old report (IGMPv1/v2, MLDv1: version 1 or 2 of the mode), or a leave
 * (IGMPv2 leave, MLDv1 done). */
static void
send_old(struct dpsock_mc_host *ig, unsigned int port, bool leave, unsigned int mode,
	 struct dpsock_mc_addr group)
{
	const struct dialect *dl = ig->dl;
	struct rte_mbuf *m;
	uint8_t *b = frame_new(ig, port, leave ? dl->leave_dst : group, &m);

	if (b == NULL)
		return;
	memset(b, 0, dl->old_len);
	b[0] = leave ? dl->t_leave : mode == 1 ? IGMP_V1_REPORT : dl->t_old_report;
	memcpy(b + dl->old_group, (const uint8_t *)group.w + 16 - dl->alen, dl->alen);
	frame_send(ig, port, m, dl->old_len);
	dpsock_stat_add(leave ? STAT(ig, tx_leave) : STAT(ig, tx_old[mode]), 1);
}

static void
pkt_flush(struct ig_pkt *k)
{
	uint16_t n = rte_cpu_to_be_16(k->nrec);

	if (k->m == NULL)
		return;
	memcpy(k->igmp + 6, &n, 2);
	frame_send(k->ig, k->port, k->m, k->len);
	dpsock_stat_add(STAT(k->ig, tx_new), 1);
	k->m = NULL;
}

/* Append one group record to a v3 (MLDv2) report (a new frame when it
 * would pass the port's MTU). */
static void
pkt_record(struct ig_pkt *k, uint8_t type, struct dpsock_mc_addr group,
	   const struct dpsock_mc_addr *src, unsigned int n)
{
	const struct dialect *dl = k->ig->dl;
	unsigned int mtu = k->ig->w->d->ports[k->port].mtu, need = 4 + dl->alen * (1 + n);
	unsigned int off = 16 - dl->alen; /* an IPv4 address: the mapped form's last word */
	uint8_t *r;
	uint16_t ns = rte_cpu_to_be_16((uint16_t)n);

	if (k->m != NULL && dl->hlen + k->len + need > mtu)
		pkt_flush(k);
	if (k->m == NULL) {
		k->igmp = frame_new(k->ig, k->port, dl->new_dst, &k->m);
		if (k->igmp == NULL)
			return;
		memset(k->igmp, 0, 8);
		k->igmp[0] = dl->t_new_report;
		k->len = 8;
		k->nrec = 0;
	}
	r = k->igmp + k->len;
	r[0] = type;
	r[1] = 0;                    /* no auxiliary data */
	memcpy(r + 2, &ns, 2);
	memcpy(r + 4, (const uint8_t *)group.w + off, dl->alen);
	for (unsigned int i = 0; i < n; i++)
		memcpy(r + 4 + dl->alen * (1 + i), (const uint8_t *)src[i].w + off, dl->alen);
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
	struct dpsock_mc_addr tmp[DPSOCK_MC_IF_MAX_SRC];
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
change_send(struct dpsock_mc_host *ig, struct ig_group *g, uint64_t now)
{
	const struct ig_port *p = &ig->ports[g->port];

	if (p->version == 3) {
		struct ig_pkt k = { .ig = ig, .port = g->port };

		change_records(&k, g);
		pkt_flush(&k);
	} else if (is_member(&g->cur)) {
		send_old(ig, g->port, false, p->version, g->addr);
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
change(struct dpsock_mc_host *ig, struct ig_group *g, const struct dpsock_mc_ifstate *st,
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
			send_old(ig, g->port, true, 2, g->addr);
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
	struct dpsock_mc_addr tmp[DPSOCK_MC_IF_MAX_SRC];
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
answer_group(struct dpsock_mc_host *ig, struct ig_group *g)
{
	const struct ig_port *p = &ig->ports[g->port];

	if (p->version == 3) {
		struct ig_pkt k = { .ig = ig, .port = g->port };

		current_record(&k, g);
		pkt_flush(&k);
	} else if (is_member(&g->cur)) {
		send_old(ig, g->port, false, p->version, g->addr);
		g->reporter = true;
	}
	g->resp_due = 0;
	g->resp_sources = false;
	g->q_nsrc = 0;
}

/* v3 answer to a general query: every group of the port. */
static void
answer_general(struct dpsock_mc_host *ig, unsigned int port)
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
next_due(const struct dpsock_mc_host *ig, unsigned int n_ports)
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
rearm(struct dpsock_mc_host *ig)
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
publish_port(struct dpsock_mc_host *ig, unsigned int port, uint64_t now)
{
	const struct ig_port *p = &ig->ports[port];
	struct dpsock_mc_port_row row = {
		.version = (uint8_t)(p->version - ig->dl->version_less),
		.robustness = p->qrv,
		.query_ns = p->query_ns,
	};
	uint64_t until = RTE_MAX(p->v1_until, p->v2_until);
	struct timespec ts;

	if (until > now) {
		clock_gettime(CLOCK_REALTIME, &ts);
		row.older_until_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
				     (until - now) * 1000000ull;
	}
	if (p->query_ns != 0)
		memcpy(row.querier, p->querier.w, 16);
	dpsock_mcast_publish_port(ig->w->d, port, ig->dl->v6, &row);
}

/* The port's mode from its older-querier timers; a change cancels every
 * pending answer and retransmission (RFC 3376 7.2.1). */
static void
update_version(struct dpsock_mc_host *ig, unsigned int port, uint64_t now)
{
	struct ig_port *p = &ig->ports[port];
	uint8_t v = p->v1_until > now ? 1 : p->v2_until > now ? 2 : 3;
	struct ig_group *g;

	if (v == p->version)
		return;
	DPSOCK_LOG(INFO, main, "port %s: %s compatibility mode v%u -> v%u",
		   ig->w->d->ports[port].name, ig->dl->name, p->version - ig->dl->version_less,
		   v - ig->dl->version_less);
	dpsock_stat_add(STAT(ig, version_changes), 1);
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
prune(struct dpsock_mc_host *ig)
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
run_due(struct dpsock_mc_host *ig, uint64_t now)
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
	struct dpsock_mc_host *ig = arg;

	ig->armed = false;
	run_due(ig, now_ms());
	rearm(ig);
}

/* ---- following the registry -------------------------------------------------------- */

static struct ig_group *
group_find(struct dpsock_mc_host *ig, struct dpsock_mc_addr addr, uint16_t port, bool create)
{
	struct ig_group *g;

	for (g = ig->groups; g != NULL; g = g->next)
		if (dpsock_mc_addr_eq(g->addr, addr) && g->port == port)
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

/* Worker 0's host of one family, created at its first use. */
static struct dpsock_mc_host *
engine(struct dpsock_worker *w, bool v6)
{
	struct dpsock_mcast *mc = w->d->mc;
	struct dpsock_mc_host *ig = mc->host[v6];
	unsigned int i;

	if (ig != NULL)
		return ig;
	ig = calloc(1, sizeof(*ig));
	if (ig == NULL)
		return NULL;
	ig->dl = v6 ? &mld : &igmp;
	ig->w = w;
	ig->gen = UINT32_MAX;
	for (i = 0; i < DPSOCK_MAX_PORTS; i++) {
		ig->ports[i].version = 3;
		ig->ports[i].qrv = QRV_DEFAULT;
		ig->ports[i].qi_s = QI_DEFAULT_S;
	}
	mc->host[v6] = ig;
	return ig;
}

/* MLD: the solicited-node groups of each IPv6 port's own addresses (its
 * link-local one, address6), members for good, as Linux reports them
 * (RFC 3810 6: never all-nodes): a switch that snoops MLD then keeps
 * sending this host its neighbour solicitations. */
static void
own_groups(struct dpsock_mc_host *ig, uint64_t now)
{
	const struct dpsock_mc_ifstate all = { .mode = DPSOCK_MC_EXCLUDE };
	struct dpsock_worker *w = ig->w;

	for (unsigned int p = 0; p < w->n_ports; p++) {
		const struct netif *nif = &w->ports[p].netif;

		if (w->d->ports[p].shared)
			continue;
		for (unsigned int i = 0; i < LWIP_IPV6_NUM_ADDRESSES; i++) {
			/* ff02::1:ff00:0/104 + the address's low 24 bits */
			struct dpsock_mc_addr sn = { { RTE_BE32(0xff020000), 0, RTE_BE32(1),
						       RTE_BE32(0xff000000) } };
			struct ig_group *g;

			if (!ip6_addr_isvalid(netif_ip6_addr_state(nif, i)))
				continue;
			sn.w[3] |= netif_ip6_addr(nif, i)->addr[3] & RTE_BE32(0x00ffffff);
			g = group_find(ig, sn, (uint16_t)p, true);
			if (g == NULL)
				continue;
			g->in_registry = true;
			if (!state_equal(&g->cur, &all))
				change(ig, g, &all, now);
		}
	}
}

/* Copy the registry's (port, group, state) of this family out under its
 * lock, then act. */
static void
sync_registry(struct dpsock_mc_host *ig)
{
	struct dpsock_mcast *mc = ig->w->d->mc;
	struct snap { struct dpsock_mc_addr addr; uint16_t port; struct dpsock_mc_ifstate st; } *v;
	const struct dpsock_mc_group *rg;
	const struct dpsock_mc_ifstate none = { .mode = DPSOCK_MC_INCLUDE };
	struct ig_group *g;
	uint64_t now = now_ms();
	uint32_t n = 0, i;

	v = NULL;
	rte_spinlock_lock(&mc->lock);
	if (mc->n_groups > 0 && (v = malloc(mc->n_groups * sizeof(*v))) == NULL) {
		rte_spinlock_unlock(&mc->lock);
		return; /* retried at the next poll: gen is not taken */
	}
	for (rg = mc->groups; rg != NULL; rg = rg->next) {
		if (dpsock_mc_addr_is4(rg->addr) == ig->dl->v6)
			continue;
		v[n].addr = rg->addr;
		v[n].port = rg->port;
		v[n++].st = rg->st;
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
	if (ig->dl->v6)
		own_groups(ig, now);
	for (g = ig->groups; g != NULL; g = g->next)
		if (!g->in_registry && !state_equal(&g->cur, &none))
			change(ig, g, &none, now);
	free(v);
	prune(ig);
	rearm(ig);
}

static uint32_t
host_gen(const struct dpsock_mcast *mc, bool v6)
{
	return mc->host[v6] != NULL ? mc->host[v6]->gen : UINT32_MAX;
}

unsigned int
dpsock_igmp_poll(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;
	unsigned int work = 0;
	uint32_t gen;

	if (mc == NULL || w->idx != DPSOCK_IGMP_WORKER)
		return 0;
	/* acquire: pairs with the registry's release of gen */
	gen = __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE);
	for (unsigned int v6 = 0; v6 < 2; v6++) {
		struct dpsock_mc_host *ig;

		if (gen == host_gen(mc, v6) || (ig = engine(w, v6)) == NULL)
			continue;
		sync_registry(ig);
		work++;
	}
	return work;
}

bool
dpsock_igmp_pending(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;
	uint32_t gen;

	if (mc == NULL || w->idx != DPSOCK_IGMP_WORKER)
		return false;
	gen = __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE);
	return gen != host_gen(mc, false) || gen != host_gen(mc, true);
}

/* ---- what others say --------------------------------------------------------------- */

static struct dpsock_mc_addr
msg_addr(const struct dialect *dl, const uint8_t *p)
{
	uint32_t a;

	if (dl->v6)
		return dpsock_mc_addr6(p);
	memcpy(&a, p, 4);
	return dpsock_mc_addr4(a);
}

static void
on_query(struct dpsock_mc_host *ig, unsigned int port, struct dpsock_mc_addr src,
	 const uint8_t *q, unsigned int len)
{
	const struct dialect *dl = ig->dl;
	struct ig_port *p = &ig->ports[port];
	struct dpsock_mc_addr group = msg_addr(dl, q + dl->q_group);
	static const struct dpsock_mc_addr any6;
	uint32_t mrt, nsrc = 0;
	uint64_t now = now_ms(), delay;
	unsigned int ver;             /* the query's, as a mode: 3, 2, 1 */
	struct ig_group *g;
	struct timespec ts;
	uint16_t c16;
	bool general;

	if (len == dl->q_old_len) {
		ver = dl->v6 ? 2 : q[1] == 0 ? 1 : 2;
	} else if (len >= dl->q_new_len) {
		uint16_t ns;

		memcpy(&ns, q + dl->q_nsrc, 2);
		nsrc = rte_be_to_cpu_16(ns);
		if (len < dl->q_new_len + dl->alen * nsrc) {
			dpsock_stat_add(STAT(ig, rx_bad), 1);
			return;
		}
		ver = 3;
	} else {
		dpsock_stat_add(STAT(ig, rx_bad), 1); /* no version has this length */
		return;
	}
	general = dl->v6 ? dpsock_mc_addr_eq(group, any6) : group.w[3] == 0;
	if (!general && !dpsock_mc_is_group(group)) {
		dpsock_stat_add(STAT(ig, rx_bad), 1);
		return;
	}
	dpsock_stat_add(STAT(ig, rx_query[ver]), 1);
	p->querier = src;
	clock_gettime(CLOCK_REALTIME, &ts);
	p->query_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	memcpy(&c16, q + 4, 2);
	if (ver == 1) {
		mrt = V1_MRT_MS;
		/* Older Version Querier Present Timeout (8.12) */
		p->v1_until = now + (uint64_t)p->qrv * p->qi_s * 1000 + mrt;
	} else if (ver == 2) {
		/* IGMPv2: tenths of a second; MLDv1: ms */
		mrt = dl->v6 ? rte_be_to_cpu_16(c16) : q[1] * 100u;
		p->v2_until = now + (uint64_t)p->qrv * p->qi_s * 1000 + mrt;
	} else {
		mrt = dl->v6 ? code16_decode(rte_be_to_cpu_16(c16)) : code_decode(q[1]) * 100u;
		if ((q[dl->q_qrv] & 7) != 0)
			p->qrv = q[dl->q_qrv] & 7;
		if (code_decode(q[dl->q_qqic]) != 0)
			p->qi_s = code_decode(q[dl->q_qqic]);
	}
	update_version(ig, port, now);
	delay = now + rand_ms(mrt);
	if (p->version == 3 && ver == 3) {
		if (general) {
			/* 5.2 rules 1 and 2: one answer, at the earlier time */
			if (p->gq_due == 0 || p->gq_due > delay)
				p->gq_due = delay;
		} else if ((g = group_find(ig, group, (uint16_t)port, false)) != NULL &&
			   is_member(&g->cur)) {
			if (g->resp_due == 0) {           /* rule 3 */
				g->resp_sources = nsrc > 0;
				g->q_nsrc = 0;
			} else if (nsrc == 0 || !g->resp_sources) { /* rule 4 */
				g->resp_sources = false;
				g->q_nsrc = 0;
			}
			if (g->resp_sources)              /* rules 3 and 5 */
				for (uint32_t i = 0; i < nsrc; i++) {
					struct dpsock_mc_addr a = msg_addr(dl, q + dl->q_src + dl->alen * i);

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
			if (g->port != port || !is_member(&g->cur) ||
			    (!general && !dpsock_mc_addr_eq(g->addr, group)))
				continue;
			delay = now + rand_ms(mrt);
			if (g->resp_due == 0 || g->resp_due > delay)
				g->resp_due = delay;
			g->resp_sources = false;
		}
	}
	publish_port(ig, port, now);
}

/* Another host's old report: in the old modes it answers for the group,
 * so ours is not needed (RFC 2236 3, RFC 2710 4: suppression). */
static void
on_report(struct dpsock_mc_host *ig, unsigned int port, const uint8_t *r)
{
	struct ig_group *g;

	dpsock_stat_add(STAT(ig, rx_report), 1);
	if (ig->ports[port].version == 3 ||
	    (g = group_find(ig, msg_addr(ig->dl, r + ig->dl->old_group), (uint16_t)port,
			    false)) == NULL)
		return;
	g->resp_due = 0;
	g->reporter = false;
}

/* One message of the dialect, checked (length, checksum) by the caller. */
static void
on_message(struct dpsock_mc_host *ig, unsigned int port, struct dpsock_mc_addr src,
	   const uint8_t *q, unsigned int len)
{
	const struct dialect *dl = ig->dl;

	if (q[0] == dl->t_query)
		on_query(ig, port, src, q, len);
	else if ((q[0] == dl->t_old_report || (!dl->v6 && q[0] == IGMP_V1_REPORT)) &&
		 len >= dl->old_len)
		on_report(ig, port, q);
	else if (q[0] == dl->t_leave || q[0] == dl->t_new_report)
		dpsock_stat_add(STAT(ig, rx_report), 1);
	else
		dpsock_stat_add(STAT(ig, rx_bad), 1);
	rearm(ig);
}

void
dpsock_igmp_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	struct dpsock_worker_stats *st = w->stats;
	const struct rte_ipv4_hdr *ip;
	struct dpsock_mc_host *ig;
	const uint8_t *q;
	unsigned int hlen, tot, len;

	if (w->idx != DPSOCK_IGMP_WORKER) {
		/* one host per link: worker 0's */
		dpsock_worker_steer(w, &w->d->workers[DPSOCK_IGMP_WORKER], m);
		return;
	}
	ig = w->d->mc != NULL ? engine(w, false) : NULL;
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
	on_message(ig, wp->port_idx, dpsock_mc_addr4(ip->src_addr), q, len);
	rte_pktmbuf_free(m);
}

unsigned int
dpsock_mld_offset(const struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip6 = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *,
								 RTE_ETHER_HDR_LEN);
	const uint8_t *h = (const uint8_t *)(ip6 + 1);
	unsigned int off = RTE_ETHER_HDR_LEN + sizeof(*ip6), hl;

	/* MLD is ICMPv6 behind a hop-by-hop header (RFC 3810 5); the caller
	 * checked the fixed header */
	if (ip6->proto != IPPROTO_HOPOPTS || m->data_len < off + 8)
		return 0;
	hl = (h[1] + 1u) * 8;
	if (h[0] != IPPROTO_ICMPV6 || m->data_len < off + hl + 4)
		return 0;
	switch (h[hl]) {
	case MLD_QUERY:
	case MLD_V1_REPORT:
	case MLD_V1_DONE:
	case MLD_V2_REPORT:
		return off + hl;
	default:
		return 0;
	}
}

void
dpsock_mld_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	const struct rte_ipv6_hdr *ip6;
	struct dpsock_mc_host *ig;
	unsigned int off, end;
	const uint8_t *q;

	if (w->idx != DPSOCK_IGMP_WORKER) {
		dpsock_worker_steer(w, &w->d->workers[DPSOCK_IGMP_WORKER], m);
		return;
	}
	ig = w->d->mc != NULL ? engine(w, true) : NULL;
	ip6 = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	off = dpsock_mld_offset(m);
	end = RTE_ETHER_HDR_LEN + sizeof(*ip6) + rte_be_to_cpu_16(ip6->payload_len);
	q = rte_pktmbuf_mtod_offset(m, const uint8_t *, off);
	/* RFC 3810 5.1.14 / 5.2.13: hop limit 1, a link-local source (a
	 * report may come from ::); the worker checked the payload length
	 * against the frame */
	if (ig == NULL || off == 0 || end < off + 8 || end > m->data_len ||
	    ip6->hop_limits != 1 ||
	    !((ip6->src_addr[0] == 0xfe && (ip6->src_addr[1] & 0xc0) == 0x80) || q[0] != MLD_QUERY) ||
	    icmp6_cksum(ip6, q, (uint16_t)(end - off)) != 0) {
		dpsock_stat_add(&w->stats->mld_rx_bad, 1);
		rte_pktmbuf_free(m);
		return;
	}
	on_message(ig, wp->port_idx, dpsock_mc_addr6(ip6->src_addr), q, end - off);
	rte_pktmbuf_free(m);
}

void
dpsock_igmp_fini(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;

	if (mc == NULL || w->idx != DPSOCK_IGMP_WORKER)
		return;
	for (unsigned int v6 = 0; v6 < 2; v6++) {
		struct dpsock_mc_host *ig = mc->host[v6];
		struct ig_group *g;
		unsigned int i;

		if (ig == NULL)
			continue;
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
					send_old(ig, i, true, 2, g->addr);
			}
			pkt_flush(&k);
		}
		while (ig->groups != NULL) {
			g = ig->groups;
			ig->groups = g->next;
			free(g);
		}
		free(ig);
		mc->host[v6] = NULL;
	}
	dpsock_worker_flush(w);
}
