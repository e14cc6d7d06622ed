/*
 * The forward pass of the encoder-decoder Transformer (docs/MODEL.md), or
 * of a decoder-only one (no encoder, no cross-attention), over one uploaded
 * batch: embeddings, encoder blocks, decoder blocks, generator
 * and, when asked, the softmax cross-entropy (its gradient written in place
 * of the logits). The decoder block here is also the one decoding runs,
 * one position at a time (decode.c). Everything is enqueued; nothing is
 * read back here.
 */
#include "config.h"
#include "reduce.h"
#include "session.h"

#include <math.h>

static const cf_view NONE = {NULL, 0};

const cf_dropout *cf_session_dropout(const cf_session *s, uint32_t site, cf_dropout *storage)
{
    const cf_model *m = s->model;
    /* sites of a layer: cf_site(layer, kind); below 16: the embeddings */
    const uint32_t kind = site >= 16 ? (site - 16) % 16 : (uint32_t)-1;
    const float p = cf_config_dropout_of(&m->cfg, kind == CF_SITE_ATTN_PROBS ||
                                                          kind == CF_SITE_CROSS_PROBS
                                                      ? CF_DROPOUT_ATTENTION
                                                  : kind == CF_SITE_FF_HIDDEN
                                                      ? CF_DROPOUT_ACTIVATION
                                                      : CF_DROPOUT_RESIDUAL);
    if (!s->acts.training || p <= 0.0f) return NULL;
    storage->p = p;
    storage->seed = cf_rank_seed(m);
    storage->step = (uint32_t)m->step;
    storage->site = site;
    return storage;
}

clformer_status cf_norm_forward(cf_session *s, cf_view out, cf_view mean, cf_view rstd, cf_view x,
                                size_t w, size_t b, size_t N)
{
    const clformer_config *c = &s->model->cfg;
    const size_t d = (size_t)c->d_model;
    if (s->model->blocks.norm == CF_NORM_RMS)
        return cf_rmsnorm_forward(s->ctx, out, rstd, x, cf_param(s, w), N, d, c->ln_eps);
    return cf_layernorm_forward(s->ctx, out, mean, rstd, x, cf_param(s, w), cf_param(s, b), N, d,
                                c->ln_eps);
}

clformer_status cf_embed(cf_session *s, cf_view out, cf_view tokens, size_t B, size_t T,
                         size_t pos0, const cf_dropout *dropout)
{
    const cf_model *m = s->model;
    const clformer_config *c = &m->cfg;
    const size_t d = (size_t)c->d_model;
    const cf_view table = cf_param(s, m->layout.tgt_embed);
    if (m->blocks.rope) /* positions turn queries and keys instead */
        return cf_embedding_forward_tokens(s->ctx, out, tokens, table, B, T, d,
                                           cf_embed_scale(c), dropout);
    const cf_view pos = c->positional == CLFORMER_POS_LEARNED ? cf_param(s, m->layout.pos_embed)
                                                              : NONE;
    if (pos0 == 0)
        return cf_embedding_forward(s->ctx, out, tokens, table, pos, B, T, d, cf_embed_scale(c),
                                    dropout);
    return cf_embedding_forward_at(s->ctx, out, tokens, table, pos, B, pos0, d,
                                   cf_embed_scale(c));
}

/* Pre-norm: LN(x) is the sublayer's input, computed here unless the
 * sublayer before it did (`normed`). Post-norm: x itself. */
static clformer_status norm_in(cf_session *s, const cf_sub_acts *sub, cf_view x, size_t nw,
                               size_t nb, size_t N, bool normed, cf_view *fin)
{
    const clformer_config *c = &s->model->cfg;
    if (!c->norm_first) {
        *fin = x;
        return CLFORMER_OK;
    }
    *fin = sub->ln;
    if (normed) return CLFORMER_OK;
    return cf_norm_forward(s, sub->ln, sub->mean, sub->rstd, x, nw, nb, N);
}

/* f is F's output before its last bias `bias`, added here. Pre-norm:
 * y = x + drop(f + bias), and with `next` the next sublayer's LN(y) too.
 * Post-norm: y = LN(x + drop(f + bias)). One kernel each (cl/residual_norm.cl),
 * LayerNorm or RMSNorm.
 * y may be x. */
