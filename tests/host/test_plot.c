/*
 * tools/cli/plot_loss.c and plot_attention.c: loss curves and attention heatmaps are drawn into PNG files
 * in a temporary directory and read back with cairo. The checks are about
 * what a reader would see: the image has the promised size, it is not
 * blank, the series' colours are on it, a high attention weight is drawn
 * brighter than a low one at the cell where plot_attention_geometry says it
 * is, and bad input returns an error naming the problem.
 * CLFORMER_KEEP_PLOTS=1 keeps the PNGs (their directory is printed).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clformer.h"
#include "plot.h"

static char dir[64];
static char made[32][128]; /* files to remove afterwards */
static int n_made;

static const char *out_path(const char *name)
{
    assert_true(n_made < 32);
    snprintf(made[n_made], sizeof made[0], "%s/%s", dir, name);
    return made[n_made++];
}

static int setup(void **state)
{
    (void)state;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clformer_plot_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    const char *keep = getenv("CLFORMER_KEEP_PLOTS");
    if (keep && *keep && strcmp(keep, "0")) {
        printf("plots kept in %s\n", dir);
        return 0;
    }
    for (int i = 0; i < n_made; i++) remove(made[i]);
    rmdir(dir);
    return 0;
}

/* ---- reading the PNG back ------------------------------------------------ */

typedef struct {
    int r, g, b;
} colour;

static cairo_surface_t *load(const char *path, int width, int height)
{
    cairo_surface_t *s = cairo_image_surface_create_from_png(path);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS)
        fail_msg("cannot read %s back: %s", path, cairo_status_to_string(cairo_surface_status(s)));
    assert_int_equal(cairo_image_surface_get_width(s), width);
    assert_int_equal(cairo_image_surface_get_height(s), height);
    cairo_format_t f = cairo_image_surface_get_format(s);
    assert_true(f == CAIRO_FORMAT_RGB24 || f == CAIRO_FORMAT_ARGB32);
    return s;
}

static colour pixel(cairo_surface_t *s, int x, int y)
{
    cairo_surface_flush(s);
    const unsigned char *row = cairo_image_surface_get_data(s) +
                               (size_t)y * cairo_image_surface_get_stride(s);
    uint32_t p = ((const uint32_t *)row)[x];
    return (colour){(int)(p >> 16 & 255), (int)(p >> 8 & 255), (int)(p & 255)};
}

static bool near(colour a, colour b, int tol)
{
    return abs(a.r - b.r) <= tol && abs(a.g - b.g) <= tol && abs(a.b - b.b) <= tol;
}

/* Pixels within `tol` per channel of c. */
static long count_colour(cairo_surface_t *s, colour c, int tol)
{
    long n = 0;
    int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) n += near(pixel(s, x, y), c, tol);
    return n;
}

static double non_white_fraction(cairo_surface_t *s)
{
    int w = cairo_image_surface_get_width(s), h = cairo_image_surface_get_height(s);
    return 1.0 - (double)count_colour(s, (colour){255, 255, 255}, 2) / ((double)w * h);
}

static double luma(colour c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b; }

static int distance(colour a, colour b) { return abs(a.r - b.r) + abs(a.g - b.g) + abs(a.b - b.b); }

/* The series' colours in plot_loss.c. */
static const colour TRAIN = {31, 120, 181}, VAL = {217, 94, 3};
/* The third run's colour when runs are compared (RUN_COLOURS[2]). */
static const colour THIRD_RUN = {43, 161, 43};

/* ---- loss curves ---------------------------------------------------------- */

/* A deterministic noisy loss curve. */
static void make_curve(double *step, double *loss, size_t n, double scale)
{
    uint32_t state = 12345;
    for (size_t i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        double noise = ((state >> 8) / 16777216.0 - 0.5) * 0.6;
        step[i] = (double)(i + 1) * scale;
        loss[i] = 2 + 6 * exp(-(double)i / (n / 6.0)) + noise;
    }
}

