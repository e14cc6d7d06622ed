/*
 * A batch through a session's passes (batch.c): what the training step
 * (step.c) runs before its optimizer.
 */
#ifndef CF_BATCH_H
#define CF_BATCH_H

#include "session.h"

/* Validates, uploads and runs the forward and backward of a training batch:
 * the gradients of the mean loss over the labels of all ranks (each rank
 * scales its per-token gradients by 1 / the global count, and the ranks'
 * gradients are summed before the norm that clipping uses), loss_scale
 * times that, in the model's grads; the loss sum in metrics[0] and the
 * squared gradient norm in metrics[1]. *count becomes the global label
 * count; stats (may be NULL) receives the timing of the collective. */
clformer_status cf_batch_forward_backward(cf_session *s, const clformer_batch *b, size_t *count,
                                          clformer_step_stats *stats, float loss_scale);

/* The loss sum of all ranks (each rank's forward wrote its own, `local`). */
clformer_status cf_batch_loss_sum(cf_model *m, float local, double *sum);

#endif
