/* The training loop of `clformer train` and `clformer demo` (see trainer.h). */
#include "trainer.h"
#include "bleu.h"
#include "cli.h"
#include "commands.h"
#include "fileio.h"
#include "text_io.h"
#include "vocab.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void format_duration(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7) snprintf(buf, size, "?");
    else if (s < 60) snprintf(buf, size, "%.0fs", s);
    else if (s < 3600) snprintf(buf, size, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, size, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

/* Everything one run holds; freed by cleanup(). */
typedef struct {
    const trainer_options *o;
    const char *cmd;
    clformer_context *ctx;
    clformer_model *model;
    cf_parallel_text *train_text, *val_text; /* owned when read from files */
    const cf_parallel_text *train_src, *val_src;
    cf_vocab *src_vocab, *tgt_vocab;
    cf_corpus *train, *val;
    cf_batcher *batcher;
    cf_batch batch;
    FILE *log;
    /* schedule (from the options, or the checkpoint when resuming) */
    float lr;
    clformer_lr_schedule schedule;
    long warmup;
    bool tty;
    double last_print;
    uint64_t last_printed_step;
    uint64_t epoch; /* of the step being taken, from 1 */
} run;

/* ------------------------------------------------------------------------- */
/* setup                                                                     */
/* ------------------------------------------------------------------------- */

static int fail(run *r, const char *doing)
{
    cli_runtime_error(r->cmd, doing);
    return 1;
}

static int load_text(run *r)
{
    const trainer_options *o = r->o;
    if (o->train_text) r->train_src = o->train_text;
    else {
        if (cf_parallel_text_load(o->src_path, o->tgt_path, &r->train_text) != CLFORMER_OK)
            return fail(r, "training data");
        r->train_src = r->train_text;
    }
    if (o->val_text) r->val_src = o->val_text;
    else if (o->val_src_path) {
        if (cf_parallel_text_load(o->val_src_path, o->val_tgt_path, &r->val_text) != CLFORMER_OK)
            return fail(r, "validation data");
        r->val_src = r->val_text;
    }
    return 0;
}

/* Vocabularies: built from the training text for a fresh model, else the model's. */
static int vocabularies(run *r)
{
    if (r->model) {
        const clformer_config *c = clformer_model_config(r->model);
        if (cf_vocab_from_tokens(clformer_model_src_vocab(r->model), (size_t)c->src_vocab,
                                 "source vocabulary", &r->src_vocab) != CLFORMER_OK ||
            cf_vocab_from_tokens(clformer_model_tgt_vocab(r->model), (size_t)c->tgt_vocab,
                                 "target vocabulary", &r->tgt_vocab) != CLFORMER_OK)
            return fail(r, "the model's vocabularies");
        return 0;
    }
    const trainer_options *o = r->o;
    if (cf_vocab_build(r->train_src->src, r->train_src->n, o->min_freq, o->max_vocab,
                       &r->src_vocab) != CLFORMER_OK ||
        cf_vocab_build(r->train_src->tgt, r->train_src->n, o->min_freq, o->max_vocab,
                       &r->tgt_vocab) != CLFORMER_OK)
        return fail(r, "building the vocabularies");
    return 0;
}

static int encode(run *r, int max_len)
{
    char summary[256];
    if (cf_corpus_encode(r->train_src, r->src_vocab, r->tgt_vocab, max_len, &r->train) !=
        CLFORMER_OK)
        return fail(r, "training data");
    cf_corpus_summary(r->train, summary, sizeof summary);
    printf("training data: %s\n", summary);
    if (r->val_src) {
        if (cf_corpus_encode(r->val_src, r->src_vocab, r->tgt_vocab, max_len, &r->val) !=
            CLFORMER_OK)
            return fail(r, "validation data");
        cf_corpus_summary(r->val, summary, sizeof summary);
        printf("validation data: %s\n", summary);
    }
    return 0;
}

static int fresh_model(run *r)
{
    const trainer_options *o = r->o;
    clformer_config c = o->config;
    c.src_vocab = cf_vocab_size(r->src_vocab);
    c.tgt_vocab = cf_vocab_size(r->tgt_vocab);
    if (clformer_model_create(r->ctx, &c, o->seed, &r->model) != CLFORMER_OK)
        return fail(r, "creating the model");
    const char **s = malloc((size_t)c.src_vocab * sizeof *s);
    const char **t = malloc((size_t)c.tgt_vocab * sizeof *t);
    clformer_status st = s && t ? CLFORMER_OK : CLFORMER_ERR_OUT_OF_MEMORY;
    for (int i = 0; s && i < c.src_vocab; i++) s[i] = cf_vocab_token(r->src_vocab, i);
    for (int i = 0; t && i < c.tgt_vocab; i++) t[i] = cf_vocab_token(r->tgt_vocab, i);
    if (st == CLFORMER_OK) st = clformer_model_set_vocabs(r->model, s, t);
    free(s);
    free(t);
    return st == CLFORMER_OK ? 0 : fail(r, "setting the vocabularies");
}

/* The trainer's part of clformer.train_state: batcher position and schedule. */
static char *trainer_state(run *r)
{
    json_t *b = cf_batcher_state_to_json(r->batcher);
    json_t *o = json_pack("{s:o, s:f, s:s, s:I}", "batching", b ? b : json_null(), "lr",
                          (double)r->lr, "schedule",
                          r->schedule == CLFORMER_LR_NOAM ? "noam" : "constant", "warmup",
                          (json_int_t)r->warmup);
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(o);
    return s;
}

/* Resuming: the batcher and schedule come from the checkpoint. */
static int restore(run *r, json_t **batching)
{
    const char *text = clformer_model_trainer_state(r->model);
    json_error_t err;
    json_t *root = text ? json_loads(text, 0, &err) : NULL;
    const char *schedule = NULL, *mode = NULL, *seed = NULL;
    double lr = 0;
    json_int_t warmup = 0, size = 0, tokens = 0, window = 0;
    int shuffle = 0;
    json_t *b = NULL;
    if (!root || json_unpack_ex(root, &err, 0, "{s:o, s:F, s:s, s:I}", "batching", &b, "lr", &lr,
                                "schedule", &schedule, "warmup", &warmup) != 0 ||
        json_unpack_ex(b, &err, 0, "{s:s, s?I, s?I, s:b, s:s, s?I}", "mode", &mode,
                       "batch_size", &size, "batch_tokens", &tokens, "shuffle", &shuffle, "seed",
                       &seed, "bucket_window", &window) != 0) {
        json_decref(root);
        cli_error(r->cmd, "'%s' has no usable trainer state (%s); start a new run with "
                          "--init instead of --resume", r->o->resume_path,
                  text ? err.text : "it is not a training checkpoint");
        return 1;
    }
    r->lr = (float)lr;
    r->schedule = !strcmp(schedule, "noam") ? CLFORMER_LR_NOAM : CLFORMER_LR_CONSTANT;
    r->warmup = (long)warmup;
    cf_batcher_config bc = {0};
    bc.batch_size = (int)size;
    bc.batch_tokens = (int)tokens;
    bc.shuffle = shuffle;
    bc.seed = strtoull(seed, NULL, 10);
    bc.bucket_window = (int)window;
    if (cf_batcher_create(r->train, &bc, &r->batcher) != CLFORMER_OK) {
        json_decref(root);
        return fail(r, "resuming the batches");
    }
    *batching = json_incref(b);
    json_decref(root);
    return 0;
}

static int open_model(run *r)
{
    const trainer_options *o = r->o;
    const char *path = o->resume_path ? o->resume_path : o->init_path;
    if (path) {
        if (clformer_model_load(r->ctx, path, &r->model) != CLFORMER_OK) return fail(r, NULL);
        if (o->resume_path && !clformer_model_has_training_state(r->model)) {
            cli_error(r->cmd, "'%s' is a plain model without optimizer state: use --init to "
                              "start training from it", path);
            return 1;
        }
        if (o->init_path) {
            clformer_model_set_seed(r->model, o->seed);
            const clformer_config *c = clformer_model_config(r->model);
            float p = o->dropout_given ? o->dropout : c->dropout;
            float ls = o->label_smoothing_given ? o->label_smoothing : c->label_smoothing;
            if (clformer_model_set_regularization(r->model, p, ls) != CLFORMER_OK)
                return fail(r, NULL);
        }
    }
    if (!o->resume_path && clformer_model_set_optimizer(r->model, &o->optim) != CLFORMER_OK)
        return fail(r, "optimizer settings");
    return 0;
}

static int setup(run *r)
{
    const trainer_options *o = r->o;
    r->lr = o->lr;
    r->schedule = o->schedule;
    r->warmup = o->warmup;
    if (load_text(r)) return 1;
    if ((o->resume_path || o->init_path) && open_model(r)) return 1;
    if (vocabularies(r)) return 1;
    int max_len = r->model ? clformer_model_config(r->model)->max_len : o->config.max_len;
    if (encode(r, max_len)) return 1;
    if (!r->model && (fresh_model(r) || open_model(r))) return 1;

    json_t *batching = NULL;
    if (o->resume_path) {
        if (restore(r, &batching)) return 1;
        clformer_status st = cf_batcher_state_from_json(r->batcher, batching);
        json_decref(batching);
        if (st != CLFORMER_OK) return fail(r, "resuming the batches");
    } else if (cf_batcher_create(r->train, &o->batching, &r->batcher) != CLFORMER_OK) {
        return fail(r, "batching");
    }
    if (o->log_path) {
        r->log = fopen(o->log_path, o->resume_path ? "a" : "w");
        if (!r->log) {
            cli_error(r->cmd, "cannot write the log '%s': %s", o->log_path, strerror(errno));
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------- */
/* the loop                                                                  */
/* ------------------------------------------------------------------------- */

static bool done(const run *r)
{
    const trainer_options *o = r->o;
    if (o->steps > 0) return clformer_model_step(r->model) >= (uint64_t)o->steps;
    return cf_batcher_epoch(r->batcher) >= (uint64_t)o->epochs;
}

/* Steps left, for the ETA (estimated from the epoch length with --epochs). */
static double steps_left(const run *r)
{
    const trainer_options *o = r->o;
    double step = (double)clformer_model_step(r->model);
    if (o->steps > 0) return (double)o->steps - step;
    double per_epoch = (double)cf_batcher_batches_per_epoch(r->batcher);
    double in_epoch = o->batching.batch_size > 0
                          ? (double)cf_batcher_index(r->batcher) / o->batching.batch_size
                          : (double)cf_batcher_index(r->batcher);
    return ((double)o->epochs - (double)cf_batcher_epoch(r->batcher)) * per_epoch - in_epoch;
}

static void log_line(run *r, json_t *entry)
{
    if (!r->log) {
        json_decref(entry);
        return;
    }
    char *s = json_dumps(entry, JSON_COMPACT | JSON_REAL_PRECISION(8));
    if (s) {
        fprintf(r->log, "%s\n", s);
        fflush(r->log);
    }
    free(s);
    json_decref(entry);
}

static json_t *number_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* Validation: loss and perplexity over the whole set, BLEU over its first
 * bleu_sentences sentences (greedy). */
static int validate(run *r, trainer_result *res)
{
    if (!r->val) return 0;
    double t0 = now_s(), loss;
    size_t tokens;
    if (text_corpus_loss(r->model, r->val, 4096, &loss, &tokens) != CLFORMER_OK)
        return fail(r, "validation loss");
    double bleu = NAN;
    size_t n = r->o->bleu_sentences > 0 ? (size_t)r->o->bleu_sentences : 0;
    if (n > r->val_src->n) n = r->val_src->n;
    if (n > 0) {
        text_session s;
        char **hyps = calloc(n, sizeof *hyps);
        clformer_decode_options dec;
        clformer_decode_options_default(&dec);
        clformer_status st = hyps ? text_session_open(r->model, &s) : CLFORMER_ERR_OUT_OF_MEMORY;
        if (st == CLFORMER_OK) {
            st = text_translate(&s, r->val_src->src, n, &dec, 64, hyps, NULL, NULL, NULL);
            text_session_close(&s);
        }
        cf_bleu_result b;
        if (st == CLFORMER_OK) st = cf_bleu_corpus((const char *const *)hyps, r->val_src->tgt, n,
                                                    CF_BLEU_TOKENIZE_NONE, &b);
        for (size_t i = 0; hyps && i < n; i++) free(hyps[i]);
        free(hyps);
        if (st != CLFORMER_OK) return fail(r, "validation BLEU");
        bleu = b.score;
    }
    res->val_loss = loss;
    res->val_bleu = bleu;
    const uint64_t step = clformer_model_step(r->model);
    if (r->tty) fprintf(stderr, "\r\033[K");
    printf("step %" PRIu64 ": validation loss %.4f, perplexity %.2f", step, loss, exp(loss));
    if (isfinite(bleu)) printf(", BLEU %.2f (%zu sentences)", bleu, n);
    printf(" [%.1fs]\n", now_s() - t0);
    fflush(stdout);
    log_line(r, json_pack("{s:I, s:o, s:o, s:o, s:I}", "step", (json_int_t)step, "val_loss",
                          number_or_null(loss), "val_ppl", number_or_null(exp(loss)), "val_bleu",
                          number_or_null(bleu), "val_tokens", (json_int_t)tokens));
    return 0;
}

static int save(run *r, const char *path)
{
    char *state = trainer_state(r);
    clformer_status st = state ? clformer_model_set_trainer_state(r->model, state)
                               : CLFORMER_ERR_OUT_OF_MEMORY;
    free(state);
    if (st == CLFORMER_OK) st = clformer_model_save(r->model, path, true);
    if (st != CLFORMER_OK) return fail(r, "saving");
    return 0;
}

static void progress(run *r, const clformer_step_stats *s, float lr, double tok_s, double elapsed,
                     bool force)
{
    const trainer_options *o = r->o;
    double t = now_s();
    if (!force && !r->tty && t - r->last_print < 10.0) return; /* plain lines: every 10 s */
    if (r->tty && !force && t - r->last_print < 0.2) return;
    r->last_print = t;
    r->last_printed_step = s->step;
    char eta[32], total[32] = "";
    double left = steps_left(r), per_step = tok_s > 0 ? (double)s->tokens / tok_s : NAN;
    format_duration(left * per_step, eta, sizeof eta);
    if (o->steps > 0) snprintf(total, sizeof total, "/%ld", o->steps);
    char line[256];
    snprintf(line, sizeof line,
             "step %" PRIu64 "%s | epoch %" PRIu64 " | loss %.4f | %.0f tok/s | lr %.2e | "
             "%.0fs elapsed | ETA %s",
             s->step, total, r->epoch, s->loss, tok_s, lr, elapsed, eta);
    if (r->tty) fprintf(stderr, "\r\033[K%s", line);
    else fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

static int loop(run *r, trainer_result *res)
{
    const trainer_options *o = r->o;
    const double start = now_s();
    double window_tokens = 0, window_time = 0, tok_s = 0;
    size_t run_tokens = 0;
    clformer_step_stats s = {0};
    float lr = 0;
    while (!done(r)) {
        /* read before cf_batcher_next, which moves on to the next epoch after
         * handing out an epoch's last batch */
        r->epoch = cf_batcher_epoch(r->batcher) + 1;
        if (cf_batcher_next(r->batcher, &r->batch) != CLFORMER_OK) return fail(r, "batching");
        const clformer_batch b = {(size_t)r->batch.B, (size_t)r->batch.S,
                                  (size_t)r->batch.T + 1, r->batch.src, r->batch.tgt};
        const uint64_t step = clformer_model_step(r->model) + 1;
        lr = clformer_learning_rate(r->schedule, r->lr, clformer_model_config(r->model)->d_model,
                                    step, (uint64_t)r->warmup);
        const double t0 = now_s();
        if (clformer_model_train_step(r->model, &b, lr, &s) != CLFORMER_OK) {
            if (r->tty) fprintf(stderr, "\n");
            return fail(r, NULL);
        }
        const double dt = now_s() - t0;
        run_tokens += s.tokens;
        /* tokens/s over roughly the last 20 steps */
        window_tokens = window_tokens * 0.95 + (double)s.tokens;
        window_time = window_time * 0.95 + dt;
        tok_s = window_tokens / window_time;
        const double elapsed = now_s() - start;
        log_line(r, json_pack("{s:I, s:I, s:o, s:I, s:f, s:o, s:f, s:f}", "step",
                              (json_int_t)s.step, "epoch", (json_int_t)r->epoch, "loss",
                              number_or_null(s.loss), "tokens", (json_int_t)s.tokens, "lr",
                              (double)lr, "grad_norm", number_or_null(s.grad_norm),
                              "tokens_per_s", tok_s, "elapsed_s", elapsed));
        res->loss = s.loss;
        progress(r, &s, lr, tok_s, elapsed, s.step == 1);
        const bool last = done(r);
        if (o->eval_every > 0 && s.step % (uint64_t)o->eval_every == 0 && !last && validate(r, res))
            return 1;
        if (o->save_path && o->save_every > 0 && s.step % (uint64_t)o->save_every == 0 && !last &&
            save(r, o->save_path))
            return 1;
        if (interrupted) {
            const char *path = o->save_path ? o->save_path : "clformer-interrupted.safetensors";
            if (r->tty) fprintf(stderr, "\n");
            if (save(r, path)) return 1;
            fprintf(stderr, "clformer %s: interrupted at step %" PRIu64 "; saved %s (resume with "
                            "--resume %s)\n", r->cmd, s.step, path, path);
            res->interrupted = true;
            break;
        }
    }
    if (s.step && r->last_printed_step != s.step) progress(r, &s, lr, tok_s, now_s() - start, true);
    if (r->tty) fprintf(stderr, "\n");
    res->seconds = now_s() - start;
    res->tokens_per_s = res->seconds > 0 ? (double)run_tokens / res->seconds : 0;
    return 0;
}

static void cleanup(run *r, clformer_model **model_out)
{
    if (r->log) fclose(r->log);
    cf_batch_free(&r->batch);
    cf_batcher_free(r->batcher);
    cf_corpus_free(r->train);
    cf_corpus_free(r->val);
    cf_vocab_free(r->src_vocab);
    cf_vocab_free(r->tgt_vocab);
    cf_parallel_text_free(r->train_text);
    cf_parallel_text_free(r->val_text);
    if (model_out) *model_out = r->model;
    else clformer_model_free(r->model);
}

int trainer_run(const trainer_options *o, clformer_context *ctx, clformer_model **model_out,
                trainer_result *res)
{
    run r;
    memset(&r, 0, sizeof r);
    memset(res, 0, sizeof *res);
    res->val_loss = res->val_bleu = NAN;
    r.o = o;
    r.cmd = o->command;
    r.ctx = ctx;
    r.tty = isatty(fileno(stderr));
    int rc = setup(&r);
    if (rc == 0 && o->resume_path && o->steps > 0 &&
        clformer_model_step(r.model) >= (uint64_t)o->steps) {
        const uint64_t at = clformer_model_step(r.model);
        cli_error(r.cmd, "%s is already at step %" PRIu64 "; --steps is the total number of "
                  "steps, so ask for more than %" PRIu64, o->resume_path, at, at);
        rc = 1;
    }
    if (rc == 0) {
        const clformer_config *c = clformer_model_config(r.model);
        const clformer_memory mem = clformer_model_memory(r.model);
        printf("model: d_model %d, %d heads, d_ff %d, %d+%d layers, %s, %s, vocab %d/%d, "
               "%.2fM parameters (%.0f MiB with gradients and Adam state)\n",
               c->d_model, c->n_heads, c->d_ff, c->n_enc_layers, c->n_dec_layers,
               c->norm_first ? "pre-norm" : "post-norm",
               c->activation == CLFORMER_ACT_GELU ? "gelu" : "relu", c->src_vocab, c->tgt_vocab,
               (double)clformer_model_parameter_count(r.model) / 1e6,
               (double)(mem.parameters + mem.gradients + mem.optimizer) / 1048576.0);
        printf("device: %s\n", clformer_context_device(ctx)->name);
        if (o->resume_path)
            printf("resuming %s at step %" PRIu64 "\n", o->resume_path, clformer_model_step(r.model));
        fflush(stdout);
        void (*previous)(int) = signal(SIGINT, on_sigint);
        interrupted = 0;
        rc = loop(&r, res);
        signal(SIGINT, previous);
    }
    if (rc == 0 && !res->interrupted) {
        rc = validate(&r, res);
        if (rc == 0 && o->save_path) {
            rc = save(&r, o->save_path);
            if (rc == 0) printf("saved %s\n", o->save_path);
        }
    }
    res->steps = r.model ? clformer_model_step(r.model) : 0;
    if (r.log) {
        fclose(r.log);
        r.log = NULL;
    }
    if (rc == 0 && o->plot_path && o->log_path)
        rc = plot_training_log(r.cmd, o->log_path, o->plot_path, NULL, false, 0, 0);
    cleanup(&r, rc == 0 ? model_out : NULL);
    if (rc == 0 && res->interrupted) rc = EXIT_INTERRUPTED;
    return rc;
}
