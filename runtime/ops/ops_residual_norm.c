/*
 * The end of a sublayer, fused (cl/residual_norm.cl): the host side of
 * cf_bias_residual_forward, cf_bias_residual_layernorm_forward and
 * cf_bias_residual_rmsnorm_forward (runtime/ops/ops.h). Their backward
 * needs no kernel of its own: the gradient of y is the sum of the incoming
 * residual gradient and the norm's input gradient (cf_layernorm_backward or
 * cf_rmsnorm_backward, accumulating), x's is that through
 * the dropout mask (cf_dropout_backward) and the bias's its column sum
 * (cf_colsum, in cf_linear_backward): backward.c runs them as the unfused
 * path did.
 */
#include "dropout.h"
#include "launch.h"
#include "ops.h"
#include "program.h"

static clformer_status check_args(const char *op, size_t N, size_t C, cf_view y, cf_view res,
                                  cf_view x, const cf_dropout *dropout, cf_dropout_args *d)
{
    CF_TRY(cf_dropout_args_of(dropout, op, d));
    CF_TRY(cf_check_rows(op, N, C));
    if (N && C && (!y.buf || !res.buf || !x.buf))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: y, res and x need buffers", op);
    return CLFORMER_OK;
}

/* The fused LayerNorm's own checks: eps, and y and out apart. */
static clformer_status check_norm_args(const char *op, cf_view y, cf_view out, size_t N, size_t C,
                                       float eps)
{
    if (!(eps > 0.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: eps must be positive (got %g); PyTorch's default is 1e-5", op,
                       (double)eps);
    if (y.buf == out.buf && y.off < out.off + N * C && out.off < y.off + N * C)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: y overlaps out; runtime/ops/ops.h requires separate storage", op);
    return CLFORMER_OK;
}

clformer_status cf_bias_residual_forward(cf_ctx *ctx, cf_view y, cf_view res, cf_view x,
                                         cf_view bias, size_t N, size_t C,
                                         const cf_dropout *dropout)
{
    cf_dropout_args d;
    CF_TRY(check_args("cf_bias_residual_forward", N, C, y, res, x, dropout, &d));
    if (N == 0 || C == 0) return CLFORMER_OK;
    const bool has_bias = bias.buf != NULL;
    const cf_view b = has_bias ? bias : x; /* not read without a bias */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_RESIDUAL_FORWARD, &k));
    size_t local = ctx->elementwise_wg, items = cf_dropout_items(ctx, N * C);
    /* reads res, x and the bias; writes y */
    return CF_LAUNCH(ctx, "residual", cf_f32_bytes(3 * N * C + (has_bias ? C : 0)), k, 1, &items,
                     &local, CF_VIEW(y), CF_VIEW(res), CF_VIEW(x), CF_VIEW(b), CF_I32(has_bias),
                     CF_I32(N), CF_I32(C), CF_DROPOUT_ARGS(d), CF_I32(ctx->precision));
}

clformer_status cf_bias_residual_layernorm_forward(cf_ctx *ctx, cf_view y, cf_view out,
                                                   cf_view mean, cf_view rstd, cf_view res,
                                                   cf_view x, cf_view bias, cf_view weight,
                                                   cf_view lnbias, size_t N, size_t C, float eps,
                                                   const cf_dropout *dropout)
{
    const char *op = "cf_bias_residual_layernorm_forward";
    cf_dropout_args d;
    CF_TRY(check_args(op, N, C, y, res, x, dropout, &d));
    if (N == 0 || C == 0) return CLFORMER_OK;
    if (!out.buf || !mean.buf || !rstd.buf || !weight.buf || !lnbias.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: out, mean, rstd, weight and lnbias need buffers", op);
    CF_TRY(check_norm_args(op, y, out, N, C, eps));
    const bool has_bias = bias.buf != NULL;
    const cf_view b = has_bias ? bias : x; /* not read without a bias */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_RESIDUAL_LAYERNORM_FORWARD, &k));
    size_t local, global;
    cf_row_grid(ctx, N, &global, &local);
    /* reads res, x, the bias, weight and lnbias; writes y, out, mean and rstd */
    const uint64_t moved = 4 * N * C + (has_bias ? C : 0) + 2 * C + 2 * N;
    return CF_LAUNCH(ctx, "residual", cf_f32_bytes(moved), k, 1, &global, &local, CF_VIEW(y),
                     CF_VIEW(out), CF_VIEW(mean), CF_VIEW(rstd), CF_VIEW(res), CF_VIEW(x),
                     CF_VIEW(b), CF_I32(has_bias), CF_VIEW(weight), CF_VIEW(lnbias), CF_I32(N),
                     CF_I32(C), CF_F32(eps), CF_DROPOUT_ARGS(d), CF_I32(ctx->precision));
}

clformer_status cf_bias_residual_rmsnorm_forward(cf_ctx *ctx, cf_view y, cf_view out,
                                                 cf_view rstd, cf_view res, cf_view x,
                                                 cf_view bias, cf_view weight, size_t N, size_t C,
                                                 float eps, const cf_dropout *dropout)
{
    const char *op = "cf_bias_residual_rmsnorm_forward";
    cf_dropout_args d;
    CF_TRY(check_args(op, N, C, y, res, x, dropout, &d));
    if (N == 0 || C == 0) return CLFORMER_OK;
    if (!out.buf || !rstd.buf || !weight.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: out, rstd and weight need buffers",
                       op);
    CF_TRY(check_norm_args(op, y, out, N, C, eps));
    const bool has_bias = bias.buf != NULL;
    const cf_view b = has_bias ? bias : x; /* not read without a bias */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BIAS_RESIDUAL_RMSNORM_FORWARD, &k));
    size_t local, global;
    cf_row_grid(ctx, N, &global, &local);
    /* reads res, x, the bias and weight; writes y, out and rstd */
    const uint64_t moved = 4 * N * C + (has_bias ? C : 0) + C + N;
    return CF_LAUNCH(ctx, "residual", cf_f32_bytes(moved), k, 1, &global, &local, CF_VIEW(y),
                     CF_VIEW(out), CF_VIEW(rstd), CF_VIEW(res), CF_VIEW(x), CF_VIEW(b),
                     CF_I32(has_bias), CF_VIEW(weight), CF_I32(N), CF_I32(C), CF_F32(eps),
                     CF_DROPOUT_ARGS(d), CF_I32(ctx->precision));
}
