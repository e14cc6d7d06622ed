/*
 * Shared helpers for every kernel file. The build inlines this file where a
 * .cl says #include "common.h" (no include paths are given to the driver).
 *
 * Conventions: tensors are (global float *base, ulong off) pairs; sizes are
 * int; global sizes are rounded up by the host, so every kernel checks its
 * bounds. Options set by the host from the device profile
 * (runtime/device/profile.c): REDUCE_WG (work-group size of row reductions, a
 * power of two), GPU_LAYOUTS (1: work items laid out as on a GPU, see
 * attention.cl and reduce.cl), HAS_FP16, HAS_FP64.
 */
#ifndef CLFORMER_COMMON_H
#define CLFORMER_COMMON_H

#ifndef REDUCE_WG
#define REDUCE_WG 64
#endif
#ifndef GPU_LAYOUTS
#define GPU_LAYOUTS 0
#endif

/* Grouped-query attention: the key/value head (of B*H/group) that query
 * head bh (of B*H) reads, for cl/flash_attention.cl and
 * cl/flash_attention_tiled.cl. */
static inline int kv_head(int bh, int H, int group)
{
    const int b = bh / H;
    return b * (H / group) + (bh - b * H) / group;
}

/* Work-group sum of one value per work item, in a fixed order (a tree over
 * local ids), so results are identical run to run on a device. All work
 * items of the group must call it. `scratch` holds REDUCE_WG floats. */
