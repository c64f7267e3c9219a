/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Flow steering: how every packet of a connection reaches the worker that
 * owns it.
 *
 * Passive connections need nothing: a connection belongs to the worker whose
 * queue got its SYN, and RSS (or af_packet's fanout hash) keeps sending the
 * flow there. Active opens choose their local port so that the answer comes
 * back to the opening worker. Three backends, chosen once at start:
 *
 *   toeplitz  the port exposes its RSS key and RETA: pick a local port whose
 *             Toeplitz hash of the 4-tuple maps to the worker's queue;
 *   rte_flow  the port validates 5-tuple rules: any free port, plus a rule
 *             sending that flow to the worker's queue;
 *   software  neither (af_packet, small NICs): any free port; the worker
 *             that receives a segment for it hands it over through the
 *             owner's steering ring.
 *
 * All backends share one port allocator and TIME_WAIT view: port_owner[p]
 * says which worker owns local port p, from the active open until lwIP frees
 * the pcb after TIME_WAIT, so no worker reuses a port another one's
 * connection still lingers on. The same table is the software backend's
 * redirect, and the safety net of the other two (a rule that could not be
 * installed, a RETA that changed).
 *
 * IP fragments carry ports only in the first piece, so every fragment of a
 * datagram goes to one worker, chosen from (source, destination, id,
 * protocol), where lwIP reassembles it.
 */

#include <errno.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_random.h>
#include <rte_thash.h>

#include "dpsock_lwip_pcb_index.h"

#include "core/stack_priv.h"
#include "frame_priv.h"
#include "core/log_priv.h"

/* Try to take port p for worker w. */
static inline bool
port_take(struct dpsock_stack *d, uint16_t p, const struct dpsock_worker *w)
{
	uint8_t expect = 0;

	/* acq_rel: the winner's later stores (rules, pcb) follow the claim;
	 * pairs with the release in port_give */
	return __atomic_compare_exchange_n(&d->port_owner[p], &expect, (uint8_t)(w->idx + 1), false,
					   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static inline void
port_give(struct dpsock_stack *d, uint16_t p)
{
	/* release: everything done with the port (rule removed) is visible
	 * before another worker can take it */
	__atomic_store_n(&d->port_owner[p], 0, __ATOMIC_RELEASE);
}

typedef bool (*port_accept_fn)(struct dpsock_worker *w, uint16_t p, const void *ctx);

/* Walk up to max ports of the ephemeral range from the worker's hint;
 * accept(p) decides. */
static uint16_t
port_scan(struct dpsock_worker *w, port_accept_fn accept, const void *ctx, uint32_t max)
{
	struct dpsock_stack *d = w->d;
	uint32_t span = d->eph_max - d->eph_min + 1u, i;

	for (i = 0; i < span && i < max; i++) {
		uint16_t p = d->eph_min + (w->port_hint + i) % span;

		if (__atomic_load_n(&d->port_owner[p], __ATOMIC_RELAXED) != 0)
			continue;
		if (accept != NULL && !accept(w, p, ctx))
			continue;
		if (port_take(d, p, w)) {
			w->port_hint = (w->port_hint + i + 1) % span;
			return p;
		}
	}
	if (i < span)
		w->port_hint = (w->port_hint + i) % span;
	return 0;
}

struct reuse_ctx {
	struct dpsock_worker *w;
	port_accept_fn accept;
	const void *ctx;
};

/* A TIME_WAIT pcb of this worker's lwIP instance holds port p: is it ours
 * (claimed by this worker's active open) and right for the new connection? */
static bool
reuse_owned(uint16_t p, void *arg)
{
	const struct reuse_ctx *r = arg;

	return __atomic_load_n(&r->w->d->port_owner[p], __ATOMIC_RELAXED) == r->w->idx + 1 &&
	       (r->accept == NULL || r->accept(r->w, p, r->ctx));
}

/*
 * A local port for a new connection. Ports stay taken through TIME_WAIT
 * (lwIP's 2 MSL, 10 s), so a client opening more than range / 10 s
 * connections per second runs out, and every search would then walk the
 * whole range. So: a short scan for a free port; else the port of this
 * worker's oldest TIME_WAIT connection that is old enough
 * (TW_REUSE_MIN_MS, timestamps on: Linux's tcp_tw_reuse rule), freed early
 * (counted in tcp_tw_reused); else the whole range.
 */
#define PORT_SCAN_FAST 64
#define TW_REUSE_MIN_MS 1000
#define TW_REUSE_SCAN 16

static uint16_t
port_search(struct dpsock_worker *w, port_accept_fn accept, const void *ctx)
{
	struct dpsock_stack *d = w->d;
	struct reuse_ctx r = { .w = w, .accept = accept, .ctx = ctx };
	uint16_t p;

	p = port_scan(w, accept, ctx, PORT_SCAN_FAST);
	if (p != 0)
		return p;
	/* the TIME_WAIT pcb's destroy callback gives its port back (release_port) */
	p = dpsock_tcp_tw_reclaim(d->eph_min, d->eph_max, TW_REUSE_MIN_MS, TW_REUSE_SCAN,
				  reuse_owned, &r);
	if (p != 0 && port_take(d, p, w))
		return p;
	return port_scan(w, accept, ctx, UINT32_MAX);
}

/* A local port for a socket tied to no peer (an ephemeral UDP bind,
 * DPSOCK_UDP_OWNED): no hash to match and no rule to install, so whatever
 * the backend, the port table alone redirects what other workers' queues
 * receive for it (dpsock_steer_owner). Released like any port. */
uint16_t
dpsock_steer_claim_any(struct dpsock_worker *w)
{
	return port_search(w, NULL, NULL);
}

bool
dpsock_steer_claim_exact(struct dpsock_worker *w, uint16_t p)
{
	return port_take(w->d, p, w) || __atomic_load_n(&w->d->port_owner[p], __ATOMIC_ACQUIRE) ==
					    (uint8_t)(w->idx + 1);
}

/* ---- software ------------------------------------------------------------ */

static uint16_t
sw_claim(struct dpsock_worker *w, const struct dpsock_mc_addr *laddr,
	 const struct dpsock_mc_addr *raddr, uint16_t rport)
{
	return port_search(w, NULL, NULL);
}

/* Every backend releases the same way: the port's rule, if it got one
 * (the rte_flow backend may have fallen back to software since). */
static void
port_release(struct dpsock_worker *w, uint16_t lport)
{
	struct dpsock_stack *d = w->d;

	if (d->flows[lport] != NULL) {
		struct rte_flow_error ferr;

		rte_spinlock_lock(&d->flow_lock);
		rte_flow_destroy(d->ports[0].port_id, d->flows[lport], &ferr);
		rte_spinlock_unlock(&d->flow_lock);
		d->flows[lport] = NULL;
	}
	port_give(d, lport);
}

static const struct dpsock_steer_ops steer_software = {
	.name = "software",
	.claim_port = sw_claim,
	.release_port = port_release,
};

/* ---- toeplitz ------------------------------------------------------------ */

uint32_t
dpsock_rss_hash_ipv4_l4(const uint8_t *key, uint32_t saddr, uint32_t daddr, uint16_t sport,
			uint16_t dport)
{
	struct rte_ipv4_tuple t = {
		.src_addr = rte_be_to_cpu_32(saddr),
		.dst_addr = rte_be_to_cpu_32(daddr),
		.sport = rte_be_to_cpu_16(sport),
		.dport = rte_be_to_cpu_16(dport),
	};

	return rte_softrss((uint32_t *)&t, RTE_THASH_V4_L4_LEN, key);
}

uint32_t
dpsock_rss_hash_ipv6_l4(const uint8_t *key, const uint8_t *saddr, const uint8_t *daddr,
			uint16_t sport, uint16_t dport)
{
	struct rte_ipv6_hdr h;
	union rte_thash_tuple t;

	/* the addresses as the hash reads them: host-order words */
	memcpy(h.src_addr, saddr, 16);
	memcpy(h.dst_addr, daddr, 16);
	rte_thash_load_v6_addrs(&h, &t);
	t.v6.sport = rte_be_to_cpu_16(sport);
	t.v6.dport = rte_be_to_cpu_16(dport);
	return rte_softrss((uint32_t *)&t, RTE_THASH_V6_L4_LEN, key);
}

struct thash_ctx {
	const struct dpsock_mc_addr *laddr, *raddr; /* IPv4's mapped */
	uint16_t rport;        /* network order */
	const struct dpsock_port *port;
};

/* Would the answer to a connection from local port p land on w's queue?
 * The NIC hashes the received packet: the remote end is its source. */
static bool
thash_accept(struct dpsock_worker *w, uint16_t p, const void *arg)
{
	const struct thash_ctx *c = arg;
	uint32_t h = dpsock_mc_addr_is4(*c->raddr) ?
		     dpsock_rss_hash_ipv4_l4(c->port->rss_key, c->raddr->w[3], c->laddr->w[3],
					     c->rport, rte_cpu_to_be_16(p)) :
		     dpsock_rss_hash_ipv6_l4(c->port->rss_key, (const uint8_t *)c->raddr->w,
					     (const uint8_t *)c->laddr->w, c->rport,
					     rte_cpu_to_be_16(p));

	return c->port->reta[h % c->port->caps.reta_size] == w->queue;
}

static uint16_t
thash_claim(struct dpsock_worker *w, const struct dpsock_mc_addr *laddr,
	    const struct dpsock_mc_addr *raddr, uint16_t rport)
{
	struct thash_ctx c = {
		.laddr = laddr, .raddr = raddr, .rport = rport, .port = &w->d->ports[0],
	};

	return port_search(w, thash_accept, &c);
}

static const struct dpsock_steer_ops steer_toeplitz = {
	.name = "toeplitz",
	.claim_port = thash_claim,
	.release_port = port_release,
};

/* ---- rte_flow ------------------------------------------------------------ */

/* consecutive rule failures before the backend falls back to software */
#define FLOW_FAILURES_MAX 8

static uint16_t
flow_claim(struct dpsock_worker *w, const struct dpsock_mc_addr *laddr,
	   const struct dpsock_mc_addr *raddr, uint16_t rport)
{
	struct dpsock_stack *d = w->d;
	uint16_t p = port_search(w, NULL, NULL);
	struct rte_flow_attr attr = { .ingress = 1 };
	struct dpsock_flow_tcp pat;
	struct rte_flow_action_queue queue = { .index = w->queue };
	struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &queue },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	struct rte_flow_error ferr;
	struct rte_flow *f;

	if (p == 0)
		return 0;
	dpsock_flow_tcp_pattern(&pat, &d->ports[0], raddr, laddr, rport, rte_cpu_to_be_16(p));
	memset(&ferr, 0, sizeof(ferr));
	rte_spinlock_lock(&d->flow_lock);
	f = rte_flow_create(d->ports[0].port_id, &attr, pat.pattern, actions, &ferr);
	rte_spinlock_unlock(&d->flow_lock);
	d->flows[p] = f;
	if (f != NULL) {
		__atomic_store_n(&d->flow_failures, 0, __ATOMIC_RELAXED);
		return p;
	}
	/* The port table still redirects this flow in software. A port that
	 * validates rules but cannot install them (net_tap without the
	 * kernel's flower classifier) makes every connection fail the same
	 * way: say it once, and after a run of failures stop trying. */
	if (__atomic_fetch_add(&d->flow_failures, 1, __ATOMIC_RELAXED) + 1 == FLOW_FAILURES_MAX) {
		DPSOCK_LOG(WARNING, main, "rte_flow rules cannot be installed on %s (%s); "
			   "active-open steering: software from now on", d->ports[0].name,
			   ferr.message ? ferr.message : "?");
		__atomic_store_n(&d->steer, &steer_software, __ATOMIC_RELEASE);
	} else {
		DPSOCK_LOG_DP(DEBUG, pmd, "rte_flow rule for local port %u failed: %s", p,
			      ferr.message ? ferr.message : "?");
	}
	return p;
}

static const struct dpsock_steer_ops steer_rte_flow = {
	.name = "rte_flow",
	.claim_port = flow_claim,
	.release_port = port_release,
};

/* ---- choice --------------------------------------------------------------- */

int
dpsock_steer_setup(struct dpsock_stack *d)
{
	const struct dpsock_port *p = &d->ports[0];
	const char *want = d->conf.steering;
	bool thash_ok = p->rss_hf && p->caps.rss_key_size && p->caps.reta_size &&
			!(p->caps.reta_size & (p->caps.reta_size - 1));
	bool flow_ok = p->caps.flow_5tuple;
	unsigned int i;

	d->eph_min = d->conf.ephemeral_min;
	d->eph_max = d->conf.ephemeral_max;
	d->port_owner = rte_zmalloc("dpsock_port_owner", 65536, RTE_CACHE_LINE_SIZE);
	d->flows = rte_zmalloc("dpsock_flows", 65536 * sizeof(*d->flows), RTE_CACHE_LINE_SIZE);
	if (d->port_owner == NULL || d->flows == NULL) {
		DPSOCK_LOG(ERR, main, "out of memory for the port table");
		return -ENOMEM;
	}
	rte_spinlock_init(&d->flow_lock);
	for (i = 0; i < d->n_workers; i++)
		d->workers[i].port_hint = (uint32_t)(rte_rand() % (d->eph_max - d->eph_min + 1u));

	if (strcmp(want, "toeplitz") == 0 && !thash_ok)
		DPSOCK_LOG(WARNING, main, "tcp.steering = toeplitz, but port %s exposes no usable "
			   "RSS key and RETA; using software steering", p->name);
	if (strcmp(want, "rte_flow") == 0 && !flow_ok)
		DPSOCK_LOG(WARNING, main, "tcp.steering = rte_flow, but port %s does not validate "
			   "5-tuple rules; using software steering", p->name);
	if (d->n_workers == 1 || d->n_ports > 1 || strcmp(want, "software") == 0)
		d->steer = &steer_software;
	else if (strcmp(want, "rte_flow") == 0 && flow_ok)
		d->steer = &steer_rte_flow;
	else if (strcmp(want, "toeplitz") == 0 && thash_ok)
		d->steer = &steer_toeplitz;
	else if (strcmp(want, "auto") == 0 && flow_ok)
		d->steer = &steer_rte_flow;
	else if (strcmp(want, "auto") == 0 && thash_ok)
		d->steer = &steer_toeplitz;
	else
		d->steer = &steer_software;
	DPSOCK_LOG(NOTICE, main, "active-open steering: %s%s (ephemeral ports %u-%u)",
		   d->steer->name,
		   d->n_workers == 1 ? " (one worker)" :
		   d->n_ports > 1 ? " (several ports)" : "",
		   d->eph_min, d->eph_max);
	return 0;
}

void
dpsock_steer_teardown(struct dpsock_stack *d)
{
	unsigned int p;

	if (d->flows != NULL) {
		for (p = 0; p < 65536; p++)
			if (d->flows[p] != NULL) {
				struct rte_flow_error ferr;

				rte_flow_destroy(d->ports[0].port_id, d->flows[p], &ferr);
			}
		rte_free(d->flows);
		d->flows = NULL;
	}
	rte_free(d->port_owner);
	d->port_owner = NULL;
}

/* The worker that reassembles a fragmented datagram: a hash of what every
 * fragment carries (addresses, identification, protocol) folded into h. */
static int
frag_owner(const struct dpsock_worker *w, uint32_t h)
{
	unsigned int k;

	/* murmur3's finaliser: every input bit reaches every output bit */
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	k = h % w->d->n_workers;
	return k == w->idx ? -1 : (int)k;
}

int
dpsock_steer_owner(const struct dpsock_worker *w, const struct rte_mbuf *m)
{
	const struct dpsock_stack *d = w->d;
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	uint32_t hlen;
	uint16_t dport;
	uint8_t owner, proto;
	const char *ipb = (const char *)(eth + 1);

	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)ipb;

		hlen = sizeof(*ip6);
		proto = ip6->proto;
		if (proto == IPPROTO_FRAGMENT) {
			const uint32_t *s = (const uint32_t *)ip6->src_addr;
			const uint32_t *t = (const uint32_t *)ip6->dst_addr;
			uint32_t id = 0;

			if (m->data_len >= RTE_ETHER_HDR_LEN + hlen + 8)
				memcpy(&id, ipb + hlen + 4, 4);
			return frag_owner(w, s[0] ^ s[1] ^ s[2] ^ s[3] ^
					     ((t[0] ^ t[1] ^ t[2] ^ t[3]) << 16 |
					      (t[0] ^ t[1] ^ t[2] ^ t[3]) >> 16) ^ id);
		}
	} else {
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)ipb;

		hlen = (ip->version_ihl & 0xf) * 4u;
		proto = ip->next_proto_id;
		if (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))
			return frag_owner(w, ip->src_addr ^ (ip->dst_addr << 16 | ip->dst_addr >> 16) ^
					     ((uint32_t)ip->packet_id << 8 | ip->next_proto_id));
	}
	/* (an IPv6 extension header before TCP or UDP: processed here; a TCP
	 * segment of another worker's connection goes on to it through
	 * dpsock_lwip_tcp_unmatched, as any stray does) */
	if ((proto != IPPROTO_TCP && proto != IPPROTO_UDP) ||
	    m->data_len < RTE_ETHER_HDR_LEN + hlen + 4)
		return -1;
	dport = rte_be_to_cpu_16(*(const uint16_t *)(ipb + hlen + 2));
	if (dport < d->eph_min || dport > d->eph_max)
		return -1;
	owner = __atomic_load_n(&d->port_owner[dport], __ATOMIC_RELAXED);
	if (owner == 0 || (unsigned int)(owner - 1) == w->idx)
		return -1;
	return owner - 1;
}

/* Hand a validated frame to the worker that owns its flow. */
void
dpsock_worker_steer(struct dpsock_worker *w, struct dpsock_worker *owner, struct rte_mbuf *m)
{
	if (unlikely(rte_ring_mp_enqueue(owner->steer, m) != 0)) {
		dpsock_frame_drop(m, &w->stats->steer_full);
		return;
	}
	dpsock_stat_add(&w->stats->steer_out, 1);
	dpsock_worker_wake(owner);
}
