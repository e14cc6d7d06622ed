/* Reference GEMM in double. */
#include "ref_gemm.h"

#include <math.h>

void ref_gemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, double alpha,
              const double *a, size_t lda, const double *b, size_t ldb, double beta, double *c,
              size_t ldc, double *bound)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = 0.0, mag = 0.0;
            for (size_t p = 0; p < k; p++) {
                double x = trans_a ? a[p * lda + i] : a[i * lda + p];
                double y = trans_b ? b[j * ldb + p] : b[p * ldb + j];
                acc += x * y;
                mag += fabs(x * y);
            }
            double c0 = c[i * ldc + j];
            c[i * ldc + j] = alpha * acc + (beta != 0.0 ? beta * c0 : 0.0);
            if (bound) bound[i * n + j] = fabs(alpha) * mag + (beta != 0.0 ? fabs(beta * c0) : 0.0);
        }
}
