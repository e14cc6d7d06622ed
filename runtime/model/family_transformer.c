/*
 * The two families of the paper's blocks (family.h): the encoder-decoder
 * Transformer (docs/MODEL.md) and a GPT-2-style decoder, the same decoder
 * without encoder or cross-attention. LayerNorm, a feed-forward of one
 * activation, packed Q|K|V projections with biases, sinusoidal or learned
 * positions; PyTorch's nn.Transformer names, Xavier-uniform matrices.
 */
#include "family.h"
#include "names.h"
#include "status.h"

#include <string.h>

/* --- config ---------------------------------------------------------------- */

/* What neither family has: the llama family's parts. */
static clformer_status classic_parts(const clformer_config *c)
{
    if (c->activation == CLFORMER_ACT_SILU || c->positional == CLFORMER_POS_ROPE)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s is the llama family's (family llama), not the %s family's",
                       c->activation == CLFORMER_ACT_SILU ? "a SwiGLU feed-forward (activation silu)"
                                                          : "rotary positions (positional rope)",
                       clformer_family_name(clformer_config_family(c)));
    if (c->n_kv_heads != 0 && c->n_kv_heads != c->n_heads)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "n_kv_heads %d: grouped-query attention is the llama family's; the %s "
                       "family has a key/value head per head (n_kv_heads 0)",
                       c->n_kv_heads, clformer_family_name(clformer_config_family(c)));
    return CLFORMER_OK;
}

static clformer_status encdec_validate(const clformer_config *c)
{
    if (c->n_enc_layers < 0 || c->n_enc_layers > 1024)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "n_enc_layers must be between 0 (decoder-only) and 1024, got %d",
                       c->n_enc_layers);
    if (c->src_vocab < 5 || c->src_vocab > (1 << 24))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "vocabulary sizes must be between 5 (4 special tokens and one word) and "
                       "%d, got src_vocab %d, tgt_vocab %d", 1 << 24, c->src_vocab, c->tgt_vocab);
    if (c->share_all_embed && !c->share_tgt_embed)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "share_all_embed ties the generator too: set share_tgt_embed as well");
    if (c->share_all_embed && c->src_vocab != c->tgt_vocab)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "share_all_embed needs one joint vocabulary: src_vocab %d and tgt_vocab "
                       "%d differ", c->src_vocab, c->tgt_vocab);
    return classic_parts(c);
}

static clformer_status gpt_validate(const clformer_config *c)
{
    CF_TRY(cf_family_decoder_only_rules(c));
    return classic_parts(c);
}

static cf_blocks classic_blocks(const clformer_config *c)
{
    return (cf_blocks){c->n_enc_layers > 0, CF_NORM_LAYER, false, false, {0}, (size_t)c->n_heads};
}

/* --- parameters ------------------------------------------------------------- */

static const char *attn_name(int which) { return which ? "multihead_attn" : "self_attn"; }

/* The matrices of one encoder (one attention) or decoder (two) layer. */
static void layer_matrices(cf_param_builder *b, cf_layer_params *p, const char *stack, int i,
                           int n_attn, size_t d, size_t ff)
{
    for (int a = 0; a < n_attn; a++) {
        cf_attn_params *ap = a ? &p->cross_attn : &p->self_attn;
        ap->in_proj_w = cf_param_add(b, 2, 3 * d, d, CF_INIT_XAVIER, "%s.%d.%s.in_proj_weight",
                                     stack, i, attn_name(a));
        ap->out_w = cf_param_add(b, 2, d, d, CF_INIT_XAVIER, "%s.%d.%s.out_proj.weight", stack,
                                 i, attn_name(a));
    }
    p->lin1_w = cf_param_add(b, 2, ff, d, CF_INIT_XAVIER, "%s.%d.linear1.weight", stack, i);
    p->lin2_w = cf_param_add(b, 2, d, ff, CF_INIT_XAVIER, "%s.%d.linear2.weight", stack, i);
    p->lin3_w = CF_NO_PARAM;
}

