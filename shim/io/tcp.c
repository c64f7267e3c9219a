/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp.c — offloaded TCP: connect, accept, and the data path through a
 * connection slot's FIFOs.
 */
#include <stdlib.h>
#include <string.h>

#include "io/io_priv.h"


/* ---- TCP data ------------------------------------------------------------------ */

/* Pending error of a connection (once), else 0. */
int
shim_conn_take_err(struct shim_sock *s)
{
	struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
	int e;

	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != DPSOCK_PL_ST_CLOSED)
		return 0;
	e = __atomic_load_n(&sl->err, __ATOMIC_RELAXED);
	if (e == 0 || s->err_taken)
		return 0;
	s->err_taken = 1;
	return e < 0 ? -e : e;
}

ssize_t
shim_tcp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	size_t total = shim_iov_total(iov, iovcnt), done = 0;
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	if (s->mode == SHIM_TCP_LISTEN)
		return shim_fail(ENOTCONN);
	if (total == 0)
		return 0;
	for (;;) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
		struct shim_slot_area *a = shim_area(sl);
		struct dpsock_fifo_cons c;
		struct iovec seg[2];
		uint32_t st, fl, n = 0;
		int e, w;

		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (st == DPSOCK_PL_ST_CONNECTING) {
			if (!block)
				return shim_fail(EAGAIN);
			w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);
			if (w < 0)
				return done > 0 ? (ssize_t)done : shim_fail(-w == ECONNABORTED ? ECONNRESET : -w);
			if (w == 0)
				return done > 0 ? (ssize_t)done : shim_fail(EAGAIN);   /* SO_RCVTIMEO */
			continue;
		}
		if (shim_xrx_tcp_holds(s)) {
			/* zero-copy chunks held (extra API): read past them */
			n = shim_xrx_tcp_read(s, iov, iovcnt, done, total - done, flags);
		} else {
			shim_lock(shim_rx_lock(a));
			if (shim_fifo_rx_attach(s->slot[0], &c) == 0) {
				n = dpsock_fifo_read_peek(&c, total - done, seg);
				shim_iov_put(iov, iovcnt, done, seg[0].iov_base, seg[0].iov_len);
				shim_iov_put(iov, iovcnt, done + seg[0].iov_len, seg[1].iov_base,
					     seg[1].iov_len);
				if (!(flags & MSG_PEEK) && n > 0)
					dpsock_fifo_read_consume(&c, n);
			}
			shim_unlock(shim_rx_lock(a));
			if (n > 0 && !(flags & MSG_PEEK))
				shim_rx_kick(s, 0);
		}
		done += n;
		if (done == total || (n > 0 && (!(flags & MSG_WAITALL) || (flags & MSG_PEEK))))
			return (ssize_t)done;
		if (n > 0)
			continue;
		/* empty: EOF, error, or wait. Flags are read after the FIFO was
		 * seen empty; the worker publishes data before RD_EOF (release),
		 * so re-check the FIFO once more after seeing them. */
		fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if ((fl & DPSOCK_PL_F_RD_EOF) || st == DPSOCK_PL_ST_CLOSED || s->shut_rd ||
		    shim_daemon_gone()) {
			if (shim_rx_level(s, 0) > 0)
				continue;
			if (done > 0)
				return (ssize_t)done;
			if (shim_daemon_gone() && !s->err_taken) {
				s->err_taken = 1;
				return shim_fail(ECONNRESET);
			}
			e = shim_conn_take_err(s);
			return e ? shim_fail(e) : 0;
		}
		if (!block)
			return done > 0 ? (ssize_t)done : shim_fail(EAGAIN);
		w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);
		if (w < 0 && w != -ECONNABORTED)
			return done > 0 ? (ssize_t)done : shim_fail(-w);
		if (w == 0)
			return done > 0 ? (ssize_t)done : shim_fail(EAGAIN);   /* SO_RCVTIMEO */
	}
}

