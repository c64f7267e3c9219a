/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mctool — UDP multicast from the socket API's side, for the multicast
 * tests (test/integration/mcast_*.sh). Plain libc: it runs on Linux's
 * sockets and, unchanged, under libdpsock_preload.so.
 *
 *   mctool sub -g GROUP -p PORT [options]   join, receive, report
 *   mctool pub -g GROUP -p PORT [options]   send numbered datagrams
 *   mctool api -a LOCAL_ADDR -I IFNAME -p PORT
 *                                           the membership options' errno
 *                                           semantics, as a transcript
 *   mctool query -i IFADDR [-v 1|2|3] [-g GROUP] [-s SRC]... [-m MRT_DS]
 *                                           send an IGMP query (raw socket)
 *
 * sub options:
 *   -b ADDR      bind address (default 0.0.0.0; "group" = the group itself)
 *   -i ADDR      interface by address (ip_mreq's imr_interface)
 *   -I IFINDEX   interface by index (ip_mreqn, or MCAST_* with -F mcast)
 *   -F FORM      mreq (default) | mreqn | mcast: which option family joins
 *   -s SRC       source-specific: IP_ADD_SOURCE_MEMBERSHIP / MCAST_JOIN_SOURCE_GROUP
 *                (repeatable)
 *   -x SRC       IP_BLOCK_SOURCE / MCAST_BLOCK_SOURCE after an any-source join
 *   -A 0|1       IP_MULTICAST_ALL
 *   -r / -R      SO_REUSEADDR / SO_REUSEPORT
 *   -n N         stop after N datagrams
 *   -t SEC       stop after SEC seconds without a datagram (default 5)
 *   -w SEC       but wait up to SEC seconds for the first one (default: -t;
 *                a benchmark's subscribers start before a late publisher)
 *   -L N         leave the group after N datagrams, then keep receiving
 *                (what still arrives is counted as after_leave)
 *   -c           ask IP_PKTINFO and SO_TIMESTAMPNS and check every datagram's
 *   -C KIND      with -c, the timestamp asked: ns (SO_TIMESTAMPNS, default),
 *                us (SO_TIMESTAMP), ing (SO_TIMESTAMPING, RX_SOFTWARE |
 *                SOFTWARE: the stamp in the first of its three)
 *   -m           receive with recvmmsg
 *   -B BYTES     SO_RCVBUF (-K BYTES: SO_RCVBUFFORCE, past net.core.rmem_max)
 *   -N           no membership (a unicast receiver: -g is then the bind port's
 *                address filter only, any address)
 *   -D MS        wait MS milliseconds after READY before reading (a slow reader)
 * It prints READY once joined (on stdout, flushed), then at the end
 *   RESULT received=N bytes=B after_leave=M lost=L dup=D foreign=F pktinfo=.. ts=..
 *   SOURCE addr:port datagrams
 * (lost: gaps in each sender's sequence numbers; foreign: not mctool's).
 *
 * pub options: -n COUNT (default 1000), -r RATE per second (0 = as fast as
 * sends go), -l SIZE (>= 16), -T TTL (IP_MULTICAST_TTL), -u TTL (IP_TTL), -Q
 * TOS (IP_TOS), -o 0|1 (IP_MULTICAST_LOOP), -i ADDR (IP_MULTICAST_IF), -b
 * ADDR[:PORT] (bind), -S ID (sender id). -g may be a unicast address.
 * Prints SENT n errors=e at the end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/net_tstamp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x4d43544fu /* "MCTO" */
#define MAX_SRC 16
#define MAX_SENDERS 64

struct payload {
	uint32_t magic;
	uint32_t sender;
	uint64_t seq;
};

static void
die(const char *what)
{
	fprintf(stderr, "mctool: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint32_t
addr_of(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "mctool: bad address '%s'\n", s);
		exit(2);
	}
	return a.s_addr;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds this process used (user + system) */
static double
cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static void
setint(int fd, int level, int name, int v, const char *what)
{
	if (setsockopt(fd, level, name, &v, sizeof(v)) != 0)
		die(what);
}

/* ---- sub ------------------------------------------------------------------ */

struct sender {
	uint32_t addr, id;
	uint16_t port;
	uint64_t n, min, max, dups;
	uint8_t *seen;            /* bitmap of sequence numbers up to seen_len */
	uint64_t seen_len;
};

struct sub {
	struct sender s[MAX_SENDERS];
	unsigned int n_senders;
	uint64_t received, bytes, after_leave, foreign;
	uint64_t pktinfo_bad, ts_bad;
	bool check, left;
	int ts_kind;              /* SO_TIMESTAMPNS, SO_TIMESTAMP or SO_TIMESTAMPING */
	uint32_t group;
	double t_first, t_last;   /* first and last datagram (CLOCK_MONOTONIC) */
};

static void
account(struct sub *st, const struct sockaddr_in *from, const void *buf, size_t len)
{
	struct payload p;
	struct sender *sd = NULL;

	st->t_last = now_s();
	if (st->received == 0)
		st->t_first = st->t_last;
	st->received++;
	st->bytes += len;
	if (st->left)
		st->after_leave++;
	if (len < sizeof(p)) {
		st->foreign++;
		return;
	}
	memcpy(&p, buf, sizeof(p));
	if (p.magic != htonl(MAGIC)) {
		st->foreign++;
		return;
	}
	for (unsigned int i = 0; i < st->n_senders; i++)
		if (st->s[i].addr == from->sin_addr.s_addr && st->s[i].id == p.sender)
			sd = &st->s[i];
	if (sd == NULL) {
		if (st->n_senders == MAX_SENDERS)
			return;
		sd = &st->s[st->n_senders++];
		sd->addr = from->sin_addr.s_addr;
		sd->port = from->sin_port;
		sd->id = p.sender;
		sd->min = UINT64_MAX;
	}
	p.seq = be64toh(p.seq);
	sd->n++;
	if (p.seq < sd->min)
		sd->min = p.seq;
	if (p.seq > sd->max || sd->n == 1)
		sd->max = p.seq;
	if (p.seq >= sd->seen_len) {
		uint64_t nl = (p.seq + 1) * 2;
		uint8_t *ns = realloc(sd->seen, (nl + 7) / 8);

		if (ns == NULL)
			return;
		memset(ns + (sd->seen_len + 7) / 8, 0, (nl + 7) / 8 - (sd->seen_len + 7) / 8);
		sd->seen = ns;
		sd->seen_len = nl;
	}
	if (sd->seen[p.seq / 8] & (1u << (p.seq % 8)))
		sd->dups++;
	sd->seen[p.seq / 8] |= (uint8_t)(1u << (p.seq % 8));
}

static void
check_cmsgs(struct sub *st, struct msghdr *m)
{
	struct cmsghdr *c;
	bool pi = false, ts = false, other = false;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	for (c = CMSG_FIRSTHDR(m); c != NULL; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo p;

			memcpy(&p, CMSG_DATA(c), sizeof(p));
			pi = p.ipi_addr.s_addr == st->group && p.ipi_ifindex > 0;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == st->ts_kind) {
			/* SCM_TIMESTAMP* == SO_TIMESTAMP*: the one asked, alone */
			struct timespec t[3];
			struct timeval tv;
			double d;

			memset(t, 0, sizeof(t));
			if (st->ts_kind == SO_TIMESTAMP) {
				memcpy(&tv, CMSG_DATA(c), sizeof(tv));
				t[0].tv_sec = tv.tv_sec;
				t[0].tv_nsec = tv.tv_usec * 1000;
			} else {
				memcpy(t, CMSG_DATA(c), st->ts_kind == SO_TIMESTAMPING ?
				       sizeof(t) : sizeof(t[0]));
			}
			d = (now.tv_sec - t[0].tv_sec) + (now.tv_nsec - t[0].tv_nsec) / 1e9;
			/* once; SO_TIMESTAMPING: no hardware stamp asked, none given */
			ts = !ts && d >= -0.001 && d < 10 && t[2].tv_sec == 0 && t[2].tv_nsec == 0;
			other |= !ts;
		} else {
			other = true; /* a control message not asked for */
		}
	}
	st->pktinfo_bad += !pi;
	st->ts_bad += !ts || other;
}

struct join {
	int form;                 /* 0 mreq, 1 mreqn, 2 mcast */
	uint32_t group, ifaddr;
	int ifindex;
};

static int
do_join(int fd, const struct join *j, bool leave, const uint32_t *src, unsigned int nsrc,
	const uint32_t *blk, unsigned int nblk)
{
	if (j->form == 2) {
		struct group_req gr = { .gr_interface = (uint32_t)j->ifindex };
		struct sockaddr_in *g = (struct sockaddr_in *)&gr.gr_group;

		g->sin_family = AF_INET;
		g->sin_addr.s_addr = j->group;
		if (nsrc > 0 && !leave) {
			for (unsigned int i = 0; i < nsrc; i++) {
				struct group_source_req gs = { .gsr_interface = (uint32_t)j->ifindex };
				struct sockaddr_in *gg = (struct sockaddr_in *)&gs.gsr_group;
				struct sockaddr_in *ss = (struct sockaddr_in *)&gs.gsr_source;

				gg->sin_family = ss->sin_family = AF_INET;
				gg->sin_addr.s_addr = j->group;
				ss->sin_addr.s_addr = src[i];
				if (setsockopt(fd, IPPROTO_IP, MCAST_JOIN_SOURCE_GROUP, &gs, sizeof(gs)))
					return -errno;
			}
			return 0;
		}
		if (setsockopt(fd, IPPROTO_IP, leave ? MCAST_LEAVE_GROUP : MCAST_JOIN_GROUP, &gr,
			       sizeof(gr)))
			return -errno;
		for (unsigned int i = 0; i < nblk && !leave; i++) {
			struct group_source_req gs = { .gsr_interface = (uint32_t)j->ifindex };
			struct sockaddr_in *gg = (struct sockaddr_in *)&gs.gsr_group;
			struct sockaddr_in *ss = (struct sockaddr_in *)&gs.gsr_source;

			gg->sin_family = ss->sin_family = AF_INET;
			gg->sin_addr.s_addr = j->group;
			ss->sin_addr.s_addr = blk[i];
			if (setsockopt(fd, IPPROTO_IP, MCAST_BLOCK_SOURCE, &gs, sizeof(gs)))
				return -errno;
		}
		return 0;
	}
	if (nsrc > 0 && !leave) {
		for (unsigned int i = 0; i < nsrc; i++) {
			struct ip_mreq_source ms = { .imr_multiaddr.s_addr = j->group,
						     .imr_interface.s_addr = j->ifaddr,
						     .imr_sourceaddr.s_addr = src[i] };

			if (setsockopt(fd, IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, &ms, sizeof(ms)))
				return -errno;
		}
		return 0;
	}
	if (j->form == 1) {
		struct ip_mreqn mn = { .imr_multiaddr.s_addr = j->group,
				       .imr_address.s_addr = j->ifaddr, .imr_ifindex = j->ifindex };

		if (setsockopt(fd, IPPROTO_IP, leave ? IP_DROP_MEMBERSHIP : IP_ADD_MEMBERSHIP, &mn,
			       sizeof(mn)))
			return -errno;
	} else {
		struct ip_mreq mr = { .imr_multiaddr.s_addr = j->group,
				      .imr_interface.s_addr = j->ifaddr };

		if (setsockopt(fd, IPPROTO_IP, leave ? IP_DROP_MEMBERSHIP : IP_ADD_MEMBERSHIP, &mr,
			       sizeof(mr)))
			return -errno;
	}
	for (unsigned int i = 0; i < nblk && !leave; i++) {
		struct ip_mreq_source ms = { .imr_multiaddr.s_addr = j->group,
					     .imr_interface.s_addr = j->ifaddr,
					     .imr_sourceaddr.s_addr = blk[i] };

		if (setsockopt(fd, IPPROTO_IP, IP_BLOCK_SOURCE, &ms, sizeof(ms)))
			return -errno;
	}
	return 0;
}

static int
cmd_sub(int argc, char **argv)
{
	static struct sub st = { .ts_kind = SO_TIMESTAMPNS };
	struct join j = { 0 };
	uint32_t src[MAX_SRC], blk[MAX_SRC], bind_addr = 0;
	unsigned int nsrc = 0, nblk = 0;
	int opt, fd, port = 0, mc_all = -1, reuse = 0, reuseport = 0, rcvbuf = 0, force = 0, r;
	int delay_ms = 0;
	bool nojoin = false;
	uint64_t count = 0, leave_after = 0;
	double idle = 5, first_wait = -1, last;
	bool mmsg = false, bind_group = false;
	const char *gs = NULL;
	struct sockaddr_in sin = { .sin_family = AF_INET };

	while ((opt = getopt(argc, argv, "g:p:b:i:I:F:s:x:A:rRn:t:w:L:cC:mB:K:ND:")) != -1) {
		switch (opt) {
		case 'g': gs = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'b':
			if (strcmp(optarg, "group") == 0)
				bind_group = true;
			else
				bind_addr = addr_of(optarg);
			break;
		case 'i': j.ifaddr = addr_of(optarg); break;
		case 'I': j.ifindex = atoi(optarg); break;
		case 'F':
			j.form = strcmp(optarg, "mreqn") == 0 ? 1 : strcmp(optarg, "mcast") == 0 ? 2 : 0;
			break;
		case 's': if (nsrc < MAX_SRC) src[nsrc++] = addr_of(optarg); break;
		case 'x': if (nblk < MAX_SRC) blk[nblk++] = addr_of(optarg); break;
		case 'A': mc_all = atoi(optarg); break;
		case 'r': reuse = 1; break;
		case 'R': reuseport = 1; break;
		case 'n': count = strtoull(optarg, NULL, 0); break;
		case 't': idle = atof(optarg); break;
		case 'w': first_wait = atof(optarg); break;
		case 'L': leave_after = strtoull(optarg, NULL, 0); break;
		case 'c': st.check = true; break;
		case 'C':
			st.ts_kind = strcmp(optarg, "us") == 0 ? SO_TIMESTAMP :
				     strcmp(optarg, "ing") == 0 ? SO_TIMESTAMPING : SO_TIMESTAMPNS;
			break;
		case 'm': mmsg = true; break;
		case 'B': rcvbuf = atoi(optarg); break;
		case 'K': rcvbuf = atoi(optarg); force = 1; break;
		case 'N': nojoin = true; break;
		case 'D': delay_ms = atoi(optarg); break;
		default: return 2;
		}
	}
	if (gs == NULL || port <= 0) {
		fprintf(stderr, "mctool sub: -g GROUP -p PORT needed\n");
		return 2;
	}
	j.group = st.group = addr_of(gs);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (reuse)
		setint(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	if (reuseport)
		setint(fd, SOL_SOCKET, SO_REUSEPORT, 1, "SO_REUSEPORT");
	if (mc_all >= 0)
		setint(fd, IPPROTO_IP, IP_MULTICAST_ALL, mc_all, "IP_MULTICAST_ALL");
	if (rcvbuf > 0)
		setint(fd, SOL_SOCKET, force ? SO_RCVBUFFORCE : SO_RCVBUF, rcvbuf, "SO_RCVBUF");
	if (st.check) {
		setint(fd, IPPROTO_IP, IP_PKTINFO, 1, "IP_PKTINFO");
		if (st.ts_kind == SO_TIMESTAMPING)
			setint(fd, SOL_SOCKET, SO_TIMESTAMPING,
			       SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE,
			       "SO_TIMESTAMPING");
		else
			setint(fd, SOL_SOCKET, st.ts_kind, 1, "SO_TIMESTAMP");
	}
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = bind_group ? j.group : bind_addr;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
		die("bind");
	r = nojoin ? 0 : do_join(fd, &j, false, src, nsrc, blk, nblk);
	if (r != 0) {
		errno = -r;
		die("join");
	}
	printf("READY\n");
	fflush(stdout);
	if (delay_ms > 0)
		usleep((useconds_t)delay_ms * 1000);
	last = now_s();
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		static unsigned char bufs[16][65536];
		char ctl[16][256];
		struct mmsghdr mm[16];
		struct iovec iov[16];
		struct sockaddr_in from[16];
		int n, k;

		if (count && st.received >= count)
			break;
		if (now_s() - last > (st.received == 0 && first_wait >= 0 ? first_wait : idle))
			break;
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		memset(mm, 0, sizeof(mm));
		for (k = 0; k < 16; k++) {
			iov[k].iov_base = bufs[k];
			iov[k].iov_len = sizeof(bufs[k]);
			mm[k].msg_hdr.msg_iov = &iov[k];
			mm[k].msg_hdr.msg_iovlen = 1;
			mm[k].msg_hdr.msg_name = &from[k];
			mm[k].msg_hdr.msg_namelen = sizeof(from[k]);
			mm[k].msg_hdr.msg_control = ctl[k];
			mm[k].msg_hdr.msg_controllen = sizeof(ctl[k]);
		}
		if (mmsg) {
			n = recvmmsg(fd, mm, 16, MSG_DONTWAIT, NULL);
		} else {
			ssize_t l = recvmsg(fd, &mm[0].msg_hdr, MSG_DONTWAIT);

			n = l < 0 ? -1 : 1;
			if (l >= 0)
				mm[0].msg_len = (unsigned int)l;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			die("recv");
		}
		for (k = 0; k < n; k++) {
			account(&st, &from[k], bufs[k], mm[k].msg_len);
			if (st.check)
				check_cmsgs(&st, &mm[k].msg_hdr);
			if (leave_after && !st.left && st.received >= leave_after) {
				r = do_join(fd, &j, true, src, nsrc, NULL, 0);
				if (r != 0) {
					errno = -r;
					die("leave");
				}
				st.left = true;
				printf("LEFT\n");
				fflush(stdout);
			}
		}
		last = now_s();
	}
	{
		uint64_t lost = 0, dups = 0;

		for (unsigned int i = 0; i < st.n_senders; i++) {
			uint64_t distinct = 0;

			for (uint64_t q = st.s[i].min; q <= st.s[i].max && st.s[i].n; q++)
				distinct += (st.s[i].seen[q / 8] >> (q % 8)) & 1;
			lost += st.s[i].n ? st.s[i].max - st.s[i].min + 1 - distinct : 0;
			dups += st.s[i].dups;
		}
		printf("RESULT received=%" PRIu64 " bytes=%" PRIu64 " after_leave=%" PRIu64
		       " lost=%" PRIu64 " dup=%" PRIu64 " foreign=%" PRIu64 " pktinfo=%s ts=%s"
		       " cpu=%.3f span=%.3f\n",
		       st.received, st.bytes, st.after_leave, lost, dups, st.foreign,
		       !st.check ? "off" : st.pktinfo_bad ? "bad" : "ok",
		       !st.check ? "off" : st.ts_bad ? "bad" : "ok", cpu_s(),
		       st.received ? st.t_last - st.t_first : 0.0);
		for (unsigned int i = 0; i < st.n_senders; i++) {
			char a[INET_ADDRSTRLEN];

			inet_ntop(AF_INET, &st.s[i].addr, a, sizeof(a));
			printf("SOURCE %s:%u id=%u datagrams=%" PRIu64 "\n", a, ntohs(st.s[i].port),
			       st.s[i].id, st.s[i].n);
		}
	}
	close(fd);
	return 0;
}

/* ---- pub ------------------------------------------------------------------ */

static int
cmd_pub(int argc, char **argv)
{
	uint64_t count = 1000, sent = 0, errors = 0;
	int opt, fd, port = 0, ttl = -2, loop = -1, size = 64, id = 1, uttl = -2, tos = -1;
	double rate = 0;
	uint32_t ifaddr = 0, bind_addr = 0;
	int bind_port = 0;
	const char *gs = NULL;
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct timespec next;
	unsigned char buf[65536];
	double t0;

	while ((opt = getopt(argc, argv, "g:p:n:r:l:T:u:Q:o:i:b:S:")) != -1) {
		switch (opt) {
		case 'g': gs = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': count = strtoull(optarg, NULL, 0); break;
		case 'r': rate = atof(optarg); break;
		case 'l': size = atoi(optarg); break;
		case 'T': ttl = atoi(optarg); break;
		case 'u': uttl = atoi(optarg); break;
		case 'Q': tos = (int)strtol(optarg, NULL, 0); break;
		case 'o': loop = atoi(optarg); break;
		case 'i': ifaddr = addr_of(optarg); break;
		case 'b': {
			char *c = strchr(optarg, ':');

			if (c != NULL) {
				*c = '\0';
				bind_port = atoi(c + 1);
			}
			bind_addr = addr_of(optarg);
			break;
		}
		case 'S': id = atoi(optarg); break;
		default: return 2;
		}
	}
	if (gs == NULL || port <= 0 || size < (int)sizeof(struct payload) || size > 65507) {
		fprintf(stderr, "mctool pub: -g GROUP -p PORT needed, 16 <= -l <= 65507\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	if (ttl != -2)
		setint(fd, IPPROTO_IP, IP_MULTICAST_TTL, ttl, "IP_MULTICAST_TTL");
	if (loop >= 0)
		setint(fd, IPPROTO_IP, IP_MULTICAST_LOOP, loop, "IP_MULTICAST_LOOP");
	if (uttl != -2)
		setint(fd, IPPROTO_IP, IP_TTL, uttl, "IP_TTL");
	if (tos >= 0)
		setint(fd, IPPROTO_IP, IP_TOS, tos, "IP_TOS");
	if (ifaddr != 0) {
		struct in_addr a = { ifaddr };

		if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &a, sizeof(a)) != 0)
			die("IP_MULTICAST_IF");
	}
	if (bind_addr != 0 || bind_port != 0) {
		struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr.s_addr = bind_addr,
					 .sin_port = htons((uint16_t)bind_port) };

		if (bind(fd, (struct sockaddr *)&b, sizeof(b)) != 0)
			die("bind");
	}
	to.sin_addr.s_addr = addr_of(gs);
	to.sin_port = htons((uint16_t)port);
	memset(buf, 0xa5, sizeof(buf));
	t0 = now_s();
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (uint64_t i = 0; i < count; i++) {
		struct payload p = { htonl(MAGIC), (uint32_t)id, htobe64(i) };

		memcpy(buf, &p, sizeof(p));
		if (sendto(fd, buf, (size_t)size, 0, (struct sockaddr *)&to, sizeof(to)) == size) {
			sent++;
		} else {
			if (errors++ == 0)
				fprintf(stderr, "mctool pub: sendto: %s\n", strerror(errno));
			if (errno == EAGAIN || errno == ENOBUFS)
				i--; /* a full buffer: try the same one again */
			if (errors > 1000000)
				break;
		}
		if (rate > 0) {
			uint64_t ns = (uint64_t)(1e9 / rate);

			next.tv_nsec += (long)(ns % 1000000000ull);
			next.tv_sec += (time_t)(ns / 1000000000ull) + next.tv_nsec / 1000000000L;
			next.tv_nsec %= 1000000000L;
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		}
	}
	printf("SENT %" PRIu64 " errors=%" PRIu64 " elapsed=%.3f cpu=%.3f\n", sent, errors,
	       now_s() - t0, cpu_s());
	close(fd);
	return 0;
}

/* ---- api: the options' semantics, as a transcript --------------------------- */

static int api_fd;

static void
say(const char *what, int r)
{
	printf("%-52s %s\n", what, r == 0 ? "ok" : strerror(errno));
	fflush(stdout);
}

static int
mreq(int name, uint32_t g, uint32_t ifa)
{
	struct ip_mreq m = { .imr_multiaddr.s_addr = g, .imr_interface.s_addr = ifa };

	return setsockopt(api_fd, IPPROTO_IP, name, &m, sizeof(m));
}

static int
msrc(int name, uint32_t g, uint32_t ifa, uint32_t s)
{
	struct ip_mreq_source m = { .imr_multiaddr.s_addr = g, .imr_interface.s_addr = ifa,
				    .imr_sourceaddr.s_addr = s };

	return setsockopt(api_fd, IPPROTO_IP, name, &m, sizeof(m));
}

static int
gsr(int name, uint32_t g, int ifindex, uint32_t s, int family)
{
	struct group_source_req r = { .gsr_interface = (uint32_t)ifindex };
	struct sockaddr_in *gg = (struct sockaddr_in *)&r.gsr_group;
	struct sockaddr_in *ss = (struct sockaddr_in *)&r.gsr_source;

	gg->sin_family = (sa_family_t)family;
	ss->sin_family = AF_INET;
	gg->sin_addr.s_addr = g;
	ss->sin_addr.s_addr = s;
	return setsockopt(api_fd, IPPROTO_IP, name, &r, sizeof(r));
}

static int
gr(int name, uint32_t g, int ifindex, int family)
{
	struct group_req r = { .gr_interface = (uint32_t)ifindex };
	struct sockaddr_in *gg = (struct sockaddr_in *)&r.gr_group;

	gg->sin_family = (sa_family_t)family;
	gg->sin_addr.s_addr = g;
	return setsockopt(api_fd, IPPROTO_IP, name, &r, sizeof(r));
}

static uint32_t
grp(unsigned int i)
{
	return htonl(0xef010000u + i); /* 239.1.0.i */
}

static int
cmd_api(int argc, char **argv)
{
	uint32_t la = 0, s1 = htonl(0xc6120063), s2 = htonl(0xc6120064); /* 198.18.0.99/.100 */
	const char *ifname = NULL;
	int opt, port = 0, ifx, v;
	socklen_t l;
	struct sockaddr_in b = { .sin_family = AF_INET };
	struct in_addr a;
	char what[80];

	while ((opt = getopt(argc, argv, "a:I:p:")) != -1) {
		switch (opt) {
		case 'a': la = addr_of(optarg); break;
		case 'I': ifname = optarg; break;
		case 'p': port = atoi(optarg); break;
		default: return 2;
		}
	}
	if (la == 0 || ifname == NULL || port <= 0)
		return 2;
	ifx = (int)if_nametoindex(ifname);

	/* before bind: kept until the socket's fate is decided */
	api_fd = socket(AF_INET, SOCK_DGRAM, 0);
	say("unbound: IP_ADD_MEMBERSHIP 239.1.0.1", mreq(IP_ADD_MEMBERSHIP, grp(1), la));
	say("unbound: IP_ADD_MEMBERSHIP 239.1.0.1 again", mreq(IP_ADD_MEMBERSHIP, grp(1), la));
	say("unbound: IP_DROP_MEMBERSHIP 239.1.0.9", mreq(IP_DROP_MEMBERSHIP, grp(9), la));
	say("unbound: IP_BLOCK_SOURCE 239.1.0.1 s1", msrc(IP_BLOCK_SOURCE, grp(1), la, s1));
	b.sin_port = htons((uint16_t)port);
	say("bind 0.0.0.0", bind(api_fd, (struct sockaddr *)&b, sizeof(b)));
	say("bound: IP_ADD_MEMBERSHIP 239.1.0.1 (made before bind)",
	    mreq(IP_ADD_MEMBERSHIP, grp(1), la));
	say("bound: IP_BLOCK_SOURCE 239.1.0.1 s1 (made before bind)",
	    msrc(IP_BLOCK_SOURCE, grp(1), la, s1));
	say("IP_UNBLOCK_SOURCE 239.1.0.1 s2", msrc(IP_UNBLOCK_SOURCE, grp(1), la, s2));
	say("IP_UNBLOCK_SOURCE 239.1.0.1 s1", msrc(IP_UNBLOCK_SOURCE, grp(1), la, s1));
	say("IP_ADD_SOURCE_MEMBERSHIP 239.1.0.1 s1 (list of the other mode)",
	    msrc(IP_ADD_SOURCE_MEMBERSHIP, grp(1), la, s1));
	say("IP_DROP_MEMBERSHIP 239.1.0.1", mreq(IP_DROP_MEMBERSHIP, grp(1), la));
	say("IP_DROP_MEMBERSHIP 239.1.0.1 again", mreq(IP_DROP_MEMBERSHIP, grp(1), la));
	say("IP_ADD_MEMBERSHIP 198.18.0.5 (not a group)",
	    mreq(IP_ADD_MEMBERSHIP, htonl(0xc6120005), la));
	say("IP_ADD_MEMBERSHIP short option", setsockopt(api_fd, IPPROTO_IP, IP_ADD_MEMBERSHIP,
							     &la, sizeof(la)));
	say("IP_ADD_MEMBERSHIP on 203.0.113.1 (no such interface)",
	    mreq(IP_ADD_MEMBERSHIP, grp(2), htonl(0xcb007101)));
	say("IP_BLOCK_SOURCE 239.1.0.2 (not joined)", msrc(IP_BLOCK_SOURCE, grp(2), la, s1));
	say("IP_ADD_SOURCE_MEMBERSHIP 239.1.0.2 s1", msrc(IP_ADD_SOURCE_MEMBERSHIP, grp(2), la, s1));
	say("IP_ADD_SOURCE_MEMBERSHIP 239.1.0.2 s1 again",
	    msrc(IP_ADD_SOURCE_MEMBERSHIP, grp(2), la, s1));
	say("IP_ADD_SOURCE_MEMBERSHIP 239.1.0.2 s2", msrc(IP_ADD_SOURCE_MEMBERSHIP, grp(2), la, s2));
	say("IP_BLOCK_SOURCE 239.1.0.2 s1 (INCLUDE filter)", msrc(IP_BLOCK_SOURCE, grp(2), la, s1));
	say("IP_ADD_MEMBERSHIP 239.1.0.2 (joined by source)", mreq(IP_ADD_MEMBERSHIP, grp(2), la));
	say("IP_DROP_SOURCE_MEMBERSHIP 239.1.0.2 s1", msrc(IP_DROP_SOURCE_MEMBERSHIP, grp(2), la, s1));
	say("IP_DROP_SOURCE_MEMBERSHIP 239.1.0.2 s1 again",
	    msrc(IP_DROP_SOURCE_MEMBERSHIP, grp(2), la, s1));
	say("IP_DROP_SOURCE_MEMBERSHIP 239.1.0.2 s2 (the last)",
	    msrc(IP_DROP_SOURCE_MEMBERSHIP, grp(2), la, s2));
	say("IP_DROP_MEMBERSHIP 239.1.0.2 (left with its last source)",
	    mreq(IP_DROP_MEMBERSHIP, grp(2), la));
	say("IP_ADD_SOURCE_MEMBERSHIP bad length", setsockopt(api_fd, IPPROTO_IP,
		IP_ADD_SOURCE_MEMBERSHIP, &la, sizeof(la)));
	for (unsigned int i = 0; i < 11; i++) {
		snprintf(what, sizeof(what), "IP_ADD_SOURCE_MEMBERSHIP 239.1.0.3 source %u", i + 1);
		say(what, msrc(IP_ADD_SOURCE_MEMBERSHIP, grp(3), la, htonl(0xc6120100u + i)));
	}
	say("IP_DROP_MEMBERSHIP 239.1.0.3", mreq(IP_DROP_MEMBERSHIP, grp(3), la));
	for (unsigned int i = 10; i < 32; i++) {
		int r = mreq(IP_ADD_MEMBERSHIP, grp(i), la);

		if (r != 0 || i == 29 || i == 30) {
			snprintf(what, sizeof(what), "IP_ADD_MEMBERSHIP group %u", i - 9);
			say(what, r);
		}
	}
	for (unsigned int i = 10; i < 32; i++)
		mreq(IP_DROP_MEMBERSHIP, grp(i), la);
	say("MCAST_JOIN_GROUP 239.1.0.4 by index", gr(MCAST_JOIN_GROUP, grp(4), ifx, AF_INET));
	say("MCAST_JOIN_GROUP 239.1.0.4 again", gr(MCAST_JOIN_GROUP, grp(4), ifx, AF_INET));
	say("IP_ADD_MEMBERSHIP 239.1.0.4 by address (same interface)",
	    mreq(IP_ADD_MEMBERSHIP, grp(4), la));
	say("MCAST_JOIN_GROUP AF_INET6", gr(MCAST_JOIN_GROUP, grp(5), ifx, AF_INET6));
	say("MCAST_JOIN_GROUP index 9999", gr(MCAST_JOIN_GROUP, grp(5), 9999, AF_INET));
	say("MCAST_BLOCK_SOURCE 239.1.0.4 s1", gsr(MCAST_BLOCK_SOURCE, grp(4), ifx, s1, AF_INET));
	say("MCAST_UNBLOCK_SOURCE 239.1.0.4 s1", gsr(MCAST_UNBLOCK_SOURCE, grp(4), ifx, s1, AF_INET));
	say("MCAST_BLOCK_SOURCE family AF_INET6",
	    gsr(MCAST_BLOCK_SOURCE, grp(4), ifx, s1, AF_INET6));
	say("MCAST_LEAVE_GROUP 239.1.0.4", gr(MCAST_LEAVE_GROUP, grp(4), ifx, AF_INET));
	say("MCAST_JOIN_SOURCE_GROUP 239.1.0.6 s2",
	    gsr(MCAST_JOIN_SOURCE_GROUP, grp(6), ifx, s2, AF_INET));
	say("MCAST_LEAVE_SOURCE_GROUP 239.1.0.6 s2",
	    gsr(MCAST_LEAVE_SOURCE_GROUP, grp(6), ifx, s2, AF_INET));
	say("MCAST_LEAVE_GROUP 239.1.0.6 (gone with its source)",
	    gr(MCAST_LEAVE_GROUP, grp(6), ifx, AF_INET));
	{
		struct ip_mreqn mn = { .imr_multiaddr.s_addr = grp(7), .imr_ifindex = ifx };

		say("IP_ADD_MEMBERSHIP ip_mreqn by index",
		    setsockopt(api_fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mn, sizeof(mn)));
		say("IP_DROP_MEMBERSHIP ip_mreq by address (same interface)",
		    mreq(IP_DROP_MEMBERSHIP, grp(7), la));
	}
	/* sending options */
	a.s_addr = la;
	say("IP_MULTICAST_IF by address", setsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_IF, &a,
						     sizeof(a)));
	a.s_addr = 0;
	l = sizeof(a);
	getsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_IF, &a, &l);
	printf("%-52s %s\n", "getsockopt IP_MULTICAST_IF is that address",
	       a.s_addr == la && l == sizeof(a) ? "yes" : "no");
	a.s_addr = htonl(0xcb007101);
	say("IP_MULTICAST_IF 203.0.113.1", setsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_IF, &a,
						      sizeof(a)));
	v = 256;
	say("IP_MULTICAST_TTL 256", setsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_TTL, &v, sizeof(v)));
	v = -1;
	say("IP_MULTICAST_TTL -1", setsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_TTL, &v, sizeof(v)));
	l = sizeof(v);
	getsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_TTL, &v, &l);
	printf("%-52s %d\n", "getsockopt IP_MULTICAST_TTL", v);
	v = 2;
	say("IP_MULTICAST_ALL 2", setsockopt(api_fd, IPPROTO_IP, IP_MULTICAST_ALL, &v, sizeof(v)));
	v = 0;
	say("IP_TTL 0", setsockopt(api_fd, IPPROTO_IP, IP_TTL, &v, sizeof(v)));
	v = 0xb8;
	say("IP_TOS 0xb8", setsockopt(api_fd, IPPROTO_IP, IP_TOS, &v, sizeof(v)));
	close(api_fd);

	/* TCP: not for multicast */
	api_fd = socket(AF_INET, SOCK_STREAM, 0);
	say("TCP: IP_ADD_MEMBERSHIP", mreq(IP_ADD_MEMBERSHIP, grp(1), la));
	close(api_fd);
	printf("done\n");
	return 0;
}

