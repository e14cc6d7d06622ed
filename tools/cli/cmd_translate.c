/* `clformer translate`: sentences in, one translation per line out, with a
 * model checkpoint on the CLFORMER_DEVICE device; optionally a heatmap of
 * the first sentence's cross-attention. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "cli_files.h"
#include "lines.h"
#include "plot.h"
#include "translator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decodes `sentence` alone, greedily (the only decoding that records
 * attention), and draws the last decoder layer's cross-attention: source
 * tokens (with <sos>/<eos>) across, generated tokens down. Prints its error;
 * returns 0 or 1. */
static int draw_attention(translator *t, const char *sentence, long max_len,
                                      const char *png, plot_attention_mode mode, size_t line)
{
    int32_t *ids = NULL;
    size_t len = 0;
    if (clformer_encode_source(t->model, sentence, &ids, &len) != CLFORMER_OK) {
        cli_runtime_error("translate", "--attention");
        return 1;
    }
    clformer_decode_options o;
    clformer_decode_options_default(&o);
    o.max_len = (int)max_len;
    o.record_attention = true;
    clformer_translation tr;
    if (clformer_session_translate(t->session, ids, 1, len, &o, &tr) != CLFORMER_OK) {
        cli_runtime_error("translate", "--attention");
        free(ids);
        return 1;
    }
    const size_t H = tr.heads, R = tr.attention_rows, S = tr.src_len;
    /* the decoder stores rows x heads x src; the figure wants heads x rows x src */
    float *w = malloc((R ? R * H * S : 1) * sizeof *w);
    const char **src_labels = malloc(S * sizeof *src_labels);
    const char **tgt_labels = malloc((R ? R : 1) * sizeof *tgt_labels);
    int rc = 1;
    if (!w || !src_labels || !tgt_labels) {
        cli_error("translate", "--attention: out of host memory");
    } else {
        for (size_t r = 0; r < R; r++)
            for (size_t h = 0; h < H; h++)
                memcpy(w + (h * R + r) * S, tr.attention + (r * H + h) * S, S * sizeof *w);
        for (size_t c = 0; c < S; c++) src_labels[c] = clformer_vocab_token(t->src, ids[c]);
        /* one row per decoding step: the generated tokens, then <eos> if it came */
        for (size_t r = 0; r < R; r++)
            tgt_labels[r] = r < tr.lengths[0] ? clformer_vocab_token(t->tgt, tr.tokens[r])
                                              : clformer_vocab_token(t->tgt, CLFORMER_EOS);
        char title[96];
        snprintf(title, sizeof title, "cross-attention, last decoder layer, line %zu%s", line,
                 mode == PLOT_ATTENTION_MEAN ? " (mean over heads)" : "");
        const plot_attention_spec spec = {w, (int)H, (int)R, (int)S, src_labels, tgt_labels,
                                          mode, title};
        if (plot_attention(png, &spec) == CLFORMER_OK) rc = 0;
        else cli_runtime_error("translate", "--attention");
    }
    free(w);
    free(src_labels);
    free(tgt_labels);
    free(ids);
    clformer_translation_free(&tr);
    return rc;
}

static int translate(const char *model_path, const char *input, const char *output,
                     const char *attention, const char *attention_mode, const decode_flags *df);

