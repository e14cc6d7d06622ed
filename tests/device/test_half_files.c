/*
 * 16-bit weights in files: models saved by transformers' save_pretrained in
 * bfloat16 and float16 (tests/data/half, tools/reference/make_half_golden.py)
 * load with exactly the values PyTorch's .float() gives; `export --dtype
 * bf16|fp16` (native and hf-gpt2) writes every weight rounded to nearest even
 * and reads back as exactly those values; a dtype clformer does not read (F64)
 * and a weight fp16 cannot hold are refused, naming the fix; the same
 * through `clformer export --dtype`.
 */
#include "harness.h"

#include "half.h"
#include "safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *data(const char *rel)
{
    static char path[1024];
    const char *root = getenv("CLFORMER_TEST_DATA");
    snprintf(path, sizeof path, "%s/half/%s", root ? root : "tests/data", rel);
    return path;
}

/* Every tensor of two F32 safetensors files, bit for bit (same names). */
static void same_f32_tensors(const char *a_path, const char *b_path)
{
    cf_st_reader *a, *b;
    assert_ok(cf_st_open(a_path, &a));
    assert_ok(cf_st_open(b_path, &b));
    assert_int_equal(cf_st_count(a), cf_st_count(b));
    for (size_t i = 0; i < cf_st_count(a); i++) {
        const cf_st_tensor *ta = cf_st_tensor_at(a, i), *tb = cf_st_find(b, ta->name);
        assert_non_null(tb);
        assert_int_equal(ta->dtype, CF_ST_F32);
        assert_int_equal(tb->dtype, CF_ST_F32);
        assert_int_equal(ta->nbytes, tb->nbytes);
        void *x = hmalloc(ta->nbytes + 1), *y = hmalloc(tb->nbytes + 1);
        assert_ok(cf_st_read(a, ta, x, ta->nbytes));
        assert_ok(cf_st_read(b, tb, y, tb->nbytes));
        if (memcmp(x, y, ta->nbytes)) fail_msg("tensor %s differs", ta->name);
        free(x), free(y);
    }
    cf_st_close(a), cf_st_close(b);
}

/* The model's weights saved as a plain fp32 checkpoint at `path`. */
static void save_fp32(clformer_model *m, const char *path) { assert_ok(clformer_model_save(m, path, false)); }

/* A GPT-2 directory saved in bf16 / fp16 loads as PyTorch's .float() of it. */
static void pretrained_16bit_loads_exactly(void **state)
{
    (void)state;
    char dir[] = "/tmp/clformer_half_XXXXXX", a[600], b[600];
    assert_non_null(mkdtemp(dir));
    harness_path(a, sizeof a, dir, "from16.safetensors");
    harness_path(b, sizeof b, dir, "from32.safetensors");
    const char *pairs[2][2] = {{"gpt2_bf16", "gpt2_f32_of_bf16"}, {"gpt2_fp16", "gpt2_f32_of_fp16"}};
    for (int k = 0; k < 2; k++) {
        clformer_model *m16, *m32;
        assert_ok(clformer_model_load(hctx(), data(pairs[k][0]), &m16));
        assert_ok(clformer_model_load(hctx(), data(pairs[k][1]), &m32));
        save_fp32(m16, a);
        save_fp32(m32, b);
        same_f32_tensors(a, b);
        /* and it runs: logits of a short window are finite */
        clformer_session *s;
        assert_ok(clformer_session_create(m16, &s));
        int32_t ids[4] = {1, 5, 7, 2};
        const clformer_batch batch = {1, 0, 4, NULL, ids};
        float logits[3 * 11];
        assert_ok(clformer_session_logits(s, &batch, logits));
        for (int i = 0; i < 3 * 11; i++) assert_true(logits[i] == logits[i] && logits[i] < 1e30f);
        clformer_session_free(s);
        clformer_model_free(m16), clformer_model_free(m32);
        unlink(a), unlink(b);
    }
    rmdir(dir);
}

