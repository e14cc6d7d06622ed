/* The GEMM front end: checks a call once for every provider, then hands it
 * to the context's provider (gemm_clblast.c, gemm_host.c or gemm_tiled.c). */
#include "gemm.h"
#include "gemm_provider.h"

#include <limits.h>
#include <string.h>
#include <strings.h>

const char *clformer_gemm_provider_name(clformer_gemm_provider provider)
{
    return provider == CLFORMER_GEMM_HOST    ? "host"
           : provider == CLFORMER_GEMM_TILED ? "tiled"
                                             : "clblast";
}

bool cf_gemm_choice_is_auto(const char *choice)
{
    return !choice || !*choice || strcasecmp(choice, "auto") == 0;
}

clformer_status clformer_gemm_provider_for(const clformer_device_info *d, const char *choice,
                                           clformer_gemm_provider *provider)
{
    /* The host provider needs the buffers in host memory and a queue that
     * can run host code (the profile's host_gemm) and OpenBLAS in the build. */
    clformer_device_profile profile;
    clformer_device_profile_for(d, NULL, &profile);
    const bool host_ok = cf_gemm_host_available() && profile.host_gemm;
    if (cf_gemm_choice_is_auto(choice)) {
        *provider = host_ok ? CLFORMER_GEMM_HOST : CLFORMER_GEMM_CLBLAST;
        return CLFORMER_OK;
    }
    if (strcasecmp(choice, "clblast") == 0) {
        *provider = CLFORMER_GEMM_CLBLAST;
        return CLFORMER_OK;
    }
    if (strcasecmp(choice, "tiled") == 0) {
        if (d->max_work_group_size < 64)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "the tiled GEMM provider needs work-groups of 64 items and %s "
                           "allows %zu: use clblast or auto",
                           d->name, d->max_work_group_size);
        *provider = CLFORMER_GEMM_TILED;
        return CLFORMER_OK;
    }
    if (strcasecmp(choice, "host") != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "unknown GEMM provider '%s': use clblast, host, tiled or auto", choice);
    if (!cf_gemm_host_available())
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the host GEMM provider is not in this build (OpenBLAS was not found "
                       "when it was configured): install libopenblas-dev and rebuild, or use "
                       "clblast");
    if (!host_ok)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the host GEMM provider needs a CPU device that runs native kernels, "
                       "and %s is not one: use clblast or auto",
                       d->name);
    *provider = CLFORMER_GEMM_HOST;
    return CLFORMER_OK;
}

clformer_gemm_provider clformer_context_gemm_provider(const clformer_context *ctx)
{
    return ctx->gemm_provider;
}

static clformer_status check_leading(char name, size_t ld, size_t cols)
{
    if (ld >= cols) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "gemm: the leading dimension of %c (%zu) is smaller than a row of %c (%zu "
                   "elements): pass ld%c >= %zu",
                   name, ld, name, cols, name + 'a' - 'A', cols);
}

/* The matrix rows x cols at `off` with row stride `ld` lies inside `mem`. */
static clformer_status check_extent(char name, cl_mem mem, size_t off, size_t rows, size_t cols,
                                    size_t ld)
{
    size_t bytes = 0;
    CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL));
    const size_t end = off + (rows - 1) * ld + cols; /* one past its last element */
    if (end <= bytes / sizeof(float)) return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "gemm: matrix %c (%zu x %zu, leading dimension %zu, at element %zu) reaches "
                   "element %zu, past the end of its buffer (%zu floats)",
                   name, rows, cols, ld, off, end, bytes / sizeof(float));
}

uint64_t cf_gemm_call_bytes(const cf_gemm_call *g)
{
    const uint64_t once = (uint64_t)g->m * g->k + (uint64_t)g->k * g->n + (uint64_t)g->m * g->n;
    uint64_t floats = once * g->batch;
    for (size_t i = 0; i < g->batch; i++) {
        const float beta = g->betas ? g->betas[i] : g->beta;
        if (beta != 0.0f) floats += (uint64_t)g->m * g->n;
    }
    if (g->epilogue.kind != CF_EPILOGUE_NONE) floats += g->n;
    if (g->epilogue.rows) floats += (uint64_t)g->m * g->n;
    return 4 * floats;
}

static bool fits_int(size_t v) { return v <= INT_MAX; }

