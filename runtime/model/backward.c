/*
 * The backward pass: from dlogits (left in place of the logits by the
 * forward pass) back to the embeddings, accumulating every parameter
 * gradient into the model's grads (zeroed by the caller). Layer by layer in reverse;
 * the residual stream's gradient lives in acts.d_res, the memory's in
 * acts.d_mem (summed over the decoder's cross-attentions). Under
 * recomputation (acts.recompute) each layer's forward runs again just
 * before its backward, into the scratch the layers share (acts.c); with
 * 16-bit saved activations (acts.half_saved) its saved tensors are loaded
 * back into that scratch instead (half_saved.c).
 */
#include "session.h"

#include <math.h>

static cf_view P(const cf_session *s, size_t off) { return cf_param(s, off); }
static cf_view G(const cf_session *s, size_t off) { return cf_grad(s, off); }
static const cf_view NONE = {NULL, 0};

/* Gradient of a sublayer's F: dout -> input (dinp, += when accumulate). */
typedef enum { F_SELF_ATTN, F_CROSS_ATTN, F_FFN } f_kind;

static clformer_status attention_backward(cf_session *s, cf_attn_acts *a, const cf_attn_params *p,
                                          cf_view dout, cf_view fin, cf_view dinp,
                                          bool accumulate, bool cross, size_t Tq, size_t Tk,
                                          bool causal, uint32_t site)
{
    cf_ctx *ctx = s->ctx;
    cf_acts *A = &s->acts;
    const size_t B = A->B, d = (size_t)s->model->cfg.d_model, H = (size_t)s->model->cfg.n_heads;
    const size_t dh = d / H, Nq = B * Tq, Nk = B * Tk;
    /* self-attention's key/value heads (grouped-query: fewer than H) */
    const size_t Hkv = cross ? H : s->model->blocks.kv_heads, kvd = Hkv * dh, ld = d + 2 * kvd;
    CF_TRY(cf_linear_backward(ctx, A->d_c, G(s, p->out_w), G(s, p->out_b), dout, a->concat,
                              P(s, p->out_w), Nq, d, d, false));
    cf_attention_shape shape = {B, H, dh, Tq, Tk, Tk, 0, causal, Tk, Hkv};
    /* as in the forward: where the path takes rows it reads Q, K, V and dO
     * from the projections' rows and writes dQ, dK and dV into the rows of
     * d_q (self-attention: all three; cross: dQ, and dK, dV into d_kv's) */
    const bool rows =
        cf_attention_takes_rows(cf_attention_fused(&a->saved), A->tiled_attention, H, Hkv);
    cf_view qh, kh, vh;
    cf_attention_inputs(a, rows, cross, d, kvd, &qh, &kh, &vh, &shape);
    if (rows) {
        shape.out_rows = true;
        shape.dq_ld = cross ? d : ld;
        shape.dkv_ld = cross ? 2 * d : ld;
    } else {
        CF_TRY(cf_split_heads(ctx, A->d_ctx_h, A->d_c, d, B, Tq, H, dh));
    }
    const cf_view dq = rows ? A->d_q : A->d_qh,
                  dk = !rows ? A->d_kh : cross ? A->d_kv : cf_view_add(A->d_q, d),
                  dv = !rows ? A->d_vh : cross ? cf_view_add(A->d_kv, d)
                                               : cf_view_add(A->d_q, d + kvd);
    cf_dropout ds;
    cf_attention_saved saved = a->saved;
    saved.backward_scores = A->d_scores; /* the layers' shared workspace, or none */
    CF_TRY(cf_attention_backward(ctx, dq, dk, dv, A->d_probs, rows ? A->d_c : A->d_ctx_h,
                                 &saved, qh, kh, vh, &shape,
                                 cf_session_dropout(s, site, &ds)));
    if (!cross) {
        /* self-attention: Tk = Tq, the rows of d_q hold all three */
        if (!rows)
            CF_TRY(cf_merge_qkv_heads(ctx, A->d_q, ld, A->d_qh, A->d_kh, A->d_vh, B, Tq, H, Hkv,
                                      dh));
        /* rotary positions: the gradients of the turned queries and keys, turned back */
        if (s->model->blocks.rope) CF_TRY(cf_rotate(s, A->d_q, B, Tq, 0, NULL, true));
        return cf_linear_backward(ctx, dinp, G(s, p->in_proj_w), G(s, p->in_proj_b), A->d_q, fin,
                                  P(s, p->in_proj_w), Nq, d, ld, accumulate);
    }
    if (!rows) {
        CF_TRY(cf_merge_heads(ctx, A->d_q, d, A->d_qh, B, Tq, H, dh));
        CF_TRY(cf_merge_qkv_heads(ctx, A->d_kv, 2 * d, A->d_kh, A->d_kh, A->d_vh, B, Tk, 0, H,
                                  dh));
    }
    CF_TRY(cf_linear_backward(ctx, dinp, G(s, p->in_proj_w), G(s, p->in_proj_b), A->d_q, fin,
                              P(s, p->in_proj_w), Nq, d, d, accumulate));
    return cf_linear_backward(ctx, A->d_mem, G(s, p->in_proj_w + d * d),
                              G(s, p->in_proj_b + d), A->d_kv, A->memory,
                              P(s, p->in_proj_w + d * d), Nk, d, 2 * d, true);
}

