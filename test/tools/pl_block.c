/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pl_block — a program blocked in one socket call, as a real one would be,
 * for what happens when dpsockd goes away under it
 * (test/integration/preload_daemon_gone.sh).
 *
 *   pl_block MODE ADDR PORT
 *
 * Sets up the socket of MODE, prints "ready", then makes its blocking
 * call again and again, as a server's loop does, and prints each outcome:
 *   "error ERRNO_NAME MS"  the call failed (MS since the last "ready" or outcome)
 *   "returned N MS"        it returned N (bytes, a descriptor, revents...)
 * A UDP program, a listener and a readiness wait on them call again after
 * an error (sockperf, nginx and the like keep serving), so on Linux they
 * block again: a socket that kept failing at once would spin here, and the
 * test sees it in the CPU this process uses. A connection stops where a
 * Linux program would: after an error, or at EOF (0 from recv: a reset
 * connection reads EOF after its error, on Linux too).
 *
 * MODE, with ADDR/PORT:
 *   udp-recvfrom, udp-recvmsg, udp-recvmmsg, udp-read  bind ADDR:PORT (UDP), receive
 *   udp-poll, udp-select, udp-epoll                    the same socket, a readiness wait
 *                                                      for input (then a non-blocking read)
 *   tcp-accept, tcp-accept-epoll                       listen on ADDR:PORT, accept
 *   tcp-recv, tcp-poll, tcp-select, tcp-epoll          connect to ADDR:PORT (a peer
 *                                                      that never writes), wait for input
 *   tcp-send                                           connect to ADDR:PORT (a peer that
 *                                                      never reads), blocking sends until
 *                                                      one fails (only that is an outcome)
 *   tcp-connect                                        a blocking connect to ADDR:PORT
 *                                                      (a peer whose SYNs are dropped)
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
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double t_last;

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *
errname(int e)
{
	switch (e) {
#define E(x) case x: return #x;
	E(ECONNRESET) E(ECONNABORTED) E(ECONNREFUSED) E(EPIPE) E(ENOTCONN) E(ETIMEDOUT)
	E(EAGAIN) E(EINTR) E(EBADF) E(EINVAL) E(ENETDOWN) E(ENETUNREACH) E(EHOSTUNREACH)
	E(ESHUTDOWN) E(EIO) E(ENOTSOCK)
#undef E
	default: return "E?";
	}
}

/* print one outcome; true when it was an error */
static int
outcome(long r)
{
	double t = now_ms();

	if (r < 0)
		printf("error %s %.0f\n", errname(errno), t - t_last);
	else
		printf("returned %ld %.0f\n", r, t - t_last);
	fflush(stdout);
	t_last = t;
	return r < 0;
}

