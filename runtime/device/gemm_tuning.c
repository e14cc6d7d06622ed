/*
 * Tuned CLBlast parameters (see gemm_tuning.h): the table, matching a device
 * against it, and CLFORMER_GEMM_TUNING's file form.
 *
 * To add a device: run tools/tuning/tune-clblast.sh -c on it (it compares its
 * result with CLBlast's defaults, using tools/tuning/gemm_compare.py), and
 * where the result is faster add an entry whose keys are as narrow as what
 * was measured. Tuned parameters change speed, not results, but a set tuned
 * on one device can be slower on another.
 */
#include "gemm_tuning.h"
#include "fileio.h"
#include "gemm_search.h"

#include <clblast_c.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------- */
/* The table                                                                  */
/* ------------------------------------------------------------------------- */

/* PoCL 3.1's "pthread" device (LLVM 15, skylake-avx512 code) on a 2-core
 * AMD EPYC VM with AVX-512 (shared with other jobs), CLBlast 1.5.3.
 * tools/tuning/tune-clblast.sh ran the tuners under nice: xgemm at 512^3 (its fixed
 * set 1/4 sampled, then 1208 random configurations), xgemm_direct at 256^3
 * (fixed set, 210 random), the copy/pad/transpose tuners in full, and the
 * routine tuner for the switch point. The best few Xgemm and XgemmDirect
 * candidates were then timed on the transformer's shapes with
 * tools/tuning/gemm_compare.py, interleaved with CLBlast's defaults; the
 * winners below are 3-10x faster on the linear layers' products (indirect
 * kernel, from m*n*k >= 128^3 on) and 1.1-2.5x on attention's batched 32x32
 * ones (direct kernel: its tuner's best used 64-wide tiles, which waste 3/4
 * of the work on 32x32 products, so a 32-wide set won on those shapes). */
static const cf_clblast_params pocl_pthread_avx512_amd[] = {
    {"Xgemm", "GEMMK=0 KREG=1 KWG=16 KWI=2 MDIMA=16 MDIMC=8 MWG=128 NDIMB=32 NDIMC=8 NWG=64 "
              "SA=0 SB=0 STRM=1 STRN=0 VWM=8 VWN=2"},
    {"XgemmDirect", "KWID=2 MDIMAD=8 MDIMCD=8 NDIMBD=8 NDIMCD=8 PADA=1 PADB=1 VWMD=1 VWND=2 "
                    "WGD=32"},
    {"Copy", "COPY_DIMX=16 COPY_DIMY=16 COPY_VW=8 COPY_WPT=2"},
    {"Pad", "PAD_DIMX=32 PAD_DIMY=16 PAD_WPTX=4 PAD_WPTY=1"},
    {"Transpose", "TRA_DIM=8 TRA_PAD=1 TRA_SHUFFLE=0 TRA_WPT=4"},
    {"Padtranspose", "PADTRA_PAD=1 PADTRA_TILE=64 PADTRA_WPT=1"},
    {"GemmRoutine", "XGEMM_MIN_INDIRECT_SIZE=128"},
};

/* For devices whose work-groups are smaller than CLBlast's generic parameters
 * assume (up to 256 work-items on GPUs, 64 on CPUs: PoCL with
 * POCL_MAX_WORK_GROUP_SIZE=32 fails every GEMM with CL_INVALID_WORK_GROUP_SIZE
 * without these): every kernel launches at most 32 work-items, the smallest
 * maximum clformer supports (docs/DEVICES.md). Correct, not tuned: applied
 * before the table, whose sets replace those the device can take. The
 * divisibility rules CLBlast checks hold (e.g. Xgemm: MWG % (MDIMC*VWM) = 0,
 * KWG % (MDIMC*NDIMC/MDIMA) = 0). */
