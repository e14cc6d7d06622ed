/*
 * The activation arena: every tensor of a batch shape, in as many buffers
 * as it takes (each at most the device's largest allocation; arena.h).
 * Laid out in two passes (count, then assign views); a buffer grows only
 * when a batch needs more than any batch before it.
 */
#include "arena.h"
#include "attention_host.h"
#include "config.h"
#include "session.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The order of the views in a layer is chosen so that what its backward
 * reads lies in few contiguous runs (half_saved.c stores a run with one
 * cast): statistics first, then the normalisation and the sublayer's output,
 * which the next attention's saved tensors follow, or the FFN's.
 * out: where the sublayer's output goes when it is laid out already (a
 * layer's output under recomputation), else NULL: taken here. */
static void sub_acts(cf_split_arena *c, cf_sub_acts *s, size_t N, size_t d, const cf_view *out)
{
    s->mean = cf_split_arena_take(c, N);
    s->rstd = cf_split_arena_take(c, N);
    s->ln = cf_split_arena_take(c, N * d);
    s->out = out ? *out : cf_split_arena_take(c, N * d);
}

/* An attention's projections: self, one (B*Tq, d + 2 kvd) of queries, keys
 * and values; cross, the queries' (B*Tq, d) and the memory's keys and
 * values (B*Tk, 2d). */
static void projections(cf_split_arena *c, cf_attn_acts *a, size_t B, size_t Tq, size_t Tk,
                        bool cross, size_t d, size_t kvd)
{
    if (cross) {
        a->q = cf_split_arena_take(c, B * Tq * d);
        a->kv = cf_split_arena_take(c, B * Tk * 2 * d);
    } else {
        a->q = cf_split_arena_take(c, B * Tq * (d + 2 * kvd));
    }
}

/* keys: the key tokens the forward masks with (the fused backward reads
 * them again); kvd: the width of the keys and values (kv_heads * dh). */
static void attn_acts(cf_split_arena *c, cf_attn_acts *a, const cf_acts *A,
                      const clformer_config *cfg, size_t B, size_t Tq, size_t Tk, bool cross,
                      bool dropout, cf_view keys, size_t kvd)
{
    const size_t d = (size_t)cfg->d_model, H = (size_t)cfg->n_heads;
    const bool fused = A->fused_attention;
    const bool rows = cf_attention_takes_rows(fused, A->tiled_attention, H, kvd / (d / H));
    /* where the path takes rows, a training pass's attention reads Q, K and
     * V from the projections' rows (forward.c) and no heads are laid out; a
     * pass without backward may fill caches (a prefill), which split */
    const bool rows_in = rows && A->training;
    /* what backward reads first (sub_acts), in one run when unfused: the
     * projections or heads, probabilities, merged heads; the fused path's
     * output, then its statistics; then what backward does not read */
    const cf_view none = {NULL, 0};
    if (rows_in) {
        projections(c, a, B, Tq, Tk, cross, d, kvd);
        a->qh = a->kh = a->vh = none;
    } else {
        a->qh = cf_split_arena_take(c, B * Tq * d);
        a->kh = cf_split_arena_take(c, B * Tk * kvd);
        a->vh = cf_split_arena_take(c, B * Tk * kvd);
    }
    a->saved = (cf_attention_saved){none, none, none, none, none};
    if (!fused) {
        a->saved.probs = cf_split_arena_take(c, B * H * Tq * Tk);
        a->saved.probs_drop = dropout ? cf_split_arena_take(c, B * H * Tq * Tk) : a->saved.probs;
    }
    a->concat = cf_split_arena_take(c, B * Tq * d);
    /* the context in the head layout, where the path does not write it
     * straight into concat's rows (forward.c) */
    a->ctx_h = rows ? none : cf_split_arena_take(c, B * Tq * d);
    if (fused) {
        a->saved.out = rows ? a->concat : a->ctx_h;
        a->saved.stats = cf_split_arena_take(c, 2 * B * H * Tq);
        a->saved.key_tokens = keys;
    }
    if (!rows_in) projections(c, a, B, Tq, Tk, cross, d, kvd);
    a->out = cf_split_arena_take(c, B * Tq * d);
}

