/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_rec.c — loss recovery and RTT measurement for lwIP 2.1.3's TCP sender.
 *
 * lwIP 2.1.3 ignores SACK, measures RTT in 50 ms ticks and recovers from more
 * than one loss per window only by timeout (go-back-N). This file replaces
 * that part of the sender; lwIP keeps its queues (unsent, unacked), its
 * segment building and its RTO clock (rtime/rto), and calls the hooks below
 * (transform.py's RECOVERY_EDITS):
 *
 *  - SACK scoreboard (RFC 2018): received blocks mark segments SACKED;
 *    lost_out / sacked_out / retrans_out in bytes give the RFC 6675 pipe.
 *    A cache of the blocks already applied and a walk hint keep the work
 *    per ACK proportional to what is new.
 *  - Loss detection: RACK (RFC 8985): a segment is lost when one sent after
 *    it was delivered and it is older than RACK.rtt + reo_wnd (reo_wnd is 0
 *    in recovery or with 3 segments SACKed until reordering is seen, then
 *    min_rtt/4, grown on D-SACK); a timer when it is not old enough yet. For
 *    peers without SACK: 3 duplicate ACKs, then NewReno partial ACKs.
 *  - Fast recovery: every hole deemed lost is retransmitted in place (the
 *    unacked list is never moved back to unsent), new data after them, as
 *    PRR (RFC 6937) sizes cwnd on each ACK; the pipe gates both.
 *  - Tail loss probe (RFC 8985 section 7) after 2 SRTT without an ACK.
 *  - Retransmission timeout: everything not SACKed deemed lost, cwnd one
 *    segment, F-RTO (RFC 5682, SACK-enhanced) to spot spurious timeouts.
 *  - Undo: a retransmission is proven unnecessary by a D-SACK (RFC 2883,
 *    3708) or by the echoed timestamp (Eifel, RFC 3522: the ACK echoes the
 *    original's TSval); when every retransmission of an episode was, the
 *    cwnd reduction is undone. The same when a recovery ends without one.
 *  - RTT in microseconds from the connection's own send times (Karn: never
 *    from retransmitted segments), RFC 6298 RTO with Linux's 200 ms floor.
 *    (TSval stays a millisecond clock: a microsecond clock wraps in 71 min
 *    and a peer's PAWS would drop our segments after a long idle period.)
 *  - Delivery rate (draft-cheng-iccrg-delivery-rate-estimation) for
 *    TCP_INFO, cwnd validation (grow cwnd only when it is used), pacing of
 *    new data at 2x (slow start) / 1.2x cwnd/SRTT with a 1 ms burst, as
 *    Linux paces without fq.
 *
 * Timers finer than lwIP's (RACK reordering, TLP, pacing) live in a per
 * instance min-heap of pcbs: the worker polls it each loop iteration and
 * caps its sleep by it; a lwIP timeout (ms) backs it up for code that only
 * runs lwIP's timers (the unit test).
 *
 * Congestion control modules (CUBIC, NewReno) are in tcp_cc.c.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lwip/opt.h"
#include "lwip/mem.h"
#include "lwip/sys.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"

#include "dpsock/dpsock.h"
#include "dpsock_tcp_rec.h"
#include "dpsock_lwip_tso.h"

_Thread_local struct dpsock_tcp_rx_opts dpsock_tcp_rx_opts;
static _Thread_local struct dpsock_tcp_rec_stats rec_stats_own;
static _Thread_local struct dpsock_tcp_rec_stats *rec_stats_bound;

static inline struct dpsock_tcp_rec_stats *
rec_stats(void)
{
	return rec_stats_bound != NULL ? rec_stats_bound : &rec_stats_own;
}

void
dpsock_tcp_rec_stats_bind(struct dpsock_tcp_rec_stats *st)
{
	rec_stats_bound = st;
}

struct dpsock_tcp_rec_stats *
dpsock_tcp_rec_stats_get(void)
{
	return rec_stats();
}

/* this instance's defaults for new connections */
static _Thread_local uint8_t cc_default;
static _Thread_local uint8_t pacing_on;

#define STAT_ADD(n, v) dpsock_stat_add(&rec_stats()->n, (v))
#define STAT(n) STAT_ADD(n, 1)

#define DUPTHRESH 3u
#define RTO_MIN_US ((uint64_t)LWIP_TCP_RTO_MIN * 1000)
#define RTO_MAX_US (120ull * 1000000)
#define TICK_US ((uint64_t)TCP_SLOW_INTERVAL * 1000)
#define MIN_RTT_WIN_US (300ull * 1000000) /* min RTT window, as Linux */
/* floor of the probe timeout: 2 jiffies of a HZ=1000 Linux; a peer whose
 * ACKs a loaded CPU delays by a millisecond or two otherwise draws probes
 * that its D-SACKs then call unnecessary */
#define TLP_MIN_US 2000u
#define WC_DELACK_US 200000u              /* worst-case delayed ACK (RFC 8985) */
#define PACE_BURST_US 1000u               /* pacing lets this much go at once */
#define REO_STEPS_MAX 255u
#define REO_PERSIST 16u
#define SSTHRESH_INF 0x7fffffffu

enum { TIMER_NONE, TIMER_REO, TIMER_TLP };

/* Microseconds from the TSC when the worker gave its frequency (a
 * clock_gettime per segment and per ACK was 3 % of a bulk sender's
 * profile), else CLOCK_MONOTONIC. Only differences of it are used. */
static _Thread_local uint64_t tsc_us_mult; /* 2^32 us per TSC tick */

void
dpsock_tcp_rec_clock_tsc(uint64_t tsc_hz)
{
#if defined(__x86_64__)
	tsc_us_mult = tsc_hz ? ((uint64_t)1000000 << 32) / tsc_hz : 0;
#else
	(void)tsc_hz;
#endif
}

static inline uint64_t
now_us(void)
{
	struct timespec ts;

#if defined(__x86_64__)
	if (tsc_us_mult != 0)
		return (uint64_t)(((unsigned __int128)__builtin_ia32_rdtsc() * tsc_us_mult) >> 32);
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint32_t seg_seq(const struct tcp_seg *s) { return lwip_ntohl(s->tcphdr->seqno); }
static inline uint32_t seg_len(const struct tcp_seg *s) { return TCP_TCPLEN(s); }
static inline uint32_t seg_end(const struct tcp_seg *s) { return seg_seq(s) + seg_len(s); }
static inline uint32_t umin32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static inline uint32_t umax32(uint32_t a, uint32_t b) { return a > b ? a : b; }
/* a (sent at ta, ending at ea) was sent after b (RACK_sent_after) */
static inline bool
sent_after(uint64_t ta, uint32_t ea, uint64_t tb, uint32_t eb)
{
	return ta > tb || (ta == tb && TCP_SEQ_GT(ea, eb));
}

static inline const struct dpsock_cc_ops *
cc_of(const struct tcp_pcb *pcb)
{
	return dpsock_cc_table[pcb->rec.cc];
}

/* Bytes in flight (RFC 6675 pipe) with snd_una = una. Without SACK, each
 * duplicate ACK stands for one segment that left the network. */
static uint32_t
in_flight(const struct tcp_pcb *pcb, uint32_t una)
{
	const struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t out = pcb->snd_nxt - una, left = r->sacked_out + r->lost_out;

	if (!(pcb->flags & TF_SACK) && pcb->dupacks)
		left += umin32((uint32_t)pcb->dupacks * pcb->mss, out > pcb->mss ? out - pcb->mss : 0);
	return out + r->retrans_out > left ? out + r->retrans_out - left : 0;
}

/* Change a segment's scoreboard flags; the byte counters follow. Every
 * change of SACKED, LOST or RETRANS_OUT goes through here. */
static void
seg_flags(struct tcp_pcb *pcb, struct tcp_seg *seg, uint8_t nf)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint8_t of = seg->rec.flags, pending = DPSOCK_SEG_LOST | DPSOCK_SEG_RETRANS_OUT;
	uint32_t len = seg_len(seg);

#define SEG_ACCT(was, is, ctr)                                                 \
	do {                                                                   \
		if ((was) && !(is))                                            \
			r->ctr -= len;                                         \
		else if (!(was) && (is))                                       \
			r->ctr += len;                                         \
	} while (0)
	SEG_ACCT(of & DPSOCK_SEG_SACKED, nf & DPSOCK_SEG_SACKED, sacked_out);
	SEG_ACCT(of & DPSOCK_SEG_LOST, nf & DPSOCK_SEG_LOST, lost_out);
	SEG_ACCT(of & DPSOCK_SEG_RETRANS_OUT, nf & DPSOCK_SEG_RETRANS_OUT, retrans_out);
	SEG_ACCT((of & pending) == DPSOCK_SEG_LOST, (nf & pending) == DPSOCK_SEG_LOST, lost_pending);
#undef SEG_ACCT
	seg->rec.flags = nf;
}

/* ---------------------------------------------------------------------- */
/* timers: a min-heap of this instance's pcbs by their earliest deadline */

static _Thread_local struct tcp_pcb **heap;
static _Thread_local uint32_t heap_n, heap_cap;
static _Thread_local uint32_t sys_due;      /* sys_now() of the pending lwIP timeout; 0 none */
static _Thread_local uint64_t sys_due_us;   /* the heap deadline it was set for */

static inline uint64_t
deadline(const struct tcp_pcb *pcb)
{
	uint64_t a = pcb->rec.timer_us, b = pcb->rec.pace_us;

	return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

static void
heap_set(uint32_t i, struct tcp_pcb *pcb)
{
	heap[i] = pcb;
	pcb->rec.heap_idx = i + 1;
}

static void
heap_sift(uint32_t i)
{
	struct tcp_pcb *pcb = heap[i];
	uint64_t d = deadline(pcb);

	while (i > 0 && deadline(heap[(i - 1) / 2]) > d) {
		heap_set(i, heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= heap_n)
			break;
		if (c + 1 < heap_n && deadline(heap[c + 1]) < deadline(heap[c]))
			c++;
		if (deadline(heap[c]) >= d)
			break;
		heap_set(i, heap[c]);
		i = c;
	}
	heap_set(i, pcb);
}

static void sys_resched(void);
static void sys_timer(void *arg);

/* Put pcb where its deadline says (in, out or moved). */
static void
timer_update(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t i;

	if (deadline(pcb) == 0) {
		if (r->heap_idx == 0)
			return;
		i = r->heap_idx - 1;
		r->heap_idx = 0;
		if (--heap_n > i) {
			heap_set(i, heap[heap_n]);
			heap_sift(i);
		}
		if (heap_n == 0) {
			mem_free(heap);
			heap = NULL;
			heap_cap = 0;
			if (sys_due != 0) {
				/* nothing left to time: no wake-up */
				sys_untimeout(sys_timer, NULL);
				sys_due = 0;
			}
		}
		return;
	}
	if (r->heap_idx == 0) {
		if (heap_n == heap_cap) {
			uint32_t cap = heap_cap ? heap_cap * 2 : 16;
			struct tcp_pcb **h = mem_malloc((mem_size_t)(cap * sizeof(*h)));

			if (h == NULL) {
				/* no room: the RTO still covers this pcb */
				r->timer_us = r->pace_us = 0;
				return;
			}
			if (heap != NULL) {
				memcpy(h, heap, heap_n * sizeof(*h));
				mem_free(heap);
			}
			heap = h;
			heap_cap = cap;
		}
		heap_set(heap_n++, pcb);
	}
	heap_sift(r->heap_idx - 1);
	if (r->heap_idx == 1)
		sys_resched();
}

static void
timer_arm(struct tcp_pcb *pcb, uint64_t at, uint8_t kind)
{
	pcb->rec.timer_us = at;
	pcb->rec.timer_kind = kind;
	timer_update(pcb);
}

static void
timer_stop(struct tcp_pcb *pcb)
{
	if (pcb->rec.timer_us == 0)
		return;
	pcb->rec.timer_us = 0;
	pcb->rec.timer_kind = TIMER_NONE;
	timer_update(pcb);
}

/* lwIP's own timeouts (ms) wake a sleeping worker and run the heap where
 * nothing else polls it. */
static void
sys_timer(void *arg)
{
	LWIP_UNUSED_ARG(arg);
	sys_due = 0;
	sys_due_us = 0;
	dpsock_tcp_rec_poll();
	sys_resched();
}

static void
sys_resched(void)
{
	uint64_t d, now;
	uint32_t ms, due;

	if (heap_n == 0)
		return;
	d = deadline(heap[0]);
	/* a pending timeout for this deadline or an earlier one: nothing to
	 * do (the common case: a probe pushed later by every ACK) */
	if (sys_due != 0 && sys_due_us <= d)
		return;
	now = now_us();
	ms = d > now ? (uint32_t)((d - now + 999) / 1000) : 0;
	due = sys_now() + ms;
	if (sys_due != 0 && (int32_t)(sys_due - due) <= 0)
		return;
	if (sys_due != 0)
		sys_untimeout(sys_timer, NULL);
	sys_timeout(ms, sys_timer, NULL);
	sys_due = due ? due : 1;
	sys_due_us = d;
}

uint64_t
dpsock_tcp_rec_sleep_us(void)
{
	uint64_t d, now;

	if (heap_n == 0)
		return UINT64_MAX;
	d = deadline(heap[0]);
	now = now_us();
	return d > now ? d - now : 0;
}

/* ---------------------------------------------------------------------- */
/* RTT and RTO */

static void
rto_set(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t ticks = (r->rto_us + TICK_US - 1) / TICK_US + 1;

	ticks <<= r->backoff;
	pcb->rto = (s16_t)(ticks > 0x7fff ? 0x7fff : ticks);
}

/* One RTT sample (RFC 6298, in microseconds). */
static void
rtt_sample(struct tcp_pcb *pcb, uint32_t rtt, uint64_t now)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t rto;

	if (rtt == 0)
		rtt = 1;
	if (r->srtt_us == 0) {
		r->srtt_us = rtt;
		r->rttvar_us = rtt / 2;
	} else {
		uint32_t d = rtt > r->srtt_us ? rtt - r->srtt_us : r->srtt_us - rtt;

		r->rttvar_us = r->rttvar_us - r->rttvar_us / 4 + d / 4;
		r->srtt_us = r->srtt_us - r->srtt_us / 8 + rtt / 8;
	}
	if (r->min_rtt_us == 0 || rtt <= r->min_rtt_us || now - r->min_rtt_stamp_us > MIN_RTT_WIN_US) {
		r->min_rtt_us = rtt;
		r->min_rtt_stamp_us = now;
	}
	rto = r->srtt_us + 4ull * r->rttvar_us;
	if (rto < RTO_MIN_US)
		rto = RTO_MIN_US;
	if (rto > RTO_MAX_US)
		rto = RTO_MAX_US;
	r->rto_us = (uint32_t)rto;
	rto_set(pcb);
}

/* ---------------------------------------------------------------------- */
/* scoreboard */

struct ack_ctx {
	uint64_t now;
	uint32_t ackno, prior_una;
	uint32_t delivered;      /* bytes (S)ACKed for the first time by this ACK */
	uint32_t newly_sacked;
	uint64_t rtt_xmit;       /* oldest never-retransmitted segment ACKed */
	uint64_t sack_rtt_xmit;  /* oldest never-retransmitted segment SACKed */
	uint64_t ca_rtt_xmit;    /* newest never-retransmitted segment (S)ACKed */
	bool una_advanced, dupack, dsack, dsack_tlp, orig_delivered, lost_new;
};

static void
mark_lost(struct tcp_pcb *pcb, struct tcp_seg *seg)
{
	uint8_t f = seg->rec.flags;

	if ((f & DPSOCK_SEG_SACKED) || (f & (DPSOCK_SEG_LOST | DPSOCK_SEG_RETRANS_OUT)) == DPSOCK_SEG_LOST)
		return;
	/* lost, or its retransmission was lost too: (re)send it */
	seg_flags(pcb, seg, (uint8_t)((f | DPSOCK_SEG_LOST) & ~DPSOCK_SEG_RETRANS_OUT));
}

/* RACK step 2 (RFC 8985 6.2) for a segment just (S)ACKed. */
static void
rack_advance(struct tcp_pcb *pcb, const struct tcp_seg *seg, struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t xmit = seg->rec.xmit_us;

	if (seg->rec.flags & DPSOCK_SEG_EVER_RETRANS) {
		/* the ACK may be for the original: the echoed timestamp is older
		 * than the retransmission, or it came back faster than any RTT */
		if (dpsock_tcp_rx_opts.ts && (int32_t)(dpsock_tcp_rx_opts.tsecr - seg->rec.tsval) < 0)
			return;
		if (a->now - xmit < r->min_rtt_us)
			return;
	}
	if (!r->rack_valid || sent_after(xmit, seg_end(seg), r->rack_xmit_us, r->rack_end_seq)) {
		r->rack_rtt_us = (uint32_t)(a->now - xmit);
		r->rack_xmit_us = xmit;
		r->rack_end_seq = seg_end(seg);
		r->rack_valid = 1;
	}
}

/* A segment delivered for the first time (SACKed or cumulatively ACKed). */
static void
seg_delivered(struct tcp_pcb *pcb, struct tcp_seg *seg, struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t len = seg_len(seg), end = seg_end(seg);
	uint8_t f = seg->rec.flags;

	a->delivered += len;
	r->delivered += len;
	r->delivered_us = a->now;
	/* delivery rate: the sample follows the most recently sent segment */
	if (!r->rs_valid || seg->rec.delivered >= r->rs_prior_delivered) {
		r->rs_valid = 1;
		r->rs_prior_delivered = seg->rec.delivered;
		r->rs_app_limited = (f & DPSOCK_SEG_APP_LIMITED) != 0;
		r->rs_send_elapsed = (uint32_t)(seg->rec.xmit_us - seg->rec.first_tx_us);
		r->rs_ack_elapsed = (uint32_t)(a->now - seg->rec.delivered_us);
		r->first_tx_us = seg->rec.xmit_us;
	}
	rack_advance(pcb, seg, a);
	if (!(f & DPSOCK_SEG_EVER_RETRANS)) {
		if (TCP_SEQ_LT(end, r->fack)) {
			/* delivered below a later one and never sent again */
			if (!r->reord_seen)
				r->reord_events++;
			r->reord_seen = 1;
			STAT(tcp_reorder_seen);
		}
		if (a->ca_rtt_xmit < seg->rec.xmit_us)
			a->ca_rtt_xmit = seg->rec.xmit_us;
		if (r->ca_state != DPSOCK_CA_LOSS || TCP_SEQ_LEQ(end, r->high_seq))
			a->orig_delivered = true;
	}
	if (TCP_SEQ_GT(end, r->fack))
		r->fack = end;
}

static void
seg_sacked(struct tcp_pcb *pcb, struct tcp_seg *seg, struct ack_ctx *a)
{
	uint8_t f = seg->rec.flags;

	seg_flags(pcb, seg, (uint8_t)((f | DPSOCK_SEG_SACKED) & ~(DPSOCK_SEG_LOST | DPSOCK_SEG_RETRANS_OUT)));
	a->newly_sacked += seg_len(seg);
	if (!(f & DPSOCK_SEG_EVER_RETRANS) && (a->sack_rtt_xmit == 0 || seg->rec.xmit_us < a->sack_rtt_xmit))
		a->sack_rtt_xmit = seg->rec.xmit_us;
	seg_delivered(pcb, seg, a);
}

/* Cut seg (a sent super-segment) off data bytes in (how: exactly there,
 * or at a pbuf boundary, dpsock_lwip_tso.h): both pieces keep its
 * scoreboard entry (the counters are in bytes: unchanged). */
static bool
seg_cut(struct tcp_pcb *pcb, struct tcp_seg *seg, uint32_t off, int how)
{
	if (dpsock_tcp_seg_cut(pcb, seg, off, how) == 0)
		return false;
	seg->next->rec = seg->rec;
	STAT(tcp_sack_cuts);
	return true;
}

/* The ACK ends inside a sent super-segment while holes are being repaired:
 * cut off its acknowledged front (lwIP frees a segment only when all of it
 * is acknowledged), lest a retransmission of the rest resend it. */
static void
ack_cut(struct tcp_pcb *pcb, uint32_t ackno)
{
	struct tcp_seg *seg;

	for (seg = pcb->unacked; seg != NULL && TCP_SEQ_LEQ(seg_end(seg), ackno); seg = seg->next)
		;
	if (seg != NULL && TCP_SEQ_LT(seg_seq(seg), ackno) && !(seg->rec.flags & DPSOCK_SEG_SACKED))
		seg_cut(pcb, seg, ackno - seg_seq(seg), DPSOCK_SEG_CUT_EXACT);
}

/* Mark the segments that overlap [left, right) and lie wholly inside the
 * block [bl, br) SACKed (left, right: the part of the block not applied
 * before). A super-segment the block covers in part is cut at the block's
 * edges first (at pbuf boundaries, where the NIC cut it on the wire), so
 * that only what is missing can be deemed lost and resent. */
static void
sack_range(struct tcp_pcb *pcb, uint32_t left, uint32_t right, uint32_t bl, uint32_t br,
	   struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	struct tcp_seg *seg = pcb->unacked, *last = NULL;

	if (r->hint != NULL && TCP_SEQ_LEQ(seg_seq(r->hint), left))
		seg = r->hint;
	for (; seg != NULL; seg = seg->next) {
		uint32_t seq = seg_seq(seg);

		if (TCP_SEQ_GEQ(seq, right))
			break;
		last = seg;
		if (TCP_SEQ_LEQ(seq + seg_len(seg), left) || (seg->rec.flags & DPSOCK_SEG_SACKED))
			continue;
		/* the block starts inside: its part is the next piece */
		if (TCP_SEQ_LT(seq, bl) && seg_cut(pcb, seg, bl - seq, DPSOCK_SEG_CUT_EXACT))
			continue;
		if (TCP_SEQ_GT(seq + seg_len(seg), br) && TCP_SEQ_LT(seq, br))
			seg_cut(pcb, seg, br - seq, DPSOCK_SEG_CUT_EXACT);
		if (TCP_SEQ_GEQ(seq, bl) && TCP_SEQ_LEQ(seq + seg_len(seg), br))
			seg_sacked(pcb, seg, a);
	}
	if (last != NULL)
		r->hint = last;
}

/* Remember a retransmission of the current undo episode. */
static void
rexmit_log_add(struct tcp_pcb *pcb, uint32_t seq, uint32_t end)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	unsigned int i = r->rexmit_log_next++ % DPSOCK_REXMIT_LOG;

	r->rexmit_log[i][0] = seq;
	r->rexmit_log[i][1] = end;
}

/* Take out the logged retransmissions inside [left, right); how many. */
static uint32_t
rexmit_log_take(struct tcp_pcb *pcb, uint32_t left, uint32_t right)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t n = 0;
	unsigned int i;

	for (i = 0; i < DPSOCK_REXMIT_LOG; i++) {
		uint32_t s = r->rexmit_log[i][0], e = r->rexmit_log[i][1];

		if (s != e && TCP_SEQ_GEQ(s, left) && TCP_SEQ_LEQ(e, right)) {
			r->rexmit_log[i][0] = r->rexmit_log[i][1] = 0;
			n++;
		}
	}
	return n;
}

