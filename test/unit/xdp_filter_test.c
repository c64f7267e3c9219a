/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsockd's XDP program (stack/sharing/bpf/dpsock_xdp.bpf.c) through its loader
 * (stack/sharing/xdp_filter.c), without DPDK: in a network namespace of its own
 * (unshare), on a veth pair it creates there, which goes with the
 * namespace when the test exits.
 *
 * 1. Verdicts: the filter opened on the veth (loaded, attached through its
 *    BPF link), entries added through the backend's API, then the program
 *    run on crafted frames (BPF_PROG_TEST_RUN, on the veth's queues):
 *    ARP, ICMP pass; TCP/UDP to a served port on a local address, to
 *    the ephemeral range, to a joined group are dpsock's (XDP_DROP and
 *    no_socket: no AF_XDP socket in xsks_map); the same to another address,
 *    port or group pass; fragments (first decides, later follow, unknown
 *    later pass); truncated and malformed frames pass; a deleted port
 *    passes again. The counters add up to the frames run.
 * 2. The same over IPv6, next to IPv4 entries: a port on IPv6's any (::)
 *    is not one on IPv4's (::ffff:0.0.0.0) and the other way round; ICMPv6
 *    (neighbour discovery, echo, MLD) passes; ff0e:: groups; fragments
 *    (the Fragment header's 32-bit identification, atomic fragments);
 *    extension headers (hop-by-hop first only, routing with no segment
 *    left, destination options, at most 4 in all); truncated frames; the
 *    API's -EINVAL on an any or group address, on a group that is not one.
 * 3. VLAN 100 configured, and an AF_XDP socket of the test's in xsks_map
 *    for queue 0: tagged 100 is redirected (XDP_REDIRECT), on queue 1 (no
 *    socket) dropped; untagged and tagged 200 pass; IPv4 and IPv6.
 * 4. The link: a netlink-attached program in generic mode (as the PMD's
 *    can be) is replaced by a child process's filter, in the same mode; a
 *    second filter cannot replace the child's link; kill -9 of the child
 *    leaves the interface with no XDP program at all.
 * 5. Live, in native mode: from a second namespace on the veth's peer, TCP
 *    to a port of the kernel's connects through the filter (ARP, neighbour
 *    discovery and TCP pass); TCP to dpsock's port does not reach the
 *    kernel's listener on that same port (dropped: no AF_XDP socket); over
 *    IPv4 and IPv6.
 * Needs root (BPF, namespaces) and iproute2: exits 77 with a reason
 * otherwise, or when the library was built without its XDP program.
 *
 * --bench (test/perf/run-all's sharing rows, not a test): what dpsock's
 * look-ups cost per frame. The filter with 64 served ports, the ephemeral
 * range and a group, against a program with the AF_XDP PMD's one call
 * (bpf_redirect_map on the queue's xsks_map slot, as an owned port runs),
 * both run by BPF_PROG_TEST_RUN on the same frames, 2^20 times each, the
 * median of 5: one line per frame, "bench NAME pmd_ns=X dpsock_ns=Y".
 */

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dpsock_build_config.h"

#include "sharing/filter_priv.h"
#include "core/log_priv.h"

#if !DPSOCK_HAS_XDP_FILTER

int
main(void)
{
	printf("skip: built without the XDP program (clang with the BPF target and libbpf)\n");
	return 77;
}

#else

#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "check.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef SOL_XDP
#define SOL_XDP 283
#endif

#define IF_A "xdpf0"
#define IF_B "xdpf1"

static unsigned int ifindex;

static uint32_t
ip4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	return htonl((uint32_t)a << 24 | b << 16 | c << 8 | d);
}

/* An IPv4 address as the filter's API takes it: mapped, ::ffff:a.b.c.d */
static struct dpsock_mc_addr
a4(uint32_t a)
{
	return dpsock_mc_addr4(a);
}

/* An IPv6 address, from text */
static struct dpsock_mc_addr
a6(const char *text)
{
	uint8_t b[16];

	if (inet_pton(AF_INET6, text, b) != 1)
		abort();
	return dpsock_mc_addr6(b);
}

/* ---- frames ------------------------------------------------------------------ */

struct frame {
	uint16_t vlan;            /* 0: untagged */
	uint16_t ethertype;       /* 0: IPv4 */
	uint8_t version;          /* 0: 4 */
	uint8_t ihl;              /* 0: 5 */
	uint8_t proto;
	uint32_t src, dst;        /* network order */
	uint16_t id;
	uint16_t frag;            /* host order: MF | offset */
	uint16_t sport, dport;    /* host order */
	unsigned int payload;     /* bytes after the L4 header (0: none) */
};

/* The frame into buf; returns its length. */
static size_t
build(uint8_t *buf, size_t cap, const struct frame *f)
{
	size_t off = 12, l4len, ihl = f->ihl ? f->ihl : 5, ipstart, len;
	uint16_t tot;

	memset(buf, 0, cap);
	memcpy(buf, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02", 12);
	if (f->vlan) {
		buf[off++] = 0x81;
		buf[off++] = 0x00;
		buf[off++] = f->vlan >> 8;
		buf[off++] = f->vlan & 0xff;
	}
	buf[off++] = (f->ethertype ? f->ethertype : 0x0800) >> 8;
	buf[off++] = (f->ethertype ? f->ethertype : 0x0800) & 0xff;
	ipstart = off;
	l4len = f->proto == IPPROTO_TCP ? 20 : f->proto == IPPROTO_UDP ? 8 : 8;
	if (f->frag & 0x1fff)
		l4len = 0; /* a later fragment: no L4 header */
	tot = (uint16_t)(ihl * 4 + l4len + f->payload);
	buf[off] = (uint8_t)((f->version ? f->version : 4) << 4 | (ihl & 0xf));
	buf[off + 2] = tot >> 8;
	buf[off + 3] = tot & 0xff;
	buf[off + 4] = f->id >> 8;
	buf[off + 5] = f->id & 0xff;
	buf[off + 6] = f->frag >> 8;
	buf[off + 7] = f->frag & 0xff;
	buf[off + 8] = 64;
	buf[off + 9] = f->proto;
	memcpy(buf + off + 12, &f->src, 4);
	memcpy(buf + off + 16, &f->dst, 4);
	off += ihl * 4;
	if (l4len) {
		buf[off] = f->sport >> 8;
		buf[off + 1] = f->sport & 0xff;
		buf[off + 2] = f->dport >> 8;
		buf[off + 3] = f->dport & 0xff;
		if (f->proto == IPPROTO_TCP)
			buf[off + 12] = 5 << 4;
	}
	len = ipstart + tot;
	return len < cap ? len : cap;
}

/* An IPv6 frame: the fixed header, extension headers in the order given,
 * then the upper layer's header unless it is a later fragment. */
struct frame6 {
	uint16_t vlan;            /* 0: untagged */
	uint8_t version;          /* 0: 6 */
	uint8_t proto;            /* the upper layer: TCP, UDP, ICMPv6, ... */
	uint8_t icmp;             /* ICMPv6: its type */
	const char *src, *dst;    /* text */
	uint8_t ext[6];           /* extension headers (IPPROTO_HOPOPTS, _ROUTING,
				   * _DSTOPTS, _FRAGMENT, ...), n_ext of them */
	uint8_t n_ext;
	uint8_t ext_len;          /* options and routing headers: hdrlen (8-byte
				   * units after the first 8) */
	uint8_t segleft;          /* the routing header's segments left */
	uint32_t id;              /* the Fragment header's identification */
	uint16_t frag;            /* its offset (bytes, a multiple of 8) | M (1) */
	uint16_t sport, dport;    /* host order */
	unsigned int payload;     /* bytes after the L4 header */
};

/* A Fragment header whose datagram is fragmented (not an atomic one): the
 * program counts the frame in frags when ours. */
static bool
frag6(const struct frame6 *f)
{
	for (unsigned int i = 0; i < f->n_ext; i++)
		if (f->ext[i] == IPPROTO_FRAGMENT)
			return (f->frag & 0xfff9) != 0;
	return false;
}

static size_t
build6(uint8_t *buf, size_t cap, const struct frame6 *f)
{
	size_t off = 12, ipstart, len;
	bool later = false;
	unsigned int i;
	uint16_t plen;

	memset(buf, 0, cap);
	memcpy(buf, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02", 12);
	if (f->vlan) {
		buf[off++] = 0x81;
		buf[off++] = 0x00;
		buf[off++] = f->vlan >> 8;
		buf[off++] = f->vlan & 0xff;
	}
	buf[off++] = 0x86;
	buf[off++] = 0xdd;
	ipstart = off;
	buf[off] = (uint8_t)((f->version ? f->version : 6) << 4);
	buf[off + 6] = f->n_ext ? f->ext[0] : f->proto;
	buf[off + 7] = 64;
	if (inet_pton(AF_INET6, f->src, buf + off + 8) != 1 ||
	    inet_pton(AF_INET6, f->dst, buf + off + 24) != 1)
		abort();
	off += 40;
	for (i = 0; i < f->n_ext && !later; i++) {
		uint8_t next = i + 1 < f->n_ext ? f->ext[i + 1] : f->proto;

		buf[off] = next;
		if (f->ext[i] == IPPROTO_FRAGMENT) {
			buf[off + 2] = f->frag >> 8;
			buf[off + 3] = f->frag & 0xff;
			buf[off + 4] = f->id >> 24;
			buf[off + 5] = (f->id >> 16) & 0xff;
			buf[off + 6] = (f->id >> 8) & 0xff;
			buf[off + 7] = f->id & 0xff;
			/* a later fragment: the rest is payload */
			later = (f->frag & 0xfff8) != 0;
			off += 8;
			continue;
		}
		buf[off + 1] = f->ext_len;
		if (f->ext[i] == IPPROTO_ROUTING) {
			buf[off + 2] = 4; /* segment routing */
			buf[off + 3] = f->segleft;
		}
		/* options: Pad1s (zeros) */
		off += (f->ext_len + 1u) * 8;
	}
	if (!later) {
		buf[off] = f->sport >> 8;
		buf[off + 1] = f->sport & 0xff;
		buf[off + 2] = f->dport >> 8;
		buf[off + 3] = f->dport & 0xff;
		if (f->proto == IPPROTO_TCP) {
			buf[off + 12] = 5 << 4;
			off += 20;
		} else if (f->proto == IPPROTO_ICMPV6) {
			buf[off] = f->icmp;
			buf[off + 1] = 0;
			off += 8;
		} else {
			off += 8;
		}
	}
	plen = (uint16_t)(off - ipstart - 40 + f->payload);
	buf[ipstart + 4] = plen >> 8;
	buf[ipstart + 5] = plen & 0xff;
	len = ipstart + 40 + plen;
	return len < cap ? len : cap;
}

/* ---- running the program ------------------------------------------------------ */

static struct dpsock_xdpf_stats want;   /* what the runs so far should have counted */

static int
run_raw(int prog_fd, const uint8_t *frame, size_t len, uint32_t queue)
{
	struct xdp_md ctx = {
		.data_end = (uint32_t)len,
		.ingress_ifindex = ifindex,
		.rx_queue_index = queue,
	};
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = frame,
		.data_size_in = (uint32_t)len,
		.ctx_in = &ctx,
		.ctx_size_in = sizeof(ctx),
		.repeat = 1,
	);
	int rc = bpf_prog_test_run_opts(prog_fd, &o);

	return rc < 0 ? rc : (int)o.retval;
}

static const char *
verdict(int v)
{
	switch (v) {
	case XDP_PASS:
		return "XDP_PASS";
	case XDP_DROP:
		return "XDP_DROP";
	case XDP_REDIRECT:
		return "XDP_REDIRECT";
	default:
		return v < 0 ? strerror(-v) : "other";
	}
}

/* Run one frame, check its verdict, count what the program should count. */
#define EXPECT(name, prog_fd, buf, len, queue, exp, is_frag)                     \
	do {                                                                    \
		int v_ = run_raw(prog_fd, buf, len, queue);                     \
		CHECK(v_ == (exp), "%s: %s, expected %s", name, verdict(v_),    \
		      verdict(exp));                                            \
		if ((exp) == XDP_PASS)                                          \
			want.passed++;                                          \
		else if ((exp) == XDP_DROP)                                     \
			want.no_socket++;                                       \
		else {                                                          \
			want.redirected++;                                      \
			want.frags += (is_frag);                                \
		}                                                               \
	} while (0)

#define FRAME(name, prog_fd, queue, exp, ...)                                   \
	do {                                                                    \
		struct frame f_ = { __VA_ARGS__ };                              \
		uint8_t b_[256];                                                \
		size_t l_ = build(b_, sizeof(b_), &f_);                         \
		EXPECT(name, prog_fd, b_, l_, queue, exp, (f_.frag & 0x3fff) != 0); \
	} while (0)

#define FRAME6(name, prog_fd, queue, exp, ...)                                  \
	do {                                                                    \
		struct frame6 f_ = { __VA_ARGS__ };                             \
		uint8_t b_[512];                                                \
		size_t l_ = build6(b_, sizeof(b_), &f_);                        \
		EXPECT(name, prog_fd, b_, l_, queue, exp, frag6(&f_));          \
	} while (0)

static void
check_stats(const struct dpsock_xdpf *x, const char *phase)
{
	struct dpsock_xdpf_stats s;

	dpsock_xdpf_stats(x, &s);
	CHECK(s.redirected == want.redirected && s.passed == want.passed &&
	      s.frags == want.frags && s.no_socket == want.no_socket,
	      "%s: counters redirected %lu passed %lu frags %lu no_socket %lu, expected "
	      "%lu %lu %lu %lu", phase, (unsigned long)s.redirected, (unsigned long)s.passed,
	      (unsigned long)s.frags, (unsigned long)s.no_socket,
	      (unsigned long)want.redirected, (unsigned long)want.passed,
	      (unsigned long)want.frags, (unsigned long)want.no_socket);
	memset(&want, 0, sizeof(want));
}

/* ---- the interface's XDP state ------------------------------------------------- */

/* The program attached to the interface: its id (0: none), mode, name. */
static uint32_t
attached(uint8_t *mode, char *name, size_t len)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info pi;
	__u32 plen = sizeof(pi);
	int fd;

	name[0] = '\0';
	if (bpf_xdp_query((int)ifindex, 0, &q) != 0)
		return 0;
	*mode = q.attach_mode;
	if (q.prog_id == 0)
		return 0;
	memset(&pi, 0, sizeof(pi));
	fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &pi, &plen) == 0)
		snprintf(name, len, "%s", pi.name);
	if (fd >= 0)
		close(fd);
	return q.prog_id;
}

