/*
 * The optimizer: the gradient-clipping coefficient and one Adam/AdamW step
 * over the flat parameter buffer (parameters, gradients, m and v share one
 * layout, so one launch updates the whole model).
 *
 * The update follows PyTorch's torch.optim.Adam / AdamW (foreach=False)
 * operation by operation; scalars that PyTorch computes in Python double
 * (1 - beta, lr / bc1, sqrt(bc2), 1 - lr*wd) arrive precomputed by the host.
 */
#include "common.h"

/* scale[0] = min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6)), as
 * torch.nn.utils.clip_grad_norm_; 1 when max_norm <= 0 (no clipping). A NaN
 * norm gives NaN, as torch.clamp does, so the host sees it in the update. */
kernel void clip_scale(global float *scale, ulong scale_off, global const float *norm_sq,
                       ulong norm_off, float max_norm)
{
    if (get_global_id(0) != 0) return;
    float s = 1.0f;
    if (max_norm > 0.0f) {
        const float coef = max_norm / (sqrt(norm_sq[norm_off]) + 1e-6f);
        s = coef > 1.0f ? 1.0f : coef;
    }
    scale[scale_off] = s;
}

/*
 * Element i < n:
 *   g = grad * scale (+ wd * p for Adam-L2, i < decay_end)
 *   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
 *   p *= 1 - lr * wd                                   (AdamW, i < decay_end)
 *   p -= step_size * m / (sqrt(v) / bc2_sqrt + eps)    (step_size = lr / bc1)
 * has_scale == 0: the scale is 1 and `scale` is not read.
 */
kernel void adam_update(global float *p, ulong p_off, global const float *grad, ulong g_off,
                        global float *m, ulong m_off, global float *v, ulong v_off, ulong n,
                        ulong decay_end, global const float *scale, ulong scale_off,
                        int has_scale, float beta1, float one_minus_beta1, float beta2,
                        float one_minus_beta2, float eps, float weight_decay, int decoupled,
                        float decay_factor, float step_size, float bc2_sqrt)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const bool decay = i < decay_end;
    float pi = p[p_off + i];
    float g = grad[g_off + i];
    if (has_scale) g *= scale[scale_off];
    if (decay && !decoupled) g += weight_decay * pi;
    const float mi = beta1 * m[m_off + i] + one_minus_beta1 * g;
    const float vi = beta2 * v[v_off + i] + one_minus_beta2 * g * g;
    if (decay && decoupled) pi *= decay_factor;
    pi -= step_size * (mi / (sqrt(vi) / bc2_sqrt + eps));
    p[p_off + i] = pi;
    m[m_off + i] = mi;
    v[v_off + i] = vi;
}
