/*
 * Double-precision reference of multi-head attention (runtime/ops/ops.h): same
 * argument order and layouts as the device ops, plain C, no OpenCL.
 * Per-head tensors are (B, H, T, dh) with row capacity T (Tk_cap for kh, vh,
 * dkh, dvh); probabilities are (B, H, Tq, Tk).
 */
#ifndef REF_ATTENTION_H
#define REF_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>

#include "ref_philox.h"
#include <stdint.h>

/* Mirrors cf_attention_shape. */
typedef struct {
    size_t B, H, dh;
    size_t Tq, Tk, Tk_cap;
    size_t q_pos0; /* key j is masked for query t when causal and j > q_pos0 + t */
    bool causal;
    size_t key_ld; /* key j of batch b is key_tokens[b*key_ld + j]; 0 means padding */
} ref_attention_shape;

/* Mirrors cf_dropout; NULL or p == 0 means no dropout (ref_philox.h). */
typedef ref_dropout ref_attention_dropout;

/* dst (B, H, T, dh) <- rows (b, t, h*dh + j) of src with row stride ld. */
void ref_split_heads(double *dst, const double *src, size_t ld, size_t B, size_t T, size_t H,
                     size_t dh);
/* dst rows (b, t, h*dh + j) with row stride ld <- src (B, H, T, dh); other columns untouched. */
void ref_merge_heads(double *dst, size_t ld, const double *src, size_t B, size_t T, size_t H,
                     size_t dh);

/* ctx_h = dropout(softmax(qh kh^T / sqrt(dh) + mask)) vh; fills probs and
 * probs_drop (probs_drop may equal probs without dropout). key_tokens NULL:
 * no padding mask. Fully masked rows give zero probabilities and output. */
void ref_attention_forward(double *ctx_h, double *probs, double *probs_drop, const double *qh,
                           const double *kh, const double *vh, const int32_t *key_tokens,
                           const ref_attention_shape *s, const ref_attention_dropout *dropout);

/* Overwrites dqh, and rows < Tk of each (b, h) block of dkh and dvh.
 * dprobs (B, H, Tq, Tk) receives the score gradient dS. */
void ref_attention_backward(double *dqh, double *dkh, double *dvh, double *dprobs,
                            const double *dctx_h, const double *probs, const double *probs_drop,
                            const double *qh, const double *kh, const double *vh,
                            const ref_attention_shape *s, const ref_attention_dropout *dropout);

#endif