static void f64_is_refused(void **state)
{
    (void)state;
    clformer_model *m = NULL;
    assert_int_equal(clformer_model_load(hctx(), data("gpt2_f64"), &m), CLFORMER_ERR_FORMAT);
    assert_null(m);
    const char *e = clformer_last_error();
    assert_non_null(strstr(e, " is F64; clformer reads weights stored as F32, BF16 or F16"));
    assert_non_null(strstr(e, "model.to(torch.float32)"));
}

/* Each tensor of `exported` (dtype want) holds the rounding of the same
 * tensor of the fp32 file `orig` (names mapped by `same_names`). */
static void rounded_copy(const char *orig, const char *exported, cf_st_dtype want)
{
    cf_st_reader *o, *e;
    assert_ok(cf_st_open(orig, &o));
    assert_ok(cf_st_open(exported, &e));
    assert_int_equal(cf_st_count(o), cf_st_count(e));
    for (size_t i = 0; i < cf_st_count(o); i++) {
        const cf_st_tensor *to = cf_st_tensor_at(o, i), *te = cf_st_find(e, to->name);
        assert_non_null(te);
        assert_int_equal(to->dtype, CF_ST_F32);
        assert_int_equal(te->dtype, want);
        const size_t n = (size_t)to->numel;
        float *x = hmalloc(n * 4 + 4);
        uint16_t *h = hmalloc(n * 2 + 2), *r = hmalloc(n * 2 + 2);
        assert_ok(cf_st_read(o, to, x, n * 4));
        assert_ok(cf_st_read(e, te, h, n * 2));
        if (want == CF_ST_BF16) cf_bf16_from_f32_n(r, x, n);
        else cf_f16_from_f32_n(r, x, n);
        if (memcmp(h, r, n * 2)) fail_msg("%s: not the rounded weights", to->name);
        free(x), free(h), free(r);
    }
    cf_st_close(o), cf_st_close(e);
}

/* Every tensor of fp32 file `back` is the 16-bit file `half`'s values. */
static void exact_back(const char *half, const char *back)
{
    cf_st_reader *h, *b;
    assert_ok(cf_st_open(half, &h));
    assert_ok(cf_st_open(back, &b));
    for (size_t i = 0; i < cf_st_count(h); i++) {
        const cf_st_tensor *th = cf_st_tensor_at(h, i), *tb = cf_st_find(b, th->name);
        assert_non_null(tb);
        assert_int_equal(tb->dtype, CF_ST_F32);
        const size_t n = (size_t)th->numel;
        float *want = hmalloc(n * 4 + 4), *got = hmalloc(n * 4 + 4);
        assert_ok(cf_st_read_f32(h, th, want, n));
        assert_ok(cf_st_read(b, tb, got, n * 4));
        if (memcmp(want, got, n * 4)) fail_msg("%s: not read back exactly", th->name);
        free(want), free(got);
    }
    cf_st_close(h), cf_st_close(b);
}

static clformer_model *gpt_model(void)
{
    clformer_config c;
    clformer_config_default(&c);
    c.d_model = 16, c.n_heads = 2, c.d_ff = 32, c.n_enc_layers = 0, c.n_dec_layers = 1;
    c.src_vocab = 0, c.tgt_vocab = 9, c.max_len = 8;
    c.activation = CLFORMER_ACT_GELU_TANH, c.positional = CLFORMER_POS_LEARNED;
    c.share_tgt_embed = true, c.scale_embed = false, c.generator_bias = false;
    clformer_model *m;
    assert_ok(clformer_model_create(hctx(), &c, 3, &m));
    const char *v[9] = {"<pad>", "<sos>", "<eos>", "<unk>", "a", "b", "c", "d", "e"};
    assert_ok(clformer_model_set_vocabs(m, NULL, v));
    return m;
}

