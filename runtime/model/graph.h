/*
 * The graph (internal): the activations of one batch and the passes over
 * them. Every tensor of a batch shape lives in one arena of a session
 * (session.h), sized for (B, S, T) and grown only when a batch needs more;
 * it spans as many device buffers as the device's largest allocation
 * requires (no tensor straddles two). Integer inputs of a batch (tokens,
 * labels, embedding indices) sit at the start of its first buffer so that
 * a step makes one upload. The passes read the
 * session's model (weights) and write its gradients.
 */
#ifndef CF_GRAPH_H
#define CF_GRAPH_H

#include "config.h"
#include "model.h"

#include <math.h>

typedef struct clformer_session cf_session;

/* The normalisation of one sublayer, for both orders:
 * pre-norm  y = x + drop(F(LN(x))): ln = LN(x), the input of F
 * post-norm y = LN(x + drop(F(x))): ln = x + drop(F(x)), the input of LN */
typedef struct {
    cf_view ln;          /* (N, d) */
    cf_view mean, rstd;  /* (N) */
    cf_view out;         /* (N, d): y, the residual stream after the sublayer */
} cf_sub_acts;

typedef struct {
    cf_view q;           /* self: packed (N, d + 2 kvd) Q|K|V (kvd = kv_heads * dh: d
                            without grouped-query attention); cross: (Nt, d) */
    cf_view kv;          /* cross only: (Ns, 2d) K|V of the memory */
    cf_view qh, kh, vh;  /* (B, H, Tq, dh), (B, kv_heads, Tk, dh), (B, kv_heads, Tk, dh) */
    cf_attention_saved saved;
    cf_view ctx_h;       /* (B, H, Tq, dh) */
    cf_view concat;      /* (N, d) heads merged: the input of out_proj */
    cf_view out;         /* (N, d) out_proj output, before dropout */
} cf_attn_acts;

typedef struct {
    cf_view pre;         /* (N, d_ff) linear1 without its bias; gated: the gate */
    cf_view act;         /* (N, d_ff) dropout(act(pre + b1)), gated dropout(silu(pre) *
                            up): the input of linear2 */
    cf_view out;         /* (N, d) linear2 output, before dropout */
    cf_view up;          /* gated: (N, d_ff) the up projection */
} cf_ffn_acts;

/* The most tensors (so runs) inside one layer that its backward reads (half_saved.c). */
#define CF_LAYER_SAVED_MAX 32

typedef struct {
    cf_sub_acts sub[3];  /* encoder and decoder-only: self-attn, ffn;
                            decoder: self-attn, cross-attn, ffn */
    cf_attn_acts self_attn, cross_attn;
    cf_ffn_acts ffn;
    /* half_saved: where the forward keeps what its backward reads, a view
     * per run of cf_layer_saved_runs (offsets in floats; a 16-bit run's
     * values start at twice that offset in 16-bit units) */
    cf_view saved[CF_LAYER_SAVED_MAX];
} cf_layer_acts;

/* Every tensor of one batch shape. N* are row counts: Ns = B*S, Nt = B*T. */
typedef struct {
    size_t B, S, T;      /* T: decoder input length (target length - 1) */
    const cf_blocks *blocks; /* the model's (family.h): what the layers hold */
    bool training;       /* saves what backward needs; dropout active */
    bool fused_attention; /* attention saves row statistics, not probabilities (ops.h) */
    bool tiled_attention; /* ... on the tiled kernels of GPUs (cf_attention_tiled) */
    bool gemm_backward;   /* ... and its backward by GEMMs over d_scores
                             (CLFORMER_ATTENTION=gemm-backward; training only) */
    bool cross;          /* decoder layers have cross-attention (false: decoder-only, S 0) */
    bool recompute;      /* keep only each layer's output: the tensors inside layers
                            share one scratch, and backward (when training) runs a
                            layer's forward again before its backward */
    bool half_saved;     /* a bf16/fp16 training batch without recompute: the tensors
                            inside layers share one scratch as under recompute, and
                            each layer's forward stores those its backward reads in
                            16 bits (statistics in fp32) for the backward to load
                            back (half_saved.c) */
    /* integer inputs (one upload) */
    cf_view src, tgt_in, labels;            /* (B,S), (B,T), (B,T) int32 */
    cf_embedding_index src_index, tgt_index;
    size_t ints;                            /* int32 elements at the arena's start */
    /* forward */
    cf_view src_emb, tgt_emb;               /* (Ns, d), (Nt, d) */
    cf_layer_acts *enc, *dec;
    cf_view memory, mem_mean, mem_rstd;     /* encoder.norm output (Ns, d) */
    cf_view dec_out, dec_mean, dec_rstd;    /* decoder.norm output (Nt, d) */
    cf_view logits;                         /* (Nt, V); backward overwrites it with dlogits */
    cf_view losses;                         /* (Nt) */
    /* backward workspace, shared by all layers (N = max(Ns, Nt)) */
    cf_view d_res;       /* (N, d) gradient of the residual stream */
    cf_view d_mem;       /* (Ns, d) gradient of the memory, summed over decoder layers */
    cf_view d_a, d_b, d_c; /* (N, d) scratch gradients */
    cf_view d_q;         /* (N, 3d) packed Q|K|V gradient; cross: dq (Nt, d) */
    cf_view d_kv;        /* (Ns, 2d) */
    cf_view d_qh, d_kh, d_vh, d_ctx_h; /* (B, H, T, dh) sized for max(S, T) */
    cf_view d_probs;     /* (B, H, Tmax, Tmax); fused attention: (B, H, Tmax), unless
                            gemm_backward */
    cf_view d_scores;    /* gemm_backward: (B, H, Tmax, Tmax), every layer's backward
                            computes its scores again into it */
    cf_view d_ff;        /* (N, d_ff) */
    cf_view d_up;        /* gated: (N, d_ff) the up projection's gradient */
    size_t total;        /* elements of the arena */
    size_t buffers;      /* device buffers it spans (arena.h) */
} cf_acts;

