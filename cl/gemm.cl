/*
 * clformer's own matrix product, the "tiled" GEMM provider
 * (runtime/device/gemm_tiled.c launches it): C = alpha op(A) op(B) + beta C
 * for row-major matrices, a batch of them along the grid's third dimension.
 *
 * A work-group computes a GM x GN block of C; each of its (GN/WN) x (GM/WM)
 * items computes WM x WN outputs held in registers: runs of 4 rows and 4
 * columns, the item's runs GM/(WM/4) rows (GN/(WN/4) columns) apart, so that
 * the items of a warp read local memory as consecutive float4s (or all the
 * same one). The k dimension goes by GK at a time: the group stores its
 * GM x GK slice of op(A) and GK x GN slice of op(B) in local memory k-major,
 * then every item does WM x WN multiply-adds a step from (WM + WN) / 4
 * float4 reads of local memory (8 x 8 an item: 4 reads, 0.25 floats a
 * multiply-add; a GPU's shared memory then keeps up with its FMA units with
 * room to spare, where 16 scalar reads just matched them on NVIDIA's
 * counts). The next slices are loaded from global memory into registers
 * while the current ones are used. The global loads are coalesced whichever
 * way A and B are stored (TRANS_A, TRANS_B): consecutive items read
 * consecutive addresses; the local rows are padded by 4 floats (float4
 * alignment kept), so a transposing store meets at most 2 items a bank.
 *
 * Every output is summed over k in order, one multiply-add (fma) at a time,
 * by one item: the same bits on every run of a device. A block past the
 * edge of C reads A's last row and B's last column again where its rows and
 * columns lie outside (load_slices), elements past k are loaded as 0, and
 * outputs outside C are not written; beta 0 never reads C (it may hold NaN). The result is fma(alpha, sum, beta * C), the
 * way clang contracts CLBlast's alpha * sum + beta * C, so that on PoCL and
 * Intel's runtime both give the same bits and the GEMM search may choose
 * either (runtime/device/gemm_search.h).
 *
 * Build options: GM, GN, GK, WM, WN (WM and WN multiples of 4 dividing GM
 * and GN, and the items dividing GM * GK and GN * GK), TRANS_A, TRANS_B (0
 * or 1).
 */
#include "common.h"

/* Remainders are written x - x / y * y: LLVM 14 turns a matching x / y,
 * x % y pair into that form behind a `freeze`, which Oclgrind 21.10's
 * uninitialised-value checker cannot execute. */

#if !defined(GM) || !defined(GN) || !defined(GK) || !defined(WM) || !defined(WN) ||               \
    !defined(TRANS_A) || !defined(TRANS_B)
#error "gemm.cl needs GM, GN, GK, WM, WN, TRANS_A and TRANS_B (runtime/device/gemm_tiled.c)"
#endif

#define TX (GN / WN)      /* items along a row of the block */
#define TY (GM / WM)      /* items along a column */
#define ITEMS (TX * TY)
#define A_LOADS (GM * GK / ITEMS) /* elements of op(A)'s slice each item loads */
#define B_LOADS (GN * GK / ITEMS)
#define AS_LD (GM + 4) /* local row of op(A)'s slice: one k, GM rows of A, padded */
#define BS_LD (GN + 4)
#define RUN_ROWS (TY * 4) /* rows between an item's runs of 4 */
#define RUN_COLS (TX * 4)

#if WM % 4 || WN % 4 || GM % WM || GN % WN || (GM * GK) % ITEMS || (GN * GK) % ITEMS
#error "gemm.cl: WM and WN must be multiples of 4 dividing GM and GN, the items GM*GK and GN*GK"
#endif

/* Element p of this item's share of op(A)'s slice: its row r and k index kk
 * within the slice (consecutive items take consecutive addresses of A as
 * stored); b_element likewise for op(B)'s column col. */
static inline void a_element(int me, int p, int *r, int *kk)
{
    const int e = me + p * ITEMS;
#if TRANS_A /* A stored k x m: rows of op(A) are contiguous */
    *kk = e / GM, *r = e - *kk * GM;
#else
    *r = e / GK, *kk = e - *r * GK;
#endif
}

static inline void b_element(int me, int p, int *col, int *kk)
{
    const int e = me + p * ITEMS;
#if TRANS_B /* B stored n x k: k is contiguous */
    *col = e / GK, *kk = e - *col * GK;
#else
    *kk = e / GN, *col = e - *kk * GN;
#endif
}

/* Where element (row, at) of op(A), or (at, col) of op(B), is stored. */
#if TRANS_A /* A stored k x m */
#define A_AT(row, at) ((size_t)(at) * (size_t)lda + (size_t)(row))
#else
#define A_AT(row, at) ((size_t)(row) * (size_t)lda + (size_t)(at))
#endif
#if TRANS_B /* B stored n x k */
#define B_AT(at, col) ((size_t)(col) * (size_t)ldb + (size_t)(at))
#else
#define B_AT(at, col) ((size_t)(at) * (size_t)ldb + (size_t)(col))
#endif

/* This item's elements of the slices of op(A) and op(B) that start at k0,
 * from the offsets of its elements within a slice (a_at, b_at). A row of
 * op(A) past m (a column of op(B) past n) was given the last one's offsets:
 * it feeds only outputs that are not written, so it needs no check, and a
 * slice inside k is an add and a load an element (on a GPU a checked load is
 * a compare and a branch around it, as many instructions again). Past k the
 * elements are 0: they would be added into every output. */
