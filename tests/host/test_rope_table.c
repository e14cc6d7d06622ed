/*
 * The rotary table against transformers' own (runtime/ops/ops_rope.c,
 * tests/data/llama/rope_tables.json, written by
 * tools/reference/llama_reference.py rope): for rope_theta 10,000 and
 * 500,000, linear and dynamic scaling, and dynamic past its
 * max_position_embeddings, cf_rope_frequencies gives transformers' fp32
 * inv_freq bit for bit and cf_rope_table its cosines and sines to one fp32
 * rounding (transformers' cos is fp32 arithmetic, clformer's the exact value
 * rounded), at positions up to 4,099 where one ulp of an angle is 2.4e-4.
 * And cf_rope_check_config's errors.
 */
#include "data_util.h"

#include "ops.h"

#include <jansson.h>
#include <math.h>

static cf_rope_config config_of(json_t *c, size_t *seq_len)
{
    const char *scaling = json_string_value(json_object_get(c, "scaling"));
    cf_rope_config cfg = {
        (size_t)json_integer_value(json_object_get(c, "head_size")),
        json_number_value(json_object_get(c, "rope_theta")),
        !strcmp(scaling, "linear")    ? CF_ROPE_LINEAR
        : !strcmp(scaling, "dynamic") ? CF_ROPE_DYNAMIC
                                      : CF_ROPE_PLAIN,
        json_number_value(json_object_get(c, "factor")),
        (size_t)json_integer_value(json_object_get(c, "max_position_embeddings"))};
    *seq_len = (size_t)json_integer_value(json_object_get(c, "seq_len"));
    return cfg;
}

static void matches_transformers(void **state)
{
    (void)state;
    json_error_t err;
    json_t *root = json_load_file(data_path("llama/rope_tables.json"), 0, &err);
    if (!root) fail_msg("rope_tables.json: %s", err.text);
    json_t *cases = json_object_get(root, "cases");
    assert_true(json_array_size(cases) >= 6);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        size_t seq_len;
        const cf_rope_config cfg = config_of(c, &seq_len);
        assert_ok(cf_rope_check_config(&cfg));
        const size_t half = cfg.dh / 2;
        float inv[256];
        assert_true(half <= 256);
        cf_rope_frequencies(inv, &cfg, seq_len);
        json_t *want_inv = json_object_get(c, "inv_freq");
        assert_int_equal(json_array_size(want_inv), half);
        for (size_t k = 0; k < half; k++) {
            const float w = (float)json_number_value(json_array_get(want_inv, k));
            if (inv[k] != w) fail_msg("%s: inv_freq[%zu] %.9g, transformers %.9g", name, k, inv[k], w);
        }
        json_t *positions = json_object_get(c, "positions");
        size_t rows = 0;
        for (size_t k = 0; k < json_array_size(positions); k++) {
            const size_t p = (size_t)json_integer_value(json_array_get(positions, k));
            if (p + 1 > rows) rows = p + 1;
        }
        float *table = malloc(rows * cfg.dh * sizeof *table);
        assert_non_null(table);
        assert_ok(cf_rope_table(table, rows, &cfg, seq_len));
        double worst = 0.0;
        for (size_t k = 0; k < json_array_size(positions); k++) {
            const size_t p = (size_t)json_integer_value(json_array_get(positions, k));
            json_t *cs = json_array_get(json_object_get(c, "cos"), k),
                   *sn = json_array_get(json_object_get(c, "sin"), k);
            for (size_t j = 0; j < half; j++) {
                const double dc = fabs(table[p * cfg.dh + j] - json_number_value(json_array_get(cs, j)));
                const double ds = fabs(table[p * cfg.dh + half + j] -
                                       json_number_value(json_array_get(sn, j)));
                if (dc > worst) worst = dc;
                if (ds > worst) worst = ds;
                if (dc > 0x1p-23 || ds > 0x1p-23)
                    fail_msg("%s: position %zu pair %zu: cos %.9g sin %.9g, transformers %.9g %.9g",
                             name, p, j, table[p * cfg.dh + j], table[p * cfg.dh + half + j],
                             json_number_value(json_array_get(cs, j)),
                             json_number_value(json_array_get(sn, j)));
            }
        }
        print_message("%-20s max |table - transformers| %.3g\n", name, worst);
        free(table);
    }
    json_decref(root);
}

static void config_errors(void **state)
{
    (void)state;
    cf_rope_config c = {7, 10000.0, CF_ROPE_PLAIN, 0, 0};
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "head size 7", "even");
    c.dh = 0;
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "head size 0");
    c = (cf_rope_config){8, 0.0, CF_ROPE_PLAIN, 0, 0};
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "rope_theta 0");
    c.theta = INFINITY;
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "rope_theta inf");
    c.theta = 1e300; /* finite, but not as an fp32 base */
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "rope_theta");
    c = (cf_rope_config){8, 10000.0, CF_ROPE_LINEAR, 1.0, 0};
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "factor 1", "> 1");
    c = (cf_rope_config){8, 10000.0, CF_ROPE_DYNAMIC, 2.0, 0};
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT,
                 "max_position_embeddings");
    c = (cf_rope_config){2, 10000.0, CF_ROPE_DYNAMIC, 2.0, 16};
    assert_error(cf_rope_check_config(&c), CLFORMER_ERR_INVALID_ARGUMENT, "at least 4");
    float table[8];
    c = (cf_rope_config){3, 10000.0, CF_ROPE_PLAIN, 0, 0};
    assert_error(cf_rope_table(table, 1, &c, 1), CLFORMER_ERR_INVALID_ARGUMENT, "head size 3");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_transformers),
        cmocka_unit_test(config_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
