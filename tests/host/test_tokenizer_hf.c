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
 * - decoding as transformers' decode(skip_special_tokens=True): the
 *   reference's decoding without the special tokens;
 * - BOS and EOS from tokenizer_config.json;
 * - the directory loader's choice, and the errors for what is not read.
 */
#include "data_util.h"

#include "fileio.h"
#include "tokenizer_hf.h"

#include <jansson.h>

/* The reference's decoding `decoded` of ids without the special tokens: a
 * byte-level BPE spells them in the text (removed once for each of their
 * ids); in SentencePiece's only <unk> gives text (" \xE2\x81\x87 "). */
static char *strip_specials(const cf_hf_tokenizer *t, const int32_t *ids, size_t n,
                            const char *decoded)
{
    char *out = strdup(decoded);
    static const char *const specials[] = {"<|begin_of_text|>", "<|end_of_text|>",
                                           "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"};
    for (size_t k = 0; k < sizeof specials / sizeof *specials; k++) {
        const int32_t id = cf_hf_tokenizer_token_id(t, specials[k]);
        const char *s = cf_hf_tokenizer_is_bpe(t) ? specials[k] : " \xE2\x81\x87 ";
        const size_t sl = strlen(s);
        size_t count = 0;
        for (size_t i = 0; i < n; i++) count += id >= 0 && ids[i] == id;
        for (char *at; count && (at = strstr(out, s)); count--)
            memmove(at, at + sl, strlen(at + sl) + 1);
    }
    return out;
}

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
        /* skip_special: the reference's text without the special tokens' */
        char *plain = strip_specials(t, ids, n, decoded);
        assert_ok(cf_hf_tokenizer_decode(t, ids, n, true, &back, &back_len));
        if (strcmp(back, plain))
            fail_msg("%s: case %zu decodes (skipping special tokens) to \"%s\", want \"%s\"",
                     name, i, back, plain);
        free(plain);
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

/* tokenizer_config.json names EOS and BOS, as a string or as an AddedToken object. */
static void bos_eos(void **state)
{
    (void)state;
    char *json;
    size_t size;
    assert_ok(cf_read_file(data_path("hf_tokenizers/llama3_bpe/tokenizer.json"), &json, &size));
    const char *configs[] = {"{\"eos_token\": \"<|end_of_text|>\"}",
                             "{\"eos_token\": {\"content\": \"<|end_of_text|>\"}, "
                             "\"bos_token\": \"<|end_of_text|>\"}",
                             NULL};
    const int32_t want_eos[] = {601, 601, -1}, want_bos[] = {600, 601, 600};
    for (int k = 0; k < 3; k++) {
        const char *data[CF_HF_TOK_FILES] = {json, NULL, configs[k], NULL};
        const size_t sizes[CF_HF_TOK_FILES] = {size, 0, configs[k] ? strlen(configs[k]) : 0, 0};
        cf_hf_tokenizer *t;
        assert_ok(cf_hf_tokenizer_from_files(data, sizes, "dir", &t));
        assert_int_equal(cf_hf_tokenizer_eos(t), want_eos[k]);
        assert_int_equal(cf_hf_tokenizer_bos(t), want_bos[k]);
        cf_hf_tokenizer_free(t);
    }
    free(json);
    cf_hf_tokenizer *t = load("hf_tokenizers/llama_spm"); /* SentencePiece's own */
    assert_int_equal(cf_hf_tokenizer_eos(t), 2);
    cf_hf_tokenizer_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_spm),
        cmocka_unit_test(smollm_bpe),
        cmocka_unit_test(llama3_bpe),
        cmocka_unit_test(bos_eos),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
