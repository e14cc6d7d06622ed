/* Running a prepared training run (see trainer.h): the step loop,
 * validation, checkpoints and the JSON-lines metrics log. */
#include "trainer.h"
#include "task.h"
#include "checkpoint_files.h"
#include "clock.h"
#include "door.h"
#include "log.h"
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t epoch_of(const clformer_trainer *t) { return t->task->epoch(t); }

static bool done(const clformer_trainer *t)
{
    if (t->time_up) return true;
    if (t->o.steps > 0) return clformer_model_step(t->model) >= t->o.steps;
    return epoch_of(t) >= t->o.epochs;
}

/* Steps left: exact with a step limit; with an epoch limit, the batches of
 * the epochs still to train (the batching in force: a resumed run's is the
 * checkpoint's) less those of this epoch already trained, divided among the
 * ranks (one step takes a batch per rank). */
static double steps_left(const clformer_trainer *t)
{
    const double step = (double)clformer_model_step(t->model);
    if (t->o.steps > 0) return (double)t->o.steps - step;
    const double per_epoch = (double)clformer_batcher_batches_per_epoch(t->batcher);
    const double index = (double)clformer_batcher_index(t->batcher);
    const double in_epoch = t->batching.batch_size > 0 ? index / t->batching.batch_size : index;
    const double batches =
        ((double)t->o.epochs - (double)clformer_batcher_epoch(t->batcher)) * per_epoch - in_epoch;
    return batches / cf_trainer_ranks(t);
}

static json_t *number_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* Notes the log's first failed write and warns at once; the run goes on
 * (its model is worth more than its log) and ends with an error. */
static void log_failed(clformer_trainer *t, int err)
{
    if (t->log_errno) return;
    t->log_errno = err ? err : EIO;
    t->log_lost_step = clformer_model_step(t->model);
    cf_log(NULL, CF_LOG_WARN, "cannot write the log '%s' at step %" PRIu64 ": %s; training "
           "goes on, and the run will end with an error", t->o.log_path, t->log_lost_step,
           strerror(t->log_errno));
}

static void log_line(clformer_trainer *t, json_t *entry)
{
    if (t->log && entry && !t->log_errno) {
        char *s = json_dumps(entry, JSON_COMPACT | JSON_REAL_PRECISION(8));
        errno = 0;
        if (!s) log_failed(t, ENOMEM);
        else if (fprintf(t->log, "%s\n", s) < 0 || fflush(t->log) != 0) log_failed(t, errno);
        free(s);
    }
    json_decref(entry);
}

/* Closes the log (its last bytes reach the file here) and turns a lost log
 * into the run's error, saying where the model went. */
static clformer_status close_log(clformer_trainer *t, const clformer_train_result *res)
{
    if (t->log) {
        errno = 0;
        if (fclose(t->log) != 0) log_failed(t, errno);
        t->log = NULL;
    }
    if (!t->log_errno) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_IO, "the log '%s' is incomplete: writing it failed at step %" PRIu64
                   " (%s)%s%s", t->o.log_path, t->log_lost_step, strerror(t->log_errno),
                   res->saved_to ? "; the model was saved to " : "; nothing was saved",
                   res->saved_to ? res->saved_to : "");
}

static bool report(clformer_trainer *t, const clformer_train_progress *p)
{
    return !t->o.callback || t->o.callback(p, t->o.user);
}

static clformer_status track_best(clformer_trainer *t, double loss, double bleu);

/* Validation: loss and perplexity over the whole set, BLEU over its first
 * bleu_sentences sentences; reported to the callback and the log. On
 * several ranks the loss is split between them (clformer_corpus_loss of a
 * data-parallel model) and BLEU is rank 0's alone. */
