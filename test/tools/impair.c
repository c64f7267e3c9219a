/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * impair — a userspace network impairment relay: bridges two interfaces
 * through AF_PACKET raw sockets (no DPDK, no tc: for kernels without netem)
 * and applies, per direction, loss, reordering, duplication and a fixed
 * delay.
 *
 *   impair -a IF_A -b IF_B [--loss P] [--reorder P] [--dup P] [--delay MS]
 *          [--seed N] [--hold-ms MS] [--max-queue MB] [--drop-new N,...]
 *          [--late-new N,...] [--stall N,MS] [-v]
 *
 * Each value is "X" (both directions) or "X,Y" (a>b, then b>a); P are
 * percentages (0..100, fractions allowed), MS milliseconds. Per frame and
 * direction, in this order:
 *   loss      drop it with probability P;
 *   dup       queue it twice with probability P;
 *   reorder   with probability P, hold it back and send it right after the
 *             next frame of the same direction (or after --hold-ms, default
 *             20, when no next frame comes);
 *   delay     every frame leaves MS after it arrived (a timer queue; FIFO,
 *             so the delay alone never reorders).
 * The random numbers come from xorshift64* seeded with --seed (default 1),
 * one stream per direction: a run is reproducible given the same frames.
 *
 * --drop-new N,... (direction a>b) drops exactly the TCP segments (IPv4, or
 * IPv6 without extension headers) number N (counted from 0) among those
 * carrying new data: payload ending beyond
 * every sequence number seen before in that direction, so retransmissions
 * never count, however the sender spaces its segments. One TCP flow per
 * run. Each drop is printed: "impair: a>b dropped new segment N seq S len L"
 * and counted in lost; the copies of a dropped segment that come later
 * (retransmissions) are counted, and printed with the counters:
 * "impair: a>b hole seq S copies C first_after_us T". --late-new N,...
 * selects segments the same way but holds each for --hold-ms and then
 * sends it, behind whatever came meanwhile (reordering by a time, not by a
 * frame: "impair: a>b late new segment N seq S len L"; counted in
 * reordered).
 *
 * --stall N,MS (direction b>a): once N frames have come that way, from the
 * first ACK that leaves a>b data unacknowledged (below the highest a>b
 * data seen: A's sender has something in flight then, whatever the
 * timing), hold every b>a frame for MS ms (a blackout of the return path:
 * the frames are delivered afterwards, in order), once. Printed as
 * "impair: b>a stall of MS ms after N frames, at ack X below Y".
 *
 * Meant for a middle namespace: A <-veth-> [IF_A impair IF_B] <-veth-> B,
 * IF_A and IF_B up, without addresses. Both are put in promiscuous mode
 * (a packet membership, dropped when impair exits); frames the relay sends
 * are not read back (PACKET_IGNORE_OUTGOING, and the packet type is checked).
 *
 * Checksums: a frame that a local stack handed to a veth with a partial
 * checksum (CHECKSUM_PARTIAL: tx checksum offload on the sending veth end)
 * arrives with only the pseudo-header sum in its TCP/UDP checksum field;
 * AF_PACKET says so with TP_STATUS_CSUMNOTREADY in PACKET_AUXDATA. Relayed
 * as is, the far end would see a wrong checksum, so such IPv4 TCP/UDP
 * frames get their checksum computed here (counted in csum_fixed). Better
 * still, turn tx checksumming off on the sending ends (ethtool -K IF tx off).
 *
 * Memory is bounded: a direction's delay queue holds at most --max-queue MB
 * (default 64) of frames; beyond that frames are dropped and counted
 * (queue_full). Received frames larger than 65535 bytes (GSO) are dropped
 * and counted (too_big): turn GRO/TSO off on the veths.
 *
 * Counters are printed to stdout at exit (SIGTERM, SIGINT) and on SIGUSR1,
 * one line per direction:
 *   impair: a>b rx=.. tx=.. lost=.. dup=.. reordered=.. csum_fixed=..
 *           queue_full=.. too_big=.. send_err=.. sock_drops=.. queued=..
 * sock_drops is the kernel's count of frames the receiving socket could
 * not take (unplanned loss). "impair: ready" is printed once both sockets
 * are bound. Exit status: 0 after a signal, 1 on a setup or socket error,
 * 2 on bad arguments.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define FRAME_MAX 65536