static void export_round_trips(void **state)
{
    (void)state;
    char dir[] = "/tmp/clformer_half_XXXXXX", orig[200], out[200], back[200], hf[200], hf32[200],
         file[700];
    assert_non_null(mkdtemp(dir));
    harness_path(orig, sizeof orig, dir, "orig.safetensors");
    harness_path(out, sizeof out, dir, "out.safetensors");
    harness_path(back, sizeof back, dir, "back.safetensors");
    harness_path(hf, sizeof hf, dir, "hf");
    harness_path(hf32, sizeof hf32, dir, "hf32");
    clformer_model *m = gpt_model();
    assert_ok(clformer_model_save(m, orig, true)); /* a training checkpoint */
    assert_ok(clformer_model_export_hf_gpt2_as(m, hf32, CLFORMER_FP32));
    const clformer_precision ps[2] = {CLFORMER_BF16, CLFORMER_FP16};
    for (int k = 0; k < 2; k++) {
        const cf_st_dtype want = ps[k] == CLFORMER_BF16 ? CF_ST_BF16 : CF_ST_F16;
        /* native: optimizer state dropped, weights rounded; loads; back to fp32 exactly */
        assert_ok(clformer_checkpoint_export_as(orig, out, ps[k]));
        char plain[400];
        snprintf(plain, sizeof plain, "%s/plain.safetensors", dir);
        assert_ok(clformer_checkpoint_export(orig, plain));
        rounded_copy(plain, out, want);
        clformer_model *b;
        assert_ok(clformer_model_load(hctx(), out, &b));
        save_fp32(b, back);
        exact_back(out, back);
        clformer_model_free(b);
        /* export --dtype fp32 of a 16-bit file: the same exact values */
        assert_ok(clformer_checkpoint_export_as(out, back, CLFORMER_FP32));
        exact_back(out, back);
        unlink(out), unlink(back), unlink(plain);

        /* hf-gpt2: the same, in Hugging Face's names and layout */
        assert_ok(clformer_model_export_hf_gpt2_as(m, hf, ps[k]));
        char a[400], bpath[400];
        snprintf(a, sizeof a, "%s/model.safetensors", hf32);
        snprintf(bpath, sizeof bpath, "%s/model.safetensors", hf);
        rounded_copy(a, bpath, want);
        snprintf(file, sizeof file, "%s/config.json", hf);
        FILE *f = fopen(file, "r");
        assert_non_null(f);
        char text[4096];
        size_t len = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[len] = 0;
        assert_non_null(strstr(text, ps[k] == CLFORMER_BF16 ? "\"torch_dtype\": \"bfloat16\""
                                                           : "\"torch_dtype\": \"float16\""));
        assert_ok(clformer_model_load(hctx(), hf, &b));
        char hfb[400];
        snprintf(hfb, sizeof hfb, "%s/hfb", dir);
        assert_ok(clformer_model_export_hf_gpt2_as(b, hfb, CLFORMER_FP32));
        snprintf(file, sizeof file, "%s/model.safetensors", hfb);
        exact_back(bpath, file);
        clformer_model_free(b);
        const char *names[3] = {"model.safetensors", "config.json", "clformer_vocab.json"};
        for (int i = 0; i < 3; i++) {
            snprintf(file, sizeof file, "%s/%s", hfb, names[i]);
            unlink(file);
        }
        rmdir(hfb);
    }

    /* a weight fp16 cannot hold: refused, naming it; no file written */
    float w[9 * 16];
    assert_ok(clformer_model_read_tensor(m, "tgt_embed.weight", false, w, 9 * 16));
    w[5] = 1e5f;
    assert_ok(clformer_model_write_tensor(m, "tgt_embed.weight", w, 9 * 16));
    assert_ok(clformer_model_save(m, orig, false));
    assert_int_equal(clformer_checkpoint_export_as(orig, out, CLFORMER_FP16),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "'tgt_embed.weight' element 5 is 100000"));
    assert_int_equal(access(out, F_OK), -1);
    assert_ok(clformer_checkpoint_export_as(orig, out, CLFORMER_BF16)); /* bf16 holds it */
    assert_int_equal(clformer_checkpoint_export_as(orig, back, (clformer_precision)5),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    clformer_model_free(m);
    const char *names[3] = {"model.safetensors", "config.json", "clformer_vocab.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(file, sizeof file, "%s/%s", hf, names[i]);
        unlink(file);
        snprintf(file, sizeof file, "%s/%s", hf32, names[i]);
        unlink(file);
    }
    rmdir(hf), rmdir(hf32);
    unlink(orig), unlink(out), unlink(back);
    assert_int_equal(rmdir(dir), 0);
}

