/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lwipopts.h — lwIP 2.1.3 configuration for dpsock.
 *
 * One lwIP instance per worker thread (globals made _Thread_local by
 * lwip/transform.py), driven from a poll loop: NO_SYS, raw API only, IPv4.
 * Values that are not obvious carry a one-line reason.
 */
#ifndef DPSOCK_LWIPOPTS_H
#define DPSOCK_LWIPOPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* ---- hooks into dpsock (defined in lwip/alloc.c, lwip/sys_arch.c, lwip/isn.c) ---- */
void *dpsock_lwip_malloc(size_t size);
void *dpsock_lwip_calloc(size_t n, size_t size);
void dpsock_lwip_free(void *ptr);
uint32_t dpsock_lwip_rand(void);
/* set by dpsock_lwip_instance_init() on the thread that owns the instance */
extern _Thread_local bool dpsock_lwip_tls_owned;
void dpsock_lwip_core_unlocked(const char *file, int line) __attribute__((noreturn, cold));
/* appended to timeouts.c by lwip/transform.py: frees all pending timeouts */
void dpsock_lwip_timeouts_fini(void);

/* ---- system ---- */
/* DPDK and libc provide htons() and friends; lwIP uses its own lwip_htons(). */
#define LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS 1
#define NO_SYS                          1
#define SYS_LIGHTWEIGHT_PROT            0   /* an instance is only ever touched by its own thread */
#define LWIP_TIMERS                     1
#define LWIP_SOCKET                     0
#define LWIP_NETCONN                    0
#define LWIP_NETIF_API                  0
#define LWIP_RAW                        0   /* no raw IP pcbs: ICMP echo is answered by icmp.c */
/* every public lwIP entry point checks it runs on the instance's owner thread */
#define LWIP_ASSERT_CORE_LOCKED() \
    do { if (__builtin_expect(!dpsock_lwip_tls_owned, 0)) dpsock_lwip_core_unlocked(__FILE__, __LINE__); } while (0)
#define LWIP_RAND()                     dpsock_lwip_rand()   /* per-thread PRNG (ports, IGMP delays) */

/* ---- memory: pools and heap both come from the per-thread allocator ---- */
#define MEM_LIBC_MALLOC                 1
#define MEMP_MEM_MALLOC                 1
#define mem_clib_malloc                 dpsock_lwip_malloc
#define mem_clib_calloc                 dpsock_lwip_calloc
#define mem_clib_free                   dpsock_lwip_free
/* must not exceed the allocator's alignment (16): pbuf_alloc(PBUF_RAM) rounds the
 * payload up past the allocation otherwise (heap corruption seen with 64) */
#define MEM_ALIGNMENT                   16
#define MEM_SIZE                        (1024 * 1024) /* unused with MEM_LIBC_MALLOC; kept sane */

/* ---- protocols ---- */
#define LWIP_IPV4                       1
#define LWIP_IPV6                       1
/* IPv6 on a port with address6 (stack/frame/netif.c): statically configured, so
 * no SLAAC, router solicitation or DHCPv6 (router advertisements still
 * give the default routers). No duplicate address detection: every
 * worker's instance holds the port's addresses and would take the others'
 * probes for a duplicate (docs/design.md decision 17). lwIP's MLD is off:
 * it speaks MLDv1 per instance, where a port needs one MLDv2 host per link
 * (stack/mcast/mchost.c, as IGMP); ip6_input still takes the solicited-node
 * groups of its own addresses, and the groups the port joined through the
 * hook dpsock_lwip_ip6_mcast_joined (lwip/transform.py). */
#define LWIP_IPV6_AUTOCONFIG            0
/* LWIP_IPV6_NUM_ADDRESSES stays lwIP's 3: a port's link-local address and
 * two others (a shared port takes its kernel netdev's: stack/netview/netview.c) */
