/* Printing a language model's tokens as they come: each token's text is the
 * new part of the decoded text so far (a token's text can depend on the one
 * before it: SentencePiece drops the space before a line's first word), and
 * bytes that begin a UTF-8 character wait until the character is complete
 * (GPT-2's byte-level BPE and byte vocabularies split characters). */
#ifndef CLFORMER_LM_STREAM_H
#define CLFORMER_LM_STREAM_H

#include "clformer.h"

#include <stdio.h>

typedef struct {
    const clformer_model *model;
    FILE *out;
    int32_t *ids; /* the tokens since the last newline printed (the prompt's at first) */
    size_t n, cap;
    size_t printed; /* bytes of their text already written */
} lm_stream;

/* Starts after the prompt's ids (their text is taken as printed). */
clformer_status lm_stream_start(lm_stream *s, const clformer_model *model, FILE *out,
                                const int32_t *prompt, size_t n);
/* Writes what token `id` adds (complete characters only). */
clformer_status lm_stream_push(lm_stream *s, int32_t id);
/* Writes what is held back (an incomplete character at the end) and frees. */
clformer_status lm_stream_finish(lm_stream *s);

#endif
