/*
 * Decoding drops finished rows from the batch (greedy: finished sentences;
 * beam search: finished sentences' K rows), so later steps run on live rows
 * only. That must not change a single output: every sentence's translation
 * with rows dropped equals the one with every row kept to the end (the
 * decoding before rows were dropped), for greedy decoding and beam search,
 * on a small model trained briefly on Multi30k (tests/data/decode), whose
 * sentences end at different steps. tests/check_translate_golden.cmake
 * compares the command's output with the previous implementation's. Not
 * run on simulators (too slow there); test_beam checks the kernel that
 * moves the rows on every device.
 */
#include "harness.h"
#include "clformer_util.h"
#include "session.h"

#include "clformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *data_path(const char *name)
{
    static char path[2][512];
    static int k;
    const char *data = getenv("CLFORMER_TEST_DATA");
    if (!data || !*data) fail_msg("CLFORMER_TEST_DATA is not set (run through ctest)");
    k = (k + 1) % 2;
    snprintf(path[k], sizeof path[k], "%s/decode/%s", data ? data : "", name);
    return path[k];
}

static void translate(clformer_session *s, bool keep_finished, char **lines, size_t n,
                      const clformer_decode_options *o, size_t batch, char **out)
{
    s->keep_finished_rows = keep_finished;
    assert_ok(clformer_translate_sentences(s, (const char *const *)lines, n, o, batch, out, NULL,
                                           NULL, NULL));
}

static void dropping_finished_rows_changes_no_output(void **state)
{
    (void)state;
    clformer_model *m;
    assert_ok(clformer_model_load(hctx(), data_path("model.safetensors"), &m));
    clformer_session *s;
    assert_ok(clformer_session_create(m, &s));
    char **lines;
    size_t n;
    assert_ok(clformer_lines_read(data_path("input.en"), &lines, &n));
    static const struct {
        int beam;
        float penalty;
        size_t batch;
    } runs[] = {{1, 1.0f, 64}, {4, 1.0f, 64}, {5, 0.6f, 23}, {2, 0.0f, 7}};
    char **a = hmalloc(n * sizeof *a), **b = hmalloc(n * sizeof *b);
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
        clformer_decode_options o;
        clformer_decode_options_default(&o);
        o.beam = runs[k].beam;
        o.length_penalty = runs[k].penalty;
        translate(s, false, lines, n, &o, runs[k].batch, a);
        translate(s, true, lines, n, &o, runs[k].batch, b);
        size_t words = 0;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(a[i], b[i]) != 0)
                fail_msg("beam %d, line %zu: '%s' with finished rows dropped, '%s' kept",
                         runs[k].beam, i + 1, a[i], b[i]);
            words += clformer_count_tokens(a[i]);
            free(a[i]);
            free(b[i]);
        }
        assert_true(words > n); /* real translations, not empty lines */
    }
    free(a);
    free(b);
    clformer_lines_free(lines);
    clformer_session_free(s);
    clformer_model_free(m);
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test(dropping_finished_rows_changes_no_output),
};
HARNESS_DEVICE_MAIN("decode_compaction", tests)
