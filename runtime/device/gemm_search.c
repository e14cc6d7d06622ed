/*
 * The GEMM search's records per device, the hook around CLBlast calls, and
 * the choice of the sets in force (see gemm_search.h).
 */
#include "gemm_search_record.h"
#include "clblast_current.h"
#include "gemm_candidates.h"
#include "gemm_provider.h"
#include "gemm_tuning.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cf_gemm_search_limits limits = {
    .max_xgemm = CF_GEMM_SEARCH_XGEMM,
    .max_direct = CF_GEMM_SEARCH_DIRECT,
    .min_fma = 16777216.0, /* 256^3: ~1 us of a current GPU's fp32 peak, below a launch */
    .budget_seconds = 120.0,
    .class_seconds = 20.0,
    .seconds_per_set = 0.02,
};

cf_gemm_search_limits cf_gemm_search_get_limits(void) { return limits; }
void cf_gemm_search_set_limits(const cf_gemm_search_limits *l) { limits = *l; }

/* The records, one per device; the list's lock guards the list only. */
static cf_gs_record *records;
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;

static cf_gs_record *record_of(cl_device_id device)
{
    pthread_mutex_lock(&records_lock);
    cf_gs_record *r = records;
    while (r && r->device != device) r = r->next;
    pthread_mutex_unlock(&records_lock);
    return r;
}

uint32_t cf_gs_size_class(size_t x)
{
    uint64_t p = 1;
    while (p < x) {
        if (p >= 2 && p + p / 2 >= x) return (uint32_t)(p + p / 2);
        p *= 2;
    }
    return (uint32_t)p;
}

cf_gs_class *cf_gs_find(cf_gs_record *r, const cf_gs_class *key)
{
    for (size_t i = 0; i < r->n_classes; i++) {
        cf_gs_class *c = &r->classes[i];
        if (c->strided == key->strided && c->ta == key->ta && c->tb == key->tb &&
            c->mc == key->mc && c->nc == key->nc && c->kc == key->kc && c->bc == key->bc)
            return c;
    }
    return NULL;
}

cf_gs_class *cf_gs_add(cf_gs_record *r, const cf_gs_class *key)
{
    if (r->n_classes == r->cap_classes) {
        size_t cap = r->cap_classes ? 2 * r->cap_classes : 32;
        cf_gs_class *grown = realloc(r->classes, cap * sizeof *grown);
        if (!grown) return NULL;
        r->classes = grown;
        r->cap_classes = cap;
    }
    r->classes[r->n_classes] = *key;
    return &r->classes[r->n_classes++];
}

/* ------------------------------------------------------------------------- */
/* Applying sets                                                              */
/* ------------------------------------------------------------------------- */

static bool override(cf_ctx *ctx, const char *kernel, const char *params)
{
    if (cf_clblast_override(ctx, kernel, params) == CLFORMER_OK) return true;
    cf_log(&ctx->log, CF_LOG_WARN, "gemm search: CLBlast refused %s parameters '%s': %s", kernel,
           params, clformer_last_error());
    cf_clear_error();
    return false;
}

bool cf_gs_apply(cf_ctx *ctx, cf_gs_record *r, int x, int d, size_t sw)
{
    bool ok = true;
    if (!r->cur_known || r->cur_x != x) ok = override(ctx, "Xgemm", r->sets[x]) && ok;
    if (!r->cur_known || r->cur_d != d) ok = override(ctx, "XgemmDirect", r->sets[d]) && ok;
    if (!r->cur_known || r->cur_switch != sw) {
        char text[64];
        snprintf(text, sizeof text, "XGEMM_MIN_INDIRECT_SIZE=%zu", sw);
        ok = override(ctx, "GemmRoutine", text) && ok;
    }
    cf_log(&ctx->log, CF_LOG_DEBUG, "gemm search: sets Xgemm %d, XgemmDirect %d, switch %zu%s", x,
           d - (int)r->nx, sw, ok ? "" : " (refused)");
    r->cur_x = x, r->cur_d = d, r->cur_switch = sw;
    r->cur_known = ok; /* after a refusal, apply everything again next time */
    return ok;
}

/* ------------------------------------------------------------------------- */
/* The choice                                                                 */
/* ------------------------------------------------------------------------- */

/* m*n*k of a class's timed shape: what CLBlast compares with the switch's cube. */
static double volume(const cf_gs_class *c) { return (double)c->m * (double)c->n * (double)c->k; }

