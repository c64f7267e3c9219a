/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rte_flow backend of sharing mode (stack/flow_filter.c) without a NIC:
 * no EAL, no root, no port.
 *
 * 1. Port ranges as (port, mask) blocks: fixed cases with their block
 *    counts (tcp.ephemeral's default, Linux's and IANA's ranges, a single
 *    port, everything, lo == hi, lo > hi refused, too little room), and for
 *    those and 400 random ranges: every block aligned and inside the range,
 *    every port of 0..65535 covered once when inside and never when
 *    outside, and as few blocks as the binary trie of the ports allows
 *    (counted by a recursion independent of the implementation).
 * 2. The rule list of a served set: two addresses, a TCP listener on every
 *    address, a UDP port on one, one on an address that is not local, a
 *    group, VLAN 100, written out by hand; the per-change lists.
 * 3. The rte_flow items and action built from a match: item types in
 *    order, spec and mask values, network byte order, attributes; QUEUE
 *    and RSS actions; the testpmd text.
 *
 * No PMD here takes these rules for real: af_packet, memif and the null
 * PMD have no rte_flow; net_tap validates in software (tried by hand: it
 * accepts the port, group and VLAN patterns with a QUEUE action, refuses
 * has_vlan and RSS) but cannot create
 * rules without the kernel's flower classifier, and needs root and a
 * network namespace. So the patterns are checked against rte_flow's
 * definitions, not a PMD: mlx5 is docs/mlx5-sharing-test-plan.md's work.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

#include "filter_priv.h"

static int failures;
static unsigned int checks;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		checks++;                                                       \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__,   \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			failures++;                                             \
		}                                                               \
	} while (0)

static uint32_t
ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	return rte_cpu_to_be_32((uint32_t)a << 24 | b << 16 | c << 8 | d);
}

static bool
match_eq(const struct dpsock_flow_match *a, const struct dpsock_flow_match *b)
{
	return a->vlan == b->vlan && a->dst == b->dst && a->proto == b->proto &&
	       a->port == b->port && a->port_mask == b->port_mask;
}

static const char *
mstr(const struct dpsock_flow_match *m)
{
	static char buf[4][160];
	static unsigned int k;

	k = (k + 1) % 4;
	dpsock_flow_match_str(m, true, buf[k], sizeof(buf[k]));
	return buf[k];
}

/* ---- 1. ranges ------------------------------------------------------------ */

/* The fewest prefix blocks of [lo, hi]: the maximal nodes of the 16-level
 * binary trie inside the range (a node partly inside splits in two). */
static unsigned int
trie_count(uint32_t a, uint32_t b, uint32_t lo, uint32_t hi)
{
	uint32_t mid = a + (b - a) / 2;

	if (b < lo || a > hi)
		return 0;
	if (a >= lo && b <= hi)
		return 1;
	return trie_count(a, mid, lo, hi) + trie_count(mid + 1, b, lo, hi);
}

static void
check_cover(uint16_t lo, uint16_t hi, int want)
{
	static uint8_t hit[65536];
	struct dpsock_flow_match out[DPSOCK_FLOW_RANGE_MAX];
	const struct dpsock_flow_match tmpl = {
		.vlan = 7, .dst = ip(10, 0, 0, 1), .proto = IPPROTO_UDP, .port = 1234,
		.port_mask = 0x1234,
	};
	unsigned int p, i, trie = trie_count(0, 65535, lo, hi), bad = 0;
	int n = dpsock_flow_port_range(lo, hi, out, RTE_DIM(out), &tmpl);

	CHECK(n > 0, "%u-%u: %d", lo, hi, n);
	if (n <= 0)
		return;
	if (want > 0)
		CHECK(n == want, "%u-%u: %d blocks, want %d", lo, hi, n, want);
	CHECK((unsigned int)n == trie, "%u-%u: %d blocks, the trie has %u", lo, hi, n, trie);
	memset(hit, 0, sizeof(hit));
	for (i = 0; i < (unsigned int)n; i++) {
		uint16_t m = out[i].port_mask, first = out[i].port, last = first | (uint16_t)~m;

		CHECK((first & ~m & 0xffff) == 0, "%u-%u: block %u/0x%04x not aligned", lo, hi,
		      first, m);
		/* a prefix mask: ones then zeros */
		CHECK((uint16_t)(~m + 1) == 0 || (((uint16_t)~m + 1) & (uint16_t)~m) == 0,
		      "%u-%u: mask 0x%04x is no prefix", lo, hi, m);
		CHECK(first >= lo && last <= hi, "%u-%u: block %u-%u outside", lo, hi, first, last);
		CHECK(out[i].vlan == 7 && out[i].dst == tmpl.dst && out[i].proto == IPPROTO_UDP,
		      "%u-%u: block %u lost the template", lo, hi, i);
		for (p = 0; p < 65536; p++)
			if ((p & m) == first)
				hit[p]++;
	}
	for (p = 0; p < 65536; p++)
		if (hit[p] != (p >= lo && p <= hi))
			bad++;
	CHECK(bad == 0, "%u-%u: %u ports covered wrongly (outside, missed or twice)", lo, hi,
	      bad);
}

