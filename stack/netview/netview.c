/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netview/ — the host's addresses, routes and neighbours as the stack sees
 * them: the net view (here) and, for the ports shared with the kernel, the
 * kernel follower that keeps it in step over netlink (kfollow.c).
 *
 * netview.c — the net view: one immutable snapshot of the addresses, routes
 * and neighbours the stack uses (netview_priv.h), built from the
 * configuration for the ports dpsock owns and from the kernel (kfollow.c)
 * for the ports it shares; published by the control side, adopted by each
 * worker between two loop iterations (its netifs follow: netif_adopt.c),
 * freed once no worker holds it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/stack_priv.h"
#include "core/log_priv.h"
#include "netview_priv.h"

/* ---- lookups ------------------------------------------------------------------- */

bool
dpsock_netview_route(const struct dpsock_netview *v, uint32_t dest, unsigned int *port,
		     uint32_t *gateway)
{
	const struct dpsock_nv_route *best = NULL;
	unsigned int i;

	for (i = 0; i < v->n_addrs; i++) {
		uint32_t m = dpsock_nv_plen_mask(v->addrs[i].prefix_len);

		if (v->addrs[i].addr != 0 && (dest & m) == (v->addrs[i].addr & m)) {
			*port = v->addrs[i].port;
			*gateway = 0;
			return true;
		}
	}
	for (i = 0; i < v->n_routes; i++) {
		const struct dpsock_nv_route *r = &v->routes[i];

		if ((dest & dpsock_nv_plen_mask(r->prefix_len)) != r->dest)
			continue;
		if (best == NULL || r->prefix_len > best->prefix_len ||
		    (r->prefix_len == best->prefix_len && r->priority < best->priority))
			best = r;
	}
	if (best == NULL)
		return false;
	*port = best->port;
	*gateway = best->gateway;
	return true;
}

