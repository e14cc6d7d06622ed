/*
 * Multi-head scaled dot-product attention (contract in runtime/ops/ops.h).
 *
 * Two paths, chosen by the saved tensors the caller gives. The fused one is
 * one forward launch and two backward launches (per query rows, then per
 * key rows), saving only two numbers per query row: the tiled kernels of
 * cl/flash_attention_tiled.cl where the device profile has tiles for the
 * head size (GPUs), else the per-row ones of cl/flash_attention.cl.
 * The unfused one, per (b, h), is three launches over all B*H heads at once:
 *   S = Qh Kh^T                      strided-batched GEMM into saved->probs
 *   P = softmax(scale S + mask)      attention_softmax, in place; P_drop beside it
 *   O = P_drop Vh                    strided-batched GEMM
 * Backward:
 *   dVh = P_drop^T dO, dP_drop = dO Vh^T          GEMMs
 *   dS = P (dP - rowsum(dP P)) scale              attention_softmax_backward, in place
 *   dQh = dS Kh, dKh = dS^T Qh                    GEMMs
 * Those products, and the tiled kernels, may read Qh, Kh, Vh and dO from, and
 * write O, dQh, dKh and dVh into, rows (B, T, heads * dh) instead of heads
 * (the shape's q_ld, kv_ld, out_rows, dq_ld, dkv_ld): the products are then
 * a batch with each product's offsets, or a strided batch per head
 * (heads_gemm), the kernels address rows (head_row in
 * cl/flash_attention_tiled.cl), and the model needs no merge or split
 * launch around them.
 * A forward with one query row a sequence and head and no dropout (a
 * decoding step) gives the unfused path's results, P included, in one
 * launch instead (cl/attention_decode.cl).
 * The K and V tensors of one (b, h) are Tk_cap rows apart (decoding caches
 * hold max_len rows); only the first Tk are read, and only those of dKh and
 * dVh are written.
 *
 * Grouped-query attention (H_kv < H): the G = H / H_kv query heads of a
 * key/value head are consecutive, so their Q rows (and P, O, dQ rows) are
 * one block of G*Tq rows. The unfused path's GEMMs then run per key/value
 * head over M = G*Tq rows, and dK = dS^T Q, dV = P_drop^T dO sum over the
 * group as the product runs; with G = 1 they are the GEMMs above. The fused
 * kernels read key/value head h / G and the key pass sums over the group.
 *
 * key_tokens.buf may be NULL: then no key is padding (only the causal mask
 * applies).
 */
#include "ops.h"
#include "attention_host.h"
#include "attention_search.h"
#include "attention_operands.h"
#include "gemm.h"
#include "launch.h"
#include "profile.h"
#include "program.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------------------- */
/* Heads in and out of the (B, H, T, dh) layout                              */
/* ------------------------------------------------------------------------- */

/* q, k, v: tensors 0, 1, 2 of cl/attention.cl's head slots (H0 heads for
 * tensor 0, H1 each for tensors 1 and 2; one tensor: all three the same,
 * H1 = 0); rows: the projection's rows. With H0 = 0, q is not used (k goes
 * in its place, so the kernel gets a buffer). A split with `bias` (one per
 * column of the rows) adds it on the way (split_heads_bias). */
static clformer_status heads_launch(cf_ctx *ctx, const char *fn, cf_kernel_id kernel, cf_view q,
                                    cf_view k, cf_view v, cf_view rows, cf_view bias, size_t ld,
                                    size_t B, size_t T, size_t H0, size_t H1, size_t dh,
                                    bool split, size_t kv_cap, size_t kv_pos)
{
    const cf_view heads[3] = {H0 ? q : k, k, v};
    const size_t slots = H0 + 2 * H1;
    if (B == 0 || T == 0 || slots == 0 || dh == 0) return CLFORMER_OK;
    if (ld < slots * dh)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: row stride ld=%zu is shorter than the heads' %zu*%zu columns; pass "
                       "the packed row length (>= heads*dh)", fn, ld, slots, dh);
    /* B*T rows of ld >= slots*dh columns: slots and dh fit an int too */
    CF_TRY(cf_check_rows(fn, B * T, ld));
    if (kv_pos + T > kv_cap || kv_cap > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: positions %zu..%zu past the cache's %zu rows a head", fn, kv_pos,
                       kv_pos + T - 1, kv_cap);
    cl_kernel kern;
    CF_TRY(cf_kernel_get(ctx, kernel, &kern));
    /* CPU devices: one work item per (row, head slot) moving dh floats (see
     * cl/attention.cl); GPUs: one per element, coalesced. The kernels are
     * built with the same choice (GPU_LAYOUTS, cf_program_options). */
    const bool per_head = !ctx->device_profile.gpu_layouts;
    size_t local[2] = {ctx->elementwise_wg, 1}, global[2] = {slots * dh, B * T};
    if (per_head) { /* groups of whole rows: with a group per item, PoCL's cost
                     * per group was most of the launch */
        local[0] = slots <= ctx->elementwise_wg ? slots : 1;
        local[1] = ctx->elementwise_wg / local[0];
        global[0] = slots;
        global[1] = cf_round_up(B * T, local[1]);
    }
    const uint64_t bytes = cf_f32_bytes(2 * B * T * slots * dh + (bias.buf ? ld : 0));
    if (bias.buf) /* each read and written, the bias read */
        return CF_LAUNCH(ctx, "attention", bytes, kern, 2, global, local, CF_MEM(heads[0].buf),
                         CF_U64(heads[0].off), CF_MEM(heads[1].buf), CF_U64(heads[1].off),
                         CF_MEM(heads[2].buf), CF_U64(heads[2].off), CF_MEM(rows.buf),
                         CF_U64(rows.off), CF_MEM(bias.buf), CF_U64(bias.off), CF_I32(ld),
                         CF_I32(B), CF_I32(T), CF_I32(H0), CF_I32(H1), CF_I32(dh),
                         CF_I32(kv_cap), CF_I32(kv_pos), CF_I32(ctx->precision));
    if (split)
        return CF_LAUNCH(ctx, "attention", bytes, kern, 2, global, local, CF_MEM(heads[0].buf),
                         CF_U64(heads[0].off), CF_MEM(heads[1].buf), CF_U64(heads[1].off),
                         CF_MEM(heads[2].buf), CF_U64(heads[2].off), CF_MEM(rows.buf),
                         CF_U64(rows.off), CF_I32(ld), CF_I32(B), CF_I32(T), CF_I32(H0),
                         CF_I32(H1), CF_I32(dh), CF_I32(kv_cap), CF_I32(kv_pos));
    return CF_LAUNCH(ctx, "attention", bytes, kern, 2, global, local, CF_MEM(rows.buf),
                     CF_U64(rows.off), CF_I32(ld), CF_MEM(heads[0].buf), CF_U64(heads[0].off),
                     CF_MEM(heads[1].buf), CF_U64(heads[1].off), CF_MEM(heads[2].buf),
                     CF_U64(heads[2].off), CF_I32(B), CF_I32(T), CF_I32(H0), CF_I32(H1),
                     CF_I32(dh));
}

