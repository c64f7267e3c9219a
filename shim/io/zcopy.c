/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * zcopy.c — the extra API's receive side (include/dpsock/extra.h):
 * zero-copy receive (recvfrom_zcopy, free_packets), receive callbacks, and
 * what the plain receive paths and readiness see of a socket whose data is
 * partly held.
 *
 * A slot's rx FIFO is consumed in order, but a program may hold data and
 * hand it back in any order. So the consumer index stays at the oldest
 * data still held, and what lies behind it is told apart:
 *
 *  - UDP: each datagram record carries its state in the shim's nibble of
 *    its header flags (abi/preload_wire.h, DPSOCK_PL_DGRAM_SHIM_*), in the
 *    FIFO itself: SEEN (the callback kept it), HELD (the program has it),
 *    DONE (consumed behind a held one). Readers walk from the consumer
 *    index past HELD and DONE records; whoever marks the oldest record
 *    DONE moves the consumer index past every DONE record that follows.
 *  - TCP: the stream has no records, so this process keeps the chunks it
 *    handed out (position, length, freed) in FIFO order; plain reads go on
 *    after the last chunk and are kept as already-freed chunks, and the
 *    consumer index moves when the oldest chunks are freed.
 *
 * Everything here runs under the slot's rx lock (the process-shared lock
 * of the plain paths), except the receive callback itself, which runs
 * with no lock held while its record is marked HELD.
 *
 * A packet's id: gen (10 low bits) << 54 | slot << 32 | FIFO position.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_priv.h"

#define XRX_TCP_CHUNKS 256u
#define SHIM_HELD DPSOCK_PL_DGRAM_SHIM_HELD
#define SHIM_DONE DPSOCK_PL_DGRAM_SHIM_DONE
#define SHIM_SEEN DPSOCK_PL_DGRAM_SHIM_SEEN
#define ID_SLOT_BITS 22u

struct xchunk {
	uint32_t pos, len;
	uint32_t freed;
};

struct shim_xrx {
	struct shim_sock *s;
	dpsock_recv_cb_t cb;      /* UDP receive callback, or NULL */
	void *cb_ctx;
	uint32_t held;            /* packets this process holds (atomic; dump_fd_stats) */
	uint32_t cb_pos[SHIM_MAX_WORKERS]; /* UDP: the callback ran up to here */
	/* TCP (slot 0), under its rx lock: chunks handed out, oldest first */
	uint32_t unread;          /* position after the newest chunk */
	uint32_t c_head, c_n;
	struct xchunk chunk[XRX_TCP_CHUNKS];
};

/* slot number -> the extra state of the socket holding it in this process
 * (free_packets finds a packet's socket through it) */
static struct shim_xrx **by_slot;
static uint32_t by_slot_n;
static pthread_mutex_t xrx_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t
pad8(uint32_t n)
{
	return (n + 7u) & ~7u;
}

static uint64_t
pkt_id(uint32_t slot, uint32_t gen, uint32_t pos)
{
	return (uint64_t)(gen & 0x3ffu) << (32 + ID_SLOT_BITS) | (uint64_t)slot << 32 | pos;
}

/* ---- the socket's extra state ---------------------------------------------------- */