static clformer_status norm_out(cf_session *s, const cf_sub_acts *sub, cf_view x, cf_view f,
                                cf_view bias, size_t nw, size_t nb, size_t N, uint32_t site,
                                const cf_next_norm *next)
{
    const clformer_config *c = &s->model->cfg;
    const size_t d = (size_t)c->d_model;
    cf_dropout ds;
    const cf_dropout *drop = cf_session_dropout(s, site, &ds);
    if (c->norm_first && !next)
        return cf_bias_residual_forward(s->ctx, sub->out, x, f, bias, N, d, drop);
    /* pre-norm: y is the sublayer's output and the norm the next one's input;
     * post-norm: y is sub->ln and the norm this sublayer's own, into sub->out */
    const cf_sub_acts *ns = c->norm_first ? next->sub : sub;
    const cf_view y = c->norm_first ? sub->out : sub->ln;
    const cf_view out = c->norm_first ? ns->ln : sub->out;
    const cf_view w = cf_param(s, c->norm_first ? next->nw : nw);
    if (s->model->blocks.norm == CF_NORM_RMS)
        return cf_bias_residual_rmsnorm_forward(s->ctx, y, out, ns->rstd, x, f, bias, w, N, d,
                                                c->ln_eps, drop);
    return cf_bias_residual_layernorm_forward(s->ctx, y, out, ns->mean, ns->rstd, x, f, bias, w,
                                              cf_param(s, c->norm_first ? next->nb : nb), N, d,
                                              c->ln_eps, drop);
}

/* One attention: its shape, its key tokens (pads masked), and where keys
 * and values come from. */
typedef struct {
    cf_attention_shape shape;
    cf_view key_tokens;
    bool cross;       /* keys and values from the memory, else from x */
    bool cached;      /* self: this position's K/V written at q_pos0 of the caches in kh/vh;
                         cross: kh/vh already hold the memory's */
    cf_view memory;   /* cross, not cached: (B*Tk, d) */
    const size_t *row_pos; /* self, cached, Tq 1: each row's own position (NULL: q_pos0) */
} attn_spec;

/* The runs of rows of a pass that share a position: rows [r0, *r1) start
 * at *pos (every row at q_pos0, or with row_pos each row at its own, as
 * rows of a batch of prompts sit at different positions). */
static void position_run(const attn_spec *spec, size_t r0, size_t *r1, size_t *pos)
{
    const cf_attention_shape *sh = &spec->shape;
    *pos = sh->q_pos0;
    *r1 = sh->B;
    if (spec->row_pos)
        for (*pos = spec->row_pos[r0], *r1 = r0 + 1; *r1 < sh->B && spec->row_pos[*r1] == *pos;)
            (*r1)++;
}

/* The queries' heads, and the keys and values into the decoding caches at
 * each row's positions: one launch per run of rows at the same position;
 * with `bias`, the rows are the projection without it (added on the way). */
static clformer_status split_to_caches(cf_ctx *ctx, const cf_attn_acts *a,
                                       const attn_spec *spec, cf_view bias)
{
    const cf_attention_shape *sh = &spec->shape;
    const size_t H = sh->H, Hkv = cf_attention_kv_heads(sh), dh = sh->dh;
    const size_t cap = sh->Tk_cap, Tq = sh->Tq, ld = (H + 2 * Hkv) * dh;
    for (size_t r0 = 0, r1, pos; r0 < sh->B; r0 = r1) {
        position_run(spec, r0, &r1, &pos);
        CF_TRY(cf_split_qkv_to_caches(ctx, cf_view_add(a->qh, r0 * H * Tq * dh),
                                      cf_view_add(a->kh, r0 * Hkv * cap * dh),
                                      cf_view_add(a->vh, r0 * Hkv * cap * dh),
                                      cf_view_add(a->q, r0 * Tq * ld), bias, ld, r1 - r0, Tq,
                                      H, Hkv, dh, cap, pos));
    }
    return CLFORMER_OK;
}

