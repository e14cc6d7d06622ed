/*
 * The kernel arguments of a dropout site, for every op that applies dropout
 * (cf_dropout in ops.h). Kernels take `float p, ulong seed, uint step,
 * uint site` and call dropout_scale (cl/common.h); p = 0 there means
 * identity, bit-exact.
 */
#ifndef CF_DROPOUT_H
#define CF_DROPOUT_H

#include "host_philox.h"
#include "ops.h"

/* p 0 when the site is inactive. The same four values as the host's own
 * draws take them (host_philox.h: the fused epilogues and attention items
 * take these as they are). */
typedef cf_host_dropout cf_dropout_args;

/* Validates `d` (NULL or p in [0, 1)) and fills `out`; `op` names the
 * caller in the error message. */
clformer_status cf_dropout_args_of(const cf_dropout *d, const char *op, cf_dropout_args *out);

/* The work items of an element-wise dropout kernel over n elements
 * (activation, dropout, residual_norm): DROP_BLOCK elements each
 * (cl/common.h), 4 with GPU layouts, else 32. */
size_t cf_dropout_items(const cf_ctx *ctx, size_t n);

/* The four launch arguments, in kernel order, for CF_LAUNCH. */
#define CF_DROPOUT_ARGS(a) CF_F32((a).p), CF_U64((a).seed), CF_U32((a).step), CF_U32((a).site)

#endif
