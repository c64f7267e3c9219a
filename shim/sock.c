/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sock.c — socket shadow objects and the socket hooks: socket, bind,
 * listen, accept, connect, the send and receive families, shutdown, close,
 * names, options, fcntl/ioctl, dup, sendfile, fork.
 *
 * Every socket() is a real kernel socket (DESIGN.md decision 6). An AF_INET
 * stream or datagram socket also gets a shadow object keyed by fd; the
 * offload decision is taken at listen / connect / UDP bind / first UDP send.
 * A descriptor without a shadow object, or whose object stays in the
 * kernel, goes straight to libc: same return, same errno.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "shim_priv.h"

#define HOOK DPSOCK_SHIM_EXPORT

/* ---- fd table: two levels, 1024 x 1024 entries, filled on demand -------- */

#define FDT_BITS 10
#define FDT_SIZE (1u << FDT_BITS)
static struct shim_sock **fdtab[FDT_SIZE];
static pthread_mutex_t fdtab_grow = PTHREAD_MUTEX_INITIALIZER;

/* Every offloaded object, for fork (process references). */
static pthread_mutex_t objs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_sock **objs;
static size_t n_objs, cap_objs;

struct shim_sock *
shim_sock_get(int fd)
{
	struct shim_sock **page;

	if ((unsigned int)fd >= FDT_SIZE * FDT_SIZE)
		return NULL;
	/* acquire: pairs with the release stores in fdtab_set (page, entry) */
	page = __atomic_load_n(&fdtab[(unsigned int)fd >> FDT_BITS], __ATOMIC_ACQUIRE);
	if (page == NULL)
		return NULL;
	return __atomic_load_n(&page[(unsigned int)fd & (FDT_SIZE - 1)], __ATOMIC_ACQUIRE);
}

