/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attach.c — the process's attachment to dpsockd (docs/preload.md
 * "Attach"): control socket, group segment, wake page, worker eventfds;
 * per-thread channel + waiter; commands and replies; sleeping; the
 * process-shared slot locks.
 */
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>

#include "shim_priv.h"

struct shim_proc shim_proc = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.ctl = -1,
	.spare_ctl = -1,
};

static __thread struct shim_thread *tls_thread;
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;
static int ctl_hup;           /* the control socket hung up: dpsockd is gone */

/* ---- segment geometry ---------------------------------------------------- */

struct dpsock_pl_slot *
shim_slot(uint32_t n)
{
	const struct dpsock_pl_seg *g = shim_seg();

	return (struct dpsock_pl_slot *)(void *)(shim_proc.seg + g->off_slots +
						 (uint64_t)n * g->slot_stride);
}

void *
shim_slot_rx(uint32_t n)
{
	return (unsigned char *)shim_slot(n) + shim_seg()->rx_fifo_off;
}

void *
shim_slot_tx(uint32_t n)
{
	return (unsigned char *)shim_slot(n) + shim_seg()->tx_fifo_off;
}

/* ---- process-shared lock ------------------------------------------------ */

#define LOCK_WAITERS 0x80000000u

static long
futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* The lock word holds the owner's tid (and LOCK_WAITERS). A process that
 * died holding it (kill -9 inside a send) is detected after a short wait:
 * its tid no longer exists, and the lock is taken over. */
