/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernel_load — the Linux-kernel counterpart of dpsock-loadgen for the
 * benchmarks (test/perf/run-all): the same options, the same workload shapes
 * and the same output lines, on the kernel's sockets, in one thread (pin it
 * with taskset). Plus two modes dpsock-loadgen does not have: udp and idle.
 *
 *   kernel_load -d IP [-p PORT] [-c CONNS] [-m rr|churn|bulk|udp|idle]
 *               [-s BYTES] [-n COUNT] [-t SECONDS] [--verify] [--busy-poll]
 *
 * IP: an IPv4 or an IPv6 literal (198.18.1.1, fd00:198:18:1::1); the
 * sockets are of its family.
 *
 * Modes (as dpsock-loadgen's, see apps/README.md):
 *   rr     each connection sends -s bytes and waits for as many back (an
 *          echo server), then the next request; a transaction is one
 *          request/reply, timed from its first byte sent to its last byte
 *          received.
 *   churn  connect, send one request, read the reply, close (orderly, the
 *          client closes first), again; timed from the connect call.
 *   bulk   send 64 KiB chunks as fast as the socket takes them; what comes
 *          back is read and dropped; bytes count when send() takes them.
 *   udp    (not in dpsock-loadgen) -c connected UDP sockets, each with one
 *          datagram of -s bytes outstanding: send, wait for the echo, again.
 *          A reply missing after 200 ms counts in err_lost and the socket
 *          sends the next request.
 *   idle   (not in dpsock-loadgen) open -c connections, print
 *          "loadgen: idle connected=N" once all are up, send nothing and
 *          hold them until -t is up (or SIGINT/SIGTERM), then close them.
 *
 * As in dpsock-loadgen: the first connection is opened alone, the others
 * once it is established (or after a second), at most 16 per loop turn;
 * requests are slices of the same xorshift32 pattern at shifting offsets
 * (--verify compares every reply byte); TCP_NODELAY is set; the run ends
 * when -t is up or every connection did its -n; elapsed time runs from the
 * start to the end. Latencies go to a histogram with 8 sub-buckets per power
 * of two of nanoseconds (within about 6 %), like dpsock-loadgen's of TSC
 * cycles.
 *
 * --warmup SECONDS (not in dpsock-loadgen): transactions, bytes, latencies
 * and elapsed time count from that point only (run-all measures dpsock
 * over the same kind of window with dpsock-stat's counters).
 *
 * The loop blocks in epoll_wait (at most 10 ms), as a kernel program
 * normally does; --busy-poll makes it spin with a zero timeout instead (as
 * dpsock-loadgen's workers do).
 *
 * Output (stdout), the format of dpsock-loadgen (plus err_lost):
 *   loadgen: worker 0 cpu=C conns=.. connected=.. transactions=.. errors=.. ...
 *   loadgen: total mode=rr workers=1 conns=.. ... rate=../s ... p50_us=.. ...
 * Exit 0 when errors=0 and work was done (transactions; bytes in bulk;
 * every connection up in idle), 1 otherwise, 2 on a bad command line.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "load_common.h"

#define LG_MAX_TIME 300
#define LG_MAX_CONNS 100000
#define LG_MAX_SIZE (1u << 20)
#define LG_BULK_CHUNK 65536
#define LG_SHIFTS 4096
#define LG_CONNECT_BURST 16
#define LG_BOUNCE 65536
#define LG_HIST_BUCKETS LAT_HIST_BUCKETS
#define UDP_TIMEOUT_NS 200000000ull
#define MAX_EVENTS 256

enum mode { MODE_RR, MODE_CHURN, MODE_BULK, MODE_UDP, MODE_IDLE };
static const char *const mode_names[] = { "rr", "churn", "bulk", "udp", "idle" };

enum state { ST_IDLE, ST_CONNECTING, ST_OPEN, ST_DONE };

struct conn {
	int fd;
	uint32_t idx;
	enum state state;
	uint64_t done;	/* rr/udp: transactions, churn: connections, bulk: bytes */
	uint64_t t0;	/* ns, start of the current transaction */
	size_t sent, rcvd, shift;
	bool want_out;	/* EPOLLOUT armed */
};

#define COUNTERS(X)                                                                   \
	X(connected) X(transactions) X(bytes_tx) X(bytes_rx) X(err_connect) X(err_refused) \
	X(err_reset) X(err_eof) X(err_send) X(err_verify) X(err_steer) X(err_lost)
#define ERRORS(X) X(err_connect) X(err_refused) X(err_reset) X(err_eof) X(err_send) \
	X(err_verify) X(err_steer) X(err_lost)

struct counters {
#define X(n) uint64_t n;
	COUNTERS(X)
#undef X
};
static struct counters st;

/* An address of either family: sa.sa_family says which. */
union sockaddr_any {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

static struct {
	union sockaddr_any dst;	/* -d and -p */
	socklen_t dst_len;	/* of dst's family */
	uint32_t conns;
	enum mode mode;
	uint32_t size;
	uint64_t count;
	uint32_t seconds;
	bool verify, busy;
	uint64_t warmup_ms;
} cfg = { .conns = 1, .size = 64, .seconds = 5 };

static uint8_t *pat;
static struct conn *conns;
static uint32_t *idle_stack, n_idle, active, connecting;
static uint64_t hist[LG_HIST_BUCKETS], lat_n, lat_sum, lat_max;
static int ep;
static volatile sig_atomic_t stop;
static bool gate = true;
static uint64_t retry_ns;
static struct counters warm; /* counters at the end of the warm-up */

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Histogram: apps/latency_hist.h, the same as dpsock-loadgen's. */

static void
hist_add(uint64_t ns)
{
	hist[lat_hist_bucket(ns)]++;
	lat_n++;
	lat_sum += ns;
	if (ns > lat_max)
		lat_max = ns;
}

static double
hist_pct_us(double p)
{
	return lat_hist_pct(hist, lat_n, p, lat_max) / 1e3;
}

/* ---- connections --------------------------------------------------------- */

static void
arm(struct conn *c, bool out)
{
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c };

	if (c->want_out != out) {
		c->want_out = out;
		epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
	}
}

static void
slot_done(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = ST_DONE;
	active--;
}

/* The connection ended (closed or failed): churn opens the next one. */
static void
slot_release(struct conn *c)
{
	if (c->state == ST_CONNECTING)
		connecting--;
	if (cfg.mode == MODE_CHURN && !stop && (cfg.count == 0 || c->done < cfg.count)) {
		close(c->fd);
		c->fd = -1;
		c->state = ST_IDLE;
		idle_stack[n_idle++] = c->idx;
	} else {
		slot_done(c);
	}
}

static int
send_pump(struct conn *c)
{
	while (c->sent < cfg.size) {
		ssize_t r = send(c->fd, pat + c->shift + c->sent, cfg.size - c->sent,
				 MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				arm(c, true);
				return 0;
			}
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->sent += (size_t)r;
		st.bytes_tx += (uint64_t)r;
	}
	arm(c, false);
	return 0;
}

static int
start_request(struct conn *c)
{
	c->shift = (size_t)((c->done * 257 + c->idx * 31) % LG_SHIFTS);
	c->sent = 0;
	c->rcvd = 0;
	if (cfg.mode != MODE_CHURN)
		c->t0 = now_ns();
	if (cfg.mode == MODE_UDP) {
		ssize_t r = send(c->fd, pat + c->shift, cfg.size, 0);

		if (r != (ssize_t)cfg.size)
			return errno == ENOBUFS || errno == EAGAIN ? 0 : -1; /* lost: timeout resends */
		c->sent = cfg.size;
		st.bytes_tx += cfg.size;
		return 0;
	}
	return send_pump(c);
}

static int
bulk_pump(struct conn *c)
{
	while (cfg.count == 0 || c->done < cfg.count) {
		size_t want = LG_BULK_CHUNK;
		ssize_t r;

		if (cfg.count != 0 && cfg.count - c->done < want)
			want = (size_t)(cfg.count - c->done);
		r = send(c->fd, pat + (c->done % LG_SHIFTS), want, MSG_NOSIGNAL);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				arm(c, true);
				return 0;
			}
			if (errno == EINTR)
				continue;
			return -1;
		}
		c->done += (uint64_t)r;
		st.bytes_tx += (uint64_t)r;
	}
	st.transactions++;
	slot_done(c);
	return 0;
}

static int
open_conn(struct conn *c, uint64_t now)
{
	int type = cfg.mode == MODE_UDP ? SOCK_DGRAM : SOCK_STREAM, one = 1;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.ptr = c };

	c->fd = socket(cfg.dst.sa.sa_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	if (type == SOCK_STREAM)
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->t0 = now;
	if (connect(c->fd, &cfg.dst.sa, cfg.dst_len) < 0 &&
	    errno != EINPROGRESS) {
		int e = errno;

		close(c->fd);
		c->fd = -1;
		errno = e;
		return -1;
	}
	c->want_out = true;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	c->state = ST_CONNECTING;
	connecting++;
	return 0;
}

static void
fail_send(struct conn *c)
{
	st.err_send++;
	slot_release(c);
}

static void
on_connected(struct conn *c)
{
	int err = 0, r;
	socklen_t len = sizeof(err);

	connecting--;
	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err != 0) {
		if (st.err_refused++ == 0)
			fprintf(stderr, "kernel_load: connect: %s\n", strerror(err));
		c->state = ST_OPEN; /* not connecting any more */
		slot_release(c);
		return;
	}
	st.connected++;
	gate = false;
	c->state = ST_OPEN;
	if (cfg.mode == MODE_IDLE) {
		arm(c, false);
		return;
	}
	r = cfg.mode == MODE_BULK ? bulk_pump(c) : start_request(c);
	if (r < 0)
		fail_send(c);
}

