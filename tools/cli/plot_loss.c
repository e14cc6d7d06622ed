/*
 * Loss curves (plot_loss_curves, plot.h): training loss per step, faint, with
 * a smoothed line, and validation loss as markers, against the step; several
 * runs share the axes in colours of their own.
 */
#include "plot.h"
#include "cli.h"
#include "plot_draw.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const rgb TRAIN = {0.12, 0.47, 0.71};
static const rgb VAL = {0.85, 0.37, 0.01};
/* Runs compared in one figure: one colour each, for training and validation
 * alike (the first two are TRAIN and VAL; the rest stay apart from both). */
static const rgb RUN_COLOURS[PLOT_MAX_RUNS] = {
    {0.12, 0.47, 0.71}, {0.85, 0.37, 0.01}, {0.17, 0.63, 0.17},
    {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
};

/* ------------------------------------------------------------------------- */
/* Loss curves                                                                */
/* ------------------------------------------------------------------------- */

/* Below this many training points there is no smoothed line: the raw one
 * is drawn solid. */
enum { SMOOTH_MIN_POINTS = 20 };

static bool point_ok(double x, double y, bool log_y)
{
    return isfinite(x) && isfinite(y) && (!log_y || y > 0);
}

/* Exponential moving average with the start-up bias removed (so the first
 * values are not pulled towards 0), spanning about 2.5% of the run; on a log
 * axis it averages log(loss). Skipped points stay NaN, breaking the line. */
static void smooth(const double *x, const double *y, size_t n, bool log_y, double *out)
{
    double span = plot_clamp(n / 40.0, 1, 500);
    double keep = 1 - 2 / (span + 1);
    double m = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        if (!point_ok(x[i], y[i], log_y)) {
            out[i] = NAN;
            continue;
        }
        double v = log_y ? log(y[i]) : y[i];
        m = keep * m + (1 - keep) * v;
        w = keep * w + (1 - keep);
        out[i] = log_y ? exp(m / w) : m / w;
    }
}

/* Points that fall into one pixel column, drawn as that column's first,
 * lowest, highest and last values. */
typedef struct {
    bool open, pen; /* a column is being filled; the path has a current point */
    long col;
    double cx, first, lo, hi, last;
} column;

static void flush_column(cairo_t *cr, column *k)
{
    if (!k->open) return;
    if (k->pen) {
        cairo_line_to(cr, k->cx, k->first);
    } else {
        cairo_move_to(cr, k->cx, k->first);
        cairo_line_to(cr, k->cx, k->first);
    }
    cairo_line_to(cr, k->cx, k->lo);
    cairo_line_to(cr, k->cx, k->hi);
    cairo_line_to(cr, k->cx, k->last);
    k->open = false, k->pen = true;
}

/* Adds a series to the path, broken at skipped points. A lone point
 * becomes a zero-length segment, which round caps draw as a dot. With
 * `envelope`, points sharing a pixel column collapse into one vertical
 * stroke: the same picture as every segment, at a cost bounded by the
 * plot's width. */
static void path_series(cairo_t *cr, const axis *ax, const axis *ay, const double *x,
                        const double *y, size_t n, bool envelope)
{
    column k = {0};
    for (size_t i = 0; i < n; i++) {
        if (!point_ok(x[i], y[i], ay->log)) {
            flush_column(cr, &k);
            k.pen = false;
            continue;
        }
        double px = plot_axis_px(ax, x[i]), py = plot_axis_px(ay, y[i]);
        if (!envelope) {
            if (!k.pen) cairo_move_to(cr, px, py);
            cairo_line_to(cr, px, py);
            k.pen = true;
            continue;
        }
        long c = (long)floor(px);
        if (!k.open || c != k.col) {
            flush_column(cr, &k);
            k.open = true, k.col = c, k.cx = c + 0.5, k.first = k.lo = k.hi = py;
        }
        k.lo = fmin(k.lo, py), k.hi = fmax(k.hi, py), k.last = py;
    }
    flush_column(cr, &k);
}

