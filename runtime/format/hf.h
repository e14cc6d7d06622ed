/*
 * Hugging Face model directories (internal): config.json, model.safetensors
 * and the tokenizer's files, as save_pretrained writes them, for the
 * families that have a Hugging Face class: gpt (GPT2LMHeadModel,
 * hf_gpt2.c) and llama (LlamaForCausalLM, hf_llama.c). hf_dir.c picks the
 * reader by config.json's model_type, hf_export.c writes a family's
 * directory; hf_gpt2_files.c reads and checks the small files of either;
 * hf_tokenizer_files.c writes and sets the tokenizer both share.
 */
#ifndef CF_HF_H
#define CF_HF_H

#include "clformer.h"
#include "door.h"
#include "hf_gpt2_files.h"
#include "safetensors.h"

#include <jansson.h>

/* Whether `path` is a directory. */
bool cf_is_directory(const char *path);

/* The model of a Hugging Face directory (hf_dir.c): its small files read
 * and checked (hf_gpt2_files.h; config.json's model_type "gpt2" or
 * "llama" gives the family), then model.safetensors by the family's
 * reader, then its tokenizer. */
clformer_status cf_model_load_hf(clformer_context *ctx, const char *dir, clformer_model **out);

/* A family's reader of model.safetensors (`path`, open as r): the model of
 * config c made in *m (freed by the caller on error either way) with the
 * file's weights, each checked for its name and shape. */
typedef clformer_status cf_hf_weights_fn(clformer_context *ctx, const clformer_config *c,
                                         const cf_st_reader *r, const char *path,
                                         clformer_model **m);
cf_hf_weights_fn cf_hf_gpt2_weights, cf_hf_llama_weights;

/* A family's Hugging Face format: whether a model has its shape (else an
 * error naming what it needs), and the writers of its model.safetensors and
 * config.json with every weight as `precision`. */
typedef struct {
    clformer_status (*fits)(const clformer_config *c);
    clformer_status (*write_weights)(clformer_model *m, const char *path,
                                     clformer_precision precision);
    clformer_status (*write_config)(const clformer_model *m, const char *path,
                                    clformer_precision precision);
} cf_hf_format;

/* Writes the model as a Hugging Face directory of `format` (hf_export.c):
 * the folder `dir` whole or, on an error, left as it was. */
clformer_status cf_hf_export(clformer_model *m, const char *dir, clformer_precision precision,
                             const cf_hf_format *format);

/* config.json's torch_dtype of weights stored as `precision`. */
const char *cf_hf_torch_dtype(clformer_precision precision);

/* The model's tokenizer as files of the fresh folder `d`: the Hugging Face
 * directory's own files it came with (tokenizer.json, tokenizer.model,
 * tokenizer_config.json, special_tokens_map.json), GPT-2's vocab.json +
 * merges.txt for a GPT-2 BPE (transformers reads them), else
 * clformer_vocab.json and, for a SentencePiece model, clformer_spm.model
 * (clformer's alone). */
clformer_status cf_hf_write_tokenizer(const clformer_model *m, const cf_dir_output *d);
/* Writes `config` (a family's config.json object, released here; NULL when
 * it could not be made) to `path`, with "clformer_files": the clformer files
 * the export holds, so that a directory that lost one is refused
 * (transformers ignores the key). */
clformer_status cf_hf_write_config(const clformer_model *m, json_t *config, const char *path);
/* The model's tokenizer and vocabulary from the directory's files, as
 * cf_hf_files_parse checked them (p->hf is taken over); without any, ids in
 * and ids out. */
clformer_status cf_hf_set_tokenizer(clformer_model *m, const char *dir, const cf_hf_files *f,
                                    cf_hf_parsed *p);

#endif
