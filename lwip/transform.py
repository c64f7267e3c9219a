#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Build-time transform of the lwIP 2.1.3 source tree for dpsock.

    transform.py --src <lwip source root> --outdir <dir> [--expect <file>...]

Copies the lwIP sources dpsock compiles (src/core, src/core/ipv4,
src/netif/ethernet.c) flat into <dir>, the whole src/include tree into
<dir>/tl-include, and rewrites them on the way:

  * every writable file-scope global and static of the core becomes
    _Thread_local (definition and extern declaration), so each worker thread
    owns a private lwIP instance; tcp_pcb_lists[] (statically initialised
    with the addresses of the list heads) becomes a TLS array filled by
    tcp_init();
  * five TCP fixes that lwIP made after 2.1.3, two of our own (TCP option
    parsing, left-edge trim), a TIME_WAIT reuse rule like Linux's, and a
    configurable initial RTO (LWIP_TCP_RTO_TIME);
  * the performance edits of transform_perf.py (pcb index, segmentation
    offload);
  * a UDP delivery hook: multicast and broadcast datagrams to every
    matching socket, unicast ones hashed over a SO_REUSEPORT group.

Every edit names the exact text it expects.  If a pattern is missing or
appears more than once the script exits non-zero naming the file and the
symbol/edit: a different lwIP release must break the build, never silently
leave a shared global or an unfixed bug behind.

