/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock native API: run-to-completion applications on the worker lcores.
 *
 * An application is a DPDK EAL program that embeds the dpsock stack:
 *
 *   int main(int argc, char **argv)
 *   {
 *           int n = dpsock_init(argc, argv);     // EAL options, then "--",
 *           if (n < 0)                           // then -f dpsock.conf
 *                   return 1;
 *           ...parse the application's own options in argv + n...
 *           return dpsock_run(&my_app, my_arg);  // until SIGINT/SIGTERM
 *   }
 *
 * The stack runs one worker per worker lcore, each with its own lwIP
 * instance. Sockets belong to the worker that created them (or, for
 * accepted connections, to the worker whose queue got the SYN) and every call
 * on a socket must be made on that worker's lcore, from a callback or from
 * the app's per-worker hooks. Nothing here blocks and nothing takes a lock.
 *
 * Listening: create the listening socket on every worker (in worker_init);
 * RSS spreads new connections over the workers. Connecting: the stack picks
 * a local port whose packets come back to the calling worker (Toeplitz
 * hash, rte_flow rule or software steering, whichever the port supports).
 *
 * Receive is zero-copy: the readable callback gets a struct dpsock_rx whose
 * segments point into the received mbufs. By default the stack releases
 * them (and opens the receive window) when the callback returns; an app that
 * wants to keep the data calls dpsock_rx_hold() and releases it later.
 * Send copies once (dpsock_send) or takes an mbuf (dpsock_send_mbuf).
 *
 * Errors: functions return 0 (or a count) on success and -errno on failure;
 * functions that create an object return NULL and set errno.
 */
#ifndef DPSOCK_H
#define DPSOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_mbuf;
struct dpsock_worker;
struct dpsock_sock;
struct dpsock_rx;

/* Per-socket event callbacks. Any may be NULL. They run on the socket's
 * worker, inside its loop: keep them short, never block. Inside a callback
 * the app may call anything on the socket, dpsock_close and dpsock_abort
 * included; after those two, no callback runs for the socket again. */
/* An address as the socket API has it: sa.sa_family says which member. */
union dpsock_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;   /* AF_INET */
	struct sockaddr_in6 in6; /* AF_INET6 */
};

struct dpsock_sock_ops {
	/* A listening socket accepted child. The child inherits the listener's
	 * ops and user data; set others with dpsock_sock_set_ops/_set_user.
	 * Return 0 to keep it, or -errno to refuse it (it is reset). */
	int (*accepted)(struct dpsock_sock *listener, struct dpsock_sock *child);
	/* An active open finished: err is 0, -ECONNREFUSED, -ETIMEDOUT or
	 * -EHOSTUNREACH. After an error, closed(s, err) follows at once (unless
	 * the app closed the socket in this callback). */
	void (*connected)(struct dpsock_sock *s, int err);
	/* Data arrived (TCP). rx is valid during the callback only, unless
	 * held. An end of stream is reported by closed(s, 0), not here. */
	void (*readable)(struct dpsock_sock *s, struct dpsock_rx *rx);
	/* A datagram arrived (UDP), from the given source: sockaddr_in, or
	 * sockaddr_in6 for an IPv6 datagram (a socket of dpsock_udp_bind). */
	void (*datagram)(struct dpsock_sock *s, const union dpsock_sockaddr *from,
			 struct dpsock_rx *rx);
	/* Send space came back after dpsock_send returned -EAGAIN or a short
	 * count (or dpsock_send_mbuf -EAGAIN): it always follows those, once
	 * the peer acknowledges data; space is what dpsock_send_space returns. */
	void (*writable)(struct dpsock_sock *s, size_t space);
	/* The connection ended: 0 = the peer closed its side (EOF; the socket
	 * may still send until dpsock_close), -ECONNRESET, -ETIMEDOUT, or
	 * -ECONNABORTED (the stack stopped). After a non-zero reason the
	 * socket is gone when the callback returns: do not use it again. */
	void (*closed)(struct dpsock_sock *s, int reason);
};

