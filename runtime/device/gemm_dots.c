/*
 * Decoding steps' products as dot products (gemm_dots.h says why). A block
 * of up to 4 rows of A by 4 rows of B (outputs) keeps 16 accumulators of
 * 16 lanes: each step of k loads 16 floats of each row (the last step
 * masked: zeros) and does one fused multiply-add per pair, so every
 * weight is read from memory once per 4 rows of A. Lane l of an output
 * sums k = l, l + 16, ... in order; the 16 lanes are then added halves onto
 * halves (8, 4, 2, 1). The blocking only decides which outputs share loads,
 * never the arithmetic of one. B may be 16-bit (bf16 or half): each value
 * is widened to the float it stands for as it is loaded, and the arithmetic
 * is the same.
 */
#include "gemm_dots.h"
#include "gemm_avx512.h"

#include <stdatomic.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,fma")))

enum { BR = 4, BC = 4 }; /* rows of A, rows of B (outputs) a block; sums4 takes BC = 4 */

/* How B's values are stored. */
enum { B_FLOAT, B_BF16, B_HALF };

/* The block's loops unrolled, so that its accumulators live in registers
 * (GCC 12 at -O2 kept them on the stack otherwise: a fifth of the speed) */
#define UNROLLED _Pragma("GCC unroll 4")

/* The sums of four accumulators' 16 lanes, each added halves onto halves
 * (lanes l and l + 8, then l and l + 4, l + 2, l + 1), four at a time:
 * output q of the result is accumulator q's sum. */
AVX512 static inline __m128 sums4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    /* 8 lanes each: [a0 | a1], [a2 | a3] */
    const __m512 s01 = _mm512_add_ps(_mm512_shuffle_f32x4(a0, a1, 0x44),
                                     _mm512_shuffle_f32x4(a0, a1, 0xEE));
    const __m512 s23 = _mm512_add_ps(_mm512_shuffle_f32x4(a2, a3, 0x44),
                                     _mm512_shuffle_f32x4(a2, a3, 0xEE));
    /* 4 lanes each: 128-bit lane q holds accumulator q's */
    const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88),
                                    _mm512_shuffle_f32x4(s01, s23, 0xDD));
    const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, 0x4E)); /* l + 2 */
    const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, 0xB1)); /* l + 1 */
    const __m512i firsts = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm512_castps512_ps128(_mm512_permutexvar_ps(firsts, s1));
}

/* The 16 values of B row `row` from element p (masked ones 0) as floats. */
__attribute__((always_inline)) AVX512 static inline __m512 load_b(const int format,
                                                                   const void *row, int p,
                                                                   __mmask16 m)
{
    if (format == B_FLOAT) return _mm512_maskz_loadu_ps(m, (const float *)row + p);
    const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)row + p);
    if (format == B_HALF) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); /* bf16 */
}

/* Rows i0.. (h of them, h <= R <= BR) by outputs j0.. (w <= BC). Rows and
 * outputs past h and w repeat the last one (read, never written), so every
 * block runs the same unrolled loop; R and B's format are constants where it
 * is inlined (one row alone does not compute four). */
