/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness: everything a preload client can say to dpsockd
 * (daemon/clients.c, daemon/serve.c; abi/preload_wire.h).
 *
 * dpsockd runs in this process as it does alone: the stack (fuzz_stack.h)
 * with the preload server as its app, its control thread listening on its
 * unix socket. The harness's thread is the worker; the input plays a
 * hostile client: it connects, sends control messages of any size, type
 * and content with any file descriptors attached (the real accept,
 * SO_PEERCRED and recvmsg path), maps the segment a WELCOME hands it, and
 * writes what a shim may write there: commands on its command rings, ring
 * indices, the shim-owned slot fields (watch[], queued[], doorbells), tx FIFO
 * contents (TCP bytes, UDP datagram headers that lie) and FIFO indices; it
 * reads replies and rx FIFOs as a shim would. Frames from the network reach
 * the same worker (fuzz_stack_frame_record), so that accepted connections,
 * data and datagrams flow into the client's slots.
 *
 * Each input starts attached (HELLO, a waiter, a channel: see sessions
 * below). When the client hangs up, its group must be released (every
 * socket of it reset, the segment freed); after each input every mbuf must
 * be back in its pool.
 * A control message must be answered or the connection closed within
 * REPLY_WAIT_MS, and the group released within the same time after the
 * hang-up: a deadlock is a finding.
 *
 * Input: records, until the input ends (the first byte of each % 10).
 *   0 frame record (fuzz_stack.h)
 *   1 n               lwIP timers: (n % 64 + 1) periods of 25 ms
 *   2 mode type fds len BYTES[len]  a control message. mode: 1 a valid
 *                     header (magic, version, type) under the bytes, which
 *                     then start at offset 8; 2 exactly 128 bytes (else
 *                     len, 1 to 255); 4 id = last channel, arg = last waiter;
 *                     8 token = the group's. fds % 8: none, an eventfd, a
 *                     pipe, two eventfds, /dev/null, 70 eventfds, the
 *                     segment's memfd, a socket
 *   3 chan flags CMD[64]  a command on channel chan % channels for worker 0;
 *                     flags: 1 slot and gen of a slot the client learnt
 *                     (cmd.slot % their number), 2 port from the stack's
 *                     last TCP segment
 *   4 what value[4]   an index the shim owns, written raw: what % 5 = a
 *                     command ring's prod, a reply ring's cons, a tx FIFO's
 *                     prod, an rx FIFO's cons, a wait ring's cons
 *                     (channel/slot/waiter from what / 5)
 *   5 slot field value[4]  a shim-written slot word: field % 14 = watch[0-3],
 *                     queued[0-3], tx_doorbell, rx_doorbell, want_tx, any
 *                     word of the header (value's top byte); 12, 13: armed
 *                     and overflow of waiter slot % max_waiters
 *   6 slot mode len BYTES[len]  into the slot's tx FIFO: mode 1 as one UDP
 *                     datagram (a true header), else raw bytes (UDP
 *                     headers of any content); mode 2: then TX_KICK
 *   7 slot n          the shim reads n * 16 bytes of the slot's rx FIFO
 *                     (accept records are learnt); RX_KICK if it was full
 *   8 n               (n % 8) + 1 worker loop iterations
 *   9 -               hang up and connect again (the group dies)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
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
#include "core/stack_priv.h"
#include "server_priv.h"

#include "fuzz_check.h"
#include "fuzz_stack.h"

#define REPLY_WAIT_MS 5000
#define MAX_KNOWN 32

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The client's view (what a shim keeps). */
static struct {
	int fd;                   /* control connection, -1 none */
	unsigned char *seg;       /* the group's segment, NULL before WELCOME */
	size_t seg_size;
	struct dpsock_pl_seg geo; /* its header, copied once */
	uint64_t token;
	uint32_t last_chan, last_waiter;
	uint32_t chans[8];        /* channel ids the daemon gave */
	unsigned int n_chans;
	struct { uint32_t slot, gen; } known[MAX_KNOWN];
	unsigned int n_known;
	uint32_t cookie;
} cl = { .fd = -1 };

static char sock_path[108];

/* ---- time ------------------------------------------------------------------ */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Let dpsockd's control thread run: sleep until fd is readable (fd >= 0)
 * or 50 us passed. Spinning instead would take the CPU it needs on a
 * loaded machine; the worker is polled between the sleeps (the control
 * thread waits for it to acknowledge removals). */
static void
wait_ctl(int fd)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = 50000 };
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (fd >= 0)
		ppoll(&pfd, 1, &ts, NULL);
	else
		nanosleep(&ts, NULL);
}