#define BATCH 64

struct frame {
	struct frame *next;
	uint64_t due_ns;
	uint32_t len;
	uint8_t data[];
};

struct dir_cfg {
	double loss, reorder, dup; /* probabilities 0..1 */
	uint64_t delay_ns;
};

struct dir_stats {
	uint64_t rx, tx, lost, dup, reordered, csum_fixed, queue_full, too_big, send_err,
		sock_drops;
};

#define DROP_NEW_MAX 16

struct dir {
	const char *name;
	/* --drop-new: segments with new data seen, the highest end, targets */
	uint64_t new_segs;
	uint32_t max_end;
	bool have_end;
	unsigned int n_drop_new;
	uint64_t drop_new[DROP_NEW_MAX];
	unsigned int n_late_new;
	uint64_t late_new[DROP_NEW_MAX];
	/* --stall: once started (stall_check), nothing leaves before
	 * stall_until */
	uint64_t stall_after, stall_ns, stall_until_ns;
	const struct dir *other; /* the opposite direction */
	/* --late-new: frames held, each until its since + hold_ns */
	unsigned int n_late;
	struct frame *late[DROP_NEW_MAX];
	uint64_t late_since_ns[DROP_NEW_MAX];
	/* the segments dropped: their sequence number, when, copies since */
	unsigned int n_holes;
	struct {
		uint32_t seq;
		uint64_t at_ns, first_copy_ns;
		uint64_t copies;
	} holes[DROP_NEW_MAX];
	int in_fd, out_fd;
	struct dir_cfg cfg;
	uint64_t rng;
	struct frame *head, *tail; /* delay queue, due times non-decreasing */
	size_t queued_bytes, queued_frames;
	struct frame *held;	   /* reorder: waiting for the next frame */
	uint64_t held_since_ns;
	struct dir_stats st;
};

static volatile sig_atomic_t stop_flag, dump_flag;
static uint64_t hold_ns = 20ull * 1000 * 1000;
static size_t max_queue_bytes = 64u << 20;
static int verbose;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		dump_flag = 1;
	else
		stop_flag = 1;
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: uniform in [0, 1). */
static double
rnd(struct dir *d)
{
	uint64_t x = d->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	d->rng = x;
	return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / (double)(1ull << 53);
}

static bool
chance(struct dir *d, double p)
{
	return p > 0 && rnd(d) < p;
}

/* ---- checksums ---------------------------------------------------------- */

static uint32_t
sum16(const uint8_t *p, size_t n, uint32_t s)
{
	while (n > 1) {
		s += (uint32_t)p[0] << 8 | p[1];
		p += 2;
		n -= 2;
	}
	if (n)
		s += (uint32_t)p[0] << 8;
	return s;
}

static uint16_t
fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Complete the TCP/UDP checksum of an IPv4 frame (CHECKSUM_PARTIAL).
 * Returns true when it did. */
static bool
fix_l4_csum(uint8_t *f, uint32_t len)
{
	uint8_t *ip = f + 14, *l4;
	uint32_t ihl, tot, l4len, s;
	size_t off;
	uint16_t c;

	if (len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00 || (ip[0] >> 4) != 4)
		return false;
	ihl = (ip[0] & 0xf) * 4u;
	tot = (uint32_t)ip[2] << 8 | ip[3];
	if (ihl < 20 || tot < ihl || 14 + tot > len)
		return false;
	if ((ip[6] & 0x3f) != 0 || ip[7] != 0) /* a fragment: MF or offset */
		return false;
	l4 = ip + ihl;
	l4len = tot - ihl;
	if (ip[9] == 6 && l4len >= 20)
		off = 16;
	else if (ip[9] == 17 && l4len >= 8)
		off = 6;
	else
		return false;
	l4[off] = l4[off + 1] = 0;
	s = sum16(ip + 12, 8, 0); /* source and destination addresses */
	s += ip[9];
	s += l4len;
	s = sum16(l4, l4len, s);
	c = fold(s);
	if (ip[9] == 17 && c == 0)
		c = 0xffff;
	l4[off] = (uint8_t)(c >> 8);
	l4[off + 1] = (uint8_t)c;
	return true;
}

