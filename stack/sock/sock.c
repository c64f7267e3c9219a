/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sock/ — the sockets of include/dpsock/dpsock.h over lwIP's pcbs (here)
 * and their entries in the stats segment's socket table (sockstat.c).
 *
 * sock.c — the native socket layer (include/dpsock/dpsock.h) over lwIP's raw API, on
 * one worker. A struct dpsock_sock wraps a tcp_pcb or udp_pcb, translates
 * lwIP's callbacks into the app's ops, and err_t into -errno, once.
 *
 * Lifetimes. A socket lives from its creation until the app closes it or the
 * stack reports its end (closed with a non-zero reason). After dpsock_close
 * the pcb finishes the TCP close on its own; the socket stays behind,
 * detached from the app, only while mbufs given to dpsock_send_mbuf wait for
 * their acknowledgement. lwIP's pcb may outlive the socket in TIME_WAIT; its
 * ext-arg destroy callback releases an active open's port when lwIP finally
 * frees it, so no worker reuses a port whose old connection still lingers.
 *
 * Admission. A listener's ext-arg passive_open callback sees every SYN
 * before lwIP answers it: beyond tcp.max_connections, near memory.lwip_mb,
 * or with the mbuf pool nearly empty, the SYN gets a RST and is counted,
 * and the connections already open keep their memory.
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "core/lwip_compat_priv.h"

#include "lwip/ip4_addr.h"
#include "lwip/mem.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"

#include "dpsock/dpsock.h"
#include "dpsock_lwip.h"
#include "dpsock_lwip_pcb_index.h"
#include "dpsock_tcp_mig.h"

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "sock_priv.h"
#include "sharing/filter_priv.h"
#include "core/log_priv.h"
#include "mcast/mcast_priv.h"
#include "netview/netview_priv.h"
#include "takeover/takeover.h"

enum sock_type {
	SOCK_TCP_LISTEN = 1,
	SOCK_TCP,
	SOCK_UDP,
};

/* mbufs handed to dpsock_send_mbuf, freed as the peer acknowledges them. */
struct txm {
	struct txm *next;
	struct rte_mbuf *m;
	uint32_t left; /* bytes of m not yet acknowledged */
};

struct dpsock_sock {
	TAILQ_ENTRY(dpsock_sock) link;
	TAILQ_ENTRY(dpsock_sock) st_link; /* on w->listed while it has a stats entry */
	struct dpsock_worker *w;
	const struct dpsock_sock_ops *ops;
	void *user;
	union {
		struct tcp_pcb *tcp;
		struct udp_pcb *udp;
	} pcb;
	uint8_t type;
	bool connecting;   /* active open in progress */
	bool closed_by_app; /* dpsock_close called: detached from the app */
	bool shut_wr;
	bool want_writable;
	bool counted;      /* counted in w->n_conns / tcp_conns */
	bool aborted;      /* dpsock_abort ran inside a callback: answer ERR_ABRT */
	bool dead;         /* released; freed once in_cb and holds drop to 0 */
	uint16_t in_cb;    /* app callbacks running on this socket */
	uint32_t holds;    /* received data the app holds (dpsock_rx_hold) */
	uint32_t rx_unacked; /* bytes handed to the app whose window is not open yet:
			      * the readable callback's and held data */
	uint16_t owned_port; /* active open, or UDP bind OWNED: port from the shared allocator */
	/* a listener's or bound UDP socket's entry in the shared ports' filter
	 * (filter.c), released with the socket; proto 0: none */
	uint8_t served_proto;
	uint16_t served_port;
	struct txm *txm_head, *txm_tail;
	struct dpsock_sock_stats *st; /* entry in the stats socket table, or NULL */
	struct dpsock_udp_state udp; /* UDP: memberships, multicast options (mcast.c) */
	uint32_t st_retrans; /* the pcb's retransmission total when last sampled */
	uint8_t cc;        /* listener: congestion control of accepted connections (1 + index; 0: default) */
	/* cold, at the end (the fields above keep their cache lines): the
	 * filter entries' addresses, an address or a family's any; a
	 * dual-stack socket has both anys */
	uint8_t n_served;
	bool served_by_app; /* the app holds the port in the kernel itself (DPSOCK_*_HELD):
			     * the filter made no holder */
	struct dpsock_mc_addr served[2];
};

/* Received data handed to the app: valid during the callback, or until
 * released when held. */
struct dpsock_rx {
	struct pbuf *p;
	struct dpsock_sock *s; /* NULL once the socket is gone */
	uint32_t len;
	bool held;
	bool heap; /* allocated by dpsock_rx_hold */
	struct dpsock_rx_meta meta; /* UDP: destination, interface, receive time */
};

/* ---- helpers ------------------------------------------------------------- */

static inline bool
on_owner(const struct dpsock_sock *s)
{
	return s != NULL && s->w == dpsock_self;
}

static int
err_to_errno(err_t e)
{
	switch (e) {
	case ERR_OK: return 0;
	case ERR_MEM: return -ENOMEM;
	case ERR_BUF: return -ENOBUFS;
	case ERR_TIMEOUT: return -ETIMEDOUT;
	case ERR_RTE: return -EHOSTUNREACH;
	case ERR_INPROGRESS: return -EINPROGRESS;
	case ERR_VAL: return -EINVAL;
	case ERR_WOULDBLOCK: return -EAGAIN;
	case ERR_USE: return -EADDRINUSE;
	case ERR_ALREADY: return -EALREADY;
	case ERR_ISCONN: return -EISCONN;
	case ERR_CONN: return -ENOTCONN;
	case ERR_IF: return -ENETDOWN;
	case ERR_ABRT: return -ECONNABORTED;
	case ERR_RST: return -ECONNRESET;
	case ERR_CLSD: return -ENOTCONN;
	case ERR_ARG: return -EINVAL;
	default: return -EIO;
	}
}

static struct dpsock_sock *
sock_new(struct dpsock_worker *w, uint8_t type, const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_sock *s = mem_calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->w = w;
	s->type = type;
	s->ops = ops;
	s->user = user;
	TAILQ_INSERT_TAIL(&w->socks, s, link);
	return s;
}

/* ---- stats socket table (sockstat.c) ---- */

static void
sock_stats_refresh(struct dpsock_sock *s)
{
	if (s->st == NULL)
		return;
	if (s->type == SOCK_UDP)
		dpsock_sockstat_udp(s->st, s->pcb.udp);
	else
		dpsock_sockstat_tcp(s->st, s->pcb.tcp, &s->st_retrans);
}

static void
sock_stats_open(struct dpsock_sock *s)
{
	s->st = dpsock_sockstat_open(s->w, s->type == SOCK_UDP ? IPPROTO_UDP : IPPROTO_TCP);
	if (s->st != NULL)
		TAILQ_INSERT_TAIL(&s->w->listed, s, st_link);
	sock_stats_refresh(s);
}

static void
sock_stats_close(struct dpsock_sock *s)
{
	struct dpsock_worker *w = s->w;

	if (s->st == NULL)
		return;
	sock_stats_refresh(s);
	if (w->listed_next == s)
		w->listed_next = TAILQ_NEXT(s, st_link);
	TAILQ_REMOVE(&w->listed, s, st_link);
	dpsock_sockstat_close(w, s->st);
	s->st = NULL;
}

/* lwIP's slow timer (every 50 ms): retransmissions show in the socket's
 * entry sooner than the 100 ms refresh. */
static err_t
on_tcp_poll(void *arg, struct tcp_pcb *pcb)
{
	struct dpsock_sock *s = arg;

	if (s != NULL && s->st != NULL && pcb->rec.total_retrans != s->st_retrans)
		dpsock_sockstat_tcp(s->st, pcb, &s->st_retrans);
	return ERR_OK;
}

void
dpsock_sock_stats_owner(struct dpsock_sock *s, int32_t pid, int32_t fd, int32_t client,
			uint32_t add_hits, uint32_t add_misses)
{
	struct dpsock_sock_stats *e = s->st;

	if (e == NULL)
		return;
	dpsock_sockstat_write_begin(e);
	e->owner_pid = pid;
	e->fd = fd;
	e->client = client;
	dpsock_stat_add(&e->poll_hits, add_hits);
	dpsock_stat_add(&e->poll_misses, add_misses);
	dpsock_sockstat_write_end(e);
}

/* The 100 ms tick: states and queues of the listed sockets that events do
 * not refresh (a connection waiting for its peer's ACK, say). At most
 * SOCKSTAT_REFRESH_MAX entries per tick, round-robin, so that a tick costs
 * the same with ten sockets listed as with thousands (each entry is
 * refreshed at its events too). */
#define SOCKSTAT_REFRESH_MAX 256u

void
dpsock_sock_stats_refresh(struct dpsock_worker *w)
{
	struct dpsock_sock *s = w->listed_next;
	unsigned int n;

	for (n = 0; n < SOCKSTAT_REFRESH_MAX; n++) {
		if (s == NULL && (n > 0 || (s = TAILQ_FIRST(&w->listed)) == NULL))
			break;
		sock_stats_refresh(s);
		s = TAILQ_NEXT(s, st_link);
	}
	w->listed_next = s;
}

static void
conn_count(struct dpsock_sock *s, bool on)
{
	struct dpsock_worker *w = s->w;

	if (s->counted == on)
		return;
	s->counted = on;
	if (on)
		w->n_conns++;
	else
		w->n_conns--;
	dpsock_stat_set(&w->stats->tcp_conns, w->n_conns);
}

static void
txm_free_all(struct dpsock_sock *s)
{
	while (s->txm_head != NULL) {
		struct txm *t = s->txm_head;

		s->txm_head = t->next;
		rte_pktmbuf_free(t->m);
		mem_free(t);
	}
	s->txm_tail = NULL;
}

/* Free a released socket once no callback runs on it and no held data
 * refers to it. */
static void
sock_reap(struct dpsock_sock *s)
{
	if (s->dead && s->in_cb == 0 && s->holds == 0)
		mem_free(s);
}

/* Release the socket: the pcb is gone or no longer points at it. The app
 * may be inside one of its callbacks, or hold its data: the memory goes
 * when both are over (sock_reap). Idempotent. */
static void
sock_free(struct dpsock_sock *s)
{
	if (s->dead)
		return;
	for (unsigned int i = 0; s->served_proto != 0 && i < s->n_served; i++)
		dpsock_filter_unserve(s->w->d, s->served_proto, s->served[i], s->served_port);
	s->served_proto = 0;
	txm_free_all(s);
	if (s->type == SOCK_TCP)
		conn_count(s, false);
	sock_stats_close(s);
	TAILQ_REMOVE(&s->w->socks, s, link);
	s->dead = true;
	sock_reap(s);
}

/* Bracket every call into the app: a socket closed from inside its own
 * callback is only freed after the callback returned. */
#define APP_CALL(s, call)                                                       \
	do {                                                                    \
		(s)->in_cb++;                                                   \
		call;                                                           \
		(s)->in_cb--;                                                   \
	} while (0)

/* Detach lwIP's callbacks from a pcb whose socket goes away. */
static void
tcp_detach(struct tcp_pcb *pcb)
{
	tcp_arg(pcb, NULL);
	if (dpsock_self != NULL)
		tcp_ext_arg_set(pcb, dpsock_self->sock_extarg_id, NULL);
	if (pcb->state == LISTEN) {
		/* a tcp_pcb_listen has no recv/sent/err/poll (lwIP asserts) */
		tcp_accept(pcb, NULL);
		return;
	}
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	tcp_poll(pcb, NULL, 0);
}

/* Open the receive window by n bytes (tcp_recved takes a u16). */
static void
window_open(struct tcp_pcb *pcb, uint32_t n)
{
	while (n > 0) {
		uint16_t k = n > 0xffff ? 0xffff : (uint16_t)n;

		tcp_recved(pcb, k);
		n -= k;
	}
}

/* A new UDP socket's defaults (include/dpsock/dpsock.h's options). */
static void
udp_state_init(struct dpsock_udp_state *u)
{
	memset(u, 0, sizeof(*u));
	u->mc_all = 1;
	u->mc_loop = 1;
	u->mc_all6 = 1;
	u->mc_loop6 = 1;
	u->hops6 = 1;
	u->mc_if6 = -1;
	u->owner_fd = -1;
}

