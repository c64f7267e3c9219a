/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcast/ — UDP multicast: the groups sockets join and the delivery of a
 * datagram to its members (here), the host's IGMP and MLD (mchost.c), the
 * kernel's own memberships on a shared port (mcast_kernel.c).
 *
 * mcast.c — UDP multicast: sockets' memberships, the stack-wide registry, the ports'
 * multicast MAC filters, and delivery of a datagram to every socket it
 * concerns (see mcast_priv.h for the picture).
 *
 * Linux's rules, which this file follows:
 *  - a datagram for group G reaches a UDP socket bound to its port (on the
 *    any address or on G) when the port joined G with a filter that lets
 *    its source in (the interface state: ip_check_mc_rcu), and the socket's
 *    own filter agrees: its membership of G on that interface with the
 *    source included / not excluded, or, with no such membership,
 *    IP_MULTICAST_ALL (ip_mc_sf_allow);
 *  - a multicast or broadcast datagram reaches EVERY such socket, whatever
 *    SO_REUSEADDR / SO_REUSEPORT say (those only let them share the port);
 *    a unicast one reaches one socket: hashed over a SO_REUSEPORT group;
 *  - a datagram a socket sends to a group is looped back to the host's
 *    subscribers when IP_MULTICAST_LOOP is on (the default), through the
 *    same filters, the sender included if it joined.
 *
 * Fan-out gives every matching socket the same pbuf (one reference each):
 * no copy in the stack. dpsockd's preload server then copies it once into
 * each subscriber's rx FIFO (every process has its own shared memory).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>

#include "core/lwip_compat_priv.h"

#include "lwip/ip.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/udp.h"

#include "dpsock/dpsock.h"
#include "dpsock_lwip_hooks.h"

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "core/log_priv.h"
#include "mcast_priv.h"

_Static_assert(DPSOCK_MCAST_JOIN == DPSOCK_MC_JOIN && DPSOCK_MCAST_LEAVE == DPSOCK_MC_LEAVE &&
	       DPSOCK_MCAST_JOIN_SOURCE == DPSOCK_MC_JOIN_SOURCE &&
	       DPSOCK_MCAST_LEAVE_SOURCE == DPSOCK_MC_LEAVE_SOURCE &&
	       DPSOCK_MCAST_BLOCK == DPSOCK_MC_BLOCK && DPSOCK_MCAST_UNBLOCK == DPSOCK_MC_UNBLOCK,
	       "dpsock.h's multicast operations are mcast_filter.h's");
_Static_assert(DPSOCK_MC_MODE_INCLUDE == DPSOCK_MC_INCLUDE &&
	       DPSOCK_MC_MODE_EXCLUDE == DPSOCK_MC_EXCLUDE, "modes in the stats table");
_Static_assert(DPSOCK_STATS_MC_MSRCS == DPSOCK_MC_MAX_SOURCES, "sources per membership row");
_Static_assert(DPSOCK_MAX_PORTS <= 8 && DPSOCK_MAX_PORTS <= DPSOCK_STATS_MAX_PORTS,
	       "per-port arrays of struct dpsock_mcast");

#define MC_FANOUT_MAX 512         /* sockets one datagram reaches in one pass */
#define MC_REUSEPORT_MAX 64       /* members of a SO_REUSEPORT group */
#define MC_MACS_MAX 128           /* beyond: allmulticast instead of a list */
#define MC_SNAP_BUCKETS 64

/* A worker's copy of one group's interface state. */
struct mc_snap {
	struct dpsock_mc_addr addr;
	uint16_t port;
	uint16_t next;            /* index + 1 of the next in its bucket, 0: end */
	struct dpsock_mc_ifstate st;
};

struct dpsock_mc_worker {
	uint32_t gen;             /* registry generation copied */
	uint32_t n, cap;
	struct mc_snap *g;
	uint16_t head[MC_SNAP_BUCKETS]; /* index + 1, 0: empty */
};

static inline unsigned int
bucket(struct dpsock_mc_addr addr, uint16_t port)
{
	uint32_t h = addr.w[0] ^ addr.w[1] ^ addr.w[2] ^ addr.w[3];

	h ^= (h >> 16) ^ port;

	return (h ^ (h >> 8)) % MC_SNAP_BUCKETS;
}

/* ---- the stats table (dpsock-stat -v mc), written under the lock ---------- */

