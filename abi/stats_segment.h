/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stats segment: counters an instance of the stack (dpsockd, or a native
 * app) publishes in shared memory (/dev/shm/dpsock.<name>.stats) for
 * dpsock-stat, DPDK telemetry (/dpsock/...) and tests.
 *
 * Every counter is named once, in the X-macro lists below; the struct
 * layouts, the descriptor tables (stats_names.c), dpsock-stat's views and
 * JSON, the telemetry commands and the zeroing code are generated from them.
 * COUNTERS only grow (dpsock-stat -d 2 shows them per second, -z zeroes
 * them); GAUGES are levels (shown as they are, never zeroed).
 *
 * Single writer, lock-free readers. Each block has exactly one writer (a
 * port's block: the main lcore; a worker's block and its socket entries:
 * that worker), which stores with relaxed atomics; readers load with relaxed
 * atomics and never take a lock, so a reader cannot stall the data path. A
 * socket entry is made of many words that must be read together: its writer
 * brackets every change with dpsock_sockstat_write_begin/_end (a seqlock:
 * gen is odd while it writes) and readers copy it with dpsock_sockstat_read,
 * retrying while gen is odd or moved, so they never see a torn entry and
 * never make the writer wait.
 *
 * Layout (version 12; 3 added worker counters, 4 the TCP offload counters,
 * 5 the loss recovery counters (DPSOCK_TCP_REC_COUNTERS) and sockets' RTT
 * in microseconds, 6: a preloaded socket's entry carries its program's pid,
 * descriptor and clients[] index, and its poll_hits/poll_misses are
 * counted; 7: the multicast table, IGMP and multicast counters; 8: an
 * AF_XDP port's socket counters, XDP_STATISTICS summed over its queues;
 * 9: rx_drop_vlan; 10: the ports' info; 11: loop_packets; 12: cut_pairs,
 * cut_bytes and the sockets' flags; 13: IPv6 counters; 14: the multicast
 * table's 16-byte addresses, its MLD rows, the MLD counters):
 *
 *   struct dpsock_stats_segment     header, control area, ports, workers,
 *                                   client table (reserved, see below)
 *   socket table at sock_off        n_workers * sock_slots entries;
 *                                   worker k owns [k * sock_slots, (k+1) * sock_slots)
 *
 * size is the whole segment; readers map the header, check magic, version
 * and hdr_size, then map size bytes.
 *
 * Socket slots: each worker hands out its own slots from a private free
 * list (a stack of indices) when a socket is created, and takes them back
 * when it is freed; in_use says whether an entry is listed. With every slot
 * taken, a new socket is not listed (worker counter sock_unlisted).
 *
 * Clients (processes attached through the LD_PRELOAD library) get one
 * entry each in clients[]: pid, program, group, channels, waiters, the
 * group's sockets and wake-ups; n_clients is the high-water mark of used
 * entries (an entry with pid 0 is free).
 *
 * Control requests (struct dpsock_stats_ctl), written by dpsock-stat, read
 * by the instance every 100 ms:
 *   - zero: the tool increments zero_req; each worker, at its 100 ms tick,
 *     zeroes its own counters (the writer, so nothing races) and its
 *     sockets' counters, then stores zero_req in its zero_ack; the main
 *     lcore keeps a baseline of the ports' hardware counters and acks in
 *     ctl.zero_ack_ports. The tool waits for every ack.
 *   - log level: the tool waits until log_req == log_ack (nothing pending),
 *     writes log_spec ("pmd=debug,all=info"), then stores log_req + 1
 *     (release). The main lcore applies it (rte_log_set_level), writes
 *     log_status / log_msg and stores log_ack = log_req (release). One
 *     request at a time: two tools racing may overwrite each other's spec.
 *
 * This header is plain C (no DPDK) so the reader tool stays small.
 */
#ifndef DPSOCK_ABI_STATS_SEGMENT_H
#define DPSOCK_ABI_STATS_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DPSOCK_STATS_MAGIC 0x64707374617473ULL /* "dpstats" */
#define DPSOCK_STATS_VERSION 16
#define DPSOCK_STATS_MAX_PORTS 4
#define DPSOCK_STATS_MAX_WORKERS 64
#define DPSOCK_STATS_MAX_CLIENTS 64
#define DPSOCK_STATS_MC_GROUPS 64       /* multicast groups listed (all ports) */
#define DPSOCK_STATS_MC_MEMBERS 256     /* socket memberships listed */
#define DPSOCK_STATS_MC_SRCS 16         /* sources listed per group */
#define DPSOCK_STATS_MC_MSRCS 10        /* per membership (mcast_filter.h's maximum) */
#define DPSOCK_STATS_SOCK_SLOTS 4096    /* default socket entries per worker */

/* Per port, written by the main lcore from rte_eth_stats and, for an
 * AF_XDP port, its sockets' XDP_STATISTICS (0 on other ports; DPDK's PMD
 * reports only rx_dropped, in rx_missed) (refreshed ~10/s; -z keeps a
 * baseline: the NIC's and the kernel's own counters are not reset). */
#define DPSOCK_PORT_COUNTERS(X)                                                \
	X(rx_packets, "packets received by the port")                          \
	X(rx_bytes, "bytes received by the port")                              \
	X(tx_packets, "packets sent by the port")                              \
	X(tx_bytes, "bytes sent by the port")                                  \
	X(rx_missed, "packets dropped by the NIC: no room in an RX queue")     \
	X(rx_errors, "erroneous packets received")                             \
	X(tx_errors, "packets the port failed to send")                        \
	X(rx_nombuf, "RX mbuf allocation failures")                            \
	X(xdp_rx_ring_full, "AF_XDP: frames the kernel dropped, the socket's RX ring full") \
	X(xdp_fill_empty, "AF_XDP: frames the kernel dropped, no buffer in the fill ring (also in rx_missed)") \
	X(xdp_rx_invalid, "AF_XDP: received descriptors the kernel found invalid") \
	X(xdp_tx_invalid, "AF_XDP: frames the kernel refused to send (a descriptor outside the UMEM or too long): lost") \
	X(xdp_tx_ring_empty, "AF_XDP: TX wake-ups that found the socket's TX ring empty") \
	X(filter_redirected, "shared port: frames dpsockd's XDP program gave to dpsock (its flows)") \
	X(filter_passed, "shared port: frames it left to the kernel (everything else)") \
	X(filter_frags, "shared port: IP fragments it gave to dpsock (first ones included)") \
	X(filter_no_socket, "shared port: dpsock's frames on a queue dpsockd does not read: dropped (the kernel would reset them)")

#define DPSOCK_PORT_GAUGES(X)                                                  \
	X(link_up, "1 while the port's link is up")                            \
	X(link_speed_mbps, "link speed in Mbit/s (0 unknown)")                 \
	X(mbufs_free, "mbufs available in the port's pool")                    \
	X(mbufs_total, "size of the port's pool")

/* Per worker, written by that worker only. */
#define DPSOCK_WORKER_COUNTERS(X)                                              \
	X(loops, "loop iterations")                                            \
	X(busy_loops, "iterations that found work")                            \
	X(sleeps, "times the worker slept for lack of work")                   \
	X(sleep_us, "microseconds spent asleep")                               \
	X(wakeups, "wake-ups received on the worker's eventfd")                \
	X(wakeups_sent, "eventfd writes this worker made to wake a sleeping one") \
	X(idle_yields, "idle passes that gave the CPU away (worker.yield = always)") \
	X(busy_us, "microseconds spent in iterations that found work")        \
	X(rx_bursts, "non-empty RX bursts")                                    \
	X(rx_burst_1, "RX bursts of 1 packet")                                 \
	X(rx_burst_2_3, "RX bursts of 2-3 packets")                            \
	X(rx_burst_4_7, "RX bursts of 4-7 packets")                            \
	X(rx_burst_8_15, "RX bursts of 8-15 packets")                          \
	X(rx_burst_16_31, "RX bursts of 16-31 packets")                        \
	X(rx_burst_32_63, "RX bursts of 32-63 packets")                        \
	X(rx_burst_64_up, "RX bursts of 64 packets or more")                   \
	X(rx_packets, "packets taken from the worker's RX queues")             \
	X(rx_gro_frames, "TCP segments made of several received ones (tcp.gro)") \
	X(rx_gro_merged, "received TCP segments merged into the one before them") \
	X(rx_bytes, "bytes taken from the worker's RX queues")                 \
	X(tx_packets, "packets the worker's TX queues took")              \
	X(tx_bytes, "bytes the worker's TX queues took")                  \
	X(tx_drops, "packets the TX queue refused (queue full)")               \
	X(tx_zerocopy, "frames lent to the NIC from lwIP's memory (no copy)") \
	X(tx_tso_frames, "TCP super-segments handed to the port to cut (TSO)") \
	X(tx_tso_segs, "MSS-sized segments those TSO frames make on the wire") \
	X(tx_gso_frames, "TCP super-segments cut by DPDK's GSO library") \
	X(tx_gso_segs, "MSS-sized frames GSO made of them")                   \
	X(tcp_tso_joined, "lwIP segments joined into super-segments")         \
	X(tcp_tso_splits, "super-segments split to fit the send window")      \
	X(tcp_unsent_acked, "unsent segments freed or trimmed: the peer had acknowledged them (after a retransmission)") \
	X(tx_nombuf, "packets not sent: no mbuf")                              \
	X(arp_in, "ARP frames received on the worker's own queues")            \
	X(arp_shared_out, "ARP frames copied to the other workers")            \
	X(arp_shared_in, "ARP frames received from other workers")             \
	X(steer_full, "mbufs dropped: another worker's steering ring was full")\
	X(ip_in, "IPv4 packets handed to lwIP")                                \
	X(icmp_echo, "ICMP echo requests for our addresses")                  \
	X(ip6_in, "IPv6 packets handed to lwIP (a port with address6)")       \
	X(icmp6_echo, "ICMPv6 echo requests for our addresses")               \
	X(nd_shared_out, "neighbour discovery messages (NA, RA, redirect) copied to the other workers") \
	X(lwip_icmp_xmit, "ICMP messages lwIP sent (echo replies...)")        \
	X(rx_nomem, "frames dropped: no memory to linearise a chained frame") \
	X(rx_drop_runt, "dropped: shorter than an Ethernet header")           \
	X(rx_drop_ethertype, "dropped: ethertype not IPv4, ARP or (on a port with address6) IPv6") \
	X(rx_drop_vlan, "dropped: another VLAN's frame, or untagged on a VLAN interface") \
	X(rx_drop_arp, "dropped: malformed ARP")                              \
	X(rx_kernel_frames, "shared port: frames of the kernel's seen by dpsock (ARP, ICMP, flows it does not serve): left alone") \
	X(neigh_missing, "shared port: frames that found no neighbour MAC in the kernel's table (the kernel is asked)") \
	X(neigh_dropped, "shared port: frames dropped waiting for a neighbour (3 s, or too many waiting)") \
	X(rx_drop_ip_hdr, "dropped: bad IPv4 version or header length")       \
	X(rx_drop_ip_len, "dropped: IPv4 total length does not fit the frame") \
	X(rx_drop_ip_cksum, "dropped: bad IPv4 header checksum")              \
	X(rx_drop_l4_cksum, "dropped: NIC flagged a bad L4 checksum")         \
	X(rx_drop_udp_len, "dropped: UDP length field does not fit the datagram") \
	X(rx_drop_tcp_flags, "dropped: TCP SYN together with FIN or RST")     \
	X(rx_drop_martian, "dropped: a loopback (127/8) source or destination from the wire") \
	X(rx_drop_ip6_hdr, "dropped: IPv6 frame shorter than its header, or version not 6") \
	X(rx_drop_ip6_len, "dropped: IPv6 payload length does not fit the frame") \
	X(rx_drop_ip6_martian, "dropped: IPv6 multicast or unspecified source, or a loopback or IPv4-mapped address, from the wire") \
	X(lwip_ip_drop, "dropped by lwIP's IP layer (not for us, options...)") \
	X(lwip_icmp_drop, "dropped by lwIP's ICMP (incl. bad checksum)")      \
	X(lwip_icmp_chkerr, "ICMP messages with a bad checksum")              \
	X(lwip_udp_drop, "dropped by lwIP's UDP (incl. bad checksum, no pcb)") \
	X(lwip_udp_chkerr, "UDP datagrams with a bad checksum")               \
	X(lwip_tcp_drop, "dropped by lwIP's TCP (incl. bad checksum)")        \
	X(lwip_tcp_chkerr, "TCP segments with a bad checksum")                \
	X(lwip_etharp_drop, "dropped by lwIP's ARP")                          \
	X(lwip_ip6_drop, "dropped by lwIP's IPv6 layer (not for us, bad extension headers...)") \
	X(lwip_icmp6_drop, "dropped by lwIP's ICMPv6 (incl. bad checksum, unknown type)") \
	X(lwip_nd6_drop, "neighbour discovery messages lwIP dropped (malformed, hop limit not 255...)") \
	X(lwip_ip6frag_drop, "IPv6 fragments lwIP dropped (reassembly timeout, overlap, memory)") \
	X(timer_runs, "lwIP timer checks that ran timers")                     \
	X(steer_out, "frames handed to the worker that owns their flow")      \
	X(steer_in, "frames received from other workers (not ARP)")            \
	X(steer_stray, "TCP segments with no connection here, offered to the next worker") \
	X(tcp_accepted, "TCP connections accepted")                           \
	X(tcp_connected, "active opens that connected")                        \
	X(tcp_connect_failed, "active opens that failed")                      \
	X(tcp_refused, "SYNs refused with RST (connection or memory limit)")   \
	X(tcp_reset, "connections ended by RST or timeout")                    \
	X(tcp_closed, "connections closed by the application")                 \
	X(tcp_rx_bytes, "TCP payload bytes received")                          \
	X(tcp_tx_bytes, "TCP payload bytes accepted for sending")              \
	X(udp_rx, "UDP datagrams delivered")                                   \
	X(udp_tx, "UDP datagrams sent")                                        \
	X(port_claim_failed, "active opens with no local port left")           \
	X(tcp_tw_reused, "TIME_WAIT connections ended early (>= 1 s, timestamps) to reuse their local port") \
	X(tcp_tw_evicted, "TIME_WAIT connections ended early: more than the per-worker maximum") \
	X(lwip_tcp_memerr, "lwIP TCP allocation failures")                     \
	X(lwip_ipfrag_drop, "IP fragments dropped (reassembly limits, timeouts)") \
	X(sock_listed, "sockets given an entry in the socket table")           \
	X(sock_unlisted, "sockets not listed: the worker's socket slots were all taken") \
	X(pl_commands, "preload: commands taken from client rings")             \
	X(pl_rejected, "preload: commands refused (bad op, slot, generation or argument)") \
	X(pl_clients_dropped, "preload: client groups dropped for breaking the protocol") \
	X(pl_wakeups, "preload: eventfd writes that woke a client thread")     \
	X(pl_yields, "preload: CPU yielded to a woken client thread on the worker's CPU") \
	X(pl_replies_lost, "preload: replies dropped, the client's reply ring was full") \
	X(pl_rx_dropped, "preload: UDP datagrams dropped, the socket's rx FIFO was full") \
	X(pl_accept_refused, "preload: connections reset, no slot or the accept FIFO full") \
	X(pl_wait_overflows, "preload: a waiter's wait ring was full: it looks at every socket it watches") \
	X(pl_slots_exhausted, "preload: sockets refused, every slot of the group on this worker in use (preload.slots)") \
	X(pl_fifo_reclaims, "preload: FIFOs whose pages went back after they drained and idled") \
	X(mc_rx, "multicast datagrams for a group the port joined, from an allowed source") \
	X(mc_rx_filtered, "multicast datagrams dropped: group not joined, or source filtered") \
	X(mc_deliveries, "multicast and broadcast datagrams delivered to sockets (one per socket)") \
	X(mc_loop, "multicast datagrams sent and looped back to local subscribers") \
	X(mc_fanout_lost, "deliveries skipped: more matching sockets than one pass takes") \
	X(udp_reuseport_picks, "unicast datagrams hashed over a SO_REUSEPORT group") \
	X(igmp_rx_query_v1, "IGMPv1 queries received (worker 0)")                \
	X(igmp_rx_query_v2, "IGMPv2 queries received (worker 0)")                \
	X(igmp_rx_query_v3, "IGMPv3 queries received (worker 0)")                \
	X(igmp_rx_report, "IGMP reports and leaves of other hosts received")    \
	X(igmp_rx_bad, "IGMP messages dropped: checksum, length or type")       \
	X(igmp_tx_report_v3, "IGMPv3 reports sent (state changes and answers)") \
	X(igmp_tx_report_v2, "IGMPv2 membership reports sent")                  \
	X(igmp_tx_report_v1, "IGMPv1 membership reports sent")                  \
	X(igmp_tx_leave, "IGMPv2 leave messages sent")                          \
	X(igmp_version_changes, "IGMP compatibility mode changes (older querier heard or gone)") \
	X(mld_rx_query_v1, "MLDv1 queries received (worker 0)")                  \
	X(mld_rx_query_v2, "MLDv2 queries received (worker 0)")                  \
	X(mld_rx_report, "MLD reports and dones of other hosts received")       \
	X(mld_rx_bad, "MLD messages dropped: checksum, length, hop limit or source") \
	X(mld_tx_report_v2, "MLDv2 reports sent (state changes and answers)")   \
	X(mld_tx_report_v1, "MLDv1 reports sent")                               \
	X(mld_tx_done, "MLDv1 done messages sent")                              \
	X(mld_version_changes, "MLD compatibility mode changes (MLDv1 querier heard or gone)") \
	X(loop_packets, "IP packets to the stack's own addresses, taken back in (connections within the host)") \
	X(cut_pairs, "TCP connections within the host whose two ends were paired: bytes FIFO to FIFO") \
	X(cut_bytes, "bytes moved from one preloaded socket's tx FIFO into another's rx FIFO (connections within the host)") \
	DPSOCK_TCP_REC_COUNTERS(X)

/* TCP loss recovery work (part of the worker counters): lwIP's sender in
 * lwip/tcp_rec.c counts them per instance, the worker mirrors them. */
#define DPSOCK_TCP_REC_COUNTERS(X)                                             \
	X(tcp_rexmit, "TCP segments retransmitted (every cause)")             \
	X(tcp_rexmit_sack, "retransmissions of holes SACK/RACK (or 3 duplicate ACKs) deemed lost") \
	X(tcp_rexmit_rto, "retransmissions after a retransmission timeout")   \
	X(tcp_rto, "retransmission timeouts of synchronized connections")      \
	X(tcp_rto_repeat, "timeouts of a segment a timeout had resent already (backed-off RTO: a stall of more than one RTO)") \
	X(tcp_recoveries, "fast recoveries entered")                           \
	X(tcp_rack_lost, "segments RACK deemed lost (sent before a delivered one, older than RTT + reordering window)") \
	X(tcp_rack_timeouts, "RACK reordering timers that fired")              \
	X(tcp_tlp_probes, "tail loss probes sent")                             \
	X(tcp_tlp_recoveries, "tail losses a probe repaired (cwnd reduced)")   \
	X(tcp_sack_blocks, "SACK blocks received")                             \
	X(tcp_sack_cuts, "sent super-segments cut where a SACK block or a partial ACK ends inside them") \
	X(tcp_dsacks, "D-SACK blocks received (the peer got data twice)")      \
	X(tcp_reorder_seen, "segments delivered below one delivered before (reordering)") \
	X(tcp_spurious_rtx, "retransmissions proven unnecessary (D-SACK or Eifel timestamp)") \
	X(tcp_undo, "congestion window reductions undone (spurious recovery or timeout)") \
	X(tcp_spurious_rto, "timeouts found spurious (F-RTO or Eifel)")        \
	X(tcp_hystart_exits, "slow starts ended by HyStart++ (RTT increase)")

/* Per worker, levels rather than counts. */
#define DPSOCK_WORKER_GAUGES(X)                                                \
	X(busy_permille, "share of the last second spent on work (per mille)") \
	X(tcp_conns, "TCP connections open now")                               \
	X(tcp_time_wait, "TCP connections in TIME_WAIT now (lwIP pcbs)")        \
	X(sockets, "sockets listed in the socket table now")                   \
	X(mbufs_held, "received mbufs lwIP holds now (zero-copy pbufs)")       \
	X(steer_ring_depth, "mbufs waiting in this worker's steering ring")    \
	X(timers_pending, "ms until lwIP's next timer is due")             \
	X(lwip_mem_bytes, "bytes lwIP holds in the worker's allocator")       \
	X(lwip_mem_objs, "objects lwIP holds in the worker's allocator")

/*
 * Per socket, written by the owning worker at events (receive, send,
 * acknowledgement) and every 100 ms (state, queues, cwnd, RTT).
 */
#define DPSOCK_SOCK_COUNTERS(X)                                                \
	X(rx_bytes, "payload bytes received")                                  \
	X(rx_packets, "TCP segments (pbufs) or UDP datagrams received")        \
	X(tx_bytes, "payload bytes the socket took for sending")               \
	X(tx_packets, "UDP datagrams sent; TCP: MSS-sized segments queued (ceil(bytes/MSS) per send)") \
	X(tx_eagain, "sends refused or cut short for lack of send space")      \
	X(rx_drops, "received data discarded: TCP, the app had closed the socket; UDP, its receive buffer (rx FIFO) was full") \
	X(errors, "send errors other than EAGAIN, failed opens, resets")       \
	X(accepted, "connections accepted (listening socket)")                 \
	X(retrans, "segments retransmitted (every cause)")                      \
	X(poll_hits, "preload: poll/select/epoll calls and blocking calls that found it ready") \
	X(poll_misses, "preload: such calls that found it not ready at their first look")

#define DPSOCK_SOCK_GAUGES(X)                                                  \
	X(rx_held, "received bytes the app holds (dpsock_rx_hold)")            \
	X(rx_refused, "received bytes lwIP keeps because the app refused them") \
	X(tx_queue, "bytes in the send buffer: TCP_SND_BUF - tcp_sndbuf")     \
	X(nrtx, "retransmissions of the oldest unacknowledged segment")        \
	X(cwnd, "congestion window (bytes)")                                   \
	X(ssthresh, "slow start threshold (bytes; 2147483647: not set yet)")  \
	X(snd_wnd, "send window the peer offers (bytes)")                      \
	X(rtt_us, "smoothed RTT (us, from the connection's send times)")       \
	X(rttvar_us, "RTT variation (us)")                                     \
	X(min_rtt_us, "lowest RTT seen in the last 5 minutes (us)")           \
	X(rto_ms, "retransmission timeout (ms)")                               \
	X(mss, "maximum segment size (bytes)")                                 \
	X(ca_state, "recovery state: 0 open, 1 disorder, 3 recovery, 4 loss (after a timeout)") \
	X(sacked, "bytes in flight the peer SACKed")                           \
	X(lost, "bytes in flight deemed lost")                                 \
	X(delivery_rate, "delivery rate of the latest sample (bytes/s)")

#define DPSOCK_STATS_FIELD(name, help) uint64_t name;

struct dpsock_port_stats {
	DPSOCK_PORT_COUNTERS(DPSOCK_STATS_FIELD)
	DPSOCK_PORT_GAUGES(DPSOCK_STATS_FIELD)
} __attribute__((aligned(64)));

struct dpsock_worker_stats {
	DPSOCK_WORKER_COUNTERS(DPSOCK_STATS_FIELD)
	DPSOCK_WORKER_GAUGES(DPSOCK_STATS_FIELD)
	uint32_t lcore_id;
	uint32_t pad;
	uint64_t zero_ack;      /* last ctl.zero_req this worker applied */
} __attribute__((aligned(64)));

/*
 * Multicast (dpsock-stat -v mc): the port's IGMP host, the groups each port
 * joined (the interface state merged from every socket's filter, RFC 3376
 * 3.2) and every socket membership behind them. Rewritten after each change
 * by the thread making it, under the stack's multicast lock (one writer at
 * a time), with the gen seqlock of socket entries (dpsock_sockstat_read).
 */
#define DPSOCK_MC_FILTER_NONE 0      /* the PMD has no multicast filter: what its link delivers */
#define DPSOCK_MC_FILTER_LIST 1      /* rte_eth_dev_set_mc_addr_list */
#define DPSOCK_MC_FILTER_ALLMULTI 2  /* rte_eth_allmulticast_enable */
#define DPSOCK_MC_MODE_INCLUDE 1
#define DPSOCK_MC_MODE_EXCLUDE 2

/* A port's IGMP host (ports[]) or MLD host (mld[]). */
struct dpsock_mc_port_row {
	uint8_t version;        /* compatibility mode: IGMP 3, 2 or 1; MLD 2 or 1 */
	uint8_t filter;         /* DPSOCK_MC_FILTER_* (the port's, in both rows) */
	uint8_t robustness;     /* the querier's QRV (2 by default) */
	uint8_t pad;
	uint32_t n_macs;        /* group MACs in the port's filter list */
	uint64_t query_ns;      /* CLOCK_REALTIME of the last query, 0: none */
	uint64_t older_until_ns; /* an older querier counts as present until then */
	uint8_t querier[16];    /* source of the last query: IPv6, IPv4 mapped; 0: none heard */
};

/* Addresses in the rows: 16 bytes, network order; an IPv4 one mapped
 * (::ffff:a.b.c.d). */
struct dpsock_mc_group_row {
	uint8_t addr[16];
	uint16_t port;
	uint8_t mode;           /* DPSOCK_MC_MODE_* of the interface state */
	uint8_t pad;
	uint32_t nsrc;          /* its sources (the first DPSOCK_STATS_MC_SRCS listed) */
	uint32_t members;       /* socket memberships: every worker's and process's */
	uint8_t src[DPSOCK_STATS_MC_SRCS][16];
};

struct dpsock_mc_member_row {
	uint8_t group[16];
	uint16_t port;
	uint16_t worker;        /* the worker whose socket it is */
	uint8_t mode;           /* DPSOCK_MC_MODE_* of the socket's filter */
	uint8_t nsrc;
	uint16_t pad;
	int32_t pid;            /* the process using the socket */
	int32_t fd;             /* its descriptor there; -1: a native socket */
	int32_t sock_idx;       /* entry in that worker's socket table, -1: none */
	uint64_t serial;        /* that entry's serial (a reused entry differs) */
	uint8_t src[DPSOCK_STATS_MC_MSRCS][16];
};
_Static_assert(sizeof(struct dpsock_mc_member_row) == 208, "member row size");
_Static_assert(sizeof(struct dpsock_mc_group_row) == 284, "group row size");
_Static_assert(sizeof(struct dpsock_mc_port_row) == 40, "port row size");

struct dpsock_mc_table {
	uint32_t gen;           /* seqlock: odd while written */
	uint32_t n_groups;
	uint32_t n_members;
	uint32_t unlisted;      /* groups + memberships that did not fit */
	struct dpsock_mc_port_row ports[DPSOCK_STATS_MAX_PORTS];
	struct dpsock_mc_port_row mld[DPSOCK_STATS_MAX_PORTS];
	struct dpsock_mc_group_row groups[DPSOCK_STATS_MC_GROUPS];
	struct dpsock_mc_member_row members[DPSOCK_STATS_MC_MEMBERS];
} __attribute__((aligned(64)));

/* One per attached preload process (written by dpsockd's control thread;
 * pid 0 = free entry, stored last with release). */
struct dpsock_client_stats {
	int32_t pid;
	uint32_t threads;       /* channels: threads using offloaded sockets */
	uint32_t rings;         /* waiters registered (threads and epoll sets) */
	uint32_t group;         /* process group (shares sockets after fork) */
	uint64_t wakeups;       /* eventfd writes to the group's threads */
	uint64_t sockets;       /* the group's sockets (slots in use) */
	char name[32];
	uint64_t reserved[8];
} __attribute__((aligned(64)));

/* Requests from dpsock-stat; see the file comment. */
struct dpsock_stats_ctl {
	uint64_t zero_req;        /* tool: +1 per -z */
	uint64_t zero_ack_ports;  /* main lcore: last zero_req applied to the ports */
	uint64_t log_req;         /* tool: sequence number of the request in log_spec */
	uint64_t log_ack;         /* main lcore: last log_req applied */
	int32_t log_status;       /* 0, or -errno (-ENOENT: unknown module, -EINVAL: bad level) */
	uint32_t pad;
	char log_spec[128];       /* "module=level[,module=level...]"; module "all" = every one */
	char log_msg[256];        /* what was done, or what was wrong */
} __attribute__((aligned(64)));

/* TCP states as lwIP numbers them (enum tcp_state), plus UDP's. */
#define DPSOCK_SOCK_STATES(X)                                                  \
	X(CLOSED) X(LISTEN) X(SYN_SENT) X(SYN_RCVD) X(ESTABLISHED)             \
	X(FIN_WAIT_1) X(FIN_WAIT_2) X(CLOSE_WAIT) X(CLOSING) X(LAST_ACK)       \
	X(TIME_WAIT)
#define DPSOCK_SOCK_STATE_UDP 0xff /* shown as UNCONN, as ss does */

struct dpsock_sock_stats {
	uint32_t gen;           /* seqlock: odd while the owner writes */
	uint8_t in_use;         /* 1: a live socket; 0: a free slot */
	uint8_t proto;          /* IPPROTO_TCP, IPPROTO_UDP */
	uint8_t state;          /* DPSOCK_SOCK_STATES index, or DPSOCK_SOCK_STATE_UDP */
	uint8_t offloaded;      /* 1 (native sockets always are) */
	int32_t owner_pid;      /* process using the socket (native: the instance's pid;
				 * preloaded: the process that opened it) */
	int32_t fd;             /* its fd in that process; -1: native socket */
	int32_t client;         /* clients[] index; -1: native, or the client left */
	uint16_t worker;
	uint16_t flags;         /* DPSOCK_SOCK_F_* */
	uint32_t laddr, raddr;  /* network order; 0 for IPv6 (DPSOCK_SOCK_F_IPV6) */
	uint16_t lport, rport;  /* host order */
	uint64_t serial;        /* per worker, tells a reused slot apart */
	uint8_t laddr6[16], raddr6[16]; /* the addresses of an IPv6 socket */
	DPSOCK_SOCK_COUNTERS(DPSOCK_STATS_FIELD)
	DPSOCK_SOCK_GAUGES(DPSOCK_STATS_FIELD)
} __attribute__((aligned(64)));

/* dpsock_sock_stats.flags */
#define DPSOCK_SOCK_F_LOOP 1u /* TCP: the peer is a socket of the same instance (the host) */
#define DPSOCK_SOCK_F_CUT  2u /* ... and their bytes go FIFO to FIFO, not through lwIP */
#define DPSOCK_SOCK_F_IPV6 4u /* IPv6: laddr6/raddr6 hold the addresses */

/* How a port is served (dpsock-stat's port lines), written by the main
 * lcore every 100 ms from the stack's net view, with the gen seqlock of
 * socket entries (odd while written; dpsock_sockstat_read's protocol). */
#define DPSOCK_STATS_PORT_ADDRS 8
#define DPSOCK_STATS_PORT_ADDRS6 4
struct dpsock_port_info {
	uint32_t gen;
	uint8_t shared;         /* 1: shared with the kernel netdev, whose addresses it has;
				 * 0: owned alone, its address from dpsock.conf */
	uint8_t up;             /* the netdev's link (shared) */
	uint8_t n_addrs;
	uint8_t pad;
	uint16_t mtu;
	uint16_t pad2;
	uint32_t ifindex;       /* the kernel netdev behind the port, 0: none */
	char ifname[16];
	uint32_t addrs[DPSOCK_STATS_PORT_ADDRS]; /* network order */
	uint8_t prefix_len[DPSOCK_STATS_PORT_ADDRS];
	/* IPv6: an owned port's address6, a shared port's kernel addresses
	 * (its link-local one too) */
	uint8_t n_addrs6;
	uint8_t prefix6_len[DPSOCK_STATS_PORT_ADDRS6];
	uint8_t pad3[3];
	uint8_t addrs6[DPSOCK_STATS_PORT_ADDRS6][16];
} __attribute__((aligned(8)));

struct dpsock_stats_segment {
	uint64_t magic;
	uint32_t version;
	uint32_t size;          /* bytes of the whole segment (header + socket table) */
	int32_t pid;            /* the instance's pid */
	uint32_t n_ports;
	uint32_t n_workers;
	uint32_t running;       /* 1 while the instance runs; 0 once it stopped */
	uint64_t start_time_ns; /* CLOCK_REALTIME at start */
	char name[32];          /* instance name (config "name") */
	char port_names[DPSOCK_STATS_MAX_PORTS][64];
	/* version 2 */
	uint32_t hdr_size;      /* sizeof(struct dpsock_stats_segment) */
	uint32_t sock_slots;    /* socket entries per worker (0: no socket table) */
	uint64_t sock_off;      /* offset of the socket table */
	char app[32];           /* "dpsockd", or the native app's name */
	uint32_t n_clients;     /* clients[] entries ever used (pid 0 = free) */
	uint32_t pad;
	struct dpsock_stats_ctl ctl;
	struct dpsock_port_stats ports[DPSOCK_STATS_MAX_PORTS];
	struct dpsock_worker_stats workers[DPSOCK_STATS_MAX_WORKERS];
	struct dpsock_client_stats clients[DPSOCK_STATS_MAX_CLIENTS];
	/* version 4 */
	struct dpsock_mc_table mc;
	/* version 10 */
	struct dpsock_port_info port_info[DPSOCK_STATS_MAX_PORTS];
};

static inline struct dpsock_sock_stats *
dpsock_stats_socks(const struct dpsock_stats_segment *s, unsigned int worker)
{
	return (struct dpsock_sock_stats *)((char *)s + s->sock_off) +
	       (size_t)worker * s->sock_slots;
}

/* Name, help and place of every counter: generated tables (stats_names.c). */
struct dpsock_stat_desc {
	const char *name;
	const char *help;
	uint32_t off;   /* offsetof in its block */
	bool gauge;
};
extern const struct dpsock_stat_desc dpsock_port_stat_desc[];
extern const unsigned int dpsock_port_stat_count;
extern const struct dpsock_stat_desc dpsock_worker_stat_desc[];
extern const unsigned int dpsock_worker_stat_count;
extern const struct dpsock_stat_desc dpsock_sock_stat_desc[];
extern const unsigned int dpsock_sock_stat_count;

static inline uint64_t
dpsock_stat_at(const void *blk, const struct dpsock_stat_desc *d)
{
	return __atomic_load_n((const uint64_t *)((const char *)blk + d->off), __ATOMIC_RELAXED);
}

/* "ESTABLISHED", "UNCONN"... ("?" for a number lwIP does not have). */
const char *dpsock_sock_state_name(uint8_t state);

/* Zero the counters (not the gauges) of a block, by its writer. */
void dpsock_stats_zero_block(void *blk, const struct dpsock_stat_desc *desc, unsigned int n);

/* Human units: "1.5 KiB", "12 B"; "3.2 ms", "870 us". Return buf. */
char *dpsock_fmt_bytes(char *buf, size_t len, double bytes);
char *dpsock_fmt_usec(char *buf, size_t len, double us);
/* "a.b.c.d:port" (addr network order, port host order); "*" for 0.0.0.0. */
char *dpsock_fmt_addr(char *buf, size_t len, uint32_t addr, uint16_t port);
/* A socket entry's local (peer false) or remote end: "a.b.c.d:port",
 * "[v6 address]:port", "*:port" for an any address (either family). */
char *dpsock_sock_fmt_end(char *buf, size_t len, const struct dpsock_sock_stats *e, bool peer);

/*
 * The socket view's line for one entry (the wording DPSOCK_STATS_FILE uses
 * too), and its header. owner: what the Owner column shows ("dpsockd[123]").
 */
void dpsock_sock_format_header(char *buf, size_t len);
void dpsock_sock_format(const struct dpsock_sock_stats *e, const char *owner, char *buf,
			size_t len);

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

/*
 * Socket entries: seqlock. The owner brackets changes with _begin/_end;
 * dpsock_sockstat_read copies a consistent entry or returns false (the
 * writer kept changing it: try again later). Pairs: the writer's release
 * fence after the odd store orders it before the data stores; the reader's
 * acquire fence orders its data loads before the second gen load.
 */
static inline void
dpsock_sockstat_write_begin(struct dpsock_sock_stats *e)
{
	__atomic_store_n(&e->gen, e->gen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void
dpsock_sockstat_write_end(struct dpsock_sock_stats *e)
{
	/* release: the data stores above are visible before gen is even */
	__atomic_store_n(&e->gen, e->gen + 1, __ATOMIC_RELEASE);
}

static inline bool
dpsock_sockstat_read(const struct dpsock_sock_stats *e, struct dpsock_sock_stats *out)
{
	const uint64_t *src = (const uint64_t *)e;
	uint64_t *dst = (uint64_t *)out;
	unsigned int tries, i;

	for (tries = 0; tries < 1000; tries++) {
		/* acquire: pairs with the writer's release store in _write_end */
		uint32_t g1 = __atomic_load_n(&e->gen, __ATOMIC_ACQUIRE), g2;

		if (g1 & 1)
			continue;
		for (i = 0; i < sizeof(*e) / sizeof(uint64_t); i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		g2 = __atomic_load_n(&e->gen, __ATOMIC_RELAXED);
		if (g1 == g2)
			return true;
	}
	return false;
}

/* shm_open name of an instance's segment: "/dpsock.<name>.stats". */
#define DPSOCK_STATS_SHM_FMT "/dpsock.%s.stats"

#endif /* DPSOCK_ABI_STATS_SEGMENT_H */
