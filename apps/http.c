/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-http — minimal HTTP/1.1 responder with a fixed body, on the dpsock
 * native API: for curl, wrk, ab and the like.
 *
 *   dpsock-http [EAL options] -- -f dpsock.conf [-p PORT] [-s BYTES] [--close]
 *
 * Every GET gets "200 OK" with the same body (the text "dpsock\n" repeated
 * and cut to the size), every HEAD the same headers without the body. Other
 * methods get 405 (with Allow), requests with a body (Content-Length other
 * than 0, Transfer-Encoding) or anything that is not HTTP/1.x get 400 or 505,
 * a header block over 8 KiB gets 431; these error responses close the
 * connection. HTTP/1.1 keeps the connection unless "Connection: close";
 * HTTP/1.0 closes it unless "Connection: keep-alive"; --close always closes.
 * Pipelined requests are answered in order.
 *
 * The responses are built once, before the workers start, and never copied
 * per connection: a connection's output is a small FIFO of references to
 * them, with the offset reached in the first. While that FIFO is full
 * (HTTP_OUTQ responses the peer has not taken), received data is held
 * (dpsock_rx_hold) instead of parsed, so a peer that pipelines without
 * reading is stopped by the receive window.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include "dpsock/dpsock.h"

#include "app_common.h"

#define HTTP_DEFAULT_PORT 80
#define HTTP_DEFAULT_SIZE 64
#define HTTP_MAX_SIZE (64ull << 20)
#define HTTP_LISTEN_BACKLOG 128
#define HTTP_HDR_MAX 8192 /* request line and headers, blank line included */
#define HTTP_OUTQ 32	  /* responses queued per connection (a power of two) */
#define HTTP_BOUNCE 4096

struct http_cfg {
	uint16_t port;
	uint64_t size;
	bool close;
};

/* The prebuilt responses. */
enum http_resp_id {
	R_GET,		/* 200, keep-alive (HTTP/1.1 default) */
	R_GET_KA,	/* 200, "Connection: keep-alive" (HTTP/1.0 keep-alive) */
	R_GET_CLOSE,	/* 200, "Connection: close" */
	R_HEAD,
	R_HEAD_KA,
	R_HEAD_CLOSE,
	R_400,
	R_405,
	R_431,
	R_505,
	R_COUNT,
};

struct http_resp {
	char *buf;
	size_t len;
	bool ok;    /* a 200 */
	bool close; /* the connection closes after it */
};

/* Built by main before dpsock_run, read-only afterwards. */
static struct http_resp responses[R_COUNT];

#define HTTP_COUNTERS(X)                                                           \
	X(conns)	/* connections accepted */                                   \
	X(closed)	/* connections ended (any way) */                            \
	X(resets)	/* ended by a reset or timeout */                            \
	X(requests)	/* requests answered (errors included) */                    \
	X(ok)		/* 200 responses */                                          \
	X(errors)	/* 400, 405, 431, 505 responses */                           \
	X(bytes_in)	/* bytes received */                                         \
	X(bytes_out)	/* response bytes queued */                                  \
	X(aborts)	/* connections aborted: send failed, too much held, no memory */

struct http_stats {
#define X(name) uint64_t name;
	HTTP_COUNTERS(X)
#undef X
};

struct http_conn;

struct http_worker {
	unsigned int idx;
	const struct http_cfg *cfg;
	struct dpsock_sock *listener;
	LIST_HEAD(, http_conn) conns;
	struct http_stats st;
	uint8_t bounce[HTTP_BOUNCE];
} __attribute__((aligned(64)));

struct http_conn {
	LIST_ENTRY(http_conn) link;
	struct http_worker *w;
	struct dpsock_sock *s;
	/* output: responses[outq[(out_head + i) % HTTP_OUTQ]], i < out_n; the
	 * first is sent up to out_off */
	uint8_t outq[HTTP_OUTQ];
	unsigned int out_head, out_n;
	size_t out_off;
	struct app_rxq held; /* received, not parsed yet */
	char *in;	     /* HTTP_HDR_MAX bytes when allocated: a partial request */
	size_t in_len;
	int err;	     /* a send failed: abort */
	bool closing;	     /* a closing response is queued: input is ignored */
	bool eof;	     /* the peer closed its side */
};