clformer_status cf_rotate(cf_session *s, cf_view qkv, size_t B, size_t Tq, size_t pos0,
                          const size_t *row_pos, bool inverse)
{
    const cf_model *m = s->model;
    const size_t H = (size_t)m->cfg.n_heads, Hkv = m->blocks.kv_heads;
    const size_t dh = (size_t)m->cfg.d_model / H, d = H * dh, ld = d + 2 * Hkv * dh;
    cf_view table;
    size_t rows;
    /* the sequence so far: dynamic scaling's angles follow its length */
    CF_TRY(cf_session_rope(s, pos0 + Tq, &table, &rows));
    const attn_spec spec = {{B, H, dh, Tq, 0, 0, pos0, false, 0, Hkv}, NONE, false, false, NONE,
                            row_pos};
    for (size_t r0 = 0, r1, pos; r0 < B; r0 = r1) {
        position_run(&spec, r0, &r1, &pos);
        /* the queries' H heads and the keys' Hkv lie side by side at the
         * start of each row and turn alike: one launch for both */
        const cf_view x = cf_view_add(qkv, r0 * Tq * ld);
        const cf_rope_shape sh = {r1 - r0, H + Hkv, Tq, dh, pos, rows, cf_rope_rows(Tq, ld, dh),
                                  cf_rope_rows(Tq, ld, dh)};
        CF_TRY(inverse ? cf_rope_backward(s->ctx, x, x, table, &sh)
                       : cf_rope_forward(s->ctx, x, x, table, &sh));
    }
    return CLFORMER_OK;
}

/* Writes a->out (B*Tq, d) = out_proj(attention(x)) without the projection's
 * bias (norm_out adds it). */
static clformer_status attention(cf_session *s, const cf_attn_acts *a, const cf_attn_params *p,
                                 cf_view x, const attn_spec *spec, int layer, uint32_t site)
{
    cf_ctx *ctx = s->ctx;
    const cf_attention_shape *sh = &spec->shape;
    const size_t B = sh->B, H = sh->H, dh = sh->dh, d = H * dh, Tq = sh->Tq, Nq = B * Tq;
    const size_t Hkv = cf_attention_kv_heads(sh), kvd = Hkv * dh, ld = d + 2 * kvd;
    const cf_view w = cf_param(s, p->in_proj_w), b = cf_param(s, p->in_proj_b);
    /* A decoding step's one query row a sequence: heads (B, H, 1, dh) lie as
     * rows (B, d) do, so the queries' split and the context's merge would
     * be copies, and are left out (nothing reads a decoding step's rows or
     * heads but what follows here; the fused path keeps its output where
     * its saved tensors say). */
    const bool one_row = spec->cached && Tq == 1 && !cf_attention_fused(&a->saved);
    /* The unfused path (without grouped-query heads) and the tiled kernels
     * read Q, K and V from the projections' rows and write the context
     * straight into the rows the output projection reads: no split or merge
     * launch (gpt-mini training on PoCL, with the backward's split and
     * merges also gone: 186 -> 174 launches a step, 2-7% more tokens/s).
     * Caches keep the head layout: a pass that fills them splits. */
    const bool rows = !one_row && cf_attention_takes_rows(cf_attention_fused(&a->saved),
                                                          s->acts.tiled_attention, H, Hkv);
    const bool rows_in = rows && !spec->cached;
    cf_attention_shape shape = *sh;
    shape.out_rows = rows;
    cf_view qh, kh, vh;
    cf_attention_inputs(a, rows_in, spec->cross, d, kvd, &qh, &kh, &vh, &shape);
    if (!spec->cross) {
        /* one projection: rows of d queries, kvd keys, kvd values. Without
         * rotary positions (which turn the rows with their bias) the bias is
         * added in the split: one launch for the bias add, rounding and
         * split, the same bits, where nothing reads the rows but the split
         * (gpt-mini training on PoCL: the bias add's 0.15 ms a step gone).
         * A decoding step, or a pass in fp32: in bf16 and fp16 the rows of a
         * training pass stay the format's values, as every activation its
         * ops write (test_precision), which the rows without bias are not.
         * Read as rows, the rows get their bias. */
        const bool bias_in_split = !rows_in && b.buf && !s->model->blocks.rope &&
                                   (spec->cached || ctx->precision == CLFORMER_FP32);
        if (bias_in_split)
            CF_TRY(cf_linear_product(ctx, a->q, x, w, Nq, d, ld));
        else
            CF_TRY(cf_linear_forward(ctx, a->q, x, w, b, Nq, d, ld));
        if (s->model->blocks.rope)
            CF_TRY(cf_rotate(s, a->q, B, Tq, sh->q_pos0, spec->row_pos, false));
        if (spec->cached) {
            CF_TRY(split_to_caches(ctx, a, spec, bias_in_split ? b : NONE));
        } else if (rows_in) {
            /* read where they are */
        } else if (bias_in_split) { /* the heads as caches of Tq rows, filled from row 0 */
            CF_TRY(cf_split_qkv_to_caches(ctx, a->qh, a->kh, a->vh, a->q, b, ld, B, Tq, H, Hkv,
                                          dh, Tq, 0));
        } else {
            CF_TRY(cf_split_qkv_heads(ctx, a->qh, a->kh, a->vh, a->q, ld, B, Tq, H, Hkv, dh));
        }
    } else {
        /* rows 0..d-1 of the packed projection act on the queries, the rest on the memory */
        CF_TRY(cf_linear_forward(ctx, a->q, x, w, b, Nq, d, d));
        if (one_row)
            qh = a->q;
        else if (!rows_in)
            CF_TRY(cf_split_heads(ctx, a->qh, a->q, d, B, Tq, H, dh));
        if (!spec->cached)
            CF_TRY(cf_cross_kv(s, layer, spec->memory, a->kv, rows_in ? NONE : a->kh, a->vh, B,
                               sh->Tk));
    }
    cf_dropout ds;
    CF_TRY(cf_attention_forward(ctx, one_row || rows ? a->concat : a->ctx_h, &a->saved, qh, kh,
                                vh, spec->key_tokens, &shape, cf_session_dropout(s, site, &ds)));
    if (!one_row && !rows) CF_TRY(cf_merge_heads(ctx, a->concat, d, a->ctx_h, B, Tq, H, dh));
    return cf_linear_forward(ctx, a->out, a->concat, cf_param(s, p->out_w), NONE, Nq, d, d);
}

