/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcast.c — what a UDP socket needs beyond data: multicast memberships,
 * IP_MULTICAST_IF, and the control messages recvmsg returns.
 *
 * Memberships (IP_ADD_MEMBERSHIP ... MCAST_UNBLOCK_SOURCE) and
 * IP_MULTICAST_IF name an interface by address or index; for a socket
 * dpsockd serves that is one of dpsockd's interfaces (the wake page's net
 * view: each address of each port, and the kernel ifindex of the port's
 * netdev when it has one),
 * which the kernel socket knows nothing of. So these options never reach
 * the kernel socket of an offloaded or undecided UDP socket: the shim parses
 * them as Linux does (lengths, families: EINVAL, EADDRNOTAVAIL), resolves
 * the interface (ENODEV), and
 *  - on an offloaded socket, sends them to every slot, worker 0's first:
 *    its reply is the socket API's answer (EADDRINUSE, EADDRNOTAVAIL...,
 *    from the worker's copy of the memberships, abi/mcast_filter.h);
 *  - on a socket not bound yet, keeps them in a set of the same semantics
 *    and replays its state on the worker's socket once offloaded. A socket
 *    that then stays in the kernel loses them (logged): they named
 *    dpsockd's interfaces.
 * IP_MULTICAST_IF naming an interface that is not dpsockd's goes to the
 * kernel socket and keeps the socket's multicast sends in the kernel.
 *
 * An AF_INET6 socket's IPv6 memberships (IPV6_ADD_MEMBERSHIP / _DROP_,
 * MCAST_* of level IPPROTO_IPV6 with AF_INET6 groups) take the same path
 * with 16-byte groups; they name the interface by its index (0: the route
 * to the group, the first port with IPv6). Its IPv4 memberships are those
 * of level IPPROTO_IP, as on Linux. IPV6_MULTICAST_IF, _HOPS, _LOOP and
 * _ALL go to the kernel socket first (calls.c), then to the workers.
 */
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <stdlib.h>
#include <string.h>

#include "offload/offload_priv.h"
#include "mcast_filter.h"

bool
shim_mc_optname(int level, int name)
{
	if (level != IPPROTO_IP && level != IPPROTO_IPV6)
		return false;
	switch (name) {
	/* RFC 3678's protocol-independent options: both levels */
	case MCAST_JOIN_GROUP:
	case MCAST_LEAVE_GROUP:
	case MCAST_JOIN_SOURCE_GROUP:
	case MCAST_LEAVE_SOURCE_GROUP:
	case MCAST_BLOCK_SOURCE:
	case MCAST_UNBLOCK_SOURCE:
		return true;
	default:
		break;
	}
	if (level == IPPROTO_IPV6)
		return name == IPV6_ADD_MEMBERSHIP || name == IPV6_DROP_MEMBERSHIP;
	switch (name) {
	case IP_ADD_MEMBERSHIP:
	case IP_DROP_MEMBERSHIP:
	case IP_ADD_SOURCE_MEMBERSHIP:
	case IP_DROP_SOURCE_MEMBERSHIP:
	case IP_BLOCK_SOURCE:
	case IP_UNBLOCK_SOURCE:
	case IP_MULTICAST_IF:
		return true;
	default:
		return false;
	}
}

/* ---- interfaces ---------------------------------------------------------- */

/* dpsockd's interfaces are its ports; an address or a kernel ifindex names
 * one (the net view of the wake page: each address of each port). */
static int
iface_by_index(int ifindex)
{
	struct dpsock_pl_netview nv;

	shim_netview(&nv);
	for (uint32_t i = 0; i < nv.n_ifaces; i++)
		if (ifindex > 0 && nv.ifaces[i].ifindex == (uint32_t)ifindex)
			return nv.ifaces[i].port;
	return -1;
}

static int
iface_by_addr(uint32_t addr)
{
	struct dpsock_pl_netview nv;

	shim_netview(&nv);
	for (uint32_t i = 0; i < nv.n_ifaces; i++)
		if (nv.ifaces[i].addr == addr)
			return nv.ifaces[i].port;
	return -1;
}