/* Its biases and LayerNorm parameters (one norm per sublayer). */
static void layer_vectors(cf_param_builder *b, cf_layer_params *p, const char *stack, int i,
                          int n_attn, size_t d, size_t ff)
{
    for (int a = 0; a < n_attn; a++) {
        cf_attn_params *ap = a ? &p->cross_attn : &p->self_attn;
        ap->in_proj_b = cf_param_add(b, 1, 0, 3 * d, CF_INIT_ZEROS, "%s.%d.%s.in_proj_bias",
                                     stack, i, attn_name(a));
        ap->out_b = cf_param_add(b, 1, 0, d, CF_INIT_ZEROS, "%s.%d.%s.out_proj.bias", stack, i,
                                 attn_name(a));
    }
    p->lin1_b = cf_param_add(b, 1, 0, ff, CF_INIT_ZEROS, "%s.%d.linear1.bias", stack, i);
    p->lin2_b = cf_param_add(b, 1, 0, d, CF_INIT_ZEROS, "%s.%d.linear2.bias", stack, i);
    for (int n = 0; n <= n_attn; n++) {
        p->norm_w[n] = cf_param_add(b, 1, 0, d, CF_INIT_ONES, "%s.%d.norm%d.weight", stack, i,
                                    n + 1);
        p->norm_b[n] = cf_param_add(b, 1, 0, d, CF_INIT_ZEROS, "%s.%d.norm%d.bias", stack, i,
                                    n + 1);
    }
}

static clformer_status classic_layout(const clformer_config *c, cf_param_layout *l)
{
    const size_t d = (size_t)c->d_model, ff = (size_t)c->d_ff;
    const int ne = c->n_enc_layers, nd = c->n_dec_layers;
    cf_param_builder b;
    CF_TRY(cf_param_builder_start(&b, l, 8 + (size_t)ne * 16 + (size_t)nd * 24, ne, nd));
    /* decoder-only: no encoder, so decoder layers have no cross-attention */
    const int dec_attn = ne > 0 ? 2 : 1;
    l->src_embed = l->enc_norm_w = l->enc_norm_b = l->generator_b = CF_NO_PARAM;
    const char *E = "transformer.encoder.layers", *D = "transformer.decoder.layers";

    /* rank-2 tensors: the weight-decay prefix */
    if (ne > 0 && !c->share_all_embed)
        l->src_embed = cf_param_add(&b, 2, (size_t)c->src_vocab, d, CF_INIT_XAVIER,
                                    "src_embed.weight");
    l->tgt_embed = cf_param_add(&b, 2, (size_t)c->tgt_vocab, d, CF_INIT_XAVIER,
                                "tgt_embed.weight");
    /* one joint vocabulary: the source embedding is the same tensor (its
     * gradient sums the source, target and generator uses) */
    if (c->share_all_embed) l->src_embed = l->tgt_embed;
    l->pos_embed = CF_NO_PARAM;
    if (c->positional == CLFORMER_POS_LEARNED)
        l->pos_embed = cf_param_add(&b, 2, (size_t)c->max_len, d, CF_INIT_XAVIER,
                                    "pos_embed.weight");
    for (int i = 0; i < ne; i++) layer_matrices(&b, &l->enc[i], E, i, 1, d, ff);
    for (int i = 0; i < nd && dec_attn == 1; i++) {
        const cf_attn_params none = {CF_NO_PARAM, CF_NO_PARAM, CF_NO_PARAM, CF_NO_PARAM};
        l->dec[i].cross_attn = none;
        l->dec[i].norm_w[2] = l->dec[i].norm_b[2] = CF_NO_PARAM;
    }
    for (int i = 0; i < nd; i++) layer_matrices(&b, &l->dec[i], D, i, dec_attn, d, ff);
    l->generator_w = c->share_tgt_embed ? l->tgt_embed
                                        : cf_param_add(&b, 2, (size_t)c->tgt_vocab, d,
                                                       CF_INIT_XAVIER, "generator.weight");
    const size_t decay_end = b.next;

    /* rank-1 tensors: biases and LayerNorm parameters */
    for (int i = 0; i < ne; i++) layer_vectors(&b, &l->enc[i], E, i, 1, d, ff);
    for (int i = 0; i < nd; i++) layer_vectors(&b, &l->dec[i], D, i, dec_attn, d, ff);
    if (ne > 0) {
        l->enc_norm_w = cf_param_add(&b, 1, 0, d, CF_INIT_ONES, "transformer.encoder.norm.weight");
        l->enc_norm_b = cf_param_add(&b, 1, 0, d, CF_INIT_ZEROS, "transformer.encoder.norm.bias");
    }
    l->dec_norm_w = cf_param_add(&b, 1, 0, d, CF_INIT_ONES, "transformer.decoder.norm.weight");
    l->dec_norm_b = cf_param_add(&b, 1, 0, d, CF_INIT_ZEROS, "transformer.decoder.norm.bias");
    if (c->generator_bias)
        l->generator_b = cf_param_add(&b, 1, 0, (size_t)c->tgt_vocab, CF_INIT_ZEROS,
                                      "generator.bias");
    cf_param_builder_finish(&b, decay_end);
    return CLFORMER_OK;
}

