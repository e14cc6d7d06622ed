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
 *
 * With CPU layouts a work item updates ITEM_RUN consecutive elements (the
 * host launches n / ITEM_RUN items, ops_adam.c), as float16 vectors where
 * all of them lie before n and on one side of decay_end. An element an item,
 * PoCL ran the update as scalar code: gpt-mini's 810k parameters took 0.78
 * ms on a 2-vCPU AMD EPYC, 0.21 in runs of 16. Intel's CPU runtime, which
 * vectorises across items, went from 0.23 to 0.35 ms; it keeps the run
 * length of every other kernel (common.h): with runs of one everywhere, its
 * fills and this update gained what its column sums and LayerNorm lost.
 * GPU layouts: an element an item, a GPU's lanes being its work items.
 */

/* The update of element i: the same operations on one float (T float) or
 * sixteen (T float16, loaded with vload16 from element i). */
#define ADAM_STEP(T, LOAD, STORE, decay)                                                       \
    do {                                                                                       \
        T pi = LOAD(p + p_off + i), g = LOAD(grad + g_off + i);                                \
        if (has_scale) g *= scale[scale_off];                                                  \
        if ((decay) && !decoupled) g += weight_decay * pi;                                     \
        const T mi = beta1 * LOAD(m + m_off + i) + one_minus_beta1 * g;                        \
        const T vi = beta2 * LOAD(v + v_off + i) + one_minus_beta2 * g * g;                    \
        if ((decay) && decoupled) pi *= decay_factor;                                          \
        pi -= step_size * (mi / (sqrt(vi) / bc2_sqrt + eps));                                  \
        STORE(pi, p + p_off + i);                                                              \
        STORE(mi, m + m_off + i);                                                              \
        STORE(vi, v + v_off + i);                                                              \
    } while (0)
#define LOAD1(ptr) (*(ptr))
#define STORE1(x, ptr) (*(ptr) = (x))
#define LOAD16(ptr) vload16(0, ptr)
#define STORE16(x, ptr) vstore16(x, 0, ptr)

kernel void adam_update(global float *p, ulong p_off, global const float *grad, ulong g_off,
                        global float *m, ulong m_off, global float *v, ulong v_off, ulong n,
                        ulong decay_end, global const float *scale, ulong scale_off,
                        int has_scale, float beta1, float one_minus_beta1, float beta2,
                        float one_minus_beta2, float eps, float weight_decay, int decoupled,
                        float decay_factor, float step_size, float bc2_sqrt)
{
    const ulong i0 = (ulong)ITEM_RUN * get_global_id(0);
    if (i0 >= n) return;
#if ITEM_RUN == 16
    if (n - i0 >= 16 && (i0 + 16 <= decay_end || i0 >= decay_end)) {
        const ulong i = i0;
        ADAM_STEP(float16, LOAD16, STORE16, i < decay_end);
        return;
    }
#endif
    const ulong end = n - i0 < ITEM_RUN ? n : i0 + ITEM_RUN;
    for (ulong i = i0; i < end; i++) ADAM_STEP(float, LOAD1, STORE1, i < decay_end);
}