/* The interface a group's route takes in dpsockd: the default netif, as
 * stack/worker.c chooses it (the first port, or a later one with a gateway
 * when the first has none). */
static int
iface_default(void)
{
	struct dpsock_pl_netview nv;
	int def = -1;

	shim_netview(&nv);
	for (uint32_t i = 0; i < nv.n_ifaces; i++)
		if (def < 0 || (nv.ifaces[i].gateway != 0 && nv.ifaces[def].gateway == 0))
			def = (int)i;
	return def < 0 ? -1 : nv.ifaces[def].port;
}

/* The port an IPv6 group's route takes: the first with IPv6. */
static int
iface_default6(void)
{
	struct dpsock_pl_netview nv;

	shim_netview(&nv);
	return nv.n_ifaces6 > 0 ? nv.ifaces6[0].port : -1;
}

/* Linux's ip_mc_find_dev: by index, else by address, else the route. */
static int
iface_resolve(int ifindex, uint32_t addr)
{
	if (ifindex != 0)
		return iface_by_index(ifindex);
	if (addr != htonl(INADDR_ANY))
		return iface_by_addr(addr);
	return iface_default();
}

int
shim_mc_iface6(int ifindex)
{
	return ifindex == 0 ? -1 : iface_by_index(ifindex);
}

/* ---- parsing, as Linux's do_ip_setsockopt and do_ipv6_setsockopt ----------- */

struct mc_req {
	unsigned int op;          /* enum dpsock_mc_op */
	bool v6;                  /* IPv6's: by index alone, 0 the route */
	struct dpsock_mc_addr group, source;
	uint32_t addr;
	int ifindex;
};

static unsigned int
source_op(int name)
{
	return name == MCAST_JOIN_SOURCE_GROUP ? DPSOCK_MC_JOIN_SOURCE :
	       name == MCAST_LEAVE_SOURCE_GROUP ? DPSOCK_MC_LEAVE_SOURCE :
	       name == MCAST_BLOCK_SOURCE ? DPSOCK_MC_BLOCK : DPSOCK_MC_UNBLOCK;
}

