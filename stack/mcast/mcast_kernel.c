/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcast_kernel.c — multicast on a port shared with the kernel: the kernel
 * is the host on that link, so it joins and speaks IGMP (as for VMA, whose
 * sockets join through the kernel); dpsock only receives the datagrams.
 *
 * For every (shared port, group) of the registry (mcast.c: the merged
 * interface state of every socket's membership), one kernel UDP socket of
 * dpsockd's joins the group on the port's netdev (MCAST_JOIN_GROUP) with
 * the registry's filter (MCAST_MSFILTER: INCLUDE or EXCLUDE and the
 * sources), so that the kernel's IGMPv3 reports say what dpsock's sockets
 * want; the filter (filter.c) steers the group's datagrams to dpsock first,
 * so none is lost to the kernel once the join went out. One socket per
 * group: the kernel allows a socket net.ipv4.igmp_max_memberships groups
 * (20) and net.ipv4.igmp_max_msf sources (10); a group whose filter has
 * more sources is joined for every source (EXCLUDE {}) and dpsock's sockets
 * filter on their own, as always. Dpsock's own IGMP host (mchost.c) leaves
 * shared ports alone. IPv6's groups the same way: the kernel joins them
 * (MCAST_JOIN_GROUP at IPPROTO_IPV6) and speaks MLD, net.ipv6.mld_max_msf
 * (64) sources per filter.
 *
 * Runs on the main lcore's control tick when the registry moved
 * (dpsock_mcast_control): a join takes effect within 100 ms.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/stack_priv.h"
#include "sharing/filter_priv.h"
#include "core/log_priv.h"
#include "mcast_priv.h"

/* sources the kernel takes per socket filter (its igmp_max_msf default;
 * mld_max_msf is 64) */
#define MCK_MAX_SRC 10

struct mck_group {
	struct dpsock_mc_addr addr;
	uint16_t port;
	int fd;
	bool seen;                /* still in the registry (this pass) */
	struct dpsock_mc_ifstate st;
};

struct dpsock_mc_kernel {
	unsigned int n, cap;
	struct mck_group *g;
	bool warned_src;
};

/* a (group or source) address as the socket API takes it */
static void
mc_sockaddr(struct sockaddr_storage *ss, struct dpsock_mc_addr a)
{
	memset(ss, 0, sizeof(*ss));
	if (dpsock_mc_addr_is4(a)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = a.w[3];
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, a.w, 16);
	}
}

static const char *
gstr(struct dpsock_mc_addr a, char *buf)
{
	if (dpsock_mc_addr_is4(a))
		return inet_ntop(AF_INET, &a.w[3], buf, INET6_ADDRSTRLEN);
	return inet_ntop(AF_INET6, a.w, buf, INET6_ADDRSTRLEN);
}

static int
msfilter(int fd, unsigned int ifindex, struct dpsock_mc_addr group,
	 const struct dpsock_mc_ifstate *st, bool *all)
{
	struct group_filter *gf;
	unsigned int n = st->nsrc;
	int r = 0;

	*all = false;
	if (n > MCK_MAX_SRC) {
		/* too many for the kernel's filter: every source, dpsock filters */
		*all = true;
		n = 0;
	}
	gf = calloc(1, GROUP_FILTER_SIZE(n ? n : 1));
	if (gf == NULL)
		return -ENOMEM;
	gf->gf_interface = ifindex;
	mc_sockaddr(&gf->gf_group, group);
	gf->gf_fmode = *all || st->mode == DPSOCK_MC_EXCLUDE ? MCAST_EXCLUDE : MCAST_INCLUDE;
	gf->gf_numsrc = n;
	for (unsigned int i = 0; i < n; i++)
		mc_sockaddr(&gf->gf_slist[i], st->src[i]);
	if (setsockopt(fd, dpsock_mc_addr_is4(group) ? IPPROTO_IP : IPPROTO_IPV6, MCAST_MSFILTER,
		       gf, GROUP_FILTER_SIZE(n)) < 0)
		r = -errno;
	free(gf);
	return r;
}

static void
apply(struct dpsock_stack *d, struct mck_group *k, const struct dpsock_mc_ifstate *st,
      struct dpsock_mc_kernel *mk)
{
	const struct dpsock_port *p = &d->ports[k->port];
	bool all, v4 = dpsock_mc_addr_is4(k->addr);
	char g[INET6_ADDRSTRLEN];
	int r;

