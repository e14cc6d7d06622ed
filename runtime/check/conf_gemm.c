/* The GEMM wrapper (runtime/device/gemm.c: CLBlast or the host provider),
 * described once: one product with any transposes, alpha, beta and padded
 * leading dimensions, guarded (conf_gemm_run), and batched products, strided
 * or at arbitrary offsets (conf_gemm_batched_run), at odd sizes in every
 * position, the model's shapes and batches of many small products; operands
 * at offsets of one buffer with kernels between the products; bad calls
 * refused. The two runners are not static (conf_gemm.h): test_gemm_tuning
 * and test_gemm_search run them under each CLBlast parameter set they try.
 * The reference stays in reference/ref_gemm.c: the host AVX-512 product's
 * test (tests/host/test_gemm_avx512.c, no device) compares with it, and the
 * linear layer's check takes its error bound from it. */
#include "conf_gemm.h"
#include "buffer.h"
#include "conf_block.h"
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

/* A, B and C at different offsets of one buffer (the model keeps its
 * tensors in an arena): strided-batched products, then kernels that copy
 * the first C over A and write part of B, then a plain product reading both. */
static clformer_status run_one_buffer(cf_ctx *ctx, conf_sink sink, void *user)
{
    const size_t m = 5, n = 7, k = 3, batch = 3, sa = m * k, sb = k * n, sc = m * n;
    const size_t a0 = 1, b0 = a0 + batch * sa + 2, c0 = b0 + batch * sb + 5,
                 total = c0 + batch * sc;
    conf_block blk = {0};
    const size_t T = conf_block_add(&blk, total);
    double *h64 = malloc(total * 8), *bound = malloc(batch * sc * 8), *win64 = malloc(batch * sc * 8);
    float *win = malloc(batch * sc * 4);
    clformer_status st = conf_block_create(ctx, &blk);
    if (st) goto done;
    if (!h64 || !bound || !win64 || !win) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    ref_rng r = ref_rng_new(77);
    ref_fill_uniform(&r, conf_block_init(&blk, T), h64, total, -1, 1);
    const cf_view d = conf_block_view(&blk, T);
    if ((st = conf_block_upload(&blk)) ||
        (st = cf_gemm_strided_batched(ctx, false, true, m, n, k, 1.0f, d.buf, d.off + a0, k, sa,
                                      d.buf, d.off + b0, k, sb, 0.0f, d.buf, d.off + c0, n, sc,
                                      batch)) ||
        (st = cf_copy(ctx, d.buf, d.off + c0, d.buf, d.off + a0, sc)) ||
        (st = cf_fill(ctx, d.buf, d.off + b0, n * n, 0.5f)) ||
        (st = cf_gemm(ctx, false, false, m, n, n, 1.0f, d.buf, d.off + a0, n, d.buf, d.off + b0, n,
                      0.0f, d.buf, d.off + c0 + sc, n)) ||
        (st = cf_finish(ctx)) || (st = conf_block_read(&blk)))
        goto done;
    for (size_t i = 0; i < batch; i++)
        ref_gemm(false, true, m, n, k, 1.0, h64 + a0 + i * sa, k, h64 + b0 + i * sb, k, 0.0,
                 h64 + c0 + i * sc, n, bound + i * sc);
    for (size_t e = 0; e < sc; e++) h64[a0 + e] = h64[c0 + e];
    for (size_t e = 0; e < n * n; e++) h64[b0 + e] = 0.5;
    ref_gemm(false, false, m, n, n, 1.0, h64 + a0, n, h64 + b0, n, 0.0, h64 + c0 + sc, n,
             bound + sc);
    const float *out = conf_block_out(&blk, T);
    for (size_t e = 0; e < batch * sc; e++) win[e] = out[c0 + e], win64[e] = h64[c0 + e];
    ref_cmp c = ref_compare_gemm(win, win64, bound, batch * sc);
    for (size_t e = 0; e < c0 && c.pass; e++) /* what neither a product nor a kernel wrote */
        if ((e < a0 || e >= a0 + sc) && (e < b0 || e >= b0 + n * n) &&
            out[e] != conf_block_init(&blk, T)[e])
            c.pass = false, c.why = "gemm changed an input";
    conf_emit(sink, user, "gemm_one_buffer", "m=5 n=7 k=3 batch=3, then kernels, then a product",
              conf_guarded(c, &blk), 0.0);
done:
    conf_block_free(&blk);
    free(h64), free(bound), free(win64), free(win);
    return st;
}

/* A leading dimension below the row length, and a product that would read
 * or write past its buffer (the host provider works on raw memory), refused
 * before they run, for every form of call, naming the matrix; a product
 * that ends exactly at the buffer's end runs. */
