/*
 * Compiling several programs at once, before the first use of their kernels.
 *
 * Drivers whose compiler runs in parallel (GPU drivers, Intel's CPU runtime)
 * then build them on all cores at once. PoCL 3.1 serialises its LLVM work
 * within a process, so there this only moves the builds ahead of the first
 * step; it still lets the caller show progress ("compiling kernels: 5/9
 * programs"). The threads only read the context (cf_program_obtain); the
 * caller's thread reports progress and adopts the results in order.
 */
#include "program.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *name;
    cl_program program;
    cf_cache_key key;
    cf_program_origin how;
    clformer_status st;
    char *error; /* the failure's message (it is thread-local where it happened) */
} job;

typedef struct {
    const cf_ctx *ctx;
    const char *options;
    job *jobs;
    size_t n, next, finished;
    pthread_mutex_t lock;
    pthread_cond_t progressed;
} work;

static void run_job(const work *w, job *j)
{
    j->st = cf_program_obtain(w->ctx, j->name, w->options, &j->program, &j->key, &j->how);
    if (j->st != CLFORMER_OK) j->error = strdup(clformer_last_error());
}

static void *worker(void *arg)
{
    work *w = arg;
    pthread_mutex_lock(&w->lock);
    while (w->next < w->n) {
        job *j = &w->jobs[w->next++];
        pthread_mutex_unlock(&w->lock);
        run_job(w, j);
        pthread_mutex_lock(&w->lock);
        w->finished++;
        pthread_cond_signal(&w->progressed);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void report(cf_ctx *ctx, size_t done, size_t total)
{
    if (ctx->progress) ctx->progress("compiling kernels", done, total, ctx->progress_user);
}

/* Runs the jobs on up to `threads` threads, reporting progress here. */
static void run_all(cf_ctx *ctx, work *w, unsigned threads)
{
    pthread_t ids[16];
    size_t started = 0;
    if (w->n) report(ctx, 0, w->n);
    if (threads > 1)
        for (; started < threads && started < w->n && started < 16; started++)
            if (pthread_create(&ids[started], NULL, worker, w) != 0) break;
    if (started == 0) { /* one thread: this one */
        for (size_t i = 0; i < w->n; i++) {
            run_job(w, &w->jobs[i]);
            report(ctx, i + 1, w->n);
        }
        return;
    }
    pthread_mutex_lock(&w->lock);
    for (size_t shown = 0; shown < w->n;) {
        while (w->finished == shown) pthread_cond_wait(&w->progressed, &w->lock);
        const size_t finished = w->finished;
        pthread_mutex_unlock(&w->lock);
        while (shown < finished) report(ctx, ++shown, w->n);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    for (size_t t = 0; t < started; t++) pthread_join(ids[t], NULL);
}

/* The profile's count, where it sets one, is a limit even on a caller's
 * request: Oclgrind's compiler fails on several threads (it exited 255 in
 * 3 of 4 runs of test_runtime when a caller's 2 overrode it). */
static unsigned default_threads(const cf_ctx *ctx, unsigned threads)
{
    const unsigned limit = ctx->device_profile.compile_threads;
    if (threads) return limit && threads > limit ? limit : threads;
    if (limit) return limit;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 1 ? (unsigned)cpus : 1;
}

clformer_status cf_programs_prepare(cf_ctx *ctx, const char *const *names, size_t n,
                                    unsigned threads)
{
    char options[1024];
    cf_program_options(ctx, NULL, options, sizeof options);
    job *jobs = calloc(n ? n : 1, sizeof *jobs);
    if (!jobs) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t m = 0; /* the names not held yet, each once */
    for (size_t i = 0; i < n; i++) {
        bool seen = cf_program_loaded(ctx, names[i], options);
        for (size_t k = 0; k < m && !seen; k++) seen = !strcmp(jobs[k].name, names[i]);
        if (!seen) jobs[m++].name = names[i];
    }
    work w = {.ctx = ctx, .options = options, .jobs = jobs, .n = m};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.progressed, NULL);
    run_all(ctx, &w, default_threads(ctx, threads));
    pthread_cond_destroy(&w.progressed);
    pthread_mutex_destroy(&w.lock);

    clformer_status first = CLFORMER_OK;
    char *first_error = NULL;
    for (size_t i = 0; i < m; i++) {
        job *j = &jobs[i];
        clformer_status st = j->st;
        if (st == CLFORMER_OK) {
            st = cf_program_adopt(ctx, j->name, options, j->program, &j->key, j->how);
            if (st != CLFORMER_OK) j->error = strdup(clformer_last_error());
        }
        if (st != CLFORMER_OK && first == CLFORMER_OK) {
            first = st;
            first_error = j->error;
            j->error = NULL;
        }
        free(j->error);
    }
    free(jobs);
    if (first == CLFORMER_OK) return CLFORMER_OK;
    clformer_status st = cf_fail(first, "%s", first_error ? first_error : "out of host memory");
    free(first_error);
    return st;
}

/* Whether a training step with this attention path runs kernels of `program`:
 * the programs the model's forward and backward use, and the per-row fused
 * attention where it is on (decoding's and beam search's are translation's
 * alone, and an op the model does not use yet compiles on its first launch;
 * so do the tiled attention kernels, built per head size). */
static bool training_runs(const char *program, bool fused_attention, bool tiled)
{
    static const char *const trained[] = {"activation", "adam",      "attention", "dropout",
                                          "embedding",  "layernorm", "loss",      "reduce",
                                          "tensor"};
    for (size_t i = 0; i < sizeof trained / sizeof *trained; i++)
        if (!strcmp(program, trained[i])) return true;
    return fused_attention && !tiled && !strcmp(program, "flash_attention");
}

clformer_status cf_programs_prepare_ops(cf_ctx *ctx, bool fused_attention)
{
    if (ctx->ops_prepared[fused_attention]) return CLFORMER_OK;
    static const char *const programs[] = {
#define CF_KERNEL_PROGRAM(id, program, kernel, kinds) program,
        CF_KERNEL_LIST(CF_KERNEL_PROGRAM)
#undef CF_KERNEL_PROGRAM
    };
    const char *names[sizeof programs / sizeof *programs];
    size_t n = 0;
    for (size_t i = 0; i < sizeof programs / sizeof *programs; i++)
        if (training_runs(programs[i], fused_attention, ctx->device_profile.tiled_attention))
            names[n++] = programs[i];
    CF_TRY(cf_programs_prepare(ctx, names, n, 0));
    ctx->ops_prepared[fused_attention] = true;
    return CLFORMER_OK;
}
