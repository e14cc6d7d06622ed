/* Printing a language model's tokens as they come: clformer_lm_text_stream
 * (clformer.h) gives each token's text, complete characters only; this
 * writes it to a file as it comes. */
#ifndef CLFORMER_LM_STREAM_H
#define CLFORMER_LM_STREAM_H

#include "clformer.h"

#include <stdio.h>

typedef struct {
    clformer_lm_text_stream *text;
    FILE *out;
} lm_stream;

/* Starts after the prompt's ids (their text is taken as printed). */
clformer_status lm_stream_start(lm_stream *s, const clformer_model *model, FILE *out,
                                const int32_t *prompt, size_t n);
/* Writes what token `id` adds (complete characters only). */
clformer_status lm_stream_push(lm_stream *s, int32_t id);
/* Writes what is held back (an incomplete character at the end) and frees. */
clformer_status lm_stream_finish(lm_stream *s);

#endif
