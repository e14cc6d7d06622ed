/*
 * Hugging Face's GPT-2 layout (transformers' GPT2LMHeadModel as
 * save_pretrained writes it: config.json and model.safetensors) to and from
 * a decoder-only clformer model. The blocks are the same; only names and the
 * storage of matrices differ: GPT-2's Conv1D keeps weights as [in, out],
 * clformer (as torch.nn.Linear) as [out, in], so every matrix but the
 * embeddings is transposed on the way. The fused Q|K|V projection has the
 * same row order on both sides; lm_head is tied to wte (clformer's tied
 * generator without bias). The tokenizer: GPT-2's vocab.json + merges.txt
 * for a model with a GPT-2 BPE (read back as its tokenizer, as from any
 * save_pretrained directory); otherwise clformer_vocab.json (the model's
 * tokens in id order) so that a character or byte model keeps its
 * vocabulary through the round trip, and clformer_spm.model beside it for a
 * SentencePiece model. Hugging Face's tokenizer classes read only the first.
 */
#include "fileio.h"
#include "model.h"
#include "safetensors.h"
#include "status.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* clformer's layer-relative names and GPT-2's, and whether the matrix is transposed. */
static const struct {
    const char *ours, *theirs;
    bool transpose;
} LAYER_NAMES[] = {
    {"self_attn.in_proj_weight", "attn.c_attn.weight", true},
    {"self_attn.in_proj_bias", "attn.c_attn.bias", false},
    {"self_attn.out_proj.weight", "attn.c_proj.weight", true},
    {"self_attn.out_proj.bias", "attn.c_proj.bias", false},
    {"linear1.weight", "mlp.c_fc.weight", true},
    {"linear1.bias", "mlp.c_fc.bias", false},
    {"linear2.weight", "mlp.c_proj.weight", true},
    {"linear2.bias", "mlp.c_proj.bias", false},
    {"norm1.weight", "ln_1.weight", false},
    {"norm1.bias", "ln_1.bias", false},
    {"norm2.weight", "ln_2.weight", false},
    {"norm2.bias", "ln_2.bias", false},
};

/* GPT-2's name (with the "transformer." prefix) of a clformer tensor. */
static bool hf_name(const char *ours, char *out, size_t cap, bool *transpose)
{
    *transpose = false;
    static const char *const top[][2] = {{"tgt_embed.weight", "transformer.wte.weight"},
                                         {"pos_embed.weight", "transformer.wpe.weight"},
                                         {"transformer.decoder.norm.weight", "transformer.ln_f.weight"},
                                         {"transformer.decoder.norm.bias", "transformer.ln_f.bias"}};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++)
        if (!strcmp(ours, top[i][0])) return snprintf(out, cap, "%s", top[i][1]) < (int)cap;
    int layer, used = 0;
    if (sscanf(ours, "transformer.decoder.layers.%d.%n", &layer, &used) != 1 || used == 0) return false;
    for (size_t i = 0; i < sizeof LAYER_NAMES / sizeof *LAYER_NAMES; i++)
        if (!strcmp(ours + used, LAYER_NAMES[i].ours)) {
            *transpose = LAYER_NAMES[i].transpose;
            return snprintf(out, cap, "transformer.h.%d.%s", layer, LAYER_NAMES[i].theirs) < (int)cap;
        }
    return false;
}

static void transpose(float *dst, const float *src, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}

static clformer_status gpt2_shaped(const clformer_config *c)
{
    if (clformer_config_family(c) != CLFORMER_FAMILY_GPT || !c->norm_first ||
        c->positional != CLFORMER_POS_LEARNED || !c->share_tgt_embed || c->scale_embed ||
        c->generator_bias)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "only a GPT-2 shaped model exports to the hf-gpt2 format: decoder-only, "
                       "pre-norm, learned positions, tied embeddings, no embedding scale and no "
                       "generator bias (train it with --task lm)");
    return CLFORMER_OK;
}

/* --- export ---------------------------------------------------------------- */

static const char *hf_activation(clformer_activation a)
{
    return a == CLFORMER_ACT_GELU_TANH ? "gelu_new" : a == CLFORMER_ACT_GELU ? "gelu" : "relu";
}

