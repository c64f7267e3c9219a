/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-echo — TCP and UDP echo server on the dpsock native API, usable as
 * a sockperf server (ping-pong, throughput, under-load; UDP and TCP).
 *
 *   dpsock-echo [EAL options] -- -f dpsock.conf [-p PORT] [--tcp-only|--udp-only] [--raw]
 *               [--join GROUP[,SOURCE]]...
 *
 * sockperf framing: every message starts with a 14-byte header
 *
 *   offset 0  uint64  sequence number
 *   offset 8  uint16  flags: 0x1 sent by the client, 0x2 reply wanted
 *                     (pong request), 0x4 warm-up message
 *   offset 10 uint32  message length, header included
 *
 * in network byte order (sockperf before 3.x wrote host order: a length that
 * is plausible only in host order is taken as such). A message with the
 * pong-request flag is sent back whole with the client flag cleared; other
 * messages are only counted. A UDP datagram is one message; a TCP stream
 * carries messages back to back, reassembled here across segments.
 * With --raw every byte is echoed as it is.
 *
 * Each worker listens on the port (TCP) and binds it (UDP); RSS spreads the
 * peers over the workers. All state is per worker; nothing is shared.
 *
 * Multicast (--join): every worker's UDP socket joins each group, IPv4 or
 * IPv6 (source-specific with a source), on the first interface, with
 * IP_MULTICAST_LOOP / IPV6_MULTICAST_LOOP off; a sockperf request that came to a group is answered to the group,
 * at the sender's port, as sockperf's own server does (the client joined
 * it too).
 *
 * Buffering (TCP): a reply dpsock_send does not take whole goes to the
 * connection's send backlog, flushed by the writable callback. While the
 * backlog is above ECHO_OUT_HIGH, received data is held (dpsock_rx_hold), not
 * processed: the receive window closes and the peer slows down. A backlog
 * above ECHO_OUT_LIMIT (only reachable with huge single segments) or too
 * many held buffers abort the connection (counted in backlog_aborts).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "dpsock/dpsock.h"

#include "app_common.h"

#define ECHO_DEFAULT_PORT 11111	/* sockperf's default */
#define ECHO_LISTEN_BACKLOG 128
#define ECHO_OUT_HIGH (256u * 1024)	   /* hold received data above this backlog */
#define ECHO_OUT_LIMIT (4u * 1024 * 1024) /* abort the connection above this */
#define ECHO_BUF_SIZE 65536		   /* per-worker datagram / bounce buffer */

#define SP_HDR_LEN 14
#define SP_MAX_LEN 65536
#define SP_FLAG_CLIENT 0x1
#define SP_FLAG_PONG_REQUEST 0x2
#define SP_FLAG_WARMUP 0x4

#define ECHO_MAX_JOINS 8

struct echo_cfg {
	uint16_t port;
	bool tcp;
	bool udp;
	bool raw;
	unsigned int n_joins;
	bool joins6;                 /* an IPv6 group among them */
	/* either family: IPv4 as mapped addresses (dpsock_udp_mcast6 takes
	 * those as IPv4 memberships); source :: for any source */
	struct { struct in6_addr group, source; } joins[ECHO_MAX_JOINS];
};

/* Per-worker counters: one table for the struct and the printer. */
#define ECHO_COUNTERS(X)                                                             \
	X(tcp_conns)	  /* connections accepted */                                   \
	X(tcp_closed)	  /* connections ended (any way) */                            \
	X(resets)	  /* ended by a reset or timeout from the peer/stack */        \
	X(msgs)		  /* sockperf messages received (TCP and UDP) */               \
	X(replies)	  /* sockperf replies sent (TCP and UDP) */                    \
	X(bytes_in)	  /* payload bytes received (TCP and UDP) */                   \
	X(bytes_out)	  /* payload bytes sent or backlogged (TCP and UDP) */         \
	X(udp_dgrams)	  /* datagrams received */                                     \
	X(udp_drops)	  /* replies dpsock_udp_sendto refused */                      \
	X(proto_errors)	  /* bad sockperf headers (TCP: connection aborted) */         \
	X(backlog_aborts) /* connections aborted: backlog or held data over limit */   \
	X(send_errors)	  /* connections aborted: dpsock_send failed */

