/*
 * Host side of cl/beam.cl (see ops_beam.h). Double views are passed to the
 * kernels as offsets in doubles.
 */
#include "ops_beam.h"
#include "launch.h"
#include "program.h"

#include <limits.h>

static clformer_status check_sizes(const char *op, size_t R, size_t K, size_t V, size_t L)
{
    if (K == 0 || K > 64 || R % K != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: beam %zu must be 1..64 and divide the %zu rows", op, K, R);
    if (R > INT_MAX / 2 || V > INT_MAX || V == 0 || L > INT_MAX || R * 2 * K > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: %zu rows of %zu tokens exceed the kernels' int indices", op, R, V);
    return CLFORMER_OK;
}

static clformer_status check_fp64(cf_ctx *ctx, const char *op)
{
    if (ctx->info.fp64) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s needs a device with cl_khr_fp64; use the host beam search", op);
}

/* A double view's offset in doubles. */
static cl_ulong dbl(cf_view v) { return (cl_ulong)(v.off / 2); }

static bool aligned(const cf_beam_views *b)
{
    return b->score.off % 2 == 0 && b->cand_score.off % 2 == 0 && b->pen.off % 2 == 0 &&
           b->best_score.off % 2 == 0;
}

clformer_status cf_beam_candidates(cf_ctx *ctx, const cf_beam_views *b, cf_view logp, size_t R,
                                   size_t K, size_t V, size_t M)
{
    CF_TRY(check_fp64(ctx, "cf_beam_candidates"));
    CF_TRY(check_sizes("cf_beam_candidates", R, K, V, 1));
    if (!aligned(b))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "cf_beam_candidates: a double view is "
                                                      "at an odd element offset");
    if (M == 0 || M > 128)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_beam_candidates: %zu candidates a row; the kernel keeps 1..128", M);
    if (R == 0) return CLFORMER_OK;
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BEAM_CANDIDATES, &k));
    /* one item a row on CPUs: a group's barriers (M rounds of a tree) cost
     * more there than one item's pass over the row */
    const size_t local = ctx->device_profile.gpu_layouts ? ctx->reduce_wg : 1;
    size_t global = R * local;
    /* reads the log-probabilities and scores, writes M (double, int) pairs a row */
    const uint64_t bytes = cf_f32_bytes(R * V + 2 * R + R / K) + (uint64_t)R * M * 12u;
    return CF_LAUNCH(ctx, "beam", bytes, k, 1, &global, &local, CF_MEM(b->cand_score.buf),
                     CF_U64(dbl(b->cand_score)), CF_MEM(b->cand_token.buf),
                     CF_U64(b->cand_token.off), CF_MEM(logp.buf), CF_U64(logp.off),
                     CF_MEM(b->score.buf), CF_U64(dbl(b->score)), CF_MEM(b->done.buf),
                     CF_U64(b->done.off), CF_I32(R), CF_I32(K), CF_I32(V), CF_I32(M));
}

clformer_status cf_beam_select(cf_ctx *ctx, const cf_beam_views *b, cf_view tokens,
                               cf_view parents, cf_view next, size_t batch, size_t K, size_t M,
                               size_t L, size_t t, bool last)
{
    CF_TRY(check_fp64(ctx, "cf_beam_select"));
    CF_TRY(check_sizes("cf_beam_select", batch * K, K, 1, L));
    if (!aligned(b))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "cf_beam_select: a double view is at "
                                                      "an odd element offset");
    if (t >= L)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "cf_beam_select: step %zu is past the "
                                                      "%zu positions", t, L);
    if (batch == 0) return CLFORMER_OK;
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BEAM_SELECT, &k));
    size_t local = ctx->elementwise_wg, global = cf_round_up(batch, local);
    /* reads the candidates and scores; writes scores, parents, tokens and the
     * sentences' state (the best's tokens counted once) */
    const size_t R = batch * K;
    const uint64_t bytes = (uint64_t)R * M * 12u + cf_f32_bytes(6 * R + batch * (L + 10));
    return CF_LAUNCH(ctx, "beam", bytes, k, 1, &global, &local, CF_MEM(b->score.buf),
                     CF_U64(dbl(b->score)), CF_MEM(b->cand_score.buf),
                     CF_U64(dbl(b->cand_score)), CF_MEM(b->cand_token.buf),
                     CF_U64(b->cand_token.off), CF_MEM(b->pen.buf), CF_U64(dbl(b->pen)),
                     CF_MEM(tokens.buf), CF_U64(tokens.off), CF_MEM(parents.buf),
                     CF_U64(parents.off), CF_MEM(next.buf), CF_U64(next.off),
                     CF_MEM(b->best_score.buf), CF_U64(dbl(b->best_score)),
                     CF_MEM(b->best_tokens.buf), CF_U64(b->best_tokens.off),
                     CF_MEM(b->best_len.buf), CF_U64(b->best_len.off),
                     CF_MEM(b->finished.buf), CF_U64(b->finished.off), CF_MEM(b->done.buf),
                     CF_U64(b->done.off), CF_MEM(b->n_done.buf), CF_U64(b->n_done.off),
                     CF_I32(batch), CF_I32(K), CF_I32(M), CF_I32(L), CF_I32(t), CF_I32(last));
}

