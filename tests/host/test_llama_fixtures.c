/*
 * The Llama parity fixtures parse (tests/data/llama/<name>/, written by
 * tools/reference/llama_reference.py models; the script's docstring says
 * what each file holds): for every configuration, config.json has the
 * fields a LlamaForCausalLM needs, model.safetensors holds exactly the
 * tensors of Hugging Face's Llama layout with the shapes the config gives
 * (lm_head only when the head is untied), and golden.safetensors holds the
 * ids, logits, losses, prompt, generated ids and one gradient per parameter
 * with consistent shapes and values in range. Together the fixtures cover
 * GQA ratios 1, 2 and n_heads, tied and untied heads, rope_theta 10,000 and
 * 500,000, and linear and dynamic rope_scaling. The parity tests that run
 * the model against them come with the Llama family (issue 31, phase 2).
 */
#include "data_util.h"

#include "safetensors.h"

#include <jansson.h>
#include <math.h>

#define STEPS 10

typedef struct {
    int64_t D, H, KV, L, I, V;
    bool tied;
    double theta;
    char scaling[16];
} llama_shape;

static int64_t field(json_t *cfg, const char *key)
{
    json_t *v = json_object_get(cfg, key);
    if (!json_is_integer(v)) fail_msg("config.json: %s is not an integer", key);
    return json_integer_value(v);
}

/* One expected parameter: its name and shape. */
typedef struct {
    char name[96];
    int ndim;
    int64_t shape[2];
} param;

static size_t expected_params(const llama_shape *s, param *p)
{
    const int64_t dh = s->D / s->H;
    size_t n = 0;
#define ADD(nd, d0, d1, ...)                                                                       \
    do {                                                                                           \
        snprintf(p[n].name, sizeof p[n].name, __VA_ARGS__);                                        \
        p[n].ndim = nd, p[n].shape[0] = d0, p[n].shape[1] = d1, n++;                               \
    } while (0)
    ADD(2, s->V, s->D, "model.embed_tokens.weight");
    for (int64_t l = 0; l < s->L; l++) {
        ADD(1, s->D, 0, "model.layers.%lld.input_layernorm.weight", (long long)l);
        ADD(2, s->H * dh, s->D, "model.layers.%lld.self_attn.q_proj.weight", (long long)l);
        ADD(2, s->KV * dh, s->D, "model.layers.%lld.self_attn.k_proj.weight", (long long)l);
        ADD(2, s->KV * dh, s->D, "model.layers.%lld.self_attn.v_proj.weight", (long long)l);
        ADD(2, s->D, s->H * dh, "model.layers.%lld.self_attn.o_proj.weight", (long long)l);
        ADD(1, s->D, 0, "model.layers.%lld.post_attention_layernorm.weight", (long long)l);
        ADD(2, s->I, s->D, "model.layers.%lld.mlp.gate_proj.weight", (long long)l);
        ADD(2, s->I, s->D, "model.layers.%lld.mlp.up_proj.weight", (long long)l);
        ADD(2, s->D, s->I, "model.layers.%lld.mlp.down_proj.weight", (long long)l);
    }
    ADD(1, s->D, 0, "model.norm.weight");
    if (!s->tied) ADD(2, s->V, s->D, "lm_head.weight");
#undef ADD
    return n;
}

static float *read_all(cf_st_reader *r, const cf_st_tensor *t)
{
    float *x = malloc(t->numel * sizeof *x);
    assert_non_null(x);
    assert_ok(cf_st_read_f32(r, t, x, t->numel));
    return x;
}

