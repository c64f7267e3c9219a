/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handover.c — the two processes of a takeover (takeover.h).
 *
 * The holder runs a thread ("dpsock-tko") on <runtime_dir>/<name>.takeover
 * (SOCK_SEQPACKET, root's alone). One exchange at a time:
 *
 *   new     HELLO   format version, the configuration's workers and
 *                   interfaces, its pid
 *   holder  ACCEPT  or REFUSE with the reason (nothing stopped)
 *   new             EAL, workers, port probes (minutes at most)
 *   new     GO
 *   holder          freezes: the app's control thread first (it may be in
 *                   the middle of a removal that waits for the workers),
 *                   then each worker at the top of its loop, which writes
 *                   its part of the image and waits; the app writes the
 *                   control side's part; AF_XDP ports stop (one socket per
 *                   queue: the new process binds its own); af_packet
 *                   ports stay (both processes see the frames: the new
 *                   one takes in what came during the freeze)
 *   holder  IMAGE   a memfd with the image, and every descriptor it names
 *                   (in FDS messages of at most TKO_FDS_PER_MSG)
 *   new             starts its ports, restores (main side, then each
 *                   worker), starts the app's control thread
 *   new     DONE    the holder's workers leave their loops without tearing
 *                   down, and it exits 0 leaving what the programs share
 *                   (segments, names, connections) to the new process
 *
 * Until DONE nothing of the holder's is lost: a REFUSE, an ABORT, the new
 * process dying (EOF) or a time-out make it start its stopped ports again
 * and resume. A holder that dies instead leaves the new process with the
 * image (if IMAGE came: it goes on) or without (it stops; the programs get
 * the errors of a daemon that stopped).
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "dpsock_build_config.h"

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "sharing/filter_priv.h"
#include "sock/sock_priv.h"
#include "core/log_priv.h"
#include "takeover.h"

#define TKO_MAGIC 0x4b545044u        /* "DPTK" */
#define TKO_FDS_PER_MSG 250u         /* below the kernel's SCM_MAX_FD (253) */
#define TKO_HELLO_TIMEOUT_MS 5000
#define TKO_GO_TIMEOUT_MS 120000     /* the new process's EAL and port probes */
#define TKO_DONE_TIMEOUT_MS 60000    /* its ports and restore */
#define TKO_FREEZE_TIMEOUT_MS 5000

enum tko_type {
	TKO_HELLO = 1,
	TKO_ACCEPT,
	TKO_REFUSE,
	TKO_GO,
	TKO_IMAGE,
	TKO_FDS,
	TKO_DONE,
	TKO_ABORT,
};

struct tko_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	int32_t status;
	uint32_t n_fds;           /* descriptors that come with this message */
	uint64_t a, b, c;
	char text[384];
};

/* What the hello compares: the same workers and interfaces, or no takeover. */
struct tko_compat {
	uint32_t app_wire;        /* the app's wire version (the preload's) */
	uint32_t stats_block;     /* bytes of a worker's counter block */
	uint32_t n_workers;       /* the configuration's list (0: EAL's lcores) */
	uint32_t workers[DPSOCK_MAX_WORKERS];
	uint32_t n_ifaces;
	char ports[DPSOCK_MAX_PORTS][64];
	uint32_t addr[DPSOCK_MAX_PORTS];
	uint8_t shared[DPSOCK_MAX_PORTS];
	/* since ports shared with the kernel are handed over; a hello that
	 * ends before it (an older build) has none */
	uint32_t caps;
};

/* What the new process can take over (tko_compat.caps). */
#define TKO_CAP_SHARED_XDP 1u     /* an AF_XDP port's XDP program and maps */
#define TKO_CAP_HALF_OPEN 2u      /* a peer's handshake (SYN_RCVD pcbs) */
#define TKO_CAP_CONNECTING 4u     /* a program's connect() in flight (SYN_SENT) */

/* The image's header, at offset 0 of its memfd. */
struct tko_image_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t n_workers;
	uint32_t n_fds;
	uint64_t size;
	uint64_t main_off, main_len;
	uint64_t freeze_ns;       /* CLOCK_MONOTONIC when the holder froze */
	int32_t holder_pid;
	int32_t lock_fd;          /* descriptor table indexes */
	struct {
		uint64_t off, len;
		int32_t efd;
		int32_t pad;
	} worker[DPSOCK_MAX_WORKERS];
	/* Since ports shared with the kernel are handed over: per port, its
	 * XDP program (-1: none). An image whose main part starts before this
	 * (an older build's) has none. */
	int32_t xdp[DPSOCK_MAX_PORTS][DPSOCK_XDPF_FDS];
};

#define TKO_HDR_MIN offsetof(struct tko_image_hdr, xdp)
#define TKO_HDR_HAS_XDP(h) ((h)->main_off >= sizeof(struct tko_image_hdr))

struct dpsock_tko {
	/* both */
	int fd;                   /* the connection between the two */
	/* the new process */
	bool taking;
	pid_t holder;
	unsigned char *image;     /* mapped memfd */
	size_t image_size;
	int *fds;                 /* received descriptors; -1 once claimed */
	uint32_t n_fds;
	uint64_t freeze_ns;
	uint64_t t_hello_ns;
	/* the holder */
	int lfd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
	bool thread_on;
	uint32_t stop;            /* shared: the thread returns */
	uint32_t peer_caps;       /* what the new process's build takes (tko_compat.caps) */
	uint32_t handed;          /* shared: handed over */
	const struct dpsock_tko_app *app;
	void *app_arg;
};

