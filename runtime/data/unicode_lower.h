/*
 * Python's str.lower() on UTF-8, which sacreBLEU applies to both sides
 * before lower-cased BLEU (`sacrebleu -lc`, `clformer eval --lowercase`):
 * the full Unicode lower-case mapping of each code point (U+0130 becomes
 * "i" + U+0307, two code points), and CAPITAL SIGMA becomes the final sigma
 * U+03C2 where Unicode's Final_Sigma rule says so (after a cased letter that
 * no cased letter follows, case-ignorable code points skipped), else U+03C3.
 *
 * The tables, runtime/data/unicode_lower_table.c, are generated from
 * str.lower() itself by tools/reference/make_unicode_lower.py; their header
 * names the Python and Unicode versions.
 */
#ifndef CF_UNICODE_LOWER_H
#define CF_UNICODE_LOWER_H

#include "clformer.h"

#include <stddef.h>
#include <stdint.h>

/* The most code points one code point lowers to. */
#define CF_LOWER_MAX 3

/* Code points first, first + stride, ..., last (stride 1 or 2) lower to
 * cp + delta; the runs are sorted and disjoint. */
typedef struct {
    uint32_t first, last;
    uint32_t stride;
    int32_t delta;
} cf_lower_run;

/* A code point that lowers to n > 1 code points. */
typedef struct {
    uint32_t cp;
    uint32_t n;
    uint32_t to[CF_LOWER_MAX];
} cf_lower_multi;

/* How the final-sigma rule sees a code point: a cased letter, or one it
 * skips (case-ignorable); code points in no range are neither. */
enum { CF_SIGMA_CASED = 1, CF_SIGMA_IGNORABLE = 2 };
typedef struct {
    uint32_t first, last; /* inclusive */
    uint32_t cls;
} cf_sigma_range;

extern const cf_lower_run cf_lower_runs[];
extern const size_t cf_lower_run_count;
extern const cf_lower_multi cf_lower_multis[];
extern const size_t cf_lower_multi_count;
extern const cf_sigma_range cf_sigma_ranges[];
extern const size_t cf_sigma_range_count;

/* The lower-case form of one code point on its own (CAPITAL SIGMA gives
 * U+03C3: the context decides the final form): writes 1..CF_LOWER_MAX code
 * points to out and returns how many. */
size_t cf_lower_code_point(uint32_t cp, uint32_t out[CF_LOWER_MAX]);

/* str.lower() of the UTF-8 string s[0..n) as a new NUL-terminated string in
 * *out (free() it; *out_len, may be NULL, gets its length). Invalid UTF-8
 * is CLFORMER_ERR_INVALID_ARGUMENT naming the byte, as the BLEU input check
 * words it, and *out is NULL. */
clformer_status cf_utf8_lower(const char *s, size_t n, char **out, size_t *out_len);

#endif