/* The tied generator and a shared source embedding are stored under their
 * own names too, copies of the target embedding, so that a checkpoint loads
 * into PyTorch with load_state_dict(strict=True). */
static int classic_aliases(const clformer_config *c, const char *names[2])
{
    int n = 0;
    if (c->share_tgt_embed) names[n++] = "generator.weight";
    if (c->share_all_embed) names[n++] = "src_embed.weight";
    return n;
}

/* --- presets ---------------------------------------------------------------- */

/* The model sizes: tiny for tests and demos, small for a laptop, and the
 * paper's base (docs/MODEL.md). They set the shape alone. */
static const struct {
    int d_model, n_heads, d_ff, n_enc_layers, n_dec_layers;
} encdec_table[] = {
    {64, 4, 256, 2, 2},
    {256, 4, 1024, 3, 3},
    {512, 8, 2048, 6, 6},
};
static const char *const encdec_names[] = {"tiny", "small", "base", NULL};
_Static_assert(CF_COUNT(encdec_names) == CF_COUNT(encdec_table) + 1, "a name for every preset");

static void encdec_preset(int i, clformer_config *c)
{
    c->family = CLFORMER_FAMILY_ENCODER_DECODER;
    c->d_model = encdec_table[i].d_model;
    c->n_heads = encdec_table[i].n_heads;
    c->d_ff = encdec_table[i].d_ff;
    c->n_enc_layers = encdec_table[i].n_enc_layers;
    c->n_dec_layers = encdec_table[i].n_dec_layers;
}

/* GPT-2's layout: pre-norm with a final LayerNorm, learned positions, tied
 * embeddings, tanh GELU, no embedding scale, no lm_head bias. gpt-mini is
 * nanoGPT's CPU run, gpt-char its shakespeare_char config, gpt2 the 124M
 * model. */
static const struct {
    int d_model, n_heads, n_layers, context;
    float dropout;
} gpt_table[] = {
    {128, 4, 4, 64, 0.0f},
    {384, 6, 6, 256, 0.2f},
    {768, 12, 12, 1024, 0.0f},
};
static const char *const gpt_names[] = {"gpt-mini", "gpt-char", "gpt2", NULL};
_Static_assert(CF_COUNT(gpt_names) == CF_COUNT(gpt_table) + 1, "a name for every preset");

static void gpt_preset(int i, clformer_config *c)
{
    c->family = CLFORMER_FAMILY_GPT;
    c->d_model = gpt_table[i].d_model;
    c->n_heads = gpt_table[i].n_heads;
    c->d_ff = 4 * gpt_table[i].d_model;
    c->n_enc_layers = 0;
    c->n_dec_layers = gpt_table[i].n_layers;
    c->max_len = gpt_table[i].context;
    c->dropout = gpt_table[i].dropout;
    c->src_vocab = 0;
    c->norm_first = true;
    c->positional = CLFORMER_POS_LEARNED;
    c->activation = CLFORMER_ACT_GELU_TANH;
    c->share_tgt_embed = true;
    c->scale_embed = false;
    c->generator_bias = false;
}

const cf_family cf_family_encoder_decoder = {
    CLFORMER_FAMILY_ENCODER_DECODER, true, CLFORMER_PAD, encdec_names, encdec_preset,
    encdec_validate, classic_blocks, classic_layout, classic_aliases, cf_batch_check_pairs, false,
};

const cf_family cf_family_gpt = {
    CLFORMER_FAMILY_GPT, false, -1, gpt_names, gpt_preset,
    gpt_validate, classic_blocks, classic_layout, classic_aliases, cf_batch_check_windows, false,
};
