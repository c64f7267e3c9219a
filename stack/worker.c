/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The worker loop: one per worker lcore, each with its own lwIP instance.
 *
 *   rx_burst(queue k of every port) ─► validate ─► lwIP (zero copy)
 *   steering ring (frames other workers hand over) ─► lwIP
 *   lwIP timers; lwIP's output batched ─► tx_burst(queue k)
 *   nothing to do ─► keep polling idle_poll_us, then sleep with back-off
 *
 * Frames are validated here, up to the IPv4 header, so that every malformed
 * frame is counted by name before lwIP sees it; lwIP's own drop counters
 * (L4 checksums, no pcb...) are mirrored into the same stats block.
 *
 * ARP: every worker has a netif with the port's address, so a request is
 * answered by whichever worker's queue it lands on. Each worker also needs
 * every neighbour's MAC, so an ARP frame from the NIC is copied to the other
 * workers' steering rings; a copied request is turned into a reply first, so
 * the other instances learn the sender without answering it again.
 */

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <sched.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>
#include <rte_tcp.h>
#include <rte_udp.h>

#include "core/lwip_compat_priv.h"

#include "lwip/etharp.h"
#include "lwip/init.h"
#include "lwip/ip4_frag.h"
#include "lwip/ip6_frag.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "netif/ethernet.h"

#include "dpsock_lwip.h"
#include "dpsock_lwip_hooks.h"
#include "dpsock_lwip_pcb_index.h"
#include "dpsock_lwip_tso.h"

#include "core/stack_priv.h"
#include "frame/frame_priv.h"
#include "instance_priv.h"
#include "sock/sock_priv.h"
#include "takeover/takeover.h"
#include "core/log_priv.h"
#include "mcast/mcast_priv.h"
#include "netview/netview_priv.h"

#define MIRROR_INTERVAL_US 100000 /* lwIP counters → stats block */
#define SLEEP_MIN_US 16
#define SLEEP_RX_WAKE_MAX_US 100000 /* a worker its frames wake: the stats tick bounds it */
#define TIMER_RECHECK_US 1000 /* longest wait before asking lwIP for its next timer again */

/* Hand a copy of a frame to every other worker, counted in *sent; fix (or
 * NULL) adjusts each copy. ARP and neighbour discovery: each worker's
 * instance keeps its own neighbour cache. */
static void
share_copies(struct dpsock_worker *w, struct rte_mbuf *m, uint64_t *sent,
	     void (*fix)(struct rte_mbuf *c))
{
	struct dpsock_stack *d = w->d;
	unsigned int j;

	for (j = 0; j < d->n_workers; j++) {
		struct dpsock_worker *peer = &d->workers[j];
		struct rte_mbuf *c;

		if (peer == w)
			continue;
		c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
		if (c == NULL) {
			dpsock_stat_add(&w->stats->rx_nomem, 1);
			continue;
		}
		c->port = m->port;
		if (fix != NULL)
			fix(c);
		if (rte_ring_mp_enqueue(peer->steer, c) != 0) {
			dpsock_frame_drop(c, &w->stats->steer_full);
			continue;
		}
		dpsock_stat_add(sent, 1);
		dpsock_worker_wake(peer);
	}
}

/* An ARP copy for another worker: a request as a reply (see the file
 * comment). */
static void
arp_as_reply(struct rte_mbuf *c)
{
	struct rte_arp_hdr *arp = rte_pktmbuf_mtod_offset(c, struct rte_arp_hdr *, RTE_ETHER_HDR_LEN);

	if (arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST))
		arp->arp_opcode = RTE_BE16(RTE_ARP_OP_REPLY);
}

static bool
arp_valid(const struct rte_mbuf *m)
{
	const struct rte_arp_hdr *arp;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*arp))
		return false;
	arp = rte_pktmbuf_mtod_offset(m, const struct rte_arp_hdr *, RTE_ETHER_HDR_LEN);
	return arp->arp_hardware == RTE_BE16(RTE_ARP_HRD_ETHER) &&
	       arp->arp_protocol == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
	       arp->arp_hlen == RTE_ETHER_ADDR_LEN && arp->arp_plen == 4 &&
	       (arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REQUEST) ||
		arp->arp_opcode == RTE_BE16(RTE_ARP_OP_REPLY));
}

/* Validate an IPv4 packet up to its header. Returns the counter to bump, or
 * NULL when the packet may go to lwIP. */
