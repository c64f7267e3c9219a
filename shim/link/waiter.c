/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waiter.c — how a program's thread (or epoll instance) waits for dpsockd's
 * workers: a waiter (its header and wait rings in the segment, an eventfd),
 * arming it for an eventfd or a futex wake-up, draining what the workers
 * queued, the spin budget before sleeping, and the sleep itself (poll over
 * the program's own descriptors, the eventfd and the control socket, or a
 * futex wait). docs/preload.md "Readiness".
 */
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>

#include "link/link_priv.h"

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
	r = shim_ctl_simple(DPSOCK_PL_WAITER_ADD, 0, 0, w->efd, &id);
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
		shim_ctl_simple(DPSOCK_PL_WAITER_DEL, (uint32_t)w->id, 0, -1, NULL);
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
		if (shim_futex(&w->hdr->futex, FUTEX_WAIT, w->futex_seen, &ts) < 0 && errno == EINTR)
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
	p[nfds + 1] = (struct pollfd){ shim_proc.ctl_hup ? -1 : shim_proc.ctl, 0, 0 };
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
			shim_daemon_hung_up();
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
