/* Double-precision reference of the optimizer ops (same contracts as
 * cf_clip_scale and cf_adam_update in runtime/ops/ops.h). */
#ifndef REF_ADAM_H
#define REF_ADAM_H

#include <stdbool.h>
#include <stddef.h>

/* cf_adam_params in double (the reference does not include OpenCL headers). */
typedef struct {
    double lr;
    double beta1, beta2, eps;
    double weight_decay;
    bool decoupled;          /* true: AdamW; false: Adam with L2 */
    double bias_correction1; /* 1 - beta1^t */
    double bias_correction2; /* 1 - beta2^t */
} ref_adam_params;

/* Bias corrections of step t (>= 1), as PyTorch computes them. */
void ref_adam_bias_corrections(ref_adam_params *hp, int t);

/* min(1, max_norm / (sqrt(norm_sq) + 1e-6)); 1 when max_norm <= 0. */
double ref_clip_scale(double norm_sq, double max_norm);

/* One step over n elements (PyTorch's Adam/AdamW); weight decay only for
 * i < decay_end. */
void ref_adam_update(double *params, const double *grads, double *m, double *v, size_t n,
                     size_t decay_end, double grad_scale, const ref_adam_params *hp);

#endif
