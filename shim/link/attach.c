/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attach.c — the process's attachment to dpsockd (docs/preload.md
 * "Attach"): the control socket and its requests, HELLO/EXEC and WELCOME
 * (group segment, wake page, worker eventfds), what dpsockd serves (the
 * wake page's net view), and whether dpsockd is gone. The segment's slots
 * and locks are in slot.c, waiters and sleeping in waiter.c, threads'
 * channels and commands in channel.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/un.h>

#include "link/link_priv.h"

struct shim_proc shim_proc = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.ctl = -1,
	.spare_ctl = -1,
};

/* ---- control socket ------------------------------------------------------- */

/* Send one message (+fds) and receive the answer (+fds). Caller holds
 * shim_proc.lock. Returns 0 or -errno; *nrfds = fds received. */
static int
ctl_call(struct dpsock_pl_msg *m, const int *fds, int nfds,
	 struct dpsock_pl_msg *ans, int *rfds, int *nrfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DPSOCK_PL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	m->magic = DPSOCK_PL_MAGIC;
	m->version = DPSOCK_PL_VERSION;
	m->n_fds = (uint32_t)nfds;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = REAL(sendmsg)(shim_proc.ctl, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	iov.iov_base = ans;
	iov.iov_len = sizeof(*ans);
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	do
		n = REAL(recvmsg)(shim_proc.ctl, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0) {
		shim_proc.ctl_hup = 1;
		return -ECONNRESET;
	}
	*nrfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (rfds != NULL && *nrfds < DPSOCK_PL_MAX_FDS)
					rfds[(*nrfds)++] = fd;
				else
					REAL(close)(fd);
			}
		}
	}
	if ((size_t)n != sizeof(*ans) || ans->magic != DPSOCK_PL_MAGIC)
		return -EPROTO;
	return 0;
}

int
shim_ctl_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s%s", shim_env.runtime_dir,
			     shim_env.name, DPSOCK_PL_SOCK_SUFFIX) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = REAL(socket)(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* blocks while dpsockd's backlog is full; a signal then ends it with
	 * EINTR and leaves the socket unconnected (AF_UNIX): try again */
	while (REAL(connect)(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		REAL(close)(fd);
		return -e;
	}
	return fd;
}

static void
close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		REAL(close)(fds[i]);
}

/* HELLO / WELCOME, or (inherited >= 0: the control connection an exec()ed
 * image inherited) EXEC / WELCOME; caller holds the lock. */
