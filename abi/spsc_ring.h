/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spsc_ring.h — the hand-off between app threads and dpsockd workers
 * (docs/design.md, decision 4): a lock-free single-producer / single-consumer ring
 * of fixed-size elements (commands, events) and a byte FIFO (socket data),
 * both living in shared memory.
 *
 * Header only, plain C11 + GCC __atomic builtins: the preload shim includes
 * it and links neither DPDK nor lwIP.
 *
 * ---------------------------------------------------------------------------
 * Shape
 *
 * A ring is ONE contiguous region, position independent (no pointers in it;
 * each process maps it at its own address):
 *
 *     offset   0  header block: magic, version, elem_size, count  (read-only
 *                 after init)
 *     offset 128  producer block: prod, the producer's index, and
 *                 base                                            (128 B)
 *     offset 256  consumer block: cons, the consumer's index      (128 B)
 *     offset 384  count * elem_size bytes of slots (FIFO: size bytes of data)
 *
 * A FIFO's data may also live apart from its header (dpsock_fifo_init_hdr,
 * dpsock_fifo_*_attach_at): the preload segment keeps every socket's FIFO
 * headers together with its slot and the data in a sparse area of its own,
 * so that an idle socket holds no data page (preload_wire.h).
 *
 * Indices are free-running uint32_t counters (never masked in memory); the
 * slot of index i is i & (count - 1). count is a power of two <= 2^31, so
 * prod - cons (mod 2^32) is the number of entries in use and the ring holds
 * exactly `count` entries (no wasted slot). Each index has a 128-byte block
 * to itself: a whole cache line, plus the neighbouring line that Intel's
 * adjacent-line prefetcher pulls in pairs (DPDK's RTE_CACHE_GUARD idea), so
 * the producer writing prod never invalidates the consumer's line with cons.
 *
 * Each side works through a HANDLE in its own process-private memory
 * (struct dpsock_spsc_prod / _cons, struct dpsock_fifo_prod / _cons), made
 * by an attach call. The handle holds the local addresses, the geometry
 * (copied and checked once, at attach), the side's own index (the
 * authoritative copy: the shared one is only published, never read back)
 * and a cached copy of the other side's index. A side reads the other
 * side's shared index only when its cached view says there is not enough
 * room / not enough entries, so in steady state each side touches its own
 * block and the slots, and the two index lines do not ping-pong (the
 * cached-index refinement of Lamport's queue, as in MCRingBuffer;
 * rte_ring re-reads the other side's tail on every call instead). Keep each handle in memory its own thread owns
 * (its per-lcore / per-thread context), not next to the other side's
 * handle.
 *
 * The BASE: entry (FIFO: byte) i sits at slot (i - base) & (count - 1).
 * The producer moves base, and only when the ring is empty (a fresh load
 * of cons equals prod) and its next write would cross into another page:
 * it sets base = prod, so the write starts at slot 0 again. A ring or FIFO
 * that is drained between messages (request/response, a waiter's wake-up
 * list) thus keeps writing its first pages instead of walking through all
 * of its capacity, and the pages it touches follow what is in flight, not
 * its size (the preload segment's rings and FIFOs are sized for the worst
 * case and only touched pages cost memory); one that never drains wraps as
 * before.
 *
 * ---------------------------------------------------------------------------
 * Memory ordering (the whole argument)
 *
 * Producer:  write slots [head, head+n)          plain stores (memcpy)
 *            store-RELEASE prod = head + n       (P1)
 * Consumer:  load-ACQUIRE prod                   (C1, pairs with P1)
 *            read slots [tail, prod)             plain loads
 *            store-RELEASE cons = tail + m       (C2)
 * Producer:  load-ACQUIRE cons                   (P2, pairs with C2)
 *            overwrite slots below cons + count
 *
 * P1 -> C1: a consumer that sees prod = x sees every slot below x written
 *           (read-after-write).
 * C2 -> P2: a producer that sees cons = y knows every read of a slot below y
 *           happened before its own new writes to that slot (write-after-
 *           read: the consumer never sees an element overwritten under it).
 * Nothing else is shared. Each side's own index is private (no atomics to
 * read it); the cached copy of the other index is only ever a value that
 * was loaded with acquire (P2/C1), so anything it allows was synchronised.
 * The base is stored by the producer before P1 and loaded by the
 * consumer after C1, with the prod it goes with. It only changes while the
 * consumer has nothing to read (cons == prod, seen through P2), so the base
 * a consumer holds is the one of every byte it may still read: the
 * producer cannot move it until the consumer published, through C2, that
 * it read them all.
 * On x86 all four are plain MOVs (TSO) and the cost is only the compiler
 * barrier; on Arm they are LDAR/STLR.
 *
 * Sleeping without lost wake-ups (decision 5) is built on top, with the
 * same handshake dpsockd's workers use (docs/architecture.md):
 *   waiter:  store armed = 1; __atomic_thread_fence(__ATOMIC_SEQ_CST);
 *            if (!dpsock_spsc_cons_empty(c)) { armed = 0; retry; }  sleep
 *   poster:  enqueue (P1); __atomic_thread_fence(__ATOMIC_SEQ_CST);
 *            if (armed) write(eventfd)
 * The *_count / *_empty / *_free / *_used functions always load the other
 * index afresh (never the cache), which this handshake requires.
 *
 * ---------------------------------------------------------------------------
 * Hostile peers
 *
 * The shared region is writable by the other process, and a client may be
 * buggy or malicious: it can scribble anything anywhere in the region, at
 * any time. The guarantee: whatever a peer writes, the side using a handle
 * never reads or writes outside [mem, mem + bytes) and never loops forever.
 *  - Geometry (elem_size, count) is read once, at attach, and checked
 *    against the size of the mapping the caller passes in; after that, only
 *    the handle's private copy is used. Scribbling the header later changes
 *    nothing.
 *  - A side never reads back its own shared index; scribbling it only
 *    misleads the other side, which validates it (next point).
 *  - Every load of the other side's index is validated: the consumer
 *    accepts prod only in [last prod seen, own cons + count]; the producer
 *    accepts cons only in [last cons seen, own prod]. A value outside means
 *    the ring is corrupt: the handle's sticky corrupt flag is set, and from
 *    then on the ring looks empty to the consumer and full to the producer
 *    (every count is 0). dpsock_spsc_cons_corrupt() and friends report it;
 *    check them when an operation returns 0. The owner of the handle then
 *    drops the peer (dpsockd: disconnects the client).
 *  - Slot CONTENTS are the peer's to write, and may change while they are
 *    read: a consumer of an untrusted ring copies an element out
 *    (dequeue_*, not zero-copy) or reads each field once, then validates
 *    the copy. Offsets found in elements are checked by their user.
 * Memory safety holds because every slot access is (index & private mask)
 * * private elem_size, with lengths bounded by the validated counts.
 *
 * ---------------------------------------------------------------------------
 * Errors (CONVENTIONS.md): set-up functions return 0 or -errno; burst, bulk
 * and read/write functions return a count (0 when nothing moved, including
 * on a corrupt ring). Zero-copy "start/reserve/peek" calls are paired with
 * "finish/commit/consume" of at most the count they returned; with
 * DPSOCK_SPSC_DEBUG defined, violating that asserts.
 *
 * Names follow rte_ring: _burst moves as many as fit, _bulk all or nothing.
 */
