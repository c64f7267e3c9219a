/* SPDX-License-Identifier: BSD-3-Clause */
/* Port lookup, capability probe and queue set-up. See port_priv.h. */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/ethtool.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/magic.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/vfs.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_kvargs.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_memzone.h>
#include <rte_mempool.h>

#include "dpsock_build_config.h"
#if DPSOCK_HAS_LIBBPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#endif

#include "core/config_priv.h"
#include "core/log_priv.h"
#include "port_priv.h"

_Static_assert(DPSOCK_PORT_QUEUES_MAX == DPSOCK_MAX_WORKERS,
	       "a port needs one queue per worker");

int
dpsock_port_lookup(const char *name, uint16_t *port_id, char *err, size_t errlen)
{
	char known[512] = "";
	size_t off = 0;
	uint16_t pid;

	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	RTE_ETH_FOREACH_DEV(pid) {
		char n[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(pid, n) != 0)
			continue;
		off += snprintf(known + off, off < sizeof(known) ? sizeof(known) - off : 0,
				"%s%s", off ? ", " : "", n);
	}
	snprintf(err, errlen, "no DPDK port called '%s'; ports that exist: %s%s", name,
		 off ? known : "none",
		 off ? "" : " (add one with --vdev=net_af_packet0,iface=IF or -a PCI_ADDR; "
			    "bind a NIC with dpdk-devbind.py)");
	return -ENODEV;
}

void
dpsock_flow_tcp_pattern(struct dpsock_flow_tcp *f, const struct dpsock_port *p,
			const struct dpsock_mc_addr *raddr, const struct dpsock_mc_addr *laddr,
			uint16_t rport, uint16_t lport)
{
	bool v4 = dpsock_mc_addr_is4(*raddr);
	unsigned int n = 0;

	memset(f, 0, sizeof(*f));
	f->ip_spec.hdr.src_addr = raddr->w[3];
	f->ip_spec.hdr.dst_addr = laddr->w[3];
	f->ip_mask.hdr.src_addr = f->ip_mask.hdr.dst_addr = RTE_BE32(0xffffffff);
	memcpy(f->ip6_spec.hdr.src_addr, raddr->w, 16);
	memcpy(f->ip6_spec.hdr.dst_addr, laddr->w, 16);
	memset(f->ip6_mask.hdr.src_addr, 0xff, 16);
	memset(f->ip6_mask.hdr.dst_addr, 0xff, 16);
	f->tcp_spec.hdr.src_port = rport;
	f->tcp_spec.hdr.dst_port = lport;
	f->tcp_mask.hdr.src_port = f->tcp_mask.hdr.dst_port = RTE_BE16(0xffff);
	f->pattern[n++].type = RTE_FLOW_ITEM_TYPE_ETH;
	if (p->vlan_tci != 0) {
		/* the interface's VLAN: its frames carry the tag on the wire */
		f->vlan_spec.hdr.vlan_tci = rte_cpu_to_be_16(p->vlan_tci & RTE_VLAN_ID_MASK);
		f->vlan_mask.hdr.vlan_tci = RTE_BE16(RTE_VLAN_ID_MASK);
		f->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_VLAN,
							  .spec = &f->vlan_spec,
							  .mask = &f->vlan_mask };
	}
	if (v4)
		f->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_IPV4,
							  .spec = &f->ip_spec, .mask = &f->ip_mask };
	else
		f->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_IPV6,
							  .spec = &f->ip6_spec, .mask = &f->ip6_mask };
	f->pattern[n++] = (struct rte_flow_item){ .type = RTE_FLOW_ITEM_TYPE_TCP,
						  .spec = &f->tcp_spec, .mask = &f->tcp_mask };
	f->pattern[n].type = RTE_FLOW_ITEM_TYPE_END;
}

/* Ask the PMD whether it would accept a 5-tuple rule steering one TCP flow to
 * queue 0: the shape of rule the active-open steering backend installs. */
static bool
probe_flow_5tuple(const struct dpsock_port *p)
{
	uint16_t port_id = p->port_id;
	struct rte_flow_attr attr = { .ingress = 1 };
	struct dpsock_flow_tcp f;
	struct rte_flow_item *pattern = f.pattern;
	struct rte_flow_action_queue queue = { .index = 0 };
	struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &queue },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	struct rte_flow_error ferr;
	struct dpsock_mc_addr ra = dpsock_mc_addr4(RTE_BE32(0xc6120002));
	struct dpsock_mc_addr la = dpsock_mc_addr4(RTE_BE32(0xc6120001));

	dpsock_flow_tcp_pattern(&f, p, &ra, &la, RTE_BE16(80), RTE_BE16(40000));
	memset(&ferr, 0, sizeof(ferr));
	if (rte_flow_validate(port_id, &attr, pattern, actions, &ferr) == 0)
		return true;
	DPSOCK_LOG(INFO, pmd, "port %u: rte_flow 5-tuple rules unavailable: %s",
		   port_id, ferr.message ? ferr.message : rte_strerror(rte_errno));
	return false;
}

/* af_packet copies each frame from its ring slot (framesz, 2048 by
 * default) into one mbuf, and refuses to start when a slot does not fit
 * one: the mbufs must be sized for the slot. Read from its devargs. */
static uint32_t
af_packet_frame_size(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = info->device != NULL ? rte_dev_devargs(info->device) : NULL;
	const char *a = da != NULL ? da->args : NULL, *f;
	uint32_t v = 2048;

	for (f = a; f != NULL && (f = strstr(f, "framesz=")) != NULL; f++)
		if (f == a || f[-1] == ',')
			v = (uint32_t)strtoul(f + 8, NULL, 0);
	return v;
}

/* ---- net_af_xdp ------------------------------------------------------------
 *
 * DPDK's AF_XDP PMD binds one AF_XDP socket per queue to a kernel interface
 * queue; libxdp loads the XDP program that redirects that queue's packets to
 * the socket. What can go wrong lies in the kernel, so it is checked here,
 * before the queues are set up, with what to run: no AF_XDP sockets in the
 * kernel, or no BPF filesystem where libxdp keeps its XDP dispatcher (it
 * would fall back to loading a bare program, quietly). What the kernel gave
 * (native or generic XDP, copy or zero-copy, busy polling) is read back
 * after start and logged; generic XDP is a warning, never a silent choice.
 */

