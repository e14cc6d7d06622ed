/*
 * Bias + activation (ReLU, exact-erf GELU) + dropout, fused, for the
 * feed-forward block (runtime/ops_activation.c), and the bias add of
 * linear layers (runtime/ops_linear.c).
 *
 * The dropout mask is on the activation output: element (r, c) keeps with
 * dropout_scale(p, seed, step, site, r*C + c), recomputed in backward.
 * bias_act_* give each work item four consecutive elements of the flat
 * (N, C) tensor, whose dropout bits come from one Philox block
 * (dropout_scale4); bias_add is element-wise with work item (column, row).
 * dbias is a separate deterministic column sum of dinp.
 */
#include "common.h"

#define ACT_RELU 0
#define ACT_GELU 1

inline float act_value(float x, int act)
{
    if (act == ACT_GELU) return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F));
    return x < 0.0f ? 0.0f : x; /* NaN passes through, as in PyTorch */
}

/* GELU' = Phi(x) + x phi(x); ReLU'(0) = 0, as PyTorch. */
inline float act_grad(float x, int act)
{
    if (act == ACT_GELU)
        return 0.5f * (1.0f + erf(x * M_SQRT1_2_F)) +
               x * exp(-0.5f * x * x) * (0.5f * M_2_SQRTPI_F * M_SQRT1_2_F);
    return x > 0.0f ? 1.0f : 0.0f;
}

/* out[r, c] = dropout(act(inp[r, c] + bias[c])). */
kernel void bias_act_forward(global float *out, ulong out_off, global const float *inp,
                             ulong inp_off, global const float *bias, ulong bias_off, int N,
                             int C, int act, float p, ulong seed, uint step, uint site)
{
    /* work item q: flat elements 4q .. 4q+3, one Philox block for their mask */
    const ulong q = get_global_id(0), i0 = 4 * q, n = (ulong)N * C;
    if (i0 >= n) return;
    const float4 m4 = dropout_scale4(p, seed, step, site, q);
    const float m[4] = {m4.s0, m4.s1, m4.s2, m4.s3};
    for (int k = 0; k < 4 && i0 + k < n; k++) {
        const ulong i = i0 + k;
        const int c = (int)(i - (i / C) * C); /* not %: see attention.cl on Oclgrind */
        out[out_off + i] = act_value(inp[inp_off + i] + bias[bias_off + c], act) * m[k];
    }
}

/* dinp[r, c] = dropout_mask(dout)[r, c] * act'(inp[r, c] + bias[c]). dinp
 * may alias dout: each element is read, then written, by the same work item. */
kernel void bias_act_backward(global float *dinp, ulong dinp_off, global const float *dout,
                              ulong dout_off, global const float *inp, ulong inp_off,
                              global const float *bias, ulong bias_off, int N, int C, int act,
                              float p, ulong seed, uint step, uint site)
{
    const ulong q = get_global_id(0), i0 = 4 * q, n = (ulong)N * C;
    if (i0 >= n) return;
    const float4 m4 = dropout_scale4(p, seed, step, site, q);
    const float m[4] = {m4.s0, m4.s1, m4.s2, m4.s3};
    for (int k = 0; k < 4 && i0 + k < n; k++) {
        const ulong i = i0 + k;
        const int c = (int)(i - (i / C) * C);
        dinp[dinp_off + i] = dout[dout_off + i] * m[k] * act_grad(inp[inp_off + i] + bias[bias_off + c], act);
    }
}

/* out[r, c] += bias[c]: a linear layer's bias, after its GEMM (beta = 0). */
kernel void bias_add(global float *out, ulong out_off, global const float *bias, ulong bias_off,
                     int N, int C)
{
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= C || r >= N) return;
    out[out_off + (ulong)r * C + c] += bias[bias_off + c];
}
