/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * filter_priv.h — the flows dpsock serves on a port it shares with the
 * kernel (docs/design.md, decision 9): only those leave the kernel.
 *
 * A port whose interface has no `address` in dpsock.conf follows its kernel
 * netdev (addresses, routes, neighbours: stack/netview/netview.c) and shares it: the
 * kernel keeps ARP, ICMP, its own sockets and every flow dpsock does not
 * serve. What dpsock serves is, per port:
 *   - the port's local addresses (the kernel's, on that netdev): a frame to
 *     any other destination is never dpsock's;
 *   - TCP/UDP to a local port an offloaded socket listens on or is bound to
 *     (on one local address, or on all: addr 0);
 *   - TCP/UDP to a port of dpsock's ephemeral range (tcp.ephemeral_min..max,
 *     reserved in the kernel: net.ipv4.ip_local_reserved_ports): the
 *     replies to its active opens and to its unbound UDP senders, with no
 *     per-connection entry;
 *   - UDP to a multicast group one of its sockets joined;
 *   - the IP fragments of all of the above (the first fragment decides for
 *     its datagram: source, destination, id and protocol remembered).
 * Everything else is the kernel's. Both families: an address is a
 * struct dpsock_mc_addr (abi/mcast_filter.h: 16 bytes, network order, an
 * IPv4 address in its mapped form ::ffff:a.b.c.d); a port entry's "every
 * local address" is ::ffff:0.0.0.0 for IPv4's and :: for IPv6's (a
 * dual-stack socket serves both).
 *
 * The registry (filter.c) counts the sockets behind each entry and tells a
 * port's backend only of changes; a backend makes the NIC, or the kernel,
 * steer exactly that set:
 *   xdp       AF_XDP (net_af_xdp): dpsockd's own XDP program, whose maps
 *             hold the set; frames it does not redirect to the port's AF_XDP
 *             sockets pass to the kernel (xdp_filter.c, bpf/dpsock_xdp.bpf.c)
 *   rte_flow  a NIC in isolated mode (rte_flow_isolate, mlx5): one rule per
 *             entry sends it to the workers' queues, the rest stays with the
 *             kernel (flow_filter.c)
 * Backend functions return 0 or -errno and are called from control paths
 * (never a worker's data path); they may make system calls.
 */
#ifndef DPSOCK_FILTER_PRIV_H
#define DPSOCK_FILTER_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_flow.h>

#include "mcast_filter.h"

/* ---- the registry (filter.c) ---------------------------------------------------- */

struct dpsock_stack;
struct dpsock_netview;
struct dpsock_xdpf_stats;

/* A takeover hands an XDP port's program over as these descriptors: the
 * BPF link that attaches it (the program stays attached while either
 * process holds it), the program and its maps. */
enum {
	DPSOCK_XDPF_LINK,
	DPSOCK_XDPF_PROG,
	DPSOCK_XDPF_XSKS,
	DPSOCK_XDPF_ADDRS,
	DPSOCK_XDPF_PORTS,
	DPSOCK_XDPF_EPH,
	DPSOCK_XDPF_GROUPS,
	DPSOCK_XDPF_CONFIG,
	DPSOCK_XDPF_STATS,
	DPSOCK_XDPF_FDS
};

/* After the ports started and the first net view: on each shared port, its
 * backend (an AF_XDP port: the XDP program; another port is refused with
 * -ENOTSUP), the ephemeral range reserved in the kernel and steered, the
 * local addresses. handed (NULL: none): per port, the XDP program a
 * takeover handed over (dpsock_xdpf_adopt; a port whose link is -1 loads
 * its own). No-op without a shared port. 0 or -errno, message in err. */
int dpsock_filter_init(struct dpsock_stack *d, const int (*handed)[DPSOCK_XDPF_FDS], char *err,
		       size_t errlen);
/* The holder of a takeover: port's XDP program as descriptors to hand
 * over (still the filter's); -ENOENT when the port has none. */
int dpsock_filter_xdp_fds(const struct dpsock_stack *d, unsigned int port,
			  int fds[DPSOCK_XDPF_FDS]);
/* Before the ports stop: the kernel gets every frame again; the
 * reservation is put back. */
void dpsock_filter_fini(struct dpsock_stack *d);
/* A socket serves proto (IPPROTO_TCP/UDP), local addr (one local address,
 * or a family's any: dpsock_filter_any4/6), port (host order); counted. hold: the port is also taken in the
 * kernel (a native socket's; a preloaded program's kernel socket holds its
 * own). -EADDRINUSE when the kernel has the port already; 0 without a
 * shared port. Any thread. */
int dpsock_filter_serve(struct dpsock_stack *d, uint8_t proto, struct dpsock_mc_addr addr,
			uint16_t port, bool hold);
void dpsock_filter_unserve(struct dpsock_stack *d, uint8_t proto, struct dpsock_mc_addr addr,
			   uint16_t port);
/* A multicast group (either family) joined on port port_idx (counted). */
int dpsock_filter_group(struct dpsock_stack *d, unsigned int port_idx,
			struct dpsock_mc_addr group, bool add);

/* Every local address of IPv4 (::ffff:0.0.0.0) and of IPv6 (::). */
static inline struct dpsock_mc_addr
dpsock_filter_any4(void)
{
	return dpsock_mc_addr4(0);
}

static inline struct dpsock_mc_addr
dpsock_filter_any6(void)
{
	struct dpsock_mc_addr a = { { 0, 0, 0, 0 } };

	return a;
}
/* The local addresses of a new net view (control side). */
void dpsock_filter_netview(struct dpsock_stack *d, const struct dpsock_netview *v);
/* The XDP program's counters on a port (zeros without one). */
void dpsock_filter_port_stats(struct dpsock_stack *d, unsigned int port_idx,
			      struct dpsock_xdpf_stats *out);

/* ---- the XDP backend (xdp_filter.c) ------------------------------------------ */

struct dpsock_xdpf;

/* Counters of the XDP program, summed over CPUs. */
struct dpsock_xdpf_stats {
	uint64_t redirected;   /* frames given to dpsock's AF_XDP sockets */
	uint64_t passed;       /* frames left to the kernel */
	uint64_t frags;        /* fragments redirected (first ones included) */
	uint64_t no_socket;    /* dpsock's frames on a queue without an AF_XDP
				* socket of dpsockd's: dropped (the kernel must not
				* answer them with a RST) */
};

/*
 * Load dpsockd's XDP program (built into the binary) for the interface
 * ifindex and put it in place of whatever XDP program the interface runs
 * (the AF_XDP PMD's), attached through a BPF link: the link is dpsockd's
 * open file, so when dpsockd exits or is killed the kernel detaches the
 * program and the interface is the kernel's again. xsk_fds[i] is the
 * AF_XDP socket bound to interface queue if_queues[i] (n of them). vlan: the
 * 802.1Q VLAN id dpsock's frames carry (0: untagged; a tagged frame of
 * another VLAN passes). Nothing is redirected until entries are added.
 * Returns NULL with a message in err: -errno in *ret (ENOTSUP: no BPF
 * links in this kernel; EPERM: not allowed to load BPF).
 */
struct dpsock_xdpf *dpsock_xdpf_open(unsigned int ifindex, const int *xsk_fds,
				     const uint32_t *if_queues, unsigned int n, uint16_t vlan,
				     int *ret, char *err, size_t errlen);
/* The holder's: x's descriptors, still x's (the hand-over sends copies). */
void dpsock_xdpf_fds(const struct dpsock_xdpf *x, int fds[DPSOCK_XDPF_FDS]);
/* The new process's: the program a takeover handed over (fds, owned from
 * here, closed on failure), attached all along to ifindex, instead of a
 * new one; its maps keep the holder's served set, this process's sockets
 * register theirs again. The rest as dpsock_xdpf_open. */
struct dpsock_xdpf *dpsock_xdpf_adopt(unsigned int ifindex, const int fds[DPSOCK_XDPF_FDS],
				      const int *xsk_fds, const uint32_t *if_queues, unsigned int n,
				      uint16_t vlan, int *ret, char *err, size_t errlen);
/* Detach the program (the kernel gets every frame again) and free it.
 * Best before the port closes: net_af_xdp's close tries to detach the
 * program it attached, and logs an error while dpsockd's link holds the
 * interface instead (harmless otherwise). */
void dpsock_xdpf_close(struct dpsock_xdpf *x);
/* A local address of the port (either family). */
int dpsock_xdpf_addr(struct dpsock_xdpf *x, struct dpsock_mc_addr addr, bool add);
/* TCP (6) or UDP (17) to local port (host order) on addr: a local
 * address, or every local address of a family (dpsock_filter_any4/6). */
int dpsock_xdpf_port(struct dpsock_xdpf *x, uint8_t proto, struct dpsock_mc_addr addr,
		     uint16_t port, bool add);
/* dpsock's ephemeral range, host order, lo <= hi (0, 0: none). */
int dpsock_xdpf_ephemeral(struct dpsock_xdpf *x, uint16_t lo, uint16_t hi);
/* UDP to a multicast group (224.0.0.0/4 mapped, or ff00::/8). */
int dpsock_xdpf_group(struct dpsock_xdpf *x, struct dpsock_mc_addr group, bool add);
void dpsock_xdpf_stats(const struct dpsock_xdpf *x, struct dpsock_xdpf_stats *out);
/* For tests only (test/unit/xdp_filter_test.c): the loaded program's fd, to
 * run it on crafted frames (BPF_PROG_TEST_RUN). -ENOTSUP without the XDP
 * program in the build. */
int dpsock_xdpf_prog_fd(const struct dpsock_xdpf *x);

/* ---- the rte_flow backend, isolated mode (flow_filter.c) --------------------- */

/*
 * One rule's match, as flow_filter.c builds it before it becomes an
 * rte_flow pattern (kept apart so that the construction is unit tested
 * without a NIC): ETH [VLAN vid] / IPV4|IPV6 dst=addr [/ TCP|UDP dst
 * port/mask], IPV4 for a mapped address (::ffff:a.b.c.d), IPV6 otherwise.
 * The ephemeral range becomes the fewest (port, mask) pairs that cover it
 * exactly, as an address range becomes CIDR blocks; a group becomes
 * IPV4|IPV6 dst=group / UDP.
 */
struct dpsock_flow_match {
	uint16_t vlan;            /* 0: no VLAN item */
	struct dpsock_mc_addr dst; /* either family, network order */
	uint8_t proto;            /* 6, 17, or 0: any (none of TCP/UDP items) */
	uint16_t port;            /* host order */
	uint16_t port_mask;       /* host order; 0: no port match */
};

/* The exact cover of [lo, hi] (host order) by (port, mask) blocks: up to
 * max of them into out. Returns how many, or -ENOSPC. */
int dpsock_flow_port_range(uint16_t lo, uint16_t hi, struct dpsock_flow_match *out,
			   unsigned int max, const struct dpsock_flow_match *tmpl);

/* (dpsock_flow_port_range also returns -EINVAL when lo > hi; a NULL tmpl
 * is a zeroed one.) Blocks in the cover of any port range (1-65534 takes
 * the most: 30). */
#define DPSOCK_FLOW_RANGE_MAX 30
/* Queues one rule spreads over, and RSS key bytes (as port_priv.h's
 * DPSOCK_PORT_QUEUES_MAX and DPSOCK_RSS_KEY_MAX: checked in flow_filter.c). */
#define DPSOCK_FLOW_QUEUES_MAX 64
#define DPSOCK_FLOW_KEY_MAX 64
/*
 * Priority of every rule the backend installs. The active-open steering's
 * 5-tuple rules (steer.c, priority 0) match inside the ephemeral range's
 * blocks and must win over them: two matching rules of equal priority are
 * undefined in rte_flow. mlx5's root table has at least priorities 0 and 1
 * (0-1 with 8 verbs priorities, 0-3 with 16).
 */
#define DPSOCK_FLOW_PRIORITY 1

/* A (proto, local address, local port) entry of the served set. */
struct dpsock_flow_port {
	uint8_t proto;            /* 6 or 17 */
	struct dpsock_mc_addr addr; /* one address, or every local address of
				     * a family: dpsock_filter_any4/6 */
	uint16_t port;            /* host order */
};

/* The served set, as the rule construction reads it (the backend's copy of
 * what it was told). */
struct dpsock_flow_set {
	uint16_t vlan;                        /* VLAN id, 0: untagged */
	const struct dpsock_mc_addr *addrs;   /* local addresses, both families */
	unsigned int n_addrs;
	const struct dpsock_flow_port *ports;
	unsigned int n_ports;
	uint16_t eph_lo, eph_hi;              /* host order; 0, 0: none */
	const struct dpsock_mc_addr *groups;  /* multicast groups, both families */
	unsigned int n_groups;
};

/*
 * The rules of a whole served set, duplicates dropped (a port served on
 * every address and on one of them gives one rule there): per local
 * address, each port entry on it or on every address of its family (an
 * entry on dpsock_filter_any4() reaches the IPv4 addresses only, one on
 * dpsock_filter_any6() the IPv6 ones: a dual-stack socket has one of
 * each), then the ephemeral range's TCP blocks and its UDP blocks (on every
 * address, both families: the replies to active opens of either); then
 * one UDP rule per group. A port entry on an address that is not local
 * gives none. Returns how many, -ENOSPC (more than max) or -EINVAL
 * (ephemeral lo > hi).
 */
int dpsock_flow_set_matches(const struct dpsock_flow_set *s, struct dpsock_flow_match *out,
			    unsigned int max);
/*
 * What one change of the set adds or takes away, one match per (entry,
 * address) pair and NOT deduplicated: the backend counts how many entries
 * need each rule. Each returns how many, or -ENOSPC / -EINVAL.
 *   addr       the rules local address addr brings (whether or not it is
 *              in s): s's port entries on addr or on every address of
 *              addr's family, the ephemeral blocks (TCP, then UDP) on addr
 *   port       entry e's rules: on every address of s of a family (e->addr
 *              that family's any), or on e->addr when it is one of s's;
 *              none otherwise
 *   ephemeral  [lo, hi]'s blocks, TCP then UDP, on every address of s,
 *              both families (0, 0: none)
 *   group      the one UDP rule of a group (not per address)
 */
int dpsock_flow_addr_matches(const struct dpsock_flow_set *s, struct dpsock_mc_addr addr,
			     struct dpsock_flow_match *out, unsigned int max);
int dpsock_flow_port_matches(const struct dpsock_flow_set *s, const struct dpsock_flow_port *e,
			     struct dpsock_flow_match *out, unsigned int max);
int dpsock_flow_ephemeral_matches(const struct dpsock_flow_set *s, uint16_t lo, uint16_t hi,
				  struct dpsock_flow_match *out, unsigned int max);
void dpsock_flow_group_match(const struct dpsock_flow_set *s, struct dpsock_mc_addr group,
			     struct dpsock_flow_match *out);

/*
 * One rule's attributes and pattern, with the storage its items point to:
 * build it in place and do not copy it (the items point into it).
 *   ETH       untagged_only and no VLAN: spec has_vlan 0, mask has_vlan 1
 *             (a tagged frame is not dpsock's: the kernel's VLAN devices
 *             keep theirs); else no spec (any). No EtherType in either
 *             family: the IP item that follows implies it
 *   VLAN      when m->vlan: tci spec vid, mask 0x0fff (priority ignored)
 *   IPV4      m->dst mapped (::ffff:a.b.c.d): dst spec a.b.c.d, mask
 *             255.255.255.255; nothing else
 *   IPV6      any other m->dst: dst spec m->dst, mask all ones; nothing
 *             else (no next header: the TCP|UDP item says it, and no
 *             extension header flags)
 *   TCP|UDP   when m->proto: dst_port spec port & mask, mask port_mask,
 *             network order; no spec (any port) when port_mask is 0
 *   END
 * attr: ingress, group 0, priority DPSOCK_FLOW_PRIORITY.
 * Returns 0, or -EINVAL (proto not 0, 6 or 17; a port mask without a
 * protocol; a VLAN id above 4094).
 */
struct dpsock_flow_rule {
	struct rte_flow_attr attr;
	struct rte_flow_item_eth eth_spec, eth_mask;
	struct rte_flow_item_vlan vlan_spec, vlan_mask;
	struct rte_flow_item_ipv4 ip_spec, ip_mask;
	struct rte_flow_item_ipv6 ip6_spec, ip6_mask;
	struct rte_flow_item_tcp tcp_spec, tcp_mask;
	struct rte_flow_item_udp udp_spec, udp_mask;
	struct rte_flow_item pattern[5];
};
int dpsock_flow_rule_build(struct dpsock_flow_rule *r, const struct dpsock_flow_match *m,
			   bool untagged_only);

/*
 * The action every rule of a port and family shares, built in place (do
 * not copy): QUEUE queues[0] when n is 1; else RSS over queues[0..n) with
 * hash types types (0: the PMD's default) and key (NULL or key_len 0: the
 * PMD's default key; mlx5 wants 40 bytes), level 0 (no tunnels), default
 * function. Returns 0, or -EINVAL (n 0 or above DPSOCK_FLOW_QUEUES_MAX,
 * key_len above DPSOCK_FLOW_KEY_MAX).
 */
struct dpsock_flow_actions {
	struct rte_flow_action_rss rss;
	struct rte_flow_action_queue queue;
	uint16_t queues[DPSOCK_FLOW_QUEUES_MAX];
	uint8_t key[DPSOCK_FLOW_KEY_MAX];
	struct rte_flow_action actions[2];
};
int dpsock_flow_actions_build(struct dpsock_flow_actions *a, const uint16_t *queues,
			      unsigned int n, const uint8_t *key, unsigned int key_len,
			      uint64_t types);

/*
 * The RSS hash types of the IPv6 rules, from a port's (RTE_ETH_RSS_*): types
 * as they are when they hold an IPv6 type, or are 0 (the PMD's default);
 * else types plus the IPv6 counterpart of each IPv4 type (IPV4 → IPV6,
 * FRAG_IPV4 → FRAG_IPV6, NONFRAG_IPV4_TCP|UDP|SCTP|OTHER →
 * NONFRAG_IPV6_TCP|UDP|SCTP|OTHER). A PMD takes an IPv6 frame's hash
 * fields from the IPv6 types (mlx5 picks them by the rule's L3 item), so
 * IPv4 types alone would leave an IPv6 rule's addresses, or the whole
 * frame, out of the hash: its flows crowded onto few queues.
 */
uint64_t dpsock_flow_rss_types6(uint64_t types);

/*
 * A rule in testpmd's flow syntax, pattern only ("eth has_vlan is 0 /
 * ipv4 dst is 10.0.0.1 / tcp dst is 80 / end"): what error messages and
 * dumps name, and what an operator can paste after `flow validate 0
 * ingress priority 1 pattern` (docs/mlx5-sharing-test-plan.md). Returns
 * snprintf's count.
 */
int dpsock_flow_match_str(const struct dpsock_flow_match *m, bool untagged_only, char *buf,
			  size_t len);

/*
 * Enter isolated mode on port_id: from then on the port receives only
 * what rules send it; on a bifurcated NIC (mlx5) everything else goes to
 * the kernel netdev. Call it after the port is probed and BEFORE
 * rte_eth_dev_configure (dpsock_port_start): rte_flow's guide asks for it
 * before the first configure, and mlx5 refuses a started port (EBUSY,
 * "port must be stopped first"); in isolated mode mlx5 (DPDK 22.11) also
 * drops the RSS key and RETA queries, so the Toeplitz steering backend
 * cannot be used on such a port. Isolated mode is a state of the PMD, not
 * of the NIC: it ends with the process (below). Returns 0, or -errno with
 * a message in err: ENOSYS / ENOTSUP (the PMD has no isolated mode: it
 * cannot share the NIC through rte_flow), EBUSY (already started), ENODEV.
 */
int dpsock_flowf_isolate(uint16_t port_id, char *err, size_t errlen);

/* The rte_flow calls the backend makes, as DPDK declares them; tests give
 * fakes (dump may be NULL: not dumped). */
struct dpsock_flowf_ops {
	int (*validate)(uint16_t port_id, const struct rte_flow_attr *attr,
			const struct rte_flow_item pattern[], const struct rte_flow_action actions[],
			struct rte_flow_error *error);
	struct rte_flow *(*create)(uint16_t port_id, const struct rte_flow_attr *attr,
				   const struct rte_flow_item pattern[],
				   const struct rte_flow_action actions[],
				   struct rte_flow_error *error);
	int (*destroy)(uint16_t port_id, struct rte_flow *flow, struct rte_flow_error *error);
	int (*dump)(uint16_t port_id, struct rte_flow *flow, FILE *file,
		    struct rte_flow_error *error);
};

struct dpsock_flowf_conf {
	uint16_t port_id;
	const uint16_t *queues;   /* the workers' queues on the port */
	unsigned int n_queues;
	uint16_t vlan;            /* VLAN id of dpsock's frames, 0: untagged */
	const uint8_t *rss_key;   /* NULL: the PMD's default key */
	unsigned int rss_key_len;
	uint64_t rss_types;       /* RTE_ETH_RSS_*, 0: the PMD's default; the
				   * IPv4 rules' as they are, the IPv6 rules'
				   * dpsock_flow_rss_types6() of them */
	const struct dpsock_flowf_ops *ops; /* NULL: DPDK's rte_flow_* */
};

struct dpsock_flowf;

/* The backend's state, for logs and dpsock-stat. */
struct dpsock_flowf_stats {
	uint32_t rules;           /* rules installed now */
	uint32_t stale;           /* of those, unneeded ones whose destroy failed
				   * (retried on each change and at close) */
	uint64_t created;         /* rte_flow_create successes */
	uint64_t destroyed;       /* rte_flow_destroy successes */
	uint64_t failed;          /* changes refused (validate, create) and
				   * failed destroys */
	bool untagged_only;       /* the PMD matches has_vlan: tagged frames of
				   * other VLANs stay the kernel's */
};

/*
 * The rte_flow backend of a port in isolated mode (dpsock_flowf_isolate):
 * one rule per entry of the served set, each sending its frames to the
 * workers' queues[0..n) (RSS, or QUEUE when n is 1). The RSS action is
 * per family: IPv4 rules hash with the port's hash types as configured,
 * IPv6 rules with dpsock_flow_rss_types6() of them, so that a port
 * configured with IPv4 types alone still spreads IPv6 flows over the
 * queues, while the IPv4 rules' action stays exactly the port's (a PMD
 * without IPv6 RSS refuses the IPv6 rules only). Open it after
 * dpsock_port_start and close it before dpsock_port_stop: mlx5 in DPDK
 * 22.11 does not keep rules across a stop (no FLOW_RULE_KEEP), so rules
 * can only be created on a started port and must be gone before it stops.
 * open reads the port's RSS hash types and key (the configured ones; the
 * PMD's default key where the port does not tell it, which mlx5 in
 * isolated mode does not) and validates one sample rule, so that a port
 * that cannot take them fails here with the reason; nothing is steered
 * until entries are added. open_conf takes them from conf instead.
 * Returns NULL with -errno in *ret and a message in err.
 *
 * Each change creates and destroys exactly the rules that change: a rule
 * is counted once per entry that needs it and destroyed when none does
 * (rules are per local address: adding one installs its port entries and
 * ephemeral blocks; a port entry on every address installs one per
 * address). The new rules of a change are all validated before any is
 * created, and a failed create destroys what the change had created: a
 * change takes effect whole or not at all. A refused change returns
 * -errno from rte_flow, with a message naming the change, the rule (in
 * testpmd's syntax) and what the PMD said in dpsock_flowf_error() and the
 * log. A rule whose destroy fails stays installed, "stale", and is
 * destroyed at the next change or at close; the removal still takes
 * effect (the entry is gone) and returns that -errno. Adding an entry
 * that is there is -EEXIST, removing one that is not -ENOENT, a bad
 * argument -EINVAL (proto not 6 or 17, port 0, a local address that is a
 * family's any or multicast, a group that is not multicast in its family
 * (224.0.0.0/4 mapped, ff00::/8), lo > hi), all with nothing changed.
 * Open validates an IPv4 sample rule only: a PMD that takes IPv4 rules
 * but not IPv6 ones refuses the first IPv6 change, saying so, and the
 * IPv4 flows stay dpsock's. Not thread-safe:
 * one caller at a time (the registry).
 *
 * The rules are the process's: when dpsockd exits or is killed, the PMD's
 * verbs/DevX objects close with it and the kernel destroys its rules, so
 * the netdev gets every frame again (docs/mlx5-sharing-test-plan.md checks
 * it on a ConnectX).
 */
struct dpsock_flowf *dpsock_flowf_open(uint16_t port_id, const uint16_t *queues,
				       unsigned int n, uint16_t vlan, int *ret, char *err,
				       size_t errlen);
struct dpsock_flowf *dpsock_flowf_open_conf(const struct dpsock_flowf_conf *conf, int *ret,
					    char *err, size_t errlen);
/* Destroy every rule (the kernel gets those frames again) and free x. */
void dpsock_flowf_close(struct dpsock_flowf *x);
/* A local address of the port (either family). */
int dpsock_flowf_addr(struct dpsock_flowf *x, struct dpsock_mc_addr addr, bool add);
/* TCP (6) or UDP (17) to local port (host order) on addr: a local
 * address, or every local address of a family (dpsock_filter_any4/6). */
int dpsock_flowf_port(struct dpsock_flowf *x, uint8_t proto, struct dpsock_mc_addr addr,
		      uint16_t port, bool add);
/* dpsock's ephemeral range, host order, lo <= hi (0, 0: none). */
int dpsock_flowf_ephemeral(struct dpsock_flowf *x, uint16_t lo, uint16_t hi);
/* UDP to a multicast group (224.0.0.0/4 mapped, or ff00::/8). */
int dpsock_flowf_group(struct dpsock_flowf *x, struct dpsock_mc_addr group, bool add);
void dpsock_flowf_stats(const struct dpsock_flowf *x, struct dpsock_flowf_stats *out);
/* The last refused change's message ("" when none). */
const char *dpsock_flowf_error(const struct dpsock_flowf *x);
/* Every rule with its reference count, in testpmd's syntax, then the PMD's
 * own dump of the port's rules (rte_flow_dev_dump) when it has one.
 * Returns 0 or the PMD dump's -errno. */
int dpsock_flowf_dump(const struct dpsock_flowf *x, FILE *f);

#endif /* DPSOCK_FILTER_PRIV_H */
