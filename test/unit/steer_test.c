/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Steering backends without a NIC.
 *
 * 1. The Toeplitz hash against the published RSS verification vectors
 *    (Microsoft's key and IPv4/TCP and IPv6/TCP tuples), so the tuple
 *    layout and byte order the toeplitz backend uses are those of real NICs.
 * 2. The toeplitz backend on a fake port (the default key, a 128-entry RETA
 *    spreading over two queues), for an IPv4 and an IPv6 connection: every
 *    port it claims for worker k hashes, for the answering packet, to a
 *    RETA entry holding queue k; ports are exclusive between workers and
 *    come back when released.
 * 3. The software backend and the RX owner lookup: a segment for a port
 *    worker 1 claimed, received by worker 0, is handed to worker 1;
 *    fragments of one datagram all go to one worker.
 * 4. A UDP client's port (dpsock_steer_claim_any) on the toeplitz
 *    backend: exclusive, released, and its datagrams handed to the owner.
 * No PMD available here exposes a RETA, so this is where the toeplitz
 * backend is checked.
 */

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "core/log_priv.h"
#include "check.h"

static const uint8_t ms_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static uint32_t
ip(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	return rte_cpu_to_be_32((uint32_t)a << 24 | b << 16 | c << 8 | d);
}

static void
test_vectors(void)
{
	/* destination, source, expected IPv4+TCP hash */
	static const struct {
		uint8_t dst[4];
		uint16_t dport;
		uint8_t src[4];
		uint16_t sport;
		uint32_t hash;
	} v[] = {
		{ { 161, 142, 100, 80 }, 1766, { 66, 9, 149, 187 }, 2794, 0x51ccc178 },
		{ { 65, 69, 140, 83 }, 4739, { 199, 92, 111, 2 }, 14230, 0xc626b0ea },
		{ { 12, 22, 207, 184 }, 38024, { 24, 19, 198, 95 }, 12898, 0x5c2b394a },
		{ { 209, 142, 163, 6 }, 2217, { 38, 27, 205, 30 }, 48228, 0xafc7327f },
		{ { 202, 188, 127, 2 }, 1303, { 153, 39, 163, 191 }, 44251, 0x10e828a2 },
	};
	unsigned int i;

	for (i = 0; i < RTE_DIM(v); i++) {
		uint32_t h = dpsock_rss_hash_ipv4_l4(
			ms_key, ip(v[i].src[0], v[i].src[1], v[i].src[2], v[i].src[3]),
			ip(v[i].dst[0], v[i].dst[1], v[i].dst[2], v[i].dst[3]),
			rte_cpu_to_be_16(v[i].sport), rte_cpu_to_be_16(v[i].dport));

		CHECK(h == v[i].hash, "vector %u: hash 0x%08x, want 0x%08x", i, h, v[i].hash);
	}
}

/* The same verification suite's IPv6/TCP tuples. */
static void
test_vectors6(void)
{
	static const struct {
		const char *dst;
		uint16_t dport;
		const char *src;
		uint16_t sport;
		uint32_t hash;
	} v[] = {
		{ "3ffe:2501:200:3::1", 1766, "3ffe:2501:200:1fff::7", 2794, 0x40207d3d },
		{ "ff02::1", 4739, "3ffe:501:8::260:97ff:fe40:efab", 14230, 0xdde51bbf },
		{ "fe80::200:f8ff:fe21:67cf", 38024, "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251,
		  0x02d1feef },
	};
	unsigned int i;

	for (i = 0; i < RTE_DIM(v); i++) {
		uint8_t src[16], dst[16];
		uint32_t h;

		CHECK(inet_pton(AF_INET6, v[i].src, src) == 1 && inet_pton(AF_INET6, v[i].dst, dst) == 1,
		      "vector6 %u: addresses", i);
		h = dpsock_rss_hash_ipv6_l4(ms_key, src, dst, rte_cpu_to_be_16(v[i].sport),
					    rte_cpu_to_be_16(v[i].dport));
		CHECK(h == v[i].hash, "vector6 %u: hash 0x%08x, want 0x%08x", i, h, v[i].hash);
	}
}

/* A daemon with one fake port and two workers, enough for steer.c. */
static struct dpsock_stack *
fake_stack(const char *steering, bool rss)
{
	struct dpsock_stack *d = calloc(1, sizeof(*d));
	struct dpsock_port *p = &d->ports[0];
	unsigned int i;

	dpsock_config_defaults(&d->conf);
	snprintf(d->conf.steering, sizeof(d->conf.steering), "%s", steering);
	d->n_ports = 1;
	d->n_workers = 2;
	d->workers = rte_zmalloc(NULL, 2 * sizeof(*d->workers), RTE_CACHE_LINE_SIZE);
	for (i = 0; i < 2; i++) {
		d->workers[i].d = d;
		d->workers[i].idx = i;
		d->workers[i].queue = i;
	}
	snprintf(p->name, sizeof(p->name), "fake0");
	p->n_queues = 2;
	if (rss) {
		p->rss_hf = RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP;
		p->caps.rss_key_size = sizeof(ms_key);
		p->caps.reta_size = 128;
		memcpy(p->rss_key, ms_key, sizeof(ms_key));
		for (i = 0; i < 128; i++)
			p->reta[i] = i % 2;
	}
	return d;
}

static void
free_stack(struct dpsock_stack *d)
{
	dpsock_steer_teardown(d);
	rte_free(d->workers);
	free(d);
}

/* The hash of the answer to a connection laddr:lp -> raddr:rport. */
static uint32_t
answer_hash(const struct dpsock_mc_addr *laddr, const struct dpsock_mc_addr *raddr,
	    uint16_t rport, uint16_t lp)
{
	if (dpsock_mc_addr_is4(*raddr))
		return dpsock_rss_hash_ipv4_l4(ms_key, raddr->w[3], laddr->w[3], rport,
					       rte_cpu_to_be_16(lp));
	return dpsock_rss_hash_ipv6_l4(ms_key, (const uint8_t *)raddr->w,
				       (const uint8_t *)laddr->w, rport, rte_cpu_to_be_16(lp));
}

/* The toeplitz backend for a connection of either family (v6: IPv6). */
static void
test_toeplitz(bool v6)
{
	struct dpsock_stack *d = fake_stack("toeplitz", true);
	struct dpsock_mc_addr laddr = dpsock_mc_addr4(ip(198, 18, 0, 1));
	struct dpsock_mc_addr raddr = dpsock_mc_addr4(ip(198, 18, 0, 2));
	uint16_t rport = rte_cpu_to_be_16(80), got[2][200];
	unsigned int k, i, j;

	if (v6) {
		uint8_t a[16];

		inet_pton(AF_INET6, "fd00:198:18::1", a);
		laddr = dpsock_mc_addr6(a);
		inet_pton(AF_INET6, "fd00:198:18::2", a);
		raddr = dpsock_mc_addr6(a);
	}

	CHECK(dpsock_steer_setup(d) == 0, "setup");
	CHECK(d->steer != NULL && strcmp(d->steer->name, "toeplitz") == 0, "backend %s",
	      d->steer ? d->steer->name : "none");
	for (k = 0; k < 2; k++)
		for (i = 0; i < 200; i++) {
			uint16_t lp = d->steer->claim_port(&d->workers[k], &laddr, &raddr, rport);
			uint32_t h;

			got[k][i] = lp;
			CHECK(lp >= d->eph_min && lp <= d->eph_max, "port %u outside range", lp);
			h = answer_hash(&laddr, &raddr, rport, lp);
			CHECK(d->ports[0].reta[h % 128] == k,
			      "%s: worker %u got port %u whose answer hashes to queue %u",
			      v6 ? "IPv6" : "IPv4", k, lp, d->ports[0].reta[h % 128]);
			CHECK(d->port_owner[lp] == k + 1, "port %u owner %u", lp, d->port_owner[lp]);
		}
	for (i = 0; i < 200; i++)
		for (j = 0; j < 200; j++)
			CHECK(got[0][i] != got[1][j], "port %u given to both workers", got[0][i]);
	for (k = 0; k < 2; k++)
		for (i = 0; i < 200; i++)
			d->steer->release_port(&d->workers[k], got[k][i]);
	for (i = d->eph_min; i <= d->eph_max; i++)
		CHECK(d->port_owner[i] == 0, "port %u still owned after release", i);
	free_stack(d);
}

static struct rte_mbuf *
frame(struct rte_mempool *mp, uint8_t proto, uint16_t dport, uint16_t frag, uint16_t id)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	struct rte_ipv4_hdr *iph;
	char *b = rte_pktmbuf_append(m, 14 + 20 + 8);

	memset(b, 0, 42);
	iph = (struct rte_ipv4_hdr *)(b + 14);
	iph->version_ihl = 0x45;
	iph->next_proto_id = proto;
	iph->fragment_offset = rte_cpu_to_be_16(frag);
	iph->packet_id = rte_cpu_to_be_16(id);
	iph->src_addr = ip(198, 18, 0, 2);
	iph->dst_addr = ip(198, 18, 0, 1);
	*(uint16_t *)(b + 34 + 2) = rte_cpu_to_be_16(dport);
	return m;
}