/* Whether a batch keeps the attention probabilities after dropout apart
 * from those before it: a training batch with any dropout. The layout
 * (acts.c) and the 16-bit stores (half_saved.c) must decide alike. */
static inline bool cf_acts_dropout(const cf_acts *a, const clformer_config *cfg)
{
    return a->training && cf_config_any_dropout(cfg);
}

/* Lays out the activations for a batch shape into the session's arena,
 * growing it when needed. training: keep what backward needs (and the
 * backward workspace). */
clformer_status cf_acts_prepare(cf_session *s, size_t B, size_t S, size_t T, bool training);

/* Whether a batch shape's attention takes the fused path under `path` on
 * `device` with global_mem_bytes of memory (auto: always where the profile
 * runs the tiled kernels; where host items run the fused path
 * (`fused_on_host`: the host provider, fp32 activations) from
 * CF_ATTENTION_HOST_FUSED_KEYS keys on; else when the unfused path's saved
 * probabilities would exceed a quarter of that memory, or
 * CLFORMER_ATTENTION_UNFUSED_MAX_BYTES where that is more, or one buffer). */
bool cf_attention_fused_for(clformer_attention_path path, const clformer_device_profile *device,
                            bool fused_on_host, uint64_t global_mem_bytes,
                            const clformer_config *cfg, size_t B, size_t S, size_t T,
                            bool training);
enum { CF_ATTENTION_HOST_FUSED_KEYS = 512 };

/*
 * Whether a batch shape's activations can exist on a device whose largest
 * allocation is max_alloc_bytes (capped at cf_buffer_max_bytes: under 2^31
 * floats), checked before anything is laid out: each
 * attention layer's scores (B x heads x L x L floats, L = max(S, T); with
 * `row_stats_only`, fused attention without a backward by GEMMs,
 * B x heads x L), the
 * logits (B x T x tgt_vocab) and the widest rows (B x L x max(3 d_model,
 * d_ff)) must each fit in size_t and in one buffer. Too large:
 * CLFORMER_ERR_OUT_OF_MEMORY naming the batch, the heads, the length and
 * the options that shrink them (cf_acts_prepare runs this first).
 */
clformer_status cf_acts_check_shape(const clformer_config *cfg, size_t max_alloc_bytes, size_t B,
                                    size_t S, size_t T, bool row_stats_only);

/* Whether a training batch's attention backward runs by GEMMs
 * (CLFORMER_ATTENTION=gemm-backward, cf_attention_saved.backward_scores):
 * on the fused path, except where the tiled kernels take grouped-query
 * heads as rows. */
bool cf_acts_gemm_backward(clformer_attention_path path, bool fused, bool tiled,
                           const clformer_config *cfg, const cf_blocks *blocks);

/* Tensors inside a layer that the layer's backward reads and that lie one
 * after another in the arena (each aligned as arena.h aligns): n elements
 * from start, padding between them included; stat: statistics, never
 * rounded, so kept in fp32. */
typedef struct {
    cf_view start;
    size_t n;
    bool stat;
} cf_saved_run;

/* The runs of layer l (of the decoder or the encoder) that its backward
 * reads, in a fixed order (the order of its `saved` views); their count. */
