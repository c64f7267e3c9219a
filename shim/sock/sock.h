/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sock.h — sock/: the shadow socket (fd table, object, family, fork, gone).
 * Every AF_INET/AF_INET6 TCP or UDP socket a program makes has a shadow
 * object, found by its descriptor (fd.c), which says how its addresses
 * look to the program (family.c), which processes of the group hold it
 * across fork (fork.c), and what it becomes once dpsockd is gone
 * (gone.c). It calls only link/ and shim.h; the last reference to an
 * object goes in calls.c (shim_sock_unref), which knows every part of the
 * shim that holds on to one.
 */
#ifndef DPSOCK_SHIM_SOCK_H
#define DPSOCK_SHIM_SOCK_H

#include "link/link.h"

/* ---- socket shadow objects ------------------------------------------------- */

enum shim_sock_mode {
	SHIM_UNDECIDED = 0,       /* AF_INET or AF_INET6, no offload decision yet */
	SHIM_KERNEL,              /* decided: stays a kernel socket */
	SHIM_TCP_LISTEN,
	SHIM_TCP_CONN,
	SHIM_UDP,
};

struct shim_sock {
	int refs;                 /* fds sharing this object (dup) */
	pthread_mutex_t lock;
	int type;                 /* SOCK_STREAM / SOCK_DGRAM */
	int family;               /* AF_INET / AF_INET6 (dual-stack: family.c) */
	int v6only;               /* AF_INET6: IPV6_V6ONLY (offloaded for IPv6 alone) */
	int any6;                 /* AF_INET6 bound to "::" (getsockname names "::") */
	/* IPv6 proper: bound to laddr6 (an address6 of dpsockd's, or "::"
	 * with IPV6_V6ONLY), or (TCP) connected to an IPv6 address; a
	 * connection's own addresses are in its slot (line 7) */
	int ip6;
	struct in6_addr laddr6;
	/* UDP: the slots take IPv6 (bound for IPv6 alone, or for both
	 * families on "::"); a connected one's peer is IPv6 (raddr6) */
	int udp6, peer6;
	struct in6_addr raddr6;
	/* the kernel socket carries traffic too: an AF_INET6 listener on "::"
	 * listens in the kernel for what dpsockd does not serve (IPv6, the
	 * kernel's own interfaces); accept and every wait look at both */
	int khalf;
	int mode;                 /* enum shim_sock_mode */
	int nonblock;             /* mirrors the kernel's O_NONBLOCK */
	/* local address asked for by bind (network order) */
	int bound;
	uint32_t laddr;
	uint16_t lport;
	/* remembered options */
	int reuseaddr, reuseport, keepalive, nodelay, tos;
	int keepidle, keepintvl, keepcnt;
	char cc[16];              /* TCP_CONGESTION the kernel accepted ("" none) */
	int rcvbuf, sndbuf;
	struct linger linger;
	int backlog;
	int rcvtimeo_ms, sndtimeo_ms; /* SO_RCVTIMEO / SO_SNDTIMEO; -1 = none */
	/* offloaded state */
	uint32_t nslots;          /* listener/UDP: n_workers; conn: 1 */
	uint32_t slot[SHIM_MAX_WORKERS];
	uint32_t gen[SHIM_MAX_WORKERS];
	uint32_t rr;              /* round-robin over slots */
	int err_taken;            /* slot err already reported (SO_ERROR / call) */
	int connect_reported;     /* non-blocking connect outcome handed out */
	int shut_rd, shut_wr;
	/* UDP */
	int udp_connected;
	uint32_t raddr;
	uint16_t rport;
	uint32_t udp_tx_worker;
	/* the kernel socket's inode: the socket's identity across exec */
	uint64_t ino;
	int in_epoll;             /* registrations in epoll sets (atomic) */
	int fd0;                  /* the descriptor socket() gave (-1: unknown; dpsock-stat shows it) */
	int gone;                 /* enum shim_gone (atomic): dpsockd's end, reported and handled */
	/* extra API receive state (zcopy.c): made at the first
	 * recvfrom_zcopy, callback or completion; NULL = the plain paths */
	struct shim_xrx *xrx;
	/* UDP options (mcast.c, offload.c); SHIM_UNSET: never set, the
	 * worker's default stands */
	int ttl, mc_ttl, mc_loop, mc_all;
	int mc_if;                /* IP_MULTICAST_IF: dpsockd interface, -1: default */
	int mc_if_kernel;         /* ... named a kernel interface: sends stay there */
	int mc6_hops, mc6_loop, mc6_all; /* IPV6_MULTICAST_HOPS / _LOOP / _ALL */
	int mc6_if;               /* IPV6_MULTICAST_IF: dpsockd interface, -1: the route's */
	uint32_t mc_if_addr;      /* the address given (getsockopt) */
	int rcvbuf_eff, sndbuf_eff; /* SO_RCVBUF / SO_SNDBUF as the kernel reports them */
	int pktinfo;              /* IP_PKTINFO */
	int pktinfo6;             /* IPV6_RECVPKTINFO (AF_INET6) */
	int ts_opt;               /* SO_TIMESTAMP / SO_TIMESTAMPNS (the option number set), 0: off */
	int ts_flags;             /* SO_TIMESTAMPING flags */
	int ts_ing_opt;           /* the SO_TIMESTAMPING option number set (old or new) */
	struct dpsock_mc_set *mc_pending; /* memberships made before the offload decision */
};

#define SHIM_UNSET (-0x7fffffff - 1)

/* An offloaded socket after dpsockd is gone (gone.c). */
enum shim_gone {
	SHIM_GONE_LIVE = 0,       /* dpsockd serves it (or nobody noticed yet) */
	SHIM_GONE_SEEN,           /* its end was reported once to the program */
	SHIM_GONE_DONE,           /* handled: a kernel socket now, or a reset connection */
};
/* The report of dpsockd's end was made (a call failed, a wait reported the
 * socket): the next lookup hands the socket to the kernel. */
