/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gone.c — what an offloaded socket becomes once dpsockd is gone (stopped,
 * or killed: the control socket hangs up). Its end is reported once, as
 * docs/preload.md's table of errors says: the call that finds it fails
 * (recv ECONNRESET, accept ECONNABORTED, send EPIPE, connect ECONNREFUSED),
 * or a readiness wait reports the socket with ERR|HUP. After that:
 *
 *   - a UDP socket or a listener becomes its kernel socket, which holds the
 *     address and port the program bound (IP_FREEBIND where the address was
 *     dpsockd's alone; calls.c bind): a listener listens there. Calls then
 *     go to libc: a blocked call blocks in the kernel, a program that calls
 *     again after the error (sockperf's and nginx's loops) does not spin,
 *     and where the kernel owns the address (a NIC shared with dpsockd) the
 *     program is served again, by the kernel;
 *   - a TCP connection stays what a reset connection is on Linux: its error
 *     once, then EOF on receive and EPIPE on send, always ready.
 *
 * The switch is made by the next hook that looks the socket up (fd.c's
 * shim_sock_get, which has the descriptor), or by epoll right after its
 * report (epoll.c), never inside the call that reported.
 */
#include <string.h>

#include "sock/sock.h"

void
shim_sock_gone_seen(struct shim_sock *s)
{
	int live = SHIM_GONE_LIVE;

	__atomic_compare_exchange_n(&s->gone, &live, SHIM_GONE_SEEN, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

bool
shim_sock_fall_back(int fd, struct shim_sock *s)
{
	static int logged;
	int seen = SHIM_GONE_SEEN, saved = errno;

	/* one thread makes the switch; others meanwhile still find the
	 * daemon gone through the offloaded paths and report it again */
	if (!__atomic_compare_exchange_n(&s->gone, &seen, SHIM_GONE_DONE, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return false;
	switch (__atomic_load_n(&s->mode, __ATOMIC_ACQUIRE)) {
	case SHIM_TCP_LISTEN:
		if (REAL(listen)(fd, s->backlog) < 0)
			SHIM_LOG(WARNING, "fd %d: dpsockd is gone and the kernel socket cannot listen "
				 "(%s): accept fails there", fd, strerror(errno));
		/* fall through */
	case SHIM_UDP:
		/* release: the kernel socket's state (listening) before anyone
		 * takes the kernel path */
		__atomic_store_n(&s->mode, SHIM_KERNEL, __ATOMIC_RELEASE);
		if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
			SHIM_LOG(NOTICE, "dpsockd '%s' is gone: UDP sockets and listeners carry on as "
				 "kernel sockets, connections are reset", shim_env.name);
		errno = saved;   /* a lookup changes no errno */
		return true;
	default:
		return false;   /* a connection stays reset */
	}
}
