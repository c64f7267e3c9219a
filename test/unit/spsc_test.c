/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spsc_test — single-threaded functional tests of the SPSC slot ring and the
 * byte FIFO (abi/spsc_ring.h).
 *
 * Covers: argument checking of memsize/init/attach; full and empty; bulk is
 * all-or-nothing and burst partial; every start offset x every length across
 * the wrap, for copy and zero-copy paths and several element sizes; FIFO
 * partial writes, two-segment peeks and reserve/commit across the wrap; the
 * region mapped twice at different addresses (position independence); and
 * hostile peers: scribbled indices are detected as corruption, scribbled
 * geometry after attach changes nothing, and random scribbling never makes
 * a side touch memory outside the region. Regions are allocated at their
 * exact size, so the AddressSanitizer build (spsc_test_asan) turns any
 * overrun into a failure.
 *
 * usage: spsc_test            exit 0 pass, 1 fail
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "spsc_ring.h"

static int failures;

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "%s:%d: %s: check failed: %s\n",      \
				__FILE__, __LINE__, __func__, #cond);         \
			failures++;                                           \
		}                                                             \
	} while (0)

#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);           \
		if (a_ != b_) {                                               \
			fprintf(stderr, "%s:%d: %s: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, __func__, #a, a_, #b, b_); \
			failures++;                                           \
		}                                                             \
	} while (0)

/* A region of exactly `bytes` bytes, 64-byte aligned (ASan sees the end). */
static void *
region_alloc(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes) != 0) {
		perror("posix_memalign");
		exit(1);
	}
	memset(p, 0xa5, bytes);
	return p;
}

static struct dpsock_spsc_hdr *
hdr(void *mem)
{
	return mem;
}

/* Deterministic element contents: element number `seq`, byte j. */
static void
fill_elem(unsigned char *el, uint32_t esize, uint32_t seq)
{
	for (uint32_t j = 0; j < esize; j++)
		el[j] = (unsigned char)(seq * 131u + j * 7u + (seq >> 8));
}

static bool
elem_ok(const unsigned char *el, uint32_t esize, uint32_t seq)
{
	for (uint32_t j = 0; j < esize; j++)
		if (el[j] != (unsigned char)(seq * 131u + j * 7u + (seq >> 8)))
			return false;
	return true;
}

/* ------------------------------------------------------------------------ */

static void
test_init_errors(void)
{
	unsigned char *mem;
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_cons c;
	struct dpsock_fifo_prod fp;
	ssize_t sz;

	CHECK_EQ(dpsock_spsc_memsize(8, 16), DPSOCK_SPSC_HDR_SIZE + 8 * 16);
	CHECK_EQ(dpsock_spsc_memsize(64, 1), DPSOCK_SPSC_HDR_SIZE + 64);
	CHECK_EQ(dpsock_spsc_memsize(0, 16), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(4, 16), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(12, 16), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(DPSOCK_SPSC_ELEM_MAX + 8, 16), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(8, 0), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(8, 3), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(8, 1000), -EINVAL);
	CHECK_EQ(dpsock_spsc_memsize(8, 1u << 31), DPSOCK_SPSC_HDR_SIZE + 8ull * (1u << 31));
	CHECK_EQ(dpsock_spsc_memsize(8, UINT32_MAX), -EINVAL);
	CHECK_EQ(dpsock_fifo_memsize(4096), DPSOCK_SPSC_HDR_SIZE + 4096);
	CHECK_EQ(dpsock_fifo_memsize(4095), -EINVAL);
	CHECK_EQ(dpsock_fifo_memsize(0), -EINVAL);

	sz = dpsock_spsc_memsize(16, 32);
	mem = region_alloc((size_t)sz + 64);
	CHECK_EQ(dpsock_spsc_init(NULL, (size_t)sz, 16, 32), -EINVAL);
	CHECK_EQ(dpsock_spsc_init(mem + 8, (size_t)sz, 16, 32), -EINVAL);   /* misaligned */
	CHECK_EQ(dpsock_spsc_init(mem, (size_t)sz - 1, 16, 32), -EINVAL);   /* too small */
	CHECK_EQ(dpsock_spsc_init(mem, (size_t)sz, 15, 32), -EINVAL);
	CHECK_EQ(dpsock_spsc_init(mem, (size_t)sz, 16, 31), -EINVAL);
	CHECK_EQ(dpsock_fifo_init(mem, (size_t)sz, 1000), -EINVAL);

	/* attach before init: no magic */
	CHECK_EQ(dpsock_spsc_prod_attach(&p, mem, (size_t)sz), -EINVAL);
	CHECK_EQ(dpsock_spsc_init(mem, (size_t)sz, 16, 32), 0);
	CHECK_EQ(dpsock_spsc_prod_attach(&p, mem, (size_t)sz), 0);
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz), 0);
	CHECK_EQ(dpsock_spsc_prod_capacity(&p), 32);
	CHECK_EQ(dpsock_spsc_cons_elem_size(&c), 16);
	CHECK_EQ(dpsock_spsc_prod_attach(NULL, mem, (size_t)sz), -EINVAL);
	CHECK_EQ(dpsock_spsc_prod_attach(&p, NULL, (size_t)sz), -EINVAL);
	CHECK_EQ(dpsock_spsc_prod_attach(&p, mem + 64, (size_t)sz), -EINVAL);  /* no header there */
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz - 1), -EINVAL); /* mapping too small */
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, 100), -EINVAL);
	CHECK_EQ(dpsock_fifo_prod_attach(&fp, mem, (size_t)sz), -EINVAL);    /* not a FIFO */
	/* a handle whose attach failed is dead, not undefined */
	{
		struct iovec iov[2];
		unsigned char b[64];

		CHECK(dpsock_fifo_prod_corrupt(&fp));
		CHECK_EQ(dpsock_fifo_write(&fp, b, sizeof(b)), 0);
		CHECK_EQ(dpsock_fifo_write_reserve(&fp, sizeof(b), iov), 0);
		CHECK_EQ(dpsock_fifo_free(&fp), 0);
		CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, 64), -EINVAL);
		CHECK_EQ(dpsock_spsc_dequeue_burst(&c, b, 1), 0);
		CHECK_EQ(dpsock_spsc_cons_count(&c), 0);
		CHECK(dpsock_spsc_cons_corrupt(&c));
	}

	/* a header claiming more than the mapping, or odd geometry */
	hdr(mem)->count = 64;
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz), -EINVAL);
	hdr(mem)->count = 33;
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz + 64), -EINVAL);
	hdr(mem)->count = 32;
	hdr(mem)->elem_size = 12;
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz), -EINVAL);
	hdr(mem)->elem_size = 16;
	hdr(mem)->version = DPSOCK_SPSC_VERSION + 1;
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz), -EINVAL);
	hdr(mem)->version = DPSOCK_SPSC_VERSION;
	/* inconsistent indices */
	hdr(mem)->prod = 33;
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz), -EIO);
	hdr(mem)->prod = 0;
	hdr(mem)->cons = 1;
	CHECK_EQ(dpsock_spsc_prod_attach(&p, mem, (size_t)sz), -EIO);
	/* consistent non-zero indices (a re-attach) are accepted, across the
	 * 2^32 wrap of the counters */
	hdr(mem)->cons = UINT32_MAX - 3;
	hdr(mem)->prod = 5;
	CHECK_EQ(dpsock_spsc_prod_attach(&p, mem, (size_t)sz), 0);
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, (size_t)sz), 0);
	CHECK_EQ(dpsock_spsc_cons_count(&c), 9);
	CHECK_EQ(dpsock_spsc_prod_free_count(&p), 32 - 9);
	free(mem);
}

