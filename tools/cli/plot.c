/*
 * Loss curves and attention heatmaps drawn with cairo's image surface and
 * its toy text API, written as PNG.
 *
 * Layout is computed from measured text, so labels never overlap: tick sets
 * get sparser until their labels fit, long tokens are shortened with an
 * ellipsis, and token labels are thinned out when cells are smaller than a
 * line of text. Everything is in pixels of the output image.
 */
#include "plot.h"
#include "cli.h"

#include <cairo.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Failures are reported the library's way: a status, and the message in
 * clformer_last_error(). */
#define fail clformer_set_error

/* ------------------------------------------------------------------------- */
/* Style                                                                      */
/* ------------------------------------------------------------------------- */

typedef struct {
    double r, g, b;
} rgb;

static const rgb WHITE = {1, 1, 1};
static const rgb INK = {0.13, 0.13, 0.13};      /* text */
static const rgb SOFT_INK = {0.33, 0.33, 0.33}; /* tick labels, frames */
static const rgb GRID = {0.90, 0.90, 0.90};
static const rgb TRAIN = {0.12, 0.47, 0.71};
static const rgb VAL = {0.85, 0.37, 0.01};
/* Runs compared in one figure: one colour each, for training and validation
 * alike (the first two are TRAIN and VAL; the rest stay apart from both). */
static const rgb RUN_COLOURS[PLOT_MAX_RUNS] = {
    {0.12, 0.47, 0.71}, {0.85, 0.37, 0.01}, {0.17, 0.63, 0.17},
    {0.84, 0.15, 0.16}, {0.58, 0.40, 0.74}, {0.55, 0.34, 0.29},
};
static const rgb MISSING = {0.82, 0.82, 0.82}; /* NaN heatmap cells */

#define FONT_FAMILY "sans-serif"
#define TITLE_PT 16.0
#define LABEL_PT 13.0
#define TICK_PT 12.0
#define TOKEN_PT 11.0
#define MARGIN 16.0
#define PI 3.14159265358979323846

/* A perceptually uniform dark-to-light map (viridis), sampled at 10 even
 * stops and interpolated linearly. Readable in greyscale and by most
 * colour-blind readers, unlike a rainbow map. */
static const rgb COLORMAP[] = {
    {0x44 / 255., 0x01 / 255., 0x54 / 255.}, {0x48 / 255., 0x28 / 255., 0x78 / 255.},
    {0x3e / 255., 0x49 / 255., 0x89 / 255.}, {0x31 / 255., 0x68 / 255., 0x8e / 255.},
    {0x26 / 255., 0x82 / 255., 0x8e / 255.}, {0x1f / 255., 0x9e / 255., 0x89 / 255.},
    {0x35 / 255., 0xb7 / 255., 0x79 / 255.}, {0x6e / 255., 0xce / 255., 0x58 / 255.},
    {0xb5 / 255., 0xde / 255., 0x2b / 255.}, {0xfd / 255., 0xe7 / 255., 0x25 / 255.},
};
enum { N_COLORMAP = sizeof COLORMAP / sizeof COLORMAP[0] };

static rgb colormap(double t)
{
    if (!(t > 0)) t = 0; /* also NaN */
    if (t > 1) t = 1;
    double f = t * (N_COLORMAP - 1);
    int i = (int)f;
    if (i >= N_COLORMAP - 1) return COLORMAP[N_COLORMAP - 1];
    double u = f - i;
    const rgb *a = &COLORMAP[i], *b = &COLORMAP[i + 1];
    return (rgb){a->r + u * (b->r - a->r), a->g + u * (b->g - a->g), a->b + u * (b->b - a->b)};
}

static void set_rgb(cairo_t *cr, rgb c, double alpha)
{
    cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

static void set_font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------------------- */
/* Text                                                                       */
/* ------------------------------------------------------------------------- */

static double text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t te;
    cairo_text_extents(cr, s, &te);
    return te.x_advance;
}

/* Line height of the current font: ascent + descent. */
static double text_height(cairo_t *cr)
{
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    return fe.ascent + fe.descent;
}

/* Draws s with (x, y) at its left (halign 0), centre (0.5) or right end (1),
 * vertically centred on y by the font's ascent and descent, so that labels
 * of one row share a baseline whatever their letters. */
static void text_at(cairo_t *cr, double x, double y, const char *s, double halign)
{
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    cairo_move_to(cr, x - halign * text_width(cr, s), y + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, s);
}

/* The same, turned by `angle` radians about (x, y); -pi/2 reads upwards. */
static void text_turned(cairo_t *cr, double x, double y, double angle, const char *s,
                        double halign)
{
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, angle);
    text_at(cr, 0, 0, s, halign);
    cairo_restore(cr);
}

/* Labels are cut to this many bytes before they are measured. */
enum { LABEL_BYTES = 256 };

/* Copies s into out as valid UTF-8 of at most LABEL_BYTES bytes: cairo
 * refuses invalid strings (and then draws nothing more), so malformed bytes
 * and control characters become U+FFFD. */
