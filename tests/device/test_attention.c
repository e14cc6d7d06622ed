/* Multi-head attention on the device against the double-precision reference:
 * head dims 8, 64, 80; odd lengths; self-, causal, cross- and decoding
 * attention (Tk_cap > Tk, q_pos0 > 0); padded and fully padded keys; dropout
 * on and off; offsets and canaries on every output; determinism; the head
 * split/merge layout. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"
#include "ref_attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Values in rows >= Tk of dkh/dvh and columns outside a merge: must survive. */
#define UNTOUCHED 777.0f

typedef enum {
    KEYS_NONE,        /* key_tokens.buf NULL: no padding mask */
    KEYS_FULL,        /* no key is padding */
    KEYS_RIGHT_PAD,   /* batch b keeps a shorter prefix the larger b is */
    KEYS_RANDOM_PAD,  /* about a fifth of the keys are padding, anywhere */
    KEYS_ONE_EMPTY,   /* right padding, and batch 1 is padding only */
    KEYS_ALL_EMPTY,   /* every key of every batch is padding */
} keys_kind;

typedef struct {
    size_t B, H, dh, Tq, Tk, Tk_cap, q_pos0;
    bool causal;
    keys_kind keys;
    float p;             /* dropout probability */
    bool separate_drop;  /* probs_drop a tensor of its own (forced with dropout) */
} acase;

static int32_t *make_keys(const acase *c, size_t key_ld, ref_rng *r)
{
    int32_t *keys = hmalloc(c->B * key_ld * 4 + 4);
    for (size_t b = 0; b < c->B; b++)
        for (size_t j = 0; j < key_ld; j++) {
            int32_t id = 4 + (int32_t)(ref_rng_next(r) % 1000);
            const size_t len = c->Tk - b * c->Tk / (2 * c->B);
            switch (c->keys) {
            case KEYS_RIGHT_PAD: if (j >= len) id = 0; break;
            case KEYS_RANDOM_PAD: if (ref_rng_next(r) % 5 == 0) id = 0; break;
            case KEYS_ONE_EMPTY: if (j >= len || b == 1) id = 0; break;
            case KEYS_ALL_EMPTY: id = 0; break;
            default: break;
            }
            if (j >= c->Tk) id = (int32_t)(ref_rng_next(r) % 2); /* past Tk: must be ignored */
            keys[b * key_ld + j] = id;
        }
    return keys;
}

/* x (B, H, cap, dh) -> rows < rows_in_use of each block, packed; float and double. */
static float *live_f(const float *x, size_t BH, size_t rows, size_t cap, size_t dh)
{
    float *o = hmalloc(BH * rows * dh * 4 + 4);
    for (size_t i = 0; i < BH; i++) memcpy(o + i * rows * dh, x + i * cap * dh, rows * dh * 4);
    return o;
}
static double *live_d(const double *x, size_t BH, size_t rows, size_t cap, size_t dh)
{
    double *o = hmalloc(BH * rows * dh * 8 + 8);
    for (size_t i = 0; i < BH; i++) memcpy(o + i * rows * dh, x + i * cap * dh, rows * dh * 8);
    return o;
}

static void assert_rows_untouched(const float *x, size_t BH, size_t rows, size_t cap, size_t dh,
                                  const char *what)
{
    for (size_t i = 0; i < BH; i++)
        for (size_t e = rows * dh; e < cap * dh; e++)
            if (x[i * cap * dh + e] != UNTOUCHED)
                fail_msg("%s: row %zu of head block %zu (>= Tk = %zu) was written", what,
                         e / dh, i, rows);
}

/* Elements [from, to) must be exactly 0 (a fully masked batch). */
static void assert_zero(const float *x, size_t from, size_t to, const char *what)
{
    for (size_t i = from; i < to; i++)
        if (x[i] != 0.0f) fail_msg("%s[%zu] = %g in a fully padded batch, want 0", what, i, x[i]);
}

