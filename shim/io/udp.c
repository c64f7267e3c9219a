/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp.c — offloaded UDP: binding on every worker, the udp_sender decision
 * at the first send, and datagrams through the slots' FIFOs.
 */
#include <string.h>
#include <time.h>

#include "io/io_priv.h"
#include "mcast_filter.h"


/* ---- UDP data ------------------------------------------------------------------- */

static uint32_t
pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

ssize_t
shim_udp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
	 const struct sockaddr *to, socklen_t tolen)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = shim_iov_total(iov, iovcnt);
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);
	struct shim_dgram d = { 0 };
	struct dpsock_pl_dgram *h = &d.h;
	uint32_t need, k, cap, hl;

	if (to != NULL) {
		struct sockaddr_in sin;
		struct in6_addr a6;
		uint16_t p6;

		if (s->udp6 && shim_addr_in6(s, to, tolen, SHIM_ADDR_PEER, &a6, &p6)) {
			h->flags = DPSOCK_PL_DGRAM_IP6;
			memcpy(d.x.addr, &a6, 16);
			h->port = p6;
		} else if (shim_addr_in(s, to, tolen, SHIM_ADDR_PEER, &sin) != 0) {
			return shim_fail(tolen >= sizeof(sa_family_t) && to->sa_family == s->family ?
					 EINVAL : EAFNOSUPPORT);
		} else {
			h->addr = sin.sin_addr.s_addr;
			h->port = sin.sin_port;
		}
		if (h->port == 0)
			return shim_fail(EINVAL);   /* as udp_sendmsg: no port 0 */
	} else if (s->udp_connected && s->peer6) {
		h->flags = DPSOCK_PL_DGRAM_IP6;
		memcpy(d.x.addr, &s->raddr6, 16);
		h->port = s->rport;
	} else if (s->udp_connected) {
		h->addr = s->raddr;
		h->port = s->rport;
	} else {
		return shim_fail(EDESTADDRREQ);
	}
	if (total > DPSOCK_PL_DGRAM_MAX)
		return shim_fail(EMSGSIZE);
	h->len = (uint32_t)total;
	hl = dpsock_pl_dgram_hlen(h->flags);
	need = hl + pad8(h->len);
	if (need > g->tx_fifo_size)
		return shim_fail(EMSGSIZE);
	/* SO_SNDBUF: at most that much queued (a larger datagram alone fits) */
	cap = s->sndbuf_eff != SHIM_UNSET && (uint32_t)s->sndbuf_eff < g->tx_fifo_size ?
	      (uint32_t)s->sndbuf_eff : g->tx_fifo_size;
	cap = cap > need ? cap : need;
	k = __atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots;
	for (;;) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, k);
		struct shim_slot_area *a = shim_area(sl);
		struct dpsock_fifo_prod p;
		struct iovec seg[2];
		uint32_t n = 0;
		int w;

		if (shim_daemon_gone()) {
			shim_sock_gone_seen(s);
			return shim_fail(EPIPE);
		}
		shim_lock(shim_tx_lock(a));
		if (shim_fifo_tx_attach(s->slot[k], &p) == 0 &&
		    dpsock_fifo_free(&p) >= need &&
		    g->tx_fifo_size - dpsock_fifo_free(&p) + need <= cap) {
			static const unsigned char zeros[8];

			/* the datagram is written whole into the reserved window,
			 * then published at once by the commit */
			n = dpsock_fifo_write_reserve(&p, need, seg);
			if (n == need) {
				shim_iov_put(seg, 2, 0, (const unsigned char *)&d, hl);
				shim_iov_copy(seg, 2, hl, iov, iovcnt, 0, h->len);
				shim_iov_put(seg, 2, hl + h->len, zeros, need - hl - h->len);
				dpsock_fifo_write_commit(&p, n);
			} else {
				n = 0;
			}
		}
		shim_unlock(shim_tx_lock(a));
		if (n > 0) {
			shim_tx_kick(s, k);
			return (ssize_t)h->len;
		}
		if (!block) {
			__atomic_store_n(&sl->want_tx, 1, __ATOMIC_RELAXED);
			return shim_fail(EAGAIN);
		}
		w = shim_wait_sock(s, POLLOUT, s->sndtimeo_ms);
		if (w == -EINTR)
			return shim_fail(EINTR);
		if (w == 0)
			return shim_fail(EAGAIN);   /* SO_SNDTIMEO */
		if (w == 1 && g->tx_fifo_size - shim_fifo_level(shim_slot_tx(s->slot[k]),
							   g->tx_fifo_size) < need) {
			/* writable, but not for a datagram this big yet */
			struct timespec ts = { 0, 20000 };

			nanosleep(&ts, NULL);
		}
	}
}