/* A class's time per call under (x, d, sw): the set CLBlast then runs it
 * with (0 when that has no time). */
static float clblast_ms(const cf_gs_class *c, int x, int d, size_t sw)
{
    const double cut = (double)sw * (double)sw * (double)sw;
    const float ms = c->ms[volume(c) < cut ? d : x];
    return ms > 0.0f ? ms : 0.0f;
}

/* The tiled kernel's fastest slot on a class and its time, -1 where it has
 * none (not a candidate, left out on the device, or not timed). */
static int tiled_best(const cf_gs_record *r, const cf_gs_class *c, float *ms)
{
    int best = -1;
    *ms = 0.0f;
    for (size_t i = cf_gs_tiled_slot(r); i < cf_gs_slots(r); i++)
        if (!r->left_out[i] && c->ms[i] > 0.0f && (best < 0 || c->ms[i] < *ms))
            best = (int)i, *ms = c->ms[i];
    return best;
}

static float tiled_ms(const cf_gs_record *r, const cf_gs_class *c)
{
    float ms;
    tiled_best(r, c, &ms);
    return ms;
}

/* The tile set (an index of cf_gemm_tile_sets) a class's calls go to under
 * the sets chosen: its fastest, where that beats the set CLBlast would run
 * them with; -1: CLBlast. */
static int tiled_route(const cf_gs_record *r, const cf_gs_class *c)
{
    float t;
    const int slot = tiled_best(r, c, &t);
    if (slot < 0 || c->untimable) return -1;
    const int set = r->tiled_set[slot - (int)cf_gs_tiled_slot(r)];
    if (limits.tiled == CF_GS_TILED_PREFERRED) return set;
    const float own = clblast_ms(c, r->want_x, r->want_d, r->want_switch);
    return own > 0.0f && t < own ? set : -1;
}

/* Whether the search may send this context's calls to the tiled kernel: a
 * context that named CLBlast keeps it, even where another made the record. */
static bool may_route(const cf_ctx *ctx)
{
    return ctx->gemm_auto || limits.tiled >= CF_GS_TILED_ON;
}

/* The weighted time of the shapes in use under (x, d, sw), each on the
 * faster of its CLBlast set and the tiled kernel; INFINITY when a shape
 * would run a set without a time for it. */
static double cost(const cf_gs_record *r, int x, int d, size_t sw)
{
    double sum = 0.0;
    for (size_t i = 0; i < r->n_classes; i++) {
        const cf_gs_class *c = &r->classes[i];
        if (!c->in_use || c->untimable) continue;
        float ms = clblast_ms(c, x, d, sw);
        if (ms <= 0.0f) return INFINITY;
        const float t = tiled_ms(r, c);
        if (t > 0.0f && t < ms) ms = t;
        sum += (double)c->calls * (double)ms;
    }
    return sum;
}

/* The switch values worth trying: CLBlast's own, all-direct, and for each
 * shape the two that put it on either side. Below 32^3 products stay direct
 * whatever the times say: shapes too small to be timed are all there. */
static size_t switches(const cf_gs_record *r, size_t *out, size_t cap)
{
    size_t n = 0;
    out[n++] = r->own_switch;
    out[n++] = CF_GS_ALL_DIRECT;
    for (size_t i = 0; i < r->n_classes && n + 2 <= cap; i++) {
        const cf_gs_class *c = &r->classes[i];
        if (!c->in_use || c->untimable) continue;
        size_t t = (size_t)floor(cbrt(volume(c)));
        while ((double)(t + 1) * (t + 1) * (t + 1) <= volume(c)) t++; /* cbrt's rounding */
        while (t > 1 && (double)t * t * t > volume(c)) t--;
        if (t >= 32) out[n++] = t;   /* c indirect */
        if (t + 1 >= 32) out[n++] = t + 1; /* c direct */
    }
    return n;
}

/* Picks the sets that make the shapes in use fastest; keeps the current
 * ones unless the new ones save more than 3% (each change compiles). */
