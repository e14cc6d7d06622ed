/* Options of a resumed run against its checkpoint's (see resume_check.h). */
#include "resume_check.h"
#include "cli.h"

#include <inttypes.h>
#include <stdio.h>
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
    words(c, g->activation, "--activation", have->activation == CLFORMER_ACT_GELU ? "gelu" : "relu",
          want->activation == CLFORMER_ACT_GELU ? "gelu" : "relu");
    words(c, g->positional, "--positional",
          have->positional == CLFORMER_POS_LEARNED ? "learned" : "sinusoidal",
          want->positional == CLFORMER_POS_LEARNED ? "learned" : "sinusoidal");
    words(c, g->tie, "--tie-embeddings", have->share_tgt_embed ? "tied embeddings" : "untied embeddings",
          want->share_tgt_embed ? "tied embeddings" : "untied embeddings");
    floats(c, g->dropout, "--dropout", have->dropout, want->dropout);
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
    static const char *const schedules[] = {"constant", "noam", "inverse-sqrt"};
    words(&c, g->schedule, "--lr-schedule", schedules[have->schedule], schedules[want->schedule]);
    ints(&c, g->warmup, "--warmup", (long long)have->warmup, (long long)want->warmup);
    floats(&c, g->warmup_init_lr, "--warmup-init-lr", have->warmup_init_lr, want->warmup_init_lr);
    words(&c, g->optimizer, "--optimizer", have->optim.optimizer == CLFORMER_ADAMW ? "adamw" : "adam",
          want->optim.optimizer == CLFORMER_ADAMW ? "adamw" : "adam");
    floats(&c, g->weight_decay, "--weight-decay", have->optim.weight_decay,
           want->optim.weight_decay);
    floats(&c, g->clip, "--clip", have->optim.clip, want->optim.clip);
    return c.failed ? EXIT_USAGE : 0;
}