static struct dpsock_tko tko_state = { .fd = -1, .lfd = -1 };
/* the format version messages carry (a test may make the hello lie) */
static uint16_t send_version = DPSOCK_TKO_VERSION;
static const struct dpsock_tko_app *tko_app;
static void *tko_app_arg;

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void
dpsock_tko_register(const struct dpsock_tko_app *app, void *arg)
{
	tko_app = app;
	tko_app_arg = arg;
}

bool
dpsock_tko_taking(const struct dpsock_stack *d)
{
	return d->tko != NULL && d->tko->taking;
}

bool
dpsock_tko_handed(const struct dpsock_stack *d)
{
	return d->tko != NULL && __atomic_load_n(&d->tko->handed, __ATOMIC_ACQUIRE);
}

/* ---- messages ------------------------------------------------------------------ */

static int
msg_send(int fd, uint16_t type, int32_t status, const char *text, uint64_t a, uint64_t b,
	 uint64_t c, const int *fds, uint32_t n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * TKO_FDS_PER_MSG)];
		struct cmsghdr align;
	} u;
	struct tko_msg m;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memset(&m, 0, sizeof(m));
	m.magic = TKO_MAGIC;
	m.version = send_version;
	m.type = type;
	m.status = status;
	m.n_fds = n_fds;
	m.a = a;
	m.b = b;
	m.c = c;
	if (text != NULL)
		snprintf(m.text, sizeof(m.text), "%s", text);
	if (n_fds > 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		return -errno;
	return 0;
}

/* One message within timeout_ms: 0, -ETIMEDOUT, -EPIPE (the other end
 * went), -EPROTO. Descriptors go to fds (room for TKO_FDS_PER_MSG). */
static int
msg_recv(int fd, struct tko_msg *m, int timeout_ms, int *fds, uint32_t *n_fds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * TKO_FDS_PER_MSG)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct cmsghdr *cm;
	uint32_t got = 0;
	ssize_t n;
	int r;

	if (n_fds != NULL)
		*n_fds = 0;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		uint32_t k, cnt;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (uint32_t)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (k = 0; k < cnt; k++) {
			int x;

			memcpy(&x, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
			if (fds != NULL && got < TKO_FDS_PER_MSG)
				fds[got++] = x;
			else
				close(x);
		}
	}
	if (n_fds != NULL)
		*n_fds = got;
	if (n <= 0)
		return -EPIPE;
	if ((size_t)n != sizeof(*m) || m->magic != TKO_MAGIC || (mh.msg_flags & MSG_CTRUNC))
		return -EPROTO;
	if (m->version != DPSOCK_TKO_VERSION)
		return -EPROTONOSUPPORT;
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}

static void
compat_of(const struct dpsock_stack *d, struct tko_compat *c)
{
	const struct dpsock_config *conf = &d->conf;
	unsigned int i;

	memset(c, 0, sizeof(*c));
	c->app_wire = tko_app != NULL ? tko_app->wire_version : 0;
	c->stats_block = (uint32_t)sizeof(struct dpsock_worker_stats);
	c->n_workers = conf->n_workers;
	memcpy(c->workers, conf->workers, sizeof(c->workers));
	c->n_ifaces = conf->n_ifaces;
	for (i = 0; i < conf->n_ifaces && i < DPSOCK_MAX_PORTS; i++) {
		snprintf(c->ports[i], sizeof(c->ports[i]), "%s", conf->ifaces[i].port);
		c->addr[i] = conf->ifaces[i].addr;
		c->shared[i] = conf->ifaces[i].shared;
	}
	c->caps = TKO_CAP_SHARED_XDP | TKO_CAP_HALF_OPEN | TKO_CAP_CONNECTING;
}

/* Why the holder d cannot hand over to a process of configuration *nc: a
 * sentence, or NULL. */
static const char *
compat_refusal(const struct dpsock_stack *d, const struct tko_compat *nc, char *why, size_t len)
{
	struct tko_compat mine;
	unsigned int i;

	compat_of(d, &mine);
	if (tko_app == NULL) {
		snprintf(why, len, "the running program (%s) has no state to hand over "
			 "(native run-to-completion apps cannot be taken over)",
			 d->app != NULL && d->app->name ? d->app->name : "no app");
		return why;
	}
	if (nc->app_wire != mine.app_wire) {
		snprintf(why, len, "the programs' wire differs (the running instance speaks preload "
			 "version %u, this build %u): the attached programs could not go on talking to "
			 "this build; stop them and the instance, and start them again",
			 mine.app_wire, nc->app_wire);
		return why;
	}
	if (nc->stats_block != mine.stats_block) {
		snprintf(why, len, "the counters' layout differs (%u bytes a worker, this build %u)",
			 mine.stats_block, nc->stats_block);
		return why;
	}
	if (nc->n_workers != mine.n_workers ||
	    memcmp(nc->workers, mine.workers, sizeof(mine.workers[0]) * mine.n_workers) != 0) {
		snprintf(why, len, "workers differ (the running instance has %u worker(s) from its "
			 "configuration's workers list; connections stay on the worker that holds "
			 "them, so the list must be the same)", d->n_workers);
		return why;
	}
	if (nc->n_ifaces != mine.n_ifaces) {
		snprintf(why, len, "the running instance serves %u interface(s), this configuration %u",
			 mine.n_ifaces, nc->n_ifaces);
		return why;
	}
	for (i = 0; i < mine.n_ifaces; i++) {
		if (strcmp(nc->ports[i], mine.ports[i]) != 0 || nc->addr[i] != mine.addr[i] ||
		    nc->shared[i] != mine.shared[i]) {
			snprintf(why, len, "interfaces[%u] differs (port, address or sharing)", i);
			return why;
		}
		if (mine.shared[i] && !d->ports[i].is_xdp) {
			snprintf(why, len, "interfaces[%u] (%s) is shared with the kernel in isolated "
				 "mode: its rte_flow rules are not handed over", i, mine.ports[i]);
			return why;
		}
		if (mine.shared[i] && !(nc->caps & TKO_CAP_SHARED_XDP)) {
			snprintf(why, len, "interfaces[%u] (%s) is shared with the kernel and the new "
				 "process's build cannot take its XDP program over (older than that)",
				 i, mine.ports[i]);
			return why;
		}
	}
	return NULL;
}

