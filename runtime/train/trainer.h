/*
 * The trainer behind clformer_trainer_* (clformer.h): what one training run
 * holds. trainer.c prepares a run, asking its task (task.h: translation
 * or language modelling) for the data, the model and the batches;
 * train_loop.c runs it (steps, validation, checkpoints, the metrics log).
 *
 * One step is train_step() in train_loop.c: next batch, learning rate,
 * forward/backward/update. Data-parallel training slots in there (each
 * worker takes its own batch; gradients are all-reduced between backward
 * and clipping); the batcher's position is the trainer's `batcher` and is
 * saved with every checkpoint (trainer_state_json).
 */
#ifndef CF_TRAINER_H
#define CF_TRAINER_H

#include "batcher.h"
#include "clformer.h"
#include "corpus.h"
#include "vocab.h"

#include <signal.h>
#include <stdio.h>

struct clformer_trainer {
    clformer_train_options o;        /* the caller's options (strings borrowed) */
    const struct cf_task *task;      /* what kind of run it is (task.h) */
    clformer_context *ctx;
    clformer_model *model;           /* NULL once released */
    clformer_session *session;       /* on `model`: training steps and validation */
    /* the translation task's data (task_translation.c): */
    cf_parallel_text *own_train, *own_val; /* read from files */
    const cf_parallel_text *train_text, *val_text;
    /* SentencePiece sides: the texts above are then the raw ones turned into
     * pieces (own_*_pieces), and raw_val keeps the raw validation text for BLEU */
    struct cf_spm *spm[2];
    cf_parallel_text *own_train_pieces, *own_val_pieces;
    const cf_parallel_text *raw_val;
    cf_vocab *src_vocab, *tgt_vocab;
    cf_corpus *train, *val;
    clformer_batcher *batcher;
    FILE *log;
    /* the files of a run made with no door open on its thread: its own
     * door (checkpoint_files.c), current while the trainer works */
    clformer_door *own_door;
    char run_id[17];                 /* the id its checkpoints carry (clformer.run) */
    /* the first failed write of the log (errno, and the step it was lost
     * at): warned about at once, an error at the end of the run (0: none) */
    int log_errno;
    uint64_t log_lost_step;
    bool resumed;
    /* the schedule and batching in force: the options', or the checkpoint's */
    float lr;
    clformer_lr_schedule schedule;
    uint64_t warmup;
    float warmup_init_lr;
    clformer_batcher_options batching;
    volatile sig_atomic_t stop;      /* set by clformer_trainer_request_stop */
    /* a stop request of any rank, agreed by all ranks at the end of a step
     * (train_loop.c): what every rank acts on, so that all take the same path */
    bool stopping;
    /* divergence watch (train_loop.c) */
    double best_loss;                /* the lowest step loss so far (INFINITY: none) */
    uint64_t high_steps;             /* consecutive steps far above it */
    bool skipped;                    /* the last step's update was skipped (fp16 overflow) */
    /* the best validation (train_loop.c): best_val is the loss, or minus
     * BLEU, so lower is better (INFINITY: none yet); bad_validations counts
     * the validations since it, for patience; early_stop is patience's
     * verdict, agreed by all ranks */
    double best_val;
    uint64_t best_step, bad_validations;
    bool early_stop;
    /* options.max_seconds has passed (rank 0's clock, agreed by all ranks) */
    bool time_up;
    /* the newest checkpoint this run wrote (for messages; NULL: none) */
    const char *saved_path;
    uint64_t saved_step;
    /* the language-modelling task's data (task_lm.c): the token streams; the
     * translation task's above are then unused */
    struct cf_lm_data *lm;
    uint64_t decay_steps;            /* the cosine schedule in force */
    float min_lr;
    /* the run so far (train_loop.c): clformer_trainer_step and
     * clformer_trainer_finish share it, so that stepping by hand and
     * clformer_trainer_run take the same path */
    struct {
        bool started, ended, finished; /* ended: stopped or early-stopped */
        clformer_status failed;        /* a step's error: the run is over */
        double start;                  /* the wall clock at the first step */
        double window_tokens, window_time, steps;
        size_t tokens;
        clformer_train_progress validation; /* the last validation reported */
        bool validated;                     /* ... by the current call */
        clformer_train_result result;
    } run;
};

/* The learning rate of `step` under the schedule in force. */
float cf_trainer_lr(const clformer_trainer *t, uint64_t step);

/* This process's rank and the number of ranks (0 and 1 alone). */
static inline int cf_trainer_rank(const clformer_trainer *t)
{
    return t->o.collective && t->o.collective->size > 1 ? t->o.collective->rank : 0;
}
static inline int cf_trainer_ranks(const clformer_trainer *t)
{
    return t->o.collective && t->o.collective->size > 1 ? t->o.collective->size : 1;
}

/* The trainer's part of clformer.train_state (batcher position and
 * schedule), malloc'd compact JSON; NULL when out of memory. */
char *trainer_state_json(const clformer_trainer *t);

#endif
