/*
 * Language modelling: text <-> a decoder-only model's ids (the public
 * clformer_lm_* functions) and the trainer's data when it trains one
 * (trainer.h): the text read and encoded once into a token stream, split
 * into training and validation, and each step's batch of windows at random
 * offsets. An offset depends only on (seed, global batch index, row), drawn
 * by counter, never from a stream's state: batch g is the same whether a
 * run gets there directly or resumes from a checkpoint, and rank r of N
 * takes batch (step - 1) * N + r.
 */
#include "fileio.h"
#include "log.h"
#include "lm_text.h"
#include "splitmix.h"
#include "status.h"
#include "trainer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cf_lm_data {
    int32_t *train, *val;
    size_t n_train, n_val;
    int32_t *window;  /* batch_size x (max_len + 1): the batch handed out */
    size_t window_cap;
};

/* --- the public text functions --------------------------------------------- */

static clformer_status model_vocab(const clformer_model *m, cf_vocab **v)
{
    const clformer_config *c = clformer_model_config(m);
    const char *const *tokens = clformer_model_tgt_vocab(m);
    if (!clformer_config_decoder_only(c) || !tokens)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "text for a language model needs a decoder-only model with a vocabulary");
    return cf_vocab_from_tokens(tokens, (size_t)c->tgt_vocab, "the model's vocabulary", v);
}

clformer_status clformer_lm_encode(const clformer_model *m, const char *text, size_t len,
                                   int32_t **ids, size_t *n)
{
    cf_vocab *v;
    CF_TRY(model_vocab(m, &v));
    size_t unknown;
    clformer_status st = cf_lm_encode(v, text, len, ids, n, &unknown);
    cf_vocab_free(v);
    return st;
}

clformer_status clformer_lm_decode(const clformer_model *m, const int32_t *ids, size_t n,
                                   char **text)
{
    const clformer_config *c = clformer_model_config(m);
    const char *const *tokens = clformer_model_tgt_vocab(m);
    if (!tokens) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the model has no vocabulary");
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= c->tgt_vocab)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "id %d at %zu is outside the vocabulary of %d tokens", (int)ids[i], i,
                           c->tgt_vocab);
        total += strlen(tokens[ids[i]]);
    }
    char *out = malloc(total);
    if (!out) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t at = 0;
    for (size_t i = 0; i < n; i++) at += cf_lm_token_text(tokens[ids[i]], out + at);
    out[at] = '\0';
    *text = out;
    return CLFORMER_OK;
}

clformer_status clformer_lm_vocab(const char *text, size_t len, clformer_lm_tokenizer tokenizer,
                                  char ***tokens, int *n)
{
    return cf_lm_vocab_build(text, len, tokenizer == CLFORMER_LM_BYTE, tokens, n);
}

void clformer_lm_vocab_free(char **tokens, int n) { cf_lm_tokens_free(tokens, n); }

/* --- the trainer's data ----------------------------------------------------- */

void cf_lm_free(struct cf_lm_data *d)
{
    if (!d) return;
    free(d->train);
    free(d->val);
    free(d->window);
    free(d);
}

static clformer_status encode_file(const cf_vocab *v, const char *path, const char *what,
                                   int32_t **ids, size_t *n)
{
    char *text = NULL;
    size_t size = 0;
    clformer_status st = cf_read_file(path, &text, &size);
    size_t unknown = 0;
    if (st == CLFORMER_OK) st = cf_lm_encode(v, text, size, ids, n, &unknown);
    free(text);
    if (st == CLFORMER_OK && unknown > 0)
        cf_log(NULL, CF_LOG_WARN, "%s '%s': %zu characters are not in the model's vocabulary "
               "(<unk>)", what, path, unknown);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "%s: ", what);
}

/* A fresh model for the text: config.tgt_vocab from its characters or bytes. */
static clformer_status fresh_lm(clformer_trainer *t)
{
    char *text = NULL;
    size_t size = 0;
    clformer_status st = cf_read_file(t->o.text_path, &text, &size);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "training text: ");
    char **tokens = NULL;
    int n = 0;
    st = cf_lm_vocab_build(text, size, t->o.lm_tokenizer == CLFORMER_LM_BYTE, &tokens, &n);
    free(text);
    clformer_config c = t->o.config;
    c.tgt_vocab = n;
    c.src_vocab = 0;
    if (st == CLFORMER_OK) st = clformer_model_create(t->ctx, &c, t->o.seed, &t->model);
    if (st == CLFORMER_OK) st = clformer_model_set_vocabs(t->model, NULL, (const char *const *)tokens);
    cf_lm_tokens_free(tokens, n);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "creating the model: ");
}

