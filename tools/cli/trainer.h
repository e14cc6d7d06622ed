/*
 * The training loop behind `clformer train` and `clformer demo`: data,
 * vocabularies, a fresh / initialised / resumed model, the step loop with a
 * live progress line, the JSON-lines metrics log, periodic validation (loss,
 * perplexity, BLEU), checkpoints, and a clean save on Ctrl-C.
 */
#ifndef CLFORMER_TRAINER_H
#define CLFORMER_TRAINER_H

#include "batcher.h"
#include "clformer.h"
#include "corpus.h"

typedef struct {
    const char *command;          /* "train" or "demo", for messages */
    /* data: files, or in-memory text (the demo) used instead when set */
    const char *src_path, *tgt_path, *val_src_path, *val_tgt_path;
    const cf_parallel_text *train_text, *val_text;
    int min_freq, max_vocab;      /* vocabularies of a fresh model */
    cf_batcher_config batching;
    /* the model: fresh from `config`, or --init, or --resume */
    clformer_config config;
    const char *init_path, *resume_path;
    bool dropout_given, label_smoothing_given; /* overrides for --init */
    float dropout, label_smoothing;
    uint64_t seed;
    /* optimisation */
    clformer_optim_config optim;
    float lr;
    clformer_lr_schedule schedule;
    long warmup;
    long steps, epochs;           /* stop at `steps` total steps, or after `epochs` epochs */
    /* validation */
    long eval_every;              /* steps; 0: only at the end */
    long bleu_sentences;          /* validation sentences translated for BLEU (0: none) */
    /* output */
    const char *save_path;
    long save_every;
    const char *log_path, *plot_path;
} trainer_options;

typedef struct {
    uint64_t steps;       /* optimizer steps of the model at the end */
    double loss;          /* last training loss */
    double val_loss;      /* last validation loss (NAN when none) */
    double val_bleu;      /* last validation BLEU (NAN when none) */
    double seconds;       /* wall time of this run */
    double tokens_per_s;  /* target tokens per second over this run */
    bool interrupted;     /* stopped by Ctrl-C (after saving) */
} trainer_result;

/* Runs the training; returns the process exit code (0, 1 on failure, 2 for
 * bad options, 130 after Ctrl-C). With `model_out`, the trained model is
 * handed to the caller (who frees it) instead of being freed. */
int trainer_run(const trainer_options *o, clformer_context *ctx, clformer_model **model_out,
                trainer_result *result);

#endif
