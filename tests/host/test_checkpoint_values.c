/*
 * Issue 21, messages: values no training writes are refused when a checkpoint
 * loads (runtime/format/checkpoint.c, cf_checkpoint_check_values), with a
 * line that says the file is damaged: a weight of 3.4e38 (translate printed
 * empty lines, exit 0) and a negative Adam second moment (the first step
 * diverged and the message blamed the learning rate). Checked on the host
 * over a real parameter layout; loading runs the same function on every part.
 */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "params.h"

static cf_param_layout layout;
static float *host;

static int setup(void **state)
{
    (void)state;
    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 8, c.n_heads = 2, c.d_ff = 16, c.n_enc_layers = c.n_dec_layers = 1;
    c.src_vocab = c.tgt_vocab = 10, c.max_len = 8;
    if (cf_param_layout_make(&c, &layout) != CLFORMER_OK) return -1;
    host = calloc(layout.total, sizeof *host);
    return host ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(host);
    cf_param_layout_free(&layout);
    return 0;
}

static void expect_refused(int part, const char *message)
{
    assert_int_equal(cf_checkpoint_check_values(&layout, part, host), CLFORMER_ERR_FORMAT);
    if (strcmp(clformer_last_error(), message) != 0)
        fail_msg("got:  %s\nwant: %s", clformer_last_error(), message);
}

static void values_no_training_writes_are_refused(void **state)
{
    (void)state;
    for (int part = 0; part < 3; part++)
        assert_int_equal(cf_checkpoint_check_values(&layout, part, host), CLFORMER_OK);
    const cf_param_entry *e = &layout.entries[1];
    host[e->offset + 2] = 3.4e38f;
    char want[512];
    snprintf(want, sizeof want, "%s element 2 is 3.4e+38, which no training writes (weights are "
             "finite and within 1e6): the file is damaged; use an intact checkpoint", e->name);
    expect_refused(0, want);
    assert_int_equal(cf_checkpoint_check_values(&layout, 2, host), CLFORMER_OK);
    host[e->offset + 2] = -1e-3f; /* a fine weight, a damaged second moment */
    assert_int_equal(cf_checkpoint_check_values(&layout, 0, host), CLFORMER_OK);
    snprintf(want, sizeof want, "optim.v.%s element 2 is -0.001, which no training writes (Adam "
             "second moments are finite and not negative): the file is damaged; use an intact "
             "checkpoint", e->name);
    expect_refused(2, want);
    host[e->offset + 2] = NAN;
    snprintf(want, sizeof want, "optim.m.%s element 2 is nan, which no training writes (Adam "
             "moments are finite): the file is damaged; use an intact checkpoint", e->name);
    expect_refused(1, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(values_no_training_writes_are_refused),
    };
    return cmocka_run_group_tests_name("checkpoint values", tests, setup, teardown);
}
