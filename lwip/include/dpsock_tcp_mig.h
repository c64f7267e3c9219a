/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_tcp_mig.h — move one TCP connection from one lwIP instance to
 * another (lwip/tcp_mig.c), for dpsockd's live takeover: a new dpsockd takes
 * every connection of a running one without the peer noticing.
 *
 * Each worker thread has its own lwIP instance (lwip/README.md). On the old
 * instance's thread, dpsock_tcp_mig_export() writes a pcb's whole state into
 * a flat image (struct dpsock_tcp_mig_image, fixed layout, no pointers) and
 * a data area (the bytes the connection still holds); dpsock_tcp_mig_release()
 * then frees the old pcb without a word on the wire. The image can cross a
 * process boundary (shared memory, a socket) to the new instance's thread,
 * where dpsock_tcp_mig_import() recreates the pcb, its queues and its place
 * in the instance (lists, the pcb index of lwip/pcb_index.c, bound port),
 * sending nothing. The caller then sets the callbacks (tcp_arg, tcp_recv,
 * tcp_sent, tcp_err, tcp_poll, ext args) and lets the connection run.
 *
 * What is carried:
 *   - state: SYN_SENT, SYN_RCVD, ESTABLISHED, FIN_WAIT_1, FIN_WAIT_2,
 *     CLOSE_WAIT, CLOSING, LAST_ACK, TIME_WAIT. Not LISTEN (the new process
 *     re-creates its listeners with tcp_bind/tcp_listen: export says
 *     -EINVAL), nor CLOSED. A SYN_SENT pcb (our connect, no answer yet) is
 *     carried with its SYN, queued again as tcp_connect did, sent or not as
 *     it was (the caller sets pcb->connected again). A SYN_RCVD pcb (a peer's handshake, its SYN answered) is carried with
 *     its SYN|ACK: import queues it again as tcp_listen_input did, with the
 *     options the handshake set (MSS, window scaling, SACK, timestamps),
 *     sent or not as it was; the caller gives it its listener (pcb->listener,
 *     callback_arg) and admission accounting, and the peer's ACK completes
 *     the handshake on the new instance;
 *   - IPv4 or IPv6 local and remote addresses and ports (a scoped IPv6
 *     address gets the zone of the importing netif);
 *   - the flags that describe the connection (DPSOCK_TCP_MIG_F_*: Nagle,
 *     window scaling, timestamps, SACK, FIN queued, receive side shut,
 *     delayed or immediate ACK owed, FIN owed by a failed close) and the
 *     socket options SO_KEEPALIVE / SO_REUSEADDR; lwIP's transient flags
 *     (TF_NAGLEMEMERR, and TF_INFR / TF_RTO of its own recovery, which
 *     dpsock replaces) are dropped;
 *   - receiver: rcv_nxt, rcv_wnd, rcv_ann_wnd, rcv_ann_right_edge, the SACK
 *     ranges announced, and the out-of-order queue (ooseq) with its bytes:
 *     it is carried, not dropped, because the peer was told by SACK that it
 *     arrived; a receiver that forgets SACKed data reneges, which RFC 2018
 *     allows but which costs a Linux peer a timeout and which dpsock's own
 *     sender (tcp_rec.c never resends a SACKed segment) does not survive;
 *   - sender: snd_una (lastack), snd_nxt, snd_wl1/2, snd_lbb, snd_wnd,
 *     snd_wnd_max, snd_buf, mss, snd_scale/rcv_scale, cwnd, ssthresh, and
 *     every byte of the send queue from snd_una on (to snd_lbb, the FIN
 *     aside), in order, with where the sent (unacknowledged) part ends and
 *     whether a FIN was queued or sent. Import rebuilds the sent part as
 *     unacked segments with their sequence numbers and the rest as unsent
 *     segments, one MSS (less options) each, as tcp_write() would (a
 *     segmenting netif joins the unsent ones again); snd_queuelen is
 *     recomputed;
 *   - timers and estimators: RTO (ms), lwIP's sa/sv, nrtx, the persist
 *     timer, keepalive (SO_KEEPALIVE, idle/interval/count and the probes
 *     sent), the time since the last segment (keepalive, FIN_WAIT_2,
 *     LAST_ACK and TIME_WAIT timeouts run on from it), ttl, tos, prio;
 *   - timestamps: ts_recent and ts_lastacksent;
 *   - tcp_rec.c / tcp_cc.c: the congestion control module (by name: the
 *     importing build may number them otherwise; an unknown name gets the
 *     instance's default, fresh), its window state (CUBIC's W_max, K,
 *     W_est..., HyStart++'s rounds, NewReno's count), the RTT estimator
 *     (srtt, rttvar, min_rtt, RTO in us, backoff), cwnd validation, what
 *     reordering was seen, and the TCP_INFO totals.
 *
 * What is reset or dropped:
 *   - the loss recovery scoreboard: the new pcb starts in the open state
 *     (no SACKed, lost or retransmitted marks, no recovery or undo episode,
 *     no RACK, TLP or F-RTO state, no pacing or timers of tcp_rec.c). The
 *     rebuilt unacknowledged segments count as sent once at import time and
 *     as retransmitted (Karn: their real send times are unknown here, so
 *     they give no RTT sample). The first SACK or ACK of the peer rebuilds
 *     the picture; a hole the peer reports is found by RACK and resent;
 *   - the retransmission timer restarts (rtime = 0) when data is
 *     unacknowledged: the first retransmission comes one restored RTO after
 *     import, not earlier;
 *   - CUBIC's epoch (a time on the old instance's clock): its curve starts
 *     again from the current window at the next ACK, with W_max kept;
 *     min_rtt's 5-minute window starts again (the next sample replaces it);
 *   - the delivery rate sample in progress (the last rate is kept);
 *   - callbacks, callback_arg, ext args, the poll interval, the listener
 *     link, the netif hint: the caller's (the netif is an import argument);
 *   - pcb->refused_data: never set under dpsock (stack/sock/sock.c's receive
 *     callback always takes the data or aborts), so export refuses a pcb
 *     that has some (-EBUSY) rather than lose it.
 *
 * Timestamps (RFC 7323 PAWS): lwIP's TSval is sys_now(), which
 * lwip/sys_arch.c takes from CLOCK_MONOTONIC in milliseconds: one clock for
 * every process on the host, so the new instance's TSvals continue the old
 * one's and the peer's PAWS check passes with nothing to do. (Moving a
 * connection to another host would need a TSval offset, which lwIP has no
 * field for: not supported.)
 *
 * Acknowledged bytes not reported yet: lwIP frees a sent segment, returns
 * its bytes to snd_buf and reports them through the sent callback only when
 * the whole segment is acknowledged. The image starts at snd_una; the bytes
 * of a partly acknowledged first segment below it are not carried, and
 * snd_acked_unreported says how many: the importer counts them back into
 * snd_buf, and the caller must treat them as acknowledged (as if its sent
 * callback had been called with that many) once its callbacks are set.
 *
 * Byte order: host order for every field (the image is for another process
 * on the same host; a reader of the other byte order sees a wrong magic),
 * addresses in network order. Import checks magic, version and size, and
 * refuses flags or states it does not know (-EINVAL).
 *
 * Every function runs on the thread of the instance it touches.
 */
