/*
 * clformer_check_attention_time: the tiled attention kernels timed kernel by
 * kernel on one shape, with the device profile's tiles or others, behind
 * tools/tuning/attention_bench; kept in the library so that the tool needs
 * only the public headers and the launches are the model's own
 * (cf_attention_forward and cf_attention_backward on the fused path).
 */
#include "attention_trial.h"
#include "buffer.h"
#include "clformer_check.h"
#include "launch.h"
#include "ops.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

static unsigned at_least_one(unsigned x) { return x ? x : 1; }

static cf_attention_tiles with_head_dim(const clformer_attention_tiles *t, size_t dh)
{
    return (cf_attention_tiles){(unsigned)dh,
                                t->fwd_rows,
                                t->fwd_split,
                                t->fwd_keys,
                                t->dq_rows,
                                t->dq_split,
                                t->dq_keys,
                                t->dkv_keys,
                                t->dkv_split,
                                t->dkv_rows,
                                at_least_one(t->fwd_per_item),
                                at_least_one(t->dq_per_item),
                                at_least_one(t->dkv_per_item)};
}

bool clformer_check_attention_tiles(clformer_context *ctx, size_t head_dim,
                                    clformer_attention_tiles *tiles, const char **why)
{
    cf_attention_tiles t;
    if (!cf_attention_tiles_for(&ctx->device_profile, head_dim, &t, why)) return false;
    *tiles = (clformer_attention_tiles){t.fwd_rows,     t.fwd_split,   t.fwd_keys,
                                        t.dq_rows,      t.dq_split,    t.dq_keys,
                                        t.dkv_keys,     t.dkv_split,   t.dkv_rows,
                                        t.fwd_per_item, t.dq_per_item, t.dkv_per_item};
    return true;
}

bool clformer_check_attention_tiles_fit(clformer_context *ctx, size_t head_dim,
                                        const clformer_attention_tiles *tiles, const char **why)
{
    const cf_attention_tiles t = with_head_dim(tiles, head_dim);
    return cf_attention_tiles_fit(&ctx->device_profile, &t, why);
}

/* The forward and the backward of the fused path, as a layer runs them. */
static clformer_status one_call(cf_ctx *ctx, const cf_attention_trial *t)
{
    CF_TRY(cf_attention_trial_forward(ctx, t));
    return cf_attention_trial_backward(ctx, t);
}

/* The timed calls' mean time per kernel, from the profiling record. */
static clformer_status kernel_means(cf_ctx *ctx, unsigned calls, clformer_attention_timing *r)
{
    cf_profile_total families[16];
    clformer_named_kernel_time named[32];
    size_t n = 0, nk = 0;
    CF_TRY(cf_profile_collect(ctx, families, 16, &n, named, 32, &nk));
    for (size_t i = 0; i < nk; i++) {
        const double ms = named[i].time.ms / calls;
        if (!strcmp(named[i].kernel, "flash_tiled_forward")) r->forward_ms = ms;
        if (!strcmp(named[i].kernel, "flash_tiled_backward_dq")) r->dq_ms = ms;
        if (!strcmp(named[i].kernel, "flash_tiled_backward_dkv")) r->dkv_ms = ms;
    }
    if (r->forward_ms <= 0 || r->dq_ms <= 0 || r->dkv_ms <= 0)
        return cf_fail(CLFORMER_ERR_OPENCL,
                       "attention timing: the tiled kernels left no profiling record");
    r->total_ms = r->forward_ms + r->dq_ms + r->dkv_ms;
    return CLFORMER_OK;
}

static clformer_status timed(cf_ctx *ctx, const clformer_attention_time_shape *shape,
                             unsigned calls, uint64_t seed, clformer_attention_timing *r,
                             float *outputs)
{
    const size_t T = shape->len;
    cf_attention_trial t;
    clformer_status st = cf_attention_trial_make(ctx, shape->batch, shape->heads, T,
                                                 shape->head_dim, shape->causal, seed, &t);
    if (st != CLFORMER_OK) return st;
    st = one_call(ctx, &t); /* compiles, warms up */
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    if (st == CLFORMER_OK) {
        cf_profile_total discard[16]; /* whatever was recorded before */
        size_t n;
        st = cf_profile_collect(ctx, discard, 16, &n, NULL, 0, NULL);
    }
    const bool was_profiling = ctx->profiling;
    ctx->profiling = true;
    for (unsigned c = 0; c < calls && st == CLFORMER_OK; c++) st = one_call(ctx, &t);
    if (st == CLFORMER_OK) st = kernel_means(ctx, calls, r);
    ctx->profiling = was_profiling;
    if (st == CLFORMER_OK)
        r->gflops = 12.0 * (double)(shape->batch * shape->heads) * (double)T * (double)T *
                    (double)shape->head_dim / (r->total_ms * 1e6);
    static const int out_bufs[4] = {CF_TRIAL_O, CF_TRIAL_DQ, CF_TRIAL_DK, CF_TRIAL_DV};
    for (int i = 0; i < 4 && outputs && st == CLFORMER_OK; i++)
        st = cf_download(ctx, t.buf[out_bufs[i]], 0, outputs + (size_t)i * t.n, t.n);
    cf_attention_trial_free(ctx, &t);
    return st;
}

clformer_status clformer_check_attention_time(clformer_context *ctx,
                                              const clformer_attention_time_shape *shape,
                                              const clformer_attention_tiles *tiles,
                                              unsigned calls, uint64_t seed,
                                              clformer_attention_timing *timing, float *outputs)
{
    if (!ctx || !shape || !timing || !calls || !shape->batch || !shape->heads || !shape->len ||
        !shape->head_dim)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_attention_time needs a context, a shape with batch, "
                       "heads, len and head_dim >= 1, calls >= 1 and a timing to fill");
    if (!ctx->queue_profiling)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_attention_time times kernels by profiling events: "
                       "create the context with clformer_context_params.profiling = true");
    const char *why = NULL;
    cf_attention_tiles t;
    if (tiles) {
        t = with_head_dim(tiles, shape->head_dim);
        if (!cf_attention_tiles_fit(&ctx->device_profile, &t, &why))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "clformer_check_attention_time: these tiles do not fit the "
                           "device at head size %zu: %s",
                           shape->head_dim, why);
    } else if (!cf_attention_tiles_for(&ctx->device_profile, shape->head_dim, &t, &why)) {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_attention_time: no tiled kernels at head size %zu (%s); "
                       "pass tiles, or set CLFORMER_PROFILE=tiled-attention",
                       shape->head_dim, why);
    }
    memset(timing, 0, sizeof *timing);
    const cf_attention_tiles before = ctx->forced_tiles;
    ctx->forced_tiles = t;
    const clformer_status st = timed(ctx, shape, calls, seed, timing, outputs);
    ctx->forced_tiles = before;
    return st;
}
