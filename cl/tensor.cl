/*
 * Generic tensor utilities.
 *
 * fill_u32 and copy_u32 replace clEnqueueFillBuffer and clEnqueueCopyBuffer:
 * Oclgrind 21.10 does not mark memory written by those commands as
 * initialised, so every later read of it is reported as uninitialised. A
 * kernel is seen by every checker and costs the same on real devices.
 */
#include "common.h"

/* x[off + i] = value for i < n, ITEM_RUN elements an item (common.h). */
kernel void fill_u32(global uint *x, ulong off, ulong n, uint value)
{
    const ulong first = get_global_id(0) * ITEM_RUN, end = min(first + ITEM_RUN, n);
    for (ulong i = first; i < end; i++) x[off + i] = value;
}

/* dst[dst_off + i] = src[src_off + i] for 32-bit elements, ITEM_RUN an item. */
kernel void copy_u32(global uint *dst, ulong dst_off, global const uint *src, ulong src_off,
                     ulong n)
{
    const ulong first = get_global_id(0) * ITEM_RUN, end = min(first + ITEM_RUN, n);
    for (ulong i = first; i < end; i++) dst[dst_off + i] = src[src_off + i];
}