static clformer_status validate(clformer_trainer *t, clformer_train_progress p,
                                clformer_train_result *res)
{
    /* on a stop request, validation (which changes nothing) is skipped or
     * abandoned, so that the run saves and ends at once; skipped only on an
     * agreed request, as every rank takes part in the loss */
    const cf_task *task = t->task;
    if (!task->has_validation(t) || t->stopping) return CLFORMER_OK;
    const double t0 = cf_now_s();
    double loss, bleu = NAN;
    size_t tokens;
    clformer_status st = task->validation_loss(t, &loss, &tokens);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "validation loss: ");
    const size_t n = cf_trainer_rank(t) == 0 ? task->bleu_sentences(t) : 0;
    if (n > 0 && !t->stop && (st = task->bleu(t, n, &bleu)) != CLFORMER_OK)
        return cf_fail_prefix(st, "validation BLEU: ");
    if (t->stop) return CLFORMER_OK;
    res->val_loss = loss;
    res->val_bleu = bleu;
    CF_TRY(track_best(t, loss, bleu));
    p.event = CLFORMER_TRAIN_VALIDATION;
    p.step = clformer_model_step(t->model);
    p.val_loss = loss;
    p.val_ppl = exp(loss);
    p.val_bleu = bleu;
    p.val_tokens = tokens;
    p.val_bleu_sentences = n;
    p.val_seconds = cf_now_s() - t0;
    log_line(t, json_pack("{s:I, s:o, s:o, s:o, s:I}", "step", (json_int_t)p.step, "val_loss",
                          number_or_null(loss), "val_ppl", number_or_null(p.val_ppl), "val_bleu",
                          number_or_null(bleu), "val_tokens", (json_int_t)tokens));
    t->run.validation = p;
    t->run.validated = true;
    if (!report(t, &p)) t->stop = 1;
    return CLFORMER_OK;
}

/* A training checkpoint with the trainer's state (batcher position, schedule). */
static clformer_status save_checkpoint(clformer_trainer *t, const char *path)
{
    char *state = trainer_state_json(t);
    clformer_status st = state ? clformer_model_set_trainer_state(t->model, state)
                               : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    free(state);
    if (st == CLFORMER_OK) st = clformer_model_save(t->model, path, true);
    return st; /* the message already says "saving 'path': " */
}

static clformer_status save(clformer_trainer *t, const char *path, clformer_train_result *res)
{
    if (cf_trainer_rank(t) != 0) return CLFORMER_OK; /* every rank holds the same state */
    CF_TRY(save_checkpoint(t, path));
    res->saved_to = path;
    t->saved_path = path;
    t->saved_step = clformer_model_step(t->model);
    /* keep_last: the weights of this step as well, numbered, then the oldest go */
    if (t->o.keep_last && t->o.save_path && !strcmp(path, t->o.save_path)) {
        char numbered[4096];
        if (cf_checkpoint_name(t->o.save_path, "step", t->saved_step, numbered,
                               sizeof numbered) != CLFORMER_OK)
            return cf_fail_prefix(CLFORMER_ERR_INVALID_ARGUMENT, "--keep-last");
        CF_TRY(clformer_model_save(t->model, numbered, false)); /* names the file */
        CF_TRY(cf_checkpoints_prune(t->o.save_path, t->o.keep_last));
    }
    return CLFORMER_OK;
}

/* After a validation: a new best (lower loss, or higher BLEU) is saved with
 * save_best; else one more validation without improvement for patience.
 * Rank 0 judges (BLEU is its alone); early_stop is agreed in the loop. */
static clformer_status track_best(clformer_trainer *t, double loss, double bleu)
{
    if (cf_trainer_rank(t) != 0 || (!t->o.save_best && !t->o.patience)) return CLFORMER_OK;
    const double v = t->o.best_metric == CLFORMER_METRIC_BLEU ? -bleu : loss;
    if (isfinite(v) && v < t->best_val) {
        t->best_val = v;
        t->best_step = clformer_model_step(t->model);
        t->bad_validations = 0;
        if (t->o.save_best) {
            char best[4096];
            if (cf_checkpoint_name(t->o.save_path, "best", 0, best, sizeof best) != CLFORMER_OK)
                return cf_fail_prefix(CLFORMER_ERR_INVALID_ARGUMENT, "--save-best");
            CF_TRY(save_checkpoint(t, best));
        }
    } else {
        t->bad_validations++;
        if (t->o.patience && t->bad_validations >= t->o.patience) t->early_stop = true;
    }
    return CLFORMER_OK;
}

/* A stop request on one rank stops every rank after the same step: sets
 * t->stopping on every rank when any rank has a request. */
static clformer_status agree_on_stop(clformer_trainer *t)
{
    double stop = t->stop ? 1.0 : 0.0;
    if (cf_trainer_ranks(t) > 1)
        CF_TRY(t->o.collective->allreduce_sum_f64(t->o.collective->user, &stop, 1));
    if (stop > 0) t->stop = 1;
    t->stopping = stop > 0;
    return CLFORMER_OK;
}

/* Patience's verdict of rank 0, shared: every rank stops after the same step. */
static clformer_status agree_on_early_stop(clformer_trainer *t)
{
    double stop = t->early_stop ? 1.0 : 0.0;
    if (cf_trainer_ranks(t) > 1)
        CF_TRY(t->o.collective->allreduce_sum_f64(t->o.collective->user, &stop, 1));
    t->early_stop = stop > 0;
    return CLFORMER_OK;
}

