/*
 * Casts between fp32 and the 16-bit storage formats (runtime/ops/ops_cast.c
 * launches these), one work item per element, bit-exact:
 *   - bf16 is a ushort bit pattern: the top half of the float's bits, rounded
 *     to nearest with ties to even by integer arithmetic (NaN gives 0x7FC0,
 *     as PyTorch; values from 0x7F7F8000 up round to infinity). Done on the
 *     bits, never through float arithmetic, so no device can flush a
 *     subnormal to zero on the way; needs no extension.
 *   - fp16 likewise on the bits (f16_bits), rounded as the core
 *     vstore_half_rte would round; no half type, so no extension either.
 * `accumulate` (the casts to fp32 only, for gradients): out += the value.
 */
#include "common.h"

/* The fp16 bits of fp32 bits u, rounded to nearest even as vstore_half_rte
 * rounds, branch-free (PoCL vectorises it; through vstore_half_rte and
 * vload_half the fp16 casts took about twice the bf16 casts' time, and a
 * rounding with branches and rint 6x bf16's):
 *   - |x| >= 2^-14 (fp16 normals): the exponent rebiased (127 -> 15) in
 *     place and the 13 dropped bits rounded as bf16's 16; from 65520 up the
 *     result reaches 0x7C00, infinity, where it is held;
 *   - |x| < 2^-14 (fp16 subnormals, m 2^-24): (|x| + 0.5) lies in [0.5, 1),
 *     where floats are spaced 2^-24, so the addition rounds |x| to nearest
 *     even there and m is the sum's bits above 0.5's (m 1024 is the smallest
 *     normal, still right; a device flushing a subnormal |x| gives 0, right);
 *   - NaN stays NaN (its top payload bits kept, the quiet bit set). */
static inline uint f16_bits(uint u)
{
    const uint a = u & 0x7FFFFFFFu, r = a - 0x38000000u;
    const uint normal = min((r + 0xFFFu + ((r >> 13) & 1u)) >> 13, 0x7C00u);
    const uint subnormal = as_uint(as_float(a) + 0.5f) - 0x3F000000u;
    const uint nan = 0x7E00u | ((a >> 13) & 0x3FFu);
    return ((u >> 16) & 0x8000u) | (a > 0x7F800000u ? nan : a >= 0x38800000u ? normal : subnormal);
}

/* The fp32 bits of fp16 bits h, exact: normals rebiased, infinity and NaN
 * widened, subnormals m 2^-24 computed as (float)m * 2^-24 (exact, and a
 * normal fp32 value, so no device flushes it). */
static inline uint f32_bits_of_f16(uint h)
{
    const uint e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    const uint normal = ((e + 112u) << 23) | (m << 13);
    const uint special = 0x7F800000u | (m << 13);
    const uint subnormal = as_uint((float)m * 0x1p-24f);
    return ((h & 0x8000u) << 16) | (e == 0x1Fu ? special : e ? normal : subnormal);
}

/* x + y on fp32 bits, or y alone (`accumulate` 0) */
static inline uint sum_bits(uint x, uint y, int accumulate)
{
    return accumulate ? as_uint(as_float(x) + as_float(y)) : y;
}

kernel void cast_f32_to_bf16(global ushort *out, ulong out_off, global const uint *x,
                             ulong x_off, ulong n)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = (ushort)bf16_bits(x[x_off + i]);
}

kernel void cast_bf16_to_f32(global uint *out, ulong out_off, global const ushort *x,
                             ulong x_off, ulong n, int accumulate)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = sum_bits(out[out_off + i], (uint)x[x_off + i] << 16, accumulate);
}

kernel void cast_f32_to_f16(global ushort *out, ulong out_off, global const uint *x,
                            ulong x_off, ulong n)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = (ushort)f16_bits(x[x_off + i]);
}

kernel void cast_f16_to_f32(global uint *out, ulong out_off, global const ushort *x,
                            ulong x_off, ulong n, int accumulate)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = sum_bits(out[out_off + i], f32_bits_of_f16(x[x_off + i]), accumulate);
}

/* out = x rounded to bf16 (precision 1) or fp16 (precision 2) in fp32
 * containers: round_storage_bits (common.h). out may be x (in place). */
kernel void round_storage(global uint *out, ulong out_off, global const uint *x, ulong x_off,
                          ulong n, int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    out[out_off + i] = round_storage_bits(x[x_off + i], precision);
}