#ifndef DPSOCK_TCP_MIG_H
#define DPSOCK_TCP_MIG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tcp_pcb;

/* "DTMG" as a little-endian word */
#define DPSOCK_TCP_MIG_MAGIC   0x474d5444u
#define DPSOCK_TCP_MIG_VERSION 1u

/* state (lwIP 2.1.3's numbers, spelt out: the image does not depend on
 * lwIP's enum) */
#define DPSOCK_TCP_MIG_SYN_SENT    2u /* our SYN sent (or queued), no answer yet */
#define DPSOCK_TCP_MIG_SYN_RCVD    3u /* a peer's handshake, its SYN answered */
#define DPSOCK_TCP_MIG_ESTABLISHED 4u
#define DPSOCK_TCP_MIG_FIN_WAIT_1  5u
#define DPSOCK_TCP_MIG_FIN_WAIT_2  6u
#define DPSOCK_TCP_MIG_CLOSE_WAIT  7u
#define DPSOCK_TCP_MIG_CLOSING     8u
#define DPSOCK_TCP_MIG_LAST_ACK    9u
#define DPSOCK_TCP_MIG_TIME_WAIT   10u

/* flags */
#define DPSOCK_TCP_MIG_F_ACK_DELAY 0x0001u /* a delayed ACK is owed (TF_ACK_DELAY) */
#define DPSOCK_TCP_MIG_F_ACK_NOW   0x0002u /* an ACK is owed now (TF_ACK_NOW) */
#define DPSOCK_TCP_MIG_F_CLOSEPEND 0x0004u /* close could not queue its FIN yet (TF_CLOSEPEND) */
#define DPSOCK_TCP_MIG_F_RXCLOSED  0x0008u /* receive side shut (TF_RXCLOSED) */
#define DPSOCK_TCP_MIG_F_FIN       0x0010u /* our FIN was queued, perhaps sent or acked (TF_FIN) */
#define DPSOCK_TCP_MIG_F_NODELAY   0x0020u /* Nagle off (TF_NODELAY) */
#define DPSOCK_TCP_MIG_F_WND_SCALE 0x0040u /* window scaling negotiated (TF_WND_SCALE) */
#define DPSOCK_TCP_MIG_F_TIMESTAMP 0x0080u /* timestamps negotiated (TF_TIMESTAMP) */
#define DPSOCK_TCP_MIG_F_SACK      0x0100u /* SACK negotiated (TF_SACK) */
#define DPSOCK_TCP_MIG_F_KEEPALIVE 0x0200u /* SO_KEEPALIVE (SOF_KEEPALIVE) */
#define DPSOCK_TCP_MIG_F_REUSEADDR 0x0400u /* SO_REUSEADDR (SOF_REUSEADDR) */
#define DPSOCK_TCP_MIG_F_ALL       0x07ffu

