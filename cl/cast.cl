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

/* The bf16 bits of fp32 bits u: adding 0x7FFF plus the lowest kept bit
 * rounds the dropped 16 bits to nearest with ties to even, a carry into the
 * exponent being the right result (up to infinity); NaN gives 0x7FC0. */
inline uint bf16_bits(uint u)
{
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC0u : (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

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
inline uint f16_bits(uint u)
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
inline uint f32_bits_of_f16(uint h)
{
    const uint e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    const uint normal = ((e + 112u) << 23) | (m << 13);
    const uint special = 0x7F800000u | (m << 13);
    const uint subnormal = as_uint((float)m * 0x1p-24f);
    return ((h & 0x8000u) << 16) | (e == 0x1Fu ? special : e ? normal : subnormal);
}

/* x + y on fp32 bits, or y alone (`accumulate` 0) */
inline uint sum_bits(uint x, uint y, int accumulate)
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

/*
 * Rounding fp32 values to a 16-bit format's values, kept in fp32 containers
 * (the numerics of 16-bit storage, docs/ARCHITECTURE.md "Half precision"):
 * out = x rounded to bf16 (precision 1) or fp16 (precision 2), to nearest
 * with ties to even, exactly as the casts above followed by the cast back
 * (NaN stays NaN; bf16's is 0x7FC00000). out may be x (in place). Integer
 * and exact float arithmetic only, branch-free, so it is bit-exact on every
 * device and needs no extension:
 *   - bf16: bf16_bits, shifted back;
 *   - fp16: f16_bits's two roundings, but into fp32 bits directly: 13
 *     dropped bits rounded (above 65504: infinity), and below 2^-14
 *     (|x| + 0.5) - 0.5, the subtraction exact. Composing the two casts gave
 *     the same bits 1.5x slower on PoCL (fp16's `cast` family at bench
 *     --config small: 108-123 ms a step against 71-84).
 */
kernel void round_storage(global uint *out, ulong out_off, global const uint *x, ulong x_off,
                          ulong n, int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const uint u = x[x_off + i], a = u & 0x7FFFFFFFu;
    const uint m = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
    const uint normal = m > 0x477FE000u ? 0x7F800000u : m;
    const uint subnormal = as_uint((as_float(a) + 0.5f) - 0.5f);
    const uint f16 = a > 0x7F800000u ? u : (u & 0x80000000u) | (a >= 0x38800000u ? normal : subnormal);
    out[out_off + i] = precision == 1 ? bf16_bits(u) << 16 : f16;
}