/* An AF_XDP socket bound to queue of the interface (copy mode), enough for
 * xsks_map to take it: a UMEM, its fill and completion rings, an RX ring. */
static int
xsk_open(uint32_t queue)
{
	const size_t chunk = 4096, nchunks = 64;
	struct xdp_umem_reg mr;
	struct sockaddr_xdp sx;
	int fd, ring = 64;
	void *umem;

	fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	umem = mmap(NULL, chunk * nchunks, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (umem == MAP_FAILED)
		goto fail;
	memset(&mr, 0, sizeof(mr));
	mr.addr = (uintptr_t)umem;
	mr.len = chunk * nchunks;
	mr.chunk_size = (uint32_t)chunk;
	memset(&sx, 0, sizeof(sx));
	sx.sxdp_family = AF_XDP;
	sx.sxdp_ifindex = ifindex;
	sx.sxdp_queue_id = queue;
	sx.sxdp_flags = XDP_COPY;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) != 0 ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &ring, sizeof(ring)) != 0 ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &ring, sizeof(ring)) != 0 ||
	    setsockopt(fd, SOL_XDP, XDP_RX_RING, &ring, sizeof(ring)) != 0 ||
	    bind(fd, (struct sockaddr *)&sx, sizeof(sx)) != 0)
		goto fail;
	return fd;
fail:
	{
		int e = errno;

		close(fd);
		return -e;
	}
}

/* ---- 1. verdicts, untagged, no socket ----------------------------------------- */

static const uint32_t QNONE[1] = { 0 };