/* ---- queue ---------------------------------------------------------------- */

static void
enqueue(struct dir *d, struct frame *fr, uint64_t due)
{
	if (d->tail != NULL && due < d->tail->due_ns)
		due = d->tail->due_ns; /* keep the queue in order */
	fr->due_ns = due;
	fr->next = NULL;
	if (d->tail)
		d->tail->next = fr;
	else
		d->head = fr;
	d->tail = fr;
	d->queued_bytes += fr->len;
	d->queued_frames++;
}

static struct frame *
frame_new(struct dir *d, const uint8_t *data, uint32_t len)
{
	struct frame *fr;

	if (d->queued_bytes + len > max_queue_bytes) {
		d->st.queue_full++;
		return NULL;
	}
	fr = malloc(sizeof(*fr) + len);
	if (fr == NULL) {
		d->st.queue_full++;
		return NULL;
	}
	fr->len = len;
	memcpy(fr->data, data, len);
	return fr;
}

enum { NEW_PASS, NEW_DROP, NEW_LATE };

/* The fields of a TCP frame (either family) the relay looks at. */
struct tcp_view {
	uint32_t seq, plen, ack;
	uint8_t flags;
};

/* false: not a TCP frame (IPv4, or IPv6 with TCP right behind its fixed
 * header), or a malformed one */
