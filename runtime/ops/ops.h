/*
 * The Transformer's operations on the device: the contract between the model
 * (runtime/model/model.c) and the kernels (cl/<layer>.cl, runtime/ops/ops_<layer>.c).
 *
 * Conventions (llm.c, CLBlast):
 * - Tensors are cf_view (buffer, element offset). Row-major. Token ids and
 *   other integer tensors are int32 views.
 * - Arguments: outputs first, then inputs, then weights, then sizes.
 * - Forward functions overwrite their outputs.
 * - Backward functions ACCUMULATE (+=) into parameter gradients (dweight,
 *   dbias, dtable, ...) and state what they do with input gradients: each
 *   says "overwrites" or takes an `accumulate` flag.
 * - All work is enqueued on the context's in-order queue; nothing waits.
 * - Every function works for any sizes (tails handled), and sizes of 0 are
 *   no-ops. Reductions are deterministic: same device, same inputs, same bits.
 * - Profiling families (cf_launch): "embedding", "layernorm", "activation",
 *   "dropout", "residual", "attention", "loss", "optimizer", "reduce", "cast";
 *   GEMMs are "gemm".
 */
#ifndef CF_OPS_H
#define CF_OPS_H

#include "buffer.h"

/* ------------------------------------------------------------------------- */
/* Dropout: counter-based (Philox4x32-10, cl/common.h), so a mask is          */
/* recomputed in backward and is the same on every device.                   */
/* ------------------------------------------------------------------------- */

/* One dropout site of one training step. p == 0 (or a NULL pointer) means
 * identity. Element i of the site keeps with probability 1-p, decided by
 * dropout_uniform(seed, step, site, i) >= p, and is scaled by 1/(1-p). */
typedef struct {
    float p;
    uint64_t seed;
    uint32_t step;
    uint32_t site; /* unique per (layer, place) within the model */
} cf_dropout;

static inline bool cf_dropout_active(const cf_dropout *d) { return d && d->p > 0.0f; }

/* out = res + dropout(x), n elements. `out` may alias `res`. */
clformer_status cf_residual_dropout_forward(cf_ctx *ctx, cf_view out, cf_view res, cf_view x,
                                            size_t n, const cf_dropout *dropout);

/* dx = dropout_mask(dout): overwrites dx. (The residual branch's gradient is
 * dout itself.) dx may alias dout. */
clformer_status cf_dropout_backward(cf_ctx *ctx, cf_view dx, cf_view dout, size_t n,
                                    const cf_dropout *dropout);

/* out = a + b, n elements; out may alias a or b. */
clformer_status cf_add(cf_ctx *ctx, cf_view out, cf_view a, cf_view b, size_t n);

/* The end of a sublayer, fused (ops_residual_norm.c, cl/residual_norm.cl):
 * y = res + dropout(x + bias) over (N, C), bias (C) (bias.buf NULL: none),
 * with cf_residual_dropout_forward's mask. y may alias res or x. */
clformer_status cf_bias_residual_forward(cf_ctx *ctx, cf_view y, cf_view res, cf_view x,
                                         cf_view bias, size_t N, size_t C,
                                         const cf_dropout *dropout);

/* The same y, and out = LayerNorm(y) as cf_layernorm_forward computes it
 * (mean and rstd (N) saved), on y as stored. y and out may each alias res
 * or x, not each other. Their backward is cf_layernorm_backward adding into
 * y's gradient, cf_dropout_backward of that for x, cf_colsum for the bias. */
clformer_status cf_bias_residual_layernorm_forward(cf_ctx *ctx, cf_view y, cf_view out,
                                                   cf_view mean, cf_view rstd, cf_view res,
                                                   cf_view x, cf_view bias, cf_view weight,
                                                   cf_view lnbias, size_t N, size_t C, float eps,
                                                   const cf_dropout *dropout);

/* The same y, and out = RMSNorm(y) as cf_rmsnorm_forward computes it (rstd
 * (N) saved), on y as stored; the same aliasing rules. Their backward is
 * cf_rmsnorm_backward adding into y's gradient, then as above. */
