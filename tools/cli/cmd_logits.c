/* `clformer logits`: a model's logits for given token ids, written as
 * safetensors, so another framework can check them (the PyTorch round trip:
 * tools/reference/torch_reference.py roundtrip). */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "safetensors.h"
#include "status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static clformer_status read_ids(const cf_st_reader *r, const char *name, int32_t **ids,
                                int64_t shape[2])
{
    const cf_st_tensor *t = cf_st_find(r, name);
    if (!t || t->dtype != CF_ST_I32 || t->ndim != 2 || t->shape[0] < 1 || t->shape[1] < 1)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s: needs an I32 tensor '%s' of shape [B, length]",
                       cf_st_path(r), name);
    shape[0] = t->shape[0], shape[1] = t->shape[1];
    *ids = malloc(t->nbytes);
    if (!*ids) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    return cf_st_read(r, t, *ids, t->nbytes);
}

static clformer_status run(const char *model_path, const char *batch_path, const char *out_path)
{
    cf_st_reader *r = NULL;
    int32_t *src = NULL, *tgt_in = NULL, *tgt = NULL;
    float *logits = NULL;
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    cf_st_writer *w = NULL;
    int64_t ss[2], ts[2];
    clformer_status st = cf_st_open(batch_path, &r);
    if (st == CLFORMER_OK) st = read_ids(r, "src", &src, ss);
    if (st == CLFORMER_OK) st = read_ids(r, "tgt_in", &tgt_in, ts);
    if (st == CLFORMER_OK && ss[0] != ts[0])
        st = cf_fail(CLFORMER_ERR_FORMAT, "%s: src and tgt_in hold different batch sizes",
                     batch_path);
    if (st == CLFORMER_OK) st = clformer_context_create(NULL, &ctx);
    if (st == CLFORMER_OK) st = clformer_model_load(ctx, model_path, &m);
    const size_t B = (size_t)ss[0], S = (size_t)ss[1], T = (size_t)ts[1];
    if (st == CLFORMER_OK) {
        /* the library takes whole targets: the decoder input plus one label column */
        tgt = malloc(B * (T + 1) * sizeof *tgt);
        logits = malloc(B * T * (size_t)clformer_model_config(m)->tgt_vocab * sizeof *logits);
        if (!tgt || !logits) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if (st == CLFORMER_OK) {
        for (size_t b = 0; b < B; b++) {
            memcpy(tgt + b * (T + 1), tgt_in + b * T, T * sizeof *tgt);
            tgt[b * (T + 1) + T] = CLFORMER_EOS;
        }
        const clformer_batch batch = {B, S, T + 1, src, tgt};
        st = clformer_model_logits(m, &batch, logits);
    }
    const int64_t ls[3] = {(int64_t)B, (int64_t)T, m ? clformer_model_config(m)->tgt_vocab : 0};
    if (st == CLFORMER_OK) st = cf_st_writer_new(out_path, &w);
    if (st == CLFORMER_OK) st = cf_st_declare(w, "src", CF_ST_I32, 2, ss);
    if (st == CLFORMER_OK) st = cf_st_declare(w, "tgt_in", CF_ST_I32, 2, ts);
    if (st == CLFORMER_OK) st = cf_st_declare(w, "logits", CF_ST_F32, 3, ls);
    if (st == CLFORMER_OK) st = cf_st_begin(w);
    if (st == CLFORMER_OK) st = cf_st_write(w, "src", src, B * S * 4);
    if (st == CLFORMER_OK) st = cf_st_write(w, "tgt_in", tgt_in, B * T * 4);
    if (st == CLFORMER_OK) st = cf_st_write(w, "logits", logits, B * T * (size_t)ls[2] * 4);
    if (st == CLFORMER_OK) st = cf_st_commit(w);
    cf_st_writer_free(w);
    clformer_model_free(m);
    clformer_context_free(ctx);
    cf_st_close(r);
    free(src), free(tgt_in), free(tgt), free(logits);
    return st;
}

int cmd_logits(int argc, char **argv)
{
    const char *model = NULL, *batch = NULL, *out = NULL;
    const cli_option options[] = {
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
    if (run(model, batch, out) != CLFORMER_OK) {
        cli_runtime_error("logits", NULL);
        return 1;
    }
    return 0;
}
