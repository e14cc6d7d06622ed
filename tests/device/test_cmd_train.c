/*
 * `clformer train` as a user runs it: a new language pair learns, writes its
 * log, checkpoint and plot, resumes at the right step with the same losses
 * as an uninterrupted run, and every kind of bad input is one clear error
 * with a non-zero exit.
 */
#include "harness.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

/* Runs `clformer ARGS` (split at spaces) in the test directory on the device
 * under test; returns its exit code, with its stdout and stderr in `out`. */
static int run_tool(const char *args, char *out, size_t cap)
{
    char words[2048], *argv[48], *save = NULL;
    size_t n = 0;
    assert_true(strlen(args) < sizeof words);
    strcpy(words, args);
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        assert_true(n + 1 < sizeof argv / sizeof *argv);
        argv[n++] = w;
    }
    argv[n] = NULL;
    const harness_cmd cmd = {out, cap, .cwd = dir};
    return harness_run_clformer_argv(&cmd, (const char *const *)argv);
}

static void write_file(const char *name, const char *text)
{
    char path[256];
    harness_path(path, sizeof path, dir, name);
    harness_write_file(path, text);
}

/* A small new "language pair" a tiny model learns in a few dozen steps. */
static void make_corpus(int lines)
{
    harness_write_reversal_corpus(dir, "train.src", "train.tgt", lines, 2, 5, 5);
}

static int corpus_lines(void)
{
    /* 16 on simulators: two steps an epoch, so the short runs there still
     * cross an epoch boundary */
    return harness_is_slow() ? 16 : 200;
}

static int setup(void **state)
{
    (void)state;
    if (!harness_temp_dir(dir, sizeof dir, "train")) return -1;
    make_corpus(corpus_lines());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return harness_remove_tree(dir) ? 0 : -1;
}

/* Reads the "loss" of every step line of a JSON-lines log, checking its
 * step and epoch (batches of 8 pairs, so corpus_lines / 8 steps an epoch). */
static size_t read_losses(const char *name, double *loss, size_t cap)
{
    const size_t steps_per_epoch = (size_t)corpus_lines() / 8;
    char path[256];
    harness_path(path, sizeof path, dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        if (!o) fail_msg("%s: a line is not JSON: %s", name, line);
        json_t *l = json_object_get(o, "loss"), *s = json_object_get(o, "step");
        if (l && n < cap) {
            assert_true(json_is_integer(s));
            assert_int_equal(json_integer_value(s), (json_int_t)n + 1);
            /* epochs count from 1, like steps and the progress line, and an
             * epoch's last step still belongs to it */
            json_t *e = json_object_get(o, "epoch");
            assert_true(json_is_integer(e));
            assert_int_equal(json_integer_value(e), (json_int_t)(n / steps_per_epoch) + 1);
            assert_non_null(json_object_get(o, "tokens"));
            assert_non_null(json_object_get(o, "lr"));
            /* what the loss includes (these runs: no label smoothing) */
            json_t *ls = json_object_get(o, "label_smoothing");
            assert_true(json_is_number(ls) && json_number_value(ls) == 0);
            loss[n++] = json_number_value(l);
        }
        json_decref(o);
    }
    fclose(f);
    return n;
}

static const char *model_args(void)
{
    return harness_is_slow()
               ? "--d-model 8 --heads 2 --d-ff 16 --enc-layers 1 --dec-layers 1 --max-len 10"
               : "--config tiny --max-len 10";
}

