/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comp.c — completion polling (include/dpsock/extra.h, comp_*): one call
 * returns what happened on every socket of the calling thread's set, the
 * received data included (zero-copy, zcopy.c), without a system call.
 *
 * A set belongs to one thread and has a waiter of its own: every member
 * socket's slots carry the waiter in a watch entry, so a worker that
 * changes one of them puts its number in the waiter's wait ring (the
 * readiness machinery of docs/preload.md). A poll drains the rings into a
 * pending list and walks only that list: a member leaves it when a look
 * finds nothing more on it, and the worker's next change puts it back.
 * Members whose slots had no free watch entry stay pending for good.
 *
 * Blocking is the program's: comp_poll(DPSOCK_COMP_ARM) with nothing ready
 * arms the waiter (armed = 1, fence, a last look), and the program sleeps
 * in its own poll/epoll on comp_fds (the eventfd and the control socket).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "extra/extra.h"
#include "io/io.h"

int shim_xrx_take(struct shim_sock *s, struct dpsock_zpkt *pkts, unsigned int max);
/* A socket became offloaded: it joins the calling thread's set, if it has
 * one (shim_sock_offloaded_hook, set by the first set made). */
void shim_comp_sock_offloaded(struct shim_sock *s);

struct comp_member {
	int fd;
	struct shim_sock *s;
	uint64_t user;
	uint8_t pending;
	uint8_t unwatched;        /* some slot had no free watch entry */
	uint8_t was_connecting;   /* report EPOLLOUT / ERR when the connect ends */
	uint8_t eof_reported;
	uint8_t err_reported;
	uint8_t gone_reported;
	struct comp_member *pnext, *pprev;
};

struct shim_comp {
	pthread_mutex_t lock;     /* the owner thread, and close() from others */
	pid_t pid;
	struct shim_waiter w;
	int armed;
	struct shim_fdmap members; /* fd -> member */
	struct comp_member **by_slot;
	uint32_t n_slots;
	struct comp_member pend;  /* sentinel of the pending list */
	struct shim_comp *next;   /* every set of the process */
};

static __thread struct shim_comp *tls_comp;
/* this thread holds its set's lock (a poll accepting connections: they
 * join the set there, not through shim_comp_sock_offloaded) */
static __thread int tls_in_poll;
static struct shim_comp *comp_list;
static pthread_mutex_t comp_list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t comp_key;
static pthread_once_t comp_key_once = PTHREAD_ONCE_INIT;

static void
pend_add(struct shim_comp *c, struct comp_member *m)
{
	if (m->pending)
		return;
	m->pending = 1;
	m->pnext = &c->pend;
	m->pprev = c->pend.pprev;
	c->pend.pprev->pnext = m;
	c->pend.pprev = m;
}

static void
pend_del(struct comp_member *m)
{
	if (!m->pending)
		return;
	m->pending = 0;
	m->pprev->pnext = m->pnext;
	m->pnext->pprev = m->pprev;
}

/* Take m out of the set (caller holds c->lock). */
static void
member_free(struct shim_comp *c, struct comp_member *m)
{
	pend_del(m);
	for (uint32_t i = 0; i < m->s->nslots; i++)
		if (m->s->slot[i] < c->n_slots && c->by_slot[m->s->slot[i]] == m)
			c->by_slot[m->s->slot[i]] = NULL;
	if (c->w.id >= 0)
		shim_sock_unwatch(m->s, c->w.id);
	shim_fdmap_take(&c->members, m->fd);
	free(m);
}

static void
comp_destroy(void *arg)
{
	struct shim_comp *c = arg, **pp;

	pthread_mutex_lock(&comp_list_lock);
	for (pp = &comp_list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&comp_list_lock);
	pthread_mutex_lock(&c->lock);
	while (c->pend.pnext != &c->pend)
		pend_del(c->pend.pnext);
	if (c->pid == shim_getpid()) {
		for (uint32_t n = 0; n < c->n_slots; n++) {
			struct comp_member *m = c->by_slot[n];

			if (m != NULL)
				member_free(c, m);
		}
		shim_waiter_free(&c->w);
	}
	shim_fdmap_free(&c->members);
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_destroy(&c->lock);
	free(c->by_slot);
	free(c);
}