static struct http_worker *workers[APP_MAX_WORKERS];

/*
 * Responses
 */

static int
build_response(enum http_resp_id id, const struct http_cfg *cfg, const char *body)
{
	static const struct {
		const char *status;
		const char *extra;
		const char *text;
	} errs[] = {
		[R_400] = { "400 Bad Request", "", "Bad Request\n" },
		[R_405] = { "405 Method Not Allowed", "Allow: GET, HEAD\r\n", "Method Not Allowed\n" },
		[R_431] = { "431 Request Header Fields Too Large", "",
			    "Request Header Fields Too Large\n" },
		[R_505] = { "505 HTTP Version Not Supported", "", "HTTP Version Not Supported\n" },
	};
	struct http_resp *r = &responses[id];
	const char *conn_hdr = "";
	char hdr[512];
	size_t body_len = 0;
	int hlen;

	if (id <= R_HEAD_CLOSE) {
		bool head = id >= R_HEAD;
		enum http_resp_id kind = head ? id - R_HEAD : id;

		if (kind == R_GET_KA)
			conn_hdr = "Connection: keep-alive\r\n";
		else if (kind == R_GET_CLOSE)
			conn_hdr = "Connection: close\r\n";
		hlen = snprintf(hdr, sizeof(hdr),
				"HTTP/1.1 200 OK\r\nServer: dpsock\r\nContent-Type: text/plain\r\n"
				"Content-Length: %" PRIu64 "\r\n%s\r\n", cfg->size, conn_hdr);
		body_len = head ? 0 : cfg->size;
		r->ok = true;
		r->close = kind == R_GET_CLOSE;
	} else {
		body = errs[id].text;
		body_len = strlen(body);
		hlen = snprintf(hdr, sizeof(hdr),
				"HTTP/1.1 %s\r\nServer: dpsock\r\n%sContent-Type: text/plain\r\n"
				"Content-Length: %zu\r\nConnection: close\r\n\r\n",
				errs[id].status, errs[id].extra, body_len);
		r->close = true;
	}
	if (hlen < 0 || (size_t)hlen >= sizeof(hdr))
		return -EINVAL;
	r->len = (size_t)hlen + body_len;
	r->buf = malloc(r->len);
	if (r->buf == NULL)
		return -ENOMEM;
	memcpy(r->buf, hdr, (size_t)hlen);
	memcpy(r->buf + hlen, body, body_len);
	return 0;
}

static int
build_responses(const struct http_cfg *cfg)
{
	static const char unit[] = "dpsock\n";
	char *body = malloc(cfg->size ? cfg->size : 1);
	unsigned int i;
	uint64_t k;
	int ret = 0;

	if (body == NULL)
		return -ENOMEM;
	for (k = 0; k < cfg->size; k++)
		body[k] = unit[k % (sizeof(unit) - 1)];
	for (i = 0; i < R_COUNT && ret == 0; i++)
		ret = build_response(i, cfg, body);
	free(body);
	return ret;
}

static void
free_responses(void)
{
	unsigned int i;

	for (i = 0; i < R_COUNT; i++) {
		free(responses[i].buf);
		responses[i].buf = NULL;
	}
}

/*
 * Output FIFO
 */

/* Send the queued responses as far as the socket takes them. */
static int
out_flush(struct http_conn *c)
{
	while (c->out_n != 0) {
		const struct http_resp *r = &responses[c->outq[c->out_head]];
		ssize_t n = dpsock_send(c->s, r->buf + c->out_off, r->len - c->out_off, 0);

		if (n == -EAGAIN || n == 0)
			break;
		if (n < 0)
			return (int)n;
		c->out_off += (size_t)n;
		if (c->out_off < r->len)
			break;
		c->out_off = 0;
		c->out_head = (c->out_head + 1) % HTTP_OUTQ;
		c->out_n--;
	}
	return 0;
}

