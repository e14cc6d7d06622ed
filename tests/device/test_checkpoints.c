/* Checkpoints a run keeps and what is made of them: keep_last's numbered
 * weights (only the newest N stay), save_best's best checkpoint (the step of
 * the best validation), patience's early stop, and clformer_checkpoint_average
 * (the element-wise mean, no training state; different models refused). */
#include "harness.h"
#include "clformer_util.h"

#include "clformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[512];
/* the demo task each case trains on, made afresh for it by setup */
static clformer_parallel_text *train, *val;

static int setup(void **state)
{
    (void)state;
    assert_ok(clformer_demo_task(5, 120, 8, &train, &val));
    return harness_temp_dir(dir, sizeof dir, "checkpoints") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    clformer_parallel_text_free(train);
    clformer_parallel_text_free(val);
    harness_remove_tree(dir);
    return 0;
}

static void options(clformer_train_options *o, const clformer_parallel_text *train_text,
                    const clformer_parallel_text *val_text, const char *save)
{
    clformer_train_options_default(o);
    o->train_text = train_text;
    o->val_text = val_text;
    o->batching.batch_size = 8;
    o->batching.batch_tokens = 0;
    o->config.d_model = 8, o->config.n_heads = 2, o->config.d_ff = 16;
    o->config.n_enc_layers = o->config.n_dec_layers = 1;
    o->config.max_len = 16;
    o->config.dropout = 0.0f;
    o->lr = 3e-3f;
    o->steps = 6;
    o->bleu_sentences = 0;
    o->save_path = save;
    o->overwrite = true; /* the cases run again on their paths */
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static void run(const clformer_train_options *o, clformer_train_result *r)
{
    clformer_trainer *t;
    assert_ok(clformer_trainer_create(hctx(), o, &t));
    assert_ok(clformer_trainer_run(t, r));
    clformer_trainer_free(t);
}

/* Every tensor of `avg` is the mean of the checkpoints' (computed in
 * double, rounded once), and the result loads as a plain model. */
static void check_mean(const char *avg, const char *const *paths, size_t n)
{
    clformer_model *a;
    assert_ok(clformer_model_load(hctx(), avg, &a));
    assert_false(clformer_model_has_training_state(a));
    clformer_model_free(a);
    clformer_tensor *got, *in[3];
    size_t n_got, n_in[3];
    assert_ok(clformer_tensors_load(avg, &got, &n_got));
    for (size_t k = 0; k < n; k++) assert_ok(clformer_tensors_load(paths[k], &in[k], &n_in[k]));
    assert_true(n_got > 10);
    size_t moved = 0;
    for (size_t i = 0; i < n_got; i++) {
        size_t count = 1;
        for (int d = 0; d < got[i].ndim; d++) count *= (size_t)got[i].shape[d];
        const float *g = got[i].data;
        for (size_t e = 0; e < count; e++) {
            double sum = 0;
            for (size_t k = 0; k < n; k++) {
                const clformer_tensor *t = clformer_tensors_find(in[k], n_in[k], got[i].name);
                assert_non_null(t);
                sum += ((const float *)t->data)[e];
            }
            if (g[e] != (float)(sum / (double)n))
                fail_msg("%s[%zu]: %.9g, the mean is %.9g", got[i].name, e, g[e], sum / n);
            moved += g[e] != ((const float *)clformer_tensors_find(in[0], n_in[0],
                                                                   got[i].name)->data)[e];
        }
    }
    assert_true(moved > 0); /* the checkpoints differ: the mean is not the first */
    clformer_tensors_free(got, n_got);
    for (size_t k = 0; k < n; k++) clformer_tensors_free(in[k], n_in[k]);
}

static void keeps_the_last_n_and_averages_them(void **state)
{
    (void)state;
    char save[600], p[4][600], avg[600], other[600];
    harness_path(save, sizeof save, dir, "m.safetensors");
    clformer_train_options o;
    options(&o, train, val, save);
    o.save_every = 1;
    o.keep_last = 3;
    clformer_train_result r;
    run(&o, &r);
    for (int s = 1; s <= 6; s++) { /* steps 4, 5 and 6 kept; 1 to 3 removed */
        char name[64];
        snprintf(name, sizeof name, "m.step%d.safetensors", s);
        harness_path(p[s > 3 ? s - 3 : 0], sizeof p[0], dir, name);
        if (exists(p[s > 3 ? s - 3 : 0]) != (s > 3)) fail_msg("%s: %s", name, s > 3 ? "missing" : "not removed");
    }
    assert_true(exists(save));

    const char *const three[] = {p[1], p[2], p[3]};
    harness_path(avg, sizeof avg, dir, "avg.safetensors");
    assert_ok(clformer_checkpoint_average(three, 3, avg));
    check_mean(avg, three, 3);
    /* a training checkpoint averages too (its optimizer state is left out) */
    const char *const mixed[] = {p[3], save};
    assert_ok(clformer_checkpoint_average(mixed, 2, avg));

    /* another model: refused, naming what differs; no output written */
    clformer_model *m, *first;
    assert_ok(clformer_model_load(hctx(), p[3], &first));
    clformer_config c = *clformer_model_config(first);
    c.d_ff = 24;
    assert_ok(clformer_model_create(hctx(), &c, 7, &m));
    assert_ok(clformer_model_set_vocabs(m, clformer_model_src_vocab(first),
                                        clformer_model_tgt_vocab(first)));
    harness_path(other, sizeof other, dir, "other.safetensors");
    assert_ok(clformer_model_save(m, other, false));
    char refused[600];
    harness_path(refused, sizeof refused, dir, "refused.safetensors");
    const char *const two[] = {p[3], other};
    assert_int_equal(clformer_checkpoint_average(two, 2, refused), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "d_ff"));
    assert_false(exists(refused));
    /* another target vocabulary: refused */
    clformer_model_free(m);
    c = *clformer_model_config(first);
    assert_ok(clformer_model_create(hctx(), &c, 7, &m));
    const char *const *tv = clformer_model_tgt_vocab(first);
    const char **swapped = hmalloc((size_t)c.tgt_vocab * sizeof *swapped);
    memcpy(swapped, tv, (size_t)c.tgt_vocab * sizeof *swapped);
    const char *tmp = swapped[4];
    swapped[4] = swapped[5];
    swapped[5] = tmp;
    assert_ok(clformer_model_set_vocabs(m, clformer_model_src_vocab(first), swapped));
    assert_ok(clformer_model_save(m, other, false));
    assert_int_equal(clformer_checkpoint_average(two, 2, refused), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "target vocabular"));
    assert_false(exists(refused));
    /* the same file twice would weigh it double */
    const char *const twice[] = {p[3], p[3]};
    assert_int_equal(clformer_checkpoint_average(twice, 2, refused), CLFORMER_ERR_INVALID_ARGUMENT);
    free(swapped);
    clformer_model_free(m);
    clformer_model_free(first);
}

