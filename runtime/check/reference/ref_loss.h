/* Double-precision reference of the softmax cross-entropy and the decoding
 * helpers (same contracts as cf_cross_entropy, cf_log_softmax_rows and
 * cf_argmax_rows in runtime/ops/ops.h). */
#ifndef REF_LOSS_H
#define REF_LOSS_H

#include <stddef.h>
#include <stdint.h>

/* losses[r] = -sum_c q_c log softmax(logits_r)_c with q = (1-ls) onehot(y) + ls/V,
 * 0 when targets[r] == ignore_index; dlogits (NULL: skipped) =
 * grad_scale * (softmax - q), 0 for ignored rows. dlogits may equal logits. */
void ref_cross_entropy(double *losses, double *dlogits, const double *logits,
                       const int32_t *targets, size_t N, size_t V, double label_smoothing,
                       int ignore_index, double grad_scale);

/* out (N, V) = log_softmax of each row; out may equal logits. */
void ref_log_softmax_rows(double *out, const double *logits, size_t N, size_t V);

/* out[r] = index of the row's largest value; the lowest index wins ties and
 * NaN counts as the largest value. */
void ref_argmax_rows(int32_t *out, const double *logits, size_t N, size_t V);

#endif
