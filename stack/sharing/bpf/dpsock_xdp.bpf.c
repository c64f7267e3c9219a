/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_xdp.bpf.c — dpsockd's XDP program for an AF_XDP port that shares
 * its interface with the kernel (../filter_priv.h has the served set,
 * ../xdp_filter.c loads this program in place of the AF_XDP PMD's own).
 * The PMD's default program gives the sockets every frame of their queues;
 * this one gives them only dpsock's flows and passes the rest to the
 * kernel, which keeps ARP, ICMP, IPv6's neighbour discovery, its own
 * sockets and the interface.
 *
 * A frame is dpsock's ("ours") when, in this order:
 *   1. Ethernet, with one 802.1Q tag of the configured VLAN when config_map
 *      says one (untagged frames and other VLANs pass), or untagged when it
 *      says 0 (tagged frames pass, but a priority tag, VLAN 0, counts as
 *      untagged). Stacked tags (QinQ) pass. The tag must
 *      be in the frame: an interface that strips tags on receive (rxvlan
 *      offload) hides them from XDP;
 *   2. IPv4 or IPv6 (ARP, LLDP, ... pass) with a sane header:
 *      IPv4: version 4, IHL >= 5, the whole header in the frame;
 *      IPv6: version 6, the 40-byte fixed header in the frame, and a
 *      destination that is not IPv4-mapped (::ffff:0:0/96 never appears
 *      on the wire, RFC 4291 2.5.5.2, and dpsock's worker drops it; its
 *      key would be an IPv4 address's);
 *   3. TCP or UDP (ICMP, IGMP, ICMPv6 with neighbour discovery and MLD,
 *      and the rest pass). IPv6's TCP/UDP header may follow up to
 *      IPV6_EXT_MAX extension headers in all, each in the frame (below);
 *   4. to a local address (addrs_map), or, UDP only, to a multicast group
 *      (224.0.0.0/4, ff00::/8) in groups_map;
 *   5. to a destination port in ports_map, looked up as {proto, dst, port}
 *      then {proto, the frame's family's any address, port} (::ffff:0.0.0.0
 *      for IPv4, :: for IPv6: a port served on every address of one family
 *      is not served on the other's), or in dpsock's ephemeral range
 *      (ephemeral_map, both families: the replies to its active opens).
 *      The TCP (20 bytes) or UDP (8 bytes) header must be in the frame, or
 *      the frame passes: the kernel drops such a runt without an answer.
 * Addresses are keyed as 16 bytes for both families, an IPv4 one in its
 * mapped form ::ffff:a.b.c.d (dpsock_xdp.h).
 * Ours goes to the AF_XDP socket of the frame's queue (xsks_map, keyed by
 * the interface's queue index). A queue without a socket drops it and
 * counts no_socket: the kernel would answer a TCP segment of a connection
 * it does not know with a RST.
 *
 * IPv6 extension headers, walked in order, at most IPV6_EXT_MAX (4) of
 * them in all (a bounded, unrolled loop; the verifier takes it as plain
 * code): hop-by-hop options (0) as the first one only, routing (43) with
 * segments left 0 (this host is the final destination), destination
 * options (60), and one Fragment header (44). Anything else passes to the
 * kernel, which answers what is wrong with it: a hop-by-hop header further
 * in (an ICMPv6 parameter problem), a routing header with segments left
 * (the kernel forwards or refuses it), a fifth extension header, a second
 * Fragment header, AH and ESP (dpsock has no IPsec), an extension header
 * cut by the end of the frame. A Fragment header with offset 0 and M 0 (an
 * atomic fragment, RFC 6946) is a whole datagram.
 *
 * IP fragments: only the first one (offset 0, more fragments set) carries
 * the ports (IPv6: after the Fragment header and any destination options).
 * It decides as above for its whole datagram; when ours, its {source,
 * destination, identification, protocol} goes into frags_map (IPv6: the
 * 32-bit identification and no protocol, RFC 8200 lets the fragments'
 * next headers differ), and the later fragments (offset != 0) of a
 * datagram found there are ours too, any other later fragment passes. So
 * fragments that arrive BEFORE their first fragment (reordered on the
 * way) go to the kernel, which drops them after its reassembly timeout: a
 * datagram split that way is lost for dpsock. A first fragment that is not
 * ours (IPv6: not TCP/UDP either, its key has no protocol) removes its key,
 * so that a reused identification does not inherit an old decision. Keys
 * are not removed on the last fragment (the fragments may arrive in any
 * order after the first): the map is an LRU and the oldest datagrams make
 * room.
 *
 * Counters, per CPU (stats_map): redirected, passed, frags (fragments
 * redirected, first ones included, a subset of redirected), no_socket.
 * Every frame is counted once in redirected, passed or no_socket.
 *
 * Built with clang -O2 -g -target bpf (stack/meson.build) and embedded in
 * the stack library; -g gives libbpf the BTF of the maps.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/types.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "dpsock_xdp.h"

/* the kernel's net/ip.h and net/ipv6.h, which are not uapi */
#define FRAG_MF 0x2000
#define FRAG_OFFSET 0x1fff
#define FRAG6_MF 0x0001
#define FRAG6_OFFSET 0xfff8

/* IPv6 extension headers walked before TCP/UDP, the Fragment header
 * included. TCP/UDP peers send a Fragment header, now and then a
 * hop-by-hop or destination options header, rarely a routing header: 4
 * covers them together; a longer chain passes to the kernel. Each header
 * walked is a few instructions more, unrolled, and more states for the
 * verifier. */
#define IPV6_EXT_MAX 4

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

/* net/ipv6.h's struct frag_hdr */
struct frag6_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

/* Queue index -> AF_XDP socket (the PMD's, one per queue it drives). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, DPSOCK_XDP_QUEUES_DEFAULT);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} xsks_map SEC(".maps");

/* The interface's local addresses of both families (16 bytes, network
 * order, IPv4 mapped) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_ADDRS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32[DPSOCK_XDP_ADDR_WORDS]);
	__type(value, __u8);
} addrs_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_PORTS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct dpsock_xdp_port_key);
	__type(value, __u8);
} ports_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dpsock_xdp_range);
} ephemeral_map SEC(".maps");

/* Joined multicast groups, as addrs_map's keys (224.0.0.0/4 mapped,
 * ff00::/8) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_GROUPS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32[DPSOCK_XDP_ADDR_WORDS]);
	__type(value, __u8);
} groups_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dpsock_xdp_config);
} config_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DPSOCK_XDP_FRAGS_MAX);
	__type(key, struct dpsock_xdp_frag_key);
	__type(value, __u8);
} frags_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DPSOCK_XDP_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} stats_map SEC(".maps");

/* Where a datagram's frame stands. */
enum {
	WHOLE,                    /* not fragmented (an atomic fragment too) */
	FIRST,                    /* first fragment: carries the ports */
	LATER,                    /* any other fragment: no L4 header */
};

/* A frame's network layer, as parse4() and parse6() read it. */
struct l3 {
	struct dpsock_xdp_frag_key fk; /* addresses (IPv4 mapped), fragment id */
	void *l4;                 /* the TCP/UDP header, unless LATER */
	__u8 proto;               /* IPPROTO_*: the L4 protocol (LATER: IPv4's,
				   * or the Fragment header's next header) */
	__u8 frag;                /* WHOLE, FIRST, LATER */
	__u8 v6;
};

static __always_inline void
count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&stats_map, &which);

	/* per CPU: no other writer */
	if (c)
		(*c)++;
}

static __always_inline int
pass(void)
{
	count(DPSOCK_XDP_PASSED);
	return XDP_PASS;
}

static __always_inline int
ours(struct xdp_md *ctx, int frag)
{
	__u32 q = ctx->rx_queue_index;
	long act;

	/* The redirect alone would fall back to XDP_DROP too; the lookup
	 * tells a missing socket apart for the counter. */
	if (bpf_map_lookup_elem(&xsks_map, &q) == NULL) {
		count(DPSOCK_XDP_NO_SOCKET);
		return XDP_DROP;
	}
	act = bpf_redirect_map(&xsks_map, q, XDP_DROP);
	if (act != XDP_REDIRECT) {
		/* the socket left between the lookup and the redirect */
		count(DPSOCK_XDP_NO_SOCKET);
		return XDP_DROP;
	}
	count(DPSOCK_XDP_REDIRECTED);
	if (frag)
		count(DPSOCK_XDP_FRAGS);
	return XDP_REDIRECT;
}

/* Is TCP/UDP to (daddr, dport) served? dport in host order. */
static __always_inline int
port_served(const struct l3 *l, __u16 dport)
{
	struct dpsock_xdp_port_key k = {
		.addr = { l->fk.daddr[0], l->fk.daddr[1], l->fk.daddr[2], l->fk.daddr[3] },
		.port = dport,
		.proto = l->proto,
	};
	const struct dpsock_xdp_range *r;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(&ports_map, &k) != NULL)
		return 1;
	/* the family's any: ::ffff:0.0.0.0 keeps its mapped prefix, :: not */
	if (l->v6) {
		k.addr[0] = 0;
		k.addr[1] = 0;
		k.addr[2] = 0;
	}
	k.addr[3] = 0;
	if (bpf_map_lookup_elem(&ports_map, &k) != NULL)
		return 1;
	r = bpf_map_lookup_elem(&ephemeral_map, &zero);
	return r != NULL && r->hi != 0 && dport >= r->lo && dport <= r->hi;
}