/* Whether the time limit has passed, by rank 0's clock: one sum over the
 * ranks per step (only with a limit), so every rank stops at the same step. */
static clformer_status check_time_limit(clformer_trainer *t, double start)
{
    if (!(t->o.max_seconds > 0)) return CLFORMER_OK;
    double up = cf_trainer_rank(t) == 0 && cf_now_s() - start >= t->o.max_seconds ? 1.0 : 0.0;
    if (cf_trainer_ranks(t) > 1)
        CF_TRY(t->o.collective->allreduce_sum_f64(t->o.collective->user, &up, 1));
    t->time_up = up > 0;
    return CLFORMER_OK;
}

/* Saves unless `path` already holds this very step (a stop right after a
 * periodic save). */
static clformer_status save_once(clformer_trainer *t, const char *path, clformer_train_result *res)
{
    if (t->saved_path && !strcmp(t->saved_path, path) &&
        t->saved_step == clformer_model_step(t->model)) {
        res->saved_to = path;
        return CLFORMER_OK;
    }
    return save(t, path, res);
}

/* Steps in a row a loss may stay far above the best before the run counts as
 * diverged: longer than the spikes of a healthy run. */
#define DIVERGENCE_STEPS 20

/* Divergence, checked after every step: a non-finite loss or gradient norm
 * (the weights are then already damaged: nothing more is saved), or a loss
 * that stays more than ln(target vocabulary) -- the whole loss of a uniform
 * guess -- above the best loss of the run for DIVERGENCE_STEPS steps. The
 * run stops with CLFORMER_ERR_DIVERGED; the last checkpoint is kept (and
 * periodic saves wait while the loss is that far above its best, so that
 * the kept one is from before the rise). */
static clformer_status check_divergence(clformer_trainer *t, const clformer_train_progress *p)
{
    const double margin = log((double)clformer_model_config(t->model)->tgt_vocab);
    char what[160];
    /* an fp16 step skipped for overflow is loss scaling at work, not divergence */
    if (t->skipped && isfinite(p->loss)) return CLFORMER_OK;
    if (!isfinite(p->loss) || !isfinite(p->grad_norm)) {
        snprintf(what, sizeof what, "the %s is %s", isfinite(p->loss) ? "gradient norm" : "loss",
                 isnan(isfinite(p->loss) ? p->grad_norm : p->loss) ? "NaN" : "infinite");
    } else {
        if (p->loss < t->best_loss) t->best_loss = p->loss;
        t->high_steps = p->loss > t->best_loss + margin ? t->high_steps + 1 : 0;
        if (t->high_steps < DIVERGENCE_STEPS) return CLFORMER_OK;
        snprintf(what, sizeof what,
                 "the loss has stayed above %.3g (the best, %.3g, + ln(vocabulary)) for %d "
                 "steps and is now %.3g",
                 t->best_loss + margin, t->best_loss, DIVERGENCE_STEPS, p->loss);
    }
    char kept[600];
    if (t->saved_path)
        snprintf(kept, sizeof kept, "The last checkpoint, %s (step %" PRIu64 "), is kept",
                 t->saved_path, t->saved_step);
    else if (t->o.resume_path)
        snprintf(kept, sizeof kept, "Nothing was saved; %s is untouched", t->o.resume_path);
    else
        snprintf(kept, sizeof kept, "Nothing was saved");
    return cf_fail(CLFORMER_ERR_DIVERGED,
                   "training diverged at step %" PRIu64 ": %s. Likely causes: a learning rate "
                   "too high for this model (lr %.3g; try 3 to 10 times lower), no warm-up "
                   "(--lr-schedule noam --warmup N), gradient clipping off (--clip 0), or "
                   "broken data. %s; %s with a lower --lr",
                   p->step, what, (double)p->lr, kept,
                   t->saved_path || t->o.resume_path ? "resume from it" : "start again");
}

/* check_sync_every: the ranks' parameters compared after every N-th step. */
static clformer_status check_sync(clformer_trainer *t, uint64_t step)
{
    if (t->o.check_sync_every == 0 || step % t->o.check_sync_every != 0) return CLFORMER_OK;
    clformer_status st = clformer_model_check_sync(t->model);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "parameter check after step %" PRIu64 ": ", step);
}

