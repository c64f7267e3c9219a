/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lwip_instances — several lwIP instances, one per thread, at the same time.
 *
 * Each thread creates its own instance (dpsock_lwip_instance_init) with two
 * Ethernet netifs wired back to back in memory: a netif's linkoutput copies
 * the frame into a queue the thread's loop delivers to the peer netif's input
 * (never re-entering lwIP from inside lwIP). Over that wire the thread runs a
 * bidirectional TCP transfer (window scaling, SACK, timestamps negotiated),
 * with a little reordering and loss so out-of-order queueing, SACK and fast
 * retransmit are exercised, and checks every byte. Then it closes both ends,
 * tears everything down and asserts its allocator holds nothing.
 *
 * The client's netif segments as a NIC with TSO would (lwip/tso.c builds
 * super-segments for it; the wire cuts them into frames 14 bytes short of
 * the MSS, as net_tap's GSO does, so they end inside lwIP's pbufs) and a
 * frame in the middle of some super-segments is lost: the receiver's SACK
 * blocks then begin and end inside sent super-segments, which the sender
 * must cut (tcp_sack_cuts) so that it resends the lost frames, not whole
 * super-segments: the wire reads the SACK blocks and counts the bytes
 * resent that the client knew the server had (next to none).
 *
 * Then a churn phase exercises the pcb index (lwip/pcb_index.c): CHURN_N
 * short connections opened and closed by the client, which closes first, so
 * each ends in TIME_WAIT on its side; every TIME_WAIT pcb must be found by
 * its 4-tuple, the oldest must be the first one closed, and reclaiming its
 * port (the tcp_tw_reuse path) must free exactly that one.
 *
 * A park phase checks the timer parking (lwip/pcb_index.c): PARK_N idle
 * connections, both ends in this instance, end up behind the timers'
 * walks; a write on one wakes it and its bytes arrive; a keepalive coming
 * due wakes one through the slow timer's sweep; a close of a parked
 * connection sends its FIN; the sweep never finds a parked pcb that a
 * wake-up should have announced (park_rescued stays 0).
 *
 * Shared state between instances (a global the transform missed, a race)
 * shows up as corrupted streams, lwIP assertions, per-thread statistics that
 * do not add up, an allocator owner mismatch (abort) or, in the
 * ThreadSanitizer build, a data race report.
 *
 * usage: lwip_instances [threads] [MiB per direction]     exit 0 pass, 1 fail
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lwip/etharp.h"
#include "lwip/inet_chksum.h"
#include "lwip/init.h"
#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"

#include "dpsock_lwip.h"
#include "dpsock_lwip_pcb_index.h"
#include "dpsock_lwip_tso.h"
#include "dpsock_tcp_rec.h"

#define MAX_THREADS     16
#define QUEUE_LEN       8192u       /* frames in flight on one thread's wire */
#define REORDER_EVERY   61u         /* swap this frame with the next one */
#define DROP_EVERY      4999u       /* lose this frame */
#define TSO_DROP_EVERY  7u          /* lose the 2nd frame of this super-segment */
#define TSO_PBUFS       64u         /* pbufs of a super-segment, at most */
#define TSO_RESENT_SLACK 2u         /* frames resent although SACKed, at most */
/* frames carry this much less than the MSS, as net_tap's GSO cuts them:
 * they end inside the pbufs (MSS-sized) lwIP joined */
#define TSO_WIRE_SHORT  14u
#define SACKED_MAX      64u
#define TEST_PORT       5001
#define TIMEOUT_S       120
#define CHURN_PORT      5002
#define CHURN_N         600         /* short connections in the churn phase */
#define PARK_PORT       5003
#define PARK_N          100         /* idle connections in the park phase */

struct frame {
    struct pbuf *p;
    struct netif *to;
};

struct conn {
    struct tcp_pcb *pcb;
    uint64_t tx_total, tx_queued;       /* bytes to send / handed to tcp_write */
    uint64_t rx_total, rx_got;          /* bytes expected / received and checked */
    uint32_t tx_seed, rx_seed;
    bool tx_shut, rx_fin, closed, err;
};

struct worker {
    int idx;
    uint64_t bytes;
    pthread_t tid;
    /* per-thread wire */
    struct frame q[QUEUE_LEN];
    unsigned int head, tail;
    uint64_t frames, dropped, tcp_delivered;
    /* the client's super-segments: cut on the wire, their frames lost,
     * the data bytes the wire carried again, the highest sent */
    uint64_t tso_segs, tso_dropped, tso_lost_bytes, tso_resent_bytes, tso_resent_sacked;
    uint32_t tso_high;
    bool tso_high_valid;
    /* what the server's SACK blocks, delivered to the client, hold now
     * (disjoint, sorted; above its cumulative ACK) */
    uint32_t sacked[SACKED_MAX][2];
    unsigned int n_sacked;
    struct netif na, nb;
    struct conn client, server;
    struct tcp_pcb *listener;
    /* churn phase */
    struct tcp_pcb *churn_listener;
    unsigned int churn_connected, churn_closed;
    u16_t churn_first_port;     /* local port of the first connection */
    /* park phase */
    struct tcp_pcb *park_listener;
    struct tcp_pcb *park_client[PARK_N];
    unsigned int park_accepted, park_connected, park_fins;
    uint64_t park_rx;
    char failure[256];
};