struct echo_stats {
#define X(name) uint64_t name;
	ECHO_COUNTERS(X)
#undef X
};

struct echo_conn;

struct echo_worker {
	unsigned int idx;
	const struct echo_cfg *cfg;
	struct dpsock_sock *listener;
	struct dpsock_sock *udp;
	LIST_HEAD(, echo_conn) conns;
	uint8_t *buf; /* ECHO_BUF_SIZE: UDP replies, bounce for odd segments */
	struct echo_stats st;
} __attribute__((aligned(64)));

struct echo_conn {
	LIST_ENTRY(echo_conn) link;
	struct echo_worker *w;
	struct dpsock_sock *s;
	struct app_outq out;  /* send backlog */
	struct app_rxq held;  /* received, not processed yet */
	bool eof;	      /* the peer closed: close once everything is out */
	/* sockperf reassembly */
	uint32_t hdr_have;    /* header bytes gathered */
	uint32_t msg_len;     /* length of the current message, 0 = in header */
	uint32_t msg_have;    /* bytes of it seen */
	bool reply;	      /* the current message is copied for the reply */
	uint8_t hdr[SP_HDR_LEN];
	uint8_t *msg;	      /* reply being assembled, msg_cap bytes */
	uint32_t msg_cap;
};

/* Slot k is written by worker k only (worker_init); main reads them after
 * dpsock_run returned. */
static struct echo_worker *workers[APP_MAX_WORKERS];

/*
 * sockperf header
 */

/* Message length from a header, 0 if implausible; *net: network order. */
static uint32_t
sp_msg_len(const uint8_t *h, bool *net)
{
	uint32_t raw, len;

	memcpy(&raw, h + 10, sizeof(raw));
	len = ntohl(raw);
	if (len >= SP_HDR_LEN && len <= SP_MAX_LEN) {
		*net = true;
		return len;
	}
	if (raw >= SP_HDR_LEN && raw <= SP_MAX_LEN) {
		*net = false;
		return raw;
	}
	return 0;
}

static uint16_t
sp_flags(const uint8_t *h, bool net)
{
	uint16_t f;

	memcpy(&f, h + 8, sizeof(f));
	return net ? ntohs(f) : f;
}

static void
sp_set_flags(uint8_t *h, bool net, uint16_t f)
{
	uint16_t v = net ? htons(f) : f;

	memcpy(h + 8, &v, sizeof(v));
}

/*
 * TCP connections
 */

static void
conn_free(struct echo_conn *c)
{
	LIST_REMOVE(c, link);
	c->w->st.tcp_closed++;
	app_outq_free(&c->out);
	app_rxq_free(&c->held);
	free(c->msg);
	free(c);
}

/* Reset the connection after err (counted by kind) and free it. */
static void
conn_abort(struct echo_conn *c, int err)
{
	if (err == -ENOBUFS)
		c->w->st.backlog_aborts++;
	else if (err != -EPROTO) /* counted where found */
		c->w->st.send_errors++;
	dpsock_abort(c->s);
	conn_free(c);
}

/* sockperf: process rx from byte off; returns the offset reached (short of
 * the end only when the backlog is full) or -errno. */
