/*
 * A language model's text <-> ids, whatever its tokenizer (host only): the
 * character or byte vocabulary (lm_text.h), GPT-2's byte-level BPE
 * (tokenizer_bpe.h), a SentencePiece model (tokenizer_spm.h) or a Hugging
 * Face directory's tokenizer (tokenizer_hf.h). The model
 * layer says which one a model has; this file only encodes and decodes.
 *
 * SentencePiece works on sentences and folds whitespace, so a text is its
 * lines: each line's pieces, then <eos> for the newline that ends it.
 * Decoding writes <eos> as "\n" and drops the space SentencePiece puts
 * before a line's first word. (GPT-2's BPE and the char/byte vocabularies
 * give every byte back; SentencePiece gives the lines back as its
 * normalisation leaves them.) A Hugging Face directory's tokenizer encodes
 * as transformers' tokenizer(text) does, BOS (or its template) around the
 * whole text, and decodes as decode(ids, skip_special_tokens=True).
 *
 * Files are encoded in chunks (cf_lm_codec_encode_file), each cut after a
 * newline where cutting cannot change the tokens, so the same file gives
 * the same ids as encoding it whole while only the token stream and one
 * chunk are in memory (a Hugging Face SentencePiece model's text is read
 * whole: its dummy prefix would start every chunk).
 */
#ifndef CF_LM_CODEC_H
#define CF_LM_CODEC_H

#include "tokenizer_bpe.h"
#include "tokenizer_hf.h"
#include "tokenizer_spm.h"
#include "vocab.h"

/* One of the four is used (hf, else bpe, else spm, else vocab); borrowed. */
typedef struct {
    const cf_vocab *vocab;
    const cf_bpe *bpe;
    const cf_spm *spm;
    int32_t size; /* the model's vocabulary size: ids at or above the tokenizer's decode to nothing */
    const cf_hf_tokenizer *hf;
} cf_lm_codec;

/* The ids of text[0..len) (malloc'd, *n of them); *unknown counts the
 * characters (char vocabularies) or pieces (SentencePiece) that became <unk>. */
clformer_status cf_lm_codec_encode(const cf_lm_codec *c, const char *text, size_t len,
                                   int32_t **ids, size_t *n, size_t *unknown);

/* The text of ids (malloc'd, NUL-terminated; *len bytes without the NUL, may
 * be NULL). An id outside [0, size): CLFORMER_ERR_INVALID_ARGUMENT. */
clformer_status cf_lm_codec_decode(const cf_lm_codec *c, const int32_t *ids, size_t n,
                                   char **text, size_t *len);

/* The file's ids, read and encoded `chunk` bytes at a time (0: 1 MiB); the
 * result equals cf_lm_codec_encode of the whole file. *bytes gets the
 * file's size. */
clformer_status cf_lm_codec_encode_file(const cf_lm_codec *c, const char *path, size_t chunk,
                                        int32_t **ids, size_t *n, size_t *unknown,
                                        size_t *bytes);

/* cf_lm_vocab_build (lm_text.h) of a file read `chunk` bytes at a time (0:
 * 1 MiB): the same vocabulary as from the whole text. */
clformer_status cf_lm_vocab_build_file(const char *path, bool bytes, size_t chunk, char ***tokens,
                                       int *n);

#endif
