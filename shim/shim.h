/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shim.h — what every part of libdpsock_preload.so (the LD_PRELOAD shim)
 * stands on: libc's real functions, the DPSOCK_* environment and the
 * logger (env.c), the pid and thread id caches, time-outs, what a hook's
 * body returns, and the signal counters a wait reads (signal.c). It calls
 * nothing else of the shim. Links neither DPDK nor lwIP: libc (dlsym,
 * pthread) only. docs/preload.md tells the behaviour; abi/preload_wire.h
 * the wire format.
 *
 * Error convention inside the shim: helpers return 0 / a count, or -errno;
 * only the exported hooks turn that into -1 + errno, exactly as libc.
 *
 * Above it, each folder with the header that says what the others may use
 * of it, from the bottom up: link/ (dpsockd), sock/ (the shadow socket),
 * offload/ (the decision, what the workers apply), io/ (TCP, UDP, FIFOs,
 * readiness), then poll/ and extra/; calls.c and exec.c (shim_priv.h) use
 * them all (docs/architecture.md, "The shim's folders").
 */
#ifndef DPSOCK_SHIM_H
#define DPSOCK_SHIM_H

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

/* DPSOCK_RX_POLL / DPSOCK_SELECT_POLL unset: the wait chooses its spin
 * (waiter.c, shim_spin_budget). */
#define SHIM_POLL_AUTO (-2L)

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

/* ---- signals (signal.c) --------------------------------------------------------- */

/* Signal handlers this thread ran so far (a wait that sees it move was
 * interrupted), and whether the last one had SA_RESTART. */
unsigned int shim_sig_count(void);
bool shim_sig_restarts(void);

#endif /* DPSOCK_SHIM_H */
