/*
 * The model object (internal): weights, gradients, optimizer state,
 * configuration and vocabularies. It holds no activations: the buffers of a
 * batch and the decoding caches belong to a session (session.h), so several
 * sessions can share one model.
 *
 * Buffers (llm.c): params, grads, adam_m and adam_v share one layout
 * (params.h).
 */
#ifndef CF_MODEL_H
#define CF_MODEL_H

#include "family.h"
#include "ops.h"
#include "params.h"
#include "tokenizer_bpe.h"
#include "tokenizer_hf.h"
#include "tokenizer_spm.h"
#include "vocab.h"

/* Adam/AdamW settings of a model being trained. */
typedef struct {
    bool adamw;
    float beta1, beta2, eps;
    float weight_decay;
    float clip;          /* global gradient-norm clip; 0 turns it off */
} cf_optim_settings;

struct clformer_model {
    cf_ctx *ctx;
    clformer_config cfg;
    const cf_family *family;              /* cfg's (family.h) */
    cf_blocks blocks;                     /* what the graph runs: the family's for cfg */
    cf_param_layout layout;
    cl_mem params, grads, adam_m, adam_v; /* layout.total elements each */
    /* Counts the writes of params (cf_model_params_written): a session's
     * bf16/fp16 copy of them is made again only when it changed. */
    unsigned long params_version;
    /* the text side, as the data layer's objects (vocab.h, tokenizer_spm.h) */
    cf_vocab *vocab[2];                   /* source, target vocabularies (may be NULL) */
    unsigned char *spm[2];                /* SentencePiece models, source/target (may be NULL) */
    size_t spm_size[2];
    cf_spm *spm_proc[2];                  /* the same, loaded */
    /* a language model's GPT-2 byte-level BPE (lm_bpe.c; may be NULL): the
     * texts of vocab.json [0] and merges.txt [1], and the tokenizer */
    char *bpe_text[2];
    size_t bpe_len[2];
    cf_bpe *bpe;
    /* a Hugging Face directory's own tokenizer (lm_hf_tokenizer.c; may be
     * NULL): its files' bytes (tokenizer_hf.h, NULL when absent), carried
     * by checkpoints and exports, and the tokenizer loaded from them */
    char *hf_tok_file[CF_HF_TOK_FILES];
    size_t hf_tok_size[CF_HF_TOK_FILES];
    cf_hf_tokenizer *hf_tok;
    /* why a Hugging Face directory's text cannot be encoded (ids_only): its
     * tokenizer's load error, or NULL when it has none */
    char *tokenizer_problem;
    uint64_t seed;                        /* initialisation and dropout */
    uint64_t step;                        /* training steps taken (skipped fp16 steps count) */
    /* fp16 dynamic loss scaling (step.c; in a training checkpoint's state):
     * the scale S (0: not started, 2^16 at the first fp16 step), the clean
     * steps in a row since S last changed, and the updates skipped for
     * overflow, which Adam's bias correction leaves out of its count */
    float loss_scale;
    uint64_t loss_scale_clean;
    uint64_t skipped_updates;
    cf_optim_settings optim;
    char *train_state;                    /* trainer's JSON (data position ...), may be NULL */
    /* the training run whose checkpoints these are (16 hex digits; "" none):
     * saved as clformer.run, so a resumed run knows its own snapshots */
    char run[17];
    /* a Hugging Face directory with no tokenizer files: its vocabulary is
     * <id_N> placeholders, and text cannot be turned into its ids */
    bool ids_only;
    bool has_training_state;              /* loaded with optimizer state */
    /* data parallelism (parallel.c): hooks and state that the train layer's
     * collective.c installs (clformer_model_set_collective); NULL: alone */
    const struct cf_parallel_hooks *parallel;
    void *parallel_state;
    int rank, ranks;                      /* this rank and the number of ranks when parallel */
};
typedef struct clformer_model cf_model;

/* Every writer of a model's parameters calls this (before the write is
 * enqueued): the sessions' rounded copies of them (session.h) are then made
 * again as their next pass begins. A write that does not happen after all
 * (an error, a skipped update) costs only that rounding. */