static void marker(cairo_t *cr, double x, double y, double radius)
{
    cairo_new_sub_path(cr);
    cairo_arc(cr, x, y, radius, 0, 2 * PI);
}

/* A marker per point; with more points than pixel columns (a validation
 * every step), only each column's highest and lowest: the same picture,
 * at a cost bounded by the plot's width (300,000 markers took 1.4 GB and
 * minutes in cairo). */
static void markers(cairo_t *cr, const axis *ax, const axis *ay, const double *x, const double *y,
                    size_t n, double radius, rgb c)
{
    const bool dense = n > (size_t)(ax->px1 - ax->px0);
    column k = {0};
    for (size_t i = 0; i < n; i++) {
        if (!point_ok(x[i], y[i], ay->log)) continue;
        const double px = plot_axis_px(ax, x[i]), py = plot_axis_px(ay, y[i]);
        if (!dense) {
            marker(cr, px, py, radius);
            continue;
        }
        const long col = (long)floor(px);
        if (k.open && col != k.col) {
            marker(cr, k.cx, k.lo, radius);
            if (k.hi > k.lo) marker(cr, k.cx, k.hi, radius);
        }
        if (!k.open || col != k.col) k.open = true, k.col = col, k.cx = px, k.lo = k.hi = py;
        k.lo = fmin(k.lo, py), k.hi = fmax(k.hi, py);
    }
    if (k.open) {
        marker(cr, k.cx, k.lo, radius);
        if (k.hi > k.lo) marker(cr, k.cx, k.hi, radius);
    }
    plot_set_rgb(cr, c, 1);
    cairo_fill_preserve(cr);
    plot_set_rgb(cr, WHITE, 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

/* One line of points: a run's training or validation losses. */
typedef struct {
    const double *x, *y;
    size_t n;
} series;

/* The figure's series j: run j / 2's training (even j) or validation (odd j)
 * losses. */
static series series_at(const plot_loss_spec *s, size_t j)
{
    const plot_loss_run *run = &s->runs[j / 2];
    return j % 2 ? (series){run->val_step, run->val_loss, run->n_val}
                 : (series){run->step, run->loss, run->n};
}

/* Data range over every run's two series, padded by 4% (or around a
 * single value). */
static bool data_range(const plot_loss_spec *s, bool want_y, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (size_t j = 0; j < 2 * s->n_runs; j++) {
        const series q = series_at(s, j);
        for (size_t i = 0; i < q.n; i++) {
            if (!point_ok(q.x[i], q.y[i], s->log_y)) continue;
            double v = want_y ? (s->log_y ? log10(q.y[i]) : q.y[i]) : q.x[i];
            *lo = fmin(*lo, v), *hi = fmax(*hi, v);
        }
    }
    if (*lo > *hi) return false;
    if (*hi - *lo < 1e-12 * fmax(1, fabs(*hi))) {
        double pad = want_y ? (s->log_y ? 0.1 : fmax(fabs(*lo) * 0.1, 0.1)) : 1;
        *lo -= pad, *hi += pad;
    } else {
        double pad = (*hi - *lo) * 0.04;
        *lo -= pad, *hi += pad;
    }
    return true;
}

typedef struct {
    const char *label;
    rgb colour;
    double alpha, width; /* of the line */
    double marker;       /* radius; 0: none */
} legend_entry;

/* The number of points that would sit under a legend box at (x, y). */
static size_t covered(const plot_loss_spec *s, const axis *ax, const axis *ay, double x, double y,
                      double w, double h)
{
    size_t count = 0;
    for (size_t j = 0; j < 2 * s->n_runs; j++) {
        const series q = series_at(s, j);
        for (size_t i = 0; i < q.n; i++) {
            if (!point_ok(q.x[i], q.y[i], s->log_y)) continue;
            double u = plot_axis_px(ax, q.x[i]), v = plot_axis_px(ay, q.y[i]);
            count += u >= x - 6 && u <= x + w + 6 && v >= y - 6 && v <= y + h + 6;
        }
    }
    return count;
}

static void legend(cairo_t *cr, const plot_loss_spec *s, const axis *ax, const axis *ay,
                   const legend_entry *e, int n)
{
    plot_set_font(cr, TICK_PT, false);
    double line_h = plot_text_height(cr) + 6, sample_w = 28, pad = 8, w = 0;
    for (int i = 0; i < n; i++) w = fmax(w, plot_text_width(cr, e[i].label));
    w += sample_w + 8 + 2 * pad;
    double h = n * line_h + 2 * pad - 6;
    /* the corner hiding the fewest points: upper right, then the others */
    double left = ax->px0 + 10, right = ax->px1 - 10 - w;
    double top = ay->px1 + 10, bottom = ay->px0 - 10 - h;
    const double corners[4][2] = {{right, top}, {left, bottom}, {left, top}, {right, bottom}};
    size_t best = SIZE_MAX;
    double x = right, y = top;
    for (int c = 0; c < 4; c++) {
        size_t k = covered(s, ax, ay, corners[c][0], corners[c][1], w, h);
        if (k < best) best = k, x = corners[c][0], y = corners[c][1];
    }
    cairo_rectangle(cr, round(x) + 0.5, round(y) + 0.5, round(w), round(h));
    plot_set_rgb(cr, WHITE, 0.9);
    cairo_fill_preserve(cr);
    plot_set_rgb(cr, GRID, 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (int i = 0; i < n; i++) {
        double cy = y + pad + i * line_h + (line_h - 6) / 2, sx = x + pad;
        plot_set_rgb(cr, e[i].colour, e[i].alpha);
        cairo_set_line_width(cr, e[i].width);
        cairo_move_to(cr, sx, cy);
        cairo_line_to(cr, sx + sample_w, cy);
        cairo_stroke(cr);
        if (e[i].marker > 0) {
            cairo_arc(cr, sx + sample_w / 2, cy, e[i].marker, 0, 2 * PI);
            plot_set_rgb(cr, e[i].colour, 1);
            cairo_fill(cr);
        }
        plot_set_rgb(cr, INK, 1);
        plot_text_at(cr, sx + sample_w + 8, cy, e[i].label, 0);
    }
}

static clformer_status check_loss_spec(const char *path, const plot_loss_spec *s)
{
    if (!path || !*path || !s)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_loss_curves needs an output path and a spec");
    if (!s->runs || s->n_runs < 1 || s->n_runs > PLOT_MAX_RUNS)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_loss_curves: %zu runs given; one figure holds 1 to %d", s->n_runs,
                         PLOT_MAX_RUNS);
    size_t points = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        const plot_loss_run *run = &s->runs[r];
        if ((run->n && (!run->step || !run->loss)) ||
            (run->n_val && (!run->val_step || !run->val_loss)))
            return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                             "plot_loss_curves: a series with points needs both its step and loss "
                             "arrays");
        points += run->n + run->n_val;
    }
    if (!points)
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_loss_curves: no training or validation points to plot");
    if ((s->width || s->height) &&
        (s->width < 320 || s->width > 8192 || s->height < 240 || s->height > 8192))
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_loss_curves: size %d x %d is outside 320..8192 x 240..8192 pixels "
                         "(0 x 0 picks 960 x 560)",
                         s->width, s->height);
    return CLFORMER_OK;
}