static void utf8_clean(const char *s, char out[LABEL_BYTES + 8])
{
    static const char REPLACEMENT[] = "\xEF\xBF\xBD";
    const size_t n = strlen(s);
    size_t o = 0, i = 0;
    while (i < n) {
        /* The character the lead byte announces, kept when those bytes are
         * one well-formed character and not an ASCII control character. */
        const unsigned c = (unsigned char)s[i];
        const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        const bool ok = len <= n - i && clformer_utf8_valid(s + i, len, NULL) &&
                        !(c < 0x20 || c == 0x7F);
        const char *piece = ok ? s + i : REPLACEMENT;
        const size_t size = ok ? len : 3;
        if (o + size > LABEL_BYTES) break;
        memcpy(out + o, piece, size);
        o += size;
        i += ok ? len : 1;
    }
    out[o] = '\0';
}

/* Shortens s (from utf8_clean) at a character boundary, adding an
 * ellipsis, until it is at most max_w pixels wide. */
static void fit_width(cairo_t *cr, char s[LABEL_BYTES + 8], double max_w)
{
    if (text_width(cr, s) <= max_w) return;
    size_t len = strlen(s);
    while (len > 0) {
        do len--;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80);
        memcpy(s + len, "\xE2\x80\xA6", 4); /* U+2026 and the terminator */
        if (text_width(cr, s) <= max_w) return;
    }
}

/* ------------------------------------------------------------------------- */
/* Axes and ticks                                                             */
/* ------------------------------------------------------------------------- */

enum { MAX_TICKS = 40 };

typedef struct {
    double lo, hi;   /* shown range; log10 of the values on a log axis */
    bool log;
    double px0, px1; /* pixel positions of lo and hi */
    int n;
    double at[MAX_TICKS]; /* tick values (not logged) */
    char label[MAX_TICKS][24];
} axis;

static double axis_px(const axis *a, double v)
{
    double t = a->log ? log10(v) : v;
    return a->px0 + (t - a->lo) / (a->hi - a->lo) * (a->px1 - a->px0);
}

