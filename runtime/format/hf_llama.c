/*
 * Hugging Face's Llama layout (transformers' LlamaForCausalLM as
 * save_pretrained writes it: config.json and model.safetensors) to and from
 * a model of the llama family. The family's parameters carry Hugging Face's
 * names and shapes (family_llama.c), so tensors go across as they are: no
 * renaming, no transposing; model.safetensors may hold fp32, bf16 or fp16.
 * A tied head is the embedding alone (no lm_head.weight), as transformers
 * writes it. config.json is read by hf_llama_config.c (through
 * hf_gpt2_files.c's checks of a directory's small files), the tokenizer's
 * files by hf_tokenizer_files.c.
 */
#include "config.h"
#include "fileio.h"
#include "hf.h"
#include "model.h"
#include "safetensors.h"
#include "status.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- export ---------------------------------------------------------------- */

/* The id of a special token in the model's tokenizer (a Hugging Face
 * tokenizer's BOS or EOS, a GPT-2 BPE's token), else clformer's own (<sos> 1
 * and <eos> 2, Llama's bos and eos ids too). */
static int special_id(const clformer_model *m, bool eos, const char *token, int fallback)
{
    const int32_t id = m->hf_tok ? (eos ? cf_hf_tokenizer_eos(m->hf_tok) : cf_hf_tokenizer_bos(m->hf_tok))
                       : m->bpe  ? cf_bpe_token_id(m->bpe, token)
                                 : -1;
    return id >= 0 ? (int)id : fallback;
}

static clformer_status write_config(const clformer_model *m, const char *path,
                                    clformer_precision precision)
{
    const clformer_config *c = &m->cfg;
    const bool dynamic = c->rope_scaling == CLFORMER_ROPE_DYNAMIC;
    json_t *scaling = c->rope_scaling == CLFORMER_ROPE_PLAIN
                          ? json_null()
                          : json_pack("{s:s, s:f}", "type",
                                      clformer_rope_scaling_name(c->rope_scaling), "factor",
                                      (double)c->rope_factor);
    const float attention_dropout = cf_config_dropout_of(c, CF_DROPOUT_ATTENTION);
    json_t *o = json_pack(
        "{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:f, s:f, s:o, s:b, s:b, s:f, s:s, "
        "s:f, s:i, s:b, s:s, s:i, s:i}",
        "architectures", "LlamaForCausalLM", "model_type", "llama", "vocab_size", c->tgt_vocab,
        "hidden_size", c->d_model, "intermediate_size", c->d_ff, "num_hidden_layers",
        c->n_dec_layers, "num_attention_heads", c->n_heads, "num_key_value_heads",
        c->n_kv_heads > 0 ? c->n_kv_heads : c->n_heads, "max_position_embeddings",
        dynamic && c->rope_base_len > 0 ? c->rope_base_len : c->max_len, "rms_norm_eps",
        (double)c->ln_eps, "rope_theta", (double)c->rope_theta, "rope_scaling", scaling,
        "tie_word_embeddings", c->share_tgt_embed, "attention_bias", 0, "attention_dropout",
        (double)attention_dropout, "hidden_act", "silu", "initializer_range", 0.02,
        "pretraining_tp", 1, "use_cache", 1, "torch_dtype", cf_hf_torch_dtype(precision),
        "bos_token_id", special_id(m, false, "<s>", CLFORMER_SOS), "eos_token_id",
        special_id(m, true, "</s>", CLFORMER_EOS));
    return cf_hf_write_config(m, o, path);
}

