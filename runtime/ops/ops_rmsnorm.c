/*
 * RMSNorm over the last dimension (cl/rmsnorm.cl): the host side of
 * cf_rmsnorm_forward and cf_rmsnorm_backward (runtime/ops/ops.h). Its
 * descriptor, reference and conformance cases are runtime/check/conf_rmsnorm.c.
 */
#include "launch.h"
#include "ops.h"
#include "program.h"

clformer_status cf_rmsnorm_forward(cf_ctx *ctx, cf_view out, cf_view rstd, cf_view inp,
                                   cf_view weight, size_t N, size_t C, float eps)
{
    if (N == 0 || C == 0) return CLFORMER_OK;
    CF_TRY(cf_check_rows("cf_rmsnorm_forward", N, C));
    if (!out.buf || !rstd.buf || !inp.buf || !weight.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_rmsnorm_forward: out, rstd, inp and weight must all be device buffers");
    if (!(eps > 0.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_rmsnorm_forward: eps must be positive (got %g); 1e-5 or 1e-6 are usual",
                       (double)eps);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_RMSNORM_FORWARD, &k));
    size_t local, global;
    cf_row_grid(ctx, N, &global, &local);
    /* reads inp, weight; writes out, rstd */
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(2 * N * C + C + N), k, 1, &global, &local,
                     CF_VIEW(out), CF_VIEW(rstd), CF_VIEW(inp), CF_VIEW(weight), CF_I32(N),
                     CF_I32(C), CF_F32(eps), CF_I32(ctx->precision)));
    return CLFORMER_OK; /* out rounded as stored */
}

clformer_status cf_rmsnorm_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dout,
                                    cf_view inp, cf_view weight, cf_view rstd, size_t N,
                                    size_t C, bool accumulate)
{
    if (N == 0 || C == 0) return CLFORMER_OK;
    CF_TRY(cf_check_rows("cf_rmsnorm_backward", N, C));
    if (!dinp.buf || !dweight.buf || !dout.buf || !inp.buf || !weight.buf || !rstd.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_rmsnorm_backward: every tensor (dinp, dweight, dout, inp, weight, "
                       "rstd) must be a device buffer");
    if (dinp.buf == dout.buf && dinp.off < dout.off + N * C && dout.off < dinp.off + N * C)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_rmsnorm_backward: dinp overlaps dout; runtime/ops/ops.h requires "
                       "separate storage for them");
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_RMSNORM_BACKWARD_WEIGHT, &k));
    size_t local1 = ctx->elementwise_wg, global1 = C;
    /* reads dout, inp, rstd; dweight accumulated into */
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(2 * N * C + N + 2 * C), k, 1, &global1,
                     &local1, CF_VIEW(dweight), CF_VIEW(dout), CF_VIEW(inp), CF_VIEW(rstd),
                     CF_I32(N), CF_I32(C)));
    CF_TRY(cf_kernel_get(ctx, CF_K_RMSNORM_BACKWARD_INPUT, &k));
    size_t local, global;
    cf_row_grid(ctx, N, &global, &local);
    /* reads dout, inp, weight, rstd (and dinp when accumulating); writes dinp */
    const size_t moved = (accumulate ? 4 : 3) * N * C + C + N;
    CF_TRY(CF_LAUNCH(ctx, "layernorm", cf_f32_bytes(moved), k, 1, &global, &local,
                     CF_VIEW(dinp), CF_VIEW(dout), CF_VIEW(inp), CF_VIEW(weight), CF_VIEW(rstd),
                     CF_I32(N), CF_I32(C), CF_I32(accumulate), CF_I32(ctx->precision)));
    return CLFORMER_OK; /* dinp rounded as stored */
}
