/* Embedding + positions in double, written as directly as the formulas. */
#include "ref_embedding.h"

#include <math.h>

double ref_sinusoid(size_t pos, size_t c, size_t C)
{
    const double w = pow(10000.0, -(double)(c & ~(size_t)1) / (double)C);
    return c % 2 == 0 ? sin((double)pos * w) : cos((double)pos * w);
}

void ref_embedding_forward(double *out, const int32_t *tokens, const double *table,
                           const double *pos_table, size_t B, size_t T, size_t C, double scale,
                           const ref_dropout *dropout)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const size_t row = b * T + t;
            const double *e = table + (size_t)tokens[row] * C;
            for (size_t c = 0; c < C; c++) {
                const double p = pos_table ? pos_table[t * C + c] : ref_sinusoid(t, c, C);
                const size_t i = row * C + c;
                out[i] = (e[c] * scale + p) * ref_dropout_scale(dropout, i);
            }
        }
}

void ref_embedding_backward(double *dtable, double *dpos_table, const double *dout,
                            const int32_t *tokens, size_t B, size_t T, size_t C, double scale,
                            const ref_dropout *dropout)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const size_t row = b * T + t;
            double *de = dtable + (size_t)tokens[row] * C;
            for (size_t c = 0; c < C; c++) {
                const size_t i = row * C + c;
                const double g = dout[i] * ref_dropout_scale(dropout, i);
                de[c] += scale * g;
                if (dpos_table) dpos_table[t * C + c] += g;
            }
        }
}
