/*
 * Bias + activation + dropout for the feed-forward block (cl/activation.cl):
 * the host side of cf_bias_act_forward and cf_bias_act_backward
 * (runtime/ops/ops.h).
 *
 * Both are element-wise over the flat (N, C) tensor, 32 elements a work
 * item (eight Philox blocks, computed together, give their dropout mask; 4,
 * one block, with GPU layouts: cf_dropout_items).
 * dbias is cf_colsum over dinp afterwards (fixed order, deterministic). Fusing that sum into
 * the backward kernel (work items owning a column and a block of rows)
 * measured 8-12x slower on PoCL for 4096x2048, apparently because PoCL
 * does not vectorize a loop that stores into a buffer that may alias the
 * one it reads (dinp may be dout), so each work item walks a column alone.
 */
#include "dropout.h"
#include "launch.h"
#include "ops.h"
#include "program.h"
#include "reduce.h"

/* The kernels' view of a dropout site: p = 0 when inactive. */
typedef struct {
    float p;
    cl_ulong seed;
    cl_uint step, site;
} site_args;

static clformer_status check_args(const char *op, size_t N, size_t C, clformer_activation act,
                                  const cf_dropout *dropout, site_args *s)
{
    CF_TRY(cf_check_rows(op, N, C));
    /* silu gates the llama family's feed-forward: cf_swiglu_*, not these kernels */
    if (!clformer_activation_name(act) || act == CLFORMER_ACT_SILU)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: unknown activation %d; use CLFORMER_ACT_RELU, CLFORMER_ACT_GELU or "
                       "CLFORMER_ACT_GELU_TANH", op, (int)act);
    *s = (site_args){0.0f, 0, 0, 0};
    if (cf_dropout_active(dropout)) {
        if (!(dropout->p <= 1.0f))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: dropout probability %g is not in [0, 1]", op, (double)dropout->p);
        *s = (site_args){dropout->p, dropout->seed, dropout->step, dropout->site};
    } else if (dropout && dropout->p < 0.0f) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: dropout probability %g is negative", op, (double)dropout->p);
    }
    return CLFORMER_OK;
}

clformer_status cf_bias_act_forward(cf_ctx *ctx, cf_view out, cf_view inp, cf_view bias,
                                    size_t N, size_t C, clformer_activation act,
                                    const cf_dropout *dropout)
{
    site_args s;
    CF_TRY(check_args("cf_bias_act_forward", N, C, act, dropout, &s));
    if (N == 0 || C == 0) return CLFORMER_OK;
    if (!out.buf || !inp.buf || !bias.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_bias_act_forward: out, inp and bias must be device buffers");
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_ACT_FORWARD, &k));
    size_t local = ctx->elementwise_wg, global = cf_dropout_items(ctx, N * C);
    CF_TRY(CF_LAUNCH(ctx, "activation", cf_f32_bytes(2 * N * C + C), k, 1, &global, &local,
                     CF_MEM(out.buf), CF_U64(out.off),
                     CF_MEM(inp.buf), CF_U64(inp.off), CF_MEM(bias.buf), CF_U64(bias.off),
                     CF_I32(N), CF_I32(C), CF_I32(act), CF_F32(s.p), CF_U64(s.seed),
                     CF_U32(s.step), CF_U32(s.site), CF_I32(ctx->precision)));
    return CLFORMER_OK; /* rounded as stored */
}

clformer_status cf_bias_act_backward(cf_ctx *ctx, cf_view dinp, cf_view dbias, cf_view dout,
                                     cf_view inp, cf_view bias, size_t N, size_t C,
                                     clformer_activation act, const cf_dropout *dropout)
{
    site_args s;
    CF_TRY(check_args("cf_bias_act_backward", N, C, act, dropout, &s));
    if (N == 0 || C == 0) return CLFORMER_OK;
    if (!dinp.buf || !dout.buf || !inp.buf || !bias.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_bias_act_backward: dinp, dout, inp and bias must be device buffers");
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_ACT_BACKWARD, &k));
    size_t local = ctx->elementwise_wg, global = cf_dropout_items(ctx, N * C);
    /* reads dout, inp and bias, writes dinp */
    CF_TRY(CF_LAUNCH(ctx, "activation", cf_f32_bytes(3 * N * C + C), k, 1, &global, &local,
                     CF_MEM(dinp.buf), CF_U64(dinp.off),
                     CF_MEM(dout.buf), CF_U64(dout.off), CF_MEM(inp.buf), CF_U64(inp.off),
                     CF_MEM(bias.buf), CF_U64(bias.off), CF_I32(N), CF_I32(C), CF_I32(act),
                     CF_F32(s.p), CF_U64(s.seed), CF_U32(s.step), CF_U32(s.site),
                     CF_I32(ctx->precision)));
    /* dinp rounded as stored; dbias sums the stored values */
    if (!dbias.buf) return CLFORMER_OK;
    return cf_colsum(ctx, dbias.buf, dbias.off, dinp.buf, dinp.off, N, C, C, true);
}
