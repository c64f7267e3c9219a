/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xdp_filter.c — the XDP backend of the served set (filter_priv.h): dpsockd's
 * own XDP program (bpf/dpsock_xdp.bpf.c, built into the library) in place of
 * the AF_XDP PMD's, so that an interface dpsock shares with the kernel
 * gives dpsock's AF_XDP sockets only dpsock's flows.
 *
 * Open: libbpf opens the embedded object, sizes xsks_map to the highest
 * interface queue + 1 and loads it; the PMD's sockets go into xsks_map and
 * the VLAN into config_map. Then the program takes the interface's XDP
 * hook through a BPF link, never through netlink: a link lives as long as
 * its file, so when dpsockd exits or is killed (-9 included) the kernel
 * detaches the program and the interface is the kernel's again, with no
 * clean-up left to anybody. The PMD attached its program through netlink;
 * the kernel does not let a link replace that, so it is detached first, in
 * the mode it runs in and only if it is still the program that was seen
 * (XDP_FLAGS_REPLACE), and the link is made in the same mode (the
 * sockets were bound for it); no program there: the kernel's choice
 * (native when the driver has XDP, generic otherwise). Between the two the
 * kernel gets every frame, for microseconds. If the link cannot be made,
 * the old program is put back. A kernel without BPF links for XDP (before
 * Linux 5.9) is refused (-ENOTSUP): a netlink attachment would outlive a
 * killed dpsockd and keep the kernel's frames from it.
 *
 * The maps then change entry by entry (add: update, del: delete). The
 * registry counts the sockets behind an entry; here an entry is present or
 * not: adding a present entry and deleting a missing one succeed. Both
 * families share each map: an address is the 16 bytes of a struct
 * dpsock_mc_addr, an IPv4 one mapped (::ffff:a.b.c.d), which is how the
 * program keys IPv4 and IPv6 frames alike (bpf/dpsock_xdp.h); a port on
 * every local address is keyed by its family's any address (::ffff:0.0.0.0
 * or ::), which the program tries for frames of that family only. A local
 * address that is a family's any address or a multicast group, and a group
 * that is not one (224.0.0.0/4 mapped, ff00::/8), are -EINVAL. Close
 * destroys the link (the kernel gets every frame; the PMD's program is not
 * put back: its sockets are going away too) and frees the object.
 *
 * Without clang or libbpf at build time (DPSOCK_HAS_XDP_FILTER 0) every
 * function fails with -ENOTSUP.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <net/if.h>
#include <netinet/in.h>

#include <rte_common.h>

#include "dpsock_build_config.h"

#include "filter_priv.h"
#include "core/log_priv.h"

#if DPSOCK_HAS_XDP_FILTER

#include <linux/if_link.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/dpsock_xdp.h"

_Static_assert(sizeof(struct dpsock_xdp_port_key) == 20 &&
	       sizeof(struct dpsock_xdp_frag_key) == 40, "keys laid out as the BPF object has them");
_Static_assert(sizeof(struct dpsock_mc_addr) == DPSOCK_XDP_ADDR_WORDS * sizeof(__u32),
	       "an address is the maps' 16-byte key");

/* bpf/embed.py's output (dpsock_xdp_obj.c) */
extern const unsigned char dpsock_xdp_obj[];
extern const size_t dpsock_xdp_obj_len;

struct dpsock_xdpf {
	unsigned int ifindex;
	char ifname[IF_NAMESIZE];
	struct bpf_object *obj;
	int prog_fd;
	int link_fd;              /* the attachment: closing it detaches */
	int xsks_fd, addrs_fd, ports_fd, eph_fd, groups_fd, config_fd, stats_fd;
	int ncpus;                /* possible CPUs: values of stats_map */
};

/* libbpf's messages ("libbpf: ...", the verifier's log among them) into
 * dpsockd's log while this file calls libbpf; the last warning also goes
 * into the caller's err. */
static char libbpf_last[256];

