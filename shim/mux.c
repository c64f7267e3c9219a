/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mux.c — readiness over any mix of kernel and offloaded descriptors:
 * poll, ppoll, select, pselect and epoll (docs/preload.md "Readiness and
 * sleeping"). A call that names no offloaded descriptor goes straight to
 * libc. Otherwise: offloaded readiness is computed from the slots, kernel
 * readiness from the real call with a zero time-out; nothing ready ->
 * spin for DPSOCK_SELECT_POLL µs -> arm the waiter, fence, re-check ->
 * sleep in the real poll / epoll_wait with the waiter's eventfd and the
 * control socket alongside the kernel descriptors.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim_priv.h"

#define HOOK DPSOCK_SHIM_EXPORT

static inline int
fail(int e)
{
	errno = e;
	return -1;
}

/* Milliseconds left of a time-out that started at start_us; -1 = forever. */
static int
ms_left(int timeout_ms, uint64_t start_us)
{
	uint64_t el;

	if (timeout_ms < 0)
		return -1;
	el = (dpsock_now_us() - start_us) / 1000;
	return el >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)el;
}

static int
ts_to_ms(const struct timespec *ts)
{
	if (ts == NULL)
		return -1;
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
		return -2;
	if (ts->tv_sec > 1000000)
		return 1000000000;
	return (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
}

/* ---- poll --------------------------------------------------------------- */

static bool
any_offloaded(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (fds[i].fd >= 0 && shim_sock_offloaded(shim_sock_get(fds[i].fd)))
			return true;
	return false;
}

/* Offloaded entries' revents; returns how many are ready. */
static int
poll_offloaded(struct pollfd *fds, nfds_t n)
{
	int c = 0;

	for (nfds_t i = 0; i < n; i++) {
		struct shim_sock *s;
		uint32_t r;

		if (fds[i].fd < 0)
			continue;
		s = shim_sock_get(fds[i].fd);
		if (!shim_sock_offloaded(s))
			continue;
		r = shim_sock_ready(s) & ((uint32_t)fds[i].events | POLLERR | POLLHUP);
		fds[i].revents = (short)r;
		c += r != 0;
	}
	return c;
}

/* poll over mixed descriptors. timeout_ms -1 = forever. */
static int
mixed_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct pollfd kstack[64], *k = kstack;
	nfds_t nk = 0, *map, mstack[64];
	struct shim_thread *t = shim_thread_get();
	uint64_t start = dpsock_now_us();
	long budget = dpsock_env.select_poll_us;
	int ret = -1;

	if (t == NULL)
		return -1;
	map = mstack;
	if (n > 64) {
		k = calloc(n, sizeof(*k));
		map = calloc(n, sizeof(*map));
		if (k == NULL || map == NULL) {
			free(k == kstack ? NULL : k);
			free(map == mstack ? NULL : map);
			return fail(ENOMEM);
		}
	}
	for (nfds_t i = 0; i < n; i++) {
		fds[i].revents = 0;
		if (fds[i].fd >= 0 && shim_sock_offloaded(shim_sock_get(fds[i].fd)))
			continue;
		k[nk] = fds[i];
		map[nk++] = i;
	}
	for (;;) {
		int c = poll_offloaded(fds, n), kc = 0, left;
		bool watched = true;

		if (nk > 0) {
			kc = REAL(poll)(k, nk, 0);
			if (kc < 0)
				goto out_err;
			for (nfds_t j = 0; j < nk; j++)
				fds[map[j]].revents = k[j].revents;
		}
		if (c + kc > 0 || timeout_ms == 0) {
			ret = c + kc;
			break;
		}
		left = ms_left(timeout_ms, start);
		if (left == 0) {
			ret = 0;
			break;
		}
		if (budget < 0 || dpsock_now_us() - start < (uint64_t)budget) {
			shim_cpu_relax();
			continue;
		}
		for (nfds_t i = 0; i < n; i++) {
			struct shim_sock *s = fds[i].fd >= 0 ? shim_sock_get(fds[i].fd) : NULL;

			if (shim_sock_offloaded(s))
				watched = shim_sock_watch(s, t->w.id) && watched;
		}
		__atomic_store_n(&t->w.hdr->armed, 1, __ATOMIC_RELAXED);
		/* seq_cst: pairs with the worker's fence between publishing a
		 * slot change and reading armed. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		c = poll_offloaded(fds, n);
		if (c == 0 && !shim_daemon_gone()) {
			int tmo = left;

			if (!watched && (tmo < 0 || tmo > 1))
				tmo = 1;
			kc = shim_sleep(&t->w, k, nk, tmo, mask);
		}
		__atomic_store_n(&t->w.hdr->armed, 0, __ATOMIC_RELAXED);
		shim_waiter_drain(&t->w, NULL, NULL);
		for (nfds_t i = 0; i < n; i++) {
			struct shim_sock *s = fds[i].fd >= 0 ? shim_sock_get(fds[i].fd) : NULL;

			if (shim_sock_offloaded(s))
				shim_sock_unwatch(s, t->w.id);
		}
		if (kc == -EINTR) {
			errno = EINTR;
			goto out_err;
		}
	}
	goto out;
out_err:
	ret = -1;
out:
	if (k != kstack) {
		int e = errno;

		free(k);
		free(map);
		errno = e;
	}
	return ret;
}

/* glibc marks poll's array write-only (access attribute): reading events
 * from it here is what poll itself does. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
HOOK int
poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!any_offloaded(fds, n))
		return REAL(poll)(fds, n, timeout);
	return mixed_poll(fds, n, timeout < 0 ? -1 : timeout, NULL);
}

HOOK int
ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask)
{
	int ms;

	if (!any_offloaded(fds, n))
		return REAL(ppoll)(fds, n, tmo, mask);
	ms = ts_to_ms(tmo);
	if (ms == -2)
		return fail(EINVAL);
	return mixed_poll(fds, n, ms, mask);
}

HOOK int
__poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n || !any_offloaded(fds, n))
		return REAL(__poll_chk)(fds, n, timeout, fdslen);
	return poll(fds, n, timeout);
}

HOOK int
__ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask,
	    size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n || !any_offloaded(fds, n))
		return REAL(__ppoll_chk)(fds, n, tmo, mask, fdslen);
	return ppoll(fds, n, tmo, mask);
}

#pragma GCC diagnostic pop

/* ---- select ------------------------------------------------------------- */

static bool
sets_offloaded(int nfds, fd_set *rd, fd_set *wr, fd_set *ex)
{
	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	for (int fd = 0; fd < nfds; fd++)
		if (((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		     (ex && FD_ISSET(fd, ex))) && shim_sock_offloaded(shim_sock_get(fd)))
			return true;
	return false;
}

static int
mixed_select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int timeout_ms,
	     const sigset_t *mask)
{
	struct pollfd *p;
	int n = 0, r, c = 0;

	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	p = calloc((size_t)nfds, sizeof(*p));
	if (p == NULL)
		return fail(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (rd && FD_ISSET(fd, rd))
			ev |= POLLIN;
		if (wr && FD_ISSET(fd, wr))
			ev |= POLLOUT;
		if (ex && FD_ISSET(fd, ex))
			ev |= POLLPRI;
		if (ev)
			p[n++] = (struct pollfd){ fd, ev, 0 };
	}
	r = mixed_poll(p, (nfds_t)n, timeout_ms, mask);
	if (r < 0) {
		int e = errno;

		free(p);
		return fail(e);
	}
	for (int i = 0; i < n; i++)
		if (p[i].revents & POLLNVAL) {
			free(p);
			return fail(EBADF);
		}
	if (rd)
		FD_ZERO(rd);
	if (wr)
		FD_ZERO(wr);
	if (ex)
		FD_ZERO(ex);
	for (int i = 0; i < n; i++) {
		short rv = p[i].revents;

		if (rd && (p[i].events & POLLIN) && (rv & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(p[i].fd, rd);
			c++;
		}
		if (wr && (p[i].events & POLLOUT) && (rv & (POLLOUT | POLLERR))) {
			FD_SET(p[i].fd, wr);
			c++;
		}
		if (ex && (p[i].events & POLLPRI) && (rv & POLLPRI)) {
			FD_SET(p[i].fd, ex);
			c++;
		}
	}
	free(p);
	return c;
}

HOOK int
select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tmo)
{
	uint64_t start;
	int ms, r;

	if (nfds < 0 || !sets_offloaded(nfds, rd, wr, ex))
		return REAL(select)(nfds, rd, wr, ex, tmo);
	if (tmo != NULL && (tmo->tv_sec < 0 || tmo->tv_usec < 0))
		return fail(EINVAL);
	ms = tmo == NULL ? -1 : (int)(tmo->tv_sec * 1000 + (tmo->tv_usec + 999) / 1000);
	start = dpsock_now_us();
	r = mixed_select(nfds, rd, wr, ex, ms, NULL);
	if (tmo != NULL) {
		/* Linux writes back the time not slept */
		uint64_t el = dpsock_now_us() - start;
		uint64_t all = (uint64_t)tmo->tv_sec * 1000000u + (uint64_t)tmo->tv_usec;
		uint64_t left = el >= all ? 0 : all - el;

		tmo->tv_sec = (time_t)(left / 1000000u);
		tmo->tv_usec = (suseconds_t)(left % 1000000u);
	}
	return r;
}

HOOK int
pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *tmo,
	const sigset_t *mask)
{
	int ms;

	if (nfds < 0 || !sets_offloaded(nfds, rd, wr, ex))
		return REAL(pselect)(nfds, rd, wr, ex, tmo, mask);
	ms = ts_to_ms(tmo);
	if (ms == -2)
		return fail(EINVAL);
	return mixed_select(nfds, rd, wr, ex, ms, mask);
}

/* ---- epoll -------------------------------------------------------------- */

#define EP_MARKER 0xd950c4d900000000ull
#define EP_MARKER_MASK 0xffffffff00000000ull

struct ep_reg {
	int fd;
	struct shim_sock *s;
	struct epoll_event ev;
	int in_kernel;            /* registered in the kernel set (undecided then) */
	int disabled;             /* EPOLLONESHOT fired */
	/* edge-triggered: the signature at the last report (seen_valid 0:
	 * never reported since ADD/MOD, so a ready socket is news) */
	struct shim_edge_sig seen;
	int seen_valid;
	int dead_reported;        /* dpsockd gone: reported once (no busy loop) */
};

struct shim_ep {
	struct shim_ep *next;
	int epfd;
	pthread_mutex_t lock;
	struct ep_reg *regs;
	size_t n, cap;
	int n_off;                /* registrations that are (or may become) ours */
	struct shim_waiter w;
	int watched_all;          /* every offloaded reg has a watch entry */
};

static pthread_mutex_t eps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_ep *eps;
static int n_eps;

static struct shim_ep *
ep_find(int epfd)
{
	struct shim_ep *e;

	if (__atomic_load_n(&n_eps, __ATOMIC_ACQUIRE) == 0)
		return NULL;
	pthread_mutex_lock(&eps_lock);
	for (e = eps; e != NULL && e->epfd != epfd; e = e->next)
		;
	pthread_mutex_unlock(&eps_lock);
	return e;
}

bool
shim_epoll_is(int epfd)
{
	return ep_find(epfd) != NULL;
}

static struct shim_ep *
ep_get(int epfd)
{
	struct shim_ep *e = ep_find(epfd);

	if (e != NULL)
		return e;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->epfd = epfd;
	e->w.id = -1;
	e->w.efd = -1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_lock(&eps_lock);
	e->next = eps;
	eps = e;
	__atomic_add_fetch(&n_eps, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&eps_lock);
	return e;
}

static void
ep_free(struct shim_ep *e)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->w.id >= 0 && shim_sock_offloaded(e->regs[i].s))
			shim_sock_unwatch(e->regs[i].s, e->w.id);
	if (e->w.id >= 0)
		shim_waiter_free(&e->w);
	free(e->regs);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void