static int
fdtab_set(int fd, struct shim_sock *s)
{
	unsigned int hi = (unsigned int)fd >> FDT_BITS;
	struct shim_sock **page;

	if ((unsigned int)fd >= FDT_SIZE * FDT_SIZE)
		return -EMFILE;
	page = __atomic_load_n(&fdtab[hi], __ATOMIC_ACQUIRE);
	if (page == NULL) {
		pthread_mutex_lock(&fdtab_grow);
		page = fdtab[hi];
		if (page == NULL) {
			page = calloc(FDT_SIZE, sizeof(*page));
			if (page == NULL) {
				pthread_mutex_unlock(&fdtab_grow);
				return -ENOMEM;
			}
			/* release: the zeroed page before its address (shim_sock_get) */
			__atomic_store_n(&fdtab[hi], page, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&fdtab_grow);
	}
	/* release: the object's fields before its address (shim_sock_get) */
	__atomic_store_n(&page[(unsigned int)fd & (FDT_SIZE - 1)], s, __ATOMIC_RELEASE);
	return 0;
}

static struct shim_sock *
fdtab_take(int fd)
{
	struct shim_sock **page;

	if ((unsigned int)fd >= FDT_SIZE * FDT_SIZE)
		return NULL;
	page = __atomic_load_n(&fdtab[(unsigned int)fd >> FDT_BITS], __ATOMIC_ACQUIRE);
	if (page == NULL)
		return NULL;
	return __atomic_exchange_n(&page[(unsigned int)fd & (FDT_SIZE - 1)], NULL,
				   __ATOMIC_ACQ_REL);
}

static struct shim_sock *
sock_new(int type, int nonblock)
{
	struct shim_sock *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	s->type = type;
	s->nonblock = nonblock;
	s->backlog = 128;
	s->rcvtimeo_ms = -1;
	s->sndtimeo_ms = -1;
	return s;
}

static void objs_track_fork(void);

static void
objs_add(struct shim_sock *s)
{
	objs_track_fork();
	pthread_mutex_lock(&objs_lock);
	if (n_objs == cap_objs) {
		size_t cap = cap_objs ? cap_objs * 2 : 64;
		struct shim_sock **o = realloc(objs, cap * sizeof(*o));

		if (o == NULL) {
			pthread_mutex_unlock(&objs_lock);
			SHIM_LOG(WARNING, "out of memory: a forked child will not share a socket");
			return;
		}
		objs = o;
		cap_objs = cap;
	}
	objs[n_objs++] = s;
	pthread_mutex_unlock(&objs_lock);
}

static void
objs_del(struct shim_sock *s)
{
	pthread_mutex_lock(&objs_lock);
	for (size_t i = 0; i < n_objs; i++)
		if (objs[i] == s) {
			objs[i] = objs[--n_objs];
			break;
		}
	pthread_mutex_unlock(&objs_lock);
}

static struct dpsock_pl_slot *
sock_slot(struct shim_sock *s, uint32_t i)
{
	return shim_slot(s->slot[i]);
}

/* Worker that owns slot number n. */
static uint32_t
slot_worker(uint32_t n)
{
	return n / shim_seg()->slots_per_worker;
}

static bool
slot_valid(uint32_t n)
{
	const struct dpsock_pl_seg *g = shim_seg();

	return n < g->n_workers * g->slots_per_worker;
}

/* ---- process references (fork) ------------------------------------------- */

static bool
area_pid_add(struct shim_slot_area *a, uint32_t pid)
{
	for (int i = 0; i < SHIM_AREA_PIDS; i++) {
		uint32_t zero = 0;

		if (__atomic_compare_exchange_n(&a->pids[i], &zero, pid, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return true;
	}
	/* no room: nobody can tell when the last process lets go; the
	 * socket lives until the group ends */
	__atomic_store_n(&a->pinned, 1, __ATOMIC_RELEASE);
	return false;
}

/* Replace one copy of `from` by `to` (0 = remove). */
static bool
area_pid_swap(struct shim_slot_area *a, uint32_t from, uint32_t to)
{
	for (int i = 0; i < SHIM_AREA_PIDS; i++) {
		uint32_t v = from;

		if (__atomic_compare_exchange_n(&a->pids[i], &v, to, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/* true when another live process of the group still holds the socket */
static bool
area_held_elsewhere(struct shim_slot_area *a)
{
	if (__atomic_load_n(&a->pinned, __ATOMIC_ACQUIRE))
		return true;
	for (int i = 0; i < SHIM_AREA_PIDS; i++) {
		uint32_t p = __atomic_load_n(&a->pids[i], __ATOMIC_ACQUIRE);

		if (p == 0)
			continue;
		if (kill((pid_t)p, 0) == 0 || errno != ESRCH)
			return true;
		/* died without closing (_exit, kill): its reference goes */
		area_pid_swap(a, p, 0);
	}
	return false;
}

/* Tell the worker(s) this process group let go of the socket. */
static void
sock_release_slots(struct shim_sock *s)
{
	struct shim_slot_area *a;
	struct shim_thread *t;
	int abortive = s->linger.l_onoff && s->linger.l_linger == 0;
	uint32_t zero = 0;
	int saved = errno;

	if (!shim_sock_offloaded(s) || s->nslots == 0)
		return;
	a = shim_area(sock_slot(s, 0));
	area_pid_swap(a, (uint32_t)getpid(), 0);
	if (area_held_elsewhere(a) ||
	    !__atomic_compare_exchange_n(&a->closed, &zero, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		errno = saved;
		return;       /* another process of the group still holds it */
	}
	t = shim_thread_get();
	if (t != NULL) {      /* else dpsockd is unreachable: the group's end frees it */
		for (uint32_t i = 0; i < s->nslots; i++) {
			struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_CLOSE, .slot = s->slot[i],
						   .gen = s->gen[i] };

			c.arg[0] = abortive;
			shim_cmd_post(t, slot_worker(s->slot[i]), &c);
		}
	}
	errno = saved;
}

static void
sock_unref(struct shim_sock *s)
{
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (shim_sock_offloaded(s)) {
		objs_del(s);
		sock_release_slots(s);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* The object becomes offloaded with these slots; this process holds it. */
static void
sock_offloaded(struct shim_sock *s, int mode)
{
	struct shim_slot_area *a = shim_area(sock_slot(s, 0));

	/* a fresh slot: nobody else in the group knows it yet */
	for (int i = 0; i < SHIM_AREA_PIDS; i++)
		__atomic_store_n(&a->pids[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->pinned, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->closed, 0, __ATOMIC_RELAXED);
	area_pid_add(a, (uint32_t)getpid());
	/* identity for an exec()ed image: every slot of the socket. Relaxed:
	 * read by this process's next image (exec orders it) or by a forked
	 * child's (fork orders it). */
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct shim_slot_area *ai = shim_area(sock_slot(s, i));

		__atomic_store_n(&ai->gen, s->gen[i], __ATOMIC_RELAXED);
		__atomic_store_n(&ai->ino, s->ino, __ATOMIC_RELAXED);
	}
	objs_add(s);
	/* release: slots and geometry before mode (shim_sock_offloaded) */
	__atomic_store_n(&s->mode, mode, __ATOMIC_RELEASE);
}

/* ---- FIFO helpers ---------------------------------------------------------- */

/* Bytes in a FIFO region seen by a third party (readiness): acquire loads
 * pair with the producer's release of prod (P1) and the consumer's release
 * of cons (C2) in abi/spsc_ring.h. Clamped to size. */
static uint32_t
fifo_level_at(void *region, uint32_t size, uint32_t *prod, uint32_t *cons)
{
	const struct dpsock_spsc_hdr *h = region;
	uint32_t c = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
	uint32_t p = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	uint32_t n = p - c;

	*prod = p;
	*cons = c;
	return n > size ? size : n;
}

static uint32_t
fifo_level(void *region, uint32_t size)
{
	uint32_t p, c;

	return fifo_level_at(region, size, &p, &c);
}

static size_t
iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copy len bytes from src into the iovec array starting at byte off. */
static void
iov_put(const struct iovec *iov, int n, size_t off, const unsigned char *src, size_t len)
{
	for (int i = 0; i < n && len > 0; i++) {
		size_t l = iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < len ? l - off : len;
		memcpy((unsigned char *)iov[i].iov_base + off, src, k);
		src += k;
		len -= k;
		off = 0;
	}
}

static void
iov_get(const struct iovec *iov, int n, size_t off, unsigned char *dst, size_t len)
{
	for (int i = 0; i < n && len > 0; i++) {
		size_t l = iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < len ? l - off : len;
		memcpy(dst, (const unsigned char *)iov[i].iov_base + off, k);
		dst += k;
		len -= k;
		off = 0;
	}
}

/* Copy len bytes from the src iovec list at soff to the dst list at doff. */
static void
iov_copy(const struct iovec *dst, int nd, size_t doff, const struct iovec *src, int ns,
	 size_t soff, size_t len)
{
	for (int i = 0; i < ns && len > 0; i++) {
		size_t l = src[i].iov_len, k;

		if (soff >= l) {
			soff -= l;
			continue;
		}
		k = l - soff < len ? l - soff : len;
		iov_put(dst, nd, doff, (const unsigned char *)src[i].iov_base + soff, k);
		doff += k;
		len -= k;
		soff = 0;
	}
}

/* After the shim made room in slot i's rx FIFO (bell = rx_doorbell, op
 * RX_KICK) or put data in its tx FIFO (tx_doorbell, TX_KICK): if the worker
 * rang the doorbell (it stopped looking), take it and post the kick.
 * seq_cst: pairs with the worker's fence between setting the doorbell and
 * re-reading the FIFO: either it sees our room / data, or we see the bell. */
static void
doorbell_kick(struct shim_sock *s, uint32_t i, uint32_t *bell, uint16_t op)
{
	struct shim_thread *t;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(bell, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(bell, 0, __ATOMIC_ACQ_REL)) {
		struct dpsock_pl_cmd c = { .op = op, .slot = s->slot[i], .gen = s->gen[i] };

		t = shim_thread_get();
		if (t != NULL)
			shim_cmd_post(t, slot_worker(s->slot[i]), &c);
	}
}

static void
rx_kick(struct shim_sock *s, uint32_t i)
{
	doorbell_kick(s, i, &sock_slot(s, i)->rx_doorbell, DPSOCK_PL_OP_RX_KICK);
}

static void
tx_kick(struct shim_sock *s, uint32_t i)
{
	doorbell_kick(s, i, &sock_slot(s, i)->tx_doorbell, DPSOCK_PL_OP_TX_KICK);
}

/* ---- readiness ------------------------------------------------------------- */

/*
 * Readiness, and (when sig != NULL) the socket's edge signature taken from
 * the same loads: sig->in moves when something arrives (rx FIFO producer
 * positions, state, flags), sig->out when room is made (tx FIFO consumer
 * positions, state, flags). Edge-triggered epoll reports a ready socket
 * only when the signature of the side it is ready on moved since its last
 * report: what it saw as ready and what it remembers are then one
 * observation, whatever order the worker's notification arrives in.
 */
uint32_t
shim_sock_ready_sig(struct shim_sock *s, struct shim_edge_sig *sig)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint64_t in = 0, out = 0, st = 0;
	uint32_t ev = 0, p, c;

	if (shim_daemon_gone()) {
		if (sig != NULL)
			*sig = (struct shim_edge_sig){ .in = UINT64_MAX, .out = UINT64_MAX };
		return POLLIN | POLLOUT | POLLERR | POLLHUP;
	}
	switch (s->mode) {
	case SHIM_TCP_LISTEN:
		for (uint32_t i = 0; i < s->nslots; i++) {
			if (fifo_level_at(shim_slot_rx(s->slot[i]), g->rx_fifo_size, &p, &c) >=
			    sizeof(struct dpsock_pl_accept))
				ev |= POLLIN;
			in += p;
		}
		if (s->shut_rd)
			ev |= POLLIN | POLLHUP;
		st = (uint64_t)s->shut_rd;
		break;
	case SHIM_TCP_CONN: {
		struct dpsock_pl_slot *sl = sock_slot(s, 0);
		/* acquire: pairs with the worker's release of state/flags after
		 * it filled the FIFO (data first, then EOF). */
		uint32_t st_ = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		uint32_t fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		uint32_t rxn = fifo_level_at(shim_slot_rx(s->slot[0]), g->rx_fifo_size, &p, &c);

		in = p;
		st = (uint64_t)st_ | (uint64_t)fl << 8 | (uint64_t)(s->shut_rd | s->shut_wr << 1) << 16;
		if (st_ == DPSOCK_PL_ST_CONNECTING)
			break;
		if (rxn > 0 || (fl & DPSOCK_PL_F_RD_EOF) || s->shut_rd)
			ev |= POLLIN;
		if (fl & DPSOCK_PL_F_RD_EOF)
			ev |= POLLRDHUP;
		if (st_ == DPSOCK_PL_ST_CLOSED) {
			ev |= POLLIN | POLLOUT | POLLHUP | POLLRDHUP;
			if (__atomic_load_n(&sl->err, __ATOMIC_RELAXED) != 0 && !s->err_taken)
				ev |= POLLERR;
			break;
		}
		if ((fl & DPSOCK_PL_F_WR_SHUT) || s->shut_wr) {
			ev |= POLLOUT;   /* a send would not block (it fails) */
			if (fl & DPSOCK_PL_F_RD_EOF)
				ev |= POLLHUP;
		} else if (g->tx_fifo_size - fifo_level_at(shim_slot_tx(s->slot[0]),
							   g->tx_fifo_size, &p, &c) > 0) {
			ev |= POLLOUT;
			out = c;
		} else {
			out = c;
		}
		break;
	}
	case SHIM_UDP: {
		uint32_t k = __atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots;

		for (uint32_t i = 0; i < s->nslots; i++) {
			if (fifo_level_at(shim_slot_rx(s->slot[i]), g->rx_fifo_size, &p, &c) > 0)
				ev |= POLLIN;
			in += p;
		}
		if (g->tx_fifo_size - fifo_level_at(shim_slot_tx(s->slot[k]), g->tx_fifo_size,
						    &p, &c) >=
		    sizeof(struct dpsock_pl_dgram) + 512)
			ev |= POLLOUT;
		out = c + ((uint64_t)k << 32);
		break;
	}
	default:
		break;
	}
	if (sig != NULL) {
		/* state in the high half: a transition counts as news on both
		 * sides (connect done, EOF, reset) */
		sig->in = in + (st << 40);
		sig->out = out + (st << 40);
	}
	return ev;
}

uint32_t
shim_sock_ready(struct shim_sock *s)
{
	return shim_sock_ready_sig(s, NULL);
}

bool
shim_sock_watch(struct shim_sock *s, int waiter_id)
{
	uint32_t me = (uint32_t)waiter_id + 1;
	bool all = true;

	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_slot *sl = sock_slot(s, i);
		bool have = false;

		for (int j = 0; j < DPSOCK_PL_WATCH && !have; j++)
			if (__atomic_load_n(&sl->watch[j], __ATOMIC_RELAXED) == me) {
				/* ours already (maybe left by a dead process whose
				 * waiter id was given to us): a stale queued flag would
				 * stop the worker from ever queueing the slot again; a
				 * duplicate in the wait ring is harmless */
				__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
				have = true;
			}
		for (int j = 0; j < DPSOCK_PL_WATCH && !have; j++) {
			uint32_t zero = 0;

			__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
			/* seq_cst CAS: ordered before the caller's own arm fence; the
			 * worker reads watch[] after its publish fence, so either it
			 * sees us or our re-check sees its change. */
			if (__atomic_compare_exchange_n(&sl->watch[j], &zero, me, false,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				have = true;
		}
		/* all taken: take back an entry whose waiter's process died
		 * without letting go (exit, kill, an nginx worker replaced) */
		for (int j = 0; j < DPSOCK_PL_WATCH && !have; j++) {
			uint32_t old = __atomic_load_n(&sl->watch[j], __ATOMIC_RELAXED);

			if (old == 0 || !shim_waiter_dead(old - 1))
				continue;
			__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
			/* seq_cst: as the CAS above */
			if (__atomic_compare_exchange_n(&sl->watch[j], &old, me, false,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				have = true;
		}
		all = all && have;
	}
	return all;
}

void
shim_sock_unwatch(struct shim_sock *s, int waiter_id)
{
	uint32_t me = (uint32_t)waiter_id + 1;

	if (!shim_sock_offloaded(s))
		return;
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_slot *sl = sock_slot(s, i);

		for (int j = 0; j < DPSOCK_PL_WATCH; j++) {
			uint32_t v = me;

			if (__atomic_compare_exchange_n(&sl->watch[j], &v, 0, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
		}
	}
}

int
shim_wait_sock(struct shim_sock *s, uint32_t want, int timeout_ms)
{
	struct shim_thread *t = shim_thread_get();
	uint64_t start = dpsock_now_us();
	long budget = dpsock_env.rx_poll_us;

	if (t == NULL)
		return -errno;
	for (;;) {
		uint64_t el;
		bool watched;
		int r, tmo;

		if (shim_sock_ready(s) & (want | POLLERR | POLLHUP))
			return 1;
		if (shim_daemon_gone())
			return -ECONNABORTED;
		el = dpsock_now_us() - start;
		if (timeout_ms >= 0 && el >= (uint64_t)timeout_ms * 1000)
			return 0;
		if (budget < 0 || el < (uint64_t)budget) {
			shim_cpu_relax();
			continue;
		}
		if (want & POLLOUT)
			for (uint32_t i = 0; i < s->nslots; i++)
				__atomic_store_n(&sock_slot(s, i)->want_tx, 1, __ATOMIC_RELAXED);
		watched = shim_sock_watch(s, t->w.id);
		__atomic_store_n(&t->w.hdr->armed, 1, __ATOMIC_RELAXED);
		/* seq_cst: pairs with the worker's fence between publishing a
		 * change and reading armed (docs/preload.md "Readiness"). */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		r = 0;
		if (!(shim_sock_ready(s) & (want | POLLERR | POLLHUP))) {
			tmo = watched ? 1000 : 1;
			if (timeout_ms >= 0) {
				long left = timeout_ms - (long)(el / 1000);

				if (left < tmo)
					tmo = left < 0 ? 0 : (int)left;
			}
			r = shim_sleep(&t->w, NULL, 0, tmo, NULL);
		}
		__atomic_store_n(&t->w.hdr->armed, 0, __ATOMIC_RELAXED);
		shim_waiter_drain(&t->w, NULL, NULL);
		shim_sock_unwatch(s, t->w.id);
		if (r == -EINTR)
			return -EINTR;
	}
}

/* ---- offload decision -------------------------------------------------------- */

static const char *const role_names[] = {
	[DPSOCK_PL_TCP_SERVER] = "tcp_server", [DPSOCK_PL_TCP_CLIENT] = "tcp_client",
	[DPSOCK_PL_UDP_RECEIVER] = "udp_receiver", [DPSOCK_PL_UDP_SENDER] = "udp_sender",
	[DPSOCK_PL_UDP_CONNECT] = "udp_connect",
};

static uint32_t
plen_mask(unsigned int plen)
{
	return plen == 0 ? 0 : htonl(~0u << (32 - (plen > 32 ? 32 : plen)));
}

static bool
served(int role, uint32_t addr)
{
	const struct dpsock_pl_seg *g = shim_seg();
	bool server = role == DPSOCK_PL_TCP_SERVER || role == DPSOCK_PL_UDP_RECEIVER;
	uint32_t n = g->n_ifaces < DPSOCK_PL_MAX_IFACES ? g->n_ifaces : DPSOCK_PL_MAX_IFACES;

	if (server && addr == htonl(INADDR_ANY))
		return n > 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct dpsock_pl_iface *f = &g->ifaces[i];
		uint32_t m = plen_mask(f->prefix_len);

		if (server ? addr == f->addr : ((addr & m) == (f->addr & m) || f->gateway != 0))
			return true;
	}
	return false;
}

/* 1: offload, 0: kernel. Logs the reason once per kind. */
static int
decide(int role, uint32_t addr, uint16_t port)
{
	static int logged_local, logged_unserved, logged_rule;
	const struct dpsock_pl_seg *g;
	char a[INET_ADDRSTRLEN];

	if ((ntohl(addr) >> 24) == 127) {
		if (!__atomic_exchange_n(&logged_local, 1, __ATOMIC_RELAXED))
			SHIM_LOG(INFO, "loopback addresses stay in the kernel");
		return 0;
	}
	if (shim_attach() < 0)
		return 0;
	g = shim_seg();
	for (uint32_t i = 0; i < g->n_rules && i < DPSOCK_PL_MAX_RULES; i++) {
		const struct dpsock_pl_rule *r = &g->rules[i];
		char id[sizeof(r->app_id) + 1];
		uint32_t m = plen_mask(r->prefix_len);

		memcpy(id, r->app_id, sizeof(r->app_id));
		id[sizeof(r->app_id)] = '\0';
		if (id[0] != '\0' && strcmp(id, "*") != 0 && strcmp(id, dpsock_env.app_id) != 0)
			continue;
		if (r->role != role || (addr & m) != (r->addr & m) ||
		    ntohs(port) < r->port_lo || ntohs(port) > r->port_hi)
			continue;
		if (!r->offload && !__atomic_exchange_n(&logged_rule, 1, __ATOMIC_RELAXED))
			SHIM_LOG(INFO, "a 'use os' rule keeps %s %s:%u in the kernel",
				 role_names[role], inet_ntop(AF_INET, &addr, a, sizeof(a)),
				 ntohs(port));
		return r->offload != 0;
	}
	if (served(role, addr))
		return 1;
	if (!__atomic_exchange_n(&logged_unserved, 1, __ATOMIC_RELAXED))
		SHIM_LOG(INFO, "%s %s: not an address dpsockd serves; kernel socket",
			 role_names[role], inet_ntop(AF_INET, &addr, a, sizeof(a)));
	return 0;
}

/* The remembered options a worker needs, sent after the slot exists. */
static void
sock_push_opts(struct shim_thread *t, struct shim_sock *s)
{
	struct {
		int on, level, name, val;
	} opts[] = {
		{ s->nodelay, IPPROTO_TCP, TCP_NODELAY, s->nodelay },
		{ s->keepalive, SOL_SOCKET, SO_KEEPALIVE, s->keepalive },
		{ s->keepidle, IPPROTO_TCP, TCP_KEEPIDLE, s->keepidle },
		{ s->keepintvl, IPPROTO_TCP, TCP_KEEPINTVL, s->keepintvl },
		{ s->keepcnt, IPPROTO_TCP, TCP_KEEPCNT, s->keepcnt },
		{ s->tos, IPPROTO_IP, IP_TOS, s->tos },
	};

	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
		if (!opts[o].on)
			continue;
		for (uint32_t i = 0; i < s->nslots; i++) {
			struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_SETOPT, .slot = s->slot[i],
						   .gen = s->gen[i] };
			struct dpsock_pl_reply r;

			c.arg[0] = opts[o].level;
			c.arg[1] = opts[o].name;
			c.arg[2] = opts[o].val;
			shim_cmd_call(t, slot_worker(s->slot[i]), &c, &r);
		}
	}
	for (uint32_t i = 0; s->cc[0] && s->type == SOCK_STREAM && i < s->nslots; i++) {
		struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_SETOPT, .slot = s->slot[i],
					   .gen = s->gen[i] };
		struct dpsock_pl_reply r;

		c.arg[0] = IPPROTO_TCP;
		c.arg[1] = TCP_CONGESTION;
		memcpy(&c.arg[2], s->cc, sizeof(s->cc));
		shim_cmd_call(t, slot_worker(s->slot[i]), &c, &r);
	}
}

/* LISTEN or UDP_BIND on every worker. Returns 0 or -errno. */
static int
sock_open_all(struct shim_sock *s, int op, uint32_t addr, uint16_t port)
{
	struct shim_thread *t = shim_thread_get();
	uint32_t n;

	if (t == NULL)
		return -errno;
	n = shim_proc.n_workers;
	for (uint32_t k = 0; k < n; k++) {
		struct dpsock_pl_cmd c = { .op = (uint16_t)op, .addr = addr, .port = port };
		struct dpsock_pl_reply r;
		int e;

		c.arg[0] = s->backlog;
		e = shim_cmd_call(t, k, &c, &r);
		if (e == 0)
			e = r.result;
		if (e == 0 && (!slot_valid(r.slot) || slot_worker(r.slot) != k))
			e = -EPROTO;
		if (e < 0) {
			for (uint32_t j = 0; j < k; j++) {
				struct dpsock_pl_cmd cl = { .op = DPSOCK_PL_OP_CLOSE,
							    .slot = s->slot[j], .gen = s->gen[j] };

				shim_cmd_post(t, j, &cl);
			}
			if (e == -ENOSPC)
				e = -EMFILE;
			if (e == -EMFILE)
				SHIM_LOG(WARNING, "dpsockd has no free slot: socket not offloaded");
			return e;
		}
		s->slot[k] = r.slot;
		s->gen[k] = r.gen;
		if (op == DPSOCK_PL_OP_UDP_BIND && port == 0)
			port = r.port;   /* the same port on the other workers */
	}
	s->nslots = n;
	s->laddr = addr;
	s->lport = port;
	s->bound = 1;
	s->udp_tx_worker = t->worker;
	sock_push_opts(t, s);
	return 0;
}

/* ---- errors ------------------------------------------------------------------ */

static inline int
fail(int e)
{
	errno = e;
	return -1;
}

static ssize_t
epipe(int flags)
{
	if (!(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	errno = EPIPE;
	return -1;
}

/* ---- TCP data ------------------------------------------------------------------ */

/* Pending error of a connection (once), else 0. */
static int
conn_take_err(struct shim_sock *s)
{
	struct dpsock_pl_slot *sl = sock_slot(s, 0);
	int e;

	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != DPSOCK_PL_ST_CLOSED)
		return 0;
	e = __atomic_load_n(&sl->err, __ATOMIC_RELAXED);
	if (e == 0 || s->err_taken)
		return 0;
	s->err_taken = 1;
	return e < 0 ? -e : e;
}

static ssize_t
tcp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = iov_total(iov, iovcnt), done = 0;
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	if (s->mode == SHIM_TCP_LISTEN)
		return fail(ENOTCONN);
	if (total == 0)
		return 0;
	for (;;) {
		struct dpsock_pl_slot *sl = sock_slot(s, 0);
		struct shim_slot_area *a = shim_area(sl);
		struct dpsock_fifo_cons c;
		struct iovec seg[2];
		uint32_t st, fl, n = 0;
		int e, w;

		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (st == DPSOCK_PL_ST_CONNECTING) {
			if (!block)
				return fail(EAGAIN);
			w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);
			if (w < 0)
				return done > 0 ? (ssize_t)done : fail(-w == ECONNABORTED ? ECONNRESET : -w);
			if (w == 0)
				return done > 0 ? (ssize_t)done : fail(EAGAIN);   /* SO_RCVTIMEO */
			continue;
		}
		shim_lock(&a->rx_lock);
		if (dpsock_fifo_cons_attach(&c, shim_slot_rx(s->slot[0]), g->rx_fifo_bytes) == 0) {
			n = dpsock_fifo_read_peek(&c, total - done, seg);
			iov_put(iov, iovcnt, done, seg[0].iov_base, seg[0].iov_len);
			iov_put(iov, iovcnt, done + seg[0].iov_len, seg[1].iov_base, seg[1].iov_len);
			if (!(flags & MSG_PEEK) && n > 0)
				dpsock_fifo_read_consume(&c, n);
		}
		shim_unlock(&a->rx_lock);
		if (n > 0 && !(flags & MSG_PEEK))
			rx_kick(s, 0);
		done += n;
		if (done == total || (n > 0 && (!(flags & MSG_WAITALL) || (flags & MSG_PEEK))))
			return (ssize_t)done;
		if (n > 0)
			continue;
		/* empty: EOF, error, or wait. Flags are read after the FIFO was
		 * seen empty; the worker publishes data before RD_EOF (release),
		 * so re-check the FIFO once more after seeing them. */
		fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if ((fl & DPSOCK_PL_F_RD_EOF) || st == DPSOCK_PL_ST_CLOSED || s->shut_rd ||
		    shim_daemon_gone()) {
			if (fifo_level(shim_slot_rx(s->slot[0]), g->rx_fifo_size) > 0)
				continue;
			if (done > 0)
				return (ssize_t)done;
			if (shim_daemon_gone() && !s->err_taken) {
				s->err_taken = 1;
				return fail(ECONNRESET);
			}
			e = conn_take_err(s);
			return e ? fail(e) : 0;
		}
		if (!block)
			return done > 0 ? (ssize_t)done : fail(EAGAIN);
		w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);
		if (w < 0 && w != -ECONNABORTED)
			return done > 0 ? (ssize_t)done : fail(-w);
		if (w == 0)
			return done > 0 ? (ssize_t)done : fail(EAGAIN);   /* SO_RCVTIMEO */
	}
}

static ssize_t
tcp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = iov_total(iov, iovcnt), done = 0;
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	if (s->mode == SHIM_TCP_LISTEN)
		return epipe(flags);
	for (;;) {
		struct dpsock_pl_slot *sl = sock_slot(s, 0);
		struct shim_slot_area *a = shim_area(sl);
		struct dpsock_fifo_prod p;
		struct iovec seg[2];
		uint32_t st, fl, n = 0;
		int e, w;

		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		if (shim_daemon_gone())
			return done > 0 ? (ssize_t)done : epipe(flags);
		if (st == DPSOCK_PL_ST_CLOSED) {
			if (done > 0)
				return (ssize_t)done;
			e = conn_take_err(s);
			return e ? fail(e) : epipe(flags);
		}
		if ((fl & DPSOCK_PL_F_WR_SHUT) || s->shut_wr)
			return done > 0 ? (ssize_t)done : epipe(flags);
		if (st == DPSOCK_PL_ST_CONNECTING) {
			if (!block)
				return fail(EAGAIN);
			w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
			if (w < 0 && w != -ECONNABORTED)
				return fail(-w);
			if (w == 0)
				return fail(EAGAIN);   /* SO_SNDTIMEO */
			continue;
		}
		if (total == 0)
			return 0;
		shim_lock(&a->tx_lock);
		if (dpsock_fifo_prod_attach(&p, shim_slot_tx(s->slot[0]), g->tx_fifo_bytes) == 0) {
			n = dpsock_fifo_write_reserve(&p, total - done, seg);
			iov_get(iov, iovcnt, done, seg[0].iov_base, seg[0].iov_len);
			iov_get(iov, iovcnt, done + seg[0].iov_len, seg[1].iov_base, seg[1].iov_len);
			if (n > 0)
				dpsock_fifo_write_commit(&p, n);
		}
		shim_unlock(&a->tx_lock);
		if (n > 0)
			tx_kick(s, 0);
		done += n;
		if (done == total)
			return (ssize_t)done;
		if (!block) {
			if (done > 0)
				return (ssize_t)done;
			__atomic_store_n(&sl->want_tx, 1, __ATOMIC_RELAXED);
			/* seq_cst: pairs with the worker's fence between freeing
			 * space and exchanging want_tx (it then notifies us). */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (g->tx_fifo_size - fifo_level(shim_slot_tx(s->slot[0]), g->tx_fifo_size) > 0)
				continue;
			return fail(EAGAIN);
		}
		w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
		if (w == -EINTR)
			return done > 0 ? (ssize_t)done : fail(EINTR);
		if (w == 0)
			return done > 0 ? (ssize_t)done : fail(EAGAIN);   /* SO_SNDTIMEO */
	}
}

/* ---- UDP data ------------------------------------------------------------------- */

static uint32_t
pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

static int udp_ensure_bound(struct shim_sock *s, int role, uint32_t addr, uint16_t port);

static ssize_t
udp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
	 const struct sockaddr *to, socklen_t tolen)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = iov_total(iov, iovcnt);
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);
	struct dpsock_pl_dgram h = { 0 };
	uint32_t need, k;

	if (to != NULL) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)to;

		if (tolen < sizeof(*sin))
			return fail(EINVAL);
		if (sin->sin_family != AF_INET)
			return fail(EAFNOSUPPORT);
		h.addr = sin->sin_addr.s_addr;
		h.port = sin->sin_port;
	} else if (s->udp_connected) {
		h.addr = s->raddr;
		h.port = s->rport;
	} else {
		return fail(EDESTADDRREQ);
	}
	if (total > DPSOCK_PL_DGRAM_MAX)
		return fail(EMSGSIZE);
	h.len = (uint32_t)total;
	need = (uint32_t)sizeof(h) + pad8(h.len);
	if (need > g->tx_fifo_size)
		return fail(EMSGSIZE);
	k = __atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots;
	for (;;) {
		struct dpsock_pl_slot *sl = sock_slot(s, k);
		struct shim_slot_area *a = shim_area(sl);
		struct dpsock_fifo_prod p;
		struct iovec seg[2];
		uint32_t n = 0;
		int w;

		if (shim_daemon_gone())
			return fail(EPIPE);
		shim_lock(&a->tx_lock);
		if (dpsock_fifo_prod_attach(&p, shim_slot_tx(s->slot[k]), g->tx_fifo_bytes) == 0 &&
		    dpsock_fifo_free(&p) >= need) {
			static const unsigned char zeros[8];

			/* the datagram is written whole into the reserved window,
			 * then published at once by the commit */
			n = dpsock_fifo_write_reserve(&p, need, seg);
			if (n == need) {
				iov_put(seg, 2, 0, (const unsigned char *)&h, sizeof(h));
				iov_copy(seg, 2, sizeof(h), iov, iovcnt, 0, h.len);
				iov_put(seg, 2, sizeof(h) + h.len, zeros, need - sizeof(h) - h.len);
				dpsock_fifo_write_commit(&p, n);
			} else {
				n = 0;
			}
		}
		shim_unlock(&a->tx_lock);
		if (n > 0) {
			tx_kick(s, k);
			return (ssize_t)h.len;
		}
		if (!block) {
			__atomic_store_n(&sl->want_tx, 1, __ATOMIC_RELAXED);
			return fail(EAGAIN);
		}
		w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
		if (w == -EINTR)
			return fail(EINTR);
		if (w == 0)
			return fail(EAGAIN);   /* SO_SNDTIMEO */
		if (w == 1 && g->tx_fifo_size - fifo_level(shim_slot_tx(s->slot[k]),
							   g->tx_fifo_size) < need) {
			/* writable, but not for a datagram this big yet */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
}

static ssize_t
udp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
	 struct sockaddr *from, socklen_t *fromlen, int *msg_flags)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = iov_total(iov, iovcnt);
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	for (;;) {
		for (uint32_t j = 0; j < s->nslots; j++) {
			uint32_t i = (s->rr + j) % s->nslots;
			struct dpsock_pl_slot *sl = sock_slot(s, i);
			struct shim_slot_area *a = shim_area(sl);
			struct dpsock_fifo_cons c;
			struct dpsock_pl_dgram h;
			struct iovec seg[2];
			uint32_t n, len, whole;
			bool got = false, drop = false;
			size_t copy = 0;

			if (fifo_level(shim_slot_rx(s->slot[i]), g->rx_fifo_size) < sizeof(h))
				continue;
			shim_lock(&a->rx_lock);
			if (dpsock_fifo_cons_attach(&c, shim_slot_rx(s->slot[i]), g->rx_fifo_bytes) != 0) {
				shim_unlock(&a->rx_lock);
				continue;
			}
			n = dpsock_fifo_read_peek(&c, sizeof(h), seg);
			if (n < sizeof(h)) {
				shim_unlock(&a->rx_lock);
				continue;
			}
			memcpy(&h, seg[0].iov_base, seg[0].iov_len);
			memcpy((unsigned char *)&h + seg[0].iov_len, seg[1].iov_base, seg[1].iov_len);
			len = h.len;
			whole = len <= DPSOCK_PL_DGRAM_MAX ? (uint32_t)sizeof(h) + pad8(len) : 0;
			n = whole ? dpsock_fifo_read_peek(&c, whole, seg) : 0;
			if (whole == 0 || n < whole) {
				/* the daemon publishes whole datagrams: a short one is
				 * corruption; drop what is there */
				SHIM_LOG(WARNING, "bad datagram record (len %u) in a UDP FIFO", len);
				dpsock_fifo_read_consume(&c, dpsock_fifo_read_peek(&c, UINT32_MAX, seg));
				shim_unlock(&a->rx_lock);
				continue;
			}
			if (s->udp_connected && (h.addr != s->raddr || h.port != s->rport))
				drop = true;
			if (!drop) {
				copy = len < total ? len : total;
				iov_copy(iov, iovcnt, 0, seg, 2, sizeof(h), copy);
				got = true;
			}
			if (drop || !(flags & MSG_PEEK))
				dpsock_fifo_read_consume(&c, whole);
			shim_unlock(&a->rx_lock);
			if (drop || !(flags & MSG_PEEK))
				rx_kick(s, i);
			if (!got)
				continue;
			s->rr = i + 1;
			/* Reply through the worker that received: request/response
			 * stays on one worker, the one that is awake (the thread's
			 * own worker may sleep). UDP promises no order; a switch
			 * can only reorder datagrams still queued on the old one. */
			__atomic_store_n(&s->udp_tx_worker, i, __ATOMIC_RELAXED);
			if (from != NULL && fromlen != NULL) {
				struct sockaddr_in sin = { .sin_family = AF_INET,
							   .sin_addr.s_addr = h.addr,
							   .sin_port = h.port };
				socklen_t l = *fromlen < sizeof(sin) ? *fromlen : sizeof(sin);

				memcpy(from, &sin, l);
				*fromlen = sizeof(sin);
			}
			if (msg_flags != NULL)
				*msg_flags = copy < len ? MSG_TRUNC : 0;
			return (flags & MSG_TRUNC) ? (ssize_t)len : (ssize_t)copy;
		}
		if (shim_daemon_gone())
			return fail(ECONNRESET);
		if (!block)
			return fail(EAGAIN);
		int w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);

		if (w == -EINTR)
			return fail(EINTR);
		if (w == 0)
			return fail(EAGAIN);   /* SO_RCVTIMEO */
	}
}

