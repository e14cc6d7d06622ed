/*
 * `clformer bench` end to end: runs $CLFORMER_BINARY bench on the device
 * under test (CLFORMER_DEVICE set from the harness's selector, the rest of
 * the environment kept) and checks that the JSON report holds every key
 * with a sane value, that the FLOP count matches a GEMM-by-GEMM tally of
 * the model, and that bad flags are usage errors. Never asserts a speed.
 */
#include "harness.h"
#include "attention_search.h"
#include "profile.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char out[1 << 16], err[1 << 16]; /* the last run's stdout and stderr */
static const harness_cmd cli = {out, sizeof out, err, sizeof err};

/* Runs `clformer bench ARGS...` (NULL-terminated) on the device under test. */
#define run_bench(...) harness_run_clformer(&cli, "bench", __VA_ARGS__)

static void mentions(const char *needle)
{
    if (!strstr(out, needle) && !strstr(err, needle))
        fail_msg("the output does not mention '%s'\nstdout: %s\nstderr: %s", needle, out, err);
}

static void expect(int got, int want, const char *needle)
{
    harness_expect_run(&cli, got, want, needle);
}

/* --- an independent FLOP tally: every GEMM of the model, one by one ------- */

typedef struct {
    double forward, backward;
} tally;

/* A linear layer (N, in) -> (N, outs): forward Y = X W^T; backward dX = dY W
 * and dW += dY^T X, the same m*n*k each. */
static void linear(tally *t, double N, double in, double outs)
{
    t->forward += 2 * N * outs * in;
    t->backward += 2 * (2 * N * in * outs);
}

/* Attention per head: S = Q K^T (Tq x Tk x dh) and O = P V (Tq x dh x Tk)
 * forward; dV, dP, dQ, dK backward. */
static void attention(tally *t, double B, double H, double dh, double Tq, double Tk)
{
    t->forward += B * H * (2 * Tq * Tk * dh + 2 * Tq * dh * Tk);
    t->backward += B * H * 4 * (2 * Tq * Tk * dh);
}

typedef struct {
    double d, H, ff, E, D, V; /* d_model, heads, d_ff, layers, vocabulary */
} dims;

static double train_flop(const dims *m, double B, double S, double T)
{
    const double d = m->d, H = m->H, ff = m->ff;
    tally t = {0, 0};
    for (int l = 0; l < m->E; l++) { /* encoder */
        linear(&t, B * S, d, 3 * d);
        attention(&t, B, H, d / H, S, S);
        linear(&t, B * S, d, d);
        linear(&t, B * S, d, ff);
        linear(&t, B * S, ff, d);
    }
    for (int l = 0; l < m->D; l++) { /* decoder */
        linear(&t, B * T, d, 3 * d);
        attention(&t, B, H, d / H, T, T);
        linear(&t, B * T, d, d);
        linear(&t, B * T, d, d);     /* cross-attention queries */
        linear(&t, B * S, d, 2 * d); /* its keys and values */
        attention(&t, B, H, d / H, T, S);
        linear(&t, B * T, d, d);
        linear(&t, B * T, d, ff);
        linear(&t, B * T, ff, d);
    }
    linear(&t, B * T, d, m->V); /* generator */
    return t.forward + t.backward;
}

/* Weights and biases of docs/MODEL.md's model with sinusoidal positions. */
static double parameter_count(const dims *m, bool share_all)
{
    const double d = m->d, ff = m->ff;
    const double attn = 4 * d * d + 4 * d, ffn = 2 * d * ff + ff + d, norm = 2 * d;
    /* embeddings and generator; shared: one matrix, the generator's bias */
    return (share_all ? m->V * d : 3 * m->V * d) + m->V
           + m->E * (attn + ffn + 2 * norm) + norm /* encoder */
           + m->D * (2 * attn + ffn + 3 * norm) + norm;
}

/* A language model (the gpt presets, GPT-2's layout): L decoder-only
 * layers without cross-attention, a generator without bias tied to the
 * token table, learned positions for `context` tokens, a final LayerNorm. */
static double lm_train_flop(const dims *m, double B, double T)
{
    const double d = m->d, H = m->H, ff = m->ff;
    tally t = {0, 0};
    for (int l = 0; l < m->D; l++) {
        linear(&t, B * T, d, 3 * d);
        attention(&t, B, H, d / H, T, T);
        linear(&t, B * T, d, d);
        linear(&t, B * T, d, ff);
        linear(&t, B * T, ff, d);
    }
    linear(&t, B * T, d, m->V);
    return t.forward + t.backward;
}