static void choose(cf_ctx *ctx, cf_gs_record *r)
{
    size_t sw[512];
    const size_t n_sw = switches(r, sw, sizeof sw / sizeof *sw);
    double best = cost(r, r->want_x, r->want_d, r->want_switch);
    const double now = best;
    int bx = r->want_x, bd = r->want_d;
    size_t bs = r->want_switch;
    for (size_t x = 0; x < r->nx; x++) {
        if (r->left_out[x]) continue;
        for (size_t d = r->nx; d < r->nx + r->nd; d++) {
            if (r->left_out[d]) continue;
            for (size_t s = 0; s < n_sw; s++) {
                const double t = cost(r, (int)x, (int)d, sw[s]);
                if (t < best) best = t, bx = (int)x, bd = (int)d, bs = sw[s];
            }
        }
    }
    const double own = cost(r, 0, (int)r->nx, r->own_switch);
    if (!(best < 0.97 * now) || isinf(best)) return;
    r->want_x = bx, r->want_d = bd, r->want_switch = bs;
    r->choices++;
    size_t tiled = 0, used = 0;
    for (size_t i = 0; i < r->n_classes; i++) {
        used += r->classes[i].in_use;
        tiled += r->classes[i].in_use && tiled_route(r, &r->classes[i]) >= 0;
    }
    cf_log(&ctx->log, CF_LOG_INFO,
           "gemm search: Xgemm set %d (%s), XgemmDirect set %d (%s), direct below %zu^3, "
           "%zu of %zu shapes in use on the tiled kernel; %.3f ms for one call of each, with "
           "CLBlast's own sets alone %.3f ms",
           bx, r->origin[bx], bd - (int)r->nx, r->origin[bd], bs, tiled, used, best, own);
}

/* ------------------------------------------------------------------------- */
/* Starting, and the hook                                                     */
/* ------------------------------------------------------------------------- */

static bool own_set(cf_ctx *ctx, const char *kernel, char *out)
{
    if (cf_clblast_current(ctx->device, kernel, out, CF_GS_TEXT) == CLFORMER_OK) return true;
    cf_log(&ctx->log, CF_LOG_WARN, "gemm search off: %s", clformer_last_error());
    cf_clear_error();
    return false;
}

/* CLBlast's current sets first, then the candidates that differ from them. */
static void fill_sets(cf_ctx *ctx, cf_gs_record *r, const char *own_x, const char *own_d)
{
    for (int direct = 0; direct < 2; direct++) {
        const cf_gemm_candidate *found[CF_GS_SETS];
        cf_gemm_candidate given[CF_GS_SETS];
        const cf_gemm_candidate **c = found;
        size_t got;
        const char *const *sets = direct ? limits.direct_sets : limits.xgemm_sets;
        if (sets) {
            got = direct ? limits.n_direct_sets : limits.n_xgemm_sets;
            if (got > CF_GS_SETS) got = CF_GS_SETS;
            for (size_t i = 0; i < got; i++) {
                given[i] = (cf_gemm_candidate){"given by a test", sets[i]};
                found[i] = &given[i];
            }
        } else {
            got = cf_gemm_candidates(ctx, direct, found, CF_GS_SETS);
        }
        const size_t cap = direct ? limits.max_direct : limits.max_xgemm;
        const size_t base = direct ? r->nx : 0;
        const char *own = direct ? own_d : own_x;
        size_t n = 0;
        snprintf(r->sets[base + n], CF_GS_TEXT, "%s", own);
        r->origin[base + n++] = "CLBlast's own for this device";
        for (size_t i = 0; i < got && n < cap && base + n < CF_GS_SETS; i++) {
            if (!strcmp(c[i]->params, own)) continue;
            snprintf(r->sets[base + n], CF_GS_TEXT, "%s", c[i]->params);
            r->origin[base + n++] = sets ? "given by a test" : c[i]->origin;
        }
        if (direct) r->nd = n;
        else r->nx = n;
    }
}

/* The tiled kernel, once per tile set the device runs, as the last slots,
 * where it is a candidate (gemm_search.h): the search measures which set
 * suits a shape (all give the same bits: test_gemm_tiles). A slot's text
 * names the block and the source's hash, so that a file of times made with
 * another cl/gemm.cl is not read. */