/* gated: the up projection after the gate, so that backward's reads stay one run */
static void ffn_acts(cf_split_arena *c, cf_ffn_acts *f, size_t N, size_t d, size_t ff, bool gated)
{
    const cf_view none = {NULL, 0};
    f->pre = cf_split_arena_take(c, N * ff);
    f->up = gated ? cf_split_arena_take(c, N * ff) : none;
    f->act = cf_split_arena_take(c, N * ff);
    f->out = cf_split_arena_take(c, N * d);
}

static cf_embedding_index index_views(cf_arena *c, size_t n)
{
    cf_embedding_index ix;
    ix.unique = cf_arena_take(c, n);
    ix.starts = cf_arena_take(c, n + 1);
    ix.positions = cf_arena_take(c, n);
    ix.n_unique = 0;
    return ix;
}

/* The integer inputs, laid out in one buffer (they are uploaded at once). */
static void int_views(cf_arena *c, cf_acts *a, size_t Ns, size_t Nt)
{
    a->src = cf_arena_take(c, Ns);
    a->tgt_in = cf_arena_take(c, Nt);
    a->labels = cf_arena_take(c, Nt);
    a->src_index = index_views(c, Ns);
    a->tgt_index = index_views(c, Nt);
}

/* The layers of the encoder. scratch NULL: each layer's tensors of its own;
 * else every layer's from the state `scratch` (the same views for all),
 * except its output, laid out before (recomputation). */
static void encoder_layers(cf_split_arena *c, cf_acts *a, const clformer_config *cfg, bool drop,
                           const cf_split_arena *scratch)
{
    const size_t Ns = a->B * a->S, d = (size_t)cfg->d_model, ff = (size_t)cfg->d_ff;
    for (int l = 0; l < cfg->n_enc_layers; l++) {
        cf_layer_acts *L = &a->enc[l];
        const cf_view out = L->sub[1].out;
        if (scratch) *c = *scratch;
        sub_acts(c, &L->sub[0], Ns, d, NULL);
        attn_acts(c, &L->self_attn, a, cfg, a->B, a->S, a->S, false, drop, a->src, d);
        sub_acts(c, &L->sub[1], Ns, d, scratch ? &out : NULL);
        ffn_acts(c, &L->ffn, Ns, d, ff, a->blocks->gated);
    }
}

/* The layers of the decoder, as encoder_layers. */
static void decoder_layers(cf_split_arena *c, cf_acts *a, const clformer_config *cfg, bool drop,
                           const cf_split_arena *scratch)
{
    const size_t Nt = a->B * a->T, d = (size_t)cfg->d_model, ff = (size_t)cfg->d_ff;
    const size_t kvd = a->blocks->kv_heads * (d / (size_t)cfg->n_heads);
    const cf_view none = {NULL, 0};
    const int f = cf_ffn_sub(a->cross);
    for (int l = 0; l < cfg->n_dec_layers; l++) {
        cf_layer_acts *L = &a->dec[l];
        const cf_view out = L->sub[f].out;
        if (scratch) *c = *scratch;
        sub_acts(c, &L->sub[0], Nt, d, NULL);
        /* decoder-only: no padding, so no key tokens to mask with */
        attn_acts(c, &L->self_attn, a, cfg, a->B, a->T, a->T, false, drop,
                  a->cross ? a->tgt_in : none, kvd);
        if (a->cross) {
            sub_acts(c, &L->sub[1], Nt, d, NULL);
            attn_acts(c, &L->cross_attn, a, cfg, a->B, a->T, a->S, true, drop, a->src, d);
        }
        sub_acts(c, &L->sub[f], Nt, d, scratch ? &out : NULL);
        ffn_acts(c, &L->ffn, Nt, d, ff, a->blocks->gated);
    }
}

/* Where layer l keeps what its backward reads (half_saved.c): 16-bit
 * tensors in half as many floats, statistics in fp32. */
