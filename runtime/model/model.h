/*
 * The model object and its activation arena (internal).
 *
 * Buffers (llm.c): params, grads, adam_m and adam_v share one layout
 * (params.h); every activation of a batch lives in one arena sized for
 * (B, S, T) and grown only when a batch needs more. Integer inputs of a
 * batch (tokens, labels, embedding indices) sit at the arena's start so that
 * a step makes one upload.
 */
#ifndef CF_MODEL_H
#define CF_MODEL_H

#include "ops.h"
#include "params.h"

/* The normalisation of one sublayer, for both orders:
 * pre-norm  y = x + drop(F(LN(x))): ln = LN(x), the input of F
 * post-norm y = LN(x + drop(F(x))): ln = x + drop(F(x)), the input of LN */
typedef struct {
    cf_view ln;          /* (N, d) */
    cf_view mean, rstd;  /* (N) */
    cf_view out;         /* (N, d): y, the residual stream after the sublayer */
} cf_sub_acts;

typedef struct {
    cf_view q;           /* self: packed (N, 3d) Q|K|V; cross: (Nt, d) */
    cf_view kv;          /* cross only: (Ns, 2d) K|V of the memory */
    cf_view qh, kh, vh;  /* (B, H, Tq, dh), (B, H, Tk, dh), (B, H, Tk, dh) */
    cf_attention_saved saved;
    cf_view ctx_h;       /* (B, H, Tq, dh) */
    cf_view concat;      /* (N, d) heads merged: the input of out_proj */
    cf_view out;         /* (N, d) out_proj output, before dropout */
} cf_attn_acts;

typedef struct {
    cf_view pre;         /* (N, d_ff) linear1 without its bias */
    cf_view act;         /* (N, d_ff) dropout(act(pre + b1)): the input of linear2 */
    cf_view out;         /* (N, d) linear2 output, before dropout */
} cf_ffn_acts;

typedef struct {
    cf_sub_acts sub[3];  /* encoder: self-attn, ffn; decoder: self-attn, cross-attn, ffn */
    cf_attn_acts self_attn, cross_attn;
    cf_ffn_acts ffn;
} cf_layer_acts;

/* Every tensor of one batch shape. N* are row counts: Ns = B*S, Nt = B*T. */
typedef struct {
    size_t B, S, T;      /* T: decoder input length (target length - 1) */
    bool training;       /* saves what backward needs; dropout active */
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
    cf_view d_probs;     /* (B, H, Tmax, Tmax) */
    cf_view d_ff;        /* (N, d_ff) */
    size_t total;        /* elements of the arena */
} cf_acts;

/* Adam/AdamW settings of a model being trained. */
typedef struct {
    bool adamw;
    float beta1, beta2, eps;
    float weight_decay;
    float clip;          /* global gradient-norm clip; 0 turns it off */
} cf_optim_settings;

struct clformer_model {
    cf_ctx *ctx;
    clformer_config cfg;
    cf_param_layout layout;
    cl_mem params, grads, adam_m, adam_v; /* layout.total elements each */
    cl_mem arena;                         /* activations; arena_capacity elements */
    size_t arena_capacity;
    cl_mem metrics;                       /* [loss_sum, grad_norm_sq, clip_scale, spare] */
    cf_acts acts;                         /* views for the current batch shape */
    char **src_vocab, **tgt_vocab;        /* tokens in id order (may be NULL) */
    unsigned char *spm[2];                /* SentencePiece models, source/target (may be NULL) */
    size_t spm_size[2];
    struct cf_spm *spm_proc[2];           /* the same, loaded */
    uint64_t seed;                        /* initialisation and dropout */
    uint64_t step;                        /* optimizer steps taken */
    cf_optim_settings optim;
    char *train_state;                    /* trainer's JSON (data position ...), may be NULL */
    bool has_training_state;              /* loaded with optimizer state */
    struct cf_decoder *decoder;           /* inference caches, made on first use */
    clformer_collective collective;       /* data-parallel ranks (size 1: alone) */
};
typedef struct clformer_model cf_model;

/* A model with its buffers allocated and zeroed but parameters unset. */
clformer_status cf_model_new(cf_ctx *ctx, const clformer_config *config, uint64_t seed,
                             cf_model **out);

/* The entry of a PyTorch tensor name; a tied generator.weight resolves to
 * tgt_embed.weight. NULL when unknown. */
const cf_param_entry *cf_model_tensor(const cf_model *m, const char *name);

/* Lays out the activations for a batch shape into the arena, growing it when
 * needed. training: keep what backward needs (and the backward workspace). */
clformer_status cf_acts_prepare(cf_model *m, size_t B, size_t S, size_t T, bool training);
void cf_acts_release(cf_model *m);

/* Dropout descriptor of site `site` at the current step (NULL when off). */
const cf_dropout *cf_model_dropout(const cf_model *m, uint32_t site, cf_dropout *storage);

/* Dropout site ids: unique per place in the model. */
enum { CF_SITE_SRC_EMBED = 0, CF_SITE_TGT_EMBED = 1 };
static inline uint32_t cf_site(int layer, int kind) { return 16u + (uint32_t)layer * 16u + (uint32_t)kind; }
enum { CF_SITE_ATTN_PROBS = 0, CF_SITE_ATTN_OUT = 1, CF_SITE_CROSS_PROBS = 2, CF_SITE_CROSS_OUT = 3,
       CF_SITE_FF_HIDDEN = 4, CF_SITE_FF_OUT = 5 };

/* The model's forward pass over the uploaded batch (cf_acts_prepare first):
 * encoder, decoder, generator; with `labels`, the loss (per-row losses in
 * acts.losses and, when training, dlogits in place of the logits with
 * grad_scale applied). */
clformer_status cf_forward(cf_model *m, bool with_loss, float grad_scale);

/* The encoder alone: embeddings, encoder blocks, encoder.norm -> acts.memory. */
clformer_status cf_forward_encoder(cf_model *m);

/* The residual stream entering layer l of the encoder or decoder; l equal to
 * the layer count gives the stack's output (its final LayerNorm's input). */
static inline cf_view cf_layer_input(const cf_model *m, bool decoder, int l)
{
    if (l == 0) return decoder ? m->acts.tgt_emb : m->acts.src_emb;
    return decoder ? m->acts.dec[l - 1].sub[2].out : m->acts.enc[l - 1].sub[1].out;
}

/* Data parallelism (collective.c). The rank's share of the dropout seed. */
uint64_t cf_rank_seed(const cf_model *m);
/* Sums the label count over ranks (the loss scale is 1 / the global count). */
clformer_status cf_collective_count(cf_model *m, size_t *count);
/* Sums the gradients over ranks, in place; fills the timing fields of stats. */
clformer_status cf_collective_gradients(cf_model *m, double step_start,
                                        clformer_step_stats *stats);
/* Sums a few doubles over ranks (the loss). */
clformer_status cf_collective_sum(cf_model *m, double *values, size_t n);

/* Backward through everything, accumulating into m->grads (zero them first). */
clformer_status cf_backward(cf_model *m);

/* Validates a batch's token ids on the host and uploads the integer inputs. */
clformer_status cf_batch_upload(cf_model *m, size_t B, size_t S, size_t T1, const int32_t *src,
                                const int32_t *tgt, size_t *label_count);

#endif