#ifndef DPSOCK_ABI_SPSC_RING_H
#define DPSOCK_ABI_SPSC_RING_H

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#define DPSOCK_SPSC_CACHE_LINE  64u
#define DPSOCK_SPSC_BLOCK       128u    /* one index per block: line + guard line */
#define DPSOCK_SPSC_MAGIC       0x63737064u     /* "dpsc" little-endian */
#define DPSOCK_FIFO_MAGIC       0x66737064u     /* "dpsf" */
/* 2: the base (producer block); a FIFO's data apart from its header */
#define DPSOCK_SPSC_VERSION     2u
#define DPSOCK_SPSC_ELEM_MAX    1024u           /* bigger things go in a FIFO */
#define DPSOCK_SPSC_COUNT_MAX   (1u << 31)

#ifdef DPSOCK_SPSC_DEBUG
#define DPSOCK_SPSC_ASSERT(x) assert(x)
#else
#define DPSOCK_SPSC_ASSERT(x) do { } while (0)
#endif

/* The shared header, at the start of the region. Explicit padding, not
 * alignas: the region is only required to be cache-line aligned, and its
 * layout must not depend on the compiler. */
struct dpsock_spsc_hdr {
	/* header block: written by init, read by attach only */
	uint32_t magic;         /* DPSOCK_SPSC_MAGIC or DPSOCK_FIFO_MAGIC; stored last */
	uint32_t version;
	uint32_t elem_size;     /* bytes per slot; 1 for a FIFO */
	uint32_t count;         /* slots (FIFO: bytes), power of two */
	uint8_t pad0[DPSOCK_SPSC_BLOCK - 4 * sizeof(uint32_t)];
	/* producer block: written by the producer only */
	uint32_t prod;
	uint32_t base;          /* the index at slot (FIFO: data offset) 0 */
	uint8_t pad1[DPSOCK_SPSC_BLOCK - 2 * sizeof(uint32_t)];
	/* consumer block: written by the consumer only */
	uint32_t cons;
	uint8_t pad2[DPSOCK_SPSC_BLOCK - sizeof(uint32_t)];
	/* slots / data follow */
};

#define DPSOCK_SPSC_HDR_SIZE ((size_t)3 * DPSOCK_SPSC_BLOCK)

static_assert(sizeof(struct dpsock_spsc_hdr) == DPSOCK_SPSC_HDR_SIZE,
	      "spsc header: three blocks, no implicit padding");
static_assert(offsetof(struct dpsock_spsc_hdr, prod) % DPSOCK_SPSC_CACHE_LINE == 0,
	      "spsc header: prod starts a cache line");
static_assert(offsetof(struct dpsock_spsc_hdr, cons) % DPSOCK_SPSC_CACHE_LINE == 0,
	      "spsc header: cons starts a cache line");
static_assert(offsetof(struct dpsock_spsc_hdr, prod) - offsetof(struct dpsock_spsc_hdr, count)
		      >= DPSOCK_SPSC_CACHE_LINE,
	      "spsc header: geometry and prod on different lines");
static_assert(offsetof(struct dpsock_spsc_hdr, cons) - offsetof(struct dpsock_spsc_hdr, prod)
		      >= 2 * DPSOCK_SPSC_CACHE_LINE,
	      "spsc header: prod and cons a line pair apart (adjacent-line prefetch)");
static_assert(DPSOCK_SPSC_HDR_SIZE - offsetof(struct dpsock_spsc_hdr, cons)
		      >= 2 * DPSOCK_SPSC_CACHE_LINE,
	      "spsc header: cons a line pair away from the first slot");
static_assert(DPSOCK_SPSC_HDR_SIZE % DPSOCK_SPSC_BLOCK == 0,
	      "spsc header: slots start block-aligned");