/* A D-SACK for [left, right): the peer got it twice. */
static void
dsack(struct tcp_pcb *pcb, uint32_t left, uint32_t right, struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t segs = 0;

	STAT(tcp_dsacks);
	r->dsack_dups++;
	a->dsack = true;
	r->dsack_this_ack = 1;
	if (r->tlp_valid && r->tlp_retrans && right == r->tlp_high_seq)
		a->dsack_tlp = true;
	if (!r->undo_valid)
		return;
	/* the episode's retransmissions this D-SACK covers (Linux counts the
	 * segments of any D-SACK above undo_marker, network duplicates too) */
	segs = rexmit_log_take(pcb, left, right);
	if (segs > 0 && r->undo_retrans > 0) {
		segs = umin32(segs, (uint32_t)r->undo_retrans);
		r->undo_retrans -= (int32_t)segs;
		STAT_ADD(tcp_spurious_rtx, segs);
	}
}

/* Apply the SACK blocks of the ACK being processed. */
static void
sack_process(struct tcp_pcb *pcb, struct ack_ctx *a)
{
	struct dpsock_tcp_rx_opts *o = &dpsock_tcp_rx_opts;
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t blk[DPSOCK_TCP_SACK_RX_MAX][2], cache[DPSOCK_TCP_SACK_RX_MAX][2];
	unsigned int n = 0, i, j, nc = r->n_sack_cache;

	STAT_ADD(tcp_sack_blocks, o->n_sack);
	for (i = 0; i < o->n_sack; i++) {
		uint32_t left = o->sack[i][0], right = o->sack[i][1];

		if (i == 0 && (TCP_SEQ_LEQ(right, a->ackno) ||
			       (o->n_sack > 1 && TCP_SEQ_GEQ(left, o->sack[1][0]) &&
				TCP_SEQ_LEQ(right, o->sack[1][1])))) {
			if (TCP_SEQ_LT(left, right))
				dsack(pcb, left, right, a);
			continue;
		}
		/* within what we sent and not yet cumulatively acknowledged */
		if (!TCP_SEQ_LT(left, right) || TCP_SEQ_GT(right, pcb->snd_nxt) ||
		    TCP_SEQ_LEQ(right, a->ackno))
			continue;
		if (TCP_SEQ_LT(left, a->ackno))
			left = a->ackno;
		/* sorted by left edge (at most 4: insertion) */
		for (j = n; j > 0 && TCP_SEQ_GT(blk[j - 1][0], left); j--) {
			blk[j][0] = blk[j - 1][0];
			blk[j][1] = blk[j - 1][1];
		}
		blk[j][0] = left;
		blk[j][1] = right;
		n++;
	}
	memcpy(cache, r->sack_cache, sizeof(cache));
	for (i = 0; i < n; i++) {
		uint32_t left = blk[i][0], right = blk[i][1];

		/* skip what a cached block (applied before) already covers */
		for (j = 0; j < nc && TCP_SEQ_LT(left, right); j++) {
			uint32_t cl = cache[j][0], cr = cache[j][1];

			if (TCP_SEQ_LEQ(cl, left) && TCP_SEQ_GT(cr, left))
				left = cr;             /* head already applied */
			if (TCP_SEQ_LT(cl, right) && TCP_SEQ_GEQ(cr, right) && TCP_SEQ_LT(left, cl))
				right = cl;            /* tail already applied */
		}
		if (TCP_SEQ_LT(left, right))
			sack_range(pcb, left, right, blk[i][0], blk[i][1], a);
	}
	for (i = 0; i < n; i++) {
		r->sack_cache[i][0] = blk[i][0];
		r->sack_cache[i][1] = blk[i][1];
	}
	r->n_sack_cache = (uint8_t)n;
}

