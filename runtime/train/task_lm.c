/*
 * The language-modelling task (task.h): a decoder-only model trained on one
 * text, read and encoded once into a token stream, split into training and
 * validation, and each step's batch of windows at random offsets. An offset
 * depends only on (seed, global batch index, row), drawn by counter, never
 * from a stream's state: batch g is the same whether a run gets there
 * directly or resumes from a checkpoint, and rank r of N takes batch
 * (step - 1) * N + r.
 *
 * With a number of epochs instead, the text is cut into consecutive windows
 * (window k starts at token k * context, so its last label is the next
 * window's first input) and each epoch takes them in an order drawn from
 * (seed, epoch), or in text order without shuffling: batch g is again a
 * function of g alone. The windows left over after whole batches sit out
 * that epoch, a different few each time when shuffled.
 */
#include "fileio.h"
#include "log.h"
#include "lm_codec.h"
#include "lm_text.h"
#include "model.h"
#include "splitmix.h"
#include "status.h"
#include "task.h"

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
    /* epochs of consecutive windows (n_windows 0: random windows) */
    size_t n_windows, *order;
    uint64_t batches_per_epoch, order_epoch; /* order_epoch: which epoch order holds */
};

/* nanoGPT's training of GPT-2 shaped models: torch's AdamW eps, beta2 0.99
 * for the small presets and 0.95 for gpt2 */
static clformer_status lm_options_for(clformer_train_options *o, const char *preset)
{
    if (!preset) preset = "gpt-mini";
    CF_TRY(clformer_config_lm_preset(preset, &o->config));
    o->batching.batch_size = 12;
    o->batching.batch_tokens = 0;
    o->lr = 1e-3f;
    o->schedule = CLFORMER_LR_COSINE;
    o->warmup = 100;
    o->optim.optimizer = CLFORMER_ADAMW;
    o->optim.beta1 = 0.9f;
    o->optim.beta2 = !strcmp(preset, "gpt2") ? 0.95f : 0.99f;
    o->optim.eps = 1e-8f;
    o->optim.weight_decay = 0.1f;
    o->lm_tokenizer = CLFORMER_LM_CHAR;
    o->val_fraction = 0.1f;
    o->bleu_sentences = 0;
    return CLFORMER_OK;
}

/* setup checks what it reads */
static clformer_status lm_check(const clformer_train_options *o)
{
    (void)o;
    return CLFORMER_OK;
}

static void lm_free(clformer_trainer *t)
{
    struct cf_lm_data *d = t->lm;
    if (!d) return;
    free(d->train);
    free(d->val);
    free(d->window);
    free(d->order);
    free(d);
}

/* The file's token stream, encoded in chunks (lm_codec.h). */
static clformer_status encode_file(const cf_lm_codec *c, const char *path, const char *what,
                                   int32_t **ids, size_t *n)
{
    size_t unknown = 0;
    clformer_status st = cf_lm_codec_encode_file(c, path, 0, ids, n, &unknown, NULL);
    if (st == CLFORMER_OK && unknown > 0)
        cf_log(NULL, CF_LOG_WARN, "%s '%s': %zu %s not in the model's vocabulary (<unk>)", what,
               path, unknown, c->spm ? "pieces are" : "characters are");
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "%s: ", what);
}

/* A fresh model whose vocabulary is a tokenizer's: GPT-2's BPE (ids as
 * vocab.json's, as many as it has) or a SentencePiece model (its pieces). */
