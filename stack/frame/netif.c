/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame/ — a frame between the NIC and lwIP: the ports and their queues
 * (port.c, port_release.c), the lwIP netif over mbufs (here) and how its
 * netifs follow the net view (netif_adopt.c), receive coalescing (gro.c),
 * which worker a flow belongs to (steer.c).
 *
 * netif.c — the lwIP netif over DPDK mbufs.
 *
 * Receive is zero-copy: the pbuf_custom that describes a frame lives in the
 * mbuf's private area (right after struct rte_mbuf), its payload points at
 * the mbuf's data, and its free callback returns the mbuf to its pool. lwIP
 * may keep such a pbuf (out-of-order queue, receive queue) as long as it
 * likes; the mbuf goes back when the last reference drops. A chain (the
 * segments gro.c merged) becomes a pbuf chain, one pbuf per mbuf.
 *
 * Transmit is zero-copy for large frames: lwIP's allocator draws on DPDK
 * memory, so a frame lwIP built (headers and the data dpsock_send copied in
 * once) is lent to the NIC as an mbuf with an external buffer; the pbuf is
 * referenced until the PMD frees the mbuf. Small frames, frames whose pbuf
 * is still lent (a retransmission racing the first copy), and chains that
 * point into application mbufs are copied into mbufs instead. Frames are
 * batched per worker; the TX checksum offloads the port offers replace
 * lwIP's software checksums (per-netif checksum control).
 *
 * Segmentation (tcp.segmentation): on a port with TSO, or with the netif's
 * software segmentation (gso), lwIP hands over TCP super-segments of up to
 * 64 KiB (lwip/tso.c) for either family and this file has them cut into
 * frames of the connection's MSS: the port does it (tso_segsz, l2/l3/l4
 * lengths, RTE_MBUF_F_TX_TCP_SEG), or tcp_cut does (a header copy and
 * indirect mbufs into the data per frame), for IPv6 also on a port whose
 * TSO cuts IPv4 alone. lwIP then computes no TCP checksum; the port does, or
 * this file in software when the port cannot.
 */

#include <string.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "core/lwip_compat_priv.h"

#include "lwip/etharp.h"
#include "lwip/ethip6.h"
#include "lwip/pbuf.h"
#include "lwip/prot/tcp.h"
#include "dpsock_lwip_hooks.h"
#include "netif/ethernet.h"

#include <rte_malloc.h>
#include <rte_memory.h>

#include "lwip/mem.h"
#include "lwip/tcp.h"

#include "dpsock_lwip_chksum.h"
#include "dpsock_lwip_pcb_index.h"
#include "dpsock_lwip_tso.h"

#include "core/stack_priv.h"
#include "frame_priv.h"
#include "core/log_priv.h"
#include "netview/netview_priv.h"

/* Frames shorter than this are copied: a copy is cheaper than a loan. */
#define TX_LOAN_MIN 256

/* A frame of lwIP's lent to the NIC. One per frame; its shinfo counts the
 * mbuf segments that point into the frame's pbufs, and it holds a
 * reference on each of those pbufs: lwIP may cut or join the chain of a
 * segment the NIC still reads (a super-segment split to fit the window,
 * lwip/tso.c), so a reference on the head alone would not keep the rest. */
struct dpsock_tx_loan {
	struct rte_mbuf_ext_shared_info shinfo;
	struct dpsock_worker *w;
	struct dpsock_tx_loan *next; /* on w->loan_returns */
	uint16_t n;
	struct pbuf *p[];            /* the n pbufs lent, in chain order */
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
	uint16_t i;

