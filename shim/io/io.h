/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * io.h — io/: an offloaded socket's TCP, UDP, FIFO data and readiness.
 * TCP connect, accept and data (tcp.c, tcpinfo.c) and UDP bind, first
 * send and datagrams (udp.c) through the slots' FIFOs, the copies in and
 * out of them and their doorbells (fifo.c), data the program holds out
 * of order (zero-copy receive, receive callbacks: zcopy.c, which every
 * plain read and readiness look goes through), and a socket's readiness
 * with the single-socket wait of blocking calls (ready.c). One circle:
 * the data calls block in ready.c, which reads zcopy.c's held data, which
 * shares tcp.c's and udp.c's rules. What the rest of the shim uses of it;
 * io_priv.h is what its own files share. It calls offload/, sock/, link/
 * and shim.h.
 */
#ifndef DPSOCK_SHIM_IO_H
#define DPSOCK_SHIM_IO_H

#include "dpsock/extra.h"
#include "offload/offload.h"

/* ---- slot FIFOs (fifo.c) ----------------------------------------------------- */

size_t shim_iov_total(const struct iovec *iov, int n);
/* Copy len bytes from src into the iovec array starting at byte off; from
 * the array at off into dst; between two arrays. */
void shim_iov_put(const struct iovec *iov, int n, size_t off, const unsigned char *src,
		  size_t len);
void shim_iov_get(const struct iovec *iov, int n, size_t off, unsigned char *dst, size_t len);
void shim_iov_copy(const struct iovec *dst, int nd, size_t doff, const struct iovec *src, int ns,
		   size_t soff, size_t len);

/* ---- readiness and the single-socket wait (ready.c) -------------------------- */

/* Readiness of an offloaded socket as poll bits (POLLIN/OUT/ERR/HUP/RDHUP). */
uint32_t shim_sock_ready(struct shim_sock *s);
/* What edge-triggered readiness compares: in moves when data, a
 * connection, EOF or an error arrives; out when send room is made or the
 * state changes. */
struct shim_edge_sig {
	uint64_t in, out;
};
/* shim_sock_ready, plus the edge signature read in the same pass. */
uint32_t shim_sock_ready_sig(struct shim_sock *s, struct shim_edge_sig *sig);
/* Register / unregister waiter id in the slots' watch[] entries. Returns
 * false when some slot had no free entry (the caller then sleeps in short
 * ticks instead). */
bool shim_sock_watch(struct shim_sock *s, int waiter_id);
void shim_sock_unwatch(struct shim_sock *s, int waiter_id);
/* Before a wait for writability: ask the worker to notify when it makes
 * room (want_tx), then fence. Returns true when it asked (the caller then
 * looks at the socket once more: room made before the ask is seen). */
bool shim_sock_want_tx(struct shim_sock *s);
/* Blocking wait for want (poll bits) on one socket: spin for the
 * DPSOCK_RX_POLL budget, then sleep. timeout_ms: -1 forever. Returns 1 when
 * ready, 0 on timeout, -EINTR, or -ECONNABORTED when dpsockd went away. */
int shim_wait_sock(struct shim_sock *s, uint32_t want, int timeout_ms);
/* The same, with s's kernel half (kfd, a descriptor of its kernel socket;
 * -1: none) watched too: ready when either is; no spin. */
int shim_wait_sock_k(struct shim_sock *s, int kfd, uint32_t want, int timeout_ms);

/* ---- TCP and UDP (tcp.c, udp.c) --------------------------------------------- */

/* Data calls return a count or -1 with errno (as libc); the others 0 or
 * -errno. */
int shim_conn_take_err(struct shim_sock *s);   /* pending error (once), else 0 */
ssize_t shim_tcp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags);
ssize_t shim_tcp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags);
/* Start an active open (caller holds s->lock). Returns -EINPROGRESS on a
 * non-blocking socket (the outcome comes as writability and SO_ERROR),
 * SHIM_BLOCKED on a blocking one (the caller drops the lock and waits with
 * shim_tcp_connect_wait), or -errno. */
int shim_tcp_connect(struct shim_sock *s, const struct sockaddr_in *sin);
/* The same to IPv6 address a6, port (network order). */
int shim_tcp_connect6(struct shim_sock *s, const struct in6_addr *a6, uint16_t port);
/* connect() again on an offloaded connection: 0 (the outcome, once),
 * -EISCONN, -EALREADY, SHIM_BLOCKED or the error. Caller holds s->lock. */
int shim_tcp_connect_again(struct shim_sock *s);
/* Wait, without the lock, for a blocking connect's outcome: 0 or -errno
 * (-EINPROGRESS when SO_SNDTIMEO ran out; it goes on). */
int shim_tcp_connect_wait(struct shim_sock *s);
/* accept4 on an offloaded listener: the new descriptor or -1 + errno. */
int shim_tcp_accept(int fd, struct shim_sock *s, struct sockaddr *addr, socklen_t *alen,
		    int flags);
/* tcpinfo.c: getsockopt TCP_INFO / TCP_CONGESTION of an offloaded TCP
 * socket, answered by its worker. 0 or -errno. */
int shim_tcp_info(struct shim_sock *s, void *val, socklen_t *len);
int shim_tcp_congestion(struct shim_sock *s, void *val, socklen_t *len);
ssize_t shim_udp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
		      const struct sockaddr *to, socklen_t tolen);
/* hdr (may be NULL): the datagram's header, for recvmsg's control messages. */
ssize_t shim_udp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
		      struct sockaddr *from, socklen_t *fromlen, int *msg_flags,
		      struct shim_dgram *hdr);
/* Offload an unbound UDP socket (a port on every worker). */
int shim_udp_ensure_bound(struct shim_sock *s, int role, uint32_t addr, uint16_t port);
/* First send on an undecided UDP socket: the udp_sender decision. true
 * when it is (now) offloaded. */
bool shim_udp_first_send(struct shim_sock *s, const struct sockaddr *to, socklen_t tolen);

/* ---- held data (zcopy.c; the extra API's receive side) ---------------------- */

/* The last reference to s went: forget its extra state (held packets of
 * it can no longer be freed). */
void shim_xrx_release(struct shim_sock *s);
/* Bytes of slot i's rx FIFO the program can still read (not held); the
 * plain FIFO level when the socket has no extra state. */
uint32_t shim_rx_level(struct shim_sock *s, uint32_t i);
/* Flag for shim_tcp_accept: never wait (the listener may be blocking). */
#define SHIM_ACCEPT_NOWAIT 0x40000000
/* Poll counters for dpsock-stat (slot line 2 of the socket's first slot):
 * a readiness look that found what it asked for, or not. Relaxed
 * read-modify-write: a count lost when two threads poll one socket at the
 * same instant is acceptable for a statistic. */
static inline void
shim_poll_count(struct shim_sock *s, bool hit)
{
	struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
	uint32_t *c = hit ? &sl->poll_hits : &sl->poll_misses;

	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

#endif /* DPSOCK_SHIM_IO_H */