void
shim_lock(uint32_t *lock)
{
	uint32_t tid = (uint32_t)shim_gettid();
	uint32_t cur = 0;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	/* acquire: pairs with the release in shim_unlock, so what the previous
	 * owner did to the FIFO side (its index, its data) is visible. */
	if (__atomic_compare_exchange_n(lock, &cur, tid, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int spins = 0;; spins++) {
		cur = __atomic_load_n(lock, __ATOMIC_RELAXED);
		if (cur == 0) {
			if (__atomic_compare_exchange_n(lock, &cur, tid | LOCK_WAITERS, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return;
			continue;
		}
		if (spins < 64) {
			shim_cpu_relax();
			continue;
		}
		if (!(cur & LOCK_WAITERS) &&
		    !__atomic_compare_exchange_n(lock, &cur, cur | LOCK_WAITERS, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		if (futex(lock, FUTEX_WAIT, cur | LOCK_WAITERS, &ts) < 0 && errno == ETIMEDOUT) {
			uint32_t owner = cur & ~LOCK_WAITERS;

			if (owner != 0 && kill((pid_t)owner, 0) < 0 && errno == ESRCH) {
				uint32_t seen = __atomic_load_n(lock, __ATOMIC_RELAXED);

				if ((seen & ~LOCK_WAITERS) == owner &&
				    __atomic_compare_exchange_n(lock, &seen, tid | LOCK_WAITERS, false,
								__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
					return;
			}
		}
	}
}

void
shim_unlock(uint32_t *lock)
{
	/* release: pairs with the acquire CAS in shim_lock of the next owner. */
	uint32_t old = __atomic_exchange_n(lock, 0, __ATOMIC_RELEASE);

	if (old & LOCK_WAITERS)
		futex(lock, FUTEX_WAKE, 1, NULL);
}

/* ---- control socket ------------------------------------------------------- */

/* Send one message (+fds) and receive the answer (+fds). Caller holds
 * shim_proc.lock. Returns 0 or -errno; *nrfds = fds received. */
static int
ctl_call(struct dpsock_pl_msg *m, const int *fds, int nfds,
	 struct dpsock_pl_msg *ans, int *rfds, int *nrfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DPSOCK_PL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	m->magic = DPSOCK_PL_MAGIC;
	m->version = DPSOCK_PL_VERSION;
	m->n_fds = (uint32_t)nfds;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = REAL(sendmsg)(shim_proc.ctl, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	iov.iov_base = ans;
	iov.iov_len = sizeof(*ans);
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	do
		n = REAL(recvmsg)(shim_proc.ctl, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0) {
		ctl_hup = 1;
		return -ECONNRESET;
	}
	*nrfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (rfds != NULL && *nrfds < DPSOCK_PL_MAX_FDS)
					rfds[(*nrfds)++] = fd;
				else
					REAL(close)(fd);
			}
		}
	}
	if ((size_t)n != sizeof(*ans) || ans->magic != DPSOCK_PL_MAGIC)
		return -EPROTO;
	return 0;
}

int
shim_ctl_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s%s", shim_env.runtime_dir,
			     shim_env.name, DPSOCK_PL_SOCK_SUFFIX) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* blocks while dpsockd's backlog is full; a signal then ends it with
	 * EINTR and leaves the socket unconnected (AF_UNIX): try again */
	while (REAL(connect)(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		REAL(close)(fd);
		return -e;
	}
	return fd;
}

static void
close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		REAL(close)(fds[i]);
}

/* HELLO / WELCOME, or (inherited >= 0: the control connection an exec()ed
 * image inherited) EXEC / WELCOME; caller holds the lock. */
static int
attach_locked(uint64_t token, int inherited)
{
	struct dpsock_pl_msg m = { .type = DPSOCK_PL_HELLO, .token = token }, a;
	int fds[DPSOCK_PL_MAX_FDS], nfds = 0, fd, r;
	const struct dpsock_pl_seg *g;
	void *seg, *wake;

	if (inherited >= 0) {
		m.type = DPSOCK_PL_EXEC;
		fd = inherited;
	} else if (token != 0 && shim_proc.spare_ctl >= 0) {
		/* a forked child: the connection its parent opened for it at
		 * fork, so that joining needs neither the socket's path nor
		 * the rights to it (a child that dropped privileges or
		 * changed its root) */
		fd = shim_proc.spare_ctl;
		shim_proc.spare_ctl = -1;
	} else {
		fd = shim_ctl_connect();
	}
	if (fd < 0)
		return fd;
	shim_proc.ctl = fd;
	ctl_hup = 0;
	snprintf(m.text, sizeof(m.text), "%s", shim_env.prog);
	r = ctl_call(&m, NULL, 0, &a, fds, &nfds);
	if (r == 0 && (a.type != DPSOCK_PL_WELCOME || a.status != 0))
		r = a.status != 0 ? a.status : -EPROTO;
	if (r == 0 && (nfds < 2 || a.n_workers == 0 || a.n_workers > SHIM_MAX_WORKERS ||
		       (uint32_t)nfds != 2 + a.n_workers || a.seg_size < DPSOCK_PL_SEG_HDR))
		r = -EPROTO;
	if (r < 0) {
		if (a.type == DPSOCK_PL_WELCOME && a.text[0] != '\0')
			SHIM_LOG(WARNING, "dpsockd refused the attach: %.64s", a.text);
		close_fds(fds, nfds);
		goto fail;
	}
	if (shim_proc.seg != NULL && token != 0 && shim_proc.seg_size == a.seg_size) {
		/* forked child joining its group: the inherited mapping is the
		 * same memfd; keep it. */
		seg = shim_proc.seg;
	} else {
		seg = mmap(NULL, a.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
		if (seg == MAP_FAILED) {
			r = -errno;
			close_fds(fds, nfds);
			goto fail;
		}
	}
	wake = mmap(NULL, a.wake_size, PROT_READ, MAP_SHARED, fds[1], 0);
	if (wake == MAP_FAILED) {
		r = -errno;
		if (seg != shim_proc.seg)
			munmap(seg, a.seg_size);
		close_fds(fds, nfds);
		goto fail;
	}
	REAL(close)(fds[0]);
	REAL(close)(fds[1]);
	g = seg;
	if (g->magic != DPSOCK_PL_SEG_MAGIC || g->version != DPSOCK_PL_VERSION ||
	    g->n_workers != a.n_workers) {
		SHIM_LOG(WARNING, "dpsockd's segment: magic %#x version %u, this library speaks "
			 "version %u: not attached", g->magic, g->version, DPSOCK_PL_VERSION);
		r = -EPROTO;
		close_fds(fds + 2, nfds - 2);
		munmap(wake, a.wake_size);
		if (seg != shim_proc.seg)
			munmap(seg, a.seg_size);
		goto fail;
	}
	if (shim_proc.wake != NULL)
		munmap((void *)shim_proc.wake, shim_proc.wake_size);
	for (uint32_t k = 0; k < SHIM_MAX_WORKERS; k++) {
		if (shim_proc.worker_efd[k] > 0 && k < shim_proc.n_workers)
			REAL(close)(shim_proc.worker_efd[k]);
		shim_proc.worker_efd[k] = k < a.n_workers ? fds[2 + k] : -1;
	}
	shim_proc.seg = seg;
	shim_proc.seg_size = a.seg_size;
	shim_proc.wake = wake;
	shim_proc.wake_size = a.wake_size;
	shim_proc.n_workers = a.n_workers;
	shim_proc.token = g->token;
	SHIM_LOG(INFO, "attached to dpsockd '%s' (%u workers, group %u)", shim_env.name,
		 a.n_workers, g->group);
	return 0;
fail:
	REAL(close)(shim_proc.ctl);
	shim_proc.ctl = -1;
	return r;
}

int
shim_attach(void)
{
	pid_t me = shim_getpid();
	int r;

	if (__builtin_expect(__atomic_load_n(&shim_proc.state, __ATOMIC_ACQUIRE) == 1 &&
			     shim_proc.pid == me, 1))
		return 0;
	shim_env_load();
	if (!shim_env.offload)
		return -ENOENT;
	pthread_mutex_lock(&shim_proc.lock);
	if (shim_proc.pid == me && shim_proc.state != 0) {
		r = shim_proc.state == 1 ? 0 : -ENOENT;
		pthread_mutex_unlock(&shim_proc.lock);
		return r;
	}
	if (shim_proc.pid != me && shim_proc.state == 1) {
		/* forked child: the parent's control connection stays the
		 * parent's; join the group with the segment's token, THEN drop
		 * the copy of the parent's connection fork gave us. The other
		 * order loses the group when the parent has exited already (a
		 * daemon()izing server): our copy was its last reference, and
		 * dpsockd ends a group whose last connection closes. */
		int parent_ctl = shim_proc.ctl;

		shim_proc.ctl = -1;
		r = attach_locked(shim_proc.token, -1);
		REAL(close)(parent_ctl);
		shim_proc.spare_ctl = -1;   /* taken by attach_locked (or closed) */
	} else {
		r = attach_locked(0, -1);
	}
	shim_proc.pid = me;
	if (r < 0) {
		if (r == -ENOENT || r == -ECONNREFUSED)
			SHIM_LOG(NOTICE, "dpsockd '%s' is not running (%s/%s%s: %s): sockets stay "
				 "kernel sockets", shim_env.name, shim_env.runtime_dir,
				 shim_env.name, DPSOCK_PL_SOCK_SUFFIX, strerror(-r));
		else
			SHIM_LOG(WARNING, "cannot attach to dpsockd '%s': %s: sockets stay kernel "
				 "sockets", shim_env.name, strerror(-r));
		__atomic_store_n(&shim_proc.state, -1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&shim_proc.state, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&shim_proc.lock);
	return r;
}

int
shim_attach_exec(int ctl)
{
	int r;

	shim_env_load();
	pthread_mutex_lock(&shim_proc.lock);
	if (shim_proc.state != 0 || !shim_env.offload) {
		pthread_mutex_unlock(&shim_proc.lock);
		REAL(close)(ctl);
		return -EALREADY;
	}
	r = attach_locked(0, ctl);   /* closes ctl on failure */
	if (r == 0) {
		shim_proc.pid = shim_getpid();
		__atomic_store_n(&shim_proc.state, 1, __ATOMIC_RELEASE);
	} else {
		/* state stays 0: a later socket call attaches afresh */
		SHIM_LOG(WARNING, "cannot take over the control connection inherited through "
			 "exec: %s: inherited sockets are plain kernel sockets", strerror(-r));
	}
	pthread_mutex_unlock(&shim_proc.lock);
	return r;
}

/* ---- what dpsockd serves ------------------------------------------------------ */

void
shim_netview(struct dpsock_pl_netview *out)
{
	const struct dpsock_pl_netview *nv;

	memset(out, 0, sizeof(*out));
	if (shim_proc.wake == NULL ||
	    shim_proc.wake_size < DPSOCK_PL_WAKE_NETVIEW + sizeof(*nv))
		return;
	nv = (const struct dpsock_pl_netview *)(const void *)
		((const unsigned char *)shim_proc.wake + DPSOCK_PL_WAKE_NETVIEW);
	for (int tries = 0; tries < 1000; tries++) {
		/* acquire: pairs with the daemon's release of an even seq */
		uint32_t s1 = __atomic_load_n(&nv->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1) {
			shim_cpu_relax();
			continue;
		}
		memcpy(out, nv, sizeof(*out));
		/* acquire fence: the copy is done before seq is read again;
		 * pairs with the daemon's release fence after its odd seq */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&nv->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			break;
	}
	if (out->n_ifaces > DPSOCK_PL_MAX_ADDRS)
		out->n_ifaces = DPSOCK_PL_MAX_ADDRS;
	if (out->n_routes > DPSOCK_PL_MAX_ROUTES)
		out->n_routes = DPSOCK_PL_MAX_ROUTES;
}

/* ---- waiters -------------------------------------------------------------- */

static int
ctl_simple(uint16_t type, uint32_t id, uint32_t arg, int fd, uint32_t *out_id)
{
	struct dpsock_pl_msg m = { .type = type, .id = id, .arg = arg }, a;
	int nr = 0, r;

	pthread_mutex_lock(&shim_proc.lock);
	if (shim_proc.ctl < 0) {
		pthread_mutex_unlock(&shim_proc.lock);
		return -ECONNRESET;
	}
	r = ctl_call(&m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &a, NULL, &nr);
	pthread_mutex_unlock(&shim_proc.lock);
	if (r == 0 && a.type != DPSOCK_PL_REPLY)
		r = -EPROTO;
	if (r == 0)
		r = a.status;
	if (r == 0 && out_id != NULL)
		*out_id = a.id;
	return r;
}

int
shim_waiter_new(struct shim_waiter *w)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint32_t id;
	int r;

	w->id = -1;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0)
		return -errno;
	r = ctl_simple(DPSOCK_PL_WAITER_ADD, 0, 0, w->efd, &id);
	if (r == 0 && id >= g->max_waiters)
		r = -EPROTO;
	if (r < 0) {
		REAL(close)(w->efd);
		w->efd = -1;
		return r;
	}
	w->id = (int)id;
	w->pid = shim_getpid();
	w->hdr = (struct dpsock_pl_waiter *)(void *)(shim_proc.seg + g->off_waiters +
						    (uint64_t)id * g->waiter_stride);
	/* release: our pid before any watch[] entry naming this waiter
	 * (shim_sock_watch's reclaim reads it with acquire) */
	__atomic_store_n(&w->hdr->owner_pid, (uint32_t)w->pid, __ATOMIC_RELEASE);
	for (uint32_t k = 0; k < g->n_workers; k++) {
		void *ring = (unsigned char *)w->hdr + DPSOCK_PL_WAITER_HDR + k * g->wait_ring_size;

		r = dpsock_spsc_cons_attach(&w->ring[k], ring, g->wait_ring_size);
		if (r < 0) {
			shim_waiter_free(w);
			return r;
		}
	}
	return 0;
}

void
shim_waiter_free(struct shim_waiter *w)
{
	if (w->id >= 0 && w->pid == shim_getpid())
		ctl_simple(DPSOCK_PL_WAITER_DEL, (uint32_t)w->id, 0, -1, NULL);
	if (w->efd >= 0 && w->pid == shim_getpid())
		REAL(close)(w->efd);
	w->id = -1;
	w->efd = -1;
}

void
shim_waiter_drain(struct shim_waiter *w, void (*fn)(uint32_t, void *), void *arg)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint32_t nslots = g->n_workers * g->slots_per_worker;

	for (uint32_t k = 0; k < g->n_workers; k++) {
		uint64_t e[32];
		unsigned int n;

		/* the ring's elements are slot numbers (uint32_t, low half of an
		 * 8-byte element: abi/spsc_ring.h's smallest element) */
		while ((n = dpsock_spsc_dequeue_burst(&w->ring[k], e, 32)) > 0) {
			for (unsigned int i = 0; i < n; i++) {
				uint32_t sn = (uint32_t)e[i];
				struct dpsock_pl_slot *s;

				if (sn >= nslots)
					continue;
				s = shim_slot(sn);
				for (int j = 0; j < DPSOCK_PL_WATCH; j++)
					if (__atomic_load_n(&s->watch[j], __ATOMIC_RELAXED) ==
					    (uint32_t)w->id + 1)
						/* release: the worker's next change after this
						 * store queues the slot again (it reads
						 * queued[] after its own fence). */
						__atomic_store_n(&s->queued[j], 0, __ATOMIC_RELEASE);
				if (fn != NULL)
					fn(sn, arg);
			}
		}
	}
	if (__atomic_load_n(&w->hdr->overflow, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&w->hdr->overflow, 0, __ATOMIC_RELAXED);
		if (fn != NULL)
			fn(UINT32_MAX, arg);
	}
}

static void
waiter_arm(struct shim_waiter *w, uint32_t how)
{
	int cpu = sched_getcpu();

	__atomic_store_n(&w->hdr->cpu, cpu < 0 ? 0u : (uint32_t)cpu + 1, __ATOMIC_RELAXED);
	w->armed = how;
	__atomic_store_n(&w->hdr->armed, how, __ATOMIC_RELAXED);
	/* seq_cst: pairs with the worker's fence between publishing a slot
	 * change or a reply and reading armed (docs/preload.md "Readiness"). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void
shim_waiter_arm(struct shim_waiter *w)
{
	waiter_arm(w, DPSOCK_PL_ARMED_EVENTFD);
}

void
shim_waiter_arm_futex(struct shim_waiter *w)
{
	/* the word before arming: a wake-up after this point changes it, and
	 * FUTEX_WAIT then returns at once */
	w->futex_seen = __atomic_load_n(&w->hdr->futex, __ATOMIC_ACQUIRE);
	waiter_arm(w, DPSOCK_PL_ARMED_FUTEX);
}

long
shim_spin_budget(long configured)
{
	int cpu;

	if (configured != SHIM_POLL_AUTO)
		return configured;
	cpu = sched_getcpu();
	if (cpu >= 0 && shim_proc.wake != NULL)
		for (uint32_t k = 0; k < shim_proc.n_workers; k++)
			if (__atomic_load_n(&shim_proc.wake[k].cpu, __ATOMIC_RELAXED) ==
			    (uint32_t)cpu + 1)
				return 0;
	return SHIM_POLL_DEFAULT_US;
}

bool
shim_waiter_dead(uint32_t id)
{
	const struct dpsock_pl_seg *g = shim_seg();
	const struct dpsock_pl_waiter *h;
	uint32_t pid;

	if (id >= g->max_waiters)
		return true;
	h = (const struct dpsock_pl_waiter *)(const void *)(shim_proc.seg + g->off_waiters +
							   (uint64_t)id * g->waiter_stride);
	pid = __atomic_load_n(&h->owner_pid, __ATOMIC_ACQUIRE);
	/* 0: freed by dpsockd (its header zeroed) or not yet owned: leave it */
	return pid != 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

bool
shim_daemon_gone(void)
{
	if (shim_proc.seg == NULL)
		return false;
	if (__atomic_load_n(&((struct dpsock_pl_seg *)(void *)shim_proc.seg)->state,
			    __ATOMIC_ACQUIRE) == DPSOCK_PL_STOPPED || ctl_hup)
		return true;
	/* dpsockd killed: only the control socket's hang-up tells. A sleeping
	 * call sees it in its poll set; between sleeps, look at most every
	 * 10 ms (this runs on every readiness check). */
	if (shim_proc.ctl >= 0) {
		static uint64_t last;
		uint64_t now = shim_now_us();

		if (now - __atomic_load_n(&last, __ATOMIC_RELAXED) >= 10000) {
			struct pollfd p = { shim_proc.ctl, 0, 0 };
			int saved = errno;

			__atomic_store_n(&last, now, __ATOMIC_RELAXED);
			if (REAL(poll)(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
				ctl_hup = 1;
			errno = saved;
		}
	}
	return ctl_hup != 0;
}

void
shim_daemon_hung_up(void)
{
	ctl_hup = 1;
}

int
shim_sleep(struct shim_waiter *w, struct pollfd *pfd, nfds_t nfds, int timeout_ms,
	   const sigset_t *sigmask)
{
	struct pollfd stack[64], *p = stack;
	int r, n = 0;
	uint64_t v;

	if (w->armed == DPSOCK_PL_ARMED_FUTEX && nfds == 0 && sigmask == NULL) {
		int ms = timeout_ms < 0 || timeout_ms > SHIM_FUTEX_SLEEP_MS ? SHIM_FUTEX_SLEEP_MS
									   : timeout_ms;
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

		/* shared (not FUTEX_PRIVATE): the worker wakes it through its own
		 * mapping of the segment */
		if (futex(&w->hdr->futex, FUTEX_WAIT, w->futex_seen, &ts) < 0 && errno == EINTR)
			return -EINTR;
		return 0;   /* woken, timed out, or the word had moved (EAGAIN) */
	}
	if (nfds + 2 > 64) {
		p = calloc(nfds + 2, sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
	}
	for (nfds_t i = 0; i < nfds; i++)
		p[i] = pfd[i];
	p[nfds] = (struct pollfd){ w->efd, POLLIN, 0 };
	/* the control socket hangs up when dpsockd dies; once it has, it
	 * would only wake every sleep at once */
	p[nfds + 1] = (struct pollfd){ ctl_hup ? -1 : shim_proc.ctl, 0, 0 };
	if (sigmask != NULL) {
		struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };

		r = REAL(ppoll)(p, nfds + 2, timeout_ms < 0 ? NULL : &ts, sigmask);
	} else {
		r = REAL(poll)(p, nfds + 2, timeout_ms);
	}
	if (r < 0) {
		r = -errno;
	} else {
		if (p[nfds].revents & POLLIN) {
			if (REAL(read)(w->efd, &v, sizeof(v)) < 0) {
				/* EAGAIN: another thread drained it; nothing lost */
			}
		}
		if (p[nfds + 1].revents & (POLLHUP | POLLERR))
			ctl_hup = 1;
		for (nfds_t i = 0; i < nfds; i++) {
			pfd[i].revents = p[i].revents;
			n += p[i].revents != 0;
		}
		r = n;
	}
	if (p != stack)
		free(p);
	return r;
}

/* ---- threads, channels, commands ---------------------------------------- */

static void wake_worker(uint32_t k);

/* Commands still in a thread's rings (a TX_KICK or CLOSE posted just
 * before the thread or the process ended) would die with its channel: give
 * the workers a bounded moment (500 ms) to take them first. */
static void
thread_drain(struct shim_thread *t)
{
	uint64_t t0 = shim_now_us();
	struct timespec ts = { 0, 50000 };

	for (uint32_t k = 0; t->channel >= 0 && k < shim_proc.n_workers; k++)
		while (dpsock_spsc_prod_free_count(&t->cmd[k]) <
			       dpsock_spsc_prod_capacity(&t->cmd[k]) &&
		       !dpsock_spsc_prod_corrupt(&t->cmd[k]) && !shim_daemon_gone() &&
		       shim_now_us() - t0 < 500000) {
			wake_worker(k);
			nanosleep(&ts, NULL);
		}
}

void
shim_thread_drain_self(void)
{
	struct shim_thread *t = tls_thread;

	if (t != NULL && t->pid == shim_getpid())
		thread_drain(t);
}

/* exit(): the kernel closes every descriptor of the process, and a TCP
 * connection closed that way still sends what it was given, then FIN:
 * let go of every offloaded socket as close() does, so that the workers
 * close them in order (what their tx FIFOs hold goes out first, as an
 * orphan once the group ends) instead of resetting them when the group
 * ends. Another process of the group still holding a socket keeps it
 * (shim_sock_release_slots). Then drain the thread's rings (the main
 * thread's TLS destructor does not run). _exit() and a fatal signal skip
 * this: the group's end resets what is left, as dpsockd does for a
 * program that dies. */
__attribute__((destructor)) static void
process_exit(void)
{
	struct shim_thread *t;

	if (__atomic_load_n(&shim_proc.state, __ATOMIC_ACQUIRE) == 1 && !shim_daemon_gone())
		shim_fd_release_all();
	t = tls_thread;
	if (t != NULL && t->pid == shim_getpid())
		thread_drain(t);
}

static void
thread_exit(void *arg)
{
	struct shim_thread *t = arg;

	if (t->pid == shim_getpid()) {
		thread_drain(t);
		if (t->channel >= 0)
			ctl_simple(DPSOCK_PL_CHANNEL_DEL, (uint32_t)t->channel, 0, -1, NULL);
		shim_waiter_free(&t->w);
	}
	free(t);
}

static void
thread_key_make(void)
{
	pthread_key_create(&thread_key, thread_exit);
}

struct shim_thread *
shim_thread_get(void)
{
	struct shim_thread *t = tls_thread;
	const struct dpsock_pl_seg *g;
	uint32_t id;
	int r;

	if (__builtin_expect(t != NULL && t->pid == shim_getpid(), 1))
		return t;
	if (t != NULL) {
		/* inherited from the parent through fork: its channel and waiter
		 * are the parent's. Forget them (the parent still uses them). */
		free(t);
		tls_thread = NULL;
	}
	r = shim_attach();
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	pthread_once(&thread_key_once, thread_key_make);
	g = shim_seg();
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->pid = shim_getpid();
	t->channel = -1;
	r = shim_waiter_new(&t->w);
	if (r == 0)
		r = ctl_simple(DPSOCK_PL_CHANNEL_ADD, 0, (uint32_t)t->w.id, -1, &id);
	if (r == 0 && id >= g->max_channels)
		r = -EPROTO;
	if (r == 0) {
		t->channel = (int)id;
		for (uint32_t k = 0; k < g->n_workers && r == 0; k++) {
			unsigned char *b = shim_proc.seg + g->off_channels +
					   ((uint64_t)id * g->n_workers + k) * g->chan_stride;

			r = dpsock_spsc_prod_attach(&t->cmd[k], b, g->cmd_ring_size);
			if (r == 0)
				r = dpsock_spsc_cons_attach(&t->reply[k], b + g->cmd_ring_size,
							    g->reply_ring_size);
		}
	}
	if (r < 0) {
		SHIM_LOG(WARNING, "cannot open a channel to dpsockd: %s", strerror(-r));
		t->pid = shim_getpid();
		thread_exit(t);
		errno = r == -ENOSPC ? EMFILE : -r;
		return NULL;
	}
	t->worker = __atomic_fetch_add(&shim_proc.next_worker, 1, __ATOMIC_RELAXED) %
		    g->n_workers;
	tls_thread = t;
	pthread_setspecific(thread_key, t);
	return t;
}

static void
wake_worker(uint32_t k)
{
	uint64_t one = 1;

	/* seq_cst: pairs with the worker's fence between storing sleeping = 1
	 * and re-checking its rings (dpsock_worker_idle): either it sees our
	 * command or we see it sleeping. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&shim_proc.wake[k].sleeping, __ATOMIC_RELAXED))
		if (REAL(write)(shim_proc.worker_efd[k], &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is already non-zero, it will wake */
		}
}

int
shim_cmd_post(struct shim_thread *t, uint32_t k, struct dpsock_pl_cmd *c)
{
	struct timespec ts = { 0, 20000 };

	if (k >= shim_proc.n_workers)
		return -EINVAL;
	while (dpsock_spsc_enqueue_bulk(&t->cmd[k], c, 1) == 0) {
		if (dpsock_spsc_prod_corrupt(&t->cmd[k]) || shim_daemon_gone())
			return -ECONNABORTED;
		/* ring full: the worker drains it in its loop; wake it, back off */
		wake_worker(k);
		nanosleep(&ts, NULL);
	}
	wake_worker(k);
	return 0;
}

int
shim_cmd_call(struct shim_thread *t, uint32_t k, struct dpsock_pl_cmd *c,
	      struct dpsock_pl_reply *r)
{
	uint64_t start = shim_now_us();
	long budget = shim_spin_budget(shim_env.rx_poll_us);
	int e;

	c->cookie = ++t->cookie;
	e = shim_cmd_post(t, k, c);
	if (e < 0)
		return e;
	for (;;) {
		while (dpsock_spsc_dequeue_bulk(&t->reply[k], r, 1) == 1)
			if (r->cookie == c->cookie)
				return 0;
		/* a stale reply (a call interrupted earlier) is dropped above */
		if (shim_daemon_gone())
			return -ECONNABORTED;
		if (budget < 0 || shim_now_us() - start < (uint64_t)budget) {
			shim_cpu_relax();
			continue;
		}
		shim_waiter_arm_futex(&t->w);
		if (dpsock_spsc_cons_empty(&t->reply[k]))
			shim_sleep(&t->w, NULL, 0, 100, NULL);
		shim_waiter_disarm(&t->w);
		shim_waiter_drain(&t->w, NULL, NULL);
	}
}