static void
socket_path(const struct dpsock_stack *d, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/%s%s", d->conf.runtime_dir, d->conf.name,
			     DPSOCK_TKO_SUFFIX) >= len)
		buf[0] = '\0'; /* too long for a socket's name: connect/bind fail */
}

/* ---- the new process ----------------------------------------------------------- */

int
dpsock_tko_hello(const char *prog, struct dpsock_stack *d)
{
	struct dpsock_tko *t = &tko_state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct tko_compat c;
	struct tko_msg m;
	const char *fault;
	int r;

	t->t_hello_ns = mono_ns();
	socket_path(d, sa.sun_path, sizeof(sa.sun_path));
	t->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (t->fd < 0 || connect(t->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "%s: takeover refused: the running instance '%s' does not answer at "
			"%s (%s): it is older than takeovers, or still starting\n", prog,
			d->conf.name, sa.sun_path, strerror(errno));
		return -1;
	}
	compat_of(d, &c);
	/* tests: a build of the next format version, as the holder sees it */
	fault = getenv("DPSOCK_TAKEOVER_FAULT");
	if (fault != NULL && strcmp(fault, "next-version") == 0)
		send_version = DPSOCK_TKO_VERSION + 1;
	/* the configuration to compare travels in a message of its own */
	static_assert(sizeof(c) <= 4096, "fits a message of its own");
	r = msg_send(t->fd, TKO_HELLO, 0, NULL, (uint64_t)getpid(), 0, 0, NULL, 0);
	send_version = DPSOCK_TKO_VERSION;
	if (r != 0 || send(t->fd, &c, sizeof(c), MSG_NOSIGNAL) != (ssize_t)sizeof(c)) {
		fprintf(stderr, "%s: takeover refused: %s: %s\n", prog, sa.sun_path, strerror(errno));
		return -1;
	}
	r = msg_recv(t->fd, &m, TKO_HELLO_TIMEOUT_MS, NULL, NULL);
	if (r == -EPROTONOSUPPORT) {
		fprintf(stderr, "%s: takeover refused: the running instance speaks another hand-over "
			"format (this build's is version %u): stop it and start this one\n", prog,
			DPSOCK_TKO_VERSION);
		return -1;
	}
	if (r != 0 || (m.type != TKO_ACCEPT && m.type != TKO_REFUSE)) {
		fprintf(stderr, "%s: takeover refused: no answer from the running instance (%s)\n",
			prog, strerror(r != 0 ? -r : EPROTO));
		return -1;
	}
	if (m.type == TKO_REFUSE) {
		fprintf(stderr, "%s: takeover refused: %s. Nothing was stopped.\n", prog, m.text);
		return -1;
	}
	t->holder = (pid_t)m.a;
	t->taking = true;
	d->tko = t;
	DPSOCK_LOG(NOTICE, main, "taking over from pid %d (instance '%s')", (int)t->holder,
		   d->conf.name);
	return 0;
}