/* One optimizer step on the next batch; fills the step's figures in *p. */
static clformer_status train_step(clformer_trainer *t, clformer_train_progress *p)
{
    /* the epoch is read before the batcher hands out an epoch's last batch
     * and moves on to the next epoch */
    p->epoch = epoch_of(t) + 1;
    const uint64_t step = clformer_model_step(t->model) + 1;
    p->lr = cf_trainer_lr(t, step);
    /* N ranks deal out N consecutive batches of the one sequence: rank r
     * trains on the r-th, so the data position stays global */
    clformer_step_stats s;
    for (int r = 0; r < cf_trainer_ranks(t); r++) {
        clformer_batch batch;
        bool mine;
        CF_TRY(t->task->batch(t, step, r, &batch, &mine));
        if (!mine) continue;
        /* a non-finite step still reports its figures: check_divergence words it */
        clformer_status st = clformer_session_train_step(t->session, &batch, p->lr, &s);
        if (st == CLFORMER_ERR_DIVERGED) cf_clear_error();
        else if (st != CLFORMER_OK) return st;
    }
    t->skipped = s.skipped;
    p->step = s.step;
    p->loss = s.loss;
    p->grad_norm = s.grad_norm;
    p->tokens = s.tokens;
    return CLFORMER_OK;
}

/* The run's first step starts its clock and its result. */
static void run_begin(clformer_trainer *t)
{
    if (t->run.started) return;
    t->run.started = true;
    t->run.start = cf_now_s();
    clformer_train_result *res = &t->run.result;
    memset(res, 0, sizeof *res);
    res->val_loss = res->val_bleu = res->best_val = NAN;
}

bool clformer_trainer_done(const clformer_trainer *t)
{
    return !t->model || t->run.finished || t->run.failed != CLFORMER_OK || t->run.ended ||
           done(t);
}

/* Why a trainer cannot step or finish (CLFORMER_OK: it can). */
static clformer_status spent(const clformer_trainer *t, const char *what)
{
    if (!t->model)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: the trainer's model was released", what);
    if (t->run.finished)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: the run has finished (clformer_trainer_finish was called)", what);
    if (t->run.failed != CLFORMER_OK)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: the run ended with an error (%s) at step %" PRIu64, what,
                       clformer_status_name(t->run.failed), clformer_model_step(t->model));
    return CLFORMER_OK;
}

/* One turn of the loop: a step and what follows it (log, callback,
 * validation, periodic save); sets run.ended on a stop or early stop. */
static clformer_status step_once(clformer_trainer *t, clformer_train_progress *p)
{
    const clformer_train_options *o = &t->o;
    clformer_train_result *res = &t->run.result;
    memset(p, 0, sizeof *p);
    const double t0 = cf_now_s();
    CF_TRY(train_step(t, p));
    CF_TRY(check_time_limit(t, t->run.start));
    t->run.tokens += p->tokens;
    /* tokens/s over roughly the last 20 steps */
    t->run.window_tokens = t->run.window_tokens * 0.95 + (double)p->tokens;
    t->run.window_time = t->run.window_time * 0.95 + (cf_now_s() - t0);
    p->tokens_per_s = t->run.window_tokens / t->run.window_time;
    p->elapsed_s = cf_now_s() - t->run.start;
    p->steps_left = steps_left(t);
    t->run.steps++;
    if (o->max_seconds > 0 && p->elapsed_s > 0) { /* the steps the time limit leaves, at this run's pace */
        const double by_time =
            ceil((o->max_seconds - p->elapsed_s) * t->run.steps / p->elapsed_s);
        p->steps_left = fmin(p->steps_left, fmax(by_time, 0.0));
    }
    p->last = done(t);
    res->loss = p->loss;
    /* label_smoothing: what the loss includes (validation's never does) */
    log_line(t, json_pack("{s:I, s:I, s:o, s:f, s:I, s:f, s:o, s:f, s:f}", "step",
                          (json_int_t)p->step, "epoch", (json_int_t)p->epoch, "loss",
                          number_or_null(p->loss), "label_smoothing",
                          (double)clformer_model_config(t->model)->label_smoothing, "tokens",
                          (json_int_t)p->tokens, "lr", (double)p->lr, "grad_norm",
                          number_or_null(p->grad_norm), "tokens_per_s", p->tokens_per_s,
                          "elapsed_s", p->elapsed_s));
    CF_TRY(check_divergence(t, p));
    CF_TRY(check_sync(t, p->step));
    if (!report(t, p)) t->stop = 1;
    CF_TRY(agree_on_stop(t));
    if (o->eval_every > 0 && p->step % o->eval_every == 0 && !p->last) {
        CF_TRY(validate(t, *p, res));
        CF_TRY(agree_on_stop(t)); /* a request during validation */
        CF_TRY(agree_on_early_stop(t));
    }
    if (t->early_stop && !t->stopping) {
        res->early_stopped = true;
        t->run.ended = true;
        return CLFORMER_OK;
    }
    if (o->save_path && o->save_every > 0 && p->step % o->save_every == 0 && !p->last &&
        t->high_steps == 0)
        CF_TRY(save(t, o->save_path, res));
    if (t->stopping) {
        res->stopped = true;
        t->run.ended = true;
    }
    return CLFORMER_OK;
}

