/* The optimizer against the double reference: several Adam and AdamW steps
 * over odd sizes with the weight-decay boundary inside, at the ends and
 * beyond, with and without a device grad_scale; the decay boundary
 * bit-exactly; the clipping coefficient above, below and without max_norm;
 * the model's chain norm -> clip -> update; canaries and reruns. */
#include "harness.h"
#include "conformance.h"
#include "ops.h"
#include "reduce.h"
#include "ref_adam.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static cf_view view(hbuf b) { return cf_view_at(b.mem, b.off); }

/* The paper's betas and eps; bias corrections of step t as the model sets them. */
static cf_adam_params hparams(float lr, float wd, bool decoupled, int t)
{
    cf_adam_params hp = {lr, 0.9f, 0.98f, 1e-9f, wd, decoupled, 0, 0};
    hp.bias_correction1 = (float)(1.0 - pow(hp.beta1, t));
    hp.bias_correction2 = (float)(1.0 - pow(hp.beta2, t));
    return hp;
}

/* The same numbers for the reference. */
static ref_adam_params to_ref(const cf_adam_params *hp)
{
    return (ref_adam_params){hp->lr,           hp->beta1,     hp->beta2,
                             hp->eps,          hp->weight_decay, hp->decoupled,
                             hp->bias_correction1, hp->bias_correction2};
}

/* x - y elementwise in double, as float (exact inputs; one rounding). */
static void diff(float *out, const float *x, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = (float)((double)x[i] - (double)y[i]);
}

/* `steps` updates through the shared check (conf_adam_run): each step against
 * the reference from the device's own state, the last p and the total
 * displacement against the reference in double throughout, with guards.
 * Gradients over eight decades with exact zeros. */
static void check_steps(size_t n, size_t decay_end, bool decoupled, bool with_scale, int steps,
                        uint64_t seed)
{
    const conf_adam_case c = {n,    decay_end, decoupled, 1e-2f, 0.1f, with_scale ? 0.37f : 0.0f,
                              steps, true,     seed};
    assert_conformance_case(conf_adam_run(hctx(), &c, harness_conf_sink, &failures));
}

static void adam_and_adamw_steps(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 7, 61, 257, 10007, 100003};
    const size_t count = harness_is_slow() ? 4 : 6;
    for (size_t i = 0; i < count; i++) {
        const size_t n = sizes[i];
        /* the decay boundary: nowhere, inside (odd), everywhere, past the end */
        const size_t ends[4] = {0, n / 2 + 1 < n ? n / 2 + 1 : n, n, n + 5};
        for (int variant = 0; variant < 8; variant++)
            check_steps(n, ends[variant % 4], variant & 1, variant & 4 ? true : false,
                        harness_is_slow() ? 2 : 4, 10 * i + variant);
    }
}

/* Zero gradients and moments make Adam's own step exactly 0, so what is left
 * is the weight decay alone: AdamW multiplies exactly [0, decay_end) by
 * (float)(1 - lr*wd) and leaves the rest bit for bit; Adam-L2 moves only
 * [0, decay_end); weight_decay 0 moves nothing. */
static void decay_boundary_exact(void **state)
{
    (void)state;
    const size_t n = harness_is_slow() ? 61 : 10007, decay_end = n / 2 + 1;
    ref_rng r = ref_rng_new(9);
    float *p = hmalloc(n * 4), *out = hmalloc(n * 4), *mv = hmalloc(n * 4);
    ref_fill_uniform(&r, p, NULL, n, -2, 2);
    for (int mode = 0; mode < 3; mode++) { /* AdamW, Adam-L2, no decay */
        const float wd = mode == 2 ? 0.0f : 0.5f, lr = 0.1f;
        const cf_adam_params hp = hparams(lr, wd, mode != 1, 1);
        hbuf hp_ = hbuf_from_f32(p, n, 4), hg = hbuf_zeros(n, 0), hm = hbuf_zeros(n, 2),
             hv = hbuf_zeros(n, 6);
        assert_ok(cf_adam_update(hctx(), view(hp_), view(hg), view(hm), view(hv), n, decay_end,
                                 cf_view_at(NULL, 0), &hp));
        hbuf_read(hp_, out);
        const float factor = (float)(1.0 - (double)lr * wd);
        for (size_t i = 0; i < n; i++) {
            const bool decayed = i < decay_end && mode != 2;
            if (mode == 0 && out[i] != (decayed ? p[i] * factor : p[i]))
                fail_msg("AdamW element %zu (decay_end %zu): %.9g from %.9g", i, decay_end,
                         out[i], p[i]);
            if (mode != 0 && (out[i] != p[i]) != (decayed && p[i] != 0.0f))
                fail_msg("%s element %zu (decay_end %zu): %.9g from %.9g",
                         mode == 1 ? "Adam-L2" : "no-decay", i, decay_end, out[i], p[i]);
        }
        hbuf_read(hm, mv);
        for (size_t i = decay_end; i < n; i++) assert_true(mv[i] == 0.0f);
        hbuf_check_canary(hp_), hbuf_check_canary(hm), hbuf_check_canary(hv);
        hbuf_free(hp_), hbuf_free(hg), hbuf_free(hm), hbuf_free(hv);
    }
    free(p), free(out), free(mv);
}

