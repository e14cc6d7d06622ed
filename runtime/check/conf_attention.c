/* Conformance of multi-head attention: forward (output and probabilities)
 * and backward (dQ, dK, dV) for padded self-attention, causal attention with
 * a key cache (Tk_cap > Tk, q_pos0 > 0), and cross-attention with dropout. */
#include "buffer.h"
#include "conformance.h"
#include "ops.h"
#include "ref_attention.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The failing comparison, or among passing ones the one with the largest NMSE. */
static ref_cmp worst_of(const ref_cmp *c, size_t n)
{
    ref_cmp w = c[0];
    for (size_t i = 1; i < n; i++)
        if ((w.pass && !c[i].pass) || (w.pass == c[i].pass && c[i].nmse > w.nmse)) w = c[i];
    return w;
}

/* Rows < Tk of each (b, h) block of a (B, H, Tk_cap, dh) tensor, packed. */
static void live_rows_f(float *dst, const float *src, const cf_attention_shape *s)
{
    for (size_t bh = 0; bh < s->B * s->H; bh++)
        memcpy(dst + bh * s->Tk * s->dh, src + bh * s->Tk_cap * s->dh, s->Tk * s->dh * 4);
}
static void live_rows_d(double *dst, const double *src, const cf_attention_shape *s)
{
    for (size_t bh = 0; bh < s->B * s->H; bh++)
        memcpy(dst + bh * s->Tk * s->dh, src + bh * s->Tk_cap * s->dh, s->Tk * s->dh * 8);
}

/* The tensors of one check, host and device, by role. */
enum { Q, K, V, DO, OUT, P, PD, DQ, DK, DV, DP, N_T };

