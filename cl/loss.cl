/*
 * Softmax cross-entropy over the vocabulary (the loss and its gradient in one
 * kernel), and the row-wise log-softmax and argmax that decoding needs.
 *
 * One work-group of REDUCE_WG items per row: each item walks its own columns
 * (chunks of ROW_VEC, below; argmax column by column) and the group combines
 * with wg_max / wg_sum from common.h, so the order of every sum is fixed
 * (bit-identical reruns).
 * Everything is computed relative to the row maximum m: exp(x - m) <= 1
 * cannot overflow, and m - x >= 0 sums without cancellation, which keeps
 * logits of +-1e4 over 50k classes accurate.
 */
#include "common.h"

/* Column loops run the same trip count on every item of the group,
 * `for (b = 0; b < V; b += REDUCE_WG) if (b + lid < V) ...`, not
 * `for (c = lid; c < V; c += REDUCE_WG)`: with the latter, PoCL 3.1's
 * pthread device wrote outside the buffers whenever V < REDUCE_WG (some
 * items skip the loop after a barrier). */

/* Rows are walked in chunks of ROW_VEC columns: work item lid takes chunks
 * lid, lid + REDUCE_WG, ... (vload8/vstore8), and the last V % ROW_VEC
 * columns one each, so every item reads and writes the same columns in each
 * pass. On CPU devices the vector types are what makes exp and the sums SIMD
 * (PoCL does not vectorize a loop inside a work item, and the earlier
 * one-pass online softmax, column by column with a data-dependent rescale,
 * ran at ~0.2 GB/s); on GPUs a chunk is one 32-byte load per item. */
#define ROW_VEC 8

/* The largest of the 8 lanes, and their sum in a fixed order. The lanes go
 * through a private array: Oclgrind 21.10's uninitialised-memory checker
 * crashes on the lane shuffles that combining them in registers compiles to. */
static inline float max8(float8 v)
{
    float t[ROW_VEC];
    vstore8(v, 0, t);
    return fmax(fmax(fmax(t[0], t[4]), fmax(t[2], t[6])), fmax(fmax(t[1], t[5]), fmax(t[3], t[7])));
}

static inline float sum8(float8 v)
{
    float t[ROW_VEC];
    vstore8(v, 0, t);
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}

/* What row_max_sumexp_d returns. A struct, not a float3: Intel's OpenCL CPU
 * compiler (2026.22) returns a float3 from a function with barriers that it
 * does not inline (this one, at REDUCE_WG 128 and 256) through per-item
 * storage 4 floats apart read 3 apart: item i got float 3i (m, 0, 0, S, m,
 * ...), so with CLFORMER_PROFILE=gpu-layouts the gradients of cross_entropy
 * and the outputs of log_softmax_rows were garbage there while the loss
 * (item 0) was right. Kernels use no 3-component vectors at all
 * (tests/check_kernel_sources.cmake). */
typedef struct {
    float m, s, d;
} row_stats;

/* The row maximum m and S = sum of exp(x - m) of row x (V columns), for the
 * whole group, in two passes over the row (it is read again from the cache):
 * the maximum, then the sums. With `want_d` also d = sum_c (m - x_c) (label
 * smoothing), Kahan-compensated per lane: with logits of +-1e4 the terms
 * reach 2e4 and the sum 1e9; every term is >= 0. A NaN logit makes S, and so
 * the loss, NaN; -inf logits add 0 to S. */
static inline __attribute__((always_inline)) row_stats
row_max_sumexp_d(global const float *x, int V, bool want_d, local float *scratch)
{
    const int lid = get_local_id(0), chunks = V / ROW_VEC, tail0 = chunks * ROW_VEC;
    float8 m8 = (float8)(-INFINITY);
    for (int b = 0; b < chunks; b += REDUCE_WG)
        if (b + lid < chunks) m8 = fmax(m8, vload8(b + lid, x));
    float m = max8(m8);
    for (int b = tail0; b < V; b += REDUCE_WG)
        if (b + lid < V) m = fmax(m, x[b + lid]);
    const float row_m = wg_max(m, scratch);

    float8 s8 = (float8)(0.0f), d8 = (float8)(0.0f), comp8 = (float8)(0.0f);
    for (int b = 0; b < chunks; b += REDUCE_WG) {
        if (b + lid < chunks) {
            const float8 v = vload8(b + lid, x);
            s8 += exp(v - row_m);
            if (want_d) {
                const float8 t = (row_m - v) - comp8, sum = d8 + t;
                comp8 = (sum - d8) - t;
                d8 = sum;
            }
        }
    }
    float s = sum8(s8), d = want_d ? sum8(d8 - comp8) : 0.0f;
    for (int b = tail0; b < V; b += REDUCE_WG) {
        if (b + lid < V) {
            s += exp(x[b + lid] - row_m);
            d += row_m - x[b + lid];
        }
    }
    const float row_s = wg_sum(s, scratch);
    const float row_d = want_d ? wg_sum(d, scratch) : 0.0f; /* want_d is uniform */
    const row_stats r = {row_m, row_s, row_d};
    return r;
}

