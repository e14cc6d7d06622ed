/* The GEMM providers: the gemm op's check (runtime/check/conf_gemm.c: odd
 * sizes, all transposes, offsets, alpha/beta, batches, bad calls) and the
 * linear layer's, whose products these are, under the provider CLFORMER_GEMM
 * names (registered once per provider: CLFORMER_GEMM=clblast, =tiled and
 * =host, see tests/CMakeLists.txt; test_ops runs both with the device's own
 * choice);
 * and the GEMM timing of the check API. */
#include "harness.h"
#include "clformer_check.h"

#include <stdlib.h>
#include <string.h>

/* The context uses the provider CLFORMER_GEMM names: otherwise the host
 * registration of this test would silently check CLBlast again. */
static void gemm_provider_is_the_one_asked_for(void **state)
{
    (void)state;
    const char *want = getenv("CLFORMER_GEMM");
    clformer_gemm_provider expected;
    assert_ok(clformer_gemm_provider_for(&hctx()->info, want, &expected));
    assert_int_equal(clformer_context_gemm_provider(hctx()), expected);
    if (want && *want && strcmp(want, "auto") != 0)
        assert_string_equal(clformer_gemm_provider_name(expected), want);
    print_message("gemm provider: %s\n", clformer_gemm_provider_name(expected));
}

/* The check of the op `name` of the descriptor table, under this provider. */
static void op_conformance(const char *name)
{
    for (size_t i = 0; conf_ops[i]; i++)
        if (!strcmp(conf_ops[i]->name, name)) {
            harness_assert_conformance(conf_ops[i]->check, name, __FILE__, __LINE__);
            return;
        }
    fail_msg("no %s op in the descriptor table", name);
}

static void gemm_conformance_under_this_provider(void **state)
{
    (void)state;
    op_conformance("gemm");
}

static void linear_conformance_under_this_provider(void **state)
{
    (void)state;
    op_conformance("linear");
}

/* clformer_check_gemm_time (what tools/tuning/gemm_bench reports): a time
 * and a rate for a single and a batched product, and bad shapes refused. */
static void gemm_timing_through_the_check_api(void **state)
{
    (void)state;
    const clformer_gemm_shape shapes[] = {{false, true, 17, 9, 33, 1}, {true, false, 8, 16, 4, 3}};
    for (size_t i = 0; i < 2; i++) {
        double ms = -1, gflops = -1;
        assert_ok(clformer_check_gemm_time(hctx(), &shapes[i], 0, &ms, &gflops));
        if (!(ms > 0 && ms < 1e6) || !(gflops > 0 && gflops < 1e6))
            fail_msg("shape %zu: %g ms, %g GFLOP/s", i, ms, gflops);
    }
    const clformer_gemm_shape empty = {false, false, 4, 0, 4, 1};
    double ms, gflops;
    assert_int_equal(clformer_check_gemm_time(hctx(), &empty, 0, &ms, &gflops),
                     CLFORMER_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clformer_last_error(), "batch >= 1"));
    assert_int_equal(clformer_check_gemm_time(hctx(), NULL, 0, &ms, &gflops),
                     CLFORMER_ERR_INVALID_ARGUMENT);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(gemm_provider_is_the_one_asked_for),
    cmocka_unit_test(gemm_conformance_under_this_provider),
    cmocka_unit_test(linear_conformance_under_this_provider),
    cmocka_unit_test(gemm_timing_through_the_check_api),
};
HARNESS_DEVICE_MAIN("gemm", tests)
