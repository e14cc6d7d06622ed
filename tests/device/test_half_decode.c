/*
 * A bf16/fp16 session's decoding steps read its weights in 16 bits where the
 * products can (the host provider's dot products on CPUs with AVX-512:
 * cf_session_decode_weights, gemm_dots.h): the logits of every step must be
 * bit for bit those of the same steps reading the rounded weights in fp32
 * (s->decode_from_fp32), for several rows at their own positions, after the
 * weights changed between passes (the 16-bit copy made again), and the
 * tokens clformer_session_generate makes must be the same. Where the
 * context's products read 16-bit weights the copy must exist (else this
 * test would compare the fp32 path with itself), and nowhere else. A small
 * Llama-style model (grouped heads, SwiGLU), untrained. On a simulator,
 * whose products are CLBlast's (no 16-bit copy), two steps in bf16.
 */
#include "harness.h"
#include "decode.h"
#include "gemm.h"
#include "session_bits.h"

#include <stdlib.h>
#include <string.h>

enum { ROWS = 3, STEPS = 6 };

static size_t steps(void) { return harness_is_slow() ? 2 : STEPS; }

/* session_bits.h's Llama with widths that leave a partial 16 of k in the
 * dot products (48 and 80) */
static clformer_config llama_config(void)
{
    clformer_config c = bits_variant_config(BITS_LLAMA);
    c.d_model = 48;
    c.d_ff = 80;
    c.tgt_vocab = 37;
    c.max_len = 16;
    return c;
}

/* STEPS decoding steps of ROWS rows, each at its own position, in one pass;
 * every step's logits into out (STEPS x ROWS x V). */
static void decode(clformer_session *s, bool from_fp32, float *out)
{
    const size_t V = (size_t)s->model->cfg.tgt_vocab;
    s->decode_from_fp32 = from_fp32;
    clformer_precision saved;
    assert_ok(cf_session_pass_begin(s, &saved));
    assert_ok(cf_decode_start_lm(s, ROWS, (size_t)s->model->cfg.max_len));
    for (size_t t = 0; t < steps(); t++) {
        int32_t tokens[ROWS];
        size_t pos[ROWS];
        for (size_t r = 0; r < ROWS; r++) {
            tokens[r] = (int32_t)((7 * t + 11 * r + 3) % V);
            pos[r] = t + r; /* rows ahead of one another */
        }
        if (t == 0)
            for (size_t r = 0; r < ROWS; r++) pos[r] = 0;
        assert_ok(cf_decode_step_rows(s, tokens, pos));
        assert_ok(cf_download(s->ctx, s->decoder->logits.buf, s->decoder->logits.off,
                              out + t * ROWS * V, ROWS * V));
    }
    assert_ok(cf_session_pass_end(s, saved, CLFORMER_OK));
    s->decode_from_fp32 = false;
}

static void same_logits(clformer_session *s, const char *when)
{
    const size_t n = steps() * ROWS * (size_t)s->model->cfg.tgt_vocab;
    float *half = hmalloc(n * sizeof *half), *full = hmalloc(n * sizeof *full);
    decode(s, false, half);
    const bool expected = cf_gemm_reads_half_weights(s->ctx);
#if defined(__x86_64__)
    /* the host provider on a CPU with AVX-512 F, VL and BW reads them (as
     * CI's devices do), unless told to run OpenBLAS alone */
    __builtin_cpu_init();
    const char *host_gemm = getenv("CLFORMER_HOST_GEMM");
    if (clformer_context_gemm_provider(s->ctx) == CLFORMER_GEMM_HOST &&
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && !(host_gemm && !strcmp(host_gemm, "openblas")))
        assert_true(expected);
#endif
    if (expected != (s->weights16 != NULL))
        fail_msg("%s: the 16-bit weights %s where the products %s them", when,
                 s->weights16 ? "were made" : "were not made",
                 expected ? "read" : "do not read");
    decode(s, true, full);
    for (size_t i = 0; i < n; i++)
        if (memcmp(&half[i], &full[i], sizeof *half) != 0)
            fail_msg("%s: logit %zu is %.9g from the 16-bit weights, %.9g from the fp32 ones",
                     when, i, (double)half[i], (double)full[i]);
    free(half), free(full);
}

static void sixteen_bit_weights_give_the_bits_of_fp32(void **state)
{
    (void)state;
    const clformer_config c = llama_config();
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 11, &m));
    static const clformer_precision precisions[] = {CLFORMER_BF16, CLFORMER_FP16};
    for (size_t p = 0; p < (harness_is_slow() ? 1 : 2); p++) {
        clformer_session *s;
        assert_ok(clformer_session_create(m, &s));
        assert_ok(clformer_session_set_precision(s, precisions[p]));
        const char *name = clformer_precision_name(precisions[p]);
        same_logits(s, name);
        if (harness_is_slow()) {
            clformer_session_free(s);
            continue;
        }
        /* a weight changed between passes: the next pass's copy has it */
        const char *w = "model.layers.1.mlp.down_proj.weight";
        const size_t count = (size_t)c.d_model * (size_t)c.d_ff;
        float *v = hmalloc(count * sizeof *v);
        assert_ok(clformer_model_read_tensor(m, w, false, v, count));
        for (size_t i = 0; i < count; i++) v[i] = -2.0f * v[i] + 0.01f;
        assert_ok(clformer_model_write_tensor(m, w, v, count));
        same_logits(s, name);
        free(v);
        /* whole generations, greedy and sampled */
        for (int sampled = 0; sampled < 2; sampled++) {
            clformer_sample_options o;
            clformer_sample_options_default(&o);
            o.max_tokens = 10;
            o.temperature = sampled ? 1.0f : 0.0f;
            const int32_t prompt[] = {1, 5, 9};
            int32_t a[10], b[10];
            size_t na, nb;
            assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, a, &na));
            s->decode_from_fp32 = true;
            assert_ok(clformer_session_generate(s, prompt, 3, &o, NULL, NULL, b, &nb));
            s->decode_from_fp32 = false;
            assert_int_equal(na, nb);
            if (memcmp(a, b, na * sizeof *a) != 0)
                fail_msg("%s: %s generation differs with the 16-bit weights", name,
                         sampled ? "sampled" : "greedy");
        }
        clformer_session_free(s);
    }
    clformer_model_free(m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(sixteen_bit_weights_give_the_bits_of_fp32),
};

HARNESS_DEVICE_MAIN("half_decode", tests)