/* ------------------------------------------------------------------------ */

static void
test_full_empty_bulk_burst(void)
{
	const uint32_t es = 8, n = 16;
	size_t sz = (size_t)dpsock_spsc_memsize(es, n);
	void *mem = region_alloc(sz);
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_cons c;
	uint64_t in[64], out[64];

	for (unsigned i = 0; i < 64; i++)
		in[i] = 1000 + i;
	CHECK_EQ(dpsock_spsc_init(mem, sz, es, n), 0);
	CHECK_EQ(dpsock_spsc_prod_attach(&p, mem, sz), 0);
	CHECK_EQ(dpsock_spsc_cons_attach(&c, mem, sz), 0);

	CHECK(dpsock_spsc_cons_empty(&c));
	CHECK(!dpsock_spsc_prod_full(&p));
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, out, 4), 0);
	CHECK_EQ(dpsock_spsc_dequeue_bulk(&c, out, 1), 0);
	CHECK_EQ(dpsock_spsc_enqueue_burst(&p, in, 0), 0);
	CHECK_EQ(dpsock_spsc_enqueue_bulk(&p, in, 0), 0);

	/* bulk larger than the ring: nothing */
	CHECK_EQ(dpsock_spsc_enqueue_bulk(&p, in, 17), 0);
	CHECK_EQ(dpsock_spsc_cons_count(&c), 0);
	/* fill exactly: all count slots usable */
	CHECK_EQ(dpsock_spsc_enqueue_bulk(&p, in, 10), 10);
	CHECK_EQ(dpsock_spsc_enqueue_bulk(&p, in + 10, 7), 0);   /* all or nothing */
	CHECK_EQ(dpsock_spsc_cons_count(&c), 10);
	CHECK_EQ(dpsock_spsc_enqueue_burst(&p, in + 10, 7), 6);  /* partial */
	CHECK(dpsock_spsc_prod_full(&p));
	CHECK_EQ(dpsock_spsc_prod_free_count(&p), 0);
	CHECK_EQ(dpsock_spsc_enqueue_burst(&p, in, 1), 0);
	CHECK_EQ(dpsock_spsc_cons_count(&c), 16);
	CHECK_EQ(dpsock_spsc_observe_count(mem, n), 16);

	CHECK_EQ(dpsock_spsc_dequeue_bulk(&c, out, 17), 0);      /* all or nothing */
	CHECK_EQ(dpsock_spsc_dequeue_bulk(&c, out, 5), 5);
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, out + 5, 64), 11);
	for (unsigned i = 0; i < 16; i++)
		CHECK_EQ(out[i], 1000 + i);
	CHECK(dpsock_spsc_cons_empty(&c));
	CHECK_EQ(dpsock_spsc_prod_free_count(&p), 16);
	CHECK(!dpsock_spsc_prod_corrupt(&p));
	CHECK(!dpsock_spsc_cons_corrupt(&c));
	free(mem);
}

/* Every start offset x every length, for several element sizes, through
 * the copy API (burst and bulk) and the zero-copy API. */