#define XDP_DRIVER "net_af_xdp"
#define XDP_RX_FRAMES 4096 /* frames the PMD keeps in a queue's fill ring */
#define XDP_BPFFS_DEFAULT "/sys/fs/bpf"
#define XDP_HINT_BPFFS "mount -t bpf bpf /sys/fs/bpf (scripts/setup does); inside " \
	"`ip netns exec`, which mounts a fresh /sys, mount it in the same command: " \
	"ip netns exec NS sh -c 'mount -t bpf bpf /sys/fs/bpf && exec dpsockd ...'"

static bool
is_xdp_driver(const char *driver)
{
	return strcmp(driver, XDP_DRIVER) == 0;
}

/* The vdev's start_queue argument (0 when not given). */
static uint16_t
xdp_start_queue(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = info->device ? rte_dev_devargs(info->device) : NULL;
	struct rte_kvargs *kv;
	const char *v;
	uint16_t q = 0;

	if (da == NULL || da->args == NULL)
		return 0;
	kv = rte_kvargs_parse(da->args, NULL);
	if (kv == NULL)
		return 0;
	v = rte_kvargs_get(kv, "start_queue");
	if (v != NULL)
		q = (uint16_t)strtoul(v, NULL, 0);
	rte_kvargs_free(kv);
	return q;
}

/* The interface's RX queues as ethtool counts them: combined channels,
 * else RX channels (veth), else 1; 0 when the driver does not say. */
static uint32_t
if_rx_queues(const char *ifname)
{
	struct ethtool_channels ch = { .cmd = ETHTOOL_GCHANNELS };
	struct ifreq ifr;
	uint32_t n = 0;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&ch;
	if (ioctl(fd, SIOCETHTOOL, &ifr) == 0)
		n = ch.combined_count ? ch.combined_count : ch.rx_count ? ch.rx_count : 1;
	close(fd);
	return n;
}

/* Is the kernel ready for AF_XDP? Sockets, and a bpffs where libxdp looks
 * (LIBXDP_BPFFS, else /sys/fs/bpf), unless libxdp is asked to mount one
 * itself (LIBXDP_BPFFS_AUTOMOUNT). */
static int
xdp_kernel_check(const struct dpsock_port *p, char *err, size_t errlen)
{
	const char *bpffs = getenv("LIBXDP_BPFFS");
	struct statfs sfs;
	int fd;

	fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "port %s (%s): the kernel refuses AF_XDP sockets (%s)%s",
			 p->name, XDP_DRIVER, strerror(errno),
			 errno == EAFNOSUPPORT ?
			 ": it was built without CONFIG_XDP_SOCKETS; use net_af_packet "
			 "(--vdev=net_af_packet0,iface=IF,qpairs=N) on this machine" :
			 errno == EPERM || errno == EACCES ?
			 ": AF_XDP needs root (CAP_NET_RAW, CAP_BPF and CAP_NET_ADMIN)" : "");
		return -ENOTSUP;
	}
	close(fd);
	if (bpffs == NULL || bpffs[0] == '\0')
		bpffs = XDP_BPFFS_DEFAULT;
	if (statfs(bpffs, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC)
		return 0;
	if (getenv("LIBXDP_BPFFS_AUTOMOUNT") != NULL) {
		DPSOCK_LOG(NOTICE, pmd, "port %s: no BPF filesystem at %s; libxdp mounts one "
			   "(LIBXDP_BPFFS_AUTOMOUNT)", p->name, bpffs);
		return 0;
	}
	snprintf(err, errlen, "port %s (%s): no BPF filesystem at %s, where libxdp keeps the "
		 "XDP dispatcher that lets AF_XDP share the interface: %s",
		 p->name, XDP_DRIVER, bpffs, XDP_HINT_BPFFS);
	return -ENOTSUP;
}

/* The net_af_xdp ports on the same interface as p, not configured yet,
 * become its members, ordered by their first interface queue; p's queue
 * table lists each member's queues in that order. */