/* A group_req's or group_source_req's address of the level's family */
static bool
ss_addr(const struct sockaddr_storage *ss, bool v6, struct dpsock_mc_addr *out)
{
	if (ss->ss_family != (v6 ? AF_INET6 : AF_INET))
		return false;
	*out = v6 ? dpsock_mc_addr6(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr) :
		    dpsock_mc_addr4(((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr);
	return true;
}

/* MCAST_JOIN_GROUP / MCAST_LEAVE_GROUP: a group of another family is
 * EINVAL at level IPPROTO_IP (ip_mc_join_group), EADDRNOTAVAIL at
 * IPPROTO_IPV6 (ipv6_mcast_join_leave). */
static int
parse_group_req(int name, const void *val, socklen_t len, struct mc_req *r, bool v6)
{
	struct group_req gr;

	if (len < sizeof(gr))
		return -EINVAL;
	memcpy(&gr, val, sizeof(gr));
	if (!ss_addr(&gr.gr_group, v6, &r->group))
		return v6 ? -EADDRNOTAVAIL : -EINVAL;
	r->op = name == MCAST_JOIN_GROUP ? DPSOCK_MC_JOIN : DPSOCK_MC_LEAVE;
	r->ifindex = (int)gr.gr_interface;
	return 0;
}

/* The source forms: exactly a group_source_req at IPPROTO_IP, at least
 * one at IPPROTO_IPV6; group and source of the level's family
 * (EADDRNOTAVAIL). */
static int
parse_group_source_req(int name, const void *val, socklen_t len, struct mc_req *r, bool v6)
{
	struct group_source_req gs;

	if (v6 ? len < sizeof(gs) : len != sizeof(gs))
		return -EINVAL;
	memcpy(&gs, val, sizeof(gs));
	if (!ss_addr(&gs.gsr_group, v6, &r->group) || !ss_addr(&gs.gsr_source, v6, &r->source))
		return -EADDRNOTAVAIL;
	r->op = source_op(name);
	r->ifindex = (int)gs.gsr_interface;
	return 0;
}

/* Level IPPROTO_IPV6 (ipv6_sockglue.c, ipv6_mcast_join_leave and
 * do_ipv6_mcast_group_source): only AF_INET6 groups (EADDRNOTAVAIL). */
static int
mc_parse6(int name, const void *val, socklen_t len, struct mc_req *r)
{
	r->v6 = true;
	switch (name) {
	case IPV6_ADD_MEMBERSHIP:
	case IPV6_DROP_MEMBERSHIP: {
		struct ipv6_mreq mr;

		if (len < sizeof(mr))
			return -EINVAL;
		memcpy(&mr, val, sizeof(mr));
		r->op = name == IPV6_ADD_MEMBERSHIP ? DPSOCK_MC_JOIN : DPSOCK_MC_LEAVE;
		r->group = dpsock_mc_addr6(&mr.ipv6mr_multiaddr);
		r->ifindex = (int)mr.ipv6mr_interface;
		return 0;
	}
	case MCAST_JOIN_GROUP:
	case MCAST_LEAVE_GROUP:
		return parse_group_req(name, val, len, r, true);
	default:
		return parse_group_source_req(name, val, len, r, true);
	}
}

static int
mc_parse(int level, int name, const void *val, socklen_t len, struct mc_req *r)
{
	memset(r, 0, sizeof(*r));
	if (val == NULL)
		return -EFAULT;
	if (level == IPPROTO_IPV6)
		return mc_parse6(name, val, len, r);
	switch (name) {
	case IP_ADD_MEMBERSHIP:
	case IP_DROP_MEMBERSHIP: {
		struct ip_mreqn mn = { 0 };

		if (len < sizeof(struct ip_mreq))
			return -EINVAL;
		/* an ip_mreq is an ip_mreqn without its index */
		memcpy(&mn, val, len >= sizeof(mn) ? sizeof(mn) : sizeof(struct ip_mreq));
		r->op = name == IP_ADD_MEMBERSHIP ? DPSOCK_MC_JOIN : DPSOCK_MC_LEAVE;
		r->group = dpsock_mc_addr4(mn.imr_multiaddr.s_addr);
		r->addr = mn.imr_address.s_addr;
		r->ifindex = mn.imr_ifindex;
		return 0;
	}
	case IP_ADD_SOURCE_MEMBERSHIP:
	case IP_DROP_SOURCE_MEMBERSHIP:
	case IP_BLOCK_SOURCE:
	case IP_UNBLOCK_SOURCE: {
		struct ip_mreq_source ms;

		if (len != sizeof(ms))
			return -EINVAL;
		memcpy(&ms, val, sizeof(ms));
		r->op = name == IP_ADD_SOURCE_MEMBERSHIP ? DPSOCK_MC_JOIN_SOURCE :
			name == IP_DROP_SOURCE_MEMBERSHIP ? DPSOCK_MC_LEAVE_SOURCE :
			name == IP_BLOCK_SOURCE ? DPSOCK_MC_BLOCK : DPSOCK_MC_UNBLOCK;
		r->group = dpsock_mc_addr4(ms.imr_multiaddr.s_addr);
		r->addr = ms.imr_interface.s_addr;
		r->source = dpsock_mc_addr4(ms.imr_sourceaddr.s_addr);
		return 0;
	}
	case MCAST_JOIN_GROUP:
	case MCAST_LEAVE_GROUP:
		return parse_group_req(name, val, len, r, false);
	default: /* MCAST_{JOIN,LEAVE}_SOURCE_GROUP, MCAST_{BLOCK,UNBLOCK}_SOURCE */
		return parse_group_source_req(name, val, len, r, false);
	}
}

/* ---- memberships ---------------------------------------------------------- */

/* One membership operation on every slot, worker 0's first (its answer is
 * the call's). Caller holds s->lock. */
static int
mc_send(struct shim_thread *t, struct shim_sock *s, unsigned int op, struct dpsock_mc_addr group,
	int iface, struct dpsock_mc_addr source)
{
	int first = 0;

	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_MCAST, .slot = s->slot[i],
					   .gen = s->gen[i] };
		struct dpsock_pl_reply r;
		int e;

		c.mc.op = (int32_t)op;
		c.mc.iface = iface;
		memcpy(c.mc.group, group.w, 16);
		memcpy(c.mc.source, source.w, 16);
		e = shim_cmd_call(t, shim_slot_worker(s->slot[i]), &c, &r);
		if (e == 0)
			e = r.result;
		if (i == 0) {
			first = e;
			if (e != 0)
				return e; /* nothing changed anywhere */
		} else if (e != 0) {
			/* every worker's socket had the same memberships: only a
			 * race with another process of the group gets here */
			SHIM_LOG(WARNING, "multicast membership on worker %u: %s (worker 0 took it)",
				 shim_slot_worker(s->slot[i]), strerror(-e));
		}
	}
	return first;
}

