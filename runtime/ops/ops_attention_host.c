/*
 * The unfused attention path on the host provider's CPU devices as host
 * items (runtime/device/host_items.h): one item a (batch, key/value head),
 * which runs that head's products (the host provider's, one thread's each)
 * and its softmax between them, so that the head's scores and
 * probabilities (64 x 64 floats for gpt-mini, 16 KiB) stay in the core's
 * cache from the product that writes them to the one that reads them. The
 * same steps as ops_attention.c's batched GEMMs and cl/attention.cl's
 * softmax kernels (the comment there), in two launches where those are
 * three forward and five backward, each of those passes over all heads'
 * probabilities in memory.
 *
 * Taken with fp32 activations (cf_attention_host_takes); the saved
 * probabilities are written as the unfused path saves them. Dropout on the
 * probabilities takes the kernels' multipliers (host_philox.h, element
 * (row, j) of the site the flat index row * Tk + j, as attention_softmax
 * numbers them); backward reads which were dropped from the saved P_drop
 * (0 exactly where dropped or masked: a kept P > 0 times 1 / (1 - p) is
 * not 0), where attention_softmax_backward draws them again. exp is
 * host_exp.h's (within 2 ulp), the sums are the host's own order: the
 * results agree with the kernels' to fp32 rounding, not bit for bit.
 */
#include "attention_host.h"
#include "attention_operands.h"
#include "dropout.h"
#include "gemm.h"
#include "host_exp.h"
#include "host_items.h"
#include "host_philox.h"
#include "launch.h"

#include <math.h>
#include <string.h>

/* An operand as the items see it: buffer index into the items' addresses. */
typedef struct {
    int buf;
    size_t off, ld, batch_step, head_step;
} item_operand;

/* The buffers of a launch, each once (host_items.h takes them distinct). */
typedef struct {
    cl_mem mem[CF_HOST_ITEMS_MAX_BUFFERS];
    size_t n;
} buffer_set;

static int buffer_index(buffer_set *set, cl_mem mem)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->mem[i] == mem) return (int)i;
    set->mem[set->n] = mem;
    return (int)set->n++;
}

static item_operand operand(buffer_set *set, heads_operand x)
{
    return (item_operand){buffer_index(set, x.buf), x.off, x.ld, x.batch_step, x.head_step};
}

/* P, or dS: a key/value head's block of its group's M = G*Tq rows of Tk. */
static heads_operand probs_operand(cf_view x, const cf_attention_shape *sh)
{
    const size_t M = cf_attention_group(sh) * sh->Tq;
    return in_heads(x, sh->Tk, M * sh->Tk, cf_attention_kv_heads(sh));
}

/* The operands both directions read, as the unfused path lays them out. */
typedef struct {
    item_operand q, k, v, p;
} read_operands;

static read_operands shared_operands(buffer_set *set, const cf_attention_shape *sh, cf_view qh,
                                     cf_view kh, cf_view vh, cf_view probs)
{
    return (read_operands){operand(set, query_operand(qh, sh->q_ld, sh)),
                           operand(set, key_operand(kh, sh->kv_ld, sh)),
                           operand(set, key_operand(vh, sh->kv_ld, sh)),
                           operand(set, probs_operand(probs, sh))};
}

/* The matrix of operand x for (b, h). */
static float *at(float *const *address, const item_operand *x, size_t b, size_t h)
{
    return address[x->buf] + x->off + b * x->batch_step + h * x->head_step;
}

/* What every item needs of the shape. */
typedef struct {
    size_t heads;   /* key/value heads: an item is (item / heads, item % heads) */
    int M, Tq, Tk, dh; /* M = G*Tq query rows an item */
    int q_pos0, causal, use_keys, write_drop;
    size_t key_off, key_ld;
    int keys;       /* the key tokens' buffer index (use_keys) */
    float scale;
    cf_host_dropout drop; /* on the probabilities (p 0: none) */
} item_shape;