/* ---- the control connection --------------------------------------------------- */

/* Connect without blocking the worker's thread: an input that hangs up and
 * reconnects faster than the control thread accepts fills the listener's
 * backlog, and a blocking connect would then sleep (and a signal, such as
 * libFuzzer's timer, end it with EINTR). EAGAIN: let the worker and the
 * control thread run, and try again, within REPLY_WAIT_MS. */
static void
client_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t t0 = now_ms();

	cl.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	FUZZ_CHECK(cl.fd >= 0, "socket: %s", strerror(errno));
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	while (connect(cl.fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		FUZZ_CHECK(errno == EAGAIN, "connect %s: %s", sock_path, strerror(errno));
		FUZZ_CHECK(now_ms() - t0 < REPLY_WAIT_MS,
			   "the control thread accepted no connection within %d ms", REPLY_WAIT_MS);
		fuzz_stack_poll(1);
		wait_ctl(-1);
	}
	FUZZ_CHECK(fcntl(cl.fd, F_SETFL, fcntl(cl.fd, F_GETFL) & ~O_NONBLOCK) == 0,
		   "fcntl: %s", strerror(errno));
}

static void
forget_segment(void)
{
	if (cl.seg != NULL)
		munmap(cl.seg, cl.seg_size);
	cl.seg = NULL;
	cl.seg_size = 0;
	cl.n_chans = 0;
	cl.n_known = 0;
	cl.last_chan = cl.last_waiter = 0;
}

/* Is no group alive any more and no connection open? (the control
 * thread's tables, read while it may write them: atomics) */
static bool
daemon_idle(void)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	uint32_t i, hi = __atomic_load_n(&c->groups_hi, __ATOMIC_ACQUIRE);

	for (i = 0; i < hi; i++)
		if (__atomic_load_n(&c->groups[i], __ATOMIC_ACQUIRE) != NULL)
			return false;
	return __atomic_load_n(&c->n_conns, __ATOMIC_ACQUIRE) == 0;
}

/* Hang up and wait until dpsockd released what the client had, the
 * worker running meanwhile (the control thread waits for it). */
static void
client_hangup(void)
{
	uint64_t t0 = now_ms();

	if (cl.fd >= 0)
		close(cl.fd);
	cl.fd = -1;
	forget_segment();
	while (!daemon_idle()) {
		fuzz_stack_poll(1);
		FUZZ_CHECK(now_ms() - t0 < REPLY_WAIT_MS,
			   "dpsockd did not release the group within %d ms of the hang-up",
			   REPLY_WAIT_MS);
		wait_ctl(-1);
	}
}

