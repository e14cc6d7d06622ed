/*
 * The tokenizer of a Hugging Face language-model directory (Llama, SmolLM,
 * Qwen-style), in the model's own ids, giving the ids transformers 4.36 and
 * `tokenizers` give on the same files:
 *
 * - tokenizer.json with a byte-level BPE model (model.vocab + model.merges):
 *   the text is first cut at the added tokens (added_tokens, leftmost
 *   longest match, special or not), each other part is split by the
 *   pre_tokenizer (ByteLevel's GPT-2 regex; Digits then ByteLevel, as
 *   SmolLM; Llama 3's Split regex then ByteLevel, tokenizer_bpe.h) and
 *   merged by tokenizer_bpe.c; a TemplateProcessing post_processor's special
 *   tokens (Llama 3's <|begin_of_text|>) go around it when add_special.
 *   Not supported, each a clear error at load: a normalizer, other models
 *   and pre-tokenizers, add_prefix_space, added tokens with lstrip, rstrip
 *   or single_word.
 * - tokenizer.model (SentencePiece) with Llama's conventions, as
 *   transformers' LlamaTokenizer (legacy, 4.36's default): the text cut at
 *   the model's <unk>, <s> and </s> pieces (their ids), each other part
 *   encoded by SentencePiece (its dummy prefix, byte fallback), BOS in front
 *   when add_special, no EOS.
 */
#ifndef CF_TOKENIZER_HF_H
#define CF_TOKENIZER_HF_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cf_hf_tokenizer cf_hf_tokenizer;

/* From tokenizer.json's text; `origin` names it in errors
 * (CLFORMER_ERR_FORMAT naming the field and what is supported). */
clformer_status cf_hf_tokenizer_from_json(const char *json, size_t len, const char *origin,
                                          cf_hf_tokenizer **out);

/* From tokenizer.model's bytes. */
clformer_status cf_hf_tokenizer_from_spm(const void *model, size_t size, const char *origin,
                                         cf_hf_tokenizer **out);

/* The files of a directory's tokenizer, as transformers' save_pretrained
 * writes them; the model keeps their bytes so that checkpoints and exports
 * carry them (tokenizer_config.json names the EOS and BOS tokens). */
enum { CF_HF_TOK_JSON, CF_HF_TOK_MODEL, CF_HF_TOK_CONFIG, CF_HF_TOK_SPECIALS, CF_HF_TOK_FILES };
extern const char *const cf_hf_tok_file_names[CF_HF_TOK_FILES];

/* The tokenizer of those files (data[i] NULL when file i is not there;
 * `dir` names them in errors): tokenizer.json when it holds a byte-level
 * BPE, else tokenizer.model (Llama 2's tokenizer.json is a converted
 * SentencePiece model, read from tokenizer.model instead). Neither there:
 * CLFORMER_ERR_INVALID_ARGUMENT; one clformer does not read:
 * CLFORMER_ERR_FORMAT naming what. */
clformer_status cf_hf_tokenizer_from_files(const char *const data[CF_HF_TOK_FILES],
                                           const size_t size[CF_HF_TOK_FILES], const char *dir,
                                           cf_hf_tokenizer **out);

/* A model directory's (cf_hf_tokenizer_from_files of its files). */
clformer_status cf_hf_tokenizer_load_dir(const char *dir, cf_hf_tokenizer **out);

void cf_hf_tokenizer_free(cf_hf_tokenizer *t);

/* Whether it is tokenizer.json's byte-level BPE (else a SentencePiece model). */
bool cf_hf_tokenizer_is_bpe(const cf_hf_tokenizer *t);

/* Number of ids (the largest id + 1, added tokens included). */
int32_t cf_hf_tokenizer_size(const cf_hf_tokenizer *t);

/* The id of a token spelled as in the files ("<|im_end|>", "</s>"), or -1. */
int32_t cf_hf_tokenizer_token_id(const cf_hf_tokenizer *t, const char *token);

/* The id put in front when add_special (BOS), else tokenizer_config.json's
 * bos_token; -1 when there is none. */
int32_t cf_hf_tokenizer_bos(const cf_hf_tokenizer *t);

/* The id that ends a text: tokenizer_config.json's eos_token, else
 * SentencePiece's </s>; -1 when there is none. */
int32_t cf_hf_tokenizer_eos(const cf_hf_tokenizer *t);

/* The ids add_special puts before (after false) or after the text. */
const int32_t *cf_hf_tokenizer_specials(const cf_hf_tokenizer *t, bool after, size_t *n);

/* The ids of text[0..len) (*ids malloc'd, *n of them); add_special adds
 * what the post-processor (BPE) or Llama's convention (BOS) adds, as
 * `tokenizers`' encode and transformers' tokenizer(text) do by default. */
clformer_status cf_hf_tokenizer_encode(const cf_hf_tokenizer *t, const char *text, size_t len,
                                       bool add_special, int32_t **ids, size_t *n);

/* The text of ids (*text malloc'd, NUL-terminated, *len bytes). Byte-level
 * BPE gives back the bytes (special tokens as spelled, unless
 * skip_special); SentencePiece decodes as its library does (BOS and EOS
 * give nothing; <unk> " ⁇ " unless skip_special), as transformers'
 * decode(ids, skip_special_tokens=skip_special) does. An id outside
 * [0, size): CLFORMER_ERR_INVALID_ARGUMENT. */
clformer_status cf_hf_tokenizer_decode(const cf_hf_tokenizer *t, const int32_t *ids, size_t n,
                                       bool skip_special, char **text, size_t *len);

#endif
