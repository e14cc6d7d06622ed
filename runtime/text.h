/*
 * Text primitives shared by the data pipeline and BLEU: strict UTF-8
 * validation and whitespace tokenisation.
 *
 * "Whitespace" is exactly what Python's str.split() splits on (the code
 * points for which str.isspace() is true), so that a sentence has the same
 * tokens here as in sacreBLEU (`--tokenize none`) and in PyTorch-side tools.
 */
#ifndef CF_TEXT_H
#define CF_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Returns true when s[0..n) is well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). On false, *bad (if not NULL) is the
 * byte offset of the first ill-formed sequence.
 */
bool cf_utf8_valid(const char *s, size_t n, size_t *bad);

/*
 * The next whitespace-separated token of s[*pos..n), which must be valid
 * UTF-8. Returns false when no token is left; otherwise sets *start and *len
 * to the token's bytes and advances *pos past it.
 *
 *     size_t pos = 0, start, len;
 *     while (cf_next_token(s, n, &pos, &start, &len)) use(s + start, len);
 */
bool cf_next_token(const char *s, size_t n, size_t *pos, size_t *start, size_t *len);

/* Number of whitespace-separated tokens in s[0..n) (valid UTF-8). */
size_t cf_count_tokens(const char *s, size_t n);

/* True when the token s[0..n) contains a whitespace code point. */
bool cf_has_whitespace(const char *s, size_t n);

#endif
