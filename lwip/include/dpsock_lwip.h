/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip.h — per-thread lwIP instances.
 *
 * lwIP's globals are thread-local in dpsock's build (lwip/transform.py), so
 * every thread that calls dpsock_lwip_instance_init() gets a private stack:
 * its own netifs, pcbs, ARP table, timers, statistics and allocator. All lwIP
 * calls for an instance must come from the thread that created it
 * (LWIP_ASSERT_CORE_LOCKED aborts otherwise), and memory lwIP allocated on a
 * thread must be freed on that thread.
 *
 * Errors: functions return 0 or -errno.
 */
#ifndef DPSOCK_LWIP_H
#define DPSOCK_LWIP_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Length of the RFC 6528 ISN secret. */
#define DPSOCK_LWIP_ISN_SECRET_LEN 16

struct dpsock_lwip_params {
    /** Caller's name for the instance (e.g. the worker index); shown in the
     *  messages of aborts caused by misuse of the instance. */
    unsigned int instance;
    /** Most bytes lwIP may hold allocated on this thread; 0 = no limit. Past it
     *  allocations fail (lwIP sees ERR_MEM), which tests use to force OOM. */
    uint64_t mem_limit;
    /** Seed of the thread's LWIP_RAND() generator; 0 = from getrandom(). */
    uint64_t rand_seed;
    /** Key for initial sequence numbers, shared by every instance of the
     *  process: the first instance sets it; NULL = random (getrandom()). */
    const uint8_t *isn_secret;
    /** Where the allocator's memory comes from (blocks of 64 KiB and up,
     *  16-byte aligned); NULL = malloc()/free(). dpsockd passes DPDK memory,
     *  which NICs can read, so lwIP's frames go out without a copy. */
    void *(*mem_get)(size_t size);
    void (*mem_put)(void *p);
};

/**
 * Create this thread's lwIP instance: allocator, PRNG seed, ISN secret, then
 * lwip_init(). @p p may be NULL (all defaults).
 *
 * @return 0, or
 *   -EALREADY  this thread already has an instance;
 *   -EINVAL    p->isn_secret differs from the secret the process already uses;
 *   -errno     of getrandom() when no seed/secret was given and it failed.
 */
int dpsock_lwip_instance_init(const struct dpsock_lwip_params *p);

/**
 * Destroy this thread's instance: frees lwIP's pending timers, then every
 * chunk of the thread's allocator. The caller must have removed its netifs
 * and closed/aborted its pcbs first (anything still allocated is freed with
 * the chunks, and shows in dpsock_lwip_mem_stats() as a leak). Counters stay
 * readable until the next dpsock_lwip_instance_init(). No-op without an
 * instance.
 */
void dpsock_lwip_instance_fini(void);

/** Allocator counters of the calling thread's instance. */
struct dpsock_lwip_mem_stats {
    uint64_t bytes_in_use;  /**< bytes requested by lwIP and not yet freed */
    uint64_t objs_in_use;   /**< allocations not yet freed */
    uint64_t allocs;        /**< successful allocations */
    uint64_t frees;         /**< frees */
    uint64_t fails;         /**< allocations refused (limit or malloc failure) */
};

/** Copy the calling thread's allocator counters into @p out (zeros if the
 *  thread never had an instance). Cannot fail. */
void dpsock_lwip_mem_stats(struct dpsock_lwip_mem_stats *out);

/** True when the calling thread owns a live lwIP instance. */
bool dpsock_lwip_instance_owned(void);

#ifdef __cplusplus
}
#endif

#endif /* DPSOCK_LWIP_H */