size_t cf_layer_saved_runs(cf_acts *a, const clformer_config *cfg, bool decoder, int l,
                           cf_saved_run out[CF_LAYER_SAVED_MAX]);

/* half_saved: after layer l's forward, its saved tensors from the scratch
 * into its store (16 bits; statistics fp32); before its backward, back. */
clformer_status cf_layer_store(cf_session *s, bool decoder, int l);
clformer_status cf_layer_load(cf_session *s, bool decoder, int l);

/* Dropout descriptor of site `site` at the model's current step (NULL when
 * the session's batch is not training or dropout is off). */
const cf_dropout *cf_session_dropout(const cf_session *s, uint32_t site, cf_dropout *storage);

/* Dropout site ids: unique per place in the model. */
enum { CF_SITE_SRC_EMBED = 0, CF_SITE_TGT_EMBED = 1 };
static inline uint32_t cf_site(int layer, int kind) { return 16u + (uint32_t)layer * 16u + (uint32_t)kind; }
enum { CF_SITE_ATTN_PROBS = 0, CF_SITE_ATTN_OUT = 1, CF_SITE_CROSS_PROBS = 2, CF_SITE_CROSS_OUT = 3,
       CF_SITE_FF_HIDDEN = 4, CF_SITE_FF_OUT = 5 };

/* The forward pass over the uploaded batch (cf_acts_prepare first):
 * encoder, decoder, generator; with `labels`, the loss (per-row losses in
 * acts.losses, their sum in the session's metrics[0] and, when training,
 * dlogits in place of the logits with grad_scale applied). */
clformer_status cf_forward(cf_session *s, bool with_loss, float grad_scale);

/* The encoder alone: embeddings, encoder blocks, encoder.norm -> acts.memory. */
clformer_status cf_forward_encoder(cf_session *s);

/* What one decoder block runs over. Training: all T positions of a batch,
 * keys and values split from this pass's projections into the acts' kh/vh
 * (pos 0, cap T). Decoding: one new position `pos` per row (T 1), or a
 * language model's prompt (positions pos .. pos+T-1); `cached` writes the
 * self-attention keys and values into the caches the acts' kh/vh point at
 * (capacity `cap` positions), and the cross-attention's kh/vh already hold
 * the projected memory (cf_cross_kv). A decoder-only model decoding a
 * batch of prompts has its rows at different positions: row_pos gives each
 * row's (T 1, pos their maximum) and key_mask which keys each row sees. */
typedef struct {
    size_t B, T, S;      /* rows, query positions, source positions */
    size_t pos, cap;     /* first query position; key capacity of the self-attention */
    bool cached;
    cf_view tgt_tokens;  /* (B, cap) the self-attention's key tokens (pads masked) */
    cf_view src_tokens;  /* (B, S) */
    cf_view memory;      /* (B*S, d) the encoder's output; unused when cached */
    cf_view key_mask;    /* decoder-only: (B, cap) ints, 0 where a key is hidden, or NONE */
    const size_t *row_pos; /* cached, T 1: row r's position (NULL: every row at pos) */
} cf_block_shape;

/* Encoder layer l over x (B*S, d) into the acts' enc[l]. */
clformer_status cf_encoder_block(cf_session *s, int l, cf_view x);

/* A LayerNorm a pre-norm sublayer computes with its residual sum, in one
 * kernel (bias_residual_layernorm_forward): where its output, mean and rstd
 * go (sub's ln, mean, rstd) and its parameters' offsets. */
typedef struct {
    const cf_sub_acts *sub;
    size_t nw, nb;
} cf_next_norm;

/* Whether the blocks of a pass chain their norms (cf_*_block_chained):
 * pre-norm, and every layer keeps its own activations (no recomputation,
 * no 16-bit saved layers, whose layers share one scratch). */
bool cf_chain_norms(const cf_session *s);

/* The blocks with their norms chained across blocks: `normed` says the
 * block before computed this block's input norm (into sub[0]); `next` (NULL:
 * none) is the norm after the block (the next block's input norm, or the
 * stack's final one), computed with the block's last residual. One launch
 * and one pass over the residual stream less per block; the same bits. */
clformer_status cf_encoder_block_chained(cf_session *s, int l, cf_view x, bool normed,
                                         const cf_next_norm *next);

/* Decoder layer l over x (B*T, d): self-attention, cross-attention and
 * feed-forward, each with its residual and LayerNorm, into L. The one
 * definition of the decoder block, for training and for decoding. */
clformer_status cf_decoder_block(cf_session *s, int l, const cf_layer_acts *L, cf_view x,
                                 const cf_block_shape *shape);
