/*
 * The model beyond PyTorch parity: determinism (same seed and data: the same
 * bits), resuming from a training checkpoint (the same bits afterwards),
 * checkpoints that round-trip, and bad input refused before any kernel runs.
 */
#include "harness.h"
#include "clformer_util.h"
#include "checkpoint_poke.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A small model with dropout, so determinism covers the dropout masks. */
static clformer_config small_config(void)
{
    clformer_config c = harness_small_config();
    c.dropout = 0.2f;
    c.label_smoothing = 0.1f;
    return c;
}

static char **vocab(int n)
{
    char **v = hmalloc((size_t)n * sizeof *v);
    const char *specials[4] = {"<pad>", "<sos>", "<eos>", "<unk>"};
    for (int i = 0; i < n; i++) {
        v[i] = hmalloc(16);
        if (i < 4) snprintf(v[i], 16, "%s", specials[i]);
        else snprintf(v[i], 16, "w%d", i);
    }
    return v;
}

static void free_vocab(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static clformer_model *new_model(const clformer_config *c, uint64_t seed)
{
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), c, seed, &m));
    char **s = vocab(c->src_vocab), **t = vocab(c->tgt_vocab);
    assert_ok(clformer_model_set_vocabs(m, (const char *const *)s, (const char *const *)t));
    free_vocab(s, c->src_vocab);
    free_vocab(t, c->tgt_vocab);
    return m;
}

/* Batch k: B sentences of varying length, right-padded. */
#define B 3
#define S 7
#define T1 8
static void make_batch(const clformer_config *c, int k, int32_t *src, int32_t *tgt)
{
    ref_rng r = ref_rng_new(1000 + (uint64_t)k);
    for (int b = 0; b < B; b++) {
        int ls = 3 + (int)(ref_rng_next(&r) % (S - 2)), lt = 3 + (int)(ref_rng_next(&r) % (T1 - 2));
        for (int i = 0; i < S; i++)
            src[b * S + i] = i == 0 ? CLFORMER_SOS : i == ls - 1 ? CLFORMER_EOS : i >= ls ? CLFORMER_PAD
                           : 4 + (int32_t)(ref_rng_next(&r) % (uint64_t)(c->src_vocab - 4));
        for (int i = 0; i < T1; i++)
            tgt[b * T1 + i] = i == 0 ? CLFORMER_SOS : i == lt - 1 ? CLFORMER_EOS : i >= lt ? CLFORMER_PAD
                            : 4 + (int32_t)(ref_rng_next(&r) % (uint64_t)(c->tgt_vocab - 4));
    }
}

/* Steps from..to-1 on a session of their own: what a step computes depends
 * on the model alone (weights, optimizer state, step count, seed). */
static void train(clformer_model *m, int from, int to, double *losses)
{
    const clformer_config *c = clformer_model_config(m);
    clformer_session *session;
    assert_ok(clformer_session_create(m, &session));
    int32_t src[B * S], tgt[B * T1];
    for (int k = from; k < to; k++) {
        make_batch(c, k, src, tgt);
        clformer_batch b = {B, S, T1, src, tgt};
        clformer_step_stats s;
        assert_ok(clformer_session_train_step(session, &b, 1e-3f, &s));
        assert_true(isfinite(s.loss));
        losses[k] = s.loss;
    }
    clformer_session_free(session);
}

static void same_seed_same_bits(void **state)
{
    (void)state;
    clformer_config c = small_config();
    const int n = harness_is_slow() ? 2 : 6;
    double a[6], b[6], other[6];
    clformer_model *m = new_model(&c, 7);
    train(m, 0, n, a);
    clformer_model_free(m);
    m = new_model(&c, 7);
    train(m, 0, n, b);
    clformer_model_free(m);
    assert_memory_equal(a, b, n * sizeof *a);
    m = new_model(&c, 8); /* another seed: other weights, other masks */
    train(m, 0, n, other);
    clformer_model_free(m);
    assert_true(memcmp(a, other, n * sizeof *a) != 0);
}

