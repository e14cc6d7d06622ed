/*
 * `clformer plot` end to end: runs $CLFORMER_BINARY on tests/data/train_log.jsonl
 * and on broken logs written to a temporary directory, and checks the exit
 * code (0 ok, 1 failure, 2 usage), the PNG, and that errors name the file
 * and line at fault.
 */
#include "harness.h"

#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];
static char out[8192], err[8192]; /* the last run's stdout and stderr */
static const harness_cmd cli = {out, sizeof out, err, sizeof err};

/* Runs `clformer ARGS...` (NULL-terminated); returns its exit code. */
#define run(...) harness_run_clformer(&cli, __VA_ARGS__)

static void expect(int got, int want, const char *needle)
{
    harness_expect_run(&cli, got, want, needle);
}

static void expect_png(const char *path, int width, int height)
{
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
        fail_msg("%s: %s", path, cairo_status_to_string(cairo_surface_status(s)));
    assert_int_equal(cairo_image_surface_get_width(s), width);
    assert_int_equal(cairo_image_surface_get_height(s), height);
    cairo_surface_destroy(s);
    remove(path);
}

static int setup(void **state)
{
    (void)state;
    return harness_temp_dir(dir, sizeof dir, "cmd_plot") ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return harness_remove_tree(dir) ? 0 : -1;
}

static const char *sample_log(void)
{
    static char path[512];
    const char *data = getenv("CLFORMER_TEST_DATA");
    if (!data) fail_msg("CLFORMER_TEST_DATA is not set (run through ctest)");
    snprintf(path, sizeof path, "%s/train_log.jsonl", data);
    return path;
}

static void plots_the_sample_log(void **state)
{
    (void)state;
    char png[128];
    harness_path(png, sizeof png, dir, "loss.png");
    expect(run("plot", "--log", sample_log(), "--out", png, NULL), 0,
           "400 training and 8 validation points (1 null loss skipped)");
    expect_png(png, 960, 560);
    expect(run("plot", "--log", sample_log(), "--out", png, "--log-y", "--title",
               "Übersetzung: Verlust", "--width", "640", "--height", "400", NULL),
           0, png);
    expect_png(png, 640, 400);
    expect(run("plot", "--help", NULL), 0, "usage: clformer plot");
    expect(run("--help", NULL), 0, "plot");
}

/* Two runs compared in one figure, named by --label; a bad second log is
 * named in the error. */
static void compares_runs(void **state)
{
    (void)state;
    char png[128], bad[128];
    harness_path(png, sizeof png, dir, "compare.png");
    const char *log = sample_log();
    expect(run("plot", "--log", log, "--label", "one rank", "--log", log, "--label", "two ranks",
               "--out", png, NULL),
           0, "800 training and 16 validation points from 2 runs");
    expect_png(png, 960, 560);
    expect(run("plot", "--log", log, "--log", log, "--label", "only one", "--out", png, NULL), 2,
           "give one label per log");
    expect(run("plot", "--log", log, "--log", log, "--log", log, "--log", log, "--log", log,
               "--log", log, "--log", log, "--out", png, NULL),
           2, "at most 6");
    harness_path(bad, sizeof bad, dir, "second.jsonl");
    harness_write_file(bad, "{\"step\": 1, \"loss\": \"x\"}\n");
    expect(run("plot", "--log", log, "--log", bad, "--out", png, NULL), 1, "second.jsonl:1:");
    assert_int_equal(access(png, F_OK), -1);
}

/* The figure notes that the training loss includes label smoothing when the
 * log says so (train writes "label_smoothing" on each step) and there are
 * validation points; not for a log without smoothing. */
