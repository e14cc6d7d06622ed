/*
 * The attention tile search (attention_search.h): the candidates, their
 * timing on a trial call, and the file that keeps each head size's choice.
 */
#include "attention_search.h"
#include "attention_trial.h"
#include "clock.h"
#include "door.h"
#include "fileio.h"
#include "fnv1a.h"
#include "program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cf_attention_search_limits limits = {16, 8, 1024, 5, false, false, 0};

cf_attention_search_limits cf_attention_search_get_limits(void) { return limits; }

void cf_attention_search_set_limits(const cf_attention_search_limits *l) { limits = *l; }

/* ------------------------------------------------------------------------- */
/* Tiles as text                                                             */
/* ------------------------------------------------------------------------- */

void cf_attention_tiles_spec(const cf_attention_tiles *t, char *out, size_t cap)
{
    snprintf(out, cap, "fwd=%ux%ux%ux%u,dq=%ux%ux%ux%u,dkv=%ux%ux%ux%u", t->fwd_rows,
             t->fwd_split, t->fwd_keys, t->fwd_per_item, t->dq_rows, t->dq_split, t->dq_keys,
             t->dq_per_item, t->dkv_keys, t->dkv_split, t->dkv_rows, t->dkv_per_item);
}

bool cf_attention_tiles_parse(const char *spec, unsigned head_dim, cf_attention_tiles *t)
{
    int used = -1;
    memset(t, 0, sizeof *t);
    t->head_dim = head_dim;
    return sscanf(spec, "fwd=%ux%ux%ux%u,dq=%ux%ux%ux%u,dkv=%ux%ux%ux%u%n", &t->fwd_rows,
                  &t->fwd_split, &t->fwd_keys, &t->fwd_per_item, &t->dq_rows, &t->dq_split,
                  &t->dq_keys, &t->dq_per_item, &t->dkv_keys, &t->dkv_split, &t->dkv_rows,
                  &t->dkv_per_item, &used) == 12 &&
           used >= 0 && spec[used] == '\0';
}

/* ------------------------------------------------------------------------- */
/* Candidates                                                                */
/* ------------------------------------------------------------------------- */

enum { FWD, DQ, DKV, KERNELS };
static const char *const kernel_names[KERNELS] = {"forward", "dQ", "dK/dV"};

/* Kernel k's rows a group owns (dK/dV: keys) and rows an item holds. */
static unsigned *rows_of(cf_attention_tiles *t, int k)
{
    return k == FWD ? &t->fwd_rows : k == DQ ? &t->dq_rows : &t->dkv_keys;
}
static unsigned *per_item_of(cf_attention_tiles *t, int k)
{
    return k == FWD ? &t->fwd_per_item : k == DQ ? &t->dq_per_item : &t->dkv_per_item;
}

/* Whether b sums as a does: the same head size, splits and streamed tiles
 * (what the search varies, rows, changes no sum's order). */
static bool sums_alike(const cf_attention_tiles *a, const cf_attention_tiles *b)
{
    return a->head_dim == b->head_dim && a->fwd_split == b->fwd_split &&
           a->fwd_keys == b->fwd_keys && a->dq_split == b->dq_split && a->dq_keys == b->dq_keys &&
           a->dkv_split == b->dkv_split && a->dkv_rows == b->dkv_rows;
}

static unsigned *split_of(cf_attention_tiles *t, int k)
{
    return k == FWD ? &t->fwd_split : k == DQ ? &t->dq_split : &t->dkv_split;
}

/* Kernel k's variations of `base` that the device runs, besides base:
 * its rows halved, kept or doubled, one or two an item (and, for tests,
 * its rows split over twice the items). */
