/*
 * clformer_checkpoint_average (clformer.h): the element-wise mean of the
 * weights of several checkpoints of one model, as fairseq's
 * average_checkpoints does for the last N checkpoints of a run. Works on
 * the files alone, no device. Every input is checked whole (as loading
 * checks it); they must share the model's shape (config), vocabularies and
 * tokenizers, else the mean would mix unrelated weights. The output is a
 * plain model (no optimizer state, no train_state), written atomically.
 */
#include "checkpoint.h"
#include "door.h"
#include "safetensors.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

/* Metadata a model's weights depend on: the inputs must agree on these. */
static const char *const shared_keys[] = {"clformer.src_vocab", "clformer.tgt_vocab",
                                          "clformer.src_spm", "clformer.tgt_spm",
                                          "clformer.bpe_vocab", "clformer.bpe_merges"};
static const char *const shared_names[] = {"source vocabulary", "target vocabulary",
                                           "source SentencePiece model",
                                           "target SentencePiece model",
                                           "GPT-2 BPE vocab.json", "GPT-2 BPE merges.txt"};

static bool same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The first config field that differs (dropout and label smoothing are
 * training settings, not the model's shape: they may differ), or NULL. */
static const char *config_difference(const clformer_config *a, const clformer_config *b)
{
    if (a->d_model != b->d_model) return "d_model";
    if (a->n_heads != b->n_heads) return "n_heads";
    if (a->d_ff != b->d_ff) return "d_ff";
    if (a->n_enc_layers != b->n_enc_layers) return "n_enc_layers";
    if (a->n_dec_layers != b->n_dec_layers) return "n_dec_layers";
    if (a->src_vocab != b->src_vocab) return "src_vocab";
    if (a->tgt_vocab != b->tgt_vocab) return "tgt_vocab";
    if (a->max_len != b->max_len) return "max_len";
    if (a->norm_first != b->norm_first) return "norm_first";
    if (a->activation != b->activation) return "activation";
    if (a->positional != b->positional) return "positional";
    if (a->ln_eps != b->ln_eps) return "ln_eps";
    if (a->share_tgt_embed != b->share_tgt_embed) return "share_tgt_embed";
    if (a->share_all_embed != b->share_all_embed) return "share_all_embed";
    return NULL;
}

/* Checks that checkpoint r (path) is the same model as `first`. */
static clformer_status check_same_model(const cf_st_reader *first, const char *first_path,
                                        const cf_st_reader *r, const char *path)
{
    clformer_config a, b;
    CF_TRY(clformer_config_from_json(cf_st_metadata(first, "clformer.config"), &a));
    CF_TRY(clformer_config_from_json(cf_st_metadata(r, "clformer.config"), &b));
    const char *field = config_difference(&a, &b);
    if (field)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "'%s' and '%s' are different models (their config's %s differs): "
                       "average checkpoints of one training run only", first_path, path, field);
    for (size_t k = 0; k < sizeof shared_keys / sizeof *shared_keys; k++)
        if (!same_string(cf_st_metadata(first, shared_keys[k]), cf_st_metadata(r, shared_keys[k])))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "'%s' and '%s' have different %ss: average checkpoints of one "
                           "training run only", first_path, path, shared_names[k]);
    return CLFORMER_OK;
}

/* Weights of checkpoint 0's layout, the mean over all (float32 tensors:
 * every weight of a checkpoint is one, as loading has checked). The sum is
 * taken in double, in input order, so the result does not depend on more
 * than the files and their order. */
static clformer_status write_mean(cf_st_reader *const *r, size_t n, cf_st_writer *w)
{
    /* as F32: a weight of another dtype is refused below, and nothing is committed */
    CF_TRY(cf_checkpoint_declare_weights(r[0], w, CF_ST_F32));
    CF_TRY(cf_st_begin(w));
    for (size_t i = 0; i < cf_st_count(r[0]); i++) {
        const cf_st_tensor *t0 = cf_st_tensor_at(r[0], i);
        if (cf_checkpoint_is_training_state(t0->name)) continue;
        if (t0->dtype != CF_ST_F32)
            return cf_fail(CLFORMER_ERR_FORMAT, "'%s': tensor %s is %s, not F32: average "
                           "fp32 checkpoints (clformer export --dtype fp32 converts one)",
                           cf_st_path(r[0]), t0->name, cf_st_dtype_name(t0->dtype));
        const size_t count = (size_t)t0->numel;
        float *part = malloc((count ? count : 1) * sizeof *part);
        double *sum = calloc(count ? count : 1, sizeof *sum);
        clformer_status st = part && sum ? CLFORMER_OK
                                         : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        for (size_t k = 0; k < n && st == CLFORMER_OK; k++) {
            const cf_st_tensor *t = cf_st_find(r[k], t0->name);
            /* same config, so the same tensors: a mismatch is a damaged file */
            if (!t || t->dtype != t0->dtype || t->numel != t0->numel) {
                st = cf_fail(CLFORMER_ERR_FORMAT, "'%s': tensor %s is missing or has another "
                             "shape than in '%s'", cf_st_path(r[k]), t0->name, cf_st_path(r[0]));
                break;
            }
            st = cf_st_read(r[k], t, part, count * sizeof *part);
            for (size_t e = 0; e < count && st == CLFORMER_OK; e++) sum[e] += part[e];
        }
        for (size_t e = 0; e < count && st == CLFORMER_OK; e++)
            part[e] = (float)(sum[e] / (double)n);
        if (st == CLFORMER_OK) st = cf_st_write(w, t0->name, part, count * sizeof *part);
        free(part);
        free(sum);
        CF_TRY(st);
    }
    return cf_st_commit(w);
}

clformer_status clformer_checkpoint_average(const char *const *paths, size_t n,
                                            const char *out_path)
{
    if (!paths || n == 0 || !out_path)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "averaging needs at least one checkpoint and an output path");
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < i; k++)
            if (!strcmp(paths[i], paths[k]))
                return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                               "'%s' is given twice: each checkpoint may count once", paths[i]);
    cf_door_call call;
    CF_TRY(cf_door_call_begin(&call, "the checkpoint", paths, n, "the output", out_path, 0));
    cf_st_reader **r = calloc(n, sizeof *r);
    clformer_status st = r ? CLFORMER_OK : cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        st = cf_st_open(paths[i], &r[i]);
        if (st == CLFORMER_OK) st = cf_checkpoint_check(r[i]);
        if (st != CLFORMER_OK) st = cf_fail_prefix(st, "averaging '%s': ", paths[i]);
        else if (i > 0) st = check_same_model(r[0], paths[0], r[i], paths[i]);
    }
    cf_st_writer *w = NULL;
    if (st == CLFORMER_OK) {
        st = cf_st_writer_new(out_path, &w);
        if (st == CLFORMER_OK) st = write_mean(r, n, w);
        if (st != CLFORMER_OK) st = cf_fail_prefix(st, "averaging into '%s': ", out_path);
    }
    cf_st_writer_free(w);
    for (size_t i = 0; r && i < n; i++) cf_st_close(r[i]);
    free(r);
    cf_door_call_end(&call);
    return st;
}