shim_epoll_close(int epfd)
{
	struct shim_ep **pp, *e = NULL;

	pthread_mutex_lock(&eps_lock);
	for (pp = &eps; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->epfd == epfd) {
			e = *pp;
			*pp = e->next;
			__atomic_sub_fetch(&n_eps, 1, __ATOMIC_RELEASE);
			break;
		}
	pthread_mutex_unlock(&eps_lock);
	if (e != NULL)
		ep_free(e);
}

/* The epoll's waiter (this process's), created on first offloaded reg; its
 * eventfd sits in the kernel set with a marker as data. Caller holds e->lock. */
static int
ep_waiter(struct shim_ep *e)
{
	/* edge-triggered: every write by a worker is one event; an eventfd of
	 * another process sharing this kernel set (fork) that nobody drains
	 * then cannot keep waking us */
	struct epoll_event kev = { .events = EPOLLIN | EPOLLET };
	int r;

	if (e->w.id >= 0 && e->w.pid == getpid())
		return 0;
	r = shim_attach();
	if (r == 0)
		r = shim_waiter_new(&e->w);
	if (r < 0)
		return r;
	kev.data.u64 = EP_MARKER | (uint32_t)e->w.efd;
	if (REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, e->w.efd, &kev) < 0) {
		r = -errno;
		shim_waiter_free(&e->w);
		return r;
	}
	e->watched_all = 1;
	for (size_t i = 0; i < e->n; i++)
		if (shim_sock_offloaded(e->regs[i].s) && !e->regs[i].in_kernel)
			e->watched_all &= shim_sock_watch(e->regs[i].s, e->w.id);
	return 0;
}