/* A UDP socket's end: it leaves its groups, its pcb goes, and an owned
 * port (DPSOCK_UDP_OWNED) returns to the shared allocator. */
static void
udp_release(struct dpsock_sock *s)
{
	if (s->w->d->sock_mc != NULL)
		s->w->d->sock_mc->fini(s, &s->udp);
	if (s->pcb.udp != NULL)
		udp_remove(s->pcb.udp);
	s->pcb.udp = NULL;
	if (s->owned_port != 0) {
		/* acquire: pairs with the release when the backend falls back */
		__atomic_load_n(&s->w->d->steer, __ATOMIC_ACQUIRE)->release_port(s->w, s->owned_port);
		s->owned_port = 0;
	}
}

/* ---- pcb ext-arg callbacks ---------------------------------------------- */

/* lwIP frees the pcb (closed, aborted or out of TIME_WAIT): an active
 * open's port goes back to the shared allocator now, not earlier. */
static void
pcb_destroyed(u8_t id, void *data)
{
	struct dpsock_worker *w = dpsock_self;
	uint16_t port = (uint16_t)(uintptr_t)data;

	if (port != 0 && w != NULL)
		/* acquire: pairs with the release when the backend falls back */
		__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w, port);
}

/* Marks a half-open passive connection (SYN received, not yet accepted) in
 * its pcb's ext-arg slot. */
#define HALF_OPEN ((void *)1)

/* A half-open connection died before its handshake completed. */
static void
pcb_half_open_destroyed(u8_t id, void *data)
{
	struct dpsock_worker *w = dpsock_self;

	if (data == HALF_OPEN && w != NULL)
		w->n_half_open--;
}

static const struct tcp_ext_arg_callbacks half_open_extarg = {
	.destroy = pcb_half_open_destroyed,
};

/*
 * A SYN reached a listener: admit it or answer RST. lwIP's own listen
 * backlog is off (it drops extra SYNs silently and counts at most 255), so
 * this is the one limit: established plus half-open connections against
 * tcp.max_connections, lwIP's memory and the mbuf pool.
 */
static err_t
pcb_passive_open(u8_t id, struct tcp_pcb_listen *lpcb, struct tcp_pcb *cpcb)
{
	struct dpsock_worker *w = dpsock_self;
	const struct dpsock_config *c = &w->d->conf;
	struct dpsock_lwip_mem_stats mem;
	const struct rte_mempool *pool = w->d->ports[0].pool;
	const char *why = NULL;

	dpsock_lwip_mem_stats(&mem);
	if (w->n_conns + w->n_half_open >= c->max_connections)
		why = "connection limit";
	else if (mem.bytes_in_use > (uint64_t)c->lwip_mb * (1u << 20) / 10 * 9)
		why = "memory limit";
	else if (rte_mempool_avail_count(pool) < pool->size / 16)
		why = "mbuf pool nearly empty";
	if (why == NULL) {
		w->n_half_open++;
		tcp_ext_arg_set_callbacks(cpcb, id, &half_open_extarg);
		tcp_ext_arg_set(cpcb, id, HALF_OPEN);
		return ERR_OK;
	}
	/* RST|ACK acknowledging the SYN; lwIP then drops the new pcb. */
	tcp_rst(cpcb, 0, cpcb->rcv_nxt, &cpcb->local_ip, &cpcb->remote_ip, cpcb->local_port,
		cpcb->remote_port);
	dpsock_stat_add(&w->stats->tcp_refused, 1);
	DPSOCK_LOG_DP(DEBUG, tcp, "SYN refused: %s", why);
	return ERR_MEM;
}

/*
 * lwIP frees a pcb whose socket still points at it without calling back in
 * one case: at the end of TIME_WAIT (or when a TIME_WAIT pcb gives its port
 * to a new connection). A socket gets there when both ends closed while the
 * app still holds it: it shut down its sending side and then read the
 * peer's end of stream (or a preload connection does, orphaned at program
 * exit). The socket forgets the pcb; a later close only frees the socket.
 */
static void
pcb_sock_destroyed(u8_t id, void *data)
{
	struct dpsock_sock *s = data;

	if (s != NULL)
		s->pcb.tcp = NULL;
}

static const struct tcp_ext_arg_callbacks sock_extarg = {
	.destroy = pcb_sock_destroyed,
};

static const struct tcp_ext_arg_callbacks listen_extarg = {
	.passive_open = pcb_passive_open,
};
static const struct tcp_ext_arg_callbacks active_extarg = {
	.destroy = pcb_destroyed,
};

/* ---- connections within the instance ------------------------------------- */

static void
sock_stats_flag(struct dpsock_sock *s, uint16_t flag, bool on)
{
	if (s->st == NULL)
		return;
	dpsock_sockstat_write_begin(s->st);
	s->st->flags = on ? (uint16_t)(s->st->flags | flag) : (uint16_t)(s->st->flags & ~flag);
	dpsock_sockstat_write_end(s->st);
}

/* A connection to one of the instance's own addresses: both its ends are
 * pcbs of this lwIP instance, its segments go through the loop netif. */
static void
sock_mark_loop(struct dpsock_sock *s)
{
	const ip_addr_t *ra = s->pcb.tcp != NULL ? &s->pcb.tcp->remote_ip : NULL;

	/* (IPv6: no connection within the host is offloaded yet) */
	if (ra != NULL && IP_IS_V4(ra) && (ip4_addr_isloopback(ip_2_ip4(ra)) ||
	    dpsock_netview_local(s->w->nv, ip4_addr_get_u32(ip_2_ip4(ra)), NULL)))
		sock_stats_flag(s, DPSOCK_SOCK_F_LOOP, true);
}

const struct dpsock_sock_ops *
dpsock_tcp_loop_peer(const struct dpsock_sock *s, struct dpsock_sock **peer)
{
	const struct tcp_pcb *me = s->type == SOCK_TCP ? s->pcb.tcp : NULL;
	struct tcp_pcb *other;
	struct dpsock_sock *ps;

	*peer = NULL;
	if (me == NULL || me->state != ESTABLISHED)
		return NULL;
	other = dpsock_tcp_lookup(&me->remote_ip, me->remote_port, &me->local_ip, me->local_port);
	if (other == NULL || other == me)
		return NULL; /* not here, or a connection to itself */
	if (other->state == SYN_RCVD) {
		/* half open: lwIP gave it its listener's callback argument */
		const struct dpsock_sock *ls = other->listener != NULL ?
					       other->listener->callback_arg : NULL;

		return ls != NULL && ls->type == SOCK_TCP_LISTEN && !ls->closed_by_app ?
		       ls->ops : NULL;
	}
	ps = other->callback_arg;
	if (other->state != ESTABLISHED || ps == NULL || ps->type != SOCK_TCP ||
	    ps->pcb.tcp != other || ps->closed_by_app || ps->dead)
		return NULL;
	*peer = ps;
	return ps->ops;
}

bool
dpsock_tcp_listening(uint32_t addr, uint16_t port)
{
	const struct tcp_pcb_listen *l;

	for (l = tcp_listen_pcbs.listen_pcbs; l != NULL; l = l->next)
		if (l->local_port == port && (ip_addr_isany_val(l->local_ip) ||
					      (IP_IS_V4_VAL(l->local_ip) &&
					       ip4_addr_get_u32(ip_2_ip4(&l->local_ip)) == addr)))
			return true;
	return false;
}

void
dpsock_sock_set_cut(struct dpsock_sock *s, bool on)
{
	sock_stats_flag(s, DPSOCK_SOCK_F_CUT, on);
}

void
dpsock_sock_cut_moved(struct dpsock_sock *from, struct dpsock_sock *to, size_t n)
{
	dpsock_stat_add(&from->w->stats->cut_bytes, n);
	DPSOCK_SOCKSTAT_ADD(from->st, tx_bytes, n);
	DPSOCK_SOCKSTAT_ADD(to->st, rx_bytes, n);
}

/* ---- TCP callbacks -------------------------------------------------------- */

static void
deliver_closed(struct dpsock_sock *s, int reason)
{
	if (!s->closed_by_app && !s->dead && s->ops != NULL && s->ops->closed != NULL)
		APP_CALL(s, s->ops->closed(s, reason));
}

/* lwIP ends the connection (reset, time-out, abort): the pcb is freed, or
 * is about to be (a reset: tcp_input frees it after this returns). */
static void
on_tcp_err(void *arg, err_t err)
{
	struct dpsock_sock *s = arg;
	int reason = err_to_errno(err);

	if (s == NULL)
		return;
	/* A reset (tcp_input) reports before it frees the pcb: its destroy
	 * callback must not find the socket freed below. Elsewhere lwIP frees
	 * first, and pcb_sock_destroyed has already cleared pcb.tcp. */
	if (s->pcb.tcp != NULL)
		tcp_ext_arg_set(s->pcb.tcp, s->w->sock_extarg_id, NULL);
	s->pcb.tcp = NULL;
	DPSOCK_SOCKSTAT_ADD(s->st, errors, 1);
	if (reason == -ECONNABORTED && !s->closed_by_app)
		reason = -ECONNRESET;
	if (s->connecting) {
		s->connecting = false;
		dpsock_stat_add(&s->w->stats->tcp_connect_failed, 1);
		if (!s->closed_by_app && s->ops != NULL && s->ops->connected != NULL)
			APP_CALL(s, s->ops->connected(s, reason == -ECONNRESET ? -ECONNREFUSED : reason));
	} else {
		dpsock_stat_add(&s->w->stats->tcp_reset, 1);
	}
	deliver_closed(s, reason);
	sock_free(s);
}

static err_t
on_tcp_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct dpsock_sock *s = arg;
	struct dpsock_rx rx;
	bool aborted;

	if (s == NULL || s->closed_by_app) {
		/* The app closed the socket: nothing will read this. */
		if (p != NULL) {
			if (s != NULL)
				DPSOCK_SOCKSTAT_ADD(s->st, rx_drops, p->tot_len);
			window_open(pcb, p->tot_len);
			pbuf_free(p);
		}
		return ERR_OK;
	}
	if (p == NULL) {
		/* FIN: end of stream; the app may still send, then close (or
		 * close or abort inside the callback). */
		deliver_closed(s, 0);
		aborted = s->aborted;
		sock_reap(s);
		return aborted ? ERR_ABRT : ERR_OK;
	}
	dpsock_stat_add(&s->w->stats->tcp_rx_bytes, p->tot_len);
	if (s->st != NULL) {
		dpsock_sockstat_write_begin(s->st);
		dpsock_stat_add(&s->st->rx_bytes, p->tot_len);
		dpsock_stat_add(&s->st->rx_packets, pbuf_clen(p));
		dpsock_sockstat_write_end(s->st);
	}
	rx = (struct dpsock_rx){ .p = p, .s = s, .len = p->tot_len };
	s->rx_unacked += rx.len;
	if (s->ops != NULL && s->ops->readable != NULL)
		APP_CALL(s, s->ops->readable(s, &rx));
	/* The app may have closed (pcb still valid: tcp_close keeps it in
	 * these states; the close opened the window already) or aborted (pcb
	 * gone) the socket in the callback. */
	aborted = s->aborted;
	if (!rx.held) {
		if (!aborted && !s->closed_by_app)
			window_open(pcb, rx.len);
		if (!s->closed_by_app)
			s->rx_unacked -= rx.len;
		pbuf_free(p);
	} /* else the held copy owns p; the window opens on release */
	sock_reap(s);
	return aborted ? ERR_ABRT : ERR_OK;
}

/* Acknowledged bytes: release acknowledged mbufs, report send space. */
static err_t
on_tcp_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct dpsock_sock *s = arg;
	uint32_t n = len;

	if (s == NULL)
		return ERR_OK;
	while (n > 0 && s->txm_head != NULL) {
		struct txm *t = s->txm_head;
		uint32_t k = n < t->left ? n : t->left;

		t->left -= k;
		n -= k;
		if (t->left == 0) {
			s->txm_head = t->next;
			if (s->txm_head == NULL)
				s->txm_tail = NULL;
			rte_pktmbuf_free(t->m);
			mem_free(t);
		}
	}
	if (s->closed_by_app) {
		if (s->txm_head == NULL) {
			tcp_detach(pcb);
			sock_free(s);
		}
		return ERR_OK;
	}
	dpsock_sockstat_tcp(s->st, pcb, &s->st_retrans);
	if (s->want_writable && s->ops != NULL && s->ops->writable != NULL) {
		s->want_writable = false;
		APP_CALL(s, s->ops->writable(s, tcp_sndbuf(pcb)));
		if (s->aborted) {
			sock_reap(s);
			return ERR_ABRT;
		}
		sock_reap(s);
	}
	return ERR_OK;
}

