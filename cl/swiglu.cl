/*
 * SiLU and SwiGLU, elementwise (runtime/ops/ops_swiglu.c launches these):
 *   silu(a) = a * sigmoid(a),  swiglu(gate, up) = silu(gate) * up,
 *   silu'(a) = sigmoid(a) * (1 + a * (1 - sigmoid(a))).
 * One work item per element; outputs may alias inputs (each item reads its
 * element before writing it). `accumulate`: gradients are added, not stored.
 * What they store is rounded to the pass's `precision` (store_round).
 */
#include "common.h"

/* 1 / (1 + e^-a): exp overflows to inf for a below about -88, giving 0. */
static inline float sigmoid_of(float a) { return 1.0f / (1.0f + exp(-a)); }

kernel void silu_forward(global float *out, ulong out_off, global const float *x, ulong x_off,
                         ulong n, int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const float a = x[x_off + i];
    out[out_off + i] = store_round(a * sigmoid_of(a), precision);
}

kernel void silu_backward(global float *dx, ulong dx_off, global const float *dout,
                          ulong dout_off, global const float *x, ulong x_off, ulong n,
                          int accumulate, int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const float a = x[x_off + i], s = sigmoid_of(a);
    const float v = dout[dout_off + i] * s * (1.0f + a * (1.0f - s));
    dx[dx_off + i] = store_round(accumulate ? dx[dx_off + i] + v : v, precision);
}

kernel void swiglu_forward(global float *out, ulong out_off, global const float *gate,
                           ulong gate_off, global const float *up, ulong up_off, ulong n,
                           int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const float a = gate[gate_off + i];
    out[out_off + i] = store_round(a * sigmoid_of(a) * up[up_off + i], precision);
}

kernel void swiglu_backward(global float *dgate, ulong dgate_off, global float *dup,
                            ulong dup_off, global const float *dout, ulong dout_off,
                            global const float *gate, ulong gate_off, global const float *up,
                            ulong up_off, ulong n, int accumulate, int precision)
{
    const ulong i = get_global_id(0);
    if (i >= n) return;
    const float a = gate[gate_off + i], u = up[up_off + i], d = dout[dout_off + i];
    const float s = sigmoid_of(a);
    const float vg = d * u * s * (1.0f + a * (1.0f - s)), vu = d * a * s;
    dgate[dgate_off + i] = store_round(accumulate ? dgate[dgate_off + i] + vg : vg, precision);
    dup[dup_off + i] = store_round(accumulate ? dup[dup_off + i] + vu : vu, precision);
}
