/* Conformance of multi-head attention, every tensor guarded: the forward
 * (output, probabilities, probabilities after dropout) and the backward (dQ,
 * dK, dV) against the reference, for self-, causal, cross- and decoding
 * attention (Tk_cap > Tk, q_pos0 > 0) with any key padding. Also: the
 * outputs pre-filled with junk that must be overwritten, rows >= Tk of dK and
 * dV left alone, fully padded batches exactly 0 (never NaN), inputs
 * unchanged, and a rerun (backward, then forward) giving the same bits (the
 * gradients are overwritten, not added to). `clformer check` runs padded
 * self-attention, causal attention over a key cache and cross-attention with
 * dropout; test_attention runs many more cases. Every case runs on the
 * unfused path (probabilities saved) and on the fused one (row statistics
 * saved; the same output and gradients are expected, dropout mask included),
 * some with grouped-query attention (H_kv < H): the reference repeats each
 * key/value head for its query heads and sums their dK and dV back. Fused
 * results are named "attention_tiled_*" where the tiled kernels of GPUs run
 * (cl/flash_attention_tiled.cl), "attention_fused_*" where the per-row ones
 * do. */
#include "conf_block.h"
#include "conformance.h"
#include "ops.h"
#include "ref_attention.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What rows >= Tk of dK and dV hold before the backward; it must stay. */
#define UNTOUCHED 777.0f

/* The failing comparison, or among passing ones the one with the largest NMSE. */
static ref_cmp worst_of(const ref_cmp *c, size_t n)
{
    ref_cmp w = c[0];
    for (size_t i = 1; i < n; i++)
        if ((w.pass && !c[i].pass) || (w.pass == c[i].pass && c[i].nmse > w.nmse)) w = c[i];
    return w;
}

static ref_cmp failed(ref_cmp c, const char *why)
{
    c.pass = false;
    c.why = why;
    return c;
}

/* Rows < Tk of each (b, h) block of a (B, H_kv, Tk_cap, dh) tensor, packed. */
static void live_rows_f(float *dst, const float *src, const cf_attention_shape *s)
{
    for (size_t bh = 0; bh < s->B * cf_attention_kv_heads(s); bh++)
        memcpy(dst + bh * s->Tk * s->dh, src + bh * s->Tk_cap * s->dh, s->Tk * s->dh * 4);
}
static void live_rows_d(double *dst, const double *src, const cf_attention_shape *s)
{
    for (size_t bh = 0; bh < s->B * cf_attention_kv_heads(s); bh++)
        memcpy(dst + bh * s->Tk * s->dh, src + bh * s->Tk_cap * s->dh, s->Tk * s->dh * 8);
}

/* Grouped-query attention in the reference, which has a key/value head per
 * query head: `per_query` (B, H, rows, dh) repeats each head of `shared`
 * (B, H/G, rows, dh) for its G query heads (G = 1: a copy). */
static void repeat_kv(double *per_query, const double *shared, size_t B, size_t H, size_t G,
                      size_t rows, size_t dh)
{
    for (size_t bh = 0; bh < B * H; bh++) {
        const size_t kv = bh / H * (H / G) + bh % H / G;
        memcpy(per_query + bh * rows * dh, shared + kv * rows * dh, rows * dh * 8);
    }
}

/* ... and its gradient: `shared` = the sum over each group of `per_query`. */
static void sum_kv(double *shared, const double *per_query, size_t B, size_t H, size_t G,
                   size_t rows, size_t dh)
{
    memset(shared, 0, B * (H / G) * rows * dh * 8);
    for (size_t bh = 0; bh < B * H; bh++) {
        const size_t kv = bh / H * (H / G) + bh % H / G;
        for (size_t e = 0; e < rows * dh; e++)
            shared[kv * rows * dh + e] += per_query[bh * rows * dh + e];
    }
}

/* Whether rows >= Tk of every head block of x still hold UNTOUCHED. In
 * 16-bit runs the op rounds the whole dK and dV blocks in place, rows >= Tk
 * included (runtime/ops/ops_attention.c): they must then hold UNTOUCHED
 * rounded (777 is no bf16 value: 776), nothing else. */
