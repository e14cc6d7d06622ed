/*
 * The forward pass of the encoder-decoder Transformer (docs/MODEL.md) over one
 * uploaded batch: embeddings, encoder blocks, decoder blocks, generator and,
 * when asked, the softmax cross-entropy (its gradient written in place of
 * the logits). Everything is enqueued; nothing is read back here.
 */
#include "model.h"
#include "reduce.h"

#include <math.h>

static cf_view P(const cf_model *m, size_t off) { return cf_view_at(m->params, off); }
static const cf_view NONE = {NULL, 0};

const cf_dropout *cf_model_dropout(const cf_model *m, uint32_t site, cf_dropout *storage)
{
    if (!m->acts.training || m->cfg.dropout <= 0.0f) return NULL;
    storage->p = m->cfg.dropout;
    storage->seed = cf_rank_seed(m);
    storage->step = (uint32_t)m->step;
    storage->site = site;
    return storage;
}

/* Pre-norm: LN(x) is the sublayer's input. Post-norm: x itself. */
static clformer_status norm_in(cf_model *m, cf_sub_acts *s, cf_view x, size_t nw, size_t nb,
                               size_t N, cf_view *fin)
{
    if (!m->cfg.norm_first) {
        *fin = x;
        return CLFORMER_OK;
    }
    *fin = s->ln;
    return cf_layernorm_forward(m->ctx, s->ln, s->mean, s->rstd, x, P(m, nw), P(m, nb), N,
                                (size_t)m->cfg.d_model, m->cfg.ln_eps);
}

/* Pre-norm: y = x + drop(f). Post-norm: y = LN(x + drop(f)). */
static clformer_status norm_out(cf_model *m, cf_sub_acts *s, cf_view x, cf_view f, size_t nw,
                                size_t nb, size_t N, uint32_t site)
{
    const size_t d = (size_t)m->cfg.d_model;
    cf_dropout ds;
    const cf_dropout *drop = cf_model_dropout(m, site, &ds);
    if (m->cfg.norm_first) return cf_residual_dropout_forward(m->ctx, s->out, x, f, N * d, drop);
    CF_TRY(cf_residual_dropout_forward(m->ctx, s->ln, x, f, N * d, drop));
    return cf_layernorm_forward(m->ctx, s->out, s->mean, s->rstd, s->ln, P(m, nw), P(m, nb), N,
                                d, m->cfg.ln_eps);
}

/* Self-attention (mem.buf NULL: keys and values from x) or cross-attention
 * over the memory. Writes a->out (N, d). */
static clformer_status attention(cf_model *m, cf_attn_acts *a, const cf_attn_params *p,
                                 cf_view x, cf_view mem, size_t Tq, size_t Tk,
                                 cf_view key_tokens, bool causal, uint32_t site)
{
    cf_ctx *ctx = m->ctx;
    const size_t B = m->acts.B, d = (size_t)m->cfg.d_model, H = (size_t)m->cfg.n_heads;
    const size_t dh = d / H, Nq = B * Tq, Nk = B * Tk;
    if (!mem.buf) {
        CF_TRY(cf_linear_forward(ctx, a->q, x, P(m, p->in_proj_w), P(m, p->in_proj_b), Nq, d, 3 * d));
        CF_TRY(cf_split_heads(ctx, a->qh, a->q, 3 * d, B, Tq, H, dh));
        CF_TRY(cf_split_heads(ctx, a->kh, cf_view_add(a->q, d), 3 * d, B, Tk, H, dh));
        CF_TRY(cf_split_heads(ctx, a->vh, cf_view_add(a->q, 2 * d), 3 * d, B, Tk, H, dh));
    } else {
        /* rows 0..d-1 of the packed projection act on the queries, the rest on the memory */
        CF_TRY(cf_linear_forward(ctx, a->q, x, P(m, p->in_proj_w), P(m, p->in_proj_b), Nq, d, d));
        CF_TRY(cf_linear_forward(ctx, a->kv, mem, P(m, p->in_proj_w + d * d),
                                 P(m, p->in_proj_b + d), Nk, d, 2 * d));
        CF_TRY(cf_split_heads(ctx, a->qh, a->q, d, B, Tq, H, dh));
        CF_TRY(cf_split_heads(ctx, a->kh, a->kv, 2 * d, B, Tk, H, dh));
        CF_TRY(cf_split_heads(ctx, a->vh, cf_view_add(a->kv, d), 2 * d, B, Tk, H, dh));
    }
    const cf_attention_shape shape = {B, H, dh, Tq, Tk, Tk, 0, causal, Tk};
    cf_dropout ds;
    CF_TRY(cf_attention_forward(ctx, a->ctx_h, &a->saved, a->qh, a->kh, a->vh, key_tokens, &shape,
                                cf_model_dropout(m, site, &ds)));
    CF_TRY(cf_merge_heads(ctx, a->concat, d, a->ctx_h, B, Tq, H, dh));
    return cf_linear_forward(ctx, a->out, a->concat, P(m, p->out_w), P(m, p->out_b), Nq, d, d);
}

