/*
 * The language-model commands end to end on a small text: train --task lm
 * (and its resume: the same losses as one run), generate (a seed repeats its
 * text; a batch of prompts from --prompt and --prompt-file, as text and as
 * JSON, gives each prompt the text it gets alone), eval --text, export
 * --format hf-gpt2 read back by eval, the usage errors of --task lm,
 * --epochs over consecutive windows, and a model of the llama family
 * (--config llama-small, made small) through train, resume, generate and
 * export --format hf-llama.
 */
#include "harness.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The "loss" values of a training log's step lines, in order. */
static size_t losses(const char *path, char out[][32], size_t cap)
{
    static char buf[1 << 16];
    harness_slurp(path, buf, sizeof buf);
    size_t n = 0;
    for (const char *p = buf; (p = strstr(p, "\"loss\":")) && n < cap; p += 7) {
        size_t k = strcspn(p + 7, ",}");
        snprintf(out[n++], 32, "%.*s", (int)(k < 31 ? k : 31), p + 7);
    }
    return n;
}

static void lm_commands(void **state)
{
    (void)state;
    char dir[64], text[128], a[128], b[128], la[128], lb[128], hf[128], prompts[128];
    static char expect[(1 << 15) + 64];
    static char out[1 << 15], out2[1 << 15];
    const harness_cmd cmd = {out, sizeof out}, cmd2 = {out2, sizeof out2};
    assert_true(harness_temp_dir(dir, sizeof dir, "lm"));
    harness_path(text, sizeof text, dir, "text.txt");
    harness_path(a, sizeof a, dir, "a.safetensors");
    harness_path(b, sizeof b, dir, "b.safetensors");
    harness_path(la, sizeof la, dir, "a.jsonl");
    harness_path(lb, sizeof lb, dir, "b.jsonl");
    harness_path(hf, sizeof hf, dir, "hf");
    harness_write_counted_lines(text, 6000, "line", "the cat sat on mat", 7);
    const bool slow = harness_is_slow();
    const char *steps = slow ? "4" : "6", *half = slow ? "2" : "3";
#define SHAPE "--task", "lm", "--text", text, "--d-model", "16", "--heads", "2", "--dec-layers", \
              "1", "--d-ff", "32", "--context", "12", "--batch-size", "3", "--eval-batches", "2", \
              "--seed", "3", "--warmup", "2"
    int rc = harness_run_clformer(&cmd, "train", SHAPE, "--steps", steps, "--eval-every", half,
                                  "--save", a, "--log", la, NULL);
    if (rc != 0) fail_msg("train --task lm exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "validation loss"));
    /* half the steps, then resumed: the same losses as the run in one go */
    rc = harness_run_clformer(&cmd, "train", SHAPE, "--steps", half, "--save", b, "--log", lb, NULL);
    if (rc != 0) fail_msg("train (first half) exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--resume", b,
                              "--steps", steps, "--log", lb, NULL);
    if (rc != 0) fail_msg("train --resume exited with %d:\n%s", rc, out);
    char one[8][32], two[8][32];
    const size_t n1 = losses(la, one, 8), n2 = losses(lb, two, 8);
    assert_int_equal(n1, (size_t)atoi(steps));
    assert_int_equal(n2, n1);
    for (size_t i = 0; i < n1; i++) assert_string_equal(one[i], two[i]);

    /* generate: the prompt first, then the continuation; a seed repeats itself */
    rc = harness_run_clformer(&cmd, "generate", "--model", a, "--prompt", "line 1", "--max-tokens",
                              "30", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate exited with %d:\n%s", rc, out);
    assert_true(!strncmp(out, "line 1", 6));
    rc = harness_run_clformer(&cmd2, "generate", "--model", a, "--prompt", "line 1",
                              "--max-tokens", "30", "--seed", "5", NULL);
    assert_int_equal(rc, 0);
    assert_string_equal(out, out2);

    /* a batch: two prompts (one from --prompt, one from a file whose empty
     * line and '\r' are skipped), two samples each; each prompt's first
     * sample is the text it gets alone */
    harness_path(prompts, sizeof prompts, dir, "prompts.txt");
    harness_write_file(prompts, "\nthe cat\r\n\n");
    rc = harness_run_clformer(&cmd2, "generate", "--model", a, "--prompt", "line 1",
                              "--prompt-file", prompts, "--num-samples", "2", "--max-tokens", "30",
                              "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate of a batch exited with %d:\n%s", rc, out2);
    snprintf(expect, sizeof expect, "=== prompt 1, sample 1 ===\n%s\n", out);
    if (strncmp(out2, expect, strlen(expect)))
        fail_msg("the batch's first row is not the prompt's text alone:\n%s\nwanted first\n%s",
                 out2, expect);
    assert_non_null(strstr(out2, "=== prompt 2, sample 2 ===\nthe cat"));
    rc = harness_run_clformer(&cmd, "generate", "--model", a, "--prompt", "the cat",
                              "--max-tokens", "30", "--seed", "5", NULL);
    assert_int_equal(rc, 0);
    snprintf(expect, sizeof expect, "=== prompt 2, sample 1 ===\n%s\n", out);
    assert_non_null(strstr(out2, expect));
    /* --json: one object, a row per prompt and sample */
    rc = harness_run_clformer(&cmd2, "generate", "--model", a, "--prompt", "line 1", "--prompt",
                              "the cat", "--max-tokens", "30", "--seed", "5", "--json", NULL);
    if (rc != 0) fail_msg("generate --json exited with %d:\n%s", rc, out2);
    json_t *j = json_loads(out2, 0, NULL);
    if (!j) fail_msg("generate --json printed no JSON object:\n%s", out2);
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 2);
    json_t *row = json_array_get(rows, 1);
    snprintf(expect, sizeof expect, "the cat%s\n", json_string_value(json_object_get(row, "text")));
    assert_string_equal(expect, out); /* the text of "the cat" alone */
    assert_int_equal(json_integer_value(json_object_get(row, "tokens")), 30);
    assert_true(json_is_number(json_object_get(j, "tokens_per_second")));
    json_decref(j);
    harness_write_file(prompts, "\n\n");
    rc = harness_run_clformer(&cmd, "generate", "--model", a, "--prompt-file", prompts, NULL);
    harness_expect_run(&cmd, rc, 2, "holds no prompt");

    /* eval --text, and the same figures from the Hugging Face export */
    rc = harness_run_clformer(&cmd, "eval", "--model", a, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval --text exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "\"bits_per_byte\""));
    rc = harness_run_clformer(&cmd2, "export", "--format", "hf-gpt2", "--model", a, "--out", hf,
                              NULL);
    if (rc != 0) fail_msg("export --format hf-gpt2 exited with %d:\n%s", rc, out2);
    rc = harness_run_clformer(&cmd2, "eval", "--model", hf, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval of the export exited with %d:\n%s", rc, out2);
    assert_string_equal(out, out2);

    /* usage errors: one line naming the fix, exit 2 */
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--steps", "3", NULL);
    harness_expect_run(&cmd, rc, 2, "--task lm needs --text");
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--steps", "2",
                              "--epochs", "1", NULL);
    harness_expect_run(&cmd, rc, 2, "give one");
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--steps", "2",
                              "--config", "small", NULL);
    harness_expect_run(&cmd, rc, 2, "language-model preset");
    /* a translation run refuses a language model, naming what trains it */
    rc = harness_run_clformer(&cmd, "train", "--src", text, "--tgt", text, "--steps", "1",
                              "--resume", a, "--no-save", NULL);
    harness_expect_run(&cmd, rc, 1, "is a language model (decoder-only): train it on a text "
                                    "(--task lm --text FILE)");
    rc = harness_run_clformer(&cmd, "generate", "--model", a, NULL);
    harness_expect_run(&cmd, rc, 2, "--prompt");
    /* the translation commands on a language model name what it takes */
    rc = harness_run_clformer(&cmd, "eval", "--model", a, "--src", text, "--ref", text, NULL);
    harness_expect_run(&cmd, rc, 1, "translating needs a translation model (it has an encoder); "
                                    "this model is a language model (decoder-only): it "
                                    "translates nothing; continue a prompt with clformer generate "
                                    "--prompt TEXT, or score it on a text with clformer eval "
                                    "--text FILE");
    assert_non_null(strstr(out, a)); /* the model named */
    rc = harness_run_clformer(&cmd, "translate", "--model", a, "--input", text, NULL);
    harness_expect_run(&cmd, rc, 1, "continue a prompt with clformer generate --prompt TEXT");
    rc = harness_run_clformer(&cmd, "eval", "--model", a, "--ref", text, NULL);
    harness_expect_run(&cmd, rc, 2, "or --text FILE for a language model");
    harness_remove_tree(dir);
}

