/* The options `clformer train` and the Python package's trainer start from
 * (clformer_train_options_for_task): a translation preset's shape over the
 * defaults, a language model's nanoGPT training, and an unknown preset
 * refused naming the task's presets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "clformer.h"

static void translation(void **state)
{
    (void)state;
    clformer_train_options o, d;
    clformer_train_options_default(&d);
    assert_int_equal(clformer_train_options_for_task(&o, false, NULL), CLFORMER_OK);
    assert_int_equal(o.config.d_model, 256); /* "small" */
    assert_int_equal(o.batching.batch_tokens, d.batching.batch_tokens);
    assert_true(o.lr == d.lr && o.schedule == d.schedule && o.bleu_sentences == d.bleu_sentences);
    assert_int_equal(clformer_train_options_for_task(&o, false, "tiny"), CLFORMER_OK);
    assert_int_equal(o.config.d_model, 64);
    assert_int_equal(clformer_train_options_for_task(&o, false, "gpt2"),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "small"));
}

static void language_model(void **state)
{
    (void)state;
    clformer_train_options o;
    assert_int_equal(clformer_train_options_for_task(&o, true, NULL), CLFORMER_OK);
    assert_int_equal(o.config.d_model, 128); /* "gpt-mini" */
    assert_int_equal(o.config.n_enc_layers, 0);
    assert_int_equal(o.batching.batch_size, 12);
    assert_int_equal(o.batching.batch_tokens, 0);
    assert_true(o.lr == 1e-3f && o.schedule == CLFORMER_LR_COSINE && o.warmup == 100);
    assert_true(o.optim.optimizer == CLFORMER_ADAMW && o.optim.beta2 == 0.99f &&
                o.optim.eps == 1e-8f && o.optim.weight_decay == 0.1f);
    assert_true(o.val_fraction == 0.1f && o.bleu_sentences == 0);
    assert_int_equal(clformer_train_options_for_task(&o, true, "gpt2"), CLFORMER_OK);
    assert_true(o.optim.beta2 == 0.95f);
    assert_int_equal(clformer_train_options_for_task(&o, true, "small"),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "gpt-mini"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(translation),
        cmocka_unit_test(language_model),
    };
    return cmocka_run_group_tests_name("train_options", tests, NULL, NULL);
}
