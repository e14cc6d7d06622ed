/* What tests take from the gemm op's check (conf_gemm.c): its two case
 * runners, which test_gemm_tuning and test_gemm_search run under each
 * CLBlast parameter set they force or choose. Each case emits one result,
 * judged on the numbers and on guard regions (conf_block.h). */
#ifndef CLFORMER_CONF_GEMM_H
#define CLFORMER_CONF_GEMM_H

#include "conformance.h"

typedef struct {
    bool ta, tb;
    size_t m, n, k;
    float alpha, beta; /* C = alpha op(A) op(B) + beta C, C random at first */
    size_t pad_a, pad_b, pad_c; /* extra columns of each leading dimension */
    uint64_t seed;
} conf_gemm_case;
clformer_status conf_gemm_run(cf_ctx *ctx, const conf_gemm_case *c, conf_sink sink, void *user);

typedef struct {
    bool strided;  /* cf_gemm_strided_batched, else cf_gemm_batched */
    bool ta, tb;
    size_t m, n, k, batch;
    float alpha, beta; /* batched: matrix i gets alpha + i/4 and beta (odd i) or 0 */
    size_t gap_a, gap_b, gap_c; /* elements between one matrix and the next */
    uint64_t seed;
} conf_gemm_batched_case;
clformer_status conf_gemm_batched_run(cf_ctx *ctx, const conf_gemm_batched_case *c,
                                      conf_sink sink, void *user);

#endif
