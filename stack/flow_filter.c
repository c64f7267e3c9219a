/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flow_filter.c — the rte_flow backend of a port dpsock shares with the
 * kernel (filter_priv.h): the NIC, in isolated mode, sends the flows dpsock
 * serves to the workers' queues, one rule per entry of the served set, and
 * every other frame to the kernel netdev (mlx5's bifurcated driver).
 *
 * This half is the rule construction, pure (no port, no EAL:
 * test/unit/flow_filter_test.c checks it): the served set becomes a list
 * of struct dpsock_flow_match, the ephemeral range its fewest (port, mask)
 * blocks, and a match becomes rte_flow items in the caller's storage.
 *
 * What a NIC rule cannot express, and so stays the kernel's, unlike the XDP
 * backend which remembers a datagram's first fragment: IP fragments other
 * than the first carry no ports, and no rule can tell dpsock's from the
 * kernel's. A datagram dpsock serves that arrives fragmented is therefore
 * not dpsock's here (whether a NIC parses a first fragment's ports is the
 * NIC's; the test plan checks it).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_flow.h>

#include "filter_priv.h"
#include "log_priv.h"
#include "port_priv.h"

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
	return a->vlan == b->vlan && a->dst == b->dst && a->proto == b->proto &&
	       a->port == b->port && a->port_mask == b->port_mask;
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
sink_put(struct sink *k, uint16_t vlan, uint32_t dst, uint8_t proto, uint16_t port,
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
sink_range(struct sink *k, uint16_t vlan, uint32_t dst, uint8_t proto, uint16_t lo,
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
set_has_addr(const struct dpsock_flow_set *s, uint32_t addr)
{
	unsigned int i;

	for (i = 0; i < s->n_addrs; i++)
		if (s->addrs[i] == addr)
			return true;
	return false;
}

static void
put_addr(struct sink *k, const struct dpsock_flow_set *s, uint32_t addr)
{
	unsigned int i;

	for (i = 0; i < s->n_ports; i++)
		if (s->ports[i].addr == 0 || s->ports[i].addr == addr)
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
dpsock_flow_addr_matches(const struct dpsock_flow_set *s, uint32_t addr,
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

	if (e->addr != 0) {
		if (set_has_addr(s, e->addr))
			sink_put(&k, s->vlan, e->addr, e->proto, e->port, 0xffff);
		return sink_end(&k);
	}
	for (i = 0; i < s->n_addrs; i++)
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
dpsock_flow_group_match(const struct dpsock_flow_set *s, uint32_t group,
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
	r->ip_spec.hdr.dst_addr = m->dst;
	r->ip_mask.hdr.dst_addr = RTE_BE32(UINT32_MAX);
	r->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_IPV4,
						  .spec = &r->ip_spec, .mask = &r->ip_mask };
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

static const char *
ip_str(uint32_t a, char *buf, size_t len)
{
	const uint8_t *b = (const uint8_t *)&a;

	snprintf(buf, len, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	return buf;
}

int
dpsock_flow_match_str(const struct dpsock_flow_match *m, bool untagged_only, char *buf,
		      size_t len)
{
	const char *l4 = m->proto == IPPROTO_TCP ? "tcp" : m->proto == IPPROTO_UDP ? "udp" : NULL;
	char ip[16], vlan[32] = "", port[48] = "";

	if (m->vlan != 0)
		snprintf(vlan, sizeof(vlan), " / vlan vid is %u", m->vlan);
	if (l4 != NULL && m->port_mask == 0xffff)
		snprintf(port, sizeof(port), " / %s dst is %u", l4, m->port);
	else if (l4 != NULL && m->port_mask != 0)
		snprintf(port, sizeof(port), " / %s dst spec %u dst mask 0x%04x", l4,
			 m->port & m->port_mask, m->port_mask);
	else if (l4 != NULL)
		snprintf(port, sizeof(port), " / %s", l4);
	return snprintf(buf, len, "eth%s%s / ipv4 dst is %s%s / end",
			m->vlan == 0 && untagged_only ? " has_vlan is 0" : "", vlan,
			ip_str(m->dst, ip, sizeof(ip)), port);
}
