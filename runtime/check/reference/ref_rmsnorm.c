/* Double-precision reference RMSNorm (ref_rmsnorm.h). */
#include "ref_rmsnorm.h"

#include <math.h>

/* y = x * rstd * w, rstd = 1 / sqrt(mean(x^2) + eps), per row. */
void ref_rmsnorm_forward(double *y, double *rstd, const double *x, const double *w, size_t N,
                         size_t C, double eps)
{
    for (size_t r = 0; r < N; r++) {
        const double *xr = x + r * C;
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += xr[c] * xr[c];
        const double rs = 1.0 / sqrt(s / (double)C + eps);
        for (size_t c = 0; c < C; c++) y[r * C + c] = xr[c] * rs * w[c];
        rstd[r] = rs;
    }
}

/* dx (+)= rs * g * w - x * rs^3 * sum(g * w * x) / C; dw += sum_rows(g * x * rs). */
void ref_rmsnorm_backward(double *dx, double *dw, const double *g, const double *x,
                          const double *w, const double *rstd, size_t N, size_t C,
                          bool accumulate)
{
    for (size_t r = 0; r < N; r++) {
        const double *xr = x + r * C, *gr = g + r * C, rs = rstd[r];
        double s = 0.0;
        for (size_t c = 0; c < C; c++) s += gr[c] * w[c] * xr[c];
        const double k = rs * rs * rs * s / (double)C;
        for (size_t c = 0; c < C; c++) {
            const double v = rs * gr[c] * w[c] - xr[c] * k;
            dx[r * C + c] = accumulate ? dx[r * C + c] + v : v;
            dw[c] += gr[c] * xr[c] * rs;
        }
    }
}