int
dpsock_tko_receive(struct dpsock_stack *d)
{
	struct dpsock_tko *t = d->tko;
	const struct tko_image_hdr *h;
	struct tko_msg m;
	int chunk[TKO_FDS_PER_MSG];
	uint32_t n, got = 0, need;
	struct stat st;
	int r;

	if (msg_send(t->fd, TKO_GO, 0, NULL, 0, 0, 0, NULL, 0) != 0) {
		fprintf(stderr, "dpsockd: takeover: the running instance went away (%s)\n",
			strerror(errno));
		return -1;
	}
	r = msg_recv(t->fd, &m, TKO_FREEZE_TIMEOUT_MS * 4, chunk, &n);
	if (r != 0 || m.type != TKO_IMAGE || n < 1) {
		for (uint32_t i = 0; i < n; i++)
			close(chunk[i]);
		if (r == -EPIPE || r == -ECONNRESET)
			fprintf(stderr, "dpsockd: takeover: the running instance (pid %d) went away "
				"before it handed its state over: nothing to take over (its programs "
				"see a dpsockd that stopped)\n", (int)t->holder);
		else
			fprintf(stderr, "dpsockd: takeover refused: %s\n",
				r != 0 ? strerror(-r) :
				m.type == TKO_REFUSE ? m.text : "unexpected message");
		return -1;
	}
	need = (uint32_t)m.a;
	t->freeze_ns = m.b;
	t->fds = calloc(need > 0 ? need : 1, sizeof(int));
	if (t->fds == NULL) {
		for (uint32_t i = 0; i < n; i++)
			close(chunk[i]);
		return -1;
	}
	/* the first descriptor is the image; the table follows */
	if (fstat(chunk[0], &st) != 0 || st.st_size <= 0) {
		close(chunk[0]);
		return -1;
	}
	t->image_size = (size_t)st.st_size;
	t->image = mmap(NULL, t->image_size, PROT_READ, MAP_PRIVATE, chunk[0], 0);
	close(chunk[0]);
	for (uint32_t i = 1; i < n && got < need; i++)
		t->fds[got++] = chunk[i];
	while (got < need) {
		r = msg_recv(t->fd, &m, TKO_DONE_TIMEOUT_MS, chunk, &n);
		if (r != 0 || m.type != TKO_FDS) {
			fprintf(stderr, "dpsockd: takeover: the running instance went away while "
				"handing over (%s)\n", r != 0 ? strerror(-r) : "unexpected message");
			for (uint32_t i = 0; i < n; i++)
				close(chunk[i]);
			return -1;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (got < need)
				t->fds[got++] = chunk[i];
			else
				close(chunk[i]);
		}
	}
	t->n_fds = got;
	if (t->image == MAP_FAILED) {
		t->image = NULL;
		return -1;
	}
	h = (const struct tko_image_hdr *)(const void *)t->image;
	if (t->image_size < TKO_HDR_MIN || h->magic != TKO_MAGIC || h->version != DPSOCK_TKO_VERSION ||
	    h->size != t->image_size || h->n_fds != t->n_fds) {
		dpsock_tko_abort(d, "the image is not one this build reads");
		return -1;
	}
	if (h->n_workers != d->n_workers) {
		char why[128];

		snprintf(why, sizeof(why), "the running instance has %u workers, this one %u",
			 h->n_workers, d->n_workers);
		dpsock_tko_abort(d, why);
		return -1;
	}
	DPSOCK_LOG(INFO, main, "takeover: image of %zu KiB and %u descriptors from pid %d",
		   t->image_size >> 10, t->n_fds, (int)t->holder);
	return 0;
}

static bool
part_reader(const struct dpsock_tko *t, uint64_t off, uint64_t len, struct dpsock_tko_rd *r)
{
	if (t == NULL || t->image == NULL || off > t->image_size || len > t->image_size - off)
		return false;
	r->p = t->image + off;
	r->end = r->p + len;
	r->fd = t->fds;
	r->n_fd = t->n_fds;
	return true;
}

bool
dpsock_tko_worker_part(const struct dpsock_stack *d, unsigned int k, struct dpsock_tko_rd *r)
{
	const struct tko_image_hdr *h;

	if (!dpsock_tko_taking(d) || d->tko->image == NULL || k >= DPSOCK_MAX_WORKERS)
		return false;
	h = (const struct tko_image_hdr *)(const void *)d->tko->image;
	return part_reader(d->tko, h->worker[k].off, h->worker[k].len, r);
}

bool
dpsock_tko_main_part(const struct dpsock_stack *d, struct dpsock_tko_rd *r)
{
	const struct tko_image_hdr *h;

	if (!dpsock_tko_taking(d) || d->tko->image == NULL)
		return false;
	h = (const struct tko_image_hdr *)(const void *)d->tko->image;
	return part_reader(d->tko, h->main_off, h->main_len, r);
}

int
dpsock_tko_claim_fd(struct dpsock_stack *d, const struct dpsock_tko_rd *r, int32_t idx)
{
	struct dpsock_tko *t = d->tko;
	int fd;

	RTE_SET_USED(r);
	if (t == NULL || idx < 0 || (uint32_t)idx >= t->n_fds)
		return -1;
	fd = t->fds[idx];
	t->fds[idx] = -1;
	return fd;
}

int
dpsock_tko_take_fd(struct dpsock_stack *d, unsigned int role, unsigned int idx)
{
	const struct tko_image_hdr *h;

	if (!dpsock_tko_taking(d) || d->tko->image == NULL)
		return -1;
	h = (const struct tko_image_hdr *)(const void *)d->tko->image;
	switch (role) {
	case DPSOCK_TKO_FD_LOCK:
		return dpsock_tko_claim_fd(d, NULL, h->lock_fd);
	case DPSOCK_TKO_FD_WORKER_EFD:
		return idx < h->n_workers ? dpsock_tko_claim_fd(d, NULL, h->worker[idx].efd) : -1;
	case DPSOCK_TKO_FD_XDP:
		if (!TKO_HDR_HAS_XDP(h) || idx >= DPSOCK_MAX_PORTS * DPSOCK_XDPF_FDS)
			return -1;
		return h->xdp[idx / DPSOCK_XDPF_FDS][idx % DPSOCK_XDPF_FDS] < 0 ? -1 :
		       dpsock_tko_claim_fd(d, NULL, h->xdp[idx / DPSOCK_XDPF_FDS][idx % DPSOCK_XDPF_FDS]);
	default:
		return -1;
	}
}

void
dpsock_tko_release(struct dpsock_stack *d)
{
	struct dpsock_tko *t = d->tko;

	if (t == NULL)
		return;
	for (uint32_t i = 0; t->fds != NULL && i < t->n_fds; i++)
		if (t->fds[i] >= 0)
			close(t->fds[i]);
	free(t->fds);
	t->fds = NULL;
	t->n_fds = 0;
	if (t->image != NULL)
		munmap(t->image, t->image_size);
	t->image = NULL;
}