#define MAX_VARIATIONS 7
static size_t variations(const cf_ctx *ctx, const cf_attention_tiles *base, int k,
                         cf_attention_tiles out[MAX_VARIATIONS])
{
    static const unsigned num[3] = {1, 1, 2}, den[3] = {2, 1, 1};
    size_t n = 0;
    cf_attention_tiles b = *base;
    const unsigned rows = *rows_of(&b, k);
    const size_t most = limits.max_variations ? limits.max_variations : MAX_VARIATIONS;
    for (int r = 0; r < 3; r++) {
        if (rows * num[r] % den[r]) continue;
        for (unsigned per = 1; per <= 2 && n < most; per++) {
            cf_attention_tiles c = b;
            *rows_of(&c, k) = rows * num[r] / den[r];
            *per_item_of(&c, k) = per;
            const char *why;
            if (!memcmp(&c, &b, sizeof c) || !cf_attention_tiles_fit(&ctx->device_profile, &c, &why))
                continue;
            out[n++] = c;
        }
    }
    cf_attention_tiles c = b;
    *split_of(&c, k) *= 2;
    *rows_of(&c, k) /= 2;
    const char *why;
    if (limits.vary_split && *rows_of(&c, k) && cf_attention_tiles_fit(&ctx->device_profile, &c, &why))
        out[n++] = c;
    return n;
}

/* ------------------------------------------------------------------------- */
/* Timing                                                                    */
/* ------------------------------------------------------------------------- */

typedef struct {
    cf_attention_trial trial;
    float *host;       /* one tensor's floats, for the outputs' hashes */
    uint64_t want[2];  /* the profile's outputs' hashes: forward (O, row
                          statistics), backward (dQ, dK, dV) */
    const char *what;  /* progress: "tuning attention tiles, head size D" */
    size_t done, total;
} search_state;

static clformer_status run_pass(cf_ctx *ctx, const search_state *s, bool backward)
{
    return backward ? cf_attention_trial_backward(ctx, &s->trial)
                    : cf_attention_trial_forward(ctx, &s->trial);
}

/* A hash of the pass's outputs, as the device left them. */
static clformer_status outputs_hash(cf_ctx *ctx, search_state *s, bool backward, uint64_t *h)
{
    static const int forward_outs[] = {CF_TRIAL_O, CF_TRIAL_STATS};
    static const int backward_outs[] = {CF_TRIAL_DQ, CF_TRIAL_DK, CF_TRIAL_DV};
    const int *outs = backward ? backward_outs : forward_outs;
    const size_t n_outs = backward ? 3 : 2;
    const size_t rows = s->trial.shape.B * s->trial.shape.H * s->trial.shape.Tq;
    *h = CF_FNV1A_INIT;
    for (size_t i = 0; i < n_outs; i++) {
        const size_t n = outs[i] == CF_TRIAL_STATS ? 2 * rows : s->trial.n;
        CF_TRY(cf_download(ctx, s->trial.buf[outs[i]], 0, s->host, n));
        *h = cf_fnv1a(*h, s->host, n * sizeof *s->host);
    }
    return CLFORMER_OK;
}

/* Kernel k's pass with tiles t: a call that compiles and warms up, whose
 * outputs become the ones to give (`reference`: the profile's tiles) or
 * must equal them (else *differs), then limits.calls timed calls; *ms the
 * fastest. */
static clformer_status time_set(cf_ctx *ctx, search_state *s, const cf_attention_tiles *t, int k,
                                bool reference, double *ms, bool *differs)
{
    const bool backward = k != FWD;
    ctx->forced_tiles = *t;
    CF_TRY(run_pass(ctx, s, backward));
    uint64_t h;
    CF_TRY(outputs_hash(ctx, s, backward, &h));
    if (reference) s->want[backward] = h;
    *differs = h != s->want[backward];
    *ms = 0;
    for (unsigned c = 0; c < limits.calls && !*differs; c++) {
        const double t0 = cf_now_s();
        CF_TRY(run_pass(ctx, s, backward));
        CF_TRY(cf_finish(ctx));
        const double dt = 1e3 * (cf_now_s() - t0);
        if (c == 0 || dt < *ms) *ms = dt;
    }
    return CLFORMER_OK;
}

static void progress(cf_ctx *ctx, search_state *s)
{
    if (ctx->progress) ctx->progress(s->what, s->done, s->total, ctx->progress_user);
}

/* The profile's tiles timed, then each kernel's variations of the best so
 * far, kernel by kernel. */
