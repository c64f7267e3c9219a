/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flow_filter.c — the rte_flow backend of a port dpsock shares with the
 * kernel (filter_priv.h): the NIC, in isolated mode, sends the flows dpsock
 * serves to the workers' queues, one rule per entry of the served set, and
 * every other frame to the kernel netdev (mlx5's bifurcated driver).
 *
 * Two halves:
 *  - rule construction, pure (no port, no EAL: test/unit/flow_filter_test.c
 *    checks it): the served set becomes a list of struct dpsock_flow_match,
 *    the ephemeral range its fewest (port, mask) blocks, and a match
 *    becomes rte_flow items in the caller's storage;
 *  - the backend, which keeps a port's rules equal to the served set as the
 *    registry changes it. A rule is counted once per entry that needs it (a
 *    listener on every address and one on a single address need the same
 *    rule there; a port inside the ephemeral range may equal a block), so a
 *    change creates and destroys exactly the rules whose count leaves or
 *    reaches zero, and rules common to an old and a new ephemeral range
 *    never go away while it changes.
 *
 * Life cycle on mlx5 (DPDK 22.11; the rte_flow guide and the mlx5 PMD):
 *   probe → dpsock_flowf_isolate → configure, queues, start → open → ...
 *   → close → stop, close the port.
 * Isolated mode must come before the port is started (mlx5 returns EBUSY
 * after) and, as the rte_flow guide recommends, before the first configure.
 * mlx5 does not advertise RTE_ETH_DEV_CAPA_FLOW_RULE_KEEP: rules can only
 * be created once the port is started, and must be destroyed before it
 * stops. Rules and isolated mode live in the process: the PMD's verbs and
 * DevX objects are closed with its file descriptors, so when dpsockd dies,
 * even by SIGKILL, the kernel removes its rules and the netdev receives
 * everything again.
 *
 * Both families: a rule's destination is an IPV4 item for an IPv4 address
 * (mapped, ::ffff:a.b.c.d, in the served set) and an IPV6 item otherwise;
 * a port entry on a family's any reaches that family's addresses only, the
 * ephemeral blocks go on every address of both. The RSS action is per
 * family (filter_priv.h, dpsock_flow_rss_types6): an IPv6 rule hashes the
 * IPv6 tuple even where the port was configured with IPv4 types alone.
 *
 * What a NIC rule cannot express, and so stays the kernel's, unlike the XDP
 * backend which remembers a datagram's first fragment: IP fragments other
 * than the first carry no ports, and no rule can tell dpsock's from the
 * kernel's. A datagram dpsock serves that arrives fragmented is therefore
 * not dpsock's here (whether a NIC parses a first fragment's ports is the
 * NIC's, and in IPv6 whether it finds them behind the fragment header, or
 * behind any other extension header; the test plan checks it). Nor is a
 * frame of another VLAN to dpsock's addresses when the PMD cannot match
 * has_vlan (logged at open). ICMPv6, neighbour discovery and MLD included,
 * matches no rule (every rule names TCP or UDP) and stays the kernel's, as
 * ARP and ICMP do.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_flow.h>

#include "filter_priv.h"
#include "core/log_priv.h"
#include "frame/port_priv.h"

_Static_assert(DPSOCK_FLOW_QUEUES_MAX >= DPSOCK_PORT_QUEUES_MAX,
	       "a rule spreads over every worker's queue");
_Static_assert(DPSOCK_FLOW_KEY_MAX >= DPSOCK_RSS_KEY_MAX, "a port's RSS key fits the action");

#define VLAN_ID_MAX 4094

/* ---- rule construction ------------------------------------------------------- */

/*
 * As CIDR aggregation of an address range: from lo, the largest block
 * aligned at the current port (its lowest set bit; any size at 0) that
 * ends inside the range, then on from its end. Each block is as large as
 * alignment and the range allow, so none can be merged with another: the
 * fewest there are.
 */
int
dpsock_flow_port_range(uint16_t lo, uint16_t hi, struct dpsock_flow_match *out,
		       unsigned int max, const struct dpsock_flow_match *tmpl)
{
	static const struct dpsock_flow_match zero;
	uint32_t p = lo, end = (uint32_t)hi + 1;
	unsigned int n = 0;

	if (lo > hi)
		return -EINVAL;
	if (tmpl == NULL)
		tmpl = &zero;
	while (p < end) {
		uint32_t size = p != 0 ? p & -p : 65536;

		while (p + size > end)
			size >>= 1;
		if (n == max)
			return -ENOSPC;
		out[n] = *tmpl;
		out[n].port = (uint16_t)p;
		out[n].port_mask = (uint16_t)~(size - 1); /* 65536: 0, any port */
		n++;
		p += size;
	}
	return (int)n;
}

static bool
match_eq(const struct dpsock_flow_match *a, const struct dpsock_flow_match *b)
{
	return a->vlan == b->vlan && dpsock_mc_addr_eq(a->dst, b->dst) && a->proto == b->proto &&
	       a->port == b->port && a->port_mask == b->port_mask;
}

/* The "every local address" of a's family (filter_priv.h). */
static struct dpsock_mc_addr
any_of(struct dpsock_mc_addr a)
{
	return dpsock_mc_addr_is4(a) ? dpsock_filter_any4() : dpsock_filter_any6();
}

static bool
is_any(struct dpsock_mc_addr a)
{
	return dpsock_mc_addr_eq(a, dpsock_filter_any4()) ||
	       dpsock_mc_addr_eq(a, dpsock_filter_any6());
}

/* Does port entry e reach local address addr: on it, or on every address
 * of its family? (A local address is never an any, so the first test
 * cannot mistake one for the other.) */
static bool
port_on(const struct dpsock_flow_port *e, struct dpsock_mc_addr addr)
{
	return dpsock_mc_addr_eq(e->addr, addr) || dpsock_mc_addr_eq(e->addr, any_of(addr));
}

/* Where matches go: out[0..max), optionally without duplicates; the first
 * error sticks. */
struct sink {
	struct dpsock_flow_match *out;
	unsigned int n, max;
	bool dedup;
	int err;
};

static void
sink_put(struct sink *k, uint16_t vlan, struct dpsock_mc_addr dst, uint8_t proto, uint16_t port,
	 uint16_t mask)
{
	const struct dpsock_flow_match m = {
		.vlan = vlan, .dst = dst, .proto = proto, .port = port, .port_mask = mask,
	};
	unsigned int i;

	if (k->err != 0)
		return;
	if (k->dedup)
		for (i = 0; i < k->n; i++)
			if (match_eq(&k->out[i], &m))
				return;
	if (k->n == k->max) {
		k->err = -ENOSPC;
		return;
	}
	k->out[k->n++] = m;
}