static void
tcp_setup_callbacks(struct dpsock_sock *s)
{
	struct tcp_pcb *pcb = s->pcb.tcp;

	tcp_arg(pcb, s);
	tcp_ext_arg_set_callbacks(pcb, s->w->sock_extarg_id, &sock_extarg);
	tcp_ext_arg_set(pcb, s->w->sock_extarg_id, s);
	tcp_recv(pcb, on_tcp_recv);
	tcp_sent(pcb, on_tcp_sent);
	tcp_err(pcb, on_tcp_err);
	tcp_poll(pcb, on_tcp_poll, 1);
}

static int sock_serve(struct dpsock_sock *s, uint8_t proto, const struct dpsock_mc_addr *sv,
		      unsigned int n, uint16_t port, bool hold);

static err_t
on_tcp_accept(void *arg, struct tcp_pcb *newpcb, err_t err)
{
	struct dpsock_sock *ls = arg, *s;
	struct dpsock_worker *w = dpsock_self;

	if (newpcb == NULL || err != ERR_OK) {
		/* lwIP could not allocate a pcb for a SYN */
		dpsock_stat_add(&w->stats->tcp_refused, 1);
		return ERR_MEM;
	}
	if (tcp_ext_arg_get(newpcb, w->extarg_id) == HALF_OPEN) {
		/* handshake done: counted in n_conns from here on */
		w->n_half_open--;
		tcp_ext_arg_set(newpcb, w->extarg_id, NULL); /* destroy: no longer counts it */
	}
	if (ls == NULL || (s = sock_new(w, SOCK_TCP, ls->ops, ls->user)) == NULL) {
		dpsock_stat_add(&w->stats->tcp_refused, 1);
		tcp_abort(newpcb);
		return ERR_ABRT;
	}
	s->pcb.tcp = newpcb;
	/* On a port shared with the kernel the connection's segments reach
	 * dpsock by its listener's entry in the filter: the connection holds
	 * it too, so that it outlives a listener closed first (socat, inetd
	 * style servers), whose end would hand the rest of the connection to
	 * the kernel, which resets it. The entry is there: this only counts. */
	if (ls->served_proto != 0)
		(void)sock_serve(s, ls->served_proto, ls->served, ls->n_served, ls->served_port,
				 false);
	if (ls->cc != 0)
		dpsock_tcp_cc_set(newpcb, dpsock_cc_table[ls->cc - 1]->name);
	tcp_setup_callbacks(s);
	conn_count(s, true);
	sock_stats_open(s);
	sock_mark_loop(s);
	DPSOCK_SOCKSTAT_ADD(ls->st, accepted, 1);
	dpsock_stat_add(&w->stats->tcp_accepted, 1);
	if (ls->ops != NULL && ls->ops->accepted != NULL) {
		bool aborted;
		int rc;

		/* the child too is in a callback: the app may close it there */
		s->in_cb++;
		APP_CALL(ls, rc = ls->ops->accepted(ls, s));
		if (rc != 0 && !s->dead) {
			/* refused by the app; the stats refresh in sock_free
			 * must not read the pcb tcp_abort frees */
			tcp_detach(newpcb);
			s->pcb.tcp = NULL;
			tcp_abort(newpcb);
			s->aborted = true;
			sock_free(s);
		}
		aborted = s->aborted;
		s->in_cb--;
		sock_reap(s);
		sock_reap(ls);
		if (aborted)
			return ERR_ABRT; /* refused, or aborted in the callback */
	}
	return ERR_OK;
}

static err_t
on_tcp_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct dpsock_sock *s = arg;

	if (s == NULL)
		return ERR_OK;
	s->connecting = false;
	dpsock_stat_add(&s->w->stats->tcp_connected, 1);
	dpsock_sockstat_tcp(s->st, pcb, &s->st_retrans);
	sock_mark_loop(s);
	if (!s->closed_by_app && s->ops != NULL && s->ops->connected != NULL)
		APP_CALL(s, s->ops->connected(s, 0));
	if (s->aborted) {
		sock_reap(s);
		return ERR_ABRT;
	}
	sock_reap(s);
	return ERR_OK;
}

/* ---- public TCP API --------------------------------------------------------- */

struct dpsock_sock *
dpsock_tcp_listen(struct dpsock_worker *w, uint16_t port, int backlog,
		  const struct dpsock_sock_ops *ops, void *user)
{
	return dpsock_tcp_listen_addr(w, 0, port, backlog, DPSOCK_LISTEN_IPV6, ops, user);
}

/* What a socket on proto/port takes on the ports shared with the kernel
 * (their filter, filter.c), before its first SYN or datagram: each of the
 * n addresses of sv (a local address, or a family's any); none for
 * 127.0.0.1, which the wire never brings. Recorded in s, which releases
 * them when freed; 0 or -errno with nothing taken. */
static int
sock_serve(struct dpsock_sock *s, uint8_t proto, const struct dpsock_mc_addr *sv,
	   unsigned int n, uint16_t port, bool hold)
{
	unsigned int i;
	int r = 0;

	for (i = 0; i < n && r == 0; i++)
		r = dpsock_filter_serve(s->w->d, proto, sv[i], port, hold);
	if (r != 0) {
		for (i--; i-- > 0;)
			dpsock_filter_unserve(s->w->d, proto, sv[i], port);
		return r;
	}
	s->served_proto = n != 0 ? proto : 0;
	s->n_served = (uint8_t)n;
	s->served_by_app = !hold;
	s->served_port = port;
	memcpy(s->served, sv, n * sizeof(*sv));
	return 0;
}

/* The served addresses of an IPv4 bind of addr (0: any; with ipv6, both
 * families' anys), or of an IPv6 one (a6 NULL: any). */
static unsigned int
served4(uint32_t addr, bool ipv6, struct dpsock_mc_addr sv[2])
{
	if (addr == RTE_BE32(0x7f000001))
		return 0;
	sv[0] = dpsock_mc_addr4(addr);
	sv[1] = dpsock_filter_any6();
	return addr == 0 && ipv6 ? 2 : 1;
}

static unsigned int
served6(const struct in6_addr *a6, struct dpsock_mc_addr sv[2])
{
	sv[0] = a6 != NULL && !IN6_IS_ADDR_UNSPECIFIED(a6) ? dpsock_mc_addr6(a6) :
							     dpsock_filter_any6();
	return 1;
}

/* A listener on ip:port, served on the addresses of sv (sock_serve). */
static struct dpsock_sock *
tcp_listen_ip(struct dpsock_worker *w, const ip_addr_t *ip, const struct dpsock_mc_addr *sv,
	      unsigned int n_sv, uint16_t port, unsigned int flags,
	      const struct dpsock_sock_ops *ops, void *user)
{
	struct tcp_pcb *pcb, *lpcb;
	struct dpsock_sock *s;
	err_t e;
	int r;

	pcb = tcp_new_ip_type(IP_GET_TYPE(ip));
	if (pcb == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ip_set_option(pcb, SOF_REUSEADDR);
	e = tcp_bind(pcb, ip, port);
	if (e != ERR_OK) {
		tcp_abort(pcb);
		errno = -err_to_errno(e);
		return NULL;
	}
	lpcb = tcp_listen_with_backlog_and_err(pcb, TCP_DEFAULT_LISTEN_BACKLOG, &e);
	if (lpcb == NULL) {
		tcp_abort(pcb);
		errno = -err_to_errno(e);
		return NULL;
	}
	s = sock_new(w, SOCK_TCP_LISTEN, ops, user);
	if (s == NULL) {
		tcp_close(lpcb);
		errno = ENOMEM;
		return NULL;
	}
	/* a port shared with the kernel: dpsock's before the first SYN */
	r = sock_serve(s, IPPROTO_TCP, sv, n_sv, port, !(flags & DPSOCK_LISTEN_HELD));
	if (r != 0) {
		sock_free(s);
		tcp_close(lpcb);
		errno = -r;
		return NULL;
	}
	s->pcb.tcp = lpcb;
	sock_stats_open(s);
	tcp_arg(lpcb, s);
	tcp_accept(lpcb, on_tcp_accept);
	tcp_ext_arg_set_callbacks(lpcb, w->extarg_id, &listen_extarg);
	return s;
}

static bool
listen_args_ok(struct dpsock_worker *w, unsigned int flags, unsigned int allowed)
{
	if (w == NULL || w != dpsock_self || (flags & ~allowed)) {
		errno = w == NULL || w == dpsock_self ? EINVAL : EPERM;
		return false;
	}
	return true;
}

struct dpsock_sock *
dpsock_tcp_listen_addr(struct dpsock_worker *w, uint32_t addr, uint16_t port, int backlog,
		       unsigned int flags, const struct dpsock_sock_ops *ops, void *user)
{
	ip_addr_t loop = IPADDR4_INIT(addr);
	bool lo = addr == RTE_BE32(0x7f000001); /* 127.0.0.1 */
	struct dpsock_mc_addr sv[2];

	if (!listen_args_ok(w, flags, DPSOCK_LISTEN_HELD | DPSOCK_LISTEN_IPV6))
		return NULL;
	if ((flags & DPSOCK_LISTEN_IPV6) && addr != 0) {
		errno = EINVAL;
		return NULL;
	}
	/* lwIP's pcb takes the port on every address (the served address
	 * is the filter's, on a shared port); 127.0.0.1 (connections within
	 * the host, docs/design.md decision 16) is matched exactly, so that
	 * nothing to another address reaches it; the wire never brings
	 * 127/8 (worker.c) */
	return tcp_listen_ip(w, lo ? &loop : (flags & DPSOCK_LISTEN_IPV6) ? IP_ANY_TYPE :
			     IP4_ADDR_ANY, sv, served4(addr, flags & DPSOCK_LISTEN_IPV6, sv), port,
			     flags, ops, user);
}

struct dpsock_sock *
dpsock_tcp_listen6(struct dpsock_worker *w, const struct in6_addr *addr, uint16_t port,
		   int backlog, unsigned int flags, const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_mc_addr sv[2];
	ip_addr_t ip;

	if (!listen_args_ok(w, flags, DPSOCK_LISTEN_HELD))
		return NULL;
	ip_addr_copy(ip, *IP6_ADDR_ANY);
	if (addr != NULL && !IN6_IS_ADDR_UNSPECIFIED(addr)) {
		if (IN6_IS_ADDR_V4MAPPED(addr) || IN6_IS_ADDR_MULTICAST(addr)) {
			errno = EINVAL; /* a mapped address: dpsock_tcp_listen_addr */
			return NULL;
		}
		memcpy(ip_2_ip6(&ip)->addr, addr, 16);
		ip6_addr_clear_zone(ip_2_ip6(&ip));
	}
	return tcp_listen_ip(w, &ip, sv, served6(addr, sv), port, flags, ops, user);
}

/* dst as an lwIP IPv6 address from the 16 bytes at addr, and the netif
 * that reaches it (NULL: none); a link-local dst gets that netif's zone. */
static struct netif *
ip6_dst(ip_addr_t *dst, const void *addr)
{
	struct netif *nif;

	IP_SET_TYPE_VAL(*dst, IPADDR_TYPE_V6);
	memcpy(ip_2_ip6(dst)->addr, addr, 16);
	ip6_addr_clear_zone(ip_2_ip6(dst));
	nif = ip6_route(IP6_ADDR_ANY6, ip_2_ip6(dst));
	if (nif != NULL && ip6_addr_has_scope(ip_2_ip6(dst), IP6_UNKNOWN))
		ip6_addr_assign_zone(ip_2_ip6(dst), IP6_UNKNOWN, nif);
	return nif;
}

/* An active open from src:lport (a port claimed for w, which the pcb's
 * destroy callback gives back) to dst:port, either family. */
static struct dpsock_sock *
tcp_open(struct dpsock_worker *w, const ip_addr_t *src, uint16_t lport, const ip_addr_t *dst,
	 uint16_t port, const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_sock *s = NULL;
	struct tcp_pcb *pcb;
	err_t e;

	pcb = tcp_new_ip_type(IP_GET_TYPE(dst));
	if (pcb == NULL) {
		__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w, lport);
		errno = ENOMEM;
		return NULL;
	}
	/* From here the pcb's destroy callback owns the port. */
	tcp_ext_arg_set_callbacks(pcb, w->extarg_id, &active_extarg);
	tcp_ext_arg_set(pcb, w->extarg_id, (void *)(uintptr_t)lport);
	ip_set_option(pcb, SOF_REUSEADDR);
	e = tcp_bind(pcb, src, lport);
	if (e == ERR_OK) {
		s = sock_new(w, SOCK_TCP, ops, user);
		if (s == NULL)
			e = ERR_MEM;
	}
	if (e != ERR_OK) {
		tcp_abort(pcb); /* frees the pcb: the destroy callback releases lport */
		errno = -err_to_errno(e);
		return NULL;
	}
	s->pcb.tcp = pcb;
	s->owned_port = lport;
	s->connecting = true;
	tcp_setup_callbacks(s);
	conn_count(s, true);
	e = tcp_connect(pcb, dst, port, on_tcp_connected);
	if (e == ERR_OK)
		sock_stats_open(s);
	if (e != ERR_OK) {
		tcp_detach(pcb);
		sock_free(s);
		tcp_abort(pcb);
		errno = -err_to_errno(e);
		return NULL;
	}
	return s;
}

