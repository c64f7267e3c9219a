/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alloc.c — the per-thread allocator behind lwIP's mem_malloc()/memp_malloc()
 * (MEM_LIBC_MALLOC + MEMP_MEM_MALLOC route mem_clib_* here).
 *
 * Each thread that owns an lwIP instance has its own size-class free lists
 * carved from 64 KiB chunks (from malloc(), or from the memory source the
 * instance was given: dpsockd uses DPDK memory, so that lwIP's buffers can be
 * handed to the NIC without a copy); nothing is shared, so no
 * locks and no false sharing between workers. Blocks above the largest class
 * go straight to malloc() but stay on a per-thread list, so that
 * dpsock_lwip_instance_fini() can release everything. Freed class blocks go
 * back to their thread's free list; memory returns to malloc() only at fini.
 *
 * Every block starts with a 16-byte header (class, requested size, owner
 * instance id), so free() needs no size and a free on the wrong thread or of
 * a foreign pointer aborts with a message instead of corrupting a free list.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwip/opt.h"

#include "dpsock_lwip.h"
#include "lwip_glue_priv.h"

#define ALLOC_ALIGN     16u             /* == max_align_t on x86-64 and arm64 */
#define CHUNK_SIZE      (64u * 1024u)
#define HDR_MAGIC       0xd95c0c1au
#define CLASS_BIG       0xffffu

_Static_assert(MEM_ALIGNMENT <= ALLOC_ALIGN,
               "MEM_ALIGNMENT must not exceed the allocator's alignment (pbuf payload rounding)");

/* Block sizes, header included; multiples of ALLOC_ALIGN. Chosen around
 * lwIP's objects: pcbs, segs and pbuf headers (< 256) and PBUF_RAM buffers
 * of one MSS plus headers (~1.6 KiB). */
static const uint32_t class_size[] = {
    32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096,
};
#define NUM_CLASSES (sizeof(class_size) / sizeof(class_size[0]))
#define MAX_CLASS_SIZE 4096u

struct blk_hdr {
    uint32_t magic;
    uint16_t cls;       /* index into class_size, or CLASS_BIG */
    uint16_t pad;
    uint32_t size;      /* bytes requested (counted in bytes_in_use) */
    uint32_t owner;     /* instance id of the allocating thread */
};
_Static_assert(sizeof(struct blk_hdr) == ALLOC_ALIGN, "header keeps 16-byte alignment");

/* Big blocks (> MAX_CLASS_SIZE) carry a link in front of their header. */
struct big_link {
    struct big_link *prev, *next;
};
_Static_assert(sizeof(struct big_link) % ALLOC_ALIGN == 0, "link keeps alignment");

struct free_blk {
    struct free_blk *next;
};

struct chunk {
    struct chunk *next;
    alignas(ALLOC_ALIGN) unsigned char mem[];
};

struct thread_alloc {
    uint32_t id;                        /* 0 = no allocator on this thread */
    uint64_t limit;                     /* 0 = none */
    struct free_blk *free_list[NUM_CLASSES];
    struct chunk *chunks;
    unsigned char *bump, *bump_end;     /* uncarved rest of the newest chunk */
    struct big_link big;                /* list head of big blocks */
    struct dpsock_lwip_mem_stats st;
    void *(*mem_get)(size_t size);      /* where chunks come from */
    void (*mem_put)(void *p);
};

static _Thread_local struct thread_alloc ta;

/* Per-process by design: hands out distinct instance ids (owner checks). */
static atomic_uint alloc_instance_seq;

static inline unsigned int
size_to_class(size_t total)
{
    unsigned int c = 0;

    while (class_size[c] < total)
        c++;
    return c;
}

static void __attribute__((noreturn, cold))
alloc_abort(const char *what, const void *ptr)
{
    fprintf(stderr, "dpsock lwIP allocator: %s (ptr %p, thread instance %u)\n",
            what, ptr, ta.id);
    abort();
}

static void *
carve(unsigned int c)
{
    uint32_t sz = class_size[c];

    if ((size_t)(ta.bump_end - ta.bump) < sz) {
        struct chunk *ch = ta.mem_get(sizeof(*ch) + CHUNK_SIZE);

        if (ch == NULL)
            return NULL;
        ch->next = ta.chunks;
        ta.chunks = ch;
        ta.bump = ch->mem;
        ta.bump_end = ch->mem + CHUNK_SIZE;
    }
    void *b = ta.bump;
    ta.bump += sz;
    return b;
}

