/* Multi-head attention, described once: its double-precision reference
 * (scaled dot-product attention under key-padding and causal masks, dropout
 * on the probabilities, the head split and merge), the checks of that
 * reference (finite differences of its backward, the masks, softmax rows,
 * dropout and head layout by their rules), its conformance cases and its
 * descriptor. The kernels are cl/attention.cl, cl/flash_attention.cl and
 * cl/flash_attention_tiled.cl, the launchers runtime/ops/ops_attention.c.
 *
 * Each case checks the forward (output, probabilities, probabilities after
 * dropout) and the backward (dQ, dK, dV) against the reference, every tensor
 * guarded, for self-, causal, cross- and decoding attention (Tk_cap > Tk,
 * q_pos0 > 0) with any key padding. Also: the outputs pre-filled with junk
 * that must be overwritten, rows >= Tk of dK and dV left alone, fully padded
 * batches exactly 0 (never NaN), inputs unchanged, and a rerun (backward,
 * then forward) giving the same bits (the gradients are overwritten, not
 * added to). Every case runs on the unfused path (probabilities saved) and
 * on the fused one (row statistics saved; the same output and gradients are
 * expected, dropout mask included), some with grouped-query attention (H_kv
 * < H): the reference repeats each key/value head for its query heads and
 * sums their dK and dV back. Fused results are named "attention_tiled_*"
 * where the tiled kernels of GPUs run, "attention_fused_*" where the per-row
 * ones do. Then which fused kernels run (attention_fused_kernels), the fused
 * backward against finite differences of the fused forward on the device
 * (attention_fused_fd), empty sizes (attention_degenerate), argument errors
 * (attention_arguments) and the head layout bit for bit (split_heads,
 * merge_heads). */
#include "conf_block.h"
#include "attention_host.h"
#include "conformance.h"
#include "gemm.h"
#include "kernel_ids.h"
#include "ops.h"
#include "ref_half.h"
#include "ref_philox.h"
#include "ref_random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- the reference, in double ---------------------------------------------------- */

/* The reference takes the ops' shape (cf_attention_shape) with a key/value
 * head per query head: it does not read H_kv (the cases repeat a shared head
 * for its query heads, repeat_kv below). Per-head tensors are (B, H, T, dh)
 * with row capacity T (Tk_cap for K, V, dK, dV); probabilities are
 * (B, H, Tq, Tk). */

/* dst (B, H, cap, dh), rows pos..pos+T-1 <- rows (b, t, h*dh + j) of src with
 * row stride ld; other rows untouched. */
static void ref_split_heads_at(double *dst, const double *src, size_t ld, size_t B, size_t T,
                               size_t H, size_t dh, size_t cap, size_t pos)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                for (size_t j = 0; j < dh; j++)
                    dst[((b * H + h) * cap + pos + t) * dh + j] = src[(b * T + t) * ld + h * dh + j];
}

/* dst (B, H, T, dh) <- rows (b, t, h*dh + j) of src with row stride ld. */
static void ref_split_heads(double *dst, const double *src, size_t ld, size_t B, size_t T,
                            size_t H, size_t dh)
{
    ref_split_heads_at(dst, src, ld, B, T, H, dh, T, 0);
}

/* dst rows (b, t, h*dh + j) with row stride ld <- src (B, H, T, dh); other
 * columns untouched. */
static void ref_merge_heads(double *dst, size_t ld, const double *src, size_t B, size_t T,
                            size_t H, size_t dh)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                for (size_t j = 0; j < dh; j++)
                    dst[(b * T + t) * ld + h * dh + j] = src[((b * H + h) * T + t) * dh + j];
}

static bool visible(const int32_t *key_tokens, const cf_attention_shape *s, size_t b, size_t t,
                    size_t j)
{
    if (s->causal && j > s->q_pos0 + t) return false;
    return !key_tokens || key_tokens[b * s->key_ld + j] != 0;
}

/* ctx_h = dropout(softmax(qh kh^T / sqrt(dh) + mask)) vh; fills probs and
 * probs_drop. key_tokens NULL: no padding mask. Fully masked rows give zero
 * probabilities and output. */
static void ref_attention_forward(double *ctx_h, double *probs, double *probs_drop,
                                  const double *qh, const double *kh, const double *vh,
                                  const int32_t *key_tokens, const cf_attention_shape *s,
                                  const ref_dropout *dropout)
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

/* Overwrites dqh, and rows < Tk of each (b, h) block of dkh and dvh; dprobs
 * (B, H, Tq, Tk) receives the score gradient dS. */
static void ref_attention_backward(double *dqh, double *dkh, double *dvh, double *dprobs,
                                   const double *dctx_h, const double *probs,
                                   const double *probs_drop, const double *qh, const double *kh,
                                   const double *vh, const cf_attention_shape *s,
                                   const ref_dropout *dropout)
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

/* --- the conformance cases ------------------------------------------------------ */

typedef enum {
    KEYS_NONE,       /* no key ids: no padding mask */
    KEYS_FULL,       /* no key is padding */
    KEYS_RIGHT_PAD,  /* batch b keeps a shorter prefix the larger b is */
    KEYS_RANDOM_PAD, /* about a fifth of the keys are padding, anywhere */
    KEYS_ONE_EMPTY,  /* right padding, and batch 1 is padding only */
    KEYS_ALL_EMPTY,  /* every key of every batch is padding */
} keys_kind;

