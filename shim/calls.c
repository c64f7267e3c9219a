/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * calls.c — the socket hooks: socket, bind, listen, connect, accept, the
 * send and receive families, sendfile, shutdown, close, names, options,
 * fcntl, ioctl, dup. A descriptor without a shadow object, or whose object
 * stays in the kernel, goes straight to libc: same return, same errno.
 * Hooks that change a socket's state take its lock, run a body that returns
 * 0 or -errno, unlock once and set errno once. What close() and the
 * process's exit do to a shadow object is here too: every part of the shim
 * that holds on to a socket lets go of it there.
 */
#include <limits.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "shim_priv.h"

#define HOOK DPSOCK_SHIM_EXPORT


/* ---- socket, bind, listen, connect, accept ---------------------------------------- */

HOOK int
socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol);
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct shim_sock *s;

	if (fd < 0 || (domain != AF_INET && domain != AF_INET6) ||
	    (base != SOCK_STREAM && base != SOCK_DGRAM))
		return fd;
	if (protocol != 0 && protocol != (base == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP))
		return fd;
	shim_env_load();
	if (!shim_env.offload || shim_thread_no_offload)
		return fd;
	s = shim_sock_new(base, (type & SOCK_NONBLOCK) != 0);
	if (s != NULL) {
		s->ino = shim_fd_ino(fd);
		s->fd0 = fd;
		s->family = domain;
		s->v6only = domain == AF_INET6 && shim_bindv6only();
	}
	if (s == NULL || shim_fdtab_set(fd, s) < 0) {
		free(s);
		return fd;      /* stays a kernel socket */
	}
	return fd;
}

/* The kernel socket binds an address only dpsockd has: it still holds
 * exactly that address and port (IP_FREEBIND, as for an address not up
 * yet), so that the port is taken in the kernel too, and so that after
 * dpsockd's end the socket goes on as the kernel socket the program asked
 * for (gone.c). */
static int
bind_freely(int fd, const struct sockaddr *addr, socklen_t len)
{
	int one = 1;

	if (REAL(setsockopt)(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) < 0)
		return -1;
	return REAL(bind)(fd, addr, len);
}

/* The kernel socket's port (network order; 0 when it has none). */
static uint16_t
kernel_port(int fd)
{
	struct sockaddr_storage got;
	socklen_t gl = sizeof(got);

	/* sin_port and sin6_port sit at the same offset */
	if (REAL(getsockname)(fd, (struct sockaddr *)&got, &gl) < 0)
		return 0;
	return ((struct sockaddr_in *)&got)->sin_port;
}

/* Caller holds s->lock; returns 0 or -errno. The kernel socket binds
 * what the program gave (addr, len); dpsockd gets its IPv4 form (sin). */
static int
bind_locked(int fd, struct shim_sock *s, const struct sockaddr *addr, socklen_t len,
	    const struct sockaddr_in *sin)
{
	int r;

	r = REAL(bind)(fd, addr, len);
	if (r < 0 && errno == EADDRNOTAVAIL && shim_offload_decide(s->type == SOCK_STREAM ?
		    DPSOCK_PL_TCP_SERVER : DPSOCK_PL_UDP_RECEIVER, sin->sin_addr.s_addr,
		    sin->sin_port, 0, 0) == 1)
		r = bind_freely(fd, addr, len);
	if (r < 0)
		return -errno;
	s->lport = kernel_port(fd);
	s->laddr = sin->sin_addr.s_addr;
	s->any6 = s->family == AF_INET6 && s->laddr == 0 &&
		  IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)addr)->sin6_addr);
	s->bound = 1;
	if (s->type == SOCK_DGRAM &&
	    shim_offload_decide(DPSOCK_PL_UDP_RECEIVER, s->laddr, s->lport, 0, 0) == 1) {
		/* "::" of both families: IPv6's addresses too, where dpsockd
		 * has some */
		unsigned int cf = s->any6 && shim_serves_ip6() ? DPSOCK_PL_CMD_F_DUAL : 0;

		r = shim_sock_open_all(s, DPSOCK_PL_OP_UDP_BIND, s->laddr, s->lport, cf);
		s->udp6 = r == 0 && cf != 0;
		/* bound to "::": the kernel socket's datagrams (IPv6) are
		 * read too (calls.c udp_recv_both) */
		s->khalf = s->any6;
		if (r == 0)
			shim_sock_set_offloaded(s, SHIM_UDP);
		else
			SHIM_LOG(WARNING, "UDP bind on dpsockd failed (%s): kernel socket",
				 strerror(-r));
	}
	if (!shim_sock_offloaded(s) && s->type == SOCK_DGRAM) {
		s->mode = SHIM_KERNEL;
		shim_mc_drop_pending(s);
	}
	return 0;
}

/* Caller holds s->lock; returns 0 or -errno. A socket's IPv6 address (a6,
 * from addr): the kernel socket binds it (freely: dpsockd's address6 is
 * not the kernel's); dpsockd gets it now (UDP: the socket is offloaded),
 * or at listen or connect (TCP). */
static int
bind6_locked(int fd, struct shim_sock *s, const struct sockaddr *addr, socklen_t len,
	     const struct in6_addr *a6)
{
	int r;

	r = REAL(bind)(fd, addr, len);
	if (r < 0 && errno == EADDRNOTAVAIL)
		r = bind_freely(fd, addr, len);
	if (r < 0)
		return -errno;
	s->lport = kernel_port(fd);
	s->laddr6 = *a6;
	s->laddr = 0;
	s->ip6 = 1;
	s->any6 = IN6_IS_ADDR_UNSPECIFIED(a6);
	s->bound = 1;
	if (s->type == SOCK_DGRAM) {
		r = shim_sock_open_all(s, DPSOCK_PL_OP_UDP_BIND, 0, s->lport, DPSOCK_PL_CMD_F_IP6);
		if (r == 0) {
			/* on "::": the kernel's IPv6 (::1, its interfaces) read too */
			s->udp6 = 1;
			s->khalf = s->any6;
			shim_sock_set_offloaded(s, SHIM_UDP);
		} else {
			SHIM_LOG(WARNING, "UDP bind on dpsockd failed (%s): kernel socket",
				 strerror(-r));
			s->mode = SHIM_KERNEL;
			shim_mc_drop_pending(s);
		}
	}
	return 0;
}