struct shim_xrx *
shim_xrx_get(struct shim_sock *s)
{
	const struct dpsock_pl_seg *g = shim_seg();
	struct shim_xrx *x;

	/* acquire: pairs with the release below; a published state is whole */
	x = __atomic_load_n(&s->xrx, __ATOMIC_ACQUIRE);
	if (x != NULL)
		return x;
	pthread_mutex_lock(&xrx_lock);
	x = s->xrx;
	if (x == NULL && by_slot == NULL) {
		by_slot_n = g->n_workers * g->slots_per_worker;
		if (by_slot_n <= (1u << ID_SLOT_BITS))
			by_slot = calloc(by_slot_n, sizeof(*by_slot));
	}
	if (x == NULL && by_slot != NULL && (x = calloc(1, sizeof(*x))) != NULL) {
		x->s = s;
		for (uint32_t i = 0; i < s->nslots; i++) {
			const struct dpsock_spsc_hdr *h = shim_slot_rx(s->slot[i]);

			x->cb_pos[i] = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
			if (s->slot[i] < by_slot_n)
				__atomic_store_n(&by_slot[s->slot[i]], x, __ATOMIC_RELEASE);
		}
		/* release: the state above before the pointer that shows it */
		__atomic_store_n(&s->xrx, x, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&xrx_lock);
	if (x == NULL)
		errno = ENOMEM;
	return x;
}

void
shim_xrx_release(struct shim_sock *s)
{
	struct shim_xrx *x = s->xrx;

	if (x == NULL)
		return;
	pthread_mutex_lock(&xrx_lock);
	for (uint32_t i = 0; i < s->nslots; i++)
		if (s->slot[i] < by_slot_n && by_slot[s->slot[i]] == x)
			__atomic_store_n(&by_slot[s->slot[i]], NULL, __ATOMIC_RELEASE);
	s->xrx = NULL;
	pthread_mutex_unlock(&xrx_lock);
	free(x);
}

static int
cons_attach(struct shim_sock *s, uint32_t i, struct dpsock_fifo_cons *c)
{
	return shim_fifo_rx_attach(s->slot[i], c);
}

/* ---- UDP records ----------------------------------------------------------------- */

struct rec {
	uint32_t off;             /* from the consumer index */
	uint32_t whole;           /* header, IPv6 addresses, data, padding */
	uint32_t hl;              /* bytes before the data */
	struct shim_dgram d;
	uint16_t *flags;          /* the header's flags, in the FIFO */
};

/* len bytes at off (from the consumer index) into dst, across the wrap. */
static void
rec_copy(const struct dpsock_spsc_end *e, uint32_t off, void *dst, uint32_t len)
{
	uint32_t idx = (e->head + off - e->base) & e->mask, n1 = e->count - idx;

	if (n1 >= len) {
		memcpy(dst, e->data + idx, len);
	} else {
		memcpy(dst, e->data + idx, n1);
		memcpy((unsigned char *)dst + n1, e->data, len - n1);
	}
}

/* The record at off (a record boundary). 1; 0: none there; -EIO: a
 * record the daemon would never publish (short, oversized). Reads the
 * handle's window directly: records are 8-aligned and published whole, so
 * a header below the producer index has its whole record below it, and
 * the 2-byte flags never straddle the wrap. */
static int
rec_at(struct dpsock_fifo_cons *c, uint32_t off, struct rec *r)
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t used = e->cache - e->head;

	if (off >= used) {
		used = dpsock_spsc_cons_refresh(e);   /* more may have come */
		if (off >= used)
			return 0;
	}
	if (used - off < sizeof(r->d.h))
		return -EIO;
	rec_copy(e, off, &r->d.h, sizeof(r->d.h));
	if (r->d.h.len > DPSOCK_PL_DGRAM_MAX)
		return -EIO;
	r->hl = dpsock_pl_dgram_hlen(r->d.h.flags);
	r->whole = r->hl + pad8(r->d.h.len);
	if (used - off < r->whole)
		return -EIO;
	if (r->d.h.flags & DPSOCK_PL_DGRAM_IP6)
		rec_copy(e, off + (uint32_t)sizeof(r->d.h), &r->d.x, sizeof(r->d.x));
	r->flags = (uint16_t *)(void *)(e->data + ((e->head + off - e->base +
						      offsetof(struct dpsock_pl_dgram, flags)) & e->mask));
	r->off = off;
	return 1;
}

/* Walking the records is a chain of cache misses: each header gives the
 * place of the next, and the worker wrote them from another CPU. Guess
 * that the datagrams that follow are the size of this one and ask for the
 * header XRX_PREFETCH records on early (only below the producer index
 * already seen: a line the worker has yet to write would be taken from
 * it for nothing). */
#define XRX_PREFETCH 4u

static inline void
rec_prefetch(const struct dpsock_fifo_cons *c, uint32_t off)
{
	const struct dpsock_spsc_end *e = &c->e;

	if (off < e->cache - e->head)
		__builtin_prefetch(e->data + ((e->head + off - e->base) & e->mask));
}

/* ...and the start of each datagram handed out (the line of its header is
 * in already), DPSOCK_RX_PREFETCH_BYTES of it (256; VMA_RX_PREFETCH_BYTES):
 * a program that reads the data finds it on its way. All of a 1400-byte
 * datagram would make the programs that read only a header pay for the
 * rest (test/perf/udp_recv.sh drain, CPU ns per datagram: 8 bytes read
 * 201 with 256, 263 with all of it; every byte read 364 and 328). */
