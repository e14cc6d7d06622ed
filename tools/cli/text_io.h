/*
 * Text in and out of a model, for the tools: tokenising sentences with the
 * model's vocabularies, translating lists of sentences in length-sorted
 * batches, and the loss of a model on a corpus of sentence pairs.
 */
#ifndef CLFORMER_TEXT_IO_H
#define CLFORMER_TEXT_IO_H

#include "clformer.h"
#include "corpus.h"
#include "vocab.h"

typedef struct {
    clformer_model *model;
    cf_vocab *src, *tgt; /* built from the model's vocabularies */
} text_session;

clformer_status text_session_open(clformer_model *model, text_session *s);
void text_session_close(text_session *s);

/* Called after each batch with the number of sentences done so far. */
typedef void (*text_progress)(void *user, size_t done, size_t total);

/* Translates n sentences (UTF-8, whitespace tokens) into outputs[i]
 * (malloc'd; free each). Sentences are sorted by length and decoded
 * batch_size at a time; a source longer than the model's max_len is cut to
 * fit (counted in *truncated, may be NULL). */
clformer_status text_translate(text_session *s, const char *const *sentences, size_t n,
                               const clformer_decode_options *options, size_t batch_size,
                               char **outputs, size_t *truncated, text_progress progress,
                               void *user);

/* One sentence's source ids (<sos> ... <eos>, cut to max_len); *len receives
 * the count. For --attention labels and callers that need the ids. */
clformer_status text_encode_source(text_session *s, const char *sentence, int32_t **ids,
                                   size_t *len);

/* Mean cross-entropy (dropout off) over every pair of `corpus`, batched by
 * about batch_tokens padded tokens. */
clformer_status text_corpus_loss(clformer_model *model, const cf_corpus *corpus,
                                 size_t batch_tokens, double *loss, size_t *tokens);

#endif