static void learns_saves_and_resumes_exactly(void **state)
{
    (void)state;
    static char out[1 << 16];
    /* a simulator takes 20-60 s a step (CI runs it beside other tests):
     * 3 steps there still cross the epoch boundary and resume across it */
    const int steps = harness_is_slow() ? 3 : 40, half = steps / 2;
    char args[2048];
    /* one straight run */
    snprintf(args, sizeof args,
             "train --src train.src --tgt train.tgt %s --batch-size 8 --steps %d --lr 2e-3 "
             "--dropout 0.1 --log straight.jsonl --save straight.safetensors --plot loss.png",
             model_args(), steps);
    int rc = run_tool(args, out, sizeof out);
    if (rc != 0) fail_msg("train exited %d:\n%s", rc, out);
    assert_non_null(strstr(out, "saved straight.safetensors"));
    double a[64], b[64];
    assert_int_equal(read_losses("straight.jsonl", a, 64), (size_t)steps);
    if (!harness_is_slow() && !(a[steps - 1] < 0.6 * a[0]))
        fail_msg("the loss did not fall: %.4f at step 1, %.4f at step %d", a[0], a[steps - 1], steps);
    char png[256];
    harness_path(png, sizeof png, dir, "loss.png");
    assert_int_equal(access(png, F_OK), 0);

    /* the same run stopped half way, then resumed */
    snprintf(args, sizeof args,
             "train --src train.src --tgt train.tgt %s --batch-size 8 --steps %d --lr 2e-3 "
             "--dropout 0.1 --log resumed.jsonl --save half.safetensors",
             model_args(), half);
    rc = run_tool(args, out, sizeof out);
    if (rc != 0) fail_msg("train exited %d:\n%s", rc, out);
    /* the same command with --resume added: options equal to the checkpoint's pass */
    snprintf(args, sizeof args,
             "train --src train.src --tgt train.tgt %s --batch-size 8 --steps %d --lr 2e-3 "
             "--dropout 0.1 --log resumed.jsonl --save resumed.safetensors "
             "--resume half.safetensors", model_args(), steps);
    rc = run_tool(args, out, sizeof out);
    if (rc != 0) fail_msg("resume exited %d:\n%s", rc, out);
    char want[64];
    snprintf(want, sizeof want, "resuming half.safetensors at step %d", half);
    assert_non_null(strstr(out, want));
    assert_int_equal(read_losses("resumed.jsonl", b, 64), (size_t)steps);
    for (int i = 0; i < steps; i++)
        if (a[i] != b[i]) fail_msg("step %d: straight loss %.9g, resumed %.9g", i + 1, a[i], b[i]);

    /* resuming to a step the checkpoint has already reached is refused */
    snprintf(args, sizeof args, "train --src train.src --tgt train.tgt --resume half.safetensors "
             "--steps %d", half);
    rc = run_tool(args, out, sizeof out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "is already at step"));
    /* a value that differs from the checkpoint's is refused, naming the
     * option, the checkpoint's value and the given one */
    const struct {
        const char *option, *needle;
    } changed[] = {
        {"--lr 1", "--lr: the checkpoint was trained with 0.002, this command gives 1;"},
        {"--batch-tokens 64", "--batch-tokens: the checkpoint was trained with --batch-size 8, "
                              "this command gives 64;"},
        {"--d-model 16 --heads 2", "--d-model: the checkpoint was trained with "},
        {"--dropout 0.2", "--dropout: the checkpoint was trained with 0.1, this command gives 0.2;"},
        {"--optimizer adamw", "--optimizer: the checkpoint was trained with adam, this command "
                              "gives adamw;"},
    };
    for (size_t i = 0; i < sizeof changed / sizeof *changed; i++) {
        snprintf(args, sizeof args, "train --src train.src --tgt train.tgt --resume "
                 "half.safetensors --steps 50 %s", changed[i].option);
        rc = run_tool(args, out, sizeof out);
        if (rc != 2 || !strstr(out, changed[i].needle))
            fail_msg("'%s': exit %d (want 2), output lacks '%s':\n%s", args, rc,
                     changed[i].needle, out);
    }
    /* a plain model cannot be resumed, only used with --init */
    rc = run_tool("train --src train.src --tgt train.tgt --init straight.safetensors --steps 1 "
                  "--batch-size 4", out, sizeof out);
    if (rc != 0) fail_msg("--init exited %d:\n%s", rc, out);

    /* --init from a training checkpoint starts a new run at step 0 (issue 11,
     * item 5: it kept the step, so --steps 3 from step 20 trained nothing) */
    const int init_steps = harness_is_slow() ? 2 : 3;
    snprintf(args, sizeof args, "train --src train.src --tgt train.tgt --init half.safetensors "
             "--steps %d --batch-size 4 --log init.jsonl --save init.safetensors", init_steps);
    rc = run_tool(args, out, sizeof out);
    snprintf(want, sizeof want, "trained to step %d ", init_steps);
    if (rc != 0 || !strstr(out, want))
        fail_msg("--init from step %d, --steps %d: exit %d:\n%s", half, init_steps, rc, out);
    assert_int_equal(read_losses("init.jsonl", b, 64), (size_t)init_steps);
    /* resuming at an --epochs limit already reached trains nothing: refused.
     * A four-pair corpus makes the epoch one small step (a whole-corpus batch
     * took 400 s on Oclgrind in CI). */
    harness_write_reversal_corpus(dir, "few.src", "few.tgt", 4, 2, 5, 7);
    rc = run_tool("train --src few.src --tgt few.tgt --init half.safetensors --epochs 1 "
                  "--batch-size 100 --save epoch.safetensors", out, sizeof out);
    if (rc != 0 || !strstr(out, "trained to step 1 "))
        fail_msg("--epochs 1 exited %d:\n%s", rc, out);
    rc = run_tool("train --src few.src --tgt few.tgt --resume epoch.safetensors --epochs 1",
                  out, sizeof out);
    if (rc != 1 || !strstr(out, "has already trained 1 epochs"))
        fail_msg("resume at its --epochs: exit %d:\n%s", rc, out);
    /* a language model's run refuses a translation model, naming what trains it */
    rc = run_tool("train --task lm --text few.src --resume epoch.safetensors --steps 2", out,
                  sizeof out);
    if (rc != 1 || !strstr(out, "'epoch.safetensors' is a translation model (it has an "
                                "encoder): train it on sentence pairs (--src and --tgt)"))
        fail_msg("--task lm --resume of a translation checkpoint: exit %d:\n%s", rc, out);

    /* the progress after resuming mid-epoch with --epochs (issue 11, the ETA
     * after resuming): the total is this run's steps to the end of the last
     * epoch, with the checkpoint's batching (2 steps an epoch; the
     * checkpoint is 1 step into epoch 1, so steps 2..4 remain), and the ETA
     * a duration, not '?' */
    rc = run_tool("train --src few.src --tgt few.tgt --init half.safetensors --steps 1 "
                  "--batch-size 2 --save mid.safetensors", out, sizeof out);
    if (rc != 0) fail_msg("--steps 1 exited %d:\n%s", rc, out);
    rc = run_tool("train --src few.src --tgt few.tgt --resume mid.safetensors --epochs 2",
                  out, sizeof out);
    if (rc != 0 || !strstr(out, "step 2/4 | epoch 1 |") || !strstr(out, "step 4/4 | epoch 2 |") ||
        !strstr(out, "trained to step 4 ") || strstr(out, "ETA ?"))
        fail_msg("resume mid-epoch with --epochs 2: exit %d:\n%s", rc, out);
}

