/* Embedding + positions on each device against the double reference,
 * through the shared check's case runners (conf_embedding_forward_run and
 * conf_embedding_backward_run: guards on every tensor, inputs unchanged,
 * backward accumulating (+=)): odd B, T, C and vocabularies, repeated ids and
 * pad 0, learned and sinusoidal positions (accurate to position 255 and
 * beyond), dropout on and off. Then what only the device test does:
 * bit-identical reruns, the forward's mask in the backward, bad arguments. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cf_view V(hbuf b) { return cf_view_at(b.mem, b.off); }

typedef struct {
    size_t B, T, C, vocab;
} shape;

static const shape odd_shapes[] = {{1, 1, 1, 1},    {7, 61, 93, 300}, {1, 257, 61, 2},
                                   {61, 7, 257, 61}, {93, 1, 7, 1},    {2, 93, 257, 257},
                                   {257, 7, 1, 7}};
static const shape small_shapes[] = {{1, 1, 1, 1}, {2, 7, 5, 3}, {3, 5, 13, 1}, {1, 9, 8, 300},
                                     {7, 3, 61, 7}};

static const shape *shapes(size_t *n)
{
    *n = harness_is_slow() ? sizeof small_shapes / sizeof *small_shapes
                           : sizeof odd_shapes / sizeof *odd_shapes;
    return harness_is_slow() ? small_shapes : odd_shapes;
}

static conf_embedding_case to_case(shape s, bool learned, const cf_dropout *d, uint64_t seed)
{
    return (conf_embedding_case){s.B, s.T, s.C, s.vocab, learned, d ? *d : (cf_dropout){0},
                                 false, seed};
}

static void check_forward(shape s, bool learned, const cf_dropout *d, uint64_t seed)
{
    const conf_embedding_case c = to_case(s, learned, d, seed);
    assert_conformance_case(conf_embedding_forward_run(hctx(), &c, harness_conf_sink, &failures));
}

static void embedding_forward_odd_shapes(void **state)
{
    (void)state;
    size_t count;
    const shape *s = shapes(&count);
    const cf_dropout d = {0.1f, 0xfeedULL, 4, 0};
    for (size_t i = 0; i < count; i++) {
        check_forward(s[i], false, NULL, i);
        check_forward(s[i], true, NULL, 20 + i);
        check_forward(s[i], false, &d, 40 + i);
        check_forward(s[i], true, &d, 60 + i);
        /* no positions (rotary models): with and without dropout */
        for (int k = 0; k < 2; k++) {
            conf_embedding_case c = to_case(s[i], false, k ? &d : NULL, 80 + 2 * i + k);
            c.no_positions = true;
            assert_conformance_case(
                conf_embedding_forward_run(hctx(), &c, harness_conf_sink, &failures));
        }
    }
}

/* The sinusoidal table alone (zero embeddings) at every position up to 255
 * (1023 for one width on fast devices), even and odd widths. */
static void sinusoid_accurate_at_large_positions(void **state)
{
    (void)state;
    const size_t fast[][2] = {{256, 61}, {256, 512}, {256, 93}, {1024, 512}};
    const size_t slow[][2] = {{256, 7}, {256, 16}};
    const size_t count = harness_is_slow() ? 2 : 4;
    for (size_t k = 0; k < count; k++) {
        const size_t T = harness_is_slow() ? slow[k][0] : fast[k][0];
        const size_t C = harness_is_slow() ? slow[k][1] : fast[k][1];
        const conf_embedding_case c = {1, T, C, 1, false, {0}, true, k};
        assert_conformance_case(
            conf_embedding_forward_run(hctx(), &c, harness_conf_sink, &failures));
    }
}

/* The host index uploaded at offsets (guarded like any other tensor). */
typedef struct {
    hbuf unique, starts, positions;
    cf_embedding_index index;
} dev_index;

static dev_index upload_index(const int32_t *tok, size_t n)
{
    int32_t *u = hmalloc(n * 4), *st = hmalloc((n + 1) * 4), *p = hmalloc(n * 4);
    dev_index d;
    d.index.n_unique = cf_embedding_index_build(tok, n, u, st, p);
    d.unique = hbuf_from_i32(u, d.index.n_unique, 4);
    d.starts = hbuf_from_i32(st, d.index.n_unique + 1, 1);
    d.positions = hbuf_from_i32(p, n, 6);
    d.index.unique = V(d.unique);
    d.index.starts = V(d.starts);
    d.index.positions = V(d.positions);
    free(u), free(st), free(p);
    return d;
}

