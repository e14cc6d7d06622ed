/*
 * Device discovery and selection (the CLFORMER_DEVICE grammar), and the
 * context that opens the chosen device.
 *
 * Selection is a pure function over clformer_device_info records so that
 * its rules are unit-tested over made-up device lists.
 */
#include "context.h"
#include "gemm.h"
#include "gemm_provider.h"
#include "gemm_tuning.h"
#include "log.h"
#include "profile.h"
#include "program.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------- */
/* Discovery                                                                  */
/* ------------------------------------------------------------------------- */

static void info_string(cl_device_id d, cl_device_info what, char *out, size_t cap)
{
    out[0] = '\0';
    if (clGetDeviceInfo(d, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static void platform_string(cl_platform_id p, cl_platform_info what, char *out, size_t cap)
{
    out[0] = '\0';
    if (clGetPlatformInfo(p, what, cap, out, NULL) != CL_SUCCESS) out[0] = '\0';
    out[cap - 1] = '\0';
}

static bool contains_nocase(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0) return true;
    for (const char *h = haystack; *h; h++)
        if (strncasecmp(h, needle, n) == 0) return true;
    return false;
}

/* The sub-group sizes a device names (Intel's extension; other devices
 * leave the list empty). */
static void subgroup_sizes(cl_device_id d, const char *ext, clformer_device_info *o)
{
    const cl_device_info sizes_intel = 0x4108; /* CL_DEVICE_SUB_GROUP_SIZES_INTEL */
    size_t sizes[8], bytes = 0;
    if (!strstr(ext, "cl_intel_required_subgroup_size") ||
        clGetDeviceInfo(d, sizes_intel, sizeof sizes, sizes, &bytes) != CL_SUCCESS)
        return;
    o->n_subgroup_sizes = (uint32_t)(bytes / sizeof *sizes);
    for (uint32_t i = 0; i < o->n_subgroup_sizes; i++) o->subgroup_sizes[i] = (uint32_t)sizes[i];
}

static void describe(cl_platform_id p, cl_device_id d, int pi, int di, clformer_device_info *o)
{
    memset(o, 0, sizeof *o);
    o->platform_index = pi;
    o->device_index = di;
    snprintf(o->selector, sizeof o->selector, "%d:%d", pi, di);
    platform_string(p, CL_PLATFORM_NAME, o->platform, sizeof o->platform);
    platform_string(p, CL_PLATFORM_VERSION, o->platform_version, sizeof o->platform_version);
    platform_string(p, CL_PLATFORM_VENDOR, o->platform_vendor, sizeof o->platform_vendor);
    info_string(d, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
    info_string(d, CL_DEVICE_NAME, o->name, sizeof o->name);
    info_string(d, CL_DRIVER_VERSION, o->driver_version, sizeof o->driver_version);
    info_string(d, CL_DEVICE_VERSION, o->device_version, sizeof o->device_version);
    info_string(d, CL_DEVICE_OPENCL_C_VERSION, o->c_version, sizeof o->c_version);

    cl_device_type type = 0;
    clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    o->type = (type & CL_DEVICE_TYPE_GPU)           ? CLFORMER_DEVICE_GPU
              : (type & CL_DEVICE_TYPE_ACCELERATOR) ? CLFORMER_DEVICE_ACCELERATOR
              : (type & CL_DEVICE_TYPE_CPU)         ? CLFORMER_DEVICE_CPU
                                                    : CLFORMER_DEVICE_OTHER;
    cl_uint u = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u, &u, NULL);
    o->compute_units = u;
    u = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof u, &u, NULL);
    o->clock_mhz = u;
    cl_ulong l = 0;
    clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof l, &l, NULL);
    o->global_mem_bytes = l;
    l = 0;
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof l, &l, NULL);
    o->local_mem_bytes = l;
    l = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof l, &l, NULL);
    o->max_alloc_bytes = l;
    size_t wg = 0;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    o->max_work_group_size = wg;
    cl_bool unified = CL_FALSE;
    clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    o->unified_memory = unified == CL_TRUE;
    cl_device_exec_capabilities exec = 0;
    clGetDeviceInfo(d, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof exec, &exec, NULL);
    o->native_kernels = (exec & CL_EXEC_NATIVE_KERNEL) != 0;

    size_t ext_size = 0;
    clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &ext_size);
    char *ext = calloc(ext_size + 1, 1);
    if (ext && clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, ext_size, ext, NULL) == CL_SUCCESS) {
        o->fp16 = strstr(ext, "cl_khr_fp16") != NULL;
        o->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
        o->bf16 = strstr(ext, "bfloat16") != NULL;
        subgroup_sizes(d, ext, o);
    }
    free(ext);
    u = 0;
    clGetDeviceInfo(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof u, &u, NULL);
    o->vector_width_float = u;
    u = 0;
    clGetDeviceInfo(d, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof u, &u, NULL);
    o->native_vector_width_float = u;
    o->simulator = contains_nocase(o->platform, "oclgrind") || contains_nocase(o->name, "oclgrind");
}

