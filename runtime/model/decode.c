/*
 * Greedy and beam-search decoding with key/value caches.
 *
 * The source batch (each sentence repeated beam times) is encoded once; each
 * decoder layer's cross-attention keys and values are projected once into
 * caches; each step then runs the decoder on ONE new position per row,
 * appending that position's self-attention keys and values to the caches.
 * Rows: r = sentence * beam + k. A step reads back only what the search
 * needs: the argmax ids (greedy) or the log-probabilities (beam).
 */
#include "decode.h"
#include "arena.h"
#include "launch.h"
#include "program.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cf_decoder {
    size_t R, S, L;       /* rows, source length, positions (cache capacity) */
    cl_mem buf;
    size_t count;
    cf_view *self_k, *self_v, *cross_k, *cross_v; /* per layer: (R,H,L,dh) and (R,H,S,dh) */
    cf_view x, fin, sum, mean, rstd;              /* (R, d), (R) */
    cf_view qkv, qh, ctx_h, concat, out;          /* (R, 3d), (R, d) ... */
    cf_view ff_pre, ff_act;                       /* (R, d_ff) */
    cf_view probs;                                /* (R, H, max(L, S)) */
    cf_view logits;                               /* (R, V) */
    cf_view kv;                                   /* (R*S, 2d) cross projection */
    cf_view gather_tmp;                           /* (R, H, L, dh) */
    cf_view tokens;                               /* int (R, L): inputs so far */
    cf_view step_tokens, argmax, parents;         /* int (R) */
};

void cf_decoder_free(cf_model *m)
{
    struct cf_decoder *d = m->decoder;
    if (!d) return;
    cf_buffer_free(m->ctx, d->buf);
    free(d->self_k);
    free(d->self_v);
    free(d->cross_k);
    free(d->cross_v);
    free(d);
    m->decoder = NULL;
}

size_t cf_decoder_bytes(const cf_model *m) { return m->decoder ? m->decoder->count * 4 : 0; }

static size_t layout(cf_model *m, struct cf_decoder *d, cl_mem buf)
{
    const clformer_config *c = &m->cfg;
    const size_t R = d->R, S = d->S, L = d->L, D = (size_t)c->d_model;
    const size_t H = (size_t)c->n_heads, ff = (size_t)c->d_ff, V = (size_t)c->tgt_vocab;
    cf_arena a = {buf, 0};
    for (int l = 0; l < c->n_dec_layers; l++) {
        d->self_k[l] = cf_arena_take(&a, R * L * D);
        d->self_v[l] = cf_arena_take(&a, R * L * D);
        d->cross_k[l] = cf_arena_take(&a, R * S * D);
        d->cross_v[l] = cf_arena_take(&a, R * S * D);
    }
    d->x = cf_arena_take(&a, R * D);
    d->fin = cf_arena_take(&a, R * D);
    d->sum = cf_arena_take(&a, R * D);
    d->mean = cf_arena_take(&a, R);
    d->rstd = cf_arena_take(&a, R);
    d->qkv = cf_arena_take(&a, R * 3 * D);
    d->qh = cf_arena_take(&a, R * D);
    d->ctx_h = cf_arena_take(&a, R * D);
    d->concat = cf_arena_take(&a, R * D);
    d->out = cf_arena_take(&a, R * D);
    d->ff_pre = cf_arena_take(&a, R * ff);
    d->ff_act = cf_arena_take(&a, R * ff);
    d->probs = cf_arena_take(&a, R * H * (L > S ? L : S));
    d->logits = cf_arena_take(&a, R * V);
    d->kv = cf_arena_take(&a, R * S * 2 * D);
    d->gather_tmp = cf_arena_take(&a, R * L * D);
    d->tokens = cf_arena_take(&a, R * L);
    d->step_tokens = cf_arena_take(&a, R);
    d->argmax = cf_arena_take(&a, R);
    d->parents = cf_arena_take(&a, R);
    return a.next;
}

