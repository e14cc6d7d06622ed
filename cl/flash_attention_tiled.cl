/*
 * Tiled attention for GPUs (the FlashAttention-2 algorithm, in OpenCL C
 * 1.2): the fused path's kernels where the device profile says so
 * (runtime/ops/ops_attention.c launches them, runtime/device/profile.c
 * chooses the tiles). Same contract, masks, dropout counters and saved row
 * statistics as cl/flash_attention.cl, whose header states the maths.
 *
 * A work-group owns a block of rows of one head: query rows (forward, dQ)
 * or key rows (dK, dV). Each row belongs to SPLIT neighbouring work items,
 * each holding a slice of the row's columns (float4 columns part, part +
 * SPLIT, ...) in registers: the row's own operands (q, or k and v) and its
 * accumulators (o, dq, or dk and dv). The other side streams through local
 * memory a tile at a time, loaded once per group with coalesced reads, and
 * every item reads it as broadcasts (all rows read the same element). A
 * dot product over the columns is a partial sum per item; the SPLIT
 * partials of a row meet in local memory (ROWS_SUM), added in part order,
 * so the SPLIT items hold the same bits. Softmax statistics stay in
 * registers, outputs are written once, and nothing is added to global
 * memory by two groups (no atomics): results are deterministic.
 *
 * Forward, per block of FWD_ROWS query rows, one pass over the key tiles
 * the block's rows may see (causal: up to the last row's position), online:
 * per tile the row maximum m grows, the sum l and the output o are rescaled
 * by exp(m_old - m), then l += exp(s_j - m) and o += exp(s_j - m) d_j v_j;
 * at the end o /= l and the statistics (m, 1/l) are saved. The per-row
 * kernels recompute the scores in a second pass instead (a one-pass online
 * output per four keys was 2-4x further off PyTorch there); with tiles of
 * keys the one-pass output passes the PyTorch parity tests (test_model_parity,
 * test_gpt2_parity, test_precision_parity) with GPU layouts on PoCL and
 * Intel's runtime, the trained weights' worst NMSE 1.6e-13 to 4.5e-13 where
 * a two-pass tiled version gave 9e-13 to 3.8e-12; and it reads K once, not
 * twice (2 bytes per (query, key) pair at T=128, tools/gpu-proxy.sh), with
 * two thirds of the FMAs.
 * Backward, with D_i = dO_i . O_i:
 *   flash_tiled_backward_dq:  per block of DQ_ROWS query rows, writes D_i
 *                             and dQ_i = scale sum_j dS_ij k_j over key tiles
 *   flash_tiled_backward_dkv: per block of DKV_KEYS key rows, over tiles of
 *                             DKV_ROWS query rows (from the first that may
 *                             see the block): dV_j = sum_i P_ij d_ij dO_i,
 *                             dK_j = scale sum_i dS_ij q_i
 * with dS_ij = P_ij (d_ij dO_i . v_j - D_i) and the dropout multiplier d_ij
 * of element (row * Tk + j) of the site, row = (b*H + h)*Tq + i, drawn four
 * at a time into local memory (drop_tile).
 *
 * Grouped heads: query head h of batch b reads key/value head
 * b*(H/group) + h/group (group = 1: one key/value head per query head); the
 * dK/dV block of a key/value head sums over its group's query heads.
 *
 * Rows held per item: an item may hold PER_ITEM rows (dK/dV: keys) of its
 * block, each with its slice of columns, so that every float4 it reads
 * from a streamed tile serves PER_ITEM rows: a GPU issues
 * a shared-memory read per float4, and at one row an item the kernels read
 * one for every 4 multiply-adds (NVPTX, clang 14 at dh 64: 0.26-0.28
 * shared loads per FMA instruction in the three kernels; 2 rows an item
 * over twice the items: 0.16-0.17). The results are the same bits for
 * any PER_ITEM: a row's sums keep their order.
 *
 * Build options (all set by the host from the profile's tiles):
 * HEAD_DIM (the head size dh: loops unroll, operands stay in registers),
 * FWD_ROWS, FWD_SPLIT, FWD_KEYS, FWD_PER_ITEM; DQ_ROWS, DQ_SPLIT, DQ_KEYS,
 * DQ_PER_ITEM; DKV_KEYS, DKV_SPLIT, DKV_ROWS, DKV_PER_ITEM. A group is
 * ROWS / PER_ITEM * SPLIT items (dK/dV: DKV_KEYS / DKV_PER_ITEM * DKV_SPLIT).
 */
#include "common.h"

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef FWD_ROWS
#define FWD_ROWS 64
#define FWD_SPLIT 2
#define FWD_KEYS 8
#define DQ_ROWS 64
#define DQ_SPLIT 2
#define DQ_KEYS 8
#define DKV_KEYS 64
#define DKV_SPLIT 2
#define DKV_ROWS 8
#endif
#ifndef FWD_PER_ITEM
#define FWD_PER_ITEM 1
#endif
#ifndef DQ_PER_ITEM
#define DQ_PER_ITEM 1
#endif
#ifndef DKV_PER_ITEM
#define DKV_PER_ITEM 1
#endif

#define D4 ((HEAD_DIM + 3) / 4) /* float4 columns of a row */
#define LD (4 * D4)             /* floats per row of a local tile (zero past HEAD_DIM) */
/* An item holds PER_ITEM rows (dK/dV: keys) of its group's block, `SLOTS`
 * apart: each value it reads from a streamed tile then serves them all. */
#define FWD_SLOTS (FWD_ROWS / FWD_PER_ITEM)
#define DQ_SLOTS (DQ_ROWS / DQ_PER_ITEM)
#define DKV_SLOTS (DKV_KEYS / DKV_PER_ITEM)
#define FWD_W (FWD_SLOTS * FWD_SPLIT)
#define DQ_W (DQ_SLOTS * DQ_SPLIT)
#define DKV_W (DKV_SLOTS * DKV_SPLIT)
#if FWD_ROWS % FWD_PER_ITEM != 0 || DQ_ROWS % DQ_PER_ITEM != 0 || DKV_KEYS % DKV_PER_ITEM != 0
#error "a group's rows (dK/dV: keys) must be a multiple of the rows an item holds"
#endif
/* float4 columns per item when a row is split over `split` items */
#define COLS(split) ((D4 + (split) - 1) / (split))
/* whether float4 column x of an item's slice exists (folds when split | D4) */
#define HAS_COL(split, part, x) (D4 % (split) == 0 || (part) + (split) * (x) < D4)