static clformer_status search_kernels(cf_ctx *ctx, search_state *s, cf_attention_tiles *best,
                                      double before[KERNELS], double after[KERNELS])
{
    double ms[2];
    bool differs;
    /* the profile's bits: the forward first, whose outputs the backward reads */
    CF_TRY(time_set(ctx, s, best, FWD, true, &ms[0], &differs));
    CF_TRY(time_set(ctx, s, best, DQ, true, &ms[1], &differs));
    s->done++;
    progress(ctx, s);
    for (int k = 0; k < KERNELS; k++) {
        if (k == DQ) { /* the backward reads the forward's O and statistics: the
                          profile's bits again, not a set left out's */
            ctx->forced_tiles = *best;
            CF_TRY(run_pass(ctx, s, false));
        }
        double best_ms = ms[k != FWD];
        before[k] = best_ms;
        cf_attention_tiles c[MAX_VARIATIONS];
        const size_t n = variations(ctx, best, k, c);
        cf_attention_tiles chosen = *best;
        for (size_t i = 0; i < n; i++, s->done++, progress(ctx, s)) {
            double t;
            CF_TRY(time_set(ctx, s, &c[i], k, false, &t, &differs));
            if (differs) {
                char spec[128];
                cf_attention_tiles_spec(&c[i], spec, sizeof spec);
                cf_log(&ctx->log, CF_LOG_WARN, "attention tile search: %s left out: its %s "
                       "differs from the profile's tiles' in the last bits", spec,
                       kernel_names[k]);
                ctx->attention_search.rejected++;
            } else if (t < best_ms * (1.0 - CF_ATTENTION_SEARCH_GAIN) ||
                       (limits.prefer_variations && !memcmp(&chosen, best, sizeof chosen))) {
                best_ms = t;
                chosen = c[i];
            }
        }
        *best = chosen;
        after[k] = best_ms;
        if (k == DQ) ms[1] = best_ms; /* dK/dV's variations run with the dQ chosen */
    }
    return CLFORMER_OK;
}

/* Heads of the shape timed: limits' batch x heads, at most 4 a compute
 * unit (with 1,024 queries, 32 groups of 128 rows a compute unit: enough
 * to fill a GPU's, and a CPU device is not kept for minutes), halved while
 * a tensor of them is larger than the device's largest buffer. */
static size_t trial_heads(const cf_ctx *ctx, size_t dh)
{
    size_t heads = limits.batch * limits.heads;
    const size_t by_units = 4 * (size_t)(ctx->info.compute_units ? ctx->info.compute_units : 1);
    if (by_units < heads) heads = by_units;
    while (heads > 1 && (uint64_t)heads * limits.len * dh * sizeof(float) >
                            ctx->device_profile.max_alloc_bytes)
        heads /= 2;
    return heads;
}

/* Times the profile's tiles t and their variations; *t becomes the choice. */
static clformer_status run_search(cf_ctx *ctx, cf_attention_tiles *t, double before[KERNELS],
                                  double after[KERNELS])
{
    char what[64];
    snprintf(what, sizeof what, "tuning attention tiles, head size %u", t->head_dim);
    search_state s = {.what = what};
    cf_attention_tiles c[MAX_VARIATIONS];
    s.total = 1;
    for (int k = 0; k < KERNELS; k++) s.total += variations(ctx, t, k, c);
    const size_t heads = trial_heads(ctx, t->head_dim);
    CF_TRY(cf_attention_trial_make(ctx, 1, heads, limits.len, t->head_dim, false,
                                   0x5eed0a77e4710ull, &s.trial));
    clformer_status st = CLFORMER_OK;
    if (!(s.host = malloc(s.trial.n * sizeof *s.host)))
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "attention tile search: no host memory");
    progress(ctx, &s);
    if (st == CLFORMER_OK) st = search_kernels(ctx, &s, t, before, after);
    free(s.host);
    cf_attention_trial_free(ctx, &s.trial);
    return st;
}

/* ------------------------------------------------------------------------- */
/* The file                                                                  */
/* ------------------------------------------------------------------------- */

#define FORMAT "clformer attention tile search, format 1\n"

/* The header, which says what the file's choices hold for; false when the
 * kernels' source cannot be read. */