static void
test_verdicts(void)
{
	const uint32_t local = ip4(10, 0, 0, 1), local2 = ip4(10, 0, 0, 3);
	const uint32_t other = ip4(10, 0, 0, 2), peer = ip4(10, 0, 0, 9);
	const uint32_t group = ip4(239, 1, 1, 1), group2 = ip4(239, 2, 2, 2);
	const struct dpsock_mc_addr any = dpsock_filter_any4();
	char err[512], name[32];
	struct dpsock_xdpf *x;
	uint8_t buf[256], mode = 0;
	int rc, p;

	x = dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 0, &rc, err, sizeof(err));
	if (x == NULL) {
		if (rc == -ENOTSUP || rc == -EPERM) {
			printf("skip: %s\n", err);
			exit(77);
		}
		CHECK(x != NULL, "open: %s (%s)", err, strerror(-rc));
		exit(1);
	}
	CHECK(attached(&mode, name, sizeof(name)) != 0 && strcmp(name, "xsk_def_prog") == 0,
	      "after open the interface runs '%s'", name);
	p = dpsock_xdpf_prog_fd(x);

	CHECK(dpsock_xdpf_addr(x, a4(local), true) == 0, "addr");
	CHECK(dpsock_xdpf_addr(x, a4(local), true) == 0, "addr again");
	CHECK(dpsock_xdpf_addr(x, a4(local2), true) == 0, "addr 2");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, any, 80, true) == 0, "tcp 80 on any");
	CHECK(dpsock_xdpf_port(x, IPPROTO_UDP, a4(local), 5000, true) == 0, "udp 5000 on local");
	CHECK(dpsock_xdpf_port(x, IPPROTO_UDP, any, 7000, true) == 0, "udp 7000 on any");
	CHECK(dpsock_xdpf_ephemeral(x, 40000, 40999) == 0, "ephemeral");
	CHECK(dpsock_xdpf_group(x, a4(group), true) == 0, "group");
	CHECK(dpsock_xdpf_port(x, 1, any, 80, true) == -EINVAL, "ICMP port");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, any, 0, true) == -EINVAL, "port 0");
	CHECK(dpsock_xdpf_group(x, a4(local), true) == -EINVAL, "unicast group");
	CHECK(dpsock_xdpf_ephemeral(x, 2000, 1000) == -EINVAL, "ephemeral lo > hi");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, any, 81, false) == 0, "del of a missing port");
	CHECK(dpsock_xdpf_group(x, a4(group2), false) == 0, "del of a missing group");

	/* not IPv4, not TCP/UDP */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "\xff\xff\xff\xff\xff\xff\x02\x00\x00\x00\x00\x02\x08\x06", 14);
	EXPECT("ARP", p, buf, 60, 0, XDP_PASS, 0);
	FRAME("IPv6 ethertype over an IPv4 header", p, 0, XDP_PASS, .ethertype = 0x86dd,
	      .version = 6, .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 80);
	FRAME("LLDP", p, 0, XDP_PASS, .ethertype = 0x88cc);
	FRAME("ICMP to a local address", p, 0, XDP_PASS, .proto = IPPROTO_ICMP, .src = peer,
	      .dst = local);
	FRAME("IGMP to a joined group", p, 0, XDP_PASS, .proto = IPPROTO_IGMP, .src = peer,
	      .dst = group);

	/* ports on addresses */
	FRAME("TCP to a listened port", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 33000, .dport = 80);
	FRAME("TCP to a listened port, 2nd address", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	      .src = peer, .dst = local2, .sport = 33000, .dport = 80);
	FRAME("TCP to a listened port, IP options", p, 0, XDP_DROP, .ihl = 7,
	      .proto = IPPROTO_TCP, .src = peer, .dst = local, .sport = 33000, .dport = 80);
	FRAME("TCP to a listened port on another address", p, 0, XDP_PASS,
	      .proto = IPPROTO_TCP, .src = peer, .dst = other, .sport = 33000, .dport = 80);
	FRAME("TCP to another port", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 33000, .dport = 22);
	FRAME("UDP to the TCP port", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	      .dst = local, .sport = 33000, .dport = 80);
	FRAME("UDP to a port bound on the address", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local, .dport = 5000, .payload = 10);
	FRAME("UDP to that port on the 2nd address", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local2, .dport = 5000, .payload = 10);
	FRAME("UDP to a port bound on any address", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local2, .dport = 7000);

	/* the ephemeral range */
	FRAME("TCP to the ephemeral range", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 80, .dport = 40500);
	FRAME("TCP to the range's low end", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 80, .dport = 40000);
	FRAME("UDP to the range's high end", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	      .dst = local, .sport = 53, .dport = 40999);
	FRAME("TCP below the range", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 80, .dport = 39999);
	FRAME("TCP above the range", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 80, .dport = 41000);
	FRAME("TCP to the range on another address", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	      .src = peer, .dst = other, .sport = 80, .dport = 40500);

	/* multicast */
	FRAME("UDP to a joined group", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	      .dst = group, .dport = 7000, .payload = 100);
	FRAME("UDP to another group", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	      .dst = group2, .dport = 7000, .payload = 100);
	FRAME("UDP to a joined group, port not served", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = peer, .dst = group, .dport = 7001);
	FRAME("TCP to a joined group", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = group, .dport = 80);

	/* fragments: MF 0x2000, offset in 8-byte units */
	FRAME("first fragment of an ours datagram", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local, .id = 0x1234, .frag = 0x2000, .dport = 5000,
	      .payload = 64);
	FRAME("middle fragment of it", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	      .dst = local, .id = 0x1234, .frag = 0x2000 | 9, .payload = 72);
	FRAME("last fragment of it", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	      .dst = local, .id = 0x1234, .frag = 18, .payload = 20);
	FRAME("later fragment, other id", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	      .dst = local, .id = 0x1235, .frag = 18, .payload = 20);
	FRAME("later fragment, other source", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = other, .dst = local, .id = 0x1234, .frag = 18, .payload = 20);
	FRAME("later fragment, other protocol", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	      .src = peer, .dst = local, .id = 0x1234, .frag = 18, .payload = 20);
	FRAME("first fragment not ours, same id", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local, .id = 0x1234, .frag = 0x2000, .dport = 5001,
	      .payload = 64);
	FRAME("later fragment of the id reused", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local, .id = 0x1234, .frag = 18, .payload = 20);
	FRAME("first TCP fragment to the ephemeral range", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	      .src = peer, .dst = local, .id = 7, .frag = 0x2000, .sport = 80, .dport = 40001,
	      .payload = 100);
	FRAME("its later fragment", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .id = 7, .frag = 15, .payload = 100);
	FRAME("fragments of a group's datagram", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	      .src = peer, .dst = group, .id = 8, .frag = 0x2000, .dport = 7000, .payload = 64);
	FRAME("later fragment to the group", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	      .dst = group, .id = 8, .frag = 9, .payload = 8);

	/* tagged while configured untagged */
	FRAME("tagged frame, untagged configured", p, 0, XDP_PASS, .vlan = 100,
	      .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 80);
	/* a priority tag (802.1p: PCP 5, VLAN 0) is untagged, as the worker
	 * (rx_vlan) and Linux take it */
	FRAME("priority-tagged frame, untagged configured", p, 0, XDP_DROP, .vlan = 0xa000,
	      .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 80);
	FRAME("priority-tagged frame not served, untagged configured", p, 0, XDP_PASS,
	      .vlan = 0xa000, .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 22);

	/* truncated and malformed */
	{
		struct frame f = { .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 80 };
		size_t full = build(buf, sizeof(buf), &f), cut;

		/* every prefix of an ours frame but the whole one passes */
		for (cut = 14; cut < full; cut++)
			EXPECT("truncated TCP frame", p, buf, cut, 0, XDP_PASS, 0);
		EXPECT("the whole TCP frame", p, buf, full, 0, XDP_DROP, 0);
		f.proto = IPPROTO_UDP;
		f.dport = 5000;
		full = build(buf, sizeof(buf), &f);
		for (cut = 14; cut < full; cut++)
			EXPECT("truncated UDP frame", p, buf, cut, 0, XDP_PASS, 0);
		EXPECT("the whole UDP frame", p, buf, full, 0, XDP_DROP, 0);
		/* a tagged frame cut inside its tag (VLAN configured below) */
	}
	FRAME("IHL 4", p, 0, XDP_PASS, .ihl = 4, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .dport = 80);
	FRAME("IHL 0", p, 0, XDP_PASS, .ihl = 0x10 /* & 0xf: 0 */, .proto = IPPROTO_TCP,
	      .src = peer, .dst = local, .dport = 80);
	FRAME("version 6 in an IPv4 frame", p, 0, XDP_PASS, .version = 6, .proto = IPPROTO_TCP,
	      .src = peer, .dst = local, .dport = 80);
	{
		/* IHL 15 (60 bytes of header) in a frame that ends before */
		struct frame f = { .ihl = 15, .proto = IPPROTO_TCP, .src = peer, .dst = local,
				   .dport = 80 };
		size_t full = build(buf, sizeof(buf), &f);

		EXPECT("IHL 15, frame cut in the options", p, buf, 14 + 40, 0, XDP_PASS, 0);
		EXPECT("IHL 15, frame cut in the TCP header", p, buf, 14 + 60 + 10, 0, XDP_PASS, 0);
		EXPECT("IHL 15, whole frame", p, buf, full, 0, XDP_DROP, 0);
	}
	/* garbage: nothing may crash; anything not IPv4/TCP/UDP to us passes */
	{
		unsigned int i, j, seed = 1;

		for (i = 0; i < 200; i++) {
			size_t len = 14 + (seed % 120);

			for (j = 0; j < sizeof(buf); j++) {
				seed = seed * 1103515245u + 12345u;
				buf[j] = (uint8_t)(seed >> 16);
			}
			EXPECT("random frame", p, buf, len, 0, XDP_PASS, 0);
		}
	}

	/* a deleted port, address, group, range */
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, any, 80, false) == 0, "del tcp 80");
	FRAME("TCP to the port deleted", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .dport = 80);
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, any, 80, false) == 0, "del tcp 80 again");
	CHECK(dpsock_xdpf_addr(x, a4(local2), false) == 0, "del addr 2");
	FRAME("UDP to a port on any, address deleted", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = peer, .dst = local2, .dport = 7000);
	CHECK(dpsock_xdpf_group(x, a4(group), false) == 0, "leave group");
	FRAME("UDP to the group left", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	      .dst = group, .dport = 7000);
	CHECK(dpsock_xdpf_ephemeral(x, 0, 0) == 0, "no ephemeral range");
	FRAME("TCP to the range removed", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 80, .dport = 40500);
	FRAME("TCP to port 0, no range", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .sport = 80, .dport = 0);

	check_stats(x, "verdicts");
	dpsock_xdpf_close(x);
	CHECK(attached(&mode, name, sizeof(name)) == 0,
	      "after close the interface still runs '%s'", name);
}