/* One side's private view. Internal: use the typed handles below. */
struct dpsock_spsc_end {
	unsigned char *data;    /* first slot, in this process's mapping */
	uint32_t *own;          /* shared index this side publishes (never read) */
	const uint32_t *other;  /* shared index of the other side (validated) */
	uint32_t *base_shared;  /* the shared base */
	uint32_t count;         /* private copies of the geometry */
	uint32_t mask;
	uint32_t elem_size;
	uint32_t head;          /* own index: producer's prod / consumer's cons */
	uint32_t cache;         /* other side's index as last loaded and validated */
	uint32_t corrupt;       /* sticky: the other side's index was impossible */
	uint32_t base;          /* index at slot 0 (producer: its own;
				 * consumer: loaded with cache) */
};

/* Handles (process-private; one per side). Distinct types so that a
 * producer handle cannot be passed to a consumer call. */
struct dpsock_spsc_prod { struct dpsock_spsc_end e; };
struct dpsock_spsc_cons { struct dpsock_spsc_end e; };
struct dpsock_fifo_prod { struct dpsock_spsc_end e; };
struct dpsock_fifo_cons { struct dpsock_spsc_end e; };

/* Zero-copy window over slots, as rte_ring_zc_data: n1 slots at ptr1, the
 * rest (n - n1) at ptr2 (the start of the slot array) when it wraps. */
struct dpsock_spsc_zc {
	void *ptr1;
	uint32_t n1;
	void *ptr2;
};

/* ======================================================================== */
/* Internal helpers                                                          */
/* ======================================================================== */

static inline bool
dpsock_spsc_is_pow2(uint32_t x)
{
	return x != 0 && (x & (x - 1)) == 0;
}

static inline ssize_t
dpsock_spsc_region_size(uint32_t elem_size, uint32_t count)
{
	if (!dpsock_spsc_is_pow2(count) || count > DPSOCK_SPSC_COUNT_MAX)
		return -EINVAL;
	return (ssize_t)(DPSOCK_SPSC_HDR_SIZE + (size_t)elem_size * count);
}

static inline int
dpsock_spsc_region_init(void *mem, size_t bytes, uint32_t magic,
			uint32_t elem_size, uint32_t count)
{
	struct dpsock_spsc_hdr *h = mem;
	ssize_t need = dpsock_spsc_region_size(elem_size, count);

	if (mem == NULL || need < 0 || bytes < (size_t)need ||
	    ((uintptr_t)mem & (DPSOCK_SPSC_CACHE_LINE - 1)) != 0)
		return -EINVAL;
	/* the header only: the data may be mapped apart (and stay untouched) */
	memset(h, 0, DPSOCK_SPSC_HDR_SIZE);
	h->version = DPSOCK_SPSC_VERSION;
	h->elem_size = elem_size;
	h->count = count;
	/* release: publishes the geometry and zeroed indices written above to
	 * the acquire load of magic in dpsock_spsc_end_attach (same process;
	 * across processes the attach message over the unix socket orders it
	 * anyway). */
	__atomic_store_n(&h->magic, magic, __ATOMIC_RELEASE);
	return 0;
}

/* Attach one side. Geometry is loaded once into locals, checked against the
 * caller's mapping size, and only the private copies are used afterwards. */
static inline int
dpsock_spsc_end_attach(struct dpsock_spsc_end *e, void *mem, size_t bytes,
		       uint32_t magic, bool producer, unsigned char *data, size_t data_bytes)
{
	struct dpsock_spsc_hdr *h = mem;
	uint32_t m, ver, esize, count, prod, cons;
	ssize_t need;

	if (e == NULL)
		return -EINVAL;
	/* On failure the handle is left dead (count 0, corrupt): a caller that
	 * ignores the error moves nothing and touches no memory. */
	memset(e, 0, sizeof(*e));
	e->corrupt = 1;
	if (mem == NULL || bytes < DPSOCK_SPSC_HDR_SIZE ||
	    ((uintptr_t)mem & (DPSOCK_SPSC_CACHE_LINE - 1)) != 0 ||
	    (data != NULL && magic != DPSOCK_FIFO_MAGIC))
		return -EINVAL;
	/* acquire: pairs with the release store of magic in
	 * dpsock_spsc_region_init; the geometry below is the one it wrote. */
	m = __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE);
	/* relaxed: each field is read exactly once; a peer changing them
	 * concurrently gets a consistent private snapshot checked below. */
	ver = __atomic_load_n(&h->version, __ATOMIC_RELAXED);
	esize = __atomic_load_n(&h->elem_size, __ATOMIC_RELAXED);
	count = __atomic_load_n(&h->count, __ATOMIC_RELAXED);
	if (m != magic || ver != DPSOCK_SPSC_VERSION)
		return -EINVAL;
	if (magic == DPSOCK_FIFO_MAGIC ? esize != 1 :
	    (esize < 8 || esize > DPSOCK_SPSC_ELEM_MAX || esize % 8 != 0))
		return -EINVAL;
	need = dpsock_spsc_region_size(esize, count);
	if (need < 0 || (data == NULL ? (size_t)need > bytes : (size_t)count > data_bytes))
		return -EINVAL;
	/* acquire (both): pairs with the other side's release stores (P1/C2),
	 * so a side re-attaching after the peer has moved (fork, restart)
	 * starts from a synchronised view. */
	prod = __atomic_load_n(&h->prod, __ATOMIC_ACQUIRE);
	cons = __atomic_load_n(&h->cons, __ATOMIC_ACQUIRE);
	if ((uint32_t)(prod - cons) > count)
		return -EIO;
	e->data = data != NULL ? data : (unsigned char *)mem + DPSOCK_SPSC_HDR_SIZE;
	e->own = producer ? &h->prod : &h->cons;
	e->other = producer ? &h->cons : &h->prod;
	e->base_shared = &h->base;
	/* relaxed, after the acquire loads above: the base of the entries
	 * below prod (the consumer's argument: see "Memory ordering") */
	e->base = __atomic_load_n(&h->base, __ATOMIC_RELAXED);
	e->count = count;
	e->mask = count - 1;
	e->elem_size = esize;
	e->head = producer ? prod : cons;
	e->cache = producer ? cons : prod;
	e->corrupt = 0;
	return 0;
}

