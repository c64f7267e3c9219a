/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip_pcb_index.h — the TCP pcb index of an lwIP instance
 * (lwip/pcb_index.c), hooked into lwIP by lwip/transform_perf.py.
 *
 * lwIP 2.1.3 keeps its pcbs on singly linked lists and finds them by walking:
 * every received segment walks the active list, then the TIME_WAIT list;
 * every active open with SO_REUSEADDR walks both to check its 4-tuple;
 * removing a pcb walks its list to find the predecessor; the slow timer walks
 * every TIME_WAIT pcb each tick. At a few thousand connections per second
 * the TIME_WAIT list alone holds rate x 2 MSL pcbs, and connection set-up
 * turns quadratic.
 *
 * The index keeps lwIP's lists (every other walk still works) and adds:
 *   - a hash table of the pcbs on the active and TIME_WAIT lists, keyed by
 *     the 4-tuple: demultiplexing and the 4-tuple check are one lookup;
 *   - a back link (dp_prev) on those two lists: unlinking is O(1);
 *   - TIME_WAIT in arrival order (the list head is the newest, a tail
 *     pointer the oldest): the slow timer expires from the tail and stops at
 *     the first pcb still waiting; a FIN that restarts the 2 MSL wait moves
 *     its pcb to the head, so the order holds;
 *   - a bound on TIME_WAIT pcbs (DPSOCK_TCP_TW_MAX per instance; the oldest
 *     go first, as Linux's tcp_max_tw_buckets), and early reuse of a
 *     TIME_WAIT pcb's local port (dpsock_tcp_tw_reclaim, as Linux's
 *     tcp_tw_reuse).
 *
 *   - quiet pcbs parked behind the timers' walks: tcp_fasttmr (every 25 ms)
 *     and tcp_slowtmr (every 50 ms) visited every active pcb, so a worker
 *     holding tens of thousands of idle connections spent its time walking
 *     them and a request that arrived during a walk waited for it. The
 *     active list is kept as [busy pcbs][parked pcbs]: fasttmr moves a pcb
 *     it finds quiet (dpsock_tcp_quiet: established or close-wait, nothing
 *     unsent or unacknowledged, no timer of lwIP's or tcp_rec.c's running,
 *     no delayed ACK, refused data or pending FIN, a keepalive not due
 *     within the parking sweep's period) to the tail, and both walks stop
 *     at the first parked pcb. Whatever can give a pcb timer work wakes it
 *     (moved to the head): a segment for it (tcp_input), tcp_output,
 *     tcp_write, a close or shutdown, a keepalive option set. The slow
 *     timer also looks at a few parked pcbs each tick, round-robin, over
 *     the whole parked region every DPSOCK_TCP_PARK_SWEEP_MS at most, and
 *     wakes those no longer quiet: a keepalive coming due, and anything a
 *     wake-up missed (counted: dpsock_tcp_index_stats' park_rescued).
 *
 * All of it is per instance (thread-local), like the rest of lwIP's state.
 */
#ifndef DPSOCK_LWIP_PCB_INDEX_H
#define DPSOCK_LWIP_PCB_INDEX_H

#include <stdbool.h>
#include <stdint.h>

struct tcp_pcb;
struct ip_addr;

/* Create / free the calling instance's index (tcp_init, instance fini). */
void dpsock_tcp_index_init(void);
void dpsock_tcp_index_fini(void);

/* TCP_REG / TCP_RMV: the active and TIME_WAIT lists are indexed, the bound
 * and listen lists are plain lwIP lists. */
void dpsock_tcp_list_add(struct tcp_pcb **list, struct tcp_pcb *pcb);
void dpsock_tcp_list_del(struct tcp_pcb **list, struct tcp_pcb *pcb);

/* tcp_slowtmr took pcb off the active list itself (prev: its predecessor,
 * NULL for the head); pcb->next stays valid for the timer's walk. */
void dpsock_tcp_active_unlinked(struct tcp_pcb *prev, struct tcp_pcb *pcb);

/* tcp_free: the pcb leaves the hash table if it is still in it. */
void dpsock_tcp_index_forget(struct tcp_pcb *pcb);

/* The active or TIME_WAIT pcb of a 4-tuple (ports in host order), or
 * NULL: IPv4 or IPv6 addresses (a pcb of the other family never matches),
 * or, for the IPv4 frame paths, IPv4 addresses in network order. */
struct tcp_pcb *dpsock_tcp_lookup(const struct ip_addr *laddr, uint16_t lport,
                                  const struct ip_addr *raddr, uint16_t rport);
struct tcp_pcb *dpsock_tcp_lookup4(uint32_t laddr, uint16_t lport, uint32_t raddr,
                                   uint16_t rport);
/* The same for IPv6 addresses as a header carries them (16 bytes each,
 * no zone). */
struct tcp_pcb *dpsock_tcp_lookup6(const void *laddr, uint16_t lport, const void *raddr,
                                   uint16_t rport);

/* Timer parking. dpsock_tcp_tmr_quiet: the first parked pcb of the active
 * list (where the timers' walks stop), or NULL. dpsock_tcp_tmr_park: pcb
 * is parked if it is quiet (tcp_fasttmr, after its work on it).
 * dpsock_tcp_tmr_wake: pcb, if parked, goes back where the timers see it
 * (anything that may give it timer work calls it). dpsock_tcp_tmr_sweep:
 * the slow timer's look at a few parked pcbs. */
#define DPSOCK_TCP_PARK_SWEEP_MS 10000u
struct tcp_pcb *dpsock_tcp_tmr_quiet(void);
void dpsock_tcp_tmr_park(struct tcp_pcb *pcb);
void dpsock_tcp_tmr_wake(struct tcp_pcb *pcb);
void dpsock_tcp_tmr_sweep(void);
bool dpsock_tcp_quiet(const struct tcp_pcb *pcb);

/* A FIN restarted pcb's 2 MSL wait (tcp_timewait_input). */
void dpsock_tcp_tw_touch(struct tcp_pcb *pcb);

/* tcp_slowtmr: free the TIME_WAIT pcbs whose 2 MSL are over, and the oldest
 * ones beyond DPSOCK_TCP_TW_MAX. */
void dpsock_tcp_tw_expire(void);

/* The oldest TIME_WAIT pcb, or NULL (tcp_kill_timewait). */
struct tcp_pcb *dpsock_tcp_tw_oldest(void);

/*
 * Early reuse of a local port held by TIME_WAIT (Linux's tcp_tw_reuse): among
 * the max_scan oldest TIME_WAIT pcbs, the first whose local port lies in
 * [lo, hi], which has waited min_age_ms or more, negotiated timestamps (so
 * the peer can tell the new connection's segments from the old one's, RFC
 * 7323 PAWS) and for which owned(port, arg) is true, is freed (its destroy
 * callback runs) and its local port returned. 0: none.
 */
uint16_t dpsock_tcp_tw_reclaim(uint16_t lo, uint16_t hi, uint32_t min_age_ms,
                               unsigned int max_scan,
                               bool (*owned)(uint16_t port, void *arg), void *arg);

/* Counters of the calling instance (dpsock-stat). */
struct dpsock_tcp_index_stats {
    uint64_t tw_now;        /* pcbs in TIME_WAIT */
    uint64_t tw_reused;     /* TIME_WAIT pcbs freed early for their port */
    uint64_t tw_evicted;    /* freed beyond DPSOCK_TCP_TW_MAX */
    uint64_t hashed_now;    /* pcbs in the hash table */
    uint64_t buckets;       /* size of the hash table */
    uint64_t parked_now;    /* active pcbs behind the timers' walks */
    uint64_t park_rescued;  /* parked pcbs the sweep found with timer work */
};
void dpsock_tcp_index_stats(struct dpsock_tcp_index_stats *out);

#endif /* DPSOCK_LWIP_PCB_INDEX_H */
