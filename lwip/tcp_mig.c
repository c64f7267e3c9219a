/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_mig.c — one TCP pcb out of one lwIP instance into a flat image, and
 * back into another instance (another thread, perhaps another process), so
 * that dpsockd's live takeover moves every connection without the peer
 * noticing. What is carried, what is not and why:
 * include/dpsock_tcp_mig.h.
 *
 * Export reads the pcb and walks its queues (unacked, then unsent: lwIP
 * keeps both in sequence order, back to back) and its out-of-order queue.
 * Import allocates a pcb as tcp_alloc() does, fills it, rebuilds the
 * segments as tcp_write() and tcp_create_segment() (tcp_out.c, static
 * there) make them: one PBUF_RAM pbuf each with room for the link, IP and
 * TCP headers, the option space after the TCP header, the data after it;
 * the TCP header filled but for ackno, window and checksum, which
 * tcp_output_segment() writes on every (re)transmission. Out-of-order
 * segments are rebuilt as tcp_input() leaves a received segment: the
 * payload is the data, the header (sequence number in host order, as
 * tcp_input converts it) in the pbuf just before it. The pcb then goes on
 * the active or TIME_WAIT list with TCP_REG, as lwIP's own transitions do
 * (transform_perf.py makes TCP_REG the pcb index's dpsock_tcp_list_add: the
 * hash table and back links follow).
 *
 * tcp_rec.c's scoreboard starts clean. The rebuilt unacknowledged segments
 * are stamped through dpsock_tcp_rec_sent(), the hook lwIP calls after a
 * transmission, so that their send times are on this instance's clock (the
 * TSC or CLOCK_MONOTONIC: tcp_rec.c's choice), and marked retransmitted:
 * the peer's ACKs of them then give no RTT sample (their real send time is
 * unknown here) and their next transmission counts as a retransmission.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "lwip/opt.h"
#include "lwip/def.h"
#include "lwip/ip_addr.h"
#include "lwip/memp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

#include "dpsock_lwip_pcb_index.h"
#include "dpsock_tcp_mig.h"
#include "dpsock_tcp_rec.h"

#if !LWIP_IPV4 || !LWIP_IPV6 || !LWIP_TCP_TIMESTAMPS || !LWIP_WND_SCALE || !LWIP_TCP_SACK_OUT || \
    !TCP_QUEUE_OOSEQ || !LWIP_TCP_KEEPALIVE
#error "tcp_mig.c expects dpsock's lwipopts.h (dual stack, timestamps, scaling, SACK, ooseq, keepalive)"
#endif
#if LWIP_TCP_MAX_SACK_NUM < 4
#error "tcp_mig.c carries 4 SACK ranges"
#endif
#if TCP_CHECKSUM_ON_COPY
#error "tcp_mig.c builds segments without a data checksum (TCP_CHECKSUM_ON_COPY)"
#endif
#ifdef LWIP_HOOK_TCP_OUT_TCPOPT_LENGTH
#error "tcp_mig.c computes option lengths without LWIP_HOOK_TCP_OUT_TCPOPT_LENGTH"
#endif

/* the layout is part of the format: a change here is a new version */
_Static_assert(sizeof(struct dpsock_tcp_mig_image) == 400, "image layout changed: bump the version");
_Static_assert(sizeof(struct dpsock_tcp_mig_ooseq) == 16, "ooseq descriptor layout changed");
_Static_assert(sizeof(double) == sizeof(uint64_t), "CUBIC state is carried as binary64");

#define OOSEQ_DESC ((uint32_t)sizeof(struct dpsock_tcp_mig_ooseq))

/* lwIP's pcb flags and their image bits */
static const struct {
    tcpflags_t tf;
    uint32_t mig;
} flag_map[] = {
    { TF_ACK_DELAY, DPSOCK_TCP_MIG_F_ACK_DELAY },
    { TF_ACK_NOW, DPSOCK_TCP_MIG_F_ACK_NOW },
    { TF_CLOSEPEND, DPSOCK_TCP_MIG_F_CLOSEPEND },
    { TF_RXCLOSED, DPSOCK_TCP_MIG_F_RXCLOSED },
    { TF_FIN, DPSOCK_TCP_MIG_F_FIN },
    { TF_NODELAY, DPSOCK_TCP_MIG_F_NODELAY },
    { TF_WND_SCALE, DPSOCK_TCP_MIG_F_WND_SCALE },
    { TF_TIMESTAMP, DPSOCK_TCP_MIG_F_TIMESTAMP },
    { TF_SACK, DPSOCK_TCP_MIG_F_SACK },
};

static bool
state_to_mig(enum tcp_state s, uint8_t *out)
{
    switch (s) {
    case SYN_SENT: *out = DPSOCK_TCP_MIG_SYN_SENT; return true;
    case SYN_RCVD: *out = DPSOCK_TCP_MIG_SYN_RCVD; return true;
    case ESTABLISHED: *out = DPSOCK_TCP_MIG_ESTABLISHED; return true;
    case FIN_WAIT_1: *out = DPSOCK_TCP_MIG_FIN_WAIT_1; return true;
    case FIN_WAIT_2: *out = DPSOCK_TCP_MIG_FIN_WAIT_2; return true;
    case CLOSE_WAIT: *out = DPSOCK_TCP_MIG_CLOSE_WAIT; return true;
    case CLOSING: *out = DPSOCK_TCP_MIG_CLOSING; return true;
    case LAST_ACK: *out = DPSOCK_TCP_MIG_LAST_ACK; return true;
    case TIME_WAIT: *out = DPSOCK_TCP_MIG_TIME_WAIT; return true;
    default: return false;
    }
}

