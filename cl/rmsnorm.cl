/*
 * RMSNorm over the last dimension (runtime/ops/ops_rmsnorm.c launches these):
 *   y = x * rstd * weight, rstd = 1 / sqrt(mean_c(x^2) + eps),
 * no mean subtracted and no bias (Llama-style models).
 *
 * Forward and the input gradient: a row per work-group of REDUCE_WG items on
 * GPUs, per work item on CPU devices (ROW_ITEMS, common.h), summed with
 * row_sum (a fixed order), and stored rounded to the pass's `precision`
 * (store_round). dweight: one work item per column walking the rows in
 * order, so it repeats bit for bit without atomics.
 */
#include "common.h"

/* out = x * rstd * weight; rstd[row] saved for backward. */
kernel void rmsnorm_forward(global float *out, ulong out_off, global float *rstd,
                            ulong rstd_off, global const float *inp, ulong inp_off,
                            global const float *weight, ulong weight_off, int rows, int C,
                            float eps, int precision)
{
    local float scratch[REDUCE_WG];
    const int lid = ROW_LID();
    const ulong row = ROW_OF_ITEM();
    if (ROW_PAST(row, rows)) return;
    global const float *x = inp + inp_off + row * C;
    global float *y = out + out_off + row * C;
    global const float *w = weight + weight_off;
    float s = 0.0f;
    for (int c = lid; c < C; c += ROW_ITEMS) s += x[c] * x[c];
    const float rs = 1.0f / sqrt(row_sum(s, scratch) / C + eps);
    for (int c = lid; c < C; c += ROW_ITEMS) y[c] = store_round(x[c] * rs * w[c], precision);
    if (lid == 0) rstd[rstd_off + row] = rs;
}

/* Per row, with g = dout * weight:
 *   dinp (+)= rstd * g - x * rstd^3 * sum_c(g * x) / C. */
kernel void rmsnorm_backward_input(global float *dinp, ulong dinp_off, global const float *dout,
                                   ulong dout_off, global const float *inp, ulong inp_off,
                                   global const float *weight, ulong weight_off,
                                   global const float *rstd, ulong rstd_off, int rows, int C,
                                   int accumulate, int precision)
{
    local float scratch[REDUCE_WG];
    const int lid = ROW_LID();
    const ulong row = ROW_OF_ITEM();
    if (ROW_PAST(row, rows)) return;
    global const float *x = inp + inp_off + row * C, *d = dout + dout_off + row * C;
    global const float *w = weight + weight_off;
    global float *dx = dinp + dinp_off + row * C;
    const float rs = rstd[rstd_off + row];
    float s = 0.0f;
    for (int c = lid; c < C; c += ROW_ITEMS) s += d[c] * w[c] * x[c];
    const float k = rs * rs * rs * row_sum(s, scratch) / C;
    for (int c = lid; c < C; c += ROW_ITEMS) {
        const float v = rs * d[c] * w[c] - x[c] * k;
        dx[c] = store_round(accumulate ? dx[c] + v : v, precision);
    }
}

/* dweight[c] += sum over rows of dout * x * rstd, rows in order. */
kernel void rmsnorm_backward_weight(global float *dweight, ulong dweight_off,
                                    global const float *dout, ulong dout_off,
                                    global const float *inp, ulong inp_off,
                                    global const float *rstd, ulong rstd_off, int N, int C)
{
    const int c = get_global_id(0);
    if (c >= C) return;
    float s = 0.0f;
    for (int r = 0; r < N; r++) {
        const ulong i = (ulong)r * C + c;
        s += dout[dout_off + i] * inp[inp_off + i] * rstd[rstd_off + r];
    }
    dweight[dweight_off + c] += s;
}
