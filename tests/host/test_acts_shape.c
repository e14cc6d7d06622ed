/*
 * The batch-shape check before the activation arena is laid out
 * (cf_acts_check_shape, runtime/model/acts.c): attention scores of batch x
 * heads x length x length floats that overflow size_t, or that no device
 * buffer can hold, are refused with a message naming the batch, the heads,
 * the length and the options to change; a shape that fits passes. Host
 * only: nothing is allocated.
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
    assert_ok(cf_acts_check_shape(&c, GiB, 64, 100, 99));
    /* exactly at the limit: 1 x 8 x 128 x 128 floats = 512 KiB (all else smaller) */
    c.d_model = c.n_heads = c.tgt_vocab = 8;
    c.d_ff = 16;
    assert_ok(cf_acts_check_shape(&c, 8 * 128 * 128 * 4, 1, 128, 127));
}

static void scores_beyond_the_largest_buffer(void **state)
{
    (void)state;
    clformer_config c = config();
    /* 4 x 8 x 65536 x 65536 floats = 512 GiB */
    assert_error(cf_acts_check_shape(&c, 4 * GiB, 4, 65536, 65535), CLFORMER_ERR_OUT_OF_MEMORY,
                 "4 sentences", "8 attention heads", "length 65536", "524288 MiB", "4096 MiB",
                 "--batch-tokens", "--max-len");
    /* one float more than the limit */
    c.d_model = c.n_heads = c.tgt_vocab = 8;
    c.d_ff = 16;
    assert_error(cf_acts_check_shape(&c, 8 * 128 * 128 * 4 - 1, 1, 128, 127),
                 CLFORMER_ERR_OUT_OF_MEMORY, "1 sentences", "length 128");
}

static void scores_overflowing_size_t(void **state)
{
    (void)state;
    clformer_config c = config();
    /* 2^40 x 8 x 2^16 x 2^16 wraps around 2^64 (to 0: it must not pass) */
    const size_t B = (size_t)1 << 40;
    assert_error(cf_acts_check_shape(&c, SIZE_MAX, B, 65536, 65535), CLFORMER_ERR_OUT_OF_MEMORY,
                 "1099511627776 sentences", "length 65536", "more bytes than size_t can count",
                 "--batch-tokens");
    assert_error(cf_acts_check_shape(&c, SIZE_MAX, SIZE_MAX, 2, 1), CLFORMER_ERR_OUT_OF_MEMORY,
                 "--max-len");
}

static void logits_beyond_the_largest_buffer(void **state)
{
    (void)state;
    clformer_config c = config();
    c.tgt_vocab = 1 << 20;
    /* scores 64 x 8 x 64 x 64 fit; logits 64 x 63 x 2^20 floats (16 GiB) do not */
    assert_error(cf_acts_check_shape(&c, GiB, 64, 64, 63), CLFORMER_ERR_OUT_OF_MEMORY,
                 "64 sentences", "logits of 64 x 63 x 1048576", "--batch-tokens");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fitting_shape_passes),
        cmocka_unit_test(scores_beyond_the_largest_buffer),
        cmocka_unit_test(scores_overflowing_size_t),
        cmocka_unit_test(logits_beyond_the_largest_buffer),
    };
    return cmocka_run_group_tests_name("activation shape check", tests, NULL, NULL);
}