/* The id of GPT-2's "<|endoftext|>" when the model's BPE has it, else clformer's <eos>. */
static int end_of_text(const clformer_model *m, bool start)
{
    const int32_t id = m->bpe ? cf_bpe_token_id(m->bpe, "<|endoftext|>") : -1;
    return id >= 0 ? (int)id : start ? CLFORMER_SOS : CLFORMER_EOS;
}

static clformer_status write_config(const clformer_model *m, const char *path,
                                    clformer_precision precision)
{
    const clformer_config *c = &m->cfg;
    json_t *o = json_pack(
        "{s:s, s:[s], s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:f, s:f, s:f, s:f, s:f, s:b, s:b, "
        "s:b, s:s, s:i, s:i}",
        "model_type", "gpt2", "architectures", "GPT2LMHeadModel", "vocab_size", c->tgt_vocab,
        "n_positions", c->max_len, "n_embd", c->d_model, "n_layer", c->n_dec_layers, "n_head",
        c->n_heads, "n_inner", c->d_ff, "activation_function", hf_activation(c->activation),
        "layer_norm_epsilon", (double)c->ln_eps, "resid_pdrop", (double)c->dropout, "embd_pdrop",
        (double)c->dropout, "attn_pdrop", (double)c->dropout, "initializer_range", 0.02,
        "scale_attn_weights", 1, "tie_word_embeddings", 1, "scale_attn_by_inverse_layer_idx", 0,
        "torch_dtype",
        precision == CLFORMER_BF16 ? "bfloat16" : precision == CLFORMER_FP16 ? "float16" : "float32",
        "bos_token_id", end_of_text(m, true), "eos_token_id", end_of_text(m, false));
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(9)) : NULL;
    json_decref(o);
    if (!text) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

static clformer_status write_vocab(const clformer_model *m, const char *path)
{
    const char *const *v = clformer_model_tgt_vocab(m);
    if (!v) return CLFORMER_OK;
    json_t *a = json_array();
    for (int i = 0; a && i < m->cfg.tgt_vocab; i++) json_array_append_new(a, json_string(v[i]));
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!text) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

static clformer_status write_weights(clformer_model *m, const char *path,
                                     clformer_precision precision)
{
    const cf_param_layout *l = &m->layout;
    cf_st_writer *w = NULL;
    size_t most = 0;
    for (size_t i = 0; i < l->n_entries; i++) {
        const cf_param_entry *e = &l->entries[i];
        const size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        if (n > most) most = n;
    }
    float *a = malloc(most * sizeof *a), *b = malloc(most * sizeof *b);
    clformer_status st = a && b ? cf_st_writer_new(path, &w)
                                : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    /* transformers reads the metadata's format: "pt" for PyTorch tensors */
    if (st == CLFORMER_OK) st = cf_st_set_metadata(w, "format", "pt");
    char name[160];
    bool t;
    for (size_t i = 0; i < l->n_entries && st == CLFORMER_OK; i++) {
        const cf_param_entry *e = &l->entries[i];
        if (!hf_name(e->name, name, sizeof name, &t))
            st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "no GPT-2 name for '%s'", e->name);
        const int64_t shape[2] = {(int64_t)(t ? e->cols : e->rows), (int64_t)(t ? e->rows : e->cols)};
        if (st == CLFORMER_OK)
            st = cf_st_declare(w, name, cf_st_dtype_of(precision), e->rank,
                               e->rank == 2 ? shape : shape + 1);
    }
    if (st == CLFORMER_OK) st = cf_st_begin(w);
    for (size_t i = 0; i < l->n_entries && st == CLFORMER_OK; i++) {
        const cf_param_entry *e = &l->entries[i];
        const size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        hf_name(e->name, name, sizeof name, &t);
        st = clformer_model_read_tensor(m, e->name, false, a, n);
        if (st == CLFORMER_OK && t) transpose(b, a, e->rows, e->cols);
        if (st == CLFORMER_OK) st = cf_st_write_f32(w, name, t ? b : a, n); /* rounded */
    }
    if (st == CLFORMER_OK) st = cf_st_commit(w);
    else cf_st_writer_free(w);
    free(a);
    free(b);
    return st;
}

