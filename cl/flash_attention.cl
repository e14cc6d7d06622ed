/*
 * Fused ("flash") attention: the scores and probabilities of a query row
 * live only in registers, never in global memory (runtime/ops/ops_attention.c
 * launches these; the unfused path is cl/attention.cl between GEMMs).
 *
 * Forward, one work item per query row i of a head (b, h), over the visible
 * keys j (causal and padding masks), s_ij = scale q_i . k_j:
 *   pass 1: the row maximum m_i and sum l_i = sum_j exp(s_ij - m_i), online
 *           (the sum is rescaled when the maximum grows)
 *   pass 2: P_ij = exp(s_ij - m_i) / l_i, o_i = sum_j P_ij d_ij v_j
 * and the row statistics (m_i, 1 / l_i) saved for the backward instead of P.
 * Pass 2 recomputes the scores so that P is rounded as attention_softmax
 * rounds it: the outputs then follow the unfused path (and PyTorch's
 * softmax-then-product) to within a few ulps, which 10 Adam steps of the
 * parity tests need; a one-pass online output was 2-4x further off.
 * Backward, with D_i = dO_i . O_i (= sum_j dP_ij P_ij, dropout included):
 *   per query row:  dQ_i = scale sum_j P_ij (d_ij dO_i . v_j - D_i) k_j
 *   per key row:    dV_j = sum_i P_ij d_ij dO_i
 *                   dK_j = scale sum_i P_ij (d_ij dO_i . v_j - D_i) q_i
 * with P_ij recomputed from the saved statistics and the dropout multiplier
 * d_ij redrawn from the same Philox counter as attention_softmax's: element
 * (row * Tk + j) of the site, row = (b*H + h)*Tq + i. A row whose keys are
 * all masked gets output 0 and statistics (-inf, 0), never read back (no
 * key is visible to it).
 *
 * Layout as in ops.h: q, out, dq (B*H, Tq, dh); k, v, dk, dv (B*H_kv, Tk_cap,
 * dh) with rows < Tk used, H_kv = H / group (grouped-query attention: query
 * head h of a batch reads key/value head h / group, and a key row's dK and
 * dV sum over the group's query heads, one after another); stats (B*H*Tq,
 * 2); dsum (B*H*Tq).
 *
 * Speed on CPUs: keys go in blocks of four, so that one Philox call draws
 * the four dropout multipliers of a block (the query-row kernels start the
 * blocks where the Philox blocks of their row start), four dot products
 * share each load of the query row, and the inner loops run on float8.
 * Lanes of a block outside [0, jend) or on padding are masked; they read a
 * clamped (valid) key row and weigh 0. The *_simple kernels at the end do
 * the same one key at a time, for simulators.
 */
#include "common.h"

/* The inputs every kernel here takes after its outputs (ops_attention.c's
 * FUSED_ARGS): rows is the number of work items. */
#define INPUTS                                                                                 \
    global const float *q, ulong q_off, global const float *k, ulong k_off,                    \
        global const float *v, ulong v_off, global const int *keys, ulong keys_off,            \
        int key_ld, int use_keys, int rows, int H, int group, int Tq, int Tk, int Tk_cap,       \
        int dh, int q_pos0, int causal, float scale, float drop_p, ulong seed, uint step,       \
        uint site

/* The locals of a query-row work item: row = (b*H + h)*Tq + t, the keys it
 * may see (j < jend, kt[j] != 0 when use_keys), its query row and its
 * key/value head's key and value rows. */
#define QUERY_ROW                                                                              \
    const int row = get_global_id(0);                                                          \
    if (row >= rows) return;                                                                   \
    const int bh = row / Tq, t = row - bh * Tq, b = bh / H;                                    \
    const int jend = causal_end(causal, Tk, q_pos0 + t);                                       \
    global const int *kt = keys + keys_off + (ulong)b * key_ld;                                \
    global const float *qi = q + q_off + (ulong)row * dh;                                      \
    const ulong kv_ = (ulong)kv_head(bh, H, group) * Tk_cap * dh;                              \
    global const float *kb = k + k_off + kv_;                                                  \
    global const float *vb = v + v_off + kv_


static inline float hsum8(float8 s)
{
    const float4 a = s.lo + s.hi;
    return (a.x + a.z) + (a.y + a.w);
}