/* Fills `out`, `out_p` and `out_d` (NULL to count only) with at most `cap`
 * devices; a device that appears between the counting and the filling call
 * is left out rather than written past the arrays. */
static clformer_status enumerate(clformer_device_info *out, cl_platform_id *out_p,
                                 cl_device_id *out_d, size_t cap, size_t *count)
{
    const bool filling = out || out_p || out_d;
    cf_icd_add_project_vendors(); /* before the loader reads its ICD files */
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    *count = 0;
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || np == 0) return CLFORMER_OK;
    CL_CHECK(err);
    cl_platform_id *platforms = calloc(np, sizeof *platforms);
    if (!platforms) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    err = clGetPlatformIDs(np, platforms, NULL);
    if (err != CL_SUCCESS) {
        free(platforms);
        return cf_fail_cl(err, "clGetPlatformIDs", __FILE__, __LINE__);
    }
    size_t n = 0;
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS)
            continue; /* a platform with no devices is not an error */
        cl_device_id *devs = calloc(nd, sizeof *devs);
        if (!devs) continue;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL) == CL_SUCCESS) {
            for (cl_uint d = 0; d < nd && !(filling && n >= cap); d++, n++) {
                if (out) describe(platforms[p], devs[d], (int)p, (int)d, &out[n]);
                if (out_p) out_p[n] = platforms[p];
                if (out_d) out_d[n] = devs[d];
            }
        }
        free(devs);
    }
    free(platforms);
    *count = n;
    return CLFORMER_OK;
}

clformer_status clformer_list_devices(clformer_device_info **devices, size_t *count)
{
    size_t n = 0;
    *devices = NULL;
    *count = 0;
    CF_TRY(enumerate(NULL, NULL, NULL, 0, &n));
    if (n == 0) return CLFORMER_OK;
    clformer_device_info *list = calloc(n, sizeof *list);
    if (!list) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = enumerate(list, NULL, NULL, n, &n);
    if (st != CLFORMER_OK) {
        free(list);
        return st;
    }
    *devices = list;
    *count = n;
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* Selection                                                                  */
/* ------------------------------------------------------------------------- */

static bool better(const clformer_device_info *a, const clformer_device_info *b)
{
    int ta = cf_device_tier(a), tb = cf_device_tier(b);
    if (ta != tb) return ta < tb;
    uint64_t pa = (uint64_t)a->compute_units * a->clock_mhz;
    uint64_t pb = (uint64_t)b->compute_units * b->clock_mhz;
    return pa > pb;
}

static bool parse_index(const char *s, size_t len, int *value)
{
    if (len == 0 || len > 6) return false;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return false;
        v = v * 10 + (s[i] - '0');
    }
    *value = v;
    return true;
}

static bool type_word(const char *w, clformer_device_type *type)
{
    if (!strcasecmp(w, "gpu")) *type = CLFORMER_DEVICE_GPU;
    else if (!strcasecmp(w, "cpu")) *type = CLFORMER_DEVICE_CPU;
    else if (!strcasecmp(w, "accelerator") || !strcasecmp(w, "acc"))
        *type = CLFORMER_DEVICE_ACCELERATOR;
    else return false;
    return true;
}

const char *clformer_device_type_name(clformer_device_type t)
{
    switch (t) {
    case CLFORMER_DEVICE_GPU: return "gpu";
    case CLFORMER_DEVICE_CPU: return "cpu";
    case CLFORMER_DEVICE_ACCELERATOR: return "accelerator";
    default: return "other";
    }
}

