/*
 * bf16 and fp16 training against PyTorch's mixed precision (tests/data/parity, made by
 * tools/reference/torch_reference.py autocast): the fixture's 10 steps with
 * clformer_session_set_precision(bf16) must give, at every step, a loss within
 * 2e-2 of PyTorch's CPU autocast(bf16) run with fp32 master weights
 * (fixture_bf16.safetensors `losses`). Why 2e-2 (the parity README measures
 * it): autocast rounds fewer tensors than clformer (its residual stream,
 * LayerNorms and loss stay fp32; clformer stores every activation in bf16),
 * and two legitimate choices of rounding points part by up to 1.2e-2 over
 * these steps (autocast against a bf16-everywhere run of the same model),
 * while autocast itself is up to 4.8e-3 from fp32; one optimiser update moves
 * step 2's loss by 2.3e-2 or more, so a run whose rounded weights miss an
 * update, or whose 16-bit values are wrong, falls outside.
 * The bound would also pass a run that rounds nothing (fp32 is within 4.8e-3
 * of autocast): so the run must differ from the float64 reference by more
 * than fp32 parity's 1e-4 at some step (fp32 runs stay within 6e-7). The
 * per-op rounding is checked by `clformer check --precision bf16`.
 *
 * fp16 the same way against PyTorch's CUDA autocast(fp16) with a GradScaler
 * (fixture_fp16.safetensors, made on an NVIDIA GPU: PyTorch 1.13 has no CPU
 * fp16 autocast), within 5e-3 per step. fp16 has three more mantissa bits
 * than bf16, but the gaps shrink far less than eightfold: Adam's first
 * updates move every weight by about lr whatever its gradient's size, so an
 * element whose tiny gradient changes sign under rounding moves the other
 * way in full. Over these fixtures autocast(fp16) is up to 1.8e-3 from fp32
 * and 1.7e-3 from an fp16-everywhere run, clformer's fp16 up to 2.9e-3 from
 * autocast (fixture a, step 3). 5e-3 is still a fifth of one update's effect.
 * As a bound that loose would also pass a run that rounds to bf16 (those
 * leave the float64 losses by 3.6e-3 to 9.3e-3 here), an fp16 run must also
 * stay within 2.5e-3 of them, and leave them by more than 1e-4.
 * Fixtures a and b on every device; the simulator runs the tiny one.
 */
#include "harness.h"
#include "parity_fixture.h"
#include "safetensors.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FP32_PARITY 1e-4 /* test_model_parity's bound: a 16-bit run must leave it */

/* A format, the fixture of PyTorch's autocast run in it, the bound per step
 * against autocast, and how far from the float64 losses the run may go. */
typedef struct {
    clformer_precision precision;
    const char *name, *fixture;
    double tolerance, max_from_fp64;
} half_format;

static const half_format BF16 = {CLFORMER_BF16, "bf16", "fixture_bf16.safetensors", 2e-2, INFINITY};
static const half_format FP16 = {CLFORMER_FP16, "fp16", "fixture_fp16.safetensors", 5e-3, 2.5e-3};

static void half_ten_steps(const char *name, const half_format *f)
{
    char path[600];
    cf_st_reader *fx, *bf;
    parity_path(path, sizeof path, name, "fixture.safetensors");
    assert_ok(cf_st_open(path, &fx));
    parity_path(path, sizeof path, name, f->fixture);
    assert_ok(cf_st_open(path, &bf));
    const cf_st_tensor *s = cf_st_find(fx, "src"), *t = cf_st_find(fx, "tgt");
    assert_non_null(s);
    assert_non_null(t);
    const size_t B = (size_t)s->shape[1], S = (size_t)s->shape[2], T1 = (size_t)t->shape[2];
    int32_t *src = parity_read_tensor(fx, "src", CF_ST_I32, NULL), *tgt = parity_read_tensor(fx, "tgt", CF_ST_I32, NULL);
    size_t n64, nbf;
    double *f64 = parity_read_tensor(fx, "losses", CF_ST_F64, &n64);
    double *autocast = parity_read_tensor(bf, "losses", CF_ST_F64, &nbf);

    clformer_model *model;
    parity_path(path, sizeof path, name, "model.safetensors");
    assert_ok(clformer_model_load(hctx(), path, &model));
    size_t steps;
    const float lr = parity_set_optimizer(fx, model, &steps);
    assert_int_equal(n64, steps);
    assert_int_equal(nbf, steps);
    clformer_session *session;
    assert_ok(clformer_session_create(model, &session));
    assert_ok(clformer_session_set_precision(session, f->precision));

    double worst = 0.0, from_fp64 = 0.0;
    char line[512] = "";
    for (size_t k = 0; k < steps; k++) {
        clformer_batch b = {B, S, T1, src + k * B * S, tgt + k * B * T1};
        clformer_step_stats st;
        assert_ok(clformer_session_train_step(session, &b, lr, &st));
        const double d = st.loss - autocast[k];
        snprintf(line + strlen(line), sizeof line - strlen(line), " %+.1e", d);
        if (!(fabs(d) <= f->tolerance))
            fail_msg("%s step %zu: %s loss %.6f, PyTorch autocast(%s) %.6f: %.2e apart, more "
                     "than %.0e",
                     name, k + 1, f->name, st.loss, f->name, autocast[k], fabs(d), f->tolerance);
        if (st.skipped) fail_msg("%s step %zu: an fp16 overflow skipped the step", name, k + 1);
        worst = fmax(worst, fabs(d));
        from_fp64 = fmax(from_fp64, fabs(st.loss - f64[k]));
    }
    /* the figures for docs: clformer minus autocast, per step */
    print_message("%s: %s - autocast per step%s (max %.1e); max |%s - fp64| %.1e\n", name,
                  f->name, line, worst, f->name, from_fp64);
    if (!(from_fp64 > FP32_PARITY))
        fail_msg("%s: the %s run stays within %.0e of the float64 losses (max %.1e): nothing "
                 "was rounded",
                 name, f->name, FP32_PARITY, from_fp64);
    if (!(from_fp64 <= f->max_from_fp64))
        fail_msg("%s: the %s run leaves the float64 losses by %.1e, more than %.1e: rounded "
                 "more coarsely than %s",
                 name, f->name, from_fp64, f->max_from_fp64, f->name);

    clformer_session_free(session);
    clformer_model_free(model);
    cf_st_close(fx), cf_st_close(bf);
    free(src), free(tgt), free(f64), free(autocast);
}

static void fixtures_against_autocast(const half_format *f)
{
    if (harness_is_slow()) {
        half_ten_steps("e_tiny_oclgrind", f);
        return;
    }
    half_ten_steps("a_prenorm_relu_sin", f);
    half_ten_steps("b_postnorm_gelu_learned", f);
}

static void precision_parity_bf16_against_autocast(void **state)
{
    (void)state;
    fixtures_against_autocast(&BF16);
}

static void precision_parity_fp16_against_autocast(void **state)
{
    (void)state;
    fixtures_against_autocast(&FP16);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(precision_parity_bf16_against_autocast),
    cmocka_unit_test(precision_parity_fp16_against_autocast),
};
HARNESS_DEVICE_MAIN("bf16 and fp16 parity with PyTorch autocast", tests)