/* ---------------------------------------------------------------------- */
/* RACK loss detection */

static uint32_t
rack_reo_wnd(const struct tcp_pcb *pcb)
{
	const struct dpsock_tcp_rec *r = &pcb->rec;

	if (!r->reord_seen) {
		if (r->ca_state >= DPSOCK_CA_RECOVERY)
			return 0;
		if (r->sacked_out >= DUPTHRESH * pcb->mss)
			return 0;
	}
	return umin32((r->min_rtt_us / 4) * r->reo_wnd_steps, r->srtt_us);
}

/* RFC 8985 6.2 step 4: D-SACKs widen the window, once per round trip. */
static void
rack_update_reo_wnd(struct tcp_pcb *pcb, const struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	if (r->dsack_round_valid && TCP_SEQ_GEQ(a->ackno, r->dsack_round))
		r->dsack_round_valid = 0;
	if (!r->dsack_round_valid && r->dsack_this_ack) {
		r->dsack_round_valid = 1;
		r->dsack_round = pcb->snd_nxt;
		if (r->reo_wnd_steps < REO_STEPS_MAX)
			r->reo_wnd_steps++;
		r->reo_wnd_persist = REO_PERSIST;
	}
	r->dsack_this_ack = 0;
}

/* Mark lost what RACK says is (segments above una: lwIP frees the others
 * after the ACK hook); returns the microseconds until the next segment
 * would be, 0 when none is pending. */