clformer_status cf_bias_residual_rmsnorm_forward(cf_ctx *ctx, cf_view y, cf_view out,
                                                 cf_view rstd, cf_view res, cf_view x,
                                                 cf_view bias, cf_view weight, size_t N, size_t C,
                                                 float eps, const cf_dropout *dropout);

/* ------------------------------------------------------------------------- */
/* Embedding + positions                                                     */
/* ------------------------------------------------------------------------- */

/* out[b,t,:] = dropout(table[tokens[b,t],:] * scale + P[t,:]) for t < T.
 * P is the sinusoidal table computed on the device when pos_table.buf is
 * NULL (P[p,2i] = sin(p / 10000^(2i/C)), P[p,2i+1] = cos(same)), else the
 * learned table pos_table (max_len, C). Token ids must be validated on the
 * host (0 <= id < vocab) before upload. */
clformer_status cf_embedding_forward(cf_ctx *ctx, cf_view out, cf_view tokens, cf_view table,
                                     cf_view pos_table, size_t B, size_t T, size_t C,
                                     float scale, const cf_dropout *dropout);

/* The same without positions (models with rotary positions):
 * out[b,t,:] = dropout(table[tokens[b,t],:] * scale). */
clformer_status cf_embedding_forward_tokens(cf_ctx *ctx, cf_view out, cf_view tokens,
                                            cf_view table, size_t B, size_t T, size_t C,
                                            float scale, const cf_dropout *dropout);

/* Decoding: one token per row at position pos (out (B, C)), no dropout. */
clformer_status cf_embedding_forward_at(cf_ctx *ctx, cf_view out, cf_view tokens, cf_view table,
                                        cf_view pos_table, size_t B, size_t pos, size_t C,
                                        float scale);

/* Where each token id occurs, built on the host so that the backward
 * scatter-add is deterministic: unique[u] is the u-th distinct id (sorted),
 * and positions[starts[u] .. starts[u+1]) are its flat positions b*T+t in
 * increasing order. Sizes: unique n_unique, starts n_unique+1, positions n. */
typedef struct {
    cf_view unique;    /* int32 */
    cf_view starts;    /* int32 */
    cf_view positions; /* int32 */
    size_t n_unique;
} cf_embedding_index;

/* Host helper: fills unique/starts/positions from n tokens; returns n_unique. */
size_t cf_embedding_index_build(const int32_t *tokens, size_t n, int32_t *unique,
                                int32_t *starts, int32_t *positions);

/* dtable[id,:] += scale * sum over positions of id of g[pos,:], and
 * dpos_table[t,:] += sum over b of g[b,t,:] (skipped when dpos_table.buf is
 * NULL), where g = dropout_mask(dout). Deterministic. */
clformer_status cf_embedding_backward(cf_ctx *ctx, cf_view dtable, cf_view dpos_table,
                                      cf_view dout, const cf_embedding_index *index, size_t B,
                                      size_t T, size_t C, float scale,
                                      const cf_dropout *dropout);

/* ------------------------------------------------------------------------- */
/* LayerNorm over the last dimension                                         */
/* ------------------------------------------------------------------------- */

/* out = (inp - mean) * rstd * weight + bias per row; saves mean and rstd (N).
 * rstd = 1 / sqrt(var + eps), var the biased variance (PyTorch). */
clformer_status cf_layernorm_forward(cf_ctx *ctx, cf_view out, cf_view mean, cf_view rstd,
                                     cf_view inp, cf_view weight, cf_view bias, size_t N,
                                     size_t C, float eps);

/* dweight += sum_rows(dout * xhat), dbias += sum_rows(dout) (deterministic);
 * dinp = (or += when accumulate) the input gradient. dinp must not alias dout. */
clformer_status cf_layernorm_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dbias,
                                      cf_view dout, cf_view inp, cf_view weight, cf_view mean,
                                      cf_view rstd, size_t N, size_t C, bool accumulate);

/* RMSNorm over the last dimension (ops_rmsnorm.c): out = inp * rstd * weight
 * per row, rstd = 1 / sqrt(mean(inp^2) + eps) saved (N); no bias. */