static clformer_status fresh_lm_tokenizer(clformer_trainer *t, clformer_config c)
{
    const clformer_train_options *o = &t->o;
    if (o->lm_tokenizer == CLFORMER_LM_GPT2_BPE) {
        if (!o->bpe_vocab_path || !o->bpe_merges_path)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the GPT-2 BPE tokenizer needs "
                           "vocab.json and merges.txt (--bpe-vocab and --bpe-merges, or "
                           "--tokenizer-dir DIR holding both)");
        char *text[2] = {NULL, NULL};
        size_t size[2] = {0, 0};
        clformer_status st = cf_read_text_file(o->bpe_vocab_path, &text[0], &size[0]);
        if (st == CLFORMER_OK) st = cf_read_text_file(o->bpe_merges_path, &text[1], &size[1]);
        cf_bpe *probe = NULL; /* its size first: the model's rows */
        if (st == CLFORMER_OK)
            st = cf_bpe_load(text[0], size[0], o->bpe_vocab_path, text[1], size[1],
                             o->bpe_merges_path, &probe);
        if (st == CLFORMER_OK) {
            c.tgt_vocab = cf_bpe_vocab_size(probe);
            st = clformer_model_create(t->ctx, &c, o->seed, &t->model);
        }
        cf_bpe_free(probe);
        if (st == CLFORMER_OK)
            st = cf_model_set_bpe(t->model, text[0], size[0], o->bpe_vocab_path, text[1],
                                  size[1], o->bpe_merges_path);
        free(text[0]);
        free(text[1]);
        return st;
    }
    if (!o->tgt_spm)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the SentencePiece tokenizer needs a "
                       "model (tgt_spm): --vocab-size N to learn one, or --tokenizer-model FILE");
    cf_spm *spm;
    CF_TRY(cf_spm_load(o->tgt_spm, o->tgt_spm_size, "the SentencePiece model", &spm));
    c.tgt_vocab = cf_spm_size(spm);
    const char **pieces = malloc((size_t)c.tgt_vocab * sizeof *pieces);
    clformer_status st = pieces ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int32_t i = 0; pieces && i < c.tgt_vocab; i++) pieces[i] = cf_spm_piece(spm, i);
    if (st == CLFORMER_OK) st = clformer_model_create(t->ctx, &c, o->seed, &t->model);
    if (st == CLFORMER_OK) st = clformer_model_set_vocabs(t->model, NULL, pieces);
    if (st == CLFORMER_OK)
        st = clformer_model_set_tokenizer(t->model, true, o->tgt_spm, o->tgt_spm_size);
    free(pieces);
    cf_spm_free(spm);
    return st;
}

/* A fresh model for the text: config.tgt_vocab from its characters or bytes,
 * or from the tokenizer. */
static clformer_status fresh_lm(clformer_trainer *t)
{
    clformer_config c = t->o.config;
    c.src_vocab = 0;
    if (t->o.lm_tokenizer == CLFORMER_LM_GPT2_BPE || t->o.lm_tokenizer == CLFORMER_LM_SPM) {
        clformer_status st = fresh_lm_tokenizer(t, c);
        return st == CLFORMER_OK ? st : cf_fail_prefix(st, "creating the model: ");
    }
    char **tokens = NULL;
    int n = 0;
    clformer_status st = cf_lm_vocab_build_file(t->o.text_path, t->o.lm_tokenizer == CLFORMER_LM_BYTE,
                                                0, &tokens, &n);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "training text: ");
    if (n <= CF_N_SPECIALS) { /* no character at all: nothing to learn, nor a vocabulary */
        cf_lm_tokens_free(tokens, n);
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the training text '%s' is empty: give a "
                       "text to train on", t->o.text_path);
    }
    c.tgt_vocab = n;
    if (st == CLFORMER_OK) st = clformer_model_create(t->ctx, &c, t->o.seed, &t->model);
    if (st == CLFORMER_OK) st = clformer_model_set_vocabs(t->model, NULL, (const char *const *)tokens);
    cf_lm_tokens_free(tokens, n);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "creating the model: ");
}

/* An epoch limit becomes the step limit it amounts to (every rank's batches
 * counted), so the loop, its progress and resume stay those of steps. */
static clformer_status epochs_setup(clformer_trainer *t, size_t W)
{
    struct cf_lm_data *d = t->lm;
    const size_t B = (size_t)t->o.batching.batch_size;
    d->n_windows = (d->n_train - 1) / (W - 1);
    if (d->n_windows < B)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the training text holds %zu consecutive windows of %zu tokens, fewer than "
                       "one batch of %zu: give more text, a smaller batch or a shorter context, "
                       "or train for a number of steps (random windows)", d->n_windows, W - 1, B);
    d->batches_per_epoch = d->n_windows / B;
    d->order = malloc(d->n_windows * sizeof *d->order);
    if (!d->order) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    d->order_epoch = UINT64_MAX;
    const uint64_t ranks = (uint64_t)cf_trainer_ranks(t), batches = t->o.epochs * d->batches_per_epoch;
    t->o.steps = (batches + ranks - 1) / ranks;
    t->o.epochs = 0;
    return CLFORMER_OK;
}

static clformer_status lm_setup(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    if (o->resume_path || o->init_path) CF_TRY(cf_trainer_open_model(t));
    if (o->batching.batch_size < 1)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "a language model's batch is a number of windows: set batch_size");
    if (!o->init_path && !o->resume_path && !clformer_config_decoder_only(&o->config))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "training on text needs a decoder-only config (n_enc_layers 0)");
    if (!t->model) CF_TRY(fresh_lm(t));
    const clformer_config *c = clformer_model_config(t->model);
    struct cf_lm_data *d = calloc(1, sizeof *d);
    if (!d) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    t->lm = d;
    cf_lm_codec codec;
    CF_TRY(cf_lm_model_codec(t->model, &codec));
    CF_TRY(encode_file(&codec, o->text_path, "training text", &d->train, &d->n_train));
    if (o->val_text_path)
        CF_TRY(encode_file(&codec, o->val_text_path, "validation text", &d->val, &d->n_val));
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
    if (!d->window) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    return o->epochs ? epochs_setup(t, W) : CLFORMER_OK;
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

