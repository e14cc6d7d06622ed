/*
 * The batch-shape check before the activation arena is laid out
 * (cf_acts_check_shape, runtime/model/acts.c): attention scores of batch x
 * heads x length x length floats that overflow size_t, or that no device
 * buffer can hold, are refused with a message naming the batch, the heads,
 * the length and the options to change; a shape that fits passes. With
 * fused attention only B x heads x length floats count; no tensor reaches
 * 2^31 floats, whatever the device allows. Also the rule of
 * the auto attention path and the path's words. Host only: nothing is
 * allocated.
 */
#include "data_util.h"

#include "graph.h"

#include <stdint.h>

static clformer_config config(void)
{
    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 512;
    c.n_heads = 8;
    c.d_ff = 2048;
    c.src_vocab = c.tgt_vocab = 1000;
    c.max_len = 65536;
    return c;
}

static const size_t GiB = (size_t)1 << 30;

static void fitting_shape_passes(void **state)
{
    (void)state;
    clformer_config c = config();
    /* 64 x 8 x 100 x 100 floats = 20 MB of scores */
    assert_ok(cf_acts_check_shape(&c, GiB, 64, 100, 99, false));
    /* exactly at the limit: 1 x 8 x 128 x 128 floats = 512 KiB (all else smaller) */
    c.d_model = c.n_heads = c.tgt_vocab = 8;
    c.d_ff = 16;
    assert_ok(cf_acts_check_shape(&c, 8 * 128 * 128 * 4, 1, 128, 127, false));
}

static void scores_beyond_the_largest_buffer(void **state)
{
    (void)state;
    clformer_config c = config();
    /* 4 x 8 x 65536 x 65536 floats = 512 GiB */
    assert_error(cf_acts_check_shape(&c, 4 * GiB, 4, 65536, 65535, false), CLFORMER_ERR_OUT_OF_MEMORY,
                 "4 sentences", "8 attention heads", "length 65536", "524288 MiB", "4096 MiB",
                 "--batch-tokens", "--max-len");
    /* one float more than the limit */
    c.d_model = c.n_heads = c.tgt_vocab = 8;
    c.d_ff = 16;
    assert_error(cf_acts_check_shape(&c, 8 * 128 * 128 * 4 - 1, 1, 128, 127, false),
                 CLFORMER_ERR_OUT_OF_MEMORY, "1 sentences", "length 128");
}

static void scores_overflowing_size_t(void **state)
{
    (void)state;
    clformer_config c = config();
    /* 2^40 x 8 x 2^16 x 2^16 wraps around 2^64 (to 0: it must not pass) */
    const size_t B = (size_t)1 << 40;
    assert_error(cf_acts_check_shape(&c, SIZE_MAX, B, 65536, 65535, false), CLFORMER_ERR_OUT_OF_MEMORY,
                 "1099511627776 sentences", "length 65536", "more bytes than size_t can count",
                 "--batch-tokens");
    assert_error(cf_acts_check_shape(&c, SIZE_MAX, SIZE_MAX, 2, 1, false), CLFORMER_ERR_OUT_OF_MEMORY,
                 "--max-len");
}

static void logits_beyond_the_largest_buffer(void **state)
{
    (void)state;
    clformer_config c = config();
    c.tgt_vocab = 1 << 20;
    /* scores 64 x 8 x 64 x 64 fit; logits 64 x 63 x 2^20 floats (16 GiB) do not */
    assert_error(cf_acts_check_shape(&c, GiB, 64, 64, 63, false), CLFORMER_ERR_OUT_OF_MEMORY,
                 "64 sentences", "logits of 64 x 63 x 1048576", "--batch-tokens");
}

/* The fused path saves B x heads x L floats per layer, not B x heads x L x L:
 * the base model at length 1024 with 16 sentences passes there only. */
/* A device whose largest allocation is 20 GiB (an H100) still gets no
 * tensor of 2^31 floats or more: CLBlast indexes its operands with int. */
static void no_tensor_of_2_31_floats(void **state)
{
    (void)state;
    assert_true(cf_buffer_max_bytes(20 * GiB) == (uint64_t)CF_BUFFER_MAX_ELEMENTS * 4);
    assert_true(cf_buffer_max_bytes(GiB) == GiB);
    clformer_config c = config();
    c.tgt_vocab = 200000; /* logits 16 x 1023 x 200000 floats: 12.2 GiB */
    assert_error(cf_acts_check_shape(&c, 20 * GiB, 16, 1024, 1023, true),
                 CLFORMER_ERR_OUT_OF_MEMORY, "logits of 16 x 1023 x 200000");
    c.tgt_vocab = 100000; /* 6.1 GiB: fits */
    assert_ok(cf_acts_check_shape(&c, 20 * GiB, 16, 1024, 1023, true));
}

