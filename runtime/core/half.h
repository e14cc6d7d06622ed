/*
 * 16-bit floating-point formats on the host: bfloat16 and IEEE binary16
 * (fp16), each held as its bit pattern in a uint16_t. Used where 16-bit
 * tensors cross the host (safetensors files read and written); the device
 * converts with cl/cast.cl. Both directions are exact bit manipulations:
 *   - to fp32 is exact (every bf16 and fp16 value is a float);
 *   - from fp32 rounds to nearest, ties to even, as PyTorch's .to(bfloat16)
 *     and .to(float16) do: values beyond the largest finite one round to
 *     infinity (bf16 from 0x7F7F8000 up, fp16 from 65520 up); fp16 keeps
 *     subnormals (down to 2^-24), bf16 those of fp32.
 *   - NaN stays NaN: bf16 gives 0x7FC0 (sign dropped; PyTorch's scalar cast
 *     gives the same, its vectorised CPU cast 0xFFFF), fp16 a
 *     quiet NaN keeping the sign and the top payload bits, as F16C does.
 * runtime/check/reference/ref_half.c computes the same values another way
 * (rounding in double) and tests/host/test_half.c compares the two.
 */
#ifndef CF_HALF_H
#define CF_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A float's bit pattern, and the float of a bit pattern. */
static inline uint32_t cf_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float cf_f32_of_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

uint16_t cf_bf16_from_f32(float x);
float cf_f32_from_bf16(uint16_t h);
uint16_t cf_f16_from_f32(float x);
float cf_f32_from_f16(uint16_t h);

/* Whole arrays (n elements; dst and src must not overlap). */
void cf_bf16_from_f32_n(uint16_t *dst, const float *src, size_t n);
void cf_f32_from_bf16_n(float *dst, const uint16_t *src, size_t n);
void cf_f16_from_f32_n(uint16_t *dst, const float *src, size_t n);
void cf_f32_from_f16_n(float *dst, const uint16_t *src, size_t n);

#endif
