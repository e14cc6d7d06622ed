/*
 * sacreBLEU's default tokenizer, '13a' (the one of WMT's mteval-v13a
 * script), as sacreBLEU 2.x applies it to each line before counting n-grams:
 *
 *   1. trailing whitespace is removed (sacreBLEU strips each line first);
 *   2. "<skipped>" and "-\n" are deleted, other '\n' become spaces;
 *   3. the HTML entities &quot; &amp; &lt; &gt; become " & < > (in that
 *      order, each replaced throughout before the next);
 *   4. the line is padded with a space on each side, then four rewrites run
 *      in turn, each scanning left to right over non-overlapping matches:
 *      a. every ASCII punctuation mark other than ' , - . gets a space on
 *         each side;
 *      b. a '.' or ',' after a non-digit gets a space on each side;
 *      c. a '.' or ',' before a non-digit gets a space on each side;
 *      d. a '-' after a digit gets a space on each side;
 *   5. tokens are then split on whitespace like Python's str.split().
 *
 * "Digit" is ASCII 0-9 only; every other code point (letters, accented or
 * not, and non-ASCII punctuation such as the German quotes) is a non-digit
 * and never split off.
 */
#ifndef CF_TOK13A_H
#define CF_TOK13A_H

#include "clformer.h"

/* The 13a-tokenised form of `line` (NUL-terminated, valid UTF-8) as a new
 * NUL-terminated string in *out (free() it); tokens are separated by
 * whitespace, possibly more than one space. */
clformer_status cf_tokenize_13a(const char *line, char **out);

#endif
