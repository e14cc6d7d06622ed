/* A Hugging Face GPT-2 or Llama directory's small files (see hf_gpt2_files.h). */
#include "hf_gpt2_files.h"
#include "hf_llama_config.h"
#include "fileio.h"
#include "status.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const cf_hf_file_names[CF_HF_FILES] = {
    "config.json", "vocab.json", "merges.txt", "clformer_vocab.json", "clformer_spm.model",
    /* cf_hf_tok_file_names' order */
    "tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"};

clformer_status cf_hf_files_read(const char *dir, cf_hf_files *f)
{
    memset(f, 0, sizeof *f);
    char path[4096];
    for (int i = 0; i < CF_HF_FILES; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, cf_hf_file_names[i]) >= sizeof path)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the directory path is too long");
        struct stat sb;
        if (stat(path, &sb) != 0) {
            if (errno != ENOENT || i == CF_HF_CONFIG) {
                const clformer_status st = cf_fail(CLFORMER_ERR_IO, "cannot read '%s': %s", path,
                                                   strerror(errno));
                cf_hf_files_free(f);
                return st;
            }
            continue;
        }
        clformer_status st = S_ISREG(sb.st_mode)
                                 ? cf_read_file(path, &f->text[i], &f->size[i])
                                 : cf_fail(CLFORMER_ERR_FORMAT, "'%s' is not a regular file: "
                                           "remove it or put the file there", path);
        if (st != CLFORMER_OK) {
            cf_hf_files_free(f);
            return st;
        }
    }
    return CLFORMER_OK;
}

void cf_hf_files_free(cf_hf_files *f)
{
    for (int i = 0; i < CF_HF_FILES; i++) free(f->text[i]);
    memset(f, 0, sizeof *f);
}

static clformer_status json_int_field(const char *path, json_t *o, const char *key,
                                      int fallback, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (fallback < 0) return cf_fail(CLFORMER_ERR_FORMAT, "%s lacks \"%s\"", path, key);
        *out = fallback;
        return CLFORMER_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 24))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: \"%s\" must be a positive integer", path, key);
    *out = (int)json_integer_value(v);
    return CLFORMER_OK;
}

static clformer_status parse_config(const char *path, json_t *o, clformer_config *c)
{
    clformer_config_default(c);
    c->n_enc_layers = 0, c->src_vocab = 0;
    c->positional = CLFORMER_POS_LEARNED;
    c->share_tgt_embed = true, c->scale_embed = false, c->generator_bias = false;
    c->norm_first = true, c->dropout = 0.0f;
    const char *type = json_string_value(json_object_get(o, "model_type"));
    const char *act = json_string_value(json_object_get(o, "activation_function"));
    json_t *eps = json_object_get(o, "layer_norm_epsilon");
    if (!json_is_object(o)) return cf_fail(CLFORMER_ERR_FORMAT, "%s is not a JSON object", path);
    if (!type || strcmp(type, "gpt2"))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: model_type is \"%.40s\", not \"gpt2\" or "
                       "\"llama\"", path, type ? type : "(none)");
    CF_TRY(json_int_field(path, o, "n_embd", -1, &c->d_model));
    CF_TRY(json_int_field(path, o, "n_head", -1, &c->n_heads));
    CF_TRY(json_int_field(path, o, "n_layer", -1, &c->n_dec_layers));
    CF_TRY(json_int_field(path, o, "vocab_size", -1, &c->tgt_vocab));
    CF_TRY(json_int_field(path, o, "n_positions", -1, &c->max_len));
    CF_TRY(json_int_field(path, o, "n_inner", c->d_model <= (1 << 22) ? 4 * c->d_model : 1 << 24,
                          &c->d_ff));
    if (eps && !json_is_number(eps))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: layer_norm_epsilon must be a number", path);
    if (eps) c->ln_eps = (float)json_number_value(eps);
    if (!act || !strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh"))
        c->activation = CLFORMER_ACT_GELU_TANH;
    else if (!strcmp(act, "gelu")) c->activation = CLFORMER_ACT_GELU;
    else if (!strcmp(act, "relu")) c->activation = CLFORMER_ACT_RELU;
    else return cf_fail(CLFORMER_ERR_FORMAT, "%s: activation_function \"%.40s\" is not supported "
                        "(gelu_new, gelu_pytorch_tanh, gelu or relu)", path, act);
    if (json_is_true(json_object_get(o, "scale_attn_by_inverse_layer_idx")) ||
        json_is_false(json_object_get(o, "scale_attn_weights")))
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: attention scaling other than 1/sqrt(head size) "
                       "is not supported", path);
    const clformer_status st = clformer_config_validate(c);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "%s: ", path);
}

/* Whether config.json (written by clformer) says the directory has clformer file `name`. */
static bool listed(json_t *config, const char *name)
{
    json_t *files = json_object_get(config, "clformer_files");
    for (size_t i = 0; json_is_array(files) && i < json_array_size(files); i++) {
        const char *s = json_string_value(json_array_get(files, i));
        if (s && !strcmp(s, name)) return true;
    }
    return false;
}