clformer_status cf_rmsnorm_forward(cf_ctx *ctx, cf_view out, cf_view rstd, cf_view inp,
                                   cf_view weight, size_t N, size_t C, float eps);

/* dweight += sum_rows(dout * inp * rstd) (deterministic); dinp = (or += when
 * accumulate) the input gradient. dinp must not alias dout. */
clformer_status cf_rmsnorm_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dout,
                                    cf_view inp, cf_view weight, cf_view rstd, size_t N,
                                    size_t C, bool accumulate);

/* SiLU and SwiGLU, elementwise over n (ops_swiglu.c): silu(a) = a sigmoid(a),
 * swiglu(gate, up) = silu(gate) * up. Forward overwrites out; backward
 * overwrites (or += when accumulate) dx, or dgate and dup. An output may
 * alias an input of the same call element for element (not another output). */
clformer_status cf_silu_forward(cf_ctx *ctx, cf_view out, cf_view x, size_t n);
clformer_status cf_silu_backward(cf_ctx *ctx, cf_view dx, cf_view dout, cf_view x, size_t n,
                                 bool accumulate);
clformer_status cf_swiglu_forward(cf_ctx *ctx, cf_view out, cf_view gate, cf_view up, size_t n);
clformer_status cf_swiglu_backward(cf_ctx *ctx, cf_view dgate, cf_view dup, cf_view dout,
                                   cf_view gate, cf_view up, size_t n, bool accumulate);

/* ------------------------------------------------------------------------- */
/* Linear layers (GEMM through the context's provider) and activations     */
/* ------------------------------------------------------------------------- */

/* out (N, OC) = inp (N, IC) weight^T, the product alone: not rounded to
 * the storage precision, for a caller that adds the bias and rounds as it
 * moves the result (cf_split_qkv_to_caches). */
clformer_status cf_linear_product(cf_ctx *ctx, cf_view out, cf_view inp, cf_view weight,
                                  size_t N, size_t IC, size_t OC);

/* out (N, OC) = inp (N, IC) weight^T + bias; weight (OC, IC) as PyTorch
 * stores it; bias.buf NULL for none. */
clformer_status cf_linear_forward(cf_ctx *ctx, cf_view out, cf_view inp, cf_view weight,
                                  cf_view bias, size_t N, size_t IC, size_t OC);

/* dweight += dout^T inp; dbias += sum_rows(dout) (when dbias.buf is set);
 * dinp = (or += when accumulate) dout weight (skipped when dinp.buf is NULL). */
clformer_status cf_linear_backward(cf_ctx *ctx, cf_view dinp, cf_view dweight, cf_view dbias,
                                   cf_view dout, cf_view inp, cf_view weight, size_t N,
                                   size_t IC, size_t OC, bool accumulate);

/* The feed-forward's first layer: pre (N, OC) = inp (N, IC) weight^T and
 * out = dropout(act(pre + bias)), as cf_linear_forward without a bias and
 * cf_bias_act_forward give them (the same bits; tanh GELU's to fp32
 * rounding where fused). With ReLU or tanh GELU, with or without dropout,
 * and fp32 activations, where the provider fuses (cf_gemm_fuses), out is
 * the product's epilogue: no launch. */
clformer_status cf_linear_act_forward(cf_ctx *ctx, cf_view out, cf_view pre, cf_view inp,
                                      cf_view weight, cf_view bias, size_t N, size_t IC,
                                      size_t OC, clformer_activation act,
                                      const cf_dropout *dropout);

/* The backward of the layer after it, whose input (N, IC) was
 * cf_linear_act_forward's out = act(pre + pre_bias): dweight and dbias as
 * cf_linear_backward; dpre (N, IC) = the mask and act' applied to dout
 * weight (overwritten), and dpre_bias += its column sums: what
 * cf_linear_backward into dpre and cf_bias_act_backward in place give (the
 * same bits). Fused as cf_linear_act_forward is: act' is the product's
 * epilogue. */
