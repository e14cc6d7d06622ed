/*
 * LayerNorm over the last dimension (runtime/ops/ops_layernorm.c launches these).
 *
 * Forward: a row per work-group of REDUCE_WG items on GPUs, per work item on
 * CPU devices (ROW_ITEMS, common.h). The statistics are
 * computed in two passes around a shift, the row's first element: for
 * inputs like 1000 + noise, x - shift is exact and small, so neither the
 * mean nor the variance loses the noise to fp32 rounding of large sums (a
 * plain sum of x would, and Welford's running update costs a division per
 * element).
 *
 * Backward: the input gradient is again a row per group or item (float4
 * chunks, as forward); dweight and dbias are column sums over rows, written
 * as per-row-block partials in reduce.cl's [block][col] layout and then
 * summed block by block, so the sum order is fixed and results repeat bit
 * for bit.
 */
#include "common.h"

/* Rows are walked in float4 chunks, work item lid taking chunks lid,
 * lid + ROW_ITEMS, ... and the last C % 4 columns one each: on CPU devices
 * the vector type is what makes the sums SIMD (PoCL does not vectorize a
 * loop inside a work item). */
#define LN_VEC 4

/* The 4 lanes summed in a fixed order, through a private array: Oclgrind
 * 21.10's uninitialised checker crashes on the shuffles of a register sum. */
static inline float sum4(float4 v)
{
    float t[LN_VEC];
    vstore4(v, 0, t);
    return (t[0] + t[2]) + (t[1] + t[3]);
}

/* out = (x - mean) * rstd * weight + bias, rounded to `precision`
 * (store_round); mean[row], rstd[row] saved (fp32 statistics). */
kernel void layernorm_forward(global float *out, ulong out_off, global float *mean,
                              ulong mean_off, global float *rstd, ulong rstd_off,
                              global const float *inp, ulong inp_off,
                              global const float *weight, ulong weight_off,
                              global const float *bias, ulong bias_off, int rows, int C,
                              float eps, int precision)
{
    local float scratch[REDUCE_WG];
    const int lid = ROW_LID(), chunks = C / LN_VEC, tail0 = chunks * LN_VEC;
    const ulong row = ROW_OF_ITEM();
    if (ROW_PAST(row, rows)) return;
    global const float *x = inp + inp_off + row * C;
    global float *y = out + out_off + row * C;
    global const float *w = weight + weight_off, *b = bias + bias_off;
    const float shift = x[0];

    float4 s4 = (float4)(0.0f);
    for (int j = lid; j < chunks; j += ROW_ITEMS) s4 += vload4(j, x) - shift;
    float s = sum4(s4);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS) s += x[c] - shift;
    const float dmean = row_sum(s, scratch) / C; /* mean - shift */

    float4 q4 = (float4)(0.0f);
    for (int j = lid; j < chunks; j += ROW_ITEMS) {
        const float4 d = (vload4(j, x) - shift) - dmean;
        q4 += d * d;
    }
    float q = sum4(q4);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS) {
        const float d = (x[c] - shift) - dmean;
        q += d * d;
    }
    const float var = row_sum(q, scratch) / C; /* biased, as PyTorch */
    const float rs = 1.0f / sqrt(var + eps);

    for (int j = lid; j < chunks; j += ROW_ITEMS)
        vstore4(store_round4(((vload4(j, x) - shift) - dmean) * rs * vload4(j, w) + vload4(j, b),
                             precision),
                j, y);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS)
        y[c] = store_round(((x[c] - shift) - dmean) * rs * w[c] + b[c], precision);
    if (lid == 0) {
        mean[mean_off + row] = shift + dmean;
        rstd[rstd_off + row] = rs;
    }
}

/* With g = dout * weight and xhat = (x - mean) * rstd, per row:
 *   dinp (+)= rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)),
 * rounded to `precision` as stored (after the sum when accumulating). */
