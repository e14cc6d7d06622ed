/* Printing a language model's text token by token (lm_stream.h). */
#include "lm_stream.h"

/* Writes text (len bytes) and releases it. */
static clformer_status write_out(lm_stream *s, clformer_status st, char *text, size_t len)
{
    if (st == CLFORMER_OK && len) {
        fwrite(text, 1, len, s->out);
        fflush(s->out);
    }
    clformer_free(text);
    return st;
}

clformer_status lm_stream_start(lm_stream *s, const clformer_model *model, FILE *out,
                                const int32_t *prompt, size_t n)
{
    s->out = out;
    return clformer_lm_text_stream_create(model, prompt, n, &s->text);
}

clformer_status lm_stream_push(lm_stream *s, int32_t id)
{
    char *text = NULL;
    size_t len = 0;
    const clformer_status st = clformer_lm_text_stream_push(s->text, id, &text, &len);
    return write_out(s, st, text, len);
}

clformer_status lm_stream_finish(lm_stream *s)
{
    char *text = NULL;
    size_t len = 0;
    clformer_status st = s->text ? clformer_lm_text_stream_flush(s->text, &text, &len)
                                 : CLFORMER_OK;
    st = write_out(s, st, text, len);
    clformer_lm_text_stream_free(s->text);
    s->text = NULL;
    return st;
}