static bool
state_from_mig(uint8_t m, enum tcp_state *out)
{
    switch (m) {
    case DPSOCK_TCP_MIG_SYN_SENT: *out = SYN_SENT; return true;
    case DPSOCK_TCP_MIG_SYN_RCVD: *out = SYN_RCVD; return true;
    case DPSOCK_TCP_MIG_ESTABLISHED: *out = ESTABLISHED; return true;
    case DPSOCK_TCP_MIG_FIN_WAIT_1: *out = FIN_WAIT_1; return true;
    case DPSOCK_TCP_MIG_FIN_WAIT_2: *out = FIN_WAIT_2; return true;
    case DPSOCK_TCP_MIG_CLOSE_WAIT: *out = CLOSE_WAIT; return true;
    case DPSOCK_TCP_MIG_CLOSING: *out = CLOSING; return true;
    case DPSOCK_TCP_MIG_LAST_ACK: *out = LAST_ACK; return true;
    case DPSOCK_TCP_MIG_TIME_WAIT: *out = TIME_WAIT; return true;
    default: return false;
    }
}

static inline uint32_t seg_seq(const struct tcp_seg *s) { return lwip_ntohl(s->tcphdr->seqno); }
static inline bool seg_fin(const struct tcp_seg *s) { return (TCPH_FLAGS(s->tcphdr) & TCP_FIN) != 0; }

static uint64_t
dbl_bits(double d)
{
    uint64_t u;

    memcpy(&u, &d, sizeof(u));
    return u;
}

static double
bits_dbl(uint64_t u)
{
    double d;

    memcpy(&d, &u, sizeof(d));
    return d;
}

/* ---------------------------------------------------------------------- */
/* export */

/* What the send queue holds from snd_una: data bytes, how many of them
 * were sent, the FIN. Checks that the queues are what lwIP builds: in
 * sequence, back to back, no SYN, a FIN only at the very end. */
struct sndq {
    uint32_t data_len, unacked_len, acked_unreported;
    uint8_t fin;
};

static int
sndq_scan(const struct tcp_pcb *pcb, struct sndq *q)
{
    const struct tcp_seg *lists[2] = { pcb->unacked, pcb->unsent }, *seg;
    uint32_t next = pcb->lastack, una = pcb->lastack;
    bool first = true, fin_seen = false;
    int l;

    memset(q, 0, sizeof(*q));
    for (l = 0; l < 2; l++) {
        for (seg = lists[l]; seg != NULL; seg = seg->next) {
            uint32_t seq = seg_seq(seg), end = seq + seg->len;

            if (fin_seen || (TCPH_FLAGS(seg->tcphdr) & TCP_SYN) || seg->p == NULL ||
                seg->p->tot_len < seg->len)
                return -EINVAL;
            if (first) {
                /* the head may be acknowledged in part (lwIP frees a
                 * segment only when all of it is), never past its end
                 * (it would have been freed) */
                if (TCP_SEQ_GT(seq, una) || TCP_SEQ_LEQ(end + (seg_fin(seg) ? 1 : 0), una))
                    return -EINVAL;
                q->acked_unreported = una - seq;
                first = false;
            } else if (seq != next) {
                return -EINVAL;
            }
            next = end;
            if (TCP_SEQ_GT(end, una))
                q->data_len += TCP_SEQ_GT(seq, una) ? seg->len : end - una;
            if (seg_fin(seg)) {
                fin_seen = true;
                next = end + 1;
                q->fin = l == 0 ? DPSOCK_TCP_MIG_FIN_SENT : DPSOCK_TCP_MIG_FIN_QUEUED;
            }
            if (l == 0)
                q->unacked_len = q->data_len;
        }
    }
    /* the queue ends at snd_lbb (empty: everything was acknowledged),
     * or one after it with a FIN: tcp_send_fin sets FIN on the last unsent
     * segment without counting it in snd_lbb */
    if (first)
        next = una;
    if (next != pcb->snd_lbb && !((pcb->flags & TF_FIN) && next == pcb->snd_lbb + 1))
        return -EINVAL;
    return 0;
}

static int
export_check(const struct tcp_pcb *pcb, struct sndq *q, uint32_t *ooseq_n, uint32_t *ooseq_bytes,
             uint8_t *state)
{
    const struct tcp_seg *seg;
    int rc;

    if (pcb == NULL || !state_to_mig(pcb->state, state))
        return -EINVAL; /* a tcp_pcb_listen is smaller: read nothing else of it */
    if (pcb->refused_data != NULL)
        return -EBUSY;
    if (pcb->state == SYN_RCVD || pcb->state == SYN_SENT) {
        /* the SYN|ACK (SYN_RCVD: tcp_listen_input queued it) or the SYN
         * (SYN_SENT: tcp_connect), sent or not yet, at lastack, the ISS,
         * and nothing else: carried as the state */
        u8_t want = pcb->state == SYN_RCVD ? (TCP_SYN | TCP_ACK) : TCP_SYN;

        seg = pcb->unacked != NULL ? pcb->unacked : pcb->unsent;
        if (seg == NULL || (pcb->unacked != NULL && pcb->unsent != NULL) || seg->next != NULL ||
            (TCPH_FLAGS(seg->tcphdr) & (TCP_SYN | TCP_ACK)) != want || seg->len != 0 ||
            seg_seq(seg) != pcb->lastack ||
            pcb->snd_lbb != pcb->lastack + 1 || pcb->ooseq != NULL)
            return -EINVAL;
        memset(q, 0, sizeof(*q));
        *ooseq_n = *ooseq_bytes = 0;
        return 0;
    }
    rc = sndq_scan(pcb, q);
    if (rc != 0)
        return rc;
    *ooseq_n = *ooseq_bytes = 0;
    for (seg = pcb->ooseq; seg != NULL; seg = seg->next) {
        if (seg->p == NULL || seg->p->tot_len < seg->len)
            return -EINVAL;
        (*ooseq_n)++;
        *ooseq_bytes += seg->len;
    }
    return 0;
}

