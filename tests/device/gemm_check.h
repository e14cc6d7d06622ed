/*
 * GEMM checks of test_gemm_tuning (one per CLBlast parameter set), through the
 * conformance library's case runners: single products (conf_gemm_run) and
 * batched ones (conf_gemm_batched_run); and a product's bits, for the tests
 * that hold two ways of computing it to each other (test_gemm_search,
 * test_gemm_tiles).
 */
#ifndef CLFORMER_TEST_GEMM_CHECK_H
#define CLFORMER_TEST_GEMM_CHECK_H

#include "harness.h"
#include "buffer.h"
#include "conf_gemm.h"
#include "gemm.h"
#include "ref_random.h"

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

/* `batch` products checked by the shared check (conf_gemm_batched_run), with
 * gaps between the matrices that must stay untouched: strided (attention's
 * form, alpha 0.5, beta 1) or batched with arbitrary offsets (A in reverse
 * order) and per-matrix alphas and betas. */
static inline void gemm_check_batched(bool strided, bool ta, bool tb, gemm_shape s, size_t batch,
                                      uint64_t seed)
{
    const conf_gemm_batched_case c = {strided, ta, tb, s.m, s.n, s.k, batch, 0.5f, 1.0f,
                                      4, 2, 3, seed};
    assert_conformance_case(conf_gemm_batched_run(hctx(), &c, harness_conf_sink, &failures));
}

/* C = alpha op(A) op(B) + beta C for `batch` strided products of m x k and
 * k x n operands, A, B and C drawn from the seed, C read back into `out`
 * (m * n * batch floats, tightly packed). */
static inline void gemm_run_random(cf_ctx *ctx, bool ta, bool tb, size_t m, size_t n, size_t k,
                                   size_t batch, float alpha, float beta, uint64_t seed,
                                   float *out)
{
    const size_t na = m * k * batch, nb = k * n * batch, nc = m * n * batch;
    float *host = malloc((na + nb + nc) * sizeof *host);
    assert_non_null(host);
    ref_rng r = ref_rng_new(seed);
    ref_fill_uniform(&r, host, NULL, na + nb + nc, -1.0, 1.0);
    cl_mem a, b, c;
    assert_ok(cf_buffer_alloc(ctx, na, "A", &a));
    assert_ok(cf_buffer_alloc(ctx, nb, "B", &b));
    assert_ok(cf_buffer_alloc(ctx, nc, "C", &c));
    assert_ok(cf_upload(ctx, a, 0, host, na));
    assert_ok(cf_upload(ctx, b, 0, host + na, nb));
    assert_ok(cf_upload(ctx, c, 0, host + na + nb, nc));
    const size_t lda = ta ? m : k, ldb = tb ? k : n;
    assert_ok(cf_gemm_strided_batched(ctx, ta, tb, m, n, k, alpha, a, 0, lda, m * k, b, 0, ldb,
                                      k * n, beta, c, 0, n, m * n, batch));
    assert_ok(cf_download(ctx, c, 0, out, nc));
    cf_buffer_free(ctx, a);
    cf_buffer_free(ctx, b);
    cf_buffer_free(ctx, c);
    free(host);
}

#endif