/* Answer with response id (the caller checked the FIFO has room). */
static void
respond(struct http_conn *c, enum http_resp_id id)
{
	const struct http_resp *r = &responses[id];
	struct http_worker *w = c->w;
	size_t sent = 0;

	w->st.requests++;
	if (r->ok)
		w->st.ok++;
	else
		w->st.errors++;
	w->st.bytes_out += r->len;
	if (r->close)
		c->closing = true;
	if (c->out_n == 0) {
		ssize_t n = dpsock_send(c->s, r->buf, r->len, 0);

		if (n == -EAGAIN)
			n = 0;
		if (n < 0) {
			c->err = (int)n;
			return;
		}
		if ((size_t)n == r->len)
			return;
		sent = (size_t)n;
		c->out_off = sent;
	}
	c->outq[(c->out_head + c->out_n) % HTTP_OUTQ] = (uint8_t)id;
	c->out_n++;
}

/*
 * Request parsing
 */

/* Length of the header block at p (through its blank line; bare LF line
 * ends are accepted), or 0 when it is not complete in n bytes. */
static size_t
header_end(const char *p, size_t n)
{
	const char *nl = p, *end = p + n;

	while ((nl = memchr(nl, '\n', (size_t)(end - nl))) != NULL) {
		if (nl + 1 < end && nl[1] == '\n')
			return (size_t)(nl + 2 - p);
		if (nl + 2 < end && nl[1] == '\r' && nl[2] == '\n')
			return (size_t)(nl + 3 - p);
		nl++;
	}
	return 0;
}

/* Next line in [*p, end): returns its length without CR LF and advances *p
 * past it. The header block always ends with a line feed. */
static size_t
next_line(const char **p, const char *end, const char **line)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t len;

	*line = *p;
	if (nl == NULL)
		nl = end - 1;
	len = (size_t)(nl - *p);
	if (len > 0 && (*p)[len - 1] == '\r')
		len--;
	*p = nl + 1;
	return len;
}

static bool
is_tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static bool
token_eq(const char *p, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(p, word, len) == 0;
}

/* Does the comma-separated list v (len bytes) hold the token word? */
static bool
list_has(const char *v, size_t len, const char *word)
{
	const char *end = v + len;

	while (v < end) {
		const char *comma = memchr(v, ',', (size_t)(end - v));
		const char *e = comma ? comma : end;
		const char *b = v;

		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (token_eq(b, (size_t)(e - b), word))
			return true;
		v = comma ? comma + 1 : end;
	}
	return false;
}

/* Choose the response for the complete header block [p, p + n). */
static enum http_resp_id
handle_request(const struct http_conn *c, const char *p, size_t n)
{
	const char *end = p + n, *line, *sp, *tgt;
	bool head, get, v11, conn_close = false, keep_alive = false, body = false, keep;
	size_t len, mlen, tlen;

	/* request line: METHOD SP target SP HTTP/1.x */
	len = next_line(&p, end, &line);
	for (mlen = 0; mlen < len && line[mlen] >= 'A' && line[mlen] <= 'Z'; mlen++)
		;
	if (mlen == 0 || mlen > 16 || mlen >= len || line[mlen] != ' ')
		return R_400;
	tgt = line + mlen + 1;
	sp = memchr(tgt, ' ', len - mlen - 1);
	if (sp == NULL || sp == tgt)
		return R_400;
	for (tlen = 0; tgt + tlen < sp; tlen++)
		if ((unsigned char)tgt[tlen] <= ' ' || tgt[tlen] == 0x7f)
			return R_400;
	len -= (size_t)(sp + 1 - line);
	if (len != 8 || memcmp(sp + 1, "HTTP/", 5) != 0 || sp[6] < '0' || sp[6] > '9' ||
	    sp[7] != '.' || sp[8] < '0' || sp[8] > '9')
		return R_400;
	if (sp[6] != '1')
		return R_505;
	v11 = sp[8] != '0';
	get = mlen == 3 && memcmp(line, "GET", 3) == 0;
	head = mlen == 4 && memcmp(line, "HEAD", 4) == 0;

	/* header fields, up to the blank line */
	while ((len = next_line(&p, end, &line)) != 0) {
		const char *colon = memchr(line, ':', len), *v, *ve;
		size_t i, nlen;

		if (colon == NULL || colon == line)
			return R_400; /* also obsolete line folding (leading blank) */
		nlen = (size_t)(colon - line);
		for (i = 0; i < nlen; i++)
			if (!is_tchar(line[i]))
				return R_400;
		v = colon + 1;
		ve = line + len;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (token_eq(line, nlen, "connection")) {
			conn_close |= list_has(v, (size_t)(ve - v), "close");
			keep_alive |= list_has(v, (size_t)(ve - v), "keep-alive");
		} else if (token_eq(line, nlen, "content-length")) {
			body |= !(ve - v == 1 && *v == '0');
		} else if (token_eq(line, nlen, "transfer-encoding")) {
			body = true;
		}
	}
	if (!get && !head)
		return R_405;
	if (body)
		return R_400; /* request bodies are not read: refuse them */
	keep = !c->w->cfg->close && !conn_close && (v11 || keep_alive);
	if (!keep)
		return get ? R_GET_CLOSE : R_HEAD_CLOSE;
	if (!v11)
		return get ? R_GET_KA : R_HEAD_KA;
	return get ? R_GET : R_HEAD;
}

