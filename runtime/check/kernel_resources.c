/*
 * clformer_check_kernel_resources: what the device's own OpenCL compiler made
 * of every kernel clformer builds for it (tools/tuning/kernel_resources, run
 * by tools/device-check.sh). The ground truth that tools/proxy/register-proxy.sh
 * estimates with clang: private memory per work item (off-chip on GPUs),
 * local memory per group, the largest group the kernel may launch with, and
 * the compiler's log, which on NVIDIA (built with -cl-nv-verbose) has ptxas'
 * registers and spill bytes per kernel. Built from source, never from the
 * binary cache, so that the compiler runs and writes its log.
 */
#include "clformer_check.h"
#include "gemm_provider.h"
#include "profile.h"
#include "program.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ptxas writes its registers and spills to the build log with this option;
 * other vendors reject unknown options, so it is NVIDIA's only. */
static const char *verbose_option(const cf_ctx *ctx)
{
    return strstr(ctx->info.platform, "NVIDIA") ? "-cl-nv-verbose" : "";
}

static clformer_status report_kernels(cf_ctx *ctx, cl_program program, const char *name,
                                      size_t head_dim, const char *log,
                                      clformer_check_kernel_sink sink, void *user)
{
    cl_uint n = 0;
    cl_int err = clCreateKernelsInProgram(program, 0, NULL, &n);
    if (err != CL_SUCCESS) return cf_fail_cl(err, "clCreateKernelsInProgram", __FILE__, __LINE__);
    cl_kernel *kernels = calloc(n ? n : 1, sizeof *kernels);
    if (!kernels) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    err = clCreateKernelsInProgram(program, n, kernels, NULL);
    clformer_status st = err == CL_SUCCESS
                             ? CLFORMER_OK
                             : cf_fail_cl(err, "clCreateKernelsInProgram", __FILE__, __LINE__);
    for (cl_uint i = 0; i < n && st == CLFORMER_OK; i++) {
        char kernel[256] = "";
        cl_ulong private_bytes = 0, local_bytes = 0;
        size_t max_group = 0, multiple = 0;
        clGetKernelInfo(kernels[i], CL_KERNEL_FUNCTION_NAME, sizeof kernel - 1, kernel, NULL);
        clGetKernelWorkGroupInfo(kernels[i], ctx->device, CL_KERNEL_PRIVATE_MEM_SIZE,
                                 sizeof private_bytes, &private_bytes, NULL);
        clGetKernelWorkGroupInfo(kernels[i], ctx->device, CL_KERNEL_LOCAL_MEM_SIZE,
                                 sizeof local_bytes, &local_bytes, NULL);
        clGetKernelWorkGroupInfo(kernels[i], ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof max_group, &max_group, NULL);
        clGetKernelWorkGroupInfo(kernels[i], ctx->device,
                                 CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof multiple,
                                 &multiple, NULL);
        const clformer_check_kernel k = {name,        kernel,      head_dim, private_bytes,
                                         local_bytes, max_group, multiple, log};
        sink(&k, user);
    }
    for (cl_uint i = 0; i < n; i++)
        if (kernels[i]) clReleaseKernel(kernels[i]);
    free(kernels);
    return st;
}

/* Builds cl/<name>.cl with the profile's options plus `extra` and hands
 * each kernel to the sink with the build log. */
static clformer_status build_and_report(cf_ctx *ctx, const char *name, size_t head_dim,
                                        const char *extra, clformer_check_kernel_sink sink,
                                        void *user)
{
    char *source = NULL, options[1024], with[512];
    snprintf(with, sizeof with, "%s%s%s", extra, *extra ? " " : "", verbose_option(ctx));
    cf_program_options(ctx, with, options, sizeof options);
    CF_TRY(cf_program_source(ctx->kernel_dir, name, &source));
    cl_program program;
    clformer_status st = cf_program_build(ctx, name, source, options, &program);
    free(source);
    if (st != CLFORMER_OK) return st;
    char *log = cf_program_build_log(ctx, program);
    st = report_kernels(ctx, program, name, head_dim, log ? log : "", sink, user);
    free(log);
    clReleaseProgram(program);
    return st;
}

clformer_status clformer_check_kernel_resources(clformer_context *ctx, const size_t *head_dims,
                                                size_t n_head_dims,
                                                clformer_check_kernel_sink sink, void *user)
{
    if (!ctx || !sink || (n_head_dims && !head_dims))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_check_kernel_resources needs a context, a sink and the head "
                       "sizes it names");
    for (const char *const *p = cf_program_names(); *p; p++) {
        if (!strcmp(*p, "gemm")) {
            /* the tiled GEMM provider's kernel per tile set the device holds,
             * on the forward's transposes; "head_dim": the block's rows */
            for (int i = 0; i < CF_GEMM_TILE_SETS; i++) {
                const cf_gemm_tiles *t = &cf_gemm_tile_sets[i];
                if (!cf_gemm_tiles_fit(ctx, t)) continue;
                char tiles[160];
                cf_gemm_tiles_options(t, false, true, tiles, sizeof tiles);
                CF_TRY(build_and_report(ctx, *p, (size_t)t->gm, tiles, sink, user));
            }
            continue;
        }
        if (strcmp(*p, "flash_attention_tiled")) {
            CF_TRY(build_and_report(ctx, *p, 0, "", sink, user));
            continue;
        }
        /* the tiled kernels exist per head size, with the tiles the profile
         * gives this device; none where it runs the per-row kernels */
        for (size_t i = 0; i < n_head_dims; i++) {
            cf_attention_tiles t;
            const char *why;
            if (!cf_attention_tiles_for(&ctx->device_profile, head_dims[i], &t, &why)) continue;
            char tiles[256];
            cf_attention_tiles_options(&t, tiles, sizeof tiles);
            CF_TRY(build_and_report(ctx, *p, head_dims[i], tiles, sink, user));
        }
    }
    return CLFORMER_OK;
}