static inline void
rec_prefetch_data(const struct dpsock_fifo_cons *c, const struct rec *r)
{
	uint32_t n = (uint32_t)shim_env.rx_prefetch;

	for (uint32_t k = 64; k < n && k < r->whole; k += 64)
		rec_prefetch(c, r->off + k);
}

static void
rec_data(struct dpsock_fifo_cons *c, const struct rec *r, struct iovec seg[2])
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t idx = (e->head + r->off + r->hl - e->base) & e->mask;
	uint32_t n1 = e->count - idx;

	seg[0].iov_base = e->data + idx;
	seg[0].iov_len = r->d.h.len < n1 ? r->d.h.len : n1;
	seg[1].iov_base = e->data;
	seg[1].iov_len = r->d.h.len - seg[0].iov_len;
}

/* Consume every DONE record at the head. Returns the bytes consumed. */
static uint32_t
udp_advance(struct dpsock_fifo_cons *c)
{
	uint32_t n = 0;
	struct rec r;

	while (rec_at(c, 0, &r) == 1 && (*r.flags & SHIM_DONE)) {
		dpsock_fifo_read_consume(c, r.whole);
		n += r.whole;
	}
	return n;
}

/* A malformed FIFO: drop all of it (as shim_udp_recv does). */
static uint32_t
udp_bad(struct shim_sock *s, uint32_t i, struct dpsock_fifo_cons *c)
{
	struct iovec seg[2];
	uint32_t n = dpsock_fifo_read_peek(c, UINT32_MAX, seg);

	SHIM_LOG(WARNING, "bad datagram record in the rx FIFO of slot %u: dropped", s->slot[i]);
	dpsock_fifo_read_consume(c, n);
	return n;
}

static bool
udp_unwanted(const struct shim_sock *s, const struct rec *r)
{
	return shim_udp_unwanted(s, &r->d);
}

static void
fill_pkt(struct dpsock_zpkt *p, struct dpsock_fifo_cons *c, const struct rec *r, uint32_t slot,
	 uint32_t gen)
{
	rec_data(c, r, p->iov);
	p->id = pkt_id(slot, gen, c->e.head + r->off);
	p->len = r->d.h.len;
	p->n_iov = p->iov[1].iov_len ? 2 : 1;
	p->flags = 0;
	/* an IPv6 sender does not fit: AF_UNSPEC with its port (recvfrom
	 * names it) */
	p->from = (struct sockaddr_in){ .sin_family = r->d.h.flags & DPSOCK_PL_DGRAM_IP6 ?
						      AF_UNSPEC : AF_INET,
					.sin_addr.s_addr = r->d.h.addr, .sin_port = r->d.h.port };
}

/*
 * Run the callback over the datagrams of slot i it has not seen, a batch at
 * a time: under the lock, find the next ones and mark them HELD (readers
 * skip them, and the consumer index cannot pass them); without the lock,
 * call the callback on each; under the lock again, apply the verdicts. Two
 * lock rounds per batch rather than per datagram: the lock is a shared
 * atomic word, and the callback path must stay cheaper than recvfrom. Each
 * one counts as held from the moment it is marked, so that a callback that
 * frees an earlier HOLD of the same batch never takes the count below
 * zero.
 *
 * How far: until the callback has kept one and seen about as many as the
 * reader is about to take (want: their headers are still in the cache when
 * it takes them), or until it has seen every datagram that was there when
 * it started. Not stopping before a kept one matters: a reader told
 * "nothing" while unseen datagrams wait would sleep, and no new arrival
 * might come to wake it (the FIFO full of them, or the sender done).
 * Stopping at what was there at the start keeps a flood from holding the
 * reader here.
 */
#define CB_BATCH 32u

