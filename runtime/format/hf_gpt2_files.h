/*
 * The small files of a Hugging Face GPT-2 or Llama directory, read and
 * checked before a weight is read or a buffer allocated (hf_gpt2.c and
 * hf_llama.c load the rest): config.json, GPT-2's tokenizer (vocab.json + merges.txt), and the
 * files clformer adds for other tokenizers, clformer_vocab.json (the tokens
 * in id order) and clformer_spm.model, and a Hugging Face tokenizer's files
 * (tokenizer.json, tokenizer.model, tokenizer_config.json,
 * special_tokens_map.json: tokenizer_hf.h). Each file that is there must be a
 * regular file and valid, or the directory is refused naming it; a
 * config.json that clformer wrote lists its clformer files
 * ("clformer_files"), which must then be there. No device: the fuzz target
 * fuzz_hf_dir runs this on hostile bytes.
 */
#ifndef CF_HF_GPT2_FILES_H
#define CF_HF_GPT2_FILES_H

#include "clformer.h"
#include "tokenizer_bpe.h"
#include "tokenizer_hf.h"
#include "vocab.h"

#include <stdbool.h>
#include <stddef.h>

/* CF_HF_TOK + k: cf_hf_tok_file_names[k] */
enum {
    CF_HF_CONFIG, CF_HF_VOCAB, CF_HF_MERGES, CF_HF_CLFORMER_VOCAB, CF_HF_SPM, CF_HF_TOK,
    CF_HF_FILES = CF_HF_TOK + CF_HF_TOK_FILES
};
extern const char *const cf_hf_file_names[CF_HF_FILES];

/* The files as read: text[i] NULL when file i is not there. */
typedef struct {
    char *text[CF_HF_FILES];
    size_t size[CF_HF_FILES];
} cf_hf_files;

/* Reads each file of `dir` that is there (config.json must be); a name
 * that is not a regular file (a folder, a FIFO) is refused. */
clformer_status cf_hf_files_read(const char *dir, cf_hf_files *f);
void cf_hf_files_free(cf_hf_files *f);

/* What the files say, checked. */
typedef struct {
    clformer_config config;
    cf_hf_tokenizer *hf; /* tokenizer.json's or tokenizer.model's tokenizer, or NULL */
    char *tokenizer_problem; /* why the directory's tokenizer files cannot be read, or NULL */
    cf_bpe *bpe;        /* GPT-2's BPE (vocab.json + merges.txt), or NULL */
    cf_vocab *vocab;    /* clformer_vocab.json's tokens, or NULL */
    bool spm;           /* clformer_spm.model is there (its pieces: vocab's tokens) */
    bool ids_only;      /* no tokenizer at all: the model takes ids, not text */
} cf_hf_parsed;

/* Parses and checks the files (messages name "DIR/FILE"): config.json a
 * GPT-2 or Llama config (model_type "gpt2" or "llama") clformer runs; the
 * tokenizer of tokenizer.json or tokenizer.model first, of at most
 * vocab_size ids (one clformer does not read: the others, else ids only,
 * tokenizer_problem saying why); vocab.json and merges.txt both or neither, a BPE of at most vocab_size
 * tokens; clformer_vocab.json exactly vocab_size
 * distinct tokens; clformer_spm.model only with clformer_vocab.json. */
clformer_status cf_hf_files_parse(const char *dir, const cf_hf_files *f, cf_hf_parsed *out);
void cf_hf_parsed_free(cf_hf_parsed *p);

#endif
