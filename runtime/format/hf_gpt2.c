/*
 * Hugging Face's GPT-2 layout (transformers' GPT2LMHeadModel as
 * save_pretrained writes it: config.json and model.safetensors) to and from
 * a decoder-only clformer model. The blocks are the same; only names and the
 * storage of matrices differ: GPT-2's Conv1D keeps weights as [in, out],
 * clformer (as torch.nn.Linear) as [out, in], so every matrix but the
 * embeddings is transposed on the way. The fused Q|K|V projection has the
 * same row order on both sides; lm_head is tied to wte (clformer's tied
 * generator without bias). The tokenizer's files: hf_tokenizer_files.c.
 */
#include "fileio.h"
#include "hf.h"
#include "params.h"
#include "model.h"
#include "safetensors.h"
#include "status.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        "torch_dtype", cf_hf_torch_dtype(precision),
        "bos_token_id", end_of_text(m, true), "eos_token_id", end_of_text(m, false));
    return cf_hf_write_config(m, o, path);
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
    /* transformers reads the metadata's format: "pt" for PyTorch tensors; the
     * sums are clformer's (transformers ignores them) */
    if (st == CLFORMER_OK) st = cf_st_set_metadata(w, "format", "pt");
    if (st == CLFORMER_OK) st = cf_st_checksums(w);
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

clformer_status clformer_model_export_hf_gpt2(clformer_model *m, const char *dir)
{
    return clformer_model_export_hf_gpt2_as(m, dir, CLFORMER_FP32);
}

clformer_status clformer_model_export_hf_gpt2_as(clformer_model *m, const char *dir,
                                                 clformer_precision precision)
{
    static const cf_hf_format gpt2 = {gpt2_shaped, write_weights, write_config};
    return cf_hf_export(m, dir, precision, &gpt2);
}

/* --- import ---------------------------------------------------------------- */

/* A tensor the model has no use for: GPT-2's attention mask buffers (older
 * files keep them) and the tied lm_head. */
static bool ignorable(const char *name)
{
    const size_t n = strlen(name);
    return !strcmp(name, "lm_head.weight") || (n > 9 && !strcmp(name + n - 9, ".attn.bias")) ||
           (n > 16 && !strcmp(name + n - 16, ".attn.masked_bias"));
}

/* The file's tensor of layout entry e, checked (name, shape, float dtype). */
static clformer_status find_weight(const cf_st_reader *r, const cf_param_entry *e, bool prefixed,
                                   const cf_st_tensor **tensor)
{
    char hf[160];
    bool t;
    hf_name(e->name, hf, sizeof hf, &t);
    const int64_t shape[2] = {(int64_t)(t ? e->cols : e->rows), (int64_t)(t ? e->rows : e->cols)};
    return cf_st_expect_float(r, prefixed ? hf : hf + 12, e->rank, e->rank == 2 ? shape : shape + 1,
                              tensor);
}

/* Every tensor of `l` is in the file with its shape, and the file holds no
 * other: checked against the header (whose offsets the reader checked
 * against the file's size) before anything is allocated, so a config.json
 * that asks for 1000 layers of a 2-layer file is refused at once. */
static clformer_status check_weights(const cf_param_layout *l, const cf_st_reader *r,
                                     bool prefixed)
{
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
    const cf_st_tensor *tensor;
    for (size_t k = 0; k < l->n_entries; k++) CF_TRY(find_weight(r, &l->entries[k], prefixed, &tensor));
    return CLFORMER_OK;
}

static clformer_status read_weights(clformer_model *m, const cf_st_reader *r, bool prefixed)
{
    const cf_param_layout *l = &m->layout;
    clformer_status st = CLFORMER_OK;
    for (size_t k = 0; k < l->n_entries && st == CLFORMER_OK; k++) {
        const cf_param_entry *e = &l->entries[k];
        char hf[160];
        bool t;
        hf_name(e->name, hf, sizeof hf, &t);
        const cf_st_tensor *tensor;
        st = find_weight(r, e, prefixed, &tensor);
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

clformer_status cf_hf_gpt2_weights(clformer_context *ctx, const clformer_config *c,
                                   const cf_st_reader *r, const char *path, clformer_model **m)
{
    (void)path; /* find_weight's errors name the tensors */
    /* files from GPT2Model have no "transformer." prefix: accept both */
    const bool prefixed = cf_st_find(r, "transformer.wte.weight") != NULL;
    cf_param_layout layout = {0};
    clformer_status st = cf_param_layout_make(c, &layout);
    if (st == CLFORMER_OK) st = check_weights(&layout, r, prefixed);
    cf_param_layout_free(&layout);
    if (st == CLFORMER_OK) st = clformer_model_create(ctx, c, 1, m);
    return st == CLFORMER_OK ? read_weights(*m, r, prefixed) : st;
}
