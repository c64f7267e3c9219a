/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The preload control thread (docs/preload.md "Attach"): a plain pthread,
 * not an EAL lcore, that listens on <runtime_dir>/<name>.sock
 * (SOCK_SEQPACKET), checks each client's SO_PEERCRED, creates a group's
 * segment on HELLO, registers channels and waiters, and on a connection's
 * end frees what that process registered; the last process of a group
 * leaving kills the group (its workers reset its connections).
 *
 * It sleeps in poll(): woken by clients, by its eventfd (stop, a worker
 * that found a group corrupt) and every 100 ms to refresh the clients[]
 * table of the stats segment.
 *
 * See server_priv.h for how it publishes objects to the workers and takes
 * them back without a lock on the workers' path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>

#include "core/stack_priv.h"
#include "instance_priv.h"
#include "core/log_priv.h"
#include "netview/netview_priv.h"
#include "server_priv.h"
#include "takeover/takeover.h"

#define CTL_TICK_MS 100
#define SYNC_POLL_US 200
#define PL_TKO_FREEZE_US 5000000 /* the control thread's freeze for a takeover, at most */

struct pl_ctl dpsock_pl_ctl = { .lfd = -1, .efd = -1, .wake_fd = -1, .wake_ro_fd = -1 };

/* the preload server as the stack's app: dpsockd runs it, so does the
 * preload fuzzer (test/fuzz) */
const struct dpsock_app dpsock_preload_app = {
	.name = "preload",
	.main_init = dpsock_pl_main_init,
	.worker_init = dpsock_pl_worker_init,
	.worker_poll = dpsock_pl_worker_poll,
	.worker_fini = dpsock_pl_worker_fini,
	.worker_pending = dpsock_pl_worker_pending,
	.main_start = dpsock_pl_main_start,
	.main_stop = dpsock_pl_main_stop,
	.main_fini = dpsock_pl_main_fini,
};

static uint64_t
align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void
sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)us * 1000 };

	nanosleep(&ts, NULL);
}

static bool
quitting(const struct pl_ctl *c)
{
	return __atomic_load_n(&c->d->quit, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&c->stop, __ATOMIC_RELAXED);
}

static void
wake_workers(struct pl_ctl *c)
{
	unsigned int k;

	for (k = 0; k < c->n_workers; k++)
		dpsock_worker_wake(&c->d->workers[k]);
}

/* The address space every group's segment reserves (max_groups of them
 * may be mapped at once): a segment is sparse, but its reservation must fit
 * the process's 128 TiB. Beyond PL_VA_BUDGET, preload.slots is halved
 * until it fits, and a line says so. */
#define PL_VA_BUDGET (32ull << 40)

static void group_layout(const struct pl_ctl *c, struct dpsock_pl_seg *s);
static void ctl_tko_wait(struct pl_ctl *c);
static int pl_tko_import(struct pl_ctl *c);

static void
pl_fit_address_space(struct pl_ctl *c)
{
	struct dpsock_pl_seg geo;
	uint32_t want = c->slots;

	for (;;) {
		group_layout(c, &geo);
		if ((uint64_t)c->max_groups * geo.seg_size <= PL_VA_BUDGET || c->slots <= 1024)
			break;
		c->slots /= 2;
	}
	if (c->slots != want)
		DPSOCK_LOG(NOTICE, preload,
			   "preload.slots lowered from %u to %u per worker: %u groups x %u workers "
			   "reserve %" PRIu64 " GiB of address space (at most %llu TiB)",
			   want, c->slots, c->max_groups, c->n_workers,
			   (uint64_t)c->max_groups * geo.seg_size >> 30, PL_VA_BUDGET >> 40);
}

/*
 * Wait until no worker can still use what was unpublished before this
 * call. Returns 0, or -ESHUTDOWN when the daemon stops meanwhile (the
 * object must then be left for dpsock_pl_main_fini).
 */
static int
sync_workers(struct pl_ctl *c)
{
	/* seq_cst: orders the unpublishing stores before the new generation;
	 * a worker whose acquire load of gen sees it sees them too. */
	uint64_t gen = __atomic_add_fetch(&c->gen, 1, __ATOMIC_SEQ_CST);
	unsigned int k;

	for (;;) {
		for (k = 0; k < c->n_workers; k++)
			/* acquire: pairs with the worker's release store of its ack */
			if (__atomic_load_n(&c->ack[k].v, __ATOMIC_ACQUIRE) < gen)
				break;
		if (k == c->n_workers)
			return 0;
		if (__atomic_load_n(&c->d->quit, __ATOMIC_RELAXED))
			return -ESHUTDOWN;
		wake_workers(c);
		sleep_us(SYNC_POLL_US);
	}
}

/* ---------------------------------------------------------------------- */
/* groups */

static void
group_free(struct pl_ctl *c, struct pl_group *g)
{
	unsigned int k;
	uint32_t i;

	if (g == NULL)
		return;
	for (k = 0; k < c->n_workers; k++) {
		struct pl_wgroup *wg = g->wg[k];

		if (wg == NULL)
			continue;
		free(wg->slots);
		free(wg->free_stack);
		free(wg->chans);
		free(wg->wait);
		free(wg->wake_mask);
		free(wg);
	}
	if (g->waiter_fd != NULL)
		for (i = 0; i < g->geo.max_waiters; i++)
			if (g->waiter_fd[i] >= 0)
				close(g->waiter_fd[i]);
	if (g->seg != NULL && g->seg != MAP_FAILED)
		munmap(g->seg, g->seg_size);
	if (g->memfd >= 0)
		close(g->memfd);
	free(g->chan_live);
	free(g->chan_waiter);
	free(g->waiter_live);
	free(g->waiter_fd);
	free(g->chan_owner);
	free(g->waiter_owner);
	free(g);
}

/* Geometry of a group's segment from the configuration. */
static void
group_layout(const struct pl_ctl *c, struct dpsock_pl_seg *s)
{
	const struct dpsock_config *conf = &c->d->conf;
	uint64_t off;

	memset(s, 0, sizeof(*s));
	s->n_workers = c->n_workers;
	s->max_channels = conf->pl_max_threads;
	s->max_waiters = c->max_waiters;
	s->slots_per_worker = c->slots;
	s->cmd_count = PL_CMD_COUNT;
	s->reply_count = PL_REPLY_COUNT;
	s->wait_count = pl_wait_count(s->slots_per_worker);
	s->rx_fifo_size = conf->pl_rx_fifo_kb * 1024;
	s->tx_fifo_size = conf->pl_tx_fifo_kb * 1024;
	s->cmd_ring_size = (uint64_t)dpsock_spsc_memsize(DPSOCK_PL_CMD_SIZE, PL_CMD_COUNT);
	s->reply_ring_size = (uint64_t)dpsock_spsc_memsize(DPSOCK_PL_REPLY_SIZE, PL_REPLY_COUNT);
	s->chan_stride = align_up(s->cmd_ring_size + s->reply_ring_size, DPSOCK_SPSC_BLOCK);
	s->wait_ring_size = (uint64_t)dpsock_spsc_memsize(PL_WAIT_ELEM, s->wait_count);
	s->waiter_stride = align_up(DPSOCK_PL_WAITER_HDR + s->n_workers * s->wait_ring_size,
				    DPSOCK_SPSC_BLOCK);
	/* a slot and its FIFOs' headers together (1280 bytes: what an idle
	 * socket keeps), the FIFOs' data apart, page-aligned */
	s->rx_fifo_off = DPSOCK_PL_SLOT_HDR;
	s->tx_fifo_off = s->rx_fifo_off + DPSOCK_SPSC_HDR_SIZE;
	s->slot_stride = align_up(s->tx_fifo_off + DPSOCK_SPSC_HDR_SIZE, DPSOCK_SPSC_BLOCK);
	s->rx_data_off = 0;
	s->tx_data_off = s->rx_fifo_size;
	s->data_stride = (uint64_t)s->rx_fifo_size + s->tx_fifo_size;

	off = DPSOCK_PL_SEG_HDR;
	s->off_channels = off;
	off += (uint64_t)s->max_channels * s->n_workers * s->chan_stride;
	off = align_up(off, 4096);
	s->off_waiters = off;
	off += (uint64_t)s->max_waiters * s->waiter_stride;
	off = align_up(off, 4096);
	s->off_slots = off;
	off += (uint64_t)s->n_workers * s->slots_per_worker * s->slot_stride;
	off = align_up(off, 4096);
	s->off_data = off;
	off += (uint64_t)s->n_workers * s->slots_per_worker * s->data_stride;
	s->seg_size = align_up(off, 4096);
}