#define CF_SMALL_WORK_GROUP_LIMIT 256
static const cf_clblast_params small_work_groups[] = {
    {"Xgemm", "GEMMK=0 KREG=1 KWG=16 KWI=2 MDIMA=8 MDIMC=8 MWG=32 NDIMB=4 NDIMC=4 NWG=16 "
              "SA=0 SB=0 STRM=0 STRN=0 VWM=4 VWN=4"},
    {"XgemmDirect", "KWID=2 MDIMAD=8 MDIMCD=8 NDIMBD=4 NDIMCD=4 PADA=1 PADB=1 VWMD=2 VWND=2 "
                    "WGD=16"},
    {"Copy", "COPY_DIMX=8 COPY_DIMY=4 COPY_VW=1 COPY_WPT=1"},
    {"Pad", "PAD_DIMX=8 PAD_DIMY=4 PAD_WPTX=1 PAD_WPTY=1"},
    {"Transpose", "TRA_DIM=4 TRA_PAD=0 TRA_SHUFFLE=0 TRA_WPT=1"},
    {"Padtranspose", "PADTRA_PAD=0 PADTRA_TILE=4 PADTRA_WPT=1"},
};

/* Keys are as narrow as what was measured: PoCL's multi-threaded device with
 * the same instruction set, on the same CPU vendor, PoCL major version 3. */
static const cf_gemm_tuning table[] = {
    {"PoCL 3 pthread, AVX-512, AMD EPYC (2 cores)", "Portable Computing Language", "AuthenticAMD",
     "pthread-skylake-avx512-", "3.", pocl_pthread_avx512_amd,
     sizeof pocl_pthread_avx512_amd / sizeof *pocl_pthread_avx512_amd},
};

const cf_gemm_tuning *cf_gemm_tuning_table(size_t *count)
{
    *count = sizeof table / sizeof *table;
    return table;
}

static bool key_ok(const char *key, const char *value, bool prefix)
{
    if (!key) return true;
    return prefix ? strncmp(value, key, strlen(key)) == 0 : strstr(value, key) != NULL;
}

const cf_gemm_tuning *cf_gemm_tuning_find(const clformer_device_info *d)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
        const cf_gemm_tuning *t = &table[i];
        if (key_ok(t->platform, d->platform, false) && key_ok(t->vendor, d->vendor, false) &&
            key_ok(t->device_prefix, d->name, true) &&
            key_ok(t->driver_prefix, d->driver_version, true))
            return t;
    }
    return NULL;
}

/* ------------------------------------------------------------------------- */
/* Parameters and CLBlast                                                     */
/* ------------------------------------------------------------------------- */

clformer_status cf_clblast_params_parse(const char *text, char *buf, size_t buf_size,
                                        const char **names, size_t *values, size_t *count)
{
    *count = 0;
    if (strlen(text) >= buf_size)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "CLBlast parameters too long: '%s'", text);
    strcpy(buf, text);
    for (char *save = NULL, *tok = strtok_r(buf, " \t\r\n", &save); tok;
         tok = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(tok, '=');
        bool ok = eq && eq > tok && eq[1] != '\0' && strlen(eq + 1) <= 9;
        for (char *p = tok; ok && p < eq; p++)
            ok = isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_';
        for (char *p = eq ? eq + 1 : tok; ok && *p; p++) ok = isdigit((unsigned char)*p);
        if (!ok)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "CLBlast parameter '%s' is not NAME=value (e.g. MWG=64)", tok);
        if (*count == CF_CLBLAST_MAX_PARAMS)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "more than %d CLBlast parameters in '%s'", CF_CLBLAST_MAX_PARAMS, text);
        *eq = '\0';
        names[*count] = tok;
        values[*count] = (size_t)strtoul(eq + 1, NULL, 10);
        (*count)++;
    }
    if (*count == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "no CLBlast parameters given");
    return CLFORMER_OK;
}

/* The two parameters that make each kernel's work-group (CLBlast's "local"
 * sizes), so a set too wide for a device is refused here with a message
 * instead of failing every later GEMM with CL_INVALID_WORK_GROUP_SIZE. */
static const struct {
    const char *kernel, *x, *y;
} work_group_params[] = {
    {"Xgemm", "MDIMC", "NDIMC"},          {"XgemmDirect", "MDIMCD", "NDIMCD"},
    {"Copy", "COPY_DIMX", "COPY_DIMY"},   {"Pad", "PAD_DIMX", "PAD_DIMY"},
    {"Transpose", "TRA_DIM", "TRA_DIM"},  {"Padtranspose", "PADTRA_TILE", "PADTRA_TILE"},
};