/* ---- 2. IPv6 verdicts, untagged, no socket ------------------------------------ */

static void
test_ipv6(void)
{
	const char *local = "2001:db8::1", *local2 = "2001:db8::3", *other = "2001:db8::2";
	const char *peer = "2001:db8::9", *group = "ff0e::1234", *group2 = "ff0e::5678";
	const char *mapped = "::ffff:10.0.0.1";
	const uint32_t local4 = ip4(10, 0, 0, 1), peer4 = ip4(10, 0, 0, 9);
	struct dpsock_xdpf *x;
	char err[512];
	uint8_t buf[512];
	int rc, p;

	x = dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 0, &rc, err, sizeof(err));
	CHECK(x != NULL, "open: %s (%s)", err, strerror(-rc));
	if (x == NULL)
		return;
	p = dpsock_xdpf_prog_fd(x);

	CHECK(dpsock_xdpf_addr(x, a6(local), true) == 0, "addr");
	CHECK(dpsock_xdpf_addr(x, a6(local2), true) == 0, "addr 2");
	CHECK(dpsock_xdpf_addr(x, a4(local4), true) == 0, "IPv4 addr");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, a6(local), 80, true) == 0, "tcp 80 on local");
	CHECK(dpsock_xdpf_port(x, IPPROTO_UDP, a6(local), 6000, true) == 0, "udp 6000 on local");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, dpsock_filter_any6(), 8080, true) == 0,
	      "tcp 8080 on IPv6's any");
	CHECK(dpsock_xdpf_port(x, IPPROTO_UDP, dpsock_filter_any6(), 5000, true) == 0,
	      "udp 5000 on IPv6's any");
	CHECK(dpsock_xdpf_port(x, IPPROTO_UDP, dpsock_filter_any6(), 7000, true) == 0,
	      "udp 7000 on IPv6's any");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, dpsock_filter_any4(), 443, true) == 0,
	      "tcp 443 on IPv4's any");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, a4(local4), 444, true) == 0,
	      "tcp 444 on the IPv4 address");
	CHECK(dpsock_xdpf_ephemeral(x, 40000, 40999) == 0, "ephemeral");
	CHECK(dpsock_xdpf_group(x, a6(group), true) == 0, "group");
	CHECK(dpsock_xdpf_group(x, a6(group2), false) == 0, "del of a missing group");

	/* the API's validation */
	CHECK(dpsock_xdpf_addr(x, dpsock_filter_any6(), true) == -EINVAL, ":: as an address");
	CHECK(dpsock_xdpf_addr(x, dpsock_filter_any4(), true) == -EINVAL,
	      "::ffff:0.0.0.0 as an address");
	CHECK(dpsock_xdpf_addr(x, a6("ff02::1"), true) == -EINVAL, "an IPv6 group as an address");
	CHECK(dpsock_xdpf_addr(x, a4(ip4(239, 1, 1, 1)), true) == -EINVAL,
	      "an IPv4 group as an address");
	CHECK(dpsock_xdpf_group(x, a6(local), true) == -EINVAL, "an IPv6 unicast group");
	CHECK(dpsock_xdpf_group(x, dpsock_filter_any6(), true) == -EINVAL, ":: as a group");
	CHECK(dpsock_xdpf_group(x, a6("::ffff:239.1.1.1"), true) == 0,
	      "an IPv4 group, mapped, from text");
	CHECK(dpsock_xdpf_group(x, a4(ip4(239, 1, 1, 1)), false) == 0, "the same left");
	CHECK(dpsock_xdpf_port(x, IPPROTO_ICMPV6, dpsock_filter_any6(), 80, true) == -EINVAL,
	      "ICMPv6 port");
	CHECK(dpsock_xdpf_port(x, IPPROTO_UDP, dpsock_filter_any6(), 0, true) == -EINVAL,
	      "IPv6 port 0");

	/* ports on addresses, and the families' any addresses */
	FRAME6("TCP to a port on the address", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local, .sport = 33000, .dport = 80);
	FRAME6("the same, priority-tagged (VLAN 0)", p, 0, XDP_DROP, .vlan = 0xa000,
	       .proto = IPPROTO_TCP, .src = peer, .dst = local, .sport = 33000, .dport = 80);
	FRAME6("TCP to that port on the 2nd address", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local2, .sport = 33000, .dport = 80);
	FRAME6("UDP to a port on the address", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .dport = 6000, .payload = 10);
	FRAME6("UDP to that port on the 2nd address", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local2, .dport = 6000, .payload = 10);
	FRAME6("TCP to a port on IPv6's any", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local2, .sport = 33000, .dport = 8080);
	FRAME6("UDP to a port on IPv6's any", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .dport = 5000);
	FRAME("IPv4 TCP to a port on IPv6's any only", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	      .src = peer4, .dst = local4, .sport = 33000, .dport = 8080);
	FRAME("IPv4 UDP to a port on IPv6's any only", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	      .src = peer4, .dst = local4, .dport = 5000);
	FRAME("IPv4 TCP to a port on IPv4's any", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	      .src = peer4, .dst = local4, .sport = 33000, .dport = 443);
	FRAME6("TCP to a port on IPv4's any only", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local, .sport = 33000, .dport = 443);
	FRAME("IPv4 TCP to a port on the IPv4 address", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	      .src = peer4, .dst = local4, .sport = 33000, .dport = 444);
	FRAME6("TCP to the IPv4 address mapped, on the wire", p, 0, XDP_PASS,
	       .proto = IPPROTO_TCP, .src = peer, .dst = mapped, .sport = 33000, .dport = 444);
	FRAME6("TCP to a port not served", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .sport = 33000, .dport = 22);
	FRAME6("UDP to the TCP port", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .dport = 8080);
	FRAME6("TCP to a port on any, not a local address", p, 0, XDP_PASS,
	       .proto = IPPROTO_TCP, .src = peer, .dst = other, .sport = 33000, .dport = 8080);
	FRAME6("version 4 in an IPv6 frame", p, 0, XDP_PASS, .version = 4, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local, .dport = 80);

	/* the ephemeral range */
	FRAME6("TCP to the ephemeral range", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .sport = 80, .dport = 40500);
	FRAME6("UDP to the range's high end", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local2, .sport = 53, .dport = 40999);
	FRAME6("TCP above the range", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .sport = 80, .dport = 41000);
	FRAME6("TCP to the range on another address", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	       .src = peer, .dst = other, .sport = 80, .dport = 40500);

	/* ICMPv6: the kernel's (neighbour discovery, echo, MLD) */
	FRAME6("neighbour solicitation, solicited-node group", p, 0, XDP_PASS,
	       .proto = IPPROTO_ICMPV6, .icmp = 135, .src = peer, .dst = "ff02::1:ff00:1",
	       .payload = 16);
	FRAME6("neighbour solicitation, the local address", p, 0, XDP_PASS,
	       .proto = IPPROTO_ICMPV6, .icmp = 135, .src = peer, .dst = local, .payload = 16);
	FRAME6("neighbour advertisement", p, 0, XDP_PASS, .proto = IPPROTO_ICMPV6, .icmp = 136,
	       .src = peer, .dst = local, .payload = 16);
	FRAME6("echo request", p, 0, XDP_PASS, .proto = IPPROTO_ICMPV6, .icmp = 128,
	       .src = peer, .dst = local, .payload = 56);
	FRAME6("MLDv2 report, behind hop-by-hop", p, 0, XDP_PASS, .proto = IPPROTO_ICMPV6,
	       .icmp = 143, .src = peer, .dst = "ff02::16", .ext = { IPPROTO_HOPOPTS },
	       .n_ext = 1, .payload = 24);
	FRAME6("MLD query to a joined group", p, 0, XDP_PASS, .proto = IPPROTO_ICMPV6,
	       .icmp = 130, .src = "fe80::1", .dst = group, .ext = { IPPROTO_HOPOPTS },
	       .n_ext = 1, .payload = 24);

	/* multicast */
	FRAME6("UDP to a joined group", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	       .dst = group, .dport = 7000, .payload = 100);
	FRAME6("UDP to another group", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = group2, .dport = 7000, .payload = 100);
	FRAME6("UDP to a joined group, port not served", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = group, .dport = 7001);
	FRAME6("TCP to a joined group", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = group, .dport = 8080);

	/* fragments: offset in bytes (a multiple of 8) | M 1 */
	FRAME6("first fragment of an ours datagram", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1,
	       .id = 0x12345678, .frag = 1, .dport = 5000, .payload = 64);
	FRAME6("middle fragment of it", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 0x12345678,
	       .frag = 72 | 1, .payload = 72);
	FRAME6("last fragment of it", p, 0, XDP_DROP, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 0x12345678,
	       .frag = 144, .payload = 20);
	FRAME6("later fragment, next header not the first's", p, 0, XDP_DROP,
	       .proto = IPPROTO_DSTOPTS, .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT },
	       .n_ext = 1, .id = 0x12345678, .frag = 144, .payload = 20);
	FRAME6("later fragment, other id", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 0x12345679,
	       .frag = 144, .payload = 20);
	FRAME6("later fragment, id's low 16 bits", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 0x5678,
	       .frag = 144, .payload = 20);
	FRAME6("later fragment, other source", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = other, .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1,
	       .id = 0x12345678, .frag = 144, .payload = 20);
	FRAME6("later fragment, other destination", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local2, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1,
	       .id = 0x12345678, .frag = 144, .payload = 20);
	FRAME6("first fragment not served", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 0xabcd, .frag = 1,
	       .dport = 5001, .payload = 64);
	FRAME6("its later fragment", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 0xabcd,
	       .frag = 72, .payload = 20);
	FRAME6("first fragment not served, id of an ours datagram", p, 0, XDP_PASS,
	       .proto = IPPROTO_TCP, .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT },
	       .n_ext = 1, .id = 0x12345678, .frag = 1, .dport = 22, .payload = 64);
	FRAME6("later fragment of the id reused", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1,
	       .id = 0x12345678, .frag = 144, .payload = 20);
	FRAME6("first TCP fragment, ephemeral range", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 7,
	       .frag = 1, .sport = 80, .dport = 40001, .payload = 100);
	FRAME6("its later fragment", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 7, .frag = 120,
	       .payload = 100);
	FRAME6("first ICMPv6 fragment, id of an ours datagram", p, 0, XDP_PASS,
	       .proto = IPPROTO_ICMPV6, .icmp = 128, .src = peer, .dst = local,
	       .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 7, .frag = 1, .payload = 100);
	FRAME6("later fragment of that id", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 7, .frag = 120,
	       .payload = 100);
	FRAME6("fragments of a group's datagram", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = group, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 8,
	       .frag = 1, .dport = 7000, .payload = 64);
	FRAME6("later fragment to the group", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = group, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 8,
	       .frag = 72, .payload = 8);
	FRAME6("later fragment to another group", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = group2, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 8,
	       .frag = 72, .payload = 8);
	FRAME6("atomic fragment (offset 0, M 0), served", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 9,
	       .dport = 5000, .payload = 64);
	FRAME6("a later fragment of its id", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 9, .frag = 72,
	       .payload = 8);
	FRAME6("two Fragment headers", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = local, .ext = { IPPROTO_FRAGMENT, IPPROTO_FRAGMENT }, .n_ext = 2,
	       .id = 10, .dport = 5000, .payload = 64);

	/* extension headers */
	FRAME6("hop-by-hop, TCP", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .ext = { IPPROTO_HOPOPTS }, .n_ext = 1, .dport = 80);
	FRAME6("destination options (24 bytes), UDP", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local, .ext = { IPPROTO_DSTOPTS }, .n_ext = 1, .ext_len = 2,
	       .dport = 5000);
	FRAME6("routing, segments left 0", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .ext = { IPPROTO_ROUTING }, .n_ext = 1, .ext_len = 2,
	       .dport = 80);
	FRAME6("routing, segments left 1", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .ext = { IPPROTO_ROUTING }, .n_ext = 1, .ext_len = 2, .segleft = 1,
	       .dport = 80);
	FRAME6("4 headers: hop-by-hop, dst, routing, dst", p, 0, XDP_DROP, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local,
	       .ext = { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS },
	       .n_ext = 4, .ext_len = 1, .dport = 80);
	FRAME6("5 headers", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer, .dst = local,
	       .ext = { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS,
			IPPROTO_DSTOPTS },
	       .n_ext = 5, .dport = 80);
	FRAME6("hop-by-hop not first", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .ext = { IPPROTO_DSTOPTS, IPPROTO_HOPOPTS }, .n_ext = 2,
	       .dport = 80);
	FRAME6("AH", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer, .dst = local,
	       .ext = { IPPROTO_AH }, .n_ext = 1, .ext_len = 4, .dport = 80);
	FRAME6("no next header", p, 0, XDP_PASS, .proto = IPPROTO_NONE, .src = peer,
	       .dst = local, .dport = 80);
	FRAME6("hop-by-hop, first fragment, dst, UDP", p, 0, XDP_DROP, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local,
	       .ext = { IPPROTO_HOPOPTS, IPPROTO_FRAGMENT, IPPROTO_DSTOPTS }, .n_ext = 3,
	       .id = 11, .frag = 1, .dport = 5000, .payload = 64);
	FRAME6("hop-by-hop, its later fragment", p, 0, XDP_DROP, .proto = IPPROTO_DSTOPTS,
	       .src = peer, .dst = local, .ext = { IPPROTO_HOPOPTS, IPPROTO_FRAGMENT },
	       .n_ext = 2, .id = 11, .frag = 72, .payload = 64);
	FRAME6("4 headers then a later fragment's header", p, 0, XDP_PASS,
	       .proto = IPPROTO_UDP, .src = peer, .dst = local,
	       .ext = { IPPROTO_HOPOPTS, IPPROTO_DSTOPTS, IPPROTO_ROUTING, IPPROTO_DSTOPTS,
			IPPROTO_FRAGMENT },
	       .n_ext = 5, .id = 11, .frag = 72, .payload = 64);

	/* truncated: every prefix of an ours frame but the whole one passes */
	{
		struct frame6 f = { .proto = IPPROTO_TCP, .src = peer, .dst = local,
				    .dport = 80 };
		size_t full = build6(buf, sizeof(buf), &f), cut;

		for (cut = 14; cut < full; cut++)
			EXPECT("truncated IPv6 TCP frame", p, buf, cut, 0, XDP_PASS, 0);
		EXPECT("the whole IPv6 TCP frame", p, buf, full, 0, XDP_DROP, 0);
		f.proto = IPPROTO_UDP;
		f.dport = 5000;
		full = build6(buf, sizeof(buf), &f);
		for (cut = 14; cut < full; cut++)
			EXPECT("truncated IPv6 UDP frame", p, buf, cut, 0, XDP_PASS, 0);
		EXPECT("the whole IPv6 UDP frame", p, buf, full, 0, XDP_DROP, 0);
		f.ext[0] = IPPROTO_HOPOPTS;
		f.ext[1] = IPPROTO_ROUTING;
		f.ext[2] = IPPROTO_FRAGMENT;
		f.ext[3] = IPPROTO_DSTOPTS;
		f.n_ext = 4;
		f.ext_len = 1;
		f.id = 12;
		full = build6(buf, sizeof(buf), &f);
		for (cut = 14; cut < full; cut++)
			EXPECT("truncated IPv6 UDP frame, extension headers", p, buf, cut, 0,
			       XDP_PASS, 0);
		EXPECT("the whole IPv6 UDP frame, extension headers", p, buf, full, 0, XDP_DROP,
		       0);
	}

	/* a deleted port, address, group */
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, a6(local), 80, false) == 0, "del tcp 80");
	FRAME6("TCP to the port deleted", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer,
	       .dst = local, .dport = 80);
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, dpsock_filter_any6(), 8080, false) == 0,
	      "del tcp 8080 on IPv6's any");
	FRAME6("TCP to the port deleted on IPv6's any", p, 0, XDP_PASS, .proto = IPPROTO_TCP,
	       .src = peer, .dst = local, .dport = 8080);
	CHECK(dpsock_xdpf_addr(x, a6(local2), false) == 0, "del addr 2");
	FRAME6("UDP to a port on any, address deleted", p, 0, XDP_PASS, .proto = IPPROTO_UDP,
	       .src = peer, .dst = local2, .dport = 5000);
	CHECK(dpsock_xdpf_group(x, a6(group), false) == 0, "leave group");
	FRAME6("UDP to the group left", p, 0, XDP_PASS, .proto = IPPROTO_UDP, .src = peer,
	       .dst = group, .dport = 7000);
	FRAME("IPv4 still served", p, 0, XDP_DROP, .proto = IPPROTO_TCP, .src = peer4,
	      .dst = local4, .sport = 33000, .dport = 443);

	check_stats(x, "ipv6");
	dpsock_xdpf_close(x);
}