	/* In chain order: a pbuf whose last reference this is takes the next
	 * one's reference from lwIP's chain with it (pbuf_free walks on while
	 * counts reach 0), and ours on that next one is dropped right after,
	 * so every pbuf loses exactly the references it had. */
	for (i = 0; i < l->n; i++)
		pbuf_free(l->p[i]);
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

uint64_t
dpsock_netif_hw_ns(const struct dpsock_worker *w, struct pbuf *p)
{
	struct rte_mbuf *m = dpsock_netif_pbuf_mbuf(p);

	return m == NULL ? 0 : dpsock_clock_hw_ns(w, m);
}

/* A received frame dropped: counted, and named in its capture record if
 * it is being captured. */
void
dpsock_frame_drop(struct rte_mbuf *m, uint64_t *counter)
{
	/* a frame being captured: its record names the counter */
	if (unlikely(dpsock_self != NULL && dpsock_self->cap.n_pending != 0))
		dpsock_capture_drop(dpsock_self, counter);
	dpsock_stat_add(counter, 1);
	rte_pktmbuf_free(m);
}

/* The pbuf_custom in m's private area, over m's data (one segment). */
static inline struct pbuf *
mbuf_wrap(struct rte_mbuf *m)
{
	struct pbuf_custom *pc = &((struct dpsock_mbuf_priv *)rte_mbuf_to_priv(m))->pc;

	pc->custom_free_function = mbuf_pbuf_free;
	return pbuf_alloced_custom(PBUF_RAW, m->data_len, PBUF_REF, pc,
				   rte_pktmbuf_mtod(m, void *), m->data_len);
}

/* Headers lwIP reads from a frame's first pbuf: Ethernet, IPv4 and TCP, each
 * at its largest. */
#define RX_HDRS_MAX (RTE_ETHER_HDR_LEN + 60 + 60)

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
		p = mbuf_wrap(m);
		dpsock_stat_add(&wp->w->stats->mbufs_held, 1);
	} else if (m->pkt_len <= UINT16_MAX && m->data_len >= RX_HDRS_MAX) {
		/* A chain (a GRO merge, or a jumbo frame on a small data room)
		 * whose first mbuf holds every header lwIP reads: one pbuf per
		 * mbuf, each freed alone, so the chain is cut first. */
		struct rte_mbuf *seg = m, *next;
		uint16_t n = 0;

		p = NULL;
		do {
			next = seg->next;
			seg->next = NULL;
			seg->nb_segs = 1;
			seg->pkt_len = seg->data_len;
			if (p == NULL)
				p = mbuf_wrap(seg);
			else
				pbuf_cat(p, mbuf_wrap(seg));
			n++;
			seg = next;
		} while (seg != NULL);
		dpsock_stat_add(&wp->w->stats->mbufs_held, n);
	} else {
		/* A chain with headers over several mbufs: lwIP wants them
		 * contiguous, so copy once. */
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
	/* a capture runs: the frames as they go to the port */
	if (unlikely(wp->w->cap.n != 0))
		dpsock_capture_tx(wp->w, wp, wp->tx, n);
	sent = rte_eth_tx_burst(wp->dev_port, wp->dev_queue, wp->tx, n);
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

void
dpsock_worker_flush(struct dpsock_worker *w)
{
	unsigned int i;

	for (i = 0; i < w->n_ports; i++)
		dpsock_netif_flush(&w->ports[i]);
}

/* Queue one frame for the port; a full batch goes out at once. */
static inline void
tx_queue(struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	wp->tx[wp->tx_n++] = m;
	if (wp->tx_n == DPSOCK_TX_BURST)
		dpsock_netif_flush(wp);
}

/* The TCP checksum of a frame in an mbuf chain, in software, with lwIP's
 * checksum routine (lwip/chksum.c): the pseudo-header's sum and each
 * segment's, a segment that starts at an odd offset of the TCP segment
 * counting with its bytes swapped. */
static uint16_t
tcp_cksum_mbuf(const struct rte_mbuf *m, const struct rte_ipv4_hdr *ip)
{
	uint32_t off = m->l2_len + m->l3_len, pos = 0;
	uint32_t left = rte_be_to_cpu_16(ip->total_length) - m->l3_len;
	uint32_t sum = rte_ipv4_phdr_cksum(ip, 0);
	const struct rte_mbuf *seg;

	for (seg = m; seg != NULL && left > 0; seg = seg->next, off = 0) {
		uint32_t s, n;

		if (seg->data_len <= off)
			continue;
		n = RTE_MIN(left, (uint32_t)seg->data_len - off);
		s = dpsock_lwip_chksum(rte_pktmbuf_mtod_offset(seg, const char *, off), (int)n);
		if (pos & 1)
			s = ((s & 0xff) << 8) | (s >> 8);
		sum += s;
		pos += n;
		left -= n;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The checksums lwIP was told not to compute: the port's offloads, or,
 * for TCP on a netif that segments over a port without TCP checksum
 * offload (software GSO), software. l2_len and l3_len are set. */
static void
tx_cksum(const struct dpsock_worker_port *wp, struct rte_mbuf *m, struct rte_ipv4_hdr *ip)
{
	const struct dpsock_port *port = wp->port;

	if (port->caps.tx_ip_cksum) {
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
		ip->hdr_checksum = 0;
	}
	/* A fragment's L4 checksum covers the whole datagram: lwIP computed it
	 * (or left it 0 for UDP, which IPv4 allows); only whole datagrams go to
	 * the NIC's L4 checksum. */
	if ((ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) ||
	    m->data_len < m->l2_len + m->l3_len + 8)
		return;
	if (ip->next_proto_id == IPPROTO_TCP) {
		struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)((char *)ip + m->l3_len);

		if (port->caps.tx_tcp_cksum) {
			m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_TCP_CKSUM;
			tcp->cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
		} else if (wp->tcp_cksum_sw) {
			tcp->cksum = 0;
			tcp->cksum = tcp_cksum_mbuf(m, ip);
		}
	} else if (ip->next_proto_id == IPPROTO_UDP && port->caps.tx_udp_cksum) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((char *)ip + m->l3_len);

		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_UDP_CKSUM;
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	}
}

/* tx_cksum for IPv6: the TCP and UDP checksums lwIP left to the port (an
 * IPv6 TCP segment is never a super-segment, lwip/tso.c, but on a netif
 * that segments lwIP leaves every TCP checksum to the netif). lwIP puts no
 * extension header before TCP or UDP except a fragment header; a datagram
 * it fragments has its checksum from lwIP already (sock.c udp_sendto6). */
static void
tx_cksum6(const struct dpsock_worker_port *wp, struct rte_mbuf *m, struct rte_ipv6_hdr *ip6,
	  uint16_t l2)
{
	const struct dpsock_port *port = wp->port;
	uint32_t l4 = l2 + sizeof(*ip6);

	m->l2_len = l2;
	m->l3_len = sizeof(*ip6);
	if (m->data_len < l4 + sizeof(struct rte_udp_hdr))
		return;
	if (ip6->proto == IPPROTO_TCP && m->data_len >= l4 + sizeof(struct rte_tcp_hdr)) {
		struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)(ip6 + 1);

		if (port->caps.tx_tcp_cksum) {
			m->ol_flags |= RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_TCP_CKSUM;
			tcp->cksum = rte_ipv6_phdr_cksum(ip6, m->ol_flags);
		} else if (wp->tcp_cksum_sw) {
			tcp->cksum = 0;
			tcp->cksum = rte_ipv6_udptcp_cksum_mbuf(m, ip6, l4);
		}
	} else if (ip6->proto == IPPROTO_UDP && port->caps.tx_udp_cksum) {
		struct rte_udp_hdr *udp = (struct rte_udp_hdr *)(ip6 + 1);

		m->ol_flags |= RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM;
		udp->dgram_cksum = rte_ipv6_phdr_cksum(ip6, m->ol_flags);
	}
}