struct dpsock_sock *
dpsock_tcp_connect(struct dpsock_worker *w, uint32_t addr, uint16_t port,
		   const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_stack *d;
	struct netif *nif;
	ip_addr_t dst = IPADDR4_INIT(addr);
	bool lo = ip4_addr_isloopback(ip_2_ip4(&dst));
	struct dpsock_mc_addr la, ra;
	uint16_t lport;

	if (w == NULL || w != dpsock_self) {
		errno = w == NULL ? EINVAL : EPERM;
		return NULL;
	}
	d = w->d;
	nif = ip4_route(ip_2_ip4(&dst));
	if (nif == NULL) {
		errno = ENETUNREACH;
		return NULL;
	}
	if (w->n_conns >= d->conf.max_connections) {
		errno = ENOBUFS;
		return NULL;
	}
	la = dpsock_mc_addr4(lo ? addr : ip4_addr_get_u32(netif_ip4_addr(nif)));
	ra = dpsock_mc_addr4(addr);
	/* acquire: pairs with the release when the backend falls back */
	lport = __atomic_load_n(&d->steer, __ATOMIC_ACQUIRE)->claim_port(w, &la, &ra,
									 rte_cpu_to_be_16(port));
	if (lport == 0) {
		dpsock_stat_add(&w->stats->port_claim_failed, 1);
		errno = EADDRNOTAVAIL;
		return NULL;
	}
	/* to 127.0.0.1 from 127.0.0.1, as Linux's loopback */
	return tcp_open(w, lo ? &dst : netif_ip_addr4(nif), lport, &dst, port, ops, user);
}

struct dpsock_sock *
dpsock_tcp_connect6(struct dpsock_worker *w, const struct in6_addr *addr, uint16_t port,
		    const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_mc_addr la, ra;
	struct netif *nif;
	const ip_addr_t *src;
	ip_addr_t dst;
	uint16_t lport;

	if (w == NULL || addr == NULL || w != dpsock_self) {
		errno = w == NULL || addr == NULL ? EINVAL : EPERM;
		return NULL;
	}
	nif = ip6_dst(&dst, addr);
	if (ip6_addr_ismulticast(ip_2_ip6(&dst)) || ip6_addr_isany(ip_2_ip6(&dst)) ||
	    ip6_addr_isipv4mappedipv6(ip_2_ip6(&dst))) {
		errno = EINVAL; /* a mapped address: dpsock_tcp_connect */
		return NULL;
	}
	src = nif != NULL ? ip6_select_source_address(nif, ip_2_ip6(&dst)) : NULL;
	if (src == NULL) {
		errno = ENETUNREACH;
		return NULL;
	}
	if (w->n_conns >= w->d->conf.max_connections) {
		errno = ENOBUFS;
		return NULL;
	}
	la = dpsock_mc_addr6(ip_2_ip6(src)->addr);
	ra = dpsock_mc_addr6(ip_2_ip6(&dst)->addr);
	/* acquire: pairs with the release when the backend falls back */
	lport = __atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->claim_port(w, &la, &ra,
									    rte_cpu_to_be_16(port));
	if (lport == 0) {
		dpsock_stat_add(&w->stats->port_claim_failed, 1);
		errno = EADDRNOTAVAIL;
		return NULL;
	}
	return tcp_open(w, src, lport, &dst, port, ops, user);
}

static int
tcp_usable(const struct dpsock_sock *s)
{
	if (s == NULL || s->type != SOCK_TCP)
		return -EINVAL;
	if (!on_owner(s))
		return -EPERM;
	if (s->pcb.tcp == NULL)
		return -ECONNRESET;
	if (s->connecting)
		return -ENOTCONN;
	if (s->shut_wr)
		return -EPIPE;
	return 0;
}

ssize_t
dpsock_send(struct dpsock_sock *s, const void *buf, size_t len, int flags)
{
	struct tcp_pcb *pcb;
	size_t done = 0;
	int rc = tcp_usable(s);

	if (rc != 0)
		return rc;
	pcb = s->pcb.tcp;
	while (done < len) {
		size_t room = tcp_sndbuf(pcb);
		uint16_t n;
		err_t e;

		if (room == 0 || pcb->snd_queuelen >= TCP_SND_QUEUELEN - 1)
			break;
		n = (uint16_t)RTE_MIN(RTE_MIN(room, len - done), (size_t)0xffff);
		e = tcp_write(pcb, (const char *)buf + done, n,
			      TCP_WRITE_FLAG_COPY |
			      ((flags & DPSOCK_SEND_MORE) || done + n < len ? TCP_WRITE_FLAG_MORE : 0));
		if (e == ERR_MEM)
			break;
		if (e != ERR_OK)
			return done ? (ssize_t)done : err_to_errno(e);
		done += n;
	}
	if (done < len) {
		s->want_writable = true;
		DPSOCK_SOCKSTAT_ADD(s->st, tx_eagain, 1);
	}
	if (done == 0)
		return -EAGAIN;
	dpsock_stat_add(&s->w->stats->tcp_tx_bytes, done);
	if (s->st != NULL) {
		dpsock_sockstat_write_begin(s->st);
		dpsock_stat_add(&s->st->tx_bytes, done);
		dpsock_stat_add(&s->st->tx_packets, (done + pcb->mss - 1) / RTE_MAX(pcb->mss, 1));
		dpsock_sockstat_write_end(s->st);
	}
	if (!(flags & DPSOCK_SEND_MORE))
		tcp_output(pcb);
	return (ssize_t)done;
}

