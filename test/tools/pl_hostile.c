/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pl_hostile: a raw preload client that speaks dpsockd's protocol
 * (abi/preload_wire.h) directly, without the shim, for
 * test/integration/preload_hostile.sh.
 *
 *   pl_hostile SOCKET echo PORT      well-behaved: listen on PORT on every
 *                                    worker, echo every connection until
 *                                    SIGTERM (prints "listening")
 *   pl_hostile SOCKET hostile PORT   attach, listen on PORT, then send garbage
 *                                    (unknown ops, bad and stale slots, bogus
 *                                    waiter ids in watch[]) checking each
 *                                    rejection, then corrupt a command ring:
 *                                    dpsockd must hang up. Exit 0 = all seen.
 *   pl_hostile SOCKET hold PORT      listen, accept one connection, print
 *                                    "accepted", then sleep (to be killed)
 *
 * Plain C, no DPDK; exits 1 with a message on anything unexpected.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "preload_wire.h"
#include "spsc_ring.h"

#define MAXW 64
#define MAXS 256

struct conn {
	uint32_t slot, gen;
	struct dpsock_fifo_cons rx;
	struct dpsock_fifo_prod tx;
	int live;
};

static struct {
	int ctl;
	unsigned char *seg;
	const struct dpsock_pl_seg *g;
	const struct dpsock_pl_wake *wake;
	int wefd[MAXW];
	uint32_t nw;
	int efd;
	uint32_t wid, ch;
	struct dpsock_spsc_prod cmd[MAXW];
	struct dpsock_spsc_cons reply[MAXW];
	struct dpsock_spsc_cons wait[MAXW];
	uint32_t cookie;
	struct conn lst[MAXW];
	struct conn conns[MAXS];
} c;

static volatile sig_atomic_t stop;