/* Caches for R rows, source length S and L positions; grown when needed. */
static clformer_status decoder_prepare(cf_model *m, size_t R, size_t S, size_t L)
{
    struct cf_decoder *d = m->decoder;
    const size_t layers = (size_t)m->cfg.n_dec_layers;
    if (!d) {
        d = calloc(1, sizeof *d);
        if (d) {
            d->self_k = calloc(layers, sizeof(cf_view));
            d->self_v = calloc(layers, sizeof(cf_view));
            d->cross_k = calloc(layers, sizeof(cf_view));
            d->cross_v = calloc(layers, sizeof(cf_view));
        }
        m->decoder = d;
        if (!d || !d->self_k || !d->self_v || !d->cross_k || !d->cross_v) {
            cf_decoder_free(m);
            return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    d->R = R;
    d->S = S;
    d->L = L;
    size_t need = layout(m, d, NULL);
    if (need > d->count) {
        cf_buffer_free(m->ctx, d->buf);
        d->buf = NULL;
        d->count = 0;
        clformer_status st = cf_buffer_alloc(m->ctx, need, "decoding caches", &d->buf);
        if (st != CLFORMER_OK)
            return cf_fail_prefix(st, "decoding %zu rows of up to %zu tokens: ", R, L);
        d->count = need;
    }
    layout(m, d, d->buf);
    return CLFORMER_OK;
}

static cf_view P(const cf_model *m, size_t off) { return cf_view_at(m->params, off); }
static const cf_view NONE = {NULL, 0};

static clformer_status launch2(cf_model *m, const char *kernel, size_t g0, size_t g1, size_t nargs,
                               const cf_arg *args)
{
    cl_kernel k;
    CF_TRY(cf_kernel(m->ctx, "decode", NULL, kernel, &k));
    size_t local[2] = {m->ctx->elementwise_wg, 1}, global[2] = {g0, g1};
    return cf_launch(m->ctx, "decode", k, 2, global, local, nargs, args);
}
#define LAUNCH2(m, kernel, g0, g1, ...)                                                        \
    launch2((m), (kernel), (g0), (g1), sizeof((cf_arg[]){__VA_ARGS__}) / sizeof(cf_arg),       \
            (cf_arg[]){__VA_ARGS__})

/* x = pre-norm ? x + f : LN(x + f), in place. */
static clformer_status residual(cf_model *m, size_t nw, size_t nb, cf_view f)
{
    struct cf_decoder *d = m->decoder;
    const size_t D = (size_t)m->cfg.d_model;
    if (m->cfg.norm_first) return cf_residual_dropout_forward(m->ctx, d->x, d->x, f, d->R * D, NULL);
    CF_TRY(cf_residual_dropout_forward(m->ctx, d->sum, d->x, f, d->R * D, NULL));
    return cf_layernorm_forward(m->ctx, d->x, d->mean, d->rstd, d->sum, P(m, nw), P(m, nb), d->R,
                                D, m->cfg.ln_eps);
}

/* The sublayer input: LN(x) for pre-norm, x itself for post-norm. */
static clformer_status sub_input(cf_model *m, size_t nw, size_t nb, cf_view *fin)
{
    struct cf_decoder *d = m->decoder;
    if (!m->cfg.norm_first) {
        *fin = d->x;
        return CLFORMER_OK;
    }
    *fin = d->fin;
    return cf_layernorm_forward(m->ctx, d->fin, d->mean, d->rstd, d->x, P(m, nw), P(m, nb), d->R,
                                (size_t)m->cfg.d_model, m->cfg.ln_eps);
}

/* Projects the memory into every layer's cross-attention key/value caches. */
static clformer_status fill_cross_caches(cf_model *m)
{
    struct cf_decoder *d = m->decoder;
    const size_t D = (size_t)m->cfg.d_model, H = (size_t)m->cfg.n_heads, dh = D / H;
    for (int l = 0; l < m->cfg.n_dec_layers; l++) {
        const cf_attn_params *p = &m->layout.dec[l].cross_attn;
        CF_TRY(cf_linear_forward(m->ctx, d->kv, m->acts.memory, P(m, p->in_proj_w + D * D),
                                 P(m, p->in_proj_b + D), d->R * d->S, D, 2 * D));
        CF_TRY(cf_split_heads(m->ctx, d->cross_k[l], d->kv, 2 * D, d->R, d->S, H, dh));
        CF_TRY(cf_split_heads(m->ctx, d->cross_v[l], cf_view_add(d->kv, D), 2 * D, d->R, d->S, H, dh));
    }
    return CLFORMER_OK;
}

/* One decoder position t for every row: logits (R, V) from step_tokens.
 * With `attention`, the last layer's cross-attention of row 0 (H x S floats)
 * is copied there. */
static clformer_status decode_step(cf_model *m, size_t t, float *attention)
{
    cf_ctx *ctx = m->ctx;
    struct cf_decoder *d = m->decoder;
    const clformer_config *c = &m->cfg;
    const size_t R = d->R, S = d->S, L = d->L, D = (size_t)c->d_model, H = (size_t)c->n_heads;
    const size_t dh = D / H, ff = (size_t)c->d_ff;
    const cf_view pos = c->positional == CLFORMER_POS_LEARNED ? P(m, m->layout.pos_embed) : NONE;
    CF_TRY(cf_embedding_forward_at(ctx, d->x, d->step_tokens, P(m, m->layout.tgt_embed), pos, R,
                                   t, D, sqrtf((float)D)));
    for (int l = 0; l < c->n_dec_layers; l++) {
        const cf_layer_params *p = &m->layout.dec[l];
        cf_view fin;
        /* self-attention over positions 0..t, this one appended to the caches */
        CF_TRY(sub_input(m, p->norm_w[0], p->norm_b[0], &fin));
        CF_TRY(cf_linear_forward(ctx, d->qkv, fin, P(m, p->self_attn.in_proj_w),
                                 P(m, p->self_attn.in_proj_b), R, D, 3 * D));
        for (int kv = 1; kv <= 2; kv++) {
            cf_view cache = kv == 1 ? d->self_k[l] : d->self_v[l];
            CF_TRY(LAUNCH2(m, "kv_cache_write", dh, R * H, CF_MEM(cache.buf), CF_U64(cache.off),
                           CF_MEM(d->qkv.buf), CF_U64(d->qkv.off + kv * D), CF_I32(3 * D),
                           CF_I32(R), CF_I32(H), CF_I32(dh), CF_I32(L), CF_I32(t)));
        }
        CF_TRY(cf_split_heads(ctx, d->qh, d->qkv, 3 * D, R, 1, H, dh));
        const cf_attention_shape self = {R, H, dh, 1, t + 1, L, t, true, L};
        const cf_attention_saved self_saved = {d->probs, d->probs};
        CF_TRY(cf_attention_forward(ctx, d->ctx_h, &self_saved, d->qh, d->self_k[l], d->self_v[l],
                                    d->tokens, &self, NULL));
        CF_TRY(cf_merge_heads(ctx, d->concat, D, d->ctx_h, R, 1, H, dh));
        CF_TRY(cf_linear_forward(ctx, d->out, d->concat, P(m, p->self_attn.out_w),
                                 P(m, p->self_attn.out_b), R, D, D));
        CF_TRY(residual(m, p->norm_w[0], p->norm_b[0], d->out));

        /* cross-attention over the cached memory projections */
        CF_TRY(sub_input(m, p->norm_w[1], p->norm_b[1], &fin));
        CF_TRY(cf_linear_forward(ctx, d->qkv, fin, P(m, p->cross_attn.in_proj_w),
                                 P(m, p->cross_attn.in_proj_b), R, D, D));
        CF_TRY(cf_split_heads(ctx, d->qh, d->qkv, D, R, 1, H, dh));
        const cf_attention_shape cross = {R, H, dh, 1, S, S, 0, false, S};
        const cf_attention_saved cross_saved = {d->probs, d->probs};
        CF_TRY(cf_attention_forward(ctx, d->ctx_h, &cross_saved, d->qh, d->cross_k[l],
                                    d->cross_v[l], m->acts.src, &cross, NULL));
        if (attention && l == c->n_dec_layers - 1)
            CF_TRY(cf_download(ctx, d->probs.buf, d->probs.off, attention, H * S));
        CF_TRY(cf_merge_heads(ctx, d->concat, D, d->ctx_h, R, 1, H, dh));
        CF_TRY(cf_linear_forward(ctx, d->out, d->concat, P(m, p->cross_attn.out_w),
                                 P(m, p->cross_attn.out_b), R, D, D));
        CF_TRY(residual(m, p->norm_w[1], p->norm_b[1], d->out));

        /* feed-forward */
        CF_TRY(sub_input(m, p->norm_w[2], p->norm_b[2], &fin));
        CF_TRY(cf_linear_forward(ctx, d->ff_pre, fin, P(m, p->lin1_w), NONE, R, D, ff));
        CF_TRY(cf_bias_act_forward(ctx, d->ff_act, d->ff_pre, P(m, p->lin1_b), R, ff,
                                   (cf_activation)c->activation, NULL));
        CF_TRY(cf_linear_forward(ctx, d->out, d->ff_act, P(m, p->lin2_w), P(m, p->lin2_b), R, ff, D));
        CF_TRY(residual(m, p->norm_w[2], p->norm_b[2], d->out));
    }
    CF_TRY(cf_layernorm_forward(ctx, d->fin, d->mean, d->rstd, d->x, P(m, m->layout.dec_norm_w),
                                P(m, m->layout.dec_norm_b), R, D, c->ln_eps));
    return cf_linear_forward(ctx, d->logits, d->fin, P(m, m->layout.generator_w),
                             P(m, m->layout.generator_b), R, D, (size_t)c->tgt_vocab);
}

/* Sets the step tokens (and column `col` of the token table) from host ids. */
static clformer_status set_step_tokens(cf_model *m, const int32_t *ids, size_t col)
{
    struct cf_decoder *d = m->decoder;
    CF_TRY(cf_upload(m->ctx, d->step_tokens.buf, d->step_tokens.off, ids, d->R));
    return LAUNCH2(m, "set_column", d->R, 1, CF_MEM(d->tokens.buf), CF_U64(d->tokens.off),
                   CF_I32(d->L), CF_I32(col), CF_MEM(d->step_tokens.buf),
                   CF_U64(d->step_tokens.off), CF_I32(d->R));
}

/* Encodes the source (each sentence repeated `copies` times) and fills the
 * cross caches; returns the decoding length L. */
static clformer_status start(cf_model *m, const int32_t *src, size_t batch, size_t S,
                             size_t copies, size_t L)
{
    const size_t R = batch * copies;
    CF_TRY(cf_acts_prepare(m, R, S, 1, false));
    int32_t *rows = malloc(R * S * sizeof *rows);
    if (!rows) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < R; r++) memcpy(rows + r * S, src + (r / copies) * S, S * sizeof *rows);
    clformer_status st = cf_upload(m->ctx, m->arena, m->acts.src.off, rows, R * S);
    free(rows);
    CF_TRY(st);
    CF_TRY(cf_forward_encoder(m));
    CF_TRY(decoder_prepare(m, R, S, L));
    CF_TRY(fill_cross_caches(m));
    /* every row starts from <sos> at position 0; later columns fill as tokens come */
    int32_t *sos = malloc(R * sizeof *sos);
    if (!sos) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < R; r++) sos[r] = CLFORMER_SOS;
    st = cf_fill_u32(m->ctx, m->decoder->tokens.buf, m->decoder->tokens.off, R * L, CLFORMER_EOS);
    if (st == CLFORMER_OK) st = set_step_tokens(m, sos, 0);
    free(sos);
    return st;
}