static size_t
area_size(const struct sndq *q, uint32_t ooseq_n, uint32_t ooseq_bytes)
{
    return (size_t)q->data_len + (size_t)ooseq_n * OOSEQ_DESC + ooseq_bytes;
}

size_t
dpsock_tcp_mig_data_size(const struct tcp_pcb *pcb)
{
    struct sndq q;
    uint32_t n, bytes;
    uint8_t st;

    LWIP_ASSERT_CORE_LOCKED();
    if (export_check(pcb, &q, &n, &bytes, &st) != 0)
        return 0;
    return area_size(&q, n, bytes);
}

/* Copy the send queue's bytes from snd_una on. */
static void
copy_sndq(const struct tcp_pcb *pcb, uint8_t *out)
{
    const struct tcp_seg *lists[2] = { pcb->unacked, pcb->unsent }, *seg;
    uint32_t una = pcb->lastack;
    int l;

    for (l = 0; l < 2; l++) {
        for (seg = lists[l]; seg != NULL; seg = seg->next) {
            uint32_t seq = seg_seq(seg), skip = 0, n;
            /* the data is the last seg->len bytes of the chain: after a
             * transmission the first pbuf also holds the IP and link
             * headers (tcp_zero_window_probe reads it the same way) */
            u16_t off = (u16_t)(seg->p->tot_len - seg->len);

            if (TCP_SEQ_LEQ(seq + seg->len, una))
                continue;
            if (TCP_SEQ_LT(seq, una))
                skip = una - seq;
            n = seg->len - skip;
            pbuf_copy_partial(seg->p, out, (u16_t)n, (u16_t)(off + skip));
            out += n;
        }
    }
}

int
dpsock_tcp_mig_export(const struct tcp_pcb *pcb, struct dpsock_tcp_mig_image *img, void *data,
                      size_t cap, size_t *data_len)
{
    const struct dpsock_tcp_rec *r;
    const struct dpsock_cc_state *c;
    const struct tcp_seg *seg;
    struct sndq q;
    uint32_t ooseq_n, ooseq_bytes, fl = 0;
    uint8_t state, *out = data;
    size_t need;
    unsigned int i;
    int rc;

    LWIP_ASSERT_CORE_LOCKED();
    rc = export_check(pcb, &q, &ooseq_n, &ooseq_bytes, &state);
    if (rc != 0)
        return rc;
    need = area_size(&q, ooseq_n, ooseq_bytes);
    if (data_len != NULL)
        *data_len = need;
    if (need > UINT32_MAX)
        return -EINVAL;
    if (need > cap || (need > 0 && data == NULL))
        return -ENOBUFS;

    memset(img, 0, sizeof(*img));
    img->magic = DPSOCK_TCP_MIG_MAGIC;
    img->version = DPSOCK_TCP_MIG_VERSION;
    img->size = (uint16_t)sizeof(*img);
    img->data_len = (uint32_t)need;

    for (i = 0; i < LWIP_ARRAYSIZE(flag_map); i++)
        if (pcb->flags & flag_map[i].tf)
            fl |= flag_map[i].mig;
    if (ip_get_option(pcb, SOF_KEEPALIVE))
        fl |= DPSOCK_TCP_MIG_F_KEEPALIVE;
    if (ip_get_option(pcb, SOF_REUSEADDR))
        fl |= DPSOCK_TCP_MIG_F_REUSEADDR;
    img->flags = fl;

    img->state = state;
    img->prio = pcb->prio;
    img->ttl = pcb->ttl;
    img->tos = pcb->tos;
    img->snd_scale = pcb->snd_scale;
    img->rcv_scale = pcb->rcv_scale;
    img->nrtx = pcb->nrtx;
    img->local_port = pcb->local_port;
    img->remote_port = pcb->remote_port;
    img->mss = pcb->mss;
    img->slow_interval_ms = TCP_SLOW_INTERVAL;
    if (IP_IS_V6_VAL(pcb->remote_ip)) {
        /* the zone is this instance's netif index: the importer assigns its own */
        img->family = 6;
        memcpy(img->local_addr, ip_2_ip6(&pcb->local_ip)->addr, 16);
        memcpy(img->remote_addr, ip_2_ip6(&pcb->remote_ip)->addr, 16);
    } else {
        img->family = 4;
        memcpy(img->local_addr, &ip_2_ip4(&pcb->local_ip)->addr, 4);
        memcpy(img->remote_addr, &ip_2_ip4(&pcb->remote_ip)->addr, 4);
    }

    img->rcv_nxt = pcb->rcv_nxt;
    img->rcv_wnd = pcb->rcv_wnd;
    img->rcv_ann_wnd = pcb->rcv_ann_wnd;
    img->rcv_ann_right_edge = pcb->rcv_ann_right_edge;
    for (i = 0; i < 4; i++) {
        img->rcv_sacks[i][0] = pcb->rcv_sacks[i].left;
        img->rcv_sacks[i][1] = pcb->rcv_sacks[i].right;
    }
    img->ooseq_count = ooseq_n;
    img->ooseq_bytes = ooseq_bytes;

    img->snd_una = pcb->lastack;
    img->snd_nxt = pcb->snd_nxt;
    img->snd_wl1 = pcb->snd_wl1;
    img->snd_wl2 = pcb->snd_wl2;
    img->snd_lbb = pcb->snd_lbb;
    img->snd_wnd = pcb->snd_wnd;
    img->snd_wnd_max = pcb->snd_wnd_max;
    img->snd_buf = pcb->snd_buf;
    img->snd_buf_size = TCP_SND_BUF;
    img->snd_data_len = q.data_len;
    img->snd_unacked_len = q.unacked_len;
    img->snd_acked_unreported = q.acked_unreported;
    img->snd_fin = q.fin;
    img->cwnd = pcb->cwnd;
    img->ssthresh = pcb->ssthresh;
    img->lwip_bytes_acked = pcb->bytes_acked;
    img->persist_cnt = pcb->persist_cnt;
    img->persist_backoff = pcb->persist_backoff;
    img->persist_probe = pcb->persist_probe;

    img->rto_ms = pcb->rto > 0 ? (uint32_t)pcb->rto * TCP_SLOW_INTERVAL : 0;
    img->sa = pcb->sa;
    img->sv = pcb->sv;
    img->idle_ms = (uint32_t)(tcp_ticks - pcb->tmr) * TCP_SLOW_INTERVAL;
    img->keep_idle = pcb->keep_idle;
    img->keep_intvl = pcb->keep_intvl;
    img->keep_cnt = pcb->keep_cnt;
    img->keep_cnt_sent = pcb->keep_cnt_sent;

    img->ts_recent = pcb->ts_recent;
    img->ts_lastacksent = pcb->ts_lastacksent;

    r = &pcb->rec;
    c = &r->ccs;
    strncpy(img->cc_name, dpsock_tcp_cc_name(pcb), sizeof(img->cc_name) - 1);
    img->srtt_us = r->srtt_us;
    img->rttvar_us = r->rttvar_us;
    img->min_rtt_us = r->min_rtt_us;
    img->rto_us = r->rto_us;
    img->backoff = r->backoff;
    img->reord_seen = r->reord_seen;
    img->reo_wnd_steps = r->reo_wnd_steps;
    img->reo_wnd_persist = r->reo_wnd_persist;
    img->cwnd_limited = r->cwnd_limited;
    img->max_inflight = r->max_inflight;
    img->total_retrans = r->total_retrans;
    img->dsack_dups = r->dsack_dups;
    img->reord_events = r->reord_events;
    img->segs_out = r->segs_out;
    img->data_segs_out = r->data_segs_out;
    img->bytes_sent = r->bytes_sent;
    img->bytes_retrans = r->bytes_retrans;
    img->bytes_acked = r->bytes_acked;
    img->delivered = r->delivered;
    img->delivery_rate = r->delivery_rate;
    img->cubic_w_max = dbl_bits(c->w_max);
    img->cubic_w_max_prior = dbl_bits(c->w_max_prior);
    img->cubic_k = dbl_bits(c->k);
    img->cubic_w_est = dbl_bits(c->w_est);
    img->cubic_cwnd_prior = dbl_bits(c->cwnd_prior);
    img->cubic_acc_bytes = dbl_bits(c->acc_bytes);
    img->hs_round_end = c->round_end;
    img->hs_cur_round_min_us = c->cur_round_min_us;
    img->hs_last_round_min_us = c->last_round_min_us;
    img->hs_css_baseline_us = c->css_baseline_us;
    img->hs_rtt_samples = c->rtt_samples;
    img->hs_css_rounds = c->css_rounds;
    img->hs_in_css = c->in_css;
    img->hs_done = c->hystart_done;
    img->reno_bytes_acked = c->bytes_acked;

    /* the data area */
    copy_sndq(pcb, out);
    out += q.data_len;
    for (seg = pcb->ooseq; seg != NULL; seg = seg->next) {
        /* tcp_input left the header's sequence number in host order */
        struct dpsock_tcp_mig_ooseq d = {
            .seq = seg->tcphdr->seqno, .len = seg->len, .fin = seg_fin(seg) ? 1u : 0u,
        };

        memcpy(out, &d, sizeof(d));
        out += sizeof(d);
    }
    for (seg = pcb->ooseq; seg != NULL; seg = seg->next) {
        /* a received segment's data starts at the payload */
        pbuf_copy_partial(seg->p, out, seg->len, 0);
        out += seg->len;
    }
    return 0;
}