static _Thread_local struct worker *self;

static void
failf(const char *fmt, ...)
{
    va_list ap;

    if (self->failure[0] != '\0')
        return;
    va_start(ap, fmt);
    vsnprintf(self->failure, sizeof(self->failure), fmt, ap);
    va_end(ap);
}

/* Byte i of a stream: depends on position, stream seed (thread, direction). */
static inline uint8_t
pattern(uint32_t seed, uint64_t i)
{
    uint64_t x = (i >> 7) * 0x9e3779b97f4a7c15ULL + seed;

    return (uint8_t)(i ^ (x >> 29) ^ (x >> 47));
}

/* The server's ACK reached the client: what the client knows is SACKed. */
static void
sacked_update(struct worker *w, const uint8_t *tcp)
{
    uint32_t ack, blk[4][2];
    unsigned int thl = (tcp[12] >> 4) * 4u, o = 20, nb = 0, i, j, k;

    memcpy(&ack, tcp + 8, 4);
    ack = lwip_ntohl(ack);
    while (o < thl && tcp[o] != 0) {
        if (tcp[o] == 1) {
            o++;
            continue;
        }
        if (o + 1 >= thl || tcp[o + 1] < 2 || o + tcp[o + 1] > thl)
            break;
        if (tcp[o] == 5)
            for (j = o + 2; j + 8 <= o + tcp[o + 1] && nb < 4; j += 8, nb++) {
                memcpy(&blk[nb][0], tcp + j, 4);
                memcpy(&blk[nb][1], tcp + j + 4, 4);
                blk[nb][0] = lwip_ntohl(blk[nb][0]);
                blk[nb][1] = lwip_ntohl(blk[nb][1]);
            }
        o += tcp[o + 1];
    }
    /* below the cumulative ACK: gone */
    for (i = 0, k = 0; i < w->n_sacked; i++) {
        if (TCP_SEQ_LEQ(w->sacked[i][1], ack))
            continue;
        if (TCP_SEQ_LT(w->sacked[i][0], ack))
            w->sacked[i][0] = ack;
        w->sacked[k][0] = w->sacked[i][0];
        w->sacked[k++][1] = w->sacked[i][1];
    }
    w->n_sacked = k;
    for (j = 0; j < nb; j++) {
        uint32_t l = blk[j][0], r = blk[j][1];

        if (!TCP_SEQ_LT(l, r) || TCP_SEQ_LEQ(r, ack))
            continue; /* a D-SACK, or nothing new */
        if (TCP_SEQ_LT(l, ack))
            l = ack;
        /* merge with what it touches, keep the list sorted */
        for (i = 0, k = 0; i < w->n_sacked; i++) {
            uint32_t a = w->sacked[i][0], b = w->sacked[i][1];

            if (TCP_SEQ_LT(b, l) || TCP_SEQ_GT(a, r)) {
                w->sacked[k][0] = a;
                w->sacked[k++][1] = b;
                continue;
            }
            if (TCP_SEQ_LT(a, l))
                l = a;
            if (TCP_SEQ_GT(b, r))
                r = b;
        }
        if (k == SACKED_MAX)
            continue;
        for (i = k; i > 0 && TCP_SEQ_GT(w->sacked[i - 1][0], l); i--) {
            w->sacked[i][0] = w->sacked[i - 1][0];
            w->sacked[i][1] = w->sacked[i - 1][1];
        }
        w->sacked[i][0] = l;
        w->sacked[i][1] = r;
        w->n_sacked = k + 1;
    }
}

/* Bytes of [s, s + len) the client knows are SACKed. */
static uint32_t
sacked_overlap(const struct worker *w, uint32_t s, uint32_t len)
{
    uint32_t n = 0, e = s + len;

    for (unsigned int i = 0; i < w->n_sacked; i++) {
        uint32_t a = TCP_SEQ_GT(w->sacked[i][0], s) ? w->sacked[i][0] : s;
        uint32_t b = TCP_SEQ_LT(w->sacked[i][1], e) ? w->sacked[i][1] : e;

        if (TCP_SEQ_LT(a, b))
            n += b - a;
    }
    return n;
}

/* Put frame c (ours) on the wire from netif, or lose it (false). */
static bool
wire_put(struct worker *w, struct netif *netif, struct pbuf *c)
{
    uint64_t n = w->frames++;

    if (n % DROP_EVERY == DROP_EVERY - 1 || w->tail - w->head >= QUEUE_LEN) {
        w->dropped++;               /* lost on the wire, or the wire is full */
        pbuf_free(c);
        return false;
    }
    struct frame *f = &w->q[w->tail++ % QUEUE_LEN];
    f->p = c;
    f->to = netif == &w->na ? &w->nb : &w->na;
    if (n % REORDER_EVERY == REORDER_EVERY - 1 && w->tail - w->head >= 2) {
        struct frame *g = &w->q[(w->tail - 2) % QUEUE_LEN];
        struct frame t = *f;
        *f = *g;
        *g = t;
    }
    return true;
}

/*
 * The client's netif: cut the TCP packet p (Ethernet, IPv4, TCP) into
 * frames of one MSS (less TSO_WIRE_SHORT), as a NIC with TSO does: the headers copied, sequence
 * number, lengths, IP id and checksums per frame, PSH and FIN on the last.
 * Loses the 2nd frame of every TSO_DROP_EVERY-th packet of more than 3
 * frames; counts the bulk transfer's data bytes lost and sent again.
 */