/* A Llama-style model: grouped-query attention (queries of d, keys and
 * values of kv each, one packed projection), SwiGLU's gate, up and down. */
static double llama_train_flop(const dims *m, double kv, double B, double T)
{
    const double d = m->d, H = m->H, ff = m->ff;
    tally t = {0, 0};
    for (int l = 0; l < m->D; l++) {
        linear(&t, B * T, d, d + 2 * kv);
        attention(&t, B, H, d / H, T, T);
        linear(&t, B * T, d, d);
        linear(&t, B * T, d, ff); /* gate */
        linear(&t, B * T, d, ff); /* up */
        linear(&t, B * T, ff, d); /* down */
    }
    linear(&t, B * T, d, m->V);
    return t.forward + t.backward;
}

static double lm_parameter_count(const dims *m, double context)
{
    const double d = m->d, ff = m->ff;
    const double attn = 4 * d * d + 4 * d, ffn = 2 * d * ff + ff + d, norm = 2 * d;
    return m->V * d + context * d + m->D * (attn + ffn + 2 * norm) + norm;
}

/* --- the JSON report ------------------------------------------------------ */

static double number(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v)) fail_msg("key '%s' is missing or not a number\nstdout: %s", key, out);
    return json_number_value(v);
}

static double positive(json_t *o, const char *key)
{
    double x = number(o, key);
    if (!(x > 0) || !isfinite(x)) fail_msg("key '%s' is %g, expected a positive number", key, x);
    return x;
}

static const char *string(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v)) fail_msg("key '%s' is missing or not a string\nstdout: %s", key, out);
    return json_string_value(v);
}

static json_t *object(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_object(v)) fail_msg("key '%s' is missing or not an object\nstdout: %s", key, out);
    return v;
}

/* Every value of a family -> ms object is a finite number >= 0; gemm is there and > 0. */
static double check_families(json_t *o, const char *key)
{
    json_t *fam = object(o, key);
    const char *name;
    json_t *v;
    double sum = 0;
    json_object_foreach(fam, name, v) {
        if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
            fail_msg("%s.%s is not a time >= 0", key, name);
        sum += json_number_value(v);
    }
    positive(fam, "gemm");
    return sum;
}

/* launches_per_step is the sum of kernel_launches over the families. */
static void check_launches(json_t *r)
{
    json_t *fam = object(r, "kernel_launches");
    const char *name;
    json_t *v;
    double sum = 0;
    json_object_foreach(fam, name, v) sum += json_number_value(v);
    const double total = positive(r, "launches_per_step");
    if (fabs(total - sum) > 1e-6 * sum) fail_msg("launches_per_step %g, the families sum to %g", total, sum);
}

/* The per-kernel list `key`: largest time first, each entry named and in a
 * family of `family_key`, whose times its kernels add up to (and, where
 * `launches_key` is given, its launches); the GEMM calls are one entry. */
static void check_kernels(json_t *r, const char *key, const char *family_key,
                          const char *launches_key)
{
    json_t *list = json_object_get(r, key), *fam = object(r, family_key);
    if (!json_is_array(list) || json_array_size(list) == 0)
        fail_msg("key '%s' is missing or not a non-empty array\nstdout: %s", key, out);
    const char *name;
    json_t *v;
    json_object_foreach(fam, name, v) {
        double ms = 0, launches = 0, last = INFINITY;
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            const double t = number(e, "ms");
            if (t > last) fail_msg("%s[%zu] takes %g ms, more than the one before", key, i, t);
            last = t;
            string(e, "kernel");
            if (strcmp(string(e, "family"), name)) continue;
            ms += t;
            launches += positive(e, "launches");
        }
        if (fabs(ms - json_number_value(v)) > 1e-3 * ms + 1e-6)
            fail_msg("%s: the %s kernels take %g ms, %s.%s is %g", key, name, ms, family_key,
                     name, json_number_value(v));
        if (launches_key) {
            const double want = number(object(r, launches_key), name);
            if (fabs(launches - want) > 1e-6 * want)
                fail_msg("%s: the %s kernels launch %g times, %s.%s is %g", key, name,
                         launches, launches_key, name, want);
        }
    }
    size_t i;
    json_t *e;
    bool gemm = false;
    json_array_foreach(list, i, e) gemm |= !strcmp(string(e, "kernel"), "gemm");
    if (!gemm) fail_msg("%s has no gemm entry\nstdout: %s", key, out);
}

