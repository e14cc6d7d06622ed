/*
 * clformer_checkpoint_export (clformer.h): a checkpoint's weights and model
 * metadata without the training state (optim.* tensors, clformer.train_state),
 * so that PyTorch's strict load_state_dict takes it. Works on the file
 * alone, no device: the input is checked whole (as loading checks it), then
 * each kept tensor is copied (as fp32, bf16 or fp16) and the output is
 * written atomically. Averaging (average.c) declares its output's tensors
 * and metadata as the export does.
 */
#include "checkpoint.h"
#include "door.h"
#include "safetensors.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

bool cf_checkpoint_is_training_state(const char *name) { return !strncmp(name, "optim.", 6); }

static bool keep_metadata(const char *key)
{
    return strcmp(key, "clformer.train_state") != 0 && strcmp(key, CF_ST_CRC_KEY) != 0 &&
           strcmp(key, CF_ST_META_CRC_KEY) != 0 &&
           strcmp(key, CF_ST_HEADER_CRC_KEY) != 0 &&
           strcmp(key, "clformer.run") != 0; /* sums afresh; a run id marks a run's own files */
}

clformer_status cf_checkpoint_declare_weights(const cf_st_reader *r, cf_st_writer *w,
                                              cf_st_dtype dtype)
{
    CF_TRY(cf_st_checksums(w));
    for (size_t i = 0; i < cf_st_metadata_count(r); i++) {
        const char *key, *value;
        cf_st_metadata_at(r, i, &key, &value);
        if (keep_metadata(key)) CF_TRY(cf_st_set_metadata(w, key, value));
    }
    for (size_t i = 0; i < cf_st_count(r); i++) {
        const cf_st_tensor *t = cf_st_tensor_at(r, i);
        if (!cf_checkpoint_is_training_state(t->name))
            CF_TRY(cf_st_declare(w, t->name, dtype, t->ndim, t->shape));
    }
    return CLFORMER_OK;
}

/* Copies the kept tensors, every weight stored as `precision` (the
 * checkpoint check has made sure they are all float tensors). */
static clformer_status copy(const cf_st_reader *r, cf_st_writer *w, clformer_precision precision)
{
    CF_TRY(cf_checkpoint_declare_weights(r, w, cf_st_dtype_of(precision)));
    CF_TRY(cf_st_begin(w));
    for (size_t i = 0; i < cf_st_count(r); i++) {
        const cf_st_tensor *t = cf_st_tensor_at(r, i);
        if (cf_checkpoint_is_training_state(t->name)) continue;
        float *data = malloc(t->numel ? t->numel * sizeof *data : 1);
        if (!data) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        clformer_status st = cf_st_read_f32(r, t, data, t->numel);
        if (st == CLFORMER_OK) st = cf_st_write_f32(w, t->name, data, t->numel);
        free(data);
        CF_TRY(st);
    }
    return cf_st_commit(w);
}

clformer_status clformer_checkpoint_export(const char *checkpoint, const char *out_path)
{
    return clformer_checkpoint_export_as(checkpoint, out_path, CLFORMER_FP32);
}

clformer_status clformer_checkpoint_export_as(const char *checkpoint, const char *out_path,
                                              clformer_precision precision)
{
    if (!clformer_precision_name(precision))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "export: precision %d is not "
                       "CLFORMER_FP32, CLFORMER_BF16 or CLFORMER_FP16", (int)precision);
    if (!checkpoint || !out_path)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "export needs a checkpoint and an output path");
    cf_door_call call;
    CF_TRY(cf_door_call_begin(&call, "the checkpoint", &checkpoint, 1, "the output", out_path, 0));
    cf_st_reader *r = NULL;
    cf_st_writer *w = NULL;
    clformer_status st = cf_st_open(checkpoint, &r);
    if (st == CLFORMER_OK) st = cf_checkpoint_check(r);
    if (st != CLFORMER_OK) st = cf_fail_prefix(st, "exporting '%s': ", checkpoint);
    if (st == CLFORMER_OK) {
        st = cf_st_writer_new(out_path, &w);
        if (st == CLFORMER_OK) st = copy(r, w, precision);
        if (st != CLFORMER_OK) st = cf_fail_prefix(st, "exporting to '%s': ", out_path);
    }
    cf_st_writer_free(w);
    cf_st_close(r);
    cf_door_call_end(&call);
    return st;
}
