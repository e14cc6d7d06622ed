/*
 * Multi-head attention kernels (runtime/ops/ops_attention.c launches them).
 *
 * The products Q K^T, P V and their gradients are CLBlast GEMMs; what lies
 * between them is here: moving heads in and out of the "(B, H, T, dh)"
 * layout, and the row-wise part of attention per score row (b, h, t), a
 * work-group per row on GPUs and a work item per row on CPU devices:
 *   forward:  P = softmax(scale * S + mask), P_drop = dropout(P)
 *   backward: dP = dropout_mask(dP_drop), dS = P * (dP - sum_j dP_j P_j) * scale
 * A masked score counts as -inf: its probability is exactly 0, and a row
 * with every key masked gets all-zero probabilities (not 0/0 = NaN). The
 * dropout element index is the flat index into the (B, H, Tq, Tk)
 * probabilities, so backward redraws the same mask.
 */
#include "common.h"

/* Remainders are written x - (x / y) * y: the compiler turns a matching x / y,
 * x % y pair into that form behind a `freeze`, which Oclgrind 21.10's
 * uninitialised-value checker cannot execute. */

/* dh floats from s to d: float4 moves while four remain (vload4/vstore4
 * need only float alignment). */
static inline void copy_run(global float *d, global const float *s, int dh)
{
    int j = 0;
    for (; j + 4 <= dh; j += 4) vstore4(vload4(0, s + j), 0, d + j);
    for (; j < dh; j++) d[j] = s[j];
}

/* A row's head slots and the per-head tensors they belong to: a row (b, t)
 * of one projection holds H0 + 2 * H1 slots of dh floats; slots 0..H0-1
 * are heads of tensor 0 (the queries), the next H1 of tensor 1 (keys), the
 * next H1 of tensor 2 (values); H1 = 0: one tensor, H0 = 0: keys and values
 * alone. Element j of slot u in row (b, t) lies at (b*T + t)*ld + u*dh + j,
 * of head h of tensor g (H_g heads) at ((b*H_g + h)*T + t)*dh + j.
 * dim 1: row r = b*T + t. Without GPU_LAYOUTS (CPU devices, where a work
 * item's loop runs as scalar code and every element paid two divisions): dim
 * 0 is the slot u and an item moves its dh contiguous floats; with it (GPUs,
 * coalesced) dim 0 is the column c = u*dh + j, one element per item. One
 * launch moves all three tensors (queries, keys and values were three). */
typedef struct {
    ulong row;  /* the element's offset in the rows, from their start */
    ulong head; /* its offset in its tensor, from the tensor's start */
    int tensor; /* 0, 1 or 2 */
} head_slot;

/* Where item (c, r) reads or writes; false for an item past the grid. The
 * heads of tensors 1 and 2 hold kv_cap rows each, from row kv_pos (a
 * decoding cache's: kv_cap = T and kv_pos = 0 otherwise). */
static inline bool head_slot_of(int c, int r, int ld, int B, int T, int H0, int H1, int dh,
                                int kv_cap, int kv_pos, head_slot *s)
{
    const int per_head = !GPU_LAYOUTS, slots = H0 + 2 * H1;
    if (c >= (per_head ? slots : slots * dh) || r >= B * T) return false;
    const int b = r / T, t = r - b * T, u = per_head ? c : c / dh, j = per_head ? 0 : c - u * dh;
    s->tensor = u < H0 ? 0 : u < H0 + H1 ? 1 : 2;
    const int h = s->tensor == 0 ? u : s->tensor == 1 ? u - H0 : u - H0 - H1,
              H = s->tensor == 0 ? H0 : H1;
    s->row = (ulong)r * ld + (ulong)u * dh + j;
    s->head = s->tensor == 0 ? (((ulong)b * H + h) * T + t) * dh + j
                             : (((ulong)b * H + h) * kv_cap + kv_pos + t) * dh + j;
    return true;
}

/* The three tensors' heads <- the rows' slots (keys and values into decoding
 * caches with kv_cap and kv_pos). */
