/* SPDX-License-Identifier: BSD-3-Clause */
/* The stats segment in /dev/shm, its control requests and its telemetry
 * commands; see stats_segment.h. */

#include <errno.h>
#include <net/if.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

#include <rte_ethdev.h>
#include <rte_pause.h>
#include <rte_telemetry.h>

#include "dpsock_build_config.h"
#include "core/config_priv.h"

#include "core/stack_priv.h"
#include "instance_priv.h"
#include "takeover/takeover.h"
#include "sharing/filter_priv.h"
#include "netview/netview_priv.h"
#include "core/log_priv.h"

_Static_assert(DPSOCK_STATS_MAX_PORTS >= DPSOCK_MAX_PORTS, "stats segment too small for ports");
_Static_assert(DPSOCK_STATS_MAX_WORKERS >= DPSOCK_MAX_WORKERS, "stats segment too small for workers");

/* Is a segment left by a daemon that is gone? */
static bool
segment_stale(int fd)
{
	struct dpsock_stats_segment hdr;

	if (pread(fd, &hdr, sizeof(hdr.magic) + sizeof(hdr.version) + sizeof(hdr.size) +
			    sizeof(hdr.pid), 0) <= 0)
		return true;
	return hdr.magic != DPSOCK_STATS_MAGIC || hdr.pid <= 0 ||
	       (kill(hdr.pid, 0) != 0 && errno == ESRCH);
}

/* The segment's size for this configuration; sets sock_off. */
static size_t
segment_size(const struct dpsock_stack *d, uint32_t slots, uint64_t *sock_off)
{
	*sock_off = RTE_ALIGN_CEIL(sizeof(struct dpsock_stats_segment), 64);
	return *sock_off + (size_t)d->n_workers * slots * sizeof(struct dpsock_sock_stats);
}

int
dpsock_stats_create(struct dpsock_stack *d, char *err, size_t errlen)
{
	struct dpsock_stats_segment *s;
	struct timespec now;
	uint64_t sock_off;
	size_t size;
	unsigned int i;
	int fd;

	size = segment_size(d, d->conf.socket_slots, &sock_off);
	if (size > UINT32_MAX) {
		snprintf(err, errlen, "stats.socket_slots = %u: the socket table of %u workers "
			 "would not fit in 4 GiB", d->conf.socket_slots, d->n_workers);
		return -EINVAL;
	}
	snprintf(d->stats_shm, sizeof(d->stats_shm), DPSOCK_STATS_SHM_FMT, d->conf.name);
	/* a takeover: the name is the holder's until the hand-over is done
	 * (it may yet resume); this segment waits under a name of its own
	 * and takes the name then (dpsock_tko_names_commit) */
	if (dpsock_tko_taking(d)) {
		strncat(d->stats_shm, DPSOCK_TKO_SHM_SUFFIX,
			sizeof(d->stats_shm) - strlen(d->stats_shm) - 1);
		shm_unlink(d->stats_shm);
	}
	fd = shm_open(d->stats_shm, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 && errno == EEXIST) {
		fd = shm_open(d->stats_shm, O_RDWR, 0644);
		if (fd >= 0 && !segment_stale(fd)) {
			struct dpsock_stats_segment hdr;

			if (pread(fd, &hdr, offsetof(struct dpsock_stats_segment, name), 0) < 0)
				hdr.pid = 0;
			close(fd);
			snprintf(err, errlen, "an instance called '%s' already runs (pid %d); "
				 "give this one another name (name = ... in the config)",
				 d->conf.name, (int)hdr.pid);
			return -EEXIST;
		}
		if (fd >= 0) {
			DPSOCK_LOG(NOTICE, stats, "taking over stale /dev/shm%s", d->stats_shm);
			/* start from zeros: the old socket table must not show */
			if (ftruncate(fd, 0) != 0)
				DPSOCK_LOG(WARNING, stats, "ftruncate(/dev/shm%s): %s", d->stats_shm,
					   strerror(errno));
		}
	}
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "shm_open(%s): %s", d->stats_shm, strerror(e));
		return -e;
	}
	/* a new tmpfs file reads as zeros; pages are only allocated when
	 * written, so an unused socket table costs nothing */
	if (ftruncate(fd, size) != 0) {
		int e = errno;

		close(fd);
		shm_unlink(d->stats_shm);
		snprintf(err, errlen, "ftruncate(/dev/shm%s): %s", d->stats_shm, strerror(e));
		return -e;
	}
	s = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		int e = errno;

		close(fd);
		shm_unlink(d->stats_shm);
		snprintf(err, errlen, "mmap(/dev/shm%s): %s", d->stats_shm, strerror(e));
		return -e;
	}
	memset(s, 0, sizeof(*s));
	s->version = DPSOCK_STATS_VERSION;
	s->size = (uint32_t)size;
	s->hdr_size = sizeof(*s);
	s->sock_slots = d->conf.socket_slots;
	s->sock_off = sock_off;
	s->pid = getpid();
	s->n_ports = d->n_ports;
	s->n_workers = d->n_workers;
	clock_gettime(CLOCK_REALTIME, &now);
	s->start_time_ns = (uint64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	snprintf(s->name, sizeof(s->name), "%s", d->conf.name);
	snprintf(s->app, sizeof(s->app), "%s",
		 d->app != NULL && d->app->name != NULL ? d->app->name : "dpsockd");
	for (i = 0; i < d->n_ports; i++)
		snprintf(s->port_names[i], sizeof(s->port_names[i]), "%s", d->ports[i].name);
	for (i = 0; i < d->n_workers; i++)
		s->workers[i].lcore_id = d->workers[i].lcore_id;
	/* release: readers check magic first; everything above is visible
	 * once they see it */
	__atomic_store_n(&s->magic, DPSOCK_STATS_MAGIC, __ATOMIC_RELEASE);
	d->stats = s;
	d->stats_fd = fd;
	if (d->stats_file_path[0] != '\0') {
		d->stats_file = fopen(d->stats_file_path, "a");
		if (d->stats_file == NULL) {
			DPSOCK_LOG(WARNING, stats, "DPSOCK_STATS_FILE=%s: %s; no socket summaries",
				   d->stats_file_path, strerror(errno));
		} else {
			char hdr[256];

			setvbuf(d->stats_file, NULL, _IOLBF, 0);
			dpsock_sock_format_header(hdr, sizeof(hdr));
			fprintf(d->stats_file, "# %s[%d] (%s): sockets as they close\n%s\n", s->app,
				(int)s->pid, s->name, hdr);
		}
	}
	return 0;
}

