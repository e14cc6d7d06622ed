/* Reference linear layer in double: plain triple loops. */
#include "ref_linear.h"

void ref_linear_forward(double *out, const double *inp, const double *weight, const double *bias,
                        size_t N, size_t IC, size_t OC)
{
    for (size_t n = 0; n < N; n++)
        for (size_t o = 0; o < OC; o++) {
            double acc = bias ? bias[o] : 0.0;
            for (size_t i = 0; i < IC; i++) acc += inp[n * IC + i] * weight[o * IC + i];
            out[n * OC + o] = acc;
        }
}

void ref_linear_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                         const double *inp, const double *weight, size_t N, size_t IC, size_t OC,
                         bool accumulate)
{
    for (size_t o = 0; o < OC; o++)
        for (size_t i = 0; i < IC; i++) {
            double acc = 0.0;
            for (size_t n = 0; n < N; n++) acc += dout[n * OC + o] * inp[n * IC + i];
            dweight[o * IC + i] += acc;
        }
    if (dbias)
        for (size_t o = 0; o < OC; o++)
            for (size_t n = 0; n < N; n++) dbias[o] += dout[n * OC + o];
    if (dinp)
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < IC; i++) {
                double acc = 0.0;
                for (size_t o = 0; o < OC; o++) acc += dout[n * OC + o] * weight[o * IC + i];
                dinp[n * IC + i] = accumulate ? dinp[n * IC + i] + acc : acc;
            }
}
