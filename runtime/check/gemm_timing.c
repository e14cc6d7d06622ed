/* clformer_check_gemm_time: the GEMM timing loop behind tools/tuning/gemm_bench,
 * kept in the library so that the tool needs only the public headers. */
#include "buffer.h"
#include "clock.h"
#include "clformer_check.h"
#include "gemm.h"
#include "gemm_provider.h"
#include "gemm_search.h"
#include "status.h"


static clformer_status run(cf_ctx *ctx, const clformer_gemm_shape *s, cl_mem a, cl_mem b,
                           cl_mem c)
{
    size_t lda = s->trans_a ? s->m : s->k, ldb = s->trans_b ? s->k : s->n, ldc = s->n;
    if (s->batch == 1)
        return cf_gemm(ctx, s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0f, a, 0, lda, b, 0, ldb,
                       0.0f, c, 0, ldc);
    return cf_gemm_strided_batched(ctx, s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0f, a, 0,
                                   lda, s->m * s->k, b, 0, ldb, s->k * s->n, 0.0f, c, 0, ldc,
                                   s->m * s->n, s->batch);
}

clformer_status clformer_check_gemm_time(clformer_context *ctx, const clformer_gemm_shape *s,
                                         double min_seconds, double *best_ms, double *gflops)
{
    if (!ctx || !s || !best_ms || !gflops || !s->m || !s->n || !s->k || !s->batch)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_gemm_time needs a context, a shape with m, n, k and "
                       "batch >= 1, and two outputs");
    const size_t na = s->m * s->k * s->batch, nb = s->k * s->n * s->batch,
                 nc = s->m * s->n * s->batch;
    cl_mem a = NULL, b = NULL, c = NULL;
    clformer_status st = cf_buffer_alloc(ctx, na, "A", &a);
    if (st == CLFORMER_OK) st = cf_buffer_alloc(ctx, nb, "B", &b);
    if (st == CLFORMER_OK) st = cf_buffer_alloc(ctx, nc, "C", &c);
    if (st == CLFORMER_OK) st = cf_fill(ctx, a, 0, na, 0.5f);
    if (st == CLFORMER_OK) st = cf_fill(ctx, b, 0, nb, 0.25f);
    if (st == CLFORMER_OK) st = run(ctx, s, a, b, c); /* compile + warm up */
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    double start = cf_now_s(), best = 1e30;
    for (int i = 0; st == CLFORMER_OK && (i < 3 || cf_now_s() - start < min_seconds) && i < 1000;
         i++) {
        double t0 = cf_now_s();
        st = run(ctx, s, a, b, c);
        if (st == CLFORMER_OK) st = cf_finish(ctx);
        double t = cf_now_s() - t0;
        if (t < best) best = t;
    }
    if (a) cf_buffer_free(ctx, a);
    if (b) cf_buffer_free(ctx, b);
    if (c) cf_buffer_free(ctx, c);
    if (st != CLFORMER_OK) return st;
    *best_ms = 1e3 * best;
    *gflops = cf_gemm_flops(s->m, s->n, s->k) * (double)s->batch / (best * 1e9);
    return CLFORMER_OK;
}

clformer_status clformer_check_gemm_kernel(clformer_context *ctx, const clformer_gemm_shape *s,
                                           const char **kernel)
{
    if (!ctx || !s || !kernel || !s->m || !s->n || !s->k || !s->batch)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_gemm_kernel needs a context, a shape with m, n, k and "
                       "batch >= 1, and an output");
    const cf_gemm_call g = {.trans_a = s->trans_a, .trans_b = s->trans_b, .m = s->m, .n = s->n,
                            .k = s->k, .batch = s->batch, .alpha = 1.0f, .beta = 0.0f};
    /* in cf_gemm_tile_sets' order (test_gemm_search holds the name to the set timed) */
    static const char *const routed[CF_GEMM_TILE_SETS] = {"tiled 128x128", "tiled 64x64",
                                                          "tiled 32x32"};
    const int set = ctx->gemm_provider == CLFORMER_GEMM_CLBLAST && ctx->gemm_search
                        ? cf_gemm_search_tiled_set(ctx, &g)
                        : -1;
    *kernel = set >= 0 ? routed[set] : clformer_gemm_provider_name(ctx->gemm_provider);
    return CLFORMER_OK;
}

clformer_status clformer_check_gemm_tiles(clformer_context *ctx, int block)
{
    if (block == 0) {
        ctx->forced_gemm_tiles = 0;
        return CLFORMER_OK;
    }
    for (int i = 0; i < CF_GEMM_TILE_SETS; i++) {
        const cf_gemm_tiles *t = &cf_gemm_tile_sets[i];
        if (t->gm != block) continue;
        if (ctx->gemm_provider != CLFORMER_GEMM_TILED)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "tile sets are the tiled GEMM provider's, and this context uses %s: "
                           "set CLFORMER_GEMM=tiled",
                           clformer_gemm_provider_name(ctx->gemm_provider));
        if (!cf_gemm_tiles_fit(ctx, t))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s cannot run the tiled GEMM kernel with %d x %d blocks (work-groups "
                           "of %d items): choose a smaller block",
                           ctx->info.name, block, block, (int)cf_gemm_tiles_items(t));
        ctx->forced_gemm_tiles = i + 1;
        return CLFORMER_OK;
    }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "the tiled GEMM provider has blocks of 128, 64 or 32 rows and columns, not %d",
                   block);
}
