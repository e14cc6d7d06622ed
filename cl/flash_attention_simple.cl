/*
 * The fused attention kernels of cl/flash_attention.cl (same arguments, same
 * math, same saved statistics and dropout counters), one key at a time and
 * scalar, for simulators: Oclgrind 21.10's uninitialised-value checker
 * crashes (SIGSEGV in Uninitialized::instructionExecuted) on the vector code
 * of the blocked kernels. runtime/ops/ops_attention.c picks these on a
 * simulator; the test suite checks both against the same reference.
 * Here dk/dv take one work item per key row.
 */
#include "common.h"

inline float dot_row(global const float *a, global const float *b, int n)
{
    float s = 0.0f;
    for (int d = 0; d < n; d++) s += a[d] * b[d];
    return s;
}

/* The first key a query at position qpos may not see (causal), or Tk. */
inline int causal_end(int causal, int Tk, int qpos) { return causal ? min(Tk, qpos + 1) : Tk; }

kernel void flash_attention_forward_simple(global float *out, ulong out_off, global float *stats,
                                    ulong stats_off, global const float *q, ulong q_off,
                                    global const float *k, ulong k_off, global const float *v,
                                    ulong v_off, global const int *keys, ulong keys_off,
                                    int key_ld, int use_keys, int rows, int H, int Tq, int Tk,
                                    int Tk_cap, int dh, int q_pos0, int causal, float scale,
                                    float drop_p, ulong seed, uint step, uint site)
{
    const int row = get_global_id(0);
    if (row >= rows) return;
    const int bh = row / Tq, t = row - bh * Tq, b = bh / H;
    const int jend = causal_end(causal, Tk, q_pos0 + t);
    global const int *kt = keys + keys_off + (ulong)b * key_ld;
    global const float *qi = q + q_off + (ulong)row * dh;
    global const float *kb = k + k_off + (ulong)bh * Tk_cap * dh;
    global const float *vb = v + v_off + (ulong)bh * Tk_cap * dh;
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
kernel void flash_attention_backward_dq_simple(global float *dq, ulong dq_off, global float *dsum,
                                        ulong dsum_off, global const float *dout, ulong dout_off,
                                        global const float *out, ulong out_off,
                                        global const float *stats, ulong stats_off,
                                        global const float *q, ulong q_off,
                                        global const float *k, ulong k_off,
                                        global const float *v, ulong v_off,
                                        global const int *keys, ulong keys_off, int key_ld,
                                        int use_keys, int rows, int H, int Tq, int Tk, int Tk_cap,
                                        int dh, int q_pos0, int causal, float scale, float drop_p,
                                        ulong seed, uint step, uint site)
{
    const int row = get_global_id(0);
    if (row >= rows) return;
    const int bh = row / Tq, t = row - bh * Tq, b = bh / H;
    const int jend = causal_end(causal, Tk, q_pos0 + t);
    global const int *kt = keys + keys_off + (ulong)b * key_ld;
    global const float *qi = q + q_off + (ulong)row * dh;
    global const float *doi = dout + dout_off + (ulong)row * dh;
    global const float *kb = k + k_off + (ulong)bh * Tk_cap * dh;
    global const float *vb = v + v_off + (ulong)bh * Tk_cap * dh;
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

/* dk and dv (rows < Tk overwritten) per key row; dsum from the dq pass. */
kernel void flash_attention_backward_dkv_simple(global float *dk, ulong dk_off, global float *dv,
                                         ulong dv_off, global const float *dsum, ulong dsum_off,
                                         global const float *dout, ulong dout_off,
                                         global const float *stats, ulong stats_off,
                                         global const float *q, ulong q_off,
                                         global const float *k, ulong k_off,
                                         global const float *v, ulong v_off,
                                         global const int *keys, ulong keys_off, int key_ld,
                                         int use_keys, int keyrows, int H, int Tq, int Tk,
                                         int Tk_cap, int dh, int q_pos0, int causal, float scale,
                                         float drop_p, ulong seed, uint step, uint site)
{
    const int gid = get_global_id(0);
    if (gid >= keyrows) return;
    const int bh = gid / Tk, j = gid - bh * Tk, b = bh / H;
    const ulong kr = ((ulong)bh * Tk_cap + j) * dh;
    global const float *kj = k + k_off + kr, *vj = v + v_off + kr;
    global float *gk = dk + dk_off + kr, *gv = dv + dv_off + kr;
    for (int d = 0; d < dh; d++) gk[d] = gv[d] = 0.0f;
    if (use_keys && keys[keys_off + (ulong)b * key_ld + j] == 0) return; /* seen by no query */

    /* causal: query i sees key j when j <= q_pos0 + i */
    for (int i = causal ? max(0, j - q_pos0) : 0; i < Tq; i++) {
        const int row = bh * Tq + i;
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