static bool make_header(const cf_ctx *ctx, size_t dh, char *out, size_t cap)
{
    char *source = NULL;
    if (cf_program_source(ctx->kernel_dir, "flash_attention_tiled", &source) != CLFORMER_OK) {
        cf_clear_error();
        return false;
    }
    const uint64_t h = cf_fnv1a(CF_FNV1A_INIT, source, strlen(source));
    free(source);
    const int n = snprintf(out, cap,
                           FORMAT "platform %s\ndevice %s\ndriver %s\nsource %016llx\n"
                                  "shape %zu heads x %zu, %u calls\n",
                           ctx->info.platform, ctx->info.name, ctx->info.driver_version,
                           (unsigned long long)h, trial_heads(ctx, dh), limits.len,
                           limits.calls);
    return n > 0 && (size_t)n < cap;
}

static bool file_path(const cf_ctx *ctx, const char *header, char *out, size_t cap)
{
    if (!ctx->cache_dir) return false;
    const int n = snprintf(out, cap, "%s/attention-%016llx.txt", ctx->cache_dir,
                           (unsigned long long)cf_fnv1a(CF_FNV1A_INIT, header, strlen(header)));
    return n > 0 && (size_t)n < cap;
}

bool cf_attention_search_line(const clformer_device_profile *p, const char *line,
                              const cf_attention_tiles *t, cf_attention_tiles *choice)
{
    unsigned dh;
    char profile[128], chosen[128], want[128];
    if (sscanf(line, "head %u profile %127s chosen %127s", &dh, profile, chosen) != 3 ||
        dh != t->head_dim)
        return false;
    cf_attention_tiles_spec(t, want, sizeof want);
    const char *why;
    return !strcmp(profile, want) && cf_attention_tiles_parse(chosen, dh, choice) &&
           sums_alike(t, choice) && cf_attention_tiles_fit(p, choice, &why);
}

static bool read_choice(cf_ctx *ctx, const char *path, const char *header,
                        const cf_attention_tiles *t, cf_attention_tiles *choice)
{
    char *body = cf_read_cache_body(path, header);
    bool found = false;
    for (char *save = NULL, *line = body ? strtok_r(body, "\n", &save) : NULL; line && !found;
         line = strtok_r(NULL, "\n", &save))
        found = cf_attention_search_line(&ctx->device_profile, line, t, choice);
    free(body);
    return found;
}

/* Writes the file again with head size t->head_dim's line `line` in place
 * of any it had (the other head sizes' lines kept). */
static void save_choice(cf_ctx *ctx, const char *path, const char *header, unsigned dh,
                        const char *line)
{
    char *body = cf_read_cache_body(path, header);
    const size_t cap = strlen(header) + (body ? strlen(body) : 0) + strlen(line) + 2;
    char *text = malloc(cap);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "head %u ", dh);
    size_t len = 0;
    if (text) {
        len += (size_t)snprintf(text, cap, "%s", header);
        for (char *save = NULL, *l = body ? strtok_r(body, "\n", &save) : NULL; l;
             l = strtok_r(NULL, "\n", &save))
            if (strncmp(l, prefix, strlen(prefix)) != 0)
                len += (size_t)snprintf(text + len, cap - len, "%s\n", l);
        len += (size_t)snprintf(text + len, cap - len, "%s\n", line);
    }
    const bool ok = text && cf_make_dirs(ctx->cache_dir) == CLFORMER_OK &&
                    cf_write_cache_file(path, text, len) == CLFORMER_OK;
    if (!ok)
        cf_log(&ctx->log, CF_LOG_WARN, "attention tile search: cannot write %s: %s (the tiles "
               "are timed again next run; CLFORMER_CACHE_DIR chooses another directory)", path,
               text ? clformer_last_error() : "no host memory");
    cf_clear_error();
    free(text);
    free(body);
}

/* ------------------------------------------------------------------------- */
/* The choice                                                                */
/* ------------------------------------------------------------------------- */

/* Runs the search with the context's state kept aside: the tiles a check
 * forced, profiling, the storage precision a session's pass set, and the
 * launch counters, which say what the ops ran (checks and bench read them:
 * a backward by GEMMs must launch no fused kernel). */