int
dpsock_send_mbuf(struct dpsock_sock *s, struct rte_mbuf *m)
{
	struct tcp_pcb *pcb;
	struct rte_mbuf *seg;
	struct txm *t;
	uint16_t queued;
	int rc = tcp_usable(s);

	if (rc != 0)
		return rc;
	if (m == NULL)
		return -EINVAL;
	pcb = s->pcb.tcp;
	if (tcp_sndbuf(pcb) < m->pkt_len ||
	    pcb->snd_queuelen + m->nb_segs + 1 >= TCP_SND_QUEUELEN) {
		s->want_writable = true;
		DPSOCK_SOCKSTAT_ADD(s->st, tx_eagain, 1);
		return -EAGAIN;
	}
	t = mem_malloc(sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	/* lwIP references the data (no copy) until it is acknowledged; the
	 * mbuf is freed from on_tcp_sent when its last byte is. */
	queued = pcb->snd_queuelen;
	for (seg = m; seg != NULL; seg = seg->next) {
		err_t e = tcp_write(pcb, rte_pktmbuf_mtod(seg, void *), seg->data_len,
				    seg->next ? TCP_WRITE_FLAG_MORE : 0);

		if (e != ERR_OK) {
			/* cannot happen after the checks above unless memory ran
			 * out half way; lwIP keeps what it queued, so the mbuf
			 * must stay: account what went in and report ENOMEM */
			if (pcb->snd_queuelen == queued) {
				mem_free(t);
				return -ENOMEM;
			}
			break;
		}
	}
	t->m = m;
	t->left = m->pkt_len;
	t->next = NULL;
	if (s->txm_tail)
		s->txm_tail->next = t;
	else
		s->txm_head = t;
	s->txm_tail = t;
	dpsock_stat_add(&s->w->stats->tcp_tx_bytes, m->pkt_len);
	if (s->st != NULL) {
		dpsock_sockstat_write_begin(s->st);
		dpsock_stat_add(&s->st->tx_bytes, m->pkt_len);
		dpsock_stat_add(&s->st->tx_packets,
				(m->pkt_len + pcb->mss - 1) / RTE_MAX(pcb->mss, 1));
		dpsock_sockstat_write_end(s->st);
	}
	tcp_output(pcb);
	return 0;
}

size_t
dpsock_send_space(const struct dpsock_sock *s)
{
	if (tcp_usable(s) != 0)
		return 0;
	return tcp_sndbuf(s->pcb.tcp);
}

int
dpsock_shutdown_write(struct dpsock_sock *s)
{
	int rc = tcp_usable(s);

	if (rc != 0)
		return rc == -EPIPE ? 0 : rc;
	s->shut_wr = true;
	return err_to_errno(tcp_shutdown(s->pcb.tcp, 0, 1));
}

int
dpsock_close(struct dpsock_sock *s)
{
	if (s == NULL || !on_owner(s))
		return s == NULL ? -EINVAL : -EPERM;
	if (s->dead || s->closed_by_app)
		return 0;
	if (s->type == SOCK_UDP) {
		udp_release(s);
		sock_free(s);
		return 0;
	}
	if (s->type == SOCK_TCP)
		dpsock_stat_add(&s->w->stats->tcp_closed, 1);
	s->closed_by_app = true;
	if (s->type == SOCK_TCP)
		conn_count(s, false);
	if (s->pcb.tcp != NULL) {
		struct tcp_pcb *pcb = s->pcb.tcp;

		if (s->type == SOCK_TCP && s->txm_head != NULL) {
			/* Stays, still attached, until its mbufs are acknowledged
			 * (on_tcp_sent) or the connection fails (on_tcp_err);
			 * on_tcp_recv discards what arrives meanwhile. */
			if (s->rx_unacked != 0) {
				window_open(pcb, s->rx_unacked);
				s->rx_unacked = 0;
			}
			if (tcp_close(pcb) == ERR_OK)
				return 0;
			/* no memory for the FIN: reset instead */
			tcp_detach(pcb);
			s->pcb.tcp = NULL;
			tcp_abort(pcb);
			s->aborted = true;
		} else {
			/* Detach first: tcp_close frees listening and not yet
			 * connected pcbs at once. The pcb finishes the close on
			 * its own and discards what the peer still sends.
			 * Data handed to the app counts as read: open the window
			 * for it, or lwIP resets the connection as closed with
			 * unread data (a response queued in the readable callback
			 * would be lost). */
			if (s->type == SOCK_TCP && s->rx_unacked != 0) {
				window_open(pcb, s->rx_unacked);
				s->rx_unacked = 0;
			}
			tcp_detach(pcb);
			if (s->type == SOCK_TCP)
				tcp_recv(pcb, on_tcp_recv);
			s->pcb.tcp = NULL;
			if (tcp_close(pcb) != ERR_OK) {
				tcp_abort(pcb);
				s->aborted = true;
			}
		}
	}
	sock_free(s);
	return 0;
}

void
dpsock_abort(struct dpsock_sock *s)
{
	struct tcp_pcb *pcb;

	if (s == NULL || !on_owner(s) || s->dead)
		return;
	if (s->type != SOCK_TCP) {
		dpsock_close(s);
		return;
	}
	pcb = s->pcb.tcp;
	s->pcb.tcp = NULL;
	if (pcb != NULL) {
		tcp_detach(pcb);
		tcp_abort(pcb);
		s->aborted = true; /* a running lwIP callback must answer ERR_ABRT */
	}
	dpsock_stat_add(&s->w->stats->tcp_closed, 1);
	sock_free(s);
}

int
dpsock_set_nodelay(struct dpsock_sock *s, bool on)
{
	if (s == NULL || s->type != SOCK_TCP || s->pcb.tcp == NULL || !on_owner(s))
		return -EINVAL;
	if (on)
		tcp_nagle_disable(s->pcb.tcp);
	else
		tcp_nagle_enable(s->pcb.tcp);
	return 0;
}

int
dpsock_set_keepalive(struct dpsock_sock *s, bool on, unsigned int idle, unsigned int interval,
		     unsigned int count)
{
	struct tcp_pcb *pcb;

	if (s == NULL || s->type != SOCK_TCP || s->pcb.tcp == NULL || !on_owner(s))
		return -EINVAL;
	pcb = s->pcb.tcp;
	if (!on) {
		ip_reset_option(pcb, SOF_KEEPALIVE);
		return 0;
	}
	ip_set_option(pcb, SOF_KEEPALIVE);
	if (idle)
		pcb->keep_idle = idle * 1000u;
	if (interval)
		pcb->keep_intvl = interval * 1000u;
	if (count)
		pcb->keep_cnt = count;
	/* a pcb parked behind the timers' walks has a keepalive to watch now */
	dpsock_tcp_tmr_wake(pcb);
	return 0;
}

int
dpsock_sock_set_ttl(struct dpsock_sock *s, int ttl)
{
	struct ip_pcb *ip;

	if (s == NULL || !on_owner(s) || (ttl != -1 && (ttl < 1 || ttl > 255)))
		return s != NULL && !on_owner(s) ? -EPERM : -EINVAL;
	ip = s->type == SOCK_UDP ? (struct ip_pcb *)(void *)s->pcb.udp :
				   (struct ip_pcb *)(void *)s->pcb.tcp;
	if (ip == NULL)
		return -EINVAL;
	/* both pcbs start with IP_PCB's fields */
	ip->ttl = (u8_t)(ttl == -1 ? IP_DEFAULT_TTL : ttl);
	return 0;
}

int
dpsock_sock_set_tos(struct dpsock_sock *s, int tos)
{
	struct ip_pcb *ip;

	if (s == NULL || !on_owner(s))
		return s == NULL ? -EINVAL : -EPERM;
	ip = s->type == SOCK_UDP ? (struct ip_pcb *)(void *)s->pcb.udp :
				   (struct ip_pcb *)(void *)s->pcb.tcp;
	if (ip == NULL)
		return -EINVAL;
	if (s->type != SOCK_UDP)
		tos = (tos & ~3) | (ip->tos & 3); /* TCP keeps its ECN bits, as Linux */
	ip->tos = (u8_t)tos;
	return 0;
}

int
dpsock_set_congestion(struct dpsock_sock *s, const char *name)
{
	int i;

	if (s == NULL || s->type != SOCK_TCP || s->pcb.tcp == NULL || !on_owner(s))
		return -EINVAL;
	i = dpsock_tcp_cc_find(name);
	if (i < 0)
		return -ENOENT;
	if (s->pcb.tcp->state == LISTEN) {
		/* a tcp_pcb_listen has no congestion state: for its children */
		s->cc = (uint8_t)(i + 1);
		return 0;
	}
	return dpsock_tcp_cc_set(s->pcb.tcp, name);
}

int
dpsock_tcp_info(const struct dpsock_sock *s, struct dpsock_tcp_info *out)
{
	if (s == NULL || out == NULL || s->type != SOCK_TCP || !on_owner(s))
		return -EINVAL;
	if (s->pcb.tcp == NULL)
		return -ENOTCONN;
	dpsock_tcp_rec_info(s->pcb.tcp, out);
	if (s->pcb.tcp->state == LISTEN && s->cc != 0)
		snprintf(out->congestion, sizeof(out->congestion), "%s",
			 dpsock_cc_table[s->cc - 1]->name);
	return 0;
}

/* ---- UDP ---------------------------------------------------------------- */

/* An lwIP address and port as the socket API gives it: sockaddr_in for
 * IPv4, sockaddr_in6 for IPv6 (an IPv4 address in a pcb of both families,
 * a dual-stack listener's, is IPv4's any). */
static void
sockaddr_from(union dpsock_sockaddr *sa, const ip_addr_t *a, uint16_t port)
{
	memset(sa, 0, sizeof(*sa));
	if (a != NULL && IP_IS_V6(a)) {
		sa->in6.sin6_family = AF_INET6;
		memcpy(&sa->in6.sin6_addr, ip_2_ip6(a)->addr, 16);
		sa->in6.sin6_port = rte_cpu_to_be_16(port);
#if LWIP_IPV6_SCOPES
		sa->in6.sin6_scope_id = ip6_addr_zone(ip_2_ip6(a));
#endif
		return;
	}
	sa->in.sin_family = AF_INET;
	if (a != NULL && IP_IS_V4(a))
		sa->in.sin_addr.s_addr = ip4_addr_get_u32(ip_2_ip4(a));
	sa->in.sin_port = rte_cpu_to_be_16(port);
}

/* A datagram for s from `from` (either family): to its app, counted. */
static void
udp_deliver(struct dpsock_sock *s, struct pbuf *p, const union dpsock_sockaddr *from,
	    const struct dpsock_rx_meta *meta)
{
	struct dpsock_rx rx = { .p = p, .s = s, .len = p->tot_len, .meta = *meta };

	dpsock_stat_add(&s->w->stats->udp_rx, 1);
	if (s->st != NULL) {
		dpsock_sockstat_write_begin(s->st);
		dpsock_stat_add(&s->st->rx_bytes, p->tot_len);
		dpsock_stat_add(&s->st->rx_packets, 1);
		dpsock_sockstat_write_end(s->st);
	}
	if (s->ops != NULL && s->ops->datagram != NULL)
		APP_CALL(s, s->ops->datagram(s, from, &rx));
	if (!rx.held)
		pbuf_free(p);
	sock_reap(s);
}

void
dpsock_sock_udp_input(struct dpsock_sock *s, struct pbuf *p, struct dpsock_mc_addr src,
		      uint16_t sport, const struct dpsock_rx_meta *meta)
{
	union dpsock_sockaddr from;

	memset(&from, 0, sizeof(from));
	if (dpsock_mc_addr_is4(src)) {
		from.in.sin_family = AF_INET;
		from.in.sin_port = rte_cpu_to_be_16(sport);
		from.in.sin_addr.s_addr = src.w[3];
	} else {
		from.in6.sin6_family = AF_INET6;
		from.in6.sin6_port = rte_cpu_to_be_16(sport);
		memcpy(&from.in6.sin6_addr, src.w, 16);
	}
	udp_deliver(s, p, &from, meta);
}

/* lwIP's delivery (unicast, or a datagram dpsock_lwip_udp_deliver left to
 * lwIP): what the worker knew of it comes from lwIP's input state. */
static void
on_udp_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	struct dpsock_sock *s = arg;
	const struct netif *inp = ip_current_input_netif();
	union dpsock_sockaddr from;
	struct dpsock_rx_meta meta = {
		/* IP_PKTINFO's address: IPv4's (0 for an IPv6 datagram, whose
		 * own is dst6) */
		.dst = ip_current_is_v6() ? 0 : ip4_addr_get_u32(ip4_current_dest_addr()),
		.iface = inp != NULL ? ((const struct dpsock_worker_port *)inp->state)->port_idx : 0,
		.rx_ns = dpsock_clock_rx_ns(s->w),
		.hw_ns = dpsock_netif_hw_ns(s->w, p),
	};

	RTE_SET_USED(pcb);
	if (ip_current_is_v6())
		memcpy(meta.dst6, ip6_current_dest_addr()->addr, 16);
	sockaddr_from(&from, addr, port);
	udp_deliver(s, p, &from, &meta);
}

struct dpsock_udp_state *
dpsock_sock_udp(struct dpsock_sock *s)
{
	return s != NULL && s->type == SOCK_UDP && !s->dead ? &s->udp : NULL;
}

struct udp_pcb *
dpsock_sock_udp_pcb(struct dpsock_sock *s)
{
	return s->type == SOCK_UDP ? s->pcb.udp : NULL;
}

struct dpsock_sock *
dpsock_sock_of_udp_pcb(struct udp_pcb *pcb)
{
	return pcb->recv == on_udp_recv ? pcb->recv_arg : NULL;
}

void
dpsock_sock_pin(struct dpsock_sock *s)
{
	s->in_cb++;
}

void
dpsock_sock_unpin(struct dpsock_sock *s)
{
	s->in_cb--;
	sock_reap(s);
}

bool
dpsock_sock_dead(const struct dpsock_sock *s)
{
	return s->dead || s->closed_by_app;
}

int
dpsock_sock_stats_index(struct dpsock_sock *s, uint64_t *serial)
{
	if (s->st == NULL)
		return -1;
	*serial = s->st->serial;
	return (int)(s->st - dpsock_stats_socks(s->w->d->stats, s->w->idx));
}

void
dpsock_sock_set_owner(struct dpsock_sock *s, int pid, int fd)
{
	s->udp.owner_pid = pid;
	s->udp.owner_fd = fd;
	if (s->st != NULL) {
		dpsock_sockstat_write_begin(s->st);
		s->st->owner_pid = pid;
		s->st->fd = fd;
		dpsock_sockstat_write_end(s->st);
	}
}

void
dpsock_sock_rx_dropped(struct dpsock_sock *s, size_t bytes)
{
	RTE_SET_USED(bytes);
	DPSOCK_SOCKSTAT_ADD(s->st, rx_drops, 1);
}

/* DPSOCK_UDP_OWNED: ports tried when a claimed one is bound here already */
#define UDP_OWNED_TRIES 8

struct dpsock_sock *
dpsock_udp_bind(struct dpsock_worker *w, uint16_t port, const struct dpsock_sock_ops *ops,
		void *user)
{
	return dpsock_udp_bind_addr(w, 0, port, DPSOCK_UDP_IPV6, ops, user);
}

/* flags are valid for a UDP bind (ipv6: DPSOCK_UDP_IPV6 where that flag
 * is, else 0) */
static bool
udp_bind_args_ok(struct dpsock_worker *w, uint16_t port, unsigned int flags, unsigned int ipv6)
{
	if (w == NULL || w != dpsock_self) {
		errno = w == NULL ? EINVAL : EPERM;
		return false;
	}
	if ((flags & ~(DPSOCK_UDP_REUSEADDR | DPSOCK_UDP_REUSEPORT | DPSOCK_UDP_OWNED |
		       DPSOCK_UDP_HELD | ipv6)) ||
	    ((flags & DPSOCK_UDP_OWNED) &&
	     (port != 0 || (flags & (DPSOCK_UDP_REUSEADDR | DPSOCK_UDP_REUSEPORT))))) {
		errno = EINVAL;
		return false;
	}
	return true;
}

/* A UDP socket bound to la:port, served on the addresses of sv
 * (sock_serve; none for a group: its datagrams come through the group,
 * filter.c). */
