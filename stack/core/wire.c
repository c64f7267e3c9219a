/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wire.c — records and their descriptor table (wire.h).
 * Plain memory: written by one thread, read by one thread, after the
 * hand-over put it in a memfd.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wire.h"

struct rec_hdr {
	uint16_t type;
	uint16_t flags;
	uint32_t len;
};

static size_t
pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static int
buf_room(struct dpsock_tko_buf *b, size_t more)
{
	size_t cap;
	unsigned char *p;

	if (b->err != 0)
		return b->err;
	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap != 0 ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void
dpsock_tko_buf_put(struct dpsock_tko_buf *b, uint16_t type, const void *a, size_t alen,
		   const void *c, size_t clen)
{
	struct rec_hdr h = { .type = type };
	size_t n = alen + clen;

	if (n > UINT32_MAX) {
		b->err = -E2BIG;
		return;
	}
	if (buf_room(b, sizeof(h) + pad8(n)) != 0)
		return;
	h.len = (uint32_t)n;
	memcpy(b->p + b->len, &h, sizeof(h));
	if (alen != 0)
		memcpy(b->p + b->len + sizeof(h), a, alen);
	if (clen != 0)
		memcpy(b->p + b->len + sizeof(h) + alen, c, clen);
	memset(b->p + b->len + sizeof(h) + n, 0, pad8(n) - n);
	b->len += sizeof(h) + pad8(n);
}

void
dpsock_tko_buf_free(struct dpsock_tko_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int32_t
dpsock_tko_fd_add(struct dpsock_tko_fds *f, int fd)
{
	if (f->err != 0)
		return -1;
	if (fd < 0) {
		f->err = -EBADF;
		return -1;
	}
	if (f->n == f->cap) {
		uint32_t cap = f->cap != 0 ? f->cap * 2 : 64;
		int *p = realloc(f->fd, cap * sizeof(*p));

		if (p == NULL) {
			f->err = -ENOMEM;
			return -1;
		}
		f->fd = p;
		f->cap = cap;
	}
	f->fd[f->n] = fd;
	return (int32_t)f->n++;
}

void
dpsock_tko_fds_free(struct dpsock_tko_fds *f)
{
	free(f->fd);
	memset(f, 0, sizeof(*f));
}

int
dpsock_tko_next(struct dpsock_tko_rd *r, uint16_t *type, const void **data, uint32_t *len)
{
	struct rec_hdr h;

	if (r->p == r->end)
		return 0;
	if ((size_t)(r->end - r->p) < sizeof(h))
		return -EINVAL;
	memcpy(&h, r->p, sizeof(h));
	if ((size_t)(r->end - r->p) - sizeof(h) < pad8(h.len))
		return -EINVAL;
	*type = h.type;
	*len = h.len;
	*data = r->p + sizeof(h);
	r->p += sizeof(h) + pad8(h.len);
	return 1;
}

int
dpsock_tko_fd(const struct dpsock_tko_rd *r, int32_t i)
{
	if (i < 0 || (uint32_t)i >= r->n_fd)
		return -1;
	return r->fd[i];
}

void
dpsock_tko_buf_raw(struct dpsock_tko_buf *b, const void *data, size_t len)
{
	if (len == 0 || buf_room(b, len) != 0)
		return;
	memcpy(b->p + b->len, data, len);
	b->len += len;
}