static void
udp_callbacks(struct shim_sock *s, struct shim_xrx *x, uint32_t i, unsigned int want)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
	unsigned int seen = 0, kept = 0;
	uint32_t end = 0;           /* the producer's position at the start */

	for (bool first = true;; first = false) {
		dpsock_recv_cb_t cb = x->cb;
		void *ctx = x->cb_ctx;
		enum dpsock_recv_verdict v[CB_BATCH];
		struct dpsock_zpkt pkt[CB_BATCH];
		uint16_t *fl[CB_BATCH];
		struct dpsock_fifo_cons c;
		uint32_t off, used, moved = 0, n = 0, released = 0;
		bool dropped = false;
		struct rec r;
		int e = 0;

		if (cb == NULL)
			return;
		shim_lock(shim_rx_lock(a));
		if (cons_attach(s, i, &c) != 0) {
			shim_unlock(shim_rx_lock(a));
			return;
		}
		used = dpsock_fifo_used(&c);
		if (first)
			end = c.e.head + used;
		off = x->cb_pos[i] - c.e.head;
		if (off > used)
			off = 0;   /* another process moved the FIFO on: start over */
		for (; n < CB_BATCH && (e = rec_at(&c, off, &r)) == 1; off += r.whole) {
			rec_prefetch(&c, off + XRX_PREFETCH * r.whole);
			if (*r.flags & DPSOCK_PL_DGRAM_SHIM_MASK)
				continue;
			if (udp_unwanted(s, &r)) {
				*r.flags = SHIM_DONE;
				continue;
			}
			*r.flags = SHIM_HELD;
			fl[n] = r.flags;
			fill_pkt(&pkt[n++], &c, &r, s->slot[i], s->gen[i]);
			rec_prefetch_data(&c, &r);
		}
		if (e < 0 && n == 0)
			moved = udp_bad(s, i, &c);
		x->cb_pos[i] = c.e.head + off;
		moved += udp_advance(&c);
		shim_unlock(shim_rx_lock(a));
		if (moved)
			shim_rx_kick(s, i);
		if (n == 0)
			return;
		__atomic_add_fetch(&x->held, n, __ATOMIC_RELAXED);

		for (uint32_t k = 0; k < n; k++)
			v[k] = cb(s->fd0, &pkt[k], ctx);

		/* the records cannot have moved: they are HELD */
		shim_lock(shim_rx_lock(a));
		for (uint32_t k = 0; k < n; k++) {
			if (v[k] == DPSOCK_RECV_HOLD)
				continue;
			*fl[k] = v[k] == DPSOCK_RECV_DROP ? SHIM_DONE : SHIM_SEEN;
			dropped |= v[k] == DPSOCK_RECV_DROP;
			kept += v[k] == DPSOCK_RECV_KEEP;
			released++;
		}
		moved = 0;
		if (dropped && cons_attach(s, i, &c) == 0)
			moved = udp_advance(&c);
		shim_unlock(shim_rx_lock(a));
		__atomic_sub_fetch(&x->held, released, __ATOMIC_RELAXED);
		if (moved)
			shim_rx_kick(s, i);
		seen += n;
		if (n < CB_BATCH || (kept > 0 && seen >= want) ||
		    (int32_t)(x->cb_pos[i] - end) >= 0)
			return;
	}
}

/* The first record a reader may take (caller holds the rx lock): 1 with *r;
 * 0 none; -EIO. Datagrams a connected socket does not take become DONE. */
static int
udp_first(struct shim_sock *s, struct shim_xrx *x, struct dpsock_fifo_cons *c, struct rec *r)
{
	int e;

	for (uint32_t off = 0; (e = rec_at(c, off, r)) == 1; off += r->whole) {
		uint16_t f = *r->flags;

		if (f & (SHIM_HELD | SHIM_DONE))
			continue;
		if (x->cb != NULL && !(f & SHIM_SEEN))
			return 0;   /* the callback has not seen it yet */
		if (udp_unwanted(s, r)) {
			*r->flags = SHIM_DONE;
			continue;
		}
		return 1;
	}
	return e;
}

bool
shim_xrx_udp_readable(struct shim_sock *s, uint32_t i)
{
	struct shim_xrx *x = s->xrx;
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
	struct dpsock_fifo_cons c;
	uint32_t moved = 0;
	struct rec r;
	int e = 0;

	if (x->cb != NULL)
		udp_callbacks(s, x, i, 1);
	shim_lock(shim_rx_lock(a));
	if (cons_attach(s, i, &c) == 0) {
		e = udp_first(s, x, &c, &r);
		if (e < 0)
			moved = udp_bad(s, i, &c);
		moved += udp_advance(&c);
	}
	shim_unlock(shim_rx_lock(a));
	if (moved)
		shim_rx_kick(s, i);
	return e == 1;
}