static void
test_software_and_owner(void)
{
	struct dpsock_stack *d = fake_stack("auto", false);
	struct rte_mempool *mp = rte_pktmbuf_pool_create("steer_test", 63, 0, 0, 256, SOCKET_ID_ANY);
	struct dpsock_mc_addr la, ra;
	struct rte_mbuf *m;
	uint16_t lp;
	int o0, o1;
	unsigned int id, same = 0;

	CHECK(mp != NULL, "pool");
	CHECK(dpsock_steer_setup(d) == 0, "setup");
	CHECK(strcmp(d->steer->name, "software") == 0, "auto without RSS chose %s", d->steer->name);
	la = dpsock_mc_addr4(ip(198, 18, 0, 1));
	ra = dpsock_mc_addr4(ip(198, 18, 0, 2));
	lp = d->steer->claim_port(&d->workers[1], &la, &ra, rte_cpu_to_be_16(80));
	CHECK(lp != 0, "claim");
	m = frame(mp, IPPROTO_TCP, lp, 0, 1);
	CHECK(dpsock_steer_owner(&d->workers[0], m) == 1, "worker 0 keeps a segment for worker 1's port");
	CHECK(dpsock_steer_owner(&d->workers[1], m) == -1, "worker 1 hands its own segment away");
	rte_pktmbuf_free(m);
	m = frame(mp, IPPROTO_TCP, 80, 0, 1);
	CHECK(dpsock_steer_owner(&d->workers[0], m) == -1, "a listening port's segment moved");
	rte_pktmbuf_free(m);
	d->steer->release_port(&d->workers[1], lp);
	m = frame(mp, IPPROTO_TCP, lp, 0, 1);
	CHECK(dpsock_steer_owner(&d->workers[0], m) == -1, "released port still steered");
	rte_pktmbuf_free(m);
	/* every fragment of a datagram has one owner, whoever receives it */
	for (id = 0; id < 64; id++) {
		struct rte_mbuf *first = frame(mp, IPPROTO_UDP, 9, RTE_IPV4_HDR_MF_FLAG, id);
		struct rte_mbuf *last = frame(mp, IPPROTO_UDP, 0, 185, id);

		o0 = dpsock_steer_owner(&d->workers[0], first);
		o1 = dpsock_steer_owner(&d->workers[1], last);
		/* owner as an index: -1 means "the worker asking" */
		CHECK((o0 < 0 ? 0 : o0) == (o1 < 0 ? 1 : o1), "datagram %u split: %d / %d", id, o0, o1);
		same += (o0 < 0);
		rte_pktmbuf_free(first);
		rte_pktmbuf_free(last);
	}
	CHECK(same > 0 && same < 64, "fragments all on one worker (%u of 64 on worker 0)", same);
	rte_mempool_free(mp);
	free_stack(d);
}