static void resume_gives_the_same_bits(void **state)
{
    (void)state;
    clformer_config c = small_config();
    const int n = harness_is_slow() ? 2 : 8, half = n / 2;
    double straight[8], resumed[8];
    clformer_model *m = new_model(&c, 11);
    train(m, 0, n, straight);
    clformer_model_free(m);

    char path[] = "/tmp/clformer-resume-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    m = new_model(&c, 11);
    train(m, 0, half, resumed);
    /* refused when set, so that a save never drops it */
    assert_int_equal(clformer_model_set_trainer_state(m, "[1, 2]"), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(clformer_model_set_trainer_state(m, "{broken"), CLFORMER_ERR_INVALID_ARGUMENT);
    cf_clear_error();
    clformer_optim_config oc;
    clformer_optim_config_default(&oc);
    oc.clip = INFINITY; /* would make the saved train_state unwritable JSON */
    assert_int_equal(clformer_model_set_optimizer(m, &oc), CLFORMER_ERR_INVALID_ARGUMENT);
    cf_clear_error();
    assert_ok(clformer_model_set_trainer_state(m, "{\"epoch\":0,\"index\":4}"));
    assert_ok(clformer_model_save(m, path, true));
    clformer_model_free(m);

    assert_ok(clformer_model_load(hctx(), path, &m));
    assert_true(clformer_model_has_training_state(m));
    assert_int_equal(clformer_model_step(m), half);
    assert_string_equal(clformer_model_trainer_state(m), "{\"epoch\":0,\"index\":4}");
    train(m, half, n, resumed);
    clformer_model_free(m);
    unlink(path);
    assert_memory_equal(straight, resumed, n * sizeof *straight);
}

static void plain_checkpoint_round_trip(void **state)
{
    (void)state;
    clformer_config c = small_config();
    c.share_tgt_embed = true;
    c.positional = CLFORMER_POS_LEARNED;
    c.norm_first = false;
    clformer_model *m = new_model(&c, 3);
    double l[2];
    train(m, 0, 2, l);
    char path[] = "/tmp/clformer-plain-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    assert_ok(clformer_model_save(m, path, false));
    clformer_model *back;
    assert_ok(clformer_model_load(hctx(), path, &back));
    assert_false(clformer_model_has_training_state(back));
    assert_memory_equal(clformer_model_config(back), clformer_model_config(m), sizeof c);
    assert_string_equal(clformer_model_tgt_vocab(back)[5], "w5");
    size_t n = clformer_model_parameter_count(m);
    assert_int_equal(n, clformer_model_parameter_count(back));
    const char *names[] = {"generator.weight", "pos_embed.weight", "generator.bias"};
    for (int i = 0; i < 3; i++) {
        size_t count = i == 0 ? (size_t)c.tgt_vocab * c.d_model
                     : i == 1 ? (size_t)c.max_len * c.d_model : (size_t)c.tgt_vocab;
        float *x = hmalloc(count * 4), *y = hmalloc(count * 4);
        assert_ok(clformer_model_read_tensor(m, names[i], false, x, count));
        assert_ok(clformer_model_read_tensor(back, names[i], false, y, count));
        assert_memory_equal(x, y, count * 4);
        free(x), free(y);
    }
    clformer_model_free(m);
    clformer_model_free(back);
    unlink(path);
}

static void bad_token_ids_are_refused(void **state)
{
    (void)state;
    clformer_config c = small_config();
    clformer_model *m = new_model(&c, 5);
    clformer_session *session;
    assert_ok(clformer_session_create(m, &session));
    int32_t src[B * S], tgt[B * T1];
    make_batch(&c, 0, src, tgt);
    src[4] = c.src_vocab; /* one past the end */
    clformer_batch b = {B, S, T1, src, tgt};
    clformer_step_stats s;
    assert_int_equal(clformer_session_train_step(session, &b, 1e-3f, &s),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "out of range"));
    assert_non_null(strstr(clformer_last_error(), "source sentence 0 position 4"));
    assert_int_equal(clformer_model_step(m), 0); /* nothing ran */
    make_batch(&c, 0, src, tgt);
    tgt[T1 + 2] = -1;
    assert_int_equal(clformer_session_train_step(session, &b, 1e-3f, &s),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "target sentence 1 position 2"));
    b.tgt_len = c.max_len + 1;
    assert_int_equal(clformer_session_train_step(session, &b, 1e-3f, &s),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "max_len"));
    clformer_session_free(session);
    clformer_model_free(m);
}

/* An error before any sentence is translated (here: a model without
 * vocabularies) leaves every output NULL and frees none of the caller's
 * values (the earlier text_io freed outputs it had never set). */
static void translate_error_before_the_first_sentence(void **state)
{
    (void)state;
    clformer_config c = small_config();
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 1, &m));
    const char *sentences[2] = {"w4 w5", "w6"};
    char stale = 0;
    char *out[2] = {&stale, &stale}; /* not heap pointers: freeing one would crash */
    clformer_decode_options dec;
    clformer_decode_options_default(&dec);
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    assert_int_equal(clformer_translate_sentences(s, sentences, 2, &dec, 1, out, NULL, NULL, NULL),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "no vocabularies"));
    assert_null(out[0]);
    assert_null(out[1]);
    clformer_session_free(s);
    clformer_model_free(m);
}

