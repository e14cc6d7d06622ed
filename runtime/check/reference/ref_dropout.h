/* Double-precision reference of the dropout operations (runtime/ops/ops.h). */
#ifndef REF_DROPOUT_H
#define REF_DROPOUT_H

#include <stddef.h>

#include "ref_philox.h"

/* out = res + dropout(x), n elements; out may alias res. */
void ref_residual_dropout_forward(double *out, const double *res, const double *x, size_t n,
                                  const ref_dropout *dropout);

/* dx = dropout_mask(dout): overwrites; dx may alias dout. */
void ref_dropout_backward(double *dx, const double *dout, size_t n, const ref_dropout *dropout);

/* out = a + b; out may alias a or b. */
void ref_add(double *out, const double *a, const double *b, size_t n);

#endif
