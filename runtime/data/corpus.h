/*
 * Parallel corpora: sentence pairs read from two line-aligned files (or
 * given in memory), then encoded to token ids.
 *
 * Two stages, so that a vocabulary can be built from the text in between:
 *
 *     cf_parallel_text *text;                      // validated sentences
 *     CF_TRY(cf_parallel_text_load("train.en", "train.de", &text));
 *     CF_TRY(cf_vocab_build(text->src, text->n, min_freq, max_vocab, &src_vocab));
 *     CF_TRY(cf_vocab_build(text->tgt, text->n, min_freq, max_vocab, &tgt_vocab));
 *     cf_corpus *train;                            // token ids, flat
 *     CF_TRY(cf_corpus_encode(text, src_vocab, tgt_vocab, max_len, &train));
 *     cf_parallel_text_free(text);
 *     if (train->n_too_long) log("%zu pairs longer than max_len skipped", ...);
 *
 * Rules for the input files:
 * - UTF-8 (strictly validated; an error names file:line and the byte); a
 *   NUL byte is an error; a UTF-8 byte order mark at the start is ignored.
 * - Lines end at '\n'; a final line without '\n' counts; '\r' (CRLF files)
 *   is whitespace like any other. Tokens are split as Python's str.split().
 * - Both files must have the same number of lines; otherwise the error
 *   names both files and both counts.
 * - A pair whose source or target line has no token is SKIPPED and counted
 *   (n_empty), so one blank line does not stop a run; when no pair is left
 *   the corpus is an error.
 * Line numbers below are 1-based line numbers of the input files, so
 * results can be matched back to the files after pairs were skipped.
 */
#ifndef CF_CORPUS_H
#define CF_CORPUS_H

#include "clformer.h"
#include "vocab.h"

#include <stddef.h>
#include <stdint.h>

/* Validated sentence pairs (text), clformer_parallel_text in the public API.
 * Read-only for users. */
typedef struct clformer_parallel_text {
    size_t n;            /* pairs kept */
    const char **src;    /* [n] NUL-terminated source sentences, as in the file */
    const char **tgt;    /* [n] target sentences */
    size_t *line;        /* [n] input line number of each pair */
    size_t n_lines;      /* lines in each input */
    size_t n_empty;      /* pairs skipped because a side had no token */
    char *src_name;      /* file names (or the names given) for messages */
    char *tgt_name;
    char *storage[2];    /* private: the text the pointers point into */
} cf_parallel_text;

/* Reads and validates two line-aligned files (rules above). Errors:
 * CLFORMER_ERR_IO (missing or unreadable file, naming it),
 * CLFORMER_ERR_FORMAT (line counts differ, invalid UTF-8, NUL byte, empty). */
clformer_status cf_parallel_text_load(const char *src_path, const char *tgt_path,
                                      cf_parallel_text **out);

/* The same from n in-memory line pairs (copied), e.g. the built-in demo task;
 * src_name/tgt_name stand for file names in messages. A line must not
 * contain '\n'. */
clformer_status cf_parallel_text_from_lines(const char *const *src, const char *const *tgt,
                                            size_t n, const char *src_name,
                                            const char *tgt_name, cf_parallel_text **out);

void cf_parallel_text_free(cf_parallel_text *text);

/*
 * Encoded sentence pairs. Every sequence is <sos> w1 ... wn <eos>; all of
 * them lie back to back in one int32 array, so 1M pairs cost about
 * 4 bytes per token plus 24 bytes per pair. Read-only for users; use
 * cf_corpus_src / cf_corpus_tgt. clformer_corpus in the public API.
 */
typedef struct clformer_corpus {
    size_t n;              /* pairs */
    int32_t *tokens;       /* every sequence, back to back */
    size_t *offset;        /* [2n+1] sequence k is tokens[offset[k] .. offset[k+1]),
                              k = 2i the source of pair i, k = 2i+1 its target */
    size_t *line;          /* [n] input line number of pair i */
    int max_len;           /* the length limit applied (0: none) */
    int max_src_len;       /* longest encoded source kept (specials included) */
    int max_tgt_len;       /* longest encoded target kept */
    size_t n_lines;        /* lines in each input */
    size_t n_empty;        /* pairs skipped: a side had no token */
    size_t n_too_long;     /* pairs skipped: a side longer than max_len (report it once) */
    size_t n_src_tokens;   /* tokens of the kept pairs, specials included */
    size_t n_tgt_tokens;
    size_t n_src_unk;      /* tokens of the kept pairs that became <unk> */
    size_t n_tgt_unk;
} cf_corpus;

/*
 * Encodes text with the two vocabularies. Pairs whose encoded source or
 * target is longer than max_len tokens (specials included) are skipped and
 * counted in n_too_long; max_len 0 means no limit, otherwise it must be at
 * least 3. Errors: CLFORMER_ERR_INVALID_ARGUMENT for a bad max_len or when
 * every pair is too long (the message says how many and the longest),
 * CLFORMER_ERR_OUT_OF_MEMORY.
 */
clformer_status cf_corpus_encode(const cf_parallel_text *text, const cf_vocab *src_vocab,
                                 const cf_vocab *tgt_vocab, int max_len, cf_corpus **out);

/* cf_parallel_text_load + cf_corpus_encode, for sets whose vocabularies
 * already exist (validation and test sets). */
clformer_status cf_corpus_load(const char *src_path, const char *tgt_path,
                               const cf_vocab *src_vocab, const cf_vocab *tgt_vocab,
                               int max_len, cf_corpus **out);

void cf_corpus_free(cf_corpus *c);

/* The encoded source of pair i; *len receives its length. */
static inline const int32_t *cf_corpus_src(const cf_corpus *c, size_t i, int *len)
{
    *len = (int)(c->offset[2 * i + 1] - c->offset[2 * i]);
    return c->tokens + c->offset[2 * i];
}

/* The encoded target of pair i; *len receives its length. */
static inline const int32_t *cf_corpus_tgt(const cf_corpus *c, size_t i, int *len)
{
    *len = (int)(c->offset[2 * i + 2] - c->offset[2 * i + 1]);
    return c->tokens + c->offset[2 * i + 1];
}

/* One line for the log: "29000 pairs, 12 skipped (longer than max_len 100),
 * 1 skipped (empty line)". Writes at most `size` bytes to buf. */
void cf_corpus_summary(const cf_corpus *c, char *buf, size_t size);

#endif
