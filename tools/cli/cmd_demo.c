/* `clformer demo`: the README's main job. Trains a small Transformer on a
 * built-in artificial language pair (no files, no downloads), then shows
 * translations of held-out sentences beside their references and the BLEU
 * of the held-out set. */
#include "cli.h"
#include "clformer.h"
#include "cli_files.h"
#include "commands.h"
#include "context_open.h"
#include "train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int show_results(clformer_model *model, const clformer_parallel_text *test, long examples)
{
    const size_t n = clformer_parallel_text_size(test);
    const char **src = malloc(n * sizeof *src), **ref = malloc(n * sizeof *ref);
    char **hyps = calloc(n, sizeof *hyps);
    clformer_decode_options dec;
    clformer_decode_options_default(&dec);
    if (!src || !ref || !hyps) {
        free(src);
        free(ref);
        free(hyps);
        cli_error("demo", "out of host memory");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        src[i] = clformer_parallel_text_source(test, i);
        ref[i] = clformer_parallel_text_target(test, i);
    }
    clformer_session *session;
    clformer_status st = clformer_session_create(model, &session);
    if (st == CLFORMER_OK)
        st = clformer_translate_sentences(session, src, n, &dec, 64, hyps, NULL, NULL, NULL);
    clformer_session_free(session);
    clformer_bleu b;
    if (st == CLFORMER_OK) st = clformer_bleu_corpus((const char *const *)hyps, ref, n,
                                                     CLFORMER_BLEU_TOKENIZE_NONE, &b);
    if (st == CLFORMER_OK) {
        size_t exact = 0;
        for (size_t i = 0; i < n; i++) exact += !strcmp(hyps[i], ref[i]);
        printf("\nheld-out sentences (never seen in training):\n");
        for (long i = 0; i < examples && (size_t)i < n; i++)
            printf("  source     %s\n  reference  %s\n  clformer   %s  %s\n\n", src[i], ref[i],
                   hyps[i], strcmp(hyps[i], ref[i]) ? "(differs)" : "(exact)");
        char line[256];
        clformer_bleu_format(&b, line, sizeof line);
        printf("held-out set: %zu sentences, %zu translated exactly\n%s\n", n, exact, line);
    }
    for (size_t i = 0; hyps && i < n; i++) free(hyps[i]);
    free(hyps);
    free(src);
    free(ref);
    if (st != CLFORMER_OK) {
        cli_runtime_error("demo", "translating the held-out set");
        return 1;
    }
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    long steps = 400, seed = 1, examples = 5, train_pairs = CLFORMER_DEMO_TRAIN_PAIRS,
         test_pairs = CLFORMER_DEMO_TEST_PAIRS;
    const char *save = NULL, *log = NULL, *plot = NULL;
    bool describe = false, overwrite = false;
    const cli_option options[] = {
        {"--steps", CLI_INT, &steps, "N", "training steps of 64 sentence pairs (default 400)", 1, 1000000},
        {"--seed", CLI_INT, &seed, "N", "seed of the data, the model and dropout (default 1)", 0, 1L << 40},
        {"--train-pairs", CLI_INT, &train_pairs, "N", "training sentence pairs to generate (default 12000)", 100, 900000},
        {"--test-pairs", CLI_INT, &test_pairs, "N", "held-out sentence pairs (default 200)", 1, 100000},
        {"--examples", CLI_INT, &examples, "N", "held-out translations to print (default 5)", 0, 200},
        {"--save", CLI_STRING, &save, "FILE", "keep the trained model (a training checkpoint)"},
        {"--log", CLI_STRING, &log, "FILE", "metrics as JSON lines"},
        {"--plot", CLI_STRING, &plot, "FILE.png", "draw the loss curves at the end"},
        {"--describe", CLI_FLAG, &describe, NULL, "print the two made-up languages' rules and exit"},
        OVERWRITE_CLI_OPTION(overwrite),
    };
    const cli_spec spec = {
        "demo",
        "Train a small Transformer (d_model 64, 2+2 layers) on a built-in artificial language\n"
        "pair whose translation reorders words and makes them agree across a sentence, then\n"
        "translate held-out sentences and report their BLEU. Needs no files or downloads.",
        "clformer demo [--steps N] [--seed N] [--save FILE]",
        "The device is CLFORMER_DEVICE's choice (see clformer devices).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (describe) {
        printf("%s\n", clformer_demo_task_description());
        return 0;
    }

    clformer_train_options o;
    clformer_train_options_default(&o);
    o.batching.batch_size = 64;
    o.batching.batch_tokens = 0;
    o.batching.seed = (uint64_t)seed;
    o.config.d_model = 64, o.config.n_heads = 4, o.config.d_ff = 256;
    o.config.n_enc_layers = o.config.n_dec_layers = 2;
    o.config.max_len = 16; /* 12 words + <sos> + <eos>, with room */
    o.config.dropout = 0.1f;
    o.seed = (uint64_t)seed;
    o.lr = 1e-3f;
    o.steps = (uint64_t)steps;
    o.bleu_sentences = 0; /* the held-out BLEU is computed below, on every sentence */
    o.save_path = save, o.log_path = log;
    o.overwrite = overwrite;
    /* default names never replace an earlier run's files */
    char interrupted[4096], plot_log[4096];
    if (!save && !cli_files_unused("demo", "clformer-interrupted.safetensors", interrupted,
                                   sizeof interrupted))
        return 1;
    o.stop_save_path = save ? save : interrupted;
    if (plot && !log) {
        char named[4096];
        snprintf(named, sizeof named, "%s.jsonl", plot);
        if (overwrite) snprintf(plot_log, sizeof plot_log, "%s", named);
        else if (!cli_files_unused("demo", named, plot_log, sizeof plot_log)) return 1;
        o.log_path = plot_log;
    }
    cli_files files;
    if (!cli_files_begin(&files, "demo", overwrite)) return 1;
    int rc = clformer_train_files(files.door, &o) == CLFORMER_OK
                 ? (cli_files_write(&files, "--plot", plot, CLFORMER_WRITE_STREAM)
                        ? cli_files_open(&files)
                        : 1)
                 : (cli_runtime_error("demo", NULL), 1);
    if (rc >= 0) {
        cli_files_end(&files);
        return rc;
    }
    rc = 0;
    clformer_parallel_text *train = NULL, *test = NULL;
    if (clformer_demo_task((uint64_t)seed, (size_t)train_pairs, (size_t)test_pairs, &train,
                           &test) != CLFORMER_OK) {
        cli_runtime_error("demo", "generating the task");
        cli_files_end(&files);
        return 1;
    }
    clformer_context *ctx = NULL;
    if (cli_context_create(NULL, &ctx) != CLFORMER_OK) {
        cli_runtime_error("demo", "opening the device");
        rc = 1;
    }
    clformer_model *model = NULL;
    clformer_train_result res;
    if (rc == 0) {
        printf("clformer demo: %zu sentence pairs of a made-up language pair; the translation "
               "moves adjectives after nouns and verbs to the end, and makes adjectives, nouns "
               "and verbs agree (--describe for the rules)\n", clformer_parallel_text_size(train));
        o.train_text = train;
        o.val_text = test;
        rc = train_run("demo", ctx, o, plot, NULL, NULL, &model, &res);
    }
    if (rc == 0) rc = show_results(model, test, examples);
    if (rc == 0)
        printf("trained %llu steps in %.0fs on %s (%.0f target tokens/s)\n",
               (unsigned long long)res.steps, res.seconds, clformer_context_device(ctx)->name,
               res.tokens_per_s);
    clformer_model_free(model);
    clformer_context_free(ctx);
    clformer_parallel_text_free(train);
    clformer_parallel_text_free(test);
    cli_files_end(&files);
    return rc;
}
