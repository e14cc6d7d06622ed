/* `clformer logits`: a model's logits for given token ids, written as
 * safetensors, so another framework can check them (the PyTorch round trip:
 * tools/reference/torch_reference.py roundtrip; a language model against
 * transformers: tools/reference/gpt2_reference.py check-export --clformer). */
#include "cli.h"
#include "clformer.h"
#include "clformer_util.h"
#include "cli_files.h"
#include "commands.h"
#include "translator.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The I32 [B, length] tensor `name` of the batch file. */
static clformer_status find_ids(const char *path, const clformer_tensor *tensors, size_t n,
                                const char *name, const clformer_tensor **out)
{
    const clformer_tensor *t = clformer_tensors_find(tensors, n, name);
    if (!t || t->dtype != CLFORMER_DTYPE_I32 || t->ndim != 2 || t->shape[0] < 1 ||
        t->shape[1] < 1)
        return clformer_set_error(CLFORMER_ERR_FORMAT,
                                  "%s: needs an I32 tensor '%s' of shape [B, length]", path, name);
    *out = t;
    return CLFORMER_OK;
}

/* "1 2 3" or "1,2,3": one row of ids for --ids; false on anything else. */
static bool parse_ids(const char *text, int32_t **ids, size_t *n)
{
    size_t cap = strlen(text) / 2 + 1;
    *ids = malloc(cap * sizeof **ids);
    *n = 0;
    if (!*ids) return false;
    for (const char *p = text;;) {
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX || *n == cap) return false;
        (*ids)[(*n)++] = (int32_t)v;
        p = end;
    }
    return *n > 0;
}

/* What a model reads: a translation model src and tgt_in, a language model
 * its ids (--ids, or the batch file's), whose window the library takes
 * whole: the inputs plus one label column, which no logit depends on. */
typedef struct {
    const char *src;   /* the batch file's source tensor (NULL: none) */
    const char *input; /* ... and its decoder input */
    bool takes_ids;    /* --ids */
    int32_t last;      /* the label column after the inputs */
} logits_inputs;

/* by the model's task (clformer_model_task) */
static const logits_inputs inputs_of[] = {
    [CLFORMER_TASK_TRANSLATION] = {"src", "tgt_in", false, CLFORMER_EOS},
    [CLFORMER_TASK_LM] = {NULL, "ids", true, 0}};

/* The logits of every position of each row. */
static clformer_status run(const char *model_path, const char *batch_path, const char *ids_text,
                           const char *out_path, const char *precision)
{
    clformer_tensor *in = NULL;
    size_t n_in = 0;
    const clformer_tensor *src = NULL, *tgt_in = NULL;
    clformer_tensor given = {"ids", CLFORMER_DTYPE_I32, 2, {1, 0}, NULL};
    int32_t *given_ids = NULL, *tgt = NULL;
    float *logits = NULL;
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_session *session = NULL;
    clformer_status st = clformer_context_create(NULL, &ctx);
    if (st == CLFORMER_OK) st = clformer_model_load(ctx, model_path, &m);
    const logits_inputs *reads = &inputs_of[m ? clformer_model_task(m) : CLFORMER_TASK_TRANSLATION];
    if (st == CLFORMER_OK && ids_text && !reads->takes_ids)
        st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                "--ids is for language models; %s is a translation model: give "
                                "--batch with src and tgt_in", model_path);
    if (st == CLFORMER_OK && ids_text) {
        size_t n = 0;
        if (!parse_ids(ids_text, &given_ids, &n))
            st = clformer_set_error(CLFORMER_ERR_INVALID_ARGUMENT,
                                    "--ids '%s': expected token ids (non-negative integers) "
                                    "separated by spaces or commas", ids_text);
        given.shape[1] = (int64_t)n, given.data = given_ids;
        tgt_in = &given;
    } else if (st == CLFORMER_OK) {
        st = clformer_tensors_load(batch_path, &in, &n_in);
        if (st == CLFORMER_OK && reads->src) st = find_ids(batch_path, in, n_in, reads->src, &src);
        if (st == CLFORMER_OK) st = find_ids(batch_path, in, n_in, reads->input, &tgt_in);
        if (st == CLFORMER_OK && src && src->shape[0] != tgt_in->shape[0])
            st = clformer_set_error(CLFORMER_ERR_FORMAT,
                                    "%s: src and tgt_in hold different batch sizes", batch_path);
    }
    if (st == CLFORMER_OK) st = clformer_session_create(m, &session);
    if (st == CLFORMER_OK) st = session_set_precision_name(session, precision);
    const size_t B = tgt_in ? (size_t)tgt_in->shape[0] : 0, S = src ? (size_t)src->shape[1] : 0;
    const size_t T = tgt_in ? (size_t)tgt_in->shape[1] : 0;
    const int64_t V = m ? clformer_model_config(m)->tgt_vocab : 0;
    if (st == CLFORMER_OK) {
        tgt = malloc(B * (T + 1) * sizeof *tgt);
        logits = malloc(B * T * (size_t)V * sizeof *logits);
        if (!tgt || !logits)
            st = clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if (st == CLFORMER_OK) {
        const int32_t *ids = tgt_in->data;
        for (size_t b = 0; b < B; b++) {
            memcpy(tgt + b * (T + 1), ids + b * T, T * sizeof *tgt);
            tgt[b * (T + 1) + T] = reads->last;
        }
        const clformer_batch batch = {B, S, T + 1, src ? src->data : NULL, tgt};
        st = clformer_session_logits(session, &batch, logits);
    }
    if (st == CLFORMER_OK) {
        const clformer_tensor l = {"logits", CLFORMER_DTYPE_F32, 3, {(int64_t)B, (int64_t)T, V}, logits};
        clformer_tensor out[3];
        size_t n = 0;
        if (src) out[n++] = *src;
        out[n++] = *tgt_in;
        out[n++] = l;
        st = clformer_tensors_save(out_path, out, n);
    }
    clformer_session_free(session);
    clformer_model_free(m);
    clformer_context_free(ctx);
    clformer_tensors_free(in, n_in);
    free(given_ids), free(tgt), free(logits);
    return st;
}

