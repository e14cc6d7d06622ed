/*
 * Writing programs to the on-disk cache when the context is freed, not when
 * they are built.
 *
 * Asking a driver for a program's binary can cost far more than building
 * it: PoCL compiles every kernel of the program once more then (for any
 * work-group size), serialised with the compiles the run itself needs. That
 * was half of the demo's first training step on a cold machine, and done
 * in a background thread it only moved the wait to the second step. So a
 * program built from source is queued here and written when the work is
 * over: clformer_context_free writes the queue (cf_cache_write_deferred).
 */
#include "program.h"

#include <stdlib.h>
#include <string.h>

struct cf_deferred_store {
    cf_cache_key key;
    cl_program program; /* retained until written */
    struct cf_deferred_store *next;
};

void cf_cache_defer(cf_ctx *ctx, cf_cache_key *key, cl_program program)
{
    if (!key->path) return; /* caching is off */
    struct cf_deferred_store *d = calloc(1, sizeof *d);
    if (!d) return;         /* not cached this time: the next run tries again */
    d->key = *key;
    memset(key, 0, sizeof *key); /* the queue owns it now */
    clRetainProgram(program);
    d->program = program;
    d->next = ctx->deferred_stores;
    ctx->deferred_stores = d;
}

size_t cf_cache_deferred_count(const cf_ctx *ctx)
{
    size_t n = 0;
    for (const struct cf_deferred_store *d = ctx->deferred_stores; d; d = d->next) n++;
    return n;
}

void cf_cache_write_deferred(cf_ctx *ctx)
{
    bool warned = false;
    const size_t total = cf_cache_deferred_count(ctx);
    if (total && ctx->progress) ctx->progress("saving compiled kernels", 0, total, ctx->progress_user);
    for (size_t done = 1; ctx->deferred_stores; done++) {
        struct cf_deferred_store *d = ctx->deferred_stores;
        ctx->deferred_stores = d->next;
        char reason[1024];
        if (!cf_cache_store(&d->key, d->program, reason, sizeof reason) && !warned) {
            cf_log(&ctx->log, CF_LOG_WARN, "%s", reason);
            warned = true; /* one line for a cache directory that refuses every file */
        }
        clReleaseProgram(d->program);
        cf_cache_key_free(&d->key);
        free(d);
        if (ctx->progress) ctx->progress("saving compiled kernels", done, total, ctx->progress_user);
    }
}
