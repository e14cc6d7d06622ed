/*
 * 16-bit saved activations (cf_acts.half_saved): a bf16 or fp16 training
 * batch keeps the tensors inside each layer that its backward reads in 16
 * bits between the forward and the backward, instead of in fp32.
 *
 * The layers compute in one fp32 scratch they share (the layout of
 * recomputation, acts.c). After a layer's forward, cf_layer_store casts
 * those tensors to 16 bits into the layer's own store; just before the
 * layer's backward, cf_layer_load casts them back into the scratch. Every
 * such tensor was rounded to the precision when written (ops.h,
 * cf_round_activation), so the cast there and back is exact: the results
 * are bit for bit those of keeping them in fp32 (tests/device/
 * test_half_saved.c). Statistics (LayerNorm's mean and 1/std, fused
 * attention's row statistics) are not rounded and are kept in fp32. The
 * decoder's last layer is still in the scratch when backward begins, so it
 * is neither stored nor loaded. Tensors that lie one after another are
 * stored and loaded as one run (the padding between them travels along,
 * never read), so a layer takes 4 to 9 casts and copies each way rather
 * than 17 to 27 (acts.c orders the views for it).
 */
#include "arena.h"
#include "session.h"

/* The tensors of a layer that its backward reads, in the order acts.c lays
 * them out. */
typedef struct {
    cf_view *view;
    size_t n;
    bool stat; /* a statistic, never rounded: kept in fp32 */
} saved_tensor;

static void add(saved_tensor *out, size_t *count, cf_view *x, size_t n, bool stat)
{
    out[(*count)++] = (saved_tensor){x, n, stat};
}

/* What an attention's backward reads (backward.c, ops.h cf_attention_saved):
 * the heads (or the projections' rows, where it reads them), the
 * probabilities or the fused path's output and statistics, and out_proj's
 * input. */
static void attention_saved(const cf_acts *a, const clformer_config *cfg, cf_attn_acts *at,
                            bool cross, size_t Tq, size_t Tk, size_t kvd, saved_tensor *out,
                            size_t *count)
{
    const size_t B = a->B, d = (size_t)cfg->d_model, H = (size_t)cfg->n_heads;
    const bool rows =
        cf_attention_takes_rows(a->fused_attention, a->tiled_attention, H, kvd / (d / H));
    if (rows) { /* the projections' rows, which the attention reads (acts.c) */
        add(out, count, &at->q, B * Tq * (cross ? d : d + 2 * kvd), false);
        if (cross) add(out, count, &at->kv, B * Tk * 2 * d, false);
    } else {
        add(out, count, &at->qh, B * Tq * d, false);
        add(out, count, &at->kh, B * Tk * kvd, false);
        add(out, count, &at->vh, B * Tk * kvd, false);
    }
    if (!a->fused_attention) {
        add(out, count, &at->saved.probs, B * H * Tq * Tk, false);
        /* after dropout, when anything drops (else the same view as before;
         * not found by comparing views, which all have no buffer while a
         * layout is counted) */
        if (cf_acts_dropout(a, cfg))
            add(out, count, &at->saved.probs_drop, B * H * Tq * Tk, false);
    }
    add(out, count, &at->concat, B * Tq * d, false);
    if (a->fused_attention) {
        if (!rows) add(out, count, &at->ctx_h, B * Tq * d, false); /* as rows: concat */
        add(out, count, &at->saved.stats, 2 * B * H * Tq, true);
    }
}

/* A sublayer's normalisation; its output too unless it is the layer's
 * (kept in fp32 outside the scratch: the next layer's input). */
static void sub_saved(cf_sub_acts *sub, size_t N, size_t d, bool last, saved_tensor *out,
                      size_t *count)
{
    add(out, count, &sub->mean, N, true);
    add(out, count, &sub->rstd, N, true);
    add(out, count, &sub->ln, N * d, false);
    if (!last) add(out, count, &sub->out, N * d, false);
}