/* (a . r0, a . r1, a . r2, a . r3) over n floats. */
static inline float4 dots4(global const float *a, global const float *r0, global const float *r1,
                    global const float *r2, global const float *r3, int n)
{
    float8 s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        const float8 x = vload8(0, a + d);
        s0 += x * vload8(0, r0 + d);
        s1 += x * vload8(0, r1 + d);
        s2 += x * vload8(0, r2 + d);
        s3 += x * vload8(0, r3 + d);
    }
    float4 s = (float4)(hsum8(s0), hsum8(s1), hsum8(s2), hsum8(s3));
    for (; d < n; d++) s += a[d] * (float4)(r0[d], r1[d], r2[d], r3[d]);
    return s;
}

/* y += w.x r0 + w.y r1 + w.z r2 + w.w r3 over n floats. */
static inline void axpy4(global float *y, float4 w, global const float *r0, global const float *r1,
                  global const float *r2, global const float *r3, int n)
{
    int d = 0;
    for (; d + 8 <= n; d += 8)
        vstore8(vload8(0, y + d) + w.x * vload8(0, r0 + d) + w.y * vload8(0, r1 + d) +
                    w.z * vload8(0, r2 + d) + w.w * vload8(0, r3 + d),
                0, y + d);
    for (; d < n; d++) y[d] += w.x * r0[d] + w.y * r1[d] + w.z * r2[d] + w.w * r3[d];
}

/* y_l += w_l x for the four rows y0..y3, one after the other (rows may be
 * the same: a masked lane's clamped row, with weight 0). */
static inline void outer4(global float *y0, global float *y1, global float *y2, global float *y3,
                   float4 w, global const float *x, int n)
{
    int d = 0;
    for (; d + 8 <= n; d += 8) {
        const float8 xv = vload8(0, x + d);
        vstore8(vload8(0, y0 + d) + w.x * xv, 0, y0 + d);
        vstore8(vload8(0, y1 + d) + w.y * xv, 0, y1 + d);
        vstore8(vload8(0, y2 + d) + w.z * xv, 0, y2 + d);
        vstore8(vload8(0, y3 + d) + w.w * xv, 0, y3 + d);
    }
    for (; d < n; d++) {
        const float xd = x[d];
        y0[d] += w.x * xd;
        y1[d] += w.y * xd;
        y2[d] += w.z * xd;
        y3[d] += w.w * xd;
    }
}

/* The dropout multipliers of elements i0 .. i0+3 of a site (any i0): the
 * same values as dropout_scale of each, from the one or two Philox blocks
 * they lie in. Constant lanes for each offset: shuffle2 by a computed mask
 * compiled for NVPTX to a private array in local memory. */
static inline float4 dropout_scale_run4(float p, ulong seed, uint step, uint site, ulong i0)
{
    if (p <= 0.0f) return (float4)(1.0f);
    const uint r = (uint)(i0 & 3);
    const float4 a = dropout_scale4(p, seed, step, site, i0 >> 2);
    if (r == 0) return a;
    const float4 b = dropout_scale4(p, seed, step, site, (i0 >> 2) + 1);
    if (r == 1) return (float4)(a.yzw, b.x);
    if (r == 2) return (float4)(a.zw, b.xy);
    return (float4)(a.w, b.xyz);
}

/* One block of four keys j .. j+3 for a query row: which are visible (key
 * in [0, jend) and not padding) and their clamped row numbers. */
typedef struct {
    int4 visible; /* -1 visible, 0 masked */
    int4 key;     /* clamped into [lo, hi] */
} key_block;

static inline key_block block_of(global const int *kt, int use_keys, int j, int lo, int jend, int hi)
{
    key_block k;
    const int4 key = (int4)(j) + (int4)(0, 1, 2, 3);
    k.key = clamp(key, (int4)(lo), (int4)(hi));
    k.visible = (key >= (int4)(lo)) & (key < (int4)(jend));
    if (use_keys)
        k.visible &= (int4)(kt[k.key.x], kt[k.key.y], kt[k.key.z], kt[k.key.w]) != (int4)(0);
    return k;
}

static inline bool none_visible(int4 v) { return !any(v); }

#define ROWS4(base, k, dh)                                                                     \
    (base) + (ulong)(k).x * (dh), (base) + (ulong)(k).y * (dh), (base) + (ulong)(k).z * (dh), \
        (base) + (ulong)(k).w * (dh)