/* The coefficient for norms above and below max_norm, max_norm 0 and
 * negative (off), a zero norm, an infinite norm (0) and a NaN norm (NaN). */
static void clip_scale_cases(void **state)
{
    (void)state;
    static const float cases[][2] = {{4.0f, 1.0f},  {0.25f, 1.0f}, {1e6f, 5.0f},
                                     {1.0f, 1.0f},  {100.0f, 0.0f}, {100.0f, -1.0f},
                                     {0.0f, 1.0f},  {INFINITY, 1.0f}, {NAN, 1.0f},
                                     {3e-12f, 1e-6f}};
    const size_t count = sizeof cases / sizeof *cases;
    float norms[16], out[16];
    double want[16];
    for (size_t i = 0; i < count; i++) norms[i] = cases[i][0];
    hbuf hn = hbuf_from_f32(norms, count, 3), hs = hbuf_zeros(count, 5);
    for (size_t i = 0; i < count; i++) {
        assert_ok(cf_clip_scale(hctx(), cf_view_add(view(hs), i), cf_view_add(view(hn), i),
                                cases[i][1]));
        want[i] = ref_clip_scale(cases[i][0], cases[i][1]);
    }
    hbuf_read(hs, out);
    assert_forward_close(out, want, count);
    assert_true(out[0] < 0.5f && out[1] == 1.0f && out[4] == 1.0f && out[5] == 1.0f);
    assert_true(out[7] == 0.0f && isnan(out[8]));
    hbuf_check_canary(hs), hbuf_check_canary(hn);
    assert_int_equal(cf_clip_scale(hctx(), view(hs), view(hn), NAN),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    hbuf_free(hn), hbuf_free(hs);
}

/* The training step's tail as the model runs it: norm_sq = sum g^2
 * (cf_reduce_sum), scale = cf_clip_scale, then the update reading it. */
static void norm_clip_update_chain(void **state)
{
    (void)state;
    const size_t n = harness_is_slow() ? 61 : 10007, decay_end = n - n / 3;
    ref_rng r = ref_rng_new(21);
    float *p = hmalloc(n * 4), *g = hmalloc(n * 4), *out = hmalloc(n * 4), *d = hmalloc(n * 4);
    ref_fill_uniform(&r, p, NULL, n, -1, 1);
    ref_fill_uniform(&r, g, NULL, n, -1, 1);
    double *p64 = to_double(p, n), *g64 = to_double(g, n), *m64 = hmalloc(n * 8),
           *v64 = hmalloc(n * 8), *d64 = hmalloc(n * 8);
    memset(m64, 0, n * 8), memset(v64, 0, n * 8);
    hbuf hp_ = hbuf_from_f32(p, n, 1), hg = hbuf_from_f32(g, n, 2), hm = hbuf_zeros(n, 3),
         hv = hbuf_zeros(n, 4), hnorm = hbuf_zeros(1, 5), hs = hbuf_zeros(1, 6);
    const cf_adam_params hp = hparams(3e-3f, 0.01f, true, 1);
    const ref_adam_params rhp = to_ref(&hp);
    assert_ok(cf_reduce_sum(hctx(), hnorm.mem, hnorm.off, hg.mem, hg.off, n, true, false));
    assert_ok(cf_clip_scale(hctx(), view(hs), view(hnorm), 1.0f));
    assert_ok(cf_adam_update(hctx(), view(hp_), view(hg), view(hm), view(hv), n, decay_end,
                             view(hs), &hp));
    double norm_sq = 0;
    for (size_t i = 0; i < n; i++) norm_sq += g64[i] * g64[i];
    const double scale = ref_clip_scale(norm_sq, 1.0);
    assert_true(scale < 1.0); /* this case clips */
    float scale_dev;
    hbuf_read(hs, &scale_dev);
    assert_forward_close(&scale_dev, &scale, 1);
    ref_adam_update(p64, g64, m64, v64, n, decay_end, scale, &rhp);
    hbuf_read(hp_, out);
    assert_forward_close(out, p64, n);
    diff(d, out, p, n);
    for (size_t i = 0; i < n; i++) d64[i] = p64[i] - p[i];
    assert_grad_close(d, d64, n);
    hbuf_check_canary(hp_), hbuf_check_canary(hg), hbuf_check_canary(hm);
    hbuf_check_canary(hv), hbuf_check_canary(hnorm), hbuf_check_canary(hs);
    hbuf_free(hp_), hbuf_free(hg), hbuf_free(hm), hbuf_free(hv), hbuf_free(hnorm), hbuf_free(hs);
    free(p), free(g), free(out), free(d), free(p64), free(g64), free(m64), free(v64), free(d64);
}

/* The same state and gradients twice give the same bits; bad arguments are
 * refused; n == 0 does nothing. */
static void rerun_bits_and_arguments(void **state)
{
    (void)state;
    const size_t n = harness_is_slow() ? 61 : 100003;
    ref_rng r = ref_rng_new(33);
    float *p = hmalloc(n * 4), *g = hmalloc(n * 4), *mv = hmalloc(n * 4);
    float *out[2][3];
    ref_fill_uniform(&r, p, NULL, n, -1, 1);
    conf_adam_grads(g, NULL, n, &r);
    ref_fill_uniform(&r, mv, NULL, n, 0, 1e-3);
    const cf_adam_params hp = hparams(1e-3f, 0.01f, false, 7);
    for (int run = 0; run < 2; run++) {
        hbuf hp_ = hbuf_from_f32(p, n, 1), hg = hbuf_from_f32(g, n, 0),
             hm = hbuf_from_f32(mv, n, 2), hv = hbuf_from_f32(mv, n, 3);
        assert_ok(cf_adam_update(hctx(), view(hp_), view(hg), view(hm), view(hv), n, n / 2,
                                 cf_view_at(NULL, 0), &hp));
        hbuf bufs[3] = {hp_, hm, hv};
        for (int b = 0; b < 3; b++) {
            out[run][b] = hmalloc(n * 4);
            hbuf_read(bufs[b], out[run][b]);
        }
        if (run == 1) {
            assert_int_equal(cf_adam_update(hctx(), view(hp_), view(hg), view(hm), view(hv), n,
                                            n, cf_view_at(NULL, 0), NULL),
                             CLFORMER_ERR_INVALID_ARGUMENT);
            cf_adam_params zero_bc = hp;
            zero_bc.bias_correction2 = 0.0f; /* step 0 */
            assert_int_equal(cf_adam_update(hctx(), view(hp_), view(hg), view(hm), view(hv), n,
                                            n, cf_view_at(NULL, 0), &zero_bc),
                             CLFORMER_ERR_INVALID_ARGUMENT);
            assert_ok(cf_adam_update(hctx(), view(hp_), view(hg), view(hm), view(hv), 0, 0,
                                     cf_view_at(NULL, 0), &hp));
            float *after = hmalloc(n * 4);
            hbuf_read(hp_, after);
            assert_memory_equal(after, out[1][0], n * 4);
            free(after);
        }
        hbuf_free(hp_), hbuf_free(hg), hbuf_free(hm), hbuf_free(hv);
    }
    for (int b = 0; b < 3; b++) {
        assert_memory_equal(out[0][b], out[1][b], n * 4);
        free(out[0][b]), free(out[1][b]);
    }
    free(p), free(g), free(mv);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(adam_and_adamw_steps),
    cmocka_unit_test(decay_boundary_exact),
    cmocka_unit_test(clip_scale_cases),
    cmocka_unit_test(norm_clip_update_chain),
    cmocka_unit_test(rerun_bits_and_arguments),
};
HARNESS_DEVICE_MAIN("adam", tests)