static int
libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t len;
	int n;

	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	len = strlen(buf);
	while (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	switch (level) {
	case LIBBPF_WARN:
		snprintf(libbpf_last, sizeof(libbpf_last), "%s", buf);
		DPSOCK_LOG(WARNING, pmd, "%s", buf);
		break;
	case LIBBPF_INFO:
		DPSOCK_LOG(INFO, pmd, "%s", buf);
		break;
	default:
		DPSOCK_LOG(DEBUG, pmd, "%s", buf);
		break;
	}
	return n;
}

static int
map_fd(struct dpsock_xdpf *x, const char *name)
{
	struct bpf_map *m = bpf_object__find_map_by_name(x->obj, name);

	return m != NULL ? bpf_map__fd(m) : -ENOENT;
}

static const char *
prog_name(int fd, char *buf, size_t len)
{
	struct bpf_prog_info pi;
	__u32 plen = sizeof(pi);

	memset(&pi, 0, sizeof(pi));
	if (bpf_obj_get_info_by_fd(fd, &pi, &plen) == 0 && pi.name[0] != '\0')
		snprintf(buf, len, "'%s' (id %u)", pi.name, pi.id);
	else
		snprintf(buf, len, "(unnamed)");
	return buf;
}

/*
 * Our program on the interface through a link, in place of a program
 * attached through netlink (xdp_filter.c's header says why and how).
 */
static int
xdpf_attach(struct dpsock_xdpf *x, char *err, size_t errlen)
{
	static const uint32_t modes[] = { XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE,
					  XDP_FLAGS_HW_MODE };
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	LIBBPF_OPTS(bpf_link_create_opts, lo);
	int old_fd[RTE_DIM(modes)] = { -1, -1, -1 };
	bool detached[RTE_DIM(modes)] = { false };
	char name[64] = "";
	uint32_t ids[RTE_DIM(modes)];
	unsigned int i;
	int rc, fd;

	rc = bpf_xdp_query((int)x->ifindex, 0, &q);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read the XDP state of %s (ifindex %u): %s", x->ifname,
			 x->ifindex, strerror(-rc));
		return rc;
	}
	ids[0] = q.drv_prog_id;
	ids[1] = q.skb_prog_id;
	ids[2] = q.hw_prog_id;
	/* the mode the sockets' frames come through today, if any */
	lo.flags = q.drv_prog_id ? XDP_FLAGS_DRV_MODE : q.skb_prog_id ? XDP_FLAGS_SKB_MODE : 0;

	if (q.prog_id == 0 && q.drv_prog_id == 0 && q.skb_prog_id == 0 && q.hw_prog_id == 0) {
		fd = bpf_link_create(x->prog_fd, (int)x->ifindex, BPF_XDP, &lo);
		if (fd >= 0)
			goto attached;
		rc = fd;
		/* A kernel without XDP links refuses the attach type with
		 * EINVAL, as it refuses a device's limit (MTU, mode). Tell the
		 * two apart by a netlink attachment, taken off at once (the
		 * maps have no entry yet: everything would pass meanwhile). */
		if (rc == -EINVAL &&
		    bpf_xdp_attach((int)x->ifindex, x->prog_fd,
				   lo.flags | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL) == 0) {
			LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = x->prog_fd);

			bpf_xdp_detach((int)x->ifindex, lo.flags, &ao);
			snprintf(err, errlen, "this kernel has no BPF links for XDP (Linux 5.9 and "
				 "later have them): dpsockd will not attach its XDP program to %s "
				 "through netlink, which would outlive dpsockd", x->ifname);
			return -ENOTSUP;
		}
		snprintf(err, errlen, "cannot attach dpsockd's XDP program to %s: %s%s%s",
			 x->ifname, strerror(-rc), libbpf_last[0] ? "; " : "", libbpf_last);
		return rc;
	}

	/* A program is there. Probe first: a kernel with XDP links refuses a
	 * link over a netlink program (EBUSY, EEXIST across modes), one
	 * without refuses the attach type (EINVAL); nothing changed yet. */
	fd = bpf_link_create(x->prog_fd, (int)x->ifindex, BPF_XDP, &lo);
	if (fd >= 0)
		goto attached;
	if (fd == -EINVAL) {
		snprintf(err, errlen, "this kernel has no BPF links for XDP (Linux 5.9 and later "
			 "have them): dpsockd will not attach its XDP program to %s through "
			 "netlink, which would outlive dpsockd", x->ifname);
		return -ENOTSUP;
	}
	if (fd != -EBUSY && fd != -EEXIST) {
		snprintf(err, errlen, "cannot attach dpsockd's XDP program to %s: %s", x->ifname,
			 strerror(-fd));
		return fd;
	}

	for (i = 0; i < RTE_DIM(modes); i++) {
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao);

		if (ids[i] == 0)
			continue;
		old_fd[i] = bpf_prog_get_fd_by_id(ids[i]);
		if (old_fd[i] < 0) {
			rc = old_fd[i];
			/* it went away meanwhile: nothing to detach */
			if (rc == -ENOENT)
				continue;
			snprintf(err, errlen, "cannot open the XDP program (id %u) of %s: %s", ids[i],
				 x->ifname, strerror(-rc));
			goto restore;
		}
		prog_name(old_fd[i], name, sizeof(name));
		ao.old_prog_fd = old_fd[i];
		rc = bpf_xdp_detach((int)x->ifindex, modes[i], &ao);
		if (rc < 0) {
			if (rc == -EBUSY)
				snprintf(err, errlen, "the XDP program %s of %s is held by a BPF link "
					 "of another process: dpsockd cannot put its own in place",
					 name, x->ifname);
			else if (rc == -EEXIST)
				snprintf(err, errlen, "the XDP program of %s changed while dpsockd "
					 "replaced it", x->ifname);
			else
				snprintf(err, errlen, "cannot detach the XDP program %s of %s: %s",
					 name, x->ifname, strerror(-rc));
			goto restore;
		}
		detached[i] = true;
	}
	fd = bpf_link_create(x->prog_fd, (int)x->ifindex, BPF_XDP, &lo);
	if (fd < 0) {
		rc = fd;
		snprintf(err, errlen, "cannot attach dpsockd's XDP program to %s in place of %s: "
			 "%s", x->ifname, name, strerror(-rc));
		goto restore;
	}
	for (i = 0; i < RTE_DIM(modes); i++)
		if (old_fd[i] >= 0)
			close(old_fd[i]);
	DPSOCK_LOG(INFO, pmd, "%s: XDP program %s detached", x->ifname, name);

