/* The GEMM provider rule and CLFORMER_GEMM's words, over made-up devices
 * (clformer_gemm_provider_for is pure: no OpenCL). The host provider exists
 * only in builds with OpenBLAS, so the expectations follow the build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "clformer.h"

#ifdef CLFORMER_TEST_HAVE_OPENBLAS
static const bool have_host = true;
#else
static const bool have_host = false;
#endif

static clformer_device_info device(clformer_device_type type, bool native, bool simulator)
{
    clformer_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", simulator ? "Oclgrind Simulator" : "some device");
    d.type = type;
    d.native_kernels = native;
    d.simulator = simulator;
    return d;
}

static clformer_gemm_provider choose_ok(clformer_device_info d, const char *choice)
{
    clformer_gemm_provider p = (clformer_gemm_provider)-1;
    assert_int_equal(clformer_gemm_provider_for(&d, choice, &p), CLFORMER_OK);
    return p;
}

static void rule_host_only_on_cpu_devices_with_native_kernels(void **state)
{
    (void)state;
    const clformer_gemm_provider host_if_built =
        have_host ? CLFORMER_GEMM_HOST : CLFORMER_GEMM_CLBLAST;
    for (int i = 0; i < 3; i++) { /* NULL, "" and "auto" all mean the rule */
        const char *choice = i == 0 ? NULL : i == 1 ? "" : "AUTO";
        assert_int_equal(choose_ok(device(CLFORMER_DEVICE_CPU, true, false), choice),
                         host_if_built);
        assert_int_equal(choose_ok(device(CLFORMER_DEVICE_CPU, false, false), choice),
                         CLFORMER_GEMM_CLBLAST);
        assert_int_equal(choose_ok(device(CLFORMER_DEVICE_GPU, true, false), choice),
                         CLFORMER_GEMM_CLBLAST);
        assert_int_equal(choose_ok(device(CLFORMER_DEVICE_CPU, true, true), choice),
                         CLFORMER_GEMM_CLBLAST);
    }
}

static void clblast_is_always_allowed(void **state)
{
    (void)state;
    assert_int_equal(choose_ok(device(CLFORMER_DEVICE_CPU, true, false), "clblast"),
                     CLFORMER_GEMM_CLBLAST);
    assert_int_equal(choose_ok(device(CLFORMER_DEVICE_GPU, false, false), "CLBlast"),
                     CLFORMER_GEMM_CLBLAST);
}

static void host_where_it_cannot_run_is_an_error_that_says_why(void **state)
{
    (void)state;
    clformer_gemm_provider p;
    clformer_device_info gpu = device(CLFORMER_DEVICE_GPU, false, false);
    assert_int_equal(clformer_gemm_provider_for(&gpu, "host", &p), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), have_host ? "native kernels" : "OpenBLAS"));
    clformer_device_info sim = device(CLFORMER_DEVICE_CPU, true, true);
    assert_int_equal(clformer_gemm_provider_for(&sim, "host", &p), CLFORMER_ERR_INVALID_ARGUMENT);
    if (have_host)
        assert_int_equal(choose_ok(device(CLFORMER_DEVICE_CPU, true, false), "host"),
                         CLFORMER_GEMM_HOST);
}

static void unknown_word_is_an_error_naming_the_choices(void **state)
{
    (void)state;
    clformer_gemm_provider p;
    clformer_device_info cpu = device(CLFORMER_DEVICE_CPU, true, false);
    assert_int_equal(clformer_gemm_provider_for(&cpu, "openblas", &p),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    const char *msg = clformer_last_error();
    assert_non_null(strstr(msg, "'openblas'"));
    assert_non_null(strstr(msg, "clblast, host, tiled or auto"));
    assert_string_equal(clformer_gemm_provider_name(CLFORMER_GEMM_HOST), "host");
    assert_string_equal(clformer_gemm_provider_name(CLFORMER_GEMM_CLBLAST), "clblast");
    assert_string_equal(clformer_gemm_provider_name(CLFORMER_GEMM_TILED), "tiled");
}

/* clformer's own kernel: asked for only, on any device whose work-groups
 * hold its smallest tile set's 64 items; never the rule's choice. */
static void tiled_when_asked_where_groups_hold_64_items(void **state)
{
    (void)state;
    for (int t = 0; t < 2; t++) {
        clformer_device_info d =
            device(t ? CLFORMER_DEVICE_GPU : CLFORMER_DEVICE_CPU, true, false);
        d.max_work_group_size = 64;
        assert_int_equal(choose_ok(d, "TILED"), CLFORMER_GEMM_TILED);
        assert_int_not_equal(choose_ok(d, "auto"), CLFORMER_GEMM_TILED);
        d.max_work_group_size = 32;
        clformer_gemm_provider p;
        assert_int_equal(clformer_gemm_provider_for(&d, "tiled", &p),
                         CLFORMER_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(clformer_last_error(), "64 items"));
        assert_non_null(strstr(clformer_last_error(), "allows 32"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rule_host_only_on_cpu_devices_with_native_kernels),
        cmocka_unit_test(clblast_is_always_allowed),
        cmocka_unit_test(host_where_it_cannot_run_is_an_error_that_says_why),
        cmocka_unit_test(unknown_word_is_an_error_naming_the_choices),
        cmocka_unit_test(tiled_when_asked_where_groups_hold_64_items),
    };
    return cmocka_run_group_tests_name("gemm_provider", tests, NULL, NULL);
}