HOOK int
bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct sockaddr_in sin;
	int r;

	if (s == NULL || s->mode != SHIM_UNDECIDED)
		return REAL(bind)(fd, addr, len);
	if (shim_addr_in(s, addr, len, SHIM_ADDR_BIND, &sin) != 0) {
		struct in6_addr a6;
		uint16_t p6;

		/* IPv6 proper, on an address6 of dpsockd's (or on "::" with
		 * IPV6_V6ONLY): a TCP socket waits for listen or connect, a
		 * UDP one is offloaded now; anything else (or an address the
		 * kernel will refuse) is the kernel's socket from now on, once
		 * the kernel took it */
		if (shim_addr_in6(s, addr, len, SHIM_ADDR_BIND, &a6, &p6) &&
		    shim_offload_decide6(s->type == SOCK_STREAM ? DPSOCK_PL_TCP_SERVER :
					 DPSOCK_PL_UDP_RECEIVER, &a6, p6) == 1) {
			pthread_mutex_lock(&s->lock);
			r = bind6_locked(fd, s, addr, len, &a6);
			pthread_mutex_unlock(&s->lock);
			return r < 0 ? shim_fail(-r) : 0;
		}
		r = REAL(bind)(fd, addr, len);
		if (r == 0 && s->family == AF_INET6)
			s->mode = SHIM_KERNEL;
		return r;
	}
	pthread_mutex_lock(&s->lock);
	r = bind_locked(fd, s, addr, len, &sin);
	pthread_mutex_unlock(&s->lock);
	return r < 0 ? shim_fail(-r) : 0;
}

/* Caller holds s->lock; returns 0, -errno or SHIM_TO_KERNEL. */
static int
listen_locked(int fd, struct shim_sock *s, int backlog)
{
	int r;

	if (s->mode == SHIM_TCP_LISTEN) {
		s->backlog = backlog;
		return 0;
	}
	if (s->mode == SHIM_TCP_CONN)
		return -EINVAL;
	/* an AF_INET6 socket listening without a bind, with IPV6_V6ONLY:
	 * "::" of IPv6 alone */
	if (!s->bound && s->family == AF_INET6 && s->v6only) {
		s->ip6 = 1;
		s->laddr6 = in6addr_any;
	}
	if (s->mode == SHIM_KERNEL ||
	    !(s->ip6 ? shim_offload_decide6(DPSOCK_PL_TCP_SERVER, &s->laddr6, s->lport) :
	      shim_offload_decide(DPSOCK_PL_TCP_SERVER, s->bound ? s->laddr : htonl(INADDR_ANY),
				  s->lport, 0, 0))) {
		s->mode = SHIM_KERNEL;
		return SHIM_TO_KERNEL;
	}
	if (!s->bound) {
		struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 };
		struct sockaddr_in any = { .sin_family = AF_INET };

		if ((s->family == AF_INET6 ?
		     REAL(bind)(fd, (struct sockaddr *)&any6, sizeof(any6)) :
		     REAL(bind)(fd, (struct sockaddr *)&any, sizeof(any))) < 0)
			return -errno;
		s->lport = kernel_port(fd);
		s->any6 = s->family == AF_INET6;
		s->bound = 1;
	}
	s->backlog = backlog < 0 ? 0 : backlog > 4096 ? 4096 : backlog;
	/* IPv6 alone; or "::" of both families, when dpsockd serves IPv6 */
	r = shim_sock_open_all(s, DPSOCK_PL_OP_LISTEN, s->laddr, s->lport,
			       s->ip6 ? DPSOCK_PL_CMD_F_IP6 :
			       s->any6 && shim_serves_ip6() ? DPSOCK_PL_CMD_F_DUAL : 0);
	if (r < 0)
		return r;
	/* a listener on every address ("::", 0.0.0.0): the kernel socket
	 * listens too, for what reaches the kernel (IPv6, 127.0.0.1, the
	 * kernel's other interfaces), as Linux's wildcard listener hears
	 * them all; with DPSOCK_LOOPBACK, one on 127.0.0.1 too, for the
	 * kernel's clients of it (dpsock's reach it through dpsockd) */
	if (s->any6 || (!s->ip6 && s->laddr == htonl(INADDR_ANY)) ||
	    (shim_env.loopback > 0 && s->laddr == htonl(INADDR_LOOPBACK))) {
		if (REAL(listen)(fd, backlog) == 0)
			s->khalf = 1;
		else
			SHIM_LOG(WARNING, "listen of the kernel half: %s: dpsockd's side only",
				 strerror(errno));
	}
	shim_sock_set_offloaded(s, SHIM_TCP_LISTEN);
	return 0;
}

HOOK int
listen(int fd, int backlog)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r;

	if (s == NULL || s->type != SOCK_STREAM || s->mode == SHIM_KERNEL)
		return REAL(listen)(fd, backlog);
	pthread_mutex_lock(&s->lock);
	r = listen_locked(fd, s, backlog);
	pthread_mutex_unlock(&s->lock);
	if (r == SHIM_TO_KERNEL)
		return REAL(listen)(fd, backlog);
	return r < 0 ? shim_fail(-r) : 0;
}

