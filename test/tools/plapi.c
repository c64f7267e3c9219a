/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plapi — a battery of socket-API semantic checks, written so that its
 * transcript depends only on what the socket API promises: run once on
 * Linux's own sockets and once under libdpsock_preload.so against dpsockd,
 * the two transcripts must be identical (test/integration/preload_api.sh).
 *
 *   plapi peer BIND_ADDR PORT_BASE      the Linux peer (namespace B)
 *   plapi app PEER_ADDR PORT_BASE       the checks (namespace A)
 *
 * Peer services, at PORT_BASE + :
 *   0 echo     echoes until EOF, then closes
 *   1 sink     reads nothing for 1.5 s, then reads and discards until EOF
 *   2 sender   writes 100 bytes, then shutdown(SHUT_WR); waits for EOF
 *   3 reset    after 100 ms, closes with SO_LINGER 0 (RST)
 *   4 (none)   a closed port: connection refused
 *   5 control  line "C PORT N": connects N times to the client's address
 *              at PORT and writes "hi" on each; holds them until EOF
 *   6 udp echo (UDP) echoes each datagram to its source
 * The app also listens at PORT_BASE + 10 and + 11 (the control service
 * connects there).
 * Each TCP connection is served by a child process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in peer;
static int base;

static void
die(const char *what)
{
	fprintf(stderr, "plapi: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct sockaddr_in
addr_of(const char *a, int port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	if (inet_pton(AF_INET, a, &s.sin_addr) != 1) {
		fprintf(stderr, "plapi: bad address %s\n", a);
		exit(2);
	}
	return s;
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ======================================================================= */
/* peer                                                                     */
/* ======================================================================= */

static void
serve(int svc, int c, struct sockaddr_in *from)
{
	char buf[65536];
	ssize_t n;

	switch (svc) {
	case 0:
		while ((n = read(c, buf, sizeof(buf))) > 0)
			if (write(c, buf, (size_t)n) != n)
				break;
		break;
	case 1:
		usleep(1500 * 1000);
		while (read(c, buf, sizeof(buf)) > 0)
			;
		break;
	case 2:
		memset(buf, 'x', 100);
		if (write(c, buf, 100) != 100)
			break;
		shutdown(c, SHUT_WR);
		while (read(c, buf, sizeof(buf)) > 0)
			;
		break;
	case 3: {
		struct linger l = { 1, 0 };

		usleep(100 * 1000);
		setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		break;
	}
	case 5: {
		int port, cnt, fds[16], k = 0;

		n = read(c, buf, sizeof(buf) - 1);
		if (n <= 0)
			break;
		buf[n] = '\0';
		if (sscanf(buf, "C %d %d", &port, &cnt) != 2 || cnt > 16)
			break;
		for (int i = 0; i < cnt; i++) {
			struct sockaddr_in to = *from;

			to.sin_port = htons((uint16_t)port);
			fds[k] = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(fds[k], (struct sockaddr *)&to, sizeof(to)) == 0 &&
			    write(fds[k], "hi", 2) == 2)
				k++;
			else
				close(fds[k]);
		}
		while (read(c, buf, sizeof(buf)) > 0)
			;
		break;
	}
	}
	close(c);
	_exit(0);
}

static int __attribute__((noreturn))
peer_main(const char *bind_addr)
{
	struct pollfd p[7];
	int n = 0, one = 1, svc_of[7];

	signal(SIGPIPE, SIG_IGN);
	signal(SIGCHLD, SIG_IGN);    /* children reaped by the kernel */
	for (int svc = 0; svc <= 6; svc++) {
		struct sockaddr_in a = addr_of(bind_addr, base + svc);
		int fd;

		if (svc == 4)
			continue;
		fd = socket(AF_INET, svc == 6 ? SOCK_DGRAM : SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    (svc != 6 && listen(fd, 64) < 0))
			die("peer listen");
		p[n] = (struct pollfd){ fd, POLLIN, 0 };
		svc_of[n++] = svc;
	}
	printf("peer ready\n");
	fflush(stdout);
	for (;;) {
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("peer poll");
		}
		for (int i = 0; i < n; i++) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			char buf[65536];

			if (!(p[i].revents & POLLIN))
				continue;
			if (svc_of[i] == 6) {
				ssize_t r = recvfrom(p[i].fd, buf, sizeof(buf), 0,
						     (struct sockaddr *)&from, &fl);

				if (r >= 0)
					sendto(p[i].fd, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
				continue;
			}
			int c = accept(p[i].fd, (struct sockaddr *)&from, &fl);

			if (c < 0)
				continue;
			if (fork() == 0) {
				for (int j = 0; j < n; j++)
					close(p[j].fd);
				serve(svc_of[i], c, &from);
			}
			close(c);
		}
	}
}

/* ======================================================================= */
/* app: the checks                                                           */
/* ======================================================================= */

static const char *
ename(int e)
{
	static const struct { int e; const char *n; } t[] = {
		{ EAGAIN, "EAGAIN" }, { EINPROGRESS, "EINPROGRESS" }, { EALREADY, "EALREADY" },
		{ EISCONN, "EISCONN" }, { ECONNREFUSED, "ECONNREFUSED" },
		{ ECONNRESET, "ECONNRESET" }, { EPIPE, "EPIPE" }, { ENOTCONN, "ENOTCONN" },
		{ EINTR, "EINTR" }, { EBADF, "EBADF" }, { EINVAL, "EINVAL" },
		{ ETIMEDOUT, "ETIMEDOUT" }, { EOPNOTSUPP, "EOPNOTSUPP" },
		{ EDESTADDRREQ, "EDESTADDRREQ" }, { ECONNABORTED, "ECONNABORTED" },
	};
	static char other[32];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].n;
	snprintf(other, sizeof(other), "errno%d", e);
	return other;
}

