/* What another op's check takes from RMSNorm's (conf_rmsnorm.c): its
 * double-precision reference, for the fused residual + RMSNorm
 * (conf_residual_norm.c). Same contract and argument order as
 * cf_rmsnorm_forward/backward. */
#ifndef CLFORMER_CONF_RMSNORM_H
#define CLFORMER_CONF_RMSNORM_H

#include <stdbool.h>
#include <stddef.h>

/* y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps), per row. */
void ref_rmsnorm_forward(double *y, double *rstd, const double *x, const double *w, size_t N,
                         size_t C, double eps);

/* dx (+)= rs * g * w - x * rs^3 * sum(g * w * x) / C; dw += sum_rows(g * x * rs). */
void ref_rmsnorm_backward(double *dx, double *dw, const double *g, const double *x,
                          const double *w, const double *rstd, size_t N, size_t C,
                          bool accumulate);

#endif
