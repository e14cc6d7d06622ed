/*
 * The translation task (task.h): sentence pairs, as given or read from
 * files, turned into SentencePiece pieces when a side has a model, encoded
 * with the model's vocabularies (or ones built from the text for a fresh
 * model), and batched by the batcher, whose position every checkpoint
 * keeps; validation is the loss over the whole set and greedy BLEU over
 * its first sentences.
 */
#include "model.h"
#include "status.h"
#include "task.h"
#include "tokenizer_spm.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static clformer_status translation_options_for(clformer_train_options *o, const char *preset)
{
    return clformer_config_preset(preset ? preset : "small", &o->config);
}

static clformer_status translation_check(const clformer_train_options *o)
{
    if (!o->train_text && (!o->src_path || !o->tgt_path))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "training needs sentence pairs: a text, or source and target files");
    if (!o->val_text && !o->val_src_path != !o->val_tgt_path)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "validation files go in pairs: give both the source and the target");
    if ((o->save_best || o->patience) && o->best_metric == CLFORMER_METRIC_BLEU &&
        o->bleu_sentences == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "judging checkpoints by BLEU needs validation sentences to translate "
                       "(bleu_sentences > 0)");
    return CLFORMER_OK;
}

static clformer_status load_text(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    if (o->train_text) t->train_text = o->train_text;
    else {
        clformer_status st = cf_parallel_text_load(o->src_path, o->tgt_path, &t->own_train);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "training data: ");
        t->train_text = t->own_train;
    }
    if (o->val_text) t->val_text = o->val_text;
    else if (o->val_src_path) {
        clformer_status st = cf_parallel_text_load(o->val_src_path, o->val_tgt_path, &t->own_val);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "validation data: ");
        t->val_text = t->own_val;
    }
    return CLFORMER_OK;
}

/* One side of a text as SentencePiece pieces (NULL spm: the side as is). */
static clformer_status pieces_side(const cf_spm *spm, const char **in, size_t n, char ***out)
{
    *out = NULL;
    if (!spm) return CLFORMER_OK;
    char **lines = calloc(n ? n : 1, sizeof *lines);
    if (!lines) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++)
        st = cf_spm_pieces_line(spm, in[i], strlen(in[i]), &lines[i]);
    *out = lines;
    return st;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; lines && i < n; i++) free(lines[i]);
    free(lines);
}

/* The text with its SentencePiece sides turned into pieces. */
static clformer_status pieces_text(clformer_trainer *t, const cf_parallel_text *raw,
                                   cf_parallel_text **out)
{
    char **src = NULL, **tgt = NULL;
    clformer_status st = pieces_side(t->spm[0], raw->src, raw->n, &src);
    if (st == CLFORMER_OK) st = pieces_side(t->spm[1], raw->tgt, raw->n, &tgt);
    if (st == CLFORMER_OK)
        st = cf_parallel_text_from_lines(src ? (const char *const *)src : raw->src,
                                         tgt ? (const char *const *)tgt : raw->tgt, raw->n,
                                         raw->src_name, raw->tgt_name, out);
    free_lines(src, raw->n);
    free_lines(tgt, raw->n);
    return st;
}

/* SentencePiece models: the model's (init, resume) or the options' (fresh). */
static clformer_status tokenizers(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    for (int k = 0; k < 2; k++) {
        size_t size = k ? o->tgt_spm_size : o->src_spm_size;
        const void *bytes = k ? o->tgt_spm : o->src_spm;
        if (t->model) bytes = clformer_model_tokenizer(t->model, k == 1, &size);
        if (bytes)
            CF_TRY(cf_spm_load(bytes, size, k ? "the target SentencePiece model"
                                              : "the source SentencePiece model", &t->spm[k]));
    }
    if (!t->spm[0] && !t->spm[1]) return CLFORMER_OK;
    clformer_status st = pieces_text(t, t->train_text, &t->own_train_pieces);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "training data: ");
    t->train_text = t->own_train_pieces;
    if (t->val_text) {
        t->raw_val = t->val_text;
        st = pieces_text(t, t->val_text, &t->own_val_pieces);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "validation data: ");
        t->val_text = t->own_val_pieces;
    }
    return CLFORMER_OK;
}

/* A fresh model's vocabulary of a SentencePiece side: its pieces. */
static clformer_status spm_vocab(const cf_spm *spm, cf_vocab **out)
{
    const int32_t n = cf_spm_size(spm);
    const char **tokens = malloc((size_t)n * sizeof *tokens);
    if (!tokens) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int32_t i = 0; i < n; i++) tokens[i] = cf_spm_piece(spm, i);
    clformer_status st = cf_vocab_from_tokens(tokens, (size_t)n, "the SentencePiece model", out);
    free(tokens);
    return st;
}

