/*
 * Casts between fp32 and bf16/fp16 (cl/cast.cl): the host side of cf_cast and
 * cf_cast_backward (runtime/ops/ops.h). Their descriptor and conformance cases
 * are runtime/check/conf_cast.c, the reference runtime/check/reference/ref_half.c.
 */
#include "launch.h"
#include "ops.h"
#include "program.h"

static bool is_half(clformer_precision t) { return t == CLFORMER_BF16 || t == CLFORMER_FP16; }

/* The kernel for from -> to (one of them fp32), with whether it takes
 * `accumulate`; an error naming both types otherwise. */
static clformer_status pick(const char *op, clformer_precision to, clformer_precision from,
                            cf_kernel_id *id, bool *to_f32)
{
    *to_f32 = to == CLFORMER_FP32 && is_half(from);
    if (*to_f32) {
        *id = from == CLFORMER_BF16 ? CF_K_CAST_BF16_TO_F32 : CF_K_CAST_F16_TO_F32;
        return CLFORMER_OK;
    }
    if (from == CLFORMER_FP32 && is_half(to)) {
        *id = to == CLFORMER_BF16 ? CF_K_CAST_F32_TO_BF16 : CF_K_CAST_F32_TO_F16;
        return CLFORMER_OK;
    }
    const char *a = clformer_precision_name(from), *b = clformer_precision_name(to);
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s: no cast from %s to %s: one side must be fp32 and the other bf16 or fp16",
                   op, a ? a : "(invalid dtype)", b ? b : "(invalid dtype)");
}

static clformer_status run(cf_ctx *ctx, const char *op, cf_view out, clformer_precision to, cf_view x,
                           clformer_precision from, size_t n, bool accumulate)
{
    cf_kernel_id id = CF_K_CAST_F32_TO_BF16;
    bool to_f32;
    CF_TRY(pick(op, to, from, &id, &to_f32));
    if (accumulate && !to_f32)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: accumulating needs an fp32 gradient, not %s: add in fp32 and cast",
                       op, clformer_precision_name(to));
    if (n == 0) return CLFORMER_OK;
    if (!out.buf || !x.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: every tensor must be a device buffer",
                       op);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, id, &k));
    size_t local = ctx->elementwise_wg, global = n;
    const uint64_t bytes = (uint64_t)n * (6 + (accumulate ? 4 : 0)); /* 4 + 2, + read-back */
    if (to_f32)
        return CF_LAUNCH(ctx, "cast", bytes, k, 1, &global, &local, CF_VIEW(out), CF_VIEW(x),
                         CF_U64(n), CF_I32(accumulate));
    return CF_LAUNCH(ctx, "cast", bytes, k, 1, &global, &local, CF_VIEW(out), CF_VIEW(x),
                     CF_U64(n));
}

clformer_status cf_cast(cf_ctx *ctx, cf_view out, clformer_precision out_type, cf_view x,
                        clformer_precision x_type, size_t n)
{
    return run(ctx, "cf_cast", out, out_type, x, x_type, n, false);
}

clformer_status cf_cast_backward(cf_ctx *ctx, cf_view dx, clformer_precision x_type, cf_view dout,
                                 clformer_precision out_type, size_t n, bool accumulate)
{
    return run(ctx, "cf_cast_backward", dx, x_type, dout, out_type, n, accumulate);
}

clformer_status cf_round_storage(cf_ctx *ctx, cf_view out, cf_view x, size_t n,
                                 clformer_precision precision)
{
    if (!is_half(precision) && precision != CLFORMER_FP32)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_round_storage: precision %d is none of fp32, bf16, fp16",
                       (int)precision);
    if (n == 0) return CLFORMER_OK;
    if (!out.buf || !x.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_round_storage: every tensor must be a device buffer");
    if (precision == CLFORMER_FP32) {
        if (out.buf == x.buf && out.off == x.off) return CLFORMER_OK;
        return cf_copy(ctx, x.buf, x.off, out.buf, out.off, n);
    }
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ROUND_STORAGE, &k));
    size_t local = ctx->elementwise_wg, global = n;
    return CF_LAUNCH(ctx, "cast", cf_f32_bytes(2 * n), k, 1, &global, &local, CF_VIEW(out),
                     CF_VIEW(x), CF_U64(n), CF_I32(precision));
}

clformer_status cf_round_activation(cf_ctx *ctx, cf_view x, size_t n)
{
    if (ctx->precision == CLFORMER_FP32 || !x.buf) return CLFORMER_OK;
    return cf_round_storage(ctx, x, x, n, ctx->precision);
}