/* The roofline: per family bytes > 0, GB/s = bytes / ms, the copy fraction
 * GB/s over the copy bandwidth; GEMM's GFLOP/s from its own FLOP; the
 * non-GEMM time and its share of the profiled step. */
static void check_roofline(json_t *r, double flop, double kernel_ms, double step_wall_ms)
{
    const double bw = positive(r, "copy_bandwidth_gbps");
    json_t *ms = object(r, "kernel_ms"), *bytes = object(r, "kernel_bytes");
    json_t *gbps = object(r, "kernel_gbps"), *frac = object(r, "kernel_copy_fraction");
    assert_int_equal(json_object_size(bytes), json_object_size(ms));
    const char *name;
    json_t *v;
    json_object_foreach(ms, name, v) {
        const double t = json_number_value(v), by = positive(bytes, name);
        if (by != floor(by)) fail_msg("kernel_bytes.%s is %g, not a whole number", name, by);
        const double want = t > 0 ? by / (t * 1e-3) * 1e-9 : 0.0;
        if (fabs(number(gbps, name) - want) > 1e-4 * want + 1e-9)
            fail_msg("kernel_gbps.%s is %g, bytes / ms give %g", name, number(gbps, name), want);
        if (fabs(number(frac, name) - want / bw) > 1e-4 * want / bw + 1e-9)
            fail_msg("kernel_copy_fraction.%s is %g, expected %g", name, number(frac, name),
                     want / bw);
    }
    const double gemm_ms = positive(ms, "gemm");
    const double gf = positive(r, "gemm_kernel_gflops");
    json_t *train_roofs = object(object(r, "roofline"), "train");
    const double gemm_flop = positive(object(train_roofs, "gemm"), "flop");
    if (gemm_flop > flop) fail_msg("the GEMMs' FLOP %.0f exceed the step's %.0f", gemm_flop, flop);
    if (fabs(gf - gemm_flop / (gemm_ms * 1e-3) * 1e-9) > 1e-4 * gf)
        fail_msg("gemm_kernel_gflops %g disagrees with the GEMMs' FLOP / kernel_ms.gemm", gf);
    const double non_gemm = number(r, "non_gemm_kernel_ms");
    if (fabs(non_gemm - (kernel_ms - gemm_ms)) > 1e-3 * kernel_ms + 1e-6)
        fail_msg("non_gemm_kernel_ms %g is not kernel time %g minus gemm %g", non_gemm, kernel_ms,
                 gemm_ms);
    if (fabs(number(r, "non_gemm_step_fraction") - non_gemm / step_wall_ms) > 1e-4)
        fail_msg("non_gemm_step_fraction is not non_gemm_kernel_ms / profiled_step_ms");
    positive(object(r, "translate_kernel_bytes"), "gemm");
    positive(object(r, "translate_kernel_gbps"), "gemm");
}

/* The roofline against the FMA peak and the copy bandwidth: per family its
 * GFLOP/s and GB/s from its FLOP, bytes and ms, the fractions of the roofs,
 * the roof fraction from the nearer roof; the GEMMs' and the attention
 * kernels' FLOP as profiled equal the step's tally. */
