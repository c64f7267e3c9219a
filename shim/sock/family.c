/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * family.c — the program's address family against dpsock's. An AF_INET6
 * socket with IPV6_V6ONLY off (Linux's default) carries IPv4 as
 * IPv4-mapped addresses (::ffff:a.b.c.d): such a socket is offloaded for
 * its IPv4 traffic as an AF_INET socket is (docs/preload.md "AF_INET6
 * dual-stack sockets"). A socket is offloaded for IPv6 proper too when
 * dpsockd serves IPv6 (a port with address6). Addresses go in through
 * shim_addr_in (the IPv4 address and port dpsockd works with, or "not
 * IPv4") and shim_addr_in6 (IPv6 proper), and come out through
 * shim_addr_out (the family the program asked for).
 */
#include <stdio.h>
#include <string.h>

#include "sock/sock.h"

static int bindv6only = -1;

/* net.ipv6.bindv6only: IPV6_V6ONLY of every new AF_INET6 socket. */
int
shim_bindv6only(void)
{
	int v = __atomic_load_n(&bindv6only, __ATOMIC_RELAXED);

	if (v < 0) {
		FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "re");

		v = 0;
		if (f != NULL) {
			if (fscanf(f, "%d", &v) != 1)
				v = 0;
			fclose(f);
		}
		v = v != 0;
		__atomic_store_n(&bindv6only, v, __ATOMIC_RELAXED);
	}
	return v;
}

static bool
v4mapped(const struct in6_addr *a)
{
	return a->s6_addr32[0] == 0 && a->s6_addr32[1] == 0 && a->s6_addr32[2] == htonl(0xffff);
}

int
shim_addr_in(const struct shim_sock *s, const struct sockaddr *a, socklen_t len, int use,
	     struct sockaddr_in *out)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)a;

	if (a == NULL || len < sizeof(sa_family_t))
		return SHIM_TO_KERNEL;
	if (a->sa_family == AF_INET) {
		/* an AF_INET6 socket takes an AF_INET address only where Linux
		 * does: a UDP socket's sendto and connect, unless v6only */
		if (s->family == AF_INET6 && (s->v6only || s->type != SOCK_DGRAM ||
					       use == SHIM_ADDR_BIND))
			return SHIM_TO_KERNEL;
		if (len < sizeof(*out))
			return SHIM_TO_KERNEL;
		memcpy(out, a, sizeof(*out));
		return 0;
	}
	if (s->family != AF_INET6 || a->sa_family != AF_INET6 || s->v6only ||
	    len < sizeof(*sin6))
		return SHIM_TO_KERNEL;
	*out = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = sin6->sin6_port };
	if (v4mapped(&sin6->sin6_addr)) {
		out->sin_addr.s_addr = sin6->sin6_addr.s6_addr32[3];
		return 0;
	}
	/* "::" is every address of both families for a bind; for a connect
	 * or a send it is the host itself (the kernel's loopback) */
	if (use == SHIM_ADDR_BIND && IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
		return 0;
	return SHIM_TO_KERNEL;
}

bool
shim_addr_in6(const struct shim_sock *s, const struct sockaddr *a, socklen_t len, int use,
	      struct in6_addr *out, uint16_t *port)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)a;

	if (a == NULL || s->family != AF_INET6 || len < sizeof(*sin6) || a->sa_family != AF_INET6 ||
	    v4mapped(&sin6->sin6_addr))
		return false;
	/* a group: sent to (or connected to) when its scope is wider than
	 * the link (ff0X with X >= 3: the interface is IPV6_MULTICAST_IF's
	 * or the route's); a bind to a group, and the interface-local and
	 * link-local groups, stay the kernel's */
	if (IN6_IS_ADDR_MULTICAST(&sin6->sin6_addr) &&
	    (use == SHIM_ADDR_BIND || (sin6->sin6_addr.s6_addr[1] & 0x0f) < 3))
		return false;
	/* "::": a bind's every address (of IPv6 alone with IPV6_V6ONLY);
	 * a connect's the host itself (the kernel's loopback) */
	if (IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) && (use != SHIM_ADDR_BIND || !s->v6only))
		return false;
	/* link-local needs the scope of the program's choosing: the kernel's */
	if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr) || IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
		return false;
	*out = sin6->sin6_addr;
	*port = sin6->sin6_port;
	return true;
}

void
shim_addr_out(const struct shim_sock *s, uint32_t a, const void *a6, uint16_t p,
	      struct sockaddr *out, socklen_t *len)
{
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} u;
	socklen_t full, l;

	memset(&u, 0, sizeof(u));
	if (s->family == AF_INET6) {
		u.v6.sin6_family = AF_INET6;
		u.v6.sin6_port = p;
		/* a socket bound to "::" names "::" as Linux does; any other
		 * IPv4 address is mapped */
		if (a6 != NULL) {
			memcpy(&u.v6.sin6_addr, a6, 16);
		} else if (a != 0 || !s->any6) {
			u.v6.sin6_addr.s6_addr32[2] = htonl(0xffff);
			u.v6.sin6_addr.s6_addr32[3] = a;
		}
		full = sizeof(u.v6);
	} else {
		u.v4.sin_family = AF_INET;
		u.v4.sin_addr.s_addr = a;
		u.v4.sin_port = p;
		full = sizeof(u.v4);
	}
	l = *len < full ? *len : full;
	memcpy(out, &u, l);
	*len = full;
}
