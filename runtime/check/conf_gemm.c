/* Conformance of the CLBlast GEMM wrapper: the four transposes at odd sizes
 * and a projection-sized product, plus strided-batched. */
#include "buffer.h"
#include "conformance.h"
#include "gemm.h"
#include "ref_gemm.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>

static clformer_status one(cf_ctx *ctx, bool ta, bool tb, size_t m, size_t n, size_t k,
                           size_t batch, conf_sink sink, void *user)
{
    const size_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
    const size_t sa = m * k, sb = k * n, sc = m * n;
    float *a = malloc(sa * batch * 4), *b = malloc(sb * batch * 4), *c = malloc(sc * batch * 4);
    double *a64 = malloc(sa * batch * 8), *b64 = malloc(sb * batch * 8),
           *c64 = calloc(sc * batch, 8), *bound = malloc(sc * batch * 8);
    cl_mem da = NULL, db = NULL, dc = NULL;
    clformer_status st = CLFORMER_OK;
    if (!a || !b || !c || !a64 || !b64 || !c64 || !bound) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(m * 1000003 + n * 1009 + k + batch);
    ref_fill_uniform(&r, a, a64, sa * batch, -1, 1);
    ref_fill_uniform(&r, b, b64, sb * batch, -1, 1);
    if ((st = cf_buffer_alloc(ctx, sa * batch, "gemm A", &da)) ||
        (st = cf_buffer_alloc(ctx, sb * batch, "gemm B", &db)) ||
        (st = cf_buffer_alloc(ctx, sc * batch, "gemm C", &dc)) ||
        (st = cf_upload(ctx, da, 0, a, sa * batch)) || (st = cf_upload(ctx, db, 0, b, sb * batch)))
        goto done;
    double t0 = conf_now_ms();
    st = batch == 1 ? cf_gemm(ctx, ta, tb, m, n, k, 1.0f, da, 0, lda, db, 0, ldb, 0.0f, dc, 0, ldc)
                    : cf_gemm_strided_batched(ctx, ta, tb, m, n, k, 1.0f, da, 0, lda, sa, db, 0,
                                              ldb, sb, 0.0f, dc, 0, ldc, sc, batch);
    if (st == CLFORMER_OK) st = cf_finish(ctx);
    double ms = conf_now_ms() - t0;
    if (st == CLFORMER_OK) st = cf_download(ctx, dc, 0, c, sc * batch);
    if (st != CLFORMER_OK) goto done;
    for (size_t i = 0; i < batch; i++)
        ref_gemm(ta, tb, m, n, k, 1.0, a64 + i * sa, lda, b64 + i * sb, ldb, 0.0, c64 + i * sc,
                 ldc, bound + i * sc);
    char op[64], shape[96];
    snprintf(op, sizeof op, "gemm%s_%c%c", batch > 1 ? "_strided_batched" : "", ta ? 'T' : 'N',
             tb ? 'T' : 'N');
    snprintf(shape, sizeof shape, "m=%zu n=%zu k=%zu%s", m, n, k, batch > 1 ? " batch=6" : "");
    conf_emit(sink, user, op, shape, ref_compare_gemm(c, c64, bound, sc * batch), ms);
done:
    cf_buffer_free(ctx, da);
    cf_buffer_free(ctx, db);
    cf_buffer_free(ctx, dc);
    free(a), free(b), free(c), free(a64), free(b64), free(c64), free(bound);
    return st;
}

clformer_status conf_gemm(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    const size_t m = quick ? 7 : 93, n = quick ? 13 : 257, k = quick ? 5 : 61;
    for (int t = 0; t < 4; t++) CF_TRY(one(ctx, t & 1, t & 2, m, n, k, 1, sink, user));
    if (!quick) CF_TRY(one(ctx, false, true, 128, 512, 512, 1, sink, user));
    return one(ctx, false, true, quick ? 5 : 33, quick ? 7 : 41, quick ? 8 : 64, 6, sink, user);
}
