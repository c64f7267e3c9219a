/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plexec — a TCP echo server that exec()s itself in the middle of its
 * connections, for libdpsock_preload.so's exec support (run it under the
 * shim; test/integration/preload_exec.sh):
 *
 *   plexec ADDR PORT                    first image
 *   plexec ADDR PORT LFD KEEP DROP      second image (exec'd by the first)
 *
 * First image: listen on ADDR:PORT (print "listening"), accept two
 * connections: KEEP, the one that sends a line first (inherited) and DROP
 * (made close-on-exec with fcntl: closed by exec, so the new image must let
 * go of it: the peer sees a FIN), echo KEEP's line, then exec itself through
 * execv("/proc/self/exe") with the descriptors' numbers in argv.
 *
 * Second image: KEEP and the listener must be the same sockets as before
 * (getpeername of KEEP names the peer, getsockname of the listener has PORT,
 * F_GETFL kept O_NONBLOCK clear), DROP must be gone (its number is not an
 * AF_INET socket). Prints
 * "exec'd", then echoes everything on KEEP and on every connection it
 * accepts on the inherited listener (poll), each until EOF (then close);
 * exits 0 after KEEP and SERVE_N=1 accepted connection ended.
 *
 * Prints "FAIL: ..." and exits 1 on the first failure, 2 on bad arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SERVE_N 1
#define MAXC 8

static void
die(const char *what)
{
	printf("FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int
num(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < 0 || v > 65535) {
		fprintf(stderr, "plexec: bad number '%s'\n", s);
		exit(2);
	}
	return (int)v;
}

/* Write all of buf (blocking). */
static void
put(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write");
		buf += n;
		len -= (size_t)n;
	}
}

static int
first(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char line[256], a1[16], a2[16], a3[16], a4[16];
	size_t got = 0;
	int one = 1, l, keep, drop;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "plexec: bad address '%s'\n", addr);
		return 2;
	}
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 16) < 0)
		die("listen");
	printf("listening\n");
	fflush(stdout);
	/* two connections; the one that sends a line first is KEEP (the
	 * workers' accept queues do not keep the peer's connect order) */
	keep = accept(l, NULL, NULL);
	drop = accept(l, NULL, NULL);
	if (keep < 0 || drop < 0)
		die("accept");
	{
		struct pollfd p[2] = { { keep, POLLIN, 0 }, { drop, POLLIN, 0 } };

		if (poll(p, 2, 20000) <= 0)
			die("poll for the first line");
		if (!(p[0].revents & POLLIN)) {
			int t = keep;

			keep = drop;
			drop = t;
		}
	}
	if (fcntl(drop, F_SETFD, FD_CLOEXEC) < 0)
		die("FD_CLOEXEC");
	/* the first line on KEEP, echoed before exec */
	while (got == 0 || line[got - 1] != '\n') {
		ssize_t n = read(keep, line + got, sizeof(line) - got);

		if (n <= 0 || got + (size_t)n >= sizeof(line))
			die("first line");
		got += (size_t)n;
	}
	put(keep, line, got);
	printf("echoed the first line, exec\n");
	fflush(stdout);
	snprintf(a1, sizeof(a1), "%d", port);
	snprintf(a2, sizeof(a2), "%d", l);
	snprintf(a3, sizeof(a3), "%d", keep);
	snprintf(a4, sizeof(a4), "%d", drop);
	char *argv[] = { "plexec", (char *)addr, a1, a2, a3, a4, NULL };

	execv("/proc/self/exe", argv);
	die("execv");
	return 1;
}

static int
second(int port, int l, int keep, int drop)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	struct pollfd p[MAXC];
	int n = 2, served = 0, keep_open = 1, dom = 0;
	char buf[65536];

	/* the number may have been reused since (the shim's own descriptors),
	 * but not by an AF_INET socket */
	sl = sizeof(int);
	if (getsockopt(drop, SOL_SOCKET, SO_DOMAIN, &dom, &sl) == 0 && dom == AF_INET) {
		printf("FAIL: the close-on-exec connection (fd %d) survived exec\n", drop);
		return 1;
	}
	sl = sizeof(sa);
	if (getsockname(l, (struct sockaddr *)&sa, &sl) < 0 || ntohs(sa.sin_port) != port) {
		printf("FAIL: the inherited listener does not have port %d\n", port);
		return 1;
	}
	sl = sizeof(sa);
	if (getpeername(keep, (struct sockaddr *)&sa, &sl) < 0)
		die("getpeername of the inherited connection");
	if (fcntl(keep, F_GETFL) & O_NONBLOCK) {
		printf("FAIL: O_NONBLOCK appeared on the inherited connection\n");
		return 1;
	}
	printf("exec'd: listener fd %d, connection fd %d from %s:%u\n", l, keep,
	       inet_ntoa(sa.sin_addr), ntohs(sa.sin_port));
	fflush(stdout);
	p[0] = (struct pollfd){ l, POLLIN, 0 };
	p[1] = (struct pollfd){ keep, POLLIN, 0 };
	while (keep_open || served < SERVE_N || n > 2) {
		if (poll(p, (nfds_t)n, 30000) <= 0)
			die("poll (30 s without event)");
		if ((p[0].revents & POLLIN) && served < SERVE_N && n < MAXC) {
			int c = accept(l, NULL, NULL);

			if (c < 0)
				die("accept on the inherited listener");
			p[n++] = (struct pollfd){ c, POLLIN, 0 };
			served++;
			printf("accepted fd %d on the inherited listener\n", c);
			fflush(stdout);
		}
		for (int i = 1; i < n; i++) {
			ssize_t r;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(p[i].fd, buf, sizeof(buf));
			if (r < 0)
				die(i == 1 ? "read on the inherited connection" : "read");
			if (r > 0) {
				put(p[i].fd, buf, (size_t)r);
				continue;
			}
			close(p[i].fd);
			if (i == 1) {
				keep_open = 0;
				p[1].fd = -1;     /* poll ignores it */
			} else {
				p[i] = p[--n];
				i--;
			}
		}
	}
	printf("done\n");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3)
		return first(argv[1], num(argv[2]));
	if (argc == 6)
		return second(num(argv[2]), num(argv[3]), num(argv[4]), num(argv[5]));
	fprintf(stderr, "usage: plexec ADDR PORT\n");
	return 2;
}
