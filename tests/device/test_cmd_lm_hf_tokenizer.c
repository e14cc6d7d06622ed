/*
 * A Hugging Face Llama directory whose tokenizer is its own, through the
 * commands, as a user runs them, for each of the two kinds (the fixtures of
 * tests/data/hf_tokenizers, golden ids made once by
 * tools/reference/make_hf_tokenizer_golden.py):
 * - llama3_bpe: byte-level BPE's tokenizer.json, a template's BOS; its
 *   tokenizer_config.json and special_tokens_map.json, written by hand,
 *   name Llama 3's BOS and EOS; ids are `tokenizers`';
 * - llama_spm: SentencePiece's tokenizer.model alone (BOS <s>, EOS </s>
 *   from the model); ids are transformers' LlamaTokenizer's.
 * The directory is made from a tiny random model's hf-llama export with
 * clformer's files replaced by the tokenizer's, then
 * - the model's ids of texts are the golden ids (cases.json), and decode
 *   back to the texts without BOS;
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
#include <sys/stat.h>
#include <unistd.h>

/* A tokenizer fixture: its folder under tests/data/hf_tokenizers (and key of
 * cases.json), its files, size, BOS and EOS, the text marking special tokens
 * written as text (cases holding it are skipped: the text commands read
 * plain text), and the token of id 0 (made the EOS to stop at once). */
typedef struct {
    const char *name;
    const char *files[3]; /* NULL after the last */
    int vocab;
    int32_t bos, eos;
    const char *special, *id0;
} fixture;