kernel void split_heads(global float *dst0, ulong off0, global float *dst1, ulong off1,
                        global float *dst2, ulong off2, global const float *src, ulong src_off,
                        int ld, int B, int T, int H0, int H1, int dh, int kv_cap, int kv_pos)
{
    head_slot s;
    if (!head_slot_of(get_global_id(0), get_global_id(1), ld, B, T, H0, H1, dh, kv_cap, kv_pos,
                      &s))
        return;
    global float *d = s.tensor == 0 ? dst0 + off0 : s.tensor == 1 ? dst1 + off1 : dst2 + off2;
    if (!GPU_LAYOUTS)
        copy_run(d + s.head, src + src_off + s.row, dh);
    else
        d[s.head] = src[src_off + s.row];
}

/* split_heads of a projection's rows written without their bias: each
 * element gets bias[its column] added, rounded to the storage format
 * (round_storage_bits; precision 0 fp32, 1 bf16, 2 fp16), on the way, as
 * bias_add and the activation rounding would have (the same bits), in one
 * launch where those took one or two more. A decoding step's
 * self-attention (runtime/model/forward.c), whose rows nothing else reads. */
kernel void split_heads_bias(global float *dst0, ulong off0, global float *dst1, ulong off1,
                             global float *dst2, ulong off2, global const float *src,
                             ulong src_off, global const float *bias, ulong bias_off, int ld,
                             int B, int T, int H0, int H1, int dh, int kv_cap, int kv_pos,
                             int precision)
{
    head_slot s;
    if (!head_slot_of(get_global_id(0), get_global_id(1), ld, B, T, H0, H1, dh, kv_cap, kv_pos,
                      &s))
        return;
    global float *d = s.tensor == 0 ? dst0 + off0 : s.tensor == 1 ? dst1 + off1 : dst2 + off2;
    /* the element's column: its offset past its row's start */
    global const float *b = bias + bias_off + (s.row - (ulong)get_global_id(1) * ld);
    global const float *x = src + src_off + s.row;
    const int n = GPU_LAYOUTS ? 1 : dh; /* CPU devices: the slot's dh floats */
    for (int j = 0; j < n; j++)
        d[s.head + j] = store_round(x[j] + b[j], precision);
}

/* The inverse: the rows' slots <- the three tensors' heads (the rows'
 * other columns untouched). */
kernel void merge_heads(global float *dst, ulong dst_off, int ld, global const float *src0,
                        ulong off0, global const float *src1, ulong off1,
                        global const float *src2, ulong off2, int B, int T, int H0, int H1,
                        int dh)
{
    head_slot s;
    if (!head_slot_of(get_global_id(0), get_global_id(1), ld, B, T, H0, H1, dh, T, 0, &s))
        return;
    global const float *h = s.tensor == 0 ? src0 + off0 : s.tensor == 1 ? src1 + off1 : src2 + off2;
    if (!GPU_LAYOUTS)
        copy_run(dst + dst_off + s.row, h + s.head, dh);
    else
        dst[dst_off + s.row] = h[s.head];
}

/* Whether key j is visible: not padding (when a key mask is given) and, for
 * causal attention, not after the query's position. jmax = causal limit. */
static inline bool key_visible(global const int *keys, int use_keys, int j, int jmax)
{
    return j < jmax && (!use_keys || keys[j] != 0);
}

/* The dropout multipliers of Philox block q (flat elements 4q .. 4q+3),
 * the values dropout_scale gives each, one draw for the four. */
static inline void philox_block_scales(float *d, float p, ulong seed, uint step, uint site, ulong q)
{
    const float4 m = dropout_scale4(p, seed, step, site, q);
    d[0] = m.s0, d[1] = m.s1, d[2] = m.s2, d[3] = m.s3;
}

