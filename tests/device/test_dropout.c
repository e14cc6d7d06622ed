/* Dropout ops on each device: masks equal to the host Philox bit for bit,
 * kept fraction near 1-p; residual forward and backward against the
 * reference at odd sizes, out of place and in place, through the shared
 * check's case runner (conf_dropout_run: guards, exact without dropout);
 * add with aliasing, determinism and argument errors. */
#include "harness.h"
#include "ops.h"
#include "ref_dropout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cf_view V(hbuf b) { return cf_view_at(b.mem, b.off); }
static ref_dropout to_ref(const cf_dropout *d)
{
    return (ref_dropout){d->p, d->seed, d->step, d->site};
}

/* dx = mask(ones) on the device; every element's kept/dropped state must be
 * the host's, its value 1/(1-p), and the kept count near (1-p) n. */
static void check_mask(const cf_dropout *d, size_t n)
{
    float *ones = hmalloc(n * 4), *dx = hmalloc(n * 4);
    for (size_t i = 0; i < n; i++) ones[i] = 1.0f;
    hbuf dout = hbuf_from_f32(ones, n, 3), out = hbuf_zeros(n, 5);
    assert_ok(cf_dropout_backward(hctx(), V(out), V(dout), n, d));
    hbuf_read(out, dx);
    hbuf_check_canary(out);
    const ref_dropout r = to_ref(d);
    const double keep_scale = 1.0 / (1.0 - (double)d->p);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const bool host_kept = ref_dropout_kept(&r, i);
        if ((dx[i] != 0.0f) != host_kept)
            fail_msg("element %zu of site (seed %llx, step %u, site %u, p %g): device %s it, "
                     "host reference %s it",
                     i, (unsigned long long)d->seed, d->step, d->site, (double)d->p,
                     dx[i] != 0.0f ? "kept" : "dropped", host_kept ? "keeps" : "drops");
        if (host_kept && fabs(dx[i] - keep_scale) > 1e-6 * keep_scale)
            fail_msg("element %zu: kept value %.9g, want 1/(1-p) = %.9g", i, dx[i], keep_scale);
        kept += host_kept;
    }
    /* binomial(n, 1-p): 6 standard deviations */
    const double mean = (1.0 - d->p) * n, sd = sqrt(n * d->p * (1.0 - d->p));
    if (fabs((double)kept - mean) > 6.0 * sd)
        fail_msg("kept %zu of %zu at p=%g, expected %.0f +- %.0f", kept, n, (double)d->p, mean,
                 6.0 * sd);
    hbuf_free(dout), hbuf_free(out);
    free(ones), free(dx);
}

static void dropout_masks_match_host_bit_for_bit(void **state)
{
    (void)state;
    const size_t n = harness_is_slow() ? 4099 : (1u << 20) + 3;
    const cf_dropout sites[] = {
        {0.1f, 0x0123456789abcdefULL, 0, 0},
        {0.5f, 1, 7, 3},
        {0.9f, 0xffffffff00000000ULL, 123456, 0xffffffffu},
        {0.0001f, 42, 1, 1},
    };
    for (size_t s = 0; s < sizeof sites / sizeof *sites; s++) check_mask(&sites[s], n);
}

/* One case of the shared check (runtime/check/conf_dropout.c): guarded
 * tensors, inputs unchanged, exact results without dropout. */
static void check_case(conf_dropout_op op, size_t n, const cf_dropout *d, bool in_place,
                       uint64_t seed)
{
    const conf_dropout_case c = {op, n, d ? *d : (cf_dropout){0}, d != NULL, in_place, seed};
    assert_conformance_case(conf_dropout_run(hctx(), &c, harness_conf_sink, &failures));
}

/* out = res + dropout(x) out of place and in place (out = res). */
static void check_residual(size_t n, const cf_dropout *d, bool in_place, uint64_t seed)
{
    check_case(CONF_DROPOUT_RESIDUAL, n, d, in_place, seed);
}

static const size_t odd_sizes[] = {1, 7, 61, 93, 257, 61 * 93};

static void residual_dropout_forward_odd_sizes(void **state)
{
    (void)state;
    const size_t count = harness_is_slow() ? 5 : 6;
    const cf_dropout d = {0.1f, 0xdeadbeefcafeULL, 3, 17};
    for (size_t i = 0; i < count; i++)
        for (int in_place = 0; in_place < 2; in_place++) {
            check_residual(odd_sizes[i], NULL, in_place, i);
            check_residual(odd_sizes[i], &d, in_place, 10 + i);
        }
    const cf_dropout off = {0.0f, 1, 2, 3};
    check_residual(93, &off, false, 99);
}

