/* Kernel enqueue and the profiling record. */
#include "launch.h"
#include "program.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

cl_event *cf_profile_slot(cf_ctx *ctx, const char *family, uint64_t bytes, uint64_t flop)
{
    if (!ctx->profiling) return NULL;
    if (ctx->n_profile == ctx->profile_capacity) {
        size_t cap = ctx->profile_capacity ? ctx->profile_capacity * 2 : 1024;
        cf_profile_entry *grown = realloc(ctx->profile, cap * sizeof *grown);
        if (!grown) return NULL; /* profiling is best-effort */
        ctx->profile = grown;
        ctx->profile_capacity = cap;
    }
    cf_profile_entry *e = &ctx->profile[ctx->n_profile++];
    e->family = family;
    e->kernel = NULL;
    e->bytes = bytes;
    e->flop = flop;
    e->event = NULL;
    e->start = NULL;
    return &e->event;
}

cl_event cf_profile_begin(cf_ctx *ctx)
{
    cl_event begin = NULL;
    if (ctx->profiling && clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, &begin) != CL_SUCCESS)
        begin = NULL;
    return begin;
}

void cf_profile_end(cf_ctx *ctx, const char *family, uint64_t bytes, uint64_t flop,
                    cl_event begin)
{
    if (!begin) return;
    cl_event *slot = cf_profile_slot(ctx, family, bytes, flop);
    if (!slot || clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, slot) != CL_SUCCESS) {
        if (slot) ctx->n_profile--;
        clReleaseEvent(begin);
        return;
    }
    ctx->profile[ctx->n_profile - 1].start = begin;
}

double cf_event_seconds(cl_event ev, double wall)
{
    if (!ev) return wall;
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) ==
            CL_SUCCESS &&
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
            CL_SUCCESS &&
        end > start)
        wall = (double)(end - start) * 1e-9;
    clReleaseEvent(ev);
    return wall;
}

static const char *kind_name(char kind)
{
    switch (kind) {
    case 'M': return "a buffer";
    case 'L': return "local memory";
    case 'u': return "a ulong";
    case 'U': return "a uint";
    case 'i': return "an int";
    case 'f': return "a float";
    default: return "an unknown kind";
    }
}

/* The launch's arguments against the kernel's signature in cl/ (kernel_ids.h):
 * the same count and, argument by argument, the same kind. Every kernel comes
 * from cf_kernel, which recorded its row; *name gets the kernel's name in cl/
 * (NULL for a kernel of no row there). */
static clformer_status check_kinds(cf_ctx *ctx, cl_kernel kernel, size_t nargs,
                                   const cf_arg *args, const char **name)
{
    *name = NULL;
    for (size_t p = 0; p < ctx->n_programs; p++) {
        const cf_program_entry *e = &ctx->programs[p];
        for (size_t k = 0; k < e->n_kernels; k++) {
            if (e->kernels[k] != kernel) continue;
            const cf_kernel_id id = e->kernel_ids[k];
            if (id == CF_K_COUNT) return CLFORMER_OK; /* not in cl/ (a test's own source) */
            const char *kinds = cf_kernel_kinds[id];
            if (strlen(kinds) != nargs)
                return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                               "kernel %s: launched with %zu arguments, but cl/%s.cl declares "
                               "%zu; fix the launcher's argument list",
                               cf_kernel_names[id], nargs, cf_kernel_programs[id], strlen(kinds));
            for (size_t i = 0; i < nargs; i++)
                if (args[i].kind != kinds[i])
                    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                   "kernel %s: argument %zu is %s in the launch but %s in "
                                   "cl/%s.cl; fix the launcher's argument list",
                                   cf_kernel_names[id], i, kind_name(args[i].kind),
                                   kind_name(kinds[i]), cf_kernel_programs[id]);
            ctx->kernel_launches[id]++;
            *name = cf_kernel_names[id];
            return CLFORMER_OK;
        }
    }
    return CLFORMER_OK; /* a kernel made outside cf_kernel: nothing to compare with */
}

void cf_row_grid(const cf_ctx *ctx, size_t rows, size_t *global, size_t *local)
{
    const bool per_group = ctx->device_profile.gpu_layouts;
    *local = per_group ? ctx->reduce_wg : ctx->elementwise_wg;
    *global = per_group ? rows * *local : cf_round_up(rows, *local);
}

void cf_run_grid(const cf_ctx *ctx, size_t n, size_t *global, size_t *local)
{
    *local = ctx->elementwise_wg;
    if (ctx->device_profile.gpu_layouts) {
        *global = cf_round_up(n, *local);
        return;
    }
    const size_t run = cf_item_run(&ctx->device_profile), items = (n + run - 1) / run;
    if (items < *local) *local = items ? items : 1;
    *global = cf_round_up(items, *local);
}

clformer_status cf_check_rows(const char *op, size_t N, size_t C)
{
    if (N > INT_MAX || C > INT_MAX)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: N=%zu C=%zu exceed the kernels' int range; split the rows", op, N, C);
    return CLFORMER_OK;
}

clformer_status cf_launch(cf_ctx *ctx, const char *family, uint64_t bytes, cl_kernel kernel,
                          cl_uint dims, const size_t *global, const size_t *local, size_t nargs,
                          const cf_arg *args)
{
    return cf_launch_flop(ctx, family, bytes, 0, kernel, dims, global, local, nargs, args);
}