static size_t param_value(const char *name, const char **names, const size_t *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return values[i];
    return 0;
}

static size_t work_group_size(const char *kernel, const char **names, const size_t *values,
                              size_t n)
{
    for (size_t i = 0; i < sizeof work_group_params / sizeof *work_group_params; i++)
        if (!strcmp(kernel, work_group_params[i].kernel))
            return param_value(work_group_params[i].x, names, values, n) *
                   param_value(work_group_params[i].y, names, values, n);
    return 0;
}

size_t cf_clblast_params_work_group(const char *kernel, const char *params)
{
    char buf[1024];
    const char *names[CF_CLBLAST_MAX_PARAMS];
    size_t values[CF_CLBLAST_MAX_PARAMS], n = 0;
    if (cf_clblast_params_parse(params, buf, sizeof buf, names, values, &n) != CLFORMER_OK) {
        cf_clear_error();
        return 0;
    }
    return work_group_size(kernel, names, values, n);
}

clformer_status cf_clblast_override_on(cl_device_id device, const char *kernel, const char *params)
{
    char buf[1024];
    const char *names[CF_CLBLAST_MAX_PARAMS];
    size_t values[CF_CLBLAST_MAX_PARAMS], n = 0;
    CF_TRY(cf_clblast_params_parse(params, buf, sizeof buf, names, values, &n));
    CLBLAST_CHECK(CLBlastOverrideParameters(device, kernel, CLBlastPrecisionSingle, n, names, values));
    return CLFORMER_OK;
}

clformer_status cf_clblast_override(cf_ctx *ctx, const char *kernel, const char *params)
{
    size_t wg = cf_clblast_params_work_group(kernel, params);
    if (wg > ctx->info.max_work_group_size)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s parameters need work-groups of %zu work-items; %s allows %zu", kernel,
                       wg, ctx->info.name, ctx->info.max_work_group_size);
    return cf_clblast_override_on(ctx->device, kernel, params);
}

size_t cf_gemm_tuning_apply(cf_ctx *ctx, const cf_gemm_tuning *t, cf_log_level level)
{
    size_t applied = 0;
    for (size_t i = 0; i < t->n_sets; i++) {
        if (cf_clblast_override(ctx, t->sets[i].kernel, t->sets[i].params) == CLFORMER_OK) {
            applied++;
        } else {
            cf_log(&ctx->log, level, "gemm tuning '%s': CLBlast kept its own %s parameters: %s", t->label,
                   t->sets[i].kernel, clformer_last_error());
            cf_clear_error();
        }
    }
    return applied;
}

/* ------------------------------------------------------------------------- */
/* CLFORMER_GEMM_TUNING                                                       */
/* ------------------------------------------------------------------------- */

/* Parses a file of "Kernel NAME=value ..." lines ('#' starts a comment) into
 * `t`, whose strings point into `text` (modified). All lines or none. */
static clformer_status parse_file(const char *path, char *text, cf_gemm_tuning *t,
                                  cf_clblast_params *sets, size_t cap)
{
    t->n_sets = 0;
    int line_no = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        line += strspn(line, " \t\r");
        if (*line == '\0') continue;
        size_t kl = strcspn(line, " \t\r");
        char *params = line + kl;
        if (*params) *params++ = '\0';
        char buf[1024];
        const char *names[CF_CLBLAST_MAX_PARAMS];
        size_t values[CF_CLBLAST_MAX_PARAMS], n;
        if (cf_clblast_params_parse(params, buf, sizeof buf, names, values, &n) != CLFORMER_OK)
            return cf_fail_prefix(CLFORMER_ERR_INVALID_ARGUMENT, "%s line %d (%s): ", path, line_no,
                                  line);
        if (t->n_sets == cap)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: more than %zu lines", path, cap);
        sets[t->n_sets++] = (cf_clblast_params){line, params};
    }
    return CLFORMER_OK;
}