/* $NOTIFY_SOCKET (a systemd service with NotifyAccess=all): MAINPID= */
static void
notify_mainpid(void)
{
	const char *ns = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char msg[32];
	socklen_t len;
	int fd, n;

	if (ns == NULL || (ns[0] != '/' && ns[0] != '@') || strlen(ns) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, ns, strlen(ns));
	if (ns[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract */
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(ns));
	n = snprintf(msg, sizeof(msg), "MAINPID=%d", (int)getpid());
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, msg, (size_t)n, MSG_NOSIGNAL, (struct sockaddr *)&sa, len) != n)
		DPSOCK_LOG(WARNING, main, "takeover: telling systemd the new pid: %s", strerror(errno));
	close(fd);
}

/* A name of this process's waiting under DPSOCK_TKO_SHM_SUFFIX takes the
 * holder's place (rename: the holder keeps its mapping; a reader that
 * opens the name from now on gets this process's). */
static void
name_commit(char *name)
{
	size_t n, k = strlen(DPSOCK_TKO_SHM_SUFFIX);
	char from[160], to[160];

	if (name == NULL || (n = strlen(name)) <= k ||
	    strcmp(name + n - k, DPSOCK_TKO_SHM_SUFFIX) != 0)
		return;
	snprintf(from, sizeof(from), "/dev/shm%s", name);
	name[n - k] = '\0';
	snprintf(to, sizeof(to), "/dev/shm%s", name);
	if (rename(from, to) != 0) {
		DPSOCK_LOG(WARNING, main, "takeover: %s -> %s: %s", from, to, strerror(errno));
		name[n - k] = DPSOCK_TKO_SHM_SUFFIX[0]; /* keeps the name it has */
	}
}

void
dpsock_tko_done(struct dpsock_stack *d)
{
	struct dpsock_tko *t = d->tko;
	uint64_t now = mono_ns();
	const char *fault;

	if (t == NULL || !t->taking)
		return;
	fault = getenv("DPSOCK_TAKEOVER_FAULT");
	if (fault != NULL && strcmp(fault, "die-before-done") == 0) {
		/* tests: everything restored and running, the holder not told */
		fprintf(stderr, "dpsockd: DPSOCK_TAKEOVER_FAULT=die-before-done: exiting\n");
		_exit(9);
	}
	/* the stats and capture names are this process's from now on */
	name_commit(d->stats_shm);
	name_commit(dpsock_capture_shm_name(d));
	/* systemd (reload): this process is the service's main one now,
	 * before the holder exits */
	notify_mainpid();
	msg_send(t->fd, TKO_DONE, 0, NULL, 0, 0, 0, NULL, 0);
	DPSOCK_LOG(NOTICE, main, "took over from pid %d in %" PRIu64 " ms (blackout %" PRIu64
		   " ms: from its freeze to these workers running)", (int)t->holder,
		   (now - t->t_hello_ns) / 1000000, (now - t->freeze_ns) / 1000000);
	close(t->fd);
	t->fd = -1;
	t->taking = false;
	dpsock_tko_release(d);
}

void
dpsock_tko_abort(struct dpsock_stack *d, const char *why)
{
	struct dpsock_tko *t = d->tko;

	if (t == NULL || t->fd < 0)
		return;
	if (msg_send(t->fd, TKO_ABORT, -ECANCELED, why, 0, 0, 0, NULL, 0) == 0)
		fprintf(stderr, "dpsockd: takeover abandoned: %s; the running instance (pid %d) "
			"resumes\n", why, (int)t->holder);
	else
		fprintf(stderr, "dpsockd: takeover abandoned: %s; the running instance (pid %d) "
			"is gone: its programs got the errors of a daemon that stopped\n", why,
			(int)t->holder);
	close(t->fd);
	t->fd = -1;
}

/* ---- the holder ------------------------------------------------------------------ */

/* Ask every worker to freeze and wait until each wrote its part. Returns 0
 * or the first worker's error (the caller resumes). */
static int
freeze_workers(struct dpsock_stack *d)
{
	uint64_t until = mono_ns() + (uint64_t)TKO_FREEZE_TIMEOUT_MS * 1000000;
	unsigned int k;

	for (k = 0; k < d->n_workers; k++) {
		d->workers[k].tko_err = 0;
		__atomic_store_n(&d->workers[k].tko_state, 0, __ATOMIC_RELAXED);
	}
	/* release: pairs with the workers' acquire load at the top of their pass */
	__atomic_store_n(&d->tko_phase, 1, __ATOMIC_RELEASE);
	for (;;) {
		unsigned int done = 0;

		for (k = 0; k < d->n_workers; k++) {
			dpsock_worker_wake(&d->workers[k]);
			/* acquire: the worker's part is complete */
			done += __atomic_load_n(&d->workers[k].tko_state, __ATOMIC_ACQUIRE) != 0;
		}
		if (done == d->n_workers)
			break;
		if (mono_ns() > until)
			return -ETIMEDOUT;
		rte_delay_us_sleep(100);
	}
	for (k = 0; k < d->n_workers; k++)
		if (d->workers[k].tko_err != 0)
			return d->workers[k].tko_err;
	return 0;
}

static void
thaw(struct dpsock_stack *d, uint32_t phase)
{
	unsigned int k;

	/* release: pairs with the workers' acquire load in their wait */
	__atomic_store_n(&d->tko_phase, phase, __ATOMIC_RELEASE);
	for (k = 0; k < d->n_workers; k++)
		dpsock_worker_wake(&d->workers[k]);
}

