/*
 * GEMM checks of test_gemm_tuning (one per CLBlast parameter set), through the
 * conformance library's case runners: single products (conf_gemm_run) and
 * batched ones (conf_gemm_batched_run).
 */
#ifndef CLFORMER_TEST_GEMM_CHECK_H
#define CLFORMER_TEST_GEMM_CHECK_H

#include "harness.h"
#include "conf_gemm.h"
#include "gemm.h"

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

#endif
