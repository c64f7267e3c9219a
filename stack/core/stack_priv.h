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

/* Send what lwIP queued for every port (netif.c). */
void dpsock_worker_flush(struct dpsock_worker *w);

/* Tear down netifs, lwIP pcbs and pending mbufs; free the instance. */
void dpsock_worker_fini(struct dpsock_worker *w);

/* rte_eal_remote_launch entry: init, loop until quit, fini. */
int dpsock_worker_main(void *arg);

/* Wake a sleeping worker (any thread; core/wake.c). */
void dpsock_worker_wake(struct dpsock_worker *w);

/* takeover: the ports' AF_XDP sockets closed for the new process, and
 * started again when it failed; a worker picks up the new port handles
 * (port_release.c). */
void dpsock_ports_release(struct dpsock_stack *d);
int dpsock_ports_restart(struct dpsock_stack *d);
void dpsock_worker_ports_rebind(struct dpsock_worker *w);

/* Hand a received frame to another worker through its steering ring (the
 * flow's owner); counted, and dropped when that ring is full (steer.c). */
void dpsock_worker_steer(struct dpsock_worker *w, struct dpsock_worker *owner,
			 struct rte_mbuf *m);

/* The private area of every received mbuf: lwIP's view of the frame, and
 * how many workers handed it on already (dpsock_lwip_tcp_unmatched). */
struct dpsock_mbuf_priv {
	struct pbuf_custom pc;
	uint8_t hops;           /* set to 0 when the frame comes from a port */
};

/* The stack's state (dpsock_init must have succeeded). */
struct dpsock_stack *dpsock_stack_get(void);

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

/* steer.c */

/* Choose the steering backend (config tcp.steering, probed capabilities)
 * and allocate the shared port table. Returns 0 or -errno (message printed). */
int dpsock_steer_setup(struct dpsock_stack *d);
void dpsock_steer_teardown(struct dpsock_stack *d);

/* The Toeplitz hash a NIC computes for an IPv4 TCP/UDP packet with this
 * 4-tuple (all network order) under an RSS key (40 bytes or more). */
uint32_t dpsock_rss_hash_ipv4_l4(const uint8_t *key, uint32_t saddr, uint32_t daddr,
				 uint16_t sport, uint16_t dport);
/* ... and for an IPv6 one (addresses 16 bytes, ports network order). */
uint32_t dpsock_rss_hash_ipv6_l4(const uint8_t *key, const uint8_t *saddr, const uint8_t *daddr,
				 uint16_t sport, uint16_t dport);

/* Claim a free ephemeral port for worker w with no peer in view (the
 * software redirect of every backend steers it). Returns the port (host
 * order) or 0; release it with the backend's release_port. */
uint16_t dpsock_steer_claim_any(struct dpsock_worker *w);
/* Take exactly port p for worker w (a connection a takeover restores):
 * false when another worker owns it. */
bool dpsock_steer_claim_exact(struct dpsock_worker *w, uint16_t p);

/* Where does a received IPv4 or IPv6 frame belong? Returns the worker index that
 * must process it, or -1 for "here". Looks at fragments (one owner per
 * datagram, so that reassembly sees every piece) and at TCP/UDP segments
 * for a local port another worker opened. */
int dpsock_steer_owner(const struct dpsock_worker *w, const struct rte_mbuf *m);

/* sock.c */

/* Per-worker socket layer set-up and teardown (on the worker's lcore). */
int dpsock_sock_worker_init(struct dpsock_worker *w);
void dpsock_sock_worker_fini(struct dpsock_worker *w);

/* netif over mbufs (netif.c) */

/* netif_add init callback; netif->state is the struct dpsock_worker_port. */
err_t dpsock_netif_init(struct netif *netif);
/* An owned port's IPv6 (address6): the link-local address from the MAC
 * and addr6, both usable at once (no DAD, lwipopts.h). */
void dpsock_netif_ip6_setup(struct dpsock_worker_port *wp, const uint8_t addr6[16]);

/* Hand one received frame to lwIP without copying (the mbuf becomes a
 * PBUF_REF custom pbuf freed back to its pool by lwIP). Consumes m. */
void dpsock_netif_input(struct dpsock_worker_port *wp, struct rte_mbuf *m);

/* After netif_add: the port's segmentation (tcp.segmentation and the
 * port's TSO) and the checksums lwIP leaves to the netif. */
void dpsock_netif_offload_setup(struct dpsock_worker_port *wp);

/* gro.c: take a validated IPv4 or IPv6 frame bound for lwIP on this worker: held
 * to merge with the next segments of its flow, or handed to lwIP now
 * (consumes m). */
void dpsock_gro_input(struct dpsock_worker_port *wp, struct rte_mbuf *m);

/* Hand every held segment to lwIP (end of a burst). */
void dpsock_gro_flush(struct dpsock_worker *w);

/* A shared port's netifs send through this (netif->output): the next hop's
 * MAC from the net view, or the frame waits while the kernel resolves it. */
err_t dpsock_netif_output_shared(struct netif *netif, struct pbuf *p, const ip4_addr_t *ipaddr);
/* IPv6's (netif->output_ip6): the next hop from the view's IPv6 prefixes
 * and routes, its MAC from the kernel's neighbours. */
err_t dpsock_netif_output6_shared(struct netif *netif, struct pbuf *p, const ip6_addr_t *ipaddr);
/* Frames waiting for a neighbour: send what the view now resolves, ask
 * again or drop what waited too long. On the worker. */
void dpsock_netif_neigh_retry(struct dpsock_worker *w);
/* dpsock_netif_offload_setup for one more netif of the port (an address
 * of a shared port's netdev). */
