/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stack/ itself — the top: the instance's life cycle (here), each worker's
 * loop (worker.c), the stats segment (stats.c); the folders below hold the
 * concerns they drive (docs/architecture.md, "The stack's folders").
 *
 * stack.c — the stack's life cycle (dpsock_init, dpsock_run): EAL, configuration,
 * ports, workers, stats, clean stop. dpsockd and the native apps are thin
 * programs around it.
 *
 *   prog [EAL options] -- [-f dpsock.conf] [--help-config] [--version] [prog's options]
 *
 * The main lcore is the control plane (start-up, stats publication, clean
 * stop). With a single lcore it also does a worker's job between its
 * control tasks.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_version.h>

#include "dpsock_build_config.h"
#include "dpsock/dpsock.h"

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "instance_priv.h"
#include "takeover/takeover.h"
#include "sharing/filter_priv.h"
#include "netview/netview_priv.h"
#include "core/log_priv.h"
#include "mcast/mcast_priv.h"

#define DEFAULT_CONFIG "/etc/dpsock/dpsock.conf"
#define CONTROL_INTERVAL_US 100000 /* stats publication, quit check */

static struct dpsock_stack stack_state;
static const char *prog_name = "dpsock";

void
dpsock_usage(FILE *f)
{
	fprintf(f,
		"dpsock options (after the --, before the program's own):\n"
		"  -f, --config FILE   configuration file (default " DEFAULT_CONFIG ")\n"
		"      --takeover      take over from the running instance of the configuration's\n"
		"                      name: its programs' sockets and connections move here\n"
		"      --detach        with --takeover: return once taken over (systemctl reload)\n"
		"      --help-config   every configuration key with its default\n"
		"  -V, --version       print the version\n"
		"EAL options come before the --, DPDK style (`-h` among them lists them), e.g.\n"
		"  -l 0-2 --no-pci --vdev=net_af_packet0,iface=eth1,qpairs=2\n"
		"--help, --help-config and --version also work as the first argument, alone.\n");
}

static int
first_app_arg(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0)
			return i + 1;
	return argc;
}

/*
 * --help-config and --version must work without hugepages or EAL, and so
 * must the program's own --help: look at what follows the "--" first, and
 * at the first argument (users type `dpsockd --help-config` without the
 * "--": EAL's parser would refuse it; EAL's own help is `-h` or `--help`
 * among other EAL options). Returns true when the program's --help is
 * asked for.
 */
static bool
early_options(int argc, char **argv)
{
	int i, sep = first_app_arg(argc, argv);

	if (argc > 1 &&
	    (strcmp(argv[1], "--help-config") == 0 || strcmp(argv[1], "--version") == 0 ||
	     strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--help") == 0))
		sep = 1;
	for (i = sep; i < argc; i++) {
		if (strcmp(argv[i], "--help-config") == 0) {
			dpsock_config_print_help(stdout);
			exit(0);
		}
		if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			printf("%s %s (dpsock, %s)\n", prog_name, DPSOCK_VERSION, rte_version());
			exit(0);
		}
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

/* Is an EAL option (before the "--") given, as "--opt" or "--opt=..."? */
static bool
has_arg(int argc, char **argv, const char *name)
{
	size_t len = strlen(name);
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strncmp(argv[i], name, len) == 0 && (argv[i][len] == '\0' || argv[i][len] == '='))
			return true;
	return false;
}

/*
 * Nothing attaches to dpsockd through EAL's multi-process channel (the
 * preload library and dpsock-stat use dpsock's own shared memory), so by
 * default EAL runs --in-memory (or --no-shconf with --no-huge/--legacy-mem,
 * which --in-memory does not combine with): no hugepage or runtime files
 * that could outlive the daemon, even after a crash. --in-memory,
 * --proc-type, --no-shconf or --huge-unlink given by the user turn this
 * default off. Returns the argv to give EAL (argv, or a copy with the option).
 */
static char **
eal_default_args(int *argc, char **argv)
{
	static const char *const opt_outs[] = {
		"--in-memory", "--proc-type", "--no-shconf", "--huge-unlink",
	};
	char **nargv;
	unsigned int i;

	for (i = 0; i < RTE_DIM(opt_outs); i++)
		if (has_arg(*argc, argv, opt_outs[i]))
			return argv;
	nargv = calloc(*argc + 2, sizeof(*nargv));
	if (nargv == NULL)
		return argv;
	nargv[0] = argv[0];
	nargv[1] = (char *)(has_arg(*argc, argv, "--no-huge") || has_arg(*argc, argv, "--legacy-mem") ?
			    "--no-shconf" : "--in-memory");
	memcpy(&nargv[2], &argv[1], (*argc - 1) * sizeof(*nargv));
	(*argc)++;
	return nargv;
}

/* EAL's own message for missing hugepages is cryptic; say what to run. */
static int
check_hugepages(int argc, char **argv)
{
	unsigned long total = 0, free_pages = 0;
	char line[256];
	FILE *f;
	bool mounted = false;

	if (has_arg(argc, argv, "--no-huge"))
		return 0;
	f = fopen("/proc/meminfo", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "HugePages_Total: %lu", &total);
			sscanf(line, "HugePages_Free: %lu", &free_pages);
		}
		fclose(f);
	}
	f = fopen("/proc/mounts", "r");
	if (f != NULL) {
		while (fgets(line, sizeof(line), f))
			if (strstr(line, " hugetlbfs ") != NULL)
				mounted = true;
		fclose(f);
	}
	if (free_pages > 0 && (mounted || has_arg(argc, argv, "--in-memory")))
		return 0;
	fprintf(stderr,
		"%s: no usable hugepages (%lu reserved, %lu free, hugetlbfs %s).\n"
		"  Run scripts/setup, or by hand:\n"
		"    echo 1024 > /proc/sys/vm/nr_hugepages\n"
		"    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages\n"
		"  or run without hugepages: add --no-huge to the EAL options.\n",
		prog_name, total, free_pages, mounted ? "mounted" : "not mounted");
	return -1;
}

