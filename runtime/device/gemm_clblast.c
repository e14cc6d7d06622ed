/* The CLBlast provider: any device; events recorded under "gemm". Where
 * the context searches CLBlast's parameters per shape (gemm_search.h), each
 * call goes through the search's hook first, which may send it to the tiled
 * kernel (gemm_tiled.c). */
#include "gemm.h"
#include "gemm_provider.h"
#include "gemm_search.h"
#include "launch.h"
#include "log.h"

#include <clblast_c.h>

static CLBlastTranspose tr(bool t) { return t ? CLBlastTransposeYes : CLBlastTransposeNo; }

static clformer_status one_by_one(cf_ctx *ctx, const cf_gemm_call *g)
{
    for (size_t i = 0; i < g->batch; i++) {
        cf_gemm_call one = *g;
        one.batch = 1;
        one.a_offs = one.b_offs = one.c_offs = NULL;
        one.a_off = g->a_offs[i], one.b_off = g->b_offs[i], one.c_off = g->c_offs[i];
        one.alpha = g->alphas[i], one.beta = g->betas[i];
        CF_TRY(cf_gemm_clblast(ctx, &one));
    }
    return CLFORMER_OK;
}

clformer_status cf_gemm_clblast(cf_ctx *ctx, const cf_gemm_call *g)
{
    /* CLBlastSgemmBatched makes and releases small buffers per call, and
     * Oclgrind 21.10 then misreports reads of recycled buffers as
     * uninitialised (see cf_buffer_free): there, run the products one by one. */
    if (g->a_offs && ctx->device_profile.batched_gemm_one_by_one) return one_by_one(ctx, g);
    int tiled_set = -1;
    void *held = ctx->gemm_search ? cf_gemm_search_before(ctx, g, &tiled_set) : NULL;
    if (tiled_set >= 0) { /* the search measured clformer's kernel faster here, same bits */
        cf_gemm_search_after(held);
        return cf_gemm_tiled_with(ctx, g, tiled_set);
    }
    cl_event begin = cf_profile_begin(ctx);
    int err;
    if (g->a_offs)
        err = CLBlastSgemmBatched(CLBlastLayoutRowMajor, tr(g->trans_a), tr(g->trans_b), g->m,
                                  g->n, g->k, g->alphas, g->a, g->a_offs, g->lda, g->b, g->b_offs,
                                  g->ldb, g->betas, g->c, g->c_offs, g->ldc, g->batch,
                                  &ctx->queue, NULL);
    else if (g->batch == 1)
        err = CLBlastSgemm(CLBlastLayoutRowMajor, tr(g->trans_a), tr(g->trans_b), g->m, g->n,
                           g->k, g->alpha, g->a, g->a_off, g->lda, g->b, g->b_off, g->ldb,
                           g->beta, g->c, g->c_off, g->ldc, &ctx->queue, NULL);
    else
        err = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, tr(g->trans_a), tr(g->trans_b),
                                         g->m, g->n, g->k, g->alpha, g->a, g->a_off, g->lda,
                                         g->a_stride, g->b, g->b_off, g->ldb, g->b_stride,
                                         g->beta, g->c, g->c_off, g->ldc, g->c_stride, g->batch,
                                         &ctx->queue, NULL);
    cf_profile_end(ctx, "gemm", begin ? cf_gemm_call_bytes(g) : 0, cf_gemm_call_flop(g), begin);
    cf_gemm_search_after(held);
    CLBLAST_CHECK(err);
    return CLFORMER_OK;
}

void cf_gemm_release_caches(void)
{
    CLBlastStatusCode st = CLBlastClearCache();
    if (st != CLBlastSuccess) cf_log(NULL, CF_LOG_DEBUG, "CLBlastClearCache returned %d", (int)st);
    cf_gemm_search_forget(); /* the overrides went with CLBlast's caches */
}
