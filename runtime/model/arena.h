/*
 * Carving device buffers into tensors: a cursor hands out consecutive
 * element ranges, each rounded up to 16 elements (64 bytes) so that every
 * tensor starts aligned for vector loads on every device. With NULL
 * buffers it only counts, so a layout can be sized before it is allocated.
 *
 * cf_arena carves one buffer. cf_split_arena carves as many buffers as it
 * needs, each at most `limit` elements (the device's largest allocation):
 * a tensor that does not fit in what is left of the current buffer starts
 * the next one, so no tensor straddles two buffers.
 */
#ifndef CF_ARENA_H
#define CF_ARENA_H

#include "buffer.h"

typedef struct {
    cl_mem buf;
    size_t next; /* elements handed out so far */
} cf_arena;

static inline size_t cf_arena_round(size_t count) { return (count + 15) & ~(size_t)15; }

static inline cf_view cf_arena_take(cf_arena *a, size_t count)
{
    cf_view v = {a->buf, a->next};
    a->next += cf_arena_round(count);
    return v;
}

/* Makes *buf hold at least `need` elements: a buffer of *capacity elements
 * is kept when large enough, else replaced (its contents are not kept). */
clformer_status cf_arena_reserve(cf_ctx *ctx, cl_mem *buf, size_t *capacity, size_t need,
                                 const char *what);

/* Buffers one split arena may use: 64 x the largest allocation (a device's
 * largest allocation is at least a quarter of its memory, OpenCL 1.2). */
#define CF_SPLIT_ARENA_MAX 64

typedef struct {
    const cl_mem *bufs;              /* NULL while counting */
    size_t limit;                    /* elements one buffer may hold */
    size_t count;                    /* buffers begun so far */
    size_t used[CF_SPLIT_ARENA_MAX]; /* elements handed out of each */
    bool overflow;                   /* needed more than CF_SPLIT_ARENA_MAX buffers */
} cf_split_arena;

/* The next `count` elements: in the current buffer when they fit, else at
 * the start of a new one (alone in it when count exceeds the limit). */
cf_view cf_split_arena_take(cf_split_arena *a, size_t count);

/* Makes *a the state past both *a and *b, two layouts begun from one state
 * (b laid out after a was copied): what follows is placed after both, and
 * the two share memory (for tensors never live at the same time). */
void cf_split_arena_union(cf_split_arena *a, const cf_split_arena *b);

/* The buffers of a split arena, grown as batches need. */
typedef struct {
    cl_mem bufs[CF_SPLIT_ARENA_MAX];
    size_t capacity[CF_SPLIT_ARENA_MAX]; /* elements */
    size_t count;                        /* buffers allocated */
} cf_split_buffers;

/* Makes b's first a->count buffers hold what the counting pass `a` handed
 * out; buffers too small are all released before any is allocated, so
 * that the old and the new never exist together. */
clformer_status cf_split_buffers_reserve(cf_ctx *ctx, cf_split_buffers *b,
                                         const cf_split_arena *a, const char *what);
size_t cf_split_buffers_elements(const cf_split_buffers *b);
void cf_split_buffers_free(cf_ctx *ctx, cf_split_buffers *b);

#endif