/* Answer the complete requests in [p, p + n) while the output FIFO has room
 * and no closing response is queued. Returns the bytes used; a partial
 * request is left at the end (answered with 431 when it cannot complete
 * within HTTP_HDR_MAX). */
static size_t
http_parse(struct http_conn *c, const char *p, size_t n)
{
	size_t used = 0;

	while (used < n && !c->closing && c->err == 0 && c->out_n < HTTP_OUTQ) {
		const char *q = p + used;
		size_t left = n - used, hlen;

		if (*q == '\r' || *q == '\n') {
			used++; /* blank lines before a request are ignored */
			continue;
		}
		if (*q < 'A' || *q > 'Z') {
			respond(c, R_400); /* not a request line: no need to wait */
			break;
		}
		hlen = header_end(q, left);
		if (hlen == 0 || hlen > HTTP_HDR_MAX) {
			if (left >= HTTP_HDR_MAX)
				respond(c, R_431);
			break;
		}
		respond(c, handle_request(c, q, hlen));
		used += hlen;
	}
	return used;
}

/* Answer what the partial-request buffer completes. */
static void
parse_buffered(struct http_conn *c)
{
	size_t used = http_parse(c, c->in, c->in_len);

	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
}

/* Process rx from byte off: returns the offset reached (short of the end only
 * when the output FIFO is full) or -errno. Input after a closing response
 * is dropped. */
static ssize_t
consume(struct http_conn *c, const struct dpsock_rx *rx, size_t off)
{
	size_t len = dpsock_rx_len(rx);

	while (off < len && !c->closing) {
		const uint8_t *p;
		size_t k, used;

		if (c->err != 0)
			return c->err;
		if (c->out_n == HTTP_OUTQ)
			return (ssize_t)off;
		k = app_rx_piece(rx, off, &p, c->w->bounce, HTTP_BOUNCE);
		if (k == 0)
			return -EIO;
		if (c->in_len == 0) {
			/* straight from the segment */
			used = http_parse(c, (const char *)p, k);
			off += used;
			if (used == k || c->closing || c->err != 0 || c->out_n == HTTP_OUTQ)
				continue;
			/* a request continues in the next piece: keep its start */
			if (c->in == NULL && (c->in = malloc(HTTP_HDR_MAX)) == NULL)
				return -ENOMEM;
			memcpy(c->in, p + used, k - used);
			c->in_len = k - used;
			off += k - used;
		} else {
			if (k > HTTP_HDR_MAX - c->in_len)
				k = HTTP_HDR_MAX - c->in_len;
			if (k == 0) { /* not reached: a full buffer is answered with 431 */
				respond(c, R_431);
				continue;
			}
			memcpy(c->in + c->in_len, p, k);
			c->in_len += k;
			off += k;
			parse_buffered(c);
		}
	}
	if (c->err != 0)
		return c->err;
	return (ssize_t)(c->closing ? len : off);
}

/*
 * Connections
 */

static void
conn_free(struct http_conn *c)
{
	LIST_REMOVE(c, link);
	c->w->st.closed++;
	app_rxq_free(&c->held);
	free(c->in);
	free(c);
}