clformer_status cf_linear_act_backward(cf_ctx *ctx, cf_view dpre, cf_view dweight,
                                       cf_view dbias, cf_view dpre_bias, cf_view dout,
                                       cf_view inp, cf_view weight, cf_view pre, cf_view pre_bias,
                                       size_t N, size_t IC, size_t OC, clformer_activation act,
                                       const cf_dropout *dropout);

/* out = dropout(act(inp + bias)) over (N, C), bias (C); GELU is the exact erf
 * form 0.5 x (1 + erf(x / sqrt 2)). out must not alias inp (backward needs inp). */
clformer_status cf_bias_act_forward(cf_ctx *ctx, cf_view out, cf_view inp, cf_view bias,
                                    size_t N, size_t C, clformer_activation act,
                                    const cf_dropout *dropout);

/* dinp = dropout_mask(dout) * act'(inp + bias): overwrites dinp (may alias
 * dout); dbias += sum_rows(dinp). */
clformer_status cf_bias_act_backward(cf_ctx *ctx, cf_view dinp, cf_view dbias, cf_view dout,
                                     cf_view inp, cf_view bias, size_t N, size_t C,
                                     clformer_activation act, const cf_dropout *dropout);

/* ------------------------------------------------------------------------- */
/* Multi-head scaled dot-product attention                                   */
/* ------------------------------------------------------------------------- */

/* Head-split layout "(B, H, T, dh)": element (b, h, t, j) of a per-head
 * tensor with row capacity T_cap lives at off + ((b*H + h)*T_cap + t)*dh + j.
 * T_cap = T except for decoding caches, which hold max_len rows. */

/* dst (B, H, T, dh) <- src rows: element (b, t, h*dh + j) at
 * src.off + (b*T + t)*ld + h*dh + j. Overwrites. */
clformer_status cf_split_heads(cf_ctx *ctx, cf_view dst, cf_view src, size_t ld, size_t B,
                               size_t T, size_t H, size_t dh);

/* dst rows (b, t, h*dh + j) at dst.off + (b*T + t)*ld + ... <- src (B, H, T, dh).
 * Overwrites those columns (others in the row are untouched). */
clformer_status cf_merge_heads(cf_ctx *ctx, cf_view dst, size_t ld, cf_view src, size_t B,
                               size_t T, size_t H, size_t dh);

/* One projection's queries, keys and values in one launch: each row holds
 * Hq query heads, then Hkv key heads, then Hkv value heads (dh floats each,
 * row stride ld); q (B, Hq, T, dh), k and v (B, Hkv, T, dh) <- those columns.
 * Hq = 0: keys and values alone (q is not used). */
clformer_status cf_split_qkv_heads(cf_ctx *ctx, cf_view q, cf_view k, cf_view v, cf_view src,
                                   size_t ld, size_t B, size_t T, size_t Hq, size_t Hkv,
                                   size_t dh);

/* cf_split_qkv_heads for one decoding step: the keys and values go into
 * caches of `cap` rows a head (B, Hkv, cap, dh), at rows pos..pos+T-1; q as
 * there. One launch where a split and two cache writes were three. With
 * `bias` (bias.buf not NULL: ld floats, one per column of src), src holds
 * the projection without its bias, which is added here and the sum
 * rounded to the context's storage precision: the bits cf_linear_forward's
 * bias add and rounding give, in this one launch. */
clformer_status cf_split_qkv_to_caches(cf_ctx *ctx, cf_view q, cf_view k_cache,
                                       cf_view v_cache, cf_view src, cf_view bias, size_t ld,
                                       size_t B, size_t T, size_t Hq, size_t Hkv, size_t dh,
                                       size_t cap, size_t pos);

/* The inverse: those columns of dst's rows <- q, k, v (others untouched). */
clformer_status cf_merge_qkv_heads(cf_ctx *ctx, cf_view dst, size_t ld, cf_view q, cf_view k,
                                   cf_view v, size_t B, size_t T, size_t Hq, size_t Hkv,
                                   size_t dh);