static int
xdp_probe(struct dpsock_port *p, const struct rte_eth_dev_info *info, char *err, size_t errlen)
{
	struct dpsock_xdp_info *x = &p->xdp;
	uint16_t first[DPSOCK_PORT_MEMBERS_MAX];
	uint16_t pid, i, j, next = 0;
	int ret;

	ret = xdp_kernel_check(p, err, errlen);
	if (ret != 0)
		return ret;
	memset(x, 0, sizeof(*x));
	x->ifindex = info->if_index;
	if (if_indextoname(x->ifindex, x->ifname) == NULL)
		snprintf(x->ifname, sizeof(x->ifname), "ifindex %u", x->ifindex);
	x->if_rx_queues = if_rx_queues(x->ifname);
	x->start_queue = xdp_start_queue(info);
	first[0] = x->start_queue;
	RTE_ETH_FOREACH_DEV(pid) {
		struct rte_eth_dev_info si;
		uint16_t sq;

		if (pid == p->port_id || rte_eth_dev_info_get(pid, &si) != 0 ||
		    strcmp(si.driver_name, XDP_DRIVER) != 0 || si.if_index != x->ifindex ||
		    si.nb_rx_queues > 0)
			continue;
		if (p->n_members == DPSOCK_PORT_MEMBERS_MAX) {
			snprintf(err, errlen, "port %s: more than %u %s ports on interface %s",
				 p->name, DPSOCK_PORT_MEMBERS_MAX, XDP_DRIVER, x->ifname);
			return -E2BIG;
		}
		/* insertion by first queue */
		sq = xdp_start_queue(&si);
		for (i = p->n_members; i > 0 && first[i - 1] > sq; i--) {
			first[i] = first[i - 1];
			p->members[i] = p->members[i - 1];
		}
		first[i] = sq;
		p->members[i] = pid;
		p->n_members++;
	}
	for (i = 0; i < p->n_members; i++) {
		struct rte_eth_dev_info mi;
		char mname[RTE_ETH_NAME_MAX_LEN] = "?";

		if (rte_eth_dev_info_get(p->members[i], &mi) != 0)
			continue;
		rte_eth_dev_get_name_by_port(p->members[i], mname);
		if (i > 0 && first[i] < next) {
			snprintf(err, errlen, "port %s: %s starts at queue %u of %s, which the vdev "
				 "before it already reads: give each vdev its own start_queue",
				 p->name, mname, first[i], x->ifname);
			return -EINVAL;
		}
		next = first[i] + mi.max_rx_queues;
		/* (a queue the interface lacks fails in the kernel's bind,
		 * with a vaguer message) */
		if (x->if_rx_queues && first[i] + mi.max_rx_queues > x->if_rx_queues) {
			snprintf(err, errlen, "port %s: %s reads queues %u-%u of %s, which has %u "
				 "RX queue(s): give the interface more (ethtool -L %s combined N; "
				 "a veth: rx N tx N on both ends, created with numrxqueues N "
				 "numtxqueues N) or the vdev a lower start_queue/queue_count",
				 p->name, mname, first[i], first[i] + mi.max_rx_queues - 1, x->ifname,
				 x->if_rx_queues, x->ifname);
			return -EINVAL;
		}
		if (p->n_members == 1) {
			for (j = 0; j < DPSOCK_PORT_QUEUES_MAX; j++)
				p->queues[j].if_queue = (uint16_t)(first[0] + j);
			break;
		}
		if (i == 0)
			p->caps.max_rx_queues = 0;
		for (j = 0; j < mi.max_rx_queues && p->caps.max_rx_queues < DPSOCK_PORT_QUEUES_MAX; j++) {
			p->queues[p->caps.max_rx_queues].port_id = p->members[i];
			p->queues[p->caps.max_rx_queues].if_queue = (uint16_t)(first[i] + j);
			p->queues[p->caps.max_rx_queues++].queue_id = j;
		}
	}
	p->caps.max_tx_queues = p->caps.max_rx_queues;
	x->start_queue = first[0];
	return 0;
}

/* AF_XDP sockets this process holds, for telling which one a queue set-up
 * created. Returns how many fds were stored (at most max). */
static unsigned int
xsk_fds(int *fds, unsigned int max)
{
	struct dirent *de;
	unsigned int n = 0;
	DIR *dir;

	dir = opendir("/proc/self/fd");
	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL && n < max) {
		int fd = atoi(de->d_name), dom = 0;
		socklen_t len = sizeof(dom);

		if (de->d_name[0] == '.' || fd == dirfd(dir))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 && dom == AF_XDP)
			fds[n++] = fd;
	}
	closedir(dir);
	return n;
}

#define XSK_FDS_MAX 256

/* The AF_XDP socket that is not in known[]: the one just created. */
static int
xsk_fd_new(const int *known, unsigned int n_known)
{
	int now[XSK_FDS_MAX];
	unsigned int n = xsk_fds(now, XSK_FDS_MAX), i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < n_known && known[k] != now[i]; k++)
			;
		if (k == n_known)
			return now[i];
	}
	return -1;
}

/*
 * AF_XDP sockets this process still holds once its AF_XDP ports are
 * closed. DPDK 22.11's af_xdp PMD (with libxdp) closes each queue's socket
 * but not the one its UMEM was registered on, which stays bound to the
 * interface's queue until the process ends: no other socket can bind the
 * queue meanwhile (EBUSY), neither a new process's (a takeover) nor this
 * one's (a port started again). Closed here; returns how many.
 */
unsigned int
dpsock_port_xsk_leftovers_close(void)
{
	int fds[XSK_FDS_MAX];
	unsigned int n = xsk_fds(fds, XSK_FDS_MAX), i;

	for (i = 0; i < n; i++)
		close(fds[i]);
	return n;
}

/* a probe that did bind (a driver with zero-copy AF_XDP) holds the queue
 * until the kernel's work item frees it in turn */
#define XDP_PROBE_SETTLE_US 50000

/*
 * Is interface queue `queue` free of AF_XDP sockets? A throwaway socket
 * with a one-page UMEM asks for it in zero-copy mode: the kernel answers
 * EBUSY while another socket's buffer pool holds the queue; otherwise a
 * driver without zero-copy (veth, or a NIC in generic mode) refuses the
 * mode after it checked, undoing everything at once (no deferred
 * release), and one with zero-copy binds the probe. Returns 1 free (and
 * nothing left behind), 2 free but the probe was bound (its own hold goes
 * the deferred way), 0 busy, or -errno (no probe possible).
 */
static int
xsk_probe_bind(unsigned int ifindex, unsigned int queue)
{
	struct xdp_umem_reg mr = { .len = 2 * 4096, .chunk_size = 4096 };
	struct sockaddr_xdp sx = { .sxdp_family = AF_XDP, .sxdp_ifindex = ifindex,
				   .sxdp_queue_id = queue, .sxdp_flags = XDP_ZEROCOPY };
	int fd, n = 2, r;
	void *mem;

	fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	mem = mmap(NULL, mr.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		close(fd);
		return -ENOMEM;
	}
	mr.addr = (uintptr_t)mem;
	if (setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &mr, sizeof(mr)) != 0 ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_FILL_RING, &n, sizeof(n)) != 0 ||
	    setsockopt(fd, SOL_XDP, XDP_UMEM_COMPLETION_RING, &n, sizeof(n)) != 0 ||
	    setsockopt(fd, SOL_XDP, XDP_RX_RING, &n, sizeof(n)) != 0)
		r = -errno;
	else if (bind(fd, (struct sockaddr *)&sx, sizeof(sx)) == 0)
		r = 2;
	else
		r = errno == EBUSY ? 0 : 1;
	close(fd);
	munmap(mem, mr.len);
	return r;
}

