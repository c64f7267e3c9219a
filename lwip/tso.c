/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tso.c — TCP super-segments for netifs that segment. What and why:
 * include/dpsock_lwip_tso.h; where lwIP calls in: lwip/transform_perf.py.
 *
 * A segment's pbuf chain starts with its TCP header (after header room, and
 * after the IP and link headers once it was sent: the payload pointer then
 * points before the TCP header, see tcp_output_segment). Joining segment b
 * to a strips b's TCP header (it becomes header room of b's first pbuf, or
 * that pbuf goes when it held only the header) and links b's pbufs behind
 * a's. Splitting cuts the chain at a pbuf boundary and gives the rest a new
 * header pbuf; loss recovery may also cut a sent segment inside a pbuf
 * (the rest of that pbuf copied into a new one, see dpsock_tcp_seg_cut).
 * pcb->snd_queuelen counts pbufs: it follows all of them.
 *
 * Frames of a chain lent to the NIC (stack/frame/netif.c) hold a reference on
 * every pbuf of the chain, so cutting or shortening a chain the NIC still
 * reads frees nothing under it.
 */
#include <string.h>

#include "lwip/opt.h"
#include "lwip/def.h"
#include "lwip/memp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/prot/ip.h"

#ifdef LWIP_HOOK_TCP_OUT_TCPOPT_LENGTH
#error "tso.c computes option lengths without LWIP_HOOK_TCP_OUT_TCPOPT_LENGTH"
#endif

#include "dpsock_lwip_tso.h"

struct tso_netif {
    uint32_t max_bytes;   /* TCP header included; 0: MSS-sized segments */
    uint16_t max_pbufs;
};

/* by netif->num (a u8) */
static _Thread_local struct tso_netif tso_netif[256];
static _Thread_local struct dpsock_tcp_tso_stats tso_st;

void
dpsock_tcp_netif_set_tso(const struct netif *netif, uint32_t max_bytes, uint16_t max_pbufs)
{
    struct tso_netif *t = &tso_netif[netif->num];

    t->max_bytes = max_bytes > DPSOCK_TCP_TSO_MAX ? DPSOCK_TCP_TSO_MAX : max_bytes;
    t->max_pbufs = max_pbufs;
}

uint32_t
dpsock_tcp_netif_tso(const struct netif *netif)
{
    return tso_netif[netif->num].max_bytes;
}

int
dpsock_tcp_tso_passes(const struct netif *netif, uint8_t proto)
{
    return proto == IP_PROTO_TCP && tso_netif[netif->num].max_bytes != 0;
}

void
dpsock_tcp_tso_stats(struct dpsock_tcp_tso_stats *out)
{
    *out = tso_st;
}

static inline uint8_t
seg_optlen(const struct tcp_pcb *pcb, const struct tcp_seg *seg)
{
    (void)pcb; /* no LWIP_HOOK_TCP_OUT_TCPOPT_LENGTH in dpsock's options */
    return LWIP_TCP_OPT_LENGTH(seg->flags);
}

/* Bytes of seg's first pbuf before its data. */
static inline u16_t
seg_hdr_bytes(const struct tcp_pcb *pcb, const struct tcp_seg *seg)
{
    return (u16_t)(((u8_t *)seg->tcphdr - (u8_t *)seg->p->payload) + TCP_HLEN +
                   seg_optlen(pcb, seg));
}

static inline bool
seg_plain(const struct tcp_seg *seg)
{
    return seg->len > 0 && (TCPH_FLAGS(seg->tcphdr) & (TCP_SYN | TCP_FIN | TCP_RST)) == 0;
}

static inline bool
joinable(const struct tcp_seg *a, const struct tcp_seg *b)
{
    return seg_plain(a) && seg_plain(b) && a->flags == b->flags &&
           lwip_ntohl(a->tcphdr->seqno) + a->len == lwip_ntohl(b->tcphdr->seqno);
}

/* Recompute tot_len along a chain after relinking. */
static void
chain_fix_tot_len(struct pbuf *p)
{
    struct pbuf *q;
    u32_t total = 0;

    for (q = p; q != NULL; q = q->next)
        total += q->len;
    for (q = p; q != NULL; q = q->next) {
        q->tot_len = (u16_t)total;
        total -= q->len;
    }
}

/* Join into a the segments after it while they fit, never the last unsent
 * segment. */
