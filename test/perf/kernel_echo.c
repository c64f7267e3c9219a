/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernel_echo — the Linux-kernel counterpart of `dpsock-echo --raw` for the
 * benchmarks (test/perf/run-all): a single-threaded TCP + UDP echo server on
 * the kernel's sockets, waiting in epoll_wait (default), poll or select
 * (--wait), so that the benchmarks of the preload library measure each way
 * a program may wait. Pin it with taskset; it never spins (the wait blocks).
 *
 *   kernel_echo [-p PORT] [-a ADDR] [--tcp-only|--udp-only] [--wait epoll|poll|select]
 *
 * ADDR, the address both sockets bind: an IPv4 or an IPv6 literal, the
 * sockets then of its family; without -a, IPv4's any (0.0.0.0).
 *
 * TCP: every byte received is sent back as it is. What send() does not take
 * waits in a per-connection backlog, flushed on EPOLLOUT; while the backlog
 * is above ECHO_OUT_HIGH the connection is not read (EPOLLIN off), so a
 * client that sends without reading is slowed down by TCP, as dpsock-echo
 * does with dpsock_rx_hold. TCP_NODELAY on every connection.
 * UDP: every datagram is sent back to its sender.
 *
 * SIGINT/SIGTERM: print one line of counters and exit 0:
 *   echo: total tcp_conns= tcp_closed= resets= bytes_in= bytes_out=
 *         udp_dgrams= udp_drops= send_errors=
 * Exit 2 on a bad command line, 1 when the sockets cannot be set up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#define ECHO_OUT_HIGH (256u * 1024)
#define BUF_SIZE 65536
#define MAX_EVENTS 256

struct conn {
	int fd;
	bool reading;	/* EPOLLIN armed */
	uint8_t *out;	/* backlog */
	size_t head, len, cap;
};

/* An address of either family: sa.sa_family says which. */
union sockaddr_any {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

static volatile sig_atomic_t stop;
static int ep;

/* ---- the wait: epoll, poll or select behind one interface -------------- */

enum wait_kind { W_EPOLL, W_POLL, W_SELECT };
static enum wait_kind wk = W_EPOLL;
#define MAX_FDS 65536
static void *fd_ptr[MAX_FDS];     /* poll/select: what each fd stands for */
static uint32_t fd_want[MAX_FDS]; /* poll/select: its EPOLL* interest, 0 = none */
static int fd_hi;                 /* poll/select: highest fd + 1 in use */
static struct pollfd *pfds;

static int
ws_set(int op, int fd, void *ptr, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	if (wk == W_EPOLL)
		return epoll_ctl(ep, op, fd, op == EPOLL_CTL_DEL ? NULL : &ev);
	if (fd < 0 || fd >= MAX_FDS || (wk == W_SELECT && fd >= FD_SETSIZE)) {
		errno = EMFILE;
		return -1;
	}
	fd_ptr[fd] = op == EPOLL_CTL_DEL ? NULL : ptr;
	fd_want[fd] = op == EPOLL_CTL_DEL ? 0 : events;
	if (op != EPOLL_CTL_DEL && fd >= fd_hi)
		fd_hi = fd + 1;
	while (fd_hi > 0 && fd_ptr[fd_hi - 1] == NULL)
		fd_hi--;
	return 0;
}

/* Wait for events: like epoll_wait, whichever the wait is. */
static int
ws_wait(struct epoll_event *evs, int max)
{
	int n = 0, r, fd;

	if (wk == W_EPOLL)
		return epoll_wait(ep, evs, max, -1);
	if (wk == W_POLL) {
		int np = 0;

		for (fd = 0; fd < fd_hi; fd++)
			if (fd_ptr[fd] != NULL)
				pfds[np++] = (struct pollfd){
					.fd = fd,
					.events = (short)((fd_want[fd] & EPOLLIN ? POLLIN : 0) |
							  (fd_want[fd] & EPOLLOUT ? POLLOUT : 0) |
							  (fd_want[fd] & EPOLLRDHUP ? POLLRDHUP : 0)) };
		r = poll(pfds, (nfds_t)np, -1);
		for (int i = 0; i < np && r > 0 && n < max; i++)
			if (pfds[i].revents) {
				short v = pfds[i].revents;

				evs[n].data.ptr = fd_ptr[pfds[i].fd];
				evs[n++].events = (v & POLLIN ? EPOLLIN : 0) | (v & POLLOUT ? EPOLLOUT : 0) |
						  (v & POLLRDHUP ? EPOLLRDHUP : 0) |
						  (v & POLLHUP ? EPOLLHUP : 0) | (v & POLLERR ? EPOLLERR : 0);
			}
		return r < 0 ? r : n;
	} else {
		fd_set rs, ws;

		FD_ZERO(&rs);
		FD_ZERO(&ws);
		for (fd = 0; fd < fd_hi; fd++) {
			if (fd_want[fd] & (EPOLLIN | EPOLLRDHUP))
				FD_SET(fd, &rs);
			if (fd_want[fd] & EPOLLOUT)
				FD_SET(fd, &ws);
		}
		r = select(fd_hi, &rs, &ws, NULL, NULL);
		for (fd = 0; fd < fd_hi && r > 0 && n < max; fd++) {
			uint32_t e = (FD_ISSET(fd, &rs) ? EPOLLIN : 0) | (FD_ISSET(fd, &ws) ? EPOLLOUT : 0);

			if (e) {
				evs[n].data.ptr = fd_ptr[fd];
				evs[n++].events = e;
			}
		}
		return r < 0 ? r : n;
	}
}
static uint64_t tcp_conns, tcp_closed, resets, bytes_in, bytes_out, udp_dgrams, udp_drops,
	send_errors;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: kernel_echo [-p PORT] [-a ADDR] [--tcp-only|--udp-only] "
		   "[--wait epoll|poll|select]\n"
		   "ADDR: an IPv4 or IPv6 literal (default 0.0.0.0).\n"
		   "TCP + UDP raw echo server on the Linux stack (one thread).\n");
}