#define LWIP_IPV6_SEND_ROUTER_SOLICIT   0
#define LWIP_IPV6_DUP_DETECT_ATTEMPTS   0
#define LWIP_IPV6_MLD                   0
#define LWIP_IPV6_DHCP6                 0
#define LWIP_IPV6_FRAG                  1
#define LWIP_IPV6_REASS                 1
/* the reassembly helper holds a pointer: on 64 bits it does not fit in
 * the fragment header, so lwIP copies the header aside */
#define IPV6_FRAG_COPYHEADER            1
/* as ARP_TABLE_SIZE; lwIP's 10 destinations would be replaced on every
 * new peer (the destination cache is per remote host) */
#define LWIP_ND6_NUM_NEIGHBORS          64
#define LWIP_ND6_NUM_DESTINATIONS       64  /* nd6.c counts them in an s8_t */
#define LWIP_ND6_QUEUEING               1
#define MEMP_NUM_ND6_QUEUE              64
#define LWIP_ARP                        1
#define LWIP_ETHERNET                   1
#define LWIP_ICMP                       1
/* IGMPv3 (with v2/v1 compatibility) is dpsock's own (stack/mcast/mchost.c): lwIP's
 * speaks v2 only, per instance, where a port needs one host per link */
#define LWIP_IGMP                       0
#define LWIP_UDP                        1
#define LWIP_TCP                        1
#define LWIP_DHCP                       0
#define LWIP_AUTOIP                     0
#define LWIP_DNS                        0
#define LWIP_SINGLE_NETIF               0   /* the daemon and the tests use several netifs */
#define LWIP_MULTICAST_TX_OPTIONS       1   /* per-pcb multicast TTL and interface (IP_MULTICAST_*) */
#define IP_DEFAULT_TTL                  64  /* Linux default; lwIP's is 255 */
#define IP_FORWARD                      0
#define IP_REASSEMBLY                   1
#define IP_FRAG                         1
#define IP_REASS_MAX_PBUFS              64  /* a 64 KiB UDP datagram is 45 fragments at MTU 1500 */
#define ARP_TABLE_SIZE                  64
#define ARP_QUEUEING                    1
/* packets held per neighbour while its ARP answer is awaited (lwIP's
 * default 3 drops replies when a worker is descheduled a few ms during the
 * first exchange with a new peer; Linux holds ~200 KiB) */
#define ARP_QUEUE_LEN                   64
#define ETHARP_SUPPORT_STATIC_ENTRIES   1   /* static neighbours from the configuration */
#define SO_REUSE                        1   /* listeners on several lcores live in separate instances */

/* ---- TCP ---- */
/* The largest MSS dpsock announces; lwIP announces and uses
 * min(TCP_MSS, netif MTU - 40), so the MSS follows each port's MTU (1460 at
 * 1500, 8960 at 9000). */
#define TCP_MSS                         8960
#define LWIP_WND_SCALE                  1
#define TCP_RCV_SCALE                   7   /* allows windows up to 8 MiB; one value for all connections */
#define TCP_WND                         (1024 * 1024)
#define TCP_SND_BUF                     (512 * 1024)
/* u16; 4 pbufs per 1460-byte segment of send buffer (lwIP's default
 * formula at the common MTU; a larger MSS needs fewer) */