static err_t
wire_tso(struct worker *w, struct netif *netif, struct pbuf *p)
{
    static _Thread_local uint8_t pkt[SIZEOF_ETH_HDR + 0x10000];
    const uint16_t eth = SIZEOF_ETH_HDR;

    if (pbuf_copy_partial(p, pkt, p->tot_len, 0) != p->tot_len)
        return ERR_VAL;
    uint16_t ihl = (uint16_t)((pkt[eth] & 0x0f) * 4);
    uint8_t *tcp = pkt + eth + ihl;
    uint16_t thl = (uint16_t)((tcp[12] >> 4) * 4), hdr = (uint16_t)(eth + ihl + thl);
    uint32_t data = p->tot_len - hdr, mss = netif->mtu - ihl - thl - TSO_WIRE_SHORT, seq, off, k;
    uint8_t flags = tcp[13];
    bool bulk, drop = false;
    ip_addr_t src = IPADDR4_INIT(0), dst = IPADDR4_INIT(0);
    u16_t id, dport;

    memcpy(&dport, tcp + 2, 2);
    memcpy(&seq, tcp + 4, 4);
    seq = lwip_ntohl(seq);
    memcpy(&id, pkt + eth + 4, 2);
    memcpy(ip_2_ip4(&src), pkt + eth + 12, 4);
    memcpy(ip_2_ip4(&dst), pkt + eth + 16, 4);
    bulk = dport == PP_HTONS(TEST_PORT); /* not the churn's connections */
    if (bulk && data > 3 * mss)
        drop = ++w->tso_segs % TSO_DROP_EVERY == 0;
    for (off = 0, k = 0; off < data || k == 0; off += mss, k++) {
        uint32_t len = data - off < mss ? data - off : mss, s = seq + off;
        struct pbuf *c = pbuf_alloc(PBUF_RAW, (u16_t)(hdr + len), PBUF_RAM);
        uint8_t *b;
        u16_t v;

        if (c == NULL)
            return ERR_MEM;
        b = c->payload;
        memcpy(b, pkt, hdr);
        memcpy(b + hdr, pkt + hdr + off, len);
        v = lwip_htons((u16_t)(ihl + thl + len));
        memcpy(b + eth + 2, &v, 2);
        v = lwip_htons((u16_t)(lwip_ntohs(id) + k));
        memcpy(b + eth + 4, &v, 2);
        memset(b + eth + 10, 0, 2);
        v = inet_chksum(b + eth, ihl);
        memcpy(b + eth + 10, &v, 2);
        v = 0;
        memcpy(b + eth + ihl + 16, &v, 2);
        s = lwip_htonl(s);
        memcpy(b + eth + ihl + 4, &s, 4);
        s = lwip_ntohl(s);
        if (off + len < data)
            b[eth + ihl + 13] = (uint8_t)(flags & ~(TCP_PSH | TCP_FIN));
        pbuf_remove_header(c, eth + ihl);
        v = ip_chksum_pseudo(c, IP_PROTO_TCP, (u16_t)(thl + len), &src, &dst);
        memcpy((uint8_t *)c->payload + 16, &v, 2);
        pbuf_add_header(c, eth + ihl);
        /* the wire's account: resent bytes, and a frame lost on purpose */
        if (bulk && len > 0) {
            if (w->tso_high_valid && TCP_SEQ_LT(s, w->tso_high)) {
                w->tso_resent_bytes += TCP_SEQ_LT(s + len, w->tso_high) ? len : w->tso_high - s;
                w->tso_resent_sacked += sacked_overlap(w, s, len);
            }
            if (!w->tso_high_valid || TCP_SEQ_GT(s + len, w->tso_high))
                w->tso_high = s + len;
            w->tso_high_valid = true;
        }
        if (drop && k == 1) {
            w->tso_dropped++;
            pbuf_free(c);
            w->tso_lost_bytes += len;
        } else if (!wire_put(w, netif, c) && bulk) {
            w->tso_lost_bytes += len;
        }
    }
    return ERR_OK;
}

static err_t
wire_linkoutput(struct netif *netif, struct pbuf *p)
{
    struct worker *w = self;

    const uint8_t *b = p->payload;

    if (netif == &w->na && p->len >= SIZEOF_ETH_HDR + 20 && b[12] == 0x08 && b[13] == 0x00 &&
        b[SIZEOF_ETH_HDR + 9] == IP_PROTO_TCP)
        return wire_tso(w, netif, p);
    struct pbuf *c = pbuf_alloc(PBUF_RAW, p->tot_len, PBUF_RAM);
    if (c == NULL)
        return ERR_MEM;
    pbuf_copy(c, p);
    wire_put(w, netif, c);
    return ERR_OK;
}

static err_t
wire_netif_init(struct netif *netif)
{
    netif->hwaddr_len = ETH_HWADDR_LEN;
    netif->mtu = 1500;
    netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET |
                   NETIF_FLAG_IGMP;
    netif->output = etharp_output;
    netif->linkoutput = wire_linkoutput;
    netif->name[0] = 't';
    netif->name[1] = 'w';
    return ERR_OK;
}

