/*
 * Token embedding plus positions, with dropout, and its backward.
 *
 * Forward: one work item per (t, four columns 4k..4k+3) loops over the
 * batch, so a position value (sinusoidal or learned) is computed once per
 * column and shared by the B rows that use it. Dropout element i is the flat
 * index (b*T+t)*C+c; with C a multiple of 4 the four columns of a row are
 * one Philox block (dropout_scale4), else each takes its own (dropout_scale).
 * The backward kernels take four columns per work item the same way.
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
static inline float2 ff_mul(float2 a, float2 b)
{
    const float p = a.x * b.x;
    const float e = fma(a.x, b.y, fma(a.y, b.x, fma(a.x, b.x, -p)));
    const float hi = p + e;
    return (float2)(hi, e - (hi - p));
}

/* P[t, c] of the sinusoidal table: c = 2i takes sin(t * beta^i), c = 2i+1
 * takes cos of the same argument. */
static inline float sinusoid(int t, int c, float2 beta)
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

/* The dropout multipliers of flat elements i0 .. i0+n-1 (n <= 4) of a row of
 * C columns, i0 = row*C + a multiple of 4: one Philox block when C is a
 * multiple of 4 (then i0 is too), one per element otherwise.
 *
 * A work item's four columns live in private arrays of 4 (m, pe, acc),
 * indexed only by loops of exactly 4 iterations (the columns past n
 * skipped), unrolled, and filled by helpers that are always inlined: GPU
 * compilers keep such arrays in registers only where every index is a
 * constant (a loop bound of n kept them in NVPTX local memory). */
static inline __attribute__((always_inline)) void drop4(float *m, int n, int C, ulong i0, float p,
                                                        ulong seed, uint step, uint site)
{
    if ((C & 3) == 0) {
        const float4 m4 = dropout_scale4(p, seed, step, site, i0 >> 2);
        m[0] = m4.s0, m[1] = m4.s1, m[2] = m4.s2, m[3] = m4.s3;
        return;
    }
#pragma unroll
    for (int j = 0; j < 4; j++) m[j] = j < n ? dropout_scale(p, seed, step, site, i0 + j) : 0.0f;
}

/* Writes out[b,t,c0+j] for every b, given the position values pe[j] = P[t,c0+j], j < n. */
static inline __attribute__((always_inline)) void
embed_columns(global float *out, ulong out_off, global const int *tokens, ulong tok_off,
              global const float *table, ulong table_off, int B, int T, int C, int t, int c0,
              int n, float scale, const float *pe, float p, ulong seed, uint step, uint site)
{
    for (int b = 0; b < B; b++) {
        const ulong row = (ulong)b * T + t, i0 = row * C + c0;
        const int id = tokens[tok_off + row];
        float m[4];
        drop4(m, n, C, i0, p, seed, step, site);
        for (int j = 0; j < 4; j++) if (j < n) {
            const float v = table[table_off + (ulong)id * C + c0 + j] * scale + pe[j];
            out[out_off + i0 + j] = v * m[j];
        }
    }
}

/* The first of work item k's four columns, and how many of them exist. */
static inline int first_column(int k, int C, int *n)
{
    const int c0 = 4 * k;
    *n = C - c0 < 4 ? C - c0 : 4;
    return c0;
}

/* Global (ceil(C/4), T). beta = 10000^(-2/C) as hi + lo. Row t holds position
 * pos0 + t (pos0 > 0 when decoding one position at a time). */
