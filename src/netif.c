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
 * Transmit copies the pbuf chain once into mbufs from the port's pool and
 * batches them per worker; the TX checksum offloads the port offers replace
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
#include "lwip/igmp.h"
#include "lwip/pbuf.h"
#include "netif/ethernet.h"

#include "daemon_priv.h"
#include "log_priv.h"

unsigned int
dpsock_netif_mbuf_priv_size(void)
{
	return RTE_ALIGN(sizeof(struct pbuf_custom), RTE_MBUF_PRIV_ALIGN);
}

static inline struct rte_mbuf *
pbuf_to_mbuf(struct pbuf *p)
{
	return (struct rte_mbuf *)((char *)p - sizeof(struct rte_mbuf));
}

static void
mbuf_pbuf_free(struct pbuf *p)
{
	rte_pktmbuf_free(pbuf_to_mbuf(p));
}

void
dpsock_netif_input(struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	struct netif *netif = &wp->netif;
	struct pbuf *p;

	if (likely(m->nb_segs == 1 && m->data_len <= UINT16_MAX)) {
		struct pbuf_custom *pc = rte_mbuf_to_priv(m);

		pc->custom_free_function = mbuf_pbuf_free;
		p = pbuf_alloced_custom(PBUF_RAW, m->data_len, PBUF_REF, pc,
					rte_pktmbuf_mtod(m, void *), m->data_len);
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
	if (netif->input(p, netif) != ERR_OK)
		pbuf_free(p);
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

static err_t
netif_linkoutput(struct netif *netif, struct pbuf *p)
{
	struct dpsock_worker_port *wp = netif->state;
	struct dpsock_worker_stats *st = wp->w->stats;
	struct rte_mbuf *m;

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

#if LWIP_IGMP
static err_t
netif_igmp_mac_filter(struct netif *netif, const ip4_addr_t *group,
		      enum netif_mac_filter_action action)
{
	/* Multicast membership arrives with the UDP work; a port in
	 * promiscuous or all-multicast mode needs no filter. */
	return ERR_OK;
}
#endif

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
	netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET |
		       NETIF_FLAG_IGMP | NETIF_FLAG_LINK_UP;
#if LWIP_IGMP
	netif_set_igmp_mac_filter(netif, netif_igmp_mac_filter);
#endif
	/* The worker validates every IPv4 header before lwIP sees it (RX), and
	 * the port computes what it offers (TX). */
	cksum &= ~NETIF_CHECKSUM_CHECK_IP;
	if (port->caps.tx_ip_cksum)
		cksum &= ~NETIF_CHECKSUM_GEN_IP;
	if (port->caps.tx_tcp_cksum)
		cksum &= ~NETIF_CHECKSUM_GEN_TCP;
	if (port->caps.tx_udp_cksum)
		cksum &= ~NETIF_CHECKSUM_GEN_UDP;
	NETIF_SET_CHECKSUM_CTRL(netif, cksum);
	return ERR_OK;
}