/* --epochs: consecutive windows, every one of them once an epoch (the step
 * count says so), a resumed run takes the same batches as one in one go,
 * --no-shuffle takes another order, and a text of less than one batch of
 * windows is refused. */
static void lm_epochs(void **state)
{
    (void)state;
    char dir[64], text[128], small[128], a[128], b[128], la[128], lb[128], lc[128];
    static char out[1 << 14];
    const harness_cmd cmd = {out, sizeof out};
    assert_true(harness_temp_dir(dir, sizeof dir, "lm_epochs"));
    harness_path(text, sizeof text, dir, "text.txt");
    harness_path(small, sizeof small, dir, "small.txt");
    harness_path(a, sizeof a, dir, "a.safetensors");
    harness_path(b, sizeof b, dir, "b.safetensors");
    harness_path(la, sizeof la, dir, "a.jsonl");
    harness_path(lb, sizeof lb, dir, "b.jsonl");
    harness_path(lc, sizeof lc, dir, "c.jsonl");
    /* 230 characters: (230 - 1) / 12 = 19 windows of context 12, 6 batches of 3 */
    static char corpus[231];
    for (size_t i = 0; i < 230; i++) corpus[i] = i % 23 == 22 ? '\n' : (char)('a' + (i * 7) % 26);
    harness_write_file(text, corpus);
    harness_write_file(small, "a short text of thirty bytes.\n");
#define EPOCH_SHAPE "--task", "lm", "--d-model", "16", "--heads", "2", "--dec-layers", "1", \
                    "--d-ff", "32", "--context", "12", "--batch-size", "3", "--val-fraction", "0", \
                    "--seed", "3", "--lr-schedule", "constant" /* the same at any length */
    int rc = harness_run_clformer(&cmd, "train", EPOCH_SHAPE, "--text", text, "--epochs", "2",
                                  "--save", a, "--log", la, NULL);
    if (rc != 0) fail_msg("train --epochs 2 exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "trained to step 12 "));
    rc = harness_run_clformer(&cmd, "train", EPOCH_SHAPE, "--text", text, "--epochs", "1",
                              "--save", b, "--log", lb, NULL);
    if (rc != 0) fail_msg("train --epochs 1 exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd, "train", EPOCH_SHAPE, "--text", text, "--epochs", "2",
                              "--resume", b, "--save", b, "--log", lb, NULL);
    if (rc != 0) fail_msg("train --epochs 2 --resume exited with %d:\n%s", rc, out);
    char one[16][32], two[16][32], other[16][32];
    const size_t n1 = losses(la, one, 16), n2 = losses(lb, two, 16);
    assert_int_equal(n1, 12);
    assert_int_equal(n2, n1);
    for (size_t i = 0; i < n1; i++) assert_string_equal(one[i], two[i]);

    rc = harness_run_clformer(&cmd, "train", EPOCH_SHAPE, "--text", text, "--epochs", "1",
                              "--no-shuffle", "--no-save", "--log", lc, NULL);
    if (rc != 0) fail_msg("train --epochs 1 --no-shuffle exited with %d:\n%s", rc, out);
    assert_int_equal(losses(lc, other, 16), 6);
    assert_string_not_equal(one[0], other[0]);

    rc = harness_run_clformer(&cmd, "train", EPOCH_SHAPE, "--text", small, "--epochs", "1",
                              "--no-save", NULL);
    harness_expect_run(&cmd, rc, 1, "fewer than one batch of 3");
#undef EPOCH_SHAPE
    harness_remove_tree(dir);
}

/* The llama family through the commands: --config llama-small (shrunk),
 * resumed to the same losses as one run, its hf-llama export giving eval's
 * figures and generate's text of the checkpoint. */
static void llama_commands(void **state)
{
    (void)state;
    char dir[64], text[128], a[128], b[128], la[128], lb[128], hf[128];
    static char out[1 << 14], out2[1 << 14];
    const harness_cmd cmd = {out, sizeof out}, cmd2 = {out2, sizeof out2};
    assert_true(harness_temp_dir(dir, sizeof dir, "llama"));
    harness_path(text, sizeof text, dir, "text.txt");
    harness_path(a, sizeof a, dir, "a.safetensors");
    harness_path(b, sizeof b, dir, "b.safetensors");
    harness_path(la, sizeof la, dir, "a.jsonl");
    harness_path(lb, sizeof lb, dir, "b.jsonl");
    harness_path(hf, sizeof hf, dir, "hf");
    harness_write_counted_lines(text, 3000, "row", "a dog ran by", 5);
#define LLAMA_SHAPE "--task", "lm", "--text", text, "--config", "llama-small", "--d-model", "16", \
                    "--heads", "4", "--dec-layers", "1", "--d-ff", "24", "--context", "12", \
                    "--batch-size", "2", "--val-fraction", "0", "--seed", "3", "--warmup", "1"
    int rc = harness_run_clformer(&cmd, "train", LLAMA_SHAPE, "--steps", "4", "--save", a,
                                  "--log", la, NULL);
    if (rc != 0) fail_msg("train --config llama-small exited with %d:\n%s", rc, out);
    assert_non_null(strstr(out, "silu"));
    rc = harness_run_clformer(&cmd, "train", LLAMA_SHAPE, "--steps", "2", "--save", b, "--log",
                              lb, NULL);
    if (rc != 0) fail_msg("train (first half) exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd, "train", "--task", "lm", "--text", text, "--resume", b,
                              "--steps", "4", "--val-fraction", "0", "--save", b, "--overwrite",
                              "--log", lb, NULL);
    if (rc != 0) fail_msg("train --resume exited with %d:\n%s", rc, out);
    char la_losses[8][32], lb_losses[8][32];
    assert_int_equal(losses(la, la_losses, 8), 4);
    assert_int_equal(losses(lb, lb_losses, 8), 4);
    for (int i = 0; i < 4; i++) assert_string_equal(la_losses[i], lb_losses[i]);

    rc = harness_run_clformer(&cmd2, "export", "--format", "hf-llama", "--model", a, "--out", hf,
                              NULL);
    if (rc != 0) fail_msg("export --format hf-llama exited with %d:\n%s", rc, out2);
    assert_non_null(strstr(out2, "LlamaForCausalLM"));
    rc = harness_run_clformer(&cmd, "eval", "--model", a, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd2, "eval", "--model", hf, "--text", text, "--json", NULL);
    if (rc != 0) fail_msg("eval of the export exited with %d:\n%s", rc, out2);
    assert_string_equal(out, out2);
    rc = harness_run_clformer(&cmd, "generate", "--model", a, "--prompt", "row 1", "--max-tokens",
                              "12", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate exited with %d:\n%s", rc, out);
    rc = harness_run_clformer(&cmd2, "generate", "--model", hf, "--prompt", "row 1",
                              "--max-tokens", "12", "--seed", "5", NULL);
    if (rc != 0) fail_msg("generate from the export exited with %d:\n%s", rc, out2);
    assert_string_equal(out, out2);
    /* a gpt-family model is not a Llama */
    rc = harness_run_clformer(&cmd, "export", "--format", "hf-gpt2", "--model", a, "--out", hf,
                              "--overwrite", NULL);
    harness_expect_run(&cmd, rc, 1, "GPT-2 shaped");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(lm_commands),
    cmocka_unit_test(lm_epochs),
    cmocka_unit_test(llama_commands),
};
HARNESS_DEVICE_MAIN("cmd_lm", tests)