/*
 * EAL leaves its runtime directory behind, and telemetry unlinks its socket
 * in there from an atexit handler. This handler is registered before
 * rte_eal_init, so it runs after theirs and finds the directory empty.
 */
static char eal_runtime_dir[PATH_MAX];

static void
remove_runtime_dir(void)
{
	if (eal_runtime_dir[0] != '\0')
		rmdir(eal_runtime_dir);
}

static void
eal_cleanup(void)
{
	snprintf(eal_runtime_dir, sizeof(eal_runtime_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
}

static void
on_signal(int sig)
{
	__atomic_store_n(&stack_state.quit, 1, __ATOMIC_RELAXED);
}

static void
banner_line(void *arg, const char *line)
{
	DPSOCK_LOG(INFO, main, "  %s", line);
}

static void
log_banner(const struct dpsock_stack *d, const char *cmd)
{
	DPSOCK_LOG(NOTICE, main, "%s: dpsock %s (%s), pid %d", prog_name, DPSOCK_VERSION, rte_version(),
		   (int)getpid());
	DPSOCK_LOG(INFO, main, "command line: %s", cmd);
	DPSOCK_LOG(INFO, main, "configuration %s; settings that differ from the defaults:",
		   d->conf.path[0] ? d->conf.path : "(built-in)");
	dpsock_config_foreach_nondefault(&d->conf, banner_line, NULL);
}

/* Choose the worker lcores: the configured list, else every EAL worker
 * lcore, else the main lcore alone. */
static int
setup_workers(struct dpsock_stack *d)
{
	const struct dpsock_config *c = &d->conf;
	unsigned int lcores[DPSOCK_MAX_WORKERS], n = 0, i, lc;
	unsigned int main_lcore = rte_get_main_lcore();

	if (c->n_workers > 0) {
		for (i = 0; i < c->n_workers; i++) {
			lc = c->workers[i];
			if (lc >= RTE_MAX_LCORE || !rte_lcore_is_enabled(lc)) {
				char list[256] = "";
				size_t off = 0;
				unsigned int e;

				RTE_LCORE_FOREACH(e)
					off += snprintf(list + off, sizeof(list) - off, "%s%u",
							off ? "," : "", e);
				fprintf(stderr,
					"%s: %s: workers: lcore %u is not one of EAL's lcores (%s); "
					"add it to -l/--lcores or remove it from workers\n",
					prog_name, c->path[0] ? c->path : "config", lc, list);
				return -EINVAL;
			}
			lcores[n++] = lc;
		}
	} else {
		RTE_LCORE_FOREACH_WORKER(lc) {
			if (n == DPSOCK_MAX_WORKERS)
				break;
			lcores[n++] = lc;
		}
		if (n == 0)
			lcores[n++] = main_lcore;
	}
	d->workers = rte_zmalloc("dpsock_workers", n * sizeof(*d->workers), RTE_CACHE_LINE_SIZE);
	if (d->workers == NULL) {
		fprintf(stderr, "%s: out of memory for %u workers\n", prog_name, n);
		return -ENOMEM;
	}
	d->n_workers = n;
	d->main_worker = -1;
	for (i = 0; i < n; i++) {
		struct dpsock_worker *w = &d->workers[i];
		char name[RTE_RING_NAMESIZE];

		w->d = d;
		w->idx = i;
		w->lcore_id = lcores[i];
		w->queue = i;
		w->efd = w->epfd = -1;
		w->rx_burst = RTE_MIN(c->rx_burst, DPSOCK_RX_BURST_MAX);
		w->idle_poll_tsc = d->tsc_hz / 1000000 * c->idle_poll_us;
		w->sleep_max_us = c->idle_sleep_max_us;
		w->yield = strcmp(c->yield, "never") == 0 ? DPSOCK_YIELD_NEVER :
			   strcmp(c->yield, "always") == 0 ? DPSOCK_YIELD_ALWAYS : DPSOCK_YIELD_AUTO;
		snprintf(name, sizeof(name), "dps_steer_%u", i);
		w->steer = rte_ring_create(name, c->steer_ring, rte_lcore_to_socket_id(lcores[i]),
					   RING_F_SC_DEQ);
		if (w->steer == NULL) {
			fprintf(stderr, "%s: steering ring for worker %u: %s\n", prog_name, i,
				rte_strerror(rte_errno));
			return -ENOMEM;
		}
		if (lcores[i] == main_lcore)
			d->main_worker = i;
	}
	return 0;
}

/* The MTU of a kernel netdev, or 0. */
static unsigned int
netdev_mtu(unsigned int ifindex)
{
	struct ifreq ifr = { 0 };
	int fd, mtu = 0;

	if (ifindex == 0 || if_indextoname(ifindex, ifr.ifr_name) == NULL)
		return 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	return mtu > 0 ? (unsigned int)mtu : 0;
}

/* Ports, part one: find and probe each, make its mbuf pool (before a
 * takeover's freeze: none of it touches the queues). */
static int
setup_ports(struct dpsock_stack *d)
{
	const struct dpsock_config *c = &d->conf;
	char err[512];
	unsigned int i, k;
	int ret;

	for (i = 0; i < c->n_routes; i++)
		ip4_addr_set_u32(&d->route_gw[i], c->routes[i].gateway);
	for (i = 0; i < c->n_ifaces; i++) {
		const struct dpsock_iface_conf *ic = &c->ifaces[i];
		struct dpsock_port *p = &d->ports[i];
		uint32_t need, data_room, rx_hold, mtu = ic->mtu;
		char pool_name[RTE_MEMPOOL_NAMESIZE];
		int socket;

		p->vlan_tci = ic->vlan == 0 ? 0 :
			      (uint16_t)(ic->vlan_priority << RTE_VLAN_PRI_SHIFT | ic->vlan);
		ret = dpsock_port_lookup(ic->port, &p->port_id, err, sizeof(err));
		if (ret == 0)
			ret = dpsock_port_probe(p, err, sizeof(err));
		if (ret != 0) {
			fprintf(stderr, "%s: %s:%d: interfaces[%u].port: %s\n", prog_name,
				c->path[0] ? c->path : "config", ic->line, i, err);
			return ret;
		}
		d->n_ports = i + 1;
		for (k = 0; k < p->n_members; k++)
			d->port_idx[p->members[k]] = i;
		if (ic->shared) {
			/* shared with the kernel: its netdev's MTU (kfollow.c
			 * follows it later, up to this one) */
			p->shared = true;
			d->any_shared = true;
			if (netdev_mtu(p->caps.if_index) != 0)
				mtu = netdev_mtu(p->caps.if_index);
			/* not AF_XDP: rte_flow's isolated mode, entered before the
			 * port is configured (filter.c adds the rules) */
			if (!p->is_xdp && (ret = dpsock_flowf_isolate(p->port_id, err, sizeof(err))) != 0) {
				fprintf(stderr, "%s: %s:%d: interfaces[%u]: port %s has no address, so it "
					"would share its netdev with the kernel, which takes net_af_xdp "
					"(dpsockd's XDP program) or a NIC with rte_flow's isolated mode "
					"(mlx5); this port (%s) has neither (rte_flow_isolate: %s): give "
					"the interface an address to own the port alone\n", prog_name,
					c->path[0] ? c->path : "config", ic->line, i, p->name,
					p->caps.driver, strerror(-ret));
				return ret;
			}
		}
		/* Each queue's ring (or what the PMD keeps per RX queue), a full
		 * TX batch, the steering ring and the per-lcore caches must fit,
		 * with room left for lwIP to hold. */
		rx_hold = RTE_MAX(c->rx_desc, p->caps.rx_pool_hold);
		need = d->n_workers * (rx_hold + c->tx_desc + DPSOCK_TX_BURST + c->steer_ring) +
		       (d->n_workers + 1) * c->mbuf_cache + 1024;
		if (c->mbufs < need) {
			char held[64] = "";

			if (rx_hold > c->rx_desc)
				snprintf(held, sizeof(held), " (%s keeps %u per RX queue)",
					 p->caps.driver, rx_hold);
			fprintf(stderr,
				"%s: %s: memory.mbufs = %u is too small for %u workers with "
				"rx_desc %u%s, tx_desc %u, steer_ring %u: need at least %u\n",
				prog_name, c->path[0] ? c->path : "config", c->mbufs, d->n_workers,
				c->rx_desc, held, c->tx_desc, c->steer_ring, need);
			return -EINVAL;
		}
		data_room = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE,
				    (uint32_t)(RTE_PKTMBUF_HEADROOM + mtu + RTE_ETHER_HDR_LEN +
					       RTE_ETHER_CRC_LEN + 2 * RTE_VLAN_HLEN));
		/* a PMD that hands over larger frames whole (af_packet's framesz:
		 * the kernel reassembles fragments before it) needs mbufs that
		 * hold them, or UDP above the MTU is lost */
		data_room = RTE_MAX(data_room, RTE_PKTMBUF_HEADROOM + p->caps.rx_frame_size);
		if (data_room > UINT16_MAX) {
			fprintf(stderr, "%s: %s:%d: interfaces[%u]: port %s hands over frames of %u "
				"bytes, more than an mbuf holds (at most %u)\n", prog_name,
				c->path[0] ? c->path : "config", ic->line, i, p->name,
				p->caps.rx_frame_size, UINT16_MAX - RTE_PKTMBUF_HEADROOM);
			return -EINVAL;
		}
		snprintf(pool_name, sizeof(pool_name), "dps_mbuf_%u", i);
		socket = rte_eth_dev_socket_id(p->port_id) < 0 ? SOCKET_ID_ANY :
			 rte_eth_dev_socket_id(p->port_id);
		if (p->is_xdp)
			p->pool = dpsock_port_xdp_pool_create(pool_name, c->mbufs, c->mbuf_cache,
							      dpsock_netif_mbuf_priv_size(),
							      data_room, socket);
		else
			p->pool = rte_pktmbuf_pool_create(pool_name, c->mbufs, c->mbuf_cache,
							  dpsock_netif_mbuf_priv_size(), data_room,
							  socket);
		if (p->pool == NULL) {
			fprintf(stderr, "%s: mbuf pool for %s (%u mbufs of %u B): %s%s\n", prog_name,
				p->name, c->mbufs, data_room, rte_strerror(rte_errno),
				rte_errno == ENOMEM ? " (reserve more hugepages, or lower memory.mbufs)" : "");
			return -rte_errno;
		}
	}
	return 0;
}

/* Ports, part two: configure and start the queues. */
static int
start_ports(struct dpsock_stack *d)
{
	const struct dpsock_config *c = &d->conf;
	char err[512], caps[512];
	unsigned int i;
	int ret;

	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_iface_conf *ic = &c->ifaces[i];
		struct dpsock_port *p = &d->ports[i];
		uint32_t mtu = ic->mtu;

		if (ic->shared && netdev_mtu(p->caps.if_index) != 0)
			mtu = netdev_mtu(p->caps.if_index);
		ret = dpsock_port_start(p, d->n_workers, (uint16_t)mtu, c->rx_desc, c->tx_desc, p->pool,
					err, sizeof(err));
		if (ret != 0) {
			fprintf(stderr, "%s: %s:%d: interfaces[%u]: %s\n", prog_name,
				c->path[0] ? c->path : "config", ic->line, i, err);
			return ret;
		}
		dpsock_port_caps_describe(p, caps, sizeof(caps));
		DPSOCK_LOG(INFO, pmd, "port %s (id %u), mac " RTE_ETHER_ADDR_PRT_FMT ", mtu %u, "
			   "%u queue pair(s): %s", p->name, p->port_id,
			   RTE_ETHER_ADDR_BYTES(&p->mac), p->mtu, p->n_queues, caps);
		if (p->vlan_tci != 0)
			DPSOCK_LOG(INFO, pmd, "port %s: VLAN %u, priority %u: frames of other VLANs "
				   "and untagged frames are dropped (rx_drop_vlan)", p->name,
				   ic->vlan, ic->vlan_priority);
		dpsock_port_xdp_describe(p, caps, sizeof(caps));
		if (caps[0] != '\0')
			DPSOCK_LOG(NOTICE, pmd, "port %s: %s", p->name, caps);
		DPSOCK_LOG(INFO, pmd, "port %s: active-open steering will use %s", p->name,
			   p->n_queues == 1 ? "nothing (one queue)" :
			   p->caps.flow_5tuple ? "rte_flow 5-tuple rules" :
			   (p->rss_hf && p->caps.rss_key_size && p->caps.reta_size) ?
			   "Toeplitz source-port choice" : "software steering between workers");
	}
	return 0;
}