#define PORT_FROM_ETH(X)                                                        \
	X(rx_packets, ipackets) X(rx_bytes, ibytes) X(tx_packets, opackets)     \
	X(tx_bytes, obytes) X(rx_missed, imissed) X(rx_errors, ierrors)         \
	X(tx_errors, oerrors) X(rx_nombuf, rx_nombuf)
/* the port counters an af_xdp port's sockets give (struct dpsock_port_xdp_stats) */
#define PORT_FROM_XDP(X)                                                        \
	X(xdp_rx_ring_full) X(xdp_fill_empty) X(xdp_rx_invalid) X(xdp_tx_invalid) \
	X(xdp_tx_ring_empty)
/* the shared-port filter's counters (filter.c): struct dpsock_xdpf_stats */
#define PORT_FROM_FILTER(X)                                                     \
	X(filter_redirected, redirected) X(filter_passed, passed) X(filter_frags, frags) \
	X(filter_no_socket, no_socket)

/* A port's mode and addresses, from the net view (gen seqlock). */
static void
port_info_update(struct dpsock_stack *d, unsigned int i, const struct dpsock_netview *v)
{
	struct dpsock_port_info *pi = &d->stats->port_info[i];
	const struct dpsock_nv_port *vp = &v->ports[i];
	uint32_t gen = pi->gen;
	uint8_t n = 0;

	__atomic_store_n(&pi->gen, gen + 1, __ATOMIC_RELAXED);
	/* release fence: the odd gen before the fields (the reader's acquire) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	pi->shared = vp->shared;
	pi->up = vp->up;
	pi->mtu = vp->mtu;
	pi->ifindex = vp->ifindex;
	if (vp->ifindex == 0 || if_indextoname(vp->ifindex, pi->ifname) == NULL)
		pi->ifname[0] = '\0';
	for (unsigned int j = 0; j < v->n_addrs && n < DPSOCK_STATS_PORT_ADDRS; j++)
		if (v->addrs[j].port == i && v->addrs[j].addr != 0) {
			pi->addrs[n] = v->addrs[j].addr;
			pi->prefix_len[n++] = v->addrs[j].prefix_len;
		}
	pi->n_addrs = n;
	n = 0;
	for (unsigned int j = 0; j < v->n_addrs6 && n < DPSOCK_STATS_PORT_ADDRS6; j++)
		if (v->addrs6[j].port == i) {
			memcpy(pi->addrs6[n], v->addrs6[j].addr, 16);
			pi->prefix6_len[n++] = v->addrs6[j].prefix_len;
		}
	pi->n_addrs6 = n;
	__atomic_store_n(&pi->gen, gen + 2, __ATOMIC_RELEASE);
}

void
dpsock_stats_update_ports(struct dpsock_stack *d)
{
	unsigned int i;

	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_port *p = &d->ports[i];
		struct dpsock_port_stats *ps = &d->stats->ports[i];
		const struct dpsock_port_stats *base = &d->port_base[i];
		struct dpsock_port_xdp_stats xs;
		struct rte_eth_stats es;

		if (p->started) {
			struct rte_eth_link link;

			memset(&link, 0, sizeof(link));
			if (rte_eth_link_get_nowait(p->port_id, &link) == 0 &&
			    link.link_status != dpsock_stat_read(&ps->link_up)) {
				char text[RTE_ETH_LINK_MAX_STR_LEN];

				rte_eth_link_to_str(text, sizeof(text), &link);
				DPSOCK_LOG(NOTICE, pmd, "port %s: %s", p->name, text);
				dpsock_stat_set(&ps->link_up, link.link_status);
				dpsock_stat_set(&ps->link_speed_mbps,
						link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 :
						link.link_speed);
			}
		}
		if (p->started && dpsock_port_stats_get(p, &es) == 0) {
#define PORT_SET(f, e) dpsock_stat_set(&ps->f, es.e - base->f);
			PORT_FROM_ETH(PORT_SET)
#undef PORT_SET
		}
		if (p->started && dpsock_port_xdp_stats_get(p, &xs) == 0) {
#define PORT_SET(f) dpsock_stat_set(&ps->f, xs.f - base->f);
			PORT_FROM_XDP(PORT_SET)
#undef PORT_SET
		}
		if (p->shared) {
			struct dpsock_xdpf_stats fs;

			dpsock_filter_port_stats(d, i, &fs);
#define PORT_SET(f, e) dpsock_stat_set(&ps->f, fs.e - base->f);
			PORT_FROM_FILTER(PORT_SET)
#undef PORT_SET
		}
		if (d->nv != NULL)
			port_info_update(d, i, __atomic_load_n(&d->nv, __ATOMIC_ACQUIRE));
		if (p->pool != NULL) {
			dpsock_stat_set(&ps->mbufs_free, rte_mempool_avail_count(p->pool));
			dpsock_stat_set(&ps->mbufs_total, p->pool->size);
		}
	}
}

/* ---- requests from dpsock-stat ------------------------------------------ */

#define LOG_MODULE_ENTRY(m) { #m, &dpsock_logtype_##m },
static const struct {
	const char *name;
	int *type;
} log_modules[] = { DPSOCK_LOG_MODULES(LOG_MODULE_ENTRY) };

static int
log_module_find(const char *name)
{
	unsigned int i;

	if (strncmp(name, "dpsock.", 7) == 0)
		name += 7;
	for (i = 0; i < RTE_DIM(log_modules); i++)
		if (strcmp(name, log_modules[i].name) == 0)
			return (int)i;
	return -1;
}

/*
 * Apply "module=level[,module=level...]" (module "all": every one). Every
 * pair is checked before any is applied. Returns 0 or -errno; msg says
 * what was done or what was wrong.
 */
static int
log_apply(const char *spec, char *msg, size_t len)
{
	struct { int mod; int level; } set[16];
	char buf[sizeof(((struct dpsock_stats_ctl *)0)->log_spec)], *save = NULL, *tok;
	unsigned int n = 0, i, k;
	size_t off = 0;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ", ", &save); tok != NULL; tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '=');
		int mod, level;

		if (eq == NULL || n == RTE_DIM(set)) {
			snprintf(msg, len, "'%s': expected module=level", tok);
			return -EINVAL;
		}
		*eq = '\0';
		mod = strcmp(tok, "all") == 0 ? -2 : log_module_find(tok);
		if (mod == -1) {
			off = snprintf(msg, len, "unknown log module '%s' (known: all", tok);
			for (i = 0; i < RTE_DIM(log_modules) && off < len; i++)
				off += snprintf(msg + off, len - off, ", %s", log_modules[i].name);
			if (off < len)
				snprintf(msg + off, len - off, ")");
			return -ENOENT;
		}
		level = dpsock_log_level_parse(eq + 1);
		if (level < 0) {
			snprintf(msg, len, "'%s': not a log level (error, warning, notice, info, "
				 "debug, or 1..8)", eq + 1);
			return -EINVAL;
		}
		set[n].mod = mod;
		set[n].level = level;
		n++;
	}
	if (n == 0) {
		snprintf(msg, len, "empty request (module=level)");
		return -EINVAL;
	}
	msg[0] = '\0';
	for (k = 0; k < n; k++)
		for (i = 0; i < RTE_DIM(log_modules); i++) {
			if (set[k].mod != -2 && set[k].mod != (int)i)
				continue;
			rte_log_set_level(*log_modules[i].type, set[k].level);
			DPSOCK_LOG(NOTICE, stats, "log level of dpsock.%s set to %s (dpsock-stat)",
				   log_modules[i].name, dpsock_log_level_name(set[k].level));
			if (off < len)
				off += snprintf(msg + off, len - off, "%sdpsock.%s=%s", off ? " " : "",
						log_modules[i].name,
						dpsock_log_level_name(set[k].level));
		}
	return 0;
}

