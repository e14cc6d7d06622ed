/*
 * Decoding's key/value caches and the steps that greedy decoding and beam
 * search (translate.c, beam.c, beam_device.c) share.
 *
 * The source batch (each sentence repeated beam times) is encoded once; each
 * decoder layer's cross-attention keys and values are projected once into
 * caches; each step then runs the decoder block (forward.c) on ONE new
 * position per row, appending that position's self-attention keys and
 * values to the caches. Rows: r = sentence * beam + k. A step reads back
 * only what the search needs: the argmax ids (greedy), one counter (beam
 * search on the device, beam_device.c) or the log-probabilities (beam.c,
 * for devices without fp64). Everything lives in the session.
 */
#include "decode.h"
#include "arena.h"
#include "ops_beam.h"
#include "ops_decode.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cf_decoder_free(cf_session *s)
{
    struct cf_decoder *d = s->decoder;
    if (!d) return;
    cf_buffer_free(s->ctx, d->buf);
    cf_buffer_free(s->ctx, d->beam_buf);
    free(d->self_k);
    free(d->self_v);
    free(d->cross_k);
    free(d->cross_v);
    free(d);
    s->decoder = NULL;
}

size_t cf_decoder_bytes(const cf_session *s)
{
    return s->decoder ? (s->decoder->count + s->decoder->beam_count) * 4 : 0;
}

/* The width of a self-attention cache row: kv_heads * dh. */
static size_t kv_width(const cf_model *m)
{
    return m->blocks.kv_heads * (size_t)(m->cfg.d_model / m->cfg.n_heads);
}

static size_t layout(const cf_model *m, struct cf_decoder *d, cl_mem buf)
{
    const clformer_config *c = &m->cfg;
    const size_t R = d->R, S = d->S, L = d->L, D = (size_t)c->d_model, kvd = kv_width(m);
    const size_t H = (size_t)c->n_heads, ff = (size_t)c->d_ff, V = (size_t)c->tgt_vocab;
    cf_arena a = {buf, 0};
    for (int l = 0; l < c->n_dec_layers; l++) {
        d->self_k[l] = cf_arena_take(&a, R * L * kvd);
        d->self_v[l] = cf_arena_take(&a, R * L * kvd);
        d->cross_k[l] = cf_arena_take(&a, R * S * D);
        d->cross_v[l] = cf_arena_take(&a, R * S * D);
    }
    d->x = cf_arena_take(&a, R * D);
    d->fin = cf_arena_take(&a, R * D);
    d->mean = cf_arena_take(&a, R);
    d->rstd = cf_arena_take(&a, R);
    d->qkv = cf_arena_take(&a, R * 3 * D);
    d->qh = cf_arena_take(&a, R * D);
    d->ctx_h = cf_arena_take(&a, R * D);
    d->concat = cf_arena_take(&a, R * D);
    d->out = cf_arena_take(&a, R * D);
    d->ff_pre = cf_arena_take(&a, R * ff);
    d->ff_act = cf_arena_take(&a, R * ff);
    d->ff_up = cf_arena_take(&a, m->blocks.gated ? R * ff : 0);
    d->probs = cf_arena_take(&a, R * H * (L > S ? L : S));
    d->logits = cf_arena_take(&a, R * V);
    d->kv = cf_arena_take(&a, R * S * 2 * D);
    d->gather_tmp = cf_arena_take(&a, R * (L > S ? L : S) * D);
    d->tokens = cf_arena_take(&a, R * L);
    d->src = cf_arena_take(&a, R * S);
    d->step_tokens = cf_arena_take(&a, R);
    d->argmax = cf_arena_take(&a, R);
    d->parents = cf_arena_take(&a, R);
    d->first = cf_arena_take(&a, R);
    return a.next;
}

/* The source length that buffers for a source of S tokens are made for:
 * S rounded up to 8, 12, 16, 24, 32, 48, 64, ... (at most max_len). A
 * grown buffer is a new one, which the device touches whole before use (it
 * page faults): length-sorted batches (translate) would otherwise grow the
 * activations and caches at nearly every batch, which cost beam search 15%
 * of its time on test_2016. At most half again the memory. */