static const fixture FIXTURES[] = {
    {"llama3_bpe", {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"},
     602, 600, 601, "<|", "!"},
    {"llama_spm", {"tokenizer.model", NULL, NULL}, 700, 1, 2, "<s>", "<unk>"},
};

/* The fixture's tokenizer files, as read. */
static char file_bytes[3][1 << 15];
static size_t file_size[3];

/* A tiny random Llama of the tokenizer's ids, exported to `dir`
 * (model.norm.weight all zero when `flat`: every logit 0, greedy picks id 0),
 * its clformer files replaced by the tokenizer's; eos_token `eos`. */
static void make_hf_dir(const fixture *f, const char *dir, bool flat, const char *eos)
{
    clformer_config c;
    clformer_config_default(&c);
    assert_ok(clformer_config_lm_preset("llama-small", &c));
    c.d_model = 16, c.n_heads = 4, c.n_kv_heads = 2, c.n_dec_layers = 1, c.d_ff = 24;
    c.max_len = 16, c.tgt_vocab = f->vocab;
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
    for (int k = 0; k < 3 && f->files[k]; k++) {
        harness_path(path, sizeof path, dir, f->files[k]);
        harness_write_bytes(path, file_bytes[k], file_size[k]);
    }
    if (eos) {
        snprintf(text, sizeof text, "{\"eos_token\": \"%s\"}", eos);
        harness_path(path, sizeof path, dir, "tokenizer_config.json");
        harness_write_file(path, text);
    }
}

/* The model's ids of the golden texts are the fixture's and decode back to
 * the texts; its EOS is the fixture's. */
static void assert_golden_ids(const fixture *f, const char *model)
{
    clformer_model *m = NULL;
    assert_ok(clformer_model_load(hctx(), model, &m));
    assert_int_equal(clformer_lm_eos(m), f->eos);
    char path[512];
    snprintf(path, sizeof path, "%s/hf_tokenizers/cases.json", getenv("CLFORMER_TEST_DATA"));
    json_t *root = json_load_file(path, JSON_ALLOW_NUL, NULL);
    json_t *cases = json_object_get(root, f->name);
    assert_true(json_array_size(cases) > 20);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i), *want = json_object_get(c, "ids");
        const char *text = json_string_value(json_object_get(c, "text"));
        const size_t len = json_string_length(json_object_get(c, "text"));
        if (strlen(text) != len || strstr(text, f->special)) continue; /* text commands' texts */
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

/* The file `name` of `dir` holds exactly the n bytes `want`. */
static void assert_file(const char *dir, const char *name, const char *want, size_t n)
{
    static char got[1 << 15];
    char path[256];
    harness_path(path, sizeof path, dir, name);
    assert_int_equal(harness_slurp_bytes(path, got, sizeof got), n);
    assert_memory_equal(got, want, n);
}

static char out[1 << 14], out2[1 << 14];
static const harness_cmd cmd = {out, sizeof out}, cmd2 = {out2, sizeof out2};

/* The paths under a fixture's folder the commands write. */
typedef struct {
    char src[128], text[128], ck[128], ck2[128], out_dir[128];
    char flat[128]; /* a copy of src with every logit 0: greedy takes id 0, made its EOS */
} paths;

/* The commands on a directory of fixture f's tokenizer, in `dir`. */
static void commands(const fixture *f, const char *dir, paths *p)
{
    char path[512];
    char *src = p->src, *text = p->text, *ck = p->ck, *ck2 = p->ck2, *out_dir = p->out_dir;
    char *flat = p->flat;
    for (int k = 0; k < 3 && f->files[k]; k++) {
        snprintf(path, sizeof path, "%s/hf_tokenizers/%s/%s", getenv("CLFORMER_TEST_DATA"),
                 f->name, f->files[k]);
        file_size[k] = harness_slurp_bytes(path, file_bytes[k], sizeof file_bytes[k]);
    }
    harness_path(src, sizeof p->src, dir, "src");
    harness_path(text, sizeof p->text, dir, "text.txt");
    harness_path(ck, sizeof p->ck, dir, "ck.safetensors");
    harness_path(ck2, sizeof p->ck2, dir, "ck2.safetensors");
    harness_path(out_dir, sizeof p->out_dir, dir, "export");
    harness_path(flat, sizeof p->flat, dir, "flat");
    make_hf_dir(f, src, false, NULL);
    assert_golden_ids(f, src);

    /* eval scores every id after the first (BOS) of the text's */
    static const char hello[] = "Hello world, 2024!";
    clformer_model *m = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    assert_ok(clformer_model_load(hctx(), src, &m));
    assert_ok(clformer_lm_encode(m, hello, strlen(hello), &ids, &n));
    assert_int_equal(ids[0], f->bos);
    clformer_free(ids);
    clformer_model_free(m);
    harness_write_file(text, hello);
    int rc = harness_run_clformer(&cmd, "eval", "--model", src, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval of the directory exited with %d:\n%s", rc, out);
    snprintf(path, sizeof path, "\"tokens\": %zu,", n - 1);
    if (!strstr(out, path)) fail_msg("eval scored other than %zu ids:\n%s", n - 1, out);
    harness_write_counted_lines(text, 3000, "row", "a dog ran by", 5);
    rc = harness_run_clformer(&cmd, "generate", "--model", src, "--prompt", "Hello world",
                              "--max-tokens", "6", "--greedy", NULL);
    if (rc != 0) fail_msg("generate on the directory exited with %d:\n%s", rc, out);
    assert_true(!strncmp(out, "Hello world", 11));

    /* fine-tuned with the directory's tokenizer; the checkpoint carries it */
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--init", src, "--text", text,
                              "--steps", "2", "--batch-size", "2", "--val-fraction", "0",
                              "--save", ck, NULL);
    if (rc != 0) fail_msg("train --init DIR exited with %d:\n%s", rc, out);
    assert_golden_ids(f, ck);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--resume", ck,
                              "--steps", "3", "--val-fraction", "0", "--save", ck2, NULL);
    if (rc != 0) fail_msg("train --resume exited with %d:\n%s", rc, out);
    assert_golden_ids(f, ck2);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--resume", ck,
                              "--tokenizer", "byte", "--steps", "3", "--save", ck2,
                              "--overwrite", NULL);
    harness_expect_run(&cmd, rc, 2, "--init directory");

    /* the export writes the tokenizer's files as they came */
    rc = harness_run_clformer(&cmd2, "export", "--format", "hf-llama", "--model", ck, "--out",
                              out_dir, NULL);
    if (rc != 0) fail_msg("export --format hf-llama exited with %d:\n%s", rc, out2);
    snprintf(path, sizeof path, "%s: the tokenizer of the directory", f->files[0]);
    if (!strstr(out2, path)) fail_msg("export did not say \"%s\":\n%s", path, out2);
    rc = harness_run_clformer(&cmd2, "export", "--format", "hf-llama", "--model", ck, "--out",
                              out_dir, "--overwrite", NULL); /* an earlier export: replaced */
    if (rc != 0) fail_msg("export --overwrite exited with %d:\n%s", rc, out2);
    for (int k = 0; k < 3 && f->files[k]; k++)
        assert_file(out_dir, f->files[k], file_bytes[k], file_size[k]);
    harness_path(path, sizeof path, out_dir, "clformer_vocab.json");
    assert_int_not_equal(access(path, F_OK), 0);
    harness_path(path, sizeof path, out_dir, "config.json");
    harness_slurp(path, out2, sizeof out2);
    snprintf(path, sizeof path, "\"bos_token_id\": %d", (int)f->bos);
    assert_non_null(strstr(out2, path));
    snprintf(path, sizeof path, "\"eos_token_id\": %d", (int)f->eos);
    assert_non_null(strstr(out2, path));
    assert_golden_ids(f, out_dir);
    rc = harness_run_clformer(&cmd, "generate", "--model", ck, "--prompt", "row 1",
                              "--max-tokens", "8", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate on the checkpoint exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd2, "generate", "--model", out_dir, "--prompt", "row 1",
                              "--max-tokens", "8", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate on the export exited with %d:\n%s", rc, out2);
    assert_string_equal(out, out2);

    /* every logit 0: greedy takes id 0, here the EOS: nothing comes */
    make_hf_dir(f, flat, true, f->id0);
    rc = harness_run_clformer(&cmd, "generate", "--model", flat, "--prompt", "Hi", "--prompt",
                              "Hello", "--max-tokens", "5", "--greedy", "--json", NULL);
    if (rc != 0) fail_msg("generate (EOS first) exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "\"text\": \"\", \"tokens\": 0"));
    rc = harness_run_clformer(&cmd, "generate", "--model", flat, "--prompt", "Hi",
                              "--max-tokens", "5", "--greedy", NULL);
    if (rc != 0) fail_msg("generate (EOS first) exited with %d:\n%s", rc, out);
    assert_string_equal(out, "Hi\n");

}

