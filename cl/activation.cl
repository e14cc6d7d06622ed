/*
 * Bias + activation (ReLU, exact-erf GELU, tanh GELU) + dropout, fused, for the
 * feed-forward block (runtime/ops/ops_activation.c), and the bias add of
 * linear layers (runtime/ops/ops_linear.c).
 *
 * The dropout mask is on the activation output: element (r, c) keeps with
 * dropout_scale(p, seed, step, site, r*C + c), recomputed in backward.
 * bias_act_* give each work item DROP_BLOCK consecutive elements of the
 * flat (N, C) tensor (common.h: 32 on CPU layouts, whose dropout bits come
 * from eight Philox blocks computed together; 4 with GPU layouts); the
 * column is found with one division per item, not one per element.
 * bias_add is element-wise with work item (column, row).
 * dbias is a separate deterministic column sum of dinp.
 */
#include "common.h"

/* ACT_RELU, ACT_GELU and ACT_GELU_TANH come from the build options
 * (cf_program_options): clformer_activation's values, the one activation enum. */

/* GPT-2's GELU: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
 * computed as x s with s = 1 / (1 + exp(-2u)), the logistic function of 2u
 * (0.5 (1 + tanh(u)) exactly): one exp and one division, where PoCL's tanh
 * took 2.5x the time of the whole kernel (gpt-mini's 768 x 512 hidden layer:
 * forward 1.19 ms -> 0.45, backward 3.0 -> 1.5, the fastest of 100 runs).
 * exp(-2u) overflowing to infinity gives s = 0, the limit. The derivative:
 * 1 - tanh(u)^2 = 4 s (1 - s), so GELU' = s + 2 x s (1 - s) u'(x). */
#define GELU_TANH_K 0.7978845608028654f
#define GELU_TANH_C 0.044715f

static inline float gelu_tanh_s(float x)
{
    return 1.0f / (1.0f + exp(-2.0f * GELU_TANH_K * (x + GELU_TANH_C * x * x * x)));
}

static inline float16 gelu_tanh_s16(float16 x)
{
    return 1.0f / (1.0f + exp(-2.0f * GELU_TANH_K * (x + GELU_TANH_C * x * x * x)));
}

static inline float act_value(float x, int act)
{
    if (act == ACT_GELU) return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F));
    if (act == ACT_GELU_TANH) return x * gelu_tanh_s(x);
    return x < 0.0f ? 0.0f : x; /* NaN passes through, as in PyTorch */
}

/* GELU' = Phi(x) + x phi(x); tanh form: s + 2 x s (1 - s) u'(x) (above);
 * ReLU'(0) = 0, as PyTorch. */
static inline float act_grad(float x, int act)
{
    if (act == ACT_GELU_TANH) {
        const float s = gelu_tanh_s(x);
        return s + 2.0f * x * s * (1.0f - s) * GELU_TANH_K * (1.0f + 3.0f * GELU_TANH_C * x * x);
    }
    if (act == ACT_GELU)
        return 0.5f * (1.0f + erf(x * M_SQRT1_2_F)) +
               x * exp(-0.5f * x * x) * (0.5f * M_2_SQRTPI_F * M_SQRT1_2_F);
    return x > 0.0f ? 1.0f : 0.0f;
}

/* The same, sixteen lanes at a time (the fast paths below, CPU layouts
 * only: a work item's DROP_BLOCK = 32 elements as two float16 runs). Runs
 * of 8 had halved the time of runs of 4 on PoCL (gpt-mini's GELU, forward
 * 2.1 -> 1.1 ms a step, backward 2.4 -> 1.4); runs of 16 took it from 0.59
 * to 0.40 ms forward and 0.75 to 0.50 backward on a 2-vCPU AMD EPYC with
 * AVX-512, and Intel's CPU runtime there from 0.50 to 0.24 and 0.54 to
 * 0.29. Always inlined, as act_grad16: clang 14 for AMDGPU called the
 * copies of the unrolled fast path's body instead (with a 16 KiB stack of
 * scratch memory). */
