/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spsc_stress — two threads, one producer and one consumer, pinned to
 * different CPUs when there are two, hammering the SPSC ring and the byte
 * FIFO of abi/spsc_ring.h.
 *
 * Ring: ITEMS elements of 32 bytes (a sequence number and three words
 * derived from it) through a 64-slot ring. Both sides pick, at random for
 * every call, between burst, bulk and zero-copy calls (with partial
 * zero-copy finishes) and burst sizes from 1 to 48. The consumer checks the
 * order and content of every element and keeps a checksum that must equal
 * the producer's.
 * FIFO: FIFO_BYTES bytes of a pseudo-random stream through a 4 KiB FIFO,
 * random write and read sizes (1 B .. 6 KiB), by copy or zero-copy
 * (reserve/commit with partial commits, peek/consume); every byte checked.
 *
 * Both rings start with their free-running indices just below 2^32, so the
 * counters wrap during every run. A side waiting for the other spins, then
 * yields (the machine may have fewer CPUs than threads). No progress for
 * 60 s is a failure (lost update / deadlock).
 *
 * usage: spsc_stress [ITEMS [FIFO_BYTES]]     defaults 1000000, ITEMS * 8
 *        exit 0 pass, 1 fail
 * Long run (billions of items): meson test -C build --suite stress
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "spsc_ring.h"

#define RING_SLOTS      64u
#define ELEM_SIZE       32u
#define MAX_BURST       48u
#define FIFO_SIZE       4096u
#define MAX_IO          6144u
#define STALL_S         60

struct elem {
	uint64_t seq, a, b, c;
};
static_assert(sizeof(struct elem) == ELEM_SIZE, "element size");

static void *ring_mem, *fifo_mem;
static size_t ring_bytes, fifo_bytes;
static uint64_t n_items, n_bytes;
static pthread_barrier_t start;
static int ncpu;

/* results */
static uint64_t prod_sum, cons_sum;
static int failed;              /* set by either thread; the other gives up */
#define FAILED() __atomic_load_n(&failed, __ATOMIC_RELAXED)

static uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static void
make_elem(struct elem *e, uint64_t seq)
{
	e->seq = seq;
	e->a = mix(seq);
	e->b = mix(e->a);
	e->c = ~seq ^ e->b;
}

static uint64_t
xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The FIFO stream: byte i of the stream is a function of i alone, so either
 * side can produce or check any stretch. */
