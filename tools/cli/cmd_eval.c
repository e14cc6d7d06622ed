/* `clformer eval`: corpus BLEU of a hypothesis file against references, or
 * of a model's translations of a source file, with the model's loss and
 * perplexity on the same sentence pairs. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "cli_files.h"
#include "lines.h"
#include "translator.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The model's loss over the pairs that fit its max_len. */
typedef struct {
    bool have;            /* false when no pair could be scored */
    double loss;          /* mean cross-entropy per target token (no label smoothing) */
    size_t tokens;        /* target tokens counted */
    size_t pairs;         /* pairs scored */
    size_t empty;         /* pairs skipped: a side without a token */
    size_t too_long;      /* pairs skipped: a side longer than max_len */
} loss_result;

typedef struct {
    const char *hyp, *ref, *src, *model, *output, *tokenize_name;
    clformer_bleu_options bleu; /* --tokenize, --lowercase */
    bool lowercase;
    bool json, overwrite;
    decode_flags df;
} eval_args;

/* Both files, line-aligned and not empty; errors name both. */
static bool read_pair(const char *a_path, const char *b_path, line_file *a, line_file *b)
{
    if (line_file_read(a_path, a) != CLFORMER_OK) {
        cli_runtime_error("eval", NULL);
        return false;
    }
    if (line_file_read(b_path, b) != CLFORMER_OK) {
        cli_runtime_error("eval", NULL);
        line_file_free(a);
        return false;
    }
    if (a->n != b->n)
        cli_error("eval", "'%s' has %zu line%s but '%s' has %zu: line i of one must answer line "
                  "i of the other", a->name, a->n, a->n == 1 ? "" : "s", b->name, b->n);
    else if (a->n == 0)
        cli_error("eval", "'%s' and '%s' are empty: there is nothing to score", a->name, b->name);
    else
        return true;
    line_file_free(a);
    line_file_free(b);
    return false;
}

/* Lines as the model's vocabulary of a side reads them (SentencePiece
 * pieces for a model trained on raw text); *out is NULL on failure. */
static clformer_status model_lines(const clformer_model *m, bool target, const line_file *in,
                                   char ***out)
{
    char **lines = calloc(in->n ? in->n : 1, sizeof *lines);
    clformer_status st = lines ? CLFORMER_OK : CLFORMER_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < in->n && st == CLFORMER_OK; i++)
        st = clformer_model_tokenize(m, target, in->line[i], &lines[i]);
    if (st != CLFORMER_OK && lines) {
        for (size_t i = 0; i < in->n; i++) free(lines[i]);
        free(lines);
        lines = NULL;
    }
    *out = lines;
    return st;
}

static clformer_status model_loss_lines(translator *t, const line_file *src, const line_file *ref,
                                        size_t batch_size, loss_result *out);

static clformer_status model_loss(translator *t, const line_file *raw_src,
                                  const line_file *raw_ref, size_t batch_size, loss_result *out)
{
    memset(out, 0, sizeof *out);
    char **s = NULL, **r = NULL;
    clformer_status st = model_lines(t->model, false, raw_src, &s);
    if (st == CLFORMER_OK) st = model_lines(t->model, true, raw_ref, &r);
    if (st == CLFORMER_OK) {
        line_file src = *raw_src, ref = *raw_ref;
        src.line = s;
        ref.line = r;
        st = model_loss_lines(t, &src, &ref, batch_size, out);
    }
    for (size_t i = 0; s && i < raw_src->n; i++) free(s[i]);
    for (size_t i = 0; r && i < raw_ref->n; i++) free(r[i]);
    free(s);
    free(r);
    return st;
}