static void add_tiled(cf_ctx *ctx, cf_gs_record *r)
{
    r->nt = 0;
    if (limits.tiled == CF_GS_TILED_OFF || !may_route(ctx)) return;
    char id[64];
    if (cf_gemm_tiled_identity(ctx, id, sizeof id) != CLFORMER_OK) {
        cf_log(&ctx->log, CF_LOG_WARN, "gemm search: the tiled kernel is left out: %s",
               clformer_last_error());
        cf_clear_error();
        return;
    }
    for (int set = 0; set < CF_GEMM_TILE_SETS; set++) {
        const cf_gemm_tiles *t = &cf_gemm_tile_sets[set];
        if (!cf_gemm_tiles_fit(ctx, t)) continue;
        const size_t slot = cf_gs_tiled_slot(r) + r->nt;
        snprintf(r->sets[slot], CF_GS_TEXT, "%dx%d %s", t->gm, t->gn, id);
        r->origin[slot] = "clformer's own kernel (cl/gemm.cl)";
        r->tiled_set[r->nt++] = set;
    }
}

static cf_gs_record *make_record(cf_ctx *ctx)
{
    char own_x[CF_GS_TEXT], own_d[CF_GS_TEXT], own_sw[CF_GS_TEXT];
    if (!own_set(ctx, "Xgemm", own_x) || !own_set(ctx, "XgemmDirect", own_d) ||
        !own_set(ctx, "GemmRoutine", own_sw))
        return NULL;
    cf_gs_record *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->device = ctx->device;
    pthread_mutex_init(&r->lock, NULL);
    const char *eq = strchr(own_sw, '=');
    r->own_switch = eq ? strtoul(eq + 1, NULL, 10) : 0;
    fill_sets(ctx, r, own_x, own_d);
    add_tiled(ctx, r);
    r->want_x = r->cur_x = 0;
    r->want_d = r->cur_d = (int)r->nx;
    r->want_switch = r->cur_switch = r->own_switch;
    r->cur_known = true; /* CLBlast has its own sets now */
    cf_gs_file_open(ctx, r);
    char tiled[64] = "";
    if (r->nt) snprintf(tiled, sizeof tiled, " and the tiled kernel's %zu tile sets", r->nt);
    cf_log(&ctx->log, CF_LOG_INFO, "gemm search on: %zu Xgemm and %zu XgemmDirect sets%s, times in %s",
           r->nx, r->nd, tiled, r->path[0] ? r->path : "memory only (no cache directory)");
    return r;
}

void cf_gemm_search_start(cf_ctx *ctx)
{
    pthread_mutex_lock(&records_lock);
    cf_gs_record *r = records;
    while (r && r->device != ctx->device) r = r->next;
    if (!r && (r = make_record(ctx))) {
        r->next = records;
        records = r;
    }
    pthread_mutex_unlock(&records_lock);
    ctx->gemm_search = r != NULL;
}

void *cf_gemm_search_hold(cl_device_id device)
{
    cf_gs_record *r = record_of(device);
    if (r) pthread_mutex_lock(&r->lock);
    return r;
}

void cf_gemm_search_release(void *held)
{
    cf_gs_record *r = held;
    if (!r) return;
    r->cur_known = false; /* context creation applied its table: apply the choice again */
    pthread_mutex_unlock(&r->lock);
}

/* The key of a call: its routine, transposes and size classes. */
static cf_gs_class key_of(const cf_gemm_call *g)
{
    cf_gs_class k = {0};
    k.strided = g->batch > 1;
    k.ta = g->trans_a, k.tb = g->trans_b;
    k.mc = cf_gs_size_class(g->m), k.nc = cf_gs_size_class(g->n);
    k.kc = cf_gs_size_class(g->k), k.bc = cf_gs_size_class(g->batch);
    k.m = (uint32_t)g->m, k.n = (uint32_t)g->n, k.k = (uint32_t)g->k, k.batch = (uint32_t)g->batch;
    return k;
}

/* A new kind of product: its times from the file, or timed now, or not at all. */
static void first_use(cf_ctx *ctx, cf_gs_record *r, const cf_gemm_call *g, cf_gs_class *c)
{
    const double fma = (double)g->m * (double)g->n * (double)g->k * (double)g->batch;
    if (g->a_offs || fma < limits.min_fma || g->m > UINT32_MAX || g->n > UINT32_MAX ||
        g->k > UINT32_MAX || g->batch > UINT32_MAX) {
        c->untimable = true;
        r->skipped++;
        return;
    }
    if (r->spent_s >= limits.budget_seconds) {
        c->untimable = true;
        r->skipped++;
        if (!r->budget_said)
            cf_log(&ctx->log, CF_LOG_INFO, "gemm search: its %.0f s are spent; new shapes keep "
                   "the sets in force (a later run times them)", limits.budget_seconds);
        r->budget_said = true;
        return;
    }
    cf_gs_time_class(ctx, r, c, g->alpha, g->beta);
    r->timed++;
    if (c->timed) cf_gs_file_save(ctx, r);
    r->pending = true;
}

