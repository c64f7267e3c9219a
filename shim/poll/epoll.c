/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * epoll.c — epoll over any mix of kernel and offloaded descriptors: kernel
 * descriptors stay in the real epoll set, offloaded ones are registered
 * here and watched through the epoll's own waiter, whose eventfd sits in
 * the real set (docs/preload.md "Readiness and sleeping").
 *
 * Per epoll instance (struct shim_ep, found by epfd in a lock-free map):
 *   regs       fd -> registration (a map: ctl and close are O(1))
 *   by_slot    slot number -> the registrations of the socket owning it
 *   ready      the registrations that may be ready: put there at ADD/MOD
 *              and whenever a worker names one of their slots in the
 *              waiter's wait rings; a wait walks this list only, so it
 *              costs O(ready + changed), not O(registered) (Linux's
 *              ready list, fed by the workers' notifications)
 *   undecided  sockets not yet offloaded: the kernel set watches them
 *              until listen/connect/bind decides
 * One lock per instance guards all of it; no lock is shared between epoll
 * instances, and the process-wide list of instances is only walked when a
 * socket that was ever registered closes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/io.h"
#include "poll/poll.h"

#define HOOK DPSOCK_SHIM_EXPORT

#define EP_MARKER 0xd950c4d900000000ull
#define EP_MARKER_MASK 0xffffffff00000000ull
/* the control socket's entry: its hang-up is dpsockd's death */
#define EP_CTL_MARKER (EP_MARKER | 0xffffffffull)

struct ep_reg {
	int fd;
	struct shim_sock *s;
	struct epoll_event ev;
	struct ep_reg *sock_next;   /* this instance's other registrations of s (dups) */
	struct ep_reg *undec_next;  /* on the undecided list */
	struct ep_reg *rnext, *rprev; /* on the ready list */
	uint8_t in_kernel;          /* registered in the kernel set (undecided) */
	uint8_t also_kernel;        /* offloaded with a kernel half (shim_sock khalf):
				     * its kernel socket is in the kernel set too */
	uint8_t on_ready;
	uint8_t disabled;           /* EPOLLONESHOT fired */
	uint8_t unwatched;          /* a slot had no free watch entry for us */
	uint8_t dead_reported;      /* dpsockd gone: reported once (no busy loop) */
	/* edge-triggered: the signature at the last report (seen_valid 0:
	 * never reported since ADD/MOD, so a ready socket is news) */
	uint8_t seen_valid;
	struct shim_edge_sig seen;
};

struct shim_ep {
	int epfd;
	pthread_mutex_t lock;
	struct shim_fdmap regs;     /* fd -> struct ep_reg */
	struct ep_reg **by_slot;    /* [n_slots], made with the waiter */
	uint32_t n_slots;
	struct ep_reg *undecided;
	struct ep_reg ready;        /* sentinel of the ready list */
	unsigned int n_off;         /* offloaded registrations (atomic: ep_mixed) */
	unsigned int n_undecided;   /* on the undecided list (atomic: ep_mixed) */
	/* kernel descriptors the program put in the kernel set (ADD less DEL;
	 * one closed without DEL is still counted: too high is only a system
	 * call too many). Without any, a wait that has offloaded events to
	 * return does not also ask the kernel set (atomic). */
	unsigned int n_kernel;
	unsigned int n_khalf;       /* of which kernel halves (khalf_watch) */
	unsigned int quick_waits;   /* waits that skipped the kernel set (see there) */
	unsigned int n_unwatched;   /* of which without a watch entry */
	int gone_seen;              /* dpsockd's end was put on the ready list */
	struct shim_waiter w;
	struct shim_ep *next;       /* every instance (close of a socket) */
};

static struct shim_fdmap eps;   /* epfd -> struct shim_ep */
static pthread_mutex_t eps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_ep *ep_list;

static struct shim_ep *
ep_find(int epfd)
{
	return shim_fdmap_get(&eps, epfd);
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
	pthread_mutex_lock(&eps_lock);
	e = ep_find(epfd);
	if (e == NULL) {
		e = calloc(1, sizeof(*e));
		if (e != NULL) {
			e->epfd = epfd;
			e->w.id = -1;
			e->w.efd = -1;
			e->ready.rnext = e->ready.rprev = &e->ready;
			pthread_mutex_init(&e->lock, NULL);
			if (shim_fdmap_set(&eps, epfd, e) < 0) {
				pthread_mutex_destroy(&e->lock);
				free(e);
				e = NULL;
			} else {
				e->next = ep_list;
				ep_list = e;
			}
		}
	}
	pthread_mutex_unlock(&eps_lock);
	return e;
}

/* ---- the ready list --------------------------------------------------------- */

static void
ready_add(struct shim_ep *e, struct ep_reg *g)
{
	if (g->on_ready)
		return;
	g->on_ready = 1;
	g->rnext = &e->ready;
	g->rprev = e->ready.rprev;
	e->ready.rprev->rnext = g;
	e->ready.rprev = g;
}

static void
ready_del(struct ep_reg *g)
{
	if (!g->on_ready)
		return;
	g->on_ready = 0;
	g->rprev->rnext = g->rnext;
	g->rnext->rprev = g->rprev;
}

/* ---- registrations by slot ------------------------------------------------------ */

static void
slots_link(struct shim_ep *e, struct ep_reg *g)
{
	struct ep_reg *head;

	if (e->by_slot == NULL)
		return;
	head = e->by_slot[g->s->slot[0]];
	if (head != NULL) {          /* a dup of a registered socket */
		g->sock_next = head->sock_next;
		head->sock_next = g;
		return;
	}
	g->sock_next = NULL;
	for (uint32_t i = 0; i < g->s->nslots; i++)
		e->by_slot[g->s->slot[i]] = g;
}

static void
slots_unlink(struct shim_ep *e, struct ep_reg *g)
{
	struct ep_reg **pp;

	if (e->by_slot == NULL)
		return;
	pp = &e->by_slot[g->s->slot[0]];
	if (*pp == g) {
		for (uint32_t i = 0; i < g->s->nslots; i++)
			e->by_slot[g->s->slot[i]] = g->sock_next;
		return;
	}
	for (; *pp != NULL; pp = &(*pp)->sock_next)
		if (*pp == g) {
			*pp = g->sock_next;
			return;
		}
}

/* A worker changed slot n (UINT32_MAX: a wait ring overflowed, anything
 * may have changed). */
static void
slot_changed(uint32_t n, void *arg)
{
	struct shim_ep *e = arg;

	if (n == UINT32_MAX) {
		for (uint32_t i = 0; i < e->n_slots; i++)
			for (struct ep_reg *g = e->by_slot[i]; g != NULL; g = g->sock_next)
				ready_add(e, g);
		return;
	}
	if (n >= e->n_slots)
		return;
	for (struct ep_reg *g = e->by_slot[n]; g != NULL; g = g->sock_next)
		ready_add(e, g);
}

/* ---- the instance's waiter ----------------------------------------------------- */

/* Watch an offloaded registration's slots (the waiter exists). */
static void
reg_watch(struct shim_ep *e, struct ep_reg *g)
{
	g->unwatched = !shim_sock_watch(g->s, e->w.id);
	e->n_unwatched += g->unwatched;
}

/* The epoll's waiter (this process's), created with the first offloaded
 * registration; its eventfd sits in the kernel set with a marker as data.
 * Caller holds e->lock. */
static int
ep_waiter(struct shim_ep *e)
{
	/* edge-triggered: every write by a worker is one event; an eventfd of
	 * another process sharing this kernel set (fork) that nobody drains
	 * then cannot keep waking us */
	struct epoll_event kev = { .events = EPOLLIN | EPOLLET };
	const struct dpsock_pl_seg *geo;
	int r;

	if (e->w.id >= 0 && e->w.pid == shim_getpid())
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
	/* the control socket too, as shim_sleep watches it: only its hang-up
	 * (always reported, once: edge-triggered) tells a sleeping wait that
	 * dpsockd was killed. Already there (a forked child's set): fine. */
	kev.events = EPOLLET;
	kev.data.u64 = EP_CTL_MARKER;
	if (shim_proc.ctl >= 0)
		REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, shim_proc.ctl, &kev);
	geo = shim_seg();
	if (e->by_slot == NULL) {
		e->n_slots = geo->n_workers * geo->slots_per_worker;
		e->by_slot = calloc(e->n_slots, sizeof(*e->by_slot));
		if (e->by_slot == NULL) {
			REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, e->w.efd, NULL);
			shim_waiter_free(&e->w);
			return -ENOMEM;
		}
	}
	/* a forked child's first wait: the registrations it inherited are
	 * watched by the parent's waiter; watch them with ours too */
	e->n_unwatched = 0;
	for (uint32_t i = 0; i < e->n_slots; i++) {
		struct ep_reg *g = e->by_slot[i];

		if (g == NULL || g->s->slot[0] != i)
			continue;
		for (; g != NULL; g = g->sock_next) {
			reg_watch(e, g);
			ready_add(e, g);
		}
	}
	return 0;
}

