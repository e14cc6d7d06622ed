/* Reference bias + ReLU/GELU + dropout in double. The dropout mask is the
 * device's: Philox4x32-10 on (index, site, step) under the seed, kept when
 * the 24-bit uniform is >= p, so masks match bit for bit. */
#include "ref_activation.h"

#include <math.h>

/* Philox4x32-10 and dropout_uniform as in cl/common.h. A private copy until
 * tests/ref/ref_philox.h (written on another branch) replaces it at merge. */
static void philox4x32_10(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0, c[1] = lo1, c[2] = n2, c[3] = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

static double dropout_uniform(uint64_t seed, uint32_t step, uint32_t site, uint64_t index)
{
    uint32_t c[4] = {(uint32_t)(index >> 2), (uint32_t)(index >> 34), site, step};
    philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    return (double)(c[index & 3] >> 8) * (1.0 / 16777216.0);
}

double ref_act_dropout_scale(const ref_act_dropout *d, uint64_t index)
{
    if (!d || d->p <= 0.0f) return 1.0;
    return dropout_uniform(d->seed, d->step, d->site, index) < (double)d->p
               ? 0.0
               : 1.0 / (1.0 - (double)d->p);
}

static double act_value(double x, ref_activation act)
{
    if (act == REF_ACT_GELU) return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    return x > 0.0 ? x : 0.0;
}

/* d/dx of x Phi(x) = Phi(x) + x phi(x); ReLU'(0) = 0. */
static double act_grad(double x, ref_activation act)
{
    const double inv_sqrt_2pi = 0.39894228040143267794;
    if (act == REF_ACT_GELU)
        return 0.5 * (1.0 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) * inv_sqrt_2pi;
    return x > 0.0 ? 1.0 : 0.0;
}

void ref_bias_act_forward(double *out, const double *inp, const double *bias, size_t N, size_t C,
                          ref_activation act, const ref_act_dropout *dropout)
{
    for (size_t r = 0; r < N; r++)
        for (size_t c = 0; c < C; c++) {
            const size_t i = r * C + c;
            out[i] = act_value(inp[i] + bias[c], act) * ref_act_dropout_scale(dropout, i);
        }
}

void ref_bias_act_backward(double *dinp, double *dbias, const double *dout, const double *inp,
                           const double *bias, size_t N, size_t C, ref_activation act,
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
