/* Double-precision reference of the fused bias + activation + dropout (same
 * contract and argument order as cf_bias_act_forward/backward). */
#ifndef REF_ACTIVATION_H
#define REF_ACTIVATION_H

#include <stddef.h>
#include <stdint.h>

#include "clformer.h" /* clformer_activation: the one activation enum */
#include "ref_philox.h"

/* One dropout site, as cf_dropout: p == 0 (or a NULL pointer) is identity. */
typedef ref_dropout ref_act_dropout;

/* The dropout multiplier of element `index` of the site: 0 or 1/(1-p). */
static inline double ref_act_dropout_scale(const ref_act_dropout *d, uint64_t index)
{
    return ref_dropout_scale(d, index);
}

/* out = dropout(act(inp + bias)) over (N, C); GELU is the exact erf form. */
void ref_bias_act_forward(double *out, const double *inp, const double *bias, size_t N, size_t C,
                          clformer_activation act, const ref_act_dropout *dropout);

/* dinp = dropout_mask(dout) * act'(inp + bias) (overwrites; may alias dout);
 * dbias += sum_rows(dinp). ReLU'(0) = 0, as PyTorch. */
void ref_bias_act_backward(double *dinp, double *dbias, const double *dout, const double *inp,
                           const double *bias, size_t N, size_t C, clformer_activation act,
                           const ref_act_dropout *dropout);

#endif
