/*
 * The whole model against PyTorch (tests/data/parity, made by
 * tools/reference/torch_reference.py): step-1 logits and gradients, 10 training steps'
 * losses (|loss - loss_torch| <= 1e-4), the weights after them, and greedy
 * decoding with the final weights. Every fixture on every device; the
 * simulator runs only the tiny one.
 */
#include "harness.h"
#include "parity_fixture.h"
#include "safetensors.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char dir[512];
    cf_st_reader *fx;
    clformer_model *model;
    clformer_session *session; /* on model: every batch call */
    size_t steps, B, S, T1;
    int32_t *src, *tgt;
    double *losses, *grad_norms;
    float lr;
} fixture;

static void load_model(fixture *f)
{
    char path[600];
    parity_path(path, sizeof path, f->dir, "model.safetensors");
    assert_ok(clformer_model_load(hctx(), path, &f->model));
    f->lr = parity_set_optimizer(f->fx, f->model, &f->steps);
}

static void open_fixture(fixture *f, const char *name)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", name);
    char path[600];
    parity_path(path, sizeof path, name, "fixture.safetensors");
    assert_ok(cf_st_open(path, &f->fx));
    const cf_st_tensor *s = cf_st_find(f->fx, "src"), *t = cf_st_find(f->fx, "tgt");
    assert_non_null(s);
    assert_non_null(t);
    f->B = (size_t)s->shape[1];
    f->S = (size_t)s->shape[2];
    f->T1 = (size_t)t->shape[2];
    f->src = parity_read_tensor(f->fx, "src", CF_ST_I32, NULL);
    f->tgt = parity_read_tensor(f->fx, "tgt", CF_ST_I32, NULL);
    f->losses = parity_read_tensor(f->fx, "losses", CF_ST_F64, NULL);
    f->grad_norms = parity_read_tensor(f->fx, "grad_norms", CF_ST_F64, NULL);
    load_model(f);
    assert_ok(clformer_session_create(f->model, &f->session));
}

static void close_fixture(fixture *f)
{
    clformer_session_free(f->session);
    clformer_model_free(f->model);
    cf_st_close(f->fx);
    free(f->src), free(f->tgt), free(f->losses), free(f->grad_norms);
}

static clformer_batch batch_of(const fixture *f, size_t step)
{
    return (clformer_batch){f->B, f->S, f->T1, f->src + step * f->B * f->S,
                            f->tgt + step * f->B * f->T1};
}

/* Weights after training whose first gradient (PyTorch's, float64) is not zero
 * but below 1e-6 of the tensor's largest: Adam's first update moves a weight
 * by lr * sign(g) whatever |g| is, and at that size the sign of a float32
 * gradient is rounding noise, so the weight lands lr away on either side
 * (a_prenorm_relu_sin's decoder.layers.0.self_attn.out_proj.weight[733]:
 * g = 1.6e-8 against 0.067; after 10 steps PoCL is 3.4e-5 off, Intel's CPU
 * runtime 5.0e-5, the bound 4.2e-5). They are taken from the reference; at
 * most 2 per tensor, so the rule cannot hide a real error (the K biases,
 * skipped whole by the caller, are not counted). */
static void skip_noise_signs(fixture *f, const char *fixture_name, float *got, const double *ref,
                             size_t n, size_t skip_from, size_t skip_to)
{
    char grad_name[512];
    snprintf(grad_name, sizeof grad_name, "grad.%s", fixture_name + strlen("final."));
    if (!cf_st_find(f->fx, grad_name)) return;
    size_t gn;
    float *g = parity_read_tensor(f->fx, grad_name, CF_ST_F32, &gn);
    assert_int_equal(gn, n);
    float top = 0.0f;
    for (size_t i = 0; i < n; i++) top = fmaxf(top, fabsf(g[i]));
    size_t skipped = 0;
    for (size_t i = 0; i < n; i++)
        if ((i < skip_from || i >= skip_to) && g[i] != 0.0f && fabsf(g[i]) <= 1e-6f * top) {
            got[i] = (float)ref[i];
            skipped++;
        }
    if (skipped > 2) fail_msg("%s: %zu weights with a noise-sized first gradient", fixture_name, skipped);
    free(g);
}

/* Compares a tensor of the model (value or gradient) with a float32 fixture tensor. */
static void compare_tensor(fixture *f, const char *name, const char *fixture_name, bool gradient,
                           size_t skip_from, size_t skip_to)
{
    size_t n;
    float *want = parity_read_tensor(f->fx, fixture_name, CF_ST_F32, &n);
    float *got = hmalloc(n * 4);
    assert_ok(clformer_model_read_tensor(f->model, name, gradient, got, n));
    double *ref = to_double(want, n);
    for (size_t i = skip_from; i < skip_to && i < n; i++) got[i] = (float)ref[i];
    if (!gradient) skip_noise_signs(f, fixture_name, got, ref, n, skip_from, skip_to);
    ref_cmp r = ref_compare_grad(got, ref, n);
    if (!r.pass) print_error("tensor %s of %s\n", fixture_name, f->dir);
    harness_assert_cmp(r, fixture_name, __FILE__, __LINE__);
    free(want), free(got), free(ref);
}

