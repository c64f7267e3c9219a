/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lwIP netif over DPDK mbufs.
 *
 * Receive is zero-copy: the pbuf_custom that describes a frame lives in the
 * mbuf's private area (right after struct rte_mbuf), its payload points at
 * the mbuf's data, and its free callback returns the mbuf to its pool. lwIP
 * may keep such a pbuf (out-of-order queue, receive queue) as long as it
 * likes; the mbuf goes back when the last reference drops.
 *
 * Transmit is zero-copy for large frames: lwIP's allocator draws on DPDK
 * memory, so a frame lwIP built (headers and the data dpsock_send copied in
 * once) is lent to the NIC as an mbuf with an external buffer; the pbuf is
 * referenced until the PMD frees the mbuf. Small frames, frames whose pbuf
 * is still lent (a retransmission racing the first copy), and chains that
 * point into application mbufs are copied into mbufs instead. Frames are
 * batched per worker; the TX checksum offloads the port offers replace
 * lwIP's software checksums (per-netif checksum control).
 */

#include <string.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "lwip_compat_priv.h"

#include "lwip/etharp.h"
#include "lwip/pbuf.h"
#include "lwip/prot/tcp.h"
#include "dpsock_lwip_hooks.h"
#include "netif/ethernet.h"

#include <rte_malloc.h>
#include <rte_memory.h>

#include "lwip/mem.h"

#include "stack_priv.h"
#include "log_priv.h"

/* Frames shorter than this are copied: a copy is cheaper than a loan. */
#define TX_LOAN_MIN 256

/* A frame of lwIP's lent to the NIC. One per frame; its shinfo counts the
 * mbuf segments that point into the frame's pbufs. */
struct dpsock_tx_loan {
	struct rte_mbuf_ext_shared_info shinfo;
	struct pbuf *p;
	struct dpsock_worker *w;
	struct dpsock_tx_loan *next; /* on w->loan_returns */
};

void *
dpsock_netif_mem_get(size_t size)
{
	return rte_malloc("dpsock_lwip", size, RTE_CACHE_LINE_SIZE);
}

void
dpsock_netif_mem_put(void *p)
{
	rte_free(p);
}

static void
loan_end(struct dpsock_tx_loan *l)
{
	pbuf_free(l->p);
	l->w->tx_loans--;
	mem_free(l);
}