clformer_status cf_lm_setup(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    if (o->epochs)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "a language model trains for a number of steps (random windows have no "
                       "epochs): give steps, not epochs");
    if (o->batching.batch_size < 1)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "a language model's batch is a number of windows: set batch_size");
    if (!o->init_path && !o->resume_path && !clformer_config_decoder_only(&o->config))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "training on text needs a decoder-only config (n_enc_layers 0)");
    if (!t->model) CF_TRY(fresh_lm(t));
    const clformer_config *c = clformer_model_config(t->model);
    if (!clformer_config_decoder_only(c))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the model has an encoder: a language model is decoder-only");
    struct cf_lm_data *d = calloc(1, sizeof *d);
    if (!d) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    t->lm = d;
    cf_vocab *v;
    CF_TRY(model_vocab(t->model, &v));
    clformer_status st = encode_file(v, o->text_path, "training text", &d->train, &d->n_train);
    if (st == CLFORMER_OK && o->val_text_path)
        st = encode_file(v, o->val_text_path, "validation text", &d->val, &d->n_val);
    cf_vocab_free(v);
    CF_TRY(st);
    if (!o->val_text_path && o->val_fraction > 0.0f) { /* the last fraction validates */
        const size_t keep = (size_t)((double)d->n_train * (1.0 - (double)o->val_fraction));
        d->n_val = d->n_train - keep;
        d->val = malloc((d->n_val ? d->n_val : 1) * sizeof *d->val);
        if (!d->val) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        memcpy(d->val, d->train + keep, d->n_val * sizeof *d->val);
        d->n_train = keep;
    }
    const size_t W = (size_t)c->max_len + 1;
    if (d->n_train < W)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the training text has %zu tokens, fewer than one window of %zu (context "
                       "%d + 1): give more text or a shorter context", d->n_train, W, c->max_len);
    if (d->val && d->n_val < W)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the validation text has %zu tokens, fewer than one window of %zu "
                       "(context %d + 1): give more validation text or a shorter context",
                       d->n_val, W, c->max_len);
    d->window_cap = (size_t)o->batching.batch_size * W;
    d->window = malloc(d->window_cap * sizeof *d->window);
    return d->window ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
}

/* Batch `index` of `stream` (n tokens): rows at offsets drawn from (seed, index, row). */
static clformer_batch windows(struct cf_lm_data *d, const int32_t *stream, size_t n,
                              uint64_t seed, uint64_t index, size_t B, size_t W)
{
    for (size_t b = 0; b < B; b++) {
        uint64_t state = cf_mix64(seed ^ cf_mix64(index * 0x100000001B3ull + b));
        const size_t at = (size_t)cf_rng_below(&state, (uint64_t)(n - W + 1));
        memcpy(d->window + b * W, stream + at, W * sizeof *d->window);
    }
    return (clformer_batch){B, 0, W, NULL, d->window};
}

clformer_batch cf_lm_batch(clformer_trainer *t, uint64_t index)
{
    const size_t W = (size_t)clformer_model_config(t->model)->max_len + 1;
    return windows(t->lm, t->lm->train, t->lm->n_train, t->batching.seed, index,
                   (size_t)t->batching.batch_size, W);
}

clformer_status cf_lm_validation_loss(clformer_trainer *t, double *loss, size_t *tokens)
{
    struct cf_lm_data *d = t->lm;
    const size_t W = (size_t)clformer_model_config(t->model)->max_len + 1;
    const size_t n = t->o.eval_batches ? t->o.eval_batches : 20;
    double sum = 0;
    size_t count = 0;
    /* the same windows at every validation: a fixed seed apart from training's */
    for (size_t k = 0; k < n && !t->stop; k++) {
        const clformer_batch b = windows(d, d->val, d->n_val, t->batching.seed ^ 0x5A17ull, k,
                                         (size_t)t->batching.batch_size, W);
        double s;
        size_t c;
        CF_TRY(clformer_session_eval_loss(t->session, &b, &s, &c));
        sum += s;
        count += c;
    }
    *loss = count ? sum / (double)count : NAN;
    *tokens = count;
    return CLFORMER_OK;
}

bool cf_lm_has_validation(const clformer_trainer *t) { return t->lm && t->lm->val; }

void cf_lm_summary(const clformer_trainer *t, bool validation, char *buf, size_t cap)
{
    const struct cf_lm_data *d = t->lm;
    snprintf(buf, cap, "%zu tokens (vocabulary %d), windows of %d + 1",
             validation ? d->n_val : d->n_train, clformer_model_config(t->model)->tgt_vocab,
             clformer_model_config(t->model)->max_len);
}
