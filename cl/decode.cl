/*
 * Helpers of incremental decoding: updating the generated-token table and
 * reordering cache rows when beam search picks its survivors. (The keys and
 * values go into the caches with the queries' split: attention.cl's
 * split_heads.)
 */
#include "common.h"

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
