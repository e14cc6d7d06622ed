/*
 * Hugging Face Llama config.json (runtime/format/hf_llama_config.h): the
 * parity fixtures' configs (tests/data/llama), LlamaConfig's defaults for
 * absent fields (transformers 4.36), TinyLlama's and Llama 3's shapes (GQA,
 * a list of EOS ids, rope_theta 500,000), and one clear error per bad field.
 */
#include "data_util.h"

#include "hf_llama_config.h"

static cf_hf_llama_config parse_ok(const char *json)
{
    cf_hf_llama_config c;
    assert_ok(cf_hf_llama_config_parse(json, strlen(json), "config.json", &c));
    return c;
}

static void defaults(void **state)
{
    (void)state;
    const cf_hf_llama_config c = parse_ok("{}");
    assert_int_equal(c.vocab_size, 32000);
    assert_int_equal(c.hidden_size, 4096);
    assert_int_equal(c.intermediate_size, 11008);
    assert_int_equal(c.num_hidden_layers, 32);
    assert_int_equal(c.num_attention_heads, 32);
    assert_int_equal(c.num_key_value_heads, 32);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.max_position_embeddings, 2048);
    assert_true(c.rms_norm_eps == 1e-6 && c.rope_theta == 10000.0);
    assert_int_equal(c.rope_scaling, CF_ROPE_PLAIN);
    assert_false(c.tie_word_embeddings);
    assert_int_equal(c.bos_token_id, 1);
    assert_int_equal(c.n_eos, 1);
    assert_int_equal(c.eos_token_id[0], 2);
    assert_int_equal(c.pad_token_id, -1);
    /* num_key_value_heads null: as many as the query heads */
    assert_int_equal(parse_ok("{\"num_attention_heads\": 8, \"num_key_value_heads\": null}")
                         .num_key_value_heads, 8);
}

static void real_shapes(void **state)
{
    (void)state;
    /* TinyLlama-1.1B's config.json (its fields) */
    cf_hf_llama_config c = parse_ok(
        "{\"architectures\": [\"LlamaForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2,"
        " \"hidden_act\": \"silu\", \"hidden_size\": 2048, \"initializer_range\": 0.02,"
        " \"intermediate_size\": 5632, \"max_position_embeddings\": 2048, \"model_type\":"
        " \"llama\", \"num_attention_heads\": 32, \"num_hidden_layers\": 22,"
        " \"num_key_value_heads\": 4, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05,"
        " \"rope_scaling\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\","
        " \"use_cache\": true, \"vocab_size\": 32000}");
    assert_int_equal(c.num_key_value_heads, 4);
    assert_int_equal(c.head_dim, 64);
    assert_true(c.rms_norm_eps == 1e-5);
    /* Llama 3 style: several EOS ids, rope_theta 500000, a pad of null */
    c = parse_ok("{\"vocab_size\": 128256, \"eos_token_id\": [128001, 128009], \"bos_token_id\":"
                 " 128000, \"rope_theta\": 500000.0, \"num_key_value_heads\": 8,"
                 " \"tie_word_embeddings\": true, \"pad_token_id\": null,"
                 " \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}}");
    assert_int_equal(c.n_eos, 2);
    assert_int_equal(c.eos_token_id[1], 128009);
    assert_true(c.tie_word_embeddings && c.rope_theta == 500000.0);
    assert_int_equal(c.rope_scaling, CF_ROPE_DYNAMIC);
    const cf_rope_config r = cf_hf_llama_rope(&c);
    assert_int_equal(r.dh, 128);
    assert_true(r.factor == 2.0 && r.max_positions == 2048);
}

static void fixtures(void **state)
{
    (void)state;
    cf_hf_llama_config c;
    assert_ok(cf_hf_llama_config_read(data_path("llama/d_tiny_dynamic_oclgrind/model/config.json"),
                                      &c));
    assert_int_equal(c.num_key_value_heads, 1);
    assert_int_equal(c.rope_scaling, CF_ROPE_DYNAMIC);
    assert_true(c.rope_scaling_factor == 2.0 && c.rms_norm_eps == 1e-5);
    assert_ok(cf_hf_llama_config_read(data_path("llama/c_mqa_linear/model/config.json"), &c));
    assert_int_equal(c.rope_scaling, CF_ROPE_LINEAR);
    assert_ok(cf_hf_llama_config_read(data_path("llama/b_gqa2_tied_theta5e5/model/config.json"),
                                      &c));
    assert_true(c.tie_word_embeddings && c.rope_theta == 500000.0);
    assert_int_equal(c.num_attention_heads / c.num_key_value_heads, 2);
}

#define BAD(json, ...)                                                                             \
    do {                                                                                           \
        cf_hf_llama_config c_;                                                                     \
        assert_error(cf_hf_llama_config_parse(json, strlen(json), "config.json", &c_),            \
                     CLFORMER_ERR_FORMAT, "config.json", __VA_ARGS__);                             \
    } while (0)

static void errors(void **state)
{
    (void)state;
    BAD("{", "line 1");
    BAD("[]", "not a JSON object");
    BAD("{\"model_type\": \"mistral\"}", "model_type \"mistral\"", "llama");
    BAD("{\"hidden_act\": \"gelu\"}", "hidden_act \"gelu\"", "silu");
    BAD("{\"attention_bias\": true}", "attention_bias", "no biases");
    BAD("{\"hidden_size\": 30, \"num_attention_heads\": 4}", "hidden_size 30", "multiple");
    BAD("{\"num_attention_heads\": 4, \"num_key_value_heads\": 3, \"hidden_size\": 32}",
        "num_key_value_heads 3");
    BAD("{\"vocab_size\": \"big\"}", "vocab_size", "positive integer");
    BAD("{\"num_hidden_layers\": 0}", "num_hidden_layers");
    BAD("{\"rms_norm_eps\": 0}", "rms_norm_eps");
    BAD("{\"rope_theta\": -1.0}", "rope_theta");
    BAD("{\"tie_word_embeddings\": \"yes\"}", "tie_word_embeddings");
    BAD("{\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 2.0}}", "type \"yarn\"");
    BAD("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}", "float > 1", "2.0");
    BAD("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 0.5}}", "float > 1");
    BAD("{\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0, \"x\": 1}}", "two fields");
    BAD("{\"rope_scaling\": \"linear\"}", "rope_scaling");
    BAD("{\"hidden_size\": 8, \"num_attention_heads\": 4, \"rope_scaling\": {\"type\": "
        "\"dynamic\", \"factor\": 2.0}}", "at least 4");
    BAD("{\"hidden_size\": 12, \"num_attention_heads\": 4}", "head size 3", "even");
    BAD("{\"eos_token_id\": 40000}", "eos_token_id 40000", "32000");
    BAD("{\"eos_token_id\": [1, -2]}", "eos_token_id", "token id");
    BAD("{\"bos_token_id\": 32000}", "bos_token_id");
    cf_hf_llama_config c;
    assert_error(cf_hf_llama_config_read("/nonexistent/config.json", &c), CLFORMER_ERR_IO,
                 "/nonexistent/config.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test(real_shapes),
        cmocka_unit_test(fixtures),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