static size_t headroom(size_t S, size_t max_len)
{
    if (S == 0 || S >= max_len) return S;
    size_t b = 8;
    while (b < S) b = b % 3 == 0 ? b / 3 * 4 : b / 2 * 3;
    return b < max_len ? b : max_len;
}

/* Caches for R rows, source length S and L positions; grown when needed. */
static clformer_status decoder_prepare(cf_session *s, size_t R, size_t S, size_t L)
{
    const clformer_config *c = &s->model->cfg;
    struct cf_decoder *d = s->decoder;
    const size_t layers = (size_t)c->n_dec_layers;
    if (!d) {
        d = calloc(1, sizeof *d);
        if (d) {
            d->self_k = calloc(layers, sizeof(cf_view));
            d->self_v = calloc(layers, sizeof(cf_view));
            d->cross_k = calloc(layers, sizeof(cf_view));
            d->cross_v = calloc(layers, sizeof(cf_view));
        }
        s->decoder = d;
        s->decoder_release = cf_decoder_free;
        s->decoder_bytes = cf_decoder_bytes;
        if (!d || !d->self_k || !d->self_v || !d->cross_k || !d->cross_v) {
            cf_decoder_free(s);
            return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    d->R = R;
    d->L = L;
    d->S = headroom(S, (size_t)c->max_len);
    const size_t roomy = layout(s->model, d, NULL);
    d->S = S;
    const size_t need = layout(s->model, d, NULL);
    clformer_status st = cf_arena_reserve(s->ctx, &d->buf, &d->count, roomy, "decoding caches");
    if (st == CLFORMER_ERR_OUT_OF_MEMORY && roomy > need) /* the headroom did not fit */
        st = cf_arena_reserve(s->ctx, &d->buf, &d->count, need, "decoding caches");
    if (st != CLFORMER_OK)
        return cf_fail_prefix(st, "decoding %zu rows of up to %zu tokens: ", R, L);
    layout(s->model, d, d->buf);
    return CLFORMER_OK;
}

static const cf_view NONE = {NULL, 0};

clformer_status cf_decoder_gather(cf_session *s, const int32_t *parents, size_t K, size_t n)
{
    struct cf_decoder *d = s->decoder;
    for (size_t r = 0; K > 0 && r < d->R; r++)
        if (parents[r] < 0 || (size_t)parents[r] / K != r / K)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "cf_decoder_gather: row %zu's parent %d is not a row of its sentence",
                           r, (int)parents[r]);
    CF_TRY(cf_upload(s->ctx, d->parents.buf, d->parents.off, parents, d->R));
    return cf_decoder_gather_device(s, K, n);
}

clformer_status cf_decoder_gather_device(cf_session *s, size_t K, size_t n)
{
    struct cf_decoder *d = s->decoder;
    const clformer_config *c = &s->model->cfg;
    /* the self-attention caches: their key/value heads */
    const size_t layers = (size_t)c->n_dec_layers, H = s->model->blocks.kv_heads;
    if (n == 0 || n > d->L || K == 0 || d->R % K != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_decoder_gather_device: %zu positions of %zu, beam %zu of %zu rows", n,
                       d->L, K, d->R);
    if (layers == 0) return CLFORMER_OK;
    /* layout() puts every layer's caches the same distance apart: one launch */
    const size_t value_stride = d->self_v[0].off - d->self_k[0].off;
    const size_t layer_stride = layers > 1 ? d->self_k[1].off - d->self_k[0].off : 0;
    for (size_t l = 0; l < layers; l++)
        if (d->self_k[l].off != d->self_k[0].off + l * layer_stride ||
            d->self_v[l].off != d->self_k[l].off + value_stride)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "cf_decoder_gather_device: the caches are not evenly laid out");
    /* hypotheses of a sentence share most of their prefix: only the
     * positions after it move (the token table still holds the old rows) */
    CF_TRY(cf_beam_shared_prefix(s->ctx, d->first, d->tokens, d->parents, d->R, d->L, n));
    return cf_beam_reorder_caches(s->ctx, d->self_k[0], layer_stride, value_stride, layers,
                                  d->parents, d->first, d->R / K, K, H, d->L,
                                  (size_t)(c->d_model / c->n_heads), n);
}