/* "Rerun the same command with --resume added" holds for every option of
 * the first command (issue 21): a --warmup equal to the checkpoint's noam
 * warm-up without --lr-schedule, --tokenizer spm with its --vocab-size and
 * --tokenizer-type, --min-freq and --max-vocab; each different value is
 * refused naming the option, none is ignored. */
static void resume_takes_the_first_command_again(void **state)
{
    (void)state;
    /* eleven runs of the command: option checks, the same on every device,
     * and minutes each on a simulator (the resume itself runs there above) */
    if (harness_is_slow()) skip();
    static char out[1 << 16];
    /* ten words, so that a 30-piece SentencePiece vocabulary can be learned */
    FILE *s = NULL, *t = NULL;
    char path[256];
    harness_path(path, sizeof path, dir, "words.src");
    assert_non_null(s = fopen(path, "w"));
    harness_path(path, sizeof path, dir, "words.tgt");
    assert_non_null(t = fopen(path, "w"));
    static const char *const w[] = {"alpha", "beta", "gamma", "delta", "eps",
                                    "zeta",  "eta",  "theta", "iota",  "kappa"};
    for (int i = 0; i < 40; i++) {
        const int a = i % 10, b = (i * 7 + 3) % 10, c = (i * 3 + 1) % 10;
        fprintf(s, "%s %s %s\n", w[a], w[b], w[c]);
        fprintf(t, "%s %s %s\n", w[c], w[b], w[a]);
    }
    fclose(s);
    fclose(t);
    const char *data = "--src words.src --tgt words.tgt --batch-size 8 --max-len 24";
    const char *model = "--d-model 8 --heads 2 --d-ff 16 --enc-layers 1 --dec-layers 1";
    char args[1024];
    struct {
        const char *first, *again; /* the first command's options, the resumed one's */
        int rc;
        const char *needle;
    } cases[] = {
        /* noam: an equal --warmup without --lr-schedule, then a different one */
        {"--lr-schedule noam --warmup 4 --min-freq 1", "--warmup 4 --min-freq 1", 0, NULL},
        {NULL, "--warmup 5", 2, "--warmup: the checkpoint was trained with 4, this command gives 5"},
        {NULL, "--min-freq 13", 2, "--min-freq: the checkpoint was trained with vocabularies of 14 "
                                  "and 14 words, this command gives --min-freq 13"},
        {NULL, "--max-vocab 8", 2, "--max-vocab: the checkpoint was trained with vocabularies of "
                                   "14 and 14 words, this command gives --min-freq 1 --max-vocab 8"},
        {NULL, "--max-vocab 14", 0, NULL},
        {NULL, "--tokenizer spm", 2, "--tokenizer: the checkpoint was trained with word, this "
                                     "command gives spm"},
        /* constant: no warm-up to equal */
        {"--lr 1e-3", "--warmup 4", 2, "--warmup: the checkpoint was trained with the constant "
                                       "schedule (no warm-up), this command gives --warmup 4"},
        /* SentencePiece: the first command again, then a different size and type */
        {"--tokenizer spm --vocab-size 30 --tokenizer-type bpe",
         "--tokenizer spm --vocab-size 30 --tokenizer-type bpe", 0, NULL},
        {NULL, "--tokenizer spm --vocab-size 31", 2,
         "--vocab-size: the checkpoint was trained with 30 and 30 pieces, this command gives 31"},
        {NULL, "--tokenizer spm --vocab-size 30 --tokenizer-type unigram", 2,
         "--tokenizer-type: the checkpoint was trained with bpe, this command gives unigram"},
        {NULL, "--tokenizer word", 2, "--tokenizer: the checkpoint was trained with spm, this "
                                      "command gives word"},
    };
    int run = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].first) {
            run++;
            snprintf(args, sizeof args, "train %s %s %s --steps 1 --save r%d.safetensors", data,
                     model, cases[i].first, run);
            int rc = run_tool(args, out, sizeof out);
            if (rc != 0) fail_msg("'%s' exited %d:\n%s", args, rc, out);
        }
        snprintf(args, sizeof args, "train %s %s %s --steps 2 --resume r%d.safetensors --save again.safetensors --overwrite", data,
                 cases[i].first ? model : "", cases[i].again, run);
        int rc = run_tool(args, out, sizeof out);
        if (rc != cases[i].rc || (cases[i].needle && !strstr(out, cases[i].needle)))
            fail_msg("'%s': exit %d (want %d), output lacks '%s':\n%s", args, rc, cases[i].rc,
                     cases[i].needle ? cases[i].needle : "", out);
    }
}

