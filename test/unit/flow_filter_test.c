/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rte_flow backend of sharing mode (stack/sharing/flow_filter.c) without a NIC:
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
 *    group, VLAN 100, written out by hand; the per-change lists. Then both
 *    families in one set: entries on IPv4's any on the IPv4 addresses only,
 *    on IPv6's any on the IPv6 ones only, the ephemeral blocks on all, an
 *    IPv6 group.
 * 3. The rte_flow items and action built from a match: item types in
 *    order, spec and mask values, network byte order, attributes, for an
 *    IPV4 and an IPV6 destination; QUEUE and RSS actions, and the IPv6
 *    rules' hash types; the testpmd text.
 * 4. The backend over fake rte_flow calls that decode each pattern back to
 *    a match: after every change the installed rules are exactly the
 *    rule list of the set told so far (each once), with the RSS hash types
 *    of their family, each change creates and destroys only what changes,
 *    validation comes before any create, a failed create is rolled back, a
 *    failed destroy is retried, and close removes everything; IPv6
 *    addresses, ports and groups next to IPv4 ones, and the arguments
 *    refused (-EINVAL, -EEXIST, -ENOENT) in both families.
 *
 * No PMD here takes these rules for real: af_packet, memif and the null
 * PMD have no rte_flow; net_tap validates in software (tried by hand: it
 * accepts the port, group and VLAN patterns with a QUEUE action, refuses
 * has_vlan, which sends open down its fallback, and RSS) but cannot create
 * rules without the kernel's flower classifier, and needs root and a
 * network namespace. So the patterns are checked against rte_flow's
 * definitions, not a PMD: mlx5 is docs/mlx5-sharing-test-plan.md's work.
 */

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
#include <rte_flow.h>
#include <rte_log.h>
#include <rte_udp.h>

#include "sharing/filter_priv.h"
#include "check.h"
#include "core/log_priv.h"

static bool verbose;

/* An IPv4 address as the backend takes it: mapped, ::ffff:a.b.c.d */
static struct dpsock_mc_addr
ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	return dpsock_mc_addr4(rte_cpu_to_be_32((uint32_t)a << 24 | b << 16 | c << 8 | d));
}

/* An IPv6 address from its text (:: when it is not one: the check says so) */
static struct dpsock_mc_addr
ip6(const char *text)
{
	uint8_t b[16] = { 0 };

	CHECK(inet_pton(AF_INET6, text, b) == 1, "%s is no IPv6 address", text);
	return dpsock_mc_addr6(b);
}

/* every local address of IPv4 / of IPv6 */
#define ANY4 dpsock_filter_any4()
#define ANY6 dpsock_filter_any6()

static bool
addr_eq(struct dpsock_mc_addr a, struct dpsock_mc_addr b)
{
	return dpsock_mc_addr_eq(a, b);
}

