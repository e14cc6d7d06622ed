/* Conformance of the CLBlast GEMM wrapper: one product with any transposes,
 * alpha, beta and padded leading dimensions, guarded (conf_gemm_run: the
 * four transposes at odd sizes and a projection-sized product for `clformer
 * check`, many more cases in test_gemm and test_gemm_tuning), and batched
 * products, strided or at arbitrary offsets (conf_gemm_batched_run). */
#include "buffer.h"
#include "conf_block.h"
#include "conformance.h"
#include "gemm.h"
#include "ref_gemm.h"
#include "ref_random.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C judged as `runs` runs of `width` elements, `pitch` apart: the runs
 * against the reference (bound packed the same way) under the GEMM rule,
 * the elements between runs as they were (the reference kept them), A and B
 * unchanged, guards intact. win and win64 hold runs * width elements. */
static ref_cmp judge(const conf_block *blk, const double *c64, const double *bound, size_t runs,
                     size_t width, size_t pitch, float *win, double *win64)
{
    enum { A, B, C };
    const float *c = conf_block_out(blk, C);
    bool between_kept = true;
    for (size_t i = 0; i < runs; i++) {
        for (size_t e = 0; e < width; e++) {
            win[i * width + e] = c[i * pitch + e];
            win64[i * width + e] = c64[i * pitch + e];
        }
        for (size_t e = width; e < pitch; e++)
            between_kept &= c[i * pitch + e] == (float)c64[i * pitch + e];
    }
    ref_cmp cmp = ref_compare_gemm(win, win64, bound, runs * width);
    if (!between_kept) cmp.pass = false, cmp.why = "gemm wrote into padding or a gap of C";
    if (!conf_block_unchanged(blk, A) || !conf_block_unchanged(blk, B))
        cmp.pass = false, cmp.why = "gemm changed an input";
    return conf_guarded(cmp, blk);
}

/* A, B and C uniform in +-1 from seed: staged, and in double. */
static void fill_operands(conf_block *blk, uint64_t seed, double *a64, double *b64, double *c64)
{
    ref_rng r = ref_rng_new(seed);
    ref_fill_uniform(&r, conf_block_init(blk, 0), a64, blk->len[0], -1, 1);
    ref_fill_uniform(&r, conf_block_init(blk, 1), b64, blk->len[1], -1, 1);
    ref_fill_uniform(&r, conf_block_init(blk, 2), c64, blk->len[2], -1, 1);
}

/* "m=.. n=.. k=..[ batch=..][ a=.. b=..]" */
static void describe(char *shape, size_t cap, size_t m, size_t n, size_t k, size_t batch,
                     float alpha, float beta)
{
    int len = snprintf(shape, cap, "m=%zu n=%zu k=%zu", m, n, k);
    if (batch > 1) len += snprintf(shape + len, cap - (size_t)len, " batch=%zu", batch);
    if (alpha != 1.0f || beta != 0.0f)
        snprintf(shape + len, cap - (size_t)len, " a=%g b=%g", (double)alpha, (double)beta);
}

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
    fill_operands(&blk, g->seed, a64, b64, c64);
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
    char op[64], shape[96];
    snprintf(op, sizeof op, "gemm_%c%c", ta ? 'T' : 'N', tb ? 'T' : 'N');
    describe(shape, sizeof shape, m, n, k, 1, g->alpha, g->beta);
    conf_emit(sink, user, op, shape, judge(&blk, c64, bound, m, n, ldc, win, win64), ms);
done:
    conf_block_free(&blk);
    free(a64), free(b64), free(c64), free(bound), free(win64), free(win);
    return st;
}

/* `batch` products in one call. Strided: every matrix `gap_*` elements after
 * the previous one's end, one alpha and beta. Batched: A's matrices in
 * reverse order (the offsets are honoured), matrix i with alpha + i/4 and
 * beta when i is odd, 0 when even. The gaps of C stay as they were, A and B
 * unchanged, guards intact. */