static bool
tcp_view(const uint8_t *f, uint32_t len, struct tcp_view *v)
{
	const uint8_t *ip = f + 14, *tcp;
	uint32_t ihl, tot, doff;

	if (len >= 14 + 40 && f[12] == 0x86 && f[13] == 0xdd && (ip[0] >> 4) == 6 && ip[6] == 6) {
		ihl = 40;
		tot = 40 + ((uint32_t)ip[4] << 8 | ip[5]);
	} else if (len >= 14 + 20 && f[12] == 0x08 && f[13] == 0x00 && (ip[0] >> 4) == 4 &&
		   ip[9] == 6) {
		ihl = (ip[0] & 0xf) * 4u;
		tot = (uint32_t)ip[2] << 8 | ip[3];
	} else {
		return false;
	}
	if (ihl < 20 || 14 + tot > len || tot < ihl + 20)
		return false;
	tcp = ip + ihl;
	doff = (tcp[12] >> 4) * 4u;
	if (doff < 20 || ihl + doff > tot)
		return false;
	v->seq = (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 | (uint32_t)tcp[6] << 8 | tcp[7];
	v->ack = (uint32_t)tcp[8] << 24 | (uint32_t)tcp[9] << 16 | (uint32_t)tcp[10] << 8 | tcp[11];
	v->flags = tcp[13];
	v->plen = tot - ihl - doff;
	return true;
}

/* A TCP segment with data: the highest end seen that way (max_end) moves;
 * --drop-new, --late-new: what to do with it when it is new data whose
 * number is one of the targets. */
static int
pick_new(struct dir *d, const struct tcp_view *v, uint64_t now)
{
	uint32_t end = v->seq + v->plen;
	uint64_t idx;
	unsigned int i;

	if (v->plen == 0)
		return NEW_PASS;
	if (d->have_end && (int32_t)(end - d->max_end) <= 0) {
		/* nothing new: a retransmission, maybe of a hole */
		for (i = 0; i < d->n_holes; i++) {
			if (d->holes[i].seq == v->seq && d->holes[i].copies++ == 0)
				d->holes[i].first_copy_ns = now;
		}
		return NEW_PASS;
	}
	d->have_end = true;
	d->max_end = end;
	idx = d->new_segs++;
	for (i = 0; i < d->n_drop_new; i++) {
		if (d->drop_new[i] == idx) {
			printf("impair: %s dropped new segment %" PRIu64 " seq %u len %u\n", d->name, idx,
			       v->seq, v->plen);
			fflush(stdout);
			d->holes[d->n_holes].seq = v->seq;
			d->holes[d->n_holes].at_ns = now;
			d->holes[d->n_holes].copies = 0;
			d->n_holes++;
			return NEW_DROP;
		}
	}
	for (i = 0; i < d->n_late_new; i++) {
		if (d->late_new[i] == idx && d->n_late < DROP_NEW_MAX) {
			printf("impair: %s late new segment %" PRIu64 " seq %u len %u\n", d->name, idx,
			       v->seq, v->plen);
			fflush(stdout);
			return NEW_LATE;
		}
	}
	return NEW_PASS;
}

/* --stall: from the first frame, once stall_after came, that acknowledges
 * less than the other way's data (the sender there has data in flight
 * whose acknowledgements the stall now holds back) */
static void
stall_check(struct dir *d, const struct tcp_view *v, bool is_tcp, uint64_t now)
{
	if (d->stall_ns == 0 || d->stall_until_ns != 0 || d->st.rx < d->stall_after || !is_tcp ||
	    !(v->flags & 0x10) || !d->other->have_end || (int32_t)(d->other->max_end - v->ack) <= 0)
		return;
	d->stall_until_ns = now + d->stall_ns;
	printf("impair: %s stall of %" PRIu64 " ms after %" PRIu64 " frames, at ack %u below %u\n",
	       d->name, d->stall_ns / 1000000, d->st.rx, v->ack, d->other->max_end);
	fflush(stdout);
}

/* One received frame: loss, dup, reorder, delay. */
static void
impair_frame(struct dir *d, const uint8_t *data, uint32_t len, uint64_t now)
{
	uint64_t due = now + d->cfg.delay_ns;
	struct frame *fr, *fr2 = NULL;
	struct tcp_view v;
	bool is_tcp = tcp_view(data, len, &v);
	int pick = is_tcp ? pick_new(d, &v, now) : NEW_PASS;

	if (pick == NEW_LATE && (d->late[d->n_late] = frame_new(d, data, len)) != NULL) {
		d->st.reordered++;
		d->late_since_ns[d->n_late++] = now;
		return;
	}
	stall_check(d, &v, is_tcp, now);
	if (due < d->stall_until_ns)
		due = d->stall_until_ns;
	if (pick == NEW_DROP || chance(d, d->cfg.loss)) {
		d->st.lost++;
		return;
	}
	fr = frame_new(d, data, len);
	if (fr == NULL)
		return;
	if (chance(d, d->cfg.dup)) {
		fr2 = frame_new(d, data, len);
		if (fr2 != NULL)
			d->st.dup++;
	}
	if (d->held == NULL && chance(d, d->cfg.reorder)) {
		/* hold it (its copy too) until the next frame */
		d->st.reordered++;
		d->held = fr;
		d->held_since_ns = now;
		if (fr2 != NULL)
			enqueue(d, fr2, due);
		return;
	}
	enqueue(d, fr, due);
	if (fr2 != NULL)
		enqueue(d, fr2, due);
	if (d->held != NULL) {
		enqueue(d, d->held, due);
		d->held = NULL;
	}
}

/* A held frame nobody followed: send it anyway after hold_ns. */
static void
release_held(struct dir *d, uint64_t now)
{
	if (d->held != NULL && now - d->held_since_ns >= hold_ns) {
		enqueue(d, d->held, d->held_since_ns + d->cfg.delay_ns);
		d->held = NULL;
	}
	/* in the order they came: the oldest first */
	while (d->n_late > 0 && now - d->late_since_ns[0] >= hold_ns) {
		enqueue(d, d->late[0], now + d->cfg.delay_ns);
		d->n_late--;
		memmove(&d->late[0], &d->late[1], d->n_late * sizeof(d->late[0]));
		memmove(&d->late_since_ns[0], &d->late_since_ns[1], d->n_late * sizeof(d->late_since_ns[0]));
	}
}

/* ---- sockets ------------------------------------------------------------- */

static int
open_if(const char *ifname)
{
	struct sockaddr_ll sll = { 0 };
	struct packet_mreq mr = { 0 };
	int fd, one = 1, buf = 16 << 20;
	unsigned int idx = if_nametoindex(ifname);

	if (idx == 0) {
		fprintf(stderr, "impair: no interface '%s': %s\n", ifname, strerror(errno));
		return -1;
	}
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		fprintf(stderr, "impair: AF_PACKET socket: %s\n", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		/* PACKET_IGNORE_OUTGOING is Linux 4.20+; the packet type check
		 * below covers older kernels */
		if (errno != ENOPROTOOPT && errno != EINVAL) {
			fprintf(stderr, "impair: %s: setsockopt: %s\n", ifname, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)idx;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		fprintf(stderr, "impair: bind to %s: %s\n", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	mr.mr_ifindex = (int)idx;
	mr.mr_type = PACKET_MR_PROMISC;
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
		fprintf(stderr, "impair: %s: promiscuous mode: %s\n", ifname, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static uint8_t rxbuf[BATCH][FRAME_MAX];
static union {
	char buf[CMSG_SPACE(sizeof(struct tpacket_auxdata))];
	struct cmsghdr align;
} rxctl[BATCH];

/* Read what the input socket has (up to a few batches). Returns -1 on a
 * socket error. */
static int
drain(struct dir *d)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_ll from[BATCH];
	int round, n, i;

	for (round = 0; round < 8; round++) {
		uint64_t now;

		for (i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ rxbuf[i], FRAME_MAX };
			msgs[i].msg_hdr = (struct msghdr){
				.msg_name = &from[i],
				.msg_namelen = sizeof(from[i]),
				.msg_iov = &iov[i],
				.msg_iovlen = 1,
				.msg_control = rxctl[i].buf,
				.msg_controllen = sizeof(rxctl[i].buf),
			};
		}
		n = recvmmsg(d->in_fd, msgs, BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			fprintf(stderr, "impair: %s: recv: %s\n", d->name, strerror(errno));
			return -1;
		}
		now = now_ns();
		for (i = 0; i < n; i++) {
			struct msghdr *mh = &msgs[i].msg_hdr;
			uint32_t len = msgs[i].msg_len;
			struct cmsghdr *c;
			bool partial = false;

			if (from[i].sll_pkttype == PACKET_OUTGOING)
				continue;
			d->st.rx++;
			if (len > FRAME_MAX || (mh->msg_flags & MSG_TRUNC)) {
				d->st.too_big++;
				continue;
			}
			for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
				struct tpacket_auxdata aux;

				if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA)
					continue;
				memcpy(&aux, CMSG_DATA(c), sizeof(aux));
				partial = aux.tp_status & TP_STATUS_CSUMNOTREADY;
			}
			if (partial && fix_l4_csum(rxbuf[i], len))
				d->st.csum_fixed++;
			impair_frame(d, rxbuf[i], len, now);
		}
		if (n < BATCH)
			break;
	}
	return 0;
}

/* Send the frames that are due. Returns -1 on a socket error. */
static int
flush_due(struct dir *d, uint64_t now)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct frame *fr;
	int n, sent, i;

	for (;;) {
		n = 0;
		for (fr = d->head; fr != NULL && n < BATCH && fr->due_ns <= now; fr = fr->next) {
			iov[n] = (struct iovec){ fr->data, fr->len };
			msgs[n].msg_hdr = (struct msghdr){ .msg_iov = &iov[n], .msg_iovlen = 1 };
			n++;
		}
		if (n == 0)
			return 0;
		sent = sendmmsg(d->out_fd, msgs, (unsigned int)n, MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR)
				return 0; /* retry at the next turn */
			if (errno == EMSGSIZE || errno == EINVAL) {
				sent = 1; /* this frame cannot go out: drop it */
				d->st.send_err++;
				d->st.tx--;
			} else {
				fprintf(stderr, "impair: %s: send: %s\n", d->name, strerror(errno));
				return -1;
			}
		}
		for (i = 0; i < sent; i++) {
			fr = d->head;
			d->head = fr->next;
			if (d->head == NULL)
				d->tail = NULL;
			d->queued_bytes -= fr->len;
			d->queued_frames--;
			d->st.tx++;
			free(fr);
		}
		if (sent < n)
			return 0;
	}
}