static void notes_label_smoothing_when_used(void **state)
{
    (void)state;
    char png[128], log[128];
    harness_path(png, sizeof png, dir, "smoothing.png");
    harness_path(log, sizeof log, dir, "smoothing.jsonl");
    harness_write_file(log, "{\"step\": 1, \"loss\": 5.0, \"label_smoothing\": 0.1}\n"
                            "{\"step\": 2, \"loss\": 4.0, \"label_smoothing\": 0.1}\n"
                            "{\"step\": 2, \"val_loss\": 3.5}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 0,
           "noted: training loss includes label smoothing; validation: plain cross-entropy");
    expect_png(png, 960, 560);
    harness_write_file(log, "{\"step\": 1, \"loss\": 5.0, \"label_smoothing\": 0}\n"
                            "{\"step\": 2, \"loss\": 4.0, \"label_smoothing\": 0}\n"
                            "{\"step\": 2, \"val_loss\": 3.5}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 0, "2 training and 1 validation points");
    assert_null(strstr(out, "noted"));
    expect_png(png, 960, 560);
    expect(run("plot", "--log", sample_log(), "--out", png, NULL), 0, "validation points");
    assert_null(strstr(out, "noted"));
    expect_png(png, 960, 560);
}

static void usage_errors_exit_2(void **state)
{
    (void)state;
    char png[128];
    harness_path(png, sizeof png, dir, "never.png");
    expect(run("plot", "--log", sample_log(), "--out", png, "--bogus", NULL), 2, "--bogus");
    expect(run("plot", "--log", sample_log(), NULL), 2, "--out");
    expect(run("plot", "--out", png, NULL), 2, "--log");
    expect(run("plot", "--log", sample_log(), "--out", png, "--width", "20", "--height", "400",
               NULL), 2, "--width");
    expect(run("plot", "--log", sample_log(), "--out", png, "--width", "640", NULL), 2,
           "together");
    assert_int_equal(access(png, F_OK), -1);
}

static void bad_logs_name_file_and_line(void **state)
{
    (void)state;
    char png[128], log[128], missing[128];
    harness_path(png, sizeof png, dir, "never.png");

    harness_path(missing, sizeof missing, dir, "no-such-log.jsonl");
    expect(run("plot", "--log", missing, "--out", png, NULL), 1, missing);

    harness_path(log, sizeof log, dir, "bad.jsonl");
    harness_write_file(log,
                       "{\"step\": 1, \"loss\": 5.0}\n\n{\"step\": 2, \"loss\": \n{\"step\": 3}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "bad.jsonl:3:");

    harness_path(log, sizeof log, dir, "string.jsonl");
    harness_write_file(log, "{\"step\": 1, \"loss\": 5.0}\n{\"step\": 2, \"loss\": \"4.0\"}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "string.jsonl:2:");

    harness_path(log, sizeof log, dir, "nostep.jsonl");
    harness_write_file(log, "{\"step\": 1, \"loss\": 5.0}\n{\"val_loss\": 4.0}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "nostep.jsonl:2:");

    harness_path(log, sizeof log, dir, "array.jsonl");
    harness_write_file(log, "[1, 2]\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "array.jsonl:1:");

    harness_path(log, sizeof log, dir, "empty.jsonl");
    harness_write_file(log, "");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "empty");

    harness_path(log, sizeof log, dir, "meta.jsonl");
    harness_write_file(log, "{\"event\": \"start\"}\n{\"step\": 5, \"lr\": 0.001}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "no \"loss\"");

    harness_path(log, sizeof log, dir, "nulls.jsonl");
    harness_write_file(log, "{\"step\": 1, \"loss\": null}\n{\"step\": 2, \"loss\": null}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "finite");
    assert_int_equal(access(png, F_OK), -1);

    char unwritable[160];
    harness_path(unwritable, sizeof unwritable, dir, "no/such/dir/loss.png");
    expect(run("plot", "--log", sample_log(), "--out", unwritable, NULL), 1, unwritable);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plots_the_sample_log),
        cmocka_unit_test(compares_runs),
        cmocka_unit_test(notes_label_smoothing_when_used),
        cmocka_unit_test(usage_errors_exit_2),
        cmocka_unit_test(bad_logs_name_file_and_line),
    };
    return cmocka_run_group_tests_name("clformer plot", tests, setup, teardown);
}