/* The inputs every kernel here takes after its outputs (ops_attention.c's
 * TILED_ARGS); group: query heads per key/value head. q_ld, kv_ld, o_ld,
 * dq_ld, dkv_ld: the layout of Q, of K and V, of O and dO, of dQ, and of dK
 * and dV (head_row); the statistics are per row of all heads' rows. */
#define TILED_INPUTS                                                                           \
    global const float *q, ulong q_off, global const float *k, ulong k_off,                    \
        global const float *v, ulong v_off, global const int *keys, ulong keys_off,            \
        int key_ld, int use_keys, int H, int group, int Tq, int Tk, int Tk_cap, int q_pos0,     \
        int causal, float scale, float drop_p, ulong seed, uint step, uint site, int q_ld,      \
        int kv_ld, int o_ld, int dq_ld, int dkv_ld

/* Nowhere here a `%` beside a `/` of the same numbers (x - x / y * y
 * instead): LLVM 14 then reuses the quotient through a `freeze`, an
 * instruction Oclgrind 21.10's uninitialised-value checker stops at. */

/* The first key a query at position qpos may not see (causal), or Tk. */
inline int tiled_key_end(int causal, int Tk, int qpos) { return causal ? min(Tk, qpos + 1) : Tk; }

/* (a.x + a.y) + (a.z + a.w). The lanes go out through a private array:
 * written on the vector, LLVM 14 makes shuffles with undefined lanes of it,
 * on which Oclgrind 21.10's uninitialised-value checker reads out of bounds
 * (and crashes now and then). */
inline float hsum4(float4 a)
{
    float t[4];
    vstore4(a, 0, t);
    return (t[0] + t[1]) + (t[2] + t[3]);
}

/* Floats from one row of a head to the next. */
inline int row_stride(int ld) { return ld ? ld : HEAD_DIM; }

/* Where row t of head bh (= b * heads + h) of a tensor of T rows a head
 * starts: in the head layout (ld 0) the heads' blocks of T rows of HEAD_DIM
 * follow one another; as rows (B, T) of ld floats, head h is columns
 * h * HEAD_DIM.. of each: the model's projection rows, so that no split or
 * merge launch runs around the kernels. */
inline ulong head_row(int bh, int heads, int T, int t, int ld)
{
    /* the head's start (the same for a group's items), then t rows on: one
     * product of t, which the kernels' per-item values are; with a branch
     * per layout the forward took 4 more VGPRs (131, a wave fewer a SIMD on
     * AMDGPU at dh 64: tools/proxy/register-proxy.sh) */
    const int b = bh / heads;
    const ulong head = ld ? (ulong)b * T * ld + (ulong)(bh - b * heads) * HEAD_DIM
                          : (ulong)bh * T * HEAD_DIM;
    return head + (ulong)t * row_stride(ld);
}

/* Float4 column c of a row of HEAD_DIM floats (0 past the end). */
inline float4 load_col(global const float *row, int c)
{
    if (HEAD_DIM % 4 == 0 || 4 * c + 3 < HEAD_DIM) return vload4(c, row);
    float4 x = (float4)(0.0f);
    x.x = row[4 * c];
    if (4 * c + 1 < HEAD_DIM) x.y = row[4 * c + 1];
    if (4 * c + 2 < HEAD_DIM) x.z = row[4 * c + 2];
    return x;
}

inline void store_col(global float *row, int c, float4 x)
{
    if (HEAD_DIM % 4 == 0 || 4 * c + 3 < HEAD_DIM) {
        vstore4(x, c, row);
        return;
    }
    row[4 * c] = x.x;
    if (4 * c + 1 < HEAD_DIM) row[4 * c + 1] = x.y;
    if (4 * c + 2 < HEAD_DIM) row[4 * c + 2] = x.z;
}

/* An item's slice of a row, v[first + x] * mult for its float4 columns
 * part + split * x, x < cols, into the row at dst. A macro for the reason
 * ROWS_SUM is one: v is a private array. */
#define STORE_SLICE(dst, v, first, mult, part, split, cols)                                    \
    _Pragma("unroll") for (int x_ = 0; x_ < (cols); x_++)                                      \
        if (HAS_COL(split, part, x_))                                                          \
            store_col(dst, (part) + (split) * x_, (v)[(first) + x_] * (mult))

/* Rows [r0, r0 + n) of a head's rows of HEAD_DIM floats, `stride` apart,
 * from `src` into `rows` rows of LD floats at dst, as one run of coalesced
 * reads; rows past n and columns past HEAD_DIM are 0 (they then weigh
 * nothing). */
inline void load_tile(local float *dst, global const float *src, int stride, int r0, int n,
                      int rows, int lid, int W)
{
    src += (ulong)r0 * stride;
    for (int e = lid; e < rows * LD; e += W) {
        const int i = e / LD, d = e - i * LD;
        dst[e] = i < n && d < HEAD_DIM ? src[(ulong)i * stride + d] : 0.0f;
    }
}

/* Whether key j (< Tk) of batch row kt is a key (not padding). */
inline int key_kept(global const int *kt, int use_keys, int j) { return !use_keys || kt[j] != 0; }

/* x[0] + x[1] + ... + x[split - 1], added in that order, read as one
 * vector where split is 2 or 4 (x then aligned to it: the exchanges are
 * float4 arrays and a row's partials start at a multiple of split): a
 * shared-memory read is an instruction of its own on a GPU, and those
 * reads, not the multiply-adds, are what the tiled kernels issue most. */
inline float parts_sum(local const float *x, int split)
{
    if (split == 2) {
        const float2 p = *(local const float2 *)x;
        return p.x + p.y;
    }
    if (split == 4) {
        const float4 p = *(local const float4 *)x;
        return ((p.x + p.y) + p.z) + p.w;
    }
    float s = x[0];
    for (int p = 1; p < split; p++) s += x[p];
    return s;
}

