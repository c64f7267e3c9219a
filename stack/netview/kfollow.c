/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kfollow.c — the kernel follower: what the kernel knows of the netdevs
 * behind the ports dpsock shares with it (interfaces without `address`),
 * read over rtnetlink at start and followed while the stack runs.
 *
 *   link        RTM_NEWLINK: MTU, MAC, carrier (IFF_UP and IFF_LOWER_UP)
 *   addresses   RTM_NEWADDR / RTM_DELADDR: every IPv4 address of the netdev,
 *               and every IPv6 one that passed duplicate address detection
 *               (not tentative, not failed), the link-local one included
 *   routes      RTM_NEWROUTE / RTM_DELROUTE: the main table's unicast IPv4
 *               and IPv6 routes whose output interface is the netdev (the
 *               default gateway among them; IPv6's from router
 *               advertisements too)
 *   neighbours  RTM_NEWNEIGH / RTM_DELNEIGH: IPv4 and IPv6 neighbours of the
 *               netdev with a link-layer address in a usable state
 *
 * A control thread (a plain pthread, asleep in poll between messages)
 * keeps this model and, after each batch of messages that changed
 * something the stack uses, builds a new net view and publishes it
 * (netview.c): addresses reach the workers' netifs within one loop
 * iteration of theirs. Changes of links, addresses and routes are logged.
 *
 * Neighbours: dpsock sends no ARP and no neighbour solicitation on a shared
 * port (the kernel owns both there, and the answers would go to the kernel
 * anyway: the XDP filter passes ARP and ICMPv6). When a worker needs a MAC
 * the view lacks, it asks through dpsock_kfollow_resolve(6); the thread
 * asks the kernel to resolve it (RTM_NEWNEIGH with NTF_USE: the kernel
 * creates the entry if needed and sends its ARP request or neighbour
 * solicitation), and the kernel's RTM_NEWNEIGH with the answer makes the
 * next view.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_arp.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_ring.h>

#include "core/stack_priv.h"
#include "sharing/filter_priv.h"
#include "core/log_priv.h"
#include "netview_priv.h"

#define KF_RESOLVE_RING 1024
#define KF_RESOLVE_AGAIN_MS 1000   /* the same neighbour asked again at most this often */
#define KF_RECV_BUF (64 * 1024)

struct kf_addr {
	uint32_t addr;            /* network order */
	uint8_t plen;
};

struct kf_addr6 {
	uint8_t addr[16];
	uint8_t plen;
};

struct kf_port {
	unsigned int ifindex;
	char ifname[IF_NAMESIZE];
	bool link_seen;
	bool up;
	uint16_t mtu;
	uint8_t mac[6];
	unsigned int n_addrs;
	struct kf_addr addrs[DPSOCK_NV_ADDRS_PORT];
	unsigned int n_addrs6;
	struct kf_addr6 addrs6[DPSOCK_NV_ADDRS6_PORT];
};

struct kf_route {
	uint32_t dest, gateway, priority;
	uint8_t plen;
	uint8_t port;
};

struct kf_neigh {
	uint32_t ip;
	uint8_t port;
	uint8_t mac[6];
	bool usable;
};

/* A neighbour to resolve: what a worker puts in the ring, and what the
 * thread remembers it asked. */
struct kf_nb {
	uint8_t port;
	uint8_t v6;
	uint8_t pad[2];
	uint8_t ip[16];           /* IPv4: the first 4 bytes */
};

struct kf_asked {
	struct kf_nb nb;
	uint64_t when_ms;
};

struct dpsock_kfollow {
	struct dpsock_stack *d;
	int nl;                   /* rtnetlink, subscribed to the groups above */
	int efd;                  /* wakes the thread: resolve requests, stop */
	uint32_t seq;
	pthread_t thread;
	bool running;
	uint32_t stop;            /* shared */
	struct rte_ring *resolve; /* MP/SC, of struct kf_nb */
	struct kf_port ports[DPSOCK_MAX_PORTS];
	unsigned int n_routes;
	struct kf_route routes[DPSOCK_NV_ROUTES];
	unsigned int n_neigh;
	struct kf_neigh neigh[DPSOCK_NV_NEIGH];
	unsigned int n_routes6;
	struct dpsock_nv_route6 routes6[DPSOCK_NV_ROUTES6];
	unsigned int n_neigh6;
	struct dpsock_nv_neigh6 neigh6[DPSOCK_NV_NEIGH6];
	unsigned int n_asked;
	struct kf_asked asked[64];
	bool changed;             /* the model moved since the last view */
	bool logged_full;         /* a table filled up (logged once) */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
port_of_ifindex(const struct dpsock_kfollow *kf, unsigned int ifindex)
{
	for (unsigned int i = 0; i < kf->d->n_ports; i++)
		if (kf->d->conf.ifaces[i].shared && kf->ports[i].ifindex == ifindex)
			return (int)i;
	return -1;
}

static const char *
ipstr(uint32_t a, char *buf)
{
	const uint8_t *b = (const uint8_t *)&a;

	snprintf(buf, 16, "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	return buf;
}

static const char *
ip6str(const uint8_t *a, char *buf)
{
	return inet_ntop(AF_INET6, a, buf, INET6_ADDRSTRLEN);
}

/* ---- netlink ------------------------------------------------------------------ */

static int
nl_send(struct dpsock_kfollow *kf, struct nlmsghdr *h)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	h->nlmsg_seq = ++kf->seq;
	if (sendto(kf->nl, h, h->nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}

static int
nl_dump(struct dpsock_kfollow *kf, uint16_t type, uint8_t family)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
	} req = {
		.h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct rtgenmsg)), .nlmsg_type = type,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.g = { .rtgen_family = family },
	};

	return nl_send(kf, &req.h);
}