/* Deliver what is on the wire now (frames sent meanwhile wait a round). */
static unsigned int
wire_deliver(struct worker *w)
{
    unsigned int n = 0, end = w->tail;

    while (w->head != end) {
        struct frame f = w->q[w->head++ % QUEUE_LEN];
        const uint8_t *b = f.p->payload;

        if (f.p->len >= 34 && b[12] == 0x08 && b[13] == 0x00 && b[23] == 6) {
            const uint8_t *tcp = b + SIZEOF_ETH_HDR + (b[SIZEOF_ETH_HDR] & 0x0f) * 4;

            w->tcp_delivered++;
            if (f.to == &w->na && tcp[0] == (TEST_PORT >> 8) && tcp[1] == (TEST_PORT & 0xff) &&
                (tcp[13] & TCP_ACK))
                sacked_update(w, tcp);
        }
        if (f.to->input(f.p, f.to) != ERR_OK)
            pbuf_free(f.p);
        n++;
    }
    return n;
}

static void conn_maybe_close(struct conn *c);

static void
conn_push(struct conn *c)
{
    if (c->pcb == NULL || c->err)
        return;
    while (c->tx_queued < c->tx_total) {
        uint8_t buf[16384];
        uint64_t left = c->tx_total - c->tx_queued;
        uint32_t room = tcp_sndbuf(c->pcb);
        uint32_t n = (uint32_t)(left < sizeof(buf) ? left : sizeof(buf));

        if (n > room)
            n = room;
        if (n == 0 || tcp_sndqueuelen(c->pcb) >= TCP_SND_QUEUELEN - 4)
            break;
        for (uint32_t i = 0; i < n; i++)
            buf[i] = pattern(c->tx_seed, c->tx_queued + i);
        err_t e = tcp_write(c->pcb, buf, (u16_t)n, TCP_WRITE_FLAG_COPY);
        if (e == ERR_MEM)
            break;
        if (e != ERR_OK) {
            failf("tcp_write: %d", e);
            return;
        }
        c->tx_queued += n;
    }
    if (c->tx_queued == c->tx_total && !c->tx_shut) {
        /* all data queued: send our FIN behind it */
        if (tcp_shutdown(c->pcb, 0, 1) == ERR_OK)
            c->tx_shut = true;
    }
    tcp_output(c->pcb);
    conn_maybe_close(c);
}

static void
conn_maybe_close(struct conn *c)
{
    if (c->pcb != NULL && c->tx_shut && c->rx_fin && !c->closed) {
        tcp_arg(c->pcb, NULL);
        tcp_recv(c->pcb, NULL);
        tcp_sent(c->pcb, NULL);
        tcp_err(c->pcb, NULL);
        if (tcp_close(c->pcb) != ERR_OK)
            failf("tcp_close failed");
        c->pcb = NULL;
        c->closed = true;
    }
}

static err_t
conn_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct conn *c = arg;

    if (p == NULL) {
        if (c->rx_got != c->rx_total)
            failf("FIN after %" PRIu64 " of %" PRIu64 " bytes", c->rx_got, c->rx_total);
        c->rx_fin = true;
        conn_maybe_close(c);
        return ERR_OK;
    }
    for (struct pbuf *q = p; q != NULL; q = q->next) {
        const uint8_t *b = q->payload;
        for (u16_t i = 0; i < q->len; i++) {
            if (b[i] != pattern(c->rx_seed, c->rx_got + i)) {
                failf("stream corrupted at byte %" PRIu64, c->rx_got + i);
                break;
            }
        }
        c->rx_got += q->len;
    }
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    return ERR_OK;
}

static err_t
conn_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
    conn_push(arg);
    return ERR_OK;
}

static void
conn_err(void *arg, err_t err)
{
    struct conn *c = arg;

    failf("connection error %d", err);
    c->pcb = NULL;
    c->err = true;
}

static void
conn_setup(struct conn *c, struct tcp_pcb *pcb)
{
    c->pcb = pcb;
    tcp_arg(pcb, c);
    tcp_recv(pcb, conn_recv);
    tcp_sent(pcb, conn_sent);
    tcp_err(pcb, conn_err);
}

static err_t
server_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct worker *w = arg;

    if (err != ERR_OK || pcb == NULL || w->server.pcb != NULL)
        return ERR_VAL;
    conn_setup(&w->server, pcb);
    conn_push(&w->server);
    return ERR_OK;
}

static err_t
client_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct conn *c = arg;

    if (err != ERR_OK) {
        failf("connect: %d", err);
        return err;
    }
    /* both sides asked for the options; check lwIP agreed on them */
    if (!(pcb->flags & TF_WND_SCALE) || !(pcb->flags & TF_TIMESTAMP) || !(pcb->flags & TF_SACK))
        failf("window scaling/timestamps/SACK not negotiated (flags 0x%x)", pcb->flags);
    conn_push(c);
    return ERR_OK;
}

/* Churn phase: the server closes when the client's FIN arrives; the
 * client closes as soon as it is connected (so it closes first). */
static err_t
churn_server_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct worker *w = arg;

    if (p != NULL) {
        tcp_recved(pcb, p->tot_len);
        pbuf_free(p);
        return ERR_OK;
    }
    w->churn_closed++;
    tcp_arg(pcb, NULL);
    tcp_recv(pcb, NULL);
    if (tcp_close(pcb) != ERR_OK)
        failf("churn: server tcp_close");
    return ERR_OK;
}

