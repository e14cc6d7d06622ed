/* `clformer logits` against PyTorch: the step-1 logits of a parity fixture,
 * computed by the command from the fixture's checkpoint and first batch. */
#include "harness.h"
#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *tensor(cf_st_reader *r, const char *name, const cf_st_tensor **t)
{
    *t = cf_st_find(r, name);
    assert_non_null(*t);
    void *p = hmalloc((*t)->nbytes);
    assert_ok(cf_st_read(r, *t, p, (*t)->nbytes));
    return p;
}

static void logits_match_pytorch(void **state)
{
    (void)state;
    const char *name = harness_is_slow() ? "e_tiny_oclgrind" : "a_prenorm_relu_sin";
    char dir[512], fixture[600], model[600], batch[600], out[600], tmp[64], bad[80];
    char log[8192]; /* the tool's stdout and stderr */
    const harness_cmd cmd = {log, sizeof log};
    snprintf(dir, sizeof dir, "%s/parity/%s", getenv("CLFORMER_TEST_DATA"), name);
    snprintf(fixture, sizeof fixture, "%s/fixture.safetensors", dir);
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    assert_true(harness_temp_dir(tmp, sizeof tmp, "logits"));
    harness_path(batch, sizeof batch, tmp, "batch.safetensors");
    harness_path(out, sizeof out, tmp, "logits.safetensors");
    harness_path(bad, sizeof bad, tmp, "x");

    /* step 1's batch: src[0] and the decoder input tgt[0][:, :-1] */
    cf_st_reader *fx;
    assert_ok(cf_st_open(fixture, &fx));
    const cf_st_tensor *ts, *tt, *tl;
    int32_t *src = tensor(fx, "src", &ts), *tgt = tensor(fx, "tgt", &tt);
    float *want = tensor(fx, "logits", &tl);
    const int64_t B = ts->shape[1], S = ts->shape[2], T = tt->shape[2] - 1;
    int32_t *tgt_in = hmalloc((size_t)(B * T) * 4);
    for (int64_t b = 0; b < B; b++) memcpy(tgt_in + b * T, tgt + b * (T + 1), (size_t)T * 4);
    cf_st_writer *w;
    const int64_t s_shape[2] = {B, S}, t_shape[2] = {B, T};
    assert_ok(cf_st_writer_new(batch, &w));
    assert_ok(cf_st_declare(w, "src", CF_ST_I32, 2, s_shape));
    assert_ok(cf_st_declare(w, "tgt_in", CF_ST_I32, 2, t_shape));
    assert_ok(cf_st_begin(w));
    assert_ok(cf_st_write(w, "src", src, (size_t)(B * S) * 4));
    assert_ok(cf_st_write(w, "tgt_in", tgt_in, (size_t)(B * T) * 4));
    assert_ok(cf_st_commit(w));
    cf_st_writer_free(w);

    int rc = harness_run_clformer(&cmd, "logits", "--model", model, "--batch", batch, "--out", out,
                                  NULL);
    if (rc != 0) fail_msg("clformer logits exited with %d:\n%s", rc, log);
    cf_st_reader *r;
    assert_ok(cf_st_open(out, &r));
    const cf_st_tensor *gl;
    float *got = tensor(r, "logits", &gl);
    assert_int_equal(gl->numel, tl->numel);
    double *ref = to_double(want, tl->numel);
    assert_grad_close(got, ref, tl->numel);

    /* errors: a batch without tgt_in, a missing model */
    rc = harness_run_clformer(&cmd, "logits", "--model", model, "--batch", model, "--out", bad,
                              NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "tensor 'src'"));
    rc = harness_run_clformer(&cmd, "logits", "--model", "/nonexistent.safetensors", "--batch",
                              batch, "--out", bad, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "/nonexistent.safetensors"));
    assert_int_equal(harness_run_clformer(&cmd, "logits", "--model", NULL), 2);

    cf_st_close(r);
    cf_st_close(fx);
    free(src), free(tgt), free(want), free(tgt_in), free(got), free(ref);
    assert_true(harness_remove_tree(tmp));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(logits_match_pytorch),
};
HARNESS_DEVICE_MAIN("clformer logits", tests)
