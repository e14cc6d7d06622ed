/*
 * Work of an op on the host, for the host provider's CPU devices: a native
 * kernel on the context's in-order queue (ordered with the kernels around
 * it, on buffers in host memory, no copies) that runs an op's function once
 * per item, the items spread over the host provider's threads as a batch
 * of products is (gemm_host.c). The op's function may call
 * cf_host_product for its products, one thread's each. Attention on CPU
 * devices runs so (runtime/ops/ops_attention_host.c): a (batch, head)'s
 * scores, softmax and products an item, its probabilities in that core's
 * cache from one step to the next.
 */
#ifndef CF_HOST_ITEMS_H
#define CF_HOST_ITEMS_H

#include "context.h"

/* The most buffers an item function reads or writes. */
enum { CF_HOST_ITEMS_MAX_BUFFERS = 12 };

/* Item `item` of the work: `args` as the op passed them (copied),
 * `address[i]` the host address of the op's buffer i (element 0), and
 * `thread` the running thread's index among the launch's, below
 * cf_host_items_threads(): no two threads run items of a launch with the
 * same index, so an op may give each its own part of a buffer. */
typedef void (*cf_host_item_fn)(const void *args, float *const *address, size_t item,
                                int thread);

/* The most threads that run one launch's items (the host provider's
 * helpers and the queue's own thread). */
int cf_host_items_threads(void);

/* Whether the context runs host items: the host provider's contexts (a CPU
 * device that runs native kernels, a build with OpenBLAS). */
bool cf_host_items_available(const cf_ctx *ctx);

/* Enqueues fn for items 0..items-1 over the buffers (at most
 * CF_HOST_ITEMS_MAX_BUFFERS, distinct), args_size bytes of args copied;
 * profiled under `family` with its ideal traffic and FLOP. Each item must
 * write what no other item reads or writes: they run in any order, at the
 * same time. */
clformer_status cf_host_items(cf_ctx *ctx, const char *family, cf_host_item_fn fn,
                              const void *args, size_t args_size, const cl_mem *buffers,
                              size_t n_buffers, size_t items, uint64_t bytes, uint64_t flop);

/* C = alpha op(A) op(B) + beta C, row-major, on the calling thread alone:
 * the host provider's product (its own AVX-512 one, or OpenBLAS's),
 * for item functions. */
void cf_host_product(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc);

#endif