/* ---- socket, bind, listen, connect, accept ---------------------------------------- */

/* The kernel socket's inode (0: unknown; such a socket is not inherited
 * through exec). */
static uint64_t
fd_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? (uint64_t)st.st_ino : 0;
}

HOOK int
socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol);
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct shim_sock *s;

	if (fd < 0 || domain != AF_INET || (base != SOCK_STREAM && base != SOCK_DGRAM))
		return fd;
	if (protocol != 0 && protocol != (base == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP))
		return fd;
	dpsock_env_load();
	if (!dpsock_env.offload)
		return fd;
	s = sock_new(base, (type & SOCK_NONBLOCK) != 0);
	if (s != NULL)
		s->ino = fd_ino(fd);
	if (s == NULL || fdtab_set(fd, s) < 0) {
		free(s);
		return fd;      /* stays a kernel socket */
	}
	return fd;
}

HOOK int
bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct sockaddr_in any, got;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)addr;
	socklen_t gl = sizeof(got);
	int r, e;

	if (s == NULL || s->mode != SHIM_UNDECIDED || addr == NULL || len < sizeof(*sin) ||
	    sin->sin_family != AF_INET)
		return REAL(bind)(fd, addr, len);
	pthread_mutex_lock(&s->lock);
	r = REAL(bind)(fd, addr, len);
	if (r < 0 && errno == EADDRNOTAVAIL && decide(s->type == SOCK_STREAM ?
		    DPSOCK_PL_TCP_SERVER : DPSOCK_PL_UDP_RECEIVER, sin->sin_addr.s_addr,
		    sin->sin_port) == 1) {
		/* an address only dpsockd has: the kernel socket (the identity)
		 * takes the port on the wildcard address */
		any = *sin;
		any.sin_addr.s_addr = htonl(INADDR_ANY);
		r = REAL(bind)(fd, (struct sockaddr *)&any, sizeof(any));
	}
	if (r < 0) {
		e = errno;
		pthread_mutex_unlock(&s->lock);
		return fail(e);
	}
	if (REAL(getsockname)(fd, (struct sockaddr *)&got, &gl) == 0)
		s->lport = got.sin_port;
	s->laddr = sin->sin_addr.s_addr;
	s->bound = 1;
	if (s->type == SOCK_DGRAM && decide(DPSOCK_PL_UDP_RECEIVER, s->laddr, s->lport) == 1) {
		r = sock_open_all(s, DPSOCK_PL_OP_UDP_BIND, s->laddr, s->lport);
		if (r == 0)
			sock_offloaded(s, SHIM_UDP);
		else
			SHIM_LOG(WARNING, "UDP bind on dpsockd failed (%s): kernel socket",
				 strerror(-r));
	}
	if (!shim_sock_offloaded(s) && s->type == SOCK_DGRAM)
		s->mode = SHIM_KERNEL;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