/* Reads a whole file into malloc'd memory. */
static unsigned char *read_all(const char *name, size_t *n)
{
    char path[256];
    harness_path(path, sizeof path, dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void write_all(const char *name, const unsigned char *b, size_t n)
{
    char path[256];
    harness_path(path, sizeof path, dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* The metadata's checksum as a user meets it (issue 21, item 5): a train
 * state edited from step 1 to 2 is refused by every command that reads the
 * checkpoint; docs/RELIABILITY.md's rule for an intended edit (remove the
 * clformer.header_crc32c entry) makes it load, and `clformer export` then
 * writes a file with fresh sums. */
static void edited_metadata_is_refused_and_export_writes_fresh_sums(void **state)
{
    (void)state;
    /* the checksum is read on the host: a simulator adds only minutes */
    if (harness_is_slow()) skip();
    static char out[1 << 16];
    int rc = run_tool("train --src train.src --tgt train.tgt --d-model 8 --heads 2 --d-ff 16 "
                      "--enc-layers 1 --dec-layers 1 --max-len 10 --batch-size 8 --steps 1 "
                      "--save m.safetensors", out, sizeof out);
    if (rc != 0) fail_msg("train exited %d:\n%s", rc, out);
    size_t n;
    unsigned char *b = read_all("m.safetensors", &n);
    char *header = (char *)b + 8;
    char *step = strstr(header, "\"step\\\":1");
    char *key = strstr(header, "\"clformer.header_crc32c\"");
    assert_non_null(step);
    assert_non_null(key);
    step[strlen("\"step\\\":")] = '2';
    write_all("edited.safetensors", b, n);
    static const char *const readers[] = {
        "export --model edited.safetensors --out e.safetensors",
        "translate --model edited.safetensors --input train.src --output t.txt",
        "train --src train.src --tgt train.tgt --resume edited.safetensors --steps 3",
    };
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++) {
        rc = run_tool(readers[i], out, sizeof out);
        if (rc != 1 || !strstr(out, "does not match its checksum") ||
            !strstr(out, "must also remove the \"clformer.header_crc32c\" entry"))
            fail_msg("'%s' on an edited train state: exit %d:\n%s", readers[i], rc, out);
    }
    memcpy(key, "\"clformer.xxxxxx_crc32c\"", strlen("\"clformer.xxxxxx_crc32c\""));
    write_all("edited.safetensors", b, n);
    free(b);
    rc = run_tool("export --model edited.safetensors --out e.safetensors", out, sizeof out);
    if (rc != 0) fail_msg("export of an edit without the checksum entry: exit %d:\n%s", rc, out);
    b = read_all("e.safetensors", &n);
    assert_non_null(strstr((char *)b + 8, "\"clformer.header_crc32c\":\""));
    free(b);
    rc = run_tool("translate --model e.safetensors --input train.src --output t.txt", out,
                  sizeof out);
    if (rc != 0) fail_msg("translate with the exported file: exit %d:\n%s", rc, out);
}

/* A learning rate far too high: the run stops at the step the loss runs
 * away, names the causes, and saves nothing after it (issue 11, item 4). */
static void diverging_run_stops_and_saves_nothing_bad(void **state)
{
    (void)state;
    /* 20-odd full training steps before the divergence rule fires took over
     * 10 minutes on Oclgrind; real devices run it (cmocka prints SKIPPED), and
     * test_trainer_divergence covers the same stop on every device. */
    if (harness_is_slow()) skip();
    static char out[1 << 16];
    const char *args = "train --src train.src --tgt train.tgt --config tiny --lr 1000 --clip 0 "
                       "--batch-size 8 --steps 400 --save-every 5 --save div.safetensors";
    int rc = run_tool(args, out, sizeof out);
    if (rc != 1 || !strstr(out, "training diverged at step") || !strstr(out, "learning rate"))
        fail_msg("exit %d (want 1), output lacks the divergence message:\n%s", rc, out);
    /* the loss rose from the first steps on: no periodic save happened */
    char path[256];
    harness_path(path, sizeof path, dir, "div.safetensors");
    if (access(path, F_OK) == 0) fail_msg("a diverged run saved %s:\n%s", path, out);
    assert_non_null(strstr(out, "Nothing was saved"));
}

/* Words of a small pair whose two sides share some words and not others. */
static void write_word_pair(const char *src, const char *tgt)
{
    static const char *const w[] = {"alpha", "beta", "gamma", "delta", "eps",
                                    "zeta",  "eta",  "theta", "iota",  "kappa"};
    static const char *const u[] = {"ALPHA", "BETA", "gamma", "DELTA", "eps",
                                    "ZETA",  "eta",  "THETA", "iota",  "KAPPA"};
    char ps[256], pt[256];
    harness_path(ps, sizeof ps, dir, src);
    harness_path(pt, sizeof pt, dir, tgt);
    FILE *s = fopen(ps, "w"), *t = fopen(pt, "w");
    assert_non_null(s);
    assert_non_null(t);
    for (int i = 0; i < 40; i++) {
        const int a = i % 10, b = (i * 7 + 3) % 10, c = (i * 3 + 1) % 10;
        fprintf(s, "%s %s %s\n", w[a], w[b], w[c]);
        fprintf(t, "%s %s %s\n", u[c], u[b], u[a]);
    }
    fclose(s);
    fclose(t);
}

/* Runs `clformer ARGS`, failing the test unless it exits `want`. */
static void expect_run(const char *args, int want, const char *needle)
{
    static char out[1 << 16];
    int rc = run_tool(args, out, sizeof out);
    if (rc != want || (needle && !strstr(out, needle)))
        fail_msg("'%s': exit %d (want %d), output lacks '%s':\n%s", args, rc, want,
                 needle ? needle : "", out);
}

/* --share-all-embeddings: one joint vocabulary (the union of both sides'
 * words; one SentencePiece model of both sides' text), one embedding
 * tensor, and every command that reads a checkpoint takes the result;
 * mixing it with an unshared checkpoint is refused. */
static void shared_embeddings_train_translate_average_and_resume(void **state)
{
    (void)state;
    /* a dozen short runs: option checks, the same on every device (the
     * shared model's numbers are test_model_parity's) */
    if (harness_is_slow()) skip();
    write_word_pair("w.src", "w.tgt");
    const char *data = "--src w.src --tgt w.tgt --batch-size 8 --max-len 24 --d-model 8 --heads 2 "
                       "--d-ff 16 --enc-layers 1 --dec-layers 1";
    char args[1024], path[256];
    snprintf(args, sizeof args, "train %s --share-all-embeddings --steps 2 --save s.safetensors", data);
    expect_run(args, 0, NULL);
    harness_path(path, sizeof path, dir, "s.safetensors");
    clformer_model *m;
    assert_ok(clformer_model_load(hctx(), path, &m));
    const clformer_config *c = clformer_model_config(m);
    assert_true(c->share_all_embed && c->share_tgt_embed);
    /* 4 specials + 10 source words + the 6 target words the source lacks */
    assert_int_equal(c->src_vocab, 20);
    assert_int_equal(c->tgt_vocab, 20);
    const char *const *sv = clformer_model_src_vocab(m), *const *tv = clformer_model_tgt_vocab(m);
    for (int i = 0; i < c->src_vocab; i++) assert_string_equal(sv[i], tv[i]);
    /* one tensor under three names */
    const size_t n = (size_t)c->tgt_vocab * (size_t)c->d_model;
    float *a = hmalloc(n * 4), *b = hmalloc(n * 4);
    assert_ok(clformer_model_read_tensor(m, "src_embed.weight", false, a, n));
    assert_ok(clformer_model_read_tensor(m, "generator.weight", false, b, n));
    assert_memory_equal(a, b, n * 4);
    free(a), free(b);
    clformer_model_free(m);

    /* resumed, translated, scored, exported, averaged */
    snprintf(args, sizeof args, "train %s --share-all-embeddings --steps 4 --resume s.safetensors --save s4.safetensors", data);
    expect_run(args, 0, NULL);
    /* --min-freq given again: the joint vocabulary is rebuilt and compared */
    snprintf(args, sizeof args, "train %s --min-freq 1 --steps 3 --resume s.safetensors --save s3.safetensors", data);
    expect_run(args, 0, NULL);
    snprintf(args, sizeof args, "train %s --max-vocab 10 --steps 3 --resume s.safetensors --save s3.safetensors", data);
    expect_run(args, 2, "--max-vocab: the checkpoint was trained with vocabularies of 20 and 20 words");
    expect_run("translate --model s4.safetensors --input w.src --output w.hyp", 0, NULL);
    expect_run("eval --model s4.safetensors --src w.src --ref w.tgt", 0, "BLEU");
    expect_run("export --model s4.safetensors --out plain.safetensors", 0, NULL);
    expect_run("translate --model plain.safetensors --input w.src --output w2.hyp", 0, NULL);
    expect_run("average --out avg.safetensors s.safetensors s4.safetensors", 0, NULL);
    expect_run("translate --model avg.safetensors --input w.src --output w3.hyp", 0, NULL);

    /* a joint SentencePiece model of both sides */
    snprintf(args, sizeof args, "train %s --share-all-embeddings --tokenizer spm --vocab-size 30 "
             "--tokenizer-type bpe --steps 1 --save spm.safetensors", data);
    expect_run(args, 0, NULL);
    expect_run("translate --model spm.safetensors --input w.src --output w4.hyp", 0, NULL);

    /* what cannot be shared, each one clear line */
    snprintf(args, sizeof args, "train %s --tie-embeddings --steps 1 --save u.safetensors", data);
    expect_run(args, 0, NULL);
    snprintf(args, sizeof args, "train %s --share-all-embeddings --steps 2 --resume u.safetensors --save x.safetensors", data);
    expect_run(args, 2, "--share-all-embeddings: the checkpoint was trained with separate source "
                        "and target embeddings");
    snprintf(args, sizeof args, "train %s --share-all-embeddings --steps 1 --init u.safetensors --save x.safetensors", data);
    expect_run(args, 2, "the model's shape comes from --init");
    /* two different SentencePiece models, one per side */
    static const char *const side_a[] = {"alpha beta gamma", "delta eps zeta", "eta theta iota kappa"};
    static const char *const side_b[] = {"ALPHA BETA gamma", "DELTA eps ZETA", "eta THETA iota KAPPA"};
    for (int k = 0; k < 2; k++) {
        void *bytes;
        size_t size;
        assert_ok(clformer_spm_train(k ? side_b : side_a, 3, 30, "bpe", &bytes, &size));
        harness_path(path, sizeof path, dir, k ? "b.model" : "a.model");
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, size, f), size);
        fclose(f);
        clformer_free(bytes);
    }
    snprintf(args, sizeof args, "train %s --share-all-embeddings --tokenizer spm --src-tokenizer-model "
             "a.model --tgt-tokenizer-model b.model --steps 1 --save x.safetensors", data);
    expect_run(args, 2, "--src-tokenizer-model and --tgt-tokenizer-model differ");
    expect_run("train --task lm --text w.src --share-all-embeddings --steps 1 --no-save", 2,
               "--share-all-embeddings is for translation");
}

