/*
 * Hugging Face Llama config.json (hf_llama_config.h): LlamaConfig's fields
 * and defaults (transformers 4.36's LlamaConfig) and the checks
 * its _rope_scaling_validation and the model's shapes need.
 */
#include "hf_llama_config.h"
#include "fileio.h"
#include "status.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An optional positive integer field; absent keeps *v. */
static clformer_status positive(json_t *root, const char *key, const char *origin, int64_t *v)
{
    json_t *x = json_object_get(root, key);
    if (!x) return CLFORMER_OK;
    if (!json_is_integer(x) || json_integer_value(x) <= 0 || json_integer_value(x) > INT32_MAX)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: %s must be a positive integer below 2^31",
                       origin, key);
    *v = json_integer_value(x);
    return CLFORMER_OK;
}

/* An optional number field; absent keeps *v. */
static clformer_status number(json_t *root, const char *key, const char *origin, double *v)
{
    json_t *x = json_object_get(root, key);
    if (!x) return CLFORMER_OK;
    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: %s must be a finite number", origin, key);
    *v = json_number_value(x);
    return CLFORMER_OK;
}

/* A token id field: an integer >= 0, or null (-1); absent keeps *v. */
static clformer_status token_id(json_t *x, const char *key, const char *origin, int64_t *v)
{
    if (!x) return CLFORMER_OK;
    if (json_is_null(x)) {
        *v = -1;
        return CLFORMER_OK;
    }
    if (!json_is_integer(x) || json_integer_value(x) < 0)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: %s must be a token id (an integer >= 0) or "
                       "null", origin, key);
    *v = json_integer_value(x);
    return CLFORMER_OK;
}

/* transformers 4.36: rope_scaling is null or exactly {"type": "linear" |
 * "dynamic", "factor": a float > 1} (an integer factor is refused there). */
static clformer_status rope_scaling(json_t *x, const char *origin, cf_hf_llama_config *c)
{
    if (!x || json_is_null(x)) return CLFORMER_OK;
    const char *type = json_string_value(json_object_get(x, "type"));
    json_t *factor = json_object_get(x, "factor");
    if (!json_is_object(x) || json_object_size(x) != 2 || !type || !factor)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: rope_scaling must be null or {\"type\": "
                       "\"linear\" or \"dynamic\", \"factor\": a number > 1} with these two "
                       "fields only (transformers 4.36's rule)", origin);
    if (strcmp(type, "linear") && strcmp(type, "dynamic"))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: rope_scaling type \"%s\" is not one "
                       "transformers 4.36's Llama defines (linear, dynamic)", origin, type);
    if (!json_is_real(factor) || !(json_real_value(factor) > 1.0) ||
        !isfinite(json_real_value(factor)))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: rope_scaling factor must be a float > 1 "
                       "(write 2.0, not 2: transformers 4.36 refuses an integer)", origin);
    c->rope_scaling = strcmp(type, "linear") ? CF_ROPE_DYNAMIC : CF_ROPE_LINEAR;
    c->rope_scaling_factor = json_real_value(factor);
    return CLFORMER_OK;
}

