/*
 * `clformer generate`: continue prompts with a decoder-only language model,
 * one prompt printed token by token as it comes, a batch of prompts (and
 * samples) row by row at the end (one-pass prefill and KV-cache decoding on
 * the device, seeded sampling). `clformer eval --text`: a language model's loss,
 * perplexity and bits per byte on a text (eval_lm, reached from cmd_eval).
 */
#include "cli.h"
#include "clformer.h"
#include "clformer_util.h"
#include "commands.h"
#include "context_open.h"
#include "lm_stream.h"
#include "translator.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;

static void on_interrupt(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct {
    lm_stream text; /* one prompt, one sample, as text: printed as it comes */
    size_t made, rows, steps, max_tokens;
    bool stream, progress;
    clformer_status st;
    int32_t eos;    /* the model's end of text (-1: none) */
    bool *ended;    /* rows that made it */
    size_t n_ended;
} stream;

/* Each token of a batch's rows: a single prompt's is printed at once
 * (lm_stream.h); a batch's rows are printed at the end, with a step counter
 * on a terminal. Stops on Ctrl-C, and once every row has made the model's
 * end of text (a row's tokens after it are dropped: cut_at_eos). */
static bool on_token(size_t row, int32_t token, void *user)
{
    stream *s = user;
    if (s->ended[row]) return true;
    s->made++;
    if (token == s->eos) {
        s->ended[row] = true;
        return ++s->n_ended < s->rows && !stop_requested;
    }
    if (s->stream) {
        s->st = lm_stream_push(&s->text, token);
        if (s->st != CLFORMER_OK) return false;
    } else if (row + 1 == s->rows && s->progress) {
        fprintf(stderr, "\rgenerating %zu rows: token %zu of %zu", s->rows, ++s->steps,
                s->max_tokens);
        fflush(stderr);
    }
    return !stop_requested;
}

/* The model (a checkpoint or a Hugging Face GPT-2 or Llama directory) on the
 * device, for `command` (which refuses a translation model). */
static clformer_status open_model(const char *command, const char *path, clformer_context **ctx,
                                  clformer_model **m)
{
    clformer_status st = cli_context_create(NULL, ctx);
    if (st == CLFORMER_OK) st = clformer_model_load(*ctx, path, m);
    char use[4200];
    snprintf(use, sizeof use, "%s --model '%s'", command, path);
    if (st == CLFORMER_OK) st = clformer_model_check_task(*m, CLFORMER_TASK_LM, use);
    return st;
}

/* The prompts: the --prompt values, then the lines of --prompt-file (a
 * trailing '\r' dropped, empty lines skipped). Pointers into argv and
 * *lines (free with clformer_lines_free). */
static int gather_prompts(const cli_strings *given, const char *file, char ***lines,
                          const char ***prompts, size_t *n)
{
    size_t n_lines = 0;
    *lines = NULL;
    if (file && clformer_lines_read(file, lines, &n_lines) != CLFORMER_OK) {
        cli_runtime_error("generate", "--prompt-file");
        return 1;
    }
    *prompts = malloc((given->n + n_lines + 1) * sizeof **prompts);
    if (!*prompts) {
        cli_error("generate", "out of host memory");
        return 1;
    }
    *n = 0;
    for (size_t i = 0; i < given->n; i++) {
        if (!*given->item[i]) {
            cli_error("generate", "--prompt %zu is empty: give at least one character to continue",
                      i + 1);
            return EXIT_USAGE;
        }
        (*prompts)[(*n)++] = given->item[i];
    }
    for (size_t i = 0; i < n_lines; i++) {
        char *line = (*lines)[i];
        const size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[len - 1] = '\0';
        if (*line) (*prompts)[(*n)++] = line;
    }
    if (*n == 0) {
        if (file)
            cli_error("generate", "'%s' holds no prompt (every line is empty): write one prompt "
                      "per line", file);
        else
            cli_error("generate", "--prompt or --prompt-file is required");
        return EXIT_USAGE;
    }
    return 0;
}

/* The text row r's tokens add to its prompt's: the new part of the decoded
 * prompt + continuation (a token's text can depend on the one before it),
 * or the continuation decoded alone when the prompt's text is not a prefix. */
static clformer_status continuation(const clformer_model *m, const int32_t *prompt, size_t n,
                                    const int32_t *made, size_t count, char **text)
{
    int32_t *all = malloc((n + count + 1) * sizeof *all);
    if (!all) return clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    memcpy(all, prompt, n * sizeof *all);
    if (count) memcpy(all + n, made, count * sizeof *all);
    char *before = NULL, *after = NULL;
    clformer_status st = clformer_lm_decode(m, all, n, &before);
    if (st == CLFORMER_OK) st = clformer_lm_decode(m, all, n + count, &after);
    free(all);
    const size_t k = before ? strlen(before) : 0;
    if (st == CLFORMER_OK && !strncmp(before, after, k))
        memmove(after, after + k, strlen(after + k) + 1);
    else if (st == CLFORMER_OK) {
        clformer_free(after);
        after = NULL;
        st = clformer_lm_decode(m, made, count, &after);
    }
    clformer_free(before);
    if (st == CLFORMER_OK) *text = after;
    else clformer_free(after);
    return st;
}

/* Each row's tokens up to the model's end of text (that token left out). */
static void cut_at_eos(int32_t eos, const int32_t *out, size_t rows, size_t max_tokens,
                       size_t *counts)
{
    for (size_t r = 0; eos >= 0 && r < rows; r++)
        for (size_t i = 0; i < counts[r]; i++)
            if (out[r * max_tokens + i] == eos) {
                counts[r] = i;
                break;
            }
}

/* The rows: each prompt and its continuation, as text or as one JSON object. */
static clformer_status print_rows(const clformer_model *m, const char *const *prompts,
                                  int32_t *const *ids, const size_t *lengths, size_t n_prompts,
                                  size_t samples, const int32_t *out, const size_t *counts,
                                  size_t max_tokens, bool json, double seconds)
{
    json_t *rows = json ? json_array() : NULL;
    size_t total = 0;
    for (size_t r = 0; r < n_prompts * samples; r++) {
        const size_t p = r / samples;
        char *text = NULL;
        const clformer_status st =
            continuation(m, ids[p], lengths[p], out + r * max_tokens, counts[r], &text);
        if (st != CLFORMER_OK) {
            json_decref(rows);
            return st;
        }
        total += counts[r];
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "prompt_index", json_integer((json_int_t)p));
            json_object_set_new(o, "sample", json_integer((json_int_t)(r % samples)));
            json_object_set_new(o, "prompt", json_string(prompts[p]));
            /* a row stopped early may end inside a character (byte-level vocabularies) */
            json_t *t = json_string(text);
            json_object_set_new(o, "text", t ? t : json_stringn_nocheck(text, strlen(text)));
            json_object_set_new(o, "tokens", json_integer((json_int_t)counts[r]));
            json_array_append_new(rows, o);
        } else {
            if (samples > 1) printf("=== prompt %zu, sample %zu ===\n", p + 1, r % samples + 1);
            else printf("=== prompt %zu ===\n", p + 1);
            printf("%s%s\n\n", prompts[p], text);
        }
        clformer_free(text);
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "rows", rows);
        json_object_set_new(o, "tokens", json_integer((json_int_t)total));
        json_object_set_new(o, "seconds", cli_json_number(seconds));
        json_object_set_new(o, "tokens_per_second",
                            cli_json_number(seconds > 0 ? (double)total / seconds : NAN));
        if (!cli_print_json(o))
            return clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    fflush(stdout);
    return CLFORMER_OK;
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt_file = NULL;
    cli_strings given = {{NULL}, 0};
    long max_tokens = 200, top_k = 0, seed = 1, samples = 1;
    double temperature = 0.8, top_p = 1.0;
    bool greedy = false, json = false;
    const char *precision = "fp32";
    const cli_option options[] = {
        {"--model", CLI_STRING, &model, "MODEL", "a language model: checkpoint or Hugging Face GPT-2 or Llama directory (required)"},
        PRECISION_CLI_OPTION(precision),
        {"--prompt", CLI_STRINGS, &given, "TEXT", "a text to continue; up to 8 times for a batch (\"\\n\" style escapes are not read: pass a real newline)"},
        {"--prompt-file", CLI_STRING, &prompt_file, "FILE", "one prompt per line (its newline not included; empty lines skipped), after the --prompt ones"},
        {"--num-samples", CLI_INT, &samples, "N", "continuations of each prompt, each with its own draws (default 1)", 1, 4096},
        {"--max-tokens", CLI_INT, &max_tokens, "N", "tokens to generate (default 200)", 1, 1 << 24},
        {"--temperature", CLI_DOUBLE, &temperature, "T", "logits divided by T before sampling (default 0.8; 0: greedy)", 0, 100},
        {"--top-k", CLI_INT, &top_k, "K", "sample among the K most likely tokens (default 0: all; 1: greedy)", 0, 1 << 24},
        {"--top-p", CLI_DOUBLE, &top_p, "P", "then among the fewest whose probabilities reach P (default 1: all)", 1e-6, 1},
        {"--seed", CLI_INT, &seed, "N", "seed of the draws: the same seed gives the same text (default 1)", 0, 0},
        {"--greedy", CLI_FLAG, &greedy, NULL, "always the most likely token (as --temperature 0)"},
        {"--json", CLI_FLAG, &json, NULL, "one JSON object at the end: each row's prompt, text and token count, and tokens/s"},
    };
    const cli_spec spec = {
        "generate",
        "Continue prompts with a decoder-only language model (train --task lm, or a Hugging\n"
        "Face GPT-2 directory). Each prompt goes through the model in one forward pass, then\n"
        "tokens come one at a time with key/value caches on the device; several prompts (and\n"
        "--num-samples of each) run as one batch, each row at its own positions (no padding).\n"
        "Each token is drawn on the host from its logits with a counter-based generator:\n"
        "draw n of sample k uses (seed, k, n), so a seed repeats its text, and a prompt's\n"
        "text in a batch is the text it gets alone. One prompt is printed token by token as\n"
        "it comes; a batch prints each prompt's text, in order, when all are done.\n"
        "Ctrl-C stops after the current token and prints what came (exit 130). Prompts are\n"
        "encoded with the model's own tokenizer (characters, bytes, SentencePiece or GPT-2's\n"
        "BPE, from the checkpoint or the directory's vocab.json + merges.txt; a Hugging Face\n"
        "directory's tokenizer.json or tokenizer.model puts BOS first as transformers does).\n"
        "A row ends at the model's end of text, left out of the text: a Hugging Face\n"
        "tokenizer's EOS, GPT-2 BPE's <|endoftext|>. A UTF-8 character split over tokens is\n"
        "printed once complete.",
        "clformer generate --model MODEL (--prompt TEXT ... | --prompt-file FILE)\n"
        "       [--num-samples N] [--max-tokens N] [--temperature T] [--top-k K] [--top-p P]\n"
        "       [--seed N] [--json]",
        "examples:\n"
        "  clformer generate --model lm.safetensors --prompt \"ROMEO:\" --max-tokens 200 \\\n"
        "      --temperature 0.8 --top-k 40 --seed 1\n"
        "  clformer generate --model lm.safetensors --prompt \"ROMEO:\" --prompt \"JULIET:\" \\\n"
        "      --num-samples 4 --max-tokens 100 --json",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model) {
        cli_error("generate", "--model is required");
        return EXIT_USAGE;
    }
    if (given.n == 0 && !prompt_file) {
        cli_error("generate", "--prompt or --prompt-file is required");
        return EXIT_USAGE;
    }
    char **lines = NULL;
    const char **prompts = NULL;
    size_t n_prompts = 0;
    int rc = gather_prompts(&given, prompt_file, &lines, &prompts, &n_prompts);
    if (rc != 0) {
        free(prompts);
        clformer_lines_free(lines);
        return rc;
    }
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_session *s = NULL;
    int32_t **ids = calloc(n_prompts, sizeof *ids), *out = NULL;
    size_t *lengths = calloc(n_prompts, sizeof *lengths), *counts = NULL;
    const size_t rows = n_prompts * (size_t)samples;
    clformer_status st = ids && lengths ? CLFORMER_OK
                                        : clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY,
                                                             "out of host memory");
    if (st == CLFORMER_OK) st = open_model("generate", model, &ctx, &m);
    for (size_t p = 0; p < n_prompts && st == CLFORMER_OK; p++)
        st = clformer_lm_encode(m, prompts[p], strlen(prompts[p]), &ids[p], &lengths[p]);
    if (st == CLFORMER_OK) st = clformer_session_create(m, &s);
    if (st == CLFORMER_OK) st = session_set_precision_name(s, precision);
    if (st == CLFORMER_OK) {
        out = malloc(rows * (size_t)max_tokens * sizeof *out);
        counts = calloc(rows, sizeof *counts);
        if (!out || !counts) st = clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    clformer_sample_options o;
    clformer_sample_options_default(&o);
    o.max_tokens = (int)max_tokens;
    o.temperature = greedy ? 0.0f : (float)temperature;
    o.top_k = (int)top_k;
    o.top_p = (float)top_p;
    o.seed = (uint64_t)seed;
    /* one prompt, one sample, as text: streamed token by token */
    stream progress = {{0}, 0, rows, 0, (size_t)max_tokens, rows == 1 && !json,
                       !json && isatty(STDERR_FILENO), CLFORMER_OK,
                       m ? clformer_lm_eos(m) : -1, calloc(rows, sizeof(bool)), 0};
    if (st == CLFORMER_OK && !progress.ended)
        st = clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == CLFORMER_OK) {
        /* Ctrl-C: finish the token under way, print what came, exit 130 */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (progress.stream) {
            fputs(prompts[0], stdout);
            fflush(stdout);
            st = lm_stream_start(&progress.text, m, stdout, ids[0], lengths[0]);
        }
        const double t0 = cli_now_s();
        if (st == CLFORMER_OK)
            st = clformer_session_generate_batch(s, (const int32_t *const *)ids, lengths,
                                                 n_prompts, (size_t)samples, &o, on_token,
                                                 &progress, out, counts);
        const double seconds = cli_now_s() - t0;
        if (st == CLFORMER_OK) st = progress.st;
        if (progress.progress && progress.steps) fputc('\n', stderr);
        if (progress.stream) {
            const clformer_status end = lm_stream_finish(&progress.text);
            if (st == CLFORMER_OK) st = end;
            putchar('\n');
            fflush(stdout);
        } else if (st == CLFORMER_OK) {
            cut_at_eos(progress.eos, out, rows, (size_t)max_tokens, counts);
            st = print_rows(m, prompts, ids, lengths, n_prompts, (size_t)samples, out, counts,
                            (size_t)max_tokens, json, seconds);
        }
    }
    rc = 0;
    if (st != CLFORMER_OK) {
        cli_runtime_error("generate", NULL);
        rc = 1;
    } else if (stop_requested) {
        fprintf(stderr, "clformer generate: interrupted after %zu tokens\n", progress.made);
        rc = EXIT_INTERRUPTED;
    }
    for (size_t p = 0; ids && p < n_prompts; p++) clformer_free(ids[p]);
    free(ids);
    free(lengths);
    free(out);
    free(counts);
    free(progress.ended);
    free(prompts);
    clformer_lines_free(lines);
    clformer_session_free(s);
    clformer_model_free(m);
    clformer_context_free(ctx);
    return rc;
}