static void
rta_parse(struct rtattr **tb, int max, struct rtattr *rta, int len)
{
	memset(tb, 0, sizeof(*tb) * (max + 1));
	for (; RTA_OK(rta, len); rta = RTA_NEXT(rta, len))
		if (rta->rta_type <= max)
			tb[rta->rta_type] = rta;
}

static void
on_link(struct dpsock_kfollow *kf, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct rtattr *tb[IFLA_MAX + 1];
	struct kf_port *p;
	bool up;
	int i = port_of_ifindex(kf, (unsigned int)ifi->ifi_index);

	if (i < 0)
		return;
	p = &kf->ports[i];
	if (h->nlmsg_type == RTM_DELLINK) {
		if (p->up)
			DPSOCK_LOG(WARNING, main, "port %s: its netdev %s is gone", kf->d->ports[i].name,
				   p->ifname);
		p->up = false;
		kf->changed = true;
		return;
	}
	rta_parse(tb, IFLA_MAX, IFLA_RTA(ifi), (int)IFLA_PAYLOAD(h));
	up = (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_LOWER_UP);
	if (tb[IFLA_IFNAME] != NULL)
		snprintf(p->ifname, sizeof(p->ifname), "%s", (const char *)RTA_DATA(tb[IFLA_IFNAME]));
	if (tb[IFLA_MTU] != NULL) {
		uint32_t mtu = *(const uint32_t *)RTA_DATA(tb[IFLA_MTU]);

		if (p->link_seen && mtu != p->mtu)
			DPSOCK_LOG(NOTICE, main, "port %s: MTU %u -> %u (kernel, %s)",
				   kf->d->ports[i].name, p->mtu, mtu, p->ifname);
		if (mtu != p->mtu)
			kf->changed = true;
		p->mtu = (uint16_t)(mtu > 65535 ? 65535 : mtu);
	}
	if (tb[IFLA_ADDRESS] != NULL && RTA_PAYLOAD(tb[IFLA_ADDRESS]) == 6 &&
	    memcmp(p->mac, RTA_DATA(tb[IFLA_ADDRESS]), 6) != 0) {
		memcpy(p->mac, RTA_DATA(tb[IFLA_ADDRESS]), 6);
		kf->changed = true;
	}
	if (p->link_seen && up != p->up)
		DPSOCK_LOG(NOTICE, main, "port %s: link %s (kernel, %s)", kf->d->ports[i].name,
			   up ? "up" : "down", p->ifname);
	if (up != p->up)
		kf->changed = true;
	p->up = up;
	p->link_seen = true;
}

/* An IPv6 address of port i's netdev: usable once duplicate address
 * detection passed (a tentative one comes again, final, when it ends). */