/* An offloaded registration joins the instance (waiter made on demand). */
static int
reg_offload(struct shim_ep *e, struct ep_reg *g)
{
	int r = ep_waiter(e);

	if (r < 0)
		return r;
	g->in_kernel = 0;
	g->seen_valid = 0;
	slots_link(e, g);
	reg_watch(e, g);
	__atomic_add_fetch(&e->n_off, 1, __ATOMIC_RELAXED);
	ready_add(e, g);
	return 0;
}

/* An offloaded socket with a kernel half (a dual-stack listener or UDP
 * socket on "::"): the kernel set watches its kernel socket too, with the
 * program's event less its write bits (khalf_event), and what the kernel
 * reports goes to the program as it is. in_set: it is there already (it
 * was undecided). Caller holds e->lock. */
static struct epoll_event
khalf_event(const struct epoll_event *ev)
{
	struct epoll_event k = *ev;

	/* what the kernel half can add: something to accept or read (its
	 * room to write is not the socket's: sends go to dpsockd) */
	k.events &= ~(uint32_t)(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	return k;
}

static void
khalf_watch(struct shim_ep *e, struct ep_reg *g, bool in_set)
{
	struct epoll_event kev = khalf_event(&g->ev);

	if (!g->s->khalf || g->also_kernel)
		return;
	if ((in_set ? REAL(epoll_ctl)(e->epfd, EPOLL_CTL_MOD, g->fd, &kev) :
		      REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, g->fd, &kev)) < 0 &&
	    errno != EEXIST) {
		SHIM_LOG(WARNING, "fd %d: its kernel half stays out of the epoll set: %s", g->fd,
			 strerror(errno));
		return;
	}
	g->also_kernel = 1;
	__atomic_add_fetch(&e->n_khalf, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&e->n_kernel, 1, __ATOMIC_RELAXED);
}

