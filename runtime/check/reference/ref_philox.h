/*
 * The dropout random numbers of cl/common.h in plain C: Philox4x32-10 and
 * the per-element uniform and multiplier derived from it. The device and
 * this code must agree bit for bit (same kept/dropped elements), which the
 * host test checks against Random123's published answers and the device
 * tests check against every device.
 */
#ifndef REF_PHILOX_H
#define REF_PHILOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One dropout site of one step; mirrors cf_dropout (runtime/ops/ops.h) without
 * OpenCL. p == 0 (or a NULL pointer) means identity. */
typedef struct {
    float p;
    uint64_t seed;
    uint32_t step;
    uint32_t site;
} ref_dropout;

/* out = Philox4x32-10(counter, key), 10 rounds. */
void ref_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Uniform in [0, 1) with 24 bits for element `index` of site `tensor` at
 * `step`, exactly as dropout_uniform in cl/common.h. */
float ref_dropout_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t index);

/* True when element `index` of the site is kept (always, when inactive). */
bool ref_dropout_kept(const ref_dropout *d, uint64_t index);

/* The multiplier of element `index` in double: 0 when dropped, 1/(1-p) when
 * kept (p taken as the float the device sees), 1 when inactive. */
double ref_dropout_scale(const ref_dropout *d, uint64_t index);

/* dx = dropout_mask(dout) over n elements (dropout's backward, and the
 * fused residual's): overwrites; dx may alias dout. */
void ref_dropout_backward(double *dx, const double *dout, size_t n, const ref_dropout *dropout);

#endif