void *cf_gemm_search_before(cf_ctx *ctx, const cf_gemm_call *g, int *tiled_set)
{
    *tiled_set = -1;
    cf_gs_record *r = record_of(ctx->device);
    if (!r) return NULL;
    pthread_mutex_lock(&r->lock);
    const cf_gs_class key = key_of(g);
    cf_gs_class *c = cf_gs_find(r, &key);
    if (c && !c->in_use && !c->untimable) {
        r->from_cache++; /* times from the file */
        r->pending = true;
    } else if (c && c->in_use && r->pending) {
        choose(ctx, r); /* a shape comes back: the shapes of a pass are known */
        r->pending = false;
    }
    if (!c && (c = cf_gs_add(r, &key))) {
        const size_t i = (size_t)(c - r->classes);
        first_use(ctx, r, g, c); /* saving may grow r->classes: find it again */
        c = &r->classes[i];
    }
    if (c) {
        c->in_use = true;
        c->calls++;
    }
    if (c && may_route(ctx) && (*tiled_set = tiled_route(r, c)) >= 0) {
        r->tiled_calls++;
        return r;
    }
    if (!r->cur_known || r->cur_x != r->want_x || r->cur_d != r->want_d ||
        r->cur_switch != r->want_switch)
        cf_gs_apply(ctx, r, r->want_x, r->want_d, r->want_switch);
    return r; /* held until cf_gemm_search_after: the call runs with these sets */
}

int cf_gemm_search_tiled_set(const cf_ctx *ctx, const cf_gemm_call *g)
{
    cf_gs_record *r = ctx->gemm_search ? record_of(ctx->device) : NULL;
    if (!r) return -1;
    pthread_mutex_lock(&r->lock);
    const cf_gs_class key = key_of(g);
    const cf_gs_class *c = cf_gs_find(r, &key);
    const int set = c && may_route(ctx) ? tiled_route(r, c) : -1;
    pthread_mutex_unlock(&r->lock);
    return set;
}

void cf_gemm_search_after(void *held)
{
    cf_gs_record *r = held;
    if (r) pthread_mutex_unlock(&r->lock);
}

void cf_gemm_search_forget(void)
{
    pthread_mutex_lock(&records_lock);
    while (records) {
        cf_gs_record *r = records;
        records = r->next;
        /* CLBlast keeps overrides for the whole process (CLBlastClearCache
         * drops compiled programs only): leave it with the sets it had when
         * the search began, so that the next record finds the same ones */
        char sw[64];
        snprintf(sw, sizeof sw, "XGEMM_MIN_INDIRECT_SIZE=%zu", r->own_switch);
        if (cf_clblast_override_on(r->device, "Xgemm", r->sets[0]) != CLFORMER_OK ||
            cf_clblast_override_on(r->device, "XgemmDirect", r->sets[r->nx]) != CLFORMER_OK ||
            cf_clblast_override_on(r->device, "GemmRoutine", sw) != CLFORMER_OK)
            cf_clear_error(); /* sets CLBlast took before: not seen to fail */
        pthread_mutex_destroy(&r->lock);
        free(r->classes);
        free(r->header);
        free(r);
    }
    pthread_mutex_unlock(&records_lock);
}

bool cf_gemm_search_stats_for(const cf_ctx *ctx, cf_gemm_search_stats *s)
{
    memset(s, 0, sizeof *s);
    cf_gs_record *r = record_of(ctx->device);
    if (!r) return false;
    pthread_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_classes; i++) {
        s->shapes += r->classes[i].in_use;
        s->tiled_shapes += r->classes[i].in_use && tiled_route(r, &r->classes[i]) >= 0;
    }
    for (size_t i = 0; i < cf_gs_slots(r); i++) s->rejected += r->left_out[i];
    s->tiled = r->nt, s->tiled_calls = r->tiled_calls;
    s->timed = r->timed, s->from_cache = r->from_cache, s->skipped = r->skipped;
    s->choices = r->choices, s->seconds = r->spent_s;
    s->xgemm = r->want_x, s->direct = r->want_d - (int)r->nx, s->switch_size = r->want_switch;
    snprintf(s->cache_path, sizeof s->cache_path, "%s", r->path);
    pthread_mutex_unlock(&r->lock);
    return true;
}
