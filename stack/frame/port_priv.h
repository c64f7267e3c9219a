/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports: find a DPDK port by name, probe what it can do, and set it up with
 * one RX/TX queue pair per worker. Capabilities are probed, never assumed;
 * the rest of dpsock reads them from struct dpsock_port_caps.
 *
 * A port's queues usually are the DPDK port's own. An AF_XDP interface may
 * also come as several net_af_xdp vdevs, one per interface queue (a veth,
 * whose queues DPDK 22.11's PMD cannot count): the named vdev's siblings on
 * the same interface join it, and queue k of the port is then queue 0 of
 * the k-th vdev (struct dpsock_port_queue). Workers read and write through
 * that table, never through port_id directly.
 *
 * Errors: 0 or -errno; a human-readable reason in the caller's buffer.
 */
#ifndef DPSOCK_PORT_PRIV_H
#define DPSOCK_PORT_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <net/if.h>

#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_flow.h>
#include <rte_mempool.h>

#include "mcast_filter.h"

#define DPSOCK_RSS_KEY_MAX 64
#define DPSOCK_RETA_MAX 512
#define DPSOCK_PORT_QUEUES_MAX 64  /* = DPSOCK_MAX_WORKERS (checked in port.c) */
#define DPSOCK_PORT_MEMBERS_MAX 16 /* DPDK ports one port's queues may come from */

struct dpsock_port_caps {
	char driver[32];
	uint16_t max_rx_queues;
	uint16_t max_tx_queues;
	uint16_t min_mtu;
	uint16_t max_mtu;
	uint64_t rx_offload_capa;
	uint64_t tx_offload_capa;
	uint64_t rss_hf;          /* hash functions the port offers */
	uint8_t rss_key_size;     /* 0: the port does not expose its key */
	uint16_t reta_size;       /* 0: no redirection table */
	bool rss;                 /* RSS usable (hash functions offered) */
	bool flow_5tuple;         /* rte_flow_validate accepted an IPv4/TCP 5-tuple → queue rule */
	bool rx_ip_cksum;         /* RX IPv4 header checksum verified by the port */
	bool rx_l4_cksum;         /* RX TCP/UDP checksum verified by the port */
	bool tx_ip_cksum;
	bool tx_tcp_cksum;
	bool tx_udp_cksum;
	bool tx_multi_segs;
	bool tso;                 /* TCP segmentation offload (with TCP checksum and multi-segment mbufs) */
	uint16_t tx_seg_max;      /* mbuf segments per packet the PMD takes (tx_desc_lim.nb_seg_max) */
	/* net_tap's TSO counts the Ethernet header against the MTU: the
	 * segments it cuts carry MTU - l2 - l3 - l4 bytes, not MTU - l3 - l4 */
	bool tso_l2_in_mtu;
	bool tso6;               /* its TSO cuts TCP over IPv6 too */
	/* The PMD spreads received packets over every queue it was created
	 * with, whatever rte_eth_dev_configure asks for (af_packet's fanout
	 * over its qpairs sockets): the port must be given exactly that many
	 * queues, or the flows hashed to the others are lost. */
	bool fixed_rx_queues;
	bool rx_timestamp;        /* RX timestamp offload (SO_TIMESTAMPING's hardware stamps) */
	uint32_t if_index;        /* the kernel netdev behind the port (af_packet, tap,
				   * af_xdp, mlx5), 0: none; the preload's interface index */
	uint32_t rx_frame_size;   /* largest frame the PMD hands over whole (af_packet's
				   * framesz), 0: unknown; the mbufs are sized for it */
	/* The PMD transmits mbufs whose data lives outside their own buffer
	 * (external buffers, lent lwIP memory). Not af_xdp: its zero-copy TX
	 * hands the kernel the mbuf's own buffer as a UMEM address. */
	bool tx_extbuf;
	/* The PMD reads its TX completions only when it sends again (af_xdp):
	 * an idle worker sends an empty burst to get the sent mbufs back. */
	bool tx_lazy_completion;
	/* mbufs the PMD keeps per RX queue whatever rx_desc says (af_xdp: its
	 * fill ring, DPDK's default RX ring size); 0 = rx_desc */
	uint16_t rx_pool_hold;
};

/* What the kernel gives an AF_XDP port (net_af_xdp); probed, logged. */
struct dpsock_xdp_info {
	char ifname[IF_NAMESIZE];
	uint32_t ifindex;
	uint32_t if_rx_queues;    /* the interface's RX queues (channels) */
	uint16_t start_queue;     /* interface queue of the port's queue 0 */
	/* after start */
	uint8_t attach_mode;      /* XDP_ATTACHED_DRV (native), _SKB (generic), _HW, _MULTI */
	uint16_t n_sockets;       /* AF_XDP sockets found for the port's queues */
	uint16_t n_zerocopy;      /* of those, bound in zero-copy mode */
	uint16_t n_busy_poll;     /* of those, with preferred busy polling */
	int busy_poll_us;         /* their SO_BUSY_POLL */
	char prog_name[16];       /* the XDP program attached (xdp_dispatcher: libxdp's) */
};

/* Where queue k of a port lives: a DPDK port and a queue on it. */
struct dpsock_port_queue {
	uint16_t port_id;
	uint16_t queue_id;
	int xsk_fd;               /* af_xdp: the queue's socket (for the probe), else -1 */
	uint16_t if_queue;        /* af_xdp: the interface queue the socket is bound to */
};

struct dpsock_port {
	uint16_t port_id;
	uint16_t n_queues;
	uint16_t mtu;
	uint16_t n_started;       /* queues [0, n_started) have their DPDK port started */
	bool started;
	char name[64];
	struct rte_ether_addr mac;
	struct dpsock_port_caps caps;
	uint64_t rx_offloads;     /* offloads turned on at configure */
	uint64_t tx_offloads;
	uint64_t rss_hf;          /* hash functions turned on */
	uint8_t rss_key[DPSOCK_RSS_KEY_MAX];
	uint16_t reta[DPSOCK_RETA_MAX];
	struct rte_mempool *pool;
	/* 802.1Q tag of the interface's frames (priority << 13 | VLAN id), 0
	 * untagged: lwIP tags what it sends (dpsock_lwip_vlan_set), the worker
	 * takes only frames of this VLAN and strips the tag (worker.c) */
	uint16_t vlan_tci;

	/* The DPDK ports the queues come from: port_id alone, or AF_XDP
	 * vdevs sharing one interface, port_id among them, ordered by their
	 * first interface queue (see the top). */
	uint16_t n_members;
	uint16_t members[DPSOCK_PORT_MEMBERS_MAX];
	struct dpsock_port_queue queues[DPSOCK_PORT_QUEUES_MAX];
	/* mbufs the PMD took from the pool when its queues were set up and
	 * keeps for itself (af_xdp: its fill rings); see dpsock_port_stop */
	uint32_t pmd_rx_held;
	bool is_xdp;              /* net_af_xdp: xdp below is valid */
	bool shared;              /* shared with the kernel netdev (no address configured):
				   * stack/netview/netview.c, stack/sharing/filter.c */
	struct dpsock_xdp_info xdp;
};

/* A 5-tuple rule's pattern for a TCP flow from raddr:rport to laddr:lport
 * (network order), as the active-open steering installs them: ETH, the
 * port's VLAN when it has one, IPV4, TCP, END. The items point into f. */
struct dpsock_flow_tcp {
	struct rte_flow_item_vlan vlan_spec, vlan_mask;
	struct rte_flow_item_ipv4 ip_spec, ip_mask;
	struct rte_flow_item_ipv6 ip6_spec, ip6_mask;
	struct rte_flow_item_tcp tcp_spec, tcp_mask;
	struct rte_flow_item pattern[5];
};
/* raddr, laddr: 16 bytes (IPv4's mapped: an IPV4 item, else IPV6). */
void dpsock_flow_tcp_pattern(struct dpsock_flow_tcp *f, const struct dpsock_port *p,
			     const struct dpsock_mc_addr *raddr, const struct dpsock_mc_addr *laddr,
			     uint16_t rport, uint16_t lport);

/*
 * Find the port called name (PCI address "0000:03:00.0" or vdev name
 * "net_af_packet0"). Returns 0 and sets *port_id, or -ENODEV with the list
 * of existing ports in err.
 */
int dpsock_port_lookup(const char *name, uint16_t *port_id, char *err, size_t errlen);

/*
 * Read device info and probe offloads and rte_flow support into p->caps;
 * for net_af_xdp, also the kernel's side (bpffs, AF_XDP sockets, the
 * interface's queues) and the sibling vdevs whose queues join the port.
 * p->port_id must be set. Returns 0, or:
 *   -ENOTSUP  net_af_xdp, but the kernel has no AF_XDP sockets or no bpffs
 *             is mounted where libxdp looks (what to run is in err)
 *   -EBUSY    the port is already a queue of another configured port
 *   other     -errno (device info unreadable)
 */
int dpsock_port_probe(struct dpsock_port *p, char *err, size_t errlen);

/*
 * Configure n_queues RX/TX queue pairs (queue k serves worker k), RSS when
 * the port has it, the checksum offloads it offers, the MTU, and start it.
 * Reads back the RSS key and RETA actually in use.
 * Returns 0, or:
 *   -EINVAL  more queues than the port has, MTU out of the port's range
 *   other    -errno from ethdev, with the failing call named in err
 */
int dpsock_port_start(struct dpsock_port *p, uint16_t n_queues, uint16_t mtu,
		      uint16_t rx_desc, uint16_t tx_desc, struct rte_mempool *pool,
		      char *err, size_t errlen);

/* The mbuf pool for an AF_XDP port (net_af_xdp): n mbufs of at least
 * data_room bytes, laid out as the PMD's UMEM registration assumes (one
 * chunk, power-of-two objects back to back; see port.c). NULL with
 * rte_errno set on failure. */
struct rte_mempool *dpsock_port_xdp_pool_create(const char *name, unsigned int n,
						unsigned int cache, uint16_t priv_size,
						uint16_t data_room, int socket);

/* Stop and close the port (idempotent). Frees the mbufs held by its queues;
 * for af_xdp, also those its fill rings kept (DPDK 22.11 does not). */
void dpsock_port_stop(struct dpsock_port *p);
/* A takeover: stop and close at once (dpsock_port_reclaim later, only
 * for a port started again). */
void dpsock_port_release(struct dpsock_port *p);
void dpsock_port_reclaim(struct dpsock_port *p);
/* After every AF_XDP port stopped: close the AF_XDP sockets the PMD left
 * open (their queues stay bound otherwise). Returns how many. */
unsigned int dpsock_port_xsk_leftovers_close(void);
/* Wait (at most timeout_ms) until every AF_XDP queue of p can be bound:
 * the kernel frees a closed socket's hold on its queue in a work item,
 * after close() returned, and a bind meanwhile fails (EBUSY); so does
 * the PMD's queue set-up then, leaving its mbufs in disorder. 0 or -errno
 * (-EBUSY: still held). Other ports: 0. */
int dpsock_port_xdp_wait_free(const struct dpsock_port *p, unsigned int timeout_ms);

/* The port's counters: the sum over its member DPDK ports. Returns 0 or
 * -errno from rte_eth_stats_get. */
int dpsock_port_stats_get(const struct dpsock_port *p, struct rte_eth_stats *es);

/* An af_xdp port's socket counters (XDP_STATISTICS; the kernel's, never
 * reset), summed over its queues; the names are the stats segment's. */
struct dpsock_port_xdp_stats {
	uint64_t xdp_rx_ring_full;
	uint64_t xdp_fill_empty;
	uint64_t xdp_rx_invalid;
	uint64_t xdp_tx_invalid;
	uint64_t xdp_tx_ring_empty;
};

/* Read them (after start). Returns 0, -ENOTSUP for a port that is not
 * af_xdp, or -errno from getsockopt. */
int dpsock_port_xdp_stats_get(const struct dpsock_port *p, struct dpsock_port_xdp_stats *xs);

/* One line describing the capabilities, for the start-up log. */
void dpsock_port_caps_describe(const struct dpsock_port *p, char *buf, size_t len);

/* af_xdp ports: one line on what the kernel gave (queues, copy or zero-copy,
 * native or generic XDP, busy polling); "" for other ports. After start. */
void dpsock_port_xdp_describe(const struct dpsock_port *p, char *buf, size_t len);

#endif /* DPSOCK_PORT_PRIV_H */