typedef struct {
    size_t B, H, dh, Tq, Tk, Tk_cap, q_pos0;
    bool causal;
    keys_kind keys;
    float p;            /* dropout probability */
    bool separate_drop; /* probs_drop a tensor of its own (always with dropout) */
    uint64_t seed;
    bool fused;         /* the fused path (saves row statistics, not the probabilities) */
    size_t H_kv;        /* key/value heads (grouped-query attention); 0: H */
    bool held;          /* tiled, with the tiles run_held_rows forces */
    bool by_gemm;       /* fused, its backward by GEMMs (cf_attention_backward_by_gemm) */
} attention_case;

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
static void make_keys(const attention_case *c, int32_t *keys, size_t key_ld, ref_rng *r)
{
    for (size_t b = 0; b < c->B; b++)
        for (size_t j = 0; j < key_ld; j++) {
            int32_t id = 4 + (int32_t)(ref_rng_next(r) % 1000);
            const size_t len = c->Tk - b * c->Tk / (2 * c->B);
            switch (c->keys) {
            case KEYS_RIGHT_PAD: if (j >= len) id = 0; break;
            case KEYS_RANDOM_PAD: if (ref_rng_next(r) % 5 == 0) id = 0; break;
            case KEYS_ONE_EMPTY: if (j >= len || b == 1) id = 0; break;
            case KEYS_ALL_EMPTY: id = 0; break;
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
static void carried_roundings(const attention_case *c, const cf_attention_shape *s,
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

/* Whether the backward launches since `before` (run_case's two) were the
 * GEMM path's: its softmax backward kernel twice, and none of the fused
 * backward kernels. */
static bool backward_ran_by_gemm(const cf_ctx *ctx, const uint64_t *before)
{
    static const cf_kernel_id fused_ids[] = {
        CF_K_FLASH_TILED_BACKWARD_DQ,           CF_K_FLASH_TILED_BACKWARD_DKV,
        CF_K_FLASH_ATTENTION_BACKWARD_DQ,       CF_K_FLASH_ATTENTION_BACKWARD_DQ_SIMPLE,
        CF_K_FLASH_ATTENTION_BACKWARD_DKV,      CF_K_FLASH_ATTENTION_BACKWARD_DKV_SIMPLE};
    for (size_t k = 0; k < sizeof fused_ids / sizeof *fused_ids; k++)
        if (ctx->kernel_launches[fused_ids[k]] != before[fused_ids[k]]) return false;
    const cf_kernel_id softmax = CF_K_ATTENTION_SOFTMAX_BACKWARD;
    return ctx->kernel_launches[softmax] - before[softmax] == 2;
}

/* One case on the path c->fused names: forward and backward (one result each). */
static clformer_status run_case(cf_ctx *ctx, const attention_case *c, conf_sink sink, void *user)
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
    /* fused: P holds the row statistics, PD is unused, DP is (B, H, Tq); by
     * GEMMs PD is the backward's scores and DP is (B, H, Tq, Tk) */
    const size_t nl = 2 * BH * s.Tq, n_p = c->fused ? nl : np,
                 n_pd = c->fused && !c->by_gemm ? 1 : np, n_dp = c->by_gemm ? np : n_p;
    const size_t n[N_T] = {nq, nk, nk, nq, s.B * key_ld, nq, n_p, n_pd, nq, nk, nk, n_dp};
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
    const ref_dropout rdrop = {c->p, drop.seed, drop.step, drop.site};
    const cf_view key_view =
        c->keys == KEYS_NONE ? cf_view_at(NULL, 0) : conf_block_view(&b, KEYS);
    const cf_view none = cf_view_at(NULL, 0);
    const cf_attention_saved saved =
        c->fused ? (cf_attention_saved){none, none, conf_block_view(&b, P),
                                        conf_block_view(&b, OUT), key_view,
                                        c->by_gemm ? conf_block_view(&b, PD) : none}
                 : (cf_attention_saved){conf_block_view(&b, P),
                                        conf_block_view(&b, separate ? PD : P), none, none,
                                        none};
#define V_(i) conf_block_view(&b, i)
    uint64_t launches[CF_K_COUNT]; /* by GEMMs: which backward ran */
    memcpy(launches, ctx->kernel_launches, sizeof launches);
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
                          c->keys == KEYS_NONE ? NULL : keys, &s_q, &rdrop);
    ref_attention_backward(d[DQ], d[DK], d[DV], d[DP], d[DO], d[P], d[PD], d[Q], d[K], d[V], &s_q,
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
    if (c->keys == KEYS_ONE_EMPTY || c->keys == KEYS_ALL_EMPTY) {
        const bool one = c->keys == KEYS_ONE_EMPTY; /* batch 1 only, else all */
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
    if (c->by_gemm && !backward_ran_by_gemm(ctx, launches))
        g = failed(g, "the backward did not run by GEMMs (its softmax kernel twice, no fused "
                      "backward kernel)");

    char op[64], shape[96];
    char kv[24] = ""; /* "/" and any size_t */
    if (G > 1) snprintf(kv, sizeof kv, "/%zu", H_kv);
    snprintf(shape, sizeof shape, "B%zu H%zu%s Tq%zu Tk%zu/%zu dh%zu q0=%zu", s.B, s.H, kv, s.Tq,
             s.Tk, s.Tk_cap, s.dh, s.q_pos0);
    const char *variant = c->causal ? (active ? "_causal_dropout" : "_causal")
                                    : (active ? "_dropout" : "");
    const bool host = cf_attention_host_takes(ctx, &s);
    const char *path = !c->fused ? (host ? "_host" : "")
                       : c->held                    ? "_tiled_held2"
                       : cf_attention_tiled(ctx, s.dh) ? "_tiled"
                       : host                          ? "_host_fused"
                                                       : "_fused";
    /* by GEMMs: the backward alone (its forward is the fused case's) */
    if (!c->by_gemm) {
        snprintf(op, sizeof op, "attention%s_forward%s", path, variant);
        conf_emit(sink, user, op, shape, conf_guarded(f, &b), ms[0]);
    }
    snprintf(op, sizeof op, "attention%s%s%s", path, c->by_gemm ? "_gemm_backward" : "_backward",
             variant);
    conf_emit(sink, user, op, shape, conf_guarded(c->by_gemm ? worst_of((ref_cmp[]){f, g}, 2) : g, &b),
              ms[1]);
done:
    conf_block_free(&b);
    for (int i = 0; i < N_T; i++) free(d[i]);
    free(keys), free(live), free(live64), free(shared), free(first);
    return st;
}

/* Cases of one kind: those run under quick (simulators) and the others';
 * each on both paths, the i-th with seed + i. */
typedef struct {
    const attention_case *quick, *full;
    size_t n_quick, n_full;
    uint64_t seed;
} case_group;
#define GROUP(quick, full, seed)                                                               \
    {(quick), (full), sizeof(quick) / sizeof *(quick), sizeof(full) / sizeof *(full), (seed)}
#define FULL_ONLY(full, seed) {NULL, (full), 0, sizeof(full) / sizeof *(full), (seed)}

static clformer_status run_group(cf_ctx *ctx, const case_group *g, bool quick, conf_sink sink,
                                 void *user)
{
    const attention_case *cases = quick ? g->quick : g->full;
    const size_t n = quick ? g->n_quick : g->n_full;
    for (int fused = 0; fused < 2; fused++)
        for (size_t i = 0; i < n; i++) {
            attention_case c = cases[i];
            c.seed = g->seed + i;
            c.fused = fused;
            CF_TRY(run_case(ctx, &c, sink, user));
        }
    return CLFORMER_OK;
}

/* Where the host provider runs attention as host items
 * (ops_attention_host.c, named "attention_host_..." and
 * "attention_host_fused_..."), a group's cases once more with them off, on
 * both paths: the batched products and softmax kernels, and the per-row
 * fused kernels, which 16-bit activations and the other providers take,
 * stay checked on the host provider's devices too. */
static clformer_status run_without_host_items(cf_ctx *ctx, const case_group *g, bool quick,
                                              conf_sink sink, void *user)
{
    if (!cf_gemm_fuses(ctx)) return CLFORMER_OK;
    ctx->host_fusion_off = true;
    const clformer_status st = run_group(ctx, g, quick, sink, user);
    ctx->host_fusion_off = false;
    return st;
}

/* {B, H, dh, Tq, Tk, Tk_cap, q_pos0, causal, keys, p, separate_drop, seed (run_group's),
 *  fused (both), H_kv} */

/* The model's kinds, in every precision: padded self-attention, causal over a
 * key cache, cross-attention with dropout, grouped-query causal, multi-query
 * over a key cache with dropout. */
static const attention_case model_quick[] = {
    {2, 2, 8, 7, 7, 7, 0, false, KEYS_RIGHT_PAD, 0.0f, false, 0, false, 0},
    {2, 1, 8, 3, 7, 9, 4, true, KEYS_RIGHT_PAD, 0.0f, false, 0, false, 0},
    {1, 2, 8, 5, 7, 7, 0, false, KEYS_RIGHT_PAD, 0.1f, true, 0, false, 0},
    {2, 4, 8, 7, 7, 7, 0, true, KEYS_NONE, 0.0f, false, 0, false, 2},
    {2, 3, 8, 3, 7, 9, 4, true, KEYS_RIGHT_PAD, 0.1f, true, 0, false, 1},
};
static const attention_case model_full[] = {
    {2, 4, 64, 61, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.0f, false, 0, false, 0},
    {2, 2, 80, 7, 93, 96, 86, true, KEYS_RIGHT_PAD, 0.0f, false, 0, false, 0},
    {3, 2, 64, 61, 93, 93, 0, false, KEYS_RIGHT_PAD, 0.1f, true, 0, false, 0},
    {2, 8, 64, 61, 61, 61, 0, true, KEYS_NONE, 0.0f, false, 0, false, 2},
    {2, 4, 32, 5, 90, 96, 85, true, KEYS_NONE, 0.1f, true, 0, false, 1},
};

/* The rest in fp32: head sizes 8, 64, 80 (and 6 to 128 below), odd lengths,
 * every padding kind. Under quick (simulators, where each case costs seconds
 * under Oclgrind's checks) a kind the model's small cases already cover
 * adds none: padded self-attention, queries over a key cache, grouped- and
 * multi-query attention, dropout (there at p = 0.1, with the fully padded
 * batches below at 0.2). */
static const attention_case self_quick[] = {
    {2, 1, 8, 1, 1, 1, 0, false, KEYS_FULL, 0.0f, true},
};
static const attention_case self_full[] = {
    {2, 3, 64, 61, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
    {3, 2, 8, 7, 7, 7, 0, false, KEYS_RANDOM_PAD, 0.0f, true},
    {2, 2, 80, 93, 93, 93, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
    {1, 5, 64, 1, 1, 1, 0, false, KEYS_FULL, 0.0f, false},
    {2, 2, 64, 61, 61, 61, 0, false, KEYS_NONE, 0.0f, true},
};
static const attention_case causal_quick[] = {
    {2, 1, 8, 7, 7, 7, 0, true, KEYS_RANDOM_PAD, 0.0f, false},
};
static const attention_case causal_full[] = {
    {2, 3, 64, 61, 61, 61, 0, true, KEYS_RIGHT_PAD, 0.0f, false},
    {3, 2, 8, 7, 7, 7, 0, true, KEYS_RANDOM_PAD, 0.0f, false},
    {2, 2, 80, 93, 93, 93, 0, true, KEYS_NONE, 0.0f, false},
    {1, 2, 64, 257, 257, 257, 0, true, KEYS_RIGHT_PAD, 0.1f, true},
};
static const attention_case cross_quick[] = {
    {1, 2, 8, 7, 1, 1, 0, false, KEYS_FULL, 0.0f, false},
    {2, 1, 8, 1, 7, 7, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
};
static const attention_case cross_full[] = {
    {2, 3, 64, 7, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
    {2, 2, 80, 61, 7, 7, 0, false, KEYS_RANDOM_PAD, 0.0f, false},
    {3, 2, 8, 61, 93, 93, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
    {2, 2, 64, 93, 1, 1, 0, false, KEYS_FULL, 0.0f, false},
    {3, 3, 64, 1, 61, 61, 0, false, KEYS_RANDOM_PAD, 0.0f, false}, /* a decoding step's */
};
/* Incremental decoding: a key cache of Tk_cap rows, Tk in use, queries from q_pos0. */
static const attention_case decoding_quick[] = {
    {2, 2, 8, 1, 7, 9, 6, true, KEYS_RIGHT_PAD, 0.0f, false},
};
static const attention_case decoding_full[] = {
    {3, 2, 64, 1, 61, 93, 60, true, KEYS_RIGHT_PAD, 0.0f, false},
    {2, 3, 80, 1, 7, 93, 6, true, KEYS_NONE, 0.0f, false},
    {2, 2, 8, 1, 61, 64, 30, true, KEYS_FULL, 0.0f, false}, /* keys after q_pos0 masked */
    {2, 2, 80, 7, 61, 64, 54, true, KEYS_RANDOM_PAD, 0.0f, false},
    {2, 2, 64, 1, 1, 93, 0, true, KEYS_FULL, 0.0f, false},
    {2, 2, 64, 7, 61, 93, 0, false, KEYS_RIGHT_PAD, 0.0f, false}, /* cross, cached memory */
};
/* Grouped-query and multi-query attention: H_kv key/value heads, each read
 * by H / H_kv query heads (training, a decoding cache, padding, dropout). */
static const attention_case grouped_full[] = {
    {2, 6, 64, 61, 61, 61, 0, true, KEYS_NONE, 0.0f, false, 0, false, 2},
    {2, 4, 32, 37, 37, 37, 0, true, KEYS_NONE, 0.1f, true, 0, false, 1},
    {3, 6, 8, 7, 7, 7, 0, false, KEYS_RANDOM_PAD, 0.0f, false, 0, false, 3},
    {2, 4, 64, 1, 61, 93, 60, true, KEYS_FULL, 0.0f, false, 0, false, 2},
    {2, 3, 80, 7, 61, 64, 54, true, KEYS_NONE, 0.0f, false, 0, false, 1},
};
/* Long keys: the fused path's host items take an item's query rows a
 * chunk at a time (ops_attention_host.c: 64 rows of 1,024 keys), and dK
 * and dV sum over the chunks; the second, grouped, has 400 rows an item. */
static const attention_case chunked_full[] = {
    {1, 2, 16, 300, 1024, 1024, 0, false, KEYS_RANDOM_PAD, 0.1f, true},
    {1, 4, 8, 200, 1000, 1000, 800, true, KEYS_NONE, 0.0f, false, 0, false, 2},
};
/* Fully padded batches: zeros, not NaN. */
static const attention_case padded_quick[] = {
    {3, 1, 8, 7, 7, 7, 0, true, KEYS_ONE_EMPTY, 0.2f, true},
    {2, 1, 8, 1, 7, 9, 6, true, KEYS_ALL_EMPTY, 0.0f, false},
};
static const attention_case padded_full[] = {
    {3, 2, 64, 61, 61, 61, 0, false, KEYS_ONE_EMPTY, 0.0f, false},
    {3, 2, 8, 7, 7, 7, 0, true, KEYS_ONE_EMPTY, 0.1f, true},
    {2, 2, 80, 7, 61, 61, 0, false, KEYS_ALL_EMPTY, 0.0f, true},
    {2, 3, 64, 1, 7, 93, 6, true, KEYS_ALL_EMPTY, 0.3f, true},
};
static const attention_case dropout_full[] = {
    {2, 3, 64, 61, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.1f, true},
    {2, 2, 80, 93, 93, 93, 0, true, KEYS_RANDOM_PAD, 0.1f, true},
    {3, 2, 8, 7, 61, 64, 0, false, KEYS_FULL, 0.5f, true},
    {2, 2, 64, 1, 61, 93, 60, true, KEYS_RIGHT_PAD, 0.2f, true},
};
/* The head sizes of common models (32 to 128) and others: one that is no
 * whole number of float4 columns (6), one whose columns do not split evenly
 * over a row's work items (20). The tiled kernels are built per head size. */
static const attention_case heads_quick[] = {
    {1, 1, 6, 5, 5, 5, 0, true, KEYS_FULL, 0.0f, false},
};
static const attention_case heads_full[] = {
    {1, 2, 32, 33, 33, 33, 0, true, KEYS_RIGHT_PAD, 0.1f, true},
    {1, 2, 96, 20, 33, 33, 0, false, KEYS_RANDOM_PAD, 0.0f, false},
    {1, 1, 128, 33, 33, 33, 0, true, KEYS_FULL, 0.0f, false},
    {2, 1, 6, 19, 19, 19, 0, false, KEYS_RIGHT_PAD, 0.1f, true},
    {1, 2, 20, 19, 19, 21, 0, true, KEYS_RANDOM_PAD, 0.0f, false},
};

/* Which fused kernels run is the device profile's choice: the tiled ones
 * (cl/flash_attention_tiled.cl) wherever it takes them (a GPU's profile,
 * CLFORMER_PROFILE=gpu-layouts in CI), for head sizes up to 256, the per-row
 * ones (cl/flash_attention.cl) beyond and on devices with CPU paths. One
 * fused case per head size (8; 64 and 257 unless quick) and its launches: a
 * run and a rerun, so 6 of one family and none of the other. */
static clformer_status fused_kernels_chosen(cf_ctx *ctx, bool quick, conf_sink sink,
                                            void *user)
{
    static const cf_kernel_id tiled_ids[] = {CF_K_FLASH_TILED_FORWARD,
                                             CF_K_FLASH_TILED_BACKWARD_DQ,
                                             CF_K_FLASH_TILED_BACKWARD_DKV};
    static const cf_kernel_id row_ids[] = {
        CF_K_FLASH_ATTENTION_FORWARD,      CF_K_FLASH_ATTENTION_FORWARD_SIMPLE,
        CF_K_FLASH_ATTENTION_BACKWARD_DQ,  CF_K_FLASH_ATTENTION_BACKWARD_DQ_SIMPLE,
        CF_K_FLASH_ATTENTION_BACKWARD_DKV, CF_K_FLASH_ATTENTION_BACKWARD_DKV_SIMPLE};
    static const size_t sizes[] = {8, 64, 257};
    const clformer_device_profile *p = &ctx->device_profile;
    /* CLFORMER_PROFILE=tiled-attention or row-attention sets the kernels alone */
    const bool kernels_forced = p->forced && strstr(p->forced, "attention");
    for (size_t i = 0; i < (quick ? 1 : 3); i++) {
        const size_t dh = sizes[i];
        const bool want_tiled = p->tiled_attention && dh <= 256;
        uint64_t before[CF_K_COUNT], tiled = 0, rows = 0;
        memcpy(before, ctx->kernel_launches, sizeof before);
        const attention_case c = {1, 2, dh, 5, 5, 5, 0, true, KEYS_RIGHT_PAD, 0.0f, false,
                                  900, true, 0};
        CF_TRY(run_case(ctx, &c, sink, user));
        for (size_t k = 0; k < 3; k++) tiled += ctx->kernel_launches[tiled_ids[k]] - before[tiled_ids[k]];
        for (size_t k = 0; k < 6; k++) rows += ctx->kernel_launches[row_ids[k]] - before[row_ids[k]];
        ref_cmp r = {.pass = true, .rule = "the profile's kernels"};
        if (!kernels_forced && p->tiled_attention != p->gpu_layouts)
            r.why = "the profile's tiled attention differs from its GPU layouts";
        else if (cf_attention_tiled(ctx, dh) != want_tiled)
            r.why = want_tiled ? "cf_attention_tiled says per-row where the profile has tiles"
                               : "cf_attention_tiled says tiled where the profile has none";
        else if (want_tiled ? tiled != 6 || rows : rows != 6 || tiled)
            r.why = want_tiled ? "the tiled kernels did not run 6 times alone"
                               : "the per-row kernels did not run 6 times alone";
        r.pass = !r.why;
        char shape[96];
        snprintf(shape, sizeof shape, "dh%zu: %llu tiled, %llu per-row launches", dh,
                 (unsigned long long)tiled, (unsigned long long)rows);
        conf_emit(sink, user, "attention_fused_kernels", shape, r, 0.0);
    }
    return CLFORMER_OK;
}

/* fused_kernels_chosen with the host items off: on the host provider they
 * take the fused path in place of either kernel family (their cases are
 * attention_host_fused_*). */
static clformer_status run_fused_kernels(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const bool host_off = ctx->host_fusion_off;
    ctx->host_fusion_off = true;
    const clformer_status st = fused_kernels_chosen(ctx, quick, sink, user);
    ctx->host_fusion_off = host_off;
    return st;
}

/* The fused backward against central finite differences of the fused
 * forward itself, in float on the device: L = sum(out * W) over a causal,
 * padded case with dropout (a fixed mask: L is smooth in q, k and v), so
 * dL/dx is the backward with dout = W. Every 5th element of q, k and v;
 * every 17th under quick (simulators: two forward launches an element, which
 * under Oclgrind's checks with a GPU's tiles take about a second each),
 * which still crosses every head and the padded key. Tensors by the roles of
 * run_case: DO holds W, P the row statistics, DP the row sums D. */
static clformer_status run_fused_fd(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    enum { FB = 1, FH = 2, FTQ = 5, FTK = 6, FDH = 8, NQ = FB * FH * FTQ * FDH,
           NK = FB * FH * FTK * FDH };
    const cf_attention_shape s = {FB, FH, FDH, FTQ, FTK, FTK, 1, true, FTK, 0};
    const cf_dropout drop = {0.2f, 99, 3, 7};
    static const int32_t keys[FTK] = {5, 9, 0, 7, 8, 6}; /* key 2 is padding */
    const size_t len[N_T] = {NQ, NK, NK, NQ, FTK, NQ, 2 * FB * FH * FTQ, 1, NQ, NK, NK,
                             FB * FH * FTQ};
    conf_block b = {0};
    for (int t = 0; t < N_T; t++) conf_block_add(&b, len[t]);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    ref_rng r = ref_rng_new(77);
    for (int t = Q; t <= DO; t++) ref_fill_uniform(&r, conf_block_init(&b, t), NULL, len[t], -1, 1);
    memcpy(conf_block_init(&b, KEYS), keys, sizeof keys); /* int32 bit for bit */
#define V_(t) conf_block_view(&b, t)
    const cf_view none = cf_view_at(NULL, 0);
    const cf_attention_saved saved = {none, none, V_(P), V_(OUT), V_(KEYS)};
    if ((st = conf_block_upload(&b)) ||
        (st = cf_attention_forward(ctx, V_(OUT), &saved, V_(Q), V_(K), V_(V), V_(KEYS), &s,
                                   &drop)) ||
        (st = cf_attention_backward(ctx, V_(DQ), V_(DK), V_(DV), V_(DP), V_(DO), &saved, V_(Q),
                                    V_(K), V_(V), &s, &drop)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    float grad[3][NK];
    for (int t = 0; t < 3; t++) memcpy(grad[t], conf_block_out(&b, DQ + t), len[Q + t] * 4);
    const float h = 1e-2f;
    const size_t stride = quick ? 17 : 5;
    ref_cmp c = {.pass = true, .rule = "|fd - g| <= 2e-3 max|g| + 2e-4"};
    for (int t = 0; t < 3; t++) {
        float gmax = 0.0f;
        for (size_t i = 0; i < len[Q + t]; i++) gmax = fmaxf(gmax, fabsf(grad[t][i]));
        float *x = conf_block_init(&b, Q + t);
        for (size_t i = 0; i < len[Q + t]; i += stride) {
            const float x0 = x[i];
            double L[2];
            for (int side = 0; side < 2; side++) {
                x[i] = x0 + (side ? -h : h);
                if ((st = conf_block_upload(&b)) ||
                    (st = cf_attention_forward(ctx, V_(OUT), &saved, V_(Q), V_(K), V_(V),
                                               V_(KEYS), &s, &drop)) ||
                    (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
                    goto done;
                const float *out = conf_block_out(&b, OUT), *w = conf_block_init(&b, DO);
                L[side] = 0.0;
                for (size_t e = 0; e < NQ; e++) L[side] += (double)out[e] * w[e];
            }
            x[i] = x0;
            const double fd = (L[0] - L[1]) / (2.0 * h), err = fabs(fd - grad[t][i]);
            if (err > c.max_abs_err) c.max_abs_err = err, c.worst = i;
            if (err > 2e-3 * gmax + 2e-4)
                c.pass = false, c.why = "a gradient of the fused backward differs from the forward's "
                                        "finite differences";
        }
    }
#undef V_
    char shape[96];
    snprintf(shape, sizeof shape, "B%d H%d Tq%d Tk%d dh%d causal p=0.2, every %zuth element",
             FB, FH, FTQ, FTK, FDH, stride);
    conf_emit(sink, user, "attention_fused_fd", shape, conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* split then merge, each bit for bit against the reference: merge writes the
 * heads' columns and leaves the others alone. Head sizes 6 (CPU devices'
 * float4 moves leave a tail), 8, 64 and 80; B x T 2 x 7 under quick, else
 * 3 x 61; rows 5 longer than the heads. Three layouts of a row: one tensor
 * of 3 heads (cf_split_heads), and through cf_split_qkv_heads 3 query heads
 * with 1 key and 1 value head (grouped-query), and 3 key and 3 value heads
 * with no queries (cross-attention's memory). */
static clformer_status run_split_merge(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const size_t dhs[] = {6, 8, 64, 80};
    static const size_t layouts[][2] = {{3, 0}, {3, 1}, {0, 3}}; /* {Hq, Hkv}; Hkv 0: one */
    const size_t B = quick ? 2 : 3, T = quick ? 7 : 61;
    clformer_status st = CLFORMER_OK;
    for (size_t d = 0; d < sizeof dhs / sizeof *dhs && !st; d++)
        for (size_t l = 0; l < sizeof layouts / sizeof *layouts && !st; l++) {
            const size_t dh = dhs[d], Hq = layouts[l][0], Hkv = layouts[l][1];
            const size_t slots = Hq + 2 * Hkv, ld = slots * dh + 5, n = B * T * ld,
                         nh = B * slots * T * dh;
            /* the tensors' heads, one after another: q, then k, then v */
            const size_t heads_of[3] = {Hq, Hkv, Hkv};
            conf_block b = {0};
            const size_t SRC = conf_block_add(&b, n), HEADS = conf_block_add(&b, nh),
                         BACK = conf_block_add(&b, n);
            double *src64 = malloc(n * 8), *heads64 = malloc(nh * 8), *back64 = malloc(n * 8);
            if ((st = conf_block_create(ctx, &b))) goto next;
            if (!src64 || !heads64 || !back64) {
                st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
                goto next;
            }
            ref_rng r = ref_rng_new(d);
            ref_fill_uniform(&r, conf_block_init(&b, SRC), src64, n, -1, 1);
            conf_block_init_fill(&b, BACK, UNTOUCHED);
            const cf_view src = conf_block_view(&b, SRC), back = conf_block_view(&b, BACK);
            cf_view t[3];
            for (size_t g = 0, at = 0; g < 3; at += B * heads_of[g] * T * dh, g++)
                t[g] = cf_view_add(conf_block_view(&b, HEADS), at);
            if ((st = conf_block_upload(&b)) ||
                (st = Hkv ? cf_split_qkv_heads(ctx, t[0], t[1], t[2], src, ld, B, T, Hq, Hkv, dh)
                          : cf_split_heads(ctx, t[0], src, ld, B, T, Hq, dh)) ||
                (st = Hkv ? cf_merge_qkv_heads(ctx, back, ld, t[0], t[1], t[2], B, T, Hq, Hkv,
                                               dh)
                          : cf_merge_heads(ctx, back, ld, t[0], B, T, Hq, dh)) ||
                (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
                goto next;
            for (size_t i = 0; i < n; i++) back64[i] = UNTOUCHED;
            for (size_t g = 0, at = 0, col = 0; g < 3; g++) {
                ref_split_heads(heads64 + at, src64 + col, ld, B, T, heads_of[g], dh);
                ref_merge_heads(back64 + col, ld, heads64 + at, B, T, heads_of[g], dh);
                at += B * heads_of[g] * T * dh, col += heads_of[g] * dh;
            }
            ref_cmp split = ref_compare_exact(conf_block_out(&b, HEADS), heads64, nh),
                    merge = ref_compare_exact(conf_block_out(&b, BACK), back64, n);
            if (!conf_block_unchanged(&b, SRC))
                split.pass = merge.pass = false, split.why = merge.why = "the source changed";
            char shape[96];
            snprintf(shape, sizeof shape, "B%zu T%zu Hq%zu Hkv%zu dh%zu ld%zu", B, T, Hq, Hkv, dh,
                     ld);
            conf_emit(sink, user, "split_heads", shape, conf_guarded(split, &b), 0.0);
            conf_emit(sink, user, "merge_heads", shape, conf_guarded(merge, &b), 0.0);
        next:
            conf_block_free(&b);
            free(src64), free(heads64), free(back64);
        }
    return st;
}

/* cf_split_qkv_to_caches, bit for bit against the reference: 3 query heads
 * (B, 3, T, dh) and 1 key and 1 value head written into caches of T + 4 rows
 * a head at rows 3..T+2, the caches' other rows untouched. Head sizes 6 and
 * 64; B x T as run_split_merge's. With a bias (split_heads_bias: a
 * decoding step's projection without it), each element is the float sum
 * rounded to the context's storage precision; without, a copy (fp32 only). */
static clformer_status run_split_to_caches(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const size_t dhs[] = {6, 64};
    const size_t B = quick ? 2 : 3, T = quick ? 7 : 61, Hq = 3, Hkv = 1, cap = T + 4, pos = 3;
    const bool fp32 = ctx->precision == CLFORMER_FP32;
    const ref_half_format half = ctx->precision == CLFORMER_BF16 ? REF_BF16 : REF_F16;
    clformer_status st = CLFORMER_OK;
    for (int biased = fp32 ? 0 : 1; biased < 2 && !st; biased++)
        for (size_t d = 0; d < sizeof dhs / sizeof *dhs && !st; d++) {
            const size_t dh = dhs[d], ld = (Hq + 2 * Hkv) * dh + 5, n = B * T * ld;
            const size_t nq = B * Hq * T * dh, nc = B * Hkv * cap * dh, nh = nq + 2 * nc;
            conf_block b = {0};
            const size_t SRC = conf_block_add(&b, n), HEADS = conf_block_add(&b, nh),
                         BIAS = conf_block_add(&b, ld);
            double *src64 = malloc(n * 8), *heads64 = malloc(nh * 8), *bias64 = malloc(ld * 8);
            if ((st = conf_block_create(ctx, &b))) goto next;
            if (!src64 || !heads64 || !bias64) {
                st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
                goto next;
            }
            ref_rng r = ref_rng_new(10 + d);
            ref_fill_uniform(&r, conf_block_init(&b, SRC), src64, n, -1, 1);
            ref_fill_uniform(&r, conf_block_init(&b, BIAS), bias64, ld, -1, 1);
            conf_block_init_fill(&b, HEADS, UNTOUCHED);
            const cf_view heads = conf_block_view(&b, HEADS);
            const cf_view bias = biased ? conf_block_view(&b, BIAS) : cf_view_at(NULL, 0);
            if ((st = conf_block_upload(&b)) ||
                (st = cf_split_qkv_to_caches(ctx, heads, cf_view_add(heads, nq),
                                             cf_view_add(heads, nq + nc),
                                             conf_block_view(&b, SRC), bias, ld, B, T, Hq, Hkv,
                                             dh, cap, pos)) ||
                (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
                goto next;
            if (biased) /* the float sum, as the device adds, then the storage's rounding */
                for (size_t i = 0; i < n; i++) {
                    const float sum = (float)src64[i] + (float)bias64[i % ld];
                    src64[i] = fp32 ? sum : ref_half_value(ref_half_round(sum, half), half);
                }
            for (size_t i = 0; i < nh; i++) heads64[i] = UNTOUCHED;
            ref_split_heads(heads64, src64, ld, B, T, Hq, dh);
            for (size_t g = 0; g < 2; g++)
                ref_split_heads_at(heads64 + nq + g * nc, src64 + (Hq + g * Hkv) * dh, ld, B, T,
                                   Hkv, dh, cap, pos);
            ref_cmp split = ref_compare_exact(conf_block_out(&b, HEADS), heads64, nh);
            if (!conf_block_unchanged(&b, SRC) || !conf_block_unchanged(&b, BIAS))
                split.pass = false, split.why = "the source or the bias changed";
            char shape[96];
            snprintf(shape, sizeof shape, "B%zu T%zu Hq%zu Hkv%zu dh%zu cap%zu pos%zu", B, T, Hq,
                     Hkv, dh, cap, pos);
            conf_emit(sink, user, biased ? "split_heads_bias" : "split_heads", shape,
                      conf_guarded(split, &b), 0.0);
        next:
            conf_block_free(&b);
            free(src64), free(heads64), free(bias64);
        }
    return st;
}

/* Empty sizes write nothing (B = 0); no keys at all (Tk = 0) give an output
 * and a dQ of exactly 0, dQ as rows too (dq_ld past the heads' columns: the
 * columns between stay). */
static clformer_status run_degenerate(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 64), G = conf_block_add(&b, 64), O = conf_block_add(&b, 48),
                 R = conf_block_add(&b, 3 * 20); /* dQ's 3 rows of 2 x 8, 20 apart */
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    conf_block_init_fill(&b, O, 1.0f);
    conf_block_init_fill(&b, R, 1.0f);
    const cf_view x = conf_block_view(&b, A), y = conf_block_view(&b, G),
                  o = conf_block_view(&b, O), none = cf_view_at(NULL, 0);
    const cf_attention_saved saved = {y, y, none, none, none};
    const cf_attention_shape empty = {0, 2, 8, 3, 3, 3, 0, false, 3, 0},
                             no_keys = {1, 2, 8, 3, 0, 0, 0, true, 0, 0}, /* o: (1, 2, 3, 8) */
                             no_keys_rows = {1, 2, 8, 3, 0, 0, 0, true, 0, 0, true, 20, 0};
    const char *bad = NULL;
    if ((st = conf_block_upload(&b)) ||
        (st = cf_attention_forward(ctx, x, &saved, x, x, x, none, &empty, NULL)) ||
        (st = cf_attention_backward(ctx, x, x, x, y, x, &saved, x, x, x, &empty, NULL)) ||
        (st = cf_attention_forward(ctx, o, &saved, x, x, x, none, &no_keys, NULL)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
    if (!padded_batches_zero(conf_block_out(&b, O), 0, 1, 2, 24))
        bad = "Tk = 0: the output is not 0";
    else if (!conf_block_unchanged(&b, A) || !conf_block_unchanged(&b, G))
        bad = "B = 0 or Tk = 0 wrote another tensor";
    if (!bad && ((st = conf_block_upload(&b)) || /* o back to ones: it is dQ now */
                 (st = cf_attention_backward(ctx, o, x, x, y, x, &saved, x, x, x, &no_keys,
                                             NULL)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    if (!bad && !padded_batches_zero(conf_block_out(&b, O), 0, 1, 2, 24))
        bad = "Tk = 0: dQ is not 0";
    else if (!bad && (!conf_block_unchanged(&b, A) || !conf_block_unchanged(&b, G)))
        bad = "the backward with Tk = 0 wrote dK, dV or dprobs";
    if (!bad && ((st = conf_block_upload(&b)) ||
                 (st = cf_attention_backward(ctx, conf_block_view(&b, R), x, x, y, x, &saved, x,
                                             x, x, &no_keys_rows, NULL)) ||
                 (st = cf_finish(ctx)) || (st = conf_block_read(&b))))
        goto done;
    for (size_t i = 0; !bad && i < 3 * 20; i++)
        if (conf_block_out(&b, R)[i] != (i % 20 < 16 ? 0.0f : 1.0f))
            bad = "Tk = 0: dQ as rows is not 0, or the columns between its rows were written";
    ref_cmp c = {.pass = !bad, .why = bad, .rule = "exact"};
    conf_emit(sink, user, "attention_degenerate", "B=0; Tk=0; Tk=0 with dQ as rows",
              conf_guarded(c, &b), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* Rows in place of heads (cf_attention_shape's out_rows, dq_ld, dkv_ld, as
 * the model passes them): the forward and backward on rows give the head
 * layout's numbers (checked against the reference by the cases above). On
 * the unfused path bit for bit with the host provider, whose products' bits
 * do not depend on where their operands lie; elsewhere (CLBlast) to the
 * gradient rule. On the fused path (`fused`) the tiled kernels do the same
 * arithmetic on either layout: bit for bit on every device; the per-row
 * kernels refuse rows. The gradients' rows leave the columns between heads
 * alone. Self-attention, causal with dropout, its three gradients in one
 * tensor of rows 3 * H * dh + 5 apart (the projection's, padded); on the
 * fused path also with grouped-query heads (`grouped`: 4 query heads, 2
 * key/value heads; rows (4 + 2 + 2) * dh + 5 apart); and cross-attention
 * with padded keys, dQ and dK, dV in tensors of their own. */
static void rows_to_heads(float *heads, const float *rows, size_t ld, size_t B, size_t T, size_t H,
                          size_t dh)
{
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t t = 0; t < T; t++)
                memcpy(heads + ((b * H + h) * T + t) * dh, rows + (b * T + t) * ld + h * dh,
                       dh * sizeof *heads);
}

#define BETWEEN 96.0f /* the columns between heads' rows: exact in every format */

static clformer_status run_rows_case(cf_ctx *ctx, bool cross, bool fused, bool by_gemm,
                                     bool grouped, bool quick, conf_sink sink, void *user)
{
    const size_t B = 2, H = grouped ? 4 : 3, Hkv = grouped ? 2 : H,
                 dh = quick ? 8 : cross ? 32 : 64, Tq = quick ? 5 : 37,
                 Tk = cross ? (quick ? 7 : 29) : Tq, width = H * dh, kv_width = Hkv * dh;
    const size_t dq_ld = cross ? width : width + 2 * kv_width + 5,
                 dkv_ld = cross ? 2 * kv_width : dq_ld;
    const size_t nq = B * H * Tq * dh, nk = B * Hkv * Tk * dh, np = B * H * Tq * Tk;
    /* the rows' tensors: self, one for all three (dK at column width, dV at
     * width + kv_width); cross, dQ's and one for dK and dV (dV at column
     * kv_width) */
    const size_t n_grad_q = B * Tq * dq_ld, n_grad_kv = cross ? B * Tk * dkv_ld : 1;
    conf_block b = {0};
    enum { IQ, IK, IV, IDO, IKEYS, IP, IPD, IDP, OUT_H, DQ_H, DK_H, DV_H, OUT_R, DO_R, QKV_R,
           KV_R, GQ_R, GKV_R, STATS_H, STATS_R, N_R };
    const size_t n[N_R] = {nq, nk, nk, nq, B * Tk, np, np, np, nq, nq, nk, nk, nq, nq, n_grad_q,
                           n_grad_kv, n_grad_q, n_grad_kv, 2 * B * H * Tq, 2 * B * H * Tq};
    for (int i = 0; i < N_R; i++) conf_block_add(&b, n[i]);
    float *heads = malloc((nq > nk ? nq : nk) * sizeof *heads);
    double *want = malloc((nq > nk ? nq : nk) * sizeof *want);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if (!heads || !want) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(cross ? 31 : grouped ? 32 : 30);
    /* Q, K, V and dO drawn as rows (laid out as their gradients are), their
     * heads taken from them */
    const int randoms[] = {QKV_R, KV_R, DO_R};
    for (int i = 0; i < 3; i++) {
        float *x = conf_block_init(&b, randoms[i]);
        for (size_t e = 0; e < n[randoms[i]]; e++) x[e] = (float)ref_rng_uniform(&r, -1, 1);
        conf_round(ctx, x, n[randoms[i]]);
    }
    const float *q_rows = conf_block_init(&b, QKV_R),
                *kv_rows = cross ? conf_block_init(&b, KV_R) : q_rows + width;
    rows_to_heads(conf_block_init(&b, IQ), q_rows, dq_ld, B, Tq, H, dh);
    rows_to_heads(conf_block_init(&b, IK), kv_rows, dkv_ld, B, Tk, Hkv, dh);
    rows_to_heads(conf_block_init(&b, IV), kv_rows + kv_width, dkv_ld, B, Tk, Hkv, dh);
    rows_to_heads(conf_block_init(&b, IDO), conf_block_init(&b, DO_R), width, B, Tq, H, dh);
    float *key_ids = conf_block_init(&b, IKEYS); /* batch 1's last two keys are padding */
    for (size_t e = 0; e < B * Tk; e++) {
        const int32_t id = e % Tk < Tk - 2 * (e / Tk) ? 5 : 0;
        memcpy(key_ids + e, &id, sizeof id); /* int32 bit for bit */
    }
    for (int i = IP; i < N_R; i++)
        if (i != DO_R && i != QKV_R && i != KV_R)
            conf_block_init_fill(&b, i, i >= GQ_R ? BETWEEN : NAN);
    if ((st = conf_block_upload(&b))) goto done;

    const cf_dropout drop = {0.2f, 77, 3, 9};
    const cf_dropout *dev_drop = cross ? NULL : &drop;
    const cf_view none = cf_view_at(NULL, 0), key_view = cross ? conf_block_view(&b, IKEYS) : none;
#define V_(i) conf_block_view(&b, i)
    /* fused: the statistics and the output of each layout's own forward */
    /* by GEMMs: IP is the backward's scores (IDP is (B, H, Tq, Tk) anyway) */
    const cf_view scores = by_gemm ? V_(IP) : none;
    const cf_attention_saved saved = {V_(IP), V_(IPD), none, none, none, none},
                             saved_h = {none, none, V_(STATS_H), V_(OUT_H), key_view, scores},
                             saved_r = {none, none, V_(STATS_R), V_(OUT_R), key_view, scores};
    const cf_attention_saved *sh = fused ? &saved_h : &saved, *sr = fused ? &saved_r : &saved;
    const cf_attention_shape s_heads = {B, H, dh, Tq, Tk, Tk, 0, !cross, Tk, grouped ? Hkv : 0};
    cf_attention_shape s_rows = s_heads;
    s_rows.out_rows = true, s_rows.dq_ld = dq_ld, s_rows.dkv_ld = dkv_ld;
    s_rows.q_ld = dq_ld, s_rows.kv_ld = dkv_ld;
    char name[2][80]; /* e.g. attention_rows_fused_grouped_gemm_backward_causal_dropout */
    for (int i = 0; i < 2; i++)
        snprintf(name[i], sizeof name[i], "attention_rows%s%s_%s%s", fused ? "_fused" : "",
                 grouped ? "_grouped" : "",
                 i ? (by_gemm ? "gemm_backward" : "backward") : "forward",
                 cross ? "" : "_causal_dropout");
    char shape[96];
    snprintf(shape, sizeof shape, "B%zu H%zu Tq%zu Tk%zu dh%zu, rows: dq_ld %zu dkv_ld %zu", B,
             H, Tq, Tk, dh, dq_ld, dkv_ld);
    /* by GEMMs on the per-row kernels: no rows to compare (their refusal is the fused case's) */
    if (by_gemm && !cf_attention_tiled(ctx, dh)) goto done;
    if (fused && !cf_attention_tiled(ctx, dh)) { /* the per-row kernels: refused, named */
        ref_cmp c = {.pass = true, .rule = "refused"};
        const clformer_status refused = cf_attention_forward(ctx, V_(OUT_R), sr, V_(QKV_R), V_(IK),
                                                             V_(IV), key_view, &s_rows, dev_drop);
        if (refused != CLFORMER_ERR_INVALID_ARGUMENT ||
            !strstr(clformer_last_error(), "tiled kernels"))
            c = failed(c, "the per-row fused kernels took rows, or refused them without a reason");
        conf_emit(sink, user, name[0], shape, c, 0.0);
        goto done;
    }
    const cf_view gq = V_(GQ_R), dk_rows = cross ? V_(GKV_R) : cf_view_add(gq, width),
                  dv_rows = cross ? cf_view_add(V_(GKV_R), kv_width)
                                  : cf_view_add(gq, width + kv_width),
                  q_rows_v = V_(QKV_R), k_rows = cross ? V_(KV_R) : cf_view_add(q_rows_v, width),
                  v_rows = cf_view_add(k_rows, kv_width);
    if ((st = cf_attention_forward(ctx, V_(OUT_H), sh, V_(IQ), V_(IK), V_(IV), key_view,
                                   &s_heads, dev_drop)) ||
        (st = cf_attention_backward(ctx, V_(DQ_H), V_(DK_H), V_(DV_H), V_(IDP), V_(IDO), sh,
                                    V_(IQ), V_(IK), V_(IV), &s_heads, dev_drop)) ||
        (st = cf_attention_forward(ctx, V_(OUT_R), sr, q_rows_v, k_rows, v_rows, key_view,
                                   &s_rows, dev_drop)) ||
        (st = cf_attention_backward(ctx, gq, dk_rows, dv_rows, V_(IDP), V_(DO_R), sr, q_rows_v,
                                    k_rows, v_rows, &s_rows, dev_drop)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&b)))
        goto done;
#undef V_
    /* each rows result as heads against the head layout's: by GEMMs, the
     * same products where the host provider's bits do not depend on where
     * operands lie; grouped heads as rows take the fused kernels instead */
    const bool exact = by_gemm ? ctx->gemm_provider == CLFORMER_GEMM_HOST && !grouped
                               : fused || ctx->gemm_provider == CLFORMER_GEMM_HOST;
    const struct {
        int want, got;
        size_t ld, col, T, heads;
    } pairs[4] = {{OUT_H, OUT_R, width, 0, Tq, H},
                  {DQ_H, GQ_R, dq_ld, 0, Tq, H},
                  {DK_H, cross ? GKV_R : GQ_R, dkv_ld, cross ? 0 : width, Tk, Hkv},
                  {DV_H, cross ? GKV_R : GQ_R, dkv_ld, cross ? kv_width : width + kv_width, Tk,
                   Hkv}};
    ref_cmp all[4];
    for (int i = 0; i < 4; i++) {
        const size_t count = n[pairs[i].want];
        const float *w = conf_block_out(&b, pairs[i].want);
        rows_to_heads(heads, conf_block_out(&b, pairs[i].got) + pairs[i].col, pairs[i].ld, B,
                      pairs[i].T, pairs[i].heads, dh);
        for (size_t e = 0; e < count; e++) want[e] = w[e];
        all[i] = exact ? ref_compare_exact(heads, want, count)
                       : conf_compare_stored(ctx, heads, want, count, REF_RULE_GRAD, NULL, NULL);
    }
    ref_cmp c[2] = {all[0], worst_of(all + 1, 3)};
    /* the columns past the three tensors' heads (self) or past dQ's (none: cross) */
    bool between = true;
    for (size_t row = 0; row < B * Tq && !cross; row++)
        for (size_t col = width + 2 * kv_width; col < dq_ld; col++)
            between = between && conf_block_out(&b, GQ_R)[row * dq_ld + col] == BETWEEN;
    if (!between) c[1] = failed(c[1], "the gradients' rows were written between the heads");
    /* by GEMMs: the backward alone, its forward the fused case's */
    if (by_gemm) c[1] = worst_of(c, 2);
    else conf_emit(sink, user, name[0], shape, conf_guarded(c[0], &b), 0.0);
    conf_emit(sink, user, name[1], shape, conf_guarded(c[1], &b), 0.0);
done:
    conf_block_free(&b);
    free(heads), free(want);
    return st;
}

/* Bad arguments are errors naming the fix, and write nothing. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    conf_block b = {0};
    const size_t A = conf_block_add(&b, 256), S = conf_block_add(&b, 256);
    clformer_status st = conf_block_create(ctx, &b);
    if (st) goto done;
    if ((st = conf_block_upload(&b))) goto done;
    const cf_view x = conf_block_view(&b, A), s0 = conf_block_view(&b, S), none = cf_view_at(NULL, 0);
    const cf_attention_saved same = {s0, s0, none, none, none},
                             apart = {s0, cf_view_add(s0, 128), none, none, none};
    const cf_attention_shape past_cap = {1, 1, 8, 2, 5, 4, 0, false, 5, 0}, /* Tk > Tk_cap */
        fits = {1, 1, 8, 2, 5, 5, 0, false, 5, 0},
        three_of_four = {1, 4, 8, 2, 2, 2, 0, true, 2, 3}, /* 3 key/value heads for 4 */
        grouped_rows = {1, 4, 4, 2, 2, 2, 0, true, 2, 2, true, 0, 0},
        short_rows = {1, 2, 4, 2, 2, 2, 0, true, 2, 0, true, 7, 8}; /* dq_ld 7 < 2 x 4 */
    const cf_dropout drop = {0.1f, 1, 1, 1}, all = {1.0f, 1, 1, 1};
    const char *bad = NULL;
    if (cf_attention_forward(ctx, x, &same, x, x, x, x, &past_cap, NULL) !=
            CLFORMER_ERR_INVALID_ARGUMENT ||
        !strstr(clformer_last_error(), "Tk_cap"))
        bad = "Tk > Tk_cap not refused naming Tk_cap";
    else if (cf_attention_forward(ctx, x, &same, x, x, x, x, &fits, &drop) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "probs_drop"))
        bad = "dropout with probs_drop == probs not refused naming probs_drop";
    /* p = 1 would scale the kept (none) by 1/(1-p) = inf */
    else if (cf_attention_forward(ctx, x, &apart, x, x, x, x, &fits, &all) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "must be below 1"))
        bad = "dropout p = 1 not refused";
    else if (cf_split_heads(ctx, x, x, 7, 1, 2, 2, 4) != CLFORMER_ERR_INVALID_ARGUMENT)
        bad = "split_heads with a row stride below H*dh not refused";
    else if (cf_merge_heads(ctx, x, 8, x, (size_t)1 << 20, (size_t)1 << 12, 2, 4) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "split the rows"))
        bad = "merge_heads over 2^32 rows not refused naming the fix";
    /* a decoding step's keys at positions 3..4 of caches of 4 rows a head */
    else if (cf_split_qkv_to_caches(ctx, x, x, x, x, none, 12, 1, 2, 1, 1, 4, 4, 3) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "past the cache"))
        bad = "split into caches past their rows not refused";
    else if (cf_attention_forward(ctx, x, &apart, x, x, x, x, &three_of_four, NULL) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "must divide H=4"))
        bad = "H_kv not dividing H not refused";
    else if (cf_attention_forward(ctx, x, &same, x, x, x, x, &grouped_rows, NULL) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "grouped-query"))
        bad = "rows with grouped-query heads not refused";
    else if (cf_attention_backward(ctx, x, x, x, s0, x, &same, x, x, x, &short_rows, NULL) !=
                 CLFORMER_ERR_INVALID_ARGUMENT ||
             !strstr(clformer_last_error(), "shorter than the heads"))
        bad = "gradient rows shorter than the heads not refused";
    if ((st = cf_finish(ctx)) || (st = conf_block_read(&b))) goto done;
    conf_emit(sink, user, "attention_arguments",
              "Tk > Tk_cap, probs_drop, p=1, ld, rows, cache rows, H_kv, rows for heads",
              conf_block_refusals(&b, bad), 0.0);
done:
    conf_block_free(&b);
    return st;
}

/* The profile's tiles for head size dh with each work item of the three
 * kernels holding 2 rows (keys) and, where that fits, a row split over
 * twice the items (attention_bench's "p*2 s*2" and "per*2" sets): no
 * profile takes them yet, a GPU's timing decides (docs/PERFORMANCE.md).
 * False where the profile runs no tiled kernels or neither fits. */
static bool held_tiles(const cf_ctx *ctx, size_t dh, cf_attention_tiles *t)
{
    const char *why;
    if (!cf_attention_tiles_for(&ctx->device_profile, dh, t, &why)) return false;
    t->fwd_per_item = t->dq_per_item = t->dkv_per_item = 2;
    t->fwd_split *= 2, t->dq_split *= 2, t->dkv_split *= 2;
    if (cf_attention_tiles_fit(&ctx->device_profile, t, &why)) return true;
    t->fwd_split /= 2, t->dq_split /= 2, t->dkv_split /= 2;
    return cf_attention_tiles_fit(&ctx->device_profile, t, &why);
}

/* The fused cases of `groups` again with held_tiles forced: masks,
 * dropout, grouped heads, caches and odd head sizes on those kernels too. */
static clformer_status run_held_rows(cf_ctx *ctx, const case_group *groups, size_t n_groups,
                                     bool quick, conf_sink sink, void *user)
{
    const cf_attention_tiles before = ctx->forced_tiles;
    clformer_status st = CLFORMER_OK;
    for (size_t g = 0; g < n_groups && st == CLFORMER_OK; g++) {
        const attention_case *cases = quick ? groups[g].quick : groups[g].full;
        const size_t n = quick ? groups[g].n_quick : groups[g].n_full;
        for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
            attention_case c = cases[i];
            if (!held_tiles(ctx, c.dh, &ctx->forced_tiles)) continue;
            c.seed = groups[g].seed + i, c.fused = true, c.held = true;
            st = run_case(ctx, &c, sink, user);
        }
    }
    ctx->forced_tiles = before;
    return st;
}

/* The fused cases of `groups` again with the backward by GEMMs
 * (cf_attention_saved.backward_scores); quick: the first group alone. */
static clformer_status run_by_gemm(cf_ctx *ctx, const case_group *groups, size_t n_groups,
                                   bool quick, conf_sink sink, void *user)
{
    for (size_t g = 0; g < n_groups; g++) {
        const attention_case *cases = quick ? groups[g].quick : groups[g].full;
        const size_t n = quick ? groups[g].n_quick : groups[g].n_full;
        for (size_t i = 0; i < n; i++) {
            attention_case c = cases[i];
            c.seed = groups[g].seed + i, c.fused = true, c.by_gemm = true;
            CF_TRY(run_case(ctx, &c, sink, user));
        }
    }
    return CLFORMER_OK;
}

/* The model's cases in every precision (the roundings inside the op are the
 * same at every shape: carried_roundings); the rest in fp32. quick: the
 * small shapes of each kind and 17th elements for the finite differences. */
static clformer_status attention_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const case_group model = GROUP(model_quick, model_full, 1);
    static const case_group groups[] = {
        GROUP(self_quick, self_full, 100),         GROUP(causal_quick, causal_full, 200),
        GROUP(cross_quick, cross_full, 300),       GROUP(decoding_quick, decoding_full, 400),
        GROUP(padded_quick, padded_full, 500),     FULL_ONLY(dropout_full, 600),
        FULL_ONLY(grouped_full, 700),              GROUP(heads_quick, heads_full, 800),
        FULL_ONLY(chunked_full, 900),
    };
    CF_TRY(run_group(ctx, &model, quick, sink, user));
    CF_TRY(run_by_gemm(ctx, &model, 1, quick, sink, user));
    CF_TRY(run_split_to_caches(ctx, quick, sink, user));
    /* unfused, fused, fused with the backward by GEMMs */
    for (int path = 0; path < 3; path++) {
        CF_TRY(run_rows_case(ctx, false, path > 0, path == 2, false, quick, sink, user));
        CF_TRY(run_rows_case(ctx, true, path > 0, path == 2, false, quick, sink, user));
    }
    CF_TRY(run_rows_case(ctx, false, true, false, true, quick, sink, user));
    if (ctx->precision != CLFORMER_FP32) return CLFORMER_OK;
    /* grouped heads by GEMMs against their rows on the fused kernels (the
     * tiled kernels take them as rows): two ways of rounding, compared
     * without the reference's allowances, so in fp32 alone */
    CF_TRY(run_rows_case(ctx, false, true, true, true, quick, sink, user));
    if (!quick)
        CF_TRY(run_by_gemm(ctx, groups, sizeof groups / sizeof *groups, quick, sink, user));
    for (size_t i = 0; i < sizeof groups / sizeof *groups; i++)
        CF_TRY(run_group(ctx, &groups[i], quick, sink, user));
    CF_TRY(run_without_host_items(ctx, &model, quick, sink, user));
    CF_TRY(run_held_rows(ctx, &model, 1, quick, sink, user));
    CF_TRY(run_held_rows(ctx, groups, sizeof groups / sizeof *groups, quick, sink, user));
    CF_TRY(run_fused_kernels(ctx, quick, sink, user));
    CF_TRY(run_fused_fd(ctx, quick, sink, user));
    CF_TRY(run_split_merge(ctx, quick, sink, user));
    CF_TRY(run_degenerate(ctx, sink, user));
    return run_arguments(ctx, sink, user);
}

/* --- checks of the reference ---------------------------------------------------- */

/* What rows >= Tk of the reference's dK and dV hold before its backward: it
 * must not write there. */
#define SENTINEL 12345.0

/* A problem for finite differences: L = sum_i w_i out_i over the reference
 * forward of q, k, v. */
typedef struct {
    cf_attention_shape s;
    const int32_t *keys; /* B x key_ld, or NULL */
    ref_dropout drop;
    double *q, *k, *v, *w, *out, *probs, *probs_drop;
} fd_problem;

static double fd_loss(void *user)
{
    const fd_problem *f = user;
    ref_attention_forward(f->out, f->probs, f->probs_drop, f->q, f->k, f->v, f->keys, &f->s,
                          &f->drop);
    double l = 0.0;
    for (size_t i = 0; i < f->s.B * f->s.H * f->s.Tq * f->s.dh; i++) l += f->w[i] * f->out[i];
    return l;
}

/* The reference backward of a random problem against finite differences of
 * its forward, for q, k and v: rows >= Tk of dK and dV keep SENTINEL and
 * have no effect (their differences 0). Returns the mismatches. */
static int fd_check(const cf_attention_shape *s, const int32_t *keys, const ref_dropout *drop,
                    uint64_t seed)
{
    const size_t BH = s->B * s->H, nq = BH * s->Tq * s->dh, nk = BH * s->Tk_cap * s->dh,
                 np = BH * s->Tq * s->Tk;
    fd_problem f = {*s, keys, drop ? *drop : (ref_dropout){0}};
    double *buf = calloc(4 * nq + 5 * nk + 3 * np, sizeof *buf);
    if (!buf) return 1;
    f.q = buf, f.w = f.q + nq, f.out = f.w + nq, f.k = f.out + nq, f.v = f.k + nk;
    f.probs = f.v + nk, f.probs_drop = f.probs + np;
    double *ds = f.probs_drop + np, *dq = ds + np, *dk = dq + nq, *dv = dk + nk, *live = dv + nk;
    ref_rng r = ref_rng_new(seed);
    for (size_t i = 0; i < nq; i++) f.q[i] = ref_rng_uniform(&r, -1.5, 1.5);
    for (size_t i = 0; i < nk; i++) f.k[i] = ref_rng_uniform(&r, -1.5, 1.5);
    for (size_t i = 0; i < nk; i++) f.v[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < nq; i++) f.w[i] = ref_rng_uniform(&r, -1, 1);
    for (size_t i = 0; i < nk; i++) dk[i] = dv[i] = SENTINEL;
    fd_loss(&f);
    ref_attention_backward(dq, dk, dv, ds, f.w, f.probs, f.probs_drop, f.q, f.k, f.v, s, &f.drop);
    int bad = conf_fd_check("attention dq", f.q, nq, dq, fd_loss, &f);
    double *const x[2] = {f.k, f.v}, *const g[2] = {dk, dv};
    for (int t = 0; t < 2; t++) {
        /* rows >= Tk: the backward leaves them; as inputs they change nothing */
        for (size_t i = 0; i < nk; i++) {
            const bool dead = (i / s->dh) % s->Tk_cap >= s->Tk;
            bad += dead && g[t][i] != SENTINEL;
            live[i] = dead ? 0.0 : g[t][i];
        }
        bad += conf_fd_check(t ? "attention dv" : "attention dk", x[t], nk, live, fd_loss, &f);
    }
    free(buf);
    return bad;
}

/* Batch 0 unpadded, batch 1 right-padded after 3 keys (and one pad inside). */
static const int32_t keys_2x8[] = {5, 6, 7, 8, 9, 10, 11, 12, /**/ 4, 0, 9, 0, 0, 0, 0, 0};

/* {B, H, dh, Tq, Tk, Tk_cap, q_pos0, causal, key_ld}: padded self-attention,
 * causal, cross, decoding shapes (Tq != Tk, Tk_cap > Tk, q_pos0 > 0), then
 * with dropout. */
static int fd_cases(void)
{
    static const cf_attention_shape self = {2, 2, 4, 5, 5, 5, 0, false, 8},
                                    causal = {2, 2, 4, 5, 5, 5, 0, true, 8},
                                    cross = {2, 1, 3, 3, 6, 8, 0, false, 8},
                                    decoding = {2, 2, 4, 2, 6, 7, 3, true, 8},
                                    one = {1, 2, 5, 1, 6, 9, 5, true, 8},
                                    drop_self = {2, 2, 4, 4, 5, 6, 0, false, 8},
                                    drop_causal = {2, 1, 3, 5, 5, 5, 0, true, 8};
    static const ref_dropout d1 = {0.3f, 99, 7, 3}, d2 = {0.5f, 1234567890123ULL, 1, 2};
    return fd_check(&self, keys_2x8, NULL, 1) + fd_check(&causal, keys_2x8, NULL, 2) +
           fd_check(&cross, keys_2x8, NULL, 3) + fd_check(&decoding, keys_2x8, NULL, 4) +
           fd_check(&one, NULL, NULL, 5) + fd_check(&drop_self, keys_2x8, &d1, 6) +
           fd_check(&drop_causal, keys_2x8, &d2, 7);
}

/* Batch 1 has only pad keys: its outputs, probabilities and gradients are
 * exactly 0, batch 0's are not; and finite differences hold. */
static int padded_batch_is_zero_not_nan(void)
{
    static const int32_t keys[] = {3, 4, 5, 6, 0, 0, 0, 0};
    const cf_attention_shape s = {2, 2, 3, 4, 4, 4, 0, true, 4};
    const ref_dropout drop = {0.2f, 5, 1, 1};
    enum { N = 2 * 2 * 4 * 3, NP = 2 * 2 * 4 * 4 };
    double q[N], k[N], v[N], w[N], out[N], dq[N], dk[N], dv[N], p[NP], pd[NP], ds[NP];
    ref_rng r = ref_rng_new(8);
    for (size_t i = 0; i < N; i++) {
        q[i] = ref_rng_uniform(&r, -1, 1), k[i] = ref_rng_uniform(&r, -1, 1);
        v[i] = ref_rng_uniform(&r, -1, 1), w[i] = ref_rng_uniform(&r, -1, 1);
    }
    ref_attention_forward(out, p, pd, q, k, v, keys, &s, &drop);
    ref_attention_backward(dq, dk, dv, ds, w, p, pd, q, k, v, &s, &drop);
    int bad = 0;
    for (size_t i = N / 2; i < N; i++)
        bad += !(out[i] == 0.0 && dq[i] == 0.0 && dk[i] == 0.0 && dv[i] == 0.0);
    for (size_t i = NP / 2; i < NP; i++) bad += !(p[i] == 0.0 && pd[i] == 0.0 && ds[i] == 0.0);
    double any = 0.0;
    for (size_t i = 0; i < N / 2; i++) any += fabs(out[i]) + fabs(dq[i]);
    bad += !(any > 0.0);
    return bad + fd_check(&s, keys, &drop, 9);
}

/* Softmax rows sum to 1 over the visible keys and are 0 on masked ones;
 * dropout keeps about 1 - p of the entries, scaled by 1/(1 - p); another
 * site draws another mask. */
static int masks_softmax_and_dropout(void)
{
    const cf_attention_shape s = {2, 4, 8, 16, 40, 48, 10, true, 40};
    enum { BH = 8, NQ = BH * 16 * 8, NK = BH * 48 * 8, NP = BH * 16 * 40 };
    int32_t keys[80];
    for (int i = 0; i < 80; i++) keys[i] = (i % 40) < (i < 40 ? 40 : 29) ? 7 + i : 0;
    double *buf = calloc(2 * NQ + 2 * NK + 3 * NP, sizeof *buf);
    if (!buf) return 1;
    double *q = buf, *out = q + NQ, *k = out + NQ, *v = k + NK, *p = v + NK, *pd = p + NP,
           *pd2 = pd + NP;
    ref_rng r = ref_rng_new(10);
    for (size_t i = 0; i < NQ; i++) q[i] = ref_rng_uniform(&r, -2, 2);
    for (size_t i = 0; i < NK; i++) k[i] = ref_rng_uniform(&r, -2, 2), v[i] = k[i];
    const ref_dropout drop = {0.25f, 42, 3, 17}, other = {0.25f, 42, 3, 18};
    ref_attention_forward(out, p, pd, q, k, v, keys, &s, &drop);
    int bad = 0;
    size_t kept = 0, nonzero = 0;
    for (size_t bh = 0; bh < BH; bh++)
        for (size_t t = 0; t < 16; t++) {
            double sum = 0.0;
            for (size_t j = 0; j < 40; j++) {
                const size_t i = (bh * 16 + t) * 40 + j;
                const bool vis = j <= 10 + t && keys[(bh / 4) * 40 + j] != 0;
                bad += !vis && !(p[i] == 0.0 && pd[i] == 0.0);
                sum += p[i];
                nonzero += p[i] > 0.0;
                if (p[i] > 0.0 && pd[i] != 0.0) {
                    kept++;
                    bad += !(fabs(pd[i] - p[i] / 0.75) <= 1e-15);
                }
            }
            bad += !(fabs(sum - 1.0) < 1e-12);
        }
    bad += !(fabs((double)kept / (double)nonzero - 0.75) <= 0.04);
    ref_attention_forward(out, p, pd2, q, k, v, keys, &s, &other);
    bad += memcmp(pd, pd2, NP * sizeof *pd) == 0;
    free(buf);
    return bad;
}

/* Element (b=1, h=2, t=1, j=3) of the split comes from row b*T + t, column
 * h*dh + j, and merge gives the packed rows back, other columns untouched. */
static int split_merge_round_trip(void)
{
    enum { B = 2, T = 3, H = 3, DH = 5, LD = H * DH + 4 };
    double src[B * T * LD], heads[B * H * T * DH], back[B * T * LD];
    for (size_t i = 0; i < B * T * LD; i++) src[i] = (double)i, back[i] = -1.0;
    ref_split_heads(heads, src, LD, B, T, H, DH);
    int bad = !(heads[((1 * H + 2) * T + 1) * DH + 3] == src[(1 * T + 1) * LD + 2 * DH + 3]);
    ref_merge_heads(back, LD, heads, B, T, H, DH);
    for (size_t row = 0; row < B * T; row++)
        for (size_t c = 0; c < LD; c++)
            bad += back[row * LD + c] != (c < H * DH ? src[row * LD + c] : -1.0);
    return bad;
}

static int attention_gradcheck(void)
{
    const int fd = fd_cases(), rules = padded_batch_is_zero_not_nan() +
                                       masks_softmax_and_dropout() + split_merge_round_trip();
    if (rules) fprintf(stderr, "attention reference: %d mismatches of its rules\n", rules);
    return fd + rules;
}

CONF_OP(attention) = {"attention", "split_heads split_heads_bias merge_heads attention_softmax attention_decode attention_softmax_backward flash_attention_forward|flash_attention_forward_simple|flash_tiled_forward flash_attention_backward_dq|flash_attention_backward_dq_simple|flash_tiled_backward_dq flash_attention_backward_dkv|flash_attention_backward_dkv_simple|flash_tiled_backward_dkv",
    "cf_attention_forward, cf_attention_backward (materialised, fused per row and tiled; a decoding step's in one launch), cf_split_heads, cf_merge_heads, cf_split_qkv_to_caches",
    "ref_attention_forward, ref_attention_backward, ref_split_heads, ref_merge_heads (this file)",
    "gradient rule for the output and every gradient; exact for the head layout",
    attention_check, attention_gradcheck, NULL, true};