static void layer_stores(cf_split_arena *c, cf_acts *a, const clformer_config *cfg, bool decoder,
                         int l)
{
    cf_saved_run r[CF_LAYER_SAVED_MAX];
    const size_t count = cf_layer_saved_runs(a, cfg, decoder, l, r);
    cf_layer_acts *L = decoder ? &a->dec[l] : &a->enc[l];
    for (size_t i = 0; i < count; i++)
        L->saved[i] = cf_split_arena_take(c, r[i].stat ? r[i].n : (r[i].n + 1) / 2);
}

/* encoder.norm's output and statistics */
static void memory_views(cf_split_arena *c, cf_acts *a, size_t d)
{
    const size_t Ns = a->B * a->S;
    a->memory = cf_split_arena_take(c, Ns * d);
    a->mem_mean = cf_split_arena_take(c, Ns);
    a->mem_rstd = cf_split_arena_take(c, Ns);
}

/* Assigns every view, handing out of `c` (buffers NULL: counts only). */
static void layout(const clformer_config *cfg, cf_acts *a, cf_split_arena *arena)
{
    const size_t B = a->B, S = a->S, T = a->T;
    const size_t d = (size_t)cfg->d_model, ff = (size_t)cfg->d_ff, H = (size_t)cfg->n_heads;
    const size_t V = (size_t)cfg->tgt_vocab, Ns = B * S, Nt = B * T;
    const size_t N = Ns > Nt ? Ns : Nt, Tmax = S > T ? S : T;
    const bool drop = cf_acts_dropout(a, cfg), fused = a->fused_attention;
    cf_split_arena *const c = arena;

    /* the integer region at the start of the first buffer: counted, then
     * taken as one block and carved */
    cf_arena ints = {NULL, 0};
    int_views(&ints, a, Ns, Nt);
    const cf_view block = cf_split_arena_take(c, ints.next);
    ints = (cf_arena){block.buf, block.off};
    int_views(&ints, a, Ns, Nt);
    a->ints = ints.next;

    a->src_emb = cf_split_arena_take(c, Ns * d);
    a->tgt_emb = cf_split_arena_take(c, Nt * d);
    if (!a->recompute && !a->half_saved) {
        encoder_layers(c, a, cfg, drop, NULL);
        memory_views(c, a, d);
        decoder_layers(c, a, cfg, drop, NULL);
    } else {
        /* each layer's output (the next one's input) and the memory are
         * kept; everything inside a layer lies in one scratch that every
         * layer, encoder and decoder, writes over (backward runs each
         * layer's forward again just before its backward, or, with
         * half_saved, loads what the layer's forward stored in 16 bits) */
        for (int l = 0; l < cfg->n_enc_layers; l++)
            a->enc[l].sub[1].out = cf_split_arena_take(c, Ns * d);
        for (int l = 0; l < cfg->n_dec_layers; l++)
            a->dec[l].sub[cf_ffn_sub(a->cross)].out = cf_split_arena_take(c, Nt * d);
        memory_views(c, a, d);
        const cf_split_arena scratch = *c;
        encoder_layers(c, a, cfg, drop, &scratch);
        cf_split_arena past_decoder = scratch;
        decoder_layers(&past_decoder, a, cfg, drop, &scratch);
        cf_split_arena_union(c, &past_decoder);
        if (a->half_saved) {
            for (int l = 0; l < cfg->n_enc_layers; l++) layer_stores(c, a, cfg, false, l);
            /* the decoder's last layer is still in the scratch in backward */
            for (int l = 0; l + 1 < cfg->n_dec_layers; l++) layer_stores(c, a, cfg, true, l);
        }
    }
    a->dec_out = cf_split_arena_take(c, Nt * d);
    a->dec_mean = cf_split_arena_take(c, Nt);
    a->dec_rstd = cf_split_arena_take(c, Nt);
    a->logits = cf_split_arena_take(c, Nt * V);
    a->losses = cf_split_arena_take(c, Nt);

    if (a->training) {
        a->d_res = cf_split_arena_take(c, N * d);
        a->d_mem = cf_split_arena_take(c, a->cross ? Ns * d : 0);
        a->d_a = cf_split_arena_take(c, N * d);
        a->d_b = cf_split_arena_take(c, N * d);
        a->d_c = cf_split_arena_take(c, N * d);
        a->d_q = cf_split_arena_take(c, N * 3 * d);
        a->d_kv = cf_split_arena_take(c, Ns * 2 * d);
        /* gradients in the head layout, where the path does not read and
         * write rows instead (backward.c) */
        const size_t heads =
            cf_attention_takes_rows(fused, a->tiled_attention, H, a->blocks->kv_heads)
                ? 0
                : B * Tmax * d;
        a->d_qh = cf_split_arena_take(c, heads);
        a->d_kh = cf_split_arena_take(c, heads);
        a->d_vh = cf_split_arena_take(c, heads);
        a->d_ctx_h = cf_split_arena_take(c, heads);
        const bool tk_wide = !fused || a->gemm_backward; /* (Tmax, Tmax) a (b, h) */
        a->d_probs = cf_split_arena_take(c, B * H * Tmax * (tk_wide ? Tmax : 1));
        a->d_scores = a->gemm_backward ? cf_split_arena_take(c, B * H * Tmax * Tmax)
                                       : (cf_view){NULL, 0};
        a->d_ff = cf_split_arena_take(c, N * ff);
        a->d_up = a->blocks->gated ? cf_split_arena_take(c, N * ff) : (cf_view){NULL, 0};
    }
}

