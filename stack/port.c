/* SPDX-License-Identifier: BSD-3-Clause */
/* Port lookup, capability probe and queue set-up. See port_priv.h. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_flow.h>

#include "log_priv.h"
#include "port_priv.h"

int
dpsock_port_lookup(const char *name, uint16_t *port_id, char *err, size_t errlen)
{
	char known[512] = "";
	size_t off = 0;
	uint16_t pid;

	if (rte_eth_dev_get_port_by_name(name, port_id) == 0)
		return 0;
	RTE_ETH_FOREACH_DEV(pid) {
		char n[RTE_ETH_NAME_MAX_LEN];

		if (rte_eth_dev_get_name_by_port(pid, n) != 0)
			continue;
		off += snprintf(known + off, off < sizeof(known) ? sizeof(known) - off : 0,
				"%s%s", off ? ", " : "", n);
	}
	snprintf(err, errlen, "no DPDK port called '%s'; ports that exist: %s%s", name,
		 off ? known : "none",
		 off ? "" : " (add one with --vdev=net_af_packet0,iface=IF or -a PCI_ADDR; "
			    "bind a NIC with dpdk-devbind.py)");
	return -ENODEV;
}

/* Ask the PMD whether it would accept a 5-tuple rule steering one TCP flow to
 * queue 0: the shape of rule the active-open steering backend installs. */
static bool
probe_flow_5tuple(uint16_t port_id)
{
	struct rte_flow_attr attr = { .ingress = 1 };
	struct rte_flow_item_ipv4 ip_spec = { .hdr = {
		.src_addr = RTE_BE32(0xc6120002), .dst_addr = RTE_BE32(0xc6120001) } };
	struct rte_flow_item_ipv4 ip_mask = { .hdr = {
		.src_addr = RTE_BE32(0xffffffff), .dst_addr = RTE_BE32(0xffffffff) } };
	struct rte_flow_item_tcp tcp_spec = { .hdr = {
		.src_port = RTE_BE16(80), .dst_port = RTE_BE16(40000) } };
	struct rte_flow_item_tcp tcp_mask = { .hdr = {
		.src_port = RTE_BE16(0xffff), .dst_port = RTE_BE16(0xffff) } };
	struct rte_flow_item pattern[] = {
		{ .type = RTE_FLOW_ITEM_TYPE_ETH },
		{ .type = RTE_FLOW_ITEM_TYPE_IPV4, .spec = &ip_spec, .mask = &ip_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_TCP, .spec = &tcp_spec, .mask = &tcp_mask },
		{ .type = RTE_FLOW_ITEM_TYPE_END },
	};
	struct rte_flow_action_queue queue = { .index = 0 };
	struct rte_flow_action actions[] = {
		{ .type = RTE_FLOW_ACTION_TYPE_QUEUE, .conf = &queue },
		{ .type = RTE_FLOW_ACTION_TYPE_END },
	};
	struct rte_flow_error ferr;

	memset(&ferr, 0, sizeof(ferr));
	if (rte_flow_validate(port_id, &attr, pattern, actions, &ferr) == 0)
		return true;
	DPSOCK_LOG(INFO, pmd, "port %u: rte_flow 5-tuple rules unavailable: %s",
		   port_id, ferr.message ? ferr.message : rte_strerror(rte_errno));
	return false;
}

/* af_packet copies each frame from its ring slot (framesz, 2048 by
 * default) into one mbuf, and refuses to start when a slot does not fit
 * one: the mbufs must be sized for the slot. Read from its devargs. */
static uint32_t
af_packet_frame_size(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = info->device != NULL ? rte_dev_devargs(info->device) : NULL;
	const char *a = da != NULL ? da->args : NULL, *f;
	uint32_t v = 2048;

	for (f = a; f != NULL && (f = strstr(f, "framesz=")) != NULL; f++)
		if (f == a || f[-1] == ',')
			v = (uint32_t)strtoul(f + 8, NULL, 0);
	return v;
}

