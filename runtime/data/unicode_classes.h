/*
 * Which code points above ASCII are letters (\p{L}) or numbers (\p{N}), as
 * GPT-2's pre-tokenizer (runtime/data/tokenizer_bpe.c) needs them. The table,
 * runtime/data/unicode_classes.c, is generated from Python's unicodedata by
 * tools/reference/make_unicode_classes.py.
 */
#ifndef CF_UNICODE_CLASSES_H
#define CF_UNICODE_CLASSES_H

#include <stddef.h>
#include <stdint.h>

enum { CF_UNICODE_LETTER = 1, CF_UNICODE_NUMBER = 2 };

typedef struct {
    uint32_t first, last; /* inclusive */
    uint32_t cls;         /* CF_UNICODE_LETTER or CF_UNICODE_NUMBER */
} cf_unicode_range;

/* Sorted, disjoint ranges; code points in none are neither. */
extern const cf_unicode_range cf_unicode_ln_ranges[];
extern const size_t cf_unicode_ln_count;

#endif
