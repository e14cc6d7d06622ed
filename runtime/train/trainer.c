/* Preparing a training run (see trainer.h): the options, the task's data
 * and model (task.h; a fresh, initialised or resumed model), its batches at
 * their position, the schedule and the session. */
#include "trainer.h"
#include "task.h"
#include "checkpoint.h"
#include "checkpoint_files.h"
#include "door.h"
#include "model.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void clformer_train_options_default(clformer_train_options *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->min_freq = 1;
    o->batching.batch_tokens = 4096;
    o->batching.shuffle = true;
    o->batching.seed = 1;
    clformer_config_default(&o->config);
    o->seed = 1;
    clformer_optim_config_default(&o->optim);
    o->lr = 5e-4f;
    o->schedule = CLFORMER_LR_CONSTANT;
    o->warmup = 4000;
    o->bleu_sentences = 200;
    o->eval_batches = 20;
    o->min_lr = -1.0f;
}

clformer_status clformer_train_options_for_task(clformer_train_options *o, bool lm,
                                                const char *preset)
{
    clformer_train_options_default(o);
    return cf_task_named(lm)->options_for(o, preset);
}

float cf_trainer_lr(const clformer_trainer *t, uint64_t step)
{
    if (t->schedule == CLFORMER_LR_INVERSE_SQRT)
        return clformer_learning_rate_inverse_sqrt(t->lr, t->warmup_init_lr, step, t->warmup);
    if (t->schedule != CLFORMER_LR_COSINE)
        return clformer_learning_rate(t->schedule, t->lr, clformer_model_config(t->model)->d_model,
                                      step, t->warmup);
    const float min_lr = t->min_lr >= 0.0f ? t->min_lr : t->lr / 10.0f;
    const uint64_t decay = t->decay_steps ? t->decay_steps : t->o.steps;
    return clformer_learning_rate_cosine(t->lr, min_lr, step, t->warmup, decay);
}


clformer_status cf_trainer_open_model(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    const char *path = o->resume_path ? o->resume_path : o->init_path;
    CF_TRY(clformer_model_load(t->ctx, path, &t->model));
    if (o->resume_path && !clformer_model_has_training_state(t->model))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "'%s' is a plain model without optimizer state: use --init to start "
                       "training from it", path);
    /* what trains a model of each task, for one of another */
    static const char *const trained_by[] = {
        [CLFORMER_TASK_TRANSLATION] = "a translation model (it has an encoder): train it on "
                                      "sentence pairs (--src and --tgt)",
        [CLFORMER_TASK_LM] = "a language model (decoder-only): train it on a text (--task lm "
                             "--text FILE)"};
    const clformer_task has = clformer_model_task(t->model);
    if (has != t->task->models)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is %s", path, trained_by[has]);
    if (o->init_path) {
        /* a new run from these weights: step 0 and fresh Adam moments, even
         * from a training checkpoint (whose step would otherwise count
         * against --steps and train nothing) */
        clformer_status st = cf_model_forget_training(t->model);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "starting from '%s': ", path);
        clformer_model_set_seed(t->model, o->seed);
        const clformer_config *c = clformer_model_config(t->model);
        const float p = o->override_dropout ? o->config.dropout : c->dropout;
        const float ls = o->override_label_smoothing ? o->config.label_smoothing
                                                     : c->label_smoothing;
        CF_TRY(clformer_model_set_regularization(t->model, p, ls));
        if (o->override_dropout)
            CF_TRY(cf_model_set_dropout_kinds(t->model, o->config.attention_dropout,
                                              o->config.activation_dropout));
    }
    return CLFORMER_OK;
}

static const char *const schedule_names[] = {"constant", "noam", "inverse_sqrt", "cosine"};

