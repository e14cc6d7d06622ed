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
