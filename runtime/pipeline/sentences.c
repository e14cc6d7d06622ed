/* Sentences through a model's session (clformer.h): translating lists of
 * sentences in length-sorted batches, and a model's loss over a corpus. */
#include "batcher.h"
#include "corpus.h"
#include "model.h"
#include "status.h"
#include "text.h"
#include "tokenizer_spm.h"
#include "vocab.h"

#include <stdlib.h>
#include <string.h>

static clformer_status encode_words(const cf_vocab *v, const char *sentence, size_t max,
                                    int32_t **ids, size_t *len, size_t *full);

/* The model's vocabulary of a side (borrowed), or an error when it has none. */
static clformer_status model_vocab(const clformer_model *model, int side, const cf_vocab **out)
{
    *out = model->vocab[side];
    if (!*out) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the model has no vocabularies");
    return CLFORMER_OK;
}

/* <sos> w1 ... wn <eos> of one sentence, cut to max ids (keeping <sos>, the
 * first max-2 words and <eos>); *full receives the uncut length. A model
 * with a source SentencePiece model reads raw text: its pieces are the words. */
static clformer_status encode_cut(const clformer_model *model, const cf_vocab *v,
                                  const char *sentence, size_t max, int32_t **ids, size_t *len,
                                  size_t *full)
{
    if (!model->spm_proc[0]) return encode_words(v, sentence, max, ids, len, full);
    char *pieces;
    CF_TRY(cf_spm_pieces_line(model->spm_proc[0], sentence, strlen(sentence), &pieces));
    clformer_status st = encode_words(v, pieces, max, ids, len, full);
    free(pieces);
    return st;
}

static clformer_status encode_words(const cf_vocab *v, const char *sentence, size_t max,
                                    int32_t **ids, size_t *len, size_t *full)
{
    const size_t n = cf_vocab_encode(v, sentence, strlen(sentence), true, NULL, 0, NULL);
    int32_t *buf = malloc((n > 2 ? n : 2) * sizeof *buf);
    if (!buf) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    cf_vocab_encode(v, sentence, strlen(sentence), true, buf, n, NULL);
    size_t used = n;
    if (used > max) {
        used = max;
        buf[used - 1] = CLFORMER_EOS;
    }
    *ids = buf;
    *len = used;
    if (full) *full = n;
    return CLFORMER_OK;
}

