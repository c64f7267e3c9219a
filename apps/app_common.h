/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Small helpers shared by the native apps (header only: each app is one
 * source file, linked on its own with the stack library).
 *
 *   - command line: shifted argv for getopt, number parsing, exit 2 on bad use;
 *   - app_outq: a per-connection send backlog (bytes dpsock_send did not take);
 *   - app_rxq: received data held back (dpsock_rx_hold) while the backlog is
 *     full, so that the peer is flow-controlled by the receive window instead
 *     of the backlog growing;
 *   - app_rx_piece: walk a struct dpsock_rx as contiguous pieces, zero-copy.
 *
 * Everything here runs on one worker and takes no lock.
 */
#ifndef DPSOCK_APP_COMMON_H
#define DPSOCK_APP_COMMON_H

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "dpsock/dpsock.h"

#define APP_MAX_WORKERS 64

/*
 * Command line
 */

/* After a bad option (whose message is printed already): point to --help,
 * undo dpsock_init, exit 2. */
static inline void __attribute__((noreturn))
app_usage_exit(const char *prog)
{
	fprintf(stderr, "Try '%s -- --help'.\n", prog);
	dpsock_fini();
	exit(2);
}

/* Print "prog: message", then as app_usage_exit. */
static inline void __attribute__((noreturn, format(printf, 2, 3)))
app_bad_usage(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	app_usage_exit(prog);
}

/* Is -h/--help among the program's options? dpsock_init started nothing
 * then (it looks for them the same way): print help, exit 0, no dpsock_fini. */
static inline bool
app_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

/*
 * Start the stack (dpsock_init) and hand back the program's own options as
 * (*argc2, *argv2), with the program name in front for getopt (optind is
 * reset). Returns -1 when the caller should go on parsing, or the exit
 * status to return at once: 1 when the stack could not start, 0 after
 * printing the help.
 */
static inline int
app_init(int argc, char **argv, const char *prog, void (*usage)(FILE *, const char *),
	 int *argc2, char ***argv2)
{
	int n = dpsock_init(argc, argv);

	if (n < 0)
		return 1;
	*argc2 = argc - n + 1;
	*argv2 = argv + n - 1;
	if (app_wants_help(*argc2, *argv2)) {
		usage(stdout, prog);
		return 0;
	}
	optind = 1;
	return -1;
}

/* Parse an unsigned decimal number in [min, max] (suffixes k, m, g = 2^10,
 * 2^20, 2^30 when allow_suffix). Exits 2 with a message naming opt on error. */
static inline uint64_t
app_parse_u64(const char *prog, const char *opt, const char *arg, uint64_t min, uint64_t max,
	      bool allow_suffix)
{
	unsigned long long v;
	char *end;

	errno = 0;
	if (arg == NULL || *arg < '0' || *arg > '9')
		app_bad_usage(prog, "%s: '%s' is not a number", opt, arg ? arg : "");
	v = strtoull(arg, &end, 10);
	if (errno == 0 && allow_suffix && *end != '\0' && end[1] == '\0') {
		unsigned int shift = 0;

		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: break;
		}
		if (shift != 0) {
			if (v > (UINT64_MAX >> shift))
				errno = ERANGE;
			v <<= shift;
			end++;
		}
	}
	if (errno != 0 || *end != '\0')
		app_bad_usage(prog, "%s: '%s' is not a number", opt, arg);
	if (v < min || v > max)
		app_bad_usage(prog, "%s: %s is out of range %" PRIu64 "..%" PRIu64, opt, arg,
			      min, max);
	return v;
}

/* Program name for messages: the last component of argv[0]. */
static inline const char *
app_prog_name(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;

	return slash ? slash + 1 : (argv0 ? argv0 : "dpsock-app");
}

/*
 * Send backlog: bytes that dpsock_send did not take, in order. Memory is
 * allocated only while there is a backlog and freed when it empties.
 */
struct app_outq {
	uint8_t *buf;
	size_t head; /* first unsent byte */
	size_t len;  /* unsent bytes */
	size_t cap;
};

static inline void
app_outq_free(struct app_outq *q)
{
	free(q->buf);
	memset(q, 0, sizeof(*q));
}

/* Append n bytes. Returns 0, or -ENOBUFS when the backlog would exceed limit
 * (or memory is short); nothing is appended then. */
static inline int
app_outq_push(struct app_outq *q, const void *p, size_t n, size_t limit)
{
	if (n == 0)
		return 0;
	if (q->len + n > limit)
		return -ENOBUFS;
	if (q->head + q->len + n > q->cap) {
		if (q->len + n <= q->cap) {
			/* enough room once the sent part is dropped */
			memmove(q->buf, q->buf + q->head, q->len);
		} else {
			size_t cap = q->cap ? q->cap : 4096;
			uint8_t *nb;

			while (cap < q->len + n)
				cap *= 2;
			if (cap > limit)
				cap = limit;
			nb = malloc(cap);
			if (nb == NULL)
				return -ENOBUFS;
			if (q->len != 0)
				memcpy(nb, q->buf + q->head, q->len);
			free(q->buf);
			q->buf = nb;
			q->cap = cap;
		}
		q->head = 0;
	}
	memcpy(q->buf + q->head + q->len, p, n);
	q->len += n;
	return 0;
}

