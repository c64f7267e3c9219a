/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * extra_echo — built by test/install/install.sh against the INSTALLED
 * headers (pkg-config --cflags --libs dpsock), run under the installed
 * preload library: finds the extra API, receives COUNT datagrams
 * "hello N" by zero-copy on UDP port PORT, answers each with "ack N".
 * Prints "extra_echo: ok COUNT" (or "extra_echo: no api" and exits 3).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <dpsock/extra.h>

int
main(int argc, char **argv)
{
	const struct dpsock_extra_api *x = dpsock_get_api();
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd, count, got = 0;

	if (argc != 3)
		return 2;
	if (x == NULL || !(x->caps & DPSOCK_CAP_ZCOPY_UDP)) {
		printf("extra_echo: no api\n");
		return 3;
	}
	a.sin_port = htons((uint16_t)atoi(argv[1]));
	count = atoi(argv[2]);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("extra_echo");
		return 1;
	}
	printf("extra_echo: ready (extra API version %u)\n", x->version);
	fflush(stdout);
	while (got < count) {
		struct dpsock_zpkt p[8];
		int n = x->recvfrom_zcopy(fd, p, 8, 0);

		if (n < 0) {
			fprintf(stderr, "extra_echo: recvfrom_zcopy: %s\n", strerror(-n));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			char text[64] = "", ack[64];
			size_t l = p[i].len < sizeof(text) - 1 ? p[i].len : sizeof(text) - 1;
			size_t l0 = l < p[i].iov[0].iov_len ? l : p[i].iov[0].iov_len;
			int seq;

			memcpy(text, p[i].iov[0].iov_base, l0);
			memcpy(text + l0, p[i].iov[1].iov_base, l - l0);
			if (sscanf(text, "hello %d", &seq) != 1) {
				fprintf(stderr, "extra_echo: unexpected '%s'\n", text);
				return 1;
			}
			snprintf(ack, sizeof(ack), "ack %d", seq);
			sendto(fd, ack, strlen(ack), 0, (struct sockaddr *)&p[i].from, sizeof(p[i].from));
			if (seq == got)
				got++;
		}
		x->free_packets(p, (unsigned int)n);
	}
	printf("extra_echo: ok %d\n", got);
	return 0;
}