static err_t
churn_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    if (err != ERR_OK || pcb == NULL)
        return ERR_VAL;
    tcp_arg(pcb, arg);
    tcp_recv(pcb, churn_server_recv);
    return ERR_OK;
}

static err_t
churn_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct worker *w = arg;

    if (err != ERR_OK) {
        failf("churn connect: %d", err);
        return err;
    }
    if (w->churn_connected++ == 0)
        w->churn_first_port = pcb->local_port;
    tcp_arg(pcb, NULL);
    if (tcp_close(pcb) != ERR_OK)
        failf("churn: client tcp_close");
    return ERR_OK;
}

static double now_s(void);

/* ---- park phase ---- */

static err_t
park_server_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
    struct worker *w = arg;

    (void)err;
    if (p == NULL) {
        w->park_fins++;
        tcp_arg(pcb, NULL);
        tcp_recv(pcb, NULL);
        tcp_close(pcb);
        return ERR_OK;
    }
    w->park_rx += p->tot_len;
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    return ERR_OK;
}

static err_t
park_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct worker *w = arg;

    if (err != ERR_OK || pcb == NULL)
        return ERR_VAL;
    tcp_arg(pcb, w);
    tcp_recv(pcb, park_server_recv);
    w->park_accepted++;
    return ERR_OK;
}

static err_t
park_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
    struct worker *w = arg;

    (void)pcb;
    if (err != ERR_OK)
        return err;
    w->park_connected++;
    return ERR_OK;
}

/* Run the wire and the timers for s seconds, or until done(w) holds. */
static bool
park_run(struct worker *w, double s, bool (*done)(struct worker *))
{
    double end = now_s() + s;

    while (w->failure[0] == '\0' && now_s() < end) {
        if (done != NULL && done(w))
            return true;
        if (wire_deliver(w) == 0)
            sys_check_timeouts();
    }
    return done == NULL || done(w);
}

static bool
park_all_up(struct worker *w)
{
    return w->park_accepted == PARK_N && w->park_connected == PARK_N;
}

static uint64_t
park_parked(void)
{
    struct dpsock_tcp_index_stats ix;

    dpsock_tcp_index_stats(&ix);
    return ix.parked_now;
}

static bool
park_all_parked(struct worker *w)
{
    (void)w;
    return park_parked() == 2 * PARK_N;
}

static void
park(struct worker *w, const ip_addr_t *ipb)
{
    struct dpsock_tcp_index_stats ix;
    struct tcp_pcb *l = tcp_new(), *c, *srv;
    static const char msg[] = "parked, then woken";
    uint64_t rx0;
    unsigned int i;

    tcp_bind_netif(l, &w->nb);
    if (tcp_bind(l, ipb, PARK_PORT) != ERR_OK) {
        failf("park: tcp_bind");
        return;
    }
    w->park_listener = tcp_listen(l);
    tcp_arg(w->park_listener, w);
    tcp_accept(w->park_listener, park_accept);
    for (i = 0; i < PARK_N; i++) {
        c = tcp_new();
        tcp_bind_netif(c, &w->na);
        tcp_arg(c, w);
        if (tcp_connect(c, ipb, PARK_PORT, park_connected) != ERR_OK) {
            failf("park: tcp_connect %u", i);
            return;
        }
        w->park_client[i] = c;
    }
    if (!park_run(w, 10, park_all_up)) {
        failf("park: %u of %u connections up", w->park_connected, PARK_N);
        return;
    }
    /* idle: every end parked within a few fast-timer ticks */
    if (!park_run(w, 2, park_all_parked)) {
        failf("park: %" PRIu64 " of %u idle pcbs parked", park_parked(), 2 * PARK_N);
        return;
    }
    /* a write wakes its pcb; the bytes arrive; it parks again */
    c = w->park_client[PARK_N / 2];
    rx0 = w->park_rx;
    if (tcp_write(c, msg, sizeof(msg), TCP_WRITE_FLAG_COPY) != ERR_OK || tcp_output(c) != ERR_OK) {
        failf("park: write on a parked connection");
        return;
    }
    if (c->dp_parked)
        failf("park: a written pcb is still parked");
    park_run(w, 2, NULL);
    if (w->park_rx != rx0 + sizeof(msg))
        failf("park: %" PRIu64 " bytes arrived of %zu written on a parked connection",
              w->park_rx - rx0, sizeof(msg));
    if (!park_run(w, 2, park_all_parked))
        failf("park: %" PRIu64 " parked after the write, %u expected", park_parked(), 2 * PARK_N);
    /* a keepalive coming due within the sweep's period: the slow timer's
     * sweep wakes its (parked) pcb, which then stays where the timers see it */
    srv = NULL;
    for (struct tcp_pcb *p = tcp_active_pcbs; p != NULL; p = p->next)
        if (p->local_port == PARK_PORT && p->dp_parked)
            srv = p;
    if (srv == NULL) {
        failf("park: no parked server pcb");
        return;
    }
    ip_set_option(srv, SOF_KEEPALIVE);
    srv->keep_idle = DPSOCK_TCP_PARK_SWEEP_MS + 2000; /* due within the period after 2 s */
    park_run(w, 4, NULL);
    if (srv->dp_parked || park_parked() != 2 * PARK_N - 1)
        failf("park: a keepalive coming due left its pcb parked (%" PRIu64 " parked)",
              park_parked());
    /* the close of a parked connection sends its FIN */
    if (tcp_close(w->park_client[0]) != ERR_OK)
        failf("park: tcp_close");
    w->park_client[0] = NULL;
    park_run(w, 2, NULL);
    if (w->park_fins != 1)
        failf("park: %u FINs reached the server after closing a parked connection", w->park_fins);
    dpsock_tcp_index_stats(&ix);
    if (ix.park_rescued != 0)
        failf("park: the sweep found %" PRIu64 " parked pcbs with timer work", ix.park_rescued);
    /* the rest: reset both ends */
    for (i = 1; i < PARK_N; i++)
        tcp_abort(w->park_client[i]);
    for (struct tcp_pcb *p = tcp_active_pcbs, *n; p != NULL; p = n) {
        n = p->next;
        if (p->local_port == PARK_PORT)
            tcp_abort(p);
    }
    park_run(w, 0.2, NULL);
}