static void check_roofs(json_t *r, const char *key, const char *ms_key, double tally_flop)
{
    json_t *roof = object(r, "roofline");
    const double peak = positive(roof, "fma_gflops"), bw = positive(roof, "copy_gbps");
    if (bw != number(r, "copy_bandwidth_gbps")) fail_msg("two copy bandwidths");
    json_t *fams = object(roof, key);
    assert_int_equal(json_object_size(fams), json_object_size(object(r, ms_key)));
    const char *name;
    json_t *f;
    json_object_foreach(fams, name, f) {
        const double s = number(f, "ms") * 1e-3, flop = number(f, "flop"), by = number(f, "bytes");
        const double gf = flop / s * 1e-9, gb = by / s * 1e-9;
        if (fabs(number(f, "gflops") - gf) > 1e-4 * gf + 1e-9 ||
            fabs(number(f, "peak_fraction") - gf / peak) > 1e-4 * gf / peak + 1e-12 ||
            fabs(number(f, "gbps") - gb) > 1e-4 * gb + 1e-9 ||
            fabs(number(f, "copy_fraction") - gb / bw) > 1e-4 * gb / bw + 1e-12)
            fail_msg("roofline.%s.%s does not follow from its flop, bytes and ms", key, name);
        const bool compute = flop / (peak * 1e9) > by / (bw * 1e9);
        const double roof_s = compute ? flop / (peak * 1e9) : by / (bw * 1e9);
        assert_string_equal(string(f, "bound"), compute ? "compute" : "memory");
        if (fabs(number(f, "roof_fraction") - roof_s / s) > 1e-4 * roof_s / s + 1e-12)
            fail_msg("roofline.%s.%s.roof_fraction is not its roof time over its time", key, name);
    }
    /* the products run as GEMMs or inside the fused attention kernels (the
     * tiled ones of GPU profiles): together, the tally's FLOP */
    double products = number(object(fams, "gemm"), "flop");
    json_t *attention = json_object_get(fams, "attention");
    if (attention) products += number(attention, "flop");
    if (tally_flop > 0 && products != tally_flop)
        fail_msg("the profiled GEMM and attention FLOP %.0f differ from the step's tally %.0f",
                 products, tally_flop);
}

/* The tiny preset; on a simulator, --quick's micro model (a tiny step takes
 * minutes there). */
/* The last run's stdout: one JSON object (release with json_decref). */
static json_t *report(void)
{
    json_error_t jerr;
    json_t *r = json_loads(out, 0, &jerr);
    if (!json_is_object(r)) fail_msg("stdout is not one JSON object (%s)\nstdout: %s", jerr.text, out);
    return r;
}

/* The shape a report's "model" and "vocab" give. */
static dims dims_of(json_t *r)
{
    json_t *model = object(r, "model");
    return (dims){number(model, "d_model"), number(model, "n_heads"), number(model, "d_ff"),
                  number(model, "n_enc_layers"), number(model, "n_dec_layers"),
                  number(r, "vocab")};
}

