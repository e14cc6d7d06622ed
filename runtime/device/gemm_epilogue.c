/* The host provider's epilogues (gemm_epilogue.h): AVX-512F where the CPU
 * has it, 16 columns at a time with the last ones of a row masked; else the
 * same arithmetic one element at a time. */
#include "gemm_epilogue.h"
#include "gemm.h"
#include "host_exp.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

/* GPT-2's GELU as cl/activation.cl computes it: u = K (x + C x^3) */
#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

static float gelu_s(float x) /* 1 / (1 + exp(-2u)): 0.5 (1 + tanh u) */
{
    return 1.0f / (1.0f + cf_exp_portable(-2.0f * GELU_K * (x + GELU_C * x * x * x)));
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

/* The dropout multipliers of up to CHUNK of a row's columns at a time */
enum { CHUNK = 256 };

static bool drops(const cf_epilogue_slice *e) { return e->drop.p > 0.0f; }

/* m[0..n) for row i's columns j .. j+n of the slice */
static void row_scales(const cf_epilogue_slice *e, int i, int j, int n, float *m)
{
    cf_host_dropout_scales(&e->drop, e->first + (uint64_t)i * e->row_len + (uint64_t)j,
                           (size_t)n, m);
}

static void row_scales_portable(const cf_epilogue_slice *e, int i, int j, int n, float *m)
{
    cf_host_dropout_scales_portable(&e->drop, e->first + (uint64_t)i * e->row_len + (uint64_t)j,
                                    (size_t)n, m);
}

void cf_gemm_epilogue_rows_portable(const cf_epilogue_slice *e, float *c, int m, int n, int ldc)
{
    float scale[CHUNK];
    for (int i = 0; i < m; i++) {
        float *ci = c + (size_t)i * ldc, *ri = e->rows ? e->rows + (size_t)i * ldc : NULL;
        for (int j0 = 0; j0 < n; j0 += CHUNK) {
            const int w = n - j0 < CHUNK ? n - j0 : CHUNK;
            if (drops(e)) row_scales_portable(e, i, j0, w, scale);
            for (int j = j0; j < j0 + w; j++) {
                const float b = e->bias[j];
                if (e->kind == CF_EPILOGUE_BIAS) {
                    ci[j] = ci[j] + b;
                } else if (e->kind == CF_EPILOGUE_BIAS_ACT) {
                    const float y = act_value(e->act, ci[j] + b);
                    ri[j] = drops(e) ? y * scale[j - j0] : y;
                } else {
                    const float g = drops(e) ? ci[j] * scale[j - j0] : ci[j];
                    ci[j] = g * act_grad(e->act, ri[j] + b);
                }
            }
        }
    }
}

#ifdef CF_HOST_HAS_AVX512

CF_AVX512F static inline __m512 gelu_s16(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    const __m512 u = _mm512_fmadd_ps(_mm512_set1_ps(GELU_C), x3, x);
    const __m512 e = cf_exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f * GELU_K), u));
    return _mm512_div_ps(one, _mm512_add_ps(one, e));
}

CF_AVX512F static inline __m512 act_value16(int act, __m512 x)
{
    if (act == CLFORMER_ACT_GELU_TANH) return _mm512_mul_ps(x, gelu_s16(x));
    const __m512 zero = _mm512_setzero_ps();
    return _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), zero);
}

CF_AVX512F static inline __m512 act_grad16(int act, __m512 x)
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

CF_AVX512F static void rows_avx512(const cf_epilogue_slice *e, float *c, int m, int n, int ldc)
{
    float scale[CHUNK];
    const bool drop = drops(e);
    for (int i = 0; i < m; i++) {
        float *ci = c + (size_t)i * ldc, *ri = e->rows ? e->rows + (size_t)i * ldc : NULL;
        for (int j0 = 0; j0 < n; j0 += CHUNK) {
            const int w = n - j0 < CHUNK ? n - j0 : CHUNK;
            if (drop) row_scales(e, i, j0, w, scale);
            for (int j = j0; j < j0 + w; j += 16) {
                const __mmask16 k = cf_lanes16(j0 + w - j);
                const __m512 b = _mm512_maskz_loadu_ps(k, e->bias + j);
                if (e->kind == CF_EPILOGUE_BIAS) {
                    const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, ci + j), b);
                    _mm512_mask_storeu_ps(ci + j, k, v);
                } else if (e->kind == CF_EPILOGUE_BIAS_ACT) {
                    const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(k, ci + j), b);
                    __m512 y = act_value16(e->act, v);
                    if (drop) y = _mm512_mul_ps(y, _mm512_maskz_loadu_ps(k, scale + (j - j0)));
                    _mm512_mask_storeu_ps(ri + j, k, y);
                } else {
                    const __m512 g =
                        act_grad16(e->act, _mm512_add_ps(_mm512_maskz_loadu_ps(k, ri + j), b));
                    __m512 dy = _mm512_maskz_loadu_ps(k, ci + j);
                    if (drop) dy = _mm512_mul_ps(dy, _mm512_maskz_loadu_ps(k, scale + (j - j0)));
                    _mm512_mask_storeu_ps(ci + j, k, _mm512_mul_ps(dy, g));
                }
            }
        }
    }
}

CF_AVX512F static float exp_avx512(float y)
{
    return _mm512_cvtss_f32(cf_exp16(_mm512_set1_ps(y)));
}

#else

static void rows_avx512(const cf_epilogue_slice *e, float *c, int m, int n, int ldc)
{
    cf_gemm_epilogue_rows_portable(e, c, m, n, ldc);
}

static float exp_avx512(float y) { return cf_exp_portable(y); }

#endif

void cf_gemm_epilogue_rows(const cf_epilogue_slice *e, float *c, int m, int n, int ldc)
{
    if (cf_host_avx512()) rows_avx512(e, c, m, n, ldc);
    else cf_gemm_epilogue_rows_portable(e, c, m, n, ldc);
}

float cf_gemm_epilogue_exp(float y, bool avx512)
{
    return avx512 ? exp_avx512(y) : cf_exp_portable(y);
}
