/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * link.h — link/: this process's link to dpsockd (attach, slots, channels,
 * waiters). Attaching (the control socket and its requests, the group
 * segment, the wake page and the net view it carries, whether dpsockd is
 * gone: attach.c), the segment's slots, their FIFOs' levels and the
 * process-shared lock of a FIFO side (slot.c), each thread's channel of
 * commands to the workers (channel.c), and the waiters through which the
 * workers wake a thread (waiter.c). What the rest of the shim uses of it;
 * link_priv.h is what its own files share. It calls nothing above shim.h.
 */
#ifndef DPSOCK_SHIM_LINK_H
#define DPSOCK_SHIM_LINK_H

#include "shim.h"
#include "preload_wire.h"
#include "spsc_ring.h"

/* ---- process attach (attach.c), threads' channels (channel.c), waiters
 * (waiter.c), slots and their locks (slot.c) ------------------------------ */

#define SHIM_MAX_WORKERS 64

struct shim_proc {
	pthread_mutex_t lock;     /* attach and control-socket request/reply */
	pid_t pid;                /* process that attached (fork: child differs) */
	int state;                /* 0 not tried, 1 attached, -1 unavailable */
	int ctl;                  /* control socket */
	unsigned char *seg;       /* group segment (this process's mapping) */
	size_t seg_size;
	const struct dpsock_pl_wake *wake;
	size_t wake_size;
	uint32_t n_workers;
	int worker_efd[SHIM_MAX_WORKERS];
	uint64_t token;
	uint32_t next_worker;     /* threads' worker of choice, round-robin */
	/* a forked child: a control connection the parent opened for it at
	 * fork (fork.c), used by its first attach; -1 = none */
	int spare_ctl;
	int ctl_hup;              /* the control socket hung up: dpsockd is gone */
};

extern struct shim_proc shim_proc;

struct shim_waiter {
	int id;                   /* -1: none */
	int efd;
	pid_t pid;
	uint32_t armed;           /* how it is armed (DPSOCK_PL_ARMED_*), 0: not */
	uint32_t futex_seen;      /* the header's futex word before a futex arm */
	struct dpsock_pl_waiter *hdr;
	struct dpsock_spsc_cons ring[SHIM_MAX_WORKERS];
};

struct shim_thread {
	pid_t pid;                /* process this state belongs to */
	int channel;              /* -1: none */
	uint32_t worker;          /* worker of choice for connect / udp send */
	uint32_t cookie;
	struct shim_waiter w;
	struct dpsock_spsc_prod cmd[SHIM_MAX_WORKERS];
	struct dpsock_spsc_cons reply[SHIM_MAX_WORKERS];
};

/* Attach the process if not yet (or re-attach a forked child). Returns 0,
 * or -errno (-ENOENT/-ECONNREFUSED: no daemon; others logged). */
int shim_attach(void);
/* A new connection to dpsockd's control socket: the fd, or -errno. */
int shim_ctl_connect(void);
/* This thread's channel + waiter (created on first use). NULL + errno. */
struct shim_thread *shim_thread_get(void);
/* Post a command to worker k (no reply). Returns 0 or -errno. */
int shim_cmd_post(struct shim_thread *t, uint32_t k, struct dpsock_pl_cmd *c);
/* Post a command and wait for its reply. Returns 0 or -errno (transport). */
int shim_cmd_call(struct shim_thread *t, uint32_t k, struct dpsock_pl_cmd *c,
		  struct dpsock_pl_reply *r);
/* A new waiter (for an epoll instance); 0 or -errno. */
int shim_waiter_new(struct shim_waiter *w);
void shim_waiter_free(struct shim_waiter *w);
/* Drain a waiter's wait rings: clears queued[] of each slot it names and
 * calls fn(slot, arg) for each (fn may be NULL). */
void shim_waiter_drain(struct shim_waiter *w, void (*fn)(uint32_t, void *), void *arg);
/* Arm w before a sleep: say which CPU this thread sleeps on, armed = 1,
 * and a seq_cst fence that pairs with the worker's fence between publishing
 * a change and reading armed: after it, either the caller's last look sees
 * the change, or the worker sees armed and writes the eventfd. */
void shim_waiter_arm(struct shim_waiter *w);
/* The same, for a sleep on offloaded sockets alone (shim_sleep with no
 * kernel descriptor and no signal mask): the worker wakes a futex in the
 * waiter's header instead of writing the eventfd, and the sleep is one
 * FUTEX_WAIT with nothing to read after it. */
void shim_waiter_arm_futex(struct shim_waiter *w);
static inline void
shim_waiter_disarm(struct shim_waiter *w)
{
	w->armed = 0;
	__atomic_store_n(&w->hdr->armed, 0, __ATOMIC_RELAXED);
}
/* How long a wait may spin before it arms and sleeps, in µs (-1 = spin
 * forever): the DPSOCK_RX_POLL / DPSOCK_SELECT_POLL value when set; else
 * (SHIM_POLL_AUTO, shim.h) SHIM_POLL_DEFAULT_US, or none when this thread
 * runs on the CPU of a worker (spinning there would take the CPU from the
 * worker that is to wake it). */
#define SHIM_POLL_DEFAULT_US 50L
long shim_spin_budget(long configured);
/* true when waiter id's owning process is gone (its watch entries may be
 * taken back). */
