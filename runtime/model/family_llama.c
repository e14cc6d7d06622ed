/*
 * The llama family (family.h): Llama's decoder as transformers 4.36's
 * LlamaForCausalLM has it (and TinyLlama, SmolLM, Qwen's and Mistral's
 * shape): pre-norm RMSNorm, a SwiGLU feed-forward, rotary positions
 * (rope_theta, linear or dynamic scaling), grouped-query attention
 * (n_kv_heads), no biases, a head tied to the embedding or not.
 * Parameters carry Hugging Face's names, so a checkpoint's tensors are
 * model.safetensors' (runtime/format/hf_llama.c), and start as Hugging
 * Face initialises them: N(0, 0.02^2) matrices, RMSNorm weights 1.
 */
#include "family.h"
#include "names.h"
#include "ops.h"

#include <math.h>

static size_t kv_heads(const clformer_config *c)
{
    return (size_t)(c->n_kv_heads > 0 ? c->n_kv_heads : c->n_heads);
}

/* The rotary configuration of a config (its fields checked by validate). */
static cf_rope_config rope_of(const clformer_config *c)
{
    static const cf_rope_scaling scaling[] = {CF_ROPE_PLAIN, CF_ROPE_LINEAR, CF_ROPE_DYNAMIC};
    return (cf_rope_config){(size_t)(c->d_model / c->n_heads), (double)c->rope_theta,
                            scaling[c->rope_scaling], (double)c->rope_factor,
                            (size_t)(c->rope_base_len > 0 ? c->rope_base_len : c->max_len)};
}

static clformer_status llama_validate(const clformer_config *c)
{
    CF_TRY(cf_family_decoder_only_rules(c));
    if (c->activation != CLFORMER_ACT_SILU || c->positional != CLFORMER_POS_ROPE)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the llama family's feed-forward is SwiGLU and its positions rotary: "
                       "activation must be silu and positional rope, got %s and %s",
                       clformer_activation_name(c->activation),
                       clformer_positional_name(c->positional));
    if (!c->norm_first || c->scale_embed || c->generator_bias)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the llama family is pre-norm, with no embedding scale and no head bias: "
                       "set norm_first, and clear scale_embed and generator_bias");
    if (c->n_kv_heads < 0 || (c->n_kv_heads > 0 && c->n_heads % c->n_kv_heads != 0))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "n_kv_heads %d must divide n_heads %d (0: n_heads; 1: multi-query)",
                       c->n_kv_heads, c->n_heads);
    if (!clformer_rope_scaling_name(c->rope_scaling))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "rope_scaling %d is none of none, linear and dynamic", (int)c->rope_scaling);
    if (c->rope_base_len < 0)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "rope_base_len must be 0 (max_len) or positive, got %d", c->rope_base_len);
    const cf_rope_config rope = rope_of(c);
    clformer_status st = cf_rope_check_config(&rope);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "the llama family's rotary positions: ");
}

static cf_blocks llama_blocks(const clformer_config *c)
{
    return (cf_blocks){false, CF_NORM_RMS, true, true, rope_of(c), kv_heads(c)};
}