/* The command line: `export --dtype` in both formats, its refusals, and the
 * 16-bit directories of save_pretrained through `eval`-like loading. */
static void export_command(void **state)
{
    (void)state;
    char dir[] = "/tmp/clformer_half_XXXXXX", out[200], hf[200], file[300];
    assert_non_null(mkdtemp(dir));
    harness_path(out, sizeof out, dir, "m.safetensors");
    harness_path(hf, sizeof hf, dir, "hf");
    static char text[1 << 14];
    harness_cmd cmd = {text, sizeof text, NULL, 0, NULL, NULL, false};
    /* save_pretrained's fp16 directory in, an hf-gpt2 bf16 directory out */
    assert_int_equal(harness_run_clformer(&cmd, "export", "--model", data("gpt2_fp16"), "--out",
                                          hf, "--format", "hf-gpt2", "--dtype", "bf16", NULL),
                     0);
    snprintf(file, sizeof file, "%s/model.safetensors", hf);
    cf_st_reader *r;
    assert_ok(cf_st_open(file, &r));
    assert_int_equal(cf_st_find(r, "transformer.wte.weight")->dtype, CF_ST_BF16);
    cf_st_close(r);
    /* a clformer checkpoint in, a plain fp16 one out */
    clformer_model *m;
    assert_ok(clformer_model_load(hctx(), hf, &m));
    assert_ok(clformer_model_save(m, out, false));
    clformer_model_free(m);
    char out16[300];
    snprintf(out16, sizeof out16, "%s/m16.safetensors", dir);
    assert_int_equal(harness_run_clformer(&cmd, "export", "--model", out, "--out", out16,
                                          "--dtype", "fp16", NULL),
                     0);
    assert_ok(cf_st_open(out16, &r));
    assert_int_equal(cf_st_find(r, "tgt_embed.weight")->dtype, CF_ST_F16);
    cf_st_close(r);
    unlink(out16);
    /* a word --dtype does not know: a usage error naming the choices */
    assert_int_equal(harness_run_clformer(&cmd, "export", "--model", out, "--out", file, "--dtype",
                                          "fp8", NULL),
                     2);
    assert_non_null(strstr(text, "fp32|bf16|fp16"));
    /* float64 weights: refused, naming the dtype (and nothing made) */
    harness_path(file, sizeof file, dir, "f64");
    assert_int_equal(harness_run_clformer(&cmd, "export", "--model", data("gpt2_f64"), "--out",
                                          file, "--format", "hf-gpt2", NULL),
                     1);
    assert_int_not_equal(access(file, F_OK), 0);
    assert_non_null(strstr(text, "is F64; clformer reads weights stored as F32, BF16 or F16"));
    const char *names[3] = {"model.safetensors", "config.json", "clformer_vocab.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(file, sizeof file, "%s/%s", hf, names[i]);
        unlink(file);
    }
    rmdir(hf);
    unlink(out);
    assert_int_equal(rmdir(dir), 0);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(pretrained_16bit_loads_exactly),
    cmocka_unit_test(f64_is_refused),
    cmocka_unit_test(export_round_trips),
    cmocka_unit_test(export_command),
};
HARNESS_DEVICE_MAIN("half_files", tests)