/* IPv4: a sane header. 0, or -1: the frame passes. */
static __always_inline int
parse4(struct iphdr *ip, void *end, struct l3 *l)
{
	__u16 frag;

	if ((void *)(ip + 1) > end)
		return -1;
	if (ip->version != 4 || ip->ihl < 5)
		return -1;
	l->l4 = (void *)ip + ip->ihl * 4;
	if (l->l4 > end)
		return -1;
	l->fk.saddr[2] = bpf_htonl(0x0000ffff);
	l->fk.saddr[3] = ip->saddr;
	l->fk.daddr[2] = bpf_htonl(0x0000ffff);
	l->fk.daddr[3] = ip->daddr;
	l->fk.id = ip->id;
	l->fk.proto = ip->protocol;
	l->proto = ip->protocol;
	frag = bpf_ntohs(ip->frag_off);
	l->frag = frag & FRAG_OFFSET ? LATER : frag & FRAG_MF ? FIRST : WHOLE;
	return 0;
}

/* IPv6: a sane fixed header, then the extension headers up to TCP/UDP or
 * a later fragment's payload (the file's header says which). 0, or -1:
 * the frame passes. */
static __always_inline int
parse6(struct ipv6hdr *ip6, void *end, struct l3 *l)
{
	void *p = (void *)(ip6 + 1);
	int i, fragment = 0;
	__u8 nh;

	if (p > end || ip6->version != 6)
		return -1;
	if (ip6->daddr.in6_u.u6_addr32[0] == 0 && ip6->daddr.in6_u.u6_addr32[1] == 0 &&
	    ip6->daddr.in6_u.u6_addr32[2] == bpf_htonl(0x0000ffff))
		return -1;
	__builtin_memcpy(l->fk.saddr, &ip6->saddr, 16);
	__builtin_memcpy(l->fk.daddr, &ip6->daddr, 16);
	l->v6 = 1;
	nh = ip6->nexthdr;
#pragma unroll
	for (i = 0; i < IPV6_EXT_MAX; i++) {
		if (nh == IPPROTO_FRAGMENT) {
			struct frag6_hdr *fh = p;
			__u16 off;

			/* a second one: no datagram has two */
			if ((void *)(fh + 1) > end || fragment)
				return -1;
			fragment = 1;
			off = bpf_ntohs(fh->frag_off);
			nh = fh->nexthdr;
			p = (void *)(fh + 1);
			l->fk.id = fh->identification;
			if (off & FRAG6_OFFSET) {
				/* the rest is payload: frags_map decides */
				l->frag = LATER;
				break;
			}
			if (off & FRAG6_MF)
				l->frag = FIRST;
			continue;
		}
		if ((nh == IPPROTO_HOPOPTS && i == 0) || nh == IPPROTO_ROUTING ||
		    nh == IPPROTO_DSTOPTS) {
			/* hdrlen: 8-byte units after the first 8 */
			struct ipv6_rt_hdr *h = p;

			if (p + 8 > end)
				return -1;
			if (nh == IPPROTO_ROUTING && h->segments_left != 0)
				return -1;
			nh = h->nexthdr;
			p += (h->hdrlen + 1) * 8;
			continue;
		}
		break;
	}
	l->proto = nh;
	l->l4 = p;
	return 0;
}