clformer_status cf_launch_flop(cf_ctx *ctx, const char *family, uint64_t bytes, uint64_t flop,
                               cl_kernel kernel, cl_uint dims, const size_t *global,
                               const size_t *local, size_t nargs, const cf_arg *args)
{
    size_t rounded[3];
    for (cl_uint d = 0; d < dims; d++) {
        if (global[d] == 0) return CLFORMER_OK; /* empty tensor: nothing to do */
        rounded[d] = local ? cf_round_up(global[d], local[d]) : global[d];
    }
    const char *kernel_name;
    CF_TRY(check_kinds(ctx, kernel, nargs, args, &kernel_name));
    for (size_t i = 0; i < nargs; i++)
        CL_CHECK(clSetKernelArg(kernel, (cl_uint)i, args[i].size, args[i].value));
    cl_event *slot = cf_profile_slot(ctx, family, bytes, flop);
    if (slot) ctx->profile[ctx->n_profile - 1].kernel = kernel_name;
    cl_int err = clEnqueueNDRangeKernel(ctx->queue, kernel, dims, NULL, rounded, local, 0, NULL,
                                        slot);
    if (err != CL_SUCCESS) {
        if (slot) ctx->n_profile--;
        char name[128] = "?";
        clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        name[sizeof name - 1] = '\0';
        clformer_status st = cf_fail_cl(err, "clEnqueueNDRangeKernel", __FILE__, __LINE__);
        return cf_fail_prefix(st, "kernel %s: ", name);
    }
    return CLFORMER_OK;
}

clformer_status clformer_context_set_profiling(clformer_context *ctx, bool on)
{
    if (on && !ctx->queue_profiling)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "kernel profiling needs a context created with "
                       "clformer_context_params.profiling = true");
    ctx->profiling = on;
    return CLFORMER_OK;
}

clformer_status clformer_context_kernel_times(clformer_context *ctx, clformer_kernel_time *times,
                                              size_t cap, size_t *n)
{
    return cf_profile_collect(ctx, times, cap, n, NULL, 0, NULL);
}

clformer_status clformer_context_kernel_times_named(clformer_context *ctx,
                                                    clformer_kernel_time *times, size_t cap,
                                                    size_t *n, clformer_named_kernel_time *kernels,
                                                    size_t kernel_cap, size_t *kernel_n)
{
    if (kernels && !kernel_n)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_kernel_times_named: kernels given without kernel_n; "
                       "pass where to put their count");
    return cf_profile_collect(ctx, times, cap, n, kernels, kernel_cap, kernel_n);
}

static int by_time_desc(const void *a, const void *b)
{
    double x = ((const cf_profile_total *)a)->ms, y = ((const cf_profile_total *)b)->ms;
    return (x < y) - (x > y);
}

static int named_by_time_desc(const void *a, const void *b)
{
    return by_time_desc(&((const clformer_named_kernel_time *)a)->time,
                        &((const clformer_named_kernel_time *)b)->time);
}

/* Adds a command's time, bytes and FLOP to a total. */
static void add_to(cf_profile_total *t, const cf_profile_entry *e, double ms)
{
    t->ms += ms;
    t->count++;
    t->bytes += e->bytes;
    t->flop += e->flop;
}

clformer_status cf_profile_collect(cf_ctx *ctx, cf_profile_total *totals, size_t cap, size_t *n,
                                   clformer_named_kernel_time *kernels, size_t kernel_cap,
                                   size_t *kernel_n)
{
    *n = 0;
    if (kernel_n) *kernel_n = 0;
    CL_CHECK(clFinish(ctx->queue));
    for (size_t i = 0; i < ctx->n_profile; i++) {
        cf_profile_entry *e = &ctx->profile[i];
        if (!e->event) continue;
        cl_ulong start = 0, end = 0;
        /* a bracketed call runs from the first marker's end to the second's */
        if (clGetEventProfilingInfo(e->start ? e->start : e->event,
                                    e->start ? CL_PROFILING_COMMAND_END : CL_PROFILING_COMMAND_START,
                                    sizeof start, &start, NULL) == CL_SUCCESS &&
            clGetEventProfilingInfo(e->event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) ==
                CL_SUCCESS &&
            end >= start) {
            const double ms = (double)(end - start) * 1e-6;
            size_t j = 0;
            while (j < *n && strcmp(totals[j].family, e->family)) j++;
            if (j == *n && *n < cap) totals[(*n)++] = (cf_profile_total){e->family, 0.0, 0, 0, 0};
            if (j < *n) add_to(&totals[j], e, ms);
            if (kernels) { /* a library call is named by its family */
                const char *name = e->kernel ? e->kernel : e->family;
                size_t q = 0;
                while (q < *kernel_n && (strcmp(kernels[q].kernel, name) ||
                                         strcmp(kernels[q].time.family, e->family)))
                    q++;
                if (q == *kernel_n && q < kernel_cap)
                    kernels[(*kernel_n)++] =
                        (clformer_named_kernel_time){name, {e->family, 0.0, 0, 0, 0}};
                if (q < *kernel_n) add_to(&kernels[q].time, e, ms);
            }
        }
        clReleaseEvent(e->event);
        if (e->start) clReleaseEvent(e->start);
    }
    ctx->n_profile = 0;
    qsort(totals, *n, sizeof *totals, by_time_desc);
    if (kernels) qsort(kernels, *kernel_n, sizeof *kernels, named_by_time_desc);
    return CLFORMER_OK;
}