static clformer_status greedy(cf_model *m, size_t batch, size_t L, clformer_translation *out)
{
    struct cf_decoder *d = m->decoder;
    const size_t R = batch, H = (size_t)m->cfg.n_heads, S = d->S;
    int32_t *ids = malloc(R * sizeof *ids);
    bool *done = calloc(R, sizeof *done);
    clformer_status st = ids && done ? CLFORMER_OK
                                     : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t finished = 0;
    for (size_t t = 0; t < L && finished < R && st == CLFORMER_OK; t++) {
        float *att = out->attention && !done[0] ? out->attention + t * H * S : NULL;
        st = decode_step(m, t, att);
        if (att) out->attention_rows = t + 1;
        if (st == CLFORMER_OK) st = cf_argmax_rows(m->ctx, d->argmax, d->logits, R, (size_t)m->cfg.tgt_vocab);
        if (st == CLFORMER_OK) st = cf_download(m->ctx, d->argmax.buf, d->argmax.off, ids, R);
        for (size_t r = 0; r < R && st == CLFORMER_OK; r++) {
            if (done[r]) {
                ids[r] = CLFORMER_EOS; /* finished rows idle on <eos> */
                continue;
            }
            if (ids[r] == CLFORMER_EOS || t + 1 == L) {
                done[r] = true;
                finished++;
            }
            if (ids[r] != CLFORMER_EOS) out->tokens[r * L + out->lengths[r]++] = ids[r];
        }
        if (st == CLFORMER_OK && t + 1 < L && finished < R) st = set_step_tokens(m, ids, t + 1);
    }
    free(ids);
    free(done);
    return st;
}

