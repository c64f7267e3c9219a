/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * extra.c — the extra API's table (include/dpsock/extra.h) and the calls
 * that are not about receiving: add_conf_rule, thread_offload,
 * dump_fd_stats, send_dummy. The receive side is zcopy.c, completions
 * comp.c. A program finds the table with dpsock_get_api(), a getsockopt
 * on descriptor -1 that the getsockopt hook (calls.c) hands here.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "extra/extra.h"
#include "io/io.h"
#include "stats_segment.h"

int shim_x_recvfrom_zcopy(int fd, struct dpsock_zpkt *pkts, unsigned int max, int flags);
int shim_x_free_packets(const struct dpsock_zpkt *pkts, unsigned int n);
int shim_x_register_recv_callback(int fd, dpsock_recv_cb_t cb, void *ctx);
int shim_x_comp_add(int fd, uint64_t user_data);
int shim_x_comp_del(int fd);
int shim_x_comp_poll(struct dpsock_comp *c, unsigned int max, unsigned int flags);
int shim_x_comp_fds(int *fds, unsigned int max);
unsigned int shim_xrx_held(const struct shim_sock *s);
bool shim_xrx_has_callback(const struct shim_sock *s);

__thread int shim_thread_no_offload;

static int
x_add_conf_rule(const char *rule)
{
	if (rule == NULL)
		return -EFAULT;
	return shim_proc_rule_add(rule);
}

static int
x_thread_offload(int on)
{
	int was = !shim_thread_no_offload;

	if (on != 0 && on != 1)
		return -EINVAL;
	shim_thread_no_offload = !on;
	return was;
}

/* ---- dump_fd_stats ------------------------------------------------------------ */

static const char *const mode_names[] = {
	[SHIM_UNDECIDED] = "undecided", [SHIM_KERNEL] = "kernel",
	[SHIM_TCP_LISTEN] = "TCP listener", [SHIM_TCP_CONN] = "TCP connection",
	[SHIM_UDP] = "UDP",
};

static const char *const state_names[] = {
	[DPSOCK_PL_ST_NONE] = "-", [DPSOCK_PL_ST_LISTEN] = "LISTEN",
	[DPSOCK_PL_ST_CONNECTING] = "CONNECTING", [DPSOCK_PL_ST_ESTABLISHED] = "ESTABLISHED",
	[DPSOCK_PL_ST_CLOSED] = "CLOSED", [DPSOCK_PL_ST_BOUND] = "BOUND",
};

/* Is e the stats entry of s's slot? The entries carry the opening process
 * and descriptor (the worker copies them from the slots every 100 ms);
 * until then, the addresses tell. */
static bool
entry_is(const struct dpsock_sock_stats *e, struct shim_sock *s, int fd)
{
	struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);

	if (e->owner_pid == (int32_t)shim_getpid() && e->fd == fd)
		return true;
	if (s->mode == SHIM_TCP_CONN)
		return e->proto == IPPROTO_TCP && e->lport == ntohs(sl->lport) &&
		       e->rport == ntohs(sl->rport) && e->raddr == sl->raddr &&
		       e->state != DPSOCK_SOCK_STATE_UDP;
	return e->proto == (s->mode == SHIM_UDP ? IPPROTO_UDP : IPPROTO_TCP) &&
	       e->lport == ntohs(s->lport) && e->rport == 0;
}

