/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * instance_priv.h — the top of the stack: an instance's life cycle
 * (stack.c), each worker's loop (worker.c) and the stats segment
 * (stats.c), which drive every folder below (docs/architecture.md).
 */
#ifndef DPSOCK_INSTANCE_PRIV_H
#define DPSOCK_INSTANCE_PRIV_H

#include "core/stack_priv.h"

/*
 * Worker life cycle. init and fini run on the worker's own lcore, because
 * its lwIP instance lives in that thread's thread-local storage.
 */

/* Create the lwIP instance and one netif per port. Returns 0 or -errno. */
int dpsock_worker_init(struct dpsock_worker *w);

/* One loop iteration: RX from every port and the steering ring, lwIP
 * timers, TX flush. Returns the number of packets handled (0 = idle). */
unsigned int dpsock_worker_poll(struct dpsock_worker *w);

/* After a poll that found nothing: keep polling for idle_poll_us, then
 * sleep with exponential back-off, at most max_us (and never past lwIP's
 * next timer). */
void dpsock_worker_idle(struct dpsock_worker *w, unsigned int work, uint32_t max_us);

/* Tear down netifs, lwIP pcbs and pending mbufs; free the instance. */
void dpsock_worker_fini(struct dpsock_worker *w);

/* rte_eal_remote_launch entry: init, loop until quit, fini. */
int dpsock_worker_main(void *arg);

/* The stack's state (dpsock_init must have succeeded). */
struct dpsock_stack *dpsock_stack_get(void);

/* stats.c */

/* Create (or take over a stale) /dev/shm/dpsock.<name>.stats.
 * Returns 0, -EEXIST (a live daemon of that name runs; pid in err) or -errno. */
int dpsock_stats_create(struct dpsock_stack *d, char *err, size_t errlen);

/* Copy the ports' rte_eth_stats and pool levels into the segment. */
void dpsock_stats_update_ports(struct dpsock_stack *d);

/* Mark stopped, unmap and unlink the segment (idempotent). */
void dpsock_stats_destroy(struct dpsock_stack *d);

/* Main lcore, every 100 ms: apply dpsock-stat's requests (zeroing the
 * ports' counters, log levels). */
void dpsock_stats_control(struct dpsock_stack *d);

/* Register /dpsock/info, /dpsock/ports, /dpsock/workers, /dpsock/sockets
 * with DPDK telemetry (main lcore, once the segment exists). Returns 0 or
 * -errno (telemetry disabled is not an error). */
int dpsock_stats_telemetry_register(struct dpsock_stack *d);

#endif /* DPSOCK_INSTANCE_PRIV_H */