void dpsock_netif_offload_setup_nif(struct dpsock_worker_port *wp, struct netif *nif);

/* On worker w: its netifs take the published net view if it moved
 * (worker.c calls this when d->nv_gen != w->nv_gen; netif_adopt.c). */
void dpsock_netif_adopt_view(struct dpsock_worker *w);

/* Send the worker's TX batch for one port; counts what the queue refused. */
void dpsock_netif_flush(struct dpsock_worker_port *wp);

/* Queue a frame the stack built itself, not through lwIP (IGMP): it gets
 * the interface's 802.1Q tag here (lwIP tags its own). Consumes m. */
void dpsock_netif_send_raw(struct dpsock_worker_port *wp, struct rte_mbuf *m);

/* Give lwIP back the frames the NIC returned on other threads. Returns
 * how many. */
unsigned int dpsock_netif_reclaim(struct dpsock_worker *w);

/* Memory source of the lwIP allocator: DPDK memory the NIC can read. */
void *dpsock_netif_mem_get(size_t size);
void dpsock_netif_mem_put(void *p);

/* Bytes of mbuf private area holding the pbuf_custom. */
unsigned int dpsock_netif_mbuf_priv_size(void);

/* A received frame dropped: counted in *counter, named in its capture
 * record when it is being captured, freed. */
void dpsock_frame_drop(struct rte_mbuf *m, uint64_t *counter);

/* The mbuf a received pbuf wraps (zero-copy receive), or NULL. */
struct rte_mbuf *dpsock_netif_pbuf_mbuf(struct pbuf *p);
/* The NIC's RX timestamp of the frame behind p (0: none). */
uint64_t dpsock_netif_hw_ns(const struct dpsock_worker *w, struct pbuf *p);

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

/* sockstat.c: the per-socket table, on the owning worker. */

/* Build the worker's free list of socket slots. Returns 0 or -ENOMEM. */
int dpsock_sockstat_worker_init(struct dpsock_worker *w);
void dpsock_sockstat_worker_fini(struct dpsock_worker *w);

/* A slot for a new socket (zeroed, in_use), or NULL when none is left
 * (counted in sock_unlisted). */
struct dpsock_sock_stats *dpsock_sockstat_open(struct dpsock_worker *w, uint8_t proto);

/* Refresh an entry from its pcb: addresses, state, queues, cwnd, RTT,
 * retransmissions (last_retrans: the caller's memory of the connection's
 * retransmission total). pcb NULL: the connection is gone (state CLOSED). */
struct tcp_pcb;
struct udp_pcb;
void dpsock_sockstat_tcp(struct dpsock_sock_stats *e, const struct tcp_pcb *pcb,
			 uint32_t *last_retrans);
void dpsock_sockstat_udp(struct dpsock_sock_stats *e, const struct udp_pcb *pcb);

/* The socket is gone: write its summary to DPSOCK_STATS_FILE, free the slot. */
void dpsock_sockstat_close(struct dpsock_worker *w, struct dpsock_sock_stats *e);

/* Zero the counters of every socket of the worker (its -z). */
void dpsock_sockstat_zero(struct dpsock_worker *w);

/* sock.c: refresh every socket entry of the worker (its 100 ms tick). */
void dpsock_sock_stats_refresh(struct dpsock_worker *w);
/* sock.c: a preload client's socket (daemon/serve.c): the process and
 * descriptor it serves (client: clients[] index, -1 unknown) and poll hits
 * and misses to add, for the socket table. On the socket's worker. */
void dpsock_sock_stats_owner(struct dpsock_sock *s, int32_t pid, int32_t fd, int32_t client,
			     uint32_t add_hits, uint32_t add_misses);

/* sock.c: the process and descriptor using a socket (the preload's
 * sockets: shown by dpsock-stat), and a datagram its owner could not take
 * (rx FIFO full: the socket's rx_drops). */
void dpsock_sock_set_owner(struct dpsock_sock *s, int pid, int fd);
void dpsock_sock_rx_dropped(struct dpsock_sock *s, size_t bytes);

/* Connections within the instance (docs/design.md decision 16). For an
 * established TCP connection whose other end is a pcb of the same lwIP
 * instance: that end's ops (its listener's while it is half open), and in
 * *peer its socket once accepted; NULL when the other end is elsewhere,
 * gone or closing. */
const struct dpsock_sock_ops *dpsock_tcp_loop_peer(const struct dpsock_sock *s,
						   struct dpsock_sock **peer);
/* Mark a connection whose bytes go FIFO to FIFO (dpsock-stat), and count
 * n bytes moved from one end to the other. */
void dpsock_sock_set_cut(struct dpsock_sock *s, bool on);
void dpsock_sock_cut_moved(struct dpsock_sock *from, struct dpsock_sock *to, size_t n);
/* A listener of the calling worker's lwIP takes SYNs to addr:port (port in
 * host order; its own address or any). */
bool dpsock_tcp_listening(uint32_t addr, uint16_t port);

/* Add v to one counter of a socket entry (NULL: not listed). */
#define DPSOCK_SOCKSTAT_ADD(e, field, v)                                        \
	do {                                                                    \
		struct dpsock_sock_stats *e_ = (e);                             \
		if (e_ != NULL) {                                               \
			dpsock_sockstat_write_begin(e_);                        \
			dpsock_stat_add(&e_->field, (v));                       \
			dpsock_sockstat_write_end(e_);                          \
		}                                                               \
	} while (0)

#endif /* DPSOCK_STACK_PRIV_H */
