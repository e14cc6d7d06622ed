/* What another op's check takes from LayerNorm's (conf_layernorm.c): its
 * double-precision reference, for the fused residual + LayerNorm
 * (conf_residual_norm.c). Same contract and argument order as
 * cf_layernorm_forward/backward. */
#ifndef CLFORMER_CONF_LAYERNORM_H
#define CLFORMER_CONF_LAYERNORM_H

#include <stdbool.h>
#include <stddef.h>

/* out (N, C) = (inp - mean) * rstd * weight + bias per row; mean, rstd (N)
 * receive the row statistics (biased variance, eps inside the sqrt). */
void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, size_t N, size_t C,
                           double eps);

/* dweight += sum_rows(dout * xhat), dbias += sum_rows(dout); dinp = (or +=
 * when accumulate) the input gradient. */
void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                            const double *inp, const double *weight, const double *mean,
                            const double *rstd, size_t N, size_t C, bool accumulate);

#endif