static void
table_begin(struct dpsock_mc_table *t)
{
	__atomic_store_n(&t->gen, t->gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void
table_end(struct dpsock_mc_table *t)
{
	/* release: the rows are visible before gen is even again */
	__atomic_store_n(&t->gen, t->gen + 1, __ATOMIC_RELEASE);
}

/* Rewrite the group and member rows. Caller holds the lock. */
static void
publish(struct dpsock_stack *d)
{
	struct dpsock_mc_table *t = &d->stats->mc;
	const struct dpsock_mc_group *g;
	uint32_t ng = 0, nm = 0, lost = 0;

	table_begin(t);
	for (g = d->mc->groups; g != NULL; g = g->next) {
		const struct dpsock_mc_member *m;

		if (ng < DPSOCK_STATS_MC_GROUPS) {
			struct dpsock_mc_group_row *r = &t->groups[ng++];

			memset(r, 0, sizeof(*r));
			memcpy(r->addr, g->addr.w, 16);
			r->port = g->port;
			r->mode = g->st.mode;
			r->nsrc = g->st.nsrc;
			r->members = g->n_members;
			memcpy(r->src, g->st.src,
			       RTE_MIN(g->st.nsrc, (uint16_t)DPSOCK_STATS_MC_SRCS) * sizeof(r->src[0]));
		} else {
			lost++;
		}
		for (m = g->members; m != NULL; m = m->next) {
			struct dpsock_mc_member_row *r;

			if (nm >= DPSOCK_STATS_MC_MEMBERS) {
				lost++;
				continue;
			}
			r = &t->members[nm++];
			memset(r, 0, sizeof(*r));
			memcpy(r->group, g->addr.w, 16);
			r->port = g->port;
			r->worker = m->worker;
			r->mode = m->f.mode;
			r->nsrc = m->f.nsrc;
			r->pid = m->pid;
			r->fd = m->fd;
			r->sock_idx = m->sock_idx;
			r->serial = m->serial;
			memcpy(r->src, m->f.src, m->f.nsrc * sizeof(r->src[0]));
		}
	}
	t->n_groups = ng;
	t->n_members = nm;
	t->unlisted = lost;
	table_end(t);
}

void
dpsock_mcast_publish_port(struct dpsock_stack *d, unsigned int port, bool v6,
			  const struct dpsock_mc_port_row *row)
{
	struct dpsock_mc_table *t = &d->stats->mc;
	struct dpsock_mc_port_row r = *row;

	rte_spinlock_lock(&d->mc->lock);
	table_begin(t);
	/* the filter columns are the main lcore's */
	r.filter = t->ports[port].filter;
	r.n_macs = t->ports[port].n_macs;
	if (v6)
		t->mld[port] = r;
	else
		t->ports[port] = r;
	table_end(t);
	rte_spinlock_unlock(&d->mc->lock);
}

/* ---- the registry ------------------------------------------------------------ */

static struct dpsock_mc_group *
reg_find(struct dpsock_mcast *mc, struct dpsock_mc_addr addr, uint16_t port)
{
	struct dpsock_mc_group *g;

	for (g = mc->groups; g != NULL; g = g->next)
		if (dpsock_mc_addr_eq(g->addr, addr) && g->port == port)
			return g;
	return NULL;
}

static bool
list_has(const struct dpsock_mc_addr *l, unsigned int n, struct dpsock_mc_addr a)
{
	for (unsigned int i = 0; i < n; i++)
		if (dpsock_mc_addr_eq(l[i], a))
			return true;
	return false;
}

/*
 * RFC 3376 3.2: with any EXCLUDE member, EXCLUDE the sources every EXCLUDE
 * member excludes and no INCLUDE member includes; else INCLUDE the union
 * of the INCLUDE lists (too long: EXCLUDE {}, every source, a superset the
 * sockets' own filters narrow down).
 */
static void
ifstate_compute(struct dpsock_mc_group *g)
{
	struct dpsock_mc_ifstate *st = &g->st;
	const struct dpsock_mc_member *m, *first_ex = NULL;

	for (m = g->members; m != NULL && first_ex == NULL; m = m->next)
		if (m->f.mode == DPSOCK_MC_EXCLUDE)
			first_ex = m;
	st->nsrc = 0;
	if (first_ex != NULL) {
		st->mode = DPSOCK_MC_EXCLUDE;
		for (unsigned int i = 0; i < first_ex->f.nsrc; i++) {
			struct dpsock_mc_addr a = first_ex->f.src[i];
			bool keep = true;

			for (m = g->members; m != NULL && keep; m = m->next)
				keep = m->f.mode == DPSOCK_MC_EXCLUDE ? list_has(m->f.src, m->f.nsrc, a) :
									!list_has(m->f.src, m->f.nsrc, a);
			if (keep)
				st->src[st->nsrc++] = a;
		}
		return;
	}
	st->mode = DPSOCK_MC_INCLUDE;
	for (m = g->members; m != NULL; m = m->next)
		for (unsigned int i = 0; i < m->f.nsrc; i++) {
			if (list_has(st->src, st->nsrc, m->f.src[i]))
				continue;
			if (st->nsrc == DPSOCK_MC_IF_MAX_SRC) {
				st->mode = DPSOCK_MC_EXCLUDE;
				st->nsrc = 0;
				return;
			}
			st->src[st->nsrc++] = m->f.src[i];
		}
}

/* The socket's membership of (group, iface) is now f (NULL: gone).
 * Caller holds the lock. Returns true when the registry changed. */
static bool
reg_set_locked(struct dpsock_stack *d, struct dpsock_sock *s, struct dpsock_mc_addr group,
	       uint16_t iface, const struct dpsock_mc_memb *f)
{
	struct dpsock_mcast *mc = d->mc;
	struct dpsock_mc_group *g = reg_find(mc, group, iface), **gp;
	struct dpsock_mc_member *m = NULL, **mp = NULL;
	struct dpsock_udp_state *u = dpsock_sock_udp(s);

	if (g == NULL) {
		if (f == NULL)
			return false;
		g = calloc(1, sizeof(*g));
		if (g == NULL)
			return false; /* the socket's own filter still works */
		g->addr = group;
		g->port = iface;
		g->next = mc->groups;
		mc->groups = g;
		mc->n_groups++;
	}
	for (mp = &g->members; *mp != NULL; mp = &(*mp)->next)
		if ((*mp)->sock == s) {
			m = *mp;
			break;
		}
	if (f != NULL) {
		if (m == NULL) {
			m = calloc(1, sizeof(*m));
			if (m == NULL)
				goto out;
			m->sock = s;
			m->worker = (uint16_t)dpsock_sock_worker(s)->idx;
			m->next = g->members;
			g->members = m;
			g->n_members++;
		}
		m->f = *f;
		m->pid = u != NULL ? u->owner_pid : 0;
		m->fd = u != NULL ? u->owner_fd : -1;
		m->sock_idx = dpsock_sock_stats_index(s, &m->serial);
	} else if (m != NULL) {
		*mp = m->next;
		free(m);
		g->n_members--;
	}
out:
	if (g->n_members == 0) {
		for (gp = &mc->groups; *gp != g; gp = &(*gp)->next)
			;
		*gp = g->next;
		mc->n_groups--;
		free(g);
	} else {
		ifstate_compute(g);
	}
	return true;
}

/* After changes: publish, move the generation, wake the IGMP and MLD hosts. */
static void
reg_changed_locked(struct dpsock_stack *d)
{
	publish(d);
	/* release: the registry's contents are visible to whoever acquires
	 * the new generation (snapshots, the IGMP host, the main lcore) */
	__atomic_store_n(&d->mc->gen, d->mc->gen + 1, __ATOMIC_RELEASE);
}

static void
reg_set(struct dpsock_stack *d, struct dpsock_sock *s, struct dpsock_mc_addr group,
	uint16_t iface, const struct dpsock_mc_memb *f)
{
	bool changed;

	rte_spinlock_lock(&d->mc->lock);
	changed = reg_set_locked(d, s, group, iface, f);
	if (changed)
		reg_changed_locked(d);
	rte_spinlock_unlock(&d->mc->lock);
	if (changed && dpsock_self != &d->workers[DPSOCK_IGMP_WORKER])
		dpsock_worker_wake(&d->workers[DPSOCK_IGMP_WORKER]);
}

/* ---- a worker's snapshot of the interface states ------------------------------ */

static void
snap_sync(struct dpsock_worker *w)
{
	struct dpsock_mcast *mc = w->d->mc;
	struct dpsock_mc_worker *wm = w->mc;
	const struct dpsock_mc_group *g;
	uint32_t i = 0;

	/* acquire: pairs with reg_changed_locked's release */
	if (__atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE) == wm->gen)
		return;
	rte_spinlock_lock(&mc->lock);
	if (mc->n_groups > wm->cap) {
		struct mc_snap *n = realloc(wm->g, mc->n_groups * 2 * sizeof(*n));

		if (n == NULL) {
			/* keep the old snapshot; retried at the next datagram */
			rte_spinlock_unlock(&mc->lock);
			return;
		}
		wm->g = n;
		wm->cap = mc->n_groups * 2;
	}
	memset(wm->head, 0, sizeof(wm->head));
	for (g = mc->groups; g != NULL; g = g->next, i++) {
		struct mc_snap *e = &wm->g[i];
		unsigned int b = bucket(g->addr, g->port);

		e->addr = g->addr;
		e->port = g->port;
		e->st.mode = g->st.mode;
		e->st.nsrc = g->st.nsrc;
		memcpy(e->st.src, g->st.src, g->st.nsrc * sizeof(e->st.src[0]));
		e->next = wm->head[b];
		wm->head[b] = (uint16_t)(i + 1);
	}
	wm->n = i;
	wm->gen = mc->gen;
	rte_spinlock_unlock(&mc->lock);
}

static const struct mc_snap *
snap_find(struct dpsock_worker *w, struct dpsock_mc_addr addr, uint16_t port)
{
	const struct dpsock_mc_worker *wm = w->mc;
	unsigned int i;

	for (i = wm->head[bucket(addr, port)]; i != 0; i = wm->g[i - 1].next)
		if (dpsock_mc_addr_eq(wm->g[i - 1].addr, addr) && wm->g[i - 1].port == port)
			return &wm->g[i - 1];
	return NULL;
}

static bool
ifstate_allows(const struct dpsock_mc_ifstate *st, struct dpsock_mc_addr src)
{
	bool listed = list_has(st->src, st->nsrc, src);

	return st->mode == DPSOCK_MC_EXCLUDE ? !listed : listed;
}

/* ---- delivery ------------------------------------------------------------------ */

static bool
sock_allows(struct dpsock_sock *s, struct dpsock_mc_addr group, uint16_t iface,
	    struct dpsock_mc_addr src)
{
	struct dpsock_udp_state *u = dpsock_sock_udp(s);
	const struct dpsock_mc_memb *m;

	if (u == NULL)
		return false;
	m = u->mc != NULL ? dpsock_mc_find(u->mc, group, iface) : NULL;
	if (m != NULL)
		return dpsock_mc_allows(m, src);
	return (dpsock_mc_addr_is4(group) ? u->mc_all : u->mc_all6) != 0;
}

/* A datagram's destination as the receiving worker knew it. */
static inline struct dpsock_mc_addr
meta_dst(const struct dpsock_rx_meta *meta)
{
	return meta->dst != 0 ? dpsock_mc_addr4(meta->dst) : dpsock_mc_addr6(meta->dst6);
}

/* Does pcb's local address take a datagram to dst (lwIP's own rule: an
 * IPv4 datagram needs a pcb of IPv4 or both families, an IPv6 one a pcb of
 * IPv6 or both)? */
static bool
local_match(const struct udp_pcb *pcb, const struct netif *inp, struct dpsock_mc_addr dst,
	    bool broadcast)
{
	uint32_t local, dst4;

	if (pcb->netif_idx != NETIF_NO_INDEX && pcb->netif_idx != netif_get_index(inp))
		return false;
	if (!dpsock_mc_addr_is4(dst))
		return IP_IS_ANY_TYPE_VAL(pcb->local_ip) ||
		       (IP_IS_V6_VAL(pcb->local_ip) &&
			(ip6_addr_isany(ip_2_ip6(&pcb->local_ip)) ||
			 memcmp(ip_2_ip6(&pcb->local_ip)->addr, dst.w, 16) == 0));
	if (IP_IS_V6_VAL(pcb->local_ip))
		return false;
	local = ip4_addr_get_u32(ip_2_ip4(&pcb->local_ip));
	dst4 = dst.w[3];
	if (local == 0 || local == dst4)
		return true;
	return broadcast && (dst4 == IPADDR_BROADCAST ||
			     (local & ip4_addr_get_u32(netif_ip4_netmask(inp))) ==
			     (dst4 & ip4_addr_get_u32(netif_ip4_netmask(inp))));
}

/* Is pcb connected to src:sport? (either family) */
static bool
remote_is(const struct udp_pcb *pcb, struct dpsock_mc_addr src, uint16_t sport)
{
	if (pcb->remote_port != sport)
		return false;
	if (dpsock_mc_addr_is4(src))
		return IP_IS_V4_VAL(pcb->remote_ip) &&
		       ip4_addr_get_u32(ip_2_ip4(&pcb->remote_ip)) == src.w[3];
	return IP_IS_V6_VAL(pcb->remote_ip) &&
	       memcmp(ip_2_ip6(&pcb->remote_ip)->addr, src.w, 16) == 0;
}

/*
 * Give p (one reference, taken) to every socket of this worker bound to
 * dport that its filters let through. mcast: the port's interface state
 * first, then each socket's.
 */
static void
fanout(struct dpsock_worker *w, struct pbuf *p, const struct netif *inp, uint16_t dport,
       struct dpsock_mc_addr src, uint16_t sport, const struct dpsock_rx_meta *meta, bool mcast)
{
	struct dpsock_worker_stats *st = w->stats;
	struct dpsock_sock *to[MC_FANOUT_MAX];
	struct dpsock_mc_addr dst = meta_dst(meta);
	struct udp_pcb *pcb;
	unsigned int n = 0, i;

	if (mcast) {
		const struct mc_snap *g;

		snap_sync(w);
		g = snap_find(w, dst, meta->iface);
		if (g == NULL || !ifstate_allows(&g->st, src)) {
			dpsock_stat_add(&st->mc_rx_filtered, 1);
			pbuf_free(p);
			return;
		}
		dpsock_stat_add(&st->mc_rx, 1);
	}
	/* collect first, pinned: a callback may close any socket */
	for (pcb = udp_pcbs; pcb != NULL; pcb = pcb->next) {
		struct dpsock_sock *s;

		if (pcb->local_port != dport || !local_match(pcb, inp, dst, !mcast))
			continue;
		if ((pcb->flags & UDP_FLAGS_CONNECTED) && !remote_is(pcb, src, sport))
			continue;
		s = dpsock_sock_of_udp_pcb(pcb);
		if (s == NULL || (mcast && !sock_allows(s, dst, meta->iface, src)))
			continue;
		if (n == MC_FANOUT_MAX) {
			dpsock_stat_add(&st->mc_fanout_lost, 1);
			continue;
		}
		dpsock_sock_pin(s);
		to[n++] = s;
	}
	for (i = 0; i < n; i++) {
		if (!dpsock_sock_dead(to[i])) {
			pbuf_ref(p);
			dpsock_sock_udp_input(to[i], p, src, sport, meta);
			dpsock_stat_add(&st->mc_deliveries, 1);
		}
		dpsock_sock_unpin(to[i]);
	}
	pbuf_free(p);
}

static inline uint32_t
mix32(uint32_t h)
{
	/* murmur3's finaliser */
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* A unicast datagram for a SO_REUSEPORT group: one member, by a hash of the
 * source, the same one for a flow while the group stays as it is. */
static int
reuseport_deliver(struct dpsock_worker *w, struct pbuf *p, struct udp_pcb *pcb,
		  struct dpsock_mc_addr src, uint16_t sport, const struct dpsock_rx_meta *meta)
{
	struct dpsock_sock *s = dpsock_sock_of_udp_pcb(pcb), *grp[MC_REUSEPORT_MAX];
	struct dpsock_udp_state *u = s != NULL ? dpsock_sock_udp(s) : NULL;
	struct udp_pcb *q;
	unsigned int n = 0;

	if (u == NULL || !u->reuseport || (pcb->flags & UDP_FLAGS_CONNECTED))
		return 0;
	for (q = udp_pcbs; q != NULL && n < MC_REUSEPORT_MAX; q = q->next) {
		struct dpsock_sock *t;
		struct dpsock_udp_state *tu;

		if (q->local_port != pcb->local_port || (q->flags & UDP_FLAGS_CONNECTED) ||
		    !ip_addr_cmp(&q->local_ip, &pcb->local_ip) ||
		    (t = dpsock_sock_of_udp_pcb(q)) == NULL || (tu = dpsock_sock_udp(t)) == NULL ||
		    !tu->reuseport)
			continue;
		grp[n++] = t;
	}
	if (n < 2)
		return 0;
	s = grp[mix32(src.w[0] ^ src.w[1] ^ src.w[2] ^ src.w[3] ^ ((uint32_t)sport << 16) ^
		      meta->dst ^ meta->dst6[15]) % n];
	dpsock_stat_add(&w->stats->udp_reuseport_picks, 1);
	dpsock_sock_udp_input(s, p, src, sport, meta);
	return 1;
}

int
dpsock_lwip_udp_deliver(struct pbuf *p, struct netif *inp, struct udp_pcb *pcb, u16_t src_port,
			u8_t broadcast)
{
	struct dpsock_worker *w = dpsock_self;
	bool v6 = ip_current_is_v6(), mcast;
	struct dpsock_rx_meta meta = { .dst = 0 };
	struct dpsock_mc_addr src;

	if (w == NULL || w->mc == NULL)
		return 0;
	if (v6) {
		mcast = ip6_addr_ismulticast(ip6_current_dest_addr());
		src = dpsock_mc_addr6(ip6_current_src_addr()->addr);
		memcpy(meta.dst6, ip6_current_dest_addr()->addr, 16);
	} else {
		mcast = ip4_addr_ismulticast(ip4_current_dest_addr());
		src = dpsock_mc_addr4(ip4_addr_get_u32(ip4_current_src_addr()));
		meta.dst = ip4_addr_get_u32(ip4_current_dest_addr());
	}
	meta.iface = ((const struct dpsock_worker_port *)inp->state)->port_idx;
	meta.rx_ns = dpsock_clock_rx_ns(w);
	meta.hw_ns = dpsock_netif_hw_ns(w, p);
	if (!mcast && !broadcast)
		return reuseport_deliver(w, p, pcb, src, src_port, &meta);
	fanout(w, p, inp, pcb->local_port, src, src_port, &meta, mcast);
	return 1;
}

int
dpsock_lwip_ip6_mcast_joined(struct netif *inp, const struct ip6_addr *group)
{
	struct dpsock_worker *w = dpsock_self;
	const struct dpsock_worker_port *wp = inp->state;

	if (w == NULL || w->mc == NULL || wp == NULL)
		return 0;
	snap_sync(w);
	if (snap_find(w, dpsock_mc_addr6(group->addr), wp->port_idx) != NULL)
		return 1;
	dpsock_stat_add(&w->stats->mc_rx_filtered, 1);
	return 0;
}

static void
mcast_loop(struct dpsock_sock *s, const void *buf, size_t len,
		  struct dpsock_mc_addr group, uint16_t dport, uint16_t sport,
		  unsigned int port_idx)
{
	struct dpsock_worker *w = dpsock_sock_worker(s);
	const struct netif *inp = &w->ports[port_idx].netif;
	struct dpsock_rx_meta meta = {
		.iface = (uint16_t)port_idx,
		.rx_ns = dpsock_clock_tsc_ns(w, rte_rdtsc()),
	};
	struct dpsock_mc_addr src;
	struct pbuf *p;

	if (w->mc == NULL || len > 0xffff)
		return;
	if (dpsock_mc_addr_is4(group)) {
		meta.dst = group.w[3];
		src = dpsock_mc_addr4(ip4_addr_get_u32(netif_ip4_addr(inp)));
	} else {
		ip6_addr_t g;
		const ip_addr_t *a;

		/* the source the send took (lwIP's choice for the group's scope) */
		memcpy(meta.dst6, group.w, 16);
		memcpy(g.addr, group.w, 16);
		ip6_addr_clear_zone(&g);
		a = ip6_select_source_address((struct netif *)(uintptr_t)inp, &g);
		if (a == NULL)
			return;
		src = dpsock_mc_addr6(ip_2_ip6(a)->addr);
	}
	p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_RAM);
	if (p == NULL)
		return;
	pbuf_take(p, buf, (u16_t)len);
	dpsock_stat_add(&w->stats->mc_loop, 1);
	fanout(w, p, inp, dport, src, sport, &meta, true);
}

/* ---- per-socket state and options (include/dpsock/dpsock.h) -------------------- */

static void
udp_state_fini(struct dpsock_sock *s, struct dpsock_udp_state *u)
{
	struct dpsock_worker *w = dpsock_sock_worker(s);
	struct dpsock_stack *d = w->d;
	bool changed = false;

	if (u->mc == NULL)
		return;
	if (d->mc != NULL && u->mc->n > 0) {
		rte_spinlock_lock(&d->mc->lock);
		for (uint32_t i = 0; i < u->mc->n; i++)
			changed |= reg_set_locked(d, s, u->mc->m[i].group, u->mc->m[i].iface, NULL);
		if (changed)
			reg_changed_locked(d);
		rte_spinlock_unlock(&d->mc->lock);
		if (changed && w != &d->workers[DPSOCK_IGMP_WORKER])
			dpsock_worker_wake(&d->workers[DPSOCK_IGMP_WORKER]);
	}
	free(u->mc);
	u->mc = NULL;
}

/* The socket's UDP state, on its own worker; NULL and *err otherwise. */
static struct dpsock_udp_state *
udp_usable(struct dpsock_sock *s, int *err)
{
	struct dpsock_udp_state *u = dpsock_sock_udp(s);

	*err = 0;
	if (u == NULL || dpsock_sock_udp_pcb(s) == NULL)
		*err = -EINVAL;
	else if (dpsock_sock_worker(s) != dpsock_self)
		*err = -EPERM;
	return *err ? NULL : u;
}

static int
udp_mcast_addr(struct dpsock_sock *s, int op, struct dpsock_mc_addr group,
		      unsigned int iface, struct dpsock_mc_addr source)
{
	struct dpsock_memb_pair { bool had; struct dpsock_mc_memb m; } before = { 0 }, after = { 0 };
	struct dpsock_udp_state *u;
	const struct dpsock_mc_memb *m;
	int r;

	u = udp_usable(s, &r);
	if (u == NULL)
		return r;
	if (op < DPSOCK_MC_JOIN || op >= DPSOCK_MC_OP_MAX || !dpsock_mc_is_group(group))
		return -EINVAL;
	if (iface >= dpsock_self->d->n_ports)
		return -ENODEV;
	/* an IPv6 group on a port without IPv6 (no address6; a shared
	 * netdev without IPv6, whose link-local address is missing) */
	if (!dpsock_mc_addr_is4(group) &&
	    !ip6_addr_isvalid(netif_ip6_addr_state(&dpsock_self->ports[iface].netif, 0)))
		return -ENODEV;
	if (u->mc == NULL) {
		u->mc = calloc(1, sizeof(*u->mc));
		if (u->mc == NULL)
			return -ENOMEM;
	}
	m = dpsock_mc_find(u->mc, group, (uint16_t)iface);
	if (m != NULL) {
		before.had = true;
		before.m = *m;
	}
	r = dpsock_mc_apply(u->mc, (unsigned int)op, group, (uint16_t)iface, source);
	m = dpsock_mc_find(u->mc, group, (uint16_t)iface);
	if (m != NULL) {
		after.had = true;
		after.m = *m;
	}
	/* a failed call may still have switched an empty filter's mode */
	if (before.had != after.had || memcmp(&before.m, &after.m, sizeof(before.m)) != 0)
		reg_set(dpsock_self->d, s, group, (uint16_t)iface, after.had ? &after.m : NULL);
	return r;
}

int
dpsock_udp_mcast(struct dpsock_sock *s, int op, uint32_t group, unsigned int iface,
		 uint32_t source)
{
	return udp_mcast_addr(s, op, dpsock_mc_addr4(group), iface, dpsock_mc_addr4(source));
}

int
dpsock_udp_mcast6(struct dpsock_sock *s, int op, const struct in6_addr *group, unsigned int iface,
		  const struct in6_addr *source)
{
	static const struct in6_addr any;

	if (group == NULL)
		return -EINVAL;
	return udp_mcast_addr(s, op, dpsock_mc_addr6(group),
				     iface, dpsock_mc_addr6(source != NULL ? source : &any));
}

int
dpsock_udp_set_mcast_all(struct dpsock_sock *s, bool on)
{
	struct dpsock_udp_state *u;
	int r;

	if ((u = udp_usable(s, &r)) != NULL)
		u->mc_all = on;
	return r;
}

int
dpsock_udp_set_mcast_loop(struct dpsock_sock *s, bool on)
{
	struct dpsock_udp_state *u;
	int r;

	if ((u = udp_usable(s, &r)) != NULL)
		u->mc_loop = on;
	return r;
}

int
dpsock_udp_set_mcast_ttl(struct dpsock_sock *s, int ttl)
{
	int r;

	if (udp_usable(s, &r) == NULL)
		return r;
	if (ttl < 0 || ttl > 255)
		return -EINVAL;
	udp_set_multicast_ttl(dpsock_sock_udp_pcb(s), (u8_t)ttl);
	return 0;
}

int
dpsock_udp_set_mcast_if(struct dpsock_sock *s, int iface)
{
	struct dpsock_worker *w = dpsock_self;
	int r;

	if (udp_usable(s, &r) == NULL)
		return r;
	if (iface < -1 || (iface >= 0 && (unsigned int)iface >= w->d->n_ports))
		return -ENODEV;
	udp_set_multicast_netif_index(dpsock_sock_udp_pcb(s),
				      iface < 0 ? NETIF_NO_INDEX :
				      netif_get_index(&w->ports[iface].netif));
	return 0;
}

int
dpsock_udp_set_mcast6_all(struct dpsock_sock *s, bool on)
{
	struct dpsock_udp_state *u;
	int r;

	if ((u = udp_usable(s, &r)) != NULL)
		u->mc_all6 = on;
	return r;
}

int
dpsock_udp_set_mcast6_loop(struct dpsock_sock *s, bool on)
{
	struct dpsock_udp_state *u;
	int r;

	if ((u = udp_usable(s, &r)) != NULL)
		u->mc_loop6 = on;
	return r;
}

int
dpsock_udp_set_mcast6_hops(struct dpsock_sock *s, int hops)
{
	struct dpsock_udp_state *u;
	int r;

	if ((u = udp_usable(s, &r)) == NULL)
		return r;
	if (hops < -1 || hops > 255)
		return -EINVAL;
	u->hops6 = (uint8_t)(hops < 0 ? 1 : hops);
	return 0;
}

int
dpsock_udp_set_mcast6_if(struct dpsock_sock *s, int iface)
{
	struct dpsock_udp_state *u;
	int r;

	if ((u = udp_usable(s, &r)) == NULL)
		return r;
	if (iface < -1 || (iface >= 0 && (unsigned int)iface >= dpsock_self->d->n_ports))
		return -ENODEV;
	u->mc_if6 = (int16_t)iface;
	return 0;
}

/* ---- the ports' multicast MAC filters (main lcore) -------------------------------- */

static const char *const filter_names[] = {
	[DPSOCK_MC_FILTER_NONE] = "none",
	[DPSOCK_MC_FILTER_LIST] = "MAC list",
	[DPSOCK_MC_FILTER_ALLMULTI] = "allmulticast",
};

static void
port_row_filter(struct dpsock_stack *d, unsigned int i, uint8_t filter, uint32_t n_macs)
{
	struct dpsock_mc_table *t = &d->stats->mc;

	rte_spinlock_lock(&d->mc->lock);
	table_begin(t);
	t->ports[i].filter = filter;
	t->ports[i].n_macs = n_macs;
	table_end(t);
	rte_spinlock_unlock(&d->mc->lock);
}

/* What the port can do to receive a group's frames: a MAC list, else
 * allmulticast, else nothing (the PMD delivers what its link does). */
static uint8_t
filter_probe(const struct dpsock_port *p)
{
	if (rte_eth_dev_set_mc_addr_list(p->port_id, NULL, 0) == 0)
		return DPSOCK_MC_FILTER_LIST;
	if (rte_eth_allmulticast_get(p->port_id) == 1)
		return DPSOCK_MC_FILTER_ALLMULTI; /* on already */
	if (rte_eth_allmulticast_enable(p->port_id) == 0) {
		rte_eth_allmulticast_disable(p->port_id);
		return DPSOCK_MC_FILTER_ALLMULTI;
	}
	return DPSOCK_MC_FILTER_NONE;
}

static const struct dpsock_sock_mc_ops sock_mc_ops = {
	.fini = udp_state_fini,
	.loop = mcast_loop,
	.addr = udp_mcast_addr,
};

int
dpsock_mcast_init(struct dpsock_stack *d)
{
	struct dpsock_mcast *mc = calloc(1, sizeof(*mc));
	unsigned int i;

	if (mc == NULL)
		return -ENOMEM;
	d->sock_mc = &sock_mc_ops;
	rte_spinlock_init(&mc->lock);
	mc->mac_gen = UINT32_MAX; /* the first control sets the IPv6 host's groups */
	d->mc = mc;
	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_port *p = &d->ports[i];
		struct dpsock_mc_port_row row = { .version = 3, .robustness = 2 };
		struct dpsock_mc_port_row row6 = { .version = 2, .robustness = 2 };

		mc->filter[i] = filter_probe(p);
		dpsock_mcast_publish_port(d, i, false, &row);
		dpsock_mcast_publish_port(d, i, true, &row6);
		port_row_filter(d, i, mc->filter[i], 0);
		if (mc->filter[i] == DPSOCK_MC_FILTER_NONE)
			DPSOCK_LOG(INFO, pmd, "port %s (%s): no multicast filter (no MAC list, no "
				   "allmulticast): it receives the groups its link delivers%s",
				   p->name, p->caps.driver,
				   strcmp(p->caps.driver, "net_af_packet") == 0 ?
				   " (af_packet: what its kernel interface receives; on a physical "
				   "NIC: ip link set dev IF allmulticast on)" : "");
		else
			DPSOCK_LOG(INFO, pmd, "port %s: multicast groups through its %s", p->name,
				   filter_names[mc->filter[i]]);
	}
	return 0;
}

