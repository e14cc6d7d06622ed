/*
 * A product's output rounded to a 16-bit format's values on the host, as it
 * is written (gemm_host.c): the bits cl/common.h's round_storage_bits gives
 * (cf_round_storage), so that a bf16/fp16 pass whose products are the host
 * provider's needs no rounding launch after each (a decoding step of
 * smollm-135m made 151 of them a token). AVX-512F: 16 values an instruction
 * sequence, the last ones of a row masked.
 */
#ifndef CF_ROUND_AVX512_H
#define CF_ROUND_AVX512_H

#include <stdbool.h>

/* Whether the CPU runs cf_round_rows_avx512 (AVX-512F). Decided once. */
bool cf_round_avx512_available(void);

/* Rows i < m of c (row stride ldc), columns j < n, rounded in place to
 * precision 1 (bf16) or 2 (fp16) as round_storage_bits does: to nearest,
 * ties to even, past the largest finite value to infinity, fp16's
 * subnormals kept; a bf16 NaN becomes 0x7FC00000, an fp16 NaN stays as it
 * is. False, with nothing written, where the CPU lacks AVX-512F. */
bool cf_round_rows_avx512(float *c, int m, int n, int ldc, int precision);

#endif