static void
test_ranges(void)
{
	static const struct {
		uint16_t lo, hi;
		int blocks;
	} c[] = {
		{ 32768, 60999, 7 },  /* dpsock's (and Linux's) default */
		{ 49152, 65535, 1 },  /* IANA's dynamic ports */
		{ 1024, 65535, 6 },
		{ 80, 80, 1 },
		{ 0, 65535, 1 },
		{ 65535, 65535, 1 },
		{ 0, 0, 1 },
		{ 1, 65534, 30 },     /* the worst case */
		{ 32768, 32769, 1 },
		{ 32767, 32768, 2 },
	};
	struct dpsock_flow_match out[DPSOCK_FLOW_RANGE_MAX];
	unsigned int i;
	int n;

	for (i = 0; i < RTE_DIM(c); i++)
		check_cover(c[i].lo, c[i].hi, c[i].blocks);
	for (i = 0; i < 400; i++) {
		uint16_t a = (uint16_t)rand(), b = (uint16_t)rand();

		check_cover(RTE_MIN(a, b), RTE_MAX(a, b), 0);
	}

	/* the default range, block by block */
	n = dpsock_flow_port_range(32768, 60999, out, RTE_DIM(out), NULL);
	CHECK(n == 7, "%d", n);
	if (n == 7) {
		static const uint16_t port[] = { 32768, 49152, 57344, 59392, 60416, 60928, 60992 };
		static const uint16_t mask[] = { 0xc000, 0xe000, 0xf800, 0xfc00, 0xfe00, 0xffc0,
						 0xfff8 };

		for (i = 0; i < 7; i++)
			CHECK(out[i].port == port[i] && out[i].port_mask == mask[i] &&
			      out[i].proto == 0 && out[i].dst == 0 && out[i].vlan == 0,
			      "block %u: %u/0x%04x", i, out[i].port, out[i].port_mask);
	}
	n = dpsock_flow_port_range(0, 65535, out, 1, NULL);
	CHECK(n == 1 && out[0].port == 0 && out[0].port_mask == 0, "everything: %d %u/0x%x", n,
	      out[0].port, out[0].port_mask);
	n = dpsock_flow_port_range(80, 80, out, 1, NULL);
	CHECK(n == 1 && out[0].port == 80 && out[0].port_mask == 0xffff, "one port");
	CHECK(dpsock_flow_port_range(100, 99, out, RTE_DIM(out), NULL) == -EINVAL, "lo > hi");
	CHECK(dpsock_flow_port_range(65535, 0, out, RTE_DIM(out), NULL) == -EINVAL, "lo > hi");
	CHECK(dpsock_flow_port_range(32768, 60999, out, 6, NULL) == -ENOSPC, "6 < 7 blocks");
	CHECK(dpsock_flow_port_range(32768, 60999, out, 7, NULL) == 7, "exactly 7");
	CHECK(dpsock_flow_port_range(80, 80, NULL, 0, NULL) == -ENOSPC, "no room");
}

/* ---- 2. the rule list -------------------------------------------------------- */

