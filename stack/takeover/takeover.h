/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * takeover/ — handing a running instance to a new process.
 *
 * takeover.h — a running instance hands everything its programs depend on
 * to a new process of the same name (`dpsockd ... -- -f FILE --takeover`),
 * which goes on from there: docs/design.md decision 19, docs/running.md
 * "Upgrading without downtime".
 *
 * Two parts:
 *
 *   the image   typed records in a growable buffer (core/wire.h: written
 *               by each worker for its own sockets, and by the main side
 *               for what the control plane holds), and the file
 *               descriptors that travel beside it (memfds, eventfds,
 *               sockets) as indexes into one table;
 *   handover.c  the two processes: the holder listens on
 *               <runtime_dir>/<name>.takeover; the new one says hello
 *               (format version, workers, ports) and is refused before
 *               anything stops, or accepted; it sets up EAL and its
 *               workers, says go; the holder freezes its workers and
 *               control thread at a safe point, writes the image, stops
 *               its ports and sends image and descriptors; the new one
 *               starts its ports, restores every socket on the worker
 *               that held it, and says done; the holder exits 0 without
 *               touching what the programs share. A new process that
 *               fails or dies before "done" lets the holder start its
 *               ports again and resume, with nothing lost.
 *
 * Records never hold pointers; every integer has its width; a record type
 * a reader does not know is an error (the format version says what is
 * there, and a different version is refused at hello).
 */
#ifndef DPSOCK_STACK_TAKEOVER_H
#define DPSOCK_STACK_TAKEOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wire.h"

struct dpsock_stack;
struct dpsock_worker;

/* The hand-over's format: the hello, the messages and every record. Any
 * change to a record's layout or meaning bumps it. */
#define DPSOCK_TKO_VERSION 1u
#define DPSOCK_TKO_SUFFIX ".takeover"

/* ---- the two processes (handover.c) ------------------------------------ */

/* What a program that can be taken over gives the stack (dpsockd: the
 * preload server). Without it, a takeover is refused. */
struct dpsock_tko_app {
	/* the version of what the app shares with its clients (the preload
	 * wire): both processes must speak the same one, or the programs
	 * would keep talking the old one to the new process */
	uint32_t wire_version;
	/* holder, takeover thread: stop the app's control thread at a point
	 * where it is in the middle of nothing; 0 or -errno */
	int (*freeze)(void *arg);
	/* holder, takeover thread, everything frozen: the control side's
	 * part, with the descriptors it needs */
	int (*main_export)(void *arg, struct dpsock_tko_buf *b, struct dpsock_tko_fds *f);
	/* holder, on each frozen worker: its part */
	int (*worker_export)(struct dpsock_worker *w, void *arg, struct dpsock_tko_buf *b);
	/* holder: go on (handed: false), or stop for good without touching
	 * anything shared (handed: true) */
	void (*resume)(void *arg, bool handed);
	/* The new process restores in its app's main_init (dpsock_tko_main_part)
	 * and worker_init (dpsock_tko_worker_part), when dpsock_tko_taking(). */
};
void dpsock_tko_register(const struct dpsock_tko_app *app, void *arg);

/* dpsock_init, before EAL, when --takeover was given and the name is
 * held: connect to the holder and say hello. 0: accepted (go on with
 * EAL); -1 after a message (refused, no answer). */
int dpsock_tko_hello(const char *prog, struct dpsock_stack *d);
/* dpsock_run, before the ports start: say go, get the image. 0, or -1
 * after a message (the holder resumes by itself). */
int dpsock_tko_receive(struct dpsock_stack *d);
/* Once every worker and the app's control side run: tell the holder it
 * may exit; log the time taken and the blackout. */
void dpsock_tko_done(struct dpsock_stack *d);
/* The new process failed after the image came: the holder resumes. */
void dpsock_tko_abort(struct dpsock_stack *d, const char *why);
bool dpsock_tko_taking(const struct dpsock_stack *d);
bool dpsock_tko_worker_part(const struct dpsock_stack *d, unsigned int k,
			    struct dpsock_tko_rd *r);
bool dpsock_tko_main_part(const struct dpsock_stack *d, struct dpsock_tko_rd *r);
/* The descriptor at table index idx of the image, taken by the caller
 * (closed by nobody else); -1: none. */
int dpsock_tko_claim_fd(struct dpsock_stack *d, const struct dpsock_tko_rd *r, int32_t idx);
/* The stack's own descriptors in the image, by role. */
enum {
	DPSOCK_TKO_FD_LOCK = 0,      /* the instance lock */
	DPSOCK_TKO_FD_WORKER_EFD,    /* worker idx's eventfd (the programs hold it) */
	DPSOCK_TKO_FD_XDP,           /* port idx / DPSOCK_XDPF_FDS's XDP program, descriptor
				      * idx % DPSOCK_XDPF_FDS (sharing/filter_priv.h) */
};
int dpsock_tko_take_fd(struct dpsock_stack *d, unsigned int role, unsigned int idx);
/* The stack's records of worker w's part (counters, pcbs no socket stands
 * for): on the worker, after the app restored its own. */
int dpsock_tko_worker_restore(struct dpsock_worker *w, bool stats_only);
/* A step of the new process's start, logged with the time since the
 * holder froze (nothing without a takeover). */
void dpsock_tko_mark(const struct dpsock_stack *d, const char *what);
/* Free the image; close the descriptors nobody claimed. */
void dpsock_tko_release(struct dpsock_stack *d);

/* The holder: serve takeovers (after "ready"), and stop serving. */
int dpsock_tko_listen(struct dpsock_stack *d);
void dpsock_tko_unlisten(struct dpsock_stack *d);
/* Handed over: the process exits without touching what it handed over. */
bool dpsock_tko_handed(const struct dpsock_stack *d);

/* A worker's loop checks this each pass (one load): a freeze was asked. */
static inline bool
dpsock_tko_freezing(const uint32_t *phase)
{
	return __atomic_load_n(phase, __ATOMIC_ACQUIRE) != 0;
}

/* The worker's side of a freeze (d->tko_phase 1, checked at the top of
 * each pass): write its part, wait. Returns true when handed over (leave
 * the loop without tearing anything down), false when resumed. */
bool dpsock_tko_worker_freeze(struct dpsock_worker *w);

#endif /* DPSOCK_STACK_TAKEOVER_H */
