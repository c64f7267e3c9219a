/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip_chksum.h — the Internet checksum lwIP computes with
 * (LWIP_CHKSUM, lwip/chksum.c), for the stack's own software checksums too.
 */
#ifndef DPSOCK_LWIP_CHKSUM_H
#define DPSOCK_LWIP_CHKSUM_H

#include <stdint.h>

/* The 16-bit one's complement sum of len bytes at dataptr (any alignment),
 * not complemented, as the bytes lie in memory (lwip_standard_chksum's
 * contract). */
uint16_t dpsock_lwip_chksum(const void *dataptr, int len);

#endif /* DPSOCK_LWIP_CHKSUM_H */