static inline __attribute__((always_inline)) float16 act_value16(float16 x, int act)
{
    if (act == ACT_GELU_TANH) return x * gelu_tanh_s16(x);
    if (act == ACT_GELU) return 0.5f * x * (1.0f + erf(x * M_SQRT1_2_F));
    return select(x, (float16)(0.0f), isless(x, (float16)(0.0f))); /* NaN passes */
}

static inline __attribute__((always_inline)) float16 act_grad16(float16 x, int act)
{
    if (act == ACT_GELU_TANH) {
        const float16 s = gelu_tanh_s16(x);
        return s + 2.0f * x * s * (1.0f - s) * GELU_TANH_K * (1.0f + 3.0f * GELU_TANH_C * x * x);
    }
    if (act == ACT_GELU)
        return 0.5f * (1.0f + erf(x * M_SQRT1_2_F)) +
               x * exp(-0.5f * x * x) * (0.5f * M_2_SQRTPI_F * M_SQRT1_2_F);
    return select((float16)(0.0f), (float16)(1.0f), isgreater(x, (float16)(0.0f)));
}

/* Without dropout (p <= 0: inference, or training with p = 0) every
 * multiplier is 1, and x * 1 is x: the fast paths below then neither fill
 * nor apply them, with the same bits (gpt-mini at p = 0 on PoCL: the
 * activation family 2.8 -> 2.2 ms a step). */

/* Whether a work item's 32 elements lie in one row (always when C is a
 * multiple of 32, as d_ff is in practice): then the bias is contiguous too
 * and the item works in float16 runs, which PoCL compiles to SIMD; its
 * element loop with a column that wraps stays scalar there. Not with GPU
 * layouts: a GPU's lanes are its work items, and float4 activations took
 * AMDGPU 79 registers where the element loop takes 30-34. */
static inline bool block_in_row(int count, int c, int C)
{
    return !GPU_LAYOUTS && count == DROP_BLOCK && c <= C - DROP_BLOCK;
}

/* out[r, c] = dropout(act(inp[r, c] + bias[c])), rounded to `precision`
 * (store_round) as every kernel here stores. */
kernel void bias_act_forward(global float *out, ulong out_off, global const float *inp,
                             ulong inp_off, global const float *bias, ulong bias_off, int N,
                             int C, int act, float p, ulong seed, uint step, uint site,
                             int precision)
{
    const ulong g = get_global_id(0), i0 = DROP_BLOCK * g, n = (ulong)N * C;
    if (i0 >= n) return;
    const int count = n - i0 < DROP_BLOCK ? (int)(n - i0) : DROP_BLOCK;
    int c = (int)(i0 - (i0 / C) * C); /* not %: see attention.cl on Oclgrind */
    if (block_in_row(count, c, C) && p <= 0.0f) { /* no dropout (below) */
        global const float *x = inp + inp_off + i0, *b = bias + bias_off + c;
        global float *y = out + out_off + i0;
        for (int k = 0; k < DROP_BLOCK / 16; k++)
            vstore16(store_round16(act_value16(vload16(k, x) + vload16(k, b), act), precision), k,
                     y);
        return;
    }
    float m[DROP_BLOCK];
    dropout_scale_block(p, seed, step, site, g, m);
    if (block_in_row(count, c, C)) {
        global const float *x = inp + inp_off + i0, *b = bias + bias_off + c;
        global float *y = out + out_off + i0;
        for (int k = 0; k < DROP_BLOCK / 16; k++)
            vstore16(store_round16(act_value16(vload16(k, x) + vload16(k, b), act) *
                                       vload16(k, m),
                                   precision),
                     k, y);
        return;
    }
    FOR_BLOCK_ELEMENT(k, count) {
        const ulong i = i0 + k;
        out[out_off + i] =
            store_round(act_value(inp[inp_off + i] + bias[bias_off + c], act) * m[k], precision);
        if (++c == C) c = 0;
    }
}

