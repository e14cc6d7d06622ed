/* Sentences to ids and back around a model (see text_io.h). */
#include "text_io.h"
#include "batcher.h"
#include "status.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

clformer_status text_session_open(clformer_model *model, text_session *s)
{
    memset(s, 0, sizeof *s);
    s->model = model;
    const clformer_config *c = clformer_model_config(model);
    if (!clformer_model_src_vocab(model) || !clformer_model_tgt_vocab(model))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the model has no vocabularies");
    CF_TRY(cf_vocab_from_tokens(clformer_model_src_vocab(model), (size_t)c->src_vocab,
                                "source vocabulary", &s->src));
    clformer_status st = cf_vocab_from_tokens(clformer_model_tgt_vocab(model),
                                              (size_t)c->tgt_vocab, "target vocabulary", &s->tgt);
    if (st != CLFORMER_OK) text_session_close(s);
    return st;
}

void text_session_close(text_session *s)
{
    cf_vocab_free(s->src);
    cf_vocab_free(s->tgt);
    memset(s, 0, sizeof *s);
}

clformer_status text_encode_source(text_session *s, const char *sentence, int32_t **ids,
                                   size_t *len)
{
    const size_t max = (size_t)clformer_model_config(s->model)->max_len;
    const size_t n = cf_vocab_encode(s->src, sentence, strlen(sentence), true, NULL, 0, NULL);
    int32_t *buf = malloc((n > 2 ? n : 2) * sizeof *buf);
    if (!buf) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    cf_vocab_encode(s->src, sentence, strlen(sentence), true, buf, n, NULL);
    size_t used = n;
    if (used > max) { /* keep <sos> and the first max-2 words, end with <eos> */
        used = max;
        buf[used - 1] = CLFORMER_EOS;
    }
    *ids = buf;
    *len = used;
    return CLFORMER_OK;
}

typedef struct {
    size_t index, len;
} by_len;

static int compare_len(const void *a, const void *b)
{
    const by_len *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

clformer_status text_translate(text_session *s, const char *const *sentences, size_t n,
                               const clformer_decode_options *options, size_t batch_size,
                               char **outputs, size_t *truncated, text_progress progress,
                               void *user)
{
    const size_t max = (size_t)clformer_model_config(s->model)->max_len;
    if (truncated) *truncated = 0;
    if (batch_size == 0) batch_size = 1;
    by_len *order = malloc((n ? n : 1) * sizeof *order);
    int32_t **ids = calloc(n ? n : 1, sizeof *ids);
    int32_t *src = malloc(batch_size * max * sizeof *src);
    clformer_status st = order && ids && src ? CLFORMER_OK
                                             : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    /* all NULL before anything can fail: the error path frees every entry */
    for (size_t i = 0; i < n; i++) outputs[i] = NULL;
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        size_t full = cf_vocab_encode(s->src, sentences[i], strlen(sentences[i]), true, NULL, 0, NULL);
        if (truncated && full > max) (*truncated)++;
        st = text_encode_source(s, sentences[i], &ids[i], &order[i].len);
        order[i].index = i;
    }
    if (st == CLFORMER_OK) qsort(order, n, sizeof *order, compare_len);
    for (size_t start = 0; start < n && st == CLFORMER_OK; start += batch_size) {
        size_t B = n - start < batch_size ? n - start : batch_size;
        size_t S = order[start + B - 1].len; /* sorted: the last is the longest */
        memset(src, 0, B * S * sizeof *src);
        for (size_t b = 0; b < B; b++)
            memcpy(src + b * S, ids[order[start + b].index], order[start + b].len * sizeof *src);
        clformer_translation tr;
        st = clformer_translate(s->model, src, B, S, options, &tr);
        const bool translated = st == CLFORMER_OK;
        for (size_t b = 0; b < B && st == CLFORMER_OK; b++)
            st = cf_vocab_decode(s->tgt, tr.tokens + b * tr.max_len, tr.lengths[b],
                                 &outputs[order[start + b].index]);
        if (translated) clformer_translation_free(&tr); /* also when a decode failed */
        if (st == CLFORMER_OK && progress) progress(user, start + B, n);
    }
    for (size_t i = 0; ids && i < n; i++) free(ids[i]);
    if (st != CLFORMER_OK)
        for (size_t i = 0; i < n; i++) {
            free(outputs[i]);
            outputs[i] = NULL;
        }
    free(ids);
    free(order);
    free(src);
    return st;
}

clformer_status text_corpus_loss(clformer_model *model, const cf_corpus *corpus,
                                 size_t batch_tokens, double *loss, size_t *tokens)
{
    /* pairs in file order, cut where the padded size would pass the budget */
    cf_batch batch = {0};
    size_t *pairs = malloc(corpus->n * sizeof *pairs);
    if (!pairs) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    double sum = 0.0;
    size_t count = 0, start = 0;
    clformer_status st = CLFORMER_OK;
    while (start < corpus->n && st == CLFORMER_OK) {
        size_t n = 0, width = 0;
        while (start + n < corpus->n) {
            int ls, lt;
            cf_corpus_src(corpus, start + n, &ls);
            cf_corpus_tgt(corpus, start + n, &lt);
            size_t w = (size_t)(ls > lt ? ls : lt);
            if (n > 0 && (n + 1) * (w > width ? w : width) > batch_tokens) break;
            if (w > width) width = w;
            pairs[n] = start + n;
            n++;
        }
        st = cf_batch_fill(&batch, corpus, pairs, n);
        if (st == CLFORMER_OK) {
            const clformer_batch b = {(size_t)batch.B, (size_t)batch.S, (size_t)batch.T + 1,
                                      batch.src, batch.tgt};
            double part;
            size_t part_tokens;
            st = clformer_model_eval_loss(model, &b, &part, &part_tokens);
            sum += part;
            count += part_tokens;
        }
        start += n;
    }
    cf_batch_free(&batch);
    free(pairs);
    *loss = count ? sum / (double)count : 0.0;
    *tokens = count;
    return st;
}
