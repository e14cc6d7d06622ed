/*
 * Training tasks (issue 31): what one kind of training run is, behind one
 * interface, so that the trainer asks rather than branches on which it is.
 * A task knows its default options, its data (reading, vocabularies, the
 * model it makes when none is loaded), its batches and where they stand in
 * a checkpoint, and its validation. Implemented by task_translation.c
 * (sentence pairs, the batcher, loss and BLEU) and task_lm.c (one text's
 * token stream, windows drawn by counter, loss); cf_task_of picks one for
 * the options (task.c).
 */
#ifndef CF_TASK_H
#define CF_TASK_H

#include "lm_codec.h"
#include "trainer.h"

#include <jansson.h>

typedef struct cf_task {
    /* the task of the models it trains (clformer_model_task's: their family's) */
    clformer_task models;
    /* clformer_train_options_for_task: the options a run of the task starts
     * from (defaults set already), with `preset`'s config (NULL: the task's) */
    clformer_status (*options_for)(clformer_train_options *o, const char *preset);
    /* the options' checks of the task (a run's first) */
    clformer_status (*check)(const clformer_train_options *o);
    /* the data, the vocabularies and the model: init's or resume's
     * (cf_trainer_open_model), else a fresh one for the data */
    clformer_status (*setup)(clformer_trainer *t);
    /* the batches of a new run (t->batching: the options') */
    clformer_status (*batches_new)(clformer_trainer *t);
    /* the batches of a resumed run from a checkpoint's "batching" object
     * (t->batching: its options; the model, of the task, is the checkpoint's) */
    clformer_status (*batches_restore)(clformer_trainer *t, json_t *batching);
    /* the "batching" object of clformer.train_state (NULL: out of memory) */
    json_t *(*batches_state)(const clformer_trainer *t);
    /* the epoch being trained (0 when the task has none) */
    uint64_t (*epoch)(const clformer_trainer *t);
    /* the batch of rank r in `step` (1-based), of the one sequence every
     * rank deals from; *mine: whether it is this rank's (only then is
     * *batch set) */
    clformer_status (*batch)(clformer_trainer *t, uint64_t step, int r, clformer_batch *batch,
                             bool *mine);
    bool (*has_validation)(const clformer_trainer *t);
    /* the validation loss (summed per token) and its tokens */
    clformer_status (*validation_loss)(clformer_trainer *t, double *loss, size_t *tokens);
    /* the validation sentences BLEU is computed over (0: none), and the
     * BLEU of the first n (only called with n > 0) */
    size_t (*bleu_sentences)(const clformer_trainer *t);
    clformer_status (*bleu)(clformer_trainer *t, size_t n, double *bleu);
    /* clformer_trainer_data_summary: false when there is no such data */
    bool (*summary)(const clformer_trainer *t, bool validation, char *buf, size_t cap);
    /* frees the task's data of the trainer */
    void (*free)(clformer_trainer *t);
} cf_task;

extern const cf_task cf_task_translation, cf_task_lm;

/* The task of a run's options: language modelling on a text, else translation. */
const cf_task *cf_task_of(const clformer_train_options *o);

/* The task clformer_train_options_for_task names (lm: language modelling). */
const cf_task *cf_task_named(bool lm);

/* The model of init_path or resume_path, for a task's setup (trainer.c): a
 * model of another task is refused, naming what trains it. */
clformer_status cf_trainer_open_model(clformer_trainer *t);

/* The model's text codec for language modelling (lm.c): its GPT-2 BPE, its
 * target SentencePiece model, else its vocabulary of characters or bytes. */
clformer_status cf_lm_model_codec(const clformer_model *m, cf_lm_codec *codec);

#endif
