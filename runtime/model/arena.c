/* Growing an arena's buffer (arena.h). */
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
