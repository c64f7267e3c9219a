/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec.c — a preloaded program that exec()s keeps its offloaded sockets
 * (docs/preload.md "exec", docs/design.md, decision 6).
 *
 * Old image (the exec hooks): when this process holds offloaded sockets
 * whose descriptors survive exec, it makes sure it has its own control
 * connection (a forked child joins its group first), clears that
 * connection's close-on-exec flag, and passes DPSOCK_INHERIT=<fd>:<pid> in
 * the environment of the new image. The connection staying open keeps the
 * group, and so the sockets, alive across exec.
 *
 * New image (the constructor): validates DPSOCK_INHERIT (removed from the
 * environment in every case: a grandchild exec()ed later gets it only from
 * these hooks), sends EXEC on the inherited connection (dpsockd frees the
 * old image's channels and waiters and answers WELCOME), and rebuilds the
 * shadow sockets of its inherited descriptors from the slots, matching the
 * kernel socket's inode the shim recorded in each slot's shim area.
 *
 * A new image that is not preloaded keeps the control connection open
 * without using it: the group lives until that process exits.
 */
#include <dirent.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "shim_priv.h"

#define HOOK DPSOCK_SHIM_EXPORT

extern char **environ;

/* ---- old image ------------------------------------------------------------ */

struct exec_env {
	char **envp;          /* NULL: exec unchanged */
	int ctl;
	int ctl_fdflags;
	char var[64];
};

/* envp without any DPSOCK_INHERIT, plus x->var. */
static char **
env_with(char *const *envp, const char *var)
{
	size_t n = 0, o = 0, vl = strlen(SHIM_INHERIT_ENV);
	char **e;

	while (envp != NULL && envp[n] != NULL)
		n++;
	e = malloc((n + 2) * sizeof(*e));
	if (e == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], SHIM_INHERIT_ENV, vl) != 0 || envp[i][vl] != '=')
			e[o++] = envp[i];
	e[o++] = (char *)var;
	e[o] = NULL;
	return e;
}

/* Decide whether the new image inherits; on yes, x->envp is the
 * environment to pass and the control socket survives exec. */
static void
exec_prepare(struct exec_env *x, char *const *envp)
{
	pid_t me = shim_getpid();
	int fl;

	x->envp = NULL;
	x->ctl = -1;
	/* this image's own process only: not a vfork()ed or posix_spawn()ed
	 * child (it shares the parent's memory, or never ran our fork
	 * handlers), and only when an offloaded descriptor survives exec */
	if (!(__atomic_load_n(&shim_proc.state, __ATOMIC_ACQUIRE) == 1 && shim_proc.pid == me) &&
	    shim_forked_pid != me)
		return;
	if (!shim_sock_inheritable())
		return;
	/* a forked child joins its group with its own connection */
	if (shim_attach() < 0 || shim_proc.ctl < 0)
		return;
	shim_thread_drain_self();
	fl = REAL(fcntl)(shim_proc.ctl, F_GETFD);
	if (fl < 0)
		return;
	snprintf(x->var, sizeof(x->var), "%s=%d:%d", SHIM_INHERIT_ENV, shim_proc.ctl, (int)me);
	x->envp = env_with(envp, x->var);
	if (x->envp == NULL)
		return;
	if (REAL(fcntl)(shim_proc.ctl, F_SETFD, fl & ~FD_CLOEXEC) < 0) {
		free(x->envp);
		x->envp = NULL;
		return;
	}
	x->ctl = shim_proc.ctl;
	x->ctl_fdflags = fl;
}

/* exec failed: back as before (errno kept). */
static void
exec_undo(struct exec_env *x)
{
	int e = errno;

	if (x->ctl >= 0)
		REAL(fcntl)(x->ctl, F_SETFD, x->ctl_fdflags);
	free(x->envp);
	errno = e;
}

HOOK int
execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_env x;
	int r;

	exec_prepare(&x, envp);
	r = REAL(execve)(path, argv, x.envp != NULL ? x.envp : envp);
	exec_undo(&x);
	return r;
}

HOOK int
execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

HOOK int
execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_env x;
	int r;

	exec_prepare(&x, envp);
	r = REAL(execvpe)(file, argv, x.envp != NULL ? x.envp : envp);
	exec_undo(&x);
	return r;
}

HOOK int
execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

HOOK int
fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_env x;
	int r;

	exec_prepare(&x, envp);
	r = REAL(fexecve)(fd, argv, x.envp != NULL ? x.envp : envp);
	exec_undo(&x);
	return r;
}

/* execl, execle, execlp: the argument list into an array, then as above.
 * want_env: execle's environment follows the terminating NULL. */