#define TCP_SND_QUEUELEN                ((4 * TCP_SND_BUF + 1459) / 1460)
#define TCP_SNDLOWAT                    (16 * 1024) /* below 0xffff - 4*TCP_MSS; the default (SND_BUF/2) trips an #error */
#define TCP_SNDQUEUELOWAT               (TCP_SND_QUEUELEN / 2)
#define TCP_OVERSIZE                    TCP_MSS
#define LWIP_NETIF_TX_SINGLE_PBUF       0
#define LWIP_TCP_SACK_OUT               1   /* SACK blocks sent; received ones drive tcp_rec.c's recovery */
#define LWIP_TCP_TIMESTAMPS             1   /* TSecr for Eifel/RACK (tcp_rec.c); helps Linux peers reuse TIME_WAIT tuples */
#define TCP_QUEUE_OOSEQ                 1
/* zero-copy RX pins one mbuf per queued segment: bound what one connection can hold */
#define TCP_OOSEQ_MAX_BYTES             TCP_WND
#define TCP_OOSEQ_MAX_PBUFS             1024
#define TCP_TMR_INTERVAL                25  /* delayed ACK <= 25 ms; RTT measured in 50 ms ticks */
#define TCP_MSL                         5000UL /* TIME_WAIT of 10 s instead of 120 s */
#define LWIP_TCP_RTO_TIME               1000 /* initial RTO in ms (2.1.3 hard-codes 3000; see transform.py) */
#define LWIP_TCP_RTO_MIN                200  /* RTO floor in ms, as Linux (tcp_rec.c) */
/* initial window of 10 segments (RFC 6928, Linux's); 2.1.3 uses 3-4 */
#define LWIP_TCP_CALC_INITIAL_CWND(mss) ((tcpwnd_size_t)(10U * (mss)))
#define TCP_TTL                         IP_DEFAULT_TTL
/* lwIP's backlog counts half-open connections in a u8 and drops the SYNs
 * beyond it silently; dpsock admits SYNs itself (stack/sock/sock.c) */
#define TCP_LISTEN_BACKLOG              0
/* two ext-arg slots per pcb: one to learn when a pcb is freed (after
 * TIME_WAIT) to release its port, and to admit or refuse SYNs; one holding
 * the socket, which learns so that its pcb is gone when lwIP frees it
 * without calling back (the end of TIME_WAIT) */
#define LWIP_TCP_PCB_NUM_EXT_ARGS       2
#define LWIP_TCP_KEEPALIVE              1   /* SO_KEEPALIVE / TCP_KEEP* set per pcb */
/* the pcb index (lwip/pcb_index.c, hooked by lwip/transform_perf.py): links
 * kept in every struct tcp_pcb */
#define DPSOCK_TCP_PCB_FIELDS \
    struct tcp_pcb *dp_prev;    /* predecessor on the active / TIME_WAIT list */ \
    struct tcp_pcb *dp_hnext;   /* next in the hash bucket */ \
    struct tcp_pcb **dp_hpprev; /* what points at this pcb in its bucket; NULL: not hashed */ \
    u8_t dp_parked;             /* quiet: behind the timers' walks (pcb_index.c) */
/* TIME_WAIT pcbs per instance beyond which the oldest go first (Linux:
 * tcp_max_tw_buckets); about 16 MiB of pcbs */
#define DPSOCK_TCP_TW_MAX               65536
#define LWIP_CALLBACK_API               1
#define LWIP_EVENT_API                  0
#define LWIP_HOOK_FILENAME              "dpsock_lwip_hooks.h"
#define LWIP_HOOK_TCP_ISN(local_ip, local_port, remote_ip, remote_port) \
    dpsock_lwip_tcp_isn((local_ip), (local_port), (remote_ip), (remote_port)) /* RFC 6528 */
/* An ACK or RST reaching a listening pcb has no connection on this worker:
 * maybe another worker's (dpsock_lwip_hooks.h). The no-pcb-at-all case is
 * an edit in transform.py. */
#define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p)         \
    (((pcb)->state == LISTEN && (TCPH_FLAGS(hdr) & (TCP_ACK | TCP_RST)) != 0 && \
      dpsock_lwip_tcp_unmatched((p), (hdr))) ? ERR_ABRT : ERR_OK)

/* ---- netif ---- */
/* 802.1Q: ethernet_output tags each frame of an interface with a VLAN
 * (dpsock_lwip_hooks.h); with the hook defined, PBUF_LINK_HLEN is 18 so
 * that the tag fits in front of every frame. The worker strips the tag of
 * what it receives before lwIP sees it (stack/worker.c). */
