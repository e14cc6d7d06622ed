/* Device buffer allocation with clear out-of-memory reports, and copies. */
#include "buffer.h"
#include "launch.h"
#include "program.h"

#include <stdlib.h>
#include <string.h>

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

clformer_status cf_buffer_alloc(cf_ctx *ctx, size_t count, const char *what, cl_mem *out)
{
    *out = NULL;
    size_t bytes = (count ? count : 1) * 4;
    const clformer_device_info *d = &ctx->info;
    const uint64_t most = cf_buffer_max_bytes(d->max_alloc_bytes);
    if (count > SIZE_MAX / 4 || bytes > most)
        /* the figures and words of `clformer devices`, so the two agree */
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "cannot allocate %s: %.1f MiB is more than one buffer may hold on %s "
                       "(clformer devices: %.0f MiB max allocation, %.0f MiB global%s); use a "
                       "smaller batch or model",
                       what, MIB(bytes), d->name, MIB(d->max_alloc_bytes),
                       MIB(d->global_mem_bytes),
                       most < d->max_alloc_bytes ? "; clformer's buffers stay under 2^31 "
                                                   "elements, 8 GiB, for CLBlast's int offsets"
                                                 : "");
    if (ctx->bytes_allocated + bytes > d->global_mem_bytes)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "cannot allocate %s: %.1f MiB requested with %.1f MiB already in use "
                       "on %s (clformer devices: %.0f MiB global); use a smaller batch or model",
                       what, MIB(bytes), MIB(ctx->bytes_allocated), d->name,
                       MIB(d->global_mem_bytes));
    cl_int err;
    cl_mem buf = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS) {
        /* Drivers may allocate lazily: touch the memory now so that failure is
         * reported here, by name, rather than by some later kernel. */
        clformer_status st = cf_fill_u32(ctx, buf, 0, bytes / 4, 0);
        if (st == CLFORMER_OK) err = clFinish(ctx->queue);
        else if (st != CLFORMER_ERR_OUT_OF_MEMORY) {
            clReleaseMemObject(buf);
            return st;
        } else err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        if (err != CL_SUCCESS) clReleaseMemObject(buf);
    }
    if (err != CL_SUCCESS)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "cannot allocate %s (%.1f MiB, %.1f MiB already in use, device has "
                       "%.1f MiB): %s; use a smaller batch or model",
                       what, MIB(bytes), MIB(ctx->bytes_allocated), MIB(d->global_mem_bytes),
                       cf_cl_error_name(err));
    ctx->bytes_allocated += bytes;
    *out = buf;
    return CLFORMER_OK;
}

/* Oclgrind 21.10 gives a new buffer the id of a released one but keeps the
 * old buffer's shadow memory, so reads past the old size are reported as
 * uninitialised. On a simulator, buffers are released with the context. */
static void release(cf_ctx *ctx, cl_mem buf)
{
    if (ctx->device_profile.keep_released_buffers) {
        cl_mem *grown = realloc(ctx->retired, (ctx->n_retired + 1) * sizeof *grown);
        if (grown) {
            ctx->retired = grown;
            ctx->retired[ctx->n_retired++] = buf;
            return;
        }
    }
    clReleaseMemObject(buf);
}

void cf_buffer_free(cf_ctx *ctx, cl_mem buf)
{
    if (!buf) return;
    size_t bytes = 0;
    if (clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS &&
        bytes <= ctx->bytes_allocated)
        ctx->bytes_allocated -= bytes;
    release(ctx, buf);
}

/* Oclgrind 21.10 records a host write that does not cover the whole buffer
 * in the wrong part of its shadow memory (it even marks the rest of the
 * buffer uninitialised), so later reads are reported as uninitialised. On a
 * simulator, data is written to the whole of a staging buffer and a kernel
 * copies it into place; real devices write directly. */