/* The arguments of attention_softmax (both layouts); rows = B*H*Tq. */
#define SOFTMAX_ARGS                                                                           \
    global float *p, ulong p_off, global float *pd, ulong pd_off, int write_drop,              \
        global const int *keys, ulong keys_off, int key_ld, int use_keys, int rows, int H,     \
        int Tq, int Tk, int q_pos0, int causal, float scale, float drop_p, ulong seed,         \
        uint step, uint site
#define SOFTMAX_PASS                                                                           \
    p, p_off, pd, pd_off, write_drop, keys, keys_off, key_ld, use_keys, rows, H, Tq, Tk,       \
        q_pos0, causal, scale, drop_p, seed, step, site

/*
 * In place on the scores S (B, H, Tq, Tk) from Q K^T: p = softmax over the
 * row of scale * S with masked keys removed. When write_drop is set, also
 * pd = p * dropout_scale (a copy when drop_p == 0). Row r = (b*H + h)*Tq + t.
 */

/* GPUs: one work-group of REDUCE_WG items per row, group g is row g. */
static inline void softmax_row_by_group(local float *scratch, SOFTMAX_ARGS)
{
    const int lid = get_local_id(0);
    const ulong row = get_group_id(0); /* the host launches exactly one group per row */
    const ulong bh = row / (ulong)Tq;
    const int t = (int)(row - bh * Tq), b = (int)(bh / (ulong)H);
    const int jmax = causal ? min(Tk, q_pos0 + t + 1) : Tk;
    global const int *k = keys + keys_off + (ulong)b * key_ld;
    global float *x = p + p_off + row * Tk;

    float m = -INFINITY;
    for (int j = lid; j < Tk; j += REDUCE_WG)
        if (key_visible(k, use_keys, j, jmax)) m = fmax(m, x[j] * scale);
    m = wg_max(m, scratch);

    /* m == -inf: every key masked, s == 0, and every element below takes the
     * masked branch; the guard only keeps inv finite. */
    float s = 0.0f;
    for (int j = lid; j < Tk; j += REDUCE_WG)
        if (key_visible(k, use_keys, j, jmax)) s += exp(x[j] * scale - m);
    s = wg_sum(s, scratch);
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;

    /* The outputs go by Philox block (flat elements 4q .. 4q+3, which may
     * straddle rows: only this row's are touched), so one draw serves four
     * elements; the values are dropout_scale's, element by element. An item
     * now rewrites elements that others read above: the barrier orders
     * those reads (wg_sum's barriers fence local memory only) before the
     * writes, in place. */
    barrier(CLK_GLOBAL_MEM_FENCE);
    const ulong first = row * Tk, end = first + Tk;
    for (ulong q = first / 4 + lid; 4 * q < end; q += REDUCE_WG) {
        float y[4];
        bool any = false;
        for (int i = 0; i < 4; i++) {
            const ulong e = 4 * q + i;
            const int j = (int)(e - first);
            y[i] = e >= first && e < end && key_visible(k, use_keys, j, jmax)
                       ? exp(x[j] * scale - m) * inv
                       : 0.0f;
            any = any || y[i] != 0.0f;
        }
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        /* Philox is costly on CPUs: no draw for a block of zero (masked) probabilities. */
        if (write_drop && any) philox_block_scales(d, drop_p, seed, step, site, q);
        for (int i = 0; i < 4; i++) {
            const ulong e = 4 * q + i;
            if (e < first || e >= end) continue;
            x[e - first] = y[i];
            if (write_drop) pd[pd_off + e] = y[i] != 0.0f ? y[i] * d[i] : 0.0f;
        }
    }
}

/* Sum and maximum of the eight lanes, in a fixed order. The lanes go out
 * through a private array, not shuffles (Oclgrind 21.10's uninitialised
 * checker crashes on those; the compiler makes shuffles of it on CPUs). */
static inline float sum8(float8 v)
{
    float a[8];
    vstore8(v, 0, a);
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}
static inline float max8(float8 v)
{
    float a[8];
    vstore8(v, 0, a);
    return fmax(fmax(fmax(a[0], a[4]), fmax(a[2], a[6])), fmax(fmax(a[1], a[5]), fmax(a[3], a[7])));
}

