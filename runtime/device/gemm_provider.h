/*
 * The GEMM providers behind runtime/device/gemm.h. gemm.c checks every
 * call (leading dimensions, buffer extents) and hands the providers one
 * description of it, so all accept and refuse exactly the same calls.
 */
#ifndef CF_GEMM_PROVIDER_H
#define CF_GEMM_PROVIDER_H

#include "context.h"
#include "gemm.h"

/* `batch` products C_i = alpha_i op(A_i) op(B_i) + beta_i C_i (row-major).
 * With offs == NULL matrix i starts at x_off + i * x_stride and every
 * product has `alpha` and `beta` (plain: batch 1); otherwise at a_offs[i],
 * b_offs[i], c_offs[i] with alphas[i] and betas[i]. m, n, k, batch > 0. */
typedef struct {
    bool trans_a, trans_b;
    size_t m, n, k, batch;
    cl_mem a, b, c;
    size_t lda, ldb, ldc;
    size_t a_off, b_off, c_off, a_stride, b_stride, c_stride;
    float alpha, beta;
    const size_t *a_offs, *b_offs, *c_offs; /* NULL: strided */
    const float *alphas, *betas;
    /* C rounded to this precision's values as the provider writes it (FP32:
     * not; cf_gemm_rounded, the host provider only) */
    clformer_precision round_c;
    /* applied to C after the product, before rounding (batch 1; the host
     * provider only: cf_gemm_fused) */
    cf_gemm_epilogue epilogue;
} cf_gemm_call;

/* The call's ideal traffic (launch.h): A, B and C once per product (m*k +
 * k*n + m*n floats), plus C read where beta != 0, plus the epilogue's bias
 * and rows. */
uint64_t cf_gemm_call_bytes(const cf_gemm_call *call);
/* Its FLOP: 2*m*n*k per product. */
static inline uint64_t cf_gemm_call_flop(const cf_gemm_call *g)
{
    return 2 * (uint64_t)g->m * g->n * g->k * g->batch;
}

/* Whether a CLFORMER_GEMM word leaves the provider to the rule of
 * clformer_gemm_provider_for (NULL, empty or "auto"), rather than naming one. */
bool cf_gemm_choice_is_auto(const char *choice);

/* For providers whose kernels take int sizes (host, tiled): an error naming
 * the clblast provider when a size or leading dimension exceeds INT_MAX. */
clformer_status cf_gemm_check_int_sizes(const cf_gemm_call *call);

clformer_status cf_gemm_clblast(cf_ctx *ctx, const cf_gemm_call *call);
clformer_status cf_gemm_host(cf_ctx *ctx, const cf_gemm_call *call);
clformer_status cf_gemm_tiled(cf_ctx *ctx, const cf_gemm_call *call);
/* The tiled provider with tile set `set` (an index of cf_gemm_tile_sets),
 * or with the set the context forces or the shape gets where set < 0. */
clformer_status cf_gemm_tiled_with(cf_ctx *ctx, const cf_gemm_call *call, int set);

/* The tiled provider's tile sets (gemm_tiled.c), largest first: a gm x gn
 * block of C a work-group, k by gk, wm x wn outputs an item. */
typedef struct {
    int gm, gn, gk, wm, wn;
} cf_gemm_tiles;
enum { CF_GEMM_TILE_SETS = 3 };
extern const cf_gemm_tiles cf_gemm_tile_sets[CF_GEMM_TILE_SETS];
/* Work items of one group of the set. */
size_t cf_gemm_tiles_items(const cf_gemm_tiles *tiles);
/* Whether the context's device holds a work-group of the set (items and
 * local memory). */
bool cf_gemm_tiles_fit(const cf_ctx *ctx, const cf_gemm_tiles *tiles);
/* What identifies the tiled kernel's source (the context's cl/gemm.cl) in
 * the GEMM search's file: "cl/gemm.cl fnv1a <16 hex digits>". */
clformer_status cf_gemm_tiled_identity(const cf_ctx *ctx, char *out, size_t cap);
/* cl/gemm.cl's build options for the set and transposes. */
void cf_gemm_tiles_options(const cf_gemm_tiles *tiles, bool trans_a, bool trans_b, char *out,
                           size_t cap);

/* Whether this build has the host provider (OpenBLAS found at configure time). */
bool cf_gemm_host_available(void);
/* Whether the host provider rounds C as it writes it where a call asks
 * (cf_gemm_call.round_c: the CPU has AVX-512F, round_avx512.h). */
bool cf_gemm_host_rounds(void);
/* Starts the host provider's helper threads from the calling thread, as its
 * first large product does (once a process); returns how many run: 0 without
 * OpenBLAS or where OpenBLAS would use one thread. */
int cf_gemm_host_start_helpers(void);

#endif