static struct dpsock_sock *
udp_bind_ip(struct dpsock_worker *w, const ip_addr_t *la, const struct dpsock_mc_addr *sv,
	    unsigned int n_sv, uint16_t port, unsigned int flags,
	    const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_sock *s;
	struct udp_pcb *pcb;
	uint16_t lport = 0;
	unsigned int tries;
	err_t e = ERR_USE;

	pcb = udp_new_ip_type(IP_GET_TYPE(la));
	if (pcb == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	/* lwIP lets two pcbs share a port when both have SOF_REUSEADDR: the
	 * socket API's SO_REUSEADDR, and SO_REUSEPORT (whose unicast datagrams
	 * are then hashed over the group, dpsock_lwip_udp_deliver) */
	if (flags & (DPSOCK_UDP_REUSEADDR | DPSOCK_UDP_REUSEPORT))
		ip_set_option(pcb, SOF_REUSEADDR);
	udp_set_multicast_ttl(pcb, 1); /* Linux's default; lwIP's is the unicast TTL */
	if (flags & DPSOCK_UDP_OWNED) {
		/* A port no worker owns may still be bound here by an
		 * explicit bind in the ephemeral range: then another one. */
		for (tries = 0; tries < UDP_OWNED_TRIES; tries++) {
			lport = dpsock_steer_claim_any(w);
			if (lport == 0) {
				dpsock_stat_add(&w->stats->port_claim_failed, 1);
				udp_remove(pcb);
				errno = EADDRNOTAVAIL;
				return NULL;
			}
			e = udp_bind(pcb, la, lport);
			if (e != ERR_USE)
				break;
			/* acquire: pairs with the release when the backend falls back */
			__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w, lport);
			lport = 0;
		}
	} else {
		e = udp_bind(pcb, la, port);
	}
	if (e == ERR_OK && (s = sock_new(w, SOCK_UDP, ops, user)) == NULL)
		e = ERR_MEM;
	if (e != ERR_OK) {
		udp_remove(pcb);
		if (lport != 0)
			__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w, lport);
		errno = -err_to_errno(e);
		return NULL;
	}
	/* a port shared with the kernel: dpsock's before the first datagram */
	{
		int r = sock_serve(s, IPPROTO_UDP, sv, n_sv, pcb->local_port,
				   !(flags & DPSOCK_UDP_HELD));

		if (r != 0) {
			udp_remove(pcb);
			if (lport != 0)
				__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w, lport);
			sock_free(s);
			errno = -r;
			return NULL;
		}
	}
	s->pcb.udp = pcb;
	s->owned_port = lport;
	udp_state_init(&s->udp);
	s->udp.reuseport = (flags & DPSOCK_UDP_REUSEPORT) != 0;
	s->udp.owner_pid = w->d->stats != NULL ? w->d->stats->pid : 0;
	udp_recv(pcb, on_udp_recv, s);
	sock_stats_open(s);
	return s;
}

struct dpsock_sock *
dpsock_udp_bind_addr(struct dpsock_worker *w, uint32_t addr, uint16_t port, unsigned int flags,
		     const struct dpsock_sock_ops *ops, void *user)
{
	ip_addr_t la = IPADDR4_INIT(addr);
	struct dpsock_mc_addr sv[2];
	unsigned int n_sv;

	if (!udp_bind_args_ok(w, port, flags, DPSOCK_UDP_IPV6))
		return NULL;
	if ((flags & DPSOCK_UDP_IPV6) && addr != 0) {
		errno = EINVAL;
		return NULL;
	}
	/* both families: lwIP's "any type" pcb, bound to its any address */
	if (flags & DPSOCK_UDP_IPV6)
		ip_addr_copy(la, *IP_ANY_TYPE);
	n_sv = ip4_addr_ismulticast(ip_2_ip4(&la)) ? 0 :
	       served4(addr, flags & DPSOCK_UDP_IPV6, sv);
	return udp_bind_ip(w, &la, sv, n_sv, port, flags, ops, user);
}

struct dpsock_sock *
dpsock_udp_bind6(struct dpsock_worker *w, const struct in6_addr *addr, uint16_t port,
		 unsigned int flags, const struct dpsock_sock_ops *ops, void *user)
{
	struct dpsock_mc_addr sv[2];
	ip_addr_t la;

	if (!udp_bind_args_ok(w, port, flags, 0))
		return NULL;
	ip_addr_copy(la, *IP6_ADDR_ANY);
	if (addr != NULL && !IN6_IS_ADDR_UNSPECIFIED(addr)) {
		if (IN6_IS_ADDR_V4MAPPED(addr) || IN6_IS_ADDR_MULTICAST(addr)) {
			errno = EINVAL; /* mapped: dpsock_udp_bind_addr; no IPv6 groups */
			return NULL;
		}
		memcpy(ip_2_ip6(&la)->addr, addr, 16);
		ip6_addr_clear_zone(ip_2_ip6(&la));
	}
	return udp_bind_ip(w, &la, sv, served6(addr, sv), port, flags, ops, user);
}


/* An IPv6 datagram out: to a group through nif (IPV6_MULTICAST_IF's or
 * the route's: lwIP's udp_sendto would take IP_MULTICAST_IF's), else as
 * lwIP routes it. */
static err_t
udp_out6(struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *dst, uint16_t port,
	 struct netif *nif)
{
	if (nif != NULL && ip6_addr_ismulticast(ip_2_ip6(dst)))
		return udp_sendto_if(pcb, p, dst, port, nif);
	return udp_sendto(pcb, p, dst, port);
}

/* udp_out6, where one that will be fragmented gets its checksum from lwIP
 * even where the port offloads UDP checksums (IPv6 has no checksum-less
 * UDP, and the NIC sees only fragments). */
static err_t
udp_sendto6(struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *dst, uint16_t port,
	    struct netif *nif)
{
	u16_t saved;
	err_t e;

	if (nif == NULL || (nif->chksum_flags & NETIF_CHECKSUM_GEN_UDP) ||
	    p->tot_len + IP6_HLEN + UDP_HLEN <= nif->mtu)
		return udp_out6(pcb, p, dst, port, nif);
	saved = nif->chksum_flags;
	NETIF_SET_CHECKSUM_CTRL(nif, saved | NETIF_CHECKSUM_GEN_UDP);
	e = udp_out6(pcb, p, dst, port, nif);
	NETIF_SET_CHECKSUM_CTRL(nif, saved);
	return e;
}

ssize_t
dpsock_udp_sendto(struct dpsock_sock *s, const void *buf, size_t len,
		  const union dpsock_sockaddr *to)
{
	const struct dpsock_sock_mc_ops *mc;
	ip_addr_t dst = IPADDR4_INIT(0);
	struct netif *nif6 = NULL;
	bool mcast6 = false;
	uint16_t port;
	struct pbuf *p;
	err_t e;

	if (s == NULL || s->type != SOCK_UDP || to == NULL ||
	    (to->sa.sa_family != AF_INET && to->sa.sa_family != AF_INET6))
		return -EINVAL;
	if (!on_owner(s))
		return -EPERM;
	if (len > (to->sa.sa_family == AF_INET6 ? 65527u : 65507u))
		return -EMSGSIZE;
	if (to->sa.sa_family == AF_INET6) {
		nif6 = ip6_dst(&dst, &to->in6.sin6_addr);
		port = rte_be_to_cpu_16(to->in6.sin6_port);
		mcast6 = ip6_addr_ismulticast(ip_2_ip6(&dst));
		if (mcast6 && s->udp.mc_if6 >= 0) /* IPV6_MULTICAST_IF */
			nif6 = &s->w->ports[s->udp.mc_if6].netif;
	} else {
		ip4_addr_set_u32(ip_2_ip4(&dst), to->in.sin_addr.s_addr);
		port = rte_be_to_cpu_16(to->in.sin_port);
	}
	p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
	if (p == NULL)
		return -ENOMEM;
	pbuf_take(p, buf, (u16_t)len);
	if (mcast6) {
		/* IPV6_MULTICAST_HOPS: lwIP has one multicast TTL per pcb,
		 * IP_MULTICAST_TTL's */
		u8_t ttl = udp_get_multicast_ttl(s->pcb.udp);

		udp_set_multicast_ttl(s->pcb.udp, s->udp.hops6);
		e = udp_sendto6(s->pcb.udp, p, &dst, port, nif6);
		udp_set_multicast_ttl(s->pcb.udp, ttl);
	} else {
		e = IP_IS_V6(&dst) ? udp_sendto6(s->pcb.udp, p, &dst, port, nif6) :
				     udp_sendto(s->pcb.udp, p, &dst, port);
	}
	pbuf_free(p);
	if (IP_IS_V4(&dst) && ip4_addr_ismulticast(ip_2_ip4(&dst)) && s->udp.mc_loop &&
	    e != ERR_RTE) {
		/* IP_MULTICAST_LOOP: this host's subscribers get it too */
		const struct netif *nif = s->pcb.udp->mcast_ifindex != NETIF_NO_INDEX ?
					  netif_get_by_index(s->pcb.udp->mcast_ifindex) : netif_default;

		mc = s->w->d->sock_mc;
		if (nif != NULL && mc != NULL)
			mc->loop(s, buf, len, dpsock_mc_addr4(to->in.sin_addr.s_addr), port,
				 s->pcb.udp->local_port,
				 ((const struct dpsock_worker_port *)nif->state)->port_idx);
	}
	if (mcast6 && s->udp.mc_loop6 && nif6 != NULL && e != ERR_RTE &&
	    (mc = s->w->d->sock_mc) != NULL)
		/* IPV6_MULTICAST_LOOP */
		mc->loop(s, buf, len, dpsock_mc_addr6(&to->in6.sin6_addr), port,
			 s->pcb.udp->local_port,
			 ((const struct dpsock_worker_port *)nif6->state)->port_idx);
	if (e != ERR_OK) {
		DPSOCK_SOCKSTAT_ADD(s->st, errors, 1);
		return err_to_errno(e);
	}
	dpsock_stat_add(&s->w->stats->udp_tx, 1);
	if (s->st != NULL) {
		dpsock_sockstat_write_begin(s->st);
		dpsock_stat_add(&s->st->tx_bytes, len);
		dpsock_stat_add(&s->st->tx_packets, 1);
		dpsock_sockstat_write_end(s->st);
	}
	return (ssize_t)len;
}

/* ---- received data ---------------------------------------------------------- */

size_t
dpsock_rx_len(const struct dpsock_rx *rx)
{
	return rx->len;
}

void
dpsock_rx_info(const struct dpsock_rx *rx, struct dpsock_rx_info *info)
{
	info->dst = rx->meta.dst;
	memcpy(info->dst6, rx->meta.dst6, 16);
	info->iface = rx->meta.iface;
	info->rx_ns = rx->meta.rx_ns;
	info->hw_ns = rx->meta.hw_ns;
}

unsigned int
dpsock_rx_iov(const struct dpsock_rx *rx, struct iovec *iov, unsigned int n)
{
	const struct pbuf *q;
	unsigned int i = 0;

	for (q = rx->p; q != NULL; q = q->next) {
		if (q->len == 0)
			continue;
		if (i < n) {
			iov[i].iov_base = q->payload;
			iov[i].iov_len = q->len;
		}
		i++;
	}
	return i;
}

size_t
dpsock_rx_copy(const struct dpsock_rx *rx, void *buf, size_t len, size_t off)
{
	if (off >= rx->len)
		return 0;
	if (len > rx->len - off)
		len = rx->len - off;
	return pbuf_copy_partial(rx->p, buf, (u16_t)RTE_MIN(len, (size_t)0xffff), (u16_t)off);
}

struct dpsock_rx *
dpsock_rx_hold(struct dpsock_rx *rx)
{
	struct dpsock_rx *h;

	if (rx->heap)
		return rx;
	/* The descriptor is small; when even that cannot be had, the data is
	 * copied into one pbuf instead of being lost. */
	h = mem_malloc(sizeof(*h));
	if (h == NULL)
		return NULL;
	*h = *rx;
	h->held = true;
	h->heap = true;
	rx->held = true;
	if (h->s != NULL) {
		h->s->holds++;
		DPSOCK_SOCKSTAT_ADD(h->s->st, rx_held, h->len);
	}
	return h;
}

void
dpsock_rx_release(struct dpsock_rx *rx)
{
	struct dpsock_sock *s;

	if (rx == NULL || !rx->heap)
		return;
	s = rx->s;
	if (s != NULL) {
		/* Reopen the window only while the connection is the app's
		 * (dpsock_close opened it for held data already). */
		if (!s->dead && s->type == SOCK_TCP && s->pcb.tcp != NULL && !s->closed_by_app) {
			window_open(s->pcb.tcp, rx->len);
			s->rx_unacked -= rx->len;
		}
		s->holds--;
		DPSOCK_SOCKSTAT_ADD(s->st, rx_held, -(uint64_t)rx->len);
		sock_reap(s);
	}
	pbuf_free(rx->p);
	mem_free(rx);
}