static item_shape shape_of(const cf_attention_shape *s, cf_view key_tokens,
                           const cf_dropout_args *drop, buffer_set *set)
{
    item_shape is = {cf_attention_kv_heads(s), (int)(cf_attention_group(s) * s->Tq), (int)s->Tq,
                     (int)s->Tk, (int)s->dh, (int)s->q_pos0, s->causal, key_tokens.buf != NULL,
                     0, key_tokens.off, s->key_ld, 0, 1.0f / sqrtf((float)s->dh),
                     *drop};
    if (is.use_keys) is.keys = buffer_index(set, key_tokens.buf);
    return is;
}

/* ------------------------------------------------------------------------- */
/* A row's softmax and its backward (cl/attention.cl's, on the host)         */
/* ------------------------------------------------------------------------- */

static bool visible(const int *keys, int j, int jmax) { return j < jmax && (!keys || keys[j]); }

/* x[0..Tk) = softmax(scale x) over keys j < jmax that are not padding
 * (keys[j] == 0), the others 0; every key masked: all 0. stats (NULL: not
 * wanted) gets the fused kernels' row statistics: the largest scaled score
 * (-inf where every key is masked) and 1 / the sum (0 there). */
static void softmax_row_portable(float *x, int Tk, int jmax, const int *keys, float scale,
                                 float *stats)
{
    float m = -INFINITY, s = 0.0f;
    for (int j = 0; j < jmax; j++)
        if (visible(keys, j, jmax)) m = fmaxf(m, x[j] * scale);
    for (int j = 0; j < Tk; j++) {
        x[j] = visible(keys, j, jmax) ? cf_exp_portable(x[j] * scale - m) : 0.0f;
        s += x[j];
    }
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    for (int j = 0; j < Tk; j++) x[j] *= inv;
    if (stats) stats[0] = m, stats[1] = inv;
}

/* g = p (g m - <g m, p>) scale in place, g m = g keep where pd != 0 (kept
 * and visible), else 0 (pd: P_drop; without dropout P itself, keep 1). */
static void softmax_backward_row_portable(float *g, const float *p, const float *pd, int Tk,
                                          float scale, float keep)
{
    float dot = 0.0f;
    for (int j = 0; j < Tk; j++) {
        g[j] = pd[j] != 0.0f ? (keep != 1.0f ? g[j] * keep : g[j]) : 0.0f;
        dot += g[j] * p[j];
    }
    for (int j = 0; j < Tk; j++) g[j] = p[j] * (g[j] - dot) * scale;
}

#ifdef CF_HOST_HAS_AVX512

/* lanes j..j+15 that are keys below jmax and not padding */
CF_AVX512F static __mmask16 visible16(const int *keys, int j, int jmax)
{
    __mmask16 m = cf_lanes16(jmax - j);
    if (keys && m)
        m = _mm512_mask_cmpneq_epi32_mask(m, _mm512_maskz_loadu_epi32(m, keys + j),
                                          _mm512_setzero_si512());
    return m;
}

CF_AVX512F static void softmax_row_avx512(float *x, int Tk, int jmax, const int *keys,
                                          float scale, float *stats)
{
    const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    __m512 vm = ninf;
    for (int j = 0; j < jmax; j += 16) {
        const __mmask16 v = visible16(keys, j, jmax);
        vm = _mm512_mask_max_ps(vm, v, vm, _mm512_mul_ps(_mm512_maskz_loadu_ps(v, x + j), vs));
    }
    const float m = _mm512_reduce_max_ps(vm);
    const __m512 mm = _mm512_set1_ps(m);
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < Tk; j += 16) {
        const __mmask16 in = cf_lanes16(Tk - j), v = visible16(keys, j, jmax);
        const __m512 e = _mm512_maskz_mov_ps(
            v, cf_exp16(_mm512_fmsub_ps(_mm512_maskz_loadu_ps(v, x + j), vs, mm)));
        sum = _mm512_add_ps(sum, e);
        _mm512_mask_storeu_ps(x + j, in, e);
    }
    const float s = _mm512_reduce_add_ps(sum), r = s > 0.0f ? 1.0f / s : 0.0f;
    const __m512 inv = _mm512_set1_ps(r);
    for (int j = 0; j < Tk; j += 16) {
        const __mmask16 in = cf_lanes16(Tk - j);
        _mm512_mask_storeu_ps(x + j, in, _mm512_mul_ps(_mm512_maskz_loadu_ps(in, x + j), inv));
    }
    if (stats) stats[0] = m, stats[1] = r;
}

