/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * xapi — the extra API (include/dpsock/extra.h) checked from a preloaded
 * program against Linux peers (test/integration/extra_api.sh). One
 * subcommand per run; each prints "xapi: ok ..." and exits 0, or says what
 * went wrong and exits 1.
 *
 *   xapi tcp PORT BYTES      accept one connection; receive BYTES of the
 *                            pattern byte i = (i * 7 + i / 251) & 0xff,
 *                            alternating recvfrom_zcopy (chunks held, freed
 *                            out of order, up to 6 at a time, all freed
 *                            before it would wait; a batch led by an id
 *                            freed already is refused and frees the rest)
 *                            and plain recv;
 *                            check every byte; then send_dummy (nothing may
 *                            reach the peer) and reply "ok BYTES\n";
 *                            dump_fd_stats at notice level; EOF -> 0
 *   xapi comp PORT CONNS BYTES  completion polling only: the listener joins
 *                            the thread's set by itself (created after the
 *                            first comp call); CONNS connections accepted
 *                            through completions, BYTES each checked from
 *                            packet completions, "ok BYTES\n" replied, closed
 *                            at EOF (EPOLLRDHUP); sleeps on comp_fds when idle
 *   xapi rules PORT          add_conf_rule and thread_offload decide what the
 *                            next sockets are (UDP binds on PORT..PORT+5),
 *                            told apart by comp_add (-EOPNOTSUPP: a kernel
 *                            socket); bad rules and arguments get -EINVAL
 *   xapi cbfilter PORT N     a receive callback keeps only datagram "N-1"
 *                            of N that arrive while the program waits for
 *                            SIGUSR1; then poll must find it readable (the
 *                            callback ran over all N) and recv return it
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dpsock/extra.h>

static const struct dpsock_extra_api *api;

#define FAIL(...) do { printf("xapi: FAIL: " __VA_ARGS__); printf("\n"); exit(1); } while (0)

static unsigned char
pattern(uint64_t i)
{
	return (unsigned char)(i * 7u + i / 251u);
}

static int
listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0)
		FAIL("listen on %d: %s", port, strerror(errno));
	return fd;
}

/* Check n bytes at stream offset *off, over segments. */
static void
check_iov(const struct iovec *iov, int n, uint64_t *off)
{
	for (int k = 0; k < n; k++) {
		const unsigned char *p = iov[k].iov_base;

		for (size_t i = 0; i < iov[k].iov_len; i++, (*off)++)
			if (p[i] != pattern(*off))
				FAIL("byte %" PRIu64 " is %u, expected %u", *off, p[i], pattern(*off));
	}
}

/* ---- tcp ---------------------------------------------------------------------- */