/* Super-segments went out, frames inside them were lost, SACK blocks that
 * began or ended inside them cut them (exactly, inside pbufs), and the
 * client resent nothing it knew the server had (but for ACKs crossing a
 * retransmission); resending whole super-segments resends tens of frames
 * SACKed. (What
 * it resends in all depends on timing: a descheduled thread makes RACK or
 * the RTO resend more, rightly, from what it knows.) */
static void
tso_check(struct worker *w)
{
    const struct dpsock_tcp_rec_stats *st = dpsock_tcp_rec_stats_get();

    if (w->tso_dropped == 0)
        failf("tso: %" PRIu64 " super-segments, none lost a frame", w->tso_segs);
    else if (st->tcp_sack_cuts == 0)
        failf("tso: no super-segment cut at a SACK block's edge (%" PRIu64 " blocks received)",
              st->tcp_sack_blocks);
    else if (w->tso_resent_sacked > TSO_RESENT_SLACK * w->na.mtu)
        failf("tso: %" PRIu64 " bytes resent that the client knew SACKed (%" PRIu64
              " resent, %" PRIu64 " lost)", w->tso_resent_sacked, w->tso_resent_bytes,
              w->tso_lost_bytes);
}

/* CHURN_N connections one after the other, then checks of the TIME_WAIT
 * pcbs the client kept. */
