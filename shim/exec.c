/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exec.c — a preloaded program that exec()s keeps its offloaded sockets
 * (docs/preload.md "exec", DESIGN.md decision 6).
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
#include <limits.h>
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
	pid_t me = getpid();
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
			     dpsock_env.runtime_dir, dpsock_env.name, DPSOCK_PL_SOCK_SUFFIX) >=
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
	dpsock_env_load();
	if (!inherit_parse(copy, &fd, &pid) || pid != getpid() || !dpsock_env.offload ||
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