static clformer_status run_arguments(cf_ctx *ctx, conf_sink sink, void *user)
{
    cl_mem a = NULL, b = NULL, c = NULL; /* 64 floats each, no guard regions */
    clformer_status st;
    if ((st = cf_buffer_alloc(ctx, 64, "A", &a)) || (st = cf_buffer_alloc(ctx, 64, "B", &b)) ||
        (st = cf_buffer_alloc(ctx, 64, "C", &c)))
        goto done;
    const size_t ao[2] = {0, 0}, bo[2] = {0, 49}, co[2] = {0, 16};
    const float ones[2] = {1.0f, 1.0f};
    static const char *const names[] = {"leading dimension of A (2)", "leading dimension of B (3)",
                                        "matrix C", "matrix A", "matrix B"},
                             *const whys[] = {"lda < k not refused, naming A's leading dimension",
                                              "ldb < k not refused, naming B's leading dimension",
                                              "C past its buffer not refused, naming C",
                                              "strided A past its buffer not refused, naming A",
                                              "batched B past its buffer not refused, naming B"};
    const char *bad = NULL;
    for (int i = 0; i < 5 && !bad; i++) {
        switch (i) {
        case 0: st = cf_gemm(ctx, false, false, 4, 4, 4, 1.0f, a, 0, 2, b, 0, 4, 0.0f, c, 0, 4); break;
        case 1: st = cf_gemm(ctx, true, true, 4, 4, 4, 1.0f, a, 0, 4, b, 0, 3, 0.0f, c, 0, 4); break;
        /* C at offset 49 needs 16 floats: 1 past the end */
        case 2: st = cf_gemm(ctx, false, false, 4, 4, 4, 1.0f, a, 0, 4, b, 0, 4, 0.0f, c, 49, 4); break;
        /* the fourth of 4 strided A matrices of 16 starts at 1 + 48: ends at 65 */
        case 3:
            st = cf_gemm_strided_batched(ctx, false, false, 4, 4, 4, 1.0f, a, 1, 4, 16, b, 0, 4, 0,
                                         0.0f, c, 0, 4, 16, 4);
            break;
        default:
            st = cf_gemm_batched(ctx, false, false, 4, 4, 4, ones, a, ao, 4, b, bo, 4, ones, c, co,
                                 4, 2);
        }
        if (st != CLFORMER_ERR_INVALID_ARGUMENT || !strstr(clformer_last_error(), names[i]))
            bad = whys[i];
    }
    /* at offset 48 C fits exactly */
    if ((st = cf_gemm(ctx, false, false, 4, 4, 4, 1.0f, a, 0, 4, b, 0, 4, 0.0f, c, 48, 4)) ||
        (st = cf_finish(ctx)))
        goto done;
    ref_cmp cmp = {0};
    cmp.pass = !bad, cmp.why = bad, cmp.rule = "refused, naming the fix";
    conf_emit(sink, user, "gemm_arguments", "lda < k, ldb < k, C, A, B past the buffer", cmp, 0.0);
done:
    cf_buffer_free(ctx, a), cf_buffer_free(ctx, b), cf_buffer_free(ctx, c);
    return st;
}

typedef struct {
    size_t m, n, k;
} gemm_shape;

/* Every transpose of each shape, padded leading dimensions. */
static clformer_status run_shapes(cf_ctx *ctx, const gemm_shape *s, size_t count, float alpha,
                                  float beta, conf_sink sink, void *user)
{
    for (int t = 0; t < 4; t++)
        for (size_t i = 0; i < count; i++) {
            const conf_gemm_case g = {t & 1,   t & 2, s[i].m, s[i].n, s[i].k, alpha,
                                      beta,    3,     1,      2,      100 + 10 * i + (size_t)t};
            CF_TRY(conf_gemm_run(ctx, &g, sink, user));
        }
    return CLFORMER_OK;
}

/* Every transpose, strided (alpha 0.5, beta 1) or at arbitrary offsets. */
static clformer_status run_batches(cf_ctx *ctx, bool strided, gemm_shape s, size_t batch,
                                   uint64_t seed, conf_sink sink, void *user)
{
    for (int t = 0; t < 4; t++) {
        const conf_gemm_batched_case g = {strided, t & 1, t & 2, s.m, s.n,      s.k, batch,
                                          0.5f,    1.0f,  4,     2,   3, seed + (uint64_t)t};
        CF_TRY(conf_gemm_batched_run(ctx, &g, sink, user));
    }
    return CLFORMER_OK;
}