/* No bias: a plain split or merge. */
static const cf_view NO_BIAS = {NULL, 0};

clformer_status cf_split_heads(cf_ctx *ctx, cf_view dst, cf_view src, size_t ld, size_t B,
                               size_t T, size_t H, size_t dh)
{
    return heads_launch(ctx, "cf_split_heads", CF_K_SPLIT_HEADS, dst, dst, dst, src, NO_BIAS, ld,
                        B, T, H, 0, dh, true, T, 0);
}

clformer_status cf_merge_heads(cf_ctx *ctx, cf_view dst, size_t ld, cf_view src, size_t B,
                               size_t T, size_t H, size_t dh)
{
    return heads_launch(ctx, "cf_merge_heads", CF_K_MERGE_HEADS, src, src, src, dst, NO_BIAS, ld,
                        B, T, H, 0, dh, false, T, 0);
}

clformer_status cf_split_qkv_heads(cf_ctx *ctx, cf_view q, cf_view k, cf_view v, cf_view src,
                                   size_t ld, size_t B, size_t T, size_t Hq, size_t Hkv,
                                   size_t dh)
{
    return heads_launch(ctx, "cf_split_qkv_heads", CF_K_SPLIT_HEADS, q, k, v, src, NO_BIAS, ld,
                        B, T, Hq, Hkv, dh, true, T, 0);
}

clformer_status cf_merge_qkv_heads(cf_ctx *ctx, cf_view dst, size_t ld, cf_view q, cf_view k,
                                   cf_view v, size_t B, size_t T, size_t Hq, size_t Hkv,
                                   size_t dh)
{
    return heads_launch(ctx, "cf_merge_qkv_heads", CF_K_MERGE_HEADS, q, k, v, dst, NO_BIAS, ld,
                        B, T, Hq, Hkv, dh, false, T, 0);
}

clformer_status cf_split_qkv_to_caches(cf_ctx *ctx, cf_view q, cf_view k_cache,
                                       cf_view v_cache, cf_view src, cf_view bias, size_t ld,
                                       size_t B, size_t T, size_t Hq, size_t Hkv, size_t dh,
                                       size_t cap, size_t pos)
{
    return heads_launch(ctx, "cf_split_qkv_to_caches",
                        bias.buf ? CF_K_SPLIT_HEADS_BIAS : CF_K_SPLIT_HEADS, q, k_cache, v_cache,
                        src, bias, ld, B, T, Hq, Hkv, dh, true, cap, pos);
}

/* ------------------------------------------------------------------------- */
/* Argument checks shared by forward and backward                            */
/* ------------------------------------------------------------------------- */

static bool same_view(cf_view a, cf_view b) { return a.buf == b.buf && a.off == b.off; }

static clformer_status check_args(cf_ctx *ctx, const char *fn, const cf_attention_shape *s,
                                  const cf_attention_saved *saved, const cf_dropout *dropout)
{
    if (!s || !saved)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: shape and saved must not be NULL", fn);
    if (s->Tk > s->Tk_cap)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: Tk=%zu keys in use exceed the row capacity Tk_cap=%zu of kh/vh", fn,
                       s->Tk, s->Tk_cap);
    if (s->H_kv > s->H || (s->H_kv && s->H % s->H_kv))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: H_kv=%zu key/value heads must divide H=%zu query heads", fn, s->H_kv,
                       s->H);
    if (s->H > INT_MAX || s->dh > INT_MAX || s->Tk > INT_MAX || s->key_ld > INT_MAX ||
        s->Tq > INT_MAX - s->q_pos0 - 1)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: H, dh, Tk, key_ld and q_pos0+Tq must fit in an int", fn);
    const size_t T = s->Tq > s->Tk ? s->Tq : s->Tk;
    /* the kernels number rows (and fused key blocks) with an int */
    if (T > 0 && s->B * s->H > INT_MAX / T)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: B*H*max(Tq, Tk) exceeds INT_MAX; split the batch", fn);
    if (s->out_rows || s->dq_ld || s->dkv_ld || s->q_ld || s->kv_ld) {
        const size_t width = s->H * s->dh, kv_width = cf_attention_kv_heads(s) * s->dh;
        const bool fused = cf_attention_fused(saved);
        if (!cf_attention_takes_rows(fused, fused && cf_attention_tiled(ctx, s->dh), s->H,
                                     s->H_kv))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: rows in place of heads (q_ld, kv_ld, out_rows, dq_ld, dkv_ld) "
                           "are for the tiled kernels, and the unfused path without "
                           "grouped-query heads; pass the head layout", fn);
        if (s->dq_ld > INT_MAX || s->dkv_ld > INT_MAX || s->q_ld > INT_MAX ||
            s->kv_ld > INT_MAX || width > INT_MAX)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: row strides q_ld=%zu, kv_ld=%zu, dq_ld=%zu, dkv_ld=%zu and "
                           "H*dh=%zu must fit in an int", fn, s->q_ld, s->kv_ld, s->dq_ld,
                           s->dkv_ld, width);
        if ((s->dq_ld && s->dq_ld < width) || (s->dkv_ld && s->dkv_ld < kv_width) ||
            (s->q_ld && s->q_ld < width) || (s->kv_ld && s->kv_ld < kv_width))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: row strides q_ld=%zu, kv_ld=%zu, dq_ld=%zu, dkv_ld=%zu are "
                           "shorter than the heads' %zu (queries) and %zu (keys, values) "
                           "columns", fn, s->q_ld, s->kv_ld, s->dq_ld, s->dkv_ld, width,
                           kv_width);
        if ((s->dkv_ld || s->kv_ld) && s->Tk_cap != s->Tk)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: K and V, or dK and dV, as rows need Tk_cap == Tk (%zu, %zu)", fn,
                           s->Tk_cap, s->Tk);
    }
    if (cf_dropout_active(dropout)) {
        if (!(dropout->p < 1.0f))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: dropout p=%g must be below 1", fn, (double)dropout->p);
        if (!cf_attention_fused(saved) && same_view(saved->probs_drop, saved->probs))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s: with dropout, saved->probs_drop must be a tensor apart from "
                           "saved->probs (backward needs both)", fn);
    }
    return CLFORMER_OK;
}