/* Stop everything that started; returns the number of leaked mbufs. */
static unsigned int
teardown(struct dpsock_stack *d)
{
	unsigned int i, leaked = 0;

	for (i = 0; i < d->n_ports; i++)
		dpsock_port_stop(&d->ports[i]);
	for (i = 0; i < d->n_workers; i++) {
		struct rte_ring *steer = d->workers[i].steer;
		unsigned int late = 0;
		struct rte_mbuf *m;

		/* A worker drains its own ring as it stops, but a worker still
		 * polling may hand it a frame after that: every worker has
		 * stopped now, so what is left goes back here. */
		while (steer != NULL && rte_ring_sc_dequeue(steer, (void **)&m) == 0) {
			rte_pktmbuf_free(m);
			late++;
		}
		if (late != 0)
			DPSOCK_LOG(INFO, main, "worker %u: %u frame(s) handed over after it "
				   "stopped, dropped", i, late);
		rte_ring_free(steer);
	}
	for (i = 0; i < d->n_ports; i++) {
		struct rte_mempool *pool = d->ports[i].pool;
		unsigned int avail;

		if (pool == NULL)
			continue;
		avail = rte_mempool_avail_count(pool);
		if (avail != pool->size) {
			DPSOCK_LOG(ERR, main, "port %s: %u of %u mbufs not returned (leak)",
				   d->ports[i].name, pool->size - avail, pool->size);
			leaked += pool->size - avail;
		} else {
			DPSOCK_LOG(INFO, main, "port %s: all %u mbufs back in the pool",
				   d->ports[i].name, pool->size);
		}
		rte_mempool_free(pool);
		d->ports[i].pool = NULL;
	}
	rte_free(d->workers);
	d->workers = NULL;
	return leaked;
}

