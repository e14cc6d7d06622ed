/*
 * The tiled provider: clformer's own product kernel (cl/gemm.cl), built per
 * transpose pair and tile set. Made for GPUs, where CLBlast's kernels ran
 * base's products at 8-41% of an H200's FMA peak (docs/gpu/); taken only
 * when CLFORMER_GEMM=tiled asks, until a GPU's measurements say where it
 * wins (docs/PERFORMANCE.md).
 *
 * Tile sets: a 128 x 128 block of C per work-group of 256 items (8 x 8
 * outputs each) where a product has enough such blocks to give every compute
 * unit two; else 64 x 64 blocks (256 items, 4 x 4 each), else 32 x 32 (64
 * items), each only where the device's work-group and local memory allow it.
 * A strided batch is the grid's third dimension; a batch with a list of
 * offsets is one launch per product.
 */
#include "gemm_provider.h"
#include "fnv1a.h"
#include "launch.h"
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cf_gemm_tiles cf_gemm_tile_sets[CF_GEMM_TILE_SETS] = {
    {128, 128, 16, 8, 8}, /* 256 items, 0.25 floats read from local memory a multiply-add */
    {64, 64, 16, 4, 4},   /* 256 items, 0.5 */
    {32, 32, 16, 4, 4},   /* 64 items, 0.5 */
};

size_t cf_gemm_tiles_items(const cf_gemm_tiles *t)
{
    return (size_t)(t->gm / t->wm) * (size_t)(t->gn / t->wn);
}

static uint64_t local_bytes_of(const cf_gemm_tiles *t)
{
    return 4u * (uint64_t)t->gk * (uint64_t)(t->gm + 4 + t->gn + 4); /* rows padded by 4 */
}

void cf_gemm_tiles_options(const cf_gemm_tiles *t, bool trans_a, bool trans_b, char *out,
                           size_t cap)
{
    snprintf(out, cap, "-DGM=%d -DGN=%d -DGK=%d -DWM=%d -DWN=%d -DTRANS_A=%d -DTRANS_B=%d", t->gm,
             t->gn, t->gk, t->wm, t->wn, trans_a ? 1 : 0, trans_b ? 1 : 0);
}

bool cf_gemm_tiles_fit(const cf_ctx *ctx, const cf_gemm_tiles *t)
{
    return cf_gemm_tiles_items(t) <= ctx->info.max_work_group_size &&
           local_bytes_of(t) <= ctx->info.local_mem_bytes;
}

clformer_status cf_gemm_tiled_identity(const cf_ctx *ctx, char *out, size_t cap)
{
    char *source = NULL;
    CF_TRY(cf_program_source(ctx->kernel_dir, "gemm", &source));
    snprintf(out, cap, "cl/gemm.cl fnv1a %016llx",
             (unsigned long long)cf_fnv1a(CF_FNV1A_INIT, source, strlen(source)));
    free(source);
    return CLFORMER_OK;
}

/* Set `set` where set >= 0 and the device runs it; else the set a context
 * forces, if the device runs it; else the first set the device can run
 * whose blocks give each compute unit two groups (the last that it can run
 * when none does); false when none fits. */
static bool tiles_for(const cf_ctx *ctx, const cf_gemm_call *g, int set, cf_gemm_tiles *out)
{
    if (set >= 0) {
        if (set >= CF_GEMM_TILE_SETS || !cf_gemm_tiles_fit(ctx, &cf_gemm_tile_sets[set]))
            return false;
        *out = cf_gemm_tile_sets[set];
        return true;
    }
    const int forced = ctx->forced_gemm_tiles;
    if (forced >= 1 && forced <= CF_GEMM_TILE_SETS &&
        cf_gemm_tiles_fit(ctx, &cf_gemm_tile_sets[forced - 1])) {
        *out = cf_gemm_tile_sets[forced - 1];
        return true;
    }
    const double units = ctx->info.compute_units ? ctx->info.compute_units : 1;
    bool found = false;
    for (size_t i = 0; i < CF_GEMM_TILE_SETS; i++) {
        const cf_gemm_tiles *t = &cf_gemm_tile_sets[i];
        if (!cf_gemm_tiles_fit(ctx, t)) continue;
        *out = *t;
        found = true;
        const double blocks = (double)((g->m + t->gm - 1) / t->gm) *
                              (double)((g->n + t->gn - 1) / t->gn) * (double)g->batch;
        if (blocks >= 2 * units) break;
    }
    return found;
}

/* One launch: `batch` products at a_off + i * a_stride, ... */
static clformer_status launch(cf_ctx *ctx, const cf_gemm_call *g, cl_kernel kernel,
                              const cf_gemm_tiles *t, size_t a_off, size_t b_off, size_t c_off,
                              size_t batch, float alpha, float beta)
{
    const size_t local[3] = {(size_t)(t->gn / t->wn), (size_t)(t->gm / t->wm), 1};
    const size_t global[3] = {(g->n + t->gn - 1) / t->gn * local[0],
                              (g->m + t->gm - 1) / t->gm * local[1], batch};
    cf_gemm_call part = *g;
    part.batch = batch, part.alpha = alpha, part.beta = beta, part.betas = NULL;
    return CF_LAUNCH_FLOP(ctx, "gemm", cf_gemm_call_bytes(&part), cf_gemm_call_flop(&part),
                          kernel, 3, global, local, CF_MEM(g->a), CF_U64(a_off),
                          CF_I32(g->lda), CF_U64(g->a_stride), CF_MEM(g->b), CF_U64(b_off),
                          CF_I32(g->ldb), CF_U64(g->b_stride), CF_MEM(g->c), CF_U64(c_off),
                          CF_I32(g->ldc), CF_U64(g->c_stride), CF_I32(g->m), CF_I32(g->n),
                          CF_I32(g->k), CF_F32(alpha), CF_F32(beta));
}

clformer_status cf_gemm_tiled(cf_ctx *ctx, const cf_gemm_call *g)
{
    return cf_gemm_tiled_with(ctx, g, -1);
}

clformer_status cf_gemm_tiled_with(cf_ctx *ctx, const cf_gemm_call *g, int set)
{
    CF_TRY(cf_gemm_check_int_sizes(g));
    cf_gemm_tiles t;
    /* what the message names: the set asked for, else the smallest */
    const cf_gemm_tiles *needed = set >= 0 && set < CF_GEMM_TILE_SETS
                                      ? &cf_gemm_tile_sets[set]
                                      : &cf_gemm_tile_sets[CF_GEMM_TILE_SETS - 1];
    if (!tiles_for(ctx, g, set, &t))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the tiled GEMM provider needs work-groups of %zu items and %llu bytes of "
                       "local memory, more than %s allows: use CLFORMER_GEMM=clblast",
                       cf_gemm_tiles_items(needed), (unsigned long long)local_bytes_of(needed),
                       ctx->info.name);
    char options[128];
    cf_gemm_tiles_options(&t, g->trans_a, g->trans_b, options, sizeof options);
    cl_kernel kernel;
    CF_TRY(cf_kernel(ctx, "gemm", options, "gemm_tiled", &kernel));
    if (!g->a_offs)
        return launch(ctx, g, kernel, &t, g->a_off, g->b_off, g->c_off, g->batch, g->alpha,
                      g->beta);
    for (size_t i = 0; i < g->batch; i++)
        CF_TRY(launch(ctx, g, kernel, &t, g->a_offs[i], g->b_offs[i], g->c_offs[i], 1,
                      g->alphas[i], g->betas[i]));
    return CLFORMER_OK;
}
