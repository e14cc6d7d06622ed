/*
 * Timing every candidate set, and the tiled kernel, on one shape
 * (cf_gs_time_class), on scratch buffers of random numbers: never the
 * caller's operands, whose output a timing loop would overwrite or
 * accumulate into.
 */
#include "gemm_search_record.h"
#include "buffer.h"
#include "clock.h"
#include "gemm_provider.h"

#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest operand timed, in floats (256 MiB): a larger product is timed
 * on a slice of it (its batch, then its largest dimension halved), as
 * fast per FLOP and kinder to the device's memory. */
#define SCRATCH_FLOATS ((size_t)64 << 20)

typedef struct {
    bool strided, ta, tb;
    int tiled_set; /* >= 0: run clformer's tiled kernel with this tile set, not CLBlast */
    size_t m, n, k, batch;
    float alpha, beta;
    cl_mem a, b, c, c0; /* c0: C before the call, copied into c before each checked run */
    size_t na, nb, nc;
} shape;

static size_t biggest(const shape *s)
{
    size_t x = s->m * s->k > s->k * s->n ? s->m * s->k : s->k * s->n;
    return (x > s->m * s->n ? x : s->m * s->n) * s->batch;
}

static void shrink(shape *s, uint64_t max_alloc)
{
    size_t cap = SCRATCH_FLOATS;
    if (max_alloc && max_alloc / 4 < cap) cap = (size_t)(max_alloc / 4);
    while (biggest(s) > cap) {
        if (s->batch > 1) s->batch = (s->batch + 1) / 2;
        else if (s->m >= s->n && s->m >= s->k) s->m = (s->m + 1) / 2;
        else if (s->n >= s->k) s->n = (s->n + 1) / 2;
        else s->k = (s->k + 1) / 2;
    }
}

static CLBlastTranspose tr(bool t) { return t ? CLBlastTransposeYes : CLBlastTransposeNo; }

/* One call of the tiled kernel; nonzero on failure (its error cleared). */
static int run_tiled(cf_ctx *ctx, const shape *s, size_t lda, size_t ldb, size_t ldc)
{
    const cf_gemm_call g = {.trans_a = s->ta, .trans_b = s->tb, .m = s->m, .n = s->n,
                            .k = s->k, .batch = s->batch, .a = s->a, .b = s->b, .c = s->c,
                            .lda = lda, .ldb = ldb, .ldc = ldc, .a_stride = s->m * s->k,
                            .b_stride = s->k * s->n, .c_stride = s->m * s->n,
                            .alpha = s->alpha, .beta = s->beta};
    if (cf_gemm_tiled_with(ctx, &g, s->tiled_set) == CLFORMER_OK) return 0;
    cf_log(&ctx->log, CF_LOG_DEBUG, "gemm search: tiled kernel: %s", clformer_last_error());
    cf_clear_error();
    return -1;
}

/* One call on the scratch operands, tightly packed, as the provider makes it. */
static int run(cf_ctx *ctx, const shape *s)
{
    const size_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n, ldc = s->n;
    if (s->tiled_set >= 0) return run_tiled(ctx, s, lda, ldb, ldc);
    if (!s->strided)
        return CLBlastSgemm(CLBlastLayoutRowMajor, tr(s->ta), tr(s->tb), s->m, s->n, s->k,
                            s->alpha, s->a, 0, lda, s->b, 0, ldb, s->beta, s->c, 0, ldc,
                            &ctx->queue, NULL);
    return CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, tr(s->ta), tr(s->tb), s->m, s->n,
                                      s->k, s->alpha, s->a, 0, lda, s->m * s->k, s->b, 0, ldb,
                                      s->k * s->n, s->beta, s->c, 0, ldc, s->m * s->n, s->batch,
                                      &ctx->queue, NULL);
}

static bool finish(cf_ctx *ctx) { return clFinish(ctx->queue) == CL_SUCCESS; }

/* Uniform in [-1, 1) from a 64-bit LCG: the same operands every time. */
static clformer_status random_fill(cf_ctx *ctx, cl_mem buf, size_t n, uint64_t seed)
{
    float *host = malloc(n * sizeof *host);
    if (!host) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        host[i] = (float)(seed >> 40) / 8388608.0f - 1.0f;
    }
    clformer_status st = cf_upload(ctx, buf, 0, host, n);
    free(host);
    return st;
}

static clformer_status alloc_operands(cf_ctx *ctx, shape *s)
{
    s->na = s->m * s->k * s->batch, s->nb = s->k * s->n * s->batch, s->nc = s->m * s->n * s->batch;
    CF_TRY(cf_buffer_alloc(ctx, s->na, "GEMM search A", &s->a));
    CF_TRY(cf_buffer_alloc(ctx, s->nb, "GEMM search B", &s->b));
    CF_TRY(cf_buffer_alloc(ctx, s->nc, "GEMM search C", &s->c));
    CF_TRY(cf_buffer_alloc(ctx, s->nc, "GEMM search C (initial)", &s->c0));
    CF_TRY(random_fill(ctx, s->a, s->na, 1));
    CF_TRY(random_fill(ctx, s->b, s->nb, 2));
    return random_fill(ctx, s->c0, s->nc, 3);
}

