/*
 * Beam search on the device: the same search as beam.c's, step for step,
 * without reading the log-probabilities back. Each step scores every live
 * hypothesis's best continuations (cf_beam_candidates), picks each
 * sentence's next beams and finished hypotheses (cf_beam_select), and
 * reorders the self-attention caches and the token table by parent, all
 * on the device; the host reads one counter (sentences done) per step and
 * the best hypotheses at the end. Needs fp64 (the scores are doubles, as
 * the host search's, so both give the same hypotheses).
 */
#include "arena.h"
#include "beam.h"
#include "ops_beam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The search's state in the decoder's beam buffer; `tmp` (R, L) receives
 * the reordered token table. Doubles take two elements. */
static size_t beam_layout(cf_beam_views *b, cf_view *tmp, cl_mem buf, size_t batch, size_t K,
                          size_t L)
{
    const size_t R = batch * K, M = 2 * K;
    cf_arena a = {buf, 0};
    b->score = cf_arena_take(&a, 2 * R);
    b->cand_score = cf_arena_take(&a, 2 * R * M);
    b->cand_token = cf_arena_take(&a, R * M);
    b->pen = cf_arena_take(&a, 2 * (L + 1));
    b->best_score = cf_arena_take(&a, 2 * batch);
    b->best_tokens = cf_arena_take(&a, batch * L);
    b->best_len = cf_arena_take(&a, batch);
    b->finished = cf_arena_take(&a, batch);
    b->done = cf_arena_take(&a, batch);
    b->n_done = cf_arena_take(&a, 1);
    *tmp = cf_arena_take(&a, R * L);
    return a.next;
}