attached:
	x->link_fd = fd;
	/* the mode the kernel chose when lo.flags left it the choice */
	q.attach_mode = XDP_ATTACHED_NONE;
	bpf_xdp_query((int)x->ifindex, 0, &q);
	DPSOCK_LOG(INFO, pmd, "%s: dpsockd's XDP program attached through a BPF link, in %s "
		   "mode: only dpsock's flows go to its AF_XDP sockets", x->ifname,
		   q.attach_mode == XDP_ATTACHED_DRV ? "native" :
		   q.attach_mode == XDP_ATTACHED_SKB ? "generic" : "another");
	return 0;

restore:
	for (i = 0; i < RTE_DIM(modes); i++) {
		if (detached[i] &&
		    bpf_xdp_attach((int)x->ifindex, old_fd[i],
				   modes[i] | XDP_FLAGS_UPDATE_IF_NOEXIST, NULL) != 0)
			DPSOCK_LOG(ERR, pmd, "%s: could not put back the XDP program detached "
				   "(id %u)", x->ifname, ids[i]);
		if (old_fd[i] >= 0)
			close(old_fd[i]);
	}
	return rc;
}

/* The VLAN into config_map and the sockets into xsks_map (a negative
 * descriptor: none for that queue). 0 or -errno, message in err. */
