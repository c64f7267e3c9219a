/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ready.c — readiness of offloaded sockets and the single-socket wait of
 * blocking calls: what a socket is ready for (and its edge signature), the
 * watch entries that make a worker notify a waiter, and the spin-then-sleep
 * wait with its no-lost-wake-up handshake (docs/preload.md "Readiness and
 * sleeping").
 */
#include "io/io_priv.h"


/* ---- readiness ------------------------------------------------------------- */

/*
 * Readiness, and (when sig != NULL) the socket's edge signature taken from
 * the same loads: sig->in moves when something arrives (rx FIFO producer
 * positions, state, flags), sig->out when room is made (tx FIFO consumer
 * positions, state, flags). Edge-triggered epoll reports a ready socket
 * only when the signature of the side it is ready on moved since its last
 * report: what it saw as ready and what it remembers are then one
 * observation, whatever order the worker's notification arrives in.
 */
uint32_t
shim_sock_ready_sig(struct shim_sock *s, struct shim_edge_sig *sig)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint64_t in = 0, out = 0, st = 0;
	uint32_t ev = 0, p, c;

	if (shim_daemon_gone()) {
		/* dpsockd's end, reported as ready with ERR|HUP once: the next
		 * lookup hands the socket to the kernel (gone.c) */
		shim_sock_gone_seen(s);
		if (sig != NULL)
			*sig = (struct shim_edge_sig){ .in = UINT64_MAX, .out = UINT64_MAX };
		return POLLIN | POLLOUT | POLLERR | POLLHUP;
	}
	switch (s->mode) {
	case SHIM_TCP_LISTEN:
		for (uint32_t i = 0; i < s->nslots; i++) {
			if (shim_fifo_level_at(shim_slot_rx(s->slot[i]), g->rx_fifo_size, &p, &c) >=
			    sizeof(struct dpsock_pl_accept))
				ev |= POLLIN;
			in += p;
		}
		if (s->shut_rd)
			ev |= POLLIN | POLLHUP;
		st = (uint64_t)s->shut_rd;
		break;
	case SHIM_TCP_CONN: {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
		/* acquire: pairs with the worker's release of state/flags after
		 * it filled the FIFO (data first, then EOF). */
		uint32_t st_ = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		uint32_t fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		uint32_t rxn = shim_fifo_level_at(shim_slot_rx(s->slot[0]), g->rx_fifo_size, &p, &c);

		if (__builtin_expect(s->xrx != NULL, 0))
			rxn = shim_rx_level(s, 0);   /* zero-copy chunks held: not news */

		in = p;
		st = (uint64_t)st_ | (uint64_t)fl << 8 | (uint64_t)(s->shut_rd | s->shut_wr << 1) << 16;
		if (st_ == DPSOCK_PL_ST_CONNECTING)
			break;
		if (rxn > 0 || (fl & DPSOCK_PL_F_RD_EOF) || s->shut_rd)
			ev |= POLLIN;
		if (fl & DPSOCK_PL_F_RD_EOF)
			ev |= POLLRDHUP;
		if (st_ == DPSOCK_PL_ST_CLOSED) {
			ev |= POLLIN | POLLOUT | POLLHUP | POLLRDHUP;
			if (__atomic_load_n(&sl->err, __ATOMIC_RELAXED) != 0 && !s->err_taken)
				ev |= POLLERR;
			break;
		}
		if ((fl & DPSOCK_PL_F_WR_SHUT) || s->shut_wr) {
			ev |= POLLOUT;   /* a send would not block (it fails) */
			if (fl & DPSOCK_PL_F_RD_EOF)
				ev |= POLLHUP;
		} else if (g->tx_fifo_size - shim_fifo_level_at(shim_slot_tx(s->slot[0]),
							   g->tx_fifo_size, &p, &c) > 0) {
			ev |= POLLOUT;
			out = c;
		} else {
			out = c;
		}
		break;
	}
	case SHIM_UDP: {
		uint32_t k = __atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots;

		for (uint32_t i = 0; i < s->nslots; i++) {
			if (shim_fifo_level_at(shim_slot_rx(s->slot[i]), g->rx_fifo_size, &p, &c) > 0 &&
			    (__builtin_expect(s->xrx == NULL, 1) || shim_xrx_udp_readable(s, i)))
				ev |= POLLIN;
			in += p;
		}
		if (g->tx_fifo_size - shim_fifo_level_at(shim_slot_tx(s->slot[k]), g->tx_fifo_size,
						    &p, &c) >=
		    sizeof(struct dpsock_pl_dgram) + 512)
			ev |= POLLOUT;
		out = c + ((uint64_t)k << 32);
		break;
	}
	default:
		break;
	}
	if (sig != NULL) {
		/* state in the high half: a transition counts as news on both
		 * sides (connect done, EOF, reset) */
		sig->in = in + (st << 40);
		sig->out = out + (st << 40);
	}
	return ev;
}

uint32_t
shim_sock_ready(struct shim_sock *s)
{
	return shim_sock_ready_sig(s, NULL);
}