static void
join_run(struct tcp_pcb *pcb, struct tcp_seg *a, u32_t limit, u16_t max_pbufs)
{
    struct tcp_seg *b;
    struct pbuf *tail = NULL;
    u16_t npbufs = 0;
    bool joined = false;

    while ((b = a->next) != NULL && b->next != NULL && joinable(a, b) &&
           (u32_t)a->len + b->len <= limit) {
        struct pbuf *q = b->p;
        u16_t bn = pbuf_clen(b->p);

        if (tail == NULL) {
            for (tail = a->p; tail->next != NULL; tail = tail->next)
                npbufs++;
            npbufs++;
        }
        if ((u32_t)npbufs + bn > max_pbufs)
            break;
        if (TCPH_FLAGS(b->tcphdr) & TCP_PSH)
            TCPH_SET_FLAG(a->tcphdr, TCP_PSH);
        /* b's TCP header becomes header room (or its pbuf goes) */
        if (pbuf_remove_header(q, seg_hdr_bytes(pcb, b)) != 0)
            break;
        if (q->len == 0 && q->next != NULL) {
            struct pbuf *r = q->next;

            q->next = NULL;
            pbuf_free(q);
            pcb->snd_queuelen--;
            bn--;
            q = r;
        }
        tail->next = q;
        for (tail = q; tail->next != NULL; tail = tail->next)
            ;
        npbufs += bn;
        a->len += b->len;
        a->next = b->next;
        b->p = NULL;
        tcp_seg_free(b);
        tso_st.joined++;
        joined = true;
    }
    if (joined)
        chain_fix_tot_len(a->p);
}

/*
 * Cut seg after its pbuf `cut` (data bytes up to there: front); the rest
 * becomes a new segment behind it. PSH and FIN stay with the rest. Returns
 * false when there is no memory for the new header (nothing changed).
 */
static bool
seg_split(struct tcp_pcb *pcb, struct tcp_seg *seg, struct pbuf *cut, u16_t front)
{
    u8_t optlen = seg_optlen(pcb, seg);
    struct tcp_seg *ns;
    struct pbuf *h, *rest = cut->next;

    LWIP_ASSERT("seg_split: nothing after the cut", rest != NULL && front < seg->len);
    h = pbuf_alloc(PBUF_TRANSPORT, optlen, PBUF_RAM);
    if (h == NULL)
        return false;
    ns = (struct tcp_seg *)memp_malloc(MEMP_TCP_SEG);
    if (ns == NULL || pbuf_add_header(h, TCP_HLEN) != 0) {
        if (ns != NULL)
            memp_free(MEMP_TCP_SEG, ns);
        pbuf_free(h);
        return false;
    }
    cut->next = NULL;
    chain_fix_tot_len(seg->p);
    /* the rest's header: the same ports, length, flags and options
     * layout; tcp_output_segment writes ackno, wnd, options, checksum */
    memcpy(h->payload, seg->tcphdr, TCP_HLEN + optlen);
    h->next = rest;
    chain_fix_tot_len(h);
    memset(ns, 0, sizeof(*ns));
    ns->p = h;
    ns->flags = seg->flags;
    ns->len = (u16_t)(seg->len - front);
    ns->tcphdr = (struct tcp_hdr *)h->payload;
    ns->tcphdr->seqno = lwip_htonl(lwip_ntohl(seg->tcphdr->seqno) + front);
    TCPH_UNSET_FLAG(seg->tcphdr, TCP_PSH | TCP_FIN);
    seg->len = front;
    ns->next = seg->next;
    seg->next = ns;
    pcb->snd_queuelen++;
    return true;
}

/* Cut the super-segment seg so that its head carries at most room bytes,
 * at a pbuf boundary; at least its first pbuf's data stays (at most one
 * MSS). Returns false when it could not be cut. */
static bool
seg_fit(struct tcp_pcb *pcb, struct tcp_seg *seg, u32_t room)
{
    struct pbuf *q, *cut = NULL;
    u32_t acc, cut_acc = 0;

    /* boundaries after each pbuf but the last: the first one with data,
     * or the last one within room */
    for (q = seg->p, acc = q->len - seg_hdr_bytes(pcb, seg); q->next != NULL;
         q = q->next, acc += q->len) {
        if (acc == 0)
            continue;
        if (cut == NULL || acc <= room) {
            cut = q;
            cut_acc = acc;
        }
        if (acc > room)
            break;
    }
    if (cut == NULL || cut_acc >= seg->len || !seg_split(pcb, seg, cut, (u16_t)cut_acc))
        return false;
    tso_st.splits++;
    return true;
}