clformer_status cf_cross_kv(cf_session *s, int l, cf_view memory, cf_view kv, cf_view kh,
                            cf_view vh, size_t B, size_t S)
{
    const clformer_config *c = &s->model->cfg;
    const cf_attn_params *p = &s->model->layout.dec[l].cross_attn;
    const size_t d = (size_t)c->d_model, H = (size_t)c->n_heads, dh = d / H;
    CF_TRY(cf_linear_forward(s->ctx, kv, memory, cf_param(s, p->in_proj_w + d * d),
                             cf_param(s, p->in_proj_b + d), B * S, d, 2 * d));
    if (!kh.buf) return CLFORMER_OK;
    return cf_split_qkv_heads(s->ctx, kh, kh, vh, kv, 2 * d, B, S, 0, H, dh);
}

void cf_attention_inputs(const cf_attn_acts *a, bool rows, bool cross, size_t d, size_t kvd,
                         cf_view *qh, cf_view *kh, cf_view *vh, cf_attention_shape *shape)
{
    if (!rows) {
        *qh = a->qh, *kh = a->kh, *vh = a->vh;
        return;
    }
    *qh = a->q;
    *kh = cross ? a->kv : cf_view_add(a->q, d);
    *vh = cf_view_add(*kh, kvd);
    shape->q_ld = cross ? d : d + 2 * kvd;
    shape->kv_ld = cross ? 2 * d : d + 2 * kvd;
}