#define ETHARP_SUPPORT_VLAN             1
#define LWIP_HOOK_VLAN_SET(netif, p, src, dst, eth_type) dpsock_lwip_vlan_set(netif)
/* Static routes (routes = [ ... ]): after the connected subnets, before the
 * default netif; the next hop of an off-link destination is the route's
 * gateway, else the netif's own (dpsock_lwip_hooks.h) */
#define LWIP_HOOK_IP4_ROUTE(dest)                 dpsock_lwip_route(dest)
#define LWIP_HOOK_ETHARP_GET_GW(netif, dest)      dpsock_lwip_route_gw((netif), (dest))
/* IPv6 (a shared port's kernel routes, a configured prefix other than /64):
 * after lwIP's zone and scope rules, before its /64 on-link test */
#define LWIP_HOOK_IP6_ROUTE(src, dest)            dpsock_lwip_route6((src), (dest))
/* ... and the next hop of a destination outside the /64 lwIP takes as
 * on-link: on-link still within a shorter prefix, else gateway6 */
#define LWIP_HOOK_ND6_GET_GW(netif, dest)         dpsock_lwip_nd6_gw((netif), (dest))
#define LWIP_NETIF_STATUS_CALLBACK      1
#define LWIP_NETIF_LINK_CALLBACK        1
#define LWIP_NETIF_HWADDRHINT           1   /* per-pcb ARP cache hint */
/* segments to the stack's own addresses come back through the netif's
 * queue, polled by the worker (stack/worker.c loop_poll): connections
 * between sockets of one dpsockd (docs/design.md) */
#define LWIP_NETIF_LOOPBACK             1
#define LWIP_LOOPBACK_MAX_PBUFS         0
#define LWIP_HAVE_LOOPIF                0
#define LWIP_NUM_NETIF_CLIENT_DATA      0

/* ---- checksums: all in software unless the netif says otherwise (NETIF_SET_CHECKSUM_CTRL) ---- */
/* 64-bit adds instead of lwIP's 16-bit loop: 5x faster (lwip/chksum.c) */
uint16_t dpsock_lwip_chksum(const void *dataptr, int len);
#define LWIP_CHKSUM                     dpsock_lwip_chksum
#define LWIP_CHECKSUM_CTRL_PER_NETIF    1
#define CHECKSUM_GEN_IP                 1
#define CHECKSUM_GEN_UDP                1
#define CHECKSUM_GEN_TCP                1
#define CHECKSUM_GEN_ICMP               1
#define CHECKSUM_CHECK_IP               1
#define CHECKSUM_CHECK_UDP              1
#define CHECKSUM_CHECK_TCP              1
#define CHECKSUM_CHECK_ICMP             1

/* ---- statistics (lwip_stats is thread-local: one set per instance) ---- */
#define LWIP_STATS                      1
#define LWIP_STATS_LARGE                1   /* 32-bit counters: the 16-bit ones wrap within seconds */
#define LWIP_STATS_DISPLAY              0
#define LINK_STATS                      1
#define ETHARP_STATS                    1
#define IP_STATS                        1
#define IPFRAG_STATS                    1
#define ICMP_STATS                      1
#define UDP_STATS                       1
#define TCP_STATS                       1
#define IGMP_STATS                      0   /* lwIP's IGMP is off; stack/mcast/mchost.c counts its own */
#define MEM_STATS                       0   /* the per-thread allocator keeps its own counters */
#define MEMP_STATS                      0
#define SYS_STATS                       0
#define IP6_STATS                       1
#define ICMP6_STATS                     1
#define IP6_FRAG_STATS                  1
#define MLD6_STATS                      0
#define ND6_STATS                       1
#define MIB2_STATS                      0

/* ---- debugging: assertions stay on (they log file:line and abort), debug output off ---- */
#undef LWIP_NOASSERT
#undef LWIP_DEBUG

#endif /* DPSOCK_LWIPOPTS_H */
