/* Reference LayerNorm in double: two passes per row, the textbook formulas. */
#include "ref_layernorm.h"

#include <math.h>

void ref_layernorm_forward(double *out, double *mean, double *rstd, const double *inp,
                           const double *weight, const double *bias, size_t N, size_t C,
                           double eps)
{
    for (size_t r = 0; r < N; r++) {
        const double *x = inp + r * C;
        double m = 0.0, v = 0.0;
        for (size_t c = 0; c < C; c++) m += x[c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++) v += (x[c] - m) * (x[c] - m);
        v /= (double)C; /* biased, as PyTorch */
        const double rs = 1.0 / sqrt(v + eps);
        for (size_t c = 0; c < C; c++) out[r * C + c] = (x[c] - m) * rs * weight[c] + bias[c];
        mean[r] = m;
        rstd[r] = rs;
    }
}

/* With g = dout * weight and xhat = (x - mean) * rstd:
 *   dx = rstd * (g - mean_c(g) - xhat * mean_c(g * xhat)). */
void ref_layernorm_backward(double *dinp, double *dweight, double *dbias, const double *dout,
                            const double *inp, const double *weight, const double *mean,
                            const double *rstd, size_t N, size_t C, bool accumulate)
{
    for (size_t r = 0; r < N; r++) {
        const double *x = inp + r * C, *dy = dout + r * C;
        double mg = 0.0, mgx = 0.0;
        for (size_t c = 0; c < C; c++) {
            const double xhat = (x[c] - mean[r]) * rstd[r];
            mg += dy[c] * weight[c];
            mgx += dy[c] * weight[c] * xhat;
            dweight[c] += dy[c] * xhat;
            dbias[c] += dy[c];
        }
        mg /= (double)C;
        mgx /= (double)C;
        for (size_t c = 0; c < C; c++) {
            const double xhat = (x[c] - mean[r]) * rstd[r];
            const double d = rstd[r] * (dy[c] * weight[c] - mg - xhat * mgx);
            dinp[r * C + c] = accumulate ? dinp[r * C + c] + d : d;
        }
    }
}