static size_t layer_saved(cf_acts *a, const clformer_config *cfg, bool decoder, int l,
                          saved_tensor out[CF_LAYER_SAVED_MAX])
{
    cf_layer_acts *L = decoder ? &a->dec[l] : &a->enc[l];
    const size_t Tq = decoder ? a->T : a->S, N = a->B * Tq;
    const size_t d = (size_t)cfg->d_model, ff = (size_t)cfg->d_ff;
    const bool cross = decoder && a->cross;
    const int f = decoder ? cf_ffn_sub(a->cross) : 1;
    /* the self-attention's key/value width (grouped-query: less than d) */
    const size_t kvd = decoder ? a->blocks->kv_heads * (d / (size_t)cfg->n_heads) : d;
    size_t count = 0;
    sub_saved(&L->sub[0], N, d, false, out, &count);
    attention_saved(a, cfg, &L->self_attn, false, Tq, Tq, kvd, out, &count);
    if (cross) {
        sub_saved(&L->sub[1], N, d, false, out, &count);
        attention_saved(a, cfg, &L->cross_attn, true, Tq, a->S, d, out, &count);
    }
    sub_saved(&L->sub[f], N, d, true, out, &count);
    add(out, &count, &L->ffn.pre, N * ff, false);
    if (a->blocks->gated) add(out, &count, &L->ffn.up, N * ff, false);
    add(out, &count, &L->ffn.act, N * ff, false);
    return count;
}

size_t cf_layer_saved_runs(cf_acts *a, const clformer_config *cfg, bool decoder, int l,
                           cf_saved_run out[CF_LAYER_SAVED_MAX])
{
    saved_tensor t[CF_LAYER_SAVED_MAX];
    const size_t count = layer_saved(a, cfg, decoder, l, t);
    size_t runs = 0;
    for (size_t i = 0; i < count; i++) {
        const cf_view v = *t[i].view;
        cf_saved_run *r = runs ? &out[runs - 1] : NULL;
        /* the next tensor starts where the run's last one ends, aligned as
         * the arena aligns (arena.h), in the same buffer and of one kind
         * (while a layout is counted no view has a buffer, but a tensor that
         * starts a new buffer starts at 0, so it never looks adjacent) */
        if (r && r->stat == t[i].stat && r->start.buf == v.buf &&
            v.off == r->start.off + cf_arena_round(r->n)) {
            r->n = v.off + t[i].n - r->start.off;
            continue;
        }
        out[runs++] = (cf_saved_run){v, t[i].n, t[i].stat};
    }
    return runs;
}

/* 16-bit data at float offset `off` of a buffer: the view at 16-bit offset 2 off. */
static cf_view as_16bit(cf_view v) { return (cf_view){v.buf, 2 * v.off}; }

static clformer_status move(cf_session *s, bool decoder, int l, bool store)
{
    cf_ctx *ctx = s->ctx;
    cf_acts *a = &s->acts;
    cf_layer_acts *L = decoder ? &a->dec[l] : &a->enc[l];
    cf_saved_run r[CF_LAYER_SAVED_MAX];
    const size_t count = cf_layer_saved_runs(a, &s->model->cfg, decoder, l, r);
    const clformer_precision half = s->precision;
    for (size_t i = 0; i < count; i++) {
        const cf_view x = r[i].start, kept = L->saved[i];
        if (r[i].stat)
            CF_TRY(store ? cf_copy(ctx, x.buf, x.off, kept.buf, kept.off, r[i].n)
                         : cf_copy(ctx, kept.buf, kept.off, x.buf, x.off, r[i].n));
        else
            CF_TRY(store ? cf_cast(ctx, as_16bit(kept), half, x, CLFORMER_FP32, r[i].n)
                         : cf_cast(ctx, x, CLFORMER_FP32, as_16bit(kept), half, r[i].n));
    }
    return CLFORMER_OK;
}

clformer_status cf_layer_store(cf_session *s, bool decoder, int l)
{
    return move(s, decoder, l, true);
}

clformer_status cf_layer_load(cf_session *s, bool decoder, int l)
{
    return move(s, decoder, l, false);
}