int cmd_translate(int argc, char **argv)
{
    const char *model_path = NULL, *input = NULL, *output = NULL, *attention = NULL;
    const char *attention_mode = "heads";
    bool overwrite = false;
    decode_flags df = DECODE_FLAGS_DEFAULT;
    const cli_option options[] = {
        {"--model", CLI_STRING, &model_path, "FILE", "the checkpoint (.safetensors, required)"},
        {"--input", CLI_STRING, &input, "FILE", "source sentences, one per line (default: stdin)"},
        {"--output", CLI_STRING, &output, "FILE",
         "write the translations here, atomically (default: stdout)"},
        DECODE_CLI_OPTIONS(df),
        {"--attention", CLI_STRING, &attention, "FILE.png",
         "draw the first sentence's cross-attention as a heatmap"},
        {"--attention-mode", CLI_CHOICE, &attention_mode, NULL,
         "one panel per head, or the mean over heads (default heads)", 0, 0, "heads|mean"},
        OVERWRITE_CLI_OPTION(overwrite),
    };
    const cli_spec spec = {
        "translate",
        "Translate sentences with a trained model: one source sentence per input line,\n"
        "one translation per output line (no special tokens). A word-level model takes\n"
        "tokens separated by spaces, as in training, and writes them so; a model trained\n"
        "with --tokenizer spm carries its SentencePiece models and takes raw text (cased,\n"
        "not tokenised) and writes raw text. An empty line gives an empty line.",
        "clformer translate --model FILE [--input FILE] [--output FILE] [options]",
        "Decoding is greedy unless --beam K > 1. A source longer than the model's max_len is\n"
        "cut to fit (reported on stderr). Progress (on a terminal) and a summary go to stderr.\n"
        "--attention decodes the first non-empty line greedily, whatever --beam says.\n"
        "The device is CLFORMER_DEVICE's choice (see clformer devices).\n"
        "examples:\n"
        "  clformer translate --model run/model.safetensors < test.en > test.hyp\n"
        "  clformer translate --model m.safetensors --input test.en --output test.hyp --beam 4\n"
        "  echo 'a small dog' | clformer translate --model m.safetensors --attention att.png",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model_path) {
        cli_error("translate", "--model is required (see clformer translate --help)");
        return EXIT_USAGE;
    }
    /* refuse a missing model and bad output paths before reading input (stdin
     * may be a terminal) or waking the device */
    if (!translator_model_readable("translate", model_path)) return 1;
    cli_files files;
    if (!cli_files_begin(&files, "translate", overwrite)) return 1;
    int opened = cli_files_read(&files, "--model", model_path) &&
                         cli_files_read(&files, "--input", input) &&
                         cli_files_write(&files, "--output", output, CLFORMER_WRITE_STREAM) &&
                         cli_files_write(&files, "--attention", attention, CLFORMER_WRITE_STREAM)
                     ? cli_files_open(&files)
                     : 1;
    if (opened >= 0) {
        cli_files_end(&files);
        return opened;
    }
    const int rc = translate(model_path, input, output, attention, attention_mode, &df);
    cli_files_end(&files);
    return rc;
}

/* The work of cmd_translate once its files are checked. */
static int translate(const char *model_path, const char *input, const char *output,
                     const char *attention, const char *attention_mode, const decode_flags *df)
{
    line_file in;
    if (line_file_read(input, &in) != CLFORMER_OK) {
        cli_runtime_error("translate", NULL);
        return 1;
    }
    if (in.n == 0) {
        cli_error("translate", "the input (%s) is empty: nothing to translate", in.name);
        line_file_free(&in);
        return 1;
    }
    size_t first = 0; /* the line --attention draws */
    while (first < in.n && !line_has_token(in.line[first])) first++;
    if (attention && first == in.n) {
        cli_error("translate", "--attention: every line of %s is empty; there is no sentence "
                  "to draw", in.name);
        line_file_free(&in);
        return 1;
    }

    translator t;
    if (!translator_open("translate", model_path, &t)) {
        line_file_free(&in);
        return 1;
    }
    if (!translator_set_precision("translate", &t, df->precision)) {
        translator_close(&t);
        line_file_free(&in);
        return 1;
    }
    int rc = 1;
    char **outputs = calloc(in.n, sizeof *outputs);
    translate_stats stats;
    if (!outputs) {
        cli_error("translate", "out of host memory");
    } else if (attention &&
               draw_attention(&t, in.line[first], df->max_len, attention,
                              !strcmp(attention_mode, "mean") ? PLOT_ATTENTION_MEAN
                                                              : PLOT_ATTENTION_PANELS,
                              first + 1) != 0) {
        /* draw_attention printed the error */
    } else if (translator_run(&t, (const char *const *)in.line, in.n, df, outputs, &stats) !=
               CLFORMER_OK) {
        cli_runtime_error("translate", NULL);
    } else if (line_file_write(output, (const char *const *)outputs, in.n) != CLFORMER_OK) {
        cli_runtime_error("translate", NULL);
    } else {
        if (attention)
            fprintf(stderr, "clformer translate: wrote the cross-attention of line %zu to %s%s\n",
                    first + 1, attention,
                    df->beam > 1 ? " (decoded greedily: only greedy decoding records attention; "
                                  "the translations use the beam)" : "");
        translator_report("translate", &t, &stats);
        rc = 0;
    }
    for (size_t i = 0; outputs && i < in.n; i++) free(outputs[i]);
    free(outputs);
    translator_close(&t);
    line_file_free(&in);
    return rc;
}