kernel void embedding_forward_sinusoidal(global float *out, ulong out_off,
                                         global const int *tokens, ulong tok_off,
                                         global const float *table, ulong table_off, int B,
                                         int T, int C, int pos0, float scale, float beta_hi,
                                         float beta_lo, float p, ulong seed, uint step, uint site)
{
    int n;
    const int c0 = first_column(get_global_id(0), C, &n), t = get_global_id(1);
    if (n <= 0 || t >= T) return;
    float pe[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        if (j < n) pe[j] = sinusoid(pos0 + t, c0 + j, (float2)(beta_hi, beta_lo));
    embed_columns(out, out_off, tokens, tok_off, table, table_off, B, T, C, t, c0, n, scale, pe,
                  p, seed, step, site);
}

/* Global (ceil(C/4), T). pos: the learned table, position q at pos_off + q*C; row t
 * holds position pos0 + t. */
kernel void embedding_forward_learned(global float *out, ulong out_off, global const int *tokens,
                                      ulong tok_off, global const float *table, ulong table_off,
                                      global const float *pos, ulong pos_off, int B, int T,
                                      int C, int pos0, float scale, float p, ulong seed,
                                      uint step, uint site)
{
    int n;
    const int c0 = first_column(get_global_id(0), C, &n), t = get_global_id(1);
    if (n <= 0 || t >= T) return;
    float pe[4];
    for (int j = 0; j < 4; j++) if (j < n) pe[j] = pos[pos_off + (ulong)(pos0 + t) * C + c0 + j];
    embed_columns(out, out_off, tokens, tok_off, table, table_off, B, T, C, t, c0, n, scale, pe,
                  p, seed, step, site);
}

/* Global (ceil(C/4), T): no positions (models that turn queries and keys by
 * their positions instead, cl/rope.cl). */
kernel void embedding_forward_tokens(global float *out, ulong out_off, global const int *tokens,
                                     ulong tok_off, global const float *table, ulong table_off,
                                     int B, int T, int C, float scale, float p, ulong seed,
                                     uint step, uint site)
{
    int n;
    const int c0 = first_column(get_global_id(0), C, &n), t = get_global_id(1);
    if (n <= 0 || t >= T) return;
    const float pe[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    embed_columns(out, out_off, tokens, tok_off, table, table_off, B, T, C, t, c0, n, scale, pe,
                  p, seed, step, site);
}

/* Global (ceil(C/4), n_unique): dtable[unique[u], c] += scale * sum of g
 * over the positions of unique[u], in the index's (increasing) order. */
kernel void embedding_backward_table(global float *dtable, ulong dtable_off,
                                     global const float *dout, ulong dout_off,
                                     global const int *unique, ulong unique_off,
                                     global const int *starts, ulong starts_off,
                                     global const int *positions, ulong positions_off,
                                     int n_unique, int C, float scale, float p, ulong seed,
                                     uint step, uint site)
{
    int n;
    const int c0 = first_column(get_global_id(0), C, &n), u = get_global_id(1);
    if (n <= 0 || u >= n_unique) return;
    const int begin = starts[starts_off + u], end = starts[starts_off + u + 1];
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, m[4];
    for (int j = begin; j < end; j++) {
        const ulong i0 = (ulong)positions[positions_off + j] * C + c0;
        drop4(m, n, C, i0, p, seed, step, site);
        for (int k = 0; k < 4; k++) if (k < n) acc[k] += dout[dout_off + i0 + k] * m[k];
    }
    const ulong d = dtable_off + (ulong)unique[unique_off + u] * C + c0;
    for (int k = 0; k < 4; k++) if (k < n) dtable[d + k] += scale * acc[k];
}

/* Global (ceil(C/4), T): dpos[t, c] += sum over b (in order) of g[b, t, c]. */
kernel void embedding_backward_pos(global float *dpos, ulong dpos_off, global const float *dout,
                                   ulong dout_off, int B, int T, int C, float p, ulong seed,
                                   uint step, uint site)
{
    int n;
    const int c0 = first_column(get_global_id(0), C, &n), t = get_global_id(1);
    if (n <= 0 || t >= T) return;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}, m[4];
    for (int b = 0; b < B; b++) {
        const ulong i0 = ((ulong)b * T + t) * C + c0;
        drop4(m, n, C, i0, p, seed, step, site);
        for (int k = 0; k < 4; k++) if (k < n) acc[k] += dout[dout_off + i0 + k] * m[k];
    }
    for (int k = 0; k < 4; k++) if (k < n) dpos[dpos_off + (ulong)t * C + c0 + k] += acc[k];
}
