/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netif_adopt.c — a worker's lwIP netifs in line with the published net
 * view (netview_priv.h), taken between two loop iterations: a shared
 * port's addresses each get a netif of their own on the port (lwIP 2.1.3
 * has one IPv4 address per netif; ip4_input accepts a frame for any of
 * them), and an address keeps its netif as long as it exists, so that an
 * address added or removed next to it leaves its connections alone. The
 * frames waiting for a neighbour (netif.c) go out once the view has it.
 */
#include <stdbool.h>
#include <string.h>

#include <rte_malloc.h>

#include "core/lwip_compat_priv.h"

#include "lwip/netif.h"
#include "netif/ethernet.h"

#include "core/stack_priv.h"
#include "frame_priv.h"
#include "core/log_priv.h"
#include "netview/netview_priv.h"

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
		ip4_addr_set_u32(&m, dpsock_nv_plen_mask(want[i].prefix_len));
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
		bool ll = dpsock_nv_linklocal6(want[i]->addr);
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
dpsock_netif_adopt_view(struct dpsock_worker *w)
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