clformer_status clformer_trainer_step(clformer_trainer *t, clformer_train_progress *step,
                                      clformer_train_progress *validation, bool *validated)
{
    if (validated) *validated = false;
    CF_TRY(spent(t, "training step"));
    if (clformer_trainer_done(t))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "training step: the run is done at step %" PRIu64 " (%s): call "
                       "clformer_trainer_finish", clformer_model_step(t->model),
                       t->run.result.stopped         ? "stopped on request"
                       : t->run.result.early_stopped ? "stopped early by patience"
                       : t->time_up                  ? "the time limit passed"
                                                     : "the step or epoch limit is reached");
    run_begin(t);
    t->run.validated = false;
    clformer_train_progress p;
    cf_door_enter(t->own_door); /* a run's own door: its saves and log go through it */
    const clformer_status st = step_once(t, &p);
    cf_door_leave(t->own_door);
    if (st != CLFORMER_OK) {
        t->run.failed = st;
        return st;
    }
    if (step) *step = p;
    if (validated) *validated = t->run.validated;
    if (validation && t->run.validated) *validation = t->run.validation;
    return CLFORMER_OK;
}

/* The end of a run: the final validation (unless stopped), the last save, the log closed. */
static clformer_status finish(clformer_trainer *t, clformer_train_result *res)
{
    res->time_limited = t->time_up;
    res->seconds = cf_now_s() - t->run.start;
    res->tokens_per_s = res->seconds > 0 ? (double)t->run.tokens / res->seconds : 0;
    CF_TRY(agree_on_stop(t)); /* a request since the last step ends the run here */
    if (t->stopping) res->stopped = true;
    if (!res->stopped && !res->early_stopped) { /* the final validation; a stop request abandons it */
        clformer_train_progress p;
        memset(&p, 0, sizeof p);
        p.epoch = epoch_of(t);
        p.last = true;
        CF_TRY(validate(t, p, res));
        CF_TRY(agree_on_stop(t));
        res->stopped = t->stopping;
    }
    if (res->stopped) {
        const char *path = t->o.stop_save_path ? t->o.stop_save_path : t->o.save_path;
        if (path) CF_TRY(save_once(t, path, res));
        return cf_fail(CLFORMER_ERR_INTERRUPTED, "training stopped at step %" PRIu64 "%s%s",
                       res->steps, path ? "; saved " : "", path ? path : "");
    }
    if (t->o.save_path) CF_TRY(save_once(t, t->o.save_path, res));
    res->best_val = !isfinite(t->best_val)                         ? NAN
                    : t->o.best_metric == CLFORMER_METRIC_BLEU ? -t->best_val
                                                                : t->best_val;
    res->best_step = t->best_step;
    return close_log(t, res);
}

clformer_status clformer_trainer_finish(clformer_trainer *t, clformer_train_result *result,
                                        clformer_train_progress *validation, bool *validated)
{
    if (validated) *validated = false;
    if (result) { /* what a run that cannot finish has to say */
        memset(result, 0, sizeof *result);
        result->val_loss = result->val_bleu = result->best_val = NAN;
        result->steps = t->model ? clformer_model_step(t->model) : 0;
    }
    CF_TRY(spent(t, "finishing the run"));
    run_begin(t);
    t->run.finished = true;
    t->run.validated = false;
    clformer_train_result *res = &t->run.result;
    res->steps = clformer_model_step(t->model);
    cf_door_enter(t->own_door);
    const clformer_status st = finish(t, res);
    cf_door_leave(t->own_door);
    if (result) *result = *res;
    if (validated) *validated = t->run.validated;
    if (validation && t->run.validated) *validation = t->run.validation;
    return st;
}

clformer_status clformer_trainer_run(clformer_trainer *t, clformer_train_result *res)
{
    clformer_status st = CLFORMER_OK;
    while (st == CLFORMER_OK && !clformer_trainer_done(t))
        st = clformer_trainer_step(t, NULL, NULL, NULL);
    if (st == CLFORMER_OK) return clformer_trainer_finish(t, res, NULL, NULL);
    *res = t->run.result; /* the figures up to the failed step */
    res->steps = clformer_model_step(t->model);
    return st;
}