int
dpsock_port_probe(struct dpsock_port *p, char *err, size_t errlen)
{
	struct dpsock_port_caps *c = &p->caps;
	struct rte_eth_dev_info info;
	int ret;

	ret = rte_eth_dev_info_get(p->port_id, &info);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_info_get(port %u): %s", p->port_id,
			 rte_strerror(-ret));
		return ret;
	}
	rte_eth_dev_get_name_by_port(p->port_id, p->name);
	memset(c, 0, sizeof(*c));
	snprintf(c->driver, sizeof(c->driver), "%s", info.driver_name);
	c->max_rx_queues = info.max_rx_queues;
	c->max_tx_queues = info.max_tx_queues;
	c->min_mtu = info.min_mtu;
	c->max_mtu = info.max_mtu;
	c->rx_offload_capa = info.rx_offload_capa;
	c->tx_offload_capa = info.tx_offload_capa;
	c->rss_hf = info.flow_type_rss_offloads;
	c->rss_key_size = info.hash_key_size;
	c->reta_size = info.reta_size;
	c->rss = info.flow_type_rss_offloads != 0 && info.max_rx_queues > 1;
	c->rx_ip_cksum = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	c->rx_l4_cksum = (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) &&
			 (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM);
	c->tx_ip_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	c->tx_tcp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
	c->tx_udp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	c->tx_multi_segs = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* TSO is used only with what it implies: the port computes the TCP
	 * checksums of the segments and takes a frame as an mbuf chain */
	c->tso = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_TCP_TSO) && c->tx_tcp_cksum &&
		 c->tx_multi_segs;
	c->tx_seg_max = info.tx_desc_lim.nb_seg_max ? info.tx_desc_lim.nb_seg_max : UINT16_MAX;
	c->rx_timestamp = info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	c->if_index = info.if_index;
	/* per-PMD quirks */
	c->fixed_rx_queues = strcmp(info.driver_name, "net_af_packet") == 0;
	c->tso_l2_in_mtu = strcmp(info.driver_name, "net_tap") == 0;
	if (c->fixed_rx_queues)
		c->rx_frame_size = af_packet_frame_size(&info);
	return 0;
}