static uint64_t
rack_detect_loss(struct tcp_pcb *pcb, uint32_t una, uint64_t now, bool *lost)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t timeout = 0, reo;
	struct tcp_seg *seg;

	if (!r->rack_valid)
		return 0;
	reo = rack_reo_wnd(pcb);
	for (seg = pcb->unacked; seg != NULL && TCP_SEQ_LEQ(seg_end(seg), una); seg = seg->next)
		;
	for (; seg != NULL; seg = seg->next) {
		uint8_t f = seg->rec.flags;
		uint64_t due;

		if (f & DPSOCK_SEG_SACKED)
			continue;
		if ((f & DPSOCK_SEG_LOST) && !(f & DPSOCK_SEG_RETRANS_OUT))
			continue; /* lost already, its retransmission pending */
		if (!sent_after(r->rack_xmit_us, r->rack_end_seq, seg->rec.xmit_us, seg_end(seg))) {
			/* sent after the RACK segment; first transmissions go in
			 * sequence order, so every later original one is too */
			if (!(f & DPSOCK_SEG_EVER_RETRANS))
				break;
			continue;
		}
		due = seg->rec.xmit_us + r->rack_rtt_us + reo;
		if (due <= now) {
			mark_lost(pcb, seg);
			*lost = true;
			STAT(tcp_rack_lost);
		} else if (due - now > timeout) {
			timeout = due - now;
		}
	}
	return timeout;
}

/* The first unacknowledged segment deemed lost (3 duplicate ACKs, partial
 * ACK): NewReno for peers without SACK. */
static void
mark_head_lost(struct tcp_pcb *pcb, struct ack_ctx *a)
{
	struct tcp_seg *seg = pcb->unacked;

	while (seg != NULL && TCP_SEQ_LEQ(seg_end(seg), a->ackno))
		seg = seg->next;
	if (seg != NULL && !(seg->rec.flags & (DPSOCK_SEG_LOST | DPSOCK_SEG_SACKED | DPSOCK_SEG_RETRANS_OUT))) {
		mark_lost(pcb, seg);
		a->lost_new = true;
	}
}

/* ---------------------------------------------------------------------- */
/* recovery states */

static void
undo_init(struct tcp_pcb *pcb, uint32_t una)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	r->undo_valid = 1;
	r->undo_marker = una;
	r->undo_retrans = 0;
	r->undo_ts_set = 0;
	memset(r->rexmit_log, 0, sizeof(r->rexmit_log));
	r->prior_cwnd = pcb->cwnd;
	/* the ssthresh in force: at least 3/4 of cwnd (as Linux) */
	r->prior_ssthresh = umax32(pcb->ssthresh, pcb->cwnd - pcb->cwnd / 4);
}

static void
set_open(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	r->ca_state = (r->sacked_out || (!(pcb->flags & TF_SACK) && pcb->dupacks)) ?
		      DPSOCK_CA_DISORDER : DPSOCK_CA_OPEN;
	r->frto = 0;
	r->new_data_only = 0;
}

/* Take back the reduction of the episode that began at undo_marker. */
static void
undo(struct tcp_pcb *pcb, bool unmark_lost)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	pcb->cwnd = umax32(pcb->cwnd, r->prior_cwnd);
	if (r->prior_ssthresh > pcb->ssthresh)
		pcb->ssthresh = r->prior_ssthresh;
	if (cc_of(pcb)->undo != NULL)
		cc_of(pcb)->undo(pcb);
	if (unmark_lost) {
		struct tcp_seg *seg;

		for (seg = pcb->unacked; seg != NULL; seg = seg->next)
			seg_flags(pcb, seg, seg->rec.flags & (uint8_t)~DPSOCK_SEG_LOST);
	}
	r->undo_valid = 0;
	STAT(tcp_undo);
}

/* May the episode's reduction go? (called for the ACK being processed:
 * its options are in dpsock_tcp_rx_opts) Every retransmission was proven
 * unnecessary, or the ACK was sent before the first one arrived: it echoes
 * an older timestamp (Eifel). The latter alone holds when one segment was
 * resent twice (an RTO and the probe after it) and the first ACK after a
 * blackout covers only it: no D-SACK has come yet, and F-RTO, with no new
 * data to send, gives up. */
static bool
may_undo(const struct tcp_pcb *pcb)
{
	const struct dpsock_tcp_rx_opts *o = &dpsock_tcp_rx_opts;
	const struct dpsock_tcp_rec *r = &pcb->rec;

	if (!r->undo_valid)
		return false;
	return r->undo_retrans <= 0 ||
	       (r->undo_ts_set && o->ts && o->tsecr != 0 && (int32_t)(o->tsecr - r->undo_tsval) < 0);
}

static void
enter_recovery(struct tcp_pcb *pcb, const struct ack_ctx *a, uint32_t prior_flight)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	STAT(tcp_recoveries);
	undo_init(pcb, a->prior_una);
	pcb->ssthresh = cc_of(pcb)->ssthresh(pcb);
	r->high_seq = pcb->snd_nxt;
	r->prr_delivered = 0;
	r->prr_out = 0;
	r->recover_fs = umax32(prior_flight, pcb->mss);
	r->ca_state = DPSOCK_CA_RECOVERY;
	r->tlp_valid = 0;
}

