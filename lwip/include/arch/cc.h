/* SPDX-License-Identifier: BSD-3-Clause */
/* arch/cc.h — compiler and platform glue lwIP needs on Linux x86-64/arm64. */
#ifndef DPSOCK_LWIP_ARCH_CC_H
#define DPSOCK_LWIP_ARCH_CC_H

#include <endian.h>
#include <stdio.h>
#include <stdlib.h>

/* glibc's <endian.h> gives BYTE_ORDER/LITTLE_ENDIAN/BIG_ENDIAN */
#ifndef BYTE_ORDER
#error "BYTE_ORDER not defined by <endian.h>"
#endif

#if BYTE_ORDER == LITTLE_ENDIAN
/* compiler builtins instead of lwIP's portable C versions */
#define lwip_htons(x) ((u16_t)__builtin_bswap16((u16_t)(x)))
#define lwip_htonl(x) ((u32_t)__builtin_bswap32((u32_t)(x)))
#endif

void dpsock_lwip_assert_fail(const char *msg, const char *file, int line)
    __attribute__((noreturn, cold));

/* lwIP assertions log file:line and abort(): a broken invariant must not run on */
#define LWIP_PLATFORM_ASSERT(x) dpsock_lwip_assert_fail((x), __FILE__, __LINE__)
#define LWIP_PLATFORM_DIAG(x) do { printf x; } while (0)

#define LWIP_NO_UNISTD_H 0

#endif /* DPSOCK_LWIP_ARCH_CC_H */