clformer_status cf_decoder_block_chained(cf_session *s, int l, const cf_layer_acts *L, cf_view x,
                                         const cf_block_shape *shape, bool normed,
                                         const cf_next_norm *next);

/* The shape of the decoder blocks of a training or evaluation batch: all
 * T positions of its rows at once. */
static inline cf_block_shape cf_batch_block_shape(const cf_acts *a)
{
    const cf_block_shape b = {a->B, a->T, a->S, 0, a->T, false, a->tgt_in, a->src, a->memory,
                              {NULL, 0}, NULL};
    return b;
}

/* The cross-attention keys and values of decoder layer l: memory (B*S, d)
 * projected into kv (B*S, 2d) and split into kh and vh (B, H, S, dh); with
 * kh.buf NULL not split (the attention reads kv's rows). */
clformer_status cf_cross_kv(cf_session *s, int l, cf_view memory, cf_view kv, cf_view kh,
                            cf_view vh, size_t B, size_t S);

/* An attention's Q, K and V as its op reads them in a pass without caches:
 * where the path takes rows (cf_attention_takes_rows), the projections'
 * rows themselves (self: a->q's d queries, kvd keys, kvd values; cross:
 * a->q, and a->kv's keys and values), their strides set in `shape`; else
 * the heads a->qh, a->kh, a->vh, which a split fills. */
void cf_attention_inputs(const cf_attn_acts *a, bool rows, bool cross, size_t d, size_t kvd,
                         cf_view *qh, cf_view *kh, cf_view *vh, cf_attention_shape *shape);

/* The normalisation the blocks use (LayerNorm, or RMSNorm, which writes
 * rstd alone) of N rows of x with the parameters at offsets w and b. */
clformer_status cf_norm_forward(cf_session *s, cf_view out, cf_view mean, cf_view rstd, cf_view x,
                                size_t w, size_t b, size_t N);

/* The target side's token embeddings of rows (B, T) at positions pos0 + t:
 * with the config's position table, none under rotary positions. pos0 > 0
 * (decoding) takes T 1 and no dropout. */
clformer_status cf_embed(cf_session *s, cf_view out, cf_view tokens, size_t B, size_t T,
                         size_t pos0, const cf_dropout *dropout);

/* Rotary positions (blocks.rope) in place on a self-attention's packed
 * projection rows (B, Tq, d + 2 kvd): the queries' heads and the keys' turned
 * by their positions, pos0 + t, or row_pos[r] + t (runs of rows at one
 * position); inverse: the backward's turn of their gradients. */
clformer_status cf_rotate(cf_session *s, cf_view qkv, size_t B, size_t Tq, size_t pos0,
                          const size_t *row_pos, bool inverse);

/* The session's rotary table (rotary.c) for a sequence of seq_len
 * positions: *rows positions of cos and sin (cf_rope_table), built again
 * only when dynamic scaling's angles change with seq_len. */
clformer_status cf_session_rope(cf_session *s, size_t seq_len, cf_view *table, size_t *rows);

/* The generator's product alone: logits = out W^T + b, N rows of out
 * already normed (by a chained stack's last block). */
clformer_status cf_generator_logits(cf_session *s, cf_view logits, cf_view out, size_t N);

/* decoder.norm and the generator: out = LN(x), logits = out W^T + b, N rows. */
clformer_status cf_generator_forward(cf_session *s, cf_view out, cf_view mean, cf_view rstd,
                                     cf_view x, cf_view logits, size_t N);

/* The index of a layer's feed-forward sublayer (its last): 2 after self-
 * and cross-attention, 1 after self-attention alone. */
static inline int cf_ffn_sub(bool cross) { return cross ? 2 : 1; }

/* The residual stream entering layer l of the encoder or decoder; l equal to
 * the layer count gives the stack's output (its final LayerNorm's input). */
static inline cf_view cf_layer_input(const cf_acts *a, bool decoder, int l)
{
    if (l == 0) return decoder ? a->tgt_emb : a->src_emb;
    return decoder ? a->dec[l - 1].sub[cf_ffn_sub(a->cross)].out : a->enc[l - 1].sub[1].out;
}

/* What token embeddings are multiplied by: sqrt(d_model) (the paper) or 1 (GPT-2). */
static inline float cf_embed_scale(const clformer_config *c)
{
    return c->scale_embed ? sqrtf((float)c->d_model) : 1.0f;
}

/* Backward through everything, accumulating into the model's grads (zero
 * them first). */
clformer_status cf_backward(cf_session *s);

#endif
