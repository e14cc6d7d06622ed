/*
 * Attention of a decoding step in one launch (runtime/ops/ops_attention.c
 * launches it on every device). A decoding step has
 * one query row a sequence and head, over the keys so far; the
 * materialised path (S = Q K^T, softmax, O = P V) takes three launches for
 * it, five with 16-bit storage, each with little to do, and a small
 * model's token is then mostly launches. Per query row (b, h, t):
 *   s_j = scale * q . k_j, -inf where key j is masked (padding, or after
 *         the query's position when causal)
 *   p_j = exp(s_j - max) / sum, the probabilities written to `probs` as the
 *         materialised path saves them (rounded to the storage format), 0
 *         where masked, 0 everywhere when every key is
 *   o   = sum_j p_j v_j (the stored p_j), rounded to the storage format
 * The softmax is attention_softmax's (cl/attention.cl): the same maximum,
 * exponentials and 1 / sum; the dot products and the sum over keys run in
 * another order than the GEMMs'. No dropout: decoding has none (the host
 * takes the materialised path when it is on). Grouped heads: query head h
 * of batch b reads key/value head b * (H / group) + h / group; keys and
 * values are Tk_cap rows apart (a decoding cache's length). `precision`:
 * 0 fp32, 1 bf16, 2 fp16 (round_storage_bits). A row's result depends on
 * that row alone, so a row gets the same bits in any batch.
 */
#include "common.h"

/* q . k over dh floats: float4 chunks, their lanes added in a fixed order,
 * then the tail. */
static inline float dec_dot(global const float *a, global const float *b, int dh)
{
    float4 s4 = (float4)(0.0f);
    int c = 0;
    for (; c + 4 <= dh; c += 4) s4 += vload4(0, a + c) * vload4(0, b + c);
    float t[4];
    vstore4(s4, 0, t); /* not shuffles: see attention.cl's sum8 */
    float s = (t[0] + t[2]) + (t[1] + t[3]);
    for (; c < dh; c++) s += a[c] * b[c];
    return s;
}

/* Whether the row's query sees key j: before jmax, not padding. */
static inline bool dec_visible(global const int *kt, int use_keys, int j, int jmax)
{
    return j < jmax && (!use_keys || kt[j] != 0);
}

/* A row per work-group of REDUCE_WG items on GPUs, per work item on CPU
 * devices (cl/common.h's row kernels). The scores and the softmax take the
 * keys in turn over the row's items (j = lid, lid + ROW_ITEMS, ...). O: on
 * GPUs item lid takes column lid % dh of the keys j = part, part + parts,
 * ... (part = lid / dh), and the parts' sums meet in local memory, added in
 * part order (dh > REDUCE_WG: one part, an item's columns in turn); on CPU
 * devices runs of 16 columns in registers. Every column sums its keys in
 * order. */
kernel void attention_decode(global float *out, ulong out_off, global float *probs,
                             ulong probs_off, global const float *q, ulong q_off,
                             global const float *k, ulong k_off, global const float *v,
                             ulong v_off, global const int *keys, ulong keys_off, int key_ld,
                             int use_keys, int rows, int H, int group, int Tq, int Tk,
                             int Tk_cap, int dh, int q_pos0, int causal, float scale,
                             int precision)
{
    local float scratch[ROW_ITEMS];
    const ulong row = ROW_OF_ITEM();
    if (ROW_PAST(row, rows)) return;
    const int lid = ROW_LID();
    const int bh = (int)row / Tq, t = (int)row - bh * Tq, b = bh / H;
    const int jmax = causal ? min(Tk, q_pos0 + t + 1) : Tk;
    const ulong kv = (ulong)kv_head(bh, H, group) * Tk_cap * dh;
    global const float *qr = q + q_off + row * dh;
    global const float *kb = k + k_off + kv, *vb = v + v_off + kv;
    global const int *kt = keys + keys_off + (ulong)b * key_ld;
    global float *x = probs + probs_off + row * Tk;

    /* scaled scores into the row of probs (each item its own keys) */
    float m = -INFINITY;
    for (int j = lid; j < jmax; j += ROW_ITEMS)
        if (dec_visible(kt, use_keys, j, jmax)) {
            const float s = dec_dot(qr, kb + (ulong)j * dh, dh) * scale;
            x[j] = s;
            m = fmax(m, s);
        }
    m = row_max(m, scratch);
    /* m == -inf: every key masked, every probability 0 */
    float sum = 0.0f;
    for (int j = lid; j < Tk; j += ROW_ITEMS) {
        const float e = dec_visible(kt, use_keys, j, jmax) ? exp(x[j] - m) : 0.0f;
        x[j] = e;
        sum += e;
    }
    sum = row_sum(sum, scratch);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int j = lid; j < Tk; j += ROW_ITEMS) x[j] = store_round(x[j] * inv, precision);
    ROW_BARRIER(); /* every item reads every probability below */

    global float *o = out + out_off + row * dh;
#if GPU_LAYOUTS
    if (dh > REDUCE_WG) {
        for (int c = lid; c < dh; c += REDUCE_WG) {
            float acc = 0.0f;
            for (int j = 0; j < jmax; j++) acc += x[j] * vb[(ulong)j * dh + c];
            o[c] = store_round(acc, precision);
        }
        return;
    }
    const int parts = REDUCE_WG / dh, part = lid / dh, c = lid - part * dh;
    float acc = 0.0f;
    if (part < parts)
        for (int j = part; j < jmax; j += parts) acc += x[j] * vb[(ulong)j * dh + c];
    scratch[lid] = acc; /* row_sum's last barrier: scratch is free */
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < dh) {
        float s = scratch[lid];
        for (int u = 1; u < parts; u++) s += scratch[u * dh + lid];
        o[lid] = store_round(s, precision);
    }
#else
    int c = 0;
    for (; c + 16 <= dh; c += 16) {
        float16 acc = (float16)(0.0f);
        for (int j = 0; j < jmax; j++) acc += x[j] * vload16(0, vb + (ulong)j * dh + c);
        vstore16(acc, 0, o + c);
    }
    for (; c < dh; c++) {
        float acc = 0.0f;
        for (int j = 0; j < jmax; j++) acc += x[j] * vb[(ulong)j * dh + c];
        o[c] = acc;
    }
    if (precision != 0)
        for (c = 0; c < dh; c++) o[c] = store_round(o[c], precision);
#endif
}