static uint64_t *
ipv4_check(struct dpsock_worker_stats *st, const struct rte_mbuf *m)
{
	const struct rte_ipv4_hdr *ip;
	uint32_t hlen, tot;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip))
		return &st->rx_drop_ip_len;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	if ((ip->version_ihl >> 4) != 4 || (ip->version_ihl & 0xf) < 5)
		return &st->rx_drop_ip_hdr;
	hlen = (ip->version_ihl & 0xf) * 4u;
	tot = rte_be_to_cpu_16(ip->total_length);
	if (RTE_ETHER_HDR_LEN + hlen > m->data_len || tot < hlen ||
	    RTE_ETHER_HDR_LEN + tot > m->pkt_len)
		return &st->rx_drop_ip_len;
	/* 127/8 never comes from a wire (Linux drops such martians): lwIP
	 * would take 127.0.0.1 as its own (connections within the host) */
	if ((ip->src_addr & RTE_BE32(0xff000000)) == RTE_BE32(0x7f000000) ||
	    (ip->dst_addr & RTE_BE32(0xff000000)) == RTE_BE32(0x7f000000))
		return &st->rx_drop_martian;
	switch (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) {
	case RTE_MBUF_F_RX_IP_CKSUM_GOOD:
		break;
	case RTE_MBUF_F_RX_IP_CKSUM_BAD:
		return &st->rx_drop_ip_cksum;
	default:
		/* A correct header sums to 0xffff in one's complement. */
		if (rte_raw_cksum(ip, hlen) != 0xffff)
			return &st->rx_drop_ip_cksum;
	}
	if ((m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK) == RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return &st->rx_drop_l4_cksum;
	if (!(ip->fragment_offset & RTE_BE16(RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK))) {
		const uint8_t *l4 = (const uint8_t *)ip + hlen;
		uint32_t l4len = tot - hlen;

		if (ip->next_proto_id == IPPROTO_UDP) {
			uint16_t ulen;

			/* lwIP ignores the UDP length field: check it here. */
			if (l4len < 8 || m->data_len < RTE_ETHER_HDR_LEN + hlen + 8)
				return &st->rx_drop_udp_len;
			ulen = rte_be_to_cpu_16(((const struct rte_udp_hdr *)l4)->dgram_len);
			if (ulen < 8 || ulen > l4len)
				return &st->rx_drop_udp_len;
			if (ulen < l4len) {
				/* bytes after the datagram inside the IP packet are
				 * not UDP data: cut them, as Linux does (ip4_input
				 * trims to the total length) */
				struct rte_ipv4_hdr *wip = (struct rte_ipv4_hdr *)(uintptr_t)ip;

				wip->total_length = rte_cpu_to_be_16(hlen + ulen);
				wip->hdr_checksum = 0;
				wip->hdr_checksum = rte_ipv4_cksum(wip);
			}
		} else if (ip->next_proto_id == IPPROTO_TCP && l4len >= 14 &&
			   m->data_len >= RTE_ETHER_HDR_LEN + hlen + 14) {
			uint8_t fl = l4[13];

			/* lwIP would open a connection on SYN+FIN (Linux drops
			 * both combinations) */
			if ((fl & RTE_TCP_SYN_FLAG) && (fl & (RTE_TCP_FIN_FLAG | RTE_TCP_RST_FLAG)))
				return &st->rx_drop_tcp_flags;
		}
	}
	if (ip->next_proto_id == IPPROTO_ICMP && m->data_len > RTE_ETHER_HDR_LEN + hlen &&
	    *((const uint8_t *)ip + hlen) == 8 /* echo request */)
		dpsock_stat_add(&st->icmp_echo, 1);
	return NULL;
}

static inline bool
ip6_loopback_or_mapped(const uint8_t *a)
{
	static const uint8_t lo[16] = { [15] = 1 };
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	return memcmp(a, lo, 16) == 0 || memcmp(a, mapped, 12) == 0;
}

/* Validate an IPv6 packet up to its fixed header (lwIP walks the extension
 * headers). Returns the counter to bump, or NULL when the packet may go
 * to lwIP. */
static uint64_t *
ipv6_check(struct dpsock_worker_stats *st, const struct rte_mbuf *m)
{
	static const uint8_t unspec[16];
	const struct rte_ipv6_hdr *ip;
	uint32_t plen;

	if (m->data_len < RTE_ETHER_HDR_LEN + sizeof(*ip))
		return &st->rx_drop_ip6_hdr;
	ip = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
	if ((rte_be_to_cpu_32(ip->vtc_flow) >> 28) != 6)
		return &st->rx_drop_ip6_hdr;
	plen = rte_be_to_cpu_16(ip->payload_len);
	/* 0 would be a jumbogram (RFC 2675): no link here carries one */
	if (plen == 0 || RTE_ETHER_HDR_LEN + sizeof(*ip) + plen > m->pkt_len)
		return &st->rx_drop_ip6_len;
	/* bytes after the payload are trimmed by lwIP (ip6_input) */
	if (ip->src_addr[0] == 0xff || ip6_loopback_or_mapped(ip->src_addr) ||
	    ip6_loopback_or_mapped(ip->dst_addr) || memcmp(ip->dst_addr, unspec, 16) == 0 ||
	    /* the unspecified source: only duplicate address detection's
	     * solicitations (ICMPv6) and MLD reports (ICMPv6 behind a
	     * hop-by-hop header) have it */
	    (memcmp(ip->src_addr, unspec, 16) == 0 && ip->proto != IPPROTO_ICMPV6 &&
	     ip->proto != IPPROTO_HOPOPTS))
		return &st->rx_drop_ip6_martian;
	return NULL;
}

/* 802.1Q, for a frame from the port: an interface with a VLAN takes only
 * that VLAN's frames, one without takes untagged and priority-tagged (VLAN
 * 0) frames, as a Linux VLAN device and its parent do. The tag is stripped
 * here (unless the PMD did), so that nothing after this (validation,
 * steering, GRO, IGMP, lwIP) sees one. Returns the counter to bump, or NULL
 * when the frame goes on. */
static uint64_t *
rx_vlan(struct dpsock_worker_stats *st, const struct dpsock_worker_port *wp, struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	uint16_t want = wp->port->vlan_tci & RTE_VLAN_ID_MASK;

	if (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_VLAN)) {
		if (m->data_len < RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN)
			return &st->rx_drop_runt;
		if (m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED)
			return &st->rx_drop_vlan; /* a second tag (QinQ) */
		rte_vlan_strip(m); /* sets vlan_tci and RX_VLAN_STRIPPED */
	} else if (likely(!(m->ol_flags & RTE_MBUF_F_RX_VLAN_STRIPPED))) {
		return want == 0 ? NULL : &st->rx_drop_vlan; /* untagged */
	}
	if ((m->vlan_tci & RTE_VLAN_ID_MASK) != want)
		return &st->rx_drop_vlan;
	return NULL;
}

