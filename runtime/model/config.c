/*
 * The model configuration: docs/MODEL.md's defaults, validation with messages
 * that name the field and the fix, and the JSON form stored in checkpoints
 * under clformer.config.
 */
#include "config.h"
#include "family.h"
#include "status.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void clformer_config_default(clformer_config *c)
{
    memset(c, 0, sizeof *c);
    c->size = sizeof *c;
    c->d_model = 512;
    c->n_heads = 8;
    c->d_ff = 2048;
    c->n_enc_layers = 6;
    c->n_dec_layers = 6;
    c->max_len = 256;
    c->norm_first = true;
    c->activation = CLFORMER_ACT_RELU;
    c->positional = CLFORMER_POS_SINUSOIDAL;
    c->dropout = 0.1f;
    c->ln_eps = 1e-5f;
    c->label_smoothing = 0.0f;
    c->share_tgt_embed = false;
    c->scale_embed = true;
    c->generator_bias = true;
    c->attention_dropout = -1.0f;
    c->activation_dropout = -1.0f;
    c->share_all_embed = false;
    c->family = CLFORMER_FAMILY_ENCODER_DECODER;
    c->n_kv_heads = 0;
    c->rope_theta = 10000.0f;
    c->rope_scaling = CLFORMER_ROPE_PLAIN;
    c->rope_factor = 1.0f;
    c->rope_base_len = 0;
}

float cf_config_dropout_of(const clformer_config *c, cf_dropout_kind kind)
{
    const float p = kind == CF_DROPOUT_ATTENTION    ? c->attention_dropout
                    : kind == CF_DROPOUT_ACTIVATION ? c->activation_dropout
                                                    : c->dropout;
    return p < 0.0f ? c->dropout : p;
}

bool cf_config_any_dropout(const clformer_config *c)
{
    return c->dropout > 0.0f || c->attention_dropout > 0.0f || c->activation_dropout > 0.0f;
}

/* Large enough for every real model, small enough that sizes never overflow. */
#define MAX_DIM (1 << 20)

static clformer_status positive(const char *field, int value, int max)
{
    if (value < 1 || value > max)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s must be between 1 and %d, got %d",
                       field, max, value);
    return CLFORMER_OK;
}

clformer_status clformer_config_validate(const clformer_config *c)
{
    CF_TRY(CF_CHECK_SIZE(clformer_config, c));
    CF_TRY(positive("d_model", c->d_model, MAX_DIM));
    CF_TRY(positive("n_heads", c->n_heads, 4096));
    if (c->d_model % c->n_heads != 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "d_model %% n_heads != 0: d_model %d is not divisible by n_heads %d; "
                       "choose n_heads among the divisors of d_model (e.g. %d)",
                       c->d_model, c->n_heads, c->d_model % 8 == 0 ? 8 : 1);
    CF_TRY(positive("d_ff", c->d_ff, MAX_DIM));
    const cf_family *family = cf_family_of(c);
    if (!family)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "family %d is none of %s, %s and %s",
                       (int)c->family, clformer_family_name(CLFORMER_FAMILY_ENCODER_DECODER),
                       clformer_family_name(CLFORMER_FAMILY_GPT),
                       clformer_family_name(CLFORMER_FAMILY_LLAMA));
    CF_TRY(positive("n_dec_layers", c->n_dec_layers, 1024));
    CF_TRY(positive("max_len", c->max_len, 65536));
    if (c->max_len < 2)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "max_len must be at least 2 (<sos> and <eos>), got %d", c->max_len);
    if (c->tgt_vocab < 5 || c->tgt_vocab > (1 << 24))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "vocabulary sizes must be between 5 (4 special tokens and one word) and "
                       "%d, got src_vocab %d, tgt_vocab %d", 1 << 24, c->src_vocab, c->tgt_vocab);
    if (!clformer_activation_name(c->activation))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "activation must be %s, %s or %s",
                       clformer_activation_name(CLFORMER_ACT_RELU),
                       clformer_activation_name(CLFORMER_ACT_GELU),
                       clformer_activation_name(CLFORMER_ACT_GELU_TANH));
    if (!clformer_positional_name(c->positional))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "positional must be %s or %s",
                       clformer_positional_name(CLFORMER_POS_SINUSOIDAL),
                       clformer_positional_name(CLFORMER_POS_LEARNED));
    if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "dropout must be in [0, 1), got %g",
                       c->dropout);
    if (!(c->attention_dropout < 1.0f) || !(c->activation_dropout < 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "attention_dropout and activation_dropout must be below 1 (below 0: "
                       "dropout's), got %g and %g", c->attention_dropout, c->activation_dropout);
    if (!(c->ln_eps > 0.0f && c->ln_eps < 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "ln_eps must be in (0, 1), got %g",
                       c->ln_eps);
    if (!(c->label_smoothing >= 0.0f && c->label_smoothing < 1.0f))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "label_smoothing must be in [0, 1), got %g", c->label_smoothing);
    return family->validate(c);
}

