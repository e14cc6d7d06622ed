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
#include "decode.h"
#include "ops_beam.h"

#include <math.h>
#include <stdlib.h>

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

clformer_status cf_beam_search_device(cf_session *s, size_t batch, size_t K, size_t L,
                                      float penalty, clformer_translation *out)
{
    struct cf_decoder *d = s->decoder;
    const size_t R = batch * K, V = (size_t)s->model->cfg.tgt_vocab, M = 2 * K;
    cf_beam_views b;
    cf_view tmp;
    CF_TRY(cf_arena_reserve(s->ctx, &d->beam_buf, &d->beam_count,
                            beam_layout(&b, &tmp, NULL, batch, K, L), "beam search state"));
    beam_layout(&b, &tmp, d->beam_buf, batch, K, L);
    CF_TRY(beam_start(s->ctx, &b, batch, K, L, penalty));
    for (size_t t = 0; t < L; t++) {
        const bool last = t + 1 == L;
        CF_TRY(cf_decode_step(s, t, NULL));
        CF_TRY(cf_log_softmax_rows(s->ctx, d->logits, d->logits, R, V));
        CF_TRY(cf_beam_candidates(s->ctx, &b, d->logits, R, K, V, M));
        CF_TRY(cf_beam_select(s->ctx, &b, d->tokens, d->parents, d->step_tokens, batch, K, M, L,
                              t, last));
        int32_t n_done;
        CF_TRY(cf_download(s->ctx, b.n_done.buf, b.n_done.off, &n_done, 1));
        if (last || (size_t)n_done == batch) break;
        CF_TRY(cf_decoder_gather_device(s, t + 1)); /* positions 0..t are written */
        CF_TRY(cf_beam_tokens(s->ctx, tmp, d->tokens, d->parents, d->step_tokens, L, R, t + 1));
        CF_TRY(cf_copy(s->ctx, tmp.buf, tmp.off, d->tokens.buf, d->tokens.off, R * L));
    }
    int32_t *lengths = malloc(batch * sizeof *lengths);
    if (!lengths) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_download(s->ctx, b.best_len.buf, b.best_len.off, lengths, batch);
    if (st == CLFORMER_OK)
        st = cf_download(s->ctx, b.best_tokens.buf, b.best_tokens.off, out->tokens, batch * L);
    for (size_t i = 0; i < batch && st == CLFORMER_OK; i++) {
        out->lengths[i] = (size_t)lengths[i];
        for (size_t j = out->lengths[i]; j < L; j++) out->tokens[i * L + j] = 0;
    }
    free(lengths);
    return st;
}