/* a * b * c * d elements, or false when that overflows size_t */
static bool product(size_t a, size_t b, size_t c, size_t d, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out) && !__builtin_mul_overflow(*out, c, out) &&
           !__builtin_mul_overflow(*out, d, out);
}

#define MIB(bytes) ((double)(bytes) / (1024.0 * 1024.0))

/* The most bytes of probabilities auto lets the unfused path save: a
 * quarter of the device's memory, at least CLFORMER_ATTENTION_UNFUSED_MAX_BYTES. */
static size_t unfused_max_bytes(uint64_t global_mem_bytes)
{
    const uint64_t quarter = global_mem_bytes / 4;
    return quarter > CLFORMER_ATTENTION_UNFUSED_MAX_BYTES && quarter <= SIZE_MAX
               ? (size_t)quarter
               : CLFORMER_ATTENTION_UNFUSED_MAX_BYTES;
}

bool cf_attention_fused_for(clformer_attention_path path, const clformer_device_profile *device,
                            bool fused_on_host, uint64_t global_mem_bytes,
                            const clformer_config *cfg, size_t B, size_t S, size_t T,
                            bool training)
{
    if (path != CLFORMER_ATTENTION_AUTO) return path != CLFORMER_ATTENTION_UNFUSED;
    /* the tiled kernels (GPUs): one launch and no probabilities in memory
     * where the GEMM path makes three launches and stores them (unmeasured on
     * a GPU yet) */
    if (device->tiled_attention) return true;
    const size_t H = (size_t)cfg->n_heads, L = S > T ? S : T;
    /* the fused path's host items keep each chunk's probabilities in cache
     * where the unfused ones pass all of them through memory: from 512 keys
     * on as fast or faster (gpt-mini 8 x 512: level; 4 x 1024: 16-19%
     * faster on PoCL and Intel's runtime), below slower (16 x 256: 2-4%;
     * 12 x 64: 12%, the head split and merge around the fused path) */
    if (fused_on_host && L >= CF_ATTENTION_HOST_FUSED_KEYS) return true;
    /* elsewhere the GEMM path while its probabilities fit: on CPU devices it
     * was measured faster than the per-row fused kernels on PoCL at every
     * length from 64 to 512 and level or faster on Intel's runtime, and on
     * both at gpt-char's 64 x 256 (1.3 GB of them; docs/PERFORMANCE.md);
     * accelerators and simulators are unmeasured. cf_acts_prepare takes the
     * fused path after all where the unfused one's activations cannot be
     * allocated. */
    const size_t max_alloc_bytes = (size_t)cf_buffer_max_bytes(device->max_alloc_bytes);
    /* the probabilities the unfused path saves, per batch, in floats:
     * encoder S x S, decoder T x T and T x S per layer, twice with dropout,
     * and the backward's (Tmax x Tmax) workspace */
    const size_t copies = training && cf_config_any_dropout(cfg) ? 2 : 1;
    size_t a, b, c, w;
    if (!product(B, H, S, S, &a) || !product(B, H, T, T + S, &b) || !product(B, H, L, L, &w) ||
        w > max_alloc_bytes / 4)
        return true;
    if (__builtin_mul_overflow(a, (size_t)cfg->n_enc_layers, &a) ||
        __builtin_mul_overflow(b, (size_t)cfg->n_dec_layers, &b) ||
        __builtin_add_overflow(a, b, &c) || __builtin_mul_overflow(c, copies, &c) ||
        __builtin_add_overflow(c, training ? w : 0, &c))
        return true;
    return c > unfused_max_bytes(global_mem_bytes) / 4;
}