/* Send as much of the backlog as the socket takes. Returns 0 (the rest, if
 * any, waits for the writable callback) or the -errno of dpsock_send. */
static inline int
app_outq_flush(struct app_outq *q, struct dpsock_sock *s)
{
	while (q->len != 0) {
		ssize_t r = dpsock_send(s, q->buf + q->head, q->len, 0);

		if (r == -EAGAIN || r == 0)
			break;
		if (r < 0)
			return (int)r;
		q->head += (size_t)r;
		q->len -= (size_t)r;
	}
	if (q->len == 0)
		app_outq_free(q);
	return 0;
}

/* Send n bytes after whatever is backlogged: straight to the socket when
 * the backlog is empty, the rest (or all) to the backlog. Returns 0,
 * -ENOBUFS (backlog limit) or the -errno of dpsock_send. */
static inline int
app_send(struct dpsock_sock *s, struct app_outq *q, const void *p, size_t n, size_t limit)
{
	if (q->len == 0) {
		ssize_t r = dpsock_send(s, p, n, 0);

		if (r == -EAGAIN)
			r = 0;
		else if (r < 0)
			return (int)r;
		p = (const uint8_t *)p + r;
		n -= (size_t)r;
	}
	return app_outq_push(q, p, n, limit);
}

/*
 * Held receive data: struct dpsock_rx handles kept past the readable
 * callback (their bytes keep the receive window closed), each with the
 * offset of its first unprocessed byte. A small FIFO that grows by doubling
 * up to APP_RXQ_MAX handles.
 */
#define APP_RXQ_MAX 4096

struct app_held {
	struct dpsock_rx *rx;
	size_t off;
};

struct app_rxq {
	struct app_held *v;
	unsigned int head, n, cap; /* cap: a power of two */
};

/* Hold rx and queue it with its first unprocessed byte at off. Returns 0 or
 * -ENOBUFS (too many held, or no memory; rx is not held then). */
static inline int
app_rxq_hold(struct app_rxq *q, struct dpsock_rx *rx, size_t off)
{
	if (q->n == q->cap) {
		unsigned int cap = q->cap ? q->cap * 2 : 8, i;
		struct app_held *nv;

		if (cap > APP_RXQ_MAX)
			return -ENOBUFS;
		nv = malloc(cap * sizeof(*nv));
		if (nv == NULL)
			return -ENOBUFS;
		for (i = 0; i < q->n; i++)
			nv[i] = q->v[(q->head + i) & (q->cap - 1)];
		free(q->v);
		q->v = nv;
		q->cap = cap;
		q->head = 0;
	}
	q->v[(q->head + q->n) & (q->cap - 1)].rx = dpsock_rx_hold(rx);
	q->v[(q->head + q->n) & (q->cap - 1)].off = off;
	q->n++;
	return 0;
}

static inline struct app_held *
app_rxq_front(struct app_rxq *q)
{
	return q->n ? &q->v[q->head] : NULL;
}

/* Release the front entry. */
static inline void
app_rxq_pop(struct app_rxq *q)
{
	dpsock_rx_release(q->v[q->head].rx);
	q->head = (q->head + 1) & (q->cap - 1);
	if (--q->n == 0) {
		free(q->v);
		memset(q, 0, sizeof(*q));
	}
}

/* Release everything held. */
static inline void
app_rxq_free(struct app_rxq *q)
{
	while (q->n != 0)
		app_rxq_pop(q);
	free(q->v);
	memset(q, 0, sizeof(*q));
}

/*
 * Contiguous piece of rx starting at byte off: points into the mbuf when off
 * falls in one of the first APP_RX_IOV segments, else is copied into bounce.
 * Returns the piece's length (0 when off is at or past the end).
 */
#define APP_RX_IOV 32

static inline size_t
app_rx_piece(const struct dpsock_rx *rx, size_t off, const uint8_t **p, uint8_t *bounce,
	     size_t bounce_len)
{
	struct iovec iov[APP_RX_IOV];
	unsigned int n = dpsock_rx_iov(rx, iov, APP_RX_IOV), i;
	size_t pos = 0;

	if (n > APP_RX_IOV)
		n = APP_RX_IOV;
	for (i = 0; i < n; i++) {
		if (off < pos + iov[i].iov_len) {
			*p = (const uint8_t *)iov[i].iov_base + (off - pos);
			return iov[i].iov_len - (off - pos);
		}
		pos += iov[i].iov_len;
	}
	*p = bounce;
	return dpsock_rx_copy(rx, bounce, bounce_len, off);
}

/* Monotonic time in nanoseconds. */
static inline uint64_t
app_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* DPSOCK_APP_COMMON_H */