static int
attach_locked(uint64_t token, int inherited)
{
	struct dpsock_pl_msg m = { .type = DPSOCK_PL_HELLO, .token = token }, a;
	int fds[DPSOCK_PL_MAX_FDS], nfds = 0, fd, r;
	const struct dpsock_pl_seg *g;
	void *seg, *wake;

	if (inherited >= 0) {
		m.type = DPSOCK_PL_EXEC;
		fd = inherited;
	} else if (token != 0 && shim_proc.spare_ctl >= 0) {
		/* a forked child: the connection its parent opened for it at
		 * fork, so that joining needs neither the socket's path nor
		 * the rights to it (a child that dropped privileges or
		 * changed its root) */
		fd = shim_proc.spare_ctl;
		shim_proc.spare_ctl = -1;
	} else {
		fd = shim_ctl_connect();
	}
	if (fd < 0)
		return fd;
	shim_proc.ctl = fd;
	shim_proc.ctl_hup = 0;
	snprintf(m.text, sizeof(m.text), "%s", shim_env.prog);
	r = ctl_call(&m, NULL, 0, &a, fds, &nfds);
	if (r == 0 && (a.type != DPSOCK_PL_WELCOME || a.status != 0))
		r = a.status != 0 ? a.status : -EPROTO;
	if (r == 0 && (nfds < 2 || a.n_workers == 0 || a.n_workers > SHIM_MAX_WORKERS ||
		       (uint32_t)nfds != 2 + a.n_workers || a.seg_size < DPSOCK_PL_SEG_HDR))
		r = -EPROTO;
	if (r < 0) {
		if (a.type == DPSOCK_PL_WELCOME && a.text[0] != '\0')
			SHIM_LOG(WARNING, "dpsockd refused the attach: %.64s", a.text);
		close_fds(fds, nfds);
		goto fail;
	}
	if (shim_proc.seg != NULL && token != 0 && shim_proc.seg_size == a.seg_size) {
		/* forked child joining its group: the inherited mapping is the
		 * same memfd; keep it. */
		seg = shim_proc.seg;
	} else {
		seg = mmap(NULL, a.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
		if (seg == MAP_FAILED) {
			r = -errno;
			/* a reservation: address space, not memory (docs/preload.md
			 * "Thousands of sockets") */
			SHIM_LOG(WARNING, "mapping dpsockd's segment (%llu GiB of address space, "
				 "touched as sockets open) failed: %s; under a limit on address "
				 "space (ulimit -v) it needs room, or dpsockd a smaller preload.slots",
				 (unsigned long long)(a.seg_size >> 30), strerror(-r));
			close_fds(fds, nfds);
			goto fail;
		}
	}
	wake = mmap(NULL, a.wake_size, PROT_READ, MAP_SHARED, fds[1], 0);
	if (wake == MAP_FAILED) {
		r = -errno;
		if (seg != shim_proc.seg)
			munmap(seg, a.seg_size);
		close_fds(fds, nfds);
		goto fail;
	}
	REAL(close)(fds[0]);
	REAL(close)(fds[1]);
	g = seg;
	if (g->magic != DPSOCK_PL_SEG_MAGIC || g->version != DPSOCK_PL_VERSION ||
	    g->n_workers != a.n_workers) {
		SHIM_LOG(WARNING, "dpsockd's segment: magic %#x version %u, this library speaks "
			 "version %u: not attached", g->magic, g->version, DPSOCK_PL_VERSION);
		r = -EPROTO;
		close_fds(fds + 2, nfds - 2);
		munmap(wake, a.wake_size);
		if (seg != shim_proc.seg)
			munmap(seg, a.seg_size);
		goto fail;
	}
	/* The segment is a reservation of tens of GiB (docs/preload.md
	 * "Thousands of sockets"): a core dump of the program leaves out the
	 * wait rings and the FIFOs' data, keeping the header, channels and
	 * slots. Checked against the size: the header is dpsockd's. */
	if (g->off_waiters < g->off_slots && g->off_data < a.seg_size && g->off_slots <= g->off_data) {
		madvise(seg + g->off_waiters, g->off_slots - g->off_waiters, MADV_DONTDUMP);
		madvise(seg + g->off_data, a.seg_size - g->off_data, MADV_DONTDUMP);
	}
	if (shim_proc.wake != NULL)
		munmap((void *)shim_proc.wake, shim_proc.wake_size);
	for (uint32_t k = 0; k < SHIM_MAX_WORKERS; k++) {
		if (shim_proc.worker_efd[k] > 0 && k < shim_proc.n_workers)
			REAL(close)(shim_proc.worker_efd[k]);
		shim_proc.worker_efd[k] = k < a.n_workers ? fds[2 + k] : -1;
	}
	shim_proc.seg = seg;
	shim_proc.seg_size = a.seg_size;
	shim_proc.wake = wake;
	shim_proc.wake_size = a.wake_size;
	shim_proc.n_workers = a.n_workers;
	shim_proc.token = g->token;
	SHIM_LOG(INFO, "attached to dpsockd '%s' (%u workers, group %u)", shim_env.name,
		 a.n_workers, g->group);
	return 0;
fail:
	REAL(close)(shim_proc.ctl);
	shim_proc.ctl = -1;
	return r;
}

int
shim_attach(void)
{
	pid_t me = shim_getpid();
	int r;

	if (__builtin_expect(__atomic_load_n(&shim_proc.state, __ATOMIC_ACQUIRE) == 1 &&
			     shim_proc.pid == me, 1))
		return 0;
	shim_env_load();
	if (!shim_env.offload)
		return -ENOENT;
	pthread_mutex_lock(&shim_proc.lock);
	if (shim_proc.pid == me && shim_proc.state != 0) {
		r = shim_proc.state == 1 ? 0 : -ENOENT;
		pthread_mutex_unlock(&shim_proc.lock);
		return r;
	}
	if (shim_proc.pid != me && shim_proc.state == 1) {
		/* forked child: the parent's control connection stays the
		 * parent's; join the group with the segment's token, THEN drop
		 * the copy of the parent's connection fork gave us. The other
		 * order loses the group when the parent has exited already (a
		 * daemon()izing server): our copy was its last reference, and
		 * dpsockd ends a group whose last connection closes. */
		int parent_ctl = shim_proc.ctl;

		shim_proc.ctl = -1;
		r = attach_locked(shim_proc.token, -1);
		REAL(close)(parent_ctl);
		shim_proc.spare_ctl = -1;   /* taken by attach_locked (or closed) */
	} else {
		r = attach_locked(0, -1);
	}
	shim_proc.pid = me;
	if (r < 0) {
		if (r == -ENOENT || r == -ECONNREFUSED)
			SHIM_LOG(NOTICE, "dpsockd '%s' is not running (%s/%s%s: %s): sockets stay "
				 "kernel sockets", shim_env.name, shim_env.runtime_dir,
				 shim_env.name, DPSOCK_PL_SOCK_SUFFIX, strerror(-r));
		else
			SHIM_LOG(WARNING, "cannot attach to dpsockd '%s': %s: sockets stay kernel "
				 "sockets", shim_env.name, strerror(-r));
		__atomic_store_n(&shim_proc.state, -1, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&shim_proc.state, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&shim_proc.lock);
	return r;
}

int
shim_attach_exec(int ctl)
{
	int r;

	shim_env_load();
	pthread_mutex_lock(&shim_proc.lock);
	if (shim_proc.state != 0 || !shim_env.offload) {
		pthread_mutex_unlock(&shim_proc.lock);
		REAL(close)(ctl);
		return -EALREADY;
	}
	r = attach_locked(0, ctl);   /* closes ctl on failure */
	if (r == 0) {
		shim_proc.pid = shim_getpid();
		__atomic_store_n(&shim_proc.state, 1, __ATOMIC_RELEASE);
	} else {
		/* state stays 0: a later socket call attaches afresh */
		SHIM_LOG(WARNING, "cannot take over the control connection inherited through "
			 "exec: %s: inherited sockets are plain kernel sockets", strerror(-r));
	}
	pthread_mutex_unlock(&shim_proc.lock);
	return r;
}

/* One request, one status reply (waiters, channels); fd passed when >= 0. */
int
shim_ctl_simple(uint16_t type, uint32_t id, uint32_t arg, int fd, uint32_t *out_id)
{
	struct dpsock_pl_msg m = { .type = type, .id = id, .arg = arg }, a;
	int nr = 0, r;

	pthread_mutex_lock(&shim_proc.lock);
	if (shim_proc.ctl < 0) {
		pthread_mutex_unlock(&shim_proc.lock);
		return -ECONNRESET;
	}
	r = ctl_call(&m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, &a, NULL, &nr);
	pthread_mutex_unlock(&shim_proc.lock);
	if (r == 0 && a.type != DPSOCK_PL_REPLY)
		r = -EPROTO;
	if (r == 0)
		r = a.status;
	if (r == 0 && out_id != NULL)
		*out_id = a.id;
	return r;
}

/* ---- what dpsockd serves ------------------------------------------------------ */

void
shim_netview(struct dpsock_pl_netview *out)
{
	const struct dpsock_pl_netview *nv;

	memset(out, 0, sizeof(*out));
	if (shim_proc.wake == NULL ||
	    shim_proc.wake_size < DPSOCK_PL_WAKE_NETVIEW + sizeof(*nv))
		return;
	nv = (const struct dpsock_pl_netview *)(const void *)
		((const unsigned char *)shim_proc.wake + DPSOCK_PL_WAKE_NETVIEW);
	for (int tries = 0; tries < 1000; tries++) {
		/* acquire: pairs with the daemon's release of an even seq */
		uint32_t s1 = __atomic_load_n(&nv->seq, __ATOMIC_ACQUIRE), s2;

		if (s1 & 1) {
			shim_cpu_relax();
			continue;
		}
		memcpy(out, nv, sizeof(*out));
		/* acquire fence: the copy is done before seq is read again;
		 * pairs with the daemon's release fence after its odd seq */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&nv->seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			break;
	}
	if (out->n_ifaces > DPSOCK_PL_MAX_ADDRS)
		out->n_ifaces = DPSOCK_PL_MAX_ADDRS;
	if (out->n_routes > DPSOCK_PL_MAX_ROUTES)
		out->n_routes = DPSOCK_PL_MAX_ROUTES;
}

/* ---- dpsockd gone ------------------------------------------------------------ */

bool
shim_daemon_gone(void)
{
	if (shim_proc.seg == NULL)
		return false;
	if (__atomic_load_n(&((struct dpsock_pl_seg *)(void *)shim_proc.seg)->state,
			    __ATOMIC_ACQUIRE) == DPSOCK_PL_STOPPED || shim_proc.ctl_hup)
		return true;
	/* dpsockd killed: only the control socket's hang-up tells. A sleeping
	 * call sees it in its poll set; between sleeps, look at most every
	 * 10 ms (this runs on every readiness check). */
	if (shim_proc.ctl >= 0) {
		static uint64_t last;
		uint64_t now = shim_now_us();

		if (now - __atomic_load_n(&last, __ATOMIC_RELAXED) >= 10000) {
			struct pollfd p = { shim_proc.ctl, 0, 0 };
			int saved = errno;

			__atomic_store_n(&last, now, __ATOMIC_RELAXED);
			if (REAL(poll)(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
				shim_proc.ctl_hup = 1;
			errno = saved;
		}
	}
	return shim_proc.ctl_hup != 0;
}

void
shim_daemon_hung_up(void)
{
	shim_proc.ctl_hup = 1;
}