static void bench_json(void **state)
{
    (void)state;
    const bool quick = harness_is_slow();
    expect(run_bench("--config", "tiny", "--batch", "2", "--len", "4", "--steps", "1",
                     "--warmup", "0", "--json", quick ? "--quick" : NULL, NULL),
           0, NULL);
    json_t *r = report();

    /* what was asked, echoed */
    assert_string_equal(string(r, "config"), "tiny");
    assert_true(json_is_boolean(json_object_get(r, "quick")));
    assert_int_equal(json_is_true(json_object_get(r, "quick")), quick);
    assert_string_equal(string(r, "device"), hctx()->info.name);
    assert_string_equal(string(r, "device_selector"), hctx()->info.selector);
    assert_string_equal(string(r, "gemm_provider"),
                        clformer_gemm_provider_name(clformer_context_gemm_provider(hctx())));
    /* auto: unfused for so small a batch, but fused on the tiled kernels */
    const clformer_attention_path chosen = hctx()->attention_path;
    const clformer_attention_path taken =
        chosen != CLFORMER_ATTENTION_AUTO ? chosen
        : hctx()->device_profile.tiled_attention ? CLFORMER_ATTENTION_FUSED
                                                 : CLFORMER_ATTENTION_UNFUSED;
    assert_string_equal(string(r, "attention_path"), clformer_attention_path_name(taken));
    /* the tiles of the tiled kernels where the steps ran them (the profile's:
     * no tile search on a CPU device), null elsewhere */
    cf_attention_tiles t;
    const char *why;
    const bool tiled = taken != CLFORMER_ATTENTION_UNFUSED &&
                       cf_attention_tiles_for(&hctx()->device_profile, quick ? 8 : 16, &t, &why);
    if (tiled) {
        char spec[128];
        cf_attention_tiles_spec(&t, spec, sizeof spec);
        assert_string_equal(string(r, "attention_tiles"), spec);
        assert_string_equal(string(r, "attention_tiles_chosen"), "profile");
    } else {
        assert_true(json_is_null(json_object_get(r, "attention_tiles")));
        assert_true(json_is_null(json_object_get(r, "attention_tiles_chosen")));
    }
    assert_true(number(r, "batch") == 2 && number(r, "len") == 4);
    assert_true(number(r, "steps") == 1 && number(r, "warmup") == 0);
    assert_true(fabs(number(r, "dropout") - 0.1) < 1e-6);
    json_t *model = object(r, "model");
    const dims m = dims_of(r);
    const dims tiny = {64, 4, 256, 2, 2, 8000}, micro = {16, 2, 32, 1, 1, 32};
    assert_memory_equal(&m, quick ? &micro : &tiny, sizeof m);
    assert_true(number(model, "max_len") == 256);
    const double params = positive(r, "params");
    if (params != parameter_count(&m, false))
        fail_msg("params %.0f, expected %.0f", params, parameter_count(&m, false));

    /* training */
    assert_true(number(r, "train_tokens_per_step") == 8);
    const double step_ms = positive(r, "train_step_ms");
    const double tps = positive(r, "train_tokens_per_s");
    if (fabs(tps * step_ms / 1e3 - 8) > 1e-3) fail_msg("tokens/s %g disagrees with step %g ms", tps, step_ms);
    const double flop = positive(r, "flop_per_step");
    const double want = train_flop(&m, 2, 4, 4);
    if (flop != want) fail_msg("flop_per_step %.0f, the GEMM tally gives %.0f", flop, want);
    const double gf = positive(r, "train_gflops");
    if (fabs(gf - flop / (step_ms * 1e-3) * 1e-9) > 1e-4 * gf)
        fail_msg("train_gflops %g disagrees with flop_per_step / train_step_ms", gf);
    positive(r, "first_step_s");
    positive(r, "model_create_s");
    const double loss = positive(r, "loss_first");
    /* about ln(vocab) for random weights */
    if (fabs(loss - log(m.V)) > 2) fail_msg("first loss %g, ln(vocab) is %g", loss, log(m.V));
    positive(r, "loss_last");
    /* every program came from somewhere: built now or loaded from the disk cache */
    assert_true(number(r, "programs_built") >= 0 && number(r, "program_disk_hits") >= 0);
    assert_true(number(r, "programs_built") + number(r, "program_disk_hits") > 0);
    assert_true(number(r, "program_memory_hits") > 0);

    /* translation: 2 sentences of exactly 4 tokens, since <eos> is ruled out */
    assert_true(number(r, "translate_tokens") == 8);
    assert_true(number(r, "translate_steps") == 4);
    positive(r, "translate_tokens_per_s");
    positive(r, "translate_batch_ms");
    positive(r, "translate_first_s");
    positive(r, "translate_flop");
    positive(r, "translate_gflops");

    /* profiling: per-family times, gemm among them; kernels fit in the wall clock */
    const double kernels = check_families(r, "kernel_ms");
    if (fabs(kernels - number(r, "kernel_total_ms")) > 1e-3 * kernels + 1e-6)
        fail_msg("kernel_total_ms is not the sum of kernel_ms");
    const double step_wall = positive(r, "profiled_step_ms");
    assert_true(number(r, "profiled_steps") == 1);
    positive(object(r, "kernel_launches"), "gemm");
    check_launches(r);
    check_kernels(r, "kernels", "kernel_ms", "kernel_launches");
    check_kernels(r, "translate_kernels", "translate_kernel_ms", NULL);
    positive(r, "translate_launches_per_batch");
    check_roofline(r, flop, kernels, step_wall);
    check_roofs(r, "train", "kernel_ms", flop);
    check_roofs(r, "translate", "translate_kernel_ms", 0);
    check_families(r, "translate_kernel_ms");
    positive(r, "translate_kernel_total_ms");
    positive(r, "translate_profiled_batch_ms");

    /* memory: weights, gradients and Adam's two moments, all float */
    json_t *mem = object(r, "memory");
    assert_true(positive(mem, "parameters") == 4 * params);
    assert_true(positive(mem, "gradients") == 4 * params);
    assert_true(positive(mem, "optimizer") == 8 * params);
    positive(mem, "activations");
    positive(mem, "decoding");
    assert_true(positive(mem, "total") >= 16 * params);
    json_decref(r);
}

/* A language-model preset: gpt-mini's shape (its nanoGPT dropout of 0, 65
 * characters), windows of --len tokens, greedy generation in place of
 * translation, the same report otherwise. On a simulator, --quick's micro
 * model in gpt-mini's layout. */