#define EXECL_ARGV(arg, argv, envp, want_env) \
	do { \
		va_list ap; \
		size_t n = 1; \
		va_start(ap, arg); \
		while (va_arg(ap, const char *) != NULL) \
			n++; \
		va_end(ap); \
		argv = __builtin_alloca((n + 1) * sizeof(char *)); \
		argv[0] = (char *)(arg); \
		va_start(ap, arg); \
		for (size_t i_ = 1; i_ <= n; i_++) \
			argv[i_] = va_arg(ap, char *); \
		if (want_env) \
			envp = va_arg(ap, char **); \
		va_end(ap); \
	} while (0)

HOOK int
execl(const char *path, const char *arg, ...)
{
	char **argv, **envp = environ;

	EXECL_ARGV(arg, argv, envp, 0);
	return execve(path, argv, envp);
}

HOOK int
execle(const char *path, const char *arg, ...)
{
	char **argv, **envp = NULL;

	EXECL_ARGV(arg, argv, envp, 1);
	return execve(path, argv, envp);
}

HOOK int
execlp(const char *file, const char *arg, ...)
{
	char **argv, **envp = environ;

	EXECL_ARGV(arg, argv, envp, 0);
	return execvpe(file, argv, envp);
}

/* ---- new image ------------------------------------------------------------ */

/* Is fd a connection to this dpsockd's control socket? */
static bool
inherit_valid_ctl(int fd)
{
	struct sockaddr_un sa, want = { .sun_family = AF_UNIX };
	socklen_t l = sizeof(int);
	struct stat st;
	int v = 0;

	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
		return false;
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) != 0 || v != AF_UNIX)
		return false;
	l = sizeof(int);
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &v, &l) != 0 || v != SOCK_SEQPACKET)
		return false;
	if ((size_t)snprintf(want.sun_path, sizeof(want.sun_path), "%s/%s%s",
			     shim_env.runtime_dir, shim_env.name, DPSOCK_PL_SOCK_SUFFIX) >=
	    sizeof(want.sun_path))
		return false;
	memset(&sa, 0, sizeof(sa));
	l = sizeof(sa);
	if (REAL(getpeername)(fd, (struct sockaddr *)&sa, &l) != 0 || sa.sun_family != AF_UNIX ||
	    l <= offsetof(struct sockaddr_un, sun_path))
		return false;
	sa.sun_path[sizeof(sa.sun_path) - 1] = '\0';
	return strcmp(sa.sun_path, want.sun_path) == 0;
}

/* "<fd>:<pid>", decimal, nothing else. */
static bool
inherit_parse(const char *v, int *fd, pid_t *pid)
{
	char *end;
	long a, b;

	if (*v < '0' || *v > '9')
		return false;
	a = strtol(v, &end, 10);
	if (*end != ':' || end[1] < '0' || end[1] > '9' || a < 0 || a > INT_MAX)
		return false;
	b = strtol(end + 1, &end, 10);
	if (*end != '\0' || b <= 0 || b > INT_MAX)
		return false;
	*fd = (int)a;
	*pid = (pid_t)b;
	return true;
}

