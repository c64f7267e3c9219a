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

#include "preload_wire.h"
#include "spsc_ring.h"

#define DPSOCK_SHIM_EXPORT __attribute__((visibility("default")))

/* ---- real libc functions (hooks.def) ------------------------------------ */

#define DPSOCK_HOOK(ret, name, params, flags, bad, kern) \
	typedef ret (*dpsock_real_##name##_t) params;
#include "hooks.def"
#undef DPSOCK_HOOK

struct dpsock_real {
#define DPSOCK_HOOK(ret, name, params, flags, bad, kern) dpsock_real_##name##_t name;
#include "hooks.def"
#undef DPSOCK_HOOK
};

extern struct dpsock_real dpsock_real;
extern int dpsock_real_ready;
void dpsock_real_resolve(void);

/* REAL(name): libc's function, resolved once (thread-safe) on first use. */
static inline const struct dpsock_real *
dpsock_real_get(void)
{
	/* acquire: pairs with the release in dpsock_real_resolve's once-routine */
	if (__builtin_expect(!__atomic_load_n(&dpsock_real_ready, __ATOMIC_ACQUIRE), 0))
		dpsock_real_resolve();
	return &dpsock_real;
}
#define REAL(name) (dpsock_real_get()->name)

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

struct dpsock_env {
	char name[64];            /* DPSOCK_NAME */
	char runtime_dir[256];    /* DPSOCK_RUNTIME_DIR */
	char app_id[64];          /* DPSOCK_APPLICATION_ID */
	char prog[64];            /* program name at start (before setproctitle) */
	long rx_poll_us;          /* DPSOCK_RX_POLL: -1 = spin forever */
	long select_poll_us;      /* DPSOCK_SELECT_POLL */
	int offload;              /* DPSOCK_OFFLOAD */
	int log_level;            /* DPSOCK_LOG_LEVEL */
	int log_fd;               /* DPSOCK_LOG_FILE, else stderr */
};

extern struct dpsock_env dpsock_env;
void dpsock_env_load(void);   /* once; thread-safe */
void dpsock_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define SHIM_LOG(lvl, ...) do { \
	if (DPSOCK_LOG_##lvl <= dpsock_env.log_level) dpsock_log(DPSOCK_LOG_##lvl, __VA_ARGS__); \
} while (0)
uint64_t dpsock_now_us(void);

/* ---- process attach, threads, channels, waiters (attach.c) --------------- */

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
};

extern struct shim_proc shim_proc;

struct shim_waiter {
	int id;                   /* -1: none */
	int efd;
	pid_t pid;
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
/* true when waiter id's owning process is gone (its watch entries may be
 * taken back). */
bool shim_waiter_dead(uint32_t id);
/* true when dpsockd stopped or the control socket hung up. */
bool shim_daemon_gone(void);
/* Sleep until the waiter's eventfd, the control socket, or timeout_ms
 * (-1 forever). Extra kernel fds may ride along (nfds entries of pfd, whose
 * revents are filled). Returns the real poll's result or -errno. */
int shim_sleep(struct shim_waiter *w, struct pollfd *pfd, nfds_t nfds, int timeout_ms,
	       const sigset_t *sigmask);

/* Segment geometry helpers. */
struct dpsock_pl_slot *shim_slot(uint32_t n);
void *shim_slot_rx(uint32_t n);
void *shim_slot_tx(uint32_t n);
static inline const struct dpsock_pl_seg *shim_seg(void)
{
	return (const struct dpsock_pl_seg *)shim_proc.seg;
}

/* ---- per-slot shim area: process-shared locks, process references -------- */

#define SHIM_AREA_PIDS 9

struct shim_slot_area {
	uint32_t rx_lock;         /* owner tid, 0 = free; FUTEX_WAITERS bit */
	uint32_t tx_lock;
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

void shim_lock(uint32_t *lock);
void shim_unlock(uint32_t *lock);

/* ---- socket shadow objects (sock.c) -------------------------------------- */

enum shim_sock_mode {
	SHIM_UNDECIDED = 0,       /* AF_INET, no offload decision yet */
	SHIM_KERNEL,              /* decided: stays a kernel socket */
	SHIM_TCP_LISTEN,
	SHIM_TCP_CONN,
	SHIM_UDP,
};

struct shim_sock {
	int refs;                 /* fds sharing this object (dup) */
	pthread_mutex_t lock;
	int type;                 /* SOCK_STREAM / SOCK_DGRAM */
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
};

struct shim_sock *shim_sock_get(int fd);      /* NULL: not ours */
/* tcpinfo.c: getsockopt TCP_INFO / TCP_CONGESTION of an offloaded TCP
 * socket, answered by its worker. 0 or -errno. */
int shim_tcp_info(struct shim_sock *s, void *val, socklen_t *len);
int shim_tcp_congestion(struct shim_sock *s, void *val, socklen_t *len);
/* true if fd is an offloaded socket (mode >= SHIM_TCP_LISTEN). */
static inline bool shim_sock_offloaded(const struct shim_sock *s)
{
	return s != NULL && __atomic_load_n(&s->mode, __ATOMIC_ACQUIRE) >= SHIM_TCP_LISTEN;
}
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

/* ---- readiness (mux.c) ---------------------------------------------------- */

void shim_epoll_fd_closed(int fd, struct shim_sock *s);
void shim_epoll_close(int epfd);
bool shim_epoll_is(int epfd);
void shim_fork_child(void);

/* ---- exec (exec.c, sock.c) ------------------------------------------------- */

/* DPSOCK_INHERIT=<control fd>:<pid>: set by the exec hooks for the new
 * image, read (and removed from the environment) by the shim's constructor. */
#define SHIM_INHERIT_ENV "DPSOCK_INHERIT"
/* The process that forked last from this image (atfork child handler). */
extern pid_t shim_forked_pid;
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

/* Blocking wait for cond(s) on one socket; budget_us spin then sleep.
 * timeout_ms: -1 forever. Returns 1 when cond true, 0 on timeout,
 * -EINTR, or -ECONNABORTED when dpsockd went away. */
int shim_wait_sock(struct shim_sock *s, uint32_t want, int timeout_ms);

#endif /* DPSOCK_SHIM_PRIV_H */