/* dx = mask(dout), out of place and in place. */
static void dropout_backward_odd_sizes(void **state)
{
    (void)state;
    const size_t count = harness_is_slow() ? 5 : 6;
    const cf_dropout d = {0.25f, 77, 9, 4};
    for (size_t i = 0; i < count; i++)
        for (int in_place = 0; in_place < 2; in_place++)
            for (int active = 0; active < 2; active++)
                check_case(CONF_DROPOUT_BACKWARD, odd_sizes[i], active ? &d : NULL, in_place,
                           i * 4 + in_place * 2 + active);
}

/* out = a + b with out aliasing a, then b; exact float sums. */
static void add_aliasing(void **state)
{
    (void)state;
    const size_t n = 257;
    ref_rng r = ref_rng_new(8);
    float *a = hmalloc(n * 4), *b = hmalloc(n * 4), *y = hmalloc(n * 4);
    ref_fill_uniform(&r, a, NULL, n, -1, 1);
    ref_fill_uniform(&r, b, NULL, n, -1, 1);
    for (int alias = 0; alias < 3; alias++) {
        hbuf da = hbuf_from_f32(a, n, 4), db = hbuf_from_f32(b, n, 6);
        hbuf out = alias == 0 ? hbuf_zeros(n, 1) : alias == 1 ? da : db;
        assert_ok(cf_add(hctx(), V(out), V(da), V(db), n));
        hbuf_read(out, y);
        for (size_t i = 0; i < n; i++) assert_true(y[i] == a[i] + b[i]);
        hbuf_check_canary(da);
        hbuf_check_canary(db);
        hbuf_check_canary(out);
        if (alias == 0) hbuf_free(out);
        hbuf_free(da), hbuf_free(db);
    }
    free(a), free(b), free(y);
}

/* Same site twice: identical bits; another step: another mask. */
static void dropout_is_deterministic_per_site(void **state)
{
    (void)state;
    const size_t n = harness_is_slow() ? 1000 : 100000;
    float *x = hmalloc(n * 4), *y1 = hmalloc(n * 4), *y2 = hmalloc(n * 4);
    ref_rng r = ref_rng_new(4);
    ref_fill_uniform(&r, x, NULL, n, -1, 1);
    hbuf dx = hbuf_from_f32(x, n, 0), res = hbuf_zeros(n, 0), out = hbuf_zeros(n, 0);
    cf_dropout d = {0.3f, 5, 10, 2};
    assert_ok(cf_residual_dropout_forward(hctx(), V(out), V(res), V(dx), n, &d));
    hbuf_read(out, y1);
    assert_ok(cf_residual_dropout_forward(hctx(), V(out), V(res), V(dx), n, &d));
    hbuf_read(out, y2);
    assert_memory_equal(y1, y2, n * 4);
    d.step++;
    assert_ok(cf_residual_dropout_forward(hctx(), V(out), V(res), V(dx), n, &d));
    hbuf_read(out, y2);
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) differ += y1[i] != y2[i];
    assert_true(differ > n / 10);
    hbuf_free(dx), hbuf_free(res), hbuf_free(out);
    free(x), free(y1), free(y2);
}

static void bad_probability_and_empty_tensors(void **state)
{
    (void)state;
    hbuf a = hbuf_zeros(8, 2), b = hbuf_zeros(8, 2);
    const float bad[] = {1.0f, 1.5f, -0.1f, NAN};
    for (size_t i = 0; i < 4; i++) {
        const cf_dropout d = {bad[i], 1, 1, 1};
        assert_int_equal(cf_residual_dropout_forward(hctx(), V(a), V(a), V(b), 8, &d),
                         CLFORMER_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(clformer_last_error(), "[0, 1)"));
        assert_int_equal(cf_dropout_backward(hctx(), V(a), V(b), 8, &d),
                         CLFORMER_ERR_INVALID_ARGUMENT);
    }
    const cf_dropout d = {0.5f, 1, 1, 1};
    assert_ok(cf_residual_dropout_forward(hctx(), V(a), V(a), V(b), 0, &d));
    assert_ok(cf_dropout_backward(hctx(), V(a), V(b), 0, &d));
    assert_ok(cf_add(hctx(), V(a), V(a), V(b), 0));
    hbuf_check_canary(a);
    hbuf_free(a), hbuf_free(b);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(dropout_masks_match_host_bit_for_bit),
    cmocka_unit_test(residual_dropout_forward_odd_sizes),
    cmocka_unit_test(dropout_backward_odd_sizes),
    cmocka_unit_test(add_aliasing),
    cmocka_unit_test(dropout_is_deterministic_per_site),
    cmocka_unit_test(bad_probability_and_empty_tensors),
};
HARNESS_DEVICE_MAIN("dropout", tests)