static bool bits_equal(hbuf b, const float *host)
{
    float *again = hmalloc(b.n * 4 + 4);
    hbuf_read(b, again);
    const bool same = memcmp(again, host, b.n * 4) == 0;
    free(again);
    return same;
}

static void run_case(const acase *c, uint64_t seed)
{
    ref_rng r = ref_rng_new(seed);
    const size_t BH = c->B * c->H, dh = c->dh, Tq = c->Tq, Tk = c->Tk, cap = c->Tk_cap;
    const size_t key_ld = Tk + 3;
    const size_t nq = BH * Tq * dh, nk = BH * cap * dh, np = BH * Tq * Tk;
    const bool active = c->p > 0.0f, separate = active || c->separate_drop;

    float *q = hmalloc(nq * 4), *k = hmalloc(nk * 4), *v = hmalloc(nk * 4), *dO = hmalloc(nq * 4);
    double *q64 = hmalloc(nq * 8), *k64 = hmalloc(nk * 8), *v64 = hmalloc(nk * 8),
           *dO64 = hmalloc(nq * 8);
    ref_fill_uniform(&r, q, q64, nq, -1, 1);
    ref_fill_uniform(&r, k, k64, nk, -1, 1);
    ref_fill_uniform(&r, v, v64, nk, -1, 1);
    ref_fill_uniform(&r, dO, dO64, nq, -1, 1);
    int32_t *keys = make_keys(c, key_ld, &r);

    /* Gradient buffers start with garbage (overwrite, not +=) and UNTOUCHED rows. */
    float *init_k = hmalloc(nk * 4), *init_q = hmalloc(nq * 4);
    for (size_t i = 0; i < nk; i++) init_k[i] = UNTOUCHED;
    for (size_t i = 0; i < nq; i++) init_q[i] = -3.0f;

    hbuf dq_ = hbuf_from_f32(q, nq, 3), dk_ = hbuf_from_f32(k, nk, 5),
         dv_ = hbuf_from_f32(v, nk, 7);
    hbuf dkeys = hbuf_from_i32(keys, c->B * key_ld, 2), ddO = hbuf_from_f32(dO, nq, 9);
    hbuf dout = hbuf_zeros(nq, 11), dP = hbuf_zeros(np, 13), dPd = hbuf_zeros(np, 17);
    hbuf gq = hbuf_from_f32(init_q, nq, 19), gk = hbuf_from_f32(init_k, nk, 23),
         gv = hbuf_from_f32(init_k, nk, 29), gP = hbuf_zeros(np, 31);

    const cf_attention_shape s = {c->B, c->H, dh, Tq, Tk, cap, c->q_pos0, c->causal, key_ld};
    const cf_dropout drop = {c->p, 0xfeedbeef12ULL + seed, 5, 21};
    const cf_attention_saved saved = {cf_view_at(dP.mem, dP.off),
                                      separate ? cf_view_at(dPd.mem, dPd.off)
                                               : cf_view_at(dP.mem, dP.off)};
    const cf_view key_view = c->keys == KEYS_NONE ? cf_view_at(NULL, 0)
                                                  : cf_view_at(dkeys.mem, dkeys.off);
#define VIEW(h) cf_view_at((h).mem, (h).off)
    assert_ok(cf_attention_forward(hctx(), VIEW(dout), &saved, VIEW(dq_), VIEW(dk_), VIEW(dv_),
                                   key_view, &s, active ? &drop : NULL));
    assert_ok(cf_attention_backward(hctx(), VIEW(gq), VIEW(gk), VIEW(gv), VIEW(gP), VIEW(ddO),
                                    &saved, VIEW(dq_), VIEW(dk_), VIEW(dv_), &s,
                                    active ? &drop : NULL));

    /* reference */
    const ref_attention_shape rs = {c->B, c->H, dh, Tq, Tk, cap, c->q_pos0, c->causal, key_ld};
    const ref_attention_dropout rdrop = {c->p, drop.seed, drop.step, drop.site};
    double *out64 = hmalloc(nq * 8), *P64 = hmalloc(np * 8), *Pd64 = hmalloc(np * 8),
           *dS64 = hmalloc(np * 8), *gq64 = hmalloc(nq * 8), *gk64 = hmalloc(nk * 8),
           *gv64 = hmalloc(nk * 8);
    ref_attention_forward(out64, P64, Pd64, q64, k64, v64, c->keys == KEYS_NONE ? NULL : keys,
                          &rs, &rdrop);
    ref_attention_backward(gq64, gk64, gv64, dS64, dO64, P64, Pd64, q64, k64, v64, &rs, &rdrop);

    float *out = hmalloc(nq * 4), *P = hmalloc(np * 4), *Pd = hmalloc(np * 4),
          *g_q = hmalloc(nq * 4), *g_k = hmalloc(nk * 4), *g_v = hmalloc(nk * 4);
    hbuf_read(dout, out), hbuf_read(dP, P), hbuf_read(gq, g_q), hbuf_read(gk, g_k),
        hbuf_read(gv, g_v);
    if (separate) hbuf_read(dPd, Pd);
    assert_grad_close(out, out64, nq);
    assert_grad_close(P, P64, np);
    if (separate) assert_grad_close(Pd, Pd64, np);
    assert_grad_close(g_q, gq64, nq);
    float *lk = live_f(g_k, BH, Tk, cap, dh), *lv = live_f(g_v, BH, Tk, cap, dh);
    double *lk64 = live_d(gk64, BH, Tk, cap, dh), *lv64 = live_d(gv64, BH, Tk, cap, dh);
    assert_grad_close(lk, lk64, BH * Tk * dh);
    assert_grad_close(lv, lv64, BH * Tk * dh);
    assert_rows_untouched(g_k, BH, Tk, cap, dh, "dkh");
    assert_rows_untouched(g_v, BH, Tk, cap, dh, "dvh");
    if (c->keys == KEYS_ONE_EMPTY || c->keys == KEYS_ALL_EMPTY) {
        const bool one = c->keys == KEYS_ONE_EMPTY; /* batch 1 only, else all */
        const size_t b0 = one ? 1 : 0, b1 = one ? 2 : c->B;
        assert_zero(out, b0 * c->H * Tq * dh, b1 * c->H * Tq * dh, "ctx_h");
        assert_zero(P, b0 * c->H * Tq * Tk, b1 * c->H * Tq * Tk, "probs");
        assert_zero(g_q, b0 * c->H * Tq * dh, b1 * c->H * Tq * dh, "dqh");
        assert_zero(lk, b0 * c->H * Tk * dh, b1 * c->H * Tk * dh, "dkh");
        assert_zero(lv, b0 * c->H * Tk * dh, b1 * c->H * Tk * dh, "dvh");
    }

    /* Backward again: the gradients are overwritten (same bits, not doubled);
     * forward again: the same bits (deterministic). */
    assert_ok(cf_attention_backward(hctx(), VIEW(gq), VIEW(gk), VIEW(gv), VIEW(gP), VIEW(ddO),
                                    &saved, VIEW(dq_), VIEW(dk_), VIEW(dv_), &s,
                                    active ? &drop : NULL));
    assert_true(bits_equal(gq, g_q) && bits_equal(gk, g_k) && bits_equal(gv, g_v));
    assert_ok(cf_attention_forward(hctx(), VIEW(dout), &saved, VIEW(dq_), VIEW(dk_), VIEW(dv_),
                                   key_view, &s, active ? &drop : NULL));
    assert_true(bits_equal(dout, out) && bits_equal(dP, P));
    if (separate) assert_true(bits_equal(dPd, Pd));
#undef VIEW

    hbuf all[] = {dq_, dk_, dv_, dkeys, ddO, dout, dP, dPd, gq, gk, gv, gP};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        hbuf_check_canary(all[i]);
        hbuf_free(all[i]);
    }
    free(q), free(k), free(v), free(dO), free(q64), free(k64), free(v64), free(dO64), free(keys);
    free(init_k), free(init_q), free(out64), free(P64), free(Pd64), free(dS64), free(gq64);
    free(gk64), free(gv64), free(out), free(P), free(Pd), free(g_q), free(g_k), free(g_v);
    free(lk), free(lv), free(lk64), free(lv64);
}