/* The first key a query at position qpos may not see (causal), or Tk. */
static inline int causal_end(int causal, int Tk, int qpos) { return causal ? min(Tk, qpos + 1) : Tk; }

kernel void flash_attention_forward(global float *out, ulong out_off, global float *stats,
                                    ulong stats_off, INPUTS)
{
    QUERY_ROW;
    global float *o = out + out_off + (ulong)row * dh;
    const ulong first = (ulong)row * Tk; /* the dropout element of key 0 */
    const int j0 = -(int)(first & 3);    /* blocks start on Philox blocks */

    /* pass 1: maximum and sum, online per block */
    float m = -INFINITY, l = 0.0f;
    for (int j = j0; j < jend; j += 4) {
        const key_block kk = block_of(kt, use_keys, j, 0, jend, jend - 1);
        if (none_visible(kk.visible)) continue;
        const float4 s = select((float4)(-INFINITY),
                                dots4(qi, ROWS4(kb, kk.key, dh), dh) * scale, kk.visible);
        const float bm = fmax(fmax(s.x, s.y), fmax(s.z, s.w));
        if (bm > m) {
            l *= exp(m - bm);
            m = bm;
        }
        const float4 e = exp(s - m);
        l += (e.x + e.y) + (e.z + e.w);
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    /* pass 2: the output from the final probabilities, p = exp(s - m) / l as
     * attention_softmax computes them (so the rounding matches the unfused
     * path's and PyTorch's softmax-then-product closely) */
    for (int d = 0; d < dh; d++) o[d] = 0.0f;
    for (int j = j0; j < jend; j += 4) {
        const key_block kk = block_of(kt, use_keys, j, 0, jend, jend - 1);
        if (none_visible(kk.visible)) continue;
        const float4 s = dots4(qi, ROWS4(kb, kk.key, dh), dh) * scale;
        const float4 p = select((float4)(0.0f), exp(s - m) * inv, kk.visible);
        const float4 w =
            p * dropout_scale4(drop_p, seed, step, site, (first + (ulong)(long)j) >> 2);
        axpy4(o, w, ROWS4(vb, kk.key, dh), dh);
    }
    stats[stats_off + 2 * (ulong)row] = m;
    stats[stats_off + 2 * (ulong)row + 1] = inv;
}

/* dq (overwritten) per query row, and dsum[row] = D_row for the key pass. */
kernel void flash_attention_backward_dq(global float *dq, ulong dq_off, global float *dsum,
                                        ulong dsum_off, global const float *dout, ulong dout_off,
                                        global const float *out, ulong out_off,
                                        global const float *stats, ulong stats_off, INPUTS)
{
    QUERY_ROW;
    global const float *doi = dout + dout_off + (ulong)row * dh;
    global float *g = dq + dq_off + (ulong)row * dh;
    const ulong first = (ulong)row * Tk;
    const int j0 = -(int)(first & 3);

    const float D = dots4(doi, ROWS4(out + out_off, (int4)(row), dh), dh).x;
    dsum[dsum_off + row] = D;
    const float M = stats[stats_off + 2 * (ulong)row], inv = stats[stats_off + 2 * (ulong)row + 1];
    for (int d = 0; d < dh; d++) g[d] = 0.0f;
    for (int j = j0; j < jend; j += 4) {
        const key_block kk = block_of(kt, use_keys, j, 0, jend, jend - 1);
        if (none_visible(kk.visible)) continue;
        const float4 s = dots4(qi, ROWS4(kb, kk.key, dh), dh) * scale;
        const float4 p = select((float4)(0.0f), exp(s - M) * inv, kk.visible);
        const float4 r = dropout_scale4(drop_p, seed, step, site, (first + (ulong)(long)j) >> 2);
        const float4 dp = r * dots4(doi, ROWS4(vb, kk.key, dh), dh);
        axpy4(g, p * (dp - D), ROWS4(kb, kk.key, dh), dh);
    }
    for (int d = 0; d < dh; d++) g[d] *= scale;
}

/* dk and dv (rows < Tk overwritten) for a block of four key rows 4w .. 4w+3
 * of a key/value head, over the queries of its group's heads; dsum from the
 * dq pass. */
kernel void flash_attention_backward_dkv(global float *dk, ulong dk_off, global float *dv,
                                         ulong dv_off, global const float *dsum, ulong dsum_off,
                                         global const float *dout, ulong dout_off,
                                         global const float *stats, ulong stats_off,
                                         INPUTS)
{
    const int gid = get_global_id(0);
    if (gid >= rows) return; /* rows: blocks of four keys */
    const int per_head = (Tk + 3) / 4, kvh = gid / per_head, Hkv = H / group, b = kvh / Hkv;
    const int j = 4 * (gid - kvh * per_head);
    const key_block kk = block_of(keys + keys_off + (ulong)b * key_ld, use_keys, j, 0, Tk, Tk - 1);
    const ulong head = (ulong)kvh * Tk_cap * dh;
    global const float *kb = k + k_off + head, *vb = v + v_off + head;
    global float *gk = dk + dk_off + head, *gv = dv + dv_off + head;
    const int n = min(4, Tk - j); /* rows this block owns */
    for (int r = 0; r < n; r++)
        for (int d = 0; d < dh; d++) gk[(ulong)(j + r) * dh + d] = gv[(ulong)(j + r) * dh + d] = 0.0f;
    if (none_visible(kk.visible)) return; /* padding: seen by no query */

    /* causal: query i sees key j when j <= q_pos0 + i; lane 0 is seen first */
    const int bh0 = b * H + (kvh - b * Hkv) * group; /* the group's first query head */
    for (int g = 0; g < group; g++)
    for (int i = causal ? max(0, j - q_pos0) : 0; i < Tq; i++) {
        const int row = (bh0 + g) * Tq + i;
        const int4 vis =
            causal ? kk.visible & ((int4)(j) + (int4)(0, 1, 2, 3) <= (int4)(q_pos0 + i))
                   : kk.visible;
        global const float *qi = q + q_off + (ulong)row * dh;
        global const float *doi = dout + dout_off + (ulong)row * dh;
        const float4 s = dots4(qi, ROWS4(kb, kk.key, dh), dh) * scale;
        const float M = stats[stats_off + 2 * (ulong)row], inv = stats[stats_off + 2 * (ulong)row + 1];
        const float4 p = select((float4)(0.0f), exp(s - M) * inv, vis);
        const float4 r = dropout_scale_run4(drop_p, seed, step, site, (ulong)row * Tk + j);
        const float4 dp = r * dots4(doi, ROWS4(vb, kk.key, dh), dh);
        const float4 ds = p * (dp - dsum[dsum_off + row]);
        outer4(ROWS4(gv, kk.key, dh), p * r, doi, dh);
        outer4(ROWS4(gk, kk.key, dh), ds, qi, dh);
    }
    for (int r = 0; r < n; r++)
        for (int d = 0; d < dh; d++) gk[(ulong)(j + r) * dh + d] *= scale;
}

/* ------------------------------------------------------------------------- */
/* The same kernels one key at a time, scalar, for simulators: Oclgrind       */
/* 21.10's uninitialised-value checker crashes (SIGSEGV in                    */
/* Uninitialized::instructionExecuted) on the vector code above.             */
/* runtime/ops/ops_attention.c picks these on a simulator; dk/dv here take    */
/* one work item per key row.                                                 */
/* ------------------------------------------------------------------------- */

static inline float dot_row(global const float *a, global const float *b, int n)
{
    float s = 0.0f;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

kernel void flash_attention_forward_simple(global float *out, ulong out_off,
                                           global float *stats, ulong stats_off, INPUTS)
{
    QUERY_ROW;
    global float *o = out + out_off + (ulong)row * dh;

    /* pass 1: the row's maximum and sum (online: the sum is rescaled when
     * the maximum grows) */
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < jend; j++) {
        if (use_keys && kt[j] == 0) continue;
        const float s = dot_row(qi, kb + (ulong)j * dh, dh) * scale;
        if (s > m) {
            l *= exp(m - s);
            m = s;
        }
        l += exp(s - m);
    }
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    /* pass 2: the output from the final probabilities, p = exp(s - m) / l as
     * attention_softmax computes them (so the rounding matches the unfused
     * path's and PyTorch's softmax-then-product closely) */
    for (int d = 0; d < dh; d++) o[d] = 0.0f;
    for (int j = 0; j < jend; j++) {
        if (use_keys && kt[j] == 0) continue;
        const float p = exp(dot_row(qi, kb + (ulong)j * dh, dh) * scale - m) * inv;
        const float w = p * dropout_scale(drop_p, seed, step, site, (ulong)row * Tk + j);
        if (w != 0.0f) {
            global const float *vj = vb + (ulong)j * dh;
            for (int d = 0; d < dh; d++) o[d] += w * vj[d];
        }
    }
    stats[stats_off + 2 * (ulong)row] = m;
    stats[stats_off + 2 * (ulong)row + 1] = inv;
}

/* dq (overwritten) per query row, and dsum[row] = D_row for the key pass. */
kernel void flash_attention_backward_dq_simple(global float *dq, ulong dq_off,
                                               global float *dsum, ulong dsum_off,
                                               global const float *dout, ulong dout_off,
                                               global const float *out, ulong out_off,
                                               global const float *stats, ulong stats_off, INPUTS)
{
    QUERY_ROW;
    global const float *doi = dout + dout_off + (ulong)row * dh;
    global float *g = dq + dq_off + (ulong)row * dh;

    const float D = dot_row(doi, out + out_off + (ulong)row * dh, dh);
    dsum[dsum_off + row] = D;
    const float M = stats[stats_off + 2 * (ulong)row], inv = stats[stats_off + 2 * (ulong)row + 1];
    for (int d = 0; d < dh; d++) g[d] = 0.0f;
    for (int j = 0; j < jend; j++) {
        if (use_keys && kt[j] == 0) continue;
        global const float *kj = kb + (ulong)j * dh;
        const float p = exp(dot_row(qi, kj, dh) * scale - M) * inv;
        const float r = dropout_scale(drop_p, seed, step, site, (ulong)row * Tk + j);
        const float dp = r != 0.0f ? r * dot_row(doi, vb + (ulong)j * dh, dh) : 0.0f;
        const float ds = p * (dp - D);
        for (int d = 0; d < dh; d++) g[d] += ds * kj[d];
    }
    for (int d = 0; d < dh; d++) g[d] *= scale;
}

/* dk and dv (rows < Tk overwritten) per key row of a key/value head, over
 * its group's queries; dsum from the dq pass. */
kernel void flash_attention_backward_dkv_simple(global float *dk, ulong dk_off,
                                                global float *dv, ulong dv_off,
                                                global const float *dsum, ulong dsum_off,
                                                global const float *dout, ulong dout_off,
                                                global const float *stats, ulong stats_off,
                                                INPUTS)
{
    const int gid = get_global_id(0);
    if (gid >= rows) return; /* rows: key rows */
    const int kvh = gid / Tk, j = gid - kvh * Tk, Hkv = H / group, b = kvh / Hkv;
    const ulong kr = ((ulong)kvh * Tk_cap + j) * dh;
    global const float *kj = k + k_off + kr, *vj = v + v_off + kr;
    global float *gk = dk + dk_off + kr, *gv = dv + dv_off + kr;
    for (int d = 0; d < dh; d++) gk[d] = gv[d] = 0.0f;
    if (use_keys && keys[keys_off + (ulong)b * key_ld + j] == 0) return; /* seen by no query */

    /* causal: query i sees key j when j <= q_pos0 + i; the group's query
     * heads one after another */
    const int bh0 = b * H + (kvh - b * Hkv) * group;
    for (int g = 0; g < group; g++)
    for (int i = causal ? max(0, j - q_pos0) : 0; i < Tq; i++) {
        const int row = (bh0 + g) * Tq + i;
        global const float *qi = q + q_off + (ulong)row * dh;
        global const float *doi = dout + dout_off + (ulong)row * dh;
        const float p = exp(dot_row(qi, kj, dh) * scale - stats[stats_off + 2 * (ulong)row]) *
                        stats[stats_off + 2 * (ulong)row + 1];
        const float r = dropout_scale(drop_p, seed, step, site, (ulong)row * Tk + j);
        const float dp = r != 0.0f ? r * dot_row(doi, vj, dh) : 0.0f;
        const float ds = p * (dp - dsum[dsum_off + row]), pd = p * r;
        for (int d = 0; d < dh; d++) {
            gv[d] += pd * doi[d];
            gk[d] += ds * qi[d];
        }
    }
    for (int d = 0; d < dh; d++) gk[d] *= scale;
}
