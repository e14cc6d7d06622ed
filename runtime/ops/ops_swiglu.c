/*
 * SiLU and SwiGLU (cl/swiglu.cl): the host side of cf_silu_* and cf_swiglu_*
 * (runtime/ops/ops.h). Their descriptor, reference and conformance cases are
 * runtime/check/conf_swiglu.c. The kernels round what they store to the
 * context's precision (a 16-bit pass's activations).
 */
#include "launch.h"
#include "ops.h"
#include "program.h"

/* One work item per element. */
static clformer_status launch(cf_ctx *ctx, cf_kernel_id id, size_t n, uint64_t bytes,
                              size_t nargs, const cf_arg *args)
{
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, id, &k));
    size_t local = ctx->elementwise_wg, global = n;
    return cf_launch(ctx, "activation", bytes, k, 1, &global, &local, nargs, args);
}
#define LAUNCH(ctx, id, n, bytes, ...)                                                         \
    launch((ctx), (id), (n), (bytes), sizeof((cf_arg[]){__VA_ARGS__}) / sizeof(cf_arg),      \
           (cf_arg[]){__VA_ARGS__})

static clformer_status need(const char *op, bool all_buffers)
{
    if (!all_buffers)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: every tensor must be a device buffer",
                       op);
    return CLFORMER_OK;
}

clformer_status cf_silu_forward(cf_ctx *ctx, cf_view out, cf_view x, size_t n)
{
    if (n == 0) return CLFORMER_OK;
    CF_TRY(need("cf_silu_forward", out.buf && x.buf));
    return LAUNCH(ctx, CF_K_SILU_FORWARD, n, cf_f32_bytes(2 * n), CF_VIEW(out), CF_VIEW(x),
                  CF_U64(n), CF_I32(ctx->precision)); /* rounded as stored */
}

clformer_status cf_silu_backward(cf_ctx *ctx, cf_view dx, cf_view dout, cf_view x, size_t n,
                                 bool accumulate)
{
    if (n == 0) return CLFORMER_OK;
    CF_TRY(need("cf_silu_backward", dx.buf && dout.buf && x.buf));
    return LAUNCH(ctx, CF_K_SILU_BACKWARD, n, cf_f32_bytes((accumulate ? 4 : 3) * n),
                  CF_VIEW(dx), CF_VIEW(dout), CF_VIEW(x), CF_U64(n), CF_I32(accumulate),
                  CF_I32(ctx->precision));
}

clformer_status cf_swiglu_forward(cf_ctx *ctx, cf_view out, cf_view gate, cf_view up, size_t n)
{
    if (n == 0) return CLFORMER_OK;
    CF_TRY(need("cf_swiglu_forward", out.buf && gate.buf && up.buf));
    return LAUNCH(ctx, CF_K_SWIGLU_FORWARD, n, cf_f32_bytes(3 * n), CF_VIEW(out), CF_VIEW(gate),
                  CF_VIEW(up), CF_U64(n), CF_I32(ctx->precision));
}

clformer_status cf_swiglu_backward(cf_ctx *ctx, cf_view dgate, cf_view dup, cf_view dout,
                                   cf_view gate, cf_view up, size_t n, bool accumulate)
{
    if (n == 0) return CLFORMER_OK;
    CF_TRY(need("cf_swiglu_backward", dgate.buf && dup.buf && dout.buf && gate.buf && up.buf));
    CF_TRY(LAUNCH(ctx, CF_K_SWIGLU_BACKWARD, n, cf_f32_bytes((accumulate ? 7 : 5) * n),
                  CF_VIEW(dgate), CF_VIEW(dup), CF_VIEW(dout), CF_VIEW(gate), CF_VIEW(up),
                  CF_U64(n), CF_I32(accumulate), CF_I32(ctx->precision)));
    return CLFORMER_OK;
}