static clformer_status parse(json_t *root, const char *origin, cf_hf_llama_config *c)
{
    const char *type = json_string_value(json_object_get(root, "model_type"));
    if (json_object_get(root, "model_type") && (!type || strcmp(type, "llama")))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: model_type \"%s\" is not \"llama\"; clformer "
                       "reads Llama-style decoders (Llama, TinyLlama, SmolLM)", origin,
                       type ? type : "(not a string)");
    const char *act = json_string_value(json_object_get(root, "hidden_act"));
    if (json_object_get(root, "hidden_act") && (!act || strcmp(act, "silu")))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: hidden_act \"%s\": clformer's Llama MLP is "
                       "SwiGLU with silu", origin, act ? act : "(not a string)");
    if (json_is_true(json_object_get(root, "attention_bias")) ||
        json_is_true(json_object_get(root, "mlp_bias")))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: attention_bias (or mlp_bias) is true; "
                       "clformer's Llama has no biases", origin);
    CF_TRY(positive(root, "vocab_size", origin, &c->vocab_size));
    CF_TRY(positive(root, "hidden_size", origin, &c->hidden_size));
    CF_TRY(positive(root, "intermediate_size", origin, &c->intermediate_size));
    CF_TRY(positive(root, "num_hidden_layers", origin, &c->num_hidden_layers));
    CF_TRY(positive(root, "num_attention_heads", origin, &c->num_attention_heads));
    c->num_key_value_heads = c->num_attention_heads; /* LlamaConfig: None means as many */
    if (!json_is_null(json_object_get(root, "num_key_value_heads")))
        CF_TRY(positive(root, "num_key_value_heads", origin, &c->num_key_value_heads));
    CF_TRY(positive(root, "max_position_embeddings", origin, &c->max_position_embeddings));
    CF_TRY(number(root, "rms_norm_eps", origin, &c->rms_norm_eps));
    CF_TRY(number(root, "rope_theta", origin, &c->rope_theta));
    CF_TRY(number(root, "attention_dropout", origin, &c->attention_dropout));
    json_t *tie = json_object_get(root, "tie_word_embeddings");
    if (tie && !json_is_boolean(tie))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: tie_word_embeddings must be true or false",
                       origin);
    if (tie) c->tie_word_embeddings = json_is_true(tie);
    CF_TRY(rope_scaling(json_object_get(root, "rope_scaling"), origin, c));
    CF_TRY(token_id(json_object_get(root, "bos_token_id"), "bos_token_id", origin,
                    &c->bos_token_id));
    CF_TRY(token_id(json_object_get(root, "pad_token_id"), "pad_token_id", origin,
                    &c->pad_token_id));
    json_t *eos = json_object_get(root, "eos_token_id");
    if (json_is_array(eos)) {
        if (json_array_size(eos) > CF_HF_LLAMA_MAX_EOS)
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: eos_token_id lists %zu ids; at most %d",
                           origin, json_array_size(eos), CF_HF_LLAMA_MAX_EOS);
        c->n_eos = 0;
        for (size_t i = 0; i < json_array_size(eos); i++) {
            int64_t id = -1;
            CF_TRY(token_id(json_array_get(eos, i), "eos_token_id", origin, &id));
            if (id >= 0) c->eos_token_id[c->n_eos++] = id;
        }
    } else if (eos) {
        int64_t id = c->eos_token_id[0];
        CF_TRY(token_id(eos, "eos_token_id", origin, &id));
        c->n_eos = id >= 0;
        c->eos_token_id[0] = id;
    }

    /* the shapes the model needs */
    if (c->hidden_size % c->num_attention_heads)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: hidden_size %lld is not a multiple of "
                       "num_attention_heads %lld", origin, (long long)c->hidden_size,
                       (long long)c->num_attention_heads);
    if (c->num_attention_heads % c->num_key_value_heads)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: num_attention_heads %lld is not a multiple of "
                       "num_key_value_heads %lld (each key/value head serves a whole group "
                       "of query heads)", origin, (long long)c->num_attention_heads,
                       (long long)c->num_key_value_heads);
    c->head_dim = c->hidden_size / c->num_attention_heads;
    if (!(c->rms_norm_eps > 0.0))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: rms_norm_eps must be > 0 (1e-5 or 1e-6 are "
                       "usual)", origin);
    if (!(c->attention_dropout >= 0.0 && c->attention_dropout < 1.0))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: attention_dropout must be in [0, 1)", origin);
    const cf_rope_config rope = cf_hf_llama_rope(c);
    if (cf_rope_check_config(&rope) != CLFORMER_OK) {
        char why[256]; /* the message is rewritten by the cf_fail that quotes it */
        snprintf(why, sizeof why, "%s", clformer_last_error());
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: %s", origin, why);
    }
    for (size_t i = 0; i < c->n_eos; i++)
        if (c->eos_token_id[i] >= c->vocab_size)
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: eos_token_id %lld is outside the "
                           "vocabulary of %lld", origin, (long long)c->eos_token_id[i],
                           (long long)c->vocab_size);
    if (c->bos_token_id >= c->vocab_size || c->pad_token_id >= c->vocab_size)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: bos_token_id or pad_token_id is outside the "
                       "vocabulary of %lld", origin, (long long)c->vocab_size);
    return CLFORMER_OK;
}