static int
group_alloc_private(struct pl_ctl *c, struct pl_group *g)
{
	const struct dpsock_pl_seg *s = &g->geo;
	unsigned int k;
	uint32_t i;

	g->chan_live = calloc(s->max_channels, sizeof(*g->chan_live));
	g->chan_waiter = calloc(s->max_channels, sizeof(*g->chan_waiter));
	g->chan_owner = calloc(s->max_channels, sizeof(*g->chan_owner));
	g->waiter_live = calloc(s->max_waiters, sizeof(*g->waiter_live));
	g->waiter_fd = malloc(s->max_waiters * sizeof(*g->waiter_fd));
	g->waiter_owner = calloc(s->max_waiters, sizeof(*g->waiter_owner));
	if (!g->chan_live || !g->chan_waiter || !g->chan_owner || !g->waiter_live ||
	    !g->waiter_fd || !g->waiter_owner)
		return -ENOMEM;
	for (i = 0; i < s->max_waiters; i++)
		g->waiter_fd[i] = -1;
	for (k = 0; k < c->n_workers; k++) {
		struct pl_wgroup *wg = calloc(1, sizeof(*wg));

		if (wg == NULL)
			return -ENOMEM;
		g->wg[k] = wg;
		wg->g = g;
		wg->w = &c->d->workers[k];
		wg->k = k;
		wg->slots = calloc(s->slots_per_worker, sizeof(*wg->slots));
		wg->free_stack = malloc(s->slots_per_worker * sizeof(*wg->free_stack));
		wg->chans = calloc(s->max_channels, sizeof(*wg->chans));
		wg->wait = calloc(s->max_waiters, sizeof(*wg->wait));
		wg->wake_mask = calloc((s->max_waiters + 63) / 64, sizeof(*wg->wake_mask));
		if (!wg->slots || !wg->free_stack || !wg->chans || !wg->wait || !wg->wake_mask)
			return -ENOMEM;
		/* lowest slot numbers first (n_fresh), and nothing here touched
		 * per slot: these arrays are reservations, used as sockets open */
		wg->n_free = 0;
		wg->n_fresh = 0;
	}
	return 0;
}