HOOK int
listen(int fd, int backlog)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r;

	if (s == NULL || s->type != SOCK_STREAM || s->mode == SHIM_KERNEL)
		return REAL(listen)(fd, backlog);
	pthread_mutex_lock(&s->lock);
	if (s->mode == SHIM_TCP_LISTEN) {
		s->backlog = backlog;
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	if (s->mode == SHIM_TCP_CONN) {
		pthread_mutex_unlock(&s->lock);
		return fail(EINVAL);
	}
	if (!decide(DPSOCK_PL_TCP_SERVER, s->bound ? s->laddr : htonl(INADDR_ANY),
		    s->lport)) {
		s->mode = SHIM_KERNEL;
		pthread_mutex_unlock(&s->lock);
		return REAL(listen)(fd, backlog);
	}
	if (!s->bound) {
		struct sockaddr_in any = { .sin_family = AF_INET }, got;
		socklen_t gl = sizeof(got);

		if (REAL(bind)(fd, (struct sockaddr *)&any, sizeof(any)) < 0 ||
		    REAL(getsockname)(fd, (struct sockaddr *)&got, &gl) < 0) {
			r = errno;
			pthread_mutex_unlock(&s->lock);
			return fail(r);
		}
		s->lport = got.sin_port;
		s->bound = 1;
	}
	s->backlog = backlog < 0 ? 0 : backlog > 4096 ? 4096 : backlog;
	r = sock_open_all(s, DPSOCK_PL_OP_LISTEN, s->laddr, s->lport);
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return fail(-r);
	}
	sock_offloaded(s, SHIM_TCP_LISTEN);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int
