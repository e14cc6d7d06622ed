/* Reference multi-head attention in double (see ref_attention.h). */
#include "ref_attention.h"

#include <math.h>

void ref_split_heads(double *dst, const double *src, size_t ld, size_t B, size_t T, size_t H,
                     size_t dh)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                for (size_t j = 0; j < dh; j++)
                    dst[((b * H + h) * T + t) * dh + j] = src[(b * T + t) * ld + h * dh + j];
}

void ref_merge_heads(double *dst, size_t ld, const double *src, size_t B, size_t T, size_t H,
                     size_t dh)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                for (size_t j = 0; j < dh; j++)
                    dst[(b * T + t) * ld + h * dh + j] = src[((b * H + h) * T + t) * dh + j];
}

static bool visible(const int32_t *key_tokens, const ref_attention_shape *s, size_t b, size_t t,
                    size_t j)
{
    if (s->causal && j > s->q_pos0 + t) return false;
    return !key_tokens || key_tokens[b * s->key_ld + j] != 0;
}

void ref_attention_forward(double *ctx_h, double *probs, double *probs_drop, const double *qh,
                           const double *kh, const double *vh, const int32_t *key_tokens,
                           const ref_attention_shape *s, const ref_attention_dropout *dropout)
{
    const size_t Tq = s->Tq, Tk = s->Tk, dh = s->dh;
    const double scale = 1.0 / sqrt((double)dh);
    for (size_t b = 0; b < s->B; b++)
        for (size_t h = 0; h < s->H; h++) {
            const size_t bh = b * s->H + h;
            const double *q = qh + bh * Tq * dh, *k = kh + bh * s->Tk_cap * dh,
                         *v = vh + bh * s->Tk_cap * dh;
            for (size_t t = 0; t < Tq; t++) {
                const size_t row = bh * Tq + t;
                double *p = probs + row * Tk, *pd = probs_drop + row * Tk;
                double m = -INFINITY;
                for (size_t j = 0; j < Tk; j++) {
                    double dot = 0.0;
                    for (size_t i = 0; i < dh; i++) dot += q[t * dh + i] * k[j * dh + i];
                    p[j] = visible(key_tokens, s, b, t, j) ? dot * scale : -INFINITY;
                    m = fmax(m, p[j]);
                }
                double sum = 0.0;
                for (size_t j = 0; j < Tk; j++) {
                    p[j] = p[j] == -INFINITY ? 0.0 : exp(p[j] - m);
                    sum += p[j];
                }
                for (size_t j = 0; j < Tk; j++) {
                    if (sum > 0.0) p[j] /= sum;
                    pd[j] = p[j] * ref_dropout_scale(dropout, row * Tk + j);
                }
                for (size_t i = 0; i < dh; i++) {
                    double acc = 0.0;
                    for (size_t j = 0; j < Tk; j++) acc += pd[j] * v[j * dh + i];
                    ctx_h[row * dh + i] = acc;
                }
            }
        }
}

void ref_attention_backward(double *dqh, double *dkh, double *dvh, double *dprobs,
                            const double *dctx_h, const double *probs, const double *probs_drop,
                            const double *qh, const double *kh, const double *vh,
                            const ref_attention_shape *s, const ref_attention_dropout *dropout)
{
    const size_t Tq = s->Tq, Tk = s->Tk, dh = s->dh, cap = s->Tk_cap;
    const double scale = 1.0 / sqrt((double)dh);
    for (size_t bh = 0; bh < s->B * s->H; bh++) {
        const double *q = qh + bh * Tq * dh, *k = kh + bh * cap * dh, *v = vh + bh * cap * dh;
        const double *dO = dctx_h + bh * Tq * dh;
        const double *P = probs + bh * Tq * Tk, *Pd = probs_drop + bh * Tq * Tk;
        double *dS = dprobs + bh * Tq * Tk;
        double *dq = dqh + bh * Tq * dh, *dk = dkh + bh * cap * dh, *dv = dvh + bh * cap * dh;
        for (size_t j = 0; j < Tk; j++)
            for (size_t i = 0; i < dh; i++) {
                double acc = 0.0;
                for (size_t t = 0; t < Tq; t++) acc += Pd[t * Tk + j] * dO[t * dh + i];
                dv[j * dh + i] = acc;
            }
        for (size_t t = 0; t < Tq; t++) {
            const size_t row = bh * Tq + t;
            double dot = 0.0;
            for (size_t j = 0; j < Tk; j++) {
                double g = 0.0; /* dP_drop, then dP */
                for (size_t i = 0; i < dh; i++) g += dO[t * dh + i] * v[j * dh + i];
                g *= ref_dropout_scale(dropout, row * Tk + j);
                dS[t * Tk + j] = g;
                dot += g * P[t * Tk + j];
            }
            for (size_t j = 0; j < Tk; j++)
                dS[t * Tk + j] = P[t * Tk + j] * (dS[t * Tk + j] - dot) * scale;
        }
        for (size_t t = 0; t < Tq; t++)
            for (size_t i = 0; i < dh; i++) {
                double acc = 0.0;
                for (size_t j = 0; j < Tk; j++) acc += dS[t * Tk + j] * k[j * dh + i];
                dq[t * dh + i] = acc;
            }
        for (size_t j = 0; j < Tk; j++)
            for (size_t i = 0; i < dh; i++) {
                double acc = 0.0;
                for (size_t t = 0; t < Tq; t++) acc += dS[t * Tk + j] * q[t * dh + i];
                dk[j * dh + i] = acc;
            }
    }
}
