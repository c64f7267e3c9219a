/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link_priv.h — what the files of link/ share and nothing else uses: the
 * control socket's simple requests (attach.c, for the channels and
 * waiters) and the futex on a segment word (slot.c, for the waiters).
 */
#ifndef DPSOCK_SHIM_LINK_PRIV_H
#define DPSOCK_SHIM_LINK_PRIV_H

#include "link/link.h"

/* One request on the control socket and its status reply (a waiter's or a
 * channel's add and delete); fd rides along when >= 0; *out_id gets the
 * reply's id. Returns the status or -errno (-ECONNRESET: not attached). */
int shim_ctl_simple(uint16_t type, uint32_t id, uint32_t arg, int fd, uint32_t *out_id);
/* futex(2) on a word of the segment (shared, not FUTEX_PRIVATE: the other
 * side maps it too). */
long shim_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts);

#endif /* DPSOCK_SHIM_LINK_PRIV_H */