/* The partial sums v[0..n) of the `split` items of each row (neighbouring
 * local ids) added up, in part order, into every one of them, through x
 * (W * n floats, float4 aligned): each item writes its partials, a
 * barrier, each adds its row's up; the caller puts a barrier before x is
 * written again. A macro whose loops unroll over the constant n: v is a
 * private array, and a GPU compiler keeps one in registers only where
 * every index is a constant. As inline functions (even always inlined)
 * LLVM 14 unrolled these loops by 8 with a run-time trip count and v
 * stayed in off-chip memory (NVPTX local memory, AMDGPU scratch). The
 * barrier stays in the kernel: Intel's CPU compiler got functions with
 * barriers that it did not inline wrong (docs/DEVICES.md). */
#define ROWS_SUM(v, n, x, lid, W, split)                                                       \
    if ((split) > 1) {                                                                         \
        _Pragma("unroll") for (int t_ = 0; t_ < (n); t_++) (x)[t_ * (W) + (lid)] = (v)[t_];    \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        const int first_ = (lid) / (split) * (split);                                          \
        _Pragma("unroll") for (int t_ = 0; t_ < (n); t_++)                                     \
            (v)[t_] = parts_sum((x) + t_ * (W) + first_, split);                               \
    }

/* r[i * (n + 1) + jj] = the dropout multiplier of (row0 + i, key j0 + jj)
 * for i < rows, jj < n: element (row0 + i) * Tk + j0 + jj of the site, the
 * values of dropout_scale, drawn a Philox block (four elements) at a time by
 * the group's items together. The row stride n + 1 keeps the reads of
 * different rows on different banks. */
inline void drop_tile(local float *r, int rows, int n, ulong row0, int Tk, int j0, float p,
                      ulong seed, uint step, uint site, int lid, int W)
{
    const int blocks = (n + 3) / 4 + 1; /* a run of n elements touches at most these */
    for (int u = lid; u < rows * blocks; u += W) {
        const int i = u / blocks;
        const ulong first = (row0 + i) * (ulong)Tk + j0, block = (first >> 2) + (u - i * blocks);
        float m[4];
        vstore4(dropout_scale4(p, seed, step, site, block), 0, m);
        for (int w = 0; w < 4; w++) {
            const long jj = (long)(4 * block + w) - (long)first;
            if (jj >= 0 && jj < n) r[i * (n + 1) + jj] = m[w];
        }
    }
}

/* The tile of `keys` keys from j0 for a block of `rows` query rows from
 * global row row0 (forward and dQ): K and V rows into kt and vt, whether
 * each key is one (in range, not padding) into kf, and with dropout the
 * block's multipliers into dr. No barriers: the caller's come around it. */
inline void load_key_tile(local float4 *kt, local float4 *vt, local int *kf, local float *dr,
                          int keys, int rows, global const float *kb, global const float *vb,
                          int kv_stride, global const int *kt_row, int use_keys, int j0, int Tk,
                          ulong row0, float drop_p, ulong seed, uint step, uint site, int lid,
                          int W)
{
    const int n = min(keys, Tk - j0);
    load_tile((local float *)kt, kb, kv_stride, j0, n, keys, lid, W);
    load_tile((local float *)vt, vb, kv_stride, j0, n, keys, lid, W);
    if (lid < keys) kf[lid] = lid < n && key_kept(kt_row, use_keys, j0 + lid);
    if (drop_p > 0.0f) drop_tile(dr, rows, keys, row0, Tk, j0, drop_p, seed, step, site, lid, W);
}

/* The backward's tiles are fetched a tile ahead: the floats of a tile of
 * `rows` rows of a head's rows (`stride` apart) from row r0 (n of them
 * real) that item lid of W carries (load_tile's elements lid, lid + W, ...)
 * are read into the private array f during the previous tile's work, so
 * that the reads are in flight while it computes, and stored into the local
 * tile after the next barrier (PUT_TILE). At the backward kernels' register
 * counts (ptxas: 168-243 an item at dh 32-128, the H200 check of 29f8dbd)
 * one group runs per compute unit, so each tile otherwise waited for its
 * reads with nothing else to run. A kernel fetches ahead where a tile is at
 * most two floats a tensor an item (AHEAD below): fetching three took
 * clang's AMDGPU dK/dV at dh 96 to 256 VGPRs and 12 bytes spilled
 * (tools/proxy/register-proxy.sh), so there (dK/dV at dh 80 and 96, dQ at
 * 80, 96 and 128) tiles load as before. Macros, for the reason ROWS_SUM is
 * one. */
#define FETCHES(rows, W) (((rows) * LD + (W) - 1) / (W))
#define AHEAD(rows, W) (FETCHES(rows, W) <= 2)
#define FETCH_TILE(f, src, stride, r0, n, rows, lid, W)                                        \
    _Pragma("unroll") for (int u_ = 0; u_ < FETCHES(rows, W); u_++) {                          \
        const int e_ = (lid) + u_ * (W), i_ = e_ / LD, d_ = e_ - i_ * LD;                      \
        (f)[u_] = e_ < (rows) * LD && i_ < (n) && d_ < HEAD_DIM                                \
                      ? (src)[(ulong)((r0) + i_) * (stride) + d_]                              \
                      : 0.0f;                                                                  \
    }
#define PUT_TILE(dst, f, rows, lid, W)                                                         \
    _Pragma("unroll") for (int u_ = 0; u_ < FETCHES(rows, W); u_++) {                          \
        const int e_ = (lid) + u_ * (W);                                                       \
        if (e_ < (rows) * LD) (dst)[e_] = (f)[u_];                                             \
    }

/* Two dot products per row t < n of two local tiles and per row i < per
 * an item holds (backward): sd[i * 2n + t] = this item's part of
 * a_i . x_t and sd[i * 2n + n + t] of b_i . y_t, over its slice of `cols`
 * float4 columns (part, part + split, ...; a_i's at a[i * cols + c]), each
 * float4 of the tiles read once for the `per` rows. A macro for the reason
 * ROWS_SUM is one: as an always inlined function, its loops over n and
 * cols were unrolled by 2 with a run-time trip count, before inlining, for
 * AMDGPU, and the arrays a and b (q and dO, or k and v) stayed in scratch
 * memory. */