/* Application hooks, all optional; each runs on every worker lcore. */
struct dpsock_app {
	const char *name;
	/* On the main thread, once ports and stats are set up and before any
	 * worker starts: make what the workers will share (they may read it
	 * from worker_init on). Return 0 or -errno (the start fails; no worker
	 * runs). When it succeeded, main_fini runs at the end, whatever fails
	 * later. */
	int (*main_init)(void *arg);
	/* After the worker's stack is up, before its first packet: create the
	 * listening/UDP sockets here. Return 0 or -errno (stops the start). */
	int (*worker_init)(struct dpsock_worker *w, void *arg);
	/* Once per loop iteration: return how much work it did (0 = idle, which
	 * lets the worker sleep). Load generators open connections here. */
	unsigned int (*worker_poll)(struct dpsock_worker *w, void *arg);
	/* Before the worker's stack is torn down (its sockets still exist).
	 * Sockets the app leaves open are then reset without further callbacks;
	 * held data (dpsock_rx_hold) must be released here at the latest. */
	void (*worker_fini)(struct dpsock_worker *w, void *arg);
	/* On the worker, when it is about to sleep: it has announced that it
	 * sleeps (anyone who hands it work after this wakes it) and asks once
	 * more whether work arrived meanwhile. Return true to stay awake. Must
	 * not block. */
	bool (*worker_pending)(struct dpsock_worker *w, void *arg);
	/* On the main thread, once every worker's worker_init succeeded: start
	 * control-plane threads. Return 0 or -errno (the start fails and the
	 * workers are stopped; main_stop and main_fini are not called). */
	int (*main_start)(void *arg);
	/* On the main thread, when the stop was asked for (SIGINT/SIGTERM,
	 * dpsock_stop), before the workers stop: stop what main_start started.
	 * The workers still run. */
	void (*main_stop)(void *arg);
	/* On the main thread, after every worker stopped (worker_fini ran on
	 * each): free what main_init and main_start shared with the workers.
	 * Runs when main_init (or, without one, main_start) succeeded. */
	void (*main_fini)(void *arg);
};

/*
 * Start EAL and read dpsock's own options, which follow the "--":
 *   -f/--config FILE, --help-config, --version.
 * Returns the index of the program's own options (they start at argv[ret];
 * argv[ret - 1] is set to the program name, for getopt on argv + ret - 1),
 * or -1 after printing why (bad config, no hugepages, EAL failure).
 * --help-config and --version print and exit(0). When the program's options
 * hold -h/--help, nothing is started: the program prints its help (with
 * dpsock_usage) and exits.
 */
int dpsock_init(int argc, char **argv);

/* Print dpsock's own options (for the program's --help). */
void dpsock_usage(FILE *f);

/* Undo a successful dpsock_init without running (bad program options). */
void dpsock_fini(void);

/*
 * Bring the ports and workers up and run until SIGINT/SIGTERM, then stop
 * cleanly (sockets reset, mbufs back, shared memory removed). app may be
 * NULL (dpsockd). Returns the process exit status: 0 clean, 1 start-up
 * failure, 3 mbufs leaked.
 */
int dpsock_run(const struct dpsock_app *app, void *arg);

/* Ask every worker to stop (any thread, also from a signal handler). */
void dpsock_stop(void);

/* The worker running the calling lcore, or NULL. */
struct dpsock_worker *dpsock_worker_self(void);
/* Index (0..n-1) of a worker; number of workers (valid after dpsock_init). */
unsigned int dpsock_worker_index(const struct dpsock_worker *w);
unsigned int dpsock_worker_count(void);
/* Address of port 0's interface, network byte order. */
uint32_t dpsock_local_addr(void);
/* Interfaces (ports) of the configuration, and each one's address. */
unsigned int dpsock_iface_count(void);
uint32_t dpsock_iface_addr(unsigned int iface);

/*
 * TCP. All return -EINVAL for a NULL or non-TCP socket and -EPERM when
 * called off the socket's worker lcore.
 */

/* Listen on port (host order) of every local address, IPv4 and IPv6 (as an
 * AF_INET6 socket with IPV6_V6ONLY off), on worker w. backlog
 * is accepted for the socket API's sake: connections are limited by
 * tcp.max_connections per worker (established plus half-open) and memory,
 * and a SYN beyond the limit is answered with RST.
 * Returns NULL with errno EADDRINUSE, ENOMEM (no pcb), EINVAL. */
struct dpsock_sock *dpsock_tcp_listen(struct dpsock_worker *w, uint16_t port, int backlog,
				      const struct dpsock_sock_ops *ops, void *user);

