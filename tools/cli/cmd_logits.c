/* `clformer logits`: a model's logits for given token ids, written as
 * safetensors, so another framework can check them (the PyTorch round trip:
 * tools/reference/torch_reference.py roundtrip). */
#include "cli.h"
#include "clformer.h"
#include "clformer_util.h"
#include "commands.h"
#include "translator.h"

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

static clformer_status run(const char *model_path, const char *batch_path, const char *out_path,
                           const char *precision)
{
    clformer_tensor *in = NULL;
    size_t n_in = 0;
    const clformer_tensor *src = NULL, *tgt_in = NULL;
    int32_t *tgt = NULL;
    float *logits = NULL;
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_session *session = NULL;
    clformer_status st = clformer_tensors_load(batch_path, &in, &n_in);
    if (st == CLFORMER_OK) st = find_ids(batch_path, in, n_in, "src", &src);
    if (st == CLFORMER_OK) st = find_ids(batch_path, in, n_in, "tgt_in", &tgt_in);
    if (st == CLFORMER_OK && src->shape[0] != tgt_in->shape[0])
        st = clformer_set_error(CLFORMER_ERR_FORMAT,
                                "%s: src and tgt_in hold different batch sizes", batch_path);
    if (st == CLFORMER_OK) st = clformer_context_create(NULL, &ctx);
    if (st == CLFORMER_OK) st = clformer_model_load(ctx, model_path, &m);
    if (st == CLFORMER_OK) st = clformer_session_create(m, &session);
    if (st == CLFORMER_OK) st = session_set_precision_name(session, precision);
    const size_t B = src ? (size_t)src->shape[0] : 0, S = src ? (size_t)src->shape[1] : 0;
    const size_t T = tgt_in ? (size_t)tgt_in->shape[1] : 0;
    const int64_t V = m ? clformer_model_config(m)->tgt_vocab : 0;
    if (st == CLFORMER_OK) {
        /* the library takes whole targets: the decoder input plus one label column */
        tgt = malloc(B * (T + 1) * sizeof *tgt);
        logits = malloc(B * T * (size_t)V * sizeof *logits);
        if (!tgt || !logits)
            st = clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if (st == CLFORMER_OK) {
        const int32_t *ids = tgt_in->data;
        for (size_t b = 0; b < B; b++) {
            memcpy(tgt + b * (T + 1), ids + b * T, T * sizeof *tgt);
            tgt[b * (T + 1) + T] = CLFORMER_EOS;
        }
        const clformer_batch batch = {B, S, T + 1, src->data, tgt};
        st = clformer_session_logits(session, &batch, logits);
    }
    if (st == CLFORMER_OK) {
        const clformer_tensor out[3] = {
            *src, *tgt_in,
            {"logits", CLFORMER_DTYPE_F32, 3, {(int64_t)B, (int64_t)T, V}, logits}};
        st = clformer_tensors_save(out_path, out, 3);
    }
    clformer_session_free(session);
    clformer_model_free(m);
    clformer_context_free(ctx);
    clformer_tensors_free(in, n_in);
    free(tgt), free(logits);
    return st;
}

int cmd_logits(int argc, char **argv)
{
    const char *model = NULL, *batch = NULL, *out = NULL, *precision = "fp32";
    const cli_option options[] = {
        PRECISION_CLI_OPTION(precision),
        {"--model", CLI_STRING, &model, "FILE", "the checkpoint (required)"},
        {"--batch", CLI_STRING, &batch, "FILE", "safetensors with src I32 [B, S] and tgt_in I32 [B, T] (required)"},
        {"--out", CLI_STRING, &out, "FILE", "write src, tgt_in and logits F32 [B, T, tgt_vocab] here (required)"},
    };
    const cli_spec spec = {
        "logits",
        "Compute a model's logits (dropout off) for a batch of token ids and write them as\n"
        "safetensors, for comparing clformer with another implementation of the model.",
        "clformer logits --model FILE --batch FILE --out FILE",
        "tools/reference/torch_reference.py roundtrip uses it to check a clformer-trained model in PyTorch.",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model || !batch || !out) {
        cli_error("logits", "--model, --batch and --out are required");
        return EXIT_USAGE;
    }
    if (run(model, batch, out, precision) != CLFORMER_OK) {
        cli_runtime_error("logits", NULL);
        return 1;
    }
    return 0;
}