/* The order of the consecutive windows in `epoch`: a Fisher-Yates shuffle
 * drawn from (seed, epoch), or the text's order. */
static void epoch_order(struct cf_lm_data *d, uint64_t seed, uint64_t epoch, bool shuffle)
{
    if (d->order_epoch == epoch) return;
    for (size_t k = 0; k < d->n_windows; k++) d->order[k] = k;
    uint64_t state = cf_mix64(seed ^ cf_mix64(epoch ^ 0xE90C4ull));
    for (size_t k = d->n_windows - 1; shuffle && k > 0; k--) {
        const size_t j = (size_t)cf_rng_below(&state, (uint64_t)k + 1);
        const size_t tmp = d->order[k];
        d->order[k] = d->order[j];
        d->order[j] = tmp;
    }
    d->order_epoch = epoch;
}

/* Batch `index` of the epochs of consecutive windows. */
static clformer_batch epoch_windows(clformer_trainer *t, uint64_t index, size_t W)
{
    struct cf_lm_data *d = t->lm;
    const size_t B = (size_t)t->batching.batch_size;
    epoch_order(d, t->batching.seed, index / d->batches_per_epoch, t->batching.shuffle);
    const size_t first = (size_t)(index % d->batches_per_epoch) * B;
    for (size_t b = 0; b < B; b++)
        memcpy(d->window + b * W, d->train + d->order[first + b] * (W - 1), W * sizeof *d->window);
    return (clformer_batch){B, 0, W, NULL, d->window};
}

/* Windows by counter: only this rank's batch is made. */
static clformer_status lm_batch(clformer_trainer *t, uint64_t step, int r, clformer_batch *batch,
                                bool *mine)
{
    *mine = r == cf_trainer_rank(t);
    if (!*mine) return CLFORMER_OK;
    const uint64_t index = (step - 1) * (uint64_t)cf_trainer_ranks(t) + (uint64_t)r;
    const size_t W = (size_t)clformer_model_config(t->model)->max_len + 1;
    *batch = t->lm->n_windows ? epoch_windows(t, index, W)
                              : windows(t->lm, t->lm->train, t->lm->n_train, t->batching.seed,
                                        index, (size_t)t->batching.batch_size, W);
    return CLFORMER_OK;
}

static clformer_status lm_validation_loss(clformer_trainer *t, double *loss, size_t *tokens)
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

static bool lm_has_validation(const clformer_trainer *t) { return t->lm && t->lm->val; }

static bool lm_summary(const clformer_trainer *t, bool validation, char *buf, size_t cap)
{
    const struct cf_lm_data *d = t->lm;
    if (validation && !lm_has_validation(t)) return false;
    snprintf(buf, cap, "%zu tokens (vocabulary %d), windows of %d + 1",
             validation ? d->n_val : d->n_train, clformer_model_config(t->model)->tgt_vocab,
             clformer_model_config(t->model)->max_len);
    return true;
}

/* The windows follow from (seed, step): there is no position to keep. */
static clformer_status lm_batches_new(clformer_trainer *t)
{
    (void)t;
    return CLFORMER_OK;
}

static clformer_status lm_batches_restore(clformer_trainer *t, json_t *batching)
{
    (void)t, (void)batching;
    return CLFORMER_OK;
}

static json_t *lm_batches_state(const clformer_trainer *t)
{
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, t->batching.seed);
    return json_pack("{s:s, s:I, s:b, s:s}", "mode", "lm", "batch_size",
                     (json_int_t)t->batching.batch_size, "shuffle", 1, "seed", seed);
}

/* an epoch limit became a step limit (epochs_setup) */
static uint64_t lm_epoch(const clformer_trainer *t)
{
    (void)t;
    return 0;
}

static size_t lm_bleu_sentences(const clformer_trainer *t)
{
    (void)t;
    return 0;
}

const cf_task cf_task_lm = {
    .models = CLFORMER_TASK_LM,
    .options_for = lm_options_for,
    .check = lm_check,
    .setup = lm_setup,
    .batches_new = lm_batches_new,
    .batches_restore = lm_batches_restore,
    .batches_state = lm_batches_state,
    .epoch = lm_epoch,
    .batch = lm_batch,
    .has_validation = lm_has_validation,
    .validation_loss = lm_validation_loss,
    .bleu_sentences = lm_bleu_sentences,
    .bleu = NULL, /* no sentences to translate */
    .summary = lm_summary,
    .free = lm_free,
};