static void
test_wrap_every_offset(void)
{
	static const uint32_t sizes[] = { 8, 16, 24, 64 };
	static const uint32_t counts[] = { 1, 2, 8, 16 };
	unsigned char buf[64 * 16], tmp[64 * 16];

	for (unsigned si = 0; si < 4; si++) {
		for (unsigned ci = 0; ci < 4; ci++) {
			uint32_t es = sizes[si], n = counts[ci];
			size_t sz = (size_t)dpsock_spsc_memsize(es, n);
			void *mem = region_alloc(sz);

			for (uint32_t off = 0; off < n; off++) {
				for (uint32_t len = 1; len <= n; len++) {
					for (int mode = 0; mode < 3; mode++) {
						struct dpsock_spsc_prod p;
						struct dpsock_spsc_cons c;
						struct dpsock_spsc_zc zc;
						uint32_t seq = 0, k;
						bool ok = true;

						dpsock_spsc_init(mem, sz, es, n);
						dpsock_spsc_prod_attach(&p, mem, sz);
						dpsock_spsc_cons_attach(&c, mem, sz);
						/* move the indices to `off` */
						for (k = 0; k < off; k++) {
							fill_elem(buf, es, seq++);
							ok &= dpsock_spsc_enqueue_bulk(&p, buf, 1) == 1;
							ok &= dpsock_spsc_dequeue_bulk(&c, tmp, 1) == 1;
						}
						for (k = 0; k < len; k++)
							fill_elem(buf + k * es, es, seq + k);
						memset(tmp, 0, sizeof(tmp));
						if (mode == 0) {
							ok &= dpsock_spsc_enqueue_burst(&p, buf, len) == len;
							ok &= dpsock_spsc_dequeue_burst(&c, tmp, n) == len;
						} else if (mode == 1) {
							ok &= dpsock_spsc_enqueue_bulk(&p, buf, len) == len;
							ok &= dpsock_spsc_dequeue_bulk(&c, tmp, len) == len;
						} else {
							ok &= dpsock_spsc_enqueue_zc_bulk_start(&p, len, &zc) == len;
							ok &= zc.n1 == (n - off < len ? n - off : len);
							memcpy(zc.ptr1, buf, (size_t)zc.n1 * es);
							memcpy(zc.ptr2, buf + zc.n1 * es, (size_t)(len - zc.n1) * es);
							/* not visible before finish */
							ok &= dpsock_spsc_cons_count(&c) == 0;
							dpsock_spsc_enqueue_zc_finish(&p, len);
							ok &= dpsock_spsc_dequeue_zc_burst_start(&c, n, &zc) == len;
							memcpy(tmp, zc.ptr1, (size_t)zc.n1 * es);
							memcpy(tmp + zc.n1 * es, zc.ptr2, (size_t)(len - zc.n1) * es);
							dpsock_spsc_dequeue_zc_finish(&c, len);
						}
						for (k = 0; k < len; k++)
							ok &= elem_ok(tmp + k * es, es, seq + k);
						ok &= dpsock_spsc_cons_empty(&c);
						ok &= dpsock_spsc_prod_free_count(&p) == n;
						if (!ok) {
							fprintf(stderr, "wrap: esize %u count %u off %u len %u mode %d failed\n",
								es, n, off, len, mode);
							failures++;
						}
					}
				}
			}
			free(mem);
		}
	}
}

/* Zero-copy partial finish and bulk refusal. */
static void
test_zc_partial(void)
{
	const uint32_t es = 16, n = 8;
	size_t sz = (size_t)dpsock_spsc_memsize(es, n);
	void *mem = region_alloc(sz);
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_cons c;
	struct dpsock_spsc_zc zc;
	unsigned char el[16];

	dpsock_spsc_init(mem, sz, es, n);
	dpsock_spsc_prod_attach(&p, mem, sz);
	dpsock_spsc_cons_attach(&c, mem, sz);
	CHECK_EQ(dpsock_spsc_enqueue_zc_burst_start(&p, 20, &zc), 8);
	CHECK_EQ(zc.n1, 8);
	for (int i = 0; i < 3; i++)
		fill_elem((unsigned char *)zc.ptr1 + i * es, es, 500 + i);
	dpsock_spsc_enqueue_zc_finish(&p, 3);                   /* only 3 of 8 */
	CHECK_EQ(dpsock_spsc_cons_count(&c), 3);
	CHECK_EQ(dpsock_spsc_enqueue_zc_bulk_start(&p, 6, &zc), 0);
	CHECK_EQ(dpsock_spsc_enqueue_zc_bulk_start(&p, 5, &zc), 5);
	dpsock_spsc_enqueue_zc_finish(&p, 0);                   /* nothing */
	CHECK_EQ(dpsock_spsc_dequeue_zc_bulk_start(&c, 4, &zc), 0);
	CHECK_EQ(dpsock_spsc_dequeue_zc_burst_start(&c, 4, &zc), 3);
	CHECK(elem_ok(zc.ptr1, es, 500));
	dpsock_spsc_dequeue_zc_finish(&c, 1);
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, el, 1), 1);
	CHECK(elem_ok(el, es, 501));
	CHECK_EQ(dpsock_spsc_cons_count(&c), 1);
	CHECK_EQ(dpsock_spsc_dequeue_zc_burst_start(&c, 0, &zc), 0);
	free(mem);
}

/* ------------------------------------------------------------------------ */

static unsigned char
stream_byte(uint64_t pos)
{
	return (unsigned char)((pos * 2654435761u) >> 13);
}