/* r as printed: the value, or -1 and the errno's name */
static const char *
res(long r)
{
	static char b[8][64];
	static int k;
	char *o = b[k++ % 8];

	if (r < 0)
		snprintf(o, 64, "-1 %s", ename(errno));
	else
		snprintf(o, 64, "%ld", r);
	return o;
}

#define CHECK(...) do { printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

static const char *
pollbits(int r)
{
	static char bufs[4][128];
	static int k;
	char *b = bufs[k++ % 4];

	b[0] = '\0';
	if (r & POLLIN) strcat(b, "IN ");
	if (r & POLLOUT) strcat(b, "OUT ");
	if (r & POLLERR) strcat(b, "ERR ");
	if (r & POLLHUP) strcat(b, "HUP ");
	if (r & POLLRDHUP) strcat(b, "RDHUP ");
	if (r & POLLNVAL) strcat(b, "NVAL ");
	if (b[0] == '\0')
		strcpy(b, "none ");
	b[strlen(b) - 1] = '\0';
	return b;
}

static int
tcp_to(int svc, int flags)
{
	struct sockaddr_in a = peer;
	int fd = socket(AF_INET, SOCK_STREAM | flags, 0);

	if (fd < 0)
		die("socket");
	a.sin_port = htons((uint16_t)(base + svc));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)
		return -1;
	return fd;
}

static short
poll1(int fd, short ev, int tmo)
{
	struct pollfd p = { fd, ev, 0 };
	int r = poll(&p, 1, tmo);

	return r <= 0 ? 0 : p.revents;
}

/* read exactly n bytes (blocking socket), or fewer at EOF */
static ssize_t
readn(int fd, char *b, size_t n)
{
	size_t d = 0;

	while (d < n) {
		ssize_t r = read(fd, b + d, n - d);

		if (r <= 0)
			return d > 0 ? (ssize_t)d : r;
		d += (size_t)r;
	}
	return (ssize_t)d;
}

static volatile sig_atomic_t n_sigpipe, n_alarm;

static void on_sigpipe(int s) { (void)s; n_sigpipe++; }
static void on_alarm(int s) { (void)s; n_alarm++; }

/* A thread that sends one byte to the echo connection *arg after 300 ms. */
static void *
send_late(void *arg)
{
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	if (send(*(int *)arg, "L", 1, 0) != 1)
		die("send_late");
	return NULL;
}