clformer_status cf_gather_rows(cf_session *s, cf_view dst, cf_view src, cf_view map,
                               size_t width, size_t rows)
{
    struct cf_decoder *d = s->decoder;
    if (rows == 0 || width == 0) return CLFORMER_OK;
    if (rows * width > d->R * (d->L > d->S ? d->L : d->S) * (size_t)s->model->cfg.d_model ||
        width > INT_MAX || rows > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_gather_rows: %zu rows of %zu words do not fit the scratch", rows, width);
    CF_TRY(cf_gather_rows_words(s->ctx, d->gather_tmp, src, map, width, rows));
    return cf_copy(s->ctx, d->gather_tmp.buf, d->gather_tmp.off, dst.buf, dst.off, rows * width);
}

size_t cf_compact_plan(const bool *gone, size_t blocks, size_t width, int32_t *keep,
                       int32_t *from)
{
    size_t n = 0;
    for (size_t b = 0; b < blocks; b++) n += !gone[b];
    size_t tail = n; /* the next live block beyond the first n */
    for (size_t j = 0; j < n; j++) {
        size_t b = j;
        if (gone[j]) {
            while (gone[tail]) tail++;
            b = tail++;
        }
        from[j] = (int32_t)b;
        for (size_t k = 0; k < width; k++) keep[j * width + k] = (int32_t)(b * width + k);
    }
    return n;
}

clformer_status cf_decoder_compact(cf_session *s, const int32_t *keep, size_t n, size_t written)
{
    struct cf_decoder *d = s->decoder;
    const clformer_config *c = &s->model->cfg;
    const size_t H = (size_t)c->n_heads, dh = (size_t)c->d_model / H;
    if (n == 0 || n > d->R || written == 0 || written > d->L)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_decoder_compact: %zu of %zu rows, %zu of %zu positions", n, d->R,
                       written, d->L);
    /* a row stays, or comes from beyond the first n, each once: no row is
     * both read and written, so the caches are copied in place */
    int32_t last = (int32_t)n - 1; /* the last row taken from beyond the n */
    for (size_t j = 0; j < n; j++) {
        if (keep[j] == (int32_t)j) continue;
        if (keep[j] <= last || (size_t)keep[j] >= d->R)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "cf_decoder_compact: row %zu comes from row %d, neither itself nor "
                           "a later row beyond the %zu kept", j, (int)keep[j], n);
        last = keep[j];
    }
    CF_TRY(cf_upload(s->ctx, d->parents.buf, d->parents.off, keep, n));
    /* the caches: rows that stay in place (keep[j] == j) are not copied */
    for (int l = 0; l < c->n_dec_layers; l++)
        for (int kv = 0; kv < 4; kv++) {
            const bool self = kv < 2;
            const cf_view cache = kv == 0 ? d->self_k[l] : kv == 1 ? d->self_v[l]
                                  : kv == 2 ? d->cross_k[l] : d->cross_v[l];
            const size_t cap = self ? d->L : d->S, used = self ? written : d->S;
            CF_TRY(cf_beam_gather_cache(s->ctx, cache, cache, d->parents, n,
                                        self ? s->model->blocks.kv_heads : H, cap, dh, used,
                                        true));
        }
    CF_TRY(cf_gather_rows(s, d->tokens, d->tokens, d->parents, d->L, n));
    CF_TRY(cf_gather_rows(s, d->step_tokens, d->step_tokens, d->parents, 1, n));
    CF_TRY(cf_gather_rows(s, d->src, d->src, d->parents, d->S, n));
    d->R = n;
    return CLFORMER_OK;
}

/* The decoder block's tensors for one decoding step of layer l: the caches
 * as keys and values, and scratch shared by every layer (the residual
 * stream d->x is updated in place). */
