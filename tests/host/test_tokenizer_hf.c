/*
 * The tokenizers of Hugging Face model directories (runtime/data/
 * tokenizer_hf.h) against the reference libraries on the same files,
 * tests/data/hf_tokenizers/ (tools/reference/make_hf_tokenizer_golden.py):
 * - llama_spm/tokenizer.model: transformers' LlamaTokenizer ids (BOS, byte
 *   fallback, the dummy prefix, <s> </s> <unk> in the text) and
 *   SentencePiece's decoding;
 * - smollm_bpe/ and llama3_bpe/ (tokenizer.json files): `tokenizers`' ids (Digits then
 *   ByteLevel; Llama 3's regex; added tokens in the text; the template's
 *   BOS) and its decoding, for Unicode, whitespace runs, digits, emoji;
 * - the directory loader's choice, and the errors for what is not read.
 */
#include "data_util.h"

#include "fileio.h"
#include "tokenizer_hf.h"

#include <jansson.h>

static void check_cases(const char *name, cf_hf_tokenizer *t)
{
    json_error_t err;
    json_t *root = json_load_file(data_path("hf_tokenizers/cases.json"), JSON_ALLOW_NUL, &err);
    if (!root) fail_msg("cases.json: %s", err.text);
    json_t *cases = json_object_get(root, name);
    assert_true(json_array_size(cases) > 80);
    size_t i, total = 0;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *text = json_string_value(json_object_get(c, "text"));
        const size_t len = json_string_length(json_object_get(c, "text"));
        json_t *want = json_object_get(c, "ids");
        int32_t *ids;
        size_t n;
        assert_ok(cf_hf_tokenizer_encode(t, text, len, true, &ids, &n));
        bool same = n == json_array_size(want);
        for (size_t k = 0; same && k < n; k++)
            same = ids[k] == json_integer_value(json_array_get(want, k));
        if (!same) {
            char *w = json_dumps(want, JSON_COMPACT);
            fprintf(stderr, "%s: case %zu (\"%.60s\"): %zu ids, want %s\n  got:", name, i, text,
                    n, w);
            for (size_t k = 0; k < n; k++) fprintf(stderr, " %d", ids[k]);
            fprintf(stderr, "\n");
            free(w);
            fail();
        }
        char *back;
        size_t back_len;
        assert_ok(cf_hf_tokenizer_decode(t, ids, n, false, &back, &back_len));
        const char *decoded = json_string_value(json_object_get(c, "decoded"));
        if (back_len != json_string_length(json_object_get(c, "decoded")) ||
            memcmp(back, decoded, back_len))
            fail_msg("%s: case %zu decodes to \"%s\", want \"%s\"", name, i, back, decoded);
        free(back);
        free(ids);
        total += n;
    }
    print_message("%s: %zu texts, %zu ids as the reference\n", name, json_array_size(cases), total);
    json_decref(root);
}

static cf_hf_tokenizer *load(const char *dir)
{
    cf_hf_tokenizer *t;
    assert_ok(cf_hf_tokenizer_load_dir(data_path(dir), &t));
    return t;
}

static void llama_spm(void **state)
{
    (void)state;
    cf_hf_tokenizer *t = load("hf_tokenizers/llama_spm");
    assert_int_equal(cf_hf_tokenizer_size(t), 700);
    assert_int_equal(cf_hf_tokenizer_bos(t), 1);
    assert_int_equal(cf_hf_tokenizer_token_id(t, "</s>"), 2);
    assert_int_equal(cf_hf_tokenizer_token_id(t, "<0x41>"), 3 + 0x41);
    check_cases("llama_spm", t);
    int32_t *ids;
    size_t n;
    assert_ok(cf_hf_tokenizer_encode(t, "abc", 3, false, &ids, &n));
    assert_true(n > 0 && ids[0] != 1); /* no BOS without add_special */
    free(ids);
    cf_hf_tokenizer_free(t);
}

static void smollm_bpe(void **state)
{
    (void)state;
    cf_hf_tokenizer *t = load("hf_tokenizers/smollm_bpe");
    assert_int_equal(cf_hf_tokenizer_token_id(t, "<|im_end|>"), 2);
    assert_int_equal(cf_hf_tokenizer_bos(t), -1);
    check_cases("smollm_bpe", t);
    cf_hf_tokenizer_free(t);
}