static void
on_addr6(struct dpsock_kfollow *kf, const struct nlmsghdr *h, int i)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct rtattr *tb[IFA_MAX + 1];
	struct kf_port *p = &kf->ports[i];
	uint32_t flags = ifa->ifa_flags;
	char s[INET6_ADDRSTRLEN];
	const uint8_t *a;
	unsigned int j;
	bool del;

	rta_parse(tb, IFA_MAX, IFA_RTA(ifa), (int)IFA_PAYLOAD(h));
	if (tb[IFA_ADDRESS] == NULL || RTA_PAYLOAD(tb[IFA_ADDRESS]) != 16)
		return;
	if (tb[IFA_FLAGS] != NULL)
		flags = *(const uint32_t *)RTA_DATA(tb[IFA_FLAGS]);
	a = RTA_DATA(tb[IFA_ADDRESS]);
	del = h->nlmsg_type == RTM_DELADDR || (flags & (IFA_F_TENTATIVE | IFA_F_DADFAILED));
	for (j = 0; j < p->n_addrs6 && memcmp(p->addrs6[j].addr, a, 16) != 0; j++)
		;
	if (del) {
		if (j == p->n_addrs6)
			return;
		memmove(&p->addrs6[j], &p->addrs6[j + 1],
			(p->n_addrs6 - j - 1) * sizeof(p->addrs6[0]));
		p->n_addrs6--;
		DPSOCK_LOG(NOTICE, main, "port %s: address %s/%u removed (kernel, %s)",
			   kf->d->ports[i].name, ip6str(a, s), ifa->ifa_prefixlen, p->ifname);
		kf->changed = true;
		return;
	}
	if (j < p->n_addrs6) {
		if (p->addrs6[j].plen != ifa->ifa_prefixlen) {
			p->addrs6[j].plen = ifa->ifa_prefixlen;
			kf->changed = true;
		}
		return;
	}
	if (p->n_addrs6 == DPSOCK_NV_ADDRS6_PORT) {
		DPSOCK_LOG(WARNING, main, "port %s: more than %u IPv6 addresses on %s: %s is not "
			   "served", kf->d->ports[i].name, DPSOCK_NV_ADDRS6_PORT, p->ifname,
			   ip6str(a, s));
		return;
	}
	p->addrs6[p->n_addrs6] = (struct kf_addr6){ .plen = ifa->ifa_prefixlen };
	memcpy(p->addrs6[p->n_addrs6++].addr, a, 16);
	DPSOCK_LOG(NOTICE, main, "port %s: address %s/%u (kernel, %s)", kf->d->ports[i].name,
		   ip6str(a, s), ifa->ifa_prefixlen, p->ifname);
	kf->changed = true;
}

static void
on_addr(struct dpsock_kfollow *kf, const struct nlmsghdr *h)
{
	const struct ifaddrmsg *ifa = NLMSG_DATA(h);
	struct rtattr *tb[IFA_MAX + 1];
	struct kf_port *p;
	uint32_t a;
	unsigned int j;
	char s[16];
	int i;

	if ((i = port_of_ifindex(kf, ifa->ifa_index)) < 0)
		return;
	if (ifa->ifa_family == AF_INET6) {
		on_addr6(kf, h, i);
		return;
	}
	if (ifa->ifa_family != AF_INET)
		return;
	p = &kf->ports[i];
	rta_parse(tb, IFA_MAX, IFA_RTA(ifa), (int)IFA_PAYLOAD(h));
	if (tb[IFA_LOCAL] == NULL && tb[IFA_ADDRESS] == NULL)
		return;
	memcpy(&a, RTA_DATA(tb[IFA_LOCAL] != NULL ? tb[IFA_LOCAL] : tb[IFA_ADDRESS]), 4);
	for (j = 0; j < p->n_addrs && p->addrs[j].addr != a; j++)
		;
	if (h->nlmsg_type == RTM_DELADDR) {
		if (j == p->n_addrs)
			return;
		memmove(&p->addrs[j], &p->addrs[j + 1], (p->n_addrs - j - 1) * sizeof(p->addrs[0]));
		p->n_addrs--;
		DPSOCK_LOG(NOTICE, main, "port %s: address %s/%u removed (kernel, %s)",
			   kf->d->ports[i].name, ipstr(a, s), ifa->ifa_prefixlen, p->ifname);
		kf->changed = true;
		return;
	}
	if (j < p->n_addrs) {
		if (p->addrs[j].plen != ifa->ifa_prefixlen) {
			p->addrs[j].plen = ifa->ifa_prefixlen;
			kf->changed = true;
		}
		return;
	}
	if (p->n_addrs == DPSOCK_NV_ADDRS_PORT) {
		DPSOCK_LOG(WARNING, main, "port %s: more than %u addresses on %s: %s is not served",
			   kf->d->ports[i].name, DPSOCK_NV_ADDRS_PORT, p->ifname, ipstr(a, s));
		return;
	}
	p->addrs[p->n_addrs++] = (struct kf_addr){ .addr = a, .plen = ifa->ifa_prefixlen };
	DPSOCK_LOG(NOTICE, main, "port %s: address %s/%u (kernel, %s)", kf->d->ports[i].name,
		   ipstr(a, s), ifa->ifa_prefixlen, p->ifname);
	kf->changed = true;
}

