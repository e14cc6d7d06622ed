/*
 * Text as a language model's token stream (host only): the vocabulary of a
 * character or byte tokenizer built from a text, and text <-> ids under a
 * vocabulary. Vocabulary tokens may not hold whitespace (vocab.c), so a
 * whitespace or control character, and every byte of a byte-level
 * vocabulary, is the token "<0xNN>" (SentencePiece's byte-fallback
 * spelling); every other character is itself. One encoding rule serves both
 * kinds: a character that is a token is that id; otherwise each of its bytes
 * is "<0xNN>" when the vocabulary has it, else <unk>.
 */
#ifndef CF_LM_TEXT_H
#define CF_LM_TEXT_H

#include "clformer.h"
#include "vocab.h"

/* The 4 specials, then every distinct character of `text` in byte order
 * (bytes: all 256 "<0xNN>"); *tokens (malloc'd, free with cf_lm_tokens_free). */
clformer_status cf_lm_vocab_build(const char *text, size_t len, bool bytes, char ***tokens,
                                  int *n);
void cf_lm_tokens_free(char **tokens, int n);

/* The ids of `text` under `v` (malloc'd, *n of them); *unknown counts the
 * <unk>s (characters the vocabulary lacks). */
clformer_status cf_lm_encode(const cf_vocab *v, const char *text, size_t len, int32_t **ids,
                             size_t *n, size_t *unknown);

/* The text a token stands for, into out (at least strlen(token) + 1 bytes):
 * "<0xNN>" is that byte, the specials nothing, anything else itself.
 * Returns the byte count written (no terminator counted; out is terminated). */
size_t cf_lm_token_text(const char *token, char *out);

#endif