static inline float wg_sum(float v, local float *scratch)
{
    const int lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = REDUCE_WG / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Work-group maximum; same contract as wg_sum. */
static inline float wg_max(float v, local float *scratch)
{
    const int lid = get_local_id(0);
    scratch[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = REDUCE_WG / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/*
 * Row kernels (layer norms, RMSNorm, residual + norm, a decoding step's
 * attention): a row per work-group of REDUCE_WG items on GPUs; a row per
 * work item on CPU devices, where a runtime runs a group's items as loops
 * cut at every barrier (about 2 us a row on PoCL). ROW_ITEMS items share a
 * row: ROW_LID() is an item's place in it, row_sum() the sum over them in a
 * fixed order and row_max() their maximum (an item alone keeps its own),
 * ROW_BARRIER() orders their global-memory accesses. The host launches
 * them with cf_row_grid (runtime/device/launch.h), rounding the items up on
 * CPU devices: there a kernel returns at once where ROW_PAST(row, rows).
 * GPUs get exactly a group per row, and no return ahead of their barriers
 * (PoCL crashed on one with GPU layouts forced).
 */
#if GPU_LAYOUTS
#define ROW_ITEMS REDUCE_WG
#define ROW_OF_ITEM() ((ulong)get_group_id(0))
#define ROW_LID() ((int)get_local_id(0))
#define ROW_PAST(row, rows) false
#define row_sum(v, scratch) wg_sum((v), (scratch))
#define row_max(v, scratch) wg_max((v), (scratch))
#define ROW_BARRIER() barrier(CLK_GLOBAL_MEM_FENCE)
#else
#define ROW_ITEMS 1
#define ROW_OF_ITEM() ((ulong)get_global_id(0))
#define ROW_LID() 0
#define ROW_PAST(row, rows) ((row) >= (ulong)(rows))
#define row_sum(v, scratch) (v)
#define row_max(v, scratch) (v)
#define ROW_BARRIER() ((void)0)
#endif

/*
 * ITEM_RUN, from the host's build options (program.c, cf_item_run): the
 * neighbouring elements or columns one work item takes in the kernels
 * launched with cf_run_grid (launch.h), 1 on GPUs (neighbouring items read
 * neighbouring memory), 16 on CPU devices, whose runtimes pay per work-group
 * and run one item's loop as scalar code. Column reductions (colsum_partial,
 * layernorm_backward_params) sum a run of columns in float8 runs, where a
 * single column's sum waited on every add (gpt-mini's bias gradients took 1.2
 * ms a step on PoCL, 0.3 in runs; the additions and their order are the
 * same, so are the bits); fills and copies (cl/tensor.cl) write a run each.
 */
#ifndef ITEM_RUN
#error "ITEM_RUN comes with the build options (runtime/device/program.c)"
#endif

/*
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3"), a counter-based generator: the bits for a counter depend only on
 * (key, counter), so a dropout mask is recomputed in backward instead of
 * stored, and every device draws the same mask. runtime/check/reference/ has the same code.
 */
static inline uint4 philox4x32_10(uint4 c, uint2 k)
{
    /* 64-bit products and an unrolled loop: together 4x faster on PoCL than
     * mul_hi in a loop (each alone gains less than 2x); same bits. */
#pragma unroll
    for (int r = 0; r < 10; r++) {
        const ulong p0 = (ulong)0xD2511F53u * c.x, p1 = (ulong)0xCD9E8D57u * c.z;
        const uint hi0 = (uint)(p0 >> 32), lo0 = (uint)p0;
        const uint hi1 = (uint)(p1 >> 32), lo1 = (uint)p1;
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

/* Uniform in [0, 1) with 24 bits, for element `index` of dropout site
 * `tensor` at training step `step`, under the 64-bit `seed`. */
static inline float dropout_uniform(ulong seed, uint step, uint tensor, ulong index)
{
    const uint4 ctr = (uint4)((uint)(index >> 2), (uint)(index >> 34), tensor, step);
    const uint4 r = philox4x32_10(ctr, (uint2)((uint)seed, (uint)(seed >> 32)));
    /* Word index & 3 of r, chosen by its two bits: Oclgrind 21.10 returned
     * the wrong word for a chain of == comparisons (for index >= 4). The
     * low bit first, on scalars: choosing the pair r.zw or r.xy first
     * compiled for NVPTX (clang 14) to a word of the key read from a
     * private array in local memory. */
    const uint w = (uint)(index & 3);
    const uint lo = (w & 1) ? r.y : r.x, hi = (w & 1) ? r.w : r.z;
    const uint bits = (w & 2) ? hi : lo;
    return (float)(bits >> 8) * (1.0f / 16777216.0f);
}

/* Dropout multiplier: 0 when dropped, 1/(1-p) when kept (p < 1). */
static inline float dropout_scale(float p, ulong seed, uint step, uint tensor, ulong index)
{
    if (p <= 0.0f) return 1.0f;
    return dropout_uniform(seed, step, tensor, index) < p ? 0.0f : 1.0f / (1.0f - p);
}

/* The multipliers of the four elements 4q .. 4q+3 of a dropout site: the
 * same values as dropout_scale of each (one Philox block holds the bits of
 * four consecutive elements), at a quarter of the cost. */
static inline float4 dropout_scale4(float p, ulong seed, uint step, uint tensor, ulong q)
{
    if (p <= 0.0f) return (float4)(1.0f);
    const uint4 r = philox4x32_10((uint4)((uint)q, (uint)(q >> 32), tensor, step),
                                  (uint2)((uint)seed, (uint)(seed >> 32)));
    const float4 u = convert_float4(r >> 8) * (1.0f / 16777216.0f);
    return select((float4)(1.0f / (1.0f - p)), (float4)(0.0f), u < (float4)(p));
}

/* The multipliers of elements 32g .. 32g+31 of a dropout site into m[0..31]:
 * the same values as dropout_scale4 of the eight Philox blocks 8g .. 8g+7,
 * computed together, one block per lane of 8-wide vectors. On CPU devices a
 * lone block runs as scalar code (PoCL vectorizes no work-item loop that
 * holds an inner loop), and Philox is most of an element-wise dropout
 * kernel's time. The lanes go out through private arrays, not shuffles
 * (Oclgrind 21.10's uninitialised checker crashes on those). Always
 * inlined: m is the caller's private array, which stays in registers only
 * in the caller's own code (NVPTX called a copy of this). */
static inline __attribute__((always_inline)) void dropout_scale32(float p, ulong seed, uint step,
                                                                  uint tensor, ulong g, float *m)
{
    if (p <= 0.0f) {
        for (int i = 0; i < 32; i++) m[i] = 1.0f;
        return;
    }
    const ulong8 q = (ulong8)(8 * g) + (ulong8)(0, 1, 2, 3, 4, 5, 6, 7);
    uint8 x = convert_uint8(q), y = convert_uint8(q >> 32), z = (uint8)(tensor), w = (uint8)(step);
    uint kx = (uint)seed, ky = (uint)(seed >> 32);
#pragma unroll
    for (int r = 0; r < 10; r++) { /* philox4x32_10's rounds, lane by lane */
        const ulong8 p0 = convert_ulong8(x) * (ulong8)(0xD2511F53u);
        const ulong8 p1 = convert_ulong8(z) * (ulong8)(0xCD9E8D57u);
        const uint8 hi0 = convert_uint8(p0 >> 32), lo0 = convert_uint8(p0);
        const uint8 hi1 = convert_uint8(p1 >> 32), lo1 = convert_uint8(p1);
        x = hi1 ^ y ^ (uint8)(kx);
        y = lo1;
        z = hi0 ^ w ^ (uint8)(ky);
        w = lo0;
        kx += 0x9E3779B9u;
        ky += 0xBB67AE85u;
    }
    const float8 keep = (float8)(1.0f / (1.0f - p)), drop = (float8)(0.0f), pv = (float8)(p);
    const float scale = 1.0f / 16777216.0f;
    float t[4][8];
    vstore8(select(keep, drop, convert_float8(x >> 8) * scale < pv), 0, t[0]);
    vstore8(select(keep, drop, convert_float8(y >> 8) * scale < pv), 0, t[1]);
    vstore8(select(keep, drop, convert_float8(z >> 8) * scale < pv), 0, t[2]);
    vstore8(select(keep, drop, convert_float8(w >> 8) * scale < pv), 0, t[3]);
    for (int j = 0; j < 8; j++)
        for (int k = 0; k < 4; k++) m[4 * j + k] = t[k][j];
}

/* The element-wise dropout kernels (activation, dropout, residual_norm)
 * give work item g the DROP_BLOCK elements DROP_BLOCK * g .. and their
 * multipliers (dropout_scale_block): 32 on CPU layouts, where eight Philox
 * blocks run together as 8-wide vectors (dropout_scale32); one block of 4
 * with GPU layouts, where neighbouring work items then read neighbouring
 * elements, and 32 multipliers in a private array took a GPU's registers or
 * went to off-chip memory. runtime/ops/dropout.h's cf_dropout_items counts
 * the work items. */
#if GPU_LAYOUTS
#define DROP_BLOCK 4
#else
#define DROP_BLOCK 32
#endif

/* A loop over a work item's elements k < count (count <= DROP_BLOCK) that
 * index a private array (the multipliers) by k. With GPU layouts it runs
 * DROP_BLOCK times, unrolled, skipping the elements past count: the array
 * stays in registers only where every index is a constant, and clang 14
 * unrolls no loop whose trip count it does not know. CPU layouts keep the
 * plain loop. Usage: FOR_BLOCK_ELEMENT(k, count) { ... } */
#if GPU_LAYOUTS
#define FOR_BLOCK_ELEMENT(k, count)                                                            \
    _Pragma("unroll") for (int k = 0; k < DROP_BLOCK; k++) if (k < (count))
#else
#define FOR_BLOCK_ELEMENT(k, count) for (int k = 0; k < (count); k++)
#endif

/* The multipliers of work item g's DROP_BLOCK elements into m[0 ..
 * DROP_BLOCK-1]: dropout_scale's values of elements DROP_BLOCK * g ... */
static inline __attribute__((always_inline)) void
dropout_scale_block(float p, ulong seed, uint step, uint tensor, ulong g, float *m)
{
#if GPU_LAYOUTS
    vstore4(dropout_scale4(p, seed, step, tensor, g), 0, m);
#else
    dropout_scale32(p, seed, step, tensor, g, m);
#endif
}

/* The bf16 bits of fp32 bits u: adding 0x7FFF plus the lowest kept bit
 * rounds the dropped 16 bits to nearest with ties to even, a carry into the
 * exponent being the right result (up to infinity); NaN gives 0x7FC0. */
static inline uint bf16_bits(uint u)
{
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC0u : (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

/*
 * Rounding fp32 values to a 16-bit format's values, kept in fp32 containers
 * (the numerics of 16-bit storage, docs/ARCHITECTURE.md "Half precision"):
 * the bits of x rounded to bf16 (precision 1) or fp16 (precision 2), to
 * nearest with ties to even, exactly as cast.cl's casts followed by the cast
 * back (NaN stays NaN; bf16's is 0x7FC00000); any other precision (fp32): x.
 * Integer and exact float arithmetic only, branch-free, so it is bit-exact
 * on every device and needs no extension:
 *   - bf16: bf16_bits, shifted back;
 *   - fp16: cast.cl's f16_bits's two roundings, but into fp32 bits directly:
 *     13 dropped bits rounded (above 65504: infinity), and below 2^-14
 *     (|x| + 0.5) - 0.5, the subtraction exact. Composing the two casts gave
 *     the same bits 1.5x slower on PoCL (fp16's `cast` family at bench
 *     --config small: 108-123 ms a step against 71-84).
 */
static inline uint round_storage_bits(uint u, int precision)
{
    const uint a = u & 0x7FFFFFFFu;
    const uint m = (a + 0xFFFu + ((a >> 13) & 1u)) & 0xFFFFE000u;
    const uint normal = m > 0x477FE000u ? 0x7F800000u : m;
    const uint subnormal = as_uint((as_float(a) + 0.5f) - 0.5f);
    const uint f16 = a > 0x7F800000u ? u : (u & 0x80000000u) | (a >= 0x38800000u ? normal : subnormal);
    return precision == 1 ? bf16_bits(u) << 16 : precision == 2 ? f16 : u;
}

/* A value as a kernel stores an activation of the pass (the op's
 * `precision` argument, the context's: 0 fp32, 1 bf16, 2 fp16), so that no
 * rounding launch follows the kernel. */
static inline float store_round(float x, int precision)
{
    return as_float(round_storage_bits(as_uint(x), precision));
}

/* The same for 4 and 16 lanes (a kernel's vstore paths); fp32 unchanged.
 * The lanes go out through a private array, as hsum4's do
 * (flash_attention_tiled.cl). */
static inline float4 store_round4(float4 x, int precision)
{
    if (precision == 0) return x;
    float t[4];
    vstore4(x, 0, t);
    for (int k = 0; k < 4; k++) t[k] = store_round(t[k], precision);
    return vload4(0, t);
}

static inline float16 store_round16(float16 x, int precision)
{
    if (precision == 0) return x;
    float t[16];
    vstore16(x, 0, t);
    for (int k = 0; k < 16; k++) t[k] = store_round(t[k], precision);
    return vload16(0, t);
}

#endif