void
dpsock_stats_control(struct dpsock_stack *d)
{
	struct dpsock_stats_ctl *ctl = &d->stats->ctl;
	uint64_t req;

	/* acquire: pairs with the tool's release store of zero_req / log_req
	 * (the spec it wrote before is visible) */
	req = __atomic_load_n(&ctl->zero_req, __ATOMIC_ACQUIRE);
	if (req != __atomic_load_n(&ctl->zero_ack_ports, __ATOMIC_RELAXED)) {
		unsigned int i;

		for (i = 0; i < d->n_ports; i++) {
			struct dpsock_port_xdp_stats xs;
			struct rte_eth_stats es;

			if (d->ports[i].started && dpsock_port_stats_get(&d->ports[i], &es) == 0) {
#define PORT_BASE(f, e) d->port_base[i].f = es.e;
				PORT_FROM_ETH(PORT_BASE)
#undef PORT_BASE
			}
			if (d->ports[i].started && dpsock_port_xdp_stats_get(&d->ports[i], &xs) == 0) {
#define PORT_BASE(f) d->port_base[i].f = xs.f;
				PORT_FROM_XDP(PORT_BASE)
#undef PORT_BASE
			}
			if (d->ports[i].shared) {
				struct dpsock_xdpf_stats fs;

				dpsock_filter_port_stats(d, i, &fs);
#define PORT_BASE(f, e) d->port_base[i].f = fs.e;
				PORT_FROM_FILTER(PORT_BASE)
#undef PORT_BASE
			}
		}
		dpsock_stats_update_ports(d);
		DPSOCK_LOG(INFO, stats, "counters zeroed (dpsock-stat -z)");
		/* release: the zeroed counters are visible before the ack */
		__atomic_store_n(&ctl->zero_ack_ports, req, __ATOMIC_RELEASE);
	}
	req = __atomic_load_n(&ctl->log_req, __ATOMIC_ACQUIRE);
	if (req != __atomic_load_n(&ctl->log_ack, __ATOMIC_RELAXED)) {
		char spec[sizeof(ctl->log_spec)];

		memcpy(spec, ctl->log_spec, sizeof(spec));
		spec[sizeof(spec) - 1] = '\0';
		ctl->log_status = log_apply(spec, ctl->log_msg, sizeof(ctl->log_msg));
		if (ctl->log_status != 0)
			DPSOCK_LOG(NOTICE, stats, "log level request '%s' refused: %s", spec,
				   ctl->log_msg);
		/* release: status and message are visible before the ack */
		__atomic_store_n(&ctl->log_ack, req, __ATOMIC_RELEASE);
	}
}

