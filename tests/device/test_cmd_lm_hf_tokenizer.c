/*
 * A Hugging Face Llama directory whose tokenizer is its own tokenizer.json
 * (tests/data/hf_tokenizers/llama3_bpe: byte-level BPE, a template's BOS;
 * its tokenizer_config.json and special_tokens_map.json, written by hand,
 * name Llama 3's BOS and EOS) through the commands, as a user runs them: the
 * directory made from a tiny random model's hf-llama export with clformer's
 * files replaced by the tokenizer's, then
 * - the model's ids of texts are the golden ids of `tokenizers`
 *   (cases.json), and decode back to the texts without BOS;
 * - generate --prompt and eval --text run on it (eval scores the golden
 *   count of ids);
 * - train --init fine-tunes it with that tokenizer: the checkpoint carries
 *   the files' bytes and gives the same ids, --resume keeps them, generate
 *   on the checkpoint gives the directory's text;
 * - export --format hf-llama of the checkpoint writes the same tokenizer
 *   files, no clformer file, and config.json's BOS and EOS ids;
 * - generation stops at EOS; a directory without a tokenizer (or with one
 *   clformer does not read) says what to do.
 */
#include "harness.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fixture's tokenizer files, as read. */
static const char *const FILES[] = {"tokenizer.json", "tokenizer_config.json",
                                    "special_tokens_map.json"};
static char file_bytes[3][1 << 15];

/* A tiny random Llama of the tokenizer's 602 ids, exported to `dir`
 * (model.norm.weight all zero when `flat`: every logit 0, greedy picks id 0),
 * its clformer files replaced by the tokenizer's; eos_token `eos`. */
static void make_hf_dir(const char *dir, bool flat, const char *eos)
{
    clformer_config c;
    clformer_config_default(&c);
    assert_ok(clformer_config_lm_preset("llama-small", &c));
    c.d_model = 16, c.n_heads = 4, c.n_kv_heads = 2, c.n_dec_layers = 1, c.d_ff = 24;
    c.max_len = 16, c.tgt_vocab = 602;
    clformer_model *m = NULL;
    assert_ok(clformer_model_create(hctx(), &c, 7, &m));
    if (flat) {
        float zeros[16] = {0};
        assert_ok(clformer_model_write_tensor(m, "model.norm.weight", zeros, 16));
    }
    assert_ok(clformer_model_export_hf_llama_as(m, dir, CLFORMER_FP32));
    clformer_model_free(m);
    char path[256], text[4096];
    harness_path(path, sizeof path, dir, "clformer_vocab.json");
    unlink(path);
    harness_path(path, sizeof path, dir, "config.json");
    harness_slurp(path, text, sizeof text);
    json_t *config = json_loads(text, 0, NULL);
    assert_non_null(config);
    json_object_del(config, "clformer_files");
    assert_int_equal(json_dump_file(config, path, 0), 0);
    json_decref(config);
    for (int k = 0; k < 3; k++) {
        harness_path(path, sizeof path, dir, FILES[k]);
        harness_write_file(path, file_bytes[k]);
    }
    if (eos) {
        snprintf(text, sizeof text, "{\"eos_token\": \"%s\"}", eos);
        harness_path(path, sizeof path, dir, "tokenizer_config.json");
        harness_write_file(path, text);
    }
}

/* The model's ids of the golden texts are `tokenizers`' and decode back to
 * the texts; its EOS is tokenizer_config.json's. */
