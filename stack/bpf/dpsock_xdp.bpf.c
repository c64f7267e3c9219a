/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_xdp.bpf.c — dpsockd's XDP program for an AF_XDP port that shares
 * its interface with the kernel (../filter_priv.h has the served set,
 * ../xdp_filter.c loads this program in place of the AF_XDP PMD's own).
 * The PMD's default program gives the sockets every frame of their queues;
 * this one gives them only dpsock's flows and passes the rest to the
 * kernel, which keeps ARP, ICMP, its own sockets and the interface.
 *
 * A frame is dpsock's ("ours") when, in this order:
 *   1. Ethernet, with one 802.1Q tag of the configured VLAN when config_map
 *      says one (untagged frames and other VLANs pass), or untagged when it
 *      says 0 (tagged frames pass). Stacked tags (QinQ) pass. The tag must
 *      be in the frame: an interface that strips tags on receive (rxvlan
 *      offload) hides them from XDP;
 *   2. IPv4 with a sane header (version 4, IHL >= 5, the whole header in
 *      the frame), or IPv6 (version 6, the fixed header in the frame, and
 *      up to IP6_EXT_MAX extension headers, hop-by-hop, routing,
 *      destination options and fragment, walked to the upper-layer header:
 *      a frame with more passes); ARP, LLDP, ... pass;
 *   3. TCP or UDP (ICMP, IGMP, ICMPv6 with neighbour discovery and MLD,
 *      and the rest pass);
 *   4. to a local address (addrs_map), or, UDP only, to a multicast group
 *      (224.0.0.0/4, ff00::/8) in groups_map;
 *   5. to a destination port in ports_map, looked up as {proto, dst, port}
 *      then {proto, the family's any local address, port}, or in dpsock's
 *      ephemeral range (ephemeral_map: the replies to its active opens).
 *      The TCP (20 bytes) or UDP (8 bytes) header must be in the frame, or
 *      the frame passes: the kernel drops such a runt without an answer.
 * Addresses are 16 bytes in every map, an IPv4 one mapped (dpsock_xdp.h).
 * Ours goes to the AF_XDP socket of the frame's queue (xsks_map, keyed by
 * the interface's queue index). A queue without a socket drops it and
 * counts no_socket: the kernel would answer a TCP segment of a connection
 * it does not know with a RST.
 *
 * IP fragments: only the first one (offset 0, MF set; IPv6: a fragment
 * header with offset 0 and the M flag) carries the ports. It decides as
 * above for its whole datagram; when ours, its {source, destination, IP id
 * (IPv6: the identification), protocol} goes into frags_map, and the later
 * fragments (offset != 0) of a datagram found there are ours too, any
 * other later fragment passes. So fragments that arrive BEFORE their first
 * fragment (reordered on the way) go to the kernel, which drops them after
 * its reassembly timeout: a datagram split that way is lost for dpsock. A
 * first fragment that is not ours removes its key, so that a reused IP id
 * does not inherit an old decision. Keys are not removed on the last
 * fragment (the fragments may arrive in any order after the first): the
 * map is an LRU and the oldest datagrams make room.
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
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/types.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "dpsock_xdp.h"

/* the kernel's net/ip.h and net/ipv6.h, which are not uapi */
#define FRAG_MF 0x2000
#define FRAG_OFFSET 0x1fff
#define IP6_MF 0x0001
#define IP6_OFFSET 0xfff8

struct frag6_hdr {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;
	__be32 identification;
};

/* IPv6 extension headers walked before the upper-layer header: a frame
 * with more passes to the kernel */
#define IP6_EXT_MAX 4

struct vlan_tag {
	__be16 tci;
	__be16 proto;
};

/* Queue index -> AF_XDP socket (the PMD's, one per queue it drives). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, DPSOCK_XDP_QUEUES_DEFAULT);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} xsks_map SEC(".maps");

/* The interface's local addresses (16 bytes, dpsock_xdp.h) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_ADDRS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32[4]);
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

/* Joined multicast groups (16 bytes) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_GROUPS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32[4]);
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

/* The any address of a frame's family, as ports_map keys it. */
static __always_inline void
any_of(__u32 a[4], int v6)
{
	a[0] = 0;
	a[1] = 0;
	a[2] = v6 ? 0 : bpf_htonl(0x0000ffff);
	a[3] = 0;
}

/* Is TCP/UDP to (daddr, dport) served? daddr 16 bytes (IPv4's mapped),
 * dport in host order. */
static __always_inline int
port_served(__u8 proto, const __u32 daddr[4], __u16 dport, int v6)
{
	struct dpsock_xdp_port_key k = {
		.addr = { daddr[0], daddr[1], daddr[2], daddr[3] },
		.port = dport,
		.proto = proto,
	};
	const struct dpsock_xdp_range *r;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(&ports_map, &k) != NULL)
		return 1;
	any_of(k.addr, v6);
	if (bpf_map_lookup_elem(&ports_map, &k) != NULL)
		return 1;
	r = bpf_map_lookup_elem(&ephemeral_map, &zero);
	return r != NULL && r->hi != 0 && dport >= r->lo && dport <= r->hi;
}

/* What the network header says, for the decision common to both families. */
struct l3_info {
	struct dpsock_xdp_frag_key fk; /* addresses, id, protocol */
	void *l4;                 /* the upper-layer header (a first fragment's,
				   * or an unfragmented datagram's) */
	int frag;                 /* a fragment at all */
	int later;                /* a fragment after the first (no ports) */
	int group;                /* the destination is a multicast group */
	int v6;
};

/* IPv4: version 4, IHL >= 5, the whole header in the frame. 0: pass. */
static __always_inline int
parse4(struct iphdr *ip, void *end, struct l3_info *i)
{
	__u16 frag;

	if ((void *)(ip + 1) > end)
		return 0;
	if (ip->version != 4 || ip->ihl < 5)
		return 0;
	i->l4 = (void *)ip + ip->ihl * 4;
	if (i->l4 > end)
		return 0;
	i->fk.proto = ip->protocol;
	i->fk.saddr[2] = i->fk.daddr[2] = bpf_htonl(0x0000ffff);
	i->fk.saddr[3] = ip->saddr;
	i->fk.daddr[3] = ip->daddr;
	i->fk.id = ip->id;
	i->group = (ip->daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000);
	frag = bpf_ntohs(ip->frag_off) & (FRAG_MF | FRAG_OFFSET);
	i->frag = frag != 0;
	i->later = (frag & FRAG_OFFSET) != 0;
	return 1;
}

/* IPv6: version 6, the fixed header in the frame; up to IP6_EXT_MAX
 * extension headers (hop-by-hop, routing, destination options, fragment)
 * walked to the upper-layer header. 0: pass (a runt, more headers). */
static __always_inline int
parse6(struct ipv6hdr *ip6, void *end, struct l3_info *i)
{
	__u8 nexthdr;
	void *h;
	int n;

	if ((void *)(ip6 + 1) > end)
		return 0;
	if (ip6->version != 6)
		return 0;
	__builtin_memcpy(i->fk.saddr, &ip6->saddr, 16);
	__builtin_memcpy(i->fk.daddr, &ip6->daddr, 16);
	i->v6 = 1;
	i->group = ip6->daddr.in6_u.u6_addr8[0] == 0xff;
	nexthdr = ip6->nexthdr;
	h = ip6 + 1;
#pragma unroll
	for (n = 0; n < IP6_EXT_MAX; n++) {
		if (nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
		    nexthdr == IPPROTO_DSTOPTS) {
			struct ipv6_opt_hdr *o = h;

			if ((void *)(o + 1) > end)
				return 0;
			nexthdr = o->nexthdr;
			h += (o->hdrlen + 1) * 8;
			continue;
		}
		if (nexthdr == IPPROTO_FRAGMENT) {
			struct frag6_hdr *f = h;
			__u16 off;

			if ((void *)(f + 1) > end)
				return 0;
			off = bpf_ntohs(f->frag_off);
			nexthdr = f->nexthdr;
			i->fk.id = f->identification;
			/* an atomic fragment (offset 0, no M flag) is whole */
			i->frag = (off & (IP6_MF | IP6_OFFSET)) != 0;
			i->later = (off & IP6_OFFSET) != 0;
			h = f + 1;
			if (i->later)
				break; /* the rest is payload */
			continue;
		}
		break;
	}
	if (nexthdr == IPPROTO_HOPOPTS || nexthdr == IPPROTO_ROUTING ||
	    nexthdr == IPPROTO_DSTOPTS || nexthdr == IPPROTO_FRAGMENT)
		return 0;
	if (h > end)
		return 0;
	i->fk.proto = nexthdr;
	i->l4 = h;
	return 1;
}

SEC("xdp")
int
dpsock_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	const struct dpsock_xdp_config *cfg;
	struct l3_info i = { 0 };
	__u16 ethertype, vlan, dport;
	__u32 zero = 0;
	void *l3, *l4;

	if ((void *)(eth + 1) > end)
		return pass();
	cfg = bpf_map_lookup_elem(&config_map, &zero);
	vlan = cfg != NULL ? cfg->vlan : 0;
	ethertype = eth->h_proto;
	l3 = eth + 1;
	if (ethertype == bpf_htons(ETH_P_8021Q)) {
		struct vlan_tag *t = (void *)(eth + 1);

		if ((void *)(t + 1) > end)
			return pass();
		if (vlan == 0 || (bpf_ntohs(t->tci) & 0x0fff) != vlan)
			return pass();
		ethertype = t->proto;
		l3 = t + 1;
	} else if (vlan != 0) {
		return pass();
	}
	if (ethertype == bpf_htons(ETH_P_IP)) {
		if (!parse4(l3, end, &i))
			return pass();
	} else if (ethertype == bpf_htons(ETH_P_IPV6)) {
		if (!parse6(l3, end, &i))
			return pass();
	} else {
		return pass();
	}
	if (i.fk.proto != IPPROTO_TCP && i.fk.proto != IPPROTO_UDP)
		return pass();

	if (i.group) {
		if (i.fk.proto != IPPROTO_UDP || bpf_map_lookup_elem(&groups_map, i.fk.daddr) == NULL)
			return pass();
	} else if (bpf_map_lookup_elem(&addrs_map, i.fk.daddr) == NULL) {
		return pass();
	}

	if (i.later) {
		/* a later fragment: its first one decided */
		if (bpf_map_lookup_elem(&frags_map, &i.fk) == NULL)
			return pass();
		return ours(ctx, 1);
	}

	/* Unfragmented, or a first fragment: the destination port decides.
	 * The ports are the first 4 bytes of both headers. */
	l4 = i.l4;
	if (i.fk.proto == IPPROTO_TCP) {
		if (l4 + 20 > end)
			return pass();
	} else if (l4 + 8 > end) {
		return pass();
	}
	dport = bpf_ntohs(*(__be16 *)(l4 + 2));
	if (!port_served(i.fk.proto, i.fk.daddr, dport, i.v6)) {
		if (i.frag)
			bpf_map_delete_elem(&frags_map, &i.fk);
		return pass();
	}
	if (i.frag) {
		__u8 one = 1;

		bpf_map_update_elem(&frags_map, &i.fk, &one, BPF_ANY);
	}
	return ours(ctx, i.frag);
}

char _license[] SEC("license") = "Dual BSD/GPL";
