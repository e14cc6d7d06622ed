/*
 * Model families (issue 31; Hugging Face's model classes): what one kind of
 * model is, behind one interface, so that the session, the trainer, the
 * command and the API ask rather than branch on which it is. Its config
 * rules and presets, its parameters (layout, names, initialisation), the
 * blocks the graph runs for it, and what its batches hold. Implemented by
 * family_transformer.c (the paper's encoder-decoder, and GPT-2's decoder:
 * the same blocks) and family_llama.c (Llama's decoder); cf_family_of picks
 * one for a config (families.c).
 * Files of a family's formats live above, in runtime/format, keyed by its
 * id.
 */
#ifndef CF_FAMILY_H
#define CF_FAMILY_H

#include "ops.h"
#include "params.h"
#include "status.h"

typedef enum { CF_NORM_LAYER, CF_NORM_RMS } cf_norm_kind;

/* The blocks the graph runs for a config: what its passes read (graph.h),
 * never which family it is. */
typedef struct {
    bool encoder;      /* an encoder stack, and cross-attention in every decoder layer */
    cf_norm_kind norm; /* LayerNorm (weight, bias) or RMSNorm (weight) */
    bool gated;        /* feed-forward down(silu(gate x) * up x) (SwiGLU), else
                          linear2(act(linear1 x)) */
    bool rope;         /* rotary positions on queries and keys, no position table */
    cf_rope_config rope_config; /* theirs (ops.h), when rope */
    size_t kv_heads;   /* key/value heads: n_heads, or fewer (grouped-query) */
} cf_blocks;

typedef struct cf_family {
    clformer_family id;
    /* what its batches hold and how it decodes: sentence pairs, translated
     * from a source (true), or windows of one text, sampled from a prompt */
    bool source;
    /* the label its loss skips: <pad>, or none (-1) when a window is never
     * padded and id 0 may be a real token */
    int ignore_label;
    /* presets: names, NULL-terminated, and the config of one (every field
     * but the vocabulary sizes, ln_eps and label smoothing) */
    const char *const *presets;
    void (*preset)(int index, clformer_config *c);
    /* the family's own rules (the shared ones, config.c, have passed); the
     * message names the field, the value and the fix */
    clformer_status (*validate)(const clformer_config *c);
    cf_blocks (*blocks)(const clformer_config *c);
    /* the parameters in buffer order, with their PyTorch or Hugging Face
     * names and initialisation (params.h) */
    clformer_status (*layout)(const clformer_config *c, cf_param_layout *l);
    /* other names a tensor is stored under too (a tied head's), at most 2 */
    int (*aliases)(const clformer_config *c, const char *names[2]);
    /* a batch's shape and ids, before it is uploaded: one of family_batch.c's */
    clformer_status (*check_batch)(const clformer_config *c, const clformer_batch *b);
    /* its config JSON names it ("family"); the families older files knew
     * are told by n_enc_layers (encoder layers: an encoder-decoder; none: a
     * GPT), and written so, as before */
    bool named_in_json;
} cf_family;

/* Batches of sentence pairs (a source and a target), and of windows of one
 * text (tgt alone, each window its inputs plus the last label) (family_batch.c). */
clformer_status cf_batch_check_pairs(const clformer_config *c, const clformer_batch *b);
clformer_status cf_batch_check_windows(const clformer_config *c, const clformer_batch *b);

/* The family of a config (clformer_config_family: an encoder-decoder with no
 * encoder layers is a GPT); NULL for a family id out of range. */
const cf_family *cf_family_of(const clformer_config *c);

/* The task of the family's models (clformer_model_task). */
clformer_task cf_family_task(const cf_family *f);

/* The first vocabulary side its models have: a translation model has the
 * source and the target (SOURCE), a language model the target alone (TARGET);
 * a model's vocabularies are sides first..TARGET. */
clformer_side cf_family_first_side(const cf_family *f);

/* CLFORMER_OK when the family's models do `task`; else the refusal
 * clformer_model_check_task describes, naming `use`. */
clformer_status cf_family_check_task(const cf_family *f, clformer_task task, const char *use);

/* The families in id order, NULL-terminated. */
extern const cf_family *const cf_families[];

/* The rules every decoder-only family shares: no encoder layers, no source
 * vocabulary, no embedding shared with a source. */
static inline clformer_status cf_family_decoder_only_rules(const clformer_config *c)
{
    if (c->n_enc_layers != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the %s family is decoder-only: n_enc_layers must be 0, got %d",
                       clformer_family_name(c->family), c->n_enc_layers);
    if (c->src_vocab != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "a decoder-only model (n_enc_layers 0) has no source vocabulary: "
                       "src_vocab must be 0, got %d", c->src_vocab);
    if (c->share_all_embed)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "share_all_embed needs an encoder (a decoder-only model has one "
                       "embedding): use share_tgt_embed");
    return CLFORMER_OK;
}

#endif