static int
maps_fill(struct dpsock_xdpf *x, uint16_t vlan, const int *xsk_fds, const uint32_t *if_queues,
	  unsigned int n, char *err, size_t errlen)
{
	struct dpsock_xdp_config cfg = { .vlan = vlan };
	uint32_t zero = 0;
	int rc;

	rc = bpf_map_update_elem(x->config_fd, &zero, &cfg, BPF_ANY);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write config_map: %s", strerror(-rc));
		return rc;
	}
	for (unsigned int i = 0; i < n; i++) {
		if (xsk_fds[i] < 0)
			continue;
		rc = bpf_map_update_elem(x->xsks_fd, &if_queues[i], &xsk_fds[i], BPF_ANY);
		if (rc < 0) {
			snprintf(err, errlen, "cannot put the AF_XDP socket of queue %u of %s into "
				 "xsks_map: %s", if_queues[i], x->ifname, strerror(-rc));
			return rc;
		}
	}
	return 0;
}

struct dpsock_xdpf *
dpsock_xdpf_open(unsigned int ifindex, const int *xsk_fds, const uint32_t *if_queues,
		 unsigned int n, uint16_t vlan, int *ret, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "dpsock_xdp");
	libbpf_print_fn_t prev;
	struct dpsock_xdpf *x;
	struct bpf_program *prog;
	uint32_t nq = 1;
	unsigned int i;
	int rc;

	if (vlan > 4094) {
		snprintf(err, errlen, "VLAN id %u out of range (1-4094, 0: untagged)", vlan);
		rc = -EINVAL;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		if (xsk_fds[i] < 0) {
			snprintf(err, errlen, "no AF_XDP socket for interface queue %u", if_queues[i]);
			rc = -EINVAL;
			goto fail;
		}
		if (if_queues[i] + 1 > nq)
			nq = if_queues[i] + 1;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	x->ifindex = ifindex;
	x->link_fd = -1;
	if (if_indextoname(ifindex, x->ifname) == NULL) {
		/* glibc says ENXIO */
		rc = errno == ENXIO ? -ENODEV : -errno;
		snprintf(err, errlen, "no interface with ifindex %u: %s", ifindex, strerror(-rc));
		free(x);
		goto fail;
	}

	libbpf_last[0] = '\0';
	prev = libbpf_set_print(libbpf_log);
	x->obj = bpf_object__open_mem(dpsock_xdp_obj, dpsock_xdp_obj_len, &oo);
	if (x->obj == NULL) {
		rc = -errno;
		snprintf(err, errlen, "libbpf cannot open dpsockd's XDP program: %s", strerror(-rc));
		goto fail_free;
	}
	rc = bpf_map__set_max_entries(bpf_object__find_map_by_name(x->obj, "xsks_map"), nq);
	if (rc < 0) {
		snprintf(err, errlen, "cannot size xsks_map to %u queues: %s", nq, strerror(-rc));
		goto fail_free;
	}
	rc = bpf_object__load(x->obj);
	if (rc < 0) {
		if (rc == -EPERM)
			snprintf(err, errlen, "not allowed to load dpsockd's XDP program (root, or "
				 "CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON, are needed)");
		else
			snprintf(err, errlen, "the kernel refused dpsockd's XDP program: %s%s%s "
				 "(dpsockd's log has libbpf's and the verifier's messages)",
				 strerror(-rc), libbpf_last[0] ? ": " : "", libbpf_last);
		goto fail_free;
	}
	prog = bpf_object__find_program_by_name(x->obj, "xsk_def_prog");
	x->prog_fd = prog != NULL ? bpf_program__fd(prog) : -ENOENT;
	x->xsks_fd = map_fd(x, "xsks_map");
	x->addrs_fd = map_fd(x, "addrs_map");
	x->ports_fd = map_fd(x, "ports_map");
	x->eph_fd = map_fd(x, "ephemeral_map");
	x->groups_fd = map_fd(x, "groups_map");
	x->config_fd = map_fd(x, "config_map");
	x->stats_fd = map_fd(x, "stats_map");
	x->ncpus = libbpf_num_possible_cpus();
	if (x->prog_fd < 0 || x->xsks_fd < 0 || x->addrs_fd < 0 || x->ports_fd < 0 ||
	    x->eph_fd < 0 || x->groups_fd < 0 || x->config_fd < 0 || x->stats_fd < 0 ||
	    x->ncpus <= 0) {
		snprintf(err, errlen, "dpsockd's XDP object lacks its program or a map");
		rc = -ENOENT;
		goto fail_free;
	}
	rc = maps_fill(x, vlan, xsk_fds, if_queues, n, err, errlen);
	if (rc < 0)
		goto fail_free;
	rc = xdpf_attach(x, err, errlen);
	if (rc < 0)
		goto fail_free;
	libbpf_set_print(prev);
	if (ret != NULL)
		*ret = 0;
	return x;

fail_free:
	libbpf_set_print(prev);
	bpf_object__close(x->obj);
	free(x);
fail:
	if (ret != NULL)
		*ret = rc;
	return NULL;
}