/* connect() on a UDP socket: set or (AF_UNSPEC) clear the peer. */
static int
udp_set_peer(struct shim_sock *s, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in sin;

	if (addr != NULL && len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC) {
		s->udp_connected = 0;
		return 0;
	}
	if (addr == NULL || len < sizeof(sa_family_t))
		return -EINVAL;
	if (s->udp6 && shim_addr_in6(s, addr, len, SHIM_ADDR_PEER, &s->raddr6, &s->rport)) {
		s->peer6 = 1;
		s->udp_connected = 1;
		return 0;
	}
	if (shim_addr_in(s, addr, len, SHIM_ADDR_PEER, &sin) != 0)
		return addr->sa_family == s->family &&
		       len < (s->family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(sin)) ?
		       -EINVAL : -EAFNOSUPPORT;
	s->raddr = sin.sin_addr.s_addr;
	s->rport = sin.sin_port;
	s->peer6 = 0;
	s->udp_connected = 1;
	return 0;
}

/* Caller holds s->lock; returns 0, -errno, SHIM_TO_KERNEL or SHIM_BLOCKED. */
static int
connect_locked(struct shim_sock *s, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in sin;
	int r;

	if (s->mode == SHIM_UNDECIDED) {
		int role = s->type == SOCK_STREAM ? DPSOCK_PL_TCP_CLIENT : DPSOCK_PL_UDP_CONNECT;
		struct in6_addr a6;
		uint16_t p6;

		/* to IPv6 proper, unless bound to an IPv4 (mapped) address */
		if (shim_addr_in6(s, addr, len, SHIM_ADDR_PEER, &a6, &p6) &&
		    (!s->bound || s->ip6) && shim_offload_decide6(role, &a6, p6) == 1) {
			if (s->type == SOCK_STREAM)
				return shim_tcp_connect6(s, &a6, p6);
			r = shim_udp_ensure_bound(s, role, 0, 0);
			if (r < 0)
				return r;
			return udp_set_peer(s, addr, len);
		}
		if (shim_addr_in(s, addr, len, SHIM_ADDR_PEER, &sin) != 0 ||
		    (s->bound && s->ip6) ||
		    !shim_offload_decide(role, sin.sin_addr.s_addr, sin.sin_port,
					 s->bound ? s->laddr : 0, s->bound ? s->lport : 0)) {
			/* a TCP connect the kernel makes: its socket from now on */
			if (addr != NULL && len >= sizeof(sa_family_t) &&
			    addr->sa_family == s->family && s->type == SOCK_STREAM)
				s->mode = SHIM_KERNEL;
			return SHIM_TO_KERNEL;
		}
		if (s->type == SOCK_STREAM)
			return shim_tcp_connect(s, &sin);
		r = shim_udp_ensure_bound(s, DPSOCK_PL_UDP_CONNECT, sin.sin_addr.s_addr,
					  sin.sin_port);
		if (r < 0)
			return r;
	}
	if (s->mode == SHIM_KERNEL)
		return SHIM_TO_KERNEL;
	if (s->type == SOCK_DGRAM)
		return udp_set_peer(s, addr, len);
	if (s->mode == SHIM_TCP_LISTEN)
		return -EISCONN;
	return shim_tcp_connect_again(s);
}

HOOK int
connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r;

	if (s == NULL || s->mode == SHIM_KERNEL)
		return REAL(connect)(fd, addr, len);
	pthread_mutex_lock(&s->lock);
	r = connect_locked(s, addr, len);
	pthread_mutex_unlock(&s->lock);
	if (r == SHIM_BLOCKED)
		r = shim_tcp_connect_wait(s);
	if (r == SHIM_TO_KERNEL)
		return REAL(connect)(fd, addr, len);
	return r < 0 ? shim_fail(-r) : 0;
}

HOOK int
accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(accept4)(fd, addr, alen, flags);
	if (s->mode != SHIM_TCP_LISTEN)
		return shim_fail(s->type == SOCK_STREAM ? EINVAL : EOPNOTSUPP);
	return shim_tcp_accept(fd, s, addr, alen, flags);
}

HOOK int
accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(accept)(fd, addr, alen);
	if (s->mode != SHIM_TCP_LISTEN)
		return shim_fail(s->type == SOCK_STREAM ? EINVAL : EOPNOTSUPP);
	return shim_tcp_accept(fd, s, addr, alen, 0);
}

/* ---- data hooks ------------------------------------------------------------------ */

static ssize_t
sock_sendv(struct shim_sock *s, const struct iovec *iov, int n, int flags,
	   const struct sockaddr *to, socklen_t tolen)
{
	if (s->mode == SHIM_UDP)
		return shim_udp_send(s, iov, n, flags, to, tolen);
	return shim_tcp_send(s, iov, n, flags);
}

/* A UDP socket with a kernel half (AF_INET6 bound to "::"): a datagram
 * from dpsockd or, when it has none, from the kernel socket (IPv6, the
 * kernel's own interfaces); a blocking call waits for either. m: the
 * program's msghdr (recvmsg) or NULL. *kern: the kernel answered, and
 * filled m's control messages and flags itself. */
static ssize_t
udp_recv_both(int fd, struct shim_sock *s, const struct iovec *iov, int n, int flags,
	      struct sockaddr *from, socklen_t *fromlen, int *mflags,
	      struct shim_dgram *hdr, struct msghdr *m, bool *kern)
{
	bool block = !s->nonblock && !(flags & MSG_DONTWAIT);

