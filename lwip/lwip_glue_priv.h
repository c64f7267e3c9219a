/* SPDX-License-Identifier: BSD-3-Clause */
/* lwip_glue_priv.h — internals shared by the lwIP glue files of lwip/. */
#ifndef DPSOCK_LWIP_GLUE_PRIV_H
#define DPSOCK_LWIP_GLUE_PRIV_H

#include <stddef.h>
#include <stdint.h>

/* alloc.c: start this thread's allocator (counters reset). Returns 0. */
int dpsock_lwip_alloc_init(uint64_t mem_limit, void *(*mem_get)(size_t), void (*mem_put)(void *));
/* alloc.c: free every chunk and big block of this thread's allocator. */
void dpsock_lwip_alloc_fini(void);

/* isn.c: set the process-wide ISN key once. 0, -EINVAL (a different key is
 * already set) or -errno of getrandom(). */
int dpsock_lwip_isn_init(const uint8_t *secret);

/* sys_arch.c: fill @p buf from getrandom(). 0 or -errno. */
int dpsock_lwip_getrandom(void *buf, size_t len);

#endif /* DPSOCK_LWIP_GLUE_PRIV_H */