/* snd_fin */
#define DPSOCK_TCP_MIG_FIN_NONE    0u /* no FIN in the send queue (none, or acknowledged) */
#define DPSOCK_TCP_MIG_FIN_QUEUED  1u /* after the data, not sent yet */
#define DPSOCK_TCP_MIG_FIN_SENT    2u /* after the data, sent, not acknowledged */

struct dpsock_tcp_mig_image {
    /* ---- what the image is (checked first) ---- */
    uint32_t magic;               /* DPSOCK_TCP_MIG_MAGIC */
    uint16_t version;             /* DPSOCK_TCP_MIG_VERSION */
    uint16_t size;                /* sizeof(struct dpsock_tcp_mig_image) */
    uint32_t data_len;            /* bytes of the data area (layout below) */
    uint32_t flags;               /* DPSOCK_TCP_MIG_F_* */

    /* ---- the connection ---- */
    uint8_t family;               /* 4 or 6 */
    uint8_t state;                /* DPSOCK_TCP_MIG_* */
    uint8_t prio, ttl, tos;
    uint8_t snd_scale, rcv_scale; /* window shifts (0 without scaling) */
    uint8_t nrtx;                 /* retransmissions of the current RTO episode */
    uint16_t local_port, remote_port;
    uint16_t mss;                 /* send MSS */
    uint16_t slow_interval_ms;    /* the writer's TCP_SLOW_INTERVAL: sa, sv's tick */
    uint8_t local_addr[16];       /* network order; IPv4 in the first 4 bytes */
    uint8_t remote_addr[16];

    /* ---- receiver ---- */
    uint32_t rcv_nxt, rcv_wnd, rcv_ann_wnd, rcv_ann_right_edge;
    uint32_t rcv_sacks[4][2];     /* SACK ranges announced [left, right); left == right: none */
    uint32_t ooseq_count;         /* out-of-order segments held */
    uint32_t ooseq_bytes;         /* their data bytes */

    /* ---- sender ---- */
    uint32_t snd_una;             /* lastack: the first byte of the data area */
    /* snd_lbb: as lwIP keeps it, the end of the queue (the FIN counted),
     * or one less when tcp_send_fin put the FIN on a queued segment (it
     * does not count it then) */
    uint32_t snd_nxt, snd_wl1, snd_wl2, snd_lbb;
    uint32_t snd_wnd, snd_wnd_max;
    uint32_t snd_buf;             /* as the writer's pcb had it */
    uint32_t snd_buf_size;        /* the writer's TCP_SND_BUF */
    uint32_t snd_data_len;        /* data bytes from snd_una (the FIN not counted) */
    uint32_t snd_unacked_len;     /* the first snd_unacked_len of them were sent */
    uint32_t snd_acked_unreported; /* acknowledged below snd_una, not yet reported (above) */
    uint32_t cwnd, ssthresh;
    uint32_t lwip_bytes_acked;    /* lwIP's own appropriate-byte-counting state */
    uint8_t snd_fin;              /* DPSOCK_TCP_MIG_FIN_* */
    uint8_t persist_cnt, persist_backoff, persist_probe;

    /* ---- timers ---- */
    uint32_t rto_ms;              /* retransmission timeout, backoff included */
    int16_t sa, sv;               /* lwIP's RTT estimator, in slow_interval_ms ticks */
    uint32_t idle_ms;             /* since the last segment received (TIME_WAIT: its age) */
    uint32_t keep_idle, keep_intvl, keep_cnt; /* ms, ms, probes */
    uint8_t keep_cnt_sent;        /* keepalive probes sent unanswered */
    uint8_t pad0[3];

    /* ---- timestamps (RFC 7323) ---- */
    uint32_t ts_recent;           /* the peer's TSval we echo */
    uint32_t ts_lastacksent;      /* rcv_nxt of our last ACK */

