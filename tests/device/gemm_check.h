/*
 * GEMM checks shared by test_gemm and test_gemm_tuning: single products
 * through the conformance library's case runner (conf_gemm_run), and batched
 * products with arbitrary offsets or gaps between the matrices (which must
 * stay untouched) and canaries.
 */
#ifndef CLFORMER_TEST_GEMM_CHECK_H
#define CLFORMER_TEST_GEMM_CHECK_H

#include "harness.h"
#include "gemm.h"
#include "ref_gemm.h"

#include <stdlib.h>

typedef struct {
    size_t m, n, k;
} gemm_shape;

/* One product checked end to end by the shared check (conf_gemm_run): A, B
 * and C with padded leading dimensions (the padding untouched) and guards. */
static inline void gemm_check_one(bool ta, bool tb, gemm_shape s, float alpha, float beta,
                                  uint64_t seed)
{
    const conf_gemm_case c = {ta, tb, s.m, s.n, s.k, alpha, beta, 3, 1, 2, seed};
    assert_conformance_case(conf_gemm_run(hctx(), &c, harness_conf_sink, &failures));
}

/* `batch` products, B x C += alpha A x B: strided (attention's form: uniform
 * strides with gaps, alpha 0.5, beta 1) or batched with arbitrary offsets (A
 * in reverse order) and per-matrix alphas and betas. */
static inline void gemm_check_batched(bool strided, bool ta, bool tb, gemm_shape s, size_t batch,
                                      uint64_t seed)
{
    ref_rng r = ref_rng_new(seed);
    const size_t lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n, ldc = s.n;
    const size_t sa = (ta ? s.k : s.m) * lda + 4, sb = (tb ? s.n : s.k) * ldb + 2,
                 sc = s.m * ldc + 3;
    const size_t na = sa * batch, nb = sb * batch, nc = sc * batch;
    float *a = hmalloc(na * 4), *b = hmalloc(nb * 4), *c = hmalloc(nc * 4);
    double *a64 = hmalloc(na * 8), *b64 = hmalloc(nb * 8), *c64 = hmalloc(nc * 8);
    double *bound = hmalloc(s.m * s.n * batch * 8);
    ref_fill_uniform(&r, a, a64, na, -1, 1);
    ref_fill_uniform(&r, b, b64, nb, -1, 1);
    ref_fill_uniform(&r, c, c64, nc, -1, 1);
    hbuf da = hbuf_from_f32(a, na, 1), db = hbuf_from_f32(b, nb, 2), dc = hbuf_from_f32(c, nc, 3);
    float *alphas = hmalloc(batch * 4), *betas = hmalloc(batch * 4);
    size_t *ao = hmalloc(batch * sizeof(size_t)), *bo = hmalloc(batch * sizeof(size_t)),
           *co = hmalloc(batch * sizeof(size_t));
    for (size_t i = 0; i < batch; i++) {
        /* batched: reversed order of A to prove offsets are honoured */
        ao[i] = da.off + (strided ? i : batch - 1 - i) * sa;
        bo[i] = db.off + i * sb;
        co[i] = dc.off + i * sc;
        alphas[i] = strided ? 0.5f : 0.5f + 0.25f * (float)i;
        betas[i] = strided ? 1.0f : (float)(i % 2);
    }
    if (strided)
        assert_ok(cf_gemm_strided_batched(hctx(), ta, tb, s.m, s.n, s.k, 0.5f, da.mem, da.off,
                                          lda, sa, db.mem, db.off, ldb, sb, 1.0f, dc.mem, dc.off,
                                          ldc, sc, batch));
    else
        assert_ok(cf_gemm_batched(hctx(), ta, tb, s.m, s.n, s.k, alphas, da.mem, ao, lda, db.mem,
                                  bo, ldb, betas, dc.mem, co, ldc, batch));
    for (size_t i = 0; i < batch; i++)
        ref_gemm(ta, tb, s.m, s.n, s.k, alphas[i], a64 + (ao[i] - da.off), lda,
                 b64 + (bo[i] - db.off), ldb, betas[i], c64 + i * sc, ldc,
                 bound + i * s.m * s.n);
    hbuf_read(dc, c);
    float *win = hmalloc(s.m * s.n * batch * 4);
    double *win64 = hmalloc(s.m * s.n * batch * 8);
    for (size_t i = 0; i < batch; i++) {
        for (size_t e = 0; e < s.m * s.n; e++) {
            win[i * s.m * s.n + e] = c[i * sc + e];
            win64[i * s.m * s.n + e] = c64[i * sc + e];
        }
        for (size_t e = s.m * s.n; e < sc; e++) /* gaps between matrices untouched */
            if (c[i * sc + e] != (float)c64[i * sc + e])
                fail_msg("batched gemm wrote into the gap after matrix %zu", i);
    }
    assert_gemm_close(win, win64, bound, s.m * s.n * batch);
    hbuf_check_canary(da);
    hbuf_check_canary(db);
    hbuf_check_canary(dc);
    hbuf_free(da), hbuf_free(db), hbuf_free(dc);
    free(a), free(b), free(c), free(a64), free(b64), free(c64), free(bound), free(win);
    free(win64), free(alphas), free(betas), free(ao), free(bo), free(co);
}

#endif
