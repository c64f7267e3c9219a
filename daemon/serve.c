/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The workers' side of the preload hand-off (docs/preload.md): every loop,
 * each worker drains the command ring of every live channel for it, runs
 * the commands on its lwIP instance through the native API (dpsock.h), and
 * publishes what happens to the group's sockets in their slots and FIFOs,
 * waking the watchers.
 *
 * Nothing from the segment is trusted: a command is copied out of its ring
 * and validated (op, slot number, generation, owner worker); shim-written
 * slot fields (watch[], queued[], doorbells) are read once and checked; a
 * ring whose indices are impossible, or a datagram header that lies about
 * its length, drops the whole group (clients.c disconnects it) and
 * touches no other group. The per-slot state that matters (native socket,
 * held data, pending close) lives in struct pl_wslot, in daemon memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sched.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dpsock_tcp_rec.h"

#include "core/stack_priv.h"
#include "sock/sock_priv.h"
#include "core/log_priv.h"
#include "mcast/mcast_priv.h"
#include "netview/netview_priv.h"
#include "server_priv.h"
#include "takeover/takeover.h"

/* Linux's option numbers (<netinet/tcp.h> clashes with lwIP's TCP_MSS) */
#define PL_TCP_NODELAY 1
#define PL_TCP_KEEPIDLE 4
#define PL_TCP_KEEPINTVL 5
#define PL_TCP_KEEPCNT 6
#define PL_TCP_CONGESTION 13

#define PL_BATCH_MAX 1024u
#define PL_TX_CHUNK (256u * 1024)  /* bytes moved from one tx FIFO per pass */
#define PL_RECLAIM_IDLE_MS 1000    /* a slot's FIFOs idle this long give their pages back */
#define PL_RECLAIM_BATCH 64        /* slots looked at per group and poll */
#define PL_KA_IDLE 7200
#define PL_KA_INTVL 75
#define PL_KA_CNT 9

/* Per worker, private. */
struct pl_orphan;

struct pl_worker {
	uint32_t cpu1;            /* the CPU this worker runs on, plus one */
	uint64_t now;             /* timer cycles, taken at each poll */
	uint64_t rc_idle;         /* timer cycles a FIFO idles before its pages go back */
	uint64_t owners_next;     /* timer cycles: next owners_publish pass */
	struct pl_orphan *orphans; /* connections still sending after their group ended */
	size_t orphan_bytes;      /* what they hold */
	bool tko_settle;          /* a takeover restored this worker's part: settle it at the
				   * first poll (after the commit, pl_tko_settle) */
	struct dpsock_pl_cmd cmds[PL_BATCH_MAX];
	/* a datagram record whole: header, data, padding to 8 */
	unsigned char dgram[sizeof(struct dpsock_pl_dgram) + sizeof(struct dpsock_pl_dgram6) +
			    DPSOCK_PL_DGRAM_MAX + 8];
} __rte_cache_aligned;

static struct pl_worker *pl_workers;

static const struct dpsock_sock_ops pl_ops;
static int pl_tko_worker_import(struct dpsock_worker *w);
static void pl_tko_settle(struct pl_ctl *c, unsigned int k);
static size_t tx_pump(struct pl_wslot *ws);
static void mate_unpair(struct pl_wslot *ws);

static inline struct dpsock_pl_slot *
sh_of(const struct pl_wslot *ws)
{
	return pl_slot_hdr(ws->wg->g, ws->num);
}

/* ---------------------------------------------------------------------- */
/* waking the watchers */

/* A group broke the protocol: stop serving it and have it dropped. */
static void
group_bad(struct pl_wgroup *wg)
{
	if (wg->bad)
		return;
	wg->bad = true;
	/* counted once per group, by the first worker that finds it */
	if (__atomic_exchange_n(&wg->g->bad, 1, __ATOMIC_ACQ_REL) == 0)
		dpsock_stat_add(&wg->w->stats->pl_clients_dropped, 1);
	dpsock_pl_group_report_bad(wg->g);
}

static void
wake_mark(struct pl_wgroup *wg, uint32_t id)
{
	wg->wake_mask[id / 64] |= 1ull << (id % 64);
	wg->wake_pending = true;
}

/* Wake waiter id: its eventfd, or its futex word (wire: armed). Returns true
 * when a wake-up went out. */
static bool
waiter_wake(struct pl_group *g, uint32_t id, uint32_t armed)
{
	static const uint64_t one = 1;
	struct dpsock_pl_waiter *h = pl_waiter_hdr(g, id);

	if (armed == DPSOCK_PL_ARMED_FUTEX) {
		/* the shim waits while the word holds what it read before it
		 * armed: the increment makes a wake-up that comes before its
		 * FUTEX_WAIT return at once, instead of being lost */
		__atomic_add_fetch(&h->futex, 1, __ATOMIC_RELEASE);
		return syscall(SYS_futex, &h->futex, FUTEX_WAKE, 1, NULL, NULL, 0) >= 0;
	}
	return write(g->waiter_fd[id], &one, sizeof(one)) == sizeof(one);
}

/* Wake every marked waiter that is armed. */
static void
wake_flush(struct pl_wgroup *wg)
{
	struct pl_group *g = wg->g;
	uint32_t words = (g->geo.max_waiters + 63) / 64, i;
	uint32_t cpu1 = pl_workers[wg->k].cpu1, armed;
	bool yield = false;

	if (!wg->wake_pending)
		return;
	wg->wake_pending = false;
	/* seq_cst: pairs with the shim's fence between storing armed = 1 and
	 * re-checking its wait rings and slots: either it sees what we
	 * published (wait ring entry, slot, reply) or we see armed. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < words; i++) {
		uint64_t m = wg->wake_mask[i];

		wg->wake_mask[i] = 0;
		while (m != 0) {
			uint32_t id = i * 64 + (uint32_t)__builtin_ctzll(m);

			m &= m - 1;
			/* acquire: pairs with the control thread's release store;
			 * waiter_fd[id] is valid while it reads 1 (the fd is only
			 * closed after this worker acknowledged its removal) */
			if (!__atomic_load_n(&g->waiter_live[id], __ATOMIC_ACQUIRE))
				continue;
			armed = __atomic_load_n(&pl_waiter_hdr(g, id)->armed, __ATOMIC_RELAXED);
			if (armed == 0)
				continue;
			if (waiter_wake(g, id, armed)) {
				dpsock_stat_add(&wg->w->stats->pl_wakeups, 1);
				__atomic_store_n(&wg->wakeups, wg->wakeups + 1, __ATOMIC_RELAXED);
				yield |= cpu1 != 0 && wg->w->yield != DPSOCK_YIELD_NEVER &&
					 __atomic_load_n(&pl_waiter_hdr(g, id)->cpu,
							 __ATOMIC_RELAXED) == cpu1;
			}
		}
	}
	/* A thread we woke sleeps on our CPU: offer it the CPU now, once
	 * (worker.yield = auto or always). This is all a worker knows of the
	 * threads of its CPU: yielding again on the following idle passes
	 * until it ran was measured (docs/perf/handoff.md) to change nothing
	 * but the system calls: the scheduler (EEVDF) runs the woken thread
	 * when its fair share says so, whoever yields meanwhile. */
	if (yield) {
		dpsock_stat_add(&wg->w->stats->pl_yields, 1);
		sched_yield();
	}
}

/* ---------------------------------------------------------------------- */
/* giving FIFO pages back */

/*
 * A slot's FIFO data lives in the segment's sparse data area
 * (preload_wire.h): pages exist where bytes went through. Every slot whose
 * FIFOs moved bytes is on its group's reclaim list, in the order it was
 * put there (rc_linked); activity only stamps rc_last, so a busy slot costs
 * a store, not a relink. A slot at the head whose last activity is
 * PL_RECLAIM_IDLE_MS old gives its pages back, each FIFO that is empty:
 * the rx FIFO (the worker produces it: nobody reads an empty FIFO's data)
 * at once, the tx FIFO (the program produces it) while the worker holds
 * its lock (DPSOCK_PL_LOCK_DAEMON, taken only if free: the worker never
 * waits for a program). A FIFO still holding bytes, or whose lock was
 * busy, keeps its pages and the slot goes back to the tail. A freed slot
 * gives all of its data back (nobody uses it; a slot taken again before
 * that keeps its pages, warm). The cost is O(slots that moved bytes), one
 * fallocate per slot that went idle, none per byte.
 */
static void
slot_active(struct pl_wslot *ws)
{
	struct pl_wgroup *wg = ws->wg;
	uint64_t now = pl_workers[wg->k].now;

	ws->rc_last = now;
	if (ws->rc_on)
		return;
	ws->rc_on = 1;
	ws->rc_linked = now;
	ws->rc_next = NULL;
	ws->rc_prev = wg->rc_tail;
	if (wg->rc_tail != NULL)
		wg->rc_tail->rc_next = ws;
	else
		wg->rc_head = ws;
	wg->rc_tail = ws;
}

static void
rc_unlink(struct pl_wslot *ws)
{
	struct pl_wgroup *wg = ws->wg;

	if (!ws->rc_on)
		return;
	if (ws->rc_prev != NULL)
		ws->rc_prev->rc_next = ws->rc_next;
	else
		wg->rc_head = ws->rc_next;
	if (ws->rc_next != NULL)
		ws->rc_next->rc_prev = ws->rc_prev;
	else
		wg->rc_tail = ws->rc_prev;
	ws->rc_on = 0;
	ws->rc_next = ws->rc_prev = NULL;
}

/* Drop the pages of [off, off + len) of slot ws's data. */
static void
rc_punch(struct pl_wslot *ws, uint64_t off, uint64_t len)
{
	struct pl_group *g = ws->wg->g;

	if (fallocate(g->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)(g->geo.off_data + (uint64_t)ws->num * g->geo.data_stride + off),
		      (off_t)len) != 0) {
		DPSOCK_LOG(WARNING, preload, "giving a FIFO's pages back: fallocate: %s",
			   strerror(errno));
		return;
	}
	dpsock_stat_add(&ws->wg->w->stats->pl_fifo_reclaims, 1);
}

/* Give back what ws's FIFOs hold no bytes of. Returns true when nothing is
 * left to give back. */
