/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * epoll.c — epoll over any mix of kernel and offloaded descriptors: kernel
 * descriptors stay in the real epoll set, offloaded ones are registered
 * here and watched through the epoll's own waiter, whose eventfd sits in
 * the real set (docs/preload.md "Readiness and sleeping").
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shim_priv.h"

#define HOOK DPSOCK_SHIM_EXPORT

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
		return shim_fail(EINVAL);
	{
		int fl = REAL(fcntl)(epfd, F_GETFD);

		if (fl < 0)
			return -1;
	}
	if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		return shim_fail(EINVAL);
	if (op != EPOLL_CTL_DEL && ev == NULL)
		return shim_fail(EFAULT);
	e = ep_get(epfd);
	if (e == NULL)
		return shim_fail(ENOMEM);
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
	return r < 0 ? shim_fail(-r) : 0;
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
	uint64_t start = shim_now_us();
	long budget = shim_env.select_poll_us;

	if (max <= 0)
		return shim_fail(EINVAL);
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
		left = shim_ms_left(timeout, start);
		if (left == 0)
			return 0;
		if (budget < 0 || shim_now_us() - start < (uint64_t)budget) {
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
