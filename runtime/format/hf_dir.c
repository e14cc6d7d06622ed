/*
 * A Hugging Face model directory (hf.h) read as a model: its small files
 * checked first, then model.safetensors by the reader of the family
 * config.json gave, then the tokenizer.
 */
#include "hf.h"
#include "status.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

bool cf_is_directory(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISDIR(s.st_mode);
}

/* Each family's reader of model.safetensors, keyed by its id (family.h). */
static const struct {
    clformer_family family;
    cf_hf_weights_fn *weights;
} readers[] = {{CLFORMER_FAMILY_GPT, cf_hf_gpt2_weights}, {CLFORMER_FAMILY_LLAMA, cf_hf_llama_weights}};

clformer_status cf_model_load_hf(clformer_context *ctx, const char *dir, clformer_model **out)
{
    *out = NULL;
    if (strlen(dir) > 3900)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the directory path is too long");
    cf_hf_files files;
    cf_hf_parsed p;
    CF_TRY(cf_hf_files_read(dir, &files));
    clformer_status st = cf_hf_files_parse(dir, &files, &p);
    if (st != CLFORMER_OK) {
        cf_hf_files_free(&files);
        return st;
    }
    cf_hf_weights_fn *weights = NULL; /* config.json's family has one (cf_hf_files_parse) */
    for (size_t i = 0; i < sizeof readers / sizeof *readers; i++)
        if (readers[i].family == clformer_config_family(&p.config)) weights = readers[i].weights;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    cf_st_reader *r = NULL;
    clformer_model *m = NULL;
    st = weights ? cf_st_open(path, &r)
                 : cf_fail(CLFORMER_ERR_FORMAT, "%s: no reader of this family's weights", path);
    if (st == CLFORMER_OK) st = weights(ctx, &p.config, r, path, &m);
    if (st == CLFORMER_OK) st = cf_hf_set_tokenizer(m, dir, &files, &p);
    cf_st_close(r);
    cf_hf_parsed_free(&p);
    cf_hf_files_free(&files);
    if (st != CLFORMER_OK) {
        clformer_model_free(m);
        return st;
    }
    *out = m;
    return CLFORMER_OK;
}
