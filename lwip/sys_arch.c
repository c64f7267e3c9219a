/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sys_arch.c — what NO_SYS lwIP needs from the platform (sys_now, assert
 * handler, random numbers) and the per-thread instance life cycle.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>

#include "lwip/opt.h"
#include "lwip/init.h"
#include "lwip/sys.h"
#include "lwip/timeouts.h"

#include "dpsock_lwip.h"
#include "dpsock_lwip_hooks.h"
#include "dpsock_lwip_pcb_index.h"
#include "lwip_glue_priv.h"

_Thread_local bool dpsock_lwip_tls_owned;
/* params->instance of this thread's instance, for messages */
static _Thread_local unsigned int instance_name;
static _Thread_local uint64_t rand_state;

u32_t
sys_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* wraps every 49 days; lwIP compares times modulo 2^32 */
    return (u32_t)((uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u);
}

void
dpsock_lwip_assert_fail(const char *msg, const char *file, int line)
{
    fprintf(stderr, "lwIP assertion \"%s\" failed at %s:%d (instance %u)\n", msg, file, line,
            instance_name);
    fflush(stderr);
    abort();
}

void
dpsock_lwip_core_unlocked(const char *file, int line)
{
    fprintf(stderr, "lwIP called at %s:%d on a thread that does not own an lwIP instance "
            "(dpsock_lwip_instance_init() not called on this thread)\n", file, line);
    fflush(stderr);
    abort();
}

int
dpsock_lwip_getrandom(void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* splitmix64: small, fast, and good enough for ports and IGMP delays (not
 * for security: ISNs use isn.c). */
uint32_t
dpsock_lwip_rand(void)
{
    uint64_t z = (rand_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

int
dpsock_lwip_instance_init(const struct dpsock_lwip_params *p)
{
    static const struct dpsock_lwip_params defaults;
    int rc;

    if (p == NULL)
        p = &defaults;
    if (dpsock_lwip_tls_owned)
        return -EALREADY;

    rc = dpsock_lwip_isn_init(p->isn_secret);
    if (rc < 0)
        return rc;
    rand_state = p->rand_seed;
    if (rand_state == 0) {
        rc = dpsock_lwip_getrandom(&rand_state, sizeof(rand_state));
        if (rc < 0)
            return rc;
    }
    dpsock_lwip_alloc_init(p->mem_limit, p->mem_get, p->mem_put);
    instance_name = p->instance;
    dpsock_lwip_tls_owned = true;
    lwip_init();
    return 0;
}

void
dpsock_lwip_instance_fini(void)
{
    if (!dpsock_lwip_tls_owned)
        return;
    dpsock_lwip_timeouts_fini();
    dpsock_tcp_index_fini();
    dpsock_lwip_alloc_fini();
    dpsock_lwip_tls_owned = false;
}

bool
dpsock_lwip_instance_owned(void)
{
    return dpsock_lwip_tls_owned;
}

/* dpsock_lwip_hooks.h: without a daemon (the lwIP unit tests), no segment
 * has another owner. stack/frame/netif.c's definition replaces this one. */
__attribute__((weak)) int
dpsock_lwip_tcp_unmatched(struct pbuf *p, struct tcp_hdr *hdr)
{
	(void)p;
	(void)hdr;
	return 0;
}

/* dpsock_lwip_hooks.h: without the stack (the lwIP unit tests), lwIP
 * delivers every datagram itself. stack/mcast/mcast.c's definition replaces this. */
__attribute__((weak)) int
dpsock_lwip_udp_deliver(struct pbuf *p, struct netif *inp, struct udp_pcb *pcb, u16_t src_port,
			u8_t broadcast)
{
	(void)p;
	(void)inp;
	(void)pcb;
	(void)src_port;
	(void)broadcast;
	return 0;
}

/* dpsock_lwip_hooks.h: without the stack (the lwIP unit tests), no IPv6
 * group is joined. stack/mcast/mcast.c's definition replaces this one. */
__attribute__((weak)) int
dpsock_lwip_ip6_mcast_joined(struct netif *inp, const struct ip6_addr *group)
{
	(void)inp;
	(void)group;
	return 0;
}

/* dpsock_lwip_hooks.h: without the stack (the lwIP unit tests), every
 * netif sends untagged. stack/frame/netif.c's definition replaces this one. */
__attribute__((weak)) s32_t
dpsock_lwip_vlan_set(struct netif *netif)
{
	(void)netif;
	return -1;
}

/* dpsock_lwip_hooks.h: without the stack (the lwIP unit tests), no static
 * routes. stack/frame/netif.c's definitions replace these. */
__attribute__((weak)) struct netif *
dpsock_lwip_route(const ip4_addr_t *dest)
{
	(void)dest;
	return NULL;
}

__attribute__((weak)) const ip4_addr_t *
dpsock_lwip_route_gw(struct netif *netif, const ip4_addr_t *dest)
{
	(void)netif;
	(void)dest;
	return NULL;
}

__attribute__((weak)) struct netif *
dpsock_lwip_route6(const ip6_addr_t *src, const ip6_addr_t *dest)
{
	(void)src;
	(void)dest;
	return NULL;
}

__attribute__((weak)) const ip6_addr_t *
dpsock_lwip_nd6_gw(struct netif *netif, const ip6_addr_t *dest)
{
	(void)netif;
	(void)dest;
	return NULL;
}