static void logits_and_gradients(const char *name)
{
    fixture f;
    open_fixture(&f, name);
    const clformer_config *c = clformer_model_config(f.model);
    clformer_batch b = batch_of(&f, 0);
    size_t n;
    float *want = parity_read_tensor(f.fx, "logits", CF_ST_F32, &n);
    assert_int_equal(n, f.B * (f.T1 - 1) * (size_t)c->tgt_vocab);
    float *got = hmalloc(n * 4);
    assert_ok(clformer_session_logits(f.session, &b, got));
    double *ref = to_double(want, n);
    assert_grad_close(got, ref, n);

    double loss;
    assert_ok(clformer_session_gradients(f.session, &b, &loss));
    assert_true(fabs(loss - f.losses[0]) <= 1e-4);
    for (size_t i = 0; i < cf_st_count(f.fx); i++) {
        const char *tn = cf_st_tensor_at(f.fx, i)->name;
        if (strncmp(tn, "grad.", 5)) continue;
        compare_tensor(&f, tn + 5, tn, true, 0, 0);
    }
    free(want), free(got), free(ref);
    close_fixture(&f);
}

static void ten_steps(const char *name)
{
    fixture f;
    open_fixture(&f, name);
    for (size_t k = 0; k < f.steps; k++) {
        clformer_batch b = batch_of(&f, k);
        clformer_step_stats s;
        assert_ok(clformer_session_train_step(f.session, &b, f.lr, &s));
        if (fabs(s.loss - f.losses[k]) > 1e-4 ||
            fabs(s.grad_norm - f.grad_norms[k]) > 1e-4 * (1.0 + f.grad_norms[k]))
            fail_msg("%s step %zu: loss %.8f (PyTorch %.8f), grad norm %.8f (PyTorch %.8f)",
                     name, k + 1, s.loss, f.losses[k], s.grad_norm, f.grad_norms[k]);
    }
    /* the weights after 10 updates; K biases (rows d..2d-1 of in_proj_bias) have a
     * zero true gradient, so Adam amplifies rounding there: skipped (README) */
    const size_t d = (size_t)clformer_model_config(f.model)->d_model;
    for (size_t i = 0; i < cf_st_count(f.fx); i++) {
        const char *tn = cf_st_tensor_at(f.fx, i)->name;
        if (strncmp(tn, "final.", 6)) continue;
        bool kbias = strstr(tn, "in_proj_bias") != NULL;
        compare_tensor(&f, tn + 6, tn, false, kbias ? d : 0, kbias ? 2 * d : 0);
    }
    /* greedy decoding with the trained weights */
    size_t n, gn;
    int32_t *gsrc = parity_read_tensor(f.fx, "greedy_src", CF_ST_I32, &n);
    int32_t *gout = parity_read_tensor(f.fx, "greedy_out", CF_ST_I32, &gn);
    double *margin = parity_read_tensor(f.fx, "greedy_margin", CF_ST_F64, NULL);
    const cf_st_tensor *gs = cf_st_find(f.fx, "greedy_src"), *go = cf_st_find(f.fx, "greedy_out");
    size_t rows = (size_t)gs->shape[0], S = (size_t)gs->shape[1], L = (size_t)go->shape[1];
    clformer_decode_options o;
    clformer_decode_options_default(&o);
    clformer_translation tr;
    assert_ok(clformer_session_translate(f.session, gsrc, rows, S, &o, &tr));
    size_t compared = 0;
    for (size_t r = 0; r < rows; r++) {
        /* PyTorch's ids up to <eos>; stop at the first step too close to call */
        for (size_t j = 0; j < L && gout[r * L + j] >= 0; j++) {
            if (margin[r * L + j] < 1e-4) break;
            int32_t want_id = gout[r * L + j];
            if (want_id == CLFORMER_EOS) {
                assert_int_equal(tr.lengths[r], j);
                compared++;
                break;
            }
            if (j >= tr.lengths[r] || tr.tokens[r * tr.max_len + j] != want_id)
                fail_msg("%s greedy row %zu position %zu: clformer %d, PyTorch %d", name, r, j,
                         j < tr.lengths[r] ? tr.tokens[r * tr.max_len + j] : CLFORMER_EOS,
                         want_id);
            compared++;
        }
    }
    assert_true(compared > 0);
    clformer_translation_free(&tr);
    free(gsrc), free(gout), free(margin);
    close_fixture(&f);
}

static const char *const ALL[] = {"a_prenorm_relu_sin", "b_postnorm_gelu_learned",
                                  "c_prenorm_gelu_tied", "d_postnorm_relu_learned",
                                  "e_tiny_oclgrind", "f_prenorm_relu_shared_all"};

static void each(void (*fn)(const char *))
{
    if (harness_is_slow()) {
        fn("e_tiny_oclgrind");
        return;
    }
    for (size_t i = 0; i < sizeof ALL / sizeof *ALL; i++) fn(ALL[i]);
}

static void parity_logits_and_step1_gradients(void **state)
{
    (void)state;
    each(logits_and_gradients);
}

static void parity_ten_training_steps_and_greedy(void **state)
{
    (void)state;
    each(ten_steps);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(parity_logits_and_step1_gradients),
    cmocka_unit_test(parity_ten_training_steps_and_greedy),
};
HARNESS_DEVICE_MAIN("model parity with PyTorch", tests)
