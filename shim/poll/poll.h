/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * poll.h — poll/: poll, select and epoll over kernel and offloaded
 * descriptors. poll, ppoll, select and pselect (poll.c) and epoll
 * (epoll.c) look at offloaded sockets through io/'s readiness and wait
 * through link/'s waiters. What calls.c uses of it: an epoll instance
 * closed, a descriptor closed (it leaves every epoll set). Nothing below
 * calls it.
 */
#ifndef DPSOCK_SHIM_POLL_H
#define DPSOCK_SHIM_POLL_H

#include "sock/sock.h"

/* ---- readiness over many descriptors (poll.c, epoll.c) ------------------------ */

void shim_epoll_fd_closed(int fd, struct shim_sock *s);
void shim_epoll_close(int epfd);
bool shim_epoll_is(int epfd);

#endif /* DPSOCK_SHIM_POLL_H */