	for (;;) {
		struct msghdr km = { .msg_name = from, .msg_namelen = fromlen ? *fromlen : 0,
				     .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n };
		ssize_t r = shim_udp_recv(s, iov, n, flags | MSG_DONTWAIT, from, fromlen, mflags, hdr);
		int w;

		if (r >= 0 || errno != EAGAIN)
			return r;
		if (m != NULL) {
			km.msg_control = m->msg_control;
			km.msg_controllen = m->msg_controllen;
		}
		r = REAL(recvmsg)(fd, &km, flags | MSG_DONTWAIT);
		if (r >= 0) {
			if (fromlen != NULL)
				*fromlen = km.msg_namelen;
			if (m != NULL) {
				m->msg_controllen = km.msg_controllen;
				m->msg_flags = km.msg_flags;
			}
			*kern = true;
			return r;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (!block)
			return shim_fail(EAGAIN);
		w = shim_wait_sock_k(s, fd, POLLIN, s->rcvtimeo_ms);
		if (w == -EINTR)
			return shim_fail(EINTR);
		if (w == 0)
			return shim_fail(EAGAIN);   /* SO_RCVTIMEO */
		/* ready, or dpsockd gone (the next look reports it) */
	}
}

static ssize_t
sock_recvv(int fd, struct shim_sock *s, const struct iovec *iov, int n, int flags,
	   struct sockaddr *from, socklen_t *fromlen, int *mflags, struct shim_dgram *hdr,
	   struct msghdr *m, bool *kern)
{
	bool k = false;

	if (mflags != NULL)
		*mflags = 0;
	if (s->mode == SHIM_UDP && s->khalf)
		return udp_recv_both(fd, s, iov, n, flags, from, fromlen, mflags, hdr, m,
				     kern != NULL ? kern : &k);
	if (s->mode == SHIM_UDP)
		return shim_udp_recv(s, iov, n, flags, from, fromlen, mflags, hdr);
	if (fromlen != NULL)
		*fromlen = 0;
	return shim_tcp_recv(s, iov, n, flags);
}


/* A datagram of an offloaded AF_INET6 socket to IPv6 that dpsockd does not
 * carry for it (a socket bound for IPv4 alone; link-local, ::1): the
 * kernel socket sends it. */
static bool
udp_to_kernel(const struct shim_sock *s, const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_in v4;
	struct in6_addr a6;
	uint16_t p6;

	return s->family == AF_INET6 && s->mode == SHIM_UDP && to != NULL &&
	       tolen >= sizeof(struct sockaddr_in6) && to->sa_family == AF_INET6 &&
	       shim_addr_in(s, to, tolen, SHIM_ADDR_PEER, &v4) != 0 &&
	       !(s->udp6 && shim_addr_in6(s, to, tolen, SHIM_ADDR_PEER, &a6, &p6));
}

HOOK ssize_t
send(int fd, const void *buf, size_t len, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { (void *)buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(send)(fd, buf, len, flags);
	return sock_sendv(s, &v, 1, flags, NULL, 0);
}

HOOK ssize_t
sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { (void *)buf, len };

	if (s != NULL && s->mode == SHIM_UNDECIDED && !shim_udp_first_send(s, to, tolen))
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	if (!shim_sock_offloaded(s) || udp_to_kernel(s, to, tolen))
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	return sock_sendv(s, &v, 1, flags, s->mode == SHIM_UDP ? to : NULL, tolen);
}

HOOK ssize_t
sendmsg(int fd, const struct msghdr *m, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (s != NULL && s->mode == SHIM_UNDECIDED && m != NULL &&
	    !shim_udp_first_send(s, m->msg_name, m->msg_namelen))
		return REAL(sendmsg)(fd, m, flags);
	if (!shim_sock_offloaded(s) || m == NULL || udp_to_kernel(s, m->msg_name, m->msg_namelen))
		return REAL(sendmsg)(fd, m, flags);
	if (m->msg_iovlen > IOV_MAX)
		return shim_fail(EMSGSIZE);
	return sock_sendv(s, m->msg_iov, (int)m->msg_iovlen, flags,
			  s->mode == SHIM_UDP ? m->msg_name : NULL, m->msg_namelen);
}

HOOK int
sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	unsigned int i;

	if (s != NULL && s->mode == SHIM_UNDECIDED && vec != NULL && vlen > 0 &&
	    !shim_udp_first_send(s, vec[0].msg_hdr.msg_name, vec[0].msg_hdr.msg_namelen))
		return REAL(sendmmsg)(fd, vec, vlen, flags);
	if (!shim_sock_offloaded(s))
		return REAL(sendmmsg)(fd, vec, vlen, flags);
	if (vlen > UIO_MAXIOV)
		vlen = UIO_MAXIOV;
	for (i = 0; i < vlen; i++) {
		ssize_t r = sendmsg(fd, &vec[i].msg_hdr, flags);

		if (r < 0)
			return i > 0 ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

HOOK ssize_t
write(int fd, const void *buf, size_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { (void *)buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(write)(fd, buf, len);
	return sock_sendv(s, &v, 1, 0, NULL, 0);
}

HOOK ssize_t
writev(int fd, const struct iovec *iov, int n)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(writev)(fd, iov, n);
	if (n < 0 || n > IOV_MAX)
		return shim_fail(EINVAL);
	return sock_sendv(s, iov, n, 0, NULL, 0);
}

HOOK ssize_t
recv(int fd, void *buf, size_t len, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(recv)(fd, buf, len, flags);
	return sock_recvv(fd, s, &v, 1, flags, NULL, NULL, NULL, NULL, NULL, NULL);
}

HOOK ssize_t
recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
	return sock_recvv(fd, s, &v, 1, flags, from, fromlen, NULL, NULL, NULL, NULL);
}

HOOK ssize_t
recvmsg(int fd, struct msghdr *m, int flags)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct shim_dgram h;
	bool kern = false;
	int mf = 0;
	ssize_t r;