#define M(v, d, p, pt, mask) \
	{ .vlan = (v), .dst = (d), .proto = (p), .port = (pt), .port_mask = (mask) }

static void
check_list(const char *what, const struct dpsock_flow_match *got, int n,
	   const struct dpsock_flow_match *want, unsigned int n_want)
{
	unsigned int i;

	CHECK(n == (int)n_want, "%s: %d matches, want %u", what, n, n_want);
	for (i = 0; n > 0 && i < (unsigned int)n && i < n_want; i++)
		CHECK(match_eq(&got[i], &want[i]), "%s: [%u] is %s, want %s", what, i,
		      mstr(&got[i]), mstr(&want[i]));
}

static void
test_rule_list(void)
{
	const uint32_t a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2), g = ip(239, 1, 2, 3);
	const uint32_t addrs[] = { a, b }, groups[] = { g };
	const struct dpsock_flow_port ports[] = {
		{ IPPROTO_TCP, 0, 80 },               /* a listener on every address */
		{ IPPROTO_UDP, a, 5000 },             /* a UDP socket bound to a */
		{ IPPROTO_TCP, ip(10, 0, 0, 9), 22 }, /* an address that is not local */
		{ IPPROTO_TCP, a, 80 },               /* a's own listener on 80 too */
	};
	struct dpsock_flow_set s = {
		.vlan = 100, .addrs = addrs, .n_addrs = 2, .ports = ports, .n_ports = 4,
		.eph_lo = 49152, .eph_hi = 65535, .groups = groups, .n_groups = 1,
	};
	const struct dpsock_flow_match want[] = {
		M(100, a, IPPROTO_TCP, 80, 0xffff),
		M(100, a, IPPROTO_UDP, 5000, 0xffff),
		M(100, a, IPPROTO_TCP, 49152, 0xc000),
		M(100, a, IPPROTO_UDP, 49152, 0xc000),
		M(100, b, IPPROTO_TCP, 80, 0xffff),
		M(100, b, IPPROTO_TCP, 49152, 0xc000),
		M(100, b, IPPROTO_UDP, 49152, 0xc000),
		M(100, g, IPPROTO_UDP, 0, 0),
	};
	/* what address a brings: its entries, not deduplicated (80 twice) */
	const struct dpsock_flow_match want_a[] = {
		M(100, a, IPPROTO_TCP, 80, 0xffff),
		M(100, a, IPPROTO_UDP, 5000, 0xffff),
		M(100, a, IPPROTO_TCP, 80, 0xffff),
		M(100, a, IPPROTO_TCP, 49152, 0xc000),
		M(100, a, IPPROTO_UDP, 49152, 0xc000),
	};
	const struct dpsock_flow_match want_any80[] = {
		M(100, a, IPPROTO_TCP, 80, 0xffff),
		M(100, b, IPPROTO_TCP, 80, 0xffff),
	};
	const struct dpsock_flow_match want_eph[] = {
		M(100, a, IPPROTO_TCP, 1024, 0xfc00), M(100, a, IPPROTO_TCP, 2048, 0xf800),
		M(100, a, IPPROTO_UDP, 1024, 0xfc00), M(100, a, IPPROTO_UDP, 2048, 0xf800),
		M(100, b, IPPROTO_TCP, 1024, 0xfc00), M(100, b, IPPROTO_TCP, 2048, 0xf800),
		M(100, b, IPPROTO_UDP, 1024, 0xfc00), M(100, b, IPPROTO_UDP, 2048, 0xf800),
	};
	struct dpsock_flow_match out[256], gm;
	int n;

	n = dpsock_flow_set_matches(&s, out, RTE_DIM(out));
	check_list("set", out, n, want, RTE_DIM(want));
	CHECK(dpsock_flow_set_matches(&s, out, RTE_DIM(want) - 1) == -ENOSPC, "set, no room");
	CHECK(dpsock_flow_set_matches(&s, out, RTE_DIM(want)) == (int)RTE_DIM(want),
	      "set, exact room (duplicates take none)");

	n = dpsock_flow_addr_matches(&s, a, out, RTE_DIM(out));
	check_list("address a", out, n, want_a, RTE_DIM(want_a));
	n = dpsock_flow_port_matches(&s, &ports[0], out, RTE_DIM(out));
	check_list("TCP 80 on every address", out, n, want_any80, RTE_DIM(want_any80));
	n = dpsock_flow_port_matches(&s, &ports[1], out, RTE_DIM(out));
	check_list("UDP 5000 on a", out, n, &want[1], 1);
	n = dpsock_flow_port_matches(&s, &ports[2], out, RTE_DIM(out));
	check_list("TCP 22 on a foreign address", out, n, NULL, 0);
	n = dpsock_flow_ephemeral_matches(&s, 1024, 4095, out, RTE_DIM(out));
	check_list("ephemeral 1024-4095", out, n, want_eph, RTE_DIM(want_eph));
	CHECK(dpsock_flow_ephemeral_matches(&s, 0, 0, out, RTE_DIM(out)) == 0, "no range");
	CHECK(dpsock_flow_ephemeral_matches(&s, 9, 8, out, RTE_DIM(out)) == -EINVAL, "lo > hi");
	dpsock_flow_group_match(&s, g, &gm);
	CHECK(match_eq(&gm, &want[7]), "group: %s", mstr(&gm));

	/* the defaults: 7 blocks per protocol and address */
	s.eph_lo = 32768;
	s.eph_hi = 60999;
	n = dpsock_flow_set_matches(&s, out, RTE_DIM(out));
	CHECK(n == 2 + 1 + 2 * 2 * 7 + 1, "default range: %d rules", n);
	/* untagged, no address: only the group */
	s.vlan = 0;
	s.n_addrs = 0;
	n = dpsock_flow_set_matches(&s, out, RTE_DIM(out));
	CHECK(n == 1 && out[0].dst == g && out[0].vlan == 0, "no address: %d", n);
	s.eph_lo = 10;
	s.eph_hi = 9;
	s.n_addrs = 2;
	CHECK(dpsock_flow_set_matches(&s, out, RTE_DIM(out)) == -EINVAL, "bad range");
}