/* Payload bytes per wire segment of a TCP super-segment: the connection's
 * MSS less its options (the pcb, found by the 4-tuple; gone, e.g. a frame
 * a neighbour held back past its connection: what the MTU allows). by_port:
 * the port cuts it (net_tap's counts the Ethernet header against the MTU). */
static uint16_t
tso_segsz(const struct dpsock_worker_port *wp, const struct rte_mbuf *m, const void *l3, bool v6,
	  bool by_port)
{
	const struct rte_tcp_hdr *tcp = (const struct rte_tcp_hdr *)((const char *)l3 + m->l3_len);
	uint16_t opt = m->l4_len - sizeof(*tcp);
	uint16_t mtu_room = wp->netif.mtu - m->l3_len - m->l4_len, sz = mtu_room;
	const struct tcp_pcb *pcb;

	if (!v6) {
		const struct rte_ipv4_hdr *ip = l3;

		pcb = dpsock_tcp_lookup4(ip->src_addr, rte_be_to_cpu_16(tcp->src_port),
					 ip->dst_addr, rte_be_to_cpu_16(tcp->dst_port));
	} else {
		const struct rte_ipv6_hdr *ip6 = l3;

		pcb = dpsock_tcp_lookup6(ip6->src_addr, rte_be_to_cpu_16(tcp->src_port),
					 ip6->dst_addr, rte_be_to_cpu_16(tcp->dst_port));
	}
	if (pcb != NULL && pcb->mss > opt)
		sz = RTE_MIN(mtu_room, (uint16_t)(pcb->mss - opt));
	if (by_port && wp->port->caps.tso_l2_in_mtu)
		sz = RTE_MIN(sz, (uint16_t)(mtu_room - m->l2_len));
	return sz;
}

/*
 * Cut a TCP super-segment into frames of segsz payload bytes in software,
 * for either family: each frame is a copy of the headers (all in m's first
 * mbuf, lwIP's header pbuf) chained to indirect mbufs into m's data, so no
 * payload byte is copied; the indirect mbufs keep a lent frame's pbufs
 * referenced as m's own mbufs did. Each frame's headers get its lengths,
 * IPv4 id, sequence number and flags (FIN and PSH on the last frame only,
 * CWR on the first only); its checksums are then the port's or software's,
 * as for any frame (tx_cksum, tx_cksum6). A frame an mbuf is missing for
 * is not sent, nor are the ones after it (tx_nombuf): TCP resends them.
 * Returns the number of frames queued (0: none, lwIP keeps the segment).
 */