/* How well device d matches a text selector: 0 not at all; 1 through the
 * device's vendor or name only; 2 through its platform's name or vendor (or
 * its type). A name like `intel` matches both Intel's own OpenCL platform and
 * PoCL's device on an Intel CPU (named "pthread-...-Intel(R) Xeon(R)", vendor
 * GenuineIntel): the platform is meant, so platform matches win. */
static int matches(const clformer_device_info *d, const char *sel)
{
    clformer_device_type type;
    const char *colon = strchr(sel, ':');
    if (!colon) {
        /* a simulator only when named: a type word never picks Oclgrind,
         * which would otherwise be "the best GPU" of a machine without one */
        if (type_word(sel, &type)) return d->type == type && !d->simulator ? 2 : 0;
        if (contains_nocase(d->platform, sel) || contains_nocase(d->platform_vendor, sel)) return 2;
        return contains_nocase(d->vendor, sel) || contains_nocase(d->name, sel) ? 1 : 0;
    }
    char left[256], right[256];
    size_t ll = (size_t)(colon - sel);
    if (ll >= sizeof left || strlen(colon + 1) >= sizeof right) return 0;
    memcpy(left, sel, ll);
    left[ll] = '\0';
    strcpy(right, colon + 1);
    bool right_ok = type_word(right, &type) ? d->type == type : contains_nocase(d->name, right);
    if (!right_ok) return 0;
    if (contains_nocase(d->platform, left) || contains_nocase(d->platform_vendor, left)) return 2;
    return contains_nocase(d->vendor, left) ? 1 : 0;
}

static void list_devices_into(char *buf, size_t cap, const clformer_device_info *devs, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "\n  %-5s %s | %s | %s (%s)", devs[i].selector,
                         devs[i].platform, devs[i].vendor, devs[i].name, clformer_device_type_name(devs[i].type));
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* The selector without surrounding blanks ("" for NULL). */
static void trim_selector(const char *selector, char *sel, size_t cap)
{
    sel[0] = '\0';
    if (!selector) return;
    while (isspace((unsigned char)*selector)) selector++;
    snprintf(sel, cap, "%s", selector);
    for (size_t l = strlen(sel); l > 0 && isspace((unsigned char)sel[l - 1]); l--)
        sel[l - 1] = '\0';
}

clformer_status clformer_select_device(const clformer_device_info *devs, size_t n,
                                       const char *selector, size_t *index)
{
    if (n == 0)
        return cf_fail(CLFORMER_ERR_NO_DEVICE,
                       "no OpenCL device found: install a driver (on Debian: apt-get install "
                       "pocl-opencl-icd for the CPU) and check OCL_ICD_VENDORS if it is set");
    char sel[256];
    trim_selector(selector, sel, sizeof sel);

    long best = -1;
    const char *colon = strchr(sel, ':');
    int pi, di;
    if (sel[0] == '\0') {
        /* default: best non-simulator; a simulator only when nothing else exists */
        for (size_t i = 0; i < n; i++)
            if (best < 0 || better(&devs[i], &devs[best])) best = (long)i;
    } else if (colon && parse_index(sel, (size_t)(colon - sel), &pi) &&
               parse_index(colon + 1, strlen(colon + 1), &di)) {
        for (size_t i = 0; i < n; i++)
            if (devs[i].platform_index == pi && devs[i].device_index == di) best = (long)i;
    } else {
        int strength = 0;
        for (size_t i = 0; i < n; i++) {
            int m = matches(&devs[i], sel);
            if (m > strength || (m > 0 && m == strength && better(&devs[i], &devs[best]))) {
                best = (long)i;
                strength = m;
            }
        }
    }
    if (best < 0) {
        char listing[4096];
        list_devices_into(listing, sizeof listing, devs, n);
        /* a type word that only a simulator has: say why it was not taken */
        const char *simulator = NULL;
        clformer_device_type type;
        for (size_t i = 0; i < n && !colon && type_word(sel, &type); i++)
            if (devs[i].simulator && devs[i].type == type) simulator = devs[i].name;
        char why[320] = "";
        if (simulator)
            snprintf(why, sizeof why, "\n%s is a simulator, which a type never selects: name it "
                     "(e.g. oclgrind) to use it", simulator);
        return cf_fail(CLFORMER_ERR_NO_DEVICE,
                       "device selector '%s' matches no OpenCL device. Devices:%s%s\n"
                       "Select a device by an index pair P:D, a type (gpu, cpu, accelerator) "
                       "or part of a platform/device name, e.g. pocl:pthread (the clformer "
                       "command reads it from CLFORMER_DEVICE)",
                       sel, listing, why);
    }
    *index = (size_t)best;
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* Context                                                                    */
/* ------------------------------------------------------------------------- */

/* Contexts alive in this process; CLBlast's caches go with the last one. */
static atomic_size_t live_contexts;

/* Copies the settings a context keeps beyond its creation. */
static clformer_status keep_settings(cf_ctx *ctx, const clformer_context_params *p)
{
    ctx->log = (cf_log_sink){p->log_level, p->log_callback, p->log_user};
    ctx->progress = p->progress;
    ctx->progress_user = p->progress_user;
    ctx->profiling = ctx->queue_profiling = p->profiling;
    if (p->kernel_dir && *p->kernel_dir && !(ctx->kernel_dir = strdup(p->kernel_dir)))
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!p->cache) return CLFORMER_OK;
    char dir[3072];
    if (p->cache_dir && *p->cache_dir)
        snprintf(dir, sizeof dir, "%s", p->cache_dir);
    else if (!cf_default_cache_dir(dir, sizeof dir))
        return CLFORMER_OK; /* nowhere to keep it: compile every time */
    if (!(ctx->cache_dir = strdup(dir)))
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    return CLFORMER_OK;
}

