/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsockd — the dpsock daemon: the stack (stack/stack.c) whose app is the
 * preload server (dpsock_preload_app): a control thread that attaches
 * client processes (clients.c) and workers that serve their command rings
 * and sockets (serve.c).
 *
 *   dpsockd [EAL options] -- [-f dpsock.conf] [--takeover [--detach]] [--help] [--help-config]
 *           [--version]
 */

#include <stdio.h>
#include <string.h>

#include "dpsock/dpsock.h"

#include "server_priv.h"
#include "takeover/takeover.h"

static void
usage(FILE *f, const char *prog)
{
	fprintf(f,
		"Usage: %s [EAL options] -- [-f FILE] [--takeover [--detach]] [--help] [--help-config]\n"
		"       [--version]\n"
		"\n"
		"dpsock daemon: a kernel-bypass TCP/UDP stack on DPDK, one lwIP instance per\n"
		"worker lcore.\n\n",
		prog);
	dpsock_usage(f);
}

int
main(int argc, char **argv)
{
	static const struct dpsock_tko_app takeover = {
		.wire_version = DPSOCK_PL_VERSION,
		.freeze = dpsock_pl_tko_freeze,
		.main_export = dpsock_pl_tko_export,
		.worker_export = dpsock_pl_tko_worker_export,
		.resume = dpsock_pl_tko_resume,
	};
	int n;

	/* a new dpsockd can take everything over from this one (--takeover) */
	dpsock_tko_register(&takeover, NULL);
	n = dpsock_init(argc, argv);

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
