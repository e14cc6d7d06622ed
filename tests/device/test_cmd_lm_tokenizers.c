/*
 * The language-model commands with subword tokenizers, end to end:
 * GPT-2's byte-level BPE (tests/data/bpe's vocab.json + merges.txt, a small
 * ByteLevelBPE made with Hugging Face `tokenizers`) and SentencePiece
 * learned from the text. train stores the tokenizer in the checkpoint, so
 * generate and eval need nothing else; the Hugging Face export carries it
 * (vocab.json + merges.txt, or clformer_spm.model) and reading the
 * directory back gives the same loss and the same sampled text; the usage
 * and file errors are one line naming the fix.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char out[1 << 15], out2[1 << 15];
/* run in the test's own folder: the refused runs below name no --save, and
 * two device variants of this test may run at once (their default output's lock) */
static harness_cmd cmd = {out, sizeof out}, cmd2 = {out2, sizeof out2};

static bool exists(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0;
}

/* A few KB of text with words the BPE knows, newlines and a non-ASCII word. */
static void write_corpus(const char *path)
{
    static char corpus[8000];
    static const char *const lines[] = {
        "ROMEO: But soft, what light through yonder window breaks?",
        "JULIET: O Romeo, Romeo! wherefore art thou Romeo?", "",
        "  the caf\xC3\xA9 is open, and you'll see the king.", "MERCUTIO: I am hurt."};
    size_t at = 0;
    for (int i = 0; at + 80 < sizeof corpus; i++)
        at += (size_t)snprintf(corpus + at, sizeof corpus - at, "%s\n", lines[i % 5]);
    harness_write_file(path, corpus);
}

#define SHAPE "--task", "lm", "--text", text, "--d-model", "16", "--heads", "2", "--dec-layers", \
              "1", "--d-ff", "32", "--context", "12", "--batch-size", "3", "--eval-batches", "1", \
              "--seed", "3", "--warmup", "2", "--steps", "4"