static size_t apply_file(cf_ctx *ctx, const char *path)
{
    size_t n = 0;
    char *text = NULL;
    size_t size = 0;
    cf_clblast_params sets[64];
    cf_gemm_tuning t = {.label = path, .sets = sets};
    clformer_status st = cf_read_file(path, &text, &size);
    if (st == CLFORMER_OK) st = parse_file(path, text, &t, sets, sizeof sets / sizeof *sets);
    if (st != CLFORMER_OK) {
        cf_log(&ctx->log, CF_LOG_WARN, "gemm tuning: ignoring %s: %s", path, clformer_last_error());
        cf_clear_error();
    } else {
        /* asked for by name, so a rejected set is worth a warning */
        n = cf_gemm_tuning_apply(ctx, &t, CF_LOG_WARN);
        cf_log(&ctx->log, CF_LOG_INFO, "gemm tuning: %zu of %zu CLBlast parameter sets from %s", n,
               t.n_sets, path);
    }
    free(text);
    return n;
}

/* The small-work-group sets on a device that needs them (see above). */
static void apply_small_work_groups(cf_ctx *ctx)
{
    if (ctx->info.max_work_group_size >= CF_SMALL_WORK_GROUP_LIMIT) return;
    const cf_gemm_tuning t = {"work-groups of at most 32 work-items", NULL, NULL, NULL, NULL,
                              small_work_groups,
                              sizeof small_work_groups / sizeof *small_work_groups};
    size_t n = cf_gemm_tuning_apply(ctx, &t, CF_LOG_WARN);
    cf_log(&ctx->log, CF_LOG_DEBUG, "gemm tuning: %zu CLBlast parameter sets for work-groups of "
           "at most 32 (%s allows %zu)", n, ctx->info.name, ctx->info.max_work_group_size);
}

cf_gemm_tuning_mode cf_gemm_tuning_mode_of(const char *setting)
{
    if (!setting || !*setting || !strcmp(setting, "1") || !strcmp(setting, "auto"))
        return CF_GEMM_TUNING_AUTO;
    if (!strcmp(setting, "search")) return CF_GEMM_TUNING_SEARCH;
    if (!strcmp(setting, "table")) return CF_GEMM_TUNING_TABLE;
    if (!strcmp(setting, "off") || !strcmp(setting, "0")) return CF_GEMM_TUNING_OFF;
    return CF_GEMM_TUNING_FILE;
}

static size_t apply_setting(cf_ctx *ctx, const char *setting, cf_gemm_tuning_mode mode)
{
    apply_small_work_groups(ctx);
    if (mode == CF_GEMM_TUNING_OFF) {
        cf_log(&ctx->log, CF_LOG_DEBUG, "gemm tuning: off (setting %s)", setting);
        return 0;
    }
    if (mode == CF_GEMM_TUNING_FILE) return apply_file(ctx, setting);
    const cf_gemm_tuning *t = cf_gemm_tuning_find(&ctx->info);
    if (!t) {
        cf_log(&ctx->log, CF_LOG_DEBUG, "gemm tuning: none for %s; CLBlast's own parameters", ctx->info.name);
        return 0;
    }
    size_t n = cf_gemm_tuning_apply(ctx, t, CF_LOG_DEBUG);
    cf_log(&ctx->log, CF_LOG_INFO, "gemm tuning: %zu of %zu CLBlast parameter sets for '%s'", n, t->n_sets,
           t->label);
    return n;
}

size_t cf_gemm_tuning_init(cf_ctx *ctx, const char *setting)
{
    const cf_gemm_tuning_mode mode = cf_gemm_tuning_mode_of(setting);
    void *held = cf_gemm_search_hold(ctx->device); /* another context may be searching */
    const size_t n = apply_setting(ctx, setting, mode);
    cf_gemm_search_release(held);
    ctx->gemm_search = false;
    if (ctx->gemm_provider == CLFORMER_GEMM_CLBLAST &&
        (mode == CF_GEMM_TUNING_SEARCH ||
         (mode == CF_GEMM_TUNING_AUTO && ctx->device_profile.gemm_search)))
        cf_gemm_search_start(ctx);
    return n;
}