#define DPSOCK_LISTEN_HELD 0x1 /* the port is held in the kernel already (below) */
#define DPSOCK_LISTEN_IPV6 0x2 /* addr 0 only: IPv6's addresses too (dpsock_tcp_listen) */
/* The same, for IPv4 address addr (network order, 0: any; every address
 * of both families with DPSOCK_LISTEN_IPV6). On a port
 * shared with the kernel (an interface without address in dpsock.conf),
 * the address and port become dpsock's: the kernel sends their flows to
 * dpsock, and a kernel socket is bound to them so that no kernel program
 * takes them (EADDRINUSE when one has them already), unless flags has
 * DPSOCK_LISTEN_HELD (the caller holds the port in the kernel itself: the
 * preload's programs do, with their own kernel socket). */
struct dpsock_sock *dpsock_tcp_listen_addr(struct dpsock_worker *w, uint32_t addr, uint16_t port,
					   int backlog, unsigned int flags,
					   const struct dpsock_sock_ops *ops, void *user);
/* The same for IPv6 alone (IPV6_V6ONLY): addr NULL or "::" for every
 * IPv6 address of the worker's ports, or one of them (not IPv4-mapped).
 * flags: DPSOCK_LISTEN_HELD only (IPv6 never reaches a shared port). */
struct dpsock_sock *dpsock_tcp_listen6(struct dpsock_worker *w, const struct in6_addr *addr,
				       uint16_t port, int backlog, unsigned int flags,
				       const struct dpsock_sock_ops *ops, void *user);

/* Connect to addr (network order) : port (host order). The result comes
 * through ops->connected. Returns NULL with errno EADDRNOTAVAIL (no local
 * port steers to this worker), ENETUNREACH (no route), ENOMEM. */
struct dpsock_sock *dpsock_tcp_connect(struct dpsock_worker *w, uint32_t addr, uint16_t port,
				       const struct dpsock_sock_ops *ops, void *user);
/* The same to an IPv6 address (not IPv4-mapped: dpsock_tcp_connect), from
 * the address lwIP selects (address6 when the peer is in its /64 or
 * beyond, the link-local one for a link-local peer). The local port is any free one;
 * its segments reach w through the software redirect on every steering
 * backend. ENETUNREACH: no interface with IPv6 reaches it. */
struct dpsock_sock *dpsock_tcp_connect6(struct dpsock_worker *w, const struct in6_addr *addr,
					uint16_t port, const struct dpsock_sock_ops *ops,
					void *user);

#define DPSOCK_SEND_MORE 0x1 /* more data follows at once: hold the push (MSG_MORE) */

/* Copy up to len bytes into the send buffer. Returns the bytes taken (maybe
 * fewer than len: wait for writable), -EAGAIN when none fit, -ENOTCONN,
 * -EPIPE after the local side was shut down, -ECONNRESET. */
ssize_t dpsock_send(struct dpsock_sock *s, const void *buf, size_t len, int flags);

/* Send an mbuf's data (all of its segments). On success the stack owns m and
 * frees it once the peer acknowledged the data. Returns 0 or -EAGAIN (not
 * enough space for all of it; the app keeps m), -ENOTCONN, -EPIPE,
 * -ECONNRESET. */
int dpsock_send_mbuf(struct dpsock_sock *s, struct rte_mbuf *m);

/* Bytes dpsock_send would accept now. */
size_t dpsock_send_space(const struct dpsock_sock *s);

/* Shut down the sending side (FIN after the queued data). Returns 0,
 * -ENOTCONN. */
int dpsock_shutdown_write(struct dpsock_sock *s);

/*
 * Close: orderly (FIN after queued data; the stack finishes the close and
 * frees the socket). After this call the socket must not be used and no
 * callback runs for it. Returns 0; never fails.
 */
int dpsock_close(struct dpsock_sock *s);
/* Abortive close: RST now, queued data dropped. */
void dpsock_abort(struct dpsock_sock *s);

/* Socket options. Return 0 or -EINVAL. */
int dpsock_set_nodelay(struct dpsock_sock *s, bool on);
/* idle, interval in seconds; count probes. */
int dpsock_set_keepalive(struct dpsock_sock *s, bool on, unsigned int idle,
			 unsigned int interval, unsigned int count);
/* IP_TTL (1..255, -1 = the default 64) and IP_TOS of what the socket sends
 * (TCP or UDP; TCP keeps its ECN bits). Return 0, -EINVAL, -EPERM. */
