/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port_release.c — an instance's ports given up for a takeover's new
 * process and, when that process fails, started again: the AF_XDP ports
 * are closed (af_packet and the others are held by both processes) and
 * waited for until the kernel lets their queues go; starting again
 * removes each vdev and probes it with the same arguments. The workers
 * then take the new handles (dpsock_worker_ports_rebind).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sys/epoll.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>

#include "core/stack_priv.h"
#include "frame_priv.h"
#include "core/log_priv.h"

/* The vdevs of the AF_XDP ports released for a takeover, to probe again
 * if it fails. */
static char released_devargs[DPSOCK_MAX_PORTS][DPSOCK_PORT_MEMBERS_MAX][256];
static struct rte_device *released_dev[DPSOCK_MAX_PORTS][DPSOCK_PORT_MEMBERS_MAX];
static bool released[DPSOCK_MAX_PORTS];

/* how long a released or restarted AF_XDP port waits for its queues */
#define XDP_FREE_WAIT_MS 1000

void
dpsock_ports_release(struct dpsock_stack *d)
{
	unsigned int i, k, n;
	int ret;

	for (i = 0; i < d->n_ports; i++) {
		struct dpsock_port *p = &d->ports[i];

		released[i] = false;
		if (!p->is_xdp)
			continue; /* af_packet and others: both processes may hold the port */
		for (k = 0; k < p->n_members && k < DPSOCK_PORT_MEMBERS_MAX; k++) {
			struct rte_eth_dev_info info;
			const struct rte_devargs *da;

			released_devargs[i][k][0] = '\0';
			released_dev[i][k] = NULL;
			if (rte_eth_dev_info_get(p->members[k], &info) != 0 || info.device == NULL)
				continue;
			released_dev[i][k] = info.device;
			da = rte_dev_devargs(info.device);
			snprintf(released_devargs[i][k], sizeof(released_devargs[i][k]), "%s%s%s",
				 rte_dev_name(info.device), da != NULL && da->args && da->args[0] ? "," : "",
				 da != NULL && da->args ? da->args : "");
		}
		dpsock_port_release(p);
		released[i] = true;
	}
	n = dpsock_port_xsk_leftovers_close();
	if (n != 0)
		DPSOCK_LOG(INFO, pmd, "closed %u AF_XDP socket(s) the PMD left bound", n);
	/* the new process binds the queues next: free, not merely closed */
	for (i = 0; i < d->n_ports; i++)
		if (released[i] && (ret = dpsock_port_xdp_wait_free(&d->ports[i], XDP_FREE_WAIT_MS)) != 0)
			DPSOCK_LOG(WARNING, pmd, "port %s: its AF_XDP queues are still held (%s)",
				   d->ports[i].name, strerror(-ret));
}

int
dpsock_ports_restart(struct dpsock_stack *d)
{
	const struct dpsock_config *c = &d->conf;
	char err[512];
	unsigned int i, k;
	int ret = 0;

	for (i = 0; i < d->n_ports; i++) {
		struct dpsock_port *p = &d->ports[i];
		unsigned int n = p->n_members;

		if (!released[i])
			continue;
		released[i] = false;
		dpsock_port_reclaim(p);
		/* the new process's sockets, if it bound some before it failed */
		dpsock_port_xsk_leftovers_close();
		ret = dpsock_port_xdp_wait_free(p, XDP_FREE_WAIT_MS);
		if (ret != 0)
			DPSOCK_LOG(WARNING, pmd, "port %s: its AF_XDP queues are still held (%s)",
				   p->name, strerror(-ret));
		for (k = 0; k < n && k < DPSOCK_PORT_MEMBERS_MAX; k++) {
			/* the vdev outlives its closed ethdev: remove it, then
			 * probe it with the same arguments */
			if (released_dev[i][k] != NULL)
				rte_dev_remove(released_dev[i][k]);
			ret = rte_dev_probe(released_devargs[i][k]);
			if (ret != 0) {
				DPSOCK_LOG(ERR, pmd, "port %s: probing %s again: %s", p->name,
					   released_devargs[i][k], rte_strerror(-ret));
				return ret;
			}
		}
		ret = dpsock_port_lookup(c->ifaces[i].port, &p->port_id, err, sizeof(err));
		if (ret == 0)
			ret = dpsock_port_probe(p, err, sizeof(err));
		if (ret == 0)
			ret = dpsock_port_start(p, d->n_workers, p->mtu, c->rx_desc, c->tx_desc, p->pool,
						err, sizeof(err));
		if (ret != 0) {
			DPSOCK_LOG(ERR, pmd, "port %s: starting again: %s", p->name, err);
			return ret;
		}
		for (k = 0; k < p->n_members; k++)
			d->port_idx[p->members[k]] = i;
		DPSOCK_LOG(NOTICE, pmd, "port %s: started again", p->name);
	}
	/* release: the workers pick up the new handles (dpsock_worker_ports_rebind) */
	__atomic_add_fetch(&d->ports_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

/* The ports were started again (a takeover that failed after the holder
 * released them): their DPDK ports and AF_XDP sockets are new. */
void
dpsock_worker_ports_rebind(struct dpsock_worker *w)
{
	struct dpsock_stack *d = w->d;
	unsigned int i;

	w->ports_gen = __atomic_load_n(&d->ports_gen, __ATOMIC_ACQUIRE);
	for (i = 0; i < w->n_ports; i++) {
		struct dpsock_worker_port *wp = &w->ports[i];
		struct epoll_event xev = { .events = EPOLLIN };

		wp->dev_port = wp->port->queues[w->queue].port_id;
		wp->dev_queue = wp->port->queues[w->queue].queue_id;
		/* the old socket left the epoll set when it closed */
		xev.data.fd = wp->port->queues[w->queue].xsk_fd;
		if (xev.data.fd >= 0)
			epoll_ctl(w->epfd, EPOLL_CTL_ADD, xev.data.fd, &xev);
	}
}