/* An IPv6 route of port i's netdev (attributes in tb). */
static void
on_route6(struct dpsock_kfollow *kf, const struct nlmsghdr *h, struct rtattr **tb, int i)
{
	const struct rtmsg *rt = NLMSG_DATA(h);
	struct dpsock_nv_route6 r = { .prefix_len = rt->rtm_dst_len, .port = (uint8_t)i };
	char s1[INET6_ADDRSTRLEN], s2[INET6_ADDRSTRLEN];
	static const uint8_t any[16];
	unsigned int j;

	if (tb[RTA_DST] != NULL && RTA_PAYLOAD(tb[RTA_DST]) == 16)
		memcpy(r.dest, RTA_DATA(tb[RTA_DST]), 16);
	if (tb[RTA_GATEWAY] != NULL && RTA_PAYLOAD(tb[RTA_GATEWAY]) == 16)
		memcpy(r.gateway, RTA_DATA(tb[RTA_GATEWAY]), 16);
	if (tb[RTA_PRIORITY] != NULL)
		r.priority = *(const uint32_t *)RTA_DATA(tb[RTA_PRIORITY]);
	for (j = 0; j < kf->n_routes6; j++) {
		const struct dpsock_nv_route6 *o = &kf->routes6[j];

		if (memcmp(o->dest, r.dest, 16) == 0 && o->prefix_len == r.prefix_len &&
		    o->priority == r.priority && o->port == r.port)
			break;
	}
	if (h->nlmsg_type == RTM_DELROUTE) {
		if (j == kf->n_routes6)
			return;
		kf->routes6[j] = kf->routes6[--kf->n_routes6];
		if (memcmp(r.gateway, any, 16) != 0)
			DPSOCK_LOG(NOTICE, main, "port %s: route %s/%u via %s removed (kernel)",
				   kf->d->ports[i].name, ip6str(r.dest, s1), r.prefix_len,
				   ip6str(r.gateway, s2));
		kf->changed = true;
		return;
	}
	if (j < kf->n_routes6) {
		if (memcmp(kf->routes6[j].gateway, r.gateway, 16) != 0) {
			kf->routes6[j] = r;
			kf->changed = true;
		}
		return;
	}
	if (kf->n_routes6 == DPSOCK_NV_ROUTES6) {
		if (!kf->logged_full)
			DPSOCK_LOG(WARNING, main, "more than %u kernel IPv6 routes on the shared "
				   "ports: the next ones are not followed", DPSOCK_NV_ROUTES6);
		kf->logged_full = true;
		return;
	}
	kf->routes6[kf->n_routes6++] = r;
	if (memcmp(r.gateway, any, 16) != 0)
		DPSOCK_LOG(NOTICE, main, "port %s: route %s/%u via %s (kernel)", kf->d->ports[i].name,
			   ip6str(r.dest, s1), r.prefix_len, ip6str(r.gateway, s2));
	kf->changed = true;
}

static void
on_route(struct dpsock_kfollow *kf, const struct nlmsghdr *h)
{
	const struct rtmsg *rt = NLMSG_DATA(h);
	struct rtattr *tb[RTA_MAX + 1];
	struct kf_route r = { .plen = rt->rtm_dst_len };
	uint32_t table = rt->rtm_table;
	unsigned int j;
	char s1[16], s2[16];
	int i;

	if ((rt->rtm_family != AF_INET && rt->rtm_family != AF_INET6) ||
	    rt->rtm_type != RTN_UNICAST)
		return;
	rta_parse(tb, RTA_MAX, RTM_RTA(rt), (int)RTM_PAYLOAD(h));
	if (tb[RTA_TABLE] != NULL)
		table = *(const uint32_t *)RTA_DATA(tb[RTA_TABLE]);
	if (table != RT_TABLE_MAIN || tb[RTA_OIF] == NULL ||
	    (i = port_of_ifindex(kf, *(const uint32_t *)RTA_DATA(tb[RTA_OIF]))) < 0)
		return;
	if (rt->rtm_family == AF_INET6) {
		on_route6(kf, h, tb, i);
		return;
	}
	r.port = (uint8_t)i;
	if (tb[RTA_DST] != NULL)
		memcpy(&r.dest, RTA_DATA(tb[RTA_DST]), 4);
	if (tb[RTA_GATEWAY] != NULL)
		memcpy(&r.gateway, RTA_DATA(tb[RTA_GATEWAY]), 4);
	if (tb[RTA_PRIORITY] != NULL)
		r.priority = *(const uint32_t *)RTA_DATA(tb[RTA_PRIORITY]);
	for (j = 0; j < kf->n_routes; j++) {
		const struct kf_route *o = &kf->routes[j];

		if (o->dest == r.dest && o->plen == r.plen && o->priority == r.priority &&
		    o->port == r.port)
			break;
	}
	if (h->nlmsg_type == RTM_DELROUTE) {
		if (j == kf->n_routes)
			return;
		kf->routes[j] = kf->routes[--kf->n_routes];
		if (r.gateway != 0)
			DPSOCK_LOG(NOTICE, main, "port %s: route %s/%u via %s removed (kernel)",
				   kf->d->ports[i].name, ipstr(r.dest, s1), r.plen, ipstr(r.gateway, s2));
		kf->changed = true;
		return;
	}
	if (j < kf->n_routes) {
		if (kf->routes[j].gateway != r.gateway) {
			kf->routes[j] = r;
			kf->changed = true;
		}
		return;
	}
	if (kf->n_routes == DPSOCK_NV_ROUTES) {
		if (!kf->logged_full)
			DPSOCK_LOG(WARNING, main, "more than %u kernel routes on the shared ports: "
				   "the next ones are not followed", DPSOCK_NV_ROUTES);
		kf->logged_full = true;
		return;
	}
	kf->routes[kf->n_routes++] = r;
	if (r.gateway != 0)
		DPSOCK_LOG(NOTICE, main, "port %s: route %s/%u via %s (kernel)", kf->d->ports[i].name,
			   ipstr(r.dest, s1), r.plen, ipstr(r.gateway, s2));
	kf->changed = true;
}