/* Split q, a pbuf of a segment's chain, after its first k bytes: the rest
 * goes to a new pbuf behind it, a copy (q's memory may be lent to the NIC:
 * it stays as it is, q only looks shorter). */
static bool
pbuf_cut(struct tcp_pcb *pcb, struct pbuf *q, u16_t k)
{
    struct pbuf *n = pbuf_alloc(PBUF_RAW, (u16_t)(q->len - k), PBUF_RAM);

    if (n == NULL)
        return false;
    memcpy(n->payload, (u8_t *)q->payload + k, (size_t)(q->len - k));
    n->next = q->next;
    q->next = n;
    q->len = k;
    pcb->snd_queuelen++;
    return true;
}

uint32_t
dpsock_tcp_seg_cut(struct tcp_pcb *pcb, struct tcp_seg *seg, uint32_t off, int how)
{
    struct pbuf *q, *cut = NULL;
    u16_t hdr;
    u32_t acc, cut_acc = 0;

    if (off == 0 || off >= seg->len || !seg_plain(seg) || seg->p->ref != 1)
        return 0;
    hdr = seg_hdr_bytes(pcb, seg);
    /* boundaries after each pbuf but the last */
    for (q = seg->p, acc = q->len - hdr; q->next != NULL; q = q->next, acc += q->len) {
        if (acc == 0 || (how == DPSOCK_SEG_CUT_UP && acc < off))
            continue;
        if (how != DPSOCK_SEG_CUT_UP && acc > off)
            break;
        cut = q;
        cut_acc = acc;
        if (how == DPSOCK_SEG_CUT_UP)
            break;
    }
    if (how == DPSOCK_SEG_CUT_EXACT && cut_acc != off) {
        /* inside a pbuf (a piece cut before starts with one holding only
         * its header): split that pbuf there */
        u32_t before = 0;
        u16_t skip = hdr;

        for (q = seg->p; q != NULL && before + (u32_t)(q->len - skip) <= off; q = q->next) {
            before += q->len - skip;
            skip = 0;
        }
        if (q == NULL || !pbuf_cut(pcb, q, (u16_t)(skip + off - before)))
            return 0;
        chain_fix_tot_len(seg->p);
        cut = q;
        cut_acc = off;
    }
    if (cut == NULL || cut_acc >= seg->len || !seg_split(pcb, seg, cut, (u16_t)cut_acc))
        return 0;
    return cut_acc;
}

/*
 * The peer acknowledged n (< TCP_TCPLEN) bytes at the front of seg: give
 * seg a new header pbuf starting at the first unacknowledged byte and drop
 * the acknowledged bytes from its chain (whole pbufs freed, a partial one
 * trimmed by its payload pointer: no byte the NIC may still read is
 * written). Returns false when there is no memory for the header.
 */
static bool
seg_trim_front(struct tcp_pcb *pcb, struct tcp_seg *seg, u32_t n)
{
    u8_t optlen = seg_optlen(pcb, seg);
    u16_t hdr = seg_hdr_bytes(pcb, seg);
    struct pbuf *h, *q = seg->p;
    u32_t left = n;

    h = pbuf_alloc(PBUF_TRANSPORT, optlen, PBUF_RAM);
    if (h == NULL || pbuf_add_header(h, TCP_HLEN) != 0) {
        if (h != NULL)
            pbuf_free(h);
        return false;
    }
    memcpy(h->payload, seg->tcphdr, TCP_HLEN + optlen);
    ((struct tcp_hdr *)h->payload)->seqno = lwip_htonl(lwip_ntohl(seg->tcphdr->seqno) + n);
    /* the old first pbuf keeps its data only */
    pbuf_remove_header(q, hdr);
    while (q != NULL && q->len <= left) {
        struct pbuf *r = q->next;

        left -= q->len;
        q->next = NULL;
        pbuf_free(q);
        pcb->snd_queuelen--;
        q = r;
    }
    if (q != NULL && left > 0)
        pbuf_remove_header(q, (u16_t)left);
    h->next = q;
    chain_fix_tot_len(h);
    seg->p = h;
    seg->tcphdr = (struct tcp_hdr *)h->payload;
    seg->len = (u16_t)(seg->len - n);
    pcb->snd_queuelen++;
    pcb->snd_buf = (tcpwnd_size_t)(pcb->snd_buf + n);
    return true;
}