clformer_status cf_hf_llama_config_parse(const char *json, size_t len, const char *origin,
                                         cf_hf_llama_config *out)
{
    /* LlamaConfig's defaults */
    cf_hf_llama_config c = {32000, 4096, 11008, 32, 32, 32, 128, 2048, 1e-6, 10000.0,
                            CF_ROPE_PLAIN, 0.0, false, 0.0, 1, {2}, 1, -1};
    json_error_t err;
    json_t *root = json_loadb(json, len, 0, &err);
    if (!root)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: line %d column %d: %s: not a config.json",
                       origin, err.line, err.column, err.text);
    clformer_status st = json_is_object(root)
                             ? parse(root, origin, &c)
                             : cf_fail(CLFORMER_ERR_FORMAT, "%s: not a JSON object", origin);
    json_decref(root);
    if (st == CLFORMER_OK) *out = c;
    return st;
}

clformer_status cf_hf_llama_config_read(const char *path, cf_hf_llama_config *out)
{
    char *data = NULL;
    size_t size = 0;
    CF_TRY(cf_read_file(path, &data, &size));
    clformer_status st = cf_hf_llama_config_parse(data, size, path, out);
    free(data);
    return st;
}

cf_rope_config cf_hf_llama_rope(const cf_hf_llama_config *c)
{
    return (cf_rope_config){(size_t)c->head_dim, c->rope_theta, c->rope_scaling,
                            c->rope_scaling_factor, (size_t)c->max_position_embeddings};
}

/* clformer's config of a Hugging Face Llama config. Dynamic scaling exists
 * to run past max_position_embeddings, so the model's context is factor
 * times it, and the scaling's reference length stays
 * max_position_embeddings. */
clformer_status cf_hf_llama_clformer_config(const cf_hf_llama_config *h, const char *origin,
                                            clformer_config *c)
{
    clformer_config_default(c);
    c->family = CLFORMER_FAMILY_LLAMA;
    c->n_enc_layers = 0;
    c->src_vocab = 0;
    const int64_t dims[] = {h->vocab_size, h->hidden_size, h->intermediate_size,
                            h->num_hidden_layers, h->num_attention_heads,
                            h->num_key_value_heads, h->max_position_embeddings};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        if (dims[i] > (1 << 24))
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: a size of %lld is beyond clformer's limits",
                           origin, (long long)dims[i]);
    c->tgt_vocab = (int)h->vocab_size;
    c->d_model = (int)h->hidden_size;
    c->d_ff = (int)h->intermediate_size;
    c->n_dec_layers = (int)h->num_hidden_layers;
    c->n_heads = (int)h->num_attention_heads;
    c->n_kv_heads = (int)h->num_key_value_heads;
    c->ln_eps = (float)h->rms_norm_eps;
    c->dropout = 0.0f;
    c->attention_dropout = (float)h->attention_dropout;
    c->activation_dropout = 0.0f;
    c->norm_first = true;
    c->activation = CLFORMER_ACT_SILU;
    c->positional = CLFORMER_POS_ROPE;
    c->share_tgt_embed = h->tie_word_embeddings;
    c->scale_embed = false;
    c->generator_bias = false;
    c->rope_theta = (float)h->rope_theta;
    c->rope_scaling = h->rope_scaling == CF_ROPE_LINEAR    ? CLFORMER_ROPE_LINEAR
                      : h->rope_scaling == CF_ROPE_DYNAMIC ? CLFORMER_ROPE_DYNAMIC
                                                           : CLFORMER_ROPE_PLAIN;
    c->rope_factor = h->rope_scaling == CF_ROPE_PLAIN ? 1.0f : (float)h->rope_scaling_factor;
    const double context = h->rope_scaling == CF_ROPE_DYNAMIC
                               ? ceil((double)h->max_position_embeddings * h->rope_scaling_factor)
                               : (double)h->max_position_embeddings;
    if (context > 65536.0)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "%s: a context of %.0f positions is beyond clformer's 65536", origin,
                       context);
    c->max_len = (int)context;
    c->rope_base_len = h->rope_scaling == CF_ROPE_DYNAMIC ? (int)h->max_position_embeddings : 0;
    clformer_status st = clformer_config_validate(c);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "%s: ", origin);
}
