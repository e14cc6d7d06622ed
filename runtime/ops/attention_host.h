/*
 * Attention as host items on the host provider's CPU devices
 * (ops_attention_host.c): what ops_attention.c's forward_unfused and
 * backward_unfused run there in place of their batched GEMMs and softmax
 * kernels, and forward_fused and backward_fused in place of the per-row
 * fused kernels, with the same saved tensors and operand layouts
 * (attention_operands.h).
 */
#ifndef CF_ATTENTION_HOST_H
#define CF_ATTENTION_HOST_H

#include "ops.h"

/* Whether host items run attention on this context for activations of
 * `precision`: the host provider's context (its host fusion not turned
 * off: cf_ctx.host_fusion_off), fp32. */
bool cf_attention_host_runs(const cf_ctx *ctx, clformer_precision precision);

/* Whether the host items take this attention: cf_attention_host_runs for
 * the context's precision, sizes in int range. */
bool cf_attention_host_takes(const cf_ctx *ctx, const cf_attention_shape *shape);

/* forward_unfused's results: out, probs, and probs_drop (the probabilities
 * after dropout, a copy of probs without, where it is another tensor: with
 * dropout it must be, as ops_attention.c checks). */
clformer_status cf_attention_host_forward(cf_ctx *ctx, cf_view out, cf_view probs,
                                          cf_view probs_drop, cf_view qh, cf_view kh, cf_view vh,
                                          cf_view key_tokens, const cf_attention_shape *shape,
                                          const cf_dropout *dropout);

/* backward_unfused's results: dqh, dkh, dvh overwritten; dprobs holds dS
 * after (scratch). probs_drop is read with dropout only. */
clformer_status cf_attention_host_backward(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                           cf_view dprobs, cf_view dout, cf_view probs,
                                           cf_view probs_drop, cf_view qh, cf_view kh, cf_view vh,
                                           const cf_attention_shape *shape,
                                           const cf_dropout *dropout);

/* The fused path's forward and backward as host items, where the fused
 * kernels would run per row (not the tiled ones): out and the row
 * statistics (`stats`, two floats a row as the fused kernels write them)
 * forward; dqh, dkh, dvh overwritten backward. No B x H x Tq x Tk tensor:
 * the backward computes the probabilities again, a chunk of query rows at
 * a time in the context's scratch. */
clformer_status cf_attention_host_forward_fused(cf_ctx *ctx, cf_view out, cf_view stats,
                                                cf_view qh, cf_view kh, cf_view vh,
                                                cf_view key_tokens,
                                                const cf_attention_shape *shape,
                                                const cf_dropout *dropout);
clformer_status cf_attention_host_backward_fused(cf_ctx *ctx, cf_view dqh, cf_view dkh,
                                                 cf_view dvh, cf_view dout, cf_view qh,
                                                 cf_view kh, cf_view vh, cf_view key_tokens,
                                                 const cf_attention_shape *shape,
                                                 const cf_dropout *dropout);

#endif