static void
exit_recovery(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	if (may_undo(pcb))
		undo(pcb, false);
	else
		pcb->cwnd = umax32(pcb->ssthresh, pcb->mss);
	if (r->reo_wnd_persist > 0 && --r->reo_wnd_persist == 0)
		r->reo_wnd_steps = 1;
	set_open(pcb);
}

/* PRR (RFC 6937): cwnd for this ACK of recovery. */
static void
prr_update(struct tcp_pcb *pcb, const struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t pipe = in_flight(pcb, a->ackno), ss = pcb->ssthresh;
	int64_t sndcnt;

	r->prr_delivered += a->delivered;
	if (pipe > ss) {
		uint64_t due = ((uint64_t)r->prr_delivered * ss + r->recover_fs - 1) / r->recover_fs;

		sndcnt = (int64_t)due - r->prr_out;
	} else {
		int64_t limit = (int64_t)r->prr_delivered - r->prr_out;

		/* slow start back to ssthresh on ACKs that advance snd_una and
		 * show no new loss (PRR-SSRB); otherwise conservative */
		if (a->una_advanced && !a->lost_new)
			limit = (limit > a->delivered ? limit : (int64_t)a->delivered) + pcb->mss;
		sndcnt = (int64_t)(ss - pipe) < limit ? (int64_t)(ss - pipe) : limit;
	}
	if (sndcnt < 0)
		sndcnt = 0;
	if (sndcnt == 0 && r->prr_out == 0)
		sndcnt = pcb->mss; /* the first retransmission goes at once */
	pcb->cwnd = pipe + (uint32_t)sndcnt;
}

/* After an RTO (state LOSS): F-RTO and the end of the episode. */
static void
process_loss(struct tcp_pcb *pcb, const struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	bool recovered = TCP_SEQ_GEQ(a->ackno, r->high_seq);

	if (a->una_advanced && may_undo(pcb)) {
		/* the retransmission was not needed (Eifel) */
		undo(pcb, true);
		STAT(tcp_spurious_rto);
		set_open(pcb);
		return;
	}
	if (r->frto) {
		if (a->orig_delivered && r->undo_valid) {
			/* data sent before the timeout and never sent again
			 * arrived: the timeout was spurious (RFC 5682 3.b) */
			undo(pcb, true);
			STAT(tcp_spurious_rto);
			set_open(pcb);
			return;
		}
		if (TCP_SEQ_GT(pcb->snd_nxt, r->high_seq)) {
			if (a->newly_sacked || a->dupack)
				r->frto = 0; /* step 3.a: the loss was real */
		} else if (a->una_advanced && !recovered) {
			/* step 2.b: send new data, not retransmissions */
			r->high_seq = pcb->snd_nxt;
			if (pcb->unsent != NULL &&
			    TCP_SEQ_LEQ(seg_seq(pcb->unsent) + pcb->unsent->len, a->ackno + pcb->snd_wnd)) {
				r->new_data_only = 1;
				return;
			}
			r->frto = 0;
		}
	}
	if (recovered) {
		if (may_undo(pcb))
			undo(pcb, true);
		set_open(pcb);
	}
}

/* ---------------------------------------------------------------------- */
/* TLP */

/* Probes (RFC 8985 7.2 allows them in the open state only). dpsock also
 * probes:
 *  - in fast recovery once every hole has been resent: Linux receivers
 *    compress SACKs, so the last ACK of a recovery is often the only one,
 *    and losing it would cost an RTO;
 *  - after an RTO, once per advance of snd_una, when the window is full:
 *    the head's retransmission (or its ACK) lost would otherwise cost a
 *    second, doubled RTO. A receiver that got nothing for an RTO ACKs at
 *    once (Linux enters quick-ACK mode), so 2 SRTT is enough; a probe
 *    that was not needed costs one segment and a D-SACK. */
enum { PROBE_NONE, PROBE_TAIL, PROBE_LOSS };

static int
probe_kind(const struct tcp_pcb *pcb)
{
	const struct dpsock_tcp_rec *r = &pcb->rec;

	switch (r->ca_state) {
	case DPSOCK_CA_OPEN:
		return r->tlp_valid ? PROBE_NONE : PROBE_TAIL;
	case DPSOCK_CA_RECOVERY:
		return r->tlp_valid || r->lost_pending ? PROBE_NONE : PROBE_TAIL;
	case DPSOCK_CA_LOSS:
		if (r->probe_valid && r->probe_una == pcb->lastack)
			return PROBE_NONE;
		return in_flight(pcb, pcb->lastack) + pcb->mss > pcb->cwnd ? PROBE_LOSS : PROBE_NONE;
	default:
		return PROBE_NONE;
	}
}

static void
tlp_arm(struct tcp_pcb *pcb, uint64_t now, bool restart)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t pto, rto_left;
	int kind;

	if (r->timer_kind == TIMER_REO)
		return;
	kind = (pcb->flags & TF_SACK) && pcb->unacked != NULL && r->srtt_us != 0 &&
	       pcb->state >= ESTABLISHED ? probe_kind(pcb) : PROBE_NONE;
	if (kind == PROBE_NONE) {
		timer_stop(pcb);
		return;
	}
	if (r->timer_kind == TIMER_TLP && !restart)
		return;
	pto = 2ull * r->srtt_us;
	if (kind == PROBE_TAIL && pcb->snd_nxt - pcb->lastack <= pcb->mss)
		pto += WC_DELACK_US; /* one segment: the peer may delay its ACK */
	if (pto < TLP_MIN_US)
		pto = TLP_MIN_US;
	rto_left = pcb->rtime >= 0 && pcb->rtime < pcb->rto ? (uint64_t)(pcb->rto - pcb->rtime) * TICK_US :
							   0;
	if (pto >= rto_left) {
		timer_stop(pcb);
		return;
	}
	timer_arm(pcb, now + pto, TIMER_TLP);
}

/* RFC 8985 7.3: send a probe: new data if any, else the last segment; after
 * an RTO, the first segment not SACKed. */
static void
tlp_fire(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	struct tcp_seg *seg, *last = NULL;
	uint32_t nxt = pcb->snd_nxt;
	int kind = pcb->unacked != NULL ? probe_kind(pcb) : PROBE_NONE;

	if (kind == PROBE_NONE)
		return;
	if (kind == PROBE_LOSS) {
		for (seg = pcb->unacked; seg != NULL && (seg->rec.flags & DPSOCK_SEG_SACKED); seg = seg->next)
			;
		if (seg != NULL)
			seg_cut(pcb, seg, 1, DPSOCK_SEG_CUT_UP); /* a super-segment: its first MSS */
		if (seg == NULL || dpsock_tcp_output_seg(pcb, seg) != ERR_OK)
			return;
		r->probe_valid = 1;
		r->probe_una = pcb->lastack;
		STAT(tcp_tlp_probes);
		pcb->rtime = 0;
		return;
	}
	if (pcb->unsent != NULL && !dpsock_tcp_rec_rwnd_limited(pcb, pcb->unsent)) {
		r->tlp_force = 1;
		tcp_output(pcb);
		r->tlp_force = 0;
	}
	if (TCP_SEQ_GT(pcb->snd_nxt, nxt)) {
		r->tlp_retrans = 0;
	} else {
		for (seg = pcb->unacked; seg != NULL; seg = seg->next)
			last = seg;
		/* a super-segment: its last MSS */
		if (last != NULL && seg_cut(pcb, last, seg_len(last) - 1, DPSOCK_SEG_CUT_DOWN))
			last = last->next;
		if (last == NULL || dpsock_tcp_output_seg(pcb, last) != ERR_OK)
			return;
		r->tlp_retrans = 1;
	}
	STAT(tcp_tlp_probes);
	r->tlp_valid = 1;
	r->tlp_high_seq = pcb->snd_nxt;
	pcb->rtime = 0; /* the RTO runs from the probe */
}