/* Mark the ring corrupt and make every fast-path check fail: producer and
 * consumer both see 0 available from their cached views. */
static inline uint32_t
dpsock_spsc_end_set_corrupt(struct dpsock_spsc_end *e, bool producer)
{
	e->corrupt = 1;
	e->cache = producer ? e->head - e->count : e->head;
	return 0;
}

/* Producer: free slots according to a fresh, validated load of cons. */
static inline uint32_t
dpsock_spsc_prod_refresh(struct dpsock_spsc_end *e)
{
	uint32_t c;

	if (e->corrupt)
		return 0;
	/* acquire (P2): pairs with the consumer's release store of cons in
	 * dpsock_spsc_cons_publish (C2); the consumer's reads of every slot
	 * below c happened before we overwrite them. */
	c = __atomic_load_n(e->other, __ATOMIC_ACQUIRE);
	/* A consumer only moves forward and never passes the producer:
	 * c must lie in [last cons seen, head]. */
	if ((uint32_t)(c - e->cache) > (uint32_t)(e->head - e->cache))
		return dpsock_spsc_end_set_corrupt(e, true);
	e->cache = c;
	return e->count - (e->head - c);
}

/* Producer: at least `want` free slots if there are that many; cached view
 * first, shared index only when the cache is short. */
static inline uint32_t
dpsock_spsc_prod_room(struct dpsock_spsc_end *e, uint32_t want)
{
	uint32_t room = e->count - (e->head - e->cache);

	if (room >= want)
		return room;
	return dpsock_spsc_prod_refresh(e);
}

/* Bytes of a page: the producer rebases (see "The BASE") when a write
 * would cross into another page of this size. */
#define DPSOCK_SPSC_PAGE 4096u

/* Producer, before writing n entries: an empty ring whose write would
 * cross into another page starts again at slot 0. One fresh load of cons
 * per page crossed, none within a page. */
static inline void
dpsock_spsc_prod_rebase(struct dpsock_spsc_end *e, uint32_t n)
{
	size_t off = (size_t)((e->head - e->base) & e->mask) * e->elem_size;

	if (off == 0 || e->corrupt ||
	    off / DPSOCK_SPSC_PAGE == (off + (size_t)n * e->elem_size - 1) / DPSOCK_SPSC_PAGE ||
	    dpsock_spsc_prod_refresh(e) != e->count)
		return;
	e->base = e->head;
	/* relaxed: published by the release store of prod (P1) that follows
	 * the write; until then the consumer has nothing to read with it */
	__atomic_store_n(e->base_shared, e->base, __ATOMIC_RELAXED);
}

static inline void
dpsock_spsc_prod_publish(struct dpsock_spsc_end *e, uint32_t n)
{
	e->head += n;
	/* release (P1): publishes the slots written above (and by the caller,
	 * for zero-copy) to the consumer's acquire load of prod in
	 * dpsock_spsc_cons_refresh (C1). */
	__atomic_store_n(e->own, e->head, __ATOMIC_RELEASE);
}

/* Consumer: entries ready according to a fresh, validated load of prod. */
static inline uint32_t
dpsock_spsc_cons_refresh(struct dpsock_spsc_end *e)
{
	uint32_t p;

	if (e->corrupt)
		return 0;
	/* acquire (C1): pairs with the producer's release store of prod in
	 * dpsock_spsc_prod_publish (P1); every slot below p is written. */
	p = __atomic_load_n(e->other, __ATOMIC_ACQUIRE);
	/* A producer only moves forward and never gets more than count
	 * ahead of us: p must lie in [last prod seen, head + count]. */
	if ((uint32_t)(p - e->cache) > e->count - (uint32_t)(e->cache - e->head))
		return dpsock_spsc_end_set_corrupt(e, false);
	e->cache = p;
	/* relaxed, after C1: stored before the P1 that published p */
	e->base = __atomic_load_n(e->base_shared, __ATOMIC_RELAXED);
	return p - e->head;
}

static inline uint32_t
dpsock_spsc_cons_avail(struct dpsock_spsc_end *e, uint32_t want)
{
	uint32_t avail = e->cache - e->head;

	if (avail >= want)
		return avail;
	return dpsock_spsc_cons_refresh(e);
}

static inline void
dpsock_spsc_cons_publish(struct dpsock_spsc_end *e, uint32_t n)
{
	e->head += n;
	/* release (C2): orders our reads of the slots consumed above (and by
	 * the caller, for zero-copy) before the producer's acquire load of
	 * cons in dpsock_spsc_prod_refresh (P2) lets it overwrite them. */
	__atomic_store_n(e->own, e->head, __ATOMIC_RELEASE);
}

/* Copy n entries into the ring at index `at` (may wrap once). `small` (a
 * constant at each call site): slot rings copy a single 8-byte element (the
 * common command size) inline rather than through a call to memcpy. */
static inline void
dpsock_spsc_put(struct dpsock_spsc_end *e, uint32_t at, const void *src, uint32_t n,
		bool small)
{
	size_t es = e->elem_size;
	uint32_t idx = (at - e->base) & e->mask;
	uint32_t n1 = e->count - idx < n ? e->count - idx : n;

	if (small && n1 * es == 8) {
		uint64_t v;

		memcpy(&v, src, 8);
		memcpy(e->data + idx * es, &v, 8);
	} else {
		memcpy(e->data + idx * es, src, n1 * es);
	}
	if (n1 < n)
		memcpy(e->data, (const unsigned char *)src + n1 * es, (n - n1) * es);
}