static clformer_status model_loss_lines(translator *t, const line_file *src, const line_file *ref,
                                        size_t batch_size, loss_result *out)
{
    const int max_len = clformer_model_config(t->model)->max_len;
    /* count first: the corpus functions refuse a set with no usable pair,
     * which here only means there is no loss to report */
    for (size_t i = 0; i < src->n; i++) {
        const char *s = src->line[i], *r = ref->line[i];
        if (!line_has_token(s) || !line_has_token(r)) out->empty++;
        else if (clformer_vocab_encode(t->src, s, true, NULL, 0, NULL) > (size_t)max_len ||
                 clformer_vocab_encode(t->tgt, r, true, NULL, 0, NULL) > (size_t)max_len)
            out->too_long++;
        else out->pairs++;
    }
    if (out->pairs == 0) return CLFORMER_OK;
    clformer_parallel_text *text = NULL;
    clformer_corpus *corpus = NULL;
    clformer_status st = clformer_parallel_text_from_lines((const char *const *)src->line,
                                                           (const char *const *)ref->line, src->n,
                                                           src->name, ref->name, &text);
    if (st == CLFORMER_OK)
        st = clformer_corpus_encode(text, t->src, t->tgt, max_len, &corpus);
    if (st == CLFORMER_OK)
        st = clformer_corpus_loss(t->session, corpus, batch_size * (size_t)max_len, &out->loss,
                                  &out->tokens);
    out->have = st == CLFORMER_OK && out->tokens > 0;
    clformer_corpus_free(corpus);
    clformer_parallel_text_free(text);
    return st;
}

static void print_text(const clformer_bleu *b, const clformer_bleu_options *how,
                       const loss_result *loss, size_t pairs)
{
    char line[256], sig[128];
    clformer_bleu_format(b, line, sizeof line);
    clformer_bleu_signature_with(how, sig, sizeof sig);
    printf("%s\nsignature: %s\n", line, sig);
    if (!loss) return;
    size_t skipped = loss->empty + loss->too_long;
    if (loss->have)
        printf("loss = %.4f perplexity = %.3f (%zu of %zu pairs, %zu target tokens", loss->loss,
               exp(loss->loss), loss->pairs, pairs, loss->tokens);
    else
        printf("loss = n/a (no pair could be scored");
    if (skipped) {
        printf("; skipped:");
        if (loss->too_long) printf(" %zu longer than the model's max_len", loss->too_long);
        if (loss->too_long && loss->empty) printf(",");
        if (loss->empty) printf(" %zu with an empty side", loss->empty);
    }
    printf(")\n");
}

static bool print_json(const clformer_bleu *b, const clformer_bleu_options *how,
                       const loss_result *loss, const translate_stats *ts)
{
    json_t *o = json_object(), *p = json_array();
    char sig[128];
    clformer_bleu_signature_with(how, sig, sizeof sig);
    json_object_set_new(o, "bleu", json_real(b->score));
    json_object_set_new(o, "signature", json_string(sig));
    for (int k = 0; k < 4; k++) json_array_append_new(p, json_real(b->precisions[k]));
    json_object_set_new(o, "precisions", p);
    json_object_set_new(o, "bp", json_real(b->bp));
    json_object_set_new(o, "hyp_len", json_integer((json_int_t)b->hyp_len));
    json_object_set_new(o, "ref_len", json_integer((json_int_t)b->ref_len));
    if (loss) {
        /* null when no pair fits the model: JSON has no NaN */
        json_object_set_new(o, "loss", loss->have ? cli_json_number(loss->loss) : json_null());
        json_object_set_new(o, "perplexity",
                            loss->have ? cli_json_number(exp(loss->loss)) : json_null());
        json_object_set_new(o, "skipped", json_integer((json_int_t)(loss->empty + loss->too_long)));
        json_object_set_new(o, "sentences", json_integer((json_int_t)ts->sentences));
        json_object_set_new(o, "tokens_per_s",
                            json_real(ts->seconds > 0 ? (double)ts->tokens / ts->seconds : 0.0));
    }
    char *text = json_dumps(o, JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text) return false;
    printf("%s\n", text);
    free(text);
    return true;
}