/* ---- DPDK telemetry ----------------------------------------------------------- */

/* The telemetry thread reads the segment through tel_seg; destroy waits
 * for the callbacks in flight before it unmaps. */
static struct dpsock_stats_segment *tel_seg;
static uint32_t tel_busy;

static const struct dpsock_stats_segment *
tel_enter(void)
{
	const struct dpsock_stats_segment *s;

	__atomic_fetch_add(&tel_busy, 1, __ATOMIC_SEQ_CST);
	s = __atomic_load_n(&tel_seg, __ATOMIC_SEQ_CST);
	if (s == NULL)
		__atomic_fetch_sub(&tel_busy, 1, __ATOMIC_SEQ_CST);
	return s;
}

static void
tel_leave(void)
{
	__atomic_fetch_sub(&tel_busy, 1, __ATOMIC_RELEASE);
}

static void
tel_block(struct rte_tel_data *t, const void *blk, const struct dpsock_stat_desc *desc,
	  unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rte_tel_data_add_dict_u64(t, desc[i].name, dpsock_stat_at(blk, &desc[i]));
}

/* params: "" (all) or an index; returns the range [*lo, *hi) or -EINVAL */
static int
tel_range(const char *params, unsigned int n, unsigned int *lo, unsigned int *hi)
{
	char *end;
	unsigned long v;

	*lo = 0;
	*hi = n;
	if (params == NULL || params[0] == '\0')
		return 0;
	v = strtoul(params, &end, 10);
	if (*end != '\0' || v >= n)
		return -EINVAL;
	*lo = v;
	*hi = v + 1;
	return 0;
}