/* A WELCOME with its fds: map the segment, as the shim does. */
static void
take_welcome(const struct dpsock_pl_msg *m, const int *fds, int nfds)
{
	if (m->status != 0 || nfds < 2 || m->seg_size < sizeof(struct dpsock_pl_seg))
		return;
	forget_segment();
	cl.seg = mmap(NULL, m->seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	FUZZ_CHECK(cl.seg != MAP_FAILED, "mmap of the segment (%llu bytes): %s",
		   (unsigned long long)m->seg_size, strerror(errno));
	cl.seg_size = m->seg_size;
	memcpy(&cl.geo, cl.seg, sizeof(cl.geo));
	FUZZ_CHECK(cl.geo.magic == DPSOCK_PL_SEG_MAGIC && cl.geo.seg_size == m->seg_size &&
		   cl.geo.n_workers == 1, "segment header");
	cl.token = m->token;
}

/* Send one message and wait for the answer or the hang-up. */
static void
ctl_send(const struct dpsock_pl_msg *m, size_t len, const int *sfds, unsigned int nsfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * (DPSOCK_PL_MAX_FDS + 8))];
		struct cmsghdr align;
	} u;
	struct dpsock_pl_msg r;
	struct iovec iov = { .iov_base = (void *)m, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	uint64_t t0 = now_ms();
	struct cmsghdr *cm;
	int fds[DPSOCK_PL_MAX_FDS], nfds = 0, i;
	ssize_t n;

	if (cl.fd < 0)
		return;
	if (nsfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nsfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nsfds);
		memcpy(CMSG_DATA(cm), sfds, sizeof(int) * nsfds);
	}
	if (sendmsg(cl.fd, &mh, MSG_NOSIGNAL) < 0) {
		/* the daemon hung up earlier */
		client_hangup();
		client_connect();
		return;
	}
	/* the answer: the worker runs meanwhile (channel and waiter removal
	 * wait for it) */
	for (;;) {
		iov.iov_base = &r;
		iov.iov_len = sizeof(r);
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		n = recvmsg(cl.fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
		fuzz_stack_poll(1);
		FUZZ_CHECK(now_ms() - t0 < REPLY_WAIT_MS,
			   "no answer to a control message within %d ms", REPLY_WAIT_MS);
		wait_ctl(cl.fd);
	}
	if (n > 0)
		for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm))
			for (i = 0; i < (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int)); i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (nfds < DPSOCK_PL_MAX_FDS)
					fds[nfds++] = fd;
				else
					close(fd);
			}
	if (n <= 0) {
		/* dpsockd closed the connection: what it had is released */
		client_hangup();
		client_connect();
	} else {
		FUZZ_CHECK(n == sizeof(r) && r.magic == DPSOCK_PL_MAGIC &&
			   r.version == DPSOCK_PL_VERSION, "malformed answer (%zd bytes)", n);
		FUZZ_CHECK(memchr(r.text, '\0', sizeof(r.text)) != NULL, "answer text");
		if (r.type == DPSOCK_PL_WELCOME)
			take_welcome(&r, fds, nfds);
		else if (r.type == DPSOCK_PL_REPLY && r.status == 0 && m->type == DPSOCK_PL_CHANNEL_ADD)
			cl.chans[cl.n_chans++ % 8] = cl.last_chan = r.id;
		else if (r.type == DPSOCK_PL_REPLY && r.status == 0 && m->type == DPSOCK_PL_WAITER_ADD)
			cl.last_waiter = r.id;
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

/* The fds a message carries (fds % 8, see the file comment). */
static unsigned int
make_fds(uint8_t sel, int *fds)
{
	unsigned int n = 0, i;
	int p[2];

	switch (sel % 8) {
	case 1:
		fds[n++] = eventfd(0, EFD_CLOEXEC);
		break;
	case 2:
		if (pipe2(p, O_CLOEXEC) == 0) {
			fds[n++] = p[0];
			close(p[1]);
		}
		break;
	case 3:
		fds[n++] = eventfd(0, EFD_CLOEXEC);
		fds[n++] = eventfd(0, EFD_CLOEXEC);
		break;
	case 4:
		fds[n++] = open("/dev/null", O_RDONLY | O_CLOEXEC);
		break;
	case 5:
		for (i = 0; i < DPSOCK_PL_MAX_FDS + 4; i++)
			fds[n++] = eventfd(0, EFD_CLOEXEC);
		break;
	case 6:
		fds[n++] = memfd_create("fuzz", MFD_CLOEXEC);
		break;
	case 7:
		fds[n++] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		break;
	}
	return n;
}

static size_t
rec_ctl(const uint8_t *p, size_t n)
{
	union {
		struct dpsock_pl_msg m;
		unsigned char raw[8 + 256]; /* longer messages than the struct, too */
	} u;
	struct dpsock_pl_msg *m = &u.m;
	uint8_t mode, type, fdsel, len;
	int fds[DPSOCK_PL_MAX_FDS + 8];
	unsigned int nfds, i;
	size_t off;

	if (n < 4)
		return 0;
	mode = p[0];
	type = p[1];
	fdsel = p[2];
	len = p[3];
	p += 4;
	n -= 4;
	if (len > n)
		len = (uint8_t)n;
	memset(&u, 0, sizeof(u));
	off = 0;
	if (mode & 1) {
		m->magic = DPSOCK_PL_MAGIC;
		m->version = DPSOCK_PL_VERSION;
		m->type = type;
		off = 8;
	}
	memcpy(u.raw + off, p, len);
	if (mode & 4) {
		m->id = cl.last_chan;
		m->arg = cl.last_waiter;
	}
	if (mode & 8)
		m->token = cl.token;
	nfds = make_fds(fdsel, fds);
	ctl_send(m, mode & 2 ? sizeof(*m) : (len ? len : 1), fds, nfds);
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return 4 + (size_t)len;
}

/* ---- the segment, as a shim sees it ----------------------------------------- */

static unsigned char *
chan_block(uint32_t ch)
{
	return cl.seg + cl.geo.off_channels + (uint64_t)ch * cl.geo.chan_stride;
}

static unsigned char *
slot_base(uint32_t num)
{
	return cl.seg + cl.geo.off_slots + (uint64_t)num * cl.geo.slot_stride;
}

static unsigned char *
slot_data(uint32_t num)
{
	return cl.seg + cl.geo.off_data + (uint64_t)num * cl.geo.data_stride;
}

/* Take every reply waiting on channel ch; learn the slots they name. */
static void
drain_replies(uint32_t ch)
{
	struct dpsock_spsc_cons rc;
	struct dpsock_pl_reply r;

	if (dpsock_spsc_cons_attach(&rc, chan_block(ch) + cl.geo.cmd_ring_size,
				    cl.geo.reply_ring_size) != 0)
		return;
	while (dpsock_spsc_dequeue_burst(&rc, &r, 1) == 1)
		if (r.result == 0 && r.slot < cl.geo.slots_per_worker && cl.n_known < MAX_KNOWN) {
			cl.known[cl.n_known].slot = r.slot;
			cl.known[cl.n_known++].gen = r.gen;
		}
}

static size_t
rec_cmd(const uint8_t *p, size_t n)
{
	struct dpsock_spsc_prod pc;
	struct dpsock_pl_cmd c;
	uint32_t ch;

	if (n < 2 + sizeof(c))
		return 0;
	if (cl.seg == NULL || cl.n_chans == 0)
		return 2 + sizeof(c);
	ch = cl.chans[p[0] % (cl.n_chans < 8 ? cl.n_chans : 8)];
	memcpy(&c, p + 2, sizeof(c));
	if ((p[1] & 1) && cl.n_known > 0) {
		unsigned int k = c.slot % cl.n_known;

		c.slot = cl.known[k].slot;
		c.gen = cl.known[k].gen;
	}
	if (p[1] & 2)
		c.port = htons(fuzz_seen.tcp_dport);
	c.cookie = ++cl.cookie;
	if (ch < cl.geo.max_channels &&
	    dpsock_spsc_prod_attach(&pc, chan_block(ch), cl.geo.cmd_ring_size) == 0)
		dpsock_spsc_enqueue_burst(&pc, &c, 1);
	fuzz_stack_poll(2);
	if (ch < cl.geo.max_channels)
		drain_replies(ch);
	return 2 + sizeof(c);
}

static uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t
rec_index(const uint8_t *p, size_t n)
{
	struct dpsock_spsc_hdr *h;
	uint32_t what, which, v;
	unsigned char *base;

	if (n < 5)
		return 0;
	if (cl.seg == NULL)
		return 5;
	what = p[0] % 5;
	which = p[0] / 5;
	v = rd32(p + 1);
	switch (what) {
	case 0: /* a command ring's prod */
	case 1: /* a reply ring's cons */
		if (cl.n_chans == 0)
			return 5;
		base = chan_block(cl.chans[which % (cl.n_chans < 8 ? cl.n_chans : 8)] %
				  cl.geo.max_channels);
		h = (struct dpsock_spsc_hdr *)(void *)(what == 0 ? base : base + cl.geo.cmd_ring_size);
		__atomic_store_n(what == 0 ? &h->prod : &h->cons, v, __ATOMIC_RELEASE);
		break;
	case 4: /* a wait ring's cons (the worker produces slot numbers) */
		h = (struct dpsock_spsc_hdr *)(void *)(cl.seg + cl.geo.off_waiters +
			(uint64_t)(which % cl.geo.max_waiters) * cl.geo.waiter_stride +
			DPSOCK_PL_WAITER_HDR);
		__atomic_store_n(&h->cons, v, __ATOMIC_RELEASE);
		break;
	default: /* a slot's tx FIFO prod, rx FIFO cons */
		base = slot_base(which % cl.geo.slots_per_worker);
		h = (struct dpsock_spsc_hdr *)(void *)(base + (what == 2 ? cl.geo.tx_fifo_off :
								     cl.geo.rx_fifo_off));
		__atomic_store_n(what == 2 ? &h->prod : &h->cons, v, __ATOMIC_RELEASE);
		break;
	}
	fuzz_stack_poll(1);
	return 5;
}

static size_t
rec_slot_word(const uint8_t *p, size_t n)
{
	struct dpsock_pl_slot *sh;
	uint32_t field, v;

	if (n < 6)
		return 0;
	if (cl.seg == NULL)
		return 6;
	sh = (struct dpsock_pl_slot *)(void *)slot_base(p[0] % cl.geo.slots_per_worker);
	field = p[1] % 14;
	v = rd32(p + 2);
	if (field >= 12) {
		/* the header of waiter p[0]: armed (shim-written), overflow */
		struct dpsock_pl_waiter *wt = (struct dpsock_pl_waiter *)(void *)(cl.seg +
			cl.geo.off_waiters + (uint64_t)(p[0] % cl.geo.max_waiters) *
			cl.geo.waiter_stride);

		__atomic_store_n(field == 12 ? &wt->armed : &wt->overflow, v, __ATOMIC_RELAXED);
	} else if (field < 4)
		__atomic_store_n(&sh->watch[field], v, __ATOMIC_RELAXED);
	else if (field < 8)
		__atomic_store_n(&sh->queued[field - 4], v, __ATOMIC_RELAXED);
	else if (field == 8)
		__atomic_store_n(&sh->tx_doorbell, v, __ATOMIC_RELAXED);
	else if (field == 9)
		__atomic_store_n(&sh->rx_doorbell, v, __ATOMIC_RELAXED);
	else if (field == 10)
		__atomic_store_n(&sh->want_tx, v, __ATOMIC_RELAXED);
	else /* any word of the header, worker-written ones included */
		__atomic_store_n((uint32_t *)(void *)sh + (v >> 24) % (DPSOCK_PL_SLOT_HDR / 4),
				 v & 0xffffff, __ATOMIC_RELAXED);
	fuzz_stack_poll(1);
	return 6;
}

/* A command for slot num with the generation the slot shows. */
static void
kick(uint32_t num, uint16_t op)
{
	const struct dpsock_pl_slot *sh = (const void *)slot_base(num);
	struct dpsock_spsc_prod pc;
	struct dpsock_pl_cmd c = { .op = op, .slot = num };

	if (cl.n_chans == 0 || cl.chans[0] >= cl.geo.max_channels)
		return;
	c.gen = __atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE);
	c.cookie = ++cl.cookie;
	if (dpsock_spsc_prod_attach(&pc, chan_block(cl.chans[0]), cl.geo.cmd_ring_size) == 0)
		dpsock_spsc_enqueue_burst(&pc, &c, 1);
}