static void
comp_key_make(void)
{
	pthread_key_create(&comp_key, comp_destroy);
}

/* The calling thread's set, made on first use. NULL: -errno in *err. */
static struct shim_comp *
comp_self(int *err)
{
	struct shim_comp *c = tls_comp;
	const struct dpsock_pl_seg *g;
	int r;

	if (__builtin_expect(c != NULL && c->pid == shim_getpid(), 1))
		return c;
	if (c != NULL) {
		/* a forked child: the parent's set is not ours */
		tls_comp = NULL;
		c = NULL;
	}
	r = shim_attach();
	if (r < 0) {
		*err = r;
		return NULL;
	}
	pthread_once(&comp_key_once, comp_key_make);
	g = shim_seg();
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	c->n_slots = g->n_workers * g->slots_per_worker;
	c->by_slot = calloc(c->n_slots, sizeof(*c->by_slot));
	c->pend.pnext = c->pend.pprev = &c->pend;
	c->pid = shim_getpid();
	pthread_mutex_init(&c->lock, NULL);
	r = c->by_slot == NULL ? -ENOMEM : shim_waiter_new(&c->w);
	if (r < 0) {
		free(c->by_slot);
		free(c);
		*err = r == -ENOSPC ? -EMFILE : r;
		return NULL;
	}
	pthread_mutex_lock(&comp_list_lock);
	c->next = comp_list;
	comp_list = c;
	pthread_mutex_unlock(&comp_list_lock);
	tls_comp = c;
	pthread_setspecific(comp_key, c);
	/* release: pairs with the acquire in offload.c's shim_sock_set_offloaded */
	__atomic_store_n(&shim_sock_offloaded_hook, shim_comp_sock_offloaded, __ATOMIC_RELEASE);
	return c;
}

/* Add or update (caller holds c->lock). */
static int
member_add(struct shim_comp *c, int fd, struct shim_sock *s, uint64_t user)
{
	struct comp_member *m = shim_fdmap_get(&c->members, fd);
	int r;

	if (m != NULL && m->s == s) {
		m->user = user;
		return 0;
	}
	if (m != NULL)
		member_free(c, m);   /* fd was reused for another socket */
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->fd = fd;
	m->s = s;
	m->user = user;
	r = shim_fdmap_set(&c->members, fd, m);
	if (r < 0) {
		free(m);
		return r;
	}
	for (uint32_t i = 0; i < s->nslots; i++)
		if (s->slot[i] < c->n_slots)
			c->by_slot[s->slot[i]] = m;
	m->unwatched = !shim_sock_watch(s, c->w.id);
	m->was_connecting = s->mode == SHIM_TCP_CONN &&
			    __atomic_load_n(&shim_sock_slot(s, 0)->state, __ATOMIC_ACQUIRE) ==
				    DPSOCK_PL_ST_CONNECTING;
	pend_add(c, m);   /* whatever is there already is news */
	return 0;
}

void
shim_comp_sock_offloaded(struct shim_sock *s)
{
	struct shim_comp *c = tls_comp;

	if (__builtin_expect(c == NULL, 1) || tls_in_poll || c->pid != shim_getpid() || s->fd0 < 0)
		return;
	pthread_mutex_lock(&c->lock);
	if (member_add(c, s->fd0, s, (uint64_t)s->fd0) < 0)
		SHIM_LOG(WARNING, "fd %d: cannot join the thread's completion set", s->fd0);
	pthread_mutex_unlock(&c->lock);
}

