/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lwIP's allocator for the fuzz harnesses: the interface of lwip/alloc.c
 * (lwip_glue_priv.h, dpsock_lwip.h) over plain malloc(), one block per
 * object. lwip/alloc.c carves objects out of 64 KiB chunks, which hides an
 * overrun into the next object from AddressSanitizer; here every object has
 * its own redzones, and a use after free is seen too.
 *
 * Kept from alloc.c: the per-thread owner check (a free on another thread,
 * of a foreign pointer or a second free aborts), the counters, the memory
 * limit, and fini freeing whatever is still allocated.
 */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dpsock_lwip.h"
#include "lwip_glue_priv.h"

#include "fuzz_check.h"

#define HDR_MAGIC 0xa5a110c5u

struct blk {
	struct blk *prev, *next;  /* this thread's live blocks */
	uint32_t magic;
	uint32_t owner;
	uint64_t size;
} __attribute__((aligned(16)));

static _Thread_local struct {
	uint32_t id;
	uint64_t limit;
	struct blk head;
	struct dpsock_lwip_mem_stats st;
} ta;

static uint32_t instance_seq;

static void __attribute__((noreturn))
alloc_abort(const char *what, const void *p)
{
	fprintf(stderr, "fuzz lwIP allocator: %s (%p, instance %u)\n", what, p, ta.id);
	abort();
}

void *
dpsock_lwip_malloc(size_t size)
{
	struct blk *b;

	if (ta.id == 0)
		alloc_abort("allocation on a thread without an lwIP instance", NULL);
	if (ta.limit != 0 && ta.st.bytes_in_use + size > ta.limit) {
		ta.st.fails++;
		return NULL;
	}
	b = malloc(sizeof(*b) + size);
	if (b == NULL) {
		ta.st.fails++;
		return NULL;
	}
	b->magic = HDR_MAGIC;
	b->owner = ta.id;
	b->size = size;
	b->prev = &ta.head;
	b->next = ta.head.next;
	ta.head.next->prev = b;
	ta.head.next = b;
	ta.st.bytes_in_use += size;
	ta.st.objs_in_use++;
	ta.st.allocs++;
	return b + 1;
}

void *
dpsock_lwip_calloc(size_t n, size_t size)
{
	void *p;

	if (size != 0 && n > SIZE_MAX / size) {
		ta.st.fails++;
		return NULL;
	}
	p = dpsock_lwip_malloc(n * size);
	if (p != NULL)
		memset(p, 0, n * size);
	return p;
}

void
dpsock_lwip_free(void *ptr)
{
	struct blk *b;

	if (ptr == NULL)
		return;
	b = (struct blk *)ptr - 1;
	if (b->magic != HDR_MAGIC)
		alloc_abort("free of a pointer it did not allocate (or double free)", ptr);
	if (b->owner != ta.id || ta.id == 0)
		alloc_abort("free on another thread than the allocating instance's", ptr);
	b->magic = 0;
	b->prev->next = b->next;
	b->next->prev = b->prev;
	ta.st.bytes_in_use -= b->size;
	ta.st.objs_in_use--;
	ta.st.frees++;
	free(b);
}

int
dpsock_lwip_alloc_init(uint64_t mem_limit, void *(*mem_get)(size_t), void (*mem_put)(void *))
{
	(void)mem_get; /* malloc, always: ASan sees each object */
	(void)mem_put;
	memset(&ta, 0, sizeof(ta));
	do
		ta.id = __atomic_add_fetch(&instance_seq, 1, __ATOMIC_RELAXED);
	while (ta.id == 0);
	ta.limit = mem_limit;
	ta.head.prev = ta.head.next = &ta.head;
	return 0;
}

void
dpsock_lwip_alloc_fini(void)
{
	while (ta.head.next != NULL && ta.head.next != &ta.head) {
		struct blk *b = ta.head.next;

		ta.head.next = b->next;
		b->magic = 0;
		free(b);
	}
	ta.head.prev = ta.head.next = &ta.head;
	ta.id = 0;
}

void
dpsock_lwip_mem_stats(struct dpsock_lwip_mem_stats *out)
{
	*out = ta.st;
}

/* For a harness check that failed: where each block lwIP holds came from
 * (ASan's allocation stacks), newest first. */
void fuzz_lwip_describe_live(void);

void
fuzz_lwip_describe_live(void)
{
	struct blk *b;

	for (b = ta.head.next; b != NULL && b != &ta.head; b = b->next) {
		fprintf(stderr, "lwIP block of %llu bytes:\n", (unsigned long long)b->size);
#ifdef FUZZ_ASAN
		__asan_describe_address(b + 1);
#endif
	}
}
