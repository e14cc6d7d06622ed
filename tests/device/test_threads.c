/* docs/API.md's threading rule, run: different contexts may be used from
 * different threads at the same time. Two threads each open their own
 * context on the device under test, create the same model (same seed) and
 * train it one step on the same batch; both must succeed and end with
 * bit-identical parameters, as one thread alone would. */
#include "harness.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *selector;
    clformer_status st;
    char error[512];
    uint64_t checksum;
} worker;

static clformer_status run(worker *w)
{
    clformer_context *ctx = NULL;
    CF_TRY(clformer_context_create(w->selector, &ctx));
    clformer_config c = harness_small_config();
    c.dropout = 0.0f;
    clformer_model *model = NULL;
    clformer_session *session = NULL;
    clformer_status st = clformer_model_create(ctx, &c, 7, &model);
    if (st == CLFORMER_OK) st = clformer_session_create(model, &session);
    /* two sentences: <sos> a b <eos> and <sos> c <eos> <pad> */
    int32_t src[] = {1, 5, 6, 2, 1, 7, 2, 0}, tgt[] = {1, 8, 9, 10, 2, 1, 11, 2, 0, 0};
    const clformer_batch batch = {.batch = 2, .src_len = 4, .tgt_len = 5, .src = src, .tgt = tgt};
    if (st == CLFORMER_OK) st = clformer_session_train_step(session, &batch, 1e-3f, NULL);
    if (st == CLFORMER_OK) st = clformer_model_parameter_checksum(model, &w->checksum);
    clformer_session_free(session);
    clformer_model_free(model);
    clformer_context_free(ctx);
    return st;
}

static void *thread_main(void *arg)
{
    worker *w = arg;
    w->st = run(w);
    if (w->st != CLFORMER_OK) /* the message is this thread's */
        snprintf(w->error, sizeof w->error, "%s", clformer_last_error());
    return NULL;
}

static void two_contexts_in_two_threads(void **state)
{
    (void)state;
    worker w[2];
    pthread_t ids[2];
    for (int i = 0; i < 2; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].selector = hctx()->info.selector;
        assert_int_equal(pthread_create(&ids[i], NULL, thread_main, &w[i]), 0);
    }
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(ids[i], NULL), 0);
    for (int i = 0; i < 2; i++)
        if (w[i].st != CLFORMER_OK)
            harness_fail_at(__FILE__, __LINE__, "thread %d: %s", i, w[i].error);
    assert_true(w[0].checksum == w[1].checksum);
    /* and the same as this thread alone */
    worker alone = {.selector = hctx()->info.selector};
    thread_main(&alone);
    if (alone.st != CLFORMER_OK) harness_fail_at(__FILE__, __LINE__, "alone: %s", alone.error);
    assert_true(alone.checksum == w[0].checksum);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_contexts_in_two_threads),
    };
    return harness_run_device_suite("threads", tests, sizeof tests / sizeof tests[0]);
}