static void join(char *out, size_t cap, const char *dir, const char *file)
{
    snprintf(out, cap, "%s/%s", dir, file);
}

clformer_status clformer_model_export_hf_gpt2(clformer_model *m, const char *dir)
{
    return clformer_model_export_hf_gpt2_as(m, dir, CLFORMER_FP32);
}

clformer_status clformer_model_export_hf_gpt2_as(clformer_model *m, const char *dir,
                                                 clformer_precision precision)
{
    if (!clformer_precision_name(precision))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "export: precision %d is not "
                       "CLFORMER_FP32, CLFORMER_BF16 or CLFORMER_FP16", (int)precision);
    CF_TRY(gpt2_shaped(&m->cfg));
    if (strlen(dir) > 3900)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the directory path is too long");
    clformer_status st = cf_make_dirs(dir);
    char path[4096];
    join(path, sizeof path, dir, "model.safetensors");
    if (st == CLFORMER_OK) st = write_weights(m, path, precision);
    join(path, sizeof path, dir, "config.json");
    if (st == CLFORMER_OK) st = write_config(m, path, precision);
    if (m->bpe) { /* GPT-2's own files: transformers' tokenizers read them */
        join(path, sizeof path, dir, "vocab.json");
        if (st == CLFORMER_OK) st = cf_write_file_atomic(path, m->bpe_text[0], m->bpe_len[0]);
        join(path, sizeof path, dir, "merges.txt");
        if (st == CLFORMER_OK) st = cf_write_file_atomic(path, m->bpe_text[1], m->bpe_len[1]);
    } else {
        join(path, sizeof path, dir, "clformer_vocab.json");
        if (st == CLFORMER_OK) st = write_vocab(m, path);
        join(path, sizeof path, dir, "clformer_spm.model");
        if (st == CLFORMER_OK && m->spm[1])
            st = cf_write_file_atomic(path, m->spm[1], m->spm_size[1]);
    }
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "exporting to '%s': ", dir);
}

/* --- import ---------------------------------------------------------------- */

static clformer_status json_int_field(json_t *o, const char *key, int fallback, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (fallback < 0) return cf_fail(CLFORMER_ERR_FORMAT, "config.json lacks \"%s\"", key);
        *out = fallback;
        return CLFORMER_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > (1 << 24))
        return cf_fail(CLFORMER_ERR_FORMAT, "config.json \"%s\" must be a positive integer", key);
    *out = (int)json_integer_value(v);
    return CLFORMER_OK;
}

static clformer_status read_config(const char *path, clformer_config *c)
{
    json_error_t err;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!o) return cf_fail(CLFORMER_ERR_FORMAT, "%s: not readable JSON (%s)", path, err.text);
    clformer_config_default(c);
    c->n_enc_layers = 0, c->src_vocab = 0;
    c->positional = CLFORMER_POS_LEARNED;
    c->share_tgt_embed = true, c->scale_embed = false, c->generator_bias = false;
    c->norm_first = true, c->dropout = 0.0f;
    const char *type = json_string_value(json_object_get(o, "model_type"));
    const char *act = json_string_value(json_object_get(o, "activation_function"));
    json_t *eps = json_object_get(o, "layer_norm_epsilon");
    clformer_status st = CLFORMER_OK;
    if (!type || strcmp(type, "gpt2"))
        st = cf_fail(CLFORMER_ERR_FORMAT, "%s: model_type is \"%s\", not \"gpt2\"", path,
                     type ? type : "(none)");
    if (st == CLFORMER_OK) st = json_int_field(o, "n_embd", -1, &c->d_model);
    if (st == CLFORMER_OK) st = json_int_field(o, "n_head", -1, &c->n_heads);
    if (st == CLFORMER_OK) st = json_int_field(o, "n_layer", -1, &c->n_dec_layers);
    if (st == CLFORMER_OK) st = json_int_field(o, "vocab_size", -1, &c->tgt_vocab);
    if (st == CLFORMER_OK) st = json_int_field(o, "n_positions", -1, &c->max_len);
    if (st == CLFORMER_OK) st = json_int_field(o, "n_inner", 4 * c->d_model, &c->d_ff);
    if (st == CLFORMER_OK && eps) {
        if (!json_is_number(eps)) st = cf_fail(CLFORMER_ERR_FORMAT, "%s: layer_norm_epsilon must be a number", path);
        else c->ln_eps = (float)json_number_value(eps);
    }
    if (st == CLFORMER_OK) {
        if (!act || !strcmp(act, "gelu_new") || !strcmp(act, "gelu_pytorch_tanh"))
            c->activation = CLFORMER_ACT_GELU_TANH;
        else if (!strcmp(act, "gelu")) c->activation = CLFORMER_ACT_GELU;
        else if (!strcmp(act, "relu")) c->activation = CLFORMER_ACT_RELU;
        else st = cf_fail(CLFORMER_ERR_FORMAT, "%s: activation_function \"%s\" is not supported "
                          "(gelu_new, gelu_pytorch_tanh, gelu or relu)", path, act);
    }
    if (st == CLFORMER_OK && (json_is_true(json_object_get(o, "scale_attn_by_inverse_layer_idx")) ||
                              json_is_false(json_object_get(o, "scale_attn_weights"))))
        st = cf_fail(CLFORMER_ERR_FORMAT, "%s: attention scaling other than 1/sqrt(head size) "
                     "is not supported", path);
    json_decref(o);
    if (st == CLFORMER_OK) st = clformer_config_validate(c);
    return st;
}