/* Is a neighbour entry usable: a link-layer address in a state the kernel
 * itself would send with. */
static bool
neigh_usable(const struct nlmsghdr *h, struct rtattr **tb)
{
	const struct ndmsg *nd = NLMSG_DATA(h);

	return h->nlmsg_type == RTM_NEWNEIGH && tb[NDA_LLADDR] != NULL &&
	       RTA_PAYLOAD(tb[NDA_LLADDR]) == 6 &&
	       (nd->ndm_state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
				 NUD_PERMANENT | NUD_NOARP));
}

/* An IPv6 neighbour of port i's netdev (attributes in tb). */
static void
on_neigh6(struct dpsock_kfollow *kf, const struct nlmsghdr *h, struct rtattr **tb, int i)
{
	struct dpsock_nv_neigh6 n = { .port = (uint8_t)i };
	bool usable = neigh_usable(h, tb);
	unsigned int j;

	if (RTA_PAYLOAD(tb[NDA_DST]) != 16)
		return;
	memcpy(n.ip, RTA_DATA(tb[NDA_DST]), 16);
	if (usable)
		memcpy(n.mac, RTA_DATA(tb[NDA_LLADDR]), 6);
	for (j = 0; j < kf->n_neigh6; j++)
		if (memcmp(kf->neigh6[j].ip, n.ip, 16) == 0 && kf->neigh6[j].port == n.port)
			break;
	if (!usable) {
		if (j < kf->n_neigh6) {
			kf->neigh6[j] = kf->neigh6[--kf->n_neigh6];
			kf->changed = true;
		}
		return;
	}
	if (j < kf->n_neigh6) {
		if (memcmp(kf->neigh6[j].mac, n.mac, 6) != 0) {
			kf->neigh6[j] = n;
			kf->changed = true;
		}
		return;
	}
	if (kf->n_neigh6 == DPSOCK_NV_NEIGH6) {
		if (!kf->logged_full)
			DPSOCK_LOG(WARNING, main, "more than %u IPv6 neighbours on the shared ports: "
				   "the next ones are not followed", DPSOCK_NV_NEIGH6);
		kf->logged_full = true;
		return;
	}
	kf->neigh6[kf->n_neigh6++] = n;
	kf->changed = true;
}

static void
on_neigh(struct dpsock_kfollow *kf, const struct nlmsghdr *h)
{
	const struct ndmsg *nd = NLMSG_DATA(h);
	struct rtattr *tb[NDA_MAX + 1];
	struct kf_neigh n = { 0 };
	unsigned int j;
	int i;

	if ((nd->ndm_family != AF_INET && nd->ndm_family != AF_INET6) ||
	    (i = port_of_ifindex(kf, (unsigned int)nd->ndm_ifindex)) < 0)
		return;
	rta_parse(tb, NDA_MAX, (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd))),
		  (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*nd))));
	if (tb[NDA_DST] == NULL)
		return;
	if (nd->ndm_family == AF_INET6) {
		on_neigh6(kf, h, tb, i);
		return;
	}
	memcpy(&n.ip, RTA_DATA(tb[NDA_DST]), 4);
	n.port = (uint8_t)i;
	n.usable = neigh_usable(h, tb);
	if (n.usable)
		memcpy(n.mac, RTA_DATA(tb[NDA_LLADDR]), 6);
	for (j = 0; j < kf->n_neigh; j++)
		if (kf->neigh[j].ip == n.ip && kf->neigh[j].port == n.port)
			break;
	if (!n.usable) {
		if (j < kf->n_neigh) {
			kf->neigh[j] = kf->neigh[--kf->n_neigh];
			kf->changed = true;
		}
		return;
	}
	if (j < kf->n_neigh) {
		if (memcmp(kf->neigh[j].mac, n.mac, 6) != 0) {
			kf->neigh[j] = n;
			kf->changed = true;
		}
		return;
	}
	if (kf->n_neigh == DPSOCK_NV_NEIGH) {
		if (!kf->logged_full)
			DPSOCK_LOG(WARNING, main, "more than %u neighbours on the shared ports: "
				   "the next ones are not followed", DPSOCK_NV_NEIGH);
		kf->logged_full = true;
		return;
	}
	kf->neigh[kf->n_neigh++] = n;
	kf->changed = true;
}

