/* clformer_context_params: the defaults, and the environment variables that
 * clformer_context_params_from_env (the CLI's settings) reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "clformer.h"

static const char *const variables[] = {"CLFORMER_DEVICE",      "CLFORMER_CACHE",
                                        "CLFORMER_CACHE_DIR",   "CLFORMER_KERNEL_DIR",
                                        "CLFORMER_GEMM_TUNING", "CLFORMER_LOG",
                                        "CLFORMER_ATTENTION",   "CLFORMER_PROFILE"};

static void clear_environment(void)
{
    for (size_t i = 0; i < sizeof variables / sizeof *variables; i++) unsetenv(variables[i]);
}

static void defaults_need_no_environment(void **state)
{
    (void)state;
    clformer_context_params p;
    memset(&p, 0xAB, sizeof p);
    clformer_context_params_default(&p);
    assert_null(p.device);
    assert_true(p.cache);
    assert_null(p.cache_dir);
    assert_null(p.kernel_dir);
    assert_null(p.gemm_tuning);
    assert_null(p.attention);
    assert_false(p.profiling);
    assert_int_equal(p.log_level, CLFORMER_LOG_WARN);
    assert_null(p.log_callback);
    assert_null(p.log_user);

    clear_environment();
    clformer_context_params q;
    assert_int_equal(clformer_context_params_from_env(&q), CLFORMER_OK);
    assert_memory_equal(&p, &q, sizeof p);
}

static void every_variable_is_read(void **state)
{
    (void)state;
    clear_environment();
    setenv("CLFORMER_DEVICE", "pocl:pthread", 1);
    setenv("CLFORMER_CACHE", "off", 1);
    setenv("CLFORMER_CACHE_DIR", "/tmp/cache-here", 1);
    setenv("CLFORMER_KERNEL_DIR", "/src/cl", 1);
    setenv("CLFORMER_GEMM_TUNING", "0", 1);
    setenv("CLFORMER_LOG", "DEBUG", 1);
    setenv("CLFORMER_ATTENTION", "fused", 1);
    setenv("CLFORMER_PROFILE", "gpu-layouts", 1);
    clformer_context_params p;
    assert_int_equal(clformer_context_params_from_env(&p), CLFORMER_OK);
    assert_string_equal(p.device, "pocl:pthread");
    assert_false(p.cache);
    assert_string_equal(p.cache_dir, "/tmp/cache-here");
    assert_string_equal(p.kernel_dir, "/src/cl");
    assert_string_equal(p.gemm_tuning, "0");
    assert_int_equal(p.log_level, CLFORMER_LOG_DEBUG);
    assert_string_equal(p.attention, "fused");
    assert_string_equal(p.profile, "gpu-layouts");
    assert_int_equal(p.size, sizeof p);

    setenv("CLFORMER_CACHE", "1", 1);
    setenv("CLFORMER_LOG", "error", 1);
    setenv("CLFORMER_DEVICE", "", 1); /* empty: as if unset */
    assert_int_equal(clformer_context_params_from_env(&p), CLFORMER_OK);
    assert_true(p.cache);
    assert_int_equal(p.log_level, CLFORMER_LOG_ERROR);
    assert_null(p.device);
    clear_environment();
}

/* A value that means nothing is an error naming the variable and the choices. */
static void unreadable_values_are_errors(void **state)
{
    (void)state;
    clear_environment();
    clformer_context_params p;
    setenv("CLFORMER_LOG", "verbose", 1);
    assert_int_equal(clformer_context_params_from_env(&p), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "CLFORMER_LOG='verbose'"));
    assert_non_null(strstr(clformer_last_error(), "debug"));
    unsetenv("CLFORMER_LOG");
    setenv("CLFORMER_CACHE", "maybe", 1);
    assert_int_equal(clformer_context_params_from_env(&p), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "CLFORMER_CACHE='maybe'"));
    clear_environment();
}

/* The size that _default() sets is checked before anything else: a struct
 * from another clformer.h (or filled by hand) is refused with the fix. */
static void a_wrong_size_is_refused(void **state)
{
    (void)state;
    clformer_context_params p;
    clformer_context_params_default(&p);
    p.size = sizeof p - 8;
    clformer_context *ctx = NULL;
    assert_int_equal(clformer_context_create_with_params(&p, &ctx),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_non_null(strstr(clformer_last_error(), "clformer_context_params.size"));
    assert_non_null(strstr(clformer_last_error(), "clformer_context_params_default()"));
    /* the model config carries its size too (checked by validate, which
     * model creation and checkpoint loading run) */
    clformer_config c;
    clformer_config_default(&c);
    c.src_vocab = c.tgt_vocab = 10; /* the defaults leave them to the data */
    assert_int_equal(clformer_config_validate(&c), CLFORMER_OK);
    c.size = 0;
    assert_int_equal(clformer_config_validate(&c), CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "clformer_config_default()"));
    /* clformer_context_from_cl: every OpenCL object is needed */
    assert_int_equal(clformer_context_from_cl(NULL, NULL, NULL, NULL, &ctx),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "clformer_context_from_cl"));
    assert_null(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_need_no_environment),
        cmocka_unit_test(every_variable_is_read),
        cmocka_unit_test(unreadable_values_are_errors),
        cmocka_unit_test(a_wrong_size_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
