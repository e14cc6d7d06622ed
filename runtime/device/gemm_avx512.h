/*
 * The host provider's own single-precision product for CPUs with AVX-512
 * whose OpenBLAS picked older kernels. OpenBLAS 0.3.21 does not know recent
 * Xeons (family 6 model 207 among them) and falls back to its SSE3
 * (Prescott) kernels there, which take about twice as long as its AVX-512
 * ones; it reads OPENBLAS_CORETYPE only as it loads, so a library cannot
 * choose for the program around it. gemm_host.c calls this product instead
 * where cf_gemm_avx512_wanted() says so; every program on the library then
 * computes the same bits.
 */
#ifndef CF_GEMM_AVX512_H
#define CF_GEMM_AVX512_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether to use cf_gemm_avx512: the CPU has AVX-512F and OpenBLAS runs
 * kernels without it (openblas_get_corename). CLFORMER_HOST_GEMM=openblas
 * or =own overrides the choice (own needs AVX-512F). Decided once. */
bool cf_gemm_avx512_wanted(void);

/* Whether CLFORMER_HOST_GEMM=openblas asks for OpenBLAS's sgemm for every
 * product (decoding steps' too: gemm_dots.h). Read once, like the choice
 * above. */
bool cf_gemm_host_openblas_only(void);

/* A clear error when CLFORMER_HOST_GEMM is not auto, own or openblas, or
 * asks for own on a CPU without AVX-512F; the host provider checks it
 * before each product. */
clformer_status cf_gemm_avx512_check_setting(void);

/* C = alpha op(A) op(B) + beta C, row-major, as cblas_sgemm with
 * CblasRowMajor (beta == 0: C is not read). Each element of C is summed
 * over k in order, in blocks of a fixed size from k = 0, so its bits do not
 * depend on the rows and columns computed with it (the provider slices
 * products over threads). Returns false, having written nothing, when the
 * CPU lacks AVX-512F or its packing buffers cannot be allocated. */
bool cf_gemm_avx512(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                    const float *a, int lda, const float *b, int ldb, float beta, float *c,
                    int ldc);

/* Whether cf_gemm_avx512 reads op(B) where it lies instead of packing it:
 * not transposed (its rows along n) and at most 1 M floats. The host
 * provider then lets each thread read it so, rather than packing it once
 * for all (cf_gemm_avx512_packed). */
bool cf_gemm_avx512_reads_b_in_place(bool trans_b, int n, int k);

/* Whether this CPU has AVX-512F (the products below return false without). */
bool cf_gemm_avx512_available(void);

/* The same product in two parts, so that threads computing slices of C's
 * rows share one packed op(B) instead of each packing it: pack op(B) (k x n)
 * once into cf_gemm_avx512_packed_floats(n, k) floats (64-byte aligned), in
 * cf_gemm_avx512_pack_tasks(n, k) parts that threads may take apart, in any
 * order and concurrently (cf_gemm_avx512_pack_task writes one; AVX-512F
 * only: where cf_gemm_avx512_available), then compute any rows of C from
 * it; the bits are cf_gemm_avx512's. A
 * thread's slice is m rows of op(A) from a (trans_a: a + first row) and of C
 * from c. False, having written nothing, without AVX-512F or memory.
 * cf_gemm_avx512_packed_buffer: space for the packed op(B). Up to 2 MiB it
 * is space the calling thread keeps (the same next time, or a larger one;
 * freed when the thread ends), valid until its next call, and *own is
 * false; larger, it is allocated for this product, *own is true and the
 * caller frees it (a device with many worker threads, any of which may call
 * a product, then keeps no more than 2 MiB in each). NULL without AVX-512F
 * or memory. */
size_t cf_gemm_avx512_packed_floats(int n, int k);
float *cf_gemm_avx512_packed_buffer(int n, int k, bool *own);
size_t cf_gemm_avx512_pack_tasks(int n, int k);
void cf_gemm_avx512_pack_task(bool trans_b, int n, int k, const float *b, int ldb, float *out,
                              size_t task);
bool cf_gemm_avx512_packed(bool trans_a, int m, int n, int k, float alpha, const float *a,
                           int lda, const float *packed, float beta, float *c, int ldc);

#endif