clformer_status clformer_encode_source(const clformer_model *model, const char *sentence,
                                       int32_t **ids, size_t *len)
{
    const cf_vocab *src;
    CF_TRY(model_vocab(model, 0, &src));
    return encode_cut(model, src, sentence, (size_t)clformer_model_config(model)->max_len, ids,
                      len, NULL);
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

/* Decodes the sentences in `order` (sorted by length) batch_size at a time. */
static clformer_status translate_sorted(clformer_session *session, const cf_vocab *tgt,
                                        int32_t *const *ids, const by_len *order, size_t n,
                                        const clformer_decode_options *options, size_t batch_size,
                                        char **outputs, clformer_translate_progress progress,
                                        void *user)
{
    const clformer_model *model = clformer_session_model(session);
    const size_t max = (size_t)clformer_model_config(model)->max_len;
    int32_t *src = malloc(batch_size * max * sizeof *src);
    if (!src) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    for (size_t start = 0; start < n && st == CLFORMER_OK; start += batch_size) {
        const size_t B = n - start < batch_size ? n - start : batch_size;
        const size_t S = order[start + B - 1].len; /* sorted: the last is the longest */
        memset(src, 0, B * S * sizeof *src);
        for (size_t b = 0; b < B; b++)
            memcpy(src + b * S, ids[order[start + b].index], order[start + b].len * sizeof *src);
        clformer_translation tr;
        st = clformer_session_translate(session, src, B, S, options, &tr);
        const bool translated = st == CLFORMER_OK;
        for (size_t b = 0; b < B && st == CLFORMER_OK; b++)
            st = model->spm_proc[1]
                     ? cf_spm_decode(model->spm_proc[1], tr.tokens + b * tr.max_len,
                                     tr.lengths[b], &outputs[order[start + b].index])
                     : cf_vocab_decode(tgt, tr.tokens + b * tr.max_len, tr.lengths[b],
                                       &outputs[order[start + b].index]);
        if (translated) clformer_translation_free(&tr); /* also when a decode failed */
        if (st == CLFORMER_OK && progress) progress(start + B, n, user);
    }
    free(src);
    return st;
}

clformer_status clformer_translate_sentences(clformer_session *session,
                                             const char *const *sentences, size_t n,
                                             const clformer_decode_options *options,
                                             size_t batch_size, char **outputs, size_t *truncated,
                                             clformer_translate_progress progress, void *user)
{
    const clformer_model *model = clformer_session_model(session);
    const size_t max = (size_t)clformer_model_config(model)->max_len;
    if (truncated) *truncated = 0;
    if (batch_size == 0) batch_size = 1;
    for (size_t i = 0; i < n; i++) outputs[i] = NULL;
    const cf_vocab *src_vocab = NULL, *tgt_vocab = NULL;
    CF_TRY(model_vocab(model, 0, &src_vocab));
    clformer_status st = model_vocab(model, 1, &tgt_vocab);
    by_len *order = malloc((n ? n : 1) * sizeof *order);
    int32_t **ids = calloc(n ? n : 1, sizeof *ids);
    if (st == CLFORMER_OK && (!order || !ids))
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t m = 0; /* sentences with a token; the others give "" */
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        if (cf_count_tokens(sentences[i], strlen(sentences[i])) == 0) {
            if (!(outputs[i] = strdup("")))
                st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
            continue;
        }
        size_t full;
        st = encode_cut(model, src_vocab, sentences[i], max, &ids[i], &order[m].len, &full);
        if (truncated && full > max) (*truncated)++;
        order[m++].index = i;
    }
    if (st == CLFORMER_OK) {
        qsort(order, m, sizeof *order, compare_len);
        st = translate_sorted(session, tgt_vocab, ids, order, m, options, batch_size, outputs,
                              progress, user);
    }
    if (st != CLFORMER_OK)
        for (size_t i = 0; i < n; i++) {
            free(outputs[i]);
            outputs[i] = NULL;
        }
    for (size_t i = 0; ids && i < n; i++) free(ids[i]);
    free(ids);
    free(order);
    return st;
}

clformer_status clformer_corpus_loss(clformer_session *session, const clformer_corpus *corpus,
                                     size_t batch_tokens, double *loss, size_t *tokens)
{
    clformer_model *model = clformer_session_model(session);
    /* pairs in file order, cut where the padded size would pass the budget */
    cf_batch batch = {0};
    size_t *pairs = malloc((corpus->n ? corpus->n : 1) * sizeof *pairs);
    if (!pairs) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    /* a data-parallel model's ranks take turns: rank r evaluates batches
     * r, r + size, ... and the sums are added up over the ranks */
    int rank = 0, ranks = 1;
    cf_collective_share(model, &rank, &ranks);
    double sum = 0.0;
    size_t count = 0, start = 0;
    clformer_status st = CLFORMER_OK;
    for (size_t k = 0; start < corpus->n && st == CLFORMER_OK; k++) {
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
        if (k % (size_t)ranks != (size_t)rank) {
            start += n;
            continue;
        }
        st = cf_batch_fill(&batch, corpus, pairs, n);
        if (st == CLFORMER_OK) {
            const clformer_batch b = {(size_t)batch.B, (size_t)batch.S, (size_t)batch.T + 1,
                                      batch.src, batch.tgt};
            double part;
            size_t part_tokens;
            st = clformer_session_eval_loss(session, &b, &part, &part_tokens);
            sum += part;
            count += part_tokens;
        }
        start += n;
    }
    cf_batch_free(&batch);
    free(pairs);
    double both[2] = {sum, (double)count}; /* counts are exact below 2^53 */
    if (st == CLFORMER_OK) st = cf_collective_sum(model, both, 2);
    *loss = both[1] > 0 ? both[0] / both[1] : 0.0;
    *tokens = (size_t)both[1];
    return st;
}