#define PAIR_DOTS(sd, n, per, a, b, x, y, part, split, cols)                                   \
    _Pragma("unroll") for (int t_ = 0; t_ < (n); t_++) {                                       \
        float4 u_[per], w_[per];                                                               \
        _Pragma("unroll") for (int i_ = 0; i_ < (per); i_++) u_[i_] = w_[i_] = (float4)(0.0f); \
        _Pragma("unroll") for (int c_ = 0; c_ < (cols); c_++)                                  \
            if (HAS_COL(split, part, c_)) {                                                    \
                const int e_ = t_ * D4 + (part) + (split) * c_;                                \
                const float4 xe_ = (x)[e_], ye_ = (y)[e_];                                     \
                _Pragma("unroll") for (int i_ = 0; i_ < (per); i_++) {                         \
                    u_[i_] += (a)[i_ * (cols) + c_] * xe_;                                     \
                    w_[i_] += (b)[i_ * (cols) + c_] * ye_;                                     \
                }                                                                              \
            }                                                                                  \
        _Pragma("unroll") for (int i_ = 0; i_ < (per); i_++) {                                 \
            (sd)[i_ * 2 * (n) + t_] = hsum4(u_[i_]);                                           \
            (sd)[i_ * 2 * (n) + (n) + t_] = hsum4(w_[i_]);                                     \
        }                                                                                      \
    }

/* float rd[per * n]: rd[kk * n + i] = dr[first + kk * apart + i * stride]
 * with dropout, else 1 (the backward's multipliers of a tile, for the per
 * rows an item holds). Taken before the tile's dot products: a branch
 * after them (even this uniform one) had the compiler load the whole tile
 * ahead of it and spill (AMDGPU). */
#define DROP_MULTIPLIERS(rd, n, per, first, apart, stride)                                     \
    float rd[(per) * (n)];                                                                     \
    if (drop) {                                                                                \
        _Pragma("unroll") for (int k_ = 0; k_ < (per); k_++)                                   \
            _Pragma("unroll") for (int i_ = 0; i_ < (n); i_++)                                 \
                rd[k_ * (n) + i_] = dr[(first) + k_ * (apart) + i_ * (stride)];                \
    } else {                                                                                   \
        _Pragma("unroll") for (int i_ = 0; i_ < (per) * (n); i_++) rd[i_] = 1.0f;              \
    }

/* The locals of a work item of a query-block kernel (forward, dQ): slot r
 * of the group's block of `rows` query rows from t0 (the item holds rows
 * r, r + slots, ... of it), its part of a row's columns, the key/value
 * head's K and V, the batch's key tokens and the keys the block may see
 * (< kend). */
#define QUERY_BLOCK(rows, split)                                                               \
    const int lid = get_local_id(0), r = lid / (split), part = lid - r * (split);              \
    const int bh = get_group_id(1), t0 = get_group_id(0) * (rows);                             \
    const ulong kv = head_row(kv_head(bh, H, group), H / group, Tk_cap, 0, kv_ld);             \
    global const float *kb = k + k_off + kv, *vb = v + v_off + kv;                             \
    const int kv_stride = row_stride(kv_ld);                                                   \
    global const int *kt_row = keys + keys_off + (ulong)(bh / H) * key_ld;                     \
    const int kend = tiled_key_end(causal, Tk, q_pos0 + min(t0 + (rows), Tq) - 1);            \
    const bool drop = drop_p > 0.0f

/* ------------------------------------------------------------------------- */
/* Forward                                                                   */
/* ------------------------------------------------------------------------- */

#define FWD_COLS COLS(FWD_SPLIT)
#define FWD_N (FWD_PER_ITEM * FWD_KEYS) /* an item's scores a tile */

/* s[i * FWD_KEYS + jj] = this item's part of q_i . k_jj for its rows i and
 * the FWD_KEYS keys of the tile in kt (qv[i * FWD_COLS + x]: row i's
 * columns), each key's float4 read once for all the rows. Static and
 * always inlined, and so is fwd_mask: as plain inline functions the
 * forward's s[] stayed in NVPTX local memory (192 bytes at dh 64), a
 * private array being kept in registers only where every index is a
 * constant. (Their loops' bounds are constants: no macro needed.) */
static inline __attribute__((always_inline)) void
fwd_dots(float *s, const float4 *qv, local const float4 *kt, int part)
{
#pragma unroll
    for (int jj = 0; jj < FWD_KEYS; jj++) {
        float4 a[FWD_PER_ITEM];
#pragma unroll
        for (int i = 0; i < FWD_PER_ITEM; i++) a[i] = (float4)(0.0f);
#pragma unroll
        for (int x = 0; x < FWD_COLS; x++)
            if (HAS_COL(FWD_SPLIT, part, x)) {
                const float4 kk = kt[jj * D4 + part + FWD_SPLIT * x];
#pragma unroll
                for (int i = 0; i < FWD_PER_ITEM; i++) a[i] += qv[i * FWD_COLS + x] * kk;
            }
#pragma unroll
        for (int i = 0; i < FWD_PER_ITEM; i++) s[i * FWD_KEYS + jj] = hsum4(a[i]);
    }
}

/* The rows' totals s[] scaled, -inf where key j0 + jj is masked for the
 * query at position qpos0 + i * FWD_SLOTS (no branches: & not &&). */
static inline __attribute__((always_inline)) void
fwd_mask(float *s, local const int *kf, int j0, int qpos0, int causal, float scale)
{
#pragma unroll
    for (int i = 0; i < FWD_PER_ITEM; i++)
#pragma unroll
        for (int jj = 0; jj < FWD_KEYS; jj++) {
            const bool visible =
                (kf[jj] != 0) & (!causal | (j0 + jj <= qpos0 + i * FWD_SLOTS));
            s[i * FWD_KEYS + jj] = visible ? s[i * FWD_KEYS + jj] * scale : -INFINITY;
        }
}

/* out (B*H, Tq, HEAD_DIM), or rows (o_ld), and stats (B*H*Tq, 2) = (m, 1/l)
 * per query row. */