int
dpsock_port_start(struct dpsock_port *p, uint16_t n_queues, uint16_t mtu,
		  uint16_t rx_desc, uint16_t tx_desc, struct rte_mempool *pool,
		  char *err, size_t errlen)
{
	const struct dpsock_port_caps *c = &p->caps;
	struct rte_eth_conf conf;
	struct rte_eth_rss_conf rss_conf;
	uint16_t q, nb_rxd = rx_desc, nb_txd = tx_desc;
	int socket = rte_eth_dev_socket_id(p->port_id);
	int ret;

	if (n_queues > c->max_rx_queues || n_queues > c->max_tx_queues) {
		snprintf(err, errlen, "port %s has %u RX / %u TX queues; %u workers need one pair each",
			 p->name, c->max_rx_queues, c->max_tx_queues, n_queues);
		return -EINVAL;
	}
	if (c->fixed_rx_queues && n_queues != c->max_rx_queues) {
		snprintf(err, errlen, "port %s (%s) spreads packets over all of its %u queues; "
			 "%u worker(s) would leave some unread: make them equal "
			 "(e.g. qpairs=%u in --vdev, or %u workers)",
			 p->name, c->driver, c->max_rx_queues, n_queues, n_queues, c->max_rx_queues);
		return -EINVAL;
	}
	if ((c->min_mtu && mtu < c->min_mtu) || (c->max_mtu && mtu > c->max_mtu)) {
		snprintf(err, errlen, "port %s: MTU %u outside the port's range %u..%u",
			 p->name, mtu, c->min_mtu, c->max_mtu);
		return -EINVAL;
	}
	if (socket < 0)
		socket = 0;

	memset(&conf, 0, sizeof(conf));
	p->rx_offloads = 0;
	p->tx_offloads = 0;
	if (c->rx_ip_cksum)
		p->rx_offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
	if (c->rx_l4_cksum)
		p->rx_offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
	if (c->tx_ip_cksum)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
	if (c->tx_tcp_cksum)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_CKSUM;
	if (c->tx_udp_cksum)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
	if (c->tx_multi_segs)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (c->tso)
		p->tx_offloads |= RTE_ETH_TX_OFFLOAD_TCP_TSO;
	if (c->rx_timestamp)
		p->rx_offloads |= RTE_ETH_RX_OFFLOAD_TIMESTAMP;
	conf.rxmode.offloads = p->rx_offloads;
	conf.txmode.offloads = p->tx_offloads;
	p->rss_hf = 0;
	if (c->rss && n_queues > 1) {
		p->rss_hf = c->rss_hf & (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
		if (p->rss_hf) {
			conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
			conf.rx_adv_conf.rss_conf.rss_hf = p->rss_hf;
		}
	}

	ret = rte_eth_dev_configure(p->port_id, n_queues, n_queues, &conf);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_configure(%s, %u queues): %s", p->name,
			 n_queues, rte_strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(p->port_id, &nb_rxd, &nb_txd);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_adjust_nb_rx_tx_desc(%s): %s", p->name,
			 rte_strerror(-ret));
		return ret;
	}
	for (q = 0; q < n_queues; q++) {
		struct rte_eth_dev_info info;
		struct rte_eth_rxconf rxc;
		struct rte_eth_txconf txc;

		rte_eth_dev_info_get(p->port_id, &info);
		rxc = info.default_rxconf;
		rxc.offloads = p->rx_offloads;
		txc = info.default_txconf;
		txc.offloads = p->tx_offloads;
		ret = rte_eth_rx_queue_setup(p->port_id, q, nb_rxd, socket, &rxc, pool);
		if (ret != 0) {
			snprintf(err, errlen, "rte_eth_rx_queue_setup(%s, queue %u): %s", p->name, q,
				 rte_strerror(-ret));
			return ret;
		}
		ret = rte_eth_tx_queue_setup(p->port_id, q, nb_txd, socket, &txc);
		if (ret != 0) {
			snprintf(err, errlen, "rte_eth_tx_queue_setup(%s, queue %u): %s", p->name, q,
				 rte_strerror(-ret));
			return ret;
		}
	}
	ret = rte_eth_dev_set_mtu(p->port_id, mtu);
	if (ret != 0 && ret != -ENOTSUP) {
		snprintf(err, errlen, "rte_eth_dev_set_mtu(%s, %u): %s", p->name, mtu,
			 rte_strerror(-ret));
		return ret;
	}
	ret = rte_eth_dev_start(p->port_id);
	if (ret != 0) {
		snprintf(err, errlen, "rte_eth_dev_start(%s): %s", p->name, rte_strerror(-ret));
		return ret;
	}
	p->started = true;
	p->n_queues = n_queues;
	p->pool = pool;
	if (rte_eth_dev_get_mtu(p->port_id, &p->mtu) != 0 || p->mtu == 0)
		p->mtu = mtu;
	if (p->mtu < mtu)
		DPSOCK_LOG(WARNING, pmd, "port %s: MTU is %u, below the configured %u (the PMD cannot change it)",
			   p->name, p->mtu, mtu);
	p->mtu = RTE_MIN(p->mtu, mtu);
	rte_eth_macaddr_get(p->port_id, &p->mac);

	/* The key and table actually in use: active-open steering computes
	 * Toeplitz hashes with them. */
	memset(&rss_conf, 0, sizeof(rss_conf));
	if (p->rss_hf && c->rss_key_size && c->rss_key_size <= DPSOCK_RSS_KEY_MAX) {
		rss_conf.rss_key = p->rss_key;
		rss_conf.rss_key_len = c->rss_key_size;
		if (rte_eth_dev_rss_hash_conf_get(p->port_id, &rss_conf) != 0)
			memset(p->rss_key, 0, sizeof(p->rss_key));
	}
	if (p->rss_hf && c->reta_size && c->reta_size <= DPSOCK_RETA_MAX) {
		struct rte_eth_rss_reta_entry64 reta[DPSOCK_RETA_MAX / RTE_ETH_RETA_GROUP_SIZE];
		unsigned int i;

		memset(reta, 0, sizeof(reta));
		for (i = 0; i < c->reta_size / RTE_ETH_RETA_GROUP_SIZE; i++)
			reta[i].mask = UINT64_MAX;
		if (rte_eth_dev_rss_reta_query(p->port_id, reta, c->reta_size) == 0)
			for (i = 0; i < c->reta_size; i++)
				p->reta[i] = reta[i / RTE_ETH_RETA_GROUP_SIZE]
						     .reta[i % RTE_ETH_RETA_GROUP_SIZE];
	}
	p->caps.flow_5tuple = probe_flow_5tuple(p->port_id);
	return 0;
}

void
dpsock_port_stop(struct dpsock_port *p)
{
	if (!p->started)
		return;
	rte_eth_dev_stop(p->port_id);
	rte_eth_dev_close(p->port_id);
	p->started = false;
}

void
dpsock_port_caps_describe(const struct dpsock_port *p, char *buf, size_t len)
{
	const struct dpsock_port_caps *c = &p->caps;

	snprintf(buf, len,
		 "driver %s, queues rx %u tx %u, mtu %u..%u, rss %s (key %u B, reta %u), "
		 "rte_flow 5-tuple %s, rx cksum ip %s l4 %s, tx cksum ip %s tcp %s udp %s, "
		 "multi-seg %s, tso %s",
		 c->driver, c->max_rx_queues, c->max_tx_queues, c->min_mtu, c->max_mtu,
		 c->rss ? "yes" : "no", c->rss_key_size, c->reta_size,
		 c->flow_5tuple ? "yes" : "no", c->rx_ip_cksum ? "yes" : "no",
		 c->rx_l4_cksum ? "yes" : "no", c->tx_ip_cksum ? "yes" : "no",
		 c->tx_tcp_cksum ? "yes" : "no", c->tx_udp_cksum ? "yes" : "no",
		 c->tx_multi_segs ? "yes" : "no", c->tso ? "yes" : "no");
}
