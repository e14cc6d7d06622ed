/* Options of a resumed run against its checkpoint's (see resume_check.h). */
#include "resume_check.h"
#include "cli.h"
#include "clformer_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *command;
    bool failed;
} check;

/* Reports the first difference: `have` is the checkpoint's value, `want` the command's. */
static void differs(check *c, const char *option, const char *have, const char *want)
{
    if (c->failed) return;
    c->failed = true;
    cli_error(c->command, "%s: the checkpoint was trained with %s, this command gives %s; "
              "--resume continues the run exactly as it was trained: give the checkpoint's "
              "value or leave the option out", option, have, want);
}

static void ints(check *c, bool given, const char *option, long long have, long long want)
{
    char a[32], b[32];
    if (!given || have == want) return;
    snprintf(a, sizeof a, "%lld", have);
    snprintf(b, sizeof b, "%lld", want);
    differs(c, option, a, b);
}

/* Floats as the checkpoint stores them; printed exactly when %g hides the difference. */
static void floats(check *c, bool given, const char *option, float have, float want)
{
    char a[32], b[32];
    if (!given || have == want) return;
    snprintf(a, sizeof a, "%g", (double)have);
    snprintf(b, sizeof b, "%g", (double)want);
    if (!strcmp(a, b)) {
        snprintf(a, sizeof a, "%.9g", (double)have);
        snprintf(b, sizeof b, "%.9g", (double)want);
    }
    differs(c, option, a, b);
}

static void words(check *c, bool given, const char *option, const char *have, const char *want)
{
    if (given && strcmp(have, want) != 0) differs(c, option, have, want);
}

static void shape(check *c, const clformer_config *have, const clformer_config *want,
                  const train_given *g)
{
    /* a field comes from its own option, else from --config's preset */
    ints(c, g->d_model || g->config, g->d_model ? "--d-model" : "--config (d_model)",
         have->d_model, want->d_model);
    ints(c, g->heads || g->config, g->heads ? "--heads" : "--config (heads)", have->n_heads,
         want->n_heads);
    ints(c, g->d_ff || g->config, g->d_ff ? "--d-ff" : "--config (d_ff)", have->d_ff,
         want->d_ff);
    ints(c, g->enc_layers || g->config, g->enc_layers ? "--enc-layers" : "--config (enc_layers)",
         have->n_enc_layers, want->n_enc_layers);
    ints(c, g->dec_layers || g->config, g->dec_layers ? "--dec-layers" : "--config (dec_layers)",
         have->n_dec_layers, want->n_dec_layers);
    ints(c, g->max_len, "--max-len", have->max_len, want->max_len);
    words(c, g->post_norm, "--post-norm", have->norm_first ? "pre-norm" : "post-norm",
          want->norm_first ? "pre-norm" : "post-norm");
    words(c, g->activation, "--activation", clformer_activation_name(have->activation),
          clformer_activation_name(want->activation));
    words(c, g->positional, "--positional", clformer_positional_name(have->positional),
          clformer_positional_name(want->positional));
    words(c, g->tie, "--tie-embeddings", have->share_tgt_embed ? "tied embeddings" : "untied embeddings",
          want->share_tgt_embed ? "tied embeddings" : "untied embeddings");
    words(c, g->share_all, "--share-all-embeddings",
          have->share_all_embed ? "one embedding shared by source, target and generator"
                                : "separate source and target embeddings",
          want->share_all_embed ? "one embedding shared by source, target and generator"
                                : "separate source and target embeddings");
    floats(c, g->dropout, "--dropout", have->dropout, want->dropout);
    floats(c, g->attention_dropout, "--attention-dropout",
           have->attention_dropout < 0 ? have->dropout : have->attention_dropout,
           want->attention_dropout);
    floats(c, g->activation_dropout, "--activation-dropout",
           have->activation_dropout < 0 ? have->dropout : have->activation_dropout,
           want->activation_dropout);
    floats(c, g->label_smoothing, "--label-smoothing", have->label_smoothing,
           want->label_smoothing);
}

/* --batch-size or --batch-tokens: the checkpoint may batch the other way */
static void batch_option(check *c, bool given, const char *option, int have, int want,
                         const char *other, int other_value)
{
    char a[64], b[32];
    if (!given || have == want) return;
    if (have) snprintf(a, sizeof a, "%d", have);
    else snprintf(a, sizeof a, "%s %d", other, other_value);
    snprintf(b, sizeof b, "%d", want);
    differs(c, option, a, b);
}