void
dpsock_xdpf_close(struct dpsock_xdpf *x)
{
	if (x == NULL)
		return;
	/* the only reference to the link (a holder that handed it over
	 * exited): the kernel detaches the program */
	if (x->link_fd >= 0) {
		close(x->link_fd);
		DPSOCK_LOG(INFO, pmd, "%s: dpsockd's XDP program detached: the kernel gets every "
			   "frame", x->ifname);
	}
	if (x->obj != NULL) {
		bpf_object__close(x->obj);
	} else {
		/* adopted: the descriptors a takeover handed over */
		int *fds[] = { &x->prog_fd, &x->xsks_fd, &x->addrs_fd, &x->ports_fd, &x->eph_fd,
			       &x->groups_fd, &x->config_fd, &x->stats_fd };

		for (unsigned int i = 0; i < RTE_DIM(fds); i++)
			if (*fds[i] >= 0)
				close(*fds[i]);
	}
	free(x);
}

void
dpsock_xdpf_fds(const struct dpsock_xdpf *x, int fds[DPSOCK_XDPF_FDS])
{
	fds[DPSOCK_XDPF_LINK] = x->link_fd;
	fds[DPSOCK_XDPF_PROG] = x->prog_fd;
	fds[DPSOCK_XDPF_XSKS] = x->xsks_fd;
	fds[DPSOCK_XDPF_ADDRS] = x->addrs_fd;
	fds[DPSOCK_XDPF_PORTS] = x->ports_fd;
	fds[DPSOCK_XDPF_EPH] = x->eph_fd;
	fds[DPSOCK_XDPF_GROUPS] = x->groups_fd;
	fds[DPSOCK_XDPF_CONFIG] = x->config_fd;
	fds[DPSOCK_XDPF_STATS] = x->stats_fd;
}