/* Create a group and its segment. Returns the group index or -errno. */
static int
group_create(struct pl_ctl *c, char *why, size_t whylen)
{
	const struct dpsock_config *conf = &c->d->conf;
	struct dpsock_pl_seg *hdr;
	struct pl_group *g;
	uint32_t idx;
	int ret;

	for (idx = 0; idx < c->max_groups; idx++)
		if (c->groups[idx] == NULL)
			break;
	if (idx == c->max_groups) {
		snprintf(why, whylen, "all %u groups in use (preload.max_groups)", c->max_groups);
		return -EMFILE;
	}
	g = calloc(1, sizeof(*g) + c->n_workers * sizeof(g->wg[0]));
	if (g == NULL)
		return -ENOMEM;
	g->idx = idx;
	g->memfd = -1;
	group_layout(c, &g->geo);
	g->geo.group = idx;
	ret = group_alloc_private(c, g);
	if (ret != 0) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	do {
		if (getrandom(&g->token, sizeof(g->token), 0) != sizeof(g->token)) {
			ret = -errno;
			snprintf(why, whylen, "getrandom: %s", strerror(errno));
			goto fail;
		}
	} while (g->token == 0);
	g->geo.token = g->token;
	g->seg_size = g->geo.seg_size;
	g->memfd = memfd_create("dpsock-group", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (g->memfd < 0 || ftruncate(g->memfd, (off_t)g->seg_size) != 0) {
		ret = -errno;
		snprintf(why, whylen, "segment of %zu bytes: %s", g->seg_size, strerror(errno));
		goto fail;
	}
	g->seg = mmap(NULL, g->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->memfd, 0);
	if (g->seg == MAP_FAILED) {
		ret = -errno;
		g->seg = NULL;
		snprintf(why, whylen, "mmap of the segment: %s", strerror(errno));
		goto fail;
	}
	/* A reservation (docs/preload.md "Thousands of sockets"): dpsockd's
	 * core dump leaves out the wait rings and the FIFOs' data. */
	madvise(g->seg + g->geo.off_waiters, g->geo.off_slots - g->geo.off_waiters, MADV_DONTDUMP);
	madvise(g->seg + g->geo.off_data, g->seg_size - g->geo.off_data, MADV_DONTDUMP);
	/* The size can no longer change: a client cannot shrink the file under
	 * the daemon's mapping (SIGBUS). */
	if (fcntl(g->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		ret = -errno;
		snprintf(why, whylen, "sealing the segment: %s", strerror(errno));
		goto fail;
	}
	/* Header. Slots need no set-up: a zero slot is FREE, and a worker
	 * formats its FIFOs when it allocates it. Channel and waiter rings
	 * are formatted when they are added. */
	hdr = (struct dpsock_pl_seg *)(void *)g->seg;
	memcpy(hdr, &g->geo, sizeof(*hdr));
	hdr->magic = 0;
	hdr->version = DPSOCK_PL_VERSION;
	hdr->n_rules = conf->n_rules;
	memcpy(hdr->rules, conf->rules, conf->n_rules * sizeof(conf->rules[0]));
	snprintf(hdr->daemon_name, sizeof(hdr->daemon_name), "%s", conf->name);
	snprintf(hdr->tcp_congestion, sizeof(hdr->tcp_congestion), "%s", conf->congestion);
	hdr->state = DPSOCK_PL_RUNNING;
	/* release: the header is complete before its magic says so (the
	 * client only maps it after WELCOME, which orders it anyway) */
	__atomic_store_n(&hdr->magic, DPSOCK_PL_SEG_MAGIC, __ATOMIC_RELEASE);

	/* release: pairs with the workers' acquire load of groups[idx]; the
	 * group and its per-worker state are complete before they see it */
	__atomic_store_n(&c->groups[idx], g, __ATOMIC_RELEASE);
	if (idx + 1 > c->groups_hi)
		__atomic_store_n(&c->groups_hi, idx + 1, __ATOMIC_RELEASE);
	DPSOCK_LOG(INFO, preload, "group %u created (segment %zu KiB)", idx,
		   g->seg_size >> 10);
	return (int)idx;
fail:
	group_free(c, g);
	return ret;
}

/*
 * Kill a group: its workers reset its connections and close its listeners,
 * then the segment goes. Returns 0, or -ESHUTDOWN (daemon stopping: left
 * for dpsock_pl_main_fini).
 */
static int
group_destroy(struct pl_ctl *c, struct pl_group *g)
{
	unsigned int k;

	/* release: pairs with the workers' acquire load of dying */
	__atomic_store_n(&g->dying, 1, __ATOMIC_RELEASE);
	for (;;) {
		for (k = 0; k < c->n_workers; k++)
			/* acquire: pairs with the worker's release store of done;
			 * it no longer touches the group's sockets */
			if (!__atomic_load_n(&g->wg[k]->done, __ATOMIC_ACQUIRE))
				break;
		if (k == c->n_workers)
			break;
		if (__atomic_load_n(&c->d->quit, __ATOMIC_RELAXED))
			return -ESHUTDOWN;
		wake_workers(c);
		sleep_us(SYNC_POLL_US);
	}
	/* release: workers that load NULL skip the slot */
	__atomic_store_n(&c->groups[g->idx], NULL, __ATOMIC_RELEASE);
	if (sync_workers(c) != 0) {
		/* stopping: back in the table for dpsock_pl_main_fini to free
		 * (the workers skip it: dying, done) */
		__atomic_store_n(&c->groups[g->idx], g, __ATOMIC_RELEASE);
		return -ESHUTDOWN;
	}
	DPSOCK_LOG(INFO, preload, "group %u ended", g->idx);
	group_free(c, g);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* stats: clients[] */

static void
client_stats_open(struct pl_ctl *c, struct pl_conn *cn)
{
	struct dpsock_stats_segment *st = c->d->stats;
	unsigned int i;

	cn->stats_idx = -1;
	if (st == NULL)
		return;
	for (i = 0; i < DPSOCK_STATS_MAX_CLIENTS; i++)
		if (__atomic_load_n(&st->clients[i].pid, __ATOMIC_RELAXED) == 0)
			break;
	if (i == DPSOCK_STATS_MAX_CLIENTS)
		return;
	cn->stats_idx = (int)i;
	memset(st->clients[i].reserved, 0, sizeof(st->clients[i].reserved));
	snprintf(st->clients[i].name, sizeof(st->clients[i].name), "%.31s", cn->name);
	__atomic_store_n(&st->clients[i].group, (uint32_t)cn->group, __ATOMIC_RELAXED);
	__atomic_store_n(&st->clients[i].threads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->clients[i].rings, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->clients[i].wakeups, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&st->clients[i].sockets, 0, __ATOMIC_RELAXED);
	/* release: the entry's fields are written before a reader sees its pid */
	__atomic_store_n(&st->clients[i].pid, (int32_t)cn->pid, __ATOMIC_RELEASE);
	if (i + 1 > st->n_clients)
		__atomic_store_n(&st->n_clients, i + 1, __ATOMIC_RELEASE);
}

static void
client_stats_close(struct pl_ctl *c, struct pl_conn *cn)
{
	struct dpsock_stats_segment *st = c->d->stats;

	if (st == NULL || cn->stats_idx < 0)
		return;
	__atomic_store_n(&st->clients[cn->stats_idx].pid, 0, __ATOMIC_RELEASE);
	cn->stats_idx = -1;
}

/* Every tick: channels, waiters, and the group's sockets and wake-ups. */
static void
client_stats_refresh(struct pl_ctl *c)
{
	struct dpsock_stats_segment *st = c->d->stats;
	unsigned int i, k;

	if (st == NULL)
		return;
	for (i = 0; i < c->n_conns; i++) {
		struct pl_conn *cn = &c->conns[i];
		struct dpsock_client_stats *e;
		struct pl_group *g;
		uint64_t socks = 0, wakeups = 0;

		if (cn->fd < 0 || cn->stats_idx < 0 || cn->group < 0)
			continue;
		g = c->groups[cn->group];
		e = &st->clients[cn->stats_idx];
		if (g != NULL) {
			for (k = 0; k < c->n_workers; k++) {
				socks += __atomic_load_n(&g->wg[k]->n_socks, __ATOMIC_RELAXED);
				wakeups += __atomic_load_n(&g->wg[k]->wakeups, __ATOMIC_RELAXED);
			}
		}
		__atomic_store_n(&e->threads, cn->n_chans, __ATOMIC_RELAXED);
		__atomic_store_n(&e->rings, cn->n_waiters, __ATOMIC_RELAXED);
		__atomic_store_n(&e->sockets, socks, __ATOMIC_RELAXED);
		__atomic_store_n(&e->wakeups, wakeups, __ATOMIC_RELAXED);
	}
}

/* ---------------------------------------------------------------------- */
/* messages */

static int
send_msg(int fd, struct dpsock_pl_msg *m, const int *fds, unsigned int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) +
			 CMSG_SPACE(sizeof(int) * DPSOCK_PL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	m->magic = DPSOCK_PL_MAGIC;
	m->version = DPSOCK_PL_VERSION;
	m->n_fds = nfds;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*m) ? 0 : -EPIPE;
}

static int
reply(struct pl_conn *cn, uint16_t type, int status, uint32_t id, const char *text)
{
	struct dpsock_pl_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.status = status;
	m.id = id;
	if (text != NULL)
		snprintf(m.text, sizeof(m.text), "%s", text);
	return send_msg(cn->fd, &m, NULL, 0);
}

static bool
uid_allowed(const struct pl_ctl *c, uid_t uid)
{
	const struct dpsock_config *conf = &c->d->conf;
	unsigned int i;

	if (uid == 0)
		return true;
	if (conf->n_allowed_uids == 0)
		return uid == geteuid();
	for (i = 0; i < conf->n_allowed_uids; i++)
		if (conf->allowed_uids[i] == uid)
			return true;
	return false;
}

static struct pl_group *
conn_group(struct pl_ctl *c, const struct pl_conn *cn)
{
	return cn->group >= 0 ? c->groups[cn->group] : NULL;
}

static int send_welcome(struct pl_ctl *c, struct pl_conn *cn, struct pl_group *g);

/* The program name a client sent, printable characters only. */
static void
conn_set_name(struct pl_conn *cn, const struct dpsock_pl_msg *m)
{
	unsigned int i;

	for (i = 0; i < sizeof(cn->name) - 1 && i < sizeof(m->text) && m->text[i] != '\0'; i++)
		cn->name[i] = (m->text[i] >= 0x20 && m->text[i] < 0x7f) ? m->text[i] : '?';
	cn->name[i] = '\0';
}

static int
on_hello(struct pl_ctl *c, struct pl_conn *cn, const struct dpsock_pl_msg *m)
{
	struct pl_group *g = NULL;
	char why[64] = "";
	unsigned int i;
	int idx;

	if (cn->group >= 0)
		return reply(cn, DPSOCK_PL_WELCOME, -EISCONN, 0, "already attached");
	/* A new group needs an allowed uid. Joining one needs only its token,
	 * which a process can read only from a segment it inherited: a forked
	 * child that dropped privileges (nginx's workers run as "nobody")
	 * already holds the group's sockets and memory, and gains nothing. */
	if (m->token == 0 && !uid_allowed(c, cn->uid)) {
		DPSOCK_LOG(NOTICE, preload, "pid %d (uid %u) refused: not in preload.allowed_uids",
			   (int)cn->pid, (unsigned int)cn->uid);
		reply(cn, DPSOCK_PL_WELCOME, -EACCES, 0, "uid not in preload.allowed_uids");
		return -EACCES;
	}
	if (c->n_workers + 2 > DPSOCK_PL_MAX_FDS) {
		reply(cn, DPSOCK_PL_WELCOME, -ENOTSUP, 0, "too many workers for one message");
		return -ENOTSUP;
	}
	conn_set_name(cn, m);
	if (m->token == 0) {
		idx = group_create(c, why, sizeof(why));
		if (idx < 0) {
			DPSOCK_LOG(WARNING, preload, "pid %d (%s): no group: %s", (int)cn->pid,
				   cn->name, why);
			reply(cn, DPSOCK_PL_WELCOME, idx, 0, why);
			return idx;
		}
		g = c->groups[idx];
	} else {
		for (i = 0; i < c->groups_hi; i++) {
			struct pl_group *x = c->groups[i];

			if (x != NULL && !x->dying && !__atomic_load_n(&x->bad, __ATOMIC_ACQUIRE) &&
			    x->token == m->token) {
				g = x;
				break;
			}
		}
		if (g == NULL) {
			reply(cn, DPSOCK_PL_WELCOME, -ENOENT, 0, "no group with that token");
			return -ENOENT;
		}
	}
	cn->group = (int)g->idx;
	g->n_procs++;
	if (send_welcome(c, cn, g) != 0)
		return -EPIPE;
	client_stats_open(c, cn);
	DPSOCK_LOG(INFO, preload, "pid %d (%s, uid %u) attached to group %u", (int)cn->pid,
		   cn->name, (unsigned int)cn->uid, g->idx);
	return 0;
}

/* WELCOME: the group's segment, the wake page, each worker's eventfd. */
static int
send_welcome(struct pl_ctl *c, struct pl_conn *cn, struct pl_group *g)
{
	int fds[DPSOCK_PL_MAX_FDS];
	struct dpsock_pl_msg w;
	unsigned int k;

	memset(&w, 0, sizeof(w));
	w.type = DPSOCK_PL_WELCOME;
	w.seg_size = g->seg_size;
	w.wake_size = c->wake_size;
	w.n_workers = c->n_workers;
	w.token = g->token;
	fds[0] = g->memfd;
	fds[1] = c->wake_ro_fd;
	for (k = 0; k < c->n_workers; k++)
		fds[2 + k] = c->d->workers[k].efd;
	return send_msg(cn->fd, &w, fds, 2 + c->n_workers);
}

/* Is fd an eventfd? (A worker writes it without blocking: O_NONBLOCK.) */
static bool
is_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

static int
on_waiter_add(struct pl_ctl *c, struct pl_conn *cn, int fd)
{
	struct pl_group *g = conn_group(c, cn);
	uint32_t id;
	unsigned int k;
	int flags, ret;

	if (g == NULL)
		return -ENOTCONN;
	if (fd < 0 || !is_eventfd(fd))
		return -EBADF;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
		return -EBADF;
	for (id = 0; id < g->geo.max_waiters; id++)
		if (g->waiter_owner[id] == 0 && !g->waiter_live[id])
			break;
	if (id == g->geo.max_waiters)
		return -EMFILE;
	memset(pl_waiter_hdr(g, id), 0, DPSOCK_PL_WAITER_HDR);
	for (k = 0; k < c->n_workers; k++) {
		void *ring = pl_wait_ring(g, id, k);

		ret = dpsock_spsc_init(ring, g->geo.wait_ring_size, PL_WAIT_ELEM, g->geo.wait_count);
		if (ret == 0)
			ret = dpsock_spsc_prod_attach(&g->wg[k]->wait[id], ring, g->geo.wait_ring_size);
		if (ret != 0)
			return ret;
	}
	g->waiter_fd[id] = fd;
	g->waiter_owner[id] = (int)(cn - c->conns) + 1;
	if (id + 1 > g->waiter_hi)
		__atomic_store_n(&g->waiter_hi, id + 1, __ATOMIC_RELEASE);
	/* release: pairs with the workers' acquire load of waiter_live; the
	 * rings, handles and fd above are set before they use them */
	__atomic_store_n(&g->waiter_live[id], 1, __ATOMIC_RELEASE);
	cn->n_waiters++;
	return (int)id;
}

static int
on_channel_add(struct pl_ctl *c, struct pl_conn *cn, uint32_t waiter)
{
	struct pl_group *g = conn_group(c, cn);
	uint32_t id;
	unsigned int k;
	int ret;

	if (g == NULL)
		return -ENOTCONN;
	if (waiter >= g->geo.max_waiters || !g->waiter_live[waiter])
		return -EINVAL;
	for (id = 0; id < g->geo.max_channels; id++)
		if (g->chan_owner[id] == 0 && !g->chan_live[id])
			break;
	if (id == g->geo.max_channels)
		return -EMFILE;
	for (k = 0; k < c->n_workers; k++) {
		unsigned char *blk = pl_chan_block(g, id, k);
		struct pl_wchan *ch = &g->wg[k]->chans[id];

		ret = dpsock_spsc_init(blk, g->geo.cmd_ring_size, DPSOCK_PL_CMD_SIZE, PL_CMD_COUNT);
		if (ret == 0)
			ret = dpsock_spsc_init(blk + g->geo.cmd_ring_size, g->geo.reply_ring_size,
					       DPSOCK_PL_REPLY_SIZE, PL_REPLY_COUNT);
		if (ret == 0)
			ret = dpsock_spsc_cons_attach(&ch->cmd, blk, g->geo.cmd_ring_size);
		if (ret == 0)
			ret = dpsock_spsc_prod_attach(&ch->reply, blk + g->geo.cmd_ring_size,
						      g->geo.reply_ring_size);
		if (ret != 0)
			return ret;
	}
	g->chan_waiter[id] = waiter;
	g->chan_owner[id] = (int)(cn - c->conns) + 1;
	if (id + 1 > g->chan_hi)
		__atomic_store_n(&g->chan_hi, id + 1, __ATOMIC_RELEASE);
	/* release: pairs with the workers' acquire load of chan_live; the
	 * handles attached above are complete before a worker uses them */
	__atomic_store_n(&g->chan_live[id], PL_CHAN_LIVE, __ATOMIC_RELEASE);
	cn->n_chans++;
	return (int)id;
}

/* Unpublish, wait for the workers, free. Returns 0, -EINVAL (not this
 * connection's) or -ESHUTDOWN. */
static int
on_del(struct pl_ctl *c, struct pl_conn *cn, bool channel, uint32_t id)
{
	struct pl_group *g = conn_group(c, cn);
	int me = (int)(cn - c->conns) + 1;

	if (g == NULL)
		return -ENOTCONN;
	if (channel) {
		if (id >= g->geo.max_channels || g->chan_owner[id] != me)
			return -EINVAL;
		/* release: pairs with the workers' acquire load (see sync_workers);
		 * they run what is left in its rings before they acknowledge */
		__atomic_store_n(&g->chan_live[id], PL_CHAN_CLOSING, __ATOMIC_RELEASE);
	} else {
		if (id >= g->geo.max_waiters || g->waiter_owner[id] != me)
			return -EINVAL;
		__atomic_store_n(&g->waiter_live[id], 0, __ATOMIC_RELEASE);
	}
	if (sync_workers(c) != 0)
		return -ESHUTDOWN;
	if (channel) {
		__atomic_store_n(&g->chan_live[id], PL_CHAN_FREE, __ATOMIC_RELAXED);
		g->chan_owner[id] = 0;
		cn->n_chans--;
	} else {
		close(g->waiter_fd[id]);
		g->waiter_fd[id] = -1;
		g->waiter_owner[id] = 0;
		cn->n_waiters--;
	}
	return 0;
}

/* Free every channel and waiter connection cn registered in group g.
 * Returns 0, or -ESHUTDOWN (daemon stopping: left for main_fini). */
static int
conn_free_objs(struct pl_ctl *c, struct pl_conn *cn, struct pl_group *g)
{
	int me = (int)(cn - c->conns) + 1;
	uint32_t i;

	for (i = 0; i < g->geo.max_channels; i++)
		if (g->chan_owner[i] == me)
			/* release: pairs with the workers' acquire load (sync_workers);
			 * they run what the process left in its rings (a send
			 * just before _exit) before they acknowledge */
			__atomic_store_n(&g->chan_live[i], PL_CHAN_CLOSING, __ATOMIC_RELEASE);
	for (i = 0; i < g->geo.max_waiters; i++)
		if (g->waiter_owner[i] == me)
			/* release: as above */
			__atomic_store_n(&g->waiter_live[i], 0, __ATOMIC_RELEASE);
	if (sync_workers(c) != 0)
		return -ESHUTDOWN;
	for (i = 0; i < g->geo.max_channels; i++)
		if (g->chan_owner[i] == me) {
			__atomic_store_n(&g->chan_live[i], PL_CHAN_FREE, __ATOMIC_RELAXED);
			g->chan_owner[i] = 0;
		}
	for (i = 0; i < g->geo.max_waiters; i++) {
		if (g->waiter_owner[i] != me)
			continue;
		close(g->waiter_fd[i]);
		g->waiter_fd[i] = -1;
		g->waiter_owner[i] = 0;
	}
	cn->n_chans = 0;
	cn->n_waiters = 0;
	return 0;
}

/* EXEC: the process behind cn exec()ed and its new image took over the
 * connection. What the old image registered is dead (its rings are no
 * longer read or written by anyone): free it as on EOF, keep the process
 * in its group (its sockets live on), and WELCOME the new image. */
static int
on_exec(struct pl_ctl *c, struct pl_conn *cn, const struct dpsock_pl_msg *m)
{
	struct pl_group *g = conn_group(c, cn);

	if (g == NULL)
		return -ENOTCONN;
	if (conn_free_objs(c, cn, g) != 0)
		return -ESHUTDOWN;
	conn_set_name(cn, m);
	client_stats_close(c, cn);
	if (send_welcome(c, cn, g) != 0)
		return -EPIPE;
	client_stats_open(c, cn);
	DPSOCK_LOG(INFO, preload, "pid %d exec()ed %s, stays in group %u", (int)cn->pid,
		   cn->name, g->idx);
	return 0;
}

/* A connection ended (EOF, error, protocol violation, its group dropped):
 * free its channels and waiters; the last process of a group kills it. */
static void
conn_close(struct pl_ctl *c, struct pl_conn *cn)
{
	struct pl_group *g = conn_group(c, cn);

	if (g != NULL) {
		if (conn_free_objs(c, cn, g) == 0 && --g->n_procs == 0)
			group_destroy(c, g);
		DPSOCK_LOG(INFO, preload, "pid %d (%s) detached from group %d", (int)cn->pid,
			   cn->name, cn->group);
	}
	client_stats_close(c, cn);
	close(cn->fd);
	cn->fd = -1;
	cn->group = -1;
	while (c->n_conns > 0 && c->conns[c->n_conns - 1].fd < 0)
		c->n_conns--;
}

static void
conn_accept(struct pl_ctl *c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	unsigned int i;
	int fd;

	fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		close(fd);
		return;
	}
	for (i = 0; i < PL_MAX_CONNS; i++)
		if (i >= c->n_conns || c->conns[i].fd < 0)
			break;
	if (i == PL_MAX_CONNS) {
		DPSOCK_LOG(WARNING, preload, "pid %d refused: %u control connections",
			   (int)cred.pid, PL_MAX_CONNS);
		close(fd);
		return;
	}
	memset(&c->conns[i], 0, sizeof(c->conns[i]));
	c->conns[i].fd = fd;
	c->conns[i].pid = cred.pid;
	c->conns[i].uid = cred.uid;
	c->conns[i].group = -1;
	c->conns[i].stats_idx = -1;
	if (i >= c->n_conns)
		c->n_conns = i + 1;
}

/* One message from a connection. Returns false when it must be closed. */
static bool
conn_input(struct pl_ctl *c, struct pl_conn *cn)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DPSOCK_PL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct dpsock_pl_msg m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	int fds[DPSOCK_PL_MAX_FDS], nfds = 0, r, i;
	ssize_t n;
	bool keep = true;

	n = recvmsg(cn->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_CREDENTIALS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred uc;

			/* the kernel's word on who sent it (a process can
			 * only claim its own pid and ids) */
			memcpy(&uc, CMSG_DATA(cm), sizeof(uc));
			if (uc.pid > 0) {
				cn->pid = uc.pid;
				cn->uid = uc.uid;
			}
			continue;
		}
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (i = 0; i < (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int)); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (nfds < DPSOCK_PL_MAX_FDS)
				fds[nfds++] = fd;
			else
				close(fd);
		}
	}
	if (n == 0) {
		keep = false;
		goto out;
	}
	if ((size_t)n == sizeof(m) && m.magic == DPSOCK_PL_MAGIC && m.version != DPSOCK_PL_VERSION) {
		char why[64];

		/* a shim from another dpsock version: say so to both */
		snprintf(why, sizeof(why), "protocol version %u, dpsockd speaks %u",
			 (unsigned int)m.version, DPSOCK_PL_VERSION);
		DPSOCK_LOG(NOTICE, preload, "pid %d: %s: disconnected", (int)cn->pid, why);
		reply(cn, DPSOCK_PL_WELCOME, -EPROTO, 0, why);
		keep = false;
		goto out;
	}
	if ((size_t)n != sizeof(m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    m.magic != DPSOCK_PL_MAGIC) {
		DPSOCK_LOG(NOTICE, preload, "pid %d: malformed control message (%zd bytes): "
			   "disconnected", (int)cn->pid, n);
		keep = false;
		goto out;
	}
	if (cn->group < 0 && m.type != DPSOCK_PL_HELLO) {
		reply(cn, DPSOCK_PL_REPLY, -ENOTCONN, 0, "HELLO first");
		keep = false;
		goto out;
	}
	switch (m.type) {
	case DPSOCK_PL_HELLO:
		keep = on_hello(c, cn, &m) == 0;
		break;
	case DPSOCK_PL_EXEC:
		keep = on_exec(c, cn, &m) == 0;
		break;
	case DPSOCK_PL_WAITER_ADD:
		r = nfds == 1 ? on_waiter_add(c, cn, fds[0]) : -EBADF;
		if (r >= 0)
			nfds = 0; /* the fd is the group's now */
		keep = reply(cn, DPSOCK_PL_REPLY, r < 0 ? r : 0, r < 0 ? 0 : (uint32_t)r, NULL) == 0;
		break;
	case DPSOCK_PL_CHANNEL_ADD:
		r = on_channel_add(c, cn, m.arg);
		keep = reply(cn, DPSOCK_PL_REPLY, r < 0 ? r : 0, r < 0 ? 0 : (uint32_t)r, NULL) == 0;
		break;
	case DPSOCK_PL_WAITER_DEL:
	case DPSOCK_PL_CHANNEL_DEL:
		r = on_del(c, cn, m.type == DPSOCK_PL_CHANNEL_DEL, m.id);
		keep = r != -ESHUTDOWN &&
		       reply(cn, DPSOCK_PL_REPLY, r, m.id, NULL) == 0;
		break;
	default:
		keep = reply(cn, DPSOCK_PL_REPLY, -EINVAL, 0, "unknown message type") == 0;
		break;
	}
out:
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return keep;
}

