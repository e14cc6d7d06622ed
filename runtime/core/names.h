/* Choosing among named values (names.c): the helper behind the public
 * clformer_*_parse functions and the presets (runtime/model/presets.c). */
#ifndef CF_NAMES_H
#define CF_NAMES_H

#include "clformer.h"

/* The number of elements of an array. */
#define CF_COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

/* *out = the index of `word` in names[0..n); CLFORMER_ERR_INVALID_ARGUMENT
 * "unknown WHAT 'word': use a, b or c" otherwise (also for a NULL word). */
clformer_status cf_parse_word(const char *what, const char *const *names, int n,
                              const char *word, int *out);

#endif
