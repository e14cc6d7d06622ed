/*
 * Host side of cl/embedding.cl: token embedding + positions + dropout, the
 * host-built index that makes the backward scatter-add deterministic, and
 * the backward. Token ids are trusted here: the host validates them
 * (0 <= id < vocab) before upload, and an invalid id reads or writes outside
 * the table.
 */
#include "dropout.h"
#include "launch.h"
#include "ops.h"
#include "program.h"

#include <limits.h>
#include <math.h>

static bool fits_int(size_t n) { return n <= (size_t)INT_MAX; }

/* Rows t < T of each batch entry hold positions pos0 + t; no positions at
 * all without `positions`. */
static clformer_status embed(cf_ctx *ctx, cf_view out, cf_view tokens, cf_view table,
                             cf_view pos_table, bool positions, size_t B, size_t T, size_t pos0,
                             size_t C, float scale, const cf_dropout *dropout)
{
    cf_dropout_args d;
    CF_TRY(cf_dropout_args_of(dropout, "cf_embedding_forward", &d));
    if (B == 0 || T == 0 || C == 0) return CLFORMER_OK;
    if (!out.buf || !tokens.buf || !table.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_embedding_forward: out, tokens and table need buffers");
    if (!fits_int(B) || !fits_int(T + pos0) || !fits_int(C) || !fits_int(B * T))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_embedding_forward: B=%zu T=%zu C=%zu exceed the int range of the "
                       "kernels; split the batch",
                       B, T, C);
    /* four columns per work item (cl/embedding.cl) */
    const size_t local[2] = {ctx->elementwise_wg, 1}, global[2] = {(C + 3) / 4, T};
    /* reads the ids and their table rows, writes out; learned positions add T rows */
    const size_t moved = B * T + 2 * B * T * C + (pos_table.buf ? T * C : 0);
    cl_kernel k;
    if (!positions) {
        CF_TRY(cf_kernel_get(ctx, CF_K_EMBEDDING_FORWARD_TOKENS, &k));
        return CF_LAUNCH(ctx, "embedding", cf_f32_bytes(moved), k, 2, global, local,
                         CF_VIEW(out), CF_VIEW(tokens), CF_VIEW(table), CF_I32(B), CF_I32(T),
                         CF_I32(C), CF_F32(scale), CF_DROPOUT_ARGS(d));
    }
    if (pos_table.buf) {
        CF_TRY(cf_kernel_get(ctx, CF_K_EMBEDDING_FORWARD_LEARNED, &k));
        return CF_LAUNCH(ctx, "embedding", cf_f32_bytes(moved), k, 2, global, local,
                         CF_MEM(out.buf),
                         CF_U64(out.off), CF_MEM(tokens.buf), CF_U64(tokens.off),
                         CF_MEM(table.buf), CF_U64(table.off), CF_MEM(pos_table.buf),
                         CF_U64(pos_table.off), CF_I32(B), CF_I32(T), CF_I32(C), CF_I32(pos0),
                         CF_F32(scale), CF_DROPOUT_ARGS(d));
    }
    /* The frequency ratio between column pairs, in double, handed over as
     * hi + lo floats: the kernel's two-float arithmetic keeps its precision. */
    const double beta = pow(10000.0, -2.0 / (double)C);
    const float beta_hi = (float)beta, beta_lo = (float)(beta - (double)beta_hi);
    CF_TRY(cf_kernel_get(ctx, CF_K_EMBEDDING_FORWARD_SINUSOIDAL, &k));
    return CF_LAUNCH(ctx, "embedding", cf_f32_bytes(moved), k, 2, global, local,
                     CF_MEM(out.buf), CF_U64(out.off), CF_MEM(tokens.buf), CF_U64(tokens.off), CF_MEM(table.buf),
                     CF_U64(table.off), CF_I32(B), CF_I32(T), CF_I32(C), CF_I32(pos0),
                     CF_F32(scale), CF_F32(beta_hi), CF_F32(beta_lo), CF_DROPOUT_ARGS(d));
}

clformer_status cf_embedding_forward(cf_ctx *ctx, cf_view out, cf_view tokens, cf_view table,
                                     cf_view pos_table, size_t B, size_t T, size_t C,
                                     float scale, const cf_dropout *dropout)
{
    CF_TRY(embed(ctx, out, tokens, table, pos_table, true, B, T, 0, C, scale, dropout));
    return cf_round_activation(ctx, out, B * T * C);
}

clformer_status cf_embedding_forward_tokens(cf_ctx *ctx, cf_view out, cf_view tokens,
                                            cf_view table, size_t B, size_t T, size_t C,
                                            float scale, const cf_dropout *dropout)
{
    const cf_view none = {NULL, 0};
    CF_TRY(embed(ctx, out, tokens, table, none, false, B, T, 0, C, scale, dropout));
    return cf_round_activation(ctx, out, B * T * C);
}