static void __attribute__((format(printf, 1, 2), noreturn))
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pl_hostile: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void
on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int
ctl_call(uint16_t type, uint32_t id, uint32_t arg, int sendfd, struct dpsock_pl_msg *a,
	 int *fds, int *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * DPSOCK_PL_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct dpsock_pl_msg m = { .magic = DPSOCK_PL_MAGIC, .version = DPSOCK_PL_VERSION,
				   .type = type, .id = id, .arg = arg };
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	snprintf(m.text, sizeof(m.text), "pl_hostile");
	if (sendfd >= 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &sendfd, sizeof(int));
		m.n_fds = 1;
	}
	if (sendmsg(c.ctl, &mh, MSG_NOSIGNAL) != sizeof(m))
		return -errno;
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = a;
	iov.iov_len = sizeof(*a);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	n = recvmsg(c.ctl, &mh, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return n == 0 ? -ECONNRESET : -errno;
	if (nfds != NULL)
		*nfds = 0;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

		for (int i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (fds != NULL && *nfds < DPSOCK_PL_MAX_FDS)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return n == sizeof(*a) && a->magic == DPSOCK_PL_MAGIC ? 0 : -EPROTO;
}

static void
attach(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct dpsock_pl_msg a;
	int fds[DPSOCK_PL_MAX_FDS], nfds = 0, r;
	uint32_t k;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c.ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c.ctl < 0 || connect(c.ctl, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("connect %s: %s", path, strerror(errno));
	r = ctl_call(DPSOCK_PL_HELLO, 0, 0, -1, &a, fds, &nfds);
	if (r != 0 || a.type != DPSOCK_PL_WELCOME || a.status != 0)
		die("HELLO: %s / status %d (%.64s)", strerror(-r), a.status, a.text);
	if (nfds != (int)(2 + a.n_workers) || a.n_workers > MAXW)
		die("WELCOME: %d fds for %u workers", nfds, a.n_workers);
	c.seg = mmap(NULL, a.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	c.wake = mmap(NULL, a.wake_size, PROT_READ, MAP_SHARED, fds[1], 0);
	if (c.seg == MAP_FAILED || c.wake == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	/* the wake page must not be writable by clients */
	if (mmap(NULL, a.wake_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0) != MAP_FAILED)
		die("the wake page can be mapped writable");
	c.g = (const struct dpsock_pl_seg *)c.seg;
	if (c.g->magic != DPSOCK_PL_SEG_MAGIC || c.g->n_workers != a.n_workers ||
	    c.g->state != DPSOCK_PL_RUNNING)
		die("segment header: magic %x workers %u state %u", c.g->magic, c.g->n_workers,
		    c.g->state);
	c.nw = a.n_workers;
	for (k = 0; k < c.nw; k++)
		c.wefd[k] = fds[2 + k];
	close(fds[0]);
	close(fds[1]);

	c.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r = ctl_call(DPSOCK_PL_WAITER_ADD, 0, 0, c.efd, &a, NULL, NULL);
	if (r != 0 || a.status != 0)
		die("WAITER_ADD: %d/%d", r, a.status);
	c.wid = a.id;
	for (k = 0; k < c.nw; k++) {
		unsigned char *ring = c.seg + c.g->off_waiters + (uint64_t)c.wid * c.g->waiter_stride +
				      DPSOCK_PL_WAITER_HDR + k * c.g->wait_ring_size;

		if (dpsock_spsc_cons_attach(&c.wait[k], ring, c.g->wait_ring_size) != 0)
			die("wait ring %u", k);
	}
	r = ctl_call(DPSOCK_PL_CHANNEL_ADD, 0, c.wid, -1, &a, NULL, NULL);
	if (r != 0 || a.status != 0)
		die("CHANNEL_ADD: %d/%d", r, a.status);
	c.ch = a.id;
	for (k = 0; k < c.nw; k++) {
		unsigned char *blk = c.seg + c.g->off_channels +
				     ((uint64_t)c.ch * c.nw + k) * c.g->chan_stride;

		if (dpsock_spsc_prod_attach(&c.cmd[k], blk, c.g->cmd_ring_size) != 0 ||
		    dpsock_spsc_cons_attach(&c.reply[k], blk + c.g->cmd_ring_size,
					    c.g->reply_ring_size) != 0)
			die("channel rings %u", k);
	}
}

static struct dpsock_pl_slot *
slot_hdr(uint32_t n)
{
	return (struct dpsock_pl_slot *)(c.seg + c.g->off_slots + (uint64_t)n * c.g->slot_stride);
}

static void
post(uint32_t k, struct dpsock_pl_cmd *m)
{
	int i;

	for (i = 0; dpsock_spsc_enqueue_bulk(&c.cmd[k], m, 1) == 0; i++) {
		if (i > 2000)
			die("command ring %u stays full", k);
		usleep(1000);
	}
	/* seq_cst: pairs with the worker's fence after it publishes sleeping */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c.wake[k].sleeping, __ATOMIC_RELAXED)) {
		uint64_t one = 1;

		if (write(c.wefd[k], &one, sizeof(one)) < 0)
			die("wake worker %u: %s", k, strerror(errno));
	}
}

/* Post and wait (up to 3 s) for the reply with the same cookie. */
static int
call(uint32_t k, struct dpsock_pl_cmd *m, struct dpsock_pl_reply *r)
{
	int i;

	m->cookie = ++c.cookie;
	post(k, m);
	for (i = 0; i < 30000; i++) {
		while (dpsock_spsc_dequeue_bulk(&c.reply[k], r, 1) == 1)
			if (r->cookie == m->cookie)
				return 0;
		usleep(100);
	}
	return -ETIMEDOUT;
}

static void
conn_attach(struct conn *x, uint32_t slot, uint32_t gen)
{
	unsigned char *base = (unsigned char *)slot_hdr(slot);

	x->slot = slot;
	x->gen = gen;
	unsigned char *data = c.seg + c.g->off_data + (uint64_t)slot * c.g->data_stride;

	if (dpsock_fifo_cons_attach_at(&x->rx, base + c.g->rx_fifo_off, data + c.g->rx_data_off,
				       c.g->rx_fifo_size) != 0 ||
	    dpsock_fifo_prod_attach_at(&x->tx, base + c.g->tx_fifo_off, data + c.g->tx_data_off,
				       c.g->tx_fifo_size) != 0)
		die("slot %u FIFOs", slot);
	/* watched by our waiter */
	__atomic_store_n(&slot_hdr(slot)->watch[0], c.wid + 1, __ATOMIC_RELAXED);
	x->live = 1;
}

static void
listen_all(uint16_t port)
{
	uint32_t k;

	for (k = 0; k < c.nw; k++) {
		struct dpsock_pl_cmd m = { .op = DPSOCK_PL_OP_LISTEN, .port = htons(port) };
		struct dpsock_pl_reply r;

		m.arg[0] = 128;
		if (call(k, &m, &r) != 0 || r.result != 0)
			die("LISTEN %u on worker %u: %d", port, k, r.result);
		if (r.slot / c.g->slots_per_worker != k)
			die("LISTEN: slot %u is not worker %u's", r.slot, k);
		conn_attach(&c.lst[k], r.slot, r.gen);
	}
}

/* Take the wait rings' entries (clearing queued[]), then sleep on the
 * eventfd, armed, up to ms. */
static void
wait_events(int ms)
{
	struct dpsock_pl_waiter *wt = (struct dpsock_pl_waiter *)(c.seg + c.g->off_waiters +
								  (uint64_t)c.wid * c.g->waiter_stride);
	struct pollfd p = { .fd = c.efd, .events = POLLIN };
	uint64_t e, v;
	uint32_t k;
	int any = 0;

	for (k = 0; k < c.nw; k++)
		while (dpsock_spsc_dequeue_bulk(&c.wait[k], &e, 1) == 1) {
			__atomic_store_n(&slot_hdr((uint32_t)e)->queued[0], 0, __ATOMIC_RELEASE);
			any = 1;
		}
	if (any)
		return;
	__atomic_store_n(&wt->armed, 1, __ATOMIC_RELAXED);
	/* seq_cst: pairs with the worker's fence before it reads armed */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (k = 0; k < c.nw; k++)
		if (!dpsock_spsc_cons_empty(&c.wait[k]))
			any = 1;
	if (!any && poll(&p, 1, ms) > 0 && read(c.efd, &v, sizeof(v)) < 0)
		die("eventfd read: %s", strerror(errno));
	__atomic_store_n(&wt->armed, 0, __ATOMIC_RELAXED);
}

static void
accept_all(void)
{
	struct dpsock_pl_accept a;
	uint32_t k;

	for (k = 0; k < c.nw; k++) {
		while (dpsock_fifo_read(&c.lst[k].rx, &a, sizeof(a)) == sizeof(a)) {
			int i;

			for (i = 0; i < MAXS && c.conns[i].live; i++)
				;
			if (i == MAXS)
				die("too many connections");
			conn_attach(&c.conns[i], a.slot, a.gen);
			printf("accepted slot %u\n", a.slot);
			fflush(stdout);
		}
	}
}

static void
conn_close(struct conn *x, int abortive)
{
	struct dpsock_pl_cmd m = { .op = DPSOCK_PL_OP_CLOSE, .slot = x->slot, .gen = x->gen };

	m.arg[0] = abortive;
	m.cookie = ++c.cookie;
	post(x->slot / c.g->slots_per_worker, &m);
	x->live = 0;
}

/* Echo what arrived; close on EOF or error. */
static void
echo_conns(void)
{
	static unsigned char buf[65536];
	int i;

	for (i = 0; i < MAXS; i++) {
		struct conn *x = &c.conns[i];
		struct dpsock_pl_slot *s;
		uint32_t k;
		size_t n;

		if (!x->live)
			continue;
		s = slot_hdr(x->slot);
		k = x->slot / c.g->slots_per_worker;
		n = dpsock_fifo_free(&x->tx);
		if (n > sizeof(buf))
			n = sizeof(buf);
		n = dpsock_fifo_read(&x->rx, buf, n);
		if (n > 0) {
			struct dpsock_pl_cmd m = { .slot = x->slot, .gen = x->gen };

			if (dpsock_fifo_write(&x->tx, buf, n) != n)
				die("tx FIFO");
			/* seq_cst: pairs with the worker's fence after it set the
			 * doorbells */
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_exchange_n(&s->tx_doorbell, 0, __ATOMIC_RELAXED)) {
				m.op = DPSOCK_PL_OP_TX_KICK;
				post(k, &m);
			}
			if (__atomic_exchange_n(&s->rx_doorbell, 0, __ATOMIC_RELAXED)) {
				m.op = DPSOCK_PL_OP_RX_KICK;
				post(k, &m);
			}
			continue;
		}
		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == DPSOCK_PL_ST_CLOSED ||
		    (__atomic_load_n(&s->flags, __ATOMIC_ACQUIRE) & DPSOCK_PL_F_RD_EOF &&
		     dpsock_fifo_used(&x->rx) == 0))
			conn_close(x, 0);
	}
}