static inline unsigned char
stream_byte(uint64_t i)
{
	uint64_t w = mix(i >> 3);

	return (unsigned char)(w >> ((i & 7) * 8));
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void __attribute__((format(printf, 2, 3)))
fail(const char *who, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
}

static inline void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Waiting: spin a while, then yield; detect a stall. */
struct waiter {
	unsigned spins;
	double since;
};

static bool
wait_more(struct waiter *w, const char *who)
{
	if (FAILED())
		return false;
	if (++w->spins < 256) {
		cpu_relax();
		return true;
	}
	sched_yield();
	if ((w->spins & 1023) == 0) {
		double t = now_s();

		if (w->since == 0) {
			w->since = t;
		} else if (t - w->since > STALL_S) {
			fail(who, "no progress for %d s", STALL_S);
			return false;
		}
	}
	return true;
}

static void
progressed(struct waiter *w)
{
	w->spins = 0;
	w->since = 0;
}

static void
pin(int cpu)
{
	cpu_set_t set;

	if (ncpu < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ------------------------------------------------------------------------ */

static void *
ring_producer(void *arg)
{
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_zc zc;
	struct elem buf[MAX_BURST];
	struct waiter w = { 0 };
	uint64_t seq = 0, rng = 0x1234567ull, sum = 0;

	(void)arg;
	pin(0);
	if (dpsock_spsc_prod_attach(&p, ring_mem, ring_bytes) != 0) {
		fail("ring producer", "attach failed");
		pthread_barrier_wait(&start);
		return NULL;
	}
	pthread_barrier_wait(&start);
	while (seq < n_items && !FAILED()) {
		uint64_t r = xorshift(&rng);
		unsigned want = 1 + (unsigned)(r % MAX_BURST), got, i;

		if (want > n_items - seq)
			want = (unsigned)(n_items - seq);
		switch ((r >> 8) % 4) {
		case 0:         /* the common case: one element */
			want = 1;
			/* fall through */
		case 1:
			for (i = 0; i < want; i++)
				make_elem(&buf[i], seq + i);
			got = dpsock_spsc_enqueue_burst(&p, buf, want);
			break;
		case 2:
			for (i = 0; i < want; i++)
				make_elem(&buf[i], seq + i);
			got = dpsock_spsc_enqueue_bulk(&p, buf, want);
			if (got != 0 && got != want)
				fail("ring producer", "bulk moved %u of %u", got, want);
			break;
		default:
			got = dpsock_spsc_enqueue_zc_burst_start(&p, want, &zc);
			if (got && (r >> 16) % 3 == 0)
				got -= (unsigned)((r >> 20) % got);     /* finish fewer */
			for (i = 0; i < got; i++)
				make_elem(i < zc.n1 ? (struct elem *)zc.ptr1 + i
						    : (struct elem *)zc.ptr2 + (i - zc.n1),
					  seq + i);
			dpsock_spsc_enqueue_zc_finish(&p, got);
			break;
		}
		if (got == 0) {
			if (dpsock_spsc_prod_corrupt(&p))
				fail("ring producer", "ring reported corrupt at %" PRIu64, seq);
			if (!wait_more(&w, "ring producer"))
				break;
			continue;
		}
		progressed(&w);
		for (i = 0; i < got; i++) {
			struct elem e;

			make_elem(&e, seq + i);
			sum += mix(e.a ^ e.b ^ e.c);
		}
		seq += got;
	}
	prod_sum = sum;
	return NULL;
}

static bool
check_elem(const struct elem *e, uint64_t seq)
{
	struct elem ref;

	make_elem(&ref, seq);
	if (memcmp(e, &ref, sizeof(ref)) == 0)
		return true;
	fail("ring consumer", "element %" PRIu64 " has sequence number %" PRIu64 " or bad content",
	     seq, e->seq);
	return false;
}

static void *
ring_consumer(void *arg)
{
	struct dpsock_spsc_cons c;
	struct dpsock_spsc_zc zc;
	struct elem buf[MAX_BURST];
	struct waiter w = { 0 };
	uint64_t seq = 0, rng = 0x7654321ull, sum = 0;

	(void)arg;
	pin(1);
	if (dpsock_spsc_cons_attach(&c, ring_mem, ring_bytes) != 0) {
		fail("ring consumer", "attach failed");
		pthread_barrier_wait(&start);
		return NULL;
	}
	pthread_barrier_wait(&start);
	while (seq < n_items && !FAILED()) {
		uint64_t r = xorshift(&rng);
		unsigned want = 1 + (unsigned)(r % MAX_BURST), got = 0, i;
		bool zcp = false;

		switch ((r >> 8) % 4) {
		case 0:
			want = 1;
			/* fall through */
		case 1:
			got = dpsock_spsc_dequeue_burst(&c, buf, want);
			break;
		case 2:
			if (want > n_items - seq)
				want = (unsigned)(n_items - seq);
			got = dpsock_spsc_dequeue_bulk(&c, buf, want);
			if (got != 0 && got != want)
				fail("ring consumer", "bulk moved %u of %u", got, want);
			break;
		default:
			got = dpsock_spsc_dequeue_zc_burst_start(&c, want, &zc);
			if (got && (r >> 16) % 3 == 0)
				got -= (unsigned)((r >> 20) % got);     /* consume fewer */
			zcp = true;
			break;
		}
		if (got == 0) {
			if (dpsock_spsc_cons_corrupt(&c))
				fail("ring consumer", "ring reported corrupt at %" PRIu64, seq);
			if (!wait_more(&w, "ring consumer"))
				break;
			continue;
		}
		progressed(&w);
		for (i = 0; i < got; i++) {
			const struct elem *e = !zcp ? &buf[i]
					     : i < zc.n1 ? (const struct elem *)zc.ptr1 + i
							 : (const struct elem *)zc.ptr2 + (i - zc.n1);

			if (!check_elem(e, seq + i))
				break;
			sum += mix(e->a ^ e->b ^ e->c);
		}
		if (zcp)
			dpsock_spsc_dequeue_zc_finish(&c, got);
		seq += got;
	}
	if (!FAILED() && dpsock_spsc_cons_count(&c) != 0)
		fail("ring consumer", "%u elements left over after %" PRIu64, dpsock_spsc_cons_count(&c), seq);
	cons_sum = sum;
	return NULL;
}

/* ------------------------------------------------------------------------ */

static void *
fifo_producer(void *arg)
{
	struct dpsock_fifo_prod p;
	struct waiter w = { 0 };
	unsigned char buf[MAX_IO];
	uint64_t pos = 0, rng = 0xabcdefull;

	(void)arg;
	pin(0);
	if (dpsock_fifo_prod_attach(&p, fifo_mem, fifo_bytes) != 0) {
		fail("fifo producer", "attach failed");
		pthread_barrier_wait(&start);
		return NULL;
	}
	pthread_barrier_wait(&start);
	while (pos < n_bytes && !FAILED()) {
		uint64_t r = xorshift(&rng);
		size_t want = 1 + (size_t)(r % ((r >> 40) & 1 ? MAX_IO : 64)), got, i;

		if (want > n_bytes - pos)
			want = (size_t)(n_bytes - pos);
		if ((r >> 8) & 1) {
			for (i = 0; i < want; i++)
				buf[i] = stream_byte(pos + i);
			got = dpsock_fifo_write(&p, buf, want);
		} else {
			struct iovec iov[2];

			got = dpsock_fifo_write_reserve(&p, want, iov);
			if (got && (r >> 16) % 3 == 0)
				got -= (size_t)((r >> 20) % got);       /* commit fewer */
			for (i = 0; i < got; i++) {
				if (i < iov[0].iov_len)
					((unsigned char *)iov[0].iov_base)[i] = stream_byte(pos + i);
				else
					((unsigned char *)iov[1].iov_base)[i - iov[0].iov_len] =
						stream_byte(pos + i);
			}
			dpsock_fifo_write_commit(&p, (uint32_t)got);
		}
		if (got == 0) {
			if (dpsock_fifo_prod_corrupt(&p))
				fail("fifo producer", "fifo reported corrupt at %" PRIu64, pos);
			if (!wait_more(&w, "fifo producer"))
				break;
			continue;
		}
		progressed(&w);
		pos += got;
	}
	return NULL;
}

static void *
fifo_consumer(void *arg)
{
	struct dpsock_fifo_cons c;
	struct waiter w = { 0 };
	unsigned char buf[MAX_IO];
	uint64_t pos = 0, rng = 0xfedcbaull;

	(void)arg;
	pin(1);
	if (dpsock_fifo_cons_attach(&c, fifo_mem, fifo_bytes) != 0) {
		fail("fifo consumer", "attach failed");
		pthread_barrier_wait(&start);
		return NULL;
	}
	pthread_barrier_wait(&start);
	while (pos < n_bytes && !FAILED()) {
		uint64_t r = xorshift(&rng);
		size_t want = 1 + (size_t)(r % ((r >> 40) & 1 ? MAX_IO : 64)), got, i;
		struct iovec iov[2];
		bool peek = !((r >> 8) & 1);

		if (!peek) {
			got = dpsock_fifo_read(&c, buf, want);
			iov[0].iov_base = buf;
			iov[0].iov_len = got;
			iov[1].iov_base = buf;
			iov[1].iov_len = 0;
		} else {
			got = dpsock_fifo_read_peek(&c, want, iov);
			if (got && (r >> 16) % 3 == 0)
				got -= (size_t)((r >> 20) % got);       /* consume fewer */
		}
		if (got == 0) {
			if (dpsock_fifo_cons_corrupt(&c))
				fail("fifo consumer", "fifo reported corrupt at %" PRIu64, pos);
			if (!wait_more(&w, "fifo consumer"))
				break;
			continue;
		}
		progressed(&w);
		for (i = 0; i < got; i++) {
			unsigned char b = i < iov[0].iov_len
				? ((unsigned char *)iov[0].iov_base)[i]
				: ((unsigned char *)iov[1].iov_base)[i - iov[0].iov_len];

			if (b != stream_byte(pos + i)) {
				fail("fifo consumer", "byte %" PRIu64 " is 0x%02x", pos + i, b);
				break;
			}
		}
		if (peek)
			dpsock_fifo_read_consume(&c, (uint32_t)got);
		pos += got;
	}
	if (!FAILED() && dpsock_fifo_used(&c) != 0)
		fail("fifo consumer", "%u bytes left over after %" PRIu64, dpsock_fifo_used(&c), pos);
	return NULL;
}

/* ------------------------------------------------------------------------ */

static void *
region(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes) != 0) {
		perror("posix_memalign");
		exit(1);
	}
	return p;
}

/* Put both free-running indices of a fresh region at `at` (a legal state:
 * as if `at` entries had gone through already). */
static void
start_indices_at(void *mem, uint32_t at)
{
	struct dpsock_spsc_hdr *h = mem;

	h->prod = at;
	h->cons = at;
}

static bool
run_pair(const char *what, void *(*prod)(void *), void *(*cons)(void *), uint64_t units,
	 const char *unit)
{
	pthread_t tp, tc;
	double t0, t;

	if (pthread_barrier_init(&start, NULL, 3) != 0)
		return false;
	pthread_create(&tc, NULL, cons, NULL);
	pthread_create(&tp, NULL, prod, NULL);
	pthread_barrier_wait(&start);
	t0 = now_s();
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	t = now_s() - t0;
	pthread_barrier_destroy(&start);
	printf("%-5s %12" PRIu64 " %s in %6.2f s: %6.1f ns/%s  %s\n", what, units, unit, t,
	       units ? t * 1e9 / (double)units : 0.0, unit, FAILED() ? "FAIL" : "ok");
	return !FAILED();
}

int
main(int argc, char **argv)
{
	cpu_set_t set;
	bool ok;

	n_items = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	n_bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : n_items * 8;
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		ncpu = CPU_COUNT(&set);
	printf("spsc_stress: %" PRIu64 " elements of %u B through %u slots, %" PRIu64
	       " bytes through a %u B FIFO, %d CPU(s)%s\n",
	       n_items, ELEM_SIZE, RING_SLOTS, n_bytes, FIFO_SIZE, ncpu,
	       ncpu >= 2 ? ", threads pinned to CPUs 0 and 1" : " (not pinned)");

	ring_bytes = (size_t)dpsock_spsc_memsize(ELEM_SIZE, RING_SLOTS);
	ring_mem = region(ring_bytes);
	if (dpsock_spsc_init(ring_mem, ring_bytes, ELEM_SIZE, RING_SLOTS) != 0)
		return 1;
	/* wrap the 32-bit indices about half-way through the run */
	start_indices_at(ring_mem, (uint32_t)(0 - (uint32_t)(n_items / 2) - 7));
	ok = run_pair("ring", ring_producer, ring_consumer, n_items, "item");
	if (ok && prod_sum != cons_sum) {
		fprintf(stderr, "ring: checksum mismatch: producer %016" PRIx64 " consumer %016" PRIx64 "\n",
			prod_sum, cons_sum);
		ok = false;
	}

	fifo_bytes = (size_t)dpsock_fifo_memsize(FIFO_SIZE);
	fifo_mem = region(fifo_bytes);
	if (dpsock_fifo_init(fifo_mem, fifo_bytes, FIFO_SIZE) != 0)
		return 1;
	start_indices_at(fifo_mem, (uint32_t)(0 - (uint32_t)(n_bytes / 2) - 13));
	if (ok)
		ok = run_pair("fifo", fifo_producer, fifo_consumer, n_bytes, "byte");
	free(ring_mem);
	free(fifo_mem);
	printf("spsc_stress: %s\n", ok ? "pass" : "FAIL");
	return ok ? 0 : 1;
}