/* Groups a worker found corrupt: disconnect every process of the group. */
static void
drop_bad_groups(struct pl_ctl *c)
{
	uint32_t i;
	unsigned int j;

	for (i = 0; i < c->groups_hi; i++) {
		struct pl_group *g = c->groups[i];
		int idx;

		/* acquire: pairs with the worker's release store of bad */
		if (g == NULL || !__atomic_load_n(&g->bad, __ATOMIC_ACQUIRE))
			continue;
		idx = (int)g->idx;
		DPSOCK_LOG(WARNING, preload, "group %d broke the protocol (corrupt ring or "
			   "command): its processes are disconnected and its sockets reset", idx);
		for (j = 0; j < c->n_conns && c->groups[i] == g; j++)
			if (c->conns[j].fd >= 0 && c->conns[j].group == idx)
				conn_close(c, &c->conns[j]);
		if (quitting(c))
			return;
	}
}

static void *
ctl_main(void *arg)
{
	struct pl_ctl *c = arg;
	struct pollfd *pfd;
	unsigned int i, n;

	pfd = calloc(PL_MAX_CONNS + 2, sizeof(*pfd));
	if (pfd == NULL) {
		DPSOCK_LOG(ERR, preload, "control thread: out of memory");
		return NULL;
	}
	while (!quitting(c)) {
		if (__atomic_load_n(&c->tko_freeze, __ATOMIC_ACQUIRE) != 0) {
			ctl_tko_wait(c);
			if (__atomic_load_n(&c->tko_freeze, __ATOMIC_ACQUIRE) == 2)
				break; /* handed over: everything here is the new process's */
			continue;
		}
		pfd[0].fd = c->lfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = c->efd;
		pfd[1].events = POLLIN;
		for (i = 0; i < c->n_conns; i++) {
			pfd[2 + i].fd = c->conns[i].fd; /* -1: ignored by poll */
			pfd[2 + i].events = POLLIN;
			pfd[2 + i].revents = 0;
		}
		n = c->n_conns;
		if (poll(pfd, 2 + n, CTL_TICK_MS) < 0 && errno != EINTR)
			break;
		if (quitting(c))
			break;
		if (pfd[1].revents & POLLIN) {
			uint64_t v;

			if (read(c->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				break;
			drop_bad_groups(c);
		}
		for (i = 0; i < n && !quitting(c); i++) {
			struct pl_conn *cn = &c->conns[i];

			if (cn->fd < 0 || pfd[2 + i].fd != cn->fd || pfd[2 + i].revents == 0)
				continue;
			if (!conn_input(c, cn))
				conn_close(c, cn);
		}
		if (pfd[0].revents & POLLIN)
			conn_accept(c);
		client_stats_refresh(c);
	}
	free(pfd);
	return NULL;
}

void
dpsock_pl_group_report_bad(struct pl_group *g)
{
	static const uint64_t one = 1;

	/* release: pairs with the control thread's acquire load of bad */
	__atomic_store_n(&g->bad, 1, __ATOMIC_RELEASE);
	if (write(dpsock_pl_ctl.efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		DPSOCK_LOG(ERR, preload, "waking the control thread: %s", strerror(errno));
}

/* ---------------------------------------------------------------------- */
/* start and stop */

static int
mkdir_p(const char *dir)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", dir);
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int
listen_socket(struct pl_ctl *c)
{
	const struct dpsock_config *conf = &c->d->conf;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	ret = mkdir_p(conf->runtime_dir);
	if (ret != 0) {
		fprintf(stderr, "dpsockd: runtime_dir %s: %s\n", conf->runtime_dir, strerror(-ret));
		return ret;
	}
	if ((size_t)snprintf(c->path, sizeof(c->path), "%s/%s%s", conf->runtime_dir, conf->name,
			     DPSOCK_PL_SOCK_SUFFIX) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "dpsockd: control socket path %s/%s%s is too long\n",
			conf->runtime_dir, conf->name, DPSOCK_PL_SOCK_SUFFIX);
		c->path[0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(sa.sun_path, c->path, strlen(c->path) + 1);
	/* A socket file already there: a live daemon answers (refuse to start),
	 * a dead one's leftover refuses the connection (replace it). */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		fprintf(stderr, "dpsockd: %s: another dpsockd named '%s' is running (its control "
			"socket answers); stop it or choose another name\n", c->path, conf->name);
		c->path[0] = '\0';
		return -EADDRINUSE;
	}
	ret = errno;
	close(fd);
	if (ret == ECONNREFUSED) {
		DPSOCK_LOG(NOTICE, preload, "replacing the stale control socket %s", c->path);
		unlink(c->path);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		ret = -errno;
		fprintf(stderr, "dpsockd: control socket %s: %s\n", c->path, strerror(errno));
		close(fd);
		c->path[0] = '\0';
		return ret;
	}
	/* allowed non-root users connect; the credentials decide who
	 * attaches. Every message carries its sender's (SCM_CREDENTIALS, from
	 * the kernel): a forked child attaches over a connection its parent
	 * opened for it, so the connector is not always the sender. Set on
	 * the listener, so that accepted sockets have it from the start. */
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &(int){ 1 }, sizeof(int)) != 0 ||
	    chmod(c->path, 0666) != 0 || listen(fd, 64) != 0) {
		ret = -errno;
		fprintf(stderr, "dpsockd: control socket %s: %s\n", c->path, strerror(errno));
		close(fd);
		unlink(c->path);
		c->path[0] = '\0';
		return ret;
	}
	c->lfd = fd;
	return 0;
}

/* Before the workers start: the state they share with the control thread
 * (wake page, group table, acknowledgements) and their own buffers. */
/*
 * The wake page's net view: what the shim's offload decision reads (the
 * served addresses, their ports' gateways, the routes), from the stack's
 * view, under the sequence lock of struct dpsock_pl_netview. One writer:
 * main_init, then the kernel follower's thread.
 */
static void
pl_netview_write(struct dpsock_stack *d, const struct dpsock_netview *v)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	struct dpsock_pl_netview *nv;
	uint32_t seq, i, k, n = 0;

	if (c->wake == NULL || v == NULL)
		return;
	nv = (struct dpsock_pl_netview *)(void *)((unsigned char *)c->wake + DPSOCK_PL_WAKE_NETVIEW);
	seq = nv->seq;
	__atomic_store_n(&nv->seq, seq + 1, __ATOMIC_RELAXED);
	/* release fence: the odd seq is visible before any field changes,
	 * pairs with the reader's acquire fence before it reads seq again */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (i = 0; i < v->n_addrs && n < DPSOCK_PL_MAX_ADDRS; i++) {
		const struct dpsock_nv_addr *a = &v->addrs[i];
		const struct dpsock_nv_route *def = NULL;

		if (a->addr == 0)
			continue;
		/* the port's default gateway: its default route of lowest priority */
		for (k = 0; k < v->n_routes; k++)
			if (v->routes[k].port == a->port && v->routes[k].prefix_len == 0 &&
			    v->routes[k].gateway != 0 &&
			    (def == NULL || v->routes[k].priority < def->priority))
				def = &v->routes[k];
		nv->ifaces[n++] = (struct dpsock_pl_iface){
			.addr = a->addr, .gateway = def != NULL ? def->gateway : 0,
			.prefix_len = a->prefix_len, .port = a->port,
			.mtu = v->ports[a->port].mtu, .ifindex = v->ports[a->port].ifindex };
	}
	nv->n_ifaces = n;
	for (i = 0, n = 0; i < v->n_routes && n < DPSOCK_PL_MAX_ROUTES; i++) {
		const struct dpsock_nv_route *r = &v->routes[i];

		if (r->prefix_len == 0 || r->gateway == 0)
			continue;   /* the gateways above; the connected subnets */
		nv->routes[n++] = (struct dpsock_pl_route){ .dest = r->dest, .gateway = r->gateway,
							     .prefix_len = r->prefix_len,
							     .iface = r->port };
	}
	nv->n_routes = n;
	/* IPv6: an owned port's address6, a shared port's kernel addresses;
	 * not the link-local ones (a socket of fe80:: stays the kernel's) */
	for (i = 0, n = 0; i < v->n_addrs6 && n < DPSOCK_PL_MAX_ADDRS; i++) {
		const struct dpsock_nv_addr6 *a = &v->addrs6[i];

		if (a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80)
			continue;
		nv->ifaces6[n] = (struct dpsock_pl_iface6){ .prefix_len = a->prefix_len,
							    .port = a->port };
		for (k = 0; k < v->n_routes6; k++)
			if (v->routes6[k].port == a->port && v->routes6[k].prefix_len == 0)
				nv->ifaces6[n].flags |= DPSOCK_PL_IF6_DEFAULT;
		memcpy(nv->ifaces6[n++].addr, a->addr, 16);
	}
	nv->n_ifaces6 = n;
	/* release: the fields before the even seq (the reader's acquire) */
	__atomic_store_n(&nv->seq, seq + 2, __ATOMIC_RELEASE);
}

/*
 * The wake page: one line per worker, then what dpsockd serves. Clients
 * get a read-only descriptor of it (wake_ro_fd, opened through /proc), and
 * the file is root's with mode 0444, so that no client can map it
 * writable or open it for writing again; its size is sealed. dpsockd's own
 * descriptor stays writable, so that a takeover's new process can map it
 * too (a F_SEAL_FUTURE_WRITE seal would forbid that to everyone).
 */
static int
wake_page_map(struct pl_ctl *c)
{
	char path[64];

	c->wake = mmap(NULL, c->wake_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->wake_fd, 0);
	if (c->wake == MAP_FAILED) {
		c->wake = NULL;
		return -errno;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", c->wake_fd);
	c->wake_ro_fd = open(path, O_RDONLY | O_CLOEXEC);
	return c->wake_ro_fd < 0 ? -errno : 0;
}

static int
wake_page_create(struct pl_ctl *c)
{
	static_assert(DPSOCK_MAX_WORKERS * sizeof(struct dpsock_pl_wake) <= DPSOCK_PL_WAKE_NETVIEW,
		      "the wake lines fit before the net view");
	c->wake_size = align_up(DPSOCK_PL_WAKE_NETVIEW + sizeof(struct dpsock_pl_netview), 4096);
	c->wake_fd = memfd_create("dpsock-wake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (c->wake_fd < 0 || ftruncate(c->wake_fd, (off_t)c->wake_size) != 0 ||
	    fchmod(c->wake_fd, 0444) != 0 ||
	    fcntl(c->wake_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		return -errno;
	return wake_page_map(c);
}

int
dpsock_pl_main_init(void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	struct dpsock_stack *d = dpsock_stack_get();
	int ret;

	c->d = d;
	c->n_workers = d->n_workers;
	c->max_groups = d->conf.pl_max_groups;
	c->max_waiters = d->conf.pl_max_threads * PL_WAITERS_PER_THREAD;
	c->slots = d->conf.pl_slots;
	pl_fit_address_space(c);
	c->groups = calloc(c->max_groups, sizeof(*c->groups));
	c->ack = calloc(c->n_workers, sizeof(*c->ack));
	if (c->groups == NULL || c->ack == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->efd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = dpsock_tko_taking(d) ? pl_tko_import(c) : wake_page_create(c);
	if (ret != 0)
		goto fail;
	ret = dpsock_pl_srv_init(c->n_workers);
	if (ret == 0) {
		/* the addresses and routes: now, and after every change (a port
		 * shared with the kernel follows its netdev) */
		pl_netview_write(d, d->nv);
		d->nv_changed = pl_netview_write;
		return 0;
	}
fail:
	dpsock_pl_main_fini(arg);
	return ret;
}

int
dpsock_pl_main_start(void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	int ret;

	RTE_SET_USED(arg);
	if (c->lfd >= 0) {
		/* a takeover: the holder's socket, already bound and listening */
		ret = (size_t)snprintf(c->path, sizeof(c->path), "%s/%s%s", c->d->conf.runtime_dir,
				       c->d->conf.name, DPSOCK_PL_SOCK_SUFFIX) < sizeof(c->path) ?
		      0 : -ENAMETOOLONG;
	} else {
		ret = listen_socket(c);
	}
	if (ret != 0)
		return ret;
	ret = pthread_create(&c->thread, NULL, ctl_main, c);
	if (ret != 0) {
		close(c->lfd);
		c->lfd = -1;
		unlink(c->path);
		return -ret;
	}
	pthread_setname_np(c->thread, "dpsock-ctl");
	c->running = true;
	DPSOCK_LOG(NOTICE, preload, "clients attach at %s (max %u groups, %u threads and "
		   "%u sockets per worker each, FIFOs %u/%u KiB)", c->path, c->max_groups,
		   c->d->conf.pl_max_threads, c->slots, c->d->conf.pl_rx_fifo_kb,
		   c->d->conf.pl_tx_fifo_kb);
	return 0;
}

void
dpsock_pl_main_stop(void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	static const uint64_t one = 1;

	RTE_SET_USED(arg);
	if (!c->running)
		return;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
	if (write(c->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		DPSOCK_LOG(ERR, preload, "stopping the control thread: %s", strerror(errno));
	pthread_join(c->thread, NULL);
	c->running = false;
	/* No new client from here on; the ones attached keep their connection
	 * until main_fini, after the workers published the stop. */
	if (c->lfd >= 0)
		close(c->lfd);
	c->lfd = -1;
	if (c->path[0] != '\0')
		unlink(c->path);
}

void
dpsock_pl_main_fini(void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	unsigned int i;

	RTE_SET_USED(arg);
	for (i = 0; i < c->n_conns; i++) {
		if (c->conns[i].fd < 0)
			continue;
		client_stats_close(c, &c->conns[i]);
		close(c->conns[i].fd);
		c->conns[i].fd = -1;
	}
	c->n_conns = 0;
	for (i = 0; c->groups != NULL && i < c->max_groups; i++) {
		group_free(c, c->groups[i]);
		c->groups[i] = NULL;
	}
	free(c->groups);
	c->groups = NULL;
	free(c->ack);
	c->ack = NULL;
	if (c->wake != NULL)
		munmap(c->wake, c->wake_size);
	c->wake = NULL;
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	if (c->wake_ro_fd >= 0)
		close(c->wake_ro_fd);
	if (c->efd >= 0)
		close(c->efd);
	c->wake_fd = c->wake_ro_fd = c->efd = -1;
	dpsock_pl_srv_free();
}

/* ---------------------------------------------------------------------- */
/* takeover (stack/takeover/takeover.h): the control side's part */

enum {
	PL_TKO_R_CTL = DPSOCK_TKO_R_APP + 0x10,
	PL_TKO_R_GROUP,
	PL_TKO_R_CONN,
};

struct pl_tko_ctl {
	uint64_t wake_size;
	int32_t wake_fd;          /* indexes in the image's descriptor table */
	int32_t lfd;
	uint32_t groups_hi;
	uint32_t n_conns;
	uint32_t max_waiters;
	uint32_t slots;
};

struct pl_tko_group {
	uint32_t idx;
	uint32_t n_procs;
	uint64_t token;
	int32_t memfd;
	uint32_t chan_hi;
	uint32_t waiter_hi;
	uint32_t bad;
	struct dpsock_pl_seg geo;
	/* then chan_live, chan_waiter, chan_owner [max_channels] and
	 * waiter_live, waiter_owner, waiter_fd (table indexes) [max_waiters],
	 * 32 bits each */
};

struct pl_tko_conn {
	uint32_t i;
	int32_t fd;
	int32_t pid;
	uint32_t uid;
	int32_t group;
	uint32_t n_chans;
	uint32_t n_waiters;
	char name[64];
};

/* The control thread stops at the top of its loop, where it is in the
 * middle of nothing (a removal it started waited for the workers, which
 * still run: the workers freeze after it). */
static void
ctl_tko_wait(struct pl_ctl *c)
{
	/* release: the control thread's changes before are the takeover thread's */
	__atomic_store_n(&c->tko_frozen, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&c->tko_freeze, __ATOMIC_ACQUIRE) == 1)
		sleep_us(500);
	__atomic_store_n(&c->tko_frozen, 0, __ATOMIC_RELEASE);
}

int
dpsock_pl_tko_freeze(void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	static const uint64_t one = 1;

	RTE_SET_USED(arg);
	if (!c->running)
		return 0;
	__atomic_store_n(&c->tko_freeze, 1, __ATOMIC_RELEASE);
	if (write(c->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return -errno;
	for (unsigned int waited = 0; !__atomic_load_n(&c->tko_frozen, __ATOMIC_ACQUIRE);
	     waited += 200) {
		if (!__atomic_load_n(&c->running, __ATOMIC_RELAXED) || quitting(c) ||
		    waited >= PL_TKO_FREEZE_US) {
			/* it finishes what it was doing, then goes on */
			__atomic_store_n(&c->tko_freeze, 0, __ATOMIC_RELEASE);
			return waited >= PL_TKO_FREEZE_US ? -ETIMEDOUT : -ESHUTDOWN;
		}
		sleep_us(200);
	}
	return 0;
}

void
dpsock_pl_tko_resume(void *arg, bool handed)
{
	struct pl_ctl *c = &dpsock_pl_ctl;

	RTE_SET_USED(arg);
	/* 2: handed over, the thread returns without closing anything */
	__atomic_store_n(&c->tko_freeze, handed ? 2 : 0, __ATOMIC_RELEASE);
	if (handed && c->running) {
		pthread_join(c->thread, NULL);
		c->running = false;
	}
}

int
dpsock_pl_tko_export(void *arg, struct dpsock_tko_buf *b, struct dpsock_tko_fds *f)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	struct pl_tko_ctl ct = { 0 };
	uint32_t i, j;

	RTE_SET_USED(arg);
	ct.wake_size = c->wake_size;
	ct.wake_fd = dpsock_tko_fd_add(f, c->wake_fd);
	ct.lfd = dpsock_tko_fd_add(f, c->lfd);
	ct.groups_hi = c->groups_hi;
	ct.n_conns = c->n_conns;
	ct.max_waiters = c->max_waiters;
	ct.slots = c->slots;
	dpsock_tko_buf_put(b, PL_TKO_R_CTL, &ct, sizeof(ct), NULL, 0);
	for (i = 0; i < c->groups_hi; i++) {
		struct pl_group *g = c->groups[i];
		struct pl_tko_group tg = { 0 };
		uint32_t nc, nw, *arr;
		size_t alen;

		if (g == NULL)
			continue;
		if (g->dying)
			return -EBUSY; /* frozen between its release and its end: not here */
		nc = g->geo.max_channels;
		nw = g->geo.max_waiters;
		tg.idx = g->idx;
		tg.n_procs = g->n_procs;
		tg.token = g->token;
		tg.memfd = dpsock_tko_fd_add(f, g->memfd);
		tg.chan_hi = g->chan_hi;
		tg.waiter_hi = g->waiter_hi;
		tg.bad = __atomic_load_n(&g->bad, __ATOMIC_ACQUIRE);
		tg.geo = g->geo;
		alen = (size_t)(3 * nc + 3 * nw) * sizeof(uint32_t);
		arr = malloc(alen);
		if (arr == NULL)
			return -ENOMEM;
		for (j = 0; j < nc; j++) {
			arr[j] = g->chan_live[j];
			arr[nc + j] = g->chan_waiter[j];
			arr[2 * nc + j] = (uint32_t)g->chan_owner[j];
		}
		for (j = 0; j < nw; j++) {
			arr[3 * nc + j] = g->waiter_live[j];
			arr[3 * nc + nw + j] = (uint32_t)g->waiter_owner[j];
			arr[3 * nc + 2 * nw + j] = g->waiter_fd[j] >= 0 ?
						   (uint32_t)dpsock_tko_fd_add(f, g->waiter_fd[j]) :
						   UINT32_MAX;
		}
		dpsock_tko_buf_put(b, PL_TKO_R_GROUP, &tg, sizeof(tg), arr, alen);
		free(arr);
	}
	for (i = 0; i < c->n_conns; i++) {
		const struct pl_conn *cn = &c->conns[i];
		struct pl_tko_conn tc = { 0 };

		if (cn->fd < 0)
			continue;
		tc.i = i;
		tc.fd = dpsock_tko_fd_add(f, cn->fd);
		tc.pid = cn->pid;
		tc.uid = cn->uid;
		tc.group = cn->group;
		tc.n_chans = cn->n_chans;
		tc.n_waiters = cn->n_waiters;
		memcpy(tc.name, cn->name, sizeof(tc.name));
		dpsock_tko_buf_put(b, PL_TKO_R_CONN, &tc, sizeof(tc), NULL, 0);
	}
	return b->err != 0 ? b->err : f->err;
}

static int
pl_tko_group_import(struct pl_ctl *c, struct dpsock_tko_rd *r, const void *data, uint32_t len)
{
	struct pl_tko_group tg;
	const uint32_t *arr;
	struct pl_group *g;
	uint32_t nc, nw, j;
	int ret;

	if (len < sizeof(tg))
		return -EINVAL;
	memcpy(&tg, data, sizeof(tg));
	nc = tg.geo.max_channels;
	nw = tg.geo.max_waiters;
	if (tg.idx >= c->max_groups || c->groups[tg.idx] != NULL ||
	    tg.geo.n_workers != c->n_workers ||
	    len != sizeof(tg) + (size_t)(3 * nc + 3 * nw) * sizeof(uint32_t))
		return -EINVAL;
	arr = (const uint32_t *)(const void *)((const unsigned char *)data + sizeof(tg));
	g = calloc(1, sizeof(*g) + c->n_workers * sizeof(g->wg[0]));
	if (g == NULL)
		return -ENOMEM;
	g->idx = tg.idx;
	g->token = tg.token;
	g->geo = tg.geo;
	g->memfd = dpsock_tko_claim_fd(c->d, r, tg.memfd);
	g->seg_size = g->geo.seg_size;
	g->bad = tg.bad;
	ret = group_alloc_private(c, g);
	if (ret != 0 || g->memfd < 0) {
		group_free(c, g);
		return ret != 0 ? ret : -EBADF;
	}
	g->seg = mmap(NULL, g->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, g->memfd, 0);
	if (g->seg == MAP_FAILED) {
		ret = -errno;
		g->seg = NULL;
		group_free(c, g);
		return ret;
	}
	madvise(g->seg + g->geo.off_waiters, g->geo.off_slots - g->geo.off_waiters, MADV_DONTDUMP);
	madvise(g->seg + g->geo.off_data, g->seg_size - g->geo.off_data, MADV_DONTDUMP);
	for (j = 0; j < nc; j++) {
		g->chan_live[j] = arr[j];
		g->chan_waiter[j] = arr[nc + j];
		g->chan_owner[j] = (int)arr[2 * nc + j];
	}
	for (j = 0; j < nw; j++) {
		g->waiter_live[j] = arr[3 * nc + j];
		g->waiter_owner[j] = (int)arr[3 * nc + nw + j];
		g->waiter_fd[j] = arr[3 * nc + 2 * nw + j] == UINT32_MAX ? -1 :
				  dpsock_tko_claim_fd(c->d, r, (int32_t)arr[3 * nc + 2 * nw + j]);
	}
	g->chan_hi = tg.chan_hi;
	g->waiter_hi = tg.waiter_hi;
	g->n_procs = tg.n_procs;
	/* the workers attach the rings as they restore their part (serve.c) */
	c->groups[g->idx] = g;
	if (g->idx + 1 > c->groups_hi)
		c->groups_hi = g->idx + 1;
	return 0;
}

/* main_init of a takeover: the wake page, the listening socket, the
 * groups and the connections of the holder. The workers restore their
 * part of each group after this (serve.c). */
static int
pl_tko_import(struct pl_ctl *c)
{
	struct dpsock_tko_rd r;
	const void *data;
	uint16_t type;
	uint32_t len;
	int ret, n;

	if (!dpsock_tko_main_part(c->d, &r))
		return -EPROTO;
	for (n = 0; n < (int)PL_MAX_CONNS; n++) {
		c->conns[n].fd = -1;
		c->conns[n].group = -1;
	}
	while ((n = dpsock_tko_next(&r, &type, &data, &len)) > 0) {
		switch (type) {
		case PL_TKO_R_CTL: {
			struct pl_tko_ctl ct;

			if (len != sizeof(ct))
				return -EINVAL;
			memcpy(&ct, data, sizeof(ct));
			if (ct.groups_hi > c->max_groups) {
				DPSOCK_LOG(ERR, preload, "takeover: the holder has %u groups, "
					   "preload.max_groups here is %u", ct.groups_hi, c->max_groups);
				return -E2BIG;
			}
			c->wake_size = ct.wake_size;
			c->wake_fd = dpsock_tko_claim_fd(c->d, &r, ct.wake_fd);
			c->lfd = dpsock_tko_claim_fd(c->d, &r, ct.lfd);
			c->max_waiters = ct.max_waiters;
			c->slots = ct.slots;
			if (c->wake_fd < 0 || c->lfd < 0)
				return -EBADF;
			ret = wake_page_map(c);
			if (ret != 0)
				return ret;
			break;
		}
		case PL_TKO_R_GROUP:
			ret = pl_tko_group_import(c, &r, data, len);
			if (ret != 0)
				return ret;
			break;
		case PL_TKO_R_CONN: {
			struct pl_tko_conn tc;
			struct pl_conn *cn;

			if (len != sizeof(tc) || (memcpy(&tc, data, sizeof(tc)), tc.i >= PL_MAX_CONNS))
				return -EINVAL;
			cn = &c->conns[tc.i];
			memset(cn, 0, sizeof(*cn));
			cn->fd = dpsock_tko_claim_fd(c->d, &r, tc.fd);
			cn->pid = tc.pid;
			cn->uid = tc.uid;
			cn->group = tc.group;
			cn->n_chans = tc.n_chans;
			cn->n_waiters = tc.n_waiters;
			memcpy(cn->name, tc.name, sizeof(cn->name));
			cn->name[sizeof(cn->name) - 1] = '\0';
			cn->stats_idx = -1;
			if (tc.i + 1 > c->n_conns)
				c->n_conns = tc.i + 1;
			client_stats_open(c, cn);
			break;
		}
		default:
			return -EPROTO;
		}
	}
	return n < 0 ? n : 0;
}
