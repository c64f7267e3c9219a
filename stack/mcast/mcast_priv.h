/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UDP multicast in the stack, IPv4 and IPv6: who joined what, what each
 * port joins, which datagrams each socket receives, and the IGMP and MLD
 * hosts that tell the link. A group or source of either family is a
 * struct dpsock_mc_addr (16 bytes, IPv4 mapped: abi/mcast_filter.h).
 *
 *   socket options ─► mcast.c (any worker, on its own sockets)
 *        │  each UDP socket keeps its memberships (abi/mcast_filter.h) for
 *        │  its own receive filter, and registers them with the stack-wide
 *        ▼  registry (one spinlock; control path only)
 *   registry: per (port, group) the members of every socket of every worker
 *        │  and process, merged into the interface state (RFC 3376 3.2)
 *        ├─► mchost.c on worker 0: IGMP (IPv4's groups) and MLD (IPv6's)
 *        │   state-change reports, query answers
 *        ├─► main lcore (100 ms): the port's multicast MAC list or
 *        │   allmulticast (probed at start)
 *        └─► each worker's snapshot of the interface states (rebuilt when
 *            the registry's generation moves), read without a lock on the
 *            data path
 *   a datagram for a group ─► (IPv6: ip6_input asks
 *        dpsock_lwip_ip6_mcast_joined) ─► lwIP's udp_input ─► dpsock_lwip_udp_deliver
 *        (mcast.c): the port's filter, then every matching socket of the
 *        receiving worker with its own filter, each given the same pbuf.
 *
 * Every UDP socket of the preload exists on every worker, so whichever
 * worker's queue receives a datagram delivers it to every subscriber, and
 * the loopback of a datagram sent by a worker reaches every subscriber of
 * the same dpsockd from that worker alone.
 *
 * Errors: 0 or -errno (the socket API's errno values, see mcast_filter.h).
 */
#ifndef DPSOCK_MCAST_PRIV_H
#define DPSOCK_MCAST_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcast_filter.h"

struct dpsock_stack;
struct dpsock_worker;
struct dpsock_worker_port;
struct dpsock_sock;
struct rte_mbuf;
struct pbuf;

/* Sources the interface state of one group keeps (the union of the
 * sockets' INCLUDE lists can be longer than one socket's): beyond it, the
 * port reports EXCLUDE {} (every source) and the sockets still filter. */
#define DPSOCK_MC_IF_MAX_SRC 64

/* A UDP socket's options beyond lwIP's pcb (embedded in struct dpsock_sock). */
struct dpsock_udp_state {
	struct dpsock_mc_set *mc; /* memberships; NULL until the first one */
	uint8_t mc_all;           /* IP_MULTICAST_ALL (Linux default 1) */
	uint8_t mc_loop;          /* IP_MULTICAST_LOOP (default 1) */
	uint8_t reuseport;        /* SO_REUSEPORT: unicast hashed over its group */
	uint8_t mc_all6;          /* IPV6_MULTICAST_ALL (default 1) */
	uint8_t mc_loop6;         /* IPV6_MULTICAST_LOOP (default 1) */
	uint8_t hops6;            /* IPV6_MULTICAST_HOPS (default 1) */
	int16_t mc_if6;           /* IPV6_MULTICAST_IF: a port, -1 the route's */
	int32_t owner_pid;        /* the process using it (dpsock-stat) */
	int32_t owner_fd;         /* its descriptor there; -1: a native socket */
};

/* What the receiving worker knew of a datagram (dpsock_rx_info). */
struct dpsock_rx_meta {
	uint32_t dst;             /* destination address (network order) */
	uint16_t iface;           /* port index */
	uint8_t dst6[16];         /* an IPv6 datagram's destination (dst is 0) */
	uint64_t rx_ns;           /* CLOCK_REALTIME when the worker took the frame */
	uint64_t hw_ns;           /* the NIC's timestamp (raw), 0 = none */
};

/* ---- the registry (struct dpsock_stack's mc): one lock, control path ---- */

#include <rte_spinlock.h>

/* A socket's membership as its port sees it: a copy of the socket's filter. */
struct dpsock_mc_member {
	struct dpsock_mc_member *next;
	const struct dpsock_sock *sock; /* identity only */
	uint16_t worker;
	struct dpsock_mc_memb f;
	int32_t pid, fd;          /* owner (dpsock-stat) */
	int32_t sock_idx;         /* socket-table entry, -1 none */
	uint64_t serial;
};

/* What one port joined for a group: the interface state (RFC 3376 3.2)
 * merged from its members' filters. */
struct dpsock_mc_ifstate {
	uint8_t mode;             /* DPSOCK_MC_INCLUDE / _EXCLUDE */
	uint16_t nsrc;
	struct dpsock_mc_addr src[DPSOCK_MC_IF_MAX_SRC];
};

struct dpsock_mc_group {
	struct dpsock_mc_group *next;
	struct dpsock_mc_addr addr; /* IPv6, or IPv4 mapped */
	uint16_t port;
	uint32_t n_members;
	struct dpsock_mc_member *members;
	struct dpsock_mc_ifstate st;
};

struct dpsock_mc_host;

struct dpsock_mcast {
	rte_spinlock_t lock;      /* groups, members, the stats table */
	uint32_t gen;             /* shared: bumped (release) after every change */
	struct dpsock_mc_group *groups;
	uint32_t n_groups;
	/* main lcore: the ports' MAC filters */
	uint32_t mac_gen;
	uint8_t filter[8];        /* DPSOCK_MC_FILTER_* per port (probed) */
	bool allmulti_on[8];
	/* worker 0: the IGMP and MLD hosts (mchost.c), created on its first
	 * poll: [0] IPv4's, [1] IPv6's */
	struct dpsock_mc_host *host[2];
	/* main lcore: the kernel's memberships on shared ports (mcast_kernel.c) */
	struct dpsock_mc_kernel *kernel;
};

/* Publish a port's IGMP (v6 false) or MLD host state in the stats table
 * (takes the lock). */
struct dpsock_mc_port_row;
void dpsock_mcast_publish_port(struct dpsock_stack *d, unsigned int port, bool v6,
			       const struct dpsock_mc_port_row *row);

/* ---- mcast.c: registry, per-socket state, delivery ---- */

/* Create the registry (main lcore, after the ports started: probes each
 * port's multicast filter and logs it). 0 or -ENOMEM. */
int dpsock_mcast_init(struct dpsock_stack *d);
void dpsock_mcast_fini(struct dpsock_stack *d);
/* Main lcore, every 100 ms: program the ports' multicast MAC filters, and
 * on the ports shared with the kernel, its memberships. */
void dpsock_mcast_control(struct dpsock_stack *d);
/* mcast_kernel.c: the kernel joins what the registry holds on the shared
 * ports (main lcore); fini leaves every group. */
void dpsock_mcast_kernel_sync(struct dpsock_stack *d);
void dpsock_mcast_kernel_fini(struct dpsock_stack *d);
/* Per worker (its lcore): the registry's snapshot; 0 or -ENOMEM. */
int dpsock_mcast_worker_init(struct dpsock_worker *w);
void dpsock_mcast_worker_fini(struct dpsock_worker *w);

/* What multicast adds to a UDP socket. sock.c calls it through d->sock_mc:
 * mcast.c sits above sock.c and sets it in dpsock_mcast_init (NULL before,
 * when no socket can have joined a group). */
struct dpsock_sock_mc_ops {
	/* the socket's end: it leaves every group */
	void (*fini)(struct dpsock_sock *s, struct dpsock_udp_state *u);
	/* a datagram this socket sent to group:dport (host order) through
	 * port port_idx, looped back to the subscribers of this worker
	 * (IP_MULTICAST_LOOP, IPV6_MULTICAST_LOOP) */
	void (*loop)(struct dpsock_sock *s, const void *buf, size_t len,
		     struct dpsock_mc_addr group, uint16_t dport, uint16_t sport,
		     unsigned int port_idx);
	/* dpsock_udp_mcast / _mcast6 for either family's address (a
	 * takeover's new process replays a socket's memberships with it) */
	int (*addr)(struct dpsock_sock *s, int op, struct dpsock_mc_addr group,
		    unsigned int iface, struct dpsock_mc_addr source);
};

/* ---- sock.c: what mcast.c needs of a socket ---- */

struct udp_pcb;
struct dpsock_udp_state *dpsock_sock_udp(struct dpsock_sock *s);
struct udp_pcb *dpsock_sock_udp_pcb(struct dpsock_sock *s);
/* The socket behind a pcb of this worker, or NULL (not dpsock's). */
struct dpsock_sock *dpsock_sock_of_udp_pcb(struct udp_pcb *pcb);
/* Keep s alive across callbacks that may close it (pin/unpin bracket). */
void dpsock_sock_pin(struct dpsock_sock *s);
void dpsock_sock_unpin(struct dpsock_sock *s);
bool dpsock_sock_dead(const struct dpsock_sock *s);
/* Hand a datagram to the socket's app (takes one reference of p); src of
 * either family (an IPv4 one mapped). */
void dpsock_sock_udp_input(struct dpsock_sock *s, struct pbuf *p, struct dpsock_mc_addr src,
			   uint16_t sport, const struct dpsock_rx_meta *meta);
/* Its socket-table entry: worker-relative index and serial (-1: none). */
int dpsock_sock_stats_index(struct dpsock_sock *s, uint64_t *serial);

/* ---- mchost.c: the IGMP and MLD hosts (worker 0) ---- */

/* An IGMP frame, or an IPv6 frame carrying MLD (mld_off: the MLD message's
 * offset in the frame), from a port (any worker: handed to worker 0).
 * Consumes m. */
void dpsock_igmp_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m);
void dpsock_mld_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m);
/* The offset of the MLD message in an IPv6 frame (behind its hop-by-hop
 * header), or 0 when it carries none. */
unsigned int dpsock_mld_offset(const struct rte_mbuf *m);
/* Worker 0, every loop: follow the registry. Returns work done. */
unsigned int dpsock_igmp_poll(struct dpsock_worker *w);
/* Worker 0, before it sleeps: has the registry changed since? */
bool dpsock_igmp_pending(struct dpsock_worker *w);
/* Worker 0 at stop, before its netifs go: leave every group on the link. */
void dpsock_igmp_fini(struct dpsock_worker *w);

/* The worker that runs the IGMP and MLD hosts: one host per link, whatever
 * the number of workers. */
#define DPSOCK_IGMP_WORKER 0u

#endif /* DPSOCK_MCAST_PRIV_H */
