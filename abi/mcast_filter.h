/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcast_filter.h — a UDP socket's multicast memberships and their source
 * filters, with the semantics (and errno values) of Linux's IPv4 socket
 * options, in one place for the two programs that keep such a set:
 *
 *  - the stack (stack/mcast/mcast.c): every UDP socket's memberships, which
 *    decide what the socket receives and what the port joins;
 *  - the shim (shim/offload/mcast.c): the memberships an application
 *    makes on a UDP socket before it is bound (before the offload
 *    decision), replayed on the worker's socket once it exists, or on the
 *    kernel socket.
 *
 * A membership is (group, interface) with a filter mode and up to
 * DPSOCK_MC_MAX_SOURCES sources; a socket has up to DPSOCK_MC_MAX_MEMBERSHIPS
 * of them (Linux's defaults of net.ipv4.igmp_max_msf and
 * igmp_max_memberships). The operations are those of the socket API:
 *
 *   JOIN          IP_ADD_MEMBERSHIP, MCAST_JOIN_GROUP (any source: EXCLUDE {})
 *   LEAVE         IP_DROP_MEMBERSHIP, MCAST_LEAVE_GROUP
 *   JOIN_SOURCE   IP_ADD_SOURCE_MEMBERSHIP, MCAST_JOIN_SOURCE_GROUP (joins in
 *                 INCLUDE mode first if needed, then adds the source)
 *   LEAVE_SOURCE  IP_DROP_SOURCE_MEMBERSHIP, MCAST_LEAVE_SOURCE_GROUP (the
 *                 last source of an INCLUDE filter leaves the group)
 *   BLOCK         IP_BLOCK_SOURCE, MCAST_BLOCK_SOURCE (EXCLUDE filter)
 *   UNBLOCK       IP_UNBLOCK_SOURCE, MCAST_UNBLOCK_SOURCE
 *
 * Errors, as Linux's (net/ipv4/igmp.c): EINVAL (not a multicast group; a
 * source operation without a prior join, or of the other filter mode while
 * sources are listed), EADDRINUSE (joined already), EADDRNOTAVAIL (no such
 * membership or source; a source listed already), ENOBUFS (too many
 * memberships or sources). Resolving the interface (ENODEV) is the caller's.
 * Two Linux details are kept on purpose: a membership whose source list
 * ever held a source keeps its mode (an emptied list still refuses the other
 * mode: EINVAL), and a source operation of the other mode on a membership
 * that never had one switches its mode even when it then fails.
 *
 * IPv6 memberships (IPV6_JOIN_GROUP, MCAST_* with an AF_INET6 group) follow
 * the same rules in Linux (net/ipv6/mcast.c, ip6_mc_source), so one set
 * holds both families: an address is 16 bytes, an IPv4 one in its mapped
 * form ::ffff:a.b.c.d (dpsock_mc_addr4), which is never an IPv6 group.
 *
 * Plain C, no libc beyond string.h: included by the shim and the stack.
 * Addresses in network order.
 */
#ifndef DPSOCK_ABI_MCAST_FILTER_H
#define DPSOCK_ABI_MCAST_FILTER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define DPSOCK_MC_MAX_MEMBERSHIPS 20
#define DPSOCK_MC_MAX_SOURCES 10

/* filter modes (RFC 3376's INCLUDE / EXCLUDE; 0 = no membership) */
#define DPSOCK_MC_INCLUDE 1
#define DPSOCK_MC_EXCLUDE 2

/* operations; also the wire's DPSOCK_PL_OP_MCAST arg[0] */
enum dpsock_mc_op {
	DPSOCK_MC_JOIN = 1,
	DPSOCK_MC_LEAVE,
	DPSOCK_MC_JOIN_SOURCE,
	DPSOCK_MC_LEAVE_SOURCE,
	DPSOCK_MC_BLOCK,
	DPSOCK_MC_UNBLOCK,
	DPSOCK_MC_OP_MAX
};