static uint32_t
tcp_cut(struct dpsock_worker_port *wp, struct rte_mbuf *m, bool v6, uint16_t segsz)
{
	struct dpsock_worker_stats *st = wp->w->stats;
	struct rte_mempool *pool = wp->port->pool;
	uint16_t hdr = m->l2_len + m->l3_len + m->l4_len;
	uint32_t left = m->pkt_len - hdr, nseg = (left + segsz - 1) / segsz, k, off = hdr;
	const struct rte_tcp_hdr *tcp0 =
		rte_pktmbuf_mtod_offset(m, const struct rte_tcp_hdr *, m->l2_len + m->l3_len);
	const struct rte_ipv4_hdr *ip0 =
		rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, m->l2_len);
	uint32_t seq = rte_be_to_cpu_32(tcp0->sent_seq);
	uint16_t id = v6 ? 0 : rte_be_to_cpu_16(ip0->packet_id);
	struct rte_mbuf *src = m;

	for (k = 0; k < nseg; k++) {
		uint32_t len = RTE_MIN(left, (uint32_t)segsz), need = len;
		struct rte_mbuf *h = rte_pktmbuf_alloc(pool), *tail = h;
		struct rte_tcp_hdr *tcp;
		char *l3;

		if (h == NULL)
			break;
		memcpy(rte_pktmbuf_mtod(h, void *), rte_pktmbuf_mtod(m, void *), hdr);
		h->data_len = h->pkt_len = hdr;
		while (need > 0) {
			struct rte_mbuf *mi;
			uint32_t take;

			while (off >= src->data_len) {
				src = src->next;
				off = 0;
			}
			take = RTE_MIN(need, (uint32_t)src->data_len - off);
			mi = rte_pktmbuf_alloc(pool);
			if (mi == NULL)
				break;
			rte_pktmbuf_attach(mi, src);
			mi->data_off += off;
			mi->data_len = mi->pkt_len = take;
			tail->next = mi;
			tail = mi;
			h->nb_segs++;
			h->pkt_len += take;
			off += take;
			need -= take;
		}
		if (need > 0) {
			rte_pktmbuf_free(h);
			break;
		}
		h->l2_len = m->l2_len;
		h->l3_len = m->l3_len;
		h->l4_len = m->l4_len;
		l3 = rte_pktmbuf_mtod_offset(h, char *, h->l2_len);
		tcp = (struct rte_tcp_hdr *)(l3 + h->l3_len);
		tcp->sent_seq = rte_cpu_to_be_32(seq + k * segsz);
		if (k + 1 < nseg)
			tcp->tcp_flags &= ~(RTE_TCP_FIN_FLAG | RTE_TCP_PSH_FLAG);
		if (k > 0)
			tcp->tcp_flags &= ~RTE_TCP_CWR_FLAG;
		if (v6) {
			struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)l3;

			ip6->payload_len = rte_cpu_to_be_16(h->l3_len - sizeof(*ip6) + h->l4_len + len);
			tx_cksum6(wp, h, ip6, h->l2_len);
		} else {
			struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

			ip->total_length = rte_cpu_to_be_16(h->l3_len + h->l4_len + len);
			ip->packet_id = rte_cpu_to_be_16((uint16_t)(id + k));
			if (!wp->port->caps.tx_ip_cksum) {
				ip->hdr_checksum = 0;
				ip->hdr_checksum = rte_ipv4_cksum(ip);
			}
			tx_cksum(wp, h, ip);
		}
		tx_queue(wp, h);
		left -= len;
	}
	/* the frames hold their own references on m's data */
	rte_pktmbuf_free(m);
	if (k < nseg)
		dpsock_stat_add(&st->tx_nombuf, k == 0 ? 1 : nseg - k);
	if (k > 0) {
		dpsock_stat_add(&st->tx_gso_frames, 1);
		dpsock_stat_add(&st->tx_gso_segs, k);
	}
	return k;
}

/*
 * A TCP segment larger than the MTU (lwIP's super-segment, lwip/tso.c):
 * the port cuts it (TSO: IPv4 always, IPv6 where its TSO takes IPv6), or
 * the netif does in software (tcp_cut). ERR_MEM: nothing sent.
 */
