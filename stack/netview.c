/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netview.c — the net view: one immutable snapshot of the addresses, routes
 * and neighbours the stack uses (netview_priv.h), built from the
 * configuration for the ports dpsock owns and from the kernel (kfollow.c)
 * for the ports it shares; published by the control side, adopted by each
 * worker between two loop iterations, freed once no worker holds it.
 *
 * A worker's adoption brings its lwIP netifs in line with the view: a
 * shared port's addresses each get a netif of their own on the port (lwIP
 * 2.1.3 has one IPv4 address per netif; ip4_input accepts a frame for any
 * of them), and an address keeps its netif as long as it exists, so that
 * an address added or removed next to it leaves its connections alone. The
 * frames waiting for a neighbour (netif.c) go out once the view has it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_malloc.h>

#include "lwip_compat_priv.h"

#include "lwip/netif.h"
#include "netif/ethernet.h"

#include "stack_priv.h"
#include "log_priv.h"
#include "netview_priv.h"

static uint32_t
plen_mask(uint8_t plen)
{
	return plen == 0 ? 0 : rte_cpu_to_be_32(~0u << (32 - (plen > 32 ? 32 : plen)));
}

/* ---- lookups ------------------------------------------------------------------- */

bool
dpsock_netview_route(const struct dpsock_netview *v, uint32_t dest, unsigned int *port,
		     uint32_t *gateway)
{
	const struct dpsock_nv_route *best = NULL;
	unsigned int i;

	for (i = 0; i < v->n_addrs; i++) {
		uint32_t m = plen_mask(v->addrs[i].prefix_len);

		if (v->addrs[i].addr != 0 && (dest & m) == (v->addrs[i].addr & m)) {
			*port = v->addrs[i].port;
			*gateway = 0;
			return true;
		}
	}
	for (i = 0; i < v->n_routes; i++) {
		const struct dpsock_nv_route *r = &v->routes[i];

		if ((dest & plen_mask(r->prefix_len)) != r->dest)
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

static bool
linklocal6(const uint8_t *a)
{
	return a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
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
	if (linklocal6(dest) || onlink6(v, dest) == (int)port)
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
	 * generation loads it (acquire in dpsock_netview_adopt) */
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

/* ---- a worker's adoption ------------------------------------------------------- */

/* A shared port's netifs hold exactly the view's addresses of that port;
 * an address keeps its netif while it exists. */
static void
port_netifs(struct dpsock_worker_port *wp, const struct dpsock_netview *v)
{
	const struct dpsock_nv_port *vp = &v->ports[wp->port_idx];
	struct dpsock_nv_addr want[DPSOCK_NV_ADDRS_PORT];
	bool placed[DPSOCK_NV_ADDRS_PORT] = { false }, kept[DPSOCK_NV_ADDRS_PORT] = { false };
	unsigned int n = 0, i, j;

	for (i = 0; i < v->n_addrs && n < DPSOCK_NV_ADDRS_PORT; i++)
		if (v->addrs[i].port == wp->port_idx)
			want[n++] = v->addrs[i];
	/* the netifs whose address stays */
	for (j = 0; j < wp->n_nif; j++)
		for (i = 0; i < n; i++)
			if (!placed[i] && ip4_addr_get_u32(netif_ip4_addr(wp->nif[j])) == want[i].addr) {
				placed[i] = kept[j] = true;
				break;
			}
	/* the others: a netif whose address went, or a new one */
	for (i = 0; i < n; i++) {
		ip4_addr_t a, m, gw;

		if (placed[i])
			continue;
		ip4_addr_set_u32(&a, want[i].addr);
		ip4_addr_set_u32(&m, plen_mask(want[i].prefix_len));
		ip4_addr_set_zero(&gw);
		for (j = 0; j < wp->n_nif && kept[j]; j++)
			;
		if (j == wp->n_nif) {
			struct netif *nif;

			if (wp->n_nif == DPSOCK_NV_ADDRS_PORT)
				break;
			nif = rte_zmalloc("dpsock_netif", sizeof(*nif), RTE_CACHE_LINE_SIZE);
			if (nif == NULL || netif_add(nif, &a, &m, &gw, wp, dpsock_netif_init,
						     ethernet_input) == NULL) {
				rte_free(nif);
				DPSOCK_LOG(ERR, worker, "worker %u: no netif for a new address of port %s",
					   wp->w->idx, wp->port->name);
				break;
			}
			dpsock_netif_offload_setup_nif(wp, nif);
			netif_set_up(nif);
			wp->nif[wp->n_nif++] = nif;
		} else {
			netif_set_addr(wp->nif[j], &a, &m, &gw);
		}
		kept[j] = true;
	}
	/* netifs whose address went: the first one stays, empty */
	for (j = wp->n_nif; j-- > 0;) {
		if (kept[j])
			continue;
		if (j == 0) {
			netif_set_addr(wp->nif[0], IP4_ADDR_ANY4, IP4_ADDR_ANY4, IP4_ADDR_ANY4);
			continue;
		}
		netif_remove(wp->nif[j]);
		rte_free(wp->nif[j]);
		wp->nif[j] = wp->nif[--wp->n_nif];
	}
	for (j = 0; j < wp->n_nif; j++) {
		struct netif *nif = wp->nif[j];

		nif->mtu = vp->mtu;
		if (vp->up && !netif_is_link_up(nif))
			netif_set_link_up(nif);
		else if (!vp->up && netif_is_link_up(nif))
			netif_set_link_down(nif);
	}
}

/* A shared port's IPv6 addresses sit on its first netif (lwIP keeps
 * LWIP_IPV6_NUM_ADDRESSES per netif): slot 0 the link-local one, the
 * others the rest; an address keeps its slot while it exists, so that its
 * connections live on when another one comes or goes. */
static void
port_addrs6(struct dpsock_worker_port *wp, const struct dpsock_netview *v)
{
	struct netif *nif = &wp->netif;
	const struct dpsock_nv_addr6 *want[DPSOCK_NV_ADDRS6_PORT];
	bool placed[DPSOCK_NV_ADDRS6_PORT] = { false };
	bool kept[LWIP_IPV6_NUM_ADDRESSES] = { false };
	unsigned int n = 0, i;
	int k;

	for (i = 0; i < v->n_addrs6 && n < DPSOCK_NV_ADDRS6_PORT; i++)
		if (v->addrs6[i].port == wp->port_idx)
			want[n++] = &v->addrs6[i];
	for (k = 0; k < LWIP_IPV6_NUM_ADDRESSES; k++) {
		if (!ip6_addr_isvalid(netif_ip6_addr_state(nif, k)))
			continue;
		for (i = 0; i < n; i++)
			if (!placed[i] && memcmp(netif_ip6_addr(nif, k)->addr, want[i]->addr, 16) == 0)
				placed[i] = kept[k] = true;
		if (!kept[k])
			netif_ip6_addr_set_state(nif, k, IP6_ADDR_INVALID);
	}
	for (i = 0; i < n; i++) {
		bool ll = linklocal6(want[i]->addr);
		ip6_addr_t a;

		if (placed[i])
			continue;
		/* the link-local address in slot 0 (lwIP's source selection
		 * and MLD take it from there), the others after it */
		for (k = ll ? 0 : 1; k < LWIP_IPV6_NUM_ADDRESSES && kept[k]; k++)
			;
		if (k == LWIP_IPV6_NUM_ADDRESSES || (ll && k != 0)) {
			DPSOCK_LOG(WARNING, worker, "worker %u: port %s: no room for another IPv6 "
				   "address (%u)", wp->w->idx, wp->port->name, LWIP_IPV6_NUM_ADDRESSES);
			continue;
		}
		memcpy(a.addr, want[i]->addr, 16);
		ip6_addr_clear_zone(&a);
		netif_ip6_addr_set(nif, (s8_t)k, &a);
		netif_ip6_addr_set_state(nif, (s8_t)k, IP6_ADDR_PREFERRED);
		kept[k] = true;
	}
}

void
dpsock_netview_adopt(struct dpsock_worker *w)
{
	struct dpsock_stack *d = w->d;
	/* acquire: pairs with the release store in dpsock_netview_publish */
	const struct dpsock_netview *v = __atomic_load_n(&d->nv, __ATOMIC_ACQUIRE);
	unsigned int i;

	if (v == w->nv)
		return;
	for (i = 0; i < w->n_ports; i++)
		if (v->ports[i].shared) {
			port_netifs(&w->ports[i], v);
			port_addrs6(&w->ports[i], v);
		}
	w->nv = v;
	w->nv_gen = v->gen;
	dpsock_netif_neigh_retry(w);
	/* release: this worker reads no older view from here on */
	__atomic_store_n(&w->nv_held, v->gen, __ATOMIC_RELEASE);
}