static int
mc_membership(struct shim_sock *s, const struct mc_req *q)
{
	struct shim_thread *t;
	int iface;

	/* IPv6: not a group first, then the interface (ipv6_sock_mc_join) */
	if (q->v6 && (dpsock_mc_addr_is4(q->group) || !dpsock_mc_is_group(q->group)))
		return -EINVAL;
	iface = q->v6 ? (q->ifindex != 0 ? iface_by_index(q->ifindex) : iface_default6()) :
			iface_resolve(q->ifindex, q->addr);
	if (iface < 0) {
		/* a leave naming an interface none of ours has matches nothing */
		if (q->op == DPSOCK_MC_LEAVE && (q->ifindex != 0 || q->addr != 0))
			return -EADDRNOTAVAIL;
		return -ENODEV;
	}
	if (!dpsock_mc_is_group(q->group))
		return -EINVAL;
	if (!shim_sock_offloaded(s)) {
		/* not bound yet: the same rules on a set kept until the offload */
		if (s->mc_pending == NULL && (s->mc_pending = calloc(1, sizeof(*s->mc_pending))) == NULL)
			return -ENOMEM;
		return dpsock_mc_apply(s->mc_pending, q->op, q->group, (uint16_t)iface, q->source);
	}
	t = shim_thread_get();
	if (t == NULL)
		return -errno;
	return mc_send(t, s, q->op, q->group, iface, q->source);
}

/* IP_MULTICAST_IF, as Linux parses it: an in_addr, an ip_mreq or an
 * ip_mreqn; 0.0.0.0 and no index reset it. */
static int
mc_if(struct shim_sock *s, const void *val, socklen_t len, bool *to_kernel)
{
	struct ip_mreqn mn = { 0 };
	int iface;

	*to_kernel = false;
	if (val == NULL)
		return -EFAULT;
	if (len < sizeof(struct in_addr))
		return -EINVAL;
	if (len >= sizeof(struct ip_mreqn))
		memcpy(&mn, val, sizeof(mn));
	else if (len >= sizeof(struct ip_mreq))
		memcpy(&mn, val, sizeof(struct ip_mreq)); /* imr_interface lands in imr_address */
	else
		memcpy(&mn.imr_address, val, sizeof(struct in_addr));
	if (mn.imr_ifindex == 0 && mn.imr_address.s_addr == htonl(INADDR_ANY)) {
		iface = -1;
	} else {
		iface = mn.imr_ifindex != 0 ? iface_by_index(mn.imr_ifindex) :
					      iface_by_addr(mn.imr_address.s_addr);
		if (iface < 0) {
			if (shim_sock_offloaded(s))
				return -EADDRNOTAVAIL;
			*to_kernel = true; /* a kernel interface: the socket sends there */
			return 0;
		}
	}
	s->mc_if = iface;
	s->mc_if_kernel = 0;
	s->mc_if_addr = mn.imr_address.s_addr;
	if (shim_sock_offloaded(s)) {
		struct shim_thread *t = shim_thread_get();

		if (t == NULL)
			return -errno;
		return shim_sock_setopt_all(t, s, IPPROTO_IP, IP_MULTICAST_IF, iface);
	}
	return 0;
}