/* RFC 8985 7.4: did the probe repair a loss? */
static void
tlp_ack(struct tcp_pcb *pcb, const struct ack_ctx *a)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	if (!r->tlp_valid || TCP_SEQ_LT(a->ackno, r->tlp_high_seq))
		return;
	if (!r->tlp_retrans || a->dsack_tlp) {
		r->tlp_valid = 0; /* new data, or both copies arrived: no loss */
	} else if (TCP_SEQ_GT(a->ackno, r->tlp_high_seq)) {
		/* acknowledged past the probe, and no D-SACK for it: it repaired
		 * a loss; reduce as for a congestion event (in recovery, the
		 * reduction is under way already) */
		r->tlp_valid = 0;
		if (r->ca_state >= DPSOCK_CA_RECOVERY)
			return;
		pcb->ssthresh = cc_of(pcb)->ssthresh(pcb);
		pcb->cwnd = umax32(pcb->ssthresh, pcb->mss);
		STAT(tcp_tlp_recoveries);
	} else if (a->dupack && !a->dsack) {
		r->tlp_valid = 0; /* a peer without D-SACK: cannot tell */
	}
}

/* ---------------------------------------------------------------------- */
/* cwnd validation, delivery rate, pacing */

static bool
cwnd_limited(const struct tcp_pcb *pcb)
{
	if (pcb->cwnd < pcb->ssthresh)
		return pcb->cwnd < 2 * pcb->rec.max_inflight;
	return pcb->rec.cwnd_limited;
}

static void
rate_sample_end(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t interval, delivered, rate;

	if (r->app_limited && r->delivered > r->app_limited)
		r->app_limited = 0;
	if (!r->rs_valid)
		return;
	r->rs_valid = 0;
	delivered = r->delivered - r->rs_prior_delivered;
	interval = r->rs_send_elapsed > r->rs_ack_elapsed ? r->rs_send_elapsed : r->rs_ack_elapsed;
	if (delivered == 0 || interval == 0 || interval < r->min_rtt_us)
		return;
	rate = delivered * 1000000u / interval;
	if (!r->rs_app_limited || rate >= r->delivery_rate) {
		r->delivery_rate = rate;
		r->rate_app_limited = r->rs_app_limited;
	}
}

static void
pacing_update(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint64_t rate;

	if (!pacing_on || r->srtt_us == 0) {
		r->pacing_rate = 0;
		return;
	}
	rate = (uint64_t)pcb->cwnd * 1000000u / r->srtt_us;
	/* 200 % in slow start, 120 % after (Linux's tcp_pacing_*_ratio) */
	r->pacing_rate = pcb->cwnd < pcb->ssthresh / 2 ? rate * 2 : rate * 6 / 5;
}

/* ---------------------------------------------------------------------- */
/* hooks */

void
dpsock_tcp_rec_pcb_init(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	/* tcp_alloc zeroed the pcb */
	r->cc = cc_default;
	r->reo_wnd_steps = 1;
	pcb->ssthresh = SSTHRESH_INF;
	r->rto_us = LWIP_TCP_RTO_TIME * 1000u;
	if (cc_of(pcb)->init != NULL)
		cc_of(pcb)->init(pcb);
}

void
dpsock_tcp_rec_purge(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	/* the queues are gone */
	r->timer_us = r->pace_us = 0;
	timer_update(pcb);
	r->hint = NULL;
	r->sacked_out = r->lost_out = r->retrans_out = r->lost_pending = 0;
	r->n_sack_cache = 0;
}

void
dpsock_tcp_rec_pcb_free(struct tcp_pcb *pcb)
{
	dpsock_tcp_rec_purge(pcb);
}

void
dpsock_tcp_rec_seg_init(struct tcp_seg *seg)
{
	memset(&seg->rec, 0, sizeof(seg->rec));
}

void
dpsock_tcp_rec_sent(struct tcp_pcb *pcb, struct tcp_seg *seg)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t seq = seg_seq(seg), len = seg_len(seg);
	uint64_t now = now_us();
	/* sent before: not seq < snd_nxt, because lwIP's active open puts
	 * its SYN at iss - 1 with snd_nxt = iss already */
	bool rexmit = seg->rec.xmit_us != 0;

	if (len == 0)
		return;
	if (pcb->unacked == NULL && !rexmit)
		r->first_tx_us = r->delivered_us = now; /* nothing in flight */
	seg->rec.delivered = r->delivered;
	seg->rec.delivered_us = r->delivered_us;
	seg->rec.first_tx_us = r->first_tx_us;
	if (r->app_limited)
		seg->rec.flags |= DPSOCK_SEG_APP_LIMITED;
	else
		seg->rec.flags &= (uint8_t)~DPSOCK_SEG_APP_LIMITED;
	seg->rec.xmit_us = now;
	if (seg->flags & TF_SEG_OPTS_TS) {
		/* tcp_output_segment wrote the options: MSS first, then TS */
		const u32_t *opts = (const u32_t *)(const void *)(seg->tcphdr + 1);

		seg->rec.tsval = lwip_ntohl(opts[(seg->flags & TF_SEG_OPTS_MSS) ? 2 : 1]);
	}
	r->segs_out++;
	r->data_segs_out += seg->len > 0;
	r->bytes_sent += seg->len;
	if (rexmit) {
		seg_flags(pcb, seg, seg->rec.flags | DPSOCK_SEG_RETRANS_OUT | DPSOCK_SEG_EVER_RETRANS);
		r->total_retrans++;
		r->bytes_retrans += seg->len;
		STAT(tcp_rexmit);
		if (r->undo_valid && r->ca_state >= DPSOCK_CA_RECOVERY) {
			r->undo_retrans++;
			rexmit_log_add(pcb, seq, seq + len);
			if (!r->undo_ts_set && (seg->flags & TF_SEG_OPTS_TS)) {
				r->undo_ts_set = 1;
				r->undo_tsval = seg->rec.tsval;
			}
		}
	} else {
		r->tlp_force = 0;
	}
	if (r->ca_state == DPSOCK_CA_RECOVERY)
		r->prr_out += len;
	if (r->pacing_rate) {
		uint64_t t = r->next_send_us > now ? r->next_send_us : now;

		r->next_send_us = t + (uint64_t)len * 1000000u / r->pacing_rate;
	}
}

void
dpsock_tcp_rec_syn_acked(struct tcp_pcb *pcb, struct tcp_seg *syn)
{
	/* lwIP frees the SYN itself: it leaves the scoreboard here (it was
	 * all there was in flight) */
	pcb->rec.retrans_out = pcb->rec.lost_out = pcb->rec.sacked_out = pcb->rec.lost_pending = 0;
	/* the handshake's RTT: from a SYN sent once (Karn), or from the last
	 * transmission when the answer echoes its timestamp (RFC 7323 4.1;
	 * transmissions a SYN RTO apart carry different millisecond TSvals) */
	if (syn->rec.xmit_us != 0 &&
	    (!(syn->rec.flags & DPSOCK_SEG_EVER_RETRANS) ||
	     ((syn->flags & TF_SEG_OPTS_TS) && dpsock_tcp_rx_opts.ts &&
	      dpsock_tcp_rx_opts.tsecr == syn->rec.tsval))) {
		uint64_t now = now_us();

		rtt_sample(pcb, (uint32_t)(now - syn->rec.xmit_us), now);
	}
}

