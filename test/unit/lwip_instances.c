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
 * Then a churn phase exercises the pcb index (lwip/pcb_index.c): CHURN_N
 * short connections opened and closed by the client, which closes first, so
 * each ends in TIME_WAIT on its side; every TIME_WAIT pcb must be found by
 * its 4-tuple, the oldest must be the first one closed, and reclaiming its
 * port (the tcp_tw_reuse path) must free exactly that one.
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

#define MAX_THREADS     16
#define QUEUE_LEN       8192u       /* frames in flight on one thread's wire */
#define REORDER_EVERY   61u         /* swap this frame with the next one */
#define DROP_EVERY      4999u       /* lose this frame */
#define TEST_PORT       5001
#define TIMEOUT_S       120
#define CHURN_PORT      5002
#define CHURN_N         600         /* short connections in the churn phase */

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
    struct netif na, nb;
    struct conn client, server;
    struct tcp_pcb *listener;
    /* churn phase */
    struct tcp_pcb *churn_listener;
    unsigned int churn_connected, churn_closed;
    u16_t churn_first_port;     /* local port of the first connection */
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

static err_t
wire_linkoutput(struct netif *netif, struct pbuf *p)
{
    struct worker *w = self;
    uint64_t n = w->frames++;

    if (n % DROP_EVERY == DROP_EVERY - 1) {
        w->dropped++;
        return ERR_OK;              /* lost on the wire */
    }
    if (w->tail - w->head >= QUEUE_LEN) {
        w->dropped++;
        return ERR_OK;              /* wire full: lost too */
    }
    struct pbuf *c = pbuf_alloc(PBUF_RAW, p->tot_len, PBUF_RAM);
    if (c == NULL)
        return ERR_MEM;
    pbuf_copy(c, p);
    struct frame *f = &w->q[w->tail++ % QUEUE_LEN];
    f->p = c;
    f->to = netif == &w->na ? &w->nb : &w->na;
    if (n % REORDER_EVERY == REORDER_EVERY - 1 && w->tail - w->head >= 2) {
        struct frame *g = &w->q[(w->tail - 2) % QUEUE_LEN];
        struct frame t = *f;
        *f = *g;
        *g = t;
    }
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

        if (f.p->len >= 34 && b[12] == 0x08 && b[13] == 0x00 && b[23] == 6)
            w->tcp_delivered++;
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

/* CHURN_N connections one after the other, then checks of the TIME_WAIT
 * pcbs the client kept. */
static void
churn(struct worker *w, const ip4_addr_t *ipb)
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
        if (dpsock_tcp_lookup(ip4_addr_get_u32(&pcb->local_ip), pcb->local_port,
                              ip4_addr_get_u32(&pcb->remote_ip), pcb->remote_port) != pcb) {
            failf("churn: TIME_WAIT pcb of port %u not found by its 4-tuple", pcb->local_port);
            return;
        }
    if (ix.tw_now != ix0.tw_now + CHURN_N || n_tw != ix.tw_now || ix.hashed_now != ix.tw_now)
        failf("churn: %" PRIu64 " TIME_WAIT pcbs counted (%u listed, %" PRIu64 " hashed), "
              "expected %" PRIu64, ix.tw_now, n_tw, ix.hashed_now, ix0.tw_now + CHURN_N);
    /* the oldest of the churn is the first one closed (the bulk
     * connection's TIME_WAIT, older still, is reclaimed first) */
    if (ix0.tw_now > 0 && dpsock_tcp_tw_reclaim(0, 65535, 0, 1, NULL, NULL) == 0)
        failf("churn: the bulk connection's TIME_WAIT pcb could not be reclaimed");
    pcb = dpsock_tcp_tw_oldest();
    if (pcb == NULL || pcb->local_port != w->churn_first_port)
        failf("churn: oldest TIME_WAIT pcb has port %u, the first connection had %u",
              pcb != NULL ? pcb->local_port : 0, w->churn_first_port);
    port = dpsock_tcp_tw_reclaim(0, 65535, 0, 1, NULL, NULL);
    dpsock_tcp_index_stats(&ix);
    if (port != w->churn_first_port || ix.tw_now != CHURN_N - 1 || ix.tw_reused != 2u - (ix0.tw_now == 0))
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
    ip4_addr_t ipa, ipb, mask, gw;
    int rc;

    rc = dpsock_lwip_instance_init(&params);
    if (rc != 0) {
        failf("dpsock_lwip_instance_init: %d", rc);
        return;
    }
    if (dpsock_lwip_instance_init(&params) != -EALREADY)
        failf("second instance_init on a thread did not fail with -EALREADY");

    IP4_ADDR(&ipa, 198, 18, 0, 1);
    IP4_ADDR(&ipb, 198, 18, 0, 2);
    IP4_ADDR(&mask, 255, 255, 255, 0);
    ip4_addr_set_zero(&gw);
    if (netif_add(&w->na, &ipa, &mask, &gw, w, wire_netif_init, ethernet_input) == NULL ||
        netif_add(&w->nb, &ipb, &mask, &gw, w, wire_netif_init, ethernet_input) == NULL) {
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
    }
    if (w->failure[0] == '\0')
        churn(w, &ipb);

    /* teardown: TIME_WAIT pcbs, listener, netifs, frames still on the wire */
    while (tcp_tw_pcbs != NULL)
        tcp_abort(tcp_tw_pcbs);
    if (w->listener != NULL)
        tcp_close(w->listener);
    if (w->churn_listener != NULL)
        tcp_close(w->churn_listener);
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
           " dropped), %" PRIu64 " allocs; churn: %u connections, TIME_WAIT indexed\n", w->idx,
           w->server.rx_got, w->client.rx_got, w->frames, w->dropped, ms.allocs,
           w->churn_connected);
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
