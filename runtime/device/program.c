/*
 * Compiling and finding kernels. Options = device facts + tunables; the
 * in-memory table is keyed by (program, options), the disk cache by a hash of
 * platform, device, driver, source and options.
 */
#include "program.h"
#include "fileio.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *INCLUDE_LINE = "#include \"common.h\"";

const char *const *cf_program_names(void)
{
    static const char *names[64];
    if (!names[0]) {
        size_t i = 0;
        for (; cf_embedded_sources[i].name && i + 1 < 64; i++) names[i] = cf_embedded_sources[i].name;
        names[i] = NULL;
    }
    return names;
}

/* Replaces the line `#include "common.h"` with `common` (the build does the same). */
static char *inline_common(const char *source, const char *common)
{
    const char *at = strstr(source, INCLUDE_LINE);
    if (!at) return strdup(source);
    size_t before = (size_t)(at - source), inc = strlen(INCLUDE_LINE);
    size_t total = strlen(source) - inc + strlen(common) + 1;
    char *out = malloc(total);
    if (!out) return NULL;
    memcpy(out, source, before);
    strcpy(out + before, common);
    strcat(out, at + inc);
    return out;
}

clformer_status cf_program_source(const char *kernel_dir, const char *program, char **source)
{
    *source = NULL;
    const char *dir = kernel_dir;
    if (dir && *dir) {
        char path[4096], common_path[4096];
        snprintf(path, sizeof path, "%s/%s.cl", dir, program);
        snprintf(common_path, sizeof common_path, "%s/common.h", dir);
        char *text = NULL, *common = NULL;
        size_t n;
        clformer_status st = cf_read_file(path, &text, &n);
        if (st == CLFORMER_OK) st = cf_read_file(common_path, &common, &n);
        if (st != CLFORMER_OK) {
            free(text);
            return cf_fail_prefix(st, "kernel directory %s (CLFORMER_KERNEL_DIR): ", dir);
        }
        *source = inline_common(text, common);
        free(text);
        free(common);
        return *source ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (size_t i = 0; cf_embedded_sources[i].name; i++)
        if (!strcmp(cf_embedded_sources[i].name, program)) {
            *source = strdup(cf_embedded_sources[i].source);
            return *source ? CLFORMER_OK
                           : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "no kernel program named '%s' in cl/", program);
}

void cf_program_options(const cf_ctx *ctx, const char *extra, char *out, size_t cap)
{
    cf_program_options_for(&ctx->device_profile, extra, out, cap);
}

size_t cf_item_run(const clformer_device_profile *p) { return p->gpu_layouts ? 1 : 16; }

void cf_program_options_for(const clformer_device_profile *p, const char *extra, char *out,
                            size_t cap)
{
    /* ACT_RELU, ACT_GELU, ACT_GELU_TANH: clformer_activation's values (cl/activation.cl) */
    snprintf(out, cap,
             "-cl-std=CL1.2 -DREDUCE_WG=%zu -DGPU_LAYOUTS=%d -DITEM_RUN=%zu -DHAS_FP16=%d "
             "-DHAS_FP64=%d -DACT_RELU=%d -DACT_GELU=%d -DACT_GELU_TANH=%d%s%s",
             p->reduce_wg, p->gpu_layouts, cf_item_run(p), p->fp16, p->fp64,
             (int)CLFORMER_ACT_RELU,
             (int)CLFORMER_ACT_GELU, (int)CLFORMER_ACT_GELU_TANH, extra && *extra ? " " : "",
             extra ? extra : "");
}

char *cf_program_build_log(const cf_ctx *ctx, cl_program program)
{
    size_t n = 0;
    clGetProgramBuildInfo(program, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = calloc(n + 1, 1);
    if (log) clGetProgramBuildInfo(program, ctx->device, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    return log;
}

static clformer_status build_log_failure(const cf_ctx *ctx, cl_program program,
                                         const char *name, const char *options, cl_int err)
{
    char *log = cf_program_build_log(ctx, program);
    clformer_status st = cf_fail(CLFORMER_ERR_BUILD,
                                 "kernel program cl/%s.cl failed to build (%s) on %s with "
                                 "options '%s'. Build log:\n%s",
                                 name, cf_cl_error_name(err), ctx->info.name, options,
                                 log ? log : "(unavailable)");
    free(log);
    return st;
}

clformer_status cf_program_build(const cf_ctx *ctx, const char *name, const char *source,
                                 const char *options, cl_program *out)
{
    cl_int err;
    cl_program program = clCreateProgramWithSource(ctx->context, 1, &source, NULL, &err);
    if (err != CL_SUCCESS) return cf_fail_cl(err, "clCreateProgramWithSource", __FILE__, __LINE__);
    err = clBuildProgram(program, 1, &ctx->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        clformer_status st = build_log_failure(ctx, program, name, options, err);
        clReleaseProgram(program);
        return st;
    }
    *out = program;
    return CLFORMER_OK;
}

clformer_status cf_program_obtain(const cf_ctx *ctx, const char *name, const char *options,
                                  cl_program *out, cf_cache_key *key, cf_program_origin *how)
{
    memset(key, 0, sizeof *key);
    char *source = NULL;
    CF_TRY(cf_program_source(ctx->kernel_dir, name, &source));
    clformer_status st = cf_cache_key_make(ctx, source, options, key);
    bool rejected = false;
    if (st == CLFORMER_OK && cf_cache_load(ctx, key, options, out, &rejected)) {
        *how = CF_PROGRAM_FROM_DISK;
    } else if (st == CLFORMER_OK) {
        *how = rejected ? CF_PROGRAM_REBUILT : CF_PROGRAM_BUILT;
        st = cf_program_build(ctx, name, source, options, out);
    }
    free(source);
    if (st != CLFORMER_OK) cf_cache_key_free(key);
    return st;
}

/* The caller's side of obtaining `program`: counters, log, the deferred
 * cache write (which takes `key`). */
static void account(cf_ctx *ctx, const char *name, cl_program program, cf_cache_key *key,
                    cf_program_origin how)
{
    if (how == CF_PROGRAM_FROM_DISK) {
        ctx->program_stats.disk_hits++;
        cf_log(&ctx->log, CF_LOG_DEBUG, "program %s: disk cache hit (%s)", name, key->path);
    } else {
        if (how == CF_PROGRAM_REBUILT) {
            ctx->program_stats.disk_rejects++;
            cf_log(&ctx->log, CF_LOG_DEBUG, "program cache entry %s is corrupt or stale; rebuilt",
                   key->path);
        }
        ctx->program_stats.builds++;
        cf_log(&ctx->log, CF_LOG_DEBUG, "program %s: built from source", name);
        cf_cache_defer(ctx, key, program);
    }
    cf_cache_key_free(key);
}

static cf_program_entry *find_program(const cf_ctx *ctx, const char *name,
                                      const char *options)
{
    for (size_t i = 0; i < ctx->n_programs; i++)
        if (!strcmp(ctx->programs[i].program_name, name) && !strcmp(ctx->programs[i].options, options))
            return &ctx->programs[i];
    return NULL;
}

/* Adds `program` to the context's table (which then owns it; released on failure). */
static clformer_status add_program(cf_ctx *ctx, const char *name, const char *options,
                                   cl_program program, cf_program_entry **out)
{
    cf_program_entry *grown = realloc(ctx->programs, (ctx->n_programs + 1) * sizeof *grown);
    if (!grown) {
        clReleaseProgram(program);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    ctx->programs = grown;
    char *name_copy = strdup(name), *options_copy = strdup(options);
    if (!name_copy || !options_copy) {
        free(name_copy);
        free(options_copy);
        clReleaseProgram(program);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    cf_program_entry *e = &ctx->programs[ctx->n_programs++];
    memset(e, 0, sizeof *e);
    e->program_name = name_copy;
    e->options = options_copy;
    e->program = program;
    if (out) *out = e;
    return CLFORMER_OK;
}

bool cf_program_loaded(const cf_ctx *ctx, const char *name, const char *options)
{
    return find_program(ctx, name, options) != NULL;
}

clformer_status cf_program_adopt(cf_ctx *ctx, const char *name, const char *options,
                                 cl_program program, cf_cache_key *key, cf_program_origin how)
{
    account(ctx, name, program, key, how);
    return add_program(ctx, name, options, program, NULL);
}

static clformer_status get_program(cf_ctx *ctx, const char *name, const char *options,
                                   cf_program_entry **out)
{
    if ((*out = find_program(ctx, name, options))) return CLFORMER_OK;
    cl_program program;
    cf_cache_key key;
    cf_program_origin how;
    CF_TRY(cf_program_obtain(ctx, name, options, &program, &key, &how));
    account(ctx, name, program, &key, how);
    return add_program(ctx, name, options, program, out);
}

clformer_status cf_kernel(cf_ctx *ctx, const char *program, const char *extra_options,
                          const char *kernel, cl_kernel *out)
{
    char options[1024];
    cf_program_options(ctx, extra_options, options, sizeof options);
    cf_program_entry *e = NULL;
    bool cached = find_program(ctx, program, options) != NULL;
    CF_TRY(get_program(ctx, program, options, &e));
    for (size_t i = 0; i < e->n_kernels; i++)
        if (!strcmp(e->kernel_names[i], kernel)) {
            if (cached) ctx->program_stats.memory_hits++;
            *out = e->kernels[i];
            return CLFORMER_OK;
        }
    cl_int err;
    cl_kernel k = clCreateKernel(e->program, kernel, &err);
    if (err != CL_SUCCESS)
        return cf_fail(CLFORMER_ERR_BUILD, "kernel '%s' not found in cl/%s.cl (%s)", kernel,
                       program, cf_cl_error_name(err));
    char **names = realloc(e->kernel_names, (e->n_kernels + 1) * sizeof *names);
    if (names) e->kernel_names = names;
    cl_kernel *ks = realloc(e->kernels, (e->n_kernels + 1) * sizeof *ks);
    if (ks) e->kernels = ks;
    cf_kernel_id *ids = realloc(e->kernel_ids, (e->n_kernels + 1) * sizeof *ids);
    if (ids) e->kernel_ids = ids;
    char *kernel_copy = names && ks && ids ? strdup(kernel) : NULL;
    if (!kernel_copy) {
        clReleaseKernel(k);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    e->kernel_names[e->n_kernels] = kernel_copy;
    e->kernel_ids[e->n_kernels] = cf_kernel_find(program, kernel);
    e->kernels[e->n_kernels++] = k;
    if (cached) ctx->program_stats.memory_hits++;
    *out = k;
    return CLFORMER_OK;
}

const char *const cf_kernel_programs[CF_K_COUNT] = {
#define CF_KERNEL_PROGRAM(id, program, kernel, kinds) program,
    CF_KERNEL_LIST(CF_KERNEL_PROGRAM)
#undef CF_KERNEL_PROGRAM
};
const char *const cf_kernel_names[CF_K_COUNT] = {
#define CF_KERNEL_NAME(id, program, kernel, kinds) kernel,
    CF_KERNEL_LIST(CF_KERNEL_NAME)
#undef CF_KERNEL_NAME
};
const char *const cf_kernel_kinds[CF_K_COUNT] = {
#define CF_KERNEL_KINDS(id, program, kernel, kinds) kinds,
    CF_KERNEL_LIST(CF_KERNEL_KINDS)
#undef CF_KERNEL_KINDS
};

cf_kernel_id cf_kernel_find(const char *program, const char *kernel)
{
    for (int id = 0; id < CF_K_COUNT; id++)
        if (!strcmp(cf_kernel_names[id], kernel) && !strcmp(cf_kernel_programs[id], program))
            return (cf_kernel_id)id;
    return CF_K_COUNT;
}

clformer_status cf_kernel_get(cf_ctx *ctx, cf_kernel_id id, cl_kernel *out)
{
    if (ctx->kernel_by_id[id]) {
        ctx->program_stats.memory_hits++;
        *out = ctx->kernel_by_id[id];
        return CLFORMER_OK;
    }
    CF_TRY(cf_kernel(ctx, cf_kernel_programs[id], NULL, cf_kernel_names[id], out));
    ctx->kernel_by_id[id] = *out;
    return CLFORMER_OK;
}

void cf_programs_release(cf_ctx *ctx)
{
    memset(ctx->kernel_by_id, 0, sizeof ctx->kernel_by_id);
    for (size_t i = 0; i < ctx->n_programs; i++) {
        cf_program_entry *e = &ctx->programs[i];
        for (size_t k = 0; k < e->n_kernels; k++) {
            clReleaseKernel(e->kernels[k]);
            free(e->kernel_names[k]);
        }
        free(e->kernels);
        free(e->kernel_names);
        free(e->kernel_ids);
        clReleaseProgram(e->program);
        free(e->program_name);
        free(e->options);
    }
    free(ctx->programs);
    ctx->programs = NULL;
    ctx->n_programs = 0;
}
