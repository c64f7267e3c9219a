/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock-stat — read the counters a running dpsockd publishes in
 * /dev/shm/dpsock.<name>.stats. Lock-free: it only loads.
 *
 *   dpsock-stat [-n NAME] [--json]
 *
 * Plain output is one counter per line, "<scope>.<index>.<counter> <value>"
 * (port.0.rx_packets 10, worker.1.rx_drop_ip_cksum 3), for people and for
 * scripts that grep; --json gives the same numbers as one JSON object.
 * Exit status: 0, 1 when no daemon of that name runs, 2 for bad usage.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stats_priv.h"

static void
usage(FILE *f)
{
	fprintf(f, "Usage: dpsock-stat [-n NAME] [--json]\n"
		   "  -n, --name NAME  the dpsockd instance (name = ... in its config; default dpsock)\n"
		   "  -j, --json       JSON instead of one counter per line\n"
		   "  -h, --help       this text\n");
}

#define PRINT_PLAIN(name, help) printf("%s.%u.%s %" PRIu64 "\n", scope, idx, #name, dpsock_stat_read(&blk->name));
#define PRINT_JSON(name, help) printf("%s\"%s\": %" PRIu64, first++ ? ", " : "", #name, dpsock_stat_read(&blk->name));

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = "dpsock";
	const struct dpsock_stats_segment *s;
	char shm[128];
	bool json = false;
	unsigned int idx;
	int opt, fd;

	while ((opt = getopt_long(argc, argv, "n:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			name = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	snprintf(shm, sizeof(shm), DPSOCK_STATS_SHM_FMT, name);
	fd = shm_open(shm, O_RDONLY, 0);
	if (fd < 0) {
		fprintf(stderr, "dpsock-stat: no dpsockd called '%s' is running (/dev/shm%s: %s)\n",
			name, shm, strerror(errno));
		return 1;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED) {
		fprintf(stderr, "dpsock-stat: mmap /dev/shm%s: %s\n", shm, strerror(errno));
		return 1;
	}
	/* acquire: pairs with the daemon's release store of magic / running */
	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != DPSOCK_STATS_MAGIC ||
	    s->version != DPSOCK_STATS_VERSION || s->size != sizeof(*s)) {
		fprintf(stderr, "dpsock-stat: /dev/shm%s is not a stats segment of this version\n", shm);
		return 1;
	}
	if (!__atomic_load_n(&s->running, __ATOMIC_ACQUIRE) ||
	    (kill(s->pid, 0) != 0 && errno == ESRCH)) {
		fprintf(stderr, "dpsock-stat: dpsockd '%s' (pid %d) is not running (starting or stopped)\n",
			name, (int)s->pid);
		return 1;
	}
	if (json) {
		printf("{\"name\": \"%s\", \"pid\": %d, \"ports\": [", s->name, (int)s->pid);
		for (idx = 0; idx < s->n_ports && idx < DPSOCK_STATS_MAX_PORTS; idx++) {
			const struct dpsock_port_stats *blk = &s->ports[idx];
			int first = 0;

			printf("%s{\"name\": \"%s\", ", idx ? ", " : "", s->port_names[idx]);
			first++;
			printf("\"index\": %u", idx);
			DPSOCK_PORT_COUNTERS(PRINT_JSON)
			printf("}");
		}
		printf("], \"workers\": [");
		for (idx = 0; idx < s->n_workers && idx < DPSOCK_STATS_MAX_WORKERS; idx++) {
			const struct dpsock_worker_stats *blk = &s->workers[idx];
			int first = 1;

			printf("%s{\"index\": %u, \"lcore\": %u", idx ? ", " : "", idx, blk->lcore_id);
			DPSOCK_WORKER_COUNTERS(PRINT_JSON)
			printf("}");
		}
		printf("]}\n");
		return 0;
	}
	printf("daemon.0.pid %d\ndaemon.0.ports %u\ndaemon.0.workers %u\n", (int)s->pid,
	       s->n_ports, s->n_workers);
	for (idx = 0; idx < s->n_ports && idx < DPSOCK_STATS_MAX_PORTS; idx++) {
		const struct dpsock_port_stats *blk = &s->ports[idx];
		const char *scope = "port";

		DPSOCK_PORT_COUNTERS(PRINT_PLAIN)
	}
	for (idx = 0; idx < s->n_workers && idx < DPSOCK_STATS_MAX_WORKERS; idx++) {
		const struct dpsock_worker_stats *blk = &s->workers[idx];
		const char *scope = "worker";

		DPSOCK_WORKER_COUNTERS(PRINT_PLAIN)
	}
	return 0;
}