/* An undecided socket of a reg became offloaded: take it out of the kernel
 * set and watch it. Caller holds e->lock. */
static void
ep_adopt(struct shim_ep *e)
{
	e->n_off = 0;
	for (size_t i = 0; i < e->n; i++) {
		struct ep_reg *g = &e->regs[i];

		if (g->in_kernel && g->s->mode == SHIM_KERNEL) {
			/* decided for the kernel: plain kernel registration */
			*g = e->regs[--e->n];
			i--;
			continue;
		}
		if (!g->in_kernel)
			e->n_off++;
		if (!g->in_kernel || !shim_sock_offloaded(g->s))
			continue;
		e->n_off++;
		if (ep_waiter(e) < 0)
			return;
		REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, g->fd, NULL);
		g->in_kernel = 0;
		g->seen_valid = 0;
		e->watched_all &= shim_sock_watch(g->s, e->w.id);
	}
}

static struct ep_reg *
ep_reg_find(struct shim_ep *e, int fd)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->regs[i].fd == fd)
			return &e->regs[i];
	return NULL;
}

void
shim_epoll_fd_closed(int fd, struct shim_sock *s)
{
	struct shim_ep *e;

	if (__atomic_load_n(&n_eps, __ATOMIC_ACQUIRE) == 0)
		return;
	/* Linux drops a registration when the last descriptor of the open
	 * file goes; other dups keep it */
	if (__atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) > 1)
		return;
	pthread_mutex_lock(&eps_lock);
	for (e = eps; e != NULL; e = e->next) {
		struct ep_reg *g;

		pthread_mutex_lock(&e->lock);
		g = ep_reg_find(e, fd);
		if (g != NULL && g->s == s) {
			if (e->w.id >= 0 && !g->in_kernel)
				shim_sock_unwatch(s, e->w.id);
			*g = e->regs[--e->n];
		}
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&eps_lock);
}