static inline void
dpsock_spsc_get(struct dpsock_spsc_end *e, uint32_t at, void *dst, uint32_t n,
		bool small)
{
	size_t es = e->elem_size;
	uint32_t idx = (at - e->base) & e->mask;
	uint32_t n1 = e->count - idx < n ? e->count - idx : n;

	if (small && n1 * es == 8) {
		uint64_t v;

		memcpy(&v, e->data + idx * es, 8);
		memcpy(dst, &v, 8);
	} else {
		memcpy(dst, e->data + idx * es, n1 * es);
	}
	if (n1 < n)
		memcpy((unsigned char *)dst + n1 * es, e->data, (n - n1) * es);
}

/* Window of n entries starting at index `at`, split at the wrap. */
static inline void
dpsock_spsc_window(struct dpsock_spsc_end *e, uint32_t at, uint32_t n,
		   void **p1, uint32_t *n1, void **p2)
{
	uint32_t idx = n ? (at - e->base) & e->mask : 0; /* n == 0: no arithmetic on a dead handle's NULL */

	*p1 = idx ? e->data + (size_t)idx * e->elem_size : e->data;
	*n1 = e->count - idx < n ? e->count - idx : n;
	*p2 = e->data;
}

/* ======================================================================== */
/* Slot ring                                                                 */
/* ======================================================================== */

/* Bytes needed for a ring of `count` elements of `elem_size` bytes.
 * Returns the size, or -EINVAL: elem_size not a multiple of 8 in
 * [8, DPSOCK_SPSC_ELEM_MAX], or count not a power of two in [1, 2^31]. */
static inline ssize_t
dpsock_spsc_memsize(uint32_t elem_size, uint32_t count)
{
	if (elem_size < 8 || elem_size > DPSOCK_SPSC_ELEM_MAX || elem_size % 8 != 0)
		return -EINVAL;
	return dpsock_spsc_region_size(elem_size, count);
}

/* Format `bytes` bytes at `mem` (cache-line aligned) as an empty ring.
 * Called once, by whoever creates the region, before either side attaches.
 * Returns 0, or -EINVAL: mem NULL or not 64-byte aligned, bad elem_size or
 * count (see dpsock_spsc_memsize), or bytes < dpsock_spsc_memsize(). */
static inline int
dpsock_spsc_init(void *mem, size_t bytes, uint32_t elem_size, uint32_t count)
{
	if (dpsock_spsc_memsize(elem_size, count) < 0)
		return -EINVAL;
	return dpsock_spsc_region_init(mem, bytes, DPSOCK_SPSC_MAGIC, elem_size, count);
}

/* Make a producer / consumer handle for the ring at `mem`, of which the
 * caller has `bytes` bytes mapped. At most one producer and one consumer
 * handle may be in use at a time (across all processes).
 * Returns 0; -EINVAL: NULL argument, mem not 64-byte aligned, not a slot
 * ring (magic, version), geometry invalid or larger than `bytes`;
 * -EIO: the shared indices are inconsistent (prod - cons > count). */
static inline int
dpsock_spsc_prod_attach(struct dpsock_spsc_prod *p, void *mem, size_t bytes)
{
	return dpsock_spsc_end_attach(p ? &p->e : NULL, mem, bytes, DPSOCK_SPSC_MAGIC, true, NULL, 0);
}

static inline int
dpsock_spsc_cons_attach(struct dpsock_spsc_cons *c, void *mem, size_t bytes)
{
	return dpsock_spsc_end_attach(c ? &c->e : NULL, mem, bytes, DPSOCK_SPSC_MAGIC, false, NULL, 0);
}

/* Geometry, from the handle's private copy. */
static inline uint32_t
dpsock_spsc_prod_capacity(const struct dpsock_spsc_prod *p) { return p->e.count; }
static inline uint32_t
dpsock_spsc_cons_capacity(const struct dpsock_spsc_cons *c) { return c->e.count; }
static inline uint32_t
dpsock_spsc_prod_elem_size(const struct dpsock_spsc_prod *p) { return p->e.elem_size; }
static inline uint32_t
dpsock_spsc_cons_elem_size(const struct dpsock_spsc_cons *c) { return c->e.elem_size; }

/* True once the other side has published an impossible index (hostile or
 * broken peer). Sticky; the ring then looks full / empty forever. */
static inline bool
dpsock_spsc_prod_corrupt(const struct dpsock_spsc_prod *p) { return p->e.corrupt != 0; }
static inline bool
dpsock_spsc_cons_corrupt(const struct dpsock_spsc_cons *c) { return c->e.corrupt != 0; }

/* Free slots (producer) / ready entries (consumer), from a fresh load of
 * the other side's index. 0 when corrupt. */
static inline uint32_t
dpsock_spsc_prod_free_count(struct dpsock_spsc_prod *p) { return dpsock_spsc_prod_refresh(&p->e); }
static inline bool
dpsock_spsc_prod_full(struct dpsock_spsc_prod *p) { return dpsock_spsc_prod_refresh(&p->e) == 0; }
static inline uint32_t
dpsock_spsc_cons_count(struct dpsock_spsc_cons *c) { return dpsock_spsc_cons_refresh(&c->e); }
static inline bool
dpsock_spsc_cons_empty(struct dpsock_spsc_cons *c) { return dpsock_spsc_cons_refresh(&c->e) == 0; }

/* Entries in use as seen by an observer holding neither side (stats):
 * relaxed loads of both indices, clamped to [0, count]. Approximate. */