static err_t
tx_tcp_segment(struct dpsock_worker_port *wp, struct rte_mbuf *m, void *l3, bool v6)
{
	struct dpsock_worker_stats *st = wp->w->stats;
	struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)((char *)l3 + m->l3_len);
	bool by_port = wp->seg_mode == DPSOCK_SEG_TSO && (!v6 || wp->port->caps.tso6);
	uint16_t segsz;

	m->l4_len = (tcp->data_off >> 4) * 4;
	segsz = tso_segsz(wp, m, l3, v6, by_port);
	if (!by_port)
		return tcp_cut(wp, m, v6, segsz) > 0 ? ERR_OK : ERR_MEM;
	m->tso_segsz = segsz;
	m->ol_flags |= RTE_MBUF_F_TX_TCP_SEG | RTE_MBUF_F_TX_TCP_CKSUM;
	if (v6) {
		m->ol_flags |= RTE_MBUF_F_TX_IPV6;
		tcp->cksum = rte_ipv6_phdr_cksum(l3, m->ol_flags);
	} else {
		struct rte_ipv4_hdr *ip = l3;

		m->ol_flags |= RTE_MBUF_F_TX_IPV4;
		if (wp->port->caps.tx_ip_cksum) {
			m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
			ip->hdr_checksum = 0;
		}
		tcp->cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	}
	dpsock_stat_add(&st->tx_tso_frames, 1);
	dpsock_stat_add(&st->tx_tso_segs, (m->pkt_len - m->l2_len - m->l3_len - m->l4_len +
					   segsz - 1) / segsz);
	tx_queue(wp, m);
	return ERR_OK;
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
	struct pbuf *q, *first;
	uint16_t nseg = 0, nlent;
	bool copy_head;

	if (p->tot_len < TX_LOAN_MIN || !wp->port->caps.tx_extbuf)
		return NULL; /* small, or a port that cannot send external buffers */
	for (q = p; q != NULL; q = q->next) {
		if (q->type_internal != (u8_t)PBUF_RAM || (q->flags & PBUF_FLAG_IS_CUSTOM))
			return NULL; /* points at memory lwIP does not own */
		if (q->ref != 1)
			return NULL; /* still lent: a retransmission */
		nseg++;
	}
	if (nseg > 1 && !wp->port->caps.tx_multi_segs)
		return NULL;
	/* A super-segment that net_tap's TSO cuts (DPDK's GSO library) gives
	 * every frame the flags of the packet's first mbuf: an external-buffer
	 * first mbuf would mark their (direct) header mbufs external. Its first
	 * pbuf (the headers and one MSS at most) is copied instead; tcp_cut
	 * copies the headers anyway. */
	copy_head = nseg > 1 && p->tot_len > (uint32_t)wp->netif.mtu + RTE_ETHER_HDR_LEN +
					      (wp->port->vlan_tci != 0 ? RTE_VLAN_HLEN : 0);
	nlent = nseg - copy_head;
	first = copy_head ? p->next : p;
	l = mem_malloc(sizeof(*l) + nlent * sizeof(l->p[0]));
	if (l == NULL)
		return NULL;
	for (q = p; q != NULL; q = q->next) {
		bool lent = q != p || !copy_head;

		m = NULL;
		if ((lent && buf_iova(q->payload, q->len) == RTE_BAD_IOVA) ||
		    (m = rte_pktmbuf_alloc(wp->port->pool)) == NULL ||
		    (!lent && rte_pktmbuf_tailroom(m) < q->len)) {
			rte_pktmbuf_free(m);
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
	l->w = wp->w;
	l->n = nlent;
	l->shinfo.free_cb = loan_free_cb;
	l->shinfo.fcb_opaque = l;
	rte_mbuf_ext_refcnt_set(&l->shinfo, nlent);
	for (q = first, nlent = 0; q != NULL; q = q->next) {
		l->p[nlent++] = q;
		pbuf_ref(q);
	}
	wp->w->tx_loans++;
	for (q = p, m = head; q != NULL; q = q->next, m = m->next) {
		if (q != p || !copy_head)
			rte_pktmbuf_attach_extbuf(m, q->payload, buf_iova(q->payload, q->len), q->len,
						  &l->shinfo);
		else
			memcpy(rte_pktmbuf_mtod(m, void *), q->payload, q->len);
		m->data_len = q->len;
	}
	head->nb_segs = nseg;
	head->pkt_len = p->tot_len;
	return head;
}

/* The route of the longest prefix holding dest in the worker's net view
 * (netview.c: the configured routes and gateways of owned ports, the
 * kernel's of shared ones), or NULL. */
static const struct dpsock_nv_route *
route_find(const struct dpsock_netview *v, uint32_t dest)
{
	const struct dpsock_nv_route *best = NULL;

	for (unsigned int i = 0; i < v->n_routes; i++) {
		const struct dpsock_nv_route *r = &v->routes[i];
		uint32_t mask = r->prefix_len ? rte_cpu_to_be_32(~0u << (32 - r->prefix_len)) : 0;

		if ((dest & mask) != r->dest)
			continue;
		if (best == NULL || r->prefix_len > best->prefix_len ||
		    (r->prefix_len == best->prefix_len && r->priority < best->priority))
			best = r;
	}
	return best;
}

struct netif *
dpsock_lwip_route(const ip4_addr_t *dest)
{
	struct dpsock_worker *w = dpsock_self;
	const struct dpsock_nv_route *r;
	struct netif *nif;

	if (w == NULL || w->nv == NULL || (r = route_find(w->nv, ip4_addr_get_u32(dest))) == NULL)
		return NULL;
	nif = &w->ports[r->port].netif;
	return netif_is_up(nif) && netif_is_link_up(nif) ? nif : NULL;
}

const ip4_addr_t *
dpsock_lwip_route_gw(struct netif *netif, const ip4_addr_t *dest)
{
	const struct dpsock_worker_port *wp = netif->state;
	const struct dpsock_nv_route *r = wp->w->nv == NULL ? NULL :
					  route_find(wp->w->nv, ip4_addr_get_u32(dest));

	if (r == NULL || r->port != wp->port_idx || r->gateway == 0)
		return NULL;
	/* (ip4_addr_t is the address alone: the view outlives the call) */
	return (const ip4_addr_t *)(const void *)&r->gateway;
}

const ip6_addr_t *
dpsock_lwip_nd6_gw(struct netif *netif, const ip6_addr_t *dest)
{
	struct dpsock_worker_port *wp = netif->state;
	struct dpsock_worker *w = wp->w;
	uint8_t nh[16];

	if (w->nv == NULL ||
	    !dpsock_netview_nexthop6(w->nv, wp->port_idx, (const uint8_t *)dest->addr, nh))
		return NULL;
	/* lwIP copies it into its destination cache at once */
	memcpy(w->nd6_gw.addr, nh, 16);
	ip6_addr_clear_zone(&w->nd6_gw);
	if (ip6_addr_has_scope(&w->nd6_gw, IP6_UNICAST))
		ip6_addr_assign_zone(&w->nd6_gw, IP6_UNICAST, netif);
	return &w->nd6_gw;
}

struct netif *
dpsock_lwip_route6(const ip6_addr_t *src, const ip6_addr_t *dest)
{
	struct dpsock_worker *w = dpsock_self;
	struct netif *nif;
	int port;

	(void)src;
	if (w == NULL || w->nv == NULL ||
	    (port = dpsock_netview_route6(w->nv, (const uint8_t *)dest->addr)) < 0 ||
	    (unsigned int)port >= w->n_ports)
		return NULL;
	nif = &w->ports[port].netif;
	return netif_is_up(nif) && netif_is_link_up(nif) ? nif : NULL;
}

/* ---- shared ports: the kernel's neighbours ---------------------------------- */

/* ms a frame may wait for its neighbour; the kernel is asked again every
 * NEIGH_ASK_MS meanwhile (it sends its own ARP requests and retries) */
#define NEIGH_WAIT_MS 3000
#define NEIGH_ASK_MS 1000
#define NEIGH_WAIT_PER_HOP 16

static void
neigh_send(struct dpsock_worker_port *wp, struct pbuf *p, const uint8_t *mac, bool v6)
{
	struct eth_addr dst;

	memcpy(dst.addr, mac, ETH_HWADDR_LEN);
	ethernet_output(&wp->netif, p, (const struct eth_addr *)wp->netif.hwaddr, &dst,
			v6 ? ETHTYPE_IPV6 : ETHTYPE_IP);
}

static bool
wait_is(const struct dpsock_neigh_wait *q, unsigned int port, bool v6, uint32_t nh4,
	const uint8_t *nh6)
{
	return q->port == port && q->v6 == v6 &&
	       (v6 ? memcmp(q->nexthop6, nh6, 16) == 0 : q->nexthop == nh4);
}

static void
wait_ask(struct dpsock_worker *w, const struct dpsock_neigh_wait *q)
{
	if (q->v6)
		dpsock_kfollow_resolve6(w->d, q->port, q->nexthop6);
	else
		dpsock_kfollow_resolve(w->d, q->port, q->nexthop);
}

/* A frame whose next hop (nh4, or nh6 for IPv6) the kernel has not
 * resolved yet: it waits for the view that has it (a copy when lwIP may
 * change the pbuf after this returns, as etharp_query does), and the
 * kernel is asked to resolve it. */
static err_t
neigh_wait(struct dpsock_worker_port *wp, struct pbuf *p, bool v6, uint32_t nh4,
	   const uint8_t *nh6)
{
	struct dpsock_worker *w = wp->w;
	struct dpsock_neigh_wait *q;
	unsigned int same = 0;

	dpsock_stat_add(&w->stats->neigh_missing, 1);
	for (unsigned int i = 0; i < w->n_neigh_wait; i++)
		same += wait_is(&w->neigh_wait[i], wp->port_idx, v6, nh4, nh6);
	if (w->n_neigh_wait == RTE_DIM(w->neigh_wait) || same >= NEIGH_WAIT_PER_HOP) {
		dpsock_stat_add(&w->stats->neigh_dropped, 1);
		return ERR_OK;   /* as a full ARP queue: TCP retransmits */
	}
	q = &w->neigh_wait[w->n_neigh_wait];
	if (PBUF_NEEDS_COPY(p)) {
		q->p = pbuf_clone(PBUF_LINK, PBUF_RAM, p);
		if (q->p == NULL) {
			dpsock_stat_add(&w->stats->neigh_dropped, 1);
			return ERR_MEM;
		}
	} else {
		pbuf_ref(p);
		q->p = p;
	}
	w->n_neigh_wait++;
	q->v6 = v6;
	q->nexthop = nh4;
	if (v6)
		memcpy(q->nexthop6, nh6, 16);
	q->port = (uint8_t)wp->port_idx;
	q->since_tsc = q->asked_tsc = rte_rdtsc();
	if (same == 0)
		wait_ask(w, q);
	return ERR_OK;
}

err_t
dpsock_netif_output_shared(struct netif *netif, struct pbuf *p, const ip4_addr_t *ipaddr)
{
	struct dpsock_worker_port *wp = netif->state;
	struct dpsock_worker *w = wp->w;
	const struct dpsock_netview *v = w->nv;
	uint32_t ip = ip4_addr_get_u32(ipaddr), nexthop = ip, gw;
	unsigned int port;
	const uint8_t *mac;
	struct eth_addr dst;

	if (ip4_addr_isbroadcast(ipaddr, netif)) {
		return ethernet_output(netif, p, (const struct eth_addr *)netif->hwaddr, &ethbroadcast,
				       ETHTYPE_IP);
	}
	if (ip4_addr_ismulticast(ipaddr)) {
		/* 01:00:5e and the group's low 23 bits (RFC 1112) */
		const uint8_t *b = (const uint8_t *)&ip;

		dst = (struct eth_addr){ { 0x01, 0x00, 0x5e, b[1] & 0x7f, b[2], b[3] } };
		return ethernet_output(netif, p, (const struct eth_addr *)netif->hwaddr, &dst,
				       ETHTYPE_IP);
	}
	if (dpsock_netview_route(v, ip, &port, &gw) && gw != 0)
		nexthop = gw;
	/* one flow at a time is the common case: the last next hop's MAC */
	if (wp->neigh_gen == w->nv_gen && wp->neigh_ip == nexthop) {
		mac = wp->neigh_mac;
	} else if ((mac = dpsock_netview_neigh(v, wp->port_idx, nexthop)) != NULL) {
		wp->neigh_gen = w->nv_gen;
		wp->neigh_ip = nexthop;
		memcpy(wp->neigh_mac, mac, 6);
	}
	if (mac != NULL) {
		memcpy(dst.addr, mac, ETH_HWADDR_LEN);
		return ethernet_output(netif, p, (const struct eth_addr *)netif->hwaddr, &dst,
				       ETHTYPE_IP);
	}
	return neigh_wait(wp, p, false, nexthop, NULL);
}

err_t
dpsock_netif_output6_shared(struct netif *netif, struct pbuf *p, const ip6_addr_t *ipaddr)
{
	struct dpsock_worker_port *wp = netif->state;
	struct dpsock_worker *w = wp->w;
	const uint8_t *a = (const uint8_t *)ipaddr->addr, *mac;
	uint8_t nexthop[16];
	struct eth_addr dst;

	if (ip6_addr_ismulticast(ipaddr)) {
		/* 33:33 and the group's low 32 bits (RFC 2464) */
		dst = (struct eth_addr){ { 0x33, 0x33, a[12], a[13], a[14], a[15] } };
		return ethernet_output(netif, p, (const struct eth_addr *)netif->hwaddr, &dst,
				       ETHTYPE_IPV6);
	}
	if (!dpsock_netview_nexthop6(w->nv, wp->port_idx, a, nexthop))
		return ERR_RTE;
	mac = dpsock_netview_neigh6(w->nv, wp->port_idx, nexthop);
	if (mac != NULL) {
		memcpy(dst.addr, mac, ETH_HWADDR_LEN);
		return ethernet_output(netif, p, (const struct eth_addr *)netif->hwaddr, &dst,
				       ETHTYPE_IPV6);
	}
	return neigh_wait(wp, p, true, 0, nexthop);
}

void
dpsock_netif_neigh_retry(struct dpsock_worker *w)
{
	uint64_t now = rte_rdtsc(), hz = w->d->tsc_hz;
	unsigned int i = 0;

	while (i < w->n_neigh_wait) {
		struct dpsock_neigh_wait *q = &w->neigh_wait[i];
		const uint8_t *mac = q->v6 ? dpsock_netview_neigh6(w->nv, q->port, q->nexthop6) :
				     dpsock_netview_neigh(w->nv, q->port, q->nexthop);

		if (mac != NULL || now - q->since_tsc > hz / 1000 * NEIGH_WAIT_MS) {
			if (mac != NULL)
				neigh_send(&w->ports[q->port], q->p, mac, q->v6);
			else
				dpsock_stat_add(&w->stats->neigh_dropped, 1);
			pbuf_free(q->p);
			*q = w->neigh_wait[--w->n_neigh_wait];
			continue;
		}
		if (now - q->asked_tsc > hz / 1000 * NEIGH_ASK_MS) {
			q->asked_tsc = now;
			wait_ask(w, q);
		}
		i++;
	}
}

s32_t
dpsock_lwip_vlan_set(struct netif *netif)
{
	const struct dpsock_worker_port *wp = netif->state;

	return wp->port->vlan_tci != 0 ? (s32_t)wp->port->vlan_tci : -1;
}

void
dpsock_netif_send_raw(struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	if (wp->port->vlan_tci != 0) {
		m->vlan_tci = wp->port->vlan_tci;
		if (rte_vlan_insert(&m) != 0) {
			rte_pktmbuf_free(m);
			dpsock_stat_add(&wp->w->stats->tx_drops, 1);
			return;
		}
	}
	tx_queue(wp, m);
}

/* A frame larger than the MTU: only a TCP super-segment is (lwIP
 * fragments the rest), and only on a netif that segments. l2_len is set;
 * l3_len too for IPv4. */
static err_t
tx_oversize(struct dpsock_worker_port *wp, struct rte_mbuf *m, void *l3, bool v6)
{
	uint8_t proto = v6 ? ((struct rte_ipv6_hdr *)l3)->proto :
			     ((struct rte_ipv4_hdr *)l3)->next_proto_id;

	if (v6)
		m->l3_len = sizeof(struct rte_ipv6_hdr); /* lwIP puts none before TCP */
	if (proto == IPPROTO_TCP && wp->seg_mode != DPSOCK_SEG_LWIP &&
	    m->data_len >= m->l2_len + m->l3_len + sizeof(struct rte_tcp_hdr)) {
		const struct rte_tcp_hdr *tcp = (const struct rte_tcp_hdr *)((char *)l3 + m->l3_len);

		if (m->data_len >= m->l2_len + m->l3_len + (tcp->data_off >> 4) * 4u)
			return tx_tcp_segment(wp, m, l3, v6);
	}
	rte_pktmbuf_free(m);
	dpsock_stat_add(&wp->w->stats->tx_drops, 1);
	return ERR_OK;
}

static err_t
netif_linkoutput(struct netif *netif, struct pbuf *p)
{
	struct dpsock_worker_port *wp = netif->state;
	struct dpsock_worker_stats *st = wp->w->stats;
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_mbuf *m;
	uint16_t type, l2 = RTE_ETHER_HDR_LEN;

	m = pbuf_lend(wp, p);
	if (m != NULL)
		dpsock_stat_add(&st->tx_zerocopy, 1);
	else
		m = pbuf_to_mbufs(wp->port->pool, p, wp->port->caps.tx_multi_segs);
	if (unlikely(m == NULL)) {
		dpsock_stat_add(&st->tx_nombuf, 1);
		return ERR_MEM;
	}
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	type = eth->ether_type;
	if (type == RTE_BE16(RTE_ETHER_TYPE_VLAN) && m->data_len >= l2 + RTE_VLAN_HLEN) {
		type = ((const struct rte_vlan_hdr *)(eth + 1))->eth_proto; /* lwIP tagged it */
		l2 += RTE_VLAN_HLEN;
	}
	if (type == RTE_BE16(RTE_ETHER_TYPE_IPV6) && m->data_len >= l2 + sizeof(struct rte_ipv6_hdr)) {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)((char *)eth + l2);

		if (unlikely(m->pkt_len > (uint32_t)l2 + wp->netif.mtu)) {
			m->l2_len = l2;
			return tx_oversize(wp, m, ip6, true);
		}
		tx_cksum6(wp, m, ip6, l2);
		tx_queue(wp, m);
		return ERR_OK;
	}
	if (type != RTE_BE16(RTE_ETHER_TYPE_IPV4) || m->data_len < l2 + 20) {
		tx_queue(wp, m);
		return ERR_OK;
	}
	ip = (struct rte_ipv4_hdr *)((char *)eth + l2);
	m->l2_len = l2;
	m->l3_len = rte_ipv4_hdr_len(ip);
	if (unlikely(m->pkt_len > (uint32_t)m->l2_len + wp->netif.mtu))
		return tx_oversize(wp, m, ip, false);
	tx_cksum(wp, m, ip);
	tx_queue(wp, m);
	return ERR_OK;
}