__attribute__((constructor)) static void
inherit_init(void)
{
	const char *v = getenv(SHIM_INHERIT_ENV);
	char copy[64];
	pid_t pid = 0;
	int fd = -1, fl;

	if (v == NULL)
		return;
	snprintf(copy, sizeof(copy), "%s", v);
	/* never passed on by accident: only the exec hooks set it */
	unsetenv(SHIM_INHERIT_ENV);
	shim_env_load();
	if (!inherit_parse(copy, &fd, &pid) || pid != shim_getpid() || !shim_env.offload ||
	    !inherit_valid_ctl(fd)) {
		SHIM_LOG(INFO, "%s=%.40s: not this process's control connection; nothing "
			 "inherited", SHIM_INHERIT_ENV, copy);
		return;
	}
	fl = REAL(fcntl)(fd, F_GETFD);
	if (fl < 0 || REAL(fcntl)(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
		return;
	if (shim_attach_exec(fd) == 0)
		shim_sock_adopt();
}

/* ---- exec: the new image finds its inherited sockets (docs/preload.md) ---------- */

/* A slot the pre-exec image (or another process of the group) recorded
 * as belonging to the kernel socket of inode ino. */
struct adopt_cand {
	uint64_t ino;
	uint32_t slot;
	uint32_t kind;
	int taken;            /* adopted by a descriptor of this image */
};

/* Collect the slots of the socket of inode ino into s (slot[k] on worker k
 * for listeners and UDP sockets, slot[0] for a connection). Returns true
 * when the set is complete. */
static bool
adopt_slots(struct shim_sock *s, struct adopt_cand *c, size_t nc, uint64_t ino, uint32_t kind)
{
	uint32_t nw = shim_proc.n_workers;
	uint64_t have = 0;

	s->nslots = kind == DPSOCK_PL_TCP_CONN ? 1 : nw;
	for (size_t i = 0; i < nc; i++) {
		uint32_t k;

		if (c[i].ino != ino || c[i].kind != kind)
			continue;
		k = kind == DPSOCK_PL_TCP_CONN ? 0 : shim_slot_worker(c[i].slot);
		if (k >= s->nslots || k >= SHIM_MAX_WORKERS || (have & (1ull << k)) != 0)
			return false;   /* two connections, or two slots on one worker */
		have |= 1ull << k;
		s->slot[k] = c[i].slot;
		s->gen[k] = __atomic_load_n(&shim_slot(c[i].slot)->gen, __ATOMIC_ACQUIRE);
	}
	return have == (s->nslots >= 64 ? UINT64_MAX : (1ull << s->nslots) - 1);
}

static void
adopt_mark(struct adopt_cand *c, size_t nc, uint64_t ino)
{
	for (size_t i = 0; i < nc; i++)
		if (c[i].ino == ino)
			c[i].taken = 1;
}

/* Options the kernel socket remembers (every setsockopt reached it too). */
static void
adopt_opts(struct shim_sock *s, int fd)
{
	socklen_t l;
	struct timeval tv;
	int v;

#define GETINT(level, name, field) \
	do { l = sizeof(v); \
	     if (REAL(getsockopt)(fd, level, name, &v, &l) == 0) s->field = v; } while (0)
	GETINT(SOL_SOCKET, SO_REUSEADDR, reuseaddr);
	GETINT(SOL_SOCKET, SO_REUSEPORT, reuseport);
	GETINT(SOL_SOCKET, SO_KEEPALIVE, keepalive);
	if (s->type == SOCK_STREAM)
		GETINT(IPPROTO_TCP, TCP_NODELAY, nodelay);
	if (s->type == SOCK_DGRAM) {
		/* recvmsg's control messages follow the kernel socket's options */
		GETINT(IPPROTO_IP, IP_PKTINFO, pktinfo);
		if (s->family == AF_INET6)
			GETINT(IPPROTO_IPV6, IPV6_RECVPKTINFO, pktinfo6);
		GETINT(SOL_SOCKET, SO_TIMESTAMPING, ts_flags);
		s->ts_ing_opt = SO_TIMESTAMPING;
		l = sizeof(v);
		if (REAL(getsockopt)(fd, SOL_SOCKET, SO_TIMESTAMPNS, &v, &l) == 0 && v)
			s->ts_opt = SO_TIMESTAMPNS;
		l = sizeof(v);
		if (s->ts_opt == 0 && REAL(getsockopt)(fd, SOL_SOCKET, SO_TIMESTAMP, &v, &l) == 0 && v)
			s->ts_opt = SO_TIMESTAMP;
	}
#undef GETINT
	l = sizeof(s->linger);
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_LINGER, &s->linger, &l) != 0)
		memset(&s->linger, 0, sizeof(s->linger));
	for (int i = 0; i < 2; i++) {
		long ms;

		l = sizeof(tv);
		if (REAL(getsockopt)(fd, SOL_SOCKET, i ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &l) != 0)
			continue;
		ms = (long)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
		ms = tv.tv_sec == 0 && tv.tv_usec == 0 ? -1 : ms > 0x7fffffffL ? 0x7fffffffL : ms;
		if (i)
			s->sndtimeo_ms = (int)ms;
		else
			s->rcvtimeo_ms = (int)ms;
	}
}

/* The shadow object of inherited descriptor fd (kernel socket of inode
 * ino), or NULL when no complete set of slots names it. */
