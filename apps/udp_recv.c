/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-udp-recv — a UDP receiver written for the preload library's
 * extra API (include/dpsock/extra.h), and the same receiver with plain
 * recvfrom to compare it with. An ordinary program: no DPDK, nothing to
 * link; it runs with or without LD_PRELOAD=libdpsock_preload.so (the extra
 * API's modes then fall back to recvfrom, and say so).
 *
 *   dpsock-udp-recv [-a ADDR] -p PORT [-m MODE] [-n COUNT] [-t IDLE_S]
 *                   [-b BATCH] [--cb keep|drop|mix] [--ack] [--verify]
 *                   [--touch] [--wait-signal] [--probe]
 *
 * Modes:
 *   recvfrom  recvfrom() into a buffer (the copy every socket program makes)
 *   zcopy     recvfrom_zcopy(): up to BATCH datagrams read where they lie in
 *             the shared-memory FIFO, then free_packets()
 *   callback  a receive callback sees each datagram first (--cb: keep all,
 *             drop all, or mix: drop seq % 3 == 0, hold seq % 3 == 1 and
 *             free those after the next receive, keep the rest), then
 *             zcopy for the kept ones
 *   comp      completion polling: comp_poll() returns the datagrams of every
 *             socket of the thread, and sleeps on comp_fds() when idle
 *
 * Datagrams from test/tools/udp_blast carry an 8-byte sequence number and
 * a pattern (--verify checks every byte). --ack sends the count accounted
 * for back to the sender every 16 datagrams (its window: no loss by
 * overrun). It stops after COUNT datagrams accounted for (received, or
 * dropped/held by the callback), or IDLE_S seconds without one, and
 * prints one line:
 *
 *   udp_recv: mode=zcopy msgs=N bytes=B dropped_cb=D held_cb=H bad=0
 *             missing=M elapsed_s=T msgs_per_s=R cpu_ns_per_msg=C
 *
 * --touch: read every byte of each datagram (a 64-bit sum), as a program
 * that uses its data does; without it only the sequence number is read.
 * --wait-signal: bind, print "udp_recv: ready", then read nothing until
 * SIGUSR1 (a benchmark fills the FIFO first, then times the drain).
 * --probe: print whether the extra API is there and exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <dpsock/extra.h>

enum mode { M_RECVFROM, M_ZCOPY, M_CALLBACK, M_COMP };
static const char *const mode_names[] = { "recvfrom", "zcopy", "callback", "comp" };
enum cb_policy { CB_KEEP, CB_DROP, CB_MIX };
static const char *const cb_names[] = { "keep", "drop", "mix" };

#define MAX_BATCH 256
#define SEEN_BITS (1u << 24) /* sequence numbers tracked for "missing" */

static struct {
	const struct dpsock_extra_api *api;
	enum mode mode;
	enum cb_policy cb;
	bool ack, verify, touch;
	uint64_t sum;             /* --touch: what reading every byte added up to */
	unsigned int batch;
	uint64_t count;           /* stop after this many accounted for (0: never) */
	double idle_s;
	int fd;
	/* results */
	uint64_t msgs, bytes, dropped_cb, held_cb, bad, accounted;
	uint64_t max_seq;
	unsigned char *seen;      /* bitmap of sequence numbers */
	struct sockaddr_in peer;  /* where acks go */
	bool have_peer;
	uint64_t acked;
	struct dpsock_zpkt held[256]; /* held by the callback, freed by the main loop */
	unsigned int n_held;
} g = { .batch = 32, .idle_s = 5, .fd = -1 };

static volatile sig_atomic_t go, stop;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		go = 1;
	else
		stop = 1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's CPU time, user + system: the scheduler's own count, to the
 * nanosecond (getrusage's is sampled at the tick). */
static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The pattern test/tools/udp_blast writes: byte i of datagram seq. */
static inline unsigned char
pattern(uint64_t seq, size_t i)
{
	return (unsigned char)(seq * 7u + i * 13u);
}

/* Sequence number and a check of the payload, over one or two segments. */
static bool
check(const struct iovec *iov, int n, uint64_t *seq_out)
{
	unsigned char head[8];
	size_t got = 0, pos = 0;
	uint64_t seq;

	for (int k = 0; k < n && got < 8; k++) {
		size_t take = iov[k].iov_len < 8 - got ? iov[k].iov_len : 8 - got;

		memcpy(head + got, iov[k].iov_base, take);
		got += take;
	}
	if (got < 8)
		return false;
	memcpy(&seq, head, 8);
	*seq_out = seq;
	if (!g.verify)
		return true;
	for (int k = 0; k < n; k++) {
		const unsigned char *p = iov[k].iov_base;

		for (size_t i = 0; i < iov[k].iov_len; i++, pos++)
			if (pos >= 8 && p[i] != pattern(seq, pos))
				return false;
	}
	return true;
}

static void
send_ack(void)
{
	uint64_t v = g.accounted;

	if (!g.ack || !g.have_peer)
		return;
	if (sendto(g.fd, &v, sizeof(v), MSG_DONTWAIT, (struct sockaddr *)&g.peer,
		   sizeof(g.peer)) == (ssize_t)sizeof(v))
		g.acked = g.accounted;
}

/* One datagram accounted for: received (kind 0), dropped (1) or held (2)
 * by the callback. */
static void
account(const struct iovec *iov, int n, size_t len, const struct sockaddr_in *from, int kind)
{
	uint64_t seq = 0;

	if (g.touch) {
		/* read every byte, as a program that uses its data does */
		for (int k = 0; k < n; k++) {
			const unsigned char *p = iov[k].iov_base;
			size_t l = iov[k].iov_len, i = 0;
			uint64_t w, acc = 0;

			for (; i + 8 <= l; i += 8) {
				memcpy(&w, p + i, 8);
				acc += w;
			}
			for (; i < l; i++)
				acc += p[i];
			g.sum += acc;
		}
	}
	if (!check(iov, n, &seq)) {
		g.bad++;
	} else {
		if (seq < SEEN_BITS)
			g.seen[seq / 8] |= (unsigned char)(1u << (seq % 8));
		if (seq > g.max_seq)
			g.max_seq = seq;
	}
	if (kind == 0) {
		g.msgs++;
		g.bytes += len;
	} else if (kind == 1) {
		g.dropped_cb++;
	} else {
		g.held_cb++;
	}
	g.accounted++;
	if (from != NULL && !g.have_peer) {
		g.peer = *from;
		g.have_peer = true;
	}
	if (g.ack && g.accounted - g.acked >= 16)
		send_ack();
}

static enum dpsock_recv_verdict
on_datagram(int fd, const struct dpsock_zpkt *p, void *ctx)
{
	uint64_t seq = 0;
	int kind;

	(void)fd;
	(void)ctx;
	if (g.cb == CB_KEEP)
		return DPSOCK_RECV_KEEP;
	check(p->iov, p->n_iov, &seq);
	kind = g.cb == CB_DROP ? 1 : (int)(seq % 3 == 0 ? 1 : seq % 3 == 1 ? 2 : 0);
	if (kind == 0)
		return DPSOCK_RECV_KEEP;
	if (kind == 2 && g.n_held == sizeof(g.held) / sizeof(g.held[0]))
		kind = 1;
	account(p->iov, p->n_iov, p->len, &p->from, kind);
	if (kind == 1)
		return DPSOCK_RECV_DROP;
	/* held: the main loop frees them after its next receive (held data
	 * keeps its FIFO space, so a program must not sit on it for long) */
	g.held[g.n_held++] = *p;
	return DPSOCK_RECV_HOLD;
}

static bool
done(void)
{
	return stop || (g.count > 0 && g.accounted >= g.count);
}

static int
run_recvfrom(void)
{
	static unsigned char buf[65536];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	ssize_t r = recvfrom(g.fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	struct iovec v = { buf, 0 };

	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	v.iov_len = (size_t)r;
	account(&v, 1, (size_t)r, &from, 0);
	return 1;
}

static int
run_zcopy(void)
{
	struct dpsock_zpkt p[MAX_BATCH];
	int n = g.api->recvfrom_zcopy(g.fd, p, g.batch, 0), k;

	if (n < 0)
		return n == -EAGAIN || n == -EINTR ? 0 : n;
	for (k = 0; k < n; k++)
		account(p[k].iov, p[k].n_iov, p[k].len, &p[k].from, 0);
	g.api->free_packets(p, (unsigned int)n);
	return n;
}

static int
run_comp(void)
{
	struct dpsock_comp c[MAX_BATCH];
	struct dpsock_zpkt p[MAX_BATCH];
	int n = g.api->comp_poll(c, g.batch, DPSOCK_COMP_ARM), k, np = 0;

	if (n < 0)
		return n;
	if (n == 0) {
		int fds[2];
		struct pollfd pf[2];

		if (g.api->comp_fds(fds, 2) != 2)
			return -EIO;
		pf[0] = (struct pollfd){ fds[0], POLLIN, 0 };
		pf[1] = (struct pollfd){ fds[1], POLLIN, 0 };
		poll(pf, 2, 200);
		return 0;
	}
	for (k = 0; k < n; k++) {
		if (!(c[k].events & DPSOCK_COMP_PACKET))
			continue;
		account(c[k].pkt.iov, c[k].pkt.n_iov, c[k].pkt.len, &c[k].pkt.from, 0);
		p[np++] = c[k].pkt;
	}
	g.api->free_packets(p, (unsigned int)np);
	return n;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: dpsock-udp-recv [-a ADDR] -p PORT [-m recvfrom|zcopy|callback|comp]\n"
		   "         [-n COUNT] [-t IDLE_S] [-b BATCH] [--cb keep|drop|mix] [--ack]\n"
		   "         [--verify] [--touch] [--wait-signal] [--probe]\n");
}

static int
pick(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return -1;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cb", required_argument, NULL, 'C' },
		{ "ack", no_argument, NULL, 'A' },
		{ "verify", no_argument, NULL, 'V' },
		{ "touch", no_argument, NULL, 'T' },
		{ "wait-signal", no_argument, NULL, 'W' },
		{ "probe", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_in a = { .sin_family = AF_INET };
	bool wait_signal = false, probe = false;
	double t0, c0, last, t1, c1, el;
	uint64_t missing = 0, prev = 0;
	int o, port = -1, r;

	while ((o = getopt_long(argc, argv, "a:p:m:n:t:b:h", opts, NULL)) != -1) {
		switch (o) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &a.sin_addr) != 1) {
				fprintf(stderr, "dpsock-udp-recv: -a %s: not an IPv4 address\n", optarg);
				return 2;
			}
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'm':
			if ((r = pick(optarg, mode_names, 4)) < 0) {
				usage(stderr);
				return 2;
			}
			g.mode = (enum mode)r;
			break;
		case 'n':
			g.count = strtoull(optarg, NULL, 10);
			break;
		case 't':
			g.idle_s = atof(optarg);
			break;
		case 'b':
			g.batch = (unsigned int)atoi(optarg);
			if (g.batch < 1 || g.batch > MAX_BATCH) {
				fprintf(stderr, "dpsock-udp-recv: -b: 1..%d\n", MAX_BATCH);
				return 2;
			}
			break;
		case 'C':
			if ((r = pick(optarg, cb_names, 3)) < 0) {
				usage(stderr);
				return 2;
			}
			g.cb = (enum cb_policy)r;
			break;
		case 'A':
			g.ack = true;
			break;
		case 'V':
			g.verify = true;
			break;
		case 'T':
			g.touch = true;
			break;
		case 'W':
			wait_signal = true;
			break;
		case 'P':
			probe = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	g.api = dpsock_get_api();
	if (probe) {
		if (g.api == NULL)
			printf("udp_recv: extra API: none\n");
		else
			printf("udp_recv: extra API: version %u size %u caps 0x%" PRIx64 "\n",
			       g.api->version, g.api->size, g.api->caps);
		return 0;
	}
	if (port < 1 || port > 65535) {
		usage(stderr);
		return 2;
	}
	if (g.mode != M_RECVFROM && g.api == NULL) {
		fprintf(stderr, "udp_recv: no dpsock extra API (not preloaded): plain recvfrom\n");
		g.mode = M_RECVFROM;
	}
	g.seen = calloc(SEEN_BITS / 8, 1);
	signal(SIGUSR1, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	g.fd = socket(AF_INET, SOCK_DGRAM, 0);
	a.sin_port = htons((uint16_t)port);
	if (g.fd < 0 || g.seen == NULL || bind(g.fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("dpsock-udp-recv: socket/bind");
		return 1;
	}
	{
		/* a short receive time-out: the idle check runs */
		struct timeval tv = { 0, 200000 };

		setsockopt(g.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (g.mode == M_CALLBACK && (r = g.api->register_recv_callback(g.fd, on_datagram, NULL)) < 0) {
		fprintf(stderr, "udp_recv: register_recv_callback: %s\n", strerror(-r));
		return 1;
	}
	if (g.mode == M_COMP && (r = g.api->comp_add(g.fd, 1)) < 0) {
		fprintf(stderr, "udp_recv: comp_add: %s\n", strerror(-r));
		return 1;
	}
	printf("udp_recv: ready mode=%s fd=%d\n", mode_names[g.mode], g.fd);
	fflush(stdout);
	while (wait_signal && !go && !stop)
		pause();
	t0 = last = now_s();
	c0 = cpu_s();
	while (!done()) {
		switch (g.mode) {
		case M_RECVFROM:
			r = run_recvfrom();
			break;
		case M_COMP:
			r = run_comp();
			break;
		default:
			r = run_zcopy();
			break;
		}
		if (g.n_held > 0) {
			g.api->free_packets(g.held, g.n_held);
			g.n_held = 0;
		}
		if (g.accounted != prev) {   /* progress (the callback's included) */
			prev = g.accounted;
			last = now_s();
		}
		if (r < 0) {
			fprintf(stderr, "udp_recv: %s: %s\n", mode_names[g.mode], strerror(-r));
			return 1;
		}
		if (g.accounted > 0 && g.ack && g.accounted != g.acked && r == 0)
			send_ack();   /* idle: tell the sender where we are */
		if (now_s() - last > g.idle_s)
			break;
	}
	t1 = g.accounted ? last : now_s();
	c1 = cpu_s();
	if (g.n_held > 0)
		g.api->free_packets(g.held, g.n_held);
	send_ack();
	for (uint64_t s = 0; s <= g.max_seq && s < SEEN_BITS && g.accounted > 0; s++)
		if (!(g.seen[s / 8] & (1u << (s % 8))))
			missing++;
	el = t1 - t0;
	printf("udp_recv: mode=%s msgs=%" PRIu64 " bytes=%" PRIu64 " dropped_cb=%" PRIu64
	       " held_cb=%" PRIu64 " bad=%" PRIu64 " missing=%" PRIu64 " max_seq=%" PRIu64
	       " elapsed_s=%.6f msgs_per_s=%.0f cpu_ns_per_msg=%.1f\n",
	       mode_names[g.mode], g.msgs, g.bytes, g.dropped_cb, g.held_cb, g.bad, missing,
	       g.max_seq, el, el > 0 ? (double)g.accounted / el : 0.0,
	       g.accounted ? (c1 - c0) * 1e9 / (double)g.accounted : 0.0);
	return g.bad == 0 ? 0 : 1;
}
