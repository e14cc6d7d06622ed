/*
 * GPT-2's byte-level BPE (runtime/data/tokenizer_bpe.h) against Hugging Face
 * `tokenizers`: tests/data/bpe/{vocab.json,merges.txt} is a small
 * ByteLevelBPE trained by tools/reference/make_bpe_golden.py, and
 * cases.json holds the ids `tokenizers` gave for each test string (Tiny
 * Shakespeare lines, contractions, whitespace runs, non-ASCII letters and
 * numbers, emoji, Unicode spaces). Also: any bytes round-trip, invalid
 * UTF-8 included, and bad files are refused with the file, line and fix.
 */
#include "data_util.h"

#include "fileio.h"
#include "splitmix.h"
#include "tokenizer_bpe.h"

#include <jansson.h>

static cf_bpe *load_golden(void)
{
    char vocab[4096], merges[4096];
    snprintf(vocab, sizeof vocab, "%s", data_path("bpe/vocab.json"));
    snprintf(merges, sizeof merges, "%s", data_path("bpe/merges.txt"));
    cf_bpe *bpe = NULL;
    assert_ok(cf_bpe_load_files(vocab, merges, &bpe));
    return bpe;
}

static void matches_hugging_face_ids(void **state)
{
    (void)state;
    cf_bpe *bpe = load_golden();
    assert_int_equal(cf_bpe_vocab_size(bpe), 700);
    json_error_t err;
    json_t *root = json_load_file(data_path("bpe/cases.json"), JSON_ALLOW_NUL, &err);
    if (!root) fail_msg("cases.json: %s", err.text);
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) >= 80);
    size_t i, tokens = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        json_t *jt = json_object_get(c, "text"), *jids = json_object_get(c, "ids");
        const char *text = json_string_value(jt);
        size_t len = json_string_length(jt);
        int32_t *ids = NULL;
        size_t n = 0;
        assert_ok(cf_bpe_encode(bpe, text, len, &ids, &n));
        if (n != json_array_size(jids))
            fail_msg("case %zu: %zu ids, Hugging Face gives %zu", i, n, json_array_size(jids));
        for (size_t k = 0; k < n; k++)
            if (ids[k] != json_integer_value(json_array_get(jids, k)))
                fail_msg("case %zu: id %zu is %d, Hugging Face gives %lld", i, k, ids[k],
                         (long long)json_integer_value(json_array_get(jids, k)));
        char *back = NULL;
        size_t back_len = 0;
        assert_ok(cf_bpe_decode(bpe, ids, n, &back, &back_len));
        assert_int_equal(back_len, len);
        assert_memory_equal(back, text, len);
        tokens += n;
        free(back);
        free(ids);
    }
    assert_true(tokens > 1000); /* the long held-out text is really in there */
    json_decref(root);
    cf_bpe_free(bpe);
}

/* Byte-level: every byte string encodes and decodes back, ill-formed UTF-8
 * (stray continuation bytes, truncated and overlong sequences) included. */
static void any_bytes_round_trip(void **state)
{
    (void)state;
    cf_bpe *bpe = load_golden();
    static const unsigned char pick[] = {' ', ' ', '\n', '\t', 'a', 'e', 't', '\'', 's', '1',
                                         '!', 0x00, 0x80, 0xBF, 0xC3, 0xA9, 0xE2, 0x82, 0xF0,
                                         0x9F, 0xFF, 0xC0, 0xED, 0xA0};
    uint64_t seed = 18;
    unsigned char buf[96];
    for (int trial = 0; trial < 3000; trial++) {
        size_t len = (size_t)(cf_splitmix64(&seed) % sizeof buf);
        for (size_t k = 0; k < len; k++) {
            uint64_t r = cf_splitmix64(&seed);
            buf[k] = (r & 1) ? pick[(r >> 8) % sizeof pick] : (unsigned char)(r >> 16);
        }
        int32_t *ids = NULL;
        size_t n = 0;
        assert_ok(cf_bpe_encode(bpe, (const char *)buf, len, &ids, &n));
        assert_true(n <= len);
        char *back = NULL;
        size_t back_len = 0;
        assert_ok(cf_bpe_decode(bpe, ids, n, &back, &back_len));
        assert_int_equal(back_len, len);
        assert_memory_equal(back, buf, len);
        free(back);
        free(ids);
    }
    /* Each single byte is one id, and decodes to itself. */
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        int32_t *ids = NULL;
        size_t n = 0, blen = 0;
        assert_ok(cf_bpe_encode(bpe, &c, 1, &ids, &n));
        assert_int_equal(n, 1);
        const char *bytes = cf_bpe_token_bytes(bpe, ids[0], &blen);
        assert_int_equal(blen, 1);
        assert_int_equal((unsigned char)bytes[0], b);
        free(ids);
    }
    cf_bpe_free(bpe);
}