/* Each fixture; then the first's directory with its tokenizer.json one
 * clformer does not read, and with none. */
static void hf_tokenizer_commands(void **state)
{
    (void)state;
    char dir[64], sub[128], path[256];
    paths p[sizeof FIXTURES / sizeof FIXTURES[0]];
    assert_true(harness_temp_dir(dir, sizeof dir, "hftok"));
    for (size_t i = 0; i < sizeof FIXTURES / sizeof FIXTURES[0]; i++) {
        harness_path(sub, sizeof sub, dir, FIXTURES[i].name);
        assert_int_equal(mkdir(sub, 0755), 0);
        commands(&FIXTURES[i], sub, &p[i]);
    }
    /* no tokenizer, or one clformer does not read: ids only, and what to do */
    harness_path(path, sizeof path, p[0].flat, "tokenizer.json");
    harness_write_file(path, "{\"normalizer\": {\"type\": \"NFC\"}, \"model\": {}}");
    int rc = harness_run_clformer(&cmd, "generate", "--model", p[0].flat, "--prompt", "Hi", NULL);
    harness_expect_run(&cmd, rc, 1, "normalizer NFC");
    assert_non_null(strstr(out, "logits --ids"));
    unlink(path);
    rc = harness_run_clformer(&cmd, "eval", "--model", p[0].flat, "--text", p[0].text, NULL);
    harness_expect_run(&cmd, rc, 1, "no tokenizer");
    assert_non_null(strstr(out, "tokenizer.json"));
    harness_remove_tree(dir);
}


static const struct CMUnitTest tests[] = {
    cmocka_unit_test(hf_tokenizer_commands),
};
HARNESS_DEVICE_MAIN("cmd_lm_hf_tokenizer", tests)