typedef struct {
    size_t B, H, dh;
    size_t Tq;       /* queries per (b, h) */
    size_t Tk;       /* keys per (b, h) in use */
    size_t Tk_cap;   /* row capacity of kh/vh per (b, h) (>= Tk) */
    size_t q_pos0;   /* position of the first query, for the causal mask */
    bool causal;     /* key j is masked for query t when j > q_pos0 + t */
    size_t key_ld;   /* row stride of key_tokens: key j of batch b is key_tokens[b*key_ld + j] */
    /* grouped-query attention: key/value heads, each shared by H / H_kv
     * consecutive query heads (query head h reads key/value head h /
     * (H / H_kv)); kh, vh, dkh and dvh are (B, H_kv, Tk_cap, dh). 0: H */
    size_t H_kv;
    /* Rows in place of heads, where cf_attention_takes_rows says so, so
     * that the products or the tiled kernels read and write the
     * projections' rows and no split or merge launch is needed around them.
     * out_rows: ctx_h, and the backward's dctx_h, are rows (B, Tq, H*dh),
     * head h in columns h*dh..h*dh+dh-1. dq_ld, dkv_ld (0: the head layout):
     * the backward's dqh is rows (B, Tq) and dkh, dvh rows (B, Tk) (Tk_cap
     * must be Tk) of that stride, (key/value) head h at column h*dh of the
     * view; other columns are not written, except that in 16-bit storage
     * every element from a view's first to its last is rounded (values
     * already stored in the format keep their bits). q_ld, kv_ld (0: the
     * head layout): qh is rows (B, Tq) and kh, vh rows (B, Tk) (Tk_cap must
     * be Tk) of that stride, read where dq_ld and dkv_ld write. */
    bool out_rows;
    size_t dq_ld, dkv_ld;
    size_t q_ld, kv_ld;
} cf_attention_shape;

/* Key/value heads of a shape, and query heads per key/value head (the
 * kernels' `group`). */
static inline size_t cf_attention_kv_heads(const cf_attention_shape *s)
{
    return s->H_kv ? s->H_kv : s->H;
}
static inline size_t cf_attention_group(const cf_attention_shape *s)
{
    return s->H / cf_attention_kv_heads(s);
}

/* Tensors the backward pass needs, filled by the forward pass. Two paths:
 * - unfused (stats.buf NULL): Q K^T and P V are strided-batched GEMMs around
 *   one mask+scale+softmax+dropout kernel; the probabilities are saved,
 *   O(B*H*Tq*Tk) floats.
 * - fused (stats.buf set; cl/flash_attention.cl): one kernel per query row
 *   computes the softmax and P V without storing P; only two numbers per
 *   row are saved, O(B*H*Tq), and the backward recomputes P from them and
 *   the output from `out`. probs and probs_drop are not used.
 * Both draw the same dropout mask and agree to fp32 rounding. */
typedef struct {
    cf_view probs;      /* (B, H, Tq, Tk) softmax(scores), before dropout */
    cf_view probs_drop; /* (B, H, Tq, Tk) after dropout; may equal probs when no dropout */
    cf_view stats;      /* fused: (B, H, Tq, 2) each row's maximum scaled score and the
                           reciprocal of its sum of exp(score - maximum) */
    cf_view out;        /* fused: the forward's ctx_h (rows with out_rows), which the
                           backward reads */
    cf_view key_tokens; /* fused: the forward's key_tokens, for the backward's masks */
    cf_view backward_scores; /* fused, optional: (B, H, Tq, Tk) floats of workspace (not
                                saved: the caller may share it between layers). Where set,
                                and the shape takes no grouped-query heads as rows, the
                                backward computes the scores again into it and runs the
                                unfused path's products and softmax kernel, not the fused
                                backward kernels (cf_attention_backward_by_gemm) */
} cf_attention_saved;

static inline bool cf_attention_fused(const cf_attention_saved *saved)
{
    return saved->stats.buf != NULL;
}

/* Whether the path takes rows in place of heads (cf_attention_shape's
 * out_rows, dq_ld, dkv_ld): the fused one on the tiled kernels (`tiled`:
 * cf_attention_tiled for the head size), and the unfused one without
 * grouped-query heads (H_kv 0 or H: its products take a group's query
 * heads as one block of rows); not the per-row fused kernels. The model
 * lays out and passes rows wherever it does. */