/* The tokens of clformer_vocab.json when the directory has one (and they
 * fit the model), else <pad> <sos> <eos> <unk> and <id_N>. */
static char **read_vocab(const char *dir, int n)
{
    char path[4096];
    join(path, sizeof path, dir, "clformer_vocab.json");
    json_t *a = json_load_file(path, 0, NULL);
    const bool have = json_is_array(a) && json_array_size(a) == (size_t)n;
    char **v = calloc((size_t)n, sizeof *v);
    static const char *const specials[4] = {"<pad>", "<sos>", "<eos>", "<unk>"};
    for (int i = 0; v && i < n; i++) {
        const char *s = have ? json_string_value(json_array_get(a, (size_t)i)) : NULL;
        char name[32];
        snprintf(name, sizeof name, "<id_%d>", i);
        v[i] = strdup(s ? s : i < 4 ? specials[i] : name);
    }
    json_decref(a);
    return v;
}

/* The directory's tokenizer, if any: GPT-2's vocab.json + merges.txt (both
 * or neither), else clformer_spm.model (a SentencePiece model's pieces are
 * clformer_vocab.json's tokens). */
static clformer_status read_tokenizer(clformer_model *m, const char *dir)
{
    static const char *const names[3] = {"vocab.json", "merges.txt", "clformer_spm.model"};
    char paths[3][4096];
    bool has[3];
    for (int k = 0; k < 3; k++) {
        join(paths[k], sizeof paths[k], dir, names[k]);
        has[k] = access(paths[k], F_OK) == 0;
    }
    if (has[0] != has[1])
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s' has %s but no %s: GPT-2's BPE tokenizer needs "
                       "both (copy the missing file from the model's tokenizer)",
                       dir, names[has[0] ? 0 : 1], names[has[0] ? 1 : 0]);
    const int first = has[0] ? 0 : has[2] ? 2 : 3, last = has[0] ? 1 : first;
    if (first == 3) return CLFORMER_OK;
    char *text[2] = {NULL, NULL};
    size_t size[2] = {0, 0};
    clformer_status st = CLFORMER_OK;
    for (int k = first; k <= last && st == CLFORMER_OK; k++)
        st = cf_read_file(paths[k], &text[k - first], &size[k - first]);
    if (st == CLFORMER_OK && has[0])
        st = cf_model_set_bpe(m, text[0], size[0], paths[0], text[1], size[1], paths[1]);
    else if (st == CLFORMER_OK)
        st = clformer_model_set_tokenizer(m, true, text[0], size[0]);
    free(text[0]);
    free(text[1]);
    return st;
}

