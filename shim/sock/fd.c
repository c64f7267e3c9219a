/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fd.c — the shadow fd table and the shadow objects' lifetime: every
 * AF_INET TCP/UDP socket() is a real kernel socket (docs/design.md, "Real
 * kernel fds"); its shadow object is found by fd (two-level table, lock-free
 * lookups), shared by dup()s (refs), and lets go of its slots when the last
 * process of the group holding it closes it (process references in the
 * slot's shim area). The last reference itself goes in calls.c
 * (shim_sock_unref), which knows everything that holds on to a socket.
 */
#include <stdlib.h>
#include <sys/stat.h>

#include "sock/sock.h"


/* ---- descriptor maps: two levels, 1024 x 1024 entries, filled on demand ---- */

void *
shim_fdmap_get(struct shim_fdmap *m, int fd)
{
	void **page;

	if ((unsigned int)fd >= SHIM_FDMAP_PAGE * SHIM_FDMAP_PAGE)
		return NULL;
	/* acquire: pairs with the release stores in shim_fdmap_set (page, entry) */
	page = __atomic_load_n(&m->page[(unsigned int)fd / SHIM_FDMAP_PAGE], __ATOMIC_ACQUIRE);
	if (page == NULL)
		return NULL;
	return __atomic_load_n(&page[(unsigned int)fd % SHIM_FDMAP_PAGE], __ATOMIC_ACQUIRE);
}

int
shim_fdmap_set(struct shim_fdmap *m, int fd, void *v)
{
	unsigned int hi = (unsigned int)fd / SHIM_FDMAP_PAGE;
	void **page;

	if ((unsigned int)fd >= SHIM_FDMAP_PAGE * SHIM_FDMAP_PAGE)
		return -EMFILE;
	page = __atomic_load_n(&m->page[hi], __ATOMIC_ACQUIRE);
	if (page == NULL) {
		void **fresh = calloc(SHIM_FDMAP_PAGE, sizeof(*fresh)), **none = NULL;

		if (fresh == NULL)
			return -ENOMEM;
		/* release: the zeroed page before its address (shim_fdmap_get);
		 * a thread that lost the race frees its own */
		if (__atomic_compare_exchange_n(&m->page[hi], &none, fresh, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			page = fresh;
		else {
			free(fresh);
			page = none;
		}
	}
	/* release: the value's fields before its address (shim_fdmap_get) */
	__atomic_store_n(&page[(unsigned int)fd % SHIM_FDMAP_PAGE], v, __ATOMIC_RELEASE);
	return 0;
}

void *
shim_fdmap_take(struct shim_fdmap *m, int fd)
{
	void **page;

	if ((unsigned int)fd >= SHIM_FDMAP_PAGE * SHIM_FDMAP_PAGE)
		return NULL;
	page = __atomic_load_n(&m->page[(unsigned int)fd / SHIM_FDMAP_PAGE], __ATOMIC_ACQUIRE);
	if (page == NULL)
		return NULL;
	return __atomic_exchange_n(&page[(unsigned int)fd % SHIM_FDMAP_PAGE], NULL,
				   __ATOMIC_ACQ_REL);
}

void
shim_fdmap_free(struct shim_fdmap *m)
{
	for (unsigned int i = 0; i < SHIM_FDMAP_PAGE; i++) {
		free(m->page[i]);
		m->page[i] = NULL;
	}
}

/* ---- the shadow objects by fd --------------------------------------------------- */

static struct shim_fdmap fdtab;

struct shim_sock *
shim_sock_get(int fd)
{
	struct shim_sock *s = shim_fdmap_get(&fdtab, fd);

	/* dpsockd is gone and the socket said so once: from this call on it
	 * is a kernel socket, or a reset connection (gone.c) */
	if (__builtin_expect(s != NULL && __atomic_load_n(&s->gone, __ATOMIC_RELAXED) ==
						 SHIM_GONE_SEEN, 0))
		shim_sock_fall_back(fd, s);
	return s;
}

int
shim_fdtab_set(int fd, struct shim_sock *s)
{
	return shim_fdmap_set(&fdtab, fd, s);
}

struct shim_sock *
shim_fdtab_take(int fd)
{
	return shim_fdmap_take(&fdtab, fd);
}

void
shim_fd_release_all(bool (*release)(int fd))
{
	for (unsigned int hi = 0; hi < SHIM_FDMAP_PAGE; hi++) {
		void **page = __atomic_load_n(&fdtab.page[hi], __ATOMIC_ACQUIRE);

		for (unsigned int lo = 0; page != NULL && lo < SHIM_FDMAP_PAGE; lo++)
			if (__atomic_load_n(&page[lo], __ATOMIC_ACQUIRE) != NULL)
				release((int)(hi * SHIM_FDMAP_PAGE + lo));
	}
}

struct shim_sock *
shim_sock_new(int type, int nonblock)
{
	struct shim_sock *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->refs = 1;
	pthread_mutex_init(&s->lock, NULL);
	s->type = type;
	s->family = AF_INET;
	s->nonblock = nonblock;
	s->backlog = 128;
	s->rcvtimeo_ms = -1;
	s->sndtimeo_ms = -1;
	s->fd0 = -1;
	s->ttl = s->mc_ttl = s->mc_loop = s->mc_all = SHIM_UNSET;
	s->mc_if = SHIM_UNSET;
	s->mc6_hops = s->mc6_loop = s->mc6_all = s->mc6_if = SHIM_UNSET;
	s->rcvbuf_eff = s->sndbuf_eff = SHIM_UNSET;
	return s;
}


/* ---- process references (fork) ------------------------------------------- */

bool
shim_area_pid_add(struct shim_slot_area *a, uint32_t pid)
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
bool
shim_area_pid_swap(struct shim_slot_area *a, uint32_t from, uint32_t to)
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
		shim_area_pid_swap(a, p, 0);
	}
	return false;
}

/* Tell the worker(s) this process group let go of the socket. */
void
shim_sock_release_slots(struct shim_sock *s)
{
	struct shim_slot_area *a;
	struct shim_thread *t;
	int abortive = s->linger.l_onoff && s->linger.l_linger == 0;
	uint32_t zero = 0;
	int saved = errno;

	if (!shim_sock_offloaded(s) || s->nslots == 0)
		return;
	a = shim_area(shim_sock_slot(s, 0));
	shim_area_pid_swap(a, (uint32_t)shim_getpid(), 0);
	if (area_held_elsewhere(a) ||
	    !__atomic_compare_exchange_n(&a->closed, &zero, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED)) {
		errno = saved;
		return;       /* another process of the group still holds it */
	}
	/* Linux resets a connection closed with received data its program never
	 * read (RFC 2525 2.17); the worker cannot tell what was read, the rx
	 * FIFO's level can */
	if (s->mode == SHIM_TCP_CONN &&
	    shim_fifo_level(shim_slot_rx(s->slot[0]), shim_seg()->rx_fifo_size) > 0)
		abortive = 1;
	t = shim_thread_get();
	if (t != NULL) {      /* else dpsockd is unreachable: the group's end frees it */
		for (uint32_t i = 0; i < s->nslots; i++) {
			struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_CLOSE, .slot = s->slot[i],
						   .gen = s->gen[i] };

			c.arg[0] = abortive;
			shim_cmd_post(t, shim_slot_worker(s->slot[i]), &c);
		}
	}
	errno = saved;
}

/* The kernel socket's inode (0: unknown; such a socket is not inherited
 * through exec). */
uint64_t
shim_fd_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? (uint64_t)st.st_ino : 0;
}

/* Whether exec can pass on anything: an offloaded descriptor without
 * FD_CLOEXEC (exec.c). */
bool
shim_sock_inheritable(void)
{
	for (unsigned int hi = 0; hi < SHIM_FDMAP_PAGE; hi++) {
		/* acquire: pairs with the release stores in shim_fdmap_set */
		void **page = __atomic_load_n(&fdtab.page[hi], __ATOMIC_ACQUIRE);

		if (page == NULL)
			continue;
		for (unsigned int lo = 0; lo < SHIM_FDMAP_PAGE; lo++) {
			struct shim_sock *s = __atomic_load_n(&page[lo], __ATOMIC_ACQUIRE);
			int fl;

			if (!shim_sock_offloaded(s) || s->ino == 0)
				continue;
			fl = REAL(fcntl)((int)(hi * SHIM_FDMAP_PAGE + lo), F_GETFD);
			if (fl >= 0 && !(fl & FD_CLOEXEC))
				return true;
		}
	}
	return false;
}
