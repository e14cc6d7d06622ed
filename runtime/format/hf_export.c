/*
 * A model written as a Hugging Face directory (hf.h), the steps every
 * family's export shares: the precision and the family's shape checked,
 * then model.safetensors, config.json and the tokenizer's files written
 * into a fresh folder that replaces `dir` whole (no file of an earlier
 * export survives) or not at all.
 */
#include "door.h"
#include "hf.h"
#include "model.h"
#include "status.h"

#include <string.h>

const char *cf_hf_torch_dtype(clformer_precision precision)
{
    return precision == CLFORMER_BF16   ? "bfloat16"
           : precision == CLFORMER_FP16 ? "float16"
                                        : "float32";
}

static clformer_status write_files(clformer_model *m, const cf_dir_output *d,
                                   clformer_precision precision, const cf_hf_format *format)
{
    char path[4096];
    CF_TRY(cf_dir_output_file(d, "model.safetensors", path, sizeof path));
    CF_TRY(format->write_weights(m, path, precision));
    CF_TRY(cf_dir_output_file(d, "config.json", path, sizeof path));
    CF_TRY(format->write_config(m, path, precision));
    return cf_hf_write_tokenizer(m, d);
}

clformer_status cf_hf_export(clformer_model *m, const char *dir, clformer_precision precision,
                             const cf_hf_format *format)
{
    if (!clformer_precision_name(precision))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "export: precision %d is not "
                       "CLFORMER_FP32, CLFORMER_BF16 or CLFORMER_FP16", (int)precision);
    CF_TRY(format->fits(&m->cfg));
    if (!dir || strlen(dir) > 3900)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the directory path is too long");
    cf_door_call call;
    CF_TRY(cf_door_call_begin(&call, "the input", NULL, 0, "the folder", dir,
                              CLFORMER_WRITE_DIRECTORY));
    cf_dir_output d;
    clformer_status st = cf_dir_output_begin(&d, dir);
    if (st == CLFORMER_OK) st = write_files(m, &d, precision, format);
    if (st == CLFORMER_OK) st = cf_dir_output_commit(&d);
    else cf_dir_output_abort(&d);
    cf_door_call_end(&call);
    return st == CLFORMER_OK ? st : cf_fail_prefix(st, "exporting to '%s': ", dir);
}
