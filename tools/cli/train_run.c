/* A training run on the command line (see train_run.h). */
#include "train_run.h"
#include "ranks.h"
#include "rank_agreement.h"
#include "cli.h"
#include "commands.h"
#include "exit_guard.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The run Ctrl-C stops (one at a time per process). */
static clformer_trainer *volatile running;

static volatile sig_atomic_t sigints;
static volatile sig_atomic_t quiet; /* ranks other than 0 stop without a word */
static volatile sig_atomic_t several_ranks; /* under mpirun */

/* The first Ctrl-C (SIGINT) or SIGTERM asks the run to stop: it finishes the
 * step, saves and exits 130. SIGTERM is what mpirun sends the ranks when it
 * ends a job on Ctrl-C, and what batch systems send before SIGKILL at a time
 * limit. Later signals only say so: quitting in the middle of a save would
 * lose the newest steps (never the last good file: saves are atomic). */
static void on_stop_signal(int sig)
{
    static const char first_int[] = "\nclformer: Ctrl-C: stopping after this step and saving "
                                    "the checkpoint\n";
    static const char first_term[] = "\nclformer: SIGTERM: stopping after this step and "
                                     "saving the checkpoint\n";
    static const char again[] = "\nclformer: still saving; the run ends once the checkpoint "
                                "is complete (kill -9 quits at once, keeping the last saved "
                                "file)\n";
    /* under mpirun, SIGTERM comes from mpirun, which kills the ranks
     * odls_base_sigkill_timeout seconds later: the save may not finish */
    static const char first_term_mpi[] = "\nclformer: SIGTERM: stopping after this step and "
                                         "saving the checkpoint, if mpirun allows the time "
                                         "(--mca odls_base_sigkill_timeout 30; see "
                                         "docs/DISTRIBUTED.md)\n";
    const char *term = several_ranks ? first_term_mpi : first_term;
    const size_t term_len = several_ranks ? sizeof first_term_mpi - 1 : sizeof first_term - 1;
    const char *msg = sigints ? again : sig == SIGTERM ? term : first_int;
    size_t len = sigints ? sizeof again - 1 : sig == SIGTERM ? term_len : sizeof first_int - 1;
    sigints = 1;
    if (!quiet) {
        ssize_t ignored = write(2, msg, len);
        (void)ignored;
    }
    if (running) clformer_trainer_request_stop(running);
}