/* Named as libxdp's default AF_XDP program, with its version marker at the
 * end: the AF_XDP PMD of a takeover's new process (libxdp's
 * xsk_socket__create) then finds this program on the interface and puts
 * its sockets into xsks_map, where it would otherwise try to attach a
 * program of its own, which the kernel refuses under a BPF link (EBUSY):
 * the program stays attached from one process to the next
 * (../xdp_filter.c, docs/architecture.md). */
SEC("xdp")
int
xsk_def_prog(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	const struct dpsock_xdp_config *cfg;
	__u16 ethertype, vlan, dport;
	__u32 zero = 0;
	struct l3 l;
	void *ip;
	int mc;

	if ((void *)(eth + 1) > end)
		return pass();
	cfg = bpf_map_lookup_elem(&config_map, &zero);
	vlan = cfg != NULL ? cfg->vlan : 0;
	ethertype = eth->h_proto;
	ip = (void *)(eth + 1);
	if (ethertype == bpf_htons(ETH_P_8021Q)) {
		struct vlan_tag *t = (void *)(eth + 1);

		if ((void *)(t + 1) > end)
			return pass();
		/* an untagged port's is VLAN 0: a priority tag (802.1p, the
		 * PCP bits alone) is untagged, as the worker and Linux take it */
		if ((bpf_ntohs(t->tci) & 0x0fff) != vlan)
			return pass();
		ethertype = t->proto;
		ip = (void *)(t + 1);
	} else if (vlan != 0) {
		return pass();
	}

	/* the keys' padding and IPv4's mapped prefix: zeros */
	__builtin_memset(&l, 0, sizeof(l));
	if (ethertype == bpf_htons(ETH_P_IP)) {
		if (parse4(ip, end, &l) < 0)
			return pass();
	} else if (ethertype == bpf_htons(ETH_P_IPV6)) {
		if (parse6(ip, end, &l) < 0)
			return pass();
	} else {
		return pass();
	}
	if (l.frag != LATER && l.proto != IPPROTO_TCP && l.proto != IPPROTO_UDP) {
		/* IPv6's key has no protocol: its id may be an old datagram's
		 * of ours */
		if (l.v6 && l.frag == FIRST)
			bpf_map_delete_elem(&frags_map, &l.fk);
		return pass();
	}

	mc = l.v6 ? (l.fk.daddr[0] & bpf_htonl(0xff000000)) == bpf_htonl(0xff000000) :
		    (l.fk.daddr[3] & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000);
	if (mc) {
		/* a later fragment's protocol is its first fragment's concern */
		if ((l.frag != LATER && l.proto != IPPROTO_UDP) ||
		    bpf_map_lookup_elem(&groups_map, l.fk.daddr) == NULL)
			return pass();
	} else if (bpf_map_lookup_elem(&addrs_map, l.fk.daddr) == NULL) {
		return pass();
	}

	if (l.frag == LATER) {
		/* its first fragment decided */
		if (bpf_map_lookup_elem(&frags_map, &l.fk) == NULL)
			return pass();
		return ours(ctx, 1);
	}

	/* Whole, or a first fragment: the destination port decides. The
	 * ports are the first 4 bytes of both headers. */
	if (l.proto == IPPROTO_TCP) {
		if (l.l4 + 20 > end)
			return pass();
	} else if (l.l4 + 8 > end) {
		return pass();
	}
	dport = bpf_ntohs(*(__be16 *)(l.l4 + 2));
	if (!port_served(&l, dport)) {
		if (l.frag == FIRST)
			bpf_map_delete_elem(&frags_map, &l.fk);
		return pass();
	}
	if (l.frag == FIRST) {
		__u8 one = 1;

		bpf_map_update_elem(&frags_map, &l.fk, &one, BPF_ANY);
	}
	return ours(ctx, l.frag != WHOLE);
}

char _license[] SEC("license") = "Dual BSD/GPL";

/* libxdp's marker of its default program's version (xsk_prog_version in
 * section xdp_metadata, 1 in libxdp 1.2-1.6): it adopts a program named
 * xsk_def_prog only with it (see xsk_def_prog above). */
__uint(xsk_prog_version, 1) SEC("xdp_metadata");