int dpsock_sock_set_ttl(struct dpsock_sock *s, int ttl);
int dpsock_sock_set_tos(struct dpsock_sock *s, int tos);

/* Congestion control of a TCP socket (as TCP_CONGESTION): "cubic" (the
 * default unless tcp.congestion says otherwise) or "reno" ("newreno").
 * A listening socket passes it to the connections it accepts.
 * Returns 0, -ENOENT (unknown name) or -EINVAL (not a TCP socket). */
int dpsock_set_congestion(struct dpsock_sock *s, const char *name);

/*
 * A TCP connection's state as TCP_INFO reports it: the fields carry the
 * meaning and units of Linux's struct tcp_info (<linux/tcp.h>), without
 * the tcpi_ prefix: times in microseconds, windows and counts in segments
 * unless said otherwise.
 */
struct dpsock_tcp_info {
	uint8_t state;          /* Linux numbering: 1 ESTABLISHED, 2 SYN_SENT ... 10 LISTEN */
	uint8_t ca_state;       /* 0 open, 1 disorder, 3 recovery, 4 loss (after a timeout) */
	uint8_t retransmits;    /* timeouts in a row of the oldest segment */
	uint8_t backoff;        /* RTO doublings in force */
	uint8_t options;        /* 1 timestamps, 2 SACK, 4 window scaling */
	uint8_t snd_wscale, rcv_wscale;
	uint8_t delivery_rate_app_limited;
	uint32_t rto, snd_mss, rcv_mss, advmss;
	uint32_t unacked, sacked, lost, retrans; /* segments in flight, SACKed, lost, resent */
	uint32_t rtt, rttvar, min_rtt;
	uint32_t snd_ssthresh, snd_cwnd; /* segments; ssthresh 0x7fffffff: none yet */
	uint32_t reordering, total_retrans, dsack_dups, reord_seen;
	uint32_t segs_out, data_segs_out, delivered;
	uint32_t snd_wnd, notsent_bytes; /* bytes */
	uint64_t pacing_rate, delivery_rate; /* bytes/s; pacing ~0: none */
	uint64_t bytes_acked, bytes_sent, bytes_retrans;
	char congestion[16];    /* the congestion control's name */
};
/* Fill @p out for a TCP socket. Returns 0, -EINVAL (not TCP) or
 * -ENOTCONN (the connection is gone). */
int dpsock_tcp_info(const struct dpsock_sock *s, struct dpsock_tcp_info *out);

/*
 * UDP.
 */

/* Bind port (host order) on worker w, every local address of IPv4 and
 * IPv6 (as an AF_INET6 socket with IPV6_V6ONLY off); datagrams to it
 * arriving on this worker's queues reach ops->datagram. Create it on every worker to
 * receive everything. Port 0 is an ephemeral port of w's lwIP instance
 * alone: with several workers, datagrams to it that reach another worker's
 * queue are lost (a client socket wants DPSOCK_UDP_OWNED instead).
 * Returns NULL with errno EADDRINUSE, ENOMEM. */
struct dpsock_sock *dpsock_udp_bind(struct dpsock_worker *w, uint16_t port,
				    const struct dpsock_sock_ops *ops, void *user);

#define DPSOCK_UDP_REUSEADDR 0x1 /* SO_REUSEADDR: share the port */
#define DPSOCK_UDP_REUSEPORT 0x2 /* SO_REUSEPORT: share it; unicast hashed over the group */
#define DPSOCK_UDP_OWNED 0x4     /* port 0: an ephemeral port owned by w (see below) */
#define DPSOCK_UDP_HELD 0x8      /* the port is held in the kernel already (as DPSOCK_LISTEN_HELD) */
#define DPSOCK_UDP_IPV6 0x10     /* addr 0 only: IPv6's addresses too (dpsock_udp_bind) */
/* The same, bound to IPv4 addr (network order: 0 = any, an interface's address,
 * or a multicast group: then only that group's datagrams arrive). Sockets
 * with either REUSE flag share a port (multicast and broadcast datagrams
 * reach every one of them; a unicast one reaches one, hashed over the
 * REUSEPORT sockets, else the last bound).
 * DPSOCK_UDP_OWNED, with port 0, is the UDP client's bind: the port comes
 * from the ephemeral range shared with TCP's active opens (tcp.ephemeral_*)
 * and belongs to w until the socket is closed, so that a datagram to it
 * reaches this socket whichever worker's queue receives it (another worker
 * hands it over, as it does a connection's segments). Not for datagrams
 * in IP fragments (above the MTU): those are reassembled on a worker
 * chosen from their addresses and IP id, and lost when that is another.
 * Returns NULL with errno EADDRINUSE, ENOMEM, EADDRNOTAVAIL (OWNED: no
 * free port), EINVAL (unknown flag, OWNED with a port or a REUSE flag). */