CF_AVX512F static void softmax_backward_row_avx512(float *g, const float *p, const float *pd,
                                                  int Tk, float scale, float keep)
{
    const __m512 zero = _mm512_setzero_ps(), vk = _mm512_set1_ps(keep);
    __m512 dot = zero;
    for (int j = 0; j < Tk; j += 16) {
        const __mmask16 in = cf_lanes16(Tk - j);
        const __m512 pj = _mm512_maskz_loadu_ps(in, p + j);
        const __mmask16 nz =
            _mm512_mask_cmp_ps_mask(in, _mm512_maskz_loadu_ps(in, pd + j), zero, _CMP_NEQ_UQ);
        __m512 gj = _mm512_maskz_loadu_ps(nz, g + j);
        if (keep != 1.0f) gj = _mm512_mul_ps(gj, vk);
        dot = _mm512_fmadd_ps(gj, pj, dot);
        _mm512_mask_storeu_ps(g + j, in, gj);
    }
    const __m512 d = _mm512_set1_ps(_mm512_reduce_add_ps(dot)), vs = _mm512_set1_ps(scale);
    for (int j = 0; j < Tk; j += 16) {
        const __mmask16 in = cf_lanes16(Tk - j);
        const __m512 pj = _mm512_maskz_loadu_ps(in, p + j);
        const __m512 gj = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, g + j), d);
        _mm512_mask_storeu_ps(g + j, in, _mm512_mul_ps(_mm512_mul_ps(pj, gj), vs));
    }
}

#endif

static void softmax_row(float *x, int Tk, int jmax, const int *keys, float scale, float *stats)
{
#ifdef CF_HOST_HAS_AVX512
    if (cf_host_avx512()) {
        softmax_row_avx512(x, Tk, jmax, keys, scale, stats);
        return;
    }
#endif
    softmax_row_portable(x, Tk, jmax, keys, scale, stats);
}

static void softmax_backward_row(float *g, const float *p, const float *pd, int Tk, float scale,
                                 float keep)
{
#ifdef CF_HOST_HAS_AVX512
    if (cf_host_avx512()) {
        softmax_backward_row_avx512(g, p, pd, Tk, scale, keep);
        return;
    }
#endif
    softmax_backward_row_portable(g, p, pd, Tk, scale, keep);
}

/* pd[j] = p[j] m_j where p[j] != 0, else 0: the multipliers of the site's
 * elements first .. first + Tk, in chunks, drawn only below jmax (the keys
 * past a causal limit have p 0) */
static void drop_row(float *pd, const float *p, int Tk, int jmax, const cf_host_dropout *drop,
                     uint64_t first)
{
    enum { CHUNK = 256 };
    float m[CHUNK];
    for (int j0 = 0; j0 < jmax; j0 += CHUNK) {
        const int w = jmax - j0 < CHUNK ? jmax - j0 : CHUNK;
        cf_host_dropout_scales(drop, first + (uint64_t)j0, (size_t)w, m);
        for (int j = 0; j < w; j++) pd[j0 + j] = p[j0 + j] != 0.0f ? p[j0 + j] * m[j] : 0.0f;
    }
    for (int j = jmax; j < Tk; j++) pd[j] = 0.0f;
}

/* The key tokens of batch b (NULL without padding masks). */
static const int *item_keys(const item_shape *s, float *const *address, size_t b)
{
    return s->use_keys ? (const int *)address[s->keys] + s->key_off + b * s->key_ld : NULL;
}