/* [lo, hi]'s blocks for proto on dst (0, 0: none). */
static void
sink_range(struct sink *k, uint16_t vlan, struct dpsock_mc_addr dst, uint8_t proto, uint16_t lo,
	   uint16_t hi)
{
	const struct dpsock_flow_match tmpl = { .vlan = vlan, .dst = dst, .proto = proto };
	struct dpsock_flow_match b[DPSOCK_FLOW_RANGE_MAX];
	int n, i;

	if (k->err != 0 || (lo == 0 && hi == 0))
		return;
	n = dpsock_flow_port_range(lo, hi, b, RTE_DIM(b), &tmpl);
	if (n < 0) {
		k->err = n;
		return;
	}
	for (i = 0; i < n; i++)
		sink_put(k, b[i].vlan, b[i].dst, b[i].proto, b[i].port, b[i].port_mask);
}

static int
sink_end(const struct sink *k)
{
	return k->err != 0 ? k->err : (int)k->n;
}

static bool
set_has_addr(const struct dpsock_flow_set *s, struct dpsock_mc_addr addr)
{
	unsigned int i;

	for (i = 0; i < s->n_addrs; i++)
		if (dpsock_mc_addr_eq(s->addrs[i], addr))
			return true;
	return false;
}

static void
put_addr(struct sink *k, const struct dpsock_flow_set *s, struct dpsock_mc_addr addr)
{
	unsigned int i;

	for (i = 0; i < s->n_ports; i++)
		if (port_on(&s->ports[i], addr))
			sink_put(k, s->vlan, addr, s->ports[i].proto, s->ports[i].port, 0xffff);
	sink_range(k, s->vlan, addr, IPPROTO_TCP, s->eph_lo, s->eph_hi);
	sink_range(k, s->vlan, addr, IPPROTO_UDP, s->eph_lo, s->eph_hi);
}

int
dpsock_flow_set_matches(const struct dpsock_flow_set *s, struct dpsock_flow_match *out,
			unsigned int max)
{
	struct sink k = { .out = out, .max = max, .dedup = true };
	unsigned int i;

	for (i = 0; i < s->n_addrs; i++)
		put_addr(&k, s, s->addrs[i]);
	for (i = 0; i < s->n_groups; i++)
		sink_put(&k, s->vlan, s->groups[i], IPPROTO_UDP, 0, 0);
	return sink_end(&k);
}

int
dpsock_flow_addr_matches(const struct dpsock_flow_set *s, struct dpsock_mc_addr addr,
			 struct dpsock_flow_match *out, unsigned int max)
{
	struct sink k = { .out = out, .max = max };

	put_addr(&k, s, addr);
	return sink_end(&k);
}

int
dpsock_flow_port_matches(const struct dpsock_flow_set *s, const struct dpsock_flow_port *e,
			 struct dpsock_flow_match *out, unsigned int max)
{
	struct sink k = { .out = out, .max = max };
	unsigned int i;

	if (!is_any(e->addr)) {
		if (set_has_addr(s, e->addr))
			sink_put(&k, s->vlan, e->addr, e->proto, e->port, 0xffff);
		return sink_end(&k);
	}
	/* every address of the entry's family, and only those */
	for (i = 0; i < s->n_addrs; i++)
		if (port_on(e, s->addrs[i]))
			sink_put(&k, s->vlan, s->addrs[i], e->proto, e->port, 0xffff);
	return sink_end(&k);
}

int
dpsock_flow_ephemeral_matches(const struct dpsock_flow_set *s, uint16_t lo, uint16_t hi,
			      struct dpsock_flow_match *out, unsigned int max)
{
	struct sink k = { .out = out, .max = max };
	unsigned int i;

	for (i = 0; i < s->n_addrs; i++) {
		sink_range(&k, s->vlan, s->addrs[i], IPPROTO_TCP, lo, hi);
		sink_range(&k, s->vlan, s->addrs[i], IPPROTO_UDP, lo, hi);
	}
	return sink_end(&k);
}

void
dpsock_flow_group_match(const struct dpsock_flow_set *s, struct dpsock_mc_addr group,
			struct dpsock_flow_match *out)
{
	memset(out, 0, sizeof(*out));
	out->vlan = s->vlan;
	out->dst = group;
	out->proto = IPPROTO_UDP;
}

int
dpsock_flow_rule_build(struct dpsock_flow_rule *r, const struct dpsock_flow_match *m,
		       bool untagged_only)
{
	unsigned int n = 0;

	if ((m->proto != 0 && m->proto != IPPROTO_TCP && m->proto != IPPROTO_UDP) ||
	    (m->proto == 0 && m->port_mask != 0) || m->vlan > VLAN_ID_MAX)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->attr.ingress = 1;
	r->attr.priority = DPSOCK_FLOW_PRIORITY;

	r->pattern[n].type = RTE_FLOW_ITEM_TYPE_ETH;
	if (m->vlan == 0 && untagged_only) {
		/* spec has_vlan 0 (memset): untagged frames only */
		r->eth_mask.has_vlan = 1;
		r->pattern[n].spec = &r->eth_spec;
		r->pattern[n].mask = &r->eth_mask;
	}
	n++;
	if (m->vlan != 0) {
		r->vlan_spec.hdr.vlan_tci = rte_cpu_to_be_16(m->vlan);
		r->vlan_mask.hdr.vlan_tci = RTE_BE16(RTE_VLAN_ID_MASK);
		r->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_VLAN,
							  .spec = &r->vlan_spec,
							  .mask = &r->vlan_mask };
	}
	if (dpsock_mc_addr_is4(m->dst)) {
		r->ip_spec.hdr.dst_addr = m->dst.w[3];
		r->ip_mask.hdr.dst_addr = RTE_BE32(UINT32_MAX);
		r->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_IPV4,
							  .spec = &r->ip_spec,
							  .mask = &r->ip_mask };
	} else {
		memcpy(r->ip6_spec.hdr.dst_addr, m->dst.w, sizeof(r->ip6_spec.hdr.dst_addr));
		memset(r->ip6_mask.hdr.dst_addr, 0xff, sizeof(r->ip6_mask.hdr.dst_addr));
		r->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_IPV6,
							  .spec = &r->ip6_spec,
							  .mask = &r->ip6_mask };
	}
	if (m->proto == IPPROTO_TCP) {
		r->pattern[n].type = RTE_FLOW_ITEM_TYPE_TCP;
		if (m->port_mask != 0) {
			r->tcp_spec.hdr.dst_port = rte_cpu_to_be_16(m->port & m->port_mask);
			r->tcp_mask.hdr.dst_port = rte_cpu_to_be_16(m->port_mask);
			r->pattern[n].spec = &r->tcp_spec;
			r->pattern[n].mask = &r->tcp_mask;
		}
		n++;
	} else if (m->proto == IPPROTO_UDP) {
		r->pattern[n].type = RTE_FLOW_ITEM_TYPE_UDP;
		if (m->port_mask != 0) {
			r->udp_spec.hdr.dst_port = rte_cpu_to_be_16(m->port & m->port_mask);
			r->udp_mask.hdr.dst_port = rte_cpu_to_be_16(m->port_mask);
			r->pattern[n].spec = &r->udp_spec;
			r->pattern[n].mask = &r->udp_mask;
		}
		n++;
	}
	r->pattern[n].type = RTE_FLOW_ITEM_TYPE_END;
	return 0;
}