/* ---- query: an IGMP query, as a router's --------------------------------------- */

static uint16_t
cksum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	if (n & 1)
		s += (uint32_t)b[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

static int
cmd_query(int argc, char **argv)
{
	uint8_t q[12 + 4 * MAX_SRC];
	uint8_t ra[4] = { 0x94, 0x04, 0, 0 };
	uint32_t group = 0, ifaddr = 0, src[MAX_SRC];
	unsigned int nsrc = 0;
	int opt, ver = 3, mrt = 10, fd;
	size_t len;
	uint16_t c;
	struct in_addr ia;
	struct sockaddr_in to = { .sin_family = AF_INET };

	while ((opt = getopt(argc, argv, "i:v:g:s:m:")) != -1) {
		switch (opt) {
		case 'i': ifaddr = addr_of(optarg); break;
		case 'v': ver = atoi(optarg); break;
		case 'g': group = addr_of(optarg); break;
		case 's': if (nsrc < MAX_SRC) src[nsrc++] = addr_of(optarg); break;
		case 'm': mrt = atoi(optarg); break;
		default: return 2;
		}
	}
	memset(q, 0, sizeof(q));
	q[0] = 0x11;
	q[1] = ver == 1 ? 0 : (uint8_t)mrt;  /* tenths of a second */
	memcpy(q + 4, &group, 4);
	len = 8;
	if (ver == 3) {
		uint16_t ns = htons((uint16_t)nsrc);

		q[8] = 2;     /* QRV */
		q[9] = 125;   /* QQIC: 125 s */
		memcpy(q + 10, &ns, 2);
		memcpy(q + 12, src, 4 * nsrc);
		len = 12 + 4 * nsrc;
	}
	c = cksum(q, len);
	memcpy(q + 2, &c, 2);
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_IGMP);
	if (fd < 0)
		die("raw socket");
	if (setsockopt(fd, IPPROTO_IP, IP_OPTIONS, ra, sizeof(ra)) != 0)
		die("IP_OPTIONS (router alert)");
	setint(fd, IPPROTO_IP, IP_MULTICAST_TTL, 1, "IP_MULTICAST_TTL");
	setint(fd, IPPROTO_IP, IP_MULTICAST_LOOP, 0, "IP_MULTICAST_LOOP");
	ia.s_addr = ifaddr;
	if (ifaddr && setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ia, sizeof(ia)) != 0)
		die("IP_MULTICAST_IF");
	/* a general query to all systems, a specific one to its group */
	to.sin_addr.s_addr = group ? group : htonl(0xe0000001);
	if (sendto(fd, q, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)len)
		die("sendto");
	printf("QUERY v%d sent (%zu bytes)\n", ver, len);
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mctool sub|pub|api|query [options] (see the source)\n");
		return 2;
	}
	if (strcmp(argv[1], "sub") == 0)
		return cmd_sub(argc - 1, argv + 1);
	if (strcmp(argv[1], "pub") == 0)
		return cmd_pub(argc - 1, argv + 1);
	if (strcmp(argv[1], "api") == 0)
		return cmd_api(argc - 1, argv + 1);
	if (strcmp(argv[1], "query") == 0)
		return cmd_query(argc - 1, argv + 1);
	fprintf(stderr, "mctool: unknown command '%s'\n", argv[1]);
	return 2;
}