/* Keys j .. j+7 that are not padding: lanes -1, padding 0. */
static inline int8 unpadded8(global const int *k, int use_keys, int j)
{
    return use_keys ? vload8(0, k + j) != (int8)(0) : (int8)(-1);
}

/* A row's dropout on CPU devices, dst[j] = p[j] != 0 ? src[j] * d_j : 0 for
 * its Tk elements, d_j the multiplier of element first + j: by Philox block
 * as above, one draw for four elements and none where p is 0 in all four
 * (the probabilities; dst may be src). */
static inline void drop_row(global float *dst, global const float *src, global const float *p,
                            ulong first, int Tk, float drop_p, ulong seed, uint step, uint site)
{
    if (drop_p <= 0.0f) { /* every multiplier is 1 */
        int j = 0;
        for (; j + 8 <= Tk; j += 8)
            vstore8(select((float8)(0.0f), vload8(0, src + j), vload8(0, p + j) != (float8)(0.0f)),
                    0, dst + j);
        for (; j < Tk; j++) dst[j] = p[j] != 0.0f ? src[j] : 0.0f;
        return;
    }
    const ulong end = first + Tk;
    for (ulong q = first / 4; 4 * q < end; q++) {
        const ulong lo = max(4 * q, first), hi = min(4 * q + 4, end);
        bool any = false;
        for (ulong e = lo; e < hi; e++) any = any || p[e - first] != 0.0f;
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (any) philox_block_scales(d, drop_p, seed, step, site, q);
        for (ulong e = lo; e < hi; e++)
            dst[e - first] = p[e - first] != 0.0f ? src[e - first] * d[e - 4 * q] : 0.0f;
    }
}

/* CPU devices: one work item per row, no barriers (a group per row cost
 * PoCL about 2 us of barrier loops a row, 7 ms of gpt-mini's step), keys
 * eight at a time below the causal limit. The sum pass leaves exp(scale s
 * - m) in place, so each is computed once; the probabilities are those
 * values times 1 / sum, as above. */
static inline void softmax_row_by_item(SOFTMAX_ARGS)
{
    const int row = get_global_id(0);
    if (row >= rows) return;
    const int bh = row / Tq, t = row - bh * Tq, b = bh / H;
    const int jmax = causal ? min(Tk, q_pos0 + t + 1) : Tk;
    global const int *k = keys + keys_off + (ulong)b * key_ld;
    global float *x = p + p_off + (ulong)row * Tk;
    const ulong first = (ulong)row * Tk;

    float8 m8 = (float8)(-INFINITY);
    int j = 0;
    for (; j + 8 <= jmax; j += 8)
        m8 = fmax(m8, select((float8)(-INFINITY), vload8(0, x + j) * scale,
                             unpadded8(k, use_keys, j)));
    float m = max8(m8);
    for (; j < jmax; j++)
        if (key_visible(k, use_keys, j, jmax)) m = fmax(m, x[j] * scale);

    /* m == -inf: every key masked, and every lane below selects 0 */
    float8 s8 = 0.0f;
    for (j = 0; j + 8 <= jmax; j += 8) {
        const float8 e = select((float8)(0.0f), exp(vload8(0, x + j) * scale - m),
                                unpadded8(k, use_keys, j));
        vstore8(e, 0, x + j);
        s8 += e;
    }
    float s = sum8(s8);
    for (; j < jmax; j++) {
        const float e = key_visible(k, use_keys, j, jmax) ? exp(x[j] * scale - m) : 0.0f;
        x[j] = e;
        s += e;
    }
    for (; j < Tk; j++) x[j] = 0.0f;
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;

    for (j = 0; j + 8 <= Tk; j += 8) vstore8(vload8(0, x + j) * inv, 0, x + j);
    for (; j < Tk; j++) x[j] *= inv;
    if (write_drop) drop_row(pd + pd_off + first, x, x, first, Tk, drop_p, seed, step, site);
}