static clformer_status feed_forward(cf_model *m, cf_ffn_acts *f, const cf_layer_params *p,
                                    cf_view x, size_t N, uint32_t site)
{
    const size_t d = (size_t)m->cfg.d_model, ff = (size_t)m->cfg.d_ff;
    cf_dropout ds;
    CF_TRY(cf_linear_forward(m->ctx, f->pre, x, P(m, p->lin1_w), NONE, N, d, ff));
    CF_TRY(cf_bias_act_forward(m->ctx, f->act, f->pre, P(m, p->lin1_b), N, ff,
                               (cf_activation)m->cfg.activation, cf_model_dropout(m, site, &ds)));
    return cf_linear_forward(m->ctx, f->out, f->act, P(m, p->lin2_w), P(m, p->lin2_b), N, ff, d);
}

static clformer_status encoder_layer(cf_model *m, int l, cf_view x)
{
    cf_layer_acts *L = &m->acts.enc[l];
    const cf_layer_params *p = &m->layout.enc[l];
    const size_t S = m->acts.S, N = m->acts.B * S;
    cf_view fin;
    CF_TRY(norm_in(m, &L->sub[0], x, p->norm_w[0], p->norm_b[0], N, &fin));
    CF_TRY(attention(m, &L->self_attn, &p->self_attn, fin, NONE, S, S, m->acts.src, false,
                     cf_site(l, CF_SITE_ATTN_PROBS)));
    CF_TRY(norm_out(m, &L->sub[0], x, L->self_attn.out, p->norm_w[0], p->norm_b[0], N,
                    cf_site(l, CF_SITE_ATTN_OUT)));
    x = L->sub[0].out;
    CF_TRY(norm_in(m, &L->sub[1], x, p->norm_w[1], p->norm_b[1], N, &fin));
    CF_TRY(feed_forward(m, &L->ffn, p, fin, N, cf_site(l, CF_SITE_FF_HIDDEN)));
    return norm_out(m, &L->sub[1], x, L->ffn.out, p->norm_w[1], p->norm_b[1], N,
                    cf_site(l, CF_SITE_FF_OUT));
}

static clformer_status decoder_layer(cf_model *m, int l, cf_view x)
{
    cf_layer_acts *L = &m->acts.dec[l];
    const cf_layer_params *p = &m->layout.dec[l];
    const size_t S = m->acts.S, T = m->acts.T, N = m->acts.B * T;
    const int site_layer = m->cfg.n_enc_layers + l;
    cf_view fin;
    CF_TRY(norm_in(m, &L->sub[0], x, p->norm_w[0], p->norm_b[0], N, &fin));
    CF_TRY(attention(m, &L->self_attn, &p->self_attn, fin, NONE, T, T, m->acts.tgt_in, true,
                     cf_site(site_layer, CF_SITE_ATTN_PROBS)));
    CF_TRY(norm_out(m, &L->sub[0], x, L->self_attn.out, p->norm_w[0], p->norm_b[0], N,
                    cf_site(site_layer, CF_SITE_ATTN_OUT)));
    x = L->sub[0].out;
    CF_TRY(norm_in(m, &L->sub[1], x, p->norm_w[1], p->norm_b[1], N, &fin));
    CF_TRY(attention(m, &L->cross_attn, &p->cross_attn, fin, m->acts.memory, T, S, m->acts.src,
                     false, cf_site(site_layer, CF_SITE_CROSS_PROBS)));
    CF_TRY(norm_out(m, &L->sub[1], x, L->cross_attn.out, p->norm_w[1], p->norm_b[1], N,
                    cf_site(site_layer, CF_SITE_CROSS_OUT)));
    x = L->sub[1].out;
    CF_TRY(norm_in(m, &L->sub[2], x, p->norm_w[2], p->norm_b[2], N, &fin));
    CF_TRY(feed_forward(m, &L->ffn, p, fin, N, cf_site(site_layer, CF_SITE_FF_HIDDEN)));
    return norm_out(m, &L->sub[2], x, L->ffn.out, p->norm_w[2], p->norm_b[2], N,
                    cf_site(site_layer, CF_SITE_FF_OUT));
}

