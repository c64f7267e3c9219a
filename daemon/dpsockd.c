/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsockd — the dpsock daemon: the stack (stack/stack.c) whose app is the
 * preload server (dpsock_preload_app): a control thread that attaches
 * client processes (clients.c) and workers that serve their command rings
 * and sockets (serve.c).
 *
 *   dpsockd [EAL options] -- [-f dpsock.conf] [--help] [--help-config] [--version]
 */

#include <stdio.h>
#include <string.h>

#include "dpsock/dpsock.h"

#include "server_priv.h"

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options] -- [-f FILE] [--help] [--help-config] [--version]\n"
		"\n"
		"dpsock daemon: a kernel-bypass TCP/UDP stack on DPDK, one lwIP instance per\n"
		"worker lcore.\n\n",
		prog);
	dpsock_usage(f);
}

int
main(int argc, char **argv)
{
	int n = dpsock_init(argc, argv);

	if (n < 0)
		return 1;
	if (n < argc) {
		bool help = strcmp(argv[n], "-h") == 0 || strcmp(argv[n], "--help") == 0;

		if (!help)
			fprintf(stderr, "dpsockd: unexpected argument '%s'\n", argv[n]);
		usage(help ? stdout : stderr, "dpsockd");
		dpsock_fini();
		return help ? 0 : 2;
	}
	return dpsock_run(&dpsock_preload_app, NULL);
}