/* ---- 3. VLAN and a socket ------------------------------------------------------- */

static void
test_vlan_socket(void)
{
	const uint32_t local = ip4(10, 0, 0, 1), peer = ip4(10, 0, 0, 9);
	const char *local6 = "2001:db8::1", *peer6 = "2001:db8::9";
	const uint32_t q0 = 0;
	struct dpsock_xdpf *x;
	char err[512];
	uint8_t buf[256];
	int rc, p, xsk;

	xsk = xsk_open(0);
	if (xsk < 0)
		printf("note: no AF_XDP socket on %s (%s): the redirect is not checked\n", IF_A,
		       strerror(-xsk));
	x = dpsock_xdpf_open(ifindex, &xsk, &q0, xsk >= 0 ? 1 : 0, 100, &rc, err, sizeof(err));
	CHECK(x != NULL, "open with VLAN 100: %s", err);
	if (x == NULL)
		return;
	p = dpsock_xdpf_prog_fd(x);
	CHECK(dpsock_xdpf_addr(x, a4(local), true) == 0, "addr");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, a4(local), 8080, true) == 0, "port");
	CHECK(dpsock_xdpf_addr(x, a6(local6), true) == 0, "IPv6 addr");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, a6(local6), 8080, true) == 0, "IPv6 port");

	FRAME("VLAN 100, queue 0 (socket)", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	      .vlan = 100, .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 8080);
	FRAME("VLAN 100 with priority bits", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	      .vlan = 0xe000 | 100, .proto = IPPROTO_TCP, .src = peer, .dst = local,
	      .dport = 8080);
	FRAME("VLAN 100, first fragment", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	      .vlan = 100, .proto = IPPROTO_TCP, .src = peer, .dst = local, .id = 99,
	      .frag = 0x2000, .dport = 8080, .payload = 64);
	FRAME("VLAN 100, later fragment", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	      .vlan = 100, .proto = IPPROTO_TCP, .src = peer, .dst = local, .id = 99,
	      .frag = 10, .payload = 64);
	FRAME("VLAN 100, queue 1 (no socket)", p, 1, XDP_DROP, .vlan = 100,
	      .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 8080);
	FRAME("VLAN 100, ARP", p, 0, XDP_PASS, .vlan = 100, .ethertype = 0x0806);
	FRAME("VLAN 100, other port", p, 0, XDP_PASS, .vlan = 100, .proto = IPPROTO_TCP,
	      .src = peer, .dst = local, .dport = 8081);
	FRAME("untagged", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer, .dst = local,
	      .dport = 8080);
	FRAME("VLAN 200", p, 0, XDP_PASS, .vlan = 200, .proto = IPPROTO_TCP, .src = peer,
	      .dst = local, .dport = 8080);
	FRAME("priority tag (VLAN 0), VLAN 100 configured", p, 0, XDP_PASS, .vlan = 0xa000,
	      .proto = IPPROTO_TCP, .src = peer, .dst = local, .dport = 8080);
	FRAME6("IPv6, VLAN 100, queue 0 (socket)", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	       .vlan = 100, .proto = IPPROTO_TCP, .src = peer6, .dst = local6, .dport = 8080);
	FRAME6("IPv6, VLAN 100, first fragment", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	       .vlan = 100, .proto = IPPROTO_TCP, .src = peer6, .dst = local6,
	       .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 99, .frag = 1, .dport = 8080,
	       .payload = 64);
	FRAME6("IPv6, VLAN 100, later fragment", p, 0, xsk >= 0 ? XDP_REDIRECT : XDP_DROP,
	       .vlan = 100, .proto = IPPROTO_TCP, .src = peer6, .dst = local6,
	       .ext = { IPPROTO_FRAGMENT }, .n_ext = 1, .id = 99, .frag = 72, .payload = 64);
	FRAME6("IPv6, VLAN 100, queue 1 (no socket)", p, 1, XDP_DROP, .vlan = 100,
	       .proto = IPPROTO_TCP, .src = peer6, .dst = local6, .dport = 8080);
	FRAME6("IPv6, VLAN 100, neighbour solicitation", p, 0, XDP_PASS, .vlan = 100,
	       .proto = IPPROTO_ICMPV6, .icmp = 135, .src = peer6, .dst = "ff02::1:ff00:1",
	       .payload = 16);
	FRAME6("IPv6, untagged", p, 0, XDP_PASS, .proto = IPPROTO_TCP, .src = peer6,
	       .dst = local6, .dport = 8080);
	FRAME6("IPv6, VLAN 200", p, 0, XDP_PASS, .vlan = 200, .proto = IPPROTO_TCP,
	       .src = peer6, .dst = local6, .dport = 8080);
	{
		struct frame6 f = { .vlan = 100, .proto = IPPROTO_TCP, .src = peer6,
				    .dst = local6, .dport = 8080 };
		size_t full = build6(buf, sizeof(buf), &f), cut;

		for (cut = 14; cut < full; cut++)
			EXPECT("truncated tagged IPv6 frame", p, buf, cut, 0, XDP_PASS, 0);
	}
	{
		struct frame f = { .vlan = 100, .proto = IPPROTO_TCP, .src = peer, .dst = local,
				   .dport = 8080 };
		size_t full = build(buf, sizeof(buf), &f), cut;

		for (cut = 14; cut < full; cut++)
			EXPECT("truncated tagged frame", p, buf, cut, 0, XDP_PASS, 0);
		/* QinQ: a second tag inside */
		buf[16] = 0x81;
		buf[17] = 0x00;
		EXPECT("two tags", p, buf, full, 0, XDP_PASS, 0);
	}
	check_stats(x, "vlan");
	dpsock_xdpf_close(x);
	if (xsk >= 0)
		close(xsk);
}

