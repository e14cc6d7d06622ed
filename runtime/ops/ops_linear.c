/*
 * Linear layers, y = x W^T + b with W (OC, IC) as PyTorch stores it: the
 * host side of cf_linear_forward and cf_linear_backward (runtime/ops/ops.h),
 * and of the feed-forward's first layer with its activation
 * (cf_linear_act_forward and cf_linear_act_backward). Every product is one
 * cf_gemm. Where the provider applies epilogues (cf_gemm_fuses: the host
 * provider on CPU devices), the bias add, the ReLU or tanh GELU after the
 * product and its gradient are the product's epilogue; elsewhere they are
 * kernels in cl/activation.cl, with the same bits (tanh GELU: the same to
 * fp32 rounding, gemm_epilogue.h). dbias is a deterministic cf_colsum.
 *
 * Forward is a GEMM with beta = 0, then the bias. The other order (bias
 * written into every row, GEMM with beta = 1) measured ~6% slower for a
 * 4096x512x512 layer on PoCL 3.1: CLBlast's beta = 1 product costs more
 * than the separate bias pass.
 */
#include "dropout.h"
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

/* The precision a product's output is rounded to as the provider writes it
 * (cf_gemm_rounded), where the context's activations are 16-bit and its
 * provider can; else FP32, and the caller rounds with a launch. */
static clformer_precision rounded_by_product(const cf_ctx *ctx)
{
    return ctx->precision != CLFORMER_FP32 && cf_gemm_rounds_output(ctx) ? ctx->precision
                                                                          : CLFORMER_FP32;
}

/* out = inp W^T, then the epilogue (NULL: none), rounded to `round_to`'s
 * values (FP32: not) */
static clformer_status product(const char *op, cf_ctx *ctx, cf_view out, cf_view inp,
                               cf_view weight, size_t N, size_t IC, size_t OC,
                               clformer_precision round_to, const cf_gemm_epilogue *epilogue)
{
    CF_TRY(check_sizes(op, N, IC, OC));
    if (N == 0 || OC == 0) return CLFORMER_OK;
    if (!out.buf || !inp.buf || !weight.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: out, inp and weight must be device buffers", op);
    if (IC == 0) /* an empty product: zero (a value of every format) */
        return cf_fill(ctx, out.buf, out.off, N * OC, 0.0f);
    return cf_gemm_fused(ctx, false, true, N, OC, IC, 1.0f, inp.buf, inp.off, IC, weight.buf,
                         weight.off, IC, 0.0f, out.buf, out.off, OC, round_to, epilogue);
}

clformer_status cf_linear_product(cf_ctx *ctx, cf_view out, cf_view inp, cf_view weight,
                                  size_t N, size_t IC, size_t OC)
{
    return product("cf_linear_product", ctx, out, inp, weight, N, IC, OC, CLFORMER_FP32, NULL);
}

clformer_status cf_linear_forward(cf_ctx *ctx, cf_view out, cf_view inp, cf_view weight,
                                  cf_view bias, size_t N, size_t IC, size_t OC)
{
    /* Without a bias, or with one its epilogue adds, the product writes the
     * activation: rounded as it is written where the provider can. An empty
     * product (IC 0) has no epilogue: it fills, and the bias add follows. */
    const bool fused = bias.buf && IC > 0 && cf_gemm_fuses(ctx);
    const clformer_precision round_to =
        bias.buf && !fused ? CLFORMER_FP32 : rounded_by_product(ctx);
    const cf_gemm_epilogue add = {.kind = CF_EPILOGUE_BIAS, .bias = bias.buf,
                                  .bias_off = bias.off};
    CF_TRY(product("cf_linear_forward", ctx, out, inp, weight, N, IC, OC, round_to,
                   fused ? &add : NULL));
    if (N == 0 || OC == 0) return CLFORMER_OK;
    if (!bias.buf || fused)
        return round_to != CLFORMER_FP32 ? CLFORMER_OK : cf_round_activation(ctx, out, N * OC);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_ADD, &k));
    /* cl/activation.cl: (column, row) with GPU layouts, else ITEM_RUN elements an item */
    const bool gpu = ctx->device_profile.gpu_layouts;
    const size_t run = cf_item_run(&ctx->device_profile);
    size_t local[2] = {ctx->elementwise_wg, 1},
           global[2] = {gpu ? OC : cf_round_up((N * OC + run - 1) / run, local[0]), N};
    /* out += bias, in place: out read and written, bias read */
    CF_TRY(CF_LAUNCH(ctx, "activation", cf_f32_bytes(2 * N * OC + OC), k, gpu ? 2 : 1, global,
                     local,
                     CF_MEM(out.buf), CF_U64(out.off),
                     CF_MEM(bias.buf), CF_U64(bias.off), CF_I32(N), CF_I32(OC),
                     CF_I32(ctx->precision)));
    return CLFORMER_OK; /* rounded as stored */
}