void
shim_fork_child(void)
{
	/* epoll waiters, thread channels and waiters belong to the parent:
	 * each is recreated lazily (pid checks). Nothing to undo here. */
}

HOOK int
epoll_create(int size)
{
	return REAL(epoll_create)(size);
}

HOOK int
epoll_create1(int flags)
{
	return REAL(epoll_create1)(flags);
}

HOOK int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct shim_ep *e;
	struct ep_reg *g;
	int r = 0;

	if (s == NULL || s->mode == SHIM_KERNEL) {
		if (s == NULL && ep_find(epfd) == NULL)
			return REAL(epoll_ctl)(epfd, op, fd, ev);
		e = ep_find(epfd);
		if (e != NULL && op == EPOLL_CTL_DEL) {
			pthread_mutex_lock(&e->lock);
			g = ep_reg_find(e, fd);
			if (g != NULL)
				*g = e->regs[--e->n];
			pthread_mutex_unlock(&e->lock);
		}
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	}
	/* a shadowed socket: check what Linux checks, with the real epfd */
	if (epfd == fd)
		return fail(EINVAL);
	{
		int fl = REAL(fcntl)(epfd, F_GETFD);

		if (fl < 0)
			return -1;
	}
	if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		return fail(EINVAL);
	if (op != EPOLL_CTL_DEL && ev == NULL)
		return fail(EFAULT);
	e = ep_get(epfd);
	if (e == NULL)
		return fail(ENOMEM);
	pthread_mutex_lock(&e->lock);
	g = ep_reg_find(e, fd);
	switch (op) {
	case EPOLL_CTL_ADD:
		if (g != NULL && g->s == s) {
			r = -EEXIST;
			break;
		}
		if (g != NULL)  /* a stale entry for a closed-and-reused number */
			*g = e->regs[--e->n];
		if (e->n == e->cap) {
			size_t cap = e->cap ? e->cap * 2 : 16;
			struct ep_reg *n = realloc(e->regs, cap * sizeof(*n));

			if (n == NULL) {
				r = -ENOMEM;
				break;
			}
			e->regs = n;
			e->cap = cap;
		}
		g = &e->regs[e->n];
		*g = (struct ep_reg){ .fd = fd, .s = s, .ev = *ev };
		if (!shim_sock_offloaded(s)) {
			/* undecided: the kernel watches it until it is offloaded */
			if (REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, fd, ev) < 0) {
				r = -errno;
				break;
			}
			g->in_kernel = 1;
			e->n++;
			break;
		}
		r = ep_waiter(e);
		if (r < 0)
			break;
		e->n++;
		e->watched_all &= shim_sock_watch(s, e->w.id);
		break;
	case EPOLL_CTL_MOD:
		if (g == NULL || g->s != s) {
			r = -ENOENT;
			break;
		}
		if (g->in_kernel && REAL(epoll_ctl)(epfd, EPOLL_CTL_MOD, fd, ev) < 0) {
			r = -errno;
			break;
		}
		g->ev = *ev;
		g->disabled = 0;
		g->seen_valid = 0;
		break;
	case EPOLL_CTL_DEL:
		if (g == NULL || g->s != s) {
			r = -ENOENT;
			break;
		}
		if (g->in_kernel)
			REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, fd, NULL);
		else if (e->w.id >= 0)
			shim_sock_unwatch(s, e->w.id);
		*g = e->regs[--e->n];
		break;
	}
	pthread_mutex_unlock(&e->lock);
	return r < 0 ? fail(-r) : 0;
}

