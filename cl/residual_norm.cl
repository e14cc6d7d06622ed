/*
 * A sublayer's end, fused (runtime/ops/ops_residual_norm.c launches these):
 * the output projection's bias, the residual dropout and the residual sum,
 *     y = res + dropout(x + bias),
 * and, in the second kernel, the LayerNorm that reads y next (pre-norm: the
 * next sublayer's input norm; post-norm: this sublayer's own):
 *     out = (y - mean) * rstd * weight + lnbias, mean and rstd saved,
 * or in the third the RMSNorm (Llama-style blocks): out = y * rstd * weight.
 * One launch where the unfused path takes three (bias add, residual,
 * LayerNorm) and one pass over y less: small models are launch-bound.
 *
 * The dropout mask is the residual kernel's (cl/dropout.cl): element i of
 * the flat (N, C) tensor keeps with dropout_scale(p, seed, step, site, i).
 * `precision` (0 fp32, 1 bf16, 2 fp16) rounds y and out to the storage
 * format as they are stored (round_storage_bits, common.h), and the
 * LayerNorm reads y as stored. Its statistics are layernorm_forward's
 * (cl/layernorm.cl): the row's first element as the shift, float4 chunks,
 * the same order of sums.
 */
#include "common.h"

#define RN_VEC 4

/* The 4 lanes summed in a fixed order (layernorm.cl's sum4: Oclgrind
 * 21.10's uninitialised checker crashes on the shuffles of a register sum). */
static inline float rn_sum4(float4 v)
{
    float t[RN_VEC];
    vstore4(v, 0, t);
    return (t[0] + t[2]) + (t[1] + t[3]);
}

/* y[r, c] = res[r, c] + dropout(x[r, c] + bias[c]) over (N, C), DROP_BLOCK
 * elements a work item (dropout_scale_block). y may alias res or x: each
 * element is read, then written, by the same work item. has_bias 0: no
 * bias (bias unread). */
kernel void bias_residual_forward(global float *y, ulong y_off, global const float *res,
                                  ulong res_off, global const float *x, ulong x_off,
                                  global const float *bias, ulong bias_off, int has_bias, int N,
                                  int C, float p, ulong seed, uint step, uint site, int precision)
{
    const ulong g = get_global_id(0), i0 = DROP_BLOCK * g, n = (ulong)N * C;
    if (i0 >= n) return;
    float m[DROP_BLOCK];
    dropout_scale_block(p, seed, step, site, g, m);
    const int count = n - i0 < DROP_BLOCK ? (int)(n - i0) : DROP_BLOCK;
    int c = (int)(i0 - (i0 / C) * C); /* not %: see attention.cl on Oclgrind */
    FOR_BLOCK_ELEMENT(k, count) {
        const ulong i = i0 + k;
        const float f = x[x_off + i] + (has_bias ? bias[bias_off + c] : 0.0f);
        y[y_off + i] = store_round(res[res_off + i] + f * m[k], precision);
        if (++c == C) c = 0;
    }
}

/* Element c of a row of y (flat: the row's first element's index). */
static inline float rn_y(global const float *r, global const float *x, global const float *b,
                  int has_bias, int c, ulong flat, float p, ulong seed, uint step, uint site,
                  int precision)
{
    const float f = x[c] + (has_bias ? b[c] : 0.0f);
    return store_round(r[c] + f * dropout_scale(p, seed, step, site, flat + c), precision);
}

/* Elements 4j .. 4j+3 of a row of y with their multipliers m. */
static inline float4 rn_y4_by(global const float *r, global const float *x,
                              global const float *b, int has_bias, int j, float4 m, int precision)
{
    const float4 f = vload4(j, x) + (has_bias ? vload4(j, b) : (float4)(0.0f));
    return store_round4(vload4(j, r) + f * m, precision);
}

/* Elements 4j .. 4j+3 of a row of y (C a multiple of 4, so that the row's
 * dropout counters start on a Philox block: one draw for the four). */