/* Splitting a weight gradient dW (OC, IC) += dY^T X over its k = N tokens:
 * a GPU runs a product's 64 x 64 output tiles a work-group each, so one of
 * few tiles (a d_model 512 layer's has 64-256, an H200 has 132 compute
 * units) runs on a few units, each down all N tokens. Split into `ways`
 * chunks of at least SPLIT_MIN_TOKENS, it becomes one strided batched
 * product into partials (ways, OC, IC) in the context's scratch, which
 * colsum_final adds in chunk order onto dW: deterministic, and the same FLOP
 * (another order of the sum than the unsplit product). The profile says how
 * many tiles keep the device busy (gemm_split_groups; 0 on CPUs). The
 * products take no scratch of their own (CLBlast's and the host provider's
 * temporaries are theirs), so the partials may live there. */
#define SPLIT_TILE 64
#define SPLIT_MIN_TOKENS 512
#define SPLIT_MAX_PARTIALS ((size_t)16 << 20) /* floats of scratch: 64 MiB */

static size_t weight_gradient_ways(const cf_ctx *ctx, size_t N, size_t IC, size_t OC)
{
    const size_t groups = ctx->device_profile.gemm_split_groups;
    const size_t tiles =
        ((OC + SPLIT_TILE - 1) / SPLIT_TILE) * ((IC + SPLIT_TILE - 1) / SPLIT_TILE);
    size_t ways = 1;
    while (tiles * ways * 2 <= groups && N % (ways * 2) == 0 &&
           N / (ways * 2) >= SPLIT_MIN_TOKENS && ways * 2 * OC * IC <= SPLIT_MAX_PARTIALS)
        ways *= 2;
    return ways;
}

/* dweight (OC, IC) += dout^T (OC, N) inp (N, IC), split over N where the
 * profile asks for it */
static clformer_status weight_gradient(cf_ctx *ctx, cf_view dweight, cf_view dout, cf_view inp,
                                       size_t N, size_t IC, size_t OC)
{
    const size_t ways = weight_gradient_ways(ctx, N, IC, OC);
    if (ways == 1)
        return cf_gemm(ctx, true, false, OC, IC, N, 1.0f, dout.buf, dout.off, OC, inp.buf,
                       inp.off, IC, 1.0f, dweight.buf, dweight.off, IC);
    const size_t chunk = N / ways;
    cl_mem partials;
    CF_TRY(cf_scratch(ctx, ways * OC * IC, &partials));
    CF_TRY(cf_gemm_strided_batched(ctx, true, false, OC, IC, chunk, 1.0f, dout.buf, dout.off,
                                   OC, chunk * OC, inp.buf, inp.off, IC, chunk * IC, 0.0f,
                                   partials, 0, IC, OC * IC, ways));
    return cf_colsum_final(ctx, dweight.buf, dweight.off, partials, ways, OC * IC, true);
}

