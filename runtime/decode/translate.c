/*
 * Translation (clformer_session_translate): a batch of source sentences
 * through decoding's caches (decode.c), greedy here, or beam search on the
 * host (beam.c) or the device (beam_device.c).
 */
#include "beam.h"
#include "decode.h"

#include <stdlib.h>
#include <string.h>

/* Whether dropping `done` of `rows` live rows pays: a drop (some twenty
 * launches; only the rows that move are copied) costs about a greedy step,
 * so rows go once a quarter of them is finished (a handful of times per
 * batch), not at every finish. */
static bool worth_compacting(size_t done, size_t rows) { return done > 0 && 4 * done >= rows; }

/* Greedy decoding of `batch` rows. Finished rows leave the batch
 * (cf_decoder_compact) so that later steps run on live rows only; row[j]
 * is the sentence that live row j decodes. */
static clformer_status greedy(cf_session *s, size_t batch, size_t L, clformer_translation *out)
{
    struct cf_decoder *d = s->decoder;
    const size_t H = (size_t)s->model->cfg.n_heads, S = d->S;
    int32_t *ids = malloc(batch * sizeof *ids);
    int32_t *row = malloc(batch * sizeof *row), *keep = malloc(batch * sizeof *keep);
    int32_t *from = malloc(batch * sizeof *from);
    bool *done = calloc(batch, sizeof *done), *gone = malloc(batch * sizeof *gone);
    clformer_status st = ids && row && keep && from && done && gone
                             ? CLFORMER_OK
                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t r = 0; r < batch && st == CLFORMER_OK; r++) row[r] = (int32_t)r;
    size_t finished = 0;
    for (size_t t = 0; t < L && finished < batch && st == CLFORMER_OK; t++) {
        const size_t R = d->R;
        /* sentence 0 stays live row 0 until it is finished */
        float *att = out->attention && !done[0] ? out->attention + t * H * S : NULL;
        st = cf_decode_step(s, t, att);
        if (att) out->attention_rows = t + 1;
        if (st == CLFORMER_OK)
            st = cf_argmax_rows(s->ctx, d->argmax, d->logits, R, (size_t)s->model->cfg.tgt_vocab);
        if (st == CLFORMER_OK) st = cf_download(s->ctx, d->argmax.buf, d->argmax.off, ids, R);
        size_t idle = 0; /* finished rows still in the batch */
        for (size_t j = 0; j < R && st == CLFORMER_OK; j++) {
            const size_t i = (size_t)row[j];
            if (done[i]) {
                ids[j] = CLFORMER_EOS; /* finished rows idle on <eos> until dropped */
                idle++;
                continue;
            }
            if (ids[j] == CLFORMER_EOS || t + 1 == L) {
                done[i] = true;
                finished++;
                idle++;
            }
            if (ids[j] != CLFORMER_EOS) out->tokens[i * L + out->lengths[i]++] = ids[j];
        }
        if (st != CLFORMER_OK || t + 1 >= L || finished == batch) break;
        if (!s->keep_finished_rows && worth_compacting(idle, R)) {
            for (size_t j = 0; j < R; j++) gone[j] = done[row[j]];
            const size_t n = cf_compact_plan(gone, R, 1, keep, from);
            for (size_t j = 0; j < n; j++) { /* from[j] is j or beyond n: read before written */
                row[j] = row[from[j]];
                ids[j] = ids[from[j]];
            }
            st = cf_decoder_compact(s, keep, n, t + 1);
        }
        if (st == CLFORMER_OK) st = cf_decode_set_tokens(s, ids, t + 1);
    }
    free(ids);
    free(row);
    free(keep);
    free(from);
    free(done);
    free(gone);
    return st;
}

void clformer_decode_options_default(clformer_decode_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
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

static clformer_status session_translate_passes(clformer_session *s, const int32_t *src, size_t batch,
                                                size_t src_len, const clformer_decode_options *o,
                                                clformer_translation *out)
{
    memset(out, 0, sizeof *out);
    const clformer_config *c = &s->model->cfg;
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
    CF_TRY(CF_CHECK_SIZE(clformer_decode_options, o));
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
    if (st == CLFORMER_OK) st = cf_decode_start(s, src, batch, src_len, K, L);
    if (st == CLFORMER_OK)
        st = K == 1              ? greedy(s, batch, L, out)
             : s->ctx->info.fp64 ? cf_beam_search_device(s, batch, K, L, o->length_penalty, out)
                                 : cf_beam_search_host(s, batch, K, L, o->length_penalty, out);
    if (st != CLFORMER_OK) clformer_translation_free(out);
    return st;
}

clformer_status clformer_session_translate(clformer_session *s, const int32_t *src, size_t batch,
                                           size_t src_len, const clformer_decode_options *o,
                                           clformer_translation *out)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved, session_translate_passes(s, src, batch, src_len, o, out));
}