/* generate twice (the checkpoint, the export): the same text, which starts with the prompt */
static void same_generation(const char *a, const char *b)
{
    int rc = harness_run_clformer(&cmd, "generate", "--model", a, "--prompt", "ROMEO:",
                                  "--max-tokens", "20", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate exited with %d:\n%s", rc, out);
    assert_true(!strncmp(out, "ROMEO:", 6));
    rc = harness_run_clformer(&cmd2, "generate", "--model", b, "--prompt", "ROMEO:",
                              "--max-tokens", "20", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate --model %s exited with %d:\n%s", b, rc, out2);
    assert_string_equal(out, out2);
}

/* eval --text of both: the same figures, bits per byte over the file's bytes */
static void same_eval(const char *a, const char *b, const char *text)
{
    int rc = harness_run_clformer(&cmd, "eval", "--model", a, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval --text exited with %d:\n%s", rc, out);
    struct stat st;
    assert_int_equal(stat(text, &st), 0);
    char bytes[64];
    snprintf(bytes, sizeof bytes, "\"bytes\": %lld", (long long)st.st_size);
    if (!strstr(out, bytes)) fail_msg("eval counts other bytes than the file's %s:\n%s", bytes, out);
    rc = harness_run_clformer(&cmd2, "eval", "--model", b, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval --model %s exited with %d:\n%s", b, rc, out2);
    assert_string_equal(out, out2);
}

/* `a` with every logit 0 (the final norm and any head bias zeroed), saved to
 * `flat` and exported to the Hugging Face directory `flat_hf`: greedy
 * decoding then picks id 0, tests/data/bpe's "<|endoftext|>". */
static void save_flat(const char *a, const char *flat, const char *flat_hf)
{
    clformer_model *m = NULL;
    assert_ok(clformer_model_load(hctx(), a, &m));
    const clformer_config *c = clformer_model_config(m);
    float zeros[1024] = {0};
    assert_true(c->d_model <= 1024 && c->tgt_vocab <= 1024);
    assert_ok(clformer_model_write_tensor(m, "transformer.decoder.norm.weight", zeros,
                                          (size_t)c->d_model));
    assert_ok(clformer_model_write_tensor(m, "transformer.decoder.norm.bias", zeros,
                                          (size_t)c->d_model));
    if (c->generator_bias)
        assert_ok(clformer_model_write_tensor(m, "generator.bias", zeros, (size_t)c->tgt_vocab));
    assert_int_equal(clformer_lm_eos(m), 0);
    assert_ok(clformer_model_save(m, flat, false));
    assert_ok(clformer_model_export_hf_gpt2(m, flat_hf));
    clformer_model_free(m);
}

/* generate stops each row at "<|endoftext|>" and leaves it out of the text,
 * as transformers' generate does with GPT-2's eos_token_id */
static void stops_at_end_of_text(const char *model)
{
    int rc = harness_run_clformer(&cmd, "generate", "--model", model, "--prompt", "ROMEO:",
                                  "--prompt", "JULIET:", "--max-tokens", "5", "--greedy", "--json",
                                  NULL);
    if (rc != 0) fail_msg("generate --model %s exited with %d:\n%s", model, rc, out);
    if (!strstr(out, "\"text\": \"\", \"tokens\": 0") || strstr(out, "endoftext"))
        fail_msg("generate --model %s went on past <|endoftext|>:\n%s", model, out);
    rc = harness_run_clformer(&cmd, "generate", "--model", model, "--prompt", "ROMEO:",
                              "--max-tokens", "5", "--greedy", NULL);
    if (rc != 0) fail_msg("generate --model %s exited with %d:\n%s", model, rc, out);
    assert_string_equal(out, "ROMEO:\n");
}

static void gpt2_bpe(void **state)
{
    (void)state;
    char dir[64], text[128], a[128], b[128], hf[128], tuned[128], bad[128], half[128];
    char flat[128], flat_hf[128], vocab[4200], merges[4200], bpe_dir[4000];
    assert_true(harness_temp_dir(dir, sizeof dir, "lmtok"));
    char run_dir[64]; /* beside dir, not in it: dir is also an input folder */
    assert_true(harness_temp_dir(run_dir, sizeof run_dir, "lmtok_cwd"));
    cmd.cwd = cmd2.cwd = run_dir;
    harness_path(text, sizeof text, dir, "text.txt");
    harness_path(a, sizeof a, dir, "a.safetensors");
    harness_path(b, sizeof b, dir, "b.safetensors");
    harness_path(hf, sizeof hf, dir, "hf");
    harness_path(tuned, sizeof tuned, dir, "tuned.safetensors");
    harness_path(bad, sizeof bad, dir, "bad_merges.txt");
    harness_path(half, sizeof half, dir, "half");
    harness_path(flat, sizeof flat, dir, "flat.safetensors");
    harness_path(flat_hf, sizeof flat_hf, dir, "flat_hf");
    snprintf(bpe_dir, sizeof bpe_dir, "%s/bpe", getenv("CLFORMER_TEST_DATA"));
    snprintf(vocab, sizeof vocab, "%s/vocab.json", bpe_dir);
    snprintf(merges, sizeof merges, "%s/merges.txt", bpe_dir);
    write_corpus(text);

    int rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", "--bpe-vocab",
                                  vocab, "--bpe-merges", merges, "--save", a, NULL);
    if (rc != 0) fail_msg("train --tokenizer gpt2-bpe exited with %d:\n%s", rc, out);
    /* the vocabulary is the BPE's 700 tokens, ids as vocab.json's */
    assert_non_null(strstr(out, "vocabulary 700"));
    /* --tokenizer-dir: the same files, the same model */
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", "--tokenizer-dir",
                              bpe_dir, "--save", b, NULL);
    if (rc != 0) fail_msg("train --tokenizer-dir exited with %d:\n%s", rc, out);
    same_eval(a, b, text);
    same_generation(a, b);

    /* the Hugging Face export carries GPT-2's files; read back, the same model */
    rc = harness_run_clformer(&cmd, "export", "--format", "hf-gpt2", "--model", a, "--out", hf, NULL);
    if (rc != 0) fail_msg("export --format hf-gpt2 exited with %d:\n%s", rc, out);
    char path[256];
    harness_path(path, sizeof path, hf, "vocab.json");
    assert_true(exists(path));
    harness_path(path, sizeof path, hf, "merges.txt");
    assert_true(exists(path));
    same_eval(a, hf, text);
    same_generation(a, hf);
    save_flat(a, flat, flat_hf);
    stops_at_end_of_text(flat);
    stops_at_end_of_text(flat_hf);
    /* train --init from the directory keeps the BPE */
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--init", hf,
                              "--steps", "2", "--batch-size", "2", "--save", tuned, NULL);
    if (rc != 0) fail_msg("train --init DIR exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "vocabulary 700"));
    rc = harness_run_clformer(&cmd, "generate", "--model", tuned, "--prompt", "ROMEO:",
                              "--max-tokens", "5", NULL);
    if (rc != 0) fail_msg("generate after --init DIR exited with %d:\n%s", rc, out);

    /* --resume takes the first command's tokenizer options when they are the
     * checkpoint's, and names the one that is not */
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--tokenizer",
                              "gpt2-bpe", "--tokenizer-dir", bpe_dir, "--resume", b, "--steps", "5",
                              NULL);
    if (rc != 0) fail_msg("train --resume with the same tokenizer exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--tokenizer",
                              "gpt2-bpe", "--bpe-vocab", vocab, "--bpe-merges", text, "--resume", b,
                              "--steps", "6", NULL);
    harness_expect_run(&cmd, rc, 2, "is not the checkpoint's merges.txt");
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--tokenizer", "char",
                              "--resume", b, "--steps", "6", NULL);
    harness_expect_run(&cmd, rc, 2, "differs from the checkpoint's (gpt2-bpe)");
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--tokenizer",
                              "gpt2-bpe", "--tokenizer-dir", bpe_dir, "--init", hf, "--steps", "2",
                              NULL);
    harness_expect_run(&cmd, rc, 2, "brings its own tokenizer");

    /* errors: one line naming the problem and the fix */
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", NULL);
    harness_expect_run(&cmd, rc, 2, "--bpe-vocab vocab.json and --bpe-merges merges.txt");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--bpe-vocab", vocab, "--bpe-merges", merges, NULL);
    harness_expect_run(&cmd, rc, 2, "go with --tokenizer gpt2-bpe");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", "--tokenizer-dir",
                              bpe_dir, "--vocab-size", "800", NULL);
    harness_expect_run(&cmd, rc, 2, "remove --vocab-size");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", "--bpe-vocab",
                              "/nonexistent/vocab.json", "--bpe-merges", merges, NULL);
    harness_expect_run(&cmd, rc, 1, "cannot read '/nonexistent/vocab.json'");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", "--tokenizer-dir",
                              dir, NULL);
    harness_expect_run(&cmd, rc, 1, "has no readable vocab.json");
    harness_write_file(bad, "#version: 0.2\nthis line has three\n");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "gpt2-bpe", "--bpe-vocab",
                              vocab, "--bpe-merges", bad, NULL);
    harness_expect_run(&cmd, rc, 1, "bad_merges.txt: line 2");
    /* a directory with vocab.json but no merges.txt is refused when read */
    assert_int_equal(mkdir(half, 0755), 0);
    char cmdline[1024];
    snprintf(cmdline, sizeof cmdline, "cp '%s'/config.json '%s'/model.safetensors '%s'/vocab.json '%s'",
             hf, hf, hf, half);
    assert_int_equal(system(cmdline), 0);
    rc = harness_run_clformer(&cmd, "eval", "--model", half, "--text", text, NULL);
    harness_expect_run(&cmd, rc, 1, "has vocab.json but no merges.txt");
    harness_remove_tree(dir);
    harness_remove_tree(run_dir);
}