void
dpsock_mcast_fini(struct dpsock_stack *d)
{
	struct dpsock_mcast *mc = d->mc;

	if (mc == NULL)
		return;
	dpsock_mcast_kernel_fini(d);
	/* the workers closed their sockets: whatever is left was never freed */
	while (mc->groups != NULL) {
		struct dpsock_mc_group *g = mc->groups;

		mc->groups = g->next;
		while (g->members != NULL) {
			struct dpsock_mc_member *m = g->members;

			g->members = m->next;
			free(m);
		}
		free(g);
	}
	free(mc);
	d->mc = NULL;
}

/* A group's MAC: 01:00:5e + an IPv4 group's low 23 bits (RFC 1112 6.4),
 * 33:33 + an IPv6 group's low 32 bits (RFC 2464 7). */
static struct rte_ether_addr
group_mac(struct dpsock_mc_addr g)
{
	const uint8_t *b = (const uint8_t *)g.w;
	struct rte_ether_addr a;

	if (dpsock_mc_addr_is4(g)) {
		a.addr_bytes[0] = 0x01;
		a.addr_bytes[1] = 0x00;
		a.addr_bytes[2] = 0x5e;
		a.addr_bytes[3] = b[13] & 0x7f;
	} else {
		a.addr_bytes[0] = 0x33;
		a.addr_bytes[1] = 0x33;
		a.addr_bytes[2] = b[12];
		a.addr_bytes[3] = b[13];
	}
	a.addr_bytes[4] = b[14];
	a.addr_bytes[5] = b[15];
	return a;
}

