/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stack under the fuzz harnesses (fuzz_stack.h): dpsock_init, one
 * worker on the harness's thread, one net_ring port.
 *
 * What dpsock_run does before its loop (stack.c: setup_ports, steering,
 * stats, worker init) is repeated here for the single port, because the
 * harness, not dpsock_run, owns the loop: libFuzzer calls it once per input.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanitizer/lsan_interface.h>

#include <rte_eal.h>
#include <rte_memory.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "core/lwip_compat_priv.h"

#include "lwip/etharp.h"
#include "lwip/igmp.h"
#include "lwip/ip4_frag.h"
#include "lwip/ip6_frag.h"
#include "lwip/nd6.h"
#include "lwip/priv/nd6_priv.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"

#include "dpsock_lwip.h"

#include "mcast/mcast_priv.h"
#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "instance_priv.h"
#include "netview/netview_priv.h"

#include "fuzz_check.h"
#include "fuzz_stack.h"

/* rte_eth_from_rings names its port net_ring_<name> */
#define RING_PORT "fuzz0"
#define PORT_NAME "net_ring_" RING_PORT
#define RING_SIZE 1024

struct fuzz_seen fuzz_seen;
const uint8_t fuzz_peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
uint8_t fuzz_port_mac[6];
static const uint8_t local_ip6[16] = FUZZ_LOCAL_IP6, peer_ip6[16] = FUZZ_PEER_IP6;

/* lwip_alloc_asan.c */
void fuzz_lwip_describe_live(void);

static struct dpsock_stack *d;
static struct dpsock_worker *w;
static struct rte_ring *rx_ring, *tx_ring;
static unsigned int pool_size;

struct dpsock_worker *
fuzz_worker(void)
{
	return w;
}

static void
die(const char *what, const char *why)
{
	fprintf(stderr, "fuzz stack: %s: %s\n", what, why);
	abort();
}

static void
stats_destroy(void)
{
	dpsock_stats_destroy(d);
}

/* The config file dpsock_init reads: the harness's port and small pools,
 * then the harness's own keys. */
static void
write_config(const char *path, const char *extra)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		die(path, strerror(errno));
	fprintf(f,
		"name = \"fuzz%d\";\n"
		"runtime_dir = \"/tmp/dpsock-fuzz-%d\";\n"
		"log = { level = \"error\"; };\n"
		"memory = { mbufs = 4095; mbuf_cache = 32; rx_desc = 1024; tx_desc = 1024;\n"
		"           steer_ring = 64; lwip_mb = 64; };\n"
		"stats = { socket_slots = 64; };\n"
		"tcp = { max_connections = 64; };\n"
		"interfaces = ( { port = \"" PORT_NAME "\"; address = \"198.18.0.1/24\";\n"
		"                 address6 = \"fd00:198:18::1/64\";\n"
		"                 gateway = \"198.18.0.254\"; mtu = 1500; } );\n"
		"%s\n", (int)getpid(), (int)getpid(), extra ? extra : "");
	if (fclose(f) != 0)
		die(path, strerror(errno));
}