void
dpsock_tcp_mig_release(struct tcp_pcb *pcb)
{
    LWIP_ASSERT_CORE_LOCKED();
    LWIP_ASSERT("dpsock_tcp_mig_release: pcb", pcb != NULL && pcb->state != LISTEN);
    if (pcb->state != TIME_WAIT) {
        /* tcp_pcb_remove would send an owed delayed ACK; tcp_abandon
         * would call the err callback with ERR_ABRT */
        tcp_clear_flags(pcb, TF_ACK_DELAY | TF_ACK_NOW);
        pcb->errf = NULL;
    }
    tcp_abandon(pcb, 0);
}

/* ---------------------------------------------------------------------- */
/* import */

static bool
image_check(const struct dpsock_tcp_mig_image *img, const void *data, size_t data_len,
            enum tcp_state *state)
{
    const uint8_t *d = data;
    uint32_t right, next, end, bytes = 0, i;
    uint64_t area;

    if (img == NULL || img->magic != DPSOCK_TCP_MIG_MAGIC ||
        img->version != DPSOCK_TCP_MIG_VERSION || img->size != sizeof(*img))
        return false;
    if ((img->flags & ~DPSOCK_TCP_MIG_F_ALL) != 0 || !state_from_mig(img->state, state) ||
        (img->family != 4 && img->family != 6) || img->local_port == 0 ||
        img->remote_port == 0 || img->mss == 0 || img->slow_interval_ms == 0)
        return false;
    if (img->cc_name[sizeof(img->cc_name) - 1] != '\0')
        return false;
    /* the data area */
    area = (uint64_t)img->snd_data_len + (uint64_t)img->ooseq_count * OOSEQ_DESC + img->ooseq_bytes;
    if (area != img->data_len || area != data_len || (data_len > 0 && data == NULL))
        return false;
    /* the send queue: snd_una + data (+ FIN); the sent part
     * first; a sent FIN only after all of the data; snd_nxt within */
    if (img->snd_unacked_len > img->snd_data_len || img->snd_fin > DPSOCK_TCP_MIG_FIN_SENT ||
        img->snd_data_len > 0x7fffffffu || img->snd_acked_unreported > 0xffffu)
        return false;
    /* SYN_RCVD, SYN_SENT: the SYN|ACK or SYN alone (sent when snd_nxt is
     * past it) */
    if ((*state == SYN_RCVD || *state == SYN_SENT) &&
        (img->snd_data_len != 0 || img->snd_fin != DPSOCK_TCP_MIG_FIN_NONE ||
         img->ooseq_count != 0 || img->persist_backoff != 0 || (img->flags & DPSOCK_TCP_MIG_F_FIN)))
        return false;
    /* where the queue ends: snd_lbb, or one after it when a FIN was
     * queued (sndq_scan); after the SYN of SYN_RCVD */
    end = img->snd_una + (*state == SYN_RCVD || *state == SYN_SENT) + img->snd_data_len +
          (img->snd_fin != DPSOCK_TCP_MIG_FIN_NONE);
    if (end != img->snd_lbb && !((img->flags & DPSOCK_TCP_MIG_F_FIN) && end == img->snd_lbb + 1))
        return false;
    if (img->snd_fin == DPSOCK_TCP_MIG_FIN_SENT && img->snd_unacked_len != img->snd_data_len)
        return false;
    if (img->snd_fin != DPSOCK_TCP_MIG_FIN_NONE && !(img->flags & DPSOCK_TCP_MIG_F_FIN))
        return false;
    if (!TCP_SEQ_BETWEEN(img->snd_nxt, img->snd_una + img->snd_unacked_len +
                                           (img->snd_fin == DPSOCK_TCP_MIG_FIN_SENT),
                         end))
        return false;
    /* lwIP's persist timer asserts nothing is in flight and data waits */
    if (img->persist_backoff != 0 &&
        (img->snd_unacked_len != 0 || img->snd_fin == DPSOCK_TCP_MIG_FIN_SENT ||
         img->snd_data_len == 0))
        return false;
    if (*state == TIME_WAIT && (img->snd_data_len != 0 || img->ooseq_count != 0 ||
                                img->snd_fin != DPSOCK_TCP_MIG_FIN_NONE))
        return false;
    /* out-of-order segments: the first above rcv_nxt (else it would be in
     * order), then in order without overlap (lwIP trims; they may touch),
     * within the window (lwIP trims to it, and its right edge never moves
     * left), a FIN only on the last (lwIP queues nothing after one) */
    next = img->rcv_nxt;
    right = img->rcv_nxt + img->rcv_wnd;
    for (i = 0; i < img->ooseq_count; i++) {
        struct dpsock_tcp_mig_ooseq o;

        memcpy(&o, d + img->snd_data_len + (size_t)i * OOSEQ_DESC, sizeof(o));
        if (o.fin > 1 || o.reserved != 0 || o.len > 0xffffu || (o.len == 0 && !o.fin) ||
            (i == 0 ? !TCP_SEQ_GT(o.seq, next) : TCP_SEQ_LT(o.seq, next)) ||
            TCP_SEQ_GT(o.seq + o.len + o.fin, right) || (o.fin && i + 1 != img->ooseq_count))
            return false;
        next = o.seq + o.len + o.fin;
        bytes += o.len;
    }
    return bytes == img->ooseq_bytes;
}

