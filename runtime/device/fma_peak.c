/*
 * The device's fp32 multiply-add throughput (clformer_context_fma_peak):
 * the compute roof of `clformer bench`'s roofline. A kernel of its own,
 * built here from the string below rather than from cl/ (it is a
 * measurement, not an op): each work-item runs 8 independent chains of
 * fma(), so every lane of the device has work while each chain waits for
 * its last result; the arguments are runtime values, so nothing folds. The
 * chains are vectors of the device's native float width: PoCL does not
 * vectorise this loop across work-items (scalar chains reached 6 GFLOP/s on
 * an AVX-512 core pair whose peak is ~360; float16 ones 108 under load), and
 * a GPU reports width 1.
 */
#include "buffer.h"
#include "clock.h"
#include "launch.h"

#include <stdio.h>
#include <string.h>

#define CHAINS 8
#define UNROLL 4 /* chain steps per loop iteration: the loop's own work is 1 in 32 */
#define DEFAULT_ITEMS_PER_CU 4096
#define TARGET_SECONDS 0.05
#define REPEATS 3

/* Built with -DV=<vector type> -DSTORE=<vstoreN or a plain store>. */
static const char source[] =
    "__kernel void fma_peak(__global float *out, float a_, float b_, int iterations)\n"
    "{\n"
    "    const V a = (V)(a_), b = (V)(b_), s = (V)((float)get_global_id(0) * 1e-9f);\n"
    "    V x0 = s, x1 = s + 1e-7f, x2 = s + 2e-7f, x3 = s + 3e-7f;\n"
    "    V x4 = s + 4e-7f, x5 = s + 5e-7f, x6 = s + 6e-7f, x7 = s + 7e-7f;\n"
    "    for (int i = 0; i < iterations; i++) {\n"
    "#define STEP x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); "
    "x3 = fma(x3, a, b); x4 = fma(x4, a, b); x5 = fma(x5, a, b); x6 = fma(x6, a, b); "
    "x7 = fma(x7, a, b);\n"
    "        STEP STEP STEP STEP\n"
    "    }\n"
    "    STORE(((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)), get_global_id(0), out);\n"
    "}\n";

/* The device's native float width, as OpenCL C spells its vectors. */
static unsigned width_of(const cf_ctx *ctx)
{
    const unsigned w = ctx->info.native_vector_width_float;
    return w == 2 || w == 4 || w == 8 || w == 16 ? w : 1;
}

static clformer_status build(cf_ctx *ctx, cl_program *program, cl_kernel *kernel)
{
    const char *text = source;
    cl_int err;
    *program = clCreateProgramWithSource(ctx->context, 1, &text, NULL, &err);
    CL_CHECK(err);
    char options[128];
    const unsigned w = width_of(ctx);
    if (w == 1) snprintf(options, sizeof options, "-DV=float \"-DSTORE(v,i,p)=((p)[i] = (v))\"");
    else snprintf(options, sizeof options, "-DV=float%u -DSTORE=vstore%u", w, w);
    err = clBuildProgram(*program, 1, &ctx->device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(*program, ctx->device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log,
                              NULL);
        return cf_fail(CLFORMER_ERR_BUILD, "the FMA peak kernel did not build: %s", log);
    }
    *kernel = clCreateKernel(*program, "fma_peak", &err);
    CL_CHECK(err);
    return CLFORMER_OK;
}

/* Seconds one launch of `iterations` took. */
static clformer_status launch(cf_ctx *ctx, cl_kernel k, cl_mem out, size_t items,
                              cl_int iterations, double *seconds)
{
    const cl_float a = 0.999999f, b = 1e-7f;
    CL_CHECK(clSetKernelArg(k, 0, sizeof out, &out));
    CL_CHECK(clSetKernelArg(k, 1, sizeof a, &a));
    CL_CHECK(clSetKernelArg(k, 2, sizeof b, &b));
    CL_CHECK(clSetKernelArg(k, 3, sizeof iterations, &iterations));
    cl_event ev = NULL;
    const double t0 = cf_now_s();
    CL_CHECK(clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &items, NULL, 0, NULL,
                                    ctx->queue_profiling ? &ev : NULL));
    const cl_int err = clFinish(ctx->queue);
    *seconds = cf_event_seconds(ev, cf_now_s() - t0);
    CL_CHECK(err);
    return CLFORMER_OK;
}

static clformer_status measure(cf_ctx *ctx, cl_kernel k, cl_mem out, size_t items,
                               unsigned iterations, double *gflops)
{
    double s = 0.0;
    if (iterations == 0) { /* size the launch to about TARGET_SECONDS */
        iterations = 16;
        CF_TRY(launch(ctx, k, out, items, (cl_int)iterations, &s)); /* compiles, warms up */
        CF_TRY(launch(ctx, k, out, items, (cl_int)iterations, &s));
        const double scale = s > 0 ? TARGET_SECONDS / s : 1000.0;
        const double want = iterations * (scale < 1.0 ? 1.0 : scale);
        iterations = want > 1e6 ? 1000000u : (unsigned)want;
    }
    double best = 0.0;
    for (int i = 0; i < REPEATS; i++) {
        CF_TRY(launch(ctx, k, out, items, (cl_int)iterations, &s));
        if (i == 0 || s < best) best = s;
    }
    const double flop =
        2.0 * CHAINS * UNROLL * width_of(ctx) * (double)iterations * (double)items;
    *gflops = best > 0.0 ? flop / best * 1e-9 : 0.0;
    return CLFORMER_OK;
}

clformer_status clformer_context_fma_peak(clformer_context *ctx, size_t work_items,
                                          unsigned iterations, double *gflops)
{
    if (!ctx || !gflops)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_fma_peak: ctx and gflops must not be NULL");
    *gflops = 0.0;
    if (iterations > 1000000)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "clformer_context_fma_peak: %u iterations is more than 1000000; pass 0 "
                       "to size the launch to about 50 ms", iterations);
    if (work_items == 0)
        work_items = DEFAULT_ITEMS_PER_CU * (ctx->info.compute_units ? ctx->info.compute_units : 1);
    cl_program program = NULL;
    cl_kernel kernel = NULL;
    cl_mem out = NULL;
    clformer_status st = build(ctx, &program, &kernel);
    if (st == CLFORMER_OK)
        st = cf_buffer_alloc(ctx, work_items * width_of(ctx), "FMA peak results", &out);
    if (st == CLFORMER_OK) st = measure(ctx, kernel, out, work_items, iterations, gflops);
    if (out) cf_buffer_free(ctx, out);
    if (kernel) clReleaseKernel(kernel);
    if (program) clReleaseProgram(program);
    return st;
}
