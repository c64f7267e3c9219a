# SPDX-License-Identifier: BSD-3-Clause
"""Performance edits of lwIP 2.1.3 for dpsock, applied by transform.py after
its own EDITS (same rules: each names the exact text it expects, which must
occur exactly once).

Kept apart from transform.py's list so that the TCP behaviour edits (loss
recovery, congestion control) and these structural ones do not touch the same
lines:

  * the pcb index (pcb_index.c): a 4-tuple hash table over the active and
    TIME_WAIT pcbs, O(1) unlinking, TIME_WAIT in arrival order, a TIME_WAIT
    bound and early reuse. lwIP's linear lists made connection set-up cost
    grow with the number of TIME_WAIT pcbs (rate x 2 MSL).

  * super-segments (tso.c): tcp_output joins unsent segments into segments
    of up to 64 KiB for a netif that segments (TSO, or the netif's GSO), and
    splits one at a pbuf boundary when only part of it fits the window.

EDITS is a list of (path, what, old, new) tuples.
"""

EDITS = [
    # ---- pcb index: the links it keeps in every pcb (lwipopts.h defines
    # DPSOCK_TCP_PCB_FIELDS).
    ('include/lwip/tcp.h', 'pcb index: fields in struct tcp_pcb',
     '  /* KEEPALIVE counter */\n'
     '  u8_t keep_cnt_sent;\n',
     '  /* KEEPALIVE counter */\n'
     '  u8_t keep_cnt_sent;\n'
     '\n'
     '  /* dpsock: pcb index links (lwip/pcb_index.c) */\n'
     '  DPSOCK_TCP_PCB_FIELDS\n'),

    # ---- pcb index: TCP_REG / TCP_RMV keep the hash table and back links.
    ('include/lwip/priv/tcp_priv.h', 'pcb index: no list debugging',
     '#if TCP_DEBUG_PCB_LISTS\n'
     '#define TCP_REG(pcbs, npcb) do {\\\n',
     '#include "dpsock_lwip_pcb_index.h"\n'
     '#if TCP_DEBUG_PCB_LISTS\n'
     '#error "dpsock: TCP_REG/TCP_RMV are the pcb index\'s (lwip/pcb_index.c)"\n'
     '#define TCP_REG(pcbs, npcb) do {\\\n'),
    ('include/lwip/priv/tcp_priv.h', 'pcb index: TCP_REG and TCP_RMV',
     '#define TCP_REG(pcbs, npcb)                        \\\n'
     '  do {                                             \\\n'
     '    (npcb)->next = *pcbs;                          \\\n'
     '    *(pcbs) = (npcb);                              \\\n'
     '    tcp_timer_needed();                            \\\n'
     '  } while (0)\n'
     '\n'
     '#define TCP_RMV(pcbs, npcb)                        \\\n'
     '  do {                                             \\\n'
     '    if(*(pcbs) == (npcb)) {                        \\\n'
     '      (*(pcbs)) = (*pcbs)->next;                   \\\n'
     '    }                                              \\\n'
     '    else {                                         \\\n'
     '      struct tcp_pcb *tcp_tmp_pcb;                 \\\n'
     '      for (tcp_tmp_pcb = *pcbs;                    \\\n'
     '          tcp_tmp_pcb != NULL;                     \\\n'
     '          tcp_tmp_pcb = tcp_tmp_pcb->next) {       \\\n'
     '        if(tcp_tmp_pcb->next == (npcb)) {          \\\n'
     '          tcp_tmp_pcb->next = (npcb)->next;        \\\n'
     '          break;                                   \\\n'
     '        }                                          \\\n'
     '      }                                            \\\n'
     '    }                                              \\\n'
     '    (npcb)->next = NULL;                           \\\n'
     '  } while(0)\n',
     '/* dpsock: the active and TIME_WAIT lists are indexed (pcb_index.c) */\n'
     '#define TCP_REG(pcbs, npcb)                        \\\n'
     '  do {                                             \\\n'
     '    dpsock_tcp_list_add((pcbs), (npcb));           \\\n'
     '    tcp_timer_needed();                            \\\n'
     '  } while (0)\n'
     '\n'
     '#define TCP_RMV(pcbs, npcb) dpsock_tcp_list_del((pcbs), (npcb))\n'),

    ('core/tcp.c', 'pcb index: created by tcp_init',
     '  tcp_pcb_lists[3] = &tcp_tw_pcbs;\n',
     '  tcp_pcb_lists[3] = &tcp_tw_pcbs;\n'
     '  /* dpsock: the pcb index of this instance */\n'
     '  dpsock_tcp_index_init();\n'),
    ('core/tcp.c', 'pcb index: tcp_free unhashes',
     'tcp_free(struct tcp_pcb *pcb)\n'
     '{\n'
     '  LWIP_ASSERT("tcp_free: LISTEN", pcb->state != LISTEN);\n',
     'tcp_free(struct tcp_pcb *pcb)\n'
     '{\n'
     '  LWIP_ASSERT("tcp_free: LISTEN", pcb->state != LISTEN);\n'
     '  dpsock_tcp_index_forget(pcb); /* dpsock: pcb index */\n'),
    ('core/tcp.c', 'pcb index: tcp_slowtmr unlinks an active pcb',
     '      /* Remove PCB from tcp_active_pcbs list. */\n'
     '      if (prev != NULL) {\n'
     '        LWIP_ASSERT("tcp_slowtmr: middle tcp != tcp_active_pcbs", pcb != tcp_active_pcbs);\n'
     '        prev->next = pcb->next;\n'
     '      } else {\n'
     '        /* This PCB was the first. */\n'
     '        LWIP_ASSERT("tcp_slowtmr: first pcb == tcp_active_pcbs", tcp_active_pcbs == pcb);\n'
     '        tcp_active_pcbs = pcb->next;\n'
     '      }\n',
     '      /* Remove PCB from tcp_active_pcbs list (dpsock: pcb index, keeps\n'
     '         pcb->next for the walk) */\n'
     '      dpsock_tcp_active_unlinked(prev, pcb);\n'),
    ('core/tcp.c', 'pcb index: TIME_WAIT expires from the oldest',
     '  /* Steps through all of the TIME-WAIT PCBs. */\n'
     '  prev = NULL;\n'
     '  pcb = tcp_tw_pcbs;\n'
     '  while (pcb != NULL) {\n'
     '    LWIP_ASSERT("tcp_slowtmr: TIME-WAIT pcb->state == TIME-WAIT", pcb->state == TIME_WAIT);\n'
     '    pcb_remove = 0;\n'
     '\n'
     '    /* Check if this PCB has stayed long enough in TIME-WAIT */\n'
     '    if ((u32_t)(tcp_ticks - pcb->tmr) > 2 * TCP_MSL / TCP_SLOW_INTERVAL) {\n'
     '      ++pcb_remove;\n'
     '    }\n'
     '\n'
     '    /* If the PCB should be removed, do it. */\n'
     '    if (pcb_remove) {\n'
     '      struct tcp_pcb *pcb2;\n'
     '      tcp_pcb_purge(pcb);\n'
     '      /* Remove PCB from tcp_tw_pcbs list. */\n'
     '      if (prev != NULL) {\n'
     '        LWIP_ASSERT("tcp_slowtmr: middle tcp != tcp_tw_pcbs", pcb != tcp_tw_pcbs);\n'
     '        prev->next = pcb->next;\n'
     '      } else {\n'
     '        /* This PCB was the first. */\n'
     '        LWIP_ASSERT("tcp_slowtmr: first pcb == tcp_tw_pcbs", tcp_tw_pcbs == pcb);\n'
     '        tcp_tw_pcbs = pcb->next;\n'
     '      }\n'
     '      pcb2 = pcb;\n'
     '      pcb = pcb->next;\n'
     '      tcp_free(pcb2);\n'
     '    } else {\n'
     '      prev = pcb;\n'
     '      pcb = pcb->next;\n'
     '    }\n'
     '  }\n',
     '  /* dpsock: TIME-WAIT pcbs are in arrival order; free the expired ones\n'
     '     from the oldest on (and the oldest beyond DPSOCK_TCP_TW_MAX) */\n'
     '  dpsock_tcp_tw_expire();\n'
     '  /* dpsock: a look at a few parked pcbs (keepalives coming due) */\n'
     '  dpsock_tcp_tmr_sweep();\n'),
    ('core/tcp.c', 'pcb index: tcp_kill_timewait takes the oldest',
     '  /* Go through the list of TIME_WAIT pcbs and get the oldest pcb. */\n'
     '  for (pcb = tcp_tw_pcbs; pcb != NULL; pcb = pcb->next) {\n'
     '    if ((u32_t)(tcp_ticks - pcb->tmr) >= inactivity) {\n'
     '      inactivity = tcp_ticks - pcb->tmr;\n'
     '      inactive = pcb;\n'
     '    }\n'
     '  }\n',
     '  /* dpsock: the oldest TIME_WAIT pcb is the pcb index\'s tail */\n'
     '  LWIP_UNUSED_ARG(pcb);\n'
     '  LWIP_UNUSED_ARG(inactivity);\n'
     '  inactive = dpsock_tcp_tw_oldest();\n'
     '  if (inactive != NULL) {\n'
     '    inactivity = tcp_ticks - inactive->tmr;\n'
     '  }\n'),
    ('core/tcp.c', 'pcb index: tcp_connect checks its 4-tuple in the hash',
     '      for (i = 2; i < NUM_TCP_PCB_LISTS; i++) {\n'
     '        for (cpcb = *tcp_pcb_lists[i]; cpcb != NULL; cpcb = cpcb->next) {\n'
     '          if ((cpcb->local_port == pcb->local_port) &&\n'
     '              (cpcb->remote_port == port) &&\n'
     '              ip_addr_cmp(&cpcb->local_ip, &pcb->local_ip) &&\n'
     '              ip_addr_cmp(&cpcb->remote_ip, ipaddr)) {\n'
     '            /* linux returns EISCONN here, but ERR_USE should be OK for us */\n'
     '            return ERR_USE;\n'
     '          }\n'
     '        }\n'
     '      }\n',
     '      /* dpsock: one lookup in the pcb index (active and TIME-WAIT pcbs) */\n'
     '      LWIP_UNUSED_ARG(i);\n'
     '      cpcb = dpsock_tcp_lookup(&pcb->local_ip, pcb->local_port, ipaddr, port);\n'
     '      if (cpcb != NULL) {\n'
     '        /* linux returns EISCONN here, but ERR_USE should be OK for us */\n'
     '        return ERR_USE;\n'
     '      }\n'),

    # tcp_input: one lookup instead of two list walks. The loops keep their
    # bodies (netif binding check, hooks, TIME_WAIT handling) and run at
    # most once, on the pcb the hash found.
    ('core/tcp_in.c', 'pcb index: tcp_input finds an active pcb in the hash',
     '  for (pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next) {\n'
     '    LWIP_ASSERT("tcp_input: active pcb->state != CLOSED", pcb->state != CLOSED);\n',
     '  /* dpsock: one lookup in the pcb index (lwip/pcb_index.c) */\n'
     '  /* (IPv4, the common case, compares 32-bit words) */\n'
     '  struct tcp_pcb *dpsock_hit = ip_current_is_v6() ?\n'
     '      dpsock_tcp_lookup(ip_current_dest_addr(), tcphdr->dest, ip_current_src_addr(), tcphdr->src) :\n'
     '      dpsock_tcp_lookup4(ip4_addr_get_u32(ip4_current_dest_addr()), tcphdr->dest,\n'
     '                         ip4_addr_get_u32(ip4_current_src_addr()), tcphdr->src);\n'
     '  if (dpsock_hit != NULL && dpsock_hit->state != TIME_WAIT) {\n'
     '    dpsock_tcp_tmr_wake(dpsock_hit); /* dpsock: its timers may have work */\n'
     '  }\n'
     '  for (pcb = (dpsock_hit != NULL && dpsock_hit->state != TIME_WAIT) ? dpsock_hit : NULL;\n'
     '       pcb != NULL; pcb = NULL) {\n'
     '    LWIP_ASSERT("tcp_input: active pcb->state != CLOSED", pcb->state != CLOSED);\n'),
    ('core/tcp_in.c', 'pcb index: tcp_input finds a TIME-WAIT pcb in the hash',
     '    for (pcb = tcp_tw_pcbs; pcb != NULL; pcb = pcb->next) {\n'
     '      LWIP_ASSERT("tcp_input: TIME-WAIT pcb->state == TIME-WAIT", pcb->state == TIME_WAIT);\n',
     '    for (pcb = (dpsock_hit != NULL && dpsock_hit->state == TIME_WAIT) ? dpsock_hit : NULL;\n'
     '         pcb != NULL; pcb = NULL) { /* dpsock: pcb index */\n'
     '      LWIP_ASSERT("tcp_input: TIME-WAIT pcb->state == TIME-WAIT", pcb->state == TIME_WAIT);\n'),
    ('core/tcp_in.c', 'pcb index: a FIN in TIME-WAIT makes the pcb the newest',
     '         Restart the 2 MSL time-wait timeout.*/\n'
     '    pcb->tmr = tcp_ticks;\n',
     '         Restart the 2 MSL time-wait timeout.*/\n'
     '    pcb->tmr = tcp_ticks;\n'
     '    dpsock_tcp_tw_touch(pcb); /* dpsock: TIME-WAIT stays in arrival order */\n'),

    # ---- timer parking (pcb_index.c): the timers' walks stop at the first
    # parked pcb; fasttmr parks what it finds quiet; whatever may give a pcb
    # timer work wakes it.
    ('core/tcp.c', 'parking: tcp_slowtmr stops at the parked pcbs',
     '  while (pcb != NULL) {\n'
     '    LWIP_DEBUGF(TCP_DEBUG, ("tcp_slowtmr: processing active pcb\\n"));\n',
     '  while (pcb != NULL && pcb != dpsock_tcp_tmr_quiet()) { /* dpsock: parked from there on */\n'
     '    LWIP_DEBUGF(TCP_DEBUG, ("tcp_slowtmr: processing active pcb\\n"));\n'),
    ('core/tcp.c', 'parking: tcp_fasttmr stops at the parked pcbs',
     'tcp_fasttmr_start:\n'
     '  pcb = tcp_active_pcbs;\n'
     '\n'
     '  while (pcb != NULL) {\n',
     'tcp_fasttmr_start:\n'
     '  pcb = tcp_active_pcbs;\n'
     '\n'
     '  while (pcb != NULL && pcb != dpsock_tcp_tmr_quiet()) { /* dpsock: parked from there on */\n'),
    ('core/tcp.c', 'parking: tcp_fasttmr parks a quiet pcb',
     '          goto tcp_fasttmr_start;\n'
     '        }\n'
     '      }\n'
     '      pcb = next;\n',
     '          goto tcp_fasttmr_start;\n'
     '        }\n'
     '      }\n'
     '      dpsock_tcp_tmr_park(pcb); /* dpsock: quiet: behind the walks */\n'
     '      pcb = next;\n'),
    ('core/tcp.c', 'parking: a close or shutdown wakes the pcb',
     'tcp_close_shutdown(struct tcp_pcb *pcb, u8_t rst_on_unacked_data)\n'
     '{\n'
     '  LWIP_ASSERT("tcp_close_shutdown: invalid pcb", pcb != NULL);\n',
     'tcp_close_shutdown(struct tcp_pcb *pcb, u8_t rst_on_unacked_data)\n'
     '{\n'
     '  LWIP_ASSERT("tcp_close_shutdown: invalid pcb", pcb != NULL);\n'
     '  dpsock_tcp_tmr_wake(pcb); /* dpsock: timer parking */\n'),
    ('core/tcp_out.c', 'parking: tcp_write wakes the pcb',
     '  LWIP_ERROR("tcp_write: invalid pcb", pcb != NULL, return ERR_ARG);\n',
     '  LWIP_ERROR("tcp_write: invalid pcb", pcb != NULL, return ERR_ARG);\n'
     '  dpsock_tcp_tmr_wake(pcb); /* dpsock: timer parking */\n'),
    ('core/tcp_out.c', 'parking: tcp_output wakes the pcb',
     '  LWIP_ASSERT("don\'t call tcp_output for listen-pcbs",\n'
     '              pcb->state != LISTEN);\n',
     '  LWIP_ASSERT("don\'t call tcp_output for listen-pcbs",\n'
     '              pcb->state != LISTEN);\n'
     '  dpsock_tcp_tmr_wake(pcb); /* dpsock: timer parking */\n'),

    # ---- super-segments (tso.c)
    ('core/tcp_out.c', 'tso: tcp_output joins and fits before its window check',
     '  /* Handle the current segment not fitting within the window */\n'
     '  if (lwip_ntohl(seg->tcphdr->seqno) - pcb->lastack + seg->len > wnd) {\n',
     '  /* dpsock: what is acknowledged off the head, super-segments for a\n'
     '     segmenting netif (lwip/tso.c) */\n'
     '  seg = dpsock_tcp_output_prepare(pcb, netif, wnd);\n'
     '  if (seg == NULL) {\n'
     '    /* all of it was acknowledged already */\n'
     '    if (pcb->flags & TF_ACK_NOW) {\n'
     '      return tcp_send_empty_ack(pcb);\n'
     '    }\n'
     '    goto output_done;\n'
     '  }\n'
     '  /* Handle the current segment not fitting within the window */\n'
     '  if (lwip_ntohl(seg->tcphdr->seqno) - pcb->lastack + seg->len > wnd) {\n'),
    ('core/tcp_out.c', 'tso: tcp_output fits each new head',
     '    seg = pcb->unsent;\n'
     '  }\n'
     '#if TCP_OVERSIZE\n'
     '  if (pcb->unsent == NULL) {\n',
     '    seg = dpsock_tcp_unsent_fit(pcb, wnd); /* dpsock: lwip/tso.c */\n'
     '  }\n'
     '#if TCP_OVERSIZE\n'
     '  if (pcb->unsent == NULL) {\n'),
    # after a retransmission timeout the last unsent segment can be a
    # super-segment (unacked moved back to unsent): no room to fill in it
    ('core/tcp_out.c', 'tso: tcp_write appends nothing to a super-segment',
     '    LWIP_ASSERT("mss_local is too small", mss_local >= last_unsent->len + unsent_optlen);\n'
     '    space = mss_local - (last_unsent->len + unsent_optlen);\n',
     '    /* dpsock: the last unsent segment may be a super-segment (lwip/tso.c) */\n'
     '    space = mss_local >= last_unsent->len + unsent_optlen ?\n'
     '            (u16_t)(mss_local - (last_unsent->len + unsent_optlen)) : 0;\n'),
    # ... and spare bytes in the last unsent segment's pbuf (oversize) that
    # no longer fit its MSS (mss_local, which follows the peer's largest
    # window, fell since the segment was built; or a super-segment): left
    # unused, instead of lwIP's assertion (found by fuzz_frames,
    # crash-tcp_write_oversize_past_mss)
    ('core/tcp_out.c', 'tso: tcp_write leaves oversize that no longer fits unused',
     '    oversize = pcb->unsent_oversize;\n'
     '    if (oversize > 0) {\n'
     '      LWIP_ASSERT("inconsistent oversize vs. space", oversize <= space);\n',
     '    oversize = pcb->unsent_oversize;\n'
     '    if (oversize > space) {\n'
     '      /* dpsock: no room for them in this segment any more */\n'
     '      oversize = 0;\n'
     '      pcb->unsent_oversize = 0;\n'
     '#if TCP_OVERSIZE_DBGCHECK\n'
     '      last_unsent->oversize_left = 0;\n'
     '#endif\n'
     '    }\n'
     '    if (oversize > 0) {\n'
     '      LWIP_ASSERT("inconsistent oversize vs. space", oversize <= space);\n'),
    ('core/tcp.c', 'tso: the persist timer cuts a super-segment to one MSS first',
     '              if (tcp_split_unsent_seg(pcb, (u16_t)pcb->snd_wnd) == ERR_OK) {\n',
     '              /* dpsock: tcp_split_unsent_seg takes one MSS at most (lwip/tso.c) */\n'
     '              if (dpsock_tcp_unsent_fit_persist(pcb) == ERR_OK &&\n'
     '                  tcp_split_unsent_seg(pcb, dpsock_tcp_persist_split(pcb)) == ERR_OK) {\n'),
    ('core/ipv4/ip4.c', 'tso: a super-segment for a segmenting netif is not fragmented',
     '  /* don\'t fragment if interface has mtu set to 0 [loopif] */\n'
     '  if (netif->mtu && (p->tot_len > netif->mtu)) {\n'
     '    return ip4_frag(p, netif, dest);\n',
     '  /* don\'t fragment if interface has mtu set to 0 [loopif]; dpsock: nor\n'
     '     a TCP super-segment for a netif that segments (lwip/tso.c) */\n'
     '  if (netif->mtu && (p->tot_len > netif->mtu) && !dpsock_tcp_tso_passes(netif, proto)) {\n'
     '    return ip4_frag(p, netif, dest);\n'),
    ('core/ipv6/ip6.c', 'tso: an IPv6 super-segment for a segmenting netif is not fragmented',
     '  /* don\'t fragment if interface has mtu set to 0 [loopif] */\n'
     '  if (netif_mtu6(netif) && (p->tot_len > nd6_get_destination_mtu(dest, netif))) {\n'
     '    return ip6_frag(p, netif, dest);\n',
     '  /* don\'t fragment if interface has mtu set to 0 [loopif]; dpsock: nor\n'
     '     a TCP super-segment for a netif that segments (lwip/tso.c) */\n'
     '  if (netif_mtu6(netif) && (p->tot_len > nd6_get_destination_mtu(dest, netif)) &&\n'
     '      !dpsock_tcp_tso_passes(netif, nexth)) {\n'
     '    return ip6_frag(p, netif, dest);\n'),
]