static size_t
rec_tx(const uint8_t *p, size_t n)
{
	struct dpsock_fifo_prod fp;
	uint32_t num;
	uint8_t mode, len;
	struct iovec iov[2];

	if (n < 3)
		return 0;
	mode = p[1];
	len = p[2];
	if (len > n - 3)
		len = (uint8_t)(n - 3);
	if (cl.seg == NULL)
		return 3 + (size_t)len;
	num = p[0] % cl.geo.slots_per_worker;
	if (dpsock_fifo_prod_attach_at(&fp, slot_base(num) + cl.geo.tx_fifo_off,
				       slot_data(num) + cl.geo.tx_data_off, cl.geo.tx_fifo_size) == 0) {
		unsigned char buf[sizeof(struct dpsock_pl_dgram) + 264];
		uint32_t want = len, got;

		memset(buf, 0, sizeof(buf));
		if (mode & 1) {
			struct dpsock_pl_dgram h = {
				.len = len, .addr = htonl(FUZZ_PEER_IP), .port = htons(9),
			};

			memcpy(buf, &h, sizeof(h));
			memcpy(buf + sizeof(h), p + 3, len);
			want = (uint32_t)sizeof(h) + ((len + 7u) & ~7u);
		} else {
			memcpy(buf, p + 3, len);
		}
		got = dpsock_fifo_write_reserve(&fp, want, iov);
		if (got == want) {
			memcpy(iov[0].iov_base, buf, iov[0].iov_len);
			if (iov[1].iov_len)
				memcpy(iov[1].iov_base, buf + iov[0].iov_len, iov[1].iov_len);
			dpsock_fifo_write_commit(&fp, got);
		}
		if (mode & 2)
			kick(num, DPSOCK_PL_OP_TX_KICK);
	}
	fuzz_stack_poll(2);
	if (cl.n_chans > 0 && cl.chans[0] < cl.geo.max_channels)
		drain_replies(cl.chans[0]);
	return 3 + (size_t)len;
}