/* An address of either family: IPv6's 16 bytes, an IPv4 address mapped
 * (::ffff:a.b.c.d). Compared as four words. */
struct dpsock_mc_addr {
	uint32_t w[4];            /* network order */
};

/* ::ffff: in the third word, whatever the byte order */
#define DPSOCK_MC_V4MAPPED \
	(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0xffff0000u : 0x0000ffffu)

static inline struct dpsock_mc_addr
dpsock_mc_addr4(uint32_t a)
{
	struct dpsock_mc_addr r = { { 0, 0, DPSOCK_MC_V4MAPPED, a } };

	return r;
}

static inline struct dpsock_mc_addr
dpsock_mc_addr6(const void *a16)
{
	struct dpsock_mc_addr r;

	memcpy(r.w, a16, 16);
	return r;
}

static inline bool
dpsock_mc_addr_is4(struct dpsock_mc_addr a)
{
	return a.w[0] == 0 && a.w[1] == 0 && a.w[2] == DPSOCK_MC_V4MAPPED;
}

static inline bool
dpsock_mc_addr_eq(struct dpsock_mc_addr a, struct dpsock_mc_addr b)
{
	return ((a.w[0] ^ b.w[0]) | (a.w[1] ^ b.w[1]) | (a.w[2] ^ b.w[2]) | (a.w[3] ^ b.w[3])) == 0;
}

struct dpsock_mc_memb {
	struct dpsock_mc_addr group;
	uint16_t iface;           /* the stack's interface (port) index */
	uint8_t mode;             /* DPSOCK_MC_INCLUDE / _EXCLUDE */
	uint8_t nsrc;
	uint8_t list;             /* a source was ever added (Linux's sflist exists) */
	uint8_t pad[3];
	struct dpsock_mc_addr src[DPSOCK_MC_MAX_SOURCES];
};

struct dpsock_mc_set {
	uint32_t n;
	struct dpsock_mc_memb m[DPSOCK_MC_MAX_MEMBERSHIPS];
};

/* An IPv4 group: 224.0.0.0/4 */
static inline bool
dpsock_mc_is_group4(uint32_t addr)
{
	return (((const uint8_t *)&addr)[0] & 0xf0) == 0xe0;
}

/* A group of its family: 224.0.0.0/4 (mapped), ff00::/8 */
static inline bool
dpsock_mc_is_group(struct dpsock_mc_addr a)
{
	return dpsock_mc_addr_is4(a) ? dpsock_mc_is_group4(a.w[3]) :
				       ((const uint8_t *)a.w)[0] == 0xff;
}

static inline struct dpsock_mc_memb *
dpsock_mc_find(struct dpsock_mc_set *set, struct dpsock_mc_addr group, uint16_t iface)
{
	for (uint32_t i = 0; i < set->n; i++)
		if (dpsock_mc_addr_eq(set->m[i].group, group) && set->m[i].iface == iface)
			return &set->m[i];
	return NULL;
}

static inline int
dpsock_mc_src_index(const struct dpsock_mc_memb *m, struct dpsock_mc_addr src)
{
	for (int i = 0; i < m->nsrc; i++)
		if (dpsock_mc_addr_eq(m->src[i], src))
			return i;
	return -1;
}

/* Does a membership let a datagram from src through? */
static inline bool
dpsock_mc_allows(const struct dpsock_mc_memb *m, struct dpsock_mc_addr src)
{
	bool listed = dpsock_mc_src_index(m, src) >= 0;

	return m->mode == DPSOCK_MC_EXCLUDE ? !listed : listed;
}

static inline void
dpsock_mc_remove(struct dpsock_mc_set *set, struct dpsock_mc_memb *m)
{
	uint32_t i = (uint32_t)(m - set->m);

	memmove(&set->m[i], &set->m[i + 1], (set->n - i - 1) * sizeof(*m));
	set->n--;
}