static void free_index(dev_index *d)
{
    hbuf_check_canary(d->unique);
    hbuf_check_canary(d->starts);
    hbuf_check_canary(d->positions);
    hbuf_free(d->unique), hbuf_free(d->starts), hbuf_free(d->positions);
}

/* dtable and dpos start from random values; backward runs twice, so the
 * result is init + 2 grad when it accumulates (dpos unchanged when sinusoidal). */
static void check_backward(shape s, bool learned, const cf_dropout *d, uint64_t seed)
{
    const conf_embedding_case c = to_case(s, learned, d, seed);
    assert_conformance_case(conf_embedding_backward_run(hctx(), &c, harness_conf_sink, &failures));
}

static void embedding_backward_accumulates(void **state)
{
    (void)state;
    size_t count;
    const shape *s = shapes(&count);
    const cf_dropout d = {0.25f, 0xabcdef0123ULL, 9, 1};
    for (size_t i = 0; i < count; i++) {
        check_backward(s[i], true, NULL, 100 + i);
        check_backward(s[i], false, NULL, 120 + i);
        check_backward(s[i], true, &d, 140 + i);
        check_backward(s[i], false, &d, 160 + i);
    }
}

/* Backward from zero twice: bit-identical dtable and dpos (no atomics). One
 * id dominates (pad), as in real batches. */
static void embedding_backward_is_deterministic(void **state)
{
    (void)state;
    const shape s = harness_is_slow() ? (shape){3, 7, 5, 4} : (shape){16, 93, 61, 300};
    ref_rng r = ref_rng_new(9);
    int32_t *tok = hmalloc(s.B * s.T * 4);
    conf_embedding_tokens(tok, s.B, s.T, s.vocab, &r);
    for (size_t i = 0; i < s.B * s.T; i += 2) tok[i] = 0;
    const size_t n = s.B * s.T * s.C, nt = s.vocab * s.C, np = s.T * s.C;
    float *g = hmalloc(n * 4);
    ref_fill_uniform(&r, g, NULL, n, -1, 1);
    float *first_t = hmalloc(nt * 4), *first_p = hmalloc(np * 4), *t = hmalloc(nt * 4),
          *p = hmalloc(np * 4);
    dev_index idx = upload_index(tok, s.B * s.T);
    hbuf dg = hbuf_from_f32(g, n, 0), dt = hbuf_zeros(nt, 0), dp = hbuf_zeros(np, 0);
    const cf_dropout d = {0.1f, 3, 3, 3};
    for (int run = 0; run < 2; run++) {
        assert_ok(cf_fill(hctx(), dt.mem, dt.off, nt, 0.0f));
        assert_ok(cf_fill(hctx(), dp.mem, dp.off, np, 0.0f));
        assert_ok(cf_embedding_backward(hctx(), V(dt), V(dp), V(dg), &idx.index, s.B, s.T, s.C,
                                        2.0f, &d));
        hbuf_read(dt, run ? t : first_t);
        hbuf_read(dp, run ? p : first_p);
    }
    assert_memory_equal(first_t, t, nt * 4);
    assert_memory_equal(first_p, p, np * 4);
    free_index(&idx);
    hbuf_free(dg), hbuf_free(dt), hbuf_free(dp);
    free(tok), free(g), free(first_t), free(first_p), free(t), free(p);
}

/* Forward dropout and backward dropout use the same mask: the gradient of a
 * dropped output is zero in both dtable and dpos. */