static void
setup_port(void)
{
	const struct dpsock_config *c = &d->conf;
	struct dpsock_port *p = &d->ports[0];
	char err[512];
	int id;

	rx_ring = rte_ring_create("fuzz_rx", RING_SIZE, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	tx_ring = rte_ring_create("fuzz_tx", RING_SIZE, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (rx_ring == NULL || tx_ring == NULL)
		die("rings", rte_strerror(rte_errno));
	id = rte_eth_from_rings(RING_PORT, &rx_ring, 1, &tx_ring, 1, 0);
	if (id < 0)
		die("rte_eth_from_rings", rte_strerror(rte_errno));
	if (dpsock_port_lookup(c->ifaces[0].port, &p->port_id, err, sizeof(err)) != 0 ||
	    dpsock_port_probe(p, err, sizeof(err)) != 0)
		die("port", err);
	d->n_ports = 1;
	d->port_idx[p->port_id] = 0;
	p->pool = rte_pktmbuf_pool_create("fuzz_mbufs", c->mbufs, c->mbuf_cache,
					  dpsock_netif_mbuf_priv_size(), RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	if (p->pool == NULL)
		die("mbuf pool", rte_strerror(rte_errno));
	pool_size = p->pool->size;
	if (dpsock_port_start(p, 1, c->ifaces[0].mtu, c->rx_desc, c->tx_desc, p->pool, err,
			      sizeof(err)) != 0)
		die("port start", err);
	memcpy(fuzz_port_mac, p->mac.addr_bytes, 6);
}

/* LeakSanitizer scans malloc'd memory, globals, stacks and TLS for pointers,
 * not DPDK's memory: the workers array, the netifs inside it and everything
 * they point to would look leaked. Scan DPDK's segments too. */
static int
lsan_root(const struct rte_memseg_list *msl, const struct rte_memseg *ms, size_t len, void *arg)
{
#ifdef FUZZ_ASAN
	__lsan_register_root_region(ms->addr, len);
#endif
	return 0;
}

void
fuzz_stack_init(const char *extra_conf, const struct dpsock_app *app)
{
	char conf_path[64], err[512];
	/* EAL without hugepages, PCI, telemetry; IOVA as VA so that lwIP's
	 * frames are lent to the port (netif.c's zero-copy TX) */
	char *argv[] = {
		"fuzz", "-l", "0", "--no-huge", "-m", "64", "--no-pci", "--no-telemetry",
		"--iova-mode=va", "--log-level=*:error", "--", "-f", conf_path, NULL,
	};
	cpu_set_t cpus;
	int ret, have_cpus;

	snprintf(conf_path, sizeof(conf_path), "/tmp/dpsock-fuzz-%d.conf", (int)getpid());
	write_config(conf_path, extra_conf);
	have_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
	ret = dpsock_init((int)RTE_DIM(argv) - 1, argv);
	unlink(conf_path);
	if (ret < 0)
		die("dpsock_init", "failed (messages above)");
	/* EAL pins the main lcore to CPU 0: every harness, and every test of
	 * the suite running one, would then share that CPU while the others
	 * idle. The harness is not a poll-mode worker; give it back the CPUs
	 * it started with (threads it starts later inherit them). */
	if (have_cpus && sched_setaffinity(0, sizeof(cpus), &cpus) != 0)
		die("sched_setaffinity", strerror(errno));
	/* dpsock_init's SIGINT/SIGTERM handlers ask the stack to stop (the
	 * preload server then stops releasing groups): here they end the
	 * fuzzer, as usual */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	rte_memseg_contig_walk(lsan_root, NULL);
	d = dpsock_stack_get();
	if (d->n_workers != 1 || d->main_worker != 0)
		die("workers", "expected the main lcore alone");
	w = &d->workers[0];
	setup_port();
	if (dpsock_steer_setup(d) != 0)
		die("steering", "set-up failed");
	ret = dpsock_stats_create(d, err, sizeof(err));
	if (ret != 0)
		die("stats segment", err);
	atexit(stats_destroy);
	w->stats = &d->stats->workers[0];
	/* as dpsock_run: the multicast registry before the workers */
	ret = dpsock_mcast_init(d);
	if (ret != 0)
		die("multicast registry", strerror(-ret));
	/* as dpsock_run: the net view (addresses, routes) before the workers */
	ret = dpsock_netview_init(d);
	if (ret != 0)
		die("net view", strerror(-ret));
	d->app = app;
	d->app_arg = NULL;
	/* as dpsock_run: the app's set-up before its workers' */
	if (app->main_init != NULL) {
		ret = app->main_init(NULL);
		if (ret != 0)
			die("app set-up", strerror(ret < 0 ? -ret : ret));
	}
	ret = dpsock_worker_init(w);
	if (ret != 0)
		die("worker init", strerror(-ret));
	w->init_done = 1;
	__atomic_store_n(&d->stats->running, 1, __ATOMIC_RELEASE);
}

/* ---- frames in --------------------------------------------------------- */

static void
ext_free(void *addr, void *opaque)
{
	free(addr);
	free(opaque);
}

bool
fuzz_stack_rx(const uint8_t *frame, size_t len, uint64_t ol_flags, unsigned int segs)
{
	struct rte_mbuf *head = NULL, *tail = NULL;
	size_t off = 0, piece;
	unsigned int i;

	if (len == 0 || len > UINT16_MAX)
		return false;
	if (segs < 1)
		segs = 1;
	if (segs > 4)
		segs = 4;
	if (segs > len)
		segs = (unsigned int)len;
	piece = len / segs;
	for (i = 0; i < segs; i++) {
		size_t n = i + 1 == segs ? len - off : piece;
		struct rte_mbuf_ext_shared_info *sh = malloc(sizeof(*sh));
		void *buf = malloc(n);
		struct rte_mbuf *m = rte_pktmbuf_alloc(d->ports[0].pool);

		if (sh == NULL || buf == NULL || m == NULL) {
			free(sh);
			free(buf);
			rte_pktmbuf_free(m);
			rte_pktmbuf_free(head);
			return false;
		}
		memcpy(buf, frame + off, n);
		sh->free_cb = ext_free;
		sh->fcb_opaque = sh;
		rte_mbuf_ext_refcnt_set(sh, 1);
		rte_pktmbuf_attach_extbuf(m, buf, (rte_iova_t)(uintptr_t)buf, (uint16_t)n, sh);
		m->data_len = (uint16_t)n;
		m->pkt_len = (uint32_t)n;
		if (head == NULL) {
			head = m;
		} else {
			tail->next = m;
			head->nb_segs++;
			head->pkt_len += (uint32_t)n;
		}
		tail = m;
		off += n;
	}
	head->ol_flags |= ol_flags;
	head->port = d->ports[0].port_id;
	if (rte_ring_enqueue(rx_ring, head) != 0) {
		rte_pktmbuf_free(head);
		return false;
	}
	return true;
}

/* ---- frames out ---------------------------------------------------------- */

static uint16_t
cksum(const void *p, size_t len, uint32_t sum)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* A TCP segment the stack sent, over IPv4 or IPv6 (sum: its pseudo-header's
 * sum; offloaded: the port computes its checksum); its next sequence number
 * and ports are what frame records answer (fuzz_seen). */
static void
check_tx_tcp(const uint8_t *l4, uint32_t l4len, uint32_t sum, bool offloaded)
{
	uint32_t doff, seq, next;

	FUZZ_CHECK(l4len >= 20, "TX TCP segment of %u bytes", l4len);
	doff = (uint32_t)(l4[12] >> 4) * 4;
	FUZZ_CHECK(doff >= 20 && doff <= l4len, "TX TCP data offset %u", doff);
	if (!offloaded)
		FUZZ_CHECK(cksum(l4, l4len, sum) == 0xffff, "TX TCP checksum");
	seq = (uint32_t)l4[4] << 24 | (uint32_t)l4[5] << 16 | (uint32_t)l4[6] << 8 | l4[7];
	next = seq + (l4len - doff) + !!(l4[13] & RTE_TCP_SYN_FLAG) +
	       !!(l4[13] & RTE_TCP_FIN_FLAG);
	if (!(l4[13] & RTE_TCP_RST_FLAG)) {
		fuzz_seen.tcp_next = next;
		fuzz_seen.tcp_sport = (uint16_t)(l4[0] << 8 | l4[1]);
		fuzz_seen.tcp_dport = (uint16_t)(l4[2] << 8 | l4[3]);
	}
}

/* What every IPv6 packet the stack sends must be: ip its fixed header, n
 * bytes from there to the end of the frame (len bytes). lwIP puts no
 * extension header before TCP, UDP or ICMPv6 but a fragment header, and a
 * fragment's checksum covers the whole datagram: the L4 checks are for
 * what follows the fixed header directly. Neighbour discovery is ICMPv6. */
static void
check_tx6(const uint8_t *ip, uint32_t n, uint32_t len)
{
	const struct dpsock_port_caps *caps = &d->ports[0].caps;
	const uint8_t *l4 = ip + 40;
	uint32_t plen, sum;

	FUZZ_CHECK(n >= 40 && ip[0] >> 4 == 6, "TX IPv6 header");
	plen = (uint32_t)ip[4] << 8 | ip[5];
	FUZZ_CHECK(40 + plen == n, "TX IPv6 payload length %u in a %u-byte frame", plen, len);
	FUZZ_CHECK(ip[7] != 0, "TX IPv6 hop limit 0");
	/* the pseudo-header: addresses, upper-layer length, next header */
	sum = cksum(ip + 8, 32, (uint32_t)ip[6] + plen);
	if (ip[6] == IPPROTO_TCP) {
		check_tx_tcp(l4, plen, sum, caps->tx_tcp_cksum);
	} else if (ip[6] == IPPROTO_UDP) {
		FUZZ_CHECK(plen >= 8 && ((uint32_t)l4[4] << 8 | l4[5]) == plen,
			   "TX UDP length (IPv6)");
		/* over IPv6 a UDP checksum is mandatory: 0 is not "none" */
		if (!caps->tx_udp_cksum)
			FUZZ_CHECK((l4[6] | l4[7]) != 0 && cksum(l4, plen, sum) == 0xffff,
				   "TX UDP checksum (IPv6)");
	} else if (ip[6] == IPPROTO_ICMPV6) {
		FUZZ_CHECK(plen >= 4 && cksum(l4, plen, sum) == 0xffff, "TX ICMPv6 checksum");
	}
}

/* What every frame the stack sends must be. */
static void
check_tx(const uint8_t *f, uint32_t len)
{
	const struct dpsock_port_caps *caps = &d->ports[0].caps;
	uint16_t tci = d->ports[0].vlan_tci;
	uint32_t ihl, tot, l4len, sum, l2 = tci != 0 ? 18 : 14;
	const uint8_t *ip, *l4;
	uint16_t type;

	FUZZ_CHECK(len >= l2 && len <= l2 + d->ports[0].mtu, "TX frame of %u bytes", len);
	FUZZ_CHECK(memcmp(f + 6, fuzz_port_mac, 6) == 0, "TX frame from another MAC");
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (tci != 0) {
		/* on a VLAN: every frame tagged with the interface's tag */
		FUZZ_CHECK(type == RTE_ETHER_TYPE_VLAN && (uint16_t)(f[14] << 8 | f[15]) == tci,
			   "TX frame not tagged %#x (ethertype %#x)", tci, type);
		type = (uint16_t)(f[16] << 8 | f[17]);
	}
	if (type == RTE_ETHER_TYPE_ARP) {
		FUZZ_CHECK(len >= l2 + 28, "ARP frame of %u bytes", len);
		return;
	}
	if (type == RTE_ETHER_TYPE_IPV6) {
		check_tx6(f + l2, len - l2, len);
		return;
	}
	FUZZ_CHECK(type == RTE_ETHER_TYPE_IPV4, "TX ethertype %#x", type);
	ip = f + l2;
	FUZZ_CHECK(len >= l2 + 20 && ip[0] >> 4 == 4 && (ip[0] & 0xf) >= 5, "TX IPv4 header");
	ihl = (ip[0] & 0xfu) * 4;
	tot = (uint32_t)ip[2] << 8 | ip[3];
	FUZZ_CHECK(tot >= ihl && l2 + tot <= len, "TX IPv4 total length %u in a %u-byte frame",
		   tot, len);
	if (!caps->tx_ip_cksum)
		FUZZ_CHECK(cksum(ip, ihl, 0) == 0xffff, "TX IPv4 header checksum");
	if ((ip[6] & 0x3f) != 0 || ip[7] != 0)
		return; /* a fragment: its L4 checksum covers the whole datagram */
	l4 = ip + ihl;
	l4len = tot - ihl;
	sum = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 | ip[15]) +
	      (uint32_t)(ip[16] << 8 | ip[17]) + (uint32_t)(ip[18] << 8 | ip[19]) + ip[9] + l4len;
	if (ip[9] == IPPROTO_TCP) {
		check_tx_tcp(l4, l4len, sum, caps->tx_tcp_cksum);
	} else if (ip[9] == IPPROTO_UDP) {
		FUZZ_CHECK(l4len >= 8 && ((uint32_t)l4[4] << 8 | l4[5]) == l4len,
			   "TX UDP length");
		if (!caps->tx_udp_cksum && (l4[6] | l4[7]) != 0)
			FUZZ_CHECK(cksum(l4, l4len, sum) == 0xffff, "TX UDP checksum");
	} else if (ip[9] == IPPROTO_ICMP) {
		FUZZ_CHECK(cksum(l4, l4len, 0) == 0xffff, "TX ICMP checksum");
	}
}

static void
tx_drain(void)
{
	static uint8_t buf[UINT16_MAX + 1];
	struct rte_mbuf *m[64];
	unsigned int n, i;

	while ((n = rte_ring_dequeue_burst(tx_ring, (void **)m, RTE_DIM(m), NULL)) > 0) {
		for (i = 0; i < n; i++) {
			const uint8_t *f = rte_pktmbuf_read(m[i], 0, m[i]->pkt_len, buf);

			FUZZ_CHECK(f != NULL && m[i]->pkt_len <= sizeof(buf), "TX mbuf chain");
			check_tx(f, m[i]->pkt_len);
			fuzz_seen.frames++;
			rte_pktmbuf_free(m[i]);
		}
	}
}

void
fuzz_stack_poll(unsigned int n)
{
	while (n-- > 0) {
		dpsock_worker_poll(w);
		tx_drain();
	}
}

/* lwIP's clock (sys_now, linked with --wrap): virtual, so that its timers
 * fire when an input says so, the same way every time the input runs. An
 * input may move it by at most STEP_BUDGET timer periods (about 100 s of
 * lwIP time: SYN retries, RTO back-off, keepalive, TIME_WAIT all run out);
 * beyond, a long input costs the fuzzer time and finds nothing new. */
#define STEP_BUDGET 4096
static uint32_t now_ms = 1000;
static unsigned int steps_left = STEP_BUDGET;

uint32_t __wrap_sys_now(void);

uint32_t
__wrap_sys_now(void)
{
	return now_ms;
}

void
fuzz_stack_timers(unsigned int n)
{
	while (n-- > 0 && steps_left > 0) {
		steps_left--;
		now_ms += TCP_TMR_INTERVAL;
		sys_check_timeouts();
	}
	fuzz_stack_poll(1);
}

/* ---- frame records (the harnesses' input format) ------------------------ */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* fix_frame for an IPv6 packet (len >= 54): no header checksum; the ports,
 * ack and checksum of a TCP, UDP or ICMPv6 header right after the fixed
 * header (behind an extension header they are the fuzzer's). */
static void
fix_frame6(uint8_t *f, size_t len, uint8_t flags, uint8_t mode)
{
	uint8_t *ip = f + 14, *l4 = ip + 40, nh;
	uint32_t plen, l4len, ph;

	if (mode & 16) {
		memcpy(ip + 8, peer_ip6, 16);
		memcpy(ip + 24, local_ip6, 16);
	}
	if (flags & 1)
		put16(ip + 4, (uint16_t)(len - 54));
	plen = (uint32_t)ip[4] << 8 | ip[5];
	l4len = 54 + plen <= len ? plen : 0;
	nh = ip[6];
	if (mode & 32 && l4len >= 4 && (nh == 6 || nh == 17)) {
		put16(l4, fuzz_seen.tcp_dport);
		put16(l4 + 2, fuzz_seen.tcp_sport);
	}
	if (flags & 8 && nh == 6 && l4len >= 12)
		put32(l4 + 8, get32(l4 + 8) + fuzz_seen.tcp_next);
	if (flags & 4 && l4len > 0) {
		/* the pseudo-header: addresses, upper-layer length, next header */
		ph = cksum(ip + 8, 32, nh);
		if (nh == 6 && l4len >= 20) {
			put16(l4 + 16, 0);
			put16(l4 + 16, (uint16_t)~cksum(l4, l4len, ph + l4len));
		} else if (nh == 17 && l4len >= 8) {
			uint32_t ulen = (uint32_t)l4[4] << 8 | l4[5];
			uint16_t c;

			if (ulen < 8 || ulen > l4len)
				ulen = l4len;
			put16(l4 + 6, 0);
			c = (uint16_t)~cksum(l4, ulen, ph + ulen);
			put16(l4 + 6, c != 0 ? c : 0xffff); /* 0 is no checksum, invalid in IPv6 */
		} else if (nh == 58 && l4len >= 4) {
			put16(l4 + 2, 0);
			put16(l4 + 2, (uint16_t)~cksum(l4, l4len, ph + l4len));
		}
	}
}

/* The fix-ups an input asks for, on a private copy of its frame. */
static void
fix_frame(uint8_t *f, size_t len, uint8_t flags, uint8_t mode)
{
	uint8_t *ip = f + 14, *l4;
	uint32_t ihl, tot, l4len, ph;
	bool frag;

	if (mode & 8 && len >= 12) {
		memcpy(f, fuzz_port_mac, 6);
		memcpy(f + 6, fuzz_peer_mac, 6);
	}
	if (len >= 54 && f[12] == 0x86 && f[13] == 0xdd) {
		fix_frame6(f, len, flags, mode);
		return;
	}
	if (len < 34 || f[12] != 0x08 || f[13] != 0x00)
		return;
	ihl = (ip[0] & 0xfu) * 4;
	if (ihl < 20 || 14 + ihl > len)
		return;
	if (mode & 16) {
		put32(ip + 12, FUZZ_PEER_IP);
		put32(ip + 16, FUZZ_LOCAL_IP);
	}
	if (flags & 1)
		put16(ip + 2, (uint16_t)(len - 14));
	tot = (uint32_t)ip[2] << 8 | ip[3];
	frag = (ip[6] & 0x3f) != 0 || ip[7] != 0;
	l4 = ip + ihl;
	l4len = tot >= ihl && 14 + tot <= len ? tot - ihl : 0;
	if (!frag && mode & 32 && l4len >= 4 && (ip[9] == 6 || ip[9] == 17)) {
		put16(l4, fuzz_seen.tcp_dport);
		put16(l4 + 2, fuzz_seen.tcp_sport);
	}
	if (!frag && flags & 8 && ip[9] == 6 && l4len >= 12)
		put32(l4 + 8, get32(l4 + 8) + fuzz_seen.tcp_next);
	if (!frag && flags & 4 && l4len > 0) {
		ph = (uint32_t)(ip[12] << 8 | ip[13]) + (uint32_t)(ip[14] << 8 | ip[15]) +
		     (uint32_t)(ip[16] << 8 | ip[17]) + (uint32_t)(ip[18] << 8 | ip[19]) + ip[9];
		if (ip[9] == 6 && l4len >= 20) {
			put16(l4 + 16, 0);
			put16(l4 + 16, (uint16_t)~cksum(l4, l4len, ph + l4len));
		} else if (ip[9] == 17 && l4len >= 8) {
			uint32_t ulen = (uint32_t)l4[4] << 8 | l4[5];

			if (ulen < 8 || ulen > l4len)
				ulen = l4len;
			put16(l4 + 6, 0);
			put16(l4 + 6, (uint16_t)~cksum(l4, ulen, ph + ulen));
		} else if ((ip[9] == 1 && l4len >= 4) || (ip[9] == 2 && l4len >= 4)) {
			put16(l4 + 2, 0);
			put16(l4 + 2, (uint16_t)~cksum(l4, l4len, 0));
		}
	}
	if (flags & 2) {
		put16(ip + 10, 0);
		put16(ip + 10, (uint16_t)~cksum(ip, ihl, 0));
	}
}

static const uint64_t ip_verdicts[4] = {
	RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, RTE_MBUF_F_RX_IP_CKSUM_GOOD,
	RTE_MBUF_F_RX_IP_CKSUM_BAD, RTE_MBUF_F_RX_IP_CKSUM_NONE,
};
static const uint64_t l4_verdicts[4] = {
	RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN, RTE_MBUF_F_RX_L4_CKSUM_GOOD,
	RTE_MBUF_F_RX_L4_CKSUM_BAD, RTE_MBUF_F_RX_L4_CKSUM_NONE,
};

size_t
fuzz_stack_frame_record(const uint8_t *p, size_t n)
{
	static uint8_t f[UINT16_MAX];
	uint8_t flags, mode;
	size_t len, used;

	if (n < 4)
		return n;
	flags = p[0];
	mode = p[1];
	len = (size_t)p[2] | (size_t)p[3] << 8;
	p += 4;
	n -= 4;
	if (len > n)
		len = n;
	if (len == 0)
		return 4;
	used = 4 + len;
	memcpy(f, p, len);
	fix_frame(f, len, flags, mode);
	if (mode & 128) {
		/* the port goes on VLAN FUZZ_VLAN_TCI, or back off it, once what
		 * it sent so far went out under the old setting */
		fuzz_stack_poll(1);
		d->ports[0].vlan_tci = d->ports[0].vlan_tci != 0 ? 0 : FUZZ_VLAN_TCI;
	}
	if (mode & 64 && len >= 12 && len + 4 <= sizeof(f)) {
		/* tagged with FUZZ_VLAN_TCI after the fix-ups */
		memmove(f + 16, f + 12, len - 12);
		put16(f + 12, RTE_ETHER_TYPE_VLAN);
		put16(f + 14, FUZZ_VLAN_TCI);
		len += 4;
	}
	fuzz_stack_rx(f, len, ip_verdicts[(flags >> 4) & 3] | l4_verdicts[flags >> 6],
		      (mode & 3) + 1u);
	if (!(mode & 4))
		fuzz_stack_poll(1);
	return used;
}

/* An ARP reply from the peer: 198.18.0.2 is at fuzz_peer_mac. */
static void
peer_arp(void)
{
	uint8_t f[42] = { 0 };

	memcpy(f, fuzz_port_mac, 6);
	memcpy(f + 6, fuzz_peer_mac, 6);
	f[12] = 0x08, f[13] = 0x06;             /* ARP */
	f[14] = 0, f[15] = 1, f[16] = 8, f[17] = 0, f[18] = 6, f[19] = 4;
	f[20] = 0, f[21] = 2;                   /* reply */
	memcpy(f + 22, fuzz_peer_mac, 6);
	f[28] = 198, f[29] = 18, f[30] = 0, f[31] = 2;
	memcpy(f + 32, fuzz_port_mac, 6);
	f[38] = 198, f[39] = 18, f[40] = 0, f[41] = 1;
	fuzz_stack_rx(f, sizeof(f), 0, 1);
	fuzz_stack_poll(1);
}

/* A neighbour discovery message from FUZZ_PEER_IP6 (hop limit 255, the
 * peer's link-layer address in its option): a solicitation (135) for the
 * stack's address to its solicited-node group (ff02::1:ff00:1), or a
 * solicited advertisement (136, solicited and override) of the peer's
 * address to the stack. */
static void
peer_nd(uint8_t type)
{
	static const uint8_t snode[16] = { 0xff, 0x02, [11] = 1, [12] = 0xff, [15] = 0x01 };
	static const uint8_t snode_mac[6] = { 0x33, 0x33, 0xff, 0x00, 0x00, 0x01 };
	uint8_t f[14 + 40 + 32] = { 0 };
	uint8_t *ip = f + 14, *m = ip + 40;

	memcpy(f, type == 135 ? snode_mac : fuzz_port_mac, 6);
	memcpy(f + 6, fuzz_peer_mac, 6);
	f[12] = 0x86, f[13] = 0xdd;             /* IPv6 */
	ip[0] = 0x60;
	ip[5] = 32;                             /* payload length */
	ip[6] = 58, ip[7] = 255;                /* ICMPv6, hop limit */
	memcpy(ip + 8, peer_ip6, 16);
	memcpy(ip + 24, type == 135 ? snode : local_ip6, 16);
	m[0] = type;
	if (type == 136)
		m[4] = 0x60;                    /* solicited, override */
	memcpy(m + 8, type == 135 ? local_ip6 : peer_ip6, 16); /* target */
	m[24] = type == 135 ? 1 : 2;            /* source / target link-layer address */
	m[25] = 1;                              /* 8 bytes */
	memcpy(m + 26, fuzz_peer_mac, 6);
	put16(m + 2, (uint16_t)~cksum(m, 32, cksum(ip + 8, 32, 58 + 32)));
	fuzz_stack_rx(f, sizeof(f), 0, 1);
	fuzz_stack_poll(1);
}

void
fuzz_stack_reset(void)
{
	static uint64_t objs_base;
	static bool have_base;
	struct dpsock_lwip_mem_stats mem;
	unsigned int i;

	/* frames an input left in the RX ring first */
	while (rte_ring_count(rx_ring) > 0)
		fuzz_stack_poll(1);
	while (tcp_active_pcbs != NULL)
		tcp_abort(tcp_active_pcbs);
	while (tcp_tw_pcbs != NULL)
		tcp_abort(tcp_tw_pcbs);
	for (i = 0; i <= IP_REASS_MAXAGE; i++)
		ip_reass_tmr();
	for (i = 0; i <= IPV6_REASS_MAXAGE; i++)
		ip6_reass_tmr();
	/* the IGMP host forgets the queriers and pending answers an input
	 * left (its timer is one lwIP object); the next input that needs it
	 * starts a new one, as at start-up */
	dpsock_igmp_fini(w);
	/* the TCP timer runs while there are connections: let it run out, so
	 * that every input starts with the same timers */
	steps_left = 2;
	fuzz_stack_timers(2);
	steps_left = STEP_BUDGET;
	/* last: what the steps above sent may wait for an ARP answer or a
	 * neighbour's. lwIP's own clean-up for a netif that goes away drops
	 * the neighbour, destination, router and prefix caches (and packets
	 * queued for a neighbour); what router advertisements and packet too
	 * big messages changed goes back as it was (nd6.c, as a link down
	 * does for the MTU). */
	etharp_cleanup_netif(&w->ports[0].netif);
	nd6_cleanup_netif(&w->ports[0].netif);
	w->ports[0].netif.mtu6 = w->ports[0].netif.mtu;
	reachable_time = LWIP_ND6_REACHABLE_TIME;
	retrans_timer = LWIP_ND6_RETRANS_TIMER;
	/* every received frame came back: lwIP holds none (no connection,
	 * nothing in reassembly or ARP queues), the rings are empty */
	FUZZ_CHECK(rte_mempool_avail_count(d->ports[0].pool) == pool_size,
		   "%u mbufs not back in the pool after reset",
		   pool_size - rte_mempool_avail_count(d->ports[0].pool));
	FUZZ_CHECK(w->n_conns == 0 && w->n_half_open == 0, "connections counted after reset: "
		   "%u established, %u half open", w->n_conns, w->n_half_open);
	FUZZ_CHECK(w->tx_loans == 0, "%u frames still lent after reset", w->tx_loans);
	/* lwIP holds what it held after the first reset (listeners, bound
	 * UDP pcbs, its cyclic timers): anything more is a leak LeakSanitizer
	 * cannot see (still reachable from lwIP's lists) */
	dpsock_lwip_mem_stats(&mem);
	if (!have_base) {
		objs_base = mem.objs_in_use;
		have_base = true;
	}
	if (mem.objs_in_use != objs_base)
		fuzz_lwip_describe_live();
	FUZZ_CHECK(mem.objs_in_use == objs_base, "lwIP holds %llu objects after reset, %llu at "
		   "start (their allocation stacks above)", (unsigned long long)mem.objs_in_use,
		   (unsigned long long)objs_base);
	/* every local port an active open claimed came back (steer.c) */
	for (i = 0; i < 65536 / 8; i++) {
		uint64_t word;

		memcpy(&word, d->port_owner + i * 8, 8);
		FUZZ_CHECK(word == 0, "a local port in %u..%u is still owned after reset",
			   i * 8, i * 8 + 7);
	}
	fuzz_seen.tcp_next = 0;
	fuzz_seen.tcp_sport = fuzz_seen.tcp_dport = 0;
	d->ports[0].vlan_tci = 0; /* every input starts untagged */
	peer_arp();
	/* The peer's IPv6 neighbour entry, so that the stack answers at once
	 * rather than queue its answer and solicit the peer. An advertisement
	 * alone does not do it: lwIP's nd6_input drops one whose target it
	 * has no entry for (it never asked). A solicitation from the peer
	 * makes the entry (DELAY: the stack answers it with an advertisement,
	 * checked as every frame it sends), the advertisement makes it
	 * REACHABLE for LWIP_ND6_REACHABLE_TIME (30 s of lwIP's clock; then
	 * STALE, and probes as a real peer's would be). */
	peer_nd(135);
	peer_nd(136);
}