static void
arm_alarm(int ms)
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };

	setitimer(ITIMER_REAL, &it, NULL);
}

static void
check_connect(void)
{
	int fd, e;
	socklen_t l = sizeof(e);
	long r;
	short rv;

	fd = tcp_to(4, 0);
	CHECK("connect closed port (blocking): %s", fd < 0 ? ename(errno) : "connected");
	if (fd >= 0)
		close(fd);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	{
		struct sockaddr_in a = peer;

		a.sin_port = htons((uint16_t)(base + 4));
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		CHECK("connect closed port (non-blocking): %s", res(r));
	}
	rv = poll1(fd, POLLOUT, 3000);
	CHECK("  poll POLLOUT: %s", pollbits(rv));
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
	CHECK("  SO_ERROR: %s", e ? ename(e) : "0");
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
	CHECK("  SO_ERROR again: %s", e ? ename(e) : "0");
	close(fd);

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	{
		struct sockaddr_in a = peer;

		a.sin_port = htons((uint16_t)base);
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		CHECK("connect echo (non-blocking): %s", res(r));
		rv = poll1(fd, POLLOUT, 3000);
		CHECK("  poll POLLOUT: %s", pollbits(rv));
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
		CHECK("  SO_ERROR: %s", e ? ename(e) : "0");
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
		CHECK("  connect again: %s", res(r));
	}
	{
		struct sockaddr_in me, him;
		socklen_t ml = sizeof(me), hl = sizeof(him);

		getsockname(fd, (struct sockaddr *)&me, &ml);
		getpeername(fd, (struct sockaddr *)&him, &hl);
		CHECK("  getpeername: port %d, same address %s; getsockname: family %d, port set %s",
		      ntohs(him.sin_port) - base, him.sin_addr.s_addr == peer.sin_addr.s_addr ? "yes" : "no",
		      me.sin_family, me.sin_port ? "yes" : "no");
	}
	e = 0;
	l = sizeof(e);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &e, &l);
	CHECK("  SO_TYPE: %d", e);
	close(fd);
}

struct late_send {
	int fd;
	size_t len;
};

static void *
late_send(void *arg)
{
	static char z[8192];
	struct late_send *ls = arg;

	usleep(100 * 1000);
	if (send(ls->fd, z, ls->len, 0) < 0)
		perror("late send");
	return NULL;
}

