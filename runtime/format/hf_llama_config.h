/*
 * A Hugging Face Llama config.json as transformers 4.36's LlamaConfig reads
 * it (pure data, host only): every field LlamaForCausalLM uses, with
 * LlamaConfig's defaults for the absent ones, and the checks that make the
 * rest of clformer safe to build a model from it. Errors name the file, the
 * field and the fix (CLFORMER_ERR_FORMAT). Fields clformer does not use are
 * ignored; those that would change the model in a way clformer does not
 * implement are refused: hidden_act other than silu, attention_bias,
 * model_type other than llama.
 */
#ifndef CF_HF_LLAMA_CONFIG_H
#define CF_HF_LLAMA_CONFIG_H

#include "clformer.h"
#include "ops.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CF_HF_LLAMA_MAX_EOS 8

typedef struct {
    int64_t vocab_size;              /* 32000 */
    int64_t hidden_size;             /* 4096 */
    int64_t intermediate_size;       /* 11008 */
    int64_t num_hidden_layers;       /* 32 */
    int64_t num_attention_heads;     /* 32 */
    int64_t num_key_value_heads;     /* num_attention_heads when absent or null */
    int64_t head_dim;                /* hidden_size / num_attention_heads (derived) */
    int64_t max_position_embeddings; /* 2048 */
    double rms_norm_eps;             /* 1e-6 */
    double rope_theta;               /* 10000.0 */
    cf_rope_scaling rope_scaling;    /* null: CF_ROPE_PLAIN */
    double rope_scaling_factor;      /* > 1 when scaling */
    bool tie_word_embeddings;        /* false */
    double attention_dropout;        /* 0.0 */
    int64_t bos_token_id;            /* 1; -1 when null */
    int64_t eos_token_id[CF_HF_LLAMA_MAX_EOS]; /* 2; Llama 3 lists several */
    size_t n_eos;                    /* 0 when null */
    int64_t pad_token_id;            /* -1 (None) */
} cf_hf_llama_config;

/* Parses config.json's text; `origin` names it in errors. */
clformer_status cf_hf_llama_config_parse(const char *json, size_t len, const char *origin,
                                         cf_hf_llama_config *out);

/* Reads and parses a file (a model directory's config.json). */
clformer_status cf_hf_llama_config_read(const char *path, cf_hf_llama_config *out);

/* The rotary configuration the config gives (runtime/ops/ops.h). */
cf_rope_config cf_hf_llama_rope(const cf_hf_llama_config *c);

/* clformer's config (the llama family's) of a parsed config.json, checked
 * by clformer_config_validate; `origin` names the file in errors. */
clformer_status cf_hf_llama_clformer_config(const cf_hf_llama_config *h, const char *origin,
                                            clformer_config *c);

#endif