/* Elements from the first of `rows` rows of `width` (ld apart) to the last. */
static size_t rows_span(size_t rows, size_t ld, size_t width)
{
    return rows ? (rows - 1) * ld + width : 0;
}

/* Overwrites `rows` runs of `width` floats, ld apart, with 0 and nothing
 * else (one fill where they touch, else a fill a run: only degenerate
 * shapes come here). A run is a row of heads' columns, or the first rows of
 * a head's block in the head layout. */
static clformer_status zero_rows(cf_ctx *ctx, cf_view x, size_t rows, size_t ld, size_t width)
{
    if (ld == width) return cf_fill(ctx, x.buf, x.off, rows * width, 0.0f);
    for (size_t r = 0; r < rows; r++) CF_TRY(cf_fill(ctx, x.buf, x.off + r * ld, width, 0.0f));
    return CLFORMER_OK;
}

static bool evenly_strided(const heads_operand *x, size_t heads)
{
    return x->batch_step == heads * x->head_step;
}

/* C = op(A) op(B) for each of B * heads (batch, head) pairs: one strided
 * batch where every operand's blocks lie evenly apart; else, on the host
 * provider, one batch with each product's offsets (one launch), and on the
 * others a strided batch per head over the batches, or per batch over the
 * heads, whichever makes fewer calls: CLBlast's per-shape search times
 * strided batches, not lists of offsets (gemm_search.h), and the tiled
 * kernel takes a list one product a launch. The same products either way
 * (with the host provider the same bits, which do not depend on where its
 * operands lie). */
static clformer_status heads_gemm(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                                  size_t k, heads_operand a, heads_operand b, heads_operand c,
                                  size_t B, size_t heads)
{
    const size_t count = B * heads;
    if (evenly_strided(&a, heads) && evenly_strided(&b, heads) && evenly_strided(&c, heads))
        return cf_gemm_strided_batched(ctx, trans_a, trans_b, m, n, k, 1.0f, a.buf, a.off, a.ld,
                                       a.head_step, b.buf, b.off, b.ld, b.head_step, 0.0f, c.buf,
                                       c.off, c.ld, c.head_step, count);
    if (ctx->gemm_provider != CLFORMER_GEMM_HOST) {
        const bool per_head = heads <= B;
        const size_t calls = per_head ? heads : B, batch = per_head ? B : heads;
        const heads_operand *x[3] = {&a, &b, &c};
        size_t at[3], stride[3];
        for (int t = 0; t < 3; t++)
            stride[t] = per_head ? x[t]->batch_step : x[t]->head_step;
        for (size_t i = 0; i < calls; i++) {
            for (int t = 0; t < 3; t++)
                at[t] = x[t]->off + i * (per_head ? x[t]->head_step : x[t]->batch_step);
            CF_TRY(cf_gemm_strided_batched(ctx, trans_a, trans_b, m, n, k, 1.0f, a.buf, at[0],
                                           a.ld, stride[0], b.buf, at[1], b.ld, stride[1], 0.0f,
                                           c.buf, at[2], c.ld, stride[2], batch));
        }
        return CLFORMER_OK;
    }
    size_t *offs = malloc(3 * count * sizeof *offs);
    float *scalars = malloc(2 * count * sizeof *scalars);
    if (!offs || !scalars) {
        free(offs), free(scalars);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    const heads_operand *x[3] = {&a, &b, &c};
    for (size_t i = 0; i < count; i++) {
        for (int t = 0; t < 3; t++)
            offs[t * count + i] =
                x[t]->off + i / heads * x[t]->batch_step + i % heads * x[t]->head_step;
        scalars[i] = 1.0f, scalars[count + i] = 0.0f; /* alpha, beta */
    }
    const clformer_status st =
        cf_gemm_batched(ctx, trans_a, trans_b, m, n, k, scalars, a.buf, offs, a.ld, b.buf,
                        offs + count, b.ld, scalars + count, c.buf, offs + 2 * count, c.ld, count);
    free(offs), free(scalars);
    return st;
}

/* ------------------------------------------------------------------------- */
/* Forward                                                                   */
/* ------------------------------------------------------------------------- */

/* The dropout arguments every attention kernel ends with. */
#define DROP_ARGS(active, dropout)                                                              \
    CF_F32((active) ? (dropout)->p : 0.0f), CF_U64((active) ? (dropout)->seed : 0),             \
        CF_U32((active) ? (dropout)->step : 0), CF_U32((active) ? (dropout)->site : 0)

/* P = softmax(scale S + mask) in place of the scores S (a row per query
 * of each (b, h)), and with write_drop P_drop = P * dropout_scale into Pd
 * (a copy without dropout): cl/attention.cl's attention_softmax. */
static clformer_status softmax_launch(cf_ctx *ctx, cf_view P, cf_view Pd, bool write_drop,
                                      cf_view key_tokens, const cf_attention_shape *s,
                                      const cf_dropout *dropout)
{
    const size_t BH = s->B * s->H, Tq = s->Tq, Tk = s->Tk;
    const bool active = cf_dropout_active(dropout), use_keys = key_tokens.buf != NULL;
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ATTENTION_SOFTMAX, &k));
    /* GPUs: a work-group per row; CPU devices: a work item per row (cl/attention.cl) */
    size_t local, global;
    cf_row_grid(ctx, BH * Tq, &global, &local);
    /* scores read, probabilities written (twice with a separate probs_drop), key ids read */
    const size_t scores = BH * Tq * Tk;
    const size_t moved = (write_drop ? 3 : 2) * scores + (use_keys ? s->B * Tk : 0);
    return CF_LAUNCH(ctx, "attention", cf_f32_bytes(moved), k, 1, &global, &local,
                     CF_MEM(P.buf), CF_U64(P.off), CF_MEM(Pd.buf), CF_U64(Pd.off),
                     CF_I32(write_drop), CF_MEM(use_keys ? key_tokens.buf : P.buf),
                     CF_U64(key_tokens.off), CF_I32(s->key_ld), CF_I32(use_keys),
                     CF_I32(BH * Tq), CF_I32(s->H), CF_I32(Tq), CF_I32(Tk), CF_I32(s->q_pos0),
                     CF_I32(s->causal), CF_F32(1.0f / sqrtf((float)s->dh)),
                     DROP_ARGS(active, dropout));
}