static bool dead_rows_untouched(const cf_ctx *ctx, const float *x, const cf_attention_shape *s)
{
    const size_t block = s->Tk_cap * s->dh;
    const float want = conf_round_value(ctx, UNTOUCHED);
    for (size_t bh = 0; bh < s->B * cf_attention_kv_heads(s); bh++)
        for (size_t e = s->Tk * s->dh; e < block; e++)
            if (x[bh * block + e] != want) return false;
    return true;
}

/* Whether the head blocks of the fully padded batches [b0, b1) of x (per
 * batch H blocks of `block` elements) are exactly 0. */
static bool padded_batches_zero(const float *x, size_t b0, size_t b1, size_t H, size_t block)
{
    for (size_t i = b0 * H * block; i < b1 * H * block; i++)
        if (x[i] != 0.0f) return false;
    return true;
}

/* Key ids (B x key_ld, key_ld = Tk + 3): random non-pad ids, then the case's
 * padding (0); the ids past Tk are 0 or 1 and must be ignored. */
static void make_keys(const conf_attention_case *c, int32_t *keys, size_t key_ld, ref_rng *r)
{
    for (size_t b = 0; b < c->B; b++)
        for (size_t j = 0; j < key_ld; j++) {
            int32_t id = 4 + (int32_t)(ref_rng_next(r) % 1000);
            const size_t len = c->Tk - b * c->Tk / (2 * c->B);
            switch (c->keys) {
            case CONF_KEYS_RIGHT_PAD: if (j >= len) id = 0; break;
            case CONF_KEYS_RANDOM_PAD: if (ref_rng_next(r) % 5 == 0) id = 0; break;
            case CONF_KEYS_ONE_EMPTY: if (j >= len || b == 1) id = 0; break;
            case CONF_KEYS_ALL_EMPTY: id = 0; break;
            default: break;
            }
            if (j >= c->Tk) id = (int32_t)(ref_rng_next(r) % 2);
            keys[b * key_ld + j] = id;
        }
}

static bool same_bits(const conf_block *b, const float *first, size_t t)
{
    return memcmp(conf_block_out(b, t), first + b->off[t], b->len[t] * 4) == 0;
}

enum { Q, K, V, DO, KEYS, OUT, P, PD, DQ, DK, DV, DP, N_T };

/*
 * 16-bit runs: what roundings inside the op carry into its stored outputs,
 * per element, from the reference (u: 2^-8 bf16, 2^-11 fp16; a = 1/sqrt(dh);
 * PD the probabilities after dropout, P before). The outputs' own rounding is
 * in rtol; these are the intermediate values the op stores and reads again:
 *   materialised path: P and PD are stored before O = PD V reads PD, so O
 *     carries u (PD |V|); the backward reads the stored PD for dV = PD^T dO
 *     (u (PD^T |dO|)) and the stored P for dS = P (g - D), D_i = sum_k P_ik g_ik
 *     (g = dropout's backward of dO V^T, |g| <= |dO V^T| / (1 - p)), and stores
 *     dS before dQ = a dS K, dK = a dS^T Q read it: with E_ij = u (2 |dS_ij| +
 *     P_ij sum_k P_ik |g_ik|), dQ carries a (E |K|), dK a (E^T |Q|);
 *   fused path: only the backward's D_i = dO_i . O_i reads a stored value, the
 *     output: dD_i <= u sum_c |dO_ic O_ic|, and dS_ij = P_ij (g_ij - D_i) carries
 *     P_ij dD_i into dQ (a sum_j P_ij dD_i |K_j|) and dK (a sum_i P_ij dD_i |Q_i|).
 * dk and dv are packed like live_rows_d (rows < Tk).
 */