static inline float4 rn_y4(global const float *r, global const float *x, global const float *b,
                           int has_bias, int j, ulong flat, float p, ulong seed, uint step,
                           uint site, int precision)
{
    return rn_y4_by(r, x, b, has_bias, j, dropout_scale4(p, seed, step, site, flat / RN_VEC + j),
                    precision);
}

/* The float4 chunks of a row of y in order, j = 0, 1, ..., each handed to
 * `use` as v (the macro's body: a statement using j and v). CPU layouts,
 * with dropout and C a multiple of 32: the multipliers of 32 elements at a
 * time (dropout_scale32: eight Philox blocks as 8-wide vectors, where one
 * block a chunk ran as scalar code; the draws took three quarters of
 * gpt-char's residual kernels at dropout 0.2 on PoCL); the same values.
 * The LayerNorm kernel's only: in the RMSNorm kernel, Intel's compiler then
 * summed the squares otherwise, and its norm lost rmsnorm_forward's bits
 * (residual_norm_forward_rmsnorm_as_unfused). */
#if GPU_LAYOUTS
#define RN_CPU_RUNS(C, p) false
#else
#define RN_CPU_RUNS(C, p) ((p) > 0.0f && (C) % 32 == 0)
#endif
#define FOR_Y4_IN_RUNS(j, v, use)                                                                  for (int g_ = 0; g_ < C / 32; g_++) {                                                              float m_[32];                                                                                  dropout_scale32(p, seed, step, site, flat / 32 + g_, m_);                                      for (int k_ = 0; k_ < 8; k_++) {                                                                   const int j = 8 * g_ + k_;                                                                     const float4 v = rn_y4_by(r, xr, b, has_bias, j, vload4(k_, m_), precision);                    use;                                                                                       }                                                                                          }

/* y as bias_residual_forward, then out = LayerNorm(y), a row per work-group
 * of REDUCE_WG items on GPUs, per work item on CPU devices (ROW_ITEMS). y and
 * out may each alias res or x (every item reads the row's first element
 * before any item writes, and reads its own elements before it writes
 * them); y and out must not alias each other, mean or rstd. */
kernel void bias_residual_layernorm_forward(
    global float *y, ulong y_off, global float *out, ulong out_off, global float *mean,
    ulong mean_off, global float *rstd, ulong rstd_off, global const float *res, ulong res_off,
    global const float *x, ulong x_off, global const float *bias, ulong bias_off, int has_bias,
    global const float *weight, ulong weight_off, global const float *lnbias, ulong lnbias_off,
    int rows, int C, float eps, float p, ulong seed, uint step, uint site, int precision)
{
    local float scratch[REDUCE_WG];
    const int lid = ROW_LID();
    /* float4 chunks when a row's dropout counters start on a multiple of 4
     * (dropout_scale4 gives elements 4q .. 4q+3); otherwise all scalar */
    const int chunks = C % RN_VEC == 0 ? C / RN_VEC : 0, tail0 = chunks * RN_VEC;
    const ulong row = ROW_OF_ITEM(), flat = row * C;
    if (ROW_PAST(row, rows)) return;
    global const float *r = res + res_off + flat, *xr = x + x_off + flat;
    global const float *b = bias + bias_off;
    global float *yr = y + y_off + flat, *o = out + out_off + flat;
    global const float *w = weight + weight_off, *lb = lnbias + lnbias_off;
    /* every item's shift is the same value, whoever stores element 0 */
    const float shift = rn_y(r, xr, b, has_bias, 0, flat, p, seed, step, site, precision);
    ROW_BARRIER(); /* y may be res: element 0 read before it is written */

    float4 s4 = (float4)(0.0f);
    if (RN_CPU_RUNS(C, p)) {
        FOR_Y4_IN_RUNS(j, v, {
            vstore4(v, j, yr);
            s4 += v - shift;
        });
    } else {
        for (int j = lid; j < chunks; j += ROW_ITEMS) {
            const float4 v = rn_y4(r, xr, b, has_bias, j, flat, p, seed, step, site, precision);
            vstore4(v, j, yr);
            s4 += v - shift;
        }
    }
    float s = rn_sum4(s4);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS) {
        const float v = rn_y(r, xr, b, has_bias, c, flat, p, seed, step, site, precision);
        yr[c] = v;
        s += v - shift;
    }
    const float dmean = row_sum(s, scratch) / C; /* mean - shift */

    /* from here each item reads back only the elements it stored */
    float4 q4 = (float4)(0.0f);
    for (int j = lid; j < chunks; j += ROW_ITEMS) {
        const float4 d = (vload4(j, yr) - shift) - dmean;
        q4 += d * d;
    }
    float q = rn_sum4(q4);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS) {
        const float d = (yr[c] - shift) - dmean;
        q += d * d;
    }
    const float var = row_sum(q, scratch) / C; /* biased, as PyTorch */
    const float rs = 1.0f / sqrt(var + eps);

    /* out may be res or x: every item's reads of them ended before row_sum */
    for (int j = lid; j < chunks; j += ROW_ITEMS)
        vstore4(store_round4(((vload4(j, yr) - shift) - dmean) * rs * vload4(j, w) + vload4(j, lb),
                             precision),
                j, o);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS)
        o[c] = store_round(((yr[c] - shift) - dmean) * rs * w[c] + lb[c], precision);
    if (lid == 0) {
        mean[mean_off + row] = shift + dmean;
        rstd[rstd_off + row] = rs;
    }
}

