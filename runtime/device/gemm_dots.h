/*
 * The host provider's product for decoding steps on CPUs with AVX-512:
 * C = alpha A B^T + beta C (row-major, no trans_a, trans_b: a linear
 * layer's X W^T with W stored (out, in)) for few rows of A, one dot
 * product per output. OpenBLAS's sgemm copies all of W into panels on every
 * call, so a decoding step of one row read the weights three times (read,
 * write, read back: 4-8 GB/s of weights on a 2-core AMD EPYC, where a dot
 * product per output streams them once). Every output is computed the same
 * way whatever the rows, columns and threads around it (16 lanes over k,
 * each summed in order, then added in a fixed tree), so a row's bits do not
 * depend on the rows decoded with it. gemm_host.c calls it for the products
 * of decoding steps (cf_ctx.decoding).
 */
#ifndef CF_GEMM_DOTS_H
#define CF_GEMM_DOTS_H

#include <stdbool.h>
#include <stdint.h>

/* Whether the CPU runs cf_gemm_dots (AVX-512F, VL and BW), and CLFORMER_HOST_GEMM does
 * not ask for OpenBLAS alone. Decided once. */
bool cf_gemm_dots_wanted(void);

/* C[i][j] = alpha * dot(A row i, B row j) + beta * C[i][j] over k, for
 * i < m, j < n (beta 0: C is not read). False, with nothing written, where
 * the CPU lacks AVX-512F or VL. */
bool cf_gemm_dots(int m, int n, int k, float alpha, const float *a, int lda, const float *b,
                  int ldb, float beta, float *c, int ldc);

/* The same with B in 16 bits: bf16 (`fp16` false) or IEEE half values,
 * widened exactly as they are loaded, so C gets the bits cf_gemm_dots gives
 * on B's values in floats while B's bytes are halved (a decoding step of a
 * bf16/fp16 session reads its weights so: gemm_host.c). */
bool cf_gemm_dots_half(int m, int n, int k, float alpha, const float *a, int lda,
                       const uint16_t *b, bool fp16, int ldb, float beta, float *c, int ldc);

#endif