static unsigned int
mac_add(struct rte_ether_addr *macs, unsigned int n, unsigned int max, struct rte_ether_addr a)
{
	unsigned int i;

	for (i = 0; i < n && !rte_is_same_ether_addr(&macs[i], &a); i++)
		;
	if (i < n)
		return n;
	return n < max ? (macs[n] = a, n + 1) : max + 1; /* max + 1: too many */
}

/* The group MACs of one port (distinct): the groups its sockets joined,
 * and on a port with IPv6 the groups of the IPv6 host itself, which a MAC
 * list must not leave out: all-nodes (ff02::1) and the solicited-node
 * group of each address (the link-local one from the MAC, address6), or
 * neighbour discovery stops. Caller holds the lock. */
static unsigned int
port_macs(const struct dpsock_stack *d, unsigned int port, struct rte_ether_addr *macs,
	  unsigned int max)
{
	const struct dpsock_mc_group *g;
	unsigned int n = 0;

	if (!d->conf.ifaces[port].shared && d->conf.ifaces[port].prefix6_len != 0) {
		const uint8_t *a6 = d->conf.ifaces[port].addr6, *mac = d->ports[port].mac.addr_bytes;
		struct rte_ether_addr a = { { 0x33, 0x33, 0, 0, 0, 1 } };

		n = mac_add(macs, n, max, a);
		a.addr_bytes[2] = 0xff;
		memcpy(&a.addr_bytes[3], mac + 3, 3); /* fe80::EUI-64: the MAC's low bytes */
		n = mac_add(macs, n, max, a);
		memcpy(&a.addr_bytes[3], a6 + 13, 3);
		n = mac_add(macs, n, max, a);
	}
	for (g = d->mc->groups; g != NULL && n <= max; g = g->next)
		if (g->port == port)
			n = mac_add(macs, n, max, group_mac(g->addr));
	return n;
}