/* Row r of an item's probabilities: softmax in place of its scores `row`
 * (stats: as softmax_row); where pd is given, P after dropout into it, or
 * a copy without dropout. The item's rows are the dropout site's rows
 * item * M + r, as the kernels number them. */
static void row_probabilities(const item_shape *s, const int *keys, size_t item, int r,
                              float *row, float *pd, float *stats)
{
    const int t = r % s->Tq;
    const int jmax = s->causal && s->q_pos0 + t + 1 < s->Tk ? s->q_pos0 + t + 1 : s->Tk;
    softmax_row(row, s->Tk, jmax, keys, s->scale, stats);
    if (pd && s->drop.p > 0.0f)
        drop_row(pd, row, s->Tk, jmax, &s->drop,
                 ((uint64_t)item * (uint64_t)s->M + (uint64_t)r) * (uint64_t)s->Tk);
    else if (pd)
        memcpy(pd, row, sizeof(float) * (size_t)s->Tk);
}

/* ------------------------------------------------------------------------- */
/* Forward                                                                   */
/* ------------------------------------------------------------------------- */

typedef struct {
    item_shape s;
    read_operands x;
    item_operand o, pd;
} forward_args;

/* S = Q K^T into P, softmax in place, P_drop (P after dropout, or its copy)
 * beside it, O = P_drop V */
static void forward_item(const void *args, float *const *address, size_t item, int thread)
{
    (void)thread;
    const forward_args *a = args;
    const item_shape *s = &a->s;
    const size_t b = item / s->heads, h = item % s->heads;
    float *p = at(address, &a->x.p, b, h);
    cf_host_product(false, true, s->M, s->Tk, s->dh, 1.0f, at(address, &a->x.q, b, h),
                    (int)a->x.q.ld, at(address, &a->x.k, b, h), (int)a->x.k.ld, 0.0f, p, s->Tk);
    const int *keys = item_keys(s, address, b);
    float *pd = s->write_drop ? at(address, &a->pd, b, h) : NULL;
    for (int r = 0; r < s->M; r++)
        row_probabilities(s, keys, item, r, p + (size_t)r * s->Tk,
                          pd ? pd + (size_t)r * s->Tk : NULL, NULL);
    cf_host_product(false, false, s->M, s->dh, s->Tk, 1.0f, pd ? pd : p, s->Tk,
                    at(address, &a->x.v, b, h), (int)a->x.v.ld, 0.0f, at(address, &a->o, b, h),
                    (int)a->o.ld);
}

bool cf_attention_host_runs(const cf_ctx *ctx, clformer_precision precision)
{
    return cf_gemm_fuses(ctx) && precision == CLFORMER_FP32;
}

bool cf_attention_host_takes(const cf_ctx *ctx, const cf_attention_shape *s)
{
    return cf_attention_host_runs(ctx, ctx->precision) && s->Tq <= INT32_MAX &&
           s->Tk <= INT32_MAX && cf_attention_group(s) * s->Tq <= INT32_MAX;
}

/* 2 * 2 * M * Tk * dh per item: the two products of a direction's pass */
static uint64_t products_flop(const item_shape *s, size_t items, int products)
{
    return (uint64_t)items * (uint64_t)products * 2u * (uint64_t)s->M * (uint64_t)s->Tk *
           (uint64_t)s->dh;
}