/* ---- accessors ------------------------------------------------------------ */

void
dpsock_sock_set_user(struct dpsock_sock *s, void *user)
{
	s->user = user;
}

void *
dpsock_sock_user(const struct dpsock_sock *s)
{
	return s->user;
}

void
dpsock_sock_set_ops(struct dpsock_sock *s, const struct dpsock_sock_ops *ops)
{
	s->ops = ops;
}

struct dpsock_worker *
dpsock_sock_worker(const struct dpsock_sock *s)
{
	return s->w;
}

void
dpsock_sock_local(const struct dpsock_sock *s, union dpsock_sockaddr *sa)
{
	if (s->type == SOCK_UDP && s->pcb.udp != NULL)
		sockaddr_from(sa, &s->pcb.udp->local_ip, s->pcb.udp->local_port);
	else if (s->type != SOCK_UDP && s->pcb.tcp != NULL)
		sockaddr_from(sa, &s->pcb.tcp->local_ip, s->pcb.tcp->local_port);
	else
		sockaddr_from(sa, NULL, 0);
}

void
dpsock_sock_peer(const struct dpsock_sock *s, union dpsock_sockaddr *sa)
{
	if (s->type == SOCK_TCP && s->pcb.tcp != NULL)
		sockaddr_from(sa, &s->pcb.tcp->remote_ip, s->pcb.tcp->remote_port);
	else
		sockaddr_from(sa, NULL, 0);
}

struct dpsock_worker *
dpsock_worker_self(void)
{
	return dpsock_self;
}

unsigned int
dpsock_worker_index(const struct dpsock_worker *w)
{
	return w->idx;
}

/* ---- per-worker set-up ------------------------------------------------------ */

int
dpsock_sock_worker_init(struct dpsock_worker *w)
{
	TAILQ_INIT(&w->socks);
	TAILQ_INIT(&w->listed);
	w->listed_next = NULL;
	w->extarg_id = tcp_ext_arg_alloc_id();
	w->sock_extarg_id = tcp_ext_arg_alloc_id();
	dpsock_self = w;
	return 0;
}

void
dpsock_sock_worker_fini(struct dpsock_worker *w)
{
	struct dpsock_sock *s;

	/* Whatever is left is reset: the peers see RST, nothing leaks. The
	 * app's worker_fini has run: no callback reaches it any more. */
	while ((s = TAILQ_FIRST(&w->socks)) != NULL) {
		s->closed_by_app = true;
		if (s->type == SOCK_TCP && s->pcb.tcp != NULL) {
			struct tcp_pcb *pcb = s->pcb.tcp;

			s->pcb.tcp = NULL;
			tcp_detach(pcb);
			tcp_abort(pcb);
		} else if (s->type == SOCK_TCP_LISTEN && s->pcb.tcp != NULL) {
			tcp_detach(s->pcb.tcp);
			tcp_close(s->pcb.tcp);
		} else if (s->type == SOCK_UDP) {
			udp_release(s);
		}
		sock_free(s);
	}
}

/* ---- takeover (takeover/takeover.h) --------------------------------------- */

/*
 * A socket in the takeover image: what sock.c keeps beside the pcb, the
 * pcb's own addresses and options, and for a connection lwIP's image of
 * the pcb (dpsock_tcp_mig.h) with its bytes. A listener and a UDP socket
 * are made again by the same calls that made them; a connection is
 * restored as it was. Data the app holds (dpsock_rx_hold) is the app's to
 * carry: it gives it back with dpsock_rx_restore, which re-counts it.
 */
#define SOCK_IMAGE_MAGIC 0x4d49534bu /* "KSIM" */

struct sock_image {
	uint32_t magic;
	uint8_t type;             /* enum sock_type */
	uint8_t has_pcb;          /* 0: the pcb is gone (the socket only reports) */
	uint8_t shut_wr;
	uint8_t cc;
	uint8_t served_proto;
	uint8_t n_served;
	uint8_t ip_type;          /* IPADDR_TYPE_* of the pcb's local address */
	uint8_t ttl, tos;
	uint8_t udp_flags;        /* lwIP's UDP_FLAGS_* */
	uint8_t reuseport, mc_all, mc_loop, mc_all6, mc_loop6, hops6;
	uint8_t mcast_ttl, mcast_ifindex;
	uint8_t pad[2];
	int16_t mc_if6;
	uint16_t served_port;
	uint16_t owned_port;
	uint16_t local_port, remote_port;
	uint32_t so_options;
	uint32_t mcast_ip4;
	int32_t owner_pid, owner_fd;
	uint32_t pcb_len;         /* bytes that follow: TCP, the pcb's image; UDP, its
				   * memberships (struct dpsock_mc_memb each) */
	uint8_t local_ip[16], remote_ip[16];
	uint8_t remote_type;
	uint8_t served_by_app;    /* 1: DPSOCK_LISTEN_HELD / DPSOCK_UDP_HELD (0 in the
				   * images of builds before shared ports went over) */
	uint8_t pad2[6];
	struct dpsock_mc_addr served[2];
};

static void
ip_out(uint8_t out[16], const ip_addr_t *a)
{
	memset(out, 0, 16);
	if (IP_IS_V6(a))
		memcpy(out, ip_2_ip6(a)->addr, 16);
	else
		memcpy(out, &ip_2_ip4(a)->addr, 4);
}

static void
ip_in(ip_addr_t *a, uint8_t type, const uint8_t in[16])
{
	if (type == IPADDR_TYPE_V6) {
		IP_SET_TYPE_VAL(*a, IPADDR_TYPE_V6);
		memcpy(ip_2_ip6(a)->addr, in, 16);
		ip6_addr_clear_zone(ip_2_ip6(a));
	} else {
		ip_addr_set_zero_ip4(a);
		memcpy(&ip_2_ip4(a)->addr, in, 4);
		IP_SET_TYPE_VAL(*a, type);
	}
}

/* A connection's pcb as a blob: the netif it is bound to, lwIP's image
 * (dpsock_tcp_mig.h), its data. */
struct pcb_blob_hdr {
	uint8_t netif_idx;
	uint8_t pad[7];
};

static int
tcp_blob_put(const struct tcp_pcb *pcb, struct dpsock_tko_buf *b, uint32_t *len)
{
	struct pcb_blob_hdr bh = { .netif_idx = pcb->netif_idx };
	struct dpsock_tcp_mig_image img;
	size_t cap = dpsock_tcp_mig_data_size(pcb), dlen = 0;
	unsigned char *data = malloc(cap != 0 ? cap : 1);
	int r;

	if (data == NULL)
		return -ENOMEM;
	r = dpsock_tcp_mig_export(pcb, &img, data, cap, &dlen);
	if (r == 0) {
		dpsock_tko_buf_raw(b, &bh, sizeof(bh));
		dpsock_tko_buf_raw(b, &img, sizeof(img));
		dpsock_tko_buf_raw(b, data, dlen);
		*len = (uint32_t)(sizeof(bh) + sizeof(img) + dlen);
		r = b->err;
	}
	free(data);
	return r;
}

static struct tcp_pcb *
tcp_blob_get(const void *blob, size_t len, int *err)
{
	const unsigned char *p = blob;
	struct pcb_blob_hdr bh;
	struct dpsock_tcp_mig_image img;

	if (len < sizeof(bh) + sizeof(img)) {
		*err = -EINVAL;
		return NULL;
	}
	memcpy(&bh, p, sizeof(bh));
	memcpy(&img, p + sizeof(bh), sizeof(img));
	return dpsock_tcp_mig_import(&img, p + sizeof(bh) + sizeof(img),
				     len - sizeof(bh) - sizeof(img), bh.netif_idx, err);
}

int
dpsock_sock_export(struct dpsock_sock *s, struct dpsock_tko_buf *blob)
{
	struct sock_image im;
	uint32_t plen = 0;
	size_t at;
	int r;

	memset(&im, 0, sizeof(im));
	im.magic = SOCK_IMAGE_MAGIC;
	im.type = s->type;
	im.shut_wr = s->shut_wr;
	im.cc = s->cc;
	im.served_proto = s->served_proto;
	im.n_served = s->n_served;
	im.served_port = s->served_port;
	im.served_by_app = s->served_by_app;
	im.owned_port = s->owned_port;
	memcpy(im.served, s->served, sizeof(im.served));
	im.owner_pid = s->udp.owner_pid;
	im.owner_fd = s->udp.owner_fd;
	if (s->dead || s->closed_by_app)
		return -EINVAL; /* not the app's any more: dpsock_tko_export_pcbs */
	if (s->type == SOCK_UDP && s->pcb.udp != NULL) {
		struct udp_pcb *u = s->pcb.udp;

		im.has_pcb = 1;
		if (s->udp.mc != NULL)
			im.pcb_len = s->udp.mc->n * (uint32_t)sizeof(s->udp.mc->m[0]);
		im.ip_type = IP_GET_TYPE(&u->local_ip);
		ip_out(im.local_ip, &u->local_ip);
		ip_out(im.remote_ip, &u->remote_ip);
		im.remote_type = IP_GET_TYPE(&u->remote_ip);
		im.local_port = u->local_port;
		im.remote_port = u->remote_port;
		im.udp_flags = u->flags;
		im.so_options = u->so_options;
		im.ttl = u->ttl;
		im.tos = u->tos;
		im.mcast_ttl = u->mcast_ttl;
		im.mcast_ifindex = u->mcast_ifindex;
		im.mcast_ip4 = ip4_addr_get_u32(&u->mcast_ip4);
		im.reuseport = s->udp.reuseport;
		im.mc_all = s->udp.mc_all;
		im.mc_loop = s->udp.mc_loop;
		im.mc_all6 = s->udp.mc_all6;
		im.mc_loop6 = s->udp.mc_loop6;
		im.hops6 = s->udp.hops6;
		im.mc_if6 = s->udp.mc_if6;
		dpsock_tko_buf_raw(blob, &im, sizeof(im));
		if (im.pcb_len != 0)
			dpsock_tko_buf_raw(blob, s->udp.mc->m, im.pcb_len);
		return blob->err;
	} else if (s->type == SOCK_TCP_LISTEN && s->pcb.tcp != NULL) {
		struct tcp_pcb *l = s->pcb.tcp;

		im.has_pcb = 1;
		im.ip_type = IP_GET_TYPE(&l->local_ip);
		ip_out(im.local_ip, &l->local_ip);
		im.local_port = l->local_port;
		im.so_options = l->so_options;
		im.ttl = l->ttl;
		im.tos = l->tos;
	} else if (s->type == SOCK_TCP && s->pcb.tcp != NULL) {
		struct tcp_pcb *pcb = s->pcb.tcp;

		/* a handshake of ours in flight goes over when the new build
		 * takes it, but not one to this instance's own address (a pair
		 * within the host whose two ends are still meeting) */
		if ((s->connecting || pcb->state == SYN_SENT) &&
		    (!s->w->tko_connecting || pcb->state != SYN_SENT ||
		     (IP_IS_V4(&pcb->remote_ip) ?
		      dpsock_netview_local(s->w->nv, ip4_addr_get_u32(ip_2_ip4(&pcb->remote_ip)), NULL) :
		      dpsock_netview_local6(s->w->nv, (const uint8_t *)ip_2_ip6(&pcb->remote_ip)->addr,
					    NULL))))
			return -EINPROGRESS;
		im.has_pcb = 1;
		dpsock_tko_buf_raw(blob, &im, sizeof(im));
		at = blob->len;
		r = tcp_blob_put(pcb, blob, &plen);
		if (r != 0)
			return r;
		/* the length, now known, into the header written above */
		memcpy(blob->p + at - sizeof(im) + offsetof(struct sock_image, pcb_len), &plen,
		       sizeof(plen));
		return 0;
	}
	dpsock_tko_buf_raw(blob, &im, sizeof(im));
	return blob->err;
}