static void bench_lm_json(void **state)
{
    (void)state;
    const bool quick = harness_is_slow();
    expect(run_bench("--config", "gpt-mini", "--batch", "2", "--len", "8", "--steps", "1",
                     "--warmup", "0", "--json", quick ? "--quick" : NULL, NULL),
           0, NULL);
    json_t *r = report();
    assert_string_equal(string(r, "config"), "gpt-mini");
    assert_string_equal(string(r, "task"), "lm");
    assert_true(number(r, "batch") == 2 && number(r, "len") == 8);
    assert_true(number(r, "dropout") == 0);
    json_t *model = object(r, "model");
    const dims m = dims_of(r);
    const dims mini = {128, 4, 512, 0, 4, 65}, micro = {16, 2, 32, 0, 1, 32};
    assert_memory_equal(&m, quick ? &micro : &mini, sizeof m);
    assert_true(number(model, "max_len") == 64);
    if (positive(r, "params") != lm_parameter_count(&m, 64))
        fail_msg("params %.0f, expected %.0f", number(r, "params"), lm_parameter_count(&m, 64));
    assert_true(number(r, "train_tokens_per_step") == 16); /* B windows of T inputs */
    const double flop = positive(r, "flop_per_step");
    if (flop != lm_train_flop(&m, 2, 8))
        fail_msg("flop_per_step %.0f, the GEMM tally gives %.0f", flop, lm_train_flop(&m, 2, 8));
    const double loss = positive(r, "loss_first");
    if (fabs(loss - log(m.V)) > 2) fail_msg("first loss %g, ln(vocab) is %g", loss, log(m.V));
    /* generation: 2 rows, a 1-token prompt and 7 new tokens each */
    assert_true(number(r, "generate_tokens") == 14);
    assert_true(number(r, "generate_steps") == 7);
    positive(r, "generate_tokens_per_s");
    positive(r, "generate_flop");
    positive(r, "generate_launches_per_batch");
    assert_null(json_object_get(r, "translate_tokens_per_s"));
    check_families(r, "kernel_ms");
    check_launches(r);
    check_families(r, "generate_kernel_ms");
    check_kernels(r, "kernels", "kernel_ms", "kernel_launches");
    check_kernels(r, "generate_kernels", "generate_kernel_ms", NULL);
    json_decref(r);
}

/* A Llama-style preset, smollm-135m's grouped-query attention (3 key/value
 * heads) and SwiGLU, in a micro shape (6 heads of 4): its FLOP count
 * follows its blocks, and the GEMMs as profiled agree. */
static void bench_llama_flop(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* bench_lm_json's --quick run covers the command there */
    expect(run_bench("--config", "smollm-135m", "--d-model", "24", "--heads", "6", "--d-ff", "32",
                     "--dec-layers", "1", "--vocab", "32", "--batch", "2", "--len", "6",
                     "--steps", "1", "--warmup", "0", "--json", NULL),
           0, NULL);
    json_t *r = report();
    assert_string_equal(string(r, "task"), "lm");
    const dims m = dims_of(r);
    const dims want_shape = {24, 6, 32, 0, 1, 32};
    assert_memory_equal(&m, &want_shape, sizeof m);
    const double flop = positive(r, "flop_per_step"), want = llama_train_flop(&m, 3 * 4, 2, 6);
    if (flop != want) fail_msg("flop_per_step %.0f, the GEMM tally gives %.0f", flop, want);
    check_roofs(r, "train", "kernel_ms", flop);
    json_decref(r);
}

/* --quick keeps a preset's grouped-query attention in its micro shape: 2
 * heads sharing 1 key/value head (smollm-135m's 3 divide no 2 heads). */
static void bench_quick_grouped(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* bench_lm_json's --quick run covers the command there */
    expect(run_bench("--config", "smollm-135m", "--quick", "--batch", "2", "--len", "6",
                     "--steps", "1", "--warmup", "0", "--json", NULL),
           0, NULL);
    json_t *r = report();
    const dims m = dims_of(r);
    const dims micro = {16, 2, 32, 0, 1, 32};
    assert_memory_equal(&m, &micro, sizeof m);
    const double flop = positive(r, "flop_per_step"), want = llama_train_flop(&m, 1 * 8, 2, 6);
    if (flop != want) fail_msg("flop_per_step %.0f, the GEMM tally gives %.0f", flop, want);
    json_decref(r);
}

