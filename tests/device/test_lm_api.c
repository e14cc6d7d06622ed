/*
 * The C API the Python package stands on, for language models: the list of
 * a model's tensors (PyTorch's names, a tied generator listed after the
 * embedding as a checkpoint stores it, every name readable), a text's score
 * (clformer_session_lm_score: one window equals the plain loss; many windows
 * score every token but the first once, whatever the batch), and the text of
 * tokens as they come (clformer_lm_text_stream: a UTF-8 character split over
 * byte tokens comes out whole, a held-back byte at flush).
 */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A small GPT-2 shaped model whose vocabulary is all 256 bytes. */
static clformer_model *byte_model(uint64_t seed)
{
    clformer_config c;
    clformer_config_default(&c);
    assert_ok(clformer_config_lm_preset("gpt-mini", &c));
    c.d_model = 16, c.n_heads = 2, c.d_ff = 32, c.n_dec_layers = 1, c.max_len = 8;
    char **tokens;
    int n;
    assert_ok(clformer_lm_vocab("", 0, CLFORMER_LM_BYTE, &tokens, &n));
    c.tgt_vocab = n;
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, seed, &m));
    assert_ok(clformer_model_set_vocabs(m, NULL, (const char *const *)tokens));
    clformer_lm_vocab_free(tokens, n);
    return m;
}

static void tensor_list(void **state)
{
    (void)state;
    clformer_model *m = byte_model(1);
    const size_t n = clformer_model_tensor_count(m);
    size_t elements = 0;
    const char *prev = NULL;
    bool tied = false;
    for (size_t i = 0; i < n; i++) {
        const char *name;
        int ndim;
        int64_t shape[2];
        assert_ok(clformer_model_tensor_info(m, i, &name, &ndim, shape));
        assert_true(ndim == 1 || ndim == 2);
        const size_t count = (size_t)shape[0] * (size_t)(ndim == 2 ? shape[1] : 1);
        float *data = hmalloc(count * sizeof *data);
        assert_ok(clformer_model_read_tensor(m, name, false, data, count));
        if (!strcmp(name, "generator.weight")) { /* tied: listed after the embedding */
            assert_string_equal(prev, "tgt_embed.weight");
            tied = true;
        } else {
            elements += count;
        }
        free(data);
        prev = name;
    }
    assert_true(tied);
    assert_int_equal(elements, clformer_model_parameter_count(m));
    assert_int_equal(clformer_model_tensor_info(m, n, NULL, NULL, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    clformer_model_free(m);
}

/* The plain loss of ids[0..n) as one window. */
static double window_loss(clformer_session *s, const int32_t *ids, size_t n, size_t *tokens)
{
    double sum;
    const clformer_batch b = {1, 0, n, NULL, ids};
    assert_ok(clformer_session_eval_loss(s, &b, &sum, tokens));
    return sum;
}

static void text_score(void **state)
{
    (void)state;
    clformer_model *m = byte_model(2);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    const char *text = "to be or not to be, that is the question";
    int32_t *ids;
    size_t n;
    assert_ok(clformer_lm_encode(m, text, strlen(text), &ids, &n));
    assert_int_equal(n, strlen(text));

    /* one window (max_len 8 + 1 tokens): the plain loss */
    clformer_lm_score one;
    assert_ok(clformer_session_lm_score(s, ids, 9, 9, 0, &one));
    size_t tokens;
    const double sum = window_loss(s, ids, 9, &tokens);
    assert_int_equal(one.tokens, 8);
    assert_true(one.loss == sum / 8);
    assert_true(one.perplexity == exp(one.loss));
    assert_true(one.bits_per_byte == sum / log(2.0) / 9);

    /* many windows: each overlaps the one before by a token, so every token
     * but the first is scored once; the batch only groups them */
    double manual = 0;
    size_t scored = 0;
    for (size_t at = 0; at + 1 < n; at += 8) {
        const size_t w = n - at < 9 ? n - at : 9;
        manual += window_loss(s, ids + at, w, &tokens);
        scored += tokens;
    }
    clformer_lm_score a, b;
    assert_ok(clformer_session_lm_score(s, ids, n, n, 1, &a));
    assert_ok(clformer_session_lm_score(s, ids, n, n, 16, &b));
    assert_int_equal(a.tokens, n - 1);
    assert_int_equal(scored, n - 1);
    assert_true(fabs(a.loss - manual / (double)(n - 1)) <= 1e-12 * a.loss);
    assert_true(fabs(b.loss - a.loss) <= 1e-6 * a.loss); /* fp32 batch sums, grouped otherwise */

    assert_int_equal(clformer_session_lm_score(s, ids, 1, 1, 0, &a), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "at least 2"));
    clformer_free(ids);
    clformer_session_free(s);
    clformer_model_free(m);
}

/* Pushes ids[0..n) and checks the text each one gives. */
static void push_all(clformer_lm_text_stream *s, const int32_t *ids, size_t n,
                     const char *const *want)
{
    for (size_t i = 0; i < n; i++) {
        char *text;
        size_t len;
        assert_ok(clformer_lm_text_stream_push(s, ids[i], &text, &len));
        assert_string_equal(text, want[i]);
        assert_int_equal(len, strlen(want[i]));
        clformer_free(text);
    }
}

static void text_stream(void **state)
{
    (void)state;
    clformer_model *m = byte_model(3);
    const char *text = "a\xc3\xa9\nb\xc3"; /* "aé\nb" and the first byte of another é */
    int32_t *ids;
    size_t n;
    assert_ok(clformer_lm_encode(m, text, strlen(text), &ids, &n));
    assert_int_equal(n, 6);
    clformer_lm_text_stream *s;
    assert_ok(clformer_lm_text_stream_create(m, ids, 1, &s)); /* the prompt "a": given out */
    const char *want[5] = {"", "\xc3\xa9", "\n", "b", ""};
    push_all(s, ids + 1, 5, want);
    char *rest;
    size_t len;
    assert_ok(clformer_lm_text_stream_flush(s, &rest, &len)); /* the held-back byte */
    assert_int_equal(len, 1);
    assert_memory_equal(rest, "\xc3", 1);
    clformer_free(rest);
    clformer_lm_text_stream_free(s);
    clformer_free(ids);
    clformer_model_free(m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(tensor_list),
    cmocka_unit_test(text_score),
    cmocka_unit_test(text_stream),
};
HARNESS_DEVICE_MAIN("lm_api", tests)