static void sentencepiece(void **state)
{
    (void)state;
    char dir[64], text[128], a[128], hf[128], spm_model[160], c[128];
    assert_true(harness_temp_dir(dir, sizeof dir, "lmspm"));
    char run_dir[64]; /* beside dir, not in it: dir is also an input folder */
    assert_true(harness_temp_dir(run_dir, sizeof run_dir, "lmspm_cwd"));
    cmd.cwd = cmd2.cwd = run_dir;
    harness_path(c, sizeof c, dir, "c.safetensors");
    harness_path(text, sizeof text, dir, "text.txt");
    harness_path(a, sizeof a, dir, "a.safetensors");
    harness_path(hf, sizeof hf, dir, "hf");
    write_corpus(text);
    int rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "spm", "--vocab-size", "60",
                                  "--tokenizer-type", "bpe", "--save", a, NULL);
    if (rc != 0) fail_msg("train --tokenizer spm exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "vocabulary 60"));
    rc = harness_run_clformer(&cmd, "export", "--format", "hf-gpt2", "--model", a, "--out", hf, NULL);
    if (rc != 0) fail_msg("export --format hf-gpt2 exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "no Hugging Face files"));
    same_eval(a, hf, text);
    same_generation(a, hf);
    /* --tokenizer-model: the exported SentencePiece model gives the same model */
    harness_path(spm_model, sizeof spm_model, hf, "clformer_spm.model");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "spm", "--tokenizer-model",
                              spm_model, "--save", c, NULL);
    if (rc != 0) fail_msg("train --tokenizer-model exited with %d:\n%s", rc, out);
    same_eval(a, c, text);
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "spm", NULL);
    harness_expect_run(&cmd, rc, 2, "--tokenizer spm needs --vocab-size N");
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--tokenizer", "spm", "--tokenizer-model",
                              "/nonexistent/x.model", NULL);
    harness_expect_run(&cmd, rc, 1, "/nonexistent/x.model");
    harness_remove_tree(dir);
    harness_remove_tree(run_dir);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(gpt2_bpe),
    cmocka_unit_test(sentencepiece),
};
HARNESS_DEVICE_MAIN("cmd_lm_tokenizers", tests)
