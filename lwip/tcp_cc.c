/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_cc.c — congestion control modules for tcp_rec.c, chosen per
 * connection by index into dpsock_cc_table (TCP_CONGESTION, tcp.congestion):
 *
 *   cubic   RFC 9438 (C = 0.4, beta = 0.7, fast convergence, the Reno-friendly
 *           region), with HyStart++ (RFC 9406) ending the first slow start
 *           when the round's minimum RTT rises; the default, as on Linux
 *   reno    RFC 5681 NewReno: slow start, one segment per window after
 *           (loss recovery itself is tcp_rec.c's: SACK, RACK, PRR)
 *
 * A module only sizes cwnd outside recovery and picks ssthresh at a
 * congestion event; tcp_rec.c calls cong_avoid when the window is in use.
 * Windows are in bytes (lwIP's cwnd/ssthresh); CUBIC computes in segments.
 */

#include <math.h>
#include <string.h>

#include "lwip/opt.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/tcp.h"

#include "dpsock_tcp_rec.h"

/* slow start: at most this many segments of growth per ACK (RFC 9406's L
 * for a sender that does not pace every segment) */
#define SS_L 8u

/* Slow start by `acked` bytes, not past ssthresh. Returns what is left for
 * congestion avoidance. */
static uint32_t
slow_start(struct tcp_pcb *pcb, uint32_t acked, uint32_t div)
{
	uint32_t room = pcb->ssthresh - pcb->cwnd, inc = acked;

	if (inc > SS_L * pcb->mss)
		inc = SS_L * pcb->mss;
	inc /= div;
	if (inc >= room) {
		pcb->cwnd = pcb->ssthresh;
		return acked > room ? acked - room : 0;
	}
	pcb->cwnd += inc;
	return 0;
}

/* ---- NewReno ------------------------------------------------------------- */

static void
reno_cong_avoid(struct tcp_pcb *pcb, uint32_t acked, uint64_t now_us)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;

	if (pcb->cwnd < pcb->ssthresh) {
		acked = slow_start(pcb, acked, 1);
		if (acked == 0)
			return;
	}
	/* RFC 5681 3.1: one segment per window of data acknowledged */
	c->bytes_acked += acked;
	if (c->bytes_acked >= pcb->cwnd) {
		c->bytes_acked -= pcb->cwnd;
		pcb->cwnd += pcb->mss;
	}
}

static uint32_t
reno_ssthresh(struct tcp_pcb *pcb)
{
	uint32_t half = pcb->cwnd / 2;

	pcb->rec.ccs.bytes_acked = 0;
	return half > 2u * pcb->mss ? half : 2u * pcb->mss;
}

static const struct dpsock_cc_ops cc_reno = {
	.name = "reno",
	.cong_avoid = reno_cong_avoid,
	.ssthresh = reno_ssthresh,
};

/* ---- CUBIC (RFC 9438) ------------------------------------------------------ */

#define CUBIC_C 0.4
#define CUBIC_BETA 0.7
/* alpha for the Reno-friendly region: 3 (1 - beta) / (1 + beta) */
#define CUBIC_ALPHA (3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA))

/* HyStart++ (RFC 9406 4.3) */
#define HS_MIN_RTT_THRESH 4000u
#define HS_MAX_RTT_THRESH 16000u
#define HS_MIN_RTT_DIVISOR 8u
#define HS_N_RTT_SAMPLE 8u
#define HS_CSS_GROWTH_DIVISOR 4u
#define HS_CSS_ROUNDS 5u

static void
cubic_init(struct tcp_pcb *pcb)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;

	c->cur_round_min_us = c->last_round_min_us = c->css_baseline_us = UINT32_MAX;
}

/* A new round starts when what was sent at the last one is acknowledged. */
static void
hystart_round(struct tcp_pcb *pcb, uint32_t una)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;

	if (c->round_end != 0 && TCP_SEQ_LT(una, c->round_end))
		return;
	c->round_end = pcb->snd_nxt ? pcb->snd_nxt : 1;
	c->last_round_min_us = c->cur_round_min_us;
	c->cur_round_min_us = UINT32_MAX;
	c->rtt_samples = 0;
	if (c->in_css && ++c->css_rounds >= HS_CSS_ROUNDS) {
		/* conservative slow start lasted its rounds: go to CA */
		pcb->ssthresh = pcb->cwnd;
		c->in_css = 0;
		c->hystart_done = 1;
		dpsock_stat_add(&dpsock_tcp_rec_stats_get()->tcp_hystart_exits, 1);
	}
}

