/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chksum.c — the Internet checksum lwIP uses (LWIP_CHKSUM in lwipopts.h),
 * and the stack's software checksums with it.
 *
 * lwIP's lwip_standard_chksum adds 16-bit words one at a time: about 1 400
 * cycles for a 1 460-byte segment here, the largest single cost of a bulk
 * transfer over a port without checksum offload (memif, af_packet), paid
 * once when sending and once when receiving. This one adds 64-bit words,
 * four per iteration, keeping the carries apart (a carry out of bit 63 is
 * worth 2^64, which is 1 modulo 0xffff, like every 16-bit lane): about 290
 * cycles for the same segment. The one's complement sum is independent of
 * the order and grouping of the words, so the 16-bit lanes of the 64-bit
 * words, read at any alignment, give the same result as lwIP's, bytes
 * counted from the start of the buffer (little-endian hosts; a big-endian
 * one keeps lwIP's).
 */
#include <stdint.h>
#include <string.h>

#include "lwip/opt.h"

#include "dpsock_lwip_chksum.h"

#if BYTE_ORDER != LITTLE_ENDIAN
#error "dpsock_lwip_chksum reads 16-bit lanes of little-endian 64-bit words"
#endif

u16_t
dpsock_lwip_chksum(const void *dataptr, int len)
{
    const uint8_t *p = dataptr;
    size_t n = len > 0 ? (size_t)len : 0;
    uint64_t sum = 0, carries = 0, w[4];

    while (n >= sizeof(w)) {
        memcpy(w, p, sizeof(w));
        sum += w[0];
        carries += sum < w[0];
        sum += w[1];
        carries += sum < w[1];
        sum += w[2];
        carries += sum < w[2];
        sum += w[3];
        carries += sum < w[3];
        p += sizeof(w);
        n -= sizeof(w);
    }
    while (n >= sizeof(w[0])) {
        memcpy(w, p, sizeof(w[0]));
        sum += w[0];
        carries += sum < w[0];
        p += sizeof(w[0]);
        n -= sizeof(w[0]);
    }
    if (n > 0) {
        w[0] = 0;
        memcpy(w, p, n); /* the missing high bytes are zeros, as RFC 1071 pads */
        sum += w[0];
        carries += sum < w[0];
    }
    /* fold to 16 bits; each carry out of bit 63 counts 1 */
    sum = (sum & 0xffffffffu) + (sum >> 32) + carries;
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    sum = (sum & 0xffffu) + (sum >> 16);
    return (u16_t)sum;
}