static void llama3_bpe(void **state)
{
    (void)state;
    cf_hf_tokenizer *t = load("hf_tokenizers/llama3_bpe");
    assert_int_equal(cf_hf_tokenizer_size(t), 602);
    assert_int_equal(cf_hf_tokenizer_token_id(t, "<|begin_of_text|>"), 600);
    check_cases("llama3_bpe", t);
    /* skip_special drops the template's BOS */
    int32_t *ids;
    size_t n;
    assert_ok(cf_hf_tokenizer_encode(t, "hi", 2, true, &ids, &n));
    assert_int_equal(ids[0], 600);
    char *text;
    size_t len;
    assert_ok(cf_hf_tokenizer_decode(t, ids, n, true, &text, &len));
    assert_string_equal(text, "hi");
    free(text);
    const int32_t bad = 602;
    assert_error(cf_hf_tokenizer_decode(t, &bad, 1, false, &text, &len),
                 CLFORMER_ERR_INVALID_ARGUMENT, "id 602", "602 ids");
    free(ids);
    cf_hf_tokenizer_free(t);
}

/* The smollm file with one field replaced. */
static clformer_status load_edited(const char *field, const char *value, cf_hf_tokenizer **t)
{
    json_error_t err;
    json_t *root = json_load_file(data_path("hf_tokenizers/smollm_bpe/tokenizer.json"), 0, &err);
    assert_non_null(root);
    json_t *v = json_loads(value, JSON_DECODE_ANY, &err);
    assert_non_null(v);
    if (!strcmp(field, "lstrip"))
        json_object_set_new(json_array_get(json_object_get(root, "added_tokens"), 1), "lstrip", v);
    else if (!strcmp(field, "model.type"))
        json_object_set_new(json_object_get(root, "model"), "type", v);
    else
        json_object_set_new(root, field, v);
    char *text = json_dumps(root, 0);
    json_decref(root);
    clformer_status st = cf_hf_tokenizer_from_json(text, strlen(text), "edited.json", t);
    free(text);
    return st;
}

static void errors(void **state)
{
    (void)state;
    cf_hf_tokenizer *t = NULL;
    assert_error(load_edited("normalizer", "{\"type\": \"NFC\"}", &t), CLFORMER_ERR_FORMAT,
                 "edited.json", "normalizer NFC");
    assert_error(load_edited("pre_tokenizer", "{\"type\": \"Metaspace\"}", &t),
                 CLFORMER_ERR_FORMAT, "pre_tokenizer", "Metaspace", "ByteLevel");
    assert_error(load_edited("pre_tokenizer",
                             "{\"type\": \"ByteLevel\", \"add_prefix_space\": true}", &t),
                 CLFORMER_ERR_FORMAT, "add_prefix_space");
    assert_error(load_edited("lstrip", "true", &t), CLFORMER_ERR_FORMAT, "<|im_start|>",
                 "lstrip");
    assert_error(load_edited("model.type", "\"WordPiece\"", &t), CLFORMER_ERR_FORMAT,
                 "model WordPiece", "tokenizer.model");
    assert_error(load_edited("post_processor", "{\"type\": \"BertProcessing\"}", &t),
                 CLFORMER_ERR_FORMAT, "BertProcessing");
    assert_error(cf_hf_tokenizer_from_json("{", 1, "broken.json", &t), CLFORMER_ERR_FORMAT,
                 "broken.json", "line 1");
    assert_null(t);
    /* a directory without either file */
    assert_error(cf_hf_tokenizer_load_dir(tmp_dir(), &t), CLFORMER_ERR_INVALID_ARGUMENT,
                 "neither tokenizer.json nor tokenizer.model");
    /* a tokenizer.json clformer does not read beside a tokenizer.model: the model */
    char *model;
    size_t size;
    assert_ok(cf_read_file(data_path("hf_tokenizers/llama_spm/tokenizer.model"), &model, &size));
    free(tmp_file("tokenizer.model", model, size));
    free(tmp_text("tokenizer.json", "{\"model\": {\"type\": \"Unigram\"}}"));
    assert_ok(cf_hf_tokenizer_load_dir(tmp_dir(), &t));
    assert_int_equal(cf_hf_tokenizer_size(t), 700);
    cf_hf_tokenizer_free(t);
    free(model);
    tmp_cleanup();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_spm),
        cmocka_unit_test(smollm_bpe),
        cmocka_unit_test(llama3_bpe),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