static struct shim_sock *
adopt_one(int fd, uint64_t ino, struct adopt_cand *c, size_t nc)
{
	struct shim_sock *s;
	struct dpsock_pl_slot *sl;
	struct shim_slot_area *a;
	uint32_t kind = 0, me = (uint32_t)shim_getpid();
	int type = 0, dom = 0, fl;
	socklen_t l = sizeof(type);
	bool mine = false;

	for (size_t i = 0; i < nc && kind == 0; i++)
		if (c[i].ino == ino)
			kind = c[i].kind;
	if (kind == 0)
		return NULL;
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &l) != 0 ||
	    (l = sizeof(dom), REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l)) != 0 ||
	    (dom != AF_INET && dom != AF_INET6) ||
	    type != (kind == DPSOCK_PL_UDP ? SOCK_DGRAM : SOCK_STREAM))
		return NULL;
	fl = REAL(fcntl)(fd, F_GETFL);
	s = shim_sock_new(type, fl >= 0 && (fl & O_NONBLOCK) != 0);
	if (s == NULL)
		return NULL;
	s->ino = ino;
	if (!adopt_slots(s, c, nc, ino, kind)) {
		SHIM_LOG(WARNING, "inherited socket %d: its slots are incomplete: kernel socket", fd);
		free(s);
		return NULL;
	}
	adopt_mark(c, nc, ino);
	sl = shim_sock_slot(s, 0);
	s->laddr = sl->laddr;
	s->lport = sl->lport;
	s->bound = 1;
	if (shim_slot_laddr6(sl) != NULL) {
		s->ip6 = 1;
		memcpy(&s->laddr6, sl->laddr6, 16);
	}
	s->family = dom;
	if (dom == AF_INET6) {
		struct sockaddr_in6 k;
		socklen_t kl = sizeof(k);
		int v = 0;

		l = sizeof(v);
		if (REAL(getsockopt)(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, &l) == 0)
			s->v6only = v;
		s->any6 = s->laddr == 0 && REAL(getsockname)(fd, (struct sockaddr *)&k, &kl) == 0 &&
			  k.sin6_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&k.sin6_addr);
		/* the kernel half (calls.c): a UDP socket's on "::" is read */
		s->khalf = s->any6 && kind == DPSOCK_PL_UDP;
		/* a UDP socket's slots take IPv6: bound for it alone, or on
		 * "::" of both families where dpsockd has IPv6 (calls.c) */
		s->udp6 = kind == DPSOCK_PL_UDP &&
			  (s->ip6 || (s->any6 && !s->v6only && shim_serves_ip6()));
	}
	if (kind == DPSOCK_PL_TCP_LISTENER) {
		/* a listener's kernel half listens ("::", or DPSOCK_LOOPBACK) */
		int acc = 0;
		socklen_t al = sizeof(acc);

		s->khalf = REAL(getsockopt)(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc;
	}
	if (kind == DPSOCK_PL_TCP_CONN) {
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		/* a connect still in progress reports its outcome once more */
		s->connect_reported = st != DPSOCK_PL_ST_CONNECTING;
		s->shut_wr = (__atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE) &
			      DPSOCK_PL_F_WR_SHUT) != 0;
	}
	adopt_opts(s, fd);
	/* this process holds it (it does already unless a forked child's
	 * copy never made it into the list) */
	a = shim_area(sl);
	for (int i = 0; i < SHIM_AREA_PIDS; i++)
		mine |= __atomic_load_n(&a->pids[i], __ATOMIC_ACQUIRE) == me;
	if (!mine)
		shim_area_pid_add(a, me);
	shim_fork_track(s);
	/* release: slots and geometry before mode (shim_sock_offloaded) */
	__atomic_store_n(&s->mode, kind == DPSOCK_PL_TCP_LISTENER ? SHIM_TCP_LISTEN :
			 kind == DPSOCK_PL_TCP_CONN ? SHIM_TCP_CONN : SHIM_UDP, __ATOMIC_RELEASE);
	return s;
}

/* Watch entries of the old image's waiters (dpsockd freed them on EXEC;
 * their headers still name this pid, no waiter of the new image exists
 * yet): free them, or the slots would run out of entries. */
static void
adopt_unwatch(struct dpsock_pl_slot *sl)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint32_t me = (uint32_t)shim_getpid();

	for (int j = 0; j < DPSOCK_PL_WATCH; j++) {
		uint32_t w = __atomic_load_n(&sl->watch[j], __ATOMIC_ACQUIRE);
		const struct dpsock_pl_waiter *h;

		if (w == 0 || w - 1 >= g->max_waiters)
			continue;
		h = (const struct dpsock_pl_waiter *)(const void *)(shim_proc.seg + g->off_waiters +
								   (uint64_t)(w - 1) * g->waiter_stride);
		/* acquire: pairs with the release store of owner_pid in
		 * shim_waiter_new */
		if (__atomic_load_n(&h->owner_pid, __ATOMIC_ACQUIRE) != me)
			continue;
		__atomic_store_n(&sl->queued[j], 0, __ATOMIC_RELAXED);
		/* release: queued is clear before the entry can be reused
		 * (shim_sock_watch's CAS acquires it) */
		__atomic_compare_exchange_n(&sl->watch[j], &w, 0, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
	}
}

