/*
 * Training and evaluation steps: host-side validation of a batch, its one
 * upload, and the enqueued forward / backward / clip / Adam sequence that
 * ends in one small read-back (loss sum and gradient norm).
 */
#include "buffer.h"
#include "clock.h"
#include "program.h"
#include "session.h"
#include "reduce.h"

#include <math.h>

#define M_PI_VALUE 3.14159265358979323846
#include <stdlib.h>
#include <string.h>

float clformer_learning_rate(clformer_lr_schedule schedule, float base, int d_model,
                             uint64_t step, uint64_t warmup)
{
    if (schedule == CLFORMER_LR_CONSTANT) return base;
    if (schedule == CLFORMER_LR_COSINE)
        return clformer_learning_rate_cosine(base, base / 10.0f, step, warmup, 10 * warmup);
    if (schedule == CLFORMER_LR_INVERSE_SQRT)
        return clformer_learning_rate_inverse_sqrt(base, 0.0f, step, warmup);
    double s = step ? (double)step : 1.0, w = warmup ? (double)warmup : 1.0;
    double f = fmin(1.0 / sqrt(s), s * pow(w, -1.5));
    return (float)(base / sqrt((double)d_model) * f);
}

float clformer_learning_rate_cosine(float base, float min_lr, uint64_t step, uint64_t warmup,
                                    uint64_t decay_steps)
{
    /* iteration it = step - 1 counts from 0, as GPT training scripts count */
    const double it = step ? (double)(step - 1) : 0.0, w = (double)warmup;
    if (it < w) return (float)(base * (it + 1.0) / (w + 1.0));
    if (it > (double)decay_steps || decay_steps <= warmup) return min_lr;
    const double ratio = (it - w) / ((double)decay_steps - w);
    return (float)(min_lr + 0.5 * (1.0 + cos(M_PI_VALUE * ratio)) * (base - min_lr));
}

/* fairseq's InverseSquareRootSchedule: it sets the rate after each update
 * from the number of updates done, so step s (from 1) runs at u = s - 1. */
float clformer_learning_rate_inverse_sqrt(float lr, float init_lr, uint64_t step, uint64_t warmup)
{
    const double u = step ? (double)(step - 1) : 0.0, w = (double)warmup;
    if (warmup == 0) return lr; /* no warm-up: no schedule */
    if (u < w) return (float)((double)init_lr + u * ((double)lr - (double)init_lr) / w);
    return (float)((double)lr * sqrt(w / u)); /* u >= w >= 1 here */
}

static clformer_status check_ids(const int32_t *ids, size_t rows, size_t cols, int vocab,
                                 const char *side)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            int32_t id = ids[r * cols + c];
            if (id < 0 || id >= vocab)
                return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                               "token id %d at %s sentence %zu position %zu is out of range: "
                               "the %s vocabulary has %d tokens (ids 0..%d)",
                               (int)id, side, r, c, side, vocab, vocab - 1);
        }
    return CLFORMER_OK;
}

static clformer_status check_batch(const cf_model *m, const clformer_batch *b)
{
    /* a decoder-only model reads tgt alone: windows of text, src_len 0 */
    const bool lm = clformer_config_decoder_only(&m->cfg);
    if (lm && b && b->src_len != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "a decoder-only model has no source: the batch's src_len must be 0, "
                       "got %zu (put the text windows in tgt)", b->src_len);
    if (!b || (!lm && !b->src) || !b->tgt || b->batch == 0 || (!lm && b->src_len == 0))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "empty batch: no sentences or no tokens");
    if (b->tgt_len < 2)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       lm ? "window length %zu is too short: a window holds its inputs and one "
                            "more token (the last label)"
                          : "target length %zu is too short: targets hold <sos> ... <eos>",
                       b->tgt_len);
    if (lm && b->tgt_len > (size_t)m->cfg.max_len + 1)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "window length %zu exceeds the model's context of %d tokens plus the "
                       "last label", b->tgt_len, m->cfg.max_len);
    if (lm) return check_ids(b->tgt, b->batch, b->tgt_len, m->cfg.tgt_vocab, "target");
    if (b->src_len > (size_t)m->cfg.max_len || b->tgt_len > (size_t)m->cfg.max_len)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "batch lengths (source %zu, target %zu) exceed the model's max_len %d",
                       b->src_len, b->tgt_len, m->cfg.max_len);
    CF_TRY(check_ids(b->src, b->batch, b->src_len, m->cfg.src_vocab, "source"));
    return check_ids(b->tgt, b->batch, b->tgt_len, m->cfg.tgt_vocab, "target");
}

/* Builds the integer region of the arena on the host and uploads it once. */
static clformer_status upload_ints(cf_session *s, const clformer_batch *b, size_t *label_count)
{
    cf_acts *a = &s->acts;
    const size_t B = b->batch, S = b->src_len, T = b->tgt_len - 1;
    int32_t *h = calloc(a->ints, sizeof *h);
    if (!h) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (S) memcpy(h + a->src.off, b->src, B * S * sizeof *h);
    const int ignore = cf_ignore_label(&s->model->cfg);
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
    CF_TRY(check_batch(s->model, b));
    CF_TRY(cf_acts_prepare(s, b->batch, b->src_len, b->tgt_len - 1, training));
    CF_TRY(upload_ints(s, b, label_count));
    if (*label_count == 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the batch has no target tokens to predict (every label is <pad>)");
    return CLFORMER_OK;
}

/* Gradients of the mean loss over the labels of all ranks: each rank scales
 * its per-token gradients by 1 / the global count, and the ranks' gradients
 * are summed (collective.c) before the norm that clipping uses. `count`
 * becomes the global count. */
static clformer_status forward_backward(cf_session *s, const clformer_batch *b, size_t *count,
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

/* The loss sum of all ranks (each rank's forward wrote its own). */
static clformer_status loss_sum(cf_model *m, float local, double *sum)
{
    *sum = (double)local;
    return cf_collective_sum(m, sum, 1);
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
    CF_TRY(forward_backward(s, b, &count, &timing, S));
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
    if (!skip)
        CF_TRY(cf_adam_update(s->ctx, cf_view_at(m->params, 0), cf_view_at(m->grads, 0),
                              cf_view_at(m->adam_m, 0), cf_view_at(m->adam_v, 0),
                              m->layout.total, m->layout.decay_end, cf_view_at(s->metrics, 2),
                              &hp));
    if (!scaled) CF_TRY(cf_download(s->ctx, s->metrics, 0, metrics, 2));
    double sum;
    CF_TRY(loss_sum(m, metrics[0], &sum));
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

static clformer_status session_gradients_passes(clformer_session *s, const clformer_batch *b,
                                                double *loss)
{
    size_t count;
    CF_TRY(forward_backward(s, b, &count, NULL, 1.0f));
    float local;
    double sum;
    CF_TRY(cf_download(s->ctx, s->metrics, 0, &local, 1));
    CF_TRY(loss_sum(s->model, local, &sum));
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

clformer_status clformer_session_train_step(clformer_session *s, const clformer_batch *b, float lr,
                                            clformer_step_stats *stats)
{
    clformer_precision saved;
    CF_TRY(cf_session_pass_begin(s, &saved));
    return cf_session_pass_end(s, saved, session_train_step_passes(s, b, lr, stats));
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