void *
dpsock_lwip_malloc(size_t size)
{
    struct blk_hdr *h;

    if (ta.id == 0)
        alloc_abort("allocation on a thread without an lwIP instance", NULL);
    if (size > UINT32_MAX - MAX_CLASS_SIZE ||
        (ta.limit != 0 && ta.st.bytes_in_use + size > ta.limit)) {
        ta.st.fails++;
        return NULL;
    }

    size_t total = size + sizeof(struct blk_hdr);
    if (total <= MAX_CLASS_SIZE) {
        unsigned int c = size_to_class(total);
        struct free_blk *f = ta.free_list[c];

        if (f != NULL) {
            ta.free_list[c] = f->next;
            h = (struct blk_hdr *)f;
        } else {
            h = carve(c);
            if (h == NULL) {
                ta.st.fails++;
                return NULL;
            }
        }
        h->cls = (uint16_t)c;
    } else {
        struct big_link *l = ta.mem_get(sizeof(*l) + total);

        if (l == NULL) {
            ta.st.fails++;
            return NULL;
        }
        l->prev = &ta.big;
        l->next = ta.big.next;
        ta.big.next->prev = l;
        ta.big.next = l;
        h = (struct blk_hdr *)(l + 1);
        h->cls = CLASS_BIG;
    }
    h->magic = HDR_MAGIC;
    h->pad = 0;
    h->size = (uint32_t)size;
    h->owner = ta.id;
    ta.st.bytes_in_use += size;
    ta.st.objs_in_use++;
    ta.st.allocs++;
    return h + 1;
}

void *
dpsock_lwip_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size) {
        ta.st.fails++;
        return NULL;
    }
    void *p = dpsock_lwip_malloc(n * size);
    if (p != NULL)
        memset(p, 0, n * size);
    return p;
}

void
dpsock_lwip_free(void *ptr)
{
    if (ptr == NULL)
        return;

    struct blk_hdr *h = (struct blk_hdr *)ptr - 1;

    if (h->magic != HDR_MAGIC)
        alloc_abort("free of a pointer it did not allocate (or double free)", ptr);
    if (h->owner != ta.id || ta.id == 0)
        alloc_abort("free on another thread than the allocating instance's", ptr);
    h->magic = 0;
    ta.st.bytes_in_use -= h->size;
    ta.st.objs_in_use--;
    ta.st.frees++;
    if (h->cls == CLASS_BIG) {
        struct big_link *l = (struct big_link *)h - 1;

        l->prev->next = l->next;
        l->next->prev = l->prev;
        ta.mem_put(l);
    } else {
        struct free_blk *f = (struct free_blk *)h;

        f->next = ta.free_list[h->cls];
        ta.free_list[h->cls] = f;
    }
}

int
dpsock_lwip_alloc_init(uint64_t mem_limit, void *(*mem_get)(size_t), void (*mem_put)(void *))
{
    memset(&ta, 0, sizeof(ta));
    /* ids start at 1; wrap-around after 2^32 instances is harmless (only
     * live instances are compared) but skip 0, which means "none" */
    do {
        ta.id = atomic_fetch_add_explicit(&alloc_instance_seq, 1, memory_order_relaxed) + 1;
    } while (ta.id == 0);
    ta.limit = mem_limit;
    ta.mem_get = mem_get != NULL ? mem_get : malloc;
    ta.mem_put = mem_put != NULL ? mem_put : free;
    ta.big.prev = ta.big.next = &ta.big;
    return 0;
}

void
dpsock_lwip_alloc_fini(void)
{
    while (ta.big.next != NULL && ta.big.next != &ta.big) {
        struct big_link *l = ta.big.next;

        ta.big.next = l->next;
        ta.mem_put(l);
    }
    while (ta.chunks != NULL) {
        struct chunk *ch = ta.chunks;

        ta.chunks = ch->next;
        ta.mem_put(ch);
    }
    memset(ta.free_list, 0, sizeof(ta.free_list));
    ta.bump = ta.bump_end = NULL;
    ta.big.prev = ta.big.next = &ta.big;
    ta.id = 0;          /* counters (ta.st) stay readable */
}

void
dpsock_lwip_mem_stats(struct dpsock_lwip_mem_stats *out)
{
    *out = ta.st;
}