int
shim_xrx_udp_recv_slot(struct shim_sock *s, uint32_t i, const struct iovec *iov, int iovcnt,
		       int flags, struct shim_dgram *h, size_t *copied)
{
	struct shim_xrx *x = s->xrx;
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
	size_t total = shim_iov_total(iov, iovcnt);
	struct dpsock_fifo_cons c;
	struct iovec seg[2];
	uint32_t moved = 0;
	struct rec r;
	int e = 0;

	if (x->cb != NULL)
		udp_callbacks(s, x, i, 1);
	shim_lock(shim_rx_lock(a));
	if (cons_attach(s, i, &c) == 0) {
		e = udp_first(s, x, &c, &r);
		if (e < 0)
			moved = udp_bad(s, i, &c);
		if (e == 1) {
			*copied = r.d.h.len < total ? r.d.h.len : total;
			rec_data(&c, &r, seg);
			shim_iov_copy(iov, iovcnt, 0, seg, 2, 0, *copied);
			*h = r.d;
			if (!(flags & MSG_PEEK))
				*r.flags = SHIM_DONE;
		}
		moved += udp_advance(&c);
	}
	shim_unlock(shim_rx_lock(a));
	if (moved)
		shim_rx_kick(s, i);
	return e == 1;
}

/* Up to max readable datagrams of slot i, held. Returns the count. */
static unsigned int
udp_take(struct shim_sock *s, struct shim_xrx *x, uint32_t i, struct dpsock_zpkt *pkts,
	 unsigned int max)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
	struct dpsock_fifo_cons c;
	unsigned int n = 0;
	uint32_t moved = 0;
	struct rec r;
	int e = 0;

	if (x->cb != NULL)
		udp_callbacks(s, x, i, max);
	shim_lock(shim_rx_lock(a));
	if (cons_attach(s, i, &c) != 0) {
		shim_unlock(shim_rx_lock(a));
		return 0;
	}
	for (uint32_t off = 0; n < max && (e = rec_at(&c, off, &r)) == 1; off += r.whole) {
		uint16_t f = *r.flags;

		rec_prefetch(&c, off + XRX_PREFETCH * r.whole);
		if (f & (SHIM_HELD | SHIM_DONE))
			continue;
		if (x->cb != NULL && !(f & SHIM_SEEN))
			break;
		if (udp_unwanted(s, &r)) {
			*r.flags = SHIM_DONE;
			continue;
		}
		*r.flags = SHIM_HELD;
		fill_pkt(&pkts[n++], &c, &r, s->slot[i], s->gen[i]);
		rec_prefetch_data(&c, &r);
	}
	if (e < 0 && n == 0)
		moved = udp_bad(s, i, &c);
	moved += udp_advance(&c);
	shim_unlock(shim_rx_lock(a));
	if (moved)
		shim_rx_kick(s, i);
	__atomic_add_fetch(&x->held, n, __ATOMIC_RELAXED);
	return n;
}

/* Give back held datagrams of slot i, at positions pos[0..n) (a batch of
 * free_packets: one lock, one advance, one kick). Returns 0, or -EINVAL
 * when some position was not a held record (the others are freed). */
static int
udp_free(struct shim_sock *s, struct shim_xrx *x, uint32_t i, const uint32_t *pos, unsigned int n)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));
	struct dpsock_fifo_cons c;
	uint32_t moved = 0, freed = 0;
	int e = 0;

	shim_lock(shim_rx_lock(a));
	if (cons_attach(s, i, &c) != 0) {
		shim_unlock(shim_rx_lock(a));
		return -EINVAL;
	}
	/* walk to each one (an id that is not a record boundary is refused);
	 * a batch in FIFO order walks the FIFO once */
	for (uint32_t k = 0, off = 0; k < n; k++) {
		uint32_t target = pos[k] - c.e.head;
		struct rec r;
		bool found = false;

		if (target < off)
			off = 0;
		for (; off <= target && rec_at(&c, off, &r) == 1; off += r.whole)
			if (off == target) {
				if (*r.flags & SHIM_HELD) {
					*r.flags = SHIM_DONE;
					found = true;
					freed++;
				}
				break;
			}
		if (!found)
			e = -EINVAL;
	}
	moved = udp_advance(&c);
	shim_unlock(shim_rx_lock(a));
	if (moved)
		shim_rx_kick(s, i);
	__atomic_sub_fetch(&x->held, freed, __ATOMIC_RELAXED);
	return e;
}