struct dpsock_sock *dpsock_udp_bind_addr(struct dpsock_worker *w, uint32_t addr, uint16_t port,
					 unsigned int flags, const struct dpsock_sock_ops *ops,
					 void *user);

/* The same for IPv6 alone (IPV6_V6ONLY): addr NULL or "::" for every
 * IPv6 address of the worker's ports, or one of them. flags as above but
 * DPSOCK_UDP_IPV6 (no IPv6 groups: no MLD host yet). */
struct dpsock_sock *dpsock_udp_bind6(struct dpsock_worker *w, const struct in6_addr *addr,
				     uint16_t port, unsigned int flags,
				     const struct dpsock_sock_ops *ops, void *user);

/* Send one datagram to `to`, sockaddr_in or (from a socket of both
 * families) sockaddr_in6 (len up to 65507, 65527 over IPv6; larger than
 * the MTU is fragmented). Returns len, -EMSGSIZE, -ENOMEM (no buffer),
 * -EHOSTUNREACH, -EINVAL (another family, or IPv6 from an IPv4 socket). */
ssize_t dpsock_udp_sendto(struct dpsock_sock *s, const void *buf, size_t len,
			  const union dpsock_sockaddr *to);

/*
 * UDP multicast, as the IPv4 socket options (and their errno values). A
 * socket's memberships are counted per interface and group over every
 * socket of the stack; the interface joins (IGMPv3 report, MAC filter) with
 * the first and leaves with the last. A datagram for a group reaches every
 * socket bound to its port (and to the group or the any address) whose own
 * filter lets it through: a membership of the group on the interface with
 * the source included (or not excluded), or, for a socket with no such
 * membership, IP_MULTICAST_ALL (on by default) when the interface joined.
 * Create the socket and its memberships on every worker: each receives
 * what its worker's queues get. iface: the interface's index in the
 * configuration. group, source: network order.
 */
#define DPSOCK_MCAST_JOIN 1         /* IP_ADD_MEMBERSHIP: any source */
#define DPSOCK_MCAST_LEAVE 2        /* IP_DROP_MEMBERSHIP */
#define DPSOCK_MCAST_JOIN_SOURCE 3  /* IP_ADD_SOURCE_MEMBERSHIP (joins INCLUDE first) */
#define DPSOCK_MCAST_LEAVE_SOURCE 4 /* IP_DROP_SOURCE_MEMBERSHIP */
#define DPSOCK_MCAST_BLOCK 5        /* IP_BLOCK_SOURCE (of an any-source join) */
#define DPSOCK_MCAST_UNBLOCK 6      /* IP_UNBLOCK_SOURCE */
/* Returns 0, -EINVAL (not UDP, not a group, no prior join, other mode),
 * -EADDRINUSE (joined), -EADDRNOTAVAIL (no such membership or source),
 * -ENOBUFS (over 20 memberships or 10 sources), -ENODEV (no such
 * interface), -ENOMEM, -EPERM (off the socket's worker). */
int dpsock_udp_mcast(struct dpsock_sock *s, int op, uint32_t group, unsigned int iface,
		     uint32_t source);
/* IP_MULTICAST_ALL (default on), IP_MULTICAST_LOOP (default on: this
 * stack's subscribers get what the socket sends to a group),
 * IP_MULTICAST_TTL (0..255, default 1), IP_MULTICAST_IF (iface, or -1: the
 * default interface). Return 0, -EINVAL, -ENODEV, -EPERM. */
int dpsock_udp_set_mcast_all(struct dpsock_sock *s, bool on);
int dpsock_udp_set_mcast_loop(struct dpsock_sock *s, bool on);
int dpsock_udp_set_mcast_ttl(struct dpsock_sock *s, int ttl);
int dpsock_udp_set_mcast_if(struct dpsock_sock *s, int iface);

