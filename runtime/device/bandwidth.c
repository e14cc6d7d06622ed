/*
 * The device's copy bandwidth (clformer_context_copy_bandwidth): the roof of
 * `clformer bench`'s per-family table. A driver's own buffer copy is the
 * fastest streaming read + write a device offers without tuning a kernel.
 */
#include "buffer.h"
#include "clock.h"
#include "launch.h"

#define DEFAULT_BYTES ((size_t)256 << 20)
#define REPEATS 5 /* after one untimed copy that maps the pages in */

/* Seconds one copy took: by its event on a profiling queue, else by the clock. */
static clformer_status time_copy(cf_ctx *ctx, cl_mem src, cl_mem dst, size_t bytes,
                                 double *seconds)
{
    cl_event ev = NULL;
    const double t0 = cf_now_s();
    CL_CHECK(clEnqueueCopyBuffer(ctx->queue, src, dst, 0, 0, bytes, 0, NULL,
                                 ctx->queue_profiling ? &ev : NULL));
    cl_int err = clFinish(ctx->queue);
    *seconds = cf_event_seconds(ev, cf_now_s() - t0);
    CL_CHECK(err);
    return CLFORMER_OK;
}

static clformer_status measure(cf_ctx *ctx, cl_mem src, cl_mem dst, size_t bytes, double *gbps)
{
    double s, best = 0.0;
    CF_TRY(time_copy(ctx, src, dst, bytes, &s));
    for (int i = 0; i < REPEATS; i++) {
        CF_TRY(time_copy(ctx, src, dst, bytes, &s));
        if (i == 0 || s < best) best = s;
    }
    *gbps = best > 0.0 ? 2.0 * (double)bytes / best * 1e-9 : 0.0;
    return CLFORMER_OK;
}

clformer_status clformer_context_copy_bandwidth(clformer_context *ctx, size_t bytes,
                                                double *gb_per_s)
{
    if (!ctx || !gb_per_s)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_copy_bandwidth: ctx and gb_per_s must not be NULL");
    *gb_per_s = 0.0;
    if (bytes == 0) bytes = DEFAULT_BYTES;
    if (ctx->info.max_alloc_bytes && bytes > ctx->info.max_alloc_bytes)
        bytes = (size_t)ctx->info.max_alloc_bytes;
    if (bytes < 4)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_copy_bandwidth: %zu bytes is less than one 4-byte "
                       "element; pass 0 for the default 256 MiB",
                       bytes);
    bytes &= ~(size_t)3; /* whole 4-byte elements */
    /* cf_buffer_alloc zero-fills (no copy reads memory never written) and
     * keeps a simulator's released buffers apart (see cf_buffer_free) */
    cl_mem src = NULL, dst = NULL;
    clformer_status st = cf_buffer_alloc(ctx, bytes / 4, "copy bandwidth source", &src);
    if (st == CLFORMER_OK) st = cf_buffer_alloc(ctx, bytes / 4, "copy bandwidth target", &dst);
    if (st == CLFORMER_OK) st = measure(ctx, src, dst, bytes, gb_per_s);
    cf_buffer_free(ctx, src);
    cf_buffer_free(ctx, dst);
    return st;
}