static void
check_data(void)
{
	char b[8192];
	int fd = tcp_to(0, 0), v = 0, d;
	long r;

	CHECK("echo connect: %s", fd < 0 ? ename(errno) : "ok");
	r = send(fd, "hello", 5, 0);
	CHECK("send 5: %s", res(r));
	r = readn(fd, b, 5);
	CHECK("recv: %s '%.5s'", res(r), b);
	r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	CHECK("recv MSG_DONTWAIT, nothing there: %s", res(r));
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	r = read(fd, b, sizeof(b));
	CHECK("read non-blocking, nothing there: %s", res(r));
	CHECK("  O_NONBLOCK in F_GETFL: %s", (fcntl(fd, F_GETFL) & O_NONBLOCK) ? "yes" : "no");
	v = 0;
	ioctl(fd, FIONBIO, &v);
	CHECK("  after FIONBIO 0: %s", (fcntl(fd, F_GETFL) & O_NONBLOCK) ? "yes" : "no");

	r = send(fd, "abcdefghij", 10, 0);
	poll1(fd, POLLIN, 3000);
	for (int i = 0; i < 300; i++) {
		ioctl(fd, FIONREAD, &v);
		if (v >= 10)
			break;
		usleep(10000);
	}
	CHECK("FIONREAD after 10 echoed: %d", v);
	r = recv(fd, b, 3, MSG_PEEK);
	CHECK("recv MSG_PEEK 3: %s '%.3s'", res(r), b);
	r = recv(fd, b, 10, MSG_WAITALL);
	CHECK("recv MSG_WAITALL 10: %s '%.10s'", res(r), b);

	/* MSG_WAITALL across two sends 100 ms apart (another thread) */
	{
		pthread_t th;
		struct late_send ls = { fd, 3000 };

		send(fd, b, 1000, 0);
		pthread_create(&th, NULL, late_send, &ls);
		r = recv(fd, b, 4000, MSG_WAITALL);
		CHECK("recv MSG_WAITALL 4000 across two sends: %s", res(r));
		pthread_join(th, NULL);
	}

	/* writev / readv */
	{
		struct iovec w[2] = { { "12", 2 }, { "345", 3 } }, rd[2];
		char x[2], y[8];

		r = writev(fd, w, 2);
		CHECK("writev 2+3: %s", res(r));
		rd[0] = (struct iovec){ x, 2 };
		rd[1] = (struct iovec){ y, 3 };
		poll1(fd, POLLIN, 3000);
		usleep(50000);
		r = readv(fd, rd, 2);
		CHECK("readv 2+3: %s '%.2s%.3s'", res(r), x, y);
	}

	/* dup, close one copy: the other still works */
	d = dup(fd);
	close(fd);
	r = send(d, "dup", 3, 0);
	CHECK("send on dup after closing the original: %s", res(r));
	r = readn(d, b, 3);
	CHECK("  echo back: %s '%.3s'", res(r), b);
	r = send(fd, "x", 1, 0);
	CHECK("send on the closed original: %s", res(r));

	/* shutdown(SHUT_WR): the echo peer sees EOF, closes; we see EOF */
	r = shutdown(d, SHUT_WR);
	CHECK("shutdown SHUT_WR: %s", res(r));
	r = poll1(d, POLLIN | POLLRDHUP, 3000);
	r = recv(d, b, sizeof(b), 0);
	CHECK("  recv after the peer's FIN: %s", res(r));
	r = recv(d, b, sizeof(b), 0);
	CHECK("  recv again: %s", res(r));
	r = send(d, "x", 1, MSG_NOSIGNAL);
	CHECK("  send after SHUT_WR: %s", res(r));
	close(d);

	/* peer writes 100 and shuts down */
	fd = tcp_to(2, 0);
	r = readn(fd, b, 200);
	CHECK("sender: read until EOF: %s", res(r));
	r = read(fd, b, sizeof(b));
	CHECK("  read at EOF: %s", res(r));
	close(fd);
}

static void
check_reset(void)
{
	char b[64];
	long r;
	int fd = tcp_to(3, 0);
	short rv;

	rv = poll1(fd, POLLIN, 3000);
	usleep(100 * 1000);
	CHECK("reset: poll POLLIN: %s", pollbits(rv));
	r = recv(fd, b, sizeof(b), 0);
	CHECK("  recv: %s", res(r));
	r = recv(fd, b, sizeof(b), 0);
	CHECK("  recv again: %s", res(r));
	r = send(fd, "x", 1, MSG_NOSIGNAL);
	CHECK("  send MSG_NOSIGNAL: %s (SIGPIPE %d)", res(r), (int)n_sigpipe);
	r = send(fd, "x", 1, 0);
	CHECK("  send: %s (SIGPIPE %d)", res(r), (int)n_sigpipe);
	close(fd);

	fd = tcp_to(3, 0);
	poll1(fd, POLLIN, 3000);
	usleep(100 * 1000);
	r = send(fd, "x", 1, MSG_NOSIGNAL);
	CHECK("reset, send first: %s", res(r));
	r = send(fd, "x", 1, MSG_NOSIGNAL);
	CHECK("  send again: %s", res(r));
	close(fd);
}

static void
check_full(void)
{
	static char big[4 << 20];
	int fd = tcp_to(1, 0);
	long r, total = 0;
	int eagain = 0;
	short rv;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	r = send(fd, big, sizeof(big), 0);
	CHECK("sink: non-blocking send of 4 MiB: partial %s", r > 0 && r < (long)sizeof(big) ? "yes" : res(r));
	total = r > 0 ? r : 0;
	for (int i = 0; i < 1000; i++) {
		r = send(fd, big, 65536, 0);
		if (r < 0) {
			eagain = errno == EAGAIN;
			break;
		}
		total += r;
	}
	CHECK("  then EAGAIN: %s", eagain ? "yes" : "no");
	rv = poll1(fd, POLLOUT, 0);
	CHECK("  poll POLLOUT now: %s", pollbits(rv));
	rv = poll1(fd, POLLOUT, 5000);
	CHECK("  poll POLLOUT once the peer reads: %s", pollbits(rv));
	fcntl(fd, F_SETFL, 0);
	r = send(fd, big, 1 << 20, 0);
	CHECK("  blocking send of 1 MiB: %s", res(r));
	close(fd);
	(void)total;
}

