/*
 * `clformer plot` end to end: runs $CLFORMER_BINARY on tests/data/train_log.jsonl
 * and on broken logs written to a temporary directory, and checks the exit
 * code (0 ok, 1 failure, 2 usage), the PNG, and that errors name the file
 * and line at fault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cairo.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];
static char out_txt[128], err_txt[128];
static char out[8192], err[8192]; /* the last run's stdout and stderr */

static void path_in_dir(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static void slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

/* Runs `clformer ARGS...` (NULL-terminated), returns its exit code. */
static int run(const char *first, ...)
{
    const char *binary = getenv("CLFORMER_BINARY");
    if (!binary || !*binary) fail_msg("CLFORMER_BINARY is not set (run through ctest)");
    char *argv[32] = {(char *)binary, (char *)first};
    int argc = 2;
    va_list ap;
    va_start(ap, first);
    for (const char *a; (a = va_arg(ap, const char *)) && argc < 31;) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out_txt, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_txt, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(126);
        execv(binary, argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    slurp(out_txt, out, sizeof out);
    slurp(err_txt, err, sizeof err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void expect(int got, int want, const char *needle)
{
    if (got != want)
        fail_msg("exit code %d, expected %d\nstdout: %s\nstderr: %s", got, want, out, err);
    if (needle && !strstr(out, needle) && !strstr(err, needle))
        fail_msg("the output does not mention '%s'\nstdout: %s\nstderr: %s", needle, out, err);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
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
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clformer_cmd_plot_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return -1;
    path_in_dir(out_txt, sizeof out_txt, "stdout.txt");
    path_in_dir(err_txt, sizeof err_txt, "stderr.txt");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    static const char *names[] = {"stdout.txt", "stderr.txt", "bad.jsonl", "empty.jsonl",
                                  "meta.jsonl", "nulls.jsonl", "string.jsonl", "nostep.jsonl",
                                  "array.jsonl"};
    char p[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        path_in_dir(p, sizeof p, names[i]);
        remove(p);
    }
    rmdir(dir);
    return 0;
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
    path_in_dir(png, sizeof png, "loss.png");
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

static void usage_errors_exit_2(void **state)
{
    (void)state;
    char png[128];
    path_in_dir(png, sizeof png, "never.png");
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
    path_in_dir(png, sizeof png, "never.png");

    path_in_dir(missing, sizeof missing, "no-such-log.jsonl");
    expect(run("plot", "--log", missing, "--out", png, NULL), 1, missing);

    path_in_dir(log, sizeof log, "bad.jsonl");
    write_file(log, "{\"step\": 1, \"loss\": 5.0}\n\n{\"step\": 2, \"loss\": \n{\"step\": 3}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "bad.jsonl:3:");

    path_in_dir(log, sizeof log, "string.jsonl");
    write_file(log, "{\"step\": 1, \"loss\": 5.0}\n{\"step\": 2, \"loss\": \"4.0\"}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "string.jsonl:2:");

    path_in_dir(log, sizeof log, "nostep.jsonl");
    write_file(log, "{\"step\": 1, \"loss\": 5.0}\n{\"val_loss\": 4.0}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "nostep.jsonl:2:");

    path_in_dir(log, sizeof log, "array.jsonl");
    write_file(log, "[1, 2]\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "array.jsonl:1:");

    path_in_dir(log, sizeof log, "empty.jsonl");
    write_file(log, "");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "empty");

    path_in_dir(log, sizeof log, "meta.jsonl");
    write_file(log, "{\"event\": \"start\"}\n{\"step\": 5, \"lr\": 0.001}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "no \"loss\"");

    path_in_dir(log, sizeof log, "nulls.jsonl");
    write_file(log, "{\"step\": 1, \"loss\": null}\n{\"step\": 2, \"loss\": null}\n");
    expect(run("plot", "--log", log, "--out", png, NULL), 1, "finite");
    assert_int_equal(access(png, F_OK), -1);

    char unwritable[160];
    path_in_dir(unwritable, sizeof unwritable, "no/such/dir/loss.png");
    expect(run("plot", "--log", sample_log(), "--out", unwritable, NULL), 1, unwritable);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plots_the_sample_log),
        cmocka_unit_test(usage_errors_exit_2),
        cmocka_unit_test(bad_logs_name_file_and_line),
    };
    return cmocka_run_group_tests_name("clformer plot", tests, setup, teardown);
}
