/* `clformer devices --json` and `clformer check --json` print one JSON
 * document that parses and holds what the table shows (jansson writes it,
 * so a NaN error cannot make it invalid: test_cli_json checks that part). */
#include "harness.h"

#include <jansson.h>
#include <string.h>

static json_t *run_json(char *out, size_t cap, const char *const *args)
{
    /* stderr apart (and copied to ours, for check_log.cmake): stdout is the JSON */
    static char err_text[1 << 14];
    const harness_cmd cmd = {out, cap, err_text, sizeof err_text, NULL, NULL, true};
    int rc = harness_run_clformer_argv(&cmd, args);
    if (rc != 0) fail_msg("clformer %s exited with %d:\n%s\n%s", args[0], rc, out, err_text);
    json_error_t err;
    json_t *doc = json_loads(out, 0, &err);
    if (!doc) fail_msg("clformer %s --json printed no JSON (%s):\n%s", args[0], err.text, out);
    return doc;
}

static void devices_json(void **state)
{
    (void)state;
    static char out[1 << 16];
    const char *const args[] = {"devices", "--json", NULL};
    json_t *doc = run_json(out, sizeof out, args);
    json_t *devs = json_object_get(doc, "devices");
    assert_true(json_is_array(devs) && json_array_size(devs) > 0);
    size_t selected = 0, i;
    json_t *d;
    json_array_foreach(devs, i, d) {
        assert_true(json_is_string(json_object_get(d, "selector")));
        assert_true(json_is_string(json_object_get(d, "name")));
        assert_true(json_is_integer(json_object_get(d, "compute_units")));
        assert_true(json_is_boolean(json_object_get(d, "fp64")));
        assert_true(json_is_boolean(json_object_get(d, "fp16"))); /* cl_khr_fp16 */
        assert_true(json_is_boolean(json_object_get(d, "bf16"))); /* a bfloat16 extension */
        selected += json_is_true(json_object_get(d, "selected"));
    }
    assert_int_equal(selected, 1); /* the device under test, through CLFORMER_DEVICE */
    json_decref(doc);
}

static void check_json(void **state)
{
    (void)state;
    static char out[1 << 16];
    const char *const args[] = {"check", "--json", "--quick", "--layer", "layernorm", NULL};
    json_t *doc = run_json(out, sizeof out, args);
    json_t *results = json_object_get(doc, "results");
    assert_true(json_is_array(results));
    /* the same results (forward, backward, backward accumulating per case, a
     * repeat, argument errors) in fp32, bf16 and fp16 (the default: all) */
    const size_t n = json_array_size(results);
    assert_true(n >= 9 && n % 3 == 0);
    size_t i, per[3] = {0};
    json_t *r;
    json_array_foreach(results, i, r) {
        assert_non_null(strstr(json_string_value(json_object_get(r, "op")), "layernorm_"));
        assert_true(json_is_true(json_object_get(r, "pass")));
        assert_true(json_is_number(json_object_get(r, "max_abs_err")));
        assert_true(json_is_string(json_object_get(r, "rule")));
        const char *p = json_string_value(json_object_get(r, "precision"));
        assert_non_null(p);
        clformer_precision prec;
        assert_ok(clformer_precision_parse(p, &prec));
        per[prec]++;
    }
    assert_int_equal(per[CLFORMER_FP32], n / 3);
    assert_int_equal(per[CLFORMER_BF16], n / 3);
    assert_int_equal(per[CLFORMER_FP16], n / 3);
    json_decref(doc);

    /* one precision alone */
    const char *const bf16[] = {"check", "--json", "--quick", "--layer", "layernorm",
                                "--precision", "bf16", NULL};
    doc = run_json(out, sizeof out, bf16);
    results = json_object_get(doc, "results");
    assert_int_equal(json_array_size(results), n / 3);
    json_array_foreach(results, i, r)
        assert_string_equal(json_string_value(json_object_get(r, "precision")), "bf16");
    json_decref(doc);
}

/* The table names the device in full, however long its name (PoCL's
 * include the CPU's: "pthread-skylake-avx512-AMD EPYC 9R14 96-Core..."). */
static void check_table_names_the_whole_device(void **state)
{
    (void)state;
    static char out[1 << 16], err_text[1 << 14];
    const char *const args[] = {"check", "--quick", "--layer", "layernorm", NULL};
    const harness_cmd cmd = {out, sizeof out, err_text, sizeof err_text, NULL, NULL, true};
    int rc = harness_run_clformer_argv(&cmd, args);
    if (rc != 0) fail_msg("clformer check exited with %d:\n%s\n%s", rc, out, err_text);
    char line[512];
    snprintf(line, sizeof line, "device: %s (", hctx()->info.name);
    if (!strstr(out, line)) fail_msg("no line '%s...' in:\n%s", line, out);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(check_table_names_the_whole_device),
    cmocka_unit_test(devices_json),
    cmocka_unit_test(check_json),
};
HARNESS_DEVICE_MAIN("clformer --json", tests)