/* quick (simulators): small shapes, all transposes, alpha and beta, a
 * projection-like product, one of 2 x 2 blocks of 64 x 64 (the tiled
 * provider's middle tile set on a device of one compute unit; batches take
 * its largest, small shapes its smallest) and small batches; else every odd size in every
 * position (the host provider splits a product of at least 2^18
 * multiply-adds into slices of C's columns, {61, 93, 257}, or rows,
 * {257, 61, 93}, over its threads), the model's products (x W^T, dW += dy^T
 * x, dx = dy W) and batches of 40 small products like attention's per-head
 * ones (the host provider spreads them over helper threads, so every product
 * must come out right whichever thread took it). */
static clformer_status gemm_check(cf_ctx *ctx, bool quick, conf_sink sink, void *user)
{
    static const gemm_shape small[] = {{1, 1, 1}, {7, 5, 3}, {3, 7, 13}, {13, 3, 5}},
                            blocks[] = {{70, 66, 20}},
                            odd[] = {{1, 1, 1},    {7, 61, 93},  {61, 93, 257},
                                     {93, 257, 7}, {257, 7, 61}, {1, 257, 93},
                                     {257, 1, 7},  {7, 7, 257},  {257, 61, 93}},
                            model[] = {{96, 512, 512}, {96, 2048, 512}, {96, 512, 2048},
                                       {33, 96, 64}};
    const gemm_shape many = {32, 24, 16};
    /* unpadded: every transpose, a projection and a strided batch */
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
    CF_TRY(conf_gemm_batched_run(ctx, &b, sink, user));
    /* padded (the padding must stay as it was) */
    if (quick) {
        CF_TRY(run_shapes(ctx, small, 4, 1.0f, 0.0f, sink, user));
        CF_TRY(run_shapes(ctx, small, 2, 0.5f, 1.0f, sink, user));
        CF_TRY(run_shapes(ctx, blocks, 1, 1.0f, 0.0f, sink, user));
        const conf_gemm_case proj = {false, true, 5, 24, 16, 1.0f, 1.0f, 3, 1, 2, 7};
        CF_TRY(conf_gemm_run(ctx, &proj, sink, user));
        CF_TRY(run_batches(ctx, true, (gemm_shape){5, 7, 3}, 2, 40, sink, user));
        CF_TRY(run_batches(ctx, false, (gemm_shape){3, 5, 7}, 2, 50, sink, user));
        CF_TRY(run_batches(ctx, true, many, 3, 60, sink, user));
        CF_TRY(run_batches(ctx, false, many, 3, 70, sink, user));
    } else {
        CF_TRY(run_shapes(ctx, odd, sizeof odd / sizeof *odd, 1.0f, 0.0f, sink, user));
        CF_TRY(run_shapes(ctx, odd, 4, -0.75f, 0.5f, sink, user));
        for (size_t i = 0; i < sizeof model / sizeof *model; i++) {
            const gemm_shape s = model[i];
            const conf_gemm_case xw = {false, true, s.m, s.n, s.k, 1.0f, 0.0f, 3, 1, 2, 7 + i},
                                 dw = {true, false, s.m, s.n, s.k, 1.0f, 1.0f, 3, 1, 2, 17 + i},
                                 dx = {false, false, s.m, s.n, s.k, 1.0f, 0.0f, 3, 1, 2, 27 + i};
            CF_TRY(conf_gemm_run(ctx, &xw, sink, user));
            CF_TRY(conf_gemm_run(ctx, &dw, sink, user));
            CF_TRY(conf_gemm_run(ctx, &dx, sink, user));
        }
        CF_TRY(run_batches(ctx, true, (gemm_shape){33, 61, 64}, 6, 40, sink, user));
        CF_TRY(run_batches(ctx, false, (gemm_shape){61, 33, 80}, 5, 50, sink, user));
        CF_TRY(run_batches(ctx, true, many, 40, 60, sink, user));
        CF_TRY(run_batches(ctx, false, many, 40, 70, sink, user));
    }
    CF_TRY(run_one_buffer(ctx, sink, user));
    return run_arguments(ctx, sink, user);
}

CONF_OP(gemm) = {"gemm", "~gemm_tiled",
    "cf_gemm, cf_gemm_batched, cf_gemm_strided_batched (CLBlast, the host provider or the "
    "tiled kernel)",
    "ref_gemm (reference/ref_gemm.c, shared with linear and test_gemm_avx512)",
    "GEMM rule: |c - r| <= 1e-5 (|A| |B| + |beta C0|)",
    gemm_check, NULL,
    "no backward of its own (the linear layer's is checked); test_gemm runs this check under "
    "each GEMM provider (gemm_tiled, the tiled provider's kernel, only there: "
    "test_gemm_tiled@DEVICE), test_gemm_tuning under each CLBlast parameter set"};
