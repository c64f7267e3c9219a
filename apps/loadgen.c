/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-loadgen — TCP and UDP load client on the dpsock native API, for
 * benchmarks and tests. Runs on the workers: worker k opens its share of
 * the connections (active opens steered back to it by the stack; UDP
 * sockets on ports the stack steers back the same way).
 *
 *   dpsock-loadgen [EAL options] -- -f dpsock.conf -d IP [-p PORT] [-c CONNS]
 *                  [-m rr|churn|bulk|udp] [-s BYTES] [-n COUNT] [-t SECONDS] [--verify]
 *                  [--proto echo|sockperf|http] [--path PATH] [--udp-timeout-ms MS]
 *
 * Modes:
 *   rr     each connection sends a request of -s bytes and waits for the
 *          same number of bytes back (an echo server), then the next one;
 *          a transaction is one request/reply, timed from its first byte.
 *   churn  connect, send one request, read the reply, close, again; a
 *          transaction is one whole connection, timed from the connect.
 *   bulk   send as fast as the window allows (to a sink); what comes back
 *          is counted and dropped. Bytes count when dpsock_send takes them.
 *   udp    rr over UDP: -c sockets (dpsock_udp_bind_addr, DPSOCK_UDP_OWNED:
 *          an ephemeral port owned by the worker, so that replies another
 *          worker's queue receives are handed to it), each with one datagram
 *          of -s bytes out to -d:-p; a transaction is one request and its
 *          reply, timed from the send (but for each socket's first, which
 *          may have waited for ARP). A request unanswered after
 *          --udp-timeout-ms (200) is lost: counted in "lost", not an error,
 *          and the next request goes out. A reply is known by its first
 *          bytes (see udp_answers) and its source; a datagram that answers
 *          nothing out (late, after its request was given up; duplicated;
 *          from elsewhere) is counted in "stale" and dropped. Against
 *          dpsock-echo: --raw for --proto echo; without --raw it answers
 *          --proto sockperf; a raw echo (kernel_echo, socat) answers both.
 *
 * What a request and its reply are (rr, churn, udp), --proto:
 *   echo      -s bytes of a pattern; the reply is the same bytes (default)
 *   sockperf  a sockperf ping-pong message of -s bytes (its 14-byte header:
 *             sequence, flags client|pong-request, length; then the
 *             pattern), as `sockperf ping-pong` sends; the reply is a
 *             message of the same length (a sockperf server's pong)
 *   http      GET --path (default /) HTTP/1.1 with keep-alive; the reply is
 *             one response: its headers, then Content-Length bytes of body
 *             (status 200 wanted; not in udp mode)
 * so that the same client drives dpsock-echo, a kernel echo program, an
 * unmodified sockperf server or nginx.
 *
 * -n bounds the work of each connection (rr: transactions, churn:
 * connections, bulk: bytes, udp: requests answered or lost), -t the whole
 * run. Each worker stops when its time is up or its connections are done,
 * closing what is open; the last worker to stop calls dpsock_stop(). Between replies a worker is idle: it
 * polls for worker.idle_poll_us (yielding the CPU to another thread that
 * wants it), then sleeps; benchmarks set idle_poll_us above the run time so
 * that no measurement is stretched by a sleep.
 *
 * Each worker first opens a single connection and the others once that one
 * is established (or after a second): the first SYN then resolves the
 * neighbour, instead of a burst of SYNs waiting on ARP. (udp: the first
 * socket alone until its first reply, or a second.)
 *
 * Output (stdout, one line each, key=value):
 *   loadgen: worker K lcore=L conns=.. connected=.. transactions=.. errors=.. ...
 *   loadgen: total mode=.. workers=.. conns=.. connected=.. transactions=.. errors=..
 *            ... elapsed_s=.. active_s=.. rate=../s ... p50_us=.. p99_us=.. p999_us=..
 *            max_us=..   (rate: per second of active_s, the time since the
 *            first connection was established; churn: of elapsed_s)
 * udp: connected counts the sockets that got a reply (active_s runs from
 * the first), and lost=.. stale=.. follow the err_* counters.
 * Exit status: 0 when there were no errors and some work was done
 * (transactions, or bytes in bulk mode), else 1 (or dpsock_run's status).
 * udp: losses are no errors, but a run where no reply came back did no
 * work: 1.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>

#include "dpsock/dpsock.h"

#include "app_common.h"
#include "load_common.h"

#define LG_DEFAULT_PORT 11111
#define LG_DEFAULT_SIZE 64
#define LG_DEFAULT_TIME 5
#define LG_MAX_TIME 300
#define LG_MAX_CONNS 100000
#define LG_MAX_SIZE (1u << 20)
#define LG_BULK_CHUNK 65536
#define LG_SHIFTS 4096	       /* request start offsets into the pattern */
#define LG_CONNECT_BURST 16    /* connects per poll */
#define LG_BOUNCE 4096
#define LG_HIST_BUCKETS LAT_HIST_BUCKETS
#define LG_UDP_MAX_SIZE 65507  /* the largest UDP payload over IPv4 */
#define LG_UDP_TIMEOUT_MS 200  /* a UDP request unanswered for this long is lost */
#define LG_UDP_TAG 8u	       /* reply bytes that say which request it answers */

enum lg_mode {
	MODE_RR,
	MODE_CHURN,
	MODE_BULK,
	MODE_UDP,
};

enum lg_proto {
	PROTO_ECHO,
	PROTO_SOCKPERF,
	PROTO_HTTP,
};

static const char *const proto_names[] = {
	[PROTO_ECHO] = "echo",
	[PROTO_SOCKPERF] = "sockperf",
	[PROTO_HTTP] = "http",
};

/* sockperf's message header, as it puts it on the wire (network order,
 * packed to 14 bytes): sequence, flags, length of the whole message. */
#define SP_HDR_LEN 14u
#define SP_FLAG_CLIENT 1u
#define SP_FLAG_PONG 2u
#define LG_HTTP_HDR_MAX 2048u  /* response header bytes kept while parsing */

static const char *const mode_names[] = {
	[MODE_RR] = "rr",
	[MODE_CHURN] = "churn",
	[MODE_BULK] = "bulk",
	[MODE_UDP] = "udp",
};

struct lg_cfg {
	uint32_t addr;	 /* network order */
	bool v6;	 /* -d is an IPv6 address: addr6 (TCP modes) */
	struct in6_addr addr6;
	uint16_t port;
	uint32_t conns;
	enum lg_mode mode;
	uint32_t size;	 /* request bytes (rr, churn) */
	uint64_t count;	 /* per connection, 0 = until the time is up */
	uint32_t seconds;
	bool verify;
	uint8_t *pat;	 /* request pattern, pat_len bytes */
	size_t pat_len;
	enum lg_proto proto;
	char *http_req; /* http: the request, http_len bytes */
	size_t http_len;
	uint32_t udp_timeout_ms;
	union dpsock_sockaddr dst; /* udp: where requests go, and replies come from (IPv4) */
};

/* Per-worker counters: one table for the struct, the sums and the printer.
 * The err_* ones add up to "errors". */
#define LG_COUNTERS(X)                                                                 \
	X(connected)	/* connections established (connected callback, err 0; udp:      \
			 * sockets that got a reply) */                                  \
	X(transactions) /* rr/udp: replies; churn: connections; bulk: conns done */      \
	X(bytes_tx)	/* bytes dpsock_send took (udp: sent in datagrams) */            \
	X(bytes_rx)	/* bytes received */                                             \
	X(err_connect)	/* dpsock_tcp_connect (udp: dpsock_udp_bind_addr) failed */      \
	X(err_refused)	/* the connect failed (refused, timed out, unreachable) */       \
	X(err_reset)	/* an open connection was reset or timed out */                  \
	X(err_eof)	/* the server closed while a request was due */                  \
	X(err_send)	/* dpsock_send (udp: dpsock_udp_sendto) failed */                \
	X(err_verify)	/* reply bytes differ from the request, or too many (udp: a      \
			 * reply of another length); an HTTP status other than 200 or    \
			 * a response it cannot parse */                                 \
	X(err_steer)	/* a callback ran off the socket's creating worker */            \
	X(lost)		/* udp: requests unanswered within --udp-timeout-ms */           \
	X(stale)	/* udp: datagrams that answer no outstanding request */

#define LG_ERRORS(X) X(err_connect) X(err_refused) X(err_reset) X(err_eof) X(err_send) \
	X(err_verify) X(err_steer)

struct lg_stats {
#define X(name) uint64_t name;
	LG_COUNTERS(X)
#undef X
};

enum lg_state {
	ST_IDLE,       /* in the idle stack, to be connected */
	ST_CONNECTING, /* (udp: bound, no reply yet) */
	ST_OPEN,
	ST_FAILED,     /* connected(err) came; closed() follows */
	ST_DONE,       /* its work is done (or it failed, in rr and bulk) */
};

struct lg_worker;

struct lg_conn {
	struct lg_worker *w;
	struct dpsock_sock *s;
	uint32_t idx;
	uint32_t state;
	uint64_t done;	 /* rr: transactions, churn: connections, bulk: bytes; udp:
			  * requests answered or lost */
	uint64_t t0;	 /* tsc at the start of the current transaction */
	size_t sent;	 /* request bytes sent (udp: 0 while no request is out) */
	size_t rcvd;	 /* reply bytes received */
	size_t shift;	 /* the request is pat[shift .. shift + size) */
	const uint8_t *req; /* the current request, req_len bytes */
	size_t req_len;
	size_t reply_len; /* bytes the reply has (http: known once its headers are) */
	uint8_t *buf;	 /* sockperf: the request; http: the response's headers */
	size_t hdr_len;	 /* http: header bytes kept in buf */
};

struct lg_worker {
	unsigned int idx;
	unsigned int lcore;
	struct dpsock_worker *dw;
	const struct lg_cfg *cfg;
	struct lg_conn *conns;
	uint32_t n_conns;     /* slots allocated (0 after worker_fini) */
	uint32_t share;	      /* connections assigned to this worker */
	uint32_t *idle;	      /* stack of slots to connect */
	uint32_t n_idle;
	uint32_t active;      /* slots not ST_DONE */
	uint32_t connecting;  /* slots in ST_CONNECTING */
	bool gate;	      /* one connection at a time until one is up */
	bool finished;
	uint64_t hz;
	uint64_t start_tsc, deadline_tsc, gate_tsc, retry_tsc, end_tsc;
	uint64_t up_tsc;      /* the first connection established (rr, bulk rates; udp: the
			       * first reply) */
	uint64_t udp_timeout_tsc, scan_tsc; /* udp: loss timeout; next look for losses */
	struct lg_stats st;
	uint64_t lat_n, lat_sum, lat_max; /* tsc cycles */
	uint64_t hist[LG_HIST_BUCKETS];
	uint8_t bounce[LG_BOUNCE];
} __attribute__((aligned(64)));

/* Slot k is written by worker k only; main reads them after dpsock_run. */
static struct lg_worker *workers[APP_MAX_WORKERS];
/* Workers done (the last one stops the run). */
static atomic_uint lg_finished;

/* Latency histogram: apps/latency_hist.h (shared with test/perf/kernel_load). */

static void
hist_add(struct lg_worker *w, uint64_t cycles)
{
	w->hist[lat_hist_bucket(cycles)]++;
	w->lat_n++;
	w->lat_sum += cycles;
	if (cycles > w->lat_max)
		w->lat_max = cycles;
}

/* Percentile p (0..1) in microseconds, 0 without samples. */
static double
hist_pct_us(const uint64_t *hist, uint64_t n, double p, uint64_t max, uint64_t hz)
{
	return hz == 0 ? 0 : lat_hist_pct(hist, n, p, max) * 1e6 / (double)hz;
}

/*
 * Connections
 */

static const struct dpsock_sock_ops lg_ops;

/* The slot's work is over. */
static void
slot_done(struct lg_conn *c)
{
	c->s = NULL;
	c->state = ST_DONE;
	c->w->active--;
}

/* The slot lost its socket (already closed or gone): churn connects again,
 * rr and bulk slots stop. */
static void
slot_release(struct lg_conn *c)
{
	struct lg_worker *w = c->w;

	if (w->cfg->mode == MODE_CHURN && !w->finished &&
	    (w->cfg->count == 0 || c->done < w->cfg->count)) {
		c->s = NULL;
		c->state = ST_IDLE;
		w->idle[w->n_idle++] = c->idx;
	} else {
		slot_done(c);
	}
}

/* Local failure on an open socket: reset it. */
static void
slot_fail(struct lg_conn *c)
{
	dpsock_abort(c->s);
	slot_release(c);
}

/* Send what the request still lacks. Returns 0 or -errno. */
static int
send_pump(struct lg_conn *c)
{
	const struct lg_cfg *cfg = c->w->cfg;

	(void)cfg;
	while (c->sent < c->req_len) {
		ssize_t r = dpsock_send(c->s, c->req + c->sent, c->req_len - c->sent, 0);

		if (r == -EAGAIN || r == 0)
			break;
		if (r < 0)
			return (int)r;
		c->sent += (size_t)r;
		c->w->st.bytes_tx += (uint64_t)r;
	}
	return 0;
}

/* Store v big-endian in n bytes at p. */
static void
put_be(uint8_t *p, uint64_t v, unsigned int n)
{
	while (n-- > 0) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* The next request: its bytes, and its start time in rr and udp. */
static void
build_request(struct lg_conn *c)
{
	const struct lg_cfg *cfg = c->w->cfg;

	c->shift = (size_t)((c->done * 257 + c->idx * 31) % LG_SHIFTS);
	c->sent = 0;
	c->rcvd = 0;
	c->hdr_len = 0;
	switch (cfg->proto) {
	case PROTO_ECHO:
		c->req = cfg->pat + c->shift;
		c->req_len = c->reply_len = cfg->size;
		break;
	case PROTO_SOCKPERF:
		memcpy(c->buf, cfg->pat + c->shift, cfg->size);
		put_be(c->buf, c->done + 1, 8);
		put_be(c->buf + 8, SP_FLAG_CLIENT | SP_FLAG_PONG, 2);
		put_be(c->buf + 10, cfg->size, 4);
		c->req = c->buf;
		c->req_len = c->reply_len = cfg->size;
		break;
	case PROTO_HTTP:
		c->req = (const uint8_t *)cfg->http_req;
		c->req_len = cfg->http_len;
		c->reply_len = SIZE_MAX; /* until the headers say */
		break;
	}
	if (cfg->mode == MODE_RR || cfg->mode == MODE_UDP)
		c->t0 = rte_rdtsc(); /* churn: timed from the connect */
}

/* udp: send the request in one datagram. A failure is counted here; the
 * request is then not out, and is sent again when the loss timeout
 * passes (as a lost one would be, without counting it lost). */
static void
udp_send(struct lg_conn *c)
{
	struct lg_worker *w = c->w;
	ssize_t r = dpsock_udp_sendto(c->s, c->req, c->req_len, &w->cfg->dst);

	if (r < 0) {
		if (w->st.err_send++ == 0)
			fprintf(stderr, "dpsock-loadgen: worker %u: dpsock_udp_sendto: %s\n", w->idx,
				strerror((int)-r));
		c->sent = 0;
		return;
	}
	c->sent = c->req_len;
	w->st.bytes_tx += c->req_len;
}

/* Send the next request. Returns 0 or -errno (TCP; udp: 0, a failure is
 * counted and the request sent again after the timeout, see udp_send). */
static int
start_request(struct lg_conn *c)
{
	build_request(c);
	if (c->w->cfg->mode == MODE_UDP) {
		udp_send(c);
		return 0;
	}
	return send_pump(c);
}

/* Bulk: fill the send buffer. Returns 0 or -errno; closes the connection
 * when its byte count is reached (the slot is then done). */
static int
bulk_pump(struct lg_conn *c)
{
	struct lg_worker *w = c->w;
	const struct lg_cfg *cfg = w->cfg;

	while (cfg->count == 0 || c->done < cfg->count) {
		size_t want = LG_BULK_CHUNK;
		ssize_t r;

		if (cfg->count != 0 && cfg->count - c->done < want)
			want = (size_t)(cfg->count - c->done);
		r = dpsock_send(c->s, cfg->pat + (c->done % LG_SHIFTS), want, 0);
		if (r == -EAGAIN || r == 0)
			return 0;
		if (r < 0)
			return (int)r;
		c->done += (uint64_t)r;
		w->st.bytes_tx += (uint64_t)r;
	}
	w->st.transactions++;
	dpsock_close(c->s);
	slot_done(c);
	return 0;
}

static bool
verify(struct lg_conn *c, const struct dpsock_rx *rx, size_t n)
{
	struct lg_worker *w = c->w;
	const uint8_t *want = w->cfg->pat + c->shift + c->rcvd;
	size_t off = 0;

	while (off < n) {
		const uint8_t *p;
		size_t k = app_rx_piece(rx, off, &p, w->bounce, LG_BOUNCE);

		if (k == 0 || memcmp(p, want + off, k) != 0)
			return false;
		off += k;
	}
	return true;
}

/* sockperf: the pong carries the request's length (its header, after the
 * sequence and the flags; the server may change the flags). */
static bool
sockperf_verify(struct lg_conn *c, const struct dpsock_rx *rx, size_t n)
{
	struct lg_worker *w = c->w;
	uint8_t hdr[SP_HDR_LEN];
	size_t off = 0;

	while (off < n && c->rcvd + off < SP_HDR_LEN) {
		const uint8_t *p;
		size_t k = app_rx_piece(rx, off, &p, w->bounce, LG_BOUNCE);

		if (k == 0)
			return false;
		for (size_t i = 0; i < k && c->rcvd + off + i < SP_HDR_LEN; i++)
			c->buf[c->w->cfg->size + c->rcvd + off + i] = p[i];
		off += k;
	}
	if (c->rcvd + n < SP_HDR_LEN)
		return true;
	memcpy(hdr, c->buf + c->w->cfg->size, SP_HDR_LEN);
	return ((uint32_t)hdr[10] << 24 | (uint32_t)hdr[11] << 16 | (uint32_t)hdr[12] << 8 |
		hdr[13]) == c->w->cfg->size;
}

/*
 * http: the response's headers are kept (at most LG_HTTP_HDR_MAX bytes)
 * until their blank line; then the status must be 200 and Content-Length
 * gives the reply's length. Returns false on a response it cannot use.
 */
static bool
http_reply(struct lg_conn *c, const struct dpsock_rx *rx, size_t n)
{
	struct lg_worker *w = c->w;
	size_t off = 0;

	if (c->reply_len != SIZE_MAX)
		return c->rcvd + n <= c->reply_len;
	while (off < n) {
		const uint8_t *p;
		size_t k = app_rx_piece(rx, off, &p, w->bounce, LG_BOUNCE), take;
		const char *end, *cl;
		unsigned long long len;
		char *e;

		if (k == 0)
			return false;
		take = k < LG_HTTP_HDR_MAX - 1 - c->hdr_len ? k : LG_HTTP_HDR_MAX - 1 - c->hdr_len;
		memcpy(c->buf + c->hdr_len, p, take);
		c->hdr_len += take;
		c->buf[c->hdr_len] = '\0';
		off += k;
		end = strstr((const char *)c->buf, "\r\n\r\n");
		if (end == NULL) {
			if (c->hdr_len >= LG_HTTP_HDR_MAX - 1)
				return false; /* headers too long */
			continue;
		}
		if (strncmp((const char *)c->buf, "HTTP/1.1 200", 12) != 0 &&
		    strncmp((const char *)c->buf, "HTTP/1.0 200", 12) != 0)
			return false;
		cl = strcasestr((const char *)c->buf, "\r\ncontent-length:");
		if (cl == NULL || cl > end)
			return false;
		len = strtoull(cl + 17, &e, 10);
		if (e == cl + 17)
			return false;
		/* the whole reply: headers, blank line, body; what came before
		 * this piece is in rcvd */
		c->reply_len = (size_t)(end + 4 - (const char *)c->buf) + (size_t)len;
		return c->rcvd + n <= c->reply_len;
	}
	return true;
}

static void
check_worker(struct lg_conn *c, struct dpsock_sock *s)
{
	if (dpsock_worker_self() != c->w->dw || dpsock_sock_worker(s) != c->w->dw)
		c->w->st.err_steer++;
}

static void
on_connected(struct dpsock_sock *s, int err)
{
	struct lg_conn *c = dpsock_sock_user(s);
	struct lg_worker *w = c->w;
	int r;

	check_worker(c, s);
	w->connecting--;
	if (err != 0) {
		w->st.err_refused++;
		if (w->st.err_refused == 1)
			fprintf(stderr, "dpsock-loadgen: worker %u: connect: %s\n", w->idx,
				strerror(-err));
		c->state = ST_FAILED; /* closed() follows; not ours to close */
		c->s = NULL;
		return;
	}
	w->st.connected++;
	if (w->up_tsc == 0)
		w->up_tsc = rte_rdtsc();
	w->gate = false;
	c->state = ST_OPEN;
	dpsock_set_nodelay(s, true);
	r = w->cfg->mode == MODE_BULK ? bulk_pump(c) : start_request(c);
	if (r < 0) {
		w->st.err_send++;
		slot_fail(c);
	}
}

static void
on_readable(struct dpsock_sock *s, struct dpsock_rx *rx)
{
	struct lg_conn *c = dpsock_sock_user(s);
	struct lg_worker *w = c->w;
	const struct lg_cfg *cfg = w->cfg;
	size_t n = dpsock_rx_len(rx);
	int r;

	w->st.bytes_rx += n;
	if (cfg->mode == MODE_BULK || c->state != ST_OPEN)
		return; /* a sink has nothing to say: dropped */
	if (cfg->proto == PROTO_HTTP ? !http_reply(c, rx, n) :
	    (c->rcvd + n > c->sent ||
	     (cfg->verify && !(cfg->proto == PROTO_ECHO ? verify(c, rx, n) :
			       sockperf_verify(c, rx, n))))) {
		w->st.err_verify++;
		slot_fail(c);
		return;
	}
	c->rcvd += n;
	if (c->rcvd < c->reply_len)
		return;
	/* transaction complete */
	hist_add(w, rte_rdtsc() - c->t0);
	w->st.transactions++;
	c->done++;
	if (cfg->mode == MODE_CHURN) {
		dpsock_close(s);
		slot_release(c);
		return;
	}
	if (cfg->count != 0 && c->done >= cfg->count) {
		dpsock_close(s);
		slot_done(c);
		return;
	}
	r = start_request(c);
	if (r < 0) {
		w->st.err_send++;
		slot_fail(c);
	}
}

static void
on_writable(struct dpsock_sock *s, size_t space)
{
	struct lg_conn *c = dpsock_sock_user(s);
	int r;

	if (c->state != ST_OPEN)
		return;
	r = c->w->cfg->mode == MODE_BULK ? bulk_pump(c) : send_pump(c);
	if (r < 0) {
		c->w->st.err_send++;
		slot_fail(c);
	}
}

static void
on_closed(struct dpsock_sock *s, int reason)
{
	struct lg_conn *c = dpsock_sock_user(s);
	struct lg_worker *w = c->w;

	check_worker(c, s);
	if (c->state == ST_CONNECTING)
		w->connecting--;
	if (reason == 0) {
		/* the server closed its side: we never ask for that */
		if (c->state == ST_OPEN)
			w->st.err_eof++;
		dpsock_close(s);
	} else if (c->state == ST_OPEN || c->state == ST_CONNECTING) {
		w->st.err_reset++;
	}
	slot_release(c);
}

static const struct dpsock_sock_ops lg_ops = {
	.connected = on_connected,
	.readable = on_readable,
	.writable = on_writable,
	.closed = on_closed,
};

/*
 * UDP: one datagram out per socket at a time
 */

/* Does this datagram answer the request that is out? Its first bytes say
 * (LG_UDP_TAG, or all of a shorter request): the pattern at the request's
 * own offset (echo) or the sequence number (sockperf), both different
 * from one request to the next, so a late reply to a request already
 * counted lost does not pass for the current one. */
static bool
udp_answers(const struct lg_conn *c, const union dpsock_sockaddr *from,
	    const struct dpsock_rx *rx, size_t n)
{
	const struct sockaddr_in *dst = &c->w->cfg->dst.in;
	size_t k = c->req_len < LG_UDP_TAG ? c->req_len : LG_UDP_TAG;
	uint8_t tag[LG_UDP_TAG];

	return c->sent != 0 && from->sa.sa_family == AF_INET &&
	       from->in.sin_addr.s_addr == dst->sin_addr.s_addr &&
	       from->in.sin_port == dst->sin_port && n >= k && dpsock_rx_copy(rx, tag, k, 0) == k &&
	       memcmp(tag, c->req, k) == 0;
}

/* The request is over (answered, or lost): the next one, unless the
 * socket did its -n. */
static void
udp_next(struct lg_conn *c)
{
	const struct lg_cfg *cfg = c->w->cfg;

	c->done++;
	if (cfg->count != 0 && c->done >= cfg->count) {
		dpsock_close(c->s);
		if (c->state == ST_CONNECTING)
			c->w->connecting--;
		slot_done(c);
		return;
	}
	start_request(c);
}

static void
on_datagram(struct dpsock_sock *s, const union dpsock_sockaddr *from, struct dpsock_rx *rx)
{
	struct lg_conn *c = dpsock_sock_user(s);
	struct lg_worker *w = c->w;
	const struct lg_cfg *cfg = w->cfg;
	size_t n = dpsock_rx_len(rx);
	uint64_t now;

	check_worker(c, s);
	w->st.bytes_rx += n;
	if ((c->state != ST_CONNECTING && c->state != ST_OPEN) || !udp_answers(c, from, rx, n)) {
		w->st.stale++;
		return;
	}
	now = rte_rdtsc();
	if (n != c->req_len ||
	    (cfg->verify && !(cfg->proto == PROTO_ECHO ? verify(c, rx, n) :
			      sockperf_verify(c, rx, n)))) {
		w->st.err_verify++; /* counted; the socket goes on */
	} else {
		/* a socket's first reply may have waited for the neighbour
		 * (ARP, a memif link coming up): counted, not timed, as TCP's
		 * handshake is not */
		if (c->state != ST_CONNECTING)
			hist_add(w, now - c->t0);
		w->st.transactions++;
	}
	if (c->state == ST_CONNECTING) {
		/* its first reply: the path works, open the others */
		c->state = ST_OPEN;
		w->connecting--;
		w->st.connected++;
		w->gate = false;
		if (w->up_tsc == 0)
			w->up_tsc = now;
	}
	udp_next(c);
}

static const struct dpsock_sock_ops lg_udp_ops = {
	.datagram = on_datagram,
};

/* Requests out for longer than the timeout are lost: count them and send
 * the next (or, after a failed send, the same one again). Looked at once a
 * millisecond. Returns the requests sent. */
static unsigned int
udp_expire(struct lg_worker *w, uint64_t now)
{
	unsigned int sent = 0;
	uint32_t i;

	if (now < w->scan_tsc)
		return 0;
	w->scan_tsc = now + w->hz / 1000;
	for (i = 0; i < w->n_conns; i++) {
		struct lg_conn *c = &w->conns[i];

		/* (t0 may be later than now: a request sent in this pass) */
		if ((c->state != ST_CONNECTING && c->state != ST_OPEN) ||
		    c->t0 + w->udp_timeout_tsc > now)
			continue;
		sent++;
		if (c->sent == 0) {
			build_request(c);
			udp_send(c);
			continue;
		}
		w->st.lost++;
		udp_next(c);
	}
	return sent;
}

/*
 * Worker hooks
 */

/* Close every open socket (orderly: the server sees an EOF). */
static void
close_all(struct lg_worker *w)
{
	uint32_t i;

	for (i = 0; i < w->n_conns; i++) {
		struct lg_conn *c = &w->conns[i];

		if (c->s != NULL) {
			dpsock_close(c->s);
			c->s = NULL;
			c->state = ST_DONE;
		}
	}
}

static void
finish(struct lg_worker *w)
{
	close_all(w);
	w->end_tsc = rte_rdtsc();
	w->finished = true;
	/* release: our counters are final before the last worker stops the run
	 * (main reads them after dpsock_run, which joins the lcores) */
	if (atomic_fetch_add_explicit(&lg_finished, 1, memory_order_acq_rel) + 1 ==
	    dpsock_worker_count())
		dpsock_stop();
}

static unsigned int
lg_worker_poll(struct dpsock_worker *dw, void *arg)
{
	const struct lg_cfg *cfg = arg;
	struct lg_worker *w = workers[dpsock_worker_index(dw)];
	unsigned int opened = 0, limit = LG_CONNECT_BURST;
	uint64_t now;

	if (w->finished)
		return 0;
	now = rte_rdtsc();
	if (now >= w->deadline_tsc || w->active == 0) {
		finish(w);
		return 0;
	}
	if (w->gate && now < w->gate_tsc)
		limit = w->connecting == 0 ? 1 : 0;
	while (opened < limit && w->n_idle > 0 && now >= w->retry_tsc) {
		struct lg_conn *c = &w->conns[w->idle[w->n_idle - 1]];

		if (cfg->mode == MODE_UDP)
			/* a port of the shared allocator, owned by this worker:
			 * replies that reach another worker's queue are handed
			 * over to this one */
			c->s = dpsock_udp_bind_addr(dw, 0, 0, DPSOCK_UDP_OWNED, &lg_udp_ops, c);
		else
			c->s = cfg->v6 ? dpsock_tcp_connect6(dw, &cfg->addr6, cfg->port, &lg_ops, c) :
					 dpsock_tcp_connect(dw, cfg->addr, cfg->port, &lg_ops, c);
		if (c->s == NULL) {
			int err = errno;

			if (w->st.err_connect++ == 0)
				fprintf(stderr, "dpsock-loadgen: worker %u: %s: %s\n", w->idx,
					cfg->mode == MODE_UDP ? "dpsock_udp_bind_addr" :
					"dpsock_tcp_connect", strerror(err));
			if (cfg->mode == MODE_CHURN) {
				w->retry_tsc = now + w->hz / 1000; /* 1 ms, then again */
			} else {
				w->n_idle--;
				slot_done(c);
			}
			break;
		}
		w->n_idle--;
		c->state = ST_CONNECTING;
		c->t0 = now;
		w->connecting++;
		opened++;
		if (cfg->mode == MODE_UDP)
			start_request(c);
	}
	if (cfg->mode == MODE_UDP)
		opened += udp_expire(w, now);
	/* what this pass did; waiting for replies is idle time, which the
	 * worker spends polling (and, when another thread wants this CPU,
	 * yielding to it) for worker.idle_poll_us before it sleeps: the
	 * benchmarks set that high enough never to sleep in a measurement */
	return opened;
}

static int
lg_worker_init(struct dpsock_worker *dw, void *arg)
{
	const struct lg_cfg *cfg = arg;
	unsigned int idx = dpsock_worker_index(dw), nw = dpsock_worker_count();
	struct lg_worker *w;
	uint32_t i, share;

	if (idx >= APP_MAX_WORKERS || nw == 0)
		return -EINVAL;
	share = cfg->conns / nw + (idx < cfg->conns % nw ? 1 : 0);
	w = aligned_alloc(64, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	workers[idx] = w;
	w->idx = idx;
	w->lcore = rte_lcore_id();
	w->dw = dw;
	w->cfg = cfg;
	w->n_conns = share;
	w->share = share;
	if (share != 0) {
		w->conns = calloc(share, sizeof(*w->conns));
		w->idle = calloc(share, sizeof(*w->idle));
		if (w->conns == NULL || w->idle == NULL)
			return -ENOMEM;
	}
	for (i = 0; i < share; i++) {
		w->conns[i].w = w;
		w->conns[i].idx = i;
		w->conns[i].state = ST_IDLE;
		w->idle[w->n_idle++] = share - 1 - i; /* slot 0 first */
		if (cfg->proto != PROTO_ECHO) {
			/* sockperf: request + the reply's header; http: headers */
			w->conns[i].buf = malloc(cfg->proto == PROTO_SOCKPERF ?
						 cfg->size + SP_HDR_LEN : LG_HTTP_HDR_MAX);
			if (w->conns[i].buf == NULL)
				return -ENOMEM;
		}
	}
	w->active = share;
	w->gate = true;
	w->hz = rte_get_tsc_hz();
	w->start_tsc = rte_rdtsc();
	w->deadline_tsc = w->start_tsc + (uint64_t)cfg->seconds * w->hz;
	w->gate_tsc = w->start_tsc + w->hz;
	w->udp_timeout_tsc = (uint64_t)cfg->udp_timeout_ms * w->hz / 1000;
	return 0;
}

static void
lg_worker_fini(struct dpsock_worker *dw, void *arg)
{
	unsigned int idx = dpsock_worker_index(dw);
	struct lg_worker *w = idx < APP_MAX_WORKERS ? workers[idx] : NULL;

	if (w == NULL)
		return;
	if (!w->finished) { /* stopped from outside (signal) */
		close_all(w);
		w->end_tsc = rte_rdtsc();
		w->finished = true;
	}
	for (uint32_t i = 0; w->conns != NULL && i < w->n_conns; i++)
		free(w->conns[i].buf);
	free(w->conns);
	free(w->idle);
	w->conns = NULL;
	w->idle = NULL;
	w->n_conns = 0;
}

/*
 * Report
 */

static uint64_t
errors_of(const struct lg_stats *st)
{
	uint64_t e = 0;

#define X(name) e += st->name;
	LG_ERRORS(X)
#undef X
	return e;
}

/* "key=value ..." for counters, elapsed time, rates and latencies. */
static void
report(const char *head, const struct lg_stats *st, uint32_t conns, bool udp, double elapsed,
       double active, const uint64_t *hist, uint64_t lat_n, uint64_t lat_sum, uint64_t lat_max,
       uint64_t hz)
{
	char line[2048];
	size_t off = 0;
	double us = hz ? 1e6 / (double)hz : 0;

#define OUT(...)                                                                    \
	do {                                                                        \
		if (off < sizeof(line))                                             \
			off += snprintf(line + off, sizeof(line) - off, __VA_ARGS__); \
	} while (0)
	OUT("loadgen: %s conns=%" PRIu32, head, conns);
	OUT(" connected=%" PRIu64 " transactions=%" PRIu64 " errors=%" PRIu64, st->connected,
	    st->transactions, errors_of(st));
	OUT(" bytes_tx=%" PRIu64 " bytes_rx=%" PRIu64, st->bytes_tx, st->bytes_rx);
#define X(name) OUT(" " #name "=%" PRIu64, st->name);
	LG_ERRORS(X)
#undef X
	if (udp)
		OUT(" lost=%" PRIu64 " stale=%" PRIu64, st->lost, st->stale);
	OUT(" elapsed_s=%.3f active_s=%.3f", elapsed, active);
	OUT(" rate=%.1f/s", active > 0 ? (double)st->transactions / active : 0.0);
	OUT(" tx_mbit_s=%.1f rx_mbit_s=%.1f",
	    active > 0 ? (double)st->bytes_tx * 8 / active / 1e6 : 0.0,
	    active > 0 ? (double)st->bytes_rx * 8 / active / 1e6 : 0.0);
	OUT(" mean_us=%.2f p50_us=%.2f p99_us=%.2f p999_us=%.2f max_us=%.2f",
	    lat_n ? (double)lat_sum / (double)lat_n * us : 0.0,
	    hist_pct_us(hist, lat_n, 0.50, lat_max, hz), hist_pct_us(hist, lat_n, 0.99, lat_max, hz),
	    hist_pct_us(hist, lat_n, 0.999, lat_max, hz), (double)lat_max * us);
#undef OUT
	printf("%s\n", line);
}

/*
 * Command line
 */

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options] -- [-f dpsock.conf] -d IP [options]\n"
		"\n"
		"TCP and UDP load generator on dpsock: connections spread over the workers,\n"
		"each worker opening its share. Prints one line per worker and a total line.\n"
		"\n"
		"Options:\n"
		"  -d, --dest IP          server address, IPv4 or IPv6 (TCP modes) (required)\n"
		"  -p, --port PORT        server port (default %u)\n"
		"  -c, --connections N    connections (udp: sockets) in all, 1..%u (default 1)\n"
		"  -m, --mode MODE        rr     request/reply over long connections (default)\n"
		"                         churn  connect, request/reply, close, again\n"
		"                         bulk   send as fast as possible (to a sink)\n"
		"                         udp    request/reply in datagrams, one out per socket\n"
		"  -s, --size BYTES       request size for rr and churn, 1..1M, udp 1..%u\n"
		"                         (default %u)\n"
		"  -n, --requests N       per connection: transactions (rr), connections (churn),\n"
		"                         bytes (bulk, suffixes k/m/g), requests answered or\n"
		"                         lost (udp); 0 = until the time is up\n"
		"  -t, --time SECONDS     run time, 1..%u (default %u); also bounds -n runs\n"
		"      --verify           check that every reply byte equals the request's\n"
		"                         (sockperf: the reply's length field)\n"
		"      --proto PROTO      echo      the reply is the request (default)\n"
		"                         sockperf  sockperf ping-pong messages of -s bytes\n"
		"                         http      GET --path, keep-alive; status 200 wanted\n"
		"                                   (not udp)\n"
		"      --path PATH        the URL path for --proto http (default /)\n"
		"      --udp-timeout-ms MS\n"
		"                         udp: a request unanswered this long is lost (counted,\n"
		"                         not an error) and the next one sent, 1..60000\n"
		"                         (default %u)\n"
		"  -h, --help             this text\n"
		"\n"
		"Exit status: 0 with no errors and some work done, 1 otherwise (udp: losses\n"
		"are not errors).\n"
		"\n",
		prog, LG_DEFAULT_PORT, LG_MAX_CONNS, LG_UDP_MAX_SIZE, LG_DEFAULT_SIZE, LG_MAX_TIME,
		LG_DEFAULT_TIME, LG_UDP_TIMEOUT_MS);
	dpsock_usage(f);
}

enum {
	OPT_VERIFY = 256,
	OPT_PROTO,
	OPT_PATH,
	OPT_UDP_TIMEOUT,
};

static const struct option long_opts[] = {
	{ "dest", required_argument, NULL, 'd' },
	{ "port", required_argument, NULL, 'p' },
	{ "connections", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "size", required_argument, NULL, 's' },
	{ "requests", required_argument, NULL, 'n' },
	{ "time", required_argument, NULL, 't' },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "proto", required_argument, NULL, OPT_PROTO },
	{ "path", required_argument, NULL, OPT_PATH },
	{ "udp-timeout-ms", required_argument, NULL, OPT_UDP_TIMEOUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	static struct lg_cfg cfg = {
		.port = LG_DEFAULT_PORT,
		.conns = 1,
		.mode = MODE_RR,
		.size = LG_DEFAULT_SIZE,
		.seconds = LG_DEFAULT_TIME,
		.udp_timeout_ms = LG_UDP_TIMEOUT_MS,
	};
	const struct dpsock_app app = {
		.name = "dpsock-loadgen",
		.worker_init = lg_worker_init,
		.worker_poll = lg_worker_poll,
		.worker_fini = lg_worker_fini,
	};
	const char *prog = app_prog_name(argv[0]);
	const char *dest = NULL, *path = "/";
	struct lg_stats total;
	uint64_t hist[LG_HIST_BUCKETS], lat_n = 0, lat_sum = 0, lat_max = 0, hz = 0, errors;
	double elapsed_max = 0, active_max = 0;
	unsigned int i, b, n_workers = 0;
	int argc2, opt, ret;
	char **argv2;
	bool ok;

	ret = app_init(argc, argv, prog, usage, &argc2, &argv2);
	if (ret >= 0)
		return ret;
	while ((opt = getopt_long(argc2, argv2, "d:p:c:m:s:n:t:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			dest = optarg;
			break;
		case 'p':
			cfg.port = (uint16_t)app_parse_u64(prog, "--port", optarg, 1, 65535, false);
			break;
		case 'c':
			cfg.conns = (uint32_t)app_parse_u64(prog, "--connections", optarg, 1,
							    LG_MAX_CONNS, false);
			break;
		case 'm':
			for (i = 0; i < RTE_DIM(mode_names); i++)
				if (strcmp(optarg, mode_names[i]) == 0)
					break;
			if (i == RTE_DIM(mode_names))
				app_bad_usage(prog, "--mode: '%s' is not rr, churn, bulk or udp", optarg);
			cfg.mode = (enum lg_mode)i;
			break;
		case 's':
			cfg.size = (uint32_t)app_parse_u64(prog, "--size", optarg, 1, LG_MAX_SIZE,
							   true);
			break;
		case 'n':
			cfg.count = app_parse_u64(prog, "--requests", optarg, 0, UINT64_MAX / 2,
						  true);
			break;
		case 't':
			cfg.seconds = (uint32_t)app_parse_u64(prog, "--time", optarg, 1, LG_MAX_TIME,
							      false);
			break;
		case OPT_VERIFY:
			cfg.verify = true;
			break;
		case OPT_PROTO:
			for (i = 0; i < RTE_DIM(proto_names); i++)
				if (strcmp(optarg, proto_names[i]) == 0)
					break;
			if (i == RTE_DIM(proto_names))
				app_bad_usage(prog, "--proto: '%s' is not echo, sockperf or http",
					      optarg);
			cfg.proto = (enum lg_proto)i;
			break;
		case OPT_PATH:
			if (optarg[0] != '/' || strpbrk(optarg, " \r\n") != NULL)
				app_bad_usage(prog, "--path: '%s' is not a URL path", optarg);
			path = optarg;
			break;
		case OPT_UDP_TIMEOUT:
			cfg.udp_timeout_ms = (uint32_t)app_parse_u64(prog, "--udp-timeout-ms", optarg, 1,
								     60000, false);
			break;
		default:
			app_usage_exit(prog);
		}
	}
	if (optind < argc2)
		app_bad_usage(prog, "unexpected argument '%s'", argv2[optind]);
	if (dest == NULL)
		app_bad_usage(prog, "-d/--dest IP is required");
	if (inet_pton(AF_INET, dest, &cfg.addr) != 1) {
		if (inet_pton(AF_INET6, dest, &cfg.addr6) != 1)
			app_bad_usage(prog, "--dest: '%s' is not an IPv4 or IPv6 address", dest);
		if (cfg.mode == MODE_UDP)
			app_bad_usage(prog, "--dest %s: -m udp is IPv4 only (dpsock's UDP sockets are)",
				      dest);
		cfg.v6 = true;
	}
	if (cfg.proto == PROTO_SOCKPERF && cfg.size < SP_HDR_LEN)
		app_bad_usage(prog, "--proto sockperf: -s must be at least %u (its header)",
			      SP_HDR_LEN);
	if (cfg.proto == PROTO_HTTP && (cfg.mode == MODE_BULK || cfg.mode == MODE_UDP))
		app_bad_usage(prog, "--proto http: rr or churn");
	if (cfg.mode == MODE_UDP && cfg.size > LG_UDP_MAX_SIZE)
		app_bad_usage(prog, "-m udp: -s is at most %u", LG_UDP_MAX_SIZE);
	if (cfg.mode == MODE_UDP && cfg.size > 1472 && dpsock_worker_count() > 1)
		/* dpsock_steer_owner: fragments go by IP id, not by port */
		fprintf(stderr, "%s: warning: -s %" PRIu32 " is above a 1500-byte MTU: replies come "
			"in fragments, reassembled on a worker chosen by hash; with %u workers, those "
			"reassembled off their socket's worker are lost (counted in lost)\n",
			prog, cfg.size, dpsock_worker_count());
	cfg.dst.in.sin_family = AF_INET;
	cfg.dst.in.sin_addr.s_addr = cfg.addr;
	cfg.dst.in.sin_port = htons(cfg.port);
	if (cfg.proto == PROTO_HTTP &&
	    asprintf(&cfg.http_req, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: dpsock-loadgen\r\n\r\n",
		     path, dest) < 0) {
		fprintf(stderr, "%s: out of memory\n", prog);
		dpsock_fini();
		return 1;
	}
	if (cfg.http_req != NULL)
		cfg.http_len = strlen(cfg.http_req);
	cfg.pat_len = (cfg.size > LG_BULK_CHUNK ? cfg.size : LG_BULK_CHUNK) + LG_SHIFTS;
	cfg.pat = malloc(cfg.pat_len);
	if (cfg.pat == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		dpsock_fini();
		return 1;
	}
	fill_pattern(cfg.pat, cfg.pat_len);

	ret = dpsock_run(&app, &cfg);

	memset(&total, 0, sizeof(total));
	memset(hist, 0, sizeof(hist));
	for (i = 0; i < APP_MAX_WORKERS; i++) {
		struct lg_worker *w = workers[i];
		double elapsed, active;
		char head[64];

		if (w == NULL)
			continue;
		n_workers++;
		hz = w->hz;
		elapsed = w->hz && w->end_tsc > w->start_tsc ?
				  (double)(w->end_tsc - w->start_tsc) / (double)w->hz : 0;
		/* rates over the time connections were up (rr, bulk; churn: the
		 * whole run, connecting is its work): the first connect waits for
		 * ARP, which costs a second when the link came up late (memif) */
		active = elapsed;
		if (cfg.mode != MODE_CHURN && w->up_tsc != 0 && w->end_tsc > w->up_tsc)
			active = (double)(w->end_tsc - w->up_tsc) / (double)w->hz;
		if (elapsed > elapsed_max)
			elapsed_max = elapsed;
		if (active > active_max)
			active_max = active;
		snprintf(head, sizeof(head), "worker %u lcore=%u", i, w->lcore);
		report(head, &w->st, w->share, cfg.mode == MODE_UDP, elapsed, active, w->hist,
		       w->lat_n, w->lat_sum, w->lat_max, w->hz);
#define X(name) total.name += w->st.name;
		LG_COUNTERS(X)
#undef X
		for (b = 0; b < LG_HIST_BUCKETS; b++)
			hist[b] += w->hist[b];
		lat_n += w->lat_n;
		lat_sum += w->lat_sum;
		if (w->lat_max > lat_max)
			lat_max = w->lat_max;
		free(w->conns); /* when worker_fini did not run */
		free(w->idle);
		free(w);
		workers[i] = NULL;
	}
	if (n_workers != 0) {
		char head[96];

		snprintf(head, sizeof(head), "total mode=%s workers=%u", mode_names[cfg.mode],
			 n_workers);
		report(head, &total, cfg.conns, cfg.mode == MODE_UDP, elapsed_max, active_max, hist,
		       lat_n, lat_sum, lat_max, hz);
	}
	fflush(stdout);
	free(cfg.pat);
	if (ret != 0)
		return ret;
	errors = errors_of(&total);
	ok = errors == 0 &&
	     (cfg.mode == MODE_BULK ? total.bytes_tx > 0 : total.transactions > 0);
	return ok ? 0 : 1;
}
