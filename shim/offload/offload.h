/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * offload.h — offload/: whether a socket is offloaded, and what its workers
 * apply. The offload decision (the process's rules, then dpsockd's, then
 * the addresses it serves), opening a socket's slots on the workers and
 * the options they apply (offload.c); multicast memberships,
 * IP_MULTICAST_IF and recvmsg's control messages (mcast.c). It calls
 * sock/, link/ and shim.h; the completion sets of the extra API hear of
 * each socket offloaded through shim_sock_offloaded_hook.
 */
#ifndef DPSOCK_SHIM_OFFLOAD_H
#define DPSOCK_SHIM_OFFLOAD_H

#include "sock/sock.h"

/* ---- offload decision (offload.c) ------------------------------------------- */

/* 1: offload a socket of this role (enum dpsock_pl_role) to addr:port
 * (network order; the local address for tcp_server/udp_receiver, the
 * destination otherwise), 0: keep it in the kernel. laddr/lport: the
 * socket's local address for tcp_client/udp_connect (0: not bound). */
int shim_offload_decide(int role, uint32_t addr, uint16_t port, uint32_t laddr, uint16_t lport);
/* The same for an IPv6 address (tcp_server, udp_receiver: "::" or an
 * address6 of dpsockd's; the others: an address in the /64 of one). The rules'
 * addresses are IPv4: an IPv6 socket matches the rules whose address is
 * any ("*"). */
int shim_offload_decide6(int role, const struct in6_addr *addr, uint16_t port);
/* dpsockd serves IPv6 (some port has an address6). */
bool shim_serves_ip6(void);
/* LISTEN or UDP_BIND on every worker, with DPSOCK_PL_CMD_F_* cflags (F_IP6:
 * s->laddr6 is the address). Returns 0 or -errno. */
int shim_sock_open_all(struct shim_sock *s, int op, uint32_t addr, uint16_t port,
		       unsigned int cflags);
/* The object became offloaded with the slots it holds (mode: enum
 * shim_sock_mode); this process holds it. */
void shim_sock_set_offloaded(struct shim_sock *s, int mode);
/* Told of each socket shim_sock_set_offloaded offloads, in the thread that
 * offloads it; NULL until a thread makes a completion set (comp.c sets
 * shim_comp_sock_offloaded). */
extern void (*shim_sock_offloaded_hook)(struct shim_sock *s);
/* Send the remembered options a worker applies, once the slots exist. */
void shim_sock_push_opts(struct shim_thread *t, struct shim_sock *s);
/* One option on every slot of an offloaded socket; 0 or the first -errno. */
int shim_sock_setopt_all(struct shim_thread *t, struct shim_sock *s, int level, int name, int val);
/* A process rule (add_conf_rule; offload.c): 0, -EINVAL (logged), -ENOSPC. */
int shim_proc_rule_add(const char *line);

/* ---- multicast and UDP options (mcast.c) -------------------------------------- */

struct dpsock_mc_set;
/* A membership option, or IP_MULTICAST_IF / IPV6_MULTICAST_IF (of level
 * IPPROTO_IP or IPPROTO_IPV6)? */
bool shim_mc_optname(int level, int name);
/* Such an option on an undecided or offloaded UDP socket: 0, -errno as
 * Linux, or SHIM_TO_KERNEL (no dpsockd, or a kernel socket after all). */
int shim_mc_setsockopt(struct shim_sock *s, int fd, int level, int name, const void *val,
		       socklen_t len);
/* IPV6_MULTICAST_IF's interface: the dpsockd port of a kernel ifindex, -1
 * for 0 (the route's) or an interface not dpsockd's. */
int shim_mc_iface6(int ifindex);
/* getsockopt of what the kernel socket does not know (IP_MULTICAST_IF set
 * to a dpsockd interface); else SHIM_TO_KERNEL. */
int shim_mc_getsockopt(struct shim_sock *s, int name, void *val, socklen_t *len);
/* The socket stays in the kernel: its memberships made before bind are
 * dropped (logged). */
void shim_mc_drop_pending(struct shim_sock *s);
/* A datagram record's header as the shim reads it: the wire's header and,
 * for an IPv6 datagram (DPSOCK_PL_DGRAM_IP6), its addresses. */
struct shim_dgram {
	struct dpsock_pl_dgram h;
	struct dpsock_pl_dgram6 x;
};
/* recvmsg's control messages for a datagram (IP_PKTINFO or IPV6_PKTINFO,
 * SO_TIMESTAMP, SO_TIMESTAMPNS, SO_TIMESTAMPING); sets msg_controllen,
 * MSG_CTRUNC. */
void shim_udp_cmsgs(const struct shim_sock *s, const struct shim_dgram *d, struct msghdr *m,
		    int *flags);

#endif /* DPSOCK_SHIM_OFFLOAD_H */