void
shim_comp_fd_closed(int fd, struct shim_sock *s)
{
	if (__atomic_load_n(&comp_list, __ATOMIC_ACQUIRE) == NULL)
		return;
	pthread_mutex_lock(&comp_list_lock);
	for (struct shim_comp *c = comp_list; c != NULL; c = c->next) {
		struct comp_member *m;

		if (c->pid != shim_getpid())
			continue;
		pthread_mutex_lock(&c->lock);
		m = shim_fdmap_get(&c->members, fd);
		if (m != NULL && m->s == s)
			member_free(c, m);
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&comp_list_lock);
}

/* ---- the poll ------------------------------------------------------------------- */

static void
drained(uint32_t sn, void *arg)
{
	struct shim_comp *c = arg;

	if (sn == UINT32_MAX) {   /* a wait ring overflowed: look at everyone */
		for (uint32_t n = 0; n < c->n_slots; n++)
			if (c->by_slot[n] != NULL)
				pend_add(c, c->by_slot[n]);
	} else if (sn < c->n_slots && c->by_slot[sn] != NULL) {
		pend_add(c, c->by_slot[sn]);
	}
}

static struct dpsock_comp *
comp_event(struct dpsock_comp *out, const struct comp_member *m, uint32_t events)
{
	memset(out, 0, sizeof(*out));
	out->user_data = m->user;
	out->fd = m->fd;
	out->events = events;
	out->new_fd = -1;
	return out;
}

/*
 * What member m has for the program, at most max completions. Returns how
 * many were filled and sets *more when m may have more than that (it stays
 * pending). Caller holds c->lock.
 */
static unsigned int
member_poll(struct shim_comp *c, struct comp_member *m, struct dpsock_comp *out, unsigned int max,
	    bool *more)
{
	struct shim_sock *s = m->s;
	struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
	struct dpsock_zpkt pk[32];
	unsigned int n = 0;
	int r = 0;

	*more = false;
	if (shim_daemon_gone()) {
		if (!m->gone_reported) {
			m->gone_reported = 1;
			comp_event(&out[n++], m, EPOLLHUP | EPOLLERR);
		}
		return n;
	}
	if (s->mode == SHIM_TCP_LISTEN) {
		while (n < max) {
			int nfd = shim_tcp_accept(m->fd, s, NULL, NULL,
						  SOCK_NONBLOCK | SOCK_CLOEXEC | SHIM_ACCEPT_NOWAIT);
			struct shim_sock *ns;

			if (nfd < 0)
				return n;
			ns = shim_sock_get(nfd);
			if (ns != NULL && member_add(c, nfd, ns, (uint64_t)nfd) < 0)
				SHIM_LOG(WARNING, "fd %d: cannot join the thread's completion set", nfd);
			comp_event(&out[n], m, DPSOCK_COMP_ACCEPTED)->new_fd = nfd;
			n++;
		}
		*more = true;
		return n;
	}
	if (s->mode == SHIM_TCP_CONN) {
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (st == DPSOCK_PL_ST_CONNECTING)
			return 0;
		if (m->was_connecting) {
			m->was_connecting = 0;
			if (st == DPSOCK_PL_ST_ESTABLISHED ||
			    (st == DPSOCK_PL_ST_CLOSED && sl->err == 0)) {
				comp_event(&out[n++], m, EPOLLOUT);
			} else {
				m->err_reported = 1;
				comp_event(&out[n++], m, EPOLLERR | EPOLLHUP);
				return n;
			}
		}
	}
	while (n < max) {
		unsigned int want = max - n < 32 ? max - n : 32, k;

		r = shim_xrx_take(s, pk, want);
		if (r <= 0)
			break;
		for (k = 0; k < (unsigned int)r; k++) {
			comp_event(&out[n], m, EPOLLIN | DPSOCK_COMP_PACKET)->pkt = pk[k];
			n++;
		}
	}
	if (r == -ENOMEM) {
		/* TCP: too many chunks held; stay pending until some are freed
		 * (freeing notifies nobody) */
		*more = true;
		return n;
	}
	if (n == max) {
		*more = true;
		return n;
	}
	if (s->mode == SHIM_TCP_CONN && n < max) {
		uint32_t fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (shim_rx_level(s, 0) > 0) {
			*more = true;   /* arrived since: the next poll takes it */
		} else if (st == DPSOCK_PL_ST_CLOSED && sl->err != 0 && !m->err_reported) {
			m->err_reported = 1;
			comp_event(&out[n++], m, EPOLLERR | EPOLLHUP);
		} else if ((fl & DPSOCK_PL_F_RD_EOF) && !m->eof_reported) {
			m->eof_reported = 1;
			comp_event(&out[n++], m, EPOLLIN | EPOLLRDHUP);
		}
	}
	return n;
}