char *trainer_state_json(const clformer_trainer *t)
{
    json_t *b = t->task->batches_state(t);
    json_t *o = json_pack("{s:o, s:f, s:s, s:I}", "batching", b ? b : json_null(), "lr",
                          (double)t->lr, "schedule", schedule_names[t->schedule], "warmup",
                          (json_int_t)t->warmup);
    /* added later: older checkpoints lack them (restore takes them as optional) */
    if (o && t->warmup_init_lr != 0.0f)
        json_object_set_new(o, "warmup_init_lr", json_real((double)t->warmup_init_lr));
    if (o && t->schedule == CLFORMER_LR_COSINE) {
        json_object_set_new(o, "decay_steps", json_integer((json_int_t)t->decay_steps));
        json_object_set_new(o, "min_lr", json_real((double)t->min_lr));
    }
    if (o && isfinite(t->best_val)) {
        json_object_set_new(o, "best_val", json_real(t->best_val));
        json_object_set_new(o, "best_step", json_integer((json_int_t)t->best_step));
        json_object_set_new(o, "bad_validations", json_integer((json_int_t)t->bad_validations));
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(o);
    return s;
}

/* Resuming: the schedule, the batching options and the batcher's position
 * come from the checkpoint's trainer state. */
static clformer_status restore(clformer_trainer *t)
{
    const char *text = clformer_model_trainer_state(t->model);
    json_error_t err;
    json_t *root = text ? json_loads(text, 0, &err) : NULL;
    const char *schedule = NULL, *mode = NULL, *seed = NULL;
    double lr = 0, init_lr = 0, best_val = INFINITY, min_lr = -1;
    json_int_t warmup = 0, size = 0, tokens = 0, window = 0, best_step = 0, bad = 0, decay = 0;
    int shuffle = 0;
    json_t *b = NULL;
    if (!root ||
        json_unpack_ex(root, &err, 0, "{s:o, s:F, s:s, s:I, s?F, s?F, s?I, s?I, s?I, s?F}",
                       "batching", &b, "lr", &lr, "schedule", &schedule, "warmup", &warmup,
                       "warmup_init_lr", &init_lr, "best_val", &best_val, "best_step",
                       &best_step, "bad_validations", &bad, "decay_steps", &decay, "min_lr",
                       &min_lr) != 0 ||
        json_unpack_ex(b, &err, 0, "{s:s, s?I, s?I, s:b, s:s, s?I}", "mode", &mode,
                       "batch_size", &size, "batch_tokens", &tokens, "shuffle", &shuffle, "seed",
                       &seed, "bucket_window", &window) != 0) {
        json_decref(root);
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s' has no usable trainer state (%s); start a new "
                       "run with --init instead of --resume", t->o.resume_path,
                       text ? err.text : "it is not a training checkpoint");
    }
    t->lr = (float)lr;
    t->schedule = !strcmp(schedule, "noam")           ? CLFORMER_LR_NOAM
                  : !strcmp(schedule, "inverse_sqrt") ? CLFORMER_LR_INVERSE_SQRT
                  : !strcmp(schedule, "cosine")       ? CLFORMER_LR_COSINE
                                                      : CLFORMER_LR_CONSTANT;
    t->warmup = (uint64_t)warmup;
    t->warmup_init_lr = (float)init_lr;
    t->decay_steps = (uint64_t)decay;
    t->min_lr = (float)min_lr;
    /* the best validation so far counts on (its metric is the options' now) */
    t->best_val = best_val;
    const clformer_batcher_options bo = {(int)size, (int)tokens, shuffle != 0,
                                         strtoull(seed, NULL, 10), (int)window};
    t->batching = bo;
    const clformer_status st = t->task->batches_restore(t, b);
    json_decref(root);
    return st;
}

/* The checks of a run's options that hold for every task (the task's own
 * follow: its data, its metrics). */
static clformer_status check_run_options(const clformer_train_options *o)
{
    if (!o->steps == !o->epochs)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "give exactly one limit: a number of steps or of epochs");
    if (o->init_path && o->resume_path)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "init and resume exclude each other: resume continues a training "
                       "checkpoint, init starts a new run from a model's weights");
    if ((o->keep_last || o->save_best) && !o->save_path)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "keeping numbered or best checkpoints needs a save path: their names "
                       "are made from it");
    if (o->keep_last && !o->save_every)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "keeping the last %" PRIu64 " checkpoints needs periodic saves (save "
                       "every N steps)", o->keep_last);
    const bool has_val = o->val_text || o->val_src_path;
    if ((o->save_best || o->patience) && !has_val)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the best checkpoint and early stopping need validation data");
    if (o->schedule == CLFORMER_LR_INVERSE_SQRT && o->warmup == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the inverse-sqrt schedule needs a warm-up of at least 1 step");
    if (!(o->max_seconds >= 0.0 && o->max_seconds < INFINITY))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the time limit must be a finite number of seconds >= 0 (0: none), got %g",
                       o->max_seconds);
    if (!(o->warmup_init_lr >= 0.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the warm-up's initial learning rate must be >= 0, got %g",
                       (double)o->warmup_init_lr);
    return CLFORMER_OK;
}