static void carried_roundings(const conf_attention_case *c, const cf_attention_shape *s,
                              double *const *d, double u, double *out, double *dq, double *dk,
                              double *dv)
{
    const size_t Tq = s->Tq, Tk = s->Tk, dh = s->dh, cap = s->Tk_cap;
    const double a = 1.0 / sqrt((double)dh), drop_scale = c->p > 0.0f ? 1.0 / (1.0 - c->p) : 1.0;
    const double *pd_all = d[c->fused || !(c->p > 0.0f || c->separate_drop) ? P : PD];
    memset(out, 0, s->B * s->H * Tq * dh * sizeof *out);
    memset(dq, 0, s->B * s->H * Tq * dh * sizeof *dq);
    memset(dk, 0, s->B * s->H * Tk * dh * sizeof *dk);
    memset(dv, 0, s->B * s->H * Tk * dh * sizeof *dv);
    for (size_t bh = 0; bh < s->B * s->H; bh++) {
        const double *P_ = d[P] + bh * Tq * Tk, *PD_ = pd_all + bh * Tq * Tk,
                     *dS = d[DP] + bh * Tq * Tk, *q = d[Q] + bh * Tq * dh,
                     *k = d[K] + bh * cap * dh, *v = d[V] + bh * cap * dh,
                     *o = d[OUT] + bh * Tq * dh, *dO = d[DO] + bh * Tq * dh;
        double *eo = out + bh * Tq * dh, *eq = dq + bh * Tq * dh, *ek = dk + bh * Tk * dh,
               *ev = dv + bh * Tk * dh;
        for (size_t i = 0; i < Tq; i++) {
            double pg = 0.0, dD = 0.0; /* sum_k P_ik |g_ik|; the fused path's dD_i */
            for (size_t x = 0; x < dh; x++) dD += fabs(dO[i * dh + x] * o[i * dh + x]);
            dD *= u;
            for (size_t j = 0; j < Tk && !c->fused; j++) {
                double g = 0.0;
                for (size_t x = 0; x < dh; x++) g += dO[i * dh + x] * v[j * dh + x];
                pg += P_[i * Tk + j] * fabs(g) * drop_scale;
            }
            for (size_t j = 0; j < Tk; j++) {
                const double p = P_[i * Tk + j], pd = PD_[i * Tk + j];
                const double e = c->fused ? p * dD : u * (2.0 * fabs(dS[i * Tk + j]) + p * pg);
                for (size_t x = 0; x < dh; x++) {
                    if (!c->fused) {
                        eo[i * dh + x] += u * pd * fabs(v[j * dh + x]);
                        ev[j * dh + x] += u * pd * fabs(dO[i * dh + x]);
                    }
                    eq[i * dh + x] += a * e * fabs(k[j * dh + x]);
                    ek[j * dh + x] += a * e * fabs(q[i * dh + x]);
                }
            }
        }
    }
}