static bool
rc_reclaim(struct pl_wslot *ws)
{
	const struct dpsock_pl_seg *geo = &ws->wg->g->geo;
	struct dpsock_pl_slot *sh = sh_of(ws);
	bool rx_done, tx_done = false;
	uint32_t zero = 0;

	if (!ws->in_use) {
		rc_punch(ws, 0, geo->data_stride);
		return true;
	}
	/* rx: fresh loads of the shim's cons (acquire: its reads of the
	 * bytes below it are done) */
	rx_done = ws->held == NULL && dpsock_fifo_free(&ws->rx) == dpsock_fifo_prod_size(&ws->rx);
	/* tx: acquire pairs with the shim's release in shim_unlock; the
	 * FIFO as the last writer left it */
	if (__atomic_compare_exchange_n(&sh->tx_lock, &zero, DPSOCK_PL_LOCK_DAEMON, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		uint32_t old;

		tx_done = dpsock_fifo_used(&ws->tx) == 0 && !dpsock_fifo_cons_corrupt(&ws->tx);
		if (tx_done && rx_done)
			rc_punch(ws, 0, geo->data_stride);
		else if (tx_done)
			rc_punch(ws, geo->tx_data_off, geo->tx_fifo_size);
		/* release: nothing of ours to publish but the pages' absence */
		old = __atomic_exchange_n(&sh->tx_lock, 0, __ATOMIC_RELEASE);
		if (old & DPSOCK_PL_LOCK_WAITERS)
			syscall(SYS_futex, &sh->tx_lock, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	if (rx_done && !tx_done)
		rc_punch(ws, geo->rx_data_off, geo->rx_fifo_size);
	return rx_done && tx_done;
}

/* The group's slots that idled long enough give their pages back (at most
 * PL_RECLAIM_BATCH per call). Returns the slots looked at. */
static unsigned int
rc_sweep(struct pl_wgroup *wg, struct pl_worker *pw)
{
	unsigned int n = 0;
	struct pl_wslot *ws;

	while ((ws = wg->rc_head) != NULL && n < PL_RECLAIM_BATCH &&
	       pw->now - ws->rc_linked >= pw->rc_idle) {
		n++;
		rc_unlink(ws);
		if (pw->now - ws->rc_last < pw->rc_idle || !rc_reclaim(ws)) {
			/* busy since, or bytes still in it: look again later */
			slot_active(ws);
			ws->rc_linked = ws->rc_last;
		}
	}
	return n;
}

/* The slot changed: publish `change`, queue it on every watcher's wait
 * ring (once, until the shim takes it out) and mark the waiters. */
static void
slot_notify(struct pl_wslot *ws)
{
	struct pl_wgroup *wg = ws->wg;
	struct pl_group *g = wg->g;
	struct dpsock_pl_slot *sh = sh_of(ws);
	unsigned int i;

	slot_active(ws);
	ws->change++;
	/* release: the slot's fields and FIFO contents written before are
	 * visible to a shim that acquires change */
	__atomic_store_n(&sh->change, ws->change, __ATOMIC_RELEASE);
	/* seq_cst: pairs with the shim's fence between clearing queued[i] (or
	 * filling watch[i]) and re-reading the slot: either it sees this
	 * change, or we see its queued[i] == 0 / its watch entry. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < DPSOCK_PL_WATCH; i++) {
		uint32_t id = __atomic_load_n(&sh->watch[i], __ATOMIC_RELAXED);
		uint64_t e = ws->num;

		if (id == 0)
			continue;
		id--;
		if (id >= g->geo.max_waiters ||
		    !__atomic_load_n(&g->waiter_live[id], __ATOMIC_ACQUIRE))
			continue; /* a bogus or stale id: nobody to tell */
		if (__atomic_load_n(&sh->queued[i], __ATOMIC_RELAXED))
			continue;
		/* marked before the enqueue: the shim clears it when it takes
		 * the entry out, which may be at once */
		__atomic_store_n(&sh->queued[i], 1, __ATOMIC_RELAXED);
		if (dpsock_spsc_enqueue_burst(&wg->wait[id], &e, 1) == 0) {
			if (dpsock_spsc_prod_corrupt(&wg->wait[id])) {
				group_bad(wg);
				return;
			}
			/* Not queued: unmark it, so that the slot's next change
			 * tries again (a slot marked queued that never reached
			 * the ring would never be named again: the stall of
			 * thousands of connections). The shim clears only what
			 * it dequeued, so nobody else writes this entry now.
			 * release: the shim that sees overflow re-examines every
			 * slot it watches, after this change */
			__atomic_store_n(&sh->queued[i], 0, __ATOMIC_RELAXED);
			__atomic_store_n(&pl_waiter_hdr(g, id)->overflow, 1, __ATOMIC_RELEASE);
			dpsock_stat_add(&wg->w->stats->pl_wait_overflows, 1);
		}
		wake_mark(wg, id);
	}
}

static void
slot_set_state(struct pl_wslot *ws, uint32_t state, int32_t err)
{
	struct dpsock_pl_slot *sh = sh_of(ws);

	ws->state = (uint8_t)state;
	__atomic_store_n(&sh->err, err, __ATOMIC_RELAXED);
	/* release: the shim acquires the state, then reads err (and, at a
	 * stop, the segment's STOPPED, stored before) */
	__atomic_store_n(&sh->state, state, __ATOMIC_RELEASE);
}

static void
slot_set_flags(struct pl_wslot *ws, uint32_t add)
{
	ws->flags |= add;
	__atomic_store_n(&sh_of(ws)->flags, ws->flags, __ATOMIC_RELAXED);
}

static void
slot_set_addrs(struct pl_wslot *ws)
{
	struct dpsock_pl_slot *sh = sh_of(ws);
	union dpsock_sockaddr l = { 0 }, r = { 0 };
	bool v6;

	if (ws->s == NULL)
		return;
	dpsock_sock_local(ws->s, &l);
	if (ws->kind == DPSOCK_PL_TCP_CONN)
		dpsock_sock_peer(ws->s, &r);
	/* sin_port and sin6_port sit at the same offset; a listener of both
	 * families names itself IPv4 (0.0.0.0: the shim says "::") */
	v6 = l.sa.sa_family == AF_INET6;
	if (v6) {
		memcpy(sh->laddr6, &l.in6.sin6_addr, 16);
		memcpy(sh->raddr6, &r.in6.sin6_addr, 16);
		l.in.sin_addr.s_addr = r.in.sin_addr.s_addr = 0;
	}
	__atomic_store_n(&sh->ip6, v6, __ATOMIC_RELAXED);
	if (l.in.sin_addr.s_addr != 0 || ws->kind == DPSOCK_PL_TCP_CONN)
		__atomic_store_n(&sh->laddr, l.in.sin_addr.s_addr, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->lport, l.in.sin_port, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->raddr, r.in.sin_addr.s_addr, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->rport, r.in.sin_port, __ATOMIC_RELAXED);
}

static void
slot_update_tx_space(struct pl_wslot *ws)
{
	if (ws->s != NULL && ws->kind == DPSOCK_PL_TCP_CONN)
		__atomic_store_n(&sh_of(ws)->tx_space, (uint32_t)dpsock_send_space(ws->s),
				 __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------- */
/* slots */

static struct pl_wslot *
slot_alloc(struct pl_wgroup *wg, uint32_t kind)
{
	const struct dpsock_pl_seg *geo = &wg->g->geo;
	struct dpsock_pl_slot *sh;
	struct pl_wslot *ws;
	unsigned char *base, *data;
	struct pl_wslot *rc_next, *rc_prev;
	uint64_t rc_linked;
	uint32_t i, gen, change;
	uint8_t rc_on;
	unsigned int j;

	if (wg->n_free > 0) {
		i = wg->free_stack[--wg->n_free];
	} else if (wg->n_fresh < geo->slots_per_worker) {
		i = wg->n_fresh++;
		/* relaxed: a walk over the slots (the shim's exec) reads up to
		 * it; the slots themselves are published by the reply or the
		 * accept record */
		__atomic_store_n(&((struct dpsock_pl_seg *)(void *)wg->g->seg)->slots_hi[wg->k],
				 wg->n_fresh, __ATOMIC_RELAXED);
	} else {
		return NULL;
	}
	wg->recent[wg->recent_at++ % PL_OWNERS_RECENT] = i;
	ws = &wg->slots[i];
	gen = ws->gen + 1 ? ws->gen + 1 : 1;
	change = ws->change;
	/* a slot freed with its pages still there stays on the reclaim list */
	rc_on = ws->rc_on;
	rc_next = ws->rc_next;
	rc_prev = ws->rc_prev;
	rc_linked = ws->rc_linked;
	memset(ws, 0, sizeof(*ws));
	ws->rc_on = rc_on;
	ws->rc_next = rc_next;
	ws->rc_prev = rc_prev;
	ws->rc_linked = rc_linked;
	ws->wg = wg;
	ws->num = wg->k * geo->slots_per_worker + i;
	ws->gen = gen;
	ws->change = change;
	ws->in_use = 1;
	ws->kind = (uint8_t)kind;
	ws->ka_idle = PL_KA_IDLE;
	ws->ka_intvl = PL_KA_INTVL;
	ws->ka_cnt = PL_KA_CNT;
	ws->tos = ws->ttl = -1;
	ws->rx_cap = geo->rx_fifo_size;
	sh = sh_of(ws);
	base = (unsigned char *)sh;
	/* The FIFOs start empty for each new socket. Nobody else uses them:
	 * the previous owner's CLOSE promised it, and the shim learns the new
	 * slot only from the reply / accept record written after this. Their
	 * data pages went back when the previous socket's FIFOs drained
	 * (reclaim), or are still what it left: either way nothing reads
	 * them before they are written again. */
	data = pl_slot_data(wg->g, ws->num);
	if (dpsock_fifo_init_hdr(base + geo->rx_fifo_off, geo->rx_fifo_size) != 0 ||
	    dpsock_fifo_init_hdr(base + geo->tx_fifo_off, geo->tx_fifo_size) != 0 ||
	    dpsock_fifo_prod_attach_at(&ws->rx, base + geo->rx_fifo_off, data + geo->rx_data_off,
				       geo->rx_fifo_size) != 0 ||
	    dpsock_fifo_cons_attach_at(&ws->tx, base + geo->tx_fifo_off, data + geo->tx_data_off,
				       geo->tx_fifo_size) != 0) {
		ws->in_use = 0;
		wg->free_stack[wg->n_free++] = i;
		return NULL;
	}
	for (j = 0; j < DPSOCK_PL_WATCH; j++) {
		__atomic_store_n(&sh->watch[j], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sh->queued[j], 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&sh->owner_pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->owner_fd, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->poll_hits, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->poll_misses, 0, __ATOMIC_RELAXED);
	ws->owner_fd = -1;
	__atomic_store_n(&sh->tx_doorbell, 1, __ATOMIC_RELAXED); /* not looking: kick me */
	__atomic_store_n(&sh->rx_doorbell, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->want_tx, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->flags, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->err, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->state, DPSOCK_PL_ST_NONE, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->laddr, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->raddr, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->ip6, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->lport, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->rport, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->tx_space, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->kind, kind, __ATOMIC_RELAXED);
	/* release: the slot's reset fields are visible before its new gen */
	__atomic_store_n(&sh->gen, gen, __ATOMIC_RELEASE);
	__atomic_store_n(&wg->n_socks, wg->n_socks + 1, __ATOMIC_RELAXED);
	return ws;
}

static void
held_release_all(struct pl_wslot *ws)
{
	while (ws->held != NULL) {
		struct pl_held *h = ws->held;

		ws->held = h->next;
		dpsock_rx_release(h->rx);
		free(h);
	}
	ws->held_tail = NULL;
}

/* No slot left for a new socket of this group on this worker: the limit a
 * user meets (preload.slots), said once per group and worker. Returns
 * -ENOBUFS, the error a call that needed the slot gets (the kernel's when
 * socket memory runs out). */
static int
slots_exhausted(struct pl_wgroup *wg, const char *what)
{
	dpsock_stat_add(&wg->w->stats->pl_slots_exhausted, 1);
	if (!wg->warned_slots) {
		wg->warned_slots = 1;
		DPSOCK_LOG(WARNING, preload, "group %u, worker %u: all %u socket slots in use "
			   "(preload.slots): %s (counter pl_slots_exhausted)",
			   wg->g->idx, wg->k, wg->g->geo.slots_per_worker, what);
	}
	return -ENOBUFS;
}

/* Back to the free list; the socket must be gone (closed, aborted, or freed
 * by the stack). */
static void
slot_free(struct pl_wslot *ws)
{
	struct pl_wgroup *wg = ws->wg;
	struct dpsock_pl_slot *sh = sh_of(ws);

	if (!ws->in_use)
		return;
	mate_unpair(ws);
	held_release_all(ws);
	if (ws->s != NULL)
		dpsock_sock_set_user(ws->s, NULL);
	ws->s = NULL;
	ws->in_use = 0;
	slot_active(ws); /* its pages go back once it idled (or it is taken again) */
	__atomic_store_n(&sh->kind, DPSOCK_PL_FREE, __ATOMIC_RELAXED);
	__atomic_store_n(&sh->state, DPSOCK_PL_ST_NONE, __ATOMIC_RELAXED);
	wg->free_stack[wg->n_free++] = ws->num % wg->g->geo.slots_per_worker;
	__atomic_store_n(&wg->n_socks, wg->n_socks - 1, __ATOMIC_RELAXED);
}

/* A listener's accept records not yet taken: reset those connections (the
 * app closed the listener; nobody will accept them). After CLOSE the shim
 * does not touch the slot, so the worker may read its rx FIFO. */
static void
listener_reset_backlog(struct pl_wslot *lws)
{
	const struct dpsock_pl_seg *geo = &lws->wg->g->geo;
	struct dpsock_fifo_cons cons;
	struct dpsock_pl_accept a;
	unsigned char *rxr = (unsigned char *)sh_of(lws) + geo->rx_fifo_off;

	if (dpsock_fifo_cons_attach_at(&cons, rxr, pl_slot_data(lws->wg->g, lws->num) + geo->rx_data_off,
				       geo->rx_fifo_size) != 0)
		return;
	while (dpsock_fifo_read(&cons, &a, sizeof(a)) == sizeof(a)) {
		struct pl_wslot *c;

		if (a.slot / geo->slots_per_worker != lws->wg->k)
			continue;
		c = &lws->wg->slots[a.slot % geo->slots_per_worker];
		if (!c->in_use || c->gen != a.gen || c->kind != DPSOCK_PL_TCP_CONN)
			continue;
		if (c->s != NULL)
			dpsock_abort(c->s);
		c->s = NULL;
		slot_free(c);
	}
}

/* The socket closes now (orderly for TCP: FIN after what lwIP queued). */
static void
slot_close_now(struct pl_wslot *ws, bool abortive)
{
	if (ws->kind == DPSOCK_PL_TCP_LISTENER)
		listener_reset_backlog(ws);
	mate_unpair(ws);
	if (ws->s != NULL) {
		struct dpsock_sock *s = ws->s;

		dpsock_sock_set_user(s, NULL);
		ws->s = NULL;
		if (abortive && ws->kind == DPSOCK_PL_TCP_CONN)
			dpsock_abort(s);
		else
			dpsock_close(s);
	}
	slot_free(ws);
}

/*
 * A connection of a group that ended whose end of stream the program had
 * declared (CLOSE, or SHUTDOWN of its sending side) with data still in its
 * tx FIFO, as a sender that writes and exits leaves it. The kernel sends
 * such data before its FIN; so does this. The rest of the FIFO is copied
 * out of the segment (which goes with the group) and fed to lwIP as it
 * takes it; then the socket closes. At most PL_ORPHAN_BYTES per worker:
 * beyond, the connection is reset.
 */
#define PL_ORPHAN_BYTES (64u << 20)

struct pl_orphan {
	struct dpsock_sock *s;
	struct pl_worker *pw;
	struct pl_orphan *next, **pprev; /* on pw->orphans */
	size_t off, len;
	unsigned char data[];
};

static const struct dpsock_sock_ops orphan_ops;

static void
orphan_free(struct pl_orphan *o)
{
	*o->pprev = o->next;
	if (o->next != NULL)
		o->next->pprev = o->pprev;
	o->pw->orphan_bytes -= o->len;
	free(o);
}

/* Send what lwIP takes; close once all went (or the connection failed). */
static void
orphan_pump(struct pl_orphan *o)
{
	while (o->off < o->len) {
		ssize_t r = dpsock_send(o->s, o->data + o->off, o->len - o->off, 0);

		if (r == -EAGAIN)
			return; /* writable resumes */
		if (r < 0)
			break;  /* reset or shut: nothing more can go */
		o->off += (size_t)r;
		if (o->off < o->len)
			return; /* a short count: writable follows */
	}
	dpsock_close(o->s);
	orphan_free(o);
}

static void
orphan_writable(struct dpsock_sock *s, size_t space)
{
	RTE_SET_USED(space);
	orphan_pump(dpsock_sock_user(s));
}

static void
orphan_closed(struct dpsock_sock *s, int reason)
{
	/* 0: the peer's FIN; it may still read what we send */
	if (reason != 0)
		orphan_free(dpsock_sock_user(s)); /* the socket is gone */
}

static const struct dpsock_sock_ops orphan_ops = {
	.writable = orphan_writable,
	.closed = orphan_closed,
};

/* ws: a TCP connection of a group that ends, to close in order. Hand its
 * socket and what its tx FIFO holds to an orphan, or reset it when that
 * cannot be. The slot is freed. */
static void
slot_orphan(struct pl_wslot *ws)
{
	struct pl_worker *pw = &pl_workers[ws->wg->k];
	struct dpsock_sock *s = ws->s;
	struct pl_orphan *o = NULL;
	struct iovec iov[2];
	uint32_t n;

	n = dpsock_fifo_read_peek(&ws->tx, UINT32_MAX, iov);
	if (n <= PL_ORPHAN_BYTES - pw->orphan_bytes)
		o = malloc(sizeof(*o) + n);
	if (o == NULL) {
		DPSOCK_LOG(WARNING, preload, "slot %u: %u bytes a closed connection still had "
			   "to send when its program exited: over the %u MiB the worker keeps "
			   "for such connections, reset", ws->num, n, PL_ORPHAN_BYTES >> 20);
		slot_close_now(ws, true);
		return;
	}
	memcpy(o->data, iov[0].iov_base, iov[0].iov_len);
	if (iov[1].iov_len)
		memcpy(o->data + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
	dpsock_fifo_read_consume(&ws->tx, n);
	o->s = s;
	o->pw = pw;
	o->off = 0;
	o->len = n;
	o->next = pw->orphans;
	o->pprev = &pw->orphans;
	if (pw->orphans != NULL)
		pw->orphans->pprev = &o->next;
	pw->orphans = o;
	pw->orphan_bytes += n;
	ws->s = NULL;
	slot_free(ws);
	dpsock_sock_set_ops(s, &orphan_ops);
	dpsock_sock_set_user(s, o);
	orphan_pump(o);
}

/* ---------------------------------------------------------------------- */
/* receive */

/* Copy rx[off..] into the slot's rx FIFO, as much as fits. */
static size_t
rx_to_fifo(struct pl_wslot *ws, const struct dpsock_rx *rx, size_t off)
{
	size_t len = dpsock_rx_len(rx);
	struct iovec iov[2];
	uint32_t n;

	if (off >= len)
		return 0;
	n = dpsock_fifo_write_reserve(&ws->rx, len - off, iov);
	if (n == 0)
		return 0;
	dpsock_rx_copy(rx, iov[0].iov_base, iov[0].iov_len, off);
	if (iov[1].iov_len)
		dpsock_rx_copy(rx, iov[1].iov_base, iov[1].iov_len, off + iov[0].iov_len);
	dpsock_fifo_write_commit(&ws->rx, n);
	return n;
}

/* Move held data into the FIFO; when it does not all fit, ring rx_doorbell
 * so that the shim sends RX_KICK once it has read. */
static void
rx_drain(struct pl_wslot *ws)
{
	struct dpsock_pl_slot *sh = sh_of(ws);
	bool moved = false;

	for (;;) {
		while (ws->held != NULL) {
			struct pl_held *h = ws->held;
			size_t n = rx_to_fifo(ws, h->rx, h->off);

			h->off += n;
			moved |= n > 0;
			if (h->off < dpsock_rx_len(h->rx))
				break;
			ws->held = h->next;
			if (ws->held == NULL)
				ws->held_tail = NULL;
			dpsock_rx_release(h->rx); /* opens lwIP's window by its size */
			free(h);
		}
		if (ws->held == NULL)
			break;
		__atomic_store_n(&sh->rx_doorbell, 1, __ATOMIC_RELAXED);
		/* seq_cst: pairs with the shim's fence between reading the FIFO
		 * and exchanging rx_doorbell: either it sees the doorbell (and
		 * kicks), or this fresh look at the FIFO sees the room it made. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (dpsock_fifo_free(&ws->rx) == 0)
			break;
		__atomic_exchange_n(&sh->rx_doorbell, 0, __ATOMIC_RELAXED);
	}
	if (ws->held == NULL && ws->eof_pending) {
		ws->eof_pending = 0;
		slot_set_flags(ws, DPSOCK_PL_F_RD_EOF);
		moved = true;
	}
	if (moved)
		slot_notify(ws);
}

/* ---------------------------------------------------------------------- */
/* send */

static void
tx_discard(struct pl_wslot *ws)
{
	uint32_t n;
	struct iovec iov[2];

	while ((n = dpsock_fifo_read_peek(&ws->tx, UINT32_MAX, iov)) > 0)
		dpsock_fifo_read_consume(&ws->tx, n);
}

/* UDP: send the datagrams queued in the tx FIFO. Returns false when the
 * FIFO holds something that is not a datagram (the group is dropped). */
static bool
udp_tx(struct pl_wslot *ws, size_t *moved)
{
	struct pl_worker *pw = &pl_workers[ws->wg->k];
	struct dpsock_pl_dgram h;
	struct iovec iov[2];
	uint32_t used, need, n, hl;

	for (;;) {
		used = dpsock_fifo_used(&ws->tx);
		if (used == 0)
			return true;
		if (used < sizeof(h))
			return false; /* a datagram is written whole */
		n = dpsock_fifo_read_peek(&ws->tx, sizeof(h), iov);
		if (n != sizeof(h))
			return false;
		memcpy(&h, iov[0].iov_base, iov[0].iov_len);
		if (iov[1].iov_len)
			memcpy((unsigned char *)&h + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
		if (h.len > DPSOCK_PL_DGRAM_MAX)
			return false;
		hl = dpsock_pl_dgram_hlen(h.flags);
		need = hl + ((h.len + 7u) & ~7u);
		if (need > used)
			return false;
		n = dpsock_fifo_read_peek(&ws->tx, need, iov);
		if (n != need)
			return false;
		/* one contiguous copy (the stack copies it again into pbufs) */
		memcpy(pw->dgram, iov[0].iov_base, iov[0].iov_len);
		if (iov[1].iov_len)
			memcpy(pw->dgram + iov[0].iov_len, iov[1].iov_base, iov[1].iov_len);
		if (ws->s != NULL) {
			union dpsock_sockaddr to = { .in = { .sin_family = AF_INET,
							     .sin_addr.s_addr = h.addr,
							     .sin_port = h.port } };

			if (h.flags & DPSOCK_PL_DGRAM_IP6) {
				to.in6 = (struct sockaddr_in6){ .sin6_family = AF_INET6,
								.sin6_port = h.port };
				memcpy(&to.in6.sin6_addr, pw->dgram + sizeof(h), 16);
			}
			/* errors (no route, no buffer, IPv6 from a socket of
			 * IPv4) lose the datagram, as UDP may */
			dpsock_udp_sendto(ws->s, pw->dgram + hl, h.len, &to);
		}
		dpsock_fifo_read_consume(&ws->tx, need);
		*moved += need;
	}
}

/* TCP: move tx FIFO data into lwIP's send buffer while it takes it. */
static void
tcp_tx(struct pl_wslot *ws, size_t *moved)
{
	struct iovec iov[2];
	size_t budget = PL_TX_CHUNK;
	uint32_t n;

	while (ws->s != NULL && !ws->tx_blocked && budget > 0) {
		size_t sent = 0;
		unsigned int j;
		ssize_t r = 0;

		n = dpsock_fifo_read_peek(&ws->tx, budget, iov);
		if (n == 0)
			return;
		for (j = 0; j < 2 && iov[j].iov_len > 0; j++) {
			r = dpsock_send(ws->s, iov[j].iov_base, iov[j].iov_len,
					j == 0 && iov[1].iov_len ? DPSOCK_SEND_MORE : 0);
			if (r < 0)
				break;
			sent += (size_t)r;
			if ((size_t)r < iov[j].iov_len)
				break;
		}
		if (r == -EAGAIN || (r >= 0 && sent < n)) {
			ws->tx_blocked = 1; /* writable resumes */
		} else if (r < 0) {
			/* reset or shut: what is queued cannot go (the shim sees
			 * the state and err) */
			sent = n;
		}
		dpsock_fifo_read_consume(&ws->tx, (uint32_t)sent);
		*moved += sent;
		budget -= RTE_MIN(budget, sent);
		if (ws->tx_blocked || r < 0)
			return;
	}
}

/* ---------------------------------------------------------------------- */
/* connections within the host (docs/design.md decision 16) */

static void
mate_pair(struct pl_wslot *a, struct pl_wslot *b)
{
	a->mate = b;
	b->mate = a;
	a->mate_wait = b->mate_wait = 0;
	dpsock_sock_set_cut(a->s, true);
	dpsock_sock_set_cut(b->s, true);
	dpsock_stat_add(&a->wg->w->stats->cut_pairs, 1);
}

/* From here on both ends send through lwIP: whatever the mate has left goes
 * as segments behind the bytes already in ws's rx FIFO, in order. */
static void
mate_unpair(struct pl_wslot *ws)
{
	struct pl_wslot *m = ws->mate;

	if (m == NULL)
		return;
	ws->mate = m->mate = NULL;
	if (ws->s != NULL)
		dpsock_sock_set_cut(ws->s, false);
	if (m->s != NULL)
		dpsock_sock_set_cut(m->s, false);
	if (m->tx_blocked) {
		m->tx_blocked = 0;
		tx_pump(m);
	}
}

/* The other end of ws's connection is a preloaded socket of this worker
 * (*peer: its socket, NULL while it is half open under its listener). Both
 * ends are in this lwIP instance, so on this worker: no other thread ever
 * touches a pair. */
static bool
mate_here(const struct pl_wslot *ws, struct dpsock_sock **peer)
{
	return ws->wg->w->d->conf.pl_cut_through && ws->s != NULL &&
	       dpsock_tcp_loop_peer(ws->s, peer) == &pl_ops;
}

/* ws just connected to a half-open mate: it holds its tx FIFO until that
 * end is accepted and pairs the two (mate_find). */
static bool
mate_expected(const struct pl_wslot *ws)
{
	struct dpsock_sock *peer;

	return mate_here(ws, &peer) && peer == NULL;
}

/* ws was just accepted: its connecting end waiting for it? */
static void
mate_find(struct pl_wslot *ws)
{
	struct dpsock_sock *peer;
	struct pl_wslot *m;

	if (!mate_here(ws, &peer) || peer == NULL)
		return;
	m = dpsock_sock_user(peer);
	if (m == NULL || !m->in_use || !m->mate_wait || m->mate != NULL)
		return;
	mate_pair(ws, m);
	tx_pump(m); /* what it queued while it waited */
}

/* TCP to a mate: tx FIFO into the mate's rx FIFO until one is empty or the
 * other full; then the mate's reader kicks (RX_KICK) once it made room. */
static void
cut_tx(struct pl_wslot *ws, size_t *moved)
{
	struct pl_wslot *m = ws->mate;
	struct dpsock_pl_slot *msh = sh_of(m);
	size_t total = 0, n;

	for (;;) {
		n = dpsock_fifo_splice(&ws->tx, &m->rx, SIZE_MAX);
		total += n;
		if (dpsock_fifo_used(&ws->tx) == 0)
			break;
		if (n > 0)
			continue;
		__atomic_store_n(&msh->rx_doorbell, 1, __ATOMIC_RELAXED);
		/* seq_cst: as rx_drain's; either the reader sees the doorbell
		 * (and kicks), or this fresh look sees the room it made */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (dpsock_fifo_free(&m->rx) == 0) {
			ws->tx_blocked = 1;
			break;
		}
		__atomic_exchange_n(&msh->rx_doorbell, 0, __ATOMIC_RELAXED);
	}
	if (total > 0) {
		*moved += total;
		dpsock_sock_cut_moved(ws->s, m->s, total);
		slot_notify(m);
	}
}

/*
 * Take what the shim queued. When the FIFO is empty (and the worker stops
 * looking), ring tx_doorbell so that the next write sends TX_KICK; run a
 * pending shutdown or close once everything went. Returns bytes moved.
 */
static size_t
tx_pump(struct pl_wslot *ws)
{
	struct dpsock_pl_slot *sh = sh_of(ws);
	size_t moved = 0;

	for (;;) {
		if (ws->kind == DPSOCK_PL_UDP) {
			if (!udp_tx(ws, &moved)) {
				group_bad(ws->wg);
				return moved;
			}
		} else if (ws->s == NULL) {
			tx_discard(ws);
		} else if (ws->state == DPSOCK_PL_ST_CONNECTING || ws->mate_wait) {
			break; /* connected() / the mate's accept resumes */
		} else if (ws->mate != NULL && !ws->mate->closing && ws->mate->s != NULL) {
			cut_tx(ws, &moved);
			if (ws->tx_blocked)
				break;
		} else {
			if (ws->mate != NULL)
				mate_unpair(ws); /* a closing mate: lwIP answers as the kernel would */
			tcp_tx(ws, &moved);
			if (ws->tx_blocked)
				break;
		}
		if (dpsock_fifo_used(&ws->tx) != 0)
			continue; /* the chunk budget ran out: more now */
		if (ws->shut_wr == 1) {
			ws->shut_wr = 2;
			if (ws->s != NULL)
				dpsock_shutdown_write(ws->s);
			slot_set_flags(ws, DPSOCK_PL_F_WR_SHUT);
			slot_notify(ws);
		}
		if (ws->closing) {
			slot_close_now(ws, false);
			return moved;
		}
		__atomic_store_n(&sh->tx_doorbell, 1, __ATOMIC_RELAXED);
		/* seq_cst: pairs with the shim's fence between writing the FIFO
		 * and exchanging tx_doorbell: either it takes the doorbell (and
		 * kicks), or this fresh look sees its data. */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (dpsock_fifo_used(&ws->tx) == 0)
			break;
		/* data came meanwhile: take the doorbell back (if the shim took
		 * it first, its TX_KICK finds an empty FIFO: harmless) */
		__atomic_exchange_n(&sh->tx_doorbell, 0, __ATOMIC_RELAXED);
	}
	if (moved > 0) {
		slot_active(ws);
		slot_update_tx_space(ws);
		if (__atomic_exchange_n(&sh->want_tx, 0, __ATOMIC_RELAXED))
			slot_notify(ws);
	}
	return moved;
}

/* ---------------------------------------------------------------------- */
/* stack callbacks */

static void
apply_opts(struct pl_wslot *ws)
{
	if (ws->s == NULL || ws->kind != DPSOCK_PL_TCP_CONN)
		return;
	if (ws->nodelay)
		dpsock_set_nodelay(ws->s, true);
	if (ws->keepalive)
		dpsock_set_keepalive(ws->s, true, ws->ka_idle, ws->ka_intvl, ws->ka_cnt);
	if (ws->tos >= 0)
		dpsock_sock_set_tos(ws->s, ws->tos);
	if (ws->ttl >= 0)
		dpsock_sock_set_ttl(ws->s, ws->ttl);
	if (ws->cc)
		dpsock_set_congestion(ws->s, dpsock_cc_table[ws->cc - 1]->name);
}

static int
cb_accepted(struct dpsock_sock *listener, struct dpsock_sock *child)
{
	struct pl_wslot *lws = dpsock_sock_user(listener), *cws;
	struct pl_wgroup *wg;
	struct dpsock_pl_accept a;

	if (lws == NULL || !lws->in_use)
		return -ECONNREFUSED;
	wg = lws->wg;
	if (wg->bad || lws->closing)
		return -ECONNREFUSED;
	if (dpsock_fifo_free(&lws->rx) < sizeof(a)) {
		/* the program does not accept as fast as connections come */
		dpsock_stat_add(&wg->w->stats->pl_accept_refused, 1);
		if (!wg->warned_backlog) {
			wg->warned_backlog = 1;
			DPSOCK_LOG(WARNING, preload, "group %u, worker %u: a listener's accept queue is "
				   "full (%u connections not accepted yet, preload.rx_fifo_kb): new "
				   "connections are reset (counter pl_accept_refused)", wg->g->idx,
				   wg->k, dpsock_fifo_prod_size(&lws->rx) /
				   (uint32_t)sizeof(struct dpsock_pl_accept));
		}
		return -ECONNREFUSED;
	}
	if ((cws = slot_alloc(wg, DPSOCK_PL_TCP_CONN)) == NULL) {
		dpsock_stat_add(&wg->w->stats->pl_accept_refused, 1);
		slots_exhausted(wg, "new connections are reset");
		return -ECONNREFUSED;
	}
	cws->s = child;
	dpsock_sock_set_user(child, cws);
	cws->nodelay = lws->nodelay;
	cws->keepalive = lws->keepalive;
	cws->cc = lws->cc;
	cws->ka_idle = lws->ka_idle;
	cws->ka_intvl = lws->ka_intvl;
	cws->ka_cnt = lws->ka_cnt;
	cws->tos = lws->tos;
	cws->ttl = lws->ttl;
	apply_opts(cws);
	slot_set_addrs(cws);
	slot_set_state(cws, DPSOCK_PL_ST_ESTABLISHED, 0);
	slot_update_tx_space(cws);
	a.slot = cws->num;
	a.gen = cws->gen;
	/* the FIFO's release (P1) publishes the child slot's fields above */
	dpsock_fifo_write(&lws->rx, &a, sizeof(a));
	slot_notify(lws);
	mate_find(cws);
	return 0;
}

static void
cb_connected(struct dpsock_sock *s, int err)
{
	struct pl_wslot *ws = dpsock_sock_user(s);

	if (ws == NULL || err != 0)
		return; /* closed(s, err) follows */
	slot_set_addrs(ws);
	slot_set_state(ws, DPSOCK_PL_ST_ESTABLISHED, 0);
	apply_opts(ws);
	slot_update_tx_space(ws);
	slot_notify(ws);
	if (mate_expected(ws))
		ws->mate_wait = 1; /* its mate's accept pumps */
	else
		tx_pump(ws);
}

static void
cb_readable(struct dpsock_sock *s, struct dpsock_rx *rx)
{
	struct pl_wslot *ws = dpsock_sock_user(s);
	struct pl_held *h;
	size_t n = 0;

	if (ws == NULL || ws->closing)
		return; /* the app closed it: nobody reads (released by the stack) */
	if (ws->held == NULL) {
		n = rx_to_fifo(ws, rx, 0);
		if (n == dpsock_rx_len(rx)) {
			slot_notify(ws);
			return;
		}
	}
	h = malloc(sizeof(*h));
	if (h != NULL)
		h->rx = dpsock_rx_hold(rx);
	if (h == NULL || h->rx == NULL) {
		/* the stream cannot go on without this data: reset it */
		DPSOCK_LOG(WARNING, preload, "slot %u: out of memory holding received "
			   "data: connection reset", ws->num);
		free(h);
		dpsock_sock_set_user(s, NULL);
		ws->s = NULL;
		dpsock_abort(s);
		held_release_all(ws);
		slot_set_state(ws, DPSOCK_PL_ST_CLOSED, -ECONNRESET);
		slot_set_flags(ws, DPSOCK_PL_F_RD_EOF);
		slot_notify(ws);
		return;
	}
	h->off = n;
	h->next = NULL;
	if (ws->held_tail != NULL)
		ws->held_tail->next = h;
	else
		ws->held = h;
	ws->held_tail = h;
	rx_drain(ws);
	if (n > 0)
		slot_notify(ws);
}

/* Write a datagram into a UDP slot's rx FIFO, whole or not at all: one
 * copy per subscriber (each process has its own shared memory). */
static void
cb_datagram(struct dpsock_sock *s, const union dpsock_sockaddr *from, struct dpsock_rx *rx)
{
	struct pl_wslot *ws = dpsock_sock_user(s);
	const struct dpsock_config *conf;
	/* the header, and an IPv6 datagram's addresses after it */
	struct {
		struct dpsock_pl_dgram h;
		struct dpsock_pl_dgram6 x;
	} hd = { 0 };
	struct dpsock_pl_dgram *hp = &hd.h;
	size_t len = dpsock_rx_len(rx), need, done, off, hl;
	struct dpsock_rx_info info;
	struct iovec iov[2];
	uint32_t free_b;
	unsigned int j;

	if (ws == NULL || ws->closing)
		return;
	if (from->sa.sa_family == AF_INET6)
		hd.h.flags = DPSOCK_PL_DGRAM_IP6;
	hl = dpsock_pl_dgram_hlen(hd.h.flags);
	need = hl + ((len + 7) & ~(size_t)7);
	free_b = dpsock_fifo_free(&ws->rx);
	/* SO_RCVBUF: the FIFO holds at most rx_cap bytes (a datagram that
	 * would pass it is dropped, as a full socket buffer drops it) */
	if (len > DPSOCK_PL_DGRAM_MAX || free_b < need ||
	    dpsock_fifo_prod_size(&ws->rx) - free_b + need > RTE_MAX(ws->rx_cap, (uint32_t)need) ||
	    dpsock_fifo_write_reserve(&ws->rx, need, iov) != need) {
		dpsock_stat_add(&ws->wg->w->stats->pl_rx_dropped, 1);
		dpsock_sock_rx_dropped(s, len);
		return;
	}
	dpsock_rx_info(rx, &info);
	conf = &ws->wg->w->d->conf;
	hp->len = (uint32_t)len;
	hp->port = from->in.sin_port; /* sin_port and sin6_port sit at the same offset */
	hp->rx_ns = info.rx_ns;
	if (info.hw_ns != 0) {
		hp->hw_ns = info.hw_ns;
		hp->flags |= DPSOCK_PL_DGRAM_HWTS;
	}
	if (hp->flags & DPSOCK_PL_DGRAM_IP6) {
		memcpy(hd.x.addr, &from->in6.sin6_addr, 16);
		memcpy(hd.x.dst, info.dst6, 16);
	} else {
		hp->addr = from->in.sin_addr.s_addr;
		hp->dst = info.dst;
	}
	if (info.iface < conf->n_ifaces) {
		/* IP_PKTINFO's ipi_spec_dst: the local address it came to, else
		 * (a group, a broadcast) the interface's first */
		const struct dpsock_netview *v = ws->wg->w->nv;

		if (!(hp->flags & DPSOCK_PL_DGRAM_IP6))
			hp->spec_dst = dpsock_netview_local(v, info.dst, NULL) ? info.dst :
				       dpsock_netview_port_addr(v, info.iface);
		hp->ifindex = ws->wg->w->d->ports[info.iface].caps.if_index;
	}
	/* header, data and padding across the (at most two) segments */
	done = 0;
	for (j = 0; j < 2; j++) {
		unsigned char *p = iov[j].iov_base;
		size_t room = iov[j].iov_len, k = 0;

		while (k < room) {
			if (done < hl) {
				size_t c = RTE_MIN(room - k, hl - done);

				memcpy(p + k, (unsigned char *)&hd + done, c);
				k += c;
				done += c;
			} else if (done < hl + len) {
				size_t c;

				off = done - hl;
				c = dpsock_rx_copy(rx, p + k, RTE_MIN(room - k, len - off), off);
				if (c == 0)
					break;
				k += c;
				done += c;
			} else {
				memset(p + k, 0, room - k);
				done += room - k;
				k = room;
			}
		}
	}
	dpsock_fifo_write_commit(&ws->rx, (uint32_t)need);
	slot_notify(ws);
}

static void
cb_writable(struct dpsock_sock *s, size_t space)
{
	struct pl_wslot *ws = dpsock_sock_user(s);

	RTE_SET_USED(space);
	if (ws == NULL)
		return;
	ws->tx_blocked = 0;
	tx_pump(ws);
}

static void
cb_closed(struct dpsock_sock *s, int reason)
{
	struct pl_wslot *ws = dpsock_sock_user(s);

	if (ws == NULL)
		return;
	if (reason == 0) {
		/* the peer's FIN: EOF after what the FIFO and the held data hold */
		if (ws->held != NULL) {
			ws->eof_pending = 1;
		} else {
			slot_set_flags(ws, DPSOCK_PL_F_RD_EOF);
			slot_notify(ws);
		}
		return;
	}
	/* the socket is gone when this returns */
	mate_unpair(ws);
	dpsock_sock_set_user(s, NULL);
	ws->s = NULL;
	ws->mate_wait = 0;
	held_release_all(ws);
	if (ws->closing) {
		slot_free(ws);
		return;
	}
	ws->tx_blocked = 0;
	/* lwIP reports the RST answering our SYN as a reset; connect() and
	 * SO_ERROR must say ECONNREFUSED (docs/preload.md, errors table) */
	if (ws->state == DPSOCK_PL_ST_CONNECTING && reason == -ECONNRESET)
		reason = -ECONNREFUSED;
	slot_set_state(ws, DPSOCK_PL_ST_CLOSED, reason);
	slot_set_flags(ws, DPSOCK_PL_F_RD_EOF);
	slot_notify(ws);
}

static const struct dpsock_sock_ops pl_ops = {
	.accepted = cb_accepted,
	.connected = cb_connected,
	.readable = cb_readable,
	.datagram = cb_datagram,
	.writable = cb_writable,
	.closed = cb_closed,
};

/* ---------------------------------------------------------------------- */
/* commands */

/* addr is 0 or one of the addresses of the worker's net view */
static bool
addr_served(const struct dpsock_worker *w, uint32_t addr)
{
	return addr == 0 || dpsock_netview_local(w->nv, addr, NULL);
}

/* addr6 is "::" or an IPv6 address of the worker's ports (an owned
 * port's address6, a shared port's kernel addresses) */
static bool
addr6_served(const struct dpsock_worker *w, const uint8_t *addr6)
{
	static const uint8_t any[16];

	return memcmp(addr6, any, 16) == 0 || dpsock_netview_local6(w->nv, addr6, NULL);
}

/* 127.0.0.1: a listener or connection within the host (DPSOCK_LOOPBACK) */
static inline bool
addr_loopback(uint32_t addr)
{
	return addr == htonl(INADDR_LOOPBACK);
}

/* The command's slot, if it is one of this worker's live slots of this
 * group with the same generation; else NULL and *err. */
static struct pl_wslot *
cmd_slot(struct pl_wgroup *wg, const struct dpsock_pl_cmd *c, int *err)
{
	uint32_t spw = wg->g->geo.slots_per_worker;
	struct pl_wslot *ws;

	if (c->slot / spw != wg->k) {
		*err = -EINVAL;
		return NULL;
	}
	ws = &wg->slots[c->slot % spw];
	if (!ws->in_use || ws->gen != c->gen) {
		*err = -EBADF;
		return NULL;
	}
	return ws;
}

static int
op_open(struct pl_wgroup *wg, const struct dpsock_pl_cmd *c, struct dpsock_pl_reply *r)
{
	struct dpsock_worker *w = wg->w;
	struct pl_wslot *ws;
	struct dpsock_sock *s;
	uint32_t kind;
	unsigned int fl;

	if ((c->flags & ~(DPSOCK_PL_CMD_F_IP6 | DPSOCK_PL_CMD_F_DUAL)) ||
	    (c->flags & DPSOCK_PL_CMD_F_DUAL && (c->flags & DPSOCK_PL_CMD_F_IP6 || c->addr != 0 ||
						 c->op == DPSOCK_PL_OP_CONNECT)))
		return -EINVAL;
	switch (c->op) {
	case DPSOCK_PL_OP_LISTEN:
		if (c->port == 0)
			return -EINVAL;
		if (c->flags & DPSOCK_PL_CMD_F_IP6 ? !addr6_served(w, c->addr6) :
		    !addr_served(w, c->addr) && !addr_loopback(c->addr))
			return -EADDRNOTAVAIL;
		kind = DPSOCK_PL_TCP_LISTENER;
		break;
	case DPSOCK_PL_OP_UDP_BIND:
		if (c->flags & DPSOCK_PL_CMD_F_IP6 ? !addr6_served(w, c->addr6) :
		    !addr_served(w, c->addr) && !dpsock_mc_is_group4(c->addr))
			return -EADDRNOTAVAIL;
		if ((uint32_t)c->arg[1] & ~(DPSOCK_PL_BIND_REUSEADDR | DPSOCK_PL_BIND_REUSEPORT))
			return -EINVAL;
		kind = DPSOCK_PL_UDP;
		break;
	default: /* CONNECT */
		if (c->port == 0 || (c->addr == 0 && !(c->flags & DPSOCK_PL_CMD_F_IP6)))
			return -EINVAL;
		if (c->arg[0] != 0)
			return -EADDRNOTAVAIL; /* the owning worker picks the local port */
		if (addr_loopback(c->addr) && !dpsock_tcp_listening(c->addr, ntohs(c->port)))
			return -ECONNREFUSED; /* nobody here: the kernel's loopback */
		kind = DPSOCK_PL_TCP_CONN;
		break;
	}
	ws = slot_alloc(wg, kind);
	if (ws == NULL)
		return slots_exhausted(wg, c->op == DPSOCK_PL_OP_CONNECT ? "connects fail with ENOBUFS" :
					   c->op == DPSOCK_PL_OP_LISTEN ? "listens fail with ENOBUFS" :
					   "binds fail with ENOBUFS");
	switch (c->op) {
	case DPSOCK_PL_OP_LISTEN:
		/* the program's kernel socket holds addr:port (shim: bind) */
		if (c->flags & DPSOCK_PL_CMD_F_IP6) {
			struct in6_addr a6;

			memcpy(&a6, c->addr6, sizeof(a6));
			s = dpsock_tcp_listen6(w, &a6, ntohs(c->port), c->arg[0],
					       DPSOCK_LISTEN_HELD, &pl_ops, ws);
		} else {
			s = dpsock_tcp_listen_addr(w, c->addr, ntohs(c->port), c->arg[0],
						   DPSOCK_LISTEN_HELD |
						   (c->flags & DPSOCK_PL_CMD_F_DUAL ?
						    DPSOCK_LISTEN_IPV6 : 0), &pl_ops, ws);
		}
		break;
	case DPSOCK_PL_OP_UDP_BIND:
		/* a port of the program's own is held by its kernel socket; a
		 * port the worker picks is held for it by the stack */
		fl = ((uint32_t)c->arg[1] & DPSOCK_PL_BIND_REUSEADDR ? DPSOCK_UDP_REUSEADDR : 0) |
		     ((uint32_t)c->arg[1] & DPSOCK_PL_BIND_REUSEPORT ? DPSOCK_UDP_REUSEPORT : 0) |
		     (c->port != 0 ? DPSOCK_UDP_HELD : 0);
		if (c->flags & DPSOCK_PL_CMD_F_IP6) {
			struct in6_addr a6;

			memcpy(&a6, c->addr6, sizeof(a6));
			s = dpsock_udp_bind6(w, &a6, ntohs(c->port), fl, &pl_ops, ws);
		} else {
			s = dpsock_udp_bind_addr(w, c->addr, ntohs(c->port),
						 fl | (c->flags & DPSOCK_PL_CMD_F_DUAL ?
						       DPSOCK_UDP_IPV6 : 0), &pl_ops, ws);
		}
		if (s != NULL)
			dpsock_sock_set_owner(s, c->arg[2], c->arg[3]);
		break;
	default:
		if (c->flags & DPSOCK_PL_CMD_F_IP6) {
			struct in6_addr a6;

			memcpy(&a6, c->addr6, sizeof(a6));
			s = dpsock_tcp_connect6(w, &a6, ntohs(c->port), &pl_ops, ws);
		} else {
			s = dpsock_tcp_connect(w, c->addr, ntohs(c->port), &pl_ops, ws);
		}
		break;
	}
	if (s == NULL) {
		int e = errno ? -errno : -ENOMEM;

		slot_free(ws);
		return e;
	}
	ws->s = s;
	slot_set_addrs(ws);
	if (c->op != DPSOCK_PL_OP_CONNECT && c->addr != 0)
		__atomic_store_n(&sh_of(ws)->laddr, c->addr, __ATOMIC_RELAXED);
	slot_set_state(ws, c->op == DPSOCK_PL_OP_LISTEN ? DPSOCK_PL_ST_LISTEN :
			   c->op == DPSOCK_PL_OP_UDP_BIND ? DPSOCK_PL_ST_BOUND :
			   DPSOCK_PL_ST_CONNECTING, 0);
	slot_notify(ws);
	r->slot = ws->num;
	r->gen = ws->gen;
	r->addr = __atomic_load_n(&sh_of(ws)->laddr, __ATOMIC_RELAXED);
	r->port = __atomic_load_n(&sh_of(ws)->lport, __ATOMIC_RELAXED);
	return 0;
}

/* IP-level options: IP_TOS and IP_TTL on any socket (a listener hands
 * them to what it accepts), the rest on UDP sockets. Values are those the
 * kernel accepted already (the shim sets every option there first). */
static int
op_setopt_ip(struct pl_wslot *ws, int name, int v)
{
	bool udp = ws->kind == DPSOCK_PL_UDP;

	switch (name) {
	case IP_TOS:
		ws->tos = (int16_t)(v & 0xff);
		break;
	case IP_TTL:
		ws->ttl = (int16_t)(v == -1 ? 64 : v);
		break;
	case IP_MULTICAST_TTL:
		return udp && ws->s != NULL ? dpsock_udp_set_mcast_ttl(ws->s, v == -1 ? 1 : v) :
					      -ENOPROTOOPT;
	case IP_MULTICAST_LOOP:
		return udp && ws->s != NULL ? dpsock_udp_set_mcast_loop(ws->s, v != 0) : -ENOPROTOOPT;
	case IP_MULTICAST_ALL:
		return udp && ws->s != NULL ? dpsock_udp_set_mcast_all(ws->s, v != 0) : -ENOPROTOOPT;
	case IP_MULTICAST_IF:
		return udp && ws->s != NULL ? dpsock_udp_set_mcast_if(ws->s, v) : -ENOPROTOOPT;
	default:
		return -ENOPROTOOPT;
	}
	if (ws->s == NULL || ws->kind == DPSOCK_PL_TCP_LISTENER)
		return 0; /* applied to the connections it accepts */
	return name == IP_TOS ? dpsock_sock_set_tos(ws->s, ws->tos) :
				dpsock_sock_set_ttl(ws->s, ws->ttl);
}

/* IPv6's multicast options of a UDP socket (IPV6_MULTICAST_IF: v is the
 * interface's index in the segment, -1 the route's). */
static int
op_setopt_ip6(struct pl_wslot *ws, int name, int v)
{
	if (ws->kind != DPSOCK_PL_UDP || ws->s == NULL)
		return -ENOPROTOOPT;
	switch (name) {
	case IPV6_MULTICAST_HOPS:
		return dpsock_udp_set_mcast6_hops(ws->s, v);
	case IPV6_MULTICAST_LOOP:
		return dpsock_udp_set_mcast6_loop(ws->s, v != 0);
	case IPV6_MULTICAST_ALL:
		return dpsock_udp_set_mcast6_all(ws->s, v != 0);
	case IPV6_MULTICAST_IF:
		return dpsock_udp_set_mcast6_if(ws->s, v);
	default:
		return -ENOPROTOOPT;
	}
}

static int
op_setopt(struct pl_wslot *ws, const struct dpsock_pl_cmd *c)
{
	int level = c->arg[0], name = c->arg[1], v = c->arg[2];
	bool tcp = ws->kind != DPSOCK_PL_UDP;

	if (level == IPPROTO_IP)
		return op_setopt_ip(ws, name, v);
	if (level == IPPROTO_IPV6)
		return op_setopt_ip6(ws, name, v);
	if (level == SOL_SOCKET && name == SO_RCVBUF) {
		if (tcp || v < 0)
			return -ENOPROTOOPT;
		/* at most the FIFO; at least one largest datagram's record, so
		 * that the socket can receive at all */
		ws->rx_cap = RTE_MIN((uint32_t)v, ws->wg->g->geo.rx_fifo_size);
		return 0;
	}
	if (level == SOL_SOCKET && name == SO_KEEPALIVE) {
		ws->keepalive = v != 0;
		if (ws->s != NULL && ws->kind == DPSOCK_PL_TCP_CONN)
			dpsock_set_keepalive(ws->s, v != 0, ws->ka_idle, ws->ka_intvl, ws->ka_cnt);
		return 0;
	}
	if (level != IPPROTO_TCP || !tcp)
		return -ENOPROTOOPT;
	switch (name) {
	case PL_TCP_CONGESTION: {
		char cc[17];
		int i;

		memcpy(cc, &c->arg[2], 16);
		cc[16] = '\0';
		i = dpsock_tcp_cc_find(cc);
		if (i < 0)
			return -ENOENT;
		ws->cc = (uint8_t)(i + 1);
		/* a connection switches now (even while connecting), a
		 * listener passes it to what it accepts */
		if (ws->s != NULL && ws->kind == DPSOCK_PL_TCP_CONN)
			dpsock_set_congestion(ws->s, cc);
		return 0;
	}
	case PL_TCP_NODELAY:
		ws->nodelay = v != 0;
		if (ws->s != NULL && ws->kind == DPSOCK_PL_TCP_CONN)
			dpsock_set_nodelay(ws->s, v != 0);
		return 0;
	case PL_TCP_KEEPIDLE:
	case PL_TCP_KEEPINTVL:
	case PL_TCP_KEEPCNT:
		if (v < 1 || v > (name == PL_TCP_KEEPCNT ? 127 : 32767))
			return -EINVAL;
		if (name == PL_TCP_KEEPIDLE)
			ws->ka_idle = (uint32_t)v;
		else if (name == PL_TCP_KEEPINTVL)
			ws->ka_intvl = (uint32_t)v;
		else
			ws->ka_cnt = (uint32_t)v;
		if (ws->keepalive && ws->s != NULL && ws->kind == DPSOCK_PL_TCP_CONN)
			dpsock_set_keepalive(ws->s, true, ws->ka_idle, ws->ka_intvl, ws->ka_cnt);
		return 0;
	default:
		return -ENOPROTOOPT;
	}
}

/* TCP_INFO into the slot's tcpi block; the reply (its ring's release)
 * publishes it to the shim. */
static int
op_tcp_info(struct pl_wslot *ws)
{
	struct dpsock_pl_tcp_info *t = &sh_of(ws)->tcpi;
	struct dpsock_tcp_info info;
	int r;

	if (ws->kind == DPSOCK_PL_UDP)
		return -ENOPROTOOPT;
	if (ws->s == NULL)
		return -ENOTCONN;
	r = dpsock_tcp_info(ws->s, &info);
	if (r != 0)
		return r;
	if (ws->kind == DPSOCK_PL_TCP_LISTENER && ws->cc)
		snprintf(info.congestion, sizeof(info.congestion), "%s",
			 dpsock_cc_table[ws->cc - 1]->name);
#define TCPI_COPY(type, name) t->name = info.name;
	DPSOCK_PL_TCPI_FIELDS(TCPI_COPY)
#undef TCPI_COPY
	memcpy(t->congestion, info.congestion, sizeof(t->congestion));
	return 0;
}

/* Run one validated command. Returns true when it gets a reply (r filled,
 * result in r->result). */
static bool
cmd_run(struct pl_wgroup *wg, const struct dpsock_pl_cmd *c, struct dpsock_pl_reply *r)
{
	struct pl_wslot *ws = NULL;
	int err = 0;

	memset(r, 0, sizeof(*r));
	r->cookie = c->cookie;
	r->slot = c->slot;
	r->gen = c->gen;
	switch (c->op) {
	case DPSOCK_PL_OP_LISTEN:
	case DPSOCK_PL_OP_UDP_BIND:
	case DPSOCK_PL_OP_CONNECT:
		r->slot = UINT32_MAX;
		r->gen = 0;
		r->result = op_open(wg, c, r);
		return true;
	case DPSOCK_PL_OP_TX_KICK:
	case DPSOCK_PL_OP_RX_KICK:
	case DPSOCK_PL_OP_SHUTDOWN:
	case DPSOCK_PL_OP_CLOSE:
	case DPSOCK_PL_OP_SETOPT:
	case DPSOCK_PL_OP_MCAST:
	case DPSOCK_PL_OP_TCP_INFO:
		ws = cmd_slot(wg, c, &err);
		if (ws == NULL)
			break;
		if (ws->closing) {
			err = -EBADF; /* nothing after CLOSE */
			break;
		}
		switch (c->op) {
		case DPSOCK_PL_OP_TX_KICK:
			if (ws->kind == DPSOCK_PL_TCP_LISTENER) {
				err = -EINVAL;
				break;
			}
			tx_pump(ws);
			return false;
		case DPSOCK_PL_OP_RX_KICK:
			if (ws->kind == DPSOCK_PL_TCP_CONN)
				rx_drain(ws);
			if (ws->mate != NULL && ws->mate->tx_blocked) {
				ws->mate->tx_blocked = 0; /* room for what it sends */
				tx_pump(ws->mate);
			}
			return false;
		case DPSOCK_PL_OP_SHUTDOWN:
			if (ws->kind != DPSOCK_PL_TCP_CONN || ws->s == NULL ||
			    ws->state == DPSOCK_PL_ST_CONNECTING) {
				r->result = -ENOTCONN;
				return true;
			}
			if ((c->arg[0] == SHUT_WR || c->arg[0] == SHUT_RDWR) && ws->shut_wr == 0) {
				ws->shut_wr = 1;
				tx_pump(ws);
			} else if (c->arg[0] != SHUT_RD && c->arg[0] != SHUT_WR &&
				   c->arg[0] != SHUT_RDWR) {
				r->result = -EINVAL;
			}
			return true;
		case DPSOCK_PL_OP_CLOSE:
			if (c->arg[0] == 1 || ws->kind != DPSOCK_PL_TCP_CONN || ws->s == NULL) {
				slot_close_now(ws, c->arg[0] == 1);
			} else {
				ws->closing = 1;
				tx_pump(ws); /* closes now if the FIFO is empty */
			}
			return false;
		case DPSOCK_PL_OP_MCAST:
			/* the socket API's errno, from the socket's own memberships */
			/* an IPv4-mapped group is an IPv4 membership */
			r->result = ws->kind != DPSOCK_PL_UDP || ws->s == NULL ? -EINVAL :
				    c->mc.iface < 0 ? -ENODEV :
				    dpsock_udp_mcast6(ws->s, c->mc.op,
						      (const struct in6_addr *)(void *)c->mc.group,
						      (unsigned int)c->mc.iface,
						      (const struct in6_addr *)(void *)c->mc.source);
			return true;
		case DPSOCK_PL_OP_TCP_INFO:
			r->result = op_tcp_info(ws);
			return true;
		default: /* SETOPT */
			r->result = op_setopt(ws, c);
			return true;
		}
		break;
	default:
		err = -EINVAL;
		break;
	}
	/* rejected */
	dpsock_stat_add(&wg->w->stats->pl_rejected, 1);
	r->result = err;
	return true;
}

/* Drain one channel's command ring. Returns the commands taken. */
static unsigned int
chan_drain(struct pl_wgroup *wg, uint32_t ch, struct pl_worker *pw, unsigned int batch)
{
	struct pl_group *g = wg->g;
	struct pl_wchan *wc = &wg->chans[ch];
	struct dpsock_pl_reply r;
	unsigned int n, i;
	bool replied = false;

	n = dpsock_spsc_dequeue_burst(&wc->cmd, pw->cmds, batch);
	if (n == 0) {
		if (dpsock_spsc_cons_corrupt(&wc->cmd))
			group_bad(wg);
		return 0;
	}
	dpsock_stat_add(&wg->w->stats->pl_commands, n);
	for (i = 0; i < n && !wg->bad; i++) {
		if (!cmd_run(wg, &pw->cmds[i], &r))
			continue;
		if (dpsock_spsc_enqueue_burst(&wc->reply, &r, 1) == 0) {
			if (dpsock_spsc_prod_corrupt(&wc->reply)) {
				group_bad(wg);
				break;
			}
			dpsock_stat_add(&wg->w->stats->pl_replies_lost, 1);
		}
		replied = true;
	}
	if (replied) {
		uint32_t id = g->chan_waiter[ch];

		if (id < g->geo.max_waiters)
			wake_mark(wg, id);
	}
	return n;
}

/* ---------------------------------------------------------------------- */
/* group life on a worker */

/* The group died (its last process left, or it broke the protocol): reset
 * its connections, close its listeners, free its held data. A connection
 * whose end of stream the program declared (close(), or shutdown(SHUT_WR)
 * as socat does before it exits without closing) closes in order after
 * what it still had to send (slot_orphan); one left open by a program that
 * died (kill -9) is reset, as VMA's daemon does. Everything is reset when
 * the group broke the protocol or the daemon stops. */
static void
group_release(struct pl_wgroup *wg, bool stopping)
{
	uint32_t i, spw = wg->g->geo.slots_per_worker;

	for (i = 0; i < spw; i++) {
		struct pl_wslot *ws = &wg->slots[i];

		if (!ws->in_use)
			continue;
		if (ws->kind == DPSOCK_PL_TCP_CONN && ws->s != NULL && !wg->bad && !stopping &&
		    (ws->closing || ws->shut_wr != 0))
			slot_orphan(ws);
		else
			slot_close_now(ws, true);
	}
	wg->wake_pending = false;
	memset(wg->wake_mask, 0, (wg->g->geo.max_waiters + 63) / 64 * sizeof(uint64_t));
	/* release: pairs with the control thread's acquire load of done; the
	 * worker will not touch the group's sockets or segment again */
	__atomic_store_n(&wg->done, 1, __ATOMIC_RELEASE);
}

/*
 * The groups worker k still serves, from index *i on: the next one, with
 * *i at its index, or NULL. hi: groups_hi as loaded (acquire) by the
 * caller. Loop: for (i = 0; (wg = next_wgroup(c, k, hi, &i)) != NULL; i++)
 */
static struct pl_wgroup *
next_wgroup(struct pl_ctl *c, unsigned int k, uint32_t hi, uint32_t *i)
{
	for (; *i < hi; (*i)++) {
		/* acquire: pairs with the release store in group_create */
		struct pl_group *g = __atomic_load_n(&c->groups[*i], __ATOMIC_ACQUIRE);

		if (g != NULL && !g->wg[k]->done)
			return g->wg[k];
	}
	return NULL;
}

int
dpsock_pl_srv_init(unsigned int n_workers)
{
	pl_workers = rte_zmalloc("dpsock-pl-workers", n_workers * sizeof(*pl_workers),
				 RTE_CACHE_LINE_SIZE);
	return pl_workers == NULL ? -ENOMEM : 0;
}

int
dpsock_pl_worker_init(struct dpsock_worker *w, void *arg)
{
	int cpu = sched_getcpu();

	RTE_SET_USED(arg);
	/* the CPU clients compare theirs with (an lcore is pinned to one) */
	pl_workers[w->idx].cpu1 = cpu < 0 ? 0 : (uint32_t)cpu + 1;
	__atomic_store_n(&dpsock_pl_ctl.wake[w->idx].cpu, pl_workers[w->idx].cpu1,
			 __ATOMIC_RELAXED);
	/* the wake page line clients read before waking this worker */
	w->sleeping_pub = &dpsock_pl_ctl.wake[w->idx].sleeping;
	pl_workers[w->idx].rc_idle = rte_get_timer_hz() / 1000 * PL_RECLAIM_IDLE_MS;
	pl_workers[w->idx].now = rte_get_timer_cycles();
	return dpsock_tko_taking(w->d) ? pl_tko_worker_import(w) : 0;
}

/* The clients[] entry of a process (the control thread fills the table),
 * or -1. */
static int32_t
client_of(const struct dpsock_stats_segment *st, int32_t pid)
{
	uint32_t n = __atomic_load_n(&st->n_clients, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; pid > 0 && i < n && i < DPSOCK_STATS_MAX_CLIENTS; i++)
		if (__atomic_load_n(&st->clients[i].pid, __ATOMIC_ACQUIRE) == pid)
			return (int32_t)i;
	return -1;
}

/* Every 100 ms: what the shim wrote in its slots' line 2 (the process and
 * descriptor that opened the socket, poll hits and misses) into the socket
 * table, as plain numbers for dpsock-stat: nothing here is trusted. The
 * counters go in as increments, so that dpsock-stat -z zeroes them. The
 * slots opened last (PL_OWNERS_RECENT) are looked at every time, the rest
 * PL_OWNERS_SWEEP per pass, round-robin: a pass costs the same with ten
 * sockets as with tens of thousands, and a new socket shows its owner at
 * the next pass. */
#define PL_OWNERS_SWEEP 512u

static void
owner_publish(const struct dpsock_stats_segment *st, struct pl_wslot *ws)
{
	struct dpsock_pl_slot *sh;
	int32_t pid, fd;
	uint32_t h, m;

	if (!ws->in_use || ws->s == NULL)
		return;
	sh = sh_of(ws);
	pid = __atomic_load_n(&sh->owner_pid, __ATOMIC_RELAXED);
	fd = __atomic_load_n(&sh->owner_fd, __ATOMIC_RELAXED);
	h = __atomic_load_n(&sh->poll_hits, __ATOMIC_RELAXED);
	m = __atomic_load_n(&sh->poll_misses, __ATOMIC_RELAXED);
	if (pid == ws->owner_pid && fd == ws->owner_fd && h == ws->hits_seen &&
	    m == ws->misses_seen)
		return;
	dpsock_sock_stats_owner(ws->s, pid, fd, client_of(st, pid), h - ws->hits_seen,
				m - ws->misses_seen);
	ws->owner_pid = pid;
	ws->owner_fd = fd;
	ws->hits_seen = h;
	ws->misses_seen = m;
}

static void
owners_publish(struct dpsock_worker *w, struct pl_wgroup *wg)
{
	const struct dpsock_stats_segment *st = w->d->stats;
	uint32_t i, n = RTE_MIN(wg->n_fresh, PL_OWNERS_SWEEP);

	for (i = 0; i < PL_OWNERS_RECENT; i++)
		if (wg->recent[i] < wg->n_fresh)
			owner_publish(st, &wg->slots[wg->recent[i]]);
	for (i = 0; i < n; i++) {
		if (wg->owners_next >= wg->n_fresh)
			wg->owners_next = 0;
		owner_publish(st, &wg->slots[wg->owners_next++]);
	}
}

unsigned int
dpsock_pl_worker_poll(struct dpsock_worker *w, void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	struct pl_worker *pw = &pl_workers[w->idx];
	unsigned int k = w->idx, work = 0, batch = RTE_MIN(w->d->conf.pl_poll_batch, PL_BATCH_MAX);
	struct pl_wgroup *wg;
	uint32_t i, hi, ch, chi;
	uint64_t gen, now;
	bool owners;

	RTE_SET_USED(arg);
	if (unlikely(pw->tko_settle)) {
		pw->tko_settle = false;
		pl_tko_settle(c, k);
	}
	/* acquire: pairs with the control thread's seq_cst increment; what it
	 * unpublished before is seen unpublished from here on */
	gen = __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
	hi = __atomic_load_n(&c->groups_hi, __ATOMIC_ACQUIRE);
	now = rte_get_timer_cycles();
	pw->now = now;
	owners = now >= pw->owners_next;
	if (owners)
		pw->owners_next = now + rte_get_timer_hz() / 10;
	for (i = 0; (wg = next_wgroup(c, k, hi, &i)) != NULL; i++) {
		struct pl_group *g = wg->g;

		/* acquire: pairs with the release store in group_destroy */
		if (__atomic_load_n(&g->dying, __ATOMIC_ACQUIRE)) {
			group_release(wg, false);
			work++;
			continue;
		}
		if (wg->bad)
			continue;
		if (owners)
			owners_publish(w, wg);
		rc_sweep(wg, pw);
		wake_flush(wg); /* what callbacks marked since the last pass */
		chi = __atomic_load_n(&g->chan_hi, __ATOMIC_ACQUIRE);
		for (ch = 0; ch < chi && !wg->bad; ch++) {
			/* acquire: pairs with the release store in on_channel_add
			 * (and of CLOSING in the control thread) */
			uint32_t live = __atomic_load_n(&g->chan_live[ch], __ATOMIC_ACQUIRE);

			if (live == PL_CHAN_LIVE)
				work += chan_drain(wg, ch, pw, batch);
			else if (live == PL_CHAN_CLOSING)
				/* the last of it, at most one ring's worth (a
				 * thread that still writes gains nothing) */
				for (uint32_t left = g->geo.cmd_count, n; left > 0 && !wg->bad &&
				     (n = chan_drain(wg, ch, pw, RTE_MIN(left, PL_BATCH_MAX))) > 0;
				     left -= RTE_MIN(left, n))
					work += n;
		}
		wake_flush(wg);
	}
	/* release: pairs with sync_workers' acquire load; no reference from
	 * before gen is held past this point */
	__atomic_store_n(&c->ack[k].v, gen, __ATOMIC_RELEASE);
	return work;
}

bool
dpsock_pl_worker_pending(struct dpsock_worker *w, void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	unsigned int k = w->idx;
	struct pl_wgroup *wg;
	uint32_t i, hi, ch, chi;

	RTE_SET_USED(arg);
	hi = __atomic_load_n(&c->groups_hi, __ATOMIC_ACQUIRE);
	for (i = 0; (wg = next_wgroup(c, k, hi, &i)) != NULL; i++) {
		struct pl_group *g = wg->g;

		if (wg->bad)
			continue;
		if (__atomic_load_n(&g->dying, __ATOMIC_ACQUIRE))
			return true;
		/* wake-ups from timer callbacks of the last iteration */
		wake_flush(wg);
		chi = __atomic_load_n(&g->chan_hi, __ATOMIC_ACQUIRE);
		for (ch = 0; ch < chi; ch++) {
			struct dpsock_spsc_cons *cmd = &wg->chans[ch].cmd;

			if (!__atomic_load_n(&g->chan_live[ch], __ATOMIC_ACQUIRE))
				continue;
			/* a fresh load of prod: pairs with the shim's fence
			 * between enqueueing and reading wake[k].sleeping */
			if (dpsock_spsc_cons_count(cmd) > 0 || dpsock_spsc_cons_corrupt(cmd))
				return true;
		}
	}
	/* a removal in progress waits for this worker's ack */
	return __atomic_load_n(&c->ack[k].v, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&c->gen, __ATOMIC_ACQUIRE);
}

/*
 * The daemon stops: tell every client (segment state STOPPED; every live
 * slot CLOSED with -ECONNABORTED, watchers and every registered waiter
 * woken), then close the connections.
 */
void
dpsock_pl_worker_fini(struct dpsock_worker *w, void *arg)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	unsigned int k = w->idx;
	struct pl_wgroup *wg;
	uint32_t i, j, hi;

	RTE_SET_USED(arg);
	w->sleeping_pub = NULL;
	if (c->groups == NULL)
		return;
	hi = __atomic_load_n(&c->groups_hi, __ATOMIC_ACQUIRE);
	for (i = 0; (wg = next_wgroup(c, k, hi, &i)) != NULL; i++) {
		struct pl_group *g = wg->g;
		uint32_t spw = g->geo.slots_per_worker;

		/* release: what the workers published before is visible to a
		 * shim that acquires STOPPED */
		__atomic_store_n(&((struct dpsock_pl_seg *)(void *)g->seg)->state,
				 DPSOCK_PL_STOPPED, __ATOMIC_RELEASE);
		for (j = 0; j < spw && !wg->bad; j++) {
			struct pl_wslot *ws = &wg->slots[j];

			if (!ws->in_use)
				continue;
			slot_set_state(ws, DPSOCK_PL_ST_CLOSED, -ECONNABORTED);
			slot_set_flags(ws, DPSOCK_PL_F_RD_EOF | DPSOCK_PL_F_WR_SHUT);
			slot_notify(ws);
		}
		wake_flush(wg);
		/* every registered waiter, armed or not, and whatever it watches */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		for (j = 0; j < g->geo.max_waiters; j++)
			if (__atomic_load_n(&g->waiter_live[j], __ATOMIC_ACQUIRE)) {
				/* both ways: it may sleep either way, or be about to */
				bool a = waiter_wake(g, j, DPSOCK_PL_ARMED_EVENTFD);

				if (waiter_wake(g, j, DPSOCK_PL_ARMED_FUTEX) || a)
					dpsock_stat_add(&w->stats->pl_wakeups, 1);
			}
		group_release(wg, true);
	}
	/* the stack stops: what orphans still had to send goes nowhere */
	while (pl_workers[k].orphans != NULL) {
		struct pl_orphan *o = pl_workers[k].orphans;

		dpsock_abort(o->s);
		orphan_free(o);
	}
}

void
dpsock_pl_srv_free(void)
{
	rte_free(pl_workers);
	pl_workers = NULL;
}

/* ---------------------------------------------------------------------- */
/* takeover (stack/takeover/takeover.h): each worker's part */

enum {
	PL_TKO_R_WG = DPSOCK_TKO_R_APP + 0x20,
	PL_TKO_R_SLOT,
	PL_TKO_R_ORPHAN,
};

/* A group seen from one worker; then (gen, change) of each slot below
 * n_fresh, then the free stack. */
struct pl_tko_wg {
	uint32_t group;
	uint32_t n_free;
	uint32_t n_fresh;
	uint32_t owners_next;
	uint32_t recent_at;
	uint8_t warned_slots, warned_backlog, bad, stopped;
	uint32_t recent[PL_OWNERS_RECENT];
};

/* A slot in use; then its held data ({u32 off, u32 len} + len bytes,
 * padded to 8, n_held times) and its socket (sock_len bytes). */
struct pl_tko_slot {
	uint32_t group;
	uint32_t i;
	uint32_t gen;
	uint32_t change;
	uint8_t kind, state, closing, shut_wr;
	uint8_t tx_blocked, eof_pending, nodelay, keepalive;
	uint8_t cc, mate_wait, pad[2];
	uint32_t ka_idle, ka_intvl, ka_cnt;
	int16_t tos, ttl;
	uint32_t rx_cap;
	uint32_t flags;
	int32_t owner_pid, owner_fd;
	uint32_t hits_seen, misses_seen;
	uint32_t mate;            /* the mate's slot number + 1, 0: none */
	uint32_t mate_group;      /* the mate's group (another program's, as a rule) */
	uint32_t n_held;
	uint64_t held_len;        /* bytes of the held records */
	uint64_t sock_len;
};

struct pl_tko_orphan {
	uint64_t len;             /* bytes still to send, then the socket */
	uint64_t sock_len;
};

static int
pl_tko_slot_export(struct pl_wslot *ws, struct dpsock_tko_buf *b, struct dpsock_tko_buf *x)
{
	struct pl_tko_slot ts = { 0 };
	struct pl_held *h;
	int r = 0;

	x->len = 0;
	ts.group = ws->wg->g->idx;
	ts.i = ws->num % ws->wg->g->geo.slots_per_worker;
	ts.gen = ws->gen;
	ts.change = ws->change;
	ts.kind = ws->kind;
	ts.state = ws->state;
	ts.closing = ws->closing;
	ts.shut_wr = ws->shut_wr;
	ts.tx_blocked = ws->tx_blocked;
	ts.eof_pending = ws->eof_pending;
	ts.nodelay = ws->nodelay;
	ts.keepalive = ws->keepalive;
	ts.cc = ws->cc;
	ts.mate_wait = ws->mate_wait;
	ts.ka_idle = ws->ka_idle;
	ts.ka_intvl = ws->ka_intvl;
	ts.ka_cnt = ws->ka_cnt;
	ts.tos = ws->tos;
	ts.ttl = ws->ttl;
	ts.rx_cap = ws->rx_cap;
	ts.flags = ws->flags;
	ts.owner_pid = ws->owner_pid;
	ts.owner_fd = ws->owner_fd;
	ts.hits_seen = ws->hits_seen;
	ts.misses_seen = ws->misses_seen;
	ts.mate = ws->mate != NULL ? ws->mate->num + 1 : 0;
	ts.mate_group = ws->mate != NULL ? ws->mate->wg->g->idx : 0;
	for (h = ws->held; h != NULL; h = h->next) {
		uint32_t hl[2] = { (uint32_t)h->off, (uint32_t)dpsock_rx_len(h->rx) };
		static const unsigned char zero[8];

		dpsock_tko_buf_raw(x, hl, sizeof(hl));
		for (size_t off = 0; off < hl[1];) {
			unsigned char chunk[4096];
			size_t n = dpsock_rx_copy(h->rx, chunk, sizeof(chunk), off);

			if (n == 0)
				return -EIO;
			dpsock_tko_buf_raw(x, chunk, n);
			off += n;
		}
		dpsock_tko_buf_raw(x, zero, (8 - x->len % 8) % 8);
		ts.n_held++;
	}
	ts.held_len = x->len;
	if (ws->s != NULL)
		r = dpsock_sock_export(ws->s, x);
	if (r != 0) {
		DPSOCK_LOG(NOTICE, preload, "takeover: slot %u (kind %u, state %u): %s", ws->num,
			   ws->kind, ws->state, strerror(-r));
		return r;
	}
	ts.sock_len = x->len - ts.held_len;
	dpsock_tko_buf_put(b, PL_TKO_R_SLOT, &ts, sizeof(ts), x->p, x->len);
	return b->err != 0 ? b->err : x->err;
}

int
dpsock_pl_tko_worker_export(struct dpsock_worker *w, void *arg, struct dpsock_tko_buf *b)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	struct pl_worker *pw = &pl_workers[w->idx];
	struct dpsock_tko_buf x = { 0 };
	struct pl_wgroup *wg;
	struct pl_orphan *o;
	uint32_t i, j, hi;
	int r = 0;

	RTE_SET_USED(arg);
	hi = __atomic_load_n(&c->groups_hi, __ATOMIC_ACQUIRE);
	for (i = 0; r == 0 && (wg = next_wgroup(c, w->idx, hi, &i)) != NULL; i++) {
		struct pl_tko_wg tw = { 0 };
		uint32_t *gc;

		tw.group = wg->g->idx;
		tw.n_free = wg->n_free;
		tw.n_fresh = wg->n_fresh;
		tw.owners_next = wg->owners_next;
		tw.recent_at = wg->recent_at;
		tw.warned_slots = wg->warned_slots;
		tw.warned_backlog = wg->warned_backlog;
		tw.bad = wg->bad;
		tw.stopped = wg->stopped;
		memcpy(tw.recent, wg->recent, sizeof(tw.recent));
		gc = malloc(((size_t)2 * wg->n_fresh + wg->n_free + 1) * sizeof(uint32_t));
		if (gc == NULL) {
			r = -ENOMEM;
			break;
		}
		for (j = 0; j < wg->n_fresh; j++) {
			gc[2 * j] = wg->slots[j].gen;
			gc[2 * j + 1] = wg->slots[j].change;
		}
		memcpy(gc + 2 * wg->n_fresh, wg->free_stack, wg->n_free * sizeof(uint32_t));
		dpsock_tko_buf_put(b, PL_TKO_R_WG, &tw, sizeof(tw), gc,
				   ((size_t)2 * wg->n_fresh + wg->n_free) * sizeof(uint32_t));
		free(gc);
		for (j = 0; r == 0 && !wg->bad && j < wg->n_fresh; j++)
			if (wg->slots[j].in_use)
				r = pl_tko_slot_export(&wg->slots[j], b, &x);
	}
	for (o = pw->orphans; r == 0 && o != NULL; o = o->next) {
		struct pl_tko_orphan to = { .len = o->len - o->off };

		x.len = 0;
		dpsock_tko_buf_raw(&x, o->data + o->off, o->len - o->off);
		r = dpsock_sock_export(o->s, &x);
		to.sock_len = x.len - to.len;
		if (r == 0)
			dpsock_tko_buf_put(b, PL_TKO_R_ORPHAN, &to, sizeof(to), x.p, x.len);
	}
	dpsock_tko_buf_free(&x);
	return r != 0 ? r : b->err;
}

/* Attach worker k's ends of group g's live rings (as on_channel_add and
 * on_waiter_add did in the holder; the rings keep their indices). */
static int
pl_tko_rings_attach(struct pl_wgroup *wg)
{
	struct pl_group *g = wg->g;
	uint32_t id;
	int ret;

	for (id = 0; id < g->chan_hi; id++) {
		unsigned char *blk = pl_chan_block(g, id, wg->k);

		if (g->chan_live[id] == PL_CHAN_FREE)
			continue;
		ret = dpsock_spsc_cons_attach(&wg->chans[id].cmd, blk, g->geo.cmd_ring_size);
		if (ret == 0)
			ret = dpsock_spsc_prod_attach(&wg->chans[id].reply, blk + g->geo.cmd_ring_size,
						      g->geo.reply_ring_size);
		if (ret != 0)
			return ret;
	}
	for (id = 0; id < g->waiter_hi; id++) {
		if (!g->waiter_live[id])
			continue;
		ret = dpsock_spsc_prod_attach(&wg->wait[id], pl_wait_ring(g, id, wg->k),
					      g->geo.wait_ring_size);
		if (ret != 0)
			return ret;
		wake_mark(wg, id); /* once: every waiter looks again */
	}
	return 0;
}

static struct pl_wgroup *
pl_tko_wg(struct pl_ctl *c, uint32_t group, unsigned int k)
{
	return group < c->groups_hi && c->groups[group] != NULL ? c->groups[group]->wg[k] : NULL;
}

static int
pl_tko_wg_import(struct pl_ctl *c, unsigned int k, const void *data, uint32_t len)
{
	struct pl_tko_wg tw;
	struct pl_wgroup *wg;
	const uint32_t *gc;
	uint32_t j;

	if (len < sizeof(tw))
		return -EINVAL;
	memcpy(&tw, data, sizeof(tw));
	wg = pl_tko_wg(c, tw.group, k);
	if (wg == NULL || tw.n_fresh > wg->g->geo.slots_per_worker || tw.n_free > tw.n_fresh ||
	    len != sizeof(tw) + ((size_t)2 * tw.n_fresh + tw.n_free) * sizeof(uint32_t))
		return -EINVAL;
	gc = (const uint32_t *)(const void *)((const unsigned char *)data + sizeof(tw));
	wg->n_fresh = tw.n_fresh;
	wg->n_free = tw.n_free;
	wg->owners_next = tw.owners_next;
	wg->recent_at = tw.recent_at;
	wg->warned_slots = tw.warned_slots;
	wg->warned_backlog = tw.warned_backlog;
	wg->bad = tw.bad;
	wg->stopped = tw.stopped;
	memcpy(wg->recent, tw.recent, sizeof(tw.recent));
	for (j = 0; j < tw.n_fresh; j++) {
		wg->slots[j].wg = wg;
		wg->slots[j].num = k * wg->g->geo.slots_per_worker + j;
		wg->slots[j].gen = gc[2 * j];
		wg->slots[j].change = gc[2 * j + 1];
	}
	memcpy(wg->free_stack, gc + 2 * tw.n_fresh, tw.n_free * sizeof(uint32_t));
	return wg->bad ? 0 : pl_tko_rings_attach(wg);
}

static int
pl_tko_slot_import(struct pl_ctl *c, struct dpsock_worker *w, const void *data, uint32_t len)
{
	const unsigned char *p = data, *end = p + len;
	struct pl_tko_slot ts;
	const struct dpsock_pl_seg *geo;
	struct pl_wgroup *wg;
	struct pl_wslot *ws;
	unsigned char *base, *sdata;
	uint32_t h;
	int err;

	if (len < sizeof(ts))
		return -EINVAL;
	memcpy(&ts, p, sizeof(ts));
	p += sizeof(ts);
	wg = pl_tko_wg(c, ts.group, w->idx);
	if (wg == NULL || ts.i >= wg->n_fresh || ts.held_len + ts.sock_len != (uint64_t)(end - p))
		return -EINVAL;
	geo = &wg->g->geo;
	ws = &wg->slots[ts.i];
	ws->in_use = 1;
	ws->gen = ts.gen;
	ws->change = ts.change;
	ws->kind = ts.kind;
	ws->state = ts.state;
	ws->closing = ts.closing;
	ws->shut_wr = ts.shut_wr;
	ws->tx_blocked = ts.tx_blocked;
	ws->eof_pending = ts.eof_pending;
	ws->nodelay = ts.nodelay;
	ws->keepalive = ts.keepalive;
	ws->cc = ts.cc;
	ws->mate_wait = ts.mate_wait;
	ws->ka_idle = ts.ka_idle;
	ws->ka_intvl = ts.ka_intvl;
	ws->ka_cnt = ts.ka_cnt;
	ws->tos = ts.tos;
	ws->ttl = ts.ttl;
	ws->rx_cap = ts.rx_cap;
	ws->flags = ts.flags;
	ws->owner_pid = ts.owner_pid;
	ws->owner_fd = ts.owner_fd;
	ws->hits_seen = ts.hits_seen;
	ws->misses_seen = ts.misses_seen;
	/* the mate's pointer once every slot is back (pl_tko_settle): its
	 * group and slot number + 1 meanwhile */
	ws->mate = (struct pl_wslot *)(uintptr_t)((uint64_t)ts.mate_group << 32 | ts.mate);
	base = (unsigned char *)sh_of(ws);
	sdata = pl_slot_data(wg->g, ws->num);
	if (dpsock_fifo_prod_attach_at(&ws->rx, base + geo->rx_fifo_off, sdata + geo->rx_data_off,
				       geo->rx_fifo_size) != 0 ||
	    dpsock_fifo_cons_attach_at(&ws->tx, base + geo->tx_fifo_off, sdata + geo->tx_data_off,
				       geo->tx_fifo_size) != 0)
		return -EIO;
	__atomic_store_n(&wg->n_socks, wg->n_socks + 1, __ATOMIC_RELAXED);
	slot_active(ws);
	ws->s = dpsock_sock_import(w, p + ts.held_len, ts.sock_len, &pl_ops, ws, &err);
	if (ws->s == NULL && err != 0)
		return err;
	for (h = 0; h < ts.n_held; h++) {
		uint32_t hl[2];
		struct pl_held *ph;

		if ((size_t)(end - p) < sizeof(hl))
			return -EINVAL;
		memcpy(hl, p, sizeof(hl));
		p += sizeof(hl);
		if ((size_t)(end - p) < hl[1] || hl[0] > hl[1] || ws->s == NULL)
			return -EINVAL;
		ph = malloc(sizeof(*ph));
		if (ph == NULL)
			return -ENOMEM;
		ph->rx = dpsock_rx_restore(ws->s, p, hl[1]);
		if (ph->rx == NULL) {
			free(ph);
			return -ENOMEM;
		}
		ph->off = hl[0];
		ph->next = NULL;
		if (ws->held_tail != NULL)
			ws->held_tail->next = ph;
		else
			ws->held = ph;
		ws->held_tail = ph;
		p += (hl[1] + sizeof(hl) + 7) / 8 * 8 - sizeof(hl);
	}
	return 0;
}

static int
pl_tko_orphan_import(struct dpsock_worker *w, const void *data, uint32_t len)
{
	struct pl_worker *pw = &pl_workers[w->idx];
	struct pl_tko_orphan to;
	struct pl_orphan *o;
	int err;

	if (len < sizeof(to))
		return -EINVAL;
	memcpy(&to, data, sizeof(to));
	if (to.len + to.sock_len != len - sizeof(to))
		return -EINVAL;
	o = malloc(sizeof(*o) + to.len);
	if (o == NULL)
		return -ENOMEM;
	memcpy(o->data, (const unsigned char *)data + sizeof(to), to.len);
	o->pw = pw;
	o->off = 0;
	o->len = to.len;
	o->s = dpsock_sock_import(w, (const unsigned char *)data + sizeof(to) + to.len,
				  to.sock_len, &orphan_ops, o, &err);
	if (o->s == NULL) {
		free(o);
		return err;
	}
	o->next = pw->orphans;
	o->pprev = &pw->orphans;
	if (pw->orphans != NULL)
		pw->orphans->pprev = &o->next;
	pw->orphans = o;
	pw->orphan_bytes += to.len;
	return 0;
}

/* Once every slot of the worker is back: mates, and a first pass of what
 * each slot had pending (held data into its FIFO, its tx FIFO to lwIP). */
static void
pl_tko_settle(struct pl_ctl *c, unsigned int k)
{
	struct pl_wgroup *wg;
	uint32_t i, j;

	/* mates first, across groups (the two ends of a pair within the host
	 * are two programs' sockets on the same worker) */
	for (i = 0; (wg = next_wgroup(c, k, c->groups_hi, &i)) != NULL; i++)
		for (j = 0; j < wg->n_fresh; j++) {
			struct pl_wslot *ws = &wg->slots[j];
			uint64_t v = (uint64_t)(uintptr_t)ws->mate;
			uint32_t m = (uint32_t)v, mg = (uint32_t)(v >> 32), spw;
			struct pl_wgroup *mwg = m != 0 ? pl_tko_wg(c, mg, k) : NULL;

			ws->mate = NULL;
			if (!ws->in_use || mwg == NULL)
				continue;
			spw = mwg->g->geo.slots_per_worker;
			if ((m - 1) / spw == k && (m - 1) % spw < mwg->n_fresh &&
			    mwg->slots[(m - 1) % spw].in_use)
				ws->mate = &mwg->slots[(m - 1) % spw];
		}
	for (i = 0; (wg = next_wgroup(c, k, c->groups_hi, &i)) != NULL; i++) {
		for (j = 0; j < wg->n_fresh && !wg->bad; j++) {
			struct pl_wslot *ws = &wg->slots[j];

			if (!ws->in_use)
				continue;
			if (ws->held != NULL)
				rx_drain(ws);
			if (ws->kind != DPSOCK_PL_TCP_LISTENER && !ws->tx_blocked)
				tx_pump(ws);
			slot_update_tx_space(ws);
		}
		wake_flush(wg);
	}
}

/* On the worker, from its worker_init: its part of every group. */
static int
pl_tko_worker_import(struct dpsock_worker *w)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	struct dpsock_tko_rd r;
	const void *data;
	uint16_t type;
	uint32_t len;
	int n, ret = 0;

	if (!dpsock_tko_worker_part(w->d, w->idx, &r))
		return -EPROTO;
	while (ret == 0 && (n = dpsock_tko_next(&r, &type, &data, &len)) > 0) {
		switch (type) {
		case PL_TKO_R_WG:
			ret = pl_tko_wg_import(c, w->idx, data, len);
			break;
		case PL_TKO_R_SLOT:
			ret = pl_tko_slot_import(c, w, data, len);
			break;
		case PL_TKO_R_ORPHAN:
			ret = pl_tko_orphan_import(w, data, len);
			break;
		default:
			if (type >= DPSOCK_TKO_R_APP)
				ret = -EPROTO;
			break; /* the stack's own records */
		}
	}
	if (ret == 0 && n < 0)
		ret = n;
	if (ret != 0) {
		DPSOCK_LOG(ERR, preload, "takeover: worker %u: restoring record %u: %s", w->idx,
			   type, strerror(-ret));
		return ret;
	}
	/* what the slots had pending waits for the first poll: until the
	 * takeover is committed this process touches no ring or FIFO */
	pl_workers[w->idx].tko_settle = true;
	return 0;
}