tcp_connect(struct shim_sock *s, const struct sockaddr_in *sin)
{
	struct shim_thread *t;
	struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_CONNECT, .addr = sin->sin_addr.s_addr,
				   .port = sin->sin_port };
	struct dpsock_pl_reply r;
	uint32_t st;
	int e, w;

	t = shim_thread_get();
	if (t == NULL)
		return -errno;
	c.arg[0] = s->bound ? s->lport : 0;
	e = shim_cmd_call(t, t->worker, &c, &r);
	if (e == 0)
		e = r.result;
	if (e == 0 && !slot_valid(r.slot))
		e = -EPROTO;
	if (e < 0)
		return e == -ENOSPC ? -EMFILE : e;
	s->slot[0] = r.slot;
	s->gen[0] = r.gen;
	s->nslots = 1;
	s->laddr = r.addr;
	s->lport = r.port;
	sock_offloaded(s, SHIM_TCP_CONN);
	sock_push_opts(t, s);
	if (s->nonblock)
		return -EINPROGRESS;
	w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
	if (w < 0)
		return w == -ECONNABORTED ? -ECONNREFUSED : w;
	if (w == 0)
		return -EINPROGRESS;   /* SO_SNDTIMEO: it goes on in the background */
	st = __atomic_load_n(&sock_slot(s, 0)->state, __ATOMIC_ACQUIRE);
	if (st == DPSOCK_PL_ST_ESTABLISHED) {
		s->connect_reported = 1;
		return 0;
	}
	e = conn_take_err(s);
	s->connect_reported = 1;
	return e ? -e : -ECONNREFUSED;
}

HOOK int
connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)addr;
	int r;

	if (s == NULL || s->mode == SHIM_KERNEL)
		return REAL(connect)(fd, addr, len);
	pthread_mutex_lock(&s->lock);
	if (s->mode == SHIM_UNDECIDED) {
		int role = s->type == SOCK_STREAM ? DPSOCK_PL_TCP_CLIENT : DPSOCK_PL_UDP_CONNECT;

		if (addr == NULL || len < sizeof(*sin) || sin->sin_family != AF_INET ||
		    !decide(role, sin->sin_addr.s_addr, sin->sin_port)) {
			if (addr != NULL && len >= sizeof(sa_family_t) &&
			    addr->sa_family == AF_INET && s->type == SOCK_STREAM)
				s->mode = SHIM_KERNEL;
			pthread_mutex_unlock(&s->lock);
			return REAL(connect)(fd, addr, len);
		}
		if (s->type == SOCK_STREAM) {
			r = tcp_connect(s, sin);
			pthread_mutex_unlock(&s->lock);
			return r < 0 ? fail(-r) : 0;
		}
		r = udp_ensure_bound(s, DPSOCK_PL_UDP_CONNECT, sin->sin_addr.s_addr, sin->sin_port);
		if (r < 0) {
			pthread_mutex_unlock(&s->lock);
			return fail(-r);
		}
	}
	if (s->type == SOCK_DGRAM) {
		if (addr != NULL && len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC) {
			s->udp_connected = 0;
		} else if (addr == NULL || len < sizeof(*sin)) {
			pthread_mutex_unlock(&s->lock);
			return fail(EINVAL);
		} else if (sin->sin_family != AF_INET) {
			pthread_mutex_unlock(&s->lock);
			return fail(EAFNOSUPPORT);
		} else {
			s->raddr = sin->sin_addr.s_addr;
			s->rport = sin->sin_port;
			s->udp_connected = 1;
		}
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	/* TCP, already offloaded */
	if (s->mode == SHIM_TCP_LISTEN) {
		pthread_mutex_unlock(&s->lock);
		return fail(EISCONN);
	}
	{
		uint32_t st = __atomic_load_n(&sock_slot(s, 0)->state, __ATOMIC_ACQUIRE);
		int e;

		if (st == DPSOCK_PL_ST_CONNECTING) {
			if (s->nonblock) {
				pthread_mutex_unlock(&s->lock);
				return fail(EALREADY);
			}
			pthread_mutex_unlock(&s->lock);
			r = shim_wait_sock(s, POLLOUT, -1);
			if (r < 0)
				return fail(-r == ECONNABORTED ? ECONNREFUSED : -r);
			pthread_mutex_lock(&s->lock);
			st = __atomic_load_n(&sock_slot(s, 0)->state, __ATOMIC_ACQUIRE);
		}
		if (st == DPSOCK_PL_ST_ESTABLISHED) {
			e = s->connect_reported ? EISCONN : 0;
			s->connect_reported = 1;
			pthread_mutex_unlock(&s->lock);
			return e ? fail(e) : 0;
		}
		e = conn_take_err(s);
		pthread_mutex_unlock(&s->lock);
		return fail(e ? e : ECONNABORTED);
	}
}

static int
udp_ensure_bound(struct shim_sock *s, int role, uint32_t addr, uint16_t port)
{
	int r;

	(void)role, (void)addr, (void)port;
	if (shim_sock_offloaded(s))
		return 0;
	/* unbound: worker 0 picks an ephemeral port, the others follow */
	r = sock_open_all(s, DPSOCK_PL_OP_UDP_BIND, s->bound ? s->laddr : htonl(INADDR_ANY),
			  s->bound ? s->lport : 0);
	if (r < 0)
		return r;
	sock_offloaded(s, SHIM_UDP);
	return 0;
}

static int
do_accept(int fd, struct shim_sock *s, struct sockaddr *addr, socklen_t *alen, int flags)
{
	const struct dpsock_pl_seg *g = shim_seg();

	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return fail(EINVAL);
	for (;;) {
		/* round-robin over the workers' listener slots: each call starts
		 * one further than the last */
		uint32_t first = __atomic_fetch_add(&s->rr, 1, __ATOMIC_RELAXED);

		for (uint32_t j = 0; j < s->nslots; j++) {
			uint32_t i = (first + j) % s->nslots;
			struct shim_slot_area *a = shim_area(sock_slot(s, i));
			struct dpsock_pl_accept rec;
			struct dpsock_fifo_cons c;
			struct shim_sock *n;
			uint32_t got = 0;
			int nfd, e;

			if (fifo_level(shim_slot_rx(s->slot[i]), g->rx_fifo_size) < sizeof(rec))
				continue;
			shim_lock(&a->rx_lock);
			e = dpsock_fifo_cons_attach(&c, shim_slot_rx(s->slot[i]), g->rx_fifo_bytes);
			if (e == 0 && dpsock_fifo_used(&c) >= sizeof(rec))
				got = dpsock_fifo_read(&c, &rec, sizeof(rec));
			shim_unlock(&a->rx_lock);
			if (e < 0)
				SHIM_LOG(DEBUG, "listener slot %u: rx FIFO: %s", s->slot[i], strerror(-e));
			if (got != sizeof(rec))
				continue;
			rx_kick(s, i);
			if (!slot_valid(rec.slot)) {
				SHIM_LOG(WARNING, "accept record names slot %u: ignored", rec.slot);
				continue;
			}
			n = sock_new(SOCK_STREAM, (flags & SOCK_NONBLOCK) != 0);
			nfd = REAL(socket)(AF_INET, SOCK_STREAM | (flags & (SOCK_NONBLOCK | SOCK_CLOEXEC)), 0);
			if (n == NULL || nfd < 0 || fdtab_set(nfd, n) < 0) {
				int e = nfd < 0 ? errno : ENOMEM;
				struct shim_thread *t = shim_thread_get();
				struct dpsock_pl_cmd cl = { .op = DPSOCK_PL_OP_CLOSE, .slot = rec.slot,
							    .gen = rec.gen };

				cl.arg[0] = 1;
				if (t != NULL)
					shim_cmd_post(t, slot_worker(rec.slot), &cl);
				if (nfd >= 0)
					REAL(close)(nfd);
				free(n);
				return fail(e);
			}
			n->ino = fd_ino(nfd);
			n->slot[0] = rec.slot;
			n->gen[0] = rec.gen;
			n->nslots = 1;
			n->connect_reported = 1;
			n->nodelay = s->nodelay;
			n->keepalive = s->keepalive;
			n->linger = s->linger;
			n->rcvtimeo_ms = s->rcvtimeo_ms;
			n->sndtimeo_ms = s->sndtimeo_ms;
			sock_offloaded(n, SHIM_TCP_CONN);
			if (addr != NULL && alen != NULL) {
				struct dpsock_pl_slot *sl = shim_slot(rec.slot);
				struct sockaddr_in sin = { .sin_family = AF_INET,
							   .sin_addr.s_addr = sl->raddr,
							   .sin_port = sl->rport };
				socklen_t l = *alen < sizeof(sin) ? *alen : sizeof(sin);

				memcpy(addr, &sin, l);
				*alen = sizeof(sin);
			}
			return nfd;
		}
		if (s->shut_rd)
			return fail(EINVAL);
		if (shim_daemon_gone())
			return fail(ECONNABORTED);
		if (s->nonblock)
			return fail(EAGAIN);
		int w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);

		if (w < 0 && w != -ECONNABORTED)
			return fail(-w);
		if (w == 0)
			return fail(EAGAIN);   /* SO_RCVTIMEO */
	}
	(void)fd;
}

HOOK int
accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(accept4)(fd, addr, alen, flags);
	if (s->mode != SHIM_TCP_LISTEN)
		return fail(s->type == SOCK_STREAM ? EINVAL : EOPNOTSUPP);
	return do_accept(fd, s, addr, alen, flags);
}

HOOK int
accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(accept)(fd, addr, alen);
	if (s->mode != SHIM_TCP_LISTEN)
		return fail(s->type == SOCK_STREAM ? EINVAL : EOPNOTSUPP);
	return do_accept(fd, s, addr, alen, 0);
}

/* ---- data hooks ------------------------------------------------------------------ */

static ssize_t
sock_sendv(struct shim_sock *s, const struct iovec *iov, int n, int flags,
	   const struct sockaddr *to, socklen_t tolen)
{
	if (s->mode == SHIM_UDP)
		return udp_send(s, iov, n, flags, to, tolen);
	return tcp_send(s, iov, n, flags);
}

static ssize_t
sock_recvv(struct shim_sock *s, const struct iovec *iov, int n, int flags,
	   struct sockaddr *from, socklen_t *fromlen, int *mflags)
{
	if (mflags != NULL)
		*mflags = 0;
	if (s->mode == SHIM_UDP)
		return udp_recv(s, iov, n, flags, from, fromlen, mflags);
	if (fromlen != NULL)
		*fromlen = 0;
	return tcp_recv(s, iov, n, flags);
}