	if (!shim_sock_offloaded(s) || m == NULL)
		return REAL(recvmsg)(fd, m, flags);
	if (m->msg_iovlen > IOV_MAX)
		return shim_fail(EMSGSIZE);
	r = sock_recvv(fd, s, m->msg_iov, (int)m->msg_iovlen, flags,
		       m->msg_name, m->msg_name != NULL ? &m->msg_namelen : NULL, &mf, &h, m, &kern);
	if (r >= 0 && !kern) {
		if (s->mode == SHIM_UDP) {
			shim_udp_cmsgs(s, &h, m, &mf);
		} else {
			m->msg_controllen = 0;
			m->msg_namelen = 0;
		}
		m->msg_flags = mf;
	}
	return r;
}

HOOK int
recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *tmo)
{
	struct shim_sock *s = shim_sock_get(fd);
	unsigned int i;

	if (!shim_sock_offloaded(s))
		return REAL(recvmmsg)(fd, vec, vlen, flags, tmo);
	if (vlen > UIO_MAXIOV)
		vlen = UIO_MAXIOV;
	for (i = 0; i < vlen; i++) {
		int f = flags & ~MSG_WAITFORONE;
		ssize_t r;

		/* after the first datagram: MSG_WAITFORONE, or a time-out that
		 * the shim does not measure, turn the rest non-blocking */
		if (i > 0 && ((flags & MSG_WAITFORONE) || tmo != NULL))
			f |= MSG_DONTWAIT;
		r = recvmsg(fd, &vec[i].msg_hdr, f);
		if (r < 0)
			return i > 0 ? (int)i : -1;
		vec[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

HOOK ssize_t
read(int fd, void *buf, size_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct iovec v = { buf, len };

	if (!shim_sock_offloaded(s))
		return REAL(read)(fd, buf, len);
	return sock_recvv(fd, s, &v, 1, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

HOOK ssize_t
readv(int fd, const struct iovec *iov, int n)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(readv)(fd, iov, n);
	if (n < 0 || n > IOV_MAX)
		return shim_fail(EINVAL);
	return sock_recvv(fd, s, iov, n, 0, NULL, NULL, NULL, NULL, NULL, NULL);
}

HOOK ssize_t
__read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		return REAL(__read_chk)(fd, buf, len, buflen);   /* aborts, as libc */
	if (!shim_sock_offloaded(shim_sock_get(fd)))
		return REAL(__read_chk)(fd, buf, len, buflen);
	return read(fd, buf, len);
}

HOOK ssize_t
__recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen || !shim_sock_offloaded(shim_sock_get(fd)))
		return REAL(__recv_chk)(fd, buf, len, buflen, flags);
	return recv(fd, buf, len, flags);
}

HOOK ssize_t
__recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
	       struct sockaddr *from, socklen_t *fromlen)
{
	if (len > buflen || !shim_sock_offloaded(shim_sock_get(fd)))
		return REAL(__recvfrom_chk)(fd, buf, len, buflen, flags, from, fromlen);
	return recvfrom(fd, buf, len, flags, from, fromlen);
}

static ssize_t
do_sendfile(int out, struct shim_sock *s, int in, off_t *offset, size_t count)
{
	unsigned char buf[65536];
	size_t done = 0;
	off_t pos = offset != NULL ? *offset : lseek(in, 0, SEEK_CUR);

	if (pos < 0)
		return -1;
	while (done < count) {
		size_t want = count - done < sizeof(buf) ? count - done : sizeof(buf);
		ssize_t r = pread(in, buf, want, pos), w;

		if (r < 0) {
			if (done > 0)
				break;
			return -1;
		}
		if (r == 0)
			break;
		w = sock_sendv(s, &(struct iovec){ buf, (size_t)r }, 1, 0, NULL, 0);
		if (w < 0) {
			if (done > 0)
				break;
			return -1;
		}
		done += (size_t)w;
		pos += w;
		if (w < r)
			break;
	}
	if (offset != NULL)
		*offset = pos;
	else if (lseek(in, pos, SEEK_SET) < 0)
		return -1;
	(void)out;
	return (ssize_t)done;
}

HOOK ssize_t
sendfile(int out, int in, off_t *offset, size_t count)
{
	struct shim_sock *s = shim_sock_get(out);

	if (!shim_sock_offloaded(s))
		return REAL(sendfile)(out, in, offset, count);
	return do_sendfile(out, s, in, offset, count);
}

HOOK ssize_t
sendfile64(int out, int in, off64_t *offset, size_t count)
{
	struct shim_sock *s = shim_sock_get(out);

	if (!shim_sock_offloaded(s))
		return REAL(sendfile64)(out, in, offset, count);
	return do_sendfile(out, s, in, (off_t *)offset, count);
}

/* ---- shutdown, close, names, options ---------------------------------------------- */

HOOK int
shutdown(int fd, int how)
{
	struct shim_sock *s = shim_sock_get(fd);
	struct shim_thread *t;
	struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_SHUTDOWN };
	struct dpsock_pl_reply r;
	uint32_t st;
	int e;

	if (!shim_sock_offloaded(s))
		return REAL(shutdown)(fd, how);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return shim_fail(EINVAL);
	if (s->mode == SHIM_TCP_LISTEN) {
		if (how != SHUT_WR)
			s->shut_rd = 1;
		return 0;
	}
	if (s->mode == SHIM_UDP) {
		if (!s->udp_connected)
			return shim_fail(ENOTCONN);
		if (how != SHUT_WR)
			s->shut_rd = 1;
		if (how != SHUT_RD)
			s->shut_wr = 1;
		return 0;
	}
	st = __atomic_load_n(&shim_sock_slot(s, 0)->state, __ATOMIC_ACQUIRE);
	if (st != DPSOCK_PL_ST_ESTABLISHED)
		return shim_fail(ENOTCONN);
	t = shim_thread_get();
	if (t == NULL)
		return -1;
	c.slot = s->slot[0];
	c.gen = s->gen[0];
	c.arg[0] = how;
	e = shim_cmd_call(t, shim_slot_worker(s->slot[0]), &c, &r);
	if (e == 0)
		e = r.result;
	if (e < 0)
		return shim_fail(-e == ECONNABORTED ? ENOTCONN : -e);
	if (how != SHUT_WR)
		s->shut_rd = 1;
	if (how != SHUT_RD)
		s->shut_wr = 1;
	return 0;
}