void
shim_sock_adopt(void)
{
	const struct dpsock_pl_seg *g = shim_seg();
	uint32_t nslots = g->n_workers * g->slots_per_worker, me = (uint32_t)shim_getpid();
	struct adopt_cand *c;
	struct shim_sock **got = NULL;
	size_t nc = 0, ngot = 0;
	unsigned int adopted = 0, released = 0;
	struct dirent *de;
	DIR *d;

	c = calloc(nslots, sizeof(*c));
	if (c == NULL)
		return;
	for (uint32_t n = 0; n < nslots; n++) {
		struct dpsock_pl_slot *sl;
		struct shim_slot_area *a;
		uint32_t kind, k = n / g->slots_per_worker;

		/* never handed out: skip the rest of worker k's (untouched
		 * memory stays untouched) */
		if (n % g->slots_per_worker >= __atomic_load_n(&g->slots_hi[k], __ATOMIC_RELAXED)) {
			n = (k + 1) * g->slots_per_worker - 1;
			continue;
		}
		sl = shim_slot(n);
		a = shim_area(sl);
		kind = __atomic_load_n(&sl->kind, __ATOMIC_ACQUIRE);

		adopt_unwatch(sl);
		if (kind == DPSOCK_PL_FREE || kind > DPSOCK_PL_UDP ||
		    __atomic_load_n(&a->ino, __ATOMIC_RELAXED) == 0 ||
		    __atomic_load_n(&a->gen, __ATOMIC_RELAXED) !=
			    __atomic_load_n(&sl->gen, __ATOMIC_ACQUIRE))
			continue;
		/* closed: CLOSE went out, the slot is no longer the group's */
		if (__atomic_load_n(&shim_area(shim_slot(n))->closed, __ATOMIC_ACQUIRE))
			continue;
		c[nc].ino = a->ino;
		c[nc].slot = n;
		c[nc].kind = kind;
		nc++;
	}
	d = nc > 0 ? opendir("/proc/self/fd") : NULL;
	while (d != NULL && (de = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		struct shim_sock *s = NULL;
		struct stat st;

		if (*end != '\0' || fd < 0 || fd > INT_MAX || fd == dirfd(d) ||
		    fd == shim_proc.ctl || shim_sock_get((int)fd) != NULL)
			continue;
		if (fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode))
			continue;
		for (size_t i = 0; i < ngot && s == NULL; i++)
			if (got[i]->ino == (uint64_t)st.st_ino)
				s = got[i];
		if (s != NULL) {           /* dup of one already adopted */
			if (shim_fdtab_set((int)fd, s) == 0)
				__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
			continue;
		}
		s = adopt_one((int)fd, (uint64_t)st.st_ino, c, nc);
		if (s == NULL)
			continue;
		if ((ngot & 15) == 0) {
			struct shim_sock **ng = realloc(got, (ngot + 16) * sizeof(*ng));

			if (ng == NULL) {
				shim_sock_unref(s);
				continue;
			}
			got = ng;
		}
		if (shim_fdtab_set((int)fd, s) < 0) {
			shim_sock_unref(s);
			continue;
		}
		got[ngot++] = s;
		adopted++;
	}
	if (d != NULL)
		closedir(d);
	/* Sockets this process held before exec whose descriptors did not
	 * survive it (close-on-exec): let go of them as close() would. */
	for (size_t i = 0; i < nc; i++) {
		struct shim_sock tmp;
		struct shim_slot_area *a;
		bool mine = false;

		if (c[i].taken || (c[i].kind != DPSOCK_PL_TCP_CONN && shim_slot_worker(c[i].slot) != 0))
			continue;
		a = shim_area(shim_slot(c[i].slot));
		for (int j = 0; j < SHIM_AREA_PIDS; j++)
			mine |= __atomic_load_n(&a->pids[j], __ATOMIC_ACQUIRE) == me;
		if (!mine)
			continue;
		memset(&tmp, 0, sizeof(tmp));
		tmp.ino = c[i].ino;
		if (!adopt_slots(&tmp, c, nc, c[i].ino, c[i].kind)) {
			/* incomplete: drop only our reference */
			shim_area_pid_swap(a, me, 0);
			continue;
		}
		adopt_mark(c, nc, c[i].ino);
		tmp.mode = SHIM_TCP_CONN;  /* any offloaded mode: sock_release_slots */
		shim_sock_release_slots(&tmp);
		released++;
	}
	free(got);
	free(c);
	SHIM_LOG(INFO, "exec: %u inherited offloaded socket(s) found again, %u left behind "
		 "released", adopted, released);
}