/* ---- 4. the link: replacing a netlink program, dying with its process -------- */

/* A program that passes everything, attached through netlink in generic
 * mode: the AF_XDP PMD's program as it is on a driver without native XDP. */
static int
attach_pass_prog(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd, rc;

	fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "pmd_like", "GPL", insns, 2, NULL);
	if (fd < 0)
		return fd;
	rc = bpf_xdp_attach((int)ifindex, fd, XDP_FLAGS_SKB_MODE, NULL);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

static void
test_link(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	struct dpsock_xdpf *x;
	char err[512], name[32];
	uint8_t mode = 0;
	int pfd[2], rc, st, i, old;
	pid_t child;

	old = attach_pass_prog();
	CHECK(old >= 0, "netlink attach of a pass program: %s", strerror(-old));
	if (old < 0)
		return;
	CHECK(attached(&mode, name, sizeof(name)) != 0 && strcmp(name, "pmd_like") == 0 &&
	      mode == XDP_ATTACHED_SKB, "the PMD-like program runs: '%s', mode %u", name, mode);

	if (pipe(pfd) != 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	child = fork();
	if (child == 0) {
		close(pfd[0]);
		x = dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 0, &rc, err, sizeof(err));
		if (x == NULL)
			fprintf(stderr, "child: open: %s\n", err);
		if (write(pfd[1], &rc, sizeof(rc)) != sizeof(rc))
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	if (read(pfd[0], &rc, sizeof(rc)) != sizeof(rc))
		rc = -EPIPE;
	close(pfd[0]);
	CHECK(rc == 0, "the child's open: %s", strerror(-rc));
	CHECK(attached(&mode, name, sizeof(name)) != 0 && strcmp(name, "xsk_def_prog") == 0 &&
	      mode == XDP_ATTACHED_SKB,
	      "the child's filter took the PMD-like program's place in its mode: '%s', mode %u",
	      name, mode);

	/* the child's link: nobody else replaces it */
	x = dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 0, &rc, err, sizeof(err));
	CHECK(x == NULL && rc == -EBUSY && strstr(err, "BPF link") != NULL,
	      "a second filter over the child's link: rc %d, '%s'", rc, x ? "" : err);
	dpsock_xdpf_close(x);
	CHECK(attached(&mode, name, sizeof(name)) != 0 && strcmp(name, "xsk_def_prog") == 0,
	      "the child's filter stays: '%s'", name);

	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	for (i = 0; i < 100 && attached(&mode, name, sizeof(name)) != 0; i++)
		nanosleep(&ts, NULL);
	CHECK(attached(&mode, name, sizeof(name)) == 0,
	      "after kill -9 of the child the interface still runs '%s'", name);
	printf("after kill -9 of the filter's process: XDP on %s: %s\n", IF_A,
	       attached(&mode, name, sizeof(name)) == 0 ? "none" : name);
	close(old);
}