static void
test_fifo_partial(void)
{
	const uint32_t size = 64;
	size_t sz = (size_t)dpsock_fifo_memsize(size);
	void *mem = region_alloc(sz);
	struct dpsock_fifo_prod p;
	struct dpsock_fifo_cons c;
	struct dpsock_spsc_prod sp;
	unsigned char in[200], out[200];

	for (int i = 0; i < 200; i++)
		in[i] = stream_byte(i);
	CHECK_EQ(dpsock_fifo_init(mem, sz, size), 0);
	CHECK_EQ(dpsock_spsc_prod_attach(&sp, mem, sz), -EINVAL);  /* not a slot ring */
	CHECK_EQ(dpsock_fifo_prod_attach(&p, mem, sz), 0);
	CHECK_EQ(dpsock_fifo_cons_attach(&c, mem, sz), 0);
	CHECK_EQ(dpsock_fifo_prod_size(&p), 64);
	CHECK_EQ(dpsock_fifo_used(&c), 0);
	CHECK_EQ(dpsock_fifo_free(&p), 64);
	CHECK_EQ(dpsock_fifo_read(&c, out, 10), 0);
	CHECK_EQ(dpsock_fifo_write(&p, in, 0), 0);
	CHECK_EQ(dpsock_fifo_write(&p, in, 50), 50);
	CHECK_EQ(dpsock_fifo_write(&p, in + 50, 100), 14);          /* partial */
	CHECK_EQ(dpsock_fifo_write(&p, in + 64, 1), 0);             /* full */
	CHECK_EQ(dpsock_fifo_used(&c), 64);
	CHECK_EQ(dpsock_fifo_prod_unread(&p), 64);
	CHECK_EQ(dpsock_fifo_read(&c, out, 30), 30);
	CHECK_EQ(dpsock_fifo_write(&p, in + 64, 100), 30);          /* wraps */
	CHECK_EQ(dpsock_fifo_read(&c, out + 30, 200), 64);
	CHECK(memcmp(in, out, 94) == 0);
	CHECK_EQ(dpsock_fifo_used(&c), 0);
	CHECK_EQ(dpsock_fifo_read(&c, out, 1), 0);
	/* a huge len is clamped, not overflowed */
	CHECK_EQ(dpsock_fifo_write(&p, in, (size_t)1 << 40), 64);
	CHECK_EQ(dpsock_fifo_read(&c, out, (size_t)1 << 40), 64);
	free(mem);
}

/* A FIFO with its data apart from its header, and the base: an empty FIFO
 * whose next write crosses a page starts again at data offset 0; one that
 * holds data does not move; a consumer holding its handle across the
 * rebase reads every byte in order; a header that claims more data than
 * the caller maps is refused. */
static void
test_fifo_rebase(void)
{
	const uint32_t size = 4 * DPSOCK_FIFO_PAGE;
	void *hdrm = region_alloc(DPSOCK_SPSC_HDR_SIZE);
	unsigned char *data = region_alloc(size);
	static unsigned char in[3 * DPSOCK_FIFO_PAGE], out[3 * DPSOCK_FIFO_PAGE];
	struct dpsock_fifo_prod p;
	struct dpsock_fifo_cons c;
	struct iovec iov[2];
	uint64_t wpos = 0, rpos = 0;

	CHECK_EQ(dpsock_fifo_init_hdr(hdrm, size), 0);
	CHECK_EQ(dpsock_fifo_prod_attach_at(&p, hdrm, data, size - 1), -EINVAL);
	CHECK_EQ(dpsock_fifo_prod_attach_at(&p, hdrm, NULL, size), -EINVAL);
	CHECK_EQ(dpsock_fifo_prod_attach_at(&p, hdrm, data, size), 0);
	CHECK_EQ(dpsock_fifo_cons_attach_at(&c, hdrm, data, size), 0);
	/* 1000 bytes, read: the FIFO is empty at offset 1000 */
	for (uint32_t k = 0; k < sizeof(in); k++)
		in[k] = stream_byte(wpos + k);
	CHECK_EQ(dpsock_fifo_write(&p, in, 1000), 1000);
	wpos += 1000;
	CHECK_EQ(dpsock_fifo_read(&c, out, sizeof(out)), 1000);
	rpos += 1000;
	/* a write within the first page stays where it is */
	for (uint32_t k = 0; k < 100; k++)
		in[k] = stream_byte(wpos + k);
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 100, iov), 100);
	CHECK(iov[0].iov_base == data + 1000);
	memcpy(iov[0].iov_base, in, 100);
	dpsock_fifo_write_commit(&p, 100);
	wpos += 100;
	/* not empty: a write across the page does not move */
	for (uint32_t k = 0; k < 4000; k++)
		in[k] = stream_byte(wpos + k);
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 4000, iov), 4000);
	CHECK(iov[0].iov_base == data + 1100);
	memcpy(iov[0].iov_base, in, 4000);
	dpsock_fifo_write_commit(&p, 4000);
	wpos += 4000;
	CHECK_EQ(dpsock_fifo_read(&c, out, sizeof(out)), 4100);
	for (uint32_t k = 0; k < 4100; k++)
		CHECK(out[k] == stream_byte(rpos + k));
	rpos += 4100;
	/* empty at offset 5100: a write that crosses a page starts at 0 */
	for (uint32_t k = 0; k < sizeof(in); k++)
		in[k] = stream_byte(wpos + k);
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 3 * DPSOCK_FIFO_PAGE, iov), 3 * DPSOCK_FIFO_PAGE);
	CHECK(iov[0].iov_base == data && iov[1].iov_len == 0);
	memcpy(iov[0].iov_base, in, 3 * DPSOCK_FIFO_PAGE);
	dpsock_fifo_write_commit(&p, 3 * DPSOCK_FIFO_PAGE);
	wpos += 3 * DPSOCK_FIFO_PAGE;
	CHECK_EQ(dpsock_fifo_prod_offset(&p, (uint32_t)wpos), 3 * DPSOCK_FIFO_PAGE);
	/* the consumer's handle, made before the rebase, reads it all */
	CHECK_EQ(dpsock_fifo_read(&c, out, sizeof(out)), 3 * DPSOCK_FIFO_PAGE);
	for (uint32_t k = 0; k < 3 * DPSOCK_FIFO_PAGE; k++)
		CHECK(out[k] == stream_byte(rpos + k));
	rpos += 3 * DPSOCK_FIFO_PAGE;
	CHECK_EQ(dpsock_fifo_cons_offset(&c, (uint32_t)rpos), 3 * DPSOCK_FIFO_PAGE);
	/* a fresh consumer handle (the shim attaches per call) agrees */
	CHECK_EQ(dpsock_fifo_write(&p, in, 2 * DPSOCK_FIFO_PAGE), 2 * DPSOCK_FIFO_PAGE);
	CHECK_EQ(dpsock_fifo_cons_attach_at(&c, hdrm, data, size), 0);
	CHECK_EQ(dpsock_fifo_read_peek(&c, SIZE_MAX, iov), 2 * DPSOCK_FIFO_PAGE);
	CHECK(iov[0].iov_base == data);
	CHECK(memcmp(iov[0].iov_base, in, 2 * DPSOCK_FIFO_PAGE) == 0);
	free(hdrm);
	free(data);
}

