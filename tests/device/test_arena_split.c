/*
 * The activation arena across several buffers (arena.h): a session whose
 * buffers may hold only an eighth of its arena gives the same bits as one
 * with a single buffer (logits, loss, every gradient, and training steps),
 * on both attention paths; and a batch that does not fit in the device's
 * memory is refused with the largest batch of its lengths that does.
 */
#include "harness.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clformer_config config(void)
{
    clformer_config c = harness_small_config();
    c.dropout = 0.1f; /* the dropout sites' saved tensors take part too */
    return c;
}

typedef struct {
    clformer_model *model;
    clformer_session *session;
} run;

static run make_run(size_t limit)
{
    const clformer_config c = config();
    run r;
    assert_ok(clformer_model_create(hctx(), &c, 7, &r.model));
    assert_ok(clformer_session_create(r.model, &r.session));
    r.session->arena_limit = limit;
    return r;
}

static void free_run(run *r)
{
    clformer_session_free(r->session);
    clformer_model_free(r->model);
}

static float *gradients(run *r)
{
    cf_model *m = r->session->model;
    float *g = hmalloc(m->layout.total * sizeof *g);
    assert_ok(cf_download(hctx(), m->grads, 0, g, m->layout.total));
    return g;
}

/* The logits and two training steps of both runs agree bit for bit. */
static void logits_and_steps(run *one, run *split, const clformer_batch *batch)
{
    const size_t n = batch->batch * (batch->tgt_len - 1) * (size_t)config().tgt_vocab;
    float *l_one = hmalloc(n * sizeof *l_one);
    float *l_split = hmalloc(n * sizeof *l_split);
    assert_ok(clformer_session_logits(one->session, batch, l_one));
    assert_ok(clformer_session_logits(split->session, batch, l_split));
    assert_memory_equal(l_one, l_split, n * sizeof *l_one);

    for (int step = 0; step < 2; step++) {
        clformer_step_stats a, b;
        assert_ok(clformer_session_train_step(one->session, batch, 1e-2f, &a));
        assert_ok(clformer_session_train_step(split->session, batch, 1e-2f, &b));
        assert_memory_equal(&a.loss, &b.loss, sizeof a.loss);
        assert_memory_equal(&a.grad_norm, &b.grad_norm, sizeof a.grad_norm);
    }
    uint64_t sum_one, sum_split;
    assert_ok(clformer_model_parameter_checksum(one->model, &sum_one));
    assert_ok(clformer_model_parameter_checksum(split->model, &sum_split));
    assert_true(sum_one == sum_split);

    free(l_one);
    free(l_split);
}

static void same_bits_on(clformer_attention_path path)
{
    cf_ctx *ctx = hctx();
    const clformer_attention_path saved = ctx->attention_path;
    ctx->attention_path = path;
    const clformer_config c = config();
    const size_t B = 5, S = harness_is_slow() ? 5 : 9, L = harness_is_slow() ? 6 : 11;
    int32_t *src = harness_random_sentences(B, S, c.src_vocab, 11), *tgt = harness_random_sentences(B, L, c.tgt_vocab, 12);
    const clformer_batch batch = {B, S, L, src, tgt};

    run one = make_run(0);
    double loss_one;
    assert_ok(clformer_session_gradients(one.session, &batch, &loss_one));
    assert_int_equal(one.session->acts.buffers, 1);
    /* an eighth of the arena per buffer: several buffers, and tensors larger
     * than that limit alone in theirs */
    run split = make_run(one.session->acts.total / 8);
    double loss_split;
    assert_ok(clformer_session_gradients(split.session, &batch, &loss_split));
    assert_true(split.session->acts.buffers >= 3);
    assert_memory_equal(&loss_one, &loss_split, sizeof loss_one);
    float *g_one = gradients(&one), *g_split = gradients(&split);
    assert_memory_equal(g_one, g_split, one.model->layout.total * sizeof *g_one);

    free(g_one);
    free(g_split);
    /* the simulator checks the buffers' bounds in the passes above; the rest
     * would take it minutes */
    if (!harness_is_slow()) logits_and_steps(&one, &split, &batch);

    free_run(&one);
    free_run(&split);
    free(src);
    free(tgt);
    ctx->attention_path = saved;
}

static void split_unfused_same_bits(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_UNFUSED);
}

static void split_fused_same_bits(void **state)
{
    (void)state;
    same_bits_on(CLFORMER_ATTENTION_FUSED);
}

/* With the device's memory pretended to hold only the arena of 3 sentences,
 * a batch of 6 is refused naming 3, and a batch of 3 then runs. */
static void too_large_names_the_batch_that_fits(void **state)
{
    (void)state;
    cf_ctx *ctx = hctx();
    const clformer_config c = config();
    const size_t S = harness_is_slow() ? 5 : 9, L = harness_is_slow() ? 6 : 11;
    int32_t *src = harness_random_sentences(6, S, c.src_vocab, 21), *tgt = harness_random_sentences(6, L, c.tgt_vocab, 22);
    const clformer_batch six = {6, S, L, src, tgt}, three = {3, S, L, src, tgt};

    run r = make_run(0);
    double loss;
    assert_ok(clformer_session_gradients(r.session, &three, &loss));
    const uint64_t arena3 = clformer_session_memory(r.session).activations;
    clformer_session_free(r.session);
    assert_ok(clformer_session_create(r.model, &r.session));

    const uint64_t saved = ctx->info.global_mem_bytes;
    ctx->info.global_mem_bytes = ctx->bytes_allocated + arena3;
    clformer_status st = clformer_session_gradients(r.session, &six, &loss);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", clformer_last_error());
    clformer_status st3 = clformer_session_gradients(r.session, &three, &loss);
    ctx->info.global_mem_bytes = saved;
    assert_int_equal(st, CLFORMER_ERR_OUT_OF_MEMORY);
    if (!strstr(msg, "a batch of 6 sentences") || !strstr(msg, "a batch of 3 such sentences"))
        fail_msg("unexpected message: %s", msg);
    assert_ok(st3);

    free_run(&r);
    free(src);
    free(tgt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_unfused_same_bits),
        cmocka_unit_test(split_fused_same_bits),
        cmocka_unit_test(too_large_names_the_batch_that_fits),
    };
    return harness_run_device_suite("arena_split", tests, sizeof tests / sizeof *tests);
}