static void format_duration(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7) snprintf(buf, size, "?");
    else if (s < 60) snprintf(buf, size, "%.0fs", s);
    else if (s < 3600) snprintf(buf, size, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(buf, size, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

typedef struct {
    bool tty;
    uint64_t total_steps; /* 0 with an epoch limit */
    double last_print;
    bool line_open;       /* a progress line waits on the terminal */
    /* seconds a step, smoothed over about the last 20 steps, for the ETA (a
     * step's own tokens vary with the length bucketing, so tokens over
     * tokens/s swings by 10x between steps); from elapsed time, so the
     * validations' share is in it */
    double step_s, last_elapsed;
    uint64_t last_step;
} display;

static void time_steps(display *d, const clformer_train_progress *p)
{
    if (p->step > d->last_step && d->last_step > 0) {
        const double dt = (p->elapsed_s - d->last_elapsed) / (double)(p->step - d->last_step);
        d->step_s = d->step_s > 0 ? d->step_s * 0.95 + dt * 0.05 : dt;
    }
    d->last_elapsed = p->elapsed_s;
    d->last_step = p->step;
}

static void print_step(display *d, const clformer_train_progress *p)
{
    const double t = cli_now_s();
    time_steps(d, p);
    const bool force = p->step == 1 || p->last;
    if (!force && !d->tty && t - d->last_print < 10.0) return; /* plain lines: every 10 s */
    if (!force && d->tty && t - d->last_print < 0.2) return;
    d->last_print = t;
    char eta[32], total[32] = "";
    const double per_step = d->step_s > 0          ? d->step_s
                            : p->tokens_per_s > 0 ? (double)p->tokens / p->tokens_per_s
                                                  : NAN;
    format_duration(p->steps_left * per_step, eta, sizeof eta);
    /* with an epoch limit the total is the trainer's estimate: this step
     * plus the steps the remaining epochs hold (exact on one process) */
    if (d->total_steps) snprintf(total, sizeof total, "/%" PRIu64, d->total_steps);
    else if (p->steps_left >= 0 && p->steps_left < 1e15)
        snprintf(total, sizeof total, "/%" PRIu64, p->step + (uint64_t)llround(p->steps_left));
    char line[256], ranks[32] = "";
    if (ranks_get()->size > 1) snprintf(ranks, sizeof ranks, " (%d ranks)", ranks_get()->size);
    snprintf(line, sizeof line,
             "step %" PRIu64 "%s | epoch %" PRIu64 " | loss %.4f | %.0f tok/s%s | lr %.2e | "
             "%.0fs elapsed | ETA %s",
             p->step, total, p->epoch, p->loss, p->tokens_per_s, ranks, p->lr, p->elapsed_s,
             eta);
    if (d->tty) fprintf(stderr, "\r\033[K%s", line);
    else fprintf(stderr, "%s\n", line);
    d->line_open = d->tty;
    fflush(stderr);
}

static void print_validation(display *d, const clformer_train_progress *p)
{
    if (d->line_open) fprintf(stderr, "\r\033[K");
    d->line_open = false;
    printf("step %" PRIu64 ": validation loss %.4f, perplexity %.2f", p->step, p->val_loss,
           p->val_ppl);
    if (isfinite(p->val_bleu))
        printf(", BLEU %.2f (%zu sentences)", p->val_bleu, p->val_bleu_sentences);
    printf(" [%.1fs]\n", p->val_seconds);
    fflush(stdout);
}

static bool on_progress(const clformer_train_progress *p, void *user)
{
    if (ranks_get()->rank != 0) return true; /* rank 0 alone prints */
    if (p->event == CLFORMER_TRAIN_VALIDATION) print_validation(user, p);
    else print_step(user, p);
    return true;
}

static void print_summary(clformer_trainer *t, clformer_context *ctx, const char *resume_path)
{
    const int n_ranks = ranks_get()->size;
    if (n_ranks > 1) {
        /* the batching in force (the checkpoint's when resuming) */
        clformer_train_options in_force;
        clformer_trainer_settings(t, &in_force);
        const clformer_batcher_options *b = &in_force.batching;
        if (b->batch_size)
            printf("ranks: %d, data-parallel: %d sentence pairs a rank, a global batch of %lld "
                   "pairs a step (tok/s counts every rank's tokens)\n", n_ranks, b->batch_size,
                   (long long)b->batch_size * n_ranks);
        else
            printf("ranks: %d, data-parallel: %d padded tokens a rank, a global batch of up to "
                   "%lld tokens a step (tok/s counts every rank's tokens)\n", n_ranks,
                   b->batch_tokens, (long long)b->batch_tokens * n_ranks);
    }
    char line[256];
    if (clformer_trainer_data_summary(t, false, line, sizeof line))
        printf("training data: %s\n", line);
    if (clformer_trainer_data_summary(t, true, line, sizeof line))
        printf("validation data: %s\n", line);
    const clformer_model *m = clformer_trainer_model(t);
    const clformer_config *c = clformer_model_config(m);
    const clformer_memory mem = clformer_model_memory(m);
    printf("model: d_model %d, %d heads, d_ff %d, %d+%d layers, %s-norm, %s, vocab %d/%d, "
           "%.2fM parameters (%.0f MiB with gradients and Adam state)\n",
           c->d_model, c->n_heads, c->d_ff, c->n_enc_layers, c->n_dec_layers,
           clformer_norm_name(c->norm_first), clformer_activation_name(c->activation),
           c->src_vocab, c->tgt_vocab,
           (double)clformer_model_parameter_count(m) / 1e6,
           (double)(mem.parameters + mem.gradients + mem.optimizer) / 1048576.0);
    printf("device: %s\n", clformer_context_device(ctx)->name);
    if (clformer_trainer_resumed(t))
        printf("resuming %s at step %" PRIu64 "\n", resume_path, clformer_model_step(m));
    fflush(stdout);
}

/* Device memory at the end of a run: the model's and the session's (the
 * activations of the largest batch and validation's decoding caches). */
static void print_memory(clformer_trainer *t)
{
    const clformer_memory m = clformer_model_memory(clformer_trainer_model(t));
    const clformer_memory s = clformer_session_memory(clformer_trainer_session(t));
    printf("device memory: %.1f MiB model (weights, gradients, Adam state) + %.1f MiB session "
           "(activations %.1f, decoding caches %.1f)\n", (double)m.total / 1048576.0,
           (double)s.total / 1048576.0, (double)s.activations / 1048576.0,
           (double)s.decoding / 1048576.0);
}

int train_run(const char *command, clformer_context *ctx, clformer_train_options o,
              const char *plot_path, train_check check, void *check_user,
              clformer_model **model_out, clformer_train_result *result)
{
    memset(result, 0, sizeof *result);
    display d = {isatty(fileno(stderr)) != 0, o.steps, 0, false, 0, 0, 0};
    o.callback = on_progress;
    o.user = &d;
    clformer_collective collective;
    ranks_collective(&collective);
    o.collective = &collective;
    clformer_trainer *t;
    if (clformer_trainer_create(ctx, &o, &t) != CLFORMER_OK) {
        cli_runtime_error(command, NULL);
        return 1;
    }
    /* under mpirun: every rank was given the same data and options */
    int refused = rank_agreement(command, &o, clformer_trainer_model(t));
    if (!refused && check) refused = check(t, check_user);
    if (refused) {
        clformer_trainer_free(t);
        return refused;
    }
    if (ranks_get()->rank == 0) print_summary(t, ctx, o.resume_path);
    running = t;
    /* sigaction, not signal(): with the strict POSIX feature macros glibc's
     * signal() resets the handler after one delivery, so a second Ctrl-C
     * killed the run in the middle of its save */
    sigints = 0; /* set before the handler can run */
    quiet = ranks_get()->rank != 0;
    several_ranks = ranks_get()->size > 1;
    struct sigaction sa, previous_int, previous_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &previous_int);
    sigaction(SIGTERM, &sa, &previous_term);
    const clformer_status st = clformer_trainer_run(t, result);
    sigaction(SIGINT, &previous_int, NULL);
    sigaction(SIGTERM, &previous_term, NULL);
    running = NULL;
    if (d.line_open) fprintf(stderr, "\n");
    int rc = 0;
    if (st == CLFORMER_ERR_INTERRUPTED && quiet) {
        rc = EXIT_INTERRUPTED; /* rank 0 says where it saved */
    } else if (st == CLFORMER_ERR_INTERRUPTED && result->saved_to) {
        fprintf(stderr, "clformer %s: interrupted at step %" PRIu64 "; saved %s (resume with "
                "--resume %s)\n", command, result->steps, result->saved_to, result->saved_to);
        rc = EXIT_INTERRUPTED;
    } else if (st == CLFORMER_ERR_INTERRUPTED) {
        fprintf(stderr, "clformer %s: interrupted at step %" PRIu64 "\n", command, result->steps);
        rc = EXIT_INTERRUPTED;
    }
    /* a signal from now on ends the process (130) without another line */
    if (rc == EXIT_INTERRUPTED) exit_guard_said(); else if (st != CLFORMER_OK) {
        cli_runtime_error(command, NULL);
        rc = 1;
    } else if (ranks_get()->rank == 0) {
        print_memory(t);
        if (o.save_path) printf("saved %s\n", o.save_path);
    }
    clformer_model *model = rc == 0 && model_out ? clformer_trainer_release_model(t) : NULL;
    clformer_trainer_free(t); /* closes the log */
    if (rc == 0 && plot_path && o.log_path && ranks_get()->rank == 0) {
        rc = plot_training_log(command, o.log_path, plot_path, NULL, false, 0, 0);
        if (rc != 0 && o.save_path) /* the figure failed, not the training */
            fprintf(stderr, "clformer %s: the model was saved to %s; only --plot failed (draw it "
                    "again with clformer plot --log %s --out FILE.png)\n", command, o.save_path,
                    o.log_path);
    }
    if (rc == 0 && model_out) *model_out = model;
    else clformer_model_free(model);
    return rc;
}
