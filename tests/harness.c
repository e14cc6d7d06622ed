/* The per-device test runner and the helpers of harness.h. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cf_ctx *current;
static const uint32_t CANARY_BITS = 0x7fc0dead; /* a NaN payload nothing computes */

cf_ctx *hctx(void) { return current; }

bool harness_is_slow(void) { return current && current->info.simulator; }

void harness_assert_ok(clformer_status st, const char *expr, const char *file, int line)
{
    if (st != CLFORMER_OK)
        harness_fail_at(file, line, "%s failed: %s: %s", expr, clformer_status_name(st),
                  clformer_last_error());
}

void harness_fail_at(const char *file, int line, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s\n", msg);
    _fail(file, line);
}

static int run_on(const char *selector, const char *suite, const struct CMUnitTest *tests,
                  size_t n)
{
    clformer_status st = cf_context_create(selector, false, &current);
    if (st != CLFORMER_OK) {
        fprintf(stderr, "[  ERROR   ] cannot open device '%s': %s\n", selector,
                clformer_last_error());
        return 1;
    }
    char name[512];
    snprintf(name, sizeof name, "%s on %s (%s)", suite, current->info.name, selector);
    int failures = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    clformer_context_free(current);
    current = NULL;
    return failures;
}

int harness_run_device_suite(const char *suite, const struct CMUnitTest *tests, size_t n)
{
    const char *env = getenv("CLFORMER_TEST_DEVICES");
    int failures = 0, devices = 0;
    const char *filter = getenv("CLFORMER_TEST_FILTER"); /* e.g. "gemm_*" */
    if (filter && *filter) cmocka_set_test_filter(filter);
    if (env && *env) {
        char *list = strdup(env), *save = NULL;
        for (char *sel = strtok_r(list, ";", &save); sel; sel = strtok_r(NULL, ";", &save)) {
            failures += run_on(sel, suite, tests, n);
            devices++;
        }
        free(list);
    } else {
        clformer_device_info *devs = NULL;
        size_t count = 0;
        if (clformer_list_devices(&devs, &count) != CLFORMER_OK) count = 0;
        for (size_t i = 0; i < count; i++, devices++)
            failures += run_on(devs[i].selector, suite, tests, n);
        free(devs);
    }
    if (devices == 0) {
        fprintf(stderr, "[  ERROR   ] no OpenCL device to test on (CLFORMER_TEST_DEVICES=%s)\n",
                env ? env : "(unset)");
        return 1;
    }
    return failures;
}

void *hmalloc(size_t bytes)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) fail_msg("out of host memory (%zu bytes)", bytes);
    return p;
}

double *to_double(const float *x, size_t n)
{
    double *d = hmalloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static hbuf hbuf_alloc(size_t n, size_t off)
{
    hbuf b = {NULL, off, n};
    assert_ok(cf_buffer_alloc(current, off + n + HARNESS_CANARY, "test tensor", &b.mem));
    assert_ok(cf_fill_u32(current, b.mem, 0, off, CANARY_BITS));
    assert_ok(cf_fill_u32(current, b.mem, off + n, HARNESS_CANARY, CANARY_BITS));
    return b;
}

hbuf hbuf_zeros(size_t n, size_t off)
{
    hbuf b = hbuf_alloc(n, off);
    assert_ok(cf_fill(current, b.mem, off, n, 0.0f));
    return b;
}

hbuf hbuf_from_f32(const float *host, size_t n, size_t off)
{
    hbuf b = hbuf_alloc(n, off);
    assert_ok(cf_upload(current, b.mem, off, host, n));
    return b;
}

hbuf hbuf_from_i32(const int32_t *host, size_t n, size_t off)
{
    hbuf b = hbuf_alloc(n, off);
    assert_ok(cf_upload(current, b.mem, off, host, n));
    return b;
}

void hbuf_read(hbuf b, void *host) { assert_ok(cf_download(current, b.mem, b.off, host, b.n)); }

void harness_check_canary(hbuf b, const char *name, const char *file, int line)
{
    size_t total = b.off + b.n + HARNESS_CANARY;
    uint32_t *all = hmalloc(total * 4);
    assert_ok(cf_download(current, b.mem, 0, all, total));
    for (size_t i = 0; i < total; i++) {
        if (i >= b.off && i < b.off + b.n) continue;
        if (all[i] != CANARY_BITS) {
            long rel = i < b.off ? (long)i - (long)b.off : (long)(i - b.off - b.n);
            free(all);
            harness_fail_at(file, line, "%s: guard element %s%ld %s the tensor was overwritten", name,
                      i < b.off ? "" : "+", rel, i < b.off ? "before" : "after");
        }
    }
    free(all);
}

void hbuf_free(hbuf b) { cf_buffer_free(current, b.mem); }

void harness_assert_cmp(ref_cmp r, const char *what, const char *file, int line)
{
    if (r.pass) return;
    harness_fail_at(file, line,
              "%s: %s: worst element %zu = %.9g, reference %.9g, allowed |err| <= %.3g; "
              "max abs err %.3g, max rel err %.3g, nmse %.3g",
              what, r.why, r.worst, r.worst_value, r.worst_ref, r.worst_bound, r.max_abs_err,
              r.max_rel_err, r.nmse);
}