static void backward_mask_matches_forward(void **state)
{
    (void)state;
    const shape s = {2, 7, harness_is_slow() ? 5 : 61, 1}; /* one id: dtable row = dpos sums */
    const size_t n = s.B * s.T * s.C;
    int32_t *tok = hmalloc(s.B * s.T * 4); /* all id 0 */
    float *ones = hmalloc(n * 4), *y = hmalloc(n * 4), *dp = hmalloc(s.T * s.C * 4);
    for (size_t i = 0; i < n; i++) ones[i] = 1.0f;
    const cf_dropout d = {0.5f, 11, 2, 5};
    hbuf dtok = hbuf_from_i32(tok, s.B * s.T, 0), table = hbuf_from_f32(ones, s.C, 0),
         out = hbuf_zeros(n, 0), g = hbuf_from_f32(ones, n, 0), dt = hbuf_zeros(s.C, 0),
         dpos = hbuf_zeros(s.T * s.C, 0), pos = hbuf_zeros(s.T * s.C, 0);
    assert_ok(cf_embedding_forward(hctx(), V(out), V(dtok), V(table), V(pos), s.B, s.T, s.C,
                                   1.0f, &d));
    dev_index idx = upload_index(tok, s.B * s.T);
    assert_ok(cf_embedding_backward(hctx(), V(dt), V(dpos), V(g), &idx.index, s.B, s.T, s.C, 1.0f,
                                    &d));
    hbuf_read(out, y);
    hbuf_read(dpos, dp);
    float *row = hmalloc(s.C * 4);
    hbuf_read(dt, row);
    for (size_t c = 0; c < s.C; c++) { /* the one id's row sums every output */
        float want = 0.0f;
        for (size_t i = 0; i < s.B * s.T; i++) want += y[i * s.C + c];
        assert_true(row[c] == want);
    }
    free(row);
    /* forward out = mask (table 1, pos 0); dpos[t,c] = sum over b of mask */
    for (size_t t = 0; t < s.T; t++)
        for (size_t c = 0; c < s.C; c++) {
            float want = 0.0f;
            for (size_t b = 0; b < s.B; b++) want += y[(b * s.T + t) * s.C + c];
            assert_true(dp[t * s.C + c] == want);
        }
    free_index(&idx);
    hbuf_free(dtok), hbuf_free(table), hbuf_free(out), hbuf_free(g), hbuf_free(dt);
    hbuf_free(dpos), hbuf_free(pos);
    free(tok), free(ones), free(y), free(dp);
}

static void bad_arguments_and_empty_shapes(void **state)
{
    (void)state;
    const int32_t tok[4] = {0, 1, 1, 0};
    hbuf dtok = hbuf_from_i32(tok, 4, 0), table = hbuf_zeros(8, 0), out = hbuf_zeros(16, 1);
    const cf_view none = cf_view_at(NULL, 0);
    const cf_dropout bad = {1.0f, 1, 1, 1};
    assert_int_equal(cf_embedding_forward(hctx(), V(out), V(dtok), V(table), none, 2, 2, 4, 1.0f,
                                          &bad),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(cf_embedding_forward(hctx(), V(out), none, V(table), none, 2, 2, 4, 1.0f,
                                          NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    cf_embedding_index empty = {V(dtok), V(dtok), V(dtok), 0};
    assert_int_equal(cf_embedding_backward(hctx(), V(table), none, V(out), &empty, 2, 2, 4, 1.0f,
                                           NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    /* empty shapes do nothing */
    assert_ok(cf_embedding_forward(hctx(), V(out), V(dtok), V(table), none, 0, 2, 4, 1.0f, NULL));
    assert_ok(cf_embedding_forward(hctx(), V(out), V(dtok), V(table), none, 2, 0, 4, 1.0f, NULL));
    assert_ok(cf_embedding_forward(hctx(), V(out), V(dtok), V(table), none, 2, 2, 0, 1.0f, NULL));
    assert_ok(cf_embedding_backward(hctx(), V(table), none, V(out), &empty, 0, 2, 4, 1.0f, NULL));
    hbuf_check_canary(out);
    hbuf_check_canary(table);
    hbuf_free(dtok), hbuf_free(table), hbuf_free(out);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(embedding_forward_odd_shapes),
    cmocka_unit_test(sinusoid_accurate_at_large_positions),
    cmocka_unit_test(embedding_backward_accumulates),
    cmocka_unit_test(embedding_backward_is_deterministic),
    cmocka_unit_test(backward_mask_matches_forward),
    cmocka_unit_test(bad_arguments_and_empty_shapes),
};
HARNESS_DEVICE_MAIN("embedding", tests)