/* Read what the socket holds (non-blocking). Returns 1 when a dump ended
 * (NLMSG_DONE), 0 when nothing more is waiting, -errno. */
static int
nl_read(struct dpsock_kfollow *kf, int flags)
{
	static char buf[KF_RECV_BUF] __attribute__((aligned(8)));
	int done = 0;

	for (;;) {
		ssize_t n = recv(kf->nl, buf, sizeof(buf), flags);
		struct nlmsghdr *h;

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? done : -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			switch (h->nlmsg_type) {
			case NLMSG_DONE:
				done = 1;
				break;
			case NLMSG_ERROR: {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error != 0)
					DPSOCK_LOG(DEBUG, main, "netlink: request %u: %s", e->msg.nlmsg_seq,
						   strerror(-e->error));
				break;
			}
			case RTM_NEWLINK:
			case RTM_DELLINK:
				on_link(kf, h);
				break;
			case RTM_NEWADDR:
			case RTM_DELADDR:
				on_addr(kf, h);
				break;
			case RTM_NEWROUTE:
			case RTM_DELROUTE:
				on_route(kf, h);
				break;
			case RTM_NEWNEIGH:
			case RTM_DELNEIGH:
				on_neigh(kf, h);
				break;
			default:
				break;
			}
		}
		if (done)
			return 1;
		flags |= MSG_DONTWAIT;
	}
}

/* One dump, read to its end (start-up). */
static int
dump(struct dpsock_kfollow *kf, uint16_t type)
{
	/* every family: the handlers take IPv4's and IPv6's */
	int r = nl_dump(kf, type, AF_UNSPEC);

	while (r == 0)
		r = nl_read(kf, 0);
	return r < 0 ? r : 0;
}

/* Ask the kernel to resolve a neighbour (NTF_USE: as if it sent to it). */
static void
ask_kernel(struct dpsock_kfollow *kf, const struct kf_nb *nb)
{
	struct {
		struct nlmsghdr h;
		struct ndmsg nd;
		char attrs[64];
	} req;
	struct rtattr *rta;
	uint64_t t = now_ms();
	unsigned int i, oldest = 0, port = nb->port, alen = nb->v6 ? 16 : 4;
	char s[INET6_ADDRSTRLEN];

	if (port >= kf->d->n_ports)
		return;
	for (i = 0; i < kf->n_asked; i++) {
		if (memcmp(&kf->asked[i].nb, nb, sizeof(*nb)) == 0) {
			if (t - kf->asked[i].when_ms < KF_RESOLVE_AGAIN_MS)
				return;
			break;
		}
		if (kf->asked[i].when_ms < kf->asked[oldest].when_ms)
			oldest = i;
	}
	if (i == kf->n_asked) {
		if (kf->n_asked < RTE_DIM(kf->asked))
			i = kf->n_asked++;
		else
			i = oldest;
	}
	kf->asked[i] = (struct kf_asked){ .nb = *nb, .when_ms = t };
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_type = RTM_NEWNEIGH;
	req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK;
	req.h.nlmsg_len = NLMSG_LENGTH(sizeof(req.nd));
	req.nd.ndm_family = nb->v6 ? AF_INET6 : AF_INET;
	req.nd.ndm_ifindex = (int)kf->ports[port].ifindex;
	req.nd.ndm_flags = NTF_USE;
	req.nd.ndm_state = NUD_NONE;
	rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.h.nlmsg_len));
	rta->rta_type = NDA_DST;
	rta->rta_len = RTA_LENGTH(alen);
	memcpy(RTA_DATA(rta), nb->ip, alen);
	req.h.nlmsg_len = NLMSG_ALIGN(req.h.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	inet_ntop(nb->v6 ? AF_INET6 : AF_INET, nb->ip, s, sizeof(s));
	if (nl_send(kf, &req.h) < 0)
		DPSOCK_LOG(WARNING, main, "port %s: cannot ask the kernel to resolve %s: %s",
			   kf->d->ports[port].name, s, strerror(errno));
	else
		DPSOCK_LOG(DEBUG, main, "port %s: asked the kernel to resolve %s",
			   kf->d->ports[port].name, s);
}

/* ---- the view ----------------------------------------------------------------- */

