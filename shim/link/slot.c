/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slot.c — the group segment's slots as this process maps them (a slot's
 * header and its rx and tx FIFOs) and the process-shared lock that guards
 * a FIFO side between the threads and processes of a group (a futex word
 * holding the owner's tid, taken over from an owner that died).
 */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>

#include "link/link_priv.h"

/* ---- segment geometry ---------------------------------------------------- */

struct dpsock_pl_slot *
shim_slot(uint32_t n)
{
	const struct dpsock_pl_seg *g = shim_seg();

	return (struct dpsock_pl_slot *)(void *)(shim_proc.seg + g->off_slots +
						 (uint64_t)n * g->slot_stride);
}

void *
shim_slot_rx(uint32_t n)
{
	return (unsigned char *)shim_slot(n) + shim_seg()->rx_fifo_off;
}

void *
shim_slot_tx(uint32_t n)
{
	return (unsigned char *)shim_slot(n) + shim_seg()->tx_fifo_off;
}

/* The shim's end of slot n's FIFOs: its header with the slot, its data in
 * the segment's data area (preload_wire.h). 0 or the attach's -errno. */
int
shim_fifo_rx_attach(uint32_t n, struct dpsock_fifo_cons *c)
{
	const struct dpsock_pl_seg *g = shim_seg();

	return dpsock_fifo_cons_attach_at(c, shim_slot_rx(n),
					  shim_proc.seg + g->off_data + (uint64_t)n * g->data_stride +
						  g->rx_data_off,
					  g->rx_fifo_size);
}

int
shim_fifo_tx_attach(uint32_t n, struct dpsock_fifo_prod *p)
{
	const struct dpsock_pl_seg *g = shim_seg();

	return dpsock_fifo_prod_attach_at(p, shim_slot_tx(n),
					  shim_proc.seg + g->off_data + (uint64_t)n * g->data_stride +
						  g->tx_data_off,
					  g->tx_fifo_size);
}

/* ---- process-shared lock ------------------------------------------------ */

#define LOCK_WAITERS DPSOCK_PL_LOCK_WAITERS

long
shim_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

/* The lock word holds the owner's tid (and LOCK_WAITERS), or
 * DPSOCK_PL_LOCK_DAEMON while a worker reclaims the FIFO's pages. A
 * process that died holding it (kill -9 inside a send) is detected after a
 * short wait: its tid no longer exists, and the lock is taken over; so is
 * the worker's, once dpsockd is gone. */
void
shim_lock(uint32_t *lock)
{
	uint32_t tid = (uint32_t)shim_gettid();
	uint32_t cur = 0;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	/* acquire: pairs with the release in shim_unlock, so what the previous
	 * owner did to the FIFO side (its index, its data) is visible. */
	if (__atomic_compare_exchange_n(lock, &cur, tid, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int spins = 0;; spins++) {
		cur = __atomic_load_n(lock, __ATOMIC_RELAXED);
		if (cur == 0) {
			if (__atomic_compare_exchange_n(lock, &cur, tid | LOCK_WAITERS, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return;
			continue;
		}
		if (spins < 64) {
			shim_cpu_relax();
			continue;
		}
		if (!(cur & LOCK_WAITERS) &&
		    !__atomic_compare_exchange_n(lock, &cur, cur | LOCK_WAITERS, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		if (shim_futex(lock, FUTEX_WAIT, cur | LOCK_WAITERS, &ts) < 0 && errno == ETIMEDOUT) {
			uint32_t owner = cur & ~LOCK_WAITERS;

			/* the worker holds it for a moment (it gives an empty tx
			 * FIFO's pages back): dead only with dpsockd */
			if (owner == DPSOCK_PL_LOCK_DAEMON ? shim_daemon_gone() :
			    owner != 0 && kill((pid_t)owner, 0) < 0 && errno == ESRCH) {
				uint32_t seen = __atomic_load_n(lock, __ATOMIC_RELAXED);

				if ((seen & ~LOCK_WAITERS) == owner &&
				    __atomic_compare_exchange_n(lock, &seen, tid | LOCK_WAITERS, false,
								__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
					return;
			}
		}
	}
}

void
shim_unlock(uint32_t *lock)
{
	/* release: pairs with the acquire CAS in shim_lock of the next owner. */
	uint32_t old = __atomic_exchange_n(lock, 0, __ATOMIC_RELEASE);

	if (old & LOCK_WAITERS)
		shim_futex(lock, FUTEX_WAKE, 1, NULL);
}
