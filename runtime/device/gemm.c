/* The CLBlast wrapper: row-major layout, events recorded under "gemm". */
#include "gemm.h"
#include "launch.h"
#include "log.h"

#include <clblast_c.h>

static CLBlastTranspose tr(bool t) { return t ? CLBlastTransposeYes : CLBlastTransposeNo; }

/* Degenerate shapes: CLBlast rejects zero sizes; k == 0 means C = beta * C. */
static clformer_status degenerate(cf_ctx *ctx, size_t m, size_t n, size_t k, float beta,
                                  bool *handled)
{
    *handled = m == 0 || n == 0 || k == 0;
    if (*handled && m && n && k == 0 && beta != 1.0f)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "gemm with k == 0 and beta != 1 is not supported");
    (void)ctx;
    return CLFORMER_OK;
}

clformer_status cf_gemm(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                        float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off,
                        size_t ldb, float beta, cl_mem c, size_t c_off, size_t ldc)
{
    bool handled;
    CF_TRY(degenerate(ctx, m, n, k, beta, &handled));
    if (handled) return CLFORMER_OK;
    cl_event begin = cf_profile_begin(ctx);
    int err = CLBlastSgemm(CLBlastLayoutRowMajor, tr(trans_a), tr(trans_b), m, n, k, alpha, a,
                           a_off, lda, b, b_off, ldb, beta, c, c_off, ldc, &ctx->queue, NULL);
    cf_profile_end(ctx, "gemm", begin);
    CLBLAST_CHECK(err);
    return CLFORMER_OK;
}

clformer_status cf_gemm_strided_batched(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m,
                                        size_t n, size_t k, float alpha, cl_mem a, size_t a_off,
                                        size_t lda, size_t a_stride, cl_mem b, size_t b_off,
                                        size_t ldb, size_t b_stride, float beta, cl_mem c,
                                        size_t c_off, size_t ldc, size_t c_stride, size_t batch)
{
    bool handled;
    CF_TRY(degenerate(ctx, m, n, k, beta, &handled));
    if (handled || batch == 0) return CLFORMER_OK;
    cl_event begin = cf_profile_begin(ctx);
    int err = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, tr(trans_a), tr(trans_b), m, n,
                                         k, alpha, a, a_off, lda, a_stride, b, b_off, ldb,
                                         b_stride, beta, c, c_off, ldc, c_stride, batch,
                                         &ctx->queue, NULL);
    cf_profile_end(ctx, "gemm", begin);
    CLBLAST_CHECK(err);
    return CLFORMER_OK;
}

clformer_status cf_gemm_batched(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                                size_t k, const float *alphas, cl_mem a, const size_t *a_offs,
                                size_t lda, cl_mem b, const size_t *b_offs, size_t ldb,
                                const float *betas, cl_mem c, const size_t *c_offs, size_t ldc,
                                size_t batch)
{
    bool handled;
    CF_TRY(degenerate(ctx, m, n, k, 1.0f, &handled));
    if (handled || batch == 0) return CLFORMER_OK;
    if (ctx->info.simulator) {
        /* CLBlastSgemmBatched makes and releases small buffers per call, and
         * Oclgrind 21.10 then misreports reads of recycled buffers as
         * uninitialised (see cf_buffer_free): there, run the products one by one. */
        for (size_t i = 0; i < batch; i++)
            CF_TRY(cf_gemm(ctx, trans_a, trans_b, m, n, k, alphas[i], a, a_offs[i], lda, b,
                           b_offs[i], ldb, betas[i], c, c_offs[i], ldc));
        return CLFORMER_OK;
    }
    cl_event begin = cf_profile_begin(ctx);
    int err = CLBlastSgemmBatched(CLBlastLayoutRowMajor, tr(trans_a), tr(trans_b), m, n, k,
                                  alphas, a, a_offs, lda, b, b_offs, ldb, betas, c, c_offs, ldc,
                                  batch, &ctx->queue, NULL);
    cf_profile_end(ctx, "gemm", begin);
    CLBLAST_CHECK(err);
    return CLFORMER_OK;
}

void cf_gemm_release_caches(void)
{
    CLBlastStatusCode st = CLBlastClearCache();
    if (st != CLBlastSuccess) cf_log(NULL, CF_LOG_DEBUG, "CLBlastClearCache returned %d", (int)st);
}