static void
transaction_done(struct conn *c)
{
	hist_add(now_ns() - c->t0);
	st.transactions++;
	c->done++;
	if (cfg.mode == MODE_CHURN) {
		slot_release(c);
		return;
	}
	if (cfg.count != 0 && c->done >= cfg.count) {
		slot_done(c);
		return;
	}
	if (start_request(c) < 0)
		fail_send(c);
}

static void
on_readable(struct conn *c)
{
	static uint8_t buf[LG_BOUNCE];

	for (;;) {
		ssize_t r = recv(c->fd, buf, sizeof(buf), 0);

		if (r == 0) {
			if (cfg.mode == MODE_UDP)
				return;
			st.err_eof++;
			slot_release(c);
			return;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (cfg.mode == MODE_UDP) /* ICMP unreachable: a lost request */
				return;
			st.err_reset++;
			slot_release(c);
			return;
		}
		st.bytes_rx += (uint64_t)r;
		if (cfg.mode == MODE_BULK)
			continue;
		if (cfg.mode == MODE_IDLE || c->rcvd + (size_t)r > c->sent ||
		    (cfg.mode == MODE_UDP && (size_t)r != cfg.size) ||
		    (cfg.verify && memcmp(buf, pat + c->shift + c->rcvd, (size_t)r) != 0)) {
			if (cfg.mode == MODE_UDP && c->sent == 0)
				continue; /* a late reply to a request given up */
			st.err_verify++;
			slot_release(c);
			return;
		}
		c->rcvd += (size_t)r;
		if (c->rcvd == cfg.size) {
			transaction_done(c);
			if (c->state != ST_OPEN)
				return;
		}
	}
}