static void
check_epoll(void)
{
	char b[64];
	int fd = tcp_to(0, 0);
	int lt = epoll_create1(0), et = epoll_create1(0), os = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 11 }, out[4];
	long r;

	epoll_ctl(lt, EPOLL_CTL_ADD, fd, &ev);
	ev.events = EPOLLIN | EPOLLET;
	epoll_ctl(et, EPOLL_CTL_ADD, fd, &ev);
	ev.events = EPOLLIN | EPOLLONESHOT;
	epoll_ctl(os, EPOLL_CTL_ADD, fd, &ev);
	r = epoll_ctl(lt, EPOLL_CTL_ADD, fd, &ev);
	CHECK("epoll: add twice: %s", res(r));
	r = epoll_wait(lt, out, 4, 100);
	CHECK("  nothing to read, level, 100 ms: %s", res(r));
	send(fd, "0123456789", 10, 0);
	r = epoll_wait(lt, out, 4, 3000);
	CHECK("  level: %s (data %llu, events %s)", res(r), (unsigned long long)out[0].data.u64,
	      pollbits((int)out[0].events));
	usleep(50000);
	r = epoll_wait(lt, out, 4, 0);
	CHECK("  level again, unread: %s", res(r));
	r = epoll_wait(et, out, 4, 3000);
	CHECK("  edge: %s", res(r));
	r = epoll_wait(et, out, 4, 100);
	CHECK("  edge again, no new data: %s", res(r));
	r = epoll_wait(os, out, 4, 3000);
	CHECK("  oneshot: %s", res(r));
	r = epoll_wait(os, out, 4, 100);
	CHECK("  oneshot again: %s", res(r));
	ev.events = EPOLLIN | EPOLLONESHOT;
	epoll_ctl(os, EPOLL_CTL_MOD, fd, &ev);
	r = epoll_wait(os, out, 4, 1000);
	CHECK("  oneshot re-armed by MOD: %s", res(r));
	readn(fd, b, 10);
	r = epoll_wait(lt, out, 4, 0);
	CHECK("  level after reading all: %s", res(r));
	send(fd, "x", 1, 0);
	r = epoll_wait(et, out, 4, 3000);
	CHECK("  edge after new data: %s", res(r));
	ev.events = EPOLLOUT;
	epoll_ctl(lt, EPOLL_CTL_MOD, fd, &ev);
	r = epoll_wait(lt, out, 4, 1000);
	CHECK("  level EPOLLOUT: %s (%s)", res(r), pollbits((int)out[0].events));
	r = epoll_ctl(lt, EPOLL_CTL_DEL, fd, NULL);
	CHECK("  del: %s", res(r));
	r = epoll_ctl(lt, EPOLL_CTL_DEL, fd, NULL);
	CHECK("  del again: %s", res(r));
	close(fd);
	r = epoll_wait(et, out, 4, 100);
	CHECK("  after close of the only fd: %s", res(r));
	close(lt);
	close(et);
	close(os);
}

