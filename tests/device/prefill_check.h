/*
 * The one-pass prefill of a language model's prompt against feeding it one
 * token at a time, shared by test_lm and test_gpt2_parity: after the prompt
 * (all but its last token in one forward pass, then the last one step), the
 * logits must agree with those after n single steps and with the full
 * forward pass's logits at the prompt's last position, and name the same
 * most likely token.
 */
#ifndef CLFORMER_TEST_PREFILL_CHECK_H
#define CLFORMER_TEST_PREFILL_CHECK_H

#include "harness.h"
#include "decode.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static inline size_t prefill_argmax(const float *x, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Prompt of n >= 2 tokens, n <= the model's max_len; tol: the largest
 * |difference| of logits allowed (fp32 sums in another order). */
static inline void prefill_check(clformer_session *s, const int32_t *prompt, size_t n, double tol,
                                 const char *name)
{
    const clformer_config *c = &s->model->cfg;
    const size_t V = (size_t)c->tgt_vocab, L = (size_t)c->max_len;
    float *one_pass = hmalloc(V * sizeof *one_pass), *steps = hmalloc(V * sizeof *steps);
    float *full = hmalloc(n * V * sizeof *full);
    /* the prompt but its last token in one pass, then the last token */
    assert_ok(cf_decode_start_lm(s, 1, L));
    assert_ok(cf_decode_prefill(s, 0, 1, prompt, n - 1));
    size_t pos = n - 1;
    assert_ok(cf_decode_step_rows(s, &prompt[n - 1], &pos));
    assert_ok(cf_download(s->ctx, s->decoder->logits.buf, s->decoder->logits.off, one_pass, V));
    /* token by token */
    assert_ok(cf_decode_start_lm(s, 1, L));
    for (pos = 0; pos < n; pos++) assert_ok(cf_decode_step_rows(s, &prompt[pos], &pos));
    assert_ok(cf_download(s->ctx, s->decoder->logits.buf, s->decoder->logits.off, steps, V));
    /* the full forward pass over prompt + one more (its labels unused) */
    int32_t *window = hmalloc((n + 1) * sizeof *window);
    for (size_t i = 0; i < n; i++) window[i] = prompt[i];
    window[n] = 0;
    const clformer_batch b = {1, 0, n + 1, NULL, window};
    assert_ok(clformer_session_logits(s, &b, full));
    double worst = 0, worst_full = 0;
    for (size_t v = 0; v < V; v++) {
        worst = fmax(worst, fabs((double)one_pass[v] - steps[v]));
        worst_full = fmax(worst_full, fabs((double)one_pass[v] - full[(n - 1) * V + v]));
    }
    printf("%s: prefill of %zu tokens: logits max |one pass - token by token| %.3g, "
           "|one pass - full forward| %.3g\n", name, n - 1, worst, worst_full);
    if (!(worst <= tol) || !(worst_full <= tol))
        fail_msg("%s: prefill logits differ by %g (token by token), %g (full forward) > %g", name,
                 worst, worst_full, tol);
    assert_int_equal(prefill_argmax(one_pass, V), prefill_argmax(steps, V));
    free(one_pass), free(steps), free(full), free(window);
}

#endif
