/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stats segment: counters dpsockd publishes in shared memory
 * (/dev/shm/dpsock.<name>.stats) for dpsock-stat and tests.
 *
 * Every counter is named once, in the X-macro lists below; the struct
 * layouts, the printer and the JSON writer are generated from them.
 * Each block of counters has exactly one writer (the port's main lcore, or
 * the owning worker), which stores with relaxed atomics; readers load with
 * relaxed atomics and never take a lock, so a reader cannot stall the data
 * path. This header is plain C (no DPDK) so the reader tool stays small.
 */
#ifndef DPSOCK_STATS_PRIV_H
#define DPSOCK_STATS_PRIV_H

#include <stdint.h>

#define DPSOCK_STATS_MAGIC 0x64707374617473ULL /* "dpstats" */
#define DPSOCK_STATS_VERSION 1
#define DPSOCK_STATS_MAX_PORTS 4
#define DPSOCK_STATS_MAX_WORKERS 64

/* Per port, written by the main lcore from rte_eth_stats (refreshed ~10/s). */
#define DPSOCK_PORT_COUNTERS(X)                                                \
	X(link_up, "1 while the port's link is up")                            \
	X(link_speed_mbps, "link speed in Mbit/s (0 unknown)")                 \
	X(rx_packets, "packets received by the port")                          \
	X(rx_bytes, "bytes received by the port")                              \
	X(tx_packets, "packets sent by the port")                              \
	X(tx_bytes, "bytes sent by the port")                                  \
	X(rx_missed, "packets dropped by the NIC: no room in an RX queue")     \
	X(rx_errors, "erroneous packets received")                             \
	X(tx_errors, "packets the port failed to send")                        \
	X(rx_nombuf, "RX mbuf allocation failures")                            \
	X(mbufs_free, "mbufs available in the port's pool")                    \
	X(mbufs_total, "size of the port's pool")