static void
sock_drops(struct dir *d)
{
	struct tpacket_stats ts;
	socklen_t l = sizeof(ts);

	/* reading the statistics resets them: accumulate */
	if (getsockopt(d->in_fd, SOL_PACKET, PACKET_STATISTICS, &ts, &l) == 0)
		d->st.sock_drops += ts.tp_drops;
}

static void
print_stats(struct dir *d)
{
	unsigned int i;

	for (i = 0; i < d->n_holes; i++)
		printf("impair: %s hole seq %u copies %" PRIu64 " first_after_us %" PRIu64 "\n", d->name,
		       d->holes[i].seq, d->holes[i].copies,
		       d->holes[i].copies ? (d->holes[i].first_copy_ns - d->holes[i].at_ns) / 1000 : 0);
	sock_drops(d);
	printf("impair: %s rx=%" PRIu64 " tx=%" PRIu64 " lost=%" PRIu64 " dup=%" PRIu64
	       " reordered=%" PRIu64 " csum_fixed=%" PRIu64 " queue_full=%" PRIu64
	       " too_big=%" PRIu64 " send_err=%" PRIu64 " sock_drops=%" PRIu64 " queued=%zu\n",
	       d->name, d->st.rx, d->st.tx, d->st.lost, d->st.dup, d->st.reordered,
	       d->st.csum_fixed, d->st.queue_full, d->st.too_big, d->st.send_err,
	       d->st.sock_drops, d->queued_frames + (d->held != NULL) + d->n_late);
	fflush(stdout);
}

