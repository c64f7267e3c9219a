/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pcb_index.c — hash table, O(1) unlinking and ordered TIME_WAIT for lwIP's
 * TCP pcbs. What and why: include/dpsock_lwip_pcb_index.h; where lwIP calls
 * in: lwip/transform_perf.py.
 *
 * Fields (DPSOCK_TCP_PCB_FIELDS in lwipopts.h, added to struct tcp_pcb):
 *   dp_prev     predecessor on the active or TIME_WAIT list (NULL: head)
 *   dp_hnext    next pcb in the same hash bucket
 *   dp_hpprev   the pointer that points at this pcb in its bucket chain
 *               (NULL: not hashed)
 * lwIP zeroes a new pcb (tcp_alloc), so a pcb starts unlinked and unhashed.
 *
 * The table doubles when it holds two pcbs per bucket and halves when it
 * holds fewer than one per eight (from 256 buckets up; an instance that cannot get even those runs without a table and
 * walks lwIP's lists instead); the key
 * hash is seeded per instance (LWIP_RAND) so that a peer cannot aim all its
 * connections at one bucket.
 */
#include <string.h>

#include "lwip/opt.h"
#include "lwip/mem.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

#include "dpsock_lwip_pcb_index.h"

#define INDEX_MIN_BUCKETS 256u
#define INDEX_MAX_BUCKETS (1u << 22)

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif

struct pcb_index {
    struct tcp_pcb **bucket;
    uint32_t mask;          /* buckets - 1 */
    uint32_t seed;
    uint64_t hashed;
    struct tcp_pcb *tw_tail; /* oldest TIME_WAIT pcb */
    uint64_t tw_count;
    uint64_t tw_reused;
    uint64_t tw_evicted;
    /* the active list: [busy][parked]; parked pcbs from quiet on */
    struct tcp_pcb *active_tail;
    struct tcp_pcb *quiet;  /* first parked pcb, NULL: none */
    struct tcp_pcb *sweep;  /* the parking sweep's next pcb */
    uint64_t parked;
    uint64_t park_rescued;
};

static _Thread_local struct pcb_index idx;

static inline uint32_t
tuple_hash(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
{
    uint32_t h = idx.seed ^ raddr;

    /* murmur3's mixing of each word, then its finaliser */
    h ^= laddr * 0xcc9e2d51u;
    h = (h << 13 | h >> 19) * 5u + 0xe6546b64u;
    h ^= ((uint32_t)lport << 16 | rport) * 0x1b873593u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* An address as one word for tuple_hash: IPv4's own, IPv6's four folded
 * (each word mixed, so that swapped words hash apart). */
static inline uint32_t
addr_word(const ip_addr_t *a)
{
    const uint32_t *w;

    if (IP_IS_V4(a))
        return ip4_addr_get_u32(ip_2_ip4(a));
    w = ip_2_ip6(a)->addr;
    return w[0] ^ (w[1] * 0x9e3779b1u) ^ (w[2] * 0x85ebca77u) ^ (w[3] * 0xc2b2ae3du);
}

static inline uint32_t
pcb_hash(const struct tcp_pcb *pcb)
{
    return tuple_hash(addr_word(&pcb->local_ip), pcb->local_port, addr_word(&pcb->remote_ip),
                      pcb->remote_port);
}

static void
chain_insert(struct tcp_pcb **slot, struct tcp_pcb *pcb)
{
    pcb->dp_hnext = *slot;
    if (*slot != NULL)
        (*slot)->dp_hpprev = &pcb->dp_hnext;
    *slot = pcb;
    pcb->dp_hpprev = slot;
}

/* Resize the table to n buckets. On allocation failure it keeps its size:
 * the chains only get longer (or stay sparse). */
static void
index_resize(uint32_t n)
{
    struct tcp_pcb **nb;
    uint32_t i;

    nb = (struct tcp_pcb **)mem_calloc(n, sizeof(*nb));
    if (nb == NULL)
        return;
    for (i = 0; i <= idx.mask; i++) {
        struct tcp_pcb *pcb = idx.bucket[i];

        while (pcb != NULL) {
            struct tcp_pcb *next = pcb->dp_hnext;

            chain_insert(&nb[pcb_hash(pcb) & (n - 1)], pcb);
            pcb = next;
        }
    }
    mem_free(idx.bucket);
    idx.bucket = nb;
    idx.mask = n - 1;
}

static void
hash_add(struct tcp_pcb *pcb)
{
    if (pcb->dp_hpprev != NULL || idx.bucket == NULL)
        return;
    if (idx.hashed >= 2ull * (idx.mask + 1) && idx.mask + 1 < INDEX_MAX_BUCKETS)
        index_resize((idx.mask + 1) * 2);
    chain_insert(&idx.bucket[pcb_hash(pcb) & idx.mask], pcb);
    idx.hashed++;
}

static void
hash_del(struct tcp_pcb *pcb)
{
    if (pcb->dp_hpprev == NULL)
        return;
    *pcb->dp_hpprev = pcb->dp_hnext;
    if (pcb->dp_hnext != NULL)
        pcb->dp_hnext->dp_hpprev = pcb->dp_hpprev;
    pcb->dp_hnext = NULL;
    pcb->dp_hpprev = NULL;
    idx.hashed--;
    /* give the memory back once the connections are gone (hysteresis:
     * grown at 2 per bucket, shrunk at 1 per 8) */
    if (idx.hashed * 8 < idx.mask + 1 && idx.mask + 1 > INDEX_MIN_BUCKETS)
        index_resize((idx.mask + 1) / 2);
}

void
dpsock_tcp_index_init(void)
{
    memset(&idx, 0, sizeof(idx));
    idx.seed = (uint32_t)LWIP_RAND();
    /* Without memory for a table (an instance started under a tight
     * memory limit) the instance runs without one: nothing is hashed and
     * lookups walk lwIP's lists, as lwIP does. */
    idx.bucket = (struct tcp_pcb **)mem_calloc(INDEX_MIN_BUCKETS, sizeof(*idx.bucket));
    if (idx.bucket != NULL)
        idx.mask = INDEX_MIN_BUCKETS - 1;
}

void
dpsock_tcp_index_fini(void)
{
    if (idx.bucket != NULL)
        mem_free(idx.bucket);
    memset(&idx, 0, sizeof(idx));
}

static inline bool
indexed_list(struct tcp_pcb **list)
{
    return list == &tcp_active_pcbs || list == &tcp_tw_pcbs;
}

/* Put pcb at the head of the active list (unlinked). */
static void
active_push(struct tcp_pcb *pcb)
{
    pcb->next = tcp_active_pcbs;
    pcb->dp_prev = NULL;
    if (tcp_active_pcbs != NULL)
        tcp_active_pcbs->dp_prev = pcb;
    else
        idx.active_tail = pcb;
    tcp_active_pcbs = pcb;
}

void
dpsock_tcp_list_add(struct tcp_pcb **list, struct tcp_pcb *pcb)
{
    if (list == &tcp_active_pcbs) {
        pcb->dp_parked = 0;
        active_push(pcb);
        hash_add(pcb);
        return;
    }
    pcb->next = *list;
    if (indexed_list(list)) {
        pcb->dp_prev = NULL;
        if (*list != NULL)
            (*list)->dp_prev = pcb;
        if (list == &tcp_tw_pcbs) {
            if (idx.tw_tail == NULL)
                idx.tw_tail = pcb;
            idx.tw_count++;
        }
        hash_add(pcb);
    }
    *list = pcb;
}

/* Take pcb off an indexed list; pcb->next is left as it was. */
static void
unlink_indexed(struct tcp_pcb **list, struct tcp_pcb *pcb)
{
    if (list == &tcp_active_pcbs) {
        if (idx.active_tail == pcb)
            idx.active_tail = pcb->dp_prev;
        if (pcb->dp_parked) {
            if (idx.quiet == pcb)
                idx.quiet = pcb->next;
            if (idx.sweep == pcb)
                idx.sweep = pcb->next;
            pcb->dp_parked = 0;
            idx.parked--;
        }
    }
    if (pcb->dp_prev != NULL)
        pcb->dp_prev->next = pcb->next;
    else
        *list = pcb->next;
    if (pcb->next != NULL)
        pcb->next->dp_prev = pcb->dp_prev;
    if (list == &tcp_tw_pcbs) {
        if (idx.tw_tail == pcb)
            idx.tw_tail = pcb->dp_prev;
        idx.tw_count--;
    }
    pcb->dp_prev = NULL;
}

/* ---- timer parking (see the header) ---- */

struct tcp_pcb *
dpsock_tcp_tmr_quiet(void)
{
    return idx.quiet;
}

/* Nothing for the timers to do now (keepalive aside). */
static bool
tcp_idle(const struct tcp_pcb *pcb)
{
    return !((pcb->state != ESTABLISHED && pcb->state != CLOSE_WAIT) || pcb->unsent != NULL ||
        pcb->unacked != NULL || pcb->rtime >= 0 || pcb->persist_backoff != 0 ||
        pcb->refused_data != NULL || (pcb->flags & (TF_ACK_DELAY | TF_ACK_NOW | TF_CLOSEPEND)) ||
        pcb->rec.timer_us != 0 || pcb->rec.pace_us != 0
#if TCP_QUEUE_OOSEQ
        || pcb->ooseq != NULL
#endif
        );
}

bool
dpsock_tcp_quiet(const struct tcp_pcb *pcb)
{
    if (!tcp_idle(pcb))
        return false;
    /* a keepalive must be due later than the sweep comes round again */
    if (ip_get_option(pcb, SOF_KEEPALIVE) &&
        (u32_t)(tcp_ticks - pcb->tmr) + DPSOCK_TCP_PARK_SWEEP_MS / TCP_SLOW_INTERVAL >=
            pcb->keep_idle / TCP_SLOW_INTERVAL)
        return false;
    return true;
}

void
dpsock_tcp_tmr_park(struct tcp_pcb *pcb)
{
    if (pcb->dp_parked || !dpsock_tcp_quiet(pcb) || idx.active_tail == NULL)
        return;
    /* to the tail: a walk standing on pcb goes on with pcb->next, and
     * stops at the first parked pcb as before */
    if (idx.active_tail != pcb) {
        unlink_indexed(&tcp_active_pcbs, pcb);
        pcb->next = NULL;
        pcb->dp_prev = idx.active_tail;
        idx.active_tail->next = pcb;
        idx.active_tail = pcb;
    }
    pcb->dp_parked = 1;
    idx.parked++;
    if (idx.quiet == NULL)
        idx.quiet = pcb;
}

void
dpsock_tcp_tmr_wake(struct tcp_pcb *pcb)
{
    /* a listening pcb is a smaller struct (tcp_pcb_listen): never parked */
    if (pcb->state == LISTEN || !pcb->dp_parked)
        return;
    unlink_indexed(&tcp_active_pcbs, pcb);
    active_push(pcb);
    /* the timers' walks start again (they skip what they did already):
     * the list changed under them */
    tcp_active_pcbs_changed = 1;
}

void
dpsock_tcp_tmr_sweep(void)
{
    /* the whole parked region every DPSOCK_TCP_PARK_SWEEP_MS at most */
    uint64_t n = idx.parked * TCP_SLOW_INTERVAL / DPSOCK_TCP_PARK_SWEEP_MS + 16;

    while (n-- > 0 && idx.parked > 0) {
        struct tcp_pcb *pcb = idx.sweep;

        if (pcb == NULL || !pcb->dp_parked) {
            pcb = idx.quiet;
            if (pcb == NULL)
                return;
        }
        idx.sweep = pcb->next;
        if (!dpsock_tcp_quiet(pcb)) {
            if (!tcp_idle(pcb))
                idx.park_rescued++; /* work a wake-up should have announced */
            dpsock_tcp_tmr_wake(pcb);
        }
    }
}

void
dpsock_tcp_list_del(struct tcp_pcb **list, struct tcp_pcb *pcb)
{
    if (indexed_list(list)) {
        /* on the list: it has a predecessor, or it is the head */
        if (pcb->dp_prev != NULL || *list == pcb) {
            unlink_indexed(list, pcb);
            hash_del(pcb);
        }
    } else if (*list == pcb) {
        *list = pcb->next;
    } else {
        struct tcp_pcb *p;

        for (p = *list; p != NULL; p = p->next)
            if (p->next == pcb) {
                p->next = pcb->next;
                break;
            }
    }
    pcb->next = NULL;
}

void
dpsock_tcp_active_unlinked(struct tcp_pcb *prev, struct tcp_pcb *pcb)
{
    LWIP_ASSERT("dpsock_tcp_active_unlinked: prev", pcb->dp_prev == prev);
    unlink_indexed(&tcp_active_pcbs, pcb);
    hash_del(pcb);
}

void
dpsock_tcp_index_forget(struct tcp_pcb *pcb)
{
    hash_del(pcb);
}

/* The walk and the bucket's chain, for a tuple test TUPLE_IS(pcb) and its
 * hash h. */
#define LOOKUP(h, TUPLE_IS)                                                     \
    do {                                                                       \
        struct tcp_pcb *pcb_;                                                  \
        int i_;                                                                \
                                                                               \
        if (likely(idx.bucket != NULL)) {                                      \
            for (pcb_ = idx.bucket[(h) & idx.mask]; pcb_ != NULL; pcb_ = pcb_->dp_hnext) \
                if (TUPLE_IS(pcb_))                                            \
                    return pcb_;                                               \
            return NULL;                                                       \
        }                                                                      \
        /* no table: lwIP's walk */                                            \
        for (i_ = 0; i_ < 2; i_++)                                             \
            for (pcb_ = i_ == 0 ? tcp_active_pcbs : tcp_tw_pcbs; pcb_ != NULL; pcb_ = pcb_->next) \
                if (TUPLE_IS(pcb_))                                            \
                    return pcb_;                                               \
        return NULL;                                                           \
    } while (0)

struct tcp_pcb *
dpsock_tcp_lookup(const ip_addr_t *laddr, uint16_t lport, const ip_addr_t *raddr, uint16_t rport)
{
    /* ip_addr_cmp: the same family and address (and an IPv6 zone) */
#define TUPLE_IS(pcb)                                                           \
    ((pcb)->remote_port == rport && (pcb)->local_port == lport &&              \
     ip_addr_cmp(&(pcb)->remote_ip, raddr) && ip_addr_cmp(&(pcb)->local_ip, laddr))
    LOOKUP(tuple_hash(addr_word(laddr), lport, addr_word(raddr), rport), TUPLE_IS);
#undef TUPLE_IS
}

struct tcp_pcb *
dpsock_tcp_lookup6(const void *laddr, uint16_t lport, const void *raddr, uint16_t rport)
{
    ip_addr_t l, r;

    IP_SET_TYPE_VAL(l, IPADDR_TYPE_V6);
    IP_SET_TYPE_VAL(r, IPADDR_TYPE_V6);
    memcpy(ip_2_ip6(&l)->addr, laddr, 16);
    memcpy(ip_2_ip6(&r)->addr, raddr, 16);
    ip6_addr_clear_zone(ip_2_ip6(&l));
    ip6_addr_clear_zone(ip_2_ip6(&r));
    return dpsock_tcp_lookup(&l, lport, &r, rport);
}

struct tcp_pcb *
dpsock_tcp_lookup4(uint32_t laddr, uint16_t lport, uint32_t raddr, uint16_t rport)
{
#define TUPLE_IS(pcb)                                                           \
    ((pcb)->remote_port == rport && (pcb)->local_port == lport &&              \
     IP_IS_V4_VAL((pcb)->remote_ip) &&                                         \
     ip4_addr_get_u32(ip_2_ip4(&(pcb)->remote_ip)) == raddr &&                 \
     ip4_addr_get_u32(ip_2_ip4(&(pcb)->local_ip)) == laddr)
    LOOKUP(tuple_hash(laddr, lport, raddr, rport), TUPLE_IS);
#undef TUPLE_IS
}
#undef LOOKUP

void
dpsock_tcp_tw_touch(struct tcp_pcb *pcb)
{
    if (tcp_tw_pcbs == pcb)
        return; /* the newest already */
    unlink_indexed(&tcp_tw_pcbs, pcb);
    pcb->next = tcp_tw_pcbs;
    pcb->dp_prev = NULL;
    tcp_tw_pcbs->dp_prev = pcb;
    tcp_tw_pcbs = pcb;
    if (idx.tw_tail == NULL)
        idx.tw_tail = pcb;
    idx.tw_count++;
}

void
dpsock_tcp_tw_expire(void)
{
    struct tcp_pcb *pcb;

    while ((pcb = idx.tw_tail) != NULL) {
        LWIP_ASSERT("dpsock_tcp_tw_expire: TIME_WAIT", pcb->state == TIME_WAIT);
        if (idx.tw_count > DPSOCK_TCP_TW_MAX)
            idx.tw_evicted++;
        else if ((u32_t)(tcp_ticks - pcb->tmr) <= 2 * TCP_MSL / TCP_SLOW_INTERVAL)
            break; /* every newer pcb waits too */
        tcp_abort(pcb); /* TIME_WAIT: unlinked and freed, no RST */
    }
}

struct tcp_pcb *
dpsock_tcp_tw_oldest(void)
{
    return idx.tw_tail;
}

uint16_t
dpsock_tcp_tw_reclaim(uint16_t lo, uint16_t hi, uint32_t min_age_ms, unsigned int max_scan,
                      bool (*owned)(uint16_t port, void *arg), void *arg)
{
    struct tcp_pcb *pcb;
    u32_t min_ticks = (min_age_ms + TCP_SLOW_INTERVAL - 1) / TCP_SLOW_INTERVAL;

    for (pcb = idx.tw_tail; pcb != NULL && max_scan > 0; pcb = pcb->dp_prev, max_scan--) {
        uint16_t port = pcb->local_port;

        if ((u32_t)(tcp_ticks - pcb->tmr) < min_ticks)
            return 0; /* the rest are younger */
        if (port < lo || port > hi || !(pcb->flags & TF_TIMESTAMP) ||
            (owned != NULL && !owned(port, arg)))
            continue;
        idx.tw_reused++;
        tcp_abort(pcb);
        return port;
    }
    return 0;
}

void
dpsock_tcp_index_stats(struct dpsock_tcp_index_stats *out)
{
    out->tw_now = idx.tw_count;
    out->tw_reused = idx.tw_reused;
    out->tw_evicted = idx.tw_evicted;
    out->hashed_now = idx.hashed;
    out->buckets = idx.bucket != NULL ? idx.mask + 1 : 0;
    out->parked_now = idx.parked;
    out->park_rescued = idx.park_rescued;
}