static int
set_events(struct conn *c)
{
	return ws_set(EPOLL_CTL_MOD, c->fd, c,
		      (c->reading ? EPOLLIN : 0) | (c->len ? EPOLLOUT : 0) | EPOLLRDHUP);
}

static void
conn_close(struct conn *c, bool reset)
{
	if (reset)
		resets++;
	else
		tcp_closed++;
	ws_set(EPOLL_CTL_DEL, c->fd, NULL, 0);
	close(c->fd);
	free(c->out);
	free(c);
}

/* Send the backlog. 0, or -1 when the connection failed. */
static int
flush(struct conn *c)
{
	while (c->len) {
		ssize_t r = send(c->fd, c->out + c->head, c->len, MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == EINTR)
				continue;
			send_errors++;
			return -1;
		}
		bytes_out += (uint64_t)r;
		c->head += (size_t)r;
		c->len -= (size_t)r;
	}
	c->head = 0;
	return 0;
}

static int
push(struct conn *c, const uint8_t *p, size_t n)
{
	if (c->head + c->len + n > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		uint8_t *nb;

		if (c->head) {
			memmove(c->out, c->out + c->head, c->len);
			c->head = 0;
		}
		while (cap < c->len + n)
			cap *= 2;
		if (cap != c->cap) {
			nb = realloc(c->out, cap);
			if (nb == NULL)
				return -1;
			c->out = nb;
			c->cap = cap;
		}
	}
	memcpy(c->out + c->head + c->len, p, n);
	c->len += n;
	return 0;
}

static void
on_tcp(struct conn *c, uint32_t events)
{
	static uint8_t buf[BUF_SIZE];
	bool was_reading = c->reading, had_backlog = c->len != 0;

	if (events & EPOLLOUT) {
		if (flush(c) < 0) {
			conn_close(c, true);
			return;
		}
	}
	if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) && c->len < ECHO_OUT_HIGH) {
		for (;;) {
			ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
			ssize_t s = 0;

			if (r == 0) {
				/* orderly end: send what is queued (best effort), close */
				flush(c);
				conn_close(c, false);
				return;
			}
			if (r < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK)
					break;
				conn_close(c, true);
				return;
			}
			bytes_in += (uint64_t)r;
			if (c->len == 0) {
				s = send(c->fd, buf, (size_t)r, MSG_NOSIGNAL);
				if (s < 0) {
					if (errno != EAGAIN && errno != EWOULDBLOCK) {
						send_errors++;
						conn_close(c, true);
						return;
					}
					s = 0;
				}
				bytes_out += (uint64_t)s;
			}
			if (s < r && push(c, buf + s, (size_t)(r - s)) < 0) {
				conn_close(c, true);
				return;
			}
			if (c->len >= ECHO_OUT_HIGH || (size_t)r < sizeof(buf))
				break;
		}
	}
	c->reading = c->len < ECHO_OUT_HIGH;
	if (c->reading != was_reading || (c->len != 0) != had_backlog)
		set_events(c);
}

static void
on_accept(int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct conn *c;

		if (fd < 0)
			return; /* EAGAIN, or out of fds: the next event retries */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->reading = true;
		if (ws_set(EPOLL_CTL_ADD, fd, c, EPOLLIN | EPOLLRDHUP) < 0) {
			close(fd);
			free(c);
			continue;
		}
		tcp_conns++;
	}
}