static void free_operands(cf_ctx *ctx, shape *s)
{
    cl_mem *bufs[] = {&s->a, &s->b, &s->c, &s->c0};
    for (size_t i = 0; i < 4; i++)
        if (*bufs[i]) cf_buffer_free(ctx, *bufs[i]), *bufs[i] = NULL;
}

/* C from its initial values through one call, into `out`. */
static bool checked_run(cf_ctx *ctx, const shape *s, float *out, int *clblast_status)
{
    *clblast_status = 0;
    if (cf_copy(ctx, s->c0, 0, s->c, 0, s->nc) != CLFORMER_OK) return false;
    if ((*clblast_status = run(ctx, s)) != 0) return false;
    return cf_download(ctx, s->c, 0, out, s->nc) == CLFORMER_OK;
}

/* Seconds per call: after the checked run (which compiled the set), one call
 * to size the loop, then the faster of two loops of ~seconds_per_set / 2. */
static double seconds_per_call(cf_ctx *ctx, const shape *s, double budget)
{
    double t0 = cf_now_s();
    if (run(ctx, s) != 0 || !finish(ctx)) return -1.0;
    const double one = cf_now_s() - t0;
    size_t reps = one > 0 ? (size_t)(budget / 2 / one) : 64;
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    double best = one;
    for (int round = 0; round < 2; round++) {
        t0 = cf_now_s();
        for (size_t i = 0; i < reps; i++)
            if (run(ctx, s) != 0) return -1.0;
        if (!finish(ctx)) return -1.0;
        const double t = (cf_now_s() - t0) / (double)reps;
        if (t < best) best = t;
    }
    return best;
}

/* The order sets are timed in: first the set CLBlast's own sets send this
 * shape to (its result is the one every other set must give: the numbers
 * without the search), then CLBlast's other own set, so that the sets
 * without the search always have times, then the candidates, the tiled
 * kernel's tile sets last. */
static size_t order(const cf_gs_record *r, const cf_gs_class *c, size_t *out)
{
    const double own_cut = (double)r->own_switch * r->own_switch * r->own_switch;
    const bool own_direct = (double)c->m * c->n * c->k < own_cut;
    size_t n = 0;
    out[n++] = own_direct ? r->nx : 0;
    out[n++] = own_direct ? 0 : r->nx;
    for (size_t i = 1; i < r->nx; i++) out[n++] = i;
    for (size_t i = r->nx + 1; i < r->nx + r->nd; i++) out[n++] = i;
    for (size_t i = cf_gs_tiled_slot(r); i < cf_gs_slots(r); i++) out[n++] = i;
    return n;
}

static const char *slot_kind(const cf_gs_record *r, size_t slot)
{
    return slot < r->nx ? "Xgemm set" : slot < r->nx + r->nd ? "XgemmDirect set" : "tiled kernel";
}

static void leave_out(cf_ctx *ctx, cf_gs_record *r, cf_gs_class *c, size_t set, const char *why)
{
    c->ms[set] = -1.0f;
    if (!r->left_out[set])
        cf_log(&ctx->log, CF_LOG_INFO, "gemm search: %s '%s' (%s) left out on this device: %s",
               slot_kind(r, set), r->sets[set], r->origin[set], why);
    r->left_out[set] = true;
}