static int
cmd_tcp(int port, uint64_t bytes)
{
	struct dpsock_zpkt held[6];
	unsigned int n_held = 0, zc = 0, plain = 0, turn = 0, freed_rev = 0;
	uint64_t off = 0;
	char reply[64];
	int l, c, r;

	l = listen_on(port);
	printf("xapi: listening\n");
	fflush(stdout);
	c = accept(l, NULL, NULL);
	if (c < 0)
		FAIL("accept: %s", strerror(errno));
	while (off < bytes) {
		if (turn++ % 3 == 2) {
			unsigned char buf[3000];
			struct iovec v = { buf, 0 };
			ssize_t got = recv(c, buf, sizeof(buf), n_held > 0 ? MSG_DONTWAIT : 0);

			if (got < 0 && errno == EAGAIN && n_held > 0) {
				/* oldest first this time */
				if ((r = api->free_packets(held, n_held)) != 0)
					FAIL("free_packets: %d", r);
				n_held = 0;
				continue;
			}
			if (got <= 0)
				FAIL("recv at %" PRIu64 ": %zd %s", off, got, strerror(errno));
			v.iov_len = (size_t)got;
			check_iov(&v, 1, &off);
			plain++;
			continue;
		}
		/* held data keeps its FIFO space: never wait while holding */
		r = api->recvfrom_zcopy(c, &held[n_held], 1, n_held > 0 ? MSG_DONTWAIT : 0);
		if (r == -EAGAIN && n_held > 0) {
			/* newest first: the oldest keeps the FIFO until the end */
			while (n_held > 0)
				if ((r = api->free_packets(&held[--n_held], 1)) != 0)
					FAIL("free_packets: %d", r);
			freed_rev++;
			continue;
		}
		if (r <= 0)
			FAIL("recvfrom_zcopy at %" PRIu64 ": %d %s", off, r, strerror(-r));
		if (held[n_held].len != held[n_held].iov[0].iov_len + held[n_held].iov[1].iov_len ||
		    held[n_held].n_iov < 1 || held[n_held].n_iov > 2)
			FAIL("packet len %u iov %zu+%zu n_iov %u", held[n_held].len,
			     held[n_held].iov[0].iov_len, held[n_held].iov[1].iov_len,
			     held[n_held].n_iov);
		check_iov(held[n_held].iov, held[n_held].n_iov, &off);
		zc++;
		if (++n_held == 6) {
			struct dpsock_zpkt batch[6];

			/* out of order: the newest first, then the others in a
			 * batch led by the newest again: that stale id is
			 * refused, the five behind it are freed all the same
			 * (else the FIFO would never drain and the peer stall) */
			if ((r = api->free_packets(&held[5], 1)) != 0)
				FAIL("free_packets: %d", r);
			batch[0] = held[5];
			memcpy(&batch[1], held, 5 * sizeof(held[0]));
			if ((r = api->free_packets(batch, 6)) != -EINVAL)
				FAIL("a batch with a packet freed twice: %d, expected -EINVAL", r);
			if (api->free_packets(&held[0], 1) != -EINVAL)
				FAIL("the batch's valid packets were not freed (one frees again)");
			n_held = 0;
		}
	}
	if (n_held > 0 && (r = api->free_packets(held, n_held)) != 0)
		FAIL("free_packets: %d", r);
	if (off != bytes)
		FAIL("got %" PRIu64 " bytes, expected %" PRIu64, off, bytes);
	/* a dummy send: the whole send path, nothing on the wire */
	r = api->send_dummy(c, "DUMMY-NOT-SENT\n", 15, 0);
	if (r != 15)
		FAIL("send_dummy: %d", r);
	if (api->send_dummy(c, "x", 1, MSG_MORE) != -EINVAL)
		FAIL("send_dummy with flags was not refused");
	l = snprintf(reply, sizeof(reply), "ok %" PRIu64 "\n", bytes);
	if (send(c, reply, (size_t)l, 0) != l)
		FAIL("send: %s", strerror(errno));
	if ((r = api->dump_fd_stats(c, 5)) != 0)
		FAIL("dump_fd_stats: %d", r);
	if (api->dump_fd_stats(c, 9) != -EINVAL || api->dump_fd_stats(12345, 5) != -EBADF)
		FAIL("dump_fd_stats accepted a bad level or descriptor");
	/* the peer closes: EOF through the zero-copy call too */
	r = api->recvfrom_zcopy(c, held, 1, 0);
	if (r != 0)
		FAIL("expected EOF (0) from recvfrom_zcopy, got %d", r);
	printf("xapi: ok tcp bytes=%" PRIu64 " zcopy_chunks=%u plain_recvs=%u reverse_frees=%u\n",
	       bytes, zc, plain, freed_rev);
	close(c);
	close(l);
	return 0;
}

/* ---- comp --------------------------------------------------------------------- */

struct conn {
	int fd;
	uint64_t got;
	bool replied, closed;
};