static inline bool cf_attention_takes_rows(bool fused, bool tiled, size_t H, size_t H_kv)
{
    return fused ? tiled : H_kv == 0 || H_kv == H;
}

/* Whether the fused path runs the tiled kernels of GPUs for head size dh
 * (cl/flash_attention_tiled.cl; the device profile has tiles for it),
 * rather than the per-row ones (cl/flash_attention.cl). */
bool cf_attention_tiled(cf_ctx *ctx, size_t dh);

/* Whether the fused path's backward runs by GEMMs for this shape, given
 * saved->backward_scores: not where grouped-query heads come as rows (the
 * unfused products take a group's query heads as one block of the head
 * layout). */
bool cf_attention_backward_by_gemm(const cf_attention_saved *saved, const cf_attention_shape *s);

/* ctx_h (B, H, Tq, dh) = dropout(softmax(qh kh^T / sqrt(dh) + mask)) vh.
 * Masks: key j of batch b is masked when key_tokens[b*key_ld + j] == 0 (pad)
 * or, if causal, when j > q_pos0 + t. Masked scores are -inf; a row whose
 * keys are all masked gives probabilities 0 and output 0, never NaN.
 * The path (fused or not) follows `saved`; with the fused one, saved->out
 * must be ctx_h and saved->key_tokens key_tokens. */
clformer_status cf_attention_forward(cf_ctx *ctx, cf_view ctx_h, const cf_attention_saved *saved,
                                     cf_view qh, cf_view kh, cf_view vh, cf_view key_tokens,
                                     const cf_attention_shape *shape, const cf_dropout *dropout);

/* Gradients in head-split layout, OVERWRITTEN: dqh (B,H,Tq,dh), dkh and dvh
 * (B,H_kv,Tk_cap,dh, rows < Tk written; a key/value head's gradient sums
 * over the query heads that share it). dprobs is workspace: (B,H,Tq,Tk)
 * floats on the unfused path and where the fused one runs by GEMMs
 * (cf_attention_backward_by_gemm), else (B,H,Tq) on the fused one. */
clformer_status cf_attention_backward(cf_ctx *ctx, cf_view dqh, cf_view dkh, cf_view dvh,
                                      cf_view dprobs, cf_view dctx_h,
                                      const cf_attention_saved *saved, cf_view qh, cf_view kh,
                                      cf_view vh, const cf_attention_shape *shape,
                                      const cf_dropout *dropout);

/* ------------------------------------------------------------------------- */
/* Rotary position embeddings (ops_rope.c), as transformers 4.36's Llama     */
/* ------------------------------------------------------------------------- */

/* Within each row of dh = 2*half values, elements i and i + half (i < half)
 * turn by the angle a(p, i) of the row's position p (rotate-half layout):
 *   out[i] = x[i] cos a - x[i+half] sin a,  out[i+half] = x[i+half] cos a + x[i] sin a.
 * a(p, i) = p' * inv_freq[i], inv_freq[i] = 1 / theta'^(2i/dh), in fp32 as
 * transformers rounds them (cf_rope_frequencies), where
 *   no scaling:  p' = p, theta' = theta;
 *   "linear":    p' = p / factor;
 *   "dynamic":   theta' = theta * (factor*L/M - (factor-1))^(dh/(dh-2)) once the
 *                sequence length L exceeds M = max_positions, else theta.
 * Dynamic NTK depends on L: transformers rebuilds its table with L = the
 * longest length the layer has seen (never shrinking) and keeps cached keys
 * turned with the older angles; a caller reproduces that by passing the same
 * seq_len. */
typedef enum { CF_ROPE_PLAIN, CF_ROPE_LINEAR, CF_ROPE_DYNAMIC } cf_rope_scaling;
typedef struct {
    size_t dh;              /* head size (even) */
    double theta;           /* rope_theta: 10000, 500000, ... */
    cf_rope_scaling scaling;
    double factor;          /* rope_scaling.factor (> 1) when scaling */
    size_t max_positions;   /* max_position_embeddings (dynamic's M) */
} cf_rope_config;

