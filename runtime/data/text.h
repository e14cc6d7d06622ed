/*
 * Text primitives shared by the data pipeline, BLEU and the tools' line
 * files: strict UTF-8 validation, whitespace tokenisation, and the checks
 * and in-place splitting of a one-sentence-per-line file read whole.
 *
 * "Whitespace" is exactly what Python's str.split() splits on (the code
 * points for which str.isspace() is true), so that a sentence has the same
 * tokens here as in sacreBLEU (`--tokenize none`) and in PyTorch-side tools.
 */
#ifndef CF_TEXT_H
#define CF_TEXT_H

#include "clformer.h"

#include <stdbool.h>
#include <stddef.h>

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

/* --- a text file held in memory: buf[0..size), with buf[size] == NUL ------ */

/* Steps *buf and *size past a leading UTF-8 byte order mark, if any: a
 * file's mark is not part of its first line. */
void cf_skip_bom(char **buf, size_t *size);

/* CLFORMER_OK when buf[0..size) holds no NUL byte and is well-formed UTF-8;
 * else CLFORMER_ERR_FORMAT with "<name>:<line>: NUL byte at byte <b> of the
 * line; <rule>" or "<name>:<line>: invalid UTF-8 at byte <b> of the line
 * (0x<byte>); <rule>" (line and byte 1-based). */
clformer_status cf_check_text(const char *name, const char *buf, size_t size, const char *rule);

/* Lines: '\n'-terminated ones plus an unterminated last one. */
size_t cf_count_lines(const char *buf, size_t size);

/* Splits the text in place into its n = cf_count_lines lines: each '\n'
 * becomes the NUL that ends its line (the last ends at buf[size]). */
void cf_split_lines(char *buf, size_t size, char **lines, size_t n);

#endif
