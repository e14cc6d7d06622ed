/* The public text-data API (clformer.h): thin wrappers over corpus.h,
 * vocab.h, batcher.h, bleu.h and demo_task.h. */
#include "batcher.h"
#include "bleu.h"
#include "corpus.h"
#include "demo_task.h"
#include "status.h"
#include "text.h"
#include "vocab.h"

#include <stdlib.h>
#include <string.h>

/* --- parallel text ---------------------------------------------------------- */

clformer_status clformer_parallel_text_load(const char *src_path, const char *tgt_path,
                                            clformer_parallel_text **text)
{
    if (!src_path || !tgt_path || !text)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "a parallel text needs two file paths");
    return cf_parallel_text_load(src_path, tgt_path, text);
}

clformer_status clformer_parallel_text_from_lines(const char *const *src, const char *const *tgt,
                                                  size_t n, const char *src_name,
                                                  const char *tgt_name,
                                                  clformer_parallel_text **text)
{
    return cf_parallel_text_from_lines(src, tgt, n, src_name ? src_name : "source",
                                       tgt_name ? tgt_name : "target", text);
}

void clformer_parallel_text_free(clformer_parallel_text *text) { cf_parallel_text_free(text); }

size_t clformer_parallel_text_size(const clformer_parallel_text *text) { return text->n; }

const char *clformer_parallel_text_source(const clformer_parallel_text *text, size_t i)
{
    return i < text->n ? text->src[i] : NULL;
}

const char *clformer_parallel_text_target(const clformer_parallel_text *text, size_t i)
{
    return i < text->n ? text->tgt[i] : NULL;
}

size_t clformer_count_tokens(const char *sentence)
{
    return cf_count_tokens(sentence, strlen(sentence));
}

clformer_status clformer_demo_task(uint64_t seed, size_t n_train, size_t n_test,
                                   clformer_parallel_text **train, clformer_parallel_text **test)
{
    *train = *test = NULL;
    cf_demo_data data;
    CF_TRY(cf_demo_generate(seed, n_train, n_test, &data));
    clformer_status st = cf_parallel_text_from_lines(
        (const char *const *)data.train.src, (const char *const *)data.train.tgt, data.train.n,
        "demo source", "demo target", train);
    if (st == CLFORMER_OK)
        st = cf_parallel_text_from_lines((const char *const *)data.test.src,
                                         (const char *const *)data.test.tgt, data.test.n,
                                         "demo held-out source", "demo held-out target", test);
    cf_demo_free(&data);
    if (st != CLFORMER_OK) {
        cf_parallel_text_free(*train);
        *train = NULL;
    }
    return st;
}

const char *clformer_demo_task_description(void) { return cf_demo_description(); }

/* --- vocabularies --------------------------------------------------------------- */

clformer_status clformer_vocab_build(const clformer_parallel_text *text, clformer_side side,
                                     int min_freq, int max_vocab, clformer_vocab **vocab)
{
    return cf_vocab_build(side == CLFORMER_SIDE_TARGET ? text->tgt : text->src, text->n,
                          min_freq, max_vocab, vocab);
}

clformer_status clformer_vocab_build_joint(const clformer_parallel_text *text, int min_freq,
                                           int max_vocab, clformer_vocab **vocab)
{
    return cf_vocab_build_joint((const char *const *)text->src, (const char *const *)text->tgt,
                                text->n, min_freq, max_vocab, vocab);
}

clformer_status clformer_vocab_from_tokens(const char *const *tokens, size_t n,
                                           clformer_vocab **vocab)
{
    return cf_vocab_from_tokens(tokens, n, "vocabulary", vocab);
}

void clformer_vocab_free(clformer_vocab *vocab) { cf_vocab_free(vocab); }

int32_t clformer_vocab_size(const clformer_vocab *vocab) { return cf_vocab_size(vocab); }

const char *clformer_vocab_token(const clformer_vocab *vocab, int32_t id)
{
    return cf_vocab_token(vocab, id);
}

int32_t clformer_vocab_id(const clformer_vocab *vocab, const char *token)
{
    return cf_vocab_id(vocab, token, strlen(token));
}

size_t clformer_vocab_encode(const clformer_vocab *vocab, const char *sentence, bool specials,
                             int32_t *ids, size_t cap, size_t *n_unk)
{
    return cf_vocab_encode(vocab, sentence, strlen(sentence), specials, ids, cap, n_unk);
}

clformer_status clformer_vocab_decode(const clformer_vocab *vocab, const int32_t *ids, size_t n,
                                      char **sentence)
{
    return cf_vocab_decode(vocab, ids, n, sentence);
}

/* --- corpora ----------------------------------------------------------------------- */

clformer_status clformer_corpus_encode(const clformer_parallel_text *text,
                                       const clformer_vocab *src_vocab,
                                       const clformer_vocab *tgt_vocab, int max_len,
                                       clformer_corpus **corpus)
{
    return cf_corpus_encode(text, src_vocab, tgt_vocab, max_len, corpus);
}

void clformer_corpus_free(clformer_corpus *corpus) { cf_corpus_free(corpus); }

