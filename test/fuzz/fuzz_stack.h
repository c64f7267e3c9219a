/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stack under the fuzz harnesses that need it (fuzz_frames, fuzz_preload):
 * dpsock_init (EAL without hugepages or PCI, the configuration), one worker
 * run by the harness's own thread, one port: a DPDK ring port
 * (rte_eth_from_rings, net_ring) whose RX ring the harness fills and whose
 * TX ring it drains. The worker runs its real loop iteration
 * (dpsock_worker_poll): rx_burst, frame validation, lwIP, the app's poll
 * hook, timers, tx_burst.
 *
 * Frames are injected in an external buffer of exactly their length, from
 * malloc(): a read past the end of a frame is an ASan report, not a quiet
 * read of the rest of an mbuf. lwIP's allocator is replaced by plain malloc
 * for the same reason (lwip_alloc_asan.c).
 */
#ifndef DPSOCK_FUZZ_STACK_H
#define DPSOCK_FUZZ_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpsock/dpsock.h"

/* Addresses of the test network (198.18.0.0/24). Network byte order. */
#define FUZZ_LOCAL_IP 0xc6120001u  /* 198.18.0.1: the stack */
#define FUZZ_PEER_IP 0xc6120002u   /* 198.18.0.2: the fuzzer's frames */
#define FUZZ_VLAN_TCI 0xa064u      /* 802.1Q priority 5, VLAN 100 (frame records, mode 64, 128) */
#define FUZZ_GW_IP 0xc61200feu     /* 198.18.0.254 */
/* and its IPv6 prefix (fd00:198:18::/64), as initialisers of uint8_t[16] */
#define FUZZ_LOCAL_IP6 { 0xfd, 0x00, 0x01, 0x98, 0x00, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01 }
#define FUZZ_PEER_IP6 { 0xfd, 0x00, 0x01, 0x98, 0x00, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02 }

/* What the stack last sent, for inputs that answer it. */
struct fuzz_seen {
	uint32_t tcp_next;   /* seq + length (+ SYN/FIN) of its last TCP segment, host order */
	uint16_t tcp_sport;  /* and that segment's ports, host order */
	uint16_t tcp_dport;
	unsigned long frames; /* frames sent since start */
};
extern struct fuzz_seen fuzz_seen;

/*
 * Start the stack: EAL, `conf` (libconfig text; the interface, name and
 * memory keys are the harness's: see fuzz_stack.c), the ring port, the
 * stats segment and the worker with `app`'s hooks (worker_init, poll...).
 * Aborts with a message on failure.
 */
void fuzz_stack_init(const char *extra_conf, const struct dpsock_app *app);

struct dpsock_worker *fuzz_worker(void);

/*
 * Queue one frame on the port's RX ring. ol_flags: the RX offload flags a
 * NIC would set (checksums). segs: 1..4 mbufs the frame is split over.
 * Returns false when no mbuf was left (the frame is dropped).
 */
bool fuzz_stack_rx(const uint8_t *frame, size_t len, uint64_t ol_flags, unsigned int segs);

/*
 * One frame record of a harness's input, at p (n bytes left after the
 * record's type byte): flags mode len_lo len_hi FRAME[len].
 *   flags: 1 set the IPv4 total length (IPv6: payload length) from the
 *          frame's length, 2 fix the IPv4 header checksum (IPv6 has none:
 *          nothing), 4 fix the TCP/UDP/ICMP/IGMP checksum (IPv6: the TCP,
 *          UDP or ICMPv6 checksum with the IPv6 pseudo-header, when that
 *          header comes right after the fixed header), 8 TCP ack number
 *          relative to the stack's last sequence number sent (ack +=
 *          fuzz_seen.tcp_next; IPv4 or IPv6); bits 4-5 the NIC's IP
 *          checksum verdict (unknown, good, bad, none), bits 6-7 its L4
 *          verdict
 *   mode:  bits 0-1 mbufs - 1 the frame is split over, 4 no loop iteration
 *          after it (frames share an rx burst), 8 Ethernet addresses peer ->
 *          port, 16 IPv4 addresses peer -> stack (IPv6: FUZZ_PEER_IP6 ->
 *          FUZZ_LOCAL_IP6), 32 TCP/UDP ports swapped from the stack's last
 *          TCP segment (IPv4 or IPv6), 64 the frame tagged FUZZ_VLAN_TCI
 *          (802.1Q) after those fix-ups, 128 first the port goes on VLAN
 *          FUZZ_VLAN_TCI (or off it again) for the rest of the input (then
 *          every frame it sends must carry that tag)
 * The IP fix-ups apply to an untagged frame of ethertype 0x0800 or 0x86dd
 * (the tag of mode 64 comes after them).
 * Queues the frame and runs the worker once. Returns the bytes used.
 */
size_t fuzz_stack_frame_record(const uint8_t *p, size_t n);

/* Run n loop iterations of the worker; every frame it sends is checked
 * (well-formed IPv4 or IPv6 header, length within the MTU) and freed. */
void fuzz_stack_poll(unsigned int n);

/* lwIP's clock (virtual in the harnesses) moves n TCP timer periods
 * (25 ms) forward, at most 4096 in one input; its timers (TCP's fast and
 * slow timers, IPv4 and IPv6 reassembly, ARP, neighbour discovery, IGMP)
 * fire as they fall due; then one loop iteration sends what they queued. */
void fuzz_stack_timers(unsigned int n);

/* Between inputs: abort every TCP connection (listeners stay), drop
 * IPv4 and IPv6 reassembly queues, the ARP cache and the neighbour cache
 * (with what routers advertised), then teach the stack the peer's MAC
 * again (an ARP reply, and a neighbour solicitation and advertisement from
 * FUZZ_PEER_IP6, through the worker). */
void fuzz_stack_reset(void);

/* The peer's MAC and the port's, for frames the harness builds. */
extern const uint8_t fuzz_peer_mac[6];
extern uint8_t fuzz_port_mac[6];

#endif /* DPSOCK_FUZZ_STACK_H */