static void
addr_from_image(ip_addr_t *a, uint8_t family, const uint8_t *raw, struct netif *netif)
{
    if (family == 6) {
        IP_SET_TYPE_VAL(*a, IPADDR_TYPE_V6);
        memcpy(ip_2_ip6(a)->addr, raw, 16);
        ip6_addr_clear_zone(ip_2_ip6(a));
        /* a link-local address belongs to the importing netif's zone, as
         * ip6_input assigns it to what arrives there */
        if (netif != NULL)
            ip6_addr_assign_zone(ip_2_ip6(a), IP6_UNKNOWN, netif);
    } else {
        IP_SET_TYPE_VAL(*a, IPADDR_TYPE_V4);
        memcpy(&ip_2_ip4(a)->addr, raw, 4);
    }
}

/* A segment of len bytes of data at seqno, as tcp_write() and
 * tcp_create_segment() build one (header filled but ackno, wnd and
 * checksum); NULL without memory. */
static struct tcp_seg *
seg_build(const struct tcp_pcb *pcb, const uint8_t *bytes, u16_t len, uint32_t seqno,
          u8_t hdrflags)
{
    u8_t optflags = (pcb->flags & TF_TIMESTAMP) ? TF_SEG_OPTS_TS : 0;
    u8_t optlen = LWIP_TCP_OPT_LENGTH(optflags);
    struct tcp_seg *seg;
    struct pbuf *p;

    p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)(optlen + len), PBUF_RAM);
    if (p == NULL)
        return NULL;
    if (len > 0)
        memcpy((u8_t *)p->payload + optlen, bytes, len);
    seg = (struct tcp_seg *)memp_malloc(MEMP_TCP_SEG);
    if (seg == NULL) {
        pbuf_free(p);
        return NULL;
    }
    memset(seg, 0, sizeof(*seg));
    dpsock_tcp_rec_seg_init(seg);
    seg->flags = optflags;
    seg->p = p;
    seg->len = len;
    if (pbuf_add_header(p, TCP_HLEN)) {
        /* PBUF_TRANSPORT reserved it: cannot happen */
        tcp_seg_free(seg);
        return NULL;
    }
    seg->tcphdr = (struct tcp_hdr *)p->payload;
    seg->tcphdr->src = lwip_htons(pcb->local_port);
    seg->tcphdr->dest = lwip_htons(pcb->remote_port);
    seg->tcphdr->seqno = lwip_htonl(seqno);
    seg->tcphdr->ackno = 0;
    TCPH_HDRLEN_FLAGS_SET(seg->tcphdr, 5 + optlen / 4, hdrflags);
    seg->tcphdr->wnd = 0;
    seg->tcphdr->chksum = 0;
    seg->tcphdr->urgp = 0;
    if (optflags & TF_SEG_OPTS_TS) {
        /* what tcp_output_segment will write (it rewrites it on every
         * transmission); dpsock_tcp_rec_sent reads the TSval from here */
        u32_t *opts = (u32_t *)(void *)(seg->tcphdr + 1);

        opts[0] = PP_HTONL(0x0101080AUL);
        opts[1] = lwip_htonl(sys_now());
        opts[2] = lwip_htonl(pcb->ts_recent);
    }
    return seg;
}

