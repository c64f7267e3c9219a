/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sharing/ — sharing a NIC with the kernel: the registry of the flows
 * dpsock serves (here), dpsockd's XDP program (bpf/) and its loader
 * (xdp_filter.c), rte_flow rules in isolated mode (flow_filter.c).
 *
 * filter.c — the registry of the flows dpsock serves on the ports it shares
 * with the kernel (filter_priv.h), and what keeps the kernel off them.
 *
 * Sockets register what they serve (a TCP listener's or a bound UDP
 * socket's protocol, local address and port; a group a port joined); the
 * registry counts them (every worker has its own listener on a port, a
 * preloaded UDP socket has one slot per worker) and tells each shared
 * port's backend only of the first and the last. The local addresses and
 * the ephemeral range come from the net view and the configuration.
 *
 * Ports held in the kernel too, so that the kernel never gives a port of
 * dpsock's flows to one of its own sockets (the filter would then take that
 * socket's traffic):
 *   - dpsock's ephemeral range (its active opens, its UDP sockets without a
 *     port of their own): added to the namespace's
 *     net.ipv4.ip_local_reserved_ports at start, the earlier value put back
 *     at a clean stop. One write for the whole range, so no system call per
 *     connection, and a SYN-ACK can never arrive before its entry: the
 *     filter matches the range, not each connection. The earlier value is
 *     kept in /dev/shm/dpsock.<name>.ports too (tmpfs: gone at a reboot,
 *     as the sysctl's value): after a kill -9 the reservation stays
 *     (harmless, the kernel only leaves those ports alone) and the next
 *     dpsockd of that name takes the earlier value from there, so its
 *     clean stop puts back what the host had.
 *   - a port a socket binds or listens on: a preloaded program's own kernel
 *     socket is bound to it already (shim: bind); for a native app's socket
 *     the registry binds a kernel socket of the same protocol to it (the
 *     "holder"), and a port a kernel socket has already is refused with
 *     EADDRINUSE, as Linux would.
 * Kernel programs binding explicitly into the reserved range are not
 * stopped by the reservation (it only steers the kernel's own choice): the
 * range is dpsock's, as documented in docs/running.md.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_spinlock.h>

#include "core/stack_priv.h"
#include "filter_priv.h"
#include "core/log_priv.h"
#include "netview/netview_priv.h"

#define RESERVED_PORTS "/proc/sys/net/ipv4/ip_local_reserved_ports"
#define PORT_RANGE "/proc/sys/net/ipv4/ip_local_port_range"
#define RESERVED_KEPT_FMT "/dev/shm/dpsock.%s.ports"
/* local addresses of one port, both families */
#define FLT_ADDRS_PORT (DPSOCK_NV_ADDRS_PORT + DPSOCK_NV_ADDRS6_PORT)

struct flt_entry {
	uint8_t proto;            /* IPPROTO_TCP / IPPROTO_UDP; 0: a group */
	uint8_t port_idx;         /* a group: its port */
	uint16_t port;            /* host order */
	struct dpsock_mc_addr addr; /* local address or a family's any (a group:
				     * the group) */
	uint32_t refs;
	int holder;               /* the kernel socket holding it, -1: none */
};

struct dpsock_filter {
	rte_spinlock_t lock;      /* entries; the backends' calls */
	unsigned int n, cap;
	struct flt_entry *e;
	/* each shared port's backend: its XDP program (AF_XDP), or its rte_flow
	 * rules (a NIC in isolated mode) */
	struct dpsock_xdpf *xdpf[DPSOCK_MAX_PORTS];
	struct dpsock_flowf *flowf[DPSOCK_MAX_PORTS];
	/* given to each backend: IPv4's (mapped), then IPv6's */
	struct dpsock_mc_addr addrs[DPSOCK_MAX_PORTS][FLT_ADDRS_PORT];
	unsigned int n_addrs[DPSOCK_MAX_PORTS];
	char reserved_before[4096]; /* ip_local_reserved_ports at start */
	char reserved_kept[128];    /* where reserved_before is kept */
	bool reserved_set;
};

static bool
in_range(const struct dpsock_stack *d, uint16_t port)
{
	return port >= d->eph_min && port <= d->eph_max;
}

/* ---- the kernel's port reservation ------------------------------------------- */

static int
read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return -errno;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

static int
write_file(const char *path, const char *val)
{
	FILE *f = fopen(path, "we");
	int r = 0;

	if (f == NULL)
		return -errno;
	/* (a sysctl takes a line; an empty one clears a list) */
	if (fprintf(f, "%s\n", val) < 0)
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

static int
reserve_ports(struct dpsock_stack *d, struct dpsock_filter *f, char *err, size_t errlen)
{
	char val[4096 + 32], range[64];
	unsigned int klo = 0, khi = 0;
	int r;

	if (read_file(PORT_RANGE, range, sizeof(range)) == 0 &&
	    sscanf(range, "%u %u", &klo, &khi) == 2 && d->eph_min <= klo && d->eph_max >= khi) {
		snprintf(err, errlen, "dpsock's ephemeral range %u-%u (tcp.ephemeral_min/max) covers "
			 "the kernel's whole range %u-%u (net.ipv4.ip_local_port_range): on a port "
			 "shared with the kernel, the range is reserved for dpsock, and the kernel's "
			 "own connections would find no port; give dpsock a part of it (the default "
			 "on a shared port is 49152-60999)", d->eph_min, d->eph_max, klo, khi);
		return -EINVAL;
	}
	snprintf(f->reserved_kept, sizeof(f->reserved_kept), RESERVED_KEPT_FMT, d->conf.name);
	if (read_file(f->reserved_kept, f->reserved_before, sizeof(f->reserved_before)) == 0) {
		DPSOCK_LOG(NOTICE, main, "%s: a dpsockd named '%s' did not stop cleanly; %s "
			   "before it was '%s', put back at this one's stop", f->reserved_kept,
			   d->conf.name, RESERVED_PORTS, f->reserved_before);
	} else {
		r = read_file(RESERVED_PORTS, f->reserved_before, sizeof(f->reserved_before));
		if (r != 0) {
			snprintf(err, errlen, "%s: %s: the kernel could take dpsock's ports",
				 RESERVED_PORTS, strerror(-r));
			return r;
		}
		r = write_file(f->reserved_kept, f->reserved_before);
		if (r != 0)
			DPSOCK_LOG(WARNING, main, "%s: %s: after a kill -9 the ports stay "
				   "reserved in the kernel", f->reserved_kept, strerror(-r));
	}
	snprintf(val, sizeof(val), "%s%s%u-%u", f->reserved_before,
		 f->reserved_before[0] != '\0' ? "," : "", d->eph_min, d->eph_max);
	r = write_file(RESERVED_PORTS, val);
	if (r != 0) {
		snprintf(err, errlen, "cannot reserve dpsock's ports %u-%u in %s: %s", d->eph_min,
			 d->eph_max, RESERVED_PORTS, strerror(-r));
		unlink(f->reserved_kept);
		return r;
	}
	f->reserved_set = true;
	DPSOCK_LOG(NOTICE, main, "ports %u-%u are dpsock's: reserved in the kernel "
		   "(net.ipv4.ip_local_reserved_ports), steered to dpsock on the shared ports",
		   d->eph_min, d->eph_max);
	return 0;
}

/* ---- backends ------------------------------------------------------------------ */

static bool
has_backend(const struct dpsock_filter *f, unsigned int i)
{
	return f->xdpf[i] != NULL || f->flowf[i] != NULL;
}

static int
backend_addr(struct dpsock_filter *f, unsigned int i, struct dpsock_mc_addr addr, bool add)
{
	return f->xdpf[i] != NULL ? dpsock_xdpf_addr(f->xdpf[i], addr, add) :
				    dpsock_flowf_addr(f->flowf[i], addr, add);
}

static int
backend_port(struct dpsock_stack *d, struct dpsock_filter *f, const struct flt_entry *e, bool add)
{
	int ret = 0, r;

	for (unsigned int i = 0; i < d->n_ports; i++) {
		if (!has_backend(f, i))
			continue;
		if (e->proto == 0) {
			if (e->port_idx != i)
				continue;
			r = f->xdpf[i] != NULL ? dpsock_xdpf_group(f->xdpf[i], e->addr, add) :
						 dpsock_flowf_group(f->flowf[i], e->addr, add);
		} else {
			r = f->xdpf[i] != NULL ?
			    dpsock_xdpf_port(f->xdpf[i], e->proto, e->addr, e->port, add) :
			    dpsock_flowf_port(f->flowf[i], e->proto, e->addr, e->port, add);
		}
		if (r != 0 && ret == 0)
			ret = r;
	}
	return ret;
}

/* The kernel socket that holds proto/addr:port for a native socket: an
 * AF_INET one for IPv4, an IPV6_V6ONLY AF_INET6 one for IPv6 (a dual-stack
 * socket has an entry of each family, hence two holders). */
static int
holder_open(uint8_t proto, struct dpsock_mc_addr addr, uint16_t port)
{
	bool v4 = dpsock_mc_addr_is4(addr);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = addr.w[3],
				  .sin_port = htons(port) };
	struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	int fd = socket(v4 ? AF_INET : AF_INET6,
			(proto == IPPROTO_TCP ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
	int one = 1, r;

	if (fd < 0)
		return -errno;
	memcpy(&sa6.sin6_addr, addr.w, 16);
	/* a TIME_WAIT of the kernel's own on the port is no owner */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!v4)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if ((v4 ? bind(fd, (struct sockaddr *)&sa, sizeof(sa)) :
		  bind(fd, (struct sockaddr *)&sa6, sizeof(sa6))) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

static struct flt_entry *
entry_find(struct dpsock_filter *f, uint8_t proto, struct dpsock_mc_addr addr, uint16_t port,
	   uint8_t port_idx)
{
	for (unsigned int i = 0; i < f->n; i++) {
		struct flt_entry *e = &f->e[i];

		if (e->proto == proto && dpsock_mc_addr_eq(e->addr, addr) && e->port == port &&
		    (proto != 0 || e->port_idx == port_idx))
			return e;
	}
	return NULL;
}

static int
entry_ref(struct dpsock_stack *d, uint8_t proto, struct dpsock_mc_addr addr, uint16_t port,
	  uint8_t port_idx, bool hold)
{
	struct dpsock_filter *f = d->filter;
	struct flt_entry *e;
	int r = 0;

	if (f == NULL)
		return 0;
	rte_spinlock_lock(&f->lock);
	e = entry_find(f, proto, addr, port, port_idx);
	if (e != NULL) {
		e->refs++;
		goto out;
	}
	if (f->n == f->cap) {
		unsigned int cap = f->cap ? 2 * f->cap : 64;
		struct flt_entry *n = realloc(f->e, cap * sizeof(*n));

		if (n == NULL) {
			r = -ENOMEM;
			goto out;
		}
		f->e = n;
		f->cap = cap;
	}
	e = &f->e[f->n];
	*e = (struct flt_entry){ .proto = proto, .port_idx = port_idx, .port = port, .addr = addr,
				 .refs = 1, .holder = -1 };
	if (hold && proto != 0 && !in_range(d, port)) {
		int fd = holder_open(proto, addr, port);

		/* a kernel without IPv6 (ipv6.disable=1) has nobody to take
		 * an IPv6 port from dpsock */
		if (fd < 0 && !(fd == -EAFNOSUPPORT && !dpsock_mc_addr_is4(addr))) {
			r = fd;
			goto out;
		}
		e->holder = fd < 0 ? -1 : fd;
	}
	/* the entry is in place before the socket can be reached: the first
	 * SYN or datagram comes after the caller returns */
	r = backend_port(d, f, e, true);
	if (r != 0) {
		DPSOCK_LOG(WARNING, main, "filter: %s port %u (%s): %s", proto == IPPROTO_TCP ?
			   "TCP" : proto == IPPROTO_UDP ? "UDP" : "group", port,
			   dpsock_mc_addr_is4(addr) ? "IPv4" : "IPv6", strerror(-r));
		if (e->holder >= 0)
			close(e->holder);
		goto out;
	}
	f->n++;
out:
	rte_spinlock_unlock(&f->lock);
	return r;
}

static void
entry_unref(struct dpsock_stack *d, uint8_t proto, struct dpsock_mc_addr addr, uint16_t port,
	    uint8_t port_idx)
{
	struct dpsock_filter *f = d->filter;
	struct flt_entry *e;

	if (f == NULL)
		return;
	rte_spinlock_lock(&f->lock);
	e = entry_find(f, proto, addr, port, port_idx);
	if (e != NULL && --e->refs == 0) {
		backend_port(d, f, e, false);
		if (e->holder >= 0)
			close(e->holder);
		*e = f->e[--f->n];
	}
	rte_spinlock_unlock(&f->lock);
}

/* ---- the API --------------------------------------------------------------------- */

int
dpsock_filter_serve(struct dpsock_stack *d, uint8_t proto, struct dpsock_mc_addr addr,
		    uint16_t port, bool hold)
{
	return entry_ref(d, proto, addr, port, 0, hold);
}

void
dpsock_filter_unserve(struct dpsock_stack *d, uint8_t proto, struct dpsock_mc_addr addr,
		      uint16_t port)
{
	entry_unref(d, proto, addr, port, 0);
}

int
dpsock_filter_group(struct dpsock_stack *d, unsigned int port_idx, struct dpsock_mc_addr group,
		    bool add)
{
	if (!add) {
		entry_unref(d, 0, group, 0, (uint8_t)port_idx);
		return 0;
	}
	return entry_ref(d, 0, group, 0, (uint8_t)port_idx, false);
}

void
dpsock_filter_netview(struct dpsock_stack *d, const struct dpsock_netview *v)
{
	struct dpsock_filter *f = d->filter;

	if (f == NULL)
		return;
	rte_spinlock_lock(&f->lock);
	for (unsigned int i = 0; i < d->n_ports; i++) {
		struct dpsock_mc_addr want[FLT_ADDRS_PORT];
		unsigned int n = 0, j, k;

		if (!has_backend(f, i))
			continue;
		for (j = 0; j < v->n_addrs && n < FLT_ADDRS_PORT; j++)
			if (v->addrs[j].port == i && v->addrs[j].addr != 0)
				want[n++] = dpsock_mc_addr4(v->addrs[j].addr);
		for (j = 0; j < v->n_addrs6 && n < FLT_ADDRS_PORT; j++)
			if (v->addrs6[j].port == i)
				want[n++] = dpsock_mc_addr6(v->addrs6[j].addr);
		/* added first, then removed: an address that moves is never
		 * missing */
		for (j = 0; j < n; j++) {
			for (k = 0; k < f->n_addrs[i] && !dpsock_mc_addr_eq(f->addrs[i][k], want[j]);
			     k++)
				;
			if (k == f->n_addrs[i])
				backend_addr(f, i, want[j], true);
		}
		for (k = 0; k < f->n_addrs[i]; k++) {
			for (j = 0; j < n && !dpsock_mc_addr_eq(want[j], f->addrs[i][k]); j++)
				;
			if (j == n)
				backend_addr(f, i, f->addrs[i][k], false);
		}
		memcpy(f->addrs[i], want, n * sizeof(want[0]));
		f->n_addrs[i] = n;
	}
	rte_spinlock_unlock(&f->lock);
}

void
dpsock_filter_port_stats(struct dpsock_stack *d, unsigned int port_idx,
			 struct dpsock_xdpf_stats *out)
{
	struct dpsock_filter *f = d->filter;

	memset(out, 0, sizeof(*out));
	if (f != NULL && port_idx < DPSOCK_MAX_PORTS && f->xdpf[port_idx] != NULL)
		dpsock_xdpf_stats(f->xdpf[port_idx], out);
}

int
dpsock_filter_init(struct dpsock_stack *d, const int (*handed)[DPSOCK_XDPF_FDS], char *err,
		   size_t errlen)
{
	struct dpsock_filter *f;
	int r;

	if (!d->any_shared)
		return 0;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return -ENOMEM;
	rte_spinlock_init(&f->lock);
	d->filter = f;
	r = reserve_ports(d, f, err, errlen);
	if (r != 0)
		return r;
	for (unsigned int i = 0; i < d->n_ports; i++) {
		struct dpsock_port *p = &d->ports[i];
		int fds[DPSOCK_PORT_QUEUES_MAX];
		uint32_t qs[DPSOCK_PORT_QUEUES_MAX];
		unsigned int n = 0;
		char e[256];

		if (!p->shared)
			continue;
		if (!p->is_xdp) {
			/* in isolated mode since before its start (stack.c) */
			uint16_t qs16[DPSOCK_PORT_QUEUES_MAX];

			for (unsigned int q = 0; q < p->n_queues; q++)
				qs16[q] = (uint16_t)q;
			f->flowf[i] = dpsock_flowf_open(p->port_id, qs16, p->n_queues,
							p->vlan_tci & RTE_VLAN_ID_MASK, &r, e, sizeof(e));
			if (f->flowf[i] == NULL) {
				snprintf(err, errlen, "port %s: %s", p->name, e);
				return r;
			}
			r = dpsock_flowf_ephemeral(f->flowf[i], d->eph_min, d->eph_max);
			if (r != 0) {
				snprintf(err, errlen, "port %s: the ephemeral range's rules: %s", p->name,
					 dpsock_flowf_error(f->flowf[i]));
				return r;
			}
			DPSOCK_LOG(NOTICE, pmd, "port %s: shared with the kernel in isolated mode: "
				   "rte_flow rules send dpsock's flows to its %u queue(s), everything "
				   "else stays with the kernel's netdev", p->name, p->n_queues);
			continue;
		}
		for (unsigned int q = 0; q < p->n_queues; q++) {
			if (p->queues[q].xsk_fd < 0)
				continue;
			fds[n] = p->queues[q].xsk_fd;
			qs[n++] = p->queues[q].if_queue;
		}
		if (handed != NULL && handed[i][DPSOCK_XDPF_LINK] >= 0)
			f->xdpf[i] = dpsock_xdpf_adopt(p->xdp.ifindex, handed[i], fds, qs, n,
						       p->vlan_tci & RTE_VLAN_ID_MASK, &r, e, sizeof(e));
		else
			f->xdpf[i] = dpsock_xdpf_open(p->xdp.ifindex, fds, qs, n,
						      p->vlan_tci & RTE_VLAN_ID_MASK, &r, e, sizeof(e));
		if (f->xdpf[i] == NULL) {
			snprintf(err, errlen, "port %s: %s", p->name, e);
			return r;
		}
		r = dpsock_xdpf_ephemeral(f->xdpf[i], d->eph_min, d->eph_max);
		if (r != 0) {
			snprintf(err, errlen, "port %s: the ephemeral range in the XDP program: %s",
				 p->name, strerror(-r));
			return r;
		}
		if (p->xdp.if_rx_queues > n)
			DPSOCK_LOG(WARNING, pmd, "port %s: %s has %u RX queues and dpsockd reads %u: "
				   "dpsock's flows the NIC puts on the others are dropped (the "
				   "kernel must not answer them); give dpsockd every queue, or the "
				   "interface fewer (ethtool -L %s combined %u)", p->name,
				   p->xdp.ifname, p->xdp.if_rx_queues, n, p->xdp.ifname, n);
		DPSOCK_LOG(NOTICE, pmd, "port %s: shared with the kernel on %s: dpsockd's XDP "
			   "program%s sends dpsock's flows to its %u AF_XDP socket(s), everything "
			   "else to the kernel", p->name, p->xdp.ifname,
			   handed != NULL && handed[i][DPSOCK_XDPF_LINK] >= 0 ?
			   " (handed over, attached all along)" : "", n);
	}
	dpsock_filter_netview(d, d->nv);
	return 0;
}

int
dpsock_filter_xdp_fds(const struct dpsock_stack *d, unsigned int port, int fds[DPSOCK_XDPF_FDS])
{
	const struct dpsock_filter *f = d->filter;

	if (f == NULL || port >= DPSOCK_MAX_PORTS || f->xdpf[port] == NULL)
		return -ENOENT;
	dpsock_xdpf_fds(f->xdpf[port], fds);
	return 0;
}

void
dpsock_filter_fini(struct dpsock_stack *d)
{
	struct dpsock_filter *f = d->filter;
	int r;

	if (f == NULL)
		return;
	/* the kernel gets the interfaces back before the ports close (the
	 * PMD would fail to take off a program held by our link) */
	for (unsigned int i = 0; i < DPSOCK_MAX_PORTS; i++) {
		if (f->xdpf[i] != NULL)
			dpsock_xdpf_close(f->xdpf[i]);
		if (f->flowf[i] != NULL)
			dpsock_flowf_close(f->flowf[i]);
	}
	for (unsigned int i = 0; i < f->n; i++)
		if (f->e[i].holder >= 0)
			close(f->e[i].holder);
	if (f->reserved_set) {
		r = write_file(RESERVED_PORTS, f->reserved_before);
		if (r != 0)
			DPSOCK_LOG(WARNING, main, "%s: cannot put back '%s': %s", RESERVED_PORTS,
				   f->reserved_before, strerror(-r));
		else
			unlink(f->reserved_kept);
	}
	free(f->e);
	free(f);
	d->filter = NULL;
}