/* The last reference to a shadow object lets go of what every part of the
 * shim holds of it: fork's tracking, the extra API's receive state, the
 * slots (CLOSE to the workers once no process of the group holds it). */
void
shim_sock_unref(struct shim_sock *s)
{
	if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (shim_sock_offloaded(s)) {
		shim_fork_untrack(s);
		shim_xrx_release(s);
		shim_sock_release_slots(s);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->mc_pending);
	free(s);
}

/* What close(fd) does to the shadow object, before the kernel fd closes:
 * out of the table, out of epoll sets and completion polling, one
 * reference less (the last lets go of the slots). false: not ours. */
static bool
shim_fd_release(int fd)
{
	struct shim_sock *s = shim_fdtab_take(fd);

	if (s == NULL)
		return false;
	shim_epoll_fd_closed(fd, s);
	shim_comp_fd_closed(fd, s);
	shim_sock_unref(s);
	return true;
}

/* exit(): the kernel closes every descriptor of the process, and a TCP
 * connection closed that way still sends what it was given, then FIN:
 * let go of every offloaded socket as close() does, so that the workers
 * close them in order (what their tx FIFOs hold goes out first, as an
 * orphan once the group ends) instead of resetting them when the group
 * ends. Another process of the group still holding a socket keeps it
 * (shim_sock_release_slots). Then drain the thread's rings (the main
 * thread's TLS destructor does not run). _exit() and a fatal signal skip
 * this: the group's end resets what is left, as dpsockd does for a
 * program that dies. */
__attribute__((destructor)) static void
process_exit(void)
{
	if (__atomic_load_n(&shim_proc.state, __ATOMIC_ACQUIRE) == 1 && !shim_daemon_gone())
		shim_fd_release_all(shim_fd_release);
	shim_thread_drain_self();
}

HOOK int
close(int fd)
{
	if (!shim_fd_release(fd) && shim_epoll_is(fd))
		shim_epoll_close(fd);
	return REAL(close)(fd);
}

/* syscall(2): a close made through it (libuv's, so Node.js's, on Linux)
 * lets go of the descriptor's shadow as close() does, else the number,
 * once the kernel hands it out again, would still name the old socket.
 * Every other call passes its six argument registers on unchanged, as
 * glibc's syscall() reads them. */
HOOK long
syscall(long nr, ...)
{
	va_list ap;
	long a[6];

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_close)
		return close((int)a[0]);
	return REAL(syscall)(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static int
put_name(const struct shim_sock *s, struct sockaddr *addr, socklen_t *len, uint32_t a,
	 const void *a6, uint16_t p)
{
	if (addr == NULL || len == NULL)
		return shim_fail(EFAULT);
	if ((int)*len < 0)
		return shim_fail(EINVAL);
	shim_addr_out(s, a, a6, p, addr, len);
	return 0;
}

HOOK int
getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (s == NULL || (!shim_sock_offloaded(s) && !(s->bound && s->mode == SHIM_UNDECIDED)))
		return REAL(getsockname)(fd, addr, len);
	if (s->mode == SHIM_TCP_CONN) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);

		const void *a6 = shim_slot_laddr6(sl);

		return put_name(s, addr, len, sl->laddr ? sl->laddr : s->laddr,
				a6 != NULL ? a6 : s->ip6 ? &s->laddr6 : NULL,
				sl->lport ? sl->lport : s->lport);
	}
	return put_name(s, addr, len, s->laddr, s->ip6 ? &s->laddr6 : NULL, s->lport);
}

HOOK int
getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct shim_sock *s = shim_sock_get(fd);

	if (!shim_sock_offloaded(s))
		return REAL(getpeername)(fd, addr, len);
	if (s->mode == SHIM_UDP)
		return s->udp_connected ? put_name(s, addr, len, s->raddr,
						   s->peer6 ? &s->raddr6 : NULL, s->rport) :
					  shim_fail(ENOTCONN);
	if (s->mode == SHIM_TCP_CONN) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (st == DPSOCK_PL_ST_ESTABLISHED ||
		    (st == DPSOCK_PL_ST_CLOSED && sl->err == 0))
			return put_name(s, addr, len, sl->raddr, shim_slot_raddr6(sl), sl->rport);
	}
	return shim_fail(ENOTCONN);
}