static inline uint32_t
dpsock_spsc_observe_count(const void *mem, uint32_t count)
{
	const struct dpsock_spsc_hdr *h = mem;
	/* relaxed: a monitoring snapshot; synchronises nothing. */
	uint32_t p = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
	uint32_t c = __atomic_load_n(&h->cons, __ATOMIC_RELAXED);

	return (uint32_t)(p - c) > count ? count : p - c;
}

/* Enqueue up to n elements from obj (n * elem_size bytes, contiguous).
 * Returns the number enqueued (0 if full or corrupt). */
static inline unsigned int
dpsock_spsc_enqueue_burst(struct dpsock_spsc_prod *p, const void *obj, unsigned int n)
{
	struct dpsock_spsc_end *e = &p->e;
	uint32_t room;

	if (n == 0)
		return 0;
	dpsock_spsc_prod_rebase(e, n);
	room = dpsock_spsc_prod_room(e, n);
	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	dpsock_spsc_put(e, e->head, obj, n, true);
	dpsock_spsc_prod_publish(e, n);
	return n;
}

/* Enqueue all n elements or none. Returns n or 0. */
static inline unsigned int
dpsock_spsc_enqueue_bulk(struct dpsock_spsc_prod *p, const void *obj, unsigned int n)
{
	struct dpsock_spsc_end *e = &p->e;

	if (n == 0)
		return 0;
	dpsock_spsc_prod_rebase(e, n);
	if (dpsock_spsc_prod_room(e, n) < n)
		return 0;
	dpsock_spsc_put(e, e->head, obj, n, true);
	dpsock_spsc_prod_publish(e, n);
	return n;
}

/* Dequeue up to n elements into obj (room for n * elem_size bytes).
 * Returns the number dequeued (0 if empty or corrupt). */
static inline unsigned int
dpsock_spsc_dequeue_burst(struct dpsock_spsc_cons *c, void *obj, unsigned int n)
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t avail;

	if (n == 0)
		return 0;
	avail = dpsock_spsc_cons_avail(e, n);
	if (n > avail)
		n = avail;
	if (n == 0)
		return 0;
	dpsock_spsc_get(e, e->head, obj, n, true);
	dpsock_spsc_cons_publish(e, n);
	return n;
}

/* Dequeue all n elements or none. Returns n or 0. */
static inline unsigned int
dpsock_spsc_dequeue_bulk(struct dpsock_spsc_cons *c, void *obj, unsigned int n)
{
	struct dpsock_spsc_end *e = &c->e;

	if (n == 0 || dpsock_spsc_cons_avail(e, n) < n)
		return 0;
	dpsock_spsc_get(e, e->head, obj, n, true);
	dpsock_spsc_cons_publish(e, n);
	return n;
}

/* Zero-copy enqueue: reserve up to n free slots (burst) or exactly n
 * (bulk), described by *zc; the caller writes them in place and calls
 * dpsock_spsc_enqueue_zc_finish with how many it filled (<= the returned
 * count; the first ones). Returns the number of slots reserved. */
static inline unsigned int
dpsock_spsc_enqueue_zc_burst_start(struct dpsock_spsc_prod *p, unsigned int n,
				   struct dpsock_spsc_zc *zc)
{
	struct dpsock_spsc_end *e = &p->e;
	uint32_t room;

	if (n)
		dpsock_spsc_prod_rebase(e, n);
	room = n ? dpsock_spsc_prod_room(e, n) : 0;
	if (n > room)
		n = room;
	dpsock_spsc_window(e, e->head, n, &zc->ptr1, &zc->n1, &zc->ptr2);
	return n;
}

static inline unsigned int
dpsock_spsc_enqueue_zc_bulk_start(struct dpsock_spsc_prod *p, unsigned int n,
				  struct dpsock_spsc_zc *zc)
{
	struct dpsock_spsc_end *e = &p->e;

	if (n)
		dpsock_spsc_prod_rebase(e, n);
	if (n == 0 || dpsock_spsc_prod_room(e, n) < n)
		n = 0;
	dpsock_spsc_window(e, e->head, n, &zc->ptr1, &zc->n1, &zc->ptr2);
	return n;
}

static inline void
dpsock_spsc_enqueue_zc_finish(struct dpsock_spsc_prod *p, unsigned int n)
{
	DPSOCK_SPSC_ASSERT(n <= p->e.count - (p->e.head - p->e.cache));
	if (n)
		dpsock_spsc_prod_publish(&p->e, n);
}

/* Zero-copy dequeue: up to n ready entries (burst) or exactly n (bulk) in
 * place; the caller reads them and calls dpsock_spsc_dequeue_zc_finish with
 * how many it consumed (<= the returned count). The entries may still be
 * changed by a hostile producer while read: see "Hostile peers". */
static inline unsigned int
dpsock_spsc_dequeue_zc_burst_start(struct dpsock_spsc_cons *c, unsigned int n,
				   struct dpsock_spsc_zc *zc)
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t avail = n ? dpsock_spsc_cons_avail(e, n) : 0;

	if (n > avail)
		n = avail;
	dpsock_spsc_window(e, e->head, n, &zc->ptr1, &zc->n1, &zc->ptr2);
	return n;
}

static inline unsigned int
dpsock_spsc_dequeue_zc_bulk_start(struct dpsock_spsc_cons *c, unsigned int n,
				  struct dpsock_spsc_zc *zc)
{
	struct dpsock_spsc_end *e = &c->e;

	if (n == 0 || dpsock_spsc_cons_avail(e, n) < n)
		n = 0;
	dpsock_spsc_window(e, e->head, n, &zc->ptr1, &zc->n1, &zc->ptr2);
	return n;
}