__attribute__((always_inline)) AVX512 static inline void
block(const int R, const int format, int h, int w, int k, float alpha, const float *a, int lda,
      const void *b, int ldb, float beta, float *c, int ldc)
{
    const size_t b_size = format == B_FLOAT ? sizeof(float) : sizeof(uint16_t);
    const float *ar[BR];
    const void *br[BC];
    for (int i = 0; i < R; i++) ar[i] = a + (size_t)(i < h ? i : h - 1) * lda;
    for (int j = 0; j < BC; j++)
        br[j] = (const char *)b + (size_t)(j < w ? j : w - 1) * (size_t)ldb * b_size;
    __m512 acc[BR][BC];
    UNROLLED for (int i = 0; i < R; i++)
        UNROLLED for (int j = 0; j < BC; j++) acc[i][j] = _mm512_setzero_ps();
    for (int p = 0; p < k; p += 16) {
        const int left = k - p;
        const __mmask16 m = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
        __m512 bv[BC];
        UNROLLED for (int j = 0; j < BC; j++) {
            /* 16-bit rows: the next block's, fetched as this one is read.
             * They take twice the instructions a cache line, and without it
             * a core read half the lines a second from memory (49152 x 576
             * bf16, one core: 3.9 Gweights/s, with it 5.2; fp32 3.0). */
            if (format != B_FLOAT) /* (past B's end for the last block: a hint, not a read) */
                _mm_prefetch((const char *)((uintptr_t)br[j] + ((size_t)BC * ldb + p) * b_size),
                             _MM_HINT_T0);
            bv[j] = load_b(format, br[j], p, m);
        }
        UNROLLED for (int i = 0; i < R; i++) {
            const __m512 av = _mm512_maskz_loadu_ps(m, ar[i] + p);
            UNROLLED for (int j = 0; j < BC; j++)
                acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }
    /* constant indices into acc (h tested inside), or it lives on the stack */
    const __mmask8 cols = (__mmask8)((1u << w) - 1);
    const __m128 va = _mm_set1_ps(alpha), vb = _mm_set1_ps(beta);
    UNROLLED for (int i = 0; i < R; i++) {
        if (i >= h) break;
        float *out = c + (size_t)i * ldc;
        const __m128 dot = sums4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        const __m128 v =
            beta == 0.0f ? _mm_mul_ps(va, dot)
                         : _mm_fmadd_ps(va, dot, _mm_mul_ps(vb, _mm_maskz_loadu_ps(cols, out)));
        _mm_mask_storeu_ps(out, cols, v);
    }
}

/* The product with B stored as `format`, a constant where it is inlined. */
__attribute__((always_inline)) AVX512 static inline void
product(const int format, int m, int n, int k, float alpha, const float *a, int lda,
        const void *b, int ldb, float beta, float *c, int ldc)
{
    const size_t b_size = format == B_FLOAT ? sizeof(float) : sizeof(uint16_t);
    for (int j0 = 0; j0 < n; j0 += BC)
        for (int i0 = 0; i0 < m; i0 += BR) {
            const int h = m - i0 < BR ? m - i0 : BR, w = n - j0 < BC ? n - j0 : BC;
            const float *ai = a + (size_t)i0 * lda;
            const void *bj = (const char *)b + (size_t)j0 * (size_t)ldb * b_size;
            float *cij = c + (size_t)i0 * ldc + j0;
            if (h == 1) block(1, format, h, w, k, alpha, ai, lda, bj, ldb, beta, cij, ldc);
            else block(BR, format, h, w, k, alpha, ai, lda, bj, ldb, beta, cij, ldc);
        }
}

AVX512 static void product_float(int m, int n, int k, float alpha, const float *a, int lda,
                                 const float *b, int ldb, float beta, float *c, int ldc)
{
    product(B_FLOAT, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

AVX512 static void product_bf16(int m, int n, int k, float alpha, const float *a, int lda,
                                const uint16_t *b, int ldb, float beta, float *c, int ldc)
{
    product(B_BF16, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

AVX512 static void product_half(int m, int n, int k, float alpha, const float *a, int lda,
                                const uint16_t *b, int ldb, float beta, float *c, int ldc)
{
    product(B_HALF, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static bool cpu_runs_it(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw");
}

static bool decide(void) { return !cf_gemm_host_openblas_only() && cpu_runs_it(); }

bool cf_gemm_dots_wanted(void)
{
    static atomic_int wanted = -1; /* decided once; a race stores the same value */
    int w = atomic_load(&wanted);
    if (w < 0) atomic_store(&wanted, w = decide());
    return w;
}

bool cf_gemm_dots(int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                  int ldb, float beta, float *c, int ldc)
{
    if (!cpu_runs_it()) return false;
    product_float(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return true;
}

bool cf_gemm_dots_half(int m, int n, int k, float alpha, const float *a, int lda,
                       const uint16_t *b, bool fp16, int ldb, float beta, float *c, int ldc)
{
    if (!cpu_runs_it()) return false;
    if (fp16) product_half(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    else product_bf16(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return true;
}

#else /* not x86-64 */

bool cf_gemm_dots_wanted(void) { return false; }

bool cf_gemm_dots(int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                  int ldb, float beta, float *c, int ldc)
{
    (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb;
    (void)beta, (void)c, (void)ldc;
    return false;
}

bool cf_gemm_dots_half(int m, int n, int k, float alpha, const float *a, int lda,
                       const uint16_t *b, bool fp16, int ldb, float beta, float *c, int ldc)
{
    (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)fp16, (void)ldb;
    (void)beta, (void)c, (void)ldc;
    return false;
}

#endif