static ssize_t
consume_sockperf(struct echo_conn *c, const struct dpsock_rx *rx, size_t off)
{
	struct echo_worker *w = c->w;
	size_t len = dpsock_rx_len(rx);

	while (off < len) {
		if (c->out.len >= ECHO_OUT_HIGH)
			return (ssize_t)off;
		if (c->msg_len == 0) {
			size_t k = dpsock_rx_copy(rx, c->hdr + c->hdr_have,
						  SP_HDR_LEN - c->hdr_have, off);
			uint32_t mlen;
			uint16_t flags;
			bool net;

			if (k == 0)
				return -EIO; /* shorter than it said */
			c->hdr_have += (uint32_t)k;
			off += k;
			if (c->hdr_have < SP_HDR_LEN)
				continue;
			mlen = sp_msg_len(c->hdr, &net);
			if (mlen == 0) {
				w->st.proto_errors++;
				return -EPROTO;
			}
			flags = sp_flags(c->hdr, net);
			w->st.msgs++;
			c->msg_len = mlen;
			c->msg_have = SP_HDR_LEN;
			c->reply = (flags & SP_FLAG_PONG_REQUEST) != 0;
			if (c->reply) {
				if (c->msg_cap < mlen) {
					uint8_t *m = realloc(c->msg, mlen);

					if (m == NULL)
						return -ENOBUFS;
					c->msg = m;
					c->msg_cap = mlen;
				}
				memcpy(c->msg, c->hdr, SP_HDR_LEN);
				sp_set_flags(c->msg, net, flags & ~SP_FLAG_CLIENT);
			}
		} else {
			size_t k = len - off;

			if (k > c->msg_len - c->msg_have)
				k = c->msg_len - c->msg_have;
			if (c->reply && dpsock_rx_copy(rx, c->msg + c->msg_have, k, off) != k)
				return -EIO;
			off += k;
			c->msg_have += (uint32_t)k;
		}
		if (c->msg_have == c->msg_len) {
			if (c->reply) {
				int r = app_send(c->s, &c->out, c->msg, c->msg_len, ECHO_OUT_LIMIT);

				if (r < 0)
					return r;
				w->st.replies++;
				w->st.bytes_out += c->msg_len;
			}
			c->msg_len = 0;
			c->hdr_have = 0;
		}
	}
	return (ssize_t)off;
}

/* --raw: echo rx from byte off; same contract as consume_sockperf. */
static ssize_t
consume_raw(struct echo_conn *c, const struct dpsock_rx *rx, size_t off)
{
	struct echo_worker *w = c->w;
	size_t len = dpsock_rx_len(rx);

	while (off < len) {
		const uint8_t *p;
		size_t k;
		int r;

		if (c->out.len >= ECHO_OUT_HIGH)
			return (ssize_t)off;
		k = app_rx_piece(rx, off, &p, w->buf, ECHO_BUF_SIZE);
		if (k == 0)
			return -EIO;
		r = app_send(c->s, &c->out, p, k, ECHO_OUT_LIMIT);
		if (r < 0)
			return r;
		off += k;
		w->st.bytes_out += k;
	}
	return (ssize_t)off;
}

static ssize_t
consume(struct echo_conn *c, const struct dpsock_rx *rx, size_t off)
{
	return c->w->cfg->raw ? consume_raw(c, rx, off) : consume_sockperf(c, rx, off);
}

/* Flush the backlog, then process held data while the backlog has room.
 * Returns 0 or -errno (abort). Held data remains only with a backlog above
 * ECHO_OUT_HIGH, i.e. after a short send: a writable callback will follow. */
static int
conn_pump(struct echo_conn *c)
{
	struct app_held *h;
	int r = app_outq_flush(&c->out, c->s);

	if (r < 0)
		return r;
	while ((h = app_rxq_front(&c->held)) != NULL && c->out.len < ECHO_OUT_HIGH) {
		ssize_t off = consume(c, h->rx, h->off);

		if (off < 0)
			return (int)off;
		if ((size_t)off < dpsock_rx_len(h->rx)) {
			h->off = (size_t)off;
			break;
		}
		app_rxq_pop(&c->held);
	}
	return 0;
}

/* After EOF: close once the backlog and the held data are gone. */
static void
conn_close_if_done(struct echo_conn *c)
{
	if (c->eof && c->out.len == 0 && c->held.n == 0) {
		dpsock_close(c->s);
		conn_free(c);
	}
}

static void
on_readable(struct dpsock_sock *s, struct dpsock_rx *rx)
{
	struct echo_conn *c = dpsock_sock_user(s);
	size_t len = dpsock_rx_len(rx);
	ssize_t off = 0;
	int r;

	c->w->st.bytes_in += len;
	if (c->held.n == 0) {
		off = consume(c, rx, 0);
		if (off < 0) {
			conn_abort(c, (int)off);
			return;
		}
		if ((size_t)off == len)
			return; /* all processed: the stack releases rx */
	}
	/* backlog full, or older data waits: keep this for later, in order */
	r = app_rxq_hold(&c->held, rx, (size_t)off);
	if (r < 0)
		conn_abort(c, r);
}

