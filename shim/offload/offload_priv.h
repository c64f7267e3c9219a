/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * offload_priv.h — what the files of offload/ share and nothing else uses:
 * the memberships a socket made before the offload decision, replayed on
 * its workers (mcast.c, for offload.c).
 */
#ifndef DPSOCK_SHIM_OFFLOAD_PRIV_H
#define DPSOCK_SHIM_OFFLOAD_PRIV_H

#include "offload/offload.h"

/* The socket was offloaded: its memberships made before bind go to the
 * workers. */
void shim_mc_replay(struct shim_thread *t, struct shim_sock *s);

#endif /* DPSOCK_SHIM_OFFLOAD_PRIV_H */