int
dpsock_port_xdp_wait_free(const struct dpsock_port *p, unsigned int timeout_ms)
{
	uint64_t until = rte_get_timer_cycles() + rte_get_timer_hz() / 1000 * timeout_ms;
	bool bound = false;
	uint16_t q;
	int r = 1;

	if (!p->is_xdp)
		return 0;
	for (q = 0; q < p->n_queues; q++) {
		while ((r = xsk_probe_bind(p->xdp.ifindex, p->queues[q].if_queue)) == 0 &&
		       rte_get_timer_cycles() < until)
			rte_delay_us_sleep(500);
		if (r <= 0)
			return r == 0 ? -EBUSY : r;
		bound |= r == 2;
	}
	if (bound)
		rte_delay_us_sleep(XDP_PROBE_SETTLE_US);
	return 0;
}

/* Read back what the kernel gave the port's sockets and XDP program. */
static void
xdp_read_back(struct dpsock_port *p)
{
	struct dpsock_xdp_info *x = &p->xdp;
	uint16_t q;

	x->n_sockets = x->n_zerocopy = x->n_busy_poll = 0;
	for (q = 0; q < p->n_queues; q++) {
		int fd = p->queues[q].xsk_fd, v = 0;
		struct xdp_options opt = { 0 };
		socklen_t len = sizeof(opt);

		if (fd < 0)
			continue;
		x->n_sockets++;
		if (getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opt, &len) == 0 &&
		    (opt.flags & XDP_OPTIONS_ZEROCOPY))
			x->n_zerocopy++;
		len = sizeof(v);
		if (getsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &v, &len) == 0 && v) {
			x->n_busy_poll++;
			len = sizeof(v);
			if (getsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &v, &len) == 0)
				x->busy_poll_us = v;
		}
	}
	snprintf(x->prog_name, sizeof(x->prog_name), "?");
#if DPSOCK_HAS_LIBBPF
	{
		LIBBPF_OPTS(bpf_xdp_query_opts, o);
		struct bpf_prog_info pi;
		__u32 len = sizeof(pi);
		int fd;

		if (bpf_xdp_query((int)x->ifindex, 0, &o) == 0) {
			x->attach_mode = o.attach_mode;
			memset(&pi, 0, sizeof(pi));
			fd = o.prog_id ? bpf_prog_get_fd_by_id(o.prog_id) : -1;
			if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &pi, &len) == 0)
				snprintf(x->prog_name, sizeof(x->prog_name), "%s", pi.name);
			if (fd >= 0)
				close(fd);
		}
	}
#endif
}

void
dpsock_port_xdp_describe(const struct dpsock_port *p, char *buf, size_t len)
{
	static const char *const modes[] = {
		[XDP_ATTACHED_NONE] = "not attached",
		[XDP_ATTACHED_DRV] = "native (driver)",
		[XDP_ATTACHED_SKB] = "generic (skb)",
		[XDP_ATTACHED_HW] = "offloaded (hardware)",
		[XDP_ATTACHED_MULTI] = "in several modes",
	};
	const struct dpsock_xdp_info *x = &p->xdp;

	if (!p->is_xdp) {
		buf[0] = '\0';
		return;
	}
	snprintf(buf, len, "AF_XDP on %s (ifindex %u): %u queue(s) from %u vdev(s), interface "
		 "queues %u-%u of %u; XDP %s, program %s%s; %u of %u socket(s) zero-copy%s; "
		 "preferred busy polling %s (SO_BUSY_POLL %d us)",
		 x->ifname, x->ifindex, p->n_queues, p->n_members, x->start_queue,
		 x->start_queue + p->n_queues - 1, x->if_rx_queues,
		 x->attach_mode < RTE_DIM(modes) ? modes[x->attach_mode] : "mode unknown",
		 x->prog_name, strcmp(x->prog_name, "xdp_dispatcher") == 0 ? " (libxdp's)" :
		 " (alone: libxdp could not use its dispatcher, see its log)",
		 x->n_zerocopy, x->n_sockets,
		 x->n_zerocopy < x->n_sockets ? " (copy mode: the kernel copies each frame)" : "",
		 x->n_busy_poll == x->n_sockets && x->n_sockets ? "on" :
		 x->n_busy_poll ? "on some sockets" : "off", x->busy_poll_us);
}

/* Warnings about what the kernel gave: generic XDP, unread queues. */
static void
xdp_warn(const struct dpsock_port *p)
{
	const struct dpsock_xdp_info *x = &p->xdp;

	if (x->attach_mode == XDP_ATTACHED_SKB)
		DPSOCK_LOG(WARNING, pmd, "port %s: XDP runs in generic (skb) mode on %s: the "
			   "driver has no native XDP, so every frame is built as an skb first "
			   "and copied (slower than native; net_af_packet costs about as much)",
			   p->name, x->ifname);
	if (x->if_rx_queues &&
	    (x->start_queue > 0 || x->start_queue + p->n_queues < x->if_rx_queues))
		DPSOCK_LOG(WARNING, pmd, "port %s: %s has %u RX queue(s); dpsock reads %u-%u, "
			   "so flows the interface hashes to the others reach the kernel, not "
			   "dpsock: make the counts equal (ethtool -L %s combined %u; on a veth: "
			   "rx %u tx %u on both ends) or steer dpsock's flows with ethtool -N",
			   p->name, x->ifname, x->if_rx_queues, x->start_queue,
			   x->start_queue + p->n_queues - 1, x->ifname, p->n_queues, p->n_queues,
			   p->n_queues);
}

/* DPDK 22.11's af_xdp PMD keeps the mbufs of its fill rings when it closes
 * (the kernel held them; nothing gives them back): return them, so that
 * the pool is whole again and the leak check at stop means what it says.
 * They are the mbufs in use that nobody touched since their allocation
 * (rte_pktmbuf_reset state: the kernel writes packet data after the mbuf
 * header, never the header), at most as many as the PMD took at set-up.
 * Runs after close, when no kernel socket can write them any more, and
 * after the workers stopped (their mempool caches are flushed here). */
