/*
 * Vocabulary: the mapping between whitespace-separated tokens and ids.
 *
 * Ids 0..3 are the special tokens of every vocabulary (docs/MODEL.md):
 * <pad>, <sos>, <eos>, <unk>. Regular tokens follow, most frequent first;
 * tokens of equal frequency are ordered bytewise-lexicographically, so the
 * vocabulary depends only on the multiset of tokens, not on line order or
 * on the machine. Tokens are split exactly as Python's str.split() does
 * (text.h). A text token spelled like a special ("<unk>") maps to that
 * special's id and is never added as a regular entry.
 *
 * On disk and in checkpoints a vocabulary is a JSON array of its token
 * strings in id order: ["<pad>","<sos>","<eos>","<unk>","a",...].
 *
 * A cf_vocab is immutable once built or parsed; lookups are thread-safe.
 */
#ifndef CF_VOCAB_H
#define CF_VOCAB_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    CF_PAD = 0,
    CF_SOS = 1,
    CF_EOS = 2,
    CF_UNK = 3,
    CF_N_SPECIALS = 4
};

/* "<pad>", "<sos>", "<eos>", "<unk>" indexed by id. */
extern const char *const cf_special_tokens[CF_N_SPECIALS];

typedef struct clformer_vocab cf_vocab; /* clformer_vocab in the public API */

/*
 * Builds a vocabulary from `n` NUL-terminated UTF-8 sentences (typically the
 * training side of a corpus: cf_parallel_text's src or tgt array, which is
 * validated UTF-8).
 *   min_freq   >= 1: a token must occur at least this often to get an id
 *   max_vocab  total size cap, the 4 specials included (>= 4), or 0 for none;
 *              when the cap cuts a run of equal frequencies, the
 *              lexicographically smaller tokens are kept
 * Errors: CLFORMER_ERR_INVALID_ARGUMENT for a bad min_freq/max_vocab,
 * CLFORMER_ERR_OUT_OF_MEMORY.
 */
clformer_status cf_vocab_build(const char *const *sentences, size_t n, int min_freq,
                               int max_vocab, cf_vocab **out);

/* One joint vocabulary of both sides' sentences (n each), counted together
 * under the same rules (share_all_embed's). */
clformer_status cf_vocab_build_joint(const char *const *src, const char *const *tgt, size_t n,
                                     int min_freq, int max_vocab, cf_vocab **out);

void cf_vocab_free(cf_vocab *v);

/* Number of ids, specials included (>= 4). */
int32_t cf_vocab_size(const cf_vocab *v);

/* The id of the token s[0..len), or CF_UNK when it is not in the vocabulary. */
int32_t cf_vocab_id(const cf_vocab *v, const char *s, size_t len);

/* The id of a NUL-terminated token, or -1 when absent (no <unk> fallback). */
int32_t cf_vocab_find(const cf_vocab *v, const char *token);

/* Every token in id order (cf_vocab_size of them), owned by the vocabulary. */
const char *const *cf_vocab_tokens(const cf_vocab *v);

/* The NUL-terminated token of an id, or NULL when id is out of range. */
const char *cf_vocab_token(const cf_vocab *v, int32_t id);

/*
 * Encodes the sentence s[0..len): one id per whitespace token, wrapped in
 * <sos> ... <eos> when `specials` is true. Writes at most `cap` ids to `ids`
 * and returns the full count (like snprintf: call with cap 0 to size a
 * buffer). *n_unk (if not NULL) receives the number of tokens that became
 * <unk>. `s` must be valid UTF-8.
 */
size_t cf_vocab_encode(const cf_vocab *v, const char *s, size_t len, bool specials,
                       int32_t *ids, size_t cap, size_t *n_unk);

/*
 * Decodes ids to a sentence for output and BLEU: tokens joined by single
 * spaces; <pad> and <sos> are dropped and decoding stops at the first <eos>;
 * <unk> is written as "<unk>". *out is malloc'd (free it). An id outside
 * [0, size) is CLFORMER_ERR_INVALID_ARGUMENT naming its position.
 */
clformer_status cf_vocab_decode(const cf_vocab *v, const int32_t *ids, size_t n, char **out);

/* The vocabulary as a compact JSON array of strings in id order; *json is
 * malloc'd (free it). */
clformer_status cf_vocab_to_json(const cf_vocab *v, char **json);

/*
 * Parses a JSON array of token strings. `origin` names the source in error
 * messages (a file name, "checkpoint x.safetensors, clformer.src_vocab").
 * Validation (CLFORMER_ERR_FORMAT, message naming the entry): valid JSON; an
 * array; at least 4 entries; entries 0..3 are exactly the specials; every
 * entry a non-empty string without whitespace; no token twice.
 */
clformer_status cf_vocab_from_json(const char *json, size_t len, const char *origin,
                                   cf_vocab **out);

/* The same validation and result from an array of n token strings (e.g. the
 * vocabulary a checkpoint loaded into a model). */
clformer_status cf_vocab_from_tokens(const char *const *tokens, size_t n, const char *origin,
                                     cf_vocab **out);

/* Writes the JSON array to `path` atomically (fileio.h). */
clformer_status cf_vocab_save(const cf_vocab *v, const char *path);

/* Reads a file written by cf_vocab_save (errors name the file). */
clformer_status cf_vocab_load(const char *path, cf_vocab **out);

#endif