/* y as bias_residual_forward, then out = RMSNorm(y) as rmsnorm_forward
 * (cl/rmsnorm.cl) computes it on y as stored: the same sum of squares in
 * the same order (element c by the row's item c % ROW_ITEMS), rstd saved,
 * and out rounded to the storage format as cf_rmsnorm_forward's rounding
 * launch does; one launch where those were two (three in 16-bit storage).
 * y is made in float4 chunks (one dropout draw for four elements) and read
 * back after a barrier for the norm. y and out may each alias res or x (all
 * their reads come before the barrier), not each other. */
kernel void bias_residual_rmsnorm_forward(
    global float *y, ulong y_off, global float *out, ulong out_off, global float *rstd,
    ulong rstd_off, global const float *res, ulong res_off, global const float *x, ulong x_off,
    global const float *bias, ulong bias_off, int has_bias, global const float *weight,
    ulong weight_off, int rows, int C, float eps, float p, ulong seed, uint step, uint site,
    int precision)
{
    local float scratch[REDUCE_WG];
    const int lid = ROW_LID();
    const int chunks = C % RN_VEC == 0 ? C / RN_VEC : 0, tail0 = chunks * RN_VEC;
    const ulong row = ROW_OF_ITEM(), flat = row * C;
    if (ROW_PAST(row, rows)) return;
    global const float *r = res + res_off + flat, *xr = x + x_off + flat;
    global const float *b = bias + bias_off, *w = weight + weight_off;
    global float *yr = y + y_off + flat, *o = out + out_off + flat;

    for (int j = lid; j < chunks; j += ROW_ITEMS)
        vstore4(rn_y4(r, xr, b, has_bias, j, flat, p, seed, step, site, precision), j, yr);
    for (int c = tail0 + lid; c < C; c += ROW_ITEMS)
        yr[c] = rn_y(r, xr, b, has_bias, c, flat, p, seed, step, site, precision);
    ROW_BARRIER(); /* the norm reads elements other items stored */

    float s = 0.0f;
    for (int c = lid; c < C; c += ROW_ITEMS) s += yr[c] * yr[c];
    const float rs = 1.0f / sqrt(row_sum(s, scratch) / C + eps);
    for (int c = lid; c < C; c += ROW_ITEMS) o[c] = store_round(yr[c] * rs * w[c], precision);
    if (lid == 0) rstd[rstd_off + row] = rs;
}
