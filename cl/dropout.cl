/*
 * Dropout on residual branches and its backward, plus plain addition.
 * The mask is never stored: element i of a site is kept when
 * dropout_uniform(seed, step, site, i) >= p (common.h), so backward
 * recomputes exactly the forward's mask. p == 0 gives a multiplier of
 * exactly 1, so the same kernels serve the no-dropout case bit-exactly.
 * `out` may alias an input: each work item reads its element before writing.
 * What they store is rounded to the pass's precision (store_round).
 */
#include "common.h"

/* Each work item g handles elements DROP_BLOCK * g .. (common.h: 32 on CPU
 * layouts, whose multipliers come from eight Philox blocks at once; 4 with
 * GPU layouts). */

/* out[i] = res[i] + x[i] * dropout multiplier of i. */
kernel void residual_dropout_forward(global float *out, ulong out_off, global const float *res,
                                     ulong res_off, global const float *x, ulong x_off, ulong n,
                                     float p, ulong seed, uint step, uint site, int precision)
{
    const ulong g = get_global_id(0), i0 = DROP_BLOCK * g;
    if (i0 >= n) return;
    float m[DROP_BLOCK];
    dropout_scale_block(p, seed, step, site, g, m);
    const int count = n - i0 < DROP_BLOCK ? (int)(n - i0) : DROP_BLOCK;
    FOR_BLOCK_ELEMENT(k, count) {
        const ulong i = i0 + k;
        const float r = res[res_off + i];
        const float v = x[x_off + i] * m[k];
        out[out_off + i] = store_round(r + v, precision);
    }
}

/* dx[i] = dout[i] * dropout multiplier of i. */
kernel void dropout_backward(global float *dx, ulong dx_off, global const float *dout,
                             ulong dout_off, ulong n, float p, ulong seed, uint step, uint site,
                             int precision)
{
    const ulong g = get_global_id(0), i0 = DROP_BLOCK * g;
    if (i0 >= n) return;
    float m[DROP_BLOCK];
    dropout_scale_block(p, seed, step, site, g, m);
    const int count = n - i0 < DROP_BLOCK ? (int)(n - i0) : DROP_BLOCK;
    FOR_BLOCK_ELEMENT(k, count)
        dx[dx_off + i0 + k] = store_round(dout[dout_off + i0 + k] * m[k], precision);
}