/* Offloaded events into evs (at most max). Caller holds e->lock. */
static int
ep_collect(struct shim_ep *e, struct epoll_event *evs, int max, bool consume)
{
	int c = 0;

	/* the wait rings only say whom to wake: what is new comes from the
	 * edge signatures below */
	if (e->w.id >= 0 && e->w.pid == getpid())
		shim_waiter_drain(&e->w, NULL, NULL);
	for (size_t i = 0; i < e->n && c < max; i++) {
		struct ep_reg *g = &e->regs[i];
		struct shim_edge_sig sig;
		uint32_t want, r;

		if (g->in_kernel || g->disabled)
			continue;
		if (shim_daemon_gone()) {
			/* every offloaded socket is dead: wake the caller once with
			 * ERR|HUP per registration (its calls then fail with the
			 * errors of docs/preload.md) rather than on every wait, so
			 * that a level-triggered loop does not spin */
			if (g->dead_reported)
				continue;
			if (consume)
				g->dead_reported = 1;
		}
		want = g->ev.events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI);
		r = shim_sock_ready_sig(g->s, &sig) & (want | EPOLLERR | EPOLLHUP);
		if (r == 0)
			continue;
		if ((g->ev.events & EPOLLET) && g->seen_valid &&
		    !((r & (EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLERR | EPOLLHUP)) &&
		      sig.in != g->seen.in) &&
		    !((r & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && sig.out != g->seen.out))
			continue;   /* ready, but nothing new since the last report */
		if (!consume)
			return 1;
		evs[c].events = r;
		evs[c].data = g->ev.data;
		c++;
		if (g->ev.events & EPOLLET) {
			g->seen = sig;
			g->seen_valid = 1;
		}
		if (g->ev.events & EPOLLONESHOT)
			g->disabled = 1;
	}
	return c;
}

