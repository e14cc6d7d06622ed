/*
 * What `clformer translate` and `clformer eval --model` share: the decoding
 * flags, a model opened on the CLFORMER_DEVICE device with its vocabularies,
 * and the translation of a file's lines (clformer_translate_sentences: empty
 * lines stay empty), showing progress when stderr is a terminal, and summing
 * up the run.
 */
#ifndef CLFORMER_TRANSLATOR_H
#define CLFORMER_TRANSLATOR_H

#include "cli.h"
#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>

/* The decoding flags, as cli.h fills them. `given` is set by any of them. */
typedef struct {
    long beam, max_len, batch_size;
    double length_penalty;
    bool given;
    const char *precision; /* --precision: fp32, bf16 or fp16 */
} decode_flags;

#define DECODE_FLAGS_DEFAULT {1, 0, 64, 1.0, false, "fp32"}

/* The --precision row (train, bench, eval, translate, generate, logits). */
#define PRECISION_CLI_OPTION(var)                                                              \
    {"--precision", CLI_CHOICE, &(var), NULL,                                                  \
     "storage precision of the passes: activations and\n"                                     \
     "weights rounded to bf16 or fp16 (fp32 arithmetic and\n"                                 \
     "statistics; training keeps what backward reads in 16\n"                                 \
     "bits; docs/ARCHITECTURE.md) (default fp32)", 0, 0,                                       \
     "fp32|bf16|fp16"}

/* The four option rows for a cli_option table. */
#define DECODE_CLI_OPTIONS(f)                                                                  \
    {"--beam", CLI_INT, &(f).beam, "K", "beam width; 1 is greedy decoding (default 1)", 1, 64,  \
     NULL, &(f).given},                                                                        \
    {"--length-penalty", CLI_DOUBLE, &(f).length_penalty, "A",                                 \
     "beam: rank hypotheses by log-prob / length^A (default 1.0)", 0, 10, NULL,  \
     &(f).given},                                                                              \
    {"--max-len", CLI_INT, &(f).max_len, "N",                                                  \
     "most output tokens, <eos> included (default: model max_len - 1)", 1,  \
     1000000, NULL, &(f).given},                                                               \
    {"--batch-size", CLI_INT, &(f).batch_size, "N", "sentences decoded together (default 64)", \
     1, 1000000, NULL, &(f).given},                                                           \
    PRECISION_CLI_OPTION((f).precision)

clformer_decode_options decode_flags_options(const decode_flags *f);

typedef struct {
    clformer_context *ctx;
    clformer_model *model;
    clformer_session *session; /* the model's activations and decoding caches */
    clformer_vocab *src, *tgt; /* the model's */
} translator;

/* False, with a message naming the file, when the model cannot be read. */
bool translator_model_readable(const char *command, const char *model_path);

/* Opens the device, loads the checkpoint at `model_path` and makes a
 * session on it. On failure
 * prints the error as `clformer COMMAND: error: ...` and returns false. */
bool translator_open(const char *command, const char *model_path, translator *t);
void translator_close(translator *t);

/* Sets a session's storage precision from --precision's name (NULL: fp32),
 * for every command with that option. */
clformer_status session_set_precision_name(clformer_session *s, const char *precision);

/* The same for the translator's session; false, with the error printed,
 * when the library refuses it. */
bool translator_set_precision(const char *command, translator *t, const char *precision);

/* The device's name, for summaries. */
const char *translator_device(const translator *t);

typedef struct {
    size_t lines;      /* input lines */
    size_t sentences;  /* lines with a token: the ones the model translated */
    size_t tokens;     /* output tokens */
    size_t truncated;  /* sources cut to the model's max_len */
    double seconds;    /* wall time of the translation */
} translate_stats;

/* Translates lines[0..n) into outputs[i] (malloc'd, free each): a line
 * without a token gives "". Progress goes to stderr when it is a terminal. */
clformer_status translator_run(translator *t, const char *const *lines, size_t n,
                               const decode_flags *f, char **outputs, translate_stats *stats);

/* Prints, on stderr, the truncation note (when sources were cut) and the
 * one-line summary: sentences, tokens, time, tokens/s, device. */
void translator_report(const char *command, const translator *t, const translate_stats *s);

#endif
