/*
 * Linear layers, y = x W^T + b with W (OC, IC) as PyTorch stores it: the
 * host side of cf_linear_forward and cf_linear_backward (runtime/ops/ops.h).
 * Every product is one cf_gemm (CLBlast); the bias is a tiny kernel in
 * cl/activation.cl and dbias a deterministic cf_colsum.
 *
 * Forward is a GEMM with beta = 0, then a bias-add pass. The other order
 * (bias written into every row, GEMM with beta = 1) measured ~6% slower for
 * a 4096x512x512 layer on PoCL 3.1: CLBlast's beta = 1 product costs more
 * than the separate bias pass.
 */
#include "gemm.h"
#include "launch.h"
#include "ops.h"
#include "program.h"
#include "reduce.h"

#include <limits.h>

static clformer_status check_sizes(const char *op, size_t N, size_t IC, size_t OC)
{
    if (N > INT_MAX || IC > INT_MAX || OC > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: N=%zu IC=%zu OC=%zu exceed the kernels' int range", op, N, IC, OC);
    return CLFORMER_OK;
}

clformer_status cf_linear_forward(cf_ctx *ctx, cf_view out, cf_view inp, cf_view weight,
                                  cf_view bias, size_t N, size_t IC, size_t OC)
{
    CF_TRY(check_sizes("cf_linear_forward", N, IC, OC));
    if (N == 0 || OC == 0) return CLFORMER_OK;
    if (!out.buf || !inp.buf || !weight.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_linear_forward: out, inp and weight must be device buffers");
    if (IC == 0) /* an empty product: zero, plus the bias below */
        CF_TRY(cf_fill(ctx, out.buf, out.off, N * OC, 0.0f));
    else
        CF_TRY(cf_gemm(ctx, false, true, N, OC, IC, 1.0f, inp.buf, inp.off, IC, weight.buf,
                       weight.off, IC, 0.0f, out.buf, out.off, OC));
    if (!bias.buf) return cf_round_activation(ctx, out, N * OC);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_ADD, &k));
    size_t local[2] = {ctx->elementwise_wg, 1}, global[2] = {OC, N};
    /* out += bias, in place: out read and written, bias read */
    CF_TRY(CF_LAUNCH(ctx, "activation", cf_f32_bytes(2 * N * OC + OC), k, 2, global, local,
                     CF_MEM(out.buf), CF_U64(out.off),
                     CF_MEM(bias.buf), CF_U64(bias.off), CF_I32(N), CF_I32(OC)));
    return cf_round_activation(ctx, out, N * OC);
}

clformer_status cf_linear_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dbias,
                                   cf_view dout, cf_view inp, cf_view weight, size_t N,
                                   size_t IC, size_t OC, bool accumulate)
{
    CF_TRY(check_sizes("cf_linear_backward", N, IC, OC));
    if (!dweight.buf || !dout.buf || !inp.buf || (dinp.buf && !weight.buf))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_linear_backward: dweight, dout and inp (and weight when dinp is "
                       "wanted) must be device buffers");
    /* dinp (N, IC) (+)= dout (N, OC) W (OC, IC) */
    if (dinp.buf && N && IC) {
        if (OC == 0) {
            if (!accumulate) CF_TRY(cf_fill(ctx, dinp.buf, dinp.off, N * IC, 0.0f));
        } else {
            CF_TRY(cf_gemm(ctx, false, false, N, IC, OC, 1.0f, dout.buf, dout.off, OC,
                           weight.buf, weight.off, IC, accumulate ? 1.0f : 0.0f, dinp.buf,
                           dinp.off, IC));
        }
        CF_TRY(cf_round_activation(ctx, dinp, N * IC)); /* dinp is an activation gradient */
    }
    /* dweight (OC, IC) += dout^T (OC, N) inp (N, IC) */
    if (N && OC && IC)
        CF_TRY(cf_gemm(ctx, true, false, OC, IC, N, 1.0f, dout.buf, dout.off, OC, inp.buf,
                       inp.off, IC, 1.0f, dweight.buf, dweight.off, IC));
    /* dbias (OC) += column sums of dout */
    if (dbias.buf && N && OC)
        CF_TRY(cf_colsum(ctx, dbias.buf, dbias.off, dout.buf, dout.off, N, OC, OC, true));
    return CLFORMER_OK;
}