static size_t
rec_rx(const uint8_t *p, size_t n)
{
	struct dpsock_fifo_cons fc;
	struct dpsock_pl_slot *sh;
	uint32_t num, want, got;
	struct iovec iov[2];

	if (n < 2)
		return 0;
	if (cl.seg == NULL)
		return 2;
	num = p[0] % cl.geo.slots_per_worker;
	sh = (struct dpsock_pl_slot *)(void *)slot_base(num);
	if (dpsock_fifo_cons_attach_at(&fc, slot_base(num) + cl.geo.rx_fifo_off,
				       slot_data(num) + cl.geo.rx_data_off, cl.geo.rx_fifo_size) != 0)
		return 2;
	want = (uint32_t)p[1] * 16;
	got = dpsock_fifo_read_peek(&fc, want, iov);
	/* a listener's FIFO holds accept records: learn the slots */
	if (__atomic_load_n(&sh->kind, __ATOMIC_ACQUIRE) == DPSOCK_PL_TCP_LISTENER) {
		uint32_t i;

		for (i = 0; i + sizeof(struct dpsock_pl_accept) <= got && i < iov[0].iov_len;
		     i += sizeof(struct dpsock_pl_accept)) {
			struct dpsock_pl_accept a;

			memcpy(&a, (unsigned char *)iov[0].iov_base + i, sizeof(a));
			if (cl.n_known < MAX_KNOWN) {
				cl.known[cl.n_known].slot = a.slot;
				cl.known[cl.n_known++].gen = a.gen;
			}
		}
	}
	dpsock_fifo_read_consume(&fc, got);
	if (__atomic_exchange_n(&sh->rx_doorbell, 0, __ATOMIC_SEQ_CST))
		kick(num, DPSOCK_PL_OP_RX_KICK);
	fuzz_stack_poll(2);
	return 2;
}