static void assert_golden_ids(const char *model)
{
    clformer_model *m = NULL;
    assert_ok(clformer_model_load(hctx(), model, &m));
    assert_int_equal(clformer_lm_eos(m), 601);
    char path[512];
    snprintf(path, sizeof path, "%s/hf_tokenizers/cases.json", getenv("CLFORMER_TEST_DATA"));
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, NULL);
    json_t *cases = json_object_get(root, "llama3_bpe");
    assert_true(json_array_size(cases) > 20);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *want = json_object_get(c, "ids");
        const char *text = json_string_value(json_object_get(c, "text"));
        const size_t len = json_string_length(json_object_get(c, "text"));
        if (strlen(text) != len || strstr(text, "<|")) continue; /* text commands' texts */
        int32_t *ids = NULL;
        size_t n = 0;
        assert_ok(clformer_lm_encode(m, text, len, &ids, &n));
        assert_int_equal(n, json_array_size(want));
        for (size_t k = 0; k < n; k++)
            if (ids[k] != json_integer_value(json_array_get(want, k)))
                fail_msg("%s: case %zu (\"%s\"): id %zu is %d, tokenizers gives %d", model, i,
                         text, k, ids[k], (int)json_integer_value(json_array_get(want, k)));
        char *back = NULL;
        assert_ok(clformer_lm_decode(m, ids, n, &back));
        assert_string_equal(back, text);
        clformer_free(back);
        clformer_free(ids);
    }
    json_decref(root);
    clformer_model_free(m);
}

/* The file `name` of `dir` holds exactly `want`. */
static void assert_file(const char *dir, const char *name, const char *want)
{
    static char got[1 << 15];
    char path[256];
    harness_path(path, sizeof path, dir, name);
    harness_slurp(path, got, sizeof got);
    assert_string_equal(got, want);
}

