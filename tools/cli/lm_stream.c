/* Streaming a language model's text token by token (lm_stream.h). */
#include "lm_stream.h"
#include "clformer_util.h"

#include <stdlib.h>
#include <string.h>

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        const clformer_status st_ = (expr);                                                        \
        if (st_ != CLFORMER_OK) return st_;                                                        \
    } while (0)

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

static clformer_status append(lm_stream *s, const int32_t *ids, size_t n)
{
    if (s->n + n > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n) cap *= 2;
        int32_t *grown = realloc(s->ids, cap * sizeof *grown);
        if (!grown) return clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        s->ids = grown, s->cap = cap;
    }
    memcpy(s->ids + s->n, ids, n * sizeof *ids);
    s->n += n;
    return CLFORMER_OK;
}

clformer_status lm_stream_start(lm_stream *s, const clformer_model *model, FILE *out,
                                const int32_t *prompt, size_t n)
{
    *s = (lm_stream){model, out, NULL, 0, 0, 0};
    TRY(append(s, prompt, n));
    char *text = NULL;
    TRY(clformer_lm_decode(model, s->ids, s->n, &text));
    s->printed = strlen(text);
    clformer_free(text);
    return CLFORMER_OK;
}

/* Writes the decoded text past what is printed, all of it or up to an
 * incomplete character at its end. */
static clformer_status flush(lm_stream *s, bool all)
{
    char *text = NULL;
    TRY(clformer_lm_decode(s->model, s->ids, s->n, &text));
    const size_t len = strlen(text);
    size_t end = len;
    if (!all) end -= incomplete_tail((const unsigned char *)text, len);
    if (end > s->printed) {
        fwrite(text + s->printed, 1, end - s->printed, s->out);
        fflush(s->out);
        s->printed = end;
    }
    /* a newline, all printed: the text so far no longer matters */
    const bool restart = s->printed == len && len > 0 && text[len - 1] == '\n';
    clformer_free(text);
    if (restart) s->n = 0, s->printed = 0;
    return CLFORMER_OK;
}

clformer_status lm_stream_push(lm_stream *s, int32_t id)
{
    TRY(append(s, &id, 1));
    return flush(s, false);
}

clformer_status lm_stream_finish(lm_stream *s)
{
    clformer_status st = s->ids ? flush(s, true) : CLFORMER_OK;
    free(s->ids);
    s->ids = NULL;
    return st;
}