/* Times the sets in order(); false when the first (the reference) failed. */
static bool time_sets(cf_ctx *ctx, cf_gs_record *r, cf_gs_class *c, shape *s,
                      float *ref, float *out, double start)
{
    const cf_gemm_search_limits lim = cf_gemm_search_get_limits();
    char what[96];
    snprintf(what, sizeof what, "tuning GEMM %ux%ux%u%s", c->m, c->n, c->k,
             c->strided ? " batched" : "");
    size_t sets[CF_GS_SLOTS];
    const size_t n = order(r, c, sets);
    if (ctx->progress) ctx->progress(what, 0, n, ctx->progress_user);
    size_t done = 0;
    double timing = 0.0; /* the timing loops' seconds: compiles do not count per shape */
    for (; done < n; done++) {
        const size_t set = sets[done];
        const double spent = cf_now_s() - start;
        if (done && (timing > lim.class_seconds || r->spent_s + spent > lim.budget_seconds)) break;
        if (ctx->progress && done) ctx->progress(what, done, n, ctx->progress_user);
        if (r->left_out[set] && done) {
            c->ms[set] = -1.0f;
            continue;
        }
        const bool direct = set >= r->nx;
        const bool tiled = set >= cf_gs_tiled_slot(r);
        s->tiled_set = tiled ? r->tiled_set[set - cf_gs_tiled_slot(r)] : -1;
        /* the switch sends every product to the CLBlast kernel being timed */
        int status = 0;
        const bool ran = (tiled || cf_gs_apply(ctx, r, direct ? 0 : (int)set,
                                                  direct ? (int)set : (int)r->nx,
                                                  direct ? CF_GS_ALL_DIRECT : 1)) &&
                         checked_run(ctx, s, done ? out : ref, &status);
        if (!ran && !done) return false;
        if (!ran) {
            char why[96];
            snprintf(why, sizeof why, "its call failed (%s status %d)",
                     tiled ? "clformer" : "CLBlast", status);
            cf_clear_error();
            leave_out(ctx, r, c, set, why);
            continue;
        }
        if (done && memcmp(ref, out, s->nc * sizeof *out) != 0) {
            leave_out(ctx, r, c, set, "it rounds differently from CLBlast's own sets");
            continue;
        }
        const double t0 = cf_now_s();
        const double t = seconds_per_call(ctx, s, lim.seconds_per_set);
        timing += cf_now_s() - t0;
        if (t <= 0) leave_out(ctx, r, c, set, "its timed calls failed");
        else c->ms[set] = (float)(1e3 * t) > 0 ? (float)(1e3 * t) : 1e-6f;
        cf_log(&ctx->log, CF_LOG_DEBUG, "gemm search: %s: %s %zu: %.4f ms", what,
               slot_kind(r, set), direct ? set - r->nx : set, 1e3 * t);
    }
    s->tiled_set = -1;
    c->timed = done == n;
    if (ctx->progress) ctx->progress(what, n, n, ctx->progress_user);
    return true;
}

void cf_gs_time_class(cf_ctx *ctx, cf_gs_record *r, cf_gs_class *c, float alpha, float beta)
{
    const double start = cf_now_s();
    shape s = {.strided = c->strided, .ta = c->ta, .tb = c->tb, .tiled_set = -1, .m = c->m,
               .n = c->n, .k = c->k, .batch = c->batch, .alpha = alpha, .beta = beta};
    shrink(&s, ctx->info.max_alloc_bytes);
    float *ref = NULL, *out = NULL;
    clformer_status st = alloc_operands(ctx, &s);
    if (st == CLFORMER_OK) {
        ref = malloc(s.nc * sizeof *ref);
        out = malloc(s.nc * sizeof *out);
        if (!ref || !out) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if (st == CLFORMER_OK && !time_sets(ctx, r, c, &s, ref, out, start))
        st = cf_fail(CLFORMER_ERR_CLBLAST, "CLBlast's own sets failed on it");
    if (st != CLFORMER_OK) {
        cf_log(&ctx->log, CF_LOG_WARN, "gemm search: %ux%ux%u not timed: %s", c->m, c->n, c->k,
               clformer_last_error());
        cf_clear_error();
        c->untimable = true;
    }
    free(ref);
    free(out);
    free_operands(ctx, &s);
    cf_finish(ctx);
    cf_clear_error();
    cf_gs_apply(ctx, r, r->want_x, r->want_d, r->want_switch);
    const double took = cf_now_s() - start;
    r->spent_s += took;
    if (c->timed) {
        int best = 0;
        for (size_t i = 1; i < r->nx + r->nd; i++)
            if (c->ms[i] > 0 && (c->ms[best] <= 0 || c->ms[i] < c->ms[best])) best = (int)i;
        char tiled_text[160] = "";
        for (size_t i = cf_gs_tiled_slot(r), at = 0; i < cf_gs_slots(r); i++) {
            const cf_gemm_tiles *t = &cf_gemm_tile_sets[r->tiled_set[i - cf_gs_tiled_slot(r)]];
            const int n = c->ms[i] > 0 ? snprintf(tiled_text + at, sizeof tiled_text - at,
                                                  ", tiled %dx%d %.3f ms", t->gm, t->gn,
                                                  (double)c->ms[i])
                                       : snprintf(tiled_text + at, sizeof tiled_text - at,
                                                  ", tiled %dx%d left out", t->gm, t->gn);
            if (n < 0 || (size_t)n >= sizeof tiled_text - at) break;
            at += (size_t)n;
        }
        cf_log(&ctx->log, CF_LOG_INFO, "gemm search: %s%s%s %ux%ux%u x%u in %.1f s: fastest %s "
               "set %d %.3f ms, CLBlast's own %.3f ms (Xgemm) / %.3f ms (direct)%s",
               c->strided ? "batched " : "", c->ta ? "T" : "N", c->tb ? "T" : "N", c->m, c->n,
               c->k, c->batch, took, best < (int)r->nx ? "Xgemm" : "XgemmDirect",
               best < (int)r->nx ? best : best - (int)r->nx, c->ms[best], c->ms[0], c->ms[r->nx],
               tiled_text);
    }
}