char *clformer_config_to_json(const clformer_config *c)
{
    json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:s, s:s, s:f, s:f, s:f, s:b, s:b, s:b}",
                          "d_model", c->d_model, "n_heads", c->n_heads, "d_ff", c->d_ff,
                          "n_enc_layers", c->n_enc_layers, "n_dec_layers", c->n_dec_layers,
                          "src_vocab", c->src_vocab, "tgt_vocab", c->tgt_vocab, "max_len",
                          c->max_len, "norm_first", c->norm_first, "activation",
                          clformer_activation_name(c->activation), "positional",
                          clformer_positional_name(c->positional),
                          "dropout", (double)c->dropout, "ln_eps", (double)c->ln_eps,
                          "label_smoothing", (double)c->label_smoothing, "share_tgt_embed",
                          c->share_tgt_embed, "scale_embed", c->scale_embed, "generator_bias",
                          c->generator_bias);
    if (!o) return NULL;
    /* written only when set, so that a model without them loads in earlier
     * versions of clformer as before */
    if (c->attention_dropout >= 0.0f)
        json_object_set_new(o, "attention_dropout", json_real((double)c->attention_dropout));
    if (c->activation_dropout >= 0.0f)
        json_object_set_new(o, "activation_dropout", json_real((double)c->activation_dropout));
    if (c->share_all_embed) json_object_set_new(o, "share_all_embed", json_true());
    /* the family only where n_enc_layers does not tell it (family.h) */
    const cf_family *f = cf_family_of(c);
    if (!f || f->named_in_json)
        json_object_set_new(o, "family", json_string(clformer_family_name(c->family)));
    /* grouped-query attention and rotary positions: where a config has them */
    if (c->n_kv_heads > 0) json_object_set_new(o, "n_kv_heads", json_integer(c->n_kv_heads));
    if (c->positional == CLFORMER_POS_ROPE) {
        json_object_set_new(o, "rope_theta", json_real((double)c->rope_theta));
        json_object_set_new(o, "rope_scaling",
                            json_string(clformer_rope_scaling_name(c->rope_scaling)));
        json_object_set_new(o, "rope_factor", json_real((double)c->rope_factor));
        json_object_set_new(o, "rope_base_len", json_integer(c->rope_base_len));
    }
    /* floats keep their float32 value exactly when printed with 9 digits */
    char *s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(o);
    return s;
}

static clformer_status get_int(json_t *o, const char *key, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) return cf_fail(CLFORMER_ERR_FORMAT, "config lacks \"%s\"", key);
    if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
        json_integer_value(v) > INT32_MAX)
        return cf_fail(CLFORMER_ERR_FORMAT, "config \"%s\" must be an integer", key);
    *out = (int)json_integer_value(v);
    return CLFORMER_OK;
}

static clformer_status get_float(json_t *o, const char *key, float *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) return cf_fail(CLFORMER_ERR_FORMAT, "config lacks \"%s\"", key);
    if (!json_is_number(v)) return cf_fail(CLFORMER_ERR_FORMAT, "config \"%s\" must be a number", key);
    *out = (float)json_number_value(v);
    return CLFORMER_OK;
}

static clformer_status get_bool(json_t *o, const char *key, bool *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) return cf_fail(CLFORMER_ERR_FORMAT, "config lacks \"%s\"", key);
    if (!json_is_boolean(v)) return cf_fail(CLFORMER_ERR_FORMAT, "config \"%s\" must be true or false", key);
    *out = json_is_true(v);
    return CLFORMER_OK;
}

/* A string value that `parse` reads (clformer_activation_parse, ...). */
static clformer_status get_word(json_t *o, const char *key, const char **out)
{
    json_t *v = json_object_get(o, key);
    if (!v) return cf_fail(CLFORMER_ERR_FORMAT, "config lacks \"%s\"", key);
    if (!json_is_string(v)) return cf_fail(CLFORMER_ERR_FORMAT, "config \"%s\" must be a string", key);
    *out = json_string_value(v);
    return CLFORMER_OK;
}

static clformer_status format_error(clformer_status st, const char *key)
{
    return st == CLFORMER_OK ? st : cf_fail_prefix(CLFORMER_ERR_FORMAT, "config \"%s\": ", key);
}

/* Keys added after format 1 was first written: absent means the old behaviour. */
static clformer_status get_optional_bool(json_t *o, const char *key, bool *out)
{
    return json_object_get(o, key) ? get_bool(o, key, out) : CLFORMER_OK;
}

static const char *const KEYS[] = {"d_model", "n_heads", "d_ff", "n_enc_layers", "n_dec_layers",
                                   "src_vocab", "tgt_vocab", "max_len", "norm_first",
                                   "activation", "positional", "dropout", "ln_eps",
                                   "label_smoothing", "share_tgt_embed", "attention_dropout",
                                   "activation_dropout", "scale_embed", "generator_bias",
                                   "share_all_embed", "family", "n_kv_heads", "rope_theta",
                                   "rope_scaling", "rope_factor", "rope_base_len"};