/* CLFORMER_ERR_INVALID_ARGUMENT naming the field when dh is odd or 0, theta
 * is not a positive finite number, a scaling's factor is not > 1, or dynamic
 * scaling has no max_positions or dh < 4 (transformers divides by dh - 2). */
clformer_status cf_rope_check_config(const cf_rope_config *cfg);

/* inv_freq[0..dh/2) for sequences of seq_len (cfg checked). */
void cf_rope_frequencies(float *inv_freq, const cf_rope_config *cfg, size_t seq_len);

/* The fp32 angle of (position, pair i) from cf_rope_frequencies' inv_freq. */
float cf_rope_angle(const float *inv_freq, const cf_rope_config *cfg, size_t position, size_t i);

/* The table the kernels read, host side: row p < rows holds cos a(p, i) for
 * i < dh/2, then sin a(p, i) (rows * dh floats). Upload it once per model
 * (again when a dynamic seq_len grows). */
clformer_status cf_rope_table(float *table, size_t rows, const cf_rope_config *cfg,
                              size_t seq_len);

/* Where element (b, h, t, j) of a tensor lives: off + b*b_stride +
 * h*h_stride + t*t_stride + j (j < dh contiguous). */
typedef struct {
    size_t b, h, t;
} cf_rope_strides;

/* Head-split (B, H, T_cap, dh), as attention and the KV cache hold it. */
static inline cf_rope_strides cf_rope_heads(size_t H, size_t T_cap, size_t dh)
{
    return (cf_rope_strides){H * T_cap * dh, T_cap * dh, dh};
}

/* Projection rows (B, T, ld) with head h at columns h*dh (ld >= H*dh, e.g.
 * the Q part of a fused QKV row). */
static inline cf_rope_strides cf_rope_rows(size_t T, size_t ld, size_t dh)
{
    return (cf_rope_strides){T * ld, dh, ld};
}

typedef struct {
    size_t B, H, T, dh; /* H: the tensor's heads (query heads, or key/value heads) */
    size_t pos0;        /* position of t = 0 (decoding with a KV cache) */
    size_t table_rows;  /* positions the table holds: pos0 + T <= table_rows */
    cf_rope_strides dst, src;
} cf_rope_shape;

/* out = rope(x) at positions pos0 + t. Overwrites out; out may be x with the
 * same strides (in place), and must not overlap it otherwise. In 16-bit
 * storage, out is stored rounded. */
clformer_status cf_rope_forward(cf_ctx *ctx, cf_view out, cf_view x, cf_view table,
                                const cf_rope_shape *shape);

/* dx = the inverse turn of dout (shape->dst describes dx, ->src dout).
 * Overwrites dx; the same aliasing rule. RoPE has no parameters. */
clformer_status cf_rope_backward(cf_ctx *ctx, cf_view dx, cf_view dout, cf_view table,
                                 const cf_rope_shape *shape);

/* ------------------------------------------------------------------------- */
/* Softmax cross-entropy over the vocabulary                                 */
/* ------------------------------------------------------------------------- */

/* For each row r < N of logits (N, V) with target y = targets[r]:
 *   q = (1 - ls) onehot(y) + ls / V,  loss_r = -sum_c q_c log softmax(logits_r)_c
 * (PyTorch CrossEntropyLoss with label_smoothing ls), and loss_r = 0 when
 * y == ignore_index. losses (N) is overwritten. When dlogits.buf is set,
 * dlogits_r = grad_scale * (softmax(logits_r) - q), and 0 for ignored rows;
 * dlogits may alias logits (the gradient replaces them). Targets must be
 * validated on the host. */
clformer_status cf_cross_entropy(cf_ctx *ctx, cf_view losses, cf_view dlogits, cf_view logits,
                                 cf_view targets, size_t N, size_t V, float label_smoothing,
                                 int ignore_index, float grad_scale);

/* ------------------------------------------------------------------------- */
/* Optimizer                                                                 */
/* ------------------------------------------------------------------------- */