/* A UDP client's port (DPSOCK_UDP_OWNED): whatever the backend (toeplitz
 * here), any free port, exclusive, and its datagrams handed to the owner. */
static void
test_claim_any(void)
{
	struct dpsock_stack *d = fake_stack("toeplitz", true);
	struct rte_mempool *mp = rte_pktmbuf_pool_create("steer_any", 63, 0, 0, 256, SOCKET_ID_ANY);
	uint16_t got[2][64];
	struct rte_mbuf *m;
	unsigned int k, i, j;

	CHECK(mp != NULL, "pool");
	CHECK(dpsock_steer_setup(d) == 0, "setup");
	for (k = 0; k < 2; k++)
		for (i = 0; i < 64; i++) {
			got[k][i] = dpsock_steer_claim_any(&d->workers[k]);
			CHECK(got[k][i] >= d->eph_min && got[k][i] <= d->eph_max, "port %u outside range",
			      got[k][i]);
			CHECK(d->port_owner[got[k][i]] == k + 1, "port %u owner %u", got[k][i],
			      d->port_owner[got[k][i]]);
		}
	for (i = 0; i < 64; i++)
		for (j = 0; j < 64; j++)
			CHECK(got[0][i] != got[1][j], "port %u given to both workers", got[0][i]);
	m = frame(mp, IPPROTO_UDP, got[1][0], 0, 1);
	CHECK(dpsock_steer_owner(&d->workers[0], m) == 1, "worker 0 keeps a datagram for worker 1's port");
	CHECK(dpsock_steer_owner(&d->workers[1], m) == -1, "worker 1 hands its own datagram away");
	rte_pktmbuf_free(m);
	for (k = 0; k < 2; k++)
		for (i = 0; i < 64; i++)
			d->steer->release_port(&d->workers[k], got[k][i]);
	m = frame(mp, IPPROTO_UDP, got[1][0], 0, 1);
	CHECK(dpsock_steer_owner(&d->workers[0], m) == -1, "released port still steered");
	rte_pktmbuf_free(m);
	for (i = d->eph_min; i <= d->eph_max; i++)
		CHECK(d->port_owner[i] == 0, "port %u still owned after release", i);
	rte_mempool_free(mp);
	free_stack(d);
}

/* EAL leaves its runtime directory behind; registered before EAL starts,
 * this runs after EAL's own exit handlers have emptied it (as dpsockd's) */
static char runtime_dir[PATH_MAX];

static void
remove_runtime_dir(void)
{
	if (runtime_dir[0] != '\0')
		rmdir(runtime_dir);
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "-m", "64", "--no-pci", "--no-shconf",
			"--log-level=lib.eal:error", "--file-prefix=steer_test", NULL };

	atexit(remove_runtime_dir);
	if (rte_eal_init(RTE_DIM(eal) - 1, eal) < 0) {
		fprintf(stderr, "steer_test: EAL failed to start; skipping\n");
		return 77;
	}
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	dpsock_log_init(RTE_LOG_WARNING);
	test_vectors();
	test_vectors6();
	test_toeplitz(false);
	test_toeplitz(true);
	test_software_and_owner();
	test_claim_any();
	rte_eal_cleanup();
	if (failures) {
		fprintf(stderr, "steer_test: %d check(s) failed\n", failures);
		return 1;
	}
	printf("steer_test: all checks passed\n");
	return 0;
}
