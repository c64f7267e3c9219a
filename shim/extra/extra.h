/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * extra.h — extra/: the extra API's table and its completion polling.
 * The table a program finds with dpsock_get_api() and the calls that are
 * not about receiving: add_conf_rule, thread_offload, dump_fd_stats,
 * send_dummy (extra.c); completion polling over a thread's sockets
 * (comp.c). Its receive side, zero-copy receive and receive callbacks, is
 * zcopy.c in io/: the plain receive paths and readiness go through it. What
 * calls.c uses of it; nothing below calls it (offload/ tells comp.c of a
 * socket offloaded through shim_sock_offloaded_hook).
 */
#ifndef DPSOCK_SHIM_EXTRA_H
#define DPSOCK_SHIM_EXTRA_H

#include "sock/sock.h"

/* This thread may offload the sockets it creates (thread_offload). */
extern __thread int shim_thread_no_offload;
/* getsockopt(-1, SOL_SOCKET, DPSOCK_SO_EXTRA_API): the table. */
int shim_extra_getsockopt(void *val, socklen_t *len);
/* Completion sets: a descriptor closed (it leaves every set). */
void shim_comp_fd_closed(int fd, struct shim_sock *s);

#endif /* DPSOCK_SHIM_EXTRA_H */