ssize_t
shim_tcp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = shim_iov_total(iov, iovcnt), done = 0;
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	if (s->mode == SHIM_TCP_LISTEN)
		return shim_epipe(flags);
	for (;;) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
		struct shim_slot_area *a = shim_area(sl);
		struct dpsock_fifo_prod p;
		struct iovec seg[2];
		uint32_t st, fl, n = 0;
		int e, w;

		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);
		if (shim_daemon_gone())
			return done > 0 ? (ssize_t)done : shim_epipe(flags);
		if (st == DPSOCK_PL_ST_CLOSED) {
			if (done > 0)
				return (ssize_t)done;
			e = shim_conn_take_err(s);
			return e ? shim_fail(e) : shim_epipe(flags);
		}
		if ((fl & DPSOCK_PL_F_WR_SHUT) || s->shut_wr)
			return done > 0 ? (ssize_t)done : shim_epipe(flags);
		if (st == DPSOCK_PL_ST_CONNECTING) {
			if (!block)
				return shim_fail(EAGAIN);
			w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
			if (w < 0 && w != -ECONNABORTED)
				return shim_fail(-w);
			if (w == 0)
				return shim_fail(EAGAIN);   /* SO_SNDTIMEO */
			continue;
		}
		if (total == 0)
			return 0;
		shim_lock(shim_tx_lock(a));
		if (shim_fifo_tx_attach(s->slot[0], &p) == 0) {
			n = dpsock_fifo_write_reserve(&p, total - done, seg);
			shim_iov_get(iov, iovcnt, done, seg[0].iov_base, seg[0].iov_len);
			shim_iov_get(iov, iovcnt, done + seg[0].iov_len, seg[1].iov_base, seg[1].iov_len);
			if (n > 0)
				dpsock_fifo_write_commit(&p, n);
		}
		shim_unlock(shim_tx_lock(a));
		if (n > 0)
			shim_tx_kick(s, 0);
		done += n;
		if (done == total)
			return (ssize_t)done;
		if (!block) {
			if (done > 0)
				return (ssize_t)done;
			__atomic_store_n(&sl->want_tx, 1, __ATOMIC_RELAXED);
			/* seq_cst: pairs with the worker's fence between freeing
			 * space and exchanging want_tx (it then notifies us). */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (g->tx_fifo_size - shim_fifo_level(shim_slot_tx(s->slot[0]), g->tx_fifo_size) > 0)
				continue;
			return shim_fail(EAGAIN);
		}
		w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
		if (w == -EINTR)
			return done > 0 ? (ssize_t)done : shim_fail(EINTR);
		if (w == 0)
			return done > 0 ? (ssize_t)done : shim_fail(EAGAIN);   /* SO_SNDTIMEO */
	}
}


/* CONNECT (c) from this thread's worker: the slot, or -errno. */
static int
connect_cmd(struct shim_thread *t, struct shim_sock *s, struct dpsock_pl_cmd *c,
	    struct dpsock_pl_reply *r)
{
	int e;

	c->arg[0] = s->bound ? s->lport : 0;
	e = shim_cmd_call(t, t->worker, c, r);
	if (e == 0)
		e = r->result;
	if (e == 0 && !shim_slot_valid(r->slot))
		e = -EPROTO;
	return e;
}

/* The connection (reply r) is the socket's: an offloaded connection, as
 * connect reports it. */
static int
connect_started(struct shim_thread *t, struct shim_sock *s, const struct dpsock_pl_reply *r)
{
	s->slot[0] = r->slot;
	s->gen[0] = r->gen;
	s->nslots = 1;
	s->laddr = r->addr;
	s->lport = r->port;
	shim_sock_set_offloaded(s, SHIM_TCP_CONN);
	shim_sock_push_opts(t, s);
	return s->nonblock ? -EINPROGRESS : SHIM_BLOCKED;
}

int
shim_tcp_connect(struct shim_sock *s, const struct sockaddr_in *sin)
{
	struct shim_thread *t;
	struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_CONNECT, .addr = sin->sin_addr.s_addr,
				   .port = sin->sin_port };
	struct dpsock_pl_reply r;
	int e;

	t = shim_thread_get();
	if (t == NULL)
		return -errno;
	e = connect_cmd(t, s, &c, &r);
	if (e == -ECONNREFUSED && sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
		/* DPSOCK_LOOPBACK: no listener of dpsockd has the port */
		SHIM_LOG(DEBUG, "connect to 127.0.0.1:%u: not a port dpsockd listens on; "
			 "the kernel's loopback", ntohs(sin->sin_port));
		s->mode = SHIM_KERNEL;
		return SHIM_TO_KERNEL;
	}
	if (e < 0)
		return e == -ENOSPC ? -EMFILE : e;
	return connect_started(t, s, &r);
}