void shim_sock_gone_seen(struct shim_sock *s);
/* After the report: a UDP socket or a listener becomes its kernel socket
 * (fd: any descriptor of it; a listener listens there). true when it did. */
bool shim_sock_fall_back(int fd, struct shim_sock *s);

/* true if fd is an offloaded socket (mode >= SHIM_TCP_LISTEN). */
static inline bool shim_sock_offloaded(const struct shim_sock *s)
{
	return s != NULL && __atomic_load_n(&s->mode, __ATOMIC_ACQUIRE) >= SHIM_TCP_LISTEN;
}

/* Slot i of an offloaded socket. */
static inline struct dpsock_pl_slot *
shim_sock_slot(struct shim_sock *s, uint32_t i)
{
	return shim_slot(s->slot[i]);
}

/* ---- address families (family.c) ------------------------------------------- */

/* What an address is used for: a bind takes "::" as every address. */
enum { SHIM_ADDR_BIND, SHIM_ADDR_PEER };
/* net.ipv6.bindv6only, read once. */
int shim_bindv6only(void);
/* The IPv4 address and port for dpsockd of a (len bytes) given to socket
 * s: 0 and *out filled; SHIM_TO_KERNEL when it is not IPv4 for this socket
 * (IPv6 proper, an AF_INET6 socket with IPV6_V6ONLY, an address family the
 * socket does not take, a short length): the kernel answers. */
int shim_addr_in(const struct shim_sock *s, const struct sockaddr *a, socklen_t len, int use,
		 struct sockaddr_in *out);
/* The IPv6 address of a (len bytes) given to AF_INET6 socket s when it is
 * IPv6 proper (not IPv4-mapped; "::" only for a bind with
 * IPV6_V6ONLY, as "::" without it is IPv4's too: shim_addr_in): true and
 * *out, *port filled. */
bool shim_addr_in6(const struct shim_sock *s, const struct sockaddr *a, socklen_t len, int use,
		   struct in6_addr *out, uint16_t *port);
/* Write an address and port p (network order) as socket s names addresses,
 * truncated to *len as the kernel does; *len gets the full size: IPv6
 * address a6 (16 bytes) when not NULL, else IPv4 address a (AF_INET, or
 * AF_INET6 mapped). */
void shim_addr_out(const struct shim_sock *s, uint32_t a, const void *a6, uint16_t p,
		   struct sockaddr *out, socklen_t *len);
/* A slot's addresses, as shim_addr_out takes them: its IPv6 one (line 7)
 * or NULL. */
static inline const void *
shim_slot_laddr6(const struct dpsock_pl_slot *sl)
{
	return __atomic_load_n(&sl->ip6, __ATOMIC_RELAXED) ? sl->laddr6 : NULL;
}
static inline const void *
shim_slot_raddr6(const struct dpsock_pl_slot *sl)
{
	return __atomic_load_n(&sl->ip6, __ATOMIC_RELAXED) ? sl->raddr6 : NULL;
}

/* ---- shadow fd table and object lifetime (fd.c) ---------------------------- */

/* A map from descriptor to pointer: two levels of 1024 entries, pages made
 * on demand; get is lock-free (acquire loads), set/take are atomic per
 * entry. Zero-initialised = empty. */
#define SHIM_FDMAP_PAGE 1024u
struct shim_fdmap {
	void **page[SHIM_FDMAP_PAGE];
};
void *shim_fdmap_get(struct shim_fdmap *m, int fd);
int shim_fdmap_set(struct shim_fdmap *m, int fd, void *v);   /* 0, -EMFILE, -ENOMEM */
void *shim_fdmap_take(struct shim_fdmap *m, int fd);
void shim_fdmap_free(struct shim_fdmap *m);

struct shim_sock *shim_sock_get(int fd);      /* NULL: not ours */
/* Enter / take out fd's object. set: 0 or -errno (-EMFILE beyond the
 * table, -ENOMEM). take: the object that was there, or NULL. */
int shim_fdtab_set(int fd, struct shim_sock *s);
struct shim_sock *shim_fdtab_take(int fd);
/* release(fd) on every descriptor of the table (the process exits:
 * calls.c hands it close()'s release). */
void shim_fd_release_all(bool (*release)(int fd));
/* A new undecided object (one reference), or NULL. */
struct shim_sock *shim_sock_new(int type, int nonblock);
/* Process references in a slot's shim area: add pid (false when the list
 * is full: the socket is then pinned until the group ends); replace one
 * copy of from by to (0 = remove). */
bool shim_area_pid_add(struct shim_slot_area *a, uint32_t pid);
bool shim_area_pid_swap(struct shim_slot_area *a, uint32_t from, uint32_t to);
/* The kernel socket's inode (0: unknown; such a socket is not inherited
 * through exec). */
uint64_t shim_fd_ino(int fd);
/* Let go of the socket's slots for this process (CLOSE to the workers when
 * no other process of the group holds it); the object itself stays. */
void shim_sock_release_slots(struct shim_sock *s);
/* true when this process holds offloaded sockets whose descriptors survive
 * exec (no FD_CLOEXEC). */
bool shim_sock_inheritable(void);

/* ---- fork (fork.c) ------------------------------------------------------------ */

/* Track / forget an offloaded object: a fork gives the child a process
 * reference on every tracked one. */
void shim_fork_track(struct shim_sock *s);
void shim_fork_untrack(struct shim_sock *s);
/* The process that forked last from this image (atfork child handler). */
extern pid_t shim_forked_pid;

#endif /* DPSOCK_SHIM_SOCK_H */