/* Queue [from, from + len) of the send data (at sequence number seq) as
 * segments of at most seg_max bytes behind *tail; fin: a FIN after the
 * last byte. Returns false without memory (what was built stays queued, for
 * the caller to free). */
static bool
segs_build(const struct tcp_pcb *pcb, struct tcp_seg ***tail, const uint8_t *from, uint32_t len,
           uint32_t seq, bool fin, bool psh, u16_t seg_max)
{
    uint32_t off = 0;

    while (off < len || (fin && off == len)) {
        u16_t n = (u16_t)LWIP_MIN(len - off, (uint32_t)seg_max);
        bool last = off + n == len;
        u8_t f = (u8_t)((last && fin ? TCP_FIN : 0) | (last && psh && n > 0 ? TCP_PSH : 0));
        struct tcp_seg *seg = seg_build(pcb, from + off, n, seq + off, f);

        if (seg == NULL)
            return false;
        **tail = seg;
        *tail = &seg->next;
        off += n;
        if (last)
            break;
    }
    return true;
}

/* An out-of-order segment as tcp_input leaves it: payload the data, header
 * just before it with the sequence number in host order. */
static struct tcp_seg *
ooseq_build(const struct tcp_pcb *pcb, const struct dpsock_tcp_mig_ooseq *o, const uint8_t *bytes)
{
    struct tcp_seg *seg;
    struct pbuf *p;

    p = pbuf_alloc(PBUF_RAW, (u16_t)(TCP_HLEN + o->len), PBUF_RAM);
    if (p == NULL)
        return NULL;
    seg = (struct tcp_seg *)memp_malloc(MEMP_TCP_SEG);
    if (seg == NULL) {
        pbuf_free(p);
        return NULL;
    }
    memset(seg, 0, sizeof(*seg));
    dpsock_tcp_rec_seg_init(seg);
    seg->p = p;
    seg->len = (u16_t)o->len;
    seg->tcphdr = (struct tcp_hdr *)p->payload;
    memset(seg->tcphdr, 0, TCP_HLEN);
    seg->tcphdr->src = pcb->remote_port;  /* host order, as tcp_input */
    seg->tcphdr->dest = pcb->local_port;
    seg->tcphdr->seqno = o->seq;
    TCPH_HDRLEN_FLAGS_SET(seg->tcphdr, 5, TCP_ACK | (o->fin ? TCP_FIN : 0));
    pbuf_remove_header(p, TCP_HLEN);
    if (o->len > 0)
        memcpy(p->payload, bytes, o->len);
    return seg;
}