bool shim_waiter_dead(uint32_t id);
/* What dpsockd serves now (the wake page's net view, copied under its
 * sequence lock); zeroed when not attached. */
void shim_netview(struct dpsock_pl_netview *out);
/* true when dpsockd stopped or the control socket hung up. */
bool shim_daemon_gone(void);
/* The control socket hung up (seen by a wait that watched it). */
void shim_daemon_hung_up(void);
/* Sleep until the waiter's eventfd, the control socket, or timeout_ms
 * (-1 forever). Extra kernel fds may ride along (nfds entries of pfd, whose
 * revents are filled). Returns the real poll's result or -errno. Armed by
 * shim_waiter_arm_futex (nfds 0, no sigmask): a FUTEX_WAIT instead, of at
 * most SHIM_FUTEX_SLEEP_MS (only the control socket tells of a killed
 * dpsockd, and a futex cannot watch it: callers look again after it). */
#define SHIM_FUTEX_SLEEP_MS 200
int shim_sleep(struct shim_waiter *w, struct pollfd *pfd, nfds_t nfds, int timeout_ms,
	       const sigset_t *sigmask);

/* Segment geometry helpers. */
struct dpsock_pl_slot *shim_slot(uint32_t n);
void *shim_slot_rx(uint32_t n);
void *shim_slot_tx(uint32_t n);
int shim_fifo_rx_attach(uint32_t n, struct dpsock_fifo_cons *c);
int shim_fifo_tx_attach(uint32_t n, struct dpsock_fifo_prod *p);
static inline const struct dpsock_pl_seg *shim_seg(void)
{
	return (const struct dpsock_pl_seg *)shim_proc.seg;
}

/* New image: re-attach over the inherited control connection ctl (EXEC)
 * (exec.c then rebuilds the shadow sockets of the descriptors it
 * inherited). Returns 0 or -errno (then nothing was inherited). */
int shim_attach_exec(int ctl);
/* Let the workers take the commands still in this thread's rings (exec:
 * the old image's channels die with it; the process's exit). */
void shim_thread_drain_self(void);

/* ---- per-slot shim area: process-shared locks, process references -------- */

#define SHIM_AREA_PIDS 9

struct shim_slot_area {
	uint32_t closed;          /* CLOSE sent (by exactly one process) */
	uint32_t pinned;          /* pid list overflowed: never closed by a process */
	/* processes of the group holding the socket (0 = free entry). A
	 * process closing its last descriptor removes its pid; CLOSE goes out
	 * when no live pid is left (a child that _exit()ed is dead). fork
	 * adds the parent's pid a second time; the child turns that copy into
	 * its own pid. */
	uint32_t pids[SHIM_AREA_PIDS];
	/* identity across exec (docs/preload.md "exec"): the kernel socket's
	 * inode (st_ino) and the slot's gen when it was recorded, written in
	 * EVERY slot of the socket when it became offloaded. The slot whose
	 * gen no longer matches belongs to another socket since. */
	uint32_t gen;
	uint64_t ino;
};
_Static_assert(sizeof(struct shim_slot_area) <= sizeof(((struct dpsock_pl_slot *)0)->shim),
	       "shim area fits the slot");

static inline struct shim_slot_area *shim_area(struct dpsock_pl_slot *s)
{
	return (struct shim_slot_area *)(void *)s->shim;
}

/* The FIFO locks of the slot whose shim area is a (in the slot's line 1:
 * the worker takes tx_lock too, preload_wire.h) */
static inline struct dpsock_pl_slot *shim_area_slot(struct shim_slot_area *a)
{
	return (struct dpsock_pl_slot *)(void *)((unsigned char *)a -
						 offsetof(struct dpsock_pl_slot, shim));
}

static inline uint32_t *shim_rx_lock(struct shim_slot_area *a)
{
	return &shim_area_slot(a)->rx_lock;
}

static inline uint32_t *shim_tx_lock(struct shim_slot_area *a)
{
	return &shim_area_slot(a)->tx_lock;
}

void shim_lock(uint32_t *lock);
void shim_unlock(uint32_t *lock);

/* Worker that owns slot number n. */
static inline uint32_t
shim_slot_worker(uint32_t n)
{
	return n / shim_seg()->slots_per_worker;
}

static inline bool
shim_slot_valid(uint32_t n)
{
	const struct dpsock_pl_seg *g = shim_seg();

	return n < g->n_workers * g->slots_per_worker;
}

/* ---- FIFO levels ------------------------------------------------------------- */

/* Bytes in a FIFO region seen by a third party (readiness), and the
 * positions read: acquire loads pair with the producer's release of prod
 * (P1) and the consumer's release of cons (C2) in spsc_ring.h. Clamped to
 * size. */
static inline uint32_t
shim_fifo_level_at(void *region, uint32_t size, uint32_t *prod, uint32_t *cons)
{
	const struct dpsock_spsc_hdr *h = region;
	uint32_t c = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
	uint32_t p = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	uint32_t n = p - c;

	*prod = p;
	*cons = c;
	return n > size ? size : n;
}

static inline uint32_t
shim_fifo_level(void *region, uint32_t size)
{
	uint32_t p, c;

	return shim_fifo_level_at(region, size, &p, &c);
}

#endif /* DPSOCK_SHIM_LINK_H */