    /* ---- loss recovery and RTT (tcp_rec.c) ---- */
    char cc_name[16];             /* congestion control module, NUL-terminated */
    uint32_t srtt_us, rttvar_us, min_rtt_us, rto_us;
    uint8_t backoff;              /* RTO doublings */
    uint8_t reord_seen, reo_wnd_steps, reo_wnd_persist;
    uint8_t cwnd_limited;         /* cwnd validation: the window was what held data back */
    uint8_t pad1[3];
    uint32_t max_inflight;
    uint32_t total_retrans, dsack_dups, reord_events, segs_out, data_segs_out;
    uint32_t pad2;
    uint64_t bytes_sent, bytes_retrans, bytes_acked, delivered, delivery_rate;

    /* ---- congestion control state (tcp_cc.c) ---- */
    /* CUBIC, in segments: IEEE 754 binary64 bit patterns */
    uint64_t cubic_w_max, cubic_w_max_prior, cubic_k, cubic_w_est, cubic_cwnd_prior,
             cubic_acc_bytes;
    /* HyStart++ */
    uint32_t hs_round_end, hs_cur_round_min_us, hs_last_round_min_us, hs_css_baseline_us;
    uint8_t hs_rtt_samples, hs_css_rounds, hs_in_css, hs_done;
    /* NewReno */
    uint32_t reno_bytes_acked;
};

/*
 * The data area (data_len bytes, no alignment required):
 *   snd_data_len bytes   the send queue from snd_una
 *   ooseq_count x struct dpsock_tcp_mig_ooseq
 *   ooseq_bytes bytes    the out-of-order segments' data, in their order
 */
struct dpsock_tcp_mig_ooseq {
    uint32_t seq;                 /* sequence number of its first byte */
    uint32_t len;                 /* data bytes */
    uint32_t fin;                 /* 1: a FIN follows its data */
    uint32_t reserved;            /* 0 */
};

/* Bytes of the data area dpsock_tcp_mig_export() writes for pcb (0 for a
 * pcb it refuses). */
size_t dpsock_tcp_mig_data_size(const struct tcp_pcb *pcb);

/*
 * Write pcb's state into *img and its bytes into data (cap bytes); the data
 * area's length goes to *data_len (also on -ENOBUFS: the size needed).
 * pcb is not changed. Returns 0 or
 *   -EINVAL   a LISTEN or CLOSED pcb, or queues that are not what lwIP
 *             builds (not contiguous, a SYN queued but the handshake's own);
 *   -EBUSY    data lwIP holds back from the application (refused_data);
 *   -ENOBUFS  cap is too small.
 */
int dpsock_tcp_mig_export(const struct tcp_pcb *pcb, struct dpsock_tcp_mig_image *img,
                          void *data, size_t cap, size_t *data_len);

/*
 * Free pcb (exported, on its old instance) without sending anything: no
 * RST, no FIN, not even a delayed ACK, and without calling its err
 * callback. This is tcp_abandon(pcb, 0) after clearing the owed ACK and the
 * err callback; ext args' destroy callbacks still run (the old stack learns
 * that its pcb is gone). Not for listeners.
 */
void dpsock_tcp_mig_release(struct tcp_pcb *pcb);

/*
 * Recreate the connection of img in the calling thread's instance, bound to
 * netif_idx (netif_get_index(); NETIF_NO_INDEX: routed), on the active list
 * (TIME_WAIT list for TIME_WAIT) and in the pcb index, its local port taken
 * (tcp_bind of it fails, tcp_connect does not pick it). Allocates as
 * tcp_alloc(img->prio) does (it may free TIME_WAIT or lower-priority pcbs of
 * this instance when memory runs out, as for any new pcb). Sends nothing;
 * the retransmission timer runs when data is unacknowledged. No callbacks
 * are set (tcp_recv's default: data acknowledged and dropped). A TIME_WAIT
 * pcb keeps the time it already waited, but never expires before this
 * instance's newest TIME_WAIT pcb (the list stays in arrival order).
 *
 * Returns the pcb, or NULL with *err (may be NULL) set to
 *   -EINVAL      not an image this build reads (magic, version, size), or
 *                fields that do not hold together (state, flags, lengths,
 *                sequence numbers, address family, out-of-order segments);
 *   -EADDRINUSE  the 4-tuple is in this instance already (active or
 *                TIME_WAIT);
 *   -ENOMEM      no memory for the pcb or its segments (nothing is kept).
 */
struct tcp_pcb *dpsock_tcp_mig_import(const struct dpsock_tcp_mig_image *img, const void *data,
                                      size_t data_len, uint8_t netif_idx, int *err);

#ifdef __cplusplus
}
#endif

#endif /* DPSOCK_TCP_MIG_H */
