/*
 * Casts between fp32 and the 16-bit storage formats (runtime/ops/ops_cast.c
 * launches these), one work item per element, bit-exact:
 *   - bf16 is a ushort bit pattern: the top half of the float's bits, rounded
 *     to nearest with ties to even by integer arithmetic (NaN gives 0x7FC0,
 *     as PyTorch; values from 0x7F7F8000 up round to infinity). Done on the
 *     bits, never through float arithmetic, so no device can flush a
 *     subnormal to zero on the way; needs no extension.
 *   - fp16 uses the core vstore_half_rte / vload_half, which every OpenCL
 *     1.2 device has (declaring a half pointer needs no cl_khr_fp16).
 * `accumulate` (the casts to fp32 only, for gradients): out += the value.
 */
#include "common.h"

kernel void cast_f32_to_bf16(global ushort *out, ulong out_off, global const uint *x,
                             ulong x_off, ulong n)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const uint u = x[x_off + i];
    out[out_off + i] = (u & 0x7FFFFFFFu) > 0x7F800000u
                           ? (ushort)0x7FC0
                           : (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

kernel void cast_bf16_to_f32(global uint *out, ulong out_off, global const ushort *x,
                             ulong x_off, ulong n, int accumulate)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const uint u = (uint)x[x_off + i] << 16;
    out[out_off + i] = accumulate ? as_uint(as_float(out[out_off + i]) + as_float(u)) : u;
}

kernel void cast_f32_to_f16(global half *out, ulong out_off, global const float *x,
                            ulong x_off, ulong n)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    vstore_half_rte(x[x_off + i], (size_t)(out_off + i), out);
}

kernel void cast_f16_to_f32(global float *out, ulong out_off, global const half *x,
                            ulong x_off, ulong n, int accumulate)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const float v = vload_half((size_t)(x_off + i), x);
    out[out_off + i] = accumulate ? out[out_off + i] + v : v;
}

/*
 * Rounding fp32 values to a 16-bit format's values, kept in fp32 containers
 * (the numerics of 16-bit storage, docs/ARCHITECTURE.md "Half precision"):
 * out = x rounded to bf16 (precision 1) or fp16 (precision 2), to nearest
 * with ties to even, exactly as the casts above followed by the cast back.
 * out may be x (in place). Integer and exact float arithmetic only, so it is
 * bit-exact on every device and needs no extension:
 *   - bf16: cast_f32_to_bf16's rounding, on the bits (NaN: 0x7FC00000).
 *   - fp16, |x| >= 2^-14 (its normals): the same on 13 dropped bits, then
 *     anything above 65504 is infinity; |x| < 2^-14 (its subnormals, spaced
 *     2^-24): (|x| + 0.5) - 0.5, whose sum lies in [0.5, 1) where floats are
 *     spaced 2^-24, so the addition rounds |x| to nearest even there and the
 *     subtraction is exact (a device that flushes a subnormal |x| gives 0,
 *     its right answer anyway).
 * Every case is computed and one selected (no branches: PoCL vectorises it;
 * with branches and rint the fp16 case ran 6x slower than bf16's).
 */
kernel void round_storage(global uint *out, ulong out_off, global const uint *x, ulong x_off,
                          ulong n, int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const uint u = x[x_off + i], a = u & 0x7FFFFFFFu;
    const uint bf16 = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    const uint m = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
    const uint normal = m > 0x477FE000u ? 0x7F800000u : m; /* above 65504: inf */
    const uint subnormal = as_uint((as_float(a) + 0.5f) - 0.5f);
    const uint f16 = (u & 0x80000000u) | (a >= 0x38800000u ? normal : subnormal);
    const uint nan = precision == 1 ? 0x7FC00000u : u; /* NaN stays NaN */
    out[out_off + i] = a > 0x7F800000u ? nan : precision == 1 ? bf16 : f16;
}
