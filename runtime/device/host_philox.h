/*
 * Dropout multipliers on the host, for the host provider's epilogues and
 * attention items (gemm_epilogue.c, runtime/ops/ops_attention_host.c): the
 * value cl/common.h's dropout_scale gives each element of a dropout site,
 * from the same Philox4x32-10 counters (block q = element / 4 holds the
 * bits of elements 4q .. 4q+3), so that a fused step drops exactly the
 * elements the kernels drop. Sixteen blocks a vector with AVX-512F, else
 * one block at a time.
 */
#ifndef CF_HOST_PHILOX_H
#define CF_HOST_PHILOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One dropout site of one step, as the kernels take it (cf_dropout): p 0
 * for none. */
typedef struct {
    float p;
    uint64_t seed;
    uint32_t step, site;
} cf_host_dropout;

/* out[i] = the multiplier of element first + i, for i < count: 0 where
 * dropped, else 1 / (1 - p) (1 everywhere where p <= 0). */
void cf_host_dropout_scales(const cf_host_dropout *d, uint64_t first, size_t count, float *out);

/* The same without AVX-512 (what a CPU without AVX-512F runs), for its test
 * on CPUs with it. */
void cf_host_dropout_scales_portable(const cf_host_dropout *d, uint64_t first, size_t count,
                                     float *out);

#endif
