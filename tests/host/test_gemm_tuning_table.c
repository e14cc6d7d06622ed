/* Which devices the tuned CLBlast table applies to, and the parameter
 * parser, over made-up device records (no OpenCL device needed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "gemm_tuning.h"

static clformer_device_info dev(const char *platform, const char *vendor, const char *name,
                                const char *driver)
{
    clformer_device_info i;
    memset(&i, 0, sizeof i);
    snprintf(i.platform, sizeof i.platform, "%s", platform);
    snprintf(i.vendor, sizeof i.vendor, "%s", vendor);
    snprintf(i.name, sizeof i.name, "%s", name);
    snprintf(i.driver_version, sizeof i.driver_version, "%s", driver);
    return i;
}

static const char *pocl = "Portable Computing Language";

static void measured_device_matches(void **state)
{
    (void)state;
    clformer_device_info d = dev(pocl, "AuthenticAMD", "pthread-skylake-avx512-AMD EPYC",
                                 "3.1+debian");
    const cf_gemm_tuning *t = cf_gemm_tuning_find(&d);
    assert_non_null(t);
    assert_true(t->n_sets > 0);
}

/* Anything that was not measured keeps CLBlast's own parameters. */
static void other_devices_do_not_match(void **state)
{
    (void)state;
    const clformer_device_info others[] = {
        /* PoCL's single-threaded device, other instruction sets, other CPUs */
        dev(pocl, "AuthenticAMD", "basic-skylake-avx512-AMD EPYC", "3.1+debian"),
        dev(pocl, "AuthenticAMD", "pthread-znver3-AMD EPYC 7763", "3.1+debian"),
        dev(pocl, "AuthenticAMD", "pthread-haswell-AMD EPYC", "3.1+debian"),
        dev(pocl, "GenuineIntel", "pthread-skylake-avx512-Intel(R) Xeon(R)", "3.1+debian"),
        /* another PoCL major version compiles the kernels differently */
        dev(pocl, "AuthenticAMD", "pthread-skylake-avx512-AMD EPYC", "5.0"),
        /* GPUs, simulators, other CPU drivers */
        dev("NVIDIA CUDA", "NVIDIA Corporation", "NVIDIA GeForce RTX 3060", "535.54"),
        dev("AMD Accelerated Parallel Processing", "Advanced Micro Devices, Inc.", "gfx1100",
            "3581.0"),
        dev("Oclgrind", "University of Bristol", "Oclgrind Simulator", "Oclgrind 21.10"),
        dev("Intel(R) OpenCL", "Intel(R) Corporation", "AMD EPYC pthread-skylake-avx512-",
            "2023.16"),
    };
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (cf_gemm_tuning_find(&others[i]))
            fail_msg("tuning applied to %s | %s | %s", others[i].platform, others[i].name,
                     others[i].driver_version);
}

/* Every table entry is narrow (all keys set) and its sets parse. */
static void table_entries_are_complete(void **state)
{
    (void)state;
    size_t n = 0;
    const cf_gemm_tuning *t = cf_gemm_tuning_table(&n);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].label);
        assert_non_null(t[i].platform);
        assert_non_null(t[i].vendor);
        assert_non_null(t[i].device_prefix);
        assert_non_null(t[i].driver_prefix);
        for (size_t s = 0; s < t[i].n_sets; s++) {
            char buf[1024];
            const char *names[CF_CLBLAST_MAX_PARAMS];
            size_t values[CF_CLBLAST_MAX_PARAMS], count = 0;
            if (cf_clblast_params_parse(t[i].sets[s].params, buf, sizeof buf, names, values,
                                        &count) != CLFORMER_OK)
                fail_msg("%s %s: %s", t[i].label, t[i].sets[s].kernel, clformer_last_error());
        }
    }
}

static void parser_reads_names_and_values(void **state)
{
    (void)state;
    char buf[256];
    const char *names[CF_CLBLAST_MAX_PARAMS];
    size_t values[CF_CLBLAST_MAX_PARAMS], n = 0;
    assert_int_equal(cf_clblast_params_parse("  MWG=64\tVWM=4 XGEMM_MIN_INDIRECT_SIZE=512\n", buf,
                                             sizeof buf, names, values, &n),
                     CLFORMER_OK);
    assert_int_equal(n, 3);
    assert_string_equal(names[0], "MWG");
    assert_int_equal(values[0], 64);
    assert_string_equal(names[1], "VWM");
    assert_int_equal(values[1], 4);
    assert_string_equal(names[2], "XGEMM_MIN_INDIRECT_SIZE");
    assert_int_equal(values[2], 512);
}

static void parser_rejects_malformed_sets(void **state)
{
    (void)state;
    static const char *bad[] = {"",          "   ",       "MWG",         "MWG=",
                                "=64",       "MWG=-1",    "MWG=6x4",     "mwg=64",
                                "MWG=64 VWM", "MWG = 64", "MWG=12345678901"};
    char buf[256];
    const char *names[CF_CLBLAST_MAX_PARAMS];
    size_t values[CF_CLBLAST_MAX_PARAMS], n = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (cf_clblast_params_parse(bad[i], buf, sizeof buf, names, values, &n) == CLFORMER_OK)
            fail_msg("accepted '%s'", bad[i]);
    /* too long for the buffer, and too many parameters */
    char many[1024] = "";
    for (int i = 0; i < CF_CLBLAST_MAX_PARAMS + 1; i++) strcat(many, "A=1 ");
    assert_int_not_equal(cf_clblast_params_parse(many, buf, 8, names, values, &n), CLFORMER_OK);
    char big[1024];
    assert_int_not_equal(cf_clblast_params_parse(many, big, sizeof big, names, values, &n),
                         CLFORMER_OK);
    assert_non_null(strstr(clformer_last_error(), "more than"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(measured_device_matches),
        cmocka_unit_test(other_devices_do_not_match),
        cmocka_unit_test(table_entries_are_complete),
        cmocka_unit_test(parser_reads_names_and_values),
        cmocka_unit_test(parser_rejects_malformed_sets),
    };
    return cmocka_run_group_tests_name("gemm tuning table", tests, NULL, NULL);
}