HOOK int
getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct shim_sock *s;
	int v;

	if (__builtin_expect(fd == -1, 0) && level == SOL_SOCKET && name == DPSOCK_SO_EXTRA_API)
		return shim_extra_getsockopt(val, len);   /* dpsock_get_api() */
	s = shim_sock_get(fd);
	if (shim_sock_offloaded(s) && s->mode != SHIM_UDP && level == IPPROTO_TCP &&
	    (name == TCP_INFO || name == TCP_CONGESTION) && val != NULL && len != NULL) {
		/* the worker's connection; once it is gone, the kernel
		 * socket's answer (state CLOSE) */
		if ((name == TCP_INFO ? shim_tcp_info(s, val, len) : shim_tcp_congestion(s, val, len)) == 0)
			return 0;
		return REAL(getsockopt)(fd, level, name, val, len);
	}
	if (!shim_sock_offloaded(s) || val == NULL || len == NULL || *len < sizeof(int))
		return REAL(getsockopt)(fd, level, name, val, len);
	if (level == SOL_SOCKET && name == SO_ERROR) {
		v = 0;
		if (s->mode == SHIM_TCP_CONN)
			v = shim_conn_take_err(s);
		if (v == 0 && shim_daemon_gone() && !s->err_taken) {
			s->err_taken = 1;
			shim_sock_gone_seen(s);
			v = ECONNRESET;
		}
	} else if (level == SOL_SOCKET && name == SO_ACCEPTCONN) {
		v = s->mode == SHIM_TCP_LISTEN;
	} else if (level == IPPROTO_IP && s->mode == SHIM_UDP &&
		   shim_mc_getsockopt(s, name, val, len) == 0) {
		return 0;
	} else {
		/* every other option was set on the kernel socket too */
		return REAL(getsockopt)(fd, level, name, val, len);
	}
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

/* SO_RCVBUF / SO_SNDBUF as the kernel socket reports them once set
 * (doubled, capped by net.core.rmem_max / wmem_max: Linux's limits). */
static int
kernel_buf(int fd, int name, int v)
{
	socklen_t l = sizeof(v);
	int k;

	return REAL(getsockopt)(fd, SOL_SOCKET, name, &k, &l) == 0 ? k : v;
}

/* Remember an option the kernel accepted; returns 1 when the workers
 * must hear of it too. Caller holds s->lock. */
static int
remember_opt(int fd, struct shim_sock *s, int level, int name, const void *val, socklen_t len,
	     int v)
{
	bool udp = s->type == SOCK_DGRAM;

	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_REUSEADDR: s->reuseaddr = v; return 0;
		case SO_REUSEPORT: s->reuseport = v; return 0;
		case SO_KEEPALIVE: s->keepalive = v != 0; return 1;
		case SO_RCVBUF:
			s->rcvbuf = v;
			s->rcvbuf_eff = kernel_buf(fd, SO_RCVBUF, v);
			return udp;
		case SO_SNDBUF:
			s->sndbuf = v;
			s->sndbuf_eff = kernel_buf(fd, SO_SNDBUF, v);
			return 0;
		case SO_TIMESTAMP_OLD:
		case SO_TIMESTAMP_NEW:
		case SO_TIMESTAMPNS_OLD:
		case SO_TIMESTAMPNS_NEW:
			/* one of them at a time, as Linux; turning either off
			 * turns off both */
			s->ts_opt = v ? name : 0;
			return 0;
		case SO_TIMESTAMPING_OLD:
		case SO_TIMESTAMPING_NEW:
			if (len >= sizeof(int))
				s->ts_flags = v; /* the flags (or struct so_timestamping's) */
			s->ts_ing_opt = name;
			return 0;
		case SO_LINGER:
			if (len >= sizeof(struct linger))
				memcpy(&s->linger, val, sizeof(s->linger));
			return 0;
		case SO_RCVTIMEO:
		case SO_SNDTIMEO:
			if (len >= sizeof(struct timeval)) {
				struct timeval tv;
				long ms;

				memcpy(&tv, val, sizeof(tv));
				/* the kernel accepted it; 0 = no time-out; at least
				 * 1 ms when shorter */
				ms = (long)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
				ms = tv.tv_sec == 0 && tv.tv_usec == 0 ? -1 :
				     ms > 0x7fffffffL ? 0x7fffffffL : ms;
				if (name == SO_RCVTIMEO)
					s->rcvtimeo_ms = (int)ms;
				else
					s->sndtimeo_ms = (int)ms;
			}
			return 0;
		default:
			return 0;
		}
	}
	if (level == IPPROTO_TCP) {
		switch (name) {
		case TCP_NODELAY: s->nodelay = v != 0; return 1;
		case TCP_KEEPIDLE: s->keepidle = v; return 1;
		case TCP_KEEPINTVL: s->keepintvl = v; return 1;
		case TCP_KEEPCNT: s->keepcnt = v; return 1;
		case TCP_CONGESTION:
			memset(s->cc, 0, sizeof(s->cc));
			memcpy(s->cc, val, len < sizeof(s->cc) - 1 ? len : sizeof(s->cc) - 1);
			return 1;
		default: return 0;
		}
	}
	if (level == IPPROTO_IPV6) {
		switch (name) {
		case IPV6_V6ONLY: s->v6only = v != 0; return 0;
		case IPV6_RECVPKTINFO: s->pktinfo6 = v != 0; return 0;
		case IPV6_MULTICAST_HOPS: s->mc6_hops = v; return udp;
		case IPV6_MULTICAST_LOOP: s->mc6_loop = v != 0; return udp;
		case IPV6_MULTICAST_ALL: s->mc6_all = v != 0; return udp;
		/* the kernel took the index: dpsockd's port of it, or the
		 * route's (0, an interface not dpsockd's) */
		case IPV6_MULTICAST_IF: s->mc6_if = shim_mc_iface6(v); return udp;
		default: return 0;
		}
	}
	if (level != IPPROTO_IP)
		return 0;
	switch (name) {
	case IP_TOS: s->tos = v; return 1;
	case IP_TTL: s->ttl = v; return 1;
	case IP_PKTINFO: s->pktinfo = v != 0; return 0;
	case IP_MULTICAST_TTL: s->mc_ttl = v; return udp;
	case IP_MULTICAST_LOOP: s->mc_loop = v != 0; return udp;
	case IP_MULTICAST_ALL: s->mc_all = v != 0; return udp;
	default: return 0;
	}
}