/* share_all_embed: one vocabulary for both sides, either one SentencePiece
 * model's pieces or the words of both sides' text (the same min_freq and
 * max_vocab rules as a side's own); the target side gets a copy. */
static clformer_status joint_vocabulary(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    clformer_status st;
    if (t->spm[0] || t->spm[1]) {
        const bool same = t->spm[0] && t->spm[1] && o->src_spm_size == o->tgt_spm_size &&
                          !memcmp(o->src_spm, o->tgt_spm, o->src_spm_size);
        if (!same)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "share_all_embed needs one vocabulary, but the source and target "
                           "SentencePiece models differ: give the same model to both sides");
        st = spm_vocab(t->spm[0], &t->src_vocab);
    } else {
        st = cf_vocab_build_joint(t->train_text->src, t->train_text->tgt, t->train_text->n,
                                  o->min_freq, o->max_vocab, &t->src_vocab);
    }
    if (st == CLFORMER_OK)
        st = cf_vocab_from_tokens(cf_vocab_tokens(t->src_vocab), (size_t)cf_vocab_size(t->src_vocab),
                                  "the joint vocabulary", &t->tgt_vocab);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "building the joint vocabulary: ");
}

/* Vocabularies: the model's, or built from the training text for a fresh model. */
static clformer_status vocabularies(clformer_trainer *t)
{
    clformer_status st;
    if (t->model) {
        st = clformer_vocab_from_model(t->model, CLFORMER_SIDE_SOURCE, &t->src_vocab);
        if (st == CLFORMER_OK)
            st = clformer_vocab_from_model(t->model, CLFORMER_SIDE_TARGET, &t->tgt_vocab);
        return st == CLFORMER_OK ? st : cf_fail_prefix(st, "the model's vocabularies: ");
    }
    const clformer_train_options *o = &t->o;
    if (o->config.share_all_embed) return joint_vocabulary(t);
    st = t->spm[0] ? spm_vocab(t->spm[0], &t->src_vocab)
                   : cf_vocab_build(t->train_text->src, t->train_text->n, o->min_freq,
                                    o->max_vocab, &t->src_vocab);
    if (st == CLFORMER_OK)
        st = t->spm[1] ? spm_vocab(t->spm[1], &t->tgt_vocab)
                       : cf_vocab_build(t->train_text->tgt, t->train_text->n, o->min_freq,
                                        o->max_vocab, &t->tgt_vocab);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "building the vocabularies: ");
}

static clformer_status encode(clformer_trainer *t, int max_len)
{
    clformer_status st = cf_corpus_encode(t->train_text, t->src_vocab, t->tgt_vocab, max_len,
                                          &t->train);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "training data: ");
    /* the training text is not needed once encoded: freeing it here halves
     * the memory a large corpus holds for the rest of the run (the
     * validation text stays, for BLEU's references) */
    cf_parallel_text_free(t->own_train);
    cf_parallel_text_free(t->own_train_pieces);
    t->own_train = t->own_train_pieces = NULL;
    t->train_text = NULL;
    if (t->val_text) {
        st = cf_corpus_encode(t->val_text, t->src_vocab, t->tgt_vocab, max_len, &t->val);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "validation data: ");
    }
    return CLFORMER_OK;
}

static clformer_status fresh_model(clformer_trainer *t)
{
    clformer_config c = t->o.config;
    c.src_vocab = cf_vocab_size(t->src_vocab);
    c.tgt_vocab = cf_vocab_size(t->tgt_vocab);
    clformer_status st = clformer_model_create(t->ctx, &c, t->o.seed, &t->model);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "creating the model: ");
    const char **s = malloc((size_t)c.src_vocab * sizeof *s);
    const char **g = malloc((size_t)c.tgt_vocab * sizeof *g);
    st = s && g ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int i = 0; s && i < c.src_vocab; i++) s[i] = cf_vocab_token(t->src_vocab, i);
    for (int i = 0; g && i < c.tgt_vocab; i++) g[i] = cf_vocab_token(t->tgt_vocab, i);
    if (st == CLFORMER_OK) st = clformer_model_set_vocabs(t->model, s, g);
    free(s);
    free(g);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "setting the vocabularies: ");
    const clformer_train_options *o = &t->o;
    if (o->src_spm) st = clformer_model_set_tokenizer(t->model, false, o->src_spm, o->src_spm_size);
    if (st == CLFORMER_OK && o->tgt_spm)
        st = clformer_model_set_tokenizer(t->model, true, o->tgt_spm, o->tgt_spm_size);
    return st;
}

