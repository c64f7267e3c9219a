/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_tcp_rec.h — the TCP sender's loss recovery, congestion control and
 * RTT measurement that dpsock puts in place of lwIP 2.1.3's (lwip/tcp_rec.c,
 * lwip/tcp_cc.c; README.md says why and how it is hooked in).
 *
 * Included by lwIP's tcp.h and tcp_priv.h (transform.py adds the include):
 * this header defines the state lwIP's tcp_pcb and tcp_seg carry for it, the
 * hooks lwIP calls, and the functions the stack calls. It must not include
 * lwIP headers (tcp.h includes it).
 *
 * The scoreboard counts bytes. Every hook runs on the instance's thread.
 */
#ifndef DPSOCK_TCP_REC_H
#define DPSOCK_TCP_REC_H

#include <stdbool.h>
#include <stdint.h>

#include "stats_segment.h"

struct tcp_pcb;
struct tcp_seg;
struct dpsock_tcp_info;

/* SACK blocks kept from one received segment (4 fit in 40 option bytes) */
#define DPSOCK_TCP_SACK_RX_MAX 4

/* Per segment (struct tcp_seg's `rec`). */
#define DPSOCK_SEG_SACKED      0x01u /* the peer SACKed it */
#define DPSOCK_SEG_LOST        0x02u /* deemed lost (counted in lost_out) */
#define DPSOCK_SEG_RETRANS_OUT 0x04u /* a retransmission is in flight (retrans_out) */
#define DPSOCK_SEG_EVER_RETRANS 0x08u /* retransmitted at least once */
#define DPSOCK_SEG_APP_LIMITED 0x10u /* sent while the sender was app-limited */

struct dpsock_seg_rec {
	uint64_t xmit_us;       /* time of the latest transmission */
	uint64_t delivered;     /* connection's `delivered` when it was sent */
	uint64_t delivered_us;  /* connection's `delivered_us` when it was sent */
	uint64_t first_tx_us;   /* connection's `first_tx_us` when it was sent */
	uint32_t tsval;         /* TSval of the latest transmission (ms clock) */
	uint8_t flags;          /* DPSOCK_SEG_* */
};

/* Recovery states, numbered as Linux's TCP_CA_* (tcp_info's ca_state). */
enum dpsock_ca_state {
	DPSOCK_CA_OPEN = 0,
	DPSOCK_CA_DISORDER = 1, /* SACKs or duplicate ACKs seen, nothing lost */
	DPSOCK_CA_RECOVERY = 3, /* fast recovery (RFC 6675 + PRR) */
	DPSOCK_CA_LOSS = 4,     /* after a retransmission timeout */
};

/* What a congestion control module keeps per connection (tcp_cc.c). */
struct dpsock_cc_state {
	/* CUBIC (RFC 9438), in segments */
	double w_max, w_max_prior, k, w_est, cwnd_prior, acc_bytes;
	uint64_t epoch_us;
	/* HyStart++ (RFC 9406) */
	uint32_t round_end, cur_round_min_us, last_round_min_us, css_baseline_us;
	uint8_t rtt_samples, css_rounds, in_css, hystart_done;
	/* NewReno congestion avoidance */
	uint32_t bytes_acked;
};

/* Per connection (struct tcp_pcb's `rec`). */
struct dpsock_tcp_rec {
	/* scoreboard: bytes of unacknowledged data SACKed, deemed lost,
	 * retransmitted and still in flight, lost and not retransmitted yet
	 * (tcp_rec.c's seg_flags() keeps them) */
	uint32_t sacked_out, lost_out, retrans_out, lost_pending;
	uint32_t fack;                 /* highest SACKed or ACKed sequence (RACK.fack) */
	struct tcp_seg *hint;          /* SACK walk start (dropped before it is freed) */
	uint32_t sack_cache[DPSOCK_TCP_SACK_RX_MAX][2]; /* blocks already applied */
	uint8_t n_sack_cache;

	uint8_t ca_state;              /* enum dpsock_ca_state */
	uint8_t cc;                    /* index in tcp_cc.c's table */
	uint8_t frto;                  /* 1: after an RTO, F-RTO (RFC 5682) running */
	uint8_t new_data_only;         /* F-RTO step 2: send new data, no retransmission */
	uint8_t reord_seen, reo_wnd_steps, reo_wnd_persist;
	uint8_t tlp_retrans, tlp_force, cwnd_limited, dsack_this_ack;
	uint8_t backoff;
	uint8_t seq_init;              /* fack, cwnd_usage_seq set from the first ACK */