static void
die(const char *what)
{
	fprintf(stderr, "pl_block: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct sockaddr_in sa;

/* an epoll instance watching s for input */
static int
epoll_on(int s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	int ep = epoll_create1(0);

	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0)
		die("epoll");
	return ep;
}

static int
udp_bound(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("udp bind");
	return s;
}

static int
tcp_connected(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("tcp connect");
	return s;
}

/* readiness wait for input on s, by poll, select or epoll; -1 or revents */
static long
wait_in(int s, const char *how, int ep)
{
	if (strcmp(how, "poll") == 0) {
		struct pollfd p = { s, POLLIN, 0 };
		int r = poll(&p, 1, -1);

		return r < 0 ? -1 : p.revents;
	}
	if (strcmp(how, "select") == 0) {
		fd_set rd, ex;
		int r;

		FD_ZERO(&rd);
		FD_ZERO(&ex);
		FD_SET(s, &rd);
		FD_SET(s, &ex);
		r = select(s + 1, &rd, NULL, &ex, NULL);
		return r < 0 ? -1 : (FD_ISSET(s, &rd) ? POLLIN : 0) | (FD_ISSET(s, &ex) ? POLLPRI : 0);
	}
	struct epoll_event ev;
	int r = epoll_wait(ep, &ev, 1, -1);

	return r < 0 ? -1 : (long)ev.events;
}

int
main(int argc, char **argv)
{
	char buf[2048];
	const char *mode;
	int s, ep = -1;

	if (argc != 4) {
		fprintf(stderr, "usage: pl_block MODE ADDR PORT\n");
		return 2;
	}
	mode = argv[1];
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) {
		fprintf(stderr, "pl_block: bad address %s\n", argv[2]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (strncmp(mode, "udp-", 4) == 0) {
		const char *how = mode + 4;

		s = udp_bound();
		if (strcmp(how, "epoll") == 0)
			ep = epoll_on(s);
		printf("ready\n");
		t_last = now_ms();
		for (;;) {
			long r;

			if (strcmp(how, "recvfrom") == 0) {
				struct sockaddr_in from;
				socklen_t fl = sizeof(from);

				r = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
			} else if (strcmp(how, "recvmsg") == 0) {
				struct iovec iov = { buf, sizeof(buf) };
				struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

				r = recvmsg(s, &mh, 0);
			} else if (strcmp(how, "recvmmsg") == 0) {
				struct iovec iov = { buf, sizeof(buf) };
				struct mmsghdr mm = { .msg_hdr = { .msg_iov = &iov, .msg_iovlen = 1 } };

				r = recvmmsg(s, &mm, 1, 0, NULL);
			} else if (strcmp(how, "read") == 0) {
				r = read(s, buf, sizeof(buf));
			} else if (strcmp(how, "poll") == 0 || strcmp(how, "select") == 0 ||
				   strcmp(how, "epoll") == 0) {
				r = wait_in(s, how, ep);
				if (r > 0) /* take what made it ready, or its error */
					(void)recv(s, buf, sizeof(buf), MSG_DONTWAIT);
			} else {
				fprintf(stderr, "pl_block: unknown mode %s\n", mode);
				return 2;
			}
			outcome(r);
		}
	}
	if (strcmp(mode, "tcp-accept") == 0 || strcmp(mode, "tcp-accept-epoll") == 0) {
		int one = 1;

		s = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (s < 0 || bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, 16) < 0)
			die("listen");
		if (strcmp(mode, "tcp-accept-epoll") == 0) {
			/* an epoll server's listener never blocks (nginx's) */
			fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
			ep = epoll_on(s);
		}
		printf("ready\n");
		t_last = now_ms();
		for (;;) {
			long r;

			if (ep >= 0) {
				r = wait_in(s, "epoll", ep);
				if (r > 0) {
					int c = accept4(s, NULL, NULL, SOCK_NONBLOCK);

					if (c >= 0)
						close(c);
				}
			} else {
				r = accept(s, NULL, NULL);
				if (r >= 0)
					close((int)r);
			}
			outcome(r);
		}
	}
	if (strcmp(mode, "tcp-connect") == 0) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0)
			die("socket");
		printf("ready\n");
		t_last = now_ms();
		outcome(connect(s, (struct sockaddr *)&sa, sizeof(sa)));
		return 0;
	}
	if (strcmp(mode, "tcp-send") == 0) {
		s = tcp_connected();
		memset(buf, 'x', sizeof(buf));
		printf("ready\n");
		t_last = now_ms();
		/* blocking sends until one fails: they block once the peer's
		 * window and what the stack queues are full; only the failure
		 * is an outcome */
		for (;;) {
			ssize_t n = send(s, buf, sizeof(buf), MSG_NOSIGNAL);

			if (n < 0) {
				outcome(n);
				return 0;
			}
			t_last = now_ms();
		}
	}
	if (strncmp(mode, "tcp-", 4) == 0) {
		const char *how = mode + 4;

		s = tcp_connected();
		if (strcmp(how, "epoll") == 0)
			ep = epoll_on(s);
		printf("ready\n");
		t_last = now_ms();
		for (;;) {
			long r;

			if (strcmp(how, "recv") == 0) {
				r = recv(s, buf, sizeof(buf), 0);
			} else if (strcmp(how, "poll") == 0 || strcmp(how, "select") == 0 ||
				   strcmp(how, "epoll") == 0) {
				r = wait_in(s, how, ep);
				if (r > 0)
					r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
			} else {
				fprintf(stderr, "pl_block: unknown mode %s\n", mode);
				return 2;
			}
			/* a connection ends at its error or at EOF, as a program's would */
			if (outcome(r) || r == 0)
				return 0;
		}
	}
	fprintf(stderr, "pl_block: unknown mode %s\n", mode);
	return 2;
}
