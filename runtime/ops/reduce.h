/*
 * Deterministic reductions on the device (cl/reduce.cl): the same inputs give
 * the same bits on a device, run after run. Both use the context's scratch
 * buffer, so they are leaf operations.
 */
#ifndef CF_REDUCE_H
#define CF_REDUCE_H

#include "context.h"

/* out[out_off] (+)= sum of x[x_off .. x_off+n) (squared when `square`). */
clformer_status cf_reduce_sum(cf_ctx *ctx, cl_mem out, size_t out_off, cl_mem x, size_t x_off,
                              size_t n, bool square, bool accumulate);

/* out[out_off + c] (+)= sum over r < rows of x[x_off + r*ld + c], c < cols. */
clformer_status cf_colsum(cf_ctx *ctx, cl_mem out, size_t out_off, cl_mem x, size_t x_off,
                          size_t rows, size_t cols, size_t ld, bool accumulate);

/* The row blocking cf_colsum uses, for kernels that write the same partials
 * layout ([block][col]) and finish with cf_colsum_final. */
size_t cf_colsum_rows_per_block(size_t rows);
clformer_status cf_colsum_final(cf_ctx *ctx, cl_mem out, size_t out_off, cl_mem partials,
                                size_t nblocks, size_t cols, bool accumulate);

#endif
