/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame_priv.h — what the frame path offers the other concerns and the
 * worker loop: the netif over mbufs (netif.c, netif_adopt.c), receive
 * coalescing (gro.c), steering (steer.c), the ports released for a
 * takeover (port_release.c). The ports themselves: port_priv.h.
 */
#ifndef DPSOCK_FRAME_PRIV_H
#define DPSOCK_FRAME_PRIV_H

#include "core/stack_priv.h"

/* Send what lwIP queued for every port (netif.c). */
void dpsock_worker_flush(struct dpsock_worker *w);

/* takeover: the ports' AF_XDP sockets closed for the new process, and
 * started again when it failed; a worker picks up the new port handles
 * (port_release.c). */
void dpsock_ports_release(struct dpsock_stack *d);
int dpsock_ports_restart(struct dpsock_stack *d);
void dpsock_worker_ports_rebind(struct dpsock_worker *w);

/* Hand a received frame to another worker through its steering ring (the
 * flow's owner); counted, and dropped when that ring is full (steer.c). */
void dpsock_worker_steer(struct dpsock_worker *w, struct dpsock_worker *owner,
			 struct rte_mbuf *m);

/* The private area of every received mbuf: lwIP's view of the frame, and
 * how many workers handed it on already (dpsock_lwip_tcp_unmatched). */
struct dpsock_mbuf_priv {
	struct pbuf_custom pc;
	uint8_t hops;           /* set to 0 when the frame comes from a port */
};

/* steer.c */

/* Choose the steering backend (config tcp.steering, probed capabilities)
 * and allocate the shared port table. Returns 0 or -errno (message printed). */
int dpsock_steer_setup(struct dpsock_stack *d);
void dpsock_steer_teardown(struct dpsock_stack *d);

/* The Toeplitz hash a NIC computes for an IPv4 TCP/UDP packet with this
 * 4-tuple (all network order) under an RSS key (40 bytes or more). */
uint32_t dpsock_rss_hash_ipv4_l4(const uint8_t *key, uint32_t saddr, uint32_t daddr,
				 uint16_t sport, uint16_t dport);
/* ... and for an IPv6 one (addresses 16 bytes, ports network order). */
uint32_t dpsock_rss_hash_ipv6_l4(const uint8_t *key, const uint8_t *saddr, const uint8_t *daddr,
				 uint16_t sport, uint16_t dport);

/* Claim a free ephemeral port for worker w with no peer in view (the
 * software redirect of every backend steers it). Returns the port (host
 * order) or 0; release it with the backend's release_port. */
uint16_t dpsock_steer_claim_any(struct dpsock_worker *w);
/* Take exactly port p for worker w (a connection a takeover restores):
 * false when another worker owns it. */
bool dpsock_steer_claim_exact(struct dpsock_worker *w, uint16_t p);

/* Where does a received IPv4 or IPv6 frame belong? Returns the worker index that
 * must process it, or -1 for "here". Looks at fragments (one owner per
 * datagram, so that reassembly sees every piece) and at TCP/UDP segments
 * for a local port another worker opened. */
int dpsock_steer_owner(const struct dpsock_worker *w, const struct rte_mbuf *m);

/* netif over mbufs (netif.c) */

/* netif_add init callback; netif->state is the struct dpsock_worker_port. */
err_t dpsock_netif_init(struct netif *netif);
/* An owned port's IPv6 (address6): the link-local address from the MAC
 * and addr6, both usable at once (no DAD, lwipopts.h). */
void dpsock_netif_ip6_setup(struct dpsock_worker_port *wp, const uint8_t addr6[16]);

/* Hand one received frame to lwIP without copying (the mbuf becomes a
 * PBUF_REF custom pbuf freed back to its pool by lwIP). Consumes m. */
void dpsock_netif_input(struct dpsock_worker_port *wp, struct rte_mbuf *m);

/* After netif_add: the port's segmentation (tcp.segmentation and the
 * port's TSO) and the checksums lwIP leaves to the netif. */
void dpsock_netif_offload_setup(struct dpsock_worker_port *wp);

/* gro.c: take a validated IPv4 or IPv6 frame bound for lwIP on this worker: held
 * to merge with the next segments of its flow, or handed to lwIP now
 * (consumes m). */
void dpsock_gro_input(struct dpsock_worker_port *wp, struct rte_mbuf *m);

/* Hand every held segment to lwIP (end of a burst). */
void dpsock_gro_flush(struct dpsock_worker *w);

/* A shared port's netifs send through this (netif->output): the next hop's
 * MAC from the net view, or the frame waits while the kernel resolves it. */
err_t dpsock_netif_output_shared(struct netif *netif, struct pbuf *p, const ip4_addr_t *ipaddr);
/* IPv6's (netif->output_ip6): the next hop from the view's IPv6 prefixes
 * and routes, its MAC from the kernel's neighbours. */
err_t dpsock_netif_output6_shared(struct netif *netif, struct pbuf *p, const ip6_addr_t *ipaddr);
/* Frames waiting for a neighbour: send what the view now resolves, ask
 * again or drop what waited too long. On the worker. */
void dpsock_netif_neigh_retry(struct dpsock_worker *w);
/* dpsock_netif_offload_setup for one more netif of the port (an address
 * of a shared port's netdev). */
void dpsock_netif_offload_setup_nif(struct dpsock_worker_port *wp, struct netif *nif);

/* On worker w: its netifs take the published net view if it moved
 * (worker.c calls this when d->nv_gen != w->nv_gen; netif_adopt.c). */
void dpsock_netif_adopt_view(struct dpsock_worker *w);

/* Send the worker's TX batch for one port; counts what the queue refused. */
void dpsock_netif_flush(struct dpsock_worker_port *wp);

/* Queue a frame the stack built itself, not through lwIP (IGMP): it gets
 * the interface's 802.1Q tag here (lwIP tags its own). Consumes m. */
void dpsock_netif_send_raw(struct dpsock_worker_port *wp, struct rte_mbuf *m);

/* Give lwIP back the frames the NIC returned on other threads. Returns
 * how many. */
unsigned int dpsock_netif_reclaim(struct dpsock_worker *w);

/* Memory source of the lwIP allocator: DPDK memory the NIC can read. */
void *dpsock_netif_mem_get(size_t size);
void dpsock_netif_mem_put(void *p);

/* Bytes of mbuf private area holding the pbuf_custom. */
unsigned int dpsock_netif_mbuf_priv_size(void);

/* A received frame dropped: counted in *counter, named in its capture
 * record when it is being captured, freed. */
void dpsock_frame_drop(struct rte_mbuf *m, uint64_t *counter);

/* The mbuf a received pbuf wraps (zero-copy receive), or NULL. */
struct rte_mbuf *dpsock_netif_pbuf_mbuf(struct pbuf *p);
/* The NIC's RX timestamp of the frame behind p (0: none). */
uint64_t dpsock_netif_hw_ns(const struct dpsock_worker *w, struct pbuf *p);

#endif /* DPSOCK_FRAME_PRIV_H */