static clformer_status ffn_backward(cf_session *s, cf_ffn_acts *f, const cf_layer_params *p,
                                    cf_view dout, cf_view fin, cf_view dinp, bool accumulate,
                                    size_t N, uint32_t site)
{
    cf_ctx *ctx = s->ctx;
    const size_t d = (size_t)s->model->cfg.d_model, ff = (size_t)s->model->cfg.d_ff;
    const cf_view d_ff = s->acts.d_ff;
    cf_dropout ds;
    if (!s->model->blocks.gated) {
        CF_TRY(cf_linear_act_backward(ctx, d_ff, G(s, p->lin2_w), G(s, p->lin2_b),
                                      G(s, p->lin1_b), dout, f->act, P(s, p->lin2_w), f->pre,
                                      P(s, p->lin1_b), N, ff, d, s->model->cfg.activation,
                                      cf_session_dropout(s, site, &ds)));
        return cf_linear_backward(ctx, dinp, G(s, p->lin1_w), NONE, d_ff, fin, P(s, p->lin1_w),
                                  N, d, ff, accumulate);
    }
    /* SwiGLU: the gate's and the up projection's gradients */
    const cf_view d_up = s->acts.d_up;
    CF_TRY(cf_linear_backward(ctx, d_ff, G(s, p->lin2_w), G(s, p->lin2_b), dout, f->act,
                              P(s, p->lin2_w), N, ff, d, false));
    CF_TRY(cf_dropout_backward(ctx, d_ff, d_ff, N * ff, cf_session_dropout(s, site, &ds)));
    CF_TRY(cf_swiglu_backward(ctx, d_ff, d_up, d_ff, f->pre, f->up, N * ff, false));
    CF_TRY(cf_linear_backward(ctx, dinp, G(s, p->lin1_w), NONE, d_ff, fin, P(s, p->lin1_w), N, d,
                              ff, accumulate));
    return cf_linear_backward(ctx, dinp, G(s, p->lin3_w), NONE, d_up, fin, P(s, p->lin3_w), N, d,
                              ff, true);
}

/* Everything one sublayer needs to run its F backward. */
typedef struct {
    f_kind kind;
    cf_attn_acts *attn;
    const cf_attn_params *attn_p;
    cf_ffn_acts *ffn;
    const cf_layer_params *layer_p;
    size_t Tq, Tk;
    bool causal;
    uint32_t inner_site; /* attention probabilities or FFN hidden dropout */
} f_spec;

static clformer_status f_backward(cf_session *s, const f_spec *f, cf_view dout, cf_view fin,
                                  cf_view dinp, bool accumulate, size_t N)
{
    if (f->kind == F_FFN)
        return ffn_backward(s, f->ffn, f->layer_p, dout, fin, dinp, accumulate, N, f->inner_site);
    return attention_backward(s, f->attn, f->attn_p, dout, fin, dinp, accumulate,
                              f->kind == F_CROSS_ATTN, f->Tq, f->Tk, f->causal, f->inner_site);
}

/* The blocks' normalisation backward (cf_norm_forward's): dinp = (or +=
 * when accumulate) the input gradient; the weight's (and bias's) gradients
 * accumulate. */