static inline void
dpsock_spsc_dequeue_zc_finish(struct dpsock_spsc_cons *c, unsigned int n)
{
	DPSOCK_SPSC_ASSERT(n <= c->e.cache - c->e.head);
	if (n)
		dpsock_spsc_cons_publish(&c->e, n);
}

/* ======================================================================== */
/* Byte FIFO                                                                 */
/* ======================================================================== */

/* Bytes needed for a FIFO of `size` data bytes. Returns the size, or
 * -EINVAL: size not a power of two in [1, 2^31]. */
static inline ssize_t
dpsock_fifo_memsize(uint32_t size)
{
	return dpsock_spsc_region_size(1, size);
}

/* Format `bytes` bytes at `mem` (cache-line aligned) as an empty FIFO.
 * Returns 0, or -EINVAL: mem NULL or not 64-byte aligned, bad size, or
 * bytes < dpsock_fifo_memsize(size). */
static inline int
dpsock_fifo_init(void *mem, size_t bytes, uint32_t size)
{
	return dpsock_spsc_region_init(mem, bytes, DPSOCK_FIFO_MAGIC, 1, size);
}

/* Handles, as dpsock_spsc_*_attach. Returns 0; -EINVAL: NULL argument,
 * misaligned, not a FIFO, size invalid or larger than `bytes`; -EIO:
 * inconsistent indices. */
static inline int
dpsock_fifo_prod_attach(struct dpsock_fifo_prod *p, void *mem, size_t bytes)
{
	return dpsock_spsc_end_attach(p ? &p->e : NULL, mem, bytes, DPSOCK_FIFO_MAGIC, true, NULL, 0);
}

static inline int
dpsock_fifo_cons_attach(struct dpsock_fifo_cons *c, void *mem, size_t bytes)
{
	return dpsock_spsc_end_attach(c ? &c->e : NULL, mem, bytes, DPSOCK_FIFO_MAGIC, false, NULL, 0);
}

/* A FIFO whose data lives apart from its header: `hdr` holds the
 * DPSOCK_SPSC_HDR_SIZE-byte header (cache-line aligned), `data` the `size`
 * data bytes. dpsock_fifo_init_hdr formats the header alone (the data is
 * not touched); the attach calls check that the size the header gives
 * fits `data_bytes`. Errors as dpsock_fifo_init / dpsock_fifo_*_attach. */
static inline int
dpsock_fifo_init_hdr(void *hdr, uint32_t size)
{
	return dpsock_spsc_region_init(hdr, DPSOCK_SPSC_HDR_SIZE + (size_t)size,
				       DPSOCK_FIFO_MAGIC, 1, size);
}

static inline int
dpsock_fifo_prod_attach_at(struct dpsock_fifo_prod *p, void *hdr, void *data, size_t data_bytes)
{
	if (data == NULL)
		return -EINVAL;
	return dpsock_spsc_end_attach(p ? &p->e : NULL, hdr, DPSOCK_SPSC_HDR_SIZE, DPSOCK_FIFO_MAGIC,
				      true, (unsigned char *)data, data_bytes);
}

static inline int
dpsock_fifo_cons_attach_at(struct dpsock_fifo_cons *c, void *hdr, void *data, size_t data_bytes)
{
	if (data == NULL)
		return -EINVAL;
	return dpsock_spsc_end_attach(c ? &c->e : NULL, hdr, DPSOCK_SPSC_HDR_SIZE, DPSOCK_FIFO_MAGIC,
				      false, (unsigned char *)data, data_bytes);
}

static inline uint32_t
dpsock_fifo_prod_size(const struct dpsock_fifo_prod *p) { return p->e.count; }
static inline uint32_t
dpsock_fifo_cons_size(const struct dpsock_fifo_cons *c) { return c->e.count; }
static inline bool
dpsock_fifo_prod_corrupt(const struct dpsock_fifo_prod *p) { return p->e.corrupt != 0; }
static inline bool
dpsock_fifo_cons_corrupt(const struct dpsock_fifo_cons *c) { return c->e.corrupt != 0; }

/* Free bytes (producer) / bytes ready (consumer), from a fresh load of the
 * other side's index. 0 when corrupt. */
static inline uint32_t
dpsock_fifo_free(struct dpsock_fifo_prod *p) { return dpsock_spsc_prod_refresh(&p->e); }
static inline uint32_t
dpsock_fifo_used(struct dpsock_fifo_cons *c) { return dpsock_spsc_cons_refresh(&c->e); }

/* Bytes written but not yet consumed, seen from the producer (SIOCOUTQ):
 * from the cached consumer index, so an upper bound; no shared access. */
static inline uint32_t
dpsock_fifo_prod_unread(const struct dpsock_fifo_prod *p) { return p->e.head - p->e.cache; }

#define DPSOCK_FIFO_PAGE DPSOCK_SPSC_PAGE

/* The stream position at data offset 0, and a data offset, as a side sees
 * them (the daemon's reclaim of a FIFO's pages). */
static inline uint32_t
dpsock_fifo_prod_offset(const struct dpsock_fifo_prod *p, uint32_t pos)
{
	return (pos - p->e.base) & p->e.mask;
}

static inline uint32_t
dpsock_fifo_cons_offset(const struct dpsock_fifo_cons *c, uint32_t pos)
{
	return (pos - c->e.base) & c->e.mask;
}

/* Write up to len bytes. Returns the number written (0: full or corrupt). */
static inline size_t
dpsock_fifo_write(struct dpsock_fifo_prod *p, const void *buf, size_t len)
{
	struct dpsock_spsc_end *e = &p->e;
	uint32_t n = len > e->count ? e->count : (uint32_t)len;
	uint32_t room;

	if (n == 0)
		return 0;
	dpsock_spsc_prod_rebase(e, n);
	room = dpsock_spsc_prod_room(e, n);
	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	dpsock_spsc_put(e, e->head, buf, n, false);
	dpsock_spsc_prod_publish(e, n);
	return n;
}