/* --hyp --ref: nothing but BLEU, no device. */
static int eval_files(const eval_args *a)
{
    line_file hyp, ref;
    if (!read_pair(a->hyp, a->ref, &hyp, &ref)) return 1;
    clformer_bleu b;
    int rc = 1;
    if (clformer_bleu_corpus_with((const char *const *)hyp.line, (const char *const *)ref.line,
                                  hyp.n, &a->bleu, &b) != CLFORMER_OK)
        cli_runtime_error("eval", NULL);
    else if (a->json && !print_json(&b, &a->bleu, NULL, NULL))
        cli_error("eval", "out of host memory");
    else {
        if (!a->json) print_text(&b, &a->bleu, NULL, hyp.n);
        rc = 0;
    }
    line_file_free(&hyp);
    line_file_free(&ref);
    return rc;
}

static int eval_translations(const eval_args *a);

/* --model --src --ref: translate, score, and the loss on the same pairs. */
static int eval_model(const eval_args *a)
{
    cli_files files;
    if (!cli_files_begin(&files, "eval", a->overwrite)) return 1;
    const int opened = cli_files_read(&files, "--model", a->model) &&
                               cli_files_read(&files, "--src", a->src) &&
                               cli_files_read(&files, "--ref", a->ref) &&
                               cli_files_write(&files, "--output", a->output, CLFORMER_WRITE_STREAM)
                           ? cli_files_open(&files)
                           : 1;
    const int rc = opened >= 0 ? opened : eval_translations(a);
    cli_files_end(&files);
    return rc;
}

/* eval_model's work once its files are checked. */
static int eval_translations(const eval_args *a)
{
    line_file src, ref;
    if (!read_pair(a->src, a->ref, &src, &ref)) return 1;
    translator t;
    if (!translator_open("eval", a->model, &t) ||
        !translator_set_precision("eval", &t, a->df.precision)) {
        if (t.session) translator_close(&t);
        line_file_free(&src);
        line_file_free(&ref);
        return 1;
    }
    int rc = 1;
    char **hyps = calloc(src.n, sizeof *hyps);
    translate_stats ts;
    loss_result loss;
    clformer_bleu b;
    if (!hyps) {
        cli_error("eval", "out of host memory");
    } else if (translator_run(&t, (const char *const *)src.line, src.n, &a->df, hyps, &ts) !=
               CLFORMER_OK) {
        cli_runtime_error("eval", "translating");
    } else if (clformer_bleu_corpus_with((const char *const *)hyps, (const char *const *)ref.line,
                                         src.n, &a->bleu, &b) != CLFORMER_OK) {
        cli_runtime_error("eval", NULL);
    } else if (model_loss(&t, &src, &ref, (size_t)a->df.batch_size, &loss) != CLFORMER_OK) {
        cli_runtime_error("eval", "computing the loss");
    } else if (a->output &&
               line_file_write(a->output, (const char *const *)hyps, src.n) != CLFORMER_OK) {
        cli_runtime_error("eval", NULL);
    } else {
        translator_report("eval", &t, &ts);
        if (a->json) {
            rc = print_json(&b, &a->bleu, &loss, &ts) ? 0 : 1;
            if (rc) cli_error("eval", "out of host memory");
        } else {
            print_text(&b, &a->bleu, &loss, src.n);
            rc = 0;
        }
    }
    for (size_t i = 0; hyps && i < src.n; i++) free(hyps[i]);
    free(hyps);
    translator_close(&t);
    line_file_free(&src);
    line_file_free(&ref);
    return rc;
}

/* The tasks whose evaluation is not translation's, each told by the option
 * that gives its data, and with its own options: a language model's on a
 * text (cmd_generate.c). */
static const struct {
    const char *data_option;
    int (*eval)(int argc, char **argv);
} other_evals[] = {{"--text", eval_lm}};