static void
cubic_rtt_sample(struct tcp_pcb *pcb, uint32_t rtt, uint64_t now_us)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;
	uint32_t thresh;

	/* HyStart++ runs in the first slow start only */
	if (c->hystart_done || pcb->cwnd >= pcb->ssthresh)
		return;
	hystart_round(pcb, pcb->lastack);
	if (rtt < c->cur_round_min_us)
		c->cur_round_min_us = rtt;
	if (c->rtt_samples < 255)
		c->rtt_samples++;
	if (c->rtt_samples < HS_N_RTT_SAMPLE || c->cur_round_min_us == UINT32_MAX ||
	    c->last_round_min_us == UINT32_MAX)
		return;
	if (!c->in_css) {
		thresh = c->last_round_min_us / HS_MIN_RTT_DIVISOR;
		thresh = thresh < HS_MIN_RTT_THRESH ? HS_MIN_RTT_THRESH :
			 thresh > HS_MAX_RTT_THRESH ? HS_MAX_RTT_THRESH : thresh;
		if (c->cur_round_min_us >= c->last_round_min_us + thresh) {
			c->in_css = 1;
			c->css_rounds = 0;
			c->css_baseline_us = c->cur_round_min_us;
		}
	} else if (c->cur_round_min_us < c->css_baseline_us) {
		/* the RTT went back down: the increase was spurious */
		c->in_css = 0;
		c->css_baseline_us = UINT32_MAX;
	}
}

static void
cubic_cong_avoid(struct tcp_pcb *pcb, uint32_t acked, uint64_t now_us)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;
	double mss = pcb->mss, cwnd, t, target, w_cubic, inc;
	uint32_t add;

	if (pcb->cwnd < pcb->ssthresh) {
		acked = slow_start(pcb, acked, c->in_css ? HS_CSS_GROWTH_DIVISOR : 1);
		if (acked == 0)
			return;
	}
	cwnd = pcb->cwnd / mss;
	if (c->epoch_us == 0) {
		/* first ACK of congestion avoidance since the last event */
		c->epoch_us = now_us;
		c->acc_bytes = 0;
		c->w_est = cwnd;
		if (c->w_max <= cwnd) {
			c->k = 0;
			c->w_max = cwnd;
		} else {
			c->k = cbrt((c->w_max - cwnd) / CUBIC_C);
		}
	}
	t = (double)(now_us - c->epoch_us) / 1e6;
	/* the window one RTT ahead, kept within [cwnd, 1.5 cwnd] */
	target = CUBIC_C * pow(t + pcb->rec.srtt_us / 1e6 - c->k, 3) + c->w_max;
	if (target < cwnd)
		target = cwnd;
	else if (target > 1.5 * cwnd)
		target = 1.5 * cwnd;
	/* Reno-friendly estimate (RFC 9438 4.3); alpha 1 once past the
	 * window of the last congestion event */
	c->w_est += (c->w_est >= c->cwnd_prior ? 1.0 : CUBIC_ALPHA) * (acked / mss) / cwnd;
	w_cubic = CUBIC_C * pow(t - c->k, 3) + c->w_max;
	if (w_cubic < c->w_est)
		inc = c->w_est > cwnd ? c->w_est - cwnd : 0;
	else
		inc = (target - cwnd) / cwnd * (acked / mss);
	c->acc_bytes += inc * mss;
	if (c->acc_bytes >= 1.0) {
		add = (uint32_t)c->acc_bytes;
		c->acc_bytes -= add;
		pcb->cwnd = pcb->cwnd + add < pcb->cwnd ? 0x7fffffffu : pcb->cwnd + add;
	}
}

static uint32_t
cubic_ssthresh(struct tcp_pcb *pcb)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;
	double cwnd = (double)pcb->cwnd / pcb->mss;
	uint32_t ss;

	c->epoch_us = 0;
	c->hystart_done = 1;
	c->in_css = 0;
	c->w_max_prior = c->w_max;
	c->cwnd_prior = cwnd;
	/* fast convergence: give way to newer flows */
	c->w_max = cwnd < c->w_max ? cwnd * (1.0 + CUBIC_BETA) / 2.0 : cwnd;
	ss = (uint32_t)(pcb->cwnd * CUBIC_BETA);
	return ss > 2u * pcb->mss ? ss : 2u * pcb->mss;
}

static void
cubic_undo(struct tcp_pcb *pcb)
{
	struct dpsock_cc_state *c = &pcb->rec.ccs;

	if (c->w_max_prior > c->w_max)
		c->w_max = c->w_max_prior;
	c->epoch_us = 0;
}

static void
cubic_on_rto(struct tcp_pcb *pcb)
{
	pcb->rec.ccs.epoch_us = 0;
}

static const struct dpsock_cc_ops cc_cubic = {
	.name = "cubic",
	.init = cubic_init,
	.cong_avoid = cubic_cong_avoid,
	.ssthresh = cubic_ssthresh,
	.rtt_sample = cubic_rtt_sample,
	.undo = cubic_undo,
	.on_rto = cubic_on_rto,
};

/* ---- table ------------------------------------------------------------------- */

/* index 0 is the default */
const struct dpsock_cc_ops *const dpsock_cc_table[] = { &cc_cubic, &cc_reno };
const unsigned int dpsock_cc_count = sizeof(dpsock_cc_table) / sizeof(dpsock_cc_table[0]);

int
dpsock_tcp_cc_find(const char *name)
{
	unsigned int i;

	if (name == NULL)
		return -1;
	if (strcmp(name, "newreno") == 0)
		name = "reno";
	for (i = 0; i < dpsock_cc_count; i++)
		if (strcmp(dpsock_cc_table[i]->name, name) == 0)
			return (int)i;
	return -1;
}
