/* Dropout multipliers on the host (host_philox.h): cl/common.h's
 * philox4x32_10 and dropout_scale, element for element. */
#include "host_philox.h"
#include "host_exp.h"

#include <string.h>

enum { ROUNDS = 10 };
#define MUL_X 0xD2511F53u
#define MUL_Z 0xCD9E8D57u
#define KEY_X 0x9E3779B9u /* the key schedule's increments */
#define KEY_Y 0xBB67AE85u

/* The four words of Philox block q (counter q's two halves, site, step). */
static void block_words(const cf_host_dropout *d, uint64_t q, uint32_t out[4])
{
    uint32_t x = (uint32_t)q, y = (uint32_t)(q >> 32), z = d->site, w = d->step;
    uint32_t kx = (uint32_t)d->seed, ky = (uint32_t)(d->seed >> 32);
    for (int r = 0; r < ROUNDS; r++) {
        const uint64_t p0 = (uint64_t)MUL_X * x, p1 = (uint64_t)MUL_Z * z;
        x = (uint32_t)(p1 >> 32) ^ y ^ kx;
        y = (uint32_t)p1;
        z = (uint32_t)(p0 >> 32) ^ w ^ ky;
        w = (uint32_t)p0;
        kx += KEY_X;
        ky += KEY_Y;
    }
    out[0] = x, out[1] = y, out[2] = z, out[3] = w;
}

/* A word's uniform in [0, 1) (its top 24 bits), against p */
static float scale_of(uint32_t word, float p, float keep)
{
    return (float)(word >> 8) * (1.0f / 16777216.0f) < p ? 0.0f : keep;
}

void cf_host_dropout_scales_portable(const cf_host_dropout *d, uint64_t first, size_t count,
                                     float *out)
{
    if (!(d->p > 0.0f)) {
        for (size_t i = 0; i < count; i++) out[i] = 1.0f;
        return;
    }
    const float keep = 1.0f / (1.0f - d->p);
    uint32_t words[4];
    for (size_t i = 0; i < count; i++) {
        const uint64_t e = first + i;
        if (i == 0 || (e & 3) == 0) block_words(d, e >> 2, words);
        out[i] = scale_of(words[e & 3], d->p, keep);
    }
}

#ifdef CF_HOST_HAS_AVX512

/* The high and low halves of the sixteen 32 x 32-bit products v * m: the
 * even lanes' products, then the odd lanes' (moved down to be multiplied) */
CF_AVX512F static inline void mul_hi_lo(__m512i v, __m512i m, __m512i *hi, __m512i *lo)
{
    const __m512i even = _mm512_mul_epu32(v, m), odd = _mm512_mul_epu32(_mm512_srli_epi64(v, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* The multipliers of elements 4 q0 .. 4 q0 + 63: blocks q0 .. q0 + 15, one a lane */
CF_AVX512F static void blocks16(const cf_host_dropout *d, uint64_t q0, float keep, float out[64])
{
    uint32_t lo[16], hi[16];
    for (int i = 0; i < 16; i++) lo[i] = (uint32_t)(q0 + (uint64_t)i), hi[i] = (uint32_t)((q0 + (uint64_t)i) >> 32);
    __m512i x = _mm512_loadu_si512(lo), y = _mm512_loadu_si512(hi);
    __m512i z = _mm512_set1_epi32((int)d->site), w = _mm512_set1_epi32((int)d->step);
    uint32_t kx = (uint32_t)d->seed, ky = (uint32_t)(d->seed >> 32);
    const __m512i mx = _mm512_set1_epi64(MUL_X), mz = _mm512_set1_epi64(MUL_Z);
    for (int r = 0; r < ROUNDS; r++) {
        __m512i hi0, lo0, hi1, lo1;
        mul_hi_lo(x, mx, &hi0, &lo0);
        mul_hi_lo(z, mz, &hi1, &lo1);
        x = _mm512_xor_si512(_mm512_xor_si512(hi1, y), _mm512_set1_epi32((int)kx));
        y = lo1;
        z = _mm512_xor_si512(_mm512_xor_si512(hi0, w), _mm512_set1_epi32((int)ky));
        w = lo0;
        kx += KEY_X;
        ky += KEY_Y;
    }
    const __m512 unit = _mm512_set1_ps(1.0f / 16777216.0f), p = _mm512_set1_ps(d->p),
                 kept = _mm512_set1_ps(keep), zero = _mm512_setzero_ps();
    const __m512i word[4] = {x, y, z, w};
    __m512 t[4]; /* t[k] lane i: word k of block q0 + i, as its multiplier */
    for (int k = 0; k < 4; k++) {
        const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(word[k], 8)), unit);
        t[k] = _mm512_mask_mov_ps(kept, _mm512_cmp_ps_mask(u, p, _CMP_LT_OQ), zero);
    }
    /* out[4i + k] = t[k][i]: within each 128-bit lane L first (e[j] lane L:
     * block 4L + j's four words), then the lanes (out's 16 floats at 16v:
     * blocks 4v .. 4v + 3, lane v of each e[j]) */
    const __m512 a = _mm512_unpacklo_ps(t[0], t[1]), b = _mm512_unpackhi_ps(t[0], t[1]),
                 c = _mm512_unpacklo_ps(t[2], t[3]), dd = _mm512_unpackhi_ps(t[2], t[3]);
    const __m512 e0 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(c))),
                 e1 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(c))),
                 e2 = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(b), _mm512_castps_pd(dd))),
                 e3 = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(b), _mm512_castps_pd(dd)));
    const __m512 u0 = _mm512_shuffle_f32x4(e0, e1, 0x44), u1 = _mm512_shuffle_f32x4(e0, e1, 0xEE),
                 u2 = _mm512_shuffle_f32x4(e2, e3, 0x44), u3 = _mm512_shuffle_f32x4(e2, e3, 0xEE);
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(u0, u2, 0x88));
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(u0, u2, 0xDD));
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(u1, u3, 0x88));
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(u1, u3, 0xDD));
}

CF_AVX512F static void scales_avx512(const cf_host_dropout *d, uint64_t first, size_t count,
                                     float *out)
{
    const float keep = 1.0f / (1.0f - d->p);
    float m[64];
    uint64_t q = first >> 2;
    size_t skip = (size_t)(first & 3);
    while (count) {
        blocks16(d, q, keep, m);
        const size_t take = count < 64 - skip ? count : 64 - skip;
        memcpy(out, m + skip, take * sizeof *out);
        out += take, count -= take, skip = 0, q += 16;
    }
}

#endif

void cf_host_dropout_scales(const cf_host_dropout *d, uint64_t first, size_t count, float *out)
{
#ifdef CF_HOST_HAS_AVX512
    if (d->p > 0.0f && cf_host_avx512()) {
        scales_avx512(d, first, count, out);
        return;
    }
#endif
    cf_host_dropout_scales_portable(d, first, count, out);
}