bool
dpsock_tko_worker_freeze(struct dpsock_worker *w)
{
	struct dpsock_stack *d = w->d;
	uint32_t phase;
	int r = 0;

	/* what lwIP queued goes out before the part is written */
	dpsock_worker_flush(w);
	w->tko_part.len = 0;
	w->tko_part.err = 0;
	dpsock_tko_buf_put(&w->tko_part, DPSOCK_TKO_R_STATS, w->stats, sizeof(*w->stats), NULL, 0);
	w->tko_connecting = (d->tko->peer_caps & TKO_CAP_CONNECTING) != 0;
	if (tko_app != NULL && tko_app->worker_export != NULL)
		r = tko_app->worker_export(w, tko_app_arg, &w->tko_part);
	if (r == 0)
		r = dpsock_tko_export_pcbs(w, &w->tko_part,
					   (d->tko->peer_caps & TKO_CAP_HALF_OPEN) != 0);
	if (r == 0)
		r = w->tko_part.err;
	w->tko_err = r;
	/* release: the part (and tko_err) before the state says so */
	__atomic_store_n(&w->tko_state, 1, __ATOMIC_RELEASE);
	while ((phase = __atomic_load_n(&d->tko_phase, __ATOMIC_ACQUIRE)) == 1)
		rte_delay_us_sleep(200);
	dpsock_tko_buf_free(&w->tko_part);
	if (phase == 2)
		return true;
	/* resumed: as after any pause, lwIP's timers catch up; ports that
	 * were started again have new handles */
	w->timer_due_tsc = 0;
	if (w->ports_gen != __atomic_load_n(&d->ports_gen, __ATOMIC_ACQUIRE))
		dpsock_worker_ports_rebind(w);
	return false;
}

/* The image: header, the main part, each worker's part, in one memfd. */
static int
image_write(struct dpsock_stack *d, const struct dpsock_tko_buf *main_part,
	    struct dpsock_tko_fds *fds, uint64_t freeze_ns, int *memfd)
{
	struct tko_image_hdr h;
	size_t off;
	unsigned int k;
	int fd;

	memset(&h, 0, sizeof(h));
	h.magic = TKO_MAGIC;
	h.version = DPSOCK_TKO_VERSION;
	h.n_workers = d->n_workers;
	h.freeze_ns = freeze_ns;
	h.holder_pid = (int32_t)getpid();
	h.lock_fd = dpsock_tko_fd_add(fds, d->lock_fd);
	for (k = 0; k < DPSOCK_MAX_PORTS; k++) {
		int xfd[DPSOCK_XDPF_FDS];

		for (unsigned int j = 0; j < DPSOCK_XDPF_FDS; j++)
			h.xdp[k][j] = -1;
		if (k >= d->n_ports || dpsock_filter_xdp_fds(d, k, xfd) != 0)
			continue;
		for (unsigned int j = 0; j < DPSOCK_XDPF_FDS; j++)
			h.xdp[k][j] = dpsock_tko_fd_add(fds, xfd[j]);
	}
	off = sizeof(h);
	h.main_off = off;
	h.main_len = main_part->len;
	off += main_part->len;
	for (k = 0; k < d->n_workers; k++) {
		h.worker[k].off = off;
		h.worker[k].len = d->workers[k].tko_part.len;
		h.worker[k].efd = dpsock_tko_fd_add(fds, d->workers[k].efd);
		off += d->workers[k].tko_part.len;
	}
	if (fds->err != 0)
		return fds->err;
	h.size = off;
	h.n_fds = fds->n;
	fd = memfd_create("dpsock-takeover", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) ||
	    (main_part->len && pwrite(fd, main_part->p, main_part->len, (off_t)h.main_off) !=
	     (ssize_t)main_part->len))
		goto fail;
	for (k = 0; k < d->n_workers; k++) {
		const struct dpsock_tko_buf *b = &d->workers[k].tko_part;

		if (b->len && pwrite(fd, b->p, b->len, (off_t)h.worker[k].off) != (ssize_t)b->len)
			goto fail;
	}
	*memfd = fd;
	return 0;
fail:
	close(fd);
	return -EIO;
}

static int
send_image(int cfd, int memfd, const struct dpsock_tko_fds *fds, uint64_t freeze_ns)
{
	int chunk[TKO_FDS_PER_MSG];
	uint32_t sent, n;
	int r;

	chunk[0] = memfd;
	n = RTE_MIN(fds->n, TKO_FDS_PER_MSG - 1);
	memcpy(&chunk[1], fds->fd, n * sizeof(int));
	/* a: the table's size (the image's descriptor is not in it) */
	r = msg_send(cfd, TKO_IMAGE, 0, NULL, fds->n, freeze_ns, 0, chunk, n + 1);
	for (sent = n; r == 0 && sent < fds->n; sent += n) {
		n = RTE_MIN(fds->n - sent, TKO_FDS_PER_MSG);
		r = msg_send(cfd, TKO_FDS, 0, NULL, 0, 0, 0, fds->fd + sent, n);
	}
	return r;
}

/* The segments a failed new process left under its waiting names. */
static void
tko_names_forget(const struct dpsock_stack *d)
{
	static const char *const kinds[] = { "stats", "capture" };
	char name[160];

	for (unsigned int i = 0; i < RTE_DIM(kinds); i++) {
		snprintf(name, sizeof(name), "/dpsock.%s.%s%s", d->conf.name, kinds[i],
			 DPSOCK_TKO_SHM_SUFFIX);
		shm_unlink(name);
	}
}

