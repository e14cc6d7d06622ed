/*
 * Softmax cross-entropy over the vocabulary (the loss and its gradient in one
 * kernel), and the row-wise log-softmax and argmax that decoding needs.
 *
 * One work-group of REDUCE_WG items per row: each item walks the columns
 * lid, lid + REDUCE_WG, ... and the group combines with wg_max / wg_sum from
 * common.h, so the order of every sum is fixed (bit-identical reruns).
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

/* The row maximum and sum of exp(x - max) of row x (V columns), for the
 * whole group. */
inline float2 row_max_sumexp(global const float *x, int V, local float *scratch)
{
    const int lid = get_local_id(0);
    float m = -INFINITY;
    for (int b = 0; b < V; b += REDUCE_WG)
        if (b + lid < V) m = fmax(m, x[b + lid]);
    m = wg_max(m, scratch);
    float s = 0.0f;
    for (int b = 0; b < V; b += REDUCE_WG)
        if (b + lid < V) s += exp(x[b + lid] - m);
    s = wg_sum(s, scratch);
    return (float2)(m, s);
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

    const float2 ms = row_max_sumexp(x, V, scratch);
    const float m = ms.x, s = ms.y;
    /* d = sum_c (m - x_c), Kahan-compensated: with logits of +-1e4 the terms
     * reach 2e4 and the sum 1e9. ls is uniform, so every item or none calls wg_sum. */
    float d = 0.0f;
    if (ls != 0.0f) {
        float comp = 0.0f;
        for (int b = 0; b < V; b += REDUCE_WG) {
            if (b + lid < V) {
                const float t = (m - x[b + lid]) - comp, sum = d + t;
                comp = (sum - d) - t;
                d = sum;
            }
        }
        d = wg_sum(d, scratch);
    }
    if (lid == 0)
        losses[losses_off + row] = log(s) + (1.0f - ls) * (m - xy) + ls * (d / (float)V);
    if (!has_grad) return;

    barrier(CLK_GLOBAL_MEM_FENCE); /* every item has read x_y before column y is overwritten */
    const float off_target = ls / (float)V, on_target = 1.0f - ls + off_target;
    for (int b = 0; b < V; b += REDUCE_WG) {
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
    const float2 ms = row_max_sumexp(x, V, scratch);
    const float log_s = log(ms.y);
    for (int b = 0; b < V; b += REDUCE_WG)
        if (b + lid < V) o[b + lid] = (x[b + lid] - ms.x) - log_s;
}

/* True when (vb, ib) beats (va, ia): larger value, NaN above everything
 * (as torch.argmax), and the lower index on ties. */
inline bool argmax_better(float vb, int ib, float va, int ia)
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