/* Per worker, written by that worker only. */
#define DPSOCK_WORKER_COUNTERS(X)                                              \
	X(loops, "loop iterations")                                            \
	X(busy_loops, "iterations that found work")                            \
	X(sleeps, "times the worker slept for lack of work")                   \
	X(sleep_us, "microseconds spent asleep")                               \
	X(wakeups, "wake-ups received on the worker's eventfd")                \
	X(rx_bursts, "non-empty RX bursts")                                    \
	X(rx_packets, "packets taken from the worker's RX queues")             \
	X(rx_bytes, "bytes taken from the worker's RX queues")                 \
	X(tx_packets, "packets the worker's TX queues took")              \
	X(tx_bytes, "bytes the worker's TX queues took")                  \
	X(tx_drops, "packets the TX queue refused (queue full)")               \
	X(tx_zerocopy, "frames lent to the NIC from lwIP's memory (no copy)") \
	X(tx_nombuf, "packets not sent: no mbuf")                              \
	X(arp_in, "ARP frames received on the worker's own queues")            \
	X(arp_shared_out, "ARP frames copied to the other workers")            \
	X(arp_shared_in, "ARP frames received from other workers")             \
	X(steer_full, "mbufs dropped: another worker's steering ring was full")\
	X(ip_in, "IPv4 packets handed to lwIP")                                \
	X(icmp_echo, "ICMP echo requests for our addresses")                  \
	X(lwip_icmp_xmit, "ICMP messages lwIP sent (echo replies...)")        \
	X(rx_nomem, "frames dropped: no memory to linearise a chained frame") \
	X(rx_drop_runt, "dropped: shorter than an Ethernet header")           \
	X(rx_drop_ethertype, "dropped: ethertype not IPv4 or ARP")            \
	X(rx_drop_arp, "dropped: malformed ARP")                              \
	X(rx_drop_ip_hdr, "dropped: bad IPv4 version or header length")       \
	X(rx_drop_ip_len, "dropped: IPv4 total length does not fit the frame") \
	X(rx_drop_ip_cksum, "dropped: bad IPv4 header checksum")              \
	X(rx_drop_l4_cksum, "dropped: NIC flagged a bad L4 checksum")         \
	X(rx_drop_udp_len, "dropped: UDP length field does not fit the datagram") \
	X(rx_drop_tcp_flags, "dropped: TCP SYN together with FIN or RST")     \
	X(lwip_ip_drop, "dropped by lwIP's IP layer (not for us, options...)") \
	X(lwip_icmp_drop, "dropped by lwIP's ICMP (incl. bad checksum)")      \
	X(lwip_icmp_chkerr, "ICMP messages with a bad checksum")              \
	X(lwip_udp_drop, "dropped by lwIP's UDP (incl. bad checksum, no pcb)") \
	X(lwip_udp_chkerr, "UDP datagrams with a bad checksum")               \
	X(lwip_tcp_drop, "dropped by lwIP's TCP (incl. bad checksum)")        \
	X(lwip_tcp_chkerr, "TCP segments with a bad checksum")                \
	X(lwip_etharp_drop, "dropped by lwIP's ARP")                          \
	X(lwip_mem_bytes, "bytes lwIP holds in the worker's allocator")       \
	X(lwip_mem_objs, "objects lwIP holds in the worker's allocator")      \
	X(timer_runs, "lwIP timer checks that ran timers")                     \
	X(steer_out, "frames handed to the worker that owns their flow")      \
	X(steer_in, "frames received from other workers (not ARP)")            \
	X(tcp_accepted, "TCP connections accepted")                           \
	X(tcp_connected, "active opens that connected")                        \
	X(tcp_connect_failed, "active opens that failed")                      \
	X(tcp_refused, "SYNs refused with RST (connection or memory limit)")   \
	X(tcp_reset, "connections ended by RST or timeout")                    \
	X(tcp_closed, "connections closed by the application")                 \
	X(tcp_conns, "TCP connections open now")                               \
	X(tcp_rx_bytes, "TCP payload bytes received")                          \
	X(tcp_tx_bytes, "TCP payload bytes accepted for sending")              \
	X(udp_rx, "UDP datagrams delivered")                                   \
	X(udp_tx, "UDP datagrams sent")                                        \
	X(port_claim_failed, "active opens with no local port left")           \
	X(lwip_tcp_memerr, "lwIP TCP allocation failures")                     \
	X(lwip_ipfrag_drop, "IP fragments dropped (reassembly limits, timeouts)")

#define DPSOCK_STATS_FIELD(name, help) uint64_t name;

struct dpsock_port_stats {
	DPSOCK_PORT_COUNTERS(DPSOCK_STATS_FIELD)
} __attribute__((aligned(64)));

struct dpsock_worker_stats {
	DPSOCK_WORKER_COUNTERS(DPSOCK_STATS_FIELD)
	uint32_t lcore_id;
	uint32_t busy_permille; /* share of the last second spent on work */
} __attribute__((aligned(64)));

struct dpsock_stats_segment {
	uint64_t magic;
	uint32_t version;
	uint32_t size;          /* bytes of this struct, for the reader's check */
	int32_t pid;            /* dpsockd's pid */
	uint32_t n_ports;
	uint32_t n_workers;
	uint32_t running;       /* 1 while the daemon runs; 0 once it stopped */
	uint64_t start_time_ns; /* CLOCK_REALTIME at start */
	char name[32];
	char port_names[DPSOCK_STATS_MAX_PORTS][64];
	struct dpsock_port_stats ports[DPSOCK_STATS_MAX_PORTS];
	struct dpsock_worker_stats workers[DPSOCK_STATS_MAX_WORKERS];
};

/* Single-writer update; readers use dpsock_stat_read. */
static inline void
dpsock_stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, *c + v, __ATOMIC_RELAXED);
}

static inline void
dpsock_stat_set(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, v, __ATOMIC_RELAXED);
}

static inline uint64_t
dpsock_stat_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/* shm_open name of an instance's segment: "/dpsock.<name>.stats". */
#define DPSOCK_STATS_SHM_FMT "/dpsock.%s.stats"

#endif /* DPSOCK_STATS_PRIV_H */