clformer_status cf_acts_check_shape(const clformer_config *cfg, size_t device_max_alloc_bytes,
                                    size_t B, size_t S, size_t T, bool row_stats_only)
{
    const size_t max_alloc_bytes = (size_t)cf_buffer_max_bytes(device_max_alloc_bytes);
    const size_t H = (size_t)cfg->n_heads, L = S > T ? S : T, d = (size_t)cfg->d_model;
    const size_t limit = max_alloc_bytes / 4, ff = (size_t)cfg->d_ff;
    const size_t wide = 3 * d > ff ? 3 * d : ff;
    static const char fix[] = "use a smaller --batch-tokens or --batch-size (fewer sentences per "
                              "batch) or a smaller --max-len (shorter sentences)";
    size_t n;
    const size_t cols = row_stats_only ? 2 : L; /* fused: two statistics per row */
    const bool fits = product(B, H, L, cols, &n);
    if (!fits || n > limit) {
        char size[64];
        if (fits && n <= SIZE_MAX / 4)
            snprintf(size, sizeof size, "%.0f MiB", MIB(n * 4));
        else
            snprintf(size, sizeof size, "more bytes than size_t can count");
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "a batch of %zu sentences with %zu attention heads and length %zu needs "
                       "attention scores of %zu x %zu x %zu x %zu floats per layer (%s), more "
                       "than one device buffer may hold (%.0f MiB): %s",
                       B, H, L, B, H, L, cols, size, MIB(max_alloc_bytes), fix);
    }
    const size_t V = (size_t)cfg->tgt_vocab;
    size_t rows;
    if (!product(B, T, V, 1, &n) || n > limit || !product(B, L, wide, 1, &rows) || rows > limit)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                       "a batch of %zu sentences of length %zu needs logits of %zu x %zu x %zu "
                       "floats and rows of %zu x %zu x %zu, more than one device buffer may hold "
                       "(%.0f MiB): %s",
                       B, L, B, T, V, B, L, wide, MIB(max_alloc_bytes), fix);
    return CLFORMER_OK;
}

bool cf_acts_gemm_backward(clformer_attention_path path, bool fused, bool tiled,
                           const clformer_config *cfg, const cf_blocks *blocks)
{
    /* the tiled kernels take grouped-query heads as rows, which the
     * unfused products do not (cf_attention_backward_by_gemm) */
    return path == CLFORMER_ATTENTION_GEMM_BACKWARD && fused &&
           (!tiled || blocks->kv_heads == (size_t)cfg->n_heads);
}

/* Whether the session's fused attention runs as host items (its passes
 * set the context's precision to the session's). */
static bool fused_on_host(const cf_session *s)
{
    return cf_attention_host_runs(s->ctx, s->precision);
}

/* Whether a training batch's attention backward runs by GEMMs, with its
 * (B, H, L, L) workspace (cf_acts_gemm_backward, for this session). */
static bool backward_by_gemm(const cf_session *s, bool fused, bool training)
{
    const clformer_config *cfg = &s->model->cfg;
    const bool tiled = fused && cf_attention_tiled(s->ctx, (size_t)(cfg->d_model / cfg->n_heads));
    return training && cf_acts_gemm_backward(s->ctx->attention_path, fused, tiled, cfg,
                                             &s->model->blocks);
}

/* Whether a batch's attention keeps no (B, H, L, L) tensor at all: the
 * fused path, unless its backward runs by GEMMs. */
static bool row_stats_only(const cf_session *s, bool fused, bool training)
{
    return fused && !backward_by_gemm(s, fused, training);
}