struct dpsock_xdpf *
dpsock_xdpf_adopt(unsigned int ifindex, const int fds[DPSOCK_XDPF_FDS], const int *xsk_fds,
		  const uint32_t *if_queues, unsigned int n, uint16_t vlan, int *ret, char *err,
		  size_t errlen)
{
	struct bpf_link_info li;
	uint32_t len = sizeof(li);
	struct dpsock_xdpf *x;
	unsigned int i;
	int rc;

	for (i = 0; i < DPSOCK_XDPF_FDS; i++)
		if (fds[i] < 0) {
			snprintf(err, errlen, "the hand-over lacks a descriptor of the XDP program "
				 "(%u)", i);
			rc = -EINVAL;
			goto fail;
		}
	memset(&li, 0, sizeof(li));
	rc = bpf_obj_get_info_by_fd(fds[DPSOCK_XDPF_LINK], &li, &len);
	if (rc != 0) {
		snprintf(err, errlen, "the handed-over XDP link: %s", strerror(-rc));
		goto fail;
	}
	if (li.type != BPF_LINK_TYPE_XDP || li.xdp.ifindex != ifindex) {
		snprintf(err, errlen, "the handed-over BPF link attaches no XDP program to ifindex %u "
			 "(type %u, ifindex %u)", ifindex, li.type, li.xdp.ifindex);
		rc = -EINVAL;
		goto fail;
	}
	x = calloc(1, sizeof(*x));
	if (x == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto fail;
	}
	x->ifindex = ifindex;
	if (if_indextoname(ifindex, x->ifname) == NULL)
		snprintf(x->ifname, sizeof(x->ifname), "ifindex %u", ifindex);
	x->link_fd = fds[DPSOCK_XDPF_LINK];
	x->prog_fd = fds[DPSOCK_XDPF_PROG];
	x->xsks_fd = fds[DPSOCK_XDPF_XSKS];
	x->addrs_fd = fds[DPSOCK_XDPF_ADDRS];
	x->ports_fd = fds[DPSOCK_XDPF_PORTS];
	x->eph_fd = fds[DPSOCK_XDPF_EPH];
	x->groups_fd = fds[DPSOCK_XDPF_GROUPS];
	x->config_fd = fds[DPSOCK_XDPF_CONFIG];
	x->stats_fd = fds[DPSOCK_XDPF_STATS];
	x->ncpus = libbpf_num_possible_cpus();
	/* the maps hold the holder's served set as they did: the sockets
	 * restored here register theirs again (present entries stay); libxdp
	 * put the sockets into xsks_map already (the PMD found this program):
	 * the same entries again, in case it did not */
	rc = maps_fill(x, vlan, xsk_fds, if_queues, n, err, errlen);
	if (rc < 0)
		goto fail_x;
	if (ret != NULL)
		*ret = 0;
	return x;

fail_x:
	dpsock_xdpf_close(x);
	if (ret != NULL)
		*ret = rc;
	return NULL;
fail:
	for (i = 0; i < DPSOCK_XDPF_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (ret != NULL)
		*ret = rc;
	return NULL;
}

/* Presence of key in a set map (value 1). */
static int
set_entry(int fd, const void *key, bool add)
{
	uint8_t one = 1;
	int rc;

	if (add) {
		rc = bpf_map_update_elem(fd, key, &one, BPF_ANY);
		/* a full hash map says E2BIG */
		return rc == -E2BIG ? -ENOSPC : rc;
	}
	rc = bpf_map_delete_elem(fd, key);
	return rc == -ENOENT ? 0 : rc;
}

/* A family's any address: ::ffff:0.0.0.0 (IPv4), :: (IPv6). */
static bool
addr_is_any(struct dpsock_mc_addr a)
{
	return a.w[3] == 0 && a.w[0] == 0 && a.w[1] == 0 &&
	       (a.w[2] == 0 || a.w[2] == DPSOCK_MC_V4MAPPED);
}

int
dpsock_xdpf_addr(struct dpsock_xdpf *x, struct dpsock_mc_addr a, bool add)
{
	/* never a frame's destination here: the program looks groups up in
	 * groups_map, and nothing is sent to the any address */
	if (addr_is_any(a) || dpsock_mc_is_group(a))
		return -EINVAL;
	return set_entry(x->addrs_fd, a.w, add);
}

int
dpsock_xdpf_port(struct dpsock_xdpf *x, uint8_t proto, struct dpsock_mc_addr a, uint16_t port,
		 bool add)
{
	struct dpsock_xdp_port_key k;

	if ((proto != IPPROTO_TCP && proto != IPPROTO_UDP) || port == 0)
		return -EINVAL;
	/* a as it is: a local address, a family's any, or a group a UDP
	 * socket is bound to (a group's frames are looked up by their
	 * destination too) */
	memset(&k, 0, sizeof(k));
	memcpy(k.addr, a.w, sizeof(k.addr));
	k.port = port;
	k.proto = proto;
	return set_entry(x->ports_fd, &k, add);
}

int
dpsock_xdpf_ephemeral(struct dpsock_xdpf *x, uint16_t lo, uint16_t hi)
{
	struct dpsock_xdp_range r = { .lo = lo, .hi = hi };
	uint32_t zero = 0;

	if (lo > hi || (lo == 0 && hi != 0))
		return -EINVAL;
	return bpf_map_update_elem(x->eph_fd, &zero, &r, BPF_ANY);
}

int
dpsock_xdpf_group(struct dpsock_xdpf *x, struct dpsock_mc_addr g, bool add)
{
	/* 224.0.0.0/4 mapped, ff00::/8 */
	if (!dpsock_mc_is_group(g))
		return -EINVAL;
	return set_entry(x->groups_fd, g.w, add);
}

void
dpsock_xdpf_stats(const struct dpsock_xdpf *x, struct dpsock_xdpf_stats *out)
{
	uint64_t sum[DPSOCK_XDP_COUNTERS] = { 0 };
	uint64_t *v;
	uint32_t k;
	int c;

	memset(out, 0, sizeof(*out));
	v = calloc((size_t)x->ncpus, sizeof(*v));
	if (v == NULL)
		return;
	for (k = 0; k < DPSOCK_XDP_COUNTERS; k++) {
		if (bpf_map_lookup_elem(x->stats_fd, &k, v) != 0)
			continue;
		for (c = 0; c < x->ncpus; c++)
			sum[k] += v[c];
	}
	free(v);
	out->redirected = sum[DPSOCK_XDP_REDIRECTED];
	out->passed = sum[DPSOCK_XDP_PASSED];
	out->frags = sum[DPSOCK_XDP_FRAGS];
	out->no_socket = sum[DPSOCK_XDP_NO_SOCKET];
}

int
dpsock_xdpf_prog_fd(const struct dpsock_xdpf *x)
{
	return x->prog_fd;
}

#else /* !DPSOCK_HAS_XDP_FILTER */

struct dpsock_xdpf *
dpsock_xdpf_open(unsigned int ifindex, const int *xsk_fds, const uint32_t *if_queues,
		 unsigned int n, uint16_t vlan, int *ret, char *err, size_t errlen)
{
	snprintf(err, errlen, "dpsockd was built without its XDP program (clang with the BPF "
		 "target, and libbpf, are needed at build time): an AF_XDP port cannot share "
		 "its interface with the kernel");
	if (ret != NULL)
		*ret = -ENOTSUP;
	return NULL;
}

void
dpsock_xdpf_close(struct dpsock_xdpf *x)
{
}

void
dpsock_xdpf_fds(const struct dpsock_xdpf *x, int fds[DPSOCK_XDPF_FDS])
{
	for (unsigned int i = 0; i < DPSOCK_XDPF_FDS; i++)
		fds[i] = -1;
}

struct dpsock_xdpf *
dpsock_xdpf_adopt(unsigned int ifindex, const int fds[DPSOCK_XDPF_FDS], const int *xsk_fds,
		  const uint32_t *if_queues, unsigned int n, uint16_t vlan, int *ret, char *err,
		  size_t errlen)
{
	for (unsigned int i = 0; i < DPSOCK_XDPF_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return dpsock_xdpf_open(ifindex, xsk_fds, if_queues, n, vlan, ret, err, errlen);
}

int
dpsock_xdpf_addr(struct dpsock_xdpf *x, struct dpsock_mc_addr addr, bool add)
{
	return -ENOTSUP;
}

int
dpsock_xdpf_port(struct dpsock_xdpf *x, uint8_t proto, struct dpsock_mc_addr addr,
		 uint16_t port, bool add)
{
	return -ENOTSUP;
}

int
dpsock_xdpf_ephemeral(struct dpsock_xdpf *x, uint16_t lo, uint16_t hi)
{
	return -ENOTSUP;
}

int
dpsock_xdpf_group(struct dpsock_xdpf *x, struct dpsock_mc_addr group, bool add)
{
	return -ENOTSUP;
}

void
dpsock_xdpf_stats(const struct dpsock_xdpf *x, struct dpsock_xdpf_stats *out)
{
	memset(out, 0, sizeof(*out));
}

int
dpsock_xdpf_prog_fd(const struct dpsock_xdpf *x)
{
	return -ENOTSUP;
}

#endif /* DPSOCK_HAS_XDP_FILTER */
