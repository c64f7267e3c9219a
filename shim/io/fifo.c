/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fifo.c — moving bytes between an application's buffers and a slot's
 * FIFOs: iovec copies and the doorbells that tell a worker which stopped
 * looking that there is data (tx) or room (rx) again.
 */
#include <string.h>

#include "io/io_priv.h"


size_t
shim_iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;

	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* Copy len bytes from src into the iovec array starting at byte off. */
void
shim_iov_put(const struct iovec *iov, int n, size_t off, const unsigned char *src, size_t len)
{
	for (int i = 0; i < n && len > 0; i++) {
		size_t l = iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < len ? l - off : len;
		memcpy((unsigned char *)iov[i].iov_base + off, src, k);
		src += k;
		len -= k;
		off = 0;
	}
}

void
shim_iov_get(const struct iovec *iov, int n, size_t off, unsigned char *dst, size_t len)
{
	for (int i = 0; i < n && len > 0; i++) {
		size_t l = iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < len ? l - off : len;
		memcpy(dst, (const unsigned char *)iov[i].iov_base + off, k);
		dst += k;
		len -= k;
		off = 0;
	}
}

/* Copy len bytes from the src iovec list at soff to the dst list at doff. */
void
shim_iov_copy(const struct iovec *dst, int nd, size_t doff, const struct iovec *src, int ns,
	 size_t soff, size_t len)
{
	for (int i = 0; i < ns && len > 0; i++) {
		size_t l = src[i].iov_len, k;

		if (soff >= l) {
			soff -= l;
			continue;
		}
		k = l - soff < len ? l - soff : len;
		shim_iov_put(dst, nd, doff, (const unsigned char *)src[i].iov_base + soff, k);
		doff += k;
		len -= k;
		soff = 0;
	}
}

/* After the shim made room in slot i's rx FIFO (bell = rx_doorbell, op
 * RX_KICK) or put data in its tx FIFO (tx_doorbell, TX_KICK): if the worker
 * rang the doorbell (it stopped looking), take it and post the kick.
 * seq_cst: pairs with the worker's fence between setting the doorbell and
 * re-reading the FIFO: either it sees our room / data, or we see the bell. */
static void
doorbell_kick(struct shim_sock *s, uint32_t i, uint32_t *bell, uint16_t op)
{
	struct shim_thread *t;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(bell, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(bell, 0, __ATOMIC_ACQ_REL)) {
		struct dpsock_pl_cmd c = { .op = op, .slot = s->slot[i], .gen = s->gen[i] };

		t = shim_thread_get();
		if (t != NULL)
			shim_cmd_post(t, shim_slot_worker(s->slot[i]), &c);
	}
}

void
shim_rx_kick(struct shim_sock *s, uint32_t i)
{
	doorbell_kick(s, i, &shim_sock_slot(s, i)->rx_doorbell, DPSOCK_PL_OP_RX_KICK);
}

void
shim_tx_kick(struct shim_sock *s, uint32_t i)
{
	doorbell_kick(s, i, &shim_sock_slot(s, i)->tx_doorbell, DPSOCK_PL_OP_TX_KICK);
}
