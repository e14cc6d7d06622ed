/*
 * `clformer generate`: continue a prompt with a decoder-only language model,
 * printing each token as it is chosen (KV-cache decoding on the device,
 * seeded sampling). `clformer eval --text`: a language model's loss,
 * perplexity and bits per byte on a text (eval_lm, reached from cmd_eval).
 */
#include "cli.h"
#include "clformer.h"
#include "clformer_util.h"
#include "commands.h"
#include "context_open.h"
#include "lm_stream.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop_requested;

static void on_interrupt(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct {
    lm_stream text;
    size_t made;
    clformer_status st;
} stream;

/* Prints one token's text at once (lm_stream.h); stops on Ctrl-C. */
static bool print_token(void *user, int32_t token)
{
    stream *s = user;
    s->st = lm_stream_push(&s->text, token);
    if (s->st != CLFORMER_OK) return false;
    s->made++;
    return !stop_requested;
}

/* The model (a checkpoint or a Hugging Face GPT-2 directory) on the device. */
static clformer_status open_model(const char *path, clformer_context **ctx, clformer_model **m)
{
    clformer_status st = cli_context_create(NULL, ctx);
    if (st == CLFORMER_OK) st = clformer_model_load(*ctx, path, m);
    if (st == CLFORMER_OK && !clformer_config_decoder_only(clformer_model_config(*m)))
        st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                "'%s' is a translation model (it has an encoder): use clformer "
                                "translate; generate needs a language model (train --task lm)",
                                path);
    return st;
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL;
    long max_tokens = 200, top_k = 0, seed = 1;
    double temperature = 0.8, top_p = 1.0;
    bool greedy = false;
    const cli_option options[] = {
        {"--model", CLI_STRING, &model, "MODEL", "a language model: checkpoint or Hugging Face GPT-2 directory (required)"},
        {"--prompt", CLI_STRING, &prompt, "TEXT", "the text to continue (required; \"\\n\" style escapes are not read: pass a real newline)"},
        {"--max-tokens", CLI_INT, &max_tokens, "N", "tokens to generate (default 200)", 1, 1 << 24},
        {"--temperature", CLI_DOUBLE, &temperature, "T", "logits divided by T before sampling (default 0.8; 0: greedy)", 0, 100},
        {"--top-k", CLI_INT, &top_k, "K", "sample among the K most likely tokens (default 0: all; 1: greedy)", 0, 1 << 24},
        {"--top-p", CLI_DOUBLE, &top_p, "P", "then among the fewest whose probabilities reach P (default 1: all)", 1e-6, 1},
        {"--seed", CLI_INT, &seed, "N", "seed of the draws: the same seed gives the same text (default 1)", 0, 0},
        {"--greedy", CLI_FLAG, &greedy, NULL, "always the most likely token (as --temperature 0)"},
    };
    const cli_spec spec = {
        "generate",
        "Continue a prompt with a decoder-only language model (train --task lm, or a Hugging\n"
        "Face GPT-2 directory), printing each token as it comes. Decoding runs on the device\n"
        "with key/value caches; each token is drawn on the host from its logits with a\n"
        "counter-based generator (draw n uses (seed, n)), so a seed repeats its text.\n"
        "Ctrl-C stops after the current token. The prompt is encoded with the model's own\n"
        "tokenizer (characters, bytes, SentencePiece or GPT-2's BPE, from the checkpoint or\n"
        "the directory's vocab.json + merges.txt); a UTF-8 character split over tokens is\n"
        "printed once complete.",
        "clformer generate --model MODEL --prompt TEXT [--max-tokens N] [--temperature T]\n"
        "       [--top-k K] [--top-p P] [--seed N]",
        "example:\n"
        "  clformer generate --model lm.safetensors --prompt \"ROMEO:\" --max-tokens 200 \\\n"
        "      --temperature 0.8 --top-k 40 --seed 1",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model || !prompt) {
        cli_error("generate", "--model and --prompt are required");
        return EXIT_USAGE;
    }
    if (!*prompt) {
        cli_error("generate", "--prompt is empty: give at least one character to continue");
        return EXIT_USAGE;
    }
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_session *s = NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    clformer_status st = open_model(model, &ctx, &m);
    if (st == CLFORMER_OK) st = clformer_lm_encode(m, prompt, strlen(prompt), &ids, &n);
    if (st == CLFORMER_OK) st = clformer_session_create(m, &s);
    clformer_sample_options o;
    clformer_sample_options_default(&o);
    o.max_tokens = (int)max_tokens;
    o.temperature = greedy ? 0.0f : (float)temperature;
    o.top_k = (int)top_k;
    o.top_p = (float)top_p;
    o.seed = (uint64_t)seed;
    stream out = {{0}, 0, CLFORMER_OK};
    if (st == CLFORMER_OK) {
        /* Ctrl-C: finish the token under way, print what came, exit 130 */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        fputs(prompt, stdout);
        fflush(stdout);
        st = lm_stream_start(&out.text, m, stdout, ids, n);
        if (st == CLFORMER_OK) st = clformer_session_generate(s, ids, n, &o, print_token, &out, NULL, NULL);
        if (st == CLFORMER_OK) st = out.st;
        const clformer_status end = lm_stream_finish(&out.text);
        if (st == CLFORMER_OK) st = end;
        putchar('\n');
        fflush(stdout);
    }
    int rc = 0;
    if (st != CLFORMER_OK) {
        cli_runtime_error("generate", NULL);
        rc = 1;
    } else if (stop_requested) {
        fprintf(stderr, "clformer generate: interrupted after %zu tokens\n", out.made);
        rc = EXIT_INTERRUPTED;
    }
    free(ids);
    clformer_session_free(s);
    clformer_model_free(m);
    clformer_context_free(ctx);
    return rc;
}

