/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * udp_blast — a Linux UDP sender for the extra API's tests and benchmark
 * (test/integration/extra_zcopy.sh, test/perf/udp_recv.sh): datagrams of
 * SIZE bytes, each an 8-byte sequence number (host order) then the pattern
 * apps/udp_recv.c checks (byte i of datagram seq = seq * 7 + i * 13).
 *
 *   udp_blast -d IP -p PORT -s SIZE [-n COUNT] [-t SECONDS] [-w WINDOW]
 *             [-r PPS] [-f FIRST_SEQ]
 *
 *   -n COUNT   datagrams to send (default: until -t runs out)
 *   -t SECONDS stop sending after this long (default 10)
 *   -w WINDOW  never more than WINDOW datagrams ahead of what the receiver
 *              acknowledged (its --ack: an 8-byte count every 16 datagrams,
 *              sent back to this socket); a receiver silent for 5 s is an
 *              error. Without -w: as fast as sendmmsg goes (batches of 32)
 *   -r PPS     pace to about PPS datagrams per second
 *
 * Prints "udp_blast: sent=N acked=A elapsed_s=T pps=R" and exits 0, or 1
 * when the receiver stalled.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 32

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void
fill(unsigned char *buf, size_t size, uint64_t seq)
{
	memcpy(buf, &seq, sizeof(seq));
	for (size_t i = 8; i < size; i++)
		buf[i] = (unsigned char)(seq * 7u + i * 13u);
}

int
main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint64_t count = 0, window = 0, pps = 0, sent = 0, acked = 0, first = 0;
	double secs = 10, t0, last_ack;
	size_t size = 64;
	unsigned char (*bufs)[65536];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	int o, fd;

	while ((o = getopt(argc, argv, "d:p:s:n:t:w:r:f:")) != -1) {
		switch (o) {
		case 'd':
			if (inet_pton(AF_INET, optarg, &to.sin_addr) != 1)
				return 2;
			break;
		case 'p':
			to.sin_port = htons((uint16_t)atoi(optarg));
			break;
		case 's':
			size = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'w':
			window = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			pps = strtoull(optarg, NULL, 10);
			break;
		case 'f':
			first = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: udp_blast -d IP -p PORT -s SIZE [-n COUNT] [-t S] [-w WINDOW] [-r PPS] [-f FIRST]\n");
			return 2;
		}
	}
	if (to.sin_addr.s_addr == 0 || to.sin_port == 0 || size < 8 || size > 65507) {
		fprintf(stderr, "udp_blast: -d, -p and -s (8..65507) are needed\n");
		return 2;
	}
	bufs = calloc(BATCH, sizeof(*bufs));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (bufs == NULL || fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		perror("udp_blast");
		return 1;
	}
	t0 = last_ack = now_s();
	while ((count == 0 || sent < count) && now_s() - t0 < secs) {
		unsigned int n = BATCH;
		int r;

		if (count > 0 && count - sent < n)
			n = (unsigned int)(count - sent);
		if (window > 0) {
			struct pollfd p = { fd, POLLIN, 0 };
			uint64_t a;

			while (recv(fd, &a, sizeof(a), MSG_DONTWAIT) == (ssize_t)sizeof(a))
				if (a > acked) {
					acked = a;
					last_ack = now_s();
				}
			if (sent - acked >= window) {
				if (now_s() - last_ack > 5) {
					fprintf(stderr, "udp_blast: receiver silent for 5 s at sent=%" PRIu64
						" acked=%" PRIu64 "\n", sent, acked);
					printf("udp_blast: sent=%" PRIu64 " acked=%" PRIu64 " stalled\n", sent, acked);
					return 1;
				}
				poll(&p, 1, 10);
				continue;
			}
			if (window - (sent - acked) < n)
				n = (unsigned int)(window - (sent - acked));
		}
		if (pps > 0) {
			double due = t0 + (double)sent / (double)pps;

			while (now_s() < due)
				;
			if (n > 8)
				n = 8;
		}
		for (unsigned int i = 0; i < n; i++) {
			fill(bufs[i], size, first + sent + i);
			iov[i] = (struct iovec){ bufs[i], size };
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		r = sendmmsg(fd, msgs, n, 0);
		if (r < 0) {
			if (errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED)
				continue;
			perror("udp_blast: sendmmsg");
			return 1;
		}
		sent += (uint64_t)r;
	}
	if (window > 0) {
		/* the last acknowledgements */
		double end = now_s() + 2;

		while (acked < sent && now_s() < end) {
			struct pollfd p = { fd, POLLIN, 0 };
			uint64_t a;

			if (poll(&p, 1, 50) > 0 && recv(fd, &a, sizeof(a), 0) == (ssize_t)sizeof(a) &&
			    a > acked)
				acked = a;
		}
	}
	printf("udp_blast: sent=%" PRIu64 " acked=%" PRIu64 " elapsed_s=%.3f pps=%.0f\n", sent, acked,
	       now_s() - t0, (double)sent / (now_s() - t0));
	return 0;
}