static void
on_writable(struct dpsock_sock *s, size_t space)
{
	struct echo_conn *c = dpsock_sock_user(s);
	int r = conn_pump(c);

	if (r < 0)
		conn_abort(c, r);
	else
		conn_close_if_done(c);
}

static void
on_closed(struct dpsock_sock *s, int reason)
{
	struct echo_conn *c = dpsock_sock_user(s);

	if (reason == 0) {
		/* EOF: answer what is left, then close */
		c->eof = true;
		conn_close_if_done(c);
		return;
	}
	/* the socket is gone: free our side only */
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
	struct echo_worker *w = dpsock_sock_user(listener);
	struct echo_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -ENOMEM;
	c->w = w;
	c->s = child;
	dpsock_sock_set_ops(child, &conn_ops);
	dpsock_sock_set_user(child, c);
	dpsock_set_nodelay(child, true);
	LIST_INSERT_HEAD(&w->conns, c, link);
	w->st.tcp_conns++;
	return 0;
}

static const struct dpsock_sock_ops listen_ops = {
	.accepted = on_accepted,
};

/*
 * UDP
 */

static void
on_datagram(struct dpsock_sock *s, const union dpsock_sockaddr *from, struct dpsock_rx *rx)
{
	struct echo_worker *w = dpsock_sock_user(s);
	size_t len = dpsock_rx_len(rx);
	const uint8_t *p;
	ssize_t r;

	w->st.udp_dgrams++;
	w->st.bytes_in += len;
	if (len > ECHO_BUF_SIZE) {
		w->st.udp_drops++;
		return;
	}
	if (w->cfg->raw) {
		/* send from the mbuf when the datagram is in one segment */
		if (app_rx_piece(rx, 0, &p, w->buf, ECHO_BUF_SIZE) < len) {
			dpsock_rx_copy(rx, w->buf, len, 0);
			p = w->buf;
		}
	} else {
		uint16_t flags;
		bool net;

		if (len < SP_HDR_LEN || dpsock_rx_copy(rx, w->buf, len, 0) != len ||
		    sp_msg_len(w->buf, &net) == 0) {
			w->st.proto_errors++;
			return;
		}
		w->st.msgs++;
		flags = sp_flags(w->buf, net);
		if ((flags & SP_FLAG_PONG_REQUEST) == 0 || (flags & SP_FLAG_CLIENT) == 0)
			return;
		sp_set_flags(w->buf, net, flags & ~SP_FLAG_CLIENT);
		p = w->buf;
	}
	if (w->cfg->n_joins > 0) {
		struct dpsock_rx_info info;

		dpsock_rx_info(rx, &info);
		if (from->sa.sa_family == AF_INET && IN_MULTICAST(ntohl(info.dst))) {
			/* to the group, at the sender's port (sockperf's server) */
			union dpsock_sockaddr to = *from;

			to.in.sin_addr.s_addr = info.dst;
			r = dpsock_udp_sendto(s, p, len, &to);
			goto sent;
		}
		if (from->sa.sa_family == AF_INET6 && info.dst == 0 && info.dst6[0] == 0xff) {
			union dpsock_sockaddr to = *from;

			memcpy(&to.in6.sin6_addr, info.dst6, 16);
			r = dpsock_udp_sendto(s, p, len, &to);
			goto sent;
		}
	}
	r = dpsock_udp_sendto(s, p, len, from);
sent:
	if (r < 0) {
		w->st.udp_drops++;
		return;
	}
	if (!w->cfg->raw)
		w->st.replies++;
	w->st.bytes_out += len;
}

static const struct dpsock_sock_ops udp_ops = {
	.datagram = on_datagram,
};

/*
 * Worker hooks
 */

static void
stats_print(const char *scope, const struct echo_stats *st)
{
	char line[1024];
	size_t off = 0;

	off += snprintf(line + off, sizeof(line) - off, "echo: %s", scope);
#define X(name)                                                                       \
	if (off < sizeof(line))                                                       \
		off += snprintf(line + off, sizeof(line) - off, " " #name "=%" PRIu64, \
				st->name);
	ECHO_COUNTERS(X)
#undef X
	/* one write per line: workers print concurrently */
	printf("%s\n", line);
	fflush(stdout);
}

