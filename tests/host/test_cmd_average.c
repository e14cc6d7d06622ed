/*
 * `clformer average` end to end, without a device: the mean of one
 * checkpoint is that checkpoint's weights (optimizer state and train_state
 * left out), and every refusal is a one-line error with exit code 1 or 2
 * that names the problem: different models, a file given twice, an output
 * that is an input, no --out, no checkpoints, a missing file.
 */
#include "harness.h"
#include "clformer_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[512];
static char out[16384], err[16384];
static const harness_cmd cli = {out, sizeof out, err, sizeof err};

static const char *parity(const char *fixture)
{
    static char path[4][512];
    static int k;
    const char *data = getenv("CLFORMER_TEST_DATA");
    if (!data || !*data) fail_msg("CLFORMER_TEST_DATA is not set (run through ctest)");
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/parity/%s/model.safetensors", data ? data : "", fixture);
    return path[k];
}

static void expect_error(int got, int want, const char *needle)
{
    harness_expect_run(&cli, got, want, needle);
    const char *nl = strchr(err, '\n');
    if (!nl || nl[1] != '\0') fail_msg("expected a one-line error, got: %s", err);
    if (strncmp(err, "clformer average: error: ", 25) != 0) fail_msg("not an error line: %s", err);
}

static int setup(void **state)
{
    (void)state;
    return harness_temp_dir(dir, sizeof dir, "average") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    harness_remove_tree(dir);
    return 0;
}

static void one_checkpoint_averages_to_its_weights(void **state)
{
    (void)state;
    char avg[600];
    harness_path(avg, sizeof avg, dir, "avg.safetensors");
    const char *in = parity("a_prenorm_relu_sin");
    harness_expect_run(&cli, harness_run_clformer(&cli, "average", "--out", avg, in, NULL), 0,
                       "averaged 1 checkpoint");
    clformer_tensor *a, *b;
    size_t na, nb;
    assert_ok(clformer_tensors_load(avg, &a, &na));
    assert_ok(clformer_tensors_load(in, &b, &nb));
    assert_true(na > 10);
    size_t weights = 0;
    for (size_t i = 0; i < nb; i++) weights += strncmp(b[i].name, "optim.", 6) != 0;
    assert_int_equal(na, weights);
    for (size_t i = 0; i < na; i++) {
        assert_true(strncmp(a[i].name, "optim.", 6) != 0);
        const clformer_tensor *t = clformer_tensors_find(b, nb, a[i].name);
        assert_non_null(t);
        size_t count = 1;
        for (int d = 0; d < a[i].ndim; d++) count *= (size_t)a[i].shape[d];
        assert_memory_equal(a[i].data, t->data, count * sizeof(float));
    }
    clformer_tensors_free(a, na);
    clformer_tensors_free(b, nb);
}

static void refusals_are_one_line_errors(void **state)
{
    (void)state;
    char avg[600];
    harness_path(avg, sizeof avg, dir, "refused.safetensors");
    const char *a = parity("a_prenorm_relu_sin"), *b = parity("b_postnorm_gelu_learned");
    expect_error(harness_run_clformer(&cli, "average", "--out", avg, a, b, NULL), 1,
                 "different models");
    expect_error(harness_run_clformer(&cli, "average", "--out", avg, a, a, NULL), 1,
                 "given twice");
    expect_error(harness_run_clformer(&cli, "average", "--out", a, a, NULL), 2, "same file");
    expect_error(harness_run_clformer(&cli, "average", a, NULL), 2, "--out is required");
    expect_error(harness_run_clformer(&cli, "average", "--out", avg, NULL), 2,
                 "give the checkpoints");
    expect_error(harness_run_clformer(&cli, "average", "--out", avg, "nosuch.safetensors", NULL),
                 1, "nosuch.safetensors");
    FILE *f = fopen(avg, "rb");
    if (f) fclose(f);
    assert_null(f); /* nothing written by any of them */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(one_checkpoint_averages_to_its_weights, setup, teardown),
        cmocka_unit_test_setup_teardown(refusals_are_one_line_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