static const char *const seg_mode_names[] = {
	[DPSOCK_SEG_LWIP] = "lwIP (one segment per MSS)",
	[DPSOCK_SEG_TSO] = "the port's TSO",
	[DPSOCK_SEG_GSO] = "the netif (software GSO)",
};

void
dpsock_netif_offload_setup(struct dpsock_worker_port *wp)
{
	const struct dpsock_port *port = wp->port;
	const char *want = wp->w->d->conf.segmentation;
	enum dpsock_seg_mode mode = DPSOCK_SEG_LWIP;

	if (port->caps.tso && strcmp(want, "lwip") != 0)
		mode = DPSOCK_SEG_TSO;
	else if (strcmp(want, "gso") == 0 && port->caps.tx_multi_segs)
		mode = DPSOCK_SEG_GSO;
	wp->seg_mode = mode;
	if (mode != DPSOCK_SEG_LWIP) {
		/* lwIP builds super-segments and leaves their TCP checksum
		 * (meaningless before they are cut) to the netif */
		dpsock_tcp_netif_set_tso(&wp->netif, DPSOCK_TCP_TSO_MAX,
					 RTE_MIN(DPSOCK_TSO_PBUFS_MAX, port->caps.tx_seg_max - 1));
		wp->cksum_default &= ~NETIF_CHECKSUM_GEN_TCP;
		wp->cksum_l4_ok &= ~NETIF_CHECKSUM_GEN_TCP;
		NETIF_SET_CHECKSUM_CTRL(&wp->netif, wp->cksum_default);
		wp->tcp_cksum_sw = !port->caps.tx_tcp_cksum;
	}
	if (wp->w->idx == 0)
		DPSOCK_LOG(INFO, pmd, "port %s: TCP segmentation by %s (tcp.segmentation = %s)",
			   port->name, seg_mode_names[mode], want);
}