static int
echo_worker_init(struct dpsock_worker *dw, void *arg)
{
	const struct echo_cfg *cfg = arg;
	unsigned int idx = dpsock_worker_index(dw);
	struct echo_worker *w;

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
	w->buf = malloc(ECHO_BUF_SIZE);
	if (w->buf == NULL)
		return -ENOMEM;
	if (cfg->tcp) {
		w->listener = dpsock_tcp_listen(dw, cfg->port, ECHO_LISTEN_BACKLOG, &listen_ops, w);
		if (w->listener == NULL) {
			int err = errno;

			fprintf(stderr, "dpsock-echo: worker %u: TCP listen on port %u: %s\n", idx,
				cfg->port, strerror(err));
			return -err;
		}
	}
	if (cfg->udp) {
		w->udp = dpsock_udp_bind(dw, cfg->port, &udp_ops, w);
		if (w->udp == NULL) {
			int err = errno;

			fprintf(stderr, "dpsock-echo: worker %u: UDP bind on port %u: %s\n", idx,
				cfg->port, strerror(err));
			return -err;
		}
		for (unsigned int j = 0; j < cfg->n_joins; j++) {
			bool ssm = !IN6_IS_ADDR_UNSPECIFIED(&cfg->joins[j].source) &&
				   !(IN6_IS_ADDR_V4MAPPED(&cfg->joins[j].source) &&
				     cfg->joins[j].source.s6_addr32[3] == 0);
			int r = dpsock_udp_mcast6(w->udp, ssm ? DPSOCK_MCAST_JOIN_SOURCE :
						  DPSOCK_MCAST_JOIN, &cfg->joins[j].group, 0,
						  ssm ? &cfg->joins[j].source : NULL);

			if (r != 0) {
				char g[INET6_ADDRSTRLEN];

				fprintf(stderr, "dpsock-echo: worker %u: join %s: %s\n", idx,
					inet_ntop(AF_INET6, &cfg->joins[j].group, g, sizeof(g)),
					strerror(-r));
				return r;
			}
		}
		/* its replies are not for itself */
		if (cfg->n_joins > 0)
			dpsock_udp_set_mcast_loop(w->udp, false);
		if (cfg->joins6)
			dpsock_udp_set_mcast6_loop(w->udp, false);
	}
	return 0;
}

static void
echo_worker_fini(struct dpsock_worker *dw, void *arg)
{
	unsigned int idx = dpsock_worker_index(dw);
	struct echo_worker *w = idx < APP_MAX_WORKERS ? workers[idx] : NULL;
	char scope[32];

	if (w == NULL)
		return;
	while (!LIST_EMPTY(&w->conns)) {
		struct echo_conn *c = LIST_FIRST(&w->conns);

		dpsock_abort(c->s);
		conn_free(c);
	}
	if (w->listener != NULL)
		dpsock_close(w->listener);
	if (w->udp != NULL)
		dpsock_close(w->udp);
	w->listener = w->udp = NULL;
	free(w->buf);
	w->buf = NULL;
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
		"TCP and UDP echo server on dpsock, usable as a sockperf server\n"
		"(sockperf ping-pong / throughput / under-load, TCP or UDP). Messages with\n"
		"sockperf's pong-request flag are answered; with --raw every byte is echoed.\n"
		"Counters are printed per worker at exit (SIGINT/SIGTERM).\n"
		"\n"
		"Options:\n"
		"  -p, --port PORT   TCP and UDP port (default %u, sockperf's)\n"
		"      --tcp-only    TCP only\n"
		"      --udp-only    UDP only\n"
		"      --raw         echo every byte back (no sockperf framing)\n"
		"      --join GROUP[,SOURCE]  join a multicast group, IPv4 or IPv6 (source-\n"
		"                    specific with a source) on every worker; requests to a\n"
		"                    group are answered to the group (repeatable, up to %u)\n"
		"  -h, --help        this text\n"
		"\n",
		prog, ECHO_DEFAULT_PORT, ECHO_MAX_JOINS);
	dpsock_usage(f);
}