static void
pcb_fill(struct tcp_pcb *pcb, const struct dpsock_tcp_mig_image *img, enum tcp_state state)
{
    struct dpsock_tcp_rec *r = &pcb->rec;
    struct dpsock_cc_state *c = &r->ccs;
    uint32_t ticks, rto, queued_old, snd_buf;
    unsigned int i;
    int cc;

    pcb->state = state;
    pcb->ttl = img->ttl;
    pcb->tos = img->tos;
    for (i = 0; i < LWIP_ARRAYSIZE(flag_map); i++)
        if (img->flags & flag_map[i].mig)
            tcp_set_flags(pcb, flag_map[i].tf);
    if (img->flags & DPSOCK_TCP_MIG_F_KEEPALIVE)
        ip_set_option(pcb, SOF_KEEPALIVE);
    if (img->flags & DPSOCK_TCP_MIG_F_REUSEADDR)
        ip_set_option(pcb, SOF_REUSEADDR);
    pcb->snd_scale = img->snd_scale;
    pcb->rcv_scale = img->rcv_scale;
    pcb->mss = img->mss;

    pcb->rcv_nxt = img->rcv_nxt;
    pcb->rcv_wnd = img->rcv_wnd;
    pcb->rcv_ann_wnd = img->rcv_ann_wnd;
    pcb->rcv_ann_right_edge = img->rcv_ann_right_edge;
    for (i = 0; i < 4; i++) {
        pcb->rcv_sacks[i].left = img->rcv_sacks[i][0];
        pcb->rcv_sacks[i].right = img->rcv_sacks[i][1];
    }

    pcb->lastack = img->snd_una;
    pcb->snd_nxt = img->snd_nxt;
    pcb->snd_wl1 = img->snd_wl1;
    pcb->snd_wl2 = img->snd_wl2;
    pcb->snd_lbb = img->snd_lbb;
    pcb->snd_wnd = img->snd_wnd;
    pcb->snd_wnd_max = img->snd_wnd_max;
    /* what the writer's queue took of its buffer, less the acknowledged
     * bytes that are not carried, out of this build's buffer */
    queued_old = img->snd_buf_size >= img->snd_buf ? img->snd_buf_size - img->snd_buf : 0;
    queued_old = queued_old >= img->snd_acked_unreported ? queued_old - img->snd_acked_unreported : 0;
    snd_buf = TCP_SND_BUF > queued_old ? TCP_SND_BUF - queued_old : 0;
    pcb->snd_buf = (tcpwnd_size_t)snd_buf;
    pcb->cwnd = img->cwnd;
    pcb->ssthresh = img->ssthresh;
    pcb->bytes_acked = img->lwip_bytes_acked;
    pcb->persist_cnt = img->persist_cnt;
    pcb->persist_backoff = img->persist_backoff;
    pcb->persist_probe = img->persist_probe;

    /* timers: from the writer's tick to ours */
    pcb->nrtx = img->nrtx;
    rto = (img->rto_ms + TCP_SLOW_INTERVAL - 1) / TCP_SLOW_INTERVAL;
    pcb->rto = (s16_t)(rto < 1 ? 1 : rto > 0x7fff ? 0x7fff : rto);
    pcb->sa = (s16_t)((int32_t)img->sa * img->slow_interval_ms / TCP_SLOW_INTERVAL);
    pcb->sv = (s16_t)((int32_t)img->sv * img->slow_interval_ms / TCP_SLOW_INTERVAL);
    ticks = img->idle_ms / TCP_SLOW_INTERVAL;
    pcb->tmr = tcp_ticks - ticks;
    pcb->keep_idle = img->keep_idle;
    pcb->keep_intvl = img->keep_intvl;
    pcb->keep_cnt = img->keep_cnt;
    pcb->keep_cnt_sent = img->keep_cnt_sent;

    pcb->ts_recent = img->ts_recent;
    pcb->ts_lastacksent = img->ts_lastacksent;

    /* tcp_rec.c: tcp_alloc gave a clean scoreboard (open, no timers) and
     * this instance's default module; the module by name, its window
     * state, the estimators and totals from the image */
    cc = dpsock_tcp_cc_find(img->cc_name);
    if (cc >= 0 && dpsock_tcp_cc_set(pcb, img->cc_name) == 0) {
        c->w_max = bits_dbl(img->cubic_w_max);
        c->w_max_prior = bits_dbl(img->cubic_w_max_prior);
        c->k = bits_dbl(img->cubic_k);
        c->w_est = bits_dbl(img->cubic_w_est);
        c->cwnd_prior = bits_dbl(img->cubic_cwnd_prior);
        c->acc_bytes = bits_dbl(img->cubic_acc_bytes);
        c->epoch_us = 0; /* the old clock's: the curve starts again at the next ACK */
        c->round_end = img->hs_round_end;
        c->cur_round_min_us = img->hs_cur_round_min_us;
        c->last_round_min_us = img->hs_last_round_min_us;
        c->css_baseline_us = img->hs_css_baseline_us;
        c->rtt_samples = img->hs_rtt_samples;
        c->css_rounds = img->hs_css_rounds;
        c->in_css = img->hs_in_css;
        c->hystart_done = img->hs_done;
        c->bytes_acked = img->reno_bytes_acked;
    }
    r->srtt_us = img->srtt_us;
    r->rttvar_us = img->rttvar_us;
    r->min_rtt_us = img->min_rtt_us;
    r->min_rtt_stamp_us = 0; /* its window starts again with the next sample */
    if (img->rto_us != 0)
        r->rto_us = img->rto_us;
    r->backoff = img->backoff;
    r->reord_seen = img->reord_seen;
    r->reo_wnd_steps = img->reo_wnd_steps ? img->reo_wnd_steps : 1;
    r->reo_wnd_persist = img->reo_wnd_persist;
    r->cwnd_limited = img->cwnd_limited;
    r->max_inflight = img->max_inflight;
    r->total_retrans = img->total_retrans;
    r->dsack_dups = img->dsack_dups;
    r->reord_events = img->reord_events;
    r->segs_out = img->segs_out;
    r->data_segs_out = img->data_segs_out;
    r->bytes_sent = img->bytes_sent;
    r->bytes_retrans = img->bytes_retrans;
    r->bytes_acked = img->bytes_acked;
    r->delivered = img->delivered;
    r->delivery_rate = img->delivery_rate;
}

/* Build the queues of pcb from the data area; false without memory
 * (whatever was built is on the pcb, for tcp_free's caller to free). */
static bool
queues_build(struct tcp_pcb *pcb, const struct dpsock_tcp_mig_image *img, const uint8_t *d)
{
    struct dpsock_tcp_rec *r = &pcb->rec;
    struct tcp_seg *unacked = NULL, *unsent = NULL, **tail, *seg;
    uint32_t segs_out = r->segs_out, data_segs_out = r->data_segs_out, i;
    uint64_t bytes_sent = r->bytes_sent;
    const uint8_t *ob;
    u16_t mss_local, optlen, seg_max;
    bool fin_sent = img->snd_fin == DPSOCK_TCP_MIG_FIN_SENT;
    bool fin_queued = img->snd_fin == DPSOCK_TCP_MIG_FIN_QUEUED;
    bool ok;

    /* segment size as tcp_write(): at most half the largest window the
     * peer offered, room for one byte after the options */
    optlen = LWIP_TCP_OPT_LENGTH((pcb->flags & TF_TIMESTAMP) ? TF_SEG_OPTS_TS : 0);
    mss_local = LWIP_MIN(pcb->mss, TCPWND_MIN16(pcb->snd_wnd_max / 2));
    mss_local = mss_local ? mss_local : pcb->mss;
    mss_local = LWIP_MAX(mss_local, (u16_t)(optlen + 1));
    seg_max = (u16_t)(mss_local - optlen);

    tail = &unacked;
    ok = img->snd_unacked_len == 0 && !fin_sent ? true :
         segs_build(pcb, &tail, d, img->snd_unacked_len, img->snd_una, fin_sent,
                    img->snd_unacked_len == img->snd_data_len, seg_max);
    pcb->unacked = unacked;
    if (!ok)
        return false;
    tail = &unsent;
    ok = img->snd_data_len == img->snd_unacked_len && !fin_queued ? true :
         segs_build(pcb, &tail, d + img->snd_unacked_len, img->snd_data_len - img->snd_unacked_len,
                    img->snd_una + img->snd_unacked_len, fin_queued, true, seg_max);
    pcb->unsent = unsent;
    if (!ok)
        return false;

    ob = d + img->snd_data_len + (size_t)img->ooseq_count * OOSEQ_DESC;
    tail = &pcb->ooseq;
    for (i = 0; i < img->ooseq_count; i++) {
        struct dpsock_tcp_mig_ooseq o;

        memcpy(&o, d + img->snd_data_len + (size_t)i * OOSEQ_DESC, sizeof(o));
        seg = ooseq_build(pcb, &o, ob);
        if (seg == NULL)
            return false;
        *tail = seg;
        tail = &seg->next;
        ob += o.len;
    }

    /* the sent segments count as sent once, now, on this instance's clock
     * (tcp_rec.c's hook after a transmission), and as retransmitted
     * (Karn); the totals stay the writer's */
    pcb->unacked = NULL; /* rec_sent: nothing in flight before them */
    for (seg = unacked; seg != NULL; seg = seg->next) {
        dpsock_tcp_rec_sent(pcb, seg);
        seg->rec.flags |= DPSOCK_SEG_EVER_RETRANS;
    }
    pcb->unacked = unacked;
    r->segs_out = segs_out;
    r->data_segs_out = data_segs_out;
    r->bytes_sent = bytes_sent;

    pcb->snd_queuelen = 0;
    for (i = 0; i < 2; i++)
        for (seg = i == 0 ? pcb->unacked : pcb->unsent; seg != NULL; seg = seg->next)
            pcb->snd_queuelen = (u16_t)(pcb->snd_queuelen + pbuf_clen(seg->p));
    pcb->unsent_oversize = 0;
    return true;
}