void
dpsock_kfollow_fill(struct dpsock_stack *d, struct dpsock_netview *v)
{
	const struct dpsock_kfollow *kf = d->kf;
	unsigned int i, j;

	for (i = 0; i < d->n_ports; i++) {
		const struct kf_port *p = &kf->ports[i];
		struct dpsock_nv_port *vp = &v->ports[i];

		if (!d->conf.ifaces[i].shared)
			continue;
		vp->shared = true;
		vp->up = p->up;
		vp->mtu = p->mtu ? p->mtu : 1500;
		memcpy(vp->mac, p->mac, 6);
		vp->ifindex = p->ifindex;
		for (j = 0; j < p->n_addrs && v->n_addrs < DPSOCK_NV_ADDRS; j++)
			v->addrs[v->n_addrs++] = (struct dpsock_nv_addr){
				.addr = p->addrs[j].addr, .prefix_len = p->addrs[j].plen,
				.port = (uint8_t)i };
		for (j = 0; j < p->n_addrs6 && v->n_addrs6 < DPSOCK_NV_ADDRS6; j++) {
			v->addrs6[v->n_addrs6] = (struct dpsock_nv_addr6){
				.prefix_len = p->addrs6[j].plen, .port = (uint8_t)i };
			memcpy(v->addrs6[v->n_addrs6++].addr, p->addrs6[j].addr, 16);
		}
	}
	for (i = 0; i < kf->n_routes6 && v->n_routes6 < DPSOCK_NV_ROUTES6; i++)
		v->routes6[v->n_routes6++] = kf->routes6[i];
	for (i = 0; i < kf->n_neigh6 && v->n_neigh6 < DPSOCK_NV_NEIGH6; i++)
		v->neigh6[v->n_neigh6++] = kf->neigh6[i];
	for (i = 0; i < kf->n_routes && v->n_routes < DPSOCK_NV_ROUTES; i++)
		v->routes[v->n_routes++] = (struct dpsock_nv_route){
			.dest = kf->routes[i].dest, .gateway = kf->routes[i].gateway,
			.priority = kf->routes[i].priority, .prefix_len = kf->routes[i].plen,
			.port = kf->routes[i].port };
	for (i = 0; i < kf->n_neigh && v->n_neigh < DPSOCK_NV_NEIGH; i++) {
		struct dpsock_nv_neigh *n = &v->neigh[v->n_neigh++];

		n->ip = kf->neigh[i].ip;
		n->port = kf->neigh[i].port;
		memcpy(n->mac, kf->neigh[i].mac, 6);
	}
}

/* A new view when the model moved. */
static void
republish(struct dpsock_kfollow *kf)
{
	struct dpsock_stack *d = kf->d;
	struct dpsock_netview *v;

	if (!kf->changed)
		return;
	v = dpsock_netview_build(d);
	if (v == NULL) {
		DPSOCK_LOG(ERR, main, "no memory for a new net view: the kernel's last change waits");
		return;
	}
	kf->changed = false;
	/* the filter's addresses first: a frame to a new address finds the
	 * workers' netifs ready or waits in the queue */
	dpsock_filter_netview(d, v);
	dpsock_netview_publish(d, v);
	if (d->nv_changed != NULL)
		d->nv_changed(d, v);
}