/* One hypothesis of a sentence's beam. */
typedef struct {
    double score;   /* sum of log-probabilities */
    int32_t *tokens;/* L entries; `len` used */
    size_t len;
} hypothesis;

typedef struct {
    hypothesis *alive;    /* K */
    hypothesis best;      /* best finished so far (normalised score in best.score) */
    size_t n_finished;
    bool done;
} sentence_beam;

typedef struct {
    double score;
    size_t beam;
    int32_t token;
} candidate;

static int by_score_desc(const void *a, const void *b)
{
    double x = ((const candidate *)a)->score, y = ((const candidate *)b)->score;
    return (x < y) - (x > y);
}

/* Keeps the `cap` best candidates seen in a min-heap (worst at the root):
 * O(K V log K) per sentence instead of sorting all K V candidates. */
static void heap_offer(candidate *heap, size_t *n, size_t cap, candidate c)
{
    size_t i;
    if (*n < cap) {
        i = (*n)++;
        while (i > 0 && heap[(i - 1) / 2].score > c.score) {
            heap[i] = heap[(i - 1) / 2];
            i = (i - 1) / 2;
        }
        heap[i] = c;
        return;
    }
    if (c.score <= heap[0].score) return;
    i = 0;
    for (;;) { /* sift the new candidate down from the root */
        size_t l = 2 * i + 1, r = l + 1, m = i;
        double ms = c.score;
        if (l < cap && heap[l].score < ms) m = l, ms = heap[l].score;
        if (r < cap && heap[r].score < ms) m = r;
        if (m == i) break;
        heap[i] = heap[m];
        i = m;
    }
    heap[i] = c;
}

