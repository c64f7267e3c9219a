/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netview_priv.h — the addresses, routes and neighbours the stack uses, in
 * one immutable snapshot (a "net view") that the control side publishes and
 * each worker adopts between two loop iterations.
 *
 * An interface with an address in dpsock.conf owns its port: its view comes
 * from the configuration (one address, its gateway, the static routes) and
 * never changes; lwIP's ARP finds the neighbours. An interface without one
 * is shared with the kernel (docs/design.md, decision 9): the kernel
 * follower (kfollow.c) reads its netdev's addresses, MTU, MAC, link state,
 * routes and neighbours over netlink, at start and as they change, and
 * publishes a new view each time; the workers' lwIP netifs take the
 * addresses, and what they send leaves with the kernel's neighbours' MACs
 * (netif.c's shared output), never with an ARP of dpsock's.
 *
 * Publication: d->nv points at the current view (release store; gen
 * grows). A worker compares d->nv_gen with its own in every loop iteration
 * (one load), adopts the new view (its netifs, its pending frames) and
 * records the generation it holds in nv_held; a view is freed once every
 * worker holds a later one. Readers never lock.
 */
#ifndef DPSOCK_NETVIEW_PRIV_H
#define DPSOCK_NETVIEW_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_byteorder.h>

#include "core/config_priv.h"

#define DPSOCK_NV_ADDRS 16      /* addresses, all ports */
#define DPSOCK_NV_ADDRS_PORT 8  /* addresses of one port */
#define DPSOCK_NV_ROUTES 64
#define DPSOCK_NV_NEIGH 1024
/* IPv6: addresses of all ports, of one port (its link-local one and
 * globals: the slots of lwIP's netif, LWIP_IPV6_NUM_ADDRESSES), routes,
 * neighbours */
#define DPSOCK_NV_ADDRS6 16
#define DPSOCK_NV_ADDRS6_PORT 3
#define DPSOCK_NV_ROUTES6 64
#define DPSOCK_NV_NEIGH6 512

struct dpsock_stack;
struct dpsock_worker;

struct dpsock_nv_addr {
	uint32_t addr;            /* network order */
	uint8_t prefix_len;
	uint8_t port;             /* index into d->ports */
};

/* A route the stack follows: dest/prefix_len leaves by port, to gateway
 * (0: on-link). The default route is 0/0. */
struct dpsock_nv_route {
	uint32_t dest;            /* network order, host bits zero */
	uint32_t gateway;         /* network order */
	uint32_t priority;        /* lower first (the kernel's metric) */
	uint8_t prefix_len;
	uint8_t port;
};

struct dpsock_nv_neigh {
	uint32_t ip;              /* network order */
	uint8_t port;
	uint8_t mac[6];
};

/* IPv6's: an address of a port (a link-local one too: fe80::/10), a
 * route (gateway :: is on-link; ::/0 the default), a neighbour. */
struct dpsock_nv_addr6 {
	uint8_t addr[16];
	uint8_t prefix_len;
	uint8_t port;
};

struct dpsock_nv_route6 {
	uint8_t dest[16];         /* host bits zero */
	uint8_t gateway[16];
	uint32_t priority;
	uint8_t prefix_len;
	uint8_t port;
};

struct dpsock_nv_neigh6 {
	uint8_t ip[16];
	uint8_t port;
	uint8_t mac[6];
};

struct dpsock_nv_port {
	bool shared;              /* follows the kernel netdev (no configured address) */
	bool up;                  /* shared: the netdev's carrier (owned: always) */
	uint16_t mtu;
	uint8_t mac[6];           /* shared: the netdev's address */
	uint32_t ifindex;         /* the kernel netdev, 0: none */
};

struct dpsock_netview {
	uint64_t gen;
	unsigned int n_ports;
	struct dpsock_nv_port ports[DPSOCK_MAX_PORTS];
	unsigned int n_addrs;     /* grouped by port, each port's primary first */
	struct dpsock_nv_addr addrs[DPSOCK_NV_ADDRS];
	unsigned int n_routes;
	struct dpsock_nv_route routes[DPSOCK_NV_ROUTES];
	unsigned int n_neigh;     /* shared ports' usable neighbours, sorted by (port, ip) */
	struct dpsock_nv_neigh neigh[DPSOCK_NV_NEIGH];
	/* IPv6: an owned port's address6, a shared port's kernel addresses */
	unsigned int n_addrs6;    /* grouped by port */
	struct dpsock_nv_addr6 addrs6[DPSOCK_NV_ADDRS6];
	unsigned int n_routes6;   /* shared ports' (the kernel's main table) */
	struct dpsock_nv_route6 routes6[DPSOCK_NV_ROUTES6];
	unsigned int n_neigh6;    /* shared ports', sorted by (port, ip) */
	struct dpsock_nv_neigh6 neigh6[DPSOCK_NV_NEIGH6];
	struct dpsock_netview *older; /* kfollow.c: views not freed yet */
};

/* ---- netview.c ---------------------------------------------------------------- */

/* The first view: every owned port from the configuration, shared ports
 * as kfollow_start found them. Returns 0 or -ENOMEM. */
int dpsock_netview_init(struct dpsock_stack *d);
/* A new view: the owned ports' configuration and the kernel follower's
 * model of the shared ports (control side; NULL: no memory). */
struct dpsock_netview *dpsock_netview_build(struct dpsock_stack *d);
/* Publish v (gen set here) and free the views no worker holds. Control side. */
void dpsock_netview_publish(struct dpsock_stack *d, struct dpsock_netview *v);
void dpsock_netview_fini(struct dpsock_stack *d);

/* The netmask of an IPv4 prefix length (network order), and whether an
 * IPv6 address is link-local (fe80::/10). */
static inline uint32_t
dpsock_nv_plen_mask(uint8_t plen)
{
	return plen == 0 ? 0 : rte_cpu_to_be_32(~0u << (32 - (plen > 32 ? 32 : plen)));
}

static inline bool
dpsock_nv_linklocal6(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
}

/* Lookups in a view. */
/* The route dest takes: a connected subnet (gateway 0, its port), else the
 * longest static or kernel route (lowest priority among equals). Returns
 * false when none leads there. */
bool dpsock_netview_route(const struct dpsock_netview *v, uint32_t dest, unsigned int *port,
			  uint32_t *gateway);
/* The MAC of a neighbour on a shared port, or NULL. */
const uint8_t *dpsock_netview_neigh(const struct dpsock_netview *v, unsigned int port, uint32_t ip);
/* Is addr (network order) one of the view's addresses? Its port in *port. */
bool dpsock_netview_local(const struct dpsock_netview *v, uint32_t addr, unsigned int *port);
/* The primary address of a port (0: none yet). */
uint32_t dpsock_netview_port_addr(const struct dpsock_netview *v, unsigned int port);
/* IPv6's: the next hop to dest from port (dest itself when on-link: a
 * link-local address, a prefix of the port's addresses, a route without a
 * gateway); false when no route leads there. */
bool dpsock_netview_nexthop6(const struct dpsock_netview *v, unsigned int port,
			     const uint8_t dest[16], uint8_t nexthop[16]);
/* The port whose prefixes or routes lead to dest (IPv6), -1: none. */
int dpsock_netview_route6(const struct dpsock_netview *v, const uint8_t dest[16]);
const uint8_t *dpsock_netview_neigh6(const struct dpsock_netview *v, unsigned int port,
				     const uint8_t ip[16]);
/* Is addr one of the view's IPv6 addresses? Its port in *port. */
bool dpsock_netview_local6(const struct dpsock_netview *v, const uint8_t addr[16],
			   unsigned int *port);

/* ---- kfollow.c: the kernel follower (shared ports) ---------------------------- */

/* Read the shared ports' netdevs (link, addresses, routes, neighbours) once,
 * before the workers start; the view is built from it. Returns 0, or
 * -errno with a message (a port with no kernel netdev: -ENODEV). */
int dpsock_kfollow_start(struct dpsock_stack *d, char *err, size_t errlen);
/* Follow the kernel from now on: a control thread listens to netlink and
 * publishes a view at every change. Returns 0 or -errno. */
int dpsock_kfollow_run(struct dpsock_stack *d);
void dpsock_kfollow_stop(struct dpsock_stack *d);
/* Fill v's shared ports from the kernel's state as last read (control). */
void dpsock_kfollow_fill(struct dpsock_stack *d, struct dpsock_netview *v);
/* A worker needs a neighbour the kernel has not resolved: ask the kernel
 * to (it sends the ARP request: dpsock sends none on a shared port). Any
 * thread; no system call (a ring and a wake-up of the follower). */
void dpsock_kfollow_resolve(struct dpsock_stack *d, unsigned int port, uint32_t ip);
/* The same for an IPv6 neighbour (the kernel's neighbour solicitation). */
void dpsock_kfollow_resolve6(struct dpsock_stack *d, unsigned int port, const uint8_t ip[16]);

#endif /* DPSOCK_NETVIEW_PRIV_H */