static void check_fixture(const char *name, llama_shape *out)
{
    char path[512];
    snprintf(path, sizeof path, "llama/%s/model/config.json", name);
    json_error_t err;
    json_t *cfg = json_load_file(data_path(path), 0, &err);
    if (!cfg) fail_msg("%s: %s", path, err.text);
    assert_string_equal(json_string_value(json_object_get(cfg, "model_type")), "llama");
    assert_string_equal(json_string_value(json_object_get(cfg, "hidden_act")), "silu");
    llama_shape s = {field(cfg, "hidden_size"), field(cfg, "num_attention_heads"),
                     field(cfg, "num_key_value_heads"), field(cfg, "num_hidden_layers"),
                     field(cfg, "intermediate_size"), field(cfg, "vocab_size"),
                     json_is_true(json_object_get(cfg, "tie_word_embeddings")),
                     json_number_value(json_object_get(cfg, "rope_theta")), "none"};
    json_t *scaling = json_object_get(cfg, "rope_scaling");
    if (json_is_object(scaling))
        snprintf(s.scaling, sizeof s.scaling, "%s",
                 json_string_value(json_object_get(scaling, "type")));
    assert_true(s.D % s.H == 0 && s.H % s.KV == 0 && (s.D / s.H) % 2 == 0);

    param p[64];
    const size_t n = expected_params(&s, p);
    cf_st_reader *model, *golden;
    snprintf(path, sizeof path, "llama/%s/model/model.safetensors", name);
    assert_ok(cf_st_open(data_path(path), &model));
    snprintf(path, sizeof path, "llama/%s/golden.safetensors", name);
    assert_ok(cf_st_open(data_path(path), &golden));
    assert_int_equal(cf_st_count(model), n);
    for (size_t i = 0; i < n; i++) {
        const cf_st_tensor *t;
        char grad[128];
        assert_ok(cf_st_expect(model, p[i].name, CF_ST_F32, p[i].ndim, p[i].shape, &t));
        snprintf(grad, sizeof grad, "grad.%.100s", p[i].name);
        const cf_st_tensor *g;
        assert_ok(cf_st_expect(golden, grad, CF_ST_F32, p[i].ndim, p[i].shape, &g));
        float *w = read_all(model, t), *gv = read_all(golden, g);
        double gsum = 0.0;
        for (uint64_t k = 0; k < t->numel; k++) {
            assert_true(isfinite(w[k]) && isfinite(gv[k]));
            gsum += fabs(gv[k]);
        }
        assert_true(gsum > 0.0); /* every parameter gets a gradient */
        free(w);
        free(gv);
    }

    /* ids (STEPS+1, B, T+1), logits (B, T, V), losses, prompt, generated */
    const cf_st_tensor *ids = cf_st_find(golden, "ids");
    assert_non_null(ids);
    assert_true(ids->dtype == CF_ST_I32 && ids->ndim == 3 && ids->shape[0] == STEPS + 1);
    const int64_t B = ids->shape[1], T = ids->shape[2] - 1;
    const int64_t logits_shape[] = {B, T, s.V}, losses_shape[] = {STEPS};
    assert_ok(cf_st_expect(golden, "logits", CF_ST_F32, 3, logits_shape, NULL));
    const cf_st_tensor *losses, *prompt = cf_st_find(golden, "prompt"),
                                *gen = cf_st_find(golden, "generated");
    assert_ok(cf_st_expect(golden, "losses", CF_ST_F64, 1, losses_shape, &losses));
    assert_true(prompt && prompt->dtype == CF_ST_I32 && prompt->ndim == 1);
    assert_true(gen && gen->dtype == CF_ST_I32 && gen->ndim == 1 && gen->shape[0] > 0);
    assert_int_equal(cf_st_count(golden), n + 5);
    int32_t *tok = malloc(ids->nbytes + prompt->nbytes + gen->nbytes);
    assert_non_null(tok);
    assert_ok(cf_st_read(golden, ids, tok, ids->nbytes));
    assert_ok(cf_st_read(golden, prompt, tok + ids->numel, prompt->nbytes));
    assert_ok(cf_st_read(golden, gen, tok + ids->numel + prompt->numel, gen->nbytes));
    for (uint64_t k = 0; k < ids->numel + prompt->numel + gen->numel; k++)
        assert_true(tok[k] >= 0 && tok[k] < s.V);
    free(tok);
    double l[STEPS];
    assert_ok(cf_st_read(golden, losses, l, sizeof l));
    for (int k = 0; k < STEPS; k++) assert_true(isfinite(l[k]) && l[k] > 0.0 && l[k] < 20.0);
    print_message("%-24s D=%lld H=%lld KV=%lld L=%lld V=%lld %s theta=%g scaling=%s B=%lld T=%lld\n",
                  name, (long long)s.D, (long long)s.H, (long long)s.KV, (long long)s.L,
                  (long long)s.V, s.tied ? "tied" : "untied", s.theta, s.scaling, (long long)B,
                  (long long)T);
    cf_st_close(model);
    cf_st_close(golden);
    json_decref(cfg);
    *out = s;
}

static void fixtures_parse_and_cover(void **state)
{
    (void)state;
    static const char *const names[] = {"a_mha_untied", "b_gqa2_tied_theta5e5", "c_mqa_linear",
                                        "d_tiny_dynamic_oclgrind"};
    bool ratio1 = false, ratio2 = false, mqa = false, tied = false, untied = false;
    bool theta4 = false, theta5 = false, linear = false, dynamic = false;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        llama_shape s;
        check_fixture(names[i], &s);
        ratio1 |= s.H == s.KV, ratio2 |= s.H == 2 * s.KV, mqa |= s.KV == 1 && s.H > 2;
        tied |= s.tied, untied |= !s.tied;
        theta4 |= s.theta == 10000.0, theta5 |= s.theta == 500000.0;
        linear |= !strcmp(s.scaling, "linear"), dynamic |= !strcmp(s.scaling, "dynamic");
    }
    assert_true(ratio1 && ratio2 && mqa && tied && untied && theta4 && theta5 && linear &&
                dynamic);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(fixtures_parse_and_cover)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
