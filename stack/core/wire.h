/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.h — how an instance writes its state down: typed records in a
 * growable buffer and the file descriptors that travel beside them, as
 * indexes into one table. A takeover's image is made of them
 * (takeover/takeover.h); a concern writes its own part in them (the
 * sockets: sock.c) without calling the hand-over.
 * Records never hold pointers; every integer has its width; the format's
 * version is the hand-over's (DPSOCK_TKO_VERSION).
 */
#ifndef DPSOCK_STACK_WIRE_H
#define DPSOCK_STACK_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* A growable buffer of records: {u16 type, u16 flags, u32 len} + len bytes,
 * padded to 8. A failed allocation is sticky (err) and checked once at
 * the end. */
struct dpsock_tko_buf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

/* Descriptors that travel with the image: a record names one by its index. */
struct dpsock_tko_fds {
	int *fd;
	uint32_t n, cap;
	int err;
};

struct dpsock_tko_rd {
	const unsigned char *p, *end;
	const int *fd;            /* the received table (owned by the caller) */
	uint32_t n_fd;
};

void dpsock_tko_buf_put(struct dpsock_tko_buf *b, uint16_t type, const void *a, size_t alen,
			const void *c, size_t clen);
/* bytes appended as they are (a blob that goes into a record later) */
void dpsock_tko_buf_raw(struct dpsock_tko_buf *b, const void *data, size_t len);
void dpsock_tko_buf_free(struct dpsock_tko_buf *b);
/* index of fd in the table, or -1 (err set) */
int32_t dpsock_tko_fd_add(struct dpsock_tko_fds *f, int fd);
void dpsock_tko_fds_free(struct dpsock_tko_fds *f);
/* The next record: 1 (type, data, len set), 0 at the end, -EINVAL when
 * the buffer is not a sequence of records. */
int dpsock_tko_next(struct dpsock_tko_rd *r, uint16_t *type, const void **data, uint32_t *len);
/* fd number of table index i, or -1 */
int dpsock_tko_fd(const struct dpsock_tko_rd *r, int32_t i);

/* Record types. Below 0x100: the stack's own; 0x100 and up: the app's. */
enum {
	DPSOCK_TKO_R_WORKER = 1,     /* struct dpsock_tko_worker_hdr: a worker's part starts */
	DPSOCK_TKO_R_STATS = 2,      /* a worker's counters, as its stats block holds them */
	DPSOCK_TKO_R_PCB = 3,        /* a pcb no socket stands for (sock.c) */
	DPSOCK_TKO_R_APP = 0x100,
};

#endif /* DPSOCK_STACK_WIRE_H */