int
dpsock_flow_actions_build(struct dpsock_flow_actions *a, const uint16_t *queues,
			  unsigned int n, const uint8_t *key, unsigned int key_len,
			  uint64_t types)
{
	if (n == 0 || n > DPSOCK_FLOW_QUEUES_MAX || key_len > DPSOCK_FLOW_KEY_MAX)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	memcpy(a->queues, queues, n * sizeof(*queues));
	if (n == 1) {
		/* one worker: no hashing to ask for (and a PMD without RSS
		 * actions still takes it) */
		a->queue.index = queues[0];
		a->actions[0] = (struct rte_flow_action){ .type = RTE_FLOW_ACTION_TYPE_QUEUE,
							  .conf = &a->queue };
	} else {
		a->rss.func = RTE_ETH_HASH_FUNCTION_DEFAULT;
		a->rss.level = 0;
		a->rss.types = types;
		a->rss.queue_num = n;
		a->rss.queue = a->queues;
		if (key != NULL && key_len > 0) {
			memcpy(a->key, key, key_len);
			a->rss.key = a->key;
			a->rss.key_len = key_len;
		}
		a->actions[0] = (struct rte_flow_action){ .type = RTE_FLOW_ACTION_TYPE_RSS,
							  .conf = &a->rss };
	}
	a->actions[1].type = RTE_FLOW_ACTION_TYPE_END;
	return 0;
}

/*
 * The IPv4 types whose IPv6 counterparts an IPv6 rule hashes with when the
 * port's types have no IPv6 type at all (a PMD, or a configuration, that
 * named IPv4 alone: port.c keeps what the PMD offers of RTE_ETH_RSS_IP,
 * _TCP and _UDP, both families on mlx5).
 */
static const struct {
	uint64_t v4, v6;
} rss_pairs[] = {
	{ RTE_ETH_RSS_IPV4, RTE_ETH_RSS_IPV6 },
	{ RTE_ETH_RSS_FRAG_IPV4, RTE_ETH_RSS_FRAG_IPV6 },
	{ RTE_ETH_RSS_NONFRAG_IPV4_TCP, RTE_ETH_RSS_NONFRAG_IPV6_TCP },
	{ RTE_ETH_RSS_NONFRAG_IPV4_UDP, RTE_ETH_RSS_NONFRAG_IPV6_UDP },
	{ RTE_ETH_RSS_NONFRAG_IPV4_SCTP, RTE_ETH_RSS_NONFRAG_IPV6_SCTP },
	{ RTE_ETH_RSS_NONFRAG_IPV4_OTHER, RTE_ETH_RSS_NONFRAG_IPV6_OTHER },
};

#define RSS_IPV6_TYPES                                                                    \
	(RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_FRAG_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP |         \
	 RTE_ETH_RSS_NONFRAG_IPV6_UDP | RTE_ETH_RSS_NONFRAG_IPV6_SCTP |                    \
	 RTE_ETH_RSS_NONFRAG_IPV6_OTHER | RTE_ETH_RSS_IPV6_EX | RTE_ETH_RSS_IPV6_TCP_EX |  \
	 RTE_ETH_RSS_IPV6_UDP_EX)

uint64_t
dpsock_flow_rss_types6(uint64_t types)
{
	uint64_t t = types;
	unsigned int i;

	/* IPv6 types named: the port's choice for IPv6, taken as it is; 0:
	 * the PMD's default, which hashes both families (mlx5: RTE_ETH_RSS_IP) */
	if (types == 0 || (types & RSS_IPV6_TYPES) != 0)
		return types;
	for (i = 0; i < RTE_DIM(rss_pairs); i++)
		if (types & rss_pairs[i].v4)
			t |= rss_pairs[i].v6;
	return t;
}

/* An address of either family as text (inet_ntop: a mapped one as IPv4). */
static const char *
addr_str(struct dpsock_mc_addr a, char *buf, size_t len)
{
	const char *s = dpsock_mc_addr_is4(a) ? inet_ntop(AF_INET, &a.w[3], buf, (socklen_t)len) :
						inet_ntop(AF_INET6, a.w, buf, (socklen_t)len);

	if (s == NULL)
		snprintf(buf, len, "?");
	return buf;
}

int
dpsock_flow_match_str(const struct dpsock_flow_match *m, bool untagged_only, char *buf,
		      size_t len)
{
	const char *l4 = m->proto == IPPROTO_TCP ? "tcp" : m->proto == IPPROTO_UDP ? "udp" : NULL;
	char ip[INET6_ADDRSTRLEN], vlan[32] = "", port[48] = "";

	if (m->vlan != 0)
		snprintf(vlan, sizeof(vlan), " / vlan vid is %u", m->vlan);
	if (l4 != NULL && m->port_mask == 0xffff)
		snprintf(port, sizeof(port), " / %s dst is %u", l4, m->port);
	else if (l4 != NULL && m->port_mask != 0)
		snprintf(port, sizeof(port), " / %s dst spec %u dst mask 0x%04x", l4,
			 m->port & m->port_mask, m->port_mask);
	else if (l4 != NULL)
		snprintf(port, sizeof(port), " / %s", l4);
	return snprintf(buf, len, "eth%s%s / %s dst is %s%s / end",
			m->vlan == 0 && untagged_only ? " has_vlan is 0" : "", vlan,
			dpsock_mc_addr_is4(m->dst) ? "ipv4" : "ipv6",
			addr_str(m->dst, ip, sizeof(ip)), port);
}

/* ---- the backend ------------------------------------------------------------- */