/* cf_linear_backward, dinp's product followed by `epilogue` (NULL: none) */
static clformer_status linear_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dbias,
                                       cf_view dout, cf_view inp, cf_view weight, size_t N,
                                       size_t IC, size_t OC, bool accumulate,
                                       const cf_gemm_epilogue *epilogue)
{
    CF_TRY(check_sizes("cf_linear_backward", N, IC, OC));
    if (!dweight.buf || !dout.buf || !inp.buf || (dinp.buf && !weight.buf))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_linear_backward: dweight, dout and inp (and weight when dinp is "
                       "wanted) must be device buffers");
    /* dinp (N, IC) (+)= dout (N, OC) W (OC, IC) */
    if (dinp.buf && N && IC) {
        /* dinp is an activation gradient: rounded as the product writes it
         * where the provider can, else after it */
        const clformer_precision round_to = OC ? rounded_by_product(ctx) : CLFORMER_FP32;
        if (OC == 0) {
            if (!accumulate) CF_TRY(cf_fill(ctx, dinp.buf, dinp.off, N * IC, 0.0f));
        } else {
            CF_TRY(cf_gemm_fused(ctx, false, false, N, IC, OC, 1.0f, dout.buf, dout.off, OC,
                                 weight.buf, weight.off, IC, accumulate ? 1.0f : 0.0f,
                                 dinp.buf, dinp.off, IC, round_to, epilogue));
        }
        if (round_to == CLFORMER_FP32) CF_TRY(cf_round_activation(ctx, dinp, N * IC));
    }
    /* dweight (OC, IC) += dout^T (OC, N) inp (N, IC) */
    if (N && OC && IC) CF_TRY(weight_gradient(ctx, dweight, dout, inp, N, IC, OC));
    /* dbias (OC) += column sums of dout */
    if (dbias.buf && N && OC)
        CF_TRY(cf_colsum(ctx, dbias.buf, dbias.off, dout.buf, dout.off, N, OC, OC, true));
    return CLFORMER_OK;
}

clformer_status cf_linear_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dbias,
                                   cf_view dout, cf_view inp, cf_view weight, size_t N,
                                   size_t IC, size_t OC, bool accumulate)
{
    return linear_backward(ctx, dinp, dweight, dbias, dout, inp, weight, N, IC, OC, accumulate,
                           NULL);
}

/* Whether the activation after a product is the product's epilogue: ReLU
 * or tanh GELU, with or without dropout, on fp32 activations, where the
 * provider fuses. */
static bool act_fuses(const cf_ctx *ctx, clformer_activation act)
{
    return cf_gemm_epilogue_has(act) && ctx->precision == CLFORMER_FP32 && cf_gemm_fuses(ctx);
}

clformer_status cf_linear_act_forward(cf_ctx *ctx, cf_view out, cf_view pre, cf_view inp,
                                      cf_view weight, cf_view bias, size_t N, size_t IC,
                                      size_t OC, clformer_activation act,
                                      const cf_dropout *dropout)
{
    if (!act_fuses(ctx, act) || IC == 0 || !out.buf || !bias.buf) {
        CF_TRY(cf_linear_forward(ctx, pre, inp, weight, (cf_view){NULL, 0}, N, IC, OC));
        return cf_bias_act_forward(ctx, out, pre, bias, N, OC, act, dropout);
    }
    cf_gemm_epilogue epilogue = {.kind = CF_EPILOGUE_BIAS_ACT, .act = act, .bias = bias.buf,
                                 .bias_off = bias.off, .rows = out.buf, .rows_off = out.off};
    CF_TRY(cf_dropout_args_of(dropout, "cf_linear_act_forward", &epilogue.drop));
    return product("cf_linear_act_forward", ctx, pre, inp, weight, N, IC, OC, CLFORMER_FP32,
                   &epilogue);
}

clformer_status cf_linear_act_backward(cf_ctx *ctx, cf_view dpre, cf_view dweight,
                                       cf_view dbias, cf_view dpre_bias, cf_view dout,
                                       cf_view inp, cf_view weight, cf_view pre, cf_view pre_bias,
                                       size_t N, size_t IC, size_t OC, clformer_activation act,
                                       const cf_dropout *dropout)
{
    if (!act_fuses(ctx, act) || OC == 0 || !dpre.buf || !pre.buf || !pre_bias.buf) {
        CF_TRY(cf_linear_backward(ctx, dpre, dweight, dbias, dout, inp, weight, N, IC, OC,
                                  false));
        return cf_bias_act_backward(ctx, dpre, dpre_bias, dpre, pre, pre_bias, N, IC, act,
                                    dropout);
    }
    cf_gemm_epilogue grad = {.kind = CF_EPILOGUE_ACT_GRAD, .act = act, .bias = pre_bias.buf,
                             .bias_off = pre_bias.off, .rows = pre.buf, .rows_off = pre.off};
    CF_TRY(cf_dropout_args_of(dropout, "cf_linear_act_backward", &grad.drop));
    CF_TRY(linear_backward(ctx, dpre, dweight, dbias, dout, inp, weight, N, IC, OC, false, &grad));
    if (!dpre_bias.buf || N == 0 || IC == 0) return CLFORMER_OK;
    return cf_colsum(ctx, dpre_bias.buf, dpre_bias.off, dpre.buf, dpre.off, N, IC, IC, true);
}