static int
tel_blocks(const char *params, struct rte_tel_data *t, bool ports)
{
	const struct dpsock_stats_segment *s = tel_enter();
	unsigned int lo, hi, i;
	int ret = 0;

	if (s == NULL)
		return -ENODEV;
	if (tel_range(params, ports ? s->n_ports : s->n_workers, &lo, &hi) != 0) {
		tel_leave();
		return -EINVAL;
	}
	rte_tel_data_start_dict(t);
	for (i = lo; i < hi; i++) {
		struct rte_tel_data *c = hi - lo > 1 ? rte_tel_data_alloc() : t;
		char key[16];

		if (c == NULL) {
			ret = -ENOMEM;
			break;
		}
		if (c != t)
			rte_tel_data_start_dict(c);
		if (ports) {
			rte_tel_data_add_dict_string(c, "name", s->port_names[i]);
			tel_block(c, &s->ports[i], dpsock_port_stat_desc, dpsock_port_stat_count);
		} else {
			rte_tel_data_add_dict_u64(c, "lcore", s->workers[i].lcore_id);
			tel_block(c, &s->workers[i], dpsock_worker_stat_desc,
				  dpsock_worker_stat_count);
		}
		if (c != t) {
			snprintf(key, sizeof(key), "%u", i);
			rte_tel_data_add_dict_container(t, key, c, 0);
		}
	}
	tel_leave();
	return ret;
}

static int
tel_ports(const char *cmd, const char *params, struct rte_tel_data *t)
{
	return tel_blocks(params, t, true);
}

static int
tel_workers(const char *cmd, const char *params, struct rte_tel_data *t)
{
	return tel_blocks(params, t, false);
}