static void fused_attention_needs_no_score_matrix(void **state)
{
    (void)state;
    clformer_config c = config();
    /* 16 x 8 x 1024 x 1024 floats = 512 MiB > a 384 MiB buffer; logits
     * (16 x 1023 x 1000) and rows (16 x 1024 x 2048) fit */
    const size_t buffer = 3 * GiB / 8;
    assert_error(cf_acts_check_shape(&c, buffer, 16, 1024, 1023, false),
                 CLFORMER_ERR_OUT_OF_MEMORY, "16 sentences", "length 1024", "1024 x 1024");
    assert_ok(cf_acts_check_shape(&c, buffer, 16, 1024, 1023, true));
}

/* auto: fused (tiled) on a GPU; elsewhere (a CPU, a simulator, an
 * accelerator) unfused while the saved probabilities stay small, fused
 * above; an explicit choice is kept whatever the shape. */
static void auto_attention_path_follows_the_device_and_size(void **state)
{
    (void)state;
    clformer_config c = config(); /* 6 + 6 layers, 8 heads */
    c.dropout = 0.1f;
    clformer_device_info gi = {0}, ai = {0}, ci = {0}, si = {0};
    gi.type = CLFORMER_DEVICE_GPU;
    ai.type = CLFORMER_DEVICE_ACCELERATOR;
    ci.type = si.type = CLFORMER_DEVICE_CPU;
    si.simulator = true;
    gi.max_alloc_bytes = ai.max_alloc_bytes = ci.max_alloc_bytes = si.max_alloc_bytes = GiB;
    clformer_device_profile gpu, acc, cpu, sim;
    assert_int_equal(clformer_device_profile_for(&gi, NULL, &gpu), CLFORMER_OK);
    assert_int_equal(clformer_device_profile_for(&ai, NULL, &acc), CLFORMER_OK);
    assert_int_equal(clformer_device_profile_for(&ci, NULL, &cpu), CLFORMER_OK);
    assert_int_equal(clformer_device_profile_for(&si, NULL, &sim), CLFORMER_OK);
    const clformer_attention_path A = CLFORMER_ATTENTION_AUTO;
    /* 1 GiB of device memory: a quarter is CLFORMER_ATTENTION_UNFUSED_MAX_BYTES */
    uint64_t mem = GiB;
    /* a GPU runs the tiled kernels at every size */
    assert_true(cf_attention_fused_for(A, &gpu, false, mem, &c, 32, 32, 32, true));
    assert_true(cf_attention_fused_for(A, &gpu, false, mem, &c, 1, 2, 1, false));
    /* training, 32 x 32: 32*8*32*32*(6 + 12)*2 + 32*8*32*32 floats ~ 38 MiB */
    assert_false(cf_attention_fused_for(A, &acc, false, mem, &c, 32, 32, 32, true));
    assert_false(cf_attention_fused_for(A, &sim, false, mem, &c, 32, 32, 32, true));
    assert_false(cf_attention_fused_for(A, &cpu, false, mem, &c, 32, 32, 32, true));
    /* a CPU at any length while the probabilities stay small: training 2 x 256
     * saves ~150 MiB of them, 2 x 512 ~600 MiB */
    assert_false(cf_attention_fused_for(A, &cpu, false, mem, &c, 2, 64, 20, true));
    assert_false(cf_attention_fused_for(A, &cpu, false, mem, &c, 2, 256, 255, true));
    assert_true(cf_attention_fused_for(A, &cpu, false, mem, &c, 2, 512, 511, true));
    /* training, 16 x 1024: ~ 9.5 GiB of probabilities */
    assert_true(cf_attention_fused_for(A, &acc, false, mem, &c, 16, 1024, 1023, true));
    assert_true(cf_attention_fused_for(A, &cpu, false, mem, &c, 16, 1024, 1023, true));
    /* one score matrix beyond the largest buffer: fused even when small in all */
    acc.max_alloc_bytes = 4096;
    assert_true(cf_attention_fused_for(A, &acc, false, mem, &c, 1, 32, 31, false));
    acc.max_alloc_bytes = GiB;
    assert_false(cf_attention_fused_for(CLFORMER_ATTENTION_UNFUSED, &cpu, false, mem, &c, 16, 1024, 1023,
                                        true));
    assert_false(cf_attention_fused_for(CLFORMER_ATTENTION_UNFUSED, &gpu, false, mem, &c, 32, 32, 32, true));
    assert_true(cf_attention_fused_for(CLFORMER_ATTENTION_FUSED, &acc, false, mem, &c, 1, 2, 1, false));
    /* sizes whose product overflows size_t are never unfused */
    acc.max_alloc_bytes = SIZE_MAX;
    assert_true(cf_attention_fused_for(A, &acc, false, mem, &c, SIZE_MAX, 2, 1, false));
    /* 8 GiB: up to 2 GiB of probabilities (2 x 512's ~600 MiB), not 16 x
     * 1024's ~9.5 GiB; no memory reported: the 256 MiB floor */
    mem = 8 * GiB;
    assert_false(cf_attention_fused_for(A, &cpu, false, mem, &c, 2, 512, 511, true));
    assert_true(cf_attention_fused_for(A, &cpu, false, mem, &c, 8, 512, 511, true));
    assert_true(cf_attention_fused_for(A, &cpu, false, mem, &c, 16, 1024, 1023, true));
    assert_true(cf_attention_fused_for(A, &gpu, false, mem, &c, 1, 2, 1, false));
    assert_true(cf_attention_fused_for(A, &cpu, false, 0, &c, 2, 512, 511, true));
    assert_false(cf_attention_fused_for(A, &cpu, false, 0, &c, 2, 256, 255, true));
    /* where host items run the fused path: fused from 512 keys on, however
     * little memory the unfused path would take */
    assert_true(cf_attention_fused_for(A, &cpu, true, mem, &c, 1, 512, 20, true));
    assert_true(cf_attention_fused_for(A, &cpu, true, mem, &c, 1, 2, 512, false));
    assert_false(cf_attention_fused_for(A, &cpu, true, mem, &c, 1, 511, 510, true));
    assert_false(cf_attention_fused_for(A, &cpu, true, mem, &c, 2, 256, 255, true));
    assert_false(cf_attention_fused_for(CLFORMER_ATTENTION_UNFUSED, &cpu, true, mem, &c, 1, 512,
                                        511, true));
}