static void
expect_reject(const char *what, struct dpsock_pl_cmd *m, uint32_t k, int want)
{
	struct dpsock_pl_reply r;

	if (call(k, m, &r) != 0)
		die("%s: no reply", what);
	if (r.result != want)
		die("%s: result %d, expected %d", what, r.result, want);
	printf("rejected as expected: %s (%d)\n", what, r.result);
}

static int
hostile(uint16_t port)
{
	struct dpsock_pl_cmd m;
	struct dpsock_pl_slot *ls = slot_hdr(c.lst[0].slot);
	uint32_t spw = c.g->slots_per_worker;
	struct dpsock_spsc_hdr *h;
	char b;
	int i;

	memset(&m, 0, sizeof(m));
	m.op = 200;
	expect_reject("unknown op", &m, 0, -EINVAL);
	memset(&m, 0, sizeof(m));
	m.op = DPSOCK_PL_OP_SETOPT;
	m.slot = 0xfffffff0u;
	expect_reject("slot out of range", &m, 0, -EINVAL);
	m.slot = c.nw > 1 ? c.lst[1].slot : spw; /* another worker's slot */
	m.gen = c.nw > 1 ? c.lst[1].gen : 1;
	expect_reject("slot of another worker", &m, 0, -EINVAL);
	m.slot = c.lst[0].slot;
	m.gen = c.lst[0].gen + 7;
	expect_reject("stale generation", &m, 0, -EBADF);
	m.slot = c.lst[0].slot + 1; /* free slot */
	m.gen = 1;
	expect_reject("free slot", &m, 0, -EBADF);
	memset(&m, 0, sizeof(m));
	m.op = DPSOCK_PL_OP_LISTEN;
	m.port = 0;
	expect_reject("listen on port 0", &m, 0, -EINVAL);
	m.port = htons(port);
	expect_reject("listen twice on a port", &m, 0, -EADDRINUSE);
	m.op = DPSOCK_PL_OP_LISTEN;
	m.port = htons(port + 1);
	m.addr = inet_addr("203.0.113.9");
	expect_reject("listen on an address not served", &m, 0, -EADDRNOTAVAIL);
	/* bogus waiter ids in the listener's watch[] (and a huge queued[]),
	 * then make the worker publish a change (a SETOPT that fails is not a
	 * change; a connection is: the test's peer connects meanwhile) */
	__atomic_store_n(&ls->watch[1], 0xffffffffu, __ATOMIC_RELAXED);
	__atomic_store_n(&ls->watch[2], c.g->max_waiters + 5, __ATOMIC_RELAXED);
	__atomic_store_n(&ls->watch[3], c.wid + 1 + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&ls->queued[1], 77, __ATOMIC_RELAXED);
	memset(&m, 0, sizeof(m));
	m.op = DPSOCK_PL_OP_SETOPT;
	m.slot = c.lst[0].slot;
	m.gen = c.lst[0].gen;
	m.arg[0] = 6; /* IPPROTO_TCP */
	m.arg[1] = 1; /* TCP_NODELAY */
	m.arg[2] = 1;
	expect_reject("setopt TCP_NODELAY on the listener (accepted)", &m, 0, 0);
	m.arg[1] = 9999;
	expect_reject("unknown option", &m, 0, -ENOPROTOOPT);
	printf("garbage done; waiting for a connection\n");
	fflush(stdout);
	/* a connection makes the worker notify the listener's (bogus) watchers */
	for (i = 0; i < 1000; i++) {
		uint32_t k, got = 0;

		for (k = 0; k < c.nw; k++)
			got += dpsock_fifo_used(&c.lst[k].rx);
		if (got)
			break;
		usleep(10000);
	}
	if (i == 1000)
		die("no connection within 10 s");
	printf("connection seen with bogus watchers\n");
	/* a burst of random commands: rejected or harmless, never a crash */
	srand(42);
	for (i = 0; i < 200; i++) {
		unsigned char *p = (unsigned char *)&m;
		size_t j;

		for (j = 0; j < sizeof(m); j++)
			p[j] = (unsigned char)rand();
		m.op = (uint16_t)(rand() % 12);
		if (m.op == DPSOCK_PL_OP_LISTEN || m.op == DPSOCK_PL_OP_CONNECT ||
		    m.op == DPSOCK_PL_OP_UDP_BIND)
			m.op = 100; /* do not open real sockets at random addresses */
		m.slot = (uint32_t)rand() % (c.nw * spw + 10);
		post((uint32_t)rand() % c.nw, &m);
	}
	printf("random burst done\n");
	fflush(stdout);
	/* a corrupt ring: prod far beyond what the ring can hold */
	h = (struct dpsock_spsc_hdr *)(c.seg + c.g->off_channels +
				       ((uint64_t)c.ch * c.nw + 0) * c.g->chan_stride);
	__atomic_store_n(&h->prod, __atomic_load_n(&h->cons, __ATOMIC_RELAXED) + (1u << 30),
			 __ATOMIC_RELEASE);
	{
		uint64_t one = 1;

		for (i = 0; i < (int)c.nw; i++)
			if (write(c.wefd[i], &one, sizeof(one)) < 0)
				die("wake: %s", strerror(errno));
	}
	printf("ring corrupted\n");
	fflush(stdout);
	/* dpsockd must hang up on us */
	{
		struct pollfd p = { .fd = c.ctl, .events = POLLIN };

		if (poll(&p, 1, 5000) <= 0)
			die("dpsockd did not disconnect the corrupt client within 5 s");
		if (recv(c.ctl, &b, 1, MSG_DONTWAIT) != 0)
			die("control socket readable but not at EOF");
	}
	printf("disconnected by dpsockd\n");
	return 0;
}

int
main(int argc, char **argv)
{
	uint16_t port;

	if (argc != 4)
		die("usage: pl_hostile SOCKET echo|hostile|hold PORT");
	port = (uint16_t)atoi(argv[3]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	attach(argv[1]);
	listen_all(port);
	printf("listening on %u (%u workers, waiter %u, channel %u)\n", port, c.nw, c.wid, c.ch);
	if (strcmp(argv[2], "hostile") == 0)
		return hostile(port);
	if (strcmp(argv[2], "hold") == 0) {
		while (!stop) {
			accept_all();
			for (int i = 0; i < MAXS; i++)
				if (c.conns[i].live) {
					while (!stop)
						pause();
					return 0;
				}
			wait_events(50);
		}
		return 0;
	}
	if (strcmp(argv[2], "echo") != 0)
		die("unknown mode %s", argv[2]);
	while (!stop) {
		accept_all();
		echo_conns();
		if (c.g->state == DPSOCK_PL_STOPPED) {
			printf("dpsockd stopped\n");
			return 0;
		}
		wait_events(20);
	}
	return 0;
}
