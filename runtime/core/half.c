/* bfloat16 and fp16 bit conversions on the host (half.h). */
#include "half.h"

uint16_t cf_bf16_from_f32(float x)
{
    const uint32_t u = cf_f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0; /* NaN, as PyTorch */
    /* Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to
     * nearest with ties to even; a carry into the exponent is the correct
     * result (up to infinity from the largest finite values). */
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float cf_f32_from_bf16(uint16_t h) { return cf_f32_of_bits((uint32_t)h << 16); }

uint16_t cf_f16_from_f32(float x)
{
    const uint32_t u = cf_f32_bits(x);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* NaN */
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u); /* >= 65520: infinity */
    if (a < 0x38800000u) {
        /* below 2^-14: an fp16 subnormal, m * 2^-24. The significand with its
         * implicit bit, shifted right by (126 - exponent) - 10 + 14 ... written
         * as: value / 2^-24 rounded to nearest even. */
        const int e = (int)(a >> 23);
        if (e < 102) return sign; /* below 2^-25: rounds to zero (2^-25 itself ties to 0) */
        const uint32_t m = (a & 0x7FFFFFu) | 0x800000u;
        const int shift = 126 - e; /* m * 2^(e-150) / 2^-24 = m >> (126 - e) */
        uint32_t q = m >> shift;
        const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (q & 1u))) q++;
        return (uint16_t)(sign | q); /* q == 0x400 is the smallest normal: still right */
    }
    /* normal: rebias the exponent (127 -> 15) and round the dropped 13 bits */
    const uint32_t r = a - 0x38000000u; /* exponent - 112, in place */
    const uint32_t q = (r + 0xFFFu + ((r >> 13) & 1u)) >> 13;
    return (uint16_t)(sign | q); /* a carry may reach 0x7C00: 65504 < x < 65520 stays finite */
}

float cf_f32_from_f16(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return cf_f32_of_bits(sign | 0x7F800000u | (m << 13)); /* inf, NaN */
    if (e != 0) return cf_f32_of_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return cf_f32_of_bits(sign);
    /* subnormal m * 2^-24: normalise into fp32 */
    int shift = 0;
    uint32_t mm = m;
    while (!(mm & 0x400u)) {
        mm <<= 1;
        shift++;
    }
    return cf_f32_of_bits(sign | ((uint32_t)(113 - shift) << 23) | ((mm & 0x3FFu) << 13));
}

void cf_bf16_from_f32_n(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = cf_bf16_from_f32(src[i]);
}

void cf_f32_from_bf16_n(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = cf_f32_from_bf16(src[i]);
}

void cf_f16_from_f32_n(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = cf_f16_from_f32(src[i]);
}

void cf_f32_from_f16_n(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) dst[i] = cf_f32_from_f16(src[i]);
}
