/* `clformer logits` against PyTorch: the step-1 logits of a parity fixture,
 * computed by the command from the fixture's checkpoint and first batch; and
 * a language model's against transformers' GPT-2. */
#include "harness.h"
#include "safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *tensor(cf_st_reader *r, const char *name, const cf_st_tensor **t)
{
    *t = cf_st_find(r, name);
    assert_non_null(*t);
    void *p = hmalloc((*t)->nbytes);
    assert_ok(cf_st_read(r, *t, p, (*t)->nbytes));
    return p;
}

/* Writes the I32 [B, length] tensors to `batch`, runs `clformer logits` on
 * `model` and that batch, and opens what it wrote to `out`. */
static cf_st_reader *logits_of(const harness_cmd *cmd, const char *model, const char *batch,
                               const char *out, size_t n, const char *const *names,
                               const int32_t *const *data, const int64_t (*shapes)[2])
{
    cf_st_writer *w;
    assert_ok(cf_st_writer_new(batch, &w));
    for (size_t i = 0; i < n; i++) assert_ok(cf_st_declare(w, names[i], CF_ST_I32, 2, shapes[i]));
    assert_ok(cf_st_begin(w));
    for (size_t i = 0; i < n; i++)
        assert_ok(cf_st_write(w, names[i], data[i], (size_t)(shapes[i][0] * shapes[i][1]) * 4));
    assert_ok(cf_st_commit(w));
    cf_st_writer_free(w);
    int rc = harness_run_clformer(cmd, "logits", "--model", model, "--batch", batch, "--out", out,
                                  NULL);
    if (rc != 0) fail_msg("clformer logits exited with %d:\n%s", rc, cmd->out);
    cf_st_reader *r;
    assert_ok(cf_st_open(out, &r));
    return r;
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
    const char *names[2] = {"src", "tgt_in"};
    const int32_t *data[2] = {src, tgt_in};
    const int64_t shapes[2][2] = {{B, S}, {B, T}};
    cf_st_reader *r = logits_of(&cmd, model, batch, out, 2, names, data, shapes);
    const cf_st_tensor *gl;
    float *got = tensor(r, "logits", &gl);
    assert_int_equal(gl->numel, tl->numel);
    double *ref = to_double(want, tl->numel);
    assert_grad_close(got, ref, tl->numel);

    /* errors: a batch without tgt_in, a missing model */
    int rc = harness_run_clformer(&cmd, "logits", "--model", model, "--batch", model, "--out", bad,
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

/* A language model's logits against transformers' GPT2LMHeadModel: the
 * GPT-2 parity fixture's Hugging Face directory and last batch of windows
 * (tests/data/gpt2), as --batch ids and as --ids, within test_gpt2_parity's
 * 1e-4; and the errors of the two kinds of input. */
static void lm_logits_match_transformers(void **state)
{
    (void)state;
    const char *name = harness_is_slow() ? "c_tiny_oclgrind" : "a_small";
    char dir[512], golden[600], model[600], batch[600], out[600], one[600], tmp[64];
    char parity[600], log[8192];
    const harness_cmd cmd = {log, sizeof log};
    snprintf(dir, sizeof dir, "%s/gpt2/%s", getenv("CLFORMER_TEST_DATA"), name);
    snprintf(golden, sizeof golden, "%s/golden.safetensors", dir);
    snprintf(model, sizeof model, "%s/model", dir);
    snprintf(parity, sizeof parity, "%s/parity/a_prenorm_relu_sin/model.safetensors",
             getenv("CLFORMER_TEST_DATA"));
    assert_true(harness_temp_dir(tmp, sizeof tmp, "lm_logits"));
    harness_path(batch, sizeof batch, tmp, "ids.safetensors");
    harness_path(out, sizeof out, tmp, "logits.safetensors");
    harness_path(one, sizeof one, tmp, "one.safetensors");

    /* the last batch's windows without their last label: [B, T] ids */
    cf_st_reader *g;
    assert_ok(cf_st_open(golden, &g));
    const cf_st_tensor *ti, *tl;
    int32_t *windows = tensor(g, "ids", &ti);
    float *want = tensor(g, "logits", &tl);
    const int64_t B = tl->shape[0], T = tl->shape[1], V = tl->shape[2], W = ti->shape[2];
    const int32_t *last = windows + (ti->shape[0] - 1) * B * W;
    int32_t *ids = hmalloc((size_t)(B * T) * 4);
    for (int64_t b = 0; b < B; b++) memcpy(ids + b * T, last + b * W, (size_t)T * 4);
    const char *names[1] = {"ids"};
    const int32_t *data[1] = {ids};
    const int64_t shapes[1][2] = {{B, T}};
    cf_st_reader *r = logits_of(&cmd, model, batch, out, 1, names, data, shapes);
    const cf_st_tensor *gl, *gi;
    float *got = tensor(r, "logits", &gl);
    int32_t *echoed = tensor(r, "ids", &gi);
    assert_int_equal(gl->numel, tl->numel);
    assert_memory_equal(echoed, ids, (size_t)(B * T) * 4);
    double worst = 0;
    for (size_t i = 0; i < tl->numel; i++) worst = fmax(worst, fabs(got[i] - want[i]));
    printf("%s: logits max |clformer logits - transformers| %.3g\n", name, worst);
    if (!(worst <= 1e-4)) fail_msg("%s: logits differ by %g > 1e-4", name, worst);

    /* one row given on the command line: that row's logits */
    char list[1024];
    size_t at = 0;
    for (int64_t t = 0; t < T; t++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", t ? " " : "", (int)ids[t]);
    int rc = harness_run_clformer(&cmd, "logits", "--model", model, "--ids", list, "--out", one, NULL);
    if (rc != 0) fail_msg("clformer logits --ids exited with %d:\n%s", rc, log);
    cf_st_reader *r1;
    assert_ok(cf_st_open(one, &r1));
    const cf_st_tensor *l1;
    float *row = tensor(r1, "logits", &l1);
    assert_int_equal(l1->numel, (size_t)(T * V));
    for (int64_t i = 0; i < T * V; i++)
        if (!(fabs(row[i] - want[i]) <= 1e-4)) fail_msg("--ids: logit %d differs", (int)i);

    /* errors: --ids for a translation model, a batch without ids, bad ids,
     * both inputs or neither (--out names no file: an existing one is refused first) */
    unlink(one);
    rc = harness_run_clformer(&cmd, "logits", "--model", parity, "--ids", "4 5", "--out", one, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "--ids is for language models"));
    rc = harness_run_clformer(&cmd, "logits", "--model", model, "--batch", parity, "--out", one,
                              NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "tensor 'ids'"));
    rc = harness_run_clformer(&cmd, "logits", "--model", model, "--ids", "4 x", "--out", one, NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(log, "expected token ids"));
    rc = harness_run_clformer(&cmd, "logits", "--model", model, "--ids", "4", "--batch", batch,
                              "--out", one, NULL);
    assert_int_equal(rc, 2);
    rc = harness_run_clformer(&cmd, "logits", "--model", model, "--out", one, NULL);
    assert_int_equal(rc, 2);

    cf_st_close(r);
    cf_st_close(r1);
    cf_st_close(g);
    free(windows), free(want), free(ids), free(got), free(echoed), free(row);
    assert_true(harness_remove_tree(tmp));
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(logits_match_pytorch),
    cmocka_unit_test(lm_logits_match_transformers),
};
HARNESS_DEVICE_MAIN("clformer logits", tests)