static inline int
dpsock_mc_join_mode(struct dpsock_mc_set *set, struct dpsock_mc_addr group, uint16_t iface,
		    uint8_t mode)
{
	struct dpsock_mc_memb *m;

	if (dpsock_mc_find(set, group, iface) != NULL)
		return -EADDRINUSE;
	if (set->n >= DPSOCK_MC_MAX_MEMBERSHIPS)
		return -ENOBUFS;
	m = &set->m[set->n++];
	memset(m, 0, sizeof(*m));
	m->group = group;
	m->iface = iface;
	m->mode = mode;
	return 0;
}

/* add/remove one source of mode omode (Linux's ip_mc_source) */
static inline int
dpsock_mc_source(struct dpsock_mc_set *set, bool add, uint8_t omode, struct dpsock_mc_addr group,
		 uint16_t iface, struct dpsock_mc_addr src)
{
	struct dpsock_mc_memb *m = dpsock_mc_find(set, group, iface);
	int i;

	if (m == NULL)
		return -EINVAL;           /* must have a prior join */
	if (m->mode != omode) {
		if (m->list)
			return -EINVAL;
		m->mode = omode;          /* filters that never had a source switch mode */
	}
	i = dpsock_mc_src_index(m, src);
	if (!add) {
		if (i < 0)
			return -EADDRNOTAVAIL;
		if (m->nsrc == 1 && omode == DPSOCK_MC_INCLUDE) {
			dpsock_mc_remove(set, m); /* INCLUDE {} is a leave */
			return 0;
		}
		memmove(&m->src[i], &m->src[i + 1], (size_t)(m->nsrc - i - 1) * sizeof(src));
		m->nsrc--;
		return 0;
	}
	if (m->nsrc >= DPSOCK_MC_MAX_SOURCES)
		return -ENOBUFS;
	m->list = 1;
	if (i >= 0)
		return -EADDRNOTAVAIL;    /* listed already */
	m->src[m->nsrc++] = src;
	return 0;
}

/*
 * Apply one operation. Returns 0 or -errno as Linux's setsockopt would;
 * on failure the set is as before (except the quirk in the file comment).
 */
static inline int
dpsock_mc_apply(struct dpsock_mc_set *set, unsigned int op, struct dpsock_mc_addr group,
		uint16_t iface, struct dpsock_mc_addr src)
{
	struct dpsock_mc_memb *m;
	bool joined;
	int r;

	if (!dpsock_mc_is_group(group))
		return -EINVAL;
	switch (op) {
	case DPSOCK_MC_JOIN:
		return dpsock_mc_join_mode(set, group, iface, DPSOCK_MC_EXCLUDE);
	case DPSOCK_MC_LEAVE:
		m = dpsock_mc_find(set, group, iface);
		if (m == NULL)
			return -EADDRNOTAVAIL;
		dpsock_mc_remove(set, m);
		return 0;
	case DPSOCK_MC_JOIN_SOURCE:
		r = dpsock_mc_join_mode(set, group, iface, DPSOCK_MC_INCLUDE);
		if (r != 0 && r != -EADDRINUSE)
			return r;
		joined = r == 0;
		r = dpsock_mc_source(set, true, DPSOCK_MC_INCLUDE, group, iface, src);
		if (r != 0 && joined && (m = dpsock_mc_find(set, group, iface)) != NULL)
			dpsock_mc_remove(set, m); /* the join made here goes too */
		return r;
	case DPSOCK_MC_LEAVE_SOURCE:
		return dpsock_mc_source(set, false, DPSOCK_MC_INCLUDE, group, iface, src);
	case DPSOCK_MC_BLOCK:
		return dpsock_mc_source(set, true, DPSOCK_MC_EXCLUDE, group, iface, src);
	case DPSOCK_MC_UNBLOCK:
		return dpsock_mc_source(set, false, DPSOCK_MC_EXCLUDE, group, iface, src);
	default:
		return -EINVAL;
	}
}

#endif /* DPSOCK_ABI_MCAST_FILTER_H */