clformer_status clformer_config_from_json(const char *text, clformer_config *c)
{
    json_error_t err;
    json_t *o = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (!o) return cf_fail(CLFORMER_ERR_FORMAT, "config is not valid JSON: %s", err.text);
    clformer_status st = CLFORMER_OK;
    if (!json_is_object(o)) st = cf_fail(CLFORMER_ERR_FORMAT, "config must be a JSON object");
    const char *key;
    json_t *value;
    if (st == CLFORMER_OK)
        json_object_foreach(o, key, value) {
            bool known = false;
            for (size_t i = 0; i < sizeof KEYS / sizeof *KEYS; i++) known |= !strcmp(key, KEYS[i]);
            if (!known) {
                st = cf_fail(CLFORMER_ERR_FORMAT, "config has an unknown key \"%s\"", key);
                break;
            }
        }
    clformer_config_default(c);
    const char *act = NULL, *pos = NULL;
    if (st == CLFORMER_OK) st = get_int(o, "d_model", &c->d_model);
    if (st == CLFORMER_OK) st = get_int(o, "n_heads", &c->n_heads);
    if (st == CLFORMER_OK) st = get_int(o, "d_ff", &c->d_ff);
    if (st == CLFORMER_OK) st = get_int(o, "n_enc_layers", &c->n_enc_layers);
    if (st == CLFORMER_OK) st = get_int(o, "n_dec_layers", &c->n_dec_layers);
    if (st == CLFORMER_OK) st = get_int(o, "src_vocab", &c->src_vocab);
    if (st == CLFORMER_OK) st = get_int(o, "tgt_vocab", &c->tgt_vocab);
    if (st == CLFORMER_OK) st = get_int(o, "max_len", &c->max_len);
    if (st == CLFORMER_OK) st = get_bool(o, "norm_first", &c->norm_first);
    if (st == CLFORMER_OK) st = get_word(o, "activation", &act);
    if (st == CLFORMER_OK)
        st = format_error(clformer_activation_parse(act, &c->activation), "activation");
    if (st == CLFORMER_OK) st = get_word(o, "positional", &pos);
    if (st == CLFORMER_OK)
        st = format_error(clformer_positional_parse(pos, &c->positional), "positional");
    if (st == CLFORMER_OK) st = get_float(o, "dropout", &c->dropout);
    if (st == CLFORMER_OK) st = get_float(o, "ln_eps", &c->ln_eps);
    if (st == CLFORMER_OK) st = get_float(o, "label_smoothing", &c->label_smoothing);
    if (st == CLFORMER_OK) st = get_bool(o, "share_tgt_embed", &c->share_tgt_embed);
    if (st == CLFORMER_OK) st = get_optional_bool(o, "scale_embed", &c->scale_embed);
    if (st == CLFORMER_OK) st = get_optional_bool(o, "generator_bias", &c->generator_bias);
    if (st == CLFORMER_OK) st = get_optional_bool(o, "share_all_embed", &c->share_all_embed);
    /* absent: told by n_enc_layers (clformer_config_family) */
    const char *family = NULL;
    if (st == CLFORMER_OK && json_object_get(o, "family")) st = get_word(o, "family", &family);
    if (st == CLFORMER_OK && family)
        st = format_error(clformer_family_parse(family, &c->family), "family");
    /* the rest: absent, the defaults (no grouped-query attention, no rotary) */
    const char *scaling = NULL;
    if (st == CLFORMER_OK && json_object_get(o, "n_kv_heads"))
        st = get_int(o, "n_kv_heads", &c->n_kv_heads);
    if (st == CLFORMER_OK && json_object_get(o, "rope_theta"))
        st = get_float(o, "rope_theta", &c->rope_theta);
    if (st == CLFORMER_OK && json_object_get(o, "rope_scaling"))
        st = get_word(o, "rope_scaling", &scaling);
    if (st == CLFORMER_OK && scaling)
        st = format_error(clformer_rope_scaling_parse(scaling, &c->rope_scaling), "rope_scaling");
    if (st == CLFORMER_OK && json_object_get(o, "rope_factor"))
        st = get_float(o, "rope_factor", &c->rope_factor);
    if (st == CLFORMER_OK && json_object_get(o, "rope_base_len"))
        st = get_int(o, "rope_base_len", &c->rope_base_len);
    /* optional (absent: dropout's) */
    if (st == CLFORMER_OK && json_object_get(o, "attention_dropout"))
        st = get_float(o, "attention_dropout", &c->attention_dropout);
    if (st == CLFORMER_OK && json_object_get(o, "activation_dropout"))
        st = get_float(o, "activation_dropout", &c->activation_dropout);
    json_decref(o);
    if (st == CLFORMER_OK) st = clformer_config_validate(c);
    return st;
}
