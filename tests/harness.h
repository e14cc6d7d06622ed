/*
 * Test harness: runs a cmocka group once per device in CLFORMER_TEST_DEVICES
 * (';'-separated selectors; unset: every device found), and gives tests
 * device buffers guarded by canaries, deterministic random data, and
 * docs/TESTING.md's comparisons as assertions.
 */
#ifndef CLFORMER_HARNESS_H
#define CLFORMER_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "buffer.h"
#include "conformance.h"
#include "context.h"
#include "ref_compare.h"
#include "ref_random.h"

/* The device under test (valid inside a test). */
cf_ctx *hctx(void);

/* True on a simulator (Oclgrind): tests should use their small shapes. */
bool harness_is_slow(void);

/* The small model the device tests train: d_model 32, 2 heads, d_ff 64, 2+2
 * layers (8, 16, 1+1 on a simulator), vocabularies 19 and 23, max_len 12,
 * the rest clformer_config_default's. Tests set what they vary on top. */
clformer_config harness_small_config(void);

/* `rows` sentences of `len` ids (len >= 3): <sos> words <eos>, right-padded,
 * word ids drawn from [4, vocab) with `seed`; release with free(). */
int32_t *harness_random_sentences(size_t rows, size_t len, int vocab, uint64_t seed);

/* Writes `lines` pairs of a small made-up language pair into dir/src_name and
 * dir/tgt_name: min_words..max_words (<= 8) words drawn by `seed`, the target
 * reversing the source and mapping each word through a dictionary, so a tiny
 * model learns it in a few dozen steps. */
void harness_write_reversal_corpus(const char *dir, const char *src_name, const char *tgt_name,
                                   int lines, int min_words, int max_words, uint64_t seed);

/* Writes a small text for a language model to `path`: lines "<word> i:
 * <text> i % period" for i = 0, 1, ... while under `bytes` - 40 bytes. */
void harness_write_counted_lines(const char *path, size_t bytes, const char *word,
                                 const char *text, int period);

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

/* Runs a conformance check (conformance.h) on the device under test, with its
 * small shapes on a simulator; fails the test when it cannot run or when any
 * result breaks its rule, after printing every such result. */
/* A conf_sink for a layer's case runner (conf_<layer>_run): prints each
 * failing result and counts it in *(int *)user. */
void harness_conf_sink(void *user, const conf_result *r);
/* Runs `run_expr` (a conf_*_run call whose sink is harness_conf_sink with
 * &failures) and fails the test when it cannot run or a result fails. */
#define assert_conformance_case(run_expr)                                                     \
    do {                                                                                      \
        int failures = 0;                                                                     \
        assert_ok(run_expr);                                                                  \
        if (failures) fail_msg("%d result(s) outside their rule (listed above)", failures);   \
    } while (0)

#define assert_conformance(check) harness_assert_conformance((check), #check, __FILE__, __LINE__)
void harness_assert_conformance(conf_check_fn check, const char *name, const char *file, int line);

/* --- the clformer binary, for the CLI tests -------------------------------- */
/* How harness_run_clformer runs $CLFORMER_BINARY (no shell). The child gets
 * this process's environment, plus CLFORMER_DEVICE = the selector of the
 * device under test when there is one (hctx() is NULL in host tests). */
typedef struct {
    char *out; /* its stdout, NUL-terminated, cut to out_cap - 1 bytes */
    size_t out_cap;
    char *err; /* its stderr, likewise; NULL: stderr goes into `out` too (2>&1) */
    size_t err_cap;
    const char *in;  /* file to read as its stdin; NULL: /dev/null */
    const char *cwd; /* directory to run it in; NULL: this process's */
    bool echo_err;   /* with `err`: copy all its stderr to ours (always done on
                      * a simulator, so check_log.cmake sees Oclgrind's reports
                      * from the child) */
} harness_cmd;

/* Runs `$CLFORMER_BINARY first ...` (NULL-terminated arguments) and waits for
 * it; returns its exit code, or 128 + the signal number that ended it. */
int harness_run_clformer(const harness_cmd *cmd, const char *first, ...);
int harness_vrun_clformer(const harness_cmd *cmd, const char *first, va_list args);
/* The same with the arguments in a NULL-terminated array. */
int harness_run_clformer_argv(const harness_cmd *cmd, const char *const *args);

/* Fails unless a run through `cmd` exited with `want` and, when `needle` is
 * not NULL, its stdout or stderr holds `needle`; the message shows both. */
void harness_expect_run(const harness_cmd *cmd, int got, int want, const char *needle);

/* --- files ------------------------------------------------------------------- */
/* Makes a new directory $TMPDIR/clformer_<tag>_XXXXXX (/tmp when TMPDIR is
 * unset) and puts its path in dir; false when it cannot (for setup functions). */
bool harness_temp_dir(char *dir, size_t cap, const char *tag);
/* Removes `path` and, for a directory, everything under it; false on an error. */
bool harness_remove_tree(const char *path);
/* dir/name into buf; fails the test when it does not fit. */
void harness_path(char *buf, size_t cap, const char *dir, const char *name);
/* The whole file at `path` into buf, NUL-terminated; fails the test when it
 * cannot be read or does not fit. */
void harness_slurp(const char *path, char *buf, size_t cap);
/* The same for a file of any bytes: their count (a NUL follows them). */
size_t harness_slurp_bytes(const char *path, char *buf, size_t cap);
/* Writes `text` to `path` (replacing it); fails the test on an error. */
void harness_write_file(const char *path, const char *text);
/* The same for n bytes of any value. */
void harness_write_bytes(const char *path, const void *data, size_t n);

/* Small allocation helpers that fail the test on out-of-memory. */
void *hmalloc(size_t bytes);
double *to_double(const float *x, size_t n); /* malloc'd copy */

#endif
