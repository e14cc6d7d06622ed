/* Conformance of the CLBlast GEMM wrapper: one product with any transposes,
 * alpha, beta and padded leading dimensions, guarded (conf_gemm_run: the
 * four transposes at odd sizes and a projection-sized product for `clformer
 * check`, many more cases in test_gemm and test_gemm_tuning), plus
 * strided-batched. */
#include "buffer.h"
#include "conf_block.h"
#include "conformance.h"
#include "gemm.h"
#include "ref_gemm.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

clformer_status conf_gemm_run(cf_ctx *ctx, const conf_gemm_case *g, conf_sink sink, void *user)
{
    const bool ta = g->ta, tb = g->tb;
    const size_t m = g->m, n = g->n, k = g->k;
    /* padded leading dimensions: the padding of C must stay as it was */
    const size_t lda = (ta ? m : k) + g->pad_a, ldb = (tb ? k : n) + g->pad_b, ldc = n + g->pad_c;
    const size_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
    conf_block blk = {0};
    enum { A, B, C };
    conf_block_add(&blk, na), conf_block_add(&blk, nb), conf_block_add(&blk, nc);
    double *a64 = malloc(na * 8), *b64 = malloc(nb * 8), *c64 = malloc(nc * 8);
    double *bound = malloc(m * n * 8), *win64 = malloc(m * n * 8);
    float *win = malloc(m * n * 4);
    clformer_status st = conf_block_create(ctx, &blk);
    if (st) goto done;
    if (!a64 || !b64 || !c64 || !bound || !win64 || !win) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(g->seed);
    ref_fill_uniform(&r, conf_block_init(&blk, A), a64, na, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&blk, B), b64, nb, -1, 1);
    ref_fill_uniform(&r, conf_block_init(&blk, C), c64, nc, -1, 1);
    const cf_view va = conf_block_view(&blk, A), vb = conf_block_view(&blk, B),
                  vc = conf_block_view(&blk, C);
    double ms = 0.0;
    /* once before the timed run (CLBlast builds its kernels at the first
     * call); the upload afterwards restores C */
    for (int run = conf_warm_up(ctx) ? 0 : 1; run < 2; run++) {
        if ((st = conf_block_upload(&blk))) goto done;
        const double t0 = conf_now_ms();
        if ((st = cf_gemm(ctx, ta, tb, m, n, k, g->alpha, va.buf, va.off, lda, vb.buf, vb.off, ldb,
                          g->beta, vc.buf, vc.off, ldc)) ||
            (st = cf_finish(ctx)))
            goto done;
        ms = conf_now_ms() - t0;
    }
    if ((st = conf_block_read(&blk))) goto done;
    ref_gemm(ta, tb, m, n, k, g->alpha, a64, lda, b64, ldb, g->beta, c64, ldc, bound);
    const float *c = conf_block_out(&blk, C);
    bool padding_kept = true;
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            win[i * n + j] = c[i * ldc + j];
            win64[i * n + j] = c64[i * ldc + j];
        }
        for (size_t j = n; j < ldc; j++) padding_kept &= c[i * ldc + j] == (float)c64[i * ldc + j];
    }
    ref_cmp cmp = ref_compare_gemm(win, win64, bound, m * n);
    if (!padding_kept) cmp.pass = false, cmp.why = "gemm wrote into the padding of C";
    if (!conf_block_unchanged(&blk, A) || !conf_block_unchanged(&blk, B))
        cmp.pass = false, cmp.why = "gemm changed an input";
    char op[64], shape[96];
    snprintf(op, sizeof op, "gemm_%c%c", ta ? 'T' : 'N', tb ? 'T' : 'N');
    snprintf(shape, sizeof shape, "m=%zu n=%zu k=%zu", m, n, k);
    if (g->alpha != 1.0f || g->beta != 0.0f)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), " a=%g b=%g",
                 (double)g->alpha, (double)g->beta);
    conf_emit(sink, user, op, shape, conf_guarded(cmp, &blk), ms);
done:
    conf_block_free(&blk);
    free(a64), free(b64), free(c64), free(bound), free(win64), free(win);
    return st;
}

/* Strided-batched products (attention's form). */
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
    for (int t = 0; t < 4; t++) {
        const conf_gemm_case g = {t & 1, t & 2, m, n, k, 1.0f, 0.0f, 0, 0, 0,
                                  m * 1000003 + n * 1009 + k + 1};
        CF_TRY(conf_gemm_run(ctx, &g, sink, user));
    }
    if (!quick) {
        const conf_gemm_case g = {false, true, 128, 512, 512, 1.0f, 0.0f, 0, 0, 0,
                                  128 * 1000003 + 512 * 1009 + 512 + 1};
        CF_TRY(conf_gemm_run(ctx, &g, sink, user));
    }
    return one(ctx, false, true, quick ? 5 : 33, quick ? 7 : 41, quick ? 8 : 64, 6, sink, user);
}