/* ---- sessions ---------------------------------------------------------------- */

/*
 * Inputs start attached: a HELLO answered, a waiter, a channel replying to
 * it (session_open). An input that leaves the group as it found it (one
 * process, that channel and that waiter: control messages that were
 * refused, commands, frames, FIFO data) leaves the session reusable: its
 * slots are closed (abortively, in the order that gives the next input the
 * slot numbers a new group would) and its rings drained. An input that
 * changed the group (channels, waiters, exec), wrote ring indices or waiter
 * words, hung up, or broke its group ends with a hang-up: the next one
 * attaches afresh. Attaching and the release after a hang-up are
 * round trips with dpsockd's control thread, which dominate the cost of
 * an input.
 */
static bool session;
static uint32_t sess_chan, sess_waiter; /* the channel and waiter it opened */

static void
session_open(void)
{
	struct dpsock_pl_msg m;
	int efd;

	if (cl.fd >= 0)
		client_hangup();
	client_connect();
	memset(&m, 0, sizeof(m));
	m.magic = DPSOCK_PL_MAGIC;
	m.version = DPSOCK_PL_VERSION;
	m.type = DPSOCK_PL_HELLO;
	snprintf(m.text, sizeof(m.text), "fuzz_preload");
	ctl_send(&m, sizeof(m), NULL, 0);
	m.type = DPSOCK_PL_WAITER_ADD;
	efd = eventfd(0, EFD_CLOEXEC);
	ctl_send(&m, sizeof(m), &efd, 1);
	close(efd);
	m.type = DPSOCK_PL_CHANNEL_ADD;
	m.arg = cl.last_waiter;
	ctl_send(&m, sizeof(m), NULL, 0);
	FUZZ_CHECK(cl.seg != NULL && cl.n_chans == 1, "a well-formed attach failed");
	sess_chan = cl.chans[0];
	sess_waiter = cl.last_waiter;
	session = true;
}