clformer_status conf_gemm_batched_run(cf_ctx *ctx, const conf_gemm_batched_case *g,
                                      conf_sink sink, void *user)
{
    const bool ta = g->ta, tb = g->tb;
    const size_t m = g->m, n = g->n, k = g->k, batch = g->batch, mn = m * n;
    const size_t lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
    const size_t sa = (ta ? k : m) * lda + g->gap_a, sb = (tb ? n : k) * ldb + g->gap_b,
                 sc = m * ldc + g->gap_c;
    const size_t na = sa * batch, nb = sb * batch, nc = sc * batch;
    conf_block blk = {0};
    enum { A, B, C };
    conf_block_add(&blk, na), conf_block_add(&blk, nb), conf_block_add(&blk, nc);
    double *a64 = malloc(na * 8), *b64 = malloc(nb * 8), *c64 = malloc(nc * 8);
    double *bound = malloc(mn * batch * 8), *win64 = malloc(mn * batch * 8);
    float *win = malloc(mn * batch * 4), *alphas = malloc(batch * 4), *betas = malloc(batch * 4);
    size_t *ao = malloc(batch * sizeof *ao), *bo = malloc(batch * sizeof *bo),
           *co = malloc(batch * sizeof *co);
    clformer_status st = conf_block_create(ctx, &blk);
    if (st) goto done;
    if (!a64 || !b64 || !c64 || !bound || !win64 || !win || !alphas || !betas || !ao || !bo ||
        !co) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    fill_operands(&blk, g->seed, a64, b64, c64);
    for (size_t i = 0; i < batch; i++) {
        ao[i] = blk.off[A] + (g->strided ? i : batch - 1 - i) * sa;
        bo[i] = blk.off[B] + i * sb;
        co[i] = blk.off[C] + i * sc;
        alphas[i] = g->strided ? g->alpha : g->alpha + 0.25f * (float)i;
        betas[i] = g->strided || i % 2 ? g->beta : 0.0f;
    }
    double ms = 0.0;
    for (int run = conf_warm_up(ctx) ? 0 : 1; run < 2; run++) {
        if ((st = conf_block_upload(&blk))) goto done;
        const double t0 = conf_now_ms();
        st = g->strided ? cf_gemm_strided_batched(ctx, ta, tb, m, n, k, g->alpha, blk.buf, ao[0],
                                                  lda, sa, blk.buf, bo[0], ldb, sb, g->beta,
                                                  blk.buf, co[0], ldc, sc, batch)
                        : cf_gemm_batched(ctx, ta, tb, m, n, k, alphas, blk.buf, ao, lda, blk.buf,
                                          bo, ldb, betas, blk.buf, co, ldc, batch);
        if (st || (st = cf_finish(ctx))) goto done;
        ms = conf_now_ms() - t0;
    }
    if ((st = conf_block_read(&blk))) goto done;
    for (size_t i = 0; i < batch; i++)
        ref_gemm(ta, tb, m, n, k, alphas[i], a64 + (ao[i] - blk.off[A]), lda,
                 b64 + (bo[i] - blk.off[B]), ldb, betas[i], c64 + i * sc, ldc, bound + i * mn);
    char op[64], shape[96];
    snprintf(op, sizeof op, "gemm_%sbatched_%c%c", g->strided ? "strided_" : "", ta ? 'T' : 'N',
             tb ? 'T' : 'N');
    describe(shape, sizeof shape, m, n, k, batch, g->alpha, g->beta);
    conf_emit(sink, user, op, shape, judge(&blk, c64, bound, batch, mn, sc, win, win64), ms);
done:
    conf_block_free(&blk);
    free(a64), free(b64), free(c64), free(bound), free(win64), free(win), free(alphas);
    free(betas), free(ao), free(bo), free(co);
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
    const size_t bm = quick ? 5 : 33, bn = quick ? 7 : 41, bk = quick ? 8 : 64;
    const conf_gemm_batched_case b = {true, false, true, bm, bn, bk, 6, 1.0f, 0.0f, 0, 0, 0,
                                      bm * 1000003 + bn * 1009 + bk + 6};
    return conf_gemm_batched_run(ctx, &b, sink, user);
}

CONF_OP(gemm) = {"gemm", "",
    "cf_gemm, cf_gemm_batched, cf_gemm_strided_batched (CLBlast or the host provider)",
    "ref_gemm (reference/ref_gemm.c)",
    "GEMM rule: |c - r| <= 1e-5 (|A| |B| + |beta C0|)",
    conf_gemm, NULL,
    "test_gemm, test_gemm_tuning (many more cases, determinism, argument errors); no backward of its own (the linear layer's is checked)"};