/* 1, 2 or 5 times a power of ten, close to range / count. */
static double nice_step(double range, int count)
{
    double raw = range / count;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* Tick label with as many decimals as the tick step needs; steps of
 * thousands and millions are written 20k, 1.5M so that labels stay short. */
static void format_tick(char *buf, size_t cap, double v, double step)
{
    const char *suffix = "";
    if (fabs(v) < step * 1e-6) v = 0; /* no "-0" */
    if (v != 0 && step >= 1e6) { /* and 0, not "0k" */
        v /= 1e6, step /= 1e6, suffix = "M";
    } else if (v != 0 && step >= 1e3) {
        v /= 1e3, step /= 1e3, suffix = "k";
    }
    int decimals = (int)clampd(-floor(log10(step) + 1e-9), 0, 9);
    snprintf(buf, cap, "%.*f%s", decimals, v, suffix);
}

static void ticks_linear(axis *a, int count, double min_step)
{
    double lo = a->log ? pow(10, a->lo) : a->lo, hi = a->log ? pow(10, a->hi) : a->hi;
    double step = nice_step(hi - lo, count);
    if (step < min_step) step = min_step;
    double first = ceil(lo / step - 1e-9);
    a->n = 0;
    for (int i = 0; a->n < MAX_TICKS; i++) {
        double v = (first + i) * step;
        if (v > hi + step * 1e-9) break;
        a->at[a->n] = v;
        format_tick(a->label[a->n], sizeof a->label[0], v, step);
        a->n++;
    }
}

/* Log-axis ticks: the mantissas of `set` in every decade (sets 0 to
 * N_MANTISSA_SETS - 1, densest first), or beyond that only powers of ten,
 * every (set - N_MANTISSA_SETS + 2)th. */
enum { N_MANTISSA_SETS = 4 };

static void ticks_log(axis *a, int set)
{
    static const int mantissas[N_MANTISSA_SETS][10] = {
        {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 5, 7}, {1, 2, 5}, {1}};
    int stride = set >= N_MANTISSA_SETS ? set - N_MANTISSA_SETS + 2 : 1;
    const int *m = mantissas[set >= N_MANTISSA_SETS ? N_MANTISSA_SETS - 1 : set];
    a->n = 0;
    for (int d = (int)floor(a->lo / stride) * stride; d <= (int)ceil(a->hi); d += stride)
        for (int k = 0; k < 10 && m[k] && a->n < MAX_TICKS; k++) {
            double v = m[k] * pow(10, d);
            double t = log10(v);
            if (t < a->lo - 1e-9 || t > a->hi + 1e-9) continue;
            a->at[a->n] = v;
            snprintf(a->label[a->n], sizeof a->label[0], "%g", v);
            a->n++;
        }
}

/* Whether neighbouring tick labels keep clear of each other. */
static bool ticks_fit(cairo_t *cr, const axis *a, bool horizontal)
{
    for (int i = 1; i < a->n; i++) {
        double gap = fabs(axis_px(a, a->at[i]) - axis_px(a, a->at[i - 1]));
        double need = horizontal ? (text_width(cr, a->label[i]) +
                                    text_width(cr, a->label[i - 1])) / 2 + 16
                                 : text_height(cr) + 14;
        if (gap < need) return false;
    }
    return true;
}

/* Picks the densest tick set, up to about one per `spacing` pixels, whose
 * labels fit (measured with the current font). */
static void choose_ticks(cairo_t *cr, axis *a, bool horizontal, double spacing, double min_step)
{
    int target = (int)clampd(fabs(a->px1 - a->px0) / spacing, 2, 10);
    if (a->log) {
        /* Powers of ten and their multiples; when those give fewer than
         * three ticks (a range within a decade or so), evenly spaced values
         * as on a linear axis, placed logarithmically. */
        for (int set = 0; set < N_MANTISSA_SETS + 10; set++) {
            ticks_log(a, set);
            if (a->n < 2) break;
            if (a->n < 3 && set < N_MANTISSA_SETS) continue;
            if (a->n <= target + 1 && ticks_fit(cr, a, horizontal)) return;
        }
    }
    for (int count = target; count >= 1; count--) {
        ticks_linear(a, count, min_step);
        if (ticks_fit(cr, a, horizontal)) return;
    }
}

/* ------------------------------------------------------------------------- */
/* Output                                                                     */
/* ------------------------------------------------------------------------- */

static cairo_status_t write_chunk(void *file, const unsigned char *data, unsigned int len)
{
    return clformer_atomic_file_write(file, data, len) == CLFORMER_OK ? CAIRO_STATUS_SUCCESS
                                                                       : CAIRO_STATUS_WRITE_ERROR;
}

static clformer_status cairo_failure(cairo_status_t st, const char *what, const char *path)
{
    return fail(st == CAIRO_STATUS_NO_MEMORY ? CLFORMER_ERR_OUT_OF_MEMORY
                                             : CLFORMER_ERR_INVALID_ARGUMENT,
                "drawing %s for '%s': cairo: %s", what, path, cairo_status_to_string(st));
}

/* Writes the PNG atomically: `path` appears only complete. */
static clformer_status save_png(cairo_t *cr, const char *what, const char *path)
{
    cairo_surface_t *s = cairo_get_target(cr);
    cairo_surface_flush(s);
    cairo_status_t st = cairo_status(cr);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
    if (st != CAIRO_STATUS_SUCCESS) return cairo_failure(st, what, path);
    clformer_atomic_file *f = NULL;
    char cause[1024]; /* the file error, copied: fail() rewrites clformer_last_error() */
    if (clformer_atomic_file_open(path, &f) != CLFORMER_OK) {
        snprintf(cause, sizeof cause, "%s", clformer_last_error());
        return fail(CLFORMER_ERR_IO, "cannot write the %s: %s", what, cause);
    }
    st = cairo_surface_write_to_png_stream(s, write_chunk, f);
    if (st != CAIRO_STATUS_SUCCESS) {
        snprintf(cause, sizeof cause, "%s",
                 st == CAIRO_STATUS_WRITE_ERROR ? clformer_last_error()
                                                : cairo_status_to_string(st));
        clformer_atomic_file_abort(f);
        return fail(CLFORMER_ERR_IO, "writing the %s to '%s' failed: %s", what, path, cause);
    }
    return clformer_atomic_file_commit(f);
}

static clformer_status new_canvas(int width, int height, const char *what, const char *path,
                                  cairo_t **out)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    cairo_t *cr = cairo_create(s);
    cairo_surface_destroy(s); /* cr holds the reference */
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        clformer_status st = cairo_failure(cairo_status(cr), what, path);
        cairo_destroy(cr);
        return st;
    }
    set_rgb(cr, WHITE, 1);
    cairo_paint(cr);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    *out = cr;
    return CLFORMER_OK;
}

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
    double span = clampd(n / 40.0, 1, 500);
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
        double px = axis_px(ax, x[i]), py = axis_px(ay, y[i]);
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