static void
conn_abort(struct http_conn *c)
{
	c->w->st.aborts++;
	dpsock_abort(c->s);
	conn_free(c);
}

/* Close once a closing response (or the peer's EOF) has nothing left to
 * send. Returns true when the connection is gone. */
static bool
conn_close_if_done(struct http_conn *c)
{
	if (c->out_n != 0 || (!c->closing && !c->eof))
		return false;
	dpsock_close(c->s);
	conn_free(c);
	return true;
}

/* Flush the output, then parse buffered and held input while the FIFO has
 * room. Held input remains only with a full FIFO, i.e. after a short send:
 * a writable callback follows. Returns 0 or -errno (abort). */
static int
conn_pump(struct http_conn *c)
{
	struct app_held *h;
	int r = out_flush(c);

	if (r < 0)
		return r;
	if (c->in_len != 0 && !c->closing && c->out_n < HTTP_OUTQ)
		parse_buffered(c);
	while ((h = app_rxq_front(&c->held)) != NULL && !c->closing && c->err == 0 &&
	       c->out_n < HTTP_OUTQ) {
		ssize_t off = consume(c, h->rx, h->off);

		if (off < 0)
			return (int)off;
		if ((size_t)off < dpsock_rx_len(h->rx)) {
			h->off = (size_t)off;
			break;
		}
		app_rxq_pop(&c->held);
	}
	if (c->closing)
		app_rxq_free(&c->held);
	return c->err;
}

static void
on_readable(struct dpsock_sock *s, struct dpsock_rx *rx)
{
	struct http_conn *c = dpsock_sock_user(s);
	size_t len = dpsock_rx_len(rx);
	ssize_t off = 0;

	c->w->st.bytes_in += len;
	if (c->closing)
		return; /* answered for good: drop */
	if (c->held.n == 0) {
		off = consume(c, rx, 0);
		if (off < 0) {
			conn_abort(c);
			return;
		}
		if ((size_t)off == len) {
			conn_close_if_done(c);
			return;
		}
	}
	if (app_rxq_hold(&c->held, rx, (size_t)off) < 0)
		conn_abort(c);
}

static void
on_writable(struct dpsock_sock *s, size_t space)
{
	struct http_conn *c = dpsock_sock_user(s);

	if (conn_pump(c) < 0)
		conn_abort(c);
	else
		conn_close_if_done(c);
}

static void
on_closed(struct dpsock_sock *s, int reason)
{
	struct http_conn *c = dpsock_sock_user(s);

	if (reason == 0) {
		/* EOF: finish sending, then close (a partial request is dropped) */
		c->eof = true;
		conn_close_if_done(c);
		return;
	}
	c->w->st.resets++;
	conn_free(c);
}

static const struct dpsock_sock_ops conn_ops = {
	.readable = on_readable,
	.writable = on_writable,
	.closed = on_closed,
};

static int
on_accepted(struct dpsock_sock *listener, struct dpsock_sock *child)
{
	struct http_worker *w = dpsock_sock_user(listener);
	struct http_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -ENOMEM;
	c->w = w;
	c->s = child;
	dpsock_sock_set_ops(child, &conn_ops);
	dpsock_sock_set_user(child, c);
	dpsock_set_nodelay(child, true);
	LIST_INSERT_HEAD(&w->conns, c, link);
	w->st.conns++;
	return 0;
}

static const struct dpsock_sock_ops listen_ops = {
	.accepted = on_accepted,
};

/*
 * Worker hooks
 */

static void
stats_print(const char *scope, const struct http_stats *st)
{
	char line[1024];
	size_t off = 0;

	off += snprintf(line + off, sizeof(line) - off, "http: %s", scope);
#define X(name)                                                                       \
	if (off < sizeof(line))                                                       \
		off += snprintf(line + off, sizeof(line) - off, " " #name "=%" PRIu64, \
				st->name);
	HTTP_COUNTERS(X)
#undef X
	printf("%s\n", line);
	fflush(stdout);
}