/* What every context takes from its params once its device (ctx->info) is
 * known: the settings it keeps, its profile, GEMM provider and attention path. */
static clformer_status configure(cf_ctx *ctx, const clformer_context_params *params)
{
    CF_TRY(keep_settings(ctx, params));
    CF_TRY(clformer_device_profile_for(&ctx->info, params->profile, &ctx->device_profile));
    ctx->reduce_wg = ctx->device_profile.reduce_wg;
    ctx->elementwise_wg = ctx->device_profile.elementwise_wg;
    clformer_status st = clformer_gemm_provider_for(&ctx->info, params->gemm, &ctx->gemm_provider);
    if (st != CLFORMER_OK) return cf_fail_prefix(st, "gemm provider: ");
    ctx->gemm_auto = cf_gemm_choice_is_auto(params->gemm);
    CF_TRY(cf_attention_tuning_parse(params->attention_tuning, &ctx->device_profile,
                                     &ctx->attention_search.on));
    return clformer_attention_path_parse(params->attention, &ctx->attention_path);
}

/* Logs the device and provider, and hands CLBlast its parameters. */
static void announce(cf_ctx *ctx, const clformer_context_params *params)
{
    cf_log(&ctx->log, CF_LOG_INFO, "device %s: %s | %s | driver %s | %s", ctx->info.selector,
           ctx->info.platform, ctx->info.name, ctx->info.driver_version, ctx->info.c_version);
    cf_log(&ctx->log, CF_LOG_INFO, "gemm provider: %s",
           clformer_gemm_provider_name(ctx->gemm_provider));
    cf_gemm_tuning_init(ctx, params->gemm_tuning);
}

static clformer_status check_params(const clformer_context_params *params)
{
    CF_TRY(CF_CHECK_SIZE(clformer_context_params, params));
    if (params->log_level < CLFORMER_LOG_ERROR || params->log_level > CLFORMER_LOG_DEBUG)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "log_level %d is not a clformer_log_level (CLFORMER_LOG_ERROR .. "
                       "CLFORMER_LOG_DEBUG)", (int)params->log_level);
    return CLFORMER_OK;
}

/* The record of `device` as clformer_list_devices lists it (its index pair
 * among every platform's devices, -1:-1 when the loader does not list it). */
