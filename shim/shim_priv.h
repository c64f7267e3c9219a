/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shim_priv.h — what the files at shim/'s top share: calls.c (the socket
 * hooks, close and the process's exit) and exec.c (the exec hooks and the
 * new image's constructor). They stand on every folder; env.c and
 * signal.c, the floor, include shim.h alone.
 */
#ifndef DPSOCK_SHIM_PRIV_H
#define DPSOCK_SHIM_PRIV_H

#include "extra/extra.h"
#include "io/io.h"
#include "poll/poll.h"

/* ---- close (calls.c) ------------------------------------------------------------- */

/* Drop a reference; the last one lets go of the socket's slots (CLOSE to
 * the workers once no process of the group holds it). In calls.c: the
 * last reference lets go of what every part of the shim holds. */
void shim_sock_unref(struct shim_sock *s);

/* ---- exec (exec.c) ------------------------------------------------------------ */

/* DPSOCK_INHERIT=<control fd>:<pid>: set by the exec hooks for the new
 * image, read (and removed from the environment) by the shim's constructor. */
#define SHIM_INHERIT_ENV "DPSOCK_INHERIT"
/* The new image rebuilds the shadow sockets of the descriptors it
 * inherited (the constructor, after shim_attach_exec). */
void shim_sock_adopt(void);

#endif /* DPSOCK_SHIM_PRIV_H */