static void set_shape(cf_acts *a, const cf_session *s, size_t B, size_t S, size_t T,
                      bool training, bool fused)
{
    a->B = B;
    a->S = S;
    a->T = T;
    a->training = training;
    a->fused_attention = fused;
    const clformer_config *cfg = &s->model->cfg;
    a->tiled_attention =
        fused && cf_attention_tiled(s->ctx, (size_t)(cfg->d_model / cfg->n_heads));
    a->gemm_backward = backward_by_gemm(s, fused, training);
    /* a pass without backward needs no layer's tensors after the next
     * layer has run, so it shares the scratch too */
    a->recompute = s->recompute;
    a->half_saved = training && !s->recompute && s->precision != CLFORMER_FP32 &&
                    !s->saved_in_fp32;
    a->cross = s->model->blocks.encoder;
    a->blocks = &s->model->blocks;
}

/* Elements one arena buffer may hold: the device's largest allocation (at
 * most cf_buffer_max_bytes), or the session's own smaller limit (tests
 * split small arenas with it). */
static size_t arena_limit(const cf_session *s)
{
    size_t limit = (size_t)(cf_buffer_max_bytes(s->ctx->info.max_alloc_bytes) / 4);
    if (s->arena_limit && s->arena_limit < limit) limit = s->arena_limit;
    return limit < 16 ? 16 : limit;
}

/* Bytes the arena of a batch shape takes (its buffers' sum). */
static size_t arena_bytes(cf_session *s, size_t B, size_t S, size_t T, bool training)
{
    const clformer_config *cfg = &s->model->cfg;
    const bool fused =
        cf_attention_fused_for(s->ctx->attention_path, &s->ctx->device_profile,
                               fused_on_host(s), s->ctx->info.global_mem_bytes, cfg, B, S, T,
                               training);
    if (cf_acts_check_shape(cfg, s->ctx->info.max_alloc_bytes, B, S, T,
                            row_stats_only(s, fused, training)) != CLFORMER_OK)
        return SIZE_MAX;
    set_shape(&s->acts, s, B, S, T, training, fused);
    cf_split_arena count = {.bufs = NULL, .limit = arena_limit(s)};
    layout(cfg, &s->acts, &count);
    if (count.overflow) return SIZE_MAX;
    size_t n = 0;
    for (size_t i = 0; i < count.count; i++) n += count.used[i];
    return n > SIZE_MAX / 4 ? SIZE_MAX : n * 4;
}

/* arena_bytes of a training batch had the session this precision and
 * recomputation setting (both restored after). */
static size_t training_bytes_with(cf_session *s, size_t B, size_t S, size_t T,
                                  clformer_precision precision, bool recompute)
{
    const clformer_precision p = s->precision;
    const bool r = s->recompute;
    s->precision = precision;
    s->recompute = recompute;
    const size_t n = arena_bytes(s, B, S, T, true);
    s->precision = p;
    s->recompute = r;
    return n;
}

/* The batch could not be allocated: the arena's buffers are released, and
 * the message names the largest batch of these lengths that fits in the
 * device memory left (a binary search over the layout's size). */