clformer_status cf_gemm_check_int_sizes(const cf_gemm_call *g)
{
    if (fits_int(g->m) && fits_int(g->n) && fits_int(g->k) && fits_int(g->lda) &&
        fits_int(g->ldb) && fits_int(g->ldc))
        return CLFORMER_OK;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "gemm: sizes and leading dimensions above %d need the clblast provider "
                   "(CLFORMER_GEMM=clblast)",
                   INT_MAX);
}

bool cf_gemm_epilogue_has(clformer_activation act)
{
    return act == CLFORMER_ACT_RELU || act == CLFORMER_ACT_GELU_TANH;
}

/* An epilogue's operands lie in their buffers, and the call is one the
 * host provider applies it to. */
static clformer_status check_epilogue(const cf_ctx *ctx, const cf_gemm_call *g)
{
    const cf_gemm_epilogue *e = &g->epilogue;
    const bool with_rows = e->kind == CF_EPILOGUE_BIAS_ACT || e->kind == CF_EPILOGUE_ACT_GRAD;
    if (!cf_gemm_fuses(ctx) || g->batch != 1 || (e->kind != CF_EPILOGUE_BIAS && !with_rows))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "gemm: epilogue %d on a product of this provider (%s) or batch (%zu): "
                       "only the host provider applies epilogues, to single products "
                       "(cf_gemm_fuses)",
                       (int)e->kind, clformer_gemm_provider_name(ctx->gemm_provider), g->batch);
    if (with_rows && (g->round_c != CLFORMER_FP32 || !cf_gemm_epilogue_has(e->act)))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "gemm: the activation epilogues compute ReLU and tanh GELU (not %s) on "
                       "fp32 activations (not %s); launch the activation kernels for others",
                       clformer_activation_name(e->act) ? clformer_activation_name(e->act) : "?",
                       clformer_precision_name(g->round_c));
    if (!e->bias || (with_rows && !e->rows))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "gemm: the epilogue needs its bias%s buffer", with_rows ? " and rows" : "");
    if (e->drop.p != 0.0f && !(with_rows && e->drop.p > 0.0f && e->drop.p < 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "gemm: an epilogue's dropout (p = %g) is the activation's, with p in "
                       "[0, 1)",
                       (double)e->drop.p);
    CF_TRY(check_extent('b', e->bias, e->bias_off, 1, g->n, g->n));
    if (with_rows) CF_TRY(check_extent('r', e->rows, e->rows_off, g->m, g->n, g->ldc));
    return CLFORMER_OK;
}

static clformer_status check_and_run(cf_ctx *ctx, const cf_gemm_call *g)
{
    const size_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
    const size_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
    CF_TRY(check_leading('A', g->lda, a_cols));
    CF_TRY(check_leading('B', g->ldb, b_cols));
    CF_TRY(check_leading('C', g->ldc, g->n));
    /* the furthest matrix of each operand */
    size_t a_end = 0, b_end = 0, c_end = 0;
    for (size_t i = 0; g->a_offs && i < g->batch; i++) {
        if (g->a_offs[i] > a_end) a_end = g->a_offs[i];
        if (g->b_offs[i] > b_end) b_end = g->b_offs[i];
        if (g->c_offs[i] > c_end) c_end = g->c_offs[i];
    }
    if (!g->a_offs) {
        a_end = g->a_off + (g->batch - 1) * g->a_stride;
        b_end = g->b_off + (g->batch - 1) * g->b_stride;
        c_end = g->c_off + (g->batch - 1) * g->c_stride;
    }
    CF_TRY(check_extent('A', g->a, a_end, a_rows, a_cols, g->lda));
    CF_TRY(check_extent('B', g->b, b_end, b_rows, b_cols, g->ldb));
    CF_TRY(check_extent('C', g->c, c_end, g->m, g->n, g->ldc));
    if (g->epilogue.kind != CF_EPILOGUE_NONE) CF_TRY(check_epilogue(ctx, g));
    switch (ctx->gemm_provider) {
    case CLFORMER_GEMM_HOST: return cf_gemm_host(ctx, g);
    case CLFORMER_GEMM_TILED: return cf_gemm_tiled(ctx, g);
    default: return cf_gemm_clblast(ctx, g);
    }
}