static bool
match_eq(const struct dpsock_flow_match *a, const struct dpsock_flow_match *b)
{
	return a->vlan == b->vlan && addr_eq(a->dst, b->dst) && a->proto == b->proto &&
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
		CHECK(out[i].vlan == 7 && addr_eq(out[i].dst, tmpl.dst) &&
		      out[i].proto == IPPROTO_UDP,
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
			      out[i].proto == 0 && addr_eq(out[i].dst, ANY6) && out[i].vlan == 0,
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
	const struct dpsock_mc_addr a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2), g = ip(239, 1, 2, 3);
	const struct dpsock_mc_addr addrs[] = { a, b }, groups[] = { g };
	const struct dpsock_flow_port ports[] = {
		{ IPPROTO_TCP, ANY4, 80 },            /* a listener on every address */
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
	CHECK(n == 1 && addr_eq(out[0].dst, g) && out[0].vlan == 0, "no address: %d", n);
	s.eph_lo = 10;
	s.eph_hi = 9;
	s.n_addrs = 2;
	CHECK(dpsock_flow_set_matches(&s, out, RTE_DIM(out)) == -EINVAL, "bad range");
}

/*
 * Both families in one set: the entries on IPv4's any reach the IPv4
 * addresses only, those on IPv6's any the IPv6 ones (a dual-stack socket
 * has one of each), an entry on one address that address only, and the
 * ephemeral blocks every address of both.
 */
static void
test_rule_list6(void)
{
	const struct dpsock_mc_addr a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2);
	const struct dpsock_mc_addr x6 = ip6("fd00::1"), y6 = ip6("fe80::2");
	const struct dpsock_mc_addr g4 = ip(239, 1, 2, 3), g6 = ip6("ff02::1:3");
	const struct dpsock_mc_addr addrs[] = { a, x6, b, y6 }, groups[] = { g4, g6 };
	const struct dpsock_flow_port ports[] = {
		{ IPPROTO_TCP, ANY4, 80 },              /* an AF_INET listener */
		{ IPPROTO_TCP, ANY6, 443 },             /* an IPV6_V6ONLY listener */
		{ IPPROTO_UDP, ANY4, 53 },              /* a dual-stack UDP socket: */
		{ IPPROTO_UDP, ANY6, 53 },              /* one entry per family */
		{ IPPROTO_UDP, x6, 5000 },              /* bound to x6 */
		{ IPPROTO_TCP, ip6("fd00::9"), 22 },    /* not local */
		{ IPPROTO_TCP, a, 8080 },               /* bound to a */
	};
	struct dpsock_flow_set s = {
		.vlan = 0, .addrs = addrs, .n_addrs = RTE_DIM(addrs), .ports = ports,
		.n_ports = RTE_DIM(ports), .eph_lo = 49152, .eph_hi = 65535, .groups = groups,
		.n_groups = RTE_DIM(groups),
	};
	const struct dpsock_flow_match want[] = {
		M(0, a, IPPROTO_TCP, 80, 0xffff),
		M(0, a, IPPROTO_UDP, 53, 0xffff),
		M(0, a, IPPROTO_TCP, 8080, 0xffff),
		M(0, a, IPPROTO_TCP, 49152, 0xc000),
		M(0, a, IPPROTO_UDP, 49152, 0xc000),
		M(0, x6, IPPROTO_TCP, 443, 0xffff),
		M(0, x6, IPPROTO_UDP, 53, 0xffff),
		M(0, x6, IPPROTO_UDP, 5000, 0xffff),
		M(0, x6, IPPROTO_TCP, 49152, 0xc000),
		M(0, x6, IPPROTO_UDP, 49152, 0xc000),
		M(0, b, IPPROTO_TCP, 80, 0xffff),
		M(0, b, IPPROTO_UDP, 53, 0xffff),
		M(0, b, IPPROTO_TCP, 49152, 0xc000),
		M(0, b, IPPROTO_UDP, 49152, 0xc000),
		M(0, y6, IPPROTO_TCP, 443, 0xffff),
		M(0, y6, IPPROTO_UDP, 53, 0xffff),
		M(0, y6, IPPROTO_TCP, 49152, 0xc000),
		M(0, y6, IPPROTO_UDP, 49152, 0xc000),
		M(0, g4, IPPROTO_UDP, 0, 0),
		M(0, g6, IPPROTO_UDP, 0, 0),
	};
	/* a new IPv6 address brings IPv6's any entries and the blocks */
	const struct dpsock_mc_addr z6 = ip6("2001:db8::7");
	const struct dpsock_flow_match want_z6[] = {
		M(0, z6, IPPROTO_TCP, 443, 0xffff),
		M(0, z6, IPPROTO_UDP, 53, 0xffff),
		M(0, z6, IPPROTO_TCP, 49152, 0xc000),
		M(0, z6, IPPROTO_UDP, 49152, 0xc000),
	};
	const struct dpsock_flow_match want_any4[] = {
		M(0, a, IPPROTO_TCP, 80, 0xffff),
		M(0, b, IPPROTO_TCP, 80, 0xffff),
	};
	const struct dpsock_flow_match want_any6[] = {
		M(0, x6, IPPROTO_TCP, 443, 0xffff),
		M(0, y6, IPPROTO_TCP, 443, 0xffff),
	};
	const struct dpsock_flow_match want_eph[] = {
		M(0, a, IPPROTO_TCP, 1024, 0xfc00), M(0, a, IPPROTO_UDP, 1024, 0xfc00),
		M(0, x6, IPPROTO_TCP, 1024, 0xfc00), M(0, x6, IPPROTO_UDP, 1024, 0xfc00),
		M(0, b, IPPROTO_TCP, 1024, 0xfc00), M(0, b, IPPROTO_UDP, 1024, 0xfc00),
		M(0, y6, IPPROTO_TCP, 1024, 0xfc00), M(0, y6, IPPROTO_UDP, 1024, 0xfc00),
	};
	const struct dpsock_flow_port v4_on_6 = { IPPROTO_TCP, ANY4, 443 };
	struct dpsock_flow_match out[256], gm;
	int n;

	n = dpsock_flow_set_matches(&s, out, RTE_DIM(out));
	check_list("both families", out, n, want, RTE_DIM(want));
	CHECK(dpsock_flow_set_matches(&s, out, RTE_DIM(want) - 1) == -ENOSPC,
	      "both families, no room");

	n = dpsock_flow_addr_matches(&s, x6, out, RTE_DIM(out));
	check_list("address x6", out, n, &want[5], 5);
	n = dpsock_flow_addr_matches(&s, a, out, RTE_DIM(out));
	check_list("address a", out, n, &want[0], 5);
	n = dpsock_flow_addr_matches(&s, z6, out, RTE_DIM(out));
	check_list("address z6, not in the set", out, n, want_z6, RTE_DIM(want_z6));
	n = dpsock_flow_port_matches(&s, &ports[0], out, RTE_DIM(out));
	check_list("TCP 80 on IPv4's any", out, n, want_any4, RTE_DIM(want_any4));
	n = dpsock_flow_port_matches(&s, &ports[1], out, RTE_DIM(out));
	check_list("TCP 443 on IPv6's any", out, n, want_any6, RTE_DIM(want_any6));
	n = dpsock_flow_port_matches(&s, &ports[3], out, RTE_DIM(out));
	check_list("UDP 53 on IPv6's any", out, n, (const struct dpsock_flow_match[]){
		   M(0, x6, IPPROTO_UDP, 53, 0xffff), M(0, y6, IPPROTO_UDP, 53, 0xffff) }, 2);
	n = dpsock_flow_port_matches(&s, &ports[4], out, RTE_DIM(out));
	check_list("UDP 5000 on x6", out, n, &want[7], 1);
	n = dpsock_flow_port_matches(&s, &ports[5], out, RTE_DIM(out));
	check_list("TCP 22 on a foreign IPv6 address", out, n, NULL, 0);
	n = dpsock_flow_port_matches(&s, &v4_on_6, out, RTE_DIM(out));
	CHECK(n == 2 && dpsock_mc_addr_is4(out[0].dst) && dpsock_mc_addr_is4(out[1].dst),
	      "TCP 443 on IPv4's any: %d rules, IPv4 only", n);
	n = dpsock_flow_ephemeral_matches(&s, 1024, 2047, out, RTE_DIM(out));
	check_list("ephemeral 1024-2047", out, n, want_eph, RTE_DIM(want_eph));
	dpsock_flow_group_match(&s, g6, &gm);
	CHECK(match_eq(&gm, &want[19]), "IPv6 group: %s", mstr(&gm));

	/* an IPv6 address alone (no group): IPv4's entries on any give
	 * nothing, not even a rule on an IPv6 address */
	s.addrs = &addrs[1];
	s.n_addrs = 1;
	s.n_groups = 0;
	n = dpsock_flow_set_matches(&s, out, RTE_DIM(out));
	check_list("x6 alone", out, n, &want[5], 5);
	/* an IPv4 address whose last word is an IPv6 address's (0.0.0.1 and
	 * fd00::1): the family is in the other words, so IPv4's entries on
	 * any reach it and IPv6's do not */
	s.addrs = (const struct dpsock_mc_addr[]){ dpsock_mc_addr4(x6.w[3]) };
	s.eph_lo = s.eph_hi = 0;
	n = dpsock_flow_set_matches(&s, out, RTE_DIM(out));
	CHECK(n == 2 && out[0].port == 80 && out[1].port == 53 && dpsock_mc_addr_is4(out[0].dst),
	      "mapped twin of x6: %d rules (%s)", n, n > 0 ? mstr(&out[0]) : "");
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

/* An IPv6 rule's items: IPV6 in IPV4's place, the ETH item as for IPv4. */
static void
test_items6(void)
{
	static const uint8_t fd00_1[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	struct dpsock_flow_match m = M(0, ip6("fd00::1"), IPPROTO_TCP, 443, 0xffff);
	struct rte_flow_item_ipv6 zero6;
	struct rte_flow_item_ipv4 zero4;
	struct dpsock_flow_rule r;
	const uint8_t *bytes;
	unsigned int i, ones;
	char s[160];

	memset(&zero6, 0, sizeof(zero6));
	memset(&zero4, 0, sizeof(zero4));
	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	CHECK(r.attr.ingress == 1 && r.attr.priority == DPSOCK_FLOW_PRIORITY, "attr");
	CHECK(r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH &&
	      r.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV6 &&
	      r.pattern[2].type == RTE_FLOW_ITEM_TYPE_TCP &&
	      r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END, "types %d %d %d %d",
	      r.pattern[0].type, r.pattern[1].type, r.pattern[2].type, r.pattern[3].type);
	/* untagged only; no EtherType: the IPV6 item implies 0x86dd */
	CHECK(r.pattern[0].spec == &r.eth_spec && r.pattern[0].mask == &r.eth_mask &&
	      r.eth_spec.has_vlan == 0 && r.eth_mask.has_vlan == 1 &&
	      r.eth_mask.hdr.ether_type == 0 && r.eth_spec.hdr.ether_type == 0,
	      "eth: untagged only, no type");
	CHECK(r.pattern[1].spec == &r.ip6_spec && r.pattern[1].mask == &r.ip6_mask &&
	      r.pattern[1].last == NULL, "ipv6 item");
	CHECK(memcmp(r.ip6_spec.hdr.dst_addr, fd00_1, 16) == 0, "ipv6 dst bytes");
	for (i = 0, ones = 0; i < 16; i++)
		ones += r.ip6_mask.hdr.dst_addr[i] == 0xff;
	CHECK(ones == 16, "ipv6 dst mask: %u bytes of ones", ones);
	/* nothing but the destination: clear it, and both are all zeros (no
	 * next header, no extension header flags, no source) */
	memset(r.ip6_spec.hdr.dst_addr, 0, 16);
	memset(r.ip6_mask.hdr.dst_addr, 0, 16);
	CHECK(memcmp(&r.ip6_spec, &zero6, sizeof(zero6)) == 0 &&
	      memcmp(&r.ip6_mask, &zero6, sizeof(zero6)) == 0, "ipv6: dst only");
	CHECK(memcmp(&r.ip_spec, &zero4, sizeof(zero4)) == 0 &&
	      memcmp(&r.ip_mask, &zero4, sizeof(zero4)) == 0, "the ipv4 item's storage unused");
	CHECK(r.pattern[2].spec == &r.tcp_spec && r.pattern[2].mask == &r.tcp_mask, "tcp item");
	bytes = (const uint8_t *)&r.tcp_spec.hdr.dst_port;
	CHECK(bytes[0] == 0x01 && bytes[1] == 0xbb, "tcp dst 443 %02x %02x", bytes[0], bytes[1]);
	bytes = (const uint8_t *)&r.tcp_mask.hdr.dst_port;
	CHECK(bytes[0] == 0xff && bytes[1] == 0xff, "tcp mask %02x %02x", bytes[0], bytes[1]);
	CHECK(r.tcp_mask.hdr.src_port == 0 && r.tcp_mask.hdr.tcp_flags == 0, "tcp: dst only");
	dpsock_flow_match_str(&m, true, s, sizeof(s));
	CHECK(strcmp(s, "eth has_vlan is 0 / ipv6 dst is fd00::1 / tcp dst is 443 / end") == 0,
	      "text: %s", s);

	/* tagged, an ephemeral block over UDP */
	m = (struct dpsock_flow_match)M(100, ip6("2001:db8::5"), IPPROTO_UDP, 49152, 0xc000);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	CHECK(r.pattern[0].type == RTE_FLOW_ITEM_TYPE_ETH && r.pattern[0].spec == NULL &&
	      r.pattern[1].type == RTE_FLOW_ITEM_TYPE_VLAN &&
	      r.pattern[2].type == RTE_FLOW_ITEM_TYPE_IPV6 &&
	      r.pattern[3].type == RTE_FLOW_ITEM_TYPE_UDP &&
	      r.pattern[4].type == RTE_FLOW_ITEM_TYPE_END, "tagged types");
	bytes = (const uint8_t *)&r.vlan_spec.hdr.vlan_tci;
	CHECK(bytes[0] == 0 && bytes[1] == 100, "vlan 100");
	CHECK(r.ip6_spec.hdr.dst_addr[0] == 0x20 && r.ip6_spec.hdr.dst_addr[1] == 0x01 &&
	      r.ip6_spec.hdr.dst_addr[2] == 0x0d && r.ip6_spec.hdr.dst_addr[3] == 0xb8 &&
	      r.ip6_spec.hdr.dst_addr[15] == 5, "2001:db8::5");
	bytes = (const uint8_t *)&r.udp_spec.hdr.dst_port;
	CHECK(bytes[0] == 0xc0 && bytes[1] == 0x00, "udp dst %02x %02x", bytes[0], bytes[1]);
	bytes = (const uint8_t *)&r.udp_mask.hdr.dst_port;
	CHECK(bytes[0] == 0xc0 && bytes[1] == 0x00 && r.udp_mask.hdr.src_port == 0,
	      "udp mask %02x %02x", bytes[0], bytes[1]);
	dpsock_flow_match_str(&m, true, s, sizeof(s));
	CHECK(strcmp(s, "eth / vlan vid is 100 / ipv6 dst is 2001:db8::5 / udp dst spec 49152 "
		     "dst mask 0xc000 / end") == 0, "text: %s", s);

	/* an IPv6 group: UDP, any port */
	m = (struct dpsock_flow_match)M(0, ip6("ff02::1:3"), IPPROTO_UDP, 0, 0);
	CHECK(dpsock_flow_rule_build(&r, &m, false) == 0, "build");
	CHECK(r.pattern[0].spec == NULL && r.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV6 &&
	      r.ip6_spec.hdr.dst_addr[0] == 0xff && r.ip6_spec.hdr.dst_addr[1] == 0x02 &&
	      r.pattern[2].type == RTE_FLOW_ITEM_TYPE_UDP && r.pattern[2].spec == NULL &&
	      r.pattern[2].mask == NULL && r.pattern[3].type == RTE_FLOW_ITEM_TYPE_END,
	      "IPv6 group's items");
	dpsock_flow_match_str(&m, false, s, sizeof(s));
	CHECK(strcmp(s, "eth / ipv6 dst is ff02::1:3 / udp / end") == 0, "text: %s", s);

	/* the mapped form is IPv4's, whichever way it was written */
	m = (struct dpsock_flow_match)M(0, ip6("::ffff:10.0.0.1"), IPPROTO_TCP, 80, 0xffff);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == 0, "build");
	bytes = (const uint8_t *)&r.ip_spec.hdr.dst_addr;
	CHECK(r.pattern[1].type == RTE_FLOW_ITEM_TYPE_IPV4 && bytes[0] == 10 && bytes[3] == 1,
	      "mapped: ipv4 item");
	dpsock_flow_match_str(&m, true, s, sizeof(s));
	CHECK(strcmp(s, "eth has_vlan is 0 / ipv4 dst is 10.0.0.1 / tcp dst is 80 / end") == 0,
	      "text: %s", s);
	/* the longest text there is fits the buffers of 160 */
	m = (struct dpsock_flow_match)M(4094, ip6("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"),
					IPPROTO_UDP, 65534, 0xfffe);
	CHECK(dpsock_flow_match_str(&m, true, s, sizeof(s)) < (int)sizeof(s), "length: %s", s);
	/* refused as for IPv4 */
	m = (struct dpsock_flow_match)M(0, ip6("fd00::1"), IPPROTO_ICMPV6, 0, 0);
	CHECK(dpsock_flow_rule_build(&r, &m, true) == -EINVAL, "icmpv6");
	m = (struct dpsock_flow_match)M(4095, ip6("fd00::1"), IPPROTO_UDP, 80, 0xffff);
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

/* The IPv6 rules' hash types (dpsock_flow_rss_types6). */
static void
test_rss_types6(void)
{
	const uint64_t v4 = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP |
			    RTE_ETH_RSS_NONFRAG_IPV4_UDP;
	const uint64_t v6 = RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP |
			    RTE_ETH_RSS_NONFRAG_IPV6_UDP;
	const uint64_t all4 = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_FRAG_IPV4 |
			      RTE_ETH_RSS_NONFRAG_IPV4_TCP | RTE_ETH_RSS_NONFRAG_IPV4_UDP |
			      RTE_ETH_RSS_NONFRAG_IPV4_SCTP | RTE_ETH_RSS_NONFRAG_IPV4_OTHER;
	const uint64_t all6 = RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_FRAG_IPV6 |
			      RTE_ETH_RSS_NONFRAG_IPV6_TCP | RTE_ETH_RSS_NONFRAG_IPV6_UDP |
			      RTE_ETH_RSS_NONFRAG_IPV6_SCTP | RTE_ETH_RSS_NONFRAG_IPV6_OTHER;
	const uint64_t both = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP;

	CHECK(dpsock_flow_rss_types6(0) == 0, "the PMD's default stays");
	CHECK(dpsock_flow_rss_types6(both) == both, "both families: as they are");
	CHECK(dpsock_flow_rss_types6(v4) == (v4 | v6), "IPv4 alone: 0x%" PRIx64,
	      dpsock_flow_rss_types6(v4));
	CHECK(dpsock_flow_rss_types6(all4) == (all4 | all6), "every IPv4 type has its pair");
	CHECK(dpsock_flow_rss_types6(RTE_ETH_RSS_IPV4) == (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_IPV6),
	      "L3 alone");
	CHECK(dpsock_flow_rss_types6(v4 | RTE_ETH_RSS_L3_SRC_ONLY) ==
	      (v4 | v6 | RTE_ETH_RSS_L3_SRC_ONLY), "the family's other bits kept");
	/* an IPv6 type named: the port's choice, not completed */
	CHECK(dpsock_flow_rss_types6(v4 | RTE_ETH_RSS_IPV6) == (v4 | RTE_ETH_RSS_IPV6),
	      "some IPv6 named");
	CHECK(dpsock_flow_rss_types6(RTE_ETH_RSS_IPV6_EX) == RTE_ETH_RSS_IPV6_EX, "IPV6_EX");
	CHECK(dpsock_flow_rss_types6(v6) == v6, "IPv6 alone");
}

/* ---- 4. the backend over fake rte_flow calls --------------------------------- */

#define FAKE_MAX 4096

static struct fake {
	struct dpsock_flow_match m;
	bool live;
	bool untagged_only;
	enum rte_flow_action_type action;
	uint64_t types;           /* the RSS action's hash types */
} fake[FAKE_MAX];
static unsigned int n_fake;
static unsigned int n_validate, n_create, n_destroy;
static int refuse_port = -1;    /* validate refuses rules on this L4 dst port */
static bool refuse_has_vlan;    /* validate refuses an ETH item with a mask */
static int create_fails_in = -1; /* the create after this many more fails */
static int destroy_fails;       /* this many next destroys fail */
static bool pattern_bad;

/* A pattern back to the match it was built from; -EINVAL for anything
 * flow_filter.c should never build. */
static int
decode(const struct rte_flow_attr *attr, const struct rte_flow_item *p,
       struct dpsock_flow_match *m, bool *untagged_only)
{
	unsigned int i = 0;

	memset(m, 0, sizeof(*m));
	*untagged_only = false;
	if (attr->ingress != 1 || attr->egress || attr->transfer || attr->group != 0 ||
	    attr->priority != DPSOCK_FLOW_PRIORITY || p[i].type != RTE_FLOW_ITEM_TYPE_ETH)
		return -EINVAL;
	if (p[i].spec != NULL) {
		const struct rte_flow_item_eth *s = p[i].spec, *k = p[i].mask;

		if (k == NULL || k->has_vlan != 1 || s->has_vlan != 0)
			return -EINVAL;
		*untagged_only = true;
	}
	i++;
	if (p[i].type == RTE_FLOW_ITEM_TYPE_VLAN) {
		const struct rte_flow_item_vlan *s = p[i].spec, *k = p[i].mask;

		if (s == NULL || k == NULL || k->hdr.vlan_tci != RTE_BE16(0x0fff) || *untagged_only)
			return -EINVAL;
		m->vlan = rte_be_to_cpu_16(s->hdr.vlan_tci);
		i++;
	}
	if (p[i].spec == NULL || p[i].mask == NULL)
		return -EINVAL;
	if (p[i].type == RTE_FLOW_ITEM_TYPE_IPV4) {
		const struct rte_flow_item_ipv4 *s = p[i].spec, *k = p[i].mask;

		if (k->hdr.dst_addr != 0xffffffff)
			return -EINVAL;
		m->dst = dpsock_mc_addr4(s->hdr.dst_addr);
	} else if (p[i].type == RTE_FLOW_ITEM_TYPE_IPV6) {
		const struct rte_flow_item_ipv6 *s = p[i].spec, *k = p[i].mask;
		struct rte_flow_item_ipv6 want;

		/* the destination, all of it, and nothing else */
		memset(&want, 0, sizeof(want));
		memset(want.hdr.dst_addr, 0xff, sizeof(want.hdr.dst_addr));
		if (memcmp(k, &want, sizeof(want)) != 0)
			return -EINVAL;
		m->dst = dpsock_mc_addr6(s->hdr.dst_addr);
		/* an IPv4 address goes in an IPV4 item, never mapped in an IPV6 one */
		if (dpsock_mc_addr_is4(m->dst))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	i++;
	if (p[i].type == RTE_FLOW_ITEM_TYPE_TCP || p[i].type == RTE_FLOW_ITEM_TYPE_UDP) {
		/* the TCP and UDP items both start with the ports */
		const struct rte_udp_hdr *s = p[i].spec, *k = p[i].mask;

		m->proto = p[i].type == RTE_FLOW_ITEM_TYPE_TCP ? IPPROTO_TCP : IPPROTO_UDP;
		if ((s == NULL) != (k == NULL))
			return -EINVAL;
		if (s != NULL) {
			m->port = rte_be_to_cpu_16(s->dst_port);
			m->port_mask = rte_be_to_cpu_16(k->dst_port);
			if (k->src_port != 0 || (m->port & ~m->port_mask) != 0)
				return -EINVAL;
		}
		i++;
	}
	return p[i].type == RTE_FLOW_ITEM_TYPE_END ? 0 : -EINVAL;
}

static int
fake_validate(uint16_t port_id, const struct rte_flow_attr *attr,
	      const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
	      struct rte_flow_error *error)
{
	struct dpsock_flow_match m;
	bool untagged;

	n_validate++;
	if (decode(attr, pattern, &m, &untagged) != 0) {
		pattern_bad = true;
		return rte_flow_error_set(error, EINVAL, RTE_FLOW_ERROR_TYPE_ITEM, pattern,
					  "fake: pattern flow_filter.c should not build");
	}
	if (refuse_has_vlan && pattern[0].mask != NULL)
		return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_MASK,
					  pattern[0].mask, "fake: no has_vlan");
	if (refuse_port >= 0 && m.port == refuse_port && m.port_mask != 0) {
		unsigned int i = 0;

		while (pattern[i].type != RTE_FLOW_ITEM_TYPE_TCP &&
		       pattern[i].type != RTE_FLOW_ITEM_TYPE_UDP)
			i++;
		return rte_flow_error_set(error, ENOTSUP, RTE_FLOW_ERROR_TYPE_ITEM_SPEC,
					  pattern[i].spec, "fake: port refused");
	}
	if (actions[0].type != RTE_FLOW_ACTION_TYPE_RSS &&
	    actions[0].type != RTE_FLOW_ACTION_TYPE_QUEUE)
		return rte_flow_error_set(error, EINVAL, RTE_FLOW_ERROR_TYPE_ACTION, actions,
					  "fake: action");
	return 0;
}

static struct rte_flow *
fake_create(uint16_t port_id, const struct rte_flow_attr *attr,
	    const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
	    struct rte_flow_error *error)
{
	struct fake *f;

	n_create++;
	if (create_fails_in == 0) {
		create_fails_in = -1;
		rte_flow_error_set(error, ENOSPC, RTE_FLOW_ERROR_TYPE_UNSPECIFIED, NULL,
				   "fake: table full");
		return NULL;
	}
	if (create_fails_in > 0)
		create_fails_in--;
	if (n_fake == FAKE_MAX || fake_validate(port_id, attr, pattern, actions, error) != 0) {
		n_validate--; /* (not a call of the backend's) */
		rte_errno = EINVAL;
		return NULL;
	}
	n_validate--;
	f = &fake[n_fake++];
	decode(attr, pattern, &f->m, &f->untagged_only);
	f->live = true;
	f->action = actions[0].type;
	if (f->action == RTE_FLOW_ACTION_TYPE_RSS)
		f->types = ((const struct rte_flow_action_rss *)actions[0].conf)->types;
	return (struct rte_flow *)f;
}

static int
fake_destroy(uint16_t port_id, struct rte_flow *flow, struct rte_flow_error *error)
{
	struct fake *f = (struct fake *)flow;

	n_destroy++;
	if (f < fake || f >= fake + n_fake || !f->live) {
		pattern_bad = true;
		return rte_flow_error_set(error, EINVAL, RTE_FLOW_ERROR_TYPE_HANDLE, flow,
					  "fake: unknown handle");
	}
	if (destroy_fails > 0) {
		destroy_fails--;
		return rte_flow_error_set(error, EBUSY, RTE_FLOW_ERROR_TYPE_HANDLE, flow,
					  "fake: busy");
	}
	f->live = false;
	return 0;
}

static const struct dpsock_flowf_ops fake_ops = {
	.validate = fake_validate,
	.create = fake_create,
	.destroy = fake_destroy,
};

static unsigned int
n_live(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < n_fake; i++)
		n += fake[i].live;
	return n;
}

/* What the test told the backend, to compute the rules it should have. */
static struct {
	uint16_t vlan;
	struct dpsock_mc_addr addrs[8];
	unsigned int n_addrs;
	struct dpsock_flow_port ports[16];
	unsigned int n_ports;
	uint16_t lo, hi;
	struct dpsock_mc_addr groups[4];
	unsigned int n_groups;
	uint64_t rss4, rss6;      /* the hash types each family's rules must have */
} model;

/* The fake NIC holds exactly the set's rule list, each rule once, built
 * as the backend says (untagged_only, action, and with RSS the hash types
 * of the rule's family). */
static void
check_nic(const char *what, struct dpsock_flowf *x, enum rte_flow_action_type action)
{
	struct dpsock_flow_set s = {
		.vlan = model.vlan, .addrs = model.addrs, .n_addrs = model.n_addrs,
		.ports = model.ports, .n_ports = model.n_ports, .eph_lo = model.lo,
		.eph_hi = model.hi, .groups = model.groups, .n_groups = model.n_groups,
	};
	static struct dpsock_flow_match want[1024];
	struct dpsock_flowf_stats st;
	unsigned int i, j, found;
	int n = dpsock_flow_set_matches(&s, want, RTE_DIM(want));

	dpsock_flowf_stats(x, &st);
	CHECK(n >= 0 && n_live() == (unsigned int)n && st.rules == (unsigned int)n &&
	      st.stale == 0, "%s: %u rules on the NIC, %u in the backend, %d in the set", what,
	      n_live(), st.rules, n);
	for (i = 0; n > 0 && i < (unsigned int)n; i++) {
		for (j = 0, found = 0; j < n_fake; j++)
			if (fake[j].live && match_eq(&fake[j].m, &want[i]))
				found++;
		CHECK(found == 1, "%s: rule %s installed %u times", what, mstr(&want[i]), found);
	}
	for (j = 0; j < n_fake; j++) {
		uint64_t types = dpsock_mc_addr_is4(fake[j].m.dst) ? model.rss4 : model.rss6;

		if (!fake[j].live)
			continue;
		CHECK(fake[j].action == action && fake[j].untagged_only == st.untagged_only,
		      "%s: rule %s: action %d, untagged %d", what, mstr(&fake[j].m),
		      fake[j].action, fake[j].untagged_only);
		if (action == RTE_FLOW_ACTION_TYPE_RSS)
			CHECK(fake[j].types == types, "%s: rule %s: RSS types 0x%" PRIx64
			      ", want 0x%" PRIx64, what, mstr(&fake[j].m), fake[j].types, types);
	}
	CHECK(!pattern_bad, "%s: a malformed pattern or handle reached the NIC", what);
}

/* A change's rte_flow calls, against what it should have made. */
#define CALLS(what, expr, want_ret, want_create, want_destroy)                            \
	do {                                                                              \
		unsigned int c0 = n_create, d0 = n_destroy;                               \
		int r_ = (expr);                                                          \
		CHECK(r_ == (want_ret), "%s: returned %d, want %d", what, r_, want_ret);  \
		CHECK(n_create - c0 == (want_create) && n_destroy - d0 == (want_destroy), \
		      "%s: %u created, %u destroyed; want %u, %u", what, n_create - c0,   \
		      n_destroy - d0, (unsigned int)(want_create),                        \
		      (unsigned int)(want_destroy));                                      \
	} while (0)

static void
model_port_del(uint8_t proto, struct dpsock_mc_addr addr, uint16_t port)
{
	unsigned int i;

	for (i = 0; i < model.n_ports; i++)
		if (model.ports[i].proto == proto && addr_eq(model.ports[i].addr, addr) &&
		    model.ports[i].port == port) {
			/* (the order is not compared) */
			model.ports[i] = model.ports[--model.n_ports];
			return;
		}
	CHECK(false, "model: no port %u", port);
}

static void
fake_reset(void)
{
	memset(fake, 0, sizeof(fake));
	n_fake = n_validate = n_create = n_destroy = 0;
	refuse_port = -1;
	refuse_has_vlan = false;
	create_fails_in = -1;
	destroy_fails = 0;
	pattern_bad = false;
	memset(&model, 0, sizeof(model));
}

static void
test_backend(void)
{
	static const uint16_t queues[] = { 0, 1, 2, 3 };
	const struct dpsock_mc_addr a = ip(10, 0, 0, 1), b = ip(10, 0, 0, 2), c = ip(10, 0, 0, 3);
	const struct dpsock_mc_addr g = ip(239, 1, 2, 3);
	struct dpsock_flowf_conf conf = {
		.port_id = 3, .queues = queues, .n_queues = 4, .vlan = 100,
		.rss_types = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP, .ops = &fake_ops,
	};
	const enum rte_flow_action_type rss = RTE_FLOW_ACTION_TYPE_RSS;
	struct dpsock_flowf_stats st;
	struct dpsock_flowf *x;
	char err[512];
	int ret = 1;
	unsigned int v0;

	fake_reset();
	model.vlan = 100;
	/* (IPv6 types among them: the IPv6 rules' are the same) */
	model.rss4 = model.rss6 = conf.rss_types;
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x != NULL && ret == 0, "open: %d %s", ret, err);
	if (x == NULL)
		return;
	CHECK(n_validate == 1 && n_create == 0, "open validates one sample rule, creates none");
	check_nic("open", x, rss);

	CALLS("address a", dpsock_flowf_addr(x, a, true), 0, 0, 0);
	model.addrs[model.n_addrs++] = a;
	/* the default range: 7 blocks per protocol */
	CALLS("ephemeral", dpsock_flowf_ephemeral(x, 32768, 60999), 0, 14, 0);
	model.lo = 32768;
	model.hi = 60999;
	check_nic("ephemeral", x, rss);
	CALLS("same range", dpsock_flowf_ephemeral(x, 32768, 60999), 0, 0, 0);
	CALLS("TCP 80 everywhere", dpsock_flowf_port(x, IPPROTO_TCP, ANY4, 80, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_TCP, ANY4, 80 };
	CALLS("address b", dpsock_flowf_addr(x, b, true), 0, 15, 0);
	model.addrs[model.n_addrs++] = b;
	check_nic("address b", x, rss);
	CALLS("UDP 5000 on a", dpsock_flowf_port(x, IPPROTO_UDP, a, 5000, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, a, 5000 };
	CALLS("TCP 22 on c (not local yet)", dpsock_flowf_port(x, IPPROTO_TCP, c, 22, true), 0,
	      0, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_TCP, c, 22 };
	/* the rule a's own listener needs exists: counted, not created */
	CALLS("TCP 80 on a", dpsock_flowf_port(x, IPPROTO_TCP, a, 80, true), 0, 0, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_TCP, a, 80 };
	CALLS("group", dpsock_flowf_group(x, g, true), 0, 1, 0);
	model.groups[model.n_groups++] = g;
	check_nic("all added", x, rss);
	dpsock_flowf_stats(x, &st);
	/* a: TCP 80 (once for two entries), UDP 5000, 14 blocks; b: TCP 80,
	 * 14 blocks; the group */
	CHECK(st.rules == 1 + 1 + 14 + 1 + 14 + 1 && st.created == st.rules &&
	      st.destroyed == 0 && st.failed == 0 && !st.untagged_only,
	      "stats: %u rules, %" PRIu64 " created", st.rules, st.created);

	/* the listener on every address goes: b's rule goes, a's stays (a's
	 * own listener) */
	CALLS("TCP 80 everywhere goes", dpsock_flowf_port(x, IPPROTO_TCP, ANY4, 80, false), 0, 0,
	      1);
	model_port_del(IPPROTO_TCP, ANY4, 80);
	check_nic("TCP 80 everywhere gone", x, rss);
	/* a range whose blocks share two with the old one: per address and
	 * protocol 57344/0xf000 comes, the 5 blocks above 57343 go, and
	 * 32768/0xc000 and 49152/0xe000 are never touched */
	CALLS("ephemeral 32768-61439", dpsock_flowf_ephemeral(x, 32768, 61439), 0, 2 * 2 * 1,
	      2 * 2 * 5);
	model.hi = 61439;
	check_nic("ephemeral 32768-61439", x, rss);
	CALLS("ephemeral 1024-65535", dpsock_flowf_ephemeral(x, 1024, 65535), 0, 2 * 2 * 6,
	      2 * 2 * 3);
	model.lo = 1024;
	model.hi = 65535;
	check_nic("ephemeral 1024-65535", x, rss);
	CALLS("ephemeral 2048-65535", dpsock_flowf_ephemeral(x, 2048, 65535), 0, 0, 2 * 2);
	model.lo = 2048;
	check_nic("ephemeral 2048-65535", x, rss);
	/* c arrives: its TCP 22, a's ports are not its, 5 blocks per protocol */
	CALLS("address c", dpsock_flowf_addr(x, c, true), 0, 1 + 10, 0);
	model.addrs[model.n_addrs++] = c;
	check_nic("address c", x, rss);

	/* refused changes change nothing */
	CALLS("again", dpsock_flowf_addr(x, c, true), -EEXIST, 0, 0);
	CALLS("unknown", dpsock_flowf_group(x, ip(239, 9, 9, 9), false), -ENOENT, 0, 0);
	CALLS("port 0", dpsock_flowf_port(x, IPPROTO_TCP, ANY4, 0, true), -EINVAL, 0, 0);
	CALLS("ICMP", dpsock_flowf_port(x, IPPROTO_ICMP, ANY4, 7, true), -EINVAL, 0, 0);
	CALLS("not a group", dpsock_flowf_group(x, a, true), -EINVAL, 0, 0);
	CALLS("lo > hi", dpsock_flowf_ephemeral(x, 9, 8), -EINVAL, 0, 0);
	CALLS("multicast address", dpsock_flowf_addr(x, g, true), -EINVAL, 0, 0);
	/* validation first: the PMD refuses the third address's rule, none is
	 * created, and the message names the change and the rule */
	refuse_port = 7;
	v0 = n_validate;
	CALLS("refused UDP 7", dpsock_flowf_port(x, IPPROTO_UDP, ANY4, 7, true), -ENOTSUP, 0, 0);
	CHECK(n_validate - v0 == 1, "stops at the first refusal: %u validations",
	      n_validate - v0);
	CHECK(strstr(dpsock_flowf_error(x), "add UDP port 7 on every address") != NULL &&
	      strstr(dpsock_flowf_error(x), "rte_flow_validate") != NULL &&
	      strstr(dpsock_flowf_error(x), "vlan vid is 100 / ipv4 dst is 10.0.0.1 / udp dst is "
				  "7 / end") != NULL &&
	      strstr(dpsock_flowf_error(x), "fake: port refused") != NULL &&
	      strstr(dpsock_flowf_error(x), "of the udp item") != NULL &&
	      strstr(dpsock_flowf_error(x), "rss queues 0 1 2 3 end") != NULL,
	      "message: %s", dpsock_flowf_error(x));
	refuse_port = -1;
	check_nic("after a refused validation", x, rss);
	/* a create fails half-way: what this change created is destroyed */
	create_fails_in = 5;
	CALLS("address d, 6th create fails", dpsock_flowf_addr(x, ip(10, 0, 0, 4), true),
	      -ENOSPC, 6, 5);
	CHECK(strstr(dpsock_flowf_error(x), "rte_flow_create") != NULL &&
	      strstr(dpsock_flowf_error(x), "fake: table full") != NULL, "message: %s",
	      dpsock_flowf_error(x));
	check_nic("after a failed create", x, rss);
	CALLS("address d", dpsock_flowf_addr(x, ip(10, 0, 0, 4), true), 0, 10, 0);
	model.addrs[model.n_addrs++] = ip(10, 0, 0, 4);
	check_nic("address d", x, rss);
	/* a destroy fails: the entry goes, its rule stays stale, the next
	 * change destroys it */
	destroy_fails = 1;
	CALLS("UDP 5000 goes, destroy fails", dpsock_flowf_port(x, IPPROTO_UDP, a, 5000, false),
	      -EBUSY, 0, 1);
	dpsock_flowf_stats(x, &st);
	CHECK(st.stale == 1, "%u stale", st.stale);
	model_port_del(IPPROTO_UDP, a, 5000);
	CALLS("group goes", dpsock_flowf_group(x, g, false), 0, 0, 2);
	model.n_groups = 0;
	check_nic("after a failed destroy", x, rss);
	/* a stale rule needed again is counted again, not re-created */
	destroy_fails = 1;
	CALLS("UDP 5000 on b, destroy fails", dpsock_flowf_port(x, IPPROTO_UDP, b, 5000, true), 0,
	      1, 0);
	CALLS("UDP 5000 on b goes", dpsock_flowf_port(x, IPPROTO_UDP, b, 5000, false), -EBUSY, 0,
	      1);
	CALLS("UDP 5000 on b back", dpsock_flowf_port(x, IPPROTO_UDP, b, 5000, true), 0, 0, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, b, 5000 };
	check_nic("stale rule revived", x, rss);
	/* addresses go: each takes its rules with it */
	CALLS("address a goes", dpsock_flowf_addr(x, a, false), 0, 0, 1 + 10);
	model.addrs[0] = model.addrs[--model.n_addrs];
	check_nic("address a gone", x, rss);
	CALLS("no range", dpsock_flowf_ephemeral(x, 0, 0), 0, 0, 3 * 10);
	model.lo = model.hi = 0;
	check_nic("no range", x, rss);
	/* (its text is the same as the messages'; shown with -v) */
	if (verbose)
		dpsock_flowf_dump(x, stdout);
	dpsock_flowf_close(x);
	CHECK(n_live() == 0, "close leaves %u rules", n_live());
	CHECK(!pattern_bad, "a malformed pattern or handle reached the NIC");
}

/* One queue, untagged, a PMD without has_vlan matching. */
static void
test_backend_queue_untagged(void)
{
	static const uint16_t queues[] = { 5 };
	struct dpsock_flowf_conf conf = {
		.port_id = 0, .queues = queues, .n_queues = 1, .ops = &fake_ops,
	};
	const enum rte_flow_action_type queue = RTE_FLOW_ACTION_TYPE_QUEUE;
	struct dpsock_flowf_stats st;
	struct dpsock_flowf *x;
	char err[512];
	int ret;

	fake_reset();
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x != NULL && ret == 0, "open: %d %s", ret, err);
	if (x == NULL)
		return;
	dpsock_flowf_stats(x, &st);
	CHECK(st.untagged_only && st.failed == 0, "untagged only");
	CALLS("address", dpsock_flowf_addr(x, ip(192, 168, 7, 9), true), 0, 0, 0);
	model.addrs[model.n_addrs++] = ip(192, 168, 7, 9);
	CALLS("UDP 5000", dpsock_flowf_port(x, IPPROTO_UDP, ANY4, 5000, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, ANY4, 5000 };
	CALLS("ephemeral", dpsock_flowf_ephemeral(x, 49152, 65535), 0, 2, 0);
	model.lo = 49152;
	model.hi = 65535;
	check_nic("one queue", x, queue);
	dpsock_flowf_close(x);
	CHECK(n_live() == 0, "close leaves %u rules", n_live());

	/* has_vlan refused: open falls back to ETH without a mask */
	fake_reset();
	refuse_has_vlan = true;
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x != NULL && ret == 0, "open without has_vlan: %d %s", ret, err);
	if (x == NULL)
		return;
	dpsock_flowf_stats(x, &st);
	CHECK(!st.untagged_only && st.failed == 0 && dpsock_flowf_error(x)[0] == '\0',
	      "fell back");
	CALLS("address", dpsock_flowf_addr(x, ip(192, 168, 7, 9), true), 0, 0, 0);
	CALLS("UDP 5000", dpsock_flowf_port(x, IPPROTO_UDP, ANY4, 5000, true), 0, 1, 0);
	model.addrs[model.n_addrs++] = ip(192, 168, 7, 9);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, ANY4, 5000 };
	check_nic("without has_vlan", x, queue);
	dpsock_flowf_close(x);

	/* a PMD that refuses everything: open fails, saying why */
	fake_reset();
	refuse_port = 9;
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x == NULL && ret == -ENOTSUP && strstr(err, "isolated mode") != NULL &&
	      strstr(err, "tcp dst is 9") != NULL, "open refused: %d %s", ret, err);
	conf.n_queues = 0;
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x == NULL && ret == -EINVAL, "no queues: %d", ret);
	dpsock_flowf_close(NULL);
}