static void markers(cairo_t *cr, const axis *ax, const axis *ay, const double *x,
                    const double *y, size_t n, double radius, rgb c)
{
    for (size_t i = 0; i < n; i++) {
        if (!point_ok(x[i], y[i], ay->log)) continue;
        cairo_new_sub_path(cr);
        cairo_arc(cr, axis_px(ax, x[i]), axis_px(ay, y[i]), radius, 0, 2 * PI);
    }
    set_rgb(cr, c, 1);
    cairo_fill_preserve(cr);
    set_rgb(cr, WHITE, 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
}

/* Data range over every run's two series, padded by 4% (or around a
 * single value). */
static bool data_range(const plot_loss_spec *s, bool want_y, double *lo, double *hi)
{
    *lo = INFINITY, *hi = -INFINITY;
    for (size_t r = 0; r < s->n_runs; r++)
        for (int k = 0; k < 2; k++) {
            const plot_loss_run *run = &s->runs[r];
            const double *x = k ? run->val_step : run->step, *y = k ? run->val_loss : run->loss;
            size_t n = k ? run->n_val : run->n;
            for (size_t i = 0; i < n; i++) {
                if (!point_ok(x[i], y[i], s->log_y)) continue;
                double v = want_y ? (s->log_y ? log10(y[i]) : y[i]) : x[i];
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
static size_t covered(const plot_loss_spec *s, const axis *ax, const axis *ay, double x,
                      double y, double w, double h)
{
    size_t count = 0;
    for (size_t r = 0; r < s->n_runs; r++)
        for (int k = 0; k < 2; k++) {
            const plot_loss_run *run = &s->runs[r];
            const double *px = k ? run->val_step : run->step, *py = k ? run->val_loss : run->loss;
            size_t n = k ? run->n_val : run->n;
            for (size_t i = 0; i < n; i++) {
                if (!point_ok(px[i], py[i], s->log_y)) continue;
                double u = axis_px(ax, px[i]), v = axis_px(ay, py[i]);
                count += u >= x - 6 && u <= x + w + 6 && v >= y - 6 && v <= y + h + 6;
            }
        }
    return count;
}

static void legend(cairo_t *cr, const plot_loss_spec *s, const axis *ax, const axis *ay,
                   const legend_entry *e, int n)
{
    set_font(cr, TICK_PT, false);
    double line_h = text_height(cr) + 6, sample_w = 28, pad = 8, w = 0;
    for (int i = 0; i < n; i++) w = fmax(w, text_width(cr, e[i].label));
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
    set_rgb(cr, WHITE, 0.9);
    cairo_fill_preserve(cr);
    set_rgb(cr, GRID, 1);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    for (int i = 0; i < n; i++) {
        double cy = y + pad + i * line_h + (line_h - 6) / 2, sx = x + pad;
        set_rgb(cr, e[i].colour, e[i].alpha);
        cairo_set_line_width(cr, e[i].width);
        cairo_move_to(cr, sx, cy);
        cairo_line_to(cr, sx + sample_w, cy);
        cairo_stroke(cr);
        if (e[i].marker > 0) {
            cairo_arc(cr, sx + sample_w / 2, cy, e[i].marker, 0, 2 * PI);
            set_rgb(cr, e[i].colour, 1);
            cairo_fill(cr);
        }
        set_rgb(cr, INK, 1);
        text_at(cr, sx + sample_w + 8, cy, e[i].label, 0);
    }
}

static clformer_status check_loss_spec(const char *path, const plot_loss_spec *s)
{
    if (!path || !*path || !s)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_loss_curves needs an output path and a spec");
    if (!s->runs || s->n_runs < 1 || s->n_runs > PLOT_MAX_RUNS)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_loss_curves: %zu runs given; one figure holds 1 to %d", s->n_runs,
                    PLOT_MAX_RUNS);
    size_t points = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        const plot_loss_run *run = &s->runs[r];
        if ((run->n && (!run->step || !run->loss)) ||
            (run->n_val && (!run->val_step || !run->val_loss)))
            return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                        "plot_loss_curves: a series with points needs both its step and loss "
                        "arrays");
        points += run->n + run->n_val;
    }
    if (!points)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_loss_curves: no training or validation points to plot");
    if ((s->width || s->height) &&
        (s->width < 320 || s->width > 8192 || s->height < 240 || s->height > 8192))
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
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
        set_rgb(cr, train, smoothed ? 0.35 : 1);
        cairo_set_line_width(cr, smoothed ? 1 : 2);
        cairo_stroke(cr);
        if (!smoothed) markers(cr, ax, ay, run->step, run->loss, run->n, 3.5, train);
    }
    if (smoothed) {
        double *avg = malloc(run->n * sizeof *avg);
        if (!avg)
            return fail(CLFORMER_ERR_OUT_OF_MEMORY, "plot_loss_curves: no memory for %zu "
                        "points", run->n);
        smooth(run->step, run->loss, run->n, ay->log, avg);
        path_series(cr, ax, ay, run->step, avg, run->n, envelope);
        free(avg);
        set_rgb(cr, train, 1);
        cairo_set_line_width(cr, 2);
        cairo_stroke(cr);
    }
    if (run->n_val) {
        path_series(cr, ax, ay, run->val_step, run->val_loss, run->n_val, false);
        set_rgb(cr, val, 0.6);
        cairo_set_line_width(cr, 1.3);
        cairo_stroke(cr);
        markers(cr, ax, ay, run->val_step, run->val_loss, run->n_val,
                run->n_val > 150 ? 2.5 : 3.5, val);
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
        utf8_clean(run->label, clean);
        name = clean;
    }
    int n = 0;
    const bool smoothed = run->n >= SMOOTH_MIN_POINTS;
#define LINE(what) snprintf(text[n], sizeof text[n], "%s%s%s", name ? name : "", name ? ": " : "", what)
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

clformer_status plot_loss_curves(const char *png_path, const plot_loss_spec *s)
{
    CLI_TRY(check_loss_spec(png_path, s));
    axis ax = {0}, ay = {0};
    ay.log = s->log_y;
    if (!data_range(s, false, &ax.lo, &ax.hi) || !data_range(s, true, &ay.lo, &ay.hi))
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_loss_curves: no %s loss value to plot%s",
                    s->log_y ? "positive finite" : "finite",
                    s->log_y ? " (a log scale cannot show zero or negative losses)" : "");
    int width = s->width ? s->width : 960, height = s->height ? s->height : 560;
    cairo_t *cr;
    CLI_TRY(new_canvas(width, height, "loss curves", png_path, &cr));

    /* Vertical layout first: the y ticks depend only on it, and their
     * label widths then set the left margin. */
    const char *title = s->title ? s->title : "Loss";
    const char *ylabel = s->log_y ? "loss (log scale)" : "loss";
    char title_buf[LABEL_BYTES + 8];
    utf8_clean(title, title_buf);
    set_font(cr, TITLE_PT, true);
    fit_width(cr, title_buf, width - 2 * MARGIN);
    double title_h = text_height(cr);
    set_font(cr, TICK_PT, false);
    double tick_h = text_height(cr);
    set_font(cr, LABEL_PT, false);
    double label_h = text_height(cr);
    double top = round(MARGIN + title_h + 12) + 0.5;
    double bottom = round(height - MARGIN - label_h - 6 - tick_h - 8) + 0.5;
    ay.px0 = bottom, ay.px1 = top;
    set_font(cr, TICK_PT, false);
    choose_ticks(cr, &ay, false, 55, 0);
    double ytick_w = 0;
    for (int i = 0; i < ay.n; i++) ytick_w = fmax(ytick_w, text_width(cr, ay.label[i]));
    double left = round(MARGIN + label_h + 8 + ytick_w + 8) + 0.5;
    double right = round(width - MARGIN - 8) + 0.5;
    ax.px0 = left, ax.px1 = right;
    choose_ticks(cr, &ax, true, 100, 1);

    /* grid, ticks and their labels */
    cairo_set_line_width(cr, 1);
    set_rgb(cr, GRID, 1);
    for (int i = 0; i < ax.n; i++) {
        double px = round(axis_px(&ax, ax.at[i])) + 0.5;
        cairo_move_to(cr, px, top);
        cairo_line_to(cr, px, bottom);
    }
    for (int i = 0; i < ay.n; i++) {
        double py = round(axis_px(&ay, ay.at[i])) + 0.5;
        cairo_move_to(cr, left, py);
        cairo_line_to(cr, right, py);
    }
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    cairo_stroke(cr);
    set_rgb(cr, SOFT_INK, 1);
    for (int i = 0; i < ax.n; i++) {
        double px = round(axis_px(&ax, ax.at[i])) + 0.5;
        cairo_move_to(cr, px, bottom);
        cairo_line_to(cr, px, bottom + 5);
    }
    for (int i = 0; i < ay.n; i++) {
        double py = round(axis_px(&ay, ay.at[i])) + 0.5;
        cairo_move_to(cr, left - 5, py);
        cairo_line_to(cr, left, py);
    }
    if (ay.log && ay.hi - ay.lo < 4) /* unlabelled minor ticks at 1..9 x 10^k */
        for (int d = (int)floor(ay.lo); d <= (int)ceil(ay.hi); d++)
            for (int m = 1; m <= 9; m++) {
                double t = log10(m) + d;
                if (t < ay.lo || t > ay.hi) continue;
                double py = round(axis_px(&ay, pow(10, t))) + 0.5;
                cairo_move_to(cr, left - 3, py);
                cairo_line_to(cr, left, py);
            }
    cairo_stroke(cr);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (int i = 0; i < ax.n; i++)
        text_at(cr, round(axis_px(&ax, ax.at[i])) + 0.5, bottom + 8 + tick_h / 2, ax.label[i],
                0.5);
    for (int i = 0; i < ay.n; i++)
        text_at(cr, left - 8, round(axis_px(&ay, ay.at[i])) + 0.5, ay.label[i], 1);
    cairo_new_path(cr); /* text_at's moves */

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
    set_rgb(cr, SOFT_INK, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, left, top, right - left, bottom - top);
    cairo_stroke(cr);
    set_rgb(cr, INK, 1);
    set_font(cr, LABEL_PT, false);
    text_at(cr, (left + right) / 2, height - MARGIN - label_h / 2, "step", 0.5);
    text_turned(cr, MARGIN + label_h / 2, (top + bottom) / 2, -PI / 2, ylabel, 0.5);
    set_font(cr, TITLE_PT, true);
    text_at(cr, width / 2.0, MARGIN + title_h / 2, title_buf, 0.5);
    legend_entry entries[3 * PLOT_MAX_RUNS];
    char text[3 * PLOT_MAX_RUNS][LABEL_BYTES + 32];
    int n_entries = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        const rgb train = compare ? RUN_COLOURS[r] : TRAIN, val = compare ? RUN_COLOURS[r] : VAL;
        n_entries += run_legend(&s->runs[r], compare, train, val,
                                (char(*)[LABEL_BYTES + 32])text[n_entries], entries + n_entries);
    }
    legend(cr, s, &ax, &ay, entries, n_entries);

    clformer_status st = save_png(cr, "loss curves", png_path);
    cairo_destroy(cr);
    return st;
}