static void
churn(struct worker *w, const ip_addr_t *ipb)
{
    struct dpsock_tcp_index_stats ix0, ix;
    struct tcp_pcb *l = tcp_new(), *pcb;
    double deadline = now_s() + TIMEOUT_S;
    unsigned int i, n_tw = 0;
    u16_t port;

    dpsock_tcp_index_stats(&ix0);
    tcp_bind_netif(l, &w->nb);
    if (tcp_bind(l, ipb, CHURN_PORT) != ERR_OK) {
        failf("churn: tcp_bind");
        return;
    }
    w->churn_listener = tcp_listen(l);
    tcp_arg(w->churn_listener, w);
    tcp_accept(w->churn_listener, churn_accept);
    for (i = 0; i < CHURN_N && w->failure[0] == '\0'; i++) {
        struct tcp_pcb *c = tcp_new();

        tcp_bind_netif(c, &w->na);
        tcp_arg(c, w);
        if (tcp_connect(c, ipb, CHURN_PORT, churn_connected) != ERR_OK) {
            failf("churn: tcp_connect %u", i);
            break;
        }
        while (w->churn_closed <= i && w->failure[0] == '\0' && now_s() < deadline)
            if (wire_deliver(w) == 0)
                sys_check_timeouts();
    }
    /* the last ACKs */
    while (w->failure[0] == '\0' && tcp_active_pcbs != NULL && now_s() < deadline)
        if (wire_deliver(w) == 0)
            sys_check_timeouts();
    if (w->failure[0] != '\0')
        return;
    if (w->churn_connected != CHURN_N || w->churn_closed != CHURN_N || tcp_active_pcbs != NULL) {
        failf("churn: %u connected, %u closed of %u; active pcbs left: %s", w->churn_connected,
              w->churn_closed, CHURN_N, tcp_active_pcbs != NULL ? "yes" : "no");
        return;
    }
    /* every TIME_WAIT pcb is in the hash under its 4-tuple */
    dpsock_tcp_index_stats(&ix);
    for (pcb = tcp_tw_pcbs; pcb != NULL; pcb = pcb->next, n_tw++)
        if (dpsock_tcp_lookup(&pcb->local_ip, pcb->local_port, &pcb->remote_ip,
                              pcb->remote_port) != pcb) {
            failf("churn: TIME_WAIT pcb of port %u not found by its 4-tuple", pcb->local_port);
            return;
        }
    if (ix.tw_now != ix0.tw_now + CHURN_N || n_tw != ix.tw_now || ix.hashed_now != ix.tw_now)
        failf("churn: %" PRIu64 " TIME_WAIT pcbs counted (%u listed, %" PRIu64 " hashed), "
              "expected %" PRIu64, ix.tw_now, n_tw, ix.hashed_now, ix0.tw_now + CHURN_N);
    /* the oldest of the churn is the first one closed (the bulk
     * connection's TIME_WAIT pcbs, older still, are reclaimed first: one,
     * or both ends when their FINs crossed) */
    for (i = 0; i < ix0.tw_now; i++)
        if (dpsock_tcp_tw_reclaim(0, 65535, 0, 1, NULL, NULL) == 0) {
            failf("churn: the bulk connection's TIME_WAIT pcb %u of %" PRIu64
                  " could not be reclaimed", i + 1, ix0.tw_now);
            return;
        }
    pcb = dpsock_tcp_tw_oldest();
    if (pcb == NULL || pcb->local_port != w->churn_first_port)
        failf("churn: oldest TIME_WAIT pcb has port %u, the first connection had %u",
              pcb != NULL ? pcb->local_port : 0, w->churn_first_port);
    port = dpsock_tcp_tw_reclaim(0, 65535, 0, 1, NULL, NULL);
    dpsock_tcp_index_stats(&ix);
    if (port != w->churn_first_port || ix.tw_now != CHURN_N - 1 ||
        ix.tw_reused != ix0.tw_reused + ix0.tw_now + 1)
        failf("churn: reclaim gave port %u (first %u), %" PRIu64 " TIME_WAIT left, %" PRIu64
              " reused", port, w->churn_first_port, ix.tw_now, ix.tw_reused);
}

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
run(struct worker *w)
{
    struct dpsock_lwip_params params = { .rand_seed = 0x1234u + (uint64_t)w->idx };
    ip4_addr_t ipa, ipb4, mask, gw;
    ip_addr_t ipb;
    int rc;

    rc = dpsock_lwip_instance_init(&params);
    if (rc != 0) {
        failf("dpsock_lwip_instance_init: %d", rc);
        return;
    }
    if (dpsock_lwip_instance_init(&params) != -EALREADY)
        failf("second instance_init on a thread did not fail with -EALREADY");

    IP4_ADDR(&ipa, 198, 18, 0, 1);
    IP4_ADDR(&ipb4, 198, 18, 0, 2);
    ip_addr_copy_from_ip4(ipb, ipb4);
    IP4_ADDR(&mask, 255, 255, 255, 0);
    ip4_addr_set_zero(&gw);
    if (netif_add(&w->na, &ipa, &mask, &gw, w, wire_netif_init, ethernet_input) == NULL ||
        netif_add(&w->nb, &ipb4, &mask, &gw, w, wire_netif_init, ethernet_input) == NULL) {
        failf("netif_add failed");
        return;
    }
    static const uint8_t mac_a[6] = { 0x02, 0, 0, 0, 0, 0x0a };
    static const uint8_t mac_b[6] = { 0x02, 0, 0, 0, 0, 0x0b };
    memcpy(w->na.hwaddr, mac_a, 6);
    memcpy(w->nb.hwaddr, mac_b, 6);
    netif_set_up(&w->na);
    netif_set_up(&w->nb);
    netif_set_link_up(&w->na);
    netif_set_link_up(&w->nb);
    /* the client's end segments: lwIP sends it super-segments */
    dpsock_tcp_netif_set_tso(&w->na, DPSOCK_TCP_TSO_MAX, TSO_PBUFS);

    uint32_t s = (uint32_t)w->idx * 2654435761u;
    w->client = (struct conn){ .tx_total = w->bytes, .rx_total = w->bytes / 2 + 12345,
                               .tx_seed = s ^ 0xc11e, .rx_seed = s ^ 0x5e4e };
    w->server = (struct conn){ .tx_total = w->bytes / 2 + 12345, .rx_total = w->bytes,
                               .tx_seed = s ^ 0x5e4e, .rx_seed = s ^ 0xc11e };

    /* listener and client are bound to their netif: both addresses share a
     * subnet, and each side must transmit on its own end of the wire */
    struct tcp_pcb *l = tcp_new();
    tcp_bind_netif(l, &w->nb);
    if (tcp_bind(l, &ipb, TEST_PORT) != ERR_OK) {
        failf("tcp_bind");
        return;
    }
    w->listener = tcp_listen(l);
    tcp_arg(w->listener, w);
    tcp_accept(w->listener, server_accept);

    struct tcp_pcb *c = tcp_new();
    tcp_bind_netif(c, &w->na);
    conn_setup(&w->client, c);
    if (tcp_connect(c, &ipb, TEST_PORT, client_connected) != ERR_OK) {
        failf("tcp_connect");
        return;
    }

    double deadline = now_s() + TIMEOUT_S;
    while (!(w->client.closed && w->server.closed) && w->failure[0] == '\0') {
        if (wire_deliver(w) == 0)
            sys_check_timeouts();
        conn_push(&w->client);
        conn_push(&w->server);
        if (now_s() > deadline) {
            failf("timeout: client tx %" PRIu64 "/%" PRIu64 " rx %" PRIu64 "/%" PRIu64
                  ", server tx %" PRIu64 " rx %" PRIu64,
                  w->client.tx_queued, w->client.tx_total, w->client.rx_got,
                  w->client.rx_total, w->server.tx_queued, w->server.rx_got);
        }
    }
    /* let the last ACKs/FINs cross the wire */
    double settle = now_s() + 2.0;
    while (w->failure[0] == '\0' && (tcp_active_pcbs != NULL) && now_s() < settle) {
        if (wire_deliver(w) == 0)
            sys_check_timeouts();
    }
    if (w->failure[0] == '\0') {
        if (w->client.rx_got != w->client.rx_total || w->server.rx_got != w->server.rx_total)
            failf("short transfer");
        if (tcp_active_pcbs != NULL)
            failf("a connection is still active after both ends closed (state %d)",
                  tcp_active_pcbs->state);
        if (tcp_tw_pcbs == NULL)
            failf("no TIME_WAIT pcb after an orderly close");
        /* this thread's statistics count this thread's traffic only */
        if (lwip_stats.tcp.recv != (u16_t)w->tcp_delivered)
            failf("lwip_stats.tcp.recv %u != %" PRIu64 " TCP frames delivered on this thread",
                  lwip_stats.tcp.recv, w->tcp_delivered);
        tso_check(w);
    }
    if (w->failure[0] == '\0')
        park(w, &ipb);
    if (w->failure[0] == '\0')
        churn(w, &ipb);

    /* teardown: TIME_WAIT pcbs, listener, netifs, frames still on the wire */
    while (tcp_tw_pcbs != NULL)
        tcp_abort(tcp_tw_pcbs);
    if (w->listener != NULL)
        tcp_close(w->listener);
    if (w->churn_listener != NULL)
        tcp_close(w->churn_listener);
    if (w->park_listener != NULL)
        tcp_close(w->park_listener);
    while (tcp_active_pcbs != NULL)
        tcp_abort(tcp_active_pcbs);
    netif_remove(&w->na);
    netif_remove(&w->nb);
    while (w->head != w->tail)
        pbuf_free(w->q[w->head++ % QUEUE_LEN].p);
    dpsock_lwip_instance_fini();
    if (dpsock_lwip_instance_owned())
        failf("instance still owned after fini");

    struct dpsock_lwip_mem_stats ms;
    dpsock_lwip_mem_stats(&ms);
    if (ms.bytes_in_use != 0 || ms.objs_in_use != 0)
        failf("leak: %" PRIu64 " bytes in %" PRIu64 " objects still allocated",
              ms.bytes_in_use, ms.objs_in_use);
    if (ms.allocs != ms.frees || ms.allocs == 0 || ms.fails != 0)
        failf("allocator counters: allocs %" PRIu64 " frees %" PRIu64 " fails %" PRIu64,
              ms.allocs, ms.frees, ms.fails);
    printf("thread %d: %" PRIu64 " + %" PRIu64 " bytes verified, %" PRIu64 " frames (%" PRIu64
           " dropped), %" PRIu64 " allocs; super-segments %" PRIu64 ": %" PRIu64
           " bytes lost, %" PRIu64 " resent (%" PRIu64 " SACKed), %" PRIu64 " cuts; churn: %u connections, "
           "TIME_WAIT indexed\n", w->idx, w->server.rx_got, w->client.rx_got, w->frames,
           w->dropped, ms.allocs, w->tso_segs, w->tso_lost_bytes, w->tso_resent_bytes, w->tso_resent_sacked,
           dpsock_tcp_rec_stats_get()->tcp_sack_cuts, w->churn_connected);
}