/* Writes f->out = lin2(act(lin1(x))) without lin2's bias (norm_out adds it). */
static clformer_status feed_forward(cf_session *s, const cf_ffn_acts *f,
                                    const cf_layer_params *p, cf_view x, size_t N, uint32_t site)
{
    const clformer_config *c = &s->model->cfg;
    const size_t d = (size_t)c->d_model, ff = (size_t)c->d_ff;
    cf_dropout ds;
    if (s->model->blocks.gated) { /* SwiGLU: down(silu(gate x) * up x) */
        const cf_dropout *drop = cf_session_dropout(s, site, &ds);
        CF_TRY(cf_linear_forward(s->ctx, f->pre, x, cf_param(s, p->lin1_w), NONE, N, d, ff));
        CF_TRY(cf_linear_forward(s->ctx, f->up, x, cf_param(s, p->lin3_w), NONE, N, d, ff));
        CF_TRY(cf_swiglu_forward(s->ctx, f->act, f->pre, f->up, N * ff));
        /* dropout of the hidden layer: the mask applied, as its backward applies it */
        if (drop) CF_TRY(cf_dropout_backward(s->ctx, f->act, f->act, N * ff, drop));
        return cf_linear_forward(s->ctx, f->out, f->act, cf_param(s, p->lin2_w), NONE, N, ff, d);
    }
    CF_TRY(cf_linear_act_forward(s->ctx, f->act, f->pre, x, cf_param(s, p->lin1_w),
                                 cf_param(s, p->lin1_b), N, d, ff, c->activation,
                                 cf_session_dropout(s, site, &ds)));
    return cf_linear_forward(s->ctx, f->out, f->act, cf_param(s, p->lin2_w), NONE, N, ff, d);
}

/* Sublayer i of a block: x -> L->sub[i].out through F (attention when
 * `spec`, else the feed-forward). Pre-norm: `next` (NULL: none) is the
 * LayerNorm after it, computed here with its residual (sublayer i + 1's
 * input norm, which is then called with `normed`, or the one after the
 * block). */
static clformer_status sublayer(cf_session *s, const cf_layer_acts *L, const cf_layer_params *p,
                                int i, cf_view x, size_t N, const attn_spec *spec, int layer,
                                int site_layer, bool normed, const cf_next_norm *next)
{
    const cf_sub_acts *sub = &L->sub[i];
    cf_view fin, f, bias;
    CF_TRY(norm_in(s, sub, x, p->norm_w[i], p->norm_b[i], N, normed, &fin));
    uint32_t out_site;
    if (!spec) {
        CF_TRY(feed_forward(s, &L->ffn, p, fin, N, cf_site(site_layer, CF_SITE_FF_HIDDEN)));
        f = L->ffn.out;
        bias = cf_param(s, p->lin2_b);
        out_site = cf_site(site_layer, CF_SITE_FF_OUT);
    } else if (!spec->cross) {
        CF_TRY(attention(s, &L->self_attn, &p->self_attn, fin, spec, layer,
                         cf_site(site_layer, CF_SITE_ATTN_PROBS)));
        f = L->self_attn.out;
        bias = cf_param(s, p->self_attn.out_b);
        out_site = cf_site(site_layer, CF_SITE_ATTN_OUT);
    } else {
        CF_TRY(attention(s, &L->cross_attn, &p->cross_attn, fin, spec, layer,
                         cf_site(site_layer, CF_SITE_CROSS_PROBS)));
        f = L->cross_attn.out;
        bias = cf_param(s, p->cross_attn.out_b);
        out_site = cf_site(site_layer, CF_SITE_CROSS_OUT);
    }
    return norm_out(s, sub, x, f, bias, p->norm_w[i], p->norm_b[i], N, out_site, next);
}

/* Pre-norm: sublayer i + 1's input norm, which sublayer i computes. */
static cf_next_norm inner_norm(const cf_layer_acts *L, const cf_layer_params *p, int i)
{
    return (cf_next_norm){&L->sub[i + 1], p->norm_w[i + 1], p->norm_b[i + 1]};
}

bool cf_chain_norms(const cf_session *s)
{
    return s->model->cfg.norm_first && !s->acts.recompute && !s->acts.half_saved;
}