/* ------------------------------------------------------------------------- */
/* Attention heatmaps                                                         */
/* ------------------------------------------------------------------------- */

#define MAX_TOKEN_PX 150.0 /* longer token labels get an ellipsis */
#define TOKEN_PITCH 13.0   /* the smallest cell that holds a label */
#define PANEL_GAP 18.0

typedef struct {
    int panels, grid_cols, grid_rows;
    double cw, ch;             /* cell width and height in pixels */
    int stride_r, stride_c;    /* label every stride-th row / column */
    double pw, ph;             /* one panel's matrix size */
    double x0, y0;             /* top-left of panel 0's matrix */
    double step_x, step_y;     /* from one panel's matrix to the next */
    double panel_title_h;
    double row_label_w, col_label_h;
    double cb_x, cb_y, cb_h;   /* colour bar */
    double vmin, vmax;
    axis cb_axis;
    double title_h;
    int width, height;
} attn_layout;

static void token_label(cairo_t *cr, const char *const *tokens, int i, char out[LABEL_BYTES + 8])
{
    if (tokens && tokens[i]) utf8_clean(tokens[i], out);
    else if (tokens) out[0] = '\0';
    else snprintf(out, LABEL_BYTES, "%d", i);
    fit_width(cr, out, MAX_TOKEN_PX);
}