HOOK int
setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r, v = 0, fwd;

	/* memberships and IP_MULTICAST_IF name dpsockd's interfaces, which the
	 * kernel socket does not have (mcast.c) */
	if (s != NULL && s->type == SOCK_DGRAM && s->mode != SHIM_KERNEL &&
	    shim_mc_optname(level, name)) {
		r = shim_mc_setsockopt(s, fd, level, name, val, len);
		if (r != SHIM_TO_KERNEL)
			return r < 0 ? shim_fail(-r) : 0;
	}
	r = REAL(setsockopt)(fd, level, name, val, len);
	if (r < 0 || s == NULL || val == NULL)
		return r;
	/* as the kernel reads them: an int, or (IP options) one byte */
	if (len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	else if (len >= 1 && level == IPPROTO_IP)
		v = *(const unsigned char *)val;
	/* the FORCE forms size the same buffers past rmem_max / wmem_max
	 * (the kernel checked CAP_NET_ADMIN): treated as the plain ones */
	if (level == SOL_SOCKET && name == SO_RCVBUFFORCE)
		name = SO_RCVBUF;
	else if (level == SOL_SOCKET && name == SO_SNDBUFFORCE)
		name = SO_SNDBUF;
	pthread_mutex_lock(&s->lock);
	fwd = remember_opt(fd, s, level, name, val, len, v);
	if (level == SOL_SOCKET && name == SO_RCVBUF)
		v = s->rcvbuf_eff;
	else if (level == IPPROTO_IPV6 && name == IPV6_MULTICAST_IF)
		v = s->mc6_if;
	if (fwd && shim_sock_offloaded(s) && (s->mode == SHIM_TCP_CONN || s->mode == SHIM_UDP)) {
		struct shim_thread *t = shim_thread_get();

		/* the kernel accepted it; a worker that cannot apply it only
		 * logs (the app sees what the kernel said) */
		if (t != NULL && (r = shim_sock_setopt_all(t, s, level, name, v)) < 0)
			SHIM_LOG(DEBUG, "dpsockd: option %d/%d: %s", level, name, strerror(-r));
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* ---- fcntl, ioctl, dup ---------------------------------------------------------- */

static void
dup_track(int oldfd, int newfd)
{
	struct shim_sock *s, *old;

	if (newfd < 0 || newfd == oldfd)
		return;
	old = shim_fdtab_take(newfd);        /* dup2 over an fd of ours closed it */
	if (old != NULL) {
		shim_epoll_fd_closed(newfd, old);
		shim_sock_unref(old);
	}
	s = shim_sock_get(oldfd);
	if (s == NULL)
		return;
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
	if (shim_fdtab_set(newfd, s) < 0)
		shim_sock_unref(s);
}

static int
fcntl_common(int fd, int cmd, uintptr_t arg, bool is64)
{
	struct shim_sock *s = shim_sock_get(fd);
	int r = is64 ? REAL(fcntl64)(fd, cmd, arg) : REAL(fcntl)(fd, cmd, arg);

	if (r < 0 || s == NULL)
		return r;
	if (cmd == F_SETFL)
		s->nonblock = (arg & O_NONBLOCK) != 0;
	else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		dup_track(fd, r);
	return r;
}

HOOK int
fcntl(int fd, int cmd, ...)
{
	va_list ap;
	uintptr_t arg;

	va_start(ap, cmd);
	arg = va_arg(ap, uintptr_t);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, false);
}

HOOK int
fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	uintptr_t arg;

	va_start(ap, cmd);
	arg = va_arg(ap, uintptr_t);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, true);
}

HOOK int
ioctl(int fd, unsigned long req, ...)
{
	struct shim_sock *s = shim_sock_get(fd);
	va_list ap;
	void *arg;
	int r, v;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!shim_sock_offloaded(s) || (req != FIONREAD && req != SIOCOUTQ)) {
		r = REAL(ioctl)(fd, req, arg);
		if (r == 0 && s != NULL && req == FIONBIO && arg != NULL)
			s->nonblock = *(int *)arg != 0;
		return r;
	}
	if (arg == NULL)
		return shim_fail(EFAULT);
	if (s->mode == SHIM_TCP_LISTEN)
		return shim_fail(EINVAL);
	if (s->mode == SHIM_TCP_CONN) {
		const struct dpsock_pl_seg *g = shim_seg();

		v = (int)(req == FIONREAD ? shim_rx_level(s, 0)
					  : shim_fifo_level(shim_slot_tx(s->slot[0]), g->tx_fifo_size));
	} else if (req == FIONREAD) {
		/* UDP: size of the next datagram, as Linux */
		char peek;
		ssize_t n = shim_udp_recv(s, &(struct iovec){ &peek, 1 }, 1, MSG_PEEK | MSG_TRUNC |
				     MSG_DONTWAIT, NULL, NULL, NULL, NULL);

		v = n < 0 ? 0 : (int)n;
	} else {
		v = (int)shim_fifo_level(shim_slot_tx(s->slot[__atomic_load_n(&s->udp_tx_worker, __ATOMIC_RELAXED) % s->nslots]),
				    shim_seg()->tx_fifo_size);
	}
	memcpy(arg, &v, sizeof(v));
	return 0;
}

HOOK int
dup(int fd)
{
	int r = REAL(dup)(fd);

	if (r >= 0)
		dup_track(fd, r);
	return r;
}

HOOK int
dup2(int fd, int fd2)
{
	int r = REAL(dup2)(fd, fd2);

	if (r >= 0)
		dup_track(fd, r);
	return r;
}

HOOK int
dup3(int fd, int fd2, int flags)
{
	int r = REAL(dup3)(fd, fd2, flags);

	if (r >= 0)
		dup_track(fd, r);
	return r;
}