clformer_status conf_attention_run(cf_ctx *ctx, const conf_attention_case *c, conf_sink sink,
                                   void *user)
{
    const size_t key_ld = c->Tk + 3, H_kv = c->H_kv ? c->H_kv : c->H, G = c->H / H_kv;
    const cf_attention_shape s = {c->B,      c->H,      c->dh,     c->Tq,  c->Tk,
                                  c->Tk_cap, c->q_pos0, c->causal, key_ld, H_kv};
    /* the reference's shape: a key/value head per query head (repeat_kv) */
    cf_attention_shape s_q = s;
    s_q.H_kv = 0;
    const size_t BH = s.B * s.H, nq = BH * s.Tq * s.dh, nk = s.B * H_kv * s.Tk_cap * s.dh,
                 np = BH * s.Tq * s.Tk, nlive = s.B * H_kv * s.Tk * s.dh;
    const size_t nk_q = BH * s.Tk_cap * s.dh, nlive_q = BH * s.Tk * s.dh;
    /* fused: P holds the row statistics, PD is unused, DP is (B, H, Tq) */
    const size_t nl = 2 * BH * s.Tq, n_p = c->fused ? nl : np, n_pd = c->fused ? 1 : np;
    const size_t n[N_T] = {nq, nk, nk, nq, s.B * key_ld, nq, n_p, n_pd, nq, nk, nk, n_p};
    const bool active = c->p > 0.0f, separate = !c->fused && (active || c->separate_drop);
    conf_block b = {0};
    for (int i = 0; i < N_T; i++) conf_block_add(&b, n[i]);
    double *d[N_T] = {0}; /* the reference's tensors, by the same roles */
    int32_t *keys = malloc(n[KEYS] * 4 + 4);
    float *live = malloc(nlive * 4 + 4), *first = NULL;
    /* staging for any input (Q, K, V, dO) and for the key/value heads' sums */
    double *live64 = malloc(nlive * 8 + 8), *shared = malloc((nq > nk_q ? nq : nk_q) * 8 + 8);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    bool ok = keys && live && live64 && shared && (first = malloc(b.total * 4));
    const size_t n_ref[N_T] = {nq, nk_q, nk_q, nq, 0, nq, np, np, nq, nk_q, nk_q, np};
    for (int i = 0; i < N_T && ok; i++)
        if (i != KEYS) ok = (d[i] = malloc(n_ref[i] * 8 + 8)) != NULL;
    if (!ok) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(c->seed);
    for (int i = Q; i <= DO; i++) {
        ref_fill_uniform(&r, conf_block_init(&b, i), d[i], n[i], -1, 1);
        float *x = conf_block_init(&b, i);
        conf_round(ctx, x, n[i]); /* 16-bit runs: Q, K, V and dO as stored */
        for (size_t e = 0; e < n[i]; e++) shared[e] = x[e];
        if (i == K || i == V) repeat_kv(d[i], shared, s.B, s.H, G, s.Tk_cap, s.dh);
        else memcpy(d[i], shared, n[i] * 8);
    }
    make_keys(c, keys, key_ld, &r);
    memcpy(conf_block_init(&b, KEYS), keys, n[KEYS] * 4); /* int32 bit for bit */
    for (int i = OUT; i <= PD; i++) conf_block_init_fill(&b, i, NAN); /* overwritten */
    conf_block_init_fill(&b, DQ, -3.0f);                              /* overwritten, not += */
    conf_block_init_fill(&b, DK, UNTOUCHED);
    conf_block_init_fill(&b, DV, UNTOUCHED);
    if ((st = conf_block_upload(&b))) goto done;

    const cf_dropout drop = {c->p, 0xfeedbeef12ULL + c->seed, 5, 21};
    const cf_dropout *dev_drop = active ? &drop : NULL;
    const ref_attention_dropout rdrop = {c->p, drop.seed, drop.step, drop.site};
    const ref_attention_shape rs = {s.B,      s.H,      s.dh,     s.Tq,  s.Tk,
                                    s.Tk_cap, s.q_pos0, s.causal, key_ld}; /* per query head */
    const cf_view key_view =
        c->keys == CONF_KEYS_NONE ? cf_view_at(NULL, 0) : conf_block_view(&b, KEYS);
    const cf_view none = cf_view_at(NULL, 0);
    const cf_attention_saved saved =
        c->fused ? (cf_attention_saved){none, none, conf_block_view(&b, P),
                                        conf_block_view(&b, OUT), key_view}
                 : (cf_attention_saved){conf_block_view(&b, P),
                                        conf_block_view(&b, separate ? PD : P), none, none,
                                        none};
#define V_(i) conf_block_view(&b, i)
    double ms[2] = {0, 0};
    for (int run = 0; run < 2; run++) { /* then a rerun: backward first, forward after */
        for (int dir = run == 0 ? 0 : 1, k = 0; k < 2; k++, dir ^= 1) {
            const double t0 = conf_now_ms();
            st = dir == 0 ? cf_attention_forward(ctx, V_(OUT), &saved, V_(Q), V_(K), V_(V),
                                                 key_view, &s, dev_drop)
                          : cf_attention_backward(ctx, V_(DQ), V_(DK), V_(DV), V_(DP), V_(DO),
                                                  &saved, V_(Q), V_(K), V_(V), &s, dev_drop);
            if (st || (st = cf_finish(ctx))) goto done;
            if (run == 0) ms[dir] = conf_now_ms() - t0;
        }
        if ((st = conf_block_read(&b))) goto done;
        if (run == 0) memcpy(first, b.host, b.total * 4);
    }
#undef V_
    ref_attention_forward(d[OUT], d[P], d[PD], d[Q], d[K], d[V],
                          c->keys == CONF_KEYS_NONE ? NULL : keys, &rs, &rdrop);
    ref_attention_backward(d[DQ], d[DK], d[DV], d[DP], d[DO], d[P], d[PD], d[Q], d[K], d[V], &rs,
                           &rdrop);
    /* dK and dV of the key/value heads: their query heads' sums */
    for (int i = DK; i <= DV; i++) {
        sum_kv(shared, d[i], s.B, s.H, G, s.Tk_cap, s.dh);
        memcpy(d[i], shared, nk * 8);
    }

    /* judged on the first run's numbers (the rerun must equal them) */
    const float *out = first + b.off[OUT], *prob = first + b.off[P], *dq = first + b.off[DQ];
    const double u = conf_unit_roundoff(ctx);
    double *ex[4] = {NULL, NULL, NULL, NULL}; /* carried into out, dq, dk, dv (16-bit runs) */
    if (u > 0.0) {
        for (int i = 0; i < 4; i++)
            if (!(ex[i] = malloc((i < 2 ? nq : nlive_q) * sizeof(double) + 8))) {
                for (int j = 0; j < i; j++) free(ex[j]);
                st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
                goto done;
            }
        carried_roundings(c, &s_q, d, u, ex[0], ex[1], ex[2], ex[3]);
        for (int i = 2; i < 4; i++) { /* a key/value head carries its query heads' */
            sum_kv(shared, ex[i], s.B, s.H, G, s.Tk, s.dh);
            memcpy(ex[i], shared, nlive * 8);
        }
    }
    ref_cmp fwd[3] = {conf_compare_stored(ctx, out, d[OUT], nq, REF_RULE_GRAD, NULL,
                                          c->fused ? NULL : ex[0])};
    size_t n_fwd = 1;
    if (!c->fused)
        fwd[n_fwd++] = conf_compare_stored(ctx, prob, d[P], np, REF_RULE_GRAD, NULL, NULL);
    if (separate)
        fwd[n_fwd++] = conf_compare_stored(ctx, first + b.off[PD], d[PD], np, REF_RULE_GRAD, NULL,
                                           NULL);
    ref_cmp f = worst_of(fwd, n_fwd);
    ref_cmp bwd[3];
    bwd[0] = conf_compare_stored(ctx, dq, d[DQ], nq, REF_RULE_GRAD, NULL, ex[1]);
    for (int i = 1; i < 3; i++) {
        live_rows_f(live, first + b.off[DQ + i], &s);
        live_rows_d(live64, d[DQ + i], &s);
        bwd[i] = conf_compare_stored(ctx, live, live64, nlive, REF_RULE_GRAD, NULL,
                                     i == 2 && c->fused ? NULL : ex[1 + i]);
    }
    for (int i = 0; i < 4; i++) free(ex[i]);
    ref_cmp g = worst_of(bwd, 3);
    if (!dead_rows_untouched(ctx, first + b.off[DK], &s) ||
        !dead_rows_untouched(ctx, first + b.off[DV], &s))
        g = failed(g, "the backward wrote rows >= Tk of dK or dV");
    if (c->keys == CONF_KEYS_ONE_EMPTY || c->keys == CONF_KEYS_ALL_EMPTY) {
        const bool one = c->keys == CONF_KEYS_ONE_EMPTY; /* batch 1 only, else all */
        const size_t b0 = one ? 1 : 0, b1 = one ? 2 : s.B;
        if (!padded_batches_zero(out, b0, b1, s.H, s.Tq * s.dh) ||
            (!c->fused && !padded_batches_zero(prob, b0, b1, s.H, s.Tq * s.Tk)))
            f = failed(f, "a fully padded batch's output or probabilities are not 0");
        bool zero = padded_batches_zero(dq, b0, b1, s.H, s.Tq * s.dh);
        for (int i = 1; i < 3; i++) {
            live_rows_f(live, first + b.off[DQ + i], &s);
            zero = zero && padded_batches_zero(live, b0, b1, H_kv, s.Tk * s.dh);
        }
        if (!zero) g = failed(g, "a fully padded batch's gradients are not 0");
    }
    if (!same_bits(&b, first, OUT) || !same_bits(&b, first, P) || !same_bits(&b, first, PD))
        f = failed(f, "a second forward gave other bits");
    if (!same_bits(&b, first, DQ) || !same_bits(&b, first, DK) || !same_bits(&b, first, DV))
        g = failed(g, "a second backward gave other bits (added to the gradients?)");
    bool inputs_kept = true;
    for (int i = Q; i <= KEYS; i++) inputs_kept = inputs_kept && conf_block_unchanged(&b, i);
    if (!inputs_kept) f = failed(f, "attention changed an input"), g = failed(g, f.why);

    char op[64], shape[96];
    char kv[24] = ""; /* "/" and any size_t */
    if (G > 1) snprintf(kv, sizeof kv, "/%zu", H_kv);
    snprintf(shape, sizeof shape, "B%zu H%zu%s Tq%zu Tk%zu/%zu dh%zu q0=%zu", s.B, s.H, kv, s.Tq,
             s.Tk, s.Tk_cap, s.dh, s.q_pos0);
    const char *variant = c->causal ? (active ? "_causal_dropout" : "_causal")
                                    : (active ? "_dropout" : "");
    const char *path = !c->fused ? "" : cf_attention_tiled(ctx, s.dh) ? "_tiled" : "_fused";
    snprintf(op, sizeof op, "attention%s_forward%s", path, variant);
    conf_emit(sink, user, op, shape, conf_guarded(f, &b), ms[0]);
    snprintf(op, sizeof op, "attention%s_backward%s", path, variant);
    conf_emit(sink, user, op, shape, conf_guarded(g, &b), ms[1]);
done:
    conf_block_free(&b);
    for (int i = 0; i < N_T; i++) free(d[i]);
    free(keys), free(live), free(live64), free(shared), free(first);
    return st;
}

