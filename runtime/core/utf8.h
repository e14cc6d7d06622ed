/*
 * UTF-8 for the runtime: one reader and one writer of a code point, which the
 * validator (clformer_utf8_valid), the byte-level BPE tokenizer and
 * lower-casing all use, so they agree on what a character is.
 */
#ifndef CF_UTF8_H
#define CF_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Longest encoding of one code point. */
#define CF_UTF8_MAX 4

/* The well-formed UTF-8 character at s[0..n) (n >= 1), its length in
 * *cp_len; anything else (a stray continuation byte, 0xC0/0xC1/0xF5.., a
 * truncated or overlong sequence, a surrogate, beyond U+10FFFF) is returned
 * as UINT32_MAX with length 1. */
uint32_t cf_utf8_get(const unsigned char *s, size_t n, size_t *cp_len);

/* Writes code point cp (at most U+10FFFF) to out; returns its length. */
size_t cf_utf8_put(uint32_t cp, char out[CF_UTF8_MAX]);

#endif