/* S = Q K^T into P, per key/value head over its group's G*Tq query rows. */
static clformer_status scores_gemm(cf_ctx *ctx, cf_view P, cf_view qh, cf_view kh,
                                   const cf_attention_shape *s)
{
    const size_t Hkv = cf_attention_kv_heads(s), M = cf_attention_group(s) * s->Tq;
    return heads_gemm(ctx, false, true, M, s->Tk, s->dh, query_operand(qh, s->q_ld, s),
                      key_operand(kh, s->kv_ld, s), in_heads(P, s->Tk, M * s->Tk, Hkv), s->B,
                      Hkv);
}

/* Scores in probs, then softmax and dropout in place, then P_drop V. */
static clformer_status forward_unfused(cf_ctx *ctx, cf_view out, const cf_attention_saved *saved,
                                       cf_view qh, cf_view kh, cf_view vh, cf_view key_tokens,
                                       const cf_attention_shape *s, const cf_dropout *dropout)
{
    if (cf_attention_host_takes(ctx, s))
        return cf_attention_host_forward(ctx, out, saved->probs, saved->probs_drop, qh, kh, vh,
                                         key_tokens, s, dropout);
    const size_t BH = s->B * s->H, Tq = s->Tq, Tk = s->Tk, dh = s->dh;
    /* per key/value head: its group's G*Tq query rows */
    const size_t Hkv = cf_attention_kv_heads(s), M = cf_attention_group(s) * Tq;
    const cf_view P = saved->probs;
    CF_TRY(scores_gemm(ctx, P, qh, kh, s));
    /* Without dropout a separate probs_drop is still filled (a copy), so that
     * the saved tensors always mean what ops.h says. */
    const bool write_drop = !same_view(saved->probs_drop, P);
    const cf_view Pd = write_drop ? saved->probs_drop : P;
    CF_TRY(softmax_launch(ctx, P, Pd, write_drop, key_tokens, s, dropout));
    /* the saved probabilities as stored (16-bit runs), before P V reads them */
    const size_t scores = BH * Tq * Tk;
    CF_TRY(cf_round_activation(ctx, P, scores));
    if (write_drop) CF_TRY(cf_round_activation(ctx, Pd, scores));

    /* as rows, group 1: M is Tq and Hkv is H */
    CF_TRY(heads_gemm(ctx, false, false, M, dh, Tk, in_heads(Pd, Tk, M * Tk, Hkv),
                      key_operand(vh, s->kv_ld, s), query_operand(out, out_ld(s), s), s->B,
                      Hkv));
    return cf_round_activation(ctx, out, BH * Tq * dh); /* the same span either way */
}

/* The shape arguments of the fused kernels, after their tensors: key
 * tokens, then sizes, then scale and dropout. `rows` is the work items. */
#define FUSED_ARGS(key_tokens, any, s, rows, dropout)                                           \
    CF_MEM((key_tokens).buf ? (key_tokens).buf : (any)), CF_U64((key_tokens).off),             \
        CF_I32((s)->key_ld), CF_I32((key_tokens).buf != NULL), CF_I32(rows), CF_I32((s)->H),   \
        CF_I32(cf_attention_group(s)), CF_I32((s)->Tq), CF_I32((s)->Tk), CF_I32((s)->Tk_cap), CF_I32((s)->dh),                 \
        CF_I32((s)->q_pos0), CF_I32((s)->causal), CF_F32(1.0f / sqrtf((float)(s)->dh)),        \
        DROP_ARGS(cf_dropout_active(dropout), dropout)

/* The tiles of the tiled kernels for head size dh (those a check forced, or
 * the profile's as the tile search leaves them: attention_search.h), or false: the per-row kernels serve it (a profile with
 * tiled attention says why, once, at debug level). */
