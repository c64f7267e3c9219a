/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip_hooks.h — LWIP_HOOK_FILENAME: prototypes of the hooks lwipopts.h
 * wires into lwIP. Included by lwIP sources after their own headers.
 */
#ifndef DPSOCK_LWIP_HOOKS_H
#define DPSOCK_LWIP_HOOKS_H

#include "lwip/ip_addr.h"

/* called from lwIP's sources by the edits of lwip/transform_perf.py */
#include "dpsock_lwip_tso.h"

/* RFC 6528 initial sequence number: keyed hash of the 4-tuple + 4 us clock. */
u32_t dpsock_lwip_tcp_isn(const ip_addr_t *local_ip, u16_t local_port,
                          const ip_addr_t *remote_ip, u16_t remote_port);

/* This instance's IPv4 identification values: first, first + 1 ...
 * first + count - 1, then first again (count 1..65536; the default is all
 * of them from 0). Each worker's instance takes its own range. */
void dpsock_lwip_ip_id_init(u16_t first, u32_t count);

struct pbuf;
struct tcp_hdr;

/*
 * A TCP segment this instance has no connection for, about to be answered
 * with RST (or, an RST, ignored): a segment for a passive connection that
 * another worker owns, delivered here because the port spread one flow over
 * two queues (net_af_packet's fanout rolls packets over to another socket
 * when a queue's ring is full; an RSS table can change under load). Active
 * opens are caught before lwIP (steer.c's port table); passive ones share
 * the listening port, so only the instance that holds the pcb can tell.
 * Called with the header still in host byte order (tcp_input converted it).
 * Returns 1 when the segment was handed to the next worker (lwIP then only
 * frees its pbuf), 0 to let lwIP answer as usual (one worker, every worker
 * already tried, a SYN, a copied or chained pbuf).
 */
int dpsock_lwip_tcp_unmatched(struct pbuf *p, struct tcp_hdr *hdr);

struct netif;
struct udp_pcb;

/*
 * udp_input found pcb, the first socket matching a datagram (checksum
 * checked, UDP header removed; ip_current_*() describe it). dpsock delivers
 * what lwIP would not (stack/mcast/mcast.c):
 *  - a multicast or broadcast datagram: to EVERY matching socket, each
 *    after its own filter (memberships, source filters, IP_MULTICAST_ALL)
 *    and the port's (what the interface joined), without a copy;
 *  - a unicast one to a socket of a SO_REUSEPORT group: to one member,
 *    chosen by a hash of the source address and port, as Linux.
 * Returns 1 when it took p (delivered, and freed), 0 to let lwIP deliver it
 * to pcb as usual.
 */
int dpsock_lwip_udp_deliver(struct pbuf *p, struct netif *inp, struct udp_pcb *pcb,
                            u16_t src_port, u8_t broadcast);

/* ip6_input, for an IPv6 multicast destination other than all-nodes: has
 * the port behind inp joined the group (stack/mcast/mcast.c)? 1 takes the packet
 * in, 0 drops it (not for this host). */
struct ip6_addr;
int dpsock_lwip_ip6_mcast_joined(struct netif *inp, const struct ip6_addr *group);

/* The 802.1Q tag (priority << 13 | VLAN id) of what netif sends, or -1 to
 * send untagged (stack/frame/netif.c). */
s32_t dpsock_lwip_vlan_set(struct netif *netif);

/* Static routes (stack/frame/netif.c): the netif of the longest configured
 * prefix holding dest (ip4_route asks once no connected subnet holds it),
 * or NULL for lwIP's default netif; the next hop on netif for an off-link
 * dest: that route's gateway when the route leaves through netif, else
 * NULL (the netif's own gateway). */
struct netif *dpsock_lwip_route(const ip4_addr_t *dest);
const ip4_addr_t *dpsock_lwip_route_gw(struct netif *netif, const ip4_addr_t *dest);
/* IPv6's (stack/frame/netif.c): the netif of the port whose address prefix or
 * route (the net view) holds dest, or NULL (lwIP's own rules then). */
struct netif *dpsock_lwip_route6(const ip6_addr_t *src, const ip6_addr_t *dest);
/* The next hop to dest from netif by the net view (dest itself within an
 * address's prefix, a route's gateway), or NULL (lwIP's routers then). */
const ip6_addr_t *dpsock_lwip_nd6_gw(struct netif *netif, const ip6_addr_t *dest);

#endif /* DPSOCK_LWIP_HOOKS_H */
