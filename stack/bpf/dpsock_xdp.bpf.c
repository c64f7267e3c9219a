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
 *   2. IPv4 (ARP, IPv6, LLDP, ... pass) with a sane header: version 4,
 *      IHL >= 5, the whole header in the frame;
 *   3. TCP or UDP (ICMP, IGMP and the rest pass);
 *   4. to a local address (addrs_map), or, UDP only, to a multicast group
 *      (224.0.0.0/4) in groups_map;
 *   5. to a destination port in ports_map, looked up as {proto, dst, port}
 *      then {proto, 0 (any local address), port}, or in dpsock's ephemeral
 *      range (ephemeral_map: the replies to its active opens). The TCP (20
 *      bytes) or UDP (8 bytes) header must be in the frame, or the frame
 *      passes: the kernel drops such a runt without an answer.
 * Ours goes to the AF_XDP socket of the frame's queue (xsks_map, keyed by
 * the interface's queue index). A queue without a socket drops it and
 * counts no_socket: the kernel would answer a TCP segment of a connection
 * it does not know with a RST.
 *
 * IP fragments: only the first one (offset 0, MF set) carries the ports. It
 * decides as above for its whole datagram; when ours, its {source,
 * destination, IP id, protocol} goes into frags_map, and the later
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
#include <linux/types.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "dpsock_xdp.h"

/* the kernel's net/ip.h, which is not uapi */
#define FRAG_MF 0x2000
#define FRAG_OFFSET 0x1fff

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

/* The interface's local addresses (network order) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_ADDRS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
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

/* Joined multicast groups (network order) -> 1. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, DPSOCK_XDP_GROUPS_MAX);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
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

/* Is TCP/UDP to (daddr, dport) served? dport in host order. */
static __always_inline int
port_served(__u8 proto, __u32 daddr, __u16 dport)
{
	struct dpsock_xdp_port_key k = {
		.addr = daddr,
		.port = dport,
		.proto = proto,
	};
	const struct dpsock_xdp_range *r;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(&ports_map, &k) != NULL)
		return 1;
	k.addr = 0;
	if (bpf_map_lookup_elem(&ports_map, &k) != NULL)
		return 1;
	r = bpf_map_lookup_elem(&ephemeral_map, &zero);
	return r != NULL && r->hi != 0 && dport >= r->lo && dport <= r->hi;
}

SEC("xdp")
int
dpsock_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	const struct dpsock_xdp_config *cfg;
	struct dpsock_xdp_frag_key fk;
	struct iphdr *ip;
	__u16 ethertype, vlan, frag, dport;
	__u32 zero = 0, daddr;
	__u8 proto;
	void *l4;

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
		if (vlan == 0 || (bpf_ntohs(t->tci) & 0x0fff) != vlan)
			return pass();
		ethertype = t->proto;
		ip = (void *)(t + 1);
	} else if (vlan != 0) {
		return pass();
	}
	if (ethertype != bpf_htons(ETH_P_IP))
		return pass();
	if ((void *)(ip + 1) > end)
		return pass();
	if (ip->version != 4 || ip->ihl < 5)
		return pass();
	l4 = (void *)ip + ip->ihl * 4;
	if (l4 > end)
		return pass();
	proto = ip->protocol;
	if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
		return pass();

	daddr = ip->daddr;
	if ((daddr & bpf_htonl(0xf0000000)) == bpf_htonl(0xe0000000)) {
		if (proto != IPPROTO_UDP || bpf_map_lookup_elem(&groups_map, &daddr) == NULL)
			return pass();
	} else if (bpf_map_lookup_elem(&addrs_map, &daddr) == NULL) {
		return pass();
	}

	frag = bpf_ntohs(ip->frag_off) & (FRAG_MF | FRAG_OFFSET);
	fk.saddr = ip->saddr;
	fk.daddr = daddr;
	fk.id = ip->id;
	fk.proto = proto;
	fk.pad = 0;
	if (frag & FRAG_OFFSET) {
		/* a later fragment: its first one decided */
		if (bpf_map_lookup_elem(&frags_map, &fk) == NULL)
			return pass();
		return ours(ctx, 1);
	}

	/* Unfragmented, or a first fragment: the destination port decides.
	 * The ports are the first 4 bytes of both headers. */
	if (proto == IPPROTO_TCP) {
		if (l4 + 20 > end)
			return pass();
	} else if (l4 + 8 > end) {
		return pass();
	}
	dport = bpf_ntohs(*(__be16 *)(l4 + 2));
	if (!port_served(proto, daddr, dport)) {
		if (frag)
			bpf_map_delete_elem(&frags_map, &fk);
		return pass();
	}
	if (frag) {
		__u8 one = 1;

		bpf_map_update_elem(&frags_map, &fk, &one, BPF_ANY);
	}
	return ours(ctx, frag != 0);
}

char _license[] SEC("license") = "Dual BSD/GPL";
