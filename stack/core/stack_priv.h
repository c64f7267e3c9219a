/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * core/ — what every concern of the stack uses and nothing of theirs: the
 * instance's and the workers' types (here), the worker on this thread and
 * its wake-up (wake.c), the receive clock (clock.c), configuration
 * (config.c), logging (log.c), records for a takeover's image (wire.c).
 * Core calls no other folder; it includes the type headers of the state
 * the instance holds by value (frame's ports, capture's sessions).
 *
 * The state of one stack instance (dpsockd, or a native app embedding the
 * stack): its control plane (main lcore) and its workers (one per worker
 * lcore, each with its own lwIP instance and one RX/TX queue pair on every
 * port).
 *
 * Ownership: a worker's struct, its lwIP instance, its netifs and its stats
 * block are touched only by the worker's lcore, except the fields marked
 * "shared" (atomics). struct dpsock_stack is written by the main lcore
 * before the workers start and read-only afterwards, except quit.
 */
#ifndef DPSOCK_STACK_PRIV_H
#define DPSOCK_STACK_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sys/queue.h>

#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "wire.h"
#include "lwip/netif.h"

#include "dpsock/dpsock.h"

#include "config_priv.h"
#include "frame/port_priv.h"
#include "stats_segment.h"
#include "capture/capture_priv.h"

#define DPSOCK_TX_BURST 64
#define DPSOCK_RX_BURST_MAX 512u

struct dpsock_stack;
struct dpsock_worker;
struct dpsock_sock;
struct dpsock_app;
struct dpsock_tx_loan;
struct dpsock_mcast;
struct dpsock_mc_worker;
struct rte_flow;

/* Who cuts TCP data into MSS-sized frames on a port (tcp.segmentation). */
enum dpsock_seg_mode {
	DPSOCK_SEG_LWIP,  /* lwIP: one segment per MSS */
	DPSOCK_SEG_TSO,   /* lwIP builds super-segments, the port cuts them */
	DPSOCK_SEG_GSO,   /* lwIP builds super-segments, the netif cuts them (tcp_cut) */
};

/* pbufs (so mbuf segments, and MSS segments) in one super-segment */
#define DPSOCK_TSO_PBUFS_MAX 64

/* A worker's view of one port: its lwIP netif and its TX batch. */
struct dpsock_worker_port {
	struct netif netif;
	/* the netifs of the port's addresses: nif[0] is &netif; a shared port
	 * gets one more per address of its netdev (netview.c) */
	struct netif *nif[8];
	uint8_t n_nif;
	/* shared port: the last next hop's MAC (netif.c), valid for one view */
	uint64_t neigh_gen;
	uint32_t neigh_ip;
	uint8_t neigh_mac[6];
	struct dpsock_worker *w;
	struct dpsock_port *port;
	uint16_t port_idx;
	uint16_t dev_port;        /* the DPDK port and queue this worker uses for */
	uint16_t dev_queue;       /* the port: port->queues[w->queue] */
	uint16_t tx_n;
	uint16_t cksum_default;   /* lwIP checksum control for the port */
	uint16_t cksum_l4_ok;     /* the same, minus TCP/UDP checks (NIC verified) */
	enum dpsock_seg_mode seg_mode;
	bool tcp_cksum_sw;        /* lwIP leaves TCP checksums to the netif, which computes
				   * them (segmenting netif, port without the offload) */
	struct rte_mbuf *tx[DPSOCK_TX_BURST];
};

/* Receive coalescing (gro.c): the segment held for one flow in a burst. */
#define DPSOCK_GRO_FLOWS 8   /* flows held at once */
#define DPSOCK_GRO_SEGS 64   /* segments merged into one */

struct dpsock_gro_item {
	struct rte_mbuf *head;    /* NULL: free slot */
	struct rte_mbuf *tail;
	struct dpsock_worker_port *wp;
	uint32_t saddr[4], daddr[4]; /* network order: IPv4 in [0], IPv6 whole */
	uint32_t ports;           /* source << 16 | destination, network order */
	uint8_t l3_len;           /* 20 (IPv4), 40 (IPv6): the frame's IP header */
	uint32_t next_seq;        /* sequence number the next segment must start at */
	uint32_t payload;         /* bytes held */
	uint16_t nseg;
	uint8_t l4_len;
	bool psh;                 /* the last segment had PSH: nothing joins it */
};

