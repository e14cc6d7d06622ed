/*
 * Deterministic reductions: a sum (or sum of squares) of a vector, and column
 * sums of a matrix. Both run in two passes with a fixed partition chosen by
 * the host, so a device gives the same bits every run (no float atomics);
 * on CPU devices a column sum's two passes are one launch (colsum_whole),
 * the same bits.
 * Partials of column sums are laid out [block][col], a layout that other
 * kernels (e.g. LayerNorm backward) may fill and hand to colsum_final.
 */
#include "common.h"

/* partials[g] = sum of x (or x*x) over elements [g*chunk, (g+1)*chunk).
 * Work items sum float4 chunks of the range (SIMD on CPU devices, where PoCL
 * runs the loop of one work item as scalar code): without GPU_LAYOUTS item
 * lid takes the lid-th contiguous run of them (CPU devices: PoCL runs the items
 * of a group one after another, and items striding over a range larger than
 * the cache would each stream all of it), else chunks lid, lid + REDUCE_WG,
 * ... (GPU_LAYOUTS, GPUs: neighbouring items read neighbouring memory); then its part of
 * the last range % 4 elements. The four lanes are
 * added through a private array: Oclgrind 21.10's uninitialised checker
 * crashes on the shuffles of a register sum. */
kernel void reduce_partial(global float *partials, global const float *x, ulong x_off, ulong n,
                           ulong chunk, int square)
{
    const int blocked = !GPU_LAYOUTS;
    local float scratch[REDUCE_WG];
    const int lid = get_local_id(0);
    /* begin <= end without a saturating subtraction (Oclgrind 21.10 lacks
     * llvm.usub.sat): the last groups' ranges may be empty */
    const ulong begin = min(n, get_group_id(0) * chunk), end = min(n, begin + chunk);
    global const float *v = x + x_off + begin;
    const ulong len = end - begin, quads = len / 4;
    float4 acc4 = (float4)(0.0f);
    if (blocked) { /* one contiguous run of quads per item */
        const ulong per = (quads + REDUCE_WG - 1) / REDUCE_WG, j1 = min(quads, (lid + 1) * per);
        for (ulong j = lid * per; j < j1; j++) {
            const float4 q = vload4(j, v);
            acc4 += square ? q * q : q;
        }
    } else {
        for (ulong j = lid; j < quads; j += REDUCE_WG) {
            const float4 q = vload4(j, v);
            acc4 += square ? q * q : q;
        }
    }
    float t[4];
    vstore4(acc4, 0, t);
    float acc = (t[0] + t[2]) + (t[1] + t[3]);
    for (ulong i = 4 * quads + lid; i < len; i += REDUCE_WG) acc += square ? v[i] * v[i] : v[i];
    acc = wg_sum(acc, scratch);
    if (lid == 0) partials[get_group_id(0)] = acc;
}

/* One work-group: out[out_off] = (accumulate ? out[out_off] : 0) + sum(partials). */
kernel void reduce_final(global float *out, ulong out_off, global const float *partials, int n,
                         int accumulate)
{
    local float scratch[REDUCE_WG];
    const int lid = get_local_id(0);
    float acc = 0.0f;
    for (int i = lid; i < n; i += REDUCE_WG) acc += partials[i];
    acc = wg_sum(acc, scratch);
    if (lid == 0) out[out_off] = accumulate ? out[out_off] + acc : acc;
}

/* Rows [r0, r1) of column c of x (rows ld apart) summed in row order. */
inline float block_sum(global const float *x, int r0, int r1, int ld, int c)
{
    float acc = 0.0f;
    for (int r = r0; r < r1; r++) acc += x[(ulong)r * ld + c];
    return acc;
}

/* The same for the 16 columns from c0, as two float8 sums: columns c0..
 * c0+7 into *lo, the next 8 into *hi (one float16 built from them was an
 * uninitialised value to Oclgrind 21.10's checker). */
inline void block_sum16(global const float *x, int r0, int r1, int ld, int c0, float8 *lo,
                        float8 *hi)
{
    float8 l = (float8)(0.0f), h = (float8)(0.0f);
    for (int r = r0; r < r1; r++) {
        global const float *row = x + (ulong)r * ld + c0;
        l += vload8(0, row);
        h += vload8(1, row);
    }
    *lo = l;
    *hi = h;
}

/* partials[blk * cols + c] = sum of x[r * ld + c] over the block's rows, in
 * row order; an item sums ITEM_RUN neighbouring columns (common.h). */
kernel void colsum_partial(global float *partials, global const float *x, ulong x_off, int rows,
                           int cols, int ld, int rows_per_block)
{
    const int blk = get_global_id(1);
    const int r0 = blk * rows_per_block, r1 = min(rows, r0 + rows_per_block);
    const int c0 = get_global_id(0) * ITEM_RUN, c1 = min(cols, c0 + ITEM_RUN);
    global const float *base = x + x_off;
    global float *out = partials + (ulong)blk * cols;
    if (ITEM_RUN == 16 && c1 - c0 == 16) {
        float8 lo, hi;
        block_sum16(base, r0, r1, ld, c0, &lo, &hi);
        vstore8(lo, 0, out + c0);
        vstore8(hi, 1, out + c0);
        return;
    }
    for (int c = c0; c < c1; c++) /* a GPU's column, or a CPU's last few */
        out[c] = block_sum(base, r0, r1, ld, c);
}

/* colsum_partial and colsum_final in one launch (CPU devices): an item sums
 * each block of its columns' rows in row order as colsum_partial does, and
 * adds the block sums in block order as colsum_final does, so the bits are
 * the two kernels'. */
kernel void colsum_whole(global float *out, ulong out_off, global const float *x, ulong x_off,
                         int rows, int cols, int ld, int rows_per_block, int accumulate)
{
    const int c0 = get_global_id(0) * ITEM_RUN, c1 = min(cols, c0 + ITEM_RUN);
    global const float *base = x + x_off;
    global float *o = out + out_off;
    if (ITEM_RUN == 16 && c1 - c0 == 16) {
        float8 lo = (float8)(0.0f), hi = (float8)(0.0f), blo, bhi;
        for (int r0 = 0; r0 < rows; r0 += rows_per_block) {
            block_sum16(base, r0, min(rows, r0 + rows_per_block), ld, c0, &blo, &bhi);
            lo += blo;
            hi += bhi;
        }
        if (accumulate) {
            lo = vload8(0, o + c0) + lo;
            hi = vload8(1, o + c0) + hi;
        }
        vstore8(lo, 0, o + c0);
        vstore8(hi, 1, o + c0);
        return;
    }
    for (int c = c0; c < c1; c++) {
        float total = 0.0f;
        for (int r0 = 0; r0 < rows; r0 += rows_per_block)
            total += block_sum(base, r0, min(rows, r0 + rows_per_block), ld, c);
        o[c] = accumulate ? o[c] + total : total;
    }
}

/* out[c] = (accumulate ? out[c] : 0) + sum over blocks of partials[blk][c]. */
kernel void colsum_final(global float *out, ulong out_off, global const float *partials,
                         int nblocks, int cols, int accumulate)
{
    const int c = get_global_id(0);
    if (c >= cols) return;
    float acc = 0.0f;
    for (int b = 0; b < nblocks; b++) acc += partials[(ulong)b * cols + c];
    out[out_off + c] = accumulate ? out[out_off + c] + acc : acc;
}