static double widest_label(cairo_t *cr, const char *const *tokens, int n, int stride)
{
    char buf[LABEL_BYTES + 8];
    double w = 0;
    for (int i = 0; i < n; i += stride) {
        token_label(cr, tokens, i, buf);
        w = fmax(w, text_width(cr, buf));
    }
    return w;
}

/* Labels every 1, 2, 5, 10, 20 ... positions: the smallest such stride
 * that is at least `min`. */
static int nice_stride(double min)
{
    for (int stride = 1;; stride *= 10) {
        if (stride >= min) return stride;
        if (2 * stride >= min) return 2 * stride;
        if (5 * stride >= min) return 5 * stride;
    }
}

static float panel_value(const plot_attention_spec *s, int panel, int r, int c)
{
    size_t plane = (size_t)s->rows * s->cols, at = (size_t)r * s->cols + c;
    if (s->mode == PLOT_ATTENTION_PANELS) return s->weights[panel * plane + at];
    /* the mean over heads of the finite values */
    double sum = 0;
    int n = 0;
    for (int h = 0; h < s->heads; h++) {
        float v = s->weights[h * plane + at];
        if (isfinite(v)) sum += v, n++;
    }
    return n ? (float)(sum / n) : NAN;
}

static clformer_status check_attention_spec(const plot_attention_spec *s)
{
    if (!s || !s->weights)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT, "plot_attention needs a spec with weights");
    if (s->heads < 1 || s->rows < 1 || s->cols < 1)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_attention: heads, rows and cols must be positive, got %d x %d x %d",
                    s->heads, s->rows, s->cols);
    if (s->rows > 4096 || s->cols > 4096 || s->heads > 256)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_attention: %d heads of %d x %d is too large to draw (at most 256 "
                    "heads of 4096 x 4096); pass a slice",
                    s->heads, s->rows, s->cols);
    if (s->mode != PLOT_ATTENTION_PANELS && s->mode != PLOT_ATTENTION_MEAN)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT, "plot_attention: unknown mode %d",
                    (int)s->mode);
    return CLFORMER_OK;
}

/* Sizes everything from the matrix shape and the measured labels. */
static void layout_attention(cairo_t *cr, const plot_attention_spec *s, attn_layout *L)
{
    memset(L, 0, sizeof *L);
    int P = L->panels = s->mode == PLOT_ATTENTION_MEAN ? 1 : s->heads;
    /* a near-square grid with the fewest empty slots: 8 heads -> 4 x 2 */
    int gc = (int)ceil(sqrt(P));
    int empty = gc * ((P + gc - 1) / gc) - P, empty_wider = (gc + 1) * ((P + gc) / (gc + 1)) - P;
    if (empty_wider < empty) gc++;
    L->grid_cols = gc;
    L->grid_rows = (P + gc - 1) / gc;

    int longest = s->rows > s->cols ? s->rows : s->cols;
    double target = P == 1 ? 560 : fmax(160, 1100.0 / gc);
    double cell = target / longest;
    if (cell >= 8) { /* whole-pixel squares */
        cell = fmin(floor(cell), P == 1 ? 40 : 28);
        L->pw = s->cols * cell, L->ph = s->rows * cell;
    } else { /* dense maps: whole-pixel panels, cells a little uneven */
        L->pw = fmax(1, floor(s->cols * cell)), L->ph = fmax(1, floor(s->rows * cell));
    }
    L->cw = L->pw / s->cols, L->ch = L->ph / s->rows;
    L->stride_r = nice_stride(TOKEN_PITCH / L->ch);
    L->stride_c = nice_stride(TOKEN_PITCH / L->cw);

    set_font(cr, TOKEN_PT, false);
    L->row_label_w = widest_label(cr, s->tgt_tokens, s->rows, L->stride_r);
    L->col_label_h = widest_label(cr, s->src_tokens, s->cols, L->stride_c);
    set_font(cr, LABEL_PT, false);
    double name_h = text_height(cr);
    set_font(cr, TOKEN_PT, true);
    char widest[64];
    snprintf(widest, sizeof widest, s->mode == PLOT_ATTENTION_MEAN ? "mean of %d heads"
                                                                     : "head %d",
             s->heads - (s->mode == PLOT_ATTENTION_PANELS));
    double panel_title_w = text_width(cr, widest);
    L->panel_title_h = s->mode == PLOT_ATTENTION_MEAN || P > 1 ? text_height(cr) + 6 : 0;
    set_font(cr, TITLE_PT, true);
    L->title_h = s->title ? text_height(cr) + 14 : 0;

    double gap_x = fmax(PANEL_GAP, panel_title_w + 10 - L->pw);
    L->step_x = L->pw + gap_x;
    L->step_y = L->ph + PANEL_GAP + L->panel_title_h;
    L->x0 = round(MARGIN + name_h + 8 + L->row_label_w + 6);
    L->y0 = round(MARGIN + L->title_h + L->panel_title_h);
    double grid_w = (gc - 1) * L->step_x + L->pw;
    double grid_h = (L->grid_rows - 1) * L->step_y + L->ph;

    /* colour scale over every panel, so that panels compare */
    L->vmin = 0, L->vmax = -INFINITY;
    for (int p = 0; p < P; p++)
        for (int r = 0; r < s->rows; r++)
            for (int c = 0; c < s->cols; c++) {
                float v = panel_value(s, p, r, c);
                if (isfinite(v)) L->vmin = fmin(L->vmin, v), L->vmax = fmax(L->vmax, v);
            }
    if (!(L->vmax > L->vmin)) L->vmax = L->vmin + 1;
    L->cb_x = round(L->x0 + grid_w + 24);
    L->cb_y = L->y0;
    L->cb_h = fmax(grid_h, 120);
    axis *a = &L->cb_axis;
    a->lo = L->vmin, a->hi = L->vmax, a->px0 = L->cb_y + L->cb_h, a->px1 = L->cb_y;
    set_font(cr, TICK_PT, false);
    choose_ticks(cr, a, false, 40, 0);
    double tick_w = 0;
    for (int i = 0; i < a->n; i++) tick_w = fmax(tick_w, text_width(cr, a->label[i]));

    double w = L->cb_x + 14 + 8 + tick_w + 10 + name_h + MARGIN;
    double h = fmax(L->y0 + grid_h + 6 + L->col_label_h + 8 + name_h,
                    L->cb_y + L->cb_h + text_height(cr) / 2) + MARGIN;
    if (s->title) {
        char t[LABEL_BYTES + 8];
        utf8_clean(s->title, t);
        set_font(cr, TITLE_PT, true);
        w = fmax(w, fmin(text_width(cr, t), 1200) + 2 * MARGIN);
    }
    L->width = (int)ceil(w);
    L->height = (int)ceil(h);
}