bool
shim_sock_watch(struct shim_sock *s, int waiter_id)
{
	uint32_t me = (uint32_t)waiter_id + 1;
	bool all = true;

	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, i);
		bool have = false;

		for (int j = 0; j < DPSOCK_PL_WATCH && !have; j++)
			if (__atomic_load_n(&sl->watch[j], __ATOMIC_RELAXED) == me) {
				/* ours already (maybe left by a dead process whose
				 * waiter id was given to us): a stale queued flag would
				 * stop the worker from ever queueing the slot again; a
				 * duplicate in the wait ring is harmless */
				__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
				have = true;
			}
		for (int j = 0; j < DPSOCK_PL_WATCH && !have; j++) {
			uint32_t zero = 0;

			__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
			/* seq_cst CAS: ordered before the caller's own arm fence; the
			 * worker reads watch[] after its publish fence, so either it
			 * sees us or our re-check sees its change. */
			if (__atomic_compare_exchange_n(&sl->watch[j], &zero, me, false,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				have = true;
		}
		/* all taken: take back an entry whose waiter's process died
		 * without letting go (exit, kill, an nginx worker replaced) */
		for (int j = 0; j < DPSOCK_PL_WATCH && !have; j++) {
			uint32_t old = __atomic_load_n(&sl->watch[j], __ATOMIC_RELAXED);

			if (old == 0 || !shim_waiter_dead(old - 1))
				continue;
			__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
			/* seq_cst: as the CAS above */
			if (__atomic_compare_exchange_n(&sl->watch[j], &old, me, false,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				have = true;
		}
		all = all && have;
	}
	return all;
}

void
shim_sock_unwatch(struct shim_sock *s, int waiter_id)
{
	uint32_t me = (uint32_t)waiter_id + 1;

	if (!shim_sock_offloaded(s))
		return;
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, i);

		for (int j = 0; j < DPSOCK_PL_WATCH; j++) {
			uint32_t v = me;

			if (__atomic_compare_exchange_n(&sl->watch[j], &v, 0, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
		}
	}
}

int
shim_wait_sock(struct shim_sock *s, uint32_t want, int timeout_ms)
{
	return shim_wait_sock_k(s, -1, want, timeout_ms);
}

int
shim_wait_sock_k(struct shim_sock *s, int kfd, uint32_t want, int timeout_ms)
{
	struct shim_thread *t = shim_thread_get();
	uint64_t start = shim_now_us();
	/* with a kernel half, no spin: each look at it is a system call */
	long budget = kfd >= 0 ? 0 : shim_spin_budget(shim_env.rx_poll_us);
	unsigned int sig0 = shim_sig_count();
	struct pollfd kp = { .fd = kfd, .events = (short)want };

	if (t == NULL)
		return -errno;
	/* poll counters: a hit when a look finds it ready, a miss when the
	 * first look does not */
	for (bool first = true;; first = false) {
		uint64_t el;
		bool watched;
		int r, tmo;

		if (shim_sock_ready(s) & (want | POLLERR | POLLHUP)) {
			shim_poll_count(s, true);
			return 1;
		}
		if (kfd >= 0 && REAL(poll)(&kp, 1, 0) > 0)
			return 1;
		if (first)
			shim_poll_count(s, false);
		if (shim_daemon_gone())
			return -ECONNABORTED;
		el = shim_now_us() - start;
		if (timeout_ms >= 0 && el >= (uint64_t)timeout_ms * 1000)
			return 0;
		if (shim_sig_count() != sig0) {
			/* a handler ran while we spun: what the kernel's call
			 * would do (restart only without a time-out) */
			if (timeout_ms >= 0 || !shim_sig_restarts())
				return -EINTR;
			sig0 = shim_sig_count();
		}
		if (budget < 0 || el < (uint64_t)budget) {
			shim_cpu_relax();
			continue;
		}
		if (want & POLLOUT)
			shim_sock_want_tx(s);
		watched = shim_sock_watch(s, t->w.id);
		if (kfd >= 0)
			shim_waiter_arm(&t->w);
		else
			shim_waiter_arm_futex(&t->w);
		r = 0;
		if (!(shim_sock_ready(s) & (want | POLLERR | POLLHUP))) {
			tmo = watched ? 1000 : 1;
			if (timeout_ms >= 0) {
				long left = timeout_ms - (long)(el / 1000);

				if (left < tmo)
					tmo = left < 0 ? 0 : (int)left;
			}
			r = shim_sleep(&t->w, kfd >= 0 ? &kp : NULL, kfd >= 0, tmo, NULL);
		}
		shim_waiter_disarm(&t->w);
		shim_waiter_drain(&t->w, NULL, NULL);
		shim_sock_unwatch(s, t->w.id);
		if (r == -EINTR) {
			if (timeout_ms >= 0 || !shim_sig_restarts())
				return -EINTR;
			sig0 = shim_sig_count();
		}
	}
}

bool
shim_sock_want_tx(struct shim_sock *s)
{
	uint32_t i;

	if (s->mode == SHIM_TCP_CONN)
		i = 0;
	else if (s->mode == SHIM_UDP)
		i = __atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots;
	else
		return false;
	__atomic_store_n(&shim_sock_slot(s, i)->want_tx, 1, __ATOMIC_RELAXED);
	/* seq_cst: pairs with the worker's fence between freeing space and
	 * exchanging want_tx: either it sees our want_tx (and notifies), or
	 * our next look sees the room it made. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return true;
}