struct xdp_reclaim {
	void **free_objs;      /* what the pool held, sorted */
	unsigned int n_free;
	struct rte_mbuf **found;
	unsigned int n_found, max;
};

static int
ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

static void
xdp_reclaim_obj(struct rte_mempool *mp, void *arg, void *obj, unsigned int idx)
{
	struct xdp_reclaim *r = arg;
	struct rte_mbuf *m = obj;

	if (bsearch(&obj, r->free_objs, r->n_free, sizeof(void *), ptr_cmp) != NULL)
		return;
	if (r->n_found < r->max && m->data_len == 0 && m->pkt_len == 0 && m->nb_segs == 1 &&
	    m->next == NULL && m->port == RTE_MBUF_PORT_INVALID && m->ol_flags == 0 &&
	    rte_mbuf_refcnt_read(m) == 1)
		r->found[r->n_found++] = m;
}

static void
xdp_reclaim(struct dpsock_port *p)
{
	struct rte_mempool *mp = p->pool;
	struct xdp_reclaim r = { .max = p->pmd_rx_held };
	unsigned int lc, in_use;

	if (mp == NULL || p->pmd_rx_held == 0)
		return;
	for (lc = 0; lc < RTE_MAX_LCORE; lc++) {
		struct rte_mempool_cache *c = rte_mempool_default_cache(mp, lc);

		if (c != NULL && c->len > 0)
			rte_mempool_cache_flush(c, mp);
	}
	r.n_free = rte_mempool_avail_count(mp);
	in_use = mp->size - r.n_free;
	r.free_objs = malloc(sizeof(void *) * (r.n_free + 1));
	r.found = malloc(sizeof(*r.found) * (r.max + 1));
	if (r.free_objs == NULL || r.found == NULL ||
	    rte_mempool_generic_get(mp, r.free_objs, r.n_free, NULL) != 0) {
		DPSOCK_LOG(WARNING, pmd, "port %s: cannot look for the %u mbufs af_xdp kept",
			   p->name, p->pmd_rx_held);
		goto out;
	}
	qsort(r.free_objs, r.n_free, sizeof(void *), ptr_cmp);
	rte_mempool_obj_iter(mp, xdp_reclaim_obj, &r);
	rte_mempool_generic_put(mp, r.free_objs, r.n_free, NULL);
	rte_mempool_generic_put(mp, (void **)r.found, r.n_found, NULL);
	if (r.n_found == p->pmd_rx_held)
		DPSOCK_LOG(INFO, pmd, "port %s: the %u mbufs af_xdp kept in its fill rings are "
			   "back in the pool", p->name, r.n_found);
	else
		DPSOCK_LOG(NOTICE, pmd, "port %s: af_xdp took %u mbufs for its fill rings; %u of "
			   "them found unused at close (%u mbufs were in use)", p->name,
			   p->pmd_rx_held, r.n_found, in_use);
out:
	free(r.free_objs);
	free(r.found);
}

/*
 * The mbuf pool of an AF_XDP port. DPDK 22.11's af_xdp PMD registers the
 * pool with the kernel as one UMEM: from the page that holds the first
 * object, populated_size * object size bytes. rte_pktmbuf_pool_create lays
 * objects out so that none crosses a page boundary, which leaves a gap at
 * the end of every page (and a pool may come in several chunks), so that
 * UMEM ends short of the last objects. A frame sent from one of them is an
 * invalid descriptor, which the kernel drops without a trace but its
 * tx_invalid_descs counter; an RX buffer among them is never filled. With
 * one worker the same few mbufs cycle through its cache and the bad ones
 * are rarely met; with several, mbufs handed between workers travel the
 * whole pool (a fragmented datagram's reply went missing now and then).
 *
 * So lay the pool out as the PMD assumes: one memzone, aligned to the
 * object size, objects of a power-of-two size back to back: no gap, and
 * none crosses a page (which a zero-copy driver would also refuse). The
 * data room grows to fill the object.
 */
static void
xdp_pool_mz_free(struct rte_mempool_memhdr *memhdr __rte_unused, void *opaque)
{
	rte_memzone_free(opaque);
}

struct rte_mempool *
dpsock_port_xdp_pool_create(const char *name, unsigned int n, unsigned int cache,
			    uint16_t priv_size, uint16_t data_room, int socket)
{
	const unsigned int flags = RTE_MEMPOOL_F_NO_SPREAD | RTE_MEMPOOL_F_NO_IOVA_CONTIG;
	struct rte_pktmbuf_pool_private mbp = { 0 };
	char mz_name[RTE_MEMZONE_NAMESIZE];
	struct rte_mempool_objsz sz;
	const struct rte_memzone *mz;
	struct rte_mempool *mp;
	uint32_t obj, elt, room;
	int ret;

	obj = rte_align32pow2(rte_mempool_calc_obj_size(sizeof(struct rte_mbuf) + priv_size +
							data_room, flags, &sz));
	elt = obj - sz.header_size - sz.trailer_size;
	room = elt - sizeof(struct rte_mbuf) - priv_size;
	if (room > UINT16_MAX || rte_mempool_calc_obj_size(elt, flags, NULL) != obj) {
		rte_errno = EINVAL;
		return NULL;
	}
	mp = rte_mempool_create_empty(name, n, elt, cache, sizeof(mbp), socket, flags);
	if (mp == NULL)
		return NULL;
	ret = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL);
	if (ret != 0)
		goto fail;
	mbp.mbuf_data_room_size = (uint16_t)room;
	mbp.mbuf_priv_size = priv_size;
	rte_pktmbuf_pool_init(mp, &mbp);
	snprintf(mz_name, sizeof(mz_name), "xdp_%s", name);
	mz = rte_memzone_reserve_aligned(mz_name, (size_t)n * obj, socket, 0,
					 RTE_MAX(obj, (uint32_t)getpagesize()));
	if (mz == NULL) {
		ret = -rte_errno;
		goto fail;
	}
	ret = rte_mempool_populate_iova(mp, mz->addr, mz->iova, mz->len, xdp_pool_mz_free,
					(void *)(uintptr_t)mz);
	if (ret < 0) {
		rte_memzone_free(mz);
		goto fail;
	}
	if ((unsigned int)ret != n || mp->nb_mem_chunks != 1) {
		ret = -ENOMEM;
		goto fail;
	}
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	rte_errno = -ret;
	return NULL;
}

