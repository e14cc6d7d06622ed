/* A language model's text token by token (clformer_lm_text_stream): each
 * token's text is the new part of the decoded text so far (a token's text
 * can depend on the one before it: SentencePiece drops the space before a
 * line's first word), and bytes that begin a UTF-8 character wait until the
 * character is complete (GPT-2's byte-level BPE and byte vocabularies split
 * characters). It sits beside lm.c, whose decoding it uses. `clformer
 * generate` prints with it; the Python package's streaming generate yields it. */
#include "status.h"

#include <stdlib.h>
#include <string.h>

struct clformer_lm_text_stream {
    const clformer_model *model;
    int32_t *ids; /* the tokens since the last newline given out (the prompt's at first) */
    size_t n, cap;
    size_t given; /* bytes of their text already given out */
};

/* How many of the last bytes of s[0..n) begin a UTF-8 character that is not
 * complete yet (0 when the text ends on a whole character or on bytes that
 * no continuation can make valid). */
static size_t incomplete_tail(const unsigned char *s, size_t n)
{
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        const unsigned char c = s[n - k];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        const size_t need = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        return need > k ? k : 0;
    }
    return 0;
}

static clformer_status append(clformer_lm_text_stream *s, const int32_t *ids, size_t n)
{
    if (s->n + n > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n) cap *= 2;
        int32_t *grown = realloc(s->ids, cap * sizeof *grown);
        if (!grown) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        s->ids = grown, s->cap = cap;
    }
    if (n) memcpy(s->ids + s->n, ids, n * sizeof *ids);
    s->n += n;
    return CLFORMER_OK;
}

clformer_status clformer_lm_text_stream_create(const clformer_model *model, const int32_t *prompt,
                                               size_t n, clformer_lm_text_stream **stream)
{
    *stream = NULL;
    clformer_lm_text_stream *s = calloc(1, sizeof *s);
    if (!s) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    s->model = model;
    char *text = NULL;
    clformer_status st = append(s, prompt, n);
    if (st == CLFORMER_OK) st = clformer_lm_decode(model, s->ids, s->n, &text);
    if (st != CLFORMER_OK) {
        clformer_lm_text_stream_free(s);
        return st;
    }
    s->given = strlen(text);
    clformer_free(text);
    *stream = s;
    return CLFORMER_OK;
}

/* The decoded text past what was given out, all of it or up to an
 * incomplete character at its end, into *out (len bytes). */
static clformer_status take(clformer_lm_text_stream *s, bool all, char **out, size_t *len)
{
    *out = NULL;
    char *text = NULL;
    CF_TRY(clformer_lm_decode(s->model, s->ids, s->n, &text));
    const size_t n = strlen(text);
    size_t end = n;
    if (!all) end -= incomplete_tail((const unsigned char *)text, n);
    const size_t from = end > s->given ? s->given : end;
    if (end > s->given) s->given = end;
    /* a newline, all given out: the text so far no longer matters */
    const bool restart = s->given == n && n > 0 && text[n - 1] == '\n';
    memmove(text, text + from, end - from);
    text[end - from] = '\0';
    *len = end - from;
    if (restart) s->n = 0, s->given = 0;
    *out = text;
    return CLFORMER_OK;
}

clformer_status clformer_lm_text_stream_push(clformer_lm_text_stream *s, int32_t id, char **text,
                                             size_t *len)
{
    *text = NULL;
    CF_TRY(append(s, &id, 1));
    size_t n;
    CF_TRY(take(s, false, text, &n));
    if (len) *len = n;
    return CLFORMER_OK;
}

clformer_status clformer_lm_text_stream_flush(clformer_lm_text_stream *s, char **text, size_t *len)
{
    size_t n;
    CF_TRY(take(s, true, text, &n));
    if (len) *len = n;
    return CLFORMER_OK;
}

void clformer_lm_text_stream_free(clformer_lm_text_stream *s)
{
    if (!s) return;
    free(s->ids);
    free(s);
}