clformer_status cf_embedding_forward_at(cf_ctx *ctx, cf_view out, cf_view tokens, cf_view table,
                                        cf_view pos_table, size_t B, size_t pos, size_t C,
                                        float scale)
{
    /* B rows of one position each: a batch of B sequences of length 1, shifted */
    CF_TRY(embed(ctx, out, tokens, table, pos_table, true, B, 1, pos, C, scale, NULL));
    return cf_round_activation(ctx, out, B * C);
}

/* Orders positions by (token id, position). */
static bool before(const int32_t *tokens, int32_t a, int32_t b)
{
    return tokens[a] != tokens[b] ? tokens[a] < tokens[b] : a < b;
}

static void sift_down(const int32_t *tokens, int32_t *heap, size_t root, size_t n)
{
    for (size_t child; (child = 2 * root + 1) < n; root = child) {
        if (child + 1 < n && before(tokens, heap[child], heap[child + 1])) child++;
        if (!before(tokens, heap[root], heap[child])) return;
        const int32_t tmp = heap[root];
        heap[root] = heap[child];
        heap[child] = tmp;
    }
}

size_t cf_embedding_index_build(const int32_t *tokens, size_t n, int32_t *unique,
                                int32_t *starts, int32_t *positions)
{
    /* Heap sort in place: O(n log n), no allocation, and the (id, position)
     * order is total, so the result does not depend on the sort. */
    for (size_t i = 0; i < n; i++) positions[i] = (int32_t)i;
    for (size_t i = n / 2; i-- > 0;) sift_down(tokens, positions, i, n);
    for (size_t end = n; end > 1; end--) {
        const int32_t top = positions[0];
        positions[0] = positions[end - 1];
        positions[end - 1] = top;
        sift_down(tokens, positions, 0, end - 1);
    }
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && tokens[positions[i]] == tokens[positions[i - 1]]) continue;
        unique[u] = tokens[positions[i]];
        starts[u++] = (int32_t)i;
    }
    starts[u] = (int32_t)n;
    return u;
}

clformer_status cf_embedding_backward(cf_ctx *ctx, cf_view dtable, cf_view dpos_table,
                                      cf_view dout, const cf_embedding_index *index, size_t B,
                                      size_t T, size_t C, float scale,
                                      const cf_dropout *dropout)
{
    cf_dropout_args d;
    CF_TRY(cf_dropout_args_of(dropout, "cf_embedding_backward", &d));
    if (B == 0 || T == 0 || C == 0) return CLFORMER_OK;
    if (!index || !dtable.buf || !dout.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_embedding_backward: dtable, dout and the index are required");
    if (!fits_int(B) || !fits_int(T) || !fits_int(C) || !fits_int(B * T))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_embedding_backward: B=%zu T=%zu C=%zu exceed the int range of the "
                       "kernels; split the batch",
                       B, T, C);
    if (index->n_unique == 0 || index->n_unique > B * T || !index->unique.buf ||
        !index->starts.buf || !index->positions.buf)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_embedding_backward: the index (n_unique=%zu for %zu positions) was "
                       "not built by cf_embedding_index_build for these B and T",
                       index->n_unique, B * T);
    const size_t local[2] = {ctx->elementwise_wg, 1};
    const size_t by_id[2] = {(C + 3) / 4, index->n_unique}; /* four columns per item */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_EMBEDDING_BACKWARD_TABLE, &k));
    /* reads dout, the index (unique, starts, positions) and the rows of dtable it adds to,
     * writes those rows */
    const size_t U = index->n_unique, rows = B * T;
    CF_TRY(CF_LAUNCH(ctx, "embedding", cf_f32_bytes(rows * C + 2 * U + 1 + rows + 2 * U * C), k,
                     2, by_id, local, CF_MEM(dtable.buf),
                     CF_U64(dtable.off), CF_MEM(dout.buf), CF_U64(dout.off),
                     CF_MEM(index->unique.buf), CF_U64(index->unique.off),
                     CF_MEM(index->starts.buf), CF_U64(index->starts.off),
                     CF_MEM(index->positions.buf), CF_U64(index->positions.off),
                     CF_I32(index->n_unique), CF_I32(C), CF_F32(scale), CF_DROPOUT_ARGS(d)));
    if (!dpos_table.buf) return CLFORMER_OK;
    const size_t by_position[2] = {(C + 3) / 4, T};
    CF_TRY(cf_kernel_get(ctx, CF_K_EMBEDDING_BACKWARD_POS, &k));
    return CF_LAUNCH(ctx, "embedding", cf_f32_bytes(rows * C + 2 * T * C), k, 2, by_position,
                     local, CF_MEM(dpos_table.buf),
                     CF_U64(dpos_table.off), CF_MEM(dout.buf), CF_U64(dout.off), CF_I32(B),
                     CF_I32(T), CF_I32(C), CF_DROPOUT_ARGS(d));
}