/* Frames sent on an AF_XDP queue stay the PMD's until their completions
 * are read, which only a later TX burst does: reap them with empty bursts
 * until the pool stops filling (zero-copy drivers complete asynchronously). */
static void
xdp_tx_reap(struct dpsock_port *p)
{
	unsigned int before, i, round;

	if (p->pool == NULL)
		return;
	for (round = 0; round < 50; round++) {
		before = rte_mempool_avail_count(p->pool);
		for (i = 0; i < p->n_queues; i++) {
			struct rte_mbuf *none[1];

			rte_eth_tx_burst(p->queues[i].port_id, p->queues[i].queue_id, none, 0);
		}
		if (round > 0 && rte_mempool_avail_count(p->pool) == before)
			break;
		rte_delay_us_sleep(1000);
	}
}

int
dpsock_port_probe(struct dpsock_port *p, char *err, size_t errlen)
{
	struct dpsock_port_caps *c = &p->caps;
	struct rte_eth_dev_info info;
	uint16_t q;
	int ret;

	ret = rte_eth_dev_info_get(p->port_id, &info);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_info_get(port %u): %s", p->port_id,
			 rte_strerror(-ret));
		return ret;
	}
	rte_eth_dev_get_name_by_port(p->port_id, p->name);
	/* (af_xdp has no queue until configured; af_packet creates its own
	 * at probe) */
	if (is_xdp_driver(info.driver_name) && info.nb_rx_queues > 0) {
		snprintf(err, errlen, "port %s is already in use: a queue of another interface "
			 "(%s vdevs on one kernel interface join the first one named)",
			 p->name, XDP_DRIVER);
		return -EBUSY;
	}
	memset(c, 0, sizeof(*c));
	snprintf(c->driver, sizeof(c->driver), "%s", info.driver_name);
	c->max_rx_queues = info.max_rx_queues;
	c->max_tx_queues = info.max_tx_queues;
	c->min_mtu = info.min_mtu;
	c->max_mtu = info.max_mtu;
	c->rx_offload_capa = info.rx_offload_capa;
	c->tx_offload_capa = info.tx_offload_capa;
	c->rss_hf = info.flow_type_rss_offloads;
	c->rss_key_size = info.hash_key_size;
	c->reta_size = info.reta_size;
	c->rss = info.flow_type_rss_offloads != 0 && info.max_rx_queues > 1;
	c->rx_ip_cksum = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	c->rx_l4_cksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) &&
			 (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM);
	c->tx_ip_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	c->tx_tcp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
	c->tx_udp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	c->tx_multi_segs = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* TSO is used only with what it implies: the port computes the TCP
	 * checksums of the segments and takes a frame as an mbuf chain */
	c->tso = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO) && c->tx_tcp_cksum &&
		 c->tx_multi_segs;
	c->tx_seg_max = info.tx_desc_lim.nb_seg_max ? info.tx_desc_lim.nb_seg_max : UINT16_MAX;
	c->rx_timestamp = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	c->if_index = info.if_index;
	/* per-PMD quirks */
	c->fixed_rx_queues = strcmp(info.driver_name, "net_af_packet") == 0;
	c->tso_l2_in_mtu = strcmp(info.driver_name, "net_tap") == 0;
	/* DPDK reports TSO without a family. A NIC's TSO cuts IPv6 too
	 * (mlx5, ice, i40e, ixgbe, virtio); net_tap's is DPDK's GSO library,
	 * which cuts TCP over IPv4 alone (22.11) and sends an IPv6
	 * super-segment whole: the netif cuts those in software. */
	c->tso6 = c->tso && strcmp(info.driver_name, "net_tap") != 0;
	if (c->fixed_rx_queues)
		c->rx_frame_size = af_packet_frame_size(&info);
	c->tx_extbuf = !is_xdp_driver(info.driver_name);
	c->tx_lazy_completion = is_xdp_driver(info.driver_name);
	c->rx_pool_hold = is_xdp_driver(info.driver_name) ? info.default_rxportconf.ring_size : 0;

	p->n_members = 1;
	p->members[0] = p->port_id;
	for (q = 0; q < DPSOCK_PORT_QUEUES_MAX; q++) {
		p->queues[q].port_id = p->port_id;
		p->queues[q].queue_id = q;
		p->queues[q].xsk_fd = -1;
	}
	p->is_xdp = is_xdp_driver(info.driver_name);
	if (p->is_xdp)
		return xdp_probe(p, &info, err, errlen);
	return 0;
}

/* Configure DPDK port dev with nq queue pairs, which are the port's queues
 * first..first+nq-1, set its MTU and start it. */
