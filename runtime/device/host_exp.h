/*
 * exp on the host, for the host provider's epilogues and attention items
 * (gemm_epilogue.c, ops_attention_host.c): one arithmetic, in a portable form
 * and, on x86-64, sixteen lanes of AVX-512F. y = n ln2 + r with
 * n = round(y / ln2) and |r| <= ln2/2 (ln2 in two parts, so that n ln2 is
 * exact to float's precision), exp(r) by its Taylor series to r^7 (the
 * first term left out is below 2^-28 relative), then times 2^n (scalef,
 * ldexpf), which overflows to infinity and underflows through the
 * subnormals to 0 as the exact value does: within 2 ulp over float's range
 * (test_gemm_epilogue), NaN for NaN. With it, the two AVX-512F helpers its
 * users share: whether the CPU runs that form, and a row's partial lanes.
 */
#ifndef CF_HOST_EXP_H
#define CF_HOST_EXP_H

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>

#define CF_EXP_LOG2E 1.44269504088896341f
#define CF_EXP_LN2_HI 0.693145751953125f /* ln 2's leading 16 bits: n LN2_HI is exact */
#define CF_EXP_LN2_LO 1.42860682030941723212e-6f
#define CF_EXP_MIN -150.0f /* below: 0 (the least subnormal is 2^-149) */
#define CF_EXP_MAX 100.0f  /* above: infinity */

/* 1/i!, i = 7 down to 0 */
#define CF_EXP_TAYLOR {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 1.0f / 2, 1.0f, 1.0f}

static inline float cf_exp_portable(float y)
{
    static const float c[8] = CF_EXP_TAYLOR;
    if (isnan(y)) return y;
    y = y < CF_EXP_MIN ? CF_EXP_MIN : y > CF_EXP_MAX ? CF_EXP_MAX : y;
    const float n = nearbyintf(y * CF_EXP_LOG2E);
    const float r = fmaf(-n, CF_EXP_LN2_LO, fmaf(-n, CF_EXP_LN2_HI, y));
    float p = c[0];
    for (int i = 1; i < 8; i++) p = fmaf(p, r, c[i]);
    return ldexpf(p, (int)n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define CF_AVX512F __attribute__((target("avx512f")))
#define CF_HOST_HAS_AVX512 1

CF_AVX512F static inline __m512 cf_exp16(__m512 y)
{
    static const float c[8] = CF_EXP_TAYLOR;
    /* max(lo, y) and min(hi, .) return their second operand, y, for a NaN */
    y = _mm512_min_ps(_mm512_set1_ps(CF_EXP_MAX), _mm512_max_ps(_mm512_set1_ps(CF_EXP_MIN), y));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(y, _mm512_set1_ps(CF_EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CF_EXP_LN2_HI), y);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(CF_EXP_LN2_LO), r);
    __m512 p = _mm512_set1_ps(c[0]);
    for (int i = 1; i < 8; i++) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c[i]));
    return _mm512_scalef_ps(p, n);
}

/* Whether the CPU runs the AVX-512F forms. Asked once (per file that
 * includes this): callers ask for every row. */
static inline bool cf_host_avx512(void)
{
    static atomic_int known = -1; /* a race stores the same value */
    int has = atomic_load(&known);
    if (has < 0) {
        __builtin_cpu_init();
        atomic_store(&known, has = __builtin_cpu_supports("avx512f"));
    }
    return has;
}

/* The first n of 16 lanes (none for n <= 0, all for n >= 16). */
static inline __mmask16 cf_lanes16(int n)
{
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1u);
}

#else

static inline bool cf_host_avx512(void) { return false; }

#endif

#endif