static void
control_tasks(struct dpsock_stack *d)
{
	dpsock_capture_control(d);
	dpsock_stats_control(d);
	dpsock_stats_update_ports(d);
	dpsock_mcast_control(d);
}

/* DPSOCK_STATS_FILE (the app's environment, read once): where closed
 * sockets' summaries go; "%d" becomes the pid. */
static void
stats_file_setting(struct dpsock_stack *d)
{
	const char *v = getenv("DPSOCK_STATS_FILE");
	char *pct;

	if (v == NULL || v[0] == '\0')
		return;
	snprintf(d->stats_file_path, sizeof(d->stats_file_path), "%s", v);
	pct = strstr(d->stats_file_path, "%d");
	if (pct != NULL) {
		char rest[sizeof(d->stats_file_path)];

		snprintf(rest, sizeof(rest), "%s", pct + 2);
		snprintf(pct, sizeof(d->stats_file_path) - (pct - d->stats_file_path), "%d%s",
			 (int)getpid(), rest);
	}
	DPSOCK_LOG(INFO, main, "  DPSOCK_STATS_FILE = %s (environment)", d->stats_file_path);
}

/*
 * The -f FILE / --config FILE and --takeover options at argv[*idx], after
 * the "--": the last config's path (NULL: none); *idx moves past them.
 */
static bool takeover_wanted; /* --takeover */
static bool detach_wanted;   /* --detach (with --takeover) */

static const char *
config_args(int argc, char **argv, int *idx)
{
	const char *path = NULL;
	int i = *idx;

	while (i < argc) {
		const char *a = argv[i];

		if (strcmp(a, "--takeover") == 0) {
			takeover_wanted = true;
			i++;
		} else if (strcmp(a, "--detach") == 0) {
			detach_wanted = true;
			i++;
		} else if ((strcmp(a, "-f") == 0 || strcmp(a, "--config") == 0) && i + 1 < argc) {
			path = argv[i + 1];
			i += 2;
		} else if (strncmp(a, "--config=", 9) == 0) {
			path = a + 9;
			i++;
		} else if (strncmp(a, "-f", 2) == 0 && a[2] != '\0') {
			path = a + 2;
			i++;
		} else {
			break;
		}
	}
	*idx = i;
	return path;
}

/*
 * One instance per name on the host. The name owns host-wide things (the
 * stats and capture segments, the control socket, the EAL prefix the
 * tests give it) and a running instance owns its ports: a second start of
 * the name must stop before EAL probes a vdev (an af_packet probe joins
 * the port's fanout group, an AF_XDP queue set-up replaces the XDP
 * program), before any segment or socket. /dev/shm/dpsock.<name>.lock is
 * held with flock() from before EAL until the process ends, and holds the
 * pid; the kernel lets the lock go with a process that dies, so a crash
 * leaves nothing to clean. A clean stop unlinks the file while it still
 * holds the lock; a starter that locked the unlinked file sees that its
 * inode is not the path's any more and opens again. With --takeover, a
 * held name returns 1 (no message): the holder is who we connect to, and
 * hands us its descriptor of the lock with the rest (dpsock_tko_adopt_lock).
 */