static void
on_event(struct conn *c, uint32_t events)
{
	if (c->state == ST_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		on_connected(c);
		if (c->state != ST_OPEN)
			return;
		if (cfg.mode == MODE_BULK || cfg.mode == MODE_IDLE)
			return;
	}
	if (c->state != ST_OPEN)
		return;
	if ((events & EPOLLOUT) && c->want_out) {
		int r = cfg.mode == MODE_BULK ? bulk_pump(c) : send_pump(c);

		if (r < 0) {
			fail_send(c);
			return;
		}
		if (c->state != ST_OPEN)
			return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		on_readable(c);
}

/* ---- report ------------------------------------------------------------------- */

static uint64_t
errors(void)
{
	uint64_t e = 0;
#define X(n) e += st.n;
	ERRORS(X)
#undef X
	return e;
}

static void
report(const char *head, double elapsed)
{
	char line[2048];
	size_t off = 0;

#define OUT(...)                                                                    \
	do {                                                                        \
		if (off < sizeof(line))                                             \
			off += snprintf(line + off, sizeof(line) - off, __VA_ARGS__); \
	} while (0)
	OUT("loadgen: %s conns=%" PRIu32, head, cfg.conns);
	OUT(" connected=%" PRIu64 " transactions=%" PRIu64 " errors=%" PRIu64, st.connected,
	    st.transactions, errors());
	OUT(" bytes_tx=%" PRIu64 " bytes_rx=%" PRIu64, st.bytes_tx, st.bytes_rx);
#define X(n) OUT(" " #n "=%" PRIu64, st.n);
	ERRORS(X)
#undef X
	OUT(" elapsed_s=%.3f", elapsed);
	OUT(" rate=%.1f/s", elapsed > 0 ? (double)st.transactions / elapsed : 0.0);
	OUT(" tx_mbit_s=%.1f rx_mbit_s=%.1f",
	    elapsed > 0 ? (double)st.bytes_tx * 8 / elapsed / 1e6 : 0.0,
	    elapsed > 0 ? (double)st.bytes_rx * 8 / elapsed / 1e6 : 0.0);
	OUT(" mean_us=%.2f p50_us=%.2f p99_us=%.2f p999_us=%.2f max_us=%.2f",
	    lat_n ? (double)lat_sum / (double)lat_n / 1e3 : 0.0, hist_pct_us(0.50),
	    hist_pct_us(0.99), hist_pct_us(0.999), (double)lat_max / 1e3);
#undef OUT
	printf("%s\n", line);
}

/* ---- command line ---------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: kernel_load -d IP [-p PORT] [-c CONNS] [-m rr|churn|bulk|udp|idle]\n"
		"                   [-s BYTES] [-n COUNT] [-t SECONDS] [--verify] [--busy-poll]\n"
		"                   [--warmup SECONDS]\n"
		"IP: an IPv4 or IPv6 literal.\n"
		"dpsock-loadgen's workloads on the Linux stack (one thread); see the source.\n");
}

static uint64_t
parse_u64(const char *opt, const char *arg, uint64_t min, uint64_t max, bool suffix)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (arg[0] < '0' || arg[0] > '9')
		goto bad;
	v = strtoull(arg, &end, 10);
	if (suffix && *end && !end[1]) {
		switch (*end) {
		case 'k': case 'K': v <<= 10; end++; break;
		case 'm': case 'M': v <<= 20; end++; break;
		case 'g': case 'G': v <<= 30; end++; break;
		default: break;
		}
	}
	if (errno || *end || v < min || v > max)
		goto bad;
	return v;
bad:
	fprintf(stderr, "kernel_load: %s: '%s' is not a number in %" PRIu64 "..%" PRIu64 "\n",
		opt, arg, min, max);
	exit(2);
}

/* -d IP and -p PORT into cfg.dst: IP is an IPv4 literal, else an IPv6 one.
 * 0, or -1 when it is neither. */
static int
set_dest(const char *ip, uint16_t port)
{
	memset(&cfg.dst, 0, sizeof(cfg.dst));
	if (inet_pton(AF_INET, ip, &cfg.dst.in.sin_addr) == 1) {
		cfg.dst.in.sin_family = AF_INET;
		cfg.dst.in.sin_port = htons(port);
		cfg.dst_len = sizeof(cfg.dst.in);
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &cfg.dst.in6.sin6_addr) == 1) {
		cfg.dst.in6.sin6_family = AF_INET6;
		cfg.dst.in6.sin6_port = htons(port);
		cfg.dst_len = sizeof(cfg.dst.in6);
		return 0;
	}
	return -1;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dest", required_argument, NULL, 'd' },
		{ "port", required_argument, NULL, 'p' },
		{ "connections", required_argument, NULL, 'c' },
		{ "mode", required_argument, NULL, 'm' },
		{ "size", required_argument, NULL, 's' },
		{ "requests", required_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 't' },
		{ "verify", no_argument, NULL, 'V' },
		{ "busy-poll", no_argument, NULL, 'B' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction act = { .sa_handler = on_signal };
	struct epoll_event evs[MAX_EVENTS];
	const char *dest = NULL;
	uint16_t port = 11111;
	uint64_t start, deadline, gate_ns, end;
	bool announced = false, warmed;
	uint64_t warm_at;
	unsigned int i;
	uint32_t k;
	size_t pat_len;
	int opt, ok;
	char head[64];

	while ((opt = getopt_long(argc, argv, "d:p:c:m:s:n:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dest = optarg;
			break;
		case 'p':
			port = (uint16_t)parse_u64("--port", optarg, 1, 65535, false);
			break;
		case 'c':
			cfg.conns = (uint32_t)parse_u64("--connections", optarg, 1, LG_MAX_CONNS, false);
			break;
		case 'm':
			for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
				if (strcmp(optarg, mode_names[i]) == 0)
					break;
			if (i == sizeof(mode_names) / sizeof(mode_names[0])) {
				fprintf(stderr, "kernel_load: --mode: '%s' is not rr, churn, bulk, udp or idle\n",
					optarg);
				return 2;
			}
			cfg.mode = (enum mode)i;
			break;
		case 's':
			cfg.size = (uint32_t)parse_u64("--size", optarg, 1, LG_MAX_SIZE, true);
			break;
		case 'n':
			cfg.count = parse_u64("--requests", optarg, 0, UINT64_MAX / 2, true);
			break;
		case 't':
			cfg.seconds = (uint32_t)parse_u64("--time", optarg, 1, LG_MAX_TIME, false);
			break;
		case 'V':
			cfg.verify = true;
			break;
		case 'B':
			cfg.busy = true;
			break;
		case 'W':
			cfg.warmup_ms = (uint64_t)(strtod(optarg, NULL) * 1000);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || dest == NULL || set_dest(dest, port) < 0) {
		fprintf(stderr, "kernel_load: -d IP is required (an IPv4 or IPv6 address)\n");
		usage(stderr);
		return 2;
	}
	if (cfg.mode == MODE_UDP && cfg.size > 65507) {
		fprintf(stderr, "kernel_load: --size: at most 65507 bytes in udp mode\n");
		return 2;
	}
	{
		/* one fd per connection, plus slack */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < cfg.conns + 64) {
			rl.rlim_cur = cfg.conns + 64;
			if (rl.rlim_max < rl.rlim_cur)
				rl.rlim_max = rl.rlim_cur;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	pat_len = (cfg.size > LG_BULK_CHUNK ? cfg.size : LG_BULK_CHUNK) + LG_SHIFTS;
	pat = malloc(pat_len);
	conns = calloc(cfg.conns, sizeof(*conns));
	idle_stack = calloc(cfg.conns, sizeof(*idle_stack));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (pat == NULL || conns == NULL || idle_stack == NULL || ep < 0) {
		fprintf(stderr, "kernel_load: out of memory\n");
		return 1;
	}
	fill_pattern(pat, pat_len);
	for (k = 0; k < cfg.conns; k++) {
		conns[k].fd = -1;
		conns[k].idx = k;
		idle_stack[n_idle++] = cfg.conns - 1 - k;
	}
	active = cfg.conns;
	start = now_ns();
	deadline = start + (uint64_t)cfg.seconds * 1000000000ull;
	gate_ns = start + 1000000000ull;
	warm_at = start + cfg.warmup_ms * 1000000ull;
	warmed = cfg.warmup_ms == 0;
	memset(&warm, 0, sizeof(warm));

	while (!stop && active > 0) {
		uint64_t now = now_ns();
		unsigned int limit = LG_CONNECT_BURST, opened = 0;
		int n, j;

		if (now >= deadline)
			break;
		if (!warmed && now >= warm_at) {
			/* the window starts: counters and latencies from here on */
			warm = st;
			memset(hist, 0, sizeof(hist));
			lat_n = lat_sum = lat_max = 0;
			start = now;
			warmed = true;
		}
		if (gate && now < gate_ns)
			limit = connecting == 0 ? 1 : 0;
		while (opened < limit && n_idle > 0 && now >= retry_ns) {
			struct conn *c = &conns[idle_stack[n_idle - 1]];

			if (open_conn(c, now) < 0) {
				if (st.err_connect++ == 0)
					fprintf(stderr, "kernel_load: connect: %s\n", strerror(errno));
				if (cfg.mode == MODE_CHURN) {
					retry_ns = now + 1000000; /* 1 ms, then again */
				} else {
					n_idle--;
					c->state = ST_DONE;
					active--;
				}
				break;
			}
			n_idle--;
			opened++;
		}
		if (cfg.mode == MODE_IDLE && !announced && st.connected == cfg.conns) {
			printf("loadgen: idle connected=%" PRIu64 "\n", st.connected);
			fflush(stdout);
			announced = true;
		}
		if (cfg.mode == MODE_UDP) {
			for (k = 0; k < cfg.conns; k++) {
				struct conn *c = &conns[k];

				if (c->state == ST_OPEN && now - c->t0 > UDP_TIMEOUT_NS) {
					st.err_lost++;
					c->done++;
					if (start_request(c) < 0)
						fail_send(c);
				}
			}
		}
		n = epoll_wait(ep, evs, MAX_EVENTS,
			       cfg.busy || (n_idle > 0 && !gate) ? 0 : 10);
		for (j = 0; j < n; j++)
			on_event(evs[j].data.ptr, evs[j].events);
	}
	end = now_ns();
	for (k = 0; k < cfg.conns; k++)
		if (conns[k].fd >= 0)
			close(conns[k].fd);
	st.transactions -= warm.transactions; /* the window's work only */
	st.bytes_tx -= warm.bytes_tx;
	st.bytes_rx -= warm.bytes_rx;
	snprintf(head, sizeof(head), "worker 0 cpu=%d", sched_getcpu());
	report(head, (double)(end - start) / 1e9);
	snprintf(head, sizeof(head), "total mode=%s workers=1", mode_names[cfg.mode]);
	report(head, (double)(end - start) / 1e9);
	fflush(stdout);
	if (cfg.mode == MODE_IDLE)
		ok = st.connected == cfg.conns && errors() == 0;
	else
		ok = errors() == 0 &&
		     (cfg.mode == MODE_BULK ? st.bytes_tx > 0 : st.transactions > 0);
	return ok ? 0 : 1;
}