static void batching(check *c, const clformer_batcher_options *have,
                     const clformer_batcher_options *want, const train_given *g)
{
    batch_option(c, g->batch_size, "--batch-size", have->batch_size, want->batch_size,
                 "--batch-tokens", have->batch_tokens);
    batch_option(c, g->batch_tokens, "--batch-tokens", have->batch_tokens, want->batch_tokens,
                 "--batch-size", have->batch_size);
    words(c, g->no_shuffle, "--no-shuffle", have->shuffle ? "shuffled batches" : "file order",
          want->shuffle ? "shuffled batches" : "file order");
    ints(c, g->seed, "--seed", (long long)have->seed, (long long)want->seed);
}

int resume_check(const char *command, const clformer_train_options *want, const train_given *g,
                 const clformer_train_options *have)
{
    check c = {command, false};
    shape(&c, &have->config, &want->config, g);
    batching(&c, &have->batching, &want->batching, g);
    floats(&c, g->lr, "--lr", have->lr, want->lr);
    static const char *const schedules[] = {"constant", "noam", "inverse-sqrt", "cosine"};
    words(&c, g->schedule, "--lr-schedule", schedules[have->schedule], schedules[want->schedule]);
    /* a warm-up given with --resume but no --lr-schedule: the checkpoint's
     * schedule decides whether it has one */
    if (g->warmup && have->schedule == CLFORMER_LR_CONSTANT) {
        char b[32];
        snprintf(b, sizeof b, "--warmup %llu", (unsigned long long)want->warmup);
        differs(&c, "--warmup", "the constant schedule (no warm-up)", b);
    }
    ints(&c, g->warmup, "--warmup", (long long)have->warmup, (long long)want->warmup);
    floats(&c, g->warmup_init_lr, "--warmup-init-lr", have->warmup_init_lr, want->warmup_init_lr);
    words(&c, g->optimizer, "--optimizer", have->optim.optimizer == CLFORMER_ADAMW ? "adamw" : "adam",
          want->optim.optimizer == CLFORMER_ADAMW ? "adamw" : "adam");
    floats(&c, g->weight_decay, "--weight-decay", have->optim.weight_decay,
           want->optim.weight_decay);
    floats(&c, g->clip, "--clip", have->optim.clip, want->optim.clip);
    return c.failed ? EXIT_USAGE : 0;
}

/* ------------------------------------------------------------------------- */
/* Vocabularies                                                               */
/* ------------------------------------------------------------------------- */

/* True when the model's vocabulary of `side` is exactly `v`. */
static bool same_vocab(const clformer_model *model, clformer_side side, const clformer_vocab *v)
{
    const clformer_config *cfg = clformer_model_config(model);
    const int n = side == CLFORMER_SIDE_SOURCE ? cfg->src_vocab : cfg->tgt_vocab;
    const char *const *words = side == CLFORMER_SIDE_SOURCE ? clformer_model_src_vocab(model)
                                                            : clformer_model_tgt_vocab(model);
    if (!words || clformer_vocab_size(v) != n) return false;
    for (int i = 0; i < n; i++)
        if (strcmp(words[i], clformer_vocab_token(v, i)) != 0) return false;
    return true;
}

/* --min-freq/--max-vocab: rebuilt from the training text, the vocabularies
 * must be the checkpoint's (else those options would silently do nothing). */
static void word_vocab(check *c, clformer_model *model, const clformer_train_options *want,
                       const train_given *g)
{
    if (!g->min_freq && !g->max_vocab) return;
    clformer_parallel_text *text;
    if (clformer_parallel_text_load(want->src_path, want->tgt_path, &text) != CLFORMER_OK) {
        c->failed = true;
        cli_runtime_error(c->command, "training data");
        return;
    }
    bool same = true;
    int sizes[2] = {0, 0};
    /* one embedding for both sides: the checkpoint's joint vocabulary */
    const bool joint = clformer_model_config(model)->share_all_embed;
    for (int side = 0; side < 2 && !c->failed; side++) {
        clformer_vocab *v;
        if ((joint ? clformer_vocab_build_joint(text, want->min_freq, want->max_vocab, &v)
                   : clformer_vocab_build(text, (clformer_side)side, want->min_freq,
                                          want->max_vocab, &v)) != CLFORMER_OK) {
            c->failed = true;
            cli_runtime_error(c->command, "building the vocabulary");
            break;
        }
        sizes[side] = clformer_vocab_size(v);
        same = same && same_vocab(model, (clformer_side)side, v);
        clformer_vocab_free(v);
    }
    clformer_parallel_text_free(text);
    if (c->failed || same) return;
    const clformer_config *cfg = clformer_model_config(model);
    char have[96], given[128];
    snprintf(have, sizeof have, "vocabularies of %d and %d words", cfg->src_vocab, cfg->tgt_vocab);
    snprintf(given, sizeof given, "--min-freq %d --max-vocab %d, whose vocabularies from this "
             "training text differ (%d and %d words)", want->min_freq, want->max_vocab,
             sizes[0], sizes[1]);
    differs(c, g->min_freq ? "--min-freq" : "--max-vocab", have, given);
}