static int
http_worker_init(struct dpsock_worker *dw, void *arg)
{
	const struct http_cfg *cfg = arg;
	unsigned int idx = dpsock_worker_index(dw);
	struct http_worker *w;

	if (idx >= APP_MAX_WORKERS)
		return -EINVAL;
	w = aligned_alloc(64, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	w->idx = idx;
	w->cfg = cfg;
	LIST_INIT(&w->conns);
	workers[idx] = w;
	w->listener = dpsock_tcp_listen(dw, cfg->port, HTTP_LISTEN_BACKLOG, &listen_ops, w);
	if (w->listener == NULL) {
		int err = errno;

		fprintf(stderr, "dpsock-http: worker %u: listen on port %u: %s\n", idx, cfg->port,
			strerror(err));
		return -err;
	}
	return 0;
}

static void
http_worker_fini(struct dpsock_worker *dw, void *arg)
{
	unsigned int idx = dpsock_worker_index(dw);
	struct http_worker *w = idx < APP_MAX_WORKERS ? workers[idx] : NULL;
	char scope[32];

	if (w == NULL)
		return;
	while (!LIST_EMPTY(&w->conns)) {
		struct http_conn *c = LIST_FIRST(&w->conns);

		dpsock_abort(c->s);
		conn_free(c);
	}
	if (w->listener != NULL)
		dpsock_close(w->listener);
	w->listener = NULL;
	snprintf(scope, sizeof(scope), "worker %u", idx);
	stats_print(scope, &w->st);
}

/*
 * Command line
 */

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options] -- [-f dpsock.conf] [options]\n"
		"\n"
		"Minimal HTTP/1.1 server on dpsock: every GET gets 200 with a fixed body,\n"
		"HEAD the same headers; keep-alive and pipelining. For curl, wrk, ab.\n"
		"Counters are printed per worker at exit (SIGINT/SIGTERM).\n"
		"\n"
		"Options:\n"
		"  -p, --port PORT   TCP port (default %u)\n"
		"  -s, --size BYTES  body size, 0..64M, suffixes k/m (default %u)\n"
		"      --close       answer with \"Connection: close\" and close\n"
		"  -h, --help        this text\n"
		"\n",
		prog, HTTP_DEFAULT_PORT, HTTP_DEFAULT_SIZE);
	dpsock_usage(f);
}

enum {
	OPT_CLOSE = 256,
};

static const struct option long_opts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "size", required_argument, NULL, 's' },
	{ "close", no_argument, NULL, OPT_CLOSE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	static struct http_cfg cfg = {
		.port = HTTP_DEFAULT_PORT,
		.size = HTTP_DEFAULT_SIZE,
	};
	const struct dpsock_app app = {
		.name = "dpsock-http",
		.worker_init = http_worker_init,
		.worker_fini = http_worker_fini,
	};
	const char *prog = app_prog_name(argv[0]);
	struct http_stats total;
	unsigned int i;
	int argc2, opt, ret;
	char **argv2;

	ret = app_init(argc, argv, prog, usage, &argc2, &argv2);
	if (ret >= 0)
		return ret;
	while ((opt = getopt_long(argc2, argv2, "p:s:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			cfg.port = (uint16_t)app_parse_u64(prog, "--port", optarg, 1, 65535, false);
			break;
		case 's':
			cfg.size = app_parse_u64(prog, "--size", optarg, 0, HTTP_MAX_SIZE, true);
			break;
		case OPT_CLOSE:
			cfg.close = true;
			break;
		default:
			app_usage_exit(prog);
		}
	}
	if (optind < argc2)
		app_bad_usage(prog, "unexpected argument '%s'", argv2[optind]);
	if (build_responses(&cfg) != 0) {
		fprintf(stderr, "%s: out of memory for a %" PRIu64 "-byte body\n", prog, cfg.size);
		free_responses();
		dpsock_fini();
		return 1;
	}

	ret = dpsock_run(&app, &cfg);

	memset(&total, 0, sizeof(total));
	for (i = 0; i < APP_MAX_WORKERS; i++) {
		struct http_worker *w = workers[i];

		if (w == NULL)
			continue;
#define X(name) total.name += w->st.name;
		HTTP_COUNTERS(X)
#undef X
		free(w);
		workers[i] = NULL;
	}
	stats_print("total", &total);
	free_responses();
	return ret;
}
