/*
 * One self-attention call of the fused path on tensors of its own, filled
 * with uniform random numbers, never the model's: what the attention tile
 * search (attention_search.c) and clformer_check_attention_time
 * (runtime/check/attention_timing.c) run and time.
 */
#ifndef CF_ATTENTION_TRIAL_H
#define CF_ATTENTION_TRIAL_H

#include "ops.h"

typedef enum {
    CF_TRIAL_Q,
    CF_TRIAL_K,
    CF_TRIAL_V,
    CF_TRIAL_DO,
    CF_TRIAL_O,
    CF_TRIAL_DQ,
    CF_TRIAL_DK,
    CF_TRIAL_DV,
    CF_TRIAL_STATS,
    CF_TRIAL_DSUM,
    CF_TRIAL_BUFS
} cf_attention_trial_buf;

typedef struct {
    cf_attention_shape shape; /* self-attention: Tq = Tk = len, no padding */
    cl_mem buf[CF_TRIAL_BUFS];
    size_t n; /* floats of each of Q, K, V, dO, O, dQ, dK and dV */
} cf_attention_trial;

/* batch x heads heads of len queries and keys of head_dim floats; Q, K, V
 * and dO drawn from `seed`, uniform in [-1, 1). On failure nothing is left
 * allocated. */
clformer_status cf_attention_trial_make(cf_ctx *ctx, size_t batch, size_t heads, size_t len,
                                        size_t head_dim, bool causal, uint64_t seed,
                                        cf_attention_trial *t);

/* O and the row statistics from Q, K and V, as a layer's forward makes them. */
clformer_status cf_attention_trial_forward(cf_ctx *ctx, const cf_attention_trial *t);

/* dQ, dK and dV from dO and what the forward left, as a layer's backward. */
clformer_status cf_attention_trial_backward(cf_ctx *ctx, const cf_attention_trial *t);

void cf_attention_trial_free(cf_ctx *ctx, cf_attention_trial *t);

#endif