static void panel_origin(const attn_layout *L, int p, double *x, double *y)
{
    *x = L->x0 + (p % L->grid_cols) * L->step_x;
    *y = L->y0 + (p / L->grid_cols) * L->step_y;
}

/* Paints one panel's cells through a one-pixel-per-cell image, scaled up
 * without smoothing so that cells stay sharp rectangles. */
static void draw_cells(cairo_t *cr, const plot_attention_spec *s, const attn_layout *L, int p)
{
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, s->cols, s->rows);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(img);
        return; /* the canvas will report no memory too */
    }
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    for (int r = 0; r < s->rows; r++) {
        uint32_t *row = (uint32_t *)(data + (size_t)r * stride);
        for (int c = 0; c < s->cols; c++) {
            float v = panel_value(s, p, r, c);
            rgb k = isfinite(v) ? colormap((v - L->vmin) / (L->vmax - L->vmin)) : MISSING;
            row[c] = (uint32_t)lround(k.r * 255) << 16 | (uint32_t)lround(k.g * 255) << 8 |
                     (uint32_t)lround(k.b * 255);
        }
    }
    cairo_surface_mark_dirty(img);
    double x, y;
    panel_origin(L, p, &x, &y);
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_scale(cr, L->cw, L->ch);
    cairo_set_source_surface(cr, img, 0, 0);
    /* shrinking (cells under a pixel) averages instead of dropping cells */
    cairo_pattern_set_filter(cairo_get_source(cr),
                             L->cw >= 1 && L->ch >= 1 ? CAIRO_FILTER_NEAREST
                                                      : CAIRO_FILTER_GOOD);
    cairo_rectangle(cr, 0, 0, s->cols, s->rows);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(img);
    set_rgb(cr, SOFT_INK, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x - 0.5, y - 0.5, L->pw + 1, L->ph + 1);
    cairo_stroke(cr);
}

static void draw_labels(cairo_t *cr, const plot_attention_spec *s, const attn_layout *L, int p)
{
    double x, y;
    panel_origin(L, p, &x, &y);
    char buf[LABEL_BYTES + 8];
    set_rgb(cr, INK, 1);
    if (L->panel_title_h > 0) {
        set_font(cr, TOKEN_PT, true);
        if (s->mode == PLOT_ATTENTION_MEAN) snprintf(buf, sizeof buf, "mean of %d heads", s->heads);
        else snprintf(buf, sizeof buf, "head %d", p);
        text_at(cr, x + L->pw / 2, y - L->panel_title_h / 2 - 2, buf, 0.5);
    }
    set_font(cr, TOKEN_PT, false);
    if (p % L->grid_cols == 0) /* target tokens left of the first column of panels */
        for (int r = 0; r < s->rows; r += L->stride_r) {
            token_label(cr, s->tgt_tokens, r, buf);
            text_at(cr, x - 6, y + (r + 0.5) * L->ch, buf, 1);
        }
    if (p + L->grid_cols >= L->panels) /* source tokens under panels with none below */
        for (int c = 0; c < s->cols; c += L->stride_c) {
            token_label(cr, s->src_tokens, c, buf);
            text_turned(cr, x + (c + 0.5) * L->cw, y + L->ph + 6, -PI / 2, buf, 1);
        }
}