/* Scores: one live beam per sentence at first; nothing finished. */
static clformer_status beam_start(cf_ctx *ctx, const cf_beam_views *b, size_t batch, size_t K,
                                  size_t L, float penalty)
{
    const size_t R = batch * K;
    double *host = malloc((R + L + 1 + batch) * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    double *score = host, *pen = host + R, *best = pen + L + 1;
    for (size_t r = 0; r < R; r++) score[r] = r % K == 0 ? 0.0 : -INFINITY;
    for (size_t n = 0; n <= L; n++) pen[n] = pow((double)(n ? n : 1), (double)penalty);
    for (size_t i = 0; i < batch; i++) best[i] = -INFINITY;
    clformer_status st = cf_upload(ctx, b->score.buf, b->score.off, score, 2 * R);
    if (st == CLFORMER_OK) st = cf_upload(ctx, b->pen.buf, b->pen.off, pen, 2 * (L + 1));
    if (st == CLFORMER_OK)
        st = cf_upload(ctx, b->best_score.buf, b->best_score.off, best, 2 * batch);
    free(host);
    CF_TRY(st);
    /* best_len, finished, done and n_done are consecutive */
    return cf_fill_u32(ctx, b->best_len.buf, b->best_len.off,
                       b->n_done.off + 1 - b->best_len.off, 0);
}

/* The results of the search's sentences (host order), filled in as
 * sentences leave the batch and at the end. */
typedef struct {
    int32_t *lengths, *tokens; /* (batch), (batch, L): as read from best_len and best_tokens */
    int32_t *done;             /* (batch) */
    int32_t *sentence;         /* (batch): the sentence of each live slot */
    int32_t *keep;             /* (batch * K): the rows that stay */
} beam_host;

/* Reads the best hypotheses of the live slots 0..live-1 into their
 * sentences' places (with `only_done`, of the finished ones alone). */
static clformer_status read_results(cf_session *s, const cf_beam_views *b, beam_host *h,
                                    size_t live, size_t L, bool only_done)
{
    int32_t *len = h->keep, *tok = NULL; /* keep is free until the rows are chosen */
    tok = malloc(live * L * sizeof *tok);
    if (!tok) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_download(s->ctx, b->best_len.buf, b->best_len.off, len, live);
    if (st == CLFORMER_OK)
        st = cf_download(s->ctx, b->best_tokens.buf, b->best_tokens.off, tok, live * L);
    if (st == CLFORMER_OK && only_done)
        st = cf_download(s->ctx, b->done.buf, b->done.off, h->done, live);
    for (size_t j = 0; j < live && st == CLFORMER_OK; j++) {
        if (only_done && !h->done[j]) continue;
        const size_t i = (size_t)h->sentence[j];
        h->lengths[i] = len[j];
        memcpy(h->tokens + i * L, tok + j * L, L * sizeof *tok);
    }
    free(tok);
    return st;
}

/* Drops the finished sentences of the `live` slots (their results are
 * read first): every per-sentence and per-row tensor of the search and of
 * decoding keeps the live ones, the last ones moving into the places of
 * finished ones (cf_compact_plan). Returns the slots left in *live. */
static clformer_status drop_finished(cf_session *s, const cf_beam_views *b, beam_host *h,
                                     size_t *live, size_t K, size_t L, size_t written)
{
    struct cf_decoder *d = s->decoder;
    CF_TRY(read_results(s, b, h, *live, L, true));
    int32_t *slots = malloc(*live * sizeof *slots);
    bool *gone = malloc(*live * sizeof *gone);
    if (!slots || !gone) {
        free(slots);
        free(gone);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (size_t j = 0; j < *live; j++) gone[j] = h->done[j] != 0;
    /* live sentences beyond the n that stay fill the places of finished ones */
    const size_t n = cf_compact_plan(gone, *live, K, h->keep, slots);
    free(gone);
    for (size_t j = 0; j < n; j++) h->sentence[j] = h->sentence[slots[j]]; /* j or beyond n */
    /* the search's own state: per sentence through argmax (free in beam
     * search), per row after decoding's tensors, through parents */
    clformer_status st = cf_upload(s->ctx, d->argmax.buf, d->argmax.off, slots, n);
    free(slots);
    CF_TRY(st);
    CF_TRY(cf_gather_rows(s, b->best_score, b->best_score, d->argmax, 2, n));
    CF_TRY(cf_gather_rows(s, b->best_tokens, b->best_tokens, d->argmax, L, n));
    CF_TRY(cf_gather_rows(s, b->best_len, b->best_len, d->argmax, 1, n));
    CF_TRY(cf_gather_rows(s, b->finished, b->finished, d->argmax, 1, n));
    CF_TRY(cf_gather_rows(s, b->done, b->done, d->argmax, 1, n));
    CF_TRY(cf_decoder_compact(s, h->keep, n * K, written)); /* parents = the kept rows */
    CF_TRY(cf_gather_rows(s, b->score, b->score, d->parents, 2, n * K));
    CF_TRY(cf_fill_u32(s->ctx, b->n_done.buf, b->n_done.off, 1, 0));
    *live = n;
    return CLFORMER_OK;
}

static void beam_host_free(beam_host *h)
{
    free(h->lengths);
    free(h->tokens);
    free(h->done);
    free(h->sentence);
    free(h->keep);
}

/* Whether dropping `done` of `live` sentences pays: a drop costs about a
 * third of a step (a read-back and some twenty launches; only the moved
 * sentences' caches are copied), and a finished sentence's K rows idle
 * through every step until it goes, so sentences go once an eighth of
 * them is finished. */
static bool worth_dropping(size_t done, size_t live) { return done > 0 && 8 * done >= live; }

clformer_status cf_beam_search_device(cf_session *s, size_t batch, size_t K, size_t L,
                                      float penalty, clformer_translation *out)
{
    struct cf_decoder *d = s->decoder;
    const size_t V = (size_t)s->model->cfg.tgt_vocab, M = 2 * K;
    cf_beam_views b;
    cf_view tmp;
    CF_TRY(cf_arena_reserve(s->ctx, &d->beam_buf, &d->beam_count,
                            beam_layout(&b, &tmp, NULL, batch, K, L), "beam search state"));
    beam_layout(&b, &tmp, d->beam_buf, batch, K, L);
    CF_TRY(beam_start(s->ctx, &b, batch, K, L, penalty));
    beam_host h = {calloc(batch, sizeof(int32_t)), calloc(batch * L, sizeof(int32_t)),
                   calloc(batch, sizeof(int32_t)), malloc(batch * sizeof(int32_t)),
                   malloc(batch * K * sizeof(int32_t))};
    clformer_status st = h.lengths && h.tokens && h.done && h.sentence && h.keep
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < batch && st == CLFORMER_OK; i++) h.sentence[i] = (int32_t)i;
    size_t live = batch; /* sentences still in the batch: rows live * K */
    for (size_t t = 0; t < L && st == CLFORMER_OK; t++) {
        const bool last = t + 1 == L;
        const size_t R = live * K;
        st = cf_decode_step(s, t, NULL);
        if (st == CLFORMER_OK) st = cf_log_softmax_rows(s->ctx, d->logits, d->logits, R, V);
        if (st == CLFORMER_OK) st = cf_beam_candidates(s->ctx, &b, d->logits, R, K, V, M);
        if (st == CLFORMER_OK)
            st = cf_beam_select(s->ctx, &b, d->tokens, d->parents, d->step_tokens, live, K, M, L,
                                t, last);
        int32_t n_done = 0;
        if (st == CLFORMER_OK) st = cf_download(s->ctx, b.n_done.buf, b.n_done.off, &n_done, 1);
        if (st != CLFORMER_OK || last || (size_t)n_done == live) break;
        st = cf_decoder_gather_device(s, K, t + 1); /* positions 0..t are written */
        if (st == CLFORMER_OK)
            st = cf_beam_tokens(s->ctx, tmp, d->tokens, d->parents, d->step_tokens, L, R, t + 1);
        if (st == CLFORMER_OK)
            st = cf_copy(s->ctx, tmp.buf, tmp.off, d->tokens.buf, d->tokens.off, R * L);
        if (st == CLFORMER_OK && !s->keep_finished_rows && worth_dropping((size_t)n_done, live))
            st = drop_finished(s, &b, &h, &live, K, L, t + 1);
    }
    if (st == CLFORMER_OK) st = read_results(s, &b, &h, live, L, false);
    for (size_t i = 0; i < batch && st == CLFORMER_OK; i++) {
        out->lengths[i] = (size_t)h.lengths[i];
        for (size_t j = 0; j < L; j++)
            out->tokens[i * L + j] = j < out->lengths[i] ? h.tokens[i * L + j] : 0;
    }
    beam_host_free(&h);
    return st;
}