static void
on_udp(int fd)
{
	static uint8_t buf[BUF_SIZE];

	for (;;) {
		struct sockaddr_storage sa; /* the sender, of the socket's family */
		socklen_t sl = sizeof(sa);
		ssize_t r = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&sa, &sl);

		if (r < 0)
			return;
		udp_dgrams++;
		bytes_in += (uint64_t)r;
		if (sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&sa, sl) < 0)
			udp_drops++;
		else
			bytes_out += (uint64_t)r;
	}
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "addr", required_argument, NULL, 'a' },
		{ "tcp-only", no_argument, NULL, 'T' },
		{ "udp-only", no_argument, NULL, 'U' },
		{ "wait", required_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	union sockaddr_any sa = { .in = { .sin_family = AF_INET } }; /* no -a: 0.0.0.0 */
	socklen_t sa_len = sizeof(sa.in);
	uint16_t port = 11111;
	bool tcp = true, udp = true;
	int opt, lfd = -1, ufd = -1, one = 1;
	struct epoll_event evs[MAX_EVENTS];
	struct sigaction act = { .sa_handler = on_signal };
	char *end;
	long v;

	while ((opt = getopt_long(argc, argv, "p:a:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 65535) {
				fprintf(stderr, "kernel_echo: bad port '%s'\n", optarg);
				return 2;
			}
			port = (uint16_t)v;
			break;
		case 'a':
			/* an IPv4 literal, else an IPv6 one */
			memset(&sa, 0, sizeof(sa));
			if (inet_pton(AF_INET, optarg, &sa.in.sin_addr) == 1) {
				sa.in.sin_family = AF_INET;
				sa_len = sizeof(sa.in);
			} else if (inet_pton(AF_INET6, optarg, &sa.in6.sin6_addr) == 1) {
				sa.in6.sin6_family = AF_INET6;
				sa_len = sizeof(sa.in6);
			} else {
				fprintf(stderr, "kernel_echo: bad address '%s'\n", optarg);
				return 2;
			}
			break;
		case 'T':
			udp = false;
			break;
		case 'U':
			tcp = false;
			break;
		case 'W':
			if (strcmp(optarg, "epoll") == 0) {
				wk = W_EPOLL;
			} else if (strcmp(optarg, "poll") == 0) {
				wk = W_POLL;
			} else if (strcmp(optarg, "select") == 0) {
				wk = W_SELECT;
			} else {
				fprintf(stderr, "kernel_echo: --wait: epoll, poll or select\n");
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (sa.sa.sa_family == AF_INET6)
		sa.in6.sin6_port = htons(port);
	else
		sa.in.sin_port = htons(port);
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("kernel_echo: epoll_create1");
		return 1;
	}
	if (wk == W_POLL && (pfds = calloc(MAX_FDS, sizeof(*pfds))) == NULL) {
		perror("kernel_echo: calloc");
		return 1;
	}
	if (tcp) {
		lfd = socket(sa.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (lfd < 0 || bind(lfd, &sa.sa, sa_len) < 0 ||
		    listen(lfd, 4096) < 0 || ws_set(EPOLL_CTL_ADD, lfd, &lfd, EPOLLIN) < 0) {
			perror("kernel_echo: TCP listener");
			return 1;
		}
	}
	if (udp) {
		ufd = socket(sa.sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (ufd < 0 || bind(ufd, &sa.sa, sa_len) < 0 ||
		    ws_set(EPOLL_CTL_ADD, ufd, &ufd, EPOLLIN) < 0) {
			perror("kernel_echo: UDP socket");
			return 1;
		}
	}
	printf("kernel_echo: ready port=%u tcp=%d udp=%d wait=%s\n", (unsigned int)port, tcp, udp,
	       wk == W_EPOLL ? "epoll" : wk == W_POLL ? "poll" : "select");
	fflush(stdout);
	while (!stop) {
		int n = ws_wait(evs, MAX_EVENTS), i;

		for (i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &lfd)
				on_accept(lfd);
			else if (p == &ufd)
				on_udp(ufd);
			else
				on_tcp(p, evs[i].events);
		}
	}
	printf("echo: total tcp_conns=%" PRIu64 " tcp_closed=%" PRIu64 " resets=%" PRIu64
	       " bytes_in=%" PRIu64 " bytes_out=%" PRIu64 " udp_dgrams=%" PRIu64
	       " udp_drops=%" PRIu64 " send_errors=%" PRIu64 "\n",
	       tcp_conns, tcp_closed, resets, bytes_in, bytes_out, udp_dgrams, udp_drops,
	       send_errors);
	return 0;
}