/*
 * Segments at the head of the unsent queue the peer has acknowledged
 * (moved back there by a retransmission, or left there by a split, while
 * their first transmission arrived): tcp_output measures the head's offset
 * from lastack as an unsigned difference, so one that starts below lastack
 * would never fit the window again, and nothing else would send it. Free
 * what is acknowledged whole, trim the rest (their send buffer space comes
 * back now; the next ACK's sent callback tells the application).
 */
static void
unsent_drop_acked(struct tcp_pcb *pcb)
{
    struct tcp_seg *seg;

    while ((seg = pcb->unsent) != NULL &&
           TCP_SEQ_LT(lwip_ntohl(seg->tcphdr->seqno), pcb->lastack)) {
        u32_t acked = pcb->lastack - lwip_ntohl(seg->tcphdr->seqno);

        if (acked >= TCP_TCPLEN(seg)) {
            pcb->unsent = seg->next;
            pcb->snd_queuelen = (u16_t)(pcb->snd_queuelen - pbuf_clen(seg->p));
            pcb->snd_buf = (tcpwnd_size_t)(pcb->snd_buf + seg->len);
            tcp_seg_free(seg);
            tso_st.acked_dropped++;
            continue;
        }
        if (seg_trim_front(pcb, seg, acked))
            tso_st.acked_dropped++;
        break;
    }
#if TCP_OVERSIZE
    if (pcb->unsent == NULL)
        pcb->unsent_oversize = 0;
#endif
}

static inline bool
seg_super(const struct tcp_pcb *pcb, const struct tcp_seg *seg)
{
    return seg->len > pcb->mss - seg_optlen(pcb, seg) && seg->p->next != NULL;
}

struct tcp_seg *
dpsock_tcp_unsent_fit(struct tcp_pcb *pcb, uint32_t wnd)
{
    struct tcp_seg *seg;
    u32_t used, room;

    unsent_drop_acked(pcb);
    seg = pcb->unsent;
    if (seg == NULL || !seg_super(pcb, seg))
        return seg;
    used = lwip_ntohl(seg->tcphdr->seqno) - pcb->lastack;
    room = wnd > used ? wnd - used : 0;
    if (seg->len <= room)
        return seg;
    /* a closed window with data in flight: wait for the ACKs (and keep the
     * segment whole); otherwise send what fits, or let the persist timer
     * probe with an MSS at most */
    if (room == 0 && pcb->unacked != NULL)
        return seg;
    seg_fit(pcb, seg, room);
    return pcb->unsent;
}

struct tcp_seg *
dpsock_tcp_output_prepare(struct tcp_pcb *pcb, const struct netif *netif, uint32_t wnd)
{
    const struct tso_netif *t = &tso_netif[netif->num];
    struct tcp_seg *a;

    unsent_drop_acked(pcb);
    if (t->max_bytes != 0 && pcb->state >= ESTABLISHED &&
        pcb->unsent != NULL) {
        u8_t optlen = seg_optlen(pcb, pcb->unsent);
        u32_t limit = t->max_bytes - TCP_HLEN - optlen;

        /* no segment larger than half the largest window the peer offered
         * (tcp_write's rule for its own segments) */
        if (limit > pcb->snd_wnd_max / 2)
            limit = pcb->snd_wnd_max / 2;
        if (limit > pcb->mss)
            for (a = pcb->unsent; a != NULL && a->next != NULL && a->next->next != NULL;
                 a = a->next)
                join_run(pcb, a, limit, t->max_pbufs);
    }
    return dpsock_tcp_unsent_fit(pcb, wnd);
}

u16_t
dpsock_tcp_persist_split(const struct tcp_pcb *pcb)
{
    u32_t most = pcb->mss;

    if (pcb->unsent != NULL && seg_optlen(pcb, pcb->unsent) < most)
        most -= seg_optlen(pcb, pcb->unsent);
    return (u16_t)LWIP_MIN(pcb->snd_wnd, most);
}

int
dpsock_tcp_unsent_fit_persist(struct tcp_pcb *pcb)
{
    struct tcp_seg *seg;

    unsent_drop_acked(pcb);
    seg = pcb->unsent;
    if (seg == NULL) {
        pcb->persist_backoff = 0; /* all of it was acknowledged: nothing to probe with */
        return ERR_MEM;
    }
    if (seg != NULL && seg_super(pcb, seg) && !seg_fit(pcb, seg, pcb->snd_wnd))
        return ERR_MEM;
    return ERR_OK;
}
