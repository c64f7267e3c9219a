/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive coalescing (tcp.gro): the in-order TCP segments of a flow that
 * arrive in one burst become one segment before lwIP sees them, so a bulk
 * receiver runs tcp_input, its receive-window and its ACK decision once per
 * burst instead of once per MSS. The merged segment is an mbuf chain (the
 * first segment whole, the others' payload behind it, their headers cut
 * off) that the netif hands to lwIP as a pbuf chain without copying.
 *
 * Our own, not DPDK's librte_gro: librte_gro only merges segments whose
 * flags are exactly ACK (a PSH ends nearly every write of a Linux or lwIP
 * sender), wants consecutive IP ids unless DF is set (lwIP sets no DF and
 * numbers every packet of the instance), leaves checksums unchecked, and
 * needs the packet type a PMD like memif does not set.
 *
 * IPv4 and IPv6 alike (an IPv6 segment directly behind the fixed header,
 * no extension header). A segment joins its flow's held segment when:
 *   - its flow has a connection on this worker (hash lookup; frames of a
 *     flow this worker does not own pass through untouched, so the
 *     hand-over of misdelivered segments still sees single frames);
 *   - it carries data, its flags are ACK (PSH allowed: it then ends the
 *     merge), no IP options (IPv6: no extension header), not a fragment,
 *     one mbuf, no padding;
 *   - it starts where the held data ends, with the same TCP option length;
 *   - its checksum is right (the port's verdict, or computed here: the
 *     merged segment is marked verified, its own checksum being stale);
 *   - the total stays within 64 KiB and DPSOCK_GRO_SEGS segments.
 * The merged header takes the last segment's ACK, window and options
 * (timestamps): what lwIP would hold after reading them in turn. Anything
 * else of the flow (a pure ACK, a FIN, a gap) first flushes what is held,
 * so a flow's segments reach lwIP in arrival order. Held segments go to
 * lwIP at the end of every burst.
 *
 * ACK decision: lwIP acknowledges every second in-order segment at once and
 * delays the first; a merged segment of two MSS or more counts as the
 * second (the pcb is marked as having an ACK pending), so a bulk receiver
 * sends one ACK per burst, as Linux does after more than one MSS.
 */

#include <string.h>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_tcp.h>

#include "core/lwip_compat_priv.h"

#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"

#include "dpsock_lwip_chksum.h"
#include "dpsock_lwip_pcb_index.h"

#include "core/stack_priv.h"
#include "frame_priv.h"

/* a merged frame must fit a pbuf (u16 tot_len) and an IPv4 packet */
#define GRO_FRAME_MAX 0xffffu

/* The connection of a flow (addresses and ports in network order; l3_len
 * says the family). */
static inline struct tcp_pcb *
gro_pcb(unsigned int l3_len, const uint32_t *laddr, uint16_t lport, const uint32_t *raddr,
	uint16_t rport)
{
	if (l3_len != sizeof(struct rte_ipv6_hdr))
		return dpsock_tcp_lookup4(laddr[0], rte_be_to_cpu_16(lport), raddr[0],
					  rte_be_to_cpu_16(rport));
	return dpsock_tcp_lookup6(laddr, rte_be_to_cpu_16(lport), raddr, rte_be_to_cpu_16(rport));
}

static inline void
gro_deliver_one(struct dpsock_worker *w, struct dpsock_gro_item *it)
{
	struct rte_mbuf *m = it->head;
	struct dpsock_worker_stats *st = w->stats;

	it->head = NULL;
	if (it->nseg > 1) {
		void *l3 = rte_pktmbuf_mtod_offset(m, void *, RTE_ETHER_HDR_LEN);
		struct rte_tcp_hdr *tcp = (struct rte_tcp_hdr *)((char *)l3 + it->l3_len);
		struct tcp_pcb *pcb;

		if (it->l3_len == sizeof(struct rte_ipv6_hdr)) {
			struct rte_ipv6_hdr *ip6 = l3;

			ip6->payload_len = rte_cpu_to_be_16(it->l4_len + it->payload);
		} else {
			struct rte_ipv4_hdr *ip = l3;

			ip->total_length = rte_cpu_to_be_16(sizeof(*ip) + it->l4_len + it->payload);
			ip->hdr_checksum = 0;
			ip->hdr_checksum = rte_ipv4_cksum(ip);
		}
		/* every merged segment was verified; the header's checksum
		 * is the first one's and no longer matches */
		m->ol_flags = (m->ol_flags & ~RTE_MBUF_F_RX_L4_CKSUM_MASK) | RTE_MBUF_F_RX_L4_CKSUM_GOOD;
		dpsock_stat_add(&st->rx_gro_frames, 1);
		dpsock_stat_add(&st->rx_gro_merged, it->nseg - 1);
		/* two MSS or more: lwIP's every-second-segment rule acks at
		 * once (looked up again: an app callback run for an earlier
		 * frame of the burst may have closed the connection) */
		pcb = gro_pcb(it->l3_len, it->daddr, tcp->dst_port, it->saddr, tcp->src_port);
		if (pcb != NULL && pcb->state == ESTABLISHED && it->payload >= 2u * pcb->mss)
			tcp_set_flags(pcb, TF_ACK_DELAY);
	}
	dpsock_netif_input(it->wp, m);
}