static void
check_timeouts(void)
{
	int fd = tcp_to(0, 0);
	fd_set rs;
	struct timeval tv = { 0, 150000 };
	long t0, r;
	struct pollfd p[2];
	char b[8];
	struct sigaction sa = { .sa_handler = on_alarm };

	t0 = now_ms();
	r = poll1(fd, POLLIN, 150);
	CHECK("poll 150 ms, idle: %s, waited >= 140 ms: %s", pollbits((int)r),
	      now_ms() - t0 >= 140 ? "yes" : "no");
	FD_ZERO(&rs);
	FD_SET(fd, &rs);
	t0 = now_ms();
	r = select(fd + 1, &rs, NULL, NULL, &tv);
	CHECK("select 150 ms, idle: %s, waited >= 140 ms: %s, set cleared: %s", res(r),
	      now_ms() - t0 >= 140 ? "yes" : "no", FD_ISSET(fd, &rs) ? "no" : "yes");
	FD_ZERO(&rs);
	FD_SET(fd, &rs);
	send(fd, "z", 1, 0);
	tv = (struct timeval){ 3, 0 };
	r = select(fd + 1, &rs, NULL, NULL, &tv);
	CHECK("select after echo: %s, set: %s", res(r), FD_ISSET(fd, &rs) ? "yes" : "no");
	recv(fd, b, 1, 0);
	/* a kernel fd and a socket together */
	{
		int pp[2];

		if (pipe(pp) < 0)
			die("pipe");
		p[0] = (struct pollfd){ pp[0], POLLIN, 0 };
		p[1] = (struct pollfd){ fd, POLLIN, 0 };
		if (write(pp[1], "p", 1) != 1)
			die("pipe write");
		r = poll(p, 2, 1000);
		CHECK("poll pipe + socket, pipe ready: %s (%s / %s)", res(r), pollbits(p[0].revents),
		      pollbits(p[1].revents));
		close(pp[0]);
		close(pp[1]);
	}

	/* SO_RCVTIMEO */
	{
		struct timeval to = { 0, 150000 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof(to));
		t0 = now_ms();
		r = recv(fd, b, sizeof(b), 0);
		CHECK("recv with SO_RCVTIMEO 150 ms, idle: %s, waited >= 140 ms: %s", res(r),
		      now_ms() - t0 >= 140 ? "yes" : "no");
		to = (struct timeval){ 0, 0 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof(to));
	}

	/* EINTR */
	sigaction(SIGALRM, &sa, NULL);    /* no SA_RESTART */
	arm_alarm(100);
	r = recv(fd, b, sizeof(b), 0);
	CHECK("blocking recv, SIGALRM: %s", res(r));
	{
		struct pollfd q = { fd, POLLIN, 0 };

		arm_alarm(100);
		r = poll(&q, 1, 5000);
		CHECK("poll, SIGALRM: %s", res(r));
	}
	{
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN }, out;

		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		arm_alarm(100);
		r = epoll_wait(ep, &out, 1, 5000);
		CHECK("epoll_wait, SIGALRM: %s", res(r));
		close(ep);
	}

	/* SA_RESTART: a blocking recv goes on waiting after the handler ran
	 * (the byte comes back at ~300 ms, the signal at 100 ms); with a
	 * receive time-out it is not restarted; poll never is. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	{
		pthread_t th;
		int a0 = n_alarm;

		pthread_create(&th, NULL, send_late, &fd);
		arm_alarm(100);
		r = recv(fd, b, sizeof(b), 0);
		CHECK("blocking recv, SIGALRM with SA_RESTART, data later: %s, handler ran: %s",
		      res(r), n_alarm > a0 ? "yes" : "no");
		pthread_join(th, NULL);
	}
	{
		struct timeval to = { 3, 0 };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof(to));
		arm_alarm(100);
		t0 = now_ms();
		r = recv(fd, b, sizeof(b), 0);
		CHECK("recv with SO_RCVTIMEO 3 s, SIGALRM with SA_RESTART: %s, before the time-out: %s",
		      res(r), now_ms() - t0 < 2500 ? "yes" : "no");
		to = (struct timeval){ 0, 0 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof(to));
	}
	{
		struct pollfd q = { fd, POLLIN, 0 };

		arm_alarm(100);
		r = poll(&q, 1, 5000);
		CHECK("poll, SIGALRM with SA_RESTART: %s", res(r));
	}
	sa.sa_flags = 0;
	sigaction(SIGALRM, &sa, NULL);
	close(fd);
}

static void
check_accept(int ctl)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, from;
	socklen_t fl = sizeof(from), al = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c, c2, one = 1, v;
	socklen_t vl = sizeof(v);
	char b[16];
	long r;
	short rv;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_port = htons((uint16_t)(base + 10));
	r = bind(l, (struct sockaddr *)&a, sizeof(a));
	CHECK("listener: bind: %s", res(r));
	r = listen(l, 16);
	CHECK("  listen: %s", res(r));
	getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl);
	CHECK("  SO_ACCEPTCONN: %d", v);
	getsockname(l, (struct sockaddr *)&a, &al);
	CHECK("  getsockname port: +%d", ntohs(a.sin_port) - base);
	fcntl(l, F_SETFL, O_NONBLOCK);
	r = accept(l, NULL, NULL);
	CHECK("  accept non-blocking, nobody: %s", res(r));
	rv = poll1(l, POLLIN, 100);
	CHECK("  poll 100 ms, nobody: %s", pollbits(rv));
	snprintf(b, sizeof(b), "C %d 2", base + 10);
	if (write(ctl, b, strlen(b)) < 0)
		die("ctl");
	rv = poll1(l, POLLIN, 3000);
	CHECK("  poll after the peer connects: %s", pollbits(rv));
	fcntl(l, F_SETFL, 0);
	c = accept(l, (struct sockaddr *)&from, &fl);
	CHECK("  accept: %s, from the peer: %s, len %d", c >= 0 ? "fd" : res(c),
	      from.sin_addr.s_addr == peer.sin_addr.s_addr ? "yes" : "no", (int)fl);
	r = readn(c, b, 2);
	CHECK("  read: %s '%.2s'", res(r), b);
	c2 = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK("  accept4 NONBLOCK|CLOEXEC: %s, O_NONBLOCK %s, FD_CLOEXEC %s", c2 >= 0 ? "fd" : res(c2),
	      (fcntl(c2, F_GETFL) & O_NONBLOCK) ? "yes" : "no",
	      (fcntl(c2, F_GETFD) & FD_CLOEXEC) ? "yes" : "no");
	poll1(c2, POLLIN, 3000);
	r = read(c2, b, sizeof(b));
	CHECK("  read: %s '%.2s'", res(r), b);
	r = read(c2, b, sizeof(b));
	CHECK("  read again non-blocking: %s", res(r));
	r = accept4(l, NULL, NULL, 0x7777);
	CHECK("  accept4 bad flags: %s", res(r));
	close(c);
	close(c2);
	/* blocking accept interrupted by a signal */
	arm_alarm(100);
	r = accept(l, NULL, NULL);
	CHECK("  blocking accept, SIGALRM: %s", res(r));
	close(l);
}