static bool tiles_for(cf_ctx *ctx, size_t dh, cf_attention_tiles *t)
{
    const char *why;
    if (ctx->forced_tiles.head_dim != 0 && ctx->forced_tiles.head_dim == dh) {
        *t = ctx->forced_tiles;
        return true;
    }
    if (cf_attention_tiles_for(&ctx->device_profile, dh, t, &why)) {
        cf_attention_search_tiles(ctx, t);
        return true;
    }
    if (ctx->device_profile.tiled_attention && !ctx->attention_fallback_logged) {
        cf_log(&ctx->log, CF_LOG_DEBUG,
               "attention: head size %zu runs the per-row fused kernels: %s", dh, why);
        ctx->attention_fallback_logged = true;
    }
    return false;
}

bool cf_attention_tiled(cf_ctx *ctx, size_t dh)
{
    cf_attention_tiles t;
    return tiles_for(ctx, dh, &t);
}

/* cl/flash_attention_tiled.cl's kernel `name` built for the tiles t. */
static clformer_status tiled_kernel(cf_ctx *ctx, const cf_attention_tiles *t, const char *name,
                                    cl_kernel *k)
{
    char options[256];
    cf_attention_tiles_options(t, options, sizeof options);
    return cf_kernel(ctx, "flash_attention_tiled", options, name, k);
}

/* The shape arguments of the tiled kernels, after their tensors, ending
 * with the layouts of Q, K and V, O and dO, dQ, and dK and dV (0: heads;
 * else the row stride: O's and dO's rows are the heads' columns alone). */
#define TILED_ARGS(key_tokens, any, s, dropout)                                                 \
    CF_MEM((key_tokens).buf ? (key_tokens).buf : (any)), CF_U64((key_tokens).off),             \
        CF_I32((s)->key_ld), CF_I32((key_tokens).buf != NULL), CF_I32((s)->H),                 \
        CF_I32(cf_attention_group(s)), CF_I32((s)->Tq), CF_I32((s)->Tk), CF_I32((s)->Tk_cap),   \
        CF_I32((s)->q_pos0), CF_I32((s)->causal), CF_F32(1.0f / sqrtf((float)(s)->dh)),        \
        DROP_ARGS(cf_dropout_active(dropout), dropout), CF_I32((s)->q_ld), CF_I32((s)->kv_ld),   \
        CF_I32(out_ld(s)), CF_I32((s)->dq_ld), CF_I32((s)->dkv_ld)

/* A tiled launch: blocks of `rows` of the `n` rows of each of `heads`
 * heads, `split` items a row, each item holding `per_item` rows. */
static void tiled_grid(size_t rows, size_t split, size_t per_item, size_t n, size_t heads,
                       size_t global[2], size_t local[2])
{
    local[0] = rows / per_item * split;
    local[1] = 1;
    global[0] = (n + rows - 1) / rows * local[0];
    global[1] = heads;
}

/* Two of the fused kernels' products, Tq x Tk x dh per query head each (an
 * FMA counts 2): the FLOP of the products they stand in for, as the model's
 * tally counts them (clformer_config_train_flop): every score, masked or
 * not, and not the scores the backward computes again. A forward launch does
 * S = Q K^T and O = P V; each backward launch two of the four. */
static uint64_t fused_products_flop(const cf_attention_shape *s)
{
    return 4u * (uint64_t)s->B * s->H * s->Tq * s->Tk * s->dh;
}

/* Whether a forward takes attention_decode (cl/attention_decode.cl): one
 * query row a sequence and head (a decoding step), without dropout and with
 * the probabilities saved once. On every device: PoCL ran it as fast as the
 * three launches it replaces or faster (docs/PERFORMANCE.md), and a GPU
 * pays for each launch more. */
static bool decode_in_one(const cf_attention_saved *saved, const cf_attention_shape *s,
                          const cf_dropout *dropout)
{
    return s->Tq == 1 && !s->q_ld && !s->kv_ld && !cf_dropout_active(dropout) &&
           same_view(saved->probs_drop, saved->probs);
}

/* The materialised path's results, P into saved->probs included, in one
 * launch: a work-group per query row on GPUs, a work item on CPU devices. */
static clformer_status forward_decode(cf_ctx *ctx, cf_view out, const cf_attention_saved *saved,
                                      cf_view qh, cf_view kh, cf_view vh, cf_view key_tokens,
                                      const cf_attention_shape *s)
{
    const size_t rows = s->B * s->H * s->Tq, dh = s->dh;
    const bool use_keys = key_tokens.buf != NULL;
    /* Q read and O written, the keys' K and V rows read, P written, key ids read */
    const uint64_t bytes =
        cf_f32_bytes(2 * rows * dh + 2 * s->B * cf_attention_kv_heads(s) * s->Tk * dh +
                     rows * s->Tk + (use_keys ? s->B * s->Tk : 0));
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ATTENTION_DECODE, &k));
    size_t local, global;
    cf_row_grid(ctx, rows, &global, &local);
    if (!ctx->device_profile.gpu_layouts) {
        /* an item's row is long work: at least 8 groups, so that a step's
         * few rows (6 for one sequence of gpt-char) spread over the cores */
        const size_t spread = rows / 8 ? rows / 8 : 1;
        if (spread < local) local = spread;
        global = cf_round_up(rows, local);
    }
    return CF_LAUNCH_FLOP(ctx, "attention", bytes, fused_products_flop(s), k, 1,
                          &global, &local, CF_VIEW(out), CF_VIEW(saved->probs), CF_VIEW(qh),
                          CF_VIEW(kh), CF_VIEW(vh), CF_MEM(use_keys ? key_tokens.buf : qh.buf),
                          CF_U64(key_tokens.off), CF_I32(s->key_ld), CF_I32(use_keys),
                          CF_I32(rows), CF_I32(s->H), CF_I32(cf_attention_group(s)),
                          CF_I32(s->Tq), CF_I32(s->Tk), CF_I32(s->Tk_cap), CF_I32(dh),
                          CF_I32(s->q_pos0), CF_I32(s->causal),
                          CF_F32(1.0f / sqrtf((float)dh)), CF_I32(ctx->precision));
}