/* dinp[r, c] = dropout_mask(dout)[r, c] * act'(inp[r, c] + bias[c]). dinp
 * may alias dout: each element is read, then written, by the same work item. */
kernel void bias_act_backward(global float *dinp, ulong dinp_off, global const float *dout,
                              ulong dout_off, global const float *inp, ulong inp_off,
                              global const float *bias, ulong bias_off, int N, int C, int act,
                              float p, ulong seed, uint step, uint site, int precision)
{
    const ulong g = get_global_id(0), i0 = DROP_BLOCK * g, n = (ulong)N * C;
    if (i0 >= n) return;
    const int count = n - i0 < DROP_BLOCK ? (int)(n - i0) : DROP_BLOCK;
    int c = (int)(i0 - (i0 / C) * C);
    if (block_in_row(count, c, C) && p <= 0.0f) { /* no dropout (below) */
        global const float *dy = dout + dout_off + i0, *x = inp + inp_off + i0;
        global const float *b = bias + bias_off + c;
        global float *dx = dinp + dinp_off + i0;
        for (int k = 0; k < DROP_BLOCK / 16; k++)
            vstore16(store_round16(vload16(k, dy) * act_grad16(vload16(k, x) + vload16(k, b), act),
                                   precision),
                     k, dx);
        return;
    }
    float m[DROP_BLOCK];
    dropout_scale_block(p, seed, step, site, g, m);
    if (block_in_row(count, c, C)) {
        global const float *dy = dout + dout_off + i0, *x = inp + inp_off + i0;
        global const float *b = bias + bias_off + c;
        global float *dx = dinp + dinp_off + i0;
        for (int k = 0; k < DROP_BLOCK / 16; k++)
            vstore16(store_round16(vload16(k, dy) * vload16(k, m) *
                                       act_grad16(vload16(k, x) + vload16(k, b), act),
                                   precision),
                     k, dx);
        return;
    }
    FOR_BLOCK_ELEMENT(k, count) {
        const ulong i = i0 + k;
        dinp[dinp_off + i] = store_round(
            dout[dout_off + i] * m[k] * act_grad(inp[inp_off + i] + bias[bias_off + c], act),
            precision);
        if (++c == C) c = 0;
    }
}

/* out[r, c] += bias[c]: a linear layer's bias, after its GEMM (beta = 0).
 * GPU layouts: work item (column, row). CPU layouts: ITEM_RUN consecutive
 * elements of the flat (N, C) tensor an item (the host's 1-D grid,
 * ops_linear.c), a float16 run where they lie in one row at fp32: work item
 * (column, row) took Intel's CPU runtime 0.29 ms a launch for gpt-mini's
 * 768 x 384 (a work-group a row), PoCL 0.037. */
kernel void bias_add(global float *out, ulong out_off, global const float *bias, ulong bias_off,
                     int N, int C, int precision)
{
#if GPU_LAYOUTS
    const int c = get_global_id(0), r = get_global_id(1);
    if (c >= C || r >= N) return;
    const ulong i = out_off + (ulong)r * C + c;
    out[i] = store_round(out[i] + bias[bias_off + c], precision);
#else
    const ulong i0 = (ulong)ITEM_RUN * get_global_id(0), n = (ulong)N * C;
    if (i0 >= n) return;
    int c = (int)(i0 - (i0 / C) * C); /* not %: see attention.cl on Oclgrind */
    global float *y = out + out_off + i0;
    if (ITEM_RUN == 16 && precision == 0 && n - i0 >= 16 && c <= C - 16) {
        vstore16(vload16(0, y) + vload16(0, bias + bias_off + c), 0, y);
        return;
    }
    const int count = n - i0 < ITEM_RUN ? (int)(n - i0) : ITEM_RUN;
    for (int k = 0; k < count; k++) {
        y[k] = store_round(y[k] + bias[bias_off + c], precision);
        if (++c == C) c = 0;
    }
#endif
}
