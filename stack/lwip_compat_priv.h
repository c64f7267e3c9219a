/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Include before lwIP's headers in files that also use DPDK's: <netinet/ip.h>
 * (pulled in by rte_ip.h) and lwIP's prot/ip4.h both define the IPv4 flag
 * macros, with the same values. lwIP's byte-order macros are turned off in
 * lwipopts.h (LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS) for the same reason.
 */
#ifndef DPSOCK_LWIP_COMPAT_PRIV_H
#define DPSOCK_LWIP_COMPAT_PRIV_H

#undef IP_RF
#undef IP_DF
#undef IP_MF
#undef IP_OFFMASK

#endif /* DPSOCK_LWIP_COMPAT_PRIV_H */