/* The fused forward: the row statistics, then the output. */
static clformer_status forward_fused(cf_ctx *ctx, cf_view out, const cf_attention_saved *saved,
                                     cf_view qh, cf_view kh, cf_view vh, cf_view key_tokens,
                                     const cf_attention_shape *s, const cf_dropout *dropout)
{
    if (!same_view(saved->out, out) || !same_view(saved->key_tokens, key_tokens))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_attention_forward: on the fused path saved->out must be ctx_h and "
                       "saved->key_tokens the key_tokens given (the backward reads them)");
    const size_t rows = s->B * s->H * s->Tq;
    const cf_view L = saved->stats;
    /* ideal traffic: Q, K, V read and O written once, two statistics per row */
    const uint64_t bytes =
        cf_f32_bytes(2 * rows * s->dh + 2 * s->B * cf_attention_kv_heads(s) * s->Tk * s->dh +
                     2 * rows);
    const uint64_t flop = fused_products_flop(s);
    cl_kernel k;
    cf_attention_tiles t;
    if (tiles_for(ctx, s->dh, &t)) {
        size_t global[2], local[2];
        tiled_grid(t.fwd_rows, t.fwd_split, t.fwd_per_item, s->Tq, s->B * s->H, global, local);
        CF_TRY(tiled_kernel(ctx, &t, "flash_tiled_forward", &k));
        CF_TRY(CF_LAUNCH_FLOP(ctx, "attention", bytes, flop, k, 2, global, local, CF_VIEW(out),
                              CF_VIEW(L), CF_VIEW(qh), CF_VIEW(kh), CF_VIEW(vh),
                              TILED_ARGS(key_tokens, qh.buf, s, dropout)));
    } else if (cf_attention_host_takes(ctx, s)) {
        CF_TRY(cf_attention_host_forward_fused(ctx, out, L, qh, kh, vh, key_tokens, s, dropout));
    } else {
        /* one work item per query row */
        const size_t local = ctx->elementwise_wg, global = cf_round_up(rows, local);
        CF_TRY(cf_kernel_get(ctx, ctx->device_profile.scalar_attention
                                      ? CF_K_FLASH_ATTENTION_FORWARD_SIMPLE
                                      : CF_K_FLASH_ATTENTION_FORWARD,
                             &k));
        CF_TRY(CF_LAUNCH_FLOP(ctx, "attention", bytes, flop, k, 1, &global, &local,
                              CF_VIEW(out), CF_VIEW(L), CF_VIEW(qh), CF_VIEW(kh), CF_VIEW(vh),
                              FUSED_ARGS(key_tokens, qh.buf, s, rows, dropout)));
    }
    /* the output, as stored; the row statistics stay fp32 */
    return cf_round_activation(ctx, out, rows * s->dh);
}

clformer_status cf_attention_forward(cf_ctx *ctx, cf_view ctx_h, const cf_attention_saved *saved,
                                     cf_view qh, cf_view kh, cf_view vh, cf_view key_tokens,
                                     const cf_attention_shape *shape, const cf_dropout *dropout)
{
    const char *fn = "cf_attention_forward";
    CF_TRY(check_args(ctx, fn, shape, saved, dropout));
    const cf_attention_shape *s = shape;
    if (s->B == 0 || s->H == 0 || s->Tq == 0 || s->dh == 0) return CLFORMER_OK;
    if (key_tokens.buf && s->B > 1 && s->key_ld < s->Tk)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: key_ld=%zu is shorter than Tk=%zu: batches' key tokens would overlap",
                       fn, s->key_ld, s->Tk);
    /* No keys: every row is fully masked, so the output is 0. */
    if (s->Tk == 0) return cf_fill(ctx, ctx_h.buf, ctx_h.off, s->B * s->H * s->Tq * s->dh, 0.0f);

    if (cf_attention_fused(saved))
        return forward_fused(ctx, ctx_h, saved, qh, kh, vh, key_tokens, s, dropout);
    if (decode_in_one(saved, s, dropout))
        return forward_decode(ctx, ctx_h, saved, qh, kh, vh, key_tokens, s);
    return forward_unfused(ctx, ctx_h, saved, qh, kh, vh, key_tokens, s, dropout);
}

/* ------------------------------------------------------------------------- */
/* Backward                                                                  */
/* ------------------------------------------------------------------------- */

/* The unfused backward's products and softmax kernel over P and P_drop (Pd;
 * P itself without dropout), dS written into dprobs. Pd may be dprobs: dV's
 * product reads it before dP_drop overwrites it. round_ds: dS as stored
 * (16-bit runs) before dQ's and dK's products read it, as the unfused path
 * saves it; the fused path's backward keeps it in fp32. */