void
dpsock_tcp_rec_on_ack(struct tcp_pcb *pcb, uint32_t ackno, uint32_t tcplen, int wnd_changed)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	struct ack_ctx a;
	struct tcp_seg *seg;
	uint32_t prior_flight, acked_new;
	uint64_t reo_timeout;
	bool lost = false;

	if (!TCP_SEQ_BETWEEN(ackno, pcb->lastack, pcb->snd_nxt))
		return; /* old or beyond what we sent: lwIP handles it */
	if (!r->seq_init) {
		/* sequence numbers compare within 2^31 of each other: start
		 * from the connection's own */
		r->seq_init = 1;
		r->fack = r->cwnd_usage_seq = pcb->lastack;
	}
	memset(&a, 0, sizeof(a));
	a.now = now_us();
	a.ackno = ackno;
	a.prior_una = pcb->lastack;
	a.una_advanced = ackno != pcb->lastack;
	prior_flight = in_flight(pcb, pcb->lastack);

	/* cumulative acknowledgement first, then the SACK blocks above it:
	 * RACK sees deliveries in the order they were sent. lwIP frees the
	 * segments acknowledged right after this hook. */
	if (dpsock_tcp_rx_opts.n_sack > 0 || r->sacked_out > 0 || r->lost_out > 0)
		ack_cut(pcb, ackno);
	for (seg = pcb->unacked; seg != NULL && TCP_SEQ_LEQ(seg_end(seg), ackno); seg = seg->next) {
		uint8_t f = seg->rec.flags;

		if (!(f & DPSOCK_SEG_SACKED)) {
			if ((f & DPSOCK_SEG_EVER_RETRANS) && seg_seq(seg) == a.prior_una &&
			    dpsock_tcp_rx_opts.ts && dpsock_tcp_rx_opts.tsecr != 0 &&
			    (int32_t)(dpsock_tcp_rx_opts.tsecr - seg->rec.tsval) < 0 &&
			    r->undo_valid && r->undo_retrans > 0) {
				/* Eifel: the ACK echoes the original's timestamp */
				r->undo_retrans--;
				rexmit_log_take(pcb, seg_seq(seg), seg_end(seg));
				STAT(tcp_spurious_rtx);
			}
			if (!(f & DPSOCK_SEG_EVER_RETRANS) && a.rtt_xmit == 0)
				a.rtt_xmit = seg->rec.xmit_us;
			seg_delivered(pcb, seg, &a);
		}
		seg_flags(pcb, seg, 0); /* off the scoreboard: lwIP frees it */
	}
	if (dpsock_tcp_rx_opts.n_sack > 0 && (pcb->flags & TF_SACK))
		sack_process(pcb, &a);
	if (r->hint != NULL && TCP_SEQ_LEQ(seg_end(r->hint), ackno))
		r->hint = NULL;
	if (TCP_SEQ_GT(ackno, r->fack))
		r->fack = ackno;
	r->bytes_acked += ackno - a.prior_una;

	/* duplicate ACKs: what peers without SACK can tell */
	a.dupack = !a.una_advanced && tcplen == 0 && !wnd_changed && pcb->unacked != NULL;
	if (a.una_advanced) {
		pcb->dupacks = 0;
		r->backoff = 0;
		rto_set(pcb);
	} else if (a.dupack && (u8_t)(pcb->dupacks + 1) > pcb->dupacks) {
		pcb->dupacks++;
		if (!(pcb->flags & TF_SACK))
			a.delivered += pcb->mss;
	}

	/* RTT: the oldest segment ACKed, else the oldest SACKed (Karn) */
	if (a.rtt_xmit != 0 || a.sack_rtt_xmit != 0) {
		uint64_t x = a.rtt_xmit != 0 ? a.rtt_xmit : a.sack_rtt_xmit;

		rtt_sample(pcb, (uint32_t)(a.now - x), a.now);
	}
	if (a.ca_rtt_xmit != 0 && cc_of(pcb)->rtt_sample != NULL)
		cc_of(pcb)->rtt_sample(pcb, (uint32_t)(a.now - a.ca_rtt_xmit), a.now);

	tlp_ack(pcb, &a);

	/* loss detection */
	rack_update_reo_wnd(pcb, &a);
	reo_timeout = rack_detect_loss(pcb, ackno, a.now, &lost);
	if (!(pcb->flags & TF_SACK)) {
		if (r->ca_state < DPSOCK_CA_RECOVERY && pcb->dupacks >= DUPTHRESH)
			mark_head_lost(pcb, &a);
		else if (r->ca_state == DPSOCK_CA_RECOVERY && a.una_advanced &&
			 TCP_SEQ_LT(ackno, r->high_seq))
			mark_head_lost(pcb, &a); /* NewReno partial ACK */
	}
	a.lost_new = a.lost_new || lost;

	/* recovery state */
	if (r->undo_valid && r->ca_state < DPSOCK_CA_RECOVERY && may_undo(pcb) && a.dsack) {
		/* late D-SACKs: the last episode's retransmissions were all
		 * unnecessary */
		undo(pcb, false);
	}
	switch (r->ca_state) {
	case DPSOCK_CA_LOSS:
		process_loss(pcb, &a);
		break;
	case DPSOCK_CA_RECOVERY:
		if (TCP_SEQ_GEQ(ackno, r->high_seq))
			exit_recovery(pcb);
		break;
	default:
		break;
	}
	if (r->ca_state < DPSOCK_CA_RECOVERY) {
		if (r->lost_out > 0)
			enter_recovery(pcb, &a, prior_flight);
		else
			set_open(pcb);
	}

	/* congestion window */
	acked_new = a.delivered;
	if (r->ca_state == DPSOCK_CA_RECOVERY) {
		prr_update(pcb, &a);
	} else if (acked_new > 0 && cwnd_limited(pcb)) {
		cc_of(pcb)->cong_avoid(pcb, acked_new, a.now);
	}
	rate_sample_end(pcb);
	pacing_update(pcb);

	/* timers: RACK's reordering timer, else a tail loss probe */
	if (ackno == pcb->snd_nxt) {
		timer_stop(pcb);
	} else if (reo_timeout > 0) {
		timer_arm(pcb, a.now + reo_timeout, TIMER_REO);
	} else {
		if (r->timer_kind == TIMER_REO)
			timer_stop(pcb);
		if (a.una_advanced)
			pcb->rtime = 0; /* lwIP restarts the RTO too; the PTO needs it now */
		tlp_arm(pcb, a.now, a.una_advanced);
	}
}

int
dpsock_tcp_rec_rto(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	struct tcp_seg *seg;

	if (pcb->state < ESTABLISHED)
		return 0; /* SYN retransmission: lwIP's own */
	STAT(tcp_rto);
	timer_stop(pcb);
	if (pcb->nrtx < 0xff)
		pcb->nrtx++;
	if (pcb->nrtx > 1)
		STAT(tcp_rto_repeat);
	if (r->backoff < 15)
		r->backoff++;
	rto_set(pcb);
	pcb->rtime = 0;
	if (pcb->unacked != NULL) {
		/* a new episode unless this one's retransmissions time out */
		if (r->ca_state <= DPSOCK_CA_DISORDER || TCP_SEQ_LEQ(r->high_seq, pcb->lastack) ||
		    (r->ca_state == DPSOCK_CA_LOSS && pcb->nrtx == 1)) {
			undo_init(pcb, pcb->lastack);
			pcb->ssthresh = cc_of(pcb)->ssthresh(pcb);
			if (cc_of(pcb)->on_rto != NULL)
				cc_of(pcb)->on_rto(pcb);
		}
		/* everything not SACKed is lost; earlier retransmissions too */
		for (seg = pcb->unacked; seg != NULL; seg = seg->next)
			mark_lost(pcb, seg);
		r->high_seq = pcb->snd_nxt;
		r->ca_state = DPSOCK_CA_LOSS;
		/* F-RTO on the first timeout of a segment (RFC 5682 2.1) */
		r->frto = (pcb->flags & TF_SACK) && pcb->nrtx == 1;
		r->new_data_only = 0;
		r->tlp_valid = 0;
		r->probe_valid = 0;
	}
	pcb->cwnd = pcb->mss;
	tcp_output(pcb);
	return 1;
}

void
dpsock_tcp_rec_output(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	struct tcp_seg *seg;
	bool sent = false;

	if (pcb->state < ESTABLISHED || r->lost_pending == 0 || pcb->unacked == NULL)
		return;
	if (r->new_data_only) {
		/* F-RTO step 2: this once, new data only */
		r->new_data_only = 0;
		return;
	}
	for (seg = pcb->unacked; seg != NULL; seg = seg->next) {
		uint8_t f = seg->rec.flags;
		err_t err;

		uint32_t flight, room;

		if (!(f & DPSOCK_SEG_LOST) || (f & (DPSOCK_SEG_RETRANS_OUT | DPSOCK_SEG_SACKED)))
			continue;
		/* a super-segment larger than the window: what fits of it */
		flight = in_flight(pcb, pcb->lastack);
		room = pcb->cwnd > flight ? pcb->cwnd - flight : 0;
		if (seg_len(seg) > room && (room == 0 || !seg_cut(pcb, seg, room, DPSOCK_SEG_CUT_DOWN)))
			break;
		err = dpsock_tcp_output_seg(pcb, seg);
		if (err != ERR_OK)
			break; /* lent to the NIC still, no route or memory: later */
		sent = true;
		if (r->ca_state == DPSOCK_CA_LOSS)
			STAT(tcp_rexmit_rto);
		else
			STAT(tcp_rexmit_sack);
	}
	if (sent)
		tcp_clear_flags(pcb, TF_ACK_DELAY | TF_ACK_NOW); /* they carried the ACK */
}

int
dpsock_tcp_rec_rwnd_limited(const struct tcp_pcb *pcb, const struct tcp_seg *seg)
{
	return seg_seq(seg) - pcb->lastack + seg->len > pcb->snd_wnd;
}