static clformer_status run(cf_ctx *ctx, const char *variant, cf_attention_shape s, float p,
                           conf_sink sink, void *user)
{
    const size_t BH = s.B * s.H, nq = BH * s.Tq * s.dh, nk = BH * s.Tk_cap * s.dh,
                 np = BH * s.Tq * s.Tk, nlive = BH * s.Tk * s.dh;
    const size_t n[N_T] = {nq, nk, nk, nq, nq, np, np, nq, nk, nk, np};
    float *f[N_T] = {0};
    double *d[N_T] = {0};
    cl_mem m[N_T] = {0}, keys_mem = NULL;
    int32_t *keys = calloc(s.B * s.key_ld, sizeof *keys);
    float *live = malloc(nlive * 4);
    double *live64 = malloc(nlive * 8);
    clformer_status st = CLFORMER_OK;
    bool ok = keys && live && live64;
    for (int i = 0; i < N_T && ok; i++) {
        f[i] = malloc(n[i] * 4), d[i] = malloc(n[i] * 8);
        ok = f[i] && d[i];
    }
    if (!ok) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(s.B * 131 + s.Tq * 17 + s.Tk * 7 + s.dh);
    for (int i = Q; i <= DO; i++) ref_fill_uniform(&r, f[i], d[i], n[i], -1, 1);
    /* batch b keeps its first Tk - b*Tk/(2B) keys (right padding) */
    for (size_t b = 0; b < s.B; b++)
        for (size_t j = 0; j < s.Tk; j++)
            keys[b * s.key_ld + j] = j < s.Tk - b * s.Tk / (2 * s.B) ? 4 + (int32_t)j : 0;
    for (int i = 0; i < N_T && st == CLFORMER_OK; i++)
        st = cf_buffer_alloc(ctx, n[i] ? n[i] : 1, "attention check", &m[i]);
    if (st == CLFORMER_OK) st = cf_buffer_alloc(ctx, s.B * s.key_ld, "attention keys", &keys_mem);
    for (int i = Q; i <= DO && st == CLFORMER_OK; i++) st = cf_upload(ctx, m[i], 0, f[i], n[i]);
    if (st == CLFORMER_OK) st = cf_upload(ctx, keys_mem, 0, keys, s.B * s.key_ld);
    if (st != CLFORMER_OK) goto done;

    const cf_dropout drop = {p, 0x1234abcd5678ULL, 3, 11};
    const ref_attention_dropout rdrop = {p, drop.seed, drop.step, drop.site};
    const ref_attention_shape rs = {s.B,      s.H,      s.dh,     s.Tq,    s.Tk,
                                    s.Tk_cap, s.q_pos0, s.causal, s.key_ld};
    const cf_attention_saved saved = {cf_view_at(m[P], 0), cf_view_at(m[PD], 0)};
#define V_(i) cf_view_at(m[i], 0)
    double t0 = conf_now_ms();
    st = cf_attention_forward(ctx, V_(OUT), &saved, V_(Q), V_(K), V_(V), cf_view_at(keys_mem, 0),
                              &s, &drop);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    const double ms_fwd = conf_now_ms() - t0;
    for (int i = OUT; i <= PD && st == CLFORMER_OK; i++) st = cf_download(ctx, m[i], 0, f[i], n[i]);
    if (st != CLFORMER_OK) goto done;
    ref_attention_forward(d[OUT], d[P], d[PD], d[Q], d[K], d[V], keys, &rs, &rdrop);

    char op[64], shape[96];
    snprintf(shape, sizeof shape, "B%zu H%zu Tq%zu Tk%zu/%zu dh%zu", s.B, s.H, s.Tq, s.Tk,
             s.Tk_cap, s.dh);
    const ref_cmp fwd[3] = {ref_compare_grad(f[OUT], d[OUT], nq), ref_compare_grad(f[P], d[P], np),
                            ref_compare_grad(f[PD], d[PD], np)};
    snprintf(op, sizeof op, "attention_forward%s", variant);
    conf_emit(sink, user, op, shape, worst_of(fwd, 3), ms_fwd);

    t0 = conf_now_ms();
    st = cf_attention_backward(ctx, V_(DQ), V_(DK), V_(DV), V_(DP), V_(DO), &saved, V_(Q), V_(K),
                               V_(V), &s, &drop);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    const double ms_bwd = conf_now_ms() - t0;
#undef V_
    for (int i = DQ; i <= DV && st == CLFORMER_OK; i++) st = cf_download(ctx, m[i], 0, f[i], n[i]);
    if (st != CLFORMER_OK) goto done;
    ref_attention_backward(d[DQ], d[DK], d[DV], d[DP], d[DO], d[P], d[PD], d[Q], d[K], d[V], &rs,
                           &rdrop);
    ref_cmp bwd[3];
    bwd[0] = ref_compare_grad(f[DQ], d[DQ], nq);
    for (int i = 1; i < 3; i++) {
        live_rows_f(live, f[DQ + i], &s);
        live_rows_d(live64, d[DQ + i], &s);
        bwd[i] = ref_compare_grad(live, live64, nlive);
    }
    snprintf(op, sizeof op, "attention_backward%s", variant);
    conf_emit(sink, user, op, shape, worst_of(bwd, 3), ms_bwd);
done:
    for (int i = 0; i < N_T; i++) {
        cf_buffer_free(ctx, m[i]);
        free(f[i]), free(d[i]);
    }
    cf_buffer_free(ctx, keys_mem);
    free(keys), free(live), free(live64);
    return st;
}

clformer_status conf_attention(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    /* {B, H, dh, Tq, Tk, Tk_cap, q_pos0, causal, key_ld} */
    static const cf_attention_shape small[3] = {
        {2, 2, 8, 7, 7, 7, 0, false, 7},  /* padded self-attention */
        {2, 1, 8, 3, 7, 9, 4, true, 8},   /* causal, queries 4..6 over a key cache */
        {1, 2, 8, 5, 7, 7, 0, false, 7},  /* cross-attention, dropout */
    };
    static const cf_attention_shape full[3] = {
        {2, 4, 64, 61, 61, 61, 0, false, 61},
        {2, 2, 80, 7, 93, 96, 86, true, 96},
        {3, 2, 64, 61, 93, 93, 0, false, 93},
    };
    const cf_attention_shape *s = quick ? small : full;
    CF_TRY(run(ctx, "", s[0], 0.0f, sink, user));
    CF_TRY(run(ctx, "_causal", s[1], 0.0f, sink, user));
    return run(ctx, "_dropout", s[2], 0.1f, sink, user);
}
