/*
 * The host provider: OpenBLAS's sgemm run by a native kernel on the
 * context's own in-order queue, so it is ordered with the OpenCL kernels
 * around it and needs no copies. clEnqueueNativeKernel copies the argument
 * block and replaces the cl_mem handles in it by the buffers' addresses in
 * host memory (a CPU device keeps its buffers there), where sgemm works in
 * place. Events are recorded under "gemm" like CLBlast's.
 */
#include "gemm_provider.h"
#include "launch.h"

#ifdef CLFORMER_HAVE_OPENBLAS

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* The argument block: the fixed part, then for a batch with offsets
 * 3 * batch offsets (A's, B's, C's) and 2 * batch floats (alphas, betas). */
typedef struct {
    void *a, *b, *c; /* cl_mem when enqueued; host addresses when run */
    int trans_a, trans_b, m, n, k, lda, ldb, ldc;
    size_t batch, a_off, b_off, c_off, a_stride, b_stride, c_stride;
    float alpha, beta;
    int per_matrix; /* offsets and scalars follow the block */
} host_args;

static size_t args_size(size_t batch, bool per_matrix)
{
    return sizeof(host_args) +
           (per_matrix ? batch * (3 * sizeof(size_t) + 2 * sizeof(float)) : 0);
}

static void CL_CALLBACK run(void *block)
{
    const host_args *h = block;
    const float *a = h->a, *b = h->b;
    float *c = h->c;
    const enum CBLAS_TRANSPOSE ta = h->trans_a ? CblasTrans : CblasNoTrans,
                               tb = h->trans_b ? CblasTrans : CblasNoTrans;
    const unsigned char *tail = (const unsigned char *)block + sizeof(host_args);
    for (size_t i = 0; i < h->batch; i++) {
        size_t ao = h->a_off + i * h->a_stride, bo = h->b_off + i * h->b_stride,
               co = h->c_off + i * h->c_stride;
        float alpha = h->alpha, beta = h->beta;
        if (h->per_matrix) { /* memcpy: the copied block need not be aligned for size_t */
            memcpy(&ao, tail + i * sizeof(size_t), sizeof ao);
            memcpy(&bo, tail + (h->batch + i) * sizeof(size_t), sizeof bo);
            memcpy(&co, tail + (2 * h->batch + i) * sizeof(size_t), sizeof co);
            const unsigned char *f = tail + 3 * h->batch * sizeof(size_t);
            memcpy(&alpha, f + i * sizeof(float), sizeof alpha);
            memcpy(&beta, f + (h->batch + i) * sizeof(float), sizeof beta);
        }
        cblas_sgemm(CblasRowMajor, ta, tb, h->m, h->n, h->k, alpha, a + ao, h->lda, b + bo,
                    h->ldb, beta, c + co, h->ldc);
    }
}

static bool fits_int(size_t v) { return v <= INT_MAX; }

clformer_status cf_gemm_host(cf_ctx *ctx, const cf_gemm_call *g)
{
    if (!fits_int(g->m) || !fits_int(g->n) || !fits_int(g->k) || !fits_int(g->lda) ||
        !fits_int(g->ldb) || !fits_int(g->ldc))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "gemm: sizes and leading dimensions above %d need the clblast provider "
                       "(CLFORMER_GEMM=clblast)",
                       INT_MAX);
    const bool per_matrix = g->a_offs != NULL;
    const size_t size = args_size(g->batch, per_matrix);
    host_args *h = calloc(1, size);
    if (!h) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    *h = (host_args){.a = g->a, .b = g->b, .c = g->c, .trans_a = g->trans_a,
                     .trans_b = g->trans_b, .m = (int)g->m, .n = (int)g->n, .k = (int)g->k,
                     .lda = (int)g->lda, .ldb = (int)g->ldb, .ldc = (int)g->ldc,
                     .batch = g->batch, .a_off = g->a_off, .b_off = g->b_off,
                     .c_off = g->c_off, .a_stride = g->a_stride, .b_stride = g->b_stride,
                     .c_stride = g->c_stride, .alpha = g->alpha, .beta = g->beta,
                     .per_matrix = per_matrix};
    if (per_matrix) {
        unsigned char *tail = (unsigned char *)h + sizeof *h;
        const size_t n = g->batch;
        memcpy(tail, g->a_offs, n * sizeof(size_t));
        memcpy(tail + n * sizeof(size_t), g->b_offs, n * sizeof(size_t));
        memcpy(tail + 2 * n * sizeof(size_t), g->c_offs, n * sizeof(size_t));
        memcpy(tail + 3 * n * sizeof(size_t), g->alphas, n * sizeof(float));
        memcpy(tail + 3 * n * sizeof(size_t) + n * sizeof(float), g->betas, n * sizeof(float));
    }
    const cl_mem mems[3] = {g->a, g->b, g->c};
    const void *locs[3] = {&h->a, &h->b, &h->c};
    cl_event *slot = cf_profile_slot(ctx, "gemm");
    cl_int err = clEnqueueNativeKernel(ctx->queue, run, h, size, 3, mems, locs, 0, NULL, slot);
    free(h); /* the queue keeps its own copy */
    if (err != CL_SUCCESS) {
        if (slot) ctx->n_profile--;
        return cf_fail_cl(err, "clEnqueueNativeKernel (host gemm)", __FILE__, __LINE__);
    }
    return CLFORMER_OK;
}

bool cf_gemm_host_available(void) { return true; }

#else /* built without OpenBLAS */

clformer_status cf_gemm_host(cf_ctx *ctx, const cf_gemm_call *g)
{
    (void)ctx, (void)g;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "the host GEMM provider is not in this build (install libopenblas-dev and "
                   "rebuild)");
}

bool cf_gemm_host_available(void) { return false; }

#endif