static void
rx_frame(struct dpsock_worker *w, struct dpsock_worker_port *wp, struct rte_mbuf *m,
	 bool from_nic)
{
	struct dpsock_worker_stats *st = w->stats;
	const struct rte_ether_hdr *eth;
	uint64_t *bad;

	if (unlikely(m->data_len < RTE_ETHER_HDR_LEN)) {
		dpsock_frame_drop(m, &st->rx_drop_runt);
		return;
	}
	if (from_nic && (bad = rx_vlan(st, wp, m)) != NULL) {
		dpsock_frame_drop(m, bad);
		return;
	}
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	switch (eth->ether_type) {
	case RTE_BE16(RTE_ETHER_TYPE_IPV4):
		if (from_nic) {
			int owner;

			bad = ipv4_check(st, m);
			if (unlikely(bad != NULL)) {
				dpsock_frame_drop(m, bad);
				return;
			}
			((struct dpsock_mbuf_priv *)rte_mbuf_to_priv(m))->hops = 0;
			owner = w->d->n_workers > 1 ? dpsock_steer_owner(w, m) : -1;
			if (owner >= 0) {
				dpsock_worker_steer(w, &w->d->workers[owner], m);
				return;
			}
		} else {
			dpsock_stat_add(&st->steer_in, 1);
		}
		if (unlikely(rte_pktmbuf_mtod_offset(m, const struct rte_ipv4_hdr *,
				RTE_ETHER_HDR_LEN)->next_proto_id == IPPROTO_IGMP)) {
			dpsock_igmp_rx(w, wp, m); /* one IGMP host per port (mchost.c) */
			return;
		}
		dpsock_stat_add(&st->ip_in, 1);
		break;
	case RTE_BE16(RTE_ETHER_TYPE_IPV6): {
		const struct rte_ipv6_hdr *ip6;
		int icmp6;

		/* IPv6 only on a port with address6, or a shared port whose
		 * netdev has IPv6 (its link-local address in slot 0) */
		if (!ip6_addr_isvalid(netif_ip6_addr_state(&wp->netif, 0))) {
			dpsock_frame_drop(m, wp->port->shared ? &st->rx_kernel_frames : &st->rx_drop_ethertype);
			return;
		}
		/* a frame from another worker was checked where it came in */
		bad = from_nic ? ipv6_check(st, m) : NULL;
		if (unlikely(bad != NULL)) {
			dpsock_frame_drop(m, bad);
			return;
		}
		/* the fixed header is there now: an ICMPv6 message's type, or -1 */
		ip6 = rte_pktmbuf_mtod_offset(m, const struct rte_ipv6_hdr *, RTE_ETHER_HDR_LEN);
		if (unlikely(ip6->proto == IPPROTO_HOPOPTS) && dpsock_mld_offset(m) != 0) {
			/* one MLD host per port (mchost.c); the kernel is the
			 * host of a shared port */
			if (wp->port->shared)
				dpsock_frame_drop(m, &st->rx_kernel_frames);
			else
				dpsock_mld_rx(w, wp, m);
			return;
		}
		icmp6 = ip6->proto == IPPROTO_ICMPV6 && m->data_len > RTE_ETHER_HDR_LEN + sizeof(*ip6) ?
			*(const uint8_t *)(ip6 + 1) : -1;
		/* a shared port's neighbour discovery and echo are the kernel's
		 * (its filter never sends ICMPv6 here) */
		if (unlikely(icmp6 >= 0) && wp->port->shared) {
			dpsock_frame_drop(m, &st->rx_kernel_frames);
			return;
		}
		if (from_nic) {
			int owner;

			((struct dpsock_mbuf_priv *)rte_mbuf_to_priv(m))->hops = 0;
			if (w->d->n_workers > 1) {
				/* router and neighbour advertisements, redirects:
				 * every instance (the answer to one worker's
				 * solicitation may come in on another's queue); a
				 * solicitation is answered where it came in */
				if (icmp6 == 134 || icmp6 == 136 || icmp6 == 137)
					share_copies(w, m, &st->nd_shared_out, NULL);
				owner = dpsock_steer_owner(w, m);
				if (owner >= 0) {
					dpsock_worker_steer(w, &w->d->workers[owner], m);
					return;
				}
			}
		} else {
			dpsock_stat_add(&st->steer_in, 1);
		}
		if (icmp6 == 128) /* echo request */
			dpsock_stat_add(&st->icmp6_echo, 1);
		dpsock_stat_add(&st->ip6_in, 1);
		break;
	}
	case RTE_BE16(RTE_ETHER_TYPE_ARP):
		if (wp->port->shared) {
			/* the kernel's: dpsock answers no ARP on a port it
			 * shares (an af_packet port sees every frame) */
			dpsock_frame_drop(m, &st->rx_kernel_frames);
			return;
		}
		if (!arp_valid(m)) {
			dpsock_frame_drop(m, &st->rx_drop_arp);
			return;
		}
		if (from_nic) {
			dpsock_stat_add(&st->arp_in, 1);
			if (w->d->n_workers > 1)
				share_copies(w, m, &st->arp_shared_out, arp_as_reply);
		} else {
			dpsock_stat_add(&st->arp_shared_in, 1);
		}
		break;
	default:
		dpsock_frame_drop(m, &st->rx_drop_ethertype);
		return;
	}
	if (w->gro_on && (eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
			  eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV6)))
		dpsock_gro_input(wp, m);
	else
		dpsock_netif_input(wp, m);
}

/* One counter of lwIP's pcb index or super-segments (lwip/pcb_index.c,
 * lwip/tso.c). */