struct flowf_rule {
	struct dpsock_flow_match m;
	struct rte_flow *flow;    /* NULL while a change only validated it */
	unsigned int refs;        /* entries that need it; 0: stale (destroy failed) */
};

struct dpsock_flowf {
	uint16_t port_id;
	uint16_t vlan;
	bool untagged_only;
	bool quiet;               /* refusals logged at debug level (open's first try) */
	struct dpsock_flowf_ops ops;
	/* the action of the IPv4 rules and that of the IPv6 ones: the same
	 * but for the RSS hash types (dpsock_flow_rss_types6) */
	struct dpsock_flow_actions act4, act6;
	/* the served set, as told */
	struct dpsock_mc_addr *addrs;
	unsigned int n_addrs, cap_addrs;
	struct dpsock_flow_port *ports;
	unsigned int n_ports, cap_ports;
	struct dpsock_mc_addr *groups;
	unsigned int n_groups, cap_groups;
	uint16_t eph_lo, eph_hi;
	/* the rules installed, oldest first */
	struct flowf_rule *rules;
	unsigned int n_rules, cap_rules;
	struct dpsock_flowf_stats st;
	char err[1024];
};

static const struct dpsock_flowf_ops flowf_dpdk_ops = {
	.validate = rte_flow_validate,
	.create = rte_flow_create,
	.destroy = rte_flow_destroy,
	.dump = rte_flow_dev_dump,
};

/* Room for need elements in *p (cap of them now). */
static int
grow(void **p, unsigned int *cap, unsigned int need, size_t size)
{
	unsigned int c = *cap ? *cap : 8;
	void *q;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	q = realloc(*p, (size_t)c * size);
	if (q == NULL)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

static void
set_view(const struct dpsock_flowf *x, struct dpsock_flow_set *s)
{
	*s = (struct dpsock_flow_set){
		.vlan = x->vlan,
		.addrs = x->addrs, .n_addrs = x->n_addrs,
		.ports = x->ports, .n_ports = x->n_ports,
		.eph_lo = x->eph_lo, .eph_hi = x->eph_hi,
		.groups = x->groups, .n_groups = x->n_groups,
	};
}

static struct flowf_rule *
rule_find(struct dpsock_flowf *x, const struct dpsock_flow_match *m)
{
	unsigned int i;

	for (i = 0; i < x->n_rules; i++)
		if (match_eq(&x->rules[i].m, m))
			return &x->rules[i];
	return NULL;
}

static const char *
error_type_str(enum rte_flow_error_type t)
{
	static const char *const names[] = {
		[RTE_FLOW_ERROR_TYPE_NONE] = "none",
		[RTE_FLOW_ERROR_TYPE_UNSPECIFIED] = "unspecified",
		[RTE_FLOW_ERROR_TYPE_HANDLE] = "handle",
		[RTE_FLOW_ERROR_TYPE_ATTR_GROUP] = "group",
		[RTE_FLOW_ERROR_TYPE_ATTR_PRIORITY] = "priority",
		[RTE_FLOW_ERROR_TYPE_ATTR_INGRESS] = "ingress",
		[RTE_FLOW_ERROR_TYPE_ATTR_EGRESS] = "egress",
		[RTE_FLOW_ERROR_TYPE_ATTR_TRANSFER] = "transfer",
		[RTE_FLOW_ERROR_TYPE_ATTR] = "attributes",
		[RTE_FLOW_ERROR_TYPE_ITEM_NUM] = "pattern length",
		[RTE_FLOW_ERROR_TYPE_ITEM_SPEC] = "item spec",
		[RTE_FLOW_ERROR_TYPE_ITEM_LAST] = "item last",
		[RTE_FLOW_ERROR_TYPE_ITEM_MASK] = "item mask",
		[RTE_FLOW_ERROR_TYPE_ITEM] = "item",
		[RTE_FLOW_ERROR_TYPE_ACTION_NUM] = "number of actions",
		[RTE_FLOW_ERROR_TYPE_ACTION_CONF] = "action conf",
		[RTE_FLOW_ERROR_TYPE_ACTION] = "action",
		[RTE_FLOW_ERROR_TYPE_STATE] = "device state",
	};

	return (unsigned int)t < RTE_DIM(names) && names[t] != NULL ? names[t] : "?";
}

/* Which part of the rule a PMD's error points at, when it points into it
 * ("" otherwise). */
static const char *
error_cause_str(const struct rte_flow_error *e, const struct dpsock_flow_rule *r,
		const struct dpsock_flow_actions *a, char *buf, size_t len)
{
	static const struct {
		size_t off, len;
		const char *name;
	} parts[] = {
#define PART(f, name) { offsetof(struct dpsock_flow_rule, f), \
			sizeof(((struct dpsock_flow_rule *)0)->f), name }
		PART(attr, "the attributes"),
		PART(eth_spec, "the eth item"), PART(eth_mask, "the eth item"),
		PART(vlan_spec, "the vlan item"), PART(vlan_mask, "the vlan item"),
		PART(ip_spec, "the ipv4 item"), PART(ip_mask, "the ipv4 item"),
		PART(ip6_spec, "the ipv6 item"), PART(ip6_mask, "the ipv6 item"),
		PART(tcp_spec, "the tcp item"), PART(tcp_mask, "the tcp item"),
		PART(udp_spec, "the udp item"), PART(udp_mask, "the udp item"),
#undef PART
	};
	static const char *const items[] = {
		[RTE_FLOW_ITEM_TYPE_END] = "end", [RTE_FLOW_ITEM_TYPE_ETH] = "eth",
		[RTE_FLOW_ITEM_TYPE_VLAN] = "vlan", [RTE_FLOW_ITEM_TYPE_IPV4] = "ipv4",
		[RTE_FLOW_ITEM_TYPE_IPV6] = "ipv6", [RTE_FLOW_ITEM_TYPE_TCP] = "tcp",
		[RTE_FLOW_ITEM_TYPE_UDP] = "udp",
	};
	const char *c = e->cause, *base = (const char *)r, *p = (const char *)r->pattern;
	unsigned int i;

	if (c == NULL)
		return "";
	if (c >= (const char *)a && c < (const char *)(a + 1))
		return "the action";
	if (c >= p && c < p + sizeof(r->pattern)) {
		i = (unsigned int)((c - p) / sizeof(r->pattern[0]));
		snprintf(buf, len, "the %s item", (unsigned int)r->pattern[i].type < RTE_DIM(items) &&
			 items[r->pattern[i].type] != NULL ? items[r->pattern[i].type] : "?");
		return buf;
	}
	for (i = 0; i < RTE_DIM(parts); i++)
		if (c >= base + parts[i].off && c < base + parts[i].off + parts[i].len)
			return parts[i].name;
	return "";
}

