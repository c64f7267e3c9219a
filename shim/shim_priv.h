/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shim_priv.h — internals of libdpsock_preload.so (the LD_PRELOAD shim).
 * Links neither DPDK nor lwIP: libc (dlsym, pthread) only. docs/preload.md
 * tells the behaviour; abi/preload_wire.h the wire format.
 *
 * Error convention inside the shim: helpers return 0 / a count, or -errno;
 * only the exported hooks turn that into -1 + errno, exactly as libc.
 */
#ifndef DPSOCK_SHIM_PRIV_H
#define DPSOCK_SHIM_PRIV_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dpsock/extra.h"
#include "preload_wire.h"
#include "spsc_ring.h"

#define DPSOCK_SHIM_EXPORT __attribute__((visibility("default")))

/* ---- real libc functions (hooks.def) ------------------------------------ */

#define DPSOCK_HOOK(ret, name, params, flags, bad, kern) \
	typedef ret (*shim_real_##name##_t) params;
#include "hooks.def"
#undef DPSOCK_HOOK

struct shim_real {
#define DPSOCK_HOOK(ret, name, params, flags, bad, kern) shim_real_##name##_t name;
#include "hooks.def"
#undef DPSOCK_HOOK
};

extern struct shim_real shim_real;
extern int shim_real_ready;
void shim_real_resolve(void);

/* REAL(name): libc's function, resolved once (thread-safe) on first use. */
static inline const struct shim_real *
shim_real_get(void)
{
	/* acquire: pairs with the release in shim_real_resolve's once-routine */
	if (__builtin_expect(!__atomic_load_n(&shim_real_ready, __ATOMIC_ACQUIRE), 0))
		shim_real_resolve();
	return &shim_real;
}
#define REAL(name) (shim_real_get()->name)

/* This process's pid without a system call (glibc's getpid() makes one):
 * cached, forgotten by an atfork child handler (fork.c). */
extern pid_t shim_pid_cache;
static inline pid_t
shim_getpid(void)
{
	pid_t p = __atomic_load_n(&shim_pid_cache, __ATOMIC_RELAXED);

	if (__builtin_expect(p == 0, 0)) {
		p = getpid();
		__atomic_store_n(&shim_pid_cache, p, __ATOMIC_RELAXED);
	}
	return p;
}

/* The calling thread's id, cached: gettid() is a system call, and the FIFO
 * locks (shim_lock) take it on every datagram of the plain receive path.
 * Forgotten in a fork's child with the pid (fork.c). */
extern __thread pid_t shim_tid_cache;
static inline pid_t
shim_gettid(void)
{
	pid_t t = shim_tid_cache;

	if (__builtin_expect(t == 0, 0))
		shim_tid_cache = t = gettid();
	return t;
}

/* Spin-wait hint. */
static inline void
shim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* ---- environment and log (env.c) ----------------------------------------- */

enum { DPSOCK_LOG_ERR = 3, DPSOCK_LOG_WARNING = 4, DPSOCK_LOG_NOTICE = 5,
       DPSOCK_LOG_INFO = 6, DPSOCK_LOG_DEBUG = 7 };

struct shim_env {
	char name[64];            /* DPSOCK_NAME */
	char runtime_dir[256];    /* DPSOCK_RUNTIME_DIR */
	char app_id[64];          /* DPSOCK_APPLICATION_ID */
	char prog[64];            /* program name at start (before setproctitle) */
	char rules_file[256];     /* DPSOCK_RULES_FILE: libvma.conf-style rules */
	long rx_poll_us;          /* DPSOCK_RX_POLL: -1 = spin forever;
				   * SHIM_POLL_AUTO when unset */
	long select_poll_us;      /* DPSOCK_SELECT_POLL */
	int offload;              /* DPSOCK_OFFLOAD */
	int loopback;             /* DPSOCK_LOOPBACK: TCP over 127.0.0.1 through dpsockd */
	int rx_prefetch;          /* DPSOCK_RX_PREFETCH_BYTES: of each datagram
				   * recvfrom_zcopy, a callback or comp_poll
				   * hands out */
	int log_level;            /* DPSOCK_LOG_LEVEL */
	int log_fd;               /* DPSOCK_LOG_FILE, else stderr */
};

extern struct shim_env shim_env;
void shim_env_load(void);   /* once; thread-safe */
void shim_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define SHIM_LOG(lvl, ...) do { \
	if (DPSOCK_LOG_##lvl <= shim_env.log_level) shim_log(DPSOCK_LOG_##lvl, __VA_ARGS__); \
} while (0)
uint64_t shim_now_us(void);

/* ---- time-outs -------------------------------------------------------------- */

/* Milliseconds left of a time-out that started at start_us; -1 = forever. */
static inline int
shim_ms_left(int timeout_ms, uint64_t start_us)
{
	uint64_t el;

	if (timeout_ms < 0)
		return -1;
	el = (shim_now_us() - start_us) / 1000;
	return el >= (uint64_t)timeout_ms ? 0 : timeout_ms - (int)el;
}

/* A struct timespec time-out in ms: -1 = NULL (forever), -2 = invalid. */
static inline int
shim_ts_to_ms(const struct timespec *ts)
{
	if (ts == NULL)
		return -1;
	if (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L)
		return -2;
	if (ts->tv_sec > 1000000)
		return 1000000000;
	return (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
}

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
 * SHIM_POLL_DEFAULT_US, or none when this thread runs on the CPU of a
 * worker (spinning there would take the CPU from the worker that is to wake
 * it). */
#define SHIM_POLL_AUTO (-2L)
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
/* One request on the control socket and its status reply (a waiter's or a
 * channel's add and delete); fd rides along when >= 0; *out_id gets the
 * reply's id. Returns the status or -errno (-ECONNRESET: not attached). */
int shim_ctl_simple(uint16_t type, uint32_t id, uint32_t arg, int fd, uint32_t *out_id);
/* futex(2) on a word of the segment (shared, not FUTEX_PRIVATE: the other
 * side maps it too). */
long shim_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts);
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

/* ---- errors, as libc reports them ---------------------------------------- */

/* What a hook's body returns besides 0 and -errno: */
#define SHIM_TO_KERNEL 1  /* not ours after all: libc makes the call */
#define SHIM_BLOCKED 2    /* must wait, after the socket's lock is dropped */

static inline int
shim_fail(int e)
{
	errno = e;
	return -1;
}

/* A send on a socket that can send no more: SIGPIPE unless MSG_NOSIGNAL. */
static inline ssize_t
shim_epipe(int flags)
{
	if (!(flags & MSG_NOSIGNAL))
		raise(SIGPIPE);
	errno = EPIPE;
	return -1;
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
/* Drop a reference; the last one lets go of the socket's slots (CLOSE to
 * the workers once no process of the group holds it). In calls.c: the
 * last reference lets go of what every part of the shim holds. */
void shim_sock_unref(struct shim_sock *s);
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

/* ---- slot FIFOs (fifo.c) ----------------------------------------------------- */

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

size_t shim_iov_total(const struct iovec *iov, int n);
/* Copy len bytes from src into the iovec array starting at byte off; from
 * the array at off into dst; between two arrays. */
void shim_iov_put(const struct iovec *iov, int n, size_t off, const unsigned char *src,
		  size_t len);
void shim_iov_get(const struct iovec *iov, int n, size_t off, unsigned char *dst, size_t len);
void shim_iov_copy(const struct iovec *dst, int nd, size_t doff, const struct iovec *src, int ns,
		   size_t soff, size_t len);
/* After making room in slot i's rx FIFO / putting data in its tx FIFO:
 * post RX_KICK / TX_KICK if the worker rang the doorbell. */
void shim_rx_kick(struct shim_sock *s, uint32_t i);
void shim_tx_kick(struct shim_sock *s, uint32_t i);

/* ---- readiness and the single-socket wait (ready.c) -------------------------- */

/* Readiness of an offloaded socket as poll bits (POLLIN/OUT/ERR/HUP/RDHUP). */
uint32_t shim_sock_ready(struct shim_sock *s);
/* What edge-triggered readiness compares: in moves when data, a
 * connection, EOF or an error arrives; out when send room is made or the
 * state changes. */
struct shim_edge_sig {
	uint64_t in, out;
};
/* shim_sock_ready, plus the edge signature read in the same pass. */
uint32_t shim_sock_ready_sig(struct shim_sock *s, struct shim_edge_sig *sig);
/* Register / unregister waiter id in the slots' watch[] entries. Returns
 * false when some slot had no free entry (the caller then sleeps in short
 * ticks instead). */
bool shim_sock_watch(struct shim_sock *s, int waiter_id);
void shim_sock_unwatch(struct shim_sock *s, int waiter_id);
/* Before a wait for writability: ask the worker to notify when it makes
 * room (want_tx), then fence. Returns true when it asked (the caller then
 * looks at the socket once more: room made before the ask is seen). */
bool shim_sock_want_tx(struct shim_sock *s);
/* Blocking wait for want (poll bits) on one socket: spin for the
 * DPSOCK_RX_POLL budget, then sleep. timeout_ms: -1 forever. Returns 1 when
 * ready, 0 on timeout, -EINTR, or -ECONNABORTED when dpsockd went away. */
int shim_wait_sock(struct shim_sock *s, uint32_t want, int timeout_ms);
/* The same, with s's kernel half (kfd, a descriptor of its kernel socket;
 * -1: none) watched too: ready when either is; no spin. */
int shim_wait_sock_k(struct shim_sock *s, int kfd, uint32_t want, int timeout_ms);

/* ---- offload decision (offload.c) ------------------------------------------- */

/* 1: offload a socket of this role (enum dpsock_pl_role) to addr:port
 * (network order; the local address for tcp_server/udp_receiver, the
 * destination otherwise), 0: keep it in the kernel. laddr/lport: the
 * socket's local address for tcp_client/udp_connect (0: not bound). */
int shim_offload_decide(int role, uint32_t addr, uint16_t port, uint32_t laddr, uint16_t lport);
/* The same for an IPv6 address (tcp_server, udp_receiver: "::" or an
 * address6 of dpsockd's; the others: an address in the /64 of one). The rules'
 * addresses are IPv4: an IPv6 socket matches the rules whose address is
 * any ("*"). */
int shim_offload_decide6(int role, const struct in6_addr *addr, uint16_t port);
/* dpsockd serves IPv6 (some port has an address6). */
bool shim_serves_ip6(void);
/* LISTEN or UDP_BIND on every worker, with DPSOCK_PL_CMD_F_* cflags (F_IP6:
 * s->laddr6 is the address). Returns 0 or -errno. */
int shim_sock_open_all(struct shim_sock *s, int op, uint32_t addr, uint16_t port,
		       unsigned int cflags);
/* The object became offloaded with the slots it holds (mode: enum
 * shim_sock_mode); this process holds it. */
void shim_sock_set_offloaded(struct shim_sock *s, int mode);
/* Told of each socket shim_sock_set_offloaded offloads, in the thread that
 * offloads it; NULL until a thread makes a completion set (comp.c sets
 * shim_comp_sock_offloaded). */
extern void (*shim_sock_offloaded_hook)(struct shim_sock *s);
/* Send the remembered options a worker applies, once the slots exist. */
void shim_sock_push_opts(struct shim_thread *t, struct shim_sock *s);
/* One option on every slot of an offloaded socket; 0 or the first -errno. */
int shim_sock_setopt_all(struct shim_thread *t, struct shim_sock *s, int level, int name, int val);

/* ---- multicast and UDP options (mcast.c) -------------------------------------- */

struct dpsock_mc_set;
/* A membership option, or IP_MULTICAST_IF / IPV6_MULTICAST_IF (of level
 * IPPROTO_IP or IPPROTO_IPV6)? */
bool shim_mc_optname(int level, int name);
/* Such an option on an undecided or offloaded UDP socket: 0, -errno as
 * Linux, or SHIM_TO_KERNEL (no dpsockd, or a kernel socket after all). */
int shim_mc_setsockopt(struct shim_sock *s, int fd, int level, int name, const void *val,
		       socklen_t len);
/* IPV6_MULTICAST_IF's interface: the dpsockd port of a kernel ifindex, -1
 * for 0 (the route's) or an interface not dpsockd's. */
int shim_mc_iface6(int ifindex);
/* getsockopt of what the kernel socket does not know (IP_MULTICAST_IF set
 * to a dpsockd interface); else SHIM_TO_KERNEL. */
int shim_mc_getsockopt(struct shim_sock *s, int name, void *val, socklen_t *len);
/* The socket was offloaded / stays in the kernel: its memberships made
 * before bind go to the workers / are dropped (logged). */
void shim_mc_replay(struct shim_thread *t, struct shim_sock *s);
void shim_mc_drop_pending(struct shim_sock *s);
/* A datagram record's header as the shim reads it: the wire's header and,
 * for an IPv6 datagram (DPSOCK_PL_DGRAM_IP6), its addresses. */
struct shim_dgram {
	struct dpsock_pl_dgram h;
	struct dpsock_pl_dgram6 x;
};
/* recvmsg's control messages for a datagram (IP_PKTINFO or IPV6_PKTINFO,
 * SO_TIMESTAMP, SO_TIMESTAMPNS, SO_TIMESTAMPING); sets msg_controllen,
 * MSG_CTRUNC. */
void shim_udp_cmsgs(const struct shim_sock *s, const struct shim_dgram *d, struct msghdr *m,
		    int *flags);

/* ---- TCP and UDP (tcp.c, udp.c) --------------------------------------------- */

/* Data calls return a count or -1 with errno (as libc); the others 0 or
 * -errno. */
int shim_conn_take_err(struct shim_sock *s);   /* pending error (once), else 0 */
ssize_t shim_tcp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags);
ssize_t shim_tcp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags);
/* Start an active open (caller holds s->lock). Returns -EINPROGRESS on a
 * non-blocking socket (the outcome comes as writability and SO_ERROR),
 * SHIM_BLOCKED on a blocking one (the caller drops the lock and waits with
 * shim_tcp_connect_wait), or -errno. */
int shim_tcp_connect(struct shim_sock *s, const struct sockaddr_in *sin);
/* The same to IPv6 address a6, port (network order). */
int shim_tcp_connect6(struct shim_sock *s, const struct in6_addr *a6, uint16_t port);
/* connect() again on an offloaded connection: 0 (the outcome, once),
 * -EISCONN, -EALREADY, SHIM_BLOCKED or the error. Caller holds s->lock. */
int shim_tcp_connect_again(struct shim_sock *s);
/* Wait, without the lock, for a blocking connect's outcome: 0 or -errno
 * (-EINPROGRESS when SO_SNDTIMEO ran out; it goes on). */
int shim_tcp_connect_wait(struct shim_sock *s);
/* accept4 on an offloaded listener: the new descriptor or -1 + errno. */
int shim_tcp_accept(int fd, struct shim_sock *s, struct sockaddr *addr, socklen_t *alen,
		    int flags);
/* tcpinfo.c: getsockopt TCP_INFO / TCP_CONGESTION of an offloaded TCP
 * socket, answered by its worker. 0 or -errno. */
int shim_tcp_info(struct shim_sock *s, void *val, socklen_t *len);
int shim_tcp_congestion(struct shim_sock *s, void *val, socklen_t *len);
ssize_t shim_udp_send(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
		      const struct sockaddr *to, socklen_t tolen);
/* hdr (may be NULL): the datagram's header, for recvmsg's control messages. */
ssize_t shim_udp_recv(struct shim_sock *s, const struct iovec *iov, int iovcnt, int flags,
		      struct sockaddr *from, socklen_t *fromlen, int *msg_flags,
		      struct shim_dgram *hdr);
/* A connected UDP socket takes only its peer's datagrams (as the kernel):
 * true when d is from another. */
bool shim_udp_unwanted(const struct shim_sock *s, const struct shim_dgram *d);
/* Offload an unbound UDP socket (a port on every worker). */
int shim_udp_ensure_bound(struct shim_sock *s, int role, uint32_t addr, uint16_t port);
/* First send on an undecided UDP socket: the udp_sender decision. true
 * when it is (now) offloaded. */
bool shim_udp_first_send(struct shim_sock *s, const struct sockaddr *to, socklen_t tolen);

/* ---- extra API (extra.c, zcopy.c, comp.c; include/dpsock/extra.h) ------------- */

/* The socket's extra receive state, made on first use (NULL + errno
 * ENOMEM). Caller: the socket is offloaded. */
struct shim_xrx *shim_xrx_get(struct shim_sock *s);
/* The last reference to s went: forget its extra state (held packets of
 * it can no longer be freed). */
void shim_xrx_release(struct shim_sock *s);
/* Bytes of slot i's rx FIFO the program can still read (not held); the
 * plain FIFO level when the socket has no extra state. */
uint32_t shim_rx_level(struct shim_sock *s, uint32_t i);
/* UDP with extra state: run the receive callback over new datagrams of
 * slot i; true when a datagram is readable there. */
bool shim_xrx_udp_readable(struct shim_sock *s, uint32_t i);
/* UDP with extra state: receive the first readable datagram of slot i by
 * copy (as shim_udp_recv's per-slot step). Returns 1 with *h (its header)
 * and *copied, or 0 when there is none. */
int shim_xrx_udp_recv_slot(struct shim_sock *s, uint32_t i, const struct iovec *iov, int iovcnt,
			   int flags, struct shim_dgram *h, size_t *copied);
/* TCP with held chunks: copy up to len readable bytes into iov at byte
 * off (MSG_PEEK: leave them). Returns the count (0: none readable). */
uint32_t shim_xrx_tcp_read(struct shim_sock *s, const struct iovec *iov, int iovcnt, size_t off,
			   size_t len, int flags);
/* true when s has TCP chunks held (reads then go through shim_xrx_tcp_read). */
bool shim_xrx_tcp_holds_slow(const struct shim_sock *s);
static inline bool
shim_xrx_tcp_holds(const struct shim_sock *s)
{
	return __builtin_expect(s->xrx != NULL, 0) && shim_xrx_tcp_holds_slow(s);
}
/* This thread may offload the sockets it creates (thread_offload). */
extern __thread int shim_thread_no_offload;
/* getsockopt(-1, SOL_SOCKET, DPSOCK_SO_EXTRA_API): the table. */
int shim_extra_getsockopt(void *val, socklen_t *len);
/* A process rule (add_conf_rule; offload.c): 0, -EINVAL (logged), -ENOSPC. */
int shim_proc_rule_add(const char *line);
/* Completion sets: a descriptor closed (it leaves every set). */
void shim_comp_fd_closed(int fd, struct shim_sock *s);
/* Flag for shim_tcp_accept: never wait (the listener may be blocking). */
#define SHIM_ACCEPT_NOWAIT 0x40000000
/* Poll counters for dpsock-stat (slot line 2 of the socket's first slot):
 * a readiness look that found what it asked for, or not. Relaxed
 * read-modify-write: a count lost when two threads poll one socket at the
 * same instant is acceptable for a statistic. */
static inline void
shim_poll_count(struct shim_sock *s, bool hit)
{
	struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
	uint32_t *c = hit ? &sl->poll_hits : &sl->poll_misses;

	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* ---- readiness over many descriptors (poll.c, epoll.c) ------------------------ */

void shim_epoll_fd_closed(int fd, struct shim_sock *s);
void shim_epoll_close(int epfd);
bool shim_epoll_is(int epfd);

/* ---- signals (signal.c) --------------------------------------------------------- */

/* Signal handlers this thread ran so far (a wait that sees it move was
 * interrupted), and whether the last one had SA_RESTART. */
unsigned int shim_sig_count(void);
bool shim_sig_restarts(void);

/* ---- fork (fork.c) ------------------------------------------------------------ */

/* Track / forget an offloaded object: a fork gives the child a process
 * reference on every tracked one. */
void shim_fork_track(struct shim_sock *s);
void shim_fork_untrack(struct shim_sock *s);
/* The process that forked last from this image (atfork child handler). */
extern pid_t shim_forked_pid;

/* ---- exec (exec.c) ------------------------------------------------------------ */

/* DPSOCK_INHERIT=<control fd>:<pid>: set by the exec hooks for the new
 * image, read (and removed from the environment) by the shim's constructor. */
#define SHIM_INHERIT_ENV "DPSOCK_INHERIT"
/* true when this process holds offloaded sockets whose descriptors survive
 * exec (no FD_CLOEXEC). */
bool shim_sock_inheritable(void);
/* New image: re-attach over the inherited control connection ctl (EXEC)
 * and rebuild the shadow sockets of the descriptors it inherited.
 * Returns 0 or -errno (then nothing was inherited). */
int shim_attach_exec(int ctl);
/* Let the workers take the commands still in this thread's rings (exec:
 * the old image's channels die with it). */
void shim_thread_drain_self(void);
void shim_sock_adopt(void);

#endif /* DPSOCK_SHIM_PRIV_H */