static clformer_status describe_listed(cl_platform_id platform, cl_device_id device,
                                       clformer_device_info *info)
{
    size_t n = 0;
    CF_TRY(enumerate(NULL, NULL, NULL, 0, &n));
    clformer_device_info *devs = calloc(n ? n : 1, sizeof *devs);
    cl_device_id *ids = calloc(n ? n : 1, sizeof *ids);
    clformer_status st = devs && ids ? enumerate(devs, NULL, ids, n, &n)
                                     : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t i = 0;
    while (st == CLFORMER_OK && i < n && ids[i] != device) i++;
    if (st == CLFORMER_OK && i < n)
        *info = devs[i];
    else if (st == CLFORMER_OK)
        describe(platform, device, -1, -1, info);
    free(devs);
    free(ids);
    return st;
}

clformer_status clformer_context_from_cl(cl_context context, cl_device_id device,
                                         cl_command_queue queue,
                                         const clformer_context_params *params,
                                         clformer_context **out)
{
    if (!out) return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "clformer_context_from_cl: out is NULL");
    *out = NULL;
    if (!context || !device || !queue)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_from_cl: the context, device and queue are all "
                       "needed (one is NULL)");
    clformer_context_params defaults;
    if (!params) {
        clformer_context_params_default(&defaults);
        params = &defaults;
    }
    CF_TRY(check_params(params));
    cl_context queue_context = NULL;
    cl_device_id queue_device = NULL;
    cl_command_queue_properties props = 0;
    cl_platform_id platform = NULL;
    CL_CHECK(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof queue_context, &queue_context,
                                   NULL));
    CL_CHECK(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device,
                                   NULL));
    CL_CHECK(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    CL_CHECK(clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL));
    if (queue_context != context || queue_device != device)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_from_cl: the queue belongs to another %s: pass the "
                       "queue's own context and device",
                       queue_context != context ? "context" : "device");
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_from_cl: the queue runs commands out of order; "
                       "clformer enqueues a step's kernels in order: pass an in-order queue");
    if (params->profiling && !(props & CL_QUEUE_PROFILING_ENABLE))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_from_cl: params.profiling needs a queue created with "
                       "CL_QUEUE_PROFILING_ENABLE");
    cf_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = describe_listed(platform, device, &ctx->info);
    ctx->platform = platform;
    ctx->device = device;
    if (st == CLFORMER_OK) st = configure(ctx, params);
    if (st == CLFORMER_OK) {
        /* the caller's objects, kept alive for as long as this context */
        cl_int err = clRetainContext(context);
        if (err == CL_SUCCESS) {
            ctx->context = context;
            atomic_fetch_add(&live_contexts, 1);
            err = clRetainCommandQueue(queue);
        }
        if (err == CL_SUCCESS) {
            ctx->queue = queue;
            ctx->queue_profiling = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
            announce(ctx, params);
            *out = ctx;
            return CLFORMER_OK;
        }
        st = cf_fail_cl(err, ctx->context ? "clRetainCommandQueue" : "clRetainContext", __FILE__,
                        __LINE__);
    }
    clformer_context_free(ctx);
    return st;
}

clformer_status clformer_context_create_with_params(const clformer_context_params *params,
                                                    cf_ctx **out)
{
    *out = NULL;
    clformer_context_params defaults;
    if (!params) {
        clformer_context_params_default(&defaults);
        params = &defaults;
    }
    CF_TRY(check_params(params));
    const char *selector = params->device;
    const bool profiling = params->profiling;
    size_t n = 0;
    CF_TRY(enumerate(NULL, NULL, NULL, 0, &n));
    clformer_device_info *devs = calloc(n ? n : 1, sizeof *devs);
    cl_platform_id *plats = calloc(n ? n : 1, sizeof *plats);
    cl_device_id *ids = calloc(n ? n : 1, sizeof *ids);
    cf_ctx *ctx = calloc(1, sizeof *ctx);
    clformer_status st = CLFORMER_OK;
    size_t chosen = 0;
    if (!devs || !plats || !ids || !ctx) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    st = enumerate(devs, plats, ids, n, &n);
    if (st == CLFORMER_OK) st = clformer_select_device(devs, n, selector, &chosen);
    if (st != CLFORMER_OK) goto done;

    ctx->info = devs[chosen];
    ctx->platform = plats[chosen];
    ctx->device = ids[chosen];
    st = configure(ctx, params);
    if (st != CLFORMER_OK) goto done;
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ctx->platform,
                                     0};
    ctx->context = clCreateContext(props, 1, &ctx->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        st = cf_fail_cl(err, "clCreateContext", __FILE__, __LINE__);
        goto done;
    }
    atomic_fetch_add(&live_contexts, 1);
    ctx->queue = clCreateCommandQueue(ctx->context, ctx->device,
                                      profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS) {
        st = cf_fail_cl(err, "clCreateCommandQueue", __FILE__, __LINE__);
        goto done;
    }
    announce(ctx, params);