static void draw_colour_bar(cairo_t *cr, const attn_layout *L)
{
    cairo_pattern_t *g = cairo_pattern_create_linear(0, L->cb_y + L->cb_h, 0, L->cb_y);
    for (int i = 0; i < N_COLORMAP; i++)
        cairo_pattern_add_color_stop_rgb(g, (double)i / (N_COLORMAP - 1), COLORMAP[i].r,
                                         COLORMAP[i].g, COLORMAP[i].b);
    cairo_rectangle(cr, L->cb_x, L->cb_y, 14, L->cb_h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
    set_rgb(cr, SOFT_INK, 1);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, L->cb_x - 0.5, L->cb_y - 0.5, 15, L->cb_h + 1);
    const axis *a = &L->cb_axis;
    for (int i = 0; i < a->n; i++) {
        double py = round(axis_px(a, a->at[i])) + 0.5;
        cairo_move_to(cr, L->cb_x + 14, py);
        cairo_line_to(cr, L->cb_x + 18, py);
    }
    cairo_stroke(cr);
    set_font(cr, TICK_PT, false);
    double tick_w = 0;
    for (int i = 0; i < a->n; i++) {
        text_at(cr, L->cb_x + 21, round(axis_px(a, a->at[i])) + 0.5, a->label[i], 0);
        tick_w = fmax(tick_w, text_width(cr, a->label[i]));
    }
    cairo_new_path(cr);
    set_rgb(cr, INK, 1);
    set_font(cr, LABEL_PT, false);
    text_turned(cr, L->cb_x + 21 + tick_w + 8 + text_height(cr) / 2, L->cb_y + L->cb_h / 2,
                -PI / 2, "weight", 0.5);
}

static clformer_status measure_attention(const plot_attention_spec *s, attn_layout *L)
{
    cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(scratch);
    cairo_surface_destroy(scratch);
    layout_attention(cr, s, L);
    cairo_status_t st = cairo_status(cr);
    cairo_destroy(cr);
    if (st != CAIRO_STATUS_SUCCESS) return cairo_failure(st, "attention layout", "(measuring)");
    if (L->width > 16384 || L->height > 16384)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_attention: %d heads of %d x %d need a %d x %d image, over 16384 "
                    "pixels; plot the mean or fewer heads",
                    s->heads, s->rows, s->cols, L->width, L->height);
    return CLFORMER_OK;
}

clformer_status plot_attention_geometry(const plot_attention_spec *s, int panel, int row,
                                        int col, int *width, int *height, double *x, double *y)
{
    CLI_TRY(check_attention_spec(s));
    attn_layout L;
    CLI_TRY(measure_attention(s, &L));
    if (panel < 0 || panel >= L.panels || row < 0 || row >= s->rows || col < 0 ||
        col >= s->cols)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT,
                    "plot_attention_geometry: cell (%d, %d, %d) is outside %d panels of "
                    "%d x %d",
                    panel, row, col, L.panels, s->rows, s->cols);
    double px, py;
    panel_origin(&L, panel, &px, &py);
    *width = L.width, *height = L.height;
    *x = px + (col + 0.5) * L.cw;
    *y = py + (row + 0.5) * L.ch;
    return CLFORMER_OK;
}

clformer_status plot_attention(const char *png_path, const plot_attention_spec *s)
{
    if (!png_path || !*png_path)
        return fail(CLFORMER_ERR_INVALID_ARGUMENT, "plot_attention needs an output path");
    CLI_TRY(check_attention_spec(s));
    attn_layout L;
    CLI_TRY(measure_attention(s, &L));
    cairo_t *cr;
    CLI_TRY(new_canvas(L.width, L.height, "attention map", png_path, &cr));
    for (int p = 0; p < L.panels; p++) {
        draw_cells(cr, s, &L, p);
        draw_labels(cr, s, &L, p);
    }
    draw_colour_bar(cr, &L);

    /* axis names and title */
    set_rgb(cr, INK, 1);
    set_font(cr, LABEL_PT, false);
    double name_h = text_height(cr);
    double grid_w = (L.grid_cols - 1) * L.step_x + L.pw;
    double grid_h = (L.grid_rows - 1) * L.step_y + L.ph;
    text_at(cr, L.x0 + grid_w / 2, L.y0 + grid_h + 6 + L.col_label_h + 8 + name_h / 2,
            s->src_tokens ? "source" : "source position", 0.5);
    text_turned(cr, MARGIN + name_h / 2, L.y0 + grid_h / 2, -PI / 2,
                s->tgt_tokens ? "target" : "target position", 0.5);
    if (s->title) {
        char t[LABEL_BYTES + 8];
        utf8_clean(s->title, t);
        set_font(cr, TITLE_PT, true);
        fit_width(cr, t, L.width - 2 * MARGIN);
        text_at(cr, L.width / 2.0, MARGIN + (L.title_h - 14) / 2, t, 0.5);
    }
    clformer_status st = save_png(cr, "attention map", png_path);
    cairo_destroy(cr);
    return st;
}