/* ---- TCP chunks -------------------------------------------------------------------- */

bool
shim_xrx_tcp_holds_slow(const struct shim_sock *s)
{
	const struct shim_xrx *x = __atomic_load_n(&s->xrx, __ATOMIC_ACQUIRE);

	return x != NULL && __atomic_load_n(&x->c_n, __ATOMIC_RELAXED) > 0;
}

static struct xchunk *
chunk_at(struct shim_xrx *x, uint32_t k)
{
	return &x->chunk[(x->c_head + k) % XRX_TCP_CHUNKS];
}

/* Consume the freed chunks at the head (caller holds the lock). */
static uint32_t
tcp_advance(struct shim_xrx *x, struct dpsock_fifo_cons *c)
{
	uint32_t n = 0;

	while (x->c_n > 0 && chunk_at(x, 0)->freed) {
		n += chunk_at(x, 0)->len;
		x->c_head = (x->c_head + 1) % XRX_TCP_CHUNKS;
		__atomic_store_n(&x->c_n, x->c_n - 1, __ATOMIC_RELAXED);
	}
	if (n > 0)
		dpsock_fifo_read_consume(c, n);
	return n;
}

/* Record bytes [unread, unread + len) as a chunk; a freed one extends a
 * freed newest chunk. false: the ring is full. */
static bool
tcp_push(struct shim_xrx *x, uint32_t len, bool freed)
{
	if (freed && x->c_n > 0 && chunk_at(x, x->c_n - 1)->freed) {
		chunk_at(x, x->c_n - 1)->len += len;
	} else {
		if (x->c_n == XRX_TCP_CHUNKS)
			return false;
		*chunk_at(x, x->c_n) = (struct xchunk){ .pos = x->unread, .len = len, .freed = freed };
		__atomic_store_n(&x->c_n, x->c_n + 1, __ATOMIC_RELAXED);
	}
	x->unread += len;
	return true;
}

/* One chunk: every byte readable behind the held ones. 1, 0 none, -ENOMEM. */
static int
tcp_take(struct shim_sock *s, struct shim_xrx *x, struct dpsock_zpkt *p)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, 0));
	struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
	struct dpsock_fifo_cons c;
	uint32_t start, n;
	int r = 0;

	shim_lock(shim_rx_lock(a));
	if (cons_attach(s, 0, &c) == 0) {
		if (x->c_n == 0)
			x->unread = c.e.head;
		start = x->unread - c.e.head;
		n = dpsock_fifo_read_peek_at(&c, start, UINT32_MAX, p->iov);
		if (n > 0 && x->c_n < XRX_TCP_CHUNKS) {
			p->id = pkt_id(s->slot[0], s->gen[0], x->unread);
			p->len = n;
			p->n_iov = p->iov[1].iov_len ? 2 : 1;
			p->flags = 0;
			p->from = (struct sockaddr_in){ .sin_family = AF_INET,
							.sin_addr.s_addr = sl->raddr,
							.sin_port = sl->rport };
			tcp_push(x, n, false);
			r = 1;
		} else if (n > 0) {
			r = -ENOMEM;
		}
	}
	shim_unlock(shim_rx_lock(a));
	if (r == 1)
		__atomic_add_fetch(&x->held, 1, __ATOMIC_RELAXED);
	return r;
}

uint32_t
shim_xrx_tcp_read(struct shim_sock *s, const struct iovec *iov, int iovcnt, size_t off, size_t len,
		  int flags)
{
	struct shim_xrx *x = s->xrx;
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, 0));
	struct dpsock_fifo_cons c;
	struct iovec seg[2];
	uint32_t n = 0, moved = 0;

	shim_lock(shim_rx_lock(a));
	if (cons_attach(s, 0, &c) == 0) {
		if (x->c_n == 0)
			x->unread = c.e.head;   /* freed meanwhile: a plain read */
		n = dpsock_fifo_read_peek_at(&c, x->unread - c.e.head, len, seg);
		if (n > 0 && !(flags & MSG_PEEK) && !tcp_push(x, n, true))
			n = 0;   /* XRX_TCP_CHUNKS held apart from each other: free some */
		if (n > 0) {
			shim_iov_put(iov, iovcnt, off, seg[0].iov_base, seg[0].iov_len);
			shim_iov_put(iov, iovcnt, off + seg[0].iov_len, seg[1].iov_base, seg[1].iov_len);
		}
		moved = tcp_advance(x, &c);
	}
	shim_unlock(shim_rx_lock(a));
	if (moved)
		shim_rx_kick(s, 0);
	return n;
}