static void hf_tokenizer_commands(void **state)
{
    (void)state;
    char path[512], dir[64], src[128], text[128], ck[128], ck2[128], out_dir[128], flat[128];
    static char out[1 << 14], out2[1 << 14];
    const harness_cmd cmd = {out, sizeof out}, cmd2 = {out2, sizeof out2};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/hf_tokenizers/llama3_bpe/%s",
                 getenv("CLFORMER_TEST_DATA"), FILES[k]);
        harness_slurp(path, file_bytes[k], sizeof file_bytes[k]);
    }
    assert_true(harness_temp_dir(dir, sizeof dir, "hftok"));
    harness_path(src, sizeof src, dir, "src");
    harness_path(text, sizeof text, dir, "text.txt");
    harness_path(ck, sizeof ck, dir, "ck.safetensors");
    harness_path(ck2, sizeof ck2, dir, "ck2.safetensors");
    harness_path(out_dir, sizeof out_dir, dir, "export");
    harness_path(flat, sizeof flat, dir, "flat");
    make_hf_dir(src, false, NULL);
    assert_golden_ids(src);

    /* eval scores every id after the first (BOS) of the text's */
    static const char hello[] = "Hello world, 2024!";
    clformer_model *m = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    assert_ok(clformer_model_load(hctx(), src, &m));
    assert_ok(clformer_lm_encode(m, hello, strlen(hello), &ids, &n));
    assert_int_equal(ids[0], 600);
    clformer_free(ids);
    clformer_model_free(m);
    harness_write_file(text, hello);
    int rc = harness_run_clformer(&cmd, "eval", "--model", src, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval of the directory exited with %d:\n%s", rc, out);
    snprintf(path, sizeof path, "\"tokens\": %zu,", n - 1);
    if (!strstr(out, path)) fail_msg("eval scored other than %zu ids:\n%s", n - 1, out);
    static char corpus[3000];
    size_t at = 0;
    for (int i = 0; at + 40 < sizeof corpus; i++)
        at += (size_t)snprintf(corpus + at, sizeof corpus - at, "row %d: a dog ran by %d\n", i,
                               i % 5);
    harness_write_file(text, corpus);
    rc = harness_run_clformer(&cmd, "generate", "--model", src, "--prompt", "Hello world",
                              "--max-tokens", "6", "--greedy", NULL);
    if (rc != 0) fail_msg("generate on the directory exited with %d:\n%s", rc, out);
    assert_true(!strncmp(out, "Hello world", 11));

    /* fine-tuned with the directory's tokenizer; the checkpoint carries it */
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--init", src, "--text", text,
                              "--steps", "2", "--batch-size", "2", "--val-fraction", "0",
                              "--save", ck, NULL);
    if (rc != 0) fail_msg("train --init DIR exited with %d:\n%s", rc, out);
    assert_golden_ids(ck);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--resume", ck,
                              "--steps", "3", "--val-fraction", "0", "--save", ck2, NULL);
    if (rc != 0) fail_msg("train --resume exited with %d:\n%s", rc, out);
    assert_golden_ids(ck2);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--resume", ck,
                              "--tokenizer", "byte", "--steps", "3", "--save", ck2,
                              "--overwrite", NULL);
    harness_expect_run(&cmd, rc, 2, "--init directory");

    /* the export writes the tokenizer's files as they came */
    rc = harness_run_clformer(&cmd2, "export", "--format", "hf-llama", "--model", ck, "--out",
                              out_dir, NULL);
    if (rc != 0) fail_msg("export --format hf-llama exited with %d:\n%s", rc, out2);
    assert_non_null(strstr(out2, "tokenizer.json: the tokenizer of the directory"));
    rc = harness_run_clformer(&cmd2, "export", "--format", "hf-llama", "--model", ck, "--out",
                              out_dir, "--overwrite", NULL); /* an earlier export: replaced */
    if (rc != 0) fail_msg("export --overwrite exited with %d:\n%s", rc, out2);
    for (int k = 0; k < 3; k++) assert_file(out_dir, FILES[k], file_bytes[k]);
    harness_path(path, sizeof path, out_dir, "clformer_vocab.json");
    assert_int_not_equal(access(path, F_OK), 0);
    harness_path(path, sizeof path, out_dir, "config.json");
    harness_slurp(path, out2, sizeof out2);
    assert_non_null(strstr(out2, "\"bos_token_id\": 600"));
    assert_non_null(strstr(out2, "\"eos_token_id\": 601"));
    assert_golden_ids(out_dir);
    rc = harness_run_clformer(&cmd, "generate", "--model", ck, "--prompt", "row 1",
                              "--max-tokens", "8", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate on the checkpoint exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd2, "generate", "--model", out_dir, "--prompt", "row 1",
                              "--max-tokens", "8", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate on the export exited with %d:\n%s", rc, out2);
    assert_string_equal(out, out2);

    /* every logit 0: greedy takes id 0 ("!"), here the EOS: nothing comes */
    make_hf_dir(flat, true, "!");
    rc = harness_run_clformer(&cmd, "generate", "--model", flat, "--prompt", "Hi", "--prompt",
                              "Hello", "--max-tokens", "5", "--greedy", "--json", NULL);
    if (rc != 0) fail_msg("generate (EOS first) exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "\"text\": \"\", \"tokens\": 0"));
    rc = harness_run_clformer(&cmd, "generate", "--model", flat, "--prompt", "Hi",
                              "--max-tokens", "5", "--greedy", NULL);
    if (rc != 0) fail_msg("generate (EOS first) exited with %d:\n%s", rc, out);
    assert_string_equal(out, "Hi\n");

    /* no tokenizer, or one clformer does not read: ids only, and what to do */
    harness_path(path, sizeof path, flat, "tokenizer.json");
    harness_write_file(path, "{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {}}");
    rc = harness_run_clformer(&cmd, "generate", "--model", flat, "--prompt", "Hi", NULL);
    harness_expect_run(&cmd, rc, 1, "normalizer NFC");
    assert_non_null(strstr(out, "logits --ids"));
    unlink(path);
    rc = harness_run_clformer(&cmd, "eval", "--model", flat, "--text", text, NULL);
    harness_expect_run(&cmd, rc, 1, "no tokenizer");
    assert_non_null(strstr(out, "tokenizer.json"));
    harness_remove_tree(dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(hf_tokenizer_commands),
};
HARNESS_DEVICE_MAIN("cmd_lm_hf_tokenizer", tests)