/* Every start offset x every length: write/read, reserve/commit and
 * peek/consume, checking the segment split at the wrap. */
static void
test_fifo_wrap_segments(void)
{
	const uint32_t size = 32;
	size_t sz = (size_t)dpsock_fifo_memsize(size);
	void *mem = region_alloc(sz);
	unsigned char out[64];

	for (uint32_t off = 0; off < size; off++) {
		for (uint32_t len = 1; len <= size; len++) {
			struct dpsock_fifo_prod p;
			struct dpsock_fifo_cons c;
			struct iovec iov[2];
			uint64_t pos = 0;
			bool ok = true;
			uint32_t k, first = size - off < len ? size - off : len;

			dpsock_fifo_init(mem, sz, size);
			dpsock_fifo_prod_attach(&p, mem, sz);
			dpsock_fifo_cons_attach(&c, mem, sz);
			for (k = 0; k < off; k++) {
				unsigned char b = stream_byte(pos++);

				ok &= dpsock_fifo_write(&p, &b, 1) == 1;
				ok &= dpsock_fifo_read(&c, out, 1) == 1;
			}
			/* reserve: two segments exactly when the free space wraps */
			ok &= dpsock_fifo_write_reserve(&p, len, iov) == len;
			ok &= iov[0].iov_len == first && iov[1].iov_len == len - first;
			ok &= iov[1].iov_len == 0 || iov[1].iov_base == (char *)mem + DPSOCK_SPSC_HDR_SIZE;
			for (k = 0; k < len; k++) {
				unsigned char *dst = k < first ? (unsigned char *)iov[0].iov_base + k
							       : (unsigned char *)iov[1].iov_base + (k - first);
				*dst = stream_byte(pos + k);
			}
			ok &= dpsock_fifo_used(&c) == 0;                /* not before commit */
			dpsock_fifo_write_commit(&p, len);
			/* peek: same split, nothing consumed */
			for (int rep = 0; rep < 2; rep++) {
				ok &= dpsock_fifo_read_peek(&c, SIZE_MAX, iov) == len;
				ok &= iov[0].iov_len == first && iov[1].iov_len == len - first;
				for (k = 0; k < len; k++) {
					unsigned char *src = k < first ? (unsigned char *)iov[0].iov_base + k
								       : (unsigned char *)iov[1].iov_base + (k - first);
					ok &= *src == stream_byte(pos + k);
				}
			}
			/* consume in two steps, then read the rest by copy */
			dpsock_fifo_read_consume(&c, len / 2);
			ok &= dpsock_fifo_read_peek(&c, 1, iov) == (len - len / 2 ? 1u : 0u);
			ok &= dpsock_fifo_read(&c, out, sizeof(out)) == len - len / 2;
			for (k = len / 2; k < len; k++)
				ok &= out[k - len / 2] == stream_byte(pos + k);
			pos += len;
			/* write by copy across the wrap, read by peek */
			for (k = 0; k < len; k++)
				out[k] = stream_byte(pos + k);
			ok &= dpsock_fifo_write(&p, out, len) == len;
			ok &= dpsock_fifo_read_peek(&c, len, iov) == len;
			for (k = 0; k < len; k++) {
				uint32_t f2 = (uint32_t)iov[0].iov_len;
				unsigned char *src = k < f2 ? (unsigned char *)iov[0].iov_base + k
							    : (unsigned char *)iov[1].iov_base + (k - f2);
				ok &= *src == stream_byte(pos + k);
			}
			dpsock_fifo_read_consume(&c, len);
			ok &= dpsock_fifo_used(&c) == 0 && dpsock_fifo_free(&p) == size;
			if (!ok) {
				fprintf(stderr, "fifo wrap: off %u len %u failed\n", off, len);
				failures++;
			}
		}
	}
	free(mem);
}

#define SPL_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Splice between two FIFOs at every pair of wrap offsets: the bytes arrive
 * whole and in order, bounded by what is ready, the room and len. */
