/*
 * GPT-2's byte-level BPE, read from the usual vocab.json + merges.txt files
 * (what GPT-2's release, Hugging Face's `save_pretrained` and `tokenizers`'
 * ByteLevelBPETokenizer.save_model write). Encoding gives the ids Hugging
 * Face `tokenizers` gives on the same files (ByteLevel pre-tokenizer without
 * a prefix space, no special-token splitting: "<|endoftext|>" inside a text
 * is encoded as ordinary text; look its id up with cf_bpe_token_id).
 *
 * Byte-level: every byte sequence encodes, invalid UTF-8 included, and
 * decoding gives the bytes back (decode(encode(x)) == x).
 */
#ifndef CF_TOKENIZER_BPE_H
#define CF_TOKENIZER_BPE_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cf_bpe cf_bpe;

/*
 * Builds a tokenizer from the contents of vocab.json (a JSON object of
 * token -> id, ids 0..N-1 each once) and merges.txt (an optional
 * "#version" line, then one "left right" pair a line, highest priority
 * first). The origins name the files in errors (a path, or "checkpoint
 * x.safetensors, clformer.bpe_vocab"). Bad files: CLFORMER_ERR_FORMAT with
 * the file, the line and what to fix.
 */
clformer_status cf_bpe_load(const char *vocab_json, size_t vocab_len, const char *vocab_origin,
                            const char *merges, size_t merges_len, const char *merges_origin,
                            cf_bpe **out);

/* cf_bpe_load on two files. */
clformer_status cf_bpe_load_files(const char *vocab_path, const char *merges_path, cf_bpe **out);

void cf_bpe_free(cf_bpe *bpe);

/* The pre-tokenizer's split of a text into words, before the bytes of each
 * word are merged (tokenizer_hf.c reads which from tokenizer.json):
 * - GPT2: ByteLevel's own regex (use_regex), the default;
 * - DIGITS_GPT2: every number character a word of its own (Digits with
 *   individual_digits), then GPT-2's regex on the rest (SmolLM);
 * - LLAMA3: Split on Llama 3's regex, then ByteLevel without its regex. */
typedef enum { CF_BPE_SPLIT_GPT2, CF_BPE_SPLIT_DIGITS_GPT2, CF_BPE_SPLIT_LLAMA3 } cf_bpe_split;
void cf_bpe_set_split(cf_bpe *bpe, cf_bpe_split split);

/* Number of ids (the largest id + 1). */
int32_t cf_bpe_vocab_size(const cf_bpe *bpe);

/* The id of a token spelled as in vocab.json ("<|endoftext|>", "Ġthe"), or
 * -1 when it has none. */
int32_t cf_bpe_token_id(const cf_bpe *bpe, const char *token);

/* The bytes id stands for (*len of them; not NUL-terminated), NULL for an
 * id outside the vocabulary. */
const char *cf_bpe_token_bytes(const cf_bpe *bpe, int32_t id, size_t *len);

/*
 * Encodes text[0..len) (any bytes). *ids (malloc'd, free it) gets *n ids.
 * Splitting a text in pieces and encoding them apart can give other ids
 * than encoding it whole (at least around whitespace): encode whole texts.
 */
clformer_status cf_bpe_encode(const cf_bpe *bpe, const char *text, size_t len, int32_t **ids,
                              size_t *n);

/* Decodes ids into *text (malloc'd and NUL-terminated, *len bytes without the
 * NUL). An id outside the vocabulary: CLFORMER_ERR_INVALID_ARGUMENT. */
clformer_status cf_bpe_decode(const cf_bpe *bpe, const int32_t *ids, size_t n, char **text,
                              size_t *len);

#endif