The lwIP sources are never stored in the dpsock repository; this script only
holds the small anchors it has to find.
"""

import argparse
import os
import re
import shutil
import sys

# .c files compiled into liblwip_tl (relative to <src>/src), one list shared
# with lwip/meson.build. Output names are the basenames, which are unique.
def _read_sources():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'upstream_sources.txt')
    with open(path, encoding='utf-8') as f:
        return [l.strip() for l in f if l.strip() and not l.lstrip().startswith('#')]


SOURCES = _read_sources()

INCLUDE_OUT = 'tl-include'
STAMP = 'tl-include.stamp.h'

# Writable file-scope objects, per file, as their declaration reads in 2.1.3
# (one line, leading blanks and a trailing comment ignored). Each must occur
# exactly once. Objects compiled out by our lwipopts.h are listed as well, so
# that switching an option on cannot bring a shared global back.
TLS_DECLS = {
    'core/ip.c': [
        'struct ip_globals ip_data;',
    ],
    'core/netif.c': [
        'static netif_ext_callback_t *ext_callback;',
        'struct netif *netif_list;',
        'struct netif *netif_default;',
        'static u8_t netif_num;',
        'static u8_t netif_client_id;',
        'static struct netif loop_netif;',
    ],
    'core/pbuf.c': [
        'volatile u8_t pbuf_free_ooseq_pending;',
    ],
    'core/stats.c': [
        'struct stats_ lwip_stats;',
    ],
    'core/tcp.c': [
        'static u16_t tcp_port = TCP_LOCAL_PORT_RANGE_START;',
        'u32_t tcp_ticks;',
        'struct tcp_pcb *tcp_bound_pcbs;',
        'union tcp_listen_pcbs_t tcp_listen_pcbs;',
        'struct tcp_pcb *tcp_active_pcbs;',
        'struct tcp_pcb *tcp_tw_pcbs;',
        'u8_t tcp_active_pcbs_changed;',
        'static u8_t tcp_timer;',
        'static u8_t tcp_timer_ctr;',
        # function-local, unused with LWIP_HOOK_TCP_ISN
        'static u32_t iss = 6510;',
        # ext-arg slot counter (LWIP_TCP_PCB_NUM_EXT_ARGS): each instance
        # allocates its own slots
        'static u8_t tcp_ext_arg_id;',
    ],
    'core/tcp_in.c': [
        'static struct tcp_seg inseg;',
        'static struct tcp_hdr *tcphdr;',
        'static u16_t tcphdr_optlen;',
        'static u16_t tcphdr_opt1len;',
        'static u8_t *tcphdr_opt2;',
        'static u16_t tcp_optidx;',
        'static u32_t seqno, ackno;',
        'static tcpwnd_size_t recv_acked;',
        'static u16_t tcplen;',
        'static u8_t flags;',
        'static u8_t recv_flags;',
        'static struct pbuf *recv_data;',
        'struct tcp_pcb *tcp_input_pcb;',
    ],
    'core/timeouts.c': [
        'static struct sys_timeo *next_timeout;',
        'static u32_t current_timeout_due_time;',
        'static int tcpip_tcp_timer_active;',
    ],
    'core/udp.c': [
        'static u16_t udp_port = UDP_LOCAL_PORT_RANGE_START;',
        'struct udp_pcb *udp_pcbs;',
    ],
    'core/ipv4/etharp.c': [
        'static struct etharp_entry arp_table[ARP_TABLE_SIZE];',
        'static netif_addr_idx_t etharp_cached_entry;',
    ],
    'core/ipv4/igmp.c': [
        'static ip4_addr_t     allsystems;',
        'static ip4_addr_t     allrouters;',
    ],
    'core/ipv4/ip4.c': [
        'static struct netif *ip4_default_multicast_netif;',
        'static u16_t ip_id;',
    ],
    'core/ipv4/ip4_addr.c': [
        # ip4addr_ntoa()'s function-local result buffer
        'static char str[IP4ADDR_STRLEN_MAX];',
    ],
    'core/ipv4/ip4_frag.c': [
        'static struct ip_reassdata *reassdatagrams;',
        'static u16_t ip_reass_pbufcount;',
    ],
    'core/ipv6/ip6_addr.c': [
        # ip6addr_ntoa()'s function-local result buffer
        'static char str[40];',
    ],
    'core/ipv6/ip6_frag.c': [
        'static struct ip6_reassdata *reassdatagrams;',
        'static u16_t ip6_reass_pbufcount;',
        # ip6_frag()'s fragment identification counter
        'static u32_t identification;',
    ],
    'core/ipv6/nd6.c': [
        'struct nd6_neighbor_cache_entry neighbor_cache[LWIP_ND6_NUM_NEIGHBORS];',
        'struct nd6_destination_cache_entry destination_cache[LWIP_ND6_NUM_DESTINATIONS];',
        'struct nd6_prefix_list_entry prefix_list[LWIP_ND6_NUM_PREFIXES];',
        'struct nd6_router_list_entry default_router_list[LWIP_ND6_NUM_ROUTERS];',
        'u32_t reachable_time = LWIP_ND6_REACHABLE_TIME;',
        'u32_t retrans_timer = LWIP_ND6_RETRANS_TIMER; /* @todo implement this value in timer */',
        'static u8_t nd6_cached_neighbor_index;',
        'static netif_addr_idx_t nd6_cached_destination_index;',
        'static ip6_addr_t multicast_address;',
        'static u8_t nd6_tmr_rs_reduction;',
        'static union ra_options nd6_ra_buffer;',
        # nd6_select_router()'s round-robin position
        'static s8_t last_router;',
    ],
    'include/lwip/priv/nd6_priv.h': [
        'extern struct nd6_neighbor_cache_entry neighbor_cache[];',
        'extern struct nd6_destination_cache_entry destination_cache[];',
        'extern struct nd6_prefix_list_entry prefix_list[];',
        'extern struct nd6_router_list_entry default_router_list[];',
        'extern u32_t reachable_time;',
        'extern u32_t retrans_timer;',
    ],
    'include/lwip/ip.h': [
        'extern struct ip_globals ip_data;',
    ],
    'include/lwip/netif.h': [
        'extern struct netif *netif_list;',
        'extern struct netif *netif_default;',
    ],
    'include/lwip/pbuf.h': [
        'extern volatile u8_t pbuf_free_ooseq_pending;',
    ],
    'include/lwip/priv/tcp_priv.h': [
        'extern struct tcp_pcb *tcp_input_pcb;',
        'extern u32_t tcp_ticks;',
        'extern u8_t tcp_active_pcbs_changed;',
        'extern struct tcp_pcb *tcp_bound_pcbs;',
        'extern union tcp_listen_pcbs_t tcp_listen_pcbs;',
        'extern struct tcp_pcb *tcp_active_pcbs;',
        'extern struct tcp_pcb *tcp_tw_pcbs;',
    ],
    'include/lwip/stats.h': [
        'extern struct stats_ lwip_stats;',
    ],
    'include/lwip/udp.h': [
        'extern struct udp_pcb *udp_pcbs;',
    ],
}


class Edit:
    """Replace `old` (exact text, must occur exactly once) by `new`."""

    def __init__(self, path, what, old, new):
        self.path, self.what, self.old, self.new = path, what, old, new


EDITS = [
    # ---- nd6.c: the router-solicitation counter is unused without
    # LWIP_IPV6_SEND_ROUTER_SOLICIT (lwipopts.h turns it off)
    Edit('core/ipv6/nd6.c', 'nd6_tmr_rs_reduction only with router solicitation',
         'static _Thread_local u8_t nd6_tmr_rs_reduction;\n',
         '#if LWIP_IPV6_SEND_ROUTER_SOLICIT /* dpsock: unused otherwise */\n'
         'static _Thread_local u8_t nd6_tmr_rs_reduction;\n'
         '#endif\n'),
    # ---- tcp_pcb_lists[]: its initialiser takes the addresses of the (now
    # thread-local) list heads, which are not constants; make it a TLS array
    # that tcp_init() fills on each instance's thread.
    Edit('core/tcp.c', 'tcp_pcb_lists definition (TLS array)',
         'struct tcp_pcb **const tcp_pcb_lists[] = {&tcp_listen_pcbs.pcbs, &tcp_bound_pcbs,\n'
         '         &tcp_active_pcbs, &tcp_tw_pcbs\n'
         '};\n',
         '/* dpsock: thread-local, filled by tcp_init() (the list heads are TLS) */\n'
         '_Thread_local struct tcp_pcb **tcp_pcb_lists[NUM_TCP_PCB_LISTS];\n'),
    Edit('core/tcp.c', 'tcp_init fills tcp_pcb_lists',
         'tcp_init(void)\n{\n',
         'tcp_init(void)\n{\n'
         '  /* dpsock: per-thread list of the per-thread pcb list heads */\n'
         '  tcp_pcb_lists[0] = &tcp_listen_pcbs.pcbs;\n'
         '  tcp_pcb_lists[1] = &tcp_bound_pcbs;\n'
         '  tcp_pcb_lists[2] = &tcp_active_pcbs;\n'
         '  tcp_pcb_lists[3] = &tcp_tw_pcbs;\n'),
    Edit('include/lwip/priv/tcp_priv.h', 'tcp_pcb_lists extern (TLS array)',
         'extern struct tcp_pcb ** const tcp_pcb_lists[NUM_TCP_PCB_LISTS];',
         'extern _Thread_local struct tcp_pcb **tcp_pcb_lists[NUM_TCP_PCB_LISTS];'),

    # ---- fix 003d34ee (bug #51447): the TCP_SEQ_* comparisons converted an
    # out-of-range u32 difference to s32. Compare with unsigned arithmetic
    # only; the results are those of the two's-complement reading.
    Edit('include/lwip/priv/tcp_priv.h', 'TCP_SEQ_* without signed conversion',
         '#define TCP_SEQ_LT(a,b)     ((s32_t)((u32_t)(a) - (u32_t)(b)) < 0)\n'
         '#define TCP_SEQ_LEQ(a,b)    ((s32_t)((u32_t)(a) - (u32_t)(b)) <= 0)\n'
         '#define TCP_SEQ_GT(a,b)     ((s32_t)((u32_t)(a) - (u32_t)(b)) > 0)\n'
         '#define TCP_SEQ_GEQ(a,b)    ((s32_t)((u32_t)(a) - (u32_t)(b)) >= 0)\n',
         '/* dpsock fix (upstream 003d34ee, bug #51447): unsigned arithmetic only.\n'
         ' * a < b  <=> the difference a-b has its top bit set;\n'
         ' * a > b  <=> a-b is in [1, 2^31-1]. */\n'
         '#define TCP_SEQ_LT(a,b)     ((((u32_t)(a) - (u32_t)(b)) & 0x80000000U) != 0)\n'
         '#define TCP_SEQ_GT(a,b)     ((u32_t)((u32_t)(a) - (u32_t)(b) - 1U) < 0x7FFFFFFFU)\n'
         '#define TCP_SEQ_LEQ(a,b)    (!TCP_SEQ_GT(a,b))\n'
         '#define TCP_SEQ_GEQ(a,b)    (!TCP_SEQ_LT(a,b))\n'),

    # ---- 239918cc: initial RTO configurable (2.1.3 hard-codes 3 s).
    Edit('include/lwip/priv/tcp_priv.h', 'LWIP_TCP_RTO_TIME default',
         '#ifndef TCP_TMR_INTERVAL\n',
         '/* dpsock (upstream 239918cc): initial retransmission timeout in ms */\n'
         '#ifndef LWIP_TCP_RTO_TIME\n#define LWIP_TCP_RTO_TIME 3000\n#endif\n\n'
         '#ifndef TCP_TMR_INTERVAL\n'),
    Edit('core/tcp.c', 'initial RTO from LWIP_TCP_RTO_TIME',
         '    pcb->rto = 3000 / TCP_SLOW_INTERVAL;\n'
         '    pcb->sv = 3000 / TCP_SLOW_INTERVAL;\n',
         '    /* dpsock (upstream 239918cc): configurable initial RTO */\n'
         '    pcb->rto = LWIP_TCP_RTO_TIME / TCP_SLOW_INTERVAL;\n'
         '    pcb->sv = LWIP_TCP_RTO_TIME / TCP_SLOW_INTERVAL;\n'),

    # ---- RTO floor: 2.1.3 has none, and with 50 ms slow-timer ticks a LAN
    # RTT drives the RTO down to one tick, so a delayed ACK or a scheduling
    # hiccup on the peer triggers spurious retransmissions. Clamp it to
    # LWIP_TCP_RTO_MIN ms (Linux uses 200 ms).
    Edit('core/tcp_in.c', 'RTO floor after an ACK of new data',
         '      /* Reset the retransmission time-out. */\n'
         '      pcb->rto = (s16_t)((pcb->sa >> 3) + pcb->sv);\n',
         '      /* Reset the retransmission time-out. */\n'
         '      pcb->rto = (s16_t)((pcb->sa >> 3) + pcb->sv);\n'
         '      /* dpsock: RTO floor */\n'
         '      if (pcb->rto < LWIP_TCP_RTO_MIN / TCP_SLOW_INTERVAL) {\n'
         '        pcb->rto = LWIP_TCP_RTO_MIN / TCP_SLOW_INTERVAL;\n'
         '      }\n'),
    Edit('core/tcp_in.c', 'RTO floor after an RTT sample',
         '      pcb->sv = (s16_t)(pcb->sv + m);\n'
         '      pcb->rto = (s16_t)((pcb->sa >> 3) + pcb->sv);\n',
         '      pcb->sv = (s16_t)(pcb->sv + m);\n'
         '      pcb->rto = (s16_t)((pcb->sa >> 3) + pcb->sv);\n'
         '      /* dpsock: RTO floor */\n'
         '      if (pcb->rto < LWIP_TCP_RTO_MIN / TCP_SLOW_INTERVAL) {\n'
         '        pcb->rto = LWIP_TCP_RTO_MIN / TCP_SLOW_INTERVAL;\n'
         '      }\n'),
    Edit('include/lwip/priv/tcp_priv.h', 'LWIP_TCP_RTO_MIN default',
         '#ifndef LWIP_TCP_RTO_TIME\n',
         '/* dpsock: floor of the retransmission timeout in ms */\n'
         '#ifndef LWIP_TCP_RTO_MIN\n#define LWIP_TCP_RTO_MIN 0\n#endif\n\n'
         '#ifndef LWIP_TCP_RTO_TIME\n'),

    # ---- fix adbc5b5f: in SYN_RCVD a segment with SYN+ACK went down the ACK
    # path into tcp_receive(), which then treated the SYN as sequence space
    # (and could corrupt ->ooseq). Handle any SYN first: a retransmitted SYN
    # gets our SYN|ACK again, anything else with SYN is dropped.
    Edit('core/tcp_in.c', 'SYN_RCVD: SYN checked before ACK',
         '    case SYN_RCVD:\n'
         '      if (flags & TCP_ACK) {\n',
         '    case SYN_RCVD:\n'
         '      /* dpsock fix (upstream adbc5b5f): never accept a SYN as data */\n'
         '      if (flags & TCP_SYN) {\n'
         '        if (seqno == pcb->rcv_nxt - 1) {\n'
         '          /* the peer sent its SYN again: answer with our SYN|ACK again */\n'
         '          tcp_rexmit(pcb);\n'
         '        }\n'
         '      } else if (flags & TCP_ACK) {\n'),
    Edit('core/tcp_in.c', 'SYN_RCVD: old SYN branch removed',
         '      } else if ((flags & TCP_SYN) && (seqno == pcb->rcv_nxt - 1)) {\n'
         '        /* Looks like another copy of the SYN - retransmit our SYN-ACK */\n'
         '        tcp_rexmit(pcb);\n'
         '      }\n'
         '      break;\n',
         '      }\n'
         '      break;\n'),

    # ---- fix b1d3dcb8: an ACK that carries data (or a window update) is not a
    # duplicate ACK, but it must not reset the dupack count either: with
    # pipelined bidirectional traffic every ACK from Linux carries data, so
    # fast retransmit never fired. Only an ACK of new data resets it (below).
    Edit('core/tcp_in.c', 'dupack count kept across ACKs with data',
         '      if (!found_dupack) {\n'
         '        pcb->dupacks = 0;\n'
         '      }\n',
         '      /* dpsock fix (upstream b1d3dcb8): do not reset dupacks here */\n'
         '      LWIP_UNUSED_ARG(found_dupack);\n'),

    # ---- fix 574bd6e5 (bug #56397): an out-of-sequence segment could be put
    # on ->ooseq extending past the right edge of the receive window (only the
    # append-at-the-tail path trimmed it); once in order, rcv_wnd underflowed
    # ("tcp_receive: ooseq tcplen > rcv_wnd"). Trim it to the window before
    # any of the insertion paths sees it.
    Edit('core/tcp_in.c', 'ooseq segment trimmed to the receive window',
         '        /* We get here if the incoming segment is out-of-sequence. */\n'
         '\n'
         '#if TCP_QUEUE_OOSEQ\n',
         '        /* We get here if the incoming segment is out-of-sequence. */\n'
         '\n'
         '#if TCP_QUEUE_OOSEQ\n'
         '        /* dpsock fix (upstream 574bd6e5, bug #56397): keep ->ooseq inside the window */\n'
         '        if (TCP_SEQ_GT(seqno + TCP_TCPLEN(&inseg), pcb->rcv_nxt + pcb->rcv_wnd)) {\n'
         '          if (TCPH_FLAGS(inseg.tcphdr) & TCP_FIN) {\n'
         '            /* the FIN lies beyond the window: drop it with the data */\n'
         '            TCPH_FLAGS_SET(inseg.tcphdr, TCPH_FLAGS(inseg.tcphdr) & ~(unsigned int)TCP_FIN);\n'
         '          }\n'
         '          inseg.len = (u16_t)(pcb->rcv_nxt + pcb->rcv_wnd - seqno);\n'
         '          if (TCPH_FLAGS(inseg.tcphdr) & TCP_SYN) {\n'
         '            inseg.len -= 1;\n'
         '          }\n'
         '          pbuf_realloc(inseg.p, inseg.len);\n'
         '          tcplen = TCP_TCPLEN(&inseg);\n'
         '          LWIP_ASSERT("tcp_receive: ooseq segment not trimmed to rcv_wnd",\n'
         '                      (seqno + tcplen) == (pcb->rcv_nxt + pcb->rcv_wnd));\n'
         '        }\n'),

    # ---- fix 3666dcc6: the RST answering a segment that matched no pcb was
    # routed by destination address, so with several netifs it could leave
    # through another interface than the one the segment came in on. Send it
    # back through the input netif. (tcp_rst() is called with pcb == NULL only
    # from tcp_input() for that case.)
    Edit('core/tcp_out.c', 'no-pcb RST leaves through the input netif',
         '  LWIP_ASSERT("tcp_output_control_segment: invalid pbuf", p != NULL);\n'
         '\n'
         '  netif = tcp_route(pcb, src, dst);\n',
         '  LWIP_ASSERT("tcp_output_control_segment: invalid pbuf", p != NULL);\n'
         '\n'
         '  /* dpsock fix (upstream 3666dcc6): answer a segment without a pcb on\n'
         '     the netif it arrived on */\n'
         '  if ((pcb == NULL) && (ip_current_input_netif() != NULL)) {\n'
         '    netif = ip_current_input_netif();\n'
         '  } else {\n'
         '    netif = tcp_route(pcb, src, dst);\n'
         '  }\n'),

    # ---- TIME_WAIT reuse (lwip.md "TIME_WAIT interop", unikraft/lib-lwip#76):
    # lwIP follows RFC 1337 and answers a SYN in TIME_WAIT with an ACK (or RST
    # when in window); a Linux client reusing the 4-tuple then stalls for up
    # to 2*MSL. Like Linux (tcp_timewait_state_process), a pure SYN whose
    # sequence number is beyond rcv_nxt ends TIME_WAIT and goes to the
    # listener. tcp_timewait_input() now returns 1 when it freed the pcb.
    # ---- instance teardown: the pending timeouts (cyclic timers, TCP timer)
    # are allocated from the per-thread allocator but the list head is static
    # to timeouts.c. Append a function that frees them all, so that
    # dpsock_lwip_instance_fini() leaves nothing allocated.
    Edit('core/timeouts.c', 'dpsock_lwip_timeouts_fini() appended',
         '#endif /* LWIP_TIMERS && !LWIP_TIMERS_CUSTOM */\n',
         '#endif /* LWIP_TIMERS && !LWIP_TIMERS_CUSTOM */\n'
         '\n'
         '#if LWIP_TIMERS && !LWIP_TIMERS_CUSTOM\n'
         '/* dpsock: free every pending timeout of this thread\'s instance */\n'
         'void\n'
         'dpsock_lwip_timeouts_fini(void)\n'
         '{\n'
         '  while (next_timeout != NULL) {\n'
         '    struct sys_timeo *t = next_timeout;\n'
         '    next_timeout = t->next;\n'
         '    memp_free(MEMP_SYS_TIMEOUT, t);\n'
         '  }\n'
         '#if LWIP_TCP\n'
         '  tcpip_tcp_timer_active = 0;\n'
         '#endif\n'
         '}\n'
         '#endif\n'),

    Edit('core/tcp_in.c', 'TIME_WAIT reuse: prototype',
         'static void tcp_timewait_input(struct tcp_pcb *pcb);\n',
         'static int tcp_timewait_input(struct tcp_pcb *pcb);\n'),
    Edit('core/tcp_in.c', 'TIME_WAIT reuse: definition',
         'static void\ntcp_timewait_input(struct tcp_pcb *pcb)\n{\n',
         'static int\ntcp_timewait_input(struct tcp_pcb *pcb)\n{\n'),
    Edit('core/tcp_in.c', 'TIME_WAIT reuse: SYN beyond rcv_nxt',
         '  if (flags & TCP_RST) {\n'
         '    return;\n'
         '  }\n'
         '\n'
         '  LWIP_ASSERT("tcp_timewait_input: invalid pcb", pcb != NULL);\n'
         '\n'
         '  /* - fourth, check the SYN bit, */\n'
         '  if (flags & TCP_SYN) {\n',
         '  if (flags & TCP_RST) {\n'
         '    return 0;\n'
         '  }\n'
         '\n'
         '  LWIP_ASSERT("tcp_timewait_input: invalid pcb", pcb != NULL);\n'
         '\n'
         '  /* - fourth, check the SYN bit, */\n'
         '  if (flags & TCP_SYN) {\n'
         '    /* dpsock: a new connection reusing the 4-tuple (Linux behaviour) */\n'
         '    if (((flags & TCP_ACK) == 0) && TCP_SEQ_GT(seqno, pcb->rcv_nxt)) {\n'
         '      tcp_pcb_remove(&tcp_tw_pcbs, pcb);\n'
         '      tcp_free(pcb);\n'
         '      return 1;\n'
         '    }\n'),
    Edit('core/tcp_in.c', 'TIME_WAIT reuse: return after RST',
         '      tcp_rst(pcb, ackno, seqno + tcplen, ip_current_dest_addr(),\n'
         '              ip_current_src_addr(), tcphdr->dest, tcphdr->src);\n'
         '      return;\n'
         '    }\n'
         '  } else if (flags & TCP_FIN) {\n',
         '      tcp_rst(pcb, ackno, seqno + tcplen, ip_current_dest_addr(),\n'
         '              ip_current_src_addr(), tcphdr->dest, tcphdr->src);\n'
         '      return 0;\n'
         '    }\n'
         '  } else if (flags & TCP_FIN) {\n'),
    Edit('core/tcp_in.c', 'TIME_WAIT reuse: final return',
         '    /* Acknowledge data, FIN or out-of-window SYN */\n'
         '    tcp_ack_now(pcb);\n'
         '    tcp_output(pcb);\n'
         '  }\n'
         '  return;\n'
         '}\n',
         '    /* Acknowledge data, FIN or out-of-window SYN */\n'
         '    tcp_ack_now(pcb);\n'
         '    tcp_output(pcb);\n'
         '  }\n'
         '  return 0;\n'
         '}\n'),
    Edit('core/tcp_in.c', 'TIME_WAIT reuse: caller falls through to listeners',
         '        {\n'
         '          tcp_timewait_input(pcb);\n'
         '        }\n'
         '        pbuf_free(p);\n'
         '        return;\n',
         '        {\n'
         '          if (tcp_timewait_input(pcb)) {\n'
         '            /* dpsock: TIME_WAIT pcb freed; the SYN goes to a listener */\n'
         '            pcb = NULL;\n'
         '            break;\n'
         '          }\n'
         '        }\n'
         '        pbuf_free(p);\n'
         '        return;\n'),

    # ---- TCP options: tcp_parseopt() reads an option's length byte before
    # it checks that the byte is inside the options, so a segment whose
    # options end with the kind byte of an option that has a length (MSS,
    # window scale, timestamps, SACK-permitted, any unknown kind) made it
    # read one byte past the TCP header: past the end of the frame when the
    # segment carries no data (found by test/fuzz/fuzz_frames). A byte
    # beyond the options reads as EOL, which ends the parsing.
    Edit('core/tcp_in.c', 'option bytes read only inside the options',
         '  u16_t optidx = tcp_optidx++;\n'
         '  if ((tcphdr_opt2 == NULL) || (optidx < tcphdr_opt1len)) {\n',
         '  u16_t optidx = tcp_optidx++;\n'
         '  /* dpsock fix: nothing past the options is read */\n'
         '  if (optidx >= tcphdr_optlen) {\n'
         '    return LWIP_TCP_OPT_EOL;\n'
         '  }\n'
         '  if ((tcphdr_opt2 == NULL) || (optidx < tcphdr_opt1len)) {\n'),

    # ---- trimming the left edge: tcp_receive() decides that a segment
    # starts before rcv_nxt and ends after it with
    # TCP_SEQ_BETWEEN(rcv_nxt, seqno + 1, seqno + tcplen - 1). For a bare FIN
    # (tcplen 1) that range is empty, yet modulo 2^32 the test holds when
    # rcv_nxt - seqno is exactly 2^31; the trim then asserted "insane
    # offset!" (dpsockd aborts): a peer could stop the daemon with one FIN
    # whose sequence number is rcv_nxt + 2^31 (found by
    # test/fuzz/fuzz_frames). Test the offset itself: 0 < rcv_nxt - seqno
    # < tcplen, in unsigned arithmetic.
    Edit('core/tcp_in.c', 'left-edge trim only for 0 < rcv_nxt - seqno < tcplen',
         '    if (TCP_SEQ_BETWEEN(pcb->rcv_nxt, seqno + 1, seqno + tcplen - 1)) {\n'
         '      /* Trimming the first edge is done by pushing the payload\n',
         '    /* dpsock fix: 0 < rcv_nxt - seqno < tcplen (> 0 here), unsigned */\n'
         '    if ((u32_t)(pcb->rcv_nxt - seqno) - 1U < (u32_t)tcplen - 1U) {\n'
         '      /* Trimming the first edge is done by pushing the payload\n'),

    # ---- a segment no pcb of this instance matches may belong to another
    # worker's passive connection (dpsock_lwip_hooks.h): offer it on before
    # answering with RST (or ignoring an RST).
    Edit('core/tcp_in.c', 'no pcb: another worker may own the connection',
         '    LWIP_DEBUGF(TCP_RST_DEBUG, ("tcp_input: no PCB match found, resetting.\\n"));\n',
         '    LWIP_DEBUGF(TCP_RST_DEBUG, ("tcp_input: no PCB match found, resetting.\\n"));\n'
         '    /* dpsock: maybe another worker\'s connection (dpsock_lwip_hooks.h) */\n'
         '    if (dpsock_lwip_tcp_unmatched(p, tcphdr)) {\n'
         '      pbuf_free(p);\n'
         '      return;\n'
         '    }\n'),

    # ---- ip6_input reads an options or routing header's length byte
    # before it checks that the header's first 8 bytes are there: a packet
    # that ends inside (or right at) such a header was read past its end
    # (frame fuzzer, frames/crash-ip6_ext_hlen_past_end). The length is
    # read only once they are; the check that follows drops the packet.
    Edit('core/ipv6/ip6.c', 'ip6_input: a hop-by-hop header\'s length within the packet',
         '      hlen = (u16_t)(8 * (1 + hbh_hdr->_hlen));\n',
         '      hlen = (u16_t)(p->len < 8 ? 8 : 8 * (1 + hbh_hdr->_hlen)); /* dpsock: in bounds */\n'),
    Edit('core/ipv6/ip6.c', 'ip6_input: a destination options header\'s length within the packet',
         '      hlen = 8 * (1 + dest_hdr->_hlen);\n',
         '      hlen = (u16_t)(p->len < 8 ? 8 : 8 * (1 + dest_hdr->_hlen)); /* dpsock: in bounds */\n'),
    Edit('core/ipv6/ip6.c', 'ip6_input: a routing header\'s length within the packet',
         '      hlen = 8 * (1 + rout_hdr->_hlen);\n',
         '      hlen = (u16_t)(p->len < 8 ? 8 : 8 * (1 + rout_hdr->_hlen)); /* dpsock: in bounds */\n'),

    # ---- IPv6 multicast (dpsock_lwip_hooks.h): a datagram to a group the
    # port joined is for this host; lwIP's MLD is off (stack/mcast/mchost.c is the
    # host), so without this only all-nodes and solicited-node would pass.
    Edit('core/ipv6/ip6.c', 'IPv6 multicast hook: its prototype',
         '#include "lwip/mld6.h"\n',
         '#include "lwip/mld6.h"\n#include "dpsock_lwip_hooks.h"\n'),
    Edit('core/ipv6/ip6.c', 'IPv6 multicast: the groups dpsock joined',
         '      netif = inp;\n'
         '    }\n'
         '#if LWIP_IPV6_MLD\n'
         '    else if (mld6_lookfor_group(inp, ip6_current_dest_addr())) {\n',
         '      netif = inp;\n'
         '    }\n'
         '    else if (dpsock_lwip_ip6_mcast_joined(inp, ip6_current_dest_addr())) {\n'
         '      netif = inp; /* dpsock: a group the port joined */\n'
         '    }\n'
         '#if LWIP_IPV6_MLD\n'
         '    else if (mld6_lookfor_group(inp, ip6_current_dest_addr())) {\n'),

    # ---- UDP delivery that lwIP does not have (dpsock_lwip_hooks.h): a
    # multicast or broadcast datagram goes to every socket it matches, each
    # with its own source filter (stack/mcast/mcast.c); a unicast one to one
    # socket of a SO_REUSEPORT group, hashed. The checksum was checked and
    # the header removed just before.
    Edit('core/udp.c', 'UDP delivery hook: its prototype',
         '#include "lwip/dhcp.h"\n',
         '#include "lwip/dhcp.h"\n#include "dpsock_lwip_hooks.h"\n'),
    Edit('core/udp.c', 'UDP fan-out and SO_REUSEPORT delivery',
         '    if (pcb != NULL) {\n'
         '      MIB2_STATS_INC(mib2.udpindatagrams);\n',
         '    if (pcb != NULL && dpsock_lwip_udp_deliver(p, inp, pcb, src, broadcast)) {\n'
         '      goto end; /* dpsock delivered (and freed) it */\n'
         '    }\n'
         '    if (pcb != NULL) {\n'
         '      MIB2_STATS_INC(mib2.udpindatagrams);\n'),
]


# The performance edits (pcb index, segmentation offload) live in their own
# list, applied after the ones above: lwip/transform_perf.py.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transform_perf  # noqa: E402

EDITS += [Edit(*e) for e in transform_perf.EDITS]

# ---- loss recovery, congestion control and RTT (lwip/tcp_rec.c, tcp_cc.c;
# README.md "Loss recovery"). These edits only hook lwIP into those files and
# take out the parts of the 2.1.3 sender they replace; they are kept apart
# from EDITS above so that other changes to the same files merge cleanly.
RECOVERY_EDITS = [
    # per-connection and per-segment state
    Edit('include/lwip/tcp.h', 'recovery: header',
         '#include "lwip/ip6_addr.h"\n',
         '#include "lwip/ip6_addr.h"\n'
         '#include "dpsock_tcp_rec.h" /* dpsock: loss recovery state */\n'),
    Edit('include/lwip/tcp.h', 'recovery: state in tcp_pcb',
         '  u8_t snd_scale;\n  u8_t rcv_scale;\n#endif\n};\n',
         '  u8_t snd_scale;\n  u8_t rcv_scale;\n#endif\n'
         '  /* dpsock: loss recovery, congestion control, RTT (tcp_rec.c) */\n'
         '  struct dpsock_tcp_rec rec;\n'
         '};\n'),
    Edit('include/lwip/priv/tcp_priv.h', 'recovery: state in tcp_seg',
         '  struct tcp_hdr *tcphdr;  /* the TCP header */\n};\n',
         '  struct tcp_hdr *tcphdr;  /* the TCP header */\n'
         '  struct dpsock_seg_rec rec; /* dpsock: scoreboard entry (tcp_rec.c) */\n'
         '};\n'),
    Edit('core/tcp_out.c', 'recovery: new segment',
         '  seg->flags = optflags;\n  seg->next = NULL;\n',
         '  seg->flags = optflags;\n  seg->next = NULL;\n'
         '  dpsock_tcp_rec_seg_init(seg);\n'),
    Edit('core/tcp.c', 'recovery: new pcb',
         '    pcb->ssthresh = TCP_SND_BUF;\n',
         '    pcb->ssthresh = TCP_SND_BUF;\n'
         '    dpsock_tcp_rec_pcb_init(pcb); /* dpsock: congestion control, ssthresh */\n'),
    Edit('core/tcp.c', 'recovery: pcb freed',
         '  tcp_ext_arg_invoke_callbacks_destroyed(pcb->ext_args);\n#endif\n'
         '  memp_free(MEMP_TCP_PCB, pcb);\n',
         '  tcp_ext_arg_invoke_callbacks_destroyed(pcb->ext_args);\n#endif\n'
         '  dpsock_tcp_rec_pcb_free(pcb); /* dpsock: off the timer heap */\n'
         '  memp_free(MEMP_TCP_PCB, pcb);\n'),
    Edit('core/tcp.c', 'recovery: queues purged',
         '    tcp_segs_free(pcb->unsent);\n    tcp_segs_free(pcb->unacked);\n'
         '    pcb->unacked = pcb->unsent = NULL;\n',
         '    tcp_segs_free(pcb->unsent);\n    tcp_segs_free(pcb->unacked);\n'
         '    pcb->unacked = pcb->unsent = NULL;\n'
         '    dpsock_tcp_rec_purge(pcb); /* dpsock: scoreboard and timers */\n'),

    # the RTO of a synchronized connection: everything not SACKed is
    # lost, retransmitted in place under cwnd (F-RTO, undo); SYN
    # retransmission stays lwIP's
    Edit('core/tcp.c', 'recovery: retransmission timeout',
         '        if (pcb->rtime >= pcb->rto) {\n'
         '          /* Time for a retransmission. */\n',
         '        if (pcb->rtime >= pcb->rto && dpsock_tcp_rec_rto(pcb)) {\n'
         '          /* dpsock: done by tcp_rec.c */\n'
         '        } else if (pcb->rtime >= pcb->rto) {\n'
         '          /* Time for a retransmission. */\n'),

    # options of each received segment: the echoed timestamp and the SACK
    # blocks (2.1.3 skips both)
    Edit('core/tcp_in.c', 'recovery: options reset per segment',
         '  LWIP_ASSERT("tcp_parseopt: invalid pcb", pcb != NULL);\n',
         '  LWIP_ASSERT("tcp_parseopt: invalid pcb", pcb != NULL);\n'
         '  dpsock_tcp_rx_opts.n_sack = 0; /* dpsock */\n'
         '  dpsock_tcp_rx_opts.ts = 0;\n'),
    Edit('core/tcp_in.c', 'recovery: TSecr kept',
         '          /* Advance to next option (6 bytes already read) */\n'
         '          tcp_optidx += LWIP_TCP_OPT_LEN_TS - 6;\n',
         '          /* dpsock: the echoed timestamp (Eifel, RACK) */\n'
         '          {\n'
         '            u32_t tsecr = tcp_get_next_optbyte();\n'
         '            tsecr |= (tcp_get_next_optbyte() << 8);\n'
         '            tsecr |= (tcp_get_next_optbyte() << 16);\n'
         '            tsecr |= ((u32_t)tcp_get_next_optbyte() << 24);\n'
         '            dpsock_tcp_rx_opts.tsecr = lwip_ntohl(tsecr);\n'
         '            dpsock_tcp_rx_opts.ts = 1;\n'
         '          }\n'),
    Edit('core/tcp_in.c', 'recovery: SACK blocks parsed',
         '#endif /* LWIP_TCP_SACK_OUT */\n'
         '        default:\n',
         '#endif /* LWIP_TCP_SACK_OUT */\n'
         '        case 5: /* dpsock: SACK (RFC 2018), for tcp_rec.c */\n'
         '          data = tcp_get_next_optbyte();\n'
         '          if (data < 2 || (tcp_optidx - 2 + data) > tcphdr_optlen) {\n'
         '            return;\n'
         '          }\n'
         '          {\n'
         '            u8_t i, k, n = (u8_t)((data - 2) / 8);\n'
         '            for (i = 0; i < n; i++) {\n'
         '              u32_t edge[2] = { 0, 0 };\n'
         '              for (k = 0; k < 8; k++) {\n'
         '                edge[k / 4] = (edge[k / 4] << 8) | tcp_get_next_optbyte();\n'
         '              }\n'
         '              if (dpsock_tcp_rx_opts.n_sack < DPSOCK_TCP_SACK_RX_MAX) {\n'
         '                dpsock_tcp_rx_opts.sack[dpsock_tcp_rx_opts.n_sack][0] = edge[0];\n'
         '                dpsock_tcp_rx_opts.sack[dpsock_tcp_rx_opts.n_sack][1] = edge[1];\n'
         '                dpsock_tcp_rx_opts.n_sack++;\n'
         '              }\n'
         '            }\n'
         '            tcp_optidx += (u16_t)(data - 2 - n * 8);\n'
         '          }\n'
         '          break;\n'
         '        default:\n'),

    # the ACK path of tcp_receive(): tcp_rec.c sees every ACK before lwIP
    # frees what it acknowledges, and owns duplicate ACKs, cwnd, ssthresh
    # and the RTT estimate
    Edit('core/tcp_in.c', 'recovery: ACK hook',
         '    /* (From Stevens TCP/IP Illustrated Vol II, p970.) Its only a\n',
         '    /* dpsock: scoreboard, loss detection, cwnd (tcp_rec.c) */\n'
         '    dpsock_tcp_rec_on_ack(pcb, ackno, tcplen,\n'
         '                          pcb->snd_wl2 + pcb->snd_wnd != right_wnd_edge);\n'
         '\n'
         '    /* (From Stevens TCP/IP Illustrated Vol II, p970.) Its only a\n'),
    Edit('core/tcp_in.c', 'recovery: no lwIP fast retransmit',
         '            if (pcb->lastack == ackno) {\n'
         '              found_dupack = 1;\n'
         '              if ((u8_t)(pcb->dupacks + 1) > pcb->dupacks) {\n'
         '                ++pcb->dupacks;\n'
         '              }\n'
         '              if (pcb->dupacks > 3) {\n'
         '                /* Inflate the congestion window */\n'
         '                TCP_WND_INC(pcb->cwnd, pcb->mss);\n'
         '              }\n'
         '              if (pcb->dupacks >= 3) {\n'
         '                /* Do fast retransmit (checked via TF_INFR, not via dupacks count) */\n'
         '                tcp_rexmit_fast(pcb);\n'
         '              }\n'
         '            }\n',
         '            if (pcb->lastack == ackno) {\n'
         '              /* dpsock: counted and acted on by tcp_rec.c */\n'
         '              found_dupack = 1;\n'
         '            }\n'),
    Edit('core/tcp_in.c', 'recovery: no lwIP recovery exit',
         '      /* Reset the "IN Fast Retransmit" flag, since we are no longer\n'
         '         in fast retransmit. Also reset the congestion window to the\n'
         '         slow start threshold. */\n'
         '      if (pcb->flags & TF_INFR) {\n'
         '        tcp_clear_flags(pcb, TF_INFR);\n'
         '        pcb->cwnd = pcb->ssthresh;\n'
         '        pcb->bytes_acked = 0;\n'
         '      }\n',
         '      /* dpsock: recovery ends in tcp_rec.c */\n'),
    Edit('core/tcp_in.c', 'recovery: RTO from tcp_rec.c',
         '      /* Reset the retransmission time-out. */\n'
         '      pcb->rto = (s16_t)((pcb->sa >> 3) + pcb->sv);\n'
         '      /* dpsock: RTO floor */\n'
         '      if (pcb->rto < LWIP_TCP_RTO_MIN / TCP_SLOW_INTERVAL) {\n'
         '        pcb->rto = LWIP_TCP_RTO_MIN / TCP_SLOW_INTERVAL;\n'
         '      }\n',
         '      /* dpsock: tcp_rec.c resets the RTO (microsecond RTT) */\n'),
    Edit('core/tcp_in.c', 'recovery: cwnd from tcp_cc.c',
         '      /* Update the congestion control variables (cwnd and\n'
         '         ssthresh). */\n'
         '      if (pcb->state >= ESTABLISHED) {\n'
         '        if (pcb->cwnd < pcb->ssthresh) {\n'
         '          tcpwnd_size_t increase;\n'
         '          /* limit to 1 SMSS segment during period following RTO */\n'
         '          u8_t num_seg = (pcb->flags & TF_RTO) ? 1 : 2;\n'
         '          /* RFC 3465, section 2.2 Slow Start */\n'
         '          increase = LWIP_MIN(acked, (tcpwnd_size_t)(num_seg * pcb->mss));\n'
         '          TCP_WND_INC(pcb->cwnd, increase);\n'
         '          LWIP_DEBUGF(TCP_CWND_DEBUG, ("tcp_receive: slow start cwnd %"TCPWNDSIZE_F"\\n", pcb->cwnd));\n'
         '        } else {\n'
         '          /* RFC 3465, section 2.1 Congestion Avoidance */\n'
         '          TCP_WND_INC(pcb->bytes_acked, acked);\n'
         '          if (pcb->bytes_acked >= pcb->cwnd) {\n'
         '            pcb->bytes_acked = (tcpwnd_size_t)(pcb->bytes_acked - pcb->cwnd);\n'
         '            TCP_WND_INC(pcb->cwnd, pcb->mss);\n'
         '          }\n'
         '          LWIP_DEBUGF(TCP_CWND_DEBUG, ("tcp_receive: congestion avoidance cwnd %"TCPWNDSIZE_F"\\n", pcb->cwnd));\n'
         '        }\n'
         '      }\n',
         '      /* dpsock: cwnd and ssthresh are tcp_cc.c\'s */\n'
         '      LWIP_UNUSED_ARG(acked);\n'),
    Edit('core/tcp_in.c', 'recovery: no tick RTT estimate (declaration)',
         '  s16_t m;\n  u32_t right_wnd_edge;\n',
         '  u32_t right_wnd_edge;\n'),
    Edit('core/tcp_in.c', 'recovery: no tick RTT estimate',
         '    if (pcb->rttest && TCP_SEQ_LT(pcb->rtseq, ackno)) {\n'
         '      /* diff between this shouldn\'t exceed 32K since this are tcp timer ticks\n'
         '         and a round-trip shouldn\'t be that long... */\n'
         '      m = (s16_t)(tcp_ticks - pcb->rttest);\n',
         '    /* dpsock: RTT in microseconds from tcp_rec.c; this is dead code */\n'
         '    if (0) {\n'
         '      s16_t m = (s16_t)(tcp_ticks - pcb->rttest);\n'),
    # the initial window from lwipopts.h (10 segments, RFC 6928)
    Edit('core/tcp_in.c', 'recovery: initial window configurable',
         '#define LWIP_TCP_CALC_INITIAL_CWND(mss) ((tcpwnd_size_t)LWIP_MIN((4U * (mss)), LWIP_MAX((2U * (mss)), 4380U)))\n',
         '#ifndef LWIP_TCP_CALC_INITIAL_CWND /* dpsock: lwipopts.h sets it */\n'
         '#define LWIP_TCP_CALC_INITIAL_CWND(mss) ((tcpwnd_size_t)LWIP_MIN((4U * (mss)), LWIP_MAX((2U * (mss)), 4380U)))\n'
         '#endif\n'),
    # the handshake's RTT, and the SYN leaves the scoreboard
    Edit('core/tcp_in.c', 'recovery: SYN acknowledged',
         '          pcb->unacked = rseg->next;\n        }\n        tcp_seg_free(rseg);\n',
         '          pcb->unacked = rseg->next;\n        }\n'
         '        dpsock_tcp_rec_syn_acked(pcb, rseg); /* dpsock */\n'
         '        tcp_seg_free(rseg);\n'),

    # tcp_output(): holes first, then new data under pipe <= cwnd (and
    # pacing); after, cwnd validation and the tail loss probe
    Edit('core/tcp_out.c', 'recovery: retransmissions first',
         '  if (tcp_input_pcb == pcb) {\n    return ERR_OK;\n  }\n\n'
         '  wnd = LWIP_MIN(pcb->snd_wnd, pcb->cwnd);\n',
         '  if (tcp_input_pcb == pcb) {\n    return ERR_OK;\n  }\n\n'
         '  /* dpsock: the holes deemed lost go before new data (tcp_rec.c) */\n'
         '  dpsock_tcp_rec_output(pcb);\n\n'
         '  wnd = LWIP_MIN(pcb->snd_wnd, pcb->cwnd);\n'),
    Edit('core/tcp_out.c', 'recovery: new data under the pipe (first segment)',
         '  if (lwip_ntohl(seg->tcphdr->seqno) - pcb->lastack + seg->len > wnd) {\n',
         '  if (!dpsock_tcp_rec_can_send(pcb, seg, wnd)) { /* dpsock: pipe, rwnd, pacing */\n'),
    Edit('core/tcp_out.c', 'recovery: persist timer when the peer window holds',
         '    if (wnd == pcb->snd_wnd && pcb->unacked == NULL && pcb->persist_backoff == 0) {\n',
         '    if (dpsock_tcp_rec_rwnd_limited(pcb, seg) && pcb->unacked == NULL && pcb->persist_backoff == 0) {\n'),
    Edit('core/tcp_out.c', 'recovery: new data under the pipe (loop)',
         '  while (seg != NULL &&\n'
         '         lwip_ntohl(seg->tcphdr->seqno) - pcb->lastack + seg->len <= wnd) {\n',
         '  while (seg != NULL && dpsock_tcp_rec_can_send(pcb, seg, wnd)) {\n'),
    Edit('core/tcp_out.c', 'recovery: after output',
         'output_done:\n  tcp_clear_flags(pcb, TF_NAGLEMEMERR);\n',
         'output_done:\n  tcp_clear_flags(pcb, TF_NAGLEMEMERR);\n'
         '  dpsock_tcp_rec_output_done(pcb); /* dpsock: cwnd use, TLP */\n'),
    # every transmission stamped (send time, TSval, retransmission)
    Edit('core/tcp_out.c', 'recovery: segment sent',
         '  err = ip_output_if(seg->p, &pcb->local_ip, &pcb->remote_ip, pcb->ttl,\n'
         '                     pcb->tos, IP_PROTO_TCP, netif);\n'
         '  NETIF_RESET_HINTS(netif);\n',
         '  err = ip_output_if(seg->p, &pcb->local_ip, &pcb->remote_ip, pcb->ttl,\n'
         '                     pcb->tos, IP_PROTO_TCP, netif);\n'
         '  NETIF_RESET_HINTS(netif);\n'
         '  dpsock_tcp_rec_sent(pcb, seg); /* dpsock */\n'),
    # retransmission in place, for tcp_rec.c
    Edit('core/tcp_out.c', 'recovery: dpsock_tcp_output_seg() appended',
         '#endif /* LWIP_TCP */\n',
         '/* dpsock: send a segment of the unacked queue again, where it is */\n'
         'err_t\n'
         'dpsock_tcp_output_seg(struct tcp_pcb *pcb, struct tcp_seg *seg)\n'
         '{\n'
         '  struct netif *netif = tcp_route(pcb, &pcb->local_ip, &pcb->remote_ip);\n'
         '\n'
         '  if (netif == NULL) {\n'
         '    return ERR_RTE;\n'
         '  }\n'
         '  if (tcp_output_segment_busy(seg)) {\n'
         '    return ERR_INPROGRESS; /* its frame is still lent to the NIC */\n'
         '  }\n'
         '  TCPH_SET_FLAG(seg->tcphdr, TCP_ACK);\n'
         '  return tcp_output_segment(seg, pcb, netif);\n'
         '}\n'
         '\n'
         '#endif /* LWIP_TCP */\n'),
]
# after the performance edits: the window check of tcp_output() that
# "tso: tcp_output joins and fits" anchors on becomes the pipe check here
EDITS += RECOVERY_EDITS

# ---- IPv4 identification: each worker's lwIP instance counts its own
# ip_id. Two instances counting from the same start send datagrams with the
# same ids to one peer, whose reassembly may then mix fragments of two of
# them (RFC 6864 wants an id unique per source, destination and protocol
# while a datagram can live). dpsock_lwip_ip_id_init gives each instance a
# range of its own: ids first, first + 1 ... first + count - 1, again.
EDITS += [
    Edit('core/ipv4/ip4.c', 'ip_id: per-instance range',
         'static _Thread_local u16_t ip_id;\n',
         'static _Thread_local u16_t ip_id;\n'
         '/* dpsock: the range of ids of this instance (dpsock_lwip_ip_id_init) */\n'
         'static _Thread_local u16_t ip_id_first;\n'
         'static _Thread_local u32_t ip_id_count = 0x10000;\n'
         '\n'
         'void\n'
         'dpsock_lwip_ip_id_init(u16_t first, u32_t count)\n'
         '{\n'
         '  ip_id_first = first;\n'
         '  ip_id_count = count > 0 && count <= 0x10000 ? count : 0x10000;\n'
         '  ip_id = first;\n'
         '}\n'),
    Edit('core/ipv4/ip4.c', 'ip_id: next in the range',
         '    ++ip_id;\n',
         '    ip_id = (u16_t)(ip_id_first + ((u32_t)(u16_t)(ip_id - ip_id_first) + 1) % ip_id_count);\n'),
]


def fail(msg):
    sys.stderr.write('lwip/transform.py: error: %s\n' % msg)
    sys.exit(1)


def make_tls(text, path, decl):
    """Add _Thread_local to the one line that declares `decl`."""
    pat = re.compile(r'^([ \t]*)' + re.escape(decl) + r'([ \t]*(/\*.*)?)$', re.M)
    hits = pat.findall(text)
    if len(hits) != 1:
        fail('%s: expected exactly one declaration "%s", found %d '
             '(different lwIP version?)' % (path, decl, len(hits)))
    if decl.startswith('static '):
        new = 'static _Thread_local ' + decl[len('static '):]
    elif decl.startswith('extern '):
        new = 'extern _Thread_local ' + decl[len('extern '):]
    else:
        new = '_Thread_local ' + decl
    return pat.sub(lambda m: m.group(1) + new + m.group(2), text)


def apply_edit(text, e):
    n = text.count(e.old)
    if n != 1:
        fail('%s: edit "%s": anchor found %d times, expected 1 '
             '(different lwIP version?)' % (e.path, e.what, n))
    return text.replace(e.old, e.new)


def transform(rel, text):
    for decl in TLS_DECLS.get(rel, []):
        text = make_tls(text, rel, decl)
    for e in EDITS:
        if e.path == rel:
            text = apply_edit(text, e)
    return text


def write(path, text):
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write(text)
    os.replace(tmp, path)


def banner(rel):
    return ('/* Generated by dpsock lwip/transform.py from lwIP src/%s: '
            'do not edit. */\n' % rel)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--src', required=True, help='lwIP source root (contains src/)')
    ap.add_argument('--outdir', required=True)
    ap.add_argument('--expect', nargs='*', default=[],
                    help='output files the build expects (checked against ours)')
    a = ap.parse_args()

    src = os.path.join(a.src, 'src')
    if not os.path.isfile(os.path.join(src, 'core', 'tcp_in.c')):
        fail('lwIP source not found at %s: run scripts/setup' % a.src)

    ours = sorted([os.path.basename(s) for s in SOURCES] + [STAMP])
    if a.expect:
        theirs = sorted(os.path.basename(p) for p in a.expect)
        if theirs != ours:
            fail('lwip/meson.build lists outputs %s but the transform produces %s'
                 % (theirs, ours))

    known = set(SOURCES) | {p for p in list(TLS_DECLS) + [e.path for e in EDITS]
                            if p.startswith('include/')}
    for rel in list(TLS_DECLS) + [e.path for e in EDITS]:
        if rel not in known:
            fail('internal: %s is edited but not part of the build' % rel)

    os.makedirs(a.outdir, exist_ok=True)
    for rel in SOURCES:
        with open(os.path.join(src, rel), encoding='utf-8') as f:
            text = f.read()
        write(os.path.join(a.outdir, os.path.basename(rel)), banner(rel) + transform(rel, text))

    inc_out = os.path.join(a.outdir, INCLUDE_OUT)
    if os.path.isdir(inc_out):
        shutil.rmtree(inc_out)
    inc_src = os.path.join(src, 'include')
    done = set()
    for root, _dirs, files in os.walk(inc_src):
        for name in files:
            if not name.endswith('.h'):
                continue
            full = os.path.join(root, name)
            rel = os.path.relpath(full, src).replace(os.sep, '/')
            dst = os.path.join(a.outdir, INCLUDE_OUT, os.path.relpath(full, inc_src))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            with open(full, encoding='utf-8', errors='surrogateescape') as f:
                text = f.read()
            if rel in known:
                text = banner(rel) + transform(rel, text)
                done.add(rel)
            with open(dst, 'w', encoding='utf-8', errors='surrogateescape') as f:
                f.write(text)
    for rel in known:
        if rel.startswith('include/') and rel not in done:
            fail('%s: header not found in %s' % (rel, inc_src))

    write(os.path.join(a.outdir, STAMP),
          '/* lwIP include tree transformed into %s/ */\n' % INCLUDE_OUT)
    return 0


if __name__ == '__main__':
    sys.exit(main())