__attribute__((reqd_work_group_size(FWD_W, 1, 1)))
kernel void flash_tiled_forward(global float *out, ulong out_off, global float *stats,
                                ulong stats_off, TILED_INPUTS)
{
    local float4 kt[FWD_KEYS * D4], vt[FWD_KEYS * D4];
    local int kf[FWD_KEYS];
    local float4 xs4[FWD_SPLIT > 1 ? (FWD_N * FWD_W + 3) / 4 : 1];
    local float dr[FWD_ROWS * (FWD_KEYS + 1)];
    local float *xs = (local float *)xs4;
    QUERY_BLOCK(FWD_ROWS, FWD_SPLIT);

    /* the item's rows t0 + r + i * FWD_SLOTS, i < FWD_PER_ITEM */
    float4 qv[FWD_PER_ITEM * FWD_COLS], ov[FWD_PER_ITEM * FWD_COLS];
#pragma unroll
    for (int i = 0; i < FWD_PER_ITEM; i++) {
        const int t = t0 + r + i * FWD_SLOTS;
#pragma unroll
        for (int x = 0; x < FWD_COLS; x++) {
            const int c = part + FWD_SPLIT * x;
            qv[i * FWD_COLS + x] = t < Tq && HAS_COL(FWD_SPLIT, part, x)
                                       ? load_col(q + q_off + head_row(bh, H, Tq, t, q_ld), c)
                                       : (float4)(0.0f);
            ov[i * FWD_COLS + x] = (float4)(0.0f);
        }
    }
    float s[FWD_N];

    /* each row's maximum m, sum l and output o, online: each tile that
     * raises the maximum rescales l and o first */
    float m[FWD_PER_ITEM], l[FWD_PER_ITEM];
#pragma unroll
    for (int i = 0; i < FWD_PER_ITEM; i++) m[i] = -INFINITY, l[i] = 0.0f;
    for (int j0 = 0; j0 < kend; j0 += FWD_KEYS) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the last tile's readers are done */
        load_key_tile(kt, vt, kf, dr, FWD_KEYS, FWD_ROWS, kb, vb, kv_stride, kt_row, use_keys,
                      j0, Tk, (ulong)bh * Tq + t0, drop_p, seed, step, site, lid, FWD_W);
        barrier(CLK_LOCAL_MEM_FENCE);
        fwd_dots(s, qv, kt, part);
        ROWS_SUM(s, FWD_N, xs, lid, FWD_W, FWD_SPLIT);
        fwd_mask(s, kf, j0, q_pos0 + t0 + r, causal, scale);
        /* per row: the weights p = exp(s - m), 0 where masked and for a
         * row that has seen no key yet */
#pragma unroll
        for (int i = 0; i < FWD_PER_ITEM; i++) {
            float bm = s[i * FWD_KEYS];
#pragma unroll
            for (int jj = 1; jj < FWD_KEYS; jj++) bm = fmax(bm, s[i * FWD_KEYS + jj]);
            const float mn = fmax(m[i], bm);
            if (mn > -INFINITY) {
                const float alpha = exp(m[i] - mn); /* 0 while m is -inf */
                l[i] *= alpha;
#pragma unroll
                for (int x = 0; x < FWD_COLS; x++) ov[i * FWD_COLS + x] *= alpha;
#pragma unroll
                for (int jj = 0; jj < FWD_KEYS; jj++) {
                    s[i * FWD_KEYS + jj] = exp(s[i * FWD_KEYS + jj] - mn);
                    l[i] += s[i * FWD_KEYS + jj];
                }
                m[i] = mn;
            } else {
#pragma unroll
                for (int jj = 0; jj < FWD_KEYS; jj++) s[i * FWD_KEYS + jj] = 0.0f;
            }
        }
        if (drop) {
#pragma unroll
            for (int i = 0; i < FWD_PER_ITEM; i++)
#pragma unroll
                for (int jj = 0; jj < FWD_KEYS; jj++)
                    s[i * FWD_KEYS + jj] *= dr[(r + i * FWD_SLOTS) * (FWD_KEYS + 1) + jj];
        }
        /* o += p d v in a loop of its own, each V float4 read once for the
         * rows: with a branch per key (exp only where visible, dropout's
         * multiplier) the compiler loaded the V tile ahead of the branches
         * and spilled it (AMDGPU) */
#pragma unroll
        for (int jj = 0; jj < FWD_KEYS; jj++) {
#pragma unroll
            for (int x = 0; x < FWD_COLS; x++)
                if (HAS_COL(FWD_SPLIT, part, x)) {
                    const float4 vv = vt[jj * D4 + part + FWD_SPLIT * x];
#pragma unroll
                    for (int i = 0; i < FWD_PER_ITEM; i++)
                        ov[i * FWD_COLS + x] += s[i * FWD_KEYS + jj] * vv;
                }
        }
    }
#pragma unroll
    for (int i = 0; i < FWD_PER_ITEM; i++) {
        const int t = t0 + r + i * FWD_SLOTS;
        const float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        if (t >= Tq) continue;
        STORE_SLICE(out + out_off + head_row(bh, H, Tq, t, o_ld), ov, i * FWD_COLS, inv, part,
                    FWD_SPLIT, FWD_COLS);
        if (part == 0) {
            const ulong row = (ulong)bh * Tq + t;
            stats[stats_off + 2 * row] = m[i];
            stats[stats_off + 2 * row + 1] = inv;
        }
    }
}

/* ------------------------------------------------------------------------- */
/* Backward: dQ (and D) per block of query rows                              */
/* ------------------------------------------------------------------------- */

#define DQ_COLS COLS(DQ_SPLIT)
/* The dK/dV kernel's slices of a row per slice here (the profile makes
 * DKV_SPLIT a multiple of DQ_SPLIT). */
#if DKV_SPLIT % DQ_SPLIT != 0
#error "DKV_SPLIT must be a multiple of DQ_SPLIT"
#endif
#define DQ_SHARES (DKV_SPLIT / DQ_SPLIT)
/* floats of the exchange: the tile's two sums per key and row an item
 * holds, or D's shares */
#define DQ_XS                                                                                  \
    (DQ_SPLIT > 1      ? 2 * DQ_KEYS * DQ_PER_ITEM * DQ_W                                      \
     : DKV_SPLIT > 1 ? DQ_SHARES * DQ_PER_ITEM * DQ_W                                        \
                       : 1)

