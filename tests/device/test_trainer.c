/* The library's trainer (clformer_trainer_*) through clformer.h: the progress
 * callback sees every step and validation, a stop request saves and returns
 * CLFORMER_ERR_INTERRUPTED, and resuming that checkpoint gives the losses of
 * the uninterrupted run bit for bit (the interrupted run recomputing its
 * layers in backward, the others not). Stepping by hand (clformer_trainer_step
 * and _finish) is the run step for step, and a stop requested between steps
 * saves at finish. The trainer's session holds the run's activations and
 * decoding caches, and goes when the model is released. */
#include "harness.h"

#include "clformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fewer steps and shorter sentences on a simulator, where every kernel
 * launch is slow (decoding for BLEU above all). */
#define MAX_STEPS 6
static uint64_t n_steps, stop_step;

static char dir[512];
/* the demo task each case trains on, made afresh for it by setup */
static clformer_parallel_text *train, *val;

static int setup(void **state)
{
    (void)state;
    n_steps = harness_is_slow() ? 4 : MAX_STEPS;
    stop_step = n_steps / 2;
    assert_ok(clformer_demo_task(5, 120, 8, &train, &val));
    return harness_temp_dir(dir, sizeof dir, "trainer") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    clformer_parallel_text_free(train);
    clformer_parallel_text_free(val);
    harness_remove_tree(dir);
    return 0;
}

typedef struct {
    clformer_trainer *trainer;  /* set after create, for the stop request */
    uint64_t stop_at;           /* 0: never */
    double loss[MAX_STEPS + 1]; /* by step */
    uint64_t steps_seen, validations, last_step;
    bool last_seen;
} watch;

static bool on_progress(const clformer_train_progress *p, void *user)
{
    watch *w = user;
    if (p->event == CLFORMER_TRAIN_VALIDATION) {
        w->validations++;
        assert_true(isfinite(p->val_loss) && p->val_loss > 0);
        assert_true(fabs(p->val_ppl - exp(p->val_loss)) < 1e-9 * p->val_ppl);
        return true;
    }
    assert_int_equal(p->step, w->last_step + 1); /* every step, in order */
    assert_true(p->step <= n_steps);
    w->last_step = p->step;
    w->steps_seen++;
    w->loss[p->step] = p->loss;
    w->last_seen = p->last;
    assert_true(p->tokens > 0 && p->lr > 0 && p->epoch >= 1 && p->grad_norm > 0);
    if (w->stop_at && p->step == w->stop_at) clformer_trainer_request_stop(w->trainer);
    return true;
}

static void options(clformer_train_options *o, const clformer_parallel_text *train_text,
                    const clformer_parallel_text *val_text, watch *w)
{
    clformer_train_options_default(o);
    o->train_text = train_text;
    o->val_text = val_text;
    o->batching.batch_size = 8;
    o->batching.batch_tokens = 0;
    o->config.d_model = 8, o->config.n_heads = 2, o->config.d_ff = 16;
    o->config.n_enc_layers = o->config.n_dec_layers = 1;
    o->config.max_len = harness_is_slow() ? 8 : 16; /* longer pairs are skipped */
    o->config.dropout = 0.1f; /* dropout's RNG must resume too */
    o->lr = 3e-3f;
    o->steps = n_steps;
    o->eval_every = stop_step;
    o->bleu_sentences = harness_is_slow() ? 1 : 4;
    o->callback = on_progress;
    o->user = w;
}

/* After a run with validation: the trainer's session on its model holds the
 * activations and validation's decoding caches, the model none of them;
 * releasing the model frees the session (a session must not outlive it). */
