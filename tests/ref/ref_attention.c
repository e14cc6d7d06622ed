/* Reference multi-head attention in double (see ref_attention.h). */
#include "ref_attention.h"

#include <math.h>

/* ------------------------------------------------------------------------- */
/* Dropout mask: a private copy of cl/common.h's Philox4x32-10 and            */
/* dropout_uniform. TODO(merge): replaced by tests/ref/ref_philox.h, written  */
/* on another branch at the same time.                                        */
/* ------------------------------------------------------------------------- */

static void ref_attn_philox(uint32_t c[4], uint32_t k0, uint32_t k1)
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

/* 0 when element `index` of the site is dropped, 1/(1-p) when kept. */
static double ref_attn_dropout_scale(const ref_attention_dropout *d, uint64_t index)
{
    if (!d || d->p <= 0.0f) return 1.0;
    uint32_t c[4] = {(uint32_t)(index >> 2), (uint32_t)(index >> 34), d->site, d->step};
    ref_attn_philox(c, (uint32_t)d->seed, (uint32_t)(d->seed >> 32));
    const double u = (double)(c[index & 3] >> 8) * (1.0 / 16777216.0);
    return u < (double)d->p ? 0.0 : 1.0 / (1.0 - (double)d->p);
}

/* ------------------------------------------------------------------------- */

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
                    pd[j] = p[j] * ref_attn_dropout_scale(dropout, row * Tk + j);
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
                g *= ref_attn_dropout_scale(dropout, row * Tk + j);
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