static int
cmd_comp(int port, int conns, uint64_t bytes)
{
	struct dpsock_comp ev[64];
	struct conn c[64];
	int fds[2], l, n, done = 0, nc = 0, accepted = 0, sleeps = 0;
	uint64_t packets = 0;

	if (conns < 1 || conns > 64)
		FAIL("1..64 connections");
	/* the set exists from the first call: the listener below joins it */
	if ((n = api->comp_fds(fds, 2)) != 2)
		FAIL("comp_fds: %d", n);
	if (api->comp_poll(ev, 64, 0) != 0)
		FAIL("an empty set had completions");
	if (api->comp_poll(NULL, 1, 0) != -EINVAL || api->comp_poll(ev, 64, 0x80) != -EINVAL)
		FAIL("comp_poll accepted bad arguments");
	l = listen_on(port);
	if (api->comp_del(l) != 0 || api->comp_del(l) != -ENOENT || api->comp_add(l, (uint64_t)l) != 0)
		FAIL("the listener did not join the set by itself");
	printf("xapi: listening\n");
	fflush(stdout);
	while (done < conns) {
		n = api->comp_poll(ev, 64, DPSOCK_COMP_ARM);
		if (n < 0)
			FAIL("comp_poll: %d", n);
		if (n == 0) {
			struct pollfd p[2] = { { fds[0], POLLIN, 0 }, { fds[1], POLLIN, 0 } };

			sleeps++;
			if (poll(p, 2, 10000) == 0)
				FAIL("nothing for 10 s: %d of %d connections done", done, conns);
			continue;
		}
		for (int k = 0; k < n; k++) {
			struct dpsock_comp *e = &ev[k];
			struct conn *x = NULL;

			if (e->events & DPSOCK_COMP_ACCEPTED) {
				if (e->fd != l || e->new_fd < 0 || nc == 64)
					FAIL("accept completion fd %d new_fd %d", e->fd, e->new_fd);
				c[nc++] = (struct conn){ .fd = e->new_fd };
				accepted++;
				continue;
			}
			for (int j = 0; j < nc; j++)
				if (c[j].fd == e->fd)
					x = &c[j];
			if (x == NULL || (int)e->user_data != e->fd)
				FAIL("completion for unknown fd %d (user %" PRIu64 ")", e->fd, e->user_data);
			if (e->events & DPSOCK_COMP_PACKET) {
				check_iov(e->pkt.iov, e->pkt.n_iov, &x->got);
				packets++;
				if (api->free_packets(&e->pkt, 1) != 0)
					FAIL("free_packets");
				if (x->got == bytes && !x->replied) {
					char r[64];
					int rl = snprintf(r, sizeof(r), "ok %" PRIu64 "\n", bytes);

					if (send(x->fd, r, (size_t)rl, 0) != rl)
						FAIL("send: %s", strerror(errno));
					x->replied = true;
				}
			}
			if (e->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
				if (x->closed)
					FAIL("fd %d: end reported twice", x->fd);
				if (x->got != bytes || !x->replied)
					FAIL("fd %d ended after %" PRIu64 " bytes", x->fd, x->got);
				x->closed = true;
				close(x->fd);
				done++;
			}
		}
	}
	printf("xapi: ok comp conns=%d accepted=%d packets=%" PRIu64 " sleeps=%d\n", conns, accepted,
	       packets, sleeps);
	close(l);
	return 0;
}

/* ---- rules -------------------------------------------------------------------- */

/* comp_add's verdict on a fresh UDP socket bound to port: 0 offloaded,
 * -EOPNOTSUPP kernel. */
static int
udp_offloaded(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), r;

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		FAIL("bind %d: %s", port, strerror(errno));
	r = api->comp_add(fd, 0);
	close(fd);
	return r;
}

static int
cmd_rules(int port)
{
	char rule[96];
	int r;

	if ((r = udp_offloaded(port)) != 0)
		FAIL("port %d: no rule yet, expected offloaded, comp_add said %d", port, r);
	snprintf(rule, sizeof(rule), "use os udp_receiver *:%d", port + 1);
	if ((r = api->add_conf_rule(rule)) != 0)
		FAIL("add_conf_rule '%s': %d", rule, r);
	if ((r = udp_offloaded(port + 1)) != -EOPNOTSUPP)
		FAIL("port %d: 'use os' rule, comp_add said %d", port + 1, r);
	if ((r = udp_offloaded(port + 2)) != 0)
		FAIL("port %d: no rule, comp_add said %d", port + 2, r);
	/* VMA's words: an application-id block for another program, then vma */
	if (api->add_conf_rule("application-id not-this-program *") != 0)
		FAIL("application-id");
	snprintf(rule, sizeof(rule), "use os udp_receiver *:%d", port + 2);
	if (api->add_conf_rule(rule) != 0 || udp_offloaded(port + 2) != 0)
		FAIL("a rule for another program applied to this one");
	if (api->add_conf_rule("application-id xapi *") != 0)
		FAIL("application-id xapi");
	snprintf(rule, sizeof(rule), "use vma udp_receiver 0.0.0.0/0:%d-%d", port + 3, port + 4);
	if (api->add_conf_rule(rule) != 0 || udp_offloaded(port + 3) != 0)
		FAIL("'use vma' rule");
	if (api->add_conf_rule("use sdp tcp_server *:1") != -EINVAL ||
	    api->add_conf_rule("use os tcp_server *:1:*:*") != -EINVAL ||
	    api->add_conf_rule(NULL) != -EFAULT)
		FAIL("bad rules were accepted");
	/* thread_offload: this thread's next sockets stay in the kernel */
	if ((r = api->thread_offload(0)) != 1)
		FAIL("thread_offload(0) returned %d, expected the old setting 1", r);
	if ((r = udp_offloaded(port + 5)) != -EBADF)
		FAIL("thread_offload(0): comp_add said %d (expected -EBADF: no shadow socket)", r);
	if (api->thread_offload(1) != 0 || api->thread_offload(2) != -EINVAL)
		FAIL("thread_offload(1)");
	if ((r = udp_offloaded(port + 5)) != 0)
		FAIL("thread_offload(1): comp_add said %d", r);
	printf("xapi: ok rules\n");
	return 0;
}

