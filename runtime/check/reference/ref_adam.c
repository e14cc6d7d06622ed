/* Adam and AdamW in double, written from PyTorch's documented algorithm
 * (torch.optim.Adam / AdamW) and clip_grad_norm_. */
#include "ref_adam.h"

#include <math.h>

void ref_adam_bias_corrections(ref_adam_params *hp, int t)
{
    hp->bias_correction1 = 1.0 - pow(hp->beta1, t);
    hp->bias_correction2 = 1.0 - pow(hp->beta2, t);
}

double ref_clip_scale(double norm_sq, double max_norm)
{
    if (max_norm <= 0.0) return 1.0;
    const double coef = max_norm / (sqrt(norm_sq) + 1e-6);
    return coef > 1.0 ? 1.0 : coef; /* NaN stays NaN, like torch.clamp */
}

void ref_adam_update(double *params, const double *grads, double *m, double *v, size_t n,
                     size_t decay_end, double grad_scale, const ref_adam_params *hp)
{
    const double wd = hp->weight_decay;
    for (size_t i = 0; i < n; i++) {
        const bool decay = i < decay_end && wd != 0.0;
        double p = params[i], g = grads[i] * grad_scale;
        if (decay && !hp->decoupled) g += wd * p;
        m[i] = hp->beta1 * m[i] + (1.0 - hp->beta1) * g;
        v[i] = hp->beta2 * v[i] + (1.0 - hp->beta2) * g * g;
        if (decay && hp->decoupled) p *= 1.0 - hp->lr * wd;
        const double m_hat = m[i] / hp->bias_correction1, v_hat = v[i] / hp->bias_correction2;
        params[i] = p - hp->lr * m_hat / (sqrt(v_hat) + hp->eps);
    }
}