static int
dev_start(struct dpsock_port *p, uint16_t dev, uint16_t first, uint16_t nq,
	  const struct rte_eth_conf *conf, uint16_t rx_desc, uint16_t tx_desc, uint16_t mtu,
	  int socket, struct rte_mempool *pool, char *err, size_t errlen)
{
	char name[RTE_ETH_NAME_MAX_LEN] = "?";
	int known[XSK_FDS_MAX];
	unsigned int n_known = 0;
	uint16_t q, nb_rxd = rx_desc, nb_txd = tx_desc;
	int ret;

	rte_eth_dev_get_name_by_port(dev, name);
	ret = rte_eth_dev_configure(dev, nq, nq, conf);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_configure(%s, %u queues): %s", name, nq,
			 rte_strerror(-ret));
		return ret;
	}
	/* AF_XDP: DPDK 22.11's PMD posts XDP_RX_FRAMES frames to each queue's
	 * fill ring whatever the ring sizes, so an RX ring of rx_desc (1024 by
	 * default) only capped what the kernel can hand over between two polls
	 * of a worker that shares its CPU: a burst (thousands of SYNs as a load
	 * generator connects) overflowed it with frames to spare. The RX ring
	 * takes as many as the fill ring holds (no more mbufs: they are the
	 * fill ring's). */
	if (p->is_xdp && nb_rxd < XDP_RX_FRAMES)
		nb_rxd = XDP_RX_FRAMES;
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(dev, &nb_rxd, &nb_txd);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_adjust_nb_rx_tx_desc(%s): %s", name,
			 rte_strerror(-ret));
		return ret;
	}
	if (p->is_xdp)
		n_known = xsk_fds(known, XSK_FDS_MAX);
	for (q = 0; q < nq; q++) {
		struct rte_eth_dev_info info;
		struct rte_eth_rxconf rxc;
		struct rte_eth_txconf txc;

		rte_eth_dev_info_get(dev, &info);
		rxc = info.default_rxconf;
		rxc.offloads = p->rx_offloads;
		txc = info.default_txconf;
		txc.offloads = p->tx_offloads;
		ret = rte_eth_rx_queue_setup(dev, q, nb_rxd, socket, &rxc, pool);
		if (ret != 0) {
			snprintf(err, errlen, "rte_eth_rx_queue_setup(%s, queue %u): %s%s", name, q,
				 rte_strerror(-ret), p->is_xdp ?
				 " (the PMD's log above says why; a queue the interface does not "
				 "have, or an XDP program another process left on it, are the usual "
				 "causes: see docs/running.md, AF_XDP)" : "");
			return ret;
		}
		if (p->is_xdp && n_known < XSK_FDS_MAX) {
			p->queues[first + q].xsk_fd = xsk_fd_new(known, n_known);
			if (p->queues[first + q].xsk_fd >= 0)
				known[n_known++] = p->queues[first + q].xsk_fd;
		}
		ret = rte_eth_tx_queue_setup(dev, q, nb_txd, socket, &txc);
		if (ret != 0) {
			snprintf(err, errlen, "rte_eth_tx_queue_setup(%s, queue %u): %s", name, q,
				 rte_strerror(-ret));
			return ret;
		}
	}
	ret = rte_eth_dev_set_mtu(dev, mtu);
	if (ret != 0 && ret != -ENOTSUP) {
		snprintf(err, errlen, "rte_eth_dev_set_mtu(%s, %u): %s", name, mtu,
			 rte_strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_start(dev);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_start(%s): %s", name, rte_strerror(-ret));
		return ret;
	}
	return 0;
}

int
dpsock_port_start(struct dpsock_port *p, uint16_t n_queues, uint16_t mtu,
		  uint16_t rx_desc, uint16_t tx_desc, struct rte_mempool *pool,
		  char *err, size_t errlen)
{
	const struct dpsock_port_caps *c = &p->caps;
	struct rte_eth_conf conf;
	struct rte_eth_rss_conf rss_conf;
	uint16_t q, nq;
	unsigned int held = 0;
	int socket = rte_eth_dev_socket_id(p->port_id);
	int ret;

	if (n_queues > c->max_rx_queues || n_queues > c->max_tx_queues) {
		snprintf(err, errlen, "port %s has %u RX / %u TX queues; %u workers need one pair each%s",
			 p->name, c->max_rx_queues, c->max_tx_queues, n_queues, p->is_xdp ?
			 " (AF_XDP: queue_count=N in --vdev when the interface counts N combined "
			 "channels; otherwise, a veth for instance, one vdev per queue on the same "
			 "iface, start_queue=0, 1, ... with queue_count=1: they join as one port)" : "");
		return -EINVAL;
	}
	if (c->fixed_rx_queues && n_queues != c->max_rx_queues) {
		snprintf(err, errlen, "port %s (%s) spreads packets over all of its %u queues; "
			 "%u worker(s) would leave some unread: make them equal "
			 "(e.g. qpairs=%u in --vdev, or %u workers)",
			 p->name, c->driver, c->max_rx_queues, n_queues, n_queues, c->max_rx_queues);
		return -EINVAL;
	}
	if ((c->min_mtu && mtu < c->min_mtu) || (c->max_mtu && mtu > c->max_mtu)) {
		snprintf(err, errlen, "port %s: MTU %u outside the port's range %u..%u",
			 p->name, mtu, c->min_mtu, c->max_mtu);
		return -EINVAL;
	}
	if (socket < 0)
		socket = 0;

	memset(&conf, 0, sizeof(conf));
	p->rx_offloads = 0;
	p->tx_offloads = 0;
	if (c->rx_ip_cksum)
		p->rx_offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	if (c->rx_l4_cksum)
		p->rx_offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	if (c->tx_ip_cksum)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	if (c->tx_tcp_cksum)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
	if (c->tx_udp_cksum)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	if (c->tx_multi_segs)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (c->tso)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
	if (c->rx_timestamp)
		p->rx_offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	conf.rxmode.offloads = p->rx_offloads;
	conf.txmode.offloads = p->tx_offloads;
	p->rss_hf = 0;
	if (c->rss && n_queues > 1) {
		p->rss_hf = c->rss_hf & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
		if (p->rss_hf) {
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
			conf.rx_adv_conf.rss_conf.rss_hf = p->rss_hf;
		}
	}

	if (p->is_xdp) {
		p->n_queues = n_queues; /* xdp_read_back and dpsock_port_stop use it */
		held = rte_mempool_avail_count(pool);
	}
	/* Each member DPDK port gets the run of the port's queues it holds. */
	for (q = 0; q < n_queues; q += nq) {
		uint16_t dev = p->queues[q].port_id;

		for (nq = 1; q + nq < n_queues && p->queues[q + nq].port_id == dev; nq++)
			;
		ret = dev_start(p, dev, q, nq, &conf, rx_desc, tx_desc, mtu, socket, pool, err,
				errlen);
		if (ret != 0)
			return ret;
		p->n_started = q + nq;
	}
	if (p->is_xdp) {
		p->pmd_rx_held = held - rte_mempool_avail_count(pool);
		xdp_read_back(p);
		xdp_warn(p);
	}
	p->started = true;
	p->n_queues = n_queues;
	p->pool = pool;
	if (rte_eth_dev_get_mtu(p->port_id, &p->mtu) != 0 || p->mtu == 0)
		p->mtu = mtu;
	if (p->mtu < mtu)
		DPSOCK_LOG(WARNING, pmd, "port %s: MTU is %u, below the configured %u (the PMD cannot change it)",
			   p->name, p->mtu, mtu);
	p->mtu = RTE_MIN(p->mtu, mtu);
	rte_eth_macaddr_get(p->port_id, &p->mac);

	/* The key and table actually in use: active-open steering computes
	 * Toeplitz hashes with them. */
	memset(&rss_conf, 0, sizeof(rss_conf));
	if (p->rss_hf && c->rss_key_size && c->rss_key_size <= DPSOCK_RSS_KEY_MAX) {
		rss_conf.rss_key = p->rss_key;
		rss_conf.rss_key_len = c->rss_key_size;
		if (rte_eth_dev_rss_hash_conf_get(p->port_id, &rss_conf) != 0)
			memset(p->rss_key, 0, sizeof(p->rss_key));
	}
	if (p->rss_hf && c->reta_size && c->reta_size <= DPSOCK_RETA_MAX) {
		struct rte_eth_rss_reta_entry64 reta[DPSOCK_RETA_MAX / RTE_ETH_RETA_GROUP_SIZE];
		unsigned int i;

		memset(reta, 0, sizeof(reta));
		for (i = 0; i < c->reta_size / RTE_ETH_RETA_GROUP_SIZE; i++)
			reta[i].mask = UINT64_MAX;
		if (rte_eth_dev_rss_reta_query(p->port_id, reta, c->reta_size) == 0)
			for (i = 0; i < c->reta_size; i++)
				p->reta[i] = reta[i / RTE_ETH_RETA_GROUP_SIZE]
						     .reta[i % RTE_ETH_RETA_GROUP_SIZE];
	}
	p->caps.flow_5tuple = probe_flow_5tuple(p);
	return 0;
}