/* ---- 5. live: frames through the veth ------------------------------------------- */

/* Connect to sa from this namespace within 500 ms? */
static bool
tcp_connects_sa(const struct sockaddr *sa, socklen_t salen)
{
	struct pollfd pfd;
	int fd, e = 0;
	socklen_t len = sizeof(e);
	bool ok;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	if (connect(fd, sa, salen) != 0 && errno != EINPROGRESS) {
		close(fd);
		return false;
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	ok = poll(&pfd, 1, 500) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 &&
	     e == 0;
	close(fd);
	return ok;
}

static bool
tcp_connects(uint32_t addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = addr };

	return tcp_connects_sa((struct sockaddr *)&sa, sizeof(sa));
}

static bool
tcp_connects6(const char *addr, uint16_t port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	if (inet_pton(AF_INET6, addr, &sa.sin6_addr) != 1)
		return false;
	return tcp_connects_sa((struct sockaddr *)&sa, sizeof(sa));
}

static int
tcp_listen_sa(const struct sockaddr *sa, socklen_t salen)
{
	int fd = socket(sa->sa_family, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, salen) != 0 || listen(fd, 8) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int
tcp_listen(uint32_t addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = addr };

	return tcp_listen_sa((struct sockaddr *)&sa, sizeof(sa));
}

static int
tcp_listen6(const char *addr, uint16_t port)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	if (inet_pton(AF_INET6, addr, &sa.sin6_addr) != 1)
		return -1;
	return tcp_listen_sa((struct sockaddr *)&sa, sizeof(sa));
}

/*
 * The filter attached (native mode: veth has XDP) on IF_A, 10.0.0.1 and
 * fd00::1, with the kernel listening on TCP 9001 and 9002 there (an IPv4
 * and an IPv6 socket each) and dpsock "serving" 9001 on 10.0.0.1 and on
 * IPv6's any; a child in a namespace of its own, on IF_B (10.0.0.9,
 * fd00::9), connects to both over both families: 9002 is the kernel's (ARP,
 * IPv6 neighbour discovery and TCP pass), 9001's SYN is dropped (no socket
 * of dpsock's) so the kernel, listening, never answers it. The IPv6 half
 * is left out, with a note, when the namespace has no IPv6. Runs last: IF_B
 * goes with the child's namespace, and IF_A with it.
 */
static void
test_live(void)
{
	const uint32_t local = ip4(10, 0, 0, 1);
	const char *local6 = "fd00::1";
	struct dpsock_xdpf_stats s;
	struct dpsock_xdpf *x;
	char err[512], cmd[128], name[32];
	int to_child[2], to_parent[2], l1, l2, l61 = -1, l62 = -1, rc, st;
	uint8_t mode = 0;
	bool v6;
	pid_t child;
	char c = 0;

	if (system("ip addr add 10.0.0.1/24 dev " IF_A " && ip link set " IF_A " up && "
		   "ip link set lo up") != 0) {
		CHECK(0, "cannot configure %s", IF_A);
		return;
	}
	/* nodad: usable at once, no duplicate address detection to wait for */
	v6 = system("ip -6 addr add fd00::1/64 dev " IF_A " nodad 2>/dev/null") == 0;
	if (!v6)
		printf("note: no IPv6 in the namespace: the live IPv6 checks are left out\n");
	l1 = tcp_listen(local, 9001);
	l2 = tcp_listen(local, 9002);
	CHECK(l1 >= 0 && l2 >= 0, "kernel listeners");
	if (v6) {
		l61 = tcp_listen6(local6, 9001);
		l62 = tcp_listen6(local6, 9002);
		CHECK(l61 >= 0 && l62 >= 0, "kernel IPv6 listeners");
	}
	x = dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 0, &rc, err, sizeof(err));
	CHECK(x != NULL, "open: %s", err);
	if (x == NULL)
		return;
	CHECK(attached(&mode, name, sizeof(name)) != 0 && mode == XDP_ATTACHED_DRV,
	      "on veth the filter runs in native mode: mode %u", mode);
	CHECK(dpsock_xdpf_addr(x, a4(local), true) == 0, "addr");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, a4(local), 9001, true) == 0, "port");
	CHECK(dpsock_xdpf_addr(x, a6(local6), true) == 0, "IPv6 addr");
	CHECK(dpsock_xdpf_port(x, IPPROTO_TCP, dpsock_filter_any6(), 9001, true) == 0,
	      "IPv6 port");

	if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
		CHECK(0, "pipe: %s", strerror(errno));
		return;
	}
	child = fork();
	if (child == 0) {
		int fails = 0;

		if (unshare(CLONE_NEWNET) != 0)
			_exit(100);
		if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(101);
		if (system("ip addr add 10.0.0.9/24 dev " IF_B " && ip link set " IF_B " up") != 0)
			_exit(102);
		if (c && system("ip -6 addr add fd00::9/64 dev " IF_B " nodad") != 0)
			_exit(103);
		if (!tcp_connects(local, 9002))
			fails |= 1;
		if (tcp_connects(local, 9001))
			fails |= 2;
		if (c && !tcp_connects6(local6, 9002))
			fails |= 4;
		if (c && tcp_connects6(local6, 9001))
			fails |= 8;
		_exit(fails);
	}
	if (read(to_parent[0], &c, 1) != 1) {
		CHECK(0, "child did not start");
		return;
	}
	snprintf(cmd, sizeof(cmd), "ip link set " IF_B " netns %d", (int)child);
	CHECK(system(cmd) == 0, "%s", cmd);
	c = v6;
	if (write(to_child[1], &c, 1) != 1)
		CHECK(0, "child gone");
	waitpid(child, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) < 100, "child set-up failed: status %#x", st);
	CHECK(WIFEXITED(st) && !(WEXITSTATUS(st) & 1),
	      "TCP to the kernel's port 9002 through the filter failed");
	CHECK(WIFEXITED(st) && !(WEXITSTATUS(st) & 2),
	      "TCP to dpsock's port 9001 reached the kernel's listener");
	if (v6) {
		CHECK(WIFEXITED(st) && !(WEXITSTATUS(st) & 4),
		      "IPv6 TCP to the kernel's port 9002 through the filter failed");
		CHECK(WIFEXITED(st) && !(WEXITSTATUS(st) & 8),
		      "IPv6 TCP to dpsock's port 9001 reached the kernel's listener");
	}
	dpsock_xdpf_stats(x, &s);
	/* IPv6: a neighbour solicitation and TCP's frames more passed, a SYN
	 * more dropped */
	CHECK(s.no_socket >= (v6 ? 2u : 1u) && s.passed >= (v6 ? 6u : 3u) && s.redirected == 0,
	      "live counters: redirected %lu passed %lu no_socket %lu",
	      (unsigned long)s.redirected, (unsigned long)s.passed, (unsigned long)s.no_socket);
	printf("live on %s: passed %lu (ARP, neighbour discovery, the kernel's TCP), dropped %lu "
	       "(SYNs to dpsock's port, no socket)\n", IF_A, (unsigned long)s.passed,
	       (unsigned long)s.no_socket);
	dpsock_xdpf_close(x);
	close(l1);
	close(l2);
	if (l61 >= 0)
		close(l61);
	if (l62 >= 0)
		close(l62);
}

