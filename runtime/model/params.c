/* The flat parameter layout and its initialisation. */
#include "params.h"
#include "status.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    cf_param_layout *layout;
    size_t capacity;
    size_t next;
} builder;

static size_t add(builder *b, int rank, size_t rows, size_t cols, int init, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static size_t add(builder *b, int rank, size_t rows, size_t cols, int init, const char *fmt, ...)
{
    cf_param_layout *l = b->layout;
    cf_param_entry *e = &l->entries[l->n_entries++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->name, sizeof e->name, fmt, ap);
    va_end(ap);
    e->rank = rank;
    e->rows = rank == 2 ? rows : 0;
    e->cols = cols;
    e->init = init;
    e->offset = b->next;
    b->next += rank == 2 ? rows * cols : cols;
    return e->offset;
}

static const char *attn_name(int which) { return which ? "multihead_attn" : "self_attn"; }

/* The matrices of one encoder (one attention) or decoder (two) layer. */
static void layer_matrices(builder *b, cf_layer_params *p, const char *stack, int i, int n_attn,
                           size_t d, size_t ff)
{
    for (int a = 0; a < n_attn; a++) {
        cf_attn_params *ap = a ? &p->cross_attn : &p->self_attn;
        ap->in_proj_w = add(b, 2, 3 * d, d, CF_INIT_XAVIER, "%s.%d.%s.in_proj_weight", stack, i,
                            attn_name(a));
        ap->out_w = add(b, 2, d, d, CF_INIT_XAVIER, "%s.%d.%s.out_proj.weight", stack, i,
                        attn_name(a));
    }
    p->lin1_w = add(b, 2, ff, d, CF_INIT_XAVIER, "%s.%d.linear1.weight", stack, i);
    p->lin2_w = add(b, 2, d, ff, CF_INIT_XAVIER, "%s.%d.linear2.weight", stack, i);
}

/* Its biases and LayerNorm parameters (one norm per sublayer). */
static void layer_vectors(builder *b, cf_layer_params *p, const char *stack, int i, int n_attn,
                          size_t d, size_t ff)
{
    for (int a = 0; a < n_attn; a++) {
        cf_attn_params *ap = a ? &p->cross_attn : &p->self_attn;
        ap->in_proj_b = add(b, 1, 0, 3 * d, CF_INIT_ZEROS, "%s.%d.%s.in_proj_bias", stack, i,
                            attn_name(a));
        ap->out_b = add(b, 1, 0, d, CF_INIT_ZEROS, "%s.%d.%s.out_proj.bias", stack, i,
                        attn_name(a));
    }
    p->lin1_b = add(b, 1, 0, ff, CF_INIT_ZEROS, "%s.%d.linear1.bias", stack, i);
    p->lin2_b = add(b, 1, 0, d, CF_INIT_ZEROS, "%s.%d.linear2.bias", stack, i);
    for (int n = 0; n <= n_attn; n++) {
        p->norm_w[n] = add(b, 1, 0, d, CF_INIT_ONES, "%s.%d.norm%d.weight", stack, i, n + 1);
        p->norm_b[n] = add(b, 1, 0, d, CF_INIT_ZEROS, "%s.%d.norm%d.bias", stack, i, n + 1);
    }
}

clformer_status cf_param_layout_make(const clformer_config *c, cf_param_layout *l)
{
    memset(l, 0, sizeof *l);
    const size_t d = (size_t)c->d_model, ff = (size_t)c->d_ff;
    const int ne = c->n_enc_layers, nd = c->n_dec_layers;
    size_t max_entries = 8 + (size_t)ne * 16 + (size_t)nd * 24;
    l->entries = calloc(max_entries, sizeof *l->entries);
    l->enc = calloc((size_t)ne, sizeof *l->enc);
    l->dec = calloc((size_t)nd, sizeof *l->dec);
    if (!l->entries || !l->enc || !l->dec) {
        cf_param_layout_free(l);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    builder b = {l, max_entries, 0};
    /* decoder-only: no encoder, so decoder layers have no cross-attention */
    const int dec_attn = clformer_config_decoder_only(c) ? 1 : 2;
    l->src_embed = l->enc_norm_w = l->enc_norm_b = l->generator_b = CF_NO_PARAM;
    const char *E = "transformer.encoder.layers", *D = "transformer.decoder.layers";

    /* rank-2 tensors: the weight-decay prefix */
    if (ne > 0 && !c->share_all_embed)
        l->src_embed = add(&b, 2, (size_t)c->src_vocab, d, CF_INIT_XAVIER, "src_embed.weight");
    l->tgt_embed = add(&b, 2, (size_t)c->tgt_vocab, d, CF_INIT_XAVIER, "tgt_embed.weight");
    /* one joint vocabulary: the source embedding is the same tensor (its
     * gradient sums the source, target and generator uses) */
    if (c->share_all_embed) l->src_embed = l->tgt_embed;
    if (c->positional == CLFORMER_POS_LEARNED)
        l->pos_embed = add(&b, 2, (size_t)c->max_len, d, CF_INIT_XAVIER, "pos_embed.weight");
    for (int i = 0; i < ne; i++) layer_matrices(&b, &l->enc[i], E, i, 1, d, ff);
    for (int i = 0; i < nd && dec_attn == 1; i++) {
        const cf_attn_params none = {CF_NO_PARAM, CF_NO_PARAM, CF_NO_PARAM, CF_NO_PARAM};
        l->dec[i].cross_attn = none;
        l->dec[i].norm_w[2] = l->dec[i].norm_b[2] = CF_NO_PARAM;
    }
    for (int i = 0; i < nd; i++) layer_matrices(&b, &l->dec[i], D, i, dec_attn, d, ff);
    l->generator_w = c->share_tgt_embed
                         ? l->tgt_embed
                         : add(&b, 2, (size_t)c->tgt_vocab, d, CF_INIT_XAVIER, "generator.weight");
    l->decay_end = b.next;

    /* rank-1 tensors: biases and LayerNorm parameters */
    for (int i = 0; i < ne; i++) layer_vectors(&b, &l->enc[i], E, i, 1, d, ff);
    for (int i = 0; i < nd; i++) layer_vectors(&b, &l->dec[i], D, i, dec_attn, d, ff);
    if (ne > 0) {
        l->enc_norm_w = add(&b, 1, 0, d, CF_INIT_ONES, "transformer.encoder.norm.weight");
        l->enc_norm_b = add(&b, 1, 0, d, CF_INIT_ZEROS, "transformer.encoder.norm.bias");
    }
    l->dec_norm_w = add(&b, 1, 0, d, CF_INIT_ONES, "transformer.decoder.norm.weight");
    l->dec_norm_b = add(&b, 1, 0, d, CF_INIT_ZEROS, "transformer.decoder.norm.bias");
    if (c->generator_bias)
        l->generator_b = add(&b, 1, 0, (size_t)c->tgt_vocab, CF_INIT_ZEROS, "generator.bias");
    l->total = b.next;
    return CLFORMER_OK;
}

void cf_param_layout_free(cf_param_layout *l)
{
    free(l->entries);
    free(l->enc);
    free(l->dec);
    memset(l, 0, sizeof *l);
}

int cf_param_aliases(const clformer_config *c, const char *names[2])
{
    int n = 0;
    if (c->share_tgt_embed) names[n++] = "generator.weight";
    if (c->share_all_embed) names[n++] = "src_embed.weight";
    return n;
}

const cf_param_entry *cf_param_find(const cf_param_layout *l, const char *name)
{
    for (size_t i = 0; i < l->n_entries; i++)
        if (!strcmp(l->entries[i].name, name)) return &l->entries[i];
    return NULL;
}

/* splitmix64 -> uniform doubles; the stream depends only on seed and entry index. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void cf_param_init(const cf_param_layout *l, uint64_t seed, float *host)
{
    for (size_t i = 0; i < l->n_entries; i++) {
        const cf_param_entry *e = &l->entries[i];
        float *p = host + e->offset;
        size_t n = e->rank == 2 ? e->rows * e->cols : e->cols;
        if (e->init == CF_INIT_XAVIER) {
            /* Xavier-uniform on the tensor as stored: fan_in = cols, fan_out = rows */
            double bound = sqrt(6.0 / (double)(e->rows + e->cols));
            uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * (i + 1));
            for (size_t k = 0; k < n; k++)
                p[k] = (float)(bound * (2.0 * (double)(mix(&s) >> 11) / 9007199254740992.0 - 1.0));
        } else {
            for (size_t k = 0; k < n; k++) p[k] = e->init == CF_INIT_ONES ? 1.0f : 0.0f;
        }
    }
}