/*
 * Row r, target y = targets[r], smoothing ls, q = (1 - ls) onehot(y) + ls/V:
 *   loss_r = -sum_c q_c log p_c
 *          = log S + (1 - ls)(m - x_y) + ls * mean_c(m - x_c),  S = sum_c exp(x_c - m)
 *   dlogits_r = grad_scale * (p - q)
 * Ignored rows (y == ignore_index) give 0 and a zero gradient. A target
 * outside [0, V) (the host validates them) gives NaN, never a stray read.
 * dlogits may be the same memory as logits: each item overwrites only the
 * columns it reads itself, and x_y (read by all) is read before a barrier.
 */
kernel void cross_entropy(global float *losses, ulong losses_off, global float *dlogits,
                          ulong dlogits_off, int has_grad, global const float *logits,
                          ulong logits_off, global const int *targets, ulong targets_off, int N,
                          int V, float ls, int ignore_index, float grad_scale)
{
    local float scratch[REDUCE_WG];
    const int row = get_group_id(0), lid = get_local_id(0);
    if (row >= N) return; /* whole group */
    global const float *x = logits + logits_off + (ulong)row * V;
    global float *dx = dlogits + dlogits_off + (ulong)row * V;
    const int y = targets[targets_off + row];

    if (y == ignore_index) { /* uniform over the group: no barrier is skipped by some only */
        if (lid == 0) losses[losses_off + row] = 0.0f;
        if (has_grad)
            for (int b = 0; b < V; b += REDUCE_WG)
                if (b + lid < V) dx[b + lid] = 0.0f;
        return;
    }
    const bool valid = y >= 0 && y < V;
    const float xy = valid ? x[y] : NAN;

    const row_stats msd = row_max_sumexp_d(x, V, ls != 0.0f, scratch);
    const float m = msd.m, s = msd.s, d = msd.d;
    if (lid == 0)
        losses[losses_off + row] = log(s) + (1.0f - ls) * (m - xy) + ls * (d / (float)V);
    if (!has_grad) return;

    barrier(CLK_GLOBAL_MEM_FENCE); /* every item has read x_y before column y is overwritten */
    const float off_target = ls / (float)V, on_target = 1.0f - ls + off_target;
    const int chunks = V / ROW_VEC, tail0 = chunks * ROW_VEC;
    const int8 lane = (int8)(0, 1, 2, 3, 4, 5, 6, 7);
    for (int b = 0; b < chunks; b += REDUCE_WG) {
        const int j = b + lid;
        if (j < chunks) {
            const float8 p = exp(vload8(j, x) - m) / s;
            const float8 q = select((float8)(off_target), (float8)(on_target),
                                    (int8)(j * ROW_VEC) + lane == (int8)(y));
            vstore8(valid ? grad_scale * (p - q) : (float8)(NAN), j, dx);
        }
    }
    for (int b = tail0; b < V; b += REDUCE_WG) {
        const int c = b + lid;
        if (c < V) {
            const float p = exp(x[c] - m) / s;
            const float q = c == y ? on_target : off_target;
            dx[c] = valid ? grad_scale * (p - q) : NAN;
        }
    }
}

/* out_r = x_r - m - log S per row; out may be the same memory as logits
 * (each item reads and writes only its own columns). */
kernel void log_softmax_rows(global float *out, ulong out_off, global const float *logits,
                             ulong logits_off, int N, int V)
{
    local float scratch[REDUCE_WG];
    const int row = get_group_id(0), lid = get_local_id(0);
    if (row >= N) return;
    global const float *x = logits + logits_off + (ulong)row * V;
    global float *o = out + out_off + (ulong)row * V;
    const row_stats ms = row_max_sumexp_d(x, V, false, scratch);
    const float log_s = log(ms.s);
    const int chunks = V / ROW_VEC;
    for (int b = 0; b < chunks; b += REDUCE_WG)
        if (b + lid < chunks) vstore8((vload8(b + lid, x) - ms.m) - log_s, b + lid, o);
    for (int b = chunks * ROW_VEC; b < V; b += REDUCE_WG)
        if (b + lid < V) o[b + lid] = (x[b + lid] - ms.m) - log_s;
}

/* True when (vb, ib) beats (va, ia): larger value, NaN above everything
 * (as torch.argmax), and the lower index on ties. */
static inline bool argmax_better(float vb, int ib, float va, int ia)
{
    if (isnan(vb) || isnan(va)) return isnan(vb) && (!isnan(va) || ib < ia);
    return vb > va || (vb == va && ib < ia);
}

/* out[r] = index of the largest element of row r. The winner does not
 * depend on the reduction order (ties go to the lower index), so it is
 * the same on every device. */
kernel void argmax_rows(global int *out, ulong out_off, global const float *logits,
                        ulong logits_off, int N, int V)
{
    local float vals[REDUCE_WG];
    local int idx[REDUCE_WG];
    const int row = get_group_id(0), lid = get_local_id(0);
    if (row >= N) return;
    global const float *x = logits + logits_off + (ulong)row * V;
    float best = -INFINITY;
    int at = INT_MAX; /* "none yet": loses every tie to a real column */
    for (int b = 0; b < V; b += REDUCE_WG) {
        const int c = b + lid;
        if (c < V && argmax_better(x[c], c, best, at)) {
            best = x[c];
            at = c;
        }
    }
    vals[lid] = best;
    idx[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = REDUCE_WG / 2; s > 0; s >>= 1) {
        if (lid < s && argmax_better(vals[lid + s], idx[lid + s], vals[lid], idx[lid])) {
            vals[lid] = vals[lid + s];
            idx[lid] = idx[lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[out_off + row] = idx[0];
}