static bool searched(cf_ctx *ctx, cf_attention_tiles *t, double before[KERNELS],
                     double after[KERNELS])
{
    uint64_t launches[CF_K_COUNT];
    memcpy(launches, ctx->kernel_launches, sizeof launches);
    const cf_attention_tiles forced = ctx->forced_tiles;
    const bool profiling = ctx->profiling;
    const clformer_precision precision = ctx->precision;
    ctx->profiling = false;
    ctx->precision = CLFORMER_FP32;
    const cf_attention_tiles profile = *t;
    const clformer_status st = run_search(ctx, t, before, after);
    ctx->forced_tiles = forced;
    ctx->profiling = profiling;
    ctx->precision = precision;
    memcpy(ctx->kernel_launches, launches, sizeof launches);
    if (st != CLFORMER_OK) {
        *t = profile;
        cf_log(&ctx->log, CF_LOG_WARN, "attention tile search at head size %u: %s; the "
               "profile's tiles run", profile.head_dim, clformer_last_error());
        cf_clear_error();
        return false;
    }
    return true;
}

static void remember(cf_ctx *ctx, const cf_attention_tiles *t, bool was_searched)
{
    cf_attention_search_state *as = &ctx->attention_search;
    if (as->n == CF_ATTENTION_HEAD_SIZES) return;
    as->chosen[as->n] = *t;
    as->searched[as->n++] = was_searched;
}

void cf_attention_search_tiles(cf_ctx *ctx, cf_attention_tiles *t)
{
    cf_attention_search_state *as = &ctx->attention_search;
    if (!as->on) return;
    for (size_t i = 0; i < as->n; i++)
        if (as->chosen[i].head_dim == t->head_dim) {
            *t = as->chosen[i];
            return;
        }
    if (as->n == CF_ATTENTION_HEAD_SIZES) return; /* nothing left to remember it by */
    char header[2048], path[4096], spec[128];
    const bool have_header = make_header(ctx, t->head_dim, header, sizeof header);
    const bool have_file = have_header && file_path(ctx, header, path, sizeof path);
    cf_attention_tiles choice;
    if (have_file && read_choice(ctx, path, header, t, &choice)) {
        as->from_file++;
        *t = choice;
        remember(ctx, t, true);
        return;
    }
    char profile[128];
    cf_attention_tiles_spec(t, profile, sizeof profile);
    double before[KERNELS] = {0}, after[KERNELS] = {0};
    const bool ok = searched(ctx, t, before, after);
    remember(ctx, t, ok);
    if (!ok) return;
    as->timed++;
    cf_attention_tiles_spec(t, spec, sizeof spec);
    cf_log(&ctx->log, CF_LOG_INFO, "attention tiles at head size %u: %s (the profile's: %s); "
           "forward %.3g -> %.3g ms, dQ and dK/dV %.3g -> %.3g -> %.3g ms",
           t->head_dim, spec, profile, before[FWD], after[FWD], before[DQ], after[DQ],
           after[DKV]);
    if (!have_file) return;
    char line[512];
    snprintf(line, sizeof line, "head %u profile %s chosen %s ms forward %.4g -> %.4g, backward "
             "%.4g -> %.4g -> %.4g", t->head_dim, profile, spec, before[FWD], after[FWD],
             before[DQ], after[DQ], after[DKV]);
    save_choice(ctx, path, header, t->head_dim, line);
}

/* ------------------------------------------------------------------------- */
/* Public                                                                    */
/* ------------------------------------------------------------------------- */

const char *clformer_context_attention_tiles(clformer_context *ctx, size_t head_dim, char *spec,
                                             size_t cap)
{
    cf_attention_tiles t;
    const char *why;
    if (!ctx || !cf_attention_tiles_for(&ctx->device_profile, head_dim, &t, &why)) return NULL;
    const char *how = "profile";
    for (size_t i = 0; i < ctx->attention_search.n; i++)
        if (ctx->attention_search.chosen[i].head_dim == head_dim) {
            t = ctx->attention_search.chosen[i];
            if (ctx->attention_search.searched[i]) how = "searched";
        }
    if (spec && cap) cf_attention_tiles_spec(&t, spec, cap);
    return how;
}
