/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpsock_lwip_hooks.h — LWIP_HOOK_FILENAME: prototypes of the hooks lwipopts.h
 * wires into lwIP. Included by lwIP sources after their own headers.
 */
#ifndef DPSOCK_LWIP_HOOKS_H
#define DPSOCK_LWIP_HOOKS_H

#include "lwip/ip_addr.h"

/* RFC 6528 initial sequence number: keyed hash of the 4-tuple + 4 us clock. */
u32_t dpsock_lwip_tcp_isn(const ip_addr_t *local_ip, u16_t local_port,
                          const ip_addr_t *remote_ip, u16_t remote_port);

#endif /* DPSOCK_LWIP_HOOKS_H */
