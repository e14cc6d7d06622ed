/* Double-precision reference GEMM (row-major, same contract as cf_gemm). */
#ifndef REF_GEMM_H
#define REF_GEMM_H

#include <stdbool.h>
#include <stddef.h>

/* c = alpha op(a) op(b) + beta c; `bound` (may be NULL) receives
 * |alpha| |op(a)| |op(b)| + |beta c0|, the scale of rounding error. */
void ref_gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, double alpha,
              const double *a, size_t lda, const double *b, size_t ldb, double beta, double *c,
              size_t ldc, double *bound);

#endif