bool
shim_udp_unwanted(const struct shim_sock *s, const struct shim_dgram *d)
{
	if (!s->udp_connected)
		return false;
	if (d->h.flags & DPSOCK_PL_DGRAM_IP6)
		return !s->peer6 || d->h.port != s->rport || memcmp(d->x.addr, &s->raddr6, 16) != 0;
	return s->peer6 || d->h.addr != s->raddr || d->h.port != s->rport;
}

ssize_t
shim_udp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
	 struct sockaddr *from, socklen_t *fromlen, int *msg_flags, struct shim_dgram *hdr)
{
	const struct dpsock_pl_seg *g = shim_seg();
	size_t total = shim_iov_total(iov, iovcnt);
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	for (;;) {
		for (uint32_t j = 0; j < s->nslots; j++) {
			uint32_t i = (s->rr + j) % s->nslots;
			struct dpsock_pl_slot *sl = shim_sock_slot(s, i);
			struct shim_slot_area *a = shim_area(sl);
			struct dpsock_fifo_cons c;
			struct shim_dgram d;
			struct dpsock_pl_dgram h;
			struct iovec seg[2];
			uint32_t n, len, whole, hl;
			bool got = false, drop = false;
			size_t copy = 0;

			if (__builtin_expect(s->xrx != NULL, 0)) {
				/* extra API state: callbacks, held datagrams (zcopy.c) */
				if (!shim_xrx_udp_recv_slot(s, i, iov, iovcnt, flags, &d, &copy))
					continue;
				len = d.h.len;
				goto got;
			}
			if (shim_fifo_level(shim_slot_rx(s->slot[i]), g->rx_fifo_size) < sizeof(h))
				continue;
			shim_lock(shim_rx_lock(a));
			if (shim_fifo_rx_attach(s->slot[i], &c) != 0) {
				shim_unlock(shim_rx_lock(a));
				continue;
			}
			n = dpsock_fifo_read_peek(&c, sizeof(h), seg);
			if (n < sizeof(h)) {
				shim_unlock(shim_rx_lock(a));
				continue;
			}
			memcpy(&h, seg[0].iov_base, seg[0].iov_len);
			memcpy((unsigned char *)&h + seg[0].iov_len, seg[1].iov_base, seg[1].iov_len);
			len = h.len;
			hl = dpsock_pl_dgram_hlen(h.flags);
			whole = len <= DPSOCK_PL_DGRAM_MAX ? hl + pad8(len) : 0;
			n = whole ? dpsock_fifo_read_peek(&c, whole, seg) : 0;
			if (whole == 0 || n < whole) {
				/* the daemon publishes whole datagrams: a short one is
				 * corruption; drop what is there */
				SHIM_LOG(WARNING, "bad datagram record (len %u) in a UDP FIFO", len);
				dpsock_fifo_read_consume(&c, dpsock_fifo_read_peek(&c, UINT32_MAX, seg));
				shim_unlock(shim_rx_lock(a));
				continue;
			}
			d.h = h;
			if (h.flags & DPSOCK_PL_DGRAM_IP6)
				shim_iov_get(seg, 2, sizeof(h), (unsigned char *)&d.x, sizeof(d.x));
			drop = shim_udp_unwanted(s, &d);
			if (!drop) {
				copy = len < total ? len : total;
				shim_iov_copy(iov, iovcnt, 0, seg, 2, hl, copy);
				got = true;
			}
			if (drop || !(flags & MSG_PEEK))
				dpsock_fifo_read_consume(&c, whole);
			shim_unlock(shim_rx_lock(a));
			if (drop || !(flags & MSG_PEEK))
				shim_rx_kick(s, i);
			if (!got)
				continue;
got:
			s->rr = i + 1;
			/* Reply through the worker that received: request/response
			 * stays on one worker, the one that is awake (the thread's
			 * own worker may sleep). UDP promises no order; a switch
			 * can only reorder datagrams still queued on the old one. */
			__atomic_store_n(&s->udp_tx_worker, i, __ATOMIC_RELAXED);
			if (from != NULL && fromlen != NULL)
				shim_addr_out(s, d.h.addr,
					      d.h.flags & DPSOCK_PL_DGRAM_IP6 ? d.x.addr : NULL,
					      d.h.port, from, fromlen);
			if (msg_flags != NULL)
				*msg_flags = copy < len ? MSG_TRUNC : 0;
			if (hdr != NULL)
				*hdr = d;
			return (flags & MSG_TRUNC) ? (ssize_t)len : (ssize_t)copy;
		}
		if (shim_daemon_gone()) {
			shim_sock_gone_seen(s);
			return shim_fail(ECONNRESET);
		}
		if (!block)
			return shim_fail(EAGAIN);
		int w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);