kernel void attention_softmax(SOFTMAX_ARGS)
{
#if GPU_LAYOUTS
    local float scratch[REDUCE_WG];
    softmax_row_by_group(scratch, SOFTMAX_PASS);
#else
    softmax_row_by_item(SOFTMAX_PASS);
#endif
}

/* The arguments of attention_softmax_backward (both layouts); rows = B*H*Tq. */
#define SOFTMAX_BACKWARD_ARGS                                                                  \
    global float *dp, ulong dp_off, global const float *p, ulong p_off, int rows, int Tk,      \
        float scale, float drop_p, ulong seed, uint step, uint site
#define SOFTMAX_BACKWARD_PASS dp, dp_off, p, p_off, rows, Tk, scale, drop_p, seed, step, site

/*
 * In place on dP_drop (B, H, Tq, Tk) from dO V^T: dS = P * (dP - <dP, P>) * scale
 * with dP = dP_drop * dropout_scale. Masked entries have P == 0, hence
 * dS == 0, without needing the masks again.
 */

/* GPUs: one work-group per row. */
static inline void softmax_backward_row_by_group(local float *scratch, SOFTMAX_BACKWARD_ARGS)
{
    const int lid = get_local_id(0);
    const ulong row = get_group_id(0);
    global float *g = dp + dp_off + row * Tk;
    global const float *y = p + p_off + row * Tk;

    /* dP replaces dP_drop, drawn by Philox block as in the forward and not
     * at all for a block where P == 0 (dS is 0 there whatever dP is). */
    const ulong first = row * Tk, end = first + Tk;
    for (ulong q = first / 4 + lid; 4 * q < end; q += REDUCE_WG) {
        bool any = false;
        for (int i = 0; i < 4; i++) {
            const ulong e = 4 * q + i;
            any = any || (e >= first && e < end && y[e - first] != 0.0f);
        }
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (any) philox_block_scales(d, drop_p, seed, step, site, q);
        for (int i = 0; i < 4; i++) {
            const ulong e = 4 * q + i;
            if (e < first || e >= end) continue;
            g[e - first] = y[e - first] != 0.0f ? g[e - first] * d[i] : 0.0f;
        }
    }
    /* The dot product in the strided order it always had (the same rounding),
     * once every item's dP is written. */
    barrier(CLK_GLOBAL_MEM_FENCE);
    float dot = 0.0f;
    for (int j = lid; j < Tk; j += REDUCE_WG) dot += g[j] * y[j];
    dot = wg_sum(dot, scratch);

    for (int j = lid; j < Tk; j += REDUCE_WG) g[j] = y[j] * (g[j] - dot) * scale;
}

/* CPU devices: one work item per row, eight elements at a time. */
static inline void softmax_backward_row_by_item(SOFTMAX_BACKWARD_ARGS)
{
    const int row = get_global_id(0);
    if (row >= rows) return;
    global float *g = dp + dp_off + (ulong)row * Tk;
    global const float *y = p + p_off + (ulong)row * Tk;
    drop_row(g, g, y, (ulong)row * Tk, Tk, drop_p, seed, step, site); /* dP from dP_drop */
    int j;
    float8 dot8 = 0.0f;
    for (j = 0; j + 8 <= Tk; j += 8) dot8 += vload8(0, g + j) * vload8(0, y + j);
    float dot = sum8(dot8);
    for (; j < Tk; j++) dot += g[j] * y[j];
    for (j = 0; j + 8 <= Tk; j += 8)
        vstore8(vload8(0, y + j) * (vload8(0, g + j) - dot) * scale, 0, g + j);
    for (; j < Tk; j++) g[j] = y[j] * (g[j] - dot) * scale;
}

kernel void attention_softmax_backward(SOFTMAX_BACKWARD_ARGS)
{
#if GPU_LAYOUTS
    local float scratch[REDUCE_WG];
    softmax_backward_row_by_group(scratch, SOFTMAX_BACKWARD_PASS);
#else
    softmax_backward_row_by_item(SOFTMAX_BACKWARD_PASS);
#endif
}