enum {
	OPT_TCP_ONLY = 256,
	OPT_UDP_ONLY,
	OPT_RAW,
	OPT_JOIN,
};

static const struct option long_opts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "tcp-only", no_argument, NULL, OPT_TCP_ONLY },
	{ "udp-only", no_argument, NULL, OPT_UDP_ONLY },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "join", required_argument, NULL, OPT_JOIN },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* --join's GROUP[,SOURCE] (src NULL: any source): a multicast group and
 * a source of its family, IPv4 as mapped addresses. */
static bool
join_parse(const char *grp, const char *src, struct in6_addr *g, struct in6_addr *sa)
{
	struct in_addr g4, s4 = { 0 };

	memset(sa, 0, sizeof(*sa));
	if (inet_pton(AF_INET, grp, &g4) == 1) {
		if (!IN_MULTICAST(ntohl(g4.s_addr)) || (src != NULL && inet_pton(AF_INET, src, &s4) != 1))
			return false;
		memset(g, 0, sizeof(*g));
		g->s6_addr16[5] = sa->s6_addr16[5] = 0xffff;
		g->s6_addr32[3] = g4.s_addr;
		sa->s6_addr32[3] = s4.s_addr;
		return true;
	}
	return inet_pton(AF_INET6, grp, g) == 1 && IN6_IS_ADDR_MULTICAST(g) &&
	       (src == NULL || inet_pton(AF_INET6, src, sa) == 1);
}

int
main(int argc, char **argv)
{
	static struct echo_cfg cfg = {
		.port = ECHO_DEFAULT_PORT,
		.tcp = true,
		.udp = true,
	};
	const struct dpsock_app app = {
		.name = "dpsock-echo",
		.worker_init = echo_worker_init,
		.worker_fini = echo_worker_fini,
	};
	const char *prog = app_prog_name(argv[0]);
	bool tcp_only = false, udp_only = false;
	struct echo_stats total;
	unsigned int i;
	int argc2, opt, ret;
	char **argv2;

	ret = app_init(argc, argv, prog, usage, &argc2, &argv2);
	if (ret >= 0)
		return ret;
	while ((opt = getopt_long(argc2, argv2, "p:h", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			cfg.port = (uint16_t)app_parse_u64(prog, "--port", optarg, 1, 65535, false);
			break;
		case OPT_TCP_ONLY:
			tcp_only = true;
			break;
		case OPT_UDP_ONLY:
			udp_only = true;
			break;
		case OPT_RAW:
			cfg.raw = true;
			break;
		case OPT_JOIN: {
			char *src = strchr(optarg, ',');

			if (src != NULL)
				*src++ = '\0';
			if (cfg.n_joins == ECHO_MAX_JOINS)
				app_bad_usage(prog, "--join: at most %u groups", ECHO_MAX_JOINS);
			if (!join_parse(optarg, src, &cfg.joins[cfg.n_joins].group,
					&cfg.joins[cfg.n_joins].source))
				app_bad_usage(prog, "--join: '%s' is not GROUP[,SOURCE] (both IPv4, or "
					      "both IPv6)", optarg);
			cfg.joins6 |= !IN6_IS_ADDR_V4MAPPED(&cfg.joins[cfg.n_joins].group);
			cfg.n_joins++;
			break;
		}
		default:
			app_usage_exit(prog);
		}
	}
	if (optind < argc2)
		app_bad_usage(prog, "unexpected argument '%s'", argv2[optind]);
	if (tcp_only && udp_only)
		app_bad_usage(prog, "--tcp-only and --udp-only exclude each other");
	cfg.tcp = !udp_only;
	cfg.udp = !tcp_only;

	ret = dpsock_run(&app, &cfg);

	memset(&total, 0, sizeof(total));
	for (i = 0; i < APP_MAX_WORKERS; i++) {
		struct echo_worker *w = workers[i];

		if (w == NULL)
			continue;
#define X(name) total.name += w->st.name;
		ECHO_COUNTERS(X)
#undef X
		free(w->buf); /* when worker_fini did not run */
		free(w);
		workers[i] = NULL;
	}
	stats_print("total", &total);
	return ret;
}