clformer_status cf_forward_encoder(cf_model *m)
{
    cf_acts *a = &m->acts;
    const clformer_config *c = &m->cfg;
    const size_t d = (size_t)c->d_model;
    const cf_view pos = c->positional == CLFORMER_POS_LEARNED ? P(m, m->layout.pos_embed) : NONE;
    cf_dropout ds;
    CF_TRY(cf_embedding_forward(m->ctx, a->src_emb, a->src, P(m, m->layout.src_embed), pos, a->B,
                                a->S, d, sqrtf((float)d),
                                cf_model_dropout(m, CF_SITE_SRC_EMBED, &ds)));
    for (int l = 0; l < c->n_enc_layers; l++)
        CF_TRY(encoder_layer(m, l, cf_layer_input(m, false, l)));
    return cf_layernorm_forward(m->ctx, a->memory, a->mem_mean, a->mem_rstd,
                                cf_layer_input(m, false, c->n_enc_layers),
                                P(m, m->layout.enc_norm_w), P(m, m->layout.enc_norm_b),
                                a->B * a->S, d, c->ln_eps);
}

clformer_status cf_forward(cf_model *m, bool with_loss, float grad_scale)
{
    cf_ctx *ctx = m->ctx;
    cf_acts *a = &m->acts;
    const clformer_config *c = &m->cfg;
    const size_t d = (size_t)c->d_model, V = (size_t)c->tgt_vocab, Nt = a->B * a->T;
    const cf_view pos = c->positional == CLFORMER_POS_LEARNED ? P(m, m->layout.pos_embed) : NONE;
    cf_dropout ds;

    CF_TRY(cf_forward_encoder(m));
    CF_TRY(cf_embedding_forward(ctx, a->tgt_emb, a->tgt_in, P(m, m->layout.tgt_embed), pos, a->B,
                                a->T, d, sqrtf((float)d),
                                cf_model_dropout(m, CF_SITE_TGT_EMBED, &ds)));
    for (int l = 0; l < c->n_dec_layers; l++)
        CF_TRY(decoder_layer(m, l, cf_layer_input(m, true, l)));
    CF_TRY(cf_layernorm_forward(ctx, a->dec_out, a->dec_mean, a->dec_rstd,
                                cf_layer_input(m, true, c->n_dec_layers),
                                P(m, m->layout.dec_norm_w), P(m, m->layout.dec_norm_b), Nt, d,
                                c->ln_eps));
    CF_TRY(cf_linear_forward(ctx, a->logits, a->dec_out, P(m, m->layout.generator_w),
                             P(m, m->layout.generator_b), Nt, d, V));
    if (!with_loss) return CLFORMER_OK;
    /* evaluation reports the plain cross-entropy: smoothing is a training device */
    CF_TRY(cf_cross_entropy(ctx, a->losses, a->training ? a->logits : NONE, a->logits, a->labels,
                            Nt, V, a->training ? c->label_smoothing : 0.0f, CLFORMER_PAD,
                            grad_scale));
    return cf_reduce_sum(ctx, m->metrics, 0, a->losses.buf, a->losses.off, Nt, false, false);
}