	if (k->fd < 0) {
		struct group_req gr = { .gr_interface = p->caps.if_index };

		/* the filter first: a datagram after the join is dpsock's */
		r = dpsock_filter_group(d, k->port, k->addr, true);
		if (r != 0) {
			DPSOCK_LOG(WARNING, pmd, "port %s: group %s not steered to dpsock: %s",
				   p->name, gstr(k->addr, g), strerror(-r));
			return;
		}
		k->fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		mc_sockaddr(&gr.gr_group, k->addr);
		if (k->fd < 0 || setsockopt(k->fd, v4 ? IPPROTO_IP : IPPROTO_IPV6, MCAST_JOIN_GROUP,
					    &gr, sizeof(gr)) < 0) {
			DPSOCK_LOG(WARNING, pmd, "port %s: the kernel does not join %s: %s", p->name,
				   gstr(k->addr, g), strerror(errno));
			if (k->fd >= 0)
				close(k->fd);
			k->fd = -1;
			dpsock_filter_group(d, k->port, k->addr, false);
			return;
		}
	}
	r = msfilter(k->fd, p->caps.if_index, k->addr, st, &all);
	if (r != 0)
		DPSOCK_LOG(WARNING, pmd, "port %s: the kernel's source filter of %s: %s", p->name,
			   gstr(k->addr, g), strerror(-r));
	if (all && !mk->warned_src) {
		mk->warned_src = true;
		DPSOCK_LOG(NOTICE, pmd, "port %s: a group's source filter has more than %u "
			   "sources: the kernel joins it for all, dpsock's sockets filter",
			   p->name, MCK_MAX_SRC);
	}
	k->st = *st;
}

static void
drop(struct dpsock_stack *d, struct mck_group *k)
{
	if (k->fd >= 0) {
		close(k->fd);   /* the kernel leaves (its IGMP or MLD report goes out) */
		dpsock_filter_group(d, k->port, k->addr, false);
	}
	k->fd = -1;
}

static bool
state_same(const struct dpsock_mc_ifstate *a, const struct dpsock_mc_ifstate *b)
{
	return a->mode == b->mode && a->nsrc == b->nsrc &&
	       memcmp(a->src, b->src, a->nsrc * sizeof(a->src[0])) == 0;
}

void
dpsock_mcast_kernel_sync(struct dpsock_stack *d)
{
	struct dpsock_mcast *mc = d->mc;
	struct dpsock_mc_kernel *mk;
	struct snap {
		struct dpsock_mc_addr addr;
		uint16_t port;
		struct dpsock_mc_ifstate st;
	} *v = NULL;
	const struct dpsock_mc_group *rg;
	unsigned int n = 0, i, j;

	if (mc == NULL || !d->any_shared)
		return;
	if (mc->kernel == NULL && (mc->kernel = calloc(1, sizeof(*mc->kernel))) == NULL)
		return;
	mk = mc->kernel;
	rte_spinlock_lock(&mc->lock);
	if (mc->n_groups > 0 && (v = malloc(mc->n_groups * sizeof(*v))) == NULL) {
		rte_spinlock_unlock(&mc->lock);
		return;
	}
	for (rg = mc->groups; rg != NULL; rg = rg->next)
		if (rg->port < d->n_ports && d->ports[rg->port].shared) {
			v[n].addr = rg->addr;
			v[n].port = rg->port;
			v[n++].st = rg->st;
		}
	rte_spinlock_unlock(&mc->lock);

	for (j = 0; j < mk->n; j++)
		mk->g[j].seen = false;
	for (i = 0; i < n; i++) {
		struct mck_group *k = NULL;
		bool member = v[i].st.mode == DPSOCK_MC_EXCLUDE || v[i].st.nsrc > 0;

		for (j = 0; j < mk->n; j++)
			if (dpsock_mc_addr_eq(mk->g[j].addr, v[i].addr) && mk->g[j].port == v[i].port)
				k = &mk->g[j];
		if (!member)
			continue;  /* INCLUDE {}: not a member (RFC 3376) */
		if (k == NULL) {
			if (mk->n == mk->cap) {
				unsigned int cap = mk->cap ? 2 * mk->cap : 16;
				struct mck_group *g = realloc(mk->g, cap * sizeof(*g));

				if (g == NULL)
					continue;
				mk->g = g;
				mk->cap = cap;
			}
			k = &mk->g[mk->n++];
			*k = (struct mck_group){ .addr = v[i].addr, .port = v[i].port, .fd = -1 };
		}
		k->seen = true;
		if (k->fd < 0 || !state_same(&k->st, &v[i].st))
			apply(d, k, &v[i].st, mk);
	}
	for (j = 0; j < mk->n;) {
		if (mk->g[j].seen && mk->g[j].fd >= 0) {
			j++;
			continue;
		}
		drop(d, &mk->g[j]);
		mk->g[j] = mk->g[--mk->n];
	}
	free(v);
}

void
dpsock_mcast_kernel_fini(struct dpsock_stack *d)
{
	struct dpsock_mcast *mc = d->mc;

	if (mc == NULL || mc->kernel == NULL)
		return;
	for (unsigned int j = 0; j < mc->kernel->n; j++)
		drop(d, &mc->kernel->g[j]);
	free(mc->kernel->g);
	free(mc->kernel);
	mc->kernel = NULL;
}
