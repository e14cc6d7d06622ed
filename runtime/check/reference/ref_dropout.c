/* Dropout in double: the multiplier of element i comes from ref_philox. */
#include "ref_dropout.h"

void ref_residual_dropout_forward(double *out, const double *res, const double *x, size_t n,
                                  const ref_dropout *dropout)
{
    for (size_t i = 0; i < n; i++) out[i] = res[i] + x[i] * ref_dropout_scale(dropout, i);
}

void ref_dropout_backward(double *dx, const double *dout, size_t n, const ref_dropout *dropout)
{
    for (size_t i = 0; i < n; i++) dx[i] = dout[i] * ref_dropout_scale(dropout, i);
}

void ref_add(double *out, const double *a, const double *b, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