clformer_status cf_attention_host_forward(cf_ctx *ctx, cf_view out, cf_view probs,
                                          cf_view probs_drop, cf_view qh, cf_view kh, cf_view vh,
                                          cf_view key_tokens, const cf_attention_shape *shape,
                                          const cf_dropout *dropout)
{
    const cf_attention_shape *sh = shape;
    buffer_set set = {.n = 0};
    forward_args a = {.x = shared_operands(&set, sh, qh, kh, vh, probs)};
    a.o = operand(&set, query_operand(out, out_ld(sh), sh));
    a.pd = a.x.p;
    const bool write_drop = probs_drop.buf != probs.buf || probs_drop.off != probs.off;
    if (write_drop) a.pd = operand(&set, probs_operand(probs_drop, sh));
    cf_dropout_args drop;
    CF_TRY(cf_dropout_args_of(dropout, "cf_attention_forward", &drop));
    a.s = shape_of(sh, key_tokens, &drop, &set);
    a.s.write_drop = write_drop;
    const size_t items = sh->B * a.s.heads, M = (size_t)a.s.M, scores = items * M * sh->Tk;
    const size_t q_rows = items * M * sh->dh, kv_rows = items * sh->Tk * sh->dh;
    /* Q, K, V read, O written, P (and its copy) written */
    const uint64_t bytes = cf_f32_bytes(2 * q_rows + 2 * kv_rows + (write_drop ? 2 : 1) * scores);
    return cf_host_items(ctx, "attention", forward_item, &a, sizeof a, set.mem, set.n, items,
                         bytes, products_flop(&a.s, items, 2));
}

/* ------------------------------------------------------------------------- */
/* Backward                                                                  */
/* ------------------------------------------------------------------------- */

typedef struct {
    item_shape s;
    read_operands x;
    item_operand pd, dout, ds, dq, dk, dv;
} backward_args;

/* dV = P_drop^T dO; dP_drop = dO V^T into dS's place, dS in place; dQ = dS K,
 * dK = dS^T Q */
static void backward_item(const void *args, float *const *address, size_t item, int thread)
{
    (void)thread;
    const backward_args *a = args;
    const item_shape *s = &a->s;
    const size_t b = item / s->heads, h = item % s->heads;
    const float *p = at(address, &a->x.p, b, h), *pd = at(address, &a->pd, b, h),
                *dout = at(address, &a->dout, b, h);
    float *ds = at(address, &a->ds, b, h);
    const float keep = s->drop.p > 0.0f ? 1.0f / (1.0f - s->drop.p) : 1.0f;
    cf_host_product(true, false, s->Tk, s->dh, s->M, 1.0f, pd, s->Tk, dout, (int)a->dout.ld, 0.0f,
                    at(address, &a->dv, b, h), (int)a->dv.ld);
    cf_host_product(false, true, s->M, s->Tk, s->dh, 1.0f, dout, (int)a->dout.ld,
                    at(address, &a->x.v, b, h), (int)a->x.v.ld, 0.0f, ds, s->Tk);
    for (int r = 0; r < s->M; r++) {
        const size_t row = (size_t)r * s->Tk;
        softmax_backward_row(ds + row, p + row, pd + row, s->Tk, s->scale, keep);
    }
    cf_host_product(false, false, s->M, s->dh, s->Tk, 1.0f, ds, s->Tk, at(address, &a->x.k, b, h),
                    (int)a->x.k.ld, 0.0f, at(address, &a->dq, b, h), (int)a->dq.ld);
    cf_host_product(true, false, s->Tk, s->dh, s->M, 1.0f, ds, s->Tk, at(address, &a->x.q, b, h),
                    (int)a->x.q.ld, 0.0f, at(address, &a->dk, b, h), (int)a->dk.ld);
}

