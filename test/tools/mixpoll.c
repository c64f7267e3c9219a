/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mixpoll — one process that mixes kernel and offloaded file descriptors in
 * one readiness set, for libdpsock_preload.so (run it under the shim):
 *
 *   mixpoll LOCAL_ADDR PEER_ADDR TCP_PORT UDP_PORT LOCAL_UDP_PORT
 *
 * The four readable objects:
 *   pipe   a pipe (written by this process)                       kernel
 *   kudp   a UDP socket on 127.0.0.1 (sent to by a second one)    kernel
 *   oudp   a UDP socket bound to LOCAL_ADDR:LOCAL_UDP_PORT, sending to an
 *          echo server at PEER_ADDR:UDP_PORT                      offloaded
 *   otcp   a TCP connection to an echo server at PEER_ADDR:TCP_PORT that
 *          echoes each byte and closes when it reads 'q'         offloaded
 * (offloaded when LOCAL_ADDR is dpsockd's address and PEER_ADDR is on its
 * network; the script checks dpsockd's counters).
 *
 * For each mechanism — epoll level-triggered, epoll edge-triggered, poll,
 * select — it checks:
 *   timeout   nothing pending: the wait returns 0 after its timeout (300 ms,
 *             within [280, 1500] ms), reporting nothing;
 *   events    one byte / datagram made ready on each of the four: every fd
 *             is reported, none twice in one call, nothing else reported;
 *             level: a further wait (timeout 0) reports all four again;
 *             edge: a further wait (200 ms) reports nothing — each event
 *             arrived exactly once;
 *   drained   after reading everything: a wait (100 ms) reports nothing;
 *   again     (edge) a second round: each fd reported once more;
 *   writable  the pipe's write end, oudp and otcp are reported writable at
 *             once (edge: once, then not again without a change).
 * Then, with epoll only: otcp and oudp in a second epoll set as well (one fd
 * in two sets: both report), and EPOLLRDHUP: the echo server closes on 'q';
 * the epoll set reports EPOLLIN|EPOLLRDHUP, poll reports POLLIN, recv
 * returns 0.
 *
 * Prints "ok: ..." per check; on the first failure prints "FAIL: ..." and
 * exits 1; exits 2 on bad arguments or a set-up error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { O_PIPE, O_KUDP, O_OUDP, O_OTCP, N_OBJ };
static const char *const obj_name[N_OBJ] = { "pipe", "kernel-udp", "offloaded-udp", "offloaded-tcp" };

enum mech { M_EPOLL_LT, M_EPOLL_ET, M_POLL, M_SELECT, N_MECH };
static const char *const mech_name[N_MECH] = { "epoll-lt", "epoll-et", "poll", "select" };

static int rfd[N_OBJ];   /* readable side of each object */
static int pipe_w;       /* the pipe's write end */
static int kudp_tx;      /* sends to kudp */
static struct sockaddr_in peer_udp;

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fputs("FAIL: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fputs("mixpoll: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(2);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static struct sockaddr_in sin_of(const char *addr, unsigned int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "mixpoll: bad IPv4 address '%s'\n", addr);
		exit(2);
	}
	return sa;
}

/* ---- the objects ------------------------------------------------------- */

static void trigger(int i)
{
	ssize_t n;

	switch (i) {
	case O_PIPE:
		n = write(pipe_w, "p", 1);
		break;
	case O_KUDP:
		n = send(kudp_tx, "k", 1, 0);
		break;
	case O_OUDP:
		n = sendto(rfd[O_OUDP], "u", 1, 0, (struct sockaddr *)&peer_udp, sizeof(peer_udp));
		break;
	default:
		n = send(rfd[O_OTCP], "t", 1, MSG_NOSIGNAL);
		break;
	}
	if (n != 1)
		fail("trigger %s: %zd (%s)", obj_name[i], n, strerror(errno));
}