/* Read up to len bytes. Returns the number read (0: empty or corrupt). */
static inline size_t
dpsock_fifo_read(struct dpsock_fifo_cons *c, void *buf, size_t len)
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t n = len > e->count ? e->count : (uint32_t)len;
	uint32_t avail;

	if (n == 0)
		return 0;
	avail = dpsock_spsc_cons_avail(e, n);
	if (n > avail)
		n = avail;
	if (n == 0)
		return 0;
	dpsock_spsc_get(e, e->head, buf, n, false);
	dpsock_spsc_cons_publish(e, n);
	return n;
}

/* Zero-copy write: describe up to len free bytes as one or two segments
 * (iov[1].iov_len is 0 unless the space wraps). The caller fills them in
 * order and calls dpsock_fifo_write_commit with how many bytes it wrote
 * (<= the returned count). Returns the bytes reserved. */
static inline uint32_t
dpsock_fifo_write_reserve(struct dpsock_fifo_prod *p, size_t len, struct iovec iov[2])
{
	struct dpsock_spsc_end *e = &p->e;
	uint32_t n = len > e->count ? e->count : (uint32_t)len;
	uint32_t room, n1;

	if (n)
		dpsock_spsc_prod_rebase(e, n);
	room = n ? dpsock_spsc_prod_room(e, n) : 0;

	if (n > room)
		n = room;
	dpsock_spsc_window(e, e->head, n, &iov[0].iov_base, &n1, &iov[1].iov_base);
	iov[0].iov_len = n1;
	iov[1].iov_len = n - n1;
	return n;
}

static inline void
dpsock_fifo_write_commit(struct dpsock_fifo_prod *p, uint32_t n)
{
	DPSOCK_SPSC_ASSERT(n <= p->e.count - (p->e.head - p->e.cache));
	if (n)
		dpsock_spsc_prod_publish(&p->e, n);
}

/* Zero-copy read (also MSG_PEEK): describe up to len ready bytes as one or
 * two segments; nothing is consumed until dpsock_fifo_read_consume(n),
 * n <= the returned count. Returns the bytes described. */
static inline uint32_t
dpsock_fifo_read_peek(struct dpsock_fifo_cons *c, size_t len, struct iovec iov[2])
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t n = len > e->count ? e->count : (uint32_t)len;
	uint32_t avail = n ? dpsock_spsc_cons_avail(e, n) : 0;
	uint32_t n1;

	if (n > avail)
		n = avail;
	dpsock_spsc_window(e, e->head, n, &iov[0].iov_base, &n1, &iov[1].iov_base);
	iov[0].iov_len = n1;
	iov[1].iov_len = n - n1;
	return n;
}

/* As dpsock_fifo_read_peek, `off` bytes past the consumer index: up to
 * len of the ready bytes [off, ready), as one or two segments. Lets a
 * consumer look at data behind bytes it has not consumed yet. Returns the
 * bytes described (0 when off is at or past the ready bytes). */
static inline uint32_t
dpsock_fifo_read_peek_at(struct dpsock_fifo_cons *c, uint32_t off, size_t len, struct iovec iov[2])
{
	struct dpsock_spsc_end *e = &c->e;
	uint32_t avail = e->cache - e->head, n, n1;

	if (avail <= off || avail - off < len)
		avail = dpsock_spsc_cons_refresh(e);
	n = avail > off ? avail - off : 0;
	if (len < n)
		n = (uint32_t)len;
	dpsock_spsc_window(e, e->head + off, n, &iov[0].iov_base, &n1, &iov[1].iov_base);
	iov[0].iov_len = n1;
	iov[1].iov_len = n - n1;
	return n;
}

static inline void
dpsock_fifo_read_consume(struct dpsock_fifo_cons *c, uint32_t n)
{
	DPSOCK_SPSC_ASSERT(n <= c->e.cache - c->e.head);
	if (n)
		dpsock_spsc_cons_publish(&c->e, n);
}

/* Move up to len bytes from the consumer end of one FIFO to the producer
 * end of another (a connection within the host: one socket's tx FIFO into
 * its peer's rx FIFO), as many as are ready and fit; one copy, each side's
 * wrap taken as it comes. Returns the bytes moved (0: nothing ready, no
 * room, or either side corrupt). */
static inline size_t
dpsock_fifo_splice(struct dpsock_fifo_cons *from, struct dpsock_fifo_prod *to, size_t len)
{
	struct iovec src[2], dst[2];
	uint32_t n = dpsock_fifo_read_peek(from, len, src), k = 0;
	size_t si = 0, di = 0;
	unsigned int i = 0, j = 0;

	if (n == 0 || (n = dpsock_fifo_write_reserve(to, n, dst)) == 0)
		return 0;
	while (k < n) {
		size_t c = src[i].iov_len - si < dst[j].iov_len - di ?
			   src[i].iov_len - si : dst[j].iov_len - di;

		memcpy((unsigned char *)dst[j].iov_base + di,
		       (const unsigned char *)src[i].iov_base + si, c);
		k += (uint32_t)c;
		si += c;
		di += c;
		if (si == src[i].iov_len) {
			i++;
			si = 0;
		}
		if (di == dst[j].iov_len) {
			j++;
			di = 0;
		}
	}
	dpsock_fifo_write_commit(to, n);
	dpsock_fifo_read_consume(from, n);
	return n;
}

#endif /* DPSOCK_ABI_SPSC_RING_H */