static int
tcp_free(struct shim_sock *s, struct shim_xrx *x, uint32_t pos)
{
	struct shim_slot_area *a = shim_area(shim_sock_slot(s, 0));
	struct dpsock_fifo_cons c;
	uint32_t moved = 0;
	int e = -EINVAL;

	shim_lock(shim_rx_lock(a));
	for (uint32_t k = 0; k < x->c_n; k++) {
		struct xchunk *ch = chunk_at(x, k);

		if (ch->pos == pos && !ch->freed) {
			ch->freed = 1;
			e = 0;
			break;
		}
	}
	if (e == 0 && cons_attach(s, 0, &c) == 0)
		moved = tcp_advance(x, &c);
	shim_unlock(shim_rx_lock(a));
	if (moved)
		shim_rx_kick(s, 0);
	if (e == 0)
		__atomic_sub_fetch(&x->held, 1, __ATOMIC_RELAXED);
	return e;
}

uint32_t
shim_rx_level(struct shim_sock *s, uint32_t i)
{
	const struct dpsock_pl_seg *g = shim_seg();
	struct shim_xrx *x = __atomic_load_n(&s->xrx, __ATOMIC_ACQUIRE);
	uint32_t p, c, n = shim_fifo_level_at(shim_slot_rx(s->slot[i]), g->rx_fifo_size, &p, &c);

	if (x != NULL && s->mode == SHIM_TCP_CONN && __atomic_load_n(&x->c_n, __ATOMIC_RELAXED) > 0) {
		uint32_t past = __atomic_load_n(&x->unread, __ATOMIC_RELAXED) - c;

		n = past > n ? 0 : n - past;
	}
	return n;
}

/* ---- the API --------------------------------------------------------------------- */

/* The socket behind fd for the extra API: offloaded, or -EBADF/-EOPNOTSUPP. */
static int
x_sock(int fd, struct shim_sock **out)
{
	struct shim_sock *s = fd >= 0 ? shim_sock_get(fd) : NULL;

	if (s == NULL)
		return -EBADF;
	if (!shim_sock_offloaded(s))
		return -EOPNOTSUPP;
	*out = s;
	return 0;
}

/* Take up to max packets from s without waiting: UDP over its slots from
 * the round-robin position, TCP one chunk. Returns the count or -errno. */
int
shim_xrx_take(struct shim_sock *s, struct dpsock_zpkt *pkts, unsigned int max)
{
	struct shim_xrx *x = shim_xrx_get(s);
	unsigned int n = 0;

	if (x == NULL)
		return -ENOMEM;
	if (s->mode == SHIM_TCP_CONN)
		return tcp_take(s, x, pkts);
	for (uint32_t j = 0; j < s->nslots && n < max; j++) {
		uint32_t i = (s->rr + j) % s->nslots;
		unsigned int got = udp_take(s, x, i, pkts + n, max - n);

		if (got > 0) {
			n += got;
			s->rr = i + 1;
			/* as shim_udp_recv: replies leave through the worker that received */
			__atomic_store_n(&s->udp_tx_worker, i, __ATOMIC_RELAXED);
		}
	}
	return (int)n;
}

