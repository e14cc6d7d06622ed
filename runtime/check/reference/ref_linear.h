/* Double-precision reference linear layer (same contract and argument order
 * as cf_linear_forward/backward): weight (OC, IC) as PyTorch stores it. */
#ifndef REF_LINEAR_H
#define REF_LINEAR_H

#include <stdbool.h>
#include <stddef.h>

/* out (N, OC) = inp (N, IC) weight^T + bias; bias may be NULL. */
void ref_linear_forward(double *out, const double *inp, const double *weight, const double *bias,
                        size_t N, size_t IC, size_t OC);

/* dweight += dout^T inp; dbias += sum_rows(dout) (skipped when NULL);
 * dinp = (or += when accumulate) dout weight (skipped when NULL). */
void ref_linear_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                         const double *inp, const double *weight, size_t N, size_t IC, size_t OC,
                         bool accumulate);

#endif