/* ---- 3. items and action ----------------------------------------------------- */

static void
test_items(void)
{
	struct dpsock_flow_match m = M(100, ip(10, 0, 0, 1), IPPROTO_TCP, 32768, 0xc000);
	struct dpsock_flow_rule r;
	const uint8_t *bytes;
	char s[160];

	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	CHECK(r.attr.ingress == 1 && r.attr.egress == 0 && r.attr.transfer == 0 &&
	      r.attr.group == 0 && r.attr.priority == DPSOCK_FLOW_PRIORITY &&
	      DPSOCK_FLOW_PRIORITY == 1, "attr");
	CHECK(r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH && r.pattern[1].type ==
	      RTE_FLOW_ITEM_TYPE_VLAN && r.pattern[2].type == RTE_FLOW_ITEM_TYPE_IPV4 &&
	      r.pattern[3].type == RTE_FLOW_ITEM_TYPE_TCP &&
	      r.pattern[4].type == RTE_FLOW_ITEM_TYPE_END, "types %d %d %d %d %d",
	      r.pattern[0].type, r.pattern[1].type, r.pattern[2].type, r.pattern[3].type,
	      r.pattern[4].type);
	/* the VLAN item says it all: ETH matches any */
	CHECK(r.pattern[0].spec == NULL && r.pattern[0].mask == NULL, "eth with vlan");
	CHECK(r.pattern[1].spec == &r.vlan_spec && r.pattern[1].mask == &r.vlan_mask &&
	      r.pattern[1].last == NULL, "vlan item");
	bytes = (const uint8_t *)&r.vlan_spec.hdr.vlan_tci;
	CHECK(bytes[0] == 0x00 && bytes[1] == 100, "vlan tci on the wire %02x %02x", bytes[0],
	      bytes[1]);
	bytes = (const uint8_t *)&r.vlan_mask.hdr.vlan_tci;
	CHECK(bytes[0] == 0x0f && bytes[1] == 0xff, "vlan mask %02x %02x", bytes[0], bytes[1]);
	CHECK(r.vlan_spec.hdr.eth_proto == 0 && r.vlan_mask.hdr.eth_proto == 0 &&
	      r.vlan_mask.has_more_vlan == 0, "vlan: nothing else");
	CHECK(r.pattern[2].spec == &r.ip_spec && r.pattern[2].mask == &r.ip_mask &&
	      r.pattern[2].last == NULL, "ipv4 item");
	bytes = (const uint8_t *)&r.ip_spec.hdr.dst_addr;
	CHECK(bytes[0] == 10 && bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 1, "ipv4 dst");
	CHECK(r.ip_mask.hdr.dst_addr == 0xffffffff && r.ip_mask.hdr.src_addr == 0 &&
	      r.ip_mask.hdr.next_proto_id == 0 && r.ip_mask.hdr.fragment_offset == 0 &&
	      r.ip_spec.hdr.src_addr == 0, "ipv4: dst only");
	CHECK(r.pattern[3].spec == &r.tcp_spec && r.pattern[3].mask == &r.tcp_mask &&
	      r.pattern[3].last == NULL, "tcp item");
	bytes = (const uint8_t *)&r.tcp_spec.hdr.dst_port;
	CHECK(bytes[0] == 0x80 && bytes[1] == 0x00, "tcp dst %02x %02x", bytes[0], bytes[1]);
	bytes = (const uint8_t *)&r.tcp_mask.hdr.dst_port;
	CHECK(bytes[0] == 0xc0 && bytes[1] == 0x00, "tcp mask %02x %02x", bytes[0], bytes[1]);
	CHECK(r.tcp_mask.hdr.src_port == 0 && r.tcp_mask.hdr.tcp_flags == 0 &&
	      r.tcp_spec.hdr.src_port == 0, "tcp: dst port only");
	dpsock_flow_match_str(&m, true, s, sizeof(s));
	CHECK(strcmp(s, "eth / vlan vid is 100 / ipv4 dst is 10.0.0.1 / tcp dst spec 32768 "
		     "dst mask 0xc000 / end") == 0, "text: %s", s);

	/* untagged UDP to one port: ETH says untagged, the UDP item the port */
	m = (struct dpsock_flow_match)M(0, ip(192, 168, 7, 9), IPPROTO_UDP, 5000, 0xffff);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	CHECK(r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH && r.pattern[1].type ==
	      RTE_FLOW_ITEM_TYPE_IPV4 && r.pattern[2].type == RTE_FLOW_ITEM_TYPE_UDP &&
	      r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END, "untagged types");
	CHECK(r.pattern[0].spec == &r.eth_spec && r.pattern[0].mask == &r.eth_mask &&
	      r.eth_spec.has_vlan == 0 && r.eth_mask.has_vlan == 1 &&
	      r.eth_mask.hdr.ether_type == 0 && r.eth_mask.hdr.dst_addr.addr_bytes[0] == 0,
	      "eth: untagged only, nothing else");
	bytes = (const uint8_t *)&r.udp_spec.hdr.dst_port;
	CHECK(bytes[0] == 0x13 && bytes[1] == 0x88, "udp dst 5000 %02x %02x", bytes[0],
	      bytes[1]);
	CHECK(r.udp_mask.hdr.dst_port == 0xffff && r.udp_mask.hdr.src_port == 0, "udp mask");
	dpsock_flow_match_str(&m, true, s, sizeof(s));
	CHECK(strcmp(s, "eth has_vlan is 0 / ipv4 dst is 192.168.7.9 / udp dst is 5000 / end") ==
	      0, "text: %s", s);
	/* the same where the PMD cannot match has_vlan */
	CHECK(dpsock_flow_rule_build(&r, &m, false) == 0, "build");
	CHECK(r.pattern[0].spec == NULL && r.pattern[0].mask == NULL, "eth: any");
	dpsock_flow_match_str(&m, false, s, sizeof(s));
	CHECK(strcmp(s, "eth / ipv4 dst is 192.168.7.9 / udp dst is 5000 / end") == 0, "text: %s",
	      s);

	/* a group: UDP, any port (no spec: the item's default mask is unused) */
	m = (struct dpsock_flow_match)M(0, ip(239, 1, 2, 3), IPPROTO_UDP, 0, 0);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	CHECK(r.pattern[2].type == RTE_FLOW_ITEM_TYPE_UDP && r.pattern[2].spec == NULL &&
	      r.pattern[2].mask == NULL && r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END,
	      "group's udp item");
	dpsock_flow_match_str(&m, true, s, sizeof(s));
	CHECK(strcmp(s, "eth has_vlan is 0 / ipv4 dst is 239.1.2.3 / udp / end") == 0, "text: %s",
	      s);
	/* proto 0: the address alone */
	m = (struct dpsock_flow_match)M(4094, ip(10, 0, 0, 1), 0, 0, 0);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	CHECK(r.pattern[2].type == RTE_FLOW_ITEM_TYPE_IPV4 &&
	      r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END, "address only");
	bytes = (const uint8_t *)&r.vlan_spec.hdr.vlan_tci;
	CHECK(bytes[0] == 0x0f && bytes[1] == 0xfe, "vlan 4094");
	/* refused */
	m = (struct dpsock_flow_match)M(0, ip(10, 0, 0, 1), IPPROTO_ICMP, 0, 0);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == -EINVAL, "icmp");
	m = (struct dpsock_flow_match)M(0, ip(10, 0, 0, 1), 0, 80, 0xffff);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == -EINVAL, "port without protocol");
	m = (struct dpsock_flow_match)M(4095, ip(10, 0, 0, 1), IPPROTO_TCP, 80, 0xffff);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == -EINVAL, "vlan 4095");
}