struct dpsock_gro {
	unsigned int n;           /* slots in use or freed within the burst */
	struct dpsock_gro_item item[DPSOCK_GRO_FLOWS];
};

/* worker.yield: when a polling worker gives its CPU away */
enum dpsock_yield {
	DPSOCK_YIELD_AUTO,    /* to a thread of its CPU the app knows has work */
	DPSOCK_YIELD_NEVER,
	DPSOCK_YIELD_ALWAYS,  /* on every idle pass */
};

struct dpsock_worker {
	/* hot: read every iteration */
	struct dpsock_stack *d;
	struct dpsock_worker_stats *stats;
	struct rte_ring *steer;   /* shared: mbufs other workers hand to this one (MP/SC) */
	uint16_t queue;           /* this worker's queue id on every port */
	uint16_t rx_burst;
	uint16_t n_ports;
	unsigned int idx;
	unsigned int lcore_id;
	uint64_t last_work_tsc;
	uint64_t idle_poll_tsc;   /* poll this long after the last work before sleeping */
	uint32_t sleep_us;        /* current back-off step */
	uint32_t sleep_max_us;
	bool rx_wake;             /* every queue wakes it from a sleep (AF_XDP) */
	/* capturing (capture/): its view of the published sessions */
	struct dpsock_cap_worker cap;
	uint8_t yield;            /* enum dpsock_yield (worker.yield) */
	uint64_t rx_tsc;          /* TSC of the last RX burst (receive timestamps) */
	struct dpsock_mc_worker *mc; /* snapshot of the ports' multicast state (mcast.c) */
	const struct dpsock_netview *nv; /* the net view this worker holds (netview.c) */
	uint64_t nv_gen;          /* its generation */
	uint64_t nv_held;         /* shared: the same, for the control side's reclaim */
	uint64_t next_mirror_tsc; /* next copy of lwIP's counters into stats */
	uint64_t timer_due_tsc;   /* when to ask lwIP for due timers again (worker.c) */

	/* sleeping */
	int efd;                  /* eventfd other threads write to wake the worker */
	int epfd;                 /* epoll set the worker sleeps on */
	uint32_t sleeping;        /* shared: 1 while blocked in epoll */
	uint32_t *sleeping_pub;   /* NULL, or a second copy of sleeping the app publishes
				   * (preload: the wake page line); set by worker_init */

	/* start-up handshake with the main lcore */
	int init_ret;             /* shared: 0 ok, -errno failed */
	uint32_t init_done;       /* shared: set once init_ret is final */

	struct dpsock_worker_port ports[DPSOCK_MAX_PORTS];

	/* receive coalescing (gro.c): tcp.gro, and what is held in a burst */
	bool gro_on;
	struct dpsock_gro gro;
	/* zero-copy TX (netif.c): lwIP frames lent to the NIC, and loans the
	 * NIC returned on another thread (a port stopped by the main lcore),
	 * to give back to lwIP here */
	uint32_t tx_loans;
	struct dpsock_tx_loan *loan_returns; /* shared: lock-free stack */

	/* sockets (sock.c): every live socket of this worker, for teardown */
	TAILQ_HEAD(, dpsock_sock) socks;
	/* those with an entry in the stats socket table, and where the 100 ms
	 * refresh goes on (sock.c) */
	TAILQ_HEAD(, dpsock_sock) listed;
	struct dpsock_sock *listed_next;
	uint32_t n_conns;         /* TCP connections (accepted or connecting/connected) */
	uint32_t n_half_open;     /* passive connections between SYN and accept */
	uint32_t port_hint;       /* where the next ephemeral port search starts */
	uint8_t extarg_id;        /* lwIP ext-arg slot for our pcb callbacks */
	uint8_t sock_extarg_id;   /* lwIP ext-arg slot: the pcb's socket */
	bool app_ready;           /* app->worker_init succeeded */
	/* takeover (takeover/handover.c): this worker's part of the image */
	uint32_t tko_state;       /* shared: 1 once its part is written */
	bool tko_connecting;      /* its part may hold connects in flight (the new build takes them) */
	int tko_err;              /* what writing it failed with */
	uint32_t ports_gen;       /* d->ports_gen its port handles come from */
	struct dpsock_tko_buf tko_part;