/* The PMD freed the last mbuf pointing into the frame. */
static void
loan_free_cb(void *addr, void *opaque)
{
	struct dpsock_tx_loan *l = opaque;
	struct dpsock_worker *w = l->w;

	if (likely(dpsock_self == w)) {
		loan_end(l);
		return;
	}
	/* lwIP's memory belongs to its worker: hand the loan back.
	 * release: the loan's fields are visible to the acquire exchange in
	 * dpsock_netif_reclaim */
	l->next = __atomic_load_n(&w->loan_returns, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&w->loan_returns, &l->next, l, true,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

unsigned int
dpsock_netif_reclaim(struct dpsock_worker *w)
{
	struct dpsock_tx_loan *l;
	unsigned int n = 0;

	if (likely(__atomic_load_n(&w->loan_returns, __ATOMIC_RELAXED) == NULL))
		return 0;
	/* acquire: pairs with the release in loan_free_cb */
	l = __atomic_exchange_n(&w->loan_returns, NULL, __ATOMIC_ACQUIRE);
	while (l != NULL) {
		struct dpsock_tx_loan *next = l->next;

		loan_end(l);
		l = next;
		n++;
	}
	return n;
}

unsigned int
dpsock_netif_mbuf_priv_size(void)
{
	return RTE_ALIGN(sizeof(struct dpsock_mbuf_priv), RTE_MBUF_PRIV_ALIGN);
}

static inline struct rte_mbuf *
pbuf_to_mbuf(struct pbuf *p)
{
	return (struct rte_mbuf *)((char *)p - sizeof(struct rte_mbuf));
}

static void
mbuf_pbuf_free(struct pbuf *p)
{
	/* lwIP frees a pbuf on the worker that wrapped it */
	if (likely(dpsock_self != NULL))
		dpsock_stat_add(&dpsock_self->stats->mbufs_held, -1);
	rte_pktmbuf_free(pbuf_to_mbuf(p));
}

struct rte_mbuf *
dpsock_netif_pbuf_mbuf(struct pbuf *p)
{
	if (!(p->flags & PBUF_FLAG_IS_CUSTOM) ||
	    ((struct pbuf_custom *)p)->custom_free_function != mbuf_pbuf_free)
		return NULL;
	return pbuf_to_mbuf(p);
}

int
dpsock_lwip_tcp_unmatched(struct pbuf *p, struct tcp_hdr *hdr)
{
	struct dpsock_worker *w = dpsock_self;
	struct dpsock_mbuf_priv *priv;
	struct rte_mbuf *m, *copy;
	unsigned int n;

	if (w == NULL || (n = w->d->n_workers) < 2)
		return 0;
	/* a SYN opens a connection here (every worker listens alike) */
	if ((TCPH_FLAGS(hdr) & (TCP_SYN | TCP_ACK)) == TCP_SYN)
		return 0;
	/* only a frame wrapped whole by dpsock_netif_input can be handed on */
	if (p->next != NULL || !(p->flags & PBUF_FLAG_IS_CUSTOM) ||
	    ((struct pbuf_custom *)p)->custom_free_function != mbuf_pbuf_free)
		return 0;
	m = pbuf_to_mbuf(p);
	priv = rte_mbuf_to_priv(m);
	if (priv->hops + 1u >= n)
		return 0; /* every worker has seen it: nobody owns it */
	/* tcp_input turned these to host order in place; the next worker
	 * parses the frame afresh */
	hdr->src = lwip_htons(hdr->src);
	hdr->dest = lwip_htons(hdr->dest);
	hdr->seqno = lwip_htonl(hdr->seqno);
	hdr->ackno = lwip_htonl(hdr->ackno);
	hdr->wnd = lwip_htons(hdr->wnd);
	/* A copy, not a reference: lwIP still owns this mbuf's private area
	 * (the pbuf_custom) until it frees p, after we return. Rare: only
	 * frames a port delivered to the wrong queue come here. */
	copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
	if (copy == NULL) {
		dpsock_stat_add(&w->stats->rx_nomem, 1);
		return 0;
	}
	((struct dpsock_mbuf_priv *)rte_mbuf_to_priv(copy))->hops = priv->hops + 1;
	dpsock_stat_add(&w->stats->steer_stray, 1);
	dpsock_worker_steer(w, &w->d->workers[(w->idx + 1) % n], copy);
	return 1;
}

/*
 * Hand a frame to lwIP. Checksum verification is per packet: when the port
 * verified the TCP/UDP checksum (RX offload, flag GOOD), lwIP is told not to
 * check it again for this frame; otherwise (UNKNOWN: virtual NICs,
 * fragments, ports without the offload) lwIP checks it in software. The
 * worker is single-threaded, so setting the netif's flags per frame is safe.
 */
static inline void
netif_input_checked(struct dpsock_worker_port *wp, struct netif *netif, struct pbuf *p, bool l4_ok)
{
	NETIF_SET_CHECKSUM_CTRL(netif, l4_ok ? wp->cksum_l4_ok : wp->cksum_default);
	if (netif->input(p, netif) != ERR_OK)
		pbuf_free(p);
}

void
dpsock_netif_input(struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	struct netif *netif = &wp->netif;
	bool l4_ok = (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
	struct pbuf *p;

	if (likely(m->nb_segs == 1 && m->data_len <= UINT16_MAX)) {
		struct pbuf_custom *pc = &((struct dpsock_mbuf_priv *)rte_mbuf_to_priv(m))->pc;

		pc->custom_free_function = mbuf_pbuf_free;
		p = pbuf_alloced_custom(PBUF_RAW, m->data_len, PBUF_REF, pc,
					rte_pktmbuf_mtod(m, void *), m->data_len);
		dpsock_stat_add(&wp->w->stats->mbufs_held, 1);
	} else {
		/* Chained mbufs (jumbo frames on a small data room): lwIP wants
		 * contiguous headers, so copy once. */
		struct rte_mbuf *seg;
		uint16_t off = 0;

		p = m->pkt_len <= UINT16_MAX ? pbuf_alloc(PBUF_RAW, m->pkt_len, PBUF_RAM) : NULL;
		if (p != NULL)
			for (seg = m; seg != NULL; seg = seg->next) {
				pbuf_take_at(p, rte_pktmbuf_mtod(seg, void *), seg->data_len, off);
				off += seg->data_len;
			}
		rte_pktmbuf_free(m);
		if (p == NULL) {
			dpsock_stat_add(&wp->w->stats->rx_nomem, 1);
			return;
		}
	}
	netif_input_checked(wp, netif, p, l4_ok);
}

void
dpsock_netif_flush(struct dpsock_worker_port *wp)
{
	struct dpsock_worker_stats *st = wp->w->stats;
	uint16_t i, sent, n = wp->tx_n;
	uint64_t bytes = 0;

	if (n == 0)
		return;
	/* Sum first: the PMD may free what it sent before tx_burst returns. */
	for (i = 0; i < n; i++)
		bytes += wp->tx[i]->pkt_len;
	sent = rte_eth_tx_burst(wp->port->port_id, wp->w->queue, wp->tx, n);
	if (unlikely(sent < n)) {
		for (i = sent; i < n; i++)
			bytes -= wp->tx[i]->pkt_len;
		dpsock_stat_add(&st->tx_drops, n - sent);
		rte_pktmbuf_free_bulk(&wp->tx[sent], n - sent);
	}
	dpsock_stat_add(&st->tx_packets, sent);
	dpsock_stat_add(&st->tx_bytes, bytes);
	wp->tx_n = 0;
}

/* Let the port fill the checksums lwIP was told not to compute. */
static void
tx_offload(const struct dpsock_port *port, struct rte_mbuf *m)
{
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv4_hdr *ip;
	uint16_t l3_len;

	if (eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) || m->data_len < 34)
		return;
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	l3_len = rte_ipv4_hdr_len(ip);
	m->l2_len = sizeof(*eth);
	m->l3_len = l3_len;
	if (port->caps.tx_ip_cksum) {
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
		ip->hdr_checksum = 0;
	}
	/* A fragment's L4 checksum covers the whole datagram: lwIP computed it
	 * (or left it 0 for UDP, which IPv4 allows); only whole datagrams go to
	 * the NIC's L4 checksum. */
	if ((ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) || m->data_len < m->l2_len + l3_len + 8)
		return;
	if (ip->next_proto_id == IPPROTO_TCP && port->caps.tx_tcp_cksum) {
		struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)((char *)ip + l3_len);

		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
		tcp->cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	} else if (ip->next_proto_id == IPPROTO_UDP && port->caps.tx_udp_cksum) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((char *)ip + l3_len);

		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM;
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	}
}

