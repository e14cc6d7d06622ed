/*
 * Context settings: their defaults and the environment variables that set
 * them for the CLI, and what decides which OpenCL drivers the ICD loader
 * sees. This is the only file of the runtime that reads the environment;
 * everything else takes a clformer_context_params (or a cf_icd_env).
 */
#include "context.h"
#include "gemm_tuning.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void clformer_context_params_default(clformer_context_params *p)
{
    memset(p, 0, sizeof *p);
    p->size = sizeof *p;
    p->cache = true;
    p->log_level = CLFORMER_LOG_WARN;
}

/* NULL for an unset or empty variable. */
static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static clformer_status read_bool(const char *name, bool *out)
{
    const char *v = env(name);
    if (!v) return CLFORMER_OK;
    if (!strcasecmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "false")) {
        *out = false;
    } else if (!strcasecmp(v, "1") || !strcasecmp(v, "on") || !strcasecmp(v, "true")) {
        *out = true;
    } else {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s='%s' is not a setting: use 1, on or true, or 0, off or false", name, v);
    }
    return CLFORMER_OK;
}

static clformer_status read_log_level(const char *name, clformer_log_level *out)
{
    static const char *levels[] = {"error", "warn", "info", "debug"};
    const char *v = env(name);
    if (!v) return CLFORMER_OK;
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(v, levels[i])) {
            *out = (clformer_log_level)i;
            return CLFORMER_OK;
        }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "%s='%s' is not a log level: use error, warn, info or debug", name, v);
}

/* CLFORMER_GEMM_TUNING is a word (gemm_tuning.h) or a file: a file that
 * cannot be read is said at once, not ignored (the tuning would silently
 * not apply). */
static clformer_status read_gemm_tuning(const char *v)
{
    if (cf_gemm_tuning_mode_of(v) != CF_GEMM_TUNING_FILE) return CLFORMER_OK;
    FILE *f = fopen(v, "rb");
    if (!f)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "CLFORMER_GEMM_TUNING='%s': cannot open it (%s); name a tuning file, or "
                       "use auto (the built-in table, and the per-shape search on GPUs), search, "
                       "table or off", v, strerror(errno));
    fclose(f);
    return CLFORMER_OK;
}

clformer_status clformer_context_params_from_env(clformer_context_params *p)
{
    clformer_context_params_default(p);
    p->device = env("CLFORMER_DEVICE");
    p->cache_dir = env("CLFORMER_CACHE_DIR");
    p->kernel_dir = env("CLFORMER_KERNEL_DIR");
    p->gemm_tuning = env("CLFORMER_GEMM_TUNING");
    p->gemm = env("CLFORMER_GEMM");
    p->attention = env("CLFORMER_ATTENTION");
    p->attention_tuning = env("CLFORMER_ATTENTION_TUNING");
    p->profile = env("CLFORMER_PROFILE");
    CF_TRY(read_bool("CLFORMER_CACHE", &p->cache));
    CF_TRY(read_gemm_tuning(p->gemm_tuning));
    return read_log_level("CLFORMER_LOG", &p->log_level);
}

bool cf_default_cache_dir(char *out, size_t cap)
{
    const char *v = env("XDG_CACHE_HOME");
    if (v) return snprintf(out, cap, "%s/clformer", v) < (int)cap;
    v = env("HOME");
    if (v) return snprintf(out, cap, "%s/.cache/clformer", v) < (int)cap;
    return false;
}

bool cf_icd_env_read(cf_icd_env *e)
{
    memset(e, 0, sizeof *e);
    e->user_vendors = env("OCL_ICD_VENDORS") != NULL;
    const char *v = env("OPENCL_VENDOR_PATH");
    snprintf(e->system_dir, sizeof e->system_dir, "%s", v ? v : "/etc/OpenCL/vendors");
    /* tools/intel-opencl.sh's rule for where it installs */
    v = env("CLFORMER_INTEL_OPENCL_DIR");
    const char *cache = env("XDG_CACHE_HOME"), *home = env("HOME");
    int w = -1;
    if (v) w = snprintf(e->intel_dirs[0], sizeof e->intel_dirs[0], "%s", v);
    else if (cache) w = snprintf(e->intel_dirs[0], sizeof e->intel_dirs[0], "%s/clformer/intel-opencl", cache);
    else if (home) w = snprintf(e->intel_dirs[0], sizeof e->intel_dirs[0], "%s/.cache/clformer/intel-opencl", home);
    if (w > 0 && w < (int)sizeof e->intel_dirs[0]) e->n_intel_dirs = 1;
#ifdef CLFORMER_BUILD_INTEL_OPENCL_DIR
    if (strcmp(CLFORMER_BUILD_INTEL_OPENCL_DIR, e->intel_dirs[0]))
        snprintf(e->intel_dirs[e->n_intel_dirs++], sizeof e->intel_dirs[0], "%s",
                 CLFORMER_BUILD_INTEL_OPENCL_DIR);
#endif
    v = env("CLFORMER_CACHE_DIR");
    if (v) return snprintf(e->cache_dir, sizeof e->cache_dir, "%s", v) < (int)sizeof e->cache_dir;
    return cf_default_cache_dir(e->cache_dir, sizeof e->cache_dir);
}