static cf_layer_acts step_acts(const struct cf_decoder *d, int l)
{
    const cf_sub_acts sub = {d->fin, d->mean, d->rstd, d->x};
    const cf_attention_saved saved = {d->probs, d->probs};
    cf_layer_acts L = {{sub, sub, sub},
                       {d->qkv, NONE, d->qh, d->self_k[l], d->self_v[l], saved, d->ctx_h,
                        d->concat, d->out},
                       {d->qkv, NONE, d->qh, d->cross_k[l], d->cross_v[l], saved, d->ctx_h,
                        d->concat, d->out},
                       {d->ff_pre, d->ff_act, d->out, d->ff_up}};
    return L;
}

/* The decoder blocks of a step over d->x. Pre-norm, they are chained (as
 * in training, cf_forward): each block's last residual computes the next
 * block's input norm, or decoder.norm after the last, in one
 * bias_residual_layernorm_forward launch where it was a residual launch
 * and a norm launch: a launch a layer less each token, the same bits.
 * Every layer's norms go to the step's one scratch (step_acts' sub).
 * *chained: whether they were (decoder.norm is then done). */
static clformer_status step_layers(cf_session *s, const cf_block_shape *shape, bool *chained)
{
    const cf_model *m = s->model;
    struct cf_decoder *d = s->decoder;
    const int n = m->cfg.n_dec_layers;
    *chained = m->cfg.norm_first && n > 0;
    for (int l = 0; l < n; l++) {
        const cf_layer_acts L = step_acts(d, l);
        const cf_layer_params *p = l + 1 < n ? &m->layout.dec[l + 1] : NULL;
        const cf_next_norm next = {&L.sub[0], p ? p->norm_w[0] : m->layout.dec_norm_w,
                                   p ? p->norm_b[0] : m->layout.dec_norm_b};
        CF_TRY(cf_decoder_block_chained(s, l, &L, d->x, shape, *chained && l > 0,
                                        *chained ? &next : NULL));
    }
    return CLFORMER_OK;
}

/* The step's logits from d->x, through decoder.norm unless the chained
 * blocks did it. */
static clformer_status step_logits(cf_session *s, bool chained)
{
    struct cf_decoder *d = s->decoder;
    if (chained) return cf_generator_logits(s, d->logits, d->fin, d->R);
    return cf_generator_forward(s, d->fin, d->mean, d->rstd, d->x, d->logits, d->R);
}

static clformer_status step_all_rows(cf_session *s, size_t t, float *attention)
{
    const cf_model *m = s->model;
    struct cf_decoder *d = s->decoder;
    const clformer_config *c = &m->cfg;
    CF_TRY(cf_embed(s, d->x, d->step_tokens, d->R, 1, t, NULL));
    const cf_block_shape shape = {d->R, 1, d->S, t, d->L, true, d->tokens, d->src, NONE,
                                  NONE, NULL};
    bool chained;
    CF_TRY(step_layers(s, &shape, &chained));
    if (attention) /* the probabilities stay until the next step's first attention */
        CF_TRY(cf_download(s->ctx, d->probs.buf, d->probs.off, attention,
                           (size_t)c->n_heads * d->S));
    return step_logits(s, chained);
}

clformer_status cf_decode_start_lm(cf_session *s, size_t R, size_t L)
{
    CF_TRY(cf_acts_prepare(s, R, 0, 1, false));
    CF_TRY(decoder_prepare(s, R, 0, L));
    /* keys a row does not see still enter P V with probability 0: zeros, not
     * whatever the buffer held (0 * NaN is NaN) */
    struct cf_decoder *d = s->decoder;
    const size_t n = R * L * kv_width(s->model);
    for (int l = 0; l < s->model->cfg.n_dec_layers; l++) {
        CF_TRY(cf_fill(s->ctx, d->self_k[l].buf, d->self_k[l].off, n, 0.0f));
        CF_TRY(cf_fill(s->ctx, d->self_v[l].buf, d->self_v[l].off, n, 0.0f));
    }
    return CLFORMER_OK;
}