int
shim_x_recvfrom_zcopy(int fd, struct dpsock_zpkt *pkts, unsigned int max, int flags)
{
	struct shim_sock *s;
	bool block;
	int r, w;

	if ((r = x_sock(fd, &s)) < 0)
		return r;
	if (pkts == NULL || max == 0 || (flags & ~MSG_DONTWAIT) || s->mode == SHIM_TCP_LISTEN)
		return -EINVAL;
	block = !s->nonblock && !(flags & MSG_DONTWAIT);
	for (;;) {
		struct dpsock_pl_slot *sl = shim_sock_slot(s, 0);
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (s->mode == SHIM_UDP || st != DPSOCK_PL_ST_CONNECTING) {
			r = shim_xrx_take(s, pkts, max);
			if (r != 0)
				return r;
		}
		if (s->mode == SHIM_TCP_CONN && st != DPSOCK_PL_ST_CONNECTING) {
			/* empty: as shim_tcp_recv, the flags after the FIFO (the
			 * worker publishes data before RD_EOF) */
			uint32_t fl = __atomic_load_n(&sl->flags, __ATOMIC_ACQUIRE);

			st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
			if ((fl & DPSOCK_PL_F_RD_EOF) || st == DPSOCK_PL_ST_CLOSED || s->shut_rd ||
			    shim_daemon_gone()) {
				if (shim_rx_level(s, 0) > 0)
					continue;
				if (shim_daemon_gone() && !s->err_taken) {
					s->err_taken = 1;
					return -ECONNRESET;
				}
				return -shim_conn_take_err(s);
			}
		} else if (s->mode == SHIM_UDP && shim_daemon_gone()) {
			shim_sock_gone_seen(s);
			return -ECONNRESET;
		}
		if (!block)
			return -EAGAIN;
		w = shim_wait_sock(s, POLLIN, s->rcvtimeo_ms);
		if (w == -EINTR)
			return -EINTR;
		if (w == 0)
			return -EAGAIN;   /* SO_RCVTIMEO */
	}
}

int
shim_x_free_packets(const struct dpsock_zpkt *pkts, unsigned int n)
{
	uint32_t run[64];
	int ret = 0;

	if (pkts == NULL && n > 0)
		return -EINVAL;
	for (unsigned int k = 0; k < n;) {
		uint64_t id = pkts[k].id;
		uint32_t slot = (uint32_t)(id >> 32) & ((1u << ID_SLOT_BITS) - 1);
		uint32_t gen = (uint32_t)(id >> (32 + ID_SLOT_BITS));
		struct shim_xrx *x = NULL;
		struct shim_sock *s = NULL;
		unsigned int m = 0;
		uint32_t i = 0;
		int e = -EINVAL;

		if (by_slot != NULL && slot < by_slot_n)
			/* acquire: pairs with the release in shim_xrx_get */
			x = __atomic_load_n(&by_slot[slot], __ATOMIC_ACQUIRE);
		if (x != NULL) {
			s = x->s;
			for (i = 0; i < s->nslots && s->slot[i] != slot; i++)
				;
			if (i == s->nslots || (s->gen[i] & 0x3ffu) != gen)
				x = NULL;
		}
		/* the run of ids of this slot that follows (a UDP batch) */
		do
			run[m++] = (uint32_t)pkts[k++].id;
		while (x != NULL && s->mode != SHIM_TCP_CONN && k < n && m < 64 &&
		       (pkts[k].id >> 32) == (id >> 32));
		if (x != NULL && s->mode == SHIM_TCP_CONN)
			e = tcp_free(s, x, run[0]);
		else if (x != NULL)
			e = udp_free(s, x, i, run, m);
		if (e < 0)
			ret = e;
	}
	return ret;
}

int
shim_x_register_recv_callback(int fd, dpsock_recv_cb_t cb, void *ctx)
{
	struct shim_sock *s;
	struct shim_xrx *x;
	int r;

	if ((r = x_sock(fd, &s)) < 0)
		return r;
	if (s->mode != SHIM_UDP)
		return -EPROTOTYPE;
	x = shim_xrx_get(s);
	if (x == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nslots; i++) {
		struct shim_slot_area *a = shim_area(shim_sock_slot(s, i));

		/* under each slot's lock: no callback runs half-changed */
		shim_lock(shim_rx_lock(a));
		if (i == 0) {
			x->cb_ctx = ctx;
			x->cb = cb;
		}
		shim_unlock(shim_rx_lock(a));
	}
	return 0;
}

unsigned int
shim_xrx_held(const struct shim_sock *s)
{
	const struct shim_xrx *x = __atomic_load_n(&s->xrx, __ATOMIC_ACQUIRE);

	return x != NULL ? __atomic_load_n(&x->held, __ATOMIC_RELAXED) : 0;
}

bool
shim_xrx_has_callback(const struct shim_sock *s)
{
	const struct shim_xrx *x = __atomic_load_n(&s->xrx, __ATOMIC_ACQUIRE);

	return x != NULL && x->cb != NULL;
}