		if (w == -EINTR)
			return shim_fail(EINTR);
		if (w == 0)
			return shim_fail(EAGAIN);   /* SO_RCVTIMEO */
	}
}


int
shim_udp_ensure_bound(struct shim_sock *s, int role, uint32_t addr, uint16_t port)
{
	bool unbound = !s->bound;
	unsigned int cf = 0;
	int r;

	(void)role, (void)addr, (void)port;
	if (shim_sock_offloaded(s))
		return 0;
	/* an AF_INET6 socket's "::": IPv6's addresses too where dpsockd has
	 * some (IPv6 alone with IPV6_V6ONLY) */
	if (s->family == AF_INET6 && (unbound || s->any6) && !s->ip6 && shim_serves_ip6()) {
		cf = s->v6only ? DPSOCK_PL_CMD_F_IP6 : DPSOCK_PL_CMD_F_DUAL;
		if (s->v6only) {
			s->ip6 = 1;
			s->laddr6 = in6addr_any;
		}
	}
	/* unbound: worker 0 picks an ephemeral port, the others follow */
	r = shim_sock_open_all(s, DPSOCK_PL_OP_UDP_BIND, s->bound ? s->laddr : htonl(INADDR_ANY),
			  s->bound ? s->lport : 0, cf);
	if (r < 0)
		return r;
	s->udp6 = cf != 0;
	/* an unbound AF_INET6 socket: named "::" as Linux names it; what
	 * it sends to IPv6 dpsockd does not carry goes out of its kernel
	 * socket, whose replies are read too (calls.c udp_recv_both) */
	if (s->family == AF_INET6 && unbound)
		s->any6 = s->khalf = 1;
	shim_sock_set_offloaded(s, SHIM_UDP);
	return 0;
}


/* First send on an unbound UDP socket: the udp_sender decision. Returns
 * true when s is (now) offloaded. */
bool
shim_udp_first_send(struct shim_sock *s, const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_in v4;
	struct in6_addr a6;
	uint16_t p6;
	bool off = false, ip6;

	if (s->type != SOCK_DGRAM)
		return false;
	/* to IPv6 proper, in a /64 of dpsockd's: a port of both families
	 * (IPv6 alone with IPV6_V6ONLY) on every worker */
	ip6 = !s->bound && shim_addr_in6(s, to, tolen, SHIM_ADDR_PEER, &a6, &p6);
	if (!ip6 && shim_addr_in(s, to, tolen, SHIM_ADDR_PEER, &v4) != 0) {
		/* an AF_INET6 socket's first datagram to IPv6 dpsockd does not
		 * carry: the kernel binds its port, and the socket stays the
		 * kernel's */
		if (s->family == AF_INET6 && to != NULL && tolen >= sizeof(struct sockaddr_in6) &&
		    to->sa_family == AF_INET6) {
			pthread_mutex_lock(&s->lock);
			if (s->mode == SHIM_UNDECIDED) {
				s->mode = SHIM_KERNEL;
				shim_mc_drop_pending(s);
			}
			pthread_mutex_unlock(&s->lock);
		}
		return false;
	}
	pthread_mutex_lock(&s->lock);
	if (s->mode == SHIM_UNDECIDED) {
		/* IP_MULTICAST_IF named a kernel interface: its groups are sent there */
		if (ip6 ? shim_offload_decide6(DPSOCK_PL_UDP_SENDER, &a6, p6) == 1 &&
			  shim_udp_ensure_bound(s, DPSOCK_PL_UDP_SENDER, 0, 0) == 0 && s->udp6 :
			  !(s->mc_if_kernel && dpsock_mc_is_group4(v4.sin_addr.s_addr)) &&
			  shim_offload_decide(DPSOCK_PL_UDP_SENDER, v4.sin_addr.s_addr,
					      v4.sin_port, 0, 0) &&
			  shim_udp_ensure_bound(s, DPSOCK_PL_UDP_SENDER, v4.sin_addr.s_addr,
						v4.sin_port) == 0) {
			off = true;
		} else if (s->mode == SHIM_UNDECIDED) {
			s->mode = SHIM_KERNEL;
			shim_mc_drop_pending(s);
		}
	} else {
		off = shim_sock_offloaded(s);
	}
	pthread_mutex_unlock(&s->lock);
	return off;
}