/* The average of a shared and an unshared model of equal sizes (a copying
 * task: one word list on both sides) is refused. */
static void average_refuses_mixing_shared_and_unshared(void **state)
{
    (void)state;
    if (harness_is_slow()) skip();
    const char *data = "--src train.src --tgt train.src --batch-size 8 --max-len 10 --d-model 8 "
                       "--heads 2 --d-ff 16 --enc-layers 1 --dec-layers 1 --steps 1";
    char args[1024];
    snprintf(args, sizeof args, "train %s --share-all-embeddings --save s.safetensors", data);
    expect_run(args, 0, NULL);
    snprintf(args, sizeof args, "train %s --tie-embeddings --save u.safetensors", data);
    expect_run(args, 0, NULL);
    expect_run("average --out avg.safetensors s.safetensors u.safetensors", 1,
               "config's share_all_embed differs");
}

static void bad_input_is_one_clear_error(void **state)
{
    (void)state;
    char out[8192];
    write_file("short.tgt", "one line\n");
    write_file("empty.src", "");
    write_file("empty.tgt", "");
    write_file("junk.safetensors", "this is not a checkpoint at all, just text\n");
    const struct {
        const char *args;
        int rc;
        const char *needle;
    } cases[] = {
        {"train --src nosuch.src --tgt train.tgt --steps 1", 1, "nosuch.src"},
        {"train --src train.src --tgt short.tgt --steps 1", 1, "short.tgt"},
        {"train --src empty.src --tgt empty.tgt --steps 1", 1, "empty"},
        {"train --src train.src --tgt train.tgt --steps 1 --d-model 30 --heads 4", 2, "d_model % n_heads"},
        {"train --src train.src --tgt train.tgt --steps abc", 2, "--steps expects a whole number"},
        {"train --src train.src --tgt train.tgt --steps 1 --lr -1", 2, "--lr must be between"},
        {"train --src train.src --tgt train.tgt --steps 1 --frobnicate", 2, "unknown option '--frobnicate'"},
        {"train --src train.src --tgt train.tgt", 2, "--steps and --epochs"},
        {"train --src train.src --tgt train.tgt --steps 1 --init junk.safetensors", 1, "junk.safetensors"},
        {"train --src train.src --tgt train.tgt --steps 1 --resume nosuch.safetensors", 1, "nosuch.safetensors"},
        {"train --src train.src --tgt train.tgt --steps 1 --batch-size 2 --batch-tokens 100", 2, "not both"},
        /* a preset of the other task */
        {"train --src train.src --tgt train.tgt --steps 1 --config gpt-mini", 2, "--config gpt-mini is a decoder-only language model: add --task lm"},
        /* output paths are checked before training, not after it */
        {"train --src train.src --tgt train.tgt --steps 1 --save nosuch/m.safetensors", 1, "--save 'nosuch/m.safetensors': its folder"},
        {"train --src train.src --tgt train.tgt --steps 1 --plot nosuch/loss.png", 1, "--plot 'nosuch/loss.png': its folder"},
        /* options that would silently do nothing */
        {"train --src train.src --tgt train.tgt --steps 1 --eval-every 5", 2, "--eval-every needs validation data"},
        {"train --src train.src --tgt train.tgt --steps 1 --warmup 100", 2, "--warmup applies to --lr-schedule noam"},
        /* a directory that takes no new files: found by creating the real temp file */
        {"train --src train.src --tgt train.tgt --steps 1 --save /proc/m.safetensors", 1, "cannot write in the folder '/proc'"},
        /* an output that is an input (issue 11, item 2) */
        {"train --src train.src --tgt train.tgt --steps 1 --save train.src", 2, "same file as the input --src"},
        {"train --src train.src --tgt train.tgt --steps 1 --log ./train.tgt", 2, "same file as the input --tgt"},
        {"train --src train.src --tgt train.tgt --steps 1 --plot train.src", 2, "same file as the input --src"},
        /* SentencePiece options */
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm", 2, "needs --vocab-size"},
        {"train --src train.src --tgt train.tgt --steps 1 --vocab-size 100", 2, "go with --tokenizer spm"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm --vocab-size 100 --tokenizer-model x.model", 2, "needs --vocab-size N (learn one) or"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm --src-tokenizer-model x.model", 2, "go together"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm --tokenizer-model x.model --tokenizer-type bpe", 2, "goes with --vocab-size"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm --tokenizer-model junk.safetensors", 1, "not a SentencePiece model"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm --tokenizer-model nosuch.model", 1, "nosuch.model"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer spm --vocab-size 9", 1, "larger --vocab-size"},
        {"train --src train.src --tgt train.tgt --steps 1 --tokenizer sentencepiece", 2, "word|spm"},
        /* a time limit is a positive duration with an optional unit */
        {"train --src train.src --tgt train.tgt --steps 1 --max-time 2d", 2, "--max-time 2d is not a duration"},
        {"train --src train.src --tgt train.tgt --steps 1 --max-time 0", 2, "--max-time 0 is not a duration"},
        {"train --src train.src --tgt train.tgt --steps 1 --max-time -5m", 2, "give seconds (7200)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = run_tool(cases[i].args, out, sizeof out);
        if (rc != cases[i].rc || !strstr(out, cases[i].needle))
            fail_msg("'%s': exit %d (want %d), output lacks '%s':\n%s", cases[i].args, rc,
                     cases[i].rc, cases[i].needle, out);
        if (strstr(out, "Segmentation") || strstr(out, "Aborted")) fail_msg("crash: %s", out);
    }
    assert_int_equal(run_tool("train --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: clformer train"));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(bad_input_is_one_clear_error, setup, teardown),
    cmocka_unit_test_setup_teardown(learns_saves_and_resumes_exactly, setup, teardown),
    cmocka_unit_test_setup_teardown(diverging_run_stops_and_saves_nothing_bad, setup, teardown),
    cmocka_unit_test_setup_teardown(resume_takes_the_first_command_again, setup, teardown),
    cmocka_unit_test_setup_teardown(edited_metadata_is_refused_and_export_writes_fresh_sums, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(shared_embeddings_train_translate_average_and_resume, setup,
                                    teardown),
    cmocka_unit_test_setup_teardown(average_refuses_mixing_shared_and_unshared, setup, teardown),
};
HARNESS_DEVICE_MAIN("clformer train", tests)