clformer_status cf_decode_prefill(cf_session *s, size_t r0, size_t rows, const int32_t *ids,
                                  size_t T)
{
    const cf_model *m = s->model;
    const clformer_config *c = &m->cfg;
    struct cf_decoder *d = s->decoder;
    const size_t kvd = kv_width(m);
    if (rows == 0 || T == 0) return CLFORMER_OK;
    if (r0 + rows > d->R || T > d->L)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_decode_prefill: rows %zu..%zu of %zu, %zu positions of %zu", r0,
                       r0 + rows - 1, d->R, T, d->L);
    /* the training activations of a (rows, T) batch, without what backward keeps */
    CF_TRY(cf_acts_prepare(s, rows, 0, T, false));
    cf_acts *a = &s->acts;
    CF_TRY(cf_upload(s->ctx, a->tgt_in.buf, a->tgt_in.off, ids, rows * T));
    CF_TRY(cf_embed(s, a->tgt_emb, a->tgt_in, rows, T, 0, NULL));
    /* causal attention over the positions so far; keys and values go to the
     * caches of these rows, which is all a prefill keeps */
    const cf_block_shape shape = {rows, T, 0, 0, d->L, true, NONE, a->src, NONE, NONE, NULL};
    for (int l = 0; l < c->n_dec_layers; l++) {
        cf_layer_acts L = a->dec[l];
        L.self_attn.kh = cf_view_add(d->self_k[l], r0 * d->L * kvd);
        L.self_attn.vh = cf_view_add(d->self_v[l], r0 * d->L * kvd);
        CF_TRY(cf_decoder_block(s, l, &L, cf_layer_input(a, true, l), &shape));
    }
    return CLFORMER_OK;
}

/* The token table as the key mask of rows at positions pos: 1 where row r
 * sees key j (j <= pos[r]), else 0. */
static clformer_status upload_key_mask(cf_session *s, const size_t *pos)
{
    struct cf_decoder *d = s->decoder;
    int32_t *mask = malloc(d->R * d->L * sizeof *mask);
    if (!mask) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < d->R; r++)
        for (size_t j = 0; j < d->L; j++) mask[r * d->L + j] = j <= pos[r];
    const clformer_status st = cf_upload(s->ctx, d->tokens.buf, d->tokens.off, mask, d->R * d->L);
    free(mask);
    return st;
}

static clformer_status step_rows_at(cf_session *s, const int32_t *tokens, const size_t *pos)
{
    const cf_model *m = s->model;
    struct cf_decoder *d = s->decoder;
    const clformer_config *c = &m->cfg;
    const size_t D = (size_t)c->d_model;
    CF_TRY(cf_upload(s->ctx, d->step_tokens.buf, d->step_tokens.off, tokens, d->R));
    size_t last = 0;
    for (size_t r0 = 0, r1; r0 < d->R; r0 = r1) { /* by runs of rows at one position */
        if (pos[r0] >= d->L)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "cf_decode_step_rows: row %zu at position %zu of %zu", r0, pos[r0],
                           d->L);
        for (r1 = r0 + 1; r1 < d->R && pos[r1] == pos[r0];) r1++;
        CF_TRY(cf_embed(s, cf_view_add(d->x, r0 * D), cf_view_add(d->step_tokens, r0), r1 - r0, 1,
                        pos[r0], NULL));
        if (pos[r0] > last) last = pos[r0];
    }
    CF_TRY(upload_key_mask(s, pos));
    const cf_block_shape shape = {d->R, 1, 0, last, d->L, true, NONE, d->src, NONE,
                                  d->tokens, pos};
    bool chained;
    CF_TRY(step_layers(s, &shape, &chained));
    return step_logits(s, chained);
}

/* A decoding step's passes run with the context told so (cf_ctx.decoding:
 * the host provider's products then give each row the bits it gets alone),
 * and a bf16/fp16 session's products read its weights in 16 bits where the
 * provider can (cf_session_decode_weights). */
clformer_status cf_decode_step(cf_session *s, size_t t, float *attention)
{
    CF_TRY(cf_session_decode_weights(s));
    const bool was = s->ctx->decoding;
    s->ctx->decoding = true;
    const clformer_status st = step_all_rows(s, t, attention);
    s->ctx->decoding = was;
    return st;
}

