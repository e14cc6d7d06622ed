/*
 * Test harness: runs a cmocka group once per device in CLFORMER_TEST_DEVICES
 * (';'-separated selectors; unset: every device found), and gives tests
 * device buffers guarded by canaries, deterministic random data, and
 * TESTING.md's comparisons as assertions.
 */
#ifndef CLFORMER_HARNESS_H
#define CLFORMER_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "buffer.h"
#include "context.h"
#include "ref_compare.h"
#include "ref_random.h"

/* The device under test (valid inside a test). */
cf_ctx *hctx(void);

/* True on a simulator (Oclgrind): tests should use their small shapes. */
bool harness_is_slow(void);

/* Runs `tests` once per device; returns the number of failures (non-zero if
 * no device could be opened: a missing device is a failure, not a skip). */
int harness_run_device_suite(const char *suite, const struct CMUnitTest *tests, size_t n);
#define HARNESS_DEVICE_MAIN(suite, tests)                                                     \
    int main(void) { return harness_run_device_suite(suite, tests, sizeof tests / sizeof tests[0]); }

/* Fails the current test with the runtime's message when `st` is not OK. */
#define assert_ok(st) harness_assert_ok((st), #st, __FILE__, __LINE__)
void harness_assert_ok(clformer_status st, const char *expr, const char *file, int line);

/* Fails the current test with a formatted message attributed to file:line. */
void harness_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Deterministic random data: ref_rng_new, ref_fill_uniform (ref_random.h). */

/* --- device tensors with guard regions ------------------------------------ */
/* `n` elements at element offset `off` of a buffer; the `off` elements before
 * and HARNESS_CANARY elements after hold a known pattern that must survive. */
#define HARNESS_CANARY 127
typedef struct {
    cl_mem mem;
    size_t off;
    size_t n;
} hbuf;
hbuf hbuf_zeros(size_t n, size_t off);
hbuf hbuf_from_f32(const float *host, size_t n, size_t off);
hbuf hbuf_from_i32(const int32_t *host, size_t n, size_t off);
void hbuf_read(hbuf b, void *host); /* n elements */
/* Asserts the guard regions are untouched. */
#define hbuf_check_canary(b) harness_check_canary((b), #b, __FILE__, __LINE__)
void harness_check_canary(hbuf b, const char *name, const char *file, int line);
void hbuf_free(hbuf b);

/* --- comparisons as assertions (print the worst element on failure) ------- */
#define assert_forward_close(y, ref, n) harness_assert_cmp(ref_compare_forward((y), (ref), (n)), #y, __FILE__, __LINE__)
#define assert_grad_close(g, ref, n) harness_assert_cmp(ref_compare_grad((g), (ref), (n)), #g, __FILE__, __LINE__)
#define assert_gemm_close(c, ref, bound, n) harness_assert_cmp(ref_compare_gemm((c), (ref), (bound), (n)), #c, __FILE__, __LINE__)
void harness_assert_cmp(ref_cmp r, const char *what, const char *file, int line);

/* Small allocation helpers that fail the test on out-of-memory. */
void *hmalloc(size_t bytes);
double *to_double(const float *x, size_t n); /* malloc'd copy */

#endif
