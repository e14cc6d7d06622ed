/* The cross-entropy by its definition, in double: the loss as the sum
 * over classes of q_c (logsumexp - x_c), with no rearrangement, so that it
 * checks the kernel's rearranged form rather than repeating it. */
#include "ref_loss.h"

#include <math.h>

/* log sum_c exp(x_c), shifted by the maximum. */
static double logsumexp(const double *x, size_t V)
{
    double m = -INFINITY, s = 0.0;
    for (size_t c = 0; c < V; c++) m = fmax(m, x[c]);
    for (size_t c = 0; c < V; c++) s += exp(x[c] - m);
    return m + log(s);
}

void ref_cross_entropy(double *losses, double *dlogits, const double *logits,
                       const int32_t *targets, size_t N, size_t V, double label_smoothing,
                       int ignore_index, double grad_scale)
{
    const double ls = label_smoothing;
    for (size_t r = 0; r < N; r++) {
        const double *x = logits + r * V;
        double *dx = dlogits ? dlogits + r * V : NULL;
        const int32_t y = targets[r];
        if (y == ignore_index) {
            losses[r] = 0.0;
            if (dx)
                for (size_t c = 0; c < V; c++) dx[c] = 0.0;
            continue;
        }
        const double lse = logsumexp(x, V);
        double loss = 0.0;
        for (size_t c = 0; c < V; c++) {
            const double q = (1.0 - ls) * ((int32_t)c == y) + ls / (double)V;
            loss += q * (lse - x[c]);
        }
        losses[r] = loss;
        if (dx)
            for (size_t c = 0; c < V; c++) {
                const double q = (1.0 - ls) * ((int32_t)c == y) + ls / (double)V;
                dx[c] = grad_scale * (exp(x[c] - lse) - q);
            }
    }
}

void ref_log_softmax_rows(double *out, const double *logits, size_t N, size_t V)
{
    for (size_t r = 0; r < N; r++) {
        const double lse = logsumexp(logits + r * V, V);
        for (size_t c = 0; c < V; c++) out[r * V + c] = logits[r * V + c] - lse;
    }
}

void ref_argmax_rows(int32_t *out, const double *logits, size_t N, size_t V)
{
    for (size_t r = 0; r < N; r++) {
        const double *x = logits + r * V;
        size_t best = 0;
        for (size_t c = 1; c < V; c++) {
            if (isnan(x[best])) break; /* the first NaN wins */
            if (isnan(x[c]) || x[c] > x[best]) best = c;
        }
        out[r] = (int32_t)best;
    }
}
