/*
 * The host provider's epilogues (gemm.h: cf_gemm_epilogue), applied by the
 * thread that computed a slice of C to that slice's rows while they are in
 * its cache. The bias and ReLU give the bits of the kernels they replace
 * (cl/activation.cl: bias_add, bias_act_forward and bias_act_backward): one
 * float addition, a comparison, and for the gradient a multiplication by 1
 * or 0 (so a NaN or an infinity in C stays one, and a negative value times
 * 0 gives -0, as on the device); with dropout, a multiplication by the
 * kernels' multiplier (host_philox.h), in their order. Tanh GELU follows the
 * kernels' formula (x s, s = 1 / (1 + exp(-2u))) with this file's exp.
 */
#ifndef CF_GEMM_EPILOGUE_H
#define CF_GEMM_EPILOGUE_H

#include "host_philox.h"

#include <stdbool.h>
#include <stdint.h>

/* What the epilogue of one slice of C needs. The dropout (p 0: none) is
 * cl/activation.cl's on the activation: BIAS_ACT multiplies the activation
 * by element (r, j)'s multiplier, ACT_GRAD the incoming gradient before
 * act', as bias_act_forward and bias_act_backward do, the multipliers
 * those of the flat index r * row_len + j (host_philox.h). */
typedef struct {
    int kind;          /* a cf_epilogue_kind other than CF_EPILOGUE_NONE */
    int act;           /* BIAS_ACT, ACT_GRAD: a clformer_activation for which cf_gemm_epilogue_has */
    const float *bias; /* at the slice's first column */
    float *rows;       /* the second matrix (row stride ldc) at the slice's first element; NULL for BIAS */
    cf_host_dropout drop;
    uint64_t first;   /* the flat index of the slice's first element */
    uint64_t row_len; /* C's columns, the flat index's row stride */
} cf_epilogue_slice;

/* The epilogue on the slice of C of m rows by n columns at c (row stride ldc). */
void cf_gemm_epilogue_rows(const cf_epilogue_slice *e, float *c, int m, int n, int ldc);

/* The same one element at a time, without AVX-512: what a CPU without
 * AVX-512F runs (for its test on CPUs with it). */
void cf_gemm_epilogue_rows_portable(const cf_epilogue_slice *e, float *c, int m, int n, int ldc);

/* exp(y) as the epilogues compute it, for its test: within 2 ulp of the
 * exact value over float's range, infinity above ~88.72, 0 below ~-103.97
 * (subnormals between), NaN for NaN. `avx512`: the AVX-512 code's (false:
 * the portable code's; true needs a CPU with AVX-512F). */
float cf_gemm_epilogue_exp(float y, bool avx512);

#endif
