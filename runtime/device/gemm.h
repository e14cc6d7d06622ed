/*
 * Every matrix product goes through here: a thin row-major wrapper over
 * CLBlast's Sgemm, SgemmStridedBatched and SgemmBatched taking (buffer,
 * element offset) operands. C = alpha * op(A) op(B) + beta * C, with op(A)
 * m x k, op(B) k x n and C m x n; lda/ldb/ldc are row strides in elements.
 */
#ifndef CF_GEMM_H
#define CF_GEMM_H

#include "context.h"
#include "host_philox.h"

clformer_status cf_gemm(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                        float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off,
                        size_t ldb, float beta, cl_mem c, size_t c_off, size_t ldc);

/* Whether the context's provider rounds C as it writes it (cf_gemm_rounded):
 * the host provider on CPUs with AVX-512F. */
bool cf_gemm_rounds_output(const cf_ctx *ctx);

/* cf_gemm whose C (m x n, ldc == n, k > 0) the provider rounds to
 * `precision`'s values as it writes it: the bits cf_round_storage gives, so
 * that an op writing a 16-bit activation needs no rounding launch after the
 * product. Only where cf_gemm_rounds_output (else an error); FP32: not
 * rounded (cf_gemm is this with FP32). */
clformer_status cf_gemm_rounded(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                                size_t k, float alpha, cl_mem a, size_t a_off, size_t lda,
                                cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c,
                                size_t c_off, size_t ldc, clformer_precision precision);

/* What a product does to its C once computed, where the context's provider
 * can (cf_gemm_fuses): a linear layer's bias, and the feed-forward's
 * activation (ReLU or tanh GELU) and its gradient, done while the product's
 * rows are still in cache instead of by a launch that reads them again.
 * BIAS and ReLU give the bits of the launches they replace (cl/activation.cl's
 * bias_add, bias_act_forward and bias_act_backward, dropout included);
 * tanh GELU is computed with the host's own exp (host_exp.h), so it agrees
 * with the kernels to fp32 rounding, not bit for bit. */
typedef enum {
    CF_EPILOGUE_NONE,
    CF_EPILOGUE_BIAS,     /* C[i][j] += bias[j] */
    CF_EPILOGUE_BIAS_ACT, /* rows[i][j] = act(C[i][j] + bias[j]); C (pre-activation) kept */
    CF_EPILOGUE_ACT_GRAD, /* C[i][j] *= act'(rows[i][j] + bias[j]): rows holds the pre-activation */
} cf_epilogue_kind;

typedef struct {
    cf_epilogue_kind kind;
    clformer_activation act; /* BIAS_ACT, ACT_GRAD: CLFORMER_ACT_RELU or _GELU_TANH */
    cl_mem bias;             /* n floats at bias_off */
    size_t bias_off;
    cl_mem rows; /* BIAS_ACT, ACT_GRAD: m x n floats at rows_off, row stride ldc (as C) */
    size_t rows_off;
    /* BIAS_ACT, ACT_GRAD: the activation's dropout (p 0: none), as
     * bias_act_forward and bias_act_backward apply it (gemm_epilogue.h) */
    cf_host_dropout drop;
} cf_gemm_epilogue;

/* Whether an epilogue computes `act` (ReLU and tanh GELU; not the erf GELU). */
bool cf_gemm_epilogue_has(clformer_activation act);

/* Whether the context's provider applies epilogues (the host provider:
 * the rows of each slice of C, by the thread that computed them), and the
 * context does not turn them off (cf_ctx.host_fusion_off). */
bool cf_gemm_fuses(const cf_ctx *ctx);

/* cf_gemm_rounded with an epilogue (a single product): BIAS before C is
 * rounded to `precision` (the bits of a rounding bias add); BIAS_ACT and
 * ACT_GRAD at FP32 only (else an error). Only where cf_gemm_fuses. */
clformer_status cf_gemm_fused(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                              size_t k, float alpha, cl_mem a, size_t a_off, size_t lda,
                              cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c,
                              size_t c_off, size_t ldc, clformer_precision precision,
                              const cf_gemm_epilogue *epilogue);

/* `batch` products; matrix i starts at x_off + i * x_stride. */
clformer_status cf_gemm_strided_batched(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m,
                                        size_t n, size_t k, float alpha, cl_mem a, size_t a_off,
                                        size_t lda, size_t a_stride, cl_mem b, size_t b_off,
                                        size_t ldb, size_t b_stride, float beta, cl_mem c,
                                        size_t c_off, size_t ldc, size_t c_stride, size_t batch);

/* `batch` products at arbitrary offsets, each with its own alpha and beta. */
clformer_status cf_gemm_batched(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                                size_t k, const float *alphas, cl_mem a, const size_t *a_offs,
                                size_t lda, cl_mem b, const size_t *b_offs, size_t ldb,
                                const float *betas, cl_mem c, const size_t *c_offs, size_t ldc,
                                size_t batch);

/* Drops CLBlast's caches of compiled programs. CLBlast keeps them in static
 * storage that is destroyed at exit, after clformer has released its
 * contexts; Oclgrind frees a program's memory together with its context, so
 * those late clReleaseProgram calls corrupted the heap (seen as an abort at
 * exit under the `oclgrind` command). clformer_context_free calls this before
 * it releases the last live context. CLBlast's parameter overrides stay (its
 * ClearCache keeps them): the GEMM search hands back the sets it found
 * (cf_gemm_search_forget), and cf_gemm_tuning_init applies a context's
 * table again for every new context. */
void cf_gemm_release_caches(void);

/* Whether a decoding step's products on this context read a 16-bit copy of
 * the weights where one is registered (cf_ctx.half_weights): the host
 * provider's dot products (gemm_dots.h) do. */
bool cf_gemm_reads_half_weights(const cf_ctx *ctx);

/* 2*m*n*k: the FLOP count `bench` uses for a product. */
static inline double cf_gemm_flops(size_t m, size_t n, size_t k)
{
    return 2.0 * (double)m * (double)n * (double)k;
}

#endif