#define PCB_INDEX_STAT(f) \
	({ struct dpsock_tcp_index_stats s_; dpsock_tcp_index_stats(&s_); s_.f; })
#define TSO_STAT(f) ({ struct dpsock_tcp_tso_stats s_; dpsock_tcp_tso_stats(&s_); s_.f; })

/* lwIP's own counters copied into the stats block: X(stats field, lwIP's). */
#define LWIP_MIRRORS(X)                                                         \
	X(lwip_ip_drop, lwip_stats.ip.drop)                                     \
	X(lwip_icmp_drop, lwip_stats.icmp.drop)                                 \
	X(lwip_icmp_chkerr, lwip_stats.icmp.chkerr)                             \
	X(lwip_icmp_xmit, lwip_stats.icmp.xmit)                                 \
	X(lwip_udp_drop, lwip_stats.udp.drop)                                   \
	X(lwip_udp_chkerr, lwip_stats.udp.chkerr)                               \
	X(lwip_tcp_drop, lwip_stats.tcp.drop)                                   \
	X(lwip_tcp_chkerr, lwip_stats.tcp.chkerr)                               \
	X(lwip_etharp_drop, lwip_stats.etharp.drop)                             \
	X(lwip_ip6_drop, lwip_stats.ip6.drop)                                   \
	X(lwip_icmp6_drop, lwip_stats.icmp6.drop)                               \
	X(lwip_nd6_drop, lwip_stats.nd6.drop)                                   \
	X(lwip_ip6frag_drop, lwip_stats.ip6_frag.drop)                          \
	X(lwip_tcp_memerr, lwip_stats.tcp.memerr)                               \
	X(lwip_ipfrag_drop, lwip_stats.ip_frag.drop)                            \
	X(tcp_tw_reused, PCB_INDEX_STAT(tw_reused))                             \
	X(tcp_tw_evicted, PCB_INDEX_STAT(tw_evicted))                           \
	X(tcp_tso_joined, TSO_STAT(joined))                                     \
	X(tcp_tso_splits, TSO_STAT(splits))                                     \
	X(tcp_unsent_acked, TSO_STAT(acked_dropped))

#define MIRROR_ENUM(f, v) MIRROR_##f,
enum { LWIP_MIRRORS(MIRROR_ENUM) MIRROR_COUNT };
_Static_assert(MIRROR_COUNT <= RTE_DIM(((struct dpsock_worker *)0)->lwip_base),
	       "lwip_base too small for the mirrored counters");

/* lwIP's counters, less what they were at the last -z (lwIP's own are
 * never reset: other code reads them). */
static void
mirror_lwip_stats(struct dpsock_worker *w)
{
	struct dpsock_worker_stats *st = w->stats;
	struct dpsock_lwip_mem_stats mem;

#define MIRROR_SET(f, v) dpsock_stat_set(&st->f, (STAT_COUNTER)((v) - w->lwip_base[MIRROR_##f]));
	LWIP_MIRRORS(MIRROR_SET)
#undef MIRROR_SET
	dpsock_lwip_mem_stats(&mem);
	dpsock_stat_set(&st->lwip_mem_bytes, mem.bytes_in_use);
	dpsock_stat_set(&st->lwip_mem_objs, mem.objs_in_use);
	dpsock_stat_set(&st->tcp_time_wait, PCB_INDEX_STAT(tw_now));
}

/* dpsock-stat -z: this worker is its counters' only writer, so it zeroes
 * them itself, then acknowledges (see stats_segment.h). */
static void
zero_counters(struct dpsock_worker *w, uint64_t req)
{
#define MIRROR_BASE(f, v) w->lwip_base[MIRROR_##f] = (v);
	LWIP_MIRRORS(MIRROR_BASE)
#undef MIRROR_BASE
	dpsock_stats_zero_block(w->stats, dpsock_worker_stat_desc, dpsock_worker_stat_count);
	w->busy_tsc = w->busy_mark_busy = 0;
	dpsock_sockstat_zero(w);
	w->zero_seen = req;
	/* release: the zeroed counters are visible before the ack */
	__atomic_store_n(&w->stats->zero_ack, req, __ATOMIC_RELEASE);
}

/* Every 100 ms: lwIP's counters, levels, busy share, requests, sockets. */
static void
stats_tick(struct dpsock_worker *w, uint64_t now)
{
	struct dpsock_stack *d = w->d;
	struct dpsock_worker_stats *st = w->stats;
	uint64_t req;
	uint32_t timer_ms;

	/* acquire: pairs with the tool's release increment of zero_req */
	req = __atomic_load_n(&d->stats->ctl.zero_req, __ATOMIC_ACQUIRE);
	if (unlikely(req != w->zero_seen))
		zero_counters(w, req);
	mirror_lwip_stats(w);
	dpsock_stat_set(&st->busy_us, w->busy_tsc * 1000000 / d->tsc_hz);
	if (now - w->busy_mark_tsc >= d->tsc_hz) {
		dpsock_stat_set(&st->busy_permille, (w->busy_tsc - w->busy_mark_busy) * 1000 /
						    (now - w->busy_mark_tsc));
		w->busy_mark_tsc = now;
		w->busy_mark_busy = w->busy_tsc;
	}
	dpsock_stat_set(&st->steer_ring_depth, rte_ring_count(w->steer));
	timer_ms = sys_timeouts_sleeptime();
	dpsock_stat_set(&st->timers_pending, timer_ms);
	dpsock_clock_tick(w);
	dpsock_sock_stats_refresh(w);
	if (w->n_neigh_wait > 0)
		dpsock_netif_neigh_retry(w);
}