static clformer_status parse_tokenizer(const char *dir, const cf_hf_files *f, json_t *config,
                                       cf_hf_parsed *p)
{
    char path[2][4096];
    const bool has[CF_HF_FILES] = {true, f->text[CF_HF_VOCAB] != NULL,
                                   f->text[CF_HF_MERGES] != NULL,
                                   f->text[CF_HF_CLFORMER_VOCAB] != NULL, f->text[CF_HF_SPM] != NULL};
    for (int i = CF_HF_CLFORMER_VOCAB; i <= CF_HF_SPM; i++) {
        snprintf(path[0], sizeof path[0], "%s/%s", dir, cf_hf_file_names[i]);
        if (!has[i] && listed(config, cf_hf_file_names[i]))
            return cf_fail(CLFORMER_ERR_FORMAT, "'%s' is missing: config.json says this model's "
                           "tokenizer is in it (export the model again)", path[0]);
    }
    if (f->text[CF_HF_TOK + CF_HF_TOK_JSON] || f->text[CF_HF_TOK + CF_HF_TOK_MODEL]) {
        clformer_status st = cf_hf_tokenizer_from_files((const char *const *)f->text + CF_HF_TOK,
                                                        f->size + CF_HF_TOK, dir, &p->hf);
        if (st == CLFORMER_OK && cf_hf_tokenizer_size(p->hf) > p->config.tgt_vocab)
            return cf_fail(CLFORMER_ERR_FORMAT, "%s's tokenizer has %d ids but config.json's "
                           "vocab_size is %d: use the tokenizer files the model was trained "
                           "with", dir, (int)cf_hf_tokenizer_size(p->hf), p->config.tgt_vocab);
        if (st != CLFORMER_ERR_FORMAT) return st;
        /* one clformer does not read: GPT-2's files or clformer's, else ids only */
        if (!has[CF_HF_VOCAB] && !has[CF_HF_CLFORMER_VOCAB]) {
            p->ids_only = true;
            p->tokenizer_problem = strdup(clformer_last_error());
            return p->tokenizer_problem ? CLFORMER_OK
                                        : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    if (has[CF_HF_VOCAB] != has[CF_HF_MERGES]) {
        const int there = has[CF_HF_VOCAB] ? CF_HF_VOCAB : CF_HF_MERGES;
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s' has %s but no %s: GPT-2's BPE tokenizer needs "
                       "both (copy the missing file from the model's tokenizer)", dir,
                       cf_hf_file_names[there],
                       cf_hf_file_names[there == CF_HF_VOCAB ? CF_HF_MERGES : CF_HF_VOCAB]);
    }
    if (has[CF_HF_VOCAB]) {
        snprintf(path[0], sizeof path[0], "%s/vocab.json", dir);
        snprintf(path[1], sizeof path[1], "%s/merges.txt", dir);
        CF_TRY(cf_bpe_load(f->text[CF_HF_VOCAB], f->size[CF_HF_VOCAB], path[0],
                           f->text[CF_HF_MERGES], f->size[CF_HF_MERGES], path[1], &p->bpe));
        const int32_t n = cf_bpe_vocab_size(p->bpe);
        if (n > p->config.tgt_vocab)
            return cf_fail(CLFORMER_ERR_FORMAT, "%s has %d tokens but config.json's vocab_size "
                           "is %d: use the tokenizer files the model was trained with", path[0],
                           (int)n, p->config.tgt_vocab);
        return CLFORMER_OK; /* GPT-2's files give the ids: clformer's are not read */
    }
    if (has[CF_HF_SPM] && !has[CF_HF_CLFORMER_VOCAB]) {
        snprintf(path[0], sizeof path[0], "%s/clformer_vocab.json", dir);
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s' is missing: clformer_spm.model's pieces are "
                       "its tokens", path[0]);
    }
    if (!has[CF_HF_CLFORMER_VOCAB]) {
        p->ids_only = true;
        return CLFORMER_OK;
    }
    snprintf(path[0], sizeof path[0], "'%s/clformer_vocab.json'", dir);
    CF_TRY(cf_vocab_from_json(f->text[CF_HF_CLFORMER_VOCAB], f->size[CF_HF_CLFORMER_VOCAB],
                              path[0], &p->vocab));
    if (cf_vocab_size(p->vocab) != p->config.tgt_vocab)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s holds %d tokens but config.json's vocab_size is "
                       "%d: it is not this model's", path[0], (int)cf_vocab_size(p->vocab),
                       p->config.tgt_vocab);
    p->spm = has[CF_HF_SPM];
    return CLFORMER_OK;
}

clformer_status cf_hf_files_parse(const char *dir, const cf_hf_files *f, cf_hf_parsed *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!f->text[CF_HF_CONFIG]) return cf_fail(CLFORMER_ERR_IO, "'%s' is missing", path);
    json_error_t err;
    json_t *config = json_loadb(f->text[CF_HF_CONFIG], f->size[CF_HF_CONFIG],
                                JSON_REJECT_DUPLICATES, &err);
    clformer_status st = config ? CLFORMER_OK
                                : cf_fail(CLFORMER_ERR_FORMAT, "%s: not readable JSON (%s)",
                                          path, err.text);
    /* Llama's config.json: hf_llama_config.c; the rest must be GPT-2's */
    const char *type = json_string_value(json_object_get(config, "model_type"));
    cf_hf_llama_config llama;
    if (st == CLFORMER_OK && type && !strcmp(type, "llama")) {
        st = cf_hf_llama_config_parse(f->text[CF_HF_CONFIG], f->size[CF_HF_CONFIG], path, &llama);
        if (st == CLFORMER_OK) st = cf_hf_llama_clformer_config(&llama, path, &out->config);
    } else if (st == CLFORMER_OK) {
        st = parse_config(path, config, &out->config);
    }
    if (st == CLFORMER_OK) st = parse_tokenizer(dir, f, config, out);
    json_decref(config);
    if (st != CLFORMER_OK) cf_hf_parsed_free(out);
    return st;
}

void cf_hf_parsed_free(cf_hf_parsed *p)
{
    cf_hf_tokenizer_free(p->hf);
    free(p->tokenizer_problem);
    cf_bpe_free(p->bpe);
    cf_vocab_free(p->vocab);
    memset(p, 0, sizeof *p);
}