/* First send on an unbound UDP socket: the udp_sender decision. Returns
 * true when s is (now) offloaded. */
static bool
udp_first_send(struct shim_sock *s, const struct sockaddr *to, socklen_t tolen)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)to;
	bool off = false;

	if (s->type != SOCK_DGRAM || to == NULL || tolen < sizeof(*sin) ||
	    sin->sin_family != AF_INET)
		return false;
	pthread_mutex_lock(&s->lock);
	if (s->mode == SHIM_UNDECIDED) {
		if (decide(DPSOCK_PL_UDP_SENDER, sin->sin_addr.s_addr, sin->sin_port) &&
		    udp_ensure_bound(s, DPSOCK_PL_UDP_SENDER, sin->sin_addr.s_addr,
				     sin->sin_port) == 0)
			off = true;
		else
			s->mode = SHIM_KERNEL;
	} else {
		off = shim_sock_offloaded(s);
	}
	pthread_mutex_unlock(&s->lock);
	return off;
}

HOOK ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { (void *)buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(send)(fd, buf, len, flags);
	return sock_sendv(s, &v, 1, flags, NULL, 0);
}

HOOK ssize_t
sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { (void *)buf, len };

	if (s != NULL && s->mode == SHIM_UNDECIDED && !udp_first_send(s, to, tolen))
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	if (!shim_sock_offloaded(s))
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	return sock_sendv(s, &v, 1, flags, s->mode == SHIM_UDP ? to : NULL, tolen);
}

HOOK ssize_t
sendmsg(int fd, const struct msghdr *m, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (s != NULL && s->mode == SHIM_UNDECIDED && m != NULL &&
	    !udp_first_send(s, m->msg_name, m->msg_namelen))
		return REAL(sendmsg)(fd, m, flags);
	if (!shim_sock_offloaded(s) || m == NULL)
		return REAL(sendmsg)(fd, m, flags);
	if (m->msg_iovlen > IOV_MAX)
		return fail(EMSGSIZE);
	return sock_sendv(s, m->msg_iov, (int)m->msg_iovlen, flags,
			  s->mode == SHIM_UDP ? m->msg_name : NULL, m->msg_namelen);
}

HOOK int
sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	unsigned int i;

	if (s != NULL && s->mode == SHIM_UNDECIDED && vec != NULL && vlen > 0 &&
	    !udp_first_send(s, vec[0].msg_hdr.msg_name, vec[0].msg_hdr.msg_namelen))
		return REAL(sendmmsg)(fd, vec, vlen, flags);
	if (!shim_sock_offloaded(s))
		return REAL(sendmmsg)(fd, vec, vlen, flags);
	if (vlen > UIO_MAXIOV)
		vlen = UIO_MAXIOV;
	for (i = 0; i < vlen; i++) {
		ssize_t r = sendmsg(fd, &vec[i].msg_hdr, flags);

		if (r < 0)
			return i > 0 ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

HOOK ssize_t
write(int fd, const void *buf, size_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { (void *)buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(write)(fd, buf, len);
	return sock_sendv(s, &v, 1, 0, NULL, 0);
}

HOOK ssize_t
writev(int fd, const struct iovec *iov, int n)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(writev)(fd, iov, n);
	if (n < 0 || n > IOV_MAX)
		return fail(EINVAL);
	return sock_sendv(s, iov, n, 0, NULL, 0);
}

HOOK ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(recv)(fd, buf, len, flags);
	return sock_recvv(s, &v, 1, flags, NULL, NULL, NULL);
}

HOOK ssize_t
recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
	return sock_recvv(s, &v, 1, flags, from, fromlen, NULL);
}

HOOK ssize_t
recvmsg(int fd, struct msghdr *m, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	int mf = 0;
	ssize_t r;

	if (!shim_sock_offloaded(s) || m == NULL)
		return REAL(recvmsg)(fd, m, flags);
	if (m->msg_iovlen > IOV_MAX)
		return fail(EMSGSIZE);
	r = sock_recvv(s, m->msg_iov, (int)m->msg_iovlen, flags,
		       m->msg_name, m->msg_name != NULL ? &m->msg_namelen : NULL, &mf);
	if (r >= 0) {
		m->msg_flags = mf;
		m->msg_controllen = 0;
		if (s->mode != SHIM_UDP)
			m->msg_namelen = 0;
	}
	return r;
}

HOOK int
recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *tmo)
{
	struct shim_sock *s = shim_sock_get(fd);
	unsigned int i;

	if (!shim_sock_offloaded(s))
		return REAL(recvmmsg)(fd, vec, vlen, flags, tmo);
	if (vlen > UIO_MAXIOV)
		vlen = UIO_MAXIOV;
	for (i = 0; i < vlen; i++) {
		int f = flags & ~MSG_WAITFORONE;
		ssize_t r;

		/* after the first datagram: MSG_WAITFORONE, or a time-out that
		 * the shim does not measure, turn the rest non-blocking */
		if (i > 0 && ((flags & MSG_WAITFORONE) || tmo != NULL))
			f |= MSG_DONTWAIT;
		r = recvmsg(fd, &vec[i].msg_hdr, f);
		if (r < 0)
			return i > 0 ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

HOOK ssize_t
read(int fd, void *buf, size_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(read)(fd, buf, len);
	return sock_recvv(s, &v, 1, 0, NULL, NULL, NULL);
}

HOOK ssize_t
readv(int fd, const struct iovec *iov, int n)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(readv)(fd, iov, n);
	if (n < 0 || n > IOV_MAX)
		return fail(EINVAL);
	return sock_recvv(s, iov, n, 0, NULL, NULL, NULL);
}

HOOK ssize_t
__read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		return REAL(__read_chk)(fd, buf, len, buflen);   /* aborts, as libc */
	if (!shim_sock_offloaded(shim_sock_get(fd)))
		return REAL(__read_chk)(fd, buf, len, buflen);
	return read(fd, buf, len);
}

HOOK ssize_t
__recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen || !shim_sock_offloaded(shim_sock_get(fd)))
		return REAL(__recv_chk)(fd, buf, len, buflen, flags);
	return recv(fd, buf, len, flags);
}

HOOK ssize_t
__recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
	       struct sockaddr *from, socklen_t *fromlen)
{
	if (len > buflen || !shim_sock_offloaded(shim_sock_get(fd)))
		return REAL(__recvfrom_chk)(fd, buf, len, buflen, flags, from, fromlen);
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

static ssize_t
do_sendfile(int out, struct shim_sock *s, int in, off_t *offset, size_t count)
{
	unsigned char buf[65536];
	size_t done = 0;
	off_t pos = offset != NULL ? *offset : lseek(in, 0, SEEK_CUR);

	if (pos < 0)
		return -1;
	while (done < count) {
		size_t want = count - done < sizeof(buf) ? count - done : sizeof(buf);
		ssize_t r = pread(in, buf, want, pos), w;

		if (r < 0) {
			if (done > 0)
				break;
			return -1;
		}
		if (r == 0)
			break;
		w = sock_sendv(s, &(struct iovec){ buf, (size_t)r }, 1, 0, NULL, 0);
		if (w < 0) {
			if (done > 0)
				break;
			return -1;
		}
		done += (size_t)w;
		pos += w;
		if (w < r)
			break;
	}
	if (offset != NULL)
		*offset = pos;
	else if (lseek(in, pos, SEEK_SET) < 0)
		return -1;
	(void)out;
	return (ssize_t)done;
}

HOOK ssize_t
sendfile(int out, int in, off_t *offset, size_t count)
{
	struct shim_sock *s = shim_sock_get(out);

	if (!shim_sock_offloaded(s))
		return REAL(sendfile)(out, in, offset, count);
	return do_sendfile(out, s, in, offset, count);
}

HOOK ssize_t
sendfile64(int out, int in, off64_t *offset, size_t count)
{
	struct shim_sock *s = shim_sock_get(out);

	if (!shim_sock_offloaded(s))
		return REAL(sendfile64)(out, in, offset, count);
	return do_sendfile(out, s, in, (off_t *)offset, count);
}

/* ---- shutdown, close, names, options ---------------------------------------------- */

HOOK int
shutdown(int fd, int how)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct shim_thread *t;
	struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_SHUTDOWN };
	struct dpsock_pl_reply r;
	uint32_t st;
	int e;

	if (!shim_sock_offloaded(s))
		return REAL(shutdown)(fd, how);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return fail(EINVAL);
	if (s->mode == SHIM_TCP_LISTEN) {
		if (how != SHUT_WR)
			s->shut_rd = 1;
		return 0;
	}
	if (s->mode == SHIM_UDP) {
		if (!s->udp_connected)
			return fail(ENOTCONN);
		if (how != SHUT_WR)
			s->shut_rd = 1;
		if (how != SHUT_RD)
			s->shut_wr = 1;
		return 0;
	}
	st = __atomic_load_n(&sock_slot(s, 0)->state, __ATOMIC_ACQUIRE);
	if (st != DPSOCK_PL_ST_ESTABLISHED)
		return fail(ENOTCONN);
	t = shim_thread_get();
	if (t == NULL)
		return -1;
	c.slot = s->slot[0];
	c.gen = s->gen[0];
	c.arg[0] = how;
	e = shim_cmd_call(t, slot_worker(s->slot[0]), &c, &r);
	if (e == 0)
		e = r.result;
	if (e < 0)
		return fail(-e == ECONNABORTED ? ENOTCONN : -e);
	if (how != SHUT_WR)
		s->shut_rd = 1;
	if (how != SHUT_RD)
		s->shut_wr = 1;
	return 0;
}

HOOK int
close(int fd)
{
	struct shim_sock *s = fdtab_take(fd);

	if (s != NULL) {
		shim_epoll_fd_closed(fd, s);
		sock_unref(s);
	} else if (shim_epoll_is(fd)) {
		shim_epoll_close(fd);
	}
	return REAL(close)(fd);
}

static int
put_name(struct sockaddr *addr, socklen_t *len, uint32_t a, uint16_t p)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = a, .sin_port = p };
	socklen_t l;

	if (addr == NULL || len == NULL)
		return fail(EFAULT);
	if ((int)*len < 0)
		return fail(EINVAL);
	l = *len < sizeof(sin) ? *len : sizeof(sin);
	memcpy(addr, &sin, l);
	*len = sizeof(sin);
	return 0;
}

HOOK int
getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (s == NULL || (!shim_sock_offloaded(s) && !(s->bound && s->mode == SHIM_UNDECIDED)))
		return REAL(getsockname)(fd, addr, len);
	if (s->mode == SHIM_TCP_CONN) {
		struct dpsock_pl_slot *sl = sock_slot(s, 0);

		return put_name(addr, len, sl->laddr ? sl->laddr : s->laddr,
				sl->lport ? sl->lport : s->lport);
	}
	return put_name(addr, len, s->laddr, s->lport);
}

