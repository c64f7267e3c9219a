/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ring_bench — dpsock's SPSC ring (abi/spsc_ring.h) against DPDK's rte_ring
 * created single-producer / single-consumer (RING_F_SP_ENQ | RING_F_SC_DEQ),
 * moving elements between two lcores.
 *
 * The producer runs on the first worker lcore, the consumer on the main
 * lcore. For each element size (8 B, 32 B by default) and burst size (1, 32
 * by default), each ring moves N elements per round; the consumer checks
 * every element's sequence number and times the round from the first
 * element it receives to the last. ns/item = that time / (N - 1): the cost
 * of one enqueue + one dequeue at full throughput, including the cache-line
 * transfers between the cores. N is calibrated per configuration so that a
 * round lasts about -t seconds; rounds alternate between the two rings so
 * that noise from the rest of the machine hits both alike. Both rings hold exactly the same number of
 * elements (rte_ring with RING_F_EXACT_SZ) of the same size and live in
 * EAL memory; both use their element-size-generic API with the size known
 * at compile time for rte_ring (rte_ring_*_elem) and fixed at init for
 * dpsock (the handle's private copy).
 *
 * Output: a markdown table (median, min and max over the rounds, and the
 * ratio rte_ring / dpsock of the medians: > 1 means dpsock is faster).
 *
 * usage: ring_bench [EAL options] -- [-r ROUNDS] [-t SECONDS] [-s SLOTS]
 *                   [-e SIZE,SIZE...] [-b BURST,BURST...]
 *        e.g. ring_bench --no-huge --no-pci --no-shconf -l 0-1 -- -r 5
 * exit 0, 1 on error (including a wrong element), 77 when EAL has fewer
 * than two lcores.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_version.h>

#include "spsc_ring.h"

#define MAX_BURST       64u
#define MAX_ELEM        64u
#define MAX_ROUNDS      101
#define MAX_LIST        8

enum impl { IMPL_DPSOCK, IMPL_RTE };
static const char *const impl_name[] = { "dpsock_spsc", "rte_ring SP/SC" };

struct round {
	enum impl impl;
	uint32_t esize;
	uint32_t burst;
	uint64_t n;
	/* results, written by the consumer */
	uint64_t cycles;
	uint64_t bad;
};

static struct rte_ring *rte_r;
static void *spsc_mem;
static size_t spsc_bytes;
static uint32_t slots = 1024;

/* ------------------------------------------------------------------------ */
/* Producer and consumer loops, instantiated per (implementation, element
 * size) so that the element size is a constant for rte_ring's inline code. */

#define DEFINE_LOOPS(ES)                                                      \
static void                                                                   \
produce_rte_##ES(uint64_t n, uint32_t burst)                                  \
{                                                                             \
	uint64_t buf[MAX_BURST * (ES) / 8] = { 0 };                           \
	uint64_t seq = 0;                                                     \
									      \
	while (seq < n) {                                                     \
		uint32_t b = n - seq < burst ? (uint32_t)(n - seq) : burst;   \
		uint32_t done = 0;                                            \
									      \
		for (uint32_t i = 0; i < b; i++)                              \
			buf[i * (ES) / 8] = seq + i;                          \
		while (done < b) {                                            \
			uint32_t k = rte_ring_sp_enqueue_burst_elem(rte_r,    \
				buf + done * (ES) / 8, (ES), b - done, NULL); \
			if (k == 0)                                           \
				rte_pause();                                  \
			done += k;                                            \
		}                                                             \
		seq += b;                                                     \
	}                                                                     \
}                                                                             \
									      \
static void                                                                   \
consume_rte_##ES(struct round *rd)                                            \
{                                                                             \
	uint64_t buf[MAX_BURST * (ES) / 8];                                   \
	uint64_t seq = 0, t0 = 0, bad = 0;                                    \
									      \
	while (seq < rd->n) {                                                 \
		uint32_t k = rte_ring_sc_dequeue_burst_elem(rte_r, buf, (ES), \
							    rd->burst, NULL); \
		if (k == 0) {                                                 \
			rte_pause();                                          \
			continue;                                             \
		}                                                             \
		if (seq == 0)                                                 \
			t0 = rte_rdtsc();                                     \
		for (uint32_t i = 0; i < k; i++)                              \
			bad += buf[i * (ES) / 8] != seq + i;                  \
		seq += k;                                                     \
	}                                                                     \
	rd->cycles = rte_rdtsc() - t0;                                        \
	rd->bad = bad;                                                        \
}                                                                             \
									      \
static void                                                                   \
produce_dpsock_##ES(uint64_t n, uint32_t burst)                               \
{                                                                             \
	struct dpsock_spsc_prod p;                                            \
	uint64_t buf[MAX_BURST * (ES) / 8] = { 0 };                           \
	uint64_t seq = 0;                                                     \
									      \
	if (dpsock_spsc_prod_attach(&p, spsc_mem, spsc_bytes) != 0)           \
		rte_panic("dpsock_spsc_prod_attach\n");                        \
	while (seq < n) {                                                     \
		uint32_t b = n - seq < burst ? (uint32_t)(n - seq) : burst;   \
		uint32_t done = 0;                                            \
									      \
		for (uint32_t i = 0; i < b; i++)                              \
			buf[i * (ES) / 8] = seq + i;                          \
		while (done < b) {                                            \
			uint32_t k = dpsock_spsc_enqueue_burst(&p,            \
				buf + done * (ES) / 8, b - done);             \
			if (k == 0)                                           \
				rte_pause();                                  \
			done += k;                                            \
		}                                                             \
		seq += b;                                                     \
	}                                                                     \
}                                                                             \
									      \
static void                                                                   \
consume_dpsock_##ES(struct round *rd)                                         \
{                                                                             \
	struct dpsock_spsc_cons c;                                            \
	uint64_t buf[MAX_BURST * (ES) / 8];                                   \
	uint64_t seq = 0, t0 = 0, bad = 0;                                    \
									      \
	if (dpsock_spsc_cons_attach(&c, spsc_mem, spsc_bytes) != 0)           \
		rte_panic("dpsock_spsc_cons_attach\n");                        \
	while (seq < rd->n) {                                                 \
		uint32_t k = dpsock_spsc_dequeue_burst(&c, buf, rd->burst);   \
		if (k == 0) {                                                 \
			rte_pause();                                          \
			continue;                                             \
		}                                                             \
		if (seq == 0)                                                 \
			t0 = rte_rdtsc();                                     \
		for (uint32_t i = 0; i < k; i++)                              \
			bad += buf[i * (ES) / 8] != seq + i;                  \
		seq += k;                                                     \
	}                                                                     \
	rd->cycles = rte_rdtsc() - t0;                                        \
	rd->bad = bad;                                                        \
}

DEFINE_LOOPS(8)
DEFINE_LOOPS(16)
DEFINE_LOOPS(32)
DEFINE_LOOPS(64)

static bool
size_supported(uint32_t es)
{
	return es == 8 || es == 16 || es == 32 || es == 64;
}

static int
producer_main(void *arg)
{
	struct round *rd = arg;

#define PRODUCE(ES)                                                           \
	case ES:                                                              \
		if (rd->impl == IMPL_RTE)                                     \
			produce_rte_##ES(rd->n, rd->burst);                   \
		else                                                          \
			produce_dpsock_##ES(rd->n, rd->burst);                \
		break;
	switch (rd->esize) {
	PRODUCE(8) PRODUCE(16) PRODUCE(32) PRODUCE(64)
	}
	return 0;
}

static void
consumer_main(struct round *rd)
{
#define CONSUME(ES)                                                           \
	case ES:                                                              \
		if (rd->impl == IMPL_RTE)                                     \
			consume_rte_##ES(rd);                                 \
		else                                                          \
			consume_dpsock_##ES(rd);                              \
		break;
	switch (rd->esize) {
	CONSUME(8) CONSUME(16) CONSUME(32) CONSUME(64)
	}
}

/* ------------------------------------------------------------------------ */

static int
setup_rings(uint32_t esize)
{
	ssize_t sz;

	rte_ring_free(rte_r);
	rte_free(spsc_mem);
	rte_r = rte_ring_create_elem("ring_bench", esize, slots, (int)rte_socket_id(),
				     RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	if (rte_r == NULL) {
		fprintf(stderr, "rte_ring_create_elem(%u B x %u): %s\n", esize, slots,
			rte_strerror(rte_errno));
		return -1;
	}
	sz = dpsock_spsc_memsize(esize, slots);
	if (sz < 0) {
		fprintf(stderr, "dpsock_spsc_memsize(%u, %u): %s\n", esize, slots, strerror((int)-sz));
		return -1;
	}
	spsc_bytes = (size_t)sz;
	spsc_mem = rte_zmalloc_socket("ring_bench_spsc", spsc_bytes, RTE_CACHE_LINE_SIZE * 2,
				      (int)rte_socket_id());
	if (spsc_mem == NULL || dpsock_spsc_init(spsc_mem, spsc_bytes, esize, slots) != 0) {
		fprintf(stderr, "dpsock ring of %u B x %u: no memory\n", esize, slots);
		return -1;
	}
	if (rte_ring_get_capacity(rte_r) != slots) {
		fprintf(stderr, "rte_ring capacity %u, wanted %u\n", rte_ring_get_capacity(rte_r), slots);
		return -1;
	}
	return 0;
}

/* One round; returns ns per item, or -1. */
static double
run_round(unsigned worker, struct round *rd)
{
	rd->cycles = 0;
	rd->bad = 0;
	if (rte_eal_remote_launch(producer_main, rd, worker) != 0) {
		fprintf(stderr, "rte_eal_remote_launch failed\n");
		return -1;
	}
	consumer_main(rd);
	rte_eal_wait_lcore(worker);
	if (rd->bad) {
		fprintf(stderr, "%s, %u B, burst %u: %" PRIu64 " elements out of order or wrong\n",
			impl_name[rd->impl], rd->esize, rd->burst, rd->bad);
		return -1;
	}
	return (double)rd->cycles * 1e9 / (double)rte_get_tsc_hz() / (double)(rd->n - 1);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stat3 {
	double med, min, max;
};

static struct stat3
stats(double *v, int n)
{
	struct stat3 s;

	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	s.min = v[0];
	s.max = v[n - 1];
	s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	return s;
}

static int
parse_list(const char *arg, uint32_t *out, int max)
{
	char *end;
	int n = 0;

	while (*arg && n < max) {
		unsigned long v = strtoul(arg, &end, 0);

		if (end == arg)
			return -1;
		out[n++] = (uint32_t)v;
		arg = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

static void
usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL options] -- [-r ROUNDS] [-t SECONDS] [-s SLOTS] "
		"[-e SIZE,...] [-b BURST,...]\n"
		"  -r rounds per configuration and ring (default 7)\n"
		"  -t seconds per round, roughly (default 0.2)\n"
		"  -s ring slots, a power of two (default 1024)\n"
		"  -e element sizes in bytes: 8, 16, 32, 64 (default 8,32)\n"
		"  -b burst sizes, 1..%u (default 1,32)\n", prog, MAX_BURST);
}

int
main(int argc, char **argv)
{
	uint32_t esizes[MAX_LIST] = { 8, 32 }, bursts[MAX_LIST] = { 1, 32 };
	int n_es = 2, n_b = 2, rounds = 7, ret, opt;
	double secs = 0.2;
	unsigned worker;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	while ((opt = getopt(argc, argv, "r:t:s:e:b:h")) != -1) {
		switch (opt) {
		case 'r': rounds = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case 's': slots = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'e': n_es = parse_list(optarg, esizes, MAX_LIST); break;
		case 'b': n_b = parse_list(optarg, bursts, MAX_LIST); break;
		default: usage(argv[0]); rte_eal_cleanup(); return opt == 'h' ? 0 : 1;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || secs <= 0 || n_es < 1 || n_b < 1 ||
	    dpsock_spsc_memsize(8, slots) < 0) {
		usage(argv[0]);
		rte_eal_cleanup();
		return 1;
	}
	for (int i = 0; i < n_es; i++)
		if (!size_supported(esizes[i])) {
			fprintf(stderr, "element size %u not built in (8, 16, 32, 64)\n", esizes[i]);
			rte_eal_cleanup();
			return 1;
		}
	for (int i = 0; i < n_b; i++)
		if (bursts[i] < 1 || bursts[i] > MAX_BURST || bursts[i] > slots) {
			fprintf(stderr, "burst %u out of range\n", bursts[i]);
			rte_eal_cleanup();
			return 1;
		}
	worker = rte_get_next_lcore(-1, 1, 0);
	if (worker >= RTE_MAX_LCORE) {
		printf("skip: ring_bench needs two lcores (EAL -l 0-1)\n");
		rte_eal_cleanup();
		return 77;
	}

	printf("## SPSC ring: dpsock_spsc vs rte_ring SP/SC\n\n");
	printf("%s; consumer on lcore %u, producer on lcore %u; %u slots; "
	       "%d rounds of ~%.2f s per configuration; TSC %.2f GHz\n\n",
	       rte_version(), rte_lcore_id(), worker, slots, rounds, secs,
	       rte_get_tsc_hz() / 1e9);
	printf("| elem | burst | dpsock_spsc ns/item median (min-max) "
	       "| rte_ring SP/SC ns/item median (min-max) | rte_ring / dpsock |\n");
	printf("|---:|---:|---:|---:|---:|\n");
	fflush(stdout);

	for (int ei = 0; ei < n_es; ei++) {
		if (setup_rings(esizes[ei]) != 0) {
			rte_eal_cleanup();
			return 1;
		}
		for (int bi = 0; bi < n_b; bi++) {
			struct round rd[2];
			struct stat3 st[2];
			double v[2][MAX_ROUNDS];

			/* warm-up round per ring, also the calibration */
			for (int impl = 0; impl < 2; impl++) {
				double warm;

				rd[impl] = (struct round){ .impl = impl, .esize = esizes[ei],
							   .burst = bursts[bi], .n = 200000 };
				warm = run_round(worker, &rd[impl]);
				if (warm < 0) {
					rte_eal_cleanup();
					return 1;
				}
				rd[impl].n = (uint64_t)(secs * 1e9 / (warm > 0.1 ? warm : 0.1));
				rd[impl].n = RTE_MAX(rd[impl].n, (uint64_t)100000);
				rd[impl].n = RTE_MIN(rd[impl].n, (uint64_t)500000000);
			}
			/* rounds alternate between the rings, so that a burst of
			 * noise from the rest of the machine hits both alike */
			for (int r = 0; r < rounds; r++)
				for (int impl = 0; impl < 2; impl++) {
					v[impl][r] = run_round(worker, &rd[impl]);
					if (v[impl][r] < 0) {
						rte_eal_cleanup();
						return 1;
					}
				}
			st[0] = stats(v[0], rounds);
			st[1] = stats(v[1], rounds);
			printf("| %u B | %u | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2f |\n",
			       esizes[ei], bursts[bi],
			       st[0].med, st[0].min, st[0].max,
			       st[1].med, st[1].min, st[1].max,
			       st[1].med / st[0].med);
			fflush(stdout);
		}
	}
	rte_ring_free(rte_r);
	rte_free(spsc_mem);
	rte_eal_cleanup();
	return 0;
}
