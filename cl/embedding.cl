/*
 * Token embedding plus positions, with dropout, and its backward.
 *
 * Forward: one work item per (t, c) loops over the batch, so a position
 * value (sinusoidal or learned) is computed once per column and shared by
 * the B rows that use it. Dropout element i is the flat index (b*T+t)*C+c.
 *
 * Sinusoidal positions in fp32 must match a double reference within 2e-5
 * at positions in the hundreds. sin(t * w) loses accuracy through its
 * argument, not through sin: rounding t*w to a float costs half an ulp of
 * the argument (7.6e-6 at t = 255), and an error in w (a float exp() may be
 * 3 ulp off) is multiplied by t. So w = beta^i (beta = 10000^(-2/C), from
 * the host in double as two floats) and t*w are carried as unevaluated sums
 * of two floats (hi + lo, ~48 bits, exact products by fma), and
 * sin(hi + lo) = sin(hi) + cos(hi) lo (lo^2 < 1e-10 is dropped), with the
 * built-in sin/cos, accurate to 4 ulp for any float argument.
 *
 * Backward (deterministic, no atomics): the host sorts token positions by id
 * (cf_embedding_index_build); one work item per (unique id, column) sums its
 * positions in increasing order. Position gradients sum over b in order.
 * Token ids are assumed valid (the host checks them before upload).
 */
#include "common.h"

/* a * b for two-float numbers (x = hi, y = lo); relative error ~2^-46. */
inline float2 ff_mul(float2 a, float2 b)
{
    const float p = a.x * b.x;
    const float e = fma(a.x, b.y, fma(a.y, b.x, fma(a.x, b.x, -p)));
    const float hi = p + e;
    return (float2)(hi, e - (hi - p));
}

/* P[t, c] of the sinusoidal table: c = 2i takes sin(t * beta^i), c = 2i+1
 * takes cos of the same argument. */
inline float sinusoid(int t, int c, float2 beta)
{
    float2 w = (float2)(1.0f, 0.0f), base = beta;
    for (int k = c >> 1; k; k >>= 1) { /* w = beta^(c/2) by binary powering */
        if (k & 1) w = ff_mul(w, base);
        base = ff_mul(base, base);
    }
    const float tf = (float)t;
    const float hi = tf * w.x;
    const float lo = fma(tf, w.x, -hi) + tf * w.y;
    const float s = sin(hi), co = cos(hi);
    return (c & 1) ? co - s * lo : s + co * lo;
}

/* Writes out[b,t,c] for every b, given the position value pe = P[t,c]. */
inline void embed_column(global float *out, ulong out_off, global const int *tokens,
                         ulong tok_off, global const float *table, ulong table_off, int B, int T,
                         int C, int t, int c, float scale, float pe, float p, ulong seed,
                         uint step, uint site)
{
    for (int b = 0; b < B; b++) {
        const ulong row = (ulong)b * T + t, i = row * C + c;
        const int id = tokens[tok_off + row];
        const float v = table[table_off + (ulong)id * C + c] * scale + pe;
        out[out_off + i] = v * dropout_scale(p, seed, step, site, i);
    }
}

/* Global (C, T). beta = 10000^(-2/C) as hi + lo. Row t holds position
 * pos0 + t (pos0 > 0 when decoding one position at a time). */
kernel void embedding_forward_sinusoidal(global float *out, ulong out_off,
                                         global const int *tokens, ulong tok_off,
                                         global const float *table, ulong table_off, int B,
                                         int T, int C, int pos0, float scale, float beta_hi,
                                         float beta_lo, float p, ulong seed, uint step, uint site)
{
    const int c = get_global_id(0), t = get_global_id(1);
    if (c >= C || t >= T) return;
    const float pe = sinusoid(pos0 + t, c, (float2)(beta_hi, beta_lo));
    embed_column(out, out_off, tokens, tok_off, table, table_off, B, T, C, t, c, scale, pe, p,
                 seed, step, site);
}

/* Global (C, T). pos: the learned table, position q at pos_off + q*C; row t
 * holds position pos0 + t. */
kernel void embedding_forward_learned(global float *out, ulong out_off, global const int *tokens,
                                      ulong tok_off, global const float *table, ulong table_off,
                                      global const float *pos, ulong pos_off, int B, int T,
                                      int C, int pos0, float scale, float p, ulong seed,
                                      uint step, uint site)
{
    const int c = get_global_id(0), t = get_global_id(1);
    if (c >= C || t >= T) return;
    const float pe = pos[pos_off + (ulong)(pos0 + t) * C + c];
    embed_column(out, out_off, tokens, tok_off, table, table_off, B, T, C, t, c, scale, pe, p,
                 seed, step, site);
}

/* Global (C, n_unique): dtable[unique[u], c] += scale * sum of g over the
 * positions of unique[u], in the index's (increasing) order. */
kernel void embedding_backward_table(global float *dtable, ulong dtable_off,
                                     global const float *dout, ulong dout_off,
                                     global const int *unique, ulong unique_off,
                                     global const int *starts, ulong starts_off,
                                     global const int *positions, ulong positions_off,
                                     int n_unique, int C, float scale, float p, ulong seed,
                                     uint step, uint site)
{
    const int c = get_global_id(0), u = get_global_id(1);
    if (c >= C || u >= n_unique) return;
    const int begin = starts[starts_off + u], end = starts[starts_off + u + 1];
    float acc = 0.0f;
    for (int j = begin; j < end; j++) {
        const ulong i = (ulong)positions[positions_off + j] * C + c;
        acc += dout[dout_off + i] * dropout_scale(p, seed, step, site, i);
    }
    const ulong d = dtable_off + (ulong)unique[unique_off + u] * C + c;
    dtable[d] += scale * acc;
}

/* Global (C, T): dpos[t, c] += sum over b (in order) of g[b, t, c]. */
kernel void embedding_backward_pos(global float *dpos, ulong dpos_off, global const float *dout,
                                   ulong dout_off, int B, int T, int C, float p, ulong seed,
                                   uint step, uint site)
{
    const int c = get_global_id(0), t = get_global_id(1);
    if (c >= C || t >= T) return;
    float acc = 0.0f;
    for (int b = 0; b < B; b++) {
        const ulong i = ((ulong)b * T + t) * C + c;
        acc += dout[dout_off + i] * dropout_scale(p, seed, step, site, i);
    }
    dpos[dpos_off + (ulong)t * C + c] += acc;
}