static clformer_status too_large(cf_session *s, clformer_status st, size_t B, size_t S, size_t T,
                                 bool training)
{
    cf_split_buffers_free(s->ctx, &s->arena);
    const clformer_device_info *d = &s->ctx->info;
    const size_t used = (size_t)s->ctx->bytes_allocated;
    const size_t left = d->global_mem_bytes > used ? (size_t)d->global_mem_bytes - used : 0;
    size_t lo = 0, hi = B; /* the largest batch that fits lies in [lo, hi) */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (arena_bytes(s, mid, S, T, training) <= left) lo = mid;
        else hi = mid;
    }
    const size_t need = arena_bytes(s, B, S, T, training);
    /* training: would it fit with 16-bit saved activations (from fp32), or
     * with recomputation? */
    char hint[320] = "";
    size_t used_hint = 0;
    if (training && !s->recompute) {
        const size_t half = s->precision == CLFORMER_FP32
                                ? training_bytes_with(s, B, S, T, CLFORMER_BF16, false)
                                : SIZE_MAX;
        if (half <= left)
            used_hint += (size_t)snprintf(hint, sizeof hint,
                                          "; or keep activations in 16 bits (--precision bf16), "
                                          "which needs %.0f MiB for this batch", MIB(half));
        const size_t lean = training_bytes_with(s, B, S, T, s->precision, true);
        if (lean <= left)
            snprintf(hint + used_hint, sizeof hint - used_hint,
                     "; or recompute layers in backward (--recompute), which needs %.0f MiB for "
                     "this batch", MIB(lean));
    }
    s->acts.B = 0; /* no shape is laid out now */
    if (lo == 0)
        return cf_fail_prefix(st, "a batch of %zu sentences (source length %zu, target length "
                                  "%zu) needs %.0f MiB of activations, and not even one sentence "
                                  "of these lengths fits in the %.0f MiB the device has left (use "
                                  "a smaller --max-len or model%s): ",
                              B, S, T + 1, MIB(need), MIB(left), hint);
    return cf_fail_prefix(st, "a batch of %zu sentences (source length %zu, target length %zu) "
                              "needs %.0f MiB of activations; a batch of %zu such sentences fits "
                              "in the %.0f MiB the device has left (%zu source tokens; use a "
                              "smaller --batch-size or --batch-tokens%s): ",
                          B, S, T + 1, MIB(need), lo, MIB(left), lo * S, hint);
}

/* Whether a counted layout fits in the device memory left, counting the
 * session's arena as free (it is reallocated to the layout). */
static bool fits_device(const cf_session *s, const cf_split_arena *count)
{
    uint64_t need = 0, held = 0;
    for (size_t i = 0; i < count->count; i++) need += (uint64_t)count->used[i] * 4;
    for (size_t i = 0; i < s->arena.count; i++) held += (uint64_t)s->arena.capacity[i] * 4;
    const uint64_t used = s->ctx->bytes_allocated > held ? s->ctx->bytes_allocated - held : 0;
    return used + need <= s->ctx->info.global_mem_bytes;
}

clformer_status cf_acts_prepare(cf_session *s, size_t B, size_t S, size_t T, bool training)
{
    const clformer_config *cfg = &s->model->cfg;
    cf_acts *a = &s->acts;
    if (!a->enc || !a->dec) { /* both or neither: a half-made pair is made again */
        free(a->enc);
        free(a->dec);
        /* at least one entry: a decoder-only model has no encoder layers */
        a->enc = calloc((size_t)cfg->n_enc_layers + 1, sizeof *a->enc);
        a->dec = calloc((size_t)cfg->n_dec_layers, sizeof *a->dec);
        if (!a->enc || !a->dec) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    /* the sizes below are products of these: refuse any that overflows or
     * could never fit before computing them */
    const bool fused =
        cf_attention_fused_for(s->ctx->attention_path, &s->ctx->device_profile,
                               fused_on_host(s), s->ctx->info.global_mem_bytes, cfg, B, S, T,
                               training);
    CF_TRY(cf_acts_check_shape(cfg, s->ctx->info.max_alloc_bytes, B, S, T,
                               row_stats_only(s, fused, training)));
    set_shape(a, s, B, S, T, training, fused);
    const size_t limit = arena_limit(s);
    cf_split_arena count = {.bufs = NULL, .limit = limit};
    layout(cfg, a, &count);
    if (!fused && s->ctx->attention_path == CLFORMER_ATTENTION_AUTO &&
        !fits_device(s, &count)) {
        /* auto chose the unfused path for speed; where its probabilities
         * do not fit in the memory left, the fused one, which keeps none */
        set_shape(a, s, B, S, T, training, true);
        count = (cf_split_arena){.bufs = NULL, .limit = limit};
        layout(cfg, a, &count);
    }
    clformer_status st = cf_split_buffers_reserve(s->ctx, &s->arena, &count, "activations");
    if (st != CLFORMER_OK) return too_large(s, st, B, S, T, training);
    cf_split_arena arena = {.bufs = s->arena.bufs, .limit = limit};
    layout(cfg, a, &arena);
    a->total = 0;
    for (size_t i = 0; i < arena.count; i++) a->total += arena.used[i];
    a->buffers = arena.count;
    return CLFORMER_OK;
}