	uint32_t high_seq;             /* recovery point: snd_nxt when recovery began */
	/* undo (RFC 2883 D-SACK, RFC 3522 Eifel): while undo_valid, every
	 * retransmission since undo_marker adds one to undo_retrans and every
	 * one proven unnecessary takes one off; at zero the reduction goes */
	uint8_t undo_valid;
	int32_t undo_retrans;
	/* TSval of the episode's first retransmission (while undo_ts_set):
	 * an ACK that echoes an older one was sent before any retransmission
	 * arrived, so the reduction goes (Eifel, as Linux's retrans_stamp) */
	uint8_t undo_ts_set;
	uint32_t undo_tsval;
	uint32_t undo_marker, prior_cwnd, prior_ssthresh;
	/* the episode's latest retransmissions [seq, end): a D-SACK counts
	 * only for what was really sent twice, not a network duplicate */
#define DPSOCK_REXMIT_LOG 8
	uint32_t rexmit_log[DPSOCK_REXMIT_LOG][2];
	uint8_t rexmit_log_next;
	/* PRR (RFC 6937) */
	uint32_t prr_delivered, prr_out, recover_fs;

	/* RACK (RFC 8985) */
	uint64_t rack_xmit_us;
	uint32_t rack_end_seq, rack_rtt_us, dsack_round;
	uint8_t rack_valid, dsack_round_valid;
	/* TLP (RFC 8985 section 7) */
	uint32_t tlp_high_seq;         /* snd_nxt after the probe (while tlp_valid) */
	uint8_t tlp_valid;
	/* probe after an RTO: snd_una when it went (while probe_valid) */
	uint32_t probe_una;
	uint8_t probe_valid;

	/* RTT in microseconds (RFC 6298 from the connection's own send times) */
	uint32_t srtt_us, rttvar_us, min_rtt_us, rto_us;
	uint64_t min_rtt_stamp_us;

	/* cwnd validation (is the sender using its window?) */
	uint32_t max_inflight, cwnd_usage_seq;

	/* delivery rate estimation (draft-cheng-iccrg-delivery-rate-estimation) */
	uint64_t delivered, delivered_us, first_tx_us, app_limited;
	uint64_t rs_prior_delivered;
	uint32_t rs_send_elapsed, rs_ack_elapsed;
	uint8_t rs_valid, rs_app_limited, rate_app_limited;
	uint64_t delivery_rate;        /* bytes/s of the latest useful sample */

	/* pacing (as Linux paces without fq): next earliest send */
	uint64_t pacing_rate, next_send_us;

	/* timers (tcp_rec.c's heap): REO or TLP, and pacing */
	uint64_t timer_us, pace_us;
	uint32_t heap_idx;             /* 1 + index in the heap, 0: not armed */
	uint8_t timer_kind;

	/* totals for TCP_INFO and the socket view */
	uint32_t total_retrans, dsack_dups, reord_events, segs_out, data_segs_out;
	uint64_t bytes_sent, bytes_retrans, bytes_acked;

	struct dpsock_cc_state ccs;
};

/* Options of the segment being processed (tcp_parseopt fills it). */
struct dpsock_tcp_rx_opts {
	uint8_t n_sack;
	uint8_t ts;                    /* the segment carried a timestamp option */
	uint32_t tsecr;
	uint32_t sack[DPSOCK_TCP_SACK_RX_MAX][2];
};
extern _Thread_local struct dpsock_tcp_rx_opts dpsock_tcp_rx_opts;

/* Recovery work of this thread's instance: DPSOCK_TCP_REC_COUNTERS of
 * abi/stats_segment.h (the worker mirrors them into its counters). */
#define DPSOCK_TCP_REC_FIELD(n, h) uint64_t n;
struct dpsock_tcp_rec_stats {
	DPSOCK_TCP_REC_COUNTERS(DPSOCK_TCP_REC_FIELD)
};
#undef DPSOCK_TCP_REC_FIELD
/* Count this thread's recovery work straight into @p st (the worker's
 * stats block, whose DPSOCK_TCP_REC_COUNTERS have this layout; the thread
 * is their only writer); NULL: a private set (no worker). */