static clformer_status backward_products(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                         cf_view dprobs, cf_view dout, cf_view P, cf_view Pd,
                                         cf_view qh, cf_view kh, cf_view vh,
                                         const cf_attention_shape *s, const cf_dropout *dropout,
                                         bool round_ds)
{
    const size_t BH = s->B * s->H, Tq = s->Tq, Tk = s->Tk, dh = s->dh;
    /* per key/value head: its group's G*Tq query rows (as rows, group 1) */
    const size_t Hkv = cf_attention_kv_heads(s), M = cf_attention_group(s) * Tq;
    const bool active = cf_dropout_active(dropout);
    const heads_operand probs_op = in_heads(Pd, Tk, M * Tk, Hkv),
                        ds_op = in_heads(dprobs, Tk, M * Tk, Hkv),
                        q_op = query_operand(qh, s->q_ld, s),
                        k_op = key_operand(kh, s->kv_ld, s), v_op = key_operand(vh, s->kv_ld, s),
                        dout_op = query_operand(dout, out_ld(s), s),
                        dq_op = query_operand(dqh, s->dq_ld, s),
                        dk_op = key_operand(dkh, s->dkv_ld, s),
                        dv_op = key_operand(dvh, s->dkv_ld, s);

    /* dVh = P_drop^T dO */
    CF_TRY(heads_gemm(ctx, true, false, Tk, dh, M, probs_op, dout_op, dv_op, s->B, Hkv));
    /* dP_drop = dO Vh^T */
    CF_TRY(heads_gemm(ctx, false, true, M, Tk, dh, dout_op, v_op, ds_op, s->B, Hkv));
    /* dS, in place of dP_drop */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_ATTENTION_SOFTMAX_BACKWARD, &k));
    size_t local, global; /* as in the forward */
    cf_row_grid(ctx, BH * Tq, &global, &local);
    /* dP and P read, dS written */
    CF_TRY(CF_LAUNCH(ctx, "attention", cf_f32_bytes(3 * BH * Tq * Tk), k, 1, &global, &local,
                     CF_MEM(dprobs.buf), CF_U64(dprobs.off), CF_MEM(P.buf), CF_U64(P.off),
                     CF_I32(BH * Tq), CF_I32(Tk),
                     CF_F32(1.0f / sqrtf((float)dh)), DROP_ARGS(active, dropout)));
    if (round_ds) CF_TRY(cf_round_activation(ctx, dprobs, BH * Tq * Tk)); /* dS as stored */
    /* dQh = dS Kh, dKh = dS^T Qh */
    CF_TRY(heads_gemm(ctx, false, false, M, dh, Tk, ds_op, k_op, dq_op, s->B, Hkv));
    return heads_gemm(ctx, true, false, Tk, dh, M, ds_op, q_op, dk_op, s->B, Hkv);
}

static clformer_status backward_unfused(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                        cf_view dprobs, cf_view dout,
                                        const cf_attention_saved *saved, cf_view qh, cf_view kh,
                                        cf_view vh, const cf_attention_shape *s,
                                        const cf_dropout *dropout)
{
    if (cf_attention_host_takes(ctx, s))
        return cf_attention_host_backward(ctx, dqh, dkh, dvh, dprobs, dout, saved->probs,
                                          saved->probs_drop, qh, kh, vh, s, dropout);
    const cf_view P = saved->probs, Pd = cf_dropout_active(dropout) ? saved->probs_drop : P;
    return backward_products(ctx, dqh, dkh, dvh, dprobs, dout, P, Pd, qh, kh, vh, s, dropout,
                             true);
}

bool cf_attention_backward_by_gemm(const cf_attention_saved *saved, const cf_attention_shape *s)
{
    const bool rows = s->out_rows || s->q_ld || s->kv_ld || s->dq_ld || s->dkv_ld;
    return cf_attention_fused(saved) && saved->backward_scores.buf &&
           (cf_attention_group(s) == 1 || !rows);
}

/* The fused forward's backward by the unfused path's kernels: the scores
 * again (S = Q K^T into the workspace), the softmax kernel's P in their
 * place and P_drop (with dropout) into dprobs, then the unfused backward.
 * Where the fused backward kernels make all their FMAs themselves (the
 * tiled ones about 15-22% of an H200's fp32 peak, docs/gpu/), here the
 * GEMM provider makes them; the cost is the T x T workspace's traffic.
 * P is the softmax's again, not the forward's row statistics applied: the
 * two agree to fp32 rounding, as the fused and unfused paths do. */
static clformer_status backward_by_gemm(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                        cf_view dprobs, cf_view dout,
                                        const cf_attention_saved *saved, cf_view qh, cf_view kh,
                                        cf_view vh, const cf_attention_shape *s,
                                        const cf_dropout *dropout)
{
    const cf_view P = saved->backward_scores;
    const bool active = cf_dropout_active(dropout);
    CF_TRY(scores_gemm(ctx, P, qh, kh, s));
    CF_TRY(softmax_launch(ctx, P, dprobs, active, saved->key_tokens, s, dropout));
    return backward_products(ctx, dqh, dkh, dvh, dprobs, dout, P, active ? dprobs : P, qh, kh,
                             vh, s, dropout, false);
}