/* One takeover, on an accepted connection. */
/* Tests: DPSOCK_TAKEOVER_FAULT=holder-stall-frozen or holder-stall-sent in
 * the holder's environment stops the hand-over there for 30 s, for the
 * test to kill the holder (test/integration/preload_daemon_gone.sh). */
static void
holder_fault(const char *name, const char *where)
{
	const char *fault = getenv("DPSOCK_TAKEOVER_FAULT");

	if (fault == NULL || strcmp(fault, name) != 0)
		return;
	DPSOCK_LOG(NOTICE, main, "DPSOCK_TAKEOVER_FAULT=%s: stalled (%s)", name, where);
	sleep(30);
}

static void
serve_one(struct dpsock_stack *d, int cfd)
{
	struct dpsock_tko *t = d->tko;
	struct dpsock_tko_buf main_part = { 0 };
	struct dpsock_tko_fds fds = { 0 };
	struct tko_compat nc;
	struct tko_msg m;
	char why[384];
	const char *refusal;
	uint64_t freeze_ns, t_ports;
	bool ports_stopped = false, app_frozen = false;
	pid_t newpid;
	int r, memfd = -1;
	ssize_t n;

	r = msg_recv(cfd, &m, TKO_HELLO_TIMEOUT_MS, NULL, NULL);
	if (r == -EPROTONOSUPPORT) {
		struct pollfd p = { .fd = cfd, .events = POLLIN };

		/* its configuration follows: taken before the answer, which
		 * the new process reads after sending it */
		if (poll(&p, 1, TKO_HELLO_TIMEOUT_MS) == 1)
			(void)recv(cfd, &nc, sizeof(nc), 0);
		snprintf(why, sizeof(why), "the new process speaks hand-over format version %u, "
			 "the running instance version %u: stop it and start the new build",
			 (unsigned int)m.version, DPSOCK_TKO_VERSION);
		msg_send(cfd, TKO_REFUSE, -EPROTONOSUPPORT, why, 0, 0, 0, NULL, 0);
		DPSOCK_LOG(NOTICE, main, "takeover refused: %s", why);
		return;
	}
	if (r != 0 || m.type != TKO_HELLO)
		return;
	newpid = (pid_t)m.a;
	memset(&nc, 0, sizeof(nc));
	n = recv(cfd, &nc, sizeof(nc), 0);
	/* an older build's hello ends before caps (none) */
	if (n < (ssize_t)offsetof(struct tko_compat, caps))
		return;
	refusal = compat_refusal(d, &nc, why, sizeof(why));
	if (refusal != NULL) {
		DPSOCK_LOG(NOTICE, main, "takeover by pid %d refused: %s", (int)newpid, refusal);
		msg_send(cfd, TKO_REFUSE, -EINVAL, refusal, 0, 0, 0, NULL, 0);
		return;
	}
	t->peer_caps = nc.caps;
	msg_send(cfd, TKO_ACCEPT, 0, NULL, (uint64_t)getpid(), 0, 0, NULL, 0);
	DPSOCK_LOG(NOTICE, main, "takeover by pid %d: accepted; waiting for it to start", (int)newpid);
	r = msg_recv(cfd, &m, TKO_GO_TIMEOUT_MS, NULL, NULL);
	if (r != 0 || m.type != TKO_GO) {
		DPSOCK_LOG(NOTICE, main, "takeover by pid %d: it did not come (%s); nothing changed",
			   (int)newpid, r != 0 ? strerror(-r) : "unexpected message");
		return;
	}
	/* the freeze: from here the programs wait */
	freeze_ns = mono_ns();
	r = tko_app->freeze != NULL ? tko_app->freeze(tko_app_arg) : 0;
	app_frozen = r == 0;
	if (r == 0)
		holder_fault("holder-stall-frozen", "the control thread frozen, then the workers");
	if (r == 0)
		r = freeze_workers(d);
	if (r == 0 && tko_app->main_export != NULL)
		r = tko_app->main_export(tko_app_arg, &main_part, &fds);
	if (r == 0)
		r = image_write(d, &main_part, &fds, freeze_ns, &memfd);
	if (r != 0) {
		snprintf(why, sizeof(why), "the running instance could not write its state (%s)%s",
			 strerror(-r), r == -EINPROGRESS ? ": a connect() of a program was in flight; "
			 "try again" : "");
		DPSOCK_LOG(NOTICE, main, "takeover by pid %d refused: %s", (int)newpid, why);
		msg_send(cfd, TKO_REFUSE, r, why, 0, 0, 0, NULL, 0);
		goto resume;
	}
	/* AF_XDP: one socket per queue; the new process binds its own */
	t_ports = mono_ns();
	dpsock_ports_release(d);
	ports_stopped = true;
	r = send_image(cfd, memfd, &fds, freeze_ns);
	close(memfd);
	memfd = -1;
	if (r != 0)
		goto resume;
	holder_fault("holder-stall-sent", "the image and its descriptors sent, before done");
	DPSOCK_LOG(INFO, main, "takeover by pid %d: state handed (%zu KiB, %u descriptors; frozen "
		   "%" PRIu64 " ms, ports released in %" PRIu64 " ms)", (int)newpid,
		   (size_t)(main_part.len >> 10), fds.n, (mono_ns() - freeze_ns) / 1000000,
		   (mono_ns() - t_ports) / 1000000);
	r = msg_recv(cfd, &m, TKO_DONE_TIMEOUT_MS, NULL, NULL);
	if (r == 0 && m.type == TKO_DONE) {
		DPSOCK_LOG(NOTICE, main, "handed over to pid %d; exiting", (int)newpid);
		__atomic_store_n(&t->handed, 1, __ATOMIC_RELEASE);
		thaw(d, 2);
		tko_app->resume(tko_app_arg, true);
		__atomic_store_n(&d->quit, 1, __ATOMIC_RELEASE);
		dpsock_tko_buf_free(&main_part);
		dpsock_tko_fds_free(&fds);
		return;
	}
	DPSOCK_LOG(WARNING, main, "takeover by pid %d failed (%s): resuming", (int)newpid,
		   r == 0 && m.type == TKO_ABORT ? m.text : r == -EPIPE ? "it exited" :
		   r != 0 ? strerror(-r) : "unexpected message");
resume:
	if (memfd >= 0)
		close(memfd);
	tko_names_forget(d);
	if (ports_stopped && (r = dpsock_ports_restart(d)) != 0)
		DPSOCK_LOG(ERR, main, "takeover: restarting the ports: %s", strerror(-r));
	thaw(d, 0);
	if (app_frozen && tko_app->resume != NULL)
		tko_app->resume(tko_app_arg, false);
	DPSOCK_LOG(NOTICE, main, "resumed after %" PRIu64 " ms", (mono_ns() - freeze_ns) / 1000000);
	dpsock_tko_buf_free(&main_part);
	dpsock_tko_fds_free(&fds);
}