/* Remove our marker events from a kernel result; drain our eventfd. */
static int
ep_strip(struct shim_ep *e, struct epoll_event *evs, int n)
{
	int o = 0;

	for (int i = 0; i < n; i++) {
		if ((evs[i].data.u64 & EP_MARKER_MASK) == EP_MARKER) {
			uint64_t v;

			if ((int)(uint32_t)evs[i].data.u64 == e->w.efd &&
			    REAL(read)(e->w.efd, &v, sizeof(v)) < 0) {
				/* already drained by another thread */
			}
			continue;
		}
		evs[o++] = evs[i];
	}
	return o;
}

static int
mixed_epoll_wait(struct shim_ep *e, struct epoll_event *evs, int max, int timeout,
		 const sigset_t *mask)
{
	uint64_t start = dpsock_now_us();
	long budget = dpsock_env.select_poll_us;

	if (max <= 0)
		return fail(EINVAL);
	for (;;) {
		int c, k, left;

		pthread_mutex_lock(&e->lock);
		ep_adopt(e);
		c = ep_collect(e, evs, max, true);
		pthread_mutex_unlock(&e->lock);
		if (c < max) {
			k = REAL(epoll_wait)(e->epfd, evs + c, max - c, 0);
			if (k < 0)
				return c > 0 ? c : -1;
			c += ep_strip(e, evs + c, k);
		}
		if (c > 0 || timeout == 0)
			return c;
		left = ms_left(timeout, start);
		if (left == 0)
			return 0;
		if (budget < 0 || dpsock_now_us() - start < (uint64_t)budget) {
			shim_cpu_relax();
			continue;
		}
		pthread_mutex_lock(&e->lock);
		if (e->w.id < 0 || e->w.pid != getpid()) {
			if (ep_waiter(e) < 0) {
				pthread_mutex_unlock(&e->lock);
				left = left < 0 || left > 1 ? 1 : left;
				goto sleep_plain;
			}
		}
		__atomic_store_n(&e->w.hdr->armed, 1, __ATOMIC_RELAXED);
		/* seq_cst: pairs with the worker's fence between publishing a
		 * slot change and reading armed. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		c = ep_collect(e, evs, max, false);
		if (!e->watched_all && (left < 0 || left > 1))
			left = 1;
		pthread_mutex_unlock(&e->lock);
		if (c > 0 || shim_daemon_gone()) {
			__atomic_store_n(&e->w.hdr->armed, 0, __ATOMIC_RELAXED);
			if (c == 0)
				left = left < 0 || left > 1 ? 1 : left;
			else
				continue;
		}
sleep_plain:
		k = mask != NULL ? REAL(epoll_pwait)(e->epfd, evs, max, left, mask)
				 : REAL(epoll_wait)(e->epfd, evs, max, left);
		if (e->w.id >= 0 && e->w.hdr != NULL)
			__atomic_store_n(&e->w.hdr->armed, 0, __ATOMIC_RELAXED);
		if (k < 0)
			return -1;   /* EINTR and friends, as the kernel said */
		k = ep_strip(e, evs, k);
		if (k > 0) {
			/* kernel events are consumed (edge-triggered ones would not
			 * come back): return them, plus what of ours fits */
			pthread_mutex_lock(&e->lock);
			k += ep_collect(e, evs + k, max - k, true);
			pthread_mutex_unlock(&e->lock);
			return k;
		}
	}
}

/* true when the epoll set holds an offloaded socket (after adopting the
 * registered sockets that were offloaded since they were added) */
static bool
ep_mixed(struct shim_ep *e)
{
	bool m;

	if (e == NULL || e->n == 0)
		return false;
	pthread_mutex_lock(&e->lock);
	ep_adopt(e);
	m = e->n_off > 0;
	pthread_mutex_unlock(&e->lock);
	return m;
}

HOOK int
epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	struct shim_ep *e = ep_find(epfd);

	if (!ep_mixed(e))
		return REAL(epoll_wait)(epfd, evs, max, timeout);
	return mixed_epoll_wait(e, evs, max, timeout < 0 ? -1 : timeout, NULL);
}

HOOK int
epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
	struct shim_ep *e = ep_find(epfd);

	if (!ep_mixed(e))
		return REAL(epoll_pwait)(epfd, evs, max, timeout, mask);
	return mixed_epoll_wait(e, evs, max, timeout < 0 ? -1 : timeout, mask);
}
