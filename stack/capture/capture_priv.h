/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * capture_priv.h — frames for dpsock-dump (abi/capture_ring.h): the
 * instance's capture segment, the sessions the main lcore loads and hands
 * to the workers, and the workers' copies of the frames a session wants.
 *
 * The main lcore (every 100 ms, dpsock_capture_control) follows what the
 * tools ask in the segment: it loads a session's filter (classic BPF from
 * libpcap, converted to eBPF by rte_bpf, verified and JIT-compiled where the
 * CPU allows), publishes the session for the workers (cap_pub[] and a new
 * cap_gen, release), and retires what a tool stopped, or left by dying,
 * once every worker saw the generation that took it away, so that no
 * worker still copies into it.
 *
 * A worker refreshes its view at the top of each pass when cap_gen moved
 * (one load a pass otherwise) and copies each frame a session wants into
 * its own ring of that session: RX frames as the port gave them, held
 * until rx_frame returns so that a drop can name its counter
 * (dpsock_capture_rx, _drop, _rx_done), TX frames as they go to the port
 * (dpsock_capture_tx). A full ring loses the capture of a frame, counted,
 * never the frame.
 */
#ifndef DPSOCK_STACK_CAPTURE_PRIV_H
#define DPSOCK_STACK_CAPTURE_PRIV_H

#include <stdbool.h>
#include <stdint.h>

#include "capture_ring.h"
#include "spsc_ring.h"

struct dpsock_stack;
struct dpsock_worker;
struct dpsock_worker_port;
struct rte_bpf;
struct rte_mbuf;

/* A loaded session, shared read-only by the workers while published. */
struct dpsock_cap_sess {
	unsigned int idx;               /* its session in the segment */
	uint32_t gen;                   /* the request generation it runs */
	struct rte_bpf *bpf;            /* NULL: every frame */
	uint64_t (*jit)(void *);        /* the filter, JIT-compiled; NULL: interpreted */
	uint32_t snaplen;
	uint32_t dirs;                  /* DPSOCK_CAP_DIR_* */
	uint32_t ports;                 /* bit per port; 0: every port */
	struct dpsock_cap_ring_ctl **ctl; /* [n_workers] */
	unsigned char **data;           /* [n_workers]: each ring's data */
	void **hdr;                     /* [n_workers]: each ring's FIFO header */
};

/* A worker's view and its record in the making (one per session). */
struct dpsock_cap_worker {
	uint32_t gen;                   /* cap_gen this view is of */
	unsigned int n;                 /* sessions in view */
	struct dpsock_cap_sess *s[DPSOCK_CAP_SESSIONS];
	struct dpsock_fifo_prod ring[DPSOCK_CAP_SESSIONS];
	/* RX: records written but not committed while rx_frame runs */
	unsigned int n_pending;
	struct {
		unsigned int idx;
		uint32_t len;
		struct iovec iov[2];
	} pending[DPSOCK_CAP_SESSIONS];
};

/* Create the capture segment (after the stats segment: its name is known
 * free; taking: a takeover's new process, which makes it under a name of
 * its own until done) / mark it stopped and remove it. 0 or -errno (err
 * says why). */
int dpsock_capture_init(struct dpsock_stack *d, bool taking, char *err, size_t errlen);
void dpsock_capture_fini(struct dpsock_stack *d);
/* The segment's name in /dev/shm (a buffer of 80 bytes), NULL: none. */
char *dpsock_capture_shm_name(struct dpsock_stack *d);
/* The main lcore's 100 ms task. */
void dpsock_capture_control(struct dpsock_stack *d);

/* Workers. */
void dpsock_capture_worker_sync(struct dpsock_worker *w);
void dpsock_capture_rx(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m);
void dpsock_capture_drop(struct dpsock_worker *w, const uint64_t *counter);
void dpsock_capture_rx_done(struct dpsock_worker *w);
void dpsock_capture_tx(struct dpsock_worker *w, struct dpsock_worker_port *wp,
		       struct rte_mbuf **m, unsigned int n);

#endif /* DPSOCK_STACK_CAPTURE_PRIV_H */
