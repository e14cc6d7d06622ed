/*
 * A batch through a session's passes: host-side validation, its one upload,
 * and the passes that need no optimizer: the evaluation loss, the logits,
 * and the forward and backward that leave the gradients (the training step,
 * step.c, adds clipping and Adam).
 */
#include "batch.h"
#include "buffer.h"
#include "clock.h"
#include "program.h"
#include "reduce.h"

#include <stdlib.h>
#include <string.h>

/* Builds the integer region of the arena on the host and uploads it once. */
static clformer_status upload_ints(cf_session *s, const clformer_batch *b, size_t *label_count)
{
    cf_acts *a = &s->acts;
    const size_t B = b->batch, S = b->src_len, T = b->tgt_len - 1;
    int32_t *h = calloc(a->ints, sizeof *h);
    if (!h) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (S) memcpy(h + a->src.off, b->src, B * S * sizeof *h);
    const int ignore = s->model->family->ignore_label;
    size_t count = 0;
    for (size_t r = 0; r < B; r++)
        for (size_t t = 0; t < T; t++) {
            h[a->tgt_in.off + r * T + t] = b->tgt[r * b->tgt_len + t];
            int32_t y = b->tgt[r * b->tgt_len + t + 1];
            h[a->labels.off + r * T + t] = y;
            count += y != ignore;
        }
    cf_embedding_index *ix[2] = {&a->src_index, &a->tgt_index};
    const int32_t *tokens[2] = {h + a->src.off, h + a->tgt_in.off};
    const size_t n[2] = {B * S, B * T};
    for (int i = 0; i < 2; i++)
        ix[i]->n_unique = cf_embedding_index_build(tokens[i], n[i], h + ix[i]->unique.off,
                                                   h + ix[i]->starts.off,
                                                   h + ix[i]->positions.off);
    clformer_status st = cf_upload(s->ctx, a->src.buf, 0, h, a->ints);
    free(h);
    *label_count = count;
    return st;
}

/* Validates, lays out the arena and uploads: everything before the kernels. */
static clformer_status prepare(cf_session *s, const clformer_batch *b, bool training,
                               size_t *label_count)
{
    CF_TRY(s->model->family->check_batch(&s->model->cfg, b));
    CF_TRY(cf_acts_prepare(s, b->batch, b->src_len, b->tgt_len - 1, training));
    if (training)
        s->training_attention = !s->acts.fused_attention ? CLFORMER_ATTENTION_UNFUSED
                                : s->acts.gemm_backward  ? CLFORMER_ATTENTION_GEMM_BACKWARD
                                                         : CLFORMER_ATTENTION_FUSED;
    CF_TRY(upload_ints(s, b, label_count));
    if (*label_count == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the batch has no target tokens to predict (every label is <pad>)");
    return CLFORMER_OK;
}

clformer_status cf_batch_forward_backward(cf_session *s, const clformer_batch *b, size_t *count,
                                        clformer_step_stats *stats, float loss_scale)
{
    cf_model *m = s->model;
    const double start = cf_now_s();
    CF_TRY(prepare(s, b, true, count));
    /* the first step's kernels, compiled together (and with progress shown) */
    CF_TRY(cf_programs_prepare_ops(s->ctx, s->acts.fused_attention));
    CF_TRY(cf_collective_count(m, count));
    CF_TRY(cf_fill(s->ctx, m->grads, 0, m->layout.total, 0.0f));
    /* fp16: the loss scale S multiplies dlogits before they are stored */
    CF_TRY(cf_forward(s, true, loss_scale / (float)*count));
    CF_TRY(cf_backward(s));
    CF_TRY(cf_collective_gradients(m, start, stats));
    return cf_reduce_sum(s->ctx, s->metrics, 1, m->grads, 0, m->layout.total, true, false);
}

clformer_status cf_batch_loss_sum(cf_model *m, float local, double *sum)
{
    *sum = (double)local;
    return cf_collective_sum(m, sum, 1);
}

static clformer_status session_gradients_passes(clformer_session *s, const clformer_batch *b,
                                                double *loss)
{
    size_t count;
    CF_TRY(cf_batch_forward_backward(s, b, &count, NULL, 1.0f));
    float local;
    double sum;
    CF_TRY(cf_download(s->ctx, s->metrics, 0, &local, 1));
    CF_TRY(cf_batch_loss_sum(s->model, local, &sum));
    if (loss) *loss = sum / (double)count;
    return CLFORMER_OK;
}

static clformer_status session_eval_loss_passes(clformer_session *s, const clformer_batch *b,
                                                double *loss_sum, size_t *tokens)
{
    size_t count;
    CF_TRY(prepare(s, b, false, &count));
    CF_TRY(cf_forward(s, true, 1.0f));
    float sum;
    CF_TRY(cf_download(s->ctx, s->metrics, 0, &sum, 1));
    *loss_sum = sum;
    *tokens = count;
    return CLFORMER_OK;
}

static clformer_status session_logits_passes(clformer_session *s, const clformer_batch *b,
                                             float *logits)
{
    size_t count;
    CF_TRY(prepare(s, b, false, &count));
    CF_TRY(cf_forward(s, false, 1.0f));
    return cf_download(s->ctx, s->acts.logits.buf, s->acts.logits.off, logits,
                       b->batch * (b->tgt_len - 1) * (size_t)s->model->cfg.tgt_vocab);
}

clformer_status clformer_session_gradients(clformer_session *s, const clformer_batch *b, double *loss)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved, session_gradients_passes(s, b, loss));
}

clformer_status clformer_session_eval_loss(clformer_session *s, const clformer_batch *b,
                                           double *loss_sum, size_t *tokens)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved, session_eval_loss_passes(s, b, loss_sum, tokens));
}

clformer_status clformer_session_logits(clformer_session *s, const clformer_batch *b, float *logits)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved, session_logits_passes(s, b, logits));
}