clformer_status cf_attention_host_backward(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                           cf_view dprobs, cf_view dout, cf_view probs,
                                           cf_view probs_drop, cf_view qh, cf_view kh, cf_view vh,
                                           const cf_attention_shape *shape,
                                           const cf_dropout *dropout)
{
    const cf_attention_shape *sh = shape;
    buffer_set set = {.n = 0};
    backward_args a = {.x = shared_operands(&set, sh, qh, kh, vh, probs)};
    a.pd = cf_dropout_active(dropout) ? operand(&set, probs_operand(probs_drop, sh)) : a.x.p;
    a.dout = operand(&set, query_operand(dout, out_ld(sh), sh));
    a.ds = operand(&set, probs_operand(dprobs, sh));
    a.dq = operand(&set, query_operand(dqh, sh->dq_ld, sh));
    a.dk = operand(&set, key_operand(dkh, sh->dkv_ld, sh));
    a.dv = operand(&set, key_operand(dvh, sh->dkv_ld, sh));
    cf_dropout_args drop;
    CF_TRY(cf_dropout_args_of(dropout, "cf_attention_backward", &drop));
    a.s = shape_of(sh, (cf_view){NULL, 0}, &drop, &set);
    const size_t items = sh->B * a.s.heads, M = (size_t)a.s.M, scores = items * M * sh->Tk;
    const size_t q_rows = items * M * sh->dh, kv_rows = items * sh->Tk * sh->dh;
    /* Q, dO read, dQ written; K, V read, dK, dV written; P (and P_drop) read, dS written */
    const uint64_t bytes = cf_f32_bytes(3 * q_rows + 4 * kv_rows +
                                        (cf_dropout_active(dropout) ? 3 : 2) * scores);
    return cf_host_items(ctx, "attention", backward_item, &a, sizeof a, set.mem, set.n, items,
                         bytes, products_flop(&a.s, items, 4));
}

/* ------------------------------------------------------------------------- */
/* The fused path's host form: no probabilities kept                         */
/* ------------------------------------------------------------------------- */

/* The fused path (its saved tensors: the output and two statistics a row)
 * as host items, the same steps as the unfused ones above over a chunk of
 * an item's query rows at a time: the chunk's scores, probabilities after
 * dropout and their gradients live in the running thread's part of a
 * scratch buffer (three CHUNK_FLOATS blocks), so a batch keeps no
 * B x H x Tq x Tk tensor, and the backward computes them again (five
 * products where the unfused backward runs four). Chunks of 1 MiB ran as
 * fast as these (gpt-mini at 256 to 1,024 keys, PoCL). */
enum { CHUNK_FLOATS = 1 << 16 }; /* 256 KiB: 64 query rows of 1,024 keys */

typedef struct {
    item_shape s;
    item_operand q, k, v, o, dout, dq, dk, dv;
    int stats, scratch; /* buffer indices: the row statistics (forward), the threads' scratch */
    size_t stats_off;
    int rows; /* query rows a chunk */
} fused_args;

/* Query rows a chunk: as many as CHUNK_FLOATS of scores hold, at most M. */
static int chunk_rows(int M, int Tk)
{
    const int r = CHUNK_FLOATS / (Tk > 0 ? Tk : 1);
    return r < 1 ? 1 : r < M ? r : M;
}

static size_t scratch_per_thread(int rows, int Tk) { return 3 * (size_t)rows * (size_t)Tk; }

/* P of the item's query rows r0 .. r0 + n (their S = Q K^T, then softmax)
 * into p, and P after dropout into pd (pd == p without dropout); the row
 * statistics where stats is given (the item's first row's). */
static void chunk_probabilities(const fused_args *a, float *const *address, size_t item,
                                int r0, int n, float *p, float *pd, float *stats)
{
    const item_shape *s = &a->s;
    const size_t b = item / s->heads, h = item % s->heads;
    cf_host_product(false, true, n, s->Tk, s->dh, 1.0f,
                    at(address, &a->q, b, h) + (size_t)r0 * a->q.ld, (int)a->q.ld,
                    at(address, &a->k, b, h), (int)a->k.ld, 0.0f, p, s->Tk);
    const int *keys = item_keys(s, address, b);
    for (int i = 0, r = r0; i < n; i++, r++)
        row_probabilities(s, keys, item, r, p + (size_t)i * s->Tk,
                          pd != p ? pd + (size_t)i * s->Tk : NULL,
                          stats ? stats + 2 * (size_t)r : NULL);
}

