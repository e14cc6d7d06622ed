/*
 * The attention backward by GEMMs (CLFORMER_ATTENTION=gemm-backward) in a
 * model: the fused forward's loss bit for bit, every gradient within the
 * conformance checks' gradient rule of the fused backward's, two training
 * steps' losses close, and its workspace in the arena. An encoder-decoder
 * (padded self-, causal and cross-attention with dropout), a decoder-only
 * model and a llama, whose grouped-query heads run by GEMMs in the head
 * layout and keep the fused kernels where the tiled ones take them as rows.
 * With recomputation and the arena split, the same bits as without.
 */
#include "session_bits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The context's path is read as a session lays out a batch: set before
 * each session's call. */
static void use(clformer_attention_path path) { hctx()->attention_path = path; }

/* Loss bit for bit; gradients |g - f| <= 1e-4 max|f| + 1e-5 (REF_RULE_GRAD). */
static void close_gradients(bits_run *fused, bits_run *gemm, const clformer_batch *batch)
{
    double loss_f, loss_g;
    use(CLFORMER_ATTENTION_FUSED);
    assert_ok(clformer_session_gradients(fused->session, batch, &loss_f));
    use(CLFORMER_ATTENTION_GEMM_BACKWARD);
    assert_ok(clformer_session_gradients(gemm->session, batch, &loss_g));
    assert_memory_equal(&loss_f, &loss_g, sizeof loss_f);
    float *gf = bits_run_gradients(fused), *gg = bits_run_gradients(gemm);
    const size_t n = fused->model->layout.total;
    double top = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) top = fmax(top, fabs((double)gf[i]));
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)gg[i] - gf[i]) > worst) worst = fabs((double)gg[i] - gf[i]), at = i;
    if (!(worst <= 1e-4 * top + 1e-5))
        fail_msg("gradient %zu of %zu: %.9g by GEMMs against %.9g fused (max |g| %.3g)", at, n,
                 (double)gg[at], (double)gf[at], top);
    assert_true(top > 0.0);
    free(gf);
    free(gg);
}

static void against_fused(bits_variant v)
{
    bits_case k = bits_case_begin(CLFORMER_ATTENTION_FUSED, v, 23);
    const clformer_config c = k.config;
    bits_run fused = bits_run_make(&c, 0), gemm = bits_run_make(&c, 0);
    close_gradients(&fused, &gemm, &k.batch);
    const cf_acts *a = &gemm.session->acts;
    /* grouped-query heads as rows (the tiled kernels) keep the fused backward */
    const bool rows_grouped = a->tiled_attention && c.n_kv_heads && c.n_kv_heads < c.n_heads;
    assert_true(a->fused_attention && a->gemm_backward == !rows_grouped);
    assert_true(!fused.session->acts.gemm_backward);
    assert_int_equal(clformer_session_training_attention(gemm.session),
                     rows_grouped ? CLFORMER_ATTENTION_FUSED : CLFORMER_ATTENTION_GEMM_BACKWARD);
    assert_int_equal(clformer_session_training_attention(fused.session), CLFORMER_ATTENTION_FUSED);
    if (a->gemm_backward) assert_true(a->total > fused.session->acts.total); /* the workspace */
    if (!harness_is_slow())
        for (int step = 0; step < 2; step++) {
            clformer_step_stats sf, sg;
            use(CLFORMER_ATTENTION_FUSED);
            assert_ok(clformer_session_train_step(fused.session, &k.batch, 1e-2f, &sf));
            use(CLFORMER_ATTENTION_GEMM_BACKWARD);
            assert_ok(clformer_session_train_step(gemm.session, &k.batch, 1e-2f, &sg));
            assert_true(fabs(sf.loss - sg.loss) <= 1e-4 * fabs(sf.loss));
        }
    bits_run_free(&fused);
    bits_run_free(&gemm);
    bits_case_end(&k);
}

static void encoder_decoder(void **state)
{
    (void)state;
    against_fused(BITS_PRE_NORM);
}

static void decoder_only(void **state)
{
    (void)state;
    against_fused(BITS_DECODER_ONLY);
}

static void llama(void **state)
{
    (void)state;
    /* Oclgrind 21.10's uninitialized-memory plugin crashes (SIGSEGV in its
     * memcpy) on the llama's tiled kernels with GPU layouts forced, the
     * fused path alone too (test_recompute's fused_llama there): skipped,
     * not passed; PoCL and Intel's runtime run it */
    if (harness_is_slow() && hctx()->device_profile.gpu_layouts) skip();
    against_fused(BITS_LLAMA);
}

/* Recomputed layers, and the arena over several buffers: the same bits. */
static void recomputed_and_split(void **state)
{
    (void)state;
    bits_case k = bits_case_begin(CLFORMER_ATTENTION_GEMM_BACKWARD, BITS_PRE_NORM, 29);
    const clformer_config c = k.config;
    bits_run plain = bits_run_make(&c, 0), re = bits_run_make(&c, 0);
    clformer_session_set_recompute(re.session, true);
    assert_same_gradients(&plain, &re, &k.batch);
    assert_true(re.session->acts.gemm_backward && re.session->acts.recompute);
    const size_t limit = plain.session->acts.total / 8;
    bits_run split = bits_run_make(&c, limit);
    assert_same_gradients(&plain, &split, &k.batch);
    assert_true(split.session->acts.buffers >= 3);
    bits_run_free(&plain);
    bits_run_free(&re);
    bits_run_free(&split);
    bits_case_end(&k);
}

/* The workspace's (B, H, L, L) tensor is asked of a batch only where the
 * backward runs by GEMMs: a llama whose longest buffer is one float short
 * of it trains where the tiled kernels take its grouped-query heads as
 * rows (they keep the fused backward), and is refused in the head layout. */
static void workspace_only_where_gemms_run(void **state)
{
    (void)state;
    if (harness_is_slow() && hctx()->device_profile.gpu_layouts) skip(); /* as `llama` */
    bits_case k = bits_case_begin(CLFORMER_ATTENTION_GEMM_BACKWARD, BITS_LLAMA, 31);
    clformer_config c = k.config;
    const size_t L = 48, H = (size_t)c.n_heads;
    c.max_len = (int)L + 1;
    int32_t *tgt = harness_random_sentences(1, L + 1, c.tgt_vocab, 37);
    const clformer_batch batch = {1, 0, L + 1, NULL, tgt};
    bits_run run = bits_run_make(&c, 0);
    const uint64_t device_max = hctx()->info.max_alloc_bytes;
    hctx()->info.max_alloc_bytes = H * L * L * 4 - 4;
    double loss;
    const clformer_status st = clformer_session_gradients(run.session, &batch, &loss);
    hctx()->info.max_alloc_bytes = device_max;
    const cf_acts *a = &run.session->acts;
    if (cf_attention_tiled(hctx(), (size_t)(c.d_model / c.n_heads))) {
        assert_ok(st);
        assert_true(a->fused_attention && !a->gemm_backward);
    } else {
        assert_int_equal(st, CLFORMER_ERR_OUT_OF_MEMORY);
        assert_non_null(strstr(clformer_last_error(), "attention scores of 1 x 4 x 48 x 48"));
    }
    bits_run_free(&run);
    free(tgt);
    bits_case_end(&k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encoder_decoder),
        cmocka_unit_test(decoder_only),
        cmocka_unit_test(llama),
        cmocka_unit_test(recomputed_and_split),
        cmocka_unit_test(workspace_only_where_gemms_run),
    };
    return harness_run_device_suite("attention_gemm_backward", tests,
                                    sizeof tests / sizeof *tests);
}