int
shim_mc_setsockopt(struct shim_sock *s, int fd, int level, int name, const void *val,
		   socklen_t len)
{
	struct mc_req q;
	bool to_kernel;
	int r;

	if (shim_attach() < 0)
		return SHIM_TO_KERNEL; /* no dpsockd: the socket is the kernel's */
	pthread_mutex_lock(&s->lock);
	/* IPv6's memberships are dpsockd's when it serves IPv6 (else the
	 * socket's IPv6 is the kernel's, which knows the interface by index) */
	if (s->mode == SHIM_KERNEL ||
	    (level == IPPROTO_IPV6 && (s->family != AF_INET6 || !shim_serves_ip6()))) {
		r = SHIM_TO_KERNEL;
	} else if (level == IPPROTO_IP && name == IP_MULTICAST_IF) {
		r = mc_if(s, val, len, &to_kernel);
		if (r == 0 && to_kernel) {
			r = REAL(setsockopt)(fd, IPPROTO_IP, name, val, len) == 0 ? 0 : -errno;
			if (r == 0)
				s->mc_if_kernel = 1;
		}
	} else {
		r = mc_parse(level, name, val, len, &q);
		if (r == 0)
			r = mc_membership(s, &q);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

int
shim_mc_getsockopt(struct shim_sock *s, int name, void *val, socklen_t *len)
{
	socklen_t l;

	/* the only one the kernel socket does not know */
	if (name != IP_MULTICAST_IF || s->mc_if == SHIM_UNSET || s->mc_if_kernel)
		return SHIM_TO_KERNEL;
	l = *len < sizeof(struct in_addr) ? *len : sizeof(struct in_addr);
	memcpy(val, &s->mc_if_addr, l);
	*len = l;
	return 0;
}

/* The socket was just offloaded: its memberships made before, on every
 * slot, rebuilt op by op into the same state (the source list's existence
 * included: it decides which mode a later source operation may take).
 * Caller holds s->lock. */
void
shim_mc_replay(struct shim_thread *t, struct shim_sock *s)
{
	struct dpsock_mc_set *set = s->mc_pending;
	const struct dpsock_mc_addr none = { { 0 } };
	int e = 0;

	if (set == NULL)
		return;
	for (uint32_t i = 0; i < set->n && e == 0; i++) {
		const struct dpsock_mc_memb *m = &set->m[i];
		bool inc = m->mode == DPSOCK_MC_INCLUDE;

		if (!inc || m->nsrc == 0)
			e = mc_send(t, s, DPSOCK_MC_JOIN, m->group, m->iface, none);
		for (uint32_t j = 0; j < m->nsrc && e == 0; j++)
			e = mc_send(t, s, inc ? DPSOCK_MC_JOIN_SOURCE : DPSOCK_MC_BLOCK, m->group,
				    m->iface, m->src[j]);
		if (e != 0)
			break;
		if (inc && m->nsrc == 0) {
			/* a failed source drop switched an any-source join to an
			 * empty INCLUDE filter: the same call does it here */
			(void)mc_send(t, s, DPSOCK_MC_LEAVE_SOURCE, m->group, m->iface, none);
		} else if (!inc && m->list && m->nsrc == 0) {
			/* sources blocked then unblocked: the list exists */
			e = mc_send(t, s, DPSOCK_MC_BLOCK, m->group, m->iface, none);
			if (e == 0)
				e = mc_send(t, s, DPSOCK_MC_UNBLOCK, m->group, m->iface, none);
		}
	}
	if (e != 0)
		SHIM_LOG(WARNING, "multicast memberships made before bind: %s on dpsockd",
			 strerror(-e));
	free(set);
	s->mc_pending = NULL;
}

/* The socket stays in the kernel: memberships of dpsockd's interfaces
 * cannot follow it. */
void
shim_mc_drop_pending(struct shim_sock *s)
{
	if (s->mc_pending == NULL)
		return;
	if (s->mc_pending->n > 0)
		SHIM_LOG(WARNING, "a UDP socket with %u multicast membership(s) of dpsockd's "
			 "interfaces stays in the kernel: they are dropped", s->mc_pending->n);
	free(s->mc_pending);
	s->mc_pending = NULL;
}

/* ---- control messages (recvmsg) ----------------------------------------------- */

struct cmsg_out {
	struct msghdr *m;
	size_t used;
	int *flags;
};

static void
cmsg_put(struct cmsg_out *o, int level, int type, const void *data, size_t len)
{
	size_t cap = o->m->msg_control != NULL ? o->m->msg_controllen : 0;
	struct cmsghdr *c;

	if (o->used + CMSG_LEN(len) > cap) {
		*o->flags |= MSG_CTRUNC;
		return;
	}
	c = (struct cmsghdr *)(void *)((unsigned char *)o->m->msg_control + o->used);
	c->cmsg_len = CMSG_LEN(len);
	c->cmsg_level = level;
	c->cmsg_type = type;
	memcpy(CMSG_DATA(c), data, len);
	o->used += CMSG_SPACE(len) < cap - o->used ? CMSG_SPACE(len) : cap - o->used;
}

void
shim_udp_cmsgs(const struct shim_sock *s, const struct shim_dgram *d, struct msghdr *m,
	       int *flags)
{
	const struct dpsock_pl_dgram *h = &d->h;
	bool v6 = (h->flags & DPSOCK_PL_DGRAM_IP6) != 0;
	struct cmsg_out o = { .m = m, .flags = flags };
	struct timespec ts = { (time_t)(h->rx_ns / 1000000000ull),
			       (long)(h->rx_ns % 1000000000ull) };

	/* timestamps first, then IP_PKTINFO: the order udp_recvmsg has */
	if (s->ts_opt == SO_TIMESTAMPNS_OLD || s->ts_opt == SO_TIMESTAMPNS_NEW) {
		cmsg_put(&o, SOL_SOCKET, s->ts_opt, &ts, sizeof(ts));
	} else if (s->ts_opt == SO_TIMESTAMP_OLD || s->ts_opt == SO_TIMESTAMP_NEW) {
		struct timeval tv = { ts.tv_sec, ts.tv_nsec / 1000 };

		cmsg_put(&o, SOL_SOCKET, s->ts_opt, &tv, sizeof(tv));
	}
	if (s->ts_flags & (SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_RAW_HARDWARE)) {
		struct timespec t3[3];
		bool any = false;

		memset(t3, 0, sizeof(t3));
		if ((s->ts_flags & SOF_TIMESTAMPING_SOFTWARE) &&
		    (s->ts_flags & SOF_TIMESTAMPING_RX_SOFTWARE)) {
			t3[0] = ts;
			any = true;
		}
		if ((s->ts_flags & SOF_TIMESTAMPING_RAW_HARDWARE) &&
		    (s->ts_flags & SOF_TIMESTAMPING_RX_HARDWARE) && (h->flags & DPSOCK_PL_DGRAM_HWTS)) {
			t3[2].tv_sec = (time_t)(h->hw_ns / 1000000000ull);
			t3[2].tv_nsec = (long)(h->hw_ns % 1000000000ull);
			any = true;
		}
		if (any)
			cmsg_put(&o, SOL_SOCKET, s->ts_ing_opt, t3, sizeof(t3));
	}
	/* an IPv6 datagram has IPv6's messages only (as udpv6_recvmsg) */
	if (s->pktinfo && !v6) {
		struct in_pktinfo pi = { .ipi_ifindex = (int)h->ifindex,
					 .ipi_spec_dst.s_addr = h->spec_dst,
					 .ipi_addr.s_addr = h->dst };

		cmsg_put(&o, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
	}
	if (s->pktinfo6) {
		/* the destination (an AF_INET6 socket's IPv4 datagram: mapped)
		 * and the interface, after the IPv4 messages (as Linux) */
		struct in6_pktinfo pi6 = { .ipi6_ifindex = h->ifindex };

		if (v6) {
			memcpy(&pi6.ipi6_addr, d->x.dst, 16);
		} else {
			pi6.ipi6_addr.s6_addr32[2] = htonl(0xffff);
			pi6.ipi6_addr.s6_addr32[3] = h->dst;
		}
		cmsg_put(&o, IPPROTO_IPV6, IPV6_PKTINFO, &pi6, sizeof(pi6));
	}
	m->msg_controllen = o.used;
}