static void bench_table(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* the JSON run covers the same measurement */
    expect(run_bench("--config", "tiny", "--batch", "2", "--len", "4", "--steps", "1",
                     "--warmup", "0", NULL),
           0, "target tokens/s");
    mentions("GFLOP/s");
    mentions("generated tokens/s");
    mentions("gemm");
    mentions("copy bandwidth");
    mentions("GB/s");
    mentions("non-GEMM");
    mentions("total allocated by clformer");
    mentions("launches");
    mentions("attention path");
    if (hctx()->device_profile.tiled_attention) mentions("attention tiles");
}

/* The model options replace the preset's shape (docs/RESULTS.md's recipe is
 * measured this way): echoed in the JSON, counted in the FLOP tally and in
 * the parameters of one shared embedding matrix. */
static void bench_shape_options(void **state)
{
    (void)state;
    if (harness_is_slow()) skip(); /* a step without --quick takes minutes on a simulator */
    expect(run_bench("--d-model", "32", "--heads", "2", "--d-ff", "48", "--enc-layers", "1",
                     "--dec-layers", "2", "--post-norm", "--dropout", "0.3", "--attention-dropout", "0",
                     "--activation-dropout", "0.2",
                     "--label-smoothing", "0.1", "--share-all-embeddings", "--vocab", "40",
                     "--batch", "2", "--len", "5", "--steps", "1", "--warmup", "0", "--json",
                     NULL),
           0, NULL);
    json_t *r = report();
    json_t *model = object(r, "model");
    const dims m = dims_of(r);
    const dims want = {32, 2, 48, 1, 2, 40};
    assert_memory_equal(&m, &want, sizeof m);
    assert_true(json_is_false(json_object_get(model, "norm_first")));
    assert_true(json_is_true(json_object_get(model, "share_all_embeddings")));
    assert_true(fabs(number(r, "dropout") - 0.3) < 1e-6);
    assert_true(fabs(number(r, "label_smoothing") - 0.1) < 1e-6);
    assert_true(number(r, "attention_dropout") == 0);
    assert_true(fabs(number(r, "activation_dropout") - 0.2) < 1e-6);
    const double params = positive(r, "params");
    if (params != parameter_count(&m, true))
        fail_msg("params %.0f, expected %.0f (one shared embedding)", params,
                 parameter_count(&m, true));
    const double flop = positive(r, "flop_per_step");
    if (flop != train_flop(&m, 2, 5, 5))
        fail_msg("flop_per_step %.0f, the GEMM tally gives %.0f", flop, train_flop(&m, 2, 5, 5));
    json_decref(r);
}

/* Usage errors are found before the device is opened, and exit 2. */
static void bench_usage_errors(void **state)
{
    (void)state;
    expect(run_bench("--config", "huge", NULL), 2, "tiny|small|base");
    expect(run_bench("--batch", "0", NULL), 2, "--batch");
    expect(run_bench("--batch", "two", NULL), 2, "whole number");
    expect(run_bench("--len", "2", NULL), 2, "--len");
    expect(run_bench("--len", "4097", NULL), 2, "--len");
    expect(run_bench("--steps", "0", NULL), 2, "--steps");
    expect(run_bench("--warmup", "-1", NULL), 2, "--warmup");
    expect(run_bench("--vocab", "4", NULL), 2, "--vocab");
    expect(run_bench("--steps", NULL), 2, "needs a value");
    expect(run_bench("--heads", "0", NULL), 2, "--heads");
    expect(run_bench("--dropout", "1", NULL), 2, "--dropout");
    expect(run_bench("--d-model", "wide", NULL), 2, "whole number");
    expect(run_bench("--fast", NULL), 2, "unknown option");
    expect(run_bench("--help", NULL), 0, "tokens/s");
    expect(run_bench("--task", "lm", "--config", "tiny", NULL), 2, "language-model preset");
    expect(run_bench("--task", "translate", "--config", "gpt-mini", NULL), 2, "translation preset");
    expect(run_bench("--config", "gpt-mini", "--enc-layers", "1", NULL), 2, "decoder-only");
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(bench_usage_errors),
    cmocka_unit_test(bench_json),
    cmocka_unit_test(bench_table),
    cmocka_unit_test(bench_lm_json),
    cmocka_unit_test(bench_llama_flop),
    cmocka_unit_test(bench_quick_grouped),
    cmocka_unit_test(bench_shape_options),
};
HARNESS_DEVICE_MAIN("cmd_bench", tests)