/* Stop and close the port's DPDK ports; with reclaim, find the mbufs
 * af_xdp kept in its fill rings (their count is what teardown checks; a
 * takeover's holder does it only if it starts the port again). */
static void
port_stop(struct dpsock_port *p, bool reclaim)
{
	uint16_t q;

	if (p->n_started == 0)
		return;
	if (p->is_xdp)
		xdp_tx_reap(p);
	for (q = 0; q < p->n_started; q++) {
		uint16_t dev = p->queues[q].port_id;

		if (q > 0 && p->queues[q - 1].port_id == dev)
			continue;
		rte_eth_dev_stop(dev);
		rte_eth_dev_close(dev);
	}
	p->n_started = 0;
	p->started = false;
	if (p->is_xdp && reclaim)
		xdp_reclaim(p);
}

void
dpsock_port_stop(struct dpsock_port *p)
{
	port_stop(p, true);
}

void
dpsock_port_release(struct dpsock_port *p)
{
	port_stop(p, false);
}

void
dpsock_port_reclaim(struct dpsock_port *p)
{
	if (p->is_xdp)
		xdp_reclaim(p);
}

int
dpsock_port_stats_get(const struct dpsock_port *p, struct rte_eth_stats *es)
{
	struct rte_eth_stats m;
	uint16_t i;
	int ret;

	ret = rte_eth_stats_get(p->members[0], es);
	for (i = 1; ret == 0 && i < p->n_members; i++) {
		ret = rte_eth_stats_get(p->members[i], &m);
		if (ret != 0)
			break;
		es->ipackets += m.ipackets;
		es->opackets += m.opackets;
		es->ibytes += m.ibytes;
		es->obytes += m.obytes;
		es->imissed += m.imissed;
		es->ierrors += m.ierrors;
		es->oerrors += m.oerrors;
		es->rx_nombuf += m.rx_nombuf;
	}
	return ret;
}

int
dpsock_port_xdp_stats_get(const struct dpsock_port *p, struct dpsock_port_xdp_stats *xs)
{
	uint16_t q;

	memset(xs, 0, sizeof(*xs));
	if (!p->is_xdp)
		return -ENOTSUP;
	for (q = 0; q < p->n_queues; q++) {
		/* a kernel older than 5.9 fills only the first three fields */
		struct xdp_statistics st = { 0 };
		socklen_t len = sizeof(st);
		int fd = p->queues[q].xsk_fd;

		if (fd < 0)
			continue;
		if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len) != 0)
			return -errno;
		xs->xdp_rx_ring_full += st.rx_ring_full;
		xs->xdp_fill_empty += st.rx_fill_ring_empty_descs;
		xs->xdp_rx_invalid += st.rx_invalid_descs;
		xs->xdp_tx_invalid += st.tx_invalid_descs;
		xs->xdp_tx_ring_empty += st.tx_ring_empty_descs;
	}
	return 0;
}

void
dpsock_port_caps_describe(const struct dpsock_port *p, char *buf, size_t len)
{
	const struct dpsock_port_caps *c = &p->caps;

	snprintf(buf, len,
		 "driver %s, queues rx %u tx %u, mtu %u..%u, rss %s (key %u B, reta %u), "
		 "rte_flow 5-tuple %s, rx cksum ip %s l4 %s, tx cksum ip %s tcp %s udp %s, "
		 "multi-seg %s, tso %s",
		 c->driver, c->max_rx_queues, c->max_tx_queues, c->min_mtu, c->max_mtu,
		 c->rss ? "yes" : "no", c->rss_key_size, c->reta_size,
		 c->flow_5tuple ? "yes" : "no", c->rx_ip_cksum ? "yes" : "no",
		 c->rx_l4_cksum ? "yes" : "no", c->tx_ip_cksum ? "yes" : "no",
		 c->tx_tcp_cksum ? "yes" : "no", c->tx_udp_cksum ? "yes" : "no",
		 c->tx_multi_segs ? "yes" : "no", c->tso ? "yes" : "no");
}