done:
    free(devs);
    free(plats);
    free(ids);
    if (st != CLFORMER_OK) {
        clformer_context_free(ctx);
        return st;
    }
    *out = ctx;
    return CLFORMER_OK;
}

clformer_status cf_context_create(const char *selector, bool profiling, cf_ctx **ctx)
{
    *ctx = NULL;
    clformer_context_params params;
    CF_TRY(clformer_context_params_from_env(&params));
    if (selector) params.device = selector;
    params.profiling = profiling;
    return clformer_context_create_with_params(&params, ctx);
}

clformer_status clformer_context_create(const char *selector, clformer_context **ctx)
{
    return cf_context_create(selector, false, ctx);
}

void clformer_context_free(clformer_context *ctx)
{
    if (!ctx) return;
    if (ctx->queue) clFinish(ctx->queue);
    cf_cache_write_deferred(ctx);
    for (size_t i = 0; i < ctx->n_profile; i++) {
        if (ctx->profile[i].event) clReleaseEvent(ctx->profile[i].event);
        if (ctx->profile[i].start) clReleaseEvent(ctx->profile[i].start);
    }
    free(ctx->profile);
    free(ctx->cache_dir);
    free(ctx->kernel_dir);
    cf_programs_release(ctx);
    if (ctx->scratch) clReleaseMemObject(ctx->scratch);
    for (size_t i = 0; i < ctx->n_retired; i++) clReleaseMemObject(ctx->retired[i]);
    free(ctx->retired);
    if (ctx->queue) clReleaseCommandQueue(ctx->queue);
    if (ctx->context) {
        if (atomic_fetch_sub(&live_contexts, 1) == 1) cf_gemm_release_caches();
        clReleaseContext(ctx->context);
    }
    free(ctx);
}

const clformer_device_profile *clformer_context_profile(const clformer_context *ctx)
{
    return &ctx->device_profile;
}

const clformer_device_info *clformer_context_device(const clformer_context *ctx)
{
    return &ctx->info;
}

clformer_program_stats clformer_context_program_stats(const clformer_context *ctx)
{
    return ctx->program_stats;
}

/* Whether device d is one of the devices `sel` names, given the one
 * clformer_select_device chose (`best`): an index pair names one device, the
 * default names the devices of the best one's tier, anything else every
 * device it matches. */
static bool among_matches(const clformer_device_info *d, const clformer_device_info *best,
                          const char *sel)
{
    const char *colon = strchr(sel, ':');
    int pi, di;
    if (sel[0] == '\0') return cf_device_tier(d) == cf_device_tier(best);
    if (colon && parse_index(sel, (size_t)(colon - sel), &pi) &&
        parse_index(colon + 1, strlen(colon + 1), &di))
        return d == best;
    return matches(d, sel) == matches(best, sel);
}

clformer_status clformer_select_device_for_rank(const clformer_device_info *devs, size_t n,
                                                const char *selector, int local_rank,
                                                size_t *index, size_t *match_count)
{
    if (local_rank < 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "local rank %d is negative", local_rank);
    size_t best;
    CF_TRY(clformer_select_device(devs, n, selector, &best));
    char sel[256];
    trim_selector(selector, sel, sizeof sel);
    /* the matches, best first (selection order: preference, then index) */
    size_t count = 0;
    size_t *order = malloc(n * sizeof *order);
    if (!order) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < n; i++) {
        if (!among_matches(&devs[i], &devs[best], sel)) continue;
        size_t at = count++;
        while (at > 0 && better(&devs[i], &devs[order[at - 1]])) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    *index = count ? order[(size_t)local_rank % count] : best;
    free(order);
    if (match_count) *match_count = count ? count : 1;
    return CLFORMER_OK;
}