typedef struct {
    float lr;
    float beta1, beta2, eps;
    float weight_decay;
    bool decoupled;        /* true: AdamW (p -= lr*wd*p); false: Adam with L2 (g += wd*p) */
    float bias_correction1; /* 1 - beta1^t */
    float bias_correction2; /* 1 - beta2^t */
} cf_adam_params;

/* grad_scale[0] = min(1, max_norm / (sqrt(norm_sq[0]) + 1e-6)) (PyTorch's
 * clip_grad_norm_); 1 when max_norm <= 0. One work item. */
clformer_status cf_clip_scale(cf_ctx *ctx, cf_view grad_scale, cf_view norm_sq, float max_norm);

/* One Adam/AdamW step over n elements of the flat buffers, PyTorch's formula:
 *   g = grad * grad_scale[0] (+ wd * p for Adam-L2, i < decay_end)
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
 *   p -= lr * wd * p  (AdamW, i < decay_end)
 *   p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
 * Weight decay applies only to elements [0, decay_end) (the model lays out
 * every rank-2 tensor first). grad_scale.buf NULL means 1. */
clformer_status cf_adam_update(cf_ctx *ctx, cf_view params, cf_view grads, cf_view m, cf_view v,
                               size_t n, size_t decay_end, cf_view grad_scale,
                               const cf_adam_params *hp);

/* ------------------------------------------------------------------------- */
/* Decoding helpers (greedy and beam search), in the "loss" family           */
/* ------------------------------------------------------------------------- */

/* out[r] (int32, N) = the column of the largest value of row r of logits
 * (N, V). The lowest index wins ties and NaN counts as the largest value
 * (torch.argmax), so the answer is the same on every device. */
clformer_status cf_argmax_rows(cf_ctx *ctx, cf_view out, cf_view logits, size_t N, size_t V);

/* out (N, V) = log_softmax(logits) per row: x - max - log(sum exp(x - max)).
 * Overwrites out; out may alias logits. */
clformer_status cf_log_softmax_rows(cf_ctx *ctx, cf_view out, cf_view logits, size_t N,
                                    size_t V);

/* ------------------------------------------------------------------------- */
/* Casts between fp32 and 16-bit storage (bf16, fp16), the "cast" family     */
/* ------------------------------------------------------------------------- */

/* out (out_type, n) = x (x_type, n) converted: one of the two types is
 * CLFORMER_FP32, the other BF16 or F16 (a 16-bit view's offset counts
 * 16-bit elements). To 16 bits rounds to nearest, ties to even, overflow to
 * infinity, NaN stays NaN (bf16: 0x7FC0); to fp32 is exact. Bit-exact on
 * every device (runtime/core/half.h gives the same on the host). Overwrites
 * out; out must not overlap x. */
clformer_status cf_cast(cf_ctx *ctx, cf_view out, clformer_precision out_type, cf_view x,
                        clformer_precision x_type, size_t n);

/* The gradient of cf_cast (x_type -> out_type), as PyTorch's autograd defines
 * it for .to(dtype): dx (x_type) = dout (out_type) converted back, the
 * identity through the change of type (rounding is not differentiated).
 * Overwrites dx, or adds to it when accumulate, which needs dx in fp32 (the
 * master gradients a 16-bit copy of the weights feeds). */
clformer_status cf_cast_backward(cf_ctx *ctx, cf_view dx, clformer_precision x_type, cf_view dout,
                                 clformer_precision out_type, size_t n, bool accumulate);

/* out (fp32, n) = x rounded to `precision`'s values, kept in fp32 (ties to
 * even, fp16 overflow to infinity, subnormals kept; exactly cf_cast there
 * and back). out may be x. FP32: a copy (or nothing, in place). */
clformer_status cf_round_storage(cf_ctx *ctx, cf_view out, cf_view x, size_t n,
                                 clformer_precision precision);

/* x (n elements) rounded in place to ctx->precision, the storage precision
 * of the pass being enqueued: every op wrapper calls it on each activation
 * (or activation gradient) it writes. Nothing when ctx->precision is FP32. */
clformer_status cf_round_activation(cf_ctx *ctx, cf_view x, size_t n);

#endif