/* ---- a receive callback that drops all but one -------------------------------- */

static unsigned int cb_calls;

/* Keep the datagram whose text is the number *ctx, drop the others. */
static enum dpsock_recv_verdict
keep_one(int fd, const struct dpsock_zpkt *p, void *ctx)
{
	char text[16] = "";
	size_t l = p->len < sizeof(text) - 1 ? p->len : sizeof(text) - 1;
	size_t l0 = l < p->iov[0].iov_len ? l : p->iov[0].iov_len;

	(void)fd;
	cb_calls++;
	memcpy(text, p->iov[0].iov_base, l0);
	if (l > l0)
		memcpy(text + l0, p->iov[1].iov_base, l - l0);
	return strtoul(text, NULL, 10) == *(unsigned int *)ctx ? DPSOCK_RECV_KEEP : DPSOCK_RECV_DROP;
}

/* N datagrams "0".."N-1" arrive while the program looks elsewhere; then it
 * polls: the callback must run over all of them (not a bounded first few,
 * which would leave poll asleep with nothing left to wake it) and the last
 * one, the only one kept, must be readable. */
static int
cmd_cbfilter(int port, unsigned int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	unsigned int last = n - 1;
	struct pollfd pf;
	char buf[64];
	sigset_t usr1;
	ssize_t got;
	int fd, r, sig;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		FAIL("bind %d: %s", port, strerror(errno));
	if ((r = api->register_recv_callback(fd, keep_one, &last)) != 0)
		FAIL("register_recv_callback: %d", r);
	printf("xapi: ready fd %d\n", fd);
	/* the test sends them all, sees them in the socket's counters, then
	 * signals: until then nothing here looks at the socket */
	if (sigwait(&usr1, &sig) != 0)
		FAIL("sigwait");
	pf = (struct pollfd){ .fd = fd, .events = POLLIN };
	r = poll(&pf, 1, 10000);
	if (r != 1 || !(pf.revents & POLLIN))
		FAIL("poll: %d (revents %#x) after the callback ran %u times of %u: the kept "
		     "datagram is not readable", r, pf.revents, cb_calls, n);
	got = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
	if (got <= 0)
		FAIL("recv: %zd %s", got, strerror(errno));
	buf[got] = '\0';
	if (strtoul(buf, NULL, 10) != last || cb_calls != n)
		FAIL("recv got '%s' (expected %u), callback ran %u times (expected %u)", buf, last,
		     cb_calls, n);
	if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) != -1 || errno != EAGAIN)
		FAIL("a dropped datagram was readable");
	printf("xapi: ok cbfilter dropped=%u kept=1\n", cb_calls - 1);
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	api = dpsock_get_api();
	if (argc >= 2 && strcmp(argv[1], "probe") == 0) {
		printf("xapi: api %s\n", api ? "present" : "none");
		return 0;
	}
	if (api == NULL)
		FAIL("no extra API: run under LD_PRELOAD=libdpsock_preload.so");
	if (api->version != DPSOCK_EXTRA_VERSION || api->size < sizeof(*api) ||
	    (api->caps & 0xff) != 0xff)
		FAIL("table version %u size %u caps %" PRIx64, api->version, api->size, api->caps);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "tcp") == 0)
		return cmd_tcp(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	if (argc == 5 && strcmp(argv[1], "comp") == 0)
		return cmd_comp(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "rules") == 0)
		return cmd_rules(atoi(argv[2]));
	if (argc == 4 && strcmp(argv[1], "cbfilter") == 0 && atoi(argv[3]) > 0)
		return cmd_cbfilter(atoi(argv[2]), (unsigned int)atoi(argv[3]));
	fprintf(stderr, "usage: xapi probe | tcp PORT BYTES | comp PORT CONNS BYTES | rules PORT | "
		"cbfilter PORT N\n");
	return 2;
}