/* Copy a pbuf chain into one mbuf, or a chain of them when the frame is
 * larger than a data room (and the port takes multi-segment mbufs). */
static struct rte_mbuf *
pbuf_to_mbufs(struct rte_mempool *pool, struct pbuf *p, bool multi_seg)
{
	struct rte_mbuf *head, *tail;
	uint32_t left = p->tot_len, off = 0;

	head = rte_pktmbuf_alloc(pool);
	if (head == NULL)
		return NULL;
	tail = head;
	for (;;) {
		uint16_t room = rte_pktmbuf_tailroom(tail);
		uint16_t n = left < room ? left : room;

		pbuf_copy_partial(p, rte_pktmbuf_mtod(tail, char *), n, off);
		tail->data_len = n;
		off += n;
		left -= n;
		if (left == 0)
			break;
		if (!multi_seg)
			goto fail;
		tail->next = rte_pktmbuf_alloc(pool);
		if (tail->next == NULL)
			goto fail;
		tail = tail->next;
		head->nb_segs++;
	}
	head->pkt_len = p->tot_len;
	return head;
fail:
	rte_pktmbuf_free(head);
	return NULL;
}

/* The IO address of a buffer in DPDK memory, or RTE_BAD_IOVA when the
 * NIC cannot take it in one piece (not DPDK memory, or across two memory
 * segments, which need not be contiguous for the device). */
static rte_iova_t
buf_iova(const void *va, size_t len)
{
	const struct rte_memseg *ms;

	if (rte_eal_iova_mode() == RTE_IOVA_VA)
		return (rte_iova_t)(uintptr_t)va;
	ms = rte_mem_virt2memseg(va, NULL);
	if (ms == NULL || ms->iova == RTE_BAD_IOVA ||
	    (const char *)va + len > (const char *)ms->addr + ms->len)
		return RTE_BAD_IOVA;
	return ms->iova + ((const char *)va - (const char *)ms->addr);
}

/* Lend the frame's pbufs to the NIC as external-buffer mbufs, or return
 * NULL when it must be copied. */
