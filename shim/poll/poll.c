/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poll.c — poll, ppoll, select and pselect over any mix of kernel and
 * offloaded descriptors (docs/preload.md "Readiness and sleeping"). A call
 * that names no offloaded descriptor goes straight to libc. Otherwise:
 * offloaded readiness is computed from the slots, kernel readiness from the
 * real call with a zero time-out; nothing ready -> spin for
 * DPSOCK_SELECT_POLL µs -> arm the thread's waiter, fence, re-check ->
 * sleep in the real poll with the waiter's eventfd and the control socket
 * alongside the kernel descriptors.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/io.h"

#define HOOK DPSOCK_SHIM_EXPORT

/* ---- poll --------------------------------------------------------------- */

static bool
any_offloaded(const struct pollfd *fds, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (fds[i].fd >= 0 && shim_sock_offloaded(shim_sock_get(fds[i].fd)))
			return true;
	return false;
}

/* Offloaded entries' revents; returns how many are ready. Poll counters
 * (dpsock-stat): POLL_COUNT_FIRST, the call's first look, counts a miss
 * for each socket not ready; it and POLL_COUNT_LATER (the looks whose
 * result the call returns) count a hit for each ready one; POLL_COUNT_NONE
 * (the look after arming) counts nothing. */
enum { POLL_COUNT_NONE, POLL_COUNT_FIRST, POLL_COUNT_LATER };

static int
poll_offloaded(struct pollfd *fds, nfds_t n, int count)
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
		if (r != 0 ? count != POLL_COUNT_NONE : count == POLL_COUNT_FIRST)
			shim_poll_count(s, r != 0);
		fds[i].revents = (short)r;
		c += r != 0;
	}
	return c;
}

/* A map entry names the kernel half of an offloaded socket (marked once,
 * when the call sorts its descriptors). */
#define MAP_KHALF ((nfds_t)1 << (sizeof(nfds_t) * 8 - 1))

/* The kernel's answer for entries k (map: their places in fds) joins fds:
 * a kernel descriptor's revents are the kernel's, a kernel half's add to
 * its socket's. Returns how many of them are ready and were not already. */
static int
merge_kernel(struct pollfd *fds, const struct pollfd *k, const nfds_t *map, nfds_t nk)
{
	int c = 0;

	for (nfds_t j = 0; j < nk; j++) {
		struct pollfd *f = &fds[map[j] & ~MAP_KHALF];

		if (map[j] & MAP_KHALF) {
			/* something to accept or read; the kernel half's room
			 * to write is not the socket's (sends go to dpsockd) */
			short kr = k[j].revents & (POLLIN | POLLRDNORM | POLLPRI);

			c += f->revents == 0 && kr != 0;
			f->revents |= kr;
		} else {
			f->revents = k[j].revents;
			c += k[j].revents != 0;
		}
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
	uint64_t start = shim_now_us();
	long budget = shim_spin_budget(shim_env.select_poll_us);
	unsigned int sig0 = shim_sig_count();
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
			return shim_fail(ENOMEM);
		}
	}
	for (nfds_t i = 0; i < n; i++) {
		struct shim_sock *s = fds[i].fd >= 0 ? shim_sock_get(fds[i].fd) : NULL;

		fds[i].revents = 0;
		if (shim_sock_offloaded(s) && !s->khalf)
			continue;
		/* a kernel descriptor; or the kernel half of an offloaded one
		 * (a dual-stack listener), whose events join the slots' */
		k[nk] = fds[i];
		map[nk++] = shim_sock_offloaded(s) ? i | MAP_KHALF : i;
	}
	for (bool first = true;; first = false) {
		int c = poll_offloaded(fds, n, first ? POLL_COUNT_FIRST : POLL_COUNT_LATER), kc = 0, left;
		bool watched = true;

		if (nk > 0) {
			kc = REAL(poll)(k, nk, 0);
			if (kc < 0)
				goto out_err;
			kc = merge_kernel(fds, k, map, nk);
		}
		if (c + kc > 0 || timeout_ms == 0) {
			ret = c + kc;
			break;
		}
		left = shim_ms_left(timeout_ms, start);
		if (left == 0) {
			ret = 0;
			break;
		}
		if (shim_sig_count() != sig0) {
			/* a handler ran while we spun: poll and select are never
			 * restarted (signal(7)) */
			errno = EINTR;
			goto out_err;
		}
		if (budget < 0 || shim_now_us() - start < (uint64_t)budget) {
			shim_cpu_relax();
			continue;
		}
		for (nfds_t i = 0; i < n; i++) {
			struct shim_sock *s = fds[i].fd >= 0 ? shim_sock_get(fds[i].fd) : NULL;

			if (!shim_sock_offloaded(s))
				continue;
			watched = shim_sock_watch(s, t->w.id) && watched;
			/* waiting for room: the worker notifies only when asked */
			if ((fds[i].events & POLLOUT) && !(fds[i].revents & POLLOUT))
				shim_sock_want_tx(s);
		}
		/* offloaded sockets alone: the futex; else the eventfd among
		 * the kernel's descriptors */
		if (nk == 0 && mask == NULL)
			shim_waiter_arm_futex(&t->w);
		else
			shim_waiter_arm(&t->w);
		c = poll_offloaded(fds, n, POLL_COUNT_NONE);
		if (c == 0 && !shim_daemon_gone()) {
			int tmo = left;

			if (!watched && (tmo < 0 || tmo > 1))
				tmo = 1;
			kc = shim_sleep(&t->w, k, nk, tmo, mask);
		}
		shim_waiter_disarm(&t->w);
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
	ms = shim_ts_to_ms(tmo);
	if (ms == -2)
		return shim_fail(EINVAL);
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
		return shim_fail(ENOMEM);
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
		return shim_fail(e);
	}
	for (int i = 0; i < n; i++)
		if (p[i].revents & POLLNVAL) {
			free(p);
			return shim_fail(EBADF);
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
		return shim_fail(EINVAL);
	ms = tmo == NULL ? -1 : (int)(tmo->tv_sec * 1000 + (tmo->tv_usec + 999) / 1000);
	start = shim_now_us();
	r = mixed_select(nfds, rd, wr, ex, ms, NULL);
	if (tmo != NULL) {
		/* Linux writes back the time not slept */
		uint64_t el = shim_now_us() - start;
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
	ms = shim_ts_to_ms(tmo);
	if (ms == -2)
		return shim_fail(EINVAL);
	return mixed_select(nfds, rd, wr, ex, ms, mask);
}