static void *
holder_main(void *arg)
{
	struct dpsock_stack *d = arg;
	struct dpsock_tko *t = d->tko;
	struct pollfd p = { .fd = t->lfd, .events = POLLIN };

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&d->quit, __ATOMIC_RELAXED)) {
		int cfd;

		if (poll(&p, 1, 200) <= 0)
			continue;
		cfd = accept4(t->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		serve_one(d, cfd);
		close(cfd);
		if (__atomic_load_n(&t->handed, __ATOMIC_ACQUIRE))
			break;
	}
	return NULL;
}

int
dpsock_tko_listen(struct dpsock_stack *d)
{
	struct dpsock_tko *t = &tko_state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int r;

	if (tko_app == NULL)
		return 0; /* nothing to hand over: no listener (a takeover is told so) */
	d->tko = t;
	socket_path(d, t->path, sizeof(t->path));
	memcpy(sa.sun_path, t->path, sizeof(sa.sun_path));
	/* the name is ours (the instance lock): whatever is there is stale,
	 * or the holder's we took over from */
	unlink(t->path);
	t->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (t->lfd < 0)
		return -errno;
	if (bind(t->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(t->path, 0600) != 0 ||
	    listen(t->lfd, 4) != 0) {
		r = -errno;
		close(t->lfd);
		t->lfd = -1;
		return r;
	}
	r = pthread_create(&t->thread, NULL, holder_main, d);
	if (r != 0) {
		close(t->lfd);
		t->lfd = -1;
		unlink(t->path);
		return -r;
	}
	pthread_setname_np(t->thread, "dpsock-tko");
	t->thread_on = true;
	return 0;
}

void
dpsock_tko_unlisten(struct dpsock_stack *d)
{
	struct dpsock_tko *t = &tko_state;

	if (!t->thread_on)
		return;
	__atomic_store_n(&t->stop, 1, __ATOMIC_RELEASE);
	pthread_join(t->thread, NULL);
	t->thread_on = false;
	close(t->lfd);
	t->lfd = -1;
	/* handed over: the path is the new process's now */
	if (!__atomic_load_n(&t->handed, __ATOMIC_ACQUIRE))
		unlink(t->path);
	RTE_SET_USED(d);
}

int
dpsock_tko_worker_restore(struct dpsock_worker *w, bool stats_only)
{
	struct dpsock_tko_rd r;
	const void *data;
	uint16_t type;
	uint32_t len;
	unsigned int half_open = 0;
	int n, ret = 0;

	if (!dpsock_tko_worker_part(w->d, w->idx, &r))
		return -EPROTO;
	while (ret == 0 && (n = dpsock_tko_next(&r, &type, &data, &len)) > 0) {
		if (type == DPSOCK_TKO_R_STATS && stats_only) {
			/* the counters go on from the holder's (same layout: the
			 * format version says so); lcore and zeroing are ours */
			if (len == sizeof(*w->stats))
				memcpy(w->stats, data, offsetof(struct dpsock_worker_stats, lcore_id));
		} else if (type == DPSOCK_TKO_R_PCB && !stats_only) {
			ret = dpsock_tko_import_pcb(w, data, len);
			if (ret > 0) {
				half_open++;
				ret = 0;
			}
		}
	}
	if (ret == 0 && n < 0)
		ret = n;
	if (half_open != 0)
		DPSOCK_LOG(INFO, worker, "takeover: worker %u: %u peer handshake(s) in progress "
			   "carried", w->idx, half_open);
	if (ret != 0)
		DPSOCK_LOG(ERR, worker, "takeover: worker %u: restoring a connection: %s", w->idx,
			   strerror(-ret));
	return ret;
}

void
dpsock_tko_mark(const struct dpsock_stack *d, const char *what)
{
	if (dpsock_tko_taking(d))
		DPSOCK_LOG(INFO, main, "takeover: %s, %" PRIu64 " ms after the freeze", what,
			   (mono_ns() - d->tko->freeze_ns) / 1000000);
}