/* Draws one run's curves in the clipped frame: the training loss (faint per
 * step with a smoothed line, or solid with markers when short) and the
 * validation loss as markers joined by a thin line. Runs compared in one
 * figure leave out the faint per-step line, which would hide the others. */
static clformer_status draw_run(cairo_t *cr, const axis *ax, const axis *ay,
                                const plot_loss_run *run, bool compare, rgb train, rgb val)
{
    const double plot_w = ax->px1 - ax->px0;
    const bool envelope = run->n > 2 * plot_w, smoothed = run->n >= SMOOTH_MIN_POINTS;
    if (run->n && !(smoothed && compare)) {
        path_series(cr, ax, ay, run->step, run->loss, run->n, envelope);
        plot_set_rgb(cr, train, smoothed ? 0.35 : 1);
        cairo_set_line_width(cr, smoothed ? 1 : 2);
        cairo_stroke(cr);
        if (!smoothed) markers(cr, ax, ay, run->step, run->loss, run->n, 3.5, train);
    }
    if (smoothed) {
        double *avg = malloc(run->n * sizeof *avg);
        if (!avg)
            return plot_fail(CLFORMER_ERR_OUT_OF_MEMORY,
                             "plot_loss_curves: no memory for %zu "
                             "points",
                             run->n);
        smooth(run->step, run->loss, run->n, ay->log, avg);
        path_series(cr, ax, ay, run->step, avg, run->n, envelope);
        free(avg);
        plot_set_rgb(cr, train, 1);
        cairo_set_line_width(cr, 2);
        cairo_stroke(cr);
    }
    if (run->n_val) {
        path_series(cr, ax, ay, run->val_step, run->val_loss, run->n_val, run->n_val > 2 * plot_w);
        plot_set_rgb(cr, val, 0.6);
        cairo_set_line_width(cr, 1.3);
        cairo_stroke(cr);
        markers(cr, ax, ay, run->val_step, run->val_loss, run->n_val, run->n_val > 150 ? 2.5 : 3.5,
                val);
    }
    return CLFORMER_OK;
}