static inline void load_slices(global const float *a, int lda, global const float *b, int ldb,
                               int k, int k0, int me, const size_t a_at[A_LOADS],
                               const size_t b_at[B_LOADS], float ra[A_LOADS], float rb[B_LOADS])
{
    global const float *a_slice = a + A_AT(0, k0), *b_slice = b + B_AT(k0, 0);
    if (k0 + GK <= k) {
#pragma unroll
        for (int p = 0; p < A_LOADS; p++) ra[p] = a_slice[a_at[p]];
#pragma unroll
        for (int p = 0; p < B_LOADS; p++) rb[p] = b_slice[b_at[p]];
        return;
    }
#pragma unroll
    for (int p = 0; p < A_LOADS; p++) {
        int r, kk;
        a_element(me, p, &r, &kk);
        ra[p] = k0 + kk < k ? a_slice[a_at[p]] : 0.0f;
    }
#pragma unroll
    for (int p = 0; p < B_LOADS; p++) {
        int col, kk;
        b_element(me, p, &col, &kk);
        rb[p] = k0 + kk < k ? b_slice[b_at[p]] : 0.0f;
    }
}

__attribute__((reqd_work_group_size(TX, TY, 1)))
kernel void gemm_tiled(global const float *a, ulong a_off, int lda, ulong a_stride,
                       global const float *b, ulong b_off, int ldb, ulong b_stride,
                       global float *c, ulong c_off, int ldc, ulong c_stride, int m, int n, int k,
                       float alpha, float beta)
{
    local float4 as4[GK * AS_LD / 4];
    local float4 bs4[GK * BS_LD / 4];
    local float *as = (local float *)as4, *bs = (local float *)bs4;
    const int tx = (int)get_local_id(0), ty = (int)get_local_id(1), me = ty * TX + tx;
    const int n0 = (int)get_group_id(0) * GN, m0 = (int)get_group_id(1) * GM;
    const size_t item = get_global_id(2); /* the product of the batch */
    a += a_off + item * a_stride;
    b += b_off + item * b_stride;
    c += c_off + item * c_stride;

    float4 acc[WM][WN / 4]; /* acc[4 r + q][g]: row q of row run r, column run g */
#pragma unroll
    for (int i = 0; i < WM; i++)
#pragma unroll
        for (int g = 0; g < WN / 4; g++) acc[i][g] = (float4)(0.0f);
    /* where this item's elements of a slice lie from its first element */
    size_t a_at[A_LOADS], b_at[B_LOADS];
#pragma unroll
    for (int p = 0; p < A_LOADS; p++) {
        int r, kk;
        a_element(me, p, &r, &kk);
        a_at[p] = A_AT(min(m0 + r, m - 1), kk);
    }
#pragma unroll
    for (int p = 0; p < B_LOADS; p++) {
        int col, kk;
        b_element(me, p, &col, &kk);
        b_at[p] = B_AT(kk, min(n0 + col, n - 1));
    }
    float ra[A_LOADS], rb[B_LOADS];
    load_slices(a, lda, b, ldb, k, 0, me, a_at, b_at, ra, rb);

    for (int k0 = 0; k0 < k; k0 += GK) {
        barrier(CLK_LOCAL_MEM_FENCE); /* every item is done with the last slices */
#pragma unroll
        for (int p = 0; p < A_LOADS; p++) {
            int r, kk;
            a_element(me, p, &r, &kk);
            as[kk * AS_LD + r] = ra[p];
        }
#pragma unroll
        for (int p = 0; p < B_LOADS; p++) {
            int col, kk;
            b_element(me, p, &col, &kk);
            bs[kk * BS_LD + col] = rb[p];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (k0 + GK < k) /* the next slices, in flight while these are used */
            load_slices(a, lda, b, ldb, k, k0 + GK, me, a_at, b_at, ra, rb);
#pragma unroll
        for (int kk = 0; kk < GK; kk++) {
            float4 fa[WM / 4], fb[WN / 4];
#pragma unroll
            for (int g = 0; g < WM / 4; g++) fa[g] = as4[(kk * AS_LD + g * RUN_ROWS) / 4 + ty];
#pragma unroll
            for (int g = 0; g < WN / 4; g++) fb[g] = bs4[(kk * BS_LD + g * RUN_COLS) / 4 + tx];
#pragma unroll
            for (int r = 0; r < WM / 4; r++)
#pragma unroll
                for (int g = 0; g < WN / 4; g++) {
                    acc[4 * r][g] = fma((float4)(fa[r].x), fb[g], acc[4 * r][g]);
                    acc[4 * r + 1][g] = fma((float4)(fa[r].y), fb[g], acc[4 * r + 1][g]);
                    acc[4 * r + 2][g] = fma((float4)(fa[r].z), fb[g], acc[4 * r + 2][g]);
                    acc[4 * r + 3][g] = fma((float4)(fa[r].w), fb[g], acc[4 * r + 3][g]);
                }
        }
    }

#pragma unroll
    for (int r = 0; r < WM / 4; r++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int row = m0 + r * RUN_ROWS + ty * 4 + q;
            if (row >= m) break;
#pragma unroll
            for (int g = 0; g < WN / 4; g++) {
                float v[4];
                vstore4(acc[4 * r + q][g], 0, v);
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int col = n0 + g * RUN_COLS + tx * 4 + j;
                    if (col >= n) break;
                    const size_t at = (size_t)row * (size_t)ldc + (size_t)col;
                    c[at] = beta == 0.0f ? alpha * v[j] : fma(alpha, v[j], beta * c[at]);
                }
            }
        }
}