/* The action of the rules of dst's family. */
static const struct dpsock_flow_actions *
rule_action(const struct dpsock_flowf *x, struct dpsock_mc_addr dst)
{
	return dpsock_mc_addr_is4(dst) ? &x->act4 : &x->act6;
}

/* An action in testpmd's syntax, and what that syntax leaves out. */
static void
action_str(const struct dpsock_flow_actions *a, char *buf, size_t len, char *note, size_t nlen)
{
	size_t off;
	unsigned int i;

	if (a->actions[0].type == RTE_FLOW_ACTION_TYPE_QUEUE) {
		snprintf(buf, len, "queue index %u", a->queue.index);
		note[0] = '\0';
		return;
	}
	off = (size_t)snprintf(buf, len, "rss queues");
	for (i = 0; i < a->rss.queue_num && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, " %u", a->rss.queue[i]);
	if (off < len)
		snprintf(buf + off, len - off, " end");
	snprintf(note, nlen, " (RSS types 0x%" PRIx64 ", key %s)", a->rss.types,
		 a->rss.key != NULL ? "the port's" : "the PMD's default");
}

/* The PMD's message, or NULL when it only repeats the errno's text. */
static const char *
pmd_message(const struct rte_flow_error *e, int ret)
{
	return e->message != NULL && strcmp(e->message, rte_strerror(-ret)) != 0 ? e->message :
	       NULL;
}

/* Validate (create false) or create one rule; on failure the message,
 * naming the change and the rule, goes to x->err and the log. */
static int
rule_call(struct dpsock_flowf *x, struct flowf_rule *r, bool create, const char *what)
{
	const struct dpsock_flow_actions *a = rule_action(x, r->m.dst);
	struct dpsock_flow_rule fr;
	struct rte_flow_error ferr;
	char pat[160], act[320], note[80], item[16];
	const char *cause, *type;
	int ret;

	ret = dpsock_flow_rule_build(&fr, &r->m, x->untagged_only);
	memset(&ferr, 0, sizeof(ferr));
	if (ret == 0 && !create) {
		ret = x->ops.validate(x->port_id, &fr.attr, fr.pattern, a->actions, &ferr);
	} else if (ret == 0) {
		rte_errno = 0;
		r->flow = x->ops.create(x->port_id, &fr.attr, fr.pattern, a->actions, &ferr);
		if (r->flow == NULL)
			ret = rte_errno > 0 ? -rte_errno : -EIO;
		else
			x->st.created++;
	}
	dpsock_flow_match_str(&r->m, x->untagged_only, pat, sizeof(pat));
	if (ret == 0) {
		if (create)
			DPSOCK_LOG(DEBUG, pmd, "port %u: %s: rule %s", x->port_id, what, pat);
		return 0;
	}
	action_str(a, act, sizeof(act), note, sizeof(note));
	cause = error_cause_str(&ferr, &fr, a, item, sizeof(item));
	/* ("item spec of the tcp item"; an item's own error names the item alone) */
	type = ferr.type == RTE_FLOW_ERROR_TYPE_NONE ||
	       ferr.type == RTE_FLOW_ERROR_TYPE_UNSPECIFIED ||
	       (ferr.type == RTE_FLOW_ERROR_TYPE_ITEM && cause[0] != '\0') ? "" :
	       error_type_str(ferr.type);
	snprintf(x->err, sizeof(x->err), "port %u: %s: rte_flow_%s refused the rule "
		 "\"ingress priority %u pattern %s actions %s / end\"%s: %s (%s%s%s%s%s)",
		 x->port_id, what, create ? "create" : "validate", DPSOCK_FLOW_PRIORITY, pat,
		 act, note, pmd_message(&ferr, ret) != NULL ? pmd_message(&ferr, ret) : "refused",
		 type,
		 type[0] != '\0' && cause[0] != '\0' ? " of " : cause[0] != '\0' ? "in " : "",
		 cause, type[0] != '\0' || cause[0] != '\0' ? ": " : "", rte_strerror(-ret));
	x->st.failed++;
	if (x->quiet)
		DPSOCK_LOG(DEBUG, pmd, "%s", x->err);
	else
		DPSOCK_LOG(ERR, pmd, "%s", x->err);
	return ret;
}

static int
rule_destroy(struct dpsock_flowf *x, struct flowf_rule *r, const char *what)
{
	struct rte_flow_error ferr;
	char pat[160];
	int ret;

	if (r->flow == NULL)
		return 0;
	memset(&ferr, 0, sizeof(ferr));
	ret = x->ops.destroy(x->port_id, r->flow, &ferr);
	dpsock_flow_match_str(&r->m, x->untagged_only, pat, sizeof(pat));
	if (ret == 0) {
		r->flow = NULL;
		x->st.destroyed++;
		DPSOCK_LOG(DEBUG, pmd, "port %u: %s: rule %s removed", x->port_id, what, pat);
		return 0;
	}
	snprintf(x->err, sizeof(x->err), "port %u: %s: rte_flow_destroy of the rule \"%s\": "
		 "%s (%s); kept, tried again at the next change", x->port_id, what, pat,
		 pmd_message(&ferr, ret) != NULL ? pmd_message(&ferr, ret) : "refused",
		 rte_strerror(-ret));
	x->st.failed++;
	DPSOCK_LOG(ERR, pmd, "%s", x->err);
	return ret;
}

/* Destroy the rules no entry needs (those of the last change, and any an
 * earlier destroy failed on). Returns 0 or the first failure's -errno. */
static int
sweep(struct dpsock_flowf *x, const char *what)
{
	unsigned int i, k = 0;
	int ret = 0, r;

	for (i = 0; i < x->n_rules; i++) {
		if (x->rules[i].refs == 0) {
			r = rule_destroy(x, &x->rules[i], what);
			if (r == 0)
				continue;
			if (ret == 0)
				ret = r;
		}
		x->rules[k++] = x->rules[i];
	}
	x->n_rules = k;
	return ret;
}

/*
 * One change: a reference on each of add[0..n_add), then one less on each
 * of del[0..n_del). The rules add needs that are not installed are
 * validated, all of them, then created; any failure destroys what this
 * call created and leaves everything as it was. Rules whose count drops
 * to zero are left for sweep(), which the caller runs once its copy of the
 * set reflects the change. Returns 0 or -errno (the change is refused).
 */