/* Legend lines of one run: "training (per step)/(smoothed)" or "training",
 * and "validation", prefixed by the run's label when runs are compared. */
static int run_legend(const plot_loss_run *run, bool compare, rgb train, rgb val,
                      char text[3][LABEL_BYTES + 32], legend_entry *e)
{
    char clean[LABEL_BYTES + 8];
    const char *name = NULL;
    if (compare && run->label) {
        plot_utf8_clean(run->label, clean);
        name = clean;
    }
    int n = 0;
    const bool smoothed = run->n >= SMOOTH_MIN_POINTS;
#define LINE(what)                                                                                 \
    snprintf(text[n], sizeof text[n], "%s%s%s", name ? name : "", name ? ": " : "", what)
    if (run->n && smoothed && !compare) {
        LINE("training (per step)");
        e[n] = (legend_entry){text[n], train, 0.35, 1, 0}, n++;
    }
    if (run->n) {
        LINE(smoothed ? "training (smoothed)" : "training");
        e[n] = (legend_entry){text[n], train, 1, 2, smoothed ? 0 : 3.5}, n++;
    }
    if (run->n_val) {
        LINE("validation");
        e[n] = (legend_entry){text[n], val, 0.6, 1.3, 3.5}, n++;
    }
#undef LINE
    return n;
}

/* The note that the two curves measure different things, when they do: a
 * run's training loss includes label smoothing while validation's never
 * does. Fills `lines` with the note in one line, or two where one is wider
 * than max_w; returns how many (0: no run both smooths and validates). */
static int smoothing_note(cairo_t *cr, const plot_loss_spec *s, double max_w,
                          char lines[2][PLOT_NOTE_BYTES])
{
    bool applies = false;
    for (size_t r = 0; r < s->n_runs; r++)
        applies |= s->runs[r].label_smoothing && s->runs[r].n_val > 0;
    if (!applies) return 0;
    /* each line at most 40 characters: two fit the narrowest figure (320 px) */
    const bool compare = s->n_runs > 1;
    plot_set_font(cr, TICK_PT, false);
    snprintf(lines[0], PLOT_NOTE_BYTES, "training loss includes label smoothing%s; validation: "
             "plain cross-entropy", compare ? " (where used)" : "");
    if (plot_text_width(cr, lines[0]) <= max_w) return 1;
    snprintf(lines[0], PLOT_NOTE_BYTES, "training loss includes label smoothing");
    snprintf(lines[1], PLOT_NOTE_BYTES, "%s", compare ? "where used; validation: cross-entropy"
                                                      : "validation: plain cross-entropy");
    return 2;
}

