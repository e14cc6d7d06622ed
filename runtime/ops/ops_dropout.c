/*
 * Host side of cl/dropout.cl: residual dropout, its backward, and addition.
 * The mask is a function of (seed, step, site, element index), so nothing
 * is stored between forward and backward.
 */
#include "dropout.h"
#include "launch.h"
#include "ops.h"
#include "program.h"

clformer_status cf_dropout_args_of(const cf_dropout *d, const char *op, cf_dropout_args *out)
{
    *out = (cf_dropout_args){0};
    if (!d) return CLFORMER_OK;
    if (!(d->p >= 0.0f && d->p < 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: dropout p = %g is not in [0, 1) (kept elements are scaled by "
                       "1/(1-p)); use 0 for no dropout",
                       op, (double)d->p);
    if (d->p > 0.0f) *out = (cf_dropout_args){d->p, d->seed, d->step, d->site};
    return CLFORMER_OK;
}

size_t cf_dropout_items(const cf_ctx *ctx, size_t n)
{
    const size_t block = ctx->device_profile.gpu_layouts ? 4 : 32;
    return (n + block - 1) / block;
}

static clformer_status launch_residual(cf_ctx *ctx, cf_view out, cf_view res, cf_view x,
                                       size_t n, const cf_dropout_args *s)
{
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_RESIDUAL_DROPOUT_FORWARD, &k));
    size_t local = ctx->elementwise_wg, items = cf_dropout_items(ctx, n);
    /* reads res and x, writes out */
    return CF_LAUNCH(ctx, "dropout", cf_f32_bytes(3 * n), k, 1, &items, &local, CF_MEM(out.buf),
                     CF_U64(out.off),
                     CF_MEM(res.buf), CF_U64(res.off), CF_MEM(x.buf), CF_U64(x.off), CF_U64(n),
                     CF_DROPOUT_ARGS(*s), CF_I32(ctx->precision));
}

clformer_status cf_residual_dropout_forward(cf_ctx *ctx, cf_view out, cf_view res, cf_view x,
                                            size_t n, const cf_dropout *dropout)
{
    cf_dropout_args s;
    CF_TRY(cf_dropout_args_of(dropout, "cf_residual_dropout_forward", &s));
    if (n == 0) return CLFORMER_OK;
    if (!out.buf || !res.buf || !x.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_residual_dropout_forward: out, res and x need buffers");
    return launch_residual(ctx, out, res, x, n, &s); /* rounded as stored */
}

clformer_status cf_dropout_backward(cf_ctx *ctx, cf_view dx, cf_view dout, size_t n,
                                    const cf_dropout *dropout)
{
    cf_dropout_args s;
    CF_TRY(cf_dropout_args_of(dropout, "cf_dropout_backward", &s));
    if (n == 0) return CLFORMER_OK;
    if (!dx.buf || !dout.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_dropout_backward: dx and dout need buffers");
    if (s.p == 0.0f && dx.buf == dout.buf && dx.off == dout.off)
        return CLFORMER_OK; /* identity in place */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_DROPOUT_BACKWARD, &k));
    size_t local = ctx->elementwise_wg, items = cf_dropout_items(ctx, n);
    CF_TRY(CF_LAUNCH(ctx, "dropout", cf_f32_bytes(2 * n), k, 1, &items, &local, CF_MEM(dx.buf),
                     CF_U64(dx.off),
                     CF_MEM(dout.buf), CF_U64(dout.off), CF_U64(n), CF_DROPOUT_ARGS(s),
                     CF_I32(ctx->precision))); /* rounded as stored */
    return CLFORMER_OK;
}

/* a + b is the residual kernel without dropout: b is multiplied by exactly 1. */
clformer_status cf_add(cf_ctx *ctx, cf_view out, cf_view a, cf_view b, size_t n)
{
    if (n == 0) return CLFORMER_OK;
    if (!out.buf || !a.buf || !b.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "cf_add: out, a and b need buffers");
    const cf_dropout_args none = {0};
    return launch_residual(ctx, out, a, b, n, &none); /* rounded as stored */
}