void
dpsock_gro_flush(struct dpsock_worker *w)
{
	struct dpsock_gro *g = &w->gro;
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->item[i].head != NULL)
			gro_deliver_one(w, &g->item[i]);
	g->n = 0;
}

/* A segment's IP header as GRO needs it: its length (20: IPv4 without
 * options, 40: IPv6), its addresses (IPv4 in [0]), the TCP bytes after it. */
struct gro_ip {
	unsigned int l3_len, tcp_len;
	uint32_t saddr[4], daddr[4];
};

/* The held segment of this flow, or NULL. */
static inline struct dpsock_gro_item *
gro_find(struct dpsock_gro *g, const struct gro_ip *h, const struct rte_tcp_hdr *tcp)
{
	uint32_t ports = ((uint32_t)tcp->src_port << 16) | tcp->dst_port;
	size_t alen = h->l3_len == sizeof(struct rte_ipv6_hdr) ? 16 : 4;
	unsigned int i;

	for (i = 0; i < g->n; i++) {
		struct dpsock_gro_item *it = &g->item[i];

		if (it->head != NULL && it->ports == ports && it->l3_len == h->l3_len &&
		    memcmp(it->saddr, h->saddr, alen) == 0 && memcmp(it->daddr, h->daddr, alen) == 0)
			return it;
	}
	return NULL;
}

/* A slot for a new held segment: a free one, or the oldest's. */
static inline struct dpsock_gro_item *
gro_slot(struct dpsock_worker *w)
{
	struct dpsock_gro *g = &w->gro;
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->item[i].head == NULL)
			return &g->item[i];
	if (g->n < DPSOCK_GRO_FLOWS)
		return &g->item[g->n++];
	/* a burst of many flows: the oldest held one goes first */
	gro_deliver_one(w, &g->item[0]);
	memmove(&g->item[0], &g->item[1], (g->n - 1) * sizeof(g->item[0]));
	return &g->item[g->n - 1];
}

/* Is this segment's TCP checksum right? (the port's verdict, or software) */
static inline bool
gro_cksum_ok(const struct rte_mbuf *m, const void *l3, const struct gro_ip *h,
	     const struct rte_tcp_hdr *tcp)
{
	switch (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) {
	case RTE_MBUF_F_RX_L4_CKSUM_GOOD:
		return true;
	case RTE_MBUF_F_RX_L4_CKSUM_BAD:
		return false;
	default: {
		/* the pseudo-header's sum and the segment's, folded: all ones
		 * when right (lwIP's checksum routine: lwip/chksum.c) */
		uint32_t sum = h->l3_len == sizeof(struct rte_ipv6_hdr) ?
			       (uint32_t)rte_ipv6_phdr_cksum(l3, 0) :
			       (uint32_t)rte_ipv4_phdr_cksum(l3, 0);

		sum += dpsock_lwip_chksum(tcp, (uint16_t)h->tcp_len);

		sum = (sum & 0xffff) + (sum >> 16);
		return ((sum & 0xffff) + (sum >> 16)) == 0xffff;
	}
	}
}

/* The IP header of a frame GRO may merge: IPv4 without options or a
 * fragment, IPv6 with TCP right behind it, the whole frame in one mbuf
 * without padding. Returns the TCP header, or NULL (the frame passes; a
 * fragment first flushes what is held, naming no flow). */
static inline struct rte_tcp_hdr *
gro_parse(struct dpsock_worker *w, const struct rte_mbuf *m, void *l3, struct gro_ip *h)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	unsigned int tot;

	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6)) {
		const struct rte_ipv6_hdr *ip6 = l3;

		/* worker.c checked the fixed header and the payload length
		 * against the frame */
		if (ip6->proto != IPPROTO_TCP)
			return NULL;
		h->l3_len = sizeof(*ip6);
		tot = sizeof(*ip6) + rte_be_to_cpu_16(ip6->payload_len);
		memcpy(h->saddr, ip6->src_addr, 16);
		memcpy(h->daddr, ip6->dst_addr, 16);
	} else {
		const struct rte_ipv4_hdr *ip = l3;

		if (ip->next_proto_id != IPPROTO_TCP)
			return NULL;
		if (ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)) {
			dpsock_gro_flush(w);
			return NULL;
		}
		/* worker.c validated the IPv4 header, not that the TCP header is here */
		h->l3_len = (ip->version_ihl & 0xf) * 4u;
		tot = rte_be_to_cpu_16(ip->total_length);
		h->saddr[0] = ip->src_addr;
		h->daddr[0] = ip->dst_addr;
	}
	if (m->data_len < RTE_ETHER_HDR_LEN + h->l3_len + sizeof(struct rte_tcp_hdr) ||
	    tot < h->l3_len) {
		dpsock_gro_flush(w);
		return NULL;
	}
	h->tcp_len = tot - h->l3_len;
	return (struct rte_tcp_hdr *)((char *)l3 + h->l3_len);
}