/*
 * UDP multicast over IPv6, as the IPv6 socket options (IPV6_JOIN_GROUP,
 * MCAST_JOIN_SOURCE_GROUP ... with AF_INET6 groups) with the same rules and
 * errno values: the socket (bound to IPv6, or to both families) joins an
 * IPv6 group (ff00::/8) on an interface with IPv6 (address6; -ENODEV
 * otherwise), and the interface tells the link with MLDv2 reports. An
 * IPv4-mapped group (::ffff:a.b.c.d) is an IPv4 membership, as
 * dpsock_udp_mcast. source: NULL for the operations without one.
 */
int dpsock_udp_mcast6(struct dpsock_sock *s, int op, const struct in6_addr *group,
		      unsigned int iface, const struct in6_addr *source);
/* IPV6_MULTICAST_ALL, IPV6_MULTICAST_LOOP (default on),
 * IPV6_MULTICAST_HOPS (0..255, -1: the default, 1) and IPV6_MULTICAST_IF
 * (iface, or -1: the route's), of the socket's IPv6 datagrams alone, as on
 * Linux. Return 0, -EINVAL, -ENODEV, -EPERM. */
int dpsock_udp_set_mcast6_all(struct dpsock_sock *s, bool on);
int dpsock_udp_set_mcast6_loop(struct dpsock_sock *s, bool on);
int dpsock_udp_set_mcast6_hops(struct dpsock_sock *s, int hops);
int dpsock_udp_set_mcast6_if(struct dpsock_sock *s, int iface);

/*
 * Received data (the readable and datagram callbacks).
 */

/* Total bytes. */
size_t dpsock_rx_len(const struct dpsock_rx *rx);
/* What the stack knew of a datagram (IP_PKTINFO, SO_TIMESTAMP*): its
 * destination (network order; a group for multicast), the interface it
 * came in on (or was looped back to), when the worker took its frame from
 * the queue (CLOCK_REALTIME, ns) and the NIC's raw timestamp where the port
 * offers RX timestamps (0 otherwise). Zeros for TCP data. */
struct dpsock_rx_info {
	uint32_t dst;
	uint8_t dst6[16];         /* an IPv6 datagram's destination (dst is then 0) */
	unsigned int iface;
	uint64_t rx_ns;
	uint64_t hw_ns;
};
void dpsock_rx_info(const struct dpsock_rx *rx, struct dpsock_rx_info *info);
/* Fill up to n iovecs with the segments (zero-copy, pointing into mbufs);
 * returns the number of segments in all (which may exceed n). */
unsigned int dpsock_rx_iov(const struct dpsock_rx *rx, struct iovec *iov, unsigned int n);
/* Copy up to len bytes from offset off; returns the bytes copied. */
size_t dpsock_rx_copy(const struct dpsock_rx *rx, void *buf, size_t len, size_t off);
/* Keep the data past the callback; the receive window stays closed by its
 * size until dpsock_rx_release. The handle stays readable (len, iov, copy)
 * after the callback, and may be released after its socket was closed,
 * aborted or reset. Returns the handle, or NULL when out of memory (the data
 * is then released after the callback as usual). */
struct dpsock_rx *dpsock_rx_hold(struct dpsock_rx *rx);
/* Release held data (opens the window by its size if the socket lives). */
void dpsock_rx_release(struct dpsock_rx *rx);

/*
 * Socket accessors.
 */
void dpsock_sock_set_user(struct dpsock_sock *s, void *user);
void *dpsock_sock_user(const struct dpsock_sock *s);
void dpsock_sock_set_ops(struct dpsock_sock *s, const struct dpsock_sock_ops *ops);
struct dpsock_worker *dpsock_sock_worker(const struct dpsock_sock *s);
/* Local and remote address/port (network byte order): sockaddr_in for an
 * IPv4 socket or connection, sockaddr_in6 for an IPv6 one. A listener of
 * both families (dpsock_tcp_listen) reports IPv4's any address. */
void dpsock_sock_local(const struct dpsock_sock *s, union dpsock_sockaddr *sa);
void dpsock_sock_peer(const struct dpsock_sock *s, union dpsock_sockaddr *sa);

#ifdef __cplusplus
}
#endif

#endif /* DPSOCK_H */