clformer_status cf_beam_tokens(cf_ctx *ctx, cf_view dst, cf_view src, cf_view parents,
                               cf_view next, size_t L, size_t R, size_t col)
{
    if (R == 0 || L == 0) return CLFORMER_OK;
    if (R > INT_MAX || L > INT_MAX || col >= L)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_beam_tokens: column %zu of %zu rows of %zu tokens is out of range",
                       col, R, L);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BEAM_TOKENS, &k));
    size_t local[2] = {ctx->elementwise_wg, 1};
    size_t global[2] = {cf_round_up(L, local[0]), R};
    return CF_LAUNCH(ctx, "beam", cf_f32_bytes(2 * R * L + 2 * R), k, 2, global, local,
                     CF_MEM(dst.buf), CF_U64(dst.off), CF_MEM(src.buf), CF_U64(src.off),
                     CF_MEM(parents.buf), CF_U64(parents.off), CF_MEM(next.buf),
                     CF_U64(next.off), CF_I32(L), CF_I32(R), CF_I32(col));
}

clformer_status cf_beam_gather_cache(cf_ctx *ctx, cf_view dst, cf_view src, cf_view parents,
                                     size_t R, size_t H, size_t cap, size_t dh, size_t n,
                                     bool from_parent)
{
    if (R == 0 || H == 0 || dh == 0 || n == 0) return CLFORMER_OK;
    if (n > cap || R * H > INT_MAX || n * dh > INT_MAX || cap * dh > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_beam_gather_cache: %zu positions of %zu, %zu rows x %zu heads x %zu",
                       n, cap, R, H, dh);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BEAM_GATHER_CACHE, &k));
    size_t local[3] = {ctx->elementwise_wg, 1, 1}, global[3] = {n * dh, H, R};
    const uint64_t bytes = cf_f32_bytes(2 * R * H * n * dh + R); /* when every row moves */
    return CF_LAUNCH(ctx, "beam", bytes, k, 3, global, local, CF_MEM(dst.buf), CF_U64(dst.off),
                     CF_MEM(src.buf), CF_U64(src.off), CF_MEM(parents.buf),
                     CF_U64(parents.off), CF_I32(R), CF_I32(H), CF_I32(cap), CF_I32(dh),
                     CF_I32(n), CF_I32(from_parent));
}

clformer_status cf_beam_shared_prefix(cf_ctx *ctx, cf_view first, cf_view tokens, cf_view parents,
                                      size_t R, size_t L, size_t n)
{
    if (R == 0) return CLFORMER_OK;
    if (R > INT_MAX || L > INT_MAX || n > L)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_beam_shared_prefix: %zu positions of %zu rows of %zu tokens", n, R, L);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BEAM_SHARED_PREFIX, &k));
    size_t local = ctx->elementwise_wg, global = cf_round_up(R, local);
    /* reads two rows of tokens (at most n each) and the parent, writes one int */
    return CF_LAUNCH(ctx, "beam", cf_f32_bytes(2 * R * n + 2 * R), k, 1, &global, &local,
                     CF_MEM(first.buf), CF_U64(first.off), CF_MEM(tokens.buf),
                     CF_U64(tokens.off), CF_MEM(parents.buf), CF_U64(parents.off), CF_I32(R),
                     CF_I32(L), CF_I32(n));
}

clformer_status cf_beam_reorder_caches(cf_ctx *ctx, cf_view caches, size_t layer_stride,
                                       size_t value_stride, size_t layers, cf_view parents,
                                       cf_view first, size_t batch, size_t K, size_t H,
                                       size_t cap, size_t dh, size_t n)
{
    if (batch == 0 || layers == 0 || H == 0 || dh == 0 || n == 0) return CLFORMER_OK;
    if (K == 0 || K > 64)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_beam_reorder_caches: beam %zu must be 1..64", K);
    if (n > cap || batch * K > INT_MAX || n * dh > INT_MAX || H > INT_MAX || cap > INT_MAX ||
        layers > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_beam_reorder_caches: %zu positions of %zu, %zu rows x %zu heads x %zu",
                       n, cap, batch * K, H, dh);
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_BEAM_REORDER_CACHES, &k));
    size_t local[3] = {dh < ctx->elementwise_wg ? dh : ctx->elementwise_wg, 1, 1};
    size_t global[3] = {cf_round_up(dh, local[0]), H, batch};
    /* when every row moves every position: each cache's rows read and written once */
    const uint64_t bytes = cf_f32_bytes(4 * layers * batch * K * H * n * dh + 2 * batch * K);
    return CF_LAUNCH(ctx, "beam", bytes, k, 3, global, local, CF_MEM(caches.buf),
                     CF_U64(caches.off), CF_U64(layer_stride), CF_U64(value_stride),
                     CF_I32(layers), CF_MEM(parents.buf), CF_U64(parents.off),
                     CF_MEM(first.buf), CF_U64(first.off), CF_I32(batch), CF_I32(K), CF_I32(H),
                     CF_I32(cap), CF_I32(dh), CF_I32(n));
}