kernel void layernorm_backward_input(global float *dinp, ulong dinp_off,
                                     global const float *dout, ulong dout_off,
                                     global const float *inp, ulong inp_off,
                                     global const float *weight, ulong weight_off,
                                     global const float *mean, ulong mean_off,
                                     global const float *rstd, ulong rstd_off, int rows, int C,
                                     int accumulate, int precision)
{
    /* g is formed in both passes; an fma in one pass but not the other would
     * make g - mean(g) nonzero where it is exactly zero (rows of one element). */
#pragma OPENCL FP_CONTRACT OFF
    local float scratch[REDUCE_WG];
    const int lid = ROW_LID(), chunks = C / LN_VEC, tail0 = chunks * LN_VEC;
    const ulong row = ROW_OF_ITEM();
    if (ROW_PAST(row, rows)) return;
    global const float *x = inp + inp_off + row * C;
    global const float *dy = dout + dout_off + row * C;
    global float *dx = dinp + dinp_off + row * C;
    global const float *w = weight + weight_off;
    const float m = mean[mean_off + row], rs = rstd[rstd_off + row];

    float4 sg4 = (float4)(0.0f), sgx4 = (float4)(0.0f);
    for (int j = lid; j < chunks; j += ROW_ITEMS) {
        const float4 g = vload4(j, dy) * vload4(j, w);
        sg4 += g;
        sgx4 += g * ((vload4(j, x) - m) * rs);
    }
    float sg = sum4(sg4), sgx = sum4(sgx4);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS) {
        const float g = dy[c] * w[c];
        sg += g;
        sgx += g * ((x[c] - m) * rs);
    }
    const float mg = row_sum(sg, scratch) / C;
    const float mgx = row_sum(sgx, scratch) / C;

    for (int j = lid; j < chunks; j += ROW_ITEMS) {
        const float4 g = vload4(j, dy) * vload4(j, w);
        const float4 v = (g - mg - ((vload4(j, x) - m) * rs) * mgx) * rs;
        vstore4(store_round4(accumulate ? vload4(j, dx) + v : v, precision), j, dx);
    }
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS) {
        const float g = dy[c] * w[c];
        const float v = (g - mg - ((x[c] - m) * rs) * mgx) * rs;
        dx[c] = store_round(accumulate ? dx[c] + v : v, precision);
    }
}

/* Partial sums over a block's rows, in row order, of dout * xhat (at
 * partials) and of dout (at partials + pb_off), each [block][col]; an item
 * sums ITEM_RUN neighbouring columns (common.h). */
kernel void layernorm_backward_params(global float *partials, ulong pb_off,
                                      global const float *dout, ulong dout_off,
                                      global const float *inp, ulong inp_off,
                                      global const float *mean, ulong mean_off,
                                      global const float *rstd, ulong rstd_off, int N, int C,
                                      int rows_per_block)
{
    const int blk = get_global_id(1);
    const int r0 = blk * rows_per_block, r1 = min(N, r0 + rows_per_block);
    const int c0 = get_global_id(0) * ITEM_RUN, c1 = min(C, c0 + ITEM_RUN);
    if (ITEM_RUN == 16 && c1 - c0 == 16) {
        float8 sw0 = (float8)(0.0f), sw1 = (float8)(0.0f);
        float8 sb0 = (float8)(0.0f), sb1 = (float8)(0.0f);
        for (int r = r0; r < r1; r++) {
            global const float *d = dout + dout_off + (ulong)r * C + c0;
            global const float *x = inp + inp_off + (ulong)r * C + c0;
            const float m = mean[mean_off + r], rs = rstd[rstd_off + r];
            const float8 d0 = vload8(0, d), d1 = vload8(1, d);
            sw0 += d0 * ((vload8(0, x) - m) * rs);
            sw1 += d1 * ((vload8(1, x) - m) * rs);
            sb0 += d0;
            sb1 += d1;
        }
        global float *pw = partials + (ulong)blk * C + c0, *pb = pw + pb_off;
        vstore8(sw0, 0, pw);
        vstore8(sw1, 1, pw);
        vstore8(sb0, 0, pb);
        vstore8(sb1, 1, pb);
        return;
    }
    for (int c = c0; c < c1; c++) { /* a GPU's column, or a CPU's last few */
        float sw = 0.0f, sb = 0.0f;
        for (int r = r0; r < r1; r++) {
            const ulong i = (ulong)r * C + c;
            const float d = dout[dout_off + i];
            sw += d * ((inp[inp_off + i] - mean[mean_off + r]) * rstd[rstd_off + r]);
            sb += d;
        }
        partials[(ulong)blk * C + c] = sw;
        partials[pb_off + (ulong)blk * C + c] = sb;
    }
}

/* dweight[c] += sum over blocks of pw[blk][c]; dbias[c] likewise from pb =
 * partials + pb_off. (reduce.cl's colsum_final does one of these but reads
 * its partials from offset 0; finishing both here is also one launch less.) */
kernel void layernorm_backward_params_final(global float *dweight, ulong dweight_off,
                                            global float *dbias, ulong dbias_off,
                                            global const float *partials, ulong pb_off,
                                            int nblocks, int C)
{
    const int c = get_global_id(0);
    if (c >= C) return;
    float sw = 0.0f, sb = 0.0f;
    for (int b = 0; b < nblocks; b++) {
        sw += partials[(ulong)b * C + c];
        sb += partials[pb_off + (ulong)b * C + c];
    }
    dweight[dweight_off + c] += sw;
    dbias[dbias_off + c] += sb;
}