static void bad_configs_are_refused(void **state)
{
    (void)state;
    clformer_config c = small_config();
    clformer_model *m = NULL;
    c.n_heads = 3;
    assert_int_equal(clformer_model_create(hctx(), &c, 1, &m), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "d_model % n_heads != 0"));
    c = small_config();
    c.d_ff = 0;
    assert_int_equal(clformer_model_create(hctx(), &c, 1, &m), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "d_ff"));
    c = small_config();
    c.dropout = 1.0f; /* everything dropped: refused, not a division by 1 - p = 0 */
    assert_int_equal(clformer_model_create(hctx(), &c, 1, &m), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "dropout must be in [0, 1)"));
    c = small_config();
    c.d_model = 1 << 19; /* parameters beyond the device's memory */
    c.n_heads = 8;
    c.d_ff = 1 << 19;
    clformer_status st = clformer_model_create(hctx(), &c, 1, &m);
    assert_int_equal(st, CLFORMER_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(clformer_last_error(), "does not fit"));
    assert_null(m);
}

/* A NaN or infinity in any tensor, or bytes that differ from their stored
 * checksum, is refused at load naming the tensor (issue 11, items 3 and 9). */
static void damaged_and_non_finite_checkpoints_are_refused(void **state)
{
    (void)state;
    clformer_config c = small_config();
    clformer_model *m = new_model(&c, 5);
    double l[1];
    train(m, 0, 1, l);
    char path[] = "/tmp/clformer-damaged-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    const char *name = "transformer.encoder.layers.0.linear1.weight";
    const struct {
        const char *tensor;
        float value;
        bool drop_crc;
        const char *needle;
    } cases[] = {
        {name, NAN, true, "holds NaN at element 0"},
        {"optim.v.generator.bias", INFINITY, true, "holds an infinity"},
        {name, 0.125f, false, "does not match its stored checksum"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        assert_ok(clformer_model_save(m, path, true));
        poke_tensor(path, cases[i].tensor, cases[i].value, cases[i].drop_crc);
        clformer_model *back = NULL;
        assert_int_equal(clformer_model_load(hctx(), path, &back), CLFORMER_ERR_FORMAT);
        assert_null(back);
        const char *msg = clformer_last_error();
        if (!strstr(msg, cases[i].needle) || !strstr(msg, cases[i].tensor))
            fail_msg("case %zu: '%s' lacks '%s' or the tensor name", i, msg, cases[i].needle);
        cf_clear_error();
    }
    /* the same file without the poke, and without checksums, loads */
    assert_ok(clformer_model_save(m, path, true));
    poke_tensor(path, name, 0.125f, true);
    clformer_model *back = NULL;
    assert_ok(clformer_model_load(hctx(), path, &back));
    clformer_model_free(back);
    clformer_model_free(m);
    unlink(path);
}

/* clformer_model_write_tensor replaces a parameter; a wrong name or size is refused. */
static void write_tensor_round_trip(void **state)
{
    (void)state;
    clformer_config c = small_config();
    clformer_model *m = new_model(&c, 5);
    float bias[23], back[23];
    assert_ok(clformer_model_read_tensor(m, "generator.bias", false, bias, 23));
    for (int i = 0; i < 23; i++) bias[i] = 0.25f * (float)i - 1.0f;
    assert_ok(clformer_model_write_tensor(m, "generator.bias", bias, 23));
    assert_ok(clformer_model_read_tensor(m, "generator.bias", false, back, 23));
    assert_memory_equal(bias, back, sizeof bias);
    assert_int_equal(clformer_model_write_tensor(m, "generator.bias", bias, 22),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_int_equal(clformer_model_write_tensor(m, "no.such.tensor", bias, 23),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "no.such.tensor"));
    clformer_model_free(m);
}

/* Kernel times are recorded only while profiling is on, per family, and
 * cleared by reading them; a context without profiling refuses to turn it on. */
static void kernel_times_follow_set_profiling(void **state)
{
    (void)state;
    assert_int_equal(clformer_context_set_profiling(hctx(), true), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "profiling"));
    clformer_context_params params;
    clformer_context_params_default(&params);
    params.device = hctx()->info.selector;
    params.profiling = true;
    clformer_context *ctx;
    assert_ok(clformer_context_create_with_params(&params, &ctx));
    clformer_config c = small_config();
    clformer_model *m;
    assert_ok(clformer_model_create(ctx, &c, 3, &m));
    clformer_session *session;
    assert_ok(clformer_session_create(m, &session));
    int32_t src[B * S], tgt[B * T1];
    make_batch(&c, 0, src, tgt);
    const clformer_batch batch = {B, S, T1, src, tgt};
    clformer_step_stats stats;
    clformer_kernel_time times[32];
    size_t n = 99;

    assert_ok(clformer_context_set_profiling(ctx, false));
    assert_ok(clformer_context_kernel_times(ctx, times, 32, &n)); /* drops model creation's */
    assert_ok(clformer_session_train_step(session, &batch, 1e-3f, &stats));
    assert_ok(clformer_context_kernel_times(ctx, times, 32, &n));
    assert_int_equal(n, 0);

    assert_ok(clformer_context_set_profiling(ctx, true));
    assert_ok(clformer_session_train_step(session, &batch, 1e-3f, &stats));
    assert_ok(clformer_context_kernel_times(ctx, times, 32, &n));
    assert_true(n >= 3);
    bool gemm = false;
    for (size_t i = 0; i < n; i++) {
        assert_true(times[i].count > 0);
        assert_true(times[i].ms >= 0.0);
        if (i) assert_true(times[i].ms <= times[i - 1].ms);
        if (!strcmp(times[i].family, "gemm")) gemm = true;
    }
    assert_true(gemm);
    assert_ok(clformer_context_kernel_times(ctx, times, 32, &n));
    assert_int_equal(n, 0);
    clformer_session_free(session);
    clformer_model_free(m);
    clformer_context_free(ctx);
}