/* A tensor the model has no use for: GPT-2's attention mask buffers (older
 * files keep them) and the tied lm_head. */
static bool ignorable(const char *name)
{
    const size_t n = strlen(name);
    return !strcmp(name, "lm_head.weight") || (n > 9 && !strcmp(name + n - 9, ".attn.bias")) ||
           (n > 16 && !strcmp(name + n - 16, ".attn.masked_bias"));
}

static clformer_status read_weights(clformer_model *m, const cf_st_reader *r)
{
    const cf_param_layout *l = &m->layout;
    /* files from GPT2Model have no "transformer." prefix: accept both */
    const bool prefixed = cf_st_find(r, "transformer.wte.weight") != NULL;
    for (size_t i = 0; i < cf_st_count(r); i++) {
        const char *name = cf_st_tensor_at(r, i)->name;
        if (ignorable(name)) continue;
        bool known = false, t;
        char hf[160];
        for (size_t k = 0; k < l->n_entries && !known; k++)
            known = hf_name(l->entries[k].name, hf, sizeof hf, &t) &&
                    !strcmp(prefixed ? hf : hf + 12, name);
        if (!known)
            return cf_fail(CLFORMER_ERR_FORMAT, "unexpected tensor '%s': not part of a GPT-2 "
                           "model of this config.json", name);
    }
    clformer_status st = CLFORMER_OK;
    for (size_t k = 0; k < l->n_entries && st == CLFORMER_OK; k++) {
        const cf_param_entry *e = &l->entries[k];
        char hf[160];
        bool t;
        hf_name(e->name, hf, sizeof hf, &t);
        const char *name = prefixed ? hf : hf + 12;
        const int64_t shape[2] = {(int64_t)(t ? e->cols : e->rows), (int64_t)(t ? e->rows : e->cols)};
        const cf_st_tensor *tensor;
        st = cf_st_expect_float(r, name, e->rank, e->rank == 2 ? shape : shape + 1, &tensor);
        const size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        float *a = st == CLFORMER_OK ? malloc(n * sizeof *a) : NULL;
        float *b = st == CLFORMER_OK ? malloc(n * sizeof *b) : NULL;
        if (st == CLFORMER_OK && (!a || !b))
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        if (st == CLFORMER_OK) st = cf_st_read_f32(r, tensor, a, n); /* F32, BF16, F16 */
        if (st == CLFORMER_OK && t) transpose(b, a, e->cols, e->rows);
        if (st == CLFORMER_OK) st = clformer_model_write_tensor(m, e->name, t ? b : a, n);
        free(a);
        free(b);
    }
    return st;
}

bool cf_is_directory(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISDIR(s.st_mode);
}

clformer_status cf_model_load_hf_gpt2(clformer_context *ctx, const char *dir,
                                      clformer_model **out)
{
    *out = NULL;
    char path[4096];
    if (strlen(dir) > 3900)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the directory path is too long");
    clformer_config c;
    join(path, sizeof path, dir, "config.json");
    CF_TRY(read_config(path, &c));
    join(path, sizeof path, dir, "model.safetensors");
    cf_st_reader *r = NULL;
    clformer_model *m = NULL;
    clformer_status st = cf_st_open(path, &r);
    if (st == CLFORMER_OK) st = clformer_model_create(ctx, &c, 1, &m);
    if (st == CLFORMER_OK) st = read_weights(m, r);
    char **vocab = st == CLFORMER_OK ? read_vocab(dir, c.tgt_vocab) : NULL;
    bool vocab_ok = vocab != NULL;
    for (int i = 0; vocab && i < c.tgt_vocab; i++) vocab_ok &= vocab[i] != NULL;
    if (st == CLFORMER_OK && !vocab_ok) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLFORMER_OK) st = clformer_model_set_vocabs(m, NULL, (const char *const *)vocab);
    for (int i = 0; vocab && i < c.tgt_vocab; i++) free(vocab[i]);
    free(vocab);
    if (st == CLFORMER_OK) st = read_tokenizer(m, dir);
    cf_st_close(r);
    if (st != CLFORMER_OK) {
        clformer_model_free(m);
        return st;
    }
    *out = m;
    return CLFORMER_OK;
}
