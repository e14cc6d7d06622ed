/*
 * The learning-rate schedules (clformer_learning_rate*): constant, the
 * paper's noam, nanoGPT's cosine and fairseq's inverse square root.
 */
#include "clformer.h"

#include <math.h>

#define M_PI_VALUE 3.14159265358979323846

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
