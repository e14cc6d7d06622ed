/* The host provider's epilogues (gemm_epilogue.h): AVX-512F where the CPU
 * has it, 16 columns at a time with the last ones of a row masked; else the
 * same arithmetic one element at a time.
 *
 * exp for tanh GELU: y = n ln2 + r with n = round(y / ln2) and |r| <= ln2/2
 * (ln2 in two parts, so that n ln2 is exact to float's precision), exp(r)
 * by its Taylor series to r^7 (the first term left out is below 2^-28
 * relative), then times 2^n by scalef, which overflows to infinity and
 * underflows through the subnormals to 0 as the exact value does. */
#include "gemm_epilogue.h"
#include "gemm.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* GPT-2's GELU as cl/activation.cl computes it: u = K (x + C x^3) */
#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693145751953125f /* ln 2's leading 16 bits: n LN2_HI is exact */
#define LN2_LO 1.42860682030941723212e-6f
#define EXP_MIN -150.0f /* below: 0 (the least subnormal is 2^-149) */
#define EXP_MAX 100.0f  /* above: infinity */

static const float taylor[8] = {1.0f, 1.0f, 1.0f / 2, 1.0f / 6, 1.0f / 24, 1.0f / 120,
                                1.0f / 720, 1.0f / 5040};

static float exp_scalar(float y)
{
    if (isnan(y)) return y;
    y = y < EXP_MIN ? EXP_MIN : y > EXP_MAX ? EXP_MAX : y;
    const float n = nearbyintf(y * LOG2E);
    const float r = fmaf(-n, LN2_LO, fmaf(-n, LN2_HI, y));
    float p = taylor[7];
    for (int i = 6; i >= 0; i--) p = fmaf(p, r, taylor[i]);
    return ldexpf(p, (int)n);
}

static float gelu_s(float x) /* 1 / (1 + exp(-2u)): 0.5 (1 + tanh u) */
{
    return 1.0f / (1.0f + exp_scalar(-2.0f * GELU_K * (x + GELU_C * x * x * x)));
}

static float act_value(int act, float x)
{
    if (act == CLFORMER_ACT_GELU_TANH) return x * gelu_s(x);
    return x < 0.0f ? 0.0f : x; /* NaN passes, as the kernel's */
}

static float act_grad(int act, float x)
{
    if (act == CLFORMER_ACT_GELU_TANH) {
        const float s = gelu_s(x);
        return s + 2.0f * x * s * (1.0f - s) * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
    }
    return x > 0.0f ? 1.0f : 0.0f;
}

void cf_gemm_epilogue_rows_portable(int kind, int act, float *c, int m, int n, int ldc,
                                    const float *bias, float *rows)
{
    for (int i = 0; i < m; i++) {
        float *ci = c + (size_t)i * ldc, *ri = rows ? rows + (size_t)i * ldc : NULL;
        for (int j = 0; j < n; j++) {
            if (kind == CF_EPILOGUE_BIAS) ci[j] = ci[j] + bias[j];
            else if (kind == CF_EPILOGUE_BIAS_ACT) ri[j] = act_value(act, ci[j] + bias[j]);
            else ci[j] = ci[j] * act_grad(act, ri[j] + bias[j]);
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX512F __attribute__((target("avx512f")))

AVX512F static inline __m512 exp16(__m512 y)
{
    /* max(lo, y) and min(hi, .) return their second operand, y, for a NaN */
    y = _mm512_min_ps(_mm512_set1_ps(EXP_MAX), _mm512_max_ps(_mm512_set1_ps(EXP_MIN), y));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(y, _mm512_set1_ps(LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_HI), y);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(LN2_LO), r);
    __m512 p = _mm512_set1_ps(taylor[7]);
    for (int i = 6; i >= 0; i--) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(taylor[i]));
    return _mm512_scalef_ps(p, n);
}

AVX512F static inline __m512 gelu_s16(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 u = _mm512_fmadd_ps(_mm512_set1_ps(GELU_C), x3, x);
    const __m512 e = exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f * GELU_K), u));
    return _mm512_div_ps(one, _mm512_add_ps(one, e));
}

AVX512F static inline __m512 act_value16(int act, __m512 x)
{
    if (act == CLFORMER_ACT_GELU_TANH) return _mm512_mul_ps(x, gelu_s16(x));
    const __m512 zero = _mm512_setzero_ps();
    return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), zero);
}

AVX512F static inline __m512 act_grad16(int act, __m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    if (act == CLFORMER_ACT_GELU_TANH) {
        const __m512 s = gelu_s16(x);
        /* s + 2 x s (1 - s) K (1 + 3 C x^2) */
        const __m512 du = _mm512_fmadd_ps(_mm512_set1_ps(3.0f * GELU_C), _mm512_mul_ps(x, x), one);
        const __m512 t = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(2.0f * GELU_K), x),
                                       _mm512_mul_ps(s, _mm512_sub_ps(one, s)));
        return _mm512_fmadd_ps(t, du, s);
    }
    const __m512 zero = _mm512_setzero_ps();
    return _mm512_mask_mov_ps(zero, _mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ), one);
}

AVX512F static void rows_avx512(int kind, int act, float *c, int m, int n, int ldc,
                                const float *bias, float *rows)
{
    for (int i = 0; i < m; i++) {
        float *ci = c + (size_t)i * ldc, *ri = rows ? rows + (size_t)i * ldc : NULL;
        for (int j = 0; j < n; j += 16) {
            const __mmask16 k = n - j >= 16 ? 0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
            const __m512 b = _mm512_maskz_loadu_ps(k, bias + j);
            if (kind == CF_EPILOGUE_BIAS) {
                const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, ci + j), b);
                _mm512_mask_storeu_ps(ci + j, k, v);
            } else if (kind == CF_EPILOGUE_BIAS_ACT) {
                const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, ci + j), b);
                _mm512_mask_storeu_ps(ri + j, k, act_value16(act, v));
            } else {
                const __m512 g = act_grad16(act, _mm512_add_ps(_mm512_maskz_loadu_ps(k, ri + j), b));
                _mm512_mask_storeu_ps(ci + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, ci + j), g));
            }
        }
    }
}

AVX512F static float exp_avx512(float y)
{
    return _mm512_cvtss_f32(exp16(_mm512_set1_ps(y)));
}

static bool have_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

#else

static bool have_avx512(void) { return false; }

static void rows_avx512(int kind, int act, float *c, int m, int n, int ldc, const float *bias,
                        float *rows)
{
    cf_gemm_epilogue_rows_portable(kind, act, c, m, n, ldc, bias, rows);
}

static float exp_avx512(float y) { return exp_scalar(y); }

#endif

void cf_gemm_epilogue_rows(int kind, int act, float *c, int m, int n, int ldc, const float *bias,
                           float *rows)
{
    if (have_avx512()) rows_avx512(kind, act, c, m, n, ldc, bias, rows);
    else cf_gemm_epilogue_rows_portable(kind, act, c, m, n, ldc, bias, rows);
}

float cf_gemm_epilogue_exp(float y, bool avx512) { return avx512 ? exp_avx512(y) : exp_scalar(y); }