clformer_status cf_encoder_block_chained(cf_session *s, int l, cf_view x, bool normed,
                                         const cf_next_norm *next)
{
    const clformer_config *c = &s->model->cfg;
    const cf_layer_acts *L = &s->acts.enc[l];
    const cf_layer_params *p = &s->model->layout.enc[l];
    const size_t B = s->acts.B, S = s->acts.S, H = (size_t)c->n_heads;
    const attn_spec self = {{B, H, (size_t)c->d_model / H, S, S, S, 0, false, S}, s->acts.src,
                            false, false, NONE, NULL};
    const bool pre = c->norm_first; /* the FFN's input norm comes with the residual before it */
    const cf_next_norm ffn_in = inner_norm(L, p, 0);
    CF_TRY(sublayer(s, L, p, 0, x, B * S, &self, l, l, normed, pre ? &ffn_in : NULL));
    return sublayer(s, L, p, 1, L->sub[0].out, B * S, NULL, l, l, pre, next);
}

clformer_status cf_encoder_block(cf_session *s, int l, cf_view x)
{
    return cf_encoder_block_chained(s, l, x, false, NULL);
}

clformer_status cf_decoder_block(cf_session *s, int l, const cf_layer_acts *L, cf_view x,
                                 const cf_block_shape *b)
{
    return cf_decoder_block_chained(s, l, L, x, b, false, NULL);
}

clformer_status cf_decoder_block_chained(cf_session *s, int l, const cf_layer_acts *L, cf_view x,
                                         const cf_block_shape *b, bool normed,
                                         const cf_next_norm *next)
{
    const clformer_config *c = &s->model->cfg;
    const cf_layer_params *p = &s->model->layout.dec[l];
    const size_t H = (size_t)c->n_heads, dh = (size_t)c->d_model / H, N = b->B * b->T;
    const int site_layer = c->n_enc_layers + l;
    /* decoder-only: no memory to attend to, and no padding among the keys */
    const bool cross = s->model->blocks.encoder;
    const attn_spec self = {{b->B, H, dh, b->T, b->pos + b->T, b->cap, b->pos, true, b->cap,
                             s->model->blocks.kv_heads},
                            cross ? b->tgt_tokens : b->key_mask, false, b->cached, NONE,
                            b->row_pos};
    const attn_spec cross_spec = {{b->B, H, dh, b->T, b->S, b->S, 0, false, b->S},
                                  b->src_tokens, true, b->cached, b->memory, NULL};
    const bool pre = c->norm_first; /* each next input norm comes with the residual before it */
    const cf_next_norm second_in = inner_norm(L, p, 0), ffn_in = inner_norm(L, p, 1);
    CF_TRY(sublayer(s, L, p, 0, x, N, &self, l, site_layer, normed, pre ? &second_in : NULL));
    if (cross)
        CF_TRY(sublayer(s, L, p, 1, L->sub[0].out, N, &cross_spec, l, site_layer, pre,
                        pre ? &ffn_in : NULL));
    const int f = cf_ffn_sub(cross);
    return sublayer(s, L, p, f, L->sub[f - 1].out, N, NULL, l, site_layer, pre, next);
}

/* The norm after block l of n in a chained stack: the next block's input
 * norm, or the stack's final one (into `final`, parameters fw, fb). */
static cf_next_norm after_block(const cf_layer_acts *acts, const cf_layer_params *params, int l,
                                int n, const cf_sub_acts *final, size_t fw, size_t fb)
{
    if (l + 1 < n)
        return (cf_next_norm){&acts[l + 1].sub[0], params[l + 1].norm_w[0],
                              params[l + 1].norm_b[0]};
    return (cf_next_norm){final, fw, fb};
}

