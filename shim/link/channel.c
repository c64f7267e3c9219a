/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * channel.c — a program thread's channel to the workers: made at its first
 * offloaded call (a waiter and one command ring + reply ring per worker),
 * drained and given back at the thread's or the process's end; posting a
 * command (waking a sleeping worker) and a call that waits for its reply.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link/link_priv.h"

static __thread struct shim_thread *tls_thread;
static pthread_key_t thread_key;
static pthread_once_t thread_key_once = PTHREAD_ONCE_INIT;

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

static void
thread_exit(void *arg)
{
	struct shim_thread *t = arg;

	if (t->pid == shim_getpid()) {
		thread_drain(t);
		if (t->channel >= 0)
			shim_ctl_simple(DPSOCK_PL_CHANNEL_DEL, (uint32_t)t->channel, 0, -1, NULL);
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
		r = shim_ctl_simple(DPSOCK_PL_CHANNEL_ADD, 0, (uint32_t)t->w.id, -1, &id);
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