static void
test_actions(void)
{
	static const uint16_t q[] = { 0, 1, 2, 3 };
	uint8_t key[40];
	struct dpsock_flow_actions a;
	unsigned int i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	CHECK(dpsock_flow_actions_build(&a, &q[2], 1, key, sizeof(key), RTE_ETH_RSS_IP) == 0, "1");
	CHECK(a.actions[0].type == RTE_FLOW_ACTION_TYPE_QUEUE && a.actions[0].conf == &a.queue &&
	      a.queue.index == 2 && a.actions[1].type == RTE_FLOW_ACTION_TYPE_END, "queue");

	CHECK(dpsock_flow_actions_build(&a, q, 4, NULL, 0,
					RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) == 0,
	      "4");
	CHECK(a.actions[0].type == RTE_FLOW_ACTION_TYPE_RSS && a.actions[0].conf == &a.rss &&
	      a.actions[1].type == RTE_FLOW_ACTION_TYPE_END, "rss");
	CHECK(a.rss.func == RTE_ETH_HASH_FUNCTION_DEFAULT && a.rss.level == 0 &&
	      a.rss.types == (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &&
	      a.rss.queue_num == 4 && a.rss.queue == a.queues && a.rss.key == NULL &&
	      a.rss.key_len == 0, "rss conf, the PMD's key");
	for (i = 0; i < 4; i++)
		CHECK(a.rss.queue[i] == i, "queue %u", i);

	CHECK(dpsock_flow_actions_build(&a, q, 2, key, sizeof(key), 0) == 0, "key");
	CHECK(a.rss.key == a.key && a.rss.key_len == 40 && memcmp(a.key, key, 40) == 0 &&
	      a.rss.types == 0 && a.rss.queue_num == 2, "rss with the port's key");
	CHECK(dpsock_flow_actions_build(&a, q, 0, NULL, 0, 0) == -EINVAL, "no queue");
	CHECK(dpsock_flow_actions_build(&a, q, DPSOCK_FLOW_QUEUES_MAX + 1, NULL, 0, 0) == -EINVAL,
	      "too many queues");
	CHECK(dpsock_flow_actions_build(&a, q, 2, key, DPSOCK_FLOW_KEY_MAX + 1, 0) == -EINVAL,
	      "key too long");
}

int
main(int argc, char **argv)
{
	srand(1);
	test_ranges();
	test_rule_list();
	test_items();
	test_actions();
	printf("flow_filter_test: %u passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