/* the recovery counters sit in the stats block as tcp_rec.c lays them out */
#define REC_LAYOUT(n, h)                                                        \
	_Static_assert(offsetof(struct dpsock_worker_stats, n) -                \
			       offsetof(struct dpsock_worker_stats, tcp_rexmit) == \
		       offsetof(struct dpsock_tcp_rec_stats, n), "recovery counter " #n);
DPSOCK_TCP_REC_COUNTERS(REC_LAYOUT)
#undef REC_LAYOUT

/*
 * Segments to the stack's own addresses (LWIP_NETIF_LOOPBACK): lwIP queues
 * them on the netif instead of sending them (ip4_output_if), and they come
 * back in here, through ip_input, on the worker that sent them (a
 * listener has a pcb on every worker, so both ends of a connection to
 * this host's address live in one lwIP). They never reach the wire or the
 * port, so they were never checksummed by anyone: lwIP checks none of
 * them. The netif list is this worker's (lwIP's globals are per thread).
 * Only what is queued when the pass gets here is taken in: what that
 * answers (an ACK, more data) waits for the next pass, after the NIC and
 * the programs' commands had their turn (lwIP's netif_poll would go on
 * for as long as the two ends keep answering each other).
 */
static unsigned int
loop_poll(struct dpsock_worker *w)
{
	struct netif *nif;
	unsigned int n = 0;

	NETIF_FOREACH(nif) {
		struct pbuf *p = nif->loop_first;

		if (p == NULL)
			continue;
		nif->loop_first = nif->loop_last = NULL;
		NETIF_SET_CHECKSUM_CTRL(nif, nif->chksum_flags &
					~(NETIF_CHECKSUM_CHECK_IP | NETIF_CHECKSUM_CHECK_TCP |
					  NETIF_CHECKSUM_CHECK_UDP | NETIF_CHECKSUM_CHECK_ICMP));
		while (p != NULL) {
			/* one packet: the chain up to the pbuf whose len is
			 * what is left of the packet (netif_loop_output
			 * links packets one after the other) */
			struct pbuf *end = p, *next;

			while (end->len != end->tot_len)
				end = end->next;
			next = end->next;
			end->next = NULL;
			p->if_idx = netif_get_index(nif);
			if (ip_input(p, nif) != ERR_OK)
				pbuf_free(p);
			p = next;
			n++;
		}
	}
	if (n > 0)
		dpsock_stat_add(&w->stats->loop_packets, n);
	return n;
}

unsigned int
dpsock_worker_poll(struct dpsock_worker *w)
{
	struct dpsock_stack *d = w->d;
	struct dpsock_worker_stats *st = w->stats;
	struct rte_mbuf *pkts[DPSOCK_RX_BURST_MAX];
	unsigned int i, k, n, work = 0;
	uint64_t start = rte_rdtsc(), now;

	/* a new net view (addresses, routes, neighbours): one load a pass */
	if (unlikely(__atomic_load_n(&d->nv_gen, __ATOMIC_RELAXED) != w->nv_gen))
		dpsock_netif_adopt_view(w);
	/* captures started or ended (capture/): one load a pass */
	if (unlikely(__atomic_load_n(&d->cap_gen, __ATOMIC_RELAXED) != w->cap.gen))
		dpsock_capture_worker_sync(w);
	for (i = 0; i < w->n_ports; i++) {
		struct dpsock_worker_port *wp = &w->ports[i];
		uint64_t bytes = 0;

		n = rte_eth_rx_burst(wp->dev_port, wp->dev_queue, pkts, w->rx_burst);
		if (n == 0)
			continue;
		w->rx_tsc = rte_rdtsc(); /* receive timestamps (SO_TIMESTAMP*) */
		for (k = 0; k < n; k++)
			bytes += pkts[k]->pkt_len;
		dpsock_stat_add(&st->rx_bursts, 1);
		/* histogram: rx_burst_1, _2_3, _4_7 ... _64_up, consecutive */
		dpsock_stat_add(&st->rx_burst_1 + RTE_MIN(31u - (unsigned int)__builtin_clz(n), 6u), 1);
		dpsock_stat_add(&st->rx_packets, n);
		dpsock_stat_add(&st->rx_bytes, bytes);
		if (likely(w->cap.n == 0)) {
			for (k = 0; k < n; k++)
				rx_frame(w, wp, pkts[k], true);
		} else {
			/* a capture runs: each frame's record waits for its
			 * fate (a drop names its counter) */
			for (k = 0; k < n; k++) {
				dpsock_capture_rx(w, wp, pkts[k]);
				rx_frame(w, wp, pkts[k], true);
				dpsock_capture_rx_done(w);
			}
		}
		dpsock_gro_flush(w);
		work += n;
	}

	dpsock_netif_reclaim(w);
	n = rte_ring_sc_dequeue_burst(w->steer, (void **)pkts, w->rx_burst, NULL);
	if (n > 0)
		w->rx_tsc = rte_rdtsc();
	for (k = 0; k < n; k++)
		rx_frame(w, &w->ports[d->port_idx[pkts[k]->port]], pkts[k], false);
	dpsock_gro_flush(w);
	work += n;

	if (d->app != NULL && d->app->worker_poll != NULL && w->app_ready)
		work += d->app->worker_poll(w, d->app_arg);
	if (w->idx == DPSOCK_IGMP_WORKER)
		work += dpsock_igmp_poll(w);

	/* lwIP's timers: asking lwIP when the next one is due reads the
	 * clock (sys_now), so the answer is kept as a TSC deadline, looked
	 * at again within TIMER_RECHECK_US at the latest (a timer armed in
	 * between, like TCP's 25 ms tick once a first pcb exists, starts at
	 * most that late). */
	now = rte_rdtsc();
	if (now >= w->timer_due_tsc) {
		uint32_t ms = sys_timeouts_sleeptime();

		if (ms == 0) {
			sys_check_timeouts();
			dpsock_stat_add(&st->timer_runs, 1);
			ms = sys_timeouts_sleeptime();
		}
		w->timer_due_tsc = now + RTE_MIN((uint64_t)ms * 1000, (uint64_t)TIMER_RECHECK_US) *
					 d->tsc_hz / 1000000;
	}
	/* TCP's microsecond timers: RACK, tail loss probe, pacing */
	dpsock_tcp_rec_poll();
	/* after everything that sends (commands, timers): what it looped back
	 * to this host is taken in now; what that answers counts as work, so
	 * the next pass comes before any sleep */
	work += loop_poll(w);
	if (now >= w->next_mirror_tsc) {
		stats_tick(w, now);
		w->next_mirror_tsc = now + d->tsc_hz / (1000000 / MIRROR_INTERVAL_US);
	}
	dpsock_worker_flush(w);

	dpsock_stat_add(&st->loops, 1);
	if (work) {
		dpsock_stat_add(&st->busy_loops, 1);
		w->busy_tsc += rte_rdtsc() - start;
	}
	return work;
}

/*
 * An idle pass (worker.yield): polling makes no system call. Only with
 * `always` (threads of unknown needs share the worker's CPU) does every
 * idle pass offer the CPU away; `auto` yields only where the worker knows
 * a thread of its CPU has work, which is when the preload server has just
 * woken one (daemon/serve.c). A guess between two packets would put a
 * system call in front of the next one, and a native app, whose threads
 * are the workers, never yields.
 */
static void
idle_yield(struct dpsock_worker *w)
{
	if (w->yield != DPSOCK_YIELD_ALWAYS)
		return;
	sched_yield();
	dpsock_stat_add(&w->stats->idle_yields, 1);
}

void
dpsock_worker_idle(struct dpsock_worker *w, unsigned int work, uint32_t max_us)
{
	struct dpsock_worker_stats *st = w->stats;
	struct epoll_event ev;
	struct timespec ts, t0, t1;
	uint64_t now = rte_rdtsc();
	uint32_t us, timer_ms;
	int n;

	if (work) {
		w->last_work_tsc = now;
		w->sleep_us = 0;
		return;
	}
	if (now - w->last_work_tsc < w->idle_poll_tsc) {
		idle_yield(w);
		rte_pause();
		return;
	}
	us = w->sleep_us ? w->sleep_us * 2 : SLEEP_MIN_US;
	/* a worker whose every queue wakes it when a frame arrives (AF_XDP)
	 * sleeps until its next timer; the others look at their queues every
	 * worker.idle_sleep_max_us */
	us = RTE_MIN(us, w->rx_wake ? SLEEP_RX_WAKE_MAX_US : w->sleep_max_us);
	us = RTE_MIN(us, max_us);
	timer_ms = sys_timeouts_sleeptime();
	if (timer_ms != SYS_TIMEOUTS_SLEEPTIME_INFINITE && (uint64_t)timer_ms * 1000 < us)
		us = timer_ms * 1000;
	us = (uint32_t)RTE_MIN((uint64_t)us, dpsock_tcp_rec_sleep_us());
	if (us == 0)
		return;
	if (w->sleep_us == 0) {
		unsigned int i;

		/* before the first sleep of an idle period: see tx_lazy_completion */
		for (i = 0; i < w->n_ports; i++)
			if (w->ports[i].port->caps.tx_lazy_completion)
				rte_eth_tx_burst(w->ports[i].dev_port, w->ports[i].dev_queue, NULL, 0);
	}
	w->sleep_us = us;

	/* Announce the sleep, then look at the steering ring once more.
	 * seq_cst: pairs with the fence in dpsock_worker_wake, which enqueues
	 * before it reads `sleeping`; either the waker sees sleeping == 1 and
	 * writes the eventfd, or this load sees its mbuf. */
	__atomic_store_n(&w->sleeping, 1, __ATOMIC_RELAXED);
	/* The app's copy (preload clients read the wake page): the same
	 * handshake with their fence between posting a command and reading
	 * it, paired by the fence below. */
	if (w->sleeping_pub != NULL)
		__atomic_store_n(w->sleeping_pub, 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!rte_ring_empty(w->steer) || dpsock_igmp_pending(w) ||
	    (w->app_ready && w->d->app != NULL && w->d->app->worker_pending != NULL &&
	     w->d->app->worker_pending(w, w->d->app_arg))) {
		__atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
		if (w->sleeping_pub != NULL)
			__atomic_store_n(w->sleeping_pub, 0, __ATOMIC_RELAXED);
		w->sleep_us = 0;
		return;
	}
	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (us % 1000000) * 1000L;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = epoll_pwait2(w->epfd, &ev, 1, &ts, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	__atomic_store_n(&w->sleeping, 0, __ATOMIC_RELAXED);
	if (w->sleeping_pub != NULL)
		__atomic_store_n(w->sleeping_pub, 0, __ATOMIC_RELAXED);
	if (n > 0) {
		uint64_t v;

		/* the eventfd (a producer woke us), or a queue's AF_XDP socket
		 * (a frame arrived: the next rx_burst takes it) */
		if (ev.data.fd == w->efd && read(w->efd, &v, sizeof(v)) == sizeof(v))
			dpsock_stat_add(&st->wakeups, 1);
		w->sleep_us = 0;
	}
	dpsock_stat_add(&st->sleeps, 1);
	dpsock_stat_add(&st->sleep_us, (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000 +
					       (t1.tv_nsec - t0.tv_nsec) / 1000);
}

int
dpsock_worker_init(struct dpsock_worker *w)
{
	struct dpsock_stack *d = w->d;
	struct dpsock_lwip_params params;
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int i, n_wake;
	int ret;

	memset(&params, 0, sizeof(params));
	params.instance = w->idx;
	params.mem_limit = (uint64_t)d->conf.lwip_mb << 20;
	params.mem_get = dpsock_netif_mem_get;
	params.mem_put = dpsock_netif_mem_put;
	ret = dpsock_lwip_instance_init(&params);
	if (ret != 0) {
		DPSOCK_LOG(ERR, worker, "worker %u: lwIP instance: %s", w->idx, strerror(-ret));
		return ret;
	}
	/* tcp.congestion was checked against the same names */
	if (dpsock_tcp_cc_set_default(d->conf.congestion) != 0)
		DPSOCK_LOG(ERR, worker, "worker %u: no congestion control '%s'", w->idx,
			   d->conf.congestion);
	dpsock_tcp_pacing_set_default(d->conf.pacing);
	dpsock_tcp_rec_clock_tsc(d->tsc_hz);
	/* IPv4 ids: a range of its own per worker, so that two workers never
	 * send one peer datagrams with the same id (its reassembly could mix
	 * their fragments) */
	dpsock_lwip_ip_id_init((u16_t)(w->idx * (0x10000u / d->n_workers)),
			       0x10000u / d->n_workers);
	/* lwIP's sender counts its recovery work in our block directly */
	dpsock_tcp_rec_stats_bind((struct dpsock_tcp_rec_stats *)(void *)&w->stats->tcp_rexmit);
	/* a takeover: the holder's eventfd, which its programs write */
	w->efd = dpsock_tko_take_fd(d, DPSOCK_TKO_FD_WORKER_EFD, w->idx);
	if (w->efd < 0)
		w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.fd = w->efd;
	if (w->efd < 0 || w->epfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->efd, &ev) != 0) {
		ret = -errno;
		DPSOCK_LOG(ERR, worker, "worker %u: eventfd/epoll: %s", w->idx, strerror(errno));
		return ret;
	}
	for (i = 0; i < d->n_ports; i++) {
		const struct dpsock_iface_conf *ic = &d->conf.ifaces[i];
		struct dpsock_worker_port *wp = &w->ports[i];
		ip4_addr_t addr, mask, gw;

		wp->w = w;
		wp->port = &d->ports[i];
		wp->port_idx = i;
		wp->dev_port = wp->port->queues[w->queue].port_id;
		wp->dev_queue = wp->port->queues[w->queue].queue_id;
		wp->nif[0] = &wp->netif;
		wp->n_nif = 1;
		/* a shared port's addresses come with the net view (adopted below) */
		ip4_addr_set_u32(&addr, ic->shared ? 0 : ic->addr);
		ip4_addr_set_u32(&mask, !ic->shared && ic->prefix_len ?
				 rte_cpu_to_be_32(~0u << (32 - ic->prefix_len)) : 0);
		ip4_addr_set_u32(&gw, ic->shared ? 0 : ic->gateway);
		if (netif_add(&wp->netif, &addr, &mask, &gw, wp, dpsock_netif_init,
			      ethernet_input) == NULL) {
			DPSOCK_LOG(ERR, worker, "worker %u: netif_add for port %s failed", w->idx,
				   wp->port->name);
			return -ENOMEM;
		}
		w->n_ports = i + 1;
		dpsock_netif_offload_setup(wp);
		if (i == 0 || (ic->gateway && ip4_addr_get_u32(netif_ip4_gw(netif_default)) == 0))
			netif_set_default(&wp->netif);
		netif_set_up(&wp->netif);
		if (!ic->shared && ic->prefix6_len != 0)
			dpsock_netif_ip6_setup(wp, ic->addr6);
	}
	/* Queues that wake a sleeping worker when a frame arrives: an AF_XDP
	 * socket is readable while its RX ring holds frames (level-triggered:
	 * one that arrived after the last look before the sleep ends it). */
	n_wake = 0;
	for (i = 0; i < w->n_ports; i++) {
		struct epoll_event xev = { .events = EPOLLIN };

		xev.data.fd = w->ports[i].port->queues[w->queue].xsk_fd;
		if (xev.data.fd >= 0 && epoll_ctl(w->epfd, EPOLL_CTL_ADD, xev.data.fd, &xev) == 0)
			n_wake++;
	}
	w->rx_wake = w->n_ports > 0 && n_wake == w->n_ports;
	/* the net view: routes, and a shared port's addresses and MTU */
	w->nv = NULL;
	dpsock_netif_adopt_view(w);
	w->gro_on = d->conf.gro;
	w->stats->lcore_id = w->lcore_id;
	w->last_work_tsc = w->busy_mark_tsc = rte_rdtsc();
	ret = dpsock_sockstat_worker_init(w);
	if (ret != 0)
		return ret;
	ret = dpsock_sock_worker_init(w);
	if (ret == 0) {
		dpsock_clock_init(w);
		ret = dpsock_mcast_worker_init(w);
	}
	if (ret == 0 && dpsock_tko_taking(d))
		ret = dpsock_tko_worker_restore(w, true); /* counters first: sockets set gauges */
	if (ret != 0)
		return ret;
	if (d->app != NULL && d->app->worker_init != NULL) {
		ret = d->app->worker_init(w, d->app_arg);
		if (ret != 0) {
			DPSOCK_LOG(ERR, worker, "worker %u: %s: worker_init: %s", w->idx,
				   d->app->name ? d->app->name : "app", strerror(ret < 0 ? -ret : ret));
			return ret < 0 ? ret : -ret;
		}
	}
	/* the holder's pcbs no socket stood for (closing, TIME_WAIT) */
	if (dpsock_tko_taking(d) && (ret = dpsock_tko_worker_restore(w, false)) != 0)
		return ret;
	w->ports_gen = __atomic_load_n(&d->ports_gen, __ATOMIC_ACQUIRE);
	w->app_ready = true;
	dpsock_worker_flush(w);
	return 0;
}

void
dpsock_worker_fini(struct dpsock_worker *w)
{
	struct dpsock_lwip_mem_stats mem;
	struct rte_mbuf *m;
	unsigned int i;

	if (w->app_ready && w->d->app != NULL && w->d->app->worker_fini != NULL)
		w->d->app->worker_fini(w, w->d->app_arg);
	w->app_ready = false;
	/* The app's sockets: reset, callbacks told (-ECONNABORTED). */
	if (dpsock_self == w)
		dpsock_sock_worker_fini(w);
	/* the groups this host joined: left on the link before it goes */
	dpsock_igmp_fini(w);
	dpsock_mcast_worker_fini(w);
	dpsock_clock_fini(w);
	/* Connections first (an abort frees their queues), then interfaces
	 * (netif_remove drops ARP-queued packets), then what the timers would
	 * have freed later: IP fragments waiting for reassembly. */
	while (tcp_active_pcbs != NULL)
		tcp_abort(tcp_active_pcbs);
	while (tcp_tw_pcbs != NULL)
		tcp_abort(tcp_tw_pcbs);
	while (tcp_listen_pcbs.pcbs != NULL)
		tcp_close((struct tcp_pcb *)tcp_listen_pcbs.pcbs);
	while (udp_pcbs != NULL)
		udp_remove(udp_pcbs);
	/* frames that waited for a neighbour of a shared port */
	while (w->n_neigh_wait > 0)
		pbuf_free(w->neigh_wait[--w->n_neigh_wait].p);
	for (i = 0; i < w->n_ports; i++) {
		struct dpsock_worker_port *wp = &w->ports[i];

		dpsock_netif_flush(wp);
		while (wp->n_nif > 1) {
			struct netif *nif = wp->nif[--wp->n_nif];

			netif_remove(nif);
			rte_free(nif);
		}
		netif_remove(&wp->netif);
	}
#if IP_REASSEMBLY
	for (i = 0; i <= IP_REASS_MAXAGE; i++)
		ip_reass_tmr();
#endif
#if LWIP_IPV6_REASS
	for (i = 0; i <= IPV6_REASS_MAXAGE; i++)
		ip6_reass_tmr();
#endif
	while (rte_ring_sc_dequeue(w->steer, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	for (i = 0; i < w->n_ports; i++)
		if (w->ports[i].tx_n) /* anything lwIP sent while tearing down */
			rte_pktmbuf_free_bulk(w->ports[i].tx, w->ports[i].tx_n);
	mirror_lwip_stats(w);
	dpsock_tcp_rec_stats_bind(NULL);
	dpsock_sockstat_worker_fini(w);
	dpsock_lwip_mem_stats(&mem);
	DPSOCK_LOG(DEBUG, worker, "worker %u: lwIP holds %" PRIu64 " objects (%" PRIu64
		   " bytes) at exit (timers)", w->idx, mem.objs_in_use, mem.bytes_in_use);
	/* Frames lent to the NIC must come back before lwIP's memory goes. */
	for (i = 0; i < 1000 && w->tx_loans > 0; i++) {
		unsigned int k;

		for (k = 0; k < w->n_ports; k++)
			rte_eth_tx_done_cleanup(w->ports[k].dev_port, w->ports[k].dev_queue, 0);
		dpsock_netif_reclaim(w);
		if (w->tx_loans > 0)
			rte_delay_us_sleep(100);
	}
	if (w->tx_loans > 0)
		/* The PMD keeps them until its port stops: keep lwIP's memory
		 * (the process is stopping) rather than let the NIC read freed
		 * memory. */
		DPSOCK_LOG(NOTICE, worker, "worker %u: %u frames still with the NIC; "
			   "lwIP memory kept until exit", w->idx, w->tx_loans);
	else
		dpsock_lwip_instance_fini();
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->efd >= 0)
		close(w->efd);
	w->epfd = w->efd = -1;
}

int
dpsock_worker_main(void *arg)
{
	struct dpsock_worker *w = arg;
	struct dpsock_stack *d = w->d;
	int ret;

	ret = dpsock_worker_init(w);
	__atomic_store_n(&w->init_ret, ret, __ATOMIC_RELAXED);
	/* release: publishes init_ret to the main lcore's acquire load */
	__atomic_store_n(&w->init_done, 1, __ATOMIC_RELEASE);
	/* a takeover's new process: nothing runs before the holder is told
	 * (it could still resume) */
	while (ret == 0 && __atomic_load_n(&d->tko_gate, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&d->quit, __ATOMIC_RELAXED))
		rte_delay_us_sleep(100);
	if (ret == 0)
		while (!__atomic_load_n(&d->quit, __ATOMIC_RELAXED)) {
			if (unlikely(dpsock_tko_freezing(&d->tko_phase))) {
				/* a takeover (takeover/): handed over, the new
				 * process holds everything: leave it as it is */
				if (dpsock_tko_worker_freeze(w))
					return 0;
				continue;
			}
			dpsock_worker_idle(w, dpsock_worker_poll(w), UINT32_MAX);
		}
	dpsock_worker_fini(w);
	return ret;
}
