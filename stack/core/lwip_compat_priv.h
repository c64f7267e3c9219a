/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Include before lwIP's headers in files that also use DPDK's: <netinet/ip.h>
 * (pulled in by rte_ip.h) and lwIP's prot/ip4.h both define the IPv4 flag
 * macros, with the same values. lwIP's byte-order macros are turned off in
 * lwipopts.h (LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS) for the same reason.
 * Both <netinet/ip6.h> and lwIP's prot/ip6.h define struct ip6_hdr: the
 * libc one is included here first, and lwIP's is renamed for the files
 * that include this (the layout is the same; dpsock's code uses DPDK's
 * struct rte_ipv6_hdr).
 */
#ifndef DPSOCK_LWIP_COMPAT_PRIV_H
#define DPSOCK_LWIP_COMPAT_PRIV_H

#undef IP_RF
#undef IP_DF
#undef IP_MF
#undef IP_OFFMASK

#include <netinet/ip6.h>
#define ip6_hdr lwip_ip6_hdr

#endif /* DPSOCK_LWIP_COMPAT_PRIV_H */
