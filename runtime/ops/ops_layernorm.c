/*
 * LayerNorm over the last dimension (cl/layernorm.cl): the host side of
 * cf_layernorm_forward and cf_layernorm_backward (runtime/ops/ops.h).
 *
 * Both directions run a row per work-group or per work item (cf_row_grid).
 * Backward adds a column-partials kernel for dweight and dbias (reduce.h's
 * [block][col] layout and row blocking) and a kernel that finishes both, so
 * parameter gradients are summed over rows in a fixed order (no atomics)
 * and repeat bit for bit.
 */
#include "launch.h"
#include "ops.h"
#include "program.h"
#include "reduce.h"

clformer_status cf_layernorm_forward(cf_ctx *ctx, cf_view out, cf_view mean, cf_view rstd,
                                     cf_view inp, cf_view weight, cf_view bias, size_t N,
                                     size_t C, float eps)
{
    if (N == 0 || C == 0) return CLFORMER_OK;
    CF_TRY(cf_check_rows("cf_layernorm_forward", N, C));
    if (!out.buf || !mean.buf || !rstd.buf || !inp.buf || !weight.buf || !bias.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_layernorm_forward: out, mean, rstd, inp, weight and bias must all be "
                       "device buffers");
    if (!(eps > 0.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_layernorm_forward: eps must be positive (got %g); PyTorch's default "
                       "is 1e-5",
                       (double)eps);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_LAYERNORM_FORWARD, &k));
    size_t local, global;
    cf_row_grid(ctx, N, &global, &local);
    /* reads inp, weight, bias; writes out, mean, rstd */
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(2 * N * C + 2 * C + 2 * N), k, 1, &global,
                     &local, CF_MEM(out.buf), CF_U64(out.off), CF_MEM(mean.buf), CF_U64(mean.off), CF_MEM(rstd.buf), CF_U64(rstd.off),
                     CF_MEM(inp.buf), CF_U64(inp.off), CF_MEM(weight.buf), CF_U64(weight.off),
                     CF_MEM(bias.buf), CF_U64(bias.off), CF_I32(N), CF_I32(C), CF_F32(eps),
                     CF_I32(ctx->precision)));
    return CLFORMER_OK; /* rounded as stored */
}

clformer_status cf_layernorm_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dbias,
                                      cf_view dout, cf_view inp, cf_view weight, cf_view mean,
                                      cf_view rstd, size_t N, size_t C, bool accumulate)
{
    if (N == 0 || C == 0) return CLFORMER_OK;
    CF_TRY(cf_check_rows("cf_layernorm_backward", N, C));
    if (!dinp.buf || !dweight.buf || !dbias.buf || !dout.buf || !inp.buf || !weight.buf ||
        !mean.buf || !rstd.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_layernorm_backward: every tensor (dinp, dweight, dbias, dout, inp, "
                       "weight, mean, rstd) must be a device buffer");
    if (dinp.buf == dout.buf && dinp.off < dout.off + N * C && dout.off < dinp.off + N * C)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_layernorm_backward: dinp overlaps dout; runtime/ops/ops.h requires "
                       "separate storage for them");

    /* dweight and dbias: per-block partials of both (one read of dout), then a
     * fixed-order sum of each. */
    const size_t rpb = cf_colsum_rows_per_block(N), nblocks = (N + rpb - 1) / rpb;
    cl_mem partials;
    CF_TRY(cf_scratch(ctx, 2 * nblocks * C, &partials));
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_LAYERNORM_BACKWARD_PARAMS, &k));
    size_t local2[2] = {1, 1}, global2[2] = {1, nblocks};
    cf_run_grid(ctx, C, &global2[0], &local2[0]);
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(2 * N * C + 2 * N + 2 * nblocks * C), k, 2,
                     global2, local2, CF_MEM(partials),
                     CF_U64(nblocks * C), CF_MEM(dout.buf), CF_U64(dout.off), CF_MEM(inp.buf),
                     CF_U64(inp.off), CF_MEM(mean.buf), CF_U64(mean.off), CF_MEM(rstd.buf),
                     CF_U64(rstd.off), CF_I32(N), CF_I32(C), CF_I32(rpb)));
    CF_TRY(cf_kernel_get(ctx, CF_K_LAYERNORM_BACKWARD_PARAMS_FINAL, &k));
    size_t local1 = ctx->elementwise_wg, global1 = C;
    /* partials read; dweight and dbias accumulated into (read and written) */
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(2 * nblocks * C + 4 * C), k, 1, &global1,
                     &local1, CF_MEM(dweight.buf),
                     CF_U64(dweight.off), CF_MEM(dbias.buf), CF_U64(dbias.off), CF_MEM(partials),
                     CF_U64(nblocks * C), CF_I32(nblocks), CF_I32(C)));

    /* dinp: a row per group or item */
    CF_TRY(cf_kernel_get(ctx, CF_K_LAYERNORM_BACKWARD_INPUT, &k));
    size_t local, global;
    cf_row_grid(ctx, N, &global, &local);
    /* reads dout, inp, weight, mean, rstd (and dinp when accumulating); writes dinp */
    const size_t moved = (accumulate ? 4 : 3) * N * C + C + 2 * N;
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(moved), k, 1, &global, &local,
                     CF_MEM(dinp.buf), CF_U64(dinp.off),
                     CF_MEM(dout.buf), CF_U64(dout.off), CF_MEM(inp.buf), CF_U64(inp.off),
                     CF_MEM(weight.buf), CF_U64(weight.off), CF_MEM(mean.buf), CF_U64(mean.off),
                     CF_MEM(rstd.buf), CF_U64(rstd.off), CF_I32(N), CF_I32(C),
                     CF_I32(accumulate), CF_I32(ctx->precision)));
    return CLFORMER_OK; /* rounded as stored */
}