static void
undecided_add(struct shim_ep *e, struct ep_reg *g)
{
	g->in_kernel = 1;
	g->undec_next = e->undecided;
	e->undecided = g;
	__atomic_add_fetch(&e->n_undecided, 1, __ATOMIC_RELAXED);
}

static void
undecided_del(struct shim_ep *e, struct ep_reg *g)
{
	for (struct ep_reg **pp = &e->undecided; *pp != NULL; pp = &(*pp)->undec_next)
		if (*pp == g) {
			*pp = g->undec_next;
			__atomic_sub_fetch(&e->n_undecided, 1, __ATOMIC_RELAXED);
			return;
		}
}

/* Take registration g out of the instance and free it (the kernel set is
 * the caller's business). Caller holds e->lock. */
static void
reg_drop(struct shim_ep *e, struct ep_reg *g)
{
	if (g->in_kernel) {
		undecided_del(e, g);
	} else {
		if (e->w.id >= 0 && e->w.pid == shim_getpid())
			shim_sock_unwatch(g->s, e->w.id);
		slots_unlink(e, g);
		ready_del(g);
		__atomic_sub_fetch(&e->n_off, 1, __ATOMIC_RELAXED);
		e->n_unwatched -= g->unwatched;
		if (g->also_kernel) {
			__atomic_sub_fetch(&e->n_khalf, 1, __ATOMIC_RELAXED);
			__atomic_sub_fetch(&e->n_kernel, 1, __ATOMIC_RELAXED);
		}
	}
	shim_fdmap_take(&e->regs, g->fd);
	__atomic_sub_fetch(&g->s->in_epoll, 1, __ATOMIC_RELAXED);
	free(g);
}

