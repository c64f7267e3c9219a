/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_xdp.h — what dpsockd's XDP program (dpsock_xdp.bpf.c) and its
 * loader (../xdp_filter.c) share: the maps' names, keys, values and sizes.
 * Included by the BPF object (clang -target bpf) and by the library (gcc):
 * linux/types.h only, fixed-size fields, explicit padding, so that both
 * compilers lay every key out byte for byte the same.
 */
#ifndef DPSOCK_XDP_H
#define DPSOCK_XDP_H

#include <linux/types.h>

/* Map sizes. Entries are the served set, not connections: a port per
 * listening or bound socket (or per address it listens on), an address per
 * address of the interface, a group per joined group. */
#define DPSOCK_XDP_ADDRS_MAX 256
#define DPSOCK_XDP_PORTS_MAX 8192
#define DPSOCK_XDP_GROUPS_MAX 1024
/* Datagrams being fragmented at once whose first fragment was ours; LRU:
 * the oldest make room (their late fragments then pass to the kernel). */
#define DPSOCK_XDP_FRAGS_MAX 4096
/* xsks_map's size in the object; the loader sets it to the highest
 * interface queue + 1 before loading. */
#define DPSOCK_XDP_QUEUES_DEFAULT 64

/*
 * Addresses, both families in one key: 16 bytes in network order, an IPv4
 * address in its IPv4-mapped form ::ffff:a.b.c.d (as struct dpsock_mc_addr
 * has it, abi/mcast_filter.h). addrs_map and groups_map are keyed by the
 * address alone (__u32[4]); the keys below embed one.
 */
#define DPSOCK_XDP_ADDR_WORDS 4

/* ports_map: {proto, dst addr, dport}, then {proto, the frame's family's
 * any address, dport}: ::ffff:0.0.0.0 for an IPv4 frame, :: for IPv6, so
 * that a port served on every IPv4 address is not served on IPv6's, and
 * the other way round (a dual-stack socket has an entry of each). */
struct dpsock_xdp_port_key {
	__u32 addr[DPSOCK_XDP_ADDR_WORDS]; /* network order, IPv4 mapped */
	__u16 port;               /* host order */
	__u8 proto;               /* IPPROTO_TCP, IPPROTO_UDP */
	__u8 pad;                 /* 0 */
};

/* ephemeral_map[0]: dpsock's ephemeral range, host order; 0/0: none. */
struct dpsock_xdp_range {
	__u16 lo;
	__u16 hi;
};

/* config_map[0]. */
struct dpsock_xdp_config {
	__u16 vlan;               /* 802.1Q VID of dpsock's frames; 0: untagged */
	__u16 pad;
};

/* frags_map: one fragmented datagram whose first fragment was ours. Only
 * the program writes and reads these keys. */
struct dpsock_xdp_frag_key {
	__u32 saddr[DPSOCK_XDP_ADDR_WORDS]; /* network order, IPv4 mapped */
	__u32 daddr[DPSOCK_XDP_ADDR_WORDS];
	__u32 id;                 /* IPv4: the 16-bit IP id as read (__be16,
				   * widened); IPv6: the Fragment header's
				   * 32-bit identification, network order */
	__u8 proto;               /* IPv4: the IP protocol; IPv6: 0 (RFC 8200
				   * lets the fragments' next headers differ) */
	__u8 pad[3];              /* 0 */
};

/* stats_map (per CPU, __u64 each). */
enum dpsock_xdp_counter {
	DPSOCK_XDP_REDIRECTED,
	DPSOCK_XDP_PASSED,
	DPSOCK_XDP_FRAGS,
	DPSOCK_XDP_NO_SOCKET,
	DPSOCK_XDP_COUNTERS
};

#endif /* DPSOCK_XDP_H */