/* The thread's three blocks of the scratch: P, P_drop (P without dropout), dS. */
static void chunk_blocks(const fused_args *a, float *const *address, int thread, float **p,
                         float **pd, float **ds)
{
    float *mine = address[a->scratch] + (size_t)thread * scratch_per_thread(a->rows, a->s.Tk);
    const size_t block = (size_t)a->rows * (size_t)a->s.Tk;
    *p = mine;
    *pd = a->s.drop.p > 0.0f ? mine + block : mine;
    *ds = mine + 2 * block;
}

/* O = P_drop V, chunk by chunk, and the row statistics */
static void fused_forward_item(const void *args, float *const *address, size_t item, int thread)
{
    const fused_args *a = args;
    const item_shape *s = &a->s;
    const size_t b = item / s->heads, h = item % s->heads;
    float *p, *pd, *ds;
    chunk_blocks(a, address, thread, &p, &pd, &ds);
    float *stats = address[a->stats] + a->stats_off + 2 * item * (size_t)s->M;
    for (int r0 = 0; r0 < s->M; r0 += a->rows) {
        const int n = s->M - r0 < a->rows ? s->M - r0 : a->rows;
        chunk_probabilities(a, address, item, r0, n, p, pd, stats);
        cf_host_product(false, false, n, s->dh, s->Tk, 1.0f, pd, s->Tk,
                        at(address, &a->v, b, h), (int)a->v.ld, 0.0f,
                        at(address, &a->o, b, h) + (size_t)r0 * a->o.ld, (int)a->o.ld);
    }
}

/* Per chunk: P and P_drop again; dV += P_drop^T dO; dP_drop = dO V^T into
 * dS's place, dS in place; dQ = dS K; dK += dS^T Q */
static void fused_backward_item(const void *args, float *const *address, size_t item, int thread)
{
    const fused_args *a = args;
    const item_shape *s = &a->s;
    const size_t b = item / s->heads, h = item % s->heads;
    float *p, *pd, *ds;
    chunk_blocks(a, address, thread, &p, &pd, &ds);
    const float keep = s->drop.p > 0.0f ? 1.0f / (1.0f - s->drop.p) : 1.0f;
    const float *q = at(address, &a->q, b, h), *k = at(address, &a->k, b, h),
                *v = at(address, &a->v, b, h), *dout = at(address, &a->dout, b, h);
    float *dq = at(address, &a->dq, b, h), *dk = at(address, &a->dk, b, h),
          *dv = at(address, &a->dv, b, h);
    const int q_ld = (int)a->q.ld, dout_ld = (int)a->dout.ld;
    for (int r0 = 0; r0 < s->M; r0 += a->rows) {
        const int n = s->M - r0 < a->rows ? s->M - r0 : a->rows;
        const float beta = r0 ? 1.0f : 0.0f; /* dK and dV sum over the chunks */
        const float *dout_c = dout + (size_t)r0 * a->dout.ld, *q_c = q + (size_t)r0 * a->q.ld;
        chunk_probabilities(a, address, item, r0, n, p, pd, NULL);
        cf_host_product(true, false, s->Tk, s->dh, n, 1.0f, pd, s->Tk, dout_c, dout_ld, beta, dv,
                        (int)a->dv.ld);
        cf_host_product(false, true, n, s->Tk, s->dh, 1.0f, dout_c, dout_ld, v, (int)a->v.ld,
                        0.0f, ds, s->Tk);
        for (int i = 0; i < n; i++) {
            const size_t row = (size_t)i * s->Tk;
            softmax_backward_row(ds + row, p + row, pd + row, s->Tk, s->scale, keep);
        }
        cf_host_product(false, false, n, s->dh, s->Tk, 1.0f, ds, s->Tk, k, (int)a->k.ld, 0.0f,
                        dq + (size_t)r0 * a->dq.ld, (int)a->dq.ld);
        cf_host_product(true, false, s->Tk, s->dh, n, 1.0f, ds, s->Tk, q_c, q_ld, beta, dk,
                        (int)a->dk.ld);
    }
}