void
dpsock_gro_input(struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	struct dpsock_worker *w = wp->w;
	void *l3 = rte_pktmbuf_mtod_offset(m, void *, RTE_ETHER_HDR_LEN);
	struct rte_tcp_hdr *tcp;
	struct dpsock_gro_item *it;
	struct tcp_pcb *pcb;
	struct gro_ip h;
	uint32_t l4_len, payload, seq;
	uint8_t fl;

	tcp = gro_parse(w, m, l3, &h);
	if (tcp == NULL)
		goto pass;
	it = gro_find(&w->gro, &h, tcp);
	l4_len = (tcp->data_off >> 4) * 4u;
	fl = tcp->tcp_flags;
	if ((h.l3_len != sizeof(struct rte_ipv4_hdr) && h.l3_len != sizeof(struct rte_ipv6_hdr)) ||
	    m->nb_segs != 1 || l4_len < sizeof(*tcp) || h.tcp_len < l4_len ||
	    m->data_len != RTE_ETHER_HDR_LEN + h.l3_len + h.tcp_len ||
	    (payload = h.tcp_len - l4_len) == 0 || !(fl & RTE_TCP_ACK_FLAG) ||
	    (fl & ~(RTE_TCP_ACK_FLAG | RTE_TCP_PSH_FLAG)) != 0 || !gro_cksum_ok(m, l3, &h, tcp))
		goto flush_flow;
	seq = rte_be_to_cpu_32(tcp->sent_seq);
	if (it != NULL) {
		struct rte_tcp_hdr *htcp;

		if (seq != it->next_seq || it->psh || l4_len != it->l4_len ||
		    RTE_ETHER_HDR_LEN + h.l3_len + l4_len + it->payload + payload > GRO_FRAME_MAX ||
		    it->nseg >= DPSOCK_GRO_SEGS) {
			gro_deliver_one(w, it);
			goto start; /* the slot is free again */
		}
		/* the merged header: the last segment's ACK, window, flags
		 * and options */
		htcp = rte_pktmbuf_mtod_offset(it->head, struct rte_tcp_hdr *,
					       RTE_ETHER_HDR_LEN + h.l3_len);
		htcp->recv_ack = tcp->recv_ack;
		htcp->rx_win = tcp->rx_win;
		htcp->tcp_flags |= fl;
		memcpy(htcp + 1, tcp + 1, l4_len - sizeof(*tcp));
		rte_pktmbuf_adj(m, RTE_ETHER_HDR_LEN + h.l3_len + l4_len);
		it->tail->next = m;
		it->tail = m;
		it->head->nb_segs++;
		it->head->pkt_len += m->data_len;
		it->nseg++;
		it->payload += payload;
		it->next_seq += payload;
		it->psh = (fl & RTE_TCP_PSH_FLAG) != 0;
		return;
	}
start:
	/* only the flows of this worker's connections are held: the others
	 * pass as they came (a misdelivered segment is handed on whole) */
	pcb = gro_pcb(h.l3_len, h.daddr, tcp->dst_port, h.saddr, tcp->src_port);
	if (pcb == NULL ||
	    (pcb->state != ESTABLISHED && pcb->state != FIN_WAIT_1 && pcb->state != FIN_WAIT_2))
		goto pass;
	if (it == NULL)
		it = gro_slot(w);
	it->wp = wp;
	it->head = it->tail = m;
	memcpy(it->saddr, h.saddr, sizeof(it->saddr));
	memcpy(it->daddr, h.daddr, sizeof(it->daddr));
	it->ports = ((uint32_t)tcp->src_port << 16) | tcp->dst_port;
	it->l3_len = (uint8_t)h.l3_len;
	it->l4_len = l4_len;
	it->nseg = 1;
	it->payload = payload;
	it->next_seq = seq + payload;
	it->psh = (fl & RTE_TCP_PSH_FLAG) != 0;
	return;
flush_flow:
	if (it != NULL)
		gro_deliver_one(w, it);
pass:
	dpsock_netif_input(wp, m);
}
