/* A language model's loss on a text (clformer_session_lm_score): the text's
 * tokens in consecutive windows of the model's context, each predicting its
 * tokens after the first, so every token but the text's first is scored once
 * (`clformer eval --text` and the Python package's evaluate). */
#include "model.h"
#include "status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The summed loss of every token after the first, windows of T + 1 tokens
 * `batch` at a time, each starting at the last token of the one before; the
 * last window is shorter. */
static clformer_status text_loss(clformer_session *s, const int32_t *ids, size_t n, size_t T,
                                 size_t batch, double *sum, size_t *count)
{
    *sum = 0;
    *count = 0;
    int32_t *rows = malloc(batch * (T + 1) * sizeof *rows);
    if (!rows) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = CLFORMER_OK;
    size_t at = 0;
    while (at + 1 < n && st == CLFORMER_OK) {
        const size_t W = n - at >= T + 1 ? T + 1 : n - at;
        size_t B = 0;
        do {
            memcpy(rows + B * W, ids + at, W * sizeof *rows);
            at += W - 1;
            B++;
        } while (B < batch && W == T + 1 && n - at >= T + 1);
        const clformer_batch b = {B, 0, W, NULL, rows};
        double part;
        size_t tokens;
        st = clformer_session_eval_loss(s, &b, &part, &tokens);
        *sum += part;
        *count += tokens;
    }
    free(rows);
    return st;
}

clformer_status clformer_session_lm_score(clformer_session *session, const int32_t *ids, size_t n,
                                          size_t bytes, size_t batch, clformer_lm_score *score)
{
    const cf_model *m = clformer_session_model(session);
    const clformer_config *c = &m->cfg;
    CF_TRY(cf_family_check_task(m->family, CLFORMER_TASK_LM, "scoring a text"));
    if (n < 2)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "the text holds %zu token%s: at least 2 are needed to score one", n,
                       n == 1 ? "" : "s");
    double sum;
    size_t count;
    CF_TRY(text_loss(session, ids, n, (size_t)c->max_len, batch ? batch : 16, &sum, &count));
    score->loss = sum / (double)count;
    score->perplexity = exp(score->loss);
    score->bits_per_byte = bytes ? sum / log(2.0) / (double)bytes : NAN;
    score->tokens = count;
    score->bytes = bytes;
    return CLFORMER_OK;
}