	/* the clock of what it receives (core/clock.c) */
	struct dpsock_clock {
		uint64_t base_tsc, base_ns; /* TSC -> CLOCK_REALTIME, refreshed every 100 ms */
		double ns_per_tsc;  /* 0: no TSC base (before init, after fini) */
		int ts_off;         /* the NIC's RX stamp (mbuf dynamic field), */
		uint64_t ts_flag;   /* when a port has it; 0: none */
	} clock;

	/* stats (worker.c, sockstat.c) */
	uint64_t busy_tsc;        /* TSC spent in iterations that found work */
	uint64_t busy_mark_tsc;   /* when busy_permille was last computed */
	uint64_t busy_mark_busy;  /* busy_tsc then */
	uint64_t zero_seen;       /* last ctl.zero_req applied */
	uint64_t lwip_base[24];   /* lwIP's counters at the last zeroing (worker.c) */
	uint32_t *sock_free_slots; /* free entries of this worker's socket table (a stack) */
	uint32_t n_sock_free;
	uint64_t sock_serial;

	/* cold, at the end: shared ports' frames waiting for a neighbour the
	 * kernel is asked to resolve (netif.c) */
	unsigned int n_neigh_wait;
	struct dpsock_neigh_wait {
		struct pbuf *p;
		uint32_t nexthop;         /* IPv4's */
		uint8_t nexthop6[16];     /* IPv6's (v6) */
		bool v6;
		uint8_t port;
		uint64_t since_tsc;
		uint64_t asked_tsc;
	} neigh_wait[64];
	ip6_addr_t nd6_gw;        /* the answer of dpsock_lwip_nd6_gw (netif.c) */
} __rte_cache_aligned;

/* Active-open steering backend (steer.c): how a connection's packets come
 * back to the worker that opened it. Chosen once at start. */
struct dpsock_steer_ops {
	const char *name;
	/* Claim a local port for a connection from worker w, laddr to
	 * raddr:rport (rport network order; the addresses 16 bytes, IPv4's
	 * mapped). Returns the port (host order) or 0 (none left). */
	uint16_t (*claim_port)(struct dpsock_worker *w, const struct dpsock_mc_addr *laddr,
			       const struct dpsock_mc_addr *raddr, uint16_t rport);
	/* The connection's pcb is gone (after TIME_WAIT): release the port and
	 * whatever steers it. */
	void (*release_port)(struct dpsock_worker *w, uint16_t lport);
};

/* A takeover's new process makes its stats and capture segments under
 * their name plus this; they take the name when the hand-over is done
 * (takeover/). */
#define DPSOCK_TKO_SHM_SUFFIX ".tko"

struct dpsock_stack {
	struct dpsock_config conf;
	ip4_addr_t route_gw[DPSOCK_MAX_ROUTES]; /* conf.routes[i].gateway, for lwIP */
	unsigned int n_ports;
	struct dpsock_port ports[DPSOCK_MAX_PORTS];
	unsigned int n_workers;
	struct dpsock_worker *workers;  /* n_workers, cache aligned */
	int lock_fd;                    /* the instance lock's descriptor (stack.c); a takeover hands it over */
	int main_worker;                /* index of the worker the main lcore runs, or -1 */
	struct dpsock_stats_segment *stats;
	int stats_fd;
	char stats_shm[64];
	struct dpsock_port_stats port_base[DPSOCK_MAX_PORTS]; /* -z baseline (main lcore) */
	FILE *stats_file;               /* DPSOCK_STATS_FILE: closed sockets' summaries */
	char stats_file_path[256];
	uint64_t tsc_hz;
	volatile uint32_t quit;         /* shared: set by the signal handler */
	/* port_id -> index in ports[], for mbufs that arrive on a steering ring */
	uint8_t port_idx[RTE_MAX_ETHPORTS];