int
shim_tcp_connect6(struct shim_sock *s, const struct in6_addr *a6, uint16_t port)
{
	struct shim_thread *t;
	struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_CONNECT, .flags = DPSOCK_PL_CMD_F_IP6,
				   .port = port };
	struct dpsock_pl_reply r;
	int e;

	t = shim_thread_get();
	if (t == NULL)
		return -errno;
	memcpy(c.addr6, a6, 16);
	e = connect_cmd(t, s, &c, &r);
	if (e < 0)
		return e == -ENOSPC ? -EMFILE : e;
	s->ip6 = 1;
	/* the local address is in the slot (line 7), published with the
	 * reply */
	memcpy(&s->laddr6, shim_slot(r.slot)->laddr6, 16);
	return connect_started(t, s, &r);
}

/* The outcome of s's active open so far, as connect reports it; dflt when
 * it failed without an error of its own. Caller holds s->lock. */
static int
connect_outcome(struct shim_sock *s, int dflt)
{
	uint32_t st = __atomic_load_n(&shim_sock_slot(s, 0)->state, __ATOMIC_ACQUIRE);
	int e;

	if ((st == DPSOCK_PL_ST_CONNECTING || (st == DPSOCK_PL_ST_CLOSED && !s->connect_reported)) &&
	    shim_daemon_gone()) {
		/* a killed dpsockd never finishes it, a stopping one closes it
		 * (its worker marks the segment STOPPED before the slot: who
		 * sees CLOSED sees that): refused either way, whichever the
		 * call saw first (each time: a connect again would not be
		 * answered either) */
		s->connect_reported = 1;
		s->err_taken = 1;
		shim_sock_gone_seen(s);
		return -ECONNREFUSED;
	}
	if (st == DPSOCK_PL_ST_CONNECTING)
		return s->nonblock ? -EALREADY : SHIM_BLOCKED;
	if (st == DPSOCK_PL_ST_ESTABLISHED) {
		e = s->connect_reported ? -EISCONN : 0;
		s->connect_reported = 1;
		return e;
	}
	e = shim_conn_take_err(s);
	s->connect_reported = 1;
	return e ? -e : dflt;
}

int
shim_tcp_connect_again(struct shim_sock *s)
{
	return connect_outcome(s, -ECONNABORTED);
}

int
shim_tcp_connect_wait(struct shim_sock *s)
{
	for (;;) {
		int w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms), r;

		if (w < 0)
			return w == -ECONNABORTED ? -ECONNREFUSED : w;
		if (w == 0)
			return -EINPROGRESS;   /* SO_SNDTIMEO: it goes on in the background */
		pthread_mutex_lock(&s->lock);
		r = connect_outcome(s, -ECONNREFUSED);
		pthread_mutex_unlock(&s->lock);
		if (r != SHIM_BLOCKED)
			return r;
	}
}

/* A connection of the kernel half of listener s (fd), without blocking:
 * its descriptor, or -errno (-EAGAIN: none). A blocking listener's kernel
 * socket blocks, so it is asked first whether one is there. */
static int
khalf_accept(int fd, struct shim_sock *s, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	if (!s->nonblock && REAL(poll)(&p, 1, 0) <= 0)
		return -EAGAIN;
	r = REAL(accept4)(fd, addr, alen, flags);
	if (r >= 0)
		return r;
	return errno == EWOULDBLOCK ? -EAGAIN : -errno;
}