static void
test_fifo_splice(void)
{
	const uint32_t size = 64;
	size_t sz = (size_t)dpsock_fifo_memsize(size);
	void *ma = aligned_alloc(64, sz), *mb = aligned_alloc(64, sz);
	unsigned int oa, ob, len;
	bool ok = true;

	for (oa = 0; oa < size; oa += 7)
		for (ob = 0; ob < size; ob += 5)
			for (len = 1; len <= size; len += 9) {
				struct dpsock_fifo_prod pa, pb;
				struct dpsock_fifo_cons ca, cb;
				unsigned char in[64], out[64], b = 0;
				unsigned int i;

				dpsock_fifo_init(ma, sz, size);
				dpsock_fifo_init(mb, sz, size);
				dpsock_fifo_prod_attach(&pa, ma, sz);
				dpsock_fifo_cons_attach(&ca, ma, sz);
				dpsock_fifo_prod_attach(&pb, mb, sz);
				dpsock_fifo_cons_attach(&cb, mb, sz);
				for (i = 0; i < oa; i++) { /* move a's indices to oa */
					ok &= dpsock_fifo_write(&pa, &b, 1) == 1;
					ok &= dpsock_fifo_read(&ca, &b, 1) == 1;
				}
				for (i = 0; i < ob; i++) {
					ok &= dpsock_fifo_write(&pb, &b, 1) == 1;
					ok &= dpsock_fifo_read(&cb, &b, 1) == 1;
				}
				for (i = 0; i < len; i++)
					in[i] = (unsigned char)(i * 31 + oa + ob);
				ok &= dpsock_fifo_splice(&ca, &pb, len) == 0; /* nothing ready */
				ok &= dpsock_fifo_write(&pa, in, len) == len;
				/* b holds 3 bytes already: room for size - 3 */
				ok &= dpsock_fifo_write(&pb, "xyz", 3) == 3;
				ok &= dpsock_fifo_splice(&ca, &pb, len - len / 3) ==
				      SPL_MIN(len - len / 3, size - 3);
				ok &= dpsock_fifo_splice(&ca, &pb, SIZE_MAX) ==
				      SPL_MIN(len, size - 3) - SPL_MIN(len - len / 3, size - 3);
				ok &= dpsock_fifo_read(&cb, out, 3) == 3 && memcmp(out, "xyz", 3) == 0;
				ok &= dpsock_fifo_splice(&ca, &pb, SIZE_MAX) == len - SPL_MIN(len, size - 3);
				ok &= dpsock_fifo_used(&ca) == 0;
				ok &= dpsock_fifo_read(&cb, out, sizeof(out)) == len;
				ok &= memcmp(in, out, len) == 0;
				if (!ok) {
					fprintf(stderr, "fifo splice: a at %u, b at %u, len %u failed\n",
						oa, ob, len);
					failures++;
					goto out;
				}
			}
out:
	CHECK(ok);
	free(ma);
	free(mb);
}

static void
test_fifo_reserve_partial(void)
{
	const uint32_t size = 16;
	size_t sz = (size_t)dpsock_fifo_memsize(size);
	void *mem = region_alloc(sz);
	struct dpsock_fifo_prod p;
	struct dpsock_fifo_cons c;
	struct iovec iov[2];
	unsigned char out[16];

	dpsock_fifo_init(mem, sz, size);
	dpsock_fifo_prod_attach(&p, mem, sz);
	dpsock_fifo_cons_attach(&c, mem, sz);
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 100, iov), 16);    /* clamp to free */
	memcpy(iov[0].iov_base, "hello", 5);
	dpsock_fifo_write_commit(&p, 5);                          /* commit less */
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 0, iov), 0);
	CHECK_EQ(iov[0].iov_len + iov[1].iov_len, 0);
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 100, iov), 11);
	CHECK_EQ(dpsock_fifo_read_peek(&c, 100, iov), 5);
	CHECK(memcmp(iov[0].iov_base, "hello", 5) == 0);
	dpsock_fifo_read_consume(&c, 0);
	CHECK_EQ(dpsock_fifo_read(&c, out, 16), 5);
	CHECK(memcmp(out, "hello", 5) == 0);
	free(mem);
}

/* ------------------------------------------------------------------------ */

/* The same memfd mapped twice at different addresses: the producer uses one
 * mapping, the consumer the other, as two processes would. */
static void
test_two_mappings(void)
{
	const uint32_t es = 32, n = 64;
	size_t sz = (size_t)dpsock_spsc_memsize(es, n);
	size_t fsz = (size_t)dpsock_fifo_memsize(4096);
	size_t map = (sz + fsz + 4095) & ~(size_t)4095;
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_cons c;
	struct dpsock_fifo_prod fp;
	struct dpsock_fifo_cons fc;
	unsigned char el[32], buf[1000];
	unsigned char *a, *b;
	uint64_t wpos = 0, rpos = 0;
	int fd;

	fd = memfd_create("spsc_test", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)map) != 0) {
		perror("memfd_create");
		failures++;
		return;
	}
	a = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	b = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	CHECK(a != MAP_FAILED && b != MAP_FAILED && a != b);
	/* the FIFO sits after the ring, at a cache-line-aligned offset */
	size_t foff = (sz + 63) & ~(size_t)63;

	CHECK_EQ(dpsock_spsc_init(a, sz, es, n), 0);
	CHECK_EQ(dpsock_fifo_init(b + foff, map - foff, 4096), 0);
	CHECK_EQ(dpsock_spsc_prod_attach(&p, a, sz), 0);
	CHECK_EQ(dpsock_spsc_cons_attach(&c, b, sz), 0);
	CHECK_EQ(dpsock_fifo_prod_attach(&fp, a + foff, map - foff), 0);
	CHECK_EQ(dpsock_fifo_cons_attach(&fc, b + foff, map - foff), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		fill_elem(el, es, i);
		CHECK_EQ(dpsock_spsc_enqueue_bulk(&p, el, 1), 1);
		memset(el, 0, sizeof(el));
		CHECK_EQ(dpsock_spsc_dequeue_bulk(&c, el, 1), 1);
		CHECK(elem_ok(el, es, i));

		size_t w = (i * 37) % sizeof(buf), got;
		for (size_t k = 0; k < w; k++)
			buf[k] = stream_byte(wpos + k);
		wpos += dpsock_fifo_write(&fp, buf, w);
		got = dpsock_fifo_read(&fc, buf, (i * 53) % sizeof(buf));
		for (size_t k = 0; k < got; k++)
			if (buf[k] != stream_byte(rpos + k)) {
				failures++;
				fprintf(stderr, "two mappings: fifo byte %llu wrong\n",
					(unsigned long long)(rpos + k));
				break;
			}
		rpos += got;
	}
	CHECK(wpos > 100000 && rpos + 4096 >= wpos);
	munmap(a, map);
	munmap(b, map);
}