static clformer_status write_weights(clformer_model *m, const char *path,
                                     clformer_precision precision)
{
    const cf_param_layout *l = &m->layout;
    size_t most = 0;
    for (size_t i = 0; i < l->n_entries; i++) {
        const cf_param_entry *e = &l->entries[i];
        const size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        if (n > most) most = n;
    }
    float *host = malloc(most * sizeof *host);
    cf_st_writer *w = NULL;
    clformer_status st = host ? cf_st_writer_new(path, &w)
                              : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    /* transformers reads the metadata's format: "pt" for PyTorch tensors */
    if (st == CLFORMER_OK) st = cf_st_set_metadata(w, "format", "pt");
    for (size_t i = 0; i < l->n_entries && st == CLFORMER_OK; i++) {
        const cf_param_entry *e = &l->entries[i];
        const int64_t shape[2] = {(int64_t)e->rows, (int64_t)e->cols};
        st = cf_st_declare(w, e->name, cf_st_dtype_of(precision), e->rank,
                           e->rank == 2 ? shape : shape + 1);
    }
    if (st == CLFORMER_OK) st = cf_st_begin(w);
    for (size_t i = 0; i < l->n_entries && st == CLFORMER_OK; i++) {
        const cf_param_entry *e = &l->entries[i];
        const size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        st = clformer_model_read_tensor(m, e->name, false, host, n);
        if (st == CLFORMER_OK) st = cf_st_write_f32(w, e->name, host, n); /* rounded */
    }
    if (st == CLFORMER_OK) st = cf_st_commit(w);
    else cf_st_writer_free(w);
    free(host);
    return st;
}

static clformer_status llama_shaped(const clformer_config *c)
{
    if (clformer_config_family(c) != CLFORMER_FAMILY_LLAMA)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "only a model of the llama family exports to the hf-llama format; this "
                       "one is of the %s family (train one with --config llama-small, say)",
                       clformer_family_name(clformer_config_family(c)));
    return CLFORMER_OK;
}

clformer_status clformer_model_export_hf_llama_as(clformer_model *m, const char *dir,
                                                  clformer_precision precision)
{
    static const cf_hf_format llama = {llama_shaped, write_weights, write_config};
    return cf_hf_export(m, dir, precision, &llama);
}

/* --- import ---------------------------------------------------------------- */

/* A tensor transformers keeps but the model computes: older saves hold each
 * layer's rotary inv_freq. */
static bool ignorable(const char *name)
{
    const char *tail = ".self_attn.rotary_emb.inv_freq";
    const size_t n = strlen(name), t = strlen(tail);
    return n > t && !strcmp(name + n - t, tail);
}

static clformer_status read_weights(clformer_model *m, const cf_st_reader *r, const char *origin)
{
    const cf_param_layout *l = &m->layout;
    for (size_t i = 0; i < cf_st_count(r); i++) {
        const char *name = cf_st_tensor_at(r, i)->name;
        if (!ignorable(name) && !cf_param_find(l, name))
            return cf_fail(CLFORMER_ERR_FORMAT, "%s: unexpected tensor '%s': not part of a "
                           "Llama model of this config.json%s", origin, name,
                           !strcmp(name, "lm_head.weight")
                               ? " (config.json ties the head: tie_word_embeddings is true)"
                               : "");
    }
    clformer_status st = CLFORMER_OK;
    float *host = NULL;
    size_t cap = 0;
    for (size_t k = 0; k < l->n_entries && st == CLFORMER_OK; k++) {
        const cf_param_entry *e = &l->entries[k];
        const int64_t shape[2] = {(int64_t)e->rows, (int64_t)e->cols};
        const size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        const cf_st_tensor *t;
        st = cf_st_expect_float(r, e->name, e->rank, e->rank == 2 ? shape : shape + 1, &t);
        if (st == CLFORMER_OK && n > cap) {
            free(host);
            cap = n;
            host = malloc(n * sizeof *host);
            if (!host) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        if (st == CLFORMER_OK) st = cf_st_read_f32(r, t, host, n); /* F32, BF16, F16 */
        if (st == CLFORMER_OK) st = clformer_model_write_tensor(m, e->name, host, n);
    }
    free(host);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "%s: ", origin);
}

clformer_status cf_hf_llama_weights(clformer_context *ctx, const clformer_config *c,
                                    const cf_st_reader *r, const char *path, clformer_model **m)
{
    CF_TRY(clformer_model_create(ctx, c, 1, m));
    return read_weights(*m, r, path);
}