int eval_lm(int argc, char **argv)
{
    const char *model = NULL, *text = NULL;
    long batch = 16;
    bool json = false;
    const char *precision = "fp32";
    const cli_option options[] = {
        PRECISION_CLI_OPTION(precision),
        {"--model", CLI_STRING, &model, "MODEL", "a language model: checkpoint or Hugging Face GPT-2 or Llama directory (required)"},
        {"--text", CLI_STRING, &text, "FILE", "the text to score (required)"},
        {"--batch-size", CLI_INT, &batch, "B", "windows per forward pass (default 16)", 1, 1 << 20},
        {"--json", CLI_FLAG, &json, NULL, "one JSON object instead of text"},
    };
    const cli_spec spec = {
        "eval",
        "A language model's loss on a text: the mean cross-entropy per token (nats), the\n"
        "perplexity exp(loss), and bits per byte (the summed loss in bits over the text's\n"
        "bytes, comparable across tokenizers). The text is read in consecutive windows of\n"
        "the model's context; each token after the first is scored once.",
        "clformer eval --model MODEL --text FILE [--batch-size B] [--json]",
        NULL, options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model || !text) {
        cli_error("eval", "--model and --text are required");
        return EXIT_USAGE;
    }
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_session *s = NULL;
    int32_t *ids = NULL;
    size_t n = 0, bytes = 0;
    clformer_lm_score score;
    clformer_status st = open_model("eval --text", model, &ctx, &m);
    if (st == CLFORMER_OK) st = clformer_lm_encode_file(m, text, &ids, &n, &bytes);
    if (st == CLFORMER_OK && bytes == 0)
        st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is empty: nothing to score", text);
    if (st == CLFORMER_OK && n < 2)
        st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                "'%s' holds %zu token: at least 2 are needed to score one", text, n);
    if (st == CLFORMER_OK) st = clformer_session_create(m, &s);
    if (st == CLFORMER_OK) st = session_set_precision_name(s, precision);
    if (st == CLFORMER_OK) st = clformer_session_lm_score(s, ids, n, bytes, (size_t)batch, &score);
    if (st != CLFORMER_OK) {
        cli_runtime_error("eval", NULL);
    } else if (json) {
        printf("{\"loss\": %.6f, \"perplexity\": %.4f, \"bits_per_byte\": %.6f, \"tokens\": "
               "%zu, \"bytes\": %zu}\n", score.loss, score.perplexity, score.bits_per_byte,
               score.tokens, score.bytes);
    } else {
        printf("%s: loss %.4f, perplexity %.3f, %.4f bits per byte (%zu tokens scored, %zu "
               "bytes)\n", text, score.loss, score.perplexity, score.bits_per_byte, score.tokens,
               score.bytes);
    }
    free(ids);
    clformer_session_free(s);
    clformer_model_free(m);
    clformer_context_free(ctx);
    return st == CLFORMER_OK ? 0 : 1;
}
