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
    const __m512i even = _mm512_mul_epu32(v, m);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(v, 32), m);
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
    *lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
}

/* Sixteen Philox blocks, one a lane: their four words */
typedef struct {
    __m512i x, y, z, w;
} blocks16;

/* The counters of blocks q0 .. q0 + 15 */
CF_AVX512F static blocks16 counters(const cf_host_dropout *d, uint64_t q0)
{
    uint32_t lo[16], hi[16];
    for (int i = 0; i < 16; i++) {
        const uint64_t q = q0 + (uint64_t)i;
        lo[i] = (uint32_t)q, hi[i] = (uint32_t)(q >> 32);
    }
    return (blocks16){_mm512_loadu_si512(lo), _mm512_loadu_si512(hi),
                      _mm512_set1_epi32((int)d->site), _mm512_set1_epi32((int)d->step)};
}

/* One round on b, under the round's keys kx, ky */
CF_AVX512F static inline void round16(blocks16 *b, __m512i kx, __m512i ky)
{
    const __m512i mx = _mm512_set1_epi64(MUL_X), mz = _mm512_set1_epi64(MUL_Z);
    __m512i hi0, lo0, hi1, lo1;
    mul_hi_lo(b->x, mx, &hi0, &lo0);
    mul_hi_lo(b->z, mz, &hi1, &lo1);
    b->x = _mm512_xor_si512(_mm512_xor_si512(hi1, b->y), kx);
    b->y = lo1;
    b->z = _mm512_xor_si512(_mm512_xor_si512(hi0, b->w), ky);
    b->w = lo0;
}

/* The multipliers of b's 64 elements into out: word k of lane i is element
 * 4i + k */
CF_AVX512F static void multipliers(const blocks16 *b, float p, float keep, float out[64])
{
    const __m512 unit = _mm512_set1_ps(1.0f / 16777216.0f), vp = _mm512_set1_ps(p),
                 kept = _mm512_set1_ps(keep), zero = _mm512_setzero_ps();
    const __m512i word[4] = {b->x, b->y, b->z, b->w};
    __m512 t[4]; /* t[k] lane i: word k of block i, as its multiplier */
    for (int k = 0; k < 4; k++) {
        const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(word[k], 8)), unit);
        t[k] = _mm512_mask_mov_ps(kept, _mm512_cmp_ps_mask(u, vp, _CMP_LT_OQ), zero);
    }
    /* out[4i + k] = t[k][i]: within each 128-bit lane L first (e[j] lane L:
     * block 4L + j's four words), then the lanes (out's 16 floats at 16v:
     * blocks 4v .. 4v + 3, lane v of each e[j]) */
#define PD(v) _mm512_castps_pd(v)
#define PS(v) _mm512_castpd_ps(v)
    const __m512 a = _mm512_unpacklo_ps(t[0], t[1]), c = _mm512_unpacklo_ps(t[2], t[3]),
                 e = _mm512_unpackhi_ps(t[0], t[1]), g = _mm512_unpackhi_ps(t[2], t[3]);
    const __m512 e0 = PS(_mm512_unpacklo_pd(PD(a), PD(c))),
                 e1 = PS(_mm512_unpackhi_pd(PD(a), PD(c))),
                 e2 = PS(_mm512_unpacklo_pd(PD(e), PD(g))),
                 e3 = PS(_mm512_unpackhi_pd(PD(e), PD(g)));
#undef PD
#undef PS
    const __m512 u0 = _mm512_shuffle_f32x4(e0, e1, 0x44), u1 = _mm512_shuffle_f32x4(e0, e1, 0xEE),
                 u2 = _mm512_shuffle_f32x4(e2, e3, 0x44), u3 = _mm512_shuffle_f32x4(e2, e3, 0xEE);
    _mm512_storeu_ps(out, _mm512_shuffle_f32x4(u0, u2, 0x88));
    _mm512_storeu_ps(out + 16, _mm512_shuffle_f32x4(u0, u2, 0xDD));
    _mm512_storeu_ps(out + 32, _mm512_shuffle_f32x4(u1, u3, 0x88));
    _mm512_storeu_ps(out + 48, _mm512_shuffle_f32x4(u1, u3, 0xDD));
}

/* The multipliers of elements 4 q0 .. 4 q0 + 64 groups - 1, groups 1 or 2:
 * two groups of sixteen blocks go through their rounds together, so that
 * one group's products run while the other's wait (a round is a chain of
 * dependent steps) */
CF_AVX512F static void draw(const cf_host_dropout *d, const __m512i keys[ROUNDS][2], uint64_t q0,
                            int groups, float keep, float out[128])
{
    blocks16 a = counters(d, q0);
    if (groups == 1) {
        for (int r = 0; r < ROUNDS; r++) round16(&a, keys[r][0], keys[r][1]);
        multipliers(&a, d->p, keep, out);
        return;
    }
    blocks16 b = counters(d, q0 + 16);
    for (int r = 0; r < ROUNDS; r++) {
        round16(&a, keys[r][0], keys[r][1]);
        round16(&b, keys[r][0], keys[r][1]);
    }
    multipliers(&a, d->p, keep, out);
    multipliers(&b, d->p, keep, out + 64);
}

CF_AVX512F static void scales_avx512(const cf_host_dropout *d, uint64_t first, size_t count,
                                     float *out)
{
    const float keep = 1.0f / (1.0f - d->p);
    __m512i keys[ROUNDS][2]; /* the key schedule, the same for every block */
    uint32_t kx = (uint32_t)d->seed, ky = (uint32_t)(d->seed >> 32);
    for (int r = 0; r < ROUNDS; r++, kx += KEY_X, ky += KEY_Y)
        keys[r][0] = _mm512_set1_epi32((int)kx), keys[r][1] = _mm512_set1_epi32((int)ky);
    float m[128];
    uint64_t q = first >> 2;
    size_t skip = (size_t)(first & 3);
    while (count) {
        const int groups = skip + count <= 64 ? 1 : 2; /* a short row: no group drawn in vain */
        draw(d, keys, q, groups, keep, m);
        const size_t drawn = 64 * (size_t)groups - skip, take = count < drawn ? count : drawn;
        memcpy(out, m + skip, take * sizeof *out);
        out += take, count -= take, skip = 0, q += 16 * (uint64_t)groups;
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
