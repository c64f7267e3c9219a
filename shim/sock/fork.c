/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork.c — offloaded sockets across fork(): every offloaded object is
 * tracked, and pthread_atfork handlers give the child its own process
 * reference on each.
 */
#include <stdlib.h>

#include "sock/sock.h"

#define HOOK DPSOCK_SHIM_EXPORT


/* Every offloaded object, for fork (process references). */
static pthread_mutex_t objs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_sock **objs;
static size_t n_objs, cap_objs;


static void objs_track_fork(void);

void
shim_fork_track(struct shim_sock *s)
{
	objs_track_fork();
	pthread_mutex_lock(&objs_lock);
	if (n_objs == cap_objs) {
		size_t cap = cap_objs ? cap_objs * 2 : 64;
		struct shim_sock **o = realloc(objs, cap * sizeof(*o));

		if (o == NULL) {
			pthread_mutex_unlock(&objs_lock);
			SHIM_LOG(WARNING, "out of memory: a forked child will not share a socket");
			return;
		}
		objs = o;
		cap_objs = cap;
	}
	objs[n_objs++] = s;
	pthread_mutex_unlock(&objs_lock);
}

void
shim_fork_untrack(struct shim_sock *s)
{
	pthread_mutex_lock(&objs_lock);
	for (size_t i = 0; i < n_objs; i++)
		if (objs[i] == s) {
			objs[i] = objs[--n_objs];
			break;
		}
	pthread_mutex_unlock(&objs_lock);
}


/* ---- fork ------------------------------------------------------------------------ */

/* The child shares every offloaded socket. Across the fork a second copy of
 * the parent's pid holds each one, so that neither side closing first can
 * free it under the other; the child turns that copy into its own pid
 * before fork returns there. Done in pthread_atfork handlers (registered at
 * the first offloaded socket) so that forks inside libc (daemon(), ...)
 * count too. */

static void
pid_forget(void)
{
	__atomic_store_n(&shim_pid_cache, 0, __ATOMIC_RELAXED);
	shim_tid_cache = 0;   /* the child's one thread: a copy of the forking one's */
}

/* Every fork through libc forgets the cached pid and thread id in the
 * child, whether or not offloaded sockets exist yet. */
__attribute__((constructor)) static void
pid_cache_init(void)
{
	pthread_atfork(NULL, NULL, pid_forget);
}

static uint32_t fork_parent;
static int fork_spare = -1;
pid_t shim_forked_pid;

static void
atfork_prepare(void)
{
	pthread_mutex_lock(&shim_proc.lock);
	pthread_mutex_lock(&objs_lock);
	fork_parent = (uint32_t)shim_getpid();
	/* the child's way back to dpsockd, opened while we still can (the
	 * child may drop privileges or chroot before it attaches) */
	fork_spare = -1;
	if (shim_proc.state == 1) {
		int e = errno;

		fork_spare = shim_ctl_connect();
		errno = e;
	}
	for (size_t i = 0; i < n_objs; i++)
		shim_area_pid_add(shim_area(shim_sock_slot(objs[i], 0)), fork_parent);
}

static void
atfork_parent(void)
{
	if (fork_spare >= 0)
		REAL(close)(fork_spare);
	fork_spare = -1;
	pthread_mutex_unlock(&objs_lock);
	pthread_mutex_unlock(&shim_proc.lock);
}

static void
atfork_child(void)
{
	uint32_t me = (uint32_t)shim_getpid();

	shim_forked_pid = (pid_t)me;
	if (shim_proc.spare_ctl >= 0)      /* a grandparent's, never used */
		REAL(close)(shim_proc.spare_ctl);
	shim_proc.spare_ctl = fork_spare;
	fork_spare = -1;
	for (size_t i = 0; i < n_objs; i++)
		shim_area_pid_swap(shim_area(shim_sock_slot(objs[i], 0)), fork_parent, me);
	pthread_mutex_unlock(&objs_lock);
	pthread_mutex_unlock(&shim_proc.lock);
}

static void
atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void
objs_track_fork(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, atfork_register);
}

HOOK pid_t
fork(void)
{
	pid_t pid = REAL(fork)();

	if (pid < 0) {
		/* no child: drop the copies the prepare handler added */
		int e = errno;

		pthread_mutex_lock(&objs_lock);
		for (size_t i = 0; i < n_objs; i++)
			shim_area_pid_swap(shim_area(shim_sock_slot(objs[i], 0)), (uint32_t)shim_getpid(), 0);
		pthread_mutex_unlock(&objs_lock);
		errno = e;
	}
	return pid;
}