/* ------------------------------------------------------------------------ */
/* Hostile peers                                                             */

static void
test_corrupt_prod_index(void)
{
	const uint32_t es = 8, n = 16;
	size_t sz = (size_t)dpsock_spsc_memsize(es, n);
	void *mem = region_alloc(sz);
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_cons c;
	struct dpsock_spsc_zc zc;
	uint64_t v[64] = { 0 };

	dpsock_spsc_init(mem, sz, es, n);
	dpsock_spsc_prod_attach(&p, mem, sz);
	dpsock_spsc_cons_attach(&c, mem, sz);
	CHECK_EQ(dpsock_spsc_enqueue_burst(&p, v, 5), 5);
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, v, 2), 2);
	/* a producer claiming more than count entries ahead of the consumer
	 * (cons is 3 after the next dequeue; 3 + n would still be legal) */
	hdr(mem)->prod = 3 + n + 1;
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, v, 1), 1);      /* cached view suffices */
	CHECK(!dpsock_spsc_cons_corrupt(&c));
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, v, 64), 0);     /* refresh: impossible */
	CHECK(dpsock_spsc_cons_corrupt(&c));
	CHECK_EQ(dpsock_spsc_cons_count(&c), 0);
	CHECK(dpsock_spsc_cons_empty(&c));
	CHECK_EQ(dpsock_spsc_dequeue_bulk(&c, v, 1), 0);
	CHECK_EQ(dpsock_spsc_dequeue_zc_burst_start(&c, 8, &zc), 0);
	/* sticky, even once the index looks sane again */
	hdr(mem)->prod = 6;
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, v, 64), 0);
	CHECK(dpsock_spsc_cons_corrupt(&c));

	/* a producer moving backwards */
	dpsock_spsc_init(mem, sz, es, n);
	dpsock_spsc_prod_attach(&p, mem, sz);
	dpsock_spsc_cons_attach(&c, mem, sz);
	CHECK_EQ(dpsock_spsc_enqueue_burst(&p, v, 10), 10);
	CHECK_EQ(dpsock_spsc_cons_count(&c), 10);
	hdr(mem)->prod = 4;
	CHECK_EQ(dpsock_spsc_cons_count(&c), 0);
	CHECK(dpsock_spsc_cons_corrupt(&c));

	/* maximal lie: prod = cons + 2^31 */
	dpsock_spsc_init(mem, sz, es, n);
	dpsock_spsc_cons_attach(&c, mem, sz);
	hdr(mem)->prod = 1u << 31;
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, v, 64), 0);
	CHECK(dpsock_spsc_cons_corrupt(&c));
	free(mem);
}

static void
test_corrupt_cons_index(void)
{
	const uint32_t size = 64;
	size_t sz = (size_t)dpsock_fifo_memsize(size);
	void *mem = region_alloc(sz);
	struct dpsock_fifo_prod p;
	struct dpsock_fifo_cons c;
	struct iovec iov[2];
	unsigned char buf[128] = { 0 };

	dpsock_fifo_init(mem, sz, size);
	dpsock_fifo_prod_attach(&p, mem, sz);
	dpsock_fifo_cons_attach(&c, mem, sz);
	CHECK_EQ(dpsock_fifo_write(&p, buf, 64), 64);
	/* a consumer claiming to have read past what was written */
	hdr(mem)->cons = 65;
	CHECK_EQ(dpsock_fifo_write(&p, buf, 10), 0);
	CHECK(dpsock_fifo_prod_corrupt(&p));
	CHECK_EQ(dpsock_fifo_free(&p), 0);
	CHECK_EQ(dpsock_fifo_write_reserve(&p, 10, iov), 0);
	CHECK_EQ(iov[0].iov_len + iov[1].iov_len, 0);

	/* a consumer moving backwards */
	dpsock_fifo_init(mem, sz, size);
	dpsock_fifo_prod_attach(&p, mem, sz);
	dpsock_fifo_cons_attach(&c, mem, sz);
	CHECK_EQ(dpsock_fifo_write(&p, buf, 64), 64);
	CHECK_EQ(dpsock_fifo_read(&c, buf, 40), 40);
	CHECK_EQ(dpsock_fifo_write(&p, buf, 100), 40);
	hdr(mem)->cons = 20;
	CHECK_EQ(dpsock_fifo_write(&p, buf, 100), 0);
	CHECK(dpsock_fifo_prod_corrupt(&p));
	/* the consumer scribbling its own index does not confuse the consumer:
	 * it never reads it back */
	CHECK_EQ(dpsock_fifo_read(&c, buf, 128), 64);
	CHECK(!dpsock_fifo_cons_corrupt(&c));

	/* FIFO consumer against a producer index past the end */
	dpsock_fifo_init(mem, sz, size);
	dpsock_fifo_cons_attach(&c, mem, sz);
	hdr(mem)->prod = size + 1;
	CHECK_EQ(dpsock_fifo_read_peek(&c, 128, iov), 0);
	CHECK(dpsock_fifo_cons_corrupt(&c));
	free(mem);
}