static inline void cf_model_params_written(cf_model *m) { m->params_version++; }

/* Names the training run the model's saves belong to (16 hex digits; ""
 * for none): trainer.c sets it, checkpoint.c writes and reads it. */
void cf_model_set_run(cf_model *m, const char *run);

/* A model with its buffers allocated and zeroed but parameters unset. */
clformer_status cf_model_new(cf_ctx *ctx, const clformer_config *config, uint64_t seed,
                             cf_model **out);

/* The entry of a PyTorch tensor name; a tied generator.weight resolves to
 * tgt_embed.weight. NULL when unknown. */
const cf_param_entry *cf_model_tensor(const cf_model *m, const char *name);

/* GPT-2 BPE of a language model (lm_bpe.c): clformer_model_set_bpe with
 * the files' names for errors ("vocab.json", "checkpoint x, clformer.bpe_vocab"). */
clformer_status cf_model_set_bpe(cf_model *m, const char *vocab, size_t vocab_len,
                                 const char *vocab_origin, const char *merges, size_t merges_len,
                                 const char *merges_origin);
/* Drops the tokenizer of the model's text (target SentencePiece model,
 * GPT-2 BPE, Hugging Face tokenizer) before another replaces it. */
void cf_model_drop_lm_tokenizer(cf_model *m);

/* A Hugging Face directory's tokenizer (lm_hf_tokenizer.c) from its files'
 * bytes (data[i] NULL when absent; `origin` names them in errors);
 * `loaded`, when not NULL, is their tokenizer already loaded (taken over,
 * freed on error too). The ids are the embedding rows; the vocabulary
 * becomes placeholders, and a BPE or SentencePiece model the model had is
 * dropped. */
clformer_status cf_model_set_hf_tokenizer(cf_model *m, const char *const data[CF_HF_TOK_FILES],
                                          const size_t size[CF_HF_TOK_FILES], const char *origin,
                                          cf_hf_tokenizer *loaded);
/* The model's vocabulary when a tokenizer other than its own tokens gives
 * the ids: "<pad>" "<sos>" "<eos>" "<unk>" then "<id_N>" (n tokens, each
 * malloc'd; free with cf_placeholder_tokens_free). NULL: out of memory. */
char **cf_placeholder_tokens(int n);
void cf_placeholder_tokens_free(char **tokens, int n);
/* Those n tokens as a vocabulary. */
clformer_status cf_placeholder_vocab(int n, cf_vocab **out);

/* Data parallelism as the model sees it. The collective itself (the
 * caller's clformer_collective, the gradient buckets) belongs to the train
 * layer (runtime/train/collective.c), which installs these hooks; the model
 * calls them through the functions below (parallel.c), which do nothing
 * alone. */
typedef struct cf_parallel_hooks {
    clformer_status (*sum_f64)(cf_model *m, double *values, size_t n);
    clformer_status (*gradients)(cf_model *m, double step_start, clformer_step_stats *stats);
    clformer_status (*grads_ready)(cf_model *m, int point);
    void (*release)(cf_model *m); /* frees parallel_state */
} cf_parallel_hooks;

/* The rank's share of the dropout seed. */
uint64_t cf_rank_seed(const cf_model *m);
/* Sums the label count over ranks (the loss scale is 1 / the global count). */
clformer_status cf_collective_count(cf_model *m, size_t *count);
/* Sums the gradients over ranks, in place; fills the timing fields of stats. */
clformer_status cf_collective_gradients(cf_model *m, double step_start,
                                        clformer_step_stats *stats);
/* Sums a few doubles over ranks (the loss). */
clformer_status cf_collective_sum(cf_model *m, double *values, size_t n);
/* Backward calls this at each of its points, in order from 0 (backward.c):
 * the gradients final there are read back and, after backward has been
 * enqueued, summed while the device computes the rest. */
clformer_status cf_grads_ready(cf_model *m, int point);
/* Releases the hooks' state; the model runs alone again. */
void cf_collective_free(cf_model *m);

/* This rank's index and the number of ranks (0 and 1 alone), to split work. */
void cf_collective_share(const cf_model *m, int *rank, int *size);

#endif