HOOK int
getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(getpeername)(fd, addr, len);
	if (s->mode == SHIM_UDP)
		return s->udp_connected ? put_name(addr, len, s->raddr, s->rport) : fail(ENOTCONN);
	if (s->mode == SHIM_TCP_CONN) {
		struct dpsock_pl_slot *sl = sock_slot(s, 0);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (st == DPSOCK_PL_ST_ESTABLISHED ||
		    (st == DPSOCK_PL_ST_CLOSED && sl->err == 0))
			return put_name(addr, len, sl->raddr, sl->rport);
	}
	return fail(ENOTCONN);
}

HOOK int
getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct shim_sock *s = shim_sock_get(fd);
	int v;

	if (shim_sock_offloaded(s) && s->mode != SHIM_UDP && level == IPPROTO_TCP &&
	    (name == TCP_INFO || name == TCP_CONGESTION) && val != NULL && len != NULL) {
		/* the worker's connection; once it is gone, the kernel
		 * socket's answer (state CLOSE) */
		if ((name == TCP_INFO ? shim_tcp_info(s, val, len) : shim_tcp_congestion(s, val, len)) == 0)
			return 0;
		return REAL(getsockopt)(fd, level, name, val, len);
	}
	if (!shim_sock_offloaded(s) || val == NULL || len == NULL || *len < sizeof(int))
		return REAL(getsockopt)(fd, level, name, val, len);
	if (level == SOL_SOCKET && name == SO_ERROR) {
		v = 0;
		if (s->mode == SHIM_TCP_CONN)
			v = conn_take_err(s);
		if (v == 0 && shim_daemon_gone() && !s->err_taken) {
			s->err_taken = 1;
			v = ECONNRESET;
		}
	} else if (level == SOL_SOCKET && name == SO_ACCEPTCONN) {
		v = s->mode == SHIM_TCP_LISTEN;
	} else {
		/* every other option was set on the kernel socket too */
		return REAL(getsockopt)(fd, level, name, val, len);
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

HOOK int
setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r = REAL(setsockopt)(fd, level, name, val, len), v = 0, fwd = 0;

	if (r < 0 || s == NULL || val == NULL)
		return r;
	if (len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	pthread_mutex_lock(&s->lock);
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_REUSEADDR: s->reuseaddr = v; break;
		case SO_REUSEPORT: s->reuseport = v; break;
		case SO_KEEPALIVE: s->keepalive = v != 0; fwd = 1; break;
		case SO_RCVBUF: s->rcvbuf = v; break;
		case SO_SNDBUF: s->sndbuf = v; break;
		case SO_LINGER:
			if (len >= sizeof(struct linger))
				memcpy(&s->linger, val, sizeof(s->linger));
			break;
		case SO_RCVTIMEO:
		case SO_SNDTIMEO:
			if (len >= sizeof(struct timeval)) {
				struct timeval tv;
				long ms;

				memcpy(&tv, val, sizeof(tv));
				/* the kernel accepted it; 0 = no time-out; at least
				 * 1 ms when shorter */
				ms = (long)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
				ms = tv.tv_sec == 0 && tv.tv_usec == 0 ? -1 :
				     ms > 0x7fffffffL ? 0x7fffffffL : ms;
				if (name == SO_RCVTIMEO)
					s->rcvtimeo_ms = (int)ms;
				else
					s->sndtimeo_ms = (int)ms;
			}
			break;
		default: break;
		}
	} else if (level == IPPROTO_TCP) {
		switch (name) {
		case TCP_NODELAY: s->nodelay = v != 0; fwd = 1; break;
		case TCP_KEEPIDLE: s->keepidle = v; fwd = 1; break;
		case TCP_KEEPINTVL: s->keepintvl = v; fwd = 1; break;
		case TCP_KEEPCNT: s->keepcnt = v; fwd = 1; break;
		case TCP_CONGESTION:
			memset(s->cc, 0, sizeof(s->cc));
			memcpy(s->cc, val, len < sizeof(s->cc) - 1 ? len : sizeof(s->cc) - 1);
			fwd = 1;
			break;
		default: break;
		}
	} else if (level == IPPROTO_IP && name == IP_TOS) {
		s->tos = v;
		fwd = 1;
	}
	if (fwd && shim_sock_offloaded(s) && s->mode == SHIM_TCP_CONN) {
		struct shim_thread *t = shim_thread_get();
		struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_SETOPT, .slot = s->slot[0],
					   .gen = s->gen[0] };
		struct dpsock_pl_reply rep;

		c.arg[0] = level;
		c.arg[1] = name;
		c.arg[2] = v;
		if (level == IPPROTO_TCP && name == TCP_CONGESTION)
			memcpy(&c.arg[2], s->cc, sizeof(s->cc));
		/* the kernel accepted it; a worker that cannot apply it only
		 * logs (the app sees what the kernel said) */
		if (t != NULL && shim_cmd_call(t, slot_worker(s->slot[0]), &c, &rep) == 0 &&
		    rep.result < 0)
			SHIM_LOG(DEBUG, "dpsockd: option %d/%d: %s", level, name,
				 strerror(-rep.result));
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* ---- fcntl, ioctl, dup ---------------------------------------------------------- */

static void
dup_track(int oldfd, int newfd)
{
	struct shim_sock *s, *old;

	if (newfd < 0 || newfd == oldfd)
		return;
	old = fdtab_take(newfd);        /* dup2 over an fd of ours closed it */
	if (old != NULL) {
		shim_epoll_fd_closed(newfd, old);
		sock_unref(old);
	}
	s = shim_sock_get(oldfd);
	if (s == NULL)
		return;
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
	if (fdtab_set(newfd, s) < 0)
		sock_unref(s);
}

static int
fcntl_common(int fd, int cmd, uintptr_t arg, bool is64)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r = is64 ? REAL(fcntl64)(fd, cmd, arg) : REAL(fcntl)(fd, cmd, arg);

	if (r < 0 || s == NULL)
		return r;
	if (cmd == F_SETFL)
		s->nonblock = (arg & O_NONBLOCK) != 0;
	else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		dup_track(fd, r);
	return r;
}

HOOK int
fcntl(int fd, int cmd, ...)
{
	va_list ap;
	uintptr_t arg;

	va_start(ap, cmd);
	arg = va_arg(ap, uintptr_t);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, false);
}

HOOK int
fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	uintptr_t arg;

	va_start(ap, cmd);
	arg = va_arg(ap, uintptr_t);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, true);
}

HOOK int
ioctl(int fd, unsigned long req, ...)
{
	struct shim_sock *s = shim_sock_get(fd);
	va_list ap;
	void *arg;
	int r, v;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!shim_sock_offloaded(s) || (req != FIONREAD && req != SIOCOUTQ)) {
		r = REAL(ioctl)(fd, req, arg);
		if (r == 0 && s != NULL && req == FIONBIO && arg != NULL)
			s->nonblock = *(int *)arg != 0;
		return r;
	}
	if (arg == NULL)
		return fail(EFAULT);
	if (s->mode == SHIM_TCP_LISTEN)
		return fail(EINVAL);
	if (s->mode == SHIM_TCP_CONN) {
		const struct dpsock_pl_seg *g = shim_seg();

		v = (int)(req == FIONREAD ? fifo_level(shim_slot_rx(s->slot[0]), g->rx_fifo_size)
					  : fifo_level(shim_slot_tx(s->slot[0]), g->tx_fifo_size));
	} else if (req == FIONREAD) {
		/* UDP: size of the next datagram, as Linux */
		char peek;
		ssize_t n = udp_recv(s, &(struct iovec){ &peek, 1 }, 1, MSG_PEEK | MSG_TRUNC |
				     MSG_DONTWAIT, NULL, NULL, NULL);

		v = n < 0 ? 0 : (int)n;
	} else {
		v = (int)fifo_level(shim_slot_tx(s->slot[__atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots]),
				    shim_seg()->tx_fifo_size);
	}
	memcpy(arg, &v, sizeof(v));
	return 0;
}

HOOK int
dup(int fd)
{
	int r = REAL(dup)(fd);

	if (r >= 0)
		dup_track(fd, r);
	return r;
}

HOOK int
dup2(int fd, int fd2)
{
	int r = REAL(dup2)(fd, fd2);

	if (r >= 0)
		dup_track(fd, r);
	return r;
}

HOOK int
dup3(int fd, int fd2, int flags)
{
	int r = REAL(dup3)(fd, fd2, flags);

	if (r >= 0)
		dup_track(fd, r);
	return r;
}

/* ---- fork ------------------------------------------------------------------------ */

/* The child shares every offloaded socket. Across the fork a second copy of
 * the parent's pid holds each one, so that neither side closing first can
 * free it under the other; the child turns that copy into its own pid
 * before fork returns there. Done in pthread_atfork handlers (registered at
 * the first offloaded socket) so that forks inside libc (daemon(), ...)
 * count too. */
static uint32_t fork_parent;
pid_t shim_forked_pid;

static void
atfork_prepare(void)
{
	pthread_mutex_lock(&shim_proc.lock);
	pthread_mutex_lock(&objs_lock);
	fork_parent = (uint32_t)getpid();
	for (size_t i = 0; i < n_objs; i++)
		area_pid_add(shim_area(sock_slot(objs[i], 0)), fork_parent);
}

static void
atfork_parent(void)
{
	pthread_mutex_unlock(&objs_lock);
	pthread_mutex_unlock(&shim_proc.lock);
}

static void
atfork_child(void)
{
	uint32_t me = (uint32_t)getpid();

	shim_forked_pid = (pid_t)me;
	for (size_t i = 0; i < n_objs; i++)
		area_pid_swap(shim_area(sock_slot(objs[i], 0)), fork_parent, me);
	pthread_mutex_unlock(&objs_lock);
	pthread_mutex_unlock(&shim_proc.lock);
	shim_fork_child();
}

static void
atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void
objs_track_fork(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, atfork_register);
}

HOOK pid_t
fork(void)
{
	pid_t pid = REAL(fork)();

	if (pid < 0) {
		/* no child: drop the copies the prepare handler added */
		int e = errno;

		pthread_mutex_lock(&objs_lock);
		for (size_t i = 0; i < n_objs; i++)
			area_pid_swap(shim_area(sock_slot(objs[i], 0)), (uint32_t)getpid(), 0);
		pthread_mutex_unlock(&objs_lock);
		errno = e;
	}
	return pid;
}

/* ---- exec: the new image finds its inherited sockets (docs/preload.md) ---------- */

bool
shim_sock_inheritable(void)
{
	for (unsigned int hi = 0; hi < FDT_SIZE; hi++) {
		/* acquire: pairs with the release stores in fdtab_set */
		struct shim_sock **page = __atomic_load_n(&fdtab[hi], __ATOMIC_ACQUIRE);

		if (page == NULL)
			continue;
		for (unsigned int lo = 0; lo < FDT_SIZE; lo++) {
			struct shim_sock *s = __atomic_load_n(&page[lo], __ATOMIC_ACQUIRE);
			int fl;

			if (!shim_sock_offloaded(s) || s->ino == 0)
				continue;
			fl = REAL(fcntl)((int)(hi << FDT_BITS | lo), F_GETFD);
			if (fl >= 0 && !(fl & FD_CLOEXEC))
				return true;
		}
	}
	return false;
}

