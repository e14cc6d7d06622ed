/* A product's output rounded to bf16 or fp16 values on the host (round_avx512.h). */
#include "round_avx512.h"

#include <stdatomic.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#define AVX512F __attribute__((target("avx512f")))

/* 16 values: bf16 by integer arithmetic (round_storage_bits's bf16_bits),
 * fp16 by the CPU's conversion there and back, round to nearest even, which
 * keeps fp16's subnormals and gives infinity from 65520 up; NaNs as the
 * kernel leaves them. */
AVX512F static inline __m512i round16(__m512i u, int precision)
{
    const __m512i abs = _mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(abs, _mm512_set1_epi32(0x7F800000));
    if (precision == 1) {
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd);
        return _mm512_mask_mov_epi32(_mm512_and_si512(r, _mm512_set1_epi32((int)0xFFFF0000u)),
                                     nan, _mm512_set1_epi32(0x7FC00000));
    }
    const __m256i h =
        _mm512_cvtps_ph(_mm512_castsi512_ps(u), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_mask_mov_epi32(_mm512_castps_si512(_mm512_cvtph_ps(h)), nan, u);
}

AVX512F static void round_rows(float *c, int m, int n, int ldc, int precision)
{
    for (int i = 0; i < m; i++) {
        float *row = c + (long)i * ldc;
        for (int j = 0; j < n; j += 16) {
            const __mmask16 mask = n - j >= 16 ? 0xFFFF : (__mmask16)((1u << (n - j)) - 1u);
            const __m512i u = _mm512_maskz_loadu_epi32(mask, row + j);
            _mm512_mask_storeu_epi32(row + j, mask, round16(u, precision));
        }
    }
}

bool cf_round_avx512_available(void)
{
    static atomic_int available = -1; /* decided once; a race stores the same value */
    int a = atomic_load(&available);
    if (a < 0) {
        __builtin_cpu_init();
        atomic_store(&available, a = __builtin_cpu_supports("avx512f"));
    }
    return a;
}

bool cf_round_rows_avx512(float *c, int m, int n, int ldc, int precision)
{
    if (!cf_round_avx512_available()) return false;
    round_rows(c, m, n, ldc, precision);
    return true;
}

#else /* not x86-64 */

bool cf_round_avx512_available(void) { return false; }

bool cf_round_rows_avx512(float *c, int m, int n, int ldc, int precision)
{
    (void)c, (void)m, (void)n, (void)ldc, (void)precision;
    return false;
}

#endif