static void *
kf_thread(void *arg)
{
	struct dpsock_kfollow *kf = arg;

	while (!__atomic_load_n(&kf->stop, __ATOMIC_RELAXED)) {
		struct pollfd p[2] = { { kf->nl, POLLIN, 0 }, { kf->efd, POLLIN, 0 } };
		struct kf_nb nb;
		uint64_t v;

		if (poll(p, 2, 1000) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN) {
			if (read(kf->efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: drained by an earlier pass */
			}
			while (rte_ring_sc_dequeue_elem(kf->resolve, &nb, sizeof(nb)) == 0)
				ask_kernel(kf, &nb);
		}
		if (p[0].revents & (POLLIN | POLLERR)) {
			int r = nl_read(kf, MSG_DONTWAIT);

			if (r == -ENOBUFS) {
				/* the kernel dropped notifications: read it all again */
				DPSOCK_LOG(WARNING, main, "netlink: notifications lost; reading the "
					   "kernel's tables again");
				kf->n_routes = kf->n_neigh = kf->n_routes6 = kf->n_neigh6 = 0;
				for (unsigned int i = 0; i < kf->d->n_ports; i++)
					kf->ports[i].n_addrs = kf->ports[i].n_addrs6 = 0;
				dump(kf, RTM_GETLINK);
				dump(kf, RTM_GETADDR);
				dump(kf, RTM_GETROUTE);
				dump(kf, RTM_GETNEIGH);
				kf->changed = true;
			}
		}
		republish(kf);
	}
	return NULL;
}

/* ---- life cycle ---------------------------------------------------------------- */

int
dpsock_kfollow_start(struct dpsock_stack *d, char *err, size_t errlen)
{
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV4_ROUTE |
			     RTMGRP_IPV6_IFADDR | RTMGRP_IPV6_ROUTE | RTMGRP_NEIGH,
	};
	struct dpsock_kfollow *kf;
	int rcvbuf = 4 << 20, r;
	unsigned int i;

	kf = calloc(1, sizeof(*kf));
	if (kf == NULL)
		return -ENOMEM;
	kf->d = d;
	kf->nl = kf->efd = -1;
	d->kf = kf;
	for (i = 0; i < d->n_ports; i++) {
		if (!d->conf.ifaces[i].shared)
			continue;
		kf->ports[i].ifindex = d->ports[i].caps.if_index;
		if (kf->ports[i].ifindex == 0 ||
		    if_indextoname(kf->ports[i].ifindex, kf->ports[i].ifname) == NULL) {
			snprintf(err, errlen, "port %s (interfaces[%u], line %d) has no address, so it "
				 "shares its kernel netdev; but the port has none (a NIC bound to "
				 "vfio-pci, a memif or pcap vdev): give the interface an address to "
				 "own the port alone", d->ports[i].name, i, d->conf.ifaces[i].line);
			return -ENODEV;
		}
	}
	kf->nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (kf->nl < 0 || bind(kf->nl, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		snprintf(err, errlen, "netlink (rtnetlink) socket: %s", strerror(errno));
		return r;
	}
	/* a burst of notifications (a route flap, a neighbour table refresh)
	 * must not overflow it; ENOBUFS makes us read everything again */
	setsockopt(kf->nl, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	kf->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	kf->resolve = rte_ring_create_elem("dps_kf_resolve", sizeof(struct kf_nb), KF_RESOLVE_RING,
					   SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (kf->efd < 0 || kf->resolve == NULL) {
		snprintf(err, errlen, "kernel follower: no eventfd or ring");
		return -ENOMEM;
	}
	if ((r = dump(kf, RTM_GETLINK)) < 0 || (r = dump(kf, RTM_GETADDR)) < 0 ||
	    (r = dump(kf, RTM_GETROUTE)) < 0 || (r = dump(kf, RTM_GETNEIGH)) < 0) {
		snprintf(err, errlen, "reading the kernel's interfaces over netlink: %s", strerror(-r));
		return r;
	}
	for (i = 0; i < d->n_ports; i++) {
		const struct kf_port *p = &kf->ports[i];

		if (!d->conf.ifaces[i].shared)
			continue;
		DPSOCK_LOG(NOTICE, main, "port %s shares netdev %s (ifindex %u) with the kernel: %u "
			   "IPv4 and %u IPv6 address(es), MTU %u, link %s; its addresses, routes "
			   "and neighbours follow the kernel's", d->ports[i].name, p->ifname,
			   p->ifindex, p->n_addrs, p->n_addrs6, p->mtu, p->up ? "up" : "down");
		if (p->n_addrs == 0 && p->n_addrs6 == 0)
			DPSOCK_LOG(WARNING, main, "port %s: %s has no address yet: nothing is "
				   "served there until the kernel has one", d->ports[i].name, p->ifname);
	}
	kf->changed = false;
	return 0;
}

int
dpsock_kfollow_run(struct dpsock_stack *d)
{
	struct dpsock_kfollow *kf = d->kf;
	int r;

	if (kf == NULL)
		return 0;
	r = pthread_create(&kf->thread, NULL, kf_thread, kf);
	if (r != 0)
		return -r;
	pthread_setname_np(kf->thread, "dpsock-kfollow");
	kf->running = true;
	return 0;
}

void
dpsock_kfollow_stop(struct dpsock_stack *d)
{
	struct dpsock_kfollow *kf = d->kf;
	uint64_t one = 1;

	if (kf == NULL)
		return;
	if (kf->running) {
		__atomic_store_n(&kf->stop, 1, __ATOMIC_RELAXED);
		if (write(kf->efd, &one, sizeof(one)) < 0) {
			/* the thread also looks every second */
		}
		pthread_join(kf->thread, NULL);
		kf->running = false;
	}
	if (kf->nl >= 0)
		close(kf->nl);
	if (kf->efd >= 0)
		close(kf->efd);
	rte_ring_free(kf->resolve);
	free(kf);
	d->kf = NULL;
}

static void
resolve(struct dpsock_stack *d, const struct kf_nb *nb)
{
	struct dpsock_kfollow *kf = d->kf;
	uint64_t one = 1;

	if (kf == NULL)
		return;
	if (rte_ring_mp_enqueue_elem(kf->resolve, (void *)(uintptr_t)nb, sizeof(*nb)) == 0 &&
	    write(kf->efd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is already set, the thread wakes */
	}
}

void
dpsock_kfollow_resolve(struct dpsock_stack *d, unsigned int port, uint32_t ip)
{
	struct kf_nb nb = { .port = (uint8_t)port };

	memcpy(nb.ip, &ip, 4);
	resolve(d, &nb);
}

void
dpsock_kfollow_resolve6(struct dpsock_stack *d, unsigned int port, const uint8_t ip[16])
{
	struct kf_nb nb = { .port = (uint8_t)port, .v6 = 1 };

	memcpy(nb.ip, ip, 16);
	resolve(d, &nb);
}
