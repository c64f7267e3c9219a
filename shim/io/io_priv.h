/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io_priv.h — what the files of io/ share and nothing else uses: the
 * doorbells (fifo.c), the connected-peer filter of UDP (udp.c, for
 * zcopy.c), and the held-data paths the plain reads and readiness take
 * (zcopy.c, for tcp.c, udp.c and ready.c).
 */
#ifndef DPSOCK_SHIM_IO_PRIV_H
#define DPSOCK_SHIM_IO_PRIV_H

#include "io/io.h"

/* After making room in slot i's rx FIFO / putting data in its tx FIFO:
 * post RX_KICK / TX_KICK if the worker rang the doorbell. */
void shim_rx_kick(struct shim_sock *s, uint32_t i);
void shim_tx_kick(struct shim_sock *s, uint32_t i);
/* A connected UDP socket takes only its peer's datagrams (as the kernel):
 * true when d is from another. */
bool shim_udp_unwanted(const struct shim_sock *s, const struct shim_dgram *d);
/* The socket's extra receive state, made on first use (NULL + errno
 * ENOMEM). Caller: the socket is offloaded. */
struct shim_xrx *shim_xrx_get(struct shim_sock *s);
/* UDP with extra state: run the receive callback over new datagrams of
 * slot i; true when a datagram is readable there. */
bool shim_xrx_udp_readable(struct shim_sock *s, uint32_t i);
/* UDP with extra state: receive the first readable datagram of slot i by
 * copy (as shim_udp_recv's per-slot step). Returns 1 with *h (its header)
 * and *copied, or 0 when there is none. */
int shim_xrx_udp_recv_slot(struct shim_sock *s, uint32_t i, const struct iovec *iov, int iovcnt,
			   int flags, struct shim_dgram *h, size_t *copied);
/* TCP with held chunks: copy up to len readable bytes into iov at byte
 * off (MSG_PEEK: leave them). Returns the count (0: none readable). */
uint32_t shim_xrx_tcp_read(struct shim_sock *s, const struct iovec *iov, int iovcnt, size_t off,
			   size_t len, int flags);
/* true when s has TCP chunks held (reads then go through shim_xrx_tcp_read). */
bool shim_xrx_tcp_holds_slow(const struct shim_sock *s);
static inline bool
shim_xrx_tcp_holds(const struct shim_sock *s)
{
	return __builtin_expect(s->xrx != NULL, 0) && shim_xrx_tcp_holds_slow(s);
}

#endif /* DPSOCK_SHIM_IO_PRIV_H */