static clformer_status llama_layout(const clformer_config *c, cf_param_layout *l)
{
    const size_t d = (size_t)c->d_model, ff = (size_t)c->d_ff, V = (size_t)c->tgt_vocab;
    const size_t kvd = kv_heads(c) * (d / (size_t)c->n_heads);
    const int n = c->n_dec_layers;
    cf_param_builder b;
    CF_TRY(cf_param_builder_start(&b, l, 4 + (size_t)n * 9, 0, n));
    l->src_embed = l->pos_embed = l->generator_b = CF_NO_PARAM;
    l->enc_norm_w = l->enc_norm_b = l->dec_norm_b = CF_NO_PARAM;
    const char *L = "model.layers";

    /* rank-2 tensors: the weight-decay prefix. q, k and v lie one after
     * another, so that their rows are one packed projection (one GEMM). */
    l->tgt_embed = cf_param_add(&b, 2, V, d, CF_INIT_NORMAL, "model.embed_tokens.weight");
    for (int i = 0; i < n; i++) {
        cf_layer_params *p = &l->dec[i];
        p->self_attn.in_proj_w =
            cf_param_add(&b, 2, d, d, CF_INIT_NORMAL, "%s.%d.self_attn.q_proj.weight", L, i);
        cf_param_add(&b, 2, kvd, d, CF_INIT_NORMAL, "%s.%d.self_attn.k_proj.weight", L, i);
        cf_param_add(&b, 2, kvd, d, CF_INIT_NORMAL, "%s.%d.self_attn.v_proj.weight", L, i);
        p->self_attn.out_w =
            cf_param_add(&b, 2, d, d, CF_INIT_NORMAL, "%s.%d.self_attn.o_proj.weight", L, i);
        p->lin1_w = cf_param_add(&b, 2, ff, d, CF_INIT_NORMAL, "%s.%d.mlp.gate_proj.weight", L, i);
        p->lin3_w = cf_param_add(&b, 2, ff, d, CF_INIT_NORMAL, "%s.%d.mlp.up_proj.weight", L, i);
        p->lin2_w = cf_param_add(&b, 2, d, ff, CF_INIT_NORMAL, "%s.%d.mlp.down_proj.weight", L, i);
        p->self_attn.in_proj_b = p->self_attn.out_b = p->lin1_b = p->lin2_b = CF_NO_PARAM;
        p->cross_attn = (cf_attn_params){CF_NO_PARAM, CF_NO_PARAM, CF_NO_PARAM, CF_NO_PARAM};
        p->norm_w[2] = p->norm_b[0] = p->norm_b[1] = p->norm_b[2] = CF_NO_PARAM;
    }
    l->generator_w = c->share_tgt_embed
                         ? l->tgt_embed
                         : cf_param_add(&b, 2, V, d, CF_INIT_NORMAL, "lm_head.weight");
    const size_t decay_end = b.next;

    /* rank-1 tensors: the RMSNorm weights */
    for (int i = 0; i < n; i++) {
        l->dec[i].norm_w[0] =
            cf_param_add(&b, 1, 0, d, CF_INIT_ONES, "%s.%d.input_layernorm.weight", L, i);
        l->dec[i].norm_w[1] = cf_param_add(&b, 1, 0, d, CF_INIT_ONES,
                                           "%s.%d.post_attention_layernorm.weight", L, i);
    }
    l->dec_norm_w = cf_param_add(&b, 1, 0, d, CF_INIT_ONES, "model.norm.weight");
    cf_param_builder_finish(&b, decay_end);
    return CLFORMER_OK;
}

/* A tied head is the embedding itself, stored once: Hugging Face's
 * save_pretrained leaves lm_head.weight out too. */
static int llama_aliases(const clformer_config *c, const char *names[2])
{
    (void)c, (void)names;
    return 0;
}

/* Shapes: llama-small is stories15M's of the llama2 C project (with a 32,000-token
 * SentencePiece vocabulary, 15M parameters; a CPU run); smollm-135m and
 * tinyllama-1.1b are SmolLM-135M's and TinyLlama-1.1B's. */
static const struct {
    int d_model, n_heads, n_kv_heads, n_layers, d_ff, context;
    bool tied;
} table[] = {
    {288, 6, 0, 6, 768, 256, true}, /* 0: a key/value head per head, whatever --heads says */
    {576, 9, 3, 30, 1536, 2048, true},
    {2048, 32, 4, 22, 5632, 2048, false},
};
static const char *const names[] = {"llama-small", "smollm-135m", "tinyllama-1.1b", NULL};
_Static_assert(CF_COUNT(names) == CF_COUNT(table) + 1, "a name for every preset");

static void llama_preset(int i, clformer_config *c)
{
    c->family = CLFORMER_FAMILY_LLAMA;
    c->d_model = table[i].d_model;
    c->n_heads = table[i].n_heads;
    c->n_kv_heads = table[i].n_kv_heads;
    c->d_ff = table[i].d_ff;
    c->n_enc_layers = 0;
    c->n_dec_layers = table[i].n_layers;
    c->max_len = table[i].context;
    c->src_vocab = 0;
    c->dropout = 0.0f;
    c->norm_first = true;
    c->positional = CLFORMER_POS_ROPE;
    c->activation = CLFORMER_ACT_SILU;
    c->share_tgt_embed = table[i].tied;
    c->scale_embed = false;
    c->generator_bias = false;
    c->rope_theta = 10000.0f;
    c->rope_scaling = CLFORMER_ROPE_PLAIN;
    c->rope_factor = 1.0f;
    c->rope_base_len = 0;
}

const cf_family cf_family_llama = {
    CLFORMER_FAMILY_LLAMA, false, -1, names, llama_preset,
    llama_validate, llama_blocks, llama_layout, llama_aliases, cf_batch_check_windows, true,
};