int plot_loss_note(const plot_loss_spec *s, char lines[2][PLOT_NOTE_BYTES], double widths[2],
                   double *max_w)
{
    const int width = s->width ? s->width : 960;
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(surface);
    *max_w = width - 2 * MARGIN;
    const int n = smoothing_note(cr, s, *max_w, lines);
    for (int i = 0; i < n; i++) widths[i] = plot_text_width(cr, lines[i]);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    return n;
}

clformer_status plot_loss_curves(const char *png_path, const plot_loss_spec *s)
{
    CLI_TRY(check_loss_spec(png_path, s));
    axis ax = {0}, ay = {0};
    ay.log = s->log_y;
    if (!data_range(s, false, &ax.lo, &ax.hi) || !data_range(s, true, &ay.lo, &ay.hi))
        return plot_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                         "plot_loss_curves: no %s loss value to plot%s",
                         s->log_y ? "positive finite" : "finite",
                         s->log_y ? " (a log scale cannot show zero or negative losses)" : "");
    int width = s->width ? s->width : 960, height = s->height ? s->height : 560;
    cairo_t *cr;
    CLI_TRY(plot_new_canvas(width, height, "loss curves", png_path, &cr));

    /* Vertical layout first: the y ticks depend only on it, and their
     * label widths then set the left margin. */
    const char *title = s->title ? s->title : "Loss";
    const char *ylabel = s->log_y ? "loss (log scale)" : "loss";
    char title_buf[LABEL_BYTES + 8];
    plot_utf8_clean(title, title_buf);
    plot_set_font(cr, TITLE_PT, true);
    plot_fit_width(cr, title_buf, width - 2 * MARGIN);
    double title_h = plot_text_height(cr);
    plot_set_font(cr, TICK_PT, false);
    double tick_h = plot_text_height(cr);
    plot_set_font(cr, LABEL_PT, false);
    double label_h = plot_text_height(cr);
    /* the smoothing note, in a row of its own under the axis label: one line,
     * or two where the figure is too narrow for one (never cut) */
    char note[2][PLOT_NOTE_BYTES];
    const int note_lines = smoothing_note(cr, s, width - 2 * MARGIN, note);
    plot_set_font(cr, TICK_PT, false);
    const double note_h = note_lines ? note_lines * tick_h + 4 : 0;
    double top = round(MARGIN + title_h + 12) + 0.5;
    double bottom = round(height - MARGIN - note_h - label_h - 6 - tick_h - 8) + 0.5;
    ay.px0 = bottom, ay.px1 = top;
    plot_set_font(cr, TICK_PT, false);
    plot_choose_ticks(cr, &ay, false, 55, 0);
    double ytick_w = 0;
    for (int i = 0; i < ay.n; i++) ytick_w = fmax(ytick_w, plot_text_width(cr, ay.label[i]));
    double left = round(MARGIN + label_h + 8 + ytick_w + 8) + 0.5;
    double right = round(width - MARGIN - 8) + 0.5;
    ax.px0 = left, ax.px1 = right;
    plot_choose_ticks(cr, &ax, true, 100, 1);

    /* grid, ticks and their labels */
    cairo_set_line_width(cr, 1);
    plot_set_rgb(cr, GRID, 1);
    for (int i = 0; i < ax.n; i++) {
        double px = round(plot_axis_px(&ax, ax.at[i])) + 0.5;
        cairo_move_to(cr, px, top);
        cairo_line_to(cr, px, bottom);
    }
    for (int i = 0; i < ay.n; i++) {
        double py = round(plot_axis_px(&ay, ay.at[i])) + 0.5;
        cairo_move_to(cr, left, py);
        cairo_line_to(cr, right, py);
    }
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    cairo_stroke(cr);
    plot_set_rgb(cr, SOFT_INK, 1);
    for (int i = 0; i < ax.n; i++) {
        double px = round(plot_axis_px(&ax, ax.at[i])) + 0.5;
        cairo_move_to(cr, px, bottom);
        cairo_line_to(cr, px, bottom + 5);
    }
    for (int i = 0; i < ay.n; i++) {
        double py = round(plot_axis_px(&ay, ay.at[i])) + 0.5;
        cairo_move_to(cr, left - 5, py);
        cairo_line_to(cr, left, py);
    }
    if (ay.log && ay.hi - ay.lo < 4) /* unlabelled minor ticks at 1..9 x 10^k */
        for (int d = (int)floor(ay.lo); d <= (int)ceil(ay.hi); d++)
            for (int m = 1; m <= 9; m++) {
                double t = log10(m) + d;
                if (t < ay.lo || t > ay.hi) continue;
                double py = round(plot_axis_px(&ay, pow(10, t))) + 0.5;
                cairo_move_to(cr, left - 3, py);
                cairo_line_to(cr, left, py);
            }
    cairo_stroke(cr);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (int i = 0; i < ax.n; i++)
        plot_text_at(cr, round(plot_axis_px(&ax, ax.at[i])) + 0.5, bottom + 8 + tick_h / 2,
                     ax.label[i], 0.5);
    for (int i = 0; i < ay.n; i++)
        plot_text_at(cr, left - 8, round(plot_axis_px(&ay, ay.at[i])) + 0.5, ay.label[i], 1);
    cairo_new_path(cr); /* plot_text_at's moves */

    /* the series, clipped to the frame */
    cairo_save(cr);
    cairo_rectangle(cr, left, top, right - left, bottom - top);
    cairo_clip(cr);
    const bool compare = s->n_runs > 1;
    for (size_t r = 0; r < s->n_runs; r++) {
        const rgb train = compare ? RUN_COLOURS[r] : TRAIN, val = compare ? RUN_COLOURS[r] : VAL;
        clformer_status st = draw_run(cr, &ax, &ay, &s->runs[r], compare, train, val);
        if (st != CLFORMER_OK) {
            cairo_destroy(cr);
            return st;
        }
    }
    cairo_restore(cr);

    /* frame, axis labels, title, legend */
    plot_set_rgb(cr, SOFT_INK, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, left, top, right - left, bottom - top);
    cairo_stroke(cr);
    plot_set_rgb(cr, INK, 1);
    plot_set_font(cr, LABEL_PT, false);
    plot_text_at(cr, (left + right) / 2, height - MARGIN - note_h - label_h / 2, "step", 0.5);
    plot_set_font(cr, TICK_PT, false);
    plot_set_rgb(cr, SOFT_INK, 1);
    for (int i = 0; i < note_lines; i++)
        plot_text_at(cr, width / 2.0, height - MARGIN - (note_lines - i - 0.5) * tick_h, note[i],
                     0.5);
    plot_set_rgb(cr, INK, 1);
    plot_text_turned(cr, MARGIN + label_h / 2, (top + bottom) / 2, -PI / 2, ylabel, 0.5);
    plot_set_font(cr, TITLE_PT, true);
    plot_text_at(cr, width / 2.0, MARGIN + title_h / 2, title_buf, 0.5);
    legend_entry entries[3 * PLOT_MAX_RUNS];
    char text[3 * PLOT_MAX_RUNS][LABEL_BYTES + 32];
    int n_entries = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        const rgb train = compare ? RUN_COLOURS[r] : TRAIN, val = compare ? RUN_COLOURS[r] : VAL;
        n_entries += run_legend(&s->runs[r], compare, train, val,
                                (char(*)[LABEL_BYTES + 32]) text[n_entries], entries + n_entries);
    }
    legend(cr, s, &ax, &ay, entries, n_entries);

    clformer_status st = plot_save_png(cr, "loss curves", png_path);
    cairo_destroy(cr);
    return st;
}