/* dpsockd is gone and g's socket was reported (or fell back elsewhere):
 * a socket that is now a kernel socket (gone.c) leaves our registrations
 * for the kernel set, with its events (a fired one-shot stays disabled).
 * Caller holds e->lock; g may be freed. */
static void
ep_to_kernel(struct shim_ep *e, struct ep_reg *g)
{
	struct epoll_event kev = g->ev;

	shim_sock_fall_back(g->fd, g->s);
	if (__atomic_load_n(&g->s->mode, __ATOMIC_ACQUIRE) != SHIM_KERNEL)
		return;   /* a connection: it stays, reported once */
	if (g->disabled)
		kev.events = EPOLLONESHOT;
	if (REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, g->fd, &kev) < 0 && errno != EEXIST)
		SHIM_LOG(WARNING, "fd %d: dpsockd is gone, and its epoll registration could not "
			 "move to the kernel set: %s", g->fd, strerror(errno));
	reg_drop(e, g);
	__atomic_add_fetch(&e->n_kernel, 1, __ATOMIC_RELAXED);
}

/* Undecided sockets that listen/connect/bind decided since: offloaded ones
 * leave the kernel set for ours, kernel ones stay there untracked. Caller
 * holds e->lock. */
static void
ep_adopt(struct shim_ep *e)
{
	struct ep_reg *g = e->undecided, *next;

	for (; g != NULL; g = next) {
		next = g->undec_next;
		if (g->s->mode == SHIM_UNDECIDED)
			continue;
		if (!shim_sock_offloaded(g->s)) {
			reg_drop(e, g);     /* the kernel's: it keeps the registration */
			__atomic_add_fetch(&e->n_kernel, 1, __ATOMIC_RELAXED);
			continue;
		}
		undecided_del(e, g);
		if (reg_offload(e, g) < 0) {
			/* no waiter: stay in the kernel set, try again next time */
			undecided_add(e, g);
			return;
		}
		if (g->s->khalf)
			khalf_watch(e, g, true);
		else
			REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, g->fd, NULL);
	}
}

/* ---- close ----------------------------------------------------------------- */