/* gemm-backward: the fused forward (a GPU's and a CPU's alike), and its
 * backward by GEMMs in training, except where the tiled kernels take
 * grouped-query heads as rows. */
static void gemm_backward_is_the_fused_forward(void **state)
{
    (void)state;
    clformer_config c = config(); /* 8 heads */
    clformer_device_info ci = {0};
    ci.type = CLFORMER_DEVICE_CPU;
    ci.max_alloc_bytes = GiB;
    clformer_device_profile cpu;
    assert_int_equal(clformer_device_profile_for(&ci, NULL, &cpu), CLFORMER_OK);
    const clformer_attention_path G = CLFORMER_ATTENTION_GEMM_BACKWARD;
    const uint64_t mem = GiB;
    assert_true(cf_attention_fused_for(G, &cpu, false, mem, &c, 2, 64, 20, true));
    assert_true(cf_attention_fused_for(G, &cpu, false, mem, &c, 16, 1024, 1023, true));
    cf_blocks all = {.kv_heads = 8}, grouped = {.kv_heads = 2};
    assert_true(cf_acts_gemm_backward(G, true, true, &c, &all));
    assert_true(cf_acts_gemm_backward(G, true, false, &c, &grouped)); /* heads layout */
    assert_false(cf_acts_gemm_backward(G, true, true, &c, &grouped));  /* rows */
    assert_false(cf_acts_gemm_backward(G, false, false, &c, &all));
    assert_false(cf_acts_gemm_backward(CLFORMER_ATTENTION_FUSED, true, true, &c, &all));
    assert_false(cf_acts_gemm_backward(CLFORMER_ATTENTION_AUTO, true, true, &c, &all));
}

static void attention_path_words(void **state)
{
    (void)state;
    clformer_attention_path p = CLFORMER_ATTENTION_FUSED;
    assert_ok(clformer_attention_path_parse(NULL, &p));
    assert_int_equal(p, CLFORMER_ATTENTION_AUTO);
    assert_ok(clformer_attention_path_parse("Fused", &p));
    assert_int_equal(p, CLFORMER_ATTENTION_FUSED);
    assert_ok(clformer_attention_path_parse("unfused", &p));
    assert_int_equal(p, CLFORMER_ATTENTION_UNFUSED);
    assert_string_equal(clformer_attention_path_name(p), "unfused");
    assert_ok(clformer_attention_path_parse("GEMM-backward", &p));
    assert_int_equal(p, CLFORMER_ATTENTION_GEMM_BACKWARD);
    assert_string_equal(clformer_attention_path_name(p), "gemm-backward");
    assert_error(clformer_attention_path_parse("flash", &p), CLFORMER_ERR_INVALID_ARGUMENT,
                 "'flash'", "CLFORMER_ATTENTION", "fused, unfused, gemm-backward or auto");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fitting_shape_passes),
        cmocka_unit_test(scores_beyond_the_largest_buffer),
        cmocka_unit_test(scores_overflowing_size_t),
        cmocka_unit_test(logits_beyond_the_largest_buffer),
        cmocka_unit_test(no_tensor_of_2_31_floats),
        cmocka_unit_test(fused_attention_needs_no_score_matrix),
        cmocka_unit_test(auto_attention_path_follows_the_device_and_size),
        cmocka_unit_test(gemm_backward_is_the_fused_forward),
        cmocka_unit_test(attention_path_words),
    };
    return cmocka_run_group_tests_name("activation shape check", tests, NULL, NULL);
}
