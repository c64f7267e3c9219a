/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wake.c — which worker runs on this thread (dpsock_self), and waking a
 * worker from any thread: a write to its eventfd, only while it sleeps.
 * The sleeping side, and the fence this one pairs with, are in
 * dpsock_worker_idle (worker.c).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "stack_priv.h"
#include "log_priv.h"

_Thread_local struct dpsock_worker *dpsock_self;

void
dpsock_worker_wake(struct dpsock_worker *w)
{
	static const uint64_t one = 1;

	/* seq_cst: pairs with the fence in dpsock_worker_idle (worker.c). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&w->sleeping, __ATOMIC_RELAXED))
		return;
	if (write(w->efd, &one, sizeof(one)) < 0) {
		if (errno != EAGAIN)
			DPSOCK_LOG(ERR, worker, "worker %u: eventfd write: %s", w->idx,
				   strerror(errno));
	} else if (dpsock_self != NULL) {
		/* counted by the waker, the only writer of its own block */
		dpsock_stat_add(&dpsock_self->stats->wakeups_sent, 1);
	}
}