/* Geometry scribbled after attach: the handles keep their private copy. */
static void
test_scribbled_geometry(void)
{
	const uint32_t es = 8, n = 8;
	size_t sz = (size_t)dpsock_spsc_memsize(es, n);
	void *mem = region_alloc(sz);
	struct dpsock_spsc_prod p;
	struct dpsock_spsc_cons c;
	uint64_t v[64];

	for (int i = 0; i < 64; i++)
		v[i] = (uint64_t)i;
	dpsock_spsc_init(mem, sz, es, n);
	dpsock_spsc_prod_attach(&p, mem, sz);
	dpsock_spsc_cons_attach(&c, mem, sz);
	hdr(mem)->count = 1u << 20;
	hdr(mem)->elem_size = DPSOCK_SPSC_ELEM_MAX;
	hdr(mem)->magic = 0;
	CHECK_EQ(dpsock_spsc_enqueue_burst(&p, v, 64), 8);
	CHECK_EQ(dpsock_spsc_dequeue_burst(&c, v + 8, 64), 8);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(v[8 + i], i);
	free(mem);
}

/* Random scribbling of the whole header while both sides keep working.
 * Nothing may touch memory outside the region (ASan), no count may exceed
 * the capacity, and a side must end up either working or flagged. */
static void
test_random_scribble(void)
{
	const uint32_t es = 24, n = 16;
	size_t sz = (size_t)dpsock_spsc_memsize(es, n);
	size_t fsz = (size_t)dpsock_fifo_memsize(64);
	void *mem = region_alloc(sz), *fmem = region_alloc(fsz);
	unsigned char buf[24 * 64];
	uint64_t x = 88172645463325252ull;
	unsigned flagged = 0;

	for (int round = 0; round < 2000; round++) {
		struct dpsock_spsc_prod p;
		struct dpsock_spsc_cons c;
		struct dpsock_fifo_prod fp;
		struct dpsock_fifo_cons fc;
		struct dpsock_spsc_zc zc;
		struct iovec iov[2];

		dpsock_spsc_init(mem, sz, es, n);
		dpsock_spsc_prod_attach(&p, mem, sz);
		dpsock_spsc_cons_attach(&c, mem, sz);
		dpsock_fifo_init(fmem, fsz, 64);
		dpsock_fifo_prod_attach(&fp, fmem, fsz);
		dpsock_fifo_cons_attach(&fc, fmem, fsz);
		for (int step = 0; step < 50; step++) {
			uint32_t r, k;

			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			r = (uint32_t)x;
			if (r % 5 == 0) {       /* scribble one header word */
				uint32_t *w = (uint32_t *)mem + (r >> 8) % (DPSOCK_SPSC_HDR_SIZE / 4);
				uint32_t *fw = (uint32_t *)fmem + (r >> 16) % (DPSOCK_SPSC_HDR_SIZE / 4);
				uint32_t val = (uint32_t)(x >> 32);

				if (r & 0x80)
					val %= 40;      /* near the real indices too */
				*w = val;
				*fw = val ^ r;
			}
			k = (r >> 3) % 40;
			switch ((r >> 12) % 8) {
			case 0: CHECK(dpsock_spsc_enqueue_burst(&p, buf, k) <= n); break;
			case 1: CHECK(dpsock_spsc_dequeue_burst(&c, buf, k) <= n); break;
			case 2: CHECK(dpsock_spsc_enqueue_bulk(&p, buf, k) <= n); break;
			case 3: CHECK(dpsock_spsc_dequeue_bulk(&c, buf, k) <= n); break;
			case 4:
				k = dpsock_spsc_dequeue_zc_burst_start(&c, k, &zc);
				CHECK(k <= n && zc.n1 <= k);
				if (k) {
					memcpy(buf, zc.ptr1, (size_t)zc.n1 * es);
					memcpy(buf, zc.ptr2, (size_t)(k - zc.n1) * es);
				}
				dpsock_spsc_dequeue_zc_finish(&c, k);
				CHECK(dpsock_spsc_cons_count(&c) <= n);
				CHECK(dpsock_spsc_prod_free_count(&p) <= n);
				break;
			case 5:
				CHECK(dpsock_fifo_write(&fp, buf, k * 3) <= 64);
				k = dpsock_fifo_write_reserve(&fp, k, iov);
				CHECK(k <= 64);
				memset(iov[0].iov_base, 1, iov[0].iov_len);
				memset(iov[1].iov_base, 2, iov[1].iov_len);
				dpsock_fifo_write_commit(&fp, k);
				break;
			case 6:
				CHECK(dpsock_fifo_read(&fc, buf, k * 3) <= 64);
				k = dpsock_fifo_read_peek(&fc, SIZE_MAX, iov);
				CHECK(k <= 64);
				memcpy(buf, iov[0].iov_base, iov[0].iov_len);
				memcpy(buf + 64, iov[1].iov_base, iov[1].iov_len);
				dpsock_fifo_read_consume(&fc, k);
				break;
			default:
				CHECK(dpsock_fifo_used(&fc) <= 64);
				CHECK(dpsock_fifo_free(&fp) <= 64);
				break;
			}
		}
		flagged += dpsock_spsc_cons_corrupt(&c) || dpsock_spsc_prod_corrupt(&p) ||
			   dpsock_fifo_cons_corrupt(&fc) || dpsock_fifo_prod_corrupt(&fp);
	}
	/* the scribbles hit the indices often enough to be noticed */
	CHECK(flagged > 100);
	free(mem);
	free(fmem);
}

int
main(void)
{
	test_init_errors();
	test_full_empty_bulk_burst();
	test_wrap_every_offset();
	test_zc_partial();
	test_fifo_partial();
	test_fifo_wrap_segments();
	test_fifo_rebase();
	test_fifo_splice();
	test_fifo_reserve_partial();
	test_two_mappings();
	test_corrupt_prod_index();
	test_corrupt_cons_index();
	test_scribbled_geometry();
	test_random_scribble();
	if (failures) {
		fprintf(stderr, "spsc_test: %d check(s) failed\n", failures);
		return 1;
	}
	printf("spsc_test: all checks passed\n");
	return 0;
}