	const struct dpsock_app *app;
	void *app_arg;
	bool initialised;               /* dpsock_init succeeded */

	/* One port allocator and TIME_WAIT view for all workers (steer.c):
	 * port_owner[p] is 0 when local port p is free, k + 1 while worker k
	 * owns it (from the active open until its pcb leaves TIME_WAIT). Any
	 * worker reads it to hand a segment to the port's owner. */
	const struct dpsock_steer_ops *steer; /* shared: may fall back to software once */
	uint16_t eph_min, eph_max;
	uint8_t *port_owner;            /* [65536], shared, atomics */
	struct rte_flow **flows;        /* [65536] rte_flow backend rules */
	uint32_t flow_failures;         /* shared: rule creations failed in a row */
	rte_spinlock_t flow_lock;       /* rte_flow calls from several lcores */

	struct dpsock_mcast *mc;        /* multicast registry (mcast.c) */
	const struct dpsock_sock_mc_ops *sock_mc; /* what multicast adds to UDP sockets (mcast.c) */

	/* addresses, routes, neighbours (netview.c): the current view */
	bool any_shared;                /* a port is shared with the kernel */
	struct dpsock_netview *nv;      /* shared: release/acquire */
	uint64_t nv_gen;                /* shared: its generation */
	struct dpsock_kfollow *kf;      /* the kernel follower (kfollow.c), NULL: none */
	struct dpsock_filter *filter;   /* what the shared ports steer to dpsock (filter.c) */
	/* called on the control side after each view is published (the
	 * preload server copies it for its clients) */
	void (*nv_changed)(struct dpsock_stack *d, const struct dpsock_netview *v);

	/* capturing (capture/): the segment (main lcore), and the sessions
	 * published for the workers (release: cap_gen after cap_pub[]) */
	struct dpsock_capture *capture;
	struct dpsock_cap_sess *cap_pub[DPSOCK_CAP_SESSIONS];
	uint32_t cap_gen;
	uint32_t cap_live;

	/* takeover (takeover/): the hand-over in progress or being served,
	 * NULL: none; and the freeze every worker looks at once a pass
	 * (0 run, 1 freeze: write your part and wait, 2 handed over: leave) */
	struct dpsock_tko *tko;
	uint32_t tko_phase;
	uint32_t tko_gate;              /* shared: 1 while a taking-over process's workers wait
					 * for the hand-over's commit (they run nothing) */
	uint32_t ports_gen;             /* shared: bumped when ports were started again */
};

/* Wake a sleeping worker (any thread; core/wake.c). */
void dpsock_worker_wake(struct dpsock_worker *w);

/* The worker running on the calling thread (NULL elsewhere). */
extern _Thread_local struct dpsock_worker *dpsock_self;

/* core/clock.c: on the worker's lcore. Set up (before the first receive)
 * and torn down; the 100 ms tick refreshes the TSC -> CLOCK_REALTIME base. */
void dpsock_clock_init(struct dpsock_worker *w);
void dpsock_clock_fini(struct dpsock_worker *w);
void dpsock_clock_tick(struct dpsock_worker *w);
/* Now (CLOCK_REALTIME ns) from a TSC value, and from the TSC of the last
 * RX burst. */
uint64_t dpsock_clock_tsc_ns(const struct dpsock_worker *w, uint64_t tsc);
uint64_t dpsock_clock_rx_ns(const struct dpsock_worker *w);
/* The NIC's RX stamp of mbuf m (RTE_ETH_RX_OFFLOAD_TIMESTAMP), 0: none. */
uint64_t dpsock_clock_hw_ns(const struct dpsock_worker *w, const struct rte_mbuf *m);

#endif /* DPSOCK_STACK_PRIV_H */