static void run_cases(const acase *cases, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) run_case(&cases[i], seed + i);
}
#define RUN(cases, seed) run_cases((cases), sizeof(cases) / sizeof *(cases), (seed))

/* {B, H, dh, Tq, Tk, Tk_cap, q_pos0, causal, keys, p, separate_drop} */

static void attention_self(void **state)
{
    (void)state;
    static const acase slow[] = {
        {1, 2, 8, 7, 7, 7, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
        {2, 1, 8, 1, 1, 1, 0, false, KEYS_FULL, 0.0f, true},
    };
    static const acase fast[] = {
        {2, 3, 64, 61, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
        {3, 2, 8, 7, 7, 7, 0, false, KEYS_RANDOM_PAD, 0.0f, true},
        {2, 2, 80, 93, 93, 93, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
        {1, 5, 64, 1, 1, 1, 0, false, KEYS_FULL, 0.0f, false},
        {2, 2, 64, 61, 61, 61, 0, false, KEYS_NONE, 0.0f, true},
    };
    if (harness_is_slow()) RUN(slow, 100);
    else RUN(fast, 100);
}

static void attention_causal(void **state)
{
    (void)state;
    static const acase slow[] = {{2, 1, 8, 7, 7, 7, 0, true, KEYS_RANDOM_PAD, 0.0f, false}};
    static const acase fast[] = {
        {2, 3, 64, 61, 61, 61, 0, true, KEYS_RIGHT_PAD, 0.0f, false},
        {3, 2, 8, 7, 7, 7, 0, true, KEYS_RANDOM_PAD, 0.0f, false},
        {2, 2, 80, 93, 93, 93, 0, true, KEYS_NONE, 0.0f, false},
        {1, 2, 64, 257, 257, 257, 0, true, KEYS_RIGHT_PAD, 0.1f, true},
    };
    if (harness_is_slow()) RUN(slow, 200);
    else RUN(fast, 200);
}

static void attention_cross(void **state)
{
    (void)state;
    static const acase slow[] = {{1, 2, 8, 7, 1, 1, 0, false, KEYS_FULL, 0.0f, false},
                                 {2, 1, 8, 1, 7, 7, 0, false, KEYS_RIGHT_PAD, 0.0f, false}};
    static const acase fast[] = {
        {2, 3, 64, 7, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
        {2, 2, 80, 61, 7, 7, 0, false, KEYS_RANDOM_PAD, 0.0f, false},
        {3, 2, 8, 61, 93, 93, 0, false, KEYS_RIGHT_PAD, 0.0f, false},
        {2, 2, 64, 93, 1, 1, 0, false, KEYS_FULL, 0.0f, false},
    };
    if (harness_is_slow()) RUN(slow, 300);
    else RUN(fast, 300);
}

/* Incremental decoding: a key cache of Tk_cap rows, Tk in use, queries from q_pos0. */
static void attention_decoding_cache(void **state)
{
    (void)state;
    static const acase slow[] = {{2, 2, 8, 1, 7, 9, 6, true, KEYS_RIGHT_PAD, 0.0f, false},
                                 {1, 2, 8, 3, 7, 8, 2, true, KEYS_FULL, 0.0f, false}};
    static const acase fast[] = {
        {3, 2, 64, 1, 61, 93, 60, true, KEYS_RIGHT_PAD, 0.0f, false},
        {2, 3, 80, 1, 7, 93, 6, true, KEYS_NONE, 0.0f, false},
        {2, 2, 8, 1, 61, 64, 30, true, KEYS_FULL, 0.0f, false}, /* keys after q_pos0 masked */
        {2, 2, 80, 7, 61, 64, 54, true, KEYS_RANDOM_PAD, 0.0f, false},
        {2, 2, 64, 1, 1, 93, 0, true, KEYS_FULL, 0.0f, false},
        {2, 2, 64, 7, 61, 93, 0, false, KEYS_RIGHT_PAD, 0.0f, false}, /* cross, cached memory */
    };
    if (harness_is_slow()) RUN(slow, 400);
    else RUN(fast, 400);
}

static void attention_padded_batches_give_zero_not_nan(void **state)
{
    (void)state;
    static const acase slow[] = {{3, 1, 8, 7, 7, 7, 0, true, KEYS_ONE_EMPTY, 0.2f, true},
                                 {2, 1, 8, 1, 7, 9, 6, true, KEYS_ALL_EMPTY, 0.0f, false}};
    static const acase fast[] = {
        {3, 2, 64, 61, 61, 61, 0, false, KEYS_ONE_EMPTY, 0.0f, false},
        {3, 2, 8, 7, 7, 7, 0, true, KEYS_ONE_EMPTY, 0.1f, true},
        {2, 2, 80, 7, 61, 61, 0, false, KEYS_ALL_EMPTY, 0.0f, true},
        {2, 3, 64, 1, 7, 93, 6, true, KEYS_ALL_EMPTY, 0.3f, true},
    };
    if (harness_is_slow()) RUN(slow, 500);
    else RUN(fast, 500);
}

static void attention_dropout(void **state)
{
    (void)state;
    static const acase slow[] = {{1, 2, 8, 7, 7, 7, 0, true, KEYS_RIGHT_PAD, 0.25f, true}};
    static const acase fast[] = {
        {2, 3, 64, 61, 61, 61, 0, false, KEYS_RIGHT_PAD, 0.1f, true},
        {2, 2, 80, 93, 93, 93, 0, true, KEYS_RANDOM_PAD, 0.1f, true},
        {3, 2, 8, 7, 61, 64, 0, false, KEYS_FULL, 0.5f, true},
        {2, 2, 64, 1, 61, 93, 60, true, KEYS_RIGHT_PAD, 0.2f, true},
    };
    if (harness_is_slow()) RUN(slow, 600);
    else RUN(fast, 600);
}

/* Empty sizes write nothing; no keys at all gives a zero output. */
static void attention_degenerate_sizes(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(64, 4), g = hbuf_zeros(64, 4);
    const cf_view x = cf_view_at(a.mem, a.off), y = cf_view_at(g.mem, g.off);
    const cf_attention_saved saved = {y, y};
    cf_attention_shape s = {0, 2, 8, 3, 3, 3, 0, false, 3};
    assert_ok(cf_attention_forward(hctx(), x, &saved, x, x, x, cf_view_at(NULL, 0), &s, NULL));
    assert_ok(cf_attention_backward(hctx(), x, x, x, y, x, &saved, x, x, x, &s, NULL));
    hbuf_check_canary(a);
    hbuf_check_canary(g);
    hbuf_free(g);

    /* Tk == 0: ctx_h (1, 2, 3, 8) = 0, dqh = 0 */
    float ones[48], got[48];
    for (int i = 0; i < 48; i++) ones[i] = 1.0f;
    hbuf o = hbuf_from_f32(ones, 48, 6);
    s = (cf_attention_shape){1, 2, 8, 3, 0, 0, 0, true, 0};
    assert_ok(cf_attention_forward(hctx(), cf_view_at(o.mem, o.off), &saved, x, x, x,
                                   cf_view_at(NULL, 0), &s, NULL));
    hbuf_read(o, got);
    assert_zero(got, 0, 48, "ctx_h with Tk = 0");
    assert_ok(cf_upload(hctx(), o.mem, o.off, ones, 48));
    assert_ok(cf_attention_backward(hctx(), cf_view_at(o.mem, o.off), x, x, y, x, &saved, x, x,
                                    x, &s, NULL));
    hbuf_read(o, got);
    assert_zero(got, 0, 48, "dqh with Tk = 0");
    hbuf_check_canary(o);
    hbuf_check_canary(a);
    hbuf_free(o), hbuf_free(a);
}

static void attention_bad_arguments_are_reported(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(256, 0), b = hbuf_zeros(256, 0);
    const cf_view x = cf_view_at(a.mem, 0);
    const cf_attention_saved same = {cf_view_at(b.mem, 0), cf_view_at(b.mem, 0)};
    cf_attention_shape s = {1, 1, 8, 2, 5, 4, 0, false, 5}; /* Tk > Tk_cap */
    assert_int_equal(cf_attention_forward(hctx(), x, &same, x, x, x, x, &s, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "Tk_cap"));
    s.Tk_cap = 5;
    const cf_dropout drop = {0.1f, 1, 1, 1};
    assert_int_equal(cf_attention_forward(hctx(), x, &same, x, x, x, x, &s, &drop),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "probs_drop"));
    assert_int_equal(cf_split_heads(hctx(), x, x, 7, 1, 2, 2, 4), CLFORMER_ERR_INVALID_ARGUMENT);
    hbuf_free(a), hbuf_free(b);
}

/* split then merge restores the packed rows; merge leaves other columns alone. */
static void split_merge_heads(void **state)
{
    (void)state;
    const size_t B = harness_is_slow() ? 2 : 3, T = harness_is_slow() ? 7 : 61, H = 3;
    const size_t dhs[] = {8, 64, 80};
    for (size_t d = 0; d < 3; d++) {
        const size_t dh = dhs[d], ld = H * dh + 5, n = B * T * ld, nh = B * H * T * dh;
        ref_rng r = ref_rng_new(d);
        float *src = hmalloc(n * 4), *heads = hmalloc(nh * 4), *back = hmalloc(n * 4);
        double *src64 = hmalloc(n * 8), *heads64 = hmalloc(nh * 8);
        ref_fill_uniform(&r, src, src64, n, -1, 1);
        hbuf ds = hbuf_from_f32(src, n, 3), dh_ = hbuf_zeros(nh, 5);
        assert_ok(cf_split_heads(hctx(), cf_view_at(dh_.mem, dh_.off), cf_view_at(ds.mem, ds.off),
                                 ld, B, T, H, dh));
        hbuf_read(dh_, heads);
        ref_split_heads(heads64, src64, ld, B, T, H, dh);
        for (size_t i = 0; i < nh; i++)
            if (heads[i] != (float)heads64[i]) fail_msg("split_heads: element %zu differs", i);

        for (size_t i = 0; i < n; i++) back[i] = UNTOUCHED;
        hbuf db = hbuf_from_f32(back, n, 7);
        assert_ok(cf_merge_heads(hctx(), cf_view_at(db.mem, db.off), ld,
                                 cf_view_at(dh_.mem, dh_.off), B, T, H, dh));
        hbuf_read(db, back);
        for (size_t row = 0; row < B * T; row++)
            for (size_t c = 0; c < ld; c++)
                if (back[row * ld + c] != (c < H * dh ? src[row * ld + c] : UNTOUCHED))
                    fail_msg("merge_heads: row %zu column %zu", row, c);
        hbuf_check_canary(ds), hbuf_check_canary(dh_), hbuf_check_canary(db);
        hbuf_free(ds), hbuf_free(dh_), hbuf_free(db);
        free(src), free(heads), free(back), free(src64), free(heads64);
    }
}

static void attention_conformance_check(void **state)
{
    (void)state;
    assert_conformance(conf_attention);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(attention_self),
    cmocka_unit_test(attention_causal),
    cmocka_unit_test(attention_cross),
    cmocka_unit_test(attention_decoding_cache),
    cmocka_unit_test(attention_padded_batches_give_zero_not_nan),
    cmocka_unit_test(attention_dropout),
    cmocka_unit_test(attention_degenerate_sizes),
    cmocka_unit_test(attention_bad_arguments_are_reported),
    cmocka_unit_test(split_merge_heads),
    cmocka_unit_test(attention_conformance_check),
};
HARNESS_DEVICE_MAIN("attention", tests)