static void
ep_free(struct shim_ep *e)
{
	for (unsigned int hi = 0; hi < SHIM_FDMAP_PAGE; hi++) {
		void **page = e->regs.page[hi];

		for (unsigned int lo = 0; page != NULL && lo < SHIM_FDMAP_PAGE; lo++)
			if (page[lo] != NULL)
				reg_drop(e, page[lo]);
	}
	shim_fdmap_free(&e->regs);
	if (e->w.id >= 0)
		shim_waiter_free(&e->w);
	free(e->by_slot);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void
shim_epoll_close(int epfd)
{
	struct shim_ep *e;

	pthread_mutex_lock(&eps_lock);
	e = shim_fdmap_take(&eps, epfd);
	if (e != NULL)
		for (struct shim_ep **pp = &ep_list; *pp != NULL; pp = &(*pp)->next)
			if (*pp == e) {
				*pp = e->next;
				break;
			}
	pthread_mutex_unlock(&eps_lock);
	if (e != NULL)
		ep_free(e);
}

void
shim_epoll_fd_closed(int fd, struct shim_sock *s)
{
	/* never registered: nothing to look for */
	if (__atomic_load_n(&s->in_epoll, __ATOMIC_RELAXED) == 0)
		return;
	/* Linux drops a registration when the last descriptor of the open
	 * file goes; other dups keep it */
	if (__atomic_load_n(&s->refs, __ATOMIC_ACQUIRE) > 1)
		return;
	pthread_mutex_lock(&eps_lock);
	for (struct shim_ep *e = ep_list; e != NULL; e = e->next) {
		struct ep_reg *g;

		pthread_mutex_lock(&e->lock);
		g = shim_fdmap_get(&e->regs, fd);
		if (g != NULL && g->s == s)
			reg_drop(e, g);
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_unlock(&eps_lock);
}

/* ---- epoll_create, epoll_ctl --------------------------------------------------- */

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

/* ADD of a shadowed socket. Caller holds e->lock. */
static int
ctl_add(struct shim_ep *e, int fd, struct shim_sock *s, const struct epoll_event *ev)
{
	struct ep_reg *g = shim_fdmap_get(&e->regs, fd);
	int r;

	if (g != NULL && g->s == s)
		return -EEXIST;
	if (g != NULL)  /* a stale entry for a closed-and-reused number */
		reg_drop(e, g);
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return -ENOMEM;
	*g = (struct ep_reg){ .fd = fd, .s = s, .ev = *ev };
	r = shim_fdmap_set(&e->regs, fd, g);
	if (r < 0) {
		free(g);
		return r;
	}
	if (!shim_sock_offloaded(s)) {
		/* undecided: the kernel watches it until it is offloaded */
		if (REAL(epoll_ctl)(e->epfd, EPOLL_CTL_ADD, fd, (struct epoll_event *)ev) < 0) {
			r = -errno;
			shim_fdmap_take(&e->regs, fd);
			free(g);
			return r;
		}
		undecided_add(e, g);
	} else {
		r = reg_offload(e, g);
		if (r < 0) {
			shim_fdmap_take(&e->regs, fd);
			free(g);
			return r;
		}
		khalf_watch(e, g, false);
	}
	__atomic_add_fetch(&s->in_epoll, 1, __ATOMIC_RELAXED);
	return 0;
}

/* epoll_ctl on a shadowed socket. Caller holds e->lock. */
static int
ctl_locked(struct shim_ep *e, int op, int fd, struct shim_sock *s, const struct epoll_event *ev)
{
	struct ep_reg *g;

	if (op == EPOLL_CTL_ADD)
		return ctl_add(e, fd, s, ev);
	g = shim_fdmap_get(&e->regs, fd);
	if (g == NULL || g->s != s)
		return -ENOENT;
	if (op == EPOLL_CTL_DEL) {
		if (g->in_kernel || g->also_kernel)
			REAL(epoll_ctl)(e->epfd, EPOLL_CTL_DEL, fd, NULL);
		reg_drop(e, g);
		return 0;
	}
	if (g->in_kernel || g->also_kernel) {
		struct epoll_event kev = g->also_kernel ? khalf_event(ev) : *ev;

		if (REAL(epoll_ctl)(e->epfd, EPOLL_CTL_MOD, fd, &kev) < 0)
			return -errno;
	}
	g->ev = *ev;
	g->disabled = 0;
	g->seen_valid = 0;
	if (!g->in_kernel)
		ready_add(e, g);
	return 0;
}

HOOK int
epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct shim_ep *e;
	int r;

	if (s == NULL || s->mode == SHIM_KERNEL) {
		/* a kernel descriptor: the kernel set has it; forget one we
		 * tracked while it was undecided, and hand the kernel one we
		 * watched while it was offloaded (dpsockd gone, gone.c) */
		bool tracked = false;

		e = op != EPOLL_CTL_ADD ? ep_find(epfd) : ep_get(epfd);
		if (e != NULL && op != EPOLL_CTL_ADD) {
			struct ep_reg *g;

			pthread_mutex_lock(&e->lock);
			g = shim_fdmap_get(&e->regs, fd);
			if (g != NULL && g->in_kernel && op == EPOLL_CTL_DEL) {
				reg_drop(e, g);
				tracked = true;   /* counted as undecided, not here */
			} else if (g != NULL && !g->in_kernel && g->s == s) {
				ep_to_kernel(e, g);
			}
			pthread_mutex_unlock(&e->lock);
		}
		r = REAL(epoll_ctl)(epfd, op, fd, ev);
		if (r == 0 && e != NULL && op == EPOLL_CTL_ADD)
			__atomic_add_fetch(&e->n_kernel, 1, __ATOMIC_RELAXED);
		else if (r == 0 && e != NULL && op == EPOLL_CTL_DEL && !tracked &&
			 __atomic_load_n(&e->n_kernel, __ATOMIC_RELAXED) > 0)
			__atomic_sub_fetch(&e->n_kernel, 1, __ATOMIC_RELAXED);
		return r;
	}
	/* a shadowed socket: check what Linux checks, with the real epfd */
	if (epfd == fd)
		return shim_fail(EINVAL);
	if (REAL(fcntl)(epfd, F_GETFD) < 0)
		return -1;
	if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		return shim_fail(EINVAL);
	if (op != EPOLL_CTL_DEL && ev == NULL)
		return shim_fail(EFAULT);
	e = ep_get(epfd);
	if (e == NULL)
		return shim_fail(ENOMEM);
	pthread_mutex_lock(&e->lock);
	r = ctl_locked(e, op, fd, s, ev);
	pthread_mutex_unlock(&e->lock);
	return r < 0 ? shim_fail(-r) : 0;
}

/* ---- epoll_wait ----------------------------------------------------------------- */

/* Walk the ready list: offloaded events into evs (at most max); with
 * peek, only say whether there is one (nothing consumed). Caller holds
 * e->lock. */
static int
ep_collect(struct shim_ep *e, struct epoll_event *evs, int max, bool peek)
{
	bool gone = shim_daemon_gone();
	struct ep_reg *last;
	bool more;
	int c = 0;

	if (e->w.id >= 0 && e->w.pid == shim_getpid())
		shim_waiter_drain(&e->w, slot_changed, e);
	if (gone && !e->gone_seen) {
		/* every offloaded socket is dead: each registration is reported
		 * once with ERR|HUP (its calls then fail with the errors of
		 * docs/preload.md), so a level-triggered loop does not spin */
		e->gone_seen = 1;
		slot_changed(UINT32_MAX, e);
	}
	/* One pass over what is on the list now: a level-triggered
	 * registration that is still ready goes back to the tail, behind
	 * `last`, for the next call (a wait costs what it looks at, not the
	 * length of the list: nginx takes 512 events per call from thousands). */
	last = e->ready.rprev;
	more = last != &e->ready;
	for (struct ep_reg *g = e->ready.rnext, *next; more && c < max; g = next) {
		struct shim_edge_sig sig;
		uint32_t want, r;

		next = g->rnext;
		more = g != last;
		if (g->disabled || (gone && g->dead_reported)) {
			ready_del(g);
			continue;
		}
		want = g->ev.events & (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI);
		r = shim_sock_ready_sig(g->s, &sig) & (want | EPOLLERR | EPOLLHUP);
		if (r == 0 && (want & EPOLLOUT) && shim_sock_want_tx(g->s))
			r = shim_sock_ready_sig(g->s, &sig) & (want | EPOLLERR | EPOLLHUP);
		if (!peek)
			shim_poll_count(g->s, r != 0);
		if (r == 0) {
			/* not ready: a worker's notification puts it back */
			ready_del(g);
			continue;
		}
		if ((g->ev.events & EPOLLET) && g->seen_valid &&
		    !((r & (EPOLLIN | EPOLLRDHUP | EPOLLPRI | EPOLLERR | EPOLLHUP)) &&
		      sig.in != g->seen.in) &&
		    !((r & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && sig.out != g->seen.out)) {
			ready_del(g);   /* ready, but nothing new since the last report */
			continue;
		}
		if (peek)
			return 1;
		evs[c].events = r;
		evs[c].data = g->ev.data;
		c++;
		if (gone)
			g->dead_reported = 1;
		ready_del(g);
		if (g->ev.events & EPOLLET) {
			g->seen = sig;
			g->seen_valid = 1;
		}
		if (g->ev.events & EPOLLONESHOT)
			g->disabled = 1;
		else if (!(g->ev.events & EPOLLET) && !gone)
			ready_add(e, g);   /* level-triggered: still ready, to the tail */
		if (gone)
			ep_to_kernel(e, g);   /* reported once: now the kernel's, or reset */
	}
	return c;
}

/* Remove our marker events from a kernel result. The waiter's eventfd is
 * edge-triggered in the set, so every write wakes a waiter once without
 * being read (no read system call per wake-up; the counter would need
 * 2^64 wake-ups to fill). */
static int
ep_strip(struct shim_ep *e, struct epoll_event *evs, int n)
{
	int o = 0;

	for (int i = 0; i < n; i++) {
		if ((evs[i].data.u64 & EP_MARKER_MASK) != EP_MARKER)
			evs[o++] = evs[i];
		else if (evs[i].data.u64 == EP_CTL_MARKER)
			shim_daemon_hung_up();
	}
	(void)e;
	return o;
}

static int
collect_locked(struct shim_ep *e, struct epoll_event *evs, int max, bool peek)
{
	int c;

	pthread_mutex_lock(&e->lock);
	ep_adopt(e);
	c = ep_collect(e, evs, max, peek);
	pthread_mutex_unlock(&e->lock);
	return c;
}

static int
mixed_epoll_wait(struct shim_ep *e, struct epoll_event *evs, int max, int timeout,
		 const sigset_t *mask)
{
	uint64_t start = shim_now_us();
	long budget = shim_spin_budget(shim_env.select_poll_us);
	unsigned int sig0 = shim_sig_count(), pass = 0;

	if (max <= 0)
		return shim_fail(EINVAL);
	for (;; pass++) {
		bool spin, ticks, progk, kret, kspin;
		unsigned int nh, q;
		int c, k, left;

		c = collect_locked(e, evs, max, false);
		left = shim_ms_left(timeout, start);
		spin = left != 0 && (budget < 0 || shim_now_us() - start < (uint64_t)budget);
		/* the kernel's descriptors: with ours (both are returned), when
		 * the call returns now, and every 16th pass of a spin; a call
		 * about to sleep finds them in the sleeping call itself. A set
		 * with no kernel descriptor of the program's is asked only every
		 * 64th time (a count gone wrong through fork costs a delay then,
		 * never a lost event). Kernel halves (a listener on 0.0.0.0 or
		 * "::", for what the kernel's interfaces bring) are asked with
		 * ours every 16th time, as VMA_SELECT_POLL_OS_RATIO asks its OS
		 * descriptors, and in every spin's 16th pass and every sleep:
		 * a server busy with offloaded traffic does not pay a system
		 * call per wait for a health check that comes once a second */
		nh = __atomic_load_n(&e->n_khalf, __ATOMIC_RELAXED);
		progk = __atomic_load_n(&e->n_kernel, __ATOMIC_RELAXED) > nh ||
			__atomic_load_n(&e->n_undecided, __ATOMIC_RELAXED) > 0;
		q = progk ? 0 : __atomic_add_fetch(&e->quick_waits, 1, __ATOMIC_RELAXED);
		kret = progk || (q & (nh > 0 ? 15u : 63u)) == 0;
		kspin = progk || nh > 0 || (q & 63u) == 0;
		if (c < max && ((c > 0 && kret) || left == 0 || (spin && pass % 16 == 0 && kspin))) {
			k = REAL(epoll_wait)(e->epfd, evs + c, max - c, 0);
			if (k < 0)
				return c > 0 ? c : -1;
			c += ep_strip(e, evs + c, k);
		}
		if (c > 0 || left == 0)
			return c;
		if (shim_sig_count() != sig0)
			return shim_fail(EINTR);   /* never restarted (signal(7)) */
		if (spin) {
			shim_cpu_relax();
			continue;
		}
		pthread_mutex_lock(&e->lock);
		ticks = ep_waiter(e) < 0;
		if (!ticks) {
			shim_waiter_arm(&e->w);
			c = ep_collect(e, evs, max, true);
			ticks = e->n_unwatched > 0 || shim_daemon_gone();
		}
		pthread_mutex_unlock(&e->lock);
		if (c > 0) {
			shim_waiter_disarm(&e->w);
			continue;
		}
		/* without a waiter, or with sockets nobody notifies us of, sleep
		 * in 1 ms ticks */
		if (ticks && (left < 0 || left > 1))
			left = 1;
		k = mask != NULL ? REAL(epoll_pwait)(e->epfd, evs, max, left, mask)
				 : REAL(epoll_wait)(e->epfd, evs, max, left);
		if (e->w.id >= 0 && e->w.hdr != NULL)
			shim_waiter_disarm(&e->w);
		if (k < 0)
			return -1;   /* EINTR and friends, as the kernel said */
		k = ep_strip(e, evs, k);
		if (k > 0)
			/* kernel events are consumed (edge-triggered ones would not
			 * come back): return them, plus what of ours fits */
			return k + collect_locked(e, evs + k, max - k, false);
	}
}

/* true when the epoll set holds an offloaded socket (after adopting the
 * registered sockets that were offloaded since they were added) */
static bool
ep_mixed(struct shim_ep *e)
{
	bool m;

	if (e == NULL)
		return false;
	if (__atomic_load_n(&e->n_undecided, __ATOMIC_RELAXED) == 0)
		return __atomic_load_n(&e->n_off, __ATOMIC_RELAXED) > 0;
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