static void saves_the_best_and_stops_on_patience(void **state)
{
    (void)state;
    char save[600], best[600];
    harness_path(save, sizeof save, dir, "run.safetensors");
    harness_path(best, sizeof best, dir, "run.best.safetensors");
    clformer_train_options o;
    options(&o, train, val, save);
    o.eval_every = 2;
    o.save_best = true;
    clformer_train_result r;
    run(&o, &r);
    assert_true(exists(best));
    assert_true(isfinite(r.best_val) && r.best_step >= 2 && r.best_step <= 6);
    clformer_model *m;
    assert_ok(clformer_model_load(hctx(), best, &m));
    assert_int_equal(clformer_model_step(m), r.best_step);
    assert_true(clformer_model_has_training_state(m));
    clformer_model_free(m);

    /* a learning rate of 0 never improves the validation loss: with patience 2
     * the run stops at the third validation (the first sets the best) */
    options(&o, train, val, save);
    o.lr = 0.0f;
    o.steps = 50;
    o.eval_every = 1;
    o.patience = 2;
    run(&o, &r);
    assert_true(r.early_stopped);
    assert_false(r.stopped);
    assert_int_equal(r.steps, 3);
    assert_int_equal(r.best_step, 1);
    assert_true(exists(save));

    /* by BLEU: the best is saved at the first validation with a BLEU */
    remove(best);
    options(&o, train, val, save);
    o.eval_every = 3;
    o.save_best = true;
    o.best_metric = CLFORMER_METRIC_BLEU;
    o.bleu_sentences = 4;
    run(&o, &r);
    assert_true(exists(best));
    assert_true(r.best_val >= 0 && r.best_val <= 100);
}

/* max_seconds ends a run like its step limit: after the step that crosses
 * it, with the final validation and the save; a limit no step can meet
 * stops after the first step. */
static void stops_at_the_time_limit(void **state)
{
    (void)state;
    char save[600];
    harness_path(save, sizeof save, dir, "timed.safetensors");
    clformer_train_options o;
    options(&o, train, val, save);
    o.steps = 1000;
    o.max_seconds = 1e-9;
    clformer_train_result r;
    run(&o, &r);
    assert_true(r.time_limited);
    assert_false(r.stopped);
    assert_false(r.early_stopped);
    assert_int_equal(r.steps, 1);
    assert_true(isfinite(r.val_loss)); /* the final validation ran */
    clformer_model *m;
    assert_ok(clformer_model_load(hctx(), save, &m));
    assert_int_equal(clformer_model_step(m), 1);
    clformer_model_free(m);

    /* a limit far away changes nothing: the step limit ends the run */
    options(&o, train, val, save);
    o.steps = 3;
    o.max_seconds = 3600;
    run(&o, &r);
    assert_false(r.time_limited);
    assert_int_equal(r.steps, 3);
}

static void bad_options_are_refused(void **state)
{
    (void)state;
    clformer_train_options o;
    clformer_trainer *t = NULL;
    options(&o, train, val, "x.safetensors");
    o.keep_last = 2; /* without save_every */
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "periodic saves"));
    options(&o, train, NULL, "x.safetensors");
    o.patience = 2; /* without validation data */
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "validation data"));
    options(&o, train, val, "x.safetensors");
    o.save_best = true;
    o.best_metric = CLFORMER_METRIC_BLEU; /* with bleu_sentences 0 */
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "BLEU"));
    options(&o, train, val, "x.safetensors");
    o.max_seconds = -1;
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "time limit"));
    assert_null(t);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(bad_options_are_refused, setup, teardown),
    cmocka_unit_test_setup_teardown(keeps_the_last_n_and_averages_them, setup, teardown),
    cmocka_unit_test_setup_teardown(saves_the_best_and_stops_on_patience, setup, teardown),
    cmocka_unit_test_setup_teardown(stops_at_the_time_limit, setup, teardown),
};
HARNESS_DEVICE_MAIN("checkpoints", tests)
