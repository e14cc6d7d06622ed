/*
 * Where every parameter lives in the model's one flat parameter buffer
 * (llm.c): element offsets of each tensor, filled by cf_param_layout_make.
 * Gradients and Adam's m and v use the identical layout in their own
 * buffers. Every rank-2 tensor (matrices and embeddings) comes first, so
 * weight decay applies to the prefix [0, decay_end) and the optimizer is one
 * kernel. Names are PyTorch's state_dict names (docs/MODEL.md).
 */
#ifndef CF_PARAMS_H
#define CF_PARAMS_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

/* A multi-head attention block: packed Q/K/V projection and output projection. */
typedef struct {
    size_t in_proj_w;  /* (3d, d): rows 0..d-1 Q, then K, then V */
    size_t in_proj_b;  /* (3d) */
    size_t out_w;      /* (d, d) */
    size_t out_b;      /* (d) */
} cf_attn_params;

/* Feed-forward block and the LayerNorms of one encoder or decoder layer. */
typedef struct {
    cf_attn_params self_attn;
    cf_attn_params cross_attn; /* decoder layers with an encoder only */
    size_t lin1_w, lin1_b;     /* (d_ff, d), (d_ff); gated: the gate */
    size_t lin2_w, lin2_b;     /* (d, d_ff), (d) */
    size_t lin3_w;             /* gated: the up projection (d_ff, d), else CF_NO_PARAM */
    size_t norm_w[3], norm_b[3]; /* one per sublayer: norm1, norm2 (and norm3 for decoder
                                    layers with cross-attention), (d) each */
} cf_layer_params;

/* One named tensor, for checkpoints and initialisation. */
typedef struct {
    char name[96];
    size_t offset;
    size_t rows, cols;  /* rank 2: rows x cols; rank 1: rows = 0, cols = length */
    int rank;
    int init;           /* CF_INIT_* */
} cf_param_entry;

/* NORMAL: N(0, 0.02^2), Hugging Face's initializer_range for Llama */
enum { CF_INIT_XAVIER, CF_INIT_ZEROS, CF_INIT_ONES, CF_INIT_NORMAL };

/* The offset of a tensor the configuration does not have (a decoder-only
 * model's encoder and source embedding, a generator without bias). */
#define CF_NO_PARAM SIZE_MAX

typedef struct {
    size_t src_embed;   /* (src_vocab, d); CF_NO_PARAM decoder-only */
    size_t tgt_embed;   /* (tgt_vocab, d) */
    size_t pos_embed;   /* (max_len, d), learned positions only */
    size_t generator_w; /* (tgt_vocab, d); equals tgt_embed when tied */
    size_t generator_b; /* (tgt_vocab); CF_NO_PARAM without generator_bias */
    size_t enc_norm_w, enc_norm_b, dec_norm_w, dec_norm_b; /* enc_*: CF_NO_PARAM decoder-only */
    cf_layer_params *enc; /* n_enc_layers */
    cf_layer_params *dec; /* n_dec_layers */
    cf_param_entry *entries; /* every stored tensor, in buffer order */
    size_t n_entries;
    size_t total;       /* elements in the buffer */
    size_t decay_end;   /* rank-2 tensors occupy [0, decay_end) */
} cf_param_layout;

/* The layout of a config, as its family lays it out (families.c). */
clformer_status cf_param_layout_make(const clformer_config *c, cf_param_layout *layout);
void cf_param_layout_free(cf_param_layout *layout);

/* Other names a tensor is stored under too, copies of it, as the config's
 * family has them (families.c): the transformer's tied generator
 * (share_tgt_embed) and shared source embedding (share_all_embed), so that a
 * checkpoint loads into PyTorch with load_state_dict(strict=True). Returns
 * how many (at most 2). */
int cf_param_aliases(const clformer_config *c, const char *names[2]);

/* A layout being built (a family's layout function): entries are added in
 * buffer order, each after the last. start: room for max_entries entries
 * and the layer tables of n_enc and n_dec layers. */
typedef struct {
    cf_param_layout *layout;
    size_t capacity;
    size_t next;
} cf_param_builder;
clformer_status cf_param_builder_start(cf_param_builder *b, cf_param_layout *l,
                                       size_t max_entries, int n_enc, int n_dec);
/* Adds a tensor (rank 2: rows x cols; rank 1: cols) named by fmt; its offset. */
size_t cf_param_add(cf_param_builder *b, int rank, size_t rows, size_t cols, int init,
                    const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Ends the layout: the weight-decay prefix ends at decay_end (the rank-2
 * tensors, added first), the buffer after the last entry. */
void cf_param_builder_finish(cf_param_builder *b, size_t decay_end);

/* The entry named `name`, or NULL. */
const cf_param_entry *cf_param_find(const cf_param_layout *layout, const char *name);

/* Fills `host` (layout->total floats) with each entry's initialisation
 * (docs/MODEL.md: Xavier-uniform for the transformer's rank-2 tensors,
 * zeros for biases, ones/zeros for LayerNorm; N(0, 0.02^2) for Llama's),
 * deterministic from `seed` and the entry's index. */
void cf_param_init(const cf_param_layout *layout, uint64_t seed, float *host);

#endif
