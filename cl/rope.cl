/*
 * Rotary position embeddings, Hugging Face's rotate-half layout
 * (runtime/ops/ops_rope.c launches this; ops.h states the contract). Within
 * a row of dh = 2 * pairs values, element i and element i + pairs turn by the
 * angle of (position, i):
 *   out[i]        = x[i] cos - x[i + pairs] sin
 *   out[i + pairs] = x[i + pairs] cos + x[i] sin
 * (x * cos + rotate_half(x) * sin). The backward is the inverse turn, the
 * same with sin negated (`sign` -1), so one kernel serves both.
 *
 * cos and sin come from a table of rows (position: dh/2 cosines, then dh/2
 * sines) built once on the host (ops_rope.c), so angles are rounded exactly
 * as transformers rounds them and no work item evaluates a sine.
 *
 * Rows are addressed by strides, so the op reads and writes either the
 * head-split layout (B, H, T, dh) or projection rows (B, T, H*dh) of any
 * width, and can move a tensor from one to the other while turning it.
 * Work items: on CPUs one per row, looping over its pairs (PoCL vectorises
 * the loop); with GPU_LAYOUTS one per pair.
 */
#include "common.h"

/* Rows r = (b*H + h)*T + t; dst and src may be the same rows (in place):
 * each pair is read before it is written. `precision` rounds what is
 * stored (round_storage_bits). */
kernel void rope_rotate(global float *dst, ulong dst_off, global const float *src, ulong src_off,
                        global const float *table, ulong table_off, int rows, int T, int H,
                        int pairs, ulong dst_sb, ulong dst_sh, ulong dst_st, ulong src_sb,
                        ulong src_sh, ulong src_st, int pos0, float sign, int precision)
{
    const int per_row = !GPU_LAYOUTS;
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= (per_row ? 1 : pairs) || r >= rows) return;
    const int bh = r / T, t = r - bh * T, b = bh / H, h = bh - b * H;
    global float *d = dst + dst_off + b * dst_sb + h * dst_sh + t * dst_st;
    global const float *s = src + src_off + b * src_sb + h * src_sh + t * src_st;
    global const float *cs = table + table_off + (ulong)(pos0 + t) * 2 * pairs;
    for (int i = c; i < pairs; i += per_row ? 1 : pairs) {
        const float co = cs[i], si = sign * cs[pairs + i], x0 = s[i], x1 = s[pairs + i];
        d[i] = store_round(x0 * co - x1 * si, precision);
        d[pairs + i] = store_round(x1 * co + x0 * si, precision);
    }
}
