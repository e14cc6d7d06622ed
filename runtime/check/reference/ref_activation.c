/* Reference bias + ReLU/GELU + dropout in double. The dropout mask is the
 * device's (ref_philox.h), so masks match bit for bit. */
#include "ref_activation.h"

#include <math.h>

static double act_value(double x, clformer_activation act)
{
    if (act == CLFORMER_ACT_GELU) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return x > 0.0 ? x : 0.0;
}

/* d/dx of x Phi(x) = Phi(x) + x phi(x); ReLU'(0) = 0. */
static double act_grad(double x, clformer_activation act)
{
    const double inv_sqrt_2pi = 0.39894228040143267794;
    if (act == CLFORMER_ACT_GELU)
        return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) * inv_sqrt_2pi;
    return x > 0.0 ? 1.0 : 0.0;
}

void ref_bias_act_forward(double *out, const double *inp, const double *bias, size_t N, size_t C,
                          clformer_activation act, const ref_act_dropout *dropout)
{
    for (size_t r = 0; r < N; r++)
        for (size_t c = 0; c < C; c++) {
            const size_t i = r * C + c;
            out[i] = act_value(inp[i] + bias[c], act) * ref_act_dropout_scale(dropout, i);
        }
}

void ref_bias_act_backward(double *dinp, double *dbias, const double *dout, const double *inp,
                           const double *bias, size_t N, size_t C, clformer_activation act,
                           const ref_act_dropout *dropout)
{
    for (size_t r = 0; r < N; r++)
        for (size_t c = 0; c < C; c++) {
            const size_t i = r * C + c;
            const double g =
                dout[i] * ref_act_dropout_scale(dropout, i) * act_grad(inp[i] + bias[c], act);
            dinp[i] = g;
            dbias[c] += g;
        }
}