const uint8_t *
dpsock_netview_neigh(const struct dpsock_netview *v, unsigned int port, uint32_t ip)
{
	uint64_t key = (uint64_t)port << 32 | rte_be_to_cpu_32(ip);
	unsigned int lo = 0, hi = v->n_neigh;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		const struct dpsock_nv_neigh *n = &v->neigh[mid];
		uint64_t k = (uint64_t)n->port << 32 | rte_be_to_cpu_32(n->ip);

		if (k == key)
			return n->mac;
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool
dpsock_netview_local(const struct dpsock_netview *v, uint32_t addr, unsigned int *port)
{
	for (unsigned int i = 0; i < v->n_addrs; i++)
		if (v->addrs[i].addr == addr && addr != 0) {
			if (port != NULL)
				*port = v->addrs[i].port;
			return true;
		}
	return false;
}

uint32_t
dpsock_netview_port_addr(const struct dpsock_netview *v, unsigned int port)
{
	for (unsigned int i = 0; i < v->n_addrs; i++)
		if (v->addrs[i].port == port)
			return v->addrs[i].addr;
	return 0;
}

/* ---- IPv6 lookups ---------------------------------------------------------------- */

/* Do a and b share their first plen bits? */
static bool
prefix6_eq(const uint8_t *a, const uint8_t *b, unsigned int plen)
{
	unsigned int n = plen / 8, rest = plen % 8;

	if (plen > 128)
		return false;
	if (memcmp(a, b, n) != 0)
		return false;
	return rest == 0 || ((a[n] ^ b[n]) & (0xff00 >> rest)) == 0;
}

/* The longest route to dest (lowest priority among equals), or NULL. */
static const struct dpsock_nv_route6 *
route6_find(const struct dpsock_netview *v, const uint8_t *dest)
{
	const struct dpsock_nv_route6 *best = NULL;

	for (unsigned int i = 0; i < v->n_routes6; i++) {
		const struct dpsock_nv_route6 *r = &v->routes6[i];

		if (!prefix6_eq(dest, r->dest, r->prefix_len))
			continue;
		if (best == NULL || r->prefix_len > best->prefix_len ||
		    (r->prefix_len == best->prefix_len && r->priority < best->priority))
			best = r;
	}
	return best;
}

/* The port of an address whose prefix holds dest, -1: none. */
static int
onlink6(const struct dpsock_netview *v, const uint8_t *dest)
{
	for (unsigned int i = 0; i < v->n_addrs6; i++)
		if (prefix6_eq(dest, v->addrs6[i].addr, v->addrs6[i].prefix_len))
			return v->addrs6[i].port;
	return -1;
}

bool
dpsock_netview_nexthop6(const struct dpsock_netview *v, unsigned int port, const uint8_t dest[16],
			uint8_t nexthop[16])
{
	static const uint8_t any[16];
	const struct dpsock_nv_route6 *r;

	memcpy(nexthop, dest, 16);
	/* a link-local destination is on the link of the port it leaves by */
	if (dpsock_nv_linklocal6(dest) || onlink6(v, dest) == (int)port)
		return true;
	r = route6_find(v, dest);
	if (r == NULL)
		return false;
	if (memcmp(r->gateway, any, 16) != 0)
		memcpy(nexthop, r->gateway, 16);
	return true;
}

int
dpsock_netview_route6(const struct dpsock_netview *v, const uint8_t dest[16])
{
	const struct dpsock_nv_route6 *r;
	int port = onlink6(v, dest);

	if (port >= 0)
		return port;
	r = route6_find(v, dest);
	return r != NULL ? r->port : -1;
}

static int
neigh6_key_cmp(unsigned int port_a, const uint8_t *ip_a, unsigned int port_b, const uint8_t *ip_b)
{
	if (port_a != port_b)
		return port_a < port_b ? -1 : 1;
	return memcmp(ip_a, ip_b, 16);
}

const uint8_t *
dpsock_netview_neigh6(const struct dpsock_netview *v, unsigned int port, const uint8_t ip[16])
{
	unsigned int lo = 0, hi = v->n_neigh6;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;
		const struct dpsock_nv_neigh6 *n = &v->neigh6[mid];
		int c = neigh6_key_cmp(n->port, n->ip, port, ip);

		if (c == 0)
			return n->mac;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool
dpsock_netview_local6(const struct dpsock_netview *v, const uint8_t addr[16], unsigned int *port)
{
	for (unsigned int i = 0; i < v->n_addrs6; i++)
		if (memcmp(v->addrs6[i].addr, addr, 16) == 0) {
			if (port != NULL)
				*port = v->addrs6[i].port;
			return true;
		}
	return false;
}

/* ---- building and publishing ------------------------------------------------ */

static int
neigh6_cmp(const void *a, const void *b)
{
	const struct dpsock_nv_neigh6 *x = a, *y = b;

	return neigh6_key_cmp(x->port, x->ip, y->port, y->ip);
}

static int
neigh_cmp(const void *a, const void *b)
{
	const struct dpsock_nv_neigh *x = a, *y = b;
	uint64_t kx = (uint64_t)x->port << 32 | rte_be_to_cpu_32(x->ip);
	uint64_t ky = (uint64_t)y->port << 32 | rte_be_to_cpu_32(y->ip);

	return kx < ky ? -1 : kx > ky;
}

/* The owned ports' part of a view: the configuration. */
static void
fill_owned(const struct dpsock_stack *d, struct dpsock_netview *v)
{
	static const uint8_t any6[16];
	const struct dpsock_config *c = &d->conf;
	unsigned int i;

	v->n_ports = d->n_ports;
	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_iface_conf *ic = &c->ifaces[i];
		struct dpsock_nv_port *p = &v->ports[i];

		if (ic->shared)
			continue;
		p->shared = false;
		p->up = true;
		p->mtu = ic->mtu;
		memcpy(p->mac, d->ports[i].mac.addr_bytes, 6);
		p->ifindex = d->ports[i].caps.if_index;
		if (v->n_addrs < DPSOCK_NV_ADDRS)
			v->addrs[v->n_addrs++] = (struct dpsock_nv_addr){
				.addr = ic->addr, .prefix_len = ic->prefix_len, .port = (uint8_t)i };
		if (ic->prefix6_len != 0 && v->n_addrs6 < DPSOCK_NV_ADDRS6) {
			v->addrs6[v->n_addrs6] = (struct dpsock_nv_addr6){
				.prefix_len = ic->prefix6_len, .port = (uint8_t)i };
			memcpy(v->addrs6[v->n_addrs6++].addr, ic->addr6, 16);
		}
		/* gateway6: ::/0 through it, as gateway's default route */
		if (ic->prefix6_len != 0 && memcmp(ic->gateway6, any6, 16) != 0 &&
		    v->n_routes6 < DPSOCK_NV_ROUTES6) {
			v->routes6[v->n_routes6] = (struct dpsock_nv_route6){
				.priority = 1000 + i, .port = (uint8_t)i };
			memcpy(v->routes6[v->n_routes6++].gateway, ic->gateway6, 16);
		}
		/* what no route holds leaves by the first port with a gateway */
		if (ic->gateway != 0 && v->n_routes < DPSOCK_NV_ROUTES)
			v->routes[v->n_routes++] = (struct dpsock_nv_route){
				.gateway = ic->gateway, .priority = 1000 + i, .port = (uint8_t)i };
	}
	for (i = 0; i < c->n_routes && v->n_routes < DPSOCK_NV_ROUTES; i++)
		v->routes[v->n_routes++] = (struct dpsock_nv_route){
			.dest = c->routes[i].dest, .gateway = c->routes[i].gateway,
			.prefix_len = c->routes[i].prefix_len, .port = c->routes[i].iface };
}

struct dpsock_netview *
dpsock_netview_build(struct dpsock_stack *d)
{
	struct dpsock_netview *v = calloc(1, sizeof(*v));

	if (v == NULL)
		return NULL;
	fill_owned(d, v);
	if (d->any_shared)
		dpsock_kfollow_fill(d, v);
	qsort(v->neigh, v->n_neigh, sizeof(v->neigh[0]), neigh_cmp);
	qsort(v->neigh6, v->n_neigh6, sizeof(v->neigh6[0]), neigh6_cmp);
	return v;
}

/* Free the views older than what every worker holds. */
static void
reclaim(struct dpsock_stack *d)
{
	struct dpsock_netview *v = d->nv, **pp;
	uint64_t held = UINT64_MAX;

	for (unsigned int k = 0; k < d->n_workers; k++) {
		/* acquire: pairs with the worker's release of nv_held; it no
		 * longer reads a view older than that */
		uint64_t h = __atomic_load_n(&d->workers[k].nv_held, __ATOMIC_ACQUIRE);

		if (h < held)
			held = h;
	}
	for (pp = &v->older; *pp != NULL;) {
		struct dpsock_netview *o = *pp;

		if (o->gen < held) {
			*pp = o->older;
			free(o);
		} else {
			pp = &o->older;
		}
	}
}

void
dpsock_netview_publish(struct dpsock_stack *d, struct dpsock_netview *v)
{
	v->older = d->nv;
	v->gen = d->nv_gen + 1;
	/* release: the view is complete before a worker that sees its
	 * generation loads it (acquire in dpsock_netif_adopt_view) */
	__atomic_store_n(&d->nv, v, __ATOMIC_RELEASE);
	__atomic_store_n(&d->nv_gen, v->gen, __ATOMIC_RELEASE);
	for (unsigned int k = 0; k < d->n_workers; k++)
		dpsock_worker_wake(&d->workers[k]);
	reclaim(d);
}

int
dpsock_netview_init(struct dpsock_stack *d)
{
	struct dpsock_netview *v = dpsock_netview_build(d);

	if (v == NULL)
		return -ENOMEM;
	v->gen = 1;
	d->nv = v;
	d->nv_gen = 1;
	return 0;
}

void
dpsock_netview_fini(struct dpsock_stack *d)
{
	struct dpsock_netview *v = d->nv;

	while (v != NULL) {
		struct dpsock_netview *o = v->older;

		free(v);
		v = o;
	}
	d->nv = NULL;
}