void dpsock_tcp_rec_stats_bind(struct dpsock_tcp_rec_stats *st);
/* The set in use (tcp_cc.c counts there too; tests without a worker read it). */
struct dpsock_tcp_rec_stats *dpsock_tcp_rec_stats_get(void);

/* ---- hooks lwIP calls (transform.py's RECOVERY_EDITS) ---- */
void dpsock_tcp_rec_pcb_init(struct tcp_pcb *pcb);
void dpsock_tcp_rec_pcb_free(struct tcp_pcb *pcb);
void dpsock_tcp_rec_purge(struct tcp_pcb *pcb);
void dpsock_tcp_rec_seg_init(struct tcp_seg *seg);
void dpsock_tcp_rec_sent(struct tcp_pcb *pcb, struct tcp_seg *seg);
void dpsock_tcp_rec_syn_acked(struct tcp_pcb *pcb, struct tcp_seg *syn);
void dpsock_tcp_rec_on_ack(struct tcp_pcb *pcb, uint32_t ackno, uint32_t tcplen, int wnd_changed);
void dpsock_tcp_rec_after_ack(struct tcp_pcb *pcb);
int dpsock_tcp_rec_rto(struct tcp_pcb *pcb);
void dpsock_tcp_rec_output(struct tcp_pcb *pcb);
int dpsock_tcp_rec_can_send(struct tcp_pcb *pcb, const struct tcp_seg *seg, uint32_t wnd);
int dpsock_tcp_rec_rwnd_limited(const struct tcp_pcb *pcb, const struct tcp_seg *seg);
void dpsock_tcp_rec_output_done(struct tcp_pcb *pcb);
/* tcp_out.c (appended by transform.py): send one queued segment again, in
 * place. ERR_INPROGRESS when its buffer is still lent to the NIC, ERR_RTE
 * without a route. */
signed char dpsock_tcp_output_seg(struct tcp_pcb *pcb, struct tcp_seg *seg);

/* ---- congestion control (tcp_cc.c) ---- */
struct dpsock_cc_ops {
	const char *name;
	void (*init)(struct tcp_pcb *pcb);
	/* ACK of acked new bytes outside recovery, the sender cwnd-limited */
	void (*cong_avoid)(struct tcp_pcb *pcb, uint32_t acked, uint64_t now_us);
	/* the ssthresh after a congestion event (bytes) */
	uint32_t (*ssthresh)(struct tcp_pcb *pcb);
	/* an RTT sample (us), every ACK that has one */
	void (*rtt_sample)(struct tcp_pcb *pcb, uint32_t rtt_us, uint64_t now_us);
	/* the reduction was undone: restore what ssthresh() changed */
	void (*undo)(struct tcp_pcb *pcb);
	/* a retransmission timeout (after ssthresh()) */
	void (*on_rto)(struct tcp_pcb *pcb);
};
extern const struct dpsock_cc_ops *const dpsock_cc_table[];
extern const unsigned int dpsock_cc_count;
/* Index of a module by name ("cubic", "reno" or its alias "newreno"), or -1. */
int dpsock_tcp_cc_find(const char *name);

/* ---- for the stack ---- */
/* Congestion control of new connections of this thread's instance: 0 or -ENOENT. */
int dpsock_tcp_cc_set_default(const char *name);
/* Switch one connection's module (as TCP_CONGESTION): 0 or -ENOENT. */
int dpsock_tcp_cc_set(struct tcp_pcb *pcb, const char *name);
const char *dpsock_tcp_cc_name(const struct tcp_pcb *pcb);
/* Time this thread's TCP by the TSC of frequency tsc_hz (x86-64; 0 or
 * elsewhere: CLOCK_MONOTONIC). Call before the first connection. */
void dpsock_tcp_rec_clock_tsc(uint64_t tsc_hz);
/* Pacing of this instance's connections on or off (default off). */
void dpsock_tcp_pacing_set_default(bool on);
/* Fill @p out (Linux tcp_info's meaning, see dpsock.h). */
void dpsock_tcp_rec_info(const struct tcp_pcb *pcb, struct dpsock_tcp_info *out);
/* Run the recovery timers that are due (RACK, TLP, pacing); cheap when
 * none is. The worker loop calls it every iteration. */
void dpsock_tcp_rec_poll(void);
/* Microseconds until the next recovery timer (UINT64_MAX: none), for a
 * worker deciding how long it may sleep. */
uint64_t dpsock_tcp_rec_sleep_us(void);

#endif /* DPSOCK_TCP_REC_H */