clformer_status conf_attention(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    /* {B, H, dh, Tq, Tk, Tk_cap, q_pos0, causal, keys, p, separate_drop, seed, fused, H_kv} */
    static const conf_attention_case small[5] = {
        /* padded self-attention */
        {2, 2, 8, 7, 7, 7, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false, 1, false, 0},
        /* causal, queries 4..6 over a key cache */
        {2, 1, 8, 3, 7, 9, 4, true, CONF_KEYS_RIGHT_PAD, 0.0f, false, 2, false, 0},
        /* cross-attention, dropout */
        {1, 2, 8, 5, 7, 7, 0, false, CONF_KEYS_RIGHT_PAD, 0.1f, true, 3, false, 0},
        /* grouped-query: causal, two query heads per key/value head */
        {2, 4, 8, 7, 7, 7, 0, true, CONF_KEYS_NONE, 0.0f, false, 4, false, 2},
        /* multi-query over a key cache, dropout */
        {2, 3, 8, 3, 7, 9, 4, true, CONF_KEYS_RIGHT_PAD, 0.1f, true, 5, false, 1},
    };
    static const conf_attention_case full[5] = {
        {2, 4, 64, 61, 61, 61, 0, false, CONF_KEYS_RIGHT_PAD, 0.0f, false, 1, false, 0},
        {2, 2, 80, 7, 93, 96, 86, true, CONF_KEYS_RIGHT_PAD, 0.0f, false, 2, false, 0},
        {3, 2, 64, 61, 93, 93, 0, false, CONF_KEYS_RIGHT_PAD, 0.1f, true, 3, false, 0},
        {2, 8, 64, 61, 61, 61, 0, true, CONF_KEYS_NONE, 0.0f, false, 4, false, 2},
        {2, 4, 32, 5, 90, 96, 85, true, CONF_KEYS_NONE, 0.1f, true, 5, false, 1},
    };
    for (int fused = 0; fused < 2; fused++) /* both paths, the same cases */
        for (int i = 0; i < 5; i++) {
            conf_attention_case c = quick ? small[i] : full[i];
            c.fused = fused;
            CF_TRY(conf_attention_run(ctx, &c, sink, user));
        }
    return CLFORMER_OK;
}

CONF_OP(attention) = {"attention", "~split_heads ~merge_heads attention_softmax attention_softmax_backward flash_attention_forward|flash_attention_forward_simple|flash_tiled_forward flash_attention_backward_dq|flash_attention_backward_dq_simple|flash_tiled_backward_dq flash_attention_backward_dkv|flash_attention_backward_dkv_simple|flash_tiled_backward_dkv",
    "cf_attention_forward, cf_attention_backward (materialised, fused per row and tiled), cf_split_heads, cf_merge_heads",
    "ref_attention_forward, ref_attention_backward, ref_split_heads, ref_merge_heads (reference/ref_attention.c)",
    "gradient rule for the output and every gradient",
    conf_attention, NULL,
    "test_attention (split_heads, merge_heads, many more cases and head sizes, determinism, argument errors, which fused kernels run: fused_kernels_follow_the_profile); finite differences of the reference: test_ref_attention", true};