/* ---- command line ----------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: impair -a IF_A -b IF_B [--loss P] [--reorder P] [--dup P] [--delay MS]\n"
		"              [--seed N] [--hold-ms MS] [--max-queue MB] [--drop-new N,...]\n"
		"              [--late-new N,...] [--stall N,MS] [-v]\n"
		"Relays frames between IF_A and IF_B (AF_PACKET) with per-direction loss,\n"
		"reordering, duplication (percentages) and a fixed delay (ms). Each value is\n"
		"X (both directions) or X,Y (a>b, b>a). --drop-new drops the a>b TCP segments\n"
		"number N,... among those carrying new data, --late-new holds them for\n"
		"--hold-ms; --stall holds the b>a frames for MS ms from the first ACK, once\n"
		"N came that way, that leaves a>b data unacknowledged.\n"
		"Counters at exit and on SIGUSR1.\n");
}

/* "N,N,..." into v (at most DROP_NEW_MAX). */
static bool
parse_list(const char *s, uint64_t *v, unsigned int *n)
{
	char *end;

	while (*s != '\0') {
		if (*n == DROP_NEW_MAX)
			return false;
		v[(*n)++] = strtoull(s, &end, 10);
		if (end == s || (*end != ',' && *end != '\0'))
			return false;
		s = *end == ',' ? end + 1 : end;
	}
	return true;
}