/* A connection's pcb from the image, with what sock.c hangs on it. */
static struct tcp_pcb *
tcp_import_pcb(struct dpsock_worker *w, const void *data, size_t len, uint16_t owned_port,
	       int *err)
{
	struct tcp_pcb *pcb;

	if (owned_port != 0 && !dpsock_steer_claim_exact(w, owned_port)) {
		*err = -EADDRINUSE;
		return NULL;
	}
	pcb = tcp_blob_get(data, len, err);
	if (pcb == NULL) {
		if (owned_port != 0)
			__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w, owned_port);
		return NULL;
	}
	if (owned_port != 0) {
		/* from here the pcb's destroy callback owns the port */
		tcp_ext_arg_set_callbacks(pcb, w->extarg_id, &active_extarg);
		tcp_ext_arg_set(pcb, w->extarg_id, (void *)(uintptr_t)owned_port);
	}
	return pcb;
}

/* A UDP socket's memberships again, by the calls that made them: an
 * exclude-mode one is a join and its blocked sources, an include-mode one
 * its source joins (the interface reports them to the link again). */
static int
udp_memberships_restore(struct dpsock_sock *s, const unsigned char *p, size_t len)
{
	struct dpsock_mc_memb m;
	const struct dpsock_mc_addr any = { { 0 } };
	const struct dpsock_sock_mc_ops *mc = s->w->d->sock_mc;
	int r = 0;

	if (len % sizeof(m) != 0 || (len > 0 && mc == NULL))
		return -EINVAL;
	for (size_t off = 0; r == 0 && off < len; off += sizeof(m)) {
		memcpy(&m, p + off, sizeof(m));
		if (m.nsrc > DPSOCK_MC_MAX_SOURCES)
			return -EINVAL;
		if (m.mode == DPSOCK_MC_EXCLUDE) {
			r = mc->addr(s, DPSOCK_MC_JOIN, m.group, m.iface, any);
			for (unsigned int i = 0; r == 0 && i < m.nsrc; i++)
				r = mc->addr(s, DPSOCK_MC_BLOCK, m.group, m.iface, m.src[i]);
		} else if (m.mode == DPSOCK_MC_INCLUDE) {
			for (unsigned int i = 0; r == 0 && i < m.nsrc; i++)
				r = mc->addr(s, DPSOCK_MC_JOIN_SOURCE, m.group, m.iface,
							  m.src[i]);
		} else {
			r = -EINVAL;
		}
	}
	return r;
}

struct dpsock_sock *
dpsock_sock_import(struct dpsock_worker *w, const void *blob, size_t len,
		   const struct dpsock_sock_ops *ops, void *user, int *err)
{
	struct sock_image im;
	struct dpsock_sock *s = NULL;
	ip_addr_t la, ra;

	*err = 0;
	if (len < sizeof(im)) {
		*err = -EINVAL;
		return NULL;
	}
	memcpy(&im, blob, sizeof(im));
	if (im.magic != SOCK_IMAGE_MAGIC || im.pcb_len != len - sizeof(im) || im.n_served > 2) {
		*err = -EINVAL;
		return NULL;
	}
	if (!im.has_pcb)
		return NULL; /* the pcb was gone: the app keeps what it reported */
	ip_in(&la, im.ip_type, im.local_ip);
	switch (im.type) {
	case SOCK_TCP_LISTEN:
		s = tcp_listen_ip(w, &la, im.served, im.n_served, im.local_port,
				  im.served_by_app ? DPSOCK_LISTEN_HELD : 0, ops, user);
		if (s == NULL) {
			*err = -errno;
			return NULL;
		}
		s->cc = im.cc;
		s->pcb.tcp->so_options = (u8_t)im.so_options;
		s->pcb.tcp->ttl = im.ttl;
		s->pcb.tcp->tos = im.tos;
		return s;
	case SOCK_UDP: {
		unsigned int flags = 0;

		if (im.so_options & SOF_REUSEADDR)
			flags |= im.reuseport ? DPSOCK_UDP_REUSEPORT : DPSOCK_UDP_REUSEADDR;
		if (im.served_by_app)
			flags |= DPSOCK_UDP_HELD;
		if (im.owned_port != 0 && !dpsock_steer_claim_exact(w, im.owned_port)) {
			*err = -EADDRINUSE;
			return NULL;
		}
		s = udp_bind_ip(w, &la, im.served, im.n_served, im.local_port, flags, ops, user);
		if (s == NULL) {
			*err = -errno;
			if (im.owned_port != 0)
				__atomic_load_n(&w->d->steer, __ATOMIC_ACQUIRE)->release_port(w,
											im.owned_port);
			return NULL;
		}
		s->owned_port = im.owned_port;
		if (im.udp_flags & UDP_FLAGS_CONNECTED) {
			ip_in(&ra, im.remote_type, im.remote_ip);
			udp_connect(s->pcb.udp, &ra, im.remote_port);
		}
		s->pcb.udp->so_options = (u8_t)im.so_options;
		s->pcb.udp->ttl = im.ttl;
		s->pcb.udp->tos = im.tos;
		s->pcb.udp->mcast_ttl = im.mcast_ttl;
		s->pcb.udp->mcast_ifindex = im.mcast_ifindex;
		ip4_addr_set_u32(&s->pcb.udp->mcast_ip4, im.mcast_ip4);
		s->udp.mc_all = im.mc_all;
		s->udp.mc_loop = im.mc_loop;
		s->udp.mc_all6 = im.mc_all6;
		s->udp.mc_loop6 = im.mc_loop6;
		s->udp.hops6 = im.hops6;
		s->udp.mc_if6 = im.mc_if6;
		dpsock_sock_set_owner(s, im.owner_pid, im.owner_fd);
		*err = udp_memberships_restore(s, (const unsigned char *)blob + sizeof(im),
					       im.pcb_len);
		if (*err != 0) {
			udp_release(s);
			sock_free(s);
			return NULL;
		}
		return s;
	}
	case SOCK_TCP: {
		struct tcp_pcb *pcb = tcp_import_pcb(w, (const unsigned char *)blob + sizeof(im),
						     im.pcb_len, im.owned_port, err);

		if (pcb == NULL)
			return NULL;
		s = sock_new(w, SOCK_TCP, ops, user);
		if (s == NULL) {
			dpsock_tcp_mig_release(pcb);
			*err = -ENOMEM;
			return NULL;
		}
		s->pcb.tcp = pcb;
		/* its listener's filter entry, as on_tcp_accept took it */
		if (im.served_proto != 0)
			(void)sock_serve(s, im.served_proto, im.served, im.n_served, im.served_port,
					 false);
		s->owned_port = im.owned_port;
		s->shut_wr = im.shut_wr;
		s->cc = im.cc;
		tcp_setup_callbacks(s);
		if (pcb->state == SYN_SENT) {
			/* our connect in flight: its answer completes it here */
			s->connecting = true;
			pcb->connected = on_tcp_connected;
		}
		conn_count(s, true);
		sock_stats_open(s);
		sock_mark_loop(s);
		return s;
	}
	default:
		*err = -EINVAL;
		return NULL;
	}
}

struct dpsock_rx *
dpsock_rx_restore(struct dpsock_sock *s, const void *data, size_t len)
{
	struct dpsock_rx *rx;
	struct pbuf *p;

	if (len == 0 || len > 0xffff)
		return NULL;
	p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_RAM);
	rx = p != NULL ? mem_calloc(1, sizeof(*rx)) : NULL;
	if (rx == NULL) {
		if (p != NULL)
			pbuf_free(p);
		return NULL;
	}
	pbuf_take(p, data, (u16_t)len);
	rx->p = p;
	rx->s = s;
	rx->len = (uint32_t)len;
	rx->held = true;
	rx->heap = true;
	s->holds++;
	s->rx_unacked += (uint32_t)len;
	DPSOCK_SOCKSTAT_ADD(s->st, rx_held, len);
	return rx;
}

/* A pcb no socket of the app stands for any more (the app closed it: its
 * FIN and last bytes still go out; TIME_WAIT): a record of its own,
 * restored without a socket (lwIP finishes it as it would have). */
#define PCB_IMAGE_MAGIC 0x4d49504bu /* "KPIM" */

struct pcb_image {
	uint32_t magic;
	uint16_t owned_port;
	uint16_t pad;
	uint32_t pcb_len;
};

static int
pcb_export_one(struct dpsock_worker *w, struct tcp_pcb *pcb, struct dpsock_tko_buf *b,
	       struct dpsock_tko_buf *x, bool half_open)
{
	struct pcb_image im = { .magic = PCB_IMAGE_MAGIC };
	const struct dpsock_sock *s = pcb->callback_arg;
	uint32_t plen = 0;
	int r;

	/* ours, SYN_SENT, belongs to a socket that refused to be carried; a
	 * peer's handshake (SYN_RCVD: lwIP gave the half-open pcb its
	 * listener's argument) goes over unless the new process's build
	 * cannot take it, whose reset then answers the peer's next segment */
	if (pcb->state == SYN_SENT || pcb->state == CLOSED || (pcb->state == SYN_RCVD && !half_open))
		return 0;
	if (pcb->state != TIME_WAIT && pcb->state != SYN_RCVD && s != NULL && !s->dead &&
	    !s->closed_by_app)
		return 0; /* the app's socket carries it */
	if (pcb->ext_args[w->extarg_id].callbacks == &active_extarg)
		im.owned_port = (uint16_t)(uintptr_t)pcb->ext_args[w->extarg_id].data;
	x->len = 0;
	r = tcp_blob_put(pcb, x, &plen);
	if (r == 0) {
		im.pcb_len = plen;
		dpsock_tko_buf_put(b, DPSOCK_TKO_R_PCB, &im, sizeof(im), x->p, x->len);
		r = b->err;
	}
	return r;
}

int
dpsock_tko_export_pcbs(struct dpsock_worker *w, struct dpsock_tko_buf *b, bool half_open)
{
	struct dpsock_tko_buf x = { 0 };
	struct tcp_pcb *pcb;
	int r = 0;

	for (pcb = tcp_active_pcbs; r == 0 && pcb != NULL; pcb = pcb->next)
		r = pcb_export_one(w, pcb, b, &x, half_open);
	for (pcb = tcp_tw_pcbs; r == 0 && pcb != NULL; pcb = pcb->next)
		r = pcb_export_one(w, pcb, b, &x, half_open);
	dpsock_tko_buf_free(&x);
	return r;
}

/* A peer's handshake again on its listener, restored before it (the
 * app's sockets come first), as tcp_listen_input and pcb_passive_open
 * left it: the listener's argument, admission's half-open count. The
 * listener that takes its SYNs here: of its address, else of any. None
 * (its program closed it meanwhile): the pcb goes, and the peer's next
 * segment gets the reset it would have got. */
static bool
half_open_restore(struct dpsock_worker *w, struct tcp_pcb *pcb)
{
	struct tcp_pcb_listen *l, *any = NULL;

	for (l = tcp_listen_pcbs.listen_pcbs; l != NULL; l = l->next) {
		if (l->local_port != pcb->local_port ||
		    !IP_ADDR_PCB_VERSION_MATCH(l, &pcb->local_ip))
			continue;
		if (ip_addr_cmp(&l->local_ip, &pcb->local_ip))
			break;
		if (ip_addr_isany(&l->local_ip) && any == NULL)
			any = l;
	}
	if (l == NULL)
		l = any;
	if (l == NULL || l->callback_arg == NULL) {
		dpsock_tcp_mig_release(pcb);
		return false;
	}
	pcb->listener = l;
	pcb->callback_arg = l->callback_arg;
	w->n_half_open++;
	tcp_ext_arg_set_callbacks(pcb, w->extarg_id, &half_open_extarg);
	tcp_ext_arg_set(pcb, w->extarg_id, HALF_OPEN);
	return true;
}

int
dpsock_tko_import_pcb(struct dpsock_worker *w, const void *data, size_t len)
{
	struct pcb_image im;
	struct tcp_pcb *pcb;
	int err = 0;

	if (len < sizeof(im))
		return -EINVAL;
	memcpy(&im, data, sizeof(im));
	if (im.magic != PCB_IMAGE_MAGIC || im.pcb_len != len - sizeof(im))
		return -EINVAL;
	pcb = tcp_import_pcb(w, (const unsigned char *)data + sizeof(im), im.pcb_len,
			     im.owned_port, &err);
	if (pcb == NULL)
		return err;
	/* 1: a peer's handshake, on its listener again */
	return pcb->state == SYN_RCVD && half_open_restore(w, pcb) ? 1 : 0;
}
