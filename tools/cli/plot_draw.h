/*
 * What the figures of the clformer tool share (tools/cli/plot_loss.c and
 * plot_attention.c): colours and fonts, measured text, axes whose tick labels
 * never overlap, and a canvas written atomically as PNG. Everything is in
 * pixels of the output image. Internal to tools/cli; the figures' API is
 * plot.h.
 */
#ifndef CLFORMER_PLOT_DRAW_H
#define CLFORMER_PLOT_DRAW_H

#include "clformer.h"
#include "clformer_util.h"

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>

/* Failures are reported the library's way: a status, and the message in
 * clformer_last_error(). */
#define plot_fail clformer_set_error

typedef struct {
    double r, g, b;
} rgb;

static const rgb WHITE = {1, 1, 1};
static const rgb INK = {0.13, 0.13, 0.13};      /* text */
static const rgb SOFT_INK = {0.33, 0.33, 0.33}; /* tick labels, frames */
static const rgb GRID = {0.90, 0.90, 0.90};

#define TITLE_PT 16.0
#define LABEL_PT 13.0
#define TICK_PT 12.0
#define TOKEN_PT 11.0
#define MARGIN 16.0
#define PI 3.14159265358979323846

void plot_set_rgb(cairo_t *cr, rgb c, double alpha);
void plot_set_font(cairo_t *cr, double size, bool bold);
double plot_clamp(double v, double lo, double hi);

/* Labels are cut to this many bytes before they are measured. */
enum { LABEL_BYTES = 256 };

enum { MAX_TICKS = 40 };

/* One axis: its range, its pixel span and its chosen ticks. */
typedef struct {
    double lo, hi; /* shown range; log10 of the values on a log axis */
    bool log;
    double px0, px1; /* pixel positions of lo and hi */
    int n;
    double at[MAX_TICKS]; /* tick values (not logged) */
    char label[MAX_TICKS][24];
} axis;

/* Width of s in the current font, in pixels. */
double plot_text_width(cairo_t *cr, const char *s);

/* Line height of the current font: ascent + descent. */
double plot_text_height(cairo_t *cr);

/* Draws s with (x, y) at its left (halign 0), centre (0.5) or right end (1),
 * vertically centred on y by the font's ascent and descent, so that labels
 * of one row share a baseline whatever their letters. */
void plot_text_at(cairo_t *cr, double x, double y, const char *s, double halign);

/* The same, turned by `angle` radians about (x, y); -pi/2 reads upwards. */
void plot_text_turned(cairo_t *cr, double x, double y, double angle, const char *s, double halign);

/* Copies s into out as valid UTF-8 of at most LABEL_BYTES bytes: cairo
 * refuses invalid strings (and then draws nothing more), so malformed bytes
 * and control characters become U+FFFD. */
void plot_utf8_clean(const char *s, char out[LABEL_BYTES + 8]);

/* Shortens s (from plot_utf8_clean) at a character boundary, adding an
 * ellipsis, until it is at most max_w pixels wide. */
void plot_fit_width(cairo_t *cr, char s[LABEL_BYTES + 8], double max_w);

/* The pixel position of value v on axis a. */
double plot_axis_px(const axis *a, double v);

/* Picks the densest tick set, up to about one per `spacing` pixels, whose
 * labels fit (measured with the current font). */
void plot_choose_ticks(cairo_t *cr, axis *a, bool horizontal, double spacing, double min_step);

/* A cairo failure as a status whose message names the figure and its file. */
clformer_status plot_cairo_failure(cairo_status_t st, const char *what, const char *path);

/* Writes the PNG atomically: `path` appears only complete. */
clformer_status plot_save_png(cairo_t *cr, const char *what, const char *path);

/* A white canvas of width x height pixels; `what` and `path` name it in
 * errors. */
clformer_status plot_new_canvas(int width, int height, const char *what, const char *path,
                                cairo_t **out);

#endif