/* Loss over the text in windows of the model's context, each predicting its
 * tokens after the first: every token but the text's first is scored once. */
static clformer_status text_loss(clformer_session *s, const int32_t *ids, size_t n, size_t T,
                                 size_t batch, double *sum, size_t *count)
{
    *sum = 0;
    *count = 0;
    int32_t *rows = malloc(batch * (T + 1) * sizeof *rows);
    if (!rows) return clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    size_t at = 0;
    while (at + 1 < n && st == CLFORMER_OK) {
        /* full windows of T + 1 tokens, `batch` at a time, each starting at
         * the last token of the one before; then the last, shorter one */
        const size_t W = n - at >= T + 1 ? T + 1 : n - at;
        size_t B = 0;
        do {
            memcpy(rows + B * W, ids + at, W * sizeof *rows);
            at += W - 1;
            B++;
        } while (B < batch && W == T + 1 && n - at >= T + 1);
        const clformer_batch b = {B, 0, W, NULL, rows};
        double part;
        size_t tokens;
        st = clformer_session_eval_loss(s, &b, &part, &tokens);
        *sum += part;
        *count += tokens;
    }
    free(rows);
    return st;
}

int eval_lm(int argc, char **argv)
{
    const char *model = NULL, *text = NULL;
    long batch = 16;
    bool json = false;
    const cli_option options[] = {
        {"--model", CLI_STRING, &model, "MODEL", "a language model: checkpoint or Hugging Face GPT-2 directory (required)"},
        {"--text", CLI_STRING, &text, "FILE", "the text to score (required)"},
        {"--batch-size", CLI_INT, &batch, "B", "windows per forward pass (default 16)", 1, 1 << 20},
        {"--json", CLI_FLAG, &json, NULL, "one JSON object instead of text"},
    };
    const cli_spec spec = {
        "eval",
        "A language model's loss on a text: the mean cross-entropy per token (nats), the\n"
        "perplexity exp(loss), and bits per byte (the summed loss in bits over the text's\n"
        "bytes, comparable across tokenizers). The text is read in consecutive windows of\n"
        "the model's context; each token after the first is scored once. The text is\n"
        "encoded with the model's own tokenizer (char, byte, spm or gpt2-bpe).",
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
    size_t n = 0, bytes = 0, count = 0;
    double sum = 0;
    clformer_status st = open_model(model, &ctx, &m);
    if (st == CLFORMER_OK) st = clformer_lm_encode_file(m, text, &ids, &n, &bytes);
    if (st == CLFORMER_OK && bytes == 0)
        st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT, "'%s' is empty: nothing to score", text);
    if (st == CLFORMER_OK && n < 2)
        st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                "'%s' holds %zu token: at least 2 are needed to score one", text, n);
    if (st == CLFORMER_OK) st = clformer_session_create(m, &s);
    if (st == CLFORMER_OK)
        st = text_loss(s, ids, n, (size_t)clformer_model_config(m)->max_len, (size_t)batch, &sum,
                       &count);
    if (st != CLFORMER_OK) {
        cli_runtime_error("eval", NULL);
    } else {
        const double loss = sum / (double)count, bpb = sum / log(2.0) / (double)bytes;
        if (json)
            printf("{\"loss\": %.6f, \"perplexity\": %.4f, \"bits_per_byte\": %.6f, \"tokens\": "
                   "%zu, \"bytes\": %zu}\n", loss, exp(loss), bpb, count, bytes);
        else
            printf("%s: loss %.4f, perplexity %.3f, %.4f bits per byte (%zu tokens scored, %zu "
                   "bytes)\n", text, loss, exp(loss), bpb, count, bytes);
    }
    free(ids);
    clformer_session_free(s);
    clformer_model_free(m);
    clformer_context_free(ctx);
    return st == CLFORMER_OK ? 0 : 1;
}
