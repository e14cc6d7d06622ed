/*
 * Host side of cl/loss.cl: softmax cross-entropy (loss and gradient in one
 * launch) and the row-wise log-softmax and argmax used by decoding. Every
 * kernel runs one work-group of ctx->reduce_wg items per row.
 */
#include "launch.h"
#include "ops.h"
#include "program.h"

#include <limits.h>

/* Rows of V columns must be addressable with int column indices. */
static clformer_status check_rows(const char *op, size_t N, size_t V)
{
    if (N > INT_MAX || V > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: N=%zu rows of V=%zu columns exceed INT_MAX; split the batch", op, N,
                       V);
    if (N > 0 && V == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: V is 0 for %zu rows; a row needs at least one class", op, N);
    return CLFORMER_OK;
}

/* An output that shares a buffer with the input must be exactly it
 * (element-wise in place) or not overlap it at all. */
static clformer_status check_alias(const char *op, cf_view out, cf_view in, size_t count)
{
    if (out.buf != in.buf || out.off == in.off) return CLFORMER_OK;
    if (out.off + count <= in.off || in.off + count <= out.off) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s: output (offset %zu) partly overlaps logits (offset %zu); pass the same "
                   "view to work in place, or a separate one",
                   op, out.off, in.off);
}

static size_t rows_global(cf_ctx *ctx, size_t N) { return N * ctx->reduce_wg; }

clformer_status cf_cross_entropy(cf_ctx *ctx, cf_view losses, cf_view dlogits, cf_view logits,
                                 cf_view targets, size_t N, size_t V, float label_smoothing,
                                 int ignore_index, float grad_scale)
{
    CF_TRY(check_rows("cf_cross_entropy", N, V));
    if (N == 0) return CLFORMER_OK;
    if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_cross_entropy: label_smoothing %g is outside [0, 1]",
                       (double)label_smoothing);
    if (!losses.buf || !logits.buf || !targets.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_cross_entropy: losses, logits and targets need buffers");
    const bool has_grad = dlogits.buf != NULL;
    if (has_grad) CF_TRY(check_alias("cf_cross_entropy", dlogits, logits, N * V));
    /* Without a gradient the kernel never writes dlogits: any valid buffer will do. */
    const cf_view dl = has_grad ? dlogits : logits;
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_CROSS_ENTROPY, &k));
    size_t global = rows_global(ctx, N), local = ctx->reduce_wg;
    /* reads logits and targets; writes losses (and dlogits) */
    const size_t moved = N * V + 2 * N + (has_grad ? N * V : 0);
    CF_TRY(CF_LAUNCH(ctx, "loss", cf_f32_bytes(moved), k, 1, &global, &local, CF_MEM(losses.buf),
                     CF_U64(losses.off),
                     CF_MEM(dl.buf), CF_U64(dl.off), CF_I32(has_grad), CF_MEM(logits.buf),
                     CF_U64(logits.off), CF_MEM(targets.buf), CF_U64(targets.off), CF_I32(N),
                     CF_I32(V), CF_F32(label_smoothing), CF_I32(ignore_index),
                     CF_F32(grad_scale)));
    return cf_round_activation(ctx, dlogits, has_grad ? N * V : 0);
}

clformer_status cf_log_softmax_rows(cf_ctx *ctx, cf_view out, cf_view logits, size_t N, size_t V)
{
    CF_TRY(check_rows("cf_log_softmax_rows", N, V));
    if (N == 0) return CLFORMER_OK;
    CF_TRY(check_alias("cf_log_softmax_rows", out, logits, N * V));
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_LOG_SOFTMAX_ROWS, &k));
    size_t global = rows_global(ctx, N), local = ctx->reduce_wg;
    return CF_LAUNCH(ctx, "loss", cf_f32_bytes(2 * N * V), k, 1, &global, &local,
                     CF_MEM(out.buf), CF_U64(out.off),
                     CF_MEM(logits.buf), CF_U64(logits.off), CF_I32(N), CF_I32(V));
}

clformer_status cf_argmax_rows(cf_ctx *ctx, cf_view out, cf_view logits, size_t N, size_t V)
{
    CF_TRY(check_rows("cf_argmax_rows", N, V));
    if (N == 0) return CLFORMER_OK;
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ARGMAX_ROWS, &k));
    size_t global = rows_global(ctx, N), local = ctx->reduce_wg;
    return CF_LAUNCH(ctx, "loss", cf_f32_bytes(N * V + N), k, 1, &global, &local,
                     CF_MEM(out.buf), CF_U64(out.off),
                     CF_MEM(logits.buf), CF_U64(logits.off), CF_I32(N), CF_I32(V));
}