/* dq (B*H, Tq, HEAD_DIM), or rows (dq_ld), overwritten; dsum[row] = D_row = dO_row . O_row
 * for the dK/dV kernel. An item holds the rows t0 + r + i * DQ_SLOTS,
 * i < DQ_PER_ITEM. */
__attribute__((reqd_work_group_size(DQ_W, 1, 1)))
kernel void flash_tiled_backward_dq(global float *dq, ulong dq_off, global float *dsum,
                                    ulong dsum_off, global const float *dout, ulong dout_off,
                                    global const float *out, ulong out_off,
                                    global const float *stats, ulong stats_off, TILED_INPUTS)
{
#define DQ_N (2 * DQ_KEYS * DQ_PER_ITEM) /* an item's dot products a tile */
    local float4 kt[DQ_KEYS * D4], vt[DQ_KEYS * D4];
    local int kf[DQ_KEYS];
    local float lm[DQ_ROWS], linv[DQ_ROWS], ld[DQ_ROWS];
    local float4 xs4[(DQ_XS + 3) / 4];
    local float dr[DQ_ROWS * (DQ_KEYS + 1)];
    local float *xs = (local float *)xs4;
    QUERY_BLOCK(DQ_ROWS, DQ_SPLIT);

    float4 qv[DQ_PER_ITEM * DQ_COLS], gv[DQ_PER_ITEM * DQ_COLS], dqv[DQ_PER_ITEM * DQ_COLS];
    float4 od[DQ_PER_ITEM], odk[DQ_PER_ITEM * DQ_SHARES];
#pragma unroll
    for (int i = 0; i < DQ_PER_ITEM; i++) {
        const int t = t0 + r + i * DQ_SLOTS;
        const ulong o_row = head_row(bh, H, Tq, t, o_ld);
        od[i] = (float4)(0.0f);
#pragma unroll
        for (int m = 0; m < DQ_SHARES; m++) odk[i * DQ_SHARES + m] = (float4)(0.0f);
#pragma unroll
        for (int x = 0; x < DQ_COLS; x++) {
            const int c = part + DQ_SPLIT * x, e = i * DQ_COLS + x;
            const bool here = t < Tq && HAS_COL(DQ_SPLIT, part, x);
            qv[e] = here ? load_col(q + q_off + head_row(bh, H, Tq, t, q_ld), c) : (float4)(0.0f);
            gv[e] = here ? load_col(dout + dout_off + o_row, c) : (float4)(0.0f);
            const float4 o = here ? load_col(out + out_off + o_row, c) : (float4)(0.0f);
            od[i] += gv[e] * o;
            odk[i * DQ_SHARES + x % DQ_SHARES] += gv[e] * o;
            dqv[e] = (float4)(0.0f);
        }
    }
    float sd[DQ_N]; /* per row: scores, then dO . v, per key of the tile */
#pragma unroll
    for (int i = 0; i < DQ_PER_ITEM; i++) sd[i] = hsum4(od[i]);
    ROWS_SUM(sd, DQ_PER_ITEM, xs, lid, DQ_W, DQ_SPLIT);
    /* D for the dK/dV kernel, added up in its order (its rows are split
     * over DKV_SPLIT items): with a lone key, O = v exactly, and its
     * dS = P (dO . v - D) is then exactly 0 there as here */
    float Dk[DQ_PER_ITEM];
#pragma unroll
    for (int i = 0; i < DQ_PER_ITEM; i++) Dk[i] = sd[i];
    if (DKV_SPLIT > 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
        for (int u = 0; u < DQ_PER_ITEM * DQ_SHARES; u++) xs[u * DQ_W + lid] = hsum4(odk[u]);
        barrier(CLK_LOCAL_MEM_FENCE);
        const int first = lid / DQ_SPLIT * DQ_SPLIT;
#pragma unroll
        for (int i = 0; i < DQ_PER_ITEM; i++) {
            float d = xs[i * DQ_SHARES * DQ_W + first];
#pragma unroll
            for (int p = 1; p < DKV_SPLIT; p++)
                d += xs[(i * DQ_SHARES + p / DQ_SPLIT) * DQ_W + first + p % DQ_SPLIT];
            Dk[i] = d;
        }
    }
    /* the rows' statistics go through local memory: kept in registers over
     * the tile loop's barriers, Intel's CPU compiler (2026.22) gave this
     * kernel wrong values of them (docs/DEVICES.md) */
#pragma unroll
    for (int i = 0; i < DQ_PER_ITEM; i++) {
        const int t = t0 + r + i * DQ_SLOTS, ri = r + i * DQ_SLOTS;
        const ulong row = (ulong)bh * Tq + t;
        if (t < Tq && part == 0) dsum[dsum_off + row] = Dk[i];
        if (part == 0) {
            lm[ri] = t < Tq ? stats[stats_off + 2 * row] : 0.0f;
            linv[ri] = t < Tq ? stats[stats_off + 2 * row + 1] : 0.0f;
            ld[ri] = sd[i];
        }
    }

    /* the key tile from j0 into kpre, vpre and this item's key flag fpre */
#define DQ_AHEAD AHEAD(DQ_KEYS, DQ_W)
    float kpre[FETCHES(DQ_KEYS, DQ_W)], vpre[FETCHES(DQ_KEYS, DQ_W)];
    int fpre = 0;
#define DQ_FETCH(j0)                                                                           \
    {                                                                                          \
        const int n_ = min(DQ_KEYS, Tk - (j0));                                                \
        FETCH_TILE(kpre, kb, kv_stride, j0, n_, DQ_KEYS, lid, DQ_W);                           \
        FETCH_TILE(vpre, vb, kv_stride, j0, n_, DQ_KEYS, lid, DQ_W);                           \
        fpre = lid < n_ && key_kept(kt_row, use_keys, (j0) + lid);                             \
    }
    if (DQ_AHEAD && kend > 0) DQ_FETCH(0);
    for (int j0 = 0; j0 < kend; j0 += DQ_KEYS) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the last tile's readers are done */
        if (DQ_AHEAD) {
            PUT_TILE((local float *)kt, kpre, DQ_KEYS, lid, DQ_W);
            PUT_TILE((local float *)vt, vpre, DQ_KEYS, lid, DQ_W);
            if (lid < DQ_KEYS) kf[lid] = fpre;
            if (drop)
                drop_tile(dr, DQ_ROWS, DQ_KEYS, (ulong)bh * Tq + t0, Tk, j0, drop_p, seed,
                          step, site, lid, DQ_W);
        } else {
            load_key_tile(kt, vt, kf, dr, DQ_KEYS, DQ_ROWS, kb, vb, kv_stride, kt_row, use_keys,
                          j0, Tk,
                          (ulong)bh * Tq + t0, drop_p, seed, step, site, lid, DQ_W);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (DQ_AHEAD && j0 + DQ_KEYS < kend) DQ_FETCH(j0 + DQ_KEYS); /* in flight */
        /* the tile's work without branches, as the forward's: exp(-inf) =
         * 0 for masked keys; rd[i * DQ_KEYS + jj] */
        DROP_MULTIPLIERS(rd, DQ_KEYS, DQ_PER_ITEM, r * (DQ_KEYS + 1), DQ_SLOTS * (DQ_KEYS + 1),
                         1);
        /* q . k, dO . v */
        PAIR_DOTS(sd, DQ_KEYS, DQ_PER_ITEM, qv, gv, kt, vt, part, DQ_SPLIT, DQ_COLS);
        ROWS_SUM(sd, DQ_N, xs, lid, DQ_W, DQ_SPLIT);
        /* unsplit rows: a barrier in the exchange's place, or the compiler
         * reuses the dot products' loads of K below and holds the whole
         * tile in registers (AMDGPU at dh 32: 256 VGPRs, 344 bytes spilled) */
        if (DQ_SPLIT == 1) barrier(CLK_LOCAL_MEM_FENCE);
        float M[DQ_PER_ITEM], inv[DQ_PER_ITEM], D[DQ_PER_ITEM];
#pragma unroll
        for (int i = 0; i < DQ_PER_ITEM; i++) {
            const int ri = r + i * DQ_SLOTS;
            M[i] = lm[ri], inv[i] = linv[ri], D[i] = ld[ri];
        }
#pragma unroll
        for (int jj = 0; jj < DQ_KEYS; jj++) {
            float ds[DQ_PER_ITEM];
#pragma unroll
            for (int i = 0; i < DQ_PER_ITEM; i++) {
                const int e = i * 2 * DQ_KEYS + jj;
                const bool visible =
                    (kf[jj] != 0) & (!causal | (j0 + jj <= q_pos0 + t0 + r + i * DQ_SLOTS));
                const float p = exp(visible ? sd[e] * scale - M[i] : -INFINITY) * inv[i];
                ds[i] = p * (rd[i * DQ_KEYS + jj] * sd[e + DQ_KEYS] - D[i]);
            }
#pragma unroll
            for (int x = 0; x < DQ_COLS; x++)
                if (HAS_COL(DQ_SPLIT, part, x)) {
                    const float4 kk = kt[jj * D4 + part + DQ_SPLIT * x];
#pragma unroll
                    for (int i = 0; i < DQ_PER_ITEM; i++) dqv[i * DQ_COLS + x] += ds[i] * kk;
                }
        }
    }
#pragma unroll
    for (int i = 0; i < DQ_PER_ITEM; i++) {
        const int t = t0 + r + i * DQ_SLOTS;
        if (t >= Tq) continue;
        STORE_SLICE(dq + dq_off + head_row(bh, H, Tq, t, dq_ld), dqv, i * DQ_COLS, scale, part,
                    DQ_SPLIT, DQ_COLS);
    }
}

