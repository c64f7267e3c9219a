/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * isn.c — RFC 6528 initial sequence numbers for lwIP (LWIP_HOOK_TCP_ISN).
 *
 *   ISN = M + F(localip, localport, remoteip, remoteport, secretkey)
 *
 * M is a clock ticking every 4 us; F is SipHash-2-4 keyed with a 128-bit
 * secret. lwIP's own ISN (6510 + a counter) is predictable, which lets an
 * off-path attacker inject segments.
 *
 * The key is one per process (all instances): every worker may accept a
 * connection for a 4-tuple another worker used before, and keeping ISNs
 * monotonic per tuple across workers needs the same F.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "lwip/opt.h"
#include "lwip/ip_addr.h"

#include "dpsock_lwip.h"
#include "dpsock_lwip_hooks.h"
#include "lwip_glue_priv.h"

/* Per-process by design (see above): written once by the first instance,
 * published with a release store to isn_key_state. */
static uint64_t isn_key[2];
/* 0 = unset, 1 = being set, 2 = set */
static atomic_int isn_key_state;

static inline uint64_t
rotl64(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t
load_le64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SIPROUND(v0, v1, v2, v3) do {                                     \
        v0 += v1; v1 = rotl64(v1, 13); v1 ^= v0; v0 = rotl64(v0, 32);    \
        v2 += v3; v3 = rotl64(v3, 16); v3 ^= v2;                         \
        v0 += v3; v3 = rotl64(v3, 21); v3 ^= v0;                         \
        v2 += v1; v1 = rotl64(v1, 17); v1 ^= v2; v2 = rotl64(v2, 32);    \
    } while (0)

/* SipHash-2-4 (Aumasson & Bernstein), 64-bit output. */
static uint64_t
siphash24(const uint64_t k[2], const uint8_t *msg, size_t len)
{
    uint64_t v0 = 0x736f6d6570736575ULL ^ k[0];
    uint64_t v1 = 0x646f72616e646f6dULL ^ k[1];
    uint64_t v2 = 0x6c7967656e657261ULL ^ k[0];
    uint64_t v3 = 0x7465646279746573ULL ^ k[1];
    size_t nblocks = len / 8;

    for (size_t i = 0; i < nblocks; i++) {
        uint64_t m = load_le64(msg + 8 * i);

        v3 ^= m;
        SIPROUND(v0, v1, v2, v3);
        SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    const uint8_t *tail = msg + 8 * nblocks;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)tail[i] << (8 * i);
    v3 ^= b;
    SIPROUND(v0, v1, v2, v3);
    SIPROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

int
dpsock_lwip_isn_init(const uint8_t *secret)
{
    uint8_t want[DPSOCK_LWIP_ISN_SECRET_LEN];
    int expected = 0;

    if (secret != NULL) {
        memcpy(want, secret, sizeof(want));
    } else {
        int rc = dpsock_lwip_getrandom(want, sizeof(want));
        if (rc < 0)
            return rc;
    }
    if (atomic_compare_exchange_strong_explicit(&isn_key_state, &expected, 1,
                                                memory_order_acquire, memory_order_acquire)) {
        isn_key[0] = load_le64(want);
        isn_key[1] = load_le64(want + 8);
        /* release: publishes isn_key to the acquire loads below and in
         * dpsock_lwip_tcp_isn() of other threads */
        atomic_store_explicit(&isn_key_state, 2, memory_order_release);
        return 0;
    }
    /* acquire: pairs with the release store above (another thread's init) */
    while (atomic_load_explicit(&isn_key_state, memory_order_acquire) != 2)
        ;
    if (secret != NULL && (isn_key[0] != load_le64(want) || isn_key[1] != load_le64(want + 8)))
        return -EINVAL;
    return 0;
}

u32_t
dpsock_lwip_tcp_isn(const ip_addr_t *local_ip, u16_t local_port,
                    const ip_addr_t *remote_ip, u16_t remote_port)
{
    uint8_t msg[12];
    uint32_t lip = ip4_addr_get_u32(ip_2_ip4(local_ip));
    uint32_t rip = ip4_addr_get_u32(ip_2_ip4(remote_ip));
    struct timespec ts;

    memcpy(msg, &lip, 4);
    memcpy(msg + 4, &rip, 4);
    msg[8] = (uint8_t)(local_port >> 8);
    msg[9] = (uint8_t)local_port;
    msg[10] = (uint8_t)(remote_port >> 8);
    msg[11] = (uint8_t)remote_port;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ticks4us = ((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u) / 4u;

    return (u32_t)(siphash24(isn_key, msg, sizeof(msg)) + ticks4us);
}