/* "X" or "X,Y" into v[0], v[1]. */
static bool
parse_pair(const char *s, double lo, double hi, double v[2])
{
	char *end;

	v[0] = strtod(s, &end);
	if (end == s)
		return false;
	if (*end == ',') {
		const char *t = end + 1;

		v[1] = strtod(t, &end);
		if (end == t)
			return false;
	} else {
		v[1] = v[0];
	}
	return *end == '\0' && v[0] >= lo && v[0] <= hi && v[1] >= lo && v[1] <= hi;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "loss", required_argument, NULL, 'l' },
		{ "reorder", required_argument, NULL, 'r' },
		{ "dup", required_argument, NULL, 'u' },
		{ "delay", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 's' },
		{ "hold-ms", required_argument, NULL, 'H' },
		{ "max-queue", required_argument, NULL, 'Q' },
		{ "drop-new", required_argument, NULL, 'N' },
		{ "late-new", required_argument, NULL, 'L' },
		{ "stall", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *if_a = NULL, *if_b = NULL;
	double loss[2] = { 0, 0 }, reorder[2] = { 0, 0 }, dup[2] = { 0, 0 }, delay[2] = { 0, 0 };
	uint64_t seed = 1;
	struct dir dirs[2];
	uint64_t drops[DROP_NEW_MAX], lates[DROP_NEW_MAX], stall_after = 0, stall_ms = 0;
	unsigned int n_drops = 0, n_lates = 0;
	struct sigaction sa = { 0 };
	int opt, k, rc = 0;
	double v[2];

	while ((opt = getopt_long(argc, argv, "a:b:vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			if_a = optarg;
			break;
		case 'b':
			if_b = optarg;
			break;
		case 'l':
		case 'r':
		case 'u':
			if (!parse_pair(optarg, 0, 100, opt == 'l' ? loss : opt == 'r' ? reorder : dup)) {
				fprintf(stderr, "impair: bad percentage '%s' (0..100, or X,Y)\n", optarg);
				return 2;
			}
			break;
		case 'd':
			if (!parse_pair(optarg, 0, 10000, delay)) {
				fprintf(stderr, "impair: bad delay '%s' (0..10000 ms, or X,Y)\n", optarg);
				return 2;
			}
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'H':
			if (!parse_pair(optarg, 0, 10000, v)) {
				fprintf(stderr, "impair: bad --hold-ms '%s'\n", optarg);
				return 2;
			}
			hold_ns = (uint64_t)(v[0] * 1e6);
			break;
		case 'Q':
			if (!parse_pair(optarg, 1, 4096, v)) {
				fprintf(stderr, "impair: bad --max-queue '%s' (1..4096 MB)\n", optarg);
				return 2;
			}
			max_queue_bytes = (size_t)v[0] << 20;
			break;
		case 'N':
		case 'L':
			if (!parse_list(optarg, opt == 'N' ? drops : lates, opt == 'N' ? &n_drops : &n_lates)) {
				fprintf(stderr, "impair: bad --%s-new '%s' (N,N,..., at most %d)\n",
					opt == 'N' ? "drop" : "late", optarg, DROP_NEW_MAX);
				return 2;
			}
			break;
		case 'S':
			if (!parse_pair(optarg, 0, 1e12, v) || v[1] < 1 || v[1] > 100000) {
				fprintf(stderr, "impair: bad --stall '%s' (N,MS)\n", optarg);
				return 2;
			}
			stall_after = (uint64_t)v[0];
			stall_ms = (uint64_t)v[1];
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (if_a == NULL || if_b == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}

	memset(dirs, 0, sizeof(dirs));
	memcpy(dirs[0].drop_new, drops, sizeof(drops));
	dirs[0].n_drop_new = n_drops;
	memcpy(dirs[0].late_new, lates, sizeof(lates));
	dirs[0].n_late_new = n_lates;
	dirs[1].stall_after = stall_after;
	dirs[1].stall_ns = stall_ms * 1000000ull;
	dirs[0].name = "a>b";
	dirs[1].name = "b>a";
	dirs[0].other = &dirs[1];
	dirs[1].other = &dirs[0];
	dirs[0].in_fd = dirs[1].out_fd = open_if(if_a);
	if (dirs[0].in_fd < 0)
		return 1;
	dirs[1].in_fd = dirs[0].out_fd = open_if(if_b);
	if (dirs[1].in_fd < 0)
		return 1;
	for (k = 0; k < 2; k++) {
		struct dir *d = &dirs[k];

		d->cfg.loss = loss[k] / 100;
		d->cfg.reorder = reorder[k] / 100;
		d->cfg.dup = dup[k] / 100;
		d->cfg.delay_ns = (uint64_t)(delay[k] * 1e6);
		/* splitmix64 of the seed and the direction: never 0 */
		d->rng = (seed + 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1));
		d->rng = (d->rng ^ (d->rng >> 30)) * 0xBF58476D1CE4E5B9ull;
		d->rng = (d->rng ^ (d->rng >> 27)) * 0x94D049BB133111EBull;
		d->rng ^= d->rng >> 31;
		if (d->rng == 0)
			d->rng = 1;
	}

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	printf("impair: ready: %s <-> %s; a>b loss %g%% reorder %g%% dup %g%% delay %g ms;"
	       " b>a loss %g%% reorder %g%% dup %g%% delay %g ms; seed %" PRIu64 "\n",
	       if_a, if_b, loss[0], reorder[0], dup[0], delay[0], loss[1], reorder[1], dup[1],
	       delay[1], seed);
	fflush(stdout);

	while (!stop_flag) {
		struct pollfd pfd[2] = {
			{ .fd = dirs[0].in_fd, .events = POLLIN },
			{ .fd = dirs[1].in_fd, .events = POLLIN },
		};
		uint64_t now = now_ns(), wake = now + 100000000ull; /* 100 ms at most */
		struct timespec ts;

		for (k = 0; k < 2; k++) {
			struct dir *d = &dirs[k];

			if (d->head != NULL && d->head->due_ns < wake)
				wake = d->head->due_ns;
			if (d->held != NULL && d->held_since_ns + hold_ns < wake)
				wake = d->held_since_ns + hold_ns;
			if (d->n_late > 0 && d->late_since_ns[0] + hold_ns < wake)
				wake = d->late_since_ns[0] + hold_ns;
			/* unsent frames (EAGAIN): try again soon */
			if (d->head != NULL && d->head->due_ns <= now)
				wake = now + 200000;
		}
		wake = wake > now ? wake - now : 0;
		ts.tv_sec = (time_t)(wake / 1000000000ull);
		ts.tv_nsec = (long)(wake % 1000000000ull);
		if (ppoll(pfd, 2, &ts, NULL) < 0 && errno != EINTR) {
			fprintf(stderr, "impair: poll: %s\n", strerror(errno));
			rc = 1;
			break;
		}
		if (dump_flag) {
			dump_flag = 0;
			print_stats(&dirs[0]);
			print_stats(&dirs[1]);
		}
		for (k = 0; k < 2; k++) {
			if ((pfd[k].revents & POLLIN) && drain(&dirs[k]) < 0)
				rc = 1;
			if (pfd[k].revents & (POLLERR | POLLNVAL)) {
				int err = 0;
				socklen_t l = sizeof(err);

				getsockopt(pfd[k].fd, SOL_SOCKET, SO_ERROR, &err, &l);
				if (err == ENETDOWN || err == ENXIO) {
					fprintf(stderr, "impair: %s: %s\n", dirs[k].name, strerror(err));
					rc = 1;
				}
			}
		}
		now = now_ns();
		for (k = 0; k < 2; k++) {
			release_held(&dirs[k], now);
			if (flush_due(&dirs[k], now) < 0)
				rc = 1;
		}
		if (rc != 0)
			break;
	}
	for (k = 0; k < 2; k++)
		print_stats(&dirs[k]);
	if (verbose)
		fprintf(stderr, "impair: stopped\n");
	return rc;
}
