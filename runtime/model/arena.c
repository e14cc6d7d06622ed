/* Growing an arena's buffers (arena.h). */
#include "arena.h"

clformer_status cf_arena_reserve(cf_ctx *ctx, cl_mem *buf, size_t *capacity, size_t need,
                                 const char *what)
{
    if (need <= *capacity) return CLFORMER_OK;
    cf_buffer_free(ctx, *buf);
    *buf = NULL;
    *capacity = 0;
    CF_TRY(cf_buffer_alloc(ctx, need, what, buf));
    *capacity = need;
    return CLFORMER_OK;
}

cf_view cf_split_arena_take(cf_split_arena *a, size_t count)
{
    const size_t n = cf_arena_round(count);
    size_t i = a->count ? a->count - 1 : 0;
    /* a buffer filled past the limit (by one tensor larger than it) takes no more */
    const bool full = a->used[i] >= a->limit || n > a->limit - a->used[i];
    if (a->count == 0 || (a->used[i] > 0 && full)) {
        if (a->count == CF_SPLIT_ARENA_MAX) {
            a->overflow = true; /* keep counting in the last buffer; reserve refuses */
        } else {
            i = a->count++;
            a->used[i] = 0;
        }
    }
    cf_view v = {a->bufs ? a->bufs[i] : NULL, a->used[i]};
    a->used[i] += n;
    return v;
}

void cf_split_arena_union(cf_split_arena *a, const cf_split_arena *b)
{
    /* the buffer a cursor is in is its last; a buffer it left behind is
     * never taken from again, so the larger of each buffer's use suffices */
    for (size_t i = a->count; i < b->count; i++) a->used[i] = 0;
    if (b->count > a->count) a->count = b->count;
    for (size_t i = 0; i < b->count; i++)
        if (b->used[i] > a->used[i]) a->used[i] = b->used[i];
    a->overflow = a->overflow || b->overflow;
}

clformer_status cf_split_buffers_reserve(cf_ctx *ctx, cf_split_buffers *b,
                                         const cf_split_arena *a, const char *what)
{
    if (a->overflow)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "cannot allocate %s: more than %d buffers of the device's largest "
                       "allocation (%.1f MiB) are needed; use a smaller batch or model",
                       what, CF_SPLIT_ARENA_MAX, (double)a->limit * 4 / (1024.0 * 1024.0));
    for (size_t i = 0; i < a->count; i++)
        if (i < b->count && b->capacity[i] < a->used[i]) {
            cf_buffer_free(ctx, b->bufs[i]);
            b->bufs[i] = NULL;
            b->capacity[i] = 0;
        }
    for (size_t i = 0; i < a->count; i++) {
        if (i >= b->count) {
            b->bufs[i] = NULL;
            b->capacity[i] = 0;
            b->count = i + 1;
        }
        if (b->bufs[i]) continue;
        CF_TRY(cf_buffer_alloc(ctx, a->used[i], what, &b->bufs[i]));
        b->capacity[i] = a->used[i];
    }
    return CLFORMER_OK;
}

size_t cf_split_buffers_elements(const cf_split_buffers *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->count; i++) n += b->capacity[i];
    return n;
}

void cf_split_buffers_free(cf_ctx *ctx, cf_split_buffers *b)
{
    for (size_t i = 0; i < b->count; i++) cf_buffer_free(ctx, b->bufs[i]);
    b->count = 0;
}