static struct rte_mbuf *
pbuf_lend(struct dpsock_worker_port *wp, struct pbuf *p)
{
	struct rte_mbuf *head = NULL, *tail = NULL, *m;
	struct dpsock_tx_loan *l;
	struct pbuf *q;
	uint16_t nseg = 0;

	if (p->tot_len < TX_LOAN_MIN || p->ref != 1)
		return NULL; /* small, or still lent: a retransmission */
	for (q = p; q != NULL; q = q->next) {
		if (q->type_internal != (u8_t)PBUF_RAM || (q->flags & PBUF_FLAG_IS_CUSTOM))
			return NULL; /* points at memory lwIP does not own */
		nseg++;
	}
	if (nseg > 1 && !wp->port->caps.tx_multi_segs)
		return NULL;
	l = mem_malloc(sizeof(*l));
	if (l == NULL)
		return NULL;
	for (q = p; q != NULL; q = q->next) {
		rte_iova_t iova = buf_iova(q->payload, q->len);

		if (iova == RTE_BAD_IOVA || (m = rte_pktmbuf_alloc(wp->port->pool)) == NULL) {
			rte_pktmbuf_free(head); /* no external buffer attached yet */
			mem_free(l);
			return NULL;
		}
		if (head == NULL)
			head = m;
		else
			tail->next = m;
		tail = m;
	}
	l->p = p;
	l->w = wp->w;
	l->shinfo.free_cb = loan_free_cb;
	l->shinfo.fcb_opaque = l;
	rte_mbuf_ext_refcnt_set(&l->shinfo, nseg);
	pbuf_ref(p);
	wp->w->tx_loans++;
	for (q = p, m = head; q != NULL; q = q->next, m = m->next) {
		rte_pktmbuf_attach_extbuf(m, q->payload, buf_iova(q->payload, q->len), q->len,
					  &l->shinfo);
		m->data_len = q->len;
	}
	head->nb_segs = nseg;
	head->pkt_len = p->tot_len;
	return head;
}

static err_t
netif_linkoutput(struct netif *netif, struct pbuf *p)
{
	struct dpsock_worker_port *wp = netif->state;
	struct dpsock_worker_stats *st = wp->w->stats;
	struct rte_mbuf *m;

	m = pbuf_lend(wp, p);
	if (m != NULL)
		dpsock_stat_add(&st->tx_zerocopy, 1);
	else
		m = pbuf_to_mbufs(wp->port->pool, p, wp->port->caps.tx_multi_segs);
	if (unlikely(m == NULL)) {
		dpsock_stat_add(&st->tx_nombuf, 1);
		return ERR_MEM;
	}
	tx_offload(wp->port, m);
	wp->tx[wp->tx_n++] = m;
	if (wp->tx_n == DPSOCK_TX_BURST)
		dpsock_netif_flush(wp);
	return ERR_OK;
}

err_t
dpsock_netif_init(struct netif *netif)
{
	struct dpsock_worker_port *wp = netif->state;
	const struct dpsock_port *port = wp->port;
	u16_t cksum = NETIF_CHECKSUM_ENABLE_ALL;

	netif->name[0] = 'd';
	netif->name[1] = 'p';
	netif->output = etharp_output;
	netif->linkoutput = netif_linkoutput;
	netif->mtu = port->mtu;
	netif->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(netif->hwaddr, port->mac.addr_bytes, ETH_HWADDR_LEN);
	/* no NETIF_FLAG_IGMP: IGMP and the port's multicast MAC filter are
	 * per port, not per worker's netif (stack/igmp.c, stack/mcast.c) */
	netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET |
		       NETIF_FLAG_LINK_UP;
	/* The worker validates every IPv4 header before lwIP sees it (RX), and
	 * the port computes what it offers (TX). */
	cksum &= ~NETIF_CHECKSUM_CHECK_IP;
	if (port->caps.tx_ip_cksum)
		cksum &= ~NETIF_CHECKSUM_GEN_IP;
	if (port->caps.tx_tcp_cksum)
		cksum &= ~NETIF_CHECKSUM_GEN_TCP;
	if (port->caps.tx_udp_cksum)
		cksum &= ~NETIF_CHECKSUM_GEN_UDP;
	wp->cksum_default = cksum;
	wp->cksum_l4_ok = cksum & ~(NETIF_CHECKSUM_CHECK_TCP | NETIF_CHECKSUM_CHECK_UDP);
	NETIF_SET_CHECKSUM_CTRL(netif, cksum);
	return ERR_OK;
}