static void *
thread_main(void *arg)
{
    self = arg;
    run(self);
    return NULL;
}

/* Out-of-memory: past the per-thread limit allocations fail cleanly. */
static int
oom_check(void)
{
    struct dpsock_lwip_params params = { .mem_limit = 4096 };
    struct dpsock_lwip_mem_stats ms;
    int fails = 0;

    if (dpsock_lwip_instance_init(&params) != 0)
        return 1;
    struct pbuf *p = pbuf_alloc(PBUF_RAW, 8000, PBUF_RAM);
    if (p != NULL) {
        fprintf(stderr, "FAIL: an 8000-byte pbuf was allocated past a 4096-byte limit\n");
        fails++;
        pbuf_free(p);
    }
    dpsock_lwip_mem_stats(&ms);
    if (ms.fails == 0) {
        fprintf(stderr, "FAIL: allocation failure not counted\n");
        fails++;
    }
    dpsock_lwip_instance_fini();
    return fails;
}

int
main(int argc, char **argv)
{
    static struct worker workers[MAX_THREADS];
    int n = argc > 1 ? atoi(argv[1]) : 2;
    uint64_t mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 8;
    int failed = 0;
    double t0 = now_s();

    if (n < 1 || n > MAX_THREADS || mib == 0) {
        fprintf(stderr, "usage: %s [threads 1..%d] [MiB per direction]\n", argv[0], MAX_THREADS);
        return 1;
    }
    if (oom_check() != 0)
        failed = 1;
    for (int i = 0; i < n; i++) {
        workers[i].idx = i;
        workers[i].bytes = mib << 20;
        if (pthread_create(&workers[i].tid, NULL, thread_main, &workers[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(workers[i].tid, NULL);
        if (workers[i].failure[0] != '\0') {
            fprintf(stderr, "FAIL thread %d: %s\n", i, workers[i].failure);
            failed = 1;
        }
    }
    printf("%s: %d instances, %.2f s\n", failed ? "FAIL" : "PASS", n, now_s() - t0);
    return failed;
}