/*
 * IPv6 entries over the fake rte_flow calls, next to IPv4 ones, on a port
 * whose RSS hash types name IPv4 alone: the IPv6 rules' action hashes with
 * their IPv6 counterparts, the IPv4 rules' with the port's types as they are.
 */
static void
test_backend6(void)
{
	static const uint16_t queues[] = { 0, 1, 2, 3 };
	const struct dpsock_mc_addr a = ip(10, 0, 0, 1), x6 = ip6("fd00::1"), y6 = ip6("fe80::2");
	const struct dpsock_mc_addr z6 = ip6("fd00::9"), g4 = ip(239, 1, 2, 3);
	const struct dpsock_mc_addr g6 = ip6("ff02::1:3");
	const uint64_t types4 = RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_NONFRAG_IPV4_TCP |
				RTE_ETH_RSS_NONFRAG_IPV4_UDP;
	struct dpsock_flowf_conf conf = {
		.port_id = 1, .queues = queues, .n_queues = 4, .rss_types = types4,
		.ops = &fake_ops,
	};
	const enum rte_flow_action_type rss = RTE_FLOW_ACTION_TYPE_RSS;
	char err[512], types6_note[64], *dump;
	struct dpsock_flowf_stats st;
	struct dpsock_flowf *x;
	size_t dump_len;
	FILE *f;
	int ret;

	fake_reset();
	model.rss4 = types4;
	model.rss6 = types4 | RTE_ETH_RSS_IPV6 | RTE_ETH_RSS_NONFRAG_IPV6_TCP |
		     RTE_ETH_RSS_NONFRAG_IPV6_UDP;
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x != NULL && ret == 0, "open: %d %s", ret, err);
	if (x == NULL)
		return;

	CALLS("address a", dpsock_flowf_addr(x, a, true), 0, 0, 0);
	model.addrs[model.n_addrs++] = a;
	CALLS("ephemeral", dpsock_flowf_ephemeral(x, 49152, 65535), 0, 2, 0);
	model.lo = 49152;
	model.hi = 65535;
	/* an IPv6 address: the ephemeral blocks, TCP and UDP */
	CALLS("address x6", dpsock_flowf_addr(x, x6, true), 0, 2, 0);
	model.addrs[model.n_addrs++] = x6;
	check_nic("address x6", x, rss);
	/* each family's any reaches its own addresses only */
	CALLS("TCP 80 on IPv4's any", dpsock_flowf_port(x, IPPROTO_TCP, ANY4, 80, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_TCP, ANY4, 80 };
	CALLS("TCP 80 on IPv6's any", dpsock_flowf_port(x, IPPROTO_TCP, ANY6, 80, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_TCP, ANY6, 80 };
	CALLS("UDP 53 on x6", dpsock_flowf_port(x, IPPROTO_UDP, x6, 53, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, x6, 53 };
	CALLS("UDP 53 on z6 (not local yet)", dpsock_flowf_port(x, IPPROTO_UDP, z6, 53, true), 0,
	      0, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, z6, 53 };
	/* a link-local address: IPv6's TCP 80 and the blocks */
	CALLS("address y6", dpsock_flowf_addr(x, y6, true), 0, 1 + 2, 0);
	model.addrs[model.n_addrs++] = y6;
	CALLS("IPv6 group", dpsock_flowf_group(x, g6, true), 0, 1, 0);
	model.groups[model.n_groups++] = g6;
	CALLS("IPv4 group", dpsock_flowf_group(x, g4, true), 0, 1, 0);
	model.groups[model.n_groups++] = g4;
	check_nic("both families", x, rss);
	/* z6 arrives: its UDP 53, IPv6's TCP 80, the blocks */
	CALLS("address z6", dpsock_flowf_addr(x, z6, true), 0, 1 + 1 + 2, 0);
	model.addrs[model.n_addrs++] = z6;
	check_nic("address z6", x, rss);
	dpsock_flowf_stats(x, &st);
	/* a: 80, 2 blocks; x6: 80, 53, 2 blocks; y6: 80, 2 blocks; z6: 80, 53,
	 * 2 blocks; 2 groups */
	CHECK(st.rules == 3 + 4 + 3 + 4 + 2 && st.created == st.rules && st.destroyed == 0 &&
	      st.failed == 0, "stats: %u rules, %" PRIu64 " created", st.rules, st.created);

	/* refused changes change nothing */
	CALLS("again", dpsock_flowf_addr(x, x6, true), -EEXIST, 0, 0);
	CALLS("IPv6 port again", dpsock_flowf_port(x, IPPROTO_TCP, ANY6, 80, true), -EEXIST, 0,
	      0);
	CALLS("IPv6 group again", dpsock_flowf_group(x, g6, true), -EEXIST, 0, 0);
	CALLS("unknown address", dpsock_flowf_addr(x, ip6("fd00::77"), false), -ENOENT, 0, 0);
	CALLS("unknown group", dpsock_flowf_group(x, ip6("ff05::2"), false), -ENOENT, 0, 0);
	CALLS("unknown port", dpsock_flowf_port(x, IPPROTO_TCP, ANY6, 81, false), -ENOENT, 0, 0);
	/* (TCP 80 is on IPv4's any and on IPv6's: not on a single address) */
	CALLS("TCP 80 on x6", dpsock_flowf_port(x, IPPROTO_TCP, x6, 80, false), -ENOENT, 0, 0);
	CALLS("address ::", dpsock_flowf_addr(x, ANY6, true), -EINVAL, 0, 0);
	CALLS("address ::ffff:0.0.0.0", dpsock_flowf_addr(x, ANY4, true), -EINVAL, 0, 0);
	CALLS("multicast IPv6 address", dpsock_flowf_addr(x, g6, true), -EINVAL, 0, 0);
	CALLS("multicast IPv4 address", dpsock_flowf_addr(x, g4, true), -EINVAL, 0, 0);
	CALLS("remove address ::", dpsock_flowf_addr(x, ANY6, false), -EINVAL, 0, 0);
	CALLS("IPv6 group, unicast", dpsock_flowf_group(x, x6, true), -EINVAL, 0, 0);
	CALLS("IPv6 group ::", dpsock_flowf_group(x, ANY6, true), -EINVAL, 0, 0);
	CALLS("IPv4 group ::ffff:0.0.0.0", dpsock_flowf_group(x, ANY4, true), -EINVAL, 0, 0);
	/* 255.2.0.1 is no IPv4 group, nor its mapped form (first byte 0) an
	 * IPv6 one: each family is tested by its own rule */
	CALLS("IPv4 group 255.2.0.1", dpsock_flowf_group(x, ip(255, 2, 0, 1), true), -EINVAL, 0,
	      0);
	CALLS("IPv6 port 0", dpsock_flowf_port(x, IPPROTO_UDP, ANY6, 0, true), -EINVAL, 0, 0);
	CALLS("ICMPv6", dpsock_flowf_port(x, IPPROTO_ICMPV6, ANY6, 7, true), -EINVAL, 0, 0);
	check_nic("after the refusals", x, rss);

	/* the PMD refuses an IPv6 rule: the message names the change, the
	 * rule in testpmd's syntax, and the IPv6 rules' action */
	refuse_port = 443;
	CALLS("refused TCP 443", dpsock_flowf_port(x, IPPROTO_TCP, ANY6, 443, true), -ENOTSUP, 0,
	      0);
	snprintf(types6_note, sizeof(types6_note), "RSS types 0x%" PRIx64, model.rss6);
	CHECK(strstr(dpsock_flowf_error(x), "add TCP port 443 on every address (IPv6)") != NULL &&
	      strstr(dpsock_flowf_error(x), "pattern eth has_vlan is 0 / ipv6 dst is fd00::1 / "
				  "tcp dst is 443 / end") != NULL &&
	      strstr(dpsock_flowf_error(x), "of the tcp item") != NULL &&
	      strstr(dpsock_flowf_error(x), types6_note) != NULL,
	      "message: %s", dpsock_flowf_error(x));
	refuse_port = -1;
	/* and a removal names an IPv6 address as inet_ntop writes it */
	destroy_fails = 1;
	CALLS("UDP 53 on z6 goes, destroy fails", dpsock_flowf_port(x, IPPROTO_UDP, z6, 53, false),
	      -EBUSY, 0, 1);
	model_port_del(IPPROTO_UDP, z6, 53);
	CHECK(strstr(dpsock_flowf_error(x), "remove UDP port 53 on fd00::9") != NULL &&
	      strstr(dpsock_flowf_error(x), "ipv6 dst is fd00::9 / udp dst is 53") != NULL,
	      "message: %s", dpsock_flowf_error(x));
	/* (the stale rule goes with the next change) */
	CALLS("IPv6's TCP 80 goes", dpsock_flowf_port(x, IPPROTO_TCP, ANY6, 80, false), 0, 0,
	      1 + 3);
	model_port_del(IPPROTO_TCP, ANY6, 80);
	check_nic("IPv6's TCP 80 gone", x, rss);
	CALLS("address x6 goes", dpsock_flowf_addr(x, x6, false), 0, 0, 1 + 2);
	model.addrs[1] = model.addrs[--model.n_addrs];
	check_nic("address x6 gone", x, rss);
	CALLS("IPv6 group goes", dpsock_flowf_group(x, g6, false), 0, 0, 1);
	model.groups[0] = model.groups[--model.n_groups];
	check_nic("IPv6 group gone", x, rss);
	CALLS("no range", dpsock_flowf_ephemeral(x, 0, 0), 0, 0, 3 * 2);
	model.lo = model.hi = 0;
	check_nic("no range", x, rss);
	/* the dump shows the IPv6 rules' action apart */
	f = open_memstream(&dump, &dump_len);
	if (f != NULL) {
		dpsock_flowf_dump(x, f);
		fclose(f);
		CHECK(strstr(dump, "IPv6 rules: actions rss queues 0 1 2 3 end / end") != NULL &&
		      strstr(dump, types6_note) != NULL, "dump: %s", dump);
		free(dump);
	}
	dpsock_flowf_close(x);
	CHECK(n_live() == 0, "close leaves %u rules", n_live());
	CHECK(!pattern_bad, "a malformed pattern or handle reached the NIC");

	/* types of both families: one action for both, said once */
	fake_reset();
	conf.rss_types = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP;
	model.rss4 = model.rss6 = conf.rss_types;
	x = dpsock_flowf_open_conf(&conf, &ret, err, sizeof(err));
	CHECK(x != NULL && ret == 0, "open: %d %s", ret, err);
	if (x == NULL)
		return;
	CALLS("address x6", dpsock_flowf_addr(x, x6, true), 0, 0, 0);
	model.addrs[model.n_addrs++] = x6;
	CALLS("UDP 53 on IPv6's any", dpsock_flowf_port(x, IPPROTO_UDP, ANY6, 53, true), 0, 1, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, ANY6, 53 };
	CALLS("UDP 53 on IPv4's any", dpsock_flowf_port(x, IPPROTO_UDP, ANY4, 53, true), 0, 0, 0);
	model.ports[model.n_ports++] = (struct dpsock_flow_port){ IPPROTO_UDP, ANY4, 53 };
	check_nic("IPv6 with both families' types", x, rss);
	f = open_memstream(&dump, &dump_len);
	if (f != NULL) {
		dpsock_flowf_dump(x, f);
		fclose(f);
		CHECK(strstr(dump, "IPv6 rules") == NULL &&
		      strstr(dump, "ipv6 dst is fd00::1 / udp dst is 53") != NULL, "dump: %s",
		      dump);
		free(dump);
	}
	CALLS("IPv4's UDP 53 goes", dpsock_flowf_port(x, IPPROTO_UDP, ANY4, 53, false), 0, 0, 0);
	CALLS("IPv6's UDP 53 goes", dpsock_flowf_port(x, IPPROTO_UDP, ANY6, 53, false), 0, 0, 1);
	dpsock_flowf_close(x);
	CHECK(n_live() == 0, "close leaves %u rules", n_live());
}

int
main(int argc, char **argv)
{
	/* dpsock's log types, quiet unless -v: the refusals below are expected */
	verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	dpsock_log_init(verbose ? RTE_LOG_DEBUG : RTE_LOG_EMERG);
	srand(1);
	test_ranges();
	test_rule_list();
	test_rule_list6();
	test_items();
	test_items6();
	test_actions();
	test_rss_types6();
	test_backend();
	test_backend_queue_untagged();
	test_backend6();
	printf("flow_filter_test: %u passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
