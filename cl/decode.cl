/*
 * Helpers of incremental decoding: writing one position of the key/value
 * caches, updating the generated-token table, and reordering cache rows
 * when beam search picks its survivors.
 */
#include "common.h"

/* cache[((r*H + h)*T_cap + pos + t)*dh + j] = src[src_off + (r*T + t)*ld + h*dh + j]:
 * positions pos .. pos+T-1 of each row r < R (T 1 for a decoding step, the
 * prompt's length for a prefill). */
kernel void kv_cache_write(global float *cache, ulong cache_off, global const float *src,
                           ulong src_off, int ld, int R, int T, int H, int dh, int T_cap, int pos)
{
    const int j = get_global_id(0), rth = get_global_id(1);
    if (j >= dh || rth >= R * T * H) return;
    /* not %: Oclgrind 21.10 trips on the freeze of a / and % pair */
    const int rt = rth / H, h = rth - rt * H, r = rt / T, t = rt - r * T;
    cache[cache_off + (((ulong)r * H + h) * T_cap + pos + t) * dh + j] =
        src[src_off + (ulong)rt * ld + h * dh + j];
}

/* table[r*ld + col] = values[r] for r < R */
kernel void set_column(global int *table, ulong table_off, int ld, int col,
                       global const int *values, ulong values_off, int R)
{
    const int r = get_global_id(0);
    if (r < R) table[table_off + (ulong)r * ld + col] = values[values_off + r];
}

/* dst[r*width + i] = src[map[r]*width + i] for r < rows: rows gathered by
 * index, as raw 32-bit words (ints, floats, or halves of doubles, copied
 * bit for bit). Dropping finished rows from decoding runs it into a
 * scratch, then copies back. */
kernel void gather_rows(global uint *dst, ulong dst_off, global const uint *src, ulong src_off,
                        global const int *map, ulong map_off, int width, int rows)
{
    const int i = get_global_id(0), r = get_global_id(1);
    if (i >= width || r >= rows) return;
    dst[dst_off + (ulong)r * width + i] = src[src_off + (ulong)map[map_off + r] * width + i];
}