static int instance_fd = -1;
static char instance_path[128];

static void
instance_unlock(void)
{
	if (instance_fd < 0)
		return;
	unlink(instance_path);
	close(instance_fd);
	instance_fd = -1;
}

static int
instance_lock(const char *name)
{
	struct stat held, now;
	char buf[32];
	int fd = -1, tries, e;

	snprintf(instance_path, sizeof(instance_path), "/dev/shm/dpsock.%.*s.lock",
		 (int)DPSOCK_NAME_MAX, name);
	for (tries = 0; tries < 16; tries++) {
		fd = open(instance_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog_name, instance_path, strerror(errno));
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			e = errno;
			if (e == EWOULDBLOCK && takeover_wanted) {
				/* the holder: what --takeover connects to */
				close(fd);
				return 1;
			}
			if (e == EWOULDBLOCK) {
				ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
				char comm[64] = "?", path[64];
				int pid;
				FILE *f;

				buf[n > 0 ? n : 0] = '\0';
				pid = atoi(buf);
				snprintf(path, sizeof(path), "/proc/%d/comm", pid);
				f = pid > 0 ? fopen(path, "r") : NULL;
				if (f != NULL) {
					if (fgets(comm, sizeof(comm), f) != NULL)
						comm[strcspn(comm, "\n")] = '\0';
					fclose(f);
				}
				fprintf(stderr, "%s: an instance named '%s' is running (pid %d, %s; it "
					"holds %s): stop it first, or give this one another name "
					"(name = ... in the configuration). Nothing was started: its ports, "
					"programs and segments are untouched.\n",
					prog_name, name, pid, comm, instance_path);
			} else {
				fprintf(stderr, "%s: %s: flock: %s\n", prog_name, instance_path,
					strerror(e));
			}
			close(fd);
			return -1;
		}
		if (fstat(fd, &held) == 0 && stat(instance_path, &now) == 0 &&
		    held.st_ino == now.st_ino && held.st_dev == now.st_dev)
			break;
		/* an instance that stopped unlinked it after we opened it */
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fprintf(stderr, "%s: %s keeps changing under us\n", prog_name, instance_path);
		return -1;
	}
	e = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)e, 0) != e)
		DPSOCK_LOG(WARNING, main, "%s: cannot write the pid: %s", instance_path,
			   strerror(errno));
	instance_fd = fd;
	atexit(instance_unlock);
	return 0;
}

/* A takeover: the holder's descriptor of the lock is ours now (its lock
 * stays taken across the two processes: one open file). */
static void
instance_adopt(struct dpsock_stack *d)
{
	int fd = dpsock_tko_take_fd(d, DPSOCK_TKO_FD_LOCK, 0);
	char buf[32];
	int n;

	if (fd < 0) {
		DPSOCK_LOG(WARNING, main, "takeover: no instance lock in the image");
		return;
	}
	instance_fd = d->lock_fd = fd;
	atexit(instance_unlock);
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		DPSOCK_LOG(WARNING, main, "%s: cannot write the pid: %s", instance_path,
			   strerror(errno));
}

/* The handed-over holder leaves the lock to the new process: its
 * descriptor closes with the process, the file stays. */
static void
instance_forget(void)
{
	instance_fd = -1;
}

/*
 * --detach (with --takeover; systemctl reload runs it): the command
 * returns once the takeover is done (0) or failed (1), and the new
 * process goes on in a session of its own. The parent waits on a pipe
 * the child writes one byte to when it took over; any end of the child
 * before that closes the pipe (1).
 */
static int detach_fd = -1;

static void
detach(void)
{
	int pfd[2];
	pid_t pid;
	char c;

	if (pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, "%s: --detach: pipe: %s\n", prog_name, strerror(errno));
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: --detach: fork: %s\n", prog_name, strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		close(pfd[1]);
		_exit(read(pfd[0], &c, 1) == 1 && c == 0 ? 0 : 1);
	}
	close(pfd[0]);
	setsid();
	detach_fd = pfd[1];
}

/* The takeover is done: the waiting command returns 0. */
static void
detach_report(void)
{
	static const char ok;

	if (detach_fd < 0)
		return;
	if (write(detach_fd, &ok, 1) != 1)
		DPSOCK_LOG(WARNING, main, "--detach: telling the command: %s", strerror(errno));
	close(detach_fd);
	detach_fd = -1;
}

void
dpsock_fini(void)
{
	eal_cleanup();
}