/* The worker's counters of this socket, from dpsockd's stats segment. */
static void
dump_worker_counters(int level, struct shim_sock *s, int fd)
{
	char path[128];
	struct dpsock_stats_segment *seg;
	unsigned int shown = 0;
	struct stat st;
	int sfd;

	snprintf(path, sizeof(path), "/dev/shm" DPSOCK_STATS_SHM_FMT, shim_env.name);
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0 || fstat(sfd, &st) < 0 || (size_t)st.st_size < sizeof(*seg)) {
		shim_log(level, "fd %d: no worker counters (%s: %s)", fd, path,
			 sfd < 0 ? strerror(errno) : "too small");
		if (sfd >= 0)
			REAL(close)(sfd);
		return;
	}
	seg = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, sfd, 0);
	REAL(close)(sfd);
	if (seg == MAP_FAILED) {
		shim_log(level, "fd %d: no worker counters (mmap: %s)", fd, strerror(errno));
		return;
	}
	if (seg->magic == DPSOCK_STATS_MAGIC && seg->version == DPSOCK_STATS_VERSION &&
	    seg->sock_off + (uint64_t)seg->n_workers * seg->sock_slots * sizeof(struct dpsock_sock_stats)
		    <= (uint64_t)st.st_size) {
		for (uint32_t w = 0; w < seg->n_workers && w < DPSOCK_STATS_MAX_WORKERS; w++) {
			const struct dpsock_sock_stats *t = dpsock_stats_socks(seg, w);

			for (uint32_t i = 0; i < seg->sock_slots; i++) {
				struct dpsock_sock_stats e;
				char line[480];
				size_t o;

				if (!__atomic_load_n(&t[i].in_use, __ATOMIC_RELAXED) ||
				    !dpsock_sockstat_read(&t[i], &e) || !e.in_use || !entry_is(&e, s, fd))
					continue;
				o = (size_t)snprintf(line, sizeof(line), "fd %d worker %u:", fd, w);
				for (unsigned int k = 0; k < dpsock_sock_stat_count && o < sizeof(line); k++)
					o += (size_t)snprintf(line + o, sizeof(line) - o, " %s=%" PRIu64,
							      dpsock_sock_stat_desc[k].name,
							      dpsock_stat_at(&e, &dpsock_sock_stat_desc[k]));
				shim_log(level, "%s", line);
				shown++;
			}
		}
	}
	if (shown == 0)
		shim_log(level, "fd %d: not listed in %s (stats.socket_slots full?)", fd, path);
	munmap(seg, (size_t)st.st_size);
}

static int
x_dump_fd_stats(int fd, int level)
{
	const struct dpsock_pl_seg *g;
	struct shim_sock *s = fd >= 0 ? shim_sock_get(fd) : NULL;
	char a1[INET6_ADDRSTRLEN], a2[INET6_ADDRSTRLEN];
	struct dpsock_pl_slot *sl;
	const void *l6, *r6;

	if (level < DPSOCK_LOG_ERR || level > DPSOCK_LOG_DEBUG)
		return -EINVAL;
	if (s == NULL)
		return -EBADF;
	if (level > shim_env.log_level)
		return 0;
	if (!shim_sock_offloaded(s)) {
		shim_log(level, "fd %d: %s socket, not offloaded (a kernel socket)", fd,
			 s->type == SOCK_STREAM ? "TCP" : "UDP");
		return 0;
	}
	g = shim_seg();
	sl = shim_sock_slot(s, 0);
	l6 = s->mode == SHIM_TCP_CONN ? shim_slot_laddr6(sl) : s->ip6 ? &s->laddr6 : NULL;
	r6 = s->mode == SHIM_TCP_CONN ? shim_slot_raddr6(sl) : NULL;
	if (l6 != NULL)
		inet_ntop(AF_INET6, l6, a1, sizeof(a1));
	else
		inet_ntop(AF_INET, s->mode == SHIM_TCP_CONN ? &sl->laddr : &s->laddr, a1, sizeof(a1));
	if (r6 != NULL)
		inet_ntop(AF_INET6, r6, a2, sizeof(a2));
	else
		inet_ntop(AF_INET, s->mode == SHIM_TCP_CONN ? &sl->raddr : &s->raddr, a2, sizeof(a2));
	shim_log(level, "fd %d: %s, %s %s:%u -> %s:%u, %u slot(s), held packets %u%s, poll hits %u misses %u",
		 fd, mode_names[s->mode],
		 state_names[__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) % 6], a1,
		 ntohs(s->mode == SHIM_TCP_CONN ? sl->lport : s->lport), a2,
		 ntohs(s->mode == SHIM_TCP_CONN ? sl->rport : s->rport), s->nslots,
		 shim_xrx_held(s), shim_xrx_has_callback(s) ? ", receive callback" : "",
		 __atomic_load_n(&sl->poll_hits, __ATOMIC_RELAXED),
		 __atomic_load_n(&sl->poll_misses, __ATOMIC_RELAXED));
	for (uint32_t i = 0; i < s->nslots; i++)
		shim_log(level, "fd %d slot %u (worker %u, gen %u): rx FIFO %u/%u bytes (%u readable), tx FIFO %u/%u bytes",
			 fd, s->slot[i], shim_slot_worker(s->slot[i]), s->gen[i],
			 shim_fifo_level(shim_slot_rx(s->slot[i]), g->rx_fifo_size), g->rx_fifo_size,
			 shim_rx_level(s, i),
			 shim_fifo_level(shim_slot_tx(s->slot[i]), g->tx_fifo_size), g->tx_fifo_size);
	dump_worker_counters(level, s, s->fd0 >= 0 ? s->fd0 : fd);
	return 0;
}

/* ---- send_dummy ------------------------------------------------------------------ */