static void check_session_and_release(clformer_trainer *t)
{
    clformer_session *s = clformer_trainer_session(t);
    assert_non_null(s);
    assert_ptr_equal(clformer_session_model(s), clformer_trainer_model(t));
    const clformer_memory sm = clformer_session_memory(s);
    const clformer_memory mm = clformer_model_memory(clformer_trainer_model(t));
    assert_true(sm.activations > 0 && sm.decoding > 0);
    assert_int_equal(mm.activations + mm.decoding, 0);
    const size_t before = hctx()->bytes_allocated;
    clformer_model *m = clformer_trainer_release_model(t);
    assert_null(clformer_trainer_session(t));
    assert_int_equal(hctx()->bytes_allocated, before - sm.total);
    clformer_model_free(m);
}

static clformer_status run(const clformer_train_options *o, watch *w, clformer_train_result *r)
{
    clformer_trainer *t;
    clformer_status st = clformer_trainer_create(hctx(), o, &t);
    if (st != CLFORMER_OK) return st;
    w->trainer = t;
    st = clformer_trainer_run(t, r);
    if (st == CLFORMER_OK) check_session_and_release(t);
    clformer_trainer_free(t);
    return st;
}

static void stops_and_resumes_exactly(void **state)
{
    (void)state;
    char half[600], log[600];
    harness_path(half, sizeof half, dir, "half.safetensors");
    harness_path(log, sizeof log, dir, "log.jsonl");

    watch straight = {0};
    clformer_train_options o;
    options(&o, train, val, &straight);
    o.log_path = log;
    clformer_train_result r;
    assert_ok(run(&o, &straight, &r));
    assert_int_equal(r.steps, n_steps);
    assert_int_equal(straight.steps_seen, n_steps);
    assert_true(straight.last_seen);
    assert_int_equal(straight.validations, 2); /* at stop_step and at the end */
    assert_false(r.stopped);
    assert_true(isfinite(r.val_loss) && isfinite(r.val_bleu));
    char text[1 << 14];
    harness_slurp(log, text, sizeof text);
    assert_non_null(strstr(text, "\"val_bleu\""));

    watch stopped = {.stop_at = stop_step};
    options(&o, train, val, &stopped);
    o.stop_save_path = half;
    /* with recomputation the same losses, and its checkpoint resumes
     * without it exactly (recomputation is no part of a checkpoint) */
    o.recompute = true;
    assert_int_equal(run(&o, &stopped, &r), CLFORMER_ERR_INTERRUPTED);
    assert_true(r.stopped);
    assert_int_equal(r.steps, stop_step);
    assert_non_null(r.saved_to);
    assert_string_equal(r.saved_to, half);

    watch resumed = {.last_step = stop_step};
    options(&o, train, val, &resumed);
    o.resume_path = half;
    assert_ok(run(&o, &resumed, &r));
    assert_int_equal(resumed.steps_seen, n_steps - stop_step);
    for (uint64_t s = 1; s <= n_steps; s++) {
        const double got = s <= stop_step ? stopped.loss[s] : resumed.loss[s];
        if (got != straight.loss[s])
            fail_msg("step %d: straight loss %.9g, stopped and resumed %.9g", (int)s,
                     straight.loss[s], got);
    }

    /* resuming to a step already reached is refused with a clear message */
    o.steps = stop_step;
    assert_int_equal(run(&o, &resumed, &r), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "already at step"));
}

/* clformer_trainer_step and _finish give what clformer_trainer_run gives:
 * the same losses bit for bit, the validation after step eval_every and the
 * final one; stepping after the end is refused. A stop requested between
 * steps ends the run at finish, saved, with CLFORMER_ERR_INTERRUPTED. */