/* Degenerate shapes: nothing to do, except that k == 0 would mean C = beta * C. */
static bool degenerate(size_t m, size_t n, size_t k, size_t batch, bool beta_one,
                       clformer_status *st)
{
    *st = CLFORMER_OK;
    if (m && n && batch && k == 0 && !beta_one)
        *st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                      "gemm with k == 0 and beta != 1 is not supported");
    return m == 0 || n == 0 || k == 0 || batch == 0;
}

clformer_status cf_gemm(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                        float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off,
                        size_t ldb, float beta, cl_mem c, size_t c_off, size_t ldc)
{
    return cf_gemm_rounded(ctx, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, b, b_off, ldb,
                           beta, c, c_off, ldc, CLFORMER_FP32);
}

bool cf_gemm_rounds_output(const cf_ctx *ctx)
{
    return ctx->gemm_provider == CLFORMER_GEMM_HOST && cf_gemm_host_rounds();
}

bool cf_gemm_fuses(const cf_ctx *ctx)
{
    return ctx->gemm_provider == CLFORMER_GEMM_HOST && !ctx->host_fusion_off;
}

clformer_status cf_gemm_rounded(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                                size_t k, float alpha, cl_mem a, size_t a_off, size_t lda,
                                cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c,
                                size_t c_off, size_t ldc, clformer_precision precision)
{
    return cf_gemm_fused(ctx, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, b, b_off, ldb,
                         beta, c, c_off, ldc, precision, NULL);
}

clformer_status cf_gemm_fused(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                              size_t k, float alpha, cl_mem a, size_t a_off, size_t lda,
                              cl_mem b, size_t b_off, size_t ldb, float beta, cl_mem c,
                              size_t c_off, size_t ldc, clformer_precision precision,
                              const cf_gemm_epilogue *epilogue)
{
    if (precision != CLFORMER_FP32 && (!cf_gemm_rounds_output(ctx) || ldc != n || k == 0))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_gemm_rounded: C is rounded by the host provider on CPUs with "
                       "AVX-512F (cf_gemm_rounds_output), in contiguous rows (ldc %zu, n %zu) "
                       "of a product (k %zu)",
                       ldc, n, k);
    if (epilogue && epilogue->kind != CF_EPILOGUE_NONE && k == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_gemm_fused: an epilogue needs a product (k %zu)", k);
    clformer_status st;
    if (degenerate(m, n, k, 1, beta == 1.0f, &st)) return st;
    const cf_gemm_call g = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                            .batch = 1, .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb,
                            .ldc = ldc, .a_off = a_off, .b_off = b_off, .c_off = c_off,
                            .alpha = alpha, .beta = beta, .round_c = precision,
                            .epilogue = epilogue ? *epilogue : (cf_gemm_epilogue){0}};
    return check_and_run(ctx, &g);
}

clformer_status cf_gemm_strided_batched(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m,
                                        size_t n, size_t k, float alpha, cl_mem a, size_t a_off,
                                        size_t lda, size_t a_stride, cl_mem b, size_t b_off,
                                        size_t ldb, size_t b_stride, float beta, cl_mem c,
                                        size_t c_off, size_t ldc, size_t c_stride, size_t batch)
{
    clformer_status st;
    if (degenerate(m, n, k, batch, beta == 1.0f, &st)) return st;
    const cf_gemm_call g = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                            .batch = batch, .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb,
                            .ldc = ldc, .a_off = a_off, .b_off = b_off, .c_off = c_off,
                            .a_stride = a_stride, .b_stride = b_stride, .c_stride = c_stride,
                            .alpha = alpha, .beta = beta};
    return check_and_run(ctx, &g);
}

clformer_status cf_gemm_batched(cf_ctx *ctx, bool trans_a, bool trans_b, size_t m, size_t n,
                                size_t k, const float *alphas, cl_mem a, const size_t *a_offs,
                                size_t lda, cl_mem b, const size_t *b_offs, size_t ldb,
                                const float *betas, cl_mem c, const size_t *c_offs, size_t ldc,
                                size_t batch)
{
    clformer_status st;
    bool betas_one = true;
    for (size_t i = 0; i < batch; i++) betas_one = betas_one && betas[i] == 1.0f;
    if (degenerate(m, n, k, batch, betas_one, &st)) return st;
    const cf_gemm_call g = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                            .batch = batch, .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb,
                            .ldc = ldc, .a_offs = a_offs, .b_offs = b_offs, .c_offs = c_offs,
                            .alphas = alphas, .betas = betas};
    return check_and_run(ctx, &g);
}