static int
apply(struct dpsock_flowf *x, const struct dpsock_flow_match *add, unsigned int n_add,
      const struct dpsock_flow_match *del, unsigned int n_del, const char *what)
{
	unsigned int base = x->n_rules, i, k;
	char refusal[sizeof(x->err)];
	struct flowf_rule *r;
	int ret;

	ret = grow((void **)&x->rules, &x->cap_rules, x->n_rules + n_add, sizeof(*x->rules));
	if (ret != 0)
		return ret;
	for (i = 0; i < n_add; i++)
		if (rule_find(x, &add[i]) == NULL)
			x->rules[x->n_rules++] = (struct flowf_rule){ .m = add[i] };
	for (i = base; i < x->n_rules; i++) {
		ret = rule_call(x, &x->rules[i], false, what);
		if (ret != 0)
			goto undo;
	}
	for (i = base; i < x->n_rules; i++) {
		ret = rule_call(x, &x->rules[i], true, what);
		if (ret != 0)
			goto undo;
	}
	/* (a stale rule the change needs again is simply counted again) */
	for (i = 0; i < n_add; i++)
		rule_find(x, &add[i])->refs++;
	for (i = 0; i < n_del; i++) {
		r = rule_find(x, &del[i]);
		if (r != NULL && r->refs > 0)
			r->refs--;
	}
	return 0;
undo:
	/* A rule whose destroy fails here stays, stale, for the next sweep;
	 * the message that stays is the refusal's. */
	memcpy(refusal, x->err, sizeof(refusal));
	for (i = base, k = base; i < x->n_rules; i++)
		if (x->rules[i].flow != NULL && rule_destroy(x, &x->rules[i], what) != 0)
			x->rules[k++] = x->rules[i];
	x->n_rules = k;
	memcpy(x->err, refusal, sizeof(x->err));
	return ret;
}

/* An address of either family as text, for messages. */
#define ADDR_STR(a) addr_str((a), (char[INET6_ADDRSTRLEN]){ 0 }, INET6_ADDRSTRLEN)

int
dpsock_flowf_isolate(uint16_t port_id, char *err, size_t errlen)
{
	struct rte_flow_error ferr;
	int ret;

	if (!rte_eth_dev_is_valid_port(port_id)) {
		snprintf(err, errlen, "port %u: no such DPDK port", port_id);
		return -ENODEV;
	}
	memset(&ferr, 0, sizeof(ferr));
	ret = rte_flow_isolate(port_id, 1, &ferr);
	if (ret == 0)
		return 0;
	snprintf(err, errlen, "port %u: rte_flow_isolate: %s%s%s%s", port_id,
		 pmd_message(&ferr, ret) != NULL ? pmd_message(&ferr, ret) : "",
		 pmd_message(&ferr, ret) != NULL ? " (" : "", rte_strerror(-ret),
		 pmd_message(&ferr, ret) != NULL ? ")" : "");
	snprintf(err + strlen(err), errlen - strlen(err), "%s",
		 ret == -ENOSYS || ret == -ENOTSUP ?
		 ": the PMD has no isolated mode, so it cannot share the NIC with the kernel "
		 "through rte_flow (any NIC the kernel drives: net_af_xdp and dpsock's XDP "
		 "program)" :
		 ret == -EBUSY ? ": enter it before the port is configured and started "
		 "(mlx5 refuses a started port)" : "");
	return ret;
}

struct dpsock_flowf *
dpsock_flowf_open_conf(const struct dpsock_flowf_conf *c, int *ret, char *err, size_t errlen)
{
	/* a rule of the shape every port entry takes, on TEST-NET-1 */
	struct dpsock_flow_match probe = {
		.vlan = c->vlan, .dst = dpsock_mc_addr4(RTE_BE32(0xc0000201)),
		.proto = IPPROTO_TCP, .port = 9, .port_mask = 0xffff,
	};
	struct flowf_rule pr = { .m = probe };
	struct dpsock_flowf *x;
	int r;

	if (c->n_queues == 0 || c->n_queues > DPSOCK_FLOW_QUEUES_MAX ||
	    c->vlan > VLAN_ID_MAX || c->rss_key_len > DPSOCK_FLOW_KEY_MAX) {
		snprintf(err, errlen, "port %u: %u queue(s), VLAN %u, RSS key of %u bytes: "
			 "1..%u queues, VLAN 0..%u, at most %u bytes", c->port_id, c->n_queues,
			 c->vlan, c->rss_key_len, DPSOCK_FLOW_QUEUES_MAX, VLAN_ID_MAX,
			 DPSOCK_FLOW_KEY_MAX);
		*ret = -EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		snprintf(err, errlen, "port %u: out of memory", c->port_id);
		*ret = -ENOMEM;
		return NULL;
	}
	x->port_id = c->port_id;
	x->vlan = c->vlan;
	x->ops = c->ops != NULL ? *c->ops : flowf_dpdk_ops;
	dpsock_flow_actions_build(&x->act4, c->queues, c->n_queues, c->rss_key, c->rss_key_len,
				  c->rss_types);
	dpsock_flow_actions_build(&x->act6, c->queues, c->n_queues, c->rss_key, c->rss_key_len,
				  dpsock_flow_rss_types6(c->rss_types));
	/*
	 * Untagged frames only, when the PMD can say so (mlx5 with DV flows,
	 * its default; not with verbs flows, dv_flow_en=0): otherwise a frame
	 * of a kernel VLAN device to one of dpsock's addresses and ports
	 * would be dpsock's too, and its worker drops other VLANs' frames.
	 */
	x->untagged_only = c->vlan == 0;
	x->quiet = x->untagged_only; /* (a refusal there may be has_vlan's alone) */
	r = rule_call(x, &pr, false, "open");
	x->quiet = false;
	if (r != 0 && r != -ENOSYS && x->untagged_only) {
		x->untagged_only = false;
		if (rule_call(x, &pr, false, "open (without has_vlan)") == 0) {
			DPSOCK_LOG(WARNING, pmd, "port %u: the PMD does not match on has_vlan: "
				   "tagged frames to dpsock's addresses and ports will come to "
				   "dpsock too (and be dropped there), not to the kernel's VLAN "
				   "devices", c->port_id);
			r = 0;
		}
	}
	if (r != 0) {
		snprintf(err, errlen, "%s%s", x->err, r == -ENOSYS ?
			 ": the PMD has no rte_flow, so it cannot share the NIC with the kernel "
			 "through rules" : "; is the port in isolated mode (dpsock_flowf_isolate, "
			 "before configure), configured with its queues and started?");
		*ret = r;
		free(x);
		return NULL;
	}
	x->st.failed = 0;
	x->err[0] = '\0';
	x->st.untagged_only = x->untagged_only;
	if (x->act6.rss.types != x->act4.rss.types)
		DPSOCK_LOG(INFO, pmd, "port %u: its RSS hash types (0x%" PRIx64 ") name IPv4 "
			   "alone: IPv6 rules hash with their IPv6 counterparts too (0x%" PRIx64
			   ")", c->port_id, x->act4.rss.types, x->act6.rss.types);
	*ret = 0;
	return x;
}