static clformer_status norm_backward(cf_session *s, cf_view dinp, size_t w, size_t b,
                                     cf_view dout, cf_view x, cf_view mean, cf_view rstd, size_t N,
                                     bool accumulate)
{
    const size_t d = (size_t)s->model->cfg.d_model;
    if (s->model->blocks.norm == CF_NORM_RMS)
        return cf_rmsnorm_backward(s->ctx, dinp, G(s, w), dout, x, P(s, w), rstd, N, d,
                                   accumulate);
    return cf_layernorm_backward(s->ctx, dinp, G(s, w), G(s, b), dout, x, P(s, w), mean, rstd, N,
                                 d, accumulate);
}

/* On entry d_res holds dL/dy for the sublayer's output y; on return dL/dx
 * for its input x. */
static clformer_status sublayer_backward(cf_session *s, cf_sub_acts *sub, const f_spec *f, cf_view x,
                                         size_t nw, size_t nb, size_t N, uint32_t out_site)
{
    cf_ctx *ctx = s->ctx;
    cf_acts *A = &s->acts;
    const size_t d = (size_t)s->model->cfg.d_model;
    cf_dropout ds;
    const cf_dropout *drop = cf_session_dropout(s, out_site, &ds);
    /* Without dropout F's output gradient is the incoming one itself: F's
     * backward reads it where it lies (it writes neither d_res nor d_a),
     * one copy launch less per sublayer. */
    const bool masked = cf_dropout_active(drop);
    if (s->model->cfg.norm_first) {
        /* y = x + drop(F(LN(x))) */
        if (masked) CF_TRY(cf_dropout_backward(ctx, A->d_a, A->d_res, N * d, drop));
        CF_TRY(f_backward(s, f, masked ? A->d_a : A->d_res, sub->ln, A->d_b, false, N));
        return norm_backward(s, A->d_res, nw, nb, A->d_b, x, sub->mean, sub->rstd, N, true);
    }
    /* y = LN(x + drop(F(x))) */
    CF_TRY(norm_backward(s, A->d_a, nw, nb, A->d_res, sub->ln, sub->mean, sub->rstd, N, false));
    CF_TRY(cf_copy(ctx, A->d_a.buf, A->d_a.off, A->d_res.buf, A->d_res.off, N * d));
    if (masked) CF_TRY(cf_dropout_backward(ctx, A->d_b, A->d_a, N * d, drop));
    return f_backward(s, f, masked ? A->d_b : A->d_a, x, A->d_res, true, N);
}

static clformer_status encoder_layer_backward(cf_session *s, int l)
{
    cf_layer_acts *L = &s->acts.enc[l];
    const cf_layer_params *p = &s->model->layout.enc[l];
    const size_t S = s->acts.S, N = s->acts.B * S;
    const f_spec ffn = {F_FFN, NULL, NULL, &L->ffn, p, 0, 0, false, cf_site(l, CF_SITE_FF_HIDDEN)};
    const f_spec attn = {F_SELF_ATTN, &L->self_attn, &p->self_attn, NULL, p, S, S, false,
                         cf_site(l, CF_SITE_ATTN_PROBS)};
    CF_TRY(sublayer_backward(s, &L->sub[1], &ffn, L->sub[0].out, p->norm_w[1], p->norm_b[1], N,
                             cf_site(l, CF_SITE_FF_OUT)));
    return sublayer_backward(s, &L->sub[0], &attn, cf_layer_input(&s->acts, false, l), p->norm_w[0],
                             p->norm_b[0], N, cf_site(l, CF_SITE_ATTN_OUT));
}

static clformer_status decoder_layer_backward(cf_session *s, int l)
{
    cf_layer_acts *L = &s->acts.dec[l];
    const cf_layer_params *p = &s->model->layout.dec[l];
    const size_t S = s->acts.S, T = s->acts.T, N = s->acts.B * T;
    const int sl = s->model->cfg.n_enc_layers + l;
    const f_spec ffn = {F_FFN, NULL, NULL, &L->ffn, p, 0, 0, false, cf_site(sl, CF_SITE_FF_HIDDEN)};
    const f_spec cross = {F_CROSS_ATTN, &L->cross_attn, &p->cross_attn, NULL, p, T, S, false,
                          cf_site(sl, CF_SITE_CROSS_PROBS)};
    const f_spec self = {F_SELF_ATTN, &L->self_attn, &p->self_attn, NULL, p, T, T, true,
                         cf_site(sl, CF_SITE_ATTN_PROBS)};
    const int f = cf_ffn_sub(s->acts.cross);
    CF_TRY(sublayer_backward(s, &L->sub[f], &ffn, L->sub[f - 1].out, p->norm_w[f], p->norm_b[f],
                             N, cf_site(sl, CF_SITE_FF_OUT)));
    if (s->acts.cross)
        CF_TRY(sublayer_backward(s, &L->sub[1], &cross, L->sub[0].out, p->norm_w[1],
                                 p->norm_b[1], N, cf_site(sl, CF_SITE_CROSS_OUT)));
    return sublayer_backward(s, &L->sub[0], &self, cf_layer_input(&s->acts, true, l), p->norm_w[0],
                             p->norm_b[0], N, cf_site(sl, CF_SITE_ATTN_OUT));
}

