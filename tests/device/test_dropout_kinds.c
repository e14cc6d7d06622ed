/*
 * Separate dropout rates (clformer_config.attention_dropout and
 * activation_dropout, fairseq's options): below 0 they take `dropout`, the
 * single rate of PyTorch's nn.Transformer, and giving all three the same
 * value reproduces that run bit for bit; each rate reaches its own places
 * only (a rate of 0 where the others are 0 changes nothing); and the config
 * keeps them in checkpoints only when set.
 */
#include "harness.h"

#include "clformer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The losses of three training steps from the same start (seed 7); two on a
 * simulator (the second step's loss still reads the first step's backward
 * through the dropout masks), the third left 0. */
static void losses(float dropout, float attention, float activation, double out[3])
{
    const uint64_t steps = harness_is_slow() ? 2 : 3;
    out[2] = 0.0;
    clformer_config c = harness_small_config();
    c.dropout = dropout;
    c.attention_dropout = attention;
    c.activation_dropout = activation;
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 7, &m));
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    for (uint64_t k = 0; k < steps; k++) {
        int32_t *src = harness_random_sentences(4, 8, c.src_vocab, 100 + k);
        int32_t *tgt = harness_random_sentences(4, 9, c.tgt_vocab, 200 + k);
        const clformer_batch b = {4, 8, 9, src, tgt};
        clformer_step_stats st;
        assert_ok(clformer_session_train_step(s, &b, 1e-2f, &st));
        out[k] = st.loss;
        free(src);
        free(tgt);
    }
    clformer_session_free(s);
    clformer_model_free(m);
}

static bool same(const double a[3], const double b[3])
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

static void rates_reach_their_own_places(void **state)
{
    (void)state;
    double one[3], all_three[3], none[3], attention[3], activation[3], residual[3];
    losses(0.3f, -1.0f, -1.0f, one);
    losses(0.0f, -1.0f, -1.0f, none);
    /* how unset rates resolve is host code, the same on every device; the
     * simulator (minutes a run) launches no other kernel in these two runs */
    if (!harness_is_slow()) {
        losses(0.3f, 0.3f, 0.3f, all_three);
        if (!same(one, all_three))
            fail_msg("dropout 0.3 alone: %.9g, with both others 0.3 given: %.9g", one[2],
                     all_three[2]);
        double zeros[3];
        losses(0.0f, 0.0f, 0.0f, zeros);
        assert_true(same(none, zeros));
    }
    /* only the attention probabilities, only the activation, only the rest:
     * each changes the run, and each differently */
    losses(0.0f, 0.5f, 0.0f, attention);
    losses(0.0f, 0.0f, 0.5f, activation);
    losses(0.3f, 0.0f, 0.0f, residual);
    assert_false(same(attention, none));
    assert_false(same(activation, none));
    assert_false(same(residual, none));
    assert_false(same(attention, activation));
    assert_false(same(residual, one)); /* one = residual + attention + activation at 0.3 */
    for (int k = 0; k < 3; k++) assert_true(isfinite(attention[k]) && isfinite(activation[k]));
}

static void config_keeps_them_only_when_set(void **state)
{
    (void)state;
    clformer_config c = harness_small_config(), back;
    char *json = clformer_config_to_json(&c);
    assert_non_null(json);
    assert_null(strstr(json, "attention_dropout")); /* unset: loads in earlier versions */
    assert_ok(clformer_config_from_json(json, &back));
    assert_true(back.attention_dropout < 0 && back.activation_dropout < 0);
    free(json);
    c.attention_dropout = 0.1f;
    c.activation_dropout = 0.0f;
    json = clformer_config_to_json(&c);
    assert_non_null(strstr(json, "\"attention_dropout\":0.100000001"));
    assert_non_null(strstr(json, "\"activation_dropout\":0"));
    assert_ok(clformer_config_from_json(json, &back));
    assert_true(back.attention_dropout == 0.1f && back.activation_dropout == 0.0f);
    free(json);
    c.activation_dropout = 1.0f;
    assert_int_equal(clformer_config_validate(&c), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "activation_dropout"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(config_keeps_them_only_when_set),
    cmocka_unit_test(rates_reach_their_own_places),
};
HARNESS_DEVICE_MAIN("dropout_kinds", tests)
