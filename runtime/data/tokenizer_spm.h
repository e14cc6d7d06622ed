/*
 * Subword tokenisation with SentencePiece (the C++ library from Debian's
 * libsentencepiece-dev, wrapped here behind a C interface).
 *
 * A cf_spm holds one SentencePiece model (its serialized bytes, what spm_train
 * writes to FILE.model). Its ids are clformer's: 0..3 are <pad> <sos> <eos>
 * <unk> whatever ids the model gives those four, and the model's other pieces
 * follow in the model's order. Models trained by cf_spm_train already use
 * these ids (pad 0, bos 1, eos 2, unk 3, pieces spelled like
 * cf_special_tokens), so for them the mapping is the identity.
 *
 * Text in, text out: encoding splits raw (detokenised) UTF-8 text into
 * pieces, decoding joins pieces back into raw text.
 */
#ifndef CF_TOKENIZER_SPM_H
#define CF_TOKENIZER_SPM_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cf_spm cf_spm;

typedef struct {
    int vocab_size;          /* pieces, the 4 specials included (>= 8) */
    const char *model_type;  /* "unigram" or "bpe" */
    size_t max_sentences;    /* sentences sampled for training (0: all) */
    int threads;             /* training threads (>= 1) */
    unsigned seed;           /* the sampler's seed: same text, same seed, same model */
} cf_spm_train_options;

/*
 * Learns a model from `n` NUL-terminated UTF-8 sentences (raw text; every
 * character is kept: character coverage 1). *model (malloc'd, free it) gets
 * the serialized model, *size its bytes. Errors: CLFORMER_ERR_INVALID_ARGUMENT
 * for bad options or a text that cannot give vocab_size pieces (the message
 * says the largest size that fits when SentencePiece tells it),
 * CLFORMER_ERR_OUT_OF_MEMORY.
 */
clformer_status cf_spm_train(const char *const *sentences, size_t n,
                             const cf_spm_train_options *options, char **model, size_t *size);

/*
 * Loads a serialized model. `origin` names it in errors (a file name,
 * "checkpoint x.safetensors, clformer.src_spm"). Not a SentencePiece model,
 * or one without an unknown piece: CLFORMER_ERR_FORMAT.
 */
clformer_status cf_spm_load(const void *model, size_t size, const char *origin, cf_spm **out);

/*
 * Checks that the model's pieces are exactly vocab[0..n) in id order, as the
 * vocabulary stored beside it in a checkpoint must be. `origin` names the
 * model and `side` ("source", "target") the vocabulary in errors
 * (CLFORMER_ERR_INVALID_ARGUMENT, naming the first difference).
 */
clformer_status cf_spm_check_vocab(const cf_spm *spm, const char *const *vocab, int n,
                                   const char *origin, const char *side);

/* Reads FILE.model (as written by spm_train or cf_spm_save) and loads it. */
clformer_status cf_spm_load_file(const char *path, cf_spm **out);

void cf_spm_free(cf_spm *spm);

/* Number of ids, specials included. */
int32_t cf_spm_size(const cf_spm *spm);

/* The piece of an id ("▁the", "<unk>"), NUL-terminated, or NULL when out of
 * range; ids 0..3 give cf_special_tokens. */
const char *cf_spm_piece(const cf_spm *spm, int32_t id);

/* The model's serialized bytes (what cf_spm_load took). */
const void *cf_spm_bytes(const cf_spm *spm, size_t *size);

/*
 * Encodes s[0..len) (valid UTF-8) like cf_vocab_encode: writes at most `cap`
 * ids, wrapped in <sos> ... <eos> when `specials`, and returns the full count
 * in *count; *n_unk (if not NULL) counts the pieces that became <unk>.
 */
clformer_status cf_spm_encode(const cf_spm *spm, const char *s, size_t len, bool specials,
                              int32_t *ids, size_t cap, size_t *count, size_t *n_unk);

/*
 * Decodes ids to raw text like cf_vocab_decode: <pad> and <sos> are dropped,
 * decoding stops at the first <eos>, <unk> becomes SentencePiece's " ⁇ ".
 * *out is malloc'd (free it). An id outside [0, size) is
 * CLFORMER_ERR_INVALID_ARGUMENT naming its position.
 */
clformer_status cf_spm_decode(const cf_spm *spm, const int32_t *ids, size_t n, char **out);

/* The pieces of raw sentence s[0..len) joined by single spaces ("▁A ▁man
 * ..."; <unk> for unknown ones): the sentence as a whitespace-tokenised line
 * whose tokens are the vocabulary's, so the word-level pipeline (vocab.h,
 * corpus.h) gives the same ids as cf_spm_encode. *out is malloc'd. */
clformer_status cf_spm_pieces_line(const cf_spm *spm, const char *s, size_t len, char **out);

/*
 * Native ids: the model's own ids, as a Hugging Face model directory's
 * tokenizer.model is used (Llama: unk 0, bos 1, eos 2, byte pieces
 * <0x00>..<0xFF> for byte fallback), without clformer's remapping above.
 */
int32_t cf_spm_native_size(const cf_spm *spm);
/* The piece of a native id, NULL out of range. */
const char *cf_spm_native_piece(const cf_spm *spm, int32_t id);
/* The model's unk, bos, eos and pad ids (-1 where it has none). */
void cf_spm_native_specials(const cf_spm *spm, int32_t *unk, int32_t *bos, int32_t *eos,
                            int32_t *pad);
/* SentencePiece's own encoding of s[0..len) (its normalisation and dummy
 * prefix, byte fallback); *ids malloc'd, *n of them; no BOS or EOS. */
clformer_status cf_spm_native_encode(const cf_spm *spm, const char *s, size_t len, int32_t **ids,
                                     size_t *n);
/* SentencePiece's decoding: control pieces (bos, eos) give nothing, unk
 * " ⁇ ", byte pieces their bytes. *out malloc'd, NUL-terminated,
 * *len bytes. An id out of range: CLFORMER_ERR_INVALID_ARGUMENT. */
clformer_status cf_spm_native_decode(const cf_spm *spm, const int32_t *ids, size_t n, char **out,
                                     size_t *len);

#ifdef __cplusplus
}
#endif

#endif