clformer_status cf_backward(cf_session *s)
{
    cf_ctx *ctx = s->ctx;
    cf_acts *A = &s->acts;
    const clformer_config *c = &s->model->cfg;
    const cf_param_layout *lay = &s->model->layout;
    const size_t d = (size_t)c->d_model, V = (size_t)c->tgt_vocab;
    const size_t Ns = A->B * A->S, Nt = A->B * A->T;
    const float scale = cf_embed_scale(c);
    const cf_view dpos = c->positional == CLFORMER_POS_LEARNED ? G(s, lay->pos_embed) : NONE;
    cf_dropout ds;

    /* gradients are final at the points numbered here, in this order
     * (collective.c's ready_point numbers each tensor alike) */
    cf_model *m = s->model;
    int point = 0;

    /* generator and decoder.norm */
    CF_TRY(cf_linear_backward(ctx, A->d_a, G(s, lay->generator_w), G(s, lay->generator_b),
                              A->logits, A->dec_out, P(s, lay->generator_w), Nt, d, V, false));
    CF_TRY(norm_backward(s, A->d_res, lay->dec_norm_w, lay->dec_norm_b, A->d_a,
                         cf_layer_input(&s->acts, true, c->n_dec_layers), A->dec_mean,
                         A->dec_rstd, Nt, false));
    CF_TRY(cf_grads_ready(m, point++));
    if (A->cross) CF_TRY(cf_fill(ctx, A->d_mem.buf, A->d_mem.off, Ns * d, 0.0f));
    const cf_block_shape shape = cf_batch_block_shape(A);
    for (int l = c->n_dec_layers - 1; l >= 0; l--) {
        /* recomputation: the layer's forward again, into the scratch all
         * layers share; the last layer's is still there from the forward */
        if (A->recompute && l < c->n_dec_layers - 1)
            CF_TRY(cf_decoder_block(s, l, &A->dec[l], cf_layer_input(A, true, l), &shape));
        if (A->half_saved && l < c->n_dec_layers - 1) CF_TRY(cf_layer_load(s, true, l));
        CF_TRY(decoder_layer_backward(s, l));
        CF_TRY(cf_grads_ready(m, point++));
    }
    CF_TRY(cf_embedding_backward(ctx, G(s, lay->tgt_embed), dpos, A->d_res, &A->tgt_index, A->B,
                                 A->T, d, scale, cf_session_dropout(s, CF_SITE_TGT_EMBED, &ds)));
    CF_TRY(cf_grads_ready(m, point++));
    if (!A->cross) { /* no encoder: its points pass with nothing new */
        CF_TRY(cf_grads_ready(m, point++));
        return cf_grads_ready(m, point);
    }

    /* encoder.norm, then the encoder */
    CF_TRY(norm_backward(s, A->d_res, lay->enc_norm_w, lay->enc_norm_b, A->d_mem,
                         cf_layer_input(&s->acts, false, c->n_enc_layers), A->mem_mean,
                         A->mem_rstd, Ns, false));
    CF_TRY(cf_grads_ready(m, point++));
    for (int l = c->n_enc_layers - 1; l >= 0; l--) {
        /* the decoder's layers wrote over the encoder's scratch */
        if (A->recompute) CF_TRY(cf_encoder_block(s, l, cf_layer_input(A, false, l)));
        if (A->half_saved) CF_TRY(cf_layer_load(s, false, l));
        CF_TRY(encoder_layer_backward(s, l));
        CF_TRY(cf_grads_ready(m, point++));
    }
    CF_TRY(cf_embedding_backward(ctx, G(s, lay->src_embed), dpos, A->d_res, &A->src_index, A->B,
                                 A->S, d, scale, cf_session_dropout(s, CF_SITE_SRC_EMBED, &ds)));
    return cf_grads_ready(m, point);
}
