/*
 * share_all_embed (fairseq's --share-all-embeddings) on the host: the config
 * rules and JSON form, the parameter layout (one tensor where there were
 * three) and the joint vocabulary of both sides. The numbers of a shared
 * model against PyTorch are test_model_parity's (f_prenorm_relu_shared_all).
 */
#include "data_util.h"

#include "params.h"
#include "status.h"
#include "vocab.h"

#include <stdlib.h>

static clformer_config shared(void)
{
    clformer_config c;
    clformer_config_default(&c);
    assert_ok(clformer_config_preset("tiny", &c));
    c.src_vocab = c.tgt_vocab = 40;
    c.share_tgt_embed = c.share_all_embed = true;
    return c;
}

static void validation_names_what_is_missing(void **state)
{
    (void)state;
    clformer_config c = shared();
    assert_ok(clformer_config_validate(&c));
    c.tgt_vocab = 41;
    assert_int_equal(clformer_config_validate(&c), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "src_vocab 40 and tgt_vocab 41 differ"));
    c = shared();
    c.share_tgt_embed = false;
    assert_int_equal(clformer_config_validate(&c), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "set share_tgt_embed as well"));
    c = shared();
    c.n_enc_layers = 0, c.src_vocab = 0;
    assert_int_equal(clformer_config_validate(&c), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "needs an encoder"));
}

static void json_keeps_it_and_omits_it_when_false(void **state)
{
    (void)state;
    clformer_config c = shared(), back;
    char *json = clformer_config_to_json(&c);
    assert_non_null(strstr(json, "\"share_all_embed\":true"));
    assert_ok(clformer_config_from_json(json, &back));
    assert_true(back.share_all_embed);
    clformer_free(json);
    /* unshared models write what they wrote before (older readers load them) */
    c.share_all_embed = false;
    json = clformer_config_to_json(&c);
    assert_null(strstr(json, "share_all_embed"));
    assert_ok(clformer_config_from_json(json, &back));
    assert_false(back.share_all_embed);
    clformer_free(json);
}

static void layout_has_one_embedding(void **state)
{
    (void)state;
    clformer_config c = shared();
    cf_param_layout with, without;
    assert_ok(cf_param_layout_make(&c, &with));
    c.share_all_embed = false;
    assert_ok(cf_param_layout_make(&c, &without));
    assert_int_equal(with.src_embed, with.tgt_embed);
    assert_int_equal(with.generator_w, with.tgt_embed);
    assert_null(cf_param_find(&with, "src_embed.weight"));
    assert_non_null(cf_param_find(&without, "src_embed.weight"));
    assert_int_equal(without.total - with.total, (size_t)c.src_vocab * (size_t)c.d_model);
    cf_param_layout_free(&with);
    cf_param_layout_free(&without);
}

static void joint_vocabulary_counts_both_sides(void **state)
{
    (void)state;
    static const char *const src[] = {"a b c", "a b", "a"};
    static const char *const tgt[] = {"x y", "x b", "z"};
    cf_vocab *v;
    /* counted together: a 3, b 3, x 2, c 1, y 1, z 1 */
    assert_ok(cf_vocab_build_joint(src, tgt, 3, 1, 0, &v));
    static const char *const want[] = {"<pad>", "<sos>", "<eos>", "<unk>", "a", "b", "x",
                                       "c", "y", "z"};
    assert_int_equal(cf_vocab_size(v), 10);
    for (int i = 0; i < 10; i++) assert_string_equal(cf_vocab_token(v, i), want[i]);
    cf_vocab_free(v);
    /* the same --min-freq and --max-vocab rules */
    assert_ok(cf_vocab_build_joint(src, tgt, 3, 2, 0, &v));
    assert_int_equal(cf_vocab_size(v), 7);
    cf_vocab_free(v);
    assert_ok(cf_vocab_build_joint(src, tgt, 3, 1, 5, &v));
    assert_int_equal(cf_vocab_size(v), 5);
    assert_string_equal(cf_vocab_token(v, 4), "a");
    cf_vocab_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validation_names_what_is_missing),
        cmocka_unit_test(json_keeps_it_and_omits_it_when_false),
        cmocka_unit_test(layout_has_one_embedding),
        cmocka_unit_test(joint_vocabulary_counts_both_sides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