static char *slurp(const char *path, size_t *size)
{
    char *data = NULL;
    assert_ok(clformer_read_file(path, &data, size));
    return data;
}

/* clformer_checkpoint_export of a training checkpoint is the plain save of
 * the same model, byte for byte: no optim.* tensors, no train_state; it
 * loads as a plain model; a file that is no checkpoint is refused. */
static void export_drops_the_training_state(void **state)
{
    (void)state;
    clformer_config c = small_config();
    clformer_model *m = new_model(&c, 9);
    double l[2];
    train(m, 0, 2, l);
    char train_path[] = "/tmp/clformer-export-train-XXXXXX";
    char plain_path[] = "/tmp/clformer-export-plain-XXXXXX";
    char out_path[] = "/tmp/clformer-export-out-XXXXXX";
    close(mkstemp(train_path));
    close(mkstemp(plain_path));
    close(mkstemp(out_path));
    assert_ok(clformer_model_save(m, train_path, true));
    assert_ok(clformer_model_save(m, plain_path, false));
    assert_ok(clformer_checkpoint_export(train_path, out_path));

    size_t n_plain, n_out;
    char *plain = slurp(plain_path, &n_plain), *out = slurp(out_path, &n_out);
    assert_int_equal(n_out, n_plain);
    assert_memory_equal(out, plain, n_plain);
    free(plain);
    free(out);
    clformer_tensor *t;
    size_t n;
    assert_ok(clformer_tensors_load(out_path, &t, &n));
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) assert_true(strncmp(t[i].name, "optim.", 6) != 0);
    clformer_tensors_free(t, n);

    clformer_model *back = NULL;
    assert_ok(clformer_model_load(hctx(), out_path, &back));
    assert_false(clformer_model_has_training_state(back));
    float a[23], b[23];
    assert_ok(clformer_model_read_tensor(m, "generator.bias", false, a, 23));
    assert_ok(clformer_model_read_tensor(back, "generator.bias", false, b, 23));
    assert_memory_equal(a, b, sizeof a);
    clformer_model_free(back);

    /* exporting an export is the same file again; a non-checkpoint is refused */
    assert_ok(clformer_checkpoint_export(out_path, plain_path));
    const clformer_tensor junk = {"x", CLFORMER_DTYPE_F32, 1, {1}, a};
    assert_ok(clformer_tensors_save(train_path, &junk, 1));
    assert_int_equal(clformer_checkpoint_export(train_path, out_path), CLFORMER_ERR_FORMAT);
    assert_non_null(strstr(clformer_last_error(), "not a clformer checkpoint"));
    clformer_model_free(m);
    unlink(train_path);
    unlink(plain_path);
    unlink(out_path);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(same_seed_same_bits),
    cmocka_unit_test(resume_gives_the_same_bits),
    cmocka_unit_test(plain_checkpoint_round_trip),
    cmocka_unit_test(damaged_and_non_finite_checkpoints_are_refused),
    cmocka_unit_test(bad_token_ids_are_refused),
    cmocka_unit_test(bad_configs_are_refused),
    cmocka_unit_test(translate_error_before_the_first_sentence),
    cmocka_unit_test(write_tensor_round_trip),
    cmocka_unit_test(kernel_times_follow_set_profiling),
    cmocka_unit_test(export_drops_the_training_state),
};
HARNESS_DEVICE_MAIN("model", tests)