/* Write len bytes of buf (after hdr, if any) into a reserved FIFO window
 * and never commit it: the copy and the cache lines of a send, nothing
 * sent. Returns the bytes it would have taken, or -EAGAIN. */
static int
dummy_write(struct shim_sock *s, uint32_t i, const struct dpsock_pl_dgram *hdr, const void *buf,
	    size_t len)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
	size_t need = hdr ? sizeof(*hdr) + ((len + 7u) & ~(size_t)7u) : len;
	struct iovec seg[2];
	struct dpsock_fifo_prod p;
	uint32_t n = 0;

	shim_lock(shim_tx_lock(a));
	if (shim_fifo_tx_attach(s->slot[i], &p) == 0) {
		uint32_t room = dpsock_fifo_free(&p);

		if (hdr == NULL || room >= need)
			n = dpsock_fifo_write_reserve(&p, need < room ? need : room, seg);
		if (n > 0 && hdr != NULL) {
			shim_iov_put(seg, 2, 0, (const unsigned char *)hdr, sizeof(*hdr));
			shim_iov_put(seg, 2, sizeof(*hdr), buf, len);
		} else if (n > 0) {
			shim_iov_put(seg, 2, 0, buf, n);
		}
		/* no dpsock_fifo_write_commit: the worker never sees it */
	}
	shim_unlock(shim_tx_lock(a));
	if (n == 0)
		return -EAGAIN;
	return hdr != NULL ? (int)len : (int)n;
}

static int
x_send_dummy(int fd, const void *buf, size_t len, int flags)
{
	struct shim_sock *s = fd >= 0 ? shim_sock_get(fd) : NULL;

	if (s == NULL)
		return -EBADF;
	if (flags != 0)
		return -EINVAL;
	if (!shim_sock_offloaded(s) || s->mode == SHIM_TCP_LISTEN)
		return -EOPNOTSUPP;
	if (len > INT_MAX)
		return -EMSGSIZE;
	if (buf == NULL && len > 0)
		return -EFAULT;
	if (shim_daemon_gone())
		return -EPIPE;
	if (s->mode == SHIM_UDP) {
		struct dpsock_pl_dgram h = { .len = (uint32_t)len, .addr = s->raddr, .port = s->rport };

		if (!s->udp_connected)
			return -EDESTADDRREQ;
		if (len > DPSOCK_PL_DGRAM_MAX ||
		    sizeof(h) + ((len + 7u) & ~(size_t)7u) > shim_seg()->tx_fifo_size)
			return -EMSGSIZE;
		return dummy_write(s, __atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots,
				   &h, buf, len);
	}
	{
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		uint32_t fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);

		if (st == DPSOCK_PL_ST_CONNECTING)
			return -ENOTCONN;
		if (st == DPSOCK_PL_ST_CLOSED || (fl & DPSOCK_PL_F_WR_SHUT) || s->shut_wr)
			return -EPIPE;
		if (len == 0)
			return 0;
		return dummy_write(s, 0, NULL, buf, len);
	}
}

/* ---- the table ----------------------------------------------------------------- */

static const struct dpsock_extra_api extra_api = {
	.version = DPSOCK_EXTRA_VERSION,
	.size = sizeof(struct dpsock_extra_api),
	.caps = DPSOCK_CAP_ZCOPY_UDP | DPSOCK_CAP_ZCOPY_TCP | DPSOCK_CAP_RECV_CALLBACK |
		DPSOCK_CAP_COMPLETIONS | DPSOCK_CAP_CONF_RULE | DPSOCK_CAP_THREAD_OFFLOAD |
		DPSOCK_CAP_DUMP_FD_STATS | DPSOCK_CAP_DUMMY_SEND,
	.recvfrom_zcopy = shim_x_recvfrom_zcopy,
	.free_packets = shim_x_free_packets,
	.register_recv_callback = shim_x_register_recv_callback,
	.comp_add = shim_x_comp_add,
	.comp_del = shim_x_comp_del,
	.comp_poll = shim_x_comp_poll,
	.comp_fds = shim_x_comp_fds,
	.add_conf_rule = x_add_conf_rule,
	.thread_offload = x_thread_offload,
	.dump_fd_stats = x_dump_fd_stats,
	.send_dummy = x_send_dummy,
};

int
shim_extra_getsockopt(void *val, socklen_t *len)
{
	const struct dpsock_extra_api *api = &extra_api;

	if (val == NULL || len == NULL)
		return shim_fail(EFAULT);
	if (*len < sizeof(api))
		return shim_fail(EINVAL);
	shim_env_load();
	memcpy(val, &api, sizeof(api));
	*len = sizeof(api);
	return 0;
}