static struct pl_group *
our_group(void)
{
	struct pl_ctl *c = &dpsock_pl_ctl;
	uint32_t i, hi = __atomic_load_n(&c->groups_hi, __ATOMIC_ACQUIRE);

	for (i = 0; i < hi; i++) {
		struct pl_group *g = __atomic_load_n(&c->groups[i], __ATOMIC_ACQUIRE);

		if (g != NULL && g->token == cl.token)
			return g;
	}
	return NULL;
}

/* Close every slot of the session and drain its rings. Returns false when
 * the session cannot be reused. */
static bool
session_clean(void)
{
	struct pl_group *g = our_group();
	struct dpsock_spsc_prod pc;
	struct dpsock_spsc_cons wc;
	struct pl_wgroup *wg;
	uint64_t e;
	uint32_t i, spw;

	if (g == NULL || cl.fd < 0 || cl.seg == NULL || cl.n_chans != 1 ||
	    cl.chans[0] != sess_chan || cl.last_waiter != sess_waiter ||
	    __atomic_load_n(&g->bad, __ATOMIC_ACQUIRE) || __atomic_load_n(&g->dying, __ATOMIC_ACQUIRE))
		return false;
	/* control messages left the group as session_open made it: one
	 * process, its channel and its waiter alive, nothing else (the control
	 * thread is idle: every message was answered) */
	if (g->n_procs != 1)
		return false;
	for (i = 0; i < g->geo.max_channels; i++)
		if (__atomic_load_n(&g->chan_live[i], __ATOMIC_ACQUIRE) != (i == sess_chan))
			return false;
	for (i = 0; i < g->geo.max_waiters; i++)
		if (__atomic_load_n(&g->waiter_live[i], __ATOMIC_ACQUIRE) != (i == sess_waiter))
			return false;
	wg = g->wg[0];
	spw = g->geo.slots_per_worker;
	if (wg->bad || dpsock_spsc_prod_attach(&pc, chan_block(cl.chans[0]), cl.geo.cmd_ring_size) != 0)
		return false;
	/* highest first: the free list then hands out slot 0 first again */
	for (i = spw; i-- > 0;) {
		struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_CLOSE, .arg = { 1 } };

		if (!wg->slots[i].in_use)
			continue;
		c.slot = wg->slots[i].num;
		c.gen = wg->slots[i].gen;
		if (dpsock_spsc_enqueue_burst(&pc, &c, 1) != 1)
			return false;
		fuzz_stack_poll(1);
	}
	fuzz_stack_poll(1);
	drain_replies(cl.chans[0]);
	for (i = 0; i < spw; i++)
		if (wg->slots[i].in_use)
			return false;
	if (dpsock_spsc_cons_attach(&wc, cl.seg + cl.geo.off_waiters +
				    (uint64_t)cl.last_waiter * cl.geo.waiter_stride + DPSOCK_PL_WAITER_HDR,
				    cl.geo.wait_ring_size) != 0)
		return false;
	while (dpsock_spsc_dequeue_burst(&wc, &e, 1) == 1)
		;
	cl.n_known = 0;
	return true;
}