/* ------------------------------------------------------------------------- */
/* Backward: dK and dV per block of key rows                                 */
/* ------------------------------------------------------------------------- */

#define DKV_COLS COLS(DKV_SPLIT)

/* dk, dv (B*H/group, Tk_cap, HEAD_DIM), or rows (dkv_ld; Tk_cap is Tk):
 * rows < Tk overwritten, the rest untouched; dsum from
 * flash_tiled_backward_dq. An item holds the keys j_first + rk + kk *
 * DKV_SLOTS, kk < DKV_PER_ITEM. */
__attribute__((reqd_work_group_size(DKV_W, 1, 1)))
kernel void flash_tiled_backward_dkv(global float *dk, ulong dk_off, global float *dv,
                                     ulong dv_off, global const float *dsum, ulong dsum_off,
                                     global const float *dout, ulong dout_off,
                                     global const float *stats, ulong stats_off, TILED_INPUTS)
{
#define DKV_N (2 * DKV_ROWS * DKV_PER_ITEM) /* an item's dot products a tile */
    local float4 qt[DKV_ROWS * D4], gt[DKV_ROWS * D4];
    local float lm[DKV_ROWS], linv[DKV_ROWS], ld[DKV_ROWS];
    local float4 xs4[DKV_SPLIT > 1 ? (DKV_N * DKV_W + 3) / 4 : 1];
    local float dr[DKV_ROWS * (DKV_KEYS + 1)];
    local float *xs = (local float *)xs4;
    const int lid = get_local_id(0), rk = lid / DKV_SPLIT, part = lid - rk * DKV_SPLIT;
    const int kvh = get_group_id(1), j_first = get_group_id(0) * DKV_KEYS;
    const int Hkv = H / group, b = kvh / Hkv, hk = kvh - b * Hkv;
    const bool drop = drop_p > 0.0f;
    const int q_stride = row_stride(q_ld), g_stride = row_stride(o_ld);

    float4 kr4[DKV_PER_ITEM * DKV_COLS], vr4[DKV_PER_ITEM * DKV_COLS];
    float4 dkv[DKV_PER_ITEM * DKV_COLS], dvv[DKV_PER_ITEM * DKV_COLS];
    bool kept[DKV_PER_ITEM];
#pragma unroll
    for (int kk = 0; kk < DKV_PER_ITEM; kk++) {
        const int j = j_first + rk + kk * DKV_SLOTS;
        const bool key_ok = j < Tk;
        kept[kk] = key_ok && key_kept(keys + keys_off + (ulong)b * key_ld, use_keys, j);
        const ulong kr = head_row(kvh, Hkv, Tk_cap, j, kv_ld);
#pragma unroll
        for (int x = 0; x < DKV_COLS; x++) {
            const int c = part + DKV_SPLIT * x, e = kk * DKV_COLS + x;
            const bool here = key_ok && HAS_COL(DKV_SPLIT, part, x);
            kr4[e] = here ? load_col(k + k_off + kr, c) : (float4)(0.0f);
            vr4[e] = here ? load_col(v + v_off + kr, c) : (float4)(0.0f);
            dkv[e] = dvv[e] = (float4)(0.0f);
        }
    }
    float sd[DKV_N]; /* per key: scores, then dO . v, per query of the tile */
    /* causal: query i sees key j when j <= q_pos0 + i, so the block's first
     * key is seen from query j_first - q_pos0 on */
    const int i_first = causal ? max(0, j_first - q_pos0) / DKV_ROWS * DKV_ROWS : 0;
    /* the query tile from i0 of the head (at qb and gb) into qpre, gpre
     * (its rows' statistics and D are read when it is stored: fetched ahead
     * too, they spilled at dh 96 on AMDGPU) */
#define DKV_AHEAD AHEAD(DKV_ROWS, DKV_W)
    float qpre[FETCHES(DKV_ROWS, DKV_W)], gpre[FETCHES(DKV_ROWS, DKV_W)];
#define DKV_FETCH(i0)                                                                          \
    {                                                                                          \
        const int n_ = min(DKV_ROWS, Tq - (i0));                                               \
        FETCH_TILE(qpre, qb, q_stride, i0, n_, DKV_ROWS, lid, DKV_W);                          \
        FETCH_TILE(gpre, gb, g_stride, i0, n_, DKV_ROWS, lid, DKV_W);                          \
    }
    for (int g = 0; g < group; g++) {
        const int bh = b * H + hk * group + g;
        const ulong head = (ulong)bh * Tq;
        global const float *qb = q + q_off + head_row(bh, H, Tq, 0, q_ld),
                           *gb = dout + dout_off + head_row(bh, H, Tq, 0, o_ld);
        if (DKV_AHEAD && i_first < Tq) DKV_FETCH(i_first);
        for (int i0 = i_first; i0 < Tq; i0 += DKV_ROWS) {
            barrier(CLK_LOCAL_MEM_FENCE);
            const int n = min(DKV_ROWS, Tq - i0);
            if (DKV_AHEAD) {
                PUT_TILE((local float *)qt, qpre, DKV_ROWS, lid, DKV_W);
                PUT_TILE((local float *)gt, gpre, DKV_ROWS, lid, DKV_W);
            } else {
                load_tile((local float *)qt, qb, q_stride, i0, n, DKV_ROWS, lid, DKV_W);
                load_tile((local float *)gt, gb, g_stride, i0, n, DKV_ROWS, lid, DKV_W);
            }
            if (lid < DKV_ROWS) {
                const bool ok = lid < n;
                const ulong row = head + i0 + lid;
                lm[lid] = ok ? stats[stats_off + 2 * row] : 0.0f;
                linv[lid] = ok ? stats[stats_off + 2 * row + 1] : 0.0f;
                ld[lid] = ok ? dsum[dsum_off + row] : 0.0f;
            }
            if (drop)
                drop_tile(dr, DKV_ROWS, DKV_KEYS, head + i0, Tk, j_first, drop_p, seed, step,
                          site, lid, DKV_W);
            barrier(CLK_LOCAL_MEM_FENCE);
            if (DKV_AHEAD && i0 + DKV_ROWS < Tq) DKV_FETCH(i0 + DKV_ROWS); /* in flight */
            /* the multipliers without branches, as in dQ: rd[kk * DKV_ROWS + ii] */
            DROP_MULTIPLIERS(rd, DKV_ROWS, DKV_PER_ITEM, rk, DKV_SLOTS, DKV_KEYS + 1);
            /* k . q, v . dO */
            PAIR_DOTS(sd, DKV_ROWS, DKV_PER_ITEM, kr4, vr4, qt, gt, part, DKV_SPLIT, DKV_COLS);
            ROWS_SUM(sd, DKV_N, xs, lid, DKV_W, DKV_SPLIT);
#pragma unroll
            for (int ii = 0; ii < DKV_ROWS; ii++) {
                float ds[DKV_PER_ITEM], pd[DKV_PER_ITEM];
#pragma unroll
                for (int kk = 0; kk < DKV_PER_ITEM; kk++) {
                    const int j = j_first + rk + kk * DKV_SLOTS, e = kk * 2 * DKV_ROWS + ii;
                    const float d = rd[kk * DKV_ROWS + ii];
                    const bool visible =
                        kept[kk] & (ii < n) & (!causal | (j <= q_pos0 + i0 + ii));
                    const float p =
                        exp(visible ? sd[e] * scale - lm[ii] : -INFINITY) * linv[ii];
                    ds[kk] = p * (d * sd[e + DKV_ROWS] - ld[ii]);
                    pd[kk] = p * d;
                }
#pragma unroll
                for (int x = 0; x < DKV_COLS; x++)
                    if (HAS_COL(DKV_SPLIT, part, x)) {
                        const int c = ii * D4 + part + DKV_SPLIT * x;
                        const float4 gg = gt[c], qq = qt[c];
#pragma unroll
                        for (int kk = 0; kk < DKV_PER_ITEM; kk++) {
                            dvv[kk * DKV_COLS + x] += pd[kk] * gg;
                            dkv[kk * DKV_COLS + x] += ds[kk] * qq;
                        }
                    }
            }
        }
    }
#pragma unroll
    for (int kk = 0; kk < DKV_PER_ITEM; kk++) {
        const int j = j_first + rk + kk * DKV_SLOTS;
        if (j >= Tk) continue;
        const ulong kw = head_row(kvh, Hkv, Tk_cap, j, dkv_ld);
        STORE_SLICE(dk + dk_off + kw, dkv, kk * DKV_COLS, scale, part, DKV_SPLIT, DKV_COLS);
        STORE_SLICE(dv + dv_off + kw, dvv, kk * DKV_COLS, 1.0f, part, DKV_SPLIT, DKV_COLS);
    }
}
