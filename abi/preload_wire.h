/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * preload_wire.h — what libdpsock_preload.so (the shim) and dpsockd say to
 * each other: the control-socket messages and the layout of the shared
 * memory they both map. Wire format only: no code, no pointers. Included by
 * the daemon (daemon/clients.c, daemon/serve.c) and the shim (shim/); the shim links
 * neither DPDK nor lwIP.
 *
 * docs/preload.md tells the whole story; the short version:
 *
 *  - A process attaches over a unix SOCK_SEQPACKET socket at
 *    <runtime_dir>/<name>.sock (SO_PEERCRED checked against
 *    preload.allowed_uids). It gets, by SCM_RIGHTS, its GROUP's segment (a
 *    sealed memfd the daemon created), the daemon's wake page (read-only:
 *    which workers sleep) and each worker's eventfd (to wake it).
 *    A group is a process and the children it forks: they share sockets,
 *    so they share the segment. A forked child attaches with the group's
 *    token (read from the segment it inherited) and gets its own channels.
 *  - Per app thread and worker, a CHANNEL: a command ring (thread -> worker)
 *    and a reply ring (worker -> thread). Per WAITER (a thread's blocking
 *    calls, or one epoll instance) and worker, a wait ring of slot numbers
 *    the worker changed. A waiter has an eventfd (registered by SCM_RIGHTS)
 *    the worker writes when the waiter is armed (asleep or about to be).
 *  - Per socket and worker, a SLOT: state the worker publishes, two byte
 *    FIFOs (rx: worker -> app, tx: app -> worker), and fields the shim owns.
 *    A connected TCP socket has one slot (on the worker that owns the
 *    connection); a listening or bound UDP socket has one slot on every
 *    worker (RSS spreads its traffic over all of them).
 *
 * Trust: the daemon trusts nothing the client can write. It reads the
 * geometry from its own private copy, reads every shim-owned field once and
 * validates it, and a client that corrupts a ring (dpsock_spsc_*_corrupt)
 * is disconnected (its group's sockets reset) without touching any other
 * group. The shim trusts the daemon.
 *
 * Byte order: addresses and ports are network order everywhere below,
 * as in struct sockaddr_in.
 */
#ifndef DPSOCK_ABI_PRELOAD_WIRE_H
#define DPSOCK_ABI_PRELOAD_WIRE_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* 2: the wake page and the waiter header say which CPU a worker and a
 *    sleeping thread run on (co-located waits neither spin nor delay).
 * 3: TCP_INFO (DPSOCK_PL_OP_TCP_INFO, the slot's tcpi block: slot header
 *    448 bytes), TCP_CONGESTION through DPSOCK_PL_OP_SETOPT, the segment's
 *    tcp_congestion.
 * 4: offload rules carry a program pattern, an application id pattern and
 *    a second (local) endpoint (libvma.conf's forms); a slot's line 2 has
 *    the opening process and descriptor and its poll counters (dpsock-stat);
 *    rx datagram flags 0xf000 are the shim's (DPSOCK_PL_DGRAM_SHIM_*).
 * 5: UDP multicast and options: OP_MCAST, UDP_BIND's reuse flags and owner,
 *    SETOPT of IP_TTL / IP_TOS / IP_MULTICAST_* / SO_RCVBUF, datagram
 *    headers with destination, interface and receive time, interfaces'
 *    kernel ifindex.
 * 6: static routes in the segment header (routes[]: the offload decision
 *    and the local address of a connecting socket follow them).
 * 7: a waiter sleeps on a futex in its header when it waits for offloaded
 *    sockets alone (armed DPSOCK_PL_ARMED_FUTEX).
 * 8: the served addresses and routes move from the segment header to the
 *    wake page (struct dpsock_pl_netview, under a sequence lock): a port
 *    shared with the kernel follows its addresses; an entry per address.
 * 9: IPv6: LISTEN, CONNECT and UDP_BIND take an IPv6 address
 *    (DPSOCK_PL_CMD_F_IP6, DPSOCK_PL_CMD_F_DUAL), a slot's IPv6 addresses
 *    (line 7), the served IPv6 addresses in the net view (ifaces6), IPv6
 *    datagram records (DPSOCK_PL_DGRAM_IP6).
 * 10: IPv6 multicast: DPSOCK_PL_OP_MCAST carries 16-byte groups and sources
 *    (the command's mc layout); IPV6_MULTICAST_* in SETOPT.
 * 11: thousands of sockets: a slot's FIFO headers sit with the slot, their
 *    data in an area of its own (off_data, data_stride) that the daemon
 *    gives back page by page; the FIFOs have a base (spsc_ring.h version
 *    2); the FIFO locks are in the slot's line 1 (the daemon takes tx_lock
 *    to reclaim); slots_hi[] bounds the slots a walk has to look at; wait
 *    rings hold a slot number for every slot of their worker. */
#define DPSOCK_PL_VERSION 11

/* ======================================================================== */
/* Control socket (SOCK_SEQPACKET, one message = one struct)                */
/* ======================================================================== */

/* Path: <runtime_dir>/<name>.sock; the shim finds runtime_dir and name in
 * DPSOCK_RUNTIME_DIR (default /run/dpsock) and DPSOCK_NAME (default dpsock). */
#define DPSOCK_PL_SOCK_SUFFIX ".sock"

enum dpsock_pl_msg_type {
	DPSOCK_PL_HELLO = 1,      /* c->d: attach (new group, or join with token) */
	DPSOCK_PL_WELCOME,        /* d->c: + fds: segment, wake page, worker eventfds */
	DPSOCK_PL_WAITER_ADD,     /* c->d: + fd: the waiter's eventfd */
	DPSOCK_PL_WAITER_DEL,     /* c->d */
	DPSOCK_PL_CHANNEL_ADD,    /* c->d: a channel for a thread (replies wake waiter) */
	DPSOCK_PL_CHANNEL_DEL,    /* c->d */
	DPSOCK_PL_REPLY,          /* d->c: result of ADD/DEL */
	/* c->d: this connection's process exec()ed (the new image inherited
	 * the connection, docs/preload.md "exec"): its channels and waiters
	 * are gone (freed as on EOF), the process stays in its group; text =
	 * the new program name. Answered by WELCOME exactly as HELLO (the
	 * new image maps everything again). */
	DPSOCK_PL_EXEC,
};

#define DPSOCK_PL_MAGIC 0x4b535044u /* "DPSK" */

struct dpsock_pl_msg {
	uint32_t magic;           /* DPSOCK_PL_MAGIC */
	uint16_t version;         /* DPSOCK_PL_VERSION */
	uint16_t type;            /* enum dpsock_pl_msg_type */
	int32_t status;           /* replies: 0 or -errno */
	uint32_t id;              /* waiter / channel id (ADD reply, DEL) */
	uint32_t arg;             /* CHANNEL_ADD: waiter id for its replies */
	uint32_t n_fds;           /* fds carried by SCM_RIGHTS with this message */
	uint64_t token;           /* HELLO: 0 = new group, else the group's token */
	uint64_t seg_size;        /* WELCOME: bytes of the segment (fd 0) */
	uint64_t wake_size;       /* WELCOME: bytes of the wake page (fd 1) */
	uint32_t n_workers;       /* WELCOME: worker eventfds follow (fds 2..) */
	uint32_t pad;
	char text[64];            /* HELLO: program name; errors: a short reason */
	uint64_t pad2;            /* to 128 bytes */
};
static_assert(sizeof(struct dpsock_pl_msg) == 128, "control message size");

/* At most this many fds ride on one message (2 + workers). */
#define DPSOCK_PL_MAX_FDS (2 + 64)

/* ======================================================================== */
/* Wake page: read-only to clients                                          */
/* ======================================================================== */

/* The wake page: n_workers lines of struct dpsock_pl_wake from offset 0
 * (64 at most), then, at DPSOCK_PL_WAKE_NETVIEW, the addresses and routes
 * dpsockd serves (struct dpsock_pl_netview). */
#define DPSOCK_PL_WAKE_NETVIEW 4096u

/* One cache line per worker. A client that posted a command reads
 * `sleeping` after a seq_cst fence and, if set, writes the worker's eventfd
 * (the handshake of dpsock_worker_idle / dpsock_worker_wake). `cpu` is the
 * CPU the worker runs on, plus one (0: unknown): a thread on that CPU does
 * not spin while it waits, since its spinning would take the CPU from the
 * worker that is to wake it. */
struct dpsock_pl_wake {
	uint32_t sleeping;
	uint32_t cpu;
	uint32_t pad[14];
};
static_assert(sizeof(struct dpsock_pl_wake) == 64, "wake line");

/* ======================================================================== */
/* Group segment                                                            */
/* ======================================================================== */

#define DPSOCK_PL_SEG_MAGIC 0x47455350u /* "PSEG" */

enum dpsock_pl_daemon_state {
	DPSOCK_PL_RUNNING = 1,
	DPSOCK_PL_STOPPED = 2,    /* dpsockd stopped: every offloaded call fails */
};

/* Offload rules (VMA's libvma.conf grammar, compiled by abi/offload_rules.c
 * from dpsock.conf's offload.rules and offload.rules_file, and by the shim
 * from DPSOCK_RULES_FILE and add_conf_rule; applied by the shim at
 * bind/listen/connect/first send). The first rule whose program,
 * application id, role, addresses and ports match decides; no match =
 * offload when the address is served by the daemon. */
enum dpsock_pl_role {
	DPSOCK_PL_TCP_SERVER = 1, /* listen() */
	DPSOCK_PL_TCP_CLIENT,     /* connect() on TCP */
	DPSOCK_PL_UDP_RECEIVER,   /* bind() on UDP */
	DPSOCK_PL_UDP_SENDER,     /* first sendto() on an unbound UDP socket */
	DPSOCK_PL_UDP_CONNECT,    /* connect() on UDP */
};

struct dpsock_pl_rule {
	char prog[32];            /* program name pattern (shell wildcards); "" = any */
	char app_id[32];          /* DPSOCK_APPLICATION_ID pattern; "" = any */
	uint8_t offload;          /* 1: use offload (or vma), 0: use os */
	uint8_t role;             /* enum dpsock_pl_role */
	uint8_t prefix_len;       /* 0..32 (IPv6: 0..128); 0 = any address */
	uint8_t lprefix_len;      /* second endpoint's; 0 = any */
	/* the role's endpoint: local for tcp_server/udp_receiver, remote for
	 * the others */
	uint32_t addr;            /* network order */
	uint16_t port_lo, port_hi; /* host order; 0..65535 = any */
	/* tcp_client/udp_connect's second endpoint: the local one */
	uint32_t laddr;           /* network order */
	uint16_t lport_lo, lport_hi;
	/* an endpoint of IPv6 ("[fd00::/64]:80"): its address is addr6 /
	 * laddr6 (then only IPv6 sockets match it, with any prefix length) */
	uint8_t ip6, lip6;
	uint8_t pad[10];
	uint8_t addr6[16];
	uint8_t laddr6[16];
};
static_assert(sizeof(struct dpsock_pl_rule) == 128, "rule size");

#define DPSOCK_PL_MAX_RULES 64
#define DPSOCK_PL_MAX_WORKERS 64
#define DPSOCK_PL_MAX_ROUTES 64

#define DPSOCK_PL_MAX_ADDRS 16

/* An address the daemon serves: a port's own (the configured one of a port
 * it owns, each of the kernel's on a port it shares with the kernel). */
struct dpsock_pl_iface {
	uint32_t addr;            /* network order */
	uint32_t gateway;         /* network order: its port's default gateway; 0 = none */
	uint8_t prefix_len;
	uint8_t port;             /* dpsockd's interface (port) index: OP_MCAST's interface */
	uint8_t pad[2];
	uint32_t mtu;
	uint32_t ifindex;         /* the port's kernel netdev (IP_PKTINFO, MCAST_JOIN_GROUP,
				   * ip_mreqn), 0: none (a NIC bound to vfio) */
};

/* An IPv6 address the daemon serves: an owned port's address6, a shared
 * port's kernel addresses. The link-local ones are not offered to the
 * preload. */
struct dpsock_pl_iface6 {
	uint8_t addr[16];
	uint8_t prefix_len;
	uint8_t port;             /* dpsockd's interface (port) index */
	uint8_t flags;            /* DPSOCK_PL_IF6_* (0 from daemons before them) */
	uint8_t pad;
};
/* its port has an IPv6 default route (gateway6, or the kernel's on a shared
 * port): a client's destination beyond every prefix leaves by it */
#define DPSOCK_PL_IF6_DEFAULT 1

/* A route of the daemon's (its static routes = [ ... ], the kernel's on a
 * shared port): what no address's subnet holds and dest/prefix_len does
 * leaves by port `iface`. */
struct dpsock_pl_route {
	uint32_t dest;            /* network order */
	uint32_t gateway;         /* network order */
	uint8_t prefix_len;
	uint8_t iface;            /* dpsockd's interface (port) index */
	uint8_t pad[2];
};

/* What the daemon serves, for the shim's offload decision (in the wake
 * page, at DPSOCK_PL_WAKE_NETVIEW): it changes while the daemon runs (a
 * shared port follows the kernel's addresses and routes), so it is read
 * under a sequence lock: seq is odd while the daemon writes; a reader
 * copies, and copies again when seq moved or was odd. */
struct dpsock_pl_netview {
	uint32_t seq;
	uint32_t n_ifaces;
	struct dpsock_pl_iface ifaces[DPSOCK_PL_MAX_ADDRS];
	uint32_t n_routes;
	struct dpsock_pl_route routes[DPSOCK_PL_MAX_ROUTES];
	uint32_t n_ifaces6;
	struct dpsock_pl_iface6 ifaces6[DPSOCK_PL_MAX_ADDRS];
};
/*
 * The segment, as offsets from its start (each process maps it at its own
 * address). Written by the daemon before WELCOME and read-only after,
 * except `state`. The daemon never reads it back.
 *
 *   0                header (this struct, 16 KiB reserved)
 *   off_channels     max_channels x n_workers channel blocks, chan_stride each:
 *                      cmd ring region (DPSOCK_PL_CMD_SIZE x cmd_count)
 *                      reply ring region (DPSOCK_PL_REPLY_SIZE x reply_count)
 *                    block of (channel c, worker k) at
 *                      off_channels + (c * n_workers + k) * chan_stride
 *   off_waiters      max_waiters waiter blocks, waiter_stride each:
 *                      struct dpsock_pl_waiter, then n_workers wait rings
 *                      (8-byte elements, the slot number in the low 32
 *                      bits: spsc_ring.h's smallest; wait_count each, wait_ring_size
 *                      bytes each), ring k at DPSOCK_PL_WAITER_HDR + k *
 *                      wait_ring_size. wait_count is at least twice
 *                      slots_per_worker: a slot is in a waiter's ring at
 *                      most once per watch entry (queued[]), so a ring
 *                      that overflows (overflow, the fallback) takes a
 *                      waiter that re-watched its slots many times over
 *   off_slots        n_workers x slots_per_worker slots, slot_stride each:
 *                      struct dpsock_pl_slot (DPSOCK_PL_SLOT_HDR bytes),
 *                      the rx FIFO's header (at rx_fifo_off, 384 bytes),
 *                      the tx FIFO's header (at tx_fifo_off, 384 bytes)
 *                    slot number n = k * slots_per_worker + i belongs to
 *                    worker k = n / slots_per_worker.
 *   off_data         the FIFOs' data, data_stride bytes per slot number:
 *                      rx data (rx_fifo_size bytes at rx_data_off),
 *                      tx data (tx_fifo_size bytes at tx_data_off)
 *
 * The rings are abi/spsc_ring.h regions (their own 384-byte header
 * included in the sizes above); the FIFOs are spsc_ring.h FIFOs whose data
 * lives apart from their header (dpsock_fifo_*_attach_at).
 *
 * Memory. The segment is a reservation: a memfd of seg_size bytes of which
 * only the pages a side touches exist. Slots are handed out lowest number
 * first and slots_hi[k] says how many of worker k's were ever used, so
 * nothing beyond it is read. A FIFO's data pages are touched as bytes go
 * through it (from data offset 0 again whenever it drained: the base,
 * spsc_ring.h), and the daemon gives them back (FALLOC_FL_PUNCH_HOLE) once
 * the FIFO has been empty for a while: an idle socket holds its slot's
 * lines only. A side that reads data the other did not write sees zeros.
 */
struct dpsock_pl_seg {
	uint32_t magic;           /* DPSOCK_PL_SEG_MAGIC */
	uint32_t version;         /* DPSOCK_PL_VERSION */
	uint64_t seg_size;
	uint64_t token;           /* joins a forked child to the group (random) */
	uint32_t state;           /* enum dpsock_pl_daemon_state; daemon-written */
	uint32_t group;           /* group number (dpsock-stat clients view) */

	uint32_t n_workers;
	uint32_t max_channels;
	uint32_t max_waiters;
	uint32_t slots_per_worker;
	uint32_t cmd_count;       /* elements per command ring */
	uint32_t reply_count;     /* elements per reply ring */
	uint32_t wait_count;      /* elements per wait ring */
	uint32_t rx_fifo_size;    /* data bytes of each rx FIFO (power of two) */
	uint32_t tx_fifo_size;

	uint64_t off_channels;
	uint64_t chan_stride;
	uint64_t cmd_ring_size;   /* bytes of a command ring region */
	uint64_t reply_ring_size; /* bytes of a reply ring region (follows it) */
	uint64_t off_waiters;
	uint64_t waiter_stride;
	uint64_t wait_ring_size;
	uint64_t off_slots;
	uint64_t slot_stride;
	uint64_t rx_fifo_off;     /* the rx FIFO's header, within a slot */
	uint64_t tx_fifo_off;     /* the tx FIFO's header, within a slot */
	uint64_t off_data;        /* the FIFOs' data */
	uint64_t data_stride;     /* bytes of data per slot number */
	uint64_t rx_data_off;     /* within a slot's data */
	uint64_t tx_data_off;

	/* the offload rules (the addresses and routes are in the wake page:
	 * they change) */
	uint32_t n_rules;
	struct dpsock_pl_rule rules[DPSOCK_PL_MAX_RULES];
	char daemon_name[32];
	/* congestion control of connections that set none (tcp.congestion):
	 * getsockopt(TCP_CONGESTION) before a connection exists */
	char tcp_congestion[16];
	/* worker-written (relaxed; only grows): slots of worker k ever handed
	 * out; a walk over a worker's slots (exec) stops there */
	uint32_t slots_hi[DPSOCK_PL_MAX_WORKERS];
};

#define DPSOCK_PL_SEG_HDR 16384u
static_assert(sizeof(struct dpsock_pl_seg) <= DPSOCK_PL_SEG_HDR, "segment header");

/* ======================================================================== */
/* Commands (thread -> worker) and replies (worker -> thread)               */
/* ======================================================================== */

enum dpsock_pl_op {
	/* Open a listening socket on this worker: addr (INADDR_ANY, a served
	 * address, or 127.0.0.1: DPSOCK_LOOPBACK), port (network order,
	 * non-zero), arg0 = backlog. With DPSOCK_PL_CMD_F_IP6, an IPv6
	 * listener instead (IPV6_V6ONLY): addr6 (the unspecified address or
	 * a served one); with DPSOCK_PL_CMD_F_DUAL (addr INADDR_ANY), one of
	 * both families (an AF_INET6 socket on "::").
	 * Reply: result 0 / -EADDRINUSE / -ENOMEM / -ENOBUFS (no slot),
	 * slot + gen of the new listener slot. Accepted connections arrive as
	 * struct dpsock_pl_accept records in that slot's rx FIFO. */
	DPSOCK_PL_OP_LISTEN = 1,
	/* Bind a UDP socket on this worker: addr (INADDR_ANY, a served
	 * address or a multicast group), port (0 = the worker picks an
	 * ephemeral port; bind it on the other workers with that port);
	 * DPSOCK_PL_CMD_F_IP6: addr6 instead (IPv6 alone: "::" or a served
	 * one), DPSOCK_PL_CMD_F_DUAL: INADDR_ANY of both families,
	 * arg1 = DPSOCK_PL_BIND_* flags, arg2 = pid and arg3 = fd of the
	 * process binding it (dpsock-stat shows them).
	 * Reply: result, slot, gen, port (network order). */
	DPSOCK_PL_OP_UDP_BIND,
	/* Connect TCP from this worker to addr:port. arg0 = local port wanted
	 * (network order, 0 = any). Reply at once: result 0 (in progress) /
	 * -EADDRNOTAVAIL / -ENETUNREACH / -ENOMEM / -ENOBUFS (no slot), slot, gen,
	 * addr:port = the local address chosen. The outcome is published in
	 * the slot (state ESTABLISHED, or CLOSED with err) and its watchers
	 * notified. To 127.0.0.1 (DPSOCK_LOOPBACK): from 127.0.0.1, and
	 * -ECONNREFUSED at once when no listener of this worker takes the
	 * port (the shim then connects in the kernel). With
	 * DPSOCK_PL_CMD_F_IP6: to addr6 (not IPv4-mapped); the local address
	 * is then in the slot (line 7), not in the reply. */
	DPSOCK_PL_OP_CONNECT,
	/* slot's tx FIFO has data and tx_doorbell was 1: take it. No reply. */
	DPSOCK_PL_OP_TX_KICK,
	/* slot's rx FIFO has room again and rx_doorbell was 1. No reply. */
	DPSOCK_PL_OP_RX_KICK,
	/* Shut down: arg0 = SHUT_RD/SHUT_WR/SHUT_RDWR. A pending tx FIFO is
	 * sent first. Reply: result 0 / -ENOTCONN. */
	DPSOCK_PL_OP_SHUTDOWN,
	/* The app closed its last reference: arg0 = 1 for an abortive close
	 * (SO_LINGER 0: RST now). Queued tx data is sent (orderly close),
	 * then the worker frees the slot; the shim must not touch it again.
	 * No reply. */
	DPSOCK_PL_OP_CLOSE,
	/* Socket option on the worker's socket: arg0 = level, arg1 = name,
	 * arg2.. = value (TCP_NODELAY; SO_KEEPALIVE; TCP_KEEPIDLE/INTVL/CNT;
	 * IP_TOS and IP_TTL on any socket; TCP_CONGESTION (arg2..arg5 hold
	 * the name, 16 bytes, NUL padded); on UDP: IP_MULTICAST_TTL,
	 * IP_MULTICAST_LOOP, IP_MULTICAST_ALL, IP_MULTICAST_IF (arg2 = the
	 * interface's index in the segment, -1 = the default one) and SO_RCVBUF
	 * (arg2 = bytes the rx FIFO may hold: the shim passes what the kernel
	 * socket reports, at most the FIFO's size). Values as the kernel
	 * accepted them. Reply: result 0 / -ENOPROTOOPT / -EINVAL / -ENOENT (no
	 * such congestion control). */
	DPSOCK_PL_OP_SETOPT,
	/* TCP_INFO of a TCP slot: the worker writes the slot's tcpi block,
	 * then replies 0 (the reply's release publishes the block), or
	 * -ENOTCONN (no connection). */
	DPSOCK_PL_OP_TCP_INFO,
	/* Multicast membership of a UDP socket (abi/mcast_filter.h), in the
	 * command's mc layout: op = enum dpsock_mc_op, iface = interface
	 * index (segment's ifaces[]), group and source (for the source
	 * operations) as struct dpsock_mc_addr: IPv6, or IPv4 mapped. Sent to every slot of the socket, worker 0's first: each worker's
	 * socket keeps the same memberships. Reply: result 0 or the socket
	 * API's -errno (-EINVAL, -EADDRINUSE, -EADDRNOTAVAIL, -ENOBUFS,
	 * -ENODEV). */
	DPSOCK_PL_OP_MCAST,
	DPSOCK_PL_OP_MAX
};

/* DPSOCK_PL_OP_UDP_BIND arg1 */
#define DPSOCK_PL_BIND_REUSEADDR 0x1u
#define DPSOCK_PL_BIND_REUSEPORT 0x2u

/* dpsock_pl_cmd flags */
#define DPSOCK_PL_CMD_F_IP6  0x1u /* LISTEN, CONNECT, UDP_BIND: the address is addr6 */
#define DPSOCK_PL_CMD_F_DUAL 0x2u /* LISTEN, UDP_BIND on INADDR_ANY: IPv6's addresses too */

struct dpsock_pl_cmd {
	uint16_t op;              /* enum dpsock_pl_op */
	uint16_t flags;           /* DPSOCK_PL_CMD_F_* */
	uint32_t cookie;          /* echoed in the reply */
	uint32_t slot;            /* slot number (ops on an existing slot) */
	uint32_t gen;             /* the slot's generation, as the reply gave it */
	uint32_t addr;            /* network order */
	uint16_t port;            /* network order */
	uint16_t pad;
	union {
		struct {
			union {
				int32_t arg[8];
				struct {
					int32_t arg_lo[4];   /* arg[0..3] */
					uint8_t addr6[16];   /* with DPSOCK_PL_CMD_F_IP6 */
				};
			};
			uint32_t pad2[2];
		};
		struct {                     /* DPSOCK_PL_OP_MCAST */
			int32_t op;
			int32_t iface;
			uint8_t group[16];
			uint8_t source[16];
		} mc;
	};
};
#define DPSOCK_PL_CMD_SIZE 64u
static_assert(sizeof(struct dpsock_pl_cmd) == DPSOCK_PL_CMD_SIZE, "command size");

struct dpsock_pl_reply {
	uint32_t cookie;
	int32_t result;           /* 0 or -errno */
	uint32_t slot;
	uint32_t gen;
	uint32_t addr;            /* network order */
	uint16_t port;            /* network order */
	uint16_t pad;
	uint64_t pad2;
};
#define DPSOCK_PL_REPLY_SIZE 32u
static_assert(sizeof(struct dpsock_pl_reply) == DPSOCK_PL_REPLY_SIZE, "reply size");

/* ======================================================================== */
/* Waiters                                                                  */
/* ======================================================================== */

/* A waiter: one thread's blocking calls (and its poll/select), or one epoll
 * instance. Followed by one wait ring per worker (uint32_t slot numbers the
 * worker changed while the waiter watched them). */
struct dpsock_pl_waiter {
	/* shim-written: non-zero while the waiter is asleep or about to sleep.
	 * The shim stores it, fences (seq_cst), re-checks its sockets and
	 * sleeps; the worker publishes a change, fences (seq_cst), and wakes
	 * an armed waiter: DPSOCK_PL_ARMED_EVENTFD, by writing its eventfd (a
	 * sleep among kernel descriptors: poll, epoll); DPSOCK_PL_ARMED_FUTEX,
	 * by adding one to `futex` and FUTEX_WAKE on it (a sleep on offloaded
	 * sockets alone: no eventfd to read afterwards). */
	uint32_t armed;
	/* worker-written: a wait ring was full, a slot number was lost; the
	 * shim re-examines every socket it watches and clears it. */
	uint32_t overflow;
	/* shim-written after WAITER_ADD, never read by the daemon: the pid of
	 * the process owning the waiter, so that another process of the group
	 * can take back the watch[] entries of a waiter whose process died. */
	uint32_t owner_pid;
	/* shim-written before armed: the CPU the waiting thread sleeps on,
	 * plus one (0: unknown). A worker that wakes a waiter on its own CPU
	 * yields at once, so the woken thread runs now rather than after the
	 * worker's idle polling. */
	uint32_t cpu;
	/* worker-written: the futex word of a DPSOCK_PL_ARMED_FUTEX sleep (the
	 * shim waits while it holds the value it read before arming) */
	uint32_t futex;
	uint32_t pad[11];
};
#define DPSOCK_PL_ARMED_EVENTFD 1u
#define DPSOCK_PL_ARMED_FUTEX 2u
#define DPSOCK_PL_WAITER_HDR 128u
static_assert(sizeof(struct dpsock_pl_waiter) <= DPSOCK_PL_WAITER_HDR, "waiter header");

/* ======================================================================== */
/* Slots                                                                    */
/* ======================================================================== */

enum dpsock_pl_kind {
	DPSOCK_PL_FREE = 0,
	DPSOCK_PL_TCP_LISTENER,
	DPSOCK_PL_TCP_CONN,
	DPSOCK_PL_UDP,
};

enum dpsock_pl_state {
	DPSOCK_PL_ST_NONE = 0,
	DPSOCK_PL_ST_LISTEN,
	DPSOCK_PL_ST_CONNECTING,
	DPSOCK_PL_ST_ESTABLISHED,
	DPSOCK_PL_ST_CLOSED,      /* reset, refused, timed out: see err */
	DPSOCK_PL_ST_BOUND,       /* UDP */
};

/* flags (worker-written) */
#define DPSOCK_PL_F_RD_EOF   0x1u /* the peer's FIN: after the rx FIFO, EOF */
#define DPSOCK_PL_F_WR_SHUT  0x2u /* our FIN was queued: sends fail with EPIPE */

#define DPSOCK_PL_WATCH 4 /* waiters one slot can notify */

#define DPSOCK_PL_LOCK_WAITERS 0x80000000u
#define DPSOCK_PL_LOCK_DAEMON  0x7fffffffu /* no tid: Linux's pid_max <= 2^22 */

/* A connection's TCP_INFO (DPSOCK_PL_OP_TCP_INFO), fields named and meant
 * as Linux's struct tcp_info without the tcpi_ prefix: times in us,
 * windows and counts in segments unless the name says bytes or rate
 * (bytes/s). X(type, name), in layout order. */
#define DPSOCK_PL_TCPI_FIELDS(X)                                               \
	X(uint8_t, state) X(uint8_t, ca_state) X(uint8_t, retransmits)         \
	X(uint8_t, backoff) X(uint8_t, options) X(uint8_t, snd_wscale)         \
	X(uint8_t, rcv_wscale) X(uint8_t, delivery_rate_app_limited)           \
	X(uint32_t, rto) X(uint32_t, snd_mss) X(uint32_t, rcv_mss)             \
	X(uint32_t, advmss) X(uint32_t, unacked) X(uint32_t, sacked)           \
	X(uint32_t, lost) X(uint32_t, retrans) X(uint32_t, rtt)                \
	X(uint32_t, rttvar) X(uint32_t, min_rtt) X(uint32_t, snd_ssthresh)     \
	X(uint32_t, snd_cwnd) X(uint32_t, reordering) X(uint32_t, total_retrans) \
	X(uint32_t, dsack_dups) X(uint32_t, reord_seen) X(uint32_t, segs_out)  \
	X(uint32_t, data_segs_out) X(uint32_t, delivered) X(uint32_t, snd_wnd) \
	X(uint32_t, notsent_bytes) X(uint64_t, pacing_rate)                    \
	X(uint64_t, delivery_rate) X(uint64_t, bytes_acked)                    \
	X(uint64_t, bytes_sent) X(uint64_t, bytes_retrans)

#define DPSOCK_PL_TCPI_FIELD(type, name) type name;
struct dpsock_pl_tcp_info {
	DPSOCK_PL_TCPI_FIELDS(DPSOCK_PL_TCPI_FIELD)
	char congestion[16];      /* the congestion control's name */
	uint8_t pad[40];
};
#undef DPSOCK_PL_TCPI_FIELD
static_assert(sizeof(struct dpsock_pl_tcp_info) == 192, "tcp_info block");

struct dpsock_pl_slot {
	/* ---- worker-written (line 0) ---- */
	uint32_t gen;             /* bumped each time the worker allocates the slot */
	uint32_t kind;            /* enum dpsock_pl_kind */
	uint32_t state;           /* enum dpsock_pl_state */
	int32_t err;              /* -errno: ECONNREFUSED, ECONNRESET, ETIMEDOUT,
				   * ECONNABORTED (daemon stopped), 0 = none */
	uint32_t flags;           /* DPSOCK_PL_F_* */
	uint32_t laddr;           /* network order */
	uint32_t raddr;
	uint16_t lport, rport;    /* network order */
	uint32_t change;          /* bumped after every published change */
	uint32_t tx_space;        /* lwIP send buffer free (info: SIOCOUTQ) */
	uint32_t pad0[6];

	/* ---- shared doorbells (line 1), both sides use atomics ---- */
	/* worker sets 1 when it drained the tx FIFO and stopped looking; the
	 * shim, after writing the FIFO and a seq_cst fence, exchanges it with 0
	 * and sends TX_KICK if it was 1. */
	uint32_t tx_doorbell;
	/* worker sets 1 when the rx FIFO was too full for what it holds; the
	 * shim, after reading and a seq_cst fence, exchanges it with 0 and
	 * sends RX_KICK if it was 1. */
	uint32_t rx_doorbell;
	/* shim sets 1 when it found the tx FIFO full; the worker, after it
	 * freed space, exchanges it with 0 and notifies the watchers if 1. */
	uint32_t want_tx;
	/* The process-shared locks of the FIFOs' shim ends (the threads and
	 * processes of a group writing one tx FIFO or reading one rx FIFO):
	 * the holder's tid, with DPSOCK_PL_LOCK_WAITERS when others sleep on
	 * it (futex). The worker takes tx_lock too, with a compare-and-swap
	 * from 0 to DPSOCK_PL_LOCK_DAEMON and never waiting, for the time it
	 * gives the pages of an empty tx FIFO back and moves its base to
	 * offset 0; it then releases it and, with the WAITERS bit, wakes. */
	uint32_t rx_lock;
	uint32_t tx_lock;
	uint32_t pad1[11];

	/* ---- shim-written (line 2) ---- */
	/* waiter id + 1 of each waiter watching this slot (0 = empty entry);
	 * set by the shim with compare-and-swap, read by the worker. */
	uint32_t watch[DPSOCK_PL_WATCH];
	/* queued[i]: the worker set it when it put this slot in watch[i]'s
	 * wait ring; the shim clears it when it takes it out (then re-reads the
	 * state). The worker does not queue a slot twice. */
	uint32_t queued[DPSOCK_PL_WATCH];
	/* For dpsock-stat only (the worker copies them into the socket's
	 * stats entry every 100 ms, as plain numbers, trusting nothing): the
	 * process and descriptor that opened the socket (written in every
	 * slot of it when it became offloaded), and on the socket's first
	 * slot, poll/select/epoll checks and waits that found it ready
	 * (hits) or not (misses), wrapping. */
	int32_t owner_pid;
	int32_t owner_fd;
	uint32_t poll_hits;
	uint32_t poll_misses;
	uint32_t pad2[4];

	/* ---- shim-only (line 3): the shim's lock and bookkeeping; the
	 * daemon never reads them. */
	uint8_t shim[256 - 192];

	/* ---- worker-written on request (lines 4..6): DPSOCK_PL_OP_TCP_INFO */
	struct dpsock_pl_tcp_info tcpi;

	/* ---- worker-written (line 7): a slot of IPv6 (ip6 = 1, published
	 * with the state as line 0's addresses are; laddr/raddr are 0 then) */
	uint8_t laddr6[16];
	uint8_t raddr6[16];
	uint32_t ip6;
	uint32_t pad7[7];
};
#define DPSOCK_PL_SLOT_HDR 512u
static_assert(sizeof(struct dpsock_pl_slot) == DPSOCK_PL_SLOT_HDR, "slot header");
static_assert(offsetof(struct dpsock_pl_slot, tx_doorbell) == 64, "line 1");
static_assert(offsetof(struct dpsock_pl_slot, tx_lock) < 128, "line 1: the locks");
static_assert(offsetof(struct dpsock_pl_slot, watch) == 128, "line 2");
static_assert(offsetof(struct dpsock_pl_slot, shim) == 192, "line 3");
static_assert(offsetof(struct dpsock_pl_slot, tcpi) == 256, "line 4");
static_assert(offsetof(struct dpsock_pl_slot, laddr6) == 448, "line 7");

/* A listener's rx FIFO carries accepted connections. */
struct dpsock_pl_accept {
	uint32_t slot;
	uint32_t gen;
};

/* A UDP slot's FIFOs carry datagrams: this header, then len bytes, then
 * padding to a multiple of 8. rx: addr/port = source; tx: destination (the
 * rest zero). A datagram is written whole or not at all. The rx fields
 * after port are what recvmsg's control messages say (IP_PKTINFO,
 * SO_TIMESTAMP, SO_TIMESTAMPNS, SO_TIMESTAMPING). */
struct dpsock_pl_dgram {
	uint32_t len;
	uint32_t addr;            /* network order */
	uint16_t port;            /* network order */
	uint16_t flags;           /* rx: DPSOCK_PL_DGRAM_* */
	uint32_t dst;             /* rx: its destination address (a group for multicast) */
	uint32_t spec_dst;        /* rx: the address of the interface it came in on */
	uint32_t ifindex;         /* rx: that interface's kernel ifindex, 0: none */
	uint64_t rx_ns;           /* rx: CLOCK_REALTIME when the worker took its frame */
	uint64_t hw_ns;           /* rx: the NIC's raw timestamp (DPSOCK_PL_DGRAM_HWTS) */
};
static_assert(sizeof(struct dpsock_pl_dgram) == 40, "datagram header");
#define DPSOCK_PL_DGRAM_HWTS 0x1u
/* An IPv6 datagram (rx and tx): struct dpsock_pl_dgram6 follows the
 * header, then the data; addr, dst and spec_dst are 0. */
#define DPSOCK_PL_DGRAM_IP6 0x2u
struct dpsock_pl_dgram6 {
	uint8_t addr[16];         /* rx: the source; tx: the destination */
	uint8_t dst[16];          /* rx: its destination (IPV6_PKTINFO) */
};
static_assert(sizeof(struct dpsock_pl_dgram6) % 8 == 0, "records stay 8-aligned");

/* Bytes before a datagram's data: the header, and the IPv6 one's addresses. */
static inline uint32_t
dpsock_pl_dgram_hlen(uint16_t flags)
{
	return (uint32_t)sizeof(struct dpsock_pl_dgram) +
	       (flags & DPSOCK_PL_DGRAM_IP6 ? (uint32_t)sizeof(struct dpsock_pl_dgram6) : 0u);
}
/* rx datagram flags of the 0xf000 nibble are the shim's: it writes them in
 * records it has not consumed yet (the worker never reads a record back
 * once published), to receive out of order (extra API, shim/io/zcopy.c). */
#define DPSOCK_PL_DGRAM_SHIM_MASK 0xf000u
#define DPSOCK_PL_DGRAM_SHIM_SEEN 0x1000u /* the receive callback kept it */
#define DPSOCK_PL_DGRAM_SHIM_HELD 0x2000u /* the program holds it (zero copy) */
#define DPSOCK_PL_DGRAM_SHIM_DONE 0x4000u /* consumed, behind an older held one */
#define DPSOCK_PL_DGRAM_MAX 65507u

#endif /* DPSOCK_ABI_PRELOAD_WIRE_H */