void
dpsock_netif_offload_setup_nif(struct dpsock_worker_port *wp, struct netif *nif)
{
	if (wp->seg_mode != DPSOCK_SEG_LWIP)
		dpsock_tcp_netif_set_tso(nif, DPSOCK_TCP_TSO_MAX,
					 RTE_MIN(DPSOCK_TSO_PBUFS_MAX, wp->port->caps.tx_seg_max - 1));
	NETIF_SET_CHECKSUM_CTRL(nif, wp->cksum_default);
}

err_t
dpsock_netif_init(struct netif *netif)
{
	struct dpsock_worker_port *wp = netif->state;
	const struct dpsock_port *port = wp->port;
	u16_t cksum = NETIF_CHECKSUM_ENABLE_ALL;

	netif->name[0] = 'd';
	netif->name[1] = 'p';
	/* a shared port: the kernel's neighbours, no ARP of ours (netview.c) */
	netif->output = port->shared ? dpsock_netif_output_shared : etharp_output;
	/* IPv6: lwIP's neighbour discovery on a port dpsock owns (address6),
	 * the kernel's neighbours on a shared one */
	netif->output_ip6 = port->shared ? dpsock_netif_output6_shared : ethip6_output;
	netif->linkoutput = netif_linkoutput;
	netif->mtu = port->mtu;
	netif->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(netif->hwaddr, port->mac.addr_bytes, ETH_HWADDR_LEN);
	/* no NETIF_FLAG_IGMP: IGMP and the port's multicast MAC filter are
	 * per port, not per worker's netif (stack/mcast/mchost.c, stack/mcast/mcast.c) */
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

void
dpsock_netif_ip6_setup(struct dpsock_worker_port *wp, const uint8_t addr6[16])
{
	struct netif *netif = &wp->netif;
	ip6_addr_t a6;
	s8_t i = -1;

	netif_create_ip6_linklocal_address(netif, 1);
	memcpy(a6.addr, addr6, sizeof(a6.addr));
	ip6_addr_clear_zone(&a6);
	if (netif_add_ip6_address(netif, &a6, &i) != ERR_OK) {
		DPSOCK_LOG(ERR, pmd, "port %s: no room for its IPv6 address", wp->port->name);
		return;
	}
	netif_ip6_addr_set_state(netif, 0, IP6_ADDR_PREFERRED);
	netif_ip6_addr_set_state(netif, i, IP6_ADDR_PREFERRED);
}