/* The arguments both directions share (the others zero): the operands,
 * the shape, the threads' scratch (cf_scratch: this op is a leaf). */
static clformer_status fused_args_of(cf_ctx *ctx, buffer_set *set, fused_args *a,
                                     const cf_attention_shape *sh, cf_view qh, cf_view kh,
                                     cf_view vh, cf_view key_tokens, const cf_dropout *dropout,
                                     const char *fn)
{
    memset(a, 0, sizeof *a);
    a->q = operand(set, query_operand(qh, sh->q_ld, sh));
    a->k = operand(set, key_operand(kh, sh->kv_ld, sh));
    a->v = operand(set, key_operand(vh, sh->kv_ld, sh));
    cf_dropout_args drop;
    CF_TRY(cf_dropout_args_of(dropout, fn, &drop));
    a->s = shape_of(sh, key_tokens, &drop, set);
    a->rows = chunk_rows(a->s.M, a->s.Tk);
    cl_mem scratch;
    CF_TRY(cf_scratch(ctx, (size_t)cf_host_items_threads() * scratch_per_thread(a->rows, a->s.Tk),
                      &scratch));
    a->scratch = buffer_index(set, scratch);
    return CLFORMER_OK;
}

clformer_status cf_attention_host_forward_fused(cf_ctx *ctx, cf_view out, cf_view stats,
                                                cf_view qh, cf_view kh, cf_view vh,
                                                cf_view key_tokens,
                                                const cf_attention_shape *shape,
                                                const cf_dropout *dropout)
{
    const cf_attention_shape *sh = shape;
    buffer_set set = {.n = 0};
    fused_args a;
    CF_TRY(fused_args_of(ctx, &set, &a, sh, qh, kh, vh, key_tokens, dropout,
                         "cf_attention_forward"));
    a.o = operand(&set, query_operand(out, out_ld(sh), sh));
    a.stats = buffer_index(&set, stats.buf);
    a.stats_off = stats.off;
    const size_t items = sh->B * a.s.heads, rows = items * (size_t)a.s.M;
    /* Q, K, V read, O written, two statistics a row */
    const uint64_t bytes =
        cf_f32_bytes(2 * rows * sh->dh + 2 * items * sh->Tk * sh->dh + 2 * rows);
    return cf_host_items(ctx, "attention", fused_forward_item, &a, sizeof a, set.mem, set.n,
                         items, bytes, products_flop(&a.s, items, 2));
}

clformer_status cf_attention_host_backward_fused(cf_ctx *ctx, cf_view dqh, cf_view dkh,
                                                 cf_view dvh, cf_view dout, cf_view qh,
                                                 cf_view kh, cf_view vh, cf_view key_tokens,
                                                 const cf_attention_shape *shape,
                                                 const cf_dropout *dropout)
{
    const cf_attention_shape *sh = shape;
    buffer_set set = {.n = 0};
    fused_args a;
    CF_TRY(fused_args_of(ctx, &set, &a, sh, qh, kh, vh, key_tokens, dropout,
                         "cf_attention_backward"));
    a.dout = operand(&set, query_operand(dout, out_ld(sh), sh));
    a.dq = operand(&set, query_operand(dqh, sh->dq_ld, sh));
    a.dk = operand(&set, key_operand(dkh, sh->dkv_ld, sh));
    a.dv = operand(&set, key_operand(dvh, sh->dkv_ld, sh));
    const size_t items = sh->B * a.s.heads, rows = items * (size_t)a.s.M;
    /* Q, dO read, dQ written; K, V read, dK, dV written */
    const uint64_t bytes = cf_f32_bytes(3 * rows * sh->dh + 4 * items * sh->Tk * sh->dh);
    /* the model's four products, as the tally counts them (not the scores again) */
    return cf_host_items(ctx, "attention", fused_backward_item, &a, sizeof a, set.mem, set.n,
                         items, bytes, products_flop(&a.s, items, 4));
}
