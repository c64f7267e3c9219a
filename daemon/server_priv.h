/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsockd's side of the preload hand-off (docs/preload.md): the control
 * thread (clients.c) attaches client processes and builds their groups'
 * segments; each worker (serve.c) drains the command rings of every
 * live channel and runs the commands on its lwIP instance.
 *
 * Who writes what (none of it lives in a client-writable segment):
 *
 *   struct pl_ctl             control thread; workers read the fields marked
 *                             "shared"
 *   struct pl_group           control thread, before it is published in
 *                             ctl->groups[] (release) and while no worker
 *                             uses what it changes; shared fields below
 *   struct pl_wgroup          one per (group, worker): that worker only,
 *                             except the channel/waiter handles the control
 *                             thread attaches before it publishes them
 *
 * Publication without locks on the worker's path: the control thread fills
 * an object, then release-stores the flag that makes it visible
 * (groups[i], chan_live[c], waiter_live[id]); the worker acquire-loads the
 * flag before it touches the object. Removal is a handshake: the control
 * thread clears the flag, bumps ctl->gen (seq_cst) and waits until every
 * worker acknowledged that generation in ack[k] — a worker acknowledges at
 * the top of its poll hook, after it flushed the wake-ups it collected, so
 * it holds no reference from before. Only then is the object freed or
 * reused. A dying group is released by each worker itself (it resets the
 * group's connections on its own lwIP) and says so in wg->done.
 */
#ifndef DPSOCK_SERVER_PRIV_H
#define DPSOCK_SERVER_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "dpsock/dpsock.h"

#include "preload_wire.h"
#include "spsc_ring.h"

struct dpsock_stack;
struct dpsock_worker;

/* Sizes the daemon chooses (not configurable) */
#define PL_CMD_COUNT 256u        /* commands per channel ring */
#define PL_REPLY_COUNT 256u      /* replies per channel ring */
/* slot numbers per wait ring: twice the worker's slots (preload_wire.h) */
static inline uint32_t
pl_wait_count(uint32_t slots_per_worker)
{
	uint32_t n = 1024;

	while (n < 2 * slots_per_worker)
		n *= 2;
	return n;
}
#define PL_WAIT_ELEM 8u          /* wait ring element: slot number in the low half */
#define PL_MAX_CONNS 1024u       /* control connections at once */

/* chan_live[c]: a channel is drained while LIVE; CLOSING (its thread or
 * process is gone) makes each worker run what is left in its ring once
 * more (a TX_KICK or CLOSE posted just before exit must not be lost), and
 * the control thread frees it after every worker acknowledged. */
#define PL_CHAN_FREE 0u
#define PL_CHAN_LIVE 1u
#define PL_CHAN_CLOSING 2u
#define PL_WAITERS_PER_THREAD 4u /* waiters per channel: the thread's own + epolls */
#define PL_OWNERS_RECENT 64u     /* slots handed out last: their owners published first */

/* Data received but not yet in the rx FIFO (dpsock_rx_hold). */
struct pl_held {
	struct pl_held *next;
	struct dpsock_rx *rx;
	size_t off;               /* bytes of rx already copied into the FIFO */
};

/* Worker-private state of one slot. */
struct pl_wslot {
	struct pl_wgroup *wg;
	struct dpsock_sock *s;    /* NULL once the stack freed the socket */
	uint32_t num;             /* slot number in the segment */
	uint32_t gen;
	uint8_t in_use;
	uint8_t kind;             /* enum dpsock_pl_kind */
	uint8_t state;            /* enum dpsock_pl_state, as published */
	uint8_t closing;          /* CLOSE taken: close once the tx FIFO drained */
	uint8_t shut_wr;          /* SHUTDOWN(WR) taken: FIN once the tx FIFO drained */
	uint8_t tx_blocked;       /* dpsock_send was short: wait for writable */
	uint8_t eof_pending;      /* the peer's FIN, behind held data */
	uint8_t nodelay;
	uint8_t keepalive;
	uint8_t cc;               /* TCP_CONGESTION: 1 + index of tcp_cc.c's table; 0 default */
	uint32_t ka_idle, ka_intvl, ka_cnt;
	int16_t tos, ttl;         /* IP_TOS / IP_TTL set on it, -1: never */
	uint32_t rx_cap;          /* UDP: bytes its rx FIFO may hold (SO_RCVBUF) */
	uint32_t flags;           /* DPSOCK_PL_F_*, as published */
	uint32_t change;
	struct pl_held *held, *held_tail;
	/* the shim's line 2 as last copied into the socket table */
	int32_t owner_pid, owner_fd;
	uint32_t hits_seen, misses_seen;
	struct dpsock_fifo_prod rx;
	struct dpsock_fifo_cons tx;
	/* A connection within the host whose other end is a preloaded socket of
	 * this worker (docs/design.md decision 16): bytes go from one's tx FIFO
	 * into the other's rx FIFO; tx_blocked then waits for the mate's reader. */
	struct pl_wslot *mate;
	uint8_t mate_wait;        /* connected, its mate not accepted yet: hold the tx FIFO */
	/* On the group's reclaim list (serve.c, "giving FIFO pages back"):
	 * its FIFOs moved bytes since their pages last went back. */
	uint8_t rc_on;
	struct pl_wslot *rc_next, *rc_prev;
	uint64_t rc_linked;       /* timer cycles: put at the list's tail */
	uint64_t rc_last;         /* timer cycles: last activity */
};

/* A channel's two rings, seen from one worker. */
struct pl_wchan {
	struct dpsock_spsc_cons cmd;
	struct dpsock_spsc_prod reply;
};

/* One group, seen from one worker. */
struct pl_wgroup {
	struct pl_group *g;
	struct dpsock_worker *w;
	unsigned int k;           /* worker index */
	struct pl_wslot *slots;   /* slots_per_worker */
	uint32_t *free_stack;     /* slots freed, the last freed on top */
	uint32_t n_free;
	uint32_t n_fresh;         /* slots never handed out start here (slots_hi) */
	struct pl_wchan *chans;   /* max_channels; attached by the control thread */
	struct dpsock_spsc_prod *wait; /* max_waiters: ring k of each waiter */
	uint64_t *wake_mask;      /* waiters to wake at the next flush */
	struct pl_wslot *rc_head, *rc_tail; /* reclaim list, oldest first */
	uint32_t owners_next;     /* owners_publish's round-robin position */
	uint32_t recent[PL_OWNERS_RECENT]; /* slots handed out last */
	uint32_t recent_at;
	bool wake_pending;
	bool warned_slots;        /* the slots-exhausted line was logged */
	bool warned_backlog;      /* the accept-queue-full line was logged */
	bool bad;                 /* a ring was corrupt: the group is being dropped */
	bool stopped;             /* daemon stop published (worker_fini) */
	uint32_t done;            /* shared: the worker released the dying group */
	uint64_t n_socks;         /* shared (relaxed): slots in use */
	uint64_t wakeups;         /* shared (relaxed): eventfd writes to the group */
};

/* An attached process group and its segment. */
struct pl_group {
	unsigned int idx;
	uint64_t token;
	int memfd;
	unsigned char *seg;       /* the daemon's mapping */
	size_t seg_size;
	struct dpsock_pl_seg geo; /* private copy of the layout (never read back) */
	uint32_t *chan_live;      /* shared: [max_channels], PL_CHAN_* (release/acquire) */
	uint32_t *chan_waiter;    /* [max_channels]: waiter of the channel's replies */
	uint32_t chan_hi;         /* shared: 1 + highest channel id ever live */
	uint32_t *waiter_live;    /* shared: [max_waiters] */
	int *waiter_fd;           /* [max_waiters]: eventfds, valid while live */
	uint32_t waiter_hi;       /* shared: 1 + highest waiter id ever live */
	uint32_t dying;           /* shared: workers must release the group */
	uint32_t bad;             /* shared: a worker found it corrupt */
	/* control thread only */
	int *chan_owner;          /* connection index + 1, 0 = free */
	int *waiter_owner;
	unsigned int n_procs;
	struct pl_wgroup *wg[];   /* n_workers */
};

/* A control connection (one attached process). */
struct pl_conn {
	int fd;
	pid_t pid;
	uid_t uid;
	int group;                /* group index, -1 before HELLO */
	int stats_idx;            /* clients[] entry, -1 = none */
	unsigned int n_chans, n_waiters;
	char name[64];
};

struct pl_ctl {
	struct dpsock_stack *d;
	unsigned int n_workers;
	pthread_t thread;
	bool running;
	int lfd;                  /* listening socket */
	int efd;                  /* wakes the control thread (stop, a bad group) */
	uint32_t stop;            /* shared: the thread must return */
	char path[108];
	int wake_fd;              /* the wake page, writable (dpsockd's) */
	int wake_ro_fd;           /* the same, read-only: what clients get */
	struct dpsock_pl_wake *wake; /* wake page, n_workers lines */
	size_t wake_size;
	struct pl_group **groups; /* shared: [max_groups], release/acquire */
	uint32_t max_groups;
	uint32_t groups_hi;       /* shared: 1 + highest group index ever used */
	uint64_t gen;             /* shared: removal generation */
	struct { uint64_t v; uint8_t pad[56]; } *ack; /* shared: [n_workers] */
	struct pl_conn conns[PL_MAX_CONNS];
	unsigned int n_conns;
	uint32_t max_waiters;
	uint32_t slots;           /* slots per worker per group (pl_fit_address_space) */
	uint32_t tko_freeze;      /* shared: 1 a takeover freezes the thread, 2 handed over */
	uint32_t tko_frozen;      /* shared: the thread is frozen */
};

extern struct pl_ctl dpsock_pl_ctl;

/* clients.c: the main-thread hooks of dpsockd's app (dpsockd.c) */
int dpsock_pl_main_init(void *arg);
extern const struct dpsock_app dpsock_preload_app;
int dpsock_pl_main_start(void *arg);
void dpsock_pl_main_stop(void *arg);
void dpsock_pl_main_fini(void *arg);
/* A worker found group g corrupt: ask the control thread to drop it (any
 * thread). */
void dpsock_pl_group_report_bad(struct pl_group *g);

/* takeover (stack/takeover/takeover.h): clients.c's control side */
struct dpsock_tko_buf;
struct dpsock_tko_fds;
int dpsock_pl_tko_freeze(void *arg);
int dpsock_pl_tko_export(void *arg, struct dpsock_tko_buf *b, struct dpsock_tko_fds *f);
void dpsock_pl_tko_resume(void *arg, bool handed);
/* serve.c's worker side: its part of every group, on the worker */
int dpsock_pl_tko_worker_export(struct dpsock_worker *w, void *arg, struct dpsock_tko_buf *b);

/* serve.c: the worker hooks; buffers made by main_init, freed by main_fini */
int dpsock_pl_srv_init(unsigned int n_workers);
int dpsock_pl_worker_init(struct dpsock_worker *w, void *arg);
unsigned int dpsock_pl_worker_poll(struct dpsock_worker *w, void *arg);
bool dpsock_pl_worker_pending(struct dpsock_worker *w, void *arg);
void dpsock_pl_worker_fini(struct dpsock_worker *w, void *arg);
/* After the workers stopped: free the workers' private buffers. */
void dpsock_pl_srv_free(void);

/* Layout helpers (both files) */
static inline struct dpsock_pl_slot *
pl_slot_hdr(const struct pl_group *g, uint32_t num)
{
	return (struct dpsock_pl_slot *)(void *)(g->seg + g->geo.off_slots +
						 (uint64_t)num * g->geo.slot_stride);
}

/* A slot's FIFO data (preload_wire.h: off_data) */
static inline unsigned char *
pl_slot_data(const struct pl_group *g, uint32_t num)
{
	return g->seg + g->geo.off_data + (uint64_t)num * g->geo.data_stride;
}

static inline unsigned char *
pl_chan_block(const struct pl_group *g, uint32_t c, uint32_t k)
{
	return g->seg + g->geo.off_channels +
	       ((uint64_t)c * g->geo.n_workers + k) * g->geo.chan_stride;
}

static inline struct dpsock_pl_waiter *
pl_waiter_hdr(const struct pl_group *g, uint32_t id)
{
	return (struct dpsock_pl_waiter *)(void *)(g->seg + g->geo.off_waiters +
						   (uint64_t)id * g->geo.waiter_stride);
}

static inline unsigned char *
pl_wait_ring(const struct pl_group *g, uint32_t id, uint32_t k)
{
	return (unsigned char *)pl_waiter_hdr(g, id) + DPSOCK_PL_WAITER_HDR +
	       (uint64_t)k * g->geo.wait_ring_size;
}

#endif /* DPSOCK_SERVER_PRIV_H */