/* ---- --bench: the look-ups' cost --------------------------------------------- */

/* The AF_XDP PMD's program, reduced to its call: the frame to the AF_XDP
 * socket of its queue in xsks_map, or to the kernel when there is none. */
static int
load_pmd_like(int *map)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
		  .off = offsetof(struct xdp_md, rx_queue_index) },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		  .src_reg = BPF_PSEUDO_MAP_FD },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	*map = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "xsks_map", 4, 4, 64, NULL);
	if (*map < 0)
		return *map;
	insns[1].imm = *map;
	return bpf_prog_load(BPF_PROG_TYPE_XDP, "pmd_like", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ns per run of the program on the frame: the median of 5 runs of 2^20 */
static double
run_ns(int prog_fd, const uint8_t *frame, size_t len)
{
	double ns[5];

	for (unsigned int i = 0; i < 5; i++) {
		struct xdp_md ctx = { .data_end = (uint32_t)len, .ingress_ifindex = ifindex };
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (uint32_t)len,
			    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1u << 20);

		if (bpf_prog_test_run_opts(prog_fd, &o) != 0)
			return -1;
		ns[i] = o.duration;
	}
	qsort(ns, 5, sizeof(ns[0]), cmp_double);
	return ns[2];
}

static int
bench(void)
{
	const uint32_t local = ip4(198, 18, 0, 1), peer = ip4(198, 18, 0, 2);
	const uint32_t group = ip4(239, 1, 1, 1);
	static const struct {
		const char *name;
		struct frame f;
	} frames[] = {
		{ "udp_served", { .proto = IPPROTO_UDP, .dport = 11111, .sport = 40000, .payload = 64 } },
		{ "tcp_served", { .proto = IPPROTO_TCP, .dport = 80, .sport = 40000, .payload = 64 } },
		{ "tcp_ephemeral", { .proto = IPPROTO_TCP, .dport = 50000, .sport = 80, .payload = 64 } },
		{ "udp_group", { .proto = IPPROTO_UDP, .dport = 5000, .sport = 40000, .payload = 64 } },
		{ "tcp_kernel", { .proto = IPPROTO_TCP, .dport = 22, .sport = 40000, .payload = 64 } },
		{ "arp_kernel", { .ethertype = 0x0806, .payload = 28 } },
	};
	struct dpsock_xdpf *x;
	char err[512];
	int rc, pmd, map;

	x = dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 0, &rc, err, sizeof(err));
	if (x == NULL) {
		printf("skip: %s\n", err);
		return 77;
	}
	pmd = load_pmd_like(&map);
	if (pmd < 0) {
		printf("the PMD-like program does not load: %s\n", strerror(-pmd));
		return 1;
	}
	rc = dpsock_xdpf_addr(x, a4(local), true);
	for (uint16_t port = 11100; port < 11164 && rc == 0; port++)
		rc = dpsock_xdpf_port(x, port & 1 ? IPPROTO_UDP : IPPROTO_TCP, a4(local), port,
				      true);
	if (rc == 0)
		rc = dpsock_xdpf_port(x, IPPROTO_TCP, dpsock_filter_any4(), 80, true);
	if (rc == 0)
		rc = dpsock_xdpf_port(x, IPPROTO_UDP, dpsock_filter_any4(), 5000, true);
	if (rc == 0)
		rc = dpsock_xdpf_ephemeral(x, 49152, 60999);
	if (rc == 0)
		rc = dpsock_xdpf_group(x, a4(group), true);
	if (rc != 0) {
		printf("filling the filter: %s\n", strerror(-rc));
		return 1;
	}
	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		struct frame f = frames[i].f;
		uint8_t buf[256];
		size_t len;
		double a, b;

		f.src = peer;
		f.dst = strcmp(frames[i].name, "udp_group") == 0 ? group : local;
		if (f.dport == 11111)
			f.dport = 11101; /* one of the 64, UDP */
		len = build(buf, sizeof(buf), &f);
		a = run_ns(pmd, buf, len);
		b = run_ns(dpsock_xdpf_prog_fd(x), buf, len);
		if (a < 0 || b < 0) {
			printf("BPF_PROG_TEST_RUN failed: %s\n", strerror(errno));
			return 1;
		}
		printf("bench %s pmd_ns=%.1f dpsock_ns=%.1f\n", frames[i].name, a, b);
	}
	dpsock_xdpf_close(x);
	close(pmd);
	close(map);
	return 0;
}

/* ---- set-up ------------------------------------------------------------------ */

int
main(int argc, char **argv)
{
	char err[256];
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("skip: needs root (BPF programs, a network namespace)\n");
		return 77;
	}
	if (unshare(CLONE_NEWNET) != 0) {
		printf("skip: cannot make a network namespace: %s\n", strerror(errno));
		return 77;
	}
	/* left down: no frame of the kernel's (IPv6 neighbour discovery...)
	 * meets the program and its counters */
	if (system("ip link add " IF_A " numrxqueues 2 numtxqueues 2 type veth peer name " IF_B
		   " numrxqueues 2 numtxqueues 2") != 0) {
		printf("skip: cannot make a veth pair with ip(8) (iproute2, CONFIG_VETH)\n");
		return 77;
	}
	ifindex = if_nametoindex(IF_A);
	dpsock_log_init(RTE_LOG_WARNING);
	if (argc > 1 && strcmp(argv[1], "--bench") == 0)
		return bench();

	CHECK(dpsock_xdpf_open(9999, NULL, QNONE, 0, 0, &rc, err, sizeof(err)) == NULL &&
	      rc == -ENODEV, "open on a missing interface: %d %s", rc, err);
	CHECK(dpsock_xdpf_open(ifindex, NULL, QNONE, 0, 4095, &rc, err, sizeof(err)) == NULL &&
	      rc == -EINVAL, "VLAN 4095: %d %s", rc, err);

	test_verdicts();
	test_ipv6();
	test_vlan_socket();
	test_link();
	test_live();

	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("ok: %u checks\n", checks);
	return 0;
}

#endif /* DPSOCK_HAS_XDP_FILTER */