/* Read everything pending on object i (non-blocking); return bytes read. */
static long drain(int i)
{
	char buf[2048];
	long total = 0;
	ssize_t n;

	for (;;) {
		if (i == O_PIPE)
			n = read(rfd[i], buf, sizeof(buf));
		else
			n = recv(rfd[i], buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			total += n;
			continue;
		}
		if (n == 0 && i != O_OTCP && i != O_PIPE)
			continue; /* an empty datagram: none are sent here */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return total;
		if (n < 0 && errno == EINTR)
			continue;
		fail("drain %s: %zd (%s)", obj_name[i], n, n < 0 ? strerror(errno) : "EOF");
	}
}

static void setup(const char *local, const char *peer, unsigned int tcp_port,
		  unsigned int udp_port, unsigned int local_udp_port)
{
	struct sockaddr_in lo = sin_of("127.0.0.1", 0), sa;
	socklen_t len = sizeof(sa);
	int p[2];

	if (pipe2(p, O_NONBLOCK) < 0)
		die("pipe2");
	rfd[O_PIPE] = p[0];
	pipe_w = p[1];

	rfd[O_KUDP] = socket(AF_INET, SOCK_DGRAM, 0);
	kudp_tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rfd[O_KUDP] < 0 || kudp_tx < 0)
		die("socket (kernel udp)");
	if (bind(rfd[O_KUDP], (struct sockaddr *)&lo, sizeof(lo)) < 0 ||
	    getsockname(rfd[O_KUDP], (struct sockaddr *)&sa, &len) < 0 ||
	    connect(kudp_tx, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("kernel udp on 127.0.0.1");

	rfd[O_OUDP] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (rfd[O_OUDP] < 0)
		die("socket (udp)");
	sa = sin_of(local, local_udp_port);
	if (bind(rfd[O_OUDP], (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind udp %s:%u", local, local_udp_port);
	peer_udp = sin_of(peer, udp_port);

	rfd[O_OTCP] = socket(AF_INET, SOCK_STREAM, 0);
	if (rfd[O_OTCP] < 0)
		die("socket (tcp)");
	sa = sin_of(peer, tcp_port);
	if (connect(rfd[O_OTCP], (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect tcp %s:%u", peer, tcp_port);
	if (fcntl(rfd[O_OTCP], F_SETFL, fcntl(rfd[O_OTCP], F_GETFL) | O_NONBLOCK) < 0)
		die("fcntl O_NONBLOCK");
	printf("ok: set up: pipe, kernel UDP on 127.0.0.1, UDP on %s:%u, TCP to %s:%u\n",
	       local, local_udp_port, peer, tcp_port);
}

/* ---- one wait, any mechanism ---------------------------------------------- */

static int ep[N_MECH] = { -1, -1, -1, -1 };

/* Wait up to timeout_ms for readability; add 1 to seen[i] for each object
 * reported. Returns the number of objects reported. Fails on an fd reported
 * twice in one call or an unexpected event. */
static int wait_read(enum mech m, int timeout_ms, int seen[N_OBJ])
{
	int n = 0, i, r, maxfd = -1;

	if (m == M_EPOLL_LT || m == M_EPOLL_ET) {
		struct epoll_event ev[N_OBJ + 4];
		int once[N_OBJ] = { 0 };

		do
			r = epoll_wait(ep[m], ev, N_OBJ + 4, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			fail("%s: epoll_wait: %s", mech_name[m], strerror(errno));
		for (i = 0; i < r; i++) {
			unsigned int k = ev[i].data.u32;

			if (k >= N_OBJ)
				fail("%s: epoll_wait returned unknown data %u", mech_name[m], k);
			if (once[k]++)
				fail("%s: %s reported twice in one epoll_wait", mech_name[m], obj_name[k]);
			if (!(ev[i].events & EPOLLIN) || (ev[i].events & (EPOLLERR | EPOLLHUP)))
				fail("%s: %s reported with events 0x%x", mech_name[m], obj_name[k],
				     ev[i].events);
			seen[k]++;
			n++;
		}
		return n;
	}
	if (m == M_POLL) {
		struct pollfd pfd[N_OBJ];

		for (i = 0; i < N_OBJ; i++)
			pfd[i] = (struct pollfd){ .fd = rfd[i], .events = POLLIN };
		do
			r = poll(pfd, N_OBJ, timeout_ms);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			fail("poll: %s", strerror(errno));
		for (i = 0; i < N_OBJ; i++) {
			if (!pfd[i].revents)
				continue;
			if (pfd[i].revents != POLLIN)
				fail("poll: %s revents 0x%x", obj_name[i], pfd[i].revents);
			seen[i]++;
			n++;
		}
		if (n != r)
			fail("poll returned %d, %d fds had revents", r, n);
		return n;
	}
	{
		fd_set rs;
		struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };

		FD_ZERO(&rs);
		for (i = 0; i < N_OBJ; i++) {
			FD_SET(rfd[i], &rs);
			if (rfd[i] > maxfd)
				maxfd = rfd[i];
		}
		r = select(maxfd + 1, &rs, NULL, NULL, &tv);
		if (r < 0)
			fail("select: %s", strerror(errno));
		for (i = 0; i < N_OBJ; i++) {
			if (FD_ISSET(rfd[i], &rs)) {
				seen[i]++;
				n++;
			}
		}
		if (n != r)
			fail("select returned %d, %d fds set", r, n);
		return n;
	}
}

static void epoll_setup(enum mech m)
{
	int i;

	ep[m] = epoll_create1(EPOLL_CLOEXEC);
	if (ep[m] < 0)
		die("epoll_create1");
	for (i = 0; i < N_OBJ; i++) {
		struct epoll_event ev = {
			.events = EPOLLIN | (m == M_EPOLL_ET ? EPOLLET : 0),
			.data.u32 = (uint32_t)i,
		};
		if (epoll_ctl(ep[m], EPOLL_CTL_ADD, rfd[i], &ev) < 0)
			fail("%s: epoll_ctl ADD %s: %s", mech_name[m], obj_name[i], strerror(errno));
	}
}

static const char *seen_str(const int seen[N_OBJ])
{
	static char s[128];

	snprintf(s, sizeof(s), "pipe %d, kernel-udp %d, offloaded-udp %d, offloaded-tcp %d",
		 seen[0], seen[1], seen[2], seen[3]);
	return s;
}

/* ---- the checks ------------------------------------------------------------ */

static void check_timeout(enum mech m)
{
	int seen[N_OBJ] = { 0 }, n;
	long t0 = now_ms(), dt;

	n = wait_read(m, 300, seen);
	dt = now_ms() - t0;
	if (n != 0)
		fail("%s timeout: nothing pending, yet %d reported (%s)", mech_name[m], n, seen_str(seen));
	if (dt < 280 || dt > 1500)
		fail("%s timeout: a 300 ms wait took %ld ms", mech_name[m], dt);
	printf("ok: %s: a 300 ms wait with nothing pending returned 0 after %ld ms\n", mech_name[m], dt);
}

/* Make all four ready; wait (up to 3 s) until each was reported. */
static void check_events(enum mech m, const char *round)
{
	int seen[N_OBJ] = { 0 }, again[N_OBJ] = { 0 }, i, n;
	long deadline = now_ms() + 3000;
	int edge = m == M_EPOLL_ET;

	for (i = N_OBJ - 1; i >= 0; i--)
		trigger(i);
	for (;;) {
		for (i = 0; i < N_OBJ && seen[i]; i++)
			;
		if (i == N_OBJ)
			break;
		if (now_ms() > deadline)
			fail("%s %s: not every fd reported within 3 s (%s)", mech_name[m], round,
			     seen_str(seen));
		wait_read(m, 100, seen);
	}
	if (edge) {
		for (i = 0; i < N_OBJ; i++)
			if (seen[i] != 1)
				fail("%s %s: edge-triggered, yet reported %d times (%s)", mech_name[m],
				     round, seen[i], seen_str(seen));
		n = wait_read(m, 200, again);
		if (n != 0)
			fail("%s %s: edge-triggered, nothing new, yet reported again (%s)",
			     mech_name[m], round, seen_str(again));
		printf("ok: %s %s: each of the four reported exactly once, not again without new data\n",
		       mech_name[m], round);
	} else {
		n = wait_read(m, 0, again);
		if (n != N_OBJ)
			fail("%s %s: level-triggered, data unread, yet a second wait reports %d (%s)",
			     mech_name[m], round, n, seen_str(again));
		printf("ok: %s %s: all four reported (%s); still reported while unread\n", mech_name[m],
		       round, seen_str(seen));
	}
	for (i = 0; i < N_OBJ; i++) {
		long got = drain(i);

		if (got != 1)
			fail("%s %s: %s had %ld bytes, want 1", mech_name[m], round, obj_name[i], got);
	}
	memset(again, 0, sizeof(again));
	n = wait_read(m, 100, again);
	if (n != 0)
		fail("%s %s: all read, yet a wait reports %d (%s)", mech_name[m], round, n,
		     seen_str(again));
	printf("ok: %s %s: all read: nothing reported\n", mech_name[m], round);
}

static void check_writable(enum mech m)
{
	int wfd[3] = { pipe_w, rfd[O_OUDP], rfd[O_OTCP] };
	const char *wname[3] = { "pipe", "offloaded-udp", "offloaded-tcp" };
	int i, r, got = 0;

	if (m == M_EPOLL_LT || m == M_EPOLL_ET) {
		struct epoll_event ev[4];
		int e = epoll_create1(0);

		if (e < 0)
			die("epoll_create1");
		for (i = 0; i < 3; i++) {
			struct epoll_event x = { .events = EPOLLOUT | (m == M_EPOLL_ET ? EPOLLET : 0),
						 .data.u32 = (uint32_t)i };
			if (epoll_ctl(e, EPOLL_CTL_ADD, wfd[i], &x) < 0)
				fail("%s writable: epoll_ctl %s: %s", mech_name[m], wname[i], strerror(errno));
		}
		r = epoll_wait(e, ev, 4, 1000);
		for (i = 0; i < r; i++)
			if (ev[i].events & EPOLLOUT)
				got |= 1 << ev[i].data.u32;
		if (got != 7)
			fail("%s writable: want all 3 writable, got mask 0x%x", mech_name[m], got);
		r = epoll_wait(e, ev, 4, m == M_EPOLL_ET ? 200 : 0);
		if (m == M_EPOLL_ET && r != 0)
			fail("epoll-et writable: reported again (%d) with nothing changed", r);
		if (m == M_EPOLL_LT && r != 3)
			fail("epoll-lt writable: a second wait reports %d of 3", r);
		close(e);
	} else if (m == M_POLL) {
		struct pollfd pfd[3];

		for (i = 0; i < 3; i++)
			pfd[i] = (struct pollfd){ .fd = wfd[i], .events = POLLOUT };
		r = poll(pfd, 3, 1000);
		for (i = 0; i < 3; i++)
			if (pfd[i].revents == POLLOUT)
				got |= 1 << i;
		if (r != 3 || got != 7)
			fail("poll writable: returned %d, mask 0x%x", r, got);
	} else {
		fd_set ws;
		struct timeval tv = { .tv_sec = 1 };
		int maxfd = -1;

		FD_ZERO(&ws);
		for (i = 0; i < 3; i++) {
			FD_SET(wfd[i], &ws);
			if (wfd[i] > maxfd)
				maxfd = wfd[i];
		}
		r = select(maxfd + 1, NULL, &ws, NULL, &tv);
		for (i = 0; i < 3; i++)
			if (FD_ISSET(wfd[i], &ws))
				got |= 1 << i;
		if (r != 3 || got != 7)
			fail("select writable: returned %d, mask 0x%x", r, got);
	}
	printf("ok: %s: pipe, offloaded UDP and TCP reported writable%s\n", mech_name[m],
	       m == M_EPOLL_ET ? ", once" : "");
}

/* otcp and oudp also in a second epoll set: both sets report them. */
static void check_two_sets(void)
{
	struct epoll_event ev[4];
	int e2 = epoll_create1(0), seen[N_OBJ] = { 0 }, i, r, got = 0;
	long deadline = now_ms() + 3000;

	if (e2 < 0)
		die("epoll_create1");
	for (i = O_OUDP; i <= O_OTCP; i++) {
		struct epoll_event x = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

		if (epoll_ctl(e2, EPOLL_CTL_ADD, rfd[i], &x) < 0)
			fail("second epoll set: epoll_ctl %s: %s", obj_name[i], strerror(errno));
	}
	trigger(O_OUDP);
	trigger(O_OTCP);
	while (got != 3) {
		if (now_ms() > deadline)
			fail("second epoll set: reported mask 0x%x of 0x3 within 3 s", got);
		r = epoll_wait(e2, ev, 4, 100);
		for (i = 0; i < r; i++)
			got |= 1 << (ev[i].data.u32 - O_OUDP);
	}
	/* the first (level-triggered) set sees them too */
	r = wait_read(M_EPOLL_LT, 1000, seen);
	if (!seen[O_OUDP] || !seen[O_OTCP])
		fail("one fd in two epoll sets: the first set reports %s", seen_str(seen));
	if (drain(O_OUDP) != 1 || drain(O_OTCP) != 1)
		fail("one fd in two epoll sets: wrong byte count read back");
	close(e2);
	printf("ok: offloaded UDP and TCP in two epoll sets: both sets report them\n");
}

/* The echo server closes on 'q': EPOLLRDHUP, POLLIN, recv 0. */
static void check_rdhup(void)
{
	struct epoll_event x = { .events = EPOLLIN | EPOLLRDHUP, .data.u32 = O_OTCP }, ev[2];
	struct pollfd pfd = { .fd = rfd[O_OTCP], .events = POLLIN };
	int e = epoll_create1(0), r;
	char c;
	ssize_t n;

	if (e < 0 || epoll_ctl(e, EPOLL_CTL_ADD, rfd[O_OTCP], &x) < 0)
		fail("rdhup: epoll set-up: %s", strerror(errno));
	if (send(rfd[O_OTCP], "q", 1, MSG_NOSIGNAL) != 1)
		fail("rdhup: send q: %s", strerror(errno));
	r = epoll_wait(e, ev, 2, 3000);
	if (r != 1 || !(ev[0].events & EPOLLRDHUP) || !(ev[0].events & EPOLLIN))
		fail("rdhup: peer closed, epoll_wait returned %d, events 0x%x (want EPOLLIN|EPOLLRDHUP)",
		     r, r > 0 ? ev[0].events : 0);
	r = poll(&pfd, 1, 1000);
	if (r != 1 || !(pfd.revents & POLLIN))
		fail("rdhup: poll after the peer closed: %d, revents 0x%x", r, pfd.revents);
	n = recv(rfd[O_OTCP], &c, 1, 0);
	if (n != 0)
		fail("rdhup: recv after the peer closed: %zd (%s), want 0", n, n < 0 ? strerror(errno) : "data");
	close(e);
	printf("ok: peer closed: EPOLLIN|EPOLLRDHUP, POLLIN, recv 0\n");
}

int main(int argc, char **argv)
{
	int m;

	if (argc != 6) {
		fprintf(stderr, "usage: mixpoll LOCAL_ADDR PEER_ADDR TCP_PORT UDP_PORT LOCAL_UDP_PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	setup(argv[1], argv[2], (unsigned int)atoi(argv[3]), (unsigned int)atoi(argv[4]),
	      (unsigned int)atoi(argv[5]));
	for (m = 0; m < N_MECH; m++) {
		/* each set is made just before its checks: what earlier checks
		 * made ready and read is no event for it */
		if (m == M_EPOLL_LT || m == M_EPOLL_ET)
			epoll_setup((enum mech)m);
		check_timeout((enum mech)m);
		check_events((enum mech)m, "round 1");
		if (m == M_EPOLL_ET)
			check_events((enum mech)m, "round 2");
		check_writable((enum mech)m);
	}
	check_two_sets();
	check_rdhup();
	printf("ok: all checks passed\n");
	return 0;
}