static double normalised(double score, size_t len, float penalty)
{
    return score / pow((double)(len ? len : 1), (double)penalty);
}

static clformer_status beam_search(cf_model *m, size_t batch, size_t K, size_t L, float penalty,
                                   clformer_translation *out)
{
    struct cf_decoder *d = m->decoder;
    const size_t R = batch * K, V = (size_t)m->cfg.tgt_vocab, D = (size_t)m->cfg.d_model;
    float *logp = malloc(R * V * sizeof *logp);
    /* 2K candidates always hold K that do not end the sentence */
    candidate *cand = malloc(2 * K * sizeof *cand);
    sentence_beam *sb = calloc(batch, sizeof *sb);
    int32_t *parents = malloc(R * sizeof *parents), *next = malloc(R * sizeof *next);
    int32_t *pool = calloc(2 * R * L + batch * L, sizeof *pool);
    hypothesis *alive_store = calloc(2 * R, sizeof *alive_store);
    clformer_status st = logp && cand && sb && parents && next && pool && alive_store
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLFORMER_OK)
        for (size_t b = 0; b < batch; b++) {
            sb[b].alive = alive_store + b * K;
            sb[b].best.tokens = pool + 2 * R * L + b * L;
            sb[b].best.score = -INFINITY;
            for (size_t k = 0; k < K; k++) {
                sb[b].alive[k].tokens = pool + (b * K + k) * L;
                sb[b].alive[k].score = k == 0 ? 0.0 : -INFINITY; /* one live beam at first */
            }
        }
    hypothesis *scratch = alive_store + R; /* next generation, K per sentence */
    for (size_t i = 0; st == CLFORMER_OK && i < R; i++) scratch[i].tokens = pool + (R + i) * L;

    size_t sentences_done = 0;
    for (size_t t = 0; t < L && sentences_done < batch && st == CLFORMER_OK; t++) {
        st = decode_step(m, t, NULL);
        if (st == CLFORMER_OK) st = cf_log_softmax_rows(m->ctx, d->logits, d->logits, R, V);
        if (st == CLFORMER_OK) st = cf_download(m->ctx, d->logits.buf, d->logits.off, logp, R * V);
        const bool last = t + 1 == L;
        for (size_t b = 0; b < batch && st == CLFORMER_OK; b++) {
            sentence_beam *s = &sb[b];
            if (s->done) {
                for (size_t k = 0; k < K; k++) {
                    parents[b * K + k] = (int32_t)(b * K + k);
                    next[b * K + k] = CLFORMER_EOS;
                }
                continue;
            }
            size_t nc = 0;
            for (size_t k = 0; k < K; k++) {
                if (!isfinite(s->alive[k].score)) continue;
                const float *lp = logp + (b * K + k) * V;
                for (size_t v = 0; v < V; v++)
                    heap_offer(cand, &nc, 2 * K,
                               (candidate){s->alive[k].score + lp[v], k, (int32_t)v});
            }
            qsort(cand, nc, sizeof *cand, by_score_desc);
            size_t kept = 0;
            for (size_t i = 0; i < nc && kept < K; i++) {
                const hypothesis *h = &s->alive[cand[i].beam];
                if (cand[i].token == CLFORMER_EOS || last) {
                    /* a finished hypothesis; <eos> counts towards its length */
                    size_t len = h->len + 1;
                    double ns = normalised(cand[i].score, len, penalty);
                    if (ns > s->best.score) {
                        s->best.score = ns;
                        memcpy(s->best.tokens, h->tokens, h->len * sizeof *h->tokens);
                        s->best.len = h->len;
                        if (cand[i].token != CLFORMER_EOS) s->best.tokens[s->best.len++] = cand[i].token;
                    }
                    s->n_finished++;
                    continue;
                }
                hypothesis *n = &scratch[b * K + kept];
                memcpy(n->tokens, h->tokens, h->len * sizeof *h->tokens);
                n->len = h->len;
                n->tokens[n->len++] = cand[i].token;
                n->score = cand[i].score;
                parents[b * K + kept] = (int32_t)(b * K + cand[i].beam);
                next[b * K + kept] = cand[i].token;
                kept++;
            }
            for (size_t k = kept; k < K; k++) { /* fewer live candidates than beams */
                scratch[b * K + k].score = -INFINITY;
                scratch[b * K + k].len = 0;
                parents[b * K + k] = (int32_t)(b * K);
                next[b * K + k] = CLFORMER_EOS;
            }
            /* finished when K hypotheses ended, or no live one can beat the best */
            if (s->n_finished >= K || kept == 0 || last) {
                s->done = true;
                sentences_done++;
            }
            for (size_t k = 0; k < K; k++) { /* swap generations */
                hypothesis tmp = s->alive[k];
                s->alive[k] = scratch[b * K + k];
                scratch[b * K + k] = tmp;
            }
        }
        if (st != CLFORMER_OK || t + 1 >= L || sentences_done == batch) break;
        /* reorder every self-attention cache and the token table by parent row */
        st = cf_upload(m->ctx, d->parents.buf, d->parents.off, parents, R);
        const size_t row = (size_t)m->cfg.n_heads * L * (D / (size_t)m->cfg.n_heads);
        for (int l = 0; l < m->cfg.n_dec_layers && st == CLFORMER_OK; l++)
            for (int kv = 0; kv < 2 && st == CLFORMER_OK; kv++) {
                cf_view cache = kv ? d->self_v[l] : d->self_k[l];
                st = LAUNCH2(m, "gather_rows", row, R, CF_MEM(d->gather_tmp.buf),
                             CF_U64(d->gather_tmp.off), CF_MEM(cache.buf), CF_U64(cache.off),
                             CF_MEM(d->parents.buf), CF_U64(d->parents.off), CF_U64(row),
                             CF_I32(R));
                if (st == CLFORMER_OK)
                    st = cf_copy(m->ctx, d->gather_tmp.buf, d->gather_tmp.off, cache.buf,
                                 cache.off, R * row);
            }
        if (st == CLFORMER_OK) {
            /* the token table is small: rebuild it from the hypotheses */
            int32_t *table = malloc(R * L * sizeof *table);
            if (!table) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            for (size_t r = 0; table && r < R; r++) {
                const hypothesis *h = &sb[r / K].alive[r % K];
                table[r * L] = CLFORMER_SOS;
                for (size_t i = 1; i < L; i++)
                    table[r * L + i] = i <= h->len ? h->tokens[i - 1] : CLFORMER_EOS;
            }
            if (table) st = cf_upload(m->ctx, d->tokens.buf, d->tokens.off, table, R * L);
            free(table);
            if (st == CLFORMER_OK)
                st = cf_upload(m->ctx, d->step_tokens.buf, d->step_tokens.off, next, R);
        }
    }
    for (size_t b = 0; b < batch && st == CLFORMER_OK; b++) {
        memcpy(out->tokens + b * L, sb[b].best.tokens, sb[b].best.len * sizeof(int32_t));
        out->lengths[b] = sb[b].best.len;
    }
    free(logp);
    free(cand);
    free(sb);
    free(parents);
    free(next);
    free(pool);
    free(alive_store);
    return st;
}

