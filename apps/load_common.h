/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What dpsock-loadgen and its kernel counterpart in the benchmarks
 * (test/perf/kernel_load.c) share, so that both load the server and report
 * the same way: the payload pattern, and the latency histogram (8 linear
 * sub-buckets per power of two: 1/8 resolution, about 6 %; any unit, TSC
 * cycles or nanoseconds). Header-only, no dependencies.
 */
#ifndef DPSOCK_LOAD_COMMON_H
#define DPSOCK_LOAD_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* The payload: a deterministic pseudo-random pattern (xorshift32), the
 * same from every client, so a server's echo can be checked. */
static inline void
fill_pattern(uint8_t *p, size_t n)
{
	uint32_t x = 0x9e3779b9u;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

#define LAT_HIST_BUCKETS (62 * 8) /* enough for any uint64_t value */

/* Bucket of value v. */
static inline unsigned int
lat_hist_bucket(uint64_t v)
{
	unsigned int msb, b;

	if (v < 8)
		return (unsigned int)v;
	msb = 63u - (unsigned int)__builtin_clzll(v); /* 3..63 */
	b = (msb - 2) * 8 + (unsigned int)((v >> (msb - 3)) & 7);
	return b < LAT_HIST_BUCKETS ? b : LAT_HIST_BUCKETS - 1;
}

/* Middle of bucket b's value range. */
static inline double
lat_hist_value(unsigned int b)
{
	unsigned int msb;
	double lo, width;

	if (b < 8)
		return b;
	msb = b / 8 + 2;
	width = (double)(1ull << (msb - 3));
	lo = (double)(8 + b % 8) * width;
	return lo + width / 2;
}

/* Percentile p (0..1) of n samples, in the samples' unit: a bucket's middle,
 * at most the largest sample max; 0 without samples. */
static inline double
lat_hist_pct(const uint64_t *hist, uint64_t n, double p, uint64_t max)
{
	uint64_t target = (uint64_t)(p * (double)n + 0.999999), sum = 0;
	unsigned int b;

	if (n == 0)
		return 0;
	if (target == 0)
		target = 1;
	for (b = 0; b < LAT_HIST_BUCKETS; b++) {
		sum += hist[b];
		if (sum >= target) {
			double v = lat_hist_value(b);

			return v < (double)max ? v : (double)max;
		}
	}
	return (double)max;
}

#endif /* DPSOCK_LOAD_COMMON_H */