static clformer_status upload_via_staging(cf_ctx *ctx, cl_mem buf, size_t off, const void *host,
                                          size_t count)
{
    cl_int err;
    cl_mem staging = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, count * 4, NULL, &err);
    if (err != CL_SUCCESS) return cf_fail_cl(err, "clCreateBuffer(staging)", __FILE__, __LINE__);
    clformer_status st = CLFORMER_OK;
    err = clEnqueueWriteBuffer(ctx->queue, staging, CL_TRUE, 0, count * 4, host, 0, NULL, NULL);
    if (err != CL_SUCCESS) st = cf_fail_cl(err, "clEnqueueWriteBuffer", __FILE__, __LINE__);
    if (st == CLFORMER_OK) st = cf_copy(ctx, staging, 0, buf, off, count);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    release(ctx, staging);
    return st;
}

clformer_status cf_upload(cf_ctx *ctx, cl_mem buf, size_t off, const void *host, size_t count)
{
    if (count == 0) return CLFORMER_OK;
    if (ctx->device_profile.stage_uploads) return upload_via_staging(ctx, buf, off, host, count);
    CL_CHECK(clEnqueueWriteBuffer(ctx->queue, buf, CL_TRUE, off * 4, count * 4, host, 0, NULL,
                                  NULL));
    return CLFORMER_OK;
}

clformer_status cf_download(cf_ctx *ctx, cl_mem buf, size_t off, void *host, size_t count)
{
    if (count == 0) return CLFORMER_OK;
    CL_CHECK(clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, off * 4, count * 4, host, 0, NULL,
                                 NULL));
    return CLFORMER_OK;
}

clformer_status cf_copy(cf_ctx *ctx, cl_mem src, size_t src_off, cl_mem dst, size_t dst_off,
                        size_t count)
{
    /* A kernel, not clEnqueueCopyBuffer: Oclgrind 21.10 does not carry the
     * initialised state of copied memory over (see cl/tensor.cl). */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_COPY_U32, &k));
    size_t global, local;
    cf_run_grid(ctx, count, &global, &local);
    return CF_LAUNCH(ctx, "copy", cf_f32_bytes(2 * count), k, 1, &global, &local, CF_MEM(dst),
                     CF_U64(dst_off),
                     CF_MEM(src), CF_U64(src_off), CF_U64(count));
}

clformer_status cf_fill_u32(cf_ctx *ctx, cl_mem buf, size_t off, size_t count, uint32_t value)
{
    /* A kernel, not clEnqueueFillBuffer: see cl/tensor.cl. */
    cl_kernel k;
    CF_TRY(cf_kernel_get(ctx, CF_K_FILL_U32, &k));
    size_t global, local;
    cf_run_grid(ctx, count, &global, &local);
    return CF_LAUNCH(ctx, "fill", cf_f32_bytes(count), k, 1, &global, &local, CF_MEM(buf),
                     CF_U64(off), CF_U64(count),
                     CF_U32(value));
}

clformer_status cf_fill(cf_ctx *ctx, cl_mem buf, size_t off, size_t count, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, 4);
    return cf_fill_u32(ctx, buf, off, count, bits);
}

clformer_status cf_finish(cf_ctx *ctx)
{
    CL_CHECK(clFinish(ctx->queue));
    return CLFORMER_OK;
}

clformer_status cf_scratch(cf_ctx *ctx, size_t count, cl_mem *out)
{
    if (count > ctx->scratch_count) {
        /* Released memory stays valid for commands already enqueued on it. */
        cf_buffer_free(ctx, ctx->scratch);
        ctx->scratch = NULL;
        ctx->scratch_count = 0;
        size_t grown = count < 4096 ? 4096 : count + count / 4;
        CF_TRY(cf_buffer_alloc(ctx, grown, "scratch buffer", &ctx->scratch));
        ctx->scratch_count = grown;
    }
    *out = ctx->scratch;
    return CLFORMER_OK;
}