void clformer_decode_options_default(clformer_decode_options *o)
{
    o->beam = 1;
    o->max_len = 0;
    o->length_penalty = 1.0f;
    o->record_attention = false;
}

void clformer_translation_free(clformer_translation *t)
{
    free(t->tokens);
    free(t->lengths);
    free(t->attention);
    memset(t, 0, sizeof *t);
}

clformer_status clformer_translate(clformer_model *m, const int32_t *src, size_t batch,
                                   size_t src_len, const clformer_decode_options *o,
                                   clformer_translation *out)
{
    memset(out, 0, sizeof *out);
    const clformer_config *c = &m->cfg;
    if (batch == 0 || src_len == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "nothing to translate: empty batch");
    if (src_len > (size_t)c->max_len)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "source length %zu exceeds the model's max_len %d", src_len, c->max_len);
    for (size_t i = 0; i < batch * src_len; i++)
        if (src[i] < 0 || src[i] >= c->src_vocab)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "token id %d at source sentence %zu position %zu is out of range: "
                           "the source vocabulary has %d tokens", (int)src[i], i / src_len,
                           i % src_len, c->src_vocab);
    if (o->beam < 1 || o->beam > 64)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "beam size must be 1..64, got %d", o->beam);
    if (o->max_len < 0 || !(o->length_penalty >= 0.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "bad decoding options");
    /* the decoder sees <sos> plus generated tokens: at most max_len positions */
    size_t L = (size_t)c->max_len - 1;
    if (o->max_len > 0 && (size_t)o->max_len < L) L = (size_t)o->max_len;
    out->tokens = calloc(batch * L, sizeof *out->tokens);
    out->lengths = calloc(batch, sizeof *out->lengths);
    out->max_len = L;
    if (o->record_attention) {
        out->heads = (size_t)c->n_heads;
        out->src_len = src_len;
        out->attention = calloc(L * out->heads * src_len, sizeof *out->attention);
    }
    clformer_status st = out->tokens && out->lengths && (!o->record_attention || out->attention)
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const size_t K = (size_t)o->beam;
    if (st == CLFORMER_OK) st = start(m, src, batch, src_len, K, L);
    if (st == CLFORMER_OK)
        st = K == 1 ? greedy(m, batch, L, out) : beam_search(m, batch, K, L, o->length_penalty, out);
    if (st != CLFORMER_OK) clformer_translation_free(out);
    return st;
}
