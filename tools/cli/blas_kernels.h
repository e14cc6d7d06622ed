/*
 * OpenBLAS's kernels, as `clformer devices` and `bench` report them.
 * OpenBLAS (a DYNAMIC_ARCH build, as Debian's) picks its kernels by CPU
 * model once, when it loads, and takes its Prescott (SSE3) kernels on models
 * newer than it knows: Debian 12's 0.3.21 on an Emerald Rapids Xeon (family
 * 6, model 207), where gpt-mini trains twice as fast with its SkylakeX
 * (AVX-512) kernels. OPENBLAS_CORETYPE chooses them, but only as the library
 * loads, so the command does not switch them itself (it would then compute
 * other bits than a program on the library in the same environment): it
 * says which run and which OPENBLAS_CORETYPE selects faster ones. On a CPU
 * with AVX-512 the host provider replaces such kernels by its own product
 * (runtime/device/gemm_avx512.h), in the library and the command alike;
 * then no OPENBLAS_CORETYPE is suggested.
 */
#ifndef CLI_BLAS_KERNELS_H
#define CLI_BLAS_KERNELS_H

#include <stddef.h>

/* The kernels OpenBLAS runs ("SkylakeX", "Prescott", ...); "?" without it. */
const char *blas_kernels_name(void);

/* The OPENBLAS_CORETYPE that selects faster kernels for this CPU than the
 * Prescott ones running ("SkylakeX" or "Haswell"), or NULL (also when the
 * host provider runs its own AVX-512 product). */
const char *blas_kernels_better(void);

/* The host provider's product in words: "clformer's AVX-512 sgemm (in place
 * of OpenBLAS's Prescott kernels)" or "OpenBLAS sgemm (its SkylakeX
 * kernels)", with the hint of blas_kernels_better when there is one. */
void blas_kernels_describe(char *out, size_t size);

#endif