static void loss_thousands_of_points_with_gaps(void **state)
{
    (void)state;
    enum { N = 5000, NV = 25 };
    static double step[N], loss[N], vstep[NV], vloss[NV];
    make_curve(step, loss, N, 1);
    loss[100] = NAN, loss[2000] = INFINITY, loss[2001] = -INFINITY, step[3000] = NAN;
    for (int i = 0; i < NV; i++) {
        vstep[i] = (i + 1) * 200;
        vloss[i] = 2.3 + 6 * exp(-(double)i / (NV / 6.0));
    }
    vloss[3] = NAN;
    plot_loss_run run = {NULL, step, loss, N, vstep, vloss, NV};
    plot_loss_spec s = {&run, 1, "5000 steps, gaps", false, 0, 0};
    const char *path = out_path("loss_many.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    cairo_surface_t *img = load(path, 960, 560);
    assert_true(non_white_fraction(img) > 0.03);
    assert_true(count_colour(img, TRAIN, 20) > 500); /* the smoothed line */
    assert_true(count_colour(img, VAL, 20) > 100);   /* the markers */
    cairo_surface_destroy(img);

    /* the same on a log axis */
    s.log_y = true;
    path = out_path("loss_many_log.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    img = load(path, 960, 560);
    assert_true(count_colour(img, TRAIN, 20) > 500);
    cairo_surface_destroy(img);
}

static void loss_single_point_without_validation(void **state)
{
    (void)state;
    double step = 7, loss = 3.25;
    plot_loss_run run = {NULL, &step, &loss, 1, NULL, NULL, 0};
    plot_loss_spec s = {&run, 1, NULL, false, 640, 400};
    const char *path = out_path("loss_one.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    cairo_surface_t *img = load(path, 640, 400);
    assert_true(non_white_fraction(img) > 0.005);
    assert_true(count_colour(img, TRAIN, 20) >= 3); /* the dot */
    assert_int_equal(count_colour(img, VAL, 20), 0);
    cairo_surface_destroy(img);

    /* a short run: no smoothed line, the raw one solid */
    double steps[5] = {0, 10, 20, 30, 40}, losses[5] = {9, 6, 4.5, 3.9, 3.7};
    run = (plot_loss_run){NULL, steps, losses, 5, NULL, NULL, 0};
    s = (plot_loss_spec){&run, 1, "short", true, 0, 0};
    path = out_path("loss_short_log.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    img = load(path, 960, 560);
    assert_true(count_colour(img, TRAIN, 20) > 300);
    cairo_surface_destroy(img);
}

static void loss_validation_only(void **state)
{
    (void)state;
    double vstep[3] = {1000, 2000, 3000}, vloss[3] = {4.1, 3.2, 2.9};
    plot_loss_run run = {NULL, NULL, NULL, 0, vstep, vloss, 3};
    plot_loss_spec s = {&run, 1, "validation only", true, 0, 0};
    const char *path = out_path("loss_val_only.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    cairo_surface_t *img = load(path, 960, 560);
    assert_true(count_colour(img, VAL, 20) > 50);
    assert_int_equal(count_colour(img, TRAIN, 10), 0);
    cairo_surface_destroy(img);
}

/* Whether two PNGs of one size hold the same pixels. */
static bool same_pixels(const char *a, const char *b, int width, int height)
{
    cairo_surface_t *x = load(a, width, height), *y = load(b, width, height);
    bool same = true;
    for (int r = 0; r < height && same; r++)
        for (int c = 0; c < width && same; c++)
            same = distance(pixel(x, c, r), pixel(y, c, r)) == 0;
    cairo_surface_destroy(x);
    cairo_surface_destroy(y);
    return same;
}

/* The label-smoothing note only when a run's training loss includes it and
 * there are validation points to set beside it, and always whole. */
static void loss_smoothing_note(void **state)
{
    (void)state;
    double step[40], loss[40], vstep[2] = {10, 30}, vloss[2] = {3.0, 2.5};
    make_curve(step, loss, 40, 1);
    const char *names[4] = {"note_plain.png", "note_smoothed.png", "note_no_val.png",
                            "note_no_val_plain.png"};
    for (int i = 0; i < 4; i++) {
        plot_loss_run run = {NULL, step, loss, 40, vstep, vloss, i < 2 ? 2 : 0, i % 2 == 1 || i == 2};
        plot_loss_spec s = {&run, 1, "note", false, 640, 400};
        if (plot_loss_curves(out_path(names[i]), &s) != CLFORMER_OK)
            fail_msg("%s", clformer_last_error());
    }
    /* smoothing with validation: a note row; without validation: no note */
    assert_false(same_pixels(made[n_made - 4], made[n_made - 3], 640, 400));
    assert_true(same_pixels(made[n_made - 2], made[n_made - 1], 640, 400));

    char lines[2][PLOT_NOTE_BYTES];
    double widths[2], max_w;
    plot_loss_run run = {NULL, step, loss, 40, vstep, vloss, 2, false};
    plot_loss_spec s = {&run, 1, NULL, false, 0, 0};
    assert_int_equal(plot_loss_note(&s, lines, widths, &max_w), 0);
    run.label_smoothing = true;
    assert_int_equal(plot_loss_note(&s, lines, widths, &max_w), 1);
    assert_string_equal(lines[0], "training loss includes label smoothing; validation: plain "
                                  "cross-entropy");
    assert_true(widths[0] <= max_w);
    /* the narrowest figure: two lines, each within the width */
    for (size_t runs = 1; runs <= 2; runs++) {
        plot_loss_run two[2] = {run, run};
        s = (plot_loss_spec){two, runs, NULL, false, 320, 240};
        assert_int_equal(plot_loss_note(&s, lines, widths, &max_w), 2);
        assert_true(widths[0] <= max_w && widths[1] <= max_w);
        assert_non_null(strstr(lines[1], "cross-entropy"));
        if (plot_loss_curves(out_path(runs == 1 ? "note_narrow.png" : "note_narrow_two.png"), &s) !=
            CLFORMER_OK)
            fail_msg("%s", clformer_last_error());
    }
}

static void expect_error(clformer_status got, clformer_status want, const char *needle)
{
    if (got != want)
        fail_msg("expected %s, got %s (%s)", clformer_status_name(want), clformer_status_name(got),
                 clformer_last_error());
    if (!strstr(clformer_last_error(), needle))
        fail_msg("message '%s' does not mention '%s'", clformer_last_error(), needle);
}

static void loss_errors(void **state)
{
    (void)state;
    double step[3] = {1, 2, 3}, nan3[3] = {NAN, INFINITY, NAN}, neg[3] = {0, -1, -2};
    const char *ok_path = out_path("never_written.png");
    plot_loss_run run = {NULL, step, nan3, 3, NULL, NULL, 0};
    plot_loss_spec s = {&run, 1, NULL, false, 0, 0};
    expect_error(plot_loss_curves(ok_path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "finite");
    run.loss = neg, s.log_y = true;
    expect_error(plot_loss_curves(ok_path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "log scale");
    run = (plot_loss_run){NULL, step, NULL, 3, NULL, NULL, 0};
    s = (plot_loss_spec){&run, 1, NULL, false, 0, 0};
    expect_error(plot_loss_curves(ok_path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "arrays");
    run = (plot_loss_run){NULL, NULL, NULL, 0, NULL, NULL, 0};
    s = (plot_loss_spec){&run, 1, NULL, false, 0, 0};
    expect_error(plot_loss_curves(ok_path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "no training");
    run = (plot_loss_run){NULL, step, neg, 3, NULL, NULL, 0};
    s = (plot_loss_spec){&run, 1, NULL, false, 10, 10};
    expect_error(plot_loss_curves(ok_path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "10 x 10");
    s.width = s.height = 0;
    expect_error(plot_loss_curves(NULL, &s), CLFORMER_ERR_INVALID_ARGUMENT, "path");
    expect_error(plot_loss_curves(ok_path, NULL), CLFORMER_ERR_INVALID_ARGUMENT, "spec");
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no/such/dir/loss.png", dir);
    expect_error(plot_loss_curves(missing, &s), CLFORMER_ERR_IO, missing);
    assert_int_equal(access(ok_path, F_OK), -1);
}

/* Three runs on one figure: each in its own colour, the first two in the
 * single-run colours, the third in neither. */
static void loss_runs_compared(void **state)
{
    (void)state;
    enum { N = 400, NV = 8 };
    static double step[3][N], loss[3][N], vstep[NV], vloss[3][NV];
    plot_loss_run runs[3];
    const char *labels[3] = {"1 rank, batch 64", "2 ranks, batch 32 each", "third"};
    for (int r = 0; r < 3; r++) {
        make_curve(step[r], loss[r], N, 1);
        for (int i = 0; i < N; i++) loss[r][i] += 1.5 * r;
        for (int i = 0; i < NV; i++) {
            vstep[i] = (i + 1) * 50;
            vloss[r][i] = 2.5 + 1.5 * r + 4 * exp(-(double)i / 2);
        }
        runs[r] = (plot_loss_run){labels[r], step[r], loss[r], N, vstep, vloss[r], NV};
    }
    plot_loss_spec s = {runs, 2, "two runs", false, 0, 0};
    const char *path = out_path("loss_two_runs.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    cairo_surface_t *img = load(path, 960, 560);
    assert_true(count_colour(img, TRAIN, 20) > 300);
    assert_true(count_colour(img, VAL, 20) > 300); /* the second run's line and markers */
    assert_int_equal(count_colour(img, THIRD_RUN, 20), 0);
    cairo_surface_destroy(img);

    s.n_runs = 3;
    path = out_path("loss_three_runs.png");
    if (plot_loss_curves(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    img = load(path, 960, 560);
    assert_true(count_colour(img, THIRD_RUN, 20) > 300);
    cairo_surface_destroy(img);

    s.n_runs = PLOT_MAX_RUNS + 1;
    expect_error(plot_loss_curves(path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "runs given");
    s.n_runs = 0;
    expect_error(plot_loss_curves(path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "runs given");
}

/* ---- attention ------------------------------------------------------------ */

static colour cell_colour(const plot_attention_spec *s, cairo_surface_t *img, int panel, int r,
                          int c)
{
    int w, h;
    double x, y;
    if (plot_attention_geometry(s, panel, r, c, &w, &h, &x, &y) != CLFORMER_OK)
        fail_msg("%s", clformer_last_error());
    return pixel(img, (int)floor(x), (int)floor(y));
}

static void attention_single_head_with_awkward_tokens(void **state)
{
    (void)state;
    enum { R = 5, C = 7 };
    float w[R * C];
    for (int i = 0; i < R * C; i++) w[i] = 0.1f;
    w[2 * C + 3] = 1.0f; /* known high */
    w[0] = 0.0f;         /* known low */
    w[4 * C + 6] = NAN;  /* drawn grey */
    const char *src[C] = {"▁Die", "Übersetzung", "注意力", "ist",
                          "a-very-long-token-that-would-overlap-its-neighbours-if-not-shortened",
                          "\xff\xfe bad bytes", ""};
    const char *tgt[R] = {"▁The", "translation", "is", "attention", "\tcontrol\n"};
    plot_attention_spec s = {w, 1, R, C, src, tgt, PLOT_ATTENTION_PANELS,
                             "Encoder–decoder attention"};
    const char *path = out_path("attention_one.png");
    if (plot_attention(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    int width, height;
    double x, y;
    assert_int_equal(plot_attention_geometry(&s, 0, 0, 0, &width, &height, &x, &y), CLFORMER_OK);
    cairo_surface_t *img = load(path, width, height);
    assert_true(non_white_fraction(img) > 0.1);
    colour high = cell_colour(&s, img, 0, 2, 3), low = cell_colour(&s, img, 0, 0, 0);
    colour mid = cell_colour(&s, img, 0, 1, 1), missing = cell_colour(&s, img, 0, 4, 6);
    assert_true(distance(high, low) > 200);
    assert_true(luma(high) > luma(mid) && luma(mid) > luma(low));
    assert_true(near(missing, (colour){209, 209, 209}, 3));
    /* the centre cell's neighbours are not high */
    assert_true(distance(cell_colour(&s, img, 0, 2, 2), high) > 100);
    assert_true(distance(cell_colour(&s, img, 0, 1, 3), high) > 100);
    cairo_surface_destroy(img);
}

static void attention_heads_as_panels_and_mean(void **state)
{
    (void)state;
    enum { H = 3, R = 4, C = 6 };
    float w[H * R * C] = {0};
    for (int h = 0; h < H; h++) w[(h * R + h) * C + h + 1] = 1.0f; /* head h: (h, h+1) */
    plot_attention_spec s = {w, H, R, C, NULL, NULL, PLOT_ATTENTION_PANELS, "three heads"};
    const char *path = out_path("attention_panels.png");
    if (plot_attention(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    int width, height;
    double x, y;
    assert_int_equal(plot_attention_geometry(&s, 2, 0, 0, &width, &height, &x, &y), CLFORMER_OK);
    cairo_surface_t *img = load(path, width, height);
    for (int h = 0; h < H; h++)
        for (int k = 0; k < H; k++) {
            colour c = cell_colour(&s, img, h, k, k + 1);
            colour low = cell_colour(&s, img, h, (k + 1) % R, 0);
            if (h == k) assert_true(distance(c, low) > 200 && luma(c) > luma(low));
            else assert_true(distance(c, low) <= 3); /* another head's high cell */
        }
    cairo_surface_destroy(img);

    s.mode = PLOT_ATTENTION_MEAN;
    path = out_path("attention_mean.png");
    if (plot_attention(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    assert_int_equal(plot_attention_geometry(&s, 0, 0, 0, &width, &height, &x, &y), CLFORMER_OK);
    img = load(path, width, height);
    colour low = cell_colour(&s, img, 0, 3, 0);
    for (int k = 0; k < H; k++) { /* each mean is 1/3, the top of the shared scale */
        colour c = cell_colour(&s, img, 0, k, k + 1);
        assert_true(distance(c, low) > 200 && luma(c) > luma(low));
    }
    cairo_surface_destroy(img);
}

static void attention_many_positions(void **state)
{
    (void)state;
    enum { H = 8, R = 61, C = 93 };
    float *w = malloc(sizeof(float) * H * R * C);
    assert_non_null(w);
    for (int h = 0; h < H; h++)
        for (int r = 0; r < R; r++)
            for (int c = 0; c < C; c++)
                w[(h * R + r) * C + c] = expf(-0.02f * (float)((c - r - h) * (c - r - h)));
    plot_attention_spec s = {w, H, R, C, NULL, NULL, PLOT_ATTENTION_PANELS, "8 heads, 61 x 93"};
    const char *path = out_path("attention_8_heads.png");
    if (plot_attention(path, &s) != CLFORMER_OK) fail_msg("%s", clformer_last_error());
    int width, height;
    double x, y;
    assert_int_equal(plot_attention_geometry(&s, 7, 60, 92, &width, &height, &x, &y), CLFORMER_OK);
    cairo_surface_t *img = load(path, width, height);
    colour high = cell_colour(&s, img, 7, 30, 37), low = cell_colour(&s, img, 7, 30, 80);
    assert_true(distance(high, low) > 200 && luma(high) > luma(low));
    cairo_surface_destroy(img);
    free(w);
}

static void attention_errors(void **state)
{
    (void)state;
    float w[6] = {0};
    const char *path = out_path("never_written_attention.png");
    plot_attention_spec s = {w, 1, 0, 6, NULL, NULL, PLOT_ATTENTION_PANELS, NULL};
    expect_error(plot_attention(path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "1 x 0 x 6");
    s.rows = 2, s.cols = 3, s.weights = NULL;
    expect_error(plot_attention(path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "weights");
    s.weights = w, s.heads = 100000;
    expect_error(plot_attention(path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "too large");
    s.heads = 1, s.mode = (plot_attention_mode)7;
    expect_error(plot_attention(path, &s), CLFORMER_ERR_INVALID_ARGUMENT, "mode");
    s.mode = PLOT_ATTENTION_MEAN;
    int width, height;
    double x, y;
    expect_error(plot_attention_geometry(&s, 1, 0, 0, &width, &height, &x, &y),
                 CLFORMER_ERR_INVALID_ARGUMENT, "outside");
    expect_error(plot_attention_geometry(&s, 0, 2, 0, &width, &height, &x, &y),
                 CLFORMER_ERR_INVALID_ARGUMENT, "outside");
    expect_error(plot_attention("", &s), CLFORMER_ERR_INVALID_ARGUMENT, "path");
    char missing[128];
    snprintf(missing, sizeof missing, "%s/no/such/dir/attention.png", dir);
    expect_error(plot_attention(missing, &s), CLFORMER_ERR_IO, missing);
    assert_int_equal(access(path, F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loss_thousands_of_points_with_gaps),
        cmocka_unit_test(loss_single_point_without_validation),
        cmocka_unit_test(loss_validation_only),
        cmocka_unit_test(loss_errors),
        cmocka_unit_test(loss_runs_compared),
        cmocka_unit_test(loss_smoothing_note),
        cmocka_unit_test(attention_single_head_with_awkward_tokens),
        cmocka_unit_test(attention_heads_as_panels_and_mean),
        cmocka_unit_test(attention_many_positions),
        cmocka_unit_test(attention_errors),
    };
    return cmocka_run_group_tests_name("plot", tests, setup, teardown);
}