size_t clformer_corpus_size(const clformer_corpus *corpus) { return corpus->n; }

void clformer_corpus_summary(const clformer_corpus *corpus, char *buf, size_t size)
{
    cf_corpus_summary(corpus, buf, size);
}

/* --- batches ----------------------------------------------------------------------- */

clformer_status clformer_batcher_create(const clformer_corpus *corpus,
                                        const clformer_batcher_options *options,
                                        clformer_batcher **batcher)
{
    *batcher = NULL;
    clformer_batcher *p = calloc(1, sizeof *p);
    if (!p) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    const cf_batcher_config c = {options->batch_size, options->batch_tokens, options->shuffle,
                                 options->seed, options->bucket_window};
    clformer_status st = cf_batcher_create(corpus, &c, &p->b);
    if (st != CLFORMER_OK) {
        free(p);
        return st;
    }
    *batcher = p;
    return CLFORMER_OK;
}

void clformer_batcher_free(clformer_batcher *batcher)
{
    if (!batcher) return;
    cf_batch_free(&batcher->batch);
    cf_batcher_free(batcher->b);
    free(batcher);
}

clformer_status clformer_batcher_next(clformer_batcher *batcher, clformer_batch *batch)
{
    CF_TRY(cf_batcher_next(batcher->b, &batcher->batch));
    const cf_batch *b = &batcher->batch;
    *batch = (clformer_batch){(size_t)b->B, (size_t)b->S, (size_t)b->T + 1, b->src, b->tgt};
    return CLFORMER_OK;
}

uint64_t clformer_batcher_epoch(const clformer_batcher *batcher)
{
    return cf_batcher_epoch(batcher->b);
}

size_t clformer_batcher_index(const clformer_batcher *batcher)
{
    return cf_batcher_index(batcher->b);
}

size_t clformer_batcher_batches_per_epoch(const clformer_batcher *batcher)
{
    return cf_batcher_batches_per_epoch(batcher->b);
}

clformer_status clformer_batcher_save_position(const clformer_batcher *batcher, char **json)
{
    return cf_batcher_state_dumps(batcher->b, json);
}

clformer_status clformer_batcher_restore_position(clformer_batcher *batcher, const char *json)
{
    return cf_batcher_state_loads(batcher->b, json);
}

/* --- BLEU ---------------------------------------------------------------------------- */

static cf_bleu_result to_internal(const clformer_bleu *b)
{
    cf_bleu_result r;
    memset(&r, 0, sizeof r);
    r.score = b->score;
    memcpy(r.precisions, b->precisions, sizeof r.precisions);
    r.bp = b->bp;
    r.stats.hyp_len = b->hyp_len;
    r.stats.ref_len = b->ref_len;
    return r;
}

static cf_bleu_tokenize tokenizer(clformer_bleu_tokenize tokenize)
{
    return tokenize == CLFORMER_BLEU_TOKENIZE_13A ? CF_BLEU_TOKENIZE_13A : CF_BLEU_TOKENIZE_NONE;
}

clformer_status clformer_bleu_corpus(const char *const *hyps, const char *const *refs, size_t n,
                                     clformer_bleu_tokenize tokenize, clformer_bleu *bleu)
{
    clformer_bleu_options o;
    clformer_bleu_options_default(&o);
    o.tokenize = tokenize;
    return clformer_bleu_corpus_with(hyps, refs, n, &o, bleu);
}

void clformer_bleu_options_default(clformer_bleu_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->tokenize = CLFORMER_BLEU_TOKENIZE_13A;
    o->lowercase = false;
}

clformer_status clformer_bleu_corpus_with(const char *const *hyps, const char *const *refs,
                                          size_t n, const clformer_bleu_options *o,
                                          clformer_bleu *bleu)
{
    CF_TRY(CF_CHECK_SIZE(clformer_bleu_options, o));
    cf_bleu_result r;
    CF_TRY(cf_bleu_corpus(hyps, refs, n, tokenizer(o->tokenize), o->lowercase, &r));
    bleu->score = r.score;
    memcpy(bleu->precisions, r.precisions, sizeof bleu->precisions);
    bleu->bp = r.bp;
    bleu->hyp_len = r.stats.hyp_len;
    bleu->ref_len = r.stats.ref_len;
    return CLFORMER_OK;
}

void clformer_bleu_format(const clformer_bleu *bleu, char *buf, size_t size)
{
    const cf_bleu_result r = to_internal(bleu);
    cf_bleu_format(&r, buf, size);
}

void clformer_bleu_signature(clformer_bleu_tokenize tokenize, char *buf, size_t size)
{
    cf_bleu_signature(tokenizer(tokenize), false, buf, size);
}

clformer_status clformer_bleu_signature_with(const clformer_bleu_options *o, char *buf,
                                             size_t size)
{
    if (size) buf[0] = '\0';
    CF_TRY(CF_CHECK_SIZE(clformer_bleu_options, o));
    cf_bleu_signature(tokenizer(o->tokenize), o->lowercase, buf, size);
    return CLFORMER_OK;
}
