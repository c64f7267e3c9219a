/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip_chksum (lwip/chksum.c) against RFC 1071's definition, written
 * the plain way: 16-bit big-endian words summed with end-around carry, an
 * odd last byte padded with a zero. Every length 0..2048 at every start
 * offset 0..7, on random bytes and on all-0xff bytes (the carry-heavy case),
 * and a 64 KiB buffer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpsock_lwip_chksum.h"

static int failures;

/* RFC 1071, big-endian words; returned as the bytes lie in memory. */
static uint16_t
ref_sum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	/* the sum as it would lie in memory, read as a little-endian u16 */
	return (uint16_t)((sum >> 8) | (sum << 8));
}

static void
check(const uint8_t *buf, size_t off, size_t n, const char *what)
{
	uint16_t want = ref_sum(buf + off, n), got = dpsock_lwip_chksum(buf + off, (int)n);

	if (want != got && failures++ < 10)
		fprintf(stderr, "FAIL %s: offset %zu length %zu: got %04x, want %04x\n", what, off, n,
			got, want);
}

int
main(void)
{
	static uint8_t rnd[2048 + 8], ones[2048 + 8], big[65536];
	size_t off, n, i;

	srand(1);
	for (i = 0; i < sizeof(rnd); i++) {
		rnd[i] = (uint8_t)rand();
		ones[i] = 0xff;
	}
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)rand();
	for (off = 0; off < 8; off++)
		for (n = 0; n <= 2048; n++) {
			check(rnd, off, n, "random");
			check(ones, off, n, "0xff");
		}
	check(big, 0, sizeof(big), "64 KiB");
	check(big, 1, sizeof(big) - 1, "64 KiB - 1");
	if (failures) {
		fprintf(stderr, "chksum_test: %d mismatches\n", failures);
		return 1;
	}
	printf("chksum_test: %zu lengths x 8 offsets x 2 patterns and 64 KiB agree with RFC 1071\n",
	       (size_t)2049);
	return 0;
}