int
dpsock_tcp_rec_can_send(struct tcp_pcb *pcb, const struct tcp_seg *seg, uint32_t wnd)
{
	struct dpsock_tcp_rec *r = &pcb->rec;

	if (pcb->state < ESTABLISHED)
		return seg_seq(seg) - pcb->lastack + seg->len <= wnd; /* lwIP's rule */
	if (dpsock_tcp_rec_rwnd_limited(pcb, seg))
		return 0;
	if (r->tlp_force)
		return 1;
	if (in_flight(pcb, pcb->lastack) + seg->len > pcb->cwnd)
		return 0;
	if (r->pacing_rate && pcb->unacked != NULL) {
		uint64_t now = now_us();

		if (r->next_send_us > now + PACE_BURST_US) {
			r->pace_us = r->next_send_us - PACE_BURST_US;
			timer_update(pcb);
			return 0;
		}
	}
	return 1;
}

void
dpsock_tcp_rec_output_done(struct tcp_pcb *pcb)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t flight;
	bool blocked;

	if (pcb->state < ESTABLISHED)
		return;
	flight = in_flight(pcb, pcb->lastack);
	/* cwnd validation (as Linux): is the window what holds data back? */
	blocked = flight + pcb->mss > pcb->cwnd;
	if (TCP_SEQ_GEQ(pcb->lastack, r->cwnd_usage_seq) || blocked ||
	    (!r->cwnd_limited && flight > r->max_inflight)) {
		r->cwnd_limited = blocked;
		r->max_inflight = flight;
		r->cwnd_usage_seq = pcb->snd_nxt;
	}
	/* nothing more to send though the window would allow it */
	if (pcb->unsent == NULL && !blocked && r->app_limited == 0)
		r->app_limited = r->delivered + flight ? r->delivered + flight : 1;
	if (pcb->unacked != NULL && r->timer_us == 0)
		tlp_arm(pcb, now_us(), false);
}

/* ---------------------------------------------------------------------- */
/* timers firing */

static void
reo_fire(struct tcp_pcb *pcb, uint64_t now)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	struct ack_ctx a;
	bool lost = false;
	uint64_t t;
	uint32_t prior_flight = in_flight(pcb, pcb->lastack);

	STAT(tcp_rack_timeouts);
	t = rack_detect_loss(pcb, pcb->lastack, now, &lost);
	if (lost && r->ca_state < DPSOCK_CA_RECOVERY) {
		memset(&a, 0, sizeof(a));
		a.now = now;
		a.ackno = a.prior_una = pcb->lastack;
		a.lost_new = true;
		enter_recovery(pcb, &a, prior_flight);
		prr_update(pcb, &a);
	}
	if (t > 0)
		timer_arm(pcb, now + t, TIMER_REO);
	if (lost)
		tcp_output(pcb);
	if (r->timer_us == 0)
		tlp_arm(pcb, now, true);
}

static void
timer_fire(struct tcp_pcb *pcb, uint64_t now)
{
	struct dpsock_tcp_rec *r = &pcb->rec;
	uint8_t kind = TIMER_NONE;

	if (r->pace_us != 0 && r->pace_us <= now)
		r->pace_us = 0;
	if (r->timer_us != 0 && r->timer_us <= now) {
		kind = r->timer_kind;
		r->timer_us = 0;
		r->timer_kind = TIMER_NONE;
	}
	timer_update(pcb);
	if (pcb->state < ESTABLISHED || pcb->state == TIME_WAIT)
		return;
	if (kind == TIMER_REO)
		reo_fire(pcb, now);
	else if (kind == TIMER_TLP)
		tlp_fire(pcb);
	if (pcb->unsent != NULL)
		tcp_output(pcb); /* paced data, or what the probe allowed */
}

void
dpsock_tcp_rec_poll(void)
{
	uint64_t now;
	unsigned int n;

	if (heap_n == 0)
		return;
	now = now_us();
	for (n = 0; heap_n > 0 && deadline(heap[0]) <= now && n < 64; n++)
		timer_fire(heap[0], now);
}

/* ---------------------------------------------------------------------- */
/* for the stack */

int
dpsock_tcp_cc_set_default(const char *name)
{
	int i = dpsock_tcp_cc_find(name);

	if (i < 0)
		return -ENOENT;
	cc_default = (uint8_t)i;
	return 0;
}

int
dpsock_tcp_cc_set(struct tcp_pcb *pcb, const char *name)
{
	int i = dpsock_tcp_cc_find(name);

	if (i < 0)
		return -ENOENT;
	if (pcb->rec.cc == (uint8_t)i)
		return 0;
	pcb->rec.cc = (uint8_t)i;
	memset(&pcb->rec.ccs, 0, sizeof(pcb->rec.ccs));
	if (cc_of(pcb)->init != NULL)
		cc_of(pcb)->init(pcb);
	return 0;
}

const char *
dpsock_tcp_cc_name(const struct tcp_pcb *pcb)
{
	return cc_of(pcb)->name;
}

void
dpsock_tcp_pacing_set_default(bool on)
{
	pacing_on = on;
}

/* lwIP's states as Linux numbers them (netinet/tcp.h) */
static const uint8_t linux_state[] = {
	[CLOSED] = 7, [LISTEN] = 10, [SYN_SENT] = 2, [SYN_RCVD] = 3, [ESTABLISHED] = 1,
	[FIN_WAIT_1] = 4, [FIN_WAIT_2] = 5, [CLOSE_WAIT] = 8, [CLOSING] = 11,
	[LAST_ACK] = 9, [TIME_WAIT] = 6,
};

void
dpsock_tcp_rec_info(const struct tcp_pcb *pcb, struct dpsock_tcp_info *out)
{
	const struct dpsock_tcp_rec *r = &pcb->rec;
	uint32_t mss = pcb->mss ? pcb->mss : 1, queued;

	memset(out, 0, sizeof(*out));
	out->state = pcb->state < sizeof(linux_state) ? linux_state[pcb->state] : 0;
	if (pcb->state == LISTEN) {
		/* a tcp_pcb_listen has no more than the common fields */
		snprintf(out->congestion, sizeof(out->congestion), "%s", dpsock_cc_table[cc_default]->name);
		return;
	}
	snprintf(out->congestion, sizeof(out->congestion), "%s", cc_of(pcb)->name);
	out->ca_state = r->ca_state;
	out->retransmits = pcb->nrtx;
	out->backoff = r->backoff;
	out->options = (pcb->flags & TF_TIMESTAMP ? 1 : 0) | (pcb->flags & TF_SACK ? 2 : 0) |
		       (pcb->flags & TF_WND_SCALE ? 4 : 0);
	if (pcb->flags & TF_WND_SCALE) {
		out->snd_wscale = pcb->snd_scale;
		out->rcv_wscale = pcb->rcv_scale;
	}
	out->delivery_rate_app_limited = r->rate_app_limited;
	out->rto = (uint32_t)(pcb->rto > 0 ? (uint64_t)pcb->rto * TICK_US : r->rto_us);
	out->snd_mss = out->rcv_mss = out->advmss = mss;
	out->unacked = (pcb->snd_nxt - pcb->lastack + mss - 1) / mss;
	out->sacked = (r->sacked_out + mss - 1) / mss;
	out->lost = (r->lost_out + mss - 1) / mss;
	out->retrans = (r->retrans_out + mss - 1) / mss;
	out->rtt = r->srtt_us;
	out->rttvar = r->rttvar_us;
	out->min_rtt = r->min_rtt_us;
	out->snd_ssthresh = pcb->ssthresh >= SSTHRESH_INF ? SSTHRESH_INF : pcb->ssthresh / mss;
	out->snd_cwnd = pcb->cwnd / mss;
	out->reordering = DUPTHRESH;
	out->total_retrans = r->total_retrans;
	out->pacing_rate = r->pacing_rate ? r->pacing_rate : UINT64_MAX;
	out->delivery_rate = r->delivery_rate;
	out->bytes_acked = r->bytes_acked;
	out->bytes_sent = r->bytes_sent;
	out->bytes_retrans = r->bytes_retrans;
	out->segs_out = r->segs_out;
	out->data_segs_out = r->data_segs_out;
	out->delivered = (uint32_t)((r->delivered + mss - 1) / mss);
	out->dsack_dups = r->dsack_dups;
	out->reord_seen = r->reord_events;
	out->snd_wnd = pcb->snd_wnd;
	queued = pcb->snd_buf <= TCP_SND_BUF ? TCP_SND_BUF - pcb->snd_buf : 0;
	out->notsent_bytes = queued > pcb->snd_nxt - pcb->lastack ? queued - (pcb->snd_nxt - pcb->lastack) : 0;
}