static void lookups_and_bad_ids(void **state)
{
    (void)state;
    cf_bpe *bpe = load_golden();
    int32_t eot = cf_bpe_token_id(bpe, "<|endoftext|>");
    assert_true(eot >= 0);
    size_t len = 0;
    assert_memory_equal(cf_bpe_token_bytes(bpe, eot, &len), "<|endoftext|>", 13);
    assert_int_equal(len, 13);
    int32_t space_a = cf_bpe_token_id(bpe, "\xC4\xA0" "a"); /* "Ġa": " a" */
    assert_true(space_a >= 0);
    assert_memory_equal(cf_bpe_token_bytes(bpe, space_a, &len), " a", 2);
    assert_int_equal(cf_bpe_token_id(bpe, "not a token"), -1);
    assert_null(cf_bpe_token_bytes(bpe, 700, &len));
    assert_null(cf_bpe_token_bytes(bpe, -1, &len));
    int32_t bad[] = {5, 700};
    char *text = NULL;
    assert_error(cf_bpe_decode(bpe, bad, 2, &text, &len), CLFORMER_ERR_INVALID_ARGUMENT,
                 "id 700 (position 1)", "vocabulary of 700");
    assert_null(text);
    cf_bpe_free(bpe);
}

static clformer_status load_texts(const char *vocab, const char *merges)
{
    cf_bpe *bpe = NULL;
    clformer_status st =
        cf_bpe_load(vocab, strlen(vocab), "v.json", merges, strlen(merges), "m.txt", &bpe);
    if (st == CLFORMER_OK) assert_non_null(bpe);
    else assert_null(bpe);
    cf_bpe_free(bpe);
    return st;
}

static void bad_files_are_refused(void **state)
{
    (void)state;
    assert_error(load_texts("{\"a\": 0,\n \"b\" 1}", ""), CLFORMER_ERR_FORMAT, "v.json: line 2",
                 "one JSON object of token -> id");
    assert_error(load_texts("[1, 2]", ""), CLFORMER_ERR_FORMAT, "v.json: not a JSON object");
    assert_error(load_texts("{}", ""), CLFORMER_ERR_FORMAT, "v.json: not a JSON object");
    assert_error(load_texts("{\"a\": 0, \"b\": 7}", ""), CLFORMER_ERR_FORMAT,
                 "token \"b\" has id out of range", "0..1");
    assert_error(load_texts("{\"a\": \"0\"}", ""), CLFORMER_ERR_FORMAT,
                 "\"a\" has id that is not an integer");
    assert_error(load_texts("{\"a\": 0, \"b\": 0}", ""), CLFORMER_ERR_FORMAT,
                 "\"a\" and \"b\" both have id 0");
    assert_error(load_texts("{\"a\": 0, \"a\": 1}", ""), CLFORMER_ERR_FORMAT, "v.json: line 1",
                 "duplicate");
    assert_error(load_texts("{\"a\": 0}", ""), CLFORMER_ERR_FORMAT,
                 "v.json: no token for byte 0x00", "all 256 byte tokens");

    /* merges.txt against the golden vocabulary */
    char *vocab = NULL;
    size_t vlen = 0;
    assert_ok(cf_read_file(data_path("bpe/vocab.json"), &vocab, &vlen));
    assert_ok(load_texts(vocab, "#version: 0.2\n\xC4\xA0 t\r\n\n"));
    assert_error(load_texts(vocab, "#version: 0.2\na b c\n"), CLFORMER_ERR_FORMAT,
                 "m.txt: line 2 (\"a b c\") is not two tokens");
    assert_error(load_texts(vocab, "a  b\n"), CLFORMER_ERR_FORMAT, "m.txt: line 1");
    assert_error(load_texts(vocab, "ab\n"), CLFORMER_ERR_FORMAT, "line 1 (\"ab\")");
    assert_error(load_texts(vocab, "\xC4\xA0 t\nzzqq t\n"), CLFORMER_ERR_FORMAT,
                 "m.txt: line 2: token \"zzqq\" is not in v.json", "same tokenizer");
    /* "ĀĀ" (bytes 0x00 0x00) is no token: the merge's result must be one. */
    assert_error(load_texts(vocab, "\xC4\x80 \xC4\x80\n"), CLFORMER_ERR_FORMAT,
                 "line 1: token \"\xC4\x80\xC4\x80\" is not in v.json");
    free(vocab);

    cf_bpe *bpe = NULL;
    assert_error(cf_bpe_load_files("/nonexistent/vocab.json", data_path("bpe/merges.txt"), &bpe),
                 CLFORMER_ERR_IO, "/nonexistent/vocab.json");
    assert_null(bpe);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_hugging_face_ids),
        cmocka_unit_test(any_bytes_round_trip),
        cmocka_unit_test(lookups_and_bad_ids),
        cmocka_unit_test(bad_files_are_refused),
    };
    return cmocka_run_group_tests_name("tokenizer_bpe", tests, NULL, NULL);
}