/* dQ and D = rowsum(dO * O) per query row, then dK and dV per key row. */
static clformer_status backward_fused(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                      cf_view dsum, cf_view dout,
                                      const cf_attention_saved *saved, cf_view qh, cf_view kh,
                                      cf_view vh, const cf_attention_shape *s,
                                      const cf_dropout *dropout)
{
    const cf_view key_tokens = saved->key_tokens, L = saved->stats, O = saved->out;
    const size_t BH = s->B * s->H, rows = BH * s->Tq;
    const size_t BK = s->B * cf_attention_kv_heads(s), keyrows = BK * s->Tk;
    /* ideal traffic: dO, O, Q read and dQ written; K, V read; statistics, D */
    const size_t q_rows = rows * s->dh, k_rows = keyrows * s->dh;
    const uint64_t dq_bytes = cf_f32_bytes(4 * q_rows + 2 * k_rows + 3 * rows);
    /* ideal traffic: Q, dO read; K, V read and dK, dV written; statistics, D */
    const uint64_t dkv_bytes = cf_f32_bytes(2 * q_rows + 4 * k_rows + 3 * rows);
    /* dP = dO V^T and dQ = dS K; dV = P^T dO and dK = dS^T Q */
    const uint64_t flop = fused_products_flop(s);
    cl_kernel k;
    cf_attention_tiles t;
    if (tiles_for(ctx, s->dh, &t)) {
        size_t global[2], local[2];
        tiled_grid(t.dq_rows, t.dq_split, t.dq_per_item, s->Tq, BH, global, local);
        CF_TRY(tiled_kernel(ctx, &t, "flash_tiled_backward_dq", &k));
        CF_TRY(CF_LAUNCH_FLOP(ctx, "attention", dq_bytes, flop, k, 2, global, local,
                              CF_VIEW(dqh), CF_VIEW(dsum), CF_VIEW(dout), CF_VIEW(O), CF_VIEW(L),
                              CF_VIEW(qh), CF_VIEW(kh), CF_VIEW(vh),
                              TILED_ARGS(key_tokens, qh.buf, s, dropout)));
        tiled_grid(t.dkv_keys, t.dkv_split, t.dkv_per_item, s->Tk, BK, global, local);
        CF_TRY(tiled_kernel(ctx, &t, "flash_tiled_backward_dkv", &k));
        return CF_LAUNCH_FLOP(ctx, "attention", dkv_bytes, flop, k, 2, global, local,
                              CF_VIEW(dkh), CF_VIEW(dvh), CF_VIEW(dsum), CF_VIEW(dout), CF_VIEW(L),
                              CF_VIEW(qh), CF_VIEW(kh), CF_VIEW(vh),
                              TILED_ARGS(key_tokens, qh.buf, s, dropout));
    }
    if (cf_attention_host_takes(ctx, s))
        return cf_attention_host_backward_fused(ctx, dqh, dkh, dvh, dout, qh, kh, vh, key_tokens,
                                                s, dropout);
    const size_t local = ctx->elementwise_wg;
    /* simulators: the scalar *_simple kernels (why: cl/flash_attention.cl) */
    const bool simple = ctx->device_profile.scalar_attention;
    CF_TRY(cf_kernel_get(ctx, simple ? CF_K_FLASH_ATTENTION_BACKWARD_DQ_SIMPLE
                                     : CF_K_FLASH_ATTENTION_BACKWARD_DQ, &k));
    size_t global = cf_round_up(rows, local);
    CF_TRY(CF_LAUNCH_FLOP(ctx, "attention", dq_bytes, flop, k, 1, &global, &local, CF_VIEW(dqh),
                          CF_VIEW(dsum), CF_VIEW(dout), CF_VIEW(O), CF_VIEW(L), CF_VIEW(qh),
                          CF_VIEW(kh), CF_VIEW(vh),
                          FUSED_ARGS(key_tokens, qh.buf, s, rows, dropout)));
    CF_TRY(cf_kernel_get(ctx, simple ? CF_K_FLASH_ATTENTION_BACKWARD_DKV_SIMPLE
                                     : CF_K_FLASH_ATTENTION_BACKWARD_DKV, &k));
    /* a work item per four key rows (simple: per key row) */
    const size_t blocks = simple ? keyrows : BK * ((s->Tk + 3) / 4);
    global = cf_round_up(blocks, local);
    return CF_LAUNCH_FLOP(ctx, "attention", dkv_bytes, flop, k, 1, &global, &local,
                          CF_VIEW(dkh), CF_VIEW(dvh), CF_VIEW(dsum), CF_VIEW(dout), CF_VIEW(L),
                          CF_VIEW(qh), CF_VIEW(kh), CF_VIEW(vh),
                          FUSED_ARGS(key_tokens, qh.buf, s, blocks, dropout));
}

clformer_status cf_attention_backward(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                      cf_view dprobs, cf_view dctx_h,
                                      const cf_attention_saved *saved, cf_view qh, cf_view kh,
                                      cf_view vh, const cf_attention_shape *shape,
                                      const cf_dropout *dropout)
{
    CF_TRY(check_args(ctx, "cf_attention_backward", shape, saved, dropout));
    const cf_attention_shape *s = shape;
    const size_t BH = s->B * s->H, BK = s->B * cf_attention_kv_heads(s);
    if (BH == 0 || s->dh == 0) return CLFORMER_OK;
    /* Degenerate products: no queries means no gradient into keys and values,
     * no keys means none into queries. */
    const size_t width = s->H * s->dh, kv_width = cf_attention_kv_heads(s) * s->dh;
    if (s->Tq == 0 || s->Tk == 0) {
        /* as rows, B*Tk rows of the heads' width; as heads, the first Tk rows
         * of each key/value head's block of Tk_cap */
        const size_t kv_runs = s->dkv_ld ? s->B * s->Tk : BK,
                     kv_ld = s->dkv_ld ? s->dkv_ld : s->Tk_cap * s->dh,
                     kv_run = s->dkv_ld ? kv_width : s->Tk * s->dh;
        CF_TRY(zero_rows(ctx, dkh, kv_runs, kv_ld, kv_run));
        CF_TRY(zero_rows(ctx, dvh, kv_runs, kv_ld, kv_run));
        return s->dq_ld ? zero_rows(ctx, dqh, s->B * s->Tq, s->dq_ld, width)
                        : zero_rows(ctx, dqh, BH, s->Tq * s->dh, s->Tq * s->dh);
    }
    if (cf_attention_backward_by_gemm(saved, s))
        CF_TRY(backward_by_gemm(ctx, dqh, dkh, dvh, dprobs, dctx_h, saved, qh, kh, vh, s,
                                dropout));
    else if (cf_attention_fused(saved))
        CF_TRY(backward_fused(ctx, dqh, dkh, dvh, dprobs, dctx_h, saved, qh, kh, vh, s, dropout));
    else
        CF_TRY(backward_unfused(ctx, dqh, dkh, dvh, dprobs, dctx_h, saved, qh, kh, vh, s, dropout));
    /* the three gradients as stored (rows past Tk of dK and dV are rounded too: harmless;
     * as rows, the columns between: their values are stored ones) */
    const size_t q_span = s->dq_ld ? rows_span(s->B * s->Tq, s->dq_ld, width) : BH * s->Tq * s->dh,
                 kv_span = s->dkv_ld ? rows_span(s->B * s->Tk, s->dkv_ld, kv_width)
                                     : BK * s->Tk_cap * s->dh;
    CF_TRY(cf_round_activation(ctx, dqh, q_span));
    CF_TRY(cf_round_activation(ctx, dkh, kv_span));
    return cf_round_activation(ctx, dvh, kv_span);
}