clformer_status cf_forward_encoder(cf_session *s)
{
    const cf_model *m = s->model;
    cf_acts *a = &s->acts;
    const clformer_config *c = &m->cfg;
    const size_t d = (size_t)c->d_model;
    const cf_view pos = c->positional == CLFORMER_POS_LEARNED ? cf_param(s, m->layout.pos_embed)
                                                              : NONE;
    cf_dropout ds;
    /* the source side: only the transformer's encoder-decoder has one */
    CF_TRY(cf_embedding_forward(s->ctx, a->src_emb, a->src, cf_param(s, m->layout.src_embed), pos,
                                a->B, a->S, d, cf_embed_scale(c),
                                cf_session_dropout(s, CF_SITE_SRC_EMBED, &ds)));
    /* chained: each block computes the next one's input norm, the last encoder.norm */
    const bool chain = cf_chain_norms(s) && c->n_enc_layers > 0;
    const cf_sub_acts final = {a->memory, a->mem_mean, a->mem_rstd, NONE};
    for (int l = 0; l < c->n_enc_layers; l++) {
        const cf_next_norm next = after_block(a->enc, m->layout.enc, l, c->n_enc_layers, &final,
                                              m->layout.enc_norm_w, m->layout.enc_norm_b);
        CF_TRY(cf_encoder_block_chained(s, l, cf_layer_input(a, false, l), chain && l > 0,
                                        chain ? &next : NULL));
        if (a->half_saved) CF_TRY(cf_layer_store(s, false, l));
    }
    if (chain) return CLFORMER_OK;
    return cf_norm_forward(s, a->memory, a->mem_mean, a->mem_rstd,
                           cf_layer_input(a, false, c->n_enc_layers), m->layout.enc_norm_w,
                           m->layout.enc_norm_b, a->B * a->S);
}

clformer_status cf_generator_logits(cf_session *s, cf_view logits, cf_view out, size_t N)
{
    const cf_model *m = s->model;
    return cf_linear_forward(s->ctx, logits, out, cf_param(s, m->layout.generator_w),
                             cf_param(s, m->layout.generator_b), N, (size_t)m->cfg.d_model,
                             (size_t)m->cfg.tgt_vocab);
}

clformer_status cf_generator_forward(cf_session *s, cf_view out, cf_view mean, cf_view rstd,
                                     cf_view x, cf_view logits, size_t N)
{
    const cf_model *m = s->model;
    CF_TRY(cf_norm_forward(s, out, mean, rstd, x, m->layout.dec_norm_w, m->layout.dec_norm_b, N));
    return cf_generator_logits(s, logits, out, N);
}

clformer_status cf_forward(cf_session *s, bool with_loss, float grad_scale)
{
    const cf_model *m = s->model;
    cf_acts *a = &s->acts;
    const clformer_config *c = &m->cfg;
    const size_t V = (size_t)c->tgt_vocab, Nt = a->B * a->T;
    cf_dropout ds;

    if (a->cross) CF_TRY(cf_forward_encoder(s));
    CF_TRY(cf_embed(s, a->tgt_emb, a->tgt_in, a->B, a->T, 0,
                    cf_session_dropout(s, CF_SITE_TGT_EMBED, &ds)));
    const cf_block_shape shape = cf_batch_block_shape(a);
    /* chained: each block computes the next one's input norm, the last decoder.norm */
    const bool chain = cf_chain_norms(s) && c->n_dec_layers > 0;
    const cf_sub_acts final = {a->dec_out, a->dec_mean, a->dec_rstd, NONE};
    for (int l = 0; l < c->n_dec_layers; l++) {
        const cf_next_norm next = after_block(a->dec, m->layout.dec, l, c->n_dec_layers, &final,
                                              m->layout.dec_norm_w, m->layout.dec_norm_b);
        CF_TRY(cf_decoder_block_chained(s, l, &a->dec[l], cf_layer_input(a, true, l), &shape,
                                        chain && l > 0, chain ? &next : NULL));
        /* the last layer stays in the scratch for the backward */
        if (a->half_saved && l + 1 < c->n_dec_layers) CF_TRY(cf_layer_store(s, true, l));
    }
    if (chain)
        CF_TRY(cf_generator_logits(s, a->logits, a->dec_out, Nt));
    else
        CF_TRY(cf_generator_forward(s, a->dec_out, a->dec_mean, a->dec_rstd,
                                    cf_layer_input(a, true, c->n_dec_layers), a->logits, Nt));
    if (!with_loss) return CLFORMER_OK;
    /* evaluation reports the plain cross-entropy: smoothing is a training device */
    CF_TRY(cf_cross_entropy(s->ctx, a->losses, a->training ? a->logits : NONE, a->logits,
                            a->labels, Nt, V, a->training ? c->label_smoothing : 0.0f,
                            m->family->ignore_label, grad_scale));
    return cf_reduce_sum(s->ctx, s->metrics, 0, a->losses.buf, a->losses.off, Nt, false, false);
}