static int
tel_sockets(const char *cmd, const char *params, struct rte_tel_data *t)
{
	const struct dpsock_stats_segment *s = tel_enter();
	unsigned int lo, hi, w, n = 0, more = 0;
	uint32_t i;

	if (s == NULL)
		return -ENODEV;
	if (tel_range(params, s->n_workers, &lo, &hi) != 0) {
		tel_leave();
		return -EINVAL;
	}
	rte_tel_data_start_dict(t);
	for (w = lo; w < hi; w++) {
		const struct dpsock_sock_stats *tab = dpsock_stats_socks(s, w);

		for (i = 0; i < s->sock_slots; i++) {
			struct dpsock_sock_stats e;
			struct rte_tel_data *c;
			char key[24], a[56];

			if (!__atomic_load_n(&tab[i].in_use, __ATOMIC_RELAXED) ||
			    !dpsock_sockstat_read(&tab[i], &e) || !e.in_use)
				continue;
			/* a dict holds RTE_TEL_MAX_DICT_ENTRIES; keep one for "more" */
			if (n + 1 >= RTE_TEL_MAX_DICT_ENTRIES || (c = rte_tel_data_alloc()) == NULL) {
				more++;
				continue;
			}
			rte_tel_data_start_dict(c);
			rte_tel_data_add_dict_string(c, "proto", e.proto == IPPROTO_TCP ? "tcp" : "udp");
			rte_tel_data_add_dict_string(c, "state", dpsock_sock_state_name(e.state));
			rte_tel_data_add_dict_string(c, "local",
						     dpsock_sock_fmt_end(a, sizeof(a), &e, false));
			rte_tel_data_add_dict_string(c, "remote",
						     dpsock_sock_fmt_end(a, sizeof(a), &e, true));
			rte_tel_data_add_dict_u64(c, "worker", e.worker);
			rte_tel_data_add_dict_int(c, "owner_pid", e.owner_pid);
			rte_tel_data_add_dict_int(c, "fd", e.fd);
			tel_block(c, &e, dpsock_sock_stat_desc, dpsock_sock_stat_count);
			/* telemetry names: [A-Za-z0-9_/] */
			snprintf(key, sizeof(key), "%u_%u", w, i);
			rte_tel_data_add_dict_container(t, key, c, 0);
			n++;
		}
	}
	if (more)
		rte_tel_data_add_dict_u64(t, "more", more);
	tel_leave();
	return 0;
}

static int
tel_info(const char *cmd, const char *params, struct rte_tel_data *t)
{
	const struct dpsock_stats_segment *s = tel_enter();
	unsigned int i;

	if (s == NULL)
		return -ENODEV;
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "name", s->name);
	rte_tel_data_add_dict_string(t, "app", s->app);
	rte_tel_data_add_dict_string(t, "version", DPSOCK_VERSION);
	rte_tel_data_add_dict_int(t, "pid", s->pid);
	rte_tel_data_add_dict_u64(t, "ports", s->n_ports);
	rte_tel_data_add_dict_u64(t, "workers", s->n_workers);
	rte_tel_data_add_dict_u64(t, "socket_slots", s->sock_slots);
	rte_tel_data_add_dict_u64(t, "clients", s->n_clients);
	for (i = 0; i < RTE_DIM(log_modules); i++) {
		char key[32];

		snprintf(key, sizeof(key), "log_%s", log_modules[i].name);
		rte_tel_data_add_dict_string(t, key,
			dpsock_log_level_name(rte_log_get_level(*log_modules[i].type)));
	}
	tel_leave();
	return 0;
}

int
dpsock_stats_telemetry_register(struct dpsock_stack *d)
{
	static const struct {
		const char *cmd;
		telemetry_cb fn;
		const char *help;
	} cmds[] = {
		{ "/dpsock/info", tel_info,
		  "dpsock instance: name, app, pid, version, ports, workers, log levels. No parameters" },
		{ "/dpsock/ports", tel_ports,
		  "dpsock port counters (as dpsock-stat). Parameter: port index (default: all)" },
		{ "/dpsock/workers", tel_workers,
		  "dpsock worker counters (as dpsock-stat). Parameter: worker index (default: all)" },
		{ "/dpsock/sockets", tel_sockets,
		  "dpsock sockets (at most 255). Parameter: worker index (default: all)" },
	};
	unsigned int i;
	int ret = 0;

	__atomic_store_n(&tel_seg, d->stats, __ATOMIC_SEQ_CST);
	for (i = 0; i < RTE_DIM(cmds); i++) {
		int r = rte_telemetry_register_cmd(cmds[i].cmd, cmds[i].fn, cmds[i].help);

		/* registered already: a second dpsock_run in the process */
		if (r != 0 && r != -EINVAL && ret == 0)
			ret = r;
	}
	return ret;
}

void
dpsock_stats_destroy(struct dpsock_stack *d)
{
	if (d->stats == NULL)
		return;
	/* the telemetry thread must be out of the segment before it goes */
	__atomic_store_n(&tel_seg, NULL, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&tel_busy, __ATOMIC_ACQUIRE) != 0)
		rte_pause();
	__atomic_store_n(&d->stats->running, 0, __ATOMIC_RELEASE);
	if (d->stats_file != NULL) {
		fclose(d->stats_file);
		d->stats_file = NULL;
	}
	munmap(d->stats, d->stats->size);
	close(d->stats_fd);
	shm_unlink(d->stats_shm);
	d->stats = NULL;
	d->stats_fd = -1;
}