int cmd_eval(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        for (size_t k = 0; k < sizeof other_evals / sizeof *other_evals; k++)
            if (!strcmp(argv[i], other_evals[k].data_option))
                return other_evals[k].eval(argc, argv);
    eval_args a = {.df = DECODE_FLAGS_DEFAULT};
    const cli_option options[] = {
        {"--hyp", CLI_STRING, &a.hyp, "FILE", "hypotheses, one per line ('-': stdin)"},
        {"--ref", CLI_STRING, &a.ref, "FILE", "references, one per line (required)"},
        {"--model", CLI_STRING, &a.model, "FILE", "a checkpoint to translate --src with"},
        {"--src", CLI_STRING, &a.src, "FILE", "source sentences for --model"},
        {"--output", CLI_STRING, &a.output, "FILE",
         "with --model: also write the translations here (atomically)"},
        {"--tokenize", CLI_CHOICE, &a.tokenize_name, NULL,
         "sacreBLEU's tokenizer: 13a (default, for detokenised text) or none (the text's own\n"
         "whitespace tokens, for text tokenised beforehand)", 0, 0, "13a|none"},
        {"--lowercase", CLI_FLAG, &a.lowercase, NULL,
         "lower-case hypotheses and references before scoring, as sacreBLEU's -lc (Python's\n"
         "str.lower()); the signature then says case:lc. For a lower-cased model's output\n"
         "against cased references"},
        DECODE_CLI_OPTIONS(a.df),
        {"--json", CLI_FLAG, &a.json, NULL,
         "print the scores as one JSON object (keys below)"},
        OVERWRITE_CLI_OPTION(a.overwrite),
    };
    const cli_spec spec = {
        "eval",
        "Score translations with corpus BLEU: the number sacreBLEU 2.x gives (13a tokenizer on\n"
        "detokenised text by default, 4-grams, exp smoothing), printed as its summary line\n"
        "and its signature.\n"
        "With --model, translate --src first and also report the model's loss and perplexity\n"
        "on the (source, reference) pairs.",
        "clformer eval --hyp FILE --ref FILE [--json]\n"
        "       clformer eval --model FILE --src FILE --ref FILE [--output FILE] [options]\n"
        "       clformer eval --model LM --text FILE [--batch-size B] [--json]\n"
        "                      (a language model: loss, perplexity and bits per byte)",
        "The files are line-aligned: line i of the hypotheses (or sources) answers line i of\n"
        "the references. The loss is the plain cross-entropy (no label smoothing) per target\n"
        "token, so perplexity = exp(loss); pairs longer than the model's max_len, or with an empty side, are left\n"
        "out of it and counted. Decoding options apply with --model only.\n"
        "--json keys: bleu, signature, precisions (1- to 4-gram, percent), bp, hyp_len, ref_len; with\n"
        "--model also loss, perplexity (null when no pair fits), skipped, sentences, tokens_per_s.\n"
        "examples:\n"
        "  clformer eval --hyp test.hyp --ref test.de\n"
        "  clformer eval --hyp test.tok.hyp --ref test.tok.de --tokenize none\n"
        "  clformer eval --hyp test.lc.hyp --ref test_2016_flickr.de --lowercase\n"
        "  clformer eval --model run/model.safetensors --src test.en --ref test.de --beam 4",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    const char *problem = NULL;
    if (!a.ref) problem = "--ref is required";
    else if (!a.hyp == !a.model) problem = "give either --hyp, or --model with --src";
    else if (a.model && !a.src)
        problem = "--model needs --src (the sentences to translate), or --text FILE for a language model";
    else if (a.hyp && a.src) problem = "--src goes with --model; --hyp is already translated";
    else if (a.hyp && a.output) problem = "--output goes with --model";
    else if (a.overwrite && !a.output) problem = "--overwrite goes with --output";
    else if (a.hyp && a.df.given) problem = "decoding options (--beam, --max-len, ...) go with --model";
    if (problem) {
        cli_error("eval", "%s (see clformer eval --help)", problem);
        return EXIT_USAGE;
    }
    clformer_bleu_options_default(&a.bleu);
    a.bleu.tokenize = a.tokenize_name && !strcmp(a.tokenize_name, "none")
                          ? CLFORMER_BLEU_TOKENIZE_NONE
                          : CLFORMER_BLEU_TOKENIZE_13A;
    a.bleu.lowercase = a.lowercase;
    return a.hyp ? eval_files(&a) : eval_model(&a);
}