static void stepping_by_hand_is_the_run(void **state)
{
    (void)state;
    watch straight = {0};
    clformer_train_options o;
    options(&o, train, val, &straight);
    clformer_train_result r;
    assert_ok(run(&o, &straight, &r));

    watch by_hand = {0};
    options(&o, train, val, &by_hand);
    clformer_trainer *t;
    assert_ok(clformer_trainer_create(hctx(), &o, &t));
    by_hand.trainer = t;
    clformer_train_progress step, validation;
    bool validated;
    while (!clformer_trainer_done(t)) {
        assert_ok(clformer_trainer_step(t, &step, &validation, &validated));
        assert_int_equal(step.event, CLFORMER_TRAIN_STEP);
        if (step.loss != straight.loss[step.step])
            fail_msg("step %d: run's loss %.9g, by hand %.9g", (int)step.step,
                     straight.loss[step.step], step.loss);
        assert_int_equal(validated, step.step == stop_step);
        if (validated) {
            assert_int_equal(validation.event, CLFORMER_TRAIN_VALIDATION);
            assert_true(isfinite(validation.val_loss));
        }
    }
    assert_int_equal(step.step, n_steps);
    assert_true(step.last);
    clformer_train_result r2;
    assert_ok(clformer_trainer_finish(t, &r2, &validation, &validated));
    assert_true(validated); /* the final validation */
    assert_true(validation.val_loss == r.val_loss && r2.val_loss == r.val_loss);
    assert_int_equal(r2.steps, n_steps);
    assert_int_equal(by_hand.validations, 2); /* the callback saw both */
    assert_int_equal(clformer_trainer_step(t, NULL, NULL, NULL), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(clformer_trainer_finish(t, NULL, NULL, NULL), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "has finished"));
    clformer_trainer_free(t);

    /* a stop requested after step 1, between steps, as Ctrl-C in Python */
    char stop[600];
    harness_path(stop, sizeof stop, dir, "stop.safetensors");
    watch stopped = {0};
    options(&o, train, val, &stopped);
    o.stop_save_path = stop;
    assert_ok(clformer_trainer_create(hctx(), &o, &t));
    assert_ok(clformer_trainer_step(t, &step, NULL, NULL));
    clformer_trainer_request_stop(t);
    assert_int_equal(clformer_trainer_finish(t, &r2, &validation, &validated),
                     CLFORMER_ERR_INTERRUPTED);
    assert_false(validated);
    assert_true(r2.stopped);
    assert_int_equal(r2.steps, 1);
    assert_non_null(r2.saved_to);
    assert_string_equal(r2.saved_to, stop);
    clformer_trainer_free(t);
    clformer_model *m;
    assert_ok(clformer_model_load(hctx(), stop, &m));
    assert_int_equal(clformer_model_step(m), 1);
    clformer_model_free(m);
}

static void bad_options_are_refused(void **state)
{
    (void)state;
    watch w = {0};
    clformer_train_options o;
    options(&o, train, val, &w);
    o.epochs = 1; /* and steps: two limits */
    clformer_trainer *t = NULL;
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_null(t);
    assert_non_null(strstr(clformer_last_error(), "exactly one limit"));
    options(&o, train, val, &w);
    o.config.n_heads = 3; /* does not divide d_model */
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "n_heads"));
    options(&o, train, val, &w);
    o.resume_path = "nosuch.safetensors";
    assert_int_not_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_OK);
    assert_non_null(strstr(clformer_last_error(), "nosuch.safetensors"));
    /* a language model's run is held to the same rules (its task checked only
     * its text before); refused before the text is read */
    assert_ok(clformer_train_options_for_task(&o, true, "gpt-mini"));
    o.text_path = "nosuch.txt";
    o.steps = 2;
    o.init_path = "a.safetensors";
    o.resume_path = "b.safetensors";
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "exclude each other"));
    o.init_path = o.resume_path = NULL;
    o.keep_last = 2; /* without a save path */
    assert_int_equal(clformer_trainer_create(hctx(), &o, &t), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "needs a save path"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(bad_options_are_refused, setup, teardown),
    cmocka_unit_test_setup_teardown(stops_and_resumes_exactly, setup, teardown),
    cmocka_unit_test_setup_teardown(stepping_by_hand_is_the_run, setup, teardown),
};
HARNESS_DEVICE_MAIN("clformer_trainer", tests)