int
dpsock_init(int argc, char **argv)
{
	struct dpsock_stack *d = &stack_state;
	const char *config_path = NULL;
	char **eal_argv, err[512], cmd[1024];
	bool added;
	int i, n, eal_argc = argc, idx;
	size_t off = 0;

	if (argc > 0 && argv[0] != NULL) {
		const char *slash = strrchr(argv[0], '/');

		prog_name = slash ? slash + 1 : argv[0];
	}
	if (early_options(argc, argv)) {
		/* the program prints its help; nothing is started */
		idx = first_app_arg(argc, argv);
		if (argc > 1 && strcmp(argv[1], "--help") == 0)
			idx = 1; /* typed first, without the "--" */
		if (idx > 0)
			argv[idx - 1] = argv[0];
		return idx;
	}
	dpsock_log_init(RTE_LOG_INFO);
	/* the configuration first: its name says whether this instance may
	 * start at all, before EAL touches a port */
	idx = first_app_arg(argc, argv);
	config_path = config_args(argc, argv, &idx);
	if (config_path == NULL) {
		struct stat st;

		if (stat(DEFAULT_CONFIG, &st) != 0) {
			fprintf(stderr, "%s: no configuration: pass -f FILE after the -- "
				"(example: config/dpsock.conf), or install " DEFAULT_CONFIG "\n", prog_name);
			return -1;
		}
		config_path = DEFAULT_CONFIG;
	}
	if (dpsock_config_load(&d->conf, config_path, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", prog_name, err);
		return -1;
	}
	if (detach_wanted && !takeover_wanted) {
		fprintf(stderr, "%s: --detach goes with --takeover (systemctl reload)\n", prog_name);
		return -1;
	}
	if (detach_wanted)
		detach();
	n = instance_lock(d->conf.name);
	if (n < 0)
		return -1;
	d->lock_fd = instance_fd; /* -1 while a takeover waits for the holder's */
	if (takeover_wanted && n == 0) {
		fprintf(stderr, "%s: takeover refused: no running instance named '%s' to take over "
			"(start it without --takeover)\n", prog_name, d->conf.name);
		return -1;
	}
	if (takeover_wanted && dpsock_tko_hello(prog_name, d) != 0)
		return -1;
	if (check_hugepages(argc, argv) != 0)
		return -1;
	eal_argv = eal_default_args(&eal_argc, argv);
	atexit(remove_runtime_dir);
	for (i = 0; i < eal_argc && off < sizeof(cmd); i++)
		off += snprintf(cmd + off, sizeof(cmd) - off, "%s%s", i ? " " : "", eal_argv[i]);
	n = rte_eal_init(eal_argc, eal_argv);
	added = eal_argv != argv;
	if (added)
		free(eal_argv); /* EAL keeps copies of the arguments, not the array */
	if (n < 0) {
		fprintf(stderr, "%s: EAL initialisation failed: %s (see the EAL messages above; "
			"`%s -l 0 -h` lists EAL options)\n", prog_name, rte_strerror(rte_errno), argv[0]);
		return -1;
	}
	/* EAL parsed eal_argv[1..n] (the "--" included, where it put the
	 * program name); eal_argv held one more argument than argv when it got
	 * the added default option. */
	idx = n + 1 - (added ? 1 : 0);
	if (idx > argc)
		idx = argc;
	(void)config_args(argc, argv, &idx); /* loaded above */
	argv[idx - 1] = argv[0];
	dpsock_log_init(d->conf.log_level);
	for (i = 0; i < (int)d->conf.n_log_modules; i++)
		if (dpsock_log_set_module_level(d->conf.log_modules[i].module,
						d->conf.log_modules[i].level) != 0)
			DPSOCK_LOG(WARNING, main, "log.modules.%s: no such module "
				   "(main, pmd, worker, lwip, stats, tcp)", d->conf.log_modules[i].module);
	log_banner(d, cmd);
	stats_file_setting(d);
	d->tsc_hz = rte_get_tsc_hz();
	d->stats_fd = -1;
	if (setup_workers(d) != 0) {
		teardown(d);
		eal_cleanup();
		return -1;
	}
	d->initialised = true;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	return idx;
}

struct dpsock_stack *
dpsock_stack_get(void)
{
	return &stack_state;
}

void
dpsock_stop(void)
{
	__atomic_store_n(&stack_state.quit, 1, __ATOMIC_RELAXED);
}

unsigned int
dpsock_worker_count(void)
{
	return stack_state.n_workers;
}

uint32_t
dpsock_local_addr(void)
{
	return dpsock_iface_addr(0);
}

unsigned int
dpsock_iface_count(void)
{
	return stack_state.conf.n_ifaces;
}

uint32_t
dpsock_iface_addr(unsigned int iface)
{
	const struct dpsock_stack *d = &stack_state;
	/* the caller's worker holds its own view; elsewhere the latest */
	const struct dpsock_netview *v = dpsock_self != NULL && dpsock_self->nv != NULL ?
					 dpsock_self->nv : __atomic_load_n(&d->nv, __ATOMIC_ACQUIRE);

	if (iface >= d->conf.n_ifaces)
		return 0;
	return v != NULL ? dpsock_netview_port_addr(v, iface) : d->conf.ifaces[iface].addr;
}

/*
 * Handed over (takeover/): the workers left their loops without tearing
 * anything down and the app's control thread returned without closing a
 * connection. What the programs share (group segments, the wake page, the
 * control and takeover sockets, the stats and capture names, the instance
 * lock) is the new process's: nothing of it is unlinked or told to stop.
 * Only this process's own memory goes (EAL's, with the process).
 */
static int
handed_exit(struct dpsock_stack *d)
{
	dpsock_tko_unlisten(d);
	dpsock_kfollow_stop(d);
	rte_eal_mp_wait_lcore();
	instance_forget();
	DPSOCK_LOG(NOTICE, main, "stopped (handed over)");
	eal_cleanup();
	return 0;
}

int
dpsock_run(const struct dpsock_app *app, void *arg)
{
	struct dpsock_stack *d = &stack_state;
	char err[512];
	unsigned int i;
	int ret, exit_code = 0;
	uint64_t next_control;
	bool main_started = false, need_fini = false;

	if (!d->initialised) {
		fprintf(stderr, "%s: dpsock_run before a successful dpsock_init\n", prog_name);
		return 1;
	}
	d->app = app;
	d->app_arg = arg;
	if (setup_ports(d) != 0 || (!dpsock_tko_taking(d) && start_ports(d) != 0)) {
		exit_code = 1;
		goto out;
	}
	if (dpsock_tko_taking(d)) {
		const char *fault = getenv("DPSOCK_TAKEOVER_FAULT");

		/* the holder freezes, writes its state and lets its ports go */
		if (dpsock_tko_receive(d) != 0) {
			exit_code = 1;
			goto out;
		}
		/* tests: a new process that dies with the image in hand */
		if (fault != NULL && strcmp(fault, "die-after-image") == 0) {
			fprintf(stderr, "%s: DPSOCK_TAKEOVER_FAULT=die-after-image: exiting\n",
				prog_name);
			_exit(9);
		}
		instance_adopt(d);
		if (start_ports(d) != 0) {
			exit_code = 1;
			goto out;
		}
		dpsock_tko_mark(d, "ports started");
	}
	if (d->any_shared && d->conf.ephemeral_min == 32768 && d->conf.ephemeral_max == 60999) {
		/* the default range is the kernel's own (net.ipv4.ip_local_port_range):
		 * on a shared port dpsock's is reserved in the kernel, so take
		 * its upper part and leave the kernel 32768-49151 */
		d->conf.ephemeral_min = 49152;
		DPSOCK_LOG(NOTICE, main, "a port is shared with the kernel: dpsock's ephemeral "
			   "ports are 49152-60999 (tcp.ephemeral_min/max to choose others)");
	}
	if (dpsock_steer_setup(d) != 0) {
		exit_code = 1;
		goto out;
	}
	/* addresses, routes, neighbours: the configuration's, and the kernel's
	 * for the ports shared with it (read before any worker starts) */
	if (d->any_shared && (ret = dpsock_kfollow_start(d, err, sizeof(err))) != 0) {
		fprintf(stderr, "%s: %s\n", prog_name, err);
		exit_code = 1;
		goto out;
	}
	if (dpsock_netview_init(d) != 0) {
		fprintf(stderr, "%s: no memory for the net view\n", prog_name);
		exit_code = 1;
		goto out;
	}
	/* a shared port steers only dpsock's flows to dpsock; a takeover's new
	 * process goes on with the holder's XDP programs, attached all along */
	{
		int handed[DPSOCK_MAX_PORTS][DPSOCK_XDPF_FDS];
		bool any = false;

		for (unsigned int p = 0; p < DPSOCK_MAX_PORTS; p++)
			for (unsigned int k = 0; k < DPSOCK_XDPF_FDS; k++) {
				handed[p][k] = dpsock_tko_take_fd(d, DPSOCK_TKO_FD_XDP,
								  p * DPSOCK_XDPF_FDS + k);
				any |= handed[p][k] >= 0;
			}
		ret = dpsock_filter_init(d, any ? (const int (*)[DPSOCK_XDPF_FDS])handed : NULL, err,
					 sizeof(err));
	}
	if (ret != 0) {
		fprintf(stderr, "%s: %s\n", prog_name, err);
		exit_code = 1;
		goto out;
	}
	ret = dpsock_stats_create(d, err, sizeof(err));
	if (ret != 0) {
		fprintf(stderr, "%s: %s\n", prog_name, err);
		exit_code = 1;
		goto out;
	}
	for (i = 0; i < d->n_workers; i++)
		d->workers[i].stats = &d->stats->workers[i];
	dpsock_tko_mark(d, "stats segment made");
	ret = dpsock_capture_init(d, dpsock_tko_taking(d), err, sizeof(err));
	if (ret != 0) {
		fprintf(stderr, "%s: %s\n", prog_name, err);
		exit_code = 1;
		goto out;
	}
	ret = dpsock_mcast_init(d);
	if (ret != 0) {
		fprintf(stderr, "%s: multicast registry: %s\n", prog_name, strerror(-ret));
		exit_code = 1;
		goto out;
	}
	dpsock_tko_mark(d, "capture and multicast set up");
	ret = dpsock_stats_telemetry_register(d);
	if (ret != 0)
		DPSOCK_LOG(WARNING, stats, "telemetry commands /dpsock/*: %s", strerror(-ret));
	if (app != NULL && app->main_init != NULL) {
		ret = app->main_init(arg);
		if (ret != 0) {
			fprintf(stderr, "%s: %s: set-up: %s\n", prog_name,
				app->name ? app->name : "app", strerror(ret < 0 ? -ret : ret));
			exit_code = 1;
			goto stop;
		}
		need_fini = true;
	}
	dpsock_tko_mark(d, "control side restored");
	/* a takeover: the workers restore, then wait until it is committed */
	__atomic_store_n(&d->tko_gate, dpsock_tko_taking(d) ? 1 : 0, __ATOMIC_RELEASE);

	for (i = 0; i < d->n_workers; i++) {
		struct dpsock_worker *w = &d->workers[i];

		if ((int)i == d->main_worker)
			continue;
		ret = rte_eal_remote_launch(dpsock_worker_main, w, w->lcore_id);
		if (ret != 0) {
			fprintf(stderr, "%s: cannot launch worker %u on lcore %u: %s\n", prog_name, i,
				w->lcore_id, rte_strerror(-ret));
			__atomic_store_n(&d->quit, 1, __ATOMIC_RELAXED);
			exit_code = 1;
			goto stop;
		}
	}
	if (d->main_worker >= 0) {
		struct dpsock_worker *w = &d->workers[d->main_worker];

		w->init_ret = dpsock_worker_init(w);
		__atomic_store_n(&w->init_done, 1, __ATOMIC_RELEASE);
	}
	for (i = 0; i < d->n_workers; i++) {
		struct dpsock_worker *w = &d->workers[i];

		/* acquire: pairs with the worker's release store of init_done */
		while (!__atomic_load_n(&w->init_done, __ATOMIC_ACQUIRE))
			rte_delay_us_sleep(1000);
		if (w->init_ret != 0) {
			fprintf(stderr, "%s: worker %u (lcore %u) failed to start: %s\n", prog_name, i,
				w->lcore_id, strerror(-w->init_ret));
			exit_code = 1;
		}
	}
	if (exit_code != 0) {
		__atomic_store_n(&d->quit, 1, __ATOMIC_RELAXED);
		goto stop;
	}
	dpsock_tko_mark(d, "workers restored");
	/* A takeover's commit: until the holder is told, this process has
	 * changed nothing the programs or the peers see (its workers wait at
	 * the gate, the app's control thread is not started), so that a
	 * holder told nothing can resume. From here on it is this process's. */
	if (dpsock_tko_taking(d)) {
		dpsock_tko_done(d);
		/* release: the workers' acquire load of the gate */
		__atomic_store_n(&d->tko_gate, 0, __ATOMIC_RELEASE);
	}
	if (app != NULL && app->main_start != NULL) {
		ret = app->main_start(arg);
		if (ret != 0) {
			fprintf(stderr, "%s: %s: start: %s\n", prog_name, app->name ? app->name : "app",
				strerror(ret < 0 ? -ret : ret));
			exit_code = 1;
			__atomic_store_n(&d->quit, 1, __ATOMIC_RELAXED);
			goto stop;
		}
		main_started = true;
		need_fini = true;
	}

	for (i = 0; i < d->n_workers; i++)
		DPSOCK_LOG(INFO, main, "worker %u on lcore %u, queue %u%s", i, d->workers[i].lcore_id,
			   d->workers[i].queue, (int)i == d->main_worker ? " (main lcore)" : "");
	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_iface_conf *ic = &d->conf.ifaces[i];
		struct in_addr a = { .s_addr = ic->addr };

		if (!ic->shared)
			DPSOCK_LOG(NOTICE, main, "serving %s/%u on %s", inet_ntoa(a), ic->prefix_len,
				   d->ports[i].name);
	}
	/* from now on the kernel's changes reach the workers */
	ret = dpsock_kfollow_run(d);
	if (ret != 0) {
		fprintf(stderr, "%s: cannot start the kernel follower: %s\n", prog_name,
			strerror(-ret));
		exit_code = 1;
		__atomic_store_n(&d->quit, 1, __ATOMIC_RELAXED);
		goto stop;
	}
	for (i = 0; i < d->conf.n_routes; i++) {
		const struct dpsock_route_conf *r = &d->conf.routes[i];
		char dst[INET_ADDRSTRLEN], gw[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &r->dest, dst, sizeof(dst));
		inet_ntop(AF_INET, &r->gateway, gw, sizeof(gw));
		DPSOCK_LOG(NOTICE, main, "route %s/%u via %s on %s", dst, r->prefix_len, gw,
			   d->ports[r->iface].name);
	}
	control_tasks(d);
	/* release: the segment's contents are complete before readers see it run */
	__atomic_store_n(&d->stats->running, 1, __ATOMIC_RELEASE);
	DPSOCK_LOG(NOTICE, main, "ready: %u worker(s)%s%s; stats in /dev/shm%s (dpsock-stat -n %s)",
		   d->n_workers, app && app->name ? ", app " : "", app && app->name ? app->name : "",
		   d->stats_shm, d->conf.name);
	detach_report();
	/* from now on this instance can hand over in turn */
	ret = dpsock_tko_listen(d);
	if (ret != 0)
		DPSOCK_LOG(WARNING, main, "takeovers cannot be served: %s", strerror(-ret));

	next_control = rte_rdtsc();
	while (!__atomic_load_n(&d->quit, __ATOMIC_RELAXED)) {
		uint64_t now = rte_rdtsc();

		if (now >= next_control) {
			control_tasks(d);
			next_control = now + d->tsc_hz / (1000000 / CONTROL_INTERVAL_US);
		}
		if (d->main_worker >= 0) {
			struct dpsock_worker *w = &d->workers[d->main_worker];
			uint64_t until = next_control > now ? next_control - now : 0;

			if (unlikely(dpsock_tko_freezing(&d->tko_phase))) {
				if (dpsock_tko_worker_freeze(w))
					break;
				continue;
			}
			dpsock_worker_idle(w, dpsock_worker_poll(w),
					   (uint32_t)(until * 1000000 / d->tsc_hz) + 1);
		} else {
			rte_delay_us_sleep(CONTROL_INTERVAL_US);
		}
	}
	if (dpsock_tko_handed(d))
		return handed_exit(d);
	DPSOCK_LOG(NOTICE, main, "stopping");

stop:
	if (dpsock_tko_taking(d))
		dpsock_tko_abort(d, "the new process could not start (see its log)");
	dpsock_tko_unlisten(d);
	__atomic_store_n(&d->quit, 1, __ATOMIC_RELAXED);
	dpsock_kfollow_stop(d);
	if (main_started && app->main_stop != NULL)
		app->main_stop(arg);
	for (i = 0; i < d->n_workers; i++)
		if ((int)i != d->main_worker)
			dpsock_worker_wake(&d->workers[i]);
	rte_eal_mp_wait_lcore();
	if (d->main_worker >= 0 && d->workers[d->main_worker].init_done)
		dpsock_worker_fini(&d->workers[d->main_worker]);
	if (need_fini && app->main_fini != NULL)
		app->main_fini(arg);
	if (d->stats != NULL)
		control_tasks(d);
out:
	if (dpsock_tko_taking(d))
		dpsock_tko_abort(d, "the new process could not start (see its log)");
	dpsock_tko_release(d);
	dpsock_kfollow_stop(d);
	dpsock_filter_fini(d);
	dpsock_netview_fini(d);
	dpsock_mcast_fini(d);
	dpsock_steer_teardown(d);
	if (d->workers != NULL || d->n_ports > 0) {
		unsigned int leaked = teardown(d);

		if (leaked != 0 && exit_code == 0)
			exit_code = 3;
	}
	dpsock_capture_fini(d);
	dpsock_stats_destroy(d);
	DPSOCK_LOG(NOTICE, main, "stopped%s", exit_code == 3 ? " (mbuf leak)" : "");
	eal_cleanup();
	return exit_code;
}