/* Greedy BLEU of the first bleu_sentences validation sentences. */
static clformer_status translation_bleu(clformer_trainer *t, size_t n, double *bleu)
{
    char **hyps = calloc(n, sizeof *hyps);
    if (!hyps) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_decode_options dec;
    clformer_decode_options_default(&dec);
    /* the text as given: tokens, or raw text for a model with SentencePiece
     * (then scored as sacreBLEU scores raw text); 64 sentences at a time, so
     * that a stop request (Ctrl-C) is not kept waiting by a long validation:
     * the rest is then abandoned */
    const cf_parallel_text *val = t->raw_val ? t->raw_val : t->val_text;
    clformer_status st = CLFORMER_OK;
    for (size_t start = 0; start < n && st == CLFORMER_OK && !t->stop; start += 64)
        st = clformer_translate_sentences(t->session, val->src + start,
                                          n - start < 64 ? n - start : 64, &dec, 64,
                                          hyps + start, NULL, NULL, NULL);
    clformer_bleu b;
    if (st == CLFORMER_OK && !t->stop)
        st = clformer_bleu_corpus((const char *const *)hyps, val->tgt, n,
                                  t->spm[1] ? CLFORMER_BLEU_TOKENIZE_13A
                                            : CLFORMER_BLEU_TOKENIZE_NONE, &b);
    for (size_t i = 0; i < n; i++) free(hyps[i]);
    free(hyps);
    if (st == CLFORMER_OK) *bleu = t->stop ? NAN : b.score;
    return st;
}

static clformer_status translation_setup(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    CF_TRY(load_text(t));
    if (o->resume_path || o->init_path) CF_TRY(cf_trainer_open_model(t));
    CF_TRY(tokenizers(t));
    CF_TRY(vocabularies(t));
    CF_TRY(encode(t, t->model ? clformer_model_config(t->model)->max_len : o->config.max_len));
    return t->model ? CLFORMER_OK : fresh_model(t);
}

static clformer_status translation_batches_new(clformer_trainer *t)
{
    return clformer_batcher_create(t->train, &t->o.batching, &t->batcher);
}

static clformer_status translation_batches_restore(clformer_trainer *t, json_t *batching)
{
    clformer_status st = clformer_batcher_create(t->train, &t->batching, &t->batcher);
    if (st == CLFORMER_OK) st = cf_batcher_state_from_json(t->batcher->b, batching);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "resuming the batches: ");
}

static json_t *translation_batches_state(const clformer_trainer *t)
{
    return cf_batcher_state_to_json(t->batcher->b);
}

static uint64_t translation_epoch(const clformer_trainer *t)
{
    return clformer_batcher_epoch(t->batcher);
}

/* N ranks deal out N consecutive batches of the batcher's one sequence:
 * every rank draws them all and trains on its own */
static clformer_status translation_batch(clformer_trainer *t, uint64_t step, int r,
                                         clformer_batch *batch, bool *mine)
{
    (void)step;
    clformer_status st = clformer_batcher_next(t->batcher, batch);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "batching: ");
    *mine = r == cf_trainer_rank(t);
    return CLFORMER_OK;
}

static bool translation_has_validation(const clformer_trainer *t) { return t->val != NULL; }

static clformer_status translation_validation_loss(clformer_trainer *t, double *loss,
                                                   size_t *tokens)
{
    return clformer_corpus_loss(t->session, t->val, 4096, loss, tokens);
}

static size_t translation_bleu_sentences(const clformer_trainer *t)
{
    return t->o.bleu_sentences < t->val_text->n ? t->o.bleu_sentences : t->val_text->n;
}

static bool translation_summary(const clformer_trainer *t, bool validation, char *buf, size_t cap)
{
    const clformer_corpus *c = validation ? t->val : t->train;
    if (!c) return false;
    clformer_corpus_summary(c, buf, cap);
    return true;
}

static void translation_free(clformer_trainer *t)
{
    clformer_batcher_free(t->batcher);
    cf_corpus_free(t->train);
    cf_corpus_free(t->val);
    cf_vocab_free(t->src_vocab);
    cf_vocab_free(t->tgt_vocab);
    cf_parallel_text_free(t->own_train);
    cf_parallel_text_free(t->own_val);
    cf_parallel_text_free(t->own_train_pieces);
    cf_parallel_text_free(t->own_val_pieces);
    cf_spm_free(t->spm[0]);
    cf_spm_free(t->spm[1]);
}

const cf_task cf_task_translation = {
    .models = CLFORMER_TASK_TRANSLATION,
    .options_for = translation_options_for,
    .check = translation_check,
    .setup = translation_setup,
    .batches_new = translation_batches_new,
    .batches_restore = translation_batches_restore,
    .batches_state = translation_batches_state,
    .epoch = translation_epoch,
    .batch = translation_batch,
    .has_validation = translation_has_validation,
    .validation_loss = translation_validation_loss,
    .bleu_sentences = translation_bleu_sentences,
    .bleu = translation_bleu,
    .summary = translation_summary,
    .free = translation_free,
};