int cmd_logits(int argc, char **argv)
{
    const char *model = NULL, *batch = NULL, *ids = NULL, *out = NULL, *precision = "fp32";
    bool overwrite = false;
    const cli_option options[] = {
        PRECISION_CLI_OPTION(precision),
        {"--model", CLI_STRING, &model, "MODEL", "a checkpoint, or a Hugging Face GPT-2 or Llama directory (required)"},
        {"--batch", CLI_STRING, &batch, "FILE", "safetensors with the ids: src I32 [B, S] and tgt_in I32\n"
                                                "[B, T] (translation), or ids I32 [B, T] (language model)"},
        {"--ids", CLI_STRING, &ids, "LIST", "a language model's input ids instead of --batch, e.g.\n"
                                            "\"464 3290 318\" (one row)"},
        {"--out", CLI_STRING, &out, "FILE", "write the ids and logits F32 [B, T, vocab] here (required)"},
        OVERWRITE_CLI_OPTION(overwrite),
    };
    const cli_spec spec = {
        "logits",
        "Compute a model's logits (dropout off) for token ids and write them as safetensors,\n"
        "for comparing clformer with another implementation of the model: logits[b, t] are\n"
        "the scores of the token after position t of row b (a language model: ids[b, 0..t];\n"
        "a translation model: src[b] and tgt_in[b, 0..t]).",
        "clformer logits --model MODEL (--batch FILE | --ids LIST) --out FILE",
        "tools/reference/torch_reference.py roundtrip uses it to check a clformer-trained model in\n"
        "PyTorch; tools/reference/gpt2_reference.py check-export --clformer to check a language\n"
        "model's logits against transformers' GPT2LMHeadModel (docs/guides/pytorch.md).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model || !out || !batch == !ids) {
        cli_error("logits", "--model, --out and one of --batch or --ids are required");
        return EXIT_USAGE;
    }
    cli_files files;
    if (!cli_files_begin(&files, "logits", overwrite)) return 1;
    int rc = cli_files_read(&files, "--model", model) && cli_files_read(&files, "--batch", batch) &&
                     cli_files_write(&files, "--out", out, 0)
                 ? cli_files_open(&files)
                 : 1;
    if (rc < 0 && run(model, batch, ids, out, precision) != CLFORMER_OK) {
        cli_runtime_error("logits", NULL);
        rc = 1;
    }
    cli_files_end(&files);
    return rc < 0 ? 0 : rc;
}
