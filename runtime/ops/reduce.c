/* Host side of cl/reduce.cl: fixed partitions, so results are repeatable. */
#include "reduce.h"
#include "buffer.h"
#include "launch.h"
#include "program.h"

#define MAX_PARTIALS 1024 /* the most any profile asks for (profile.c) */

clformer_status cf_reduce_sum(cf_ctx *ctx, cl_mem out, size_t out_off, cl_mem x, size_t x_off,
                              size_t n, bool square, bool accumulate)
{
    const size_t wg = ctx->reduce_wg;
    /* At least 4 work items' worth of data per group, at most the profile's
     * partition (why it differs between GPUs and CPUs: profile.c). */
    const size_t max_groups = ctx->device_profile.reduce_partials;
    size_t groups = (n + wg * 4 - 1) / (wg * 4);
    if (groups > max_groups) groups = max_groups;
    if (groups > MAX_PARTIALS) groups = MAX_PARTIALS;
    if (groups == 0) groups = 1;
    size_t chunk = (n + groups - 1) / groups;
    if (chunk == 0) chunk = 1;
    cl_mem partials;
    CF_TRY(cf_scratch(ctx, groups, &partials));
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_REDUCE_PARTIAL, &k));
    size_t global = groups * wg, local = wg;
    CF_TRY(CF_LAUNCH(ctx, "reduce", cf_f32_bytes(n + groups), k, 1, &global, &local,
                     CF_MEM(partials), CF_MEM(x), CF_U64(x_off), CF_U64(n), CF_U64(chunk),
                     CF_I32(square))); /* the item layout: GPU_LAYOUTS (cl/reduce.cl) */
    CF_TRY(cf_kernel_get(ctx, CF_K_REDUCE_FINAL, &k));
    global = wg;
    return CF_LAUNCH(ctx, "reduce", cf_f32_bytes(groups + 1 + accumulate), k, 1, &global,
                     &local, CF_MEM(out), CF_U64(out_off), CF_MEM(partials), CF_I32(groups),
                     CF_I32(accumulate));
}

size_t cf_colsum_rows_per_block(size_t rows)
{
    (void)rows;
    return 32;
}

clformer_status cf_colsum_final(cf_ctx *ctx, cl_mem out, size_t out_off, cl_mem partials,
                                size_t nblocks, size_t cols, bool accumulate)
{
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_COLSUM_FINAL, &k));
    size_t local = ctx->elementwise_wg, global = cf_round_up(cols, local);
    const size_t moved = nblocks * cols + cols + (accumulate ? cols : 0);
    return CF_LAUNCH(ctx, "reduce", cf_f32_bytes(moved), k, 1, &global, &local, CF_MEM(out),
                     CF_U64(out_off), CF_MEM(partials), CF_I32(nblocks), CF_I32(cols),
                     CF_I32(accumulate));
}

clformer_status cf_colsum(cf_ctx *ctx, cl_mem out, size_t out_off, cl_mem x, size_t x_off,
                          size_t rows, size_t cols, size_t ld, bool accumulate)
{
    if (cols == 0) return CLFORMER_OK;
    const size_t rpb = cf_colsum_rows_per_block(rows);
    const size_t nblocks = rows ? (rows + rpb - 1) / rpb : 1;
    if (!ctx->device_profile.gpu_layouts) {
        /* CPU devices: both passes in one launch, the same bits (cl/reduce.cl's
         * colsum_whole), the columns' items in about 8 groups so that the
         * cores share them (gpt-mini training on PoCL: 16 of a step's 174
         * launches gone) */
        cl_kernel k;
        CF_TRY(cf_kernel_get(ctx, CF_K_COLSUM_WHOLE, &k));
        const size_t run = cf_item_run(&ctx->device_profile), items = (cols + run - 1) / run;
        size_t local = (items + 7) / 8;
        if (local > ctx->elementwise_wg) local = ctx->elementwise_wg;
        size_t global = cf_round_up(items, local);
        return CF_LAUNCH(ctx, "reduce", cf_f32_bytes(rows * cols + cols + (accumulate ? cols : 0)),
                         k, 1, &global, &local, CF_MEM(out), CF_U64(out_off), CF_MEM(x),
                         CF_U64(x_off), CF_I32(rows), CF_I32(cols), CF_I32(ld), CF_I32(rpb),
                         CF_I32(accumulate));
    }
    cl_mem partials;
    CF_TRY(cf_scratch(ctx, nblocks * cols, &partials));
    if (rows == 0) CF_TRY(cf_fill(ctx, partials, 0, cols, 0.0f));
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_COLSUM_PARTIAL, &k));
    size_t local[2] = {1, 1}, global[2] = {1, nblocks};
    cf_run_grid(ctx, cols, &global[0], &local[0]);
    if (rows)
        CF_TRY(CF_LAUNCH(ctx, "reduce", cf_f32_bytes(rows * cols + nblocks * cols), k, 2, global,
                         local, CF_MEM(partials), CF_MEM(x),
                         CF_U64(x_off), CF_I32(rows), CF_I32(cols), CF_I32(ld), CF_I32(rpb)));
    return cf_colsum_final(ctx, out, out_off, partials, nblocks, cols, accumulate);
}