/* ---- set-up and the loop ------------------------------------------------------ */

/* At exit: hang up while the worker still runs (the control thread waits
 * for it to release the group), then stop the control thread. */
static void
teardown(void)
{
	client_hangup();
	dpsock_pl_main_stop(NULL);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char conf[512];

	/* small groups: a segment of a few hundred KiB */
	snprintf(conf, sizeof(conf),
		 "preload = { max_groups = 4; max_threads = 4; slots = 16; rx_fifo_kb = 4;\n"
		 "            tx_fifo_kb = 4; poll_batch = 16; };\n");
	fuzz_stack_init(conf, &dpsock_preload_app);
	FUZZ_CHECK(dpsock_pl_main_start(NULL) == 0, "preload control thread did not start");
	snprintf(sock_path, sizeof(sock_path), "%s", dpsock_pl_ctl.path);
	atexit(teardown);
	fuzz_stack_reset();
	session_open(); /* a broken set-up fails here */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data;
	size_t n = size, used;
	bool dirty = false;

	if (!session)
		session_open();
	while (n > 0) {
		uint8_t t = p[0] % 10;

		p++;
		n--;
		switch (t) {
		case 0:
			used = fuzz_stack_frame_record(p, n);
			break;
		case 1:
			used = n >= 1 ? (fuzz_stack_timers(p[0] % 64 + 1u), 1) : 0;
			break;
		case 2:
			used = rec_ctl(p, n); /* session_clean checks what it changed */
			break;
		case 3:
			used = rec_cmd(p, n);
			break;
		case 4:
			used = rec_index(p, n);
			dirty = true;
			break;
		case 5:
			used = rec_slot_word(p, n);
			dirty |= n >= 2 && p[1] % 14 >= 12; /* waiter words */
			break;
		case 6:
			used = rec_tx(p, n);
			break;
		case 7:
			used = rec_rx(p, n);
			break;
		case 8:
			used = n >= 1 ? (fuzz_stack_poll(p[0] % 8 + 1u), 1) : 0;
			break;
		default:
			client_hangup();
			client_connect();
			dirty = true;
			used = 0;
			break;
		}
		if (used == 0 && t != 9)
			break;
		p += used;
		n -= used;
	}
	if (dirty || !session_clean()) {
		client_hangup();
		session = false;
	}
	fuzz_stack_reset();
	return 0;
}