static void
check_udp(void)
{
	struct sockaddr_in a = peer, from;
	socklen_t fl = sizeof(from);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	char b[256], big[100];
	long r;
	struct msghdr m;
	struct iovec v;

	a.sin_port = htons((uint16_t)(base + 6));
	r = send(u, "x", 1, 0);
	CHECK("udp: send unconnected: %s", res(r));
	r = sendto(u, "ping", 4, 0, (struct sockaddr *)&a, sizeof(a));
	CHECK("  sendto: %s", res(r));
	r = recvfrom(u, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
	CHECK("  recvfrom: %s '%.4s' from the peer's port: %s", res(r), b,
	      from.sin_port == a.sin_port && from.sin_addr.s_addr == a.sin_addr.s_addr ? "yes" : "no");
	memset(big, 'b', sizeof(big));
	sendto(u, big, sizeof(big), 0, (struct sockaddr *)&a, sizeof(a));
	poll1(u, POLLIN, 3000);
	r = recv(u, b, 10, MSG_PEEK | MSG_TRUNC);
	CHECK("  recv MSG_PEEK|MSG_TRUNC into 10: %s", res(r));
	v = (struct iovec){ b, 10 };
	m = (struct msghdr){ .msg_iov = &v, .msg_iovlen = 1 };
	r = recvmsg(u, &m, 0);
	CHECK("  recvmsg into 10: %s, MSG_TRUNC %s", res(r), (m.msg_flags & MSG_TRUNC) ? "yes" : "no");
	r = recv(u, b, sizeof(b), MSG_DONTWAIT);
	CHECK("  recv nothing there: %s", res(r));
	r = connect(u, (struct sockaddr *)&a, sizeof(a));
	CHECK("  connect: %s", res(r));
	r = send(u, "pong", 4, 0);
	CHECK("  send connected: %s", res(r));
	r = recv(u, b, sizeof(b), 0);
	CHECK("  recv: %s '%.4s'", res(r), b);
	close(u);
}

/* fork: both processes use the inherited connection; closing one copy does
 * not close the other's */
static void
check_fork(void)
{
	char b[16];
	int fd = tcp_to(0, 0), st = -1;
	pid_t pid;
	long r;

	pid = fork();
	if (pid == 0) {
		_exit(send(fd, "kid", 3, 0) == 3 ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	r = readn(fd, b, 3);
	CHECK("fork: child sent on the inherited socket: exit %d; parent reads %s '%.3s'",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1, res(r), b);
	r = send(fd, "mom", 3, 0);
	r = readn(fd, b, 3);
	CHECK("  parent still uses it after the child exited: %s '%.3s'", res(r), b);
	pid = fork();
	if (pid == 0) {
		char c[8];

		usleep(200 * 1000);   /* the parent has closed its copy by now */
		if (send(fd, "late", 4, 0) != 4 || readn(fd, c, 4) != 4 || memcmp(c, "late", 4))
			_exit(1);
		_exit(0);
	}
	close(fd);
	waitpid(pid, &st, 0);
	CHECK("  child uses it after the parent closed its copy: exit %d",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void *
mt_sender(void *arg)
{
	int fd = *(int *)arg;
	char m[100];

	memset(m, 'm', sizeof(m));
	for (int i = 0; i < 500; i++)
		if (send(fd, m, sizeof(m), 0) != (ssize_t)sizeof(m))
			return (void *)1;
	return NULL;
}

static void *
mt_acceptor(void *arg)
{
	int l = *(int *)arg, c = accept(l, NULL, NULL);
	char b[4];

	if (c < 0)
		return (void *)1;
	if (readn(c, b, 2) != 2) {
		close(c);
		return (void *)2;
	}
	close(c);
	return NULL;
}

/* threads sharing one connection, and one listener */
static void
check_threads(int ctl)
{
	static char b[200000];
	pthread_t th[4];
	void *rv;
	int fd = tcp_to(0, 0), bad = 0, l, one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(base + 11)) };
	long r;

	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, mt_sender, &fd);
	r = readn(fd, b, sizeof(b));
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &rv);
		bad += rv != NULL;
	}
	CHECK("threads: 4 x 500 sends of 100 B on one socket: echoed %s, failed senders %d",
	      res(r), bad);
	close(fd);

	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 16) < 0)
		die("listen");
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, mt_acceptor, &l);
	usleep(100 * 1000);       /* both blocked in accept */
	snprintf(b, 32, "C %d 2", base + 11);
	if (write(ctl, b, strlen(b)) < 0)
		die("ctl");
	bad = 0;
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], &rv);
		bad += rv != NULL;
	}
	CHECK("  2 threads blocked in accept on one listener, 2 connections: failed %d", bad);
	close(l);
}

static int
app_main(void)
{
	int ctl;
	struct sigaction sa = { .sa_handler = on_sigpipe };

	sigaction(SIGPIPE, &sa, NULL);
	check_connect();
	check_data();
	check_reset();
	check_full();
	check_epoll();
	check_timeouts();
	ctl = tcp_to(5, 0);
	check_accept(ctl);
	close(ctl);
	ctl = tcp_to(5, 0);
	check_threads(ctl);
	close(ctl);
	check_udp();
	check_fork();
	CHECK("done");
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: plapi peer BIND_ADDR PORT_BASE | plapi app PEER_ADDR PORT_BASE\n");
		return 2;
	}
	base = atoi(argv[3]);
	if (strcmp(argv[1], "peer") == 0)
		return peer_main(argv[2]);
	peer = addr_of(argv[2], 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return app_main();
}
