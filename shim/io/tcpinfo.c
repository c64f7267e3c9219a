/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * getsockopt(TCP_INFO) and getsockopt(TCP_CONGESTION) of offloaded TCP
 * sockets: the worker that owns the slot writes its tcpi block
 * (DPSOCK_PL_OP_TCP_INFO) and this file turns it into Linux's struct
 * tcp_info, whose fields it is named after. A file of its own: <linux/tcp.h>
 * (the full struct, delivery rate included) cannot share a unit with
 * <netinet/tcp.h>.
 */
#include <linux/tcp.h>
#include <string.h>

#include "io/io.h"

/* Fetch the slot's tcpi block. 0 or -errno. */
static int
tcpi_fetch(struct shim_sock *s, struct dpsock_pl_tcp_info *out)
{
	struct shim_thread *t = shim_thread_get();
	struct dpsock_pl_cmd c = { .op = DPSOCK_PL_OP_TCP_INFO, .slot = s->slot[0], .gen = s->gen[0] };
	struct dpsock_pl_reply r;
	int e;

	if (t == NULL)
		return -errno;
	e = shim_cmd_call(t, shim_slot_worker(s->slot[0]), &c, &r);
	if (e < 0)
		return e;
	if (r.result < 0)
		return r.result;
	/* the reply ring's acquire made the worker's writes visible */
	memcpy(out, &shim_slot(s->slot[0])->tcpi, sizeof(*out));
	return 0;
}

int
shim_tcp_info(struct shim_sock *s, void *val, socklen_t *len)
{
	struct dpsock_pl_tcp_info w;
	struct tcp_info ti;
	int e = tcpi_fetch(s, &w);

	if (e < 0)
		return e;
	memset(&ti, 0, sizeof(ti));
#define TCPI_TO_LINUX(type, name) ti.tcpi_##name = w.name;
	DPSOCK_PL_TCPI_FIELDS(TCPI_TO_LINUX)
#undef TCPI_TO_LINUX
	/* as the kernel: as much as the caller's buffer holds */
	if (*len > sizeof(ti))
		*len = sizeof(ti);
	memcpy(val, &ti, *len);
	return 0;
}

int
shim_tcp_congestion(struct shim_sock *s, void *val, socklen_t *len)
{
	struct dpsock_pl_tcp_info w;
	int e = tcpi_fetch(s, &w);

	if (e < 0)
		return e;
	if (*len > sizeof(w.congestion))
		*len = sizeof(w.congestion);
	memcpy(val, w.congestion, *len);
	return 0;
}
