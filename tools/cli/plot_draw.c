/*
 * The drawing primitives of plot_draw.h over cairo's image surface and its
 * toy text API. Layout is computed from measured text: tick sets get sparser
 * until their labels fit, and labels too wide are shortened with an ellipsis.
 */
#include "plot_draw.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FONT_FAMILY "sans-serif"

void plot_set_rgb(cairo_t *cr, rgb c, double alpha)
{
    cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha);
}

void plot_set_font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, FONT_FAMILY, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

double plot_clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------------------- */
/* Text                                                                       */
/* ------------------------------------------------------------------------- */

double plot_text_width(cairo_t *cr, const char *s)
{
    cairo_text_extents_t te;
    cairo_text_extents(cr, s, &te);
    return te.x_advance;
}

/* Line height of the current font: ascent + descent. */
double plot_text_height(cairo_t *cr)
{
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    return fe.ascent + fe.descent;
}

/* Draws s with (x, y) at its left (halign 0), centre (0.5) or right end (1),
 * vertically centred on y by the font's ascent and descent, so that labels
 * of one row share a baseline whatever their letters. */
void plot_text_at(cairo_t *cr, double x, double y, const char *s, double halign)
{
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    cairo_move_to(cr, x - halign * plot_text_width(cr, s), y + (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, s);
}

/* The same, turned by `angle` radians about (x, y); -pi/2 reads upwards. */
void plot_text_turned(cairo_t *cr, double x, double y, double angle, const char *s, double halign)
{
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, angle);
    plot_text_at(cr, 0, 0, s, halign);
    cairo_restore(cr);
}

/* Copies s into out as valid UTF-8 of at most LABEL_BYTES bytes: cairo
 * refuses invalid strings (and then draws nothing more), so malformed bytes
 * and control characters become U+FFFD. */
void plot_utf8_clean(const char *s, char out[LABEL_BYTES + 8])
{
    static const char REPLACEMENT[] = "\xEF\xBF\xBD";
    const size_t n = strlen(s);
    size_t o = 0, i = 0;
    while (i < n) {
        /* The character the lead byte announces, kept when those bytes are
         * one well-formed character and not an ASCII control character. */
        const unsigned c = (unsigned char)s[i];
        const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        const bool ok =
            len <= n - i && clformer_utf8_valid(s + i, len, NULL) && !(c < 0x20 || c == 0x7F);
        const char *piece = ok ? s + i : REPLACEMENT;
        const size_t size = ok ? len : 3;
        if (o + size > LABEL_BYTES) break;
        memcpy(out + o, piece, size);
        o += size;
        i += ok ? len : 1;
    }
    out[o] = '\0';
}

/* Shortens s (from plot_utf8_clean) at a character boundary, adding an
 * ellipsis, until it is at most max_w pixels wide. */
void plot_fit_width(cairo_t *cr, char s[LABEL_BYTES + 8], double max_w)
{
    if (plot_text_width(cr, s) <= max_w) return;
    size_t len = strlen(s);
    while (len > 0) {
        do len--;
        while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80);
        memcpy(s + len, "\xE2\x80\xA6", 4); /* U+2026 and the terminator */
        if (plot_text_width(cr, s) <= max_w) return;
    }
}

/* ------------------------------------------------------------------------- */
/* Axes and ticks                                                             */
/* ------------------------------------------------------------------------- */

double plot_axis_px(const axis *a, double v)
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
    if (v != 0 && step >= 1e6) {      /* and 0, not "0k" */
        v /= 1e6, step /= 1e6, suffix = "M";
    } else if (v != 0 && step >= 1e3) {
        v /= 1e3, step /= 1e3, suffix = "k";
    }
    int decimals = (int)plot_clamp(-floor(log10(step) + 1e-9), 0, 9);
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
        double gap = fabs(plot_axis_px(a, a->at[i]) - plot_axis_px(a, a->at[i - 1]));
        double need = horizontal
            ? (plot_text_width(cr, a->label[i]) + plot_text_width(cr, a->label[i - 1])) / 2 + 16
            : plot_text_height(cr) + 14;
        if (gap < need) return false;
    }
    return true;
}

/* Picks the densest tick set, up to about one per `spacing` pixels, whose
 * labels fit (measured with the current font). */
void plot_choose_ticks(cairo_t *cr, axis *a, bool horizontal, double spacing, double min_step)
{
    int target = (int)plot_clamp(fabs(a->px1 - a->px0) / spacing, 2, 10);
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

clformer_status plot_cairo_failure(cairo_status_t st, const char *what, const char *path)
{
    return plot_fail(st == CAIRO_STATUS_NO_MEMORY ? CLFORMER_ERR_OUT_OF_MEMORY
                                                  : CLFORMER_ERR_INVALID_ARGUMENT,
                     "drawing %s for '%s': cairo: %s", what, path, cairo_status_to_string(st));
}

/* Writes the PNG atomically: `path` appears only complete. */
clformer_status plot_save_png(cairo_t *cr, const char *what, const char *path)
{
    cairo_surface_t *s = cairo_get_target(cr);
    cairo_surface_flush(s);
    cairo_status_t st = cairo_status(cr);
    if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
    if (st != CAIRO_STATUS_SUCCESS) return plot_cairo_failure(st, what, path);
    clformer_atomic_file *f = NULL;
    char cause[1024]; /* the file error, copied: plot_fail() rewrites clformer_last_error() */
    if (clformer_atomic_file_open(path, &f) != CLFORMER_OK) {
        snprintf(cause, sizeof cause, "%s", clformer_last_error());
        return plot_fail(CLFORMER_ERR_IO, "cannot write the %s: %s", what, cause);
    }
    st = cairo_surface_write_to_png_stream(s, write_chunk, f);
    if (st != CAIRO_STATUS_SUCCESS) {
        snprintf(cause, sizeof cause, "%s",
                 st == CAIRO_STATUS_WRITE_ERROR ? clformer_last_error()
                                                : cairo_status_to_string(st));
        clformer_atomic_file_abort(f);
        return plot_fail(CLFORMER_ERR_IO, "writing the %s to '%s' failed: %s", what, path, cause);
    }
    return clformer_atomic_file_commit(f);
}

clformer_status plot_new_canvas(int width, int height, const char *what, const char *path,
                                cairo_t **out)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
    cairo_t *cr = cairo_create(s);
    cairo_surface_destroy(s); /* cr holds the reference */
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        clformer_status st = plot_cairo_failure(cairo_status(cr), what, path);
        cairo_destroy(cr);
        return st;
    }
    plot_set_rgb(cr, WHITE, 1);
    cairo_paint(cr);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    *out = cr;
    return CLFORMER_OK;
}