struct dpsock_flowf *
dpsock_flowf_open(uint16_t port_id, const uint16_t *queues, unsigned int n, uint16_t vlan,
		  int *ret, char *err, size_t errlen)
{
	struct dpsock_flowf_conf c = {
		.port_id = port_id, .queues = queues, .n_queues = n, .vlan = vlan,
	};
	uint8_t key[DPSOCK_FLOW_KEY_MAX];
	struct rte_eth_rss_conf rss = { .rss_key = key };
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	unsigned int i;

	if (!rte_eth_dev_is_valid_port(port_id)) {
		snprintf(err, errlen, "port %u: no such DPDK port", port_id);
		*ret = -ENODEV;
		return NULL;
	}
	*ret = rte_eth_dev_info_get(port_id, &info);
	if (*ret == 0)
		*ret = rte_eth_dev_conf_get(port_id, &conf);
	if (*ret != 0) {
		snprintf(err, errlen, "port %u: device information: %s", port_id,
			 rte_strerror(-*ret));
		return NULL;
	}
	/* the hash types the port was configured with, else those it offers
	 * of dpsock's (port.c's choice) */
	if (conf.rxmode.mq_mode & RTE_ETH_MQ_RX_RSS_FLAG)
		c.rss_types = conf.rx_adv_conf.rss_conf.rss_hf;
	if (c.rss_types == 0)
		c.rss_types = info.flow_type_rss_offloads &
			      (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
	/* The key in use when the port tells it (mlx5 in isolated mode does
	 * not: its ops lack the RSS queries); else the PMD's default key,
	 * which is also the port's own (port.c configures none). An all-zero
	 * key would hash every flow to one queue: never passed. */
	if (info.hash_key_size > 0 && info.hash_key_size <= sizeof(key)) {
		rss.rss_key_len = info.hash_key_size;
		if (rte_eth_dev_rss_hash_conf_get(port_id, &rss) == 0)
			for (i = 0; i < info.hash_key_size && c.rss_key == NULL; i++)
				if (key[i] != 0) {
					c.rss_key = key;
					c.rss_key_len = info.hash_key_size;
				}
	}
	DPSOCK_LOG(INFO, pmd, "port %u: sharing rules steer to %u queue(s)%s%s", port_id, n,
		   n > 1 ? ", RSS key: " : "",
		   n == 1 ? "" : c.rss_key != NULL ? "the port's" : "the PMD's default");
	return dpsock_flowf_open_conf(&c, ret, err, errlen);
}

void
dpsock_flowf_close(struct dpsock_flowf *x)
{
	unsigned int i;

	if (x == NULL)
		return;
	/* newest first: the reverse of their creation */
	for (i = x->n_rules; i > 0; i--)
		rule_destroy(x, &x->rules[i - 1], "close");
	free(x->rules);
	free(x->addrs);
	free(x->ports);
	free(x->groups);
	free(x);
}

/* Apply adds, or dels, computed into a buffer of cap matches by fn. */
static int
change(struct dpsock_flowf *x, bool add, unsigned int cap, const char *what,
       int (*fn)(const struct dpsock_flow_set *, const void *, struct dpsock_flow_match *,
		 unsigned int),
       const void *arg)
{
	struct dpsock_flow_set s;
	struct dpsock_flow_match *m;
	int n, ret;

	m = malloc((size_t)(cap ? cap : 1) * sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	set_view(x, &s);
	n = fn(&s, arg, m, cap);
	if (n < 0)
		ret = n;
	else if (add)
		ret = apply(x, m, (unsigned int)n, NULL, 0, what);
	else
		ret = apply(x, NULL, 0, m, (unsigned int)n, what);
	free(m);
	return ret;
}

static int
addr_fn(const struct dpsock_flow_set *s, const void *arg, struct dpsock_flow_match *out,
	unsigned int max)
{
	return dpsock_flow_addr_matches(s, *(const struct dpsock_mc_addr *)arg, out, max);
}

static int
port_fn(const struct dpsock_flow_set *s, const void *arg, struct dpsock_flow_match *out,
	unsigned int max)
{
	return dpsock_flow_port_matches(s, arg, out, max);
}

static int
group_fn(const struct dpsock_flow_set *s, const void *arg, struct dpsock_flow_match *out,
	 unsigned int max)
{
	if (max == 0)
		return -ENOSPC;
	dpsock_flow_group_match(s, *(const struct dpsock_mc_addr *)arg, out);
	return 1;
}

/* Index of v in a[0..n), or -1. */
static int
find_addr(const struct dpsock_mc_addr *a, unsigned int n, struct dpsock_mc_addr v)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (dpsock_mc_addr_eq(a[i], v))
			return (int)i;
	return -1;
}

int
dpsock_flowf_addr(struct dpsock_flowf *x, struct dpsock_mc_addr addr, bool add)
{
	char what[96];
	int i = find_addr(x->addrs, x->n_addrs, addr), ret;

	/* (an any would read as a port entry's "every address"; a group is
	 * dpsock_flowf_group's) */
	if (is_any(addr) || dpsock_mc_is_group(addr))
		return -EINVAL;
	if (add && i >= 0)
		return -EEXIST;
	if (!add && i < 0)
		return -ENOENT;
	snprintf(what, sizeof(what), "%s address %s", add ? "add" : "remove", ADDR_STR(addr));
	/* (room first: nothing may fail once the rules exist) */
	if (add && grow((void **)&x->addrs, &x->cap_addrs, x->n_addrs + 1, sizeof(*x->addrs)))
		return -ENOMEM;
	ret = change(x, add, x->n_ports + 2 * DPSOCK_FLOW_RANGE_MAX, what, addr_fn, &addr);
	if (ret != 0)
		return ret;
	if (add) {
		x->addrs[x->n_addrs++] = addr;
		sweep(x, what); /* (stale rules only: the change stands) */
		return 0;
	}
	memmove(&x->addrs[i], &x->addrs[i + 1], (x->n_addrs - i - 1) * sizeof(*x->addrs));
	x->n_addrs--;
	return sweep(x, what);
}

int
dpsock_flowf_port(struct dpsock_flowf *x, uint8_t proto, struct dpsock_mc_addr addr,
		  uint16_t port, bool add)
{
	const struct dpsock_flow_port e = { .proto = proto, .addr = addr, .port = port };
	char what[128];
	unsigned int i;
	int ret;

	if ((proto != IPPROTO_TCP && proto != IPPROTO_UDP) || port == 0)
		return -EINVAL;
	for (i = 0; i < x->n_ports; i++)
		if (x->ports[i].proto == proto && dpsock_mc_addr_eq(x->ports[i].addr, addr) &&
		    x->ports[i].port == port)
			break;
	if (add && i < x->n_ports)
		return -EEXIST;
	if (!add && i == x->n_ports)
		return -ENOENT;
	snprintf(what, sizeof(what), "%s %s port %u on %s", add ? "add" : "remove",
		 proto == IPPROTO_TCP ? "TCP" : "UDP", port,
		 dpsock_mc_addr_eq(addr, dpsock_filter_any4()) ? "every address (IPv4)" :
		 dpsock_mc_addr_eq(addr, dpsock_filter_any6()) ? "every address (IPv6)" :
		 ADDR_STR(addr));
	if (add && grow((void **)&x->ports, &x->cap_ports, x->n_ports + 1, sizeof(*x->ports)))
		return -ENOMEM;
	ret = change(x, add, x->n_addrs, what, port_fn, &e);
	if (ret != 0)
		return ret;
	if (add) {
		x->ports[x->n_ports++] = e;
		sweep(x, what); /* (stale rules only: the change stands) */
		return 0;
	}
	memmove(&x->ports[i], &x->ports[i + 1], (x->n_ports - i - 1) * sizeof(*x->ports));
	x->n_ports--;
	return sweep(x, what);
}

int
dpsock_flowf_ephemeral(struct dpsock_flowf *x, uint16_t lo, uint16_t hi)
{
	unsigned int cap = x->n_addrs * 2 * DPSOCK_FLOW_RANGE_MAX;
	struct dpsock_flow_match *nw, *old;
	struct dpsock_flow_set s;
	char what[64];
	int n_new, n_old, ret;

	if (lo > hi)
		return -EINVAL;
	if (lo == x->eph_lo && hi == x->eph_hi)
		return 0;
	snprintf(what, sizeof(what), "ephemeral ports %u-%u (were %u-%u)", lo, hi, x->eph_lo,
		 x->eph_hi);
	nw = malloc((size_t)(cap ? cap : 1) * 2 * sizeof(*nw));
	if (nw == NULL)
		return -ENOMEM;
	old = nw + (cap ? cap : 1);
	set_view(x, &s);
	n_new = dpsock_flow_ephemeral_matches(&s, lo, hi, nw, cap);
	n_old = dpsock_flow_ephemeral_matches(&s, x->eph_lo, x->eph_hi, old, cap);
	/* the new blocks first: those the two ranges share are counted twice
	 * for a moment, never zero, so they are never destroyed */
	ret = n_new < 0 ? n_new : n_old < 0 ? n_old :
	      apply(x, nw, (unsigned int)n_new, old, (unsigned int)n_old, what);
	free(nw);
	if (ret != 0)
		return ret;
	x->eph_lo = lo;
	x->eph_hi = hi;
	return sweep(x, what);
}

int
dpsock_flowf_group(struct dpsock_flowf *x, struct dpsock_mc_addr group, bool add)
{
	char what[96];
	int i = find_addr(x->groups, x->n_groups, group), ret;

	/* 224.0.0.0/4 mapped, ff00::/8 (a mapped address is never ff..) */
	if (!dpsock_mc_is_group(group))
		return -EINVAL;
	if (add && i >= 0)
		return -EEXIST;
	if (!add && i < 0)
		return -ENOENT;
	snprintf(what, sizeof(what), "%s group %s", add ? "join" : "leave", ADDR_STR(group));
	if (add && grow((void **)&x->groups, &x->cap_groups, x->n_groups + 1,
			sizeof(*x->groups)))
		return -ENOMEM;
	ret = change(x, add, 1, what, group_fn, &group);
	if (ret != 0)
		return ret;
	if (add) {
		x->groups[x->n_groups++] = group;
		sweep(x, what); /* (stale rules only: the change stands) */
		return 0;
	}
	memmove(&x->groups[i], &x->groups[i + 1], (x->n_groups - i - 1) * sizeof(*x->groups));
	x->n_groups--;
	return sweep(x, what);
}

void
dpsock_flowf_stats(const struct dpsock_flowf *x, struct dpsock_flowf_stats *out)
{
	unsigned int i;

	*out = x->st;
	out->rules = x->n_rules;
	out->stale = 0;
	for (i = 0; i < x->n_rules; i++)
		out->stale += x->rules[i].refs == 0;
	out->untagged_only = x->untagged_only;
}

const char *
dpsock_flowf_error(const struct dpsock_flowf *x)
{
	return x->err;
}

int
dpsock_flowf_dump(const struct dpsock_flowf *x, FILE *f)
{
	struct rte_flow_error ferr;
	char pat[160], act[320], note[80], act6[320], note6[80];
	unsigned int i;
	int ret;

	action_str(&x->act4, act, sizeof(act), note, sizeof(note));
	action_str(&x->act6, act6, sizeof(act6), note6, sizeof(note6));
	fprintf(f, "port %u: %u rule(s), ingress priority %u, actions %s / end%s\n", x->port_id,
		x->n_rules, DPSOCK_FLOW_PRIORITY, act, note);
	/* (the same action but for the hash types, when they differ) */
	if (strcmp(act, act6) != 0 || strcmp(note, note6) != 0)
		fprintf(f, "port %u: IPv6 rules: actions %s / end%s\n", x->port_id, act6, note6);
	for (i = 0; i < x->n_rules; i++) {
		dpsock_flow_match_str(&x->rules[i].m, x->untagged_only, pat, sizeof(pat));
		fprintf(f, "  refs %u%s  %s\n", x->rules[i].refs,
			x->rules[i].refs == 0 ? " (stale)" : "", pat);
	}
	if (x->ops.dump == NULL)
		return 0;
	fprintf(f, "port %u: the PMD's dump of its rules:\n", x->port_id);
	fflush(f);
	memset(&ferr, 0, sizeof(ferr));
	ret = x->ops.dump(x->port_id, NULL, f, &ferr);
	if (ret != 0)
		fprintf(f, "  (none: %s)\n", ferr.message != NULL ? ferr.message :
			rte_strerror(-ret));
	return ret;
}
