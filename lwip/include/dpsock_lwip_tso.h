/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip_tso.h — TCP segments larger than the MSS for netifs that
 * segment (lwip/tso.c, hooked into tcp_output, tcp_write, the persist timer
 * and ip4_output by lwip/transform_perf.py).
 *
 * lwIP 2.1.3 builds one segment per MSS and walks its unsent and unacked
 * queues on every tcp_write and tcp_output, so a bulk sender pays per MSS
 * (segment, header, checksum, IP, ARP, netif) and per queued segment. On a
 * netif that segments itself (a NIC with TSO, or the netif's software GSO),
 * tcp_output first joins the unsent segments into super-segments of up to
 * DPSOCK_TCP_TSO_MAX bytes: the data stays where tcp_write copied it, each
 * joined segment's pbufs are linked behind the first one's (its TCP header
 * becomes header room), so a super-segment is a chain of MSS-sized pbufs.
 * The netif cuts it back into MSS-sized frames (the connection's MSS, found
 * by the 4-tuple, see dpsock_tcp_lookup).
 *
 * What stays as lwIP does it: congestion and flow control count bytes, as
 * before; a super-segment that does not fit the window is split at a pbuf
 * boundary (no copy) so that the part that fits goes out; the last unsent
 * segment is never joined (tcp_write may still fill it); segments with SYN,
 * FIN or RST, or with different options, are never joined. A super-segment
 * is acknowledged and freed as one segment; once sent, loss recovery
 * (tcp_rec.c) cuts it where only part of it was lost (dpsock_tcp_seg_cut).
 */
#ifndef DPSOCK_LWIP_TSO_H
#define DPSOCK_LWIP_TSO_H

#include <stdint.h>

struct netif;
struct tcp_pcb;
struct tcp_seg;

/* Largest TCP segment (header included) lwIP builds for a segmenting
 * netif: what a pbuf chain's 16-bit length holds once the largest IP
 * header (IPv6's 40 bytes) and link header (Ethernet with a VLAN tag, 18)
 * are added, for either family. */
#define DPSOCK_TCP_TSO_MAX (0xffffu - 40u - 18u)

/*
 * Declare that netif segments TCP: lwIP may give it TCP segments of up to
 * max_bytes (TCP header included, at most DPSOCK_TCP_TSO_MAX) made of at
 * most max_pbufs pbufs. 0 turns it off (MSS-sized segments, lwIP's
 * default). Per instance, on its thread.
 */
void dpsock_tcp_netif_set_tso(const struct netif *netif, uint32_t max_bytes, uint16_t max_pbufs);

/* The netif's limit in bytes (0: it does not segment). */
uint32_t dpsock_tcp_netif_tso(const struct netif *netif);

/* tcp_output, before its window check: drop what the peer acknowledged
 * from the head of the unsent queue, join the unsent segments (netif
 * permitting) and fit the head to wnd. Returns pcb->unsent. */
struct tcp_seg *dpsock_tcp_output_prepare(struct tcp_pcb *pcb, const struct netif *netif,
                                          uint32_t wnd);

/* tcp_output, after each segment sent: drop what is acknowledged from the
 * new head and fit it to wnd. Returns pcb->unsent. */
struct tcp_seg *dpsock_tcp_unsent_fit(struct tcp_pcb *pcb, uint32_t wnd);

/* The persist timer is about to cut the unsent head to snd_wnd with
 * tcp_split_unsent_seg(), which takes segments of at most one MSS: cut a
 * super-segment down first. Returns 0 (ERR_OK) or ERR_MEM. */
int dpsock_tcp_unsent_fit_persist(struct tcp_pcb *pcb);
/* ... and the size to cut it to: the window, one MSS (less the head's
 * options) at most. The head may still be longer than an MSS after the
 * cut above (its first pbuf alone can be), and tcp_split_unsent_seg
 * asserts split <= mss. */
u16_t dpsock_tcp_persist_split(const struct tcp_pcb *pcb);

/* tcp_rec.c: only part of seg, a sent segment (of the unacked queue), was
 * lost (a SACK block or an ACK ends inside it): cut it off data bytes in
 * (DPSOCK_SEG_CUT_EXACT: there, copying the rest of the pbuf the cut falls
 * in, at most an MSS, into a new one; DPSOCK_SEG_CUT_UP / _DOWN: at the
 * first pbuf boundary at or after it / the last one at or before it); the
 * rest becomes seg->next, with a header of its own. Returns where it cut
 * (data bytes), 0 when there is no such boundary, seg has SYN or FIN, its
 * first pbuf is still lent to the NIC (its header would be written) or
 * there is no memory (nothing changed but, perhaps, one pbuf more in its
 * chain). A NIC's frames need not end at pbuf boundaries (net_tap's GSO
 * cuts 14 bytes short of the MSS): SACK blocks need the exact cut. */
enum { DPSOCK_SEG_CUT_EXACT, DPSOCK_SEG_CUT_UP, DPSOCK_SEG_CUT_DOWN };
uint32_t dpsock_tcp_seg_cut(struct tcp_pcb *pcb, struct tcp_seg *seg, uint32_t off, int how);

/* ip4_output: may this packet go to netif without IP fragmentation? (a TCP
 * super-segment for a segmenting netif) */
int dpsock_tcp_tso_passes(const struct netif *netif, uint8_t proto);

/* Counters of the calling instance. */
struct dpsock_tcp_tso_stats {
    uint64_t joined;   /* segments joined into a super-segment */
    uint64_t splits;   /* super-segments split to fit the window */
    uint64_t acked_dropped; /* unsent segments freed or trimmed: already acknowledged */
};
void dpsock_tcp_tso_stats(struct dpsock_tcp_tso_stats *out);

#endif /* DPSOCK_LWIP_TSO_H */
