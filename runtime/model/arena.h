/*
 * Carving one device buffer into tensors: a cursor hands out consecutive
 * element ranges, each rounded up to 16 elements (64 bytes) so that every
 * tensor starts aligned for vector loads on every device. With a NULL
 * buffer it only counts, so a layout can be sized before it is allocated.
 */
#ifndef CF_ARENA_H
#define CF_ARENA_H

#include "buffer.h"

typedef struct {
    cl_mem buf;
    size_t next; /* elements handed out so far */
} cf_arena;

static inline cf_view cf_arena_take(cf_arena *a, size_t count)
{
    cf_view v = {a->buf, a->next};
    a->next += (count + 15) & ~(size_t)15;
    return v;
}

/* Makes *buf hold at least `need` elements: a buffer of *capacity elements
 * is kept when large enough, else replaced (its contents are not kept). */
clformer_status cf_arena_reserve(cf_ctx *ctx, cl_mem *buf, size_t *capacity, size_t need,
                                 const char *what);

#endif