clformer_status cf_decode_step_rows(cf_session *s, const int32_t *tokens, const size_t *pos)
{
    CF_TRY(cf_session_decode_weights(s));
    const bool was = s->ctx->decoding;
    s->ctx->decoding = true;
    const clformer_status st = step_rows_at(s, tokens, pos);
    s->ctx->decoding = was;
    return st;
}

clformer_status cf_decode_set_tokens(cf_session *s, const int32_t *ids, size_t col)
{
    struct cf_decoder *d = s->decoder;
    CF_TRY(cf_upload(s->ctx, d->step_tokens.buf, d->step_tokens.off, ids, d->R));
    return cf_set_column(s->ctx, d->tokens, d->L, col, d->step_tokens, d->R);
}

/* The encoder's activations for B sources of S tokens, made for a source
 * of headroom(S) tokens first (see there): a later, longer batch then
 * reuses them. */
static clformer_status encoder_prepare(cf_session *s, size_t B, size_t S)
{
    const size_t roomy = headroom(S, (size_t)s->model->cfg.max_len);
    if (roomy > S && cf_acts_prepare(s, B, roomy, 1, false) != CLFORMER_OK)
        cf_clear_error(); /* the headroom did not fit: the exact shape may */
    return cf_acts_prepare(s, B, S, 1, false);
}

clformer_status cf_decode_start(cf_session *s, const int32_t *src, size_t batch, size_t S,
                             size_t copies, size_t L)
{
    const size_t R = batch * copies;
    /* Each sentence is encoded once, whatever the copies: a copy's rows
     * would be the same numbers (every kernel and GEMM computes a row from
     * that row alone), at `copies` times the work. */
    CF_TRY(encoder_prepare(s, batch, S));
    CF_TRY(cf_upload(s->ctx, s->acts.src.buf, s->acts.src.off, src, batch * S));
    CF_TRY(cf_forward_encoder(s));
    CF_TRY(decoder_prepare(s, R, S, L));
    struct cf_decoder *d = s->decoder;
    int32_t *rows = malloc(R * (S > 1 ? S : 1) * sizeof *rows);
    if (!rows) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    /* the source ids of every row (the cross-attention's key padding) */
    for (size_t r = 0; r < R; r++) memcpy(rows + r * S, src + (r / copies) * S, S * sizeof *rows);
    clformer_status st = cf_upload(s->ctx, d->src.buf, d->src.off, rows, R * S);
    /* row r of the cross caches is sentence r / copies's: projected once
     * per sentence into the scratch, then copied to each of its rows */
    for (size_t r = 0; r < R; r++) rows[r] = (int32_t)(r / copies);
    if (st == CLFORMER_OK && copies > 1)
        st = cf_upload(s->ctx, d->parents.buf, d->parents.off, rows, R);
    free(rows);
    CF_TRY(st);
    const size_t D = (size_t)s->model->cfg.d_model;
    const cf_view k1 = d->gather_tmp, v1 = cf_view_add(d->gather_tmp, batch * S * D);
    for (int l = 0; l < s->model->cfg.n_dec_layers; l++) {
        if (copies == 1) {
            CF_TRY(cf_cross_kv(s, l, s->acts.memory, d->kv, d->cross_k[l], d->cross_v[l], R, S));
            continue;
        }
        CF_TRY(cf_cross_kv(s, l, s->acts.memory, d->kv, k1, v1, batch, S));
        CF_TRY(cf_gather_rows_words(s->ctx, d->cross_k[l], k1, d->parents, S * D, R));
        CF_TRY(cf_gather_rows_words(s->ctx, d->cross_v[l], v1, d->parents, S * D, R));
    }
    /* every row starts from <sos> at position 0; later columns fill as tokens come */
    int32_t *sos = malloc(R * sizeof *sos);
    if (!sos) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < R; r++) sos[r] = CLFORMER_SOS;
    st = cf_fill_u32(s->ctx, d->tokens.buf, d->tokens.off, R * L, CLFORMER_EOS);
    if (st == CLFORMER_OK) st = cf_decode_set_tokens(s, sos, 0);
    free(sos);
    return st;
}