/* Walk the pending list once. */
static unsigned int
comp_collect(struct shim_comp *c, struct dpsock_comp *out, unsigned int max)
{
	struct comp_member *m, *next, *last = c->pend.pprev;
	unsigned int n = 0;

	shim_waiter_drain(&c->w, drained, c);
	for (m = c->pend.pnext; m != &c->pend && n < max; m = next) {
		bool more, stop = m == last;

		next = m->pnext;
		n += member_poll(c, m, out + n, max - n, &more);
		if (!more && !m->unwatched) {
			pend_del(m);
		} else if (more) {
			/* fairness: the next poll starts after it */
			pend_del(m);
			pend_add(c, m);
		}
		if (stop)
			break;
	}
	return n;
}

int
shim_x_comp_poll(struct dpsock_comp *out, unsigned int max, unsigned int flags)
{
	struct shim_comp *c;
	unsigned int n;
	int err = 0;

	if (out == NULL || max == 0 || (flags & ~DPSOCK_COMP_ARM))
		return -EINVAL;
	c = comp_self(&err);
	if (c == NULL)
		return err;
	pthread_mutex_lock(&c->lock);
	tls_in_poll = 1;
	if (c->armed) {
		uint64_t v;

		shim_waiter_disarm(&c->w);
		c->armed = 0;
		if (REAL(read)(c->w.efd, &v, sizeof(v)) < 0) {
			/* EAGAIN: not written; nothing lost */
		}
	}
	n = comp_collect(c, out, max);
	if (n == 0 && (flags & DPSOCK_COMP_ARM)) {
		/* armed, fenced: a change after this either shows in the last
		 * look below or makes the worker write the eventfd */
		shim_waiter_arm(&c->w);
		c->armed = 1;
		n = comp_collect(c, out, max);
		if (n > 0 || shim_daemon_gone()) {
			shim_waiter_disarm(&c->w);
			c->armed = 0;
		}
	}
	tls_in_poll = 0;
	pthread_mutex_unlock(&c->lock);
	return (int)n;
}

int
shim_x_comp_add(int fd, uint64_t user_data)
{
	struct shim_sock *s = fd >= 0 ? shim_sock_get(fd) : NULL;
	struct shim_comp *c;
	int err = 0, r;

	if (s == NULL)
		return -EBADF;
	if (!shim_sock_offloaded(s))
		return -EOPNOTSUPP;
	c = comp_self(&err);
	if (c == NULL)
		return err;
	pthread_mutex_lock(&c->lock);
	r = member_add(c, fd, s, user_data);
	pthread_mutex_unlock(&c->lock);
	return r;
}

int
shim_x_comp_del(int fd)
{
	struct shim_comp *c = tls_comp;
	struct comp_member *m;

	if (fd < 0 || shim_sock_get(fd) == NULL)
		return -EBADF;
	if (c == NULL || c->pid != shim_getpid())
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	m = shim_fdmap_get(&c->members, fd);
	if (m != NULL)
		member_free(c, m);
	pthread_mutex_unlock(&c->lock);
	return m != NULL ? 0 : -ENOENT;
}

int
shim_x_comp_fds(int *fds, unsigned int max)
{
	struct shim_comp *c;
	int err = 0;

	if (fds == NULL || max < 2)
		return -EINVAL;
	c = comp_self(&err);
	if (c == NULL)
		return err;
	fds[0] = c->w.efd;
	fds[1] = shim_proc.ctl;
	return 2;
}