static clformer_status setup(clformer_trainer *t)
{
    const clformer_train_options *o = &t->o;
    CF_TRY(check_run_options(o));
    CF_TRY(t->task->check(o));
    t->lr = o->lr;
    t->schedule = o->schedule;
    t->warmup = o->warmup;
    t->decay_steps = o->decay_steps;
    t->min_lr = o->min_lr;
    t->warmup_init_lr = o->warmup_init_lr;
    t->batching = o->batching;
    CF_TRY(t->task->setup(t));
    if (!o->resume_path) {
        clformer_status st = clformer_model_set_optimizer(t->model, &o->optim);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "optimizer settings: ");
        st = t->task->batches_new(t);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "batching: ");
    } else {
        CF_TRY(restore(t));
        t->resumed = true;
        const uint64_t at = clformer_model_step(t->model);
        if (o->steps > 0 && at >= o->steps)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s is already at step %" PRIu64 "; --steps is the total number of "
                           "steps, so ask for more than %" PRIu64, o->resume_path, at, at);
        const uint64_t epoch = t->task->epoch(t);
        if (o->epochs > 0 && epoch >= o->epochs)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "%s has already trained %" PRIu64 " epochs; --epochs is the total "
                           "number of epochs, so ask for more than %" PRIu64,
                           o->resume_path, epoch, epoch);
    }
    if (o->collective && o->collective->size > 1)
        CF_TRY(clformer_model_set_collective(t->model, o->collective));
    CF_TRY(clformer_session_create(t->model, &t->session));
    clformer_session_set_recompute(t->session, o->recompute);
    CF_TRY(clformer_session_set_precision(t->session, o->precision));
    if (o->loss_scale != 0.0f) CF_TRY(clformer_model_set_loss_scale(t->model, o->loss_scale));
    /* the run's id: a resumed run's own (older checkpoints have none), else new */
    if (o->resume_path && t->model->run[0])
        snprintf(t->run_id, sizeof t->run_id, "%s", t->model->run);
    else
        cf_run_id_new(t->run_id);
    cf_model_set_run(t->model, t->run_id);
    if (o->log_path && cf_trainer_rank(t) == 0) {
        clformer_status st = cf_door_stream_open(o->log_path, &t->log);
        if (st != CLFORMER_OK) return cf_fail_prefix(st, "the log '%s': ", o->log_path);
    }
    return CLFORMER_OK;
}

clformer_status clformer_trainer_create(clformer_context *ctx,
                                        const clformer_train_options *options,
                                        clformer_trainer **trainer)
{
    *trainer = NULL;
    CF_TRY(CF_CHECK_SIZE(clformer_train_options, options));
    clformer_trainer *t = calloc(1, sizeof *t);
    if (!t) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    t->o = *options;
    t->task = cf_task_of(options);
    t->ctx = ctx;
    t->best_loss = INFINITY;
    t->best_val = INFINITY;
    clformer_status st = CLFORMER_OK;
    if (!cf_door_current()) { /* no caller's door: the run declares and checks its own */
        st = clformer_door_create(&t->own_door);
        if (st == CLFORMER_OK) clformer_door_set_hint(t->own_door, "or set the options' overwrite");
        if (st == CLFORMER_OK) st = clformer_train_files(t->own_door, options);
        if (st == CLFORMER_OK) st = clformer_door_open(t->own_door);
    }
    if (st == CLFORMER_OK) st = setup(t);
    cf_door_leave(t->own_door);
    if (st != CLFORMER_OK) {
        clformer_trainer_free(t);
        return st;
    }
    *trainer = t;
    return CLFORMER_OK;
}

void clformer_trainer_free(clformer_trainer *t)
{
    if (!t) return;
    if (t->log) fclose(t->log);
    t->task->free(t);
    clformer_session_free(t->session); /* before its model */
    clformer_model_free(t->model);
    clformer_door_free(t->own_door); /* releases the lock */
    free(t);
}

void clformer_trainer_request_stop(clformer_trainer *t) { t->stop = 1; }

clformer_model *clformer_trainer_model(clformer_trainer *t) { return t->model; }

clformer_session *clformer_trainer_session(clformer_trainer *t) { return t->session; }

clformer_model *clformer_trainer_release_model(clformer_trainer *t)
{
    clformer_session_free(t->session); /* a session must not outlive its model */
    t->session = NULL;
    clformer_model *m = t->model;
    t->model = NULL;
    return m;
}

const clformer_corpus *clformer_trainer_corpus(const clformer_trainer *t, bool validation)
{
    return validation ? t->val : t->train;
}

clformer_batcher *clformer_trainer_batcher(clformer_trainer *t) { return t->batcher; }

bool clformer_trainer_resumed(const clformer_trainer *t) { return t->resumed; }

bool clformer_trainer_data_summary(const clformer_trainer *t, bool validation, char *buf,
                                   size_t cap)
{
    return t->task->summary(t, validation, buf, cap);
}

void clformer_trainer_settings(const clformer_trainer *t, clformer_train_options *s)
{
    *s = t->o;
    if (t->model) {
        s->config = *clformer_model_config(t->model);
        clformer_model_optimizer(t->model, &s->optim);
    }
    s->lr = t->lr;
    s->schedule = t->schedule;
    s->warmup = t->warmup;
    s->warmup_init_lr = t->warmup_init_lr;
    s->batching = t->batching;
    if (t->resumed) s->seed = t->batching.seed; /* one --seed seeded both */
}