/* SYN_RCVD's queue: the SYN|ACK as tcp_listen_input queues it (its
 * options from the flags the handshake set); SYN_SENT's: the SYN as
 * tcp_connect queues it (every option this build offers, as the writer's
 * SYN did). Counted as sent when the writer had sent it; false without
 * memory. */
static bool
syn_build(struct tcp_pcb *pcb, const struct dpsock_tcp_mig_image *img)
{
    struct dpsock_tcp_rec *r = &pcb->rec;
    uint32_t segs_out = r->segs_out, data_segs_out = r->data_segs_out;
    uint64_t bytes_sent = r->bytes_sent;
    struct tcp_seg *seg;

    pcb->snd_nxt = pcb->snd_lbb = img->snd_una;
    pcb->snd_queuelen = 0;
    if (tcp_enqueue_flags(pcb, pcb->state == SYN_RCVD ? TCP_SYN | TCP_ACK : TCP_SYN) != ERR_OK)
        return false;
    if (img->snd_nxt != img->snd_una) {
        seg = pcb->unsent;
        pcb->unsent = NULL;
        dpsock_tcp_rec_sent(pcb, seg);
        seg->rec.flags |= DPSOCK_SEG_EVER_RETRANS;
        pcb->unacked = seg;
        pcb->snd_nxt = img->snd_una + 1;
        r->segs_out = segs_out;
        r->data_segs_out = data_segs_out;
        r->bytes_sent = bytes_sent;
    }
    return true;
}

struct tcp_pcb *
dpsock_tcp_mig_import(const struct dpsock_tcp_mig_image *img, const void *data, size_t data_len,
                      uint8_t netif_idx, int *err)
{
    struct tcp_pcb *pcb;
    struct netif *netif = NULL;
    enum tcp_state state;
    ip_addr_t laddr, raddr;
    int dummy;

    LWIP_ASSERT_CORE_LOCKED();
    if (err == NULL)
        err = &dummy;
    if (!image_check(img, data, data_len, &state)) {
        *err = -EINVAL;
        return NULL;
    }
    if (netif_idx != NETIF_NO_INDEX) {
        netif = netif_get_by_index(netif_idx);
        if (netif == NULL) {
            *err = -EINVAL;
            return NULL;
        }
    }
    addr_from_image(&laddr, img->family, img->local_addr, netif);
    addr_from_image(&raddr, img->family, img->remote_addr, netif);
    if (img->family == 6 && (ip6_addr_lacks_zone(ip_2_ip6(&laddr), IP6_UNKNOWN) ||
                             ip6_addr_lacks_zone(ip_2_ip6(&raddr), IP6_UNKNOWN))) {
        *err = -EINVAL; /* a link-local address needs the netif */
        return NULL;
    }
    if (dpsock_tcp_lookup(&laddr, img->local_port, &raddr, img->remote_port) != NULL) {
        *err = -EADDRINUSE;
        return NULL;
    }

    pcb = tcp_alloc(img->prio);
    if (pcb == NULL) {
        *err = -ENOMEM;
        return NULL;
    }
    ip_addr_copy(pcb->local_ip, laddr);
    ip_addr_copy(pcb->remote_ip, raddr);
    pcb->local_port = img->local_port;
    pcb->remote_port = img->remote_port;
    pcb->netif_idx = netif_idx;
    pcb_fill(pcb, img, state);
    if (state == SYN_RCVD || state == SYN_SENT ? !syn_build(pcb, img) :
                                                 !queues_build(pcb, img, data)) {
        /* not on any list yet: free what was built, then the pcb */
        tcp_segs_free(pcb->unacked);
        tcp_segs_free(pcb->unsent);
        tcp_segs_free(pcb->ooseq);
        pcb->unacked = pcb->unsent = pcb->ooseq = NULL;
        pcb->state = CLOSED;
        tcp_free(pcb);
        *err = -ENOMEM;
        return NULL;
    }
    /* the retransmission timer runs from now when data is in flight */
    pcb->rtime = pcb->unacked != NULL ? 0 : -1;

    if (state == TIME_WAIT) {
        /* the list is in arrival order (pcb_index.c expires from its
         * tail and stops at the first pcb still waiting): no older than
         * the newest one */
        if (tcp_tw_pcbs != NULL && (s32_t)(pcb->tmr - tcp_tw_pcbs->tmr) < 0)
            pcb->tmr = tcp_tw_pcbs->tmr;
        TCP_REG(&tcp_tw_pcbs, pcb);
    } else {
        TCP_REG_ACTIVE(pcb);
    }
    *err = 0;
    return pcb;
}
