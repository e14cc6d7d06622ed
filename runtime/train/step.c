/*
 * The training step (clformer_session_train_step): a batch's forward and
 * backward (batch.c), then the enqueued clip and Adam that end in one small
 * read-back (loss sum and gradient norm), and fp16's dynamic loss scale.
 */
#include "batch.h"
#include "buffer.h"
#include "log.h"

#include <math.h>

/* fp16 loss scaling (clformer_model_set_loss_scale): PyTorch GradScaler's
 * defaults */
#define LOSS_SCALE_INITIAL 65536.0f
#define LOSS_SCALE_GROWTH_STEPS 2000

/* Adam's gradient factor for gradients scaled by S whose squared norm is
 * norm_sq: clipping (cf_clip_scale's rule, on the unscaled norm) over S. */
static float unscale(float norm_sq, float S, float clip)
{
    const float norm = sqrtf(norm_sq) / S;
    const float c = clip > 0.0f ? fminf(1.0f, clip / (norm + 1e-6f)) : 1.0f;
    return c / S;
}

/* After a step of an fp16 run: an overflow halves S and starts the count of
 * clean steps again; 2,000 clean steps in a row double it. */
static void update_loss_scale(cf_model *m, bool skipped)
{
    if (skipped) {
        m->skipped_updates++;
        m->loss_scale = fmaxf(1.0f, m->loss_scale / 2.0f);
        m->loss_scale_clean = 0;
        cf_log(NULL, CF_LOG_WARN, "step %llu: fp16 gradient overflow, step skipped, loss scale "
               "now %g", (unsigned long long)m->step, (double)m->loss_scale);
        return;
    }
    if (++m->loss_scale_clean >= LOSS_SCALE_GROWTH_STEPS) {
        if (m->loss_scale <= 0x1p119f) m->loss_scale *= 2.0f;
        m->loss_scale_clean = 0;
    }
}

static clformer_status session_train_step_passes(clformer_session *s, const clformer_batch *b,
                                                 float lr, clformer_step_stats *stats)
{
    if (!(lr >= 0.0f) || !isfinite(lr))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "learning rate must be >= 0, got %g", lr);
    size_t count;
    clformer_step_stats timing = {0};
    cf_model *m = s->model;
    const bool scaled = s->precision == CLFORMER_FP16;
    if (scaled && m->loss_scale == 0.0f) m->loss_scale = LOSS_SCALE_INITIAL;
    const float S = scaled ? m->loss_scale : 1.0f;
    CF_TRY(cf_batch_forward_backward(s, b, &count, &timing, S));
    const cf_optim_settings *o = &m->optim;
    float metrics[2];
    bool skip = false;
    if (!scaled) {
        CF_TRY(cf_clip_scale(s->ctx, cf_view_at(s->metrics, 2), cf_view_at(s->metrics, 1),
                             o->clip));
    } else {
        /* the norm decides before the update: read it now (the ranks' norm
         * is global, so they all decide alike) */
        CF_TRY(cf_download(s->ctx, s->metrics, 0, metrics, 2));
        skip = !isfinite(metrics[1]);
        if (!skip) CF_TRY(cf_fill(s->ctx, s->metrics, 2, 1, unscale(metrics[1], S, o->clip)));
    }
    const uint64_t t = m->step + 1, t_adam = t - m->skipped_updates; /* Adam's count */
    const cf_adam_params hp = {lr, o->beta1, o->beta2, o->eps, o->weight_decay, o->adamw,
                               (float)(1.0 - pow(o->beta1, (double)t_adam)),
                               (float)(1.0 - pow(o->beta2, (double)t_adam))};
    if (!skip) {
        cf_model_params_written(m);
        CF_TRY(cf_adam_update(s->ctx, cf_view_at(m->params, 0), cf_view_at(m->grads, 0),
                              cf_view_at(m->adam_m, 0), cf_view_at(m->adam_v, 0),
                              m->layout.total, m->layout.decay_end, cf_view_at(s->metrics, 2),
                              &hp));
    }
    if (!scaled) CF_TRY(cf_download(s->ctx, s->metrics, 0, metrics, 2));
    double sum;
    CF_TRY(cf_batch_loss_sum(m, metrics[0], &sum));
    m->step = t;
    if (scaled) update_loss_scale(m, skip);
    if (stats) {
        *stats = timing;
        stats->loss = sum / (double)count;
        stats->grad_norm = skip ? NAN : sqrt((double)metrics[1]) / (double)S;
        stats->tokens = count;
        stats->step = t;
        stats->loss_scale = S;
        stats->skipped = skip;
    }
    if (skip) return CLFORMER_OK;
    if (!isfinite(sum) || !isfinite(metrics[1]))
        return cf_fail(CLFORMER_ERR_DIVERGED,
                       "training diverged at step %llu: loss %g, gradient norm %g; lower the "
                       "learning rate or enable clipping (--clip)",
                       (unsigned long long)t, sum / (double)count, sqrt((double)metrics[1]));
    return CLFORMER_OK;
}

clformer_status clformer_session_train_step(clformer_session *s, const clformer_batch *b, float lr,
                                            clformer_step_stats *stats)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved, session_train_step_passes(s, b, lr, stats));
}