int
shim_tcp_accept(int fd, struct shim_sock *s, struct sockaddr *addr, socklen_t *alen, int flags)
{
	const struct dpsock_pl_seg *g = shim_seg();
	bool nowait = (flags & SHIM_ACCEPT_NOWAIT) != 0;

	flags &= ~SHIM_ACCEPT_NOWAIT;
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return shim_fail(EINVAL);
	for (;;) {
		/* round-robin over the workers' listener slots: each call starts
		 * one further than the last */
		uint32_t first = __atomic_fetch_add(&s->rr, 1, __ATOMIC_RELAXED);

		for (uint32_t j = 0; j < s->nslots; j++) {
			uint32_t i = (first + j) % s->nslots;
			struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
			struct dpsock_pl_accept rec;
			struct dpsock_fifo_cons c;
			struct shim_sock *n;
			uint32_t got = 0;
			int nfd, e;

			if (shim_fifo_level(shim_slot_rx(s->slot[i]), g->rx_fifo_size) < sizeof(rec))
				continue;
			/* The connection's identity, a kernel socket of the
			 * listener's family, before the record is taken: a
			 * process at its descriptor limit (EMFILE, ENFILE, or
			 * short of memory) gets the kernel's error and the
			 * connection stays queued for a later accept, as a
			 * kernel listener's does. */
			nfd = REAL(socket)(s->family,
					   SOCK_STREAM | (flags & (SOCK_NONBLOCK | SOCK_CLOEXEC)), 0);
			if (nfd < 0)
				return shim_fail(errno);
			shim_lock(shim_rx_lock(a));
			e = shim_fifo_rx_attach(s->slot[i], &c);
			if (e == 0 && dpsock_fifo_used(&c) >= sizeof(rec))
				got = dpsock_fifo_read(&c, &rec, sizeof(rec));
			shim_unlock(shim_rx_lock(a));
			if (e < 0)
				SHIM_LOG(DEBUG, "listener slot %u: rx FIFO: %s", s->slot[i], strerror(-e));
			if (got != sizeof(rec)) {
				REAL(close)(nfd); /* another thread took it */
				continue;
			}
			shim_rx_kick(s, i);
			if (!shim_slot_valid(rec.slot)) {
				SHIM_LOG(WARNING, "accept record names slot %u: ignored", rec.slot);
				REAL(close)(nfd);
				continue;
			}
			n = shim_sock_new(SOCK_STREAM, (flags & SOCK_NONBLOCK) != 0);
			if (n == NULL || shim_fdtab_set(nfd, n) < 0) {
				struct shim_thread *t = shim_thread_get();
				struct dpsock_pl_cmd cl = { .op = DPSOCK_PL_OP_CLOSE, .slot = rec.slot,
							    .gen = rec.gen };

				cl.arg[0] = 1;
				if (t != NULL)
					shim_cmd_post(t, shim_slot_worker(rec.slot), &cl);
				REAL(close)(nfd);
				free(n);
				return shim_fail(ENOMEM);
			}
			n->ino = shim_fd_ino(nfd);
			n->fd0 = nfd;
			n->family = s->family;
			n->v6only = s->v6only;
			n->ip6 = shim_slot_laddr6(shim_slot(rec.slot)) != NULL;
			n->slot[0] = rec.slot;
			n->gen[0] = rec.gen;
			n->nslots = 1;
			n->connect_reported = 1;
			n->nodelay = s->nodelay;
			n->keepalive = s->keepalive;
			n->linger = s->linger;
			n->rcvtimeo_ms = s->rcvtimeo_ms;
			n->sndtimeo_ms = s->sndtimeo_ms;
			shim_sock_set_offloaded(n, SHIM_TCP_CONN);
			if (addr != NULL && alen != NULL) {
				struct dpsock_pl_slot *sl = shim_slot(rec.slot);

				shim_addr_out(n, sl->raddr, shim_slot_raddr6(sl), sl->rport, addr, alen);
			}
			return nfd;
		}
		if (s->shut_rd)
			return shim_fail(EINVAL);
		if (s->khalf) {
			/* what reached the kernel half (IPv6, the kernel's own
			 * interfaces): a kernel connection, as without dpsock */
			int r = khalf_accept(fd, s, addr, alen, flags);

			if (r != -EAGAIN)
				return r >= 0 ? r : shim_fail(-r);
		}
		if (shim_daemon_gone()) {
			shim_sock_gone_seen(s);
			return shim_fail(ECONNABORTED);
		}
		if (s->nonblock || nowait)
			return shim_fail(EAGAIN);
		int w = shim_wait_sock_k(s, s->khalf ? fd : -1, POLLIN, s->rcvtimeo_ms);

		if (w < 0 && w != -ECONNABORTED)
			return shim_fail(-w);
		if (w == 0)
			return shim_fail(EAGAIN);   /* SO_RCVTIMEO */
	}
}
