/*
 * Dropout on residual branches and its backward, plus plain addition.
 * The mask is never stored: element i of a site is kept when
 * dropout_uniform(seed, step, site, i) >= p (common.h), so backward
 * recomputes exactly the forward's mask. p == 0 gives a multiplier of
 * exactly 1, so the same kernels serve the no-dropout case bit-exactly.
 * `out` may alias an input: each work item reads its element before writing.
 */
#include "common.h"

/* Each work item q handles elements 4q .. 4q+3, whose multipliers come from
 * one Philox block (dropout_scale4). */

/* out[i] = res[i] + x[i] * dropout multiplier of i. */
kernel void residual_dropout_forward(global float *out, ulong out_off, global const float *res,
                                     ulong res_off, global const float *x, ulong x_off, ulong n,
                                     float p, ulong seed, uint step, uint site)
{
    const ulong q = get_global_id(0), i0 = 4 * q;
    if (i0 >= n) return;
    const float4 m4 = dropout_scale4(p, seed, step, site, q);
    const float m[4] = {m4.s0, m4.s1, m4.s2, m4.s3};
    for (int k = 0; k < 4 && i0 + k < n; k++) {
        const ulong i = i0 + k;
        const float r = res[res_off + i];
        const float v = x[x_off + i] * m[k];
        out[out_off + i] = r + v;
    }
}

/* dx[i] = dout[i] * dropout multiplier of i. */
kernel void dropout_backward(global float *dx, ulong dx_off, global const float *dout,
                             ulong dout_off, ulong n, float p, ulong seed, uint step, uint site)
{
    const ulong q = get_global_id(0), i0 = 4 * q;
    if (i0 >= n) return;
    const float4 m4 = dropout_scale4(p, seed, step, site, q);
    const float m[4] = {m4.s0, m4.s1, m4.s2, m4.s3};
    for (int k = 0; k < 4 && i0 + k < n; k++)
        dx[dx_off + i0 + k] = dout[dout_off + i0 + k] * m[k];
}