/* A slot the pre-exec image (or another process of the group) recorded
 * as belonging to the kernel socket of inode ino. */
struct adopt_cand {
	uint64_t ino;
	uint32_t slot;
	uint32_t kind;
	int taken;            /* adopted by a descriptor of this image */
};

/* Collect the slots of the socket of inode ino into s (slot[k] on worker k
 * for listeners and UDP sockets, slot[0] for a connection). Returns true
 * when the set is complete. */
static bool
adopt_slots(struct shim_sock *s, struct adopt_cand *c, size_t nc, uint64_t ino, uint32_t kind)
{
	uint32_t nw = shim_proc.n_workers;
	uint64_t have = 0;

	s->nslots = kind == DPSOCK_PL_TCP_CONN ? 1 : nw;
	for (size_t i = 0; i < nc; i++) {
		uint32_t k;

		if (c[i].ino != ino || c[i].kind != kind)
			continue;
		k = kind == DPSOCK_PL_TCP_CONN ? 0 : slot_worker(c[i].slot);
		if (k >= s->nslots || k >= SHIM_MAX_WORKERS || (have & (1ull << k)) != 0)
			return false;   /* two connections, or two slots on one worker */
		have |= 1ull << k;
		s->slot[k] = c[i].slot;
		s->gen[k] = __atomic_load_n(&shim_slot(c[i].slot)->gen, __ATOMIC_ACQUIRE);
	}
	return have == (s->nslots >= 64 ? UINT64_MAX : (1ull << s->nslots) - 1);
}

static void
adopt_mark(struct adopt_cand *c, size_t nc, uint64_t ino)
{
	for (size_t i = 0; i < nc; i++)
		if (c[i].ino == ino)
			c[i].taken = 1;
}

/* Options the kernel socket remembers (every setsockopt reached it too). */
static void
adopt_opts(struct shim_sock *s, int fd)
{
	socklen_t l;
	struct timeval tv;
	int v;

#define GETINT(level, name, field) \
	do { l = sizeof(v); \
	     if (REAL(getsockopt)(fd, level, name, &v, &l) == 0) s->field = v; } while (0)
	GETINT(SOL_SOCKET, SO_REUSEADDR, reuseaddr);
	GETINT(SOL_SOCKET, SO_REUSEPORT, reuseport);
	GETINT(SOL_SOCKET, SO_KEEPALIVE, keepalive);
	if (s->type == SOCK_STREAM)
		GETINT(IPPROTO_TCP, TCP_NODELAY, nodelay);
#undef GETINT
	l = sizeof(s->linger);
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_LINGER, &s->linger, &l) != 0)
		memset(&s->linger, 0, sizeof(s->linger));
	for (int i = 0; i < 2; i++) {
		long ms;

		l = sizeof(tv);
		if (REAL(getsockopt)(fd, SOL_SOCKET, i ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &l) != 0)
			continue;
		ms = (long)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
		ms = tv.tv_sec == 0 && tv.tv_usec == 0 ? -1 : ms > 0x7fffffffL ? 0x7fffffffL : ms;
		if (i)
			s->sndtimeo_ms = (int)ms;
		else
			s->rcvtimeo_ms = (int)ms;
	}
}

/* The shadow object of inherited descriptor fd (kernel socket of inode
 * ino), or NULL when no complete set of slots names it. */
static struct shim_sock *
adopt_one(int fd, uint64_t ino, struct adopt_cand *c, size_t nc)
{
	struct shim_sock *s;
	struct dpsock_pl_slot *sl;
	struct shim_slot_area *a;
	uint32_t kind = 0, me = (uint32_t)getpid();
	int type = 0, dom = 0, fl;
	socklen_t l = sizeof(type);
	bool mine = false;

	for (size_t i = 0; i < nc && kind == 0; i++)
		if (c[i].ino == ino)
			kind = c[i].kind;
	if (kind == 0)
		return NULL;
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 ||
	    (l = sizeof(dom), REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l)) != 0 ||
	    dom != AF_INET || type != (kind == DPSOCK_PL_UDP ? SOCK_DGRAM : SOCK_STREAM))
		return NULL;
	fl = REAL(fcntl)(fd, F_GETFL);
	s = sock_new(type, fl >= 0 && (fl & O_NONBLOCK) != 0);
	if (s == NULL)
		return NULL;
	s->ino = ino;
	if (!adopt_slots(s, c, nc, ino, kind)) {
		SHIM_LOG(WARNING, "inherited socket %d: its slots are incomplete: kernel socket", fd);
		free(s);
		return NULL;
	}
	adopt_mark(c, nc, ino);
	sl = sock_slot(s, 0);
	s->laddr = sl->laddr;
	s->lport = sl->lport;
	s->bound = 1;
	if (kind == DPSOCK_PL_TCP_CONN) {
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		/* a connect still in progress reports its outcome once more */
		s->connect_reported = st != DPSOCK_PL_ST_CONNECTING;
		s->shut_wr = (__atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE) &
			      DPSOCK_PL_F_WR_SHUT) != 0;
	}
	adopt_opts(s, fd);
	/* this process holds it (it does already unless a forked child's
	 * copy never made it into the list) */
	a = shim_area(sl);
	for (int i = 0; i < SHIM_AREA_PIDS; i++)
		mine |= __atomic_load_n(&a->pids[i], __ATOMIC_ACQUIRE) == me;
	if (!mine)
		area_pid_add(a, me);
	objs_add(s);
	/* release: slots and geometry before mode (shim_sock_offloaded) */
	__atomic_store_n(&s->mode, kind == DPSOCK_PL_TCP_LISTENER ? SHIM_TCP_LISTEN :
			 kind == DPSOCK_PL_TCP_CONN ? SHIM_TCP_CONN : SHIM_UDP, __ATOMIC_RELEASE);
	return s;
}

/* Watch entries of the old image's waiters (dpsockd freed them on EXEC;
 * their headers still name this pid, no waiter of the new image exists
 * yet): free them, or the slots would run out of entries. */
static void
adopt_unwatch(struct dpsock_pl_slot *sl)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint32_t me = (uint32_t)getpid();

	for (int j = 0; j < DPSOCK_PL_WATCH; j++) {
		uint32_t w = __atomic_load_n(&sl->watch[j], __ATOMIC_ACQUIRE);
		const struct dpsock_pl_waiter *h;

		if (w == 0 || w - 1 >= g->max_waiters)
			continue;
		h = (const struct dpsock_pl_waiter *)(const void *)(shim_proc.seg + g->off_waiters +
								   (uint64_t)(w - 1) * g->waiter_stride);
		/* acquire: pairs with the release store of owner_pid in
		 * shim_waiter_new */
		if (__atomic_load_n(&h->owner_pid, __ATOMIC_ACQUIRE) != me)
			continue;
		__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
		/* release: queued is clear before the entry can be reused
		 * (shim_sock_watch's CAS acquires it) */
		__atomic_compare_exchange_n(&sl->watch[j], &w, 0, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	}
}

void
shim_sock_adopt(void)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint32_t nslots = g->n_workers * g->slots_per_worker, me = (uint32_t)getpid();
	struct adopt_cand *c;
	struct shim_sock **got = NULL;
	size_t nc = 0, ngot = 0;
	unsigned int adopted = 0, released = 0;
	struct dirent *de;
	DIR *d;

	c = calloc(nslots, sizeof(*c));
	if (c == NULL)
		return;
	for (uint32_t n = 0; n < nslots; n++) {
		struct dpsock_pl_slot *sl = shim_slot(n);
		struct shim_slot_area *a = shim_area(sl);
		uint32_t kind = __atomic_load_n(&sl->kind, __ATOMIC_ACQUIRE);

		adopt_unwatch(sl);
		if (kind == DPSOCK_PL_FREE || kind > DPSOCK_PL_UDP ||
		    __atomic_load_n(&a->ino, __ATOMIC_RELAXED) == 0 ||
		    __atomic_load_n(&a->gen, __ATOMIC_RELAXED) !=
			    __atomic_load_n(&sl->gen, __ATOMIC_ACQUIRE))
			continue;
		/* closed: CLOSE went out, the slot is no longer the group's */
		if (__atomic_load_n(&shim_area(shim_slot(n))->closed, __ATOMIC_ACQUIRE))
			continue;
		c[nc].ino = a->ino;
		c[nc].slot = n;
		c[nc].kind = kind;
		nc++;
	}
	d = nc > 0 ? opendir("/proc/self/fd") : NULL;
	while (d != NULL && (de = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		struct shim_sock *s = NULL;
		struct stat st;

		if (*end != '\0' || fd < 0 || fd > INT_MAX || fd == dirfd(d) ||
		    fd == shim_proc.ctl || shim_sock_get((int)fd) != NULL)
			continue;
		if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		for (size_t i = 0; i < ngot && s == NULL; i++)
			if (got[i]->ino == (uint64_t)st.st_ino)
				s = got[i];
		if (s != NULL) {           /* dup of one already adopted */
			if (fdtab_set((int)fd, s) == 0)
				__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
			continue;
		}
		s = adopt_one((int)fd, (uint64_t)st.st_ino, c, nc);
		if (s == NULL)
			continue;
		if ((ngot & 15) == 0) {
			struct shim_sock **ng = realloc(got, (ngot + 16) * sizeof(*ng));

			if (ng == NULL) {
				sock_unref(s);
				continue;
			}
			got = ng;
		}
		if (fdtab_set((int)fd, s) < 0) {
			sock_unref(s);
			continue;
		}
		got[ngot++] = s;
		adopted++;
	}
	if (d != NULL)
		closedir(d);
	/* Sockets this process held before exec whose descriptors did not
	 * survive it (close-on-exec): let go of them as close() would. */
	for (size_t i = 0; i < nc; i++) {
		struct shim_sock tmp;
		struct shim_slot_area *a;
		bool mine = false;

		if (c[i].taken || (c[i].kind != DPSOCK_PL_TCP_CONN && slot_worker(c[i].slot) != 0))
			continue;
		a = shim_area(shim_slot(c[i].slot));
		for (int j = 0; j < SHIM_AREA_PIDS; j++)
			mine |= __atomic_load_n(&a->pids[j], __ATOMIC_ACQUIRE) == me;
		if (!mine)
			continue;
		memset(&tmp, 0, sizeof(tmp));
		tmp.ino = c[i].ino;
		if (!adopt_slots(&tmp, c, nc, c[i].ino, c[i].kind)) {
			/* incomplete: drop only our reference */
			area_pid_swap(a, me, 0);
			continue;
		}
		adopt_mark(c, nc, c[i].ino);
		tmp.mode = SHIM_TCP_CONN;  /* any offloaded mode: sock_release_slots */
		sock_release_slots(&tmp);
		released++;
	}
	free(got);
	free(c);
	SHIM_LOG(INFO, "exec: %u inherited offloaded socket(s) found again, %u left behind "
		 "released", adopted, released);
}