void
dpsock_mcast_control(struct dpsock_stack *d)
{
	struct dpsock_mcast *mc = d->mc;
	struct rte_ether_addr macs[MC_MACS_MAX];
	uint32_t gen;
	unsigned int i, n;

	if (mc == NULL)
		return;
	/* acquire: pairs with reg_changed_locked's release */
	gen = __atomic_load_n(&mc->gen, __ATOMIC_ACQUIRE);
	if (gen == mc->mac_gen)
		return;
	mc->mac_gen = gen;
	dpsock_mcast_kernel_sync(d);
	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_port *p = &d->ports[i];
		int r;

		if (p->shared)
			continue;   /* the kernel's memberships set its netdev's filter */
		rte_spinlock_lock(&mc->lock);
		n = port_macs(d, i, macs, MC_MACS_MAX);
		rte_spinlock_unlock(&mc->lock);
		if (mc->filter[i] == DPSOCK_MC_FILTER_LIST) {
			r = n <= MC_MACS_MAX ? rte_eth_dev_set_mc_addr_list(p->port_id, macs, n) :
					       -ENOSPC;
			if (r == 0) {
				port_row_filter(d, i, mc->filter[i], n);
				continue;
			}
			DPSOCK_LOG(WARNING, pmd, "port %s: multicast MAC list of %u: %s; "
				   "allmulticast from now on", p->name, n, rte_strerror(-r));
			rte_eth_dev_set_mc_addr_list(p->port_id, NULL, 0);
			mc->filter[i] = DPSOCK_MC_FILTER_ALLMULTI;
		}
		if (mc->filter[i] == DPSOCK_MC_FILTER_ALLMULTI && (n > 0) != mc->allmulti_on[i]) {
			r = n > 0 ? rte_eth_allmulticast_enable(p->port_id) :
				    rte_eth_allmulticast_disable(p->port_id);
			if (r == 0)
				mc->allmulti_on[i] = n > 0;
			else
				DPSOCK_LOG(WARNING, pmd, "port %s: allmulticast %s: %s", p->name,
					   n > 0 ? "on" : "off", rte_strerror(-r));
		}
		port_row_filter(d, i, mc->filter[i], RTE_MIN(n, (unsigned int)MC_MACS_MAX));
	}
}

/* ---- per worker -------------------------------------------------------------------- */

int
dpsock_mcast_worker_init(struct dpsock_worker *w)
{
	struct dpsock_mc_worker *wm = calloc(1, sizeof(*wm));

	if (wm == NULL)
		return -ENOMEM;
	wm->gen = UINT32_MAX; /* sync at the first datagram */
	w->mc = wm;
	return 0;
}

void
dpsock_mcast_worker_fini(struct dpsock_worker *w)
{
	if (w->mc == NULL)
		return;
	free(w->mc->g);
	free(w->mc);
	w->mc = NULL;
}