/* A protobuf varint at *p (false past `end`). */
static bool varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The field `want` of a protobuf message: a length-delimited one's bytes
 * (wire type 2) or a varint's value (0); false when absent or malformed. */
static bool proto_field(const unsigned char *p, const unsigned char *end, uint64_t want,
                        const unsigned char **bytes, uint64_t *value)
{
    bool found = false;
    while (p < end) {
        uint64_t key, v;
        if (!varint(&p, end, &key)) return false;
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &v)) return false;
            if (key >> 3 == want) *value = v, found = true;
            break;
        case 1: if ((uint64_t)(end - p) < 8) return false; p += 8; break;
        case 5: if ((uint64_t)(end - p) < 4) return false; p += 4; break;
        case 2:
            if (!varint(&p, end, &v) || v > (uint64_t)(end - p)) return false;
            if (key >> 3 == want) *bytes = p, *value = v, found = true;
            p += v;
            break;
        default: return false;
        }
    }
    return found;
}

/* The model type of a SentencePiece model (ModelProto.trainer_spec = 2,
 * TrainerSpec.model_type = 3: 1 unigram, the default, 2 bpe, 3 word, 4 char). */
static const char *spm_type(const void *model, size_t size)
{
    const unsigned char *p = model, *end = p + size, *spec = NULL;
    uint64_t spec_size = 0, type = 1;
    if (proto_field(p, end, 2, &spec, &spec_size) && spec)
        proto_field(spec, spec + spec_size, 3, &spec, &type);
    static const char *const names[] = {"unigram", "unigram", "bpe", "word", "char"};
    return type < 5 ? names[type] : "another kind";
}

/* A FILE.model against the checkpoint's model of one side. */
static void spm_file(check *c, const char *option, const char *path, const void *have,
                     size_t have_size)
{
    if (!path || c->failed) return;
    char *bytes;
    size_t size;
    if (clformer_read_file(path, &bytes, &size) != CLFORMER_OK) {
        c->failed = true;
        cli_runtime_error(c->command, option);
        return;
    }
    bool same = size == have_size && memcmp(bytes, have, size) == 0;
    free(bytes);
    if (!same) differs(c, option, "other SentencePiece models", path);
}

static void spm_vocab(check *c, clformer_model *model, const char *tokenizer, long vocab_size,
                      const char *type, const char *model_file, const char *src_file,
                      const char *tgt_file)
{
    size_t src_size, tgt_size;
    const void *src = clformer_model_tokenizer(model, false, &src_size);
    const void *tgt = clformer_model_tokenizer(model, true, &tgt_size);
    const bool has_spm = src && tgt;
    if (tokenizer) words(c, true, "--tokenizer", has_spm ? "spm" : "word", tokenizer);
    if (c->failed || !has_spm) return;
    const clformer_config *cfg = clformer_model_config(model);
    if (vocab_size && (vocab_size != cfg->src_vocab || vocab_size != cfg->tgt_vocab)) {
        char have[64];
        snprintf(have, sizeof have, "%d and %d pieces", cfg->src_vocab, cfg->tgt_vocab);
        char b[32];
        snprintf(b, sizeof b, "%ld", vocab_size);
        differs(c, "--vocab-size", have, b);
    }
    if (type) words(c, true, "--tokenizer-type", spm_type(src, src_size), type);
    spm_file(c, "--tokenizer-model", model_file, src, src_size);
    spm_file(c, "--tokenizer-model", model_file, tgt, tgt_size);
    spm_file(c, "--src-tokenizer-model", src_file, src, src_size);
    spm_file(c, "--tgt-tokenizer-model", tgt_file, tgt, tgt_size);
}

int resume_check_vocab(const char *command, clformer_model *model,
                       const clformer_train_options *want, const train_given *given,
                       const char *tokenizer, long vocab_size, const char *type,
                       const char *model_file, const char *src_model_file,
                       const char *tgt_model_file)
{
    check c = {command, false};
    spm_vocab(&c, model, tokenizer, vocab_size, type, model_file, src_model_file,
              tgt_model_file);
    if (!c.failed && !clformer_model_tokenizer(model, false, &(size_t){0}))
        word_vocab(&c, model, want, given);
    return c.failed ? EXIT_USAGE : 0;
}
